# SPDX-License-Identifier: MIT
# Sourced by the tests that run between two network namespaces joined by
# a veth pair (two hosts on one machine; they need root).

# netns_why: nothing if network namespaces can be made here, else why not.
netns_why()
{
	if [ "$(id -u)" -ne 0 ]; then
		echo "needs root for network namespaces"
	elif ! ip netns list >/dev/null 2>&1; then
		echo "'ip netns' does not work here"
	fi
}

# netns_pair A B IF ADDR_A ADDR_B: make namespaces A and B, joined by a
# veth pair named IF at both ends with ADDR_A and ADDR_B (CIDR), their lo
# and IF up.  1 when the namespaces cannot be made (a reason to skip),
# 2 when the pair cannot be set up (a failure).  The caller deletes them.
netns_pair()
{
	ip netns add "$1" && ip netns add "$2" || return 1
	ip link add "$3" netns "$1" type veth peer name "$3" netns "$2" &&
	ip -n "$1" addr add "$4" dev "$3" &&
	ip -n "$2" addr add "$5" dev "$3" &&
	ip -n "$1" link set lo up && ip -n "$2" link set lo up &&
	ip -n "$1" link set "$3" up && ip -n "$2" link set "$3" up || return 2
}
