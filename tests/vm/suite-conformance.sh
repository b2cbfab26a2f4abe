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
#   psp_any_port_iwarp  PSPs on any service id on iwarp:siw0 while plain
#                       TCP listeners hold half of a narrowed ephemeral
#                       port range: none may fail (EADDRINUSE)
#
# raptvm.conf_args=... adds arguments (--run AREA).
# A run passes when no test failed; its counts and every skip, with its
# reason, are printed (conf_1host, conf_2host: tests/vm/lib-suites.sh).
#
# shellcheck shell=sh

[ -n "$CONF_CONFIGS" ] || CONF_CONFIGS="1host 2host srv_tcp tcp_srv"

psp_any_port() {
	local t0 rc=0 range f=/tmp/psp_any_port.log
	t0=$(now)
	range=$(cat /proc/sys/net/ipv4/ip_local_port_range)
	echo "40000 40007" > /proc/sys/net/ipv4/ip_local_port_range
	timeout 60 psp_any_port -i iwarp:siw0 -n 32 > $f 2>&1 || rc=1
	echo "$range" > /proc/sys/net/ipv4/ip_local_port_range
	info "psp_any_port_iwarp: $(tail -n 1 $f)"
	[ $rc = 0 ] && [ "$VERBOSE" != 1 ] || show psp_any_port_iwarp $f
	result psp_any_port_iwarp $rc "$t0"
}

CONF_BLACKHOLE=$BLACKHOLE_ADDR
rapt_info > /tmp/rapt_info.log 2>&1
show rapt_info /tmp/rapt_info.log
psp_any_port
for cfg in $CONF_CONFIGS; do
	case $cfg in
	1host) conf_1host conf_iwarp_1host iwarp:siw0 ;;
	2host) conf_2host conf_iwarp_2host iwarp:siw1 iwarp:siw0 ;;
	srv_tcp) conf_2host conf_iwarp_srv_tcp iwarp:siw1 tcp:veth0 ;;
	tcp_srv) conf_2host conf_tcp_srv_iwarp tcp:veth1 iwarp:siw0 ;;
	*) info "no conformance configuration $cfg" ;;
	esac
done
