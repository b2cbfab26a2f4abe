# SPDX-License-Identifier: MIT
# A VM_SCRIPT (tests/vm/run-vm.sh): the user-space instructions of the
# clients of rapt_perf lat_read, ib_read_lat, rapt_perf lat_send
# --unsignaled and ib_send_lat on rxe, under callgrind (docs/performance.md,
# "Where the remaining rxe gap is").  Each profile comes back on the console
# as one base64 line.  Run as root from the source tree:
#
#   SUITES=script VM_SCRIPT=tests/vm/scripts/callgrind-clients.sh \
#   VM_EXTRA_BINS="/usr/bin/valgrind.bin \
#       /usr/libexec/valgrind/callgrind-amd64-linux \
#       /usr/libexec/valgrind/vgpreload_core-amd64-linux.so \
#       /usr/libexec/valgrind/default.supp /usr/bin/gzip /usr/bin/base64" \
#       tests/vm/run-vm.sh build-rel > vm.log
#   for f in rapt pt rapts pts; do
#       grep "RAPTVM INFO CGDATA $f " vm.log | awk '{print $5}' |
#           base64 -d | gunzip > cg.$f
#   done
#   callgrind_annotate --inclusive=yes --tree=calling cg.rapt
#
# (Debian's /usr/bin/valgrind is a wrapper script: the image takes
# valgrind.bin.)
#
# shellcheck shell=sh
PERF_IN=
PERF_READY=cmport
CG="taskset -c 0 valgrind.bin --tool=callgrind"
perf_run cg_rapt "taskset -c 1 rapt_perf -S -p ib:rxe2 --json" \
	"$CG --callgrind-out-file=/tmp/cg.rapt rapt_perf -c $RXE_WIRE_PEER_ADDR -p ib:rxe1 --json -t lat_read -s 8 -n 2000" \
	/tmp/cg_rapt.out -P
perf_run cg_pt "taskset -c 1 ib_read_lat -R -d rxe2 -s 8 -n 2000" \
	"$CG --callgrind-out-file=/tmp/cg.pt ib_read_lat -R -d rxe1 $RXE_WIRE_PEER_ADDR -s 8 -n 2000" \
	/tmp/cg_pt.out -p
perf_run cg_rapts "taskset -c 1 rapt_perf -S -p ib:rxe2 --json" \
	"$CG --callgrind-out-file=/tmp/cg.rapts rapt_perf -c $RXE_WIRE_PEER_ADDR -p ib:rxe1 --json -t lat_send --unsignaled -s 8 -n 2000" \
	/tmp/cg_rapts.out -P
perf_run cg_pts "taskset -c 1 ib_send_lat -R -d rxe2 -s 8 -n 2000" \
	"$CG --callgrind-out-file=/tmp/cg.pts ib_send_lat -R -d rxe1 $RXE_WIRE_PEER_ADDR -s 8 -n 2000" \
	/tmp/cg_pts.out -p
for f in rapt pt rapts pts; do
	[ -f /tmp/cg.$f ] && info "CGDATA $f $(gzip -9 < /tmp/cg.$f | base64 -w0)"
done
