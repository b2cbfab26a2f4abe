/* SPDX-License-Identifier: MIT */
/*
 * The "test" provider's data path.  Posts queue work requests; the EP's
 * progress thread runs its send queue in order, moving bytes between
 * registered regions under tp.lock after checking keys, bounds and rights
 * through the fixture's own key table.  Errors break the connection the way
 * iWARP does: the failing request's completion, then FLUSHED for the rest,
 * then BROKEN on both sides.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "test_prov.h"

/**
 * tp_wr_new - allocate a work request
 * @op: RAPT_OP_* or TP_WR_DISC
 * @sgl: SGEs to copy, or NULL
 * @nsge: their number (at most TP_MAX_SGE)
 * @cookie: the consumer's cookie
 * @extra: bytes of @data to reserve
 *
 * Return: the request, or NULL without memory.
 */
struct tp_wr *tp_wr_new(uint32_t op, const struct rapt_sge *sgl,
			uint32_t nsge, uint64_t cookie, size_t extra)
{
	struct tp_wr *wr = calloc(1, sizeof(*wr) + extra);

	if (!wr)
		return NULL;
	wr->op = op;
	wr->cookie = cookie;
	wr->nsge = nsge;
	if (nsge)
		memcpy(wr->sgl, sgl, nsge * sizeof(*sgl));
	return wr;
}

static void tp_wrq_flush(struct tp_ep *ep, struct tp_wrq *q)
{
	struct tp_wr *wr;

	while ((wr = TAILQ_FIRST(q))) {
		TAILQ_REMOVE(q, wr, link);
		if (wr->op != TP_WR_DISC)
			tp_post_dto(ep, wr, RAPT_DTO_FLUSHED, 0, 0, 0);
		free(wr);
	}
}

/**
 * tp_flush - complete every outstanding request of @ep FLUSHED
 * @ep: the EP (nothing is queued if it is freed)
 */
void tp_flush(struct tp_ep *ep)
{
	tp_wrq_flush(ep, &ep->sq);
	tp_wrq_flush(ep, &ep->rq);
	ep->sq_n = 0;
	ep->rq_n = 0;
}

/**
 * tp_kick - make sure @ep's send queue gets run
 * @ep: the EP
 */
void tp_kick(struct tp_ep *ep)
{
	if (ep->kicked)
		return;
	ep->kicked = true;
	tp_queue(ep->ia, tp_item_new(TP_IT_KICK, ep, NULL));
}

/* ------------------------------------------------------------------ */
/* Checks                                                              */
/* ------------------------------------------------------------------ */

static bool tp_in_region(const struct tp_lmr *lmr, uint64_t addr,
			 uint64_t len)
{
	return addr >= lmr->addr && len <= lmr->len &&
	       addr - lmr->addr <= lmr->len - len;
}

/* Check local SGEs of @ep for @need rights; sum their lengths. */
static int tp_sgl_check(const struct tp_ep *ep, const struct rapt_sge *sgl,
			uint32_t nsge, uint32_t need, uint64_t *total)
{
	const struct tp_lmr *lmr;
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < nsge; i++) {
		if (!sgl[i].length)
			continue;
		lmr = tp_key_find(sgl[i].lkey);
		if (!lmr || lmr->lkey.key != sgl[i].lkey ||
		    lmr->ia != ep->ia || lmr->pz != ep->pz ||
		    (lmr->access & need) != need ||
		    !tp_in_region(lmr, sgl[i].addr, sgl[i].length))
			return RAPT_DTO_LOCAL_PROTECTION;
		sum += sgl[i].length;
	}
	*total = sum;
	return RAPT_DTO_SUCCESS;
}

/* The target's region for an rkey, if @len bytes at @raddr with @need
 * rights are allowed to @peer's connection. */
static struct tp_lmr *tp_rkey_check(const struct tp_ep *peer, uint32_t rkey,
				    uint64_t raddr, uint64_t len,
				    uint32_t need)
{
	struct tp_lmr *lmr = tp_key_find(rkey);

	if (!lmr || lmr->rkey.key != rkey || !lmr->rkey_valid ||
	    lmr->ia != peer->ia || lmr->pz != peer->pz ||
	    (lmr->access & need) != need ||
	    !tp_in_region(lmr, raddr, len))
		return NULL;
	return lmr;
}

