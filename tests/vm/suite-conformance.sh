# SPDX-License-Identifier: MIT
# VM suite "conformance" (sourced by tests/vm/init.sh): rapt-conformance
# on the iwarp provider over kernel siw.
#
#   conf_iwarp_1host    both roles in one process on iwarp:siw0 (the siw
#                       device of veth0's address, not 127.0.0.1)
#   conf_iwarp_2host    --server in netns peer on iwarp:siw1, --client in
#                       netns init on iwarp:siw0: across the veth pair
#   conf_iwarp_srv_tcp  --server on iwarp:siw1, --client on tcp:veth0
#   conf_tcp_srv_iwarp  --server on tcp:veth1, --client on iwarp:siw0:
#                       rapt's two iWARP implementations certify each
#                       other on the wire
#
# A run passes when no test failed; its counts and every skip, with its
# reason, are printed.  raptvm.conf_args=... adds arguments (--run AREA).
#
# busybox ash: "local" exists; commands in variables are split on purpose.
# shellcheck shell=sh disable=SC3043,SC2086

CONF_ARGS=$(cmdline_arg conf_args)
# raptvm.conf_env=VAR=VALUE,...: for the runs (RAPT_LOG_LEVEL=debug ...)
for kv in $(cmdline_arg conf_env); do
	export "$kv"
done
# raptvm.conf_configs=1host,2host,srv_tcp,tcp_srv: which runs (all)
CONF_CONFIGS=$(cmdline_arg conf_configs)
[ -n "$CONF_CONFIGS" ] || CONF_CONFIGS="1host 2host srv_tcp tcp_srv"
CONF_TEST_TIMEOUT=60
CONF_COMMON="--unreachable-addr $UNREACHABLE_ADDR --blackhole-addr $BLACKHOLE_ADDR --timeout-scale 4 --test-timeout $CONF_TEST_TIMEOUT"
CONF_PORT=47391

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
	timeout 1800 rapt-conformance -p $2 $CONF_COMMON --xml /tmp/$name.xml \
		$CONF_ARGS > $log 2>&1 || rc=1
	conf_report $name $log $rc "$t0"
}

# conf_2host NAME SERVER_IA CLIENT_IA: the server in netns peer
conf_2host() {
	local name=$1 slog=/tmp/$1.server.log log=/tmp/$1.log t0 spid rc=0
	t0=$(now)
	CONF_PORT=$((CONF_PORT + 1))
	dmesg -c > /dev/null
	# -v: the server names each passive role, so a hung one is known;
	# its own watchdog ends a passive role that outlives the client's.
	timeout 1800 $IN_PEER rapt-conformance --server --once -v -p $2 \
		--port $CONF_PORT --test-timeout $CONF_TEST_TIMEOUT \
		> $slog 2>&1 &
	spid=$!
	wait_for $slog "control port" $spid
	if [ "$VERBOSE" = 1 ]; then
		# live, for a run that may not come back (a kernel bug)
		timeout 1800 rapt-conformance --client $SIW_ADDR \
			--port $CONF_PORT -p $3 $CONF_COMMON -v $CONF_ARGS 2>&1 |
			tee $log | sed "s/^/    [$name live] /"
		grep -q '^[0-9]* passed, 0 failed' $log || rc=1
	else
		timeout 1800 rapt-conformance --client $SIW_ADDR \
			--port $CONF_PORT -p $3 $CONF_COMMON \
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

rapt_info > /tmp/rapt_info.log 2>&1
show rapt_info /tmp/rapt_info.log
for cfg in $CONF_CONFIGS; do
	case $cfg in
	1host) conf_1host conf_iwarp_1host iwarp:siw0 ;;
	2host) conf_2host conf_iwarp_2host iwarp:siw1 iwarp:siw0 ;;
	srv_tcp) conf_2host conf_iwarp_srv_tcp iwarp:siw1 tcp:veth0 ;;
	tcp_srv) conf_2host conf_tcp_srv_iwarp tcp:veth1 iwarp:siw0 ;;
	*) info "no conformance configuration $cfg" ;;
	esac
done
