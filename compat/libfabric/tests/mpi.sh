#!/bin/sh
# SPDX-License-Identifier: MIT
# Open MPI over "rapt;ofi_rxm" on rapt's tcp provider, 2 ranks on this
# host (tcp:lo): mpi_check's ping-pong, allreduce and alltoall, 1 B to
# 4 MiB, every byte checked.  Skips (77) only when libfabric's or Open
# MPI's development files were absent at configure, or mpirun is missing.
. "$(dirname "$0")/mpi_lib.sh"
mpi_prereq
FI_RAPT_IA=tcp:lo
export FI_RAPT_IA
out=$(mktemp)
trap 'rm -f "$out"' EXIT
mpi_run "$out" --oversubscribe -x FI_RAPT_IA "$mpi_prog"
mpi_verdict "$out" $? tcp:lo
