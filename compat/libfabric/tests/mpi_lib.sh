# SPDX-License-Identifier: MIT
# Sourced by the MPI checks of the libfabric provider (mpi.sh,
# mpi_netns.sh): prerequisites, and mpirun forced onto "rapt;ofi_rxm".
# pml cm + mtl ofi is the only way Open MPI 4.1 reaches ofi_rxm; with
# the provider list forced there is no fallback, and the mtl's own log
# (mtl_base_verbose) names the fabric each rank uses.

mpi_prog=compat/libfabric/tests/mpi_check

# Skip (77) when what the check needs was absent at configure.
mpi_prereq()
{
	if [ ! -x "$mpi_prog" ] ||
	   [ ! -f compat/libfabric/.libs/librapt-fi.so ]; then
		echo "SKIP: libfabric or Open MPI development files were" \
			"absent at configure (apt-get install libfabric-dev" \
			"libopenmpi-dev)"
		exit 77
	fi
	if ! command -v mpirun >/dev/null; then
		echo "SKIP: no mpirun (apt-get install openmpi-bin)"
		exit 77
	fi
	FI_PROVIDER_PATH=$(pwd)/compat/libfabric/.libs
	RAPT_PROVIDER=tcp
	# make check sets these; a script run by hand from a build folder
	# uses that build's providers the same way
	: "${RAPT_PROVIDER_PATH:=$(pwd)/.libs}" "${RAPT_CONF:=/dev/null}"
	export FI_PROVIDER_PATH RAPT_PROVIDER RAPT_PROVIDER_PATH RAPT_CONF
	mpi_root=
	[ "$(id -u)" -eq 0 ] && mpi_root=--allow-run-as-root
}

# The sanitizer runtimes the provider of this build links, if any.
mpi_sanitizers()
{
	ldd "$FI_PROVIDER_PATH/librapt-fi.so" |
		awk '/lib(a|ub|t)san/ { printf "%s%s", s, $3; s = ":" }'
}

# A sanitizer build's provider needs its runtimes loaded first in
# programs built without them (hpcc).  Leak reports are off in the ranks:
# Open MPI's own allocations at exit (strings of components it has
# already unloaded) fill them; the provider's leaks are fi_msg.sh's, which
# runs with leak detection on.  Under TSan, Open MPI's memory patcher
# crashes TSan when any thread exits (its madvise hook runs in a thread
# TSan has already let go): the patcher is off there.
mpi_sanitizer_env()
{
	_san=$(mpi_sanitizers)
	[ -n "$_san" ] || return 0
	echo "-x LD_PRELOAD=$_san -x ASAN_OPTIONS=detect_leaks=0"
	case $_san in *tsan*) echo "--mca memory ^patcher" ;; esac
}

# mpi_run OUT [mpirun options...] PROGRAM [args...]: 2 ranks.
mpi_run()
{
	_out=$1
	shift
	# shellcheck disable=SC2046
	timeout 300 mpirun $mpi_root -np 2 $(mpi_sanitizer_env) \
		--mca pml cm --mca mtl ofi \
		--mca mtl_ofi_provider_include "rapt;ofi_rxm" \
		--mca mtl_base_verbose 10 \
		-x FI_PROVIDER_PATH -x RAPT_PROVIDER \
		-x RAPT_PROVIDER_PATH -x RAPT_CONF "$@" >"$_out" 2>&1
}

# mpi_ran OUT RC FABRIC: mpirun's status RC, and both ranks on rapt's
# FABRIC (an IA name), as the mtl's log in OUT says.
mpi_ran()
{
	if [ "$2" -ne 0 ]; then
		tail -40 "$1"
		echo "FAIL: mpirun exited with $2"
		return 1
	fi
	_n=$(grep -c "mtl:ofi:provider: $3\$" "$1")
	if [ "$_n" -ne 2 ]; then
		echo "FAIL: $_n of 2 ranks report rapt's fabric $3"
		return 1
	fi
}

# mpi_verdict OUT RC FABRIC: mpi_ran, and mpi_check's PASS line.
mpi_verdict()
{
	grep -E 'PASS|FAIL|ERROR' "$1"
	mpi_ran "$@" && grep -q '^PASS: ping-pong, allreduce, alltoall' "$1"
}
