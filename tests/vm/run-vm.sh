#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run-vm.sh - rapt's VM suite: rapt on the Linux kernel's soft-iWARP (siw)
# and soft-RoCE (rxe) drivers, in a qemu VM (TCG: no KVM, no RDMA hardware
# and no RDMA modules on the host are needed).
#
# usage: tests/vm/run-vm.sh BUILD_DIR      (as root)
#
# On a Debian 12 (bookworm) x86_64 host it:
#   1. apt-get installs qemu, busybox-static, rdma-core's libraries, siw
#      and rxe providers, ibverbs-utils, rdmacm-utils, perftest and
#      nftables, and the headers and source of Debian's current 6.1
#      kernel
#   2. downloads that kernel's image package and unpacks only the kernel
#      and the modules the VM loads (the host's own kernel is not touched)
#   3. builds siw.ko out of tree (Debian 12 ships "# CONFIG_RDMA_SIW is
#      not set") from linux-source at exactly the image's version
#   4. makes BUILD_DIR's librapt, the tcp, iwarp and ib providers,
#      rapt-conformance, rapt_info, rapt_perf, the demo and the interop
#      programs
#      (configure must have found libibverbs and librdmacm)
#   5. packs a busybox initramfs with them, their library closure, the
#      rdma-core programs the suites run and tests/vm/*.sh, boots it and
#      relays the results
#
# The suites (tests/vm/suite-*.sh), all by default:
#   interop      rapt's tcp provider against a librdmacm program on siw
#   conformance  rapt-conformance on iwarp:siw0, one host and two hosts;
#                iwarp against tcp both ways (the other side certifies it)
#   foreign      rping, rdma_server/rdma_client and ucmatose against rapt
#                programs on iwarp and tcp, both directions
#   perf         rapt_perf -p iwarp against perftest on the same devices
#   ib           the ib provider on rxe: conformance one host and two
#                hosts, rapt_info, private-data limits, the lost RTU,
#                foreign peers, perf against perftest, and the demo run
#                unchanged on tcp, iwarp and ib
#   mpi          Open MPI over "rapt;ofi_rxm" (rapt's libfabric provider)
#                on the iwarp (siw) and ib (rxe) providers: 2 ranks,
#                compat/libfabric/tests/mpi_check (needs a build with the
#                libfabric provider, and Open MPI on this machine)
#   dat          uDAPL's dapltest, dtest, dtestcm and dtestsrq through rapt's DAT
#                provider on iwarp (siw) and ib (rxe), and through
#                uDAPL's own rdma_cm provider on the same devices, side
#                by side (needs a build with the DAT provider)
#
# Prints "PASS: name" / "FAIL: name" / "SKIP: name (why)" lines and "N
# passed, M failed, K skipped"; the exit status is 0 only if no test
# failed.
#
# Env: WORKDIR=/var/tmp/rapt-siw-vm  cache (downloads, kernel, siw.ko)
#      SUITES="interop conformance foreign perf ib mpi dat"
#      KVER=6.1.0-NN-amd64          pin the guest kernel ABI (default: what
#                                   linux-image-amd64 depends on)
#      SKIP_APT=1                   no apt-get update/install
#      SMP=2 MEM=1G VM_TIMEOUT=2400 qemu settings (keep 2 vCPUs: the two
#                                   peers poll each other)
#      VM_PIN=0                     leave the vCPU threads to the host's
#                                   scheduler (default: vCPU i on the
#                                   i-th host CPU this script may use,
#                                   when there are enough)
#      CONF_ARGS="..."              extra rapt-conformance arguments
#                                   (--run AREA to narrow it down)
#      CONF_CONFIGS="1host 2host srv_tcp tcp_srv"  which conformance runs
#      CONF_ENV="RAPT_LOG_LEVEL=debug ..."  environment of those runs
#      IB_PARTS="info pdata conf rtu foreign perf demo"  suite ib's parts
#      VERBOSE=1                    show both peers' logs of passing tests too
#      VM_LOG=FILE                  the console log (default WORKDIR/console.log)
#      VM_SHELL=1                   a shell on the console after the tests
#      VM_SCRIPT=FILE               a suite of your own, sourced like the
#                                   others when SUITES names "script"
#      VM_WITH="dat mpi"            put these suites' files in the image
#                                   even when they do not run (for a
#                                   VM_SCRIPT)
#      VM_EXTRA_BINS="/usr/bin/strace"  more programs, with their
#                                   libraries (for a VM_SCRIPT)
#      VM_CPU=max                   qemu's -cpu (default max; max,la57=off
#                                   for a sanitizer build, see below)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORKDIR=${WORKDIR:-/var/tmp/rapt-siw-vm}
SMP=${SMP:-2}
MEM=${MEM:-1G}
VM_TIMEOUT=${VM_TIMEOUT:-2400}
SUITES=${SUITES:-interop conformance foreign perf ib mpi dat}
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
# One run per WORKDIR at a time: runs share its cache, initramfs and
# console log, and two TCG VMs on a small host starve each other.
exec 9> "$WORKDIR/.lock"
if ! flock -n 9; then
	say "waiting for the run-vm.sh already using $WORKDIR"
	flock 9
