#!/bin/sh
# SPDX-License-Identifier: MIT
# /init of rapt's VM (tests/vm/run-vm.sh boots it): busybox sh as PID 1.
# Loads the RDMA modules, siw and rxe, wires two network namespaces with a
# veth pair and an siw device on each end, a second veth pair with an rxe
# device on each end, a third with rxe0 on one end, runs the suites the kernel
# command line names (raptvm.suites=interop,conformance,...:
# tests/vm/suite-*.sh), prints one line per test on the serial console and
# powers off.
#
#   netns init (default)                      netns "peer"
#   veth0 192.0.2.1  siw0          <------->  veth1 192.0.2.2  siw1
#   198.51.100.0/24 via 192.0.2.2: the peer does not forward, a black hole
#   no default route: 203.0.113.1 is unreachable
#
#   netns init only (rxe on Linux 6.1 works in init_net alone)
#   veth4 198.18.0.1   rxe0  <-->  veth5 198.18.0.2  (no rxe): one host;
#                                  198.18.9.0/24 via 198.18.0.2 is a black
#                                  hole (no forwarding), and 203.0.113.1
#                                  unreachable (rdma_cm takes any address
#                                  for on-link through the bound device:
#                                  nobody answers its ARP on veth4)
#   veth2 198.18.1.1   rxe1  <-->  veth3 198.18.1.2  rxe2
#                                  policy routing sends traffic between the
#                                  two over the wire, not through lo;
#                                  198.18.8.0/24 via 198.18.1.2: a black
#                                  hole (no forwarding)
#
# Console protocol (the host script reads it):
#   RAPTVM PASS <name> <secs>s
#   RAPTVM FAIL <name> <secs>s   after "    [name] ..." log lines
#   RAPTVM INFO <text>
#   RAPTVM SUMMARY <n> passed, <m> failed
#
# Traps (see the team's rdma-vm notes): busybox runs its own "ip" applet
# before $PATH, and it cannot make veth pairs or netns, so iproute2 is
# called by full path; siw binds wildcard listeners to the netdev's
# ifindex, so the two veth ends get distinct explicit indexes; siw cannot
# work on lo/127.0.0.1 with rdma_cm; siw connects its TCP socket inside
# rdma_connect(), for as long as the SYN retries last, so they are cut
# to 2 (7 s) for the black hole.

# busybox ash: "local" exists; commands in variables are split on purpose.
# shellcheck disable=SC3043,SC3045,SC2086
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
export RAPT_PROVIDER_PATH=/opt/rapt/lib RAPT_CONF=/dev/null
umask 022

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /tmp /run
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
ulimit -l unlimited
ulimit -n 4096

IP=/usr/bin/ip
RAPT_ADDR=192.0.2.1
SIW_ADDR=192.0.2.2
PEER_ADDR=$SIW_ADDR
UNREACHABLE_ADDR=203.0.113.1
BLACKHOLE_ADDR=198.51.100.1
IN_PEER="nsenter --net=/run/netns/peer"
RAPT_IA=tcp:veth0
RXE_ADDR=198.18.0.1
RXE_GW_ADDR=198.18.0.2
RXE_WIRE_ADDR=198.18.1.1
RXE_WIRE_PEER_ADDR=198.18.1.2
RXE_BLACKHOLE_1HOST=198.18.9.1
RXE_BLACKHOLE_2HOST=198.18.8.1

