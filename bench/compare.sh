#!/bin/sh
# SPDX-License-Identifier: MIT
#
# compare.sh - rapt (rapt_perf over tcp:lo), libfabric (tcp provider) and
# raw TCP, side by side on 127.0.0.1, interleaved: every round runs, for
# each metric, rapt, libfabric and raw TCP back to back (A B C A B C ...),
# so the ratios are taken between neighbours in time.  The machine is
# shared: before each metric of each round the script waits (up to 60 s)
# for one second with at least 85 % idle CPU.
#
#   bench/compare.sh [-b BUILDDIR] [-r ROUNDS] [-m METRICS] [-o FILE]
#                    [--quick] [--no-idle]
#
# METRICS: comma list of rtt, rtt_block, rtt_fd, read, bw, bw1m, bw_read,
# connrate, connrate_block, conns (default all).  rtt and rtt_block also
# report the p99 of the same runs.  --quick: tiny iteration counts
# (a check of the script, not a measurement).  -o FILE: keep every
# program's output line there.
#
# Prints, per metric, the median over rounds for each implementation, the
# median (min-max) of the within-round ratios rapt/raw and rapt/libfabric,
# and each target with PASS or MISS (judged on the median ratio).
# Exit: 0 if every program ran (whatever the verdicts), 1 otherwise.

set -u

here=$(cd "$(dirname "$0")" && pwd)
builddir=${abs_top_builddir:-}
rounds=5
metrics=rtt,rtt_block,rtt_fd,read,bw,bw1m,bw_read,connrate,connrate_block,conns
outfile=
quick=0
idle=1

while [ $# -gt 0 ]; do
	case $1 in
	-b) builddir=$2; shift ;;
	-r) rounds=$2; shift ;;
	-m) metrics=$2; shift ;;
	-o) outfile=$2; shift ;;
	--quick) quick=1 ;;
	--no-idle) idle=0 ;;
	-h|--help) sed -n '3,23p' "$0"; exit 0 ;;
	*) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

if [ -z "$builddir" ]; then
	for d in . "$here/.." "$here/../build"; do
		if [ -x "$d/tools/rapt_perf" ]; then
			builddir=$d
			break
		fi
	done
fi
if [ -z "$builddir" ] || [ ! -x "$builddir/tools/rapt_perf" ]; then
	echo "compare.sh: no tools/rapt_perf; give the build folder with -b" >&2
	exit 2
fi
B=$(cd "$builddir" && pwd)

RAPT_PROVIDER_PATH=$B/.libs:$B/providers/tcp/.libs${RAPT_PROVIDER_PATH:+:$RAPT_PROVIDER_PATH}
RAPT_CONF=${RAPT_CONF:-/dev/null}
export RAPT_PROVIDER_PATH RAPT_CONF

# 10,000 connections need about as many descriptors on each side.
ulimit -n 30000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
nofile=$(ulimit -n)

PERF="$B/tools/rapt_perf -p tcp:lo --json --no-progress"
OFI=$B/bench/ofi
RAW=$B/bench/raw
have_ofi=1
[ -x "$OFI/ofi_pingpong" ] || have_ofi=0

# Iteration counts (--quick: just enough to exercise everything).
if [ $quick = 1 ]; then
	N_PP=500 N_BW=256 N_STREAM=64 N_CONN=50 N_MANY=200 W_PP=50 W_BW=16
else
	N_PP=100000 N_BW=16384 N_STREAM=1024 N_CONN=1000 N_MANY=10000
	W_PP=1000 W_BW=256
fi
[ "$nofile" -lt $((N_MANY + 512)) ] && N_MANY=$((nofile - 512))

