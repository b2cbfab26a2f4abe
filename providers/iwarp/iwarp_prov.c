/* SPDX-License-Identifier: MIT */
/*
 * iwarp provider: the descriptor.  Devices are the ibverbs devices whose
 * transport is iWARP; the IA name is "iwarp:<device>" ("iwarp:siw0").
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "iwarp.h"

#define IWARP_VERSION	RAPT_VERSION_PACK(1, 0, 0)
#define IWARP_RANK	10	/* an RDMA device: ahead of software */

/* siw's vendor id ("bmt"): its verbs provider reports no invalidated
 * rkey in receive completions (struct ibv_wc.wc_flags is always 0). */
#define IWARP_SIW_VENDOR	0x626d74

/*
 * Not offered, and why (docs/iwarp-provider.md):
 *  - RAPT_CAP_SOLICITED: verbs sends solicited events but reports none
 *    on receive (struct ibv_wc has no such flag), so a receive could not
 *    carry RAPT_DTO_SOLICITED.
 *  - RAPT_CAP_DISCONNECT_PDATA: iWARP has no disconnect private data.
 *  - RAPT_CAP_SEND_INVALIDATE where the device reports no invalidated
 *    rkey on receive (siw).
 */
#define IWARP_CAPS (RAPT_CAP_RDMA_WRITE | RAPT_CAP_RDMA_READ |		\
		    RAPT_CAP_INLINE | RAPT_CAP_FENCE |			\
		    RAPT_CAP_SEND_INVALIDATE | RAPT_CAP_EVD_FD |	\
		    RAPT_CAP_PASSIVE_SEND_FIRST | RAPT_CAP_RAW_PDATA |	\
		    RAPT_CAP_MULTI_EVD_STREAMS | RAPT_CAP_ZERO_LENGTH)

static uint64_t iwarp_ia_caps(const struct vb_ia *ia)
{
	uint64_t caps = IWARP_CAPS;

	if (ia->dattr.vendor_id == IWARP_SIW_VENDOR)
		caps &= ~(uint64_t)RAPT_CAP_SEND_INVALIDATE;
	return caps;
}

/* iWARP's INIT transition needs only the state and the access rights
 * (rdma_cm's own cma_iw init attributes). */
static int iwarp_qp_init(struct vb_ep *ep)
{
	struct ibv_qp_attr qa;

	memset(&qa, 0, sizeof(qa));
	return vb_qp_to_init(ep, &qa, 0);
}

/* What rapt_info says about a usable device: the RTR mode in force. */
void iwarp_device_note(const char *dev, const struct sockaddr *addr,
		       char *buf, size_t len)
{
	char p[128];
	FILE *f;
	int c = -1;

	f = fopen("/sys/module/siw/parameters/peer_to_peer", "rec");
	if (f) {
		c = fgetc(f);
		fclose(f);
	}
	if (!strncmp(dev, "siw", 3) && c < 0)
		snprintf(p, sizeof(p), "siw has no peer_to_peer parameter: it grants MPA peer-to-peer RTR as responder, never asks for it");
	else if (c >= 0)
		snprintf(p, sizeof(p), "siw peer_to_peer=%c", c);
	else
		snprintf(p, sizeof(p), "the driver's MPA peer-to-peer RTR");
	snprintf(buf, len,
		 "RTR: %s; rapt peers add their own RTR (an RDMA Write after ESTABLISHED), so the passive side may send first",
		 p);
}

static const struct vb_transport iwarp_transport = {
	.name = IWARP_NAME,
	.version = IWARP_VERSION,
	.description = "iWARP RNICs and kernel soft-iWARP (siw) through rdma-core",
	.kind = "iWARP",
	.ibv_transport = IBV_TRANSPORT_IWARP,
	.transport = RAPT_TRANSPORT_IWARP,
	.rank = IWARP_RANK,
	.caps = IWARP_CAPS,
	.pdata_connect = IWARP_MPA_PDATA - IWARP_RTR_OFFER_LEN,
	.pdata_accept = IWARP_MPA_PDATA - IWARP_RTR_ASK_LEN,
	.pdata_reject = IWARP_MPA_PDATA,
	.tcp_wire = true,
	.ia_caps = iwarp_ia_caps,
	.qp_init = iwarp_qp_init,
	.connect_pdata = iwarp_connect_pdata,
	.request = iwarp_request,
	.accept_pdata = iwarp_accept_pdata,
	.active_up = iwarp_active_up,
	.passive_up = iwarp_passive_up,
	.device_note = iwarp_device_note,
};

const struct vb_transport *const vb_tp = &iwarp_transport;
