# SPDX-License-Identifier: MIT
# Sourced by dat2.sh and dat2_netns.sh: running uDAPL's own test programs
# (Debian's dapl2-utils), unmodified, through librapt-dat2.so, judged by
# their output text (their exit codes cannot be trusted: dtest exits 0
# after "FAILED"), one row per case: PASS, NOT SUPPORTED (the DAT code and
# why) or FAIL.
#
# The caller sets, before sourcing:
#   IA     the DAT IA name both sides use (rapt-tcp:<interface>)
#   SADDR  the server's address, as the clients reach it
#   SIN    a command prefix that runs a program in the server's network
#          namespace (empty: this one)
#   CIN    the same for the clients
#   DAT2_ON_EXIT  optional: a command the exit runs too
# Skips (77) when configure found no libdat2 or dapl2-utils is missing.

lib=$(pwd)/compat/dat2/.libs/librapt-dat2.so
conf_tool=compat/dat2/rapt-dat2-conf
skip() { echo "SKIP: $*"; exit 77; }
[ -f "$lib" ] && [ -x "$conf_tool" ] ||
	skip "configure found no libdat2 (apt-get install libdapl-dev)"
for p in dtest dtestcm dtestsrq dapltest; do
	command -v $p >/dev/null ||
		skip "$p not found (apt-get install dapl2-utils)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/rapt-dat2.XXXXXX")
spid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	rm -rf "$work"
	[ -z "$DAT2_ON_EXIT" ] || $DAT2_ON_EXIT
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# A sanitizer build's library needs its runtimes loaded first in the DAT
# programs, which are built without them.  Leak reports count only when
# a frame of the leaked block's stack is rapt's (bad() below; at exit
# libdat2 has unloaded this library and rapt its providers, so their
# frames read "<unknown module>", which nothing else here unloads): the
# programs leak a few buffers of their own, and every stack of ours runs
# through them and libdat2, so no suppression by name could tell the two
# apart.  Whole stacks are needed for that (no frame pointers in them).
san=$(ldd "$lib" | awk '/lib(a|ub|t)san/ { printf "%s%s", s, $3; s = ":" }')
# Only the DAT programs get them ($pre): awk, grep and the rest of this
# script run as they are.
pre=
if [ -n "$san" ]; then
	pre="env LD_PRELOAD=$san"
	ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:exitcode=0
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	export ASAN_OPTIONS UBSAN_OPTIONS
	echo "sanitizer runtimes preloaded into the DAT programs: $san"
fi

RAPT_PROVIDER=tcp
DAT_OVERRIDE=$work/dat.conf
export RAPT_PROVIDER DAT_OVERRIDE
# In the server's namespace: it lists that namespace's interfaces.
$SIN "$conf_tool" -l "$lib" > "$DAT_OVERRIDE" 2>"$work/conf.err" ||
	{ cat "$work/conf.err"; exit 1; }
grep -q "^$IA " "$DAT_OVERRIDE" ||
	{ echo "FAIL: no $IA in the generated dat.conf:"; cat "$DAT_OVERRIDE"; exit 1; }
echo "dat.conf:"; grep -v '^#' "$DAT_OVERRIDE" | sed 's/^/  /'

start=$(date +%s)
table=$work/table
fails=0
row() {		# row NAME RESULT [DETAIL]
	printf '%-52s %s%s\n' "$1" "$2" "${3:+ ($3)}" >> "$table"
	case $2 in FAIL) fails=$((fails + 1)) ;; esac
}

# Is something listening on port $1 in the server's namespace?  (/proc:
# no ss needed)
listening() {
	hexport=$(printf "%04X" "$1")
	$SIN cat /proc/net/tcp | awk -v p=":$hexport" \
		'$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 }
		END { exit !f }'
}

# Wait for the server ($spid) to listen on port $1: at most 10 s.
wait_listen() {
	n=0
	while ! listening "$1"; do
		kill -0 "$spid" 2>/dev/null || return 1
		n=$((n + 1))
		[ $n -gt 200 ] && return 1
		sleep 0.05
	done
}

# Wait for a port to be free again (the last server's): at most 10 s.
wait_free() {
	n=0
	while listening "$1"; do
		n=$((n + 1))
		[ $n -gt 200 ] && return 1
		sleep 0.05
	done
}

