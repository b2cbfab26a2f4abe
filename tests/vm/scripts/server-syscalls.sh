# SPDX-License-Identifier: MIT
# A VM_SCRIPT (tests/vm/run-vm.sh): the servers of the read pair under
# `perf stat` (system calls, context switches, CPU time) over 20,000
# reads, rapt_perf's server and perftest's, twice each, on siw and on
# rxe (docs/performance.md, "The read pair and the server's polling").
# Run as root from the source tree:
#
#   SUITES=script VM_SCRIPT=$PWD/tests/vm/scripts/server-syscalls.sh \
#       VM_EXTRA_BINS=/usr/bin/perf tests/vm/run-vm.sh build-rel
#
# Each run gives an INFO line with the client's median and the server's
# perf stat counts.
#
# shellcheck shell=sh
PS="perf stat -e raw_syscalls:sys_enter,context-switches,task-clock -x,"
N="-s 8 -n 20000"
for dev in siw rxe; do
	perf_on_$dev
	for r in 1 2; do
		perf_run ss_${dev}_rapt_$r \
			"$PERF_PIN_S $PS -o /tmp/st.rapt $PERF_RS -t lat_read $N" \
			"$PERF_PIN_C $PERF_RC -t lat_read $N" /tmp/ss.out -P
		info "${dev}_rapt_$r client $(rapt_field /tmp/ss.out rtt_med_us) us; server: $(tr '\n' ' ' < /tmp/st.rapt)"
		perf_run ss_${dev}_pt_$r \
			"$PERF_PIN_S $PS -o /tmp/st.pt ib_read_lat -R $PERF_PT_S $N" \
			"$PERF_PIN_C ib_read_lat -R $PERF_PT_C $N" /tmp/ss.out -p
		info "${dev}_pt_$r client $(pt_col /tmp/ss.out 5) us; server: $(tr '\n' ' ' < /tmp/st.pt)"
	done
done
