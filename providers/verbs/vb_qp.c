/* SPDX-License-Identifier: MIT */
/*
 * verbs layer: an EP is a QP, created with the EP and moved to INIT at
 * once, so receives may be posted before connect or accept; the QP is
 * never re-created (rdma_cm connects and accepts it by number, vb_cm.c).
 *
 * Every work request is named by its wr_id: the EP's slot in the IA's
 * table and its sequence number in the EP's send or receive ring, which
 * keeps the consumer's cookie, the operation and its length.  So a
 * completion finds its EP without a lookup by QP number, a completion
 * that outlives its EP is dropped, and a flush or error of any work
 * request is reported.  A send or write the consumer suppressed is
 * posted unsignalled (sq_unsignal): the next completion of the send
 * queue retires it, and before a graceful close, teardown or a ring-only
 * operation the provider posts a zero-length RDMA Write of its own when
 * the ring ends in such entries (vb_ep_sends_mark), so the ring always
 * knows which work requests are done.
 *
 * An RDMA read scattered into more SGEs than the device reads into at
 * once (max_sge_rd: 1 on siw, which otherwise reads only the first SGE
 * and reports success) is split into reads of consecutive remote ranges;
 * the consumer sees one completion.
 *
 * Until the EP's ESTABLISHED is out, its completions are held back and
 * released right after it (the contract's order); teardown turns held
 * completions of a connection that never came up into FLUSHED ones.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verbs.h"

_Static_assert(sizeof(struct rapt_sge) == sizeof(struct ibv_sge) &&
	       offsetof(struct rapt_sge, addr) ==
	       offsetof(struct ibv_sge, addr) &&
	       offsetof(struct rapt_sge, length) ==
	       offsetof(struct ibv_sge, length) &&
	       offsetof(struct rapt_sge, lkey) ==
	       offsetof(struct ibv_sge, lkey),
	       "rapt_sge and ibv_sge must have one layout");

/* The bytes of the EP's control buffer (registered). */
#define VB_CTL_BYTES	64
/* Unsignalled work requests in a row at most (sq_unsignal). */
#define VB_UNSIG_RUN	64
/* How long teardown waits for the device to flush (siw flushes at once,
 * in the modify to the error state; a WR it never took stays). */
#define VB_DRAIN_NS	(200ull * 1000000ull)

static uint32_t pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static uint64_t wrid(const struct vb_ep *ep, uint32_t seq, bool recv)
{
	return (uint64_t)seq << 32 | (recv ? VB_WRID_RECV : 0) |
	       (uint64_t)(ep->gen & VB_GEN_MASK) << VB_SLOT_BITS | ep->slot;
}

static uint32_t load32(const uint32_t *p)
{
	return atomic_load_explicit((_Atomic uint32_t *)p,
				    memory_order_acquire);
}

static void store32(uint32_t *p, uint32_t v)
{
	atomic_store_explicit((_Atomic uint32_t *)p, v, memory_order_release);
}

/* ------------------------------------------------------------------ */
/* Pushing events                                                      */
/* ------------------------------------------------------------------ */

static void dto_flushed(struct vb_ep *ep, struct vb_evd *evd, uint32_t op,
			uint64_t cookie)
{
	struct rapt_event ev = { .type = RAPT_EV_DTO };

	if (!evd->cevd)
		return;
	ev.u.dto.ep = ep->handle;
	ev.u.dto.cookie = cookie;
	ev.u.dto.op = op;
	ev.u.dto.status = RAPT_DTO_FLUSHED;
	ev.u.dto.prov_status = rapt_prov_status_wc(IBV_WC_WR_FLUSH_ERR);
	rapt_prov_evd_push(evd->cevd, &ev);
}

/* Release the held completions (ep->lock held): as they are, or, for a
 * connection that never came up, as FLUSHED. */
static void held_release(struct vb_ep *ep, bool flush)
{
	struct vb_held *h;
	uint32_t i;

	for (i = 0; i < ep->nheld; i++) {
		h = &ep->held[i];
		if (flush && h->ev.u.dto.status == RAPT_DTO_SUCCESS) {
			h->ev.u.dto.status = RAPT_DTO_FLUSHED;
			h->ev.u.dto.prov_status = rapt_prov_status_wc(IBV_WC_WR_FLUSH_ERR);
			h->ev.u.dto.length = 0;
			h->ev.u.dto.flags = 0;
		}
		rapt_prov_evd_push(h->cevd, &h->ev);
	}
	free(ep->held);
	ep->held = NULL;
	ep->nheld = ep->held_cap = 0;
}

/**
 * vb_ep_report_up - report ESTABLISHED, then what was held back
 * @ep: the EP (ep->lock held)
 * @pdata: the peer's private data as received (framed), or NULL
 * @len: its length
 */
void vb_ep_report_up(struct vb_ep *ep, const void *pdata, size_t len)
{
	struct rapt_prov_conn_event ce;
	struct sockaddr *sa;

	memset(&ce, 0, sizeof(ce));
	ce.type = RAPT_EV_ESTABLISHED;
	ce.pdata = len ? pdata : NULL;
	ce.pdata_len = len;
	ce.rdma_read_in = ep->ird;
	ce.rdma_read_out = ep->ord;
	if (ep->id) {
		sa = rdma_get_local_addr(ep->id);
		memcpy(&ce.local_addr, sa, rapt_sockaddr_len(sa));
		sa = rdma_get_peer_addr(ep->id);
		memcpy(&ce.remote_addr, sa, rapt_sockaddr_len(sa));
	}
	ep->state = VB_EP_UP;
	vb_ka_start(ep);
	rapt_prov_ep_event(ep->cep, &ce);
	held_release(ep, false);
	atomic_store(&ep->direct, true);
}

static void ep_hold(struct vb_ep *ep, struct rapt_core_evd *cevd,
		    const struct rapt_event *ev)
{
	struct vb_held *h;
	uint32_t cap;

	pthread_mutex_lock(&ep->lock);
	/* A completion of the accepting EP may be what shows that the
	 * peer's RTR has come (iWARP), or that its RTU was lost (IB). */
	if (!atomic_load(&ep->direct) && ep->state == VB_EP_ACCEPTING &&
	    vb_tp->passive_up && vb_tp->passive_up(ep, ev))
		vb_ep_report_up(ep, NULL, 0);
	if (atomic_load(&ep->direct)) {
		pthread_mutex_unlock(&ep->lock);
		rapt_prov_evd_push(cevd, ev);
		return;
	}
	if (ep->nheld == ep->held_cap) {
		cap = ep->held_cap ? ep->held_cap * 2 : 8;
		h = realloc(ep->held, cap * sizeof(*h));
		if (!h) {
			pthread_mutex_unlock(&ep->lock);
			vb_err("out of memory holding a completion back: delivered before ESTABLISHED");
			rapt_prov_evd_push(cevd, ev);
			return;
		}
		ep->held = h;
		ep->held_cap = cap;
	}
	ep->held[ep->nheld].cevd = cevd;
	ep->held[ep->nheld].ev = *ev;
	ep->nheld++;
	pthread_mutex_unlock(&ep->lock);
}