server() {	# server LOG PORT CMD...: start, wait until it listens
	log=$1 port=$2
	shift 2
	wait_free "$port"
	timeout 60 $SIN $pre "$@" > "$log" 2>&1 &
	spid=$!
	wait_listen "$port"
}

# stop_server [SECONDS]: wait for the server to finish (30 s by default),
# then stop it; 1 if it had to be stopped.
stop_server() {
	n=0
	while kill -0 "$spid" 2>/dev/null && [ $n -lt $((${1:-30} * 20)) ]; do
		n=$((n + 1))
		sleep 0.05
	done
	kill "$spid" 2>/dev/null && _stopped=1 || _stopped=0
	wait "$spid" 2>/dev/null
	spid=
	return $_stopped
}

bad_words='Error|ERR:|FAIL|Segmentation|Aborted|dumped'

san_words='ERROR: AddressSanitizer|runtime error'

# scan WORDS FILE...: print the first line matching WORDS in the logs, the
# first leak report with a frame in rapt, or the first ThreadSanitizer
# race whose two accesses both have a frame in rapt; 1 if none.  A race
# with one side in the program alone is the program reading memory an
# RDMA write fills, which it synchronises on by polling that memory
# (dtest -W): TSan cannot see that, and it is not rapt's to order.
scan() {
	w=$1
	shift
	awk -v w="$w" '
	function ours(t) { return t ~ /librapt|compat\/dat2|rapt_|rdat_/ }
	/WARNING: ThreadSanitizer/ { inrace = 1; side = 1; a = b = 0
		first = FILENAME ": " $0; next }
	inrace && /^  Previous/ { side = 2 }
	inrace && (/^  (Location|Mutex|Thread)/ || /^SUMMARY/) {
		if (a && b) { print first; found = 1; exit }
		inrace = 0 }
	inrace { if (ours($0)) { if (side == 1) a = 1; else b = 1 }; next }
	/^(Direct|Indirect) leak/ { inleak = 1; first = FILENAME ": " $0; next }
	inleak && /^$/ { inleak = 0 }
	inleak && /librapt|compat\/dat2|rapt_|rdat_|<unknown module>/ {
		print first; found = 1; exit }
	$0 ~ w { print FILENAME ": " $0; found = 1; exit }
	END { exit !found }' "$@"
}
bad() { scan "$bad_words|$san_words" "$@"; }	# any sign of failure
san() { scan "$san_words" "$@"; }

# passed PATTERN: client and server logs both say PATTERN and show no sign
# of failure; else that sign goes to $work/why and the logs' tails out.
passed() {
	if grep -q "$1" "$work/c.log" && grep -q "$1" "$work/s.log" &&
	   ! bad "$work/c.log" "$work/s.log" >/dev/null; then
		return 0
	fi
	bad "$work/c.log" "$work/s.log" > "$work/why"
	tail -n 5 "$work/c.log" "$work/s.log"
	return 1
}	# sanitizers' only (dapltest -T F
					# and -T L print "Error" as they pass)

