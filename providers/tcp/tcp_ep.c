/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the EP ops.
 *
 * One job: ep_create, ep_free, ep_modify, ep_connect, ep_disconnect,
 * ep_reset and ep_get_status: an EP's memory, its EVDs, its teardown and
 * renewal, and the start of an active connection (the exchange itself is
 * tcp_handshake.c's).
 */
#include "config.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "tcp_cm.h"

/* The distinct EVDs of @ep, for evd_progress. */
static uint32_t ep_evds(struct tcp_ep *ep, struct tcp_evd *evds[3])
{
	struct tcp_evd *all[3] = { ep->recv_evd, ep->req_evd, ep->conn_evd };
	uint32_t i, j, n = 0;

	for (i = 0; i < 3; i++) {
		if (!all[i])
			continue;
		for (j = 0; j < n && evds[j] != all[i]; j++)
			;
		if (j == n)
			evds[n++] = all[i];
	}
	return n;
}

static void ep_detach(struct tcp_ep *ep, uint32_t upto)
{
	struct tcp_evd *evds[3];
	uint32_t i, n = ep_evds(ep, evds);

	for (i = 0; i < n && i < upto; i++)
		tcp_evd_detach(evds[i], ep);
}

static int ep_attach(struct tcp_ep *ep)
{
	struct tcp_evd *evds[3];
	uint32_t i, n = ep_evds(ep, evds);
	int ret;

	for (i = 0; i < n; i++) {
		ret = tcp_evd_attach(evds[i], ep);
		if (ret) {
			ep_detach(ep, i);
			return ret;
		}
	}
	return 0;
}

static struct tcp_ep *ep_alloc(struct tcp_ia *ia, struct rapt_core_ep *cep,
			       struct rapt_ep *handle,
			       const struct rapt_ep_attr *attr)
{
	struct tcp_ep *ep = rapt_zalloc(1, sizeof(*ep));

	if (!ep)
		return NULL;
	ep->cm = rapt_zalloc(1, sizeof(*ep->cm));
	if (!ep->cm) {
		free(ep);
		return NULL;
	}
	ep->ia = ia;
	ep->cep = cep;
	ep->handle = handle;
	ep->attr = *attr;
	ep->peer_timeout_ms = RAPT_PEER_TIMEOUT_DEFAULT_MS;
	ep->io.fd = -1;
	ep->io.handler = tcp_ep_io;
	rapt_timer_init(&ep->timer, tcp_ep_timeout);
	rapt_timer_init(&ep->park, tcp_ep_park_check);
	rapt_timer_init(&ep->cork, tcp_cork_fire);
	rapt_timer_init(&ep->bound, tcp_ep_bound_fire);
	tcp_ep_set_state(ep, TCP_EP_IDLE);
	rapt_lock_init(&ep->lock);
	return ep;
}

static void ep_release(void *arg)
{
	struct tcp_ep *ep = arg;

	tcp_cap_close(ep->cap);
	free(ep->cm->hs);
	tcp_cm_part_free(&ep->cm->part);
	free(ep->cm);
	free(ep);
}

/**
 * tcp_ep_create - the ep_create op
 *
 * Return: 0, RAPT_ENOMEM, or what tcp_dto_init() returns.
 */
int tcp_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
		  struct rapt_ep *handle, const struct rapt_ep_attr *attr,
		  void *recv_pevd, void *req_pevd, void *conn_pevd, void **pep)
{
	struct tcp_ia *ia = pia;
	struct tcp_ep *ep;
	int ret;

	ep = ep_alloc(ia, cep, handle, attr);
	if (!ep)
		return RAPT_ENOMEM;
	ep->pz = ppz;
	ep->recv_evd = recv_pevd;
	ep->req_evd = req_pevd;
	ep->conn_evd = conn_pevd;
	ret = tcp_dto_init(ep);
	if (ret)
		goto err_free;
	ret = ep_attach(ep);
	if (ret)
		goto err_dto;
	pthread_mutex_lock(&ia->lock);
	ia->nep++;
	pthread_mutex_unlock(&ia->lock);
	*pep = ep;
	return 0;

err_dto:
	tcp_dto_fini(ep);
err_free:
	ep_release(ep);
	return ret;
}