/* ------------------------------------------------------------------ */
/* Completions                                                         */
/* ------------------------------------------------------------------ */

static inline void dto_fill(struct vb_ep *ep, const struct ibv_wc *wc,
			    uint32_t op, uint64_t cookie,
			    struct rapt_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = RAPT_EV_DTO;
	ev->u.dto.ep = ep->handle;
	ev->u.dto.cookie = cookie;
	ev->u.dto.op = op;
	if (vb_unlikely(wc->status != IBV_WC_SUCCESS)) {
		ev->u.dto.status = vb_wc_status(wc->status);
		ev->u.dto.prov_status = rapt_prov_status_wc(wc->status);
	}
}

/* Whether sequence @seq of a ring whose oldest live entry is @head was
 * already retired (a completion after teardown made up its flush). */
static bool seq_old(uint32_t seq, uint32_t head)
{
	return (int32_t)(seq - head) < 0;
}

/* A receive's event, of the EP's ring or of its SRQ's. */
static inline void recv_fill(struct vb_ep *ep, const struct ibv_wc *wc,
		      uint64_t cookie, struct rapt_event *ev)
{
	dto_fill(ep, wc, RAPT_OP_RECV, cookie, ev);
	if (vb_unlikely(wc->status == IBV_WC_LOC_QP_OP_ERR &&
			ep->ia->recv_short_op_err))
		ev->u.dto.status = RAPT_DTO_LOCAL_LENGTH;
	if (wc->status == IBV_WC_SUCCESS) {
		ev->u.dto.length = wc->byte_len;
		if (wc->wc_flags & IBV_WC_WITH_INV) {
			ev->u.dto.flags |= RAPT_DTO_INVALIDATED;
			ev->u.dto.invalidated_rkey = wc->invalidated_rkey;
		}
	}
}

static bool recv_event(struct vb_ep *ep, const struct ibv_wc *wc,
		       struct rapt_event *ev)
{
	uint32_t seq = VB_WRID_SEQ(wc->wr_id);

	/* Retired already (a made-up flush), or (the tail's acquire) not
	 * posted: the entry's cookie was stored before that tail. */
	if (seq_old(seq, load32(&ep->rq_head)) ||
	    !seq_old(seq, load32(&ep->rq_tail)))
		return false;
	recv_fill(ep, wc, ep->rq[seq & ep->rq_mask], ev);
	store32(&ep->rq_head, seq + 1);
	return true;
}

/* The sequence of the last part of the split read @seq belongs to. */
static uint32_t read_last_part(struct vb_ep *ep, uint32_t seq)
{
	uint32_t tail = load32(&ep->sq_tail);

	while (seq + 1 != tail && (ep->sq[seq & ep->sq_mask].flags &
				   VB_SWR_PART))
		seq++;
	return seq;
}

/* Whether to report send-queue completion @seq, entry @e (poll lock). */
static bool send_report(struct vb_ep *ep, uint32_t seq, const struct vb_swr *e,
			bool ok)
{
	if (ep->sq_skipping) {
		if (seq == ep->sq_skip)
			ep->sq_skipping = false;
		if (!seq_old(ep->sq_skip, seq))
			return false;
	}
	if (e->flags & VB_SWR_INTERNAL)
		return false;
	if (e->flags & VB_SWR_PART) {
		if (ok)
			return false;
		/* A part failed: the read fails; its other parts go. */
		ep->sq_skip = read_last_part(ep, seq);
		ep->sq_skipping = ep->sq_skip != seq;
		return true;
	}
	return !ok || !(e->flags & VB_SWR_QUIET);
}

/* An EP's completion event to its EVD: now, or held until ESTABLISHED
 * is out. */
static void dto_deliver(struct vb_ep *ep, struct vb_evd *evd,
			const struct rapt_event *ev)
{
	if (!evd->cevd)
		return;
	if (vb_likely(atomic_load_explicit(&ep->direct, memory_order_acquire)))
		rapt_prov_evd_push(evd->cevd, ev);
	else
		ep_hold(ep, evd->cevd, ev);
}

/*
 * Send-queue completions may come out of post order: siw completes a send
 * or a write once it has gone out and a read when its response is in, so a
 * send posted behind a read completes first.  rapt reports them in post
 * order (as verbs promises and the tcp provider does): each completion is
 * noted in its ring entry, and the head retires the done entries at the
 * front, reporting as it goes.
 */
static void sq_retire(struct vb_ep *ep);

static void send_complete(struct vb_ep *ep, const struct ibv_wc *wc)
{
	uint32_t seq = VB_WRID_SEQ(wc->wr_id);
	uint32_t head = load32(&ep->sq_head), tail = load32(&ep->sq_tail);
	struct vb_swr *e;

	if (seq_old(seq, head) || !seq_old(seq, tail))
		return;		/* retired already (a made-up flush) */
	/* Unsignalled sends and writes posted before @seq are done: the
	 * device completes them in post order (siw's reads excepted, and a
	 * read is always signalled), and one that failed or was flushed had
	 * a completion of its own, already in. */
	for (; head != seq; head++) {
		e = &ep->sq[head & ep->sq_mask];
		if ((e->flags & (VB_SWR_UNSIG | VB_SWR_DONE)) ==
		    VB_SWR_UNSIG) {
			e->flags |= VB_SWR_DONE;
			e->wc_status = IBV_WC_SUCCESS;
		}
	}
	e = &ep->sq[seq & ep->sq_mask];
	e->flags |= VB_SWR_DONE;
	e->wc_status = (uint8_t)wc->status;
	sq_retire(ep);
}

/* Retire the done entries at the front of the send ring, reporting them
 * (the CQ's poll lock, or both at teardown). */
