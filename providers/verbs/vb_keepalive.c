/* SPDX-License-Identifier: MIT */
/*
 * verbs layer: the peer timeout (rapt_ep_set_peer_timeout).
 *
 * A peer whose host dies or whose link is cut sends nothing more, and a
 * connected QP with nothing to send never finds out: IB bounds only work
 * in flight (the QP's retry count and timeout), siw only what TCP has to
 * retransmit (minutes).  So while an EP is connected, the engine looks at
 * it every quarter of its bound, and asks whether the peer gave a sign of
 * life since the last look:
 *
 *   - a receive completed (the peer sent it);
 *   - on IB and RoCE, a send-queue entry completed: a completion of a
 *     reliable connection's work request means the responder acknowledged
 *     it;
 *   - on iWARP, the kernel's TCP socket of the connection received an
 *     acknowledgement or data (sock_diag, vb_sockdiag.c): siw completes a
 *     send once TCP has its bytes, so there a completion proves nothing.
 *
 * When a look finds no sign, the EP sends a probe, unless one is still
 * out: a zero-length RDMA Write of the provider's own (the mark of
 * vb_ep_sends_mark(), which no responder acts on), signalled and never
 * reported.  On IB the responder's acknowledgement completes it; on
 * iWARP the peer's TCP acknowledges its bytes.  A peer silent for the
 * whole bound, and asked (a probe went after its last sign, a look
 * ago), ends the connection: RAPT_EV_BROKEN with prov_status
 * -ETIMEDOUT, after every outstanding work request completed FLUSHED
 * (vb_ep_shutdown()), as a fatal completion error would.
 *
 * A busy connection costs nothing: its completions are the signs, and
 * the look is two loads.  An idle one costs a probe per quarter bound
 * (and on iWARP one sock_diag question).
 *
 * Limits: on IB a peer that accepts no send (no receive posted, retried
 * without end: rnr_retry 7) holds the probe behind the send it refuses,
 * and counts as silent once the bound has passed.  On iWARP the bound
 * needs the connection's TCP socket in the kernel (siw): without
 * sock_diag the op says RAPT_ENOTSUP, and an RNIC that keeps its
 * connections to itself is found at the first look (its EPs keep the
 * transport's own bound, with a warning, and later calls say
 * RAPT_ENOTSUP).
 */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>

#include "verbs.h"

/* Looks per bound, and the shortest time between two. */
#define VB_KA_LOOKS		4u
#define VB_KA_TICK_MIN_NS	250000000ull
/* Looks that find no TCP socket before an iWARP EP gives up. */
#define VB_KA_UNSEEN_MAX	2u

static uint64_t ka_bound_ns(const struct vb_ep *ep)
{
	return (uint64_t)ep->ka_ms * 1000000ull;
}

static uint64_t ka_tick_ns(const struct vb_ep *ep)
{
	uint64_t t = ka_bound_ns(ep) / VB_KA_LOOKS;

	return t > VB_KA_TICK_MIN_NS ? t : VB_KA_TICK_MIN_NS;
}

static uint32_t ka_load32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void ka_fire(struct rapt_timer *t);

/**
 * vb_ka_start - the EP's connection is up: begin to look (ep->lock held)
 * @ep: the EP
 *
 * Also when the bound changes on a connected EP: the silence counted so
 * far stays, the looks follow the new bound.
 */
void vb_ka_start(struct vb_ep *ep)
{
	if (!ep->ka_ms || atomic_load(&ep->ia->ka_blind))
		return;
	if (!rapt_timer_armed(ep->ia->eng, &ep->ka_timer)) {
		ep->ka_heard_ns = rapt_now_ns();
		ep->ka_rq = ka_load32(&ep->rq_head);
		ep->ka_sq = ka_load32(&ep->sq_head);
		ep->ka_probing = false;
		ep->ka_asked_ns = 0;
		ep->ka_unseen = 0;
		ep->ka_sock_seen = false;
	}
	rapt_timer_arm(ep->ia->eng, &ep->ka_timer, ka_tick_ns(ep));
}

