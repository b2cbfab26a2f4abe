# SPDX-License-Identifier: MIT
# A VM_SCRIPT (tests/vm/run-vm.sh): the user-space instructions of the
# clients of rapt_perf lat_read, ib_read_lat, rapt_perf lat_send
# and ib_send_lat on rxe, under callgrind (docs/performance.md,
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
perf_on_rxe
CG="taskset -c 0 valgrind.bin --tool=callgrind"
# cg NAME "SERVER" "CLIENT ARGS" PORTOPT: the client under callgrind, its
# profile in /tmp/cg.NAME
cg() {
	perf_run cg_$1 "taskset -c 1 $2" \
		"$CG --callgrind-out-file=/tmp/cg.$1 $3 -s 8 -n 2000" \
		/tmp/cg_$1.out $4
}
cg rapt "$PERF_RS" "$PERF_RC -t lat_read" -P
cg pt "ib_read_lat -R $PERF_PT_S -s 8 -n 2000" "ib_read_lat -R $PERF_PT_C" -p
cg rapts "$PERF_RS" "$PERF_RC -t lat_send" -P
cg pts "ib_send_lat -R $PERF_PT_S -s 8 -n 2000" "ib_send_lat -R $PERF_PT_C" -p
for f in rapt pt rapts pts; do
	[ -f /tmp/cg.$f ] && info "CGDATA $f $(gzip -9 < /tmp/cg.$f | base64 -w0)"
done
