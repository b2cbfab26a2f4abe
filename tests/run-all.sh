#!/bin/bash
# Run every rapt test on a fresh Debian 12 machine: installs what is
# missing, then builds and tests four ways:
#   1. release build, -Werror: make check
#   2. ASan + UBSan build: make check
#   3. TSan build: make check (the threaded tests matter here)
#   4. make distcheck (the tarball builds and passes on its own)
# Exit status is 0 only if all of them pass.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tests/ci/deps.sh
[ -x configure ] || ./autogen.sh >/dev/null

summary=()
run() {
	local name=$1; shift
	echo "=== $name"
	if "$@"; then
		summary+=("PASS $name")
	else
		summary+=("FAIL $name")
	fi
}
check_in() {
	local dir=$1; shift
	local b
	b=$(tests/ci/build.sh "$dir" "$@") || return 1
	make -C "$b" -j"$(nproc)" check || { cat "$b"/tests/*.log "$b"/*.log 2>/dev/null | tail -100; return 1; }
}

run "check (release, -Werror)" check_in build-ci --enable-werror
run "check (ASan+UBSan)" check_in build-ci-asan --enable-werror --enable-debug \
	--enable-asan --enable-ubsan
run "check (TSan)" check_in build-ci-tsan --enable-werror --enable-tsan
run "distcheck" make -C "$(tests/ci/build.sh build-ci --enable-werror)" distcheck \
	DISTCHECK_CONFIGURE_FLAGS=--enable-werror

echo
printf '%s\n' "${summary[@]}"
pass=$(printf '%s\n' "${summary[@]}" | grep -c '^PASS' || true)
fail=$(printf '%s\n' "${summary[@]}" | grep -c '^FAIL' || true)
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
