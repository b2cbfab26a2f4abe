#!/bin/bash
# Configure and build rapt in build folder $1 with extra configure args.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=$1; shift
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null)
mkdir -p "$top/$dir"
cd "$top/$dir"
[ -f Makefile ] || "$top/configure" -q "$@"
make -j"$(nproc)" >/dev/null
echo "$top/$dir"
