#!/bin/sh
# SPDX-License-Identifier: MIT
#
# tshark as an independent decoder of the tcp provider's real traffic.
#
# Runs the example pair (examples/rapt_server, examples/rapt_client: a
# connect with private data, Sends both ways, an RDMA Write, an RDMA Read,
# a graceful disconnect) over tcp:lo with RAPT_TCP_CAPTURE set, once with
# CRC off and once with RAPT_TCP_CRC=1 on both sides.  Each side's capture
# (docs/tcp-provider.md, "Capturing traffic") is already in text2pcap's -D
# format, in the order its calls returned, so it starts at the MPA Request
# that tshark's MPA heuristic needs.  Both sides' captures become pcaps
# with the initiator at 10.0.0.1 and the responder at 10.0.0.2, and each
# is checked: the MPA Request and Reply, the RTR, the RDMAP opcodes in
# order, the DDP/RDMAP versions, that the frames tshark found account for
# every byte each way, no expert item but tshark 4.0's MPA v2 warnings (so
# nothing malformed), and with CRC on a good CRC32c in every FPDU (with it
# off, zero CRC fields and no verdict).
#
# Exit 0 pass, 1 fail, 77 skip (no tshark or text2pcap), 99 hard error.

set -u

SERVER=${SERVER:-./examples/rapt_server}
CLIENT=${CLIENT:-./examples/rapt_client}

. "$(dirname "$0")/tshark_lib.sh"
tshark_need
for p in "$SERVER" "$CLIENT"; do
	if [ ! -x "$p" ]; then
		echo "ERROR: $p is not built (make builds it)"
		exit 99
	fi
done

tmp=$(mktemp -d) || exit 99
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
"$TSHARK" --version 2>/dev/null | head -n 1

# demo NAME PORT: run the pair once, capturing into $tmp/NAME/; 1 when
# the server could not listen there.
demo() {
	mkdir "$tmp/$1" || exit 99
	RAPT_TCP_CAPTURE=$tmp/$1 timeout 30 "$SERVER" -p tcp:lo -s "$2" \
		> "$tmp/$1.srv" 2>&1 &
	srv=$!
	for _ in $(seq 100); do
		grep -q listening "$tmp/$1.srv" && break
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.05
	done
	if ! grep -q listening "$tmp/$1.srv"; then
		wait "$srv"
		srv=
		return 1
	fi
	RAPT_TCP_CAPTURE=$tmp/$1 timeout 30 "$CLIENT" -p tcp:lo -s "$2" \
		127.0.0.1 > "$tmp/$1.cli" 2>&1
	st=$?
	wait "$srv" || st=1
	srv=
	if [ "$st" -ne 0 ]; then
		cat "$tmp/$1.srv" "$tmp/$1.cli"
		echo "ERROR: the demo failed ($1)"
		exit 99
	fi
	return 0
}

# run NAME: the demo on a port picked from our pid (others may run it).
run() {
	for try in 1 2 3 4 5; do
		port=$((20000 + ($$ * 7 + try * 331) % 20000))
		demo "$1" "$port" && return 0
		rm -rf "$tmp/$1"
	done
	cat "$tmp/$1.srv"
	echo "ERROR: the server could not listen ($1)"
	exit 99
}

# mkpcap NAME SIDE FILE: one side's (client or server) capture as
# $tmp/NAME-SIDE.pcap, initiator 10.0.0.1, responder 10.0.0.2; "O" is
# what that side sent (text2pcap swaps -4 and -T for it).  Also counts
# the bytes each way into $tmp/NAME-SIDE.bytes.
mkpcap() {
	base=${3##*/}
	base=${base%.txt}
	lport=$(echo "$base" | cut -d- -f3)
	rport=$(echo "$base" | cut -d- -f4)
	if [ "$2" = client ]; then
		ips=10.0.0.2,10.0.0.1
		out=initiator in=responder
	else
		ips=10.0.0.1,10.0.0.2
		out=responder in=initiator
	fi
	"$TEXT2PCAP" -q -D -4 "$ips" -T "$rport,$lport" "$3" \
		"$tmp/$1-$2.pcap" >"$tmp/t2p.err" 2>&1 || {
		cat "$tmp/t2p.err"
		echo "ERROR: text2pcap $3"
		exit 99
	}
	awk -v o="$out" -v i="$in" '
		/^O$/ { d = o; next }
		/^I$/ { d = i; next }
		/^[0-9a-f]+ / { n[d] += NF - 1 }
		END { print "initiator " n["initiator"] + 0;
		      print "responder " n["responder"] + 0 }' "$3" \
		> "$tmp/$1-$2.bytes"
}

# pdus PCAP: one line per FPDU in frame order, "I" (initiator) or "R",
# then ULPDU length, DDP version, RDMAP version, opcode, T, and for the
# first PDU of a frame its STag and TO (enough for the RTR).
pdus() {
	fields "$1" iwarp_mpa.fpdu ip.src iwarp_mpa.ulpdulength \
		iwarp_ddp.dv iwarp_rdma.version iwarp_rdma.opcode \
		iwarp_ddp.tagged_flag iwarp_ddp.stag \
		iwarp_ddp.tagged_offset | awk -F'|' '{
		n = split($2, len, ","); split($3, dv, ",")
		split($4, ver, ","); split($5, op, ",")
		split($6, t, ","); split($7, st, ","); split($8, to, ",")
		for (k = 1; k <= n; k++)
			print ($1 == "10.0.0.1" ? "I" : "R") "|" len[k] "|" \
			      dv[k] "|" ver[k] "|" op[k] "|" t[k] "|" \
			      (k == 1 ? st[1] "|" to[1] : "|")
	}'
}

