/* SPDX-License-Identifier: MIT */
/*
 * iwarp provider: the RTR that rapt sends itself.
 *
 * rapt's rule is that ESTABLISHED on either side means that side may send
 * (docs/provider-guide.md).  On iWARP that takes MPA v2 peer-to-peer mode:
 * the initiator's zero-length RTR after the MPA Reply, and the responder
 * reporting ESTABLISHED only once it has come.  Linux 6.1's siw grants
 * peer-to-peer as responder but never asks for it as initiator (a
 * constant, not a module parameter): between two siw peers the passive
 * side hears "established" as soon as its Reply is out, and an FPDU it
 * sends then may reach the active side before that side has read the
 * Reply, which siw fails with -EPROTO.
 *
 * So rapt does the RTR one level up, between rapt peers that both say so
 * in their private data (after rapt's framed bytes, which the core
 * ignores past the header's length):
 *
 *   connect: "rW" 0x01                  I will send an RTR if you ask
 *   accept:  "rW" 0x02 rkey(4) addr(8)  ask: write it to this word
 *
 * The active side, when rdma_cm reports ESTABLISHED, posts an 8-byte RDMA
 * Write of a non-zero value to that word before reporting ESTABLISHED
 * (ahead of any consumer send); the passive side reports ESTABLISHED only
 * once the word is non-zero (checked by an engine timer, and by any
 * completion of the EP, which iWARP places after the Write).
 *
 * A rapt peer that asks for nothing is the tcp provider: it speaks MPA
 * itself and holds its sends until our first FPDU when we did not ask for
 * peer-to-peer, so the active side sends a zero-length RDMA Write.  A
 * foreign peer gets nothing: iWARP's own rule (the active side sends
 * first) is the application's there.
 */
#include "config.h"

#include <stdatomic.h>
#include <string.h>

#include "iwarp.h"

#define RTR_MAGIC0	0x72	/* 'r' */
#define RTR_MAGIC1	0x57	/* 'W' */
#define RTR_OFFER	0x01
#define RTR_ASK		0x02
#define RTR_VALUE	0x5254522d72617074ull	/* "RTR-rapt" */

static void put_be(uint8_t *p, uint64_t v, unsigned int n)
{
	while (n--) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

static uint64_t get_be(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

size_t iwarp_connect_pdata(struct vb_ep *ep, uint8_t *buf, size_t len)
{
	buf[len] = RTR_MAGIC0;
	buf[len + 1] = RTR_MAGIC1;
	buf[len + 2] = RTR_OFFER;
	return len + IWARP_RTR_OFFER_LEN;
}

void iwarp_request(struct vb_req *req)
{
	size_t f = req->foreign ? 0 :
		   rapt_prov_pdata_end(req->pdata, req->pdata_len);

	if (f && req->pdata_len == f + IWARP_RTR_OFFER_LEN &&
	    req->pdata[f] == RTR_MAGIC0 && req->pdata[f + 1] == RTR_MAGIC1 &&
	    req->pdata[f + 2] == RTR_OFFER) {
		req->peer_rtr = 1;
		req->pdata_len = (uint8_t)f;
	}
}

size_t iwarp_accept_pdata(struct vb_ep *ep, const struct vb_req *req,
			  uint8_t *buf, size_t len)
{
	if (!req->peer_rtr)
		return len;
	atomic_store((_Atomic uint64_t *)&ep->ctl[0], 0);
	buf[len] = RTR_MAGIC0;
	buf[len + 1] = RTR_MAGIC1;
	buf[len + 2] = RTR_ASK;
	put_be(buf + len + 3, ep->ctl_mr->rkey, 4);
	put_be(buf + len + 7, (uintptr_t)&ep->ctl[0], 8);
	ep->peer_rtr = 1;
	return len + IWARP_RTR_ASK_LEN;
}

void iwarp_active_up(struct vb_ep *ep, const uint8_t *pdata, size_t *len)
{
	size_t f = rapt_prov_pdata_end(pdata, *len);
	int ret;

	if (!f)
		return;		/* a foreign peer: iWARP's own rules */
	if (*len == f + IWARP_RTR_ASK_LEN && pdata[f] == RTR_MAGIC0 &&
	    pdata[f + 1] == RTR_MAGIC1 && pdata[f + 2] == RTR_ASK) {
		ep->ctl[1] = RTR_VALUE;
		ret = vb_ep_post_internal_write(ep, get_be(pdata + f + 7, 8),
						(uint32_t)get_be(pdata + f + 3,
								 4), 8);
	} else {
		/* The tcp provider: any FPDU releases its held sends. */
		ret = vb_ep_post_internal_write(ep, 0, 1, 0);
	}
	if (ret)
		vb_err("QP %u: cannot post the RTR: %s", ep->qp->qp_num,
		       rapt_strerror(ret));
	*len = f;
}

bool iwarp_passive_up(struct vb_ep *ep, const struct rapt_event *ev)
{
	return !ep->peer_rtr ||
	       atomic_load_explicit((_Atomic uint64_t *)&ep->ctl[0],
				    memory_order_acquire) != 0;
}
