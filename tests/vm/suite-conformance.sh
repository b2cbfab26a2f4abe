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
# raptvm.conf_args=... adds arguments (--run AREA).
# A run passes when no test failed; its counts and every skip, with its
# reason, are printed (conf_1host, conf_2host: tests/vm/lib-suites.sh).
#
# shellcheck shell=sh

[ -n "$CONF_CONFIGS" ] || CONF_CONFIGS="1host 2host srv_tcp tcp_srv"
CONF_BLACKHOLE=$BLACKHOLE_ADDR
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
