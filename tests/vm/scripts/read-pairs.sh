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
PERF_LAT_ROUNDS=7
perf_on_siw
perf_pair_lat siw_read lat_read ib_read_lat 0
perf_on_rxe
perf_pair_lat rxe_read lat_read ib_read_lat 0
