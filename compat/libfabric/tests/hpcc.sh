#!/bin/sh
# SPDX-License-Identifier: MIT
# HPC Challenge (Debian's hpcc) with 2 ranks over "rapt;ofi_rxm" on
# tcp:lo, run to completion: its own checks must pass (Success=1 and no
# FAILED line in hpccoutf.txt).  A few seconds with this input.
# Its input is Debian's example with a 1 x 2 process grid (the example's
# 2 x 2 grid needs 4 ranks).
. "$(dirname "$0")/mpi_lib.sh"
mpi_prereq
example=/usr/share/doc/hpcc/examples/_hpccinf.txt
if ! command -v hpcc >/dev/null || [ ! -f "$example" ]; then
	echo "SKIP: hpcc: no hpcc (apt-get install hpcc)"
	exit 77
fi
FI_RAPT_IA=tcp:lo
export FI_RAPT_IA
build=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e 's/^2\( *\)Ps/1\1Ps/' "$example" >"$tmp/hpccinf.txt"
cd "$tmp" || exit 1
mpi_prog=hpcc
mpi_run out --oversubscribe -x FI_RAPT_IA hpcc
rc=$?
cd "$build" || exit 1
if [ $rc -ne 0 ] || ! grep -q '^Success=1' "$tmp/hpccoutf.txt" ||
   grep -q 'FAILED' "$tmp/hpccoutf.txt"; then
	tail -30 "$tmp/out"
	grep -E 'Success|FAILED' "$tmp/hpccoutf.txt"
	echo "FAIL: hpcc over rapt;ofi_rxm (mpirun status $rc)"
	exit 1
fi
n=$(grep -c 'mtl:ofi:provider: tcp:lo$' "$tmp/out")
if [ "$n" -ne 2 ]; then
	echo "FAIL: hpcc: $n of 2 ranks report rapt's fabric tcp:lo"
	exit 1
fi
grep -E '^(HPL_Tflops|PTRANS_GBs|MPIRandomAccess_GUPs|MPIFFT_Gflops|RandomlyOrderedRingLatency_usec|RandomlyOrderedRingBandwidth_GBytes)=' "$tmp/hpccoutf.txt"
echo "PASS: hpcc over rapt;ofi_rxm (Success=1)"
