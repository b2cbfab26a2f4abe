# SPDX-License-Identifier: MIT
# A VM_SCRIPT (tests/vm/run-vm.sh): the context switches of every thread
# of both dapltest processes during -T T SR 256, uDAPL and rapt, on rxe
# and on siw (docs/dat-compat.md, "Spurious wakeups").  A wakeup that
# ends inside the kernel (epoll_wait() or poll() finding nothing after
# all) is invisible to strace; /proc/<pid>/task/<tid>/status counts it.
# Also prints the engine's epoll set as /proc/<pid>/fdinfo has it (events
# 19 = EPOLLIN|EPOLLERR|EPOLLHUP; 18 = interest 0).  Run as root from the
# source tree:
#
#   SUITES=script VM_WITH=dat VM_EXTRA_BINS="/usr/bin/pgrep /usr/bin/join" \
#       VM_SCRIPT=$PWD/tests/vm/scripts/dat-switches.sh \
#       tests/vm/run-vm.sh build-rel
#
# Lines: "RAPTVM INFO CS <tr>_<prov> <pid>/<tid> <comm> vol/s N nonvol/s N
# cpu N%" (voluntary: sleeps; nonvoluntary: preemptions).
#
# shellcheck shell=sh
DAT_DEFINE_ONLY=1
. /opt/rapt/vm/suite-dat.sh

# sw_snap PID...: per thread "pid/tid comm voluntary nonvoluntary ticks",
# then the CPU counters of /proc/stat
sw_snap() {
	local pp t v n k
	for pp in "$@"; do
		for t in /proc/$pp/task/*; do
			[ -r $t/status ] || continue
			v=$(awk '/^voluntary_ctxt/ { print $2 }' $t/status)
			n=$(awk '/^nonvoluntary_ctxt/ { print $2 }' $t/status)
			k=$(awk '{ print $14 + $15 }' $t/stat)
			echo "$pp/${t##*/} $(cat $t/comm) $v $n $k"
		done
	done
	awk '$1 == "cpu" { print "cpu", $2 + $3 + $4, $5, $7 + $8 }' /proc/stat
}

# sw_run TAG SIA CIA ADDR READY [SERVER-PREFIX]
sw_run() {
	local tag=$1 sia=$2 cia=$3 addr=$4 ready=$5 in=$6 cpid spids e
	dat_server sw $tag "$sia" $addr $ready "$in"
	dapltest -T T $DAT_C -D "$cia" -i 100000 -t 1 -w 1 \
		client SR 256 server SR 256 > /tmp/sw_t.log 2>&1 &
	cpid=$!
	sleep 3
	spids=$(pgrep -f "dapltest -T S -D $sia")
	sw_snap $cpid $spids | sort > /tmp/sw.a
	sleep 4
	sw_snap $cpid $spids | sort > /tmp/sw.b
	kill -0 $cpid 2>/dev/null ||
		info "CS $tag: the client ended early: $(tail -n 1 /tmp/sw_t.log)"
	join /tmp/sw.a /tmp/sw.b | awk -v tag=$tag '
		$1 == "cpu" { printf "RAPTVM INFO CS %s cpu busy %d idle %d irq %d (ticks in 4 s)\n", tag, $5 - $2, $6 - $3, $7 - $4; next }
		($7 - $3) + ($8 - $4) > 0 { printf "RAPTVM INFO CS %s %s %s vol/s %d nonvol/s %d cpu %d%%\n", tag, $1, $2, ($7 - $3) / 4, ($8 - $4) / 4, ($9 - $5) / 4 }'
	for e in /proc/$cpid/fd/*; do
		[ "$(readlink $e)" = "anon_inode:[eventpoll]" ] || continue
		info "CS $tag client epoll fd ${e##*/}: $(awk '$1 == "tfd:" { printf "%s:%s ", $2, $4 }' /proc/$cpid/fdinfo/${e##*/})"
	done
	kill $cpid 2>/dev/null
	wait $cpid 2>/dev/null
	timeout 30 dapltest -T Q $DAT_C -D "$cia" > /dev/null 2>&1
	reap $DAT_SPID 30 > /dev/null
}

if dat_setup; then
	for p in udapl rapt; do
		eval "sia=\$DAT_ib_${p}_S cia=\$DAT_ib_${p}_C"
		sw_run ib_$p "$sia" "$cia" $RXE_WIRE_PEER_ADDR cmport ""
		eval "sia=\$DAT_iwarp_${p}_S cia=\$DAT_iwarp_${p}_C"
		sw_run iwarp_$p "$sia" "$cia" $SIW_ADDR peerport "$IN_PEER"
	done
else
	result dat_switches 1 "$(now)"
fi