fi

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

PKGS=(qemu-system-x86 busybox-static cpio kmod xz-utils iproute2 procps util-linux
      libibverbs-dev librdmacm-dev ibverbs-providers ibverbs-utils
      rdmacm-utils perftest
      nftables libcunit1 gcc make libc6-dev openmpi-bin dapl2-utils
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
# What the VM loads (modinfo depends): ib_core ib_cm iw_cm rdma_cm (needs
# configfs) rdma_ucm ib_uverbs, siw (needs libcrc32c and a crc32c),
# rdma_rxe (needs the UDP tunnels and a crc32 for its ICRC), veth,
# nf_tables (the lost RTU).
m=./lib/modules/$KVER
KFILES=("./boot/vmlinuz-$KVER" "$m/modules.builtin*" "$m/modules.order"
	"$m/kernel/drivers/infiniband/core/*" "$m/kernel/drivers/net/veth.ko"
	"$m/kernel/drivers/infiniband/sw/rxe/*"
	"$m/kernel/net/ipv4/udp_tunnel.ko" "$m/kernel/net/ipv6/ip6_udp_tunnel.ko"
	"$m/kernel/net/netfilter/nf_tables.ko"
	"$m/kernel/net/netfilter/nfnetlink.ko"
	"$m/kernel/fs/configfs/*" "$m/kernel/lib/libcrc32c.ko"
	"$m/kernel/net/ipv4/inet_diag.ko" "$m/kernel/net/ipv4/tcp_diag.ko"
	"$m/kernel/crypto/crc32c_generic.ko" "$m/kernel/crypto/crc32_generic.ko")
# One unpacked tree per module set: runs with another set (an older
# checkout) share $WORKDIR without unpacking again each time.
KDIR=$WORKDIR/kernel-$KVER-$(echo "${KFILES[*]}" | md5sum | cut -c1-8)
MODDIR=$KDIR/lib/modules/$KVER
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
PROVS="librapt-tcp-pv2 librapt-iwarp-pv2 librapt-ib-pv2"
PROGS="tests/interop/iw_peer tests/interop/rapt_iw_peer
       tests/interop/rapt_cm_peer tests/interop/cm_pdata_limits
       tests/interop/psp_any_port conformance/rapt-conformance tools/rapt_info tools/rapt_perf
       examples/rapt_server examples/rapt_client"
# shellcheck disable=SC2086
make -s -C "$BUILD" -j"$SMP" librapt.la $(printf '%s.la ' $PROVS) $PROGS \
	> make.log 2>&1 ||
	{ tail -20 make.log; die "cannot build rapt's VM programs in $BUILD" \
		"(was it configured before libibverbs-dev, librdmacm-dev and" \
		"libcunit1-dev were installed? then re-run configure)"; }
say "rapt programs built ($(secs "$t")s)"
# libtool keeps the real program in .libs and a wrapper script outside.
real_prog() {
	local d=$BUILD/$(dirname "$1") n f
	n=$(basename "$1")
	for f in "$d/.libs/$n" "$d/.libs/lt-$n" "$d/$n"; do
		if [ -f "$f" ] && head -c 4 "$f" | grep -q ELF; then
			echo "$f"
			return
		fi
	done
	die "no ELF program $n under $d"
}

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
# image_has SUITE: the image carries SUITE's files (it runs, or VM_WITH)
image_has() {
	[[ " $SUITES ${VM_WITH:-} " == *" $1 "* ]]
}
# rapt's programs (the libtool wrappers' ELF files, under their names).
for p in $PROGS; do
	with_libs "$(real_prog "$p")"
	n=$(basename "$p")
	[ -e "$ROOT/usr/bin/$n" ] || mv "$ROOT/usr/bin/lt-$n" "$ROOT/usr/bin/$n"
done
with_libs /usr/bin/ip /usr/bin/rdma /usr/bin/nsenter /usr/sbin/nft \
	/usr/bin/taskset "$BUILD/.libs/librapt.so.1"
# rdma-core's own programs: the foreign peers and the perftest reference.
for p in rping rdma_server rdma_client ucmatose ibv_devices \
	 ib_send_lat ib_read_lat ib_write_bw; do
	f=$(command -v "$p") || die "$p is missing (rdmacm-utils, perftest," \
		"ibverbs-utils)"
	with_libs "$f"
done
# dlopen()ed, so invisible to ldd: rapt's providers, the siw and rxe verbs
# providers, and libgcc_s (glibc loads it for pthread_exit/cancel).
for p in $PROVS; do
	with_libs "$BUILD/.libs/$p.so"
	place "$BUILD/.libs/$p.so" "/opt/rapt/lib/$p.so"
	rm -f "$ROOT$ARCH_LIB/$p.so"
done
# Open MPI and libfabric for the mpi suite, with rapt's libfabric
# provider and its check program: every file of their packages (Open MPI
# dlopen()s its components, finds its help texts and configuration by
# their installed paths).  Without them the suite says why it skips.
MPI_PKGS="openmpi-bin openmpi-common libopenmpi3 libfabric1 libpmix2
	  libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7"
if image_has mpi &&
   grep -qF 'S["HAVE_LIBFABRIC_TRUE"]=""' "$BUILD/config.status" &&
   grep -qF 'S["HAVE_MPI_TRUE"]=""' "$BUILD/config.status" &&
   make -s -C "$BUILD" compat/libfabric/librapt-fi.la \
	compat/libfabric/tests/mpi_check >> make.log 2>&1 &&
   command -v orterun >/dev/null; then
	# shellcheck disable=SC2086
	for f in $(dpkg -L $MPI_PKGS 2>/dev/null |
		   grep -v -E '^/usr/share/(doc|man|lintian)/'); do
		[ -f "$f" ] && [ ! -L "$f" ] || continue
		if head -c 4 "$f" | grep -q ELF; then
			with_libs "$f"
		else
			place "$f"
		fi
	done
	# the names the packages' symlinks and alternatives give them
	ln -sf orterun "$ROOT/usr/bin/mpirun"
	for l in $(dpkg -L $MPI_PKGS 2>/dev/null | grep '\.so\.[0-9]*$'); do
		[ -L "$l" ] && [ ! -e "$ROOT$l" ] &&
			cp -P "$l" "$ROOT$l"
	done
	with_libs "$(real_prog compat/libfabric/tests/mpi_check)"
	with_libs "$BUILD/compat/libfabric/.libs/librapt-fi.so"
	place "$BUILD/compat/libfabric/.libs/librapt-fi.so" \
		/opt/rapt/fi/librapt-fi.so
	rm -f "$ROOT$ARCH_LIB/librapt-fi.so"
	mkdir -p "$ROOT/etc/openmpi"
	cp -r /etc/openmpi/. "$ROOT/etc/openmpi/" 2>/dev/null || true
fi
# uDAPL's test programs and its rdma_cm provider (dlopen()ed by libdat2),
# and rapt's DAT provider with rapt-dat2-conf, for the dat suite.
if image_has dat &&
   grep -qF 'S["HAVE_DAT2_TRUE"]=""' "$BUILD/config.status" &&
   make -s -C "$BUILD" compat/dat2/librapt-dat2.la \
	compat/dat2/rapt-dat2-conf >> make.log 2>&1 &&
   command -v dapltest >/dev/null && [ -f "$ARCH_LIB/libdaplofa.so.2" ]; then
	with_libs "$(command -v dapltest)" "$(command -v dtest)" \
		"$(command -v dtestcm)" "$(command -v dtestsrq)" \
		"$ARCH_LIB/libdaplofa.so.2" \
		"$(real_prog compat/dat2/rapt-dat2-conf)" \
		"$BUILD/compat/dat2/.libs/librapt-dat2.so"
	place "$BUILD/compat/dat2/.libs/librapt-dat2.so" \
		/opt/rapt/dat2/librapt-dat2.so
	rm -f "$ROOT$ARCH_LIB/librapt-dat2.so"
fi
for f in ${VM_EXTRA_BINS:-}; do
	with_libs "$f"
done
with_libs "$ARCH_LIB/libibverbs/libsiw-rdmav34.so" \
	"$ARCH_LIB/libibverbs/librxe-rdmav34.so" "$ARCH_LIB/libgcc_s.so.1"
cp /etc/libibverbs.d/siw.driver /etc/libibverbs.d/rxe.driver \
	"$ROOT/etc/libibverbs.d/"
echo "root:x:0:0:root:/root:/bin/sh" > "$ROOT/etc/passwd"
echo "root:x:0:" > "$ROOT/etc/group"

# Modules: the closure of what /init loads, per the image's modules.dep.
depmod -b "$KDIR" "$KVER"
kos=
for m in crc32c_generic crc32_generic ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm siw \
	 rdma_rxe veth tcp_diag nf_tables; do
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

install -m 0755 "$HERE/init.sh" "$ROOT/init"
mkdir -p "$ROOT/opt/rapt/vm"
install -m 0644 "$HERE"/suite-*.sh "$HERE"/lib-suites.sh "$ROOT/opt/rapt/vm/"
[ -z "${VM_SCRIPT:-}" ] || install -m 0644 "$VM_SCRIPT" "$ROOT/opt/rapt/vm/suite-script.sh"
INITRD=$WORKDIR/initrd.cpio.gz
(cd "$ROOT" && find . | cpio -o -H newc --quiet | gzip -1) > "$INITRD"
say "initramfs $(du -h "$INITRD" | cut -f1) built ($(secs "$t")s)"

# ---------------------------------------------------------------------------
# 6. boot and relay
# ---------------------------------------------------------------------------
APPEND="console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init"
# The TSC as clock (TCG emulates it cheaply): with hpet every
# clock_gettime() is a syscall and an emulated MMIO read, which weighs on
# a timed loop that reads the clock (rapt_perf) and not on one that reads
# the TSC itself (perftest).
APPEND+=" clocksource=tsc tsc=reliable"
APPEND+=" raptvm.suites=$(echo "$SUITES" | tr ' ' ',')"
[ -n "${CONF_ARGS:-}" ] && APPEND+=" raptvm.conf_args=$(echo "$CONF_ARGS" | tr ' ' ',')"
[ -n "${CONF_ENV:-}" ] && APPEND+=" raptvm.conf_env=$(echo "$CONF_ENV" | tr ' ' ',')"
[ -n "${CONF_CONFIGS:-}" ] && APPEND+=" raptvm.conf_configs=$(echo "$CONF_CONFIGS" | tr ' ' ',')"
[ -n "${IB_PARTS:-}" ] && APPEND+=" raptvm.ib_parts=$(echo "$IB_PARTS" | tr ' ' ',')"
[ "${VM_SHELL:-0}" = 1 ] && APPEND+=" raptvm.shell=1"
[ "${VERBOSE:-0}" = 1 ] && APPEND+=" raptvm.verbose=1"
LOG=${VM_LOG:-$WORKDIR/console.log}
: > "$LOG"
relay() {
	local line
	while IFS= read -r line; do
		line=${line%$'\r'}
		case "$line" in ?*RAPTVM*) line="RAPTVM${line#*RAPTVM}" ;; esac
		printf '%s\n' "$line" >> "$LOG"
		case "$line" in
		RAPTVM*|"    "*|*"Kernel panic"*|*"BUG:"*|*"Oops"*) echo "$line" ;;
		esac
	done
}
# Each vCPU thread on a host CPU of its own, vCPU i on the i-th CPU this
# script may use, for the whole run.  Left to the host's scheduler, the
# two swapped places between one program and the next, and the guest's
# client ran about 1.6 times slower with its vCPU on the other host CPU: a
# perf pair's two programs then saw different machines
# (docs/performance.md, "Where the VM's slow runs came from").  Threads
# named by debug-threads=on.
VM_NAME=raptvm-$$
# The QEMU process of this run, once all its vCPU threads exist.
vm_qemu_pid() {
	local pid
	for pid in $(pgrep -x qemu-system-x86); do
		tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null |
			grep -q "guest=$VM_NAME," || continue
		grep -qs "CPU $((SMP - 1))/TCG" "/proc/$pid"/task/*/comm &&
			echo "$pid"
	done
}
# The CPUs this script may run on (its affinity, as nproc counts them),
# one per line: "0-1,4" gives 0, 1 and 4.
allowed_cpus() {
	local part
	for part in $(awk '/^Cpus_allowed_list:/ {
			gsub(",", " ", $2); print $2 }' /proc/self/status); do
		case "$part" in
		*-*) seq "${part%-*}" "${part#*-}" ;;
		*) echo "$part" ;;
		esac
	done
}
pin_vcpus() {
	local i q="" task comm cpus
	mapfile -t cpus < <(allowed_cpus)
	for i in $(seq 300); do
		q=$(vm_qemu_pid) || true
		[ -n "$q" ] && break
		sleep 0.1
	done
	[ -n "$q" ] || { say "vCPU threads not found: left unpinned"; return; }
	for task in "/proc/$q"/task/*; do
		comm=$(cat "$task/comm" 2>/dev/null) || continue
		case "$comm" in
		"CPU "*/TCG)
			i=${comm#CPU }
			i=${i%/TCG}
			taskset -p -c "${cpus[$i]}" "${task##*/}" > /dev/null ||
				say "could not pin vCPU $i"
			;;
		esac
	done
	say "vCPU i pinned to host CPU ${cpus[*]:0:$SMP} in turn"
}
if [ "$(nproc)" -ge "$SMP" ] && [ "${VM_PIN:-1}" = 1 ]; then
	pin_vcpus &
