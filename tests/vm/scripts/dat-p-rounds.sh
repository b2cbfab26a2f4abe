# SPDX-License-Identifier: MIT
# A VM_SCRIPT (tests/vm/run-vm.sh): dapltest -T P, uDAPL and rapt
# alternating which goes first, P_ROUNDS rounds (default 6), on siw and on
# rxe: RW 4096x2 polling (suite "dat"'s P_rw), RR 8192x1 blocking (its
# P_rr1) and RW 4096x1 polling; then each figure's rounds and the median
# of the per-round ratios (docs/dat-compat.md).  Run as root from the
# source tree:
#
#   SUITES=script VM_WITH=dat VM_SCRIPT=tests/vm/scripts/dat-p-rounds.sh \
#       tests/vm/run-vm.sh build-rel
#
# The VM does not see the host's environment: set P_ROUNDS in a copy of
# this file (sed) and run that copy.
#
# shellcheck shell=sh
DAT_DEFINE_ONLY=1
. /opt/rapt/vm/suite-dat.sh
P_ROUNDS=6

# pr_fig LOG: the throughput figure of a -T P client log
pr_fig() {
	grep -m1 'Operation Throughput' "$1" | awk '{ print $(NF - 1) }'
}

# pr_one TR PROV READY SERVER-PREFIX SADDR: one server, three clients;
# each figure appended to /tmp/pr_<tr>_<test>.<prov>
pr_one() {
	local tr=$1 prov=$2 ready=$3 in=$4 addr=$5 sia cia c t args v
	eval "sia=\$DAT_${tr}_${prov}_S cia=\$DAT_${tr}_${prov}_C"
	dat_server $tr $prov "$sia" $addr $ready "$in"
	c="$DAT_C -D $cia"
	for t in rw:"-m p RW 4096 2" rr1:"-m b RR 8192 1" rw1:"-m p RW 4096 1"; do
		args=${t#*:}
		# shellcheck disable=SC2086
		timeout 120 dapltest -T P $c -i 2000 $args > /tmp/pr.log 2>&1
		v=$(pr_fig /tmp/pr.log)
		echo "${v:-0}" >> /tmp/pr_${tr}_${t%%:*}.$prov
	done
	timeout 30 dapltest -T Q $c > /dev/null 2>&1
	reap $DAT_SPID 30 > /dev/null
}

T0=$(now)
if dat_setup; then
	r=1
	while [ $r -le $P_ROUNDS ]; do
		for p in $(round_order $r udapl rapt); do
			pr_one iwarp $p peerport "$IN_PEER" $SIW_ADDR
			pr_one ib $p cmport "" $RXE_WIRE_PEER_ADDR
		done
		r=$((r + 1))
	done
	for tr in iwarp ib; do
		for t in rw rr1 rw1; do
			pairs_report dat_${tr}_P_$t rapt/uDAPL \
				/tmp/pr_${tr}_$t.rapt /tmp/pr_${tr}_$t.udapl
		done
	done
	result dat_p_rounds 0 "$T0"
else
	result dat_p_rounds 1 "$T0"
fi
