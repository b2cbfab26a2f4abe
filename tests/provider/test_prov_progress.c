/* SPDX-License-Identifier: MIT */
/*
 * The "test" provider's progress: one thread per IA working through a FIFO
 * of items.  Any thread may append items (under tp.lock); only the IA's own
 * thread runs them, so the events of one EP reach the core in the order
 * they were queued.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_prov.h"

struct tp_global tp = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER,
	.listeners = TAILQ_HEAD_INITIALIZER(tp.listeners),
};

/**
 * tp_now - monotonic time
 *
 * Return: nanoseconds.
 */
int64_t tp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/**
 * tp_xcalloc - allocate zeroed memory on the progress path or abort
 * @size: bytes
 *
 * Events produced inside the fixture have nowhere to report an allocation
 * failure; a test fixture aborts rather than lose one silently.
 *
 * Return: the memory.
 */
void *tp_xcalloc(size_t size)
{
	void *p = calloc(1, size);

	if (!p) {
		RAPT_PLOG(RAPT_LOG_ERROR, TP_NAME, "out of memory (%zu bytes)",
			  size);
		abort();
	}
	return p;
}

/* ------------------------------------------------------------------ */
/* References (all under tp.lock)                                      */
/* ------------------------------------------------------------------ */

void tp_ep_hold(struct tp_ep *ep)
{
	ep->refs++;
}

void tp_ep_put(struct tp_ep *ep)
{
	if (--ep->refs)
		return;
	free(ep);
}

void tp_lsn_put(struct tp_lsn *l)
{
	if (--l->refs)
		return;
	free(l);
}

void tp_req_put(struct tp_req *req)
{
	if (--req->refs)
		return;
	TAILQ_REMOVE(&req->ia->reqs, req, ia_link);
	tp_lsn_put(req->lsn);
	free(req);
}

/**
 * tp_unpin - end a core call made for a pinned object
 * @calling: the object's calling count
 *
 * Wakes ep_free/psp_free waiting for the object to be idle.
 */
void tp_unpin(unsigned int *calling)
{
	if (!--*calling)
		pthread_cond_broadcast(&tp.idle);
}

/* ------------------------------------------------------------------ */
/* Items                                                               */
/* ------------------------------------------------------------------ */

/**
 * tp_item_new - a new item holding references on @ep and @req
 * @kind: what to do
 * @ep: the EP it concerns, or NULL
 * @req: the request it concerns, or NULL
 *
 * Return: the item (never NULL).
 */
struct tp_item *tp_item_new(enum tp_item_kind kind, struct tp_ep *ep,
			    struct tp_req *req)
{
	struct tp_item *it = tp_xcalloc(sizeof(*it));

	it->kind = kind;
	it->ep = ep;
	it->req = req;
	if (ep)
		tp_ep_hold(ep);
	if (req)
		req->refs++;
	return it;
}

static void tp_item_free(struct tp_item *it)
{
	if (it->ep)
		tp_ep_put(it->ep);
	if (it->req)
		tp_req_put(it->req);
	free(it);
}

/**
 * tp_queue - append an item to an IA's FIFO and wake its thread
 * @ia: the IA
 * @it: the item
 */
void tp_queue(struct tp_ia *ia, struct tp_item *it)
{
	TAILQ_INSERT_TAIL(&ia->fifo, it, link);
	pthread_cond_signal(&ia->cond);
}

/**
 * tp_post_dto - queue a DTO completion of @wr for @ep's EVD
 * @ep: the EP
 * @wr: the work request (its op picks the recv or request EVD)
 * @status: enum rapt_dto_status
 * @len: bytes transferred
 * @flags: RAPT_DTO_* flags
 * @inv_rkey: with RAPT_DTO_INVALIDATED, the invalidated rkey
 *
 * Nothing is queued for a freed EP or one without that EVD.
 */
void tp_post_dto(struct tp_ep *ep, const struct tp_wr *wr, uint32_t status,
		 uint64_t len, uint32_t flags, uint32_t inv_rkey)
{
	struct tp_evd *evd = wr->op == RAPT_OP_RECV ? ep->recv_evd :
			     ep->req_evd;
	struct rapt_event_dto *d;
	struct tp_item *it;

	if (ep->dead || !evd)
		return;
	it = tp_item_new(TP_IT_DTO, ep, NULL);
	it->evd = evd;
	it->ev.type = RAPT_EV_DTO;
	d = &it->ev.u.dto;
	d->ep = ep->handle;
	d->cookie = wr->cookie;
	d->op = wr->op;
	d->status = status;
	d->length = len;
	d->flags = flags;
	d->invalidated_rkey = inv_rkey;
	tp_queue(ep->ia, it);
}

/**
 * tp_post_conn - queue a connection event for @ep
 * @ep: the EP
 * @ce: the event; its private data is copied
 * @rtr: after delivering it, send the active side's RTR to the peer
 */
