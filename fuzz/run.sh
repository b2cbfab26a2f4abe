#!/bin/sh
# SPDX-License-Identifier: MIT
# Run libFuzzer targets for a set time each: run.sh SEEDDIR SECONDS NAME...
# From the build directory (make fuzz).  Each target starts from its seed
# corpus (SEEDDIR/<seeds>.txt, one hex input per line) plus what earlier
# runs found (fuzz-out/<name>/corpus), niced, one job.  Prints each
# target's execution count; exit status 1 if one crashed (the crashing
# input is fuzz-out/<name>/crash-*: make it a unit test).
set -u
seeds=$1
secs=$2
shift 2
fail=0
seedfile()
{
	case $1 in
	fpdu) echo "$seeds/fpdu.txt $seeds/e2e.txt" ;;
	*) echo "$seeds/$1.txt" ;;
	esac
}
for t in "$@"; do
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
		fail=1
	else
		echo "PASS: fuzz_$t"
	fi
done
exit $fail