work=$(mktemp -d "${TMPDIR:-/tmp}/compare.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
results=$work/results		# round metric impl value
: >"$results"
failures=0

log() {
	[ -n "$outfile" ] && printf '%s\n' "$*" >>"$outfile"
	return 0
}

# ------------------------------------------------------------------
# Quiet gate: wait (at most 60 s) for a second with >= 85 % idle CPU.
# ------------------------------------------------------------------
cpu_idle_pct() {
	set -- $(sed -n 's/^cpu  //p' /proc/stat)
	t0=$(( $1 + $2 + $3 + $4 + $5 + $6 + $7 + ${8:-0} ))
	i0=$(( $4 + $5 ))
	sleep 1
	set -- $(sed -n 's/^cpu  //p' /proc/stat)
	t1=$(( $1 + $2 + $3 + $4 + $5 + $6 + $7 + ${8:-0} ))
	i1=$(( $4 + $5 ))
	[ $t1 -gt $t0 ] || { echo 100; return; }
	echo $(( (i1 - i0) * 100 / (t1 - t0) ))
}

wait_idle() {
	[ $idle = 1 ] || return 0
	[ -r /proc/stat ] || return 0
	waited=0
	while [ $waited -lt 60 ]; do
		pct=$(cpu_idle_pct)
		[ "$pct" -ge 85 ] && return 0
		waited=$((waited + 1))
	done
	echo "  (round $round, $1: no quiet second in 60 s; last $pct % idle)"
	log "# round $round $1: not quiet ($pct % idle)"
	return 0
}

# ------------------------------------------------------------------
# Running one program and reading its line
# ------------------------------------------------------------------

# The value of KEY in a "k=v k=v" line or a flat JSON object.
field() {
	printf '%s\n' "$1" | awk -v key="$2" '{
		gsub(/[{}]/, "")
		n = split($0, w, /[ ,]/)
		for (i = 1; i <= n; i++) {
			p = w[i]
			gsub(/"/, "", p)
			if (index(p, "=") == 0)
				sub(/:/, "=", p)
			if (substr(p, 1, length(key) + 1) == key "=") {
				print substr(p, length(key) + 2)
				exit
			}
		}
	}'
}

# run METRIC IMPL KEY[,KEY2] [--also METRIC2=KEY3] COMMAND...: record the
# value (the larger of two keys), and KEY3 of the same line as METRIC2; or
# count a failure.
run() {
	metric=$1 impl=$2 keys=$3 also=
	shift 3
	if [ "$1" = --also ]; then
		also=$2
		shift 2
	fi
	out=$(timeout 600 "$@" 2>"$work/err")
	rc=$?
	line=$(printf '%s\n' "$out" | grep -E 'status=|"status":' | tail -1)
	log "round=$round metric=$metric impl=$impl rc=$rc $line"
	status=$(field "$line" status)
	if [ $rc -ne 0 ] || [ "$status" != ok ]; then
		echo "  FAILED ($metric, $impl): $*" >&2
		sed 's/^/    /' "$work/err" | tail -5 >&2
		failures=$((failures + 1))
		return
	fi
	value=
	for k in $(echo "$keys" | tr ',' ' '); do
		v=$(field "$line" "$k")
		[ -z "$v" ] && continue
		value=$(awk -v a="${value:-$v}" -v b="$v" \
			'BEGIN { print (a + 0 > b + 0) ? a : b }')
	done
	[ -n "$value" ] && echo "$round $metric $impl $value" >>"$results"
	if [ -n "$also" ]; then
		v=$(field "$line" "${also#*=}")
		[ -n "$v" ] && echo "$round ${also%%=*} $impl $v" >>"$results"
	fi
	return 0
}

# ------------------------------------------------------------------
# The metrics: rapt, then libfabric, then raw TCP
# ------------------------------------------------------------------
m_rtt() {
	P99="--also rtt_p99=rtt_p99_us"
	run rtt rapt rtt_med_us $P99 $PERF -t lat_send -s 8 -n $N_PP -W $W_PP
	[ $have_ofi = 1 ] && run rtt ofi rtt_med_us $P99 \
		"$OFI/ofi_pingpong" tcp -s 8 -n $N_PP -W $W_PP
	run rtt raw rtt_med_us $P99 "$RAW/raw_pingpong" -s 8 -n $N_PP \
		-W $W_PP
}

m_rtt_block() {
	P99="--also rtt_block_p99=rtt_p99_us"
	run rtt_block rapt rtt_med_us $P99 $PERF -t lat_send -s 8 -n $N_PP \
		-W $W_PP -m block
	[ $have_ofi = 1 ] && run rtt_block ofi rtt_med_us $P99 \
		"$OFI/ofi_pingpong" tcp -s 8 -n $N_PP -W $W_PP -m block
	run rtt_block raw rtt_med_us $P99 "$RAW/raw_pingpong" -s 8 \
		-n $N_PP -W $W_PP -m block
}

# The EVD fd (rapt_evd_arm + poll()) against blocking raw TCP; libfabric
# has no such mode in its peer program.
m_rtt_fd() {
	run rtt_fd rapt rtt_med_us $PERF -t lat_send -s 8 -n $N_PP \
		-W $W_PP -m fd
	run rtt_fd raw rtt_med_us "$RAW/raw_pingpong" -s 8 -n $N_PP \
		-W $W_PP -m block
}

m_read() {
	run read rapt rtt_med_us $PERF -t lat_read -s 8 -n $N_PP -W $W_PP
	[ $have_ofi = 1 ] && run read ofi rtt_med_us \
		"$OFI/ofi_rma_read_lat" tcp -s 8 -n $N_PP -W $W_PP
	run read raw rtt_med_us "$RAW/raw_pingpong" -s 8 -n $N_PP -W $W_PP
}

m_bw() {
	run bw rapt MBps $PERF -t bw_write -s 64k -w 16 -n $N_BW -W $W_BW
	[ $have_ofi = 1 ] && run bw ofi MBps \
		"$OFI/ofi_rma_bw" tcp -s 64k -w 16 -n $N_BW -W $W_BW
	run bw raw MBps "$RAW/raw_stream" -s 1m -n $N_STREAM
}

# 1 MiB messages, 16 outstanding, against the same raw stream.
m_bw1m() {
	run bw1m rapt MBps $PERF -t bw_write -s 1m -w 16 -n $N_STREAM -W 16
	[ $have_ofi = 1 ] && run bw1m ofi MBps \
		"$OFI/ofi_rma_bw" tcp -s 1m -w 16 -n $N_STREAM -W 16
	run bw1m raw MBps "$RAW/raw_stream" -s 1m -n $N_STREAM
}

# RDMA read bandwidth, against rapt's own write bandwidth in the round.
m_bw_read() {
	run bw_read rapt MBps $PERF -t bw_read -s 64k -w 16 -n $N_BW -W $W_BW
	run bw_read_w rapt MBps $PERF -t bw_write -s 64k -w 16 -n $N_BW \
		-W $W_BW
}

m_connrate() {
	run connrate rapt conn_per_s $PERF -t connrate -n $N_CONN
	[ $have_ofi = 1 ] && run connrate ofi conn_per_s \
		"$OFI/ofi_connrate" tcp -n $N_CONN
	run connrate raw conn_per_s "$RAW/raw_connrate" -n $N_CONN -m poll
	# The same bytes as an iWARP connection (request, reply, RTR): the
	# floor for any implementation of the exchange (informational).
	run connrate_x raw conn_per_s "$RAW/raw_connrate" -n $N_CONN -m poll -x
}

m_connrate_block() {
	run connrate_block rapt conn_per_s $PERF -t connrate -n $N_CONN \
		-m block
	[ $have_ofi = 1 ] && run connrate_block ofi conn_per_s \
		"$OFI/ofi_connrate" tcp -n $N_CONN -m block
	run connrate_block raw conn_per_s "$RAW/raw_connrate" -n $N_CONN \
		-m block
}

m_conns() {
	run conns rapt per_conn_B,srv_per_conn_B $PERF -t conns -n $N_MANY
	[ $have_ofi = 1 ] && run conns ofi per_conn_B,srv_per_conn_B \
		"$OFI/ofi_manyconn" tcp -n $N_MANY -w 64 -D
}

# ------------------------------------------------------------------
# Summary
# ------------------------------------------------------------------

# Median (min-max) of the numbers on stdin; "-" if none.
med() {
	sort -g | awk '
	function f(x) { return x >= 1000 ? sprintf("%.0f", x) : \
			       sprintf("%.3g", x) }
	{ v[NR] = $1 }
	END {
		if (!NR) { print "-"; exit }
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		if (NR == 1)
			print f(m)
		else
			printf "%s (%s-%s, n=%d)\n", f(m), f(v[1]), f(v[NR]), NR
	}'
}

median_of() {
	awk -v m="$1" -v i="$2" '$2 == m && $3 == i { print $4 }' "$results" |
		med
}

# Within-round ratios metric: rapt / @2 (rounds where both ran).
ratios_of() {
	awk -v m="$1" -v d="$2" -v n="${3:-$1}" '
		$2 == m && $3 == "rapt" { r[$1] = $4 }
		$2 == n && $3 == d { x[$1] = $4 }
		END { for (k in r) if ((k in x) && x[k] > 0)
			printf "%.4f\n", r[k] / x[k] }' "$results" | med
}

# verdict VALUE OP LIMIT: PASS or MISS (or "-" without a value).
verdict() {
	[ "$1" = - ] && { echo -; return; }
	awk -v v="${1%% *}" -v op="$2" -v l="$3" 'BEGIN {
		ok = (op == "<=") ? v <= l : (op == ">=") ? v >= l : v < l
		print ok ? "PASS" : "MISS" }'
}

