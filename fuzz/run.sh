#!/bin/sh
# SPDX-License-Identifier: MIT
# Run libFuzzer targets for a set time each: run.sh SEEDDIR SECONDS NAME...
# From the build directory (make fuzz).  Each target starts from its seed
# corpus (SEEDDIR/<seeds>.txt, one hex input per line) plus what earlier
# runs found (fuzz-out/<name>/corpus), niced, one job; FUZZ_JOBS targets
# (default 1) run at a time.  Prints each target's execution count, in
# the order given; exit status 1 if one crashed (the crashing input is
# fuzz-out/<name>/crash-*: make it a unit test).
set -u
seeds=$1
secs=$2
shift 2
jobs=${FUZZ_JOBS:-1}
fail=0
seedfile()
{
	case $1 in
	fpdu) echo "$seeds/fpdu.txt $seeds/e2e.txt" ;;
	*) echo "$seeds/$1.txt" ;;
	esac
}
# run_one NAME: fuzz one target; its report goes to fuzz-out/NAME/report,
# its verdict (0 or 1) to fuzz-out/NAME/rc.
run_one()
{
	t=$1
	out=fuzz-out/$t
	mkdir -p "$out/corpus" "$out/seeds"
	# shellcheck disable=SC2046
	python3 - "$out/seeds" $(seedfile "$t") <<'PY'
import sys, os
out = sys.argv[1]
n = 0
for f in sys.argv[2:]:
    for line in open(f):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        open(os.path.join(out, 'seed-%03d' % n), 'wb').write(bytes.fromhex(line))
        n += 1
PY
	{
	echo "== fuzz_$t: $secs s"
	# LeakSanitizer stops the world with ptrace, which fails beside the
	# provider's engine thread here: leaks are the ASan build's job there.
	leaks=1
	test "$t" = e2e && leaks=0
	ASAN_OPTIONS=detect_leaks=$leaks${ASAN_OPTIONS:+:$ASAN_OPTIONS} \
	nice -n 19 "./fuzz/fuzz_$t" -max_total_time="$secs" -detect_leaks=$leaks \
		-artifact_prefix="$out/" -print_final_stats=1 \
		"$out/corpus" "$out/seeds" >"$out/log" 2>&1
	rc=$?
	grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$out/log" |
		sed "s/^/fuzz_$t: /"
	if test $rc -ne 0; then
		echo "FAIL: fuzz_$t (exit $rc): $(ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* 2>/dev/null | head -1)"
		tail -30 "$out/log"
		echo 1 >"$out/rc"
	else
		echo "PASS: fuzz_$t"
		echo 0 >"$out/rc"
	fi
	} >"$out/report"
}
running=0
for t in "$@"; do
	mkdir -p "fuzz-out/$t"
	rm -f "fuzz-out/$t/rc"
	run_one "$t" &
	running=$((running + 1))
	if test "$running" -ge "$jobs"; then
		wait
		running=0
	fi
done
wait
for t in "$@"; do
	cat "fuzz-out/$t/report" 2>/dev/null
	case $(cat "fuzz-out/$t/rc" 2>/dev/null) in
	0) ;;
	1) fail=1 ;;
	*) echo "FAIL: fuzz_$t: no verdict (the run did not finish)"
	   fail=1 ;;
	esac
done
exit $fail
