#!/bin/bash
# Run every rapt test on a fresh Debian 12 machine: installs what is
# missing, then builds and tests in these stages:
#   1. release build, -Werror: make check
#   2. ASan + UBSan build: make check
#   3. TSan build: make check (the threaded tests matter here)
#   4. make distcheck (the tarball builds and passes on its own)
#   4b. a short fuzzing pass: every libFuzzer target for 15 s from its
#      seeds (clang, --enable-fuzz; docs/fuzzing.md)
#   5. the Debian packages: build, lintian, install, use the installed
#      files (rapt_info, the demo, man pages, an out-of-tree provider),
#      purge (tests/packaging.sh; root)
#   6. the VM suite (tests/vm/run-vm.sh; root): the tcp provider against
#      the Linux kernel's soft-iWARP driver (siw), rapt-conformance on the
#      iwarp provider over siw (and against tcp both ways), rdma-core's
#      programs against rapt, rapt_perf against perftest, and the ib
#      provider on soft-RoCE (rxe): conformance, foreign peers, perf, the
#      demo on tcp, iwarp and ib, and Open MPI over rapt's libfabric
#      provider on iwarp and ib; in a qemu VM
# Exit status is 0 only if all of them pass.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tests/ci/deps.sh
[ -x configure ] || ./autogen.sh >/dev/null

summary=()
tpass=0; tfail=0; tskip=0
# Add up the automake test counts of a build folder's last make check.
count() {
	local log=$1/test-suite.log n
	[ -f "$log" ] || return 0
	n=$(sed -n 's/^# PASS: *//p' "$log"); tpass=$((tpass + ${n:-0}))
	n=$(sed -n 's/^# FAIL: *//p' "$log"); tfail=$((tfail + ${n:-0}))
	n=$(sed -n 's/^# ERROR: *//p' "$log"); tfail=$((tfail + ${n:-0}))
	n=$(sed -n 's/^# SKIP: *//p' "$log"); tskip=$((tskip + ${n:-0}))
}
# run NAME CMD...: one stage; the summary says how long it took, so that
# the budget (.ci/run: about 40 minutes on a fresh machine) can be read
# off any run
run() {
	local name=$1 t0=$SECONDS; shift
	echo "=== $name"
	if "$@"; then
		summary+=("PASS $name ($((SECONDS - t0)) s)")
	else
		summary+=("FAIL $name ($((SECONDS - t0)) s)")
	fi
}
check_in() {
	local dir=$1; shift
	local b
	b=$(tests/ci/build.sh "$dir" "$@") || return 1
	rm -f "$b/test-suite.log"
	if make -C "$b" -j"$(nproc)" check; then
		count "$b"
		return 0
	fi
	count "$b"
	show_failed "$b"
	return 1
}
# show_failed DIR: the logs of the tests under DIR that failed
show_failed() {
	grep -l -E '^(FAIL|ERROR)' $(find "$1" -name '*.trs') 2>/dev/null |
		while read -r t; do
			echo "--- ${t%.trs}.log"; tail -60 "${t%.trs}.log"
		done
}
# make distcheck; when it fails, the logs of what failed in its tree
# (left in place on failure)
distcheck_in() {
	local b
	b=$(tests/ci/build.sh build-ci --enable-werror) || return 1
	make -C "$b" -j"$(nproc)" distcheck \
		DISTCHECK_CONFIGURE_FLAGS=--enable-werror && return 0
	show_failed "$b"
	return 1
}

run "check (release, -Werror)" check_in build-ci --enable-werror
run "check (ASan+UBSan)" check_in build-ci-asan --enable-werror --enable-debug \
	--enable-asan --enable-ubsan
run "check (TSan)" check_in build-ci-tsan --enable-werror --enable-tsan
run "distcheck" distcheck_in
# A short pass of every fuzz target (make fuzz; 6 x 15 s, one target per
# CPU at a time).  Long campaigns are for make fuzz FUZZ_SECONDS=... by
# hand.
fuzz_pass() {
	local b
	b=$(CC=clang tests/ci/build.sh build-ci-fuzz --enable-fuzz) || return 1
	make -C "$b" fuzz FUZZ_SECONDS="${RAPT_FUZZ_SECONDS:-15}" \
		FUZZ_JOBS="$(nproc)"
}
run "fuzz (short pass)" fuzz_pass
# Run a script that prints PASS:/FAIL:/SKIP: lines; they count with the
# automake tests.
counted() {
	local out n rc
	out=$(mktemp)
	"$@" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	n=$(grep -c '^PASS: ' "$out" || true); tpass=$((tpass + n))
	n=$(grep -c '^FAIL: ' "$out" || true); tfail=$((tfail + n))
	n=$(grep -c '^SKIP: ' "$out" || true); tskip=$((tskip + n))
	grep '^RAPTVM PERF' "$out" | sed 's/^RAPTVM PERF/perf:/' \
		>> "$top/build-ci/vm-perf.txt" || true
	rm -f "$out"
	return "$rc"
}
# Build the Debian packages, install them, run against the installed
# files, purge (root; about a minute).
run "Debian packages" counted tests/packaging.sh
# rapt's VM suite (tests/vm/run-vm.sh): the tcp provider against kernel
# siw, rapt-conformance on the iwarp provider over siw (one host, two
# hosts, against tcp both ways), rdma-core's own programs against rapt,
# and rapt_perf against perftest.  Its PASS/FAIL lines count with the
# automake tests; its PERF lines go to build-ci/vm-perf.txt.
# RAPT_VM_SUITES="interop conformance" narrows it (run-vm.sh's SUITES).
vm_suite() {
	local b
	b=$(tests/ci/build.sh build-ci --enable-werror) || return 1
	rm -f "$top/build-ci/vm-perf.txt"
	if [ -n "${RAPT_VM_SUITES:-}" ]; then
		SUITES=$RAPT_VM_SUITES counted tests/vm/run-vm.sh "$b"
	else
		counted tests/vm/run-vm.sh "$b"
	fi
}
run "VM suite: siw interop, iwarp conformance, foreign peers, perf, ib on rxe (qemu)" vm_suite

echo
printf '%s\n' "${summary[@]}"
echo "time: ${SECONDS} s in all, the installs of tests/ci/deps.sh included"
fail=$(printf '%s\n' "${summary[@]}" | grep -c '^FAIL' || true)
# A failed stage that ran no automake test (a build error) still counts.
[ "$fail" -gt 0 ] && [ "$tfail" -eq 0 ] && tfail=$fail
echo "tests: $tpass passed, $tfail failed, $tskip skipped"
[ "$fail" -eq 0 ]