/* The peer's valid rkey a send with invalidate may name, or NULL. */
static struct tp_lmr *tp_inv_check(const struct tp_ep *peer, uint32_t rkey)
{
	struct tp_lmr *lmr = tp_key_find(rkey);

	if (!lmr || lmr->rkey.key != rkey || !lmr->rkey_valid ||
	    lmr->ia != peer->ia || lmr->pz != peer->pz)
		return NULL;
	return lmr;
}

/* ------------------------------------------------------------------ */
/* Copies                                                              */
/* ------------------------------------------------------------------ */

static void tp_gather(const struct rapt_sge *sgl, uint32_t nsge, uint8_t *dst)
{
	uint32_t i;

	for (i = 0; i < nsge; i++) {
		if (!sgl[i].length)
			continue;
		memmove(dst, (const void *)(uintptr_t)sgl[i].addr,
			sgl[i].length);
		dst += sgl[i].length;
	}
}

static void tp_scatter(const struct rapt_sge *sgl, uint32_t nsge,
		       const uint8_t *src, uint64_t len)
{
	uint64_t n;
	uint32_t i;

	for (i = 0; i < nsge && len; i++) {
		n = sgl[i].length < len ? sgl[i].length : len;
		if (n)
			memmove((void *)(uintptr_t)sgl[i].addr, src, n);
		src += n;
		len -= n;
	}
}

/* The bytes a send or RDMA write carries: inline data, or the gathered
 * SGEs (checked) in a buffer the caller frees.  0 or a DTO status. */
