# SPDX-License-Identifier: MIT
# A VM_SCRIPT (tests/vm/run-vm.sh): the DAT pairs of suite "dat" that
# carry a figure, DAT_ROUNDS rounds (default 5), uDAPL and rapt
# alternating which goes first, on siw and on rxe; then each figure's
# rounds and the median of the per-round ratios (docs/dat-compat.md).
# Run as root from the source tree:
#
#   SUITES=script VM_WITH=dat VM_SCRIPT=tests/vm/scripts/dat-rounds.sh \
#       tests/vm/run-vm.sh build-rel
#
# DAT_TESTS narrows the tests: any of "tt dtestcm dtest" (default all).
# The VM does not see the host's environment: set DAT_ROUNDS and
# DAT_TESTS in a copy of this file (sed) and run that copy.
#
# shellcheck shell=sh
DAT_DEFINE_ONLY=1
. /opt/rapt/vm/suite-dat.sh
DAT_ROUNDS=${DAT_ROUNDS:-5}
DAT_TESTS=${DAT_TESTS:-tt dtestcm dtest}

# dr_tt TR PROV SIA CIA ADDR READY [SERVER-PREFIX]: dapltest -T T, SR 256
# (2000 iterations) and the RDMA op list, against one -T S server
dr_tt() {
	dat_server $1 $2 "$3" $5 $6 "$7"
	dat_tt $1 $2 "$DAT_C -D $4" 2000
	timeout 30 dapltest -T Q $DAT_C -D "$4" > /dev/null 2>&1
	reap $DAT_SPID 30 > /dev/null
}

# dr_one TR PROV DT-READY PAIR-READY SERVER-PREFIX SADDR: one provider's
# tests; each figure appended to /tmp/dr_<test>.<prov>.v
dr_one() {
	local tr=$1 prov=$2 dready=$3 pready=$4 in=$5 addr=$6 sia cia t
	eval "sia=\$DAT_${tr}_${prov}_S cia=\$DAT_${tr}_${prov}_C"
	case " $DAT_TESTS " in *" tt "*)
		perf_quiet "dat_${tr}_T.$prov"
		dr_tt $tr $prov "$sia" "$cia" $addr $dready "$in" ;;
	esac
	case " $DAT_TESTS " in *" dtestcm "*)
		perf_quiet "dat_${tr}_dtestcm.$prov"
		dat_pair dat_${tr}_dtestcm $prov 'ALL 30 CONNECTED on Server' \
			'CPS' "$in" $pready:15828 "dtestcm -P $sia -s -c 30" \
			"dtestcm -P $cia -h $addr -c 30" ;;
	esac
	case " $DAT_TESTS " in *" dtest "*)
		perf_quiet "dat_${tr}_dtest.$prov"
		dat_pair dat_${tr}_dtest $prov 'PASSED' 'MB/sec' "$in" \
			$pready:15828 "dtest -P $sia -s -b 65536" \
			"dtest -P $cia -h $addr -b 65536" ;;
	esac
	for t in T_sr256 T_rdma dtestcm dtest; do
		[ -s /tmp/dat_${tr}_$t.$prov.fig ] || continue
		cat /tmp/dat_${tr}_$t.$prov.fig >> /tmp/dr_${tr}_$t.$prov.v
		rm -f /tmp/dat_${tr}_$t.$prov.fig
	done
}

# dr_report TR: per figure, the rounds and the median ratio
dr_report() {
	local tr=$1 t
	for t in T_sr256 T_rdma dtestcm dtest; do
		[ -s /tmp/dr_${tr}_$t.rapt.v ] && [ -s /tmp/dr_${tr}_$t.udapl.v ] ||
			continue
		pairs_report dat_${tr}_$t rapt/uDAPL \
			/tmp/dr_${tr}_$t.rapt.v /tmp/dr_${tr}_$t.udapl.v
	done
}

DAT_T0=$(now)
if dat_setup; then
	r=1
	while [ $r -le $DAT_ROUNDS ]; do
		for p in $(round_order $r udapl rapt); do
			dr_one iwarp $p peerport peerport "$IN_PEER" $SIW_ADDR
			dr_one ib $p cmport hostport "" $RXE_WIRE_PEER_ADDR
		done
		r=$((r + 1))
	done
	dr_report iwarp
	dr_report ib
else
	result dat_rounds 1 "$DAT_T0"
fi
