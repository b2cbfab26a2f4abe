#!/bin/sh
# SPDX-License-Identifier: MIT
# /init of the siw interoperability VM that tests/interop/run-siw-vm.sh
# boots: busybox sh as PID 1.  Loads the RDMA modules and siw, wires two
# network namespaces with a veth pair, runs rapt_iw_peer (rapt's tcp
# provider) against iw_peer (librdmacm on kernel siw), prints one line per
# test on the serial console and powers off.
#
#   netns init (default)                      netns "peer"
#   veth0 192.0.2.1  rapt, tcp:veth0  <---->  veth1 192.0.2.2  siw1, iw_peer
#
# No siw device exists on rapt's side: every byte rapt sends or receives
# crosses the veth pair to the kernel's iWARP stack.
#
# Console protocol (the host script reads it):
#   RAPTSIW PASS <name> <secs>s
#   RAPTSIW FAIL <name> <secs>s   after "    [name] ..." log lines
#   RAPTSIW INFO <text>
#   RAPTSIW SUMMARY <n> passed, <m> failed
#
# Traps (see the team's rdma-vm notes): busybox runs its own "ip" applet
# before $PATH, and it cannot make veth pairs or netns, so iproute2 is
# called by full path; siw binds wildcard listeners to the netdev's
# ifindex, so the two veth ends get distinct explicit indexes; siw cannot
# work on lo/127.0.0.1 with rdma_cm.

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

IP=/usr/bin/ip
RAPT_ADDR=192.0.2.1
SIW_ADDR=192.0.2.2
IN_PEER="nsenter --net=/run/netns/peer"
RAPT_IA=tcp:veth0

now() { cut -d' ' -f1 /proc/uptime; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
info() { echo "RAPTSIW INFO $*"; }

info "reached /init at uptime $(now)s"
echo 1 > /proc/sys/kernel/printk

PASSED=0
FAILED=0
result() {	# result NAME RC T0
	if [ "$2" = 0 ]; then
		PASSED=$((PASSED + 1))
		echo "RAPTSIW PASS $1 $(elapsed "$3")s"
	else
		FAILED=$((FAILED + 1))
		echo "RAPTSIW FAIL $1 $(elapsed "$3")s"
	fi
}
show() {	# show NAME FILE...: indent log files for the console
	local name=$1 f
	shift
	for f in "$@"; do
		[ -s "$f" ] && sed "s/^/    [$name $(basename "$f")] /" "$f"
	done
}

# --- setup ---------------------------------------------------------------
t0=$(now)
: > /tmp/setup.log
rc=0
for m in crc32c_generic ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm siw \
	 veth; do
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
	$IN_PEER rdma link add siw1 type siw netdev veth1
) >> /tmp/setup.log 2>&1 || rc=1
[ $rc = 0 ] || show setup /tmp/setup.log
result setup $rc "$t0"
rdma link show | sed 's/^/    /'

# --- helpers -------------------------------------------------------------
# mpa_c_bits FILE: the C (CRC) bit of the first frame rapt sent (O) and the
# first it received (I), from an RAPT_TCP_CAPTURE file: "<O> <I>", 0 or 1.
# Byte 16 of an MPA Request or Reply is its flags byte; C is 0x40.
mpa_c_bits() {
	awk '
	/^[IO]$/ { dir = $1; n[dir]++; next }
	$1 == "000010" && n[dir] == 1 && !(dir in f) { f[dir] = $2 }
	END {
		for (d = 0; d < 2; d++) {
			k = d ? "I" : "O"
			v = (k in f) ? index("0123456789abcdef",
				tolower(substr(f[k], 1, 1))) - 1 : -1
			printf "%s%d", d ? " " : "", v < 0 ? -1 : int(v / 4) % 2
		}
		print ""
	}' "$1"
}