void tp_post_conn(struct tp_ep *ep, const struct rapt_prov_conn_event *ce,
		  bool rtr)
{
	struct tp_item *it;

	if (ep->dead)
		return;
	it = tp_item_new(TP_IT_CONN, ep, NULL);
	it->ce = *ce;
	it->rtr = rtr;
	if (ce->pdata_len)
		memcpy(it->pdata, ce->pdata, ce->pdata_len);
	it->ce.pdata = ce->pdata_len ? it->pdata : NULL;
	tp_queue(ep->ia, it);
}

/* Push a DTO completion; the pin keeps ep_free waiting meanwhile. */
static void tp_run_dto(struct tp_item *it)
{
	struct tp_ep *ep = it->ep;

	if (ep->dead)
		return;
	ep->calling++;
	pthread_mutex_unlock(&tp.lock);
	rapt_prov_evd_push(it->evd->cevd, &it->ev);
	pthread_mutex_lock(&tp.lock);
	tp_unpin(&ep->calling);
}

static void tp_run_conn(struct tp_item *it)
{
	struct tp_ep *ep = it->ep;
	int ret;

	if (ep->dead)
		return;
	/* The "RTR" is on the wire before the active side hears ESTABLISHED:
	 * the passive side's ESTABLISHED is queued first, so an active side
	 * that closes the moment it sees its own cannot turn the passive
	 * side's into ACCEPT_ERROR. */
	if (it->rtr)
		tp_cm_rtr(ep);
	ep->calling++;
	pthread_mutex_unlock(&tp.lock);
	ret = rapt_prov_ep_event(ep->cep, &it->ce);
	pthread_mutex_lock(&tp.lock);
	tp_unpin(&ep->calling);
	if (ret)
		tp_warn("the core refused event %#x: %s", it->ce.type,
			rapt_strerror(ret));
}

static void tp_item_run(struct tp_item *it)
{
	switch (it->kind) {
	case TP_IT_DTO:
		tp_run_dto(it);
		break;
	case TP_IT_CONN:
		tp_run_conn(it);
		break;
	case TP_IT_KICK:
		tp_dto_run(it->ep);
		break;
	case TP_IT_CONNECT:
		tp_cm_connect(it->ep);
		break;
	case TP_IT_REQUEST:
		tp_cm_request(it->req);
		break;
	case TP_IT_CANCEL:
		tp_cm_cancel(it->req);
		break;
	}
}

/* ------------------------------------------------------------------ */
/* The thread                                                          */
/* ------------------------------------------------------------------ */

static void tp_wait_until(struct tp_ia *ia, int64_t deadline)
{
	struct timespec ts;

	if (deadline == INT64_MAX) {
		pthread_cond_wait(&ia->cond, &tp.lock);
		return;
	}
	ts.tv_sec = deadline / 1000000000;
	ts.tv_nsec = deadline % 1000000000;
	pthread_cond_timedwait(&ia->cond, &tp.lock, &ts);
}

static void *tp_thread(void *arg)
{
	struct tp_ia *ia = arg;
	struct tp_item *it;
	int64_t next;

	pthread_mutex_lock(&tp.lock);
	while (!ia->stop) {
		next = tp_cm_timers(ia);
		it = TAILQ_FIRST(&ia->fifo);
		if (!it) {
			tp_wait_until(ia, next);
			continue;
		}
		TAILQ_REMOVE(&ia->fifo, it, link);
		tp_item_run(it);
		tp_item_free(it);
	}
	pthread_mutex_unlock(&tp.lock);
	return NULL;
}

/**
 * tp_thread_start - set up @ia's FIFO condition and start its thread
 * @ia: the IA
 *
 * Return: 0, RAPT_ENOMEM.
 */
int tp_thread_start(struct tp_ia *ia)
{
	pthread_condattr_t ca;
	int ret;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	ret = pthread_cond_init(&ia->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (ret)
		return RAPT_ENOMEM;
	ret = pthread_create(&ia->thread, NULL, tp_thread, ia);
	if (ret) {
		rapt_prov_set_error("test provider: pthread_create: %s",
				    strerror(ret));
		pthread_cond_destroy(&ia->cond);
		return RAPT_ENOMEM;
	}
	return 0;
}

/**
 * tp_thread_stop - stop @ia's thread and drop what is left in its FIFO
 * @ia: the IA (every EP and PSP of it already freed)
 */
void tp_thread_stop(struct tp_ia *ia)
{
	struct tp_item *it;

	pthread_mutex_lock(&tp.lock);
	ia->stop = true;
	pthread_cond_signal(&ia->cond);
	pthread_mutex_unlock(&tp.lock);
	pthread_join(ia->thread, NULL);

	pthread_mutex_lock(&tp.lock);
	while ((it = TAILQ_FIRST(&ia->fifo))) {
		TAILQ_REMOVE(&ia->fifo, it, link);
		tp_cm_drop_item(it);
		tp_item_free(it);
	}
	pthread_mutex_unlock(&tp.lock);
}
