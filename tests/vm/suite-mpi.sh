# SPDX-License-Identifier: MIT
# VM suite "mpi" (sourced by tests/vm/init.sh): Open MPI 4.1, unchanged,
# over "rapt;ofi_rxm": libfabric's rxm on rapt's libfabric provider
# (compat/libfabric), which runs on rapt's verbs providers here.  Two
# ranks on this host, each on the same device, run mpi_check: ping-pong,
# allreduce and alltoall from 1 B to 4 MiB, every element checked (the
# same program as make check's mpi.sh on tcp:lo).
#
#   mpi_iwarp   FI_RAPT_IA=iwarp:siw0 (soft-iWARP)
#   mpi_ib      FI_RAPT_IA=ib:rxe0 (soft-RoCE)
#
# Each passes only if mpirun succeeds, mpi_check prints its PASS line,
# and both ranks' mtl log names the rapt IA they ran on (with its port:
# the name of the domain rapt's libfabric provider offers).
#
# shellcheck shell=sh

mpi_pair() {	# mpi_pair NAME IA RAPT_PROVIDER DOMAIN
	local name=$1 ia=$2 prov=$3 dom=$4 t0 rc=0 n log=/tmp/$1.log
	t0=$(now)
	if [ ! -x /usr/bin/mpi_check ] || [ ! -x /usr/bin/mpirun ] ||
	   [ ! -f /opt/rapt/fi/librapt-fi.so ]; then
		result "$name" 77 "$t0" "the build has no libfabric provider or mpi_check, or the host no Open MPI (libfabric-dev, libopenmpi-dev, openmpi-bin)"
		return
	fi
	timeout 600 env FI_PROVIDER_PATH=/opt/rapt/fi FI_RAPT_IA="$ia" \
		RAPT_PROVIDER="$prov" \
		mpirun --allow-run-as-root -np 2 --oversubscribe \
		--mca plm isolated \
		--mca pml cm --mca mtl ofi \
		--mca mtl_ofi_provider_include "rapt;ofi_rxm" \
		--mca mtl_base_verbose 10 \
		-x FI_PROVIDER_PATH -x FI_RAPT_IA -x RAPT_PROVIDER \
		-x RAPT_PROVIDER_PATH -x RAPT_CONF \
		/usr/bin/mpi_check > "$log" 2>&1 || rc=1
	n=$(grep -c "mtl:ofi:provider: $dom\$" "$log")
	[ "$n" = 2 ] || { rc=1; echo "    ($n of 2 ranks report $dom)"; }
	grep -q '^PASS: ping-pong, allreduce, alltoall' "$log" || rc=1
	if [ $rc != 0 ] || [ "$VERBOSE" = 1 ]; then
		show "$name" "$log"
	fi
	result "$name" $rc "$t0"
}

# Open MPI's shared-memory segments and session directories; ranks
# start as local children (plm isolated: there is no ssh here).
mkdir -p /dev/shm
mount -t tmpfs tmpfs /dev/shm 2>/dev/null
hostname rapt-vm 2>/dev/null
grep -q rapt-vm /etc/hosts 2>/dev/null ||
	echo "127.0.0.1 localhost rapt-vm" >> /etc/hosts

mpi_pair mpi_iwarp iwarp:siw0 iwarp iwarp:siw0:1
mpi_pair mpi_ib ib:rxe0 ib ib:rxe0:1