now() { cut -d' ' -f1 /proc/uptime; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
info() { echo "RAPTVM INFO $*"; }
cmdline_arg() {	# cmdline_arg NAME: the value of raptvm.NAME=...
	tr ' ' '\n' < /proc/cmdline | sed -n "s/^raptvm\.$1=//p" | tr ',' ' '
}

info "reached /init at uptime $(now)s"
echo 1 > /proc/sys/kernel/printk

PASSED=0
FAILED=0
SKIPPED=0
result() {	# result NAME RC T0 [SKIP REASON]: RC 77 is a skip
	if [ "$2" = 77 ]; then
		SKIPPED=$((SKIPPED + 1))
		echo "RAPTVM SKIP $1 $(elapsed "$3")s ($4)"
	elif [ "$2" = 0 ]; then
		PASSED=$((PASSED + 1))
		echo "RAPTVM PASS $1 $(elapsed "$3")s"
	else
		FAILED=$((FAILED + 1))
		echo "RAPTVM FAIL $1 $(elapsed "$3")s"
	fi
}
show() {	# show NAME FILE...: indent log files for the console
	local name=$1 f
	shift
	for f in "$@"; do
		[ -s "$f" ] && sed "s/^/    [$name $(basename "$f")] /" "$f"
	done
}

VERBOSE=0
grep -q 'raptvm.verbose=1' /proc/cmdline && VERBOSE=1

# wait_for FILE PATTERN PID: until FILE matches PATTERN (10 s at most);
# PATTERN "-": a second, for a server that says nothing when it listens.
wait_for() {
	local n=0 hex
	case $2 in
	peerport:*)
		# a listening TCP socket in netns peer (rdma-core's servers
		# print nothing before they exit: stdout to a file is
		# buffered; siw listens on a kernel socket of that netns)
		hex=$(printf '%04X' "${2#peerport:}")
		while ! $IN_PEER grep -q ":$hex 00000000:0000 0A" \
			/proc/net/tcp && [ $n -lt 100 ] &&
		      kill -0 "$3" 2>/dev/null; do
			sleep 0.1
			n=$((n + 1))
		done
		return
		;;
	hostport:*)
		# a listening TCP socket in netns init
		hex=$(printf '%04X' "${2#hostport:}")
		while ! grep -q ":$hex 00000000:0000 0A" /proc/net/tcp &&
		      [ $n -lt 100 ] && kill -0 "$3" 2>/dev/null; do
			sleep 0.1
			n=$((n + 1))
		done
		return
		;;
	cmport:*)
		# an rdma_cm listener on that port (rdma_cm ids of any
		# device: rxe has no TCP socket to look for)
		while ! rdma resource show cm_id 2>/dev/null |
			grep "LISTEN" | grep -q ":${2#cmport:} " &&
		      [ $n -lt 100 ] && kill -0 "$3" 2>/dev/null; do
			sleep 0.1
			n=$((n + 1))
		done
		return
		;;
	esac
	while ! grep -q "$2" "$1" 2>/dev/null && [ $n -lt 100 ] &&
	      kill -0 "$3" 2>/dev/null; do
		sleep 0.1
		n=$((n + 1))
	done
}

# reap PID SECS: wait for PID's exit (SECS at most; then it is killed);
# its exit status, 124 if it had to be killed.
reap() {
	local n=0 t
	while kill -0 "$1" 2>/dev/null && [ $n -lt $(($2 * 10)) ]; do
		sleep 0.1
		n=$((n + 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		echo "    (pid $1 still running after $2 s: killed)"
		kill -TERM "$1" 2>/dev/null
		sleep 1
		kill -KILL "$1" 2>/dev/null
		# a task stuck in the kernel (D state) cannot go: name it and
		# do not wait for it
		for t in /proc/[0-9]*/task/[0-9]*; do
			grep -q '^State:.*D' $t/status 2>/dev/null || continue
			echo "    (stuck in the kernel: $(cat $t/comm) $t)"
			sed 's/^/        /' $t/stack 2>/dev/null
		done
		return 124
	fi
	wait "$1"
}

# srv_cli NAME TIMEOUT READY "SERVER CMD" "CLIENT CMD"
# Starts the server, waits until its output matches READY (or, for
# READY=peerport:N, until netns peer listens on TCP port N), runs the
# client and waits for both; the test passes if both exit 0.
srv_cli() {
	local name=$1 tmo=$2 ready=$3 srv=$4 cli=$5 t0 spid rc=0
	local sl=/tmp/$name.server.log cl=/tmp/$name.client.log
	t0=$(now)
	dmesg -c > /dev/null
	timeout $tmo $srv > $sl 2>&1 &
	spid=$!
	wait_for $sl "$ready" $spid
	timeout $tmo $cli > $cl 2>&1 || rc=1
	wait $spid
	case $? in
	0) ;;
	77)	# the server says the pairing cannot work, and why
		result "$name" 77 "$t0" "$(sed -n 's/^SKIP: //p' $sl | head -n 1)"
		return
		;;
	*) rc=1 ;;
	esac
	if [ $rc != 0 ]; then
		show "$name" $sl $cl
		dmesg | tail -n 30 | sed "s/^/    [$name dmesg] /"
	elif [ "$VERBOSE" = 1 ]; then
		show "$name" $sl $cl
	fi
	result "$name" $rc "$t0"
}

