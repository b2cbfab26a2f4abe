# SPDX-License-Identifier: MIT
# A VM_SCRIPT (tests/vm/run-vm.sh): rapt_perf lat_send against
# ib_send_lat on siw and on rxe, two rounds each of 5,000 round trips,
# pinned as the perf pairs are, each client's run under perf stat -a: the
# system calls, context switches, migrations and softirqs of the whole VM
# (docs/performance.md, "The send pairs' system calls").  Run as root
# from the source tree:
#
#   SUITES=script VM_EXTRA_BINS=/usr/bin/perf \
#       VM_SCRIPT=$PWD/tests/vm/scripts/send-syscalls.sh \
#       tests/vm/run-vm.sh build-rel
#
# Lines: "RAPTVM INFO STAT <dev>_<prog><round> ... raw_syscalls:sys_enter=N
# context-switches=N ... t=SECONDS [perftest's typical latency]".
# For the A/B of the engine passes in that section, build with
# VB_DRIVE_MASK and VB_LEASE_MASK (providers/verbs/vb_cq.c) read from an
# environment variable and pass it through PERF_RS and PERF_RC.
#
# shellcheck shell=sh
N=5000

# st_one NAME "SERVER" "CLIENT" PORTOPT: one run, the client under perf stat
st_one() {
	local spid
	PERF_PORT=$((PERF_PORT + 1))
	perf_quiet $1
	timeout 120 $PERF_IN $PERF_PIN_S $2 $4 $PERF_PORT > /tmp/$1.srv 2>&1 &
	spid=$!
	wait_for /tmp/$1.srv $PERF_READY:$PERF_PORT $spid
	perf stat -a -e raw_syscalls:sys_enter,context-switches \
		-e cpu-migrations,irq:softirq_entry -o /tmp/$1.stat \
		$PERF_PIN_C $3 $4 $PERF_PORT > /tmp/$1.out 2>&1
	wait $spid
	info "STAT $1 $(grep -o '"rtt_med_us":[0-9.]*' /tmp/$1.out)" \
		"$(awk '$1 ~ /^[0-9,]+$/ && NF >= 2 { printf "%s=%s ", $2, $1 }
			/seconds time elapsed/ { printf "t=%s", $1 }' /tmp/$1.stat)" \
		"$(pt_col /tmp/$1.out 5)"
}

for tr in siw rxe; do
	perf_on_$tr
	for r in 1 2; do
		st_one ${tr}_rapt$r "$PERF_RS -t lat_send -s 8 -n $N" \
			"$PERF_RC -t lat_send -s 8 -n $N" -P
		st_one ${tr}_pt$r "ib_send_lat -R $PERF_PT_S -s 8 -n $N" \
			"ib_send_lat -R $PERF_PT_C -s 8 -n $N" -p
	done
done