/**
 * vb_ka_stop - no more looks (teardown, reset)
 * @ep: the EP
 */
void vb_ka_stop(struct vb_ep *ep)
{
	rapt_timer_cancel(ep->ia->eng, &ep->ka_timer);
}

/**
 * vb_ep_set_peer_timeout - the ep_set_peer_timeout op
 * @pep: the EP
 * @timeout_ms: the bound, in range (the core checked)
 *
 * Return: 0, or RAPT_ENOTSUP where the bound cannot be kept (the reason
 * set).
 */
int vb_ep_set_peer_timeout(void *pep, uint32_t timeout_ms)
{
	struct vb_ep *ep = pep;
	struct vb_ia *ia = ep->ia;

	if (vb_tp->tcp_wire && !ia->tcp_diag) {
		rapt_prov_set_error("%s: no peer timeout: the kernel does not answer sock_diag for TCP (tcp_diag not loaded?), and a send's completion proves nothing about the peer",
				    vb_tp->name);
		return RAPT_ENOTSUP;
	}
	if (atomic_load(&ia->ka_blind)) {
		rapt_prov_set_error("%s: no peer timeout on %s: its connections are not the kernel's TCP sockets",
				    vb_tp->name, ia->dev);
		return RAPT_ENOTSUP;
	}
	pthread_mutex_lock(&ep->lock);
	ep->ka_ms = timeout_ms;
	if (ep->state == VB_EP_UP && !ep->teardown)
		vb_ka_start(ep);
	pthread_mutex_unlock(&ep->lock);
	return 0;
}

/*
 * iWARP: when the connection's TCP socket last heard from the peer, into
 * ep->ka_heard_ns.  False when the look must stop: the kernel never had
 * the socket (an RNIC's own connection).  One that was there and is gone
 * is closing, and rdma_cm's event is on its way.
 */
static bool ka_tcp_heard(struct vb_ep *ep, uint64_t now)
{
	struct vb_ia *ia = ep->ia;
	uint64_t heard;
	uint32_t ms;
	int ret;

	if (!ep->id)
		return true;
	ret = vb_tcp_heard(ia->diag_fd, rdma_get_local_addr(ep->id),
			   rdma_get_peer_addr(ep->id), ia->ifindex, &ms);
	if (ret == 0) {
		ep->ka_sock_seen = true;
		heard = now - (uint64_t)ms * 1000000ull;
		if ((int64_t)(heard - ep->ka_heard_ns) > 0)
			ep->ka_heard_ns = heard;
		return true;
	}
	if (ret == -2 || ep->ka_sock_seen ||
	    ++ep->ka_unseen < VB_KA_UNSEEN_MAX)
		return true;	/* the next look */
	if (!atomic_exchange(&ia->ka_blind, true))
		vb_warn("%s: the connection of QP %u is no TCP socket of the kernel's (an offloading RNIC?): no peer timeout on this device; its own bound applies",
			ia->dev, ep->qp->qp_num);
	return false;
}

/* The bound passed in silence: end the connection (engine's runner). */
static void ka_break(struct vb_ep *ep, uint64_t silent_ns)
{
	vb_dbg("%s: QP %u: the peer has been silent for %llu ms (bound %u ms): BROKEN",
	       ep->ia->dev, ep->qp->qp_num,
	       (unsigned long long)(silent_ns / 1000000ull), ep->ka_ms);
	vb_ep_break(ep, -ETIMEDOUT);
}

/*
 * Whether the peer was asked and had a look's time to answer: a probe
 * went after its last sign, at least a tick ago (ep->lock held).  The
 * silence alone is not enough: after a longer bound was cut short on an
 * idle connection, or after the engine could not look for a while (a
 * stopped process, a suspended machine), no probe may have gone yet.
 */
static bool ka_asked(const struct vb_ep *ep, uint64_t now)
{
	return (int64_t)(ep->ka_asked_ns - ep->ka_heard_ns) > 0 &&
	       now - ep->ka_asked_ns >= ka_tick_ns(ep);
}

