# SPDX-License-Identifier: MIT
# Helpers the VM suites share (sourced by tests/vm/init.sh before them):
# rapt-conformance runs, perf pairs against perftest, and the foreign-peer
# pairs, each on any rapt IA and either topology (a server in netns peer
# across the siw veth, or on rxe2 across the rxe veth in netns init).
#
# busybox ash: "local" exists; commands in variables are split on purpose.
# shellcheck shell=sh disable=SC3043,SC2086

# --- rapt-conformance ------------------------------------------------------
CONF_ARGS=$(cmdline_arg conf_args)
# raptvm.conf_env=VAR=VALUE,...: for the runs (RAPT_LOG_LEVEL=debug ...)
for kv in $(cmdline_arg conf_env); do
	export "$kv"
done
# raptvm.conf_configs=1host,2host,srv_tcp,tcp_srv: which runs (all)
CONF_CONFIGS=$(cmdline_arg conf_configs)
CONF_PORT=47391
CONF_TEST_TIMEOUT=60
# where the fault tests connect (a suite sets the blackhole its IA routes)
CONF_BLACKHOLE=$BLACKHOLE_ADDR
# --netcut: the VM is the suite's own machine, its firewall ours to change
# (the silent-peer tests drop one connection's packets with nft).
conf_common() {
	echo "--unreachable-addr $UNREACHABLE_ADDR --blackhole-addr $CONF_BLACKHOLE --timeout-scale 4 --test-timeout $CONF_TEST_TIMEOUT --netcut"
}

# conf_report NAME LOG RC T0: one result line for a whole run, with its
# counts, its skips and (on failure) its failures.
conf_report() {
	local name=$1 log=$2 rc=$3 t0=$4 sum
	sum=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' $log |
	      tail -n 1)
	[ -n "$sum" ] || { sum="no summary line"; rc=1; }
	info "$name: $sum"
	grep '^SKIP' $log | sed "s/^/    [$name] /"
	if [ "$VERBOSE" = 1 ]; then
		show "$name" $log
	elif [ $rc != 0 ]; then
		grep -A 6 '^FAIL' $log | sed "s/^/    [$name] /"
		tail -n 20 $log | sed "s/^/    [$name tail] /"
	fi
	result "$name" $rc "$t0"
}

# conf_1host NAME IA
conf_1host() {
	local name=$1 log=/tmp/$1.log t0 rc=0
	t0=$(now)
	timeout 1800 rapt-conformance -p $2 $(conf_common) \
		--xml /tmp/$name.xml $CONF_ARGS > $log 2>&1 || rc=1
	conf_report $name $log $rc "$t0"
}

# conf_2host NAME SERVER_IA CLIENT_IA [SERVER_ADDR [SERVER_PREFIX]]: the
# server in netns peer at $PEER_ADDR unless told otherwise
conf_2host() {
	local name=$1 slog=/tmp/$1.server.log log=/tmp/$1.log t0 spid rc=0
	local saddr=${4:-$PEER_ADDR} in=${5-$IN_PEER}
	t0=$(now)
	CONF_PORT=$((CONF_PORT + 1))
	dmesg -c > /dev/null
	# -v: the server names each passive role, so a hung one is known;
	# its own watchdog ends a passive role that outlives the client's.
	timeout 1800 $in rapt-conformance --server --once -v -p $2 \
		--port $CONF_PORT --test-timeout $CONF_TEST_TIMEOUT \
		> $slog 2>&1 &
	spid=$!
	wait_for $slog "control port" $spid
	if [ "$VERBOSE" = 1 ]; then
		# live, for a run that may not come back (a kernel bug)
		timeout 1800 rapt-conformance --client $saddr \
			--port $CONF_PORT -p $3 $(conf_common) -v $CONF_ARGS 2>&1 |
			tee $log | sed "s/^/    [$name live] /"
		grep -q '^[0-9]* passed, 0 failed' $log || rc=1
	else
		timeout 1800 rapt-conformance --client $saddr \
			--port $CONF_PORT -p $3 $(conf_common) \
			--xml /tmp/$name.xml $CONF_ARGS > $log 2>&1 || rc=1
	fi
	# The client has quit: the server follows at once, or it hangs.
	reap $spid 30 || rc=1
	if [ $rc != 0 ]; then
		tail -n 40 $slog | sed "s/^/    [$name server] /"
		dmesg | grep -v 'siw_cm_llp_\|siw_cm_upcall\|siw_qp_' |
			tail -n 60 | sed "s/^/    [$name dmesg] /"
	fi
	conf_report $name $log $rc "$t0"
}

