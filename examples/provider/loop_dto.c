/* SPDX-License-Identifier: MIT */
/*
 * loop: the data path.  A send is a copy, in the sender's thread, from
 * its gather list into the peer's oldest posted receive; both complete at
 * once.  Local keys, bounds and rights are checked here (the core does
 * not): a bad one, a missing receive or a receive too short breaks the
 * connection, as on a real RDMA transport.
 */
#include <stdlib.h>
#include <string.h>

#include "loop.h"

/* Called with loop_fab.lock held, as everything here. */
static void dto_push(struct loop_evd *evd, struct loop_ep *ep, uint32_t op,
		     uint64_t cookie, uint32_t status, uint64_t len,
		     uint32_t flags)
{
	struct rapt_event ev = { .type = RAPT_EV_DTO };

	if (!evd)
		return;
	ev.u.dto.ep = ep->handle;
	ev.u.dto.cookie = cookie;
	ev.u.dto.op = op;
	ev.u.dto.status = status;
	ev.u.dto.length = len;
	ev.u.dto.flags = flags;
	/* RAPT_EOVERFLOW: the core has counted and reported the loss. */
	rapt_prov_evd_push(evd->cevd, &ev);
}

/* Every posted receive completes FLUSHED, in posting order. */
void loop_flush(struct loop_ep *ep)
{
	struct loop_recv *r;

	while (!rapt_list_empty(&ep->rq)) {
		r = rapt_container_of(rapt_list_first(&ep->rq),
				      struct loop_recv, link);
		rapt_list_del(&r->link);
		ep->nrecv--;
		dto_push(ep->recv_evd, ep, RAPT_OP_RECV, r->cookie,
			 RAPT_DTO_FLUSHED, 0, 0);
		free(r);
	}
}

/* The connection breaks: flushes, then BROKEN, on both sides. */
void loop_break(struct loop_ep *ep)
{
	struct loop_ep *peer = ep->peer;

	ep->peer = NULL;
	if (peer) {
		peer->peer = NULL;
		loop_ep_end(peer, RAPT_EV_BROKEN, 0, NULL, 0);
	}
	loop_ep_end(ep, RAPT_EV_BROKEN, 0, NULL, 0);
}

/*
 * Check that @sge lies in a registration of @ia with the @need rights,
 * the way a NIC checks an lkey.  A real provider indexes its keys; loop
 * walks a list.
 */
static bool sge_ok(const struct loop_ia *ia, const struct rapt_sge *sge,
		   uint32_t need)
{
	struct rapt_list *pos;
	struct loop_lmr *m;

	if (!sge->length)
		return true;
	rapt_list_for_each(pos, &loop_fab.lmrs) {
		m = rapt_container_of(pos, struct loop_lmr, link);
		if (m->key != sge->lkey)
			continue;
		return m->ia == ia && (m->access & need) == need &&
		       sge->addr >= m->addr &&
		       sge->length <= m->len - (sge->addr - m->addr);
	}
	return false;
}

static bool sgl_ok(const struct loop_ia *ia, const struct rapt_sge *sgl,
		   uint32_t nsge, uint32_t need)
{
	uint32_t i;

	for (i = 0; i < nsge; i++)
		if (!sge_ok(ia, &sgl[i], need))
			return false;
	return true;
}

static uint64_t sgl_len(const struct rapt_sge *sgl, uint32_t nsge)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < nsge; i++)
		n += sgl[i].length;
	return n;
}

/* Copy a gather list into a scatter list that is long enough. */
static void sgl_copy(const struct rapt_sge *dst, const struct rapt_sge *src,
		     uint32_t nsrc)
{
	uint64_t doff = 0, soff, n;
	uint32_t i;

	for (i = 0; i < nsrc; i++) {
		for (soff = 0; soff < src[i].length; soff += n, doff += n) {
			while (doff == dst->length) {
				dst++;
				doff = 0;
			}
			n = src[i].length - soff;
			if (n > dst->length - doff)
				n = dst->length - doff;
			memmove((void *)(uintptr_t)(dst->addr + doff),
				(const void *)(uintptr_t)(src[i].addr + soff),
				n);
		}
	}
}