# verify NAME SIDE C: every check on $tmp/NAME-SIDE.pcap; C is the CRC
# flag both MPA frames must carry (0 or 1).
verify() {
	p=$1-$2
	l="$1/$2"

	# Private data: the IRD/ORD words (4), rapt's pdata header (4),
	# then the client's "demo" or the server's 16-byte region
	# descriptor (only its length is stable), then the tcp provider's
	# mark ("rtcp", 72746370).
	fields "$p" 'iwarp_mpa.req || iwarp_mpa.rep' ip.src iwarp_mpa.rev \
		iwarp_mpa.marker_flag iwarp_mpa.crc_flag iwarp_mpa.rej_flag \
		iwarp_mpa.res iwarp_mpa.pdlength iwarp_mpa.privatedata |
		awk -F'|' -v OFS='|' '{
			$8 = $1 == "10.0.0.1" ? substr($8, 17) : length($8) / 2
			print }' > "$tmp/got"
	check "$l: MPA Request/Reply (rev 2, E, C=$3, private data)" <<EOF
10.0.0.1|2|0|$3|0|0x10|16|64656d6f72746370
10.0.0.2|2|0|$3|0|0x10|28|28
EOF

	pdus "$p" > "$tmp/pdus"
	grep '^I|' "$tmp/pdus" | head -n 1 | cut -d'|' -f2,5- > "$tmp/got"
	# Both sides are rapt's tcp provider and marked: the responder
	# chooses the Write RTR (tagged, 14 bytes: a zero-length RDMA
	# Write to STag 1), which has no response.
	check "$l: the first FPDU is the Write RTR (zero-length, STag 1)" \
		<<'EOF'
14|0x00|1|0x00000001|0x0000000000000000
EOF

	for d in I R; do
		grep "^$d|" "$tmp/pdus" | cut -d'|' -f5 | uniq | tr '\n' ' '
		echo
	done > "$tmp/got"
	check "$l: RDMAP opcodes each way (Write RTR, Send, Write, Read Req/Resp)" \
		<<'EOF'
0x00 0x03 0x00 0x01 0x03 
0x03 0x02 
EOF

	awk -F'|' '$3 != 1 || $4 != 1' "$tmp/pdus" > "$tmp/got"
	check "$l: DDP and RDMAP version 1 in every FPDU" </dev/null

	# Every byte each way is in an MPA frame (20 + pdata) or an FPDU
	# (2 + ULPDU + pad to 4 + CRC 4): tshark left nothing undissected.
	{
		fields "$p" 'iwarp_mpa.req || iwarp_mpa.rep' ip.src \
			iwarp_mpa.pdlength | awk -F'|' \
			'{ print ($1 == "10.0.0.1" ? "I" : "R") "|" 20 + $2 }'
		awk -F'|' \
			'{ print $1 "|" 2 + $2 + (4 - ($2 + 2) % 4) % 4 + 4 }' \
			"$tmp/pdus"
	} | awk -F'|' '{ n[$1] += $2 }
		END { print "initiator " n["I"] + 0;
		      print "responder " n["R"] + 0 }' > "$tmp/got"
	check "$l: MPA frames and FPDUs cover every byte each way" \
		< "$tmp/$p.bytes"

	npdu=$(wc -l < "$tmp/pdus")
	if [ "$3" = 1 ]; then
		crc_verdicts "$p" | awk -F'|' -v n="$npdu" '
			{ g += $2; b += $3 }
			END { print "good " g + 0 " of " n ", bad " b + 0 }' \
			> "$tmp/got"
		echo "good $npdu of $npdu, bad 0" |
			check "$l: tshark finds every CRC32c good"
	else
		crc_verdicts "$p" > "$tmp/got"
		check "$l: no CRC verdict without CRC" </dev/null
		fields "$p" iwarp_mpa.fpdu iwarp_mpa.crc | tr ',' '\n' |
			grep -v '^0x00000000$' > "$tmp/got"
		check "$l: every CRC field zero without CRC" </dev/null
	fi

	experts "$p" > "$tmp/got"
	check "$l: no expert items but tshark 4.0's MPA v2 warnings" <<EOF
$V2_WARNS
EOF
}

# one NAME C: run the demo, check both sides' captures.
one() {
	run "$1"
	set -- "$1" "$2" "$tmp/$1"/*.txt
	if [ "$#" -ne 4 ]; then
		ls -l "$tmp/$1"
		echo "FAIL: $1: expected one capture per side"
		fail=1
		return
	fi
	for f in "$3" "$4"; do
		b=${f##*/}
		if [ "$(echo "$b" | cut -d- -f3)" = "$port" ]; then
			mkpcap "$1" server "$f"
		else
			mkpcap "$1" client "$f"
		fi
	done
	verify "$1" client "$2"
	verify "$1" server "$2"
}

unset RAPT_TCP_CRC
one nocrc 0
RAPT_TCP_CRC=1
export RAPT_TCP_CRC
one crc 1

[ "$fail" -eq 0 ] || tshark_stderr
exit "$fail"