fi
# A sanitizer build gets a CPU without 5-level paging, as nearly every
# real x86 machine is: TSan and ASan lay out their shadow for 47-bit
# addresses, and with 5-level paging a stray MAP_FIXED of theirs far above
# that succeeds and wipes the process without a word (TSan re-mapped
# 540 TB over its own code in the iwarp provider's engine thread,
# docs/iwarp-provider.md) where 4-level paging fails it with TSan's own
# message.  Release builds keep -cpu max, on which the perf pairs were
# measured.
if [ -z "${VM_CPU:-}" ]; then
	VM_CPU=max
	ldd "$BUILD/.libs/librapt.so" 2>/dev/null | grep -Eq 'lib(a|t)san' &&
		VM_CPU=max,la57=off
fi
say "booting qemu-system-x86_64 -accel tcg -cpu $VM_CPU -smp $SMP -m $MEM"
t=$(date +%s.%N)
set +e
timeout --foreground -k 10 "$VM_TIMEOUT" \
	qemu-system-x86_64 -accel tcg -cpu "$VM_CPU" -smp "$SMP" -m "$MEM" \
		-name "guest=$VM_NAME,debug-threads=on" \
		-nographic -no-reboot -nodefaults -serial stdio -nic none \
		-kernel "$KDIR/boot/vmlinuz-$KVER" -initrd "$INITRD" \
		-append "$APPEND" < /dev/null 2>&1 | relay
