#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The Debian packages, end to end (issue #17), on this machine:
#   1. build them from a copy of this tree (dpkg-buildpackage -us -uc -b,
#      DEB_BUILD_OPTIONS="nocheck parallel=2": make check runs in its own
#      CI stage) and run lintian on them: no error;
#   2. install them with dpkg -i (needs root);
#   3. with the installed files only (no build tree in LD_LIBRARY_PATH or
#      RAPT_PROVIDER_PATH): rapt_info, the demo (demo.sh --installed from
#      /usr/share/doc/librapt-dev/examples), the man pages, and the
#      out-of-tree loop provider built against librapt-dev, listed by
#      rapt_info and certified by rapt-conformance from its own folder;
#   4. purge them and check that nothing of them is left.
# The packages are purged on every exit, even a failed one.
#
# Prints one PASS:/FAIL:/SKIP: line per check and ends with
# "N passed, M failed, K skipped".  Exit status 0 only if none failed.
# Packages, logs and scratch files live in one temporary folder, removed
# at the end unless KEEP=1.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
pkgs=(librapt1 librapt-dev rapt-provider-tcp rapt-provider-verbs rapt-utils
      rapt-libfabric-provider rapt-dat2-provider)
pass=0 fail=0 skip=0

ok()   { echo "PASS: $*"; pass=$((pass + 1)); }
bad()  { echo "FAIL: $*"; fail=$((fail + 1)); }
skp()  { echo "SKIP: $*"; skip=$((skip + 1)); }
summary() {
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" -eq 0 ]
}
# Show the tail of a log after a failure.
show() { echo "--- $1"; tail -n "${2:-40}" "$1"; }

if ! git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	bad "Debian packages: $top is not a git checkout (the build copies" \
	    "its files with git ls-files)"
	summary
	exit
fi
if [ "$(id -u)" -ne 0 ]; then
	skp "Debian packages: dpkg -i needs root"
	summary
	exit
fi
for p in "${pkgs[@]}"; do
	if dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null |
	   grep -q '^[ihr]'; then
		bad "$p is already installed: purge it first (this test" \
		    "installs and purges its own build)"
		summary
		exit
	fi
done