static void sq_retire(struct vb_ep *ep)
{
	uint32_t head = load32(&ep->sq_head), tail = load32(&ep->sq_tail);
	struct rapt_event ev;
	struct vb_swr *e;
	bool report, ok;

	while (head != tail) {
		e = &ep->sq[head & ep->sq_mask];
		if (!(e->flags & VB_SWR_DONE))
			break;
		ok = e->wc_status == IBV_WC_SUCCESS;
		report = send_report(ep, head, e, ok);
		if (report) {
			memset(&ev, 0, sizeof(ev));
			ev.type = RAPT_EV_DTO;
			ev.u.dto.ep = ep->handle;
			ev.u.dto.cookie = e->cookie;
			ev.u.dto.op = e->op;
			ev.u.dto.status = vb_wc_status(e->wc_status);
			if (ok)
				ev.u.dto.length = e->length;
			else
				ev.u.dto.prov_status =
					rapt_prov_status_wc(e->wc_status);
		}
		/* No longer outstanding (counted before the head moves: a
		 * post may see it gone first, never the other way). */
		if (e->flags & (VB_SWR_PART | VB_SWR_INTERNAL))
			atomic_fetch_sub_explicit(&ep->sq_extra, 1,
						  memory_order_release);
		/* The entry is free for a post from here on. */
		store32(&ep->sq_head, ++head);
		if (report)
			dto_deliver(ep, ep->req_evd, &ev);
	}
}

/* A completion with an error breaks the connection: the final event
 * says BROKEN.  The device ends the connection itself (and rdma_cm
 * reports it); the engine makes sure. */
static void ep_error_deferred(void *arg)
{
	vb_ep_break(arg, 0);
}

/**
 * vb_ep_break - end a connection that broke: flushes, BROKEN with
 * @prov_status, and the peer told (engine's runner)
 * @ep: the EP
 * @prov_status: the final event's prov_status
 */
void vb_ep_break(struct vb_ep *ep, int32_t prov_status)
{
	struct rapt_prov_conn_event ce = { .type = RAPT_EV_BROKEN,
					   .prov_status = prov_status };

	vb_ep_shutdown(ep, &ce);
	vb_cm_hangup(ep);
}

static void note_error(struct vb_ep *ep, const struct ibv_wc *wc)
{
	bool first;

	pthread_mutex_lock(&ep->lock);
	first = !ep->broken && !ep->teardown && ep->state == VB_EP_UP;
	ep->broken = true;
	pthread_mutex_unlock(&ep->lock);
	vb_dbg("%s: QP %u: %s (vendor error %#x)", ep->ia->dev, wc->qp_num,
	       vb_wc_status_str(wc->status), wc->vendor_err);
	if (first && rapt_engine_defer(ep->ia->eng, ep_error_deferred, ep))
		vb_err("cannot schedule the teardown of a broken connection");
}

/**
 * vb_ep_complete - dispatch one completion to its EP's EVD
 * @ia: the IA
 * @wc: the completion
 *
 * Called with the polled CQ's poll lock held.
 */
void vb_ep_complete(struct vb_ia *ia, const struct ibv_wc *wc)
{
	struct vb_ep *ep;
	struct rapt_event ev;
	uint64_t cookie;

	if (vb_unlikely(VB_WRID_SLOT(wc->wr_id) == VB_SLOT_SRQ)) {
		ep = vb_srq_complete(ia, wc, &cookie);
		if (!ep)
			return;
		recv_fill(ep, wc, cookie, &ev);
		dto_deliver(ep, ep->recv_evd, &ev);
		goto error;
	}
	ep = vb_slot_ep(ia, VB_WRID_SLOT(wc->wr_id), VB_WRID_GEN(wc->wr_id));
	if (!ep)
		return;
	if (wc->status != IBV_WC_SUCCESS)
		vb_dbg("QP %u: %s %u: %s", wc->qp_num,
		       wc->wr_id & VB_WRID_RECV ? "receive" : "send",
		       VB_WRID_SEQ(wc->wr_id), vb_wc_status_str(wc->status));
	if (wc->wr_id & VB_WRID_RECV) {
		if (recv_event(ep, wc, &ev))
			dto_deliver(ep, ep->recv_evd, &ev);
	} else {
		send_complete(ep, wc);
	}
error:
	if (wc->status != IBV_WC_SUCCESS && wc->status != IBV_WC_WR_FLUSH_ERR)
		note_error(ep, wc);
}

/* ------------------------------------------------------------------ */
/* Posting                                                             */
/* ------------------------------------------------------------------ */

static int post_failed(struct vb_ep *ep, const char *what, int err)
{
	rapt_prov_set_error("%s: %s on QP %u: %s", vb_tp->name, what,
			    ep->qp->qp_num, strerror(err));
	return err == ENOMEM ? RAPT_ENOSPC : rapt_errno_status(err);
}

int vb_post_recv(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		 uint64_t cookie)
{
	struct vb_ep *ep = pep;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge zero;
	uint32_t seq;
	bool polled = false;
	int err, nc;

	vb_recv_wr(&wr, sgl, nsge, &zero, ep->ctl, ep->ctl_mr);
again:
	rapt_lock(&ep->rq_lock);
	if (vb_unlikely(ep->dead)) {
		rapt_unlock(&ep->rq_lock);
		dto_flushed(ep, ep->recv_evd, RAPT_OP_RECV, cookie);
		return 0;
	}
	seq = ep->rq_tail;
	if (vb_unlikely(seq - load32(&ep->rq_head) >= ep->rq_max)) {
		rapt_unlock(&ep->rq_lock);
		if (!polled && ep->recv_evd->cq) {
			polled = true;
			if (vb_cq_poll(ep->recv_evd))
				goto again;
		}
		return RAPT_ENOSPC;
	}
	ep->rq[seq & ep->rq_mask] = cookie;
	wr.wr_id = wrid(ep, seq, true);
	/* The tail moves first, as the send ring's does (post_sq): another
	 * thread may poll the completion before ibv_post_recv() has
	 * returned, and its acquire of the tail is what orders this
	 * cookie's store before its load there (recv_event).  A failed
	 * post moves it back: no completion reads it meanwhile (none comes
	 * for a request the device refused), and the teardown, the only
	 * other reader without rq_lock, comes after ep->dead, set under
	 * this lock. */
	store32(&ep->rq_tail, seq + 1);
	nc = vb_post_guard(ep->ia);
	err = ibv_post_recv(ep->qp, &wr, &bad);
	vb_post_unguard(nc);
	if (vb_unlikely(err))
		store32(&ep->rq_tail, seq);
	rapt_unlock(&ep->rq_lock);
	return err ? post_failed(ep, "ibv_post_recv", err) : 0;
}

static unsigned int send_flags(uint32_t flags)
{
	unsigned int f = IBV_SEND_SIGNALED;

	if (flags & RAPT_POST_SOLICITED)
		f |= IBV_SEND_SOLICITED;
	if (flags & RAPT_POST_FENCE)
		f |= IBV_SEND_FENCE;
	if (flags & RAPT_POST_INLINE)
		f |= IBV_SEND_INLINE;
	return f;
}

