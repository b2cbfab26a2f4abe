#!/bin/bash
# The rapt demo on a fresh Debian 12 machine: install what is missing,
# build, list what rapt sees, then run a server and a client over the tcp
# provider (software iWARP) on loopback: connect with private data, send and
# receive, RDMA write and read with verification, disconnect.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tests/ci/deps.sh
b=$(tests/ci/build.sh build-demo)
export RAPT_PROVIDER_PATH="$b/.libs:$b/providers/tcp/.libs"

echo "=== rapt_info"
"$b/tools/rapt_info"

echo "=== demo: server and client over tcp:lo"
"$b/examples/rapt_server" -p tcp:lo > "$b/demo-server.log" 2>&1 &
srv=$!
# wait until the server listens
for _ in $(seq 50); do
	grep -q listening "$b/demo-server.log" 2>/dev/null && break
	sleep 0.1
done
status=0
"$b/examples/rapt_client" -p tcp:lo 127.0.0.1 || status=$?
wait "$srv" || status=$?
cat "$b/demo-server.log"
if [ "$status" -eq 0 ]; then
	echo "demo: OK"
else
	echo "demo: FAILED ($status)"
fi
exit "$status"
