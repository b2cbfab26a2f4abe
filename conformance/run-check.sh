#!/bin/sh
# SPDX-License-Identifier: MIT
#
# make check: run rapt-conformance against the providers built here.
#
#   test:loop   everything advertised
#   test:ibsim  IB-like private-data limits, no disconnect private data,
#               restricted EVD stream merging
#   tcp         loopback, then two hosts in network namespaces (as root,
#               when the tcp provider has been built)
#
# The test provider's fault injection lives at fixed addresses (see
# tests/provider/test_prov.h).  The tcp runs send nothing outside the
# machine: as root they run in network namespaces of their own (loopback
# in a fresh one, two hosts in a veth pair), where the silent-peer tests
# may cut links with nft (--netcut) and the two-host run builds its own
# unreachable and black-hole addresses; otherwise those tests are skipped
# with the reason.
#
# Run from the top build directory (automake's harness does).  Each run
# writes conformance/rc-<ia>.xml and conformance/rc-<ia>.log.  Exit
# status: 0 if every run passed, 1 if one failed, 77 if none could run.

prog=${RAPT_CONFORMANCE:-./conformance/rapt-conformance}
out=conformance
fail=0
ran=0
skipped=0

if ! test -x "$prog"; then
	echo "run-check: $prog not built" >&2
	exit 99
fi
mkdir -p "$out" || exit 99
# Build-tree providers and no system configuration (automake sets these
# too; set them when run by hand).
: "${RAPT_PROVIDER_PATH:=$(pwd)/.libs:$(pwd)/tests/.libs}"
: "${RAPT_CONF:=/dev/null}"
export RAPT_PROVIDER_PATH RAPT_CONF

# A hung run must not hang make check.
limit=
if command -v timeout >/dev/null 2>&1; then
	limit="timeout ${RAPT_CONFORMANCE_TIMEOUT:-900}"
fi

# skip REASON: a run that could not be made; the script then reports SKIP
# (77) unless one failed, so a missing run never passes as a pass.
skip()
{
	echo "SKIP: $1"
	skipped=$((skipped + 1))
}

# run NAME ARGS...: one rapt-conformance run, logged and judged.  $in_ns,
# if set, is the command prefix that enters a network namespace.
in_ns=
run()
{
	name=$1
	shift
	file=rc-$(echo "$name" | tr ':/' '__')
	echo "== rapt-conformance $*"
	# --long: the stress area's 1,000 connect/disconnect cycles (about a
	# second), so the leak check in the ASan build covers them.
	$in_ns $limit "$prog" --long --xml "$out/$file.xml" "$@" \
		>"$out/$file.log" 2>&1
	rc=$?
	# What failed or was skipped, with the failed checks, and the table.
	grep -E '^(FAIL|SKIP)  |^      ' "$out/$file.log"
	sed -n '/^area /,$p' "$out/$file.log"
	grep -q '^area ' "$out/$file.log" || tail -n 5 "$out/$file.log"
	ran=$((ran + 1))
	if test $rc -ne 0; then
		echo "FAIL: $name (exit $rc): see $out/$file.log"
		fail=1
	else
		echo "PASS: $name"
	fi
}

test_fault="--unreachable-addr 192.0.2.1 --blackhole-addr 198.51.100.1 \
--half-open connect:127.0.0.2"

if test -e tests/.libs/librapt-test-pv2.so; then
	# shellcheck disable=SC2086
	run test:loop -p test:loop $test_fault
	# shellcheck disable=SC2086
	run test:ibsim -p test:ibsim $test_fault
else
	skip "the test provider is not built (tests/.libs/librapt-test-pv2.so)"
fi

# ---------------------------------------------------------------------
# tcp: loopback in this namespace, and two hosts in two namespaces.
# ---------------------------------------------------------------------