static uint64_t sgl_bytes(const struct rapt_sge *sgl, uint32_t nsge)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < nsge; i++)
		n += sgl[i].length;
	return n;
}

/* Entries of @e[0..n-1] that are no operation of the consumer's. */
static uint32_t extra_of(const struct vb_swr *e, uint32_t n)
{
	uint32_t i, k = 0;

	for (i = 0; i < n; i++)
		k += !!(e[i].flags & (VB_SWR_PART | VB_SWR_INTERNAL));
	return k;
}

/*
 * Whether the send ring takes @n entries that are @ops operations of the
 * consumer's (sq_lock held): RAPT_ESTATE once the EP is dead (the reason
 * set), RAPT_ENOSPC when full.
 */
static inline int sq_room(struct vb_ep *ep, uint32_t n, uint32_t ops)
{
	uint32_t out = ep->sq_tail - load32(&ep->sq_head);

	if (vb_unlikely(ep->dead)) {
		rapt_prov_set_error("%s: the connection is going down",
				    vb_tp->name);
		return RAPT_ESTATE;
	}
	if (vb_unlikely(out + n > ep->sq_cap ||
			out - atomic_load_explicit(&ep->sq_extra,
						   memory_order_acquire) +
			ops > ep->sq_max))
		return RAPT_ENOSPC;
	return 0;
}

/*
 * Whether the work request of ring entry @e goes unsignalled (sq_lock
 * held).  A send or write the consumer suppressed does, as ibv_post_send
 * allows: the device writes no completion for it, the next completion
 * retires it (send_complete), and a failed or flushed one completes with
 * its error all the same.  One in VB_UNSIG_RUN, and one in half the
 * queue (max_send, or the ring), is signalled so that the ring drains;
 * reads always are (siw completes a read after the sends behind it).
 */
static bool sq_unsignal(struct vb_ep *ep, const struct vb_swr *e)
{
	/* Half of what fits: the consumer's operations or the QP's WRs. */
	uint32_t run = (ep->sq_max < ep->sq_cap ? ep->sq_max :
			ep->sq_cap) / 2;

	if (run > VB_UNSIG_RUN)
		run = VB_UNSIG_RUN;
	if ((e->flags & VB_SWR_QUIET) && e->op != RAPT_OP_RDMA_READ &&
	    ep->sq_unsig + 1 < run) {
		ep->sq_unsig++;
		return true;
	}
	ep->sq_unsig = 0;
	return false;
}

/*
 * ibv_post_send() refused @wr from @bad on (sq_lock held, released here):
 * what it took stays (its completions will come), the rest is undone.
 */
static int __attribute__((noinline))
post_sq_failed(struct vb_ep *ep, struct ibv_send_wr *wr,
	       const struct vb_swr *e, uint32_t n, uint32_t ops, uint32_t seq,
	       uint32_t unsig, const struct ibv_send_wr *bad, int err)
{
	uint32_t i;

	for (i = 0; i < n && &wr[i] != bad; i++)
		;
	store32(&ep->sq_tail, seq + i);
	if (!i)
		ep->sq_unsig = unsig;
	if (n != ops)	/* a chain is one operation or none */
		atomic_fetch_sub_explicit(&ep->sq_extra, extra_of(e + i, n - i),
					  memory_order_release);
	if (i)
		vb_err("QP %u: ibv_post_send took part of a chain",
		       ep->qp->qp_num);
	rapt_unlock(&ep->sq_lock);
	return post_failed(ep, "ibv_post_send", err);
}

/*
 * Post @n chained work requests (@wr[0..n-1]) under one lock; @e[i] is
 * the ring entry of @wr[i].  All or nothing.  They are one operation of
 * the consumer's (a read split into parts, a send, a write), or none
 * (the provider's own RTR): what counts against the EP's max_send.
 * Inlined, so that a post of one request (@n a constant 1) loses the
 * loops.
 */
static inline __attribute__((always_inline)) int
post_sq(struct vb_ep *ep, struct ibv_send_wr *wr, const struct vb_swr *e,
	uint32_t n)
{
	struct ibv_send_wr *bad;
	uint32_t seq, i, ops = n - extra_of(e, n), unsig;
	bool polled = false;
	int err, ret, nc;

	for (i = 0; i + 1 < n; i++)
		wr[i].next = &wr[i + 1];
	wr[n - 1].next = NULL;
again:
	rapt_lock(&ep->sq_lock);
	ret = sq_room(ep, n, ops);
	if (vb_unlikely(ret)) {
		rapt_unlock(&ep->sq_lock);
		if (ret == RAPT_ENOSPC && !polled && ep->req_evd->cq) {
			polled = true;
			if (vb_cq_poll(ep->req_evd))
				goto again;
		}
		return ret;
	}
	seq = ep->sq_tail;
	unsig = ep->sq_unsig;
	for (i = 0; i < n; i++) {
		ep->sq[(seq + i) & ep->sq_mask] = e[i];
		wr[i].wr_id = wrid(ep, seq + i, false);
	}
	if (n == 1 && sq_unsignal(ep, &e[0])) {
		wr[0].send_flags &= ~IBV_SEND_SIGNALED;
		ep->sq[seq & ep->sq_mask].flags |= VB_SWR_UNSIG;
	}
	if (n != ops)
		atomic_fetch_add_explicit(&ep->sq_extra, n - ops,
					  memory_order_release);
	/* The tail moves first: another thread may poll the completion
	 * before ibv_post_send() has returned. */
	store32(&ep->sq_tail, seq + n);
	nc = vb_post_guard(ep->ia);
	err = ibv_post_send(ep->qp, wr, &bad);
	vb_post_unguard(nc);
	if (vb_unlikely(err))
		return post_sq_failed(ep, wr, e, n, ops, seq, unsig, bad, err);
	rapt_unlock(&ep->sq_lock);
	return 0;
}

static void swr_set(struct vb_swr *e, uint64_t cookie, uint8_t op,
		    uint64_t len, uint32_t flags)
{
	e->cookie = cookie;
	e->op = op;
	e->length = len;
	e->flags = (flags & RAPT_POST_SUPPRESS) ? VB_SWR_QUIET : 0;
}

int vb_post_send(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		 uint64_t cookie, uint32_t flags, uint32_t inv_rkey)
{
	struct ibv_send_wr wr = {
		.sg_list = (struct ibv_sge *)sgl,
		.num_sge = (int)nsge,
		.send_flags = send_flags(flags),
	};
	struct vb_swr e;

	if (flags & RAPT_PROV_POST_INVALIDATE) {
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = inv_rkey;
	} else {
		wr.opcode = IBV_WR_SEND;
	}
	swr_set(&e, cookie, RAPT_OP_SEND, sgl_bytes(sgl, nsge), flags);
	return post_sq(pep, &wr, &e, 1);
}