# --- perf against perftest -------------------------------------------------
# The VM is emulated (TCG), so only ratios count: rapt_perf and perftest
# alternate PERF_ROUNDS times on the same devices (PERF_LAT_ROUNDS for
# latency), rapt_perf first in odd rounds and perftest in even ones
# (round_order); the verdict takes the median of the rounds' ratios
# (perf_pair_ratio).
# A suite sets PERF_IN (server prefix), PERF_RS/PERF_RC (rapt_perf server
# and client), PERF_PT_S/PERF_PT_C (perftest's -d and address arguments)
# and PERF_READY (how a server shows it listens: peerport, a TCP listener
# in netns peer (siw); cmport, an rdma_cm listener (rxe)).
PERF_ROUNDS=5
# The latency pairs take two rounds more: a round costs them seconds,
# where a bandwidth round on siw costs 15-20 s.
PERF_LAT_ROUNDS=7
# Both programs of every pair run pinned, the server on vCPU 1 and the
# client on vCPU 0, rapt's and perftest's alike: left to the scheduler,
# the two pollers sometimes share a vCPU, and a round's figure then
# doubles (rxe's read latency: 1.09-1.29 x pinned, 0.55-1.39 x not).
PERF_PIN_S="taskset -c 1"
PERF_PIN_C="taskset -c 0"
PERF_PORT=18600
PERF_ITERS=2000
# 64 KiB writes a bandwidth run makes (perf_on_*: siw's runs move 4-9
# MB/s in the VM, so 1,000 writes take 7-16 s each; rxe's 35-40 MB/s).
PERF_BW_ITERS=2000
# Writes outstanding in the bandwidth pair, the same for both programs
# (perftest's own default tx depth; rapt_perf's default is 16).
PERF_BW_WINDOW=128

# The two device pairs the perf pairs run on: siw across the namespace
# veth (the servers in netns peer), rxe on the two ends of the wire veth.
perf_on_siw() {
	PERF_IN=$IN_PEER
	PERF_RS="rapt_perf -S -p iwarp:siw1 --json"
	PERF_RC="rapt_perf -c $SIW_ADDR -p iwarp:siw0 --json"
	PERF_PT_S="-d siw1"
	PERF_PT_C="-d siw0 $SIW_ADDR"
	PERF_READY=peerport
	PERF_BW_ITERS=1000
}

perf_on_rxe() {
	PERF_IN=
	PERF_RS="rapt_perf -S -p ib:rxe2 --json"
	PERF_RC="rapt_perf -c $RXE_WIRE_PEER_ADDR -p ib:rxe1 --json"
	PERF_PT_S="-d rxe2"
	PERF_PT_C="-d rxe1 $RXE_WIRE_PEER_ADDR"
	PERF_READY=cmport
	PERF_BW_ITERS=2000
}

# median of the numbers on stdin
median() {
	sort -n | awk '{ v[NR] = $1 } END {
		if (!NR) { print "nan"; exit }
		if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# cpu_busy: the CPU time counters of /proc/stat, "busy total"
cpu_busy() {
	awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i;
		print t - $5 - $6, t; exit }' /proc/stat
}

# perf_quiet: wait (up to 5 s) until the VM's CPUs were at least 90 %
# idle over 0.3 s, so that what an earlier test left running (a peer's
# teardown, siw's or rxe's kernel work) does not land in one program of
# a pair and not the other.  Says so if the VM never got quiet.
perf_quiet() {
	local i a b
	for i in $(seq 16); do
		a=$(cpu_busy)
		sleep 0.3
		b=$(cpu_busy)
		echo "$a $b" | awk '{ exit !(($4 - $2) > 0 &&
			($3 - $1) * 10 <= ($4 - $2)) }' && return 0
	done
	info "perf: the VM stayed busy for 5 s before $1"
}