# --- setup ---------------------------------------------------------------
t0=$(now)
: > /tmp/setup.log
rc=0
for m in crc32c_generic crc32_generic ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm siw \
	 rdma_rxe veth tcp_diag nf_tables; do
	modprobe "$m" >> /tmp/setup.log 2>&1 || { rc=1; echo "modprobe $m failed" >> /tmp/setup.log; }
done
# siw's connection-manager debug messages go to the kernel log (not the
# console); a failing test prints them.
[ -w /sys/kernel/debug/dynamic_debug/control ] &&
	echo 'module siw +p' > /sys/kernel/debug/dynamic_debug/control
(
	set -e
	$IP link set lo up
	$IP netns add peer
	$IP -n peer link set lo up
	$IP link add veth0 index 10 type veth peer name veth1 index 11 netns peer
	$IP addr add $RAPT_ADDR/24 dev veth0
	$IP -n peer addr add $SIW_ADDR/24 dev veth1
	$IP link set veth0 up
	$IP -n peer link set veth1 up
	$IP route add 198.51.100.0/24 via $SIW_ADDR
	echo 2 > /proc/sys/net/ipv4/tcp_syn_retries
	$IN_PEER sh -c 'echo 2 > /proc/sys/net/ipv4/tcp_syn_retries'
	rdma link add siw0 type siw netdev veth0
	$IN_PEER rdma link add siw1 type siw netdev veth1
	# rxe, one host: rxe0 on veth4; veth5 answers ARP for its own
	# address only (the black hole's gateway), in netns init too
	$IP link add veth4 index 14 type veth peer name veth5 index 15
	# rxe, two hosts in netns init: rules ahead of the local table send
	# traffic between veth2's and veth3's addresses over the wire
	$IP link add veth2 index 12 type veth peer name veth3 index 13
	echo 1 > /proc/sys/net/ipv4/conf/all/accept_local
	for d in veth2 veth3 veth4 veth5; do
		echo 1 > /proc/sys/net/ipv4/conf/$d/accept_local
		echo 0 > /proc/sys/net/ipv4/conf/$d/rp_filter
	done
	$IP addr add $RXE_ADDR/24 dev veth4
	$IP addr add $RXE_GW_ADDR/24 dev veth5
	$IP link set veth4 up
	$IP link set veth5 up
	$IP route add 198.18.9.0/24 via $RXE_GW_ADDR dev veth4 onlink
	$IP addr add $RXE_WIRE_ADDR/24 dev veth2
	$IP addr add $RXE_WIRE_PEER_ADDR/24 dev veth3
	$IP link set veth2 up
	$IP link set veth3 up
	$IP route add $RXE_WIRE_PEER_ADDR dev veth2 src $RXE_WIRE_ADDR table 100
	$IP route add $RXE_WIRE_ADDR dev veth3 src $RXE_WIRE_PEER_ADDR table 101
	$IP rule add pref 10 iif lo to $RXE_WIRE_PEER_ADDR lookup 100
	$IP rule add pref 11 iif lo to $RXE_WIRE_ADDR lookup 101
	$IP rule add pref 100 lookup local
	$IP rule del pref 0 lookup local
	$IP route add 198.18.8.0/24 via $RXE_WIRE_PEER_ADDR dev veth2
	rdma link add rxe0 type rxe netdev veth4
	rdma link add rxe1 type rxe netdev veth2
	rdma link add rxe2 type rxe netdev veth3
) >> /tmp/setup.log 2>&1 || rc=1
# rxe's GIDs appear after "rdma link add": wait for the IPv4 ones (10 s)
rxe_gid_ok() {	# rxe_gid_ok DEV: its IPv4-mapped GID is in the table
	local i=0 g
	while [ $i -lt 16 ]; do
		read -r g < /sys/class/infiniband/$1/ports/1/gids/$i 2>/dev/null &&
			case $g in 0000:0000:0000:0000:0000:ffff:*) return 0 ;; esac
		i=$((i + 1))
	done
	return 1
}
n=0
while [ $n -lt 100 ] && ! { rxe_gid_ok rxe0 && rxe_gid_ok rxe1 &&
			    rxe_gid_ok rxe2; }; do
	sleep 0.1
	n=$((n + 1))
