#!/bin/bash
# The rapt demo: list what rapt sees, then run a server and a client over
# the tcp provider (software iWARP) on loopback: connect with private
# data, send and receive, RDMA write and read with verification,
# disconnect.
#
#   examples/demo.sh              on a fresh Debian 12 machine, from the
#                                 source tree: install what is missing,
#                                 build, run from the build tree
#   demo.sh --installed           against an installed rapt only (the
#                                 Debian packages, or "make install"):
#                                 build the two programs from the sources
#                                 beside this script with "pkg-config
#                                 rapt", use the installed tools and
#                                 providers
#
# The packages ship this script and the sources in
# /usr/share/doc/librapt-dev/examples/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

build_tree() {
	local top=$here/..
	cd "$top"
	tests/ci/deps.sh
	b=$(tests/ci/build.sh build-demo)
	export RAPT_PROVIDER_PATH="$b/.libs:$b/providers/tcp/.libs"
	rapt_info=$b/tools/rapt_info
	server=$b/examples/rapt_server
	client=$b/examples/rapt_client
	logdir=$b
}

build_installed() {
	local cflags libs
	if ! cflags=$(pkg-config --cflags rapt) ||
	   ! libs=$(pkg-config --libs rapt); then
		echo "demo: pkg-config finds no rapt: install librapt-dev" >&2
		exit 1
	fi
	rapt_info=$(command -v rapt_info) || {
		echo "demo: no rapt_info in PATH: install rapt-utils" >&2
		exit 1
	}
	# Only the installed providers.
	unset RAPT_PROVIDER_PATH
	logdir=$(mktemp -d)
	trap 'rm -rf "$logdir"' EXIT
	for p in rapt_server rapt_client; do
		# shellcheck disable=SC2086
		${CC:-cc} -O2 -Wall -o "$logdir/$p" "$here/$p.c" $cflags $libs
	done
	server=$logdir/rapt_server
	client=$logdir/rapt_client
}

case "${1:-}" in
--installed) build_installed ;;
"") build_tree ;;
*) echo "usage: $0 [--installed]" >&2; exit 2 ;;
esac

echo "=== rapt_info"
"$rapt_info"

echo "=== demo: server and client over tcp:lo"
"$server" -p tcp:lo > "$logdir/demo-server.log" 2>&1 &
srv=$!
# wait until the server listens
for _ in $(seq 50); do
	grep -q listening "$logdir/demo-server.log" 2>/dev/null && break
	sleep 0.1
done
status=0
"$client" -p tcp:lo 127.0.0.1 || status=$?
wait "$srv" || status=$?
cat "$logdir/demo-server.log"
if [ "$status" -eq 0 ]; then
	echo "demo: OK"
else
	echo "demo: FAILED ($status)"
fi
exit "$status"
