#!/bin/sh
# SPDX-License-Identifier: MIT
# uDAPL's own test programs (Debian's dapl2-utils: dtest, dtestcm,
# dtestsrq, dapltest), unmodified, over rapt's tcp provider on loopback
# through librapt-dat2.so, which libdat2 loads from a dat.conf that
# rapt-dat2-conf wrote (DAT_OVERRIDE), and the DAT calls they leave out
# (dat2_api_test).  dat2_lib.sh runs the programs and judges them;
# dat2_netns.sh runs them between two network namespaces.  Exits 1 on any
# FAIL; skips (77) when configure found no libdat2 or dapl2-utils is
# missing.

# The programs use fixed ports (dtest's 15828 and 45248, dapltest's
# 62000), and 45248 is in Linux's ephemeral range, where any busy
# process's connections come and go.  So the script runs in a network
# namespace of its own when it can (unshare -rn: a user namespace, no
# privilege needed), whose loopback nobody else uses; otherwise in the
# host's, one run at a time.
if [ -z "$RDAT_IN_NETNS" ] && command -v unshare >/dev/null &&
   unshare -rn true 2>/dev/null; then
	RDAT_IN_NETNS=1 exec unshare -rn sh -c \
		'ip link set lo up 2>/dev/null || ifconfig lo up; exec "$0" "$@"' \
		"$0" "$@"
fi
IA=rapt-tcp:lo
SADDR=127.0.0.1
SIN=
CIN=
. "$(dirname "$0")/dat2_lib.sh"
if [ -n "$RDAT_IN_NETNS" ]; then
	echo "in a network namespace of its own (unshare -rn)"
elif command -v flock >/dev/null; then
	lock=${TMPDIR:-/tmp}/rapt-dat2-check.lock
	exec 9>"$lock"
	flock -w 400 9 || skip "another run holds $lock"
fi

# --- the DAT calls the programs below leave out (dat2_api_test.c) -------
api=compat/dat2/tests/dat2_api_test
if [ ! -x "$api" ]; then
	row "API: dat2_api_test" FAIL "$api not built"
else
	timeout 60 $pre "$api" > "$work/api.log" 2>&1
	rc=$?
	while read -r res name; do
		case $res in
		PASS:) row "API: $name" PASS ;;
		FAIL:) row "API: $name" FAIL ;;
		esac
	done < "$work/api.log"
	why=
	if [ $rc -ne 0 ] || why=$(san "$work/api.log"); then
		row "API: dat2_api_test" FAIL "exit $rc${why:+, $why}"
		cat "$work/api.log"
	fi
fi

dat2_dtest
dat2_dtestcm
dat2_dtestsrq
dat2_dapltest

# --- dapltest -T L: limits, in one process ------------------------------
timeout 60 $pre dapltest -T L -D $IA -w 1 -m 100 > "$work/l.log" 2>&1
for t in ia pz cno evd ep rsp psp lmr rpost size_lmr; do
	sect=$(awk -v t="limit_$t" '$1 == "Limitation" { on = ($3 == t) }
		/^==[0-9]+==/ { on = 0 } on' "$work/l.log")
	if [ -z "$sect" ]; then
		row "-T L limit_$t" FAIL "not run"
	elif [ $t = cno ] && echo "$sect" | grep -q unimplemented; then
		row "-T L limit_$t" "NOT SUPPORTED" \
			"DAT_NOT_IMPLEMENTED: no CNO in rapt"
	elif echo "$sect" | grep -Eiq 'fail|error'; then
		row "-T L limit_$t" FAIL "$(echo "$sect" |
			grep -Ei 'fail|error' | head -1)"
	else
		row "-T L limit_$t" PASS "$(echo "$sect" |
			grep -Eo '(created|opened|posted)[^)]*' | tail -1)"
	fi
done
why=$(san "$work/l.log") && row "-T L (sanitizers)" FAIL "$why"
# -w > 1: dapltest shares one connect EVD between the EPs of several IAs.
row "-T L -w 8 (8 IAs)" "NOT SUPPORTED" \
	"DAT_INVALID_PARAMETER: one EVD serves EPs of other IAs; rapt objects belong to one IA"

# --- dapltest -T F: function feature tests, each case alone --------------
# Why a case may be NOT SUPPORTED (or not run), by feature and case.
fft_reason() {
	case $1 in
	queryinfo:1|queryinfo:12|queryinfo:13) echo "no CNO in rapt" ;;
	queryinfo:5) echo "dapltest reports the CR query case unsupported" ;;
	*) echo "" ;;
	esac
}
fft() {		# fft FEATURE CASES...
	f=$1
	shift
	for c in "$@"; do
		name="-T F -f $f case$c"
		if [ "$f:$c" = queryinfo:15 ]; then
			row "$name" "NOT RUN" "libdat2 reads an invalid EVD handle before any provider (segfaults with uDAPL too)"
			continue
		fi
		timeout 30 $pre dapltest -T F -s 127.0.0.1 -D $IA -f $f case$c \
			> "$work/f.log" 2>&1
		rc=$?
		code=$(grep -ao 'DAT_NOT_IMPLEMENTED\|DAT_MODEL_NOT_SUPPORTED' \
			"$work/f.log" | head -1)
		if [ $rc -gt 128 ] || [ $rc -eq 124 ]; then
			row "$name" FAIL "exit $rc"
		elif why=$(san "$work/f.log"); then
			row "$name" FAIL "$why"
		elif grep -aq 'Result: UNSUPP' "$work/f.log"; then
			row "$name" "NOT SUPPORTED" "$(fft_reason $f:$c)"
		elif grep -aq 'Result: PASS' "$work/f.log" && [ -n "$code" ]; then
			row "$name" "NOT SUPPORTED" "$code: $(fft_reason $f:$c)"
		elif grep -aq 'Result: PASS' "$work/f.log" &&
		     ! grep -aq 'failed in file' "$work/f.log"; then
			row "$name" PASS
		else
			row "$name" FAIL "$(grep -a -A1 'failed in file' \
				"$work/f.log" | tail -1)"
		fi
	done
}
fft hwconn 0 1 2 3
fft endpoint 0 1 2
fft pz 0 1 2
fft mem 0 1 2 3 4
fft connmgt 0 1
fft queryinfo 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17

dat2_summary