# tcp_twohost PROVIDER: a server and a client in two network namespaces
# joined by a veth pair.  The IA on each side is PROVIDER:<its veth>.
# Every address stays inside the two namespaces: the client's has no
# default route, so 10.213.8.1 is unreachable, and 10.213.9.0/24 is routed
# to the server's namespace, which does not forward: a black hole.
tcp_twohost()
{
	prov=$1
	if test "$(id -u)" -ne 0; then
		skip "$prov two-host run: needs root for network namespaces"
		return 0
	fi
	if ! ip netns list >/dev/null 2>&1; then
		skip "$prov two-host run: 'ip netns' does not work here"
		return 0
	fi
	ns_s=raptconf-s$$
	ns_c=raptconf-c$$
	fifo=$out/rc-$prov-server.fifo
	if ! ip netns add "$ns_s" || ! ip netns add "$ns_c"; then
		skip "$prov two-host run: cannot create network namespaces"
		ip netns del "$ns_s" 2>/dev/null
		return 0
	fi
	# Never leave the namespaces behind, even when make check is killed.
	trap 'ip netns del "$ns_s" 2>/dev/null; ip netns del "$ns_c" 2>/dev/null; rm -f "$fifo"' EXIT
	trap 'exit 1' INT TERM HUP
	ip link add rcs0 netns "$ns_s" type veth peer name rcc0 netns "$ns_c" &&
	ip -n "$ns_s" addr add 10.213.0.1/24 dev rcs0 &&
	ip -n "$ns_c" addr add 10.213.0.2/24 dev rcc0 &&
	ip -n "$ns_s" link set lo up && ip -n "$ns_c" link set lo up &&
	ip -n "$ns_s" link set rcs0 up && ip -n "$ns_c" link set rcc0 up &&
	ip -n "$ns_c" route add 10.213.9.0/24 via 10.213.0.1 &&
	ip netns exec "$ns_s" sysctl -q -w net.ipv4.ip_forward=0
	if test $? -ne 0; then
		skip "$prov two-host run: cannot set up the veth pair"
	else
		port=$((40000 + $$ % 20000))
		rm -f "$fifo"
		mkfifo "$fifo" || return 0
		ip netns exec "$ns_s" "$prog" --server --once --port "$port" \
			-p "$prov:rcs0" >"$fifo" 2>&1 &
		spid=$!
		# No sleep-then-hope: the server's first line says it listens;
		# end of file instead means it died (its log says why).
		exec 3<"$fifo"
		if IFS= read -r first <&3; then
			echo "$first" >"$out/rc-$prov-server.log"
			cat <&3 >>"$out/rc-$prov-server.log" &
			cpid=$!
			in_ns="ip netns exec $ns_c"
			# The client's namespace is ours: --netcut.
			run "$prov-twohost" --client 10.213.0.1 --port "$port" \
				-p "$prov:rcc0" --server-addr 10.213.0.1 \
				--unreachable-addr 10.213.8.1 \
				--blackhole-addr 10.213.9.1 --netcut
			in_ns=
		else
			echo "FAIL: $prov-twohost: the server did not start"
			fail=1
			cpid=
		fi
		# A client that never got through leaves the server waiting.
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		test -n "$cpid" && wait "$cpid" 2>/dev/null
		exec 3<&-
		rm -f "$fifo"
	fi
	ip netns del "$ns_s" 2>/dev/null
	ip netns del "$ns_c" 2>/dev/null
	return 0
}

if test -e .libs/librapt-tcp-pv2.so; then
	# No fault addresses on the host's own network: the two-host run
	# sets up its own inside its namespaces and covers those tests.  As
	# root, loopback runs in a fresh network namespace (only lo, up), so
	# the silent-peer tests may cut links there.
	if test "$(id -u)" -eq 0 && unshare -n true 2>/dev/null; then
		printf '#!/bin/sh\nip link set lo up || exit 99\nexec "$@"\n' \
			>"$out/lo-up.sh"
		in_ns="unshare -n -- sh $out/lo-up.sh"
		run tcp -p tcp --netcut
		in_ns=
		rm -f "$out/lo-up.sh"
	else
		echo "note: tcp loopback run in this namespace: the silent-peer tests skip (they need root and a namespace of their own)"
		run tcp -p tcp
	fi
	tcp_twohost tcp
else
	skip "tcp runs: the tcp provider is not built (.libs/librapt-tcp-pv2.so)"
fi

test $fail -ne 0 && exit 1
test $ran -eq 0 && exit 77
test $skipped -ne 0 && { echo "$skipped run(s) skipped: reported as SKIP"; exit 77; }
exit 0