static int tp_source(const struct tp_ep *ep, const struct tp_wr *wr,
		     const uint8_t **src, uint8_t **buf, uint64_t *len)
{
	int st;

	*buf = NULL;
	if (wr->flags & RAPT_POST_INLINE) {
		*src = wr->data;
		*len = wr->len;
		return RAPT_DTO_SUCCESS;
	}
	st = tp_sgl_check(ep, wr->sgl, wr->nsge, 0, len);
	if (st)
		return st;
	*buf = tp_xcalloc(*len ? *len : 1);
	tp_gather(wr->sgl, wr->nsge, *buf);
	*src = *buf;
	return RAPT_DTO_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* Execution                                                           */
/* ------------------------------------------------------------------ */

/* @ep's request @wr failed with @st: complete it, break the connection. */
static void tp_fail(struct tp_ep *ep, const struct tp_wr *wr, uint32_t st)
{
	tp_post_dto(ep, wr, st, 0, 0, 0);
	tp_pair_end(ep, RAPT_EV_BROKEN, NULL, 0);
}

static void tp_done(struct tp_ep *ep, const struct tp_wr *wr, uint64_t len)
{
	if (!(wr->flags & RAPT_POST_SUPPRESS))
		tp_post_dto(ep, wr, RAPT_DTO_SUCCESS, len, 0, 0);
}

/* Land a send in the peer's receive @r; 0 or the sender's failure. */
static int tp_deliver(struct tp_ep *peer, struct tp_wr *r,
		      const struct tp_wr *wr, const uint8_t *src,
		      uint64_t len)
{
	uint32_t flags = 0, inv = 0;
	struct tp_lmr *lmr = NULL;
	uint64_t cap;

	if (tp_sgl_check(peer, r->sgl, r->nsge, RAPT_MEM_LOCAL_WRITE, &cap)) {
		tp_post_dto(peer, r, RAPT_DTO_LOCAL_PROTECTION, 0, 0, 0);
		return RAPT_DTO_REMOTE_OPERATION;
	}
	if (cap < len) {
		tp_post_dto(peer, r, RAPT_DTO_LOCAL_LENGTH, 0, 0, 0);
		return RAPT_DTO_REMOTE_OPERATION;
	}
	if (wr->flags & RAPT_PROV_POST_INVALIDATE) {
		lmr = tp_inv_check(peer, wr->inv_rkey);
		if (!lmr) {
			tp_post_dto(peer, r, RAPT_DTO_LOCAL_PROTECTION, 0, 0,
				    0);
			return RAPT_DTO_REMOTE_ACCESS;
		}
		lmr->rkey_valid = false;
		flags |= RAPT_DTO_INVALIDATED;
		inv = wr->inv_rkey;
	}
	tp_scatter(r->sgl, r->nsge, src, len);
	if (wr->flags & RAPT_POST_SOLICITED)
		flags |= RAPT_DTO_SOLICITED;
	tp_post_dto(peer, r, RAPT_DTO_SUCCESS, len, flags, inv);
	return 0;
}

static void tp_do_send(struct tp_ep *ep, struct tp_wr *wr)
{
	struct tp_ep *peer = ep->peer;
	const uint8_t *src;
	struct tp_wr *r;
	uint8_t *buf;
	uint64_t len;
	int st;

	st = tp_source(ep, wr, &src, &buf, &len);
	if (st) {
		tp_fail(ep, wr, st);
		return;
	}
	r = TAILQ_FIRST(&peer->rq);
	if (!r) {
		st = RAPT_DTO_REMOTE_OPERATION;
	} else {
		TAILQ_REMOVE(&peer->rq, r, link);
		peer->rq_n--;
		st = tp_deliver(peer, r, wr, src, len);
		free(r);
	}
	free(buf);
	if (st)
		tp_fail(ep, wr, st);
	else
		tp_done(ep, wr, len);
}

static void tp_do_write(struct tp_ep *ep, struct tp_wr *wr)
{
	const uint8_t *src;
	uint8_t *buf;
	uint64_t len;
	int st;

	st = tp_source(ep, wr, &src, &buf, &len);
	if (st) {
		tp_fail(ep, wr, st);
		return;
	}
	if (len && !tp_rkey_check(ep->peer, wr->rkey, wr->raddr, len,
				  RAPT_MEM_REMOTE_WRITE)) {
		free(buf);
		tp_fail(ep, wr, RAPT_DTO_REMOTE_ACCESS);
		return;
	}
	if (len)
		memmove((void *)(uintptr_t)wr->raddr, src, len);
	free(buf);
	tp_done(ep, wr, len);
}

static void tp_do_read(struct tp_ep *ep, struct tp_wr *wr)
{
	uint64_t len;
	int st;

	st = tp_sgl_check(ep, wr->sgl, wr->nsge, RAPT_MEM_LOCAL_WRITE, &len);
	if (st) {
		tp_fail(ep, wr, st);
		return;
	}
	if (len && !tp_rkey_check(ep->peer, wr->rkey, wr->raddr, len,
				  RAPT_MEM_REMOTE_READ)) {
		tp_fail(ep, wr, RAPT_DTO_REMOTE_ACCESS);
		return;
	}
	tp_scatter(wr->sgl, wr->nsge, (const uint8_t *)(uintptr_t)wr->raddr,
		   len);
	tp_done(ep, wr, len);
}

/**
 * tp_dto_run - run @ep's send queue in post order (its IA's thread)
 * @ep: the EP
 *
 * Stops at a graceful-disconnect marker, which ends the connection once
 * everything posted before it has run.
 */
void tp_dto_run(struct tp_ep *ep)
{
	struct tp_wr *wr;

	ep->kicked = false;
	while (!ep->dead && (wr = TAILQ_FIRST(&ep->sq))) {
		TAILQ_REMOVE(&ep->sq, wr, link);
		ep->sq_n--;
		if (wr->op == TP_WR_DISC)
			tp_pair_end(ep, RAPT_EV_DISCONNECTED, wr->data,
				    wr->len);
		else if (!ep->peer)
			tp_post_dto(ep, wr, RAPT_DTO_FLUSHED, 0, 0, 0);
		else if (wr->op == RAPT_OP_SEND)
			tp_do_send(ep, wr);
		else if (wr->op == RAPT_OP_RDMA_WRITE)
			tp_do_write(ep, wr);
		else
			tp_do_read(ep, wr);
		free(wr);
	}
}

/* ------------------------------------------------------------------ */
/* Posts                                                               */
/* ------------------------------------------------------------------ */

int tp_post_recv(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		 uint64_t cookie)
{
	struct tp_ep *ep = pep;
	struct tp_wr *wr;
	int ret = 0;

	if (nsge > ep->attr.max_recv_sge || nsge > TP_MAX_SGE)
		return RAPT_EINVAL;
	wr = tp_wr_new(RAPT_OP_RECV, sgl, nsge, cookie, 0);
	if (!wr)
		return RAPT_ENOMEM;
	pthread_mutex_lock(&tp.lock);
	if (ep->state == TP_EP_CLOSED) {
		tp_post_dto(ep, wr, RAPT_DTO_FLUSHED, 0, 0, 0);
	} else if (ep->rq_n >= ep->attr.max_recv) {
		ret = RAPT_ENOSPC;
	} else {
		TAILQ_INSERT_TAIL(&ep->rq, wr, link);
		ep->rq_n++;
		wr = NULL;
	}
	pthread_mutex_unlock(&tp.lock);
	free(wr);
	return ret;
}

/* Queue a send-side request; the EP must be connected. */
static int tp_post_sq(struct tp_ep *ep, struct tp_wr *wr)
{
	int ret = 0;

	pthread_mutex_lock(&tp.lock);
	if (ep->state != TP_EP_CONNECTED) {
		ret = RAPT_ESTATE;
	} else if (ep->sq_n >= ep->attr.max_send) {
		ret = RAPT_ENOSPC;
	} else {
		TAILQ_INSERT_TAIL(&ep->sq, wr, link);
		ep->sq_n++;
		tp_kick(ep);
	}
	pthread_mutex_unlock(&tp.lock);
	if (ret)
		free(wr);
	return ret;
}

/* Build a send-side request; inline data is copied now. */
static int tp_wr_build(const struct tp_ep *ep, uint32_t op,
		       const struct rapt_sge *sgl, uint32_t nsge,
		       uint64_t cookie, uint32_t flags, struct tp_wr **out)
{
	uint64_t len = 0;
	struct tp_wr *wr;
	uint32_t i;

	if (nsge > ep->attr.max_send_sge || nsge > TP_MAX_SGE)
		return RAPT_EINVAL;
	for (i = 0; i < nsge; i++)
		len += sgl[i].length;
	if ((flags & RAPT_POST_INLINE) && len > ep->attr.max_inline)
		return RAPT_ELENGTH;
	wr = tp_wr_new(op, sgl, nsge, cookie,
		       flags & RAPT_POST_INLINE ? len : 0);
	if (!wr)
		return RAPT_ENOMEM;
	wr->flags = flags;
	if (flags & RAPT_POST_INLINE) {
		tp_gather(sgl, nsge, wr->data);
		wr->len = (uint32_t)len;
	}
	*out = wr;
	return 0;
}

int tp_post_send(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		 uint64_t cookie, uint32_t flags, uint32_t inv_rkey)
{
	struct tp_wr *wr;
	int ret;

	ret = tp_wr_build(pep, RAPT_OP_SEND, sgl, nsge, cookie, flags, &wr);
	if (ret)
		return ret;
	wr->inv_rkey = inv_rkey;
	return tp_post_sq(pep, wr);
}

int tp_post_write(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		  uint64_t cookie, uint64_t raddr, uint32_t rkey,
		  uint32_t flags)
{
	struct tp_wr *wr;
	int ret;

	ret = tp_wr_build(pep, RAPT_OP_RDMA_WRITE, sgl, nsge, cookie, flags,
			  &wr);
	if (ret)
		return ret;
	wr->raddr = raddr;
	wr->rkey = rkey;
	return tp_post_sq(pep, wr);
}

int tp_post_read(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		 uint64_t cookie, uint64_t raddr, uint32_t rkey,
		 uint32_t flags)
{
	struct tp_wr *wr;
	int ret;

	if (flags & RAPT_POST_INLINE)
		return RAPT_EINVAL;
	ret = tp_wr_build(pep, RAPT_OP_RDMA_READ, sgl, nsge, cookie, flags,
			  &wr);
	if (ret)
		return ret;
	wr->raddr = raddr;
	wr->rkey = rkey;
	return tp_post_sq(pep, wr);
}