int vb_post_write(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		  uint64_t cookie, uint64_t raddr, uint32_t rkey,
		  uint32_t flags)
{
	struct ibv_send_wr wr = {
		.sg_list = (struct ibv_sge *)sgl,
		.num_sge = (int)nsge,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = send_flags(flags),
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};
	struct vb_swr e;

	swr_set(&e, cookie, RAPT_OP_RDMA_WRITE, sgl_bytes(sgl, nsge), flags);
	return post_sq(pep, &wr, &e, 1);
}

/* SGEs one RDMA read may scatter into on this device. */
static uint32_t read_sge_max(const struct vb_ep *ep)
{
	int m = ep->ia->dattr.max_sge_rd;

	return m > 0 ? (uint32_t)m : (uint32_t)ep->ia->dattr.max_sge;
}

/* A read into more SGEs than the device reads into at once: parts. */
static int __attribute__((noinline))
post_read_split(struct vb_ep *ep, const struct rapt_sge *sgl, uint32_t nsge,
		uint64_t cookie, uint64_t raddr, uint32_t rkey,
		uint32_t flags, uint32_t per)
{
	uint32_t n, i, k;
	struct ibv_send_wr wr[32];
	struct vb_swr e[32];
	uint64_t total = sgl_bytes(sgl, nsge), off = 0;

	n = (nsge + per - 1) / per;
	if (n > 32) {
		rapt_prov_set_error("%s: a read into %u SGEs (the device reads into %u at once)",
				    vb_tp->name, nsge, per);
		return RAPT_EINVAL;
	}
	memset(wr, 0, n * sizeof(wr[0]));
	for (i = 0; i < n; i++) {
		k = i + 1 < n ? per : nsge - i * per;
		wr[i].sg_list = (struct ibv_sge *)(sgl + i * per);
		wr[i].num_sge = (int)k;
		wr[i].opcode = IBV_WR_RDMA_READ;
		wr[i].wr.rdma.remote_addr = raddr + off;
		wr[i].wr.rdma.rkey = rkey;
		/* The fence waits for earlier reads: the first part has it. */
		wr[i].send_flags = send_flags(i ? flags & ~RAPT_POST_FENCE :
					      flags);
		off += sgl_bytes(sgl + i * per, (uint32_t)wr[i].num_sge);
		swr_set(&e[i], cookie, RAPT_OP_RDMA_READ, total, flags);
		if (i + 1 < n)
			e[i].flags = VB_SWR_PART;
	}
	return post_sq(ep, wr, e, n);
}

int vb_post_read(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		 uint64_t cookie, uint64_t raddr, uint32_t rkey,
		 uint32_t flags)
{
	struct vb_ep *ep = pep;
	uint32_t per = read_sge_max(ep);
	struct ibv_send_wr wr = {
		.sg_list = (struct ibv_sge *)sgl,
		.num_sge = (int)nsge,
		.opcode = IBV_WR_RDMA_READ,
		.send_flags = send_flags(flags),
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};
	struct vb_swr e;

	if (vb_unlikely(nsge > per))
		return post_read_split(ep, sgl, nsge, cookie, raddr, rkey,
				       flags, per);
	swr_set(&e, cookie, RAPT_OP_RDMA_READ, sgl_bytes(sgl, nsge), flags);
	return post_sq(ep, &wr, &e, 1);
}

/**
 * vb_ep_post_done - an operation with nothing for the device to do, in
 * the send ring: it completes SUCCESS in order with what was posted
 * before it
 * @ep: the EP
 * @op: its op
 * @cookie: its cookie
 * @flags: RAPT_POST_SUPPRESS
 *
 * Return: 0, RAPT_ESTATE, RAPT_ENOSPC.
 */
int vb_ep_post_done(struct vb_ep *ep, uint8_t op, uint64_t cookie,
		    uint32_t flags)
{
	struct vb_evd *evd = ep->req_evd;
	uint32_t seq;
	struct vb_swr *e;
	int ret;

	/* It completes behind the ring's unsignalled tail: a completion
	 * must come to retire that. */
	vb_ep_sends_mark(ep);
	rapt_lock(&evd->poll_lock);
	rapt_lock(&ep->sq_lock);
	seq = ep->sq_tail;
	ret = sq_room(ep, 1, 1);
	if (!ret) {
		e = &ep->sq[seq & ep->sq_mask];
		swr_set(e, cookie, op, 0, flags);
		e->flags |= VB_SWR_DONE;
		e->wc_status = IBV_WC_SUCCESS;
		store32(&ep->sq_tail, seq + 1);
	}
	rapt_unlock(&ep->sq_lock);
	if (!ret)
		sq_retire(ep);
	rapt_unlock(&evd->poll_lock);
	return ret;
}

/**
 * vb_ep_post_internal_write - the provider's own RDMA write (the RTR)
 * @ep: the EP
 * @raddr: where
 * @rkey: the peer's key
 * @len: bytes of ep->ctl[1], at most 8, sent inline; 0 for a zero-length
 *       write
 *
 * Never reported to the consumer.
 *
 * Return: 0, or a RAPT_E* code.
 */
int vb_ep_post_internal_write(struct vb_ep *ep, uint64_t raddr,
			      uint32_t rkey, uint32_t len)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct vb_swr e = { .op = RAPT_OP_RDMA_WRITE,
			    .flags = VB_SWR_INTERNAL };

	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)&ep->ctl[1];
	sge.length = len;
	sge.lkey = ep->ctl_mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED |
			(len && len <= ep->attr.max_inline ? IBV_SEND_INLINE :
			 0);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return post_sq(ep, &wr, &e, 1);
}

/**
 * vb_ep_sends_mark - have the unsignalled work requests at the tail of
 * @ep's send ring retired
 * @ep: the EP, connected
 *
 * Their completions are made by the next signalled one (send_complete);
 * when the consumer posts none, before a graceful close, teardown or an
 * operation the ring completes itself, this posts one of the provider's
 * own: a zero-length RDMA Write, which no responder acts on (IB C9-88:
 * no R_Key check; RFC 5040: nothing placed; siw and the tcp provider
 * skip it).  Nothing when there are none.
 *
 * Return: 0, or a RAPT_E* code (the ring full, the EP dead: the tail
 * then retires with the next completion or teardown's flushes).
 */
