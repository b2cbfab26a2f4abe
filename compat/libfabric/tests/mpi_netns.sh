#!/bin/sh
# SPDX-License-Identifier: MIT
# Open MPI over "rapt;ofi_rxm" across two network namespaces joined by a
# veth pair: rank 0 (and mpirun) in one, rank 1 in the other, launched
# there by an rsh agent that is "ip netns exec".  Each rank has only lo
# and the veth end (tcp:rfi0), which the provider offers first.
# Skips (77) when the MPI prerequisites are missing (mpi_lib.sh), or
# without root or working network namespaces.
. "$(dirname "$0")/mpi_lib.sh"
mpi_prereq
. "$(dirname "$0")/../../../tests/netns_lib.sh"
why=$(netns_why)
[ -z "$why" ] || { echo "SKIP: $why"; exit 77; }
ns_a=raptfi-a$$
ns_b=raptfi-b$$
tmp=$(mktemp -d)
# Never leave the namespaces behind, even when make check is killed.
cleanup()
{
	ip netns del "$ns_a" 2>/dev/null
	ip netns del "$ns_b" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
netns_pair "$ns_a" "$ns_b" rfi0 10.214.0.1/24 10.214.0.2/24
case $? in
1) echo "SKIP: cannot create network namespaces"; exit 77 ;;
2) echo "FAIL: cannot set up the veth pair"; exit 1 ;;
esac
# mpirun starts its daemon on the "remote host" 10.214.0.2 through this
# agent; the marker proves rank 1 ran in the other namespace.
cat >"$tmp/agent" <<AGENT
#!/bin/sh
[ "\$1" = 10.214.0.2 ] || { echo "agent: unknown host \$1" >&2; exit 1; }
shift
touch "$tmp/remote-launched"
exec ip netns exec $ns_b sh -c "\$*"
AGENT
chmod +x "$tmp/agent"
ip netns exec "$ns_a" sh -c '
	. "$0"
	mpi_root=$1; out=$2; agent=$3; prog=$4
	mpi_run "$out" --host 10.214.0.1:1,10.214.0.2:1 \
		--mca plm_rsh_agent "$agent" \
		--mca oob_tcp_if_include 10.214.0.0/24 "$prog"' \
	"$(dirname "$0")/mpi_lib.sh" "$mpi_root" "$tmp/out" "$tmp/agent" \
	"$mpi_prog"
rc=$?
if [ ! -f "$tmp/remote-launched" ]; then
	cat "$tmp/out"
	echo "FAIL: rank 1 was not launched in the second namespace"
	exit 1
fi
mpi_verdict "$tmp/out" $rc tcp:rfi0
