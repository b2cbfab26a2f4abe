# SPDX-License-Identifier: MIT
# VM suite "interop" (sourced by tests/vm/init.sh): rapt's tcp provider
# against iw_peer, a librdmacm/libibverbs program on kernel siw, over the
# veth pair; every byte rapt sends or receives crosses it to the kernel's
# iWARP stack.
#
#   netns init                                netns "peer"
#   veth0 192.0.2.1  rapt, tcp:veth0  <---->  veth1 192.0.2.2  siw1, iw_peer
#
# busybox ash: "local" exists; commands in variables are split on purpose.
# shellcheck shell=sh disable=SC3043,SC2086

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
iw_pair() {
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

RAPT="rapt_iw_peer -i $RAPT_IA"
SIW="$IN_PEER iw_peer"

# --- tests -----------------------------------------------------------------
# (a) rapt active -> siw passive; rapt disconnects
iw_pair rapt_active_siw_passive 0 \
	"$SIW -s $SIW_ADDR -p 7501" "$RAPT -c $SIW_ADDR -p 7501 -d" 0 0
# (b) siw active -> rapt passive; siw disconnects
iw_pair siw_active_rapt_passive 0 \
	"$RAPT -s -p 7502" "$SIW -c $RAPT_ADDR -p 7502 -d" 0 0
# (c) siw rejects rapt's request with private data
iw_pair siw_rejects_rapt 0 \
	"$SIW -s $SIW_ADDR -p 7503 -r" "$RAPT -c $SIW_ADDR -p 7503 -r"
# (d) rapt rejects siw's request with private data
iw_pair rapt_rejects_siw 0 \
	"$RAPT -s -p 7504 -r" "$SIW -c $RAPT_ADDR -p 7504 -r"
# (a) and (b) with rapt asking for CRC; the other side disconnects this
# time.  siw echoes a requester's C; as requester it never sets C, and
# follows rapt's C in the reply.
iw_pair rapt_active_siw_passive_crc 1 \
	"$SIW -s $SIW_ADDR -p 7505 -d" "$RAPT -c $SIW_ADDR -p 7505" 1 1
iw_pair siw_active_rapt_passive_crc 1 \
	"$RAPT -s -p 7506 -d" "$SIW -c $RAPT_ADDR -p 7506" 1 0
# (e) rapt ends an established connection abruptly (RST): siw reports
# the disconnect too, on either side of the connection
iw_pair rapt_active_aborts_siw 0 \
	"$SIW -s $SIW_ADDR -p 7507" "$RAPT -c $SIW_ADDR -p 7507 -a" 0 0
iw_pair rapt_passive_aborts_siw 0 \
	"$RAPT -s -p 7508 -a" "$SIW -c $RAPT_ADDR -p 7508" 0 0

