#!/bin/sh
# SPDX-License-Identifier: MIT
#
# tshark as an independent decoder of the tcp provider's wire codec.
#
# wire_dump writes three connections' frames as text2pcap hex dumps; this
# script turns each into a capture (initiator 10.0.0.1:4000x, responder
# 10.0.0.2:5000x) and checks, frame by frame, what tshark's iwarp_mpa and
# iwarp_ddp_rdmap dissectors decode, and that tshark finds every CRC32c
# good.  tshark has no Decode-As for MPA: its heuristic recognises the
# stream from the MPA Request, which is why each dump starts there.
#
# The expected values were written for tshark 4.0 (Debian 12), which
# shows MPA v2's IRD/ORD words as raw private data and warns about E=1 and
# Rev=2; 4.6 decodes them and may need these tables updated.
#
# Exit 0 pass, 1 fail, 77 skip (no tshark or text2pcap), 99 hard error.

set -u

WIRE_DUMP=${WIRE_DUMP:-./providers/tcp/tests/wire_dump}

. "$(dirname "$0")/tshark_lib.sh"
tshark_need
if [ ! -x "$WIRE_DUMP" ]; then
	echo "ERROR: $WIRE_DUMP is not built (make check builds it)"
	exit 99
fi

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
"$TSHARK" --version 2>/dev/null | head -n 1

# mkpcap NAME INITIATOR_PORT RESPONDER_PORT: "O" blocks go from the
# initiator, "I" blocks from the responder.
mkpcap() {
	"$WIRE_DUMP" "$1" > "$tmp/$1.txt" || { echo "ERROR: wire_dump $1"; exit 99; }
	"$TEXT2PCAP" -q -D -4 10.0.0.2,10.0.0.1 -T "$3,$2" \
		"$tmp/$1.txt" "$tmp/$1.pcap" >"$tmp/t2p.err" 2>&1 || {
		cat "$tmp/t2p.err"
		echo "ERROR: text2pcap $1"
		exit 99
	}
}

# ------------------------------------------------------------------
# main: MPA v2 + CRC + P2P Write RTR, every RDMAP message, a Terminate
# ------------------------------------------------------------------
mkpcap main 40000 50000

fields main 'iwarp_mpa.req || iwarp_mpa.rep' frame.number tcp.srcport \
	iwarp_mpa.rev iwarp_mpa.marker_flag iwarp_mpa.crc_flag \
	iwarp_mpa.rej_flag iwarp_mpa.res iwarp_mpa.pdlength \
	iwarp_mpa.privatedata > "$tmp/got"
check "main: MPA Request/Reply (rev 2, C, E, IRD/ORD words + pdata)" <<'EOF'
1|40000|2|0|1|0|0x10|8|8010c01072617074
2|50000|2|0|1|0|0x10|6|800880046f6b
EOF

fields main iwarp_mpa.fpdu frame.number tcp.srcport \
	iwarp_mpa.ulpdulength iwarp_mpa.pad iwarp_mpa.crc_check > "$tmp/got"
check "main: FPDU framing (ULPDU length, pad, CRC field)" <<'EOF'
3|40000|14||0xebd34c5f
4|50000|42||0xb279d598
5|40000|21|00|0x157cf97e
6|40000|21|00|0x28123a01
7|40000|24|0000|0x9341b025
8|40000|29,29|00,00|0x72b4b676,0x6bb20933
9|40000|1014||0xd046f95b
10|40000|37|00|0xdad04c02
11|40000|46||0x2ecbdabc
12|50000|114||0xc367e8a8
13|50000|42||0x286040df
EOF

crc_verdicts main > "$tmp/got"
check "main: tshark computes every CRC32c good" <<'EOF'
3|1|0
4|1|0
5|1|0
6|1|0
7|1|0
8|2|0
9|1|0
10|1|0
11|1|0
12|1|0
13|1|0
EOF

fields main iwarp_ddp frame.number iwarp_ddp.tagged_flag \
	iwarp_ddp.last_flag iwarp_ddp.dv iwarp_ddp.stag \
	iwarp_ddp.tagged_offset iwarp_ddp.rsvdulp iwarp_ddp.qn \
	iwarp_ddp.msn iwarp_ddp.mo > "$tmp/got"