# --- dtest: send/recv, RDMA write and read, ping-pong -------------------
# dtest's server sends its address to the client over a socket and only
# then creates its PSP: a quick client can connect first and be refused
# (NON_PEER_REJECTED: nothing listens yet), as it would be by any
# provider whose connect is fast.  That race, and only it, is retried.
dtest_once() {	# dtest_once OPTIONS...: 0 passed, 1 failed, 2 lost the race
	if ! server "$work/s.log" 15828 dtest -P $IA -s "$@"; then
		stop_server
		echo "server did not start" > "$work/why"
		return 1
	fi
	timeout 60 $CIN $pre dtest -P $IA -h $SADDR "$@" > "$work/c.log" 2>&1
	if grep -q 'unexpected conn event.*NON_PEER_REJECTED' "$work/c.log" &&
	   ! grep -q 'CONNECTED' "$work/c.log"; then
		kill "$spid" 2>/dev/null
		stop_server
		return 2
	fi
	stop_server
	passed 'Test Complete. PASSED'
}
dtest_case() {	# dtest_case NAME OPTIONS...
	name=$1
	shift
	for try in 1 2 3 4 5; do
		dtest_once "$@"
		rc=$?
		[ $rc -ne 2 ] && break
	done
	retried=
	[ "$try" -gt 1 ] && retried="client beat the server's PSP $((try - 1))x, retried"
	case $rc in
	0) row "$name" PASS "$retried" ;;
	2) row "$name" FAIL "the client connected before the server listened, 5 times" ;;
	*) row "$name" FAIL "$(cat "$work/why")" ;;
	esac
	# what the programs said, for a failure seen only in CI
	[ $rc = 0 ] || tail -n 15 "$work/s.log" "$work/c.log"
}
# The dtest cases: every transfer kind, and the CNO it cannot have.
dat2_dtest() {
	dtest_case "dtest (RDMA write/read, send)" -b 65536
	# -B 100 (round trips per size): both sides spin on the buffer in the
	# ping-pong and the data check compares all of it each trip, which a
	# sanitizer build or a busy machine makes slow.
	dtest_case "dtest -W -D (RDMA write ping-pong, validated)" -b 65536 -W -D \
		-B 100
	dtest_case "dtest -p (polling)" -b 65536 -p
	dtest_case "dtest -u (unidirectional)" -b 65536 -u
	dtest_case "dtest -w (RDMA write streaming)" -b 65536 -w
	dtest_case "dtest -W -a -i 4096 (every size to 64 KiB)" -b 65536 -W -a \
		-i 4096 -B 100
	# -c waits on a CNO: the server stops at dat_cno_create, before it listens.
	timeout 30 $SIN $pre dtest -P $IA -s -b 65536 -c > "$work/c.log" 2>&1
	if grep -q 'dat_cno_create: DAT_NOT_IMPLEMENTED' "$work/c.log"; then
		row "dtest -c (CNO)" "NOT SUPPORTED" "DAT_NOT_IMPLEMENTED: no CNO in rapt"
	else
		row "dtest -c (CNO)" FAIL "expected DAT_NOT_IMPLEMENTED from dat_cno_create"
	fi
}

# --- dtestcm: connection setup ----------------------------------------
# dtestcm's server takes its first 1000 connection events for the 1000
# ESTABLISHED (its test, "not ESTABLISHED and a UD test", is never true
# for RC), then frees the EP each further event names.  When a client's
# disconnect is reported before the last ESTABLISHED (events of different
# connections have no order between them), the server takes that
# DISCONNECTED for an ESTABLISHED, later frees an EP on its ESTABLISHED,
# and then gets that EP's DISCONNECTED: "DAT_INVALID_HANDLE" (uDAPL too
# reports the DISCONNECTED of an EP freed connected).  That run, and only
# it, is retried: the server's connection events (RAPT_DAT2_TRACE) must
# show a DISCONNECTED among its first 1000, and its log that error.
dtestcm_once() {	# 0 passed, 1 failed, 2 dtestcm's own race
	rm -f "$work/s.trace"
	if ! server "$work/s.log" 45248 env RAPT_DAT2_TRACE="$work/s.trace" \
	   dtestcm -P $IA -s; then
		stop_server
		echo "server did not start" > "$work/why"
		return 1
	fi
	timeout 60 $CIN $pre dtestcm -P $IA -h $SADDR > "$work/c.log" 2>&1
	if ! stop_server 10; then
		echo "the server did not finish" > "$work/why"
		return 1
	fi
	passed 'ALL 1000 CONNECTED on' && grep -q 'Test Complete' "$work/s.log" &&
		return 0
	if grep -q 'disconnect_eps: DAT_INVALID_HANDLE' "$work/s.log" &&
	   [ -f "$work/s.trace" ] && head -n 1000 "$work/s.trace" |
	   grep -q '^event 0x4005 '; then
		return 2
	fi
	[ -s "$work/why" ] || echo "$(tail -n 1 "$work/s.log")" > "$work/why"
	return 1
}
# dtestcm, its own race retried.
dat2_dtestcm() {
	for try in 1 2 3 4 5 6; do
		dtestcm_once
		rc=$?
		[ $rc -ne 2 ] && break
	done
	raced=
	[ "$try" -gt 1 ] && raced="dtestcm took a DISCONNECTED for an ESTABLISHED $((try - 1 - (rc == 2)))x, retried"
	case $rc in
	0) row "dtestcm (1000 connections)" PASS \
		"$(grep -o 'CPS [0-9.]*' "$work/c.log")${raced:+; $raced}" ;;
	2) row "dtestcm (1000 connections)" FAIL \
		"dtestcm took a DISCONNECTED for an ESTABLISHED, $try times running" ;;
	*) row "dtestcm (1000 connections)" FAIL "$(cat "$work/why")" ;;
	esac
	[ $rc = 0 ] || { tail -n 15 "$work/s.log" "$work/c.log"
		ss -tlnp 2>/dev/null | tail -n 5; }

}