target() {
	printf '    %-4s  target %s: %s\n' "$3" "$1" "$2"
}

summary_metric() {
	m=$1 title=$2 unit=$3
	a=$(median_of "$m" rapt) o=$(median_of "$m" ofi) r=$(median_of "$m" raw)
	echo
	echo "$title ($unit)"
	printf '    %-16s %s\n' rapt "$a" libfabric "$o"
	[ "$m" != conns ] &&
		printf '    %-16s %s\n' "raw TCP" "$r" \
		       "rapt/raw" "$(ratios_of "$m" raw)"
	printf '    %-16s %s\n' "rapt/libfabric" "$(ratios_of "$m" ofi)"
	grep -q " ${m}_p99 " "$results" || return 0
	echo "  p99 of the same runs"
	printf '    %-16s %s\n' rapt "$(median_of "${m}_p99" rapt)" \
	       libfabric "$(median_of "${m}_p99" ofi)" \
	       "raw TCP" "$(median_of "${m}_p99" raw)" \
	       "rapt/raw" "$(ratios_of "${m}_p99" raw)" \
	       "rapt/libfabric" "$(ratios_of "${m}_p99" ofi)"
}

summary() {
	echo
	echo "=== medians over $rounds round(s); ratios: median (min-max) of" \
	     "within-round ratios ==="
	for m in $(echo "$metrics" | tr ',' ' '); do
		case $m in
		rtt) summary_metric rtt "8 B send/recv round trip, busy-poll" \
			"us, lower is better"
		     x=$(ratios_of rtt raw)
		     target "RTT median <= 1.1x raw TCP" "rapt/raw $x" \
			"$(verdict "$x" '<=' 1.1)"
		     x=$(ratios_of rtt_p99 raw)
		     target "RTT p99 <= 1.5x raw TCP's p99" "rapt/raw $x" \
			"$(verdict "$x" '<=' 1.5)"
		     x=$(ratios_of rtt_p99 ofi)
		     target "RTT p99 <= libfabric's p99" "rapt/libfabric $x" \
			"$(verdict "$x" '<=' 1.0)" ;;
		rtt_block) summary_metric rtt_block \
			"8 B send/recv round trip, blocking waits" \
			"us, lower is better"
		     x=$(ratios_of rtt_block raw)
		     target "RTT <= 1.15x raw blocking TCP" "rapt/raw $x" \
			"$(verdict "$x" '<=' 1.15)"
		     x=$(ratios_of rtt_block ofi)
		     target "RTT <= 0.95x libfabric" "rapt/libfabric $x" \
			"$(verdict "$x" '<=' 0.95)" ;;
		rtt_fd) summary_metric rtt_fd \
			"8 B send/recv round trip, EVD fd: arm + poll() (raw: blocking)" \
			"us, lower is better"
		     x=$(ratios_of rtt_fd raw)
		     target "RTT <= 1.15x raw blocking TCP" "rapt/raw $x" \
			"$(verdict "$x" '<=' 1.15)" ;;
		read) summary_metric read \
			"8 B RDMA read round trip, busy-poll (raw: TCP ping-pong)" \
			"us, lower is better"
		      x=$(ratios_of read raw)
		      target "RDMA read RTT <= 1.2x raw TCP RTT" "rapt/raw $x" \
			"$(verdict "$x" '<=' 1.2)" ;;
		bw) summary_metric bw \
			"64 KiB RDMA write, 16 outstanding (raw: TCP stream, 1 MiB writes)" \
			"MB/s, higher is better"
		    x=$(ratios_of bw ofi)
		    target ">= libfabric" "rapt/libfabric $x" \
			"$(verdict "$x" '>=' 1.0)"
		    x=$(ratios_of bw raw)
		    target ">= 0.95x raw TCP stream" "rapt/raw $x" \
			"$(verdict "$x" '>=' 0.95)" ;;
		bw1m) summary_metric bw1m \
			"1 MiB RDMA write, 16 outstanding (raw: TCP stream, 1 MiB writes)" \
			"MB/s, higher is better"
		    x=$(ratios_of bw1m raw)
		    target ">= 0.95x raw TCP stream" "rapt/raw $x" \
			"$(verdict "$x" '>=' 0.95)" ;;
		bw_read) echo
		    echo "64 KiB RDMA read, 16 outstanding, against rapt's write (MB/s)"
		    printf '    %-16s %s\n' "rapt read" \
			"$(median_of bw_read rapt)" "rapt write" \
			"$(median_of bw_read_w rapt)"
		    x=$(ratios_of bw_read rapt bw_read_w)
		    printf '    %-16s %s\n' "read/write" "$x"
		    target "read >= 0.9x write" "read/write $x" \
			"$(verdict "$x" '>=' 0.9)" ;;
		connrate) summary_metric connrate \
			"sequential connection rate, 32 B private data each way (raw: busy-polling)" \
			"conn/s, higher is better"
		    x=$(ratios_of connrate ofi)
		    target ">= 1.2x libfabric" "rapt/libfabric $x" \
			"$(verdict "$x" '>=' 1.2)"
		    x=$(ratios_of connrate raw)
		    target ">= 0.8x busy-polling TCP" "rapt/raw $x" \
			"$(verdict "$x" '>=' 0.8)"
		    echo "  raw TCP exchanging an iWARP connection's bytes (60 + 60 + 20, raw_connrate -x)"
		    printf '    %-16s %s\n' "raw TCP -x" \
			"$(median_of connrate_x raw)" \
			"rapt/raw -x" "$(ratios_of connrate raw connrate_x)" ;;
		connrate_block) summary_metric connrate_block \
			"sequential connection rate, blocking waits (raw: blocking)" \
			"conn/s, higher is better"
		    x=$(ratios_of connrate_block raw)
		    target ">= 0.5x raw blocking TCP" "rapt/raw $x" \
			"$(verdict "$x" '>=' 0.5)" ;;
		conns) summary_metric conns \
			"$N_MANY connections held, memory per connection (larger side)" \
			"bytes of VmRSS, lower is better"
		    x=$(median_of conns rapt)
		    target "$N_MANY connections under 8 KB each" "rapt $x B" \
			"$(verdict "$x" '<' 8192)" ;;
		esac
	done
}

