# SPDX-License-Identifier: MIT
# VM suite "ib" (sourced by tests/vm/init.sh): the ib provider on kernel
# soft-RoCE (rxe), all in netns init (rxe on Linux 6.1 works there only):
# rxe0 on veth4 for one host, rxe1 <-> rxe2 over the veth2/veth3 wire.
#
#   rapt_info_ib          rapt_info lists ib:rxe0-2 and iwarp:siw0 side by
#                         side, usable, with their limits
#   pdata_limits_ib       cm_pdata_limits measures what librdmacm carries
#                         on rxe (REQ, REP, REJ) and checks it against
#                         the limits the ib provider declares
#   conf_ib_1host         rapt-conformance on ib:rxe0, both roles
#   conf_ib_2host         --server on ib:rxe2, --client on ib:rxe1
#   lost_rtu_ib           the demo across the wire while nft drops every
#                         RTU: the passive side reports ESTABLISHED on
#                         the client's first message (COMM_EST), then
#                         finishes the exchange
#   closes_lost_rtu_ib    rtr/active_closes_at_once with every RTU dropped:
#                         the DREQ that overtakes the RTU proves the peer
#                         up (ESTABLISHED, then DISCONNECTED)
#   <foreign>_ib          rping, rdma_server/rdma_client and ucmatose on
#                         rxe2 against rapt_cm_peer on ib:rxe1, both ways
#   perf_*_ib             rapt_perf -p ib against perftest (-R) on rxe1
#                         and rxe2 in the same run: RAPTVM PERF lines
#   demo_{tcp,iwarp,ib}   the same rapt_server and rapt_client, chosen
#                         only by -p, on each transport
#
# raptvm.ib_parts=info,pdata,conf,rtu,foreign,perf,demo narrows it down
# (run-vm.sh: IB_PARTS="rtu demo").
#
# busybox ash: "local" exists; commands in variables are split on purpose.
# shellcheck shell=sh disable=SC3043,SC2086

IB_SID=7471

# --- rapt_info: both verbs providers, side by side -------------------------
ib_info() {
	local t0 rc=0 d
	t0=$(now)
	rapt_info > /tmp/rapt_info_ib.log 2>&1 || rc=1
	for d in ib:rxe0 ib:rxe1 ib:rxe2 iwarp:siw0; do
		grep -q "^device $d: usable" /tmp/rapt_info_ib.log || {
			rc=1
			info "rapt_info: no usable $d"
		}
	done
	sed -n '/^device \(ib:rxe\|iwarp:siw\)/,/service ids/p' \
		/tmp/rapt_info_ib.log | sed 's/^/    [rapt_info] /'
	[ $rc = 0 ] || show rapt_info_ib /tmp/rapt_info_ib.log
	result rapt_info_ib $rc "$t0"
}

# --- private data: measured, against what the provider declares -------------
ib_pdata() {
	local t0 rc=0 req rep rej
	t0=$(now)
	timeout 60 cm_pdata_limits -a $RXE_ADDR -p 7480 > /tmp/pdata_ib.log 2>&1 ||
		rc=1
	req=$(sed -n 's/^limit connect \([0-9]*\).*/\1/p' /tmp/pdata_ib.log)
	rep=$(sed -n 's/^limit accept \([0-9]*\).*/\1/p' /tmp/pdata_ib.log)
	rej=$(sed -n 's/^limit reject \([0-9]*\).*/\1/p' /tmp/pdata_ib.log)
	info "rxe private data, measured through librdmacm: REQ ${req:-?}, REP ${rep:-?}, REJ ${rej:-?} bytes"
	# The ib provider declares them (raw, before rapt's 4-byte header).
	sed -n '/^device ib:rxe0/,/service ids/p' /tmp/rapt_info_ib.log |
		grep -q "pdata: *connect $((req - 4)), accept $((rep - 4)), reject $((rej - 4)),"  ||
		{ rc=1; info "rapt_info's ib:rxe0 pdata limits differ from the measured ones"; }
	[ $rc = 0 ] && [ "$VERBOSE" != 1 ] || show pdata_limits_ib /tmp/pdata_ib.log
	result pdata_limits_ib $rc "$t0"
}

# --- the lost RTU --------------------------------------------------------------
# nft drops RoCEv2 packets to rxe2's address that carry a CM MAD
# (management class 0x07 at byte 1 of the MAD) whose attribute is the RTU
# (0x0014 at byte 16); the MAD starts after BTH (12) and DETH (8), behind
# the 8-byte UDP header: bits 232 and 352 of the transport header.  On
# the way in: rxe sends again at once, forever, a packet its own host's
# netfilter refuses on the way out (-EPERM from ip_local_out is -EAGAIN
# to it), which blocks every later MAD of the port.
rtu_drop_on() {
	nft -f - <<NFT
table ip raptvm_rtu {
	chain in {
		type filter hook input priority 0; policy accept;
		ip daddr $RXE_WIRE_PEER_ADDR udp dport 4791 @th,232,8 0x07 @th,352,16 0x0014 counter drop
	}
}
NFT
}

# The RTUs dropped so far (and the rule deleted).
rtu_drop_off() {
	nft list table ip raptvm_rtu > /tmp/lost_rtu.nft 2>&1
	nft delete table ip raptvm_rtu
	sed -n 's/.*counter packets \([0-9]*\).*/\1/p' /tmp/lost_rtu.nft
}

