#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run-siw-vm.sh - rapt's tcp provider against the Linux kernel's soft-iWARP
# driver (siw), on the wire, in a qemu VM (TCG: no KVM, no RDMA hardware
# and no RDMA modules on the host are needed).
#
# usage: tests/interop/run-siw-vm.sh BUILD_DIR      (as root)
#
# On a Debian 12 (bookworm) x86_64 host it:
#   1. apt-get installs qemu, busybox-static, rdma-core's libraries and siw
#      provider, and the headers and source of Debian's current 6.1 kernel
#   2. downloads that kernel's image package and unpacks only the kernel
#      and the modules the VM loads (the host's own kernel is not touched)
#   3. builds siw.ko out of tree (Debian 12 ships "# CONFIG_RDMA_SIW is
#      not set") from linux-source at exactly the image's version
#   4. makes BUILD_DIR's librapt, tcp provider, rapt_iw_peer and iw_peer
#      (configure must have found libibverbs and librdmacm)
#   5. packs a busybox initramfs with them, their library closure and
#      tests/interop/vm-init.sh as /init, boots it, relays the results
# Prints "PASS: name" / "FAIL: name" lines and "N passed, M failed"; the
# exit status is 0 only if every test passed.
#
# Env: WORKDIR=/var/tmp/rapt-siw-vm  cache (downloads, kernel, siw.ko)
#      KVER=6.1.0-NN-amd64          pin the guest kernel ABI (default: what
#                                   linux-image-amd64 depends on)
#      SKIP_APT=1                   no apt-get update/install
#      SMP=2 MEM=1G VM_TIMEOUT=600  qemu settings (keep 2 vCPUs: the two
#                                   peers poll each other)
#      VERBOSE=1                    show both peers' logs of passing tests too
#      VM_SHELL=1                   a shell on the console after the tests
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORKDIR=${WORKDIR:-/var/tmp/rapt-siw-vm}
SMP=${SMP:-2}
MEM=${MEM:-1G}
VM_TIMEOUT=${VM_TIMEOUT:-600}
ARCH_LIB=/usr/lib/x86_64-linux-gnu
T_START=$(date +%s.%N)