int vb_ep_sends_mark(struct vb_ep *ep)
{
	bool need;

	rapt_lock(&ep->sq_lock);
	need = ep->sq_unsig && !ep->dead;
	rapt_unlock(&ep->sq_lock);
	return need ? vb_ep_post_internal_write(ep, 0, 1, 0) : 0;
}

bool vb_ep_sends_done(struct vb_ep *ep)
{
	return load32(&ep->sq_head) == load32(&ep->sq_tail);
}

/* ------------------------------------------------------------------ */
/* Teardown                                                            */
/* ------------------------------------------------------------------ */

static uint64_t now_ns(void)
{
	return rapt_now_ns();
}

static bool rings_empty(struct vb_ep *ep)
{
	return load32(&ep->rq_head) == ep->rq_tail &&
	       load32(&ep->sq_head) == ep->sq_tail;
}

/* Make up the flushes the device did not deliver (both poll locks). */
static void drain_leftovers(struct vb_ep *ep)
{
	uint32_t s;
	struct vb_swr *e;

	for (s = load32(&ep->rq_head); s != ep->rq_tail; s++)
		dto_flushed(ep, ep->recv_evd, RAPT_OP_RECV,
			    ep->rq[s & ep->rq_mask]);
	store32(&ep->rq_head, ep->rq_tail);
	/* Those that did complete (behind one that did not) keep their
	 * status; all are reported in post order. */
	for (s = load32(&ep->sq_head); s != ep->sq_tail; s++) {
		e = &ep->sq[s & ep->sq_mask];
		if (!(e->flags & VB_SWR_DONE)) {
			e->flags |= VB_SWR_DONE;
			e->wc_status = IBV_WC_WR_FLUSH_ERR;
		}
	}
	sq_retire(ep);
}

/* Poll until every work request of @ep has completed (the QP is in the
 * error state: they all flush). */
static void ep_drain(struct vb_ep *ep)
{
	uint64_t end = now_ns() + VB_DRAIN_NS;
	struct timespec ts = { 0, 100000 };

	for (;;) {
		vb_cq_poll(ep->recv_evd);
		if (ep->req_evd != ep->recv_evd)
			vb_cq_poll(ep->req_evd);
		if (rings_empty(ep))
			return;
		if (now_ns() > end)
			break;
		rapt_sys_nanosleep(&ts);
	}
	vb_dbg("QP %u: %u receives and %u sends did not flush; completing them FLUSHED",
		ep->qp->qp_num, ep->rq_tail - load32(&ep->rq_head),
		ep->sq_tail - load32(&ep->sq_head));
	rapt_lock(&ep->recv_evd->poll_lock);
	if (ep->req_evd != ep->recv_evd)
		rapt_lock(&ep->req_evd->poll_lock);
	drain_leftovers(ep);
	if (ep->req_evd != ep->recv_evd)
		rapt_unlock(&ep->req_evd->poll_lock);
	rapt_unlock(&ep->recv_evd->poll_lock);
}

static void qp_to_error(struct vb_ep *ep)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	int err;

	err = ibv_modify_qp(ep->qp, &qa, IBV_QP_STATE);
	if (err)
		vb_warn("QP %u: to the error state: %s", ep->qp->qp_num,
			strerror(err));
}

/**
 * vb_ep_shutdown - end an EP's connection, flushes first
 * @ep: the EP
 * @ce: the final event, reported unless the EP is being freed (a
 *      DISCONNECTED of a connection that broke becomes BROKEN); NULL for
 *      none
 *
 * Runs on the engine's runner.  Nothing happens the second time.
 */
void vb_ep_shutdown(struct vb_ep *ep, const struct rapt_prov_conn_event *ce)
{
	struct rapt_prov_conn_event c;
	bool was_up;

	pthread_mutex_lock(&ep->lock);
	if (ep->teardown || ep->state == VB_EP_DOWN) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	ep->teardown = true;
	vb_ep_timer(ep, VB_TMR_NONE, 0);
	vb_ka_stop(ep);
	was_up = ep->state == VB_EP_UP || ep->state == VB_EP_CLOSING;
	held_release(ep, !was_up);
	atomic_store(&ep->direct, true);
	pthread_mutex_unlock(&ep->lock);

	/* The flush completes what is left, and the mark then tells those
	 * that went out unsignalled and are done. */
	if (was_up)
		vb_ep_sends_mark(ep);
	rapt_lock(&ep->sq_lock);
	rapt_lock(&ep->rq_lock);
	ep->dead = true;
	rapt_unlock(&ep->rq_lock);
	rapt_unlock(&ep->sq_lock);
	vb_dbg("QP %u: teardown (%s): sends %u..%u, receives %u..%u",
	       ep->qp->qp_num, ce ? rapt_event_name(ce->type) : "free",
	       load32(&ep->sq_head), ep->sq_tail, load32(&ep->rq_head),
	       ep->rq_tail);
	qp_to_error(ep);
	ep_drain(ep);

	pthread_mutex_lock(&ep->lock);
	if (!ep->freeing && ce) {
		c = *ce;
		if (c.type == RAPT_EV_DISCONNECTED && ep->broken)
			c.type = RAPT_EV_BROKEN;
		rapt_prov_ep_event(ep->cep, &c);
	}
	ep->state = VB_EP_DOWN;
	pthread_mutex_unlock(&ep->lock);
}

/* ------------------------------------------------------------------ */
/* Create and free                                                     */
/* ------------------------------------------------------------------ */

/**
 * vb_qp_to_init - move the EP's new QP to INIT
 * @ep: the EP (ep->qp in RESET)
 * @qa: the transport's attributes (state and access rights are set here)
 * @mask: which of @qa's other fields to apply
 *
 * Return: 0, or a RAPT_E* code (the reason set).
 */
int vb_qp_to_init(struct vb_ep *ep, struct ibv_qp_attr *qa, int mask)
{
	int err;

	qa->qp_state = IBV_QPS_INIT;
	qa->qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	err = ibv_modify_qp(ep->qp, qa,
			    mask | IBV_QP_STATE | IBV_QP_ACCESS_FLAGS);
	if (err) {
		rapt_prov_set_error("%s: QP %u to INIT: %s", vb_tp->name,
				    ep->qp->qp_num, strerror(err));
		return rapt_errno_status(err);
	}
	return 0;
}

/*
 * Send-queue entries for @a's max_send operations: a read into more SGEs
 * than the device reads into at once is split (vb_post_read()), one
 * entry per part, and the provider's own writes take two: the RTR or a
 * mark (vb_ep_sends_mark()), and the peer timeout's probe
 * (vb_keepalive.c).  Within the device's max_qp_wr.
 */