/* Works in every state; on an EP that has ended, it flushes at once. */
int loop_post_recv(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		   uint64_t cookie)
{
	struct loop_ep *ep = pep;
	struct loop_recv *r;
	int ret = 0;

	r = calloc(1, sizeof(*r));
	if (!r)
		return RAPT_ENOMEM;
	r->cookie = cookie;
	r->nsge = nsge;
	memcpy(r->sgl, sgl, nsge * sizeof(*sgl));
	pthread_mutex_lock(&loop_fab.lock);
	if (ep->state == LOOP_EP_CLOSED) {
		dto_push(ep->recv_evd, ep, RAPT_OP_RECV, cookie,
			 RAPT_DTO_FLUSHED, 0, 0);
		free(r);
	} else if (ep->nrecv >= ep->max_recv) {
		free(r);
		ret = RAPT_ENOSPC;
	} else {
		rapt_list_add_tail(&ep->rq, &r->link);
		ep->nrecv++;
	}
	pthread_mutex_unlock(&loop_fab.lock);
	return ret;
}

/* Deliver a send into the peer's oldest receive (completing it) and
 * return the send's status: not SUCCESS breaks the connection. */
static int send_deliver(struct loop_ep *ep, const struct rapt_sge *sgl,
			uint32_t nsge, uint64_t len, uint32_t flags)
{
	struct loop_ep *peer = ep->peer;
	uint32_t rflags = 0, status = RAPT_DTO_SUCCESS;
	struct loop_recv *r;

	if (rapt_list_empty(&peer->rq))
		return RAPT_DTO_REMOTE_OPERATION;
	r = rapt_container_of(rapt_list_first(&peer->rq), struct loop_recv,
			      link);
	rapt_list_del(&r->link);
	peer->nrecv--;
	if (len > sgl_len(r->sgl, r->nsge))
		status = RAPT_DTO_LOCAL_LENGTH;
	else if (!sgl_ok(peer->ia, r->sgl, r->nsge, RAPT_MEM_LOCAL_WRITE))
		status = RAPT_DTO_LOCAL_PROTECTION;
	else
		sgl_copy(r->sgl, sgl, nsge);
	if (flags & RAPT_POST_SOLICITED)
		rflags |= RAPT_DTO_SOLICITED;
	dto_push(peer->recv_evd, peer, RAPT_OP_RECV, r->cookie, status,
		 status ? 0 : len, status ? 0 : rflags);
	free(r);
	return status ? RAPT_DTO_REMOTE_OPERATION : RAPT_DTO_SUCCESS;
}

int loop_post_send(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		   uint64_t cookie, uint32_t flags, uint32_t inv_rkey)
{
	struct loop_ep *ep = pep;
	uint64_t len = sgl_len(sgl, nsge);
	uint32_t status;

	pthread_mutex_lock(&loop_fab.lock);
	/* The peer may have ended the connection since the core looked:
	 * refuse rather than complete after our DISCONNECTED. */
	if (ep->state != LOOP_EP_CONNECTED) {
		pthread_mutex_unlock(&loop_fab.lock);
		rapt_prov_set_error(LOOP_NAME ": the connection has ended");
		return RAPT_ESTATE;
	}
	/* Inline data is taken at post time without a key, as in verbs. */
	if (!(flags & RAPT_POST_INLINE) && !sgl_ok(ep->ia, sgl, nsge, 0))
		status = RAPT_DTO_LOCAL_PROTECTION;
	else
		status = send_deliver(ep, sgl, nsge, len, flags);
	if (status || !(flags & RAPT_POST_SUPPRESS))
		dto_push(ep->req_evd, ep, RAPT_OP_SEND, cookie, status,
			 status ? 0 : len, 0);
	if (status)
		loop_break(ep);
	pthread_mutex_unlock(&loop_fab.lock);
	return 0;
}