done
[ $n -lt 100 ] || { rc=1; echo "rxe GIDs missing after 10 s" >> /tmp/setup.log; }
# Neighbours first: the passive side of rxe's CM drops a REQ whose sender
# it has no ARP entry for yet, and the requester sends it again only
# after 4 s (rdma_cm's CM response timeout), past short connect timeouts.
for a in $RXE_WIRE_PEER_ADDR $RXE_WIRE_ADDR $RXE_GW_ADDR; do
	ping -c 1 -W 2 $a >> /tmp/setup.log 2>&1 || rc=1
done
[ $rc = 0 ] || show setup /tmp/setup.log
result setup $rc "$t0"
rdma link show | sed 's/^/    /'
$IN_PEER rdma link show | sed 's/^/    [peer] /'

# --- kernel watchdog -----------------------------------------------------
# A kernel oops (taint bit D) leaves the RDMA stack half dead and the
# tests hanging: report it with the kernel's last words and power off at
# once instead of waiting for the host's timeout.
(
	while sleep 1; do
		read -r taint < /proc/sys/kernel/tainted
		[ $((taint & 128)) = 0 ] && continue
		sleep 1
		echo "RAPTVM INFO the kernel oopsed; its log:"
		dmesg | tail -n 120 | sed 's/^/    [kernel] /'
		echo "RAPTVM FAIL kernel_oops 0s"
		echo "RAPTVM SUMMARY $PASSED passed, $((FAILED + 1)) failed (kernel oops)"
		sync
		poweroff -f
	done
) &
WATCHDOG=$!

# --- suites --------------------------------------------------------------
. /opt/rapt/vm/lib-suites.sh
SUITES=$(cmdline_arg suites)
[ -n "$SUITES" ] || SUITES=interop
info "suites: $SUITES"
for s in $SUITES; do
	if [ -f /opt/rapt/vm/suite-$s.sh ]; then
		ts=$(now)
		info "suite $s"
		. /opt/rapt/vm/suite-$s.sh
		info "suite $s took $(elapsed "$ts")s"
	else
		result "suite_$s" 1 "$(now)"
		info "no suite $s"
	fi
done

kill $WATCHDOG 2>/dev/null
read -r tx < /sys/class/net/veth0/statistics/tx_bytes
read -r rx < /sys/class/net/veth0/statistics/rx_bytes
info "veth0 carried $tx bytes out, $rx bytes in"
read -r tx < /sys/class/net/veth2/statistics/tx_bytes
read -r rx < /sys/class/net/veth2/statistics/rx_bytes
info "veth2 (rxe1) carried $tx bytes out, $rx bytes in"
echo "RAPTVM SUMMARY $PASSED passed, $FAILED failed, $SKIPPED skipped (uptime $(now)s)"
grep -q 'raptvm.shell=1' /proc/cmdline && setsid cttyhack sh
sync
poweroff -f
