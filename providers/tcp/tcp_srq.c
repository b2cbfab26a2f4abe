/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: shared receive queues, in software.
 *
 * An SRQ is a receive ring like an EP's (struct tcp_wrq), under a lock of
 * its own.  An EP made on it keeps a ring of one slot: when a Send's first
 * FPDU arrives and that slot is free, tcp_srq_take() moves the SRQ's
 * oldest receive into it, and from there the receive path places and
 * completes it as any receive of the EP (so the completion names the EP,
 * and a disconnect flushes it to the EP's receive EVD).  A Send that finds
 * the SRQ empty is refused as on an EP with no receive: a Terminate (DDP
 * untagged, no buffer) and a broken connection on both sides.
 *
 * Locking: srq->lock is a leaf, taken under an ep->lock by the receive
 * path and alone by the consumer's posts.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tcp.h"

struct tcp_srq {
	struct tcp_ia *ia;
	const struct tcp_pz *pz;	/* its EPs' and receives' */
	struct rapt_srq *handle;	/* named in the watermark event */
	pthread_mutex_t lock;
	struct tcp_wrq q;
	uint32_t lw;			/* low watermark, 0: none */
	bool lw_armed;			/* the event may fire */
};

/**
 * tcp_srq_create - the srq_create op
 *
 * Return: 0, RAPT_ENOMEM.
 */
int tcp_srq_create(void *pia, void *ppz, struct rapt_srq *handle,
		   const struct rapt_srq_attr *attr, void **psrq)
{
	struct tcp_srq *srq = calloc(1, sizeof(*srq));

	if (!srq)
		return RAPT_ENOMEM;
	if (tcp_wrq_init(&srq->q, attr->max_recv, attr->max_recv_sge, 0)) {
		free(srq);
		return RAPT_ENOMEM;
	}
	srq->ia = pia;
	srq->pz = ppz;
	srq->handle = handle;
	srq->lw = attr->low_watermark;
	srq->lw_armed = true;
	pthread_mutex_init(&srq->lock, NULL);
	*psrq = srq;
	return 0;
}

/**
 * tcp_srq_free - the srq_free op; no EP uses the SRQ any more
 *
 * Return: 0.
 */
int tcp_srq_free(void *psrq)
{
	struct tcp_srq *srq = psrq;

	tcp_wrq_fini(&srq->q);
	pthread_mutex_destroy(&srq->lock);
	free(srq);
	return 0;
}

/**
 * tcp_srq_post_recv - the srq_post_recv op
 *
 * A count back at the watermark arms its event again.
 *
 * Return: 0, RAPT_ENOSPC, RAPT_ENOMEM.
 */
int tcp_srq_post_recv(void *psrq, const struct rapt_sge *sgl, uint32_t nsge,
		      uint64_t cookie)
{
	struct tcp_srq *srq = psrq;
	int ret = 0;

	pthread_mutex_lock(&srq->lock);
	if (tcp_wrq_push_recv(&srq->q, sgl, nsge, cookie, &ret) &&
	    tcp_wrq_count(&srq->q) >= srq->lw)
		srq->lw_armed = true;
	pthread_mutex_unlock(&srq->lock);
	return ret;
}

/**
 * tcp_srq_query - the srq_query op
 *
 * Return: 0.
 */
int tcp_srq_query(void *psrq, uint32_t *posted)
{
	struct tcp_srq *srq = psrq;

	pthread_mutex_lock(&srq->lock);
	*posted = tcp_wrq_count(&srq->q);
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

/**
 * tcp_srq_resize - the srq_resize op
 *
 * The ring grows on demand up to its depth, so a new depth is only a new
 * bound; it cannot go below what is posted.
 *
 * Return: 0, RAPT_ERANGE.
 */
int tcp_srq_resize(void *psrq, uint32_t max_recv, uint32_t low_watermark)
{
	struct tcp_srq *srq = psrq;
	int ret = 0;

	pthread_mutex_lock(&srq->lock);
	if (tcp_wrq_count(&srq->q) > max_recv) {
		ret = RAPT_ERANGE;
	} else {
		srq->q.max = max_recv;
		srq->lw = low_watermark;
		srq->lw_armed = true;
	}
	pthread_mutex_unlock(&srq->lock);
	return ret;
}

/**
 * tcp_ep_set_srq - the ep_set_srq op, right after ep_create
 *
 * The core gave the EP a receive ring of one slot with the SRQ's SGEs:
 * slots of both rings have the same size, so a receive moves by a copy.
 *
 * Return: 0, RAPT_EINVAL (another PZ, or rings that do not match).
 */
int tcp_ep_set_srq(void *pep, void *psrq)
{
	struct tcp_ep *ep = pep;
	struct tcp_srq *srq = psrq;

	if (ep->pz != srq->pz || ep->rq.stride != srq->q.stride ||
	    ep->rq.nsge != srq->q.nsge)
		return RAPT_EINVAL;
	ep->srq = srq;
	return 0;
}

/**
 * tcp_srq_take - move the SRQ's oldest receive into the EP's ring
 * @ep: an EP of the SRQ, locked, whose ring is empty
 *
 * Return: the receive, now the head of ep->rq; NULL if the SRQ is empty.
 */
struct tcp_wr *tcp_srq_take(struct tcp_ep *ep)
{
	struct tcp_srq *srq = ep->srq;
	struct tcp_wr *src, *dst;
	uint32_t left = 0;
	bool fire = false;
	int err;

	dst = tcp_wrq_reserve(&ep->rq, &err);
	if (!dst)
		return NULL;
	pthread_mutex_lock(&srq->lock);
	src = tcp_wrq_head(&srq->q);
	if (src) {
		memcpy(dst, src, srq->q.stride);
		srq->q.head++;
		left = tcp_wrq_count(&srq->q);
		fire = srq->lw_armed && left < srq->lw;
		if (fire)
			srq->lw_armed = false;
	}
	pthread_mutex_unlock(&srq->lock);
	if (!src)
		return NULL;
	ep->rq.tail++;
	/* A service the provider may call with an EP lock held. */
	if (fire)
		rapt_prov_async_event(srq->ia->cia,
				      RAPT_EV_ASYNC_SRQ_LOW_WATERMARK,
				      srq->handle, (int32_t)left);
	return dst;
}
