#!/bin/bash
# Install what building and testing rapt needs on Debian 12, if missing.
# Runs apt-get only when a package is absent; needs root (or sudo) then.
set -euo pipefail

pkgs=(build-essential autoconf automake libtool pkg-config
      libcunit1-dev uuid-dev libibverbs-dev librdmacm-dev
      tshark libfabric-dev libfabric-bin openmpi-bin libopenmpi-dev hpcc valgrind iproute2 nftables util-linux python3
      libdapl-dev dapl2-utils
      pandoc debhelper lintian man-db clang)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
