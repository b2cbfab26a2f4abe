#!/bin/sh
# SPDX-License-Identifier: MIT
#
# smoke.sh - a few iterations of every rapt_perf test type and of every
# peer program, data verified where the program can.  Correctness only:
# it fails on errors, never on speed.  Run by make check (TESTS), from the
# build folder; by hand: cd BUILDDIR && ../bench/smoke.sh.
#
# rapt_perf runs over the in-process "test" provider (--loopback-thread)
# and, when rapt_info lists it as usable, over tcp:lo in two processes.
# Parts whose pieces are missing (libfabric not found by configure, no
# usable tcp:lo) are skipped and named.  core_cost.sh runs when valgrind
# can (not in sanitizer builds); when it cannot, that is only noted.
# Exit: 1 if anything failed; else 77 if a part was skipped; else 0.

set -u

top=${abs_top_builddir:-$(pwd)}
src=${srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
[ -d "$src/bench" ] || src=$(cd "$(dirname "$0")/.." && pwd)

RAPT_PROVIDER_PATH=$top/.libs:$top/tests/.libs:$top/providers/tcp/.libs${RAPT_PROVIDER_PATH:+:$RAPT_PROVIDER_PATH}
RAPT_CONF=${RAPT_CONF:-/dev/null}
export RAPT_PROVIDER_PATH RAPT_CONF

perf=$top/tools/rapt_perf
pass=0
fail=0
skipped=

tmo=
command -v timeout >/dev/null 2>&1 && tmo="timeout 120"

skip() {
	echo "SKIP: $*"
	skipped="$skipped
  $*"
}

# check NAME COMMAND...: exit 0 and every result line "ok".
check() {
	name=$1
	shift
	out=$($tmo "$@" 2>&1)
	rc=$?
	bad=$(printf '%s\n' "$out" |
	      grep -E 'status=|"status":' | grep -vE 'status=ok|"status":"ok"')
	if [ $rc -eq 0 ] && [ -z "$bad" ] &&
	   printf '%s\n' "$out" | grep -qE 'status=ok|"status":"ok"'; then
		echo "PASS: $name"
		pass=$((pass + 1))
		return
	fi
	echo "FAIL: $name (exit $rc): $*"
	printf '%s\n' "$out" | sed 's/^/    /'
	fail=$((fail + 1))
}

# check_exit NAME COMMAND...: exit 0 is enough (table output, scripts).
check_exit() {
	name=$1
	shift
	out=$($tmo "$@" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "PASS: $name"
		pass=$((pass + 1))
		return
	fi
	echo "FAIL: $name (exit $rc): $*"
	printf '%s\n' "$out" | sed 's/^/    /'
	fail=$((fail + 1))
}

# A test run of rapt_perf over IA $1 with extra arguments.
perf_all() {
	ia=$1
	shift
	for t in lat_send lat_write lat_read bw_send bw_write bw_read; do
		check "rapt_perf $ia $t" $perf -p "$ia" -t "$t" -n 64 -W 4 \
			-V --json "$@"
	done
	check "rapt_perf $ia connrate" $perf -p "$ia" -t connrate -n 20 \
		-W 2 -V --json "$@"
	check "rapt_perf $ia conns" $perf -p "$ia" -t conns -n 50 -w 8 \
		-V --json "$@"
}

if [ ! -x "$perf" ]; then
	echo "FAIL: $perf is missing"
	exit 1
fi

# --- rapt_perf over the in-process test provider ---------------------
if [ -f "$top/tests/.libs/librapt-test-pv2.so" ]; then
	perf_all test --loopback-thread
	check "rapt_perf test lat_send -m block" $perf -p test \
		--loopback-thread -t lat_send -n 64 -W 4 -V -m block --json
	check "rapt_perf test bw_send -m fd" $perf -p test \
		--loopback-thread -t bw_send -n 64 -W 4 -V -m fd --json
	check "rapt_perf test lat_read -a" $perf -p test --loopback-thread \
		-t lat_read -a --max-size 64k -n 8 -W 1 -V --json
	check_exit "rapt_perf test bw_write -a (table)" $perf -p test \
		--loopback-thread -t bw_write -a --max-size 64k -n 8 -W 1 -V
	check "rapt_perf test connrate --pdata 0" $perf -p test \
		--loopback-thread -t connrate -n 10 --pdata 0 -V --json
else
	skip "rapt_perf over test: tests/.libs/librapt-test-pv2.so not built"
fi

# --- rapt_perf over tcp:lo, two processes ----------------------------
if "$top/tools/rapt_info" -l 2>/dev/null | grep -qx 'tcp:lo'; then
	perf_all tcp:lo
	check "rapt_perf tcp:lo lat_send -m block" $perf -p tcp:lo \
		-t lat_send -n 64 -W 4 -V -m block --json
	check "rapt_perf tcp:lo bw_read -m fd" $perf -p tcp:lo -t bw_read \
		-n 64 -W 4 -V -m fd --json
	check "rapt_perf tcp:lo lat_send -a" $perf -p tcp:lo -t lat_send \
		-a -n 8 -W 1 -V --json
	check "rapt_perf tcp:lo lat_mw -m block" $perf -p tcp:lo \
		-t lat_mw -n 64 -W 4 -V -m block --json
	check "rapt_perf tcp:lo lat_mw -a" $perf -p tcp:lo -t lat_mw \
		-a --max-size 64k -n 8 -W 1 -V --json
else
	skip "rapt_perf over tcp:lo: rapt_info does not list tcp:lo as usable"
fi

# --- raw TCP peers ---------------------------------------------------
raw=$top/bench/raw
check "raw_pingpong poll" $raw/raw_pingpong -n 200 -W 10 -V
check "raw_pingpong block" $raw/raw_pingpong -n 200 -W 10 -V -m block
check "raw_stream" $raw/raw_stream -n 16 -V
check "raw_connrate" $raw/raw_connrate -n 50 -W 2
check "raw_connrate -1" $raw/raw_connrate -n 50 -W 2 -1

# --- libfabric peers -------------------------------------------------
ofi=$top/bench/ofi
if [ -x "$ofi/ofi_pingpong" ]; then
	check "ofi_pingpong" $ofi/ofi_pingpong tcp -n 200 -W 10 -V
	check "ofi_pingpong block" $ofi/ofi_pingpong tcp -n 200 -W 10 -V \
		-m block
	check "ofi_rma_read_lat" $ofi/ofi_rma_read_lat tcp -n 200 -W 10 -V
	check "ofi_rma_bw write" $ofi/ofi_rma_bw tcp -n 64 -W 8 -V
	check "ofi_rma_bw read" $ofi/ofi_rma_bw tcp -o read -n 64 -W 8 -V
	check "ofi_connrate" $ofi/ofi_connrate tcp -n 20 -W 2
	check "ofi_manyconn" $ofi/ofi_manyconn tcp -n 50
	check "ofi_manyconn -D" $ofi/ofi_manyconn tcp -n 50 -w 8 -D
else
	skip "libfabric peers: not built (configure found no libfabric)"
fi

# --- the scripts -----------------------------------------------------
if "$top/tools/rapt_info" -l 2>/dev/null | grep -qx 'tcp:lo'; then
	check_exit "compare.sh --quick" sh "$src/bench/compare.sh" -b "$top" \
		-r 1 --quick --no-idle -m rtt,read,bw,connrate
fi
if command -v valgrind >/dev/null 2>&1; then
	out=$(sh "$src/bench/core_cost.sh" -b "$top" -n 2000 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "PASS: core_cost.sh ($(printf '%s\n' "$out" |
			sed -n 's/.*ir_core=\([^ ]*\).*/\1 Ir in the core/p'))"
		pass=$((pass + 1))
	elif [ $rc -eq 77 ]; then
		# Not a missing piece of the benchmarks: only this figure.
		echo "NOTE: $(printf '%s\n' "$out" | head -1)"
	else
		echo "FAIL: core_cost.sh"
		printf '%s\n' "$out" | sed 's/^/    /'
		fail=$((fail + 1))
	fi
else
	echo "NOTE: core_cost.sh not run: valgrind is not installed"
fi

echo "smoke: $pass passed, $fail failed"
[ $fail -gt 0 ] && exit 1
if [ -n "$skipped" ]; then
	echo "smoke: skipped:$skipped"
	exit 77
fi
exit 0