ib_lost_rtu() {
	local t0 rc=0 spid cpid n drops sl=/tmp/lost_rtu.server.log cl=/tmp/lost_rtu.client.log
	t0=$(now)
	rtu_drop_on || { result lost_rtu_ib 1 "$t0"; return; }
	RAPT_LOG_LEVEL=debug RAPT_LOG_PROV=ib timeout -k 5 60 \
		rapt_server -p ib:rxe2 -s $((IB_SID + 9)) > $sl 2>&1 &
	spid=$!
	wait_for $sl "listening" $spid
	RAPT_LOG_LEVEL=debug RAPT_LOG_PROV=ib timeout -k 5 60 \
		rapt_client -p ib:rxe1 -s $((IB_SID + 9)) \
		$RXE_WIRE_PEER_ADDR > $cl 2>&1 &
	cpid=$!
	# both end within 70 s, or the test fails (and shows where they are)
	n=0
	while { kill -0 $spid || kill -0 $cpid; } 2>/dev/null && [ $n -lt 700 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	if [ $n -ge 700 ]; then
		# a program stuck in the kernel cannot be waited for: show
		# what blocks, leave it
		rc=1
		info "lost_rtu_ib: still running after 70 s"
		show lost_rtu_ib $sl $cl
		echo w > /proc/sysrq-trigger
		dmesg | grep -v siw | tail -n 80 | sed "s/^/    [lost_rtu_ib blocked] /"
		kill -9 $spid $cpid 2>/dev/null
	else
		wait $spid || rc=1
		wait $cpid || rc=1
	fi
	drops=$(rtu_drop_off)
	info "lost_rtu_ib: ${drops:-0} RTU dropped; the server's way up: $(grep -o 'a message before the RTU\|COMM_EST before the RTU' $sl | head -n 1)"
	[ "${drops:-0}" -gt 0 ] || { rc=1; info "lost_rtu_ib: no RTU was dropped"; }
	grep -q 'before the RTU' $sl || { rc=1; info "lost_rtu_ib: ESTABLISHED did not come from the first message"; }
	grep -q 'server: done' $sl || rc=1
	if [ $rc != 0 ] || [ "$VERBOSE" = 1 ]; then
		show lost_rtu_ib $sl $cl /tmp/lost_rtu.nft
		dmesg | tail -n 20 | sed "s/^/    [lost_rtu_ib dmesg] /"
	fi
	result lost_rtu_ib $rc "$t0"
}

# --- a close that overtakes the RTU -------------------------------------------
# Every RTU to rxe2 dropped again, and conformance's rtr/active_closes_at_once
# across the wire: the active side disconnects (or frees its EP) right
# after its ESTABLISHED, so the passive side gets the DREQ while it still
# waits for the RTU.  The DREQ proves the peer was up: ESTABLISHED, then
# DISCONNECTED (never ACCEPT_ERROR).
ib_close_before_rtu() {
	local t0 drops saved=$CONF_ARGS
	t0=$(now)
	rtu_drop_on || { result closes_lost_rtu_ib 1 "$t0"; return; }
	CONF_ARGS="--run rtr/active_closes_at_once"
	CONF_BLACKHOLE=$RXE_BLACKHOLE_2HOST
	conf_2host closes_lost_rtu_ib ib:rxe2 ib:rxe1 $RXE_WIRE_PEER_ADDR ""
	CONF_ARGS=$saved
	drops=$(rtu_drop_off)
	info "closes_lost_rtu_ib: ${drops:-0} RTU dropped"
}

# --- the same program on every transport ------------------------------------------
ib_demo() {
	local sid=$((IB_SID + 20))
	srv_cli demo_tcp 60 listening \
		"$IN_PEER rapt_server -p tcp:veth1 -s $sid" \
		"rapt_client -p tcp:veth0 -s $sid $SIW_ADDR"
	srv_cli demo_iwarp 60 listening \
		"$IN_PEER rapt_server -p iwarp:siw1 -s $((sid + 1))" \
		"rapt_client -p iwarp:siw0 -s $((sid + 1)) $SIW_ADDR"
	srv_cli demo_ib 60 listening \
		"rapt_server -p ib:rxe2 -s $((sid + 2))" \
		"rapt_client -p ib:rxe1 -s $((sid + 2)) $RXE_WIRE_PEER_ADDR"
}

ib_conf() {
	local cfg
	[ -n "$CONF_CONFIGS" ] || CONF_CONFIGS="1host 2host"
	for cfg in $CONF_CONFIGS; do
		case $cfg in
		1host)
			CONF_BLACKHOLE=$RXE_BLACKHOLE_1HOST
			conf_1host conf_ib_1host ib:rxe0 ;;
		2host)
			CONF_BLACKHOLE=$RXE_BLACKHOLE_2HOST
			conf_2host conf_ib_2host ib:rxe2 ib:rxe1 \
				$RXE_WIRE_PEER_ADDR "" ;;
		esac
	done
}

ib_perf() {
	perf_on_rxe
	perf_pair_lat send_lat_ib lat_send ib_send_lat 1
	perf_pair_lat read_lat_ib lat_read ib_read_lat 0
	perf_pair_bw write_bw_ib
}

# raptvm.ib_parts=info,pdata,...: which parts run (all, in this order)
IB_PARTS=$(cmdline_arg ib_parts)
for part in ${IB_PARTS:-info pdata conf rtu foreign perf demo}; do
	case $part in
	info) ib_info ;;
	pdata) ib_pdata ;;
	conf) ib_conf ;;
	rtu) ib_lost_rtu; ib_close_before_rtu ;;
	foreign)
		foreign_pair ib:rxe1 ib "" $RXE_WIRE_PEER_ADDR $RXE_WIRE_ADDR \
			cmport 1 ;;
	perf) ib_perf ;;
	demo) ib_demo ;;
	*) info "no part $part in suite ib" ;;
	esac
done