# ------------------------------------------------------------------
# Main
# ------------------------------------------------------------------
if ! "$B/tools/rapt_info" -l 2>/dev/null | grep -qx 'tcp:lo'; then
	echo "compare.sh: tcp:lo is not usable; rapt_info says:" >&2
	"$B/tools/rapt_info" -p tcp:lo >&2
	exit 1
fi

echo "compare.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $rounds round(s), metrics $metrics"
echo "  machine: $(uname -sr), $(nproc) CPU(s)" \
     "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)," \
     "$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
echo "  build: $B"
[ $have_ofi = 1 ] &&
	echo "  libfabric: $(pkg-config --modversion libfabric 2>/dev/null || echo '?')" ||
	echo "  libfabric: not built (configure found no libfabric); ofi columns empty"
[ $quick = 1 ] && echo "  --quick: a check of the script, not a measurement"
log "# compare.sh $(date -u '+%Y-%m-%dT%H:%M:%SZ') build=$B rounds=$rounds"

round=1
while [ $round -le "$rounds" ]; do
	echo "round $round/$rounds"
	for m in $(echo "$metrics" | tr ',' ' '); do
		wait_idle "$m"
		case $m in
		rtt|rtt_block|rtt_fd|read|bw|bw1m|bw_read|connrate|\
		connrate_block|conns) \
			"m_$m" ;;
		*) echo "compare.sh: unknown metric $m" >&2; exit 2 ;;
		esac
	done
	round=$((round + 1))
done

summary
[ -n "$outfile" ] && cat "$results" | sed 's/^/# value /' >>"$outfile"
if [ $failures -gt 0 ]; then
	echo
	echo "compare.sh: $failures run(s) failed (see above)"
	exit 1
fi
exit 0