# perf_run NAME "SERVER" "CLIENT" OUT PORTOPT [AGAIN]: one run, the
# client's output in OUT; PORTOPT names the port option (rapt_perf -P,
# perftest -p).  AGAIN=1 (perftest, the reference, not what is tested):
# a refused first try runs once more, and says so.
perf_run() {
	local name=$1 srv=$2 cli=$3 out=$4 po=$5 again=${6:-0} spid rc=0
	PERF_PORT=$((PERF_PORT + 1))
	perf_quiet "$name"
	timeout 120 $PERF_IN $srv $po $PERF_PORT > /tmp/$name.srv 2>&1 &
	spid=$!
	wait_for /tmp/$name.srv $PERF_READY:$PERF_PORT $spid
	timeout 120 $cli $po $PERF_PORT > $out 2>&1 || rc=1
	if [ $rc != 0 ] && [ "$again" = 1 ]; then
		kill $spid 2>/dev/null
		wait $spid
		info "$name: $(grep -m 1 -i 'error\|fail' $out): once more"
		perf_run "$name" "$srv" "$cli" "$out" "$po"
		return
	fi
	wait $spid || rc=1
	[ $rc = 0 ] || show "$name" /tmp/$name.srv $out
	return $rc
}

# rapt_field FILE KEY: a number from rapt_perf's JSON line
rapt_field() {
	sed -n "s/.*\"$2\":\\([0-9.]*\\).*/\\1/p" $1 | tail -n 1
}

# pt_col FILE COL: column COL of perftest's result line (the first line
# that starts with a byte count), if it is a number: ib_send_lat has
# printed "inf" for a typical latency, which awk would read as infinity
# and the pair as a ratio of 0
pt_col() {
	awk -v c=$2 '$1 ~ /^[0-9]+$/ && NF >= c {
		if ($c ~ /^[0-9]+(\.[0-9]+)?$/) print $c; exit }' $1
}

# pairs_rounds: the "a b" lines on stdin (one round each, in run order)
# as "a/b=ratio ..." on one line: what a median hides
pairs_rounds() {
	awk '{ printf "%s/%s=%.2f ", $1, $2, ($2 > 0 ? $1 / $2 : 0) }'
}

# pairs_median: the median of the per-round ratios of the "a b" lines on
# stdin (rounds where b gave no figure left out)
pairs_median() {
	awk '$2 > 0 { printf "%.4f\n", $1 / $2 }' | median
}

# pairs_report NAME VS A B: two INFO lines, the rounds of files A and B
# (one figure per line, line i of both from round i) and the median of
# their per-round ratios; VS names the ratio ("rapt/uDAPL")
pairs_report() {
	paste -d' ' "$3" "$4" > /tmp/$1.pairs
	info "$1 rounds ($2): $(pairs_rounds < /tmp/$1.pairs)"
	info "$1 median ratio $(pairs_median < /tmp/$1.pairs)"
}

# round_order ROUND A B: who goes first in an alternating pair's round
# ROUND (A on odd rounds), so that neither program always runs on the
# state the other left
round_order() {
	if [ $(($1 % 2)) = 1 ]; then echo "$2 $3"; else echo "$3 $2"; fi
}

# perf_rounds NAME UNIT: each round's pair and its ratio, in run order
# (an INFO line); rounds where one program gave no figure are left out
# (/tmp/NAME.pairs holds "rapt perftest" per round)
perf_rounds() {
	info "$1 rounds ($2, rapt/perftest): $(pairs_rounds < /tmp/$1.pairs)"
}

# perf_pair_ratio NAME: the median of the per-round ratios.  Each round
# runs the two programs back to back, so a round's ratio sees one state
# of the shared host; the ratio of the two medians mixes rounds taken at
# different speeds (a slow spell in some perftest rounds moved a ratio
# of medians to 0.83 where every round but one said 1.15 or 0.92-1.29).
perf_pair_ratio() {
	pairs_median < /tmp/$1.pairs
}