/* The runner, between passes: after this no handler acts on @ep. */
static void ep_teardown(void *arg)
{
	struct tcp_ep *ep = arg;

	rapt_lock(&ep->lock);
	ep->freeing = true;
	ep->consumer_close = true;
	/* Our FIN is out after every byte we sent, or only held back for
	 * the RTR's settle time: let TCP finish that close (an RST would
	 * drop what is still unacknowledged). */
	tcp_cm_close(ep, !(ep->state == TCP_EP_CLOSING &&
			   (ep->cm->wr_shut ||
			    (ep->fin_held && tcp_tx_idle(ep)))));
	tcp_ep_set_state(ep, TCP_EP_CLOSED);
	rapt_unlock(&ep->lock);
}

/**
 * tcp_ep_free - the ep_free op
 *
 * An open connection is reset, unless a graceful disconnect has sent our
 * FIN already: TCP then finishes that close on its own.  No event is
 * reported for @pep any more.
 *
 * Return: 0.
 */
int tcp_ep_free(void *pep)
{
	struct tcp_ep *ep = pep;
	struct tcp_ia *ia = ep->ia;

	ep_detach(ep, 3);
	rapt_engine_call(ia->eng, ep_teardown, ep);
	tcp_dto_fini(ep);
	pthread_mutex_lock(&ia->lock);
	ia->nep--;
	pthread_mutex_unlock(&ia->lock);
	rapt_engine_retire(ia->eng, &ep->retire, &ep->io, ep_release, ep);
	return 0;
}

static int modify_depth(uint32_t want, uint32_t have, const char *what)
{
	if (want == have)
		return 0;
	rapt_prov_set_error("tcp: %s is fixed when the EP is created (%u)",
			    what, have);
	return RAPT_ENOTSUP;
}

/**
 * tcp_ep_set_peer_timeout - the ep_set_peer_timeout op
 *
 * Kept for the socket the EP gets (connect, accept); a socket it already
 * has changes at once.
 *
 * Return: 0.
 */
int tcp_ep_set_peer_timeout(void *pep, uint32_t timeout_ms)
{
	struct tcp_ep *ep = pep;

	rapt_lock(&ep->lock);
	ep->peer_timeout_ms = timeout_ms;
	if (ep->io.fd >= 0)
		tcp_ep_bound_set(ep);
	rapt_unlock(&ep->lock);
	return 0;
}

/**
 * tcp_ep_bound_drop - nothing more is owed of the bound (it is set, or
 * the socket leaves the EP)
 * @ep: the EP, locked
 */
void tcp_ep_bound_drop(struct tcp_ep *ep)
{
	if (ep->bound_due == TCP_BOUND_TIMER)
		rapt_timer_cancel(ep->ia->eng, &ep->bound);
	ep->bound_due = TCP_BOUND_NONE;
}

/**
 * tcp_ep_bound_set - set the peer-timeout bound on the EP's socket now
 * @ep: the EP, locked, with a socket
 */
void tcp_ep_bound_set(struct tcp_ep *ep)
{
	tcp_ep_bound_drop(ep);
	tcp_sock_peer_timeout(ep->io.fd, ep->peer_timeout_ms);
}

/**
 * tcp_ep_bound_fire - the bound timer: an active socket's peer-timeout
 * bound, CM_BOUND_DELAY_NS after its connect
 * @t: ep->bound
 *
 * Until then the connect timer, TCP's own retries and the first
 * keepalive's idle time (half the bound at least) cover the connection;
 * one that lives less long (a connection-rate loop, a short RPC) never
 * pays for the four setsockopt()s.  A parked EP is left to the consumer
 * that spins on it: the system calls here would hold the EP's lock while
 * that consumer's poll wants it, and its poll then skips the EP, data and
 * all.  The consumer's next look at the EP sets it (evd_visit), or the
 * unpark when it stops spinning (tcp_park.c).  Cancelled when the socket
 * leaves the EP (tcp_cm_close).
 */