static uint32_t sq_entries(const struct vb_ep *ep,
			   const struct rapt_ep_attr *a)
{
	uint32_t per = read_sge_max(ep);
	uint32_t sge = a->max_send_sge ? a->max_send_sge : 1;
	uint64_t n = (uint64_t)a->max_send * ((sge + per - 1) / per) + 2;
	uint64_t dev = ep->ia->dattr.max_qp_wr > 0 ?
		       (uint64_t)ep->ia->dattr.max_qp_wr : n;

	n = n < dev ? n : dev;
	return (uint32_t)(n > a->max_send ? n : a->max_send);
}

/**
 * vb_qp_create - a QP for @ep with @a's sizes, in INIT
 * @ep: the EP; on ep->srq if set
 * @a: its sizes
 *
 * On success ep->qp is the new QP; the old one, if any, is the caller's.
 *
 * Return: 0, or a RAPT_E* code (the reason set).
 */
int vb_qp_create(struct vb_ep *ep, const struct rapt_ep_attr *a)
{
	struct ibv_qp_init_attr qa;
	struct ibv_qp *old = ep->qp;
	int err, ret;

	memset(&qa, 0, sizeof(qa));
	qa.qp_context = ep;
	qa.send_cq = ep->req_evd->cq;
	qa.recv_cq = ep->recv_evd->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = sq_entries(ep, a);
	qa.cap.max_recv_wr = a->max_recv;
	qa.cap.max_send_sge = a->max_send_sge ? a->max_send_sge : 1;
	qa.cap.max_recv_sge = a->max_recv_sge ? a->max_recv_sge : 1;
	qa.cap.max_inline_data = a->max_inline;
	if (ep->srq) {
		qa.srq = ep->srq->srq;
		qa.cap.max_recv_wr = 0;
		qa.cap.max_recv_sge = 0;
	}
	ep->qp = ibv_create_qp(ep->pz->pd, &qa);
	if (!ep->qp) {
		err = errno;
		ep->qp = old;
		rapt_prov_set_error("%s: ibv_create_qp (send %u, recv %u): %s%s",
				    vb_tp->name, a->max_send, a->max_recv,
				    strerror(err),
				    err == ENOMEM ?
				    " (siw maps the queues of one context into a fixed window: fewer or smaller EPs)" :
				    "");
		return err == ENOMEM ? RAPT_ENOMEM : rapt_errno_status(err);
	}
	ret = vb_tp->qp_init(ep);
	if (ret) {
		ibv_destroy_qp(ep->qp);
		ep->qp = old;
	}
	return ret;
}

static int rings_alloc(struct vb_ep *ep)
{
	uint32_t cap = sq_entries(ep, &ep->attr);
	uint32_t rq = pow2(ep->attr.max_recv), sq = pow2(cap);

	ep->rq = calloc(rq, sizeof(*ep->rq));
	ep->sq = calloc(sq, sizeof(*ep->sq));
	if (!ep->rq || !ep->sq) {
		free(ep->rq);
		free(ep->sq);
		ep->rq = NULL;
		ep->sq = NULL;
		return RAPT_ENOMEM;
	}
	ep->rq_mask = rq - 1;
	ep->sq_mask = sq - 1;
	ep->rq_max = ep->attr.max_recv;
	ep->sq_max = ep->attr.max_send;
	ep->sq_cap = cap;
	return 0;
}

static int ctl_alloc(struct vb_ep *ep)
{
	void *buf;
	int ret;

	ret = vb_small_mr(ep->pz, VB_CTL_BYTES,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			  "an EP's control word", &buf, &ep->ctl_mr);
	ep->ctl = buf;
	return ret;
}

static void ep_release(struct vb_ep *ep)
{
	if (ep->ctl_mr)
		ibv_dereg_mr(ep->ctl_mr);
	free(ep->ctl);
	free(ep->rq);
	free(ep->sq);
	free(ep->held);
	pthread_cond_destroy(&ep->conn_cv);
	pthread_mutex_destroy(&ep->lock);
	free(ep);
}

int vb_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
		 struct rapt_ep *handle, const struct rapt_ep_attr *attr,
		 void *recv_pevd, void *req_pevd, void *conn_pevd,
		 void **pep)
{
	struct vb_ia *ia = pia;
	struct vb_ep *ep;
	int ret;

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return RAPT_ENOMEM;
	ep->kind = VB_CM_EP;
	ep->ia = ia;
	ep->pz = ppz;
	ep->cep = cep;
	ep->handle = handle;
	ep->attr = *attr;
	ep->recv_evd = recv_pevd ? recv_pevd : ia->null_evd;
	ep->req_evd = req_pevd ? req_pevd : ia->null_evd;
	ep->conn_evd = conn_pevd;
	pthread_mutex_init(&ep->lock, NULL);
	pthread_cond_init(&ep->conn_cv, NULL);
	rapt_lock_init(&ep->sq_lock);
	rapt_lock_init(&ep->rq_lock);
	rapt_timer_init(&ep->timer, vb_ep_timer_fire);
	vb_ka_init(ep);
	ret = rings_alloc(ep);
	if (!ret)
		ret = ctl_alloc(ep);
	if (ret)
		goto err_free;
	ret = vb_ia_slot_get(ia, ep);
	if (ret)
		goto err_free;
	ret = vb_qp_create(ep, &ep->attr);
	if (ret)
		goto err_slot;
	vb_cm_ep_added(ia);
	*pep = ep;
	return 0;

err_slot:
	vb_ia_slot_put(ia, ep);
err_free:
	ep_release(ep);
	return ret;
}

/* The engine's part of ep_free: the connection ends with no event, and
 * no CM event reaches the EP any more. */
static void ep_free_call(void *arg)
{
	struct vb_ep *ep = arg;

	pthread_mutex_lock(&ep->lock);
	ep->freeing = true;
	pthread_mutex_unlock(&ep->lock);
	vb_ep_shutdown(ep, NULL);
	vb_ka_stop(ep);
	if (ep->id)
		ep->id->context = NULL;
}

/* Once this returns no poller holds @ep (they hold a poll lock). */
static void ep_unpublish(struct vb_ep *ep)
{
	vb_ia_slot_put(ep->ia, ep);
	if (ep->srq)
		vb_qpmap_del(ep->ia, ep->qp->qp_num);
	rapt_lock(&ep->recv_evd->poll_lock);
	rapt_unlock(&ep->recv_evd->poll_lock);
	rapt_lock(&ep->req_evd->poll_lock);
	rapt_unlock(&ep->req_evd->poll_lock);
}

/**
 * vb_ep_destroy - free what an EP holds (its id is gone)
 * @ep: the EP
 */
