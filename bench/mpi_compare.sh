#!/bin/bash
# SPDX-License-Identifier: MIT
# MPI over rapt, side by side (docs/libfabric.md): mpi_check --perf, 2
# ranks on this host, over "rapt;ofi_rxm" (rapt's libfabric provider on
# tcp:lo), libfabric's own "tcp;ofi_rxm", and Open MPI's btl tcp, in
# alternating rounds.  Prints each round, the median of each, and the
# ratios to "tcp;ofi_rxm".  Run from a build folder:
#   ../bench/mpi_compare.sh [rounds]          (default 5)
set -euo pipefail
rounds=${1:-5}
prog=compat/libfabric/tests/mpi_check
if [ ! -x "$prog" ]; then
	echo "no $prog: configure found no libfabric or Open MPI" >&2
	exit 1
fi
export FI_PROVIDER_PATH=$PWD/compat/libfabric/.libs
export RAPT_PROVIDER_PATH=$PWD/.libs RAPT_CONF=/dev/null
export RAPT_PROVIDER=tcp FI_RAPT_IA=tcp:lo
root=
[ "$(id -u)" -eq 0 ] && root=--allow-run-as-root

mpi()
{
	timeout 300 mpirun $root --oversubscribe -np 2 "$@" \
		"$prog" --perf | sed -n 's/^PERF //p'
}
rapt()
{
	mpi --mca pml cm --mca mtl ofi \
		--mca mtl_ofi_provider_include "rapt;ofi_rxm" \
		-x FI_PROVIDER_PATH -x RAPT_PROVIDER_PATH -x RAPT_CONF \
		-x RAPT_PROVIDER -x FI_RAPT_IA
}
ofi_tcp()
{
	mpi --mca pml cm --mca mtl ofi \
		--mca mtl_ofi_provider_include "tcp;ofi_rxm" \
		-x FI_PROVIDER="tcp;ofi_rxm"
}
btl_tcp()
{
	mpi --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo
}
median()
{
	tr ' ' '\n' | grep . | sort -g |
		awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
ratio()
{
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
}

kinds="rapt ofi_tcp btl_tcp"
declare -A lat bw ml mb
for r in $(seq "$rounds"); do
	for t in $kinds; do
		line=$($t)
		echo "round $r $t: $line"
		lat[$t]+="$(sed 's/.*latency_8B_us=\([0-9.]*\).*/\1/' \
			<<<"$line") "
		bw[$t]+="$(sed 's/.*bandwidth_1MiB_MBps=\([0-9.]*\).*/\1/' \
			<<<"$line") "
	done
done
for t in $kinds; do
	ml[$t]=$(median <<<"${lat[$t]}")
	mb[$t]=$(median <<<"${bw[$t]}")
done
printf '%-12s %14s %16s %10s %10s\n' "median of $rounds" "8 B lat (us)" \
	"1 MiB bw (MB/s)" "lat ratio" "bw ratio"
for t in $kinds; do
	printf '%-12s %14s %16s %10s %10s\n' "$t" "${ml[$t]}" "${mb[$t]}" \
		"$(ratio "${ml[$t]}" "${ml[ofi_tcp]}")" \
		"$(ratio "${mb[$t]}" "${mb[ofi_tcp]}")"
done
