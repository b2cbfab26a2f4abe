# SPDX-License-Identifier: MIT
# VM suite "foreign" (sourced by tests/vm/init.sh): rdma-core's own
# rdma_cm programs (rdmacm-utils), which no one here wrote, against
# rapt_cm_peer, which speaks their protocols through rapt, on the iwarp
# provider (siw0) and on the tcp provider (veth0); the rdma-core program
# runs on siw1 in netns peer.  Both directions of each
# (foreign_pair, tests/vm/lib-suites.sh):
#
#   rping           rping -s/-c -V: RDMA read and write ping-pong; the
#                   client side checks the echo byte for byte
#   rdma            rdma_server / rdma_client: a 16-byte Send each way
#   ucmatose        ucmatose: 10 messages of 100 bytes each way
#
# The ib provider's foreign peers are in suite-ib.sh.
#
# shellcheck shell=sh

foreign_pair iwarp:siw0 iwarp "$IN_PEER" $SIW_ADDR $RAPT_ADDR peerport
foreign_pair tcp:veth0 tcp "$IN_PEER" $SIW_ADDR $RAPT_ADDR peerport