work=$(mktemp -d /tmp/rapt-packaging.XXXXXX)
installed=0
cleanup() {
	if [ "$installed" -eq 1 ]; then
		dpkg --purge "${pkgs[@]}" >/dev/null 2>&1
	fi
	[ "${KEEP:-0}" = 1 ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# The whole environment of the installed-files checks: the system paths
# only, no configuration file, nothing from a build tree.
installed_env=(env -u LD_LIBRARY_PATH -u RAPT_PROVIDER_PATH
	-u PKG_CONFIG_PATH -u RAPT_PROVIDER RAPT_CONF=/dev/null
	PATH=/usr/sbin:/usr/bin:/sbin:/bin)

# ---------------------------------------------------------------------
# 1. Build, lintian
# ---------------------------------------------------------------------
# A copy of the tree (tracked and new files, nothing ignored): the build
# runs autoreconf, and dpkg-buildpackage writes its packages next to the
# source, so neither touches this checkout.
echo "=== building the packages in $work"
src=$work/rapt
mkdir -p "$src"
(cd "$top" && git ls-files -z -co --exclude-standard |
	tar -cf - --null -T -) | tar -xf - -C "$src"
if (cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
	dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
	ok "dpkg-buildpackage -us -uc -b"
else
	bad "dpkg-buildpackage -us -uc -b"
	show "$work/build.log"
	summary
	exit
fi
debs=()
for p in "${pkgs[@]}"; do
	debs+=("$(ls "$work/${p}_"*.deb)")
done

lintian --fail-on error --display-info "$work"/*.changes \
	>"$work/lintian.log" 2>&1
rc=$?
grep -v '^running with root privileges' "$work/lintian.log"
if [ "$rc" -eq 0 ]; then
	ok "lintian: no error ($(grep -c '^W: ' "$work/lintian.log")" \
	   "warnings, $(grep -c '^I: ' "$work/lintian.log") notes)"
else
	bad "lintian reports errors"
fi

for d in "${debs[@]}"; do
	echo "--- $(basename "$d")"
	dpkg-deb -f "$d" Depends Provides Recommends | sed 's/^/    /'
done

# ---------------------------------------------------------------------
# 2. Install
# ---------------------------------------------------------------------
echo "=== dpkg -i"
installed=1
if dpkg -i "${debs[@]}" >"$work/install.log" 2>&1; then
	ok "dpkg -i ${pkgs[*]}"
else
	bad "dpkg -i ${pkgs[*]}"
	show "$work/install.log"
	summary
	exit
fi
# Every file the packages put on the machine, for the purge check.
dpkg -L "${pkgs[@]}" | sort -u >"$work/files"

# ---------------------------------------------------------------------
# 3. The installed files at work
# ---------------------------------------------------------------------
echo "=== rapt_info"
# The tcp provider is found where librapt looks, with no search path set.
provdir=$("${installed_env[@]}" pkg-config --variable=pkglibdir rapt-provider)
if "${installed_env[@]}" rapt_info -v >"$work/rapt_info.log" 2>&1 &&
   grep -q "provider tcp .*usable" "$work/rapt_info.log" &&
   grep -q "$provdir/librapt-tcp-pv[0-9]*\.so" "$work/rapt_info.log"; then
	ok "rapt_info finds the installed tcp provider in $provdir"
else
	bad "rapt_info does not find the installed tcp provider"
	show "$work/rapt_info.log"
fi
cat "$work/rapt_info.log"

# The providers on rdma-core are installed, and usable or say why not (on
# a machine without RDMA: no iWARP device, no InfiniBand/RoCE device).
for p in iwarp ib; do
	if grep -q "^provider $p.*usable" "$work/rapt_info.log" &&
	   grep -q "$provdir/librapt-$p-pv[0-9]*\.so" "$work/rapt_info.log"; then
		ok "rapt_info finds the installed $p provider: $(grep -A1 \
			"^provider $p" "$work/rapt_info.log" | tr -s ' \n' ' ' |
			cut -c1-160)"
	else
		bad "rapt_info does not find the installed $p provider"
	fi
done

# Nothing installed may look into a build tree.
if ! readelf -d /usr/bin/rapt_info "$provdir"/librapt-*-pv*.so \
	/usr/lib/*/libfabric/librapt-fi.so \
	/usr/lib/*/librapt.so.* 2>/dev/null | grep -qi 'rpath\|runpath'; then
	ok "no RPATH/RUNPATH in the installed binaries"
else
	bad "an installed binary has an RPATH/RUNPATH"
fi

echo "=== the libfabric provider"
# libfabric finds it in its own provider folder, with no path set.
if "${installed_env[@]}" RAPT_PROVIDER=tcp fi_info -p rapt \
	>"$work/fi_info.log" 2>&1 &&
   grep -q 'fabric: tcp:lo' "$work/fi_info.log"; then
	ok "fi_info -p rapt finds the installed libfabric provider"
else
	bad "fi_info -p rapt does not find the installed libfabric provider"
	show "$work/fi_info.log"
fi

echo "=== the DAT provider"
# rapt-dat2-conf names the installed library; libdat2 loads it from that
# dat.conf line (dapltest's limit test needs no server).
if "${installed_env[@]}" rapt-dat2-conf >"$work/dat.conf" 2>/dev/null &&
   grep -q '^rapt-tcp:lo .* /usr/lib/.*/rapt-dat2/librapt-dat2.so ' \
	"$work/dat.conf"; then
	ok "rapt-dat2-conf writes the dat.conf line of the installed library"
else
	bad "rapt-dat2-conf: no rapt-tcp:lo line naming the installed library"
	show "$work/dat.conf"
fi
if ! command -v dapltest >/dev/null; then
	skp "dapltest through the installed DAT provider: no dapl2-utils"
elif "${installed_env[@]}" DAT_OVERRIDE="$work/dat.conf" RAPT_PROVIDER=tcp \
	timeout 60 dapltest -T L -D rapt-tcp:lo -w 1 -m 10 limit_ep \
	>"$work/dapltest.log" 2>&1 &&
   grep -q 'EPs created: 10' "$work/dapltest.log"; then
	ok "dapltest -T L runs on rapt through the installed DAT provider"
else
	bad "dapltest -T L through the installed DAT provider"
	show "$work/dapltest.log"
fi

echo "=== the demo (demo.sh --installed)"
demo=/usr/share/doc/librapt-dev/examples/demo.sh
if "${installed_env[@]}" bash "$demo" --installed \
	>"$work/demo.log" 2>&1 && grep -q '^demo: OK' "$work/demo.log"; then
	ok "demo: server and client over tcp:lo, built with pkg-config rapt"
else
	bad "demo: server and client over tcp:lo"
	show "$work/demo.log"
fi

echo "=== man pages"
if "${installed_env[@]}" MANPAGER=cat MANWIDTH=80 man 3 rapt_ep_connect \
	>"$work/man.log" 2>&1 &&
   grep -q 'rapt_ep_connect - connect an endpoint' "$work/man.log"; then
	ok "man 3 rapt_ep_connect"
else
	bad "man 3 rapt_ep_connect"
	show "$work/man.log"
fi
# Every installed page renders, without a groff warning.
npages=0 badpages=()
while read -r page; do
	npages=$((npages + 1))
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 \
		-Z "$page" 2>&1 >/dev/null)
	[ -n "$out" ] && badpages+=("$page: $out")
done < <(grep '^/usr/share/man/man[0-9]/.*\.gz$' "$work/files")
if [ "$npages" -gt 0 ] && [ ${#badpages[@]} -eq 0 ]; then
	ok "$npages man pages render without a warning"
else
	bad "man pages: $npages installed, ${#badpages[@]} with warnings"
	printf '    %s\n' "${badpages[@]}"
fi

echo "=== the out-of-tree provider (examples/provider)"
# Built from what librapt-dev ships, against librapt-dev alone.
cp -r /usr/share/doc/librapt-dev/examples/provider "$work/loop"
if "${installed_env[@]}" make -C "$work/loop" >"$work/loop-build.log" 2>&1
then
	ok "examples/provider builds with pkg-config rapt-provider"
else
	bad "examples/provider does not build"
	show "$work/loop-build.log"
fi
loop_env=("${installed_env[@]}" RAPT_PROVIDER_PATH="$work/loop")
if "${loop_env[@]}" rapt_info -p loop >"$work/loop-info.log" 2>&1 &&
   grep -q '^ia loop' "$work/loop-info.log"; then
	ok "rapt_info opens loop through RAPT_PROVIDER_PATH"
else
	bad "rapt_info cannot open loop"
	show "$work/loop-info.log"
fi
# The areas loop advertises (its Makefile lists them).
if "${installed_env[@]}" make -C "$work/loop" check \
	>"$work/loop-conf.log" 2>&1; then
	ok "rapt-conformance on loop: $(grep -E '^[0-9]+ passed' \
		"$work/loop-conf.log" | tail -n 1)"
else
	bad "rapt-conformance on loop"
	grep -E '^(FAIL|SKIP)  |^      ' "$work/loop-conf.log"
	show "$work/loop-conf.log" 25
fi

# ---------------------------------------------------------------------
# 4. Purge
# ---------------------------------------------------------------------
echo "=== dpkg --purge"
if dpkg --purge "${pkgs[@]}" >"$work/purge.log" 2>&1; then
	installed=0
	ok "dpkg --purge ${pkgs[*]}"
else
	bad "dpkg --purge ${pkgs[*]}"
	show "$work/purge.log"
fi
left=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null |
		grep -q '^[ihrcHUFtW]' && left+=("package $p")
done
while read -r f; do
	# Folders the packages share with the system stay.
	[ -e "$f" ] && [ ! -d "$f" ] && left+=("$f")
done <"$work/files"
for d in /usr/lib/*/rapt /usr/include/rapt /usr/share/doc/librapt-dev; do
	[ -e "$d" ] && left+=("$d")
done
if [ ${#left[@]} -eq 0 ]; then
	ok "nothing left after the purge"
else
	bad "left after the purge: ${left[*]}"
fi

summary