check "main: DDP headers (T, L, version, STag/TO, QN/MSN/MO)" <<'EOF'
3|1|1|1|0x00000001|0x0000000000000000||||
4|0|1|1|||4300000000|0|1|0
5|0|1|1|||4500000000|0|1|0
6|0|1|1|||4400001234|0|2|0
7|0|1|1|||460000abcd|0|3|0
8|0,0|0,1|1,1|||4300000000,4300000000|0,0|4,4|0,11
9|1|0|1|0x00005678|0x00007f0000001000||||
10|1|1|1|0x00005678|0x00007f00000013e8||||
11|0|1|1|||4100000000|1|1|0
12|1|1|1|0x00000011|0x0000000000001000||||
13|0|1|1|||4700000000|2|1|0
EOF

fields main iwarp_rdma frame.number iwarp_rdma.version iwarp_rdma.opcode \
	iwarp_rdma.inval_stag iwarp_rdma.sinkstag iwarp_rdma.sinkto \
	iwarp_rdma.rdmardsz iwarp_rdma.srcstag iwarp_rdma.srcto > "$tmp/got"
check "main: RDMAP headers (opcode, Invalidate STag, Read Request)" <<'EOF'
3|1|0x00||||||
4|1|0x03||||||
5|1|0x05||||||
6|1|0x04|4660|||||
7|1|0x06|43981|||||
8|1,1|0x03,0x03||||||
9|1|0x00||||||
10|1|0x00||||||
11|1|0x01||0x00000011|0x0000000000001000|100|0x00000022|0x0000000000002000
12|1|0x02||||||
13|1|0x07||||||
EOF

fields main iwarp_rdma.terminate frame.number iwarp_rdma.term_layer \
	iwarp_rdma.term_etype_ddp iwarp_rdma.term_errcode_ddp_untagged \
	iwarp_rdma.term_hdrct_m iwarp_rdma.hdrct_d iwarp_rdma.hdrct_r \
	iwarp_rdma.term_ddp_seg_len iwarp_rdma.term_ddp_h > "$tmp/got"
check "main: Terminate (DDP, untagged, no buffer, M+D, copied header)" <<'EOF'
13|0x01|0x02|0x02|1|1|0|0040|414300000000000000000000000500000000
EOF

experts main > "$tmp/got"
check "main: no expert items but tshark 4.0's MPA v2 warnings" <<EOF
$V2_WARNS
EOF

# ------------------------------------------------------------------
# nocrc: MPA v1, C=0 both ways: the CRC field is zero and unchecked
# ------------------------------------------------------------------
mkpcap nocrc 40001 50001

fields nocrc 'iwarp_mpa.req || iwarp_mpa.rep' frame.number tcp.srcport \
	iwarp_mpa.rev iwarp_mpa.marker_flag iwarp_mpa.crc_flag \
	iwarp_mpa.rej_flag iwarp_mpa.res iwarp_mpa.pdlength \
	iwarp_mpa.privatedata > "$tmp/got"
check "nocrc: MPA v1 Request/Reply without CRC" <<'EOF'
1|40001|1|0|0|0|0x00|0|
2|50001|1|0|0|0|0x00|0|
EOF

fields nocrc iwarp_mpa.fpdu frame.number iwarp_mpa.ulpdulength \
	iwarp_mpa.pad iwarp_mpa.crc iwarp_mpa.crc_check iwarp_rdma.opcode \
	iwarp_ddp.msn > "$tmp/got"
check "nocrc: Send with a zero CRC field" <<'EOF'
3|24|0000|0x00000000||0x03|1
EOF

crc_verdicts nocrc > "$tmp/got"
check "nocrc: no CRC verdict at all" </dev/null

experts nocrc > "$tmp/got"
check "nocrc: no expert items" </dev/null

# ------------------------------------------------------------------
# reject: MPA v2 Request, reject Reply with IRD/ORD words + pdata
# ------------------------------------------------------------------
mkpcap reject 40002 50002

fields reject 'iwarp_mpa.req || iwarp_mpa.rep' frame.number tcp.srcport \
	iwarp_mpa.rev iwarp_mpa.marker_flag iwarp_mpa.crc_flag \
	iwarp_mpa.rej_flag iwarp_mpa.res iwarp_mpa.pdlength \
	iwarp_mpa.privatedata > "$tmp/got"
check "reject: Request (A + Read RTR) and reject Reply with pdata" <<'EOF'
1|40002|2|0|1|0|0x10|4|80014001
2|50002|2|0|0|1|0x10|8|0000000062757379
EOF

experts reject > "$tmp/got"
check "reject: tshark notes the reject" <<EOF
Notes Response IWARP_MPA Reject bit set by Responder
$V2_WARNS
EOF

[ "$fail" -eq 0 ] || tshark_stderr
exit "$fail"
