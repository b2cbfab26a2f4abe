# SPDX-License-Identifier: MIT
# A VM_SCRIPT (tests/vm/run-vm.sh): the latency pairs alone, seven pinned
# rounds each, on siw and on rxe, with nothing else in the VM
# (docs/performance.md, "Send latency as ib_send_lat measures it"):
#
#   send     rapt_perf lat_send              : ib_send_lat  (the suites' pair)
#   send_uns rapt_perf lat_send --unsignaled : ib_send_lat  (for comparison)
#   read     rapt_perf lat_read              : ib_read_lat
#
# Run as root from the source tree:
#
#   SUITES=script VM_SCRIPT=$PWD/tests/vm/scripts/lat-pairs.sh \
#       tests/vm/run-vm.sh build-rel
#
# It prints "RAPTVM INFO <pair> rounds" and "RAPTVM PERF" lines, as the
# perf suites do.
#
# shellcheck shell=sh
PERF_LAT_ROUNDS=7
perf_on_siw
perf_pair_lat siw_send lat_send ib_send_lat 1
perf_pair_lat siw_send_uns "lat_send --unsignaled" ib_send_lat 1
perf_pair_lat siw_read lat_read ib_read_lat 0
perf_on_rxe
perf_pair_lat rxe_send lat_send ib_send_lat 1
perf_pair_lat rxe_send_uns "lat_send --unsignaled" ib_send_lat 1
perf_pair_lat rxe_read lat_read ib_read_lat 0