void vb_ep_destroy(struct vb_ep *ep)
{
	int err;

	ep_unpublish(ep);
	err = ibv_destroy_qp(ep->qp);
	if (err)
		vb_err("ibv_destroy_qp: %s", strerror(err));
	vb_cm_ep_removed(ep->ia);
	ep_release(ep);
}

int vb_ep_free(void *pep)
{
	struct vb_ep *ep = pep;

	rapt_engine_call(ep->ia->eng, ep_free_call, ep);
	vb_cm_ep_release(ep);
	vb_ep_destroy(ep);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Modify                                                              */
/* ------------------------------------------------------------------ */

/* New queue sizes on an EP that never posted: a new QP and rings. */
static int ep_resize(struct vb_ep *ep, const struct rapt_ep_attr *a)
{
	struct vb_ep tmp;
	struct ibv_qp *old = ep->qp;
	int ret;

	memset(&tmp, 0, sizeof(tmp));
	tmp.ia = ep->ia;
	tmp.attr = *a;
	ret = rings_alloc(&tmp);
	if (ret)
		return ret;
	ret = vb_qp_create(ep, a);
	if (ret) {
		free(tmp.rq);
		free(tmp.sq);
		return ret;
	}
	if (ep->srq)
		vb_qpmap_swap(ep->ia, old->qp_num, ep);
	ibv_destroy_qp(old);
	free(ep->rq);
	free(ep->sq);
	ep->rq = tmp.rq;
	ep->sq = tmp.sq;
	ep->rq_mask = tmp.rq_mask;
	ep->sq_mask = tmp.sq_mask;
	ep->rq_max = tmp.rq_max;
	ep->sq_max = tmp.sq_max;
	ep->sq_cap = tmp.sq_cap;
	return 0;
}

int vb_ep_modify(void *pep, const struct rapt_ep_attr *a, uint32_t mask)
{
	struct vb_ep *ep = pep;
	bool sizes;
	int ret = 0;

	pthread_mutex_lock(&ep->lock);
	sizes = a->max_send != ep->attr.max_send ||
		a->max_recv != ep->attr.max_recv;
	if (sizes) {
		rapt_lock(&ep->sq_lock);
		rapt_lock(&ep->rq_lock);
		if (ep->state != VB_EP_IDLE || ep->rq_tail || ep->sq_tail) {
			rapt_prov_set_error("%s: queue sizes are fixed once the EP has posted or connected",
					    vb_tp->name);
			ret = RAPT_ENOTSUP;
		} else {
			ret = ep_resize(ep, a);
		}
		rapt_unlock(&ep->rq_lock);
		rapt_unlock(&ep->sq_lock);
	}
	if (!ret)
		ep->attr = *a;
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Reset and status                                                    */
/* ------------------------------------------------------------------ */

/* The engine's part of ep_reset: no CM event of the old id reaches the
 * EP any more (a late one, such as iWARP's after the final event). */
static void ep_reset_call(void *arg)
{
	struct vb_ep *ep = arg;

	if (ep->id)
		ep->id->context = NULL;
}

/*
 * The EP's QP, flushed and in the error state, ready for a new
 * connection: through RESET back to INIT where the transport allows it
 * (IB), which keeps the QP, or a new QP of the same sizes (iWARP, or a
 * device that refuses RESET).  Under both ring locks: no post meets the
 * QP between states.
 */
static int qp_renew(struct vb_ep *ep)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp *old = ep->qp;
	int err = 0, ret;

	if (vb_tp->qp_reuse) {
		err = ibv_modify_qp(ep->qp, &qa, IBV_QP_STATE);
		if (!err && !vb_tp->qp_init(ep))
			return 0;
		vb_dbg("QP %u: not reusable (%s): a new QP", ep->qp->qp_num,
		       err ? strerror(err) : "INIT refused");
	}
	ret = vb_qp_create(ep, &ep->attr);
	if (ret)
		return ret;
	if (ep->srq)
		vb_qpmap_swap(ep->ia, old->qp_num, ep);
	err = ibv_destroy_qp(old);
	if (err)
		vb_err("ibv_destroy_qp: %s", strerror(err));
	return 0;
}

/**
 * vb_ep_reset - the ep_reset op: a finished EP ready for a new connection
 * @pep: the EP; the core has seen its final event
 *
 * The old rdma_cm id goes, the QP returns to INIT (receives may be posted
 * again at once; before, a post fails as on any finished EP), and the
 * connection's state is forgotten.  PZ, EVDs, sizes and the rings' slot
 * stay.
 *
 * Return: 0, or a RAPT_E* code with the EP still finished (the reason
 * set).
 */
int vb_ep_reset(void *pep)
{
	struct vb_ep *ep = pep;
	int ret;

	rapt_engine_call(ep->ia->eng, ep_reset_call, ep);
	vb_cm_ep_release(ep);
	pthread_mutex_lock(&ep->lock);
	rapt_lock(&ep->sq_lock);
	rapt_lock(&ep->rq_lock);
	ret = qp_renew(ep);
	if (!ret) {
		memset(ep->ctl, 0, VB_CTL_BYTES);
		ep->sq_skipping = false;
		ep->sq_unsig = 0;
		ep->dead = false;
	}
	rapt_unlock(&ep->rq_lock);
	rapt_unlock(&ep->sq_lock);
	if (!ret) {
		vb_ep_timer(ep, VB_TMR_NONE, 0);
		vb_ka_stop(ep);
		ep->state = VB_EP_IDLE;
		atomic_store(&ep->direct, false);
		ep->teardown = false;
		ep->broken = false;
		ep->kernel_up = false;
		ep->connect_tries = 0;
		ep->hangup_later = false;
		ep->disc_graceful = false;
		ep->nheld = 0;
		ep->pdata_len = 0;
		ep->ird = 0;
		ep->ord = 0;
		ep->peer_rtr = 0;
		memset(&ep->remote, 0, sizeof(ep->remote));
	}
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/**
 * vb_ep_get_status - the ep_get_status op
 * @pep: the EP
 * @recv: receives posted and not completed
 * @req: sends and RDMA operations posted and not completed
 *
 * Return: 0.
 */
int vb_ep_get_status(void *pep, uint32_t *recv, uint32_t *req)
{
	struct vb_ep *ep = pep;

	rapt_lock(&ep->rq_lock);
	*recv = ep->rq_tail - load32(&ep->rq_head);
	rapt_unlock(&ep->rq_lock);
	rapt_lock(&ep->sq_lock);
	*req = ep->sq_tail - load32(&ep->sq_head);
	rapt_unlock(&ep->sq_lock);
	return 0;
}