# check_crc NAME WANT_O WANT_I: the capture of test NAME has one
# connection whose MPA frames carry exactly these C bits.
check_crc() {
	local name=$1 want="$2 $3" files got
	files=$(ls /tmp/cap/$name/*.txt 2>/dev/null)
	if [ "$(echo "$files" | wc -w)" != 1 ]; then
		echo "expected one capture file, found: $files"
		return 1
	fi
	got=$(mpa_c_bits $files)
	echo "MPA C bits sent/received: $got (expected $want)"
	[ "$got" = "$want" ]
}

# pair NAME CRC "SERVER CMD" "CLIENT CMD" [C_SENT C_RECEIVED]
# Starts the server, waits for its "listening" line, runs the client and
# waits for both.  rapt runs with RAPT_TCP_CRC=CRC and captures its bytes
# into /tmp/cap/NAME; with C_SENT/C_RECEIVED the MPA C bits are checked.
pair() {
	local name=$1 crc=$2 srv=$3 cli=$4 t0 spid rc=0 n=0
	local sl=/tmp/$name.server.log cl=/tmp/$name.client.log
	local kl=/tmp/$name.dmesg.log ck=/tmp/$name.crc.log
	t0=$(now)
	mkdir -p /tmp/cap/$name
	dmesg -c > /dev/null
	RAPT_TCP_CRC=$crc RAPT_TCP_CAPTURE=/tmp/cap/$name \
		timeout 60 $srv > $sl 2>&1 &
	spid=$!
	while ! grep -q listening $sl 2>/dev/null && [ $n -lt 100 ] &&
	      kill -0 $spid 2>/dev/null; do
		sleep 0.1
		n=$((n + 1))
	done
	RAPT_TCP_CRC=$crc RAPT_TCP_CAPTURE=/tmp/cap/$name \
		timeout 60 $cli > $cl 2>&1 || rc=1
	wait $spid || rc=1
	if [ $# -ge 6 ]; then
		check_crc "$name" "$5" "$6" > $ck 2>&1 || rc=1
	fi
	if dmesg | grep -q 'siw: crc error'; then
		echo "siw reported CRC errors" >> $ck
		rc=1
	fi
	if [ $rc != 0 ]; then
		dmesg > $kl
		show "$name" $sl $cl $ck
		tail -n 60 $kl | sed "s/^/    [$name dmesg] /"
	elif [ "$VERBOSE" = 1 ]; then
		show "$name" $sl $cl $ck
	else
		info "$name: $(tail -n 1 $sl | tr -d '\n') / $(tail -n 1 $cl)"
		[ -s $ck ] && info "$name: $(cat $ck)"
	fi
	result "$name" $rc "$t0"
}

VERBOSE=0
grep -q 'raptsiw.verbose=1' /proc/cmdline && VERBOSE=1
RAPT="rapt_iw_peer -i $RAPT_IA"
SIW="$IN_PEER iw_peer"

# --- tests -----------------------------------------------------------------
# (a) rapt active -> siw passive; rapt disconnects
pair rapt_active_siw_passive 0 \
	"$SIW -s $SIW_ADDR -p 7501" "$RAPT -c $SIW_ADDR -p 7501 -d" 0 0
# (b) siw active -> rapt passive; siw disconnects
pair siw_active_rapt_passive 0 \
	"$RAPT -s -p 7502" "$SIW -c $RAPT_ADDR -p 7502 -d" 0 0
# (c) siw rejects rapt's request with private data
pair siw_rejects_rapt 0 \
	"$SIW -s $SIW_ADDR -p 7503 -r" "$RAPT -c $SIW_ADDR -p 7503 -r"
# (d) rapt rejects siw's request with private data
pair rapt_rejects_siw 0 \
	"$RAPT -s -p 7504 -r" "$SIW -c $RAPT_ADDR -p 7504 -r"
# (a) and (b) with rapt asking for CRC; the other side disconnects this
# time.  siw echoes a requester's C; as requester it never sets C, and
# follows rapt's C in the reply.
pair rapt_active_siw_passive_crc 1 \
	"$SIW -s $SIW_ADDR -p 7505 -d" "$RAPT -c $SIW_ADDR -p 7505" 1 1
pair siw_active_rapt_passive_crc 1 \
	"$RAPT -s -p 7506 -d" "$SIW -c $RAPT_ADDR -p 7506" 1 0
# (e) rapt ends an established connection abruptly (RST): siw reports
# the disconnect too, on either side of the connection
pair rapt_active_aborts_siw 0 \
	"$SIW -s $SIW_ADDR -p 7507" "$RAPT -c $SIW_ADDR -p 7507 -a" 0 0
pair rapt_passive_aborts_siw 0 \
	"$RAPT -s -p 7508 -a" "$SIW -c $RAPT_ADDR -p 7508" 0 0

read -r tx < /sys/class/net/veth0/statistics/tx_bytes
read -r rx < /sys/class/net/veth0/statistics/rx_bytes
info "veth0 carried $tx bytes out, $rx bytes in"
echo "RAPTSIW SUMMARY $PASSED passed, $FAILED failed (uptime $(now)s)"
grep -q 'raptsiw.shell=1' /proc/cmdline && setsid cttyhack sh
sync
poweroff -f
