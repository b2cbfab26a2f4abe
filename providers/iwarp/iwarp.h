/* SPDX-License-Identifier: MIT */
/*
 * iwarp provider: rapt on iWARP devices through rdma-core (iWARP RNICs
 * and the Linux kernel's soft-iWARP, siw).  Everything it shares with the
 * ib provider is the verbs layer (providers/verbs/); here is only what
 * differs on iWARP:
 *
 *   iwarp_prov.c  the descriptor, the transport's limits and caps, the QP
 *                 INIT transition, what rapt_info says about a device
 *   iwarp_rtr.c   the RTR rapt sends itself, so that ESTABLISHED on the
 *                 passive side means "may send" although the kernel
 *                 (siw) negotiates no MPA peer-to-peer RTR as initiator
 */
#ifndef RAPT_PROVIDERS_IWARP_IWARP_H
#define RAPT_PROVIDERS_IWARP_IWARP_H

#include "../verbs/verbs.h"

#define IWARP_NAME "iwarp"

/*
 * Private data through rdma_cm on iWARP, measured on siw (tests/vm):
 * 251 bytes on connect, accept and reject.  rdma_cm carries 255 (its
 * length is a byte), MPA v2 takes 4 for IRD/ORD, and Linux 6.1's siw adds
 * those 4 to the length in a byte too: 252 bytes go out with a frame
 * length of 0, which its peer refuses.
 */
#define IWARP_MPA_PDATA		251

/* The provider's own bytes after rapt's framed private data. */
#define IWARP_RTR_OFFER_LEN	3	/* connect: "I send an RTR" */
#define IWARP_RTR_ASK_LEN	15	/* accept: "write it here" */

size_t iwarp_connect_pdata(struct vb_ep *ep, uint8_t *buf, size_t len);
void iwarp_request(struct vb_req *req);
size_t iwarp_accept_pdata(struct vb_ep *ep, const struct vb_req *req,
			  uint8_t *buf, size_t len);
void iwarp_active_up(struct vb_ep *ep, const uint8_t *pdata, size_t *len);
bool iwarp_passive_up(struct vb_ep *ep, const struct rapt_event *ev);
void iwarp_device_note(const char *dev, const struct sockaddr *addr,
		       char *buf, size_t len);

#endif /* RAPT_PROVIDERS_IWARP_IWARP_H */