# perf_report NAME UNIT RAPT PT KIND(lat|bw): a "RAPTVM PERF" line; RAPT
# and PT are the medians, the ratio is perf_pair_ratio's
perf_report() {
	local name=$1 unit=$2 r=$3 p=$4 kind=$5 ratio verdict target
	ratio=$(perf_pair_ratio $name | awk '$1 != "nan" { printf "%.2f", $1; next } { print }')
	if [ $kind = lat ]; then
		target="<= 1.10"
		verdict=$(awk -v x="$ratio" 'BEGIN { print (x != "nan" && x <= 1.10) ? "PASS" : "MISS" }')
	else
		target=">= 0.90"
		verdict=$(awk -v x="$ratio" 'BEGIN { print (x != "nan" && x >= 0.90) ? "PASS" : "MISS" }')
	fi
	echo "RAPTVM PERF $name rapt=$r perftest=$p $unit ratio=$ratio target$target $verdict"
}

# pt_left_out NAME: perftest is the yardstick, not what is tested: a run
# of it that failed twice (on a starved host ib_read_lat has ended with a
# flushed completion) is shown above and left out of its median; a pair
# with no perftest figure at all fails.
pt_left_out() {
	info "$1 failed twice: left out of the median"
}

# perf_pair_begin NAME: empty the round files of a pair.
perf_pair_begin() {
	: > /tmp/$1.rapt.v
	: > /tmp/$1.pt.v
	: > /tmp/$1.pairs
}

# perf_pair_round NAME RV PV: one round's figures (either may be empty);
# a round where both ran is a pair for the verdict.
perf_pair_round() {
	[ -n "$2" ] && echo "$2" >> /tmp/$1.rapt.v
	[ -n "$3" ] && echo "$3" >> /tmp/$1.pt.v
	[ -n "$2" ] && [ -n "$3" ] && echo "$2 $3" >> /tmp/$1.pairs
	return 0
}

# perf_pair_end NAME UNIT KIND RC T0: the report and the result.
perf_pair_end() {
	local rc=$4
	[ -s /tmp/$1.pt.v ] || rc=1	# no yardstick at all
	perf_rounds $1 $2
	perf_report $1 $2 "$(median < /tmp/$1.rapt.v)" \
		"$(median < /tmp/$1.pt.v)" $3
	result perf_$1 $rc "$5"
}

# pair_one NAME WHO: one program of a round of pair NAME, WHO rapt or pt,
# with the commands pair_rounds describes; its figure in PAIR_V (empty if
# it gave none), PAIR_FAIL 1 when rapt_perf failed (a perftest that
# failed is left out).  Globals, not a command substitution: perf_run
# moves PERF_PORT on.
pair_one() {
	local name=$1 who=$2
	PAIR_V=''
	PAIR_FAIL=0
	if [ $who = rapt ]; then
		if perf_run ${name}_rapt "$PERF_PIN_S $PERF_RS $PAIR_RS" \
			"$PERF_PIN_C $PERF_RC $PAIR_RCA" /tmp/$name.rapt.out -P; then
			PAIR_V=$(rapt_field /tmp/$name.rapt.out $PAIR_RKEY |
				awk -v h=$PAIR_HALVE '{ print h ? $1 / 2 : $1 }')
		else
			PAIR_FAIL=1
		fi
	elif perf_run ${name}_pt "$PERF_PIN_S $PAIR_PS" "$PERF_PIN_C $PAIR_PC" \
		/tmp/$name.pt.out -p 1; then
		PAIR_V=$(pt_col /tmp/$name.pt.out $PAIR_PCOL)
	else
		pt_left_out ${name}_pt
	fi
}

# pair_rounds NAME ROUNDS: the rounds of a pair, the program that goes
# first alternating (round_order).  The caller sets PAIR_RS and PAIR_RCA
# (rapt_perf's server and client arguments), PAIR_RKEY (its JSON field),
# PAIR_HALVE (1: report half of it), PAIR_PS and PAIR_PC (perftest's
# server and client command lines) and PAIR_PCOL (perftest's column).
# Returns 1 if a rapt_perf run failed.
pair_rounds() {
	local name=$1 i who rv pv rc=0
	for i in $(seq $2); do
		rv=''
		pv=''
		for who in $(round_order $i rapt pt); do
			pair_one $name $who
			[ $PAIR_FAIL = 0 ] || rc=1
			if [ $who = rapt ]; then rv=$PAIR_V; else pv=$PAIR_V; fi
		done
		perf_pair_round $name "$rv" "$pv"
	done
	return $rc
}

