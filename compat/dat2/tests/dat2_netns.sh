#!/bin/sh
# SPDX-License-Identifier: MIT
# uDAPL's own test programs between two hosts: each server in one network
# namespace, its client in another, joined by a veth pair (rdat0 at both
# ends), over rapt's tcp provider through librapt-dat2.so (dat2_lib.sh):
# dtest's transfers, dtestcm's 1000 connections, dtestsrq, and dapltest's
# -T T and -T P clients against a -T S server.  The one-process cases
# (dat2_api_test, dapltest -T L and -T F) are dat2.sh's, on loopback.
# Skips (77) without root or working network namespaces, and as dat2.sh.
. "$(dirname "$0")/../../../tests/netns_lib.sh"
why=$(netns_why)
[ -z "$why" ] || { echo "SKIP: $why"; exit 77; }
ns_s=rdat-s$$
ns_c=rdat-c$$
ns_del() {
	ip netns del "$ns_s" 2>/dev/null
	ip netns del "$ns_c" 2>/dev/null
}
# Never leave the namespaces behind, even when make check is killed.
trap ns_del EXIT
trap 'exit 1' INT TERM HUP
netns_pair "$ns_s" "$ns_c" rdat0 10.215.0.1/24 10.215.0.2/24
case $? in
1) echo "SKIP: cannot create network namespaces"; exit 77 ;;
2) echo "FAIL: cannot set up the veth pair"; exit 1 ;;
esac
IA=rapt-tcp:rdat0
SADDR=10.215.0.1
SIN="ip netns exec $ns_s"
CIN="ip netns exec $ns_c"
DAT2_ON_EXIT=ns_del
. "$(dirname "$0")/dat2_lib.sh"
echo "server in network namespace $ns_s ($SADDR), clients in $ns_c"

dat2_dtest
dat2_dtestcm
dat2_dtestsrq
dat2_dapltest

# Every byte went over the veth: the server's end carried the traffic.
rx=$(ip netns exec "$ns_s" cat /sys/class/net/rdat0/statistics/rx_bytes)
if [ "${rx:-0}" -lt 10000000 ]; then
	row "traffic over the veth pair" FAIL "only ${rx:-0} bytes came in"
else
	row "traffic over the veth pair" PASS "$rx bytes came in"
fi
dat2_summary
