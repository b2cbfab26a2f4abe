# SPDX-License-Identifier: MIT
# VM suite "foreign" (sourced by tests/vm/init.sh): rdma-core's own
# rdma_cm programs (rdmacm-utils), which no one here wrote, against
# rapt_cm_peer, which speaks their protocols through rapt, on the iwarp
# provider (siw0) and on the tcp provider (veth0); the rdma-core program
# runs on siw1 in netns peer.  Both directions of each:
#
#   rping           rping -s/-c -V: RDMA read and write ping-pong; the
#                   client side checks the echo byte for byte
#   rdma            rdma_server / rdma_client: a 16-byte Send each way
#   ucmatose        ucmatose: 10 messages of 100 bytes each way
#
# busybox ash: "local" exists; commands in variables are split on purpose.
# shellcheck shell=sh disable=SC3043,SC2086

FOREIGN_PORT=7600
CM_PEER=rapt_cm_peer

# foreign_pair IA TAG: the six tests of one rapt IA
foreign_pair() {
	local ia=$1 tag=$2 p

	p=$((FOREIGN_PORT += 10))
	srv_cli rping_srv_rapt_cli_$tag 60 peerport:$p \
		"$IN_PEER rping -s -a $SIW_ADDR -p $p -v" \
		"$CM_PEER -i $ia -m rping -c $SIW_ADDR -p $p -C 10"
	srv_cli rapt_srv_rping_cli_$tag 60 listening \
		"$CM_PEER -i $ia -m rping -s -p $((p + 1)) -C 10" \
		"$IN_PEER rping -c -a $RAPT_ADDR -p $((p + 1)) -C 10 -V -v"
	srv_cli rdma_server_rapt_cli_$tag 60 peerport:$((p + 2)) \
		"$IN_PEER rdma_server -p $((p + 2))" \
		"$CM_PEER -i $ia -m rdma -c $SIW_ADDR -p $((p + 2))"
	srv_cli rapt_srv_rdma_client_$tag 60 listening \
		"$CM_PEER -i $ia -m rdma -s -p $((p + 3))" \
		"$IN_PEER rdma_client -s $RAPT_ADDR -p $((p + 3))"
	srv_cli ucmatose_srv_rapt_cli_$tag 60 peerport:$((p + 4)) \
		"$IN_PEER ucmatose -p $((p + 4))" \
		"$CM_PEER -i $ia -m ucmatose -c $SIW_ADDR -p $((p + 4))"
	srv_cli rapt_srv_ucmatose_cli_$tag 60 listening \
		"$CM_PEER -i $ia -m ucmatose -s -p $((p + 5))" \
		"$IN_PEER ucmatose -s $RAPT_ADDR -p $((p + 5))"
}

foreign_pair iwarp:siw0 iwarp
foreign_pair tcp:veth0 tcp
