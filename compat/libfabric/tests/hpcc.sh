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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -e 's/^2\( *\)Ps/1\1Ps/' "$example" >"$tmp/hpccinf.txt"
cd "$tmp" || exit 1
mpi_run out --oversubscribe -x FI_RAPT_IA hpcc
rc=$?
mpi_ran out $rc tcp:lo || exit 1
if ! grep -q '^Success=1' hpccoutf.txt || grep -q 'FAILED' hpccoutf.txt
then
	grep -E 'Success|FAILED' hpccoutf.txt
	echo "FAIL: hpcc's own checks over rapt;ofi_rxm"
	exit 1
fi
# a few of its figures, for the log
grep -E '^(HPL_Tflops|PTRANS_GBs|MPIRandomAccess_GUPs|MPIFFT_Gflops)=' \
	hpccoutf.txt
echo "PASS: hpcc over rapt;ofi_rxm (Success=1)"
