# SPDX-License-Identifier: MIT
# VM suite "perf" (sourced by tests/vm/init.sh): rapt_perf -p iwarp
# against perftest on the same siw devices, in the same VM run, across
# the veth pair (the server on siw1 in netns peer, the client on siw0).
# The VM is emulated (TCG), so only the ratios count:
#
#   send latency    rapt_perf lat_send (round trip / 2) : ib_send_lat -R
#   read latency    rapt_perf lat_read (round trip)     : ib_read_lat -R
#   write bandwidth rapt_perf bw_write                  : ib_write_bw -R
#
# Targets (issue #11): rapt <= 1.1 x perftest's latency, >= 0.9 x its
# bandwidth.  Each pair runs PERF_ROUNDS times, alternating; the medians
# are compared.  A line "RAPTVM PERF name rapt perftest ratio target
# verdict" per metric goes to the host (docs/performance.md takes it);
# the test passes when every pair ran (a missed target is reported, not
# failed: emulation noise on a shared 2-core host).
#
# busybox ash: "local" exists; commands in variables are split on purpose.
# shellcheck shell=sh disable=SC3043,SC2086

PERF_ROUNDS=3
PERF_PORT=18600
PERF_ITERS=2000
PERF_BW_ITERS=2000
PERF_OK=0

# median of the numbers on stdin
median() {
	sort -n | awk '{ v[NR] = $1 } END {
		if (!NR) { print "nan"; exit }
		if (NR % 2) print v[(NR + 1) / 2];
		else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# perf_run NAME "SERVER" "CLIENT" OUT PORTOPT: one run, the client's
# output in OUT; PORTOPT names the port option (rapt_perf -P, perftest -p)
perf_run() {
	local name=$1 srv=$2 cli=$3 out=$4 po=$5 spid rc=0
	PERF_PORT=$((PERF_PORT + 1))
	timeout 120 $IN_PEER $srv $po $PERF_PORT > /tmp/$name.srv 2>&1 &
	spid=$!
	# both servers listen through siw: a kernel socket in netns peer
	wait_for /tmp/$name.srv "peerport:$PERF_PORT" $spid
	timeout 120 $cli $po $PERF_PORT > $out 2>&1 || rc=1
	wait $spid || rc=1
	if [ $rc != 0 ]; then
		show "$name" /tmp/$name.srv $out
		PERF_OK=1
	fi
	return $rc
}

# pt_run NAME "SERVER" "CLIENT" OUT: one perftest run, tried twice.
# perftest is the yardstick, not what is tested: a run of it that fails
# (on a starved host ib_read_lat has ended with a flushed completion) is
# shown and left out of its median; the report says how many counted.
pt_run() {
	perf_run "$1" "$2" "$3" "$4" -p && return 0
	info "perftest run $1 failed (shown above): trying it again"
	perf_run "$1" "$2" "$3" "$4" -p && return 0
	info "perftest run $1 failed twice: left out"
	return 1
}

# rapt_field FILE KEY: a number from rapt_perf's JSON line
rapt_field() {
	sed -n "s/.*\"$2\":\\([0-9.]*\\).*/\\1/p" $1 | tail -n 1
}

# pt_col FILE COL: column COL of perftest's result line (the first line
# that starts with a byte count)
pt_col() {
	awk -v c=$2 '$1 ~ /^[0-9]+$/ && NF >= c { print $c; exit }' $1
}

# perf_metric NAME UNIT TARGET_OP TARGET RAPT... PERFTEST...
perf_report() {	# perf_report NAME UNIT RAPT PT KIND(lat|bw)
	local name=$1 unit=$2 r=$3 p=$4 kind=$5 ratio verdict target
	ratio=$(awk -v a="$r" -v b="$p" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "nan" }')
	if [ $kind = lat ]; then
		target="<= 1.10"
		verdict=$(awk -v x="$ratio" 'BEGIN { print (x != "nan" && x <= 1.10) ? "PASS" : "MISS" }')
	else
		target=">= 0.90"
		verdict=$(awk -v x="$ratio" 'BEGIN { print (x != "nan" && x >= 0.90) ? "PASS" : "MISS" }')
	fi
	echo "RAPTVM PERF $name rapt=$r perftest=$p $unit ratio=$ratio target$target $verdict"
}

RS="rapt_perf -S -p iwarp:siw1 --json"
RC="rapt_perf -c $SIW_ADDR -p iwarp:siw0 --json"

perf_pair_lat() {	# perf_pair_lat NAME RAPT_TEST PT_PROG HALVE
	local name=$1 test=$2 pt=$3 halve=$4 i t0 rc=0
	: > /tmp/$name.rapt.v
	: > /tmp/$name.pt.v
	t0=$(now)
	for i in $(seq $PERF_ROUNDS); do
		if perf_run ${name}_rapt "$RS -t $test -s 8 -n $PERF_ITERS" \
			"$RC -t $test -s 8 -n $PERF_ITERS" /tmp/$name.rapt.out -P; then
			rapt_field /tmp/$name.rapt.out rtt_med_us |
				awk -v h=$halve '{ printf "%.2f\n", h ? $1 / 2 : $1 }' \
				>> /tmp/$name.rapt.v
		else
			rc=1
		fi
		if pt_run ${name}_pt "$pt -R -d siw1 -s 8 -n $PERF_ITERS" \
			"$pt -R -d siw0 -s 8 -n $PERF_ITERS $SIW_ADDR" \
			/tmp/$name.pt.out; then
			pt_col /tmp/$name.pt.out 5 >> /tmp/$name.pt.v
		fi
	done
	[ -s /tmp/$name.pt.v ] || rc=1	# no yardstick at all
	perf_report $name us "$(median < /tmp/$name.rapt.v)" \
		"$(median < /tmp/$name.pt.v)" lat
	result perf_$name $rc "$t0"
}

perf_pair_bw() {	# perf_pair_bw NAME
	local name=$1 i t0 rc=0
	: > /tmp/$name.rapt.v
	: > /tmp/$name.pt.v
	t0=$(now)
	for i in $(seq $PERF_ROUNDS); do
		if perf_run ${name}_rapt "$RS -t bw_write -s 65536 -n $PERF_BW_ITERS" \
			"$RC -t bw_write -s 65536 -n $PERF_BW_ITERS" \
			/tmp/$name.rapt.out -P; then
			rapt_field /tmp/$name.rapt.out MBps >> /tmp/$name.rapt.v
		else
			rc=1
		fi
		if pt_run ${name}_pt "ib_write_bw -R -d siw1 -s 65536 -n $PERF_BW_ITERS" \
			"ib_write_bw -R -d siw0 -s 65536 -n $PERF_BW_ITERS $SIW_ADDR" \
			/tmp/$name.pt.out; then
			pt_col /tmp/$name.pt.out 4 >> /tmp/$name.pt.v
		fi
	done
	[ -s /tmp/$name.pt.v ] || rc=1	# no yardstick at all
	perf_report $name MB/s "$(median < /tmp/$name.rapt.v)" \
		"$(median < /tmp/$name.pt.v)" bw
	result perf_$name $rc "$t0"
}

info "perf: clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
perf_pair_lat send_lat lat_send ib_send_lat 1
perf_pair_lat read_lat lat_read ib_read_lat 0
perf_pair_bw write_bw
