# SPDX-License-Identifier: MIT
# A VM_SCRIPT (tests/vm/run-vm.sh): rapt_perf lat_read against ib_read_lat
# on rxe, alternating, READ_ROUNDS rounds (default 8) of 40,000 reads,
# pinned as the perf pairs are; with each client's median, the kernel's
# counters over its run: softirqs by type (/proc/softirqs), interrupts and
# context switches (/proc/stat, /proc/interrupts) and each ksoftirqd's CPU
# ticks and switches (docs/performance.md, "rxe's read pair").  Run as root
# from the source tree, alone or after other suites:
#
#   SUITES="script" VM_SCRIPT=$PWD/tests/vm/scripts/read-counters.sh \
#       tests/vm/run-vm.sh build-rel
#   SUITES="ib script" VM_SCRIPT=... (the state CI's rxe pairs run in)
#
# The VM does not see the host's environment: set READ_ROUNDS in a copy
# of this file (sed) and run that copy.
#
# It prints one "RAPTVM INFO M <R|P><round> <median us> <counter>=<delta>"
# line per client (R: rapt_perf, P: ib_read_lat).
#
# shellcheck shell=sh
READ_ROUNDS=8
perf_on_rxe

# rc_snap: the counters, one "name value [value]" per line
rc_snap() {
	local p
	awk 'NR > 1 { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i
		printf "%s %d\n", $1, s }' /proc/softirqs
	awk '/^(ctxt|intr)/ { print $1, $2 }' /proc/stat
	awk '$1 ~ /^(LOC|RES|CAL|TLB):$/ { print $1, $2 + $3 }' /proc/interrupts
	for p in /proc/[0-9]*; do
		case "$(cat $p/comm 2>/dev/null)" in
		ksoftirqd*) echo "$(cat $p/comm) $(awk '{ print $14 + $15 }' $p/stat) $(awk '/^voluntary_ctxt/ { print $2 }' $p/status)" ;;
		esac
	done
}

# rc_one TAG SERVER CLIENT PORTOPT: one pinned pair of processes
rc_one() {
	local spid m
	PERF_PORT=$((PERF_PORT + 1))
	taskset -c 1 $2 $4 $PERF_PORT > /tmp/rc.srv 2>&1 &
	spid=$!
	wait_for /tmp/rc.srv $PERF_READY:$PERF_PORT $spid
	rc_snap > /tmp/rc.a
	taskset -c 0 $3 $4 $PERF_PORT > /tmp/rc.cli 2>&1
	rc_snap > /tmp/rc.b
	wait $spid
	if grep -q rtt_med /tmp/rc.cli; then
		m=$(rapt_field /tmp/rc.cli rtt_med_us)
	else
		m=$(pt_col /tmp/rc.cli 5)
	fi
	info "M $1 $m $(awk 'NR == FNR { a[$1] = $2; b[$1] = $3; next }
		{ d = $2 - a[$1]; if (d) printf "%s=%d%s ", $1, d,
			($3 != "" ? "/" ($3 - b[$1]) : "") }' /tmp/rc.a /tmp/rc.b)"
}

T0=$(now)
r=1
while [ $r -le $READ_ROUNDS ]; do
	rc_one R$r "$PERF_RS" "$PERF_RC -t lat_read -s 8 -n 40000" -P
	rc_one P$r "ib_read_lat -R $PERF_PT_S -s 8 -n 40000" \
		"ib_read_lat -R $PERF_PT_C -s 8 -n 40000" -p
	r=$((r + 1))
done
result read_counters 0 "$T0"
