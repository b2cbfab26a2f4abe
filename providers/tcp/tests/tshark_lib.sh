# SPDX-License-Identifier: MIT
#
# Helpers shared by the tshark checks (tshark_wire.sh, tshark_provider.sh);
# sourced, not run.  The caller sets $tmp (a scratch directory holding
# NAME.pcap files) and $fail (0), and calls tshark_need first.

TSHARK=${TSHARK:-tshark}
TEXT2PCAP=${TEXT2PCAP:-text2pcap}

# tshark_need: skip (exit 77) when tshark or text2pcap is missing.
tshark_need() {
	if ! command -v "$TSHARK" >/dev/null 2>&1; then
		echo "SKIP: tshark not found (install tshark, re-run configure)"
		exit 77
	fi
	if ! command -v "$TEXT2PCAP" >/dev/null 2>&1; then
		echo "SKIP: text2pcap not found (install wireshark-common)"
		exit 77
	fi
}

# Send payloads look like RPC-over-RDMA or SMB Direct to tshark's
# heuristics, which then call the packet malformed.
tsh() {
	"$TSHARK" -n -o tcp.check_checksum:FALSE \
		--disable-protocol rpcordma --disable-protocol smb_direct \
		"$@" 2>>"$tmp/tshark.err"
}

# fields PCAP FILTER FIELD...: one line per frame, "|" between fields,
# "," between the occurrences of a field in one frame.
fields() {
	pcap=$tmp/$1.pcap
	filter=$2
	shift 2
	set -- $(printf -- '-e %s ' "$@")
	tsh -r "$pcap" -Y "$filter" -T fields -E separator='|' \
		-E occurrence=a "$@"
}

# crc_verdicts PCAP: "frame|good|bad" for each frame with a CRC verdict.
# tshark 4.0 has no field for the verdict, only the tree text.
crc_verdicts() {
	tsh -r "$tmp/$1.pcap" -V | awk '
		/^Frame [0-9]+:/ { f = $2; sub(":", "", f) }
		/\(Good CRC32\)/ { good[f]++; seen[f] = 1 }
		/Bad CRC32/ { bad[f]++; seen[f] = 1 }
		END { for (f in seen) print f "|" good[f] + 0 "|" bad[f] + 0 }' |
		sort -n
}

# experts PCAP: "Severity Group Protocol Summary", once each.
experts() {
	tsh -r "$tmp/$1.pcap" -q -z expert | awk '
		/^[A-Z][a-z]+ \([0-9]+\)/ { sev = $1 }
		/^ +[0-9]+ / { $1 = ""; print sev $0 }' | sort -u
}

# check LABEL: compare stdin (expected) with $tmp/got.
check() {
	if diff -u - "$tmp/got" > "$tmp/diff"; then
		echo "ok: $1"
	else
		echo "FAIL: $1 (- expected, + tshark)"
		cat "$tmp/diff"
		fail=1
	fi
}

# tshark_stderr: show what tshark said, after a failure.
tshark_stderr() {
	echo "tshark stderr:"
	grep -v 'Running as user' "$tmp/tshark.err"
}

# tshark 4.0 shows MPA v2's IRD/ORD words as raw private data and warns
# about E=1 and Rev=2 (in both frames, under "Request").
V2_WARNS='Warns Request IWARP_MPA Res field is NOT set to zero as required by RFC 5044
Warns Request IWARP_MPA Rev field is NOT set to one as required by RFC 5044'