void tcp_ep_bound_fire(struct rapt_timer *t)
{
	struct tcp_ep *ep = rapt_container_of(t, struct tcp_ep, bound);

	if (!tcp_ep_timer_lock(ep, t, CM_PARK_NS))
		return;
	if (!ep->freeing && ep->io.fd >= 0 &&
	    ep->bound_due == TCP_BOUND_TIMER &&
	    !rapt_timer_armed(ep->ia->eng, t)) {
		if (ep->parked)
			ep->bound_due = TCP_BOUND_CONSUMER;
		else
			tcp_ep_bound_set(ep);
	}
	rapt_unlock(&ep->lock);
}

/**
 * tcp_ep_modify - the ep_modify op
 *
 * Read depths and flags change; queue depths are fixed at creation.
 * Connected, lowered read depths take effect at once.
 *
 * Return: 0, RAPT_ENOTSUP.
 */
int tcp_ep_modify(void *pep, const struct rapt_ep_attr *attr, uint32_t mask)
{
	struct tcp_ep *ep = pep;
	int ret = 0;

	rapt_lock(&ep->lock);
	if (mask & RAPT_EP_ATTR_MAX_SEND)
		ret = modify_depth(attr->max_send, ep->attr.max_send,
				   "max_send");
	if (!ret && (mask & RAPT_EP_ATTR_MAX_RECV))
		ret = modify_depth(attr->max_recv, ep->attr.max_recv,
				   "max_recv");
	if (ret)
		goto out;
	if (mask & RAPT_EP_ATTR_RDMA_READ_IN) {
		ep->attr.rdma_read_in = attr->rdma_read_in;
		if (ep->state == TCP_EP_RTS)
			ep->ird = (uint16_t)attr->rdma_read_in;
	}
	if (mask & RAPT_EP_ATTR_RDMA_READ_OUT) {
		ep->attr.rdma_read_out = attr->rdma_read_out;
		if (ep->state == TCP_EP_RTS)
			ep->ord = (uint16_t)attr->rdma_read_out;
	}
	if (mask & RAPT_EP_ATTR_FLAGS)
		ep->attr.flags = attr->flags;
out:
	rapt_unlock(&ep->lock);
	return ret;
}

/* Start the TCP connect of a locked, idle EP; @hs is the request. */
static void ep_connect_start(struct tcp_ep *ep, int fd,
			     const struct sockaddr_storage *ss,
			     int64_t timeout_us)
{
	int ret;

	ep->io.fd = fd;
	ep->active = true;
	tcp_ep_set_state(ep, TCP_EP_CONNECTING);
	tcp_cm_sa_set(&ep->cm->raddr, ss);
	memset(&ep->cm->laddr, 0, sizeof(ep->cm->laddr));
	ep->cap = tcp_cap_open(fd);
	ep->mss_due = true;	/* read once a message needs it (tcp_tx.c) */
	if (rapt_sys_connect(fd, sa_of(ss), rapt_sockaddr_len(sa_of(ss))) &&
	    errno != EINPROGRESS) {
		/* Refused or unreachable at once: the event says so. */
		tcp_cm_connect_failed(ep, errno);
		return;
	}
	/* On a local path TCP is up by now as a rule: the request goes at
	 * once, without a wait for EPOLLOUT; a connect that already failed
	 * fails the send. */
	ret = tcp_cm_send_hs(ep);
	if (ret) {
		tcp_cm_connect_failed(ep, -ret);
		return;
	}
	if (ep->cm->hs_off)
		tcp_ep_set_state(ep, TCP_EP_MPA_REQ_SENT);
	/* While the peer reads the request: what Nagle's algorithm would
	 * not have delayed anyway (nothing was in flight), our address for
	 * ESTABLISHED, the registration.  The peer-timeout bound comes later
	 * (tcp_ep_bound_fire). */
	tcp_sock_nodelay(fd);
	tcp_cm_sa_local(fd, &ep->cm->laddr);
	ep->bound_due = TCP_BOUND_TIMER;
	rapt_timer_arm(ep->ia->eng, &ep->bound, CM_BOUND_DELAY_NS);
	ret = rapt_engine_add(ep->ia->eng, &ep->io,
			      CM_EP_EVENTS | (ep->cm->hs ? EPOLLOUT : 0));
	if (ret) {
		tcp_cm_end(ep, true, RAPT_EV_NON_PEER_REJECTED,
			   RAPT_REJECT_RESOURCES, ret, NULL, 0);
		return;
	}
	if (timeout_us != RAPT_TIMEOUT_INFINITE &&
	    timeout_us < INT64_MAX / (int64_t)CM_NS_PER_US)
		rapt_timer_arm(ep->ia->eng, &ep->timer,
			       (uint64_t)timeout_us * CM_NS_PER_US);
}

