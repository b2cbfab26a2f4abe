# SPDX-License-Identifier: MIT
# A VM_SCRIPT (tests/vm/run-vm.sh): the read-latency pairs alone, seven
# pinned rounds each, rapt_perf against ib_read_lat on siw and on rxe,
# with nothing else in the VM (docs/performance.md, "The verbs providers
# against perftest, pinned").  Run as root from the source tree:
#
#   SUITES=script VM_SCRIPT=tests/vm/scripts/read-pairs.sh \
#       tests/vm/run-vm.sh build-rel
#
# It prints "RAPTVM INFO <pair> rounds" and "RAPTVM PERF" lines, as the
# perf suites do.
#
# shellcheck shell=sh
PERF_ROUNDS=7
PERF_IN=$IN_PEER
PERF_RS="rapt_perf -S -p iwarp:siw1 --json"
PERF_RC="rapt_perf -c $SIW_ADDR -p iwarp:siw0 --json"
PERF_PT_S="-d siw1"
PERF_PT_C="-d siw0 $SIW_ADDR"
PERF_READY=peerport
perf_pair_lat siw_read lat_read ib_read_lat 0
PERF_IN=
PERF_RS="rapt_perf -S -p ib:rxe2 --json"
PERF_RC="rapt_perf -c $RXE_WIRE_PEER_ADDR -p ib:rxe1 --json"
PERF_PT_S="-d rxe2"
PERF_PT_C="-d rxe1 $RXE_WIRE_PEER_ADDR"
PERF_READY=cmport
perf_pair_lat rxe_read lat_read ib_read_lat 0
