#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Every global symbol of the consumer stanzas (RAPT_1.0, RAPT_1.1, ...) of
# api/librapt.map must have a man page docs/man/<symbol>.3.md whose NAME
# and SYNOPSIS sections name it.  The RAPT_PROVIDER_<N> stanzas are the
# provider SDK, documented in rapt_provider(7).
#
# Finds the source tree through $srcdir (exported by automake's test
# harness, also under make distcheck) or, run by hand, through the
# location of this script.

if test -n "$srcdir" && test -f "$srcdir/api/librapt.map"; then
	top=$srcdir
else
	top=$(cd "$(dirname "$0")/.." && pwd)
fi
map=$top/api/librapt.map
mandir=$top/docs/man

if ! test -f "$map"; then
	echo "check_manpages: cannot find api/librapt.map (srcdir=$srcdir)" >&2
	exit 99
fi

# The global: names between each "RAPT_1.<n> {" and its stanza's "local:"
# or "}".
symbols=$(sed -n '/^RAPT_1\.[0-9][0-9]*[[:space:]]*{/,/}/p' "$map" |
	sed -n '/global:/,/local:/p' |
	sed -e 's,/\*.*\*/,,g' -e 's/[[:space:]]//g' |
	grep -E '^[A-Za-z_][A-Za-z0-9_]*;$' | tr -d ';')

if test -z "$symbols"; then
	echo "check_manpages: no symbols in the RAPT_1.x stanzas of $map" >&2
	exit 99
fi

# Print the body of section $2 ("# NAME") of Markdown file $1.
section()
{
	awk -v want="$2" '
		/^# / { on = ($0 == want); next }
		on { print }' "$1"
}

pass=0
fail=0
for sym in $symbols; do
	page=$mandir/$sym.3.md
	why=
	if ! test -f "$page"; then
		why="missing docs/man/$sym.3.md"
	elif ! section "$page" "# NAME" | grep -qw -- "$sym"; then
		why="docs/man/$sym.3.md: NAME does not mention $sym"
	elif ! section "$page" "# SYNOPSIS" | grep -qw -- "$sym"; then
		why="docs/man/$sym.3.md: SYNOPSIS does not mention $sym"
	fi
	if test -n "$why"; then
		echo "FAIL: $why"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done

echo "$pass passed, $fail failed"
test "$fail" -eq 0