/**
 * tcp_ep_connect - the ep_connect op
 *
 * Starts a non-blocking TCP connect; the MPA request goes out when it
 * completes.  A connect refused or unreachable at once is reported as an
 * event, like one that fails later.
 *
 * Return: 0, RAPT_EINVAL (not IPv4/IPv6), RAPT_ESTATE, RAPT_ENOMEM.
 */
int tcp_ep_connect(void *pep, const struct sockaddr *remote,
		   uint64_t service_id, const void *pdata, size_t pdata_len,
		   int64_t timeout_us)
{
	struct tcp_ep *ep = pep;
	struct sockaddr_storage ss;
	uint8_t *hs;
	int ret, fd;

	ret = tcp_sa_copy(remote, (uint16_t)service_id, &ss);
	if (ret)
		return ret;
	hs = malloc(CM_FRAME_MAX);
	if (!hs)
		return RAPT_ENOMEM;
	rapt_lock(&ep->lock);
	ret = ep->state == TCP_EP_IDLE ? 0 : RAPT_ESTATE;
	if (!ret)
		ret = tcp_cm_build_request(ep, pdata, pdata_len, hs);
	if (ret < 0)
		goto err;
	ep->cm->hs = hs;
	ep->cm->hs_len = (uint16_t)ret;
	ep->cm->hs_off = 0;
	fd = tcp_cm_socket(ep->ia, &ss);
	if (fd < 0) {
		ret = fd;
		goto err;
	}
	/* The EP owns the socket and the request from here on: whatever
	 * happens next is an event. */
	ep_connect_start(ep, fd, &ss, timeout_us);
	rapt_unlock(&ep->lock);
	return 0;

err:
	if (ep->cm->hs == hs)
		ep->cm->hs = NULL;
	rapt_unlock(&ep->lock);
	free(hs);
	return ret;
}

/**
 * tcp_ep_disconnect - the ep_disconnect op
 *
 * Graceful: the send queue drains, then our FIN; DISCONNECTED when the
 * peer's FIN arrives (or CM_FIN_WAIT_MS later, with an RST).  Abrupt, or
 * a connection not yet established: DISCONNECTED now, and an RST (held
 * back for the RTR's settle time, tcp_conn.c).  Either way every WR is
 * flushed before DISCONNECTED.
 *
 * Return: 0.
 */
int tcp_ep_disconnect(void *pep, uint32_t flags, const void *pdata,
		      size_t pdata_len)
{
	struct tcp_ep *ep = pep;

	rapt_lock(&ep->lock);
	if (!tcp_cm_open(ep))
		goto out;	/* the outcome is already reported */
	if (ep->state == TCP_EP_RTS && !(flags & RAPT_CLOSE_ABRUPT)) {
		tcp_cm_close_graceful(ep);
	} else if (ep->state != TCP_EP_CLOSING ||
		   (flags & RAPT_CLOSE_ABRUPT)) {
		ep->consumer_close = true;
		tcp_cm_end(ep, true, RAPT_EV_DISCONNECTED, 0, 0, NULL, 0);
	}
out:
	rapt_unlock(&ep->lock);
	return 0;
}

