#!/bin/sh
# SPDX-License-Identifier: MIT
#
# core_cost.sh - instructions the rapt core spends per post + completion,
# above the provider.  Exact, not noisy: valgrind's callgrind counts the
# instructions executed inside librapt.so while bench/null/core_cost
# posts an operation and dequeues its completion, against the "null"
# provider whose post ops push the completion at once.
#
#   bench/core_cost.sh [-b BUILDDIR] [-o send|write|read] [-n ITERS]
#                      [--target IR] [--release]
#
# Two runs (ITERS/10 and ITERS posts) are subtracted so that nothing but
# the per-operation cost remains.  Only the loop is counted
# (--toggle-collect=core_cost_loop).  librapt.so's own instructions,
# including its PLT stubs, are the core's cost; the null provider's and
# libc's (pthread mutexes) are printed beside it.  Release builds only
# give the figure that counts: a --enable-debug build (-O0 and full
# data-path checks) is measured but marked; --release makes that a skip.
#
# Output: a readable summary, then one line
#   bench=core_cost impl=rapt op=OP ir_core=N ir_provider=N ir_all=N
#   target=60 verdict=PASS|MISS build=release|debug status=ok
# Exit: 0 measured (whatever the verdict), 1 failure, 77 cannot measure.

set -u

builddir=${abs_top_builddir:-}
op=send
iters=20000
target=60
need_release=0

while [ $# -gt 0 ]; do
	case $1 in
	-b) builddir=$2; shift ;;
	-o) op=$2; shift ;;
	-n) iters=$2; shift ;;
	--target) target=$2; shift ;;
	--release) need_release=1 ;;
	-h|--help) sed -n '3,24p' "$0"; exit 0 ;;
	*) echo "core_cost.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

if [ -z "$builddir" ]; then
	if [ -f ./librapt.la ]; then
		builddir=.
	else
		echo "core_cost.sh: give the build folder with -b" >&2
		exit 2
	fi
fi
builddir=$(cd "$builddir" && pwd) || exit 2

skip() {
	echo "core_cost.sh: SKIP: $*"
	echo "bench=core_cost impl=rapt op=$op status=skipped"
	exit 77
}

command -v valgrind >/dev/null 2>&1 || skip "valgrind is not installed"
command -v awk >/dev/null 2>&1 || skip "awk is not installed"

# Valgrind cannot run sanitizer builds.
if grep -q '^RAPT_CFLAGS = .*-fsanitize' "$builddir/Makefile" 2>/dev/null; then
	skip "$builddir is a sanitizer build; valgrind cannot run it"
fi

build=release
if grep -q '^#define RAPT_DEBUG 1' "$builddir/config.h" 2>/dev/null; then
	build=debug
	[ $need_release = 1 ] && skip "$builddir is a --enable-debug build"
fi

driver=$builddir/bench/null/core_cost
if [ ! -x "$driver" ] ||
   [ ! -f "$builddir/bench/null/.libs/librapt-null-pv2.so" ]; then
	make -C "$builddir" -s bench/null/core_cost \
		bench/null/librapt-null-pv2.la >/dev/null 2>&1 ||
		skip "cannot build bench/null/core_cost in $builddir"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/core_cost.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

RAPT_PROVIDER_PATH=$builddir/bench/null/.libs
RAPT_PROVIDER=null
RAPT_CONF=/dev/null
export RAPT_PROVIDER_PATH RAPT_PROVIDER RAPT_CONF

# Run the driver under callgrind for $1 iterations into $2.
measure() {
	"$builddir/libtool" --mode=execute valgrind --tool=callgrind \
		--callgrind-out-file="$2" --toggle-collect=core_cost_loop \
		"$driver" -o "$op" "$1" >"$tmp/log" 2>&1
	if [ $? -ne 0 ]; then
		cat "$tmp/log" >&2
		echo "core_cost.sh: the driver failed" >&2
		exit 1
	fi
}

# Self cost (Ir) per object: librapt.so, the null provider, everything.
# Call lines ("calls=") are followed by the callee's inclusive cost,
# which is not the caller's own and is skipped.
split_cost() {
	awk '
	function name(s, tbl,   id, rest) {
		if (match(s, /^\([0-9]+\)/)) {
			id = substr(s, RSTART, RLENGTH)
			rest = substr(s, RLENGTH + 2)
			if (rest != "")
				tbl[id] = rest
			return tbl[id]
		}
		return s
	}
	# ob/cob and fn/cfn share their compressed-name tables.
	/^ob=/ { ob = name(substr($0, 4), obs); next }
	/^cob=/ { name(substr($0, 5), obs); next }
	/^fn=/ { fn = name(substr($0, 4), fns); next }
	/^cfn=/ { name(substr($0, 5), fns); next }
	/^summary:/ { summary = $2; next }
	/^calls=/ { skip = 1; next }
	/^[0-9+*-]/ {
		if (skip) { skip = 0; next }
		all += $2
		if (ob ~ /\/librapt\.so/) { core += $2; byfn[fn] += $2 }
		else if (ob ~ /librapt-null-pv/) prov += $2
		next
	}
	END {
		if (all != summary)
			printf "core_cost.sh: parsed %d Ir, the file says %d\n",
			       all, summary > "/dev/stderr"
		printf "%d %d %d\n", core, prov, all
		for (f in byfn)
			printf "fn %d %s\n", byfn[f], f
	}' "$1"
}

small=$((iters / 10))
measure "$small" "$tmp/cg.small"
measure "$iters" "$tmp/cg.big"
split_cost "$tmp/cg.small" >"$tmp/small"
split_cost "$tmp/cg.big" >"$tmp/big"

set -- $(head -1 "$tmp/small") $(head -1 "$tmp/big")
n=$((iters - small))
result=$(awk -v n="$n" -v c0="$1" -v p0="$2" -v a0="$3" \
	-v c1="$4" -v p1="$5" -v a1="$6" 'BEGIN {
	printf "%.1f %.1f %.1f", (c1 - c0) / n, (p1 - p0) / n, (a1 - a0) / n
}')
set -- $result
core=$1 prov=$2 all=$3
verdict=$(awk -v c="$core" -v t="$target" 'BEGIN {
	print (c <= t) ? "PASS" : "MISS" }')

echo "core cost per $op + completion ($build build of $builddir):"
echo "  librapt.so       $core instructions (target <= $target: $verdict)"
echo "  null provider    $prov instructions"
echo "  all objects      $all instructions (libc: mutex lock/unlock)"
echo "  librapt.so by function (per operation, largest first):"
awk -v n="$n" '
	FNR == NR { if ($1 == "fn") small[$3] = $2; next }
	$1 == "fn" { d = ($2 - small[$3]) / n
		     if (d >= 0.5) printf "    %8.1f  %s\n", d, $3 }' \
	"$tmp/small" "$tmp/big" | sort -rn
[ "$build" = debug ] &&
	echo "  NOTE: a --enable-debug build (-O0, full checks): not the release cost"
echo "bench=core_cost impl=rapt op=$op ir_core=$core ir_provider=$prov" \
	"ir_all=$all target=$target verdict=$verdict build=$build status=ok"
exit 0