/* Whether the peer is silent past the bound, and was asked. */
static bool ka_over(const struct vb_ep *ep, uint64_t now)
{
	return now - ep->ka_heard_ns >= ka_bound_ns(ep) && ka_asked(ep, now);
}

/* Signs in the rings since the last look (ep->lock held). */
static void ka_rings(struct vb_ep *ep, uint64_t now)
{
	uint32_t rq = ka_load32(&ep->rq_head);
	uint32_t sq = ka_load32(&ep->sq_head);

	if (ep->ka_probing && (int32_t)(sq - ep->ka_probe) >= 0)
		ep->ka_probing = false;
	if (rq != ep->ka_rq || (!vb_tp->tcp_wire && sq != ep->ka_sq))
		ep->ka_heard_ns = now;
	ep->ka_rq = rq;
	ep->ka_sq = sq;
}

/* The look, on the engine's runner. */
static void ka_fire(struct rapt_timer *t)
{
	struct vb_ep *ep = rapt_container_of(t, struct vb_ep, ka_timer);
	uint64_t now, silent;
	bool probe;
	int ret;

	if (rapt_timer_armed(ep->ia->eng, t))
		return;		/* re-armed meanwhile */
	pthread_mutex_lock(&ep->lock);
	if (ep->state != VB_EP_UP || ep->teardown || !ep->ka_ms) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	now = rapt_now_ns();
	ka_rings(ep, now);
	/* The kernel is asked only when the rings showed nothing. */
	if (vb_tp->tcp_wire && ep->ka_heard_ns != now &&
	    !ka_tcp_heard(ep, now)) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	if (ka_over(ep, now)) {
		/* Completions a parked CQ still holds are signs too: poll
		 * (poll locks before ep->lock), then judge again. */
		pthread_mutex_unlock(&ep->lock);
		if (ep->recv_evd->cq)
			vb_cq_poll(ep->recv_evd);
		if (ep->req_evd != ep->recv_evd && ep->req_evd->cq)
			vb_cq_poll(ep->req_evd);
		pthread_mutex_lock(&ep->lock);
		if (ep->state != VB_EP_UP || ep->teardown) {
			pthread_mutex_unlock(&ep->lock);
			return;
		}
		ka_rings(ep, now);
		if (ka_over(ep, now)) {
			silent = now - ep->ka_heard_ns;
			pthread_mutex_unlock(&ep->lock);
			ka_break(ep, silent);
			return;
		}
	}
	/* Nothing heard since the last look: ask. */
	silent = now - ep->ka_heard_ns;
	probe = silent >= ka_tick_ns(ep) / 2 && !ep->ka_probing;
	pthread_mutex_unlock(&ep->lock);

	/* Posted without ep->lock: a full ring polls the CQ, whose poll
	 * lock comes first.  A ring full of work the peer has not answered
	 * asks it as well as a probe would. */
	ret = probe ? vb_ep_post_internal_write(ep, 0, 1, 0) : RAPT_ESTATE;
	pthread_mutex_lock(&ep->lock);
	if (ret == 0) {
		ep->ka_probing = true;
		ep->ka_probe = ka_load32(&ep->sq_tail);
	}
	if ((ret == 0 || ret == RAPT_ENOSPC) &&
	    (int64_t)(ep->ka_asked_ns - ep->ka_heard_ns) <= 0)
		ep->ka_asked_ns = now;
	if (ep->state == VB_EP_UP && !ep->teardown && ep->ka_ms &&
	    !rapt_timer_armed(ep->ia->eng, t))
		rapt_timer_arm(ep->ia->eng, t, ka_tick_ns(ep));
	pthread_mutex_unlock(&ep->lock);
}

/* The timer's callback, for vb_qp.c's EP creation. */
void vb_ka_init(struct vb_ep *ep)
{
	rapt_timer_init(&ep->ka_timer, ka_fire);
}