/* Arguments and result of ep_renew(), which runs between engine passes. */
struct ep_renew_call {
	struct tcp_ep *ep;
	int ret;
};

/* The per-connection fields, back to what ep_alloc() left. */
static void ep_forget(struct tcp_ep *ep)
{
	ep->active = false;
	ep->crc = false;
	ep->mpa_rev1 = false;
	ep->sends_held = false;
	ep->reads_waiting = false;
	ep->rtr = 0;
	ep->rtr_repeat_timed = false;
	ep->rtr_repeat_close = false;
	ep->fin_held = false;
	ep->consumer_close = false;
	ep->term_sent = false;
	ep->rtr_at_ns = 0;
	ep->ird = 0;
	ep->ord = 0;
	ep->max_ulpdu = 0;
	ep->mss_due = false;
	atomic_store(&ep->poll_idle, 0);
	memset(&ep->cm->laddr, 0, sizeof(ep->cm->laddr));
	memset(&ep->cm->raddr, 0, sizeof(ep->cm->raddr));
	ep->cm->p2p = false;
	ep->cm->wr_shut = false;
}

/* An EP's data-path state, to swap a fresh set in. */
struct ep_dto {
	struct tcp_wrq sq, rq;
	struct tcp_rx *rx;
	struct tcp_tx *tx;
};

static void ep_dto_swap(struct tcp_ep *ep, struct ep_dto *d)
{
	struct ep_dto t = { ep->sq, ep->rq, ep->rx, ep->tx };

	ep->sq = d->sq;
	ep->rq = d->rq;
	ep->rx = d->rx;
	ep->tx = d->tx;
	*d = t;
}

/*
 * The runner, between passes, so that no handler call collected for the
 * old socket can still arrive (rapt_engine_close() never waits): fresh
 * data-path state (MSNs, the receive parser, the read queues) for the next
 * connection.  The old state is kept until the new one exists, so that an
 * EP short of memory stays a usable, CLOSED one.
 */
static void ep_renew(void *arg)
{
	struct ep_renew_call *call = arg;
	struct tcp_ep *ep = call->ep;
	struct ep_dto old = { 0 };

	rapt_lock(&ep->lock);
	if (ep->state != TCP_EP_CLOSED || ep->io.fd >= 0) {
		call->ret = RAPT_ESTATE;	/* a core bug: say so */
		goto out;
	}
	ep_dto_swap(ep, &old);		/* the EP's set is empty now */
	call->ret = tcp_dto_init(ep);	/* frees its own half on failure */
	ep_dto_swap(ep, &old);
	if (call->ret)
		goto out;		/* the old set is back in place */
	/* Every WR of the old queues completed before DISCONNECTED, and a
	 * receive posted since was flushed at once: nothing is lost. */
	tcp_dto_fini(ep);
	ep_dto_swap(ep, &old);
	ep_forget(ep);
	tcp_ep_set_state(ep, TCP_EP_IDLE);
out:
	rapt_unlock(&ep->lock);
}

/**
 * tcp_ep_reset - the ep_reset op
 *
 * The core calls it after DISCONNECTED, BROKEN, a reject or an accept
 * error: the socket is gone and every WR completed.
 *
 * Return: 0, RAPT_ENOMEM, RAPT_ESTATE (the EP is not closed).
 */
int tcp_ep_reset(void *pep)
{
	struct ep_renew_call call = { .ep = pep };

	rapt_engine_call(call.ep->ia->eng, ep_renew, &call);
	return call.ret;
}

/**
 * tcp_ep_get_status - the ep_get_status op
 *
 * A WR stays in its ring until its completion is pushed, so the rings'
 * counts are what is outstanding.
 *
 * Return: 0.
 */
int tcp_ep_get_status(void *pep, uint32_t *recv, uint32_t *req)
{
	struct tcp_ep *ep = pep;

	rapt_lock(&ep->lock);
	*recv = tcp_wrq_count(&ep->rq);
	*req = tcp_wrq_count(&ep->sq);
	rapt_unlock(&ep->lock);
	return 0;
}