# --- dtestsrq: a shared receive queue -----------------------------------
# -b: dtestsrq sizes its buffers from an "IB_MTU" provider attribute
# otherwise, which only IB providers have.
# dtestsrq with one and with 100 connections.
dat2_dtestsrq() {
	for c in 1 100; do
		name="dtestsrq -c $c (SRQ, $c connections)"
		if server "$work/s.log" 45248 dtestsrq -P $IA -s -c $c -b 1024; then
			timeout 60 $CIN $pre dtestsrq -P $IA -h $SADDR -c $c -b 1024 \
				> "$work/c.log" 2>&1
			stop_server
			if passed 'SRQ Test Complete'; then
				row "$name" PASS
			else
				row "$name" FAIL "$(cat "$work/why")"
			fi
		else
			stop_server
			row "$name" FAIL "server did not start"
			tail -n 5 "$work/s.log"
		fi
	done

}

# --- dapltest -T T / -T P against one dapltest -T S ---------------------
dt_client() {	# dt_client NAME OK-PATTERN ARGS...
	name=$1 ok=$2
	shift 2
	before=$(wc -l < "$work/dts.log")
	timeout 60 $CIN $pre dapltest "$@" > "$work/c.log" 2>&1
	tail -n +"$((before + 1))" "$work/dts.log" > "$work/snew.log"
	if grep -q "$ok" "$work/c.log" &&
	   ! bad "$work/c.log" "$work/snew.log" >/dev/null; then
		row "$name" PASS "${ok:+$(grep -a -o "$ok *: *[0-9.]*" \
			"$work/c.log" | head -1 | tr -s ' ')}"
	else
		row "$name" FAIL "$(bad "$work/c.log" "$work/snew.log")"
		tail -n 5 "$work/c.log" "$work/snew.log"
	fi
}
# dapltest -T T and -T P clients against one -T S server, which -T Q ends.
dat2_dapltest() {
	S="-s $SADDR -D $IA"
	if server "$work/dts.log" 62000 dapltest -T S -D $IA; then
		dt_client "-T T client SR 256 server SR 256, 1x1, -V" "Total WQE" \
			-T T $S -i 1000 -t 1 -w 1 -V client SR 256 server SR 256
		dt_client "-T T client SR 256 server SR 256, 4 thr x 4 EP, -V" \
			"Total WQE" -T T $S -i 1000 -t 4 -w 4 -V \
			client SR 256 server SR 256
		dt_client "-T T RDMA read op list, 2x2, -V" "Total WQE" \
			-T T $S -i 1000 -t 2 -w 2 -V client SR 256 \
			client RR 4096 2 server RR 8192 1 server SR 256
		dt_client "-T T RDMA write op list, 2x2, -V" "Total WQE" \
			-T T $S -i 1000 -t 2 -w 2 -V client SR 256 \
			client RW 4096 2 server RW 8192 1 server SR 256
		dt_client "-T T mixed op list, polling, 2x2, -V" "Total WQE" \
			-T T $S -i 1000 -t 2 -w 2 -V -P client SR 1024 3 \
			client RR 4096 server RW 512 4 client RW 65536 server SR 8
		for m in b p; do
			for op in RW RR; do
				dt_client "-T P -m $m $op 4096 2 (pipeline 8)" \
					"Operation Throughput" -T P $S -m $m -i 2000 \
					-p 8 $op 4096 2
			done
		done
		dt_client "-T Q (server drains and exits)" "" -T Q $S
		stop_server
		grep -aq 'Exiting' "$work/dts.log" ||
			row "-T S server exits on -T Q" FAIL
	else
		stop_server
		row "dapltest -T S" FAIL "server did not start"
	fi
}

# Print the table and the counts; 0 when nothing failed.
dat2_summary() {
	echo
	printf '%-52s %s\n' "case" "result"
	cat "$table"
	echo "$(grep -c ' PASS' "$table") passed," \
		"$(grep -c 'NOT SUPPORTED' "$table") not supported," \
		"$(grep -c 'NOT RUN' "$table") not run, $fails failed;" \
		"$(( $(date +%s) - start )) s"
	[ $fails -eq 0 ]
}