qrc=${PIPESTATUS[0]}
set -e
say "VM exited (rc=$qrc) after $(secs "$t")s"

pass=$(grep -c '^RAPTVM PASS' "$LOG" || true)
fail=$(grep -c '^RAPTVM FAIL' "$LOG" || true)
skip=$(grep -c '^RAPTVM SKIP' "$LOG" || true)
echo "==== rapt VM suite: $SUITES (guest $KVER, TCG) ===="
sed -n 's/^RAPTVM \(PASS\|FAIL\|SKIP\) \([^ ]*\) \(.*\)/\1: \2 \3/p' "$LOG"
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "FAIL: vm_timeout (no poweroff within ${VM_TIMEOUT}s; see $LOG)"
	fail=$((fail + 1))
elif ! grep -q '^RAPTVM SUMMARY' "$LOG"; then
	echo "FAIL: vm_incomplete (no summary line; see $LOG)"
	fail=$((fail + 1))
fi
# Why each failure failed, next to the summary (the log scrolls by): its
# failing cases' lines and the last lines of its output.
for name in $(sed -n 's/^RAPTVM FAIL \([^ ]*\) .*/\1/p' "$LOG"); do
	echo "---- $name:"
	grep -F "    [$name" "$LOG" | grep -E '\] +(FAIL|ERROR)' | head -n 10
	grep -F "    [$name" "$LOG" | tail -n 8
done
say "done"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