secs() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
say() { echo "[$(secs "$T_START")s] $*"; }
die() { echo "FAIL: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

[ $# = 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
[ -f "$1/Makefile" ] || die "$1 is not a configured rapt build folder"
BUILD=$(cd "$1" && pwd)
[ "$(id -u)" = 0 ] || die "must run as root (apt-get, dpkg)"
mkdir -p "$WORKDIR"
cd "$WORKDIR"

# ---------------------------------------------------------------------------
# 1. host packages
# ---------------------------------------------------------------------------
if [ "${SKIP_APT:-0}" != 1 ]; then
	t=$(date +%s.%N)
	apt-get update -qq
	say "apt-get update ($(secs "$t")s)"
fi
KVER=${KVER:-$(apt-cache depends linux-image-amd64 |
	awk '/Depends: linux-image-[0-9]/ { sub("linux-image-", "", $2); print $2; exit }')}
[ -n "$KVER" ] || die "cannot tell the kernel version (apt-get update?)"
KPKG=linux-image-$KVER
KDEBVER=$(apt-cache show "$KPKG" | awk '/^Version:/ { print $2; exit }')
KSERIES=$(echo "$KVER" | cut -d. -f1,2)
[ -n "$KDEBVER" ] || die "apt knows no $KPKG"
say "guest kernel $KPKG $KDEBVER"

PKGS=(qemu-system-x86 busybox-static cpio kmod xz-utils iproute2
      libibverbs-dev librdmacm-dev ibverbs-providers
      gcc make libc6-dev
      "linux-headers-$KVER" "linux-source-$KSERIES")
missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
# linux-source must be the image's exact version, or siw.ko will not load.
if [ "$(dpkg-query -W -f='${Version}' "linux-source-$KSERIES" 2>/dev/null)" != "$KDEBVER" ]; then
	missing+=("linux-source-$KSERIES=$KDEBVER")
fi
if [ ${#missing[@]} -gt 0 ]; then
	[ "${SKIP_APT:-0}" != 1 ] || die "SKIP_APT=1 but missing: ${missing[*]}"
	t=$(date +%s.%N)
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" > apt-install.log 2>&1 ||
		{ tail -20 apt-install.log; die "apt-get install failed"; }
	say "apt-get install ${missing[*]} ($(secs "$t")s)"
fi

# ---------------------------------------------------------------------------
# 2. guest kernel: vmlinuz and the modules we load, from the image .deb
# ---------------------------------------------------------------------------
KDIR=$WORKDIR/kernel-$KVER
MODDIR=$KDIR/lib/modules/$KVER
# What the VM loads (modinfo depends): ib_core ib_cm iw_cm rdma_cm (needs
# configfs) rdma_ucm ib_uverbs, siw (needs libcrc32c and a crc32c), veth.
m=./lib/modules/$KVER
KFILES=("./boot/vmlinuz-$KVER" "$m/modules.builtin*" "$m/modules.order"
	"$m/kernel/drivers/infiniband/core/*" "$m/kernel/drivers/net/veth.ko"
	"$m/kernel/fs/configfs/*" "$m/kernel/lib/libcrc32c.ko"
	"$m/kernel/crypto/crc32c_generic.ko")
if [ "$(cat "$KDIR/.done" 2>/dev/null)" != "${KFILES[*]}" ]; then
	t=$(date +%s.%N)
	mkdir -p debs
	deb=debs/${KPKG}_${KDEBVER}_amd64.deb
	if [ ! -f "$deb" ]; then
		(cd debs && apt-get download -q "$KPKG=$KDEBVER" 2>&1) |
			grep -v 'Download is performed unsandboxed' || true
	fi
	[ -f "$deb" ] || die "apt-get download $KPKG=$KDEBVER failed"
	rm -rf "$KDIR" && mkdir -p "$KDIR"
	dpkg-deb --fsys-tarfile "$deb" |
		tar -x -C "$KDIR" --wildcards "${KFILES[@]}"
	echo "${KFILES[*]}" > "$KDIR/.done"
	say "kernel and modules unpacked ($(du -sh "$KDIR" | cut -f1), $(secs "$t")s)"
fi

# ---------------------------------------------------------------------------
# 3. siw.ko, built out of tree against the image's own headers
# ---------------------------------------------------------------------------
SIW_KO=$WORKDIR/siw-$KDEBVER.ko
if [ ! -f "$SIW_KO" ]; then
	t=$(date +%s.%N)
	src=$WORKDIR/siw-src
	rm -rf "$src" && mkdir -p "$src"
	tar -xJf "/usr/src/linux-source-$KSERIES.tar.xz" -C "$src" \
		--strip-components=5 --wildcards \
		"linux-source-$KSERIES/drivers/infiniband/sw/siw/*"
	make -s -C "/usr/src/linux-headers-$KVER" M="$src" CONFIG_RDMA_SIW=m \
		modules > siw-build.log 2>&1 ||
		{ cat siw-build.log; die "building siw.ko failed"; }
	strip --strip-debug -o "$SIW_KO" "$src/siw.ko"
	say "siw.ko built ($(secs "$t")s)"
fi
mkdir -p "$MODDIR/extra"
cp "$SIW_KO" "$MODDIR/extra/siw.ko"

# ---------------------------------------------------------------------------
# 4. rapt's side and the siw peer, from the build folder
# ---------------------------------------------------------------------------
t=$(date +%s.%N)
make -s -C "$BUILD" -j"$SMP" librapt.la librapt-tcp-pv2.la \
	tests/interop/iw_peer tests/interop/rapt_iw_peer > make.log 2>&1 ||
	{ tail -20 make.log; die "cannot build the interop programs in $BUILD" \
		"(was it configured before libibverbs-dev and librdmacm-dev" \
		"were installed? then re-run configure)"; }
say "interop programs built ($(secs "$t")s)"
# libtool keeps the real program in .libs and a wrapper script outside.
real_prog() {
	local d=$BUILD/tests/interop n=$1
	for f in "$d/.libs/$n" "$d/.libs/lt-$n" "$d/$n"; do
		if [ -f "$f" ] && head -c 4 "$f" | grep -q ELF; then
			echo "$f"
			return
		fi
	done
	die "no ELF program $n under $d"
}
IW_PEER=$(real_prog iw_peer)
RAPT_PEER=$(real_prog rapt_iw_peer)

# ---------------------------------------------------------------------------
# 5. initramfs
# ---------------------------------------------------------------------------
t=$(date +%s.%N)
ROOT=$WORKDIR/initramfs
rm -rf "$ROOT"
mkdir -p "$ROOT"/{usr/bin,usr/sbin,usr/lib,usr/lib64,proc,sys,dev,tmp,run,root,etc,opt/rapt/lib}
mkdir -p "$ROOT$ARCH_LIB/libibverbs" "$ROOT/etc/libibverbs.d"
for d in bin sbin lib lib64; do ln -s usr/$d "$ROOT/$d"; done
cp /bin/busybox "$ROOT/usr/bin/busybox"
for a in $(/bin/busybox --list); do
	[ -e "$ROOT/usr/bin/$a" ] || ln -s busybox "$ROOT/usr/bin/$a"
done

# place FILE [DEST]: copy a file; system files keep their (merged-/usr)
# path, build-tree libraries go to $ARCH_LIB and programs to /usr/bin.
place() {
	local src=$1 dst=${2:-}
	if [ -z "$dst" ]; then
		case "$src" in
		/usr/*|/lib/*|/lib64/*) dst=/usr/${src#/usr/} ;;
		*.so|*.so.*) dst=$ARCH_LIB/$(basename "$src") ;;
		*) dst=/usr/bin/$(basename "$src") ;;
		esac
	fi
	mkdir -p "$ROOT$(dirname "$dst")"
	rm -f "$ROOT$dst"
	cp -L "$src" "$ROOT$dst"
}
# with_libs FILE...: FILE and its shared-library closure (ldd sees the
# build folder's librapt through LD_LIBRARY_PATH).
with_libs() {
	local f lib
	for f in "$@"; do
		place "$f"
		for lib in $(LD_LIBRARY_PATH=$BUILD/.libs ldd "$f" |
			     awk '/=> \// { print $3 } /^\t\// { print $1 }'); do
			case "$lib" in
			"$BUILD"/*) place "$lib" ;;
			*) [ -e "$ROOT/usr/${lib#/usr/}" ] || place "$lib" ;;
			esac
		done
	done
}
with_libs /usr/bin/ip /usr/bin/rdma "$IW_PEER" "$RAPT_PEER" \
	"$BUILD/.libs/librapt.so.1"
# dlopen()ed, so invisible to ldd: the tcp provider, the siw verbs
# provider, and libgcc_s (glibc loads it for pthread_exit/cancel).
with_libs "$BUILD/.libs/librapt-tcp-pv2.so"
place "$BUILD/.libs/librapt-tcp-pv2.so" /opt/rapt/lib/librapt-tcp-pv2.so
rm -f "$ROOT$ARCH_LIB/librapt-tcp-pv2.so"
with_libs "$ARCH_LIB/libibverbs/libsiw-rdmav34.so" "$ARCH_LIB/libgcc_s.so.1"
cp /etc/libibverbs.d/siw.driver "$ROOT/etc/libibverbs.d/"
echo "root:x:0:0:root:/root:/bin/sh" > "$ROOT/etc/passwd"
echo "root:x:0:" > "$ROOT/etc/group"

# Modules: the closure of what /init loads, per the image's modules.dep.
depmod -b "$KDIR" "$KVER"
kos=
for m in crc32c_generic ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm siw veth; do
	deps=$(modprobe -D -d "$KDIR" -S "$KVER" "$m") ||
		die "module $m (or a dependency) is not in the unpacked part of $KPKG"
	kos+=$(echo "$deps" | awk '$1 == "insmod" { print $2 }')$'\n'
done
echo "$kos" | sort -u | while read -r ko; do
	[ -n "$ko" ] || continue
	[ -f "$ko" ] || die "$ko is missing"
	rel=${ko#"$MODDIR"/}
	mkdir -p "$ROOT/lib/modules/$KVER/$(dirname "$rel")"
	cp "$ko" "$ROOT/lib/modules/$KVER/$rel"
done
cp "$MODDIR"/modules.builtin* "$MODDIR/modules.order" "$ROOT/lib/modules/$KVER/"
depmod -b "$ROOT" "$KVER"

install -m 0755 "$HERE/vm-init.sh" "$ROOT/init"
INITRD=$WORKDIR/initrd.cpio.gz
(cd "$ROOT" && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD"
say "initramfs $(du -h "$INITRD" | cut -f1) built ($(secs "$t")s)"

# ---------------------------------------------------------------------------
# 6. boot and relay
# ---------------------------------------------------------------------------
APPEND="console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init"
[ "${VM_SHELL:-0}" = 1 ] && APPEND+=" raptsiw.shell=1"
[ "${VERBOSE:-0}" = 1 ] && APPEND+=" raptsiw.verbose=1"
LOG=$WORKDIR/console.log
: > "$LOG"
relay() {
	local line
	while IFS= read -r line; do
		line=${line%$'\r'}
		case "$line" in ?*RAPTSIW*) line="RAPTSIW${line#*RAPTSIW}" ;; esac
		printf '%s\n' "$line" >> "$LOG"
		case "$line" in
		RAPTSIW*|"    "*|*"Kernel panic"*|*"BUG:"*|*"Oops"*) echo "$line" ;;
		esac
	done
}
say "booting qemu-system-x86_64 -accel tcg -smp $SMP -m $MEM"
t=$(date +%s.%N)
set +e
timeout --foreground -k 10 "$VM_TIMEOUT" \
	qemu-system-x86_64 -accel tcg -cpu max -smp "$SMP" -m "$MEM" \
		-nographic -no-reboot -nodefaults -serial stdio -nic none \
		-kernel "$KDIR/boot/vmlinuz-$KVER" -initrd "$INITRD" \
		-append "$APPEND" < /dev/null 2>&1 | relay
qrc=${PIPESTATUS[0]}
set -e
say "VM exited (rc=$qrc) after $(secs "$t")s"

pass=$(grep -c '^RAPTSIW PASS' "$LOG" || true)
fail=$(grep -c '^RAPTSIW FAIL' "$LOG" || true)
echo "==== rapt tcp provider vs kernel siw (guest $KVER, TCG) ===="
sed -n 's/^RAPTSIW \(PASS\|FAIL\) \([^ ]*\) \(.*\)/\1: \2 \3/p' "$LOG"
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "FAIL: vm_timeout (no poweroff within ${VM_TIMEOUT}s; see $LOG)"
	fail=$((fail + 1))
elif ! grep -q '^RAPTSIW SUMMARY' "$LOG"; then
	echo "FAIL: vm_incomplete (no summary line; see $LOG)"
	fail=$((fail + 1))
fi
say "done"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
