# SPDX-License-Identifier: MIT
# A VM_SCRIPT (tests/vm/run-vm.sh): the suites "dat" and "mpi" with an
# ASan+UBSan build (docs/iwarp-provider.md, "Under the sanitizers").
# Their test programs (dapltest, dtest, the MPI programs and mpirun) are
# not instrumented, so ASan's runtime is preloaded into every process;
# leak checks are off (the programs' own allocations), and an allocation
# ASan cannot make returns NULL as glibc's would fail (dapltest -T L
# probes the largest LMR with ever larger callocs).  Run as root from the
# source tree, with a build configured --enable-debug --enable-asan
# --enable-ubsan:
#
#   SUITES=script VM_WITH="dat mpi" \
#   VM_SCRIPT=$PWD/tests/vm/scripts/asan-compat.sh \
#       tests/vm/run-vm.sh build-asan
#
# shellcheck shell=sh
ASAN_LIB=
for asan_f in /usr/lib/x86_64-linux-gnu/libasan.so.*; do
	[ -f "$asan_f" ] && ASAN_LIB=$asan_f && break
done
if [ -z "$ASAN_LIB" ]; then
	result asan_compat 77 "$(now)" "no libasan in the image: not an ASan build"
	return 0
fi
info "preloading $ASAN_LIB"
export LD_PRELOAD="$ASAN_LIB"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1
# shellcheck disable=SC1091
. /opt/rapt/vm/suite-dat.sh
# shellcheck disable=SC1091
. /opt/rapt/vm/suite-mpi.sh
unset LD_PRELOAD ASAN_OPTIONS
