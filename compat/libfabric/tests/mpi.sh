#!/bin/sh
# SPDX-License-Identifier: MIT
# Open MPI over "rapt;ofi_rxm" on rapt's tcp provider, 2 ranks on this
# host (tcp:lo): mpi_check's ping-pong, allreduce and alltoall, 1 B to
# 4 MiB, every byte checked.  pml cm + mtl ofi is the only way Open MPI
# 4.1 reaches ofi_rxm; with the provider list forced there is no
# fallback, and the mtl's own log must name rapt's fabric.
# Skips (77) only when libfabric's or Open MPI's development files were
# absent at configure, or mpirun is missing.
prog=compat/libfabric/tests/mpi_check
if [ ! -x "$prog" ] || [ ! -f compat/libfabric/.libs/librapt-fi.so ]; then
	echo "SKIP: libfabric or Open MPI development files were absent" \
		"at configure (apt-get install libfabric-dev libopenmpi-dev)"
	exit 77
fi
if ! command -v mpirun >/dev/null; then
	echo "SKIP: no mpirun (apt-get install openmpi-bin)"
	exit 77
fi
FI_PROVIDER_PATH=$(pwd)/compat/libfabric/.libs
FI_RAPT_IA=tcp:lo
RAPT_PROVIDER=tcp
export FI_PROVIDER_PATH FI_RAPT_IA RAPT_PROVIDER
root=
[ "$(id -u)" -eq 0 ] && root=--allow-run-as-root
out=$(mktemp)
trap 'rm -f "$out"' EXIT
timeout 300 mpirun $root --oversubscribe -np 2 \
	--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "rapt;ofi_rxm" \
	--mca mtl_base_verbose 10 \
	-x FI_PROVIDER_PATH -x FI_RAPT_IA -x RAPT_PROVIDER \
	-x RAPT_PROVIDER_PATH -x RAPT_CONF \
	"$prog" >"$out" 2>&1
rc=$?
grep -E 'PASS|FAIL|ERROR|rror' "$out"
if [ $rc -ne 0 ]; then
	tail -40 "$out"
	echo "FAIL: mpirun exited with $rc"
	exit 1
fi
n=$(grep -c 'mtl:ofi:provider: tcp:lo' "$out")
if [ "$n" -ne 2 ]; then
	echo "FAIL: $n of 2 ranks report rapt's fabric tcp:lo"
	exit 1
fi
grep -q '^PASS: ping-pong, allreduce, alltoall' "$out"