# perf_pair_lat NAME RAPT_TEST PT_PROG HALVE: PERF_LAT_ROUNDS rounds
perf_pair_lat() {
	local name=$1 t0 rc=0
	perf_pair_begin $name
	t0=$(now)
	PAIR_RS="-t $2 -s 8 -n $PERF_ITERS"
	PAIR_RCA=$PAIR_RS
	PAIR_RKEY=rtt_med_us
	PAIR_HALVE=$4
	PAIR_PS="$3 -R $PERF_PT_S -s 8 -n $PERF_ITERS"
	PAIR_PC="$3 -R $PERF_PT_C -s 8 -n $PERF_ITERS"
	PAIR_PCOL=5
	pair_rounds $name $PERF_LAT_ROUNDS || rc=1
	info "$name: perftest's $(grep -m 1 'TX depth' /tmp/$name.pt.out |
		tr -s ' ')"
	perf_pair_end $name us lat $rc "$t0"
}

# perf_pair_bw NAME: PERF_ROUNDS rounds of 64 KiB writes
perf_pair_bw() {
	local name=$1 t0 rc=0
	perf_pair_begin $name
	t0=$(now)
	PAIR_RS="-t bw_write -s 65536 -n $PERF_BW_ITERS"
	PAIR_RCA="$PAIR_RS -w $PERF_BW_WINDOW"
	PAIR_RKEY=MBps
	PAIR_HALVE=0
	PAIR_PS="ib_write_bw -R $PERF_PT_S -s 65536 -n $PERF_BW_ITERS -t $PERF_BW_WINDOW"
	PAIR_PC="ib_write_bw -R $PERF_PT_C -s 65536 -n $PERF_BW_ITERS -t $PERF_BW_WINDOW"
	PAIR_PCOL=4
	pair_rounds $name $PERF_ROUNDS || rc=1
	perf_pair_end $name MB/s bw $rc "$t0"
}

# --- foreign peers -----------------------------------------------------------
# rdma-core's own rdma_cm programs (rdmacm-utils), which no one here
# wrote, against rapt_cm_peer, which speaks their protocols through rapt.
FOREIGN_PORT=7600
CM_PEER=rapt_cm_peer

# foreign_pair IA TAG PEER_IN PEER_ADDR RAPT_ADDR READY [BIND]: the six
# tests of one rapt IA; the rdma-core program runs with prefix PEER_IN at
# PEER_ADDR; READY is how its server shows it listens (peerport: a TCP
# listener in netns peer, siw; cmport: an rdma_cm listener, any device);
# BIND=1: its servers bind PEER_ADDR (else the wildcard of their netns)
foreign_pair() {
	local ia=$1 tag=$2 in=$3 pa=$4 ra=$5 ready=$6 p bs= bb=
	[ "${7:-0}" = 1 ] && { bs="-s $pa"; bb="-b $pa"; }

	p=$((FOREIGN_PORT += 10))
	srv_cli rping_srv_rapt_cli_$tag 60 $ready:$p \
		"$in rping -s -a $pa -p $p -v" \
		"$CM_PEER -i $ia -m rping -c $pa -p $p -C 10"
	srv_cli rapt_srv_rping_cli_$tag 60 listening \
		"$CM_PEER -i $ia -m rping -s -p $((p + 1)) -C 10" \
		"$in rping -c -a $ra -p $((p + 1)) -C 10 -V -v"
	srv_cli rdma_server_rapt_cli_$tag 60 $ready:$((p + 2)) \
		"$in rdma_server $bs -p $((p + 2))" \
		"$CM_PEER -i $ia -m rdma -c $pa -p $((p + 2))"
	srv_cli rapt_srv_rdma_client_$tag 60 listening \
		"$CM_PEER -i $ia -m rdma -s -p $((p + 3))" \
		"$in rdma_client -s $ra -p $((p + 3))"
	srv_cli ucmatose_srv_rapt_cli_$tag 60 $ready:$((p + 4)) \
		"$in ucmatose $bb -p $((p + 4))" \
		"$CM_PEER -i $ia -m ucmatose -c $pa -p $((p + 4))"
	srv_cli rapt_srv_ucmatose_cli_$tag 60 listening \
		"$CM_PEER -i $ia -m ucmatose -s -p $((p + 5))" \
		"$in ucmatose -s $ra -p $((p + 5))"
}
