/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: an EP's connection state.
 *
 * One job: the EP state machine of the provider.  Every state change goes
 * through tcp_ep_set_state(); the events the core sees (ESTABLISHED,
 * rejects, BROKEN, DISCONNECTED ...), the end of a connection (flush,
 * event, close), the entry points the data path calls (fail, peer
 * closed, RTR arrived, sends drained), the EP's socket handler and its
 * timer.
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

#ifdef RAPT_DEBUG
#define TCP_CHECK_STATES 1
#else
#define TCP_CHECK_STATES 0
#endif

/* Whether @to may follow @from (a state may be set again). */
static bool ep_transition_ok(enum tcp_ep_state from, enum tcp_ep_state to)
{
	static const uint16_t next[] = {
		[TCP_EP_IDLE] = 1u << TCP_EP_CONNECTING |
				1u << TCP_EP_ACCEPTING,
		[TCP_EP_CONNECTING] = 1u << TCP_EP_MPA_REQ_SENT,
		[TCP_EP_MPA_REQ_SENT] = 1u << TCP_EP_RTS,
		[TCP_EP_ACCEPTING] = 1u << TCP_EP_RTR_WAIT | 1u << TCP_EP_RTS,
		[TCP_EP_RTR_WAIT] = 1u << TCP_EP_RTS,
		[TCP_EP_RTS] = 1u << TCP_EP_CLOSING,
		[TCP_EP_CLOSED] = 1u << TCP_EP_IDLE,	/* ep_reset */
	};

	return from == to || to == TCP_EP_CLOSED ||
	       (from < sizeof(next) / sizeof(next[0]) &&
		(next[from] & (1u << to)));
}

/* ------------------------------------------------------------------ */
/* State, events and the end of a connection                          */
/* ------------------------------------------------------------------ */

/* A state in which the peer's next bytes may establish the connection. */
static bool state_in_handshake(enum tcp_ep_state s)
{
	return s == TCP_EP_CONNECTING || s == TCP_EP_MPA_REQ_SENT ||
	       s == TCP_EP_ACCEPTING || s == TCP_EP_RTR_WAIT;
}

/**
 * tcp_ep_set_state - the one place an EP's connection state changes
 * @ep: the EP, locked (or not yet shared: ep_alloc)
 * @state: the new state
 *
 * The transitions: IDLE -> CONNECTING -> MPA_REQ_SENT -> RTS (active),
 * IDLE -> ACCEPTING -> RTR_WAIT -> RTS or ACCEPTING -> RTS (passive),
 * RTS -> CLOSING (graceful close), any -> CLOSED, and CLOSED -> IDLE
 * (ep_reset, for the next connection).  Debug builds log
 * any other as a provider bug.
 */
void tcp_ep_set_state(struct tcp_ep *ep, enum tcp_ep_state state)
{
	bool was = state_in_handshake(ep->state);
	bool is = state_in_handshake(state);

	if (TCP_CHECK_STATES && !ep_transition_ok(ep->state, state))
		tcp_err("EP %p: state %d -> %d", (void *)ep, ep->state, state);
	if (ep->state == TCP_EP_RTS && state != TCP_EP_RTS)
		tcp_cork_push(ep);	/* no more corks: push the last */
	ep->state = state;
	if (is && !was)
		atomic_fetch_add(&ep->ia->nhandshake, 1);
	else if (was && !is)
		atomic_fetch_sub(&ep->ia->nhandshake, 1);
}

bool tcp_cm_open(const struct tcp_ep *ep)
{
	return ep->io.fd >= 0 && ep->state != TCP_EP_CLOSED;
}

void tcp_cm_event(struct tcp_ep *ep, uint32_t type, uint32_t reason,
		  int status, const void *pdata, size_t len,
		  uint32_t flags)
{
	struct rapt_prov_conn_event ce;

	if (ep->freeing)
		return;
	memset(&ce, 0, sizeof(ce));
	ce.type = type;
	ce.reason = reason;
	ce.prov_status = status;
	ce.flags = flags;
	ce.pdata = len ? pdata : NULL;
	ce.pdata_len = len;
	/* iWARP cannot tell who rejected: a reply with private data is
	 * taken for the consumer's (the core reads rapt's own markers). */
	ce.consumer_reject = type == RAPT_EV_PEER_REJECTED && len;
	if (type == RAPT_EV_ESTABLISHED) {
		ce.rdma_read_in = ep->ird;
		ce.rdma_read_out = ep->ord;
		if (!ep->cm->laddr.sa.sa_family)	/* active side */
			tcp_cm_sa_local(ep->io.fd, &ep->cm->laddr);
		tcp_cm_sa_get(&ep->cm->laddr, &ce.local_addr);
		tcp_cm_sa_get(&ep->cm->raddr, &ce.remote_addr);
	}
	rapt_prov_ep_event(ep->cep, &ce);
}

/*
 * Repeating the RTR, and holding the close back.  Linux's siw as responder
 * loses an RTR that arrives between its MPA Reply going out and its
 * switching the socket to the RTR wait (siw_accept(), at least up to
 * 6.1): the RTR sits unread until more bytes come, its passive side never
 * hears ESTABLISHED, and when the connection then closes, iw_cm hits a
 * BUG() (a CLOSE while it still waits for ESTABLISHED: the kernel's
 * workqueue thread dies, and the machine with it).  A quick initiator
 * (ours, in user space) hits that window.  So, while the peer has sent no
 * FPDU, the active side
 *   - repeats the RTR as a zero-length RDMA Write (a no-op for any
 *     responder, RFC 5040: nothing placed) 200 ms after it;
 *   - sends neither FIN nor RST before the peer's first byte, or
 *     CM_RTR_SETTLE_NS (RAPT_TCP_RTR_SETTLE_MS) after the RTR,
 *     whichever comes first, and in the
 *     second case repeats the RTR right before either.  A graceful close
 *     waits on the EP's timer (CLOSING, fin_held); an abortive one, or
 *     an EP freed meanwhile, reports at once and leaves the socket to
 *     tcp_late.c, which watches it for that byte.
 * A responder that is rapt's tcp provider chooses the Read RTR when it is
 * offered (tcp_handshake.c): its zero-length Read Response is that byte,
 * one round trip after the RTR, so between two rapt peers nothing waits
 * for long.  siw as responder chooses the Write RTR.
 * Not more often: a repeat that reaches a siw QP already closing stays
 * unread, and siw's socket then ends with an RST instead of a FIN (seen
 * as BROKEN here when the passive side disconnected within a few ms of
 * ESTABLISHED and the repeats came every few ms).
 */
void tcp_cm_nudge_start(struct tcp_ep *ep)
{
	ep->rtr_repeat_timed = ep->rtr_repeat_close = true;
	ep->rtr_at_ns = rapt_now_ns();
	rapt_timer_arm(ep->ia->eng, &ep->timer, CM_RTR_REPEAT_NS);
}

/*
 * Whether the peer has spoken since our RTR: an FPDU read, or bytes (or
 * its close) waiting in the socket, unread (rapt's responder: the Read
 * RTR's response, which a consumer closing right after ESTABLISHED often
 * finds there).  Once it has, no repeat of the RTR is owed any more: the
 * next question costs no recv().
 */
static bool cm_peer_spoke(struct tcp_ep *ep)
{
	uint8_t b;

	if (!tcp_rx_heard(ep) &&
	    (ep->io.fd < 0 ||
	     rapt_sys_recv(ep->io.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0))
		return false;
	ep->rtr_repeat_timed = ep->rtr_repeat_close = false;
	return true;
}

/* What is left of the RTR's settle time by the clock alone. */
static uint64_t cm_settle_time_left(const struct tcp_ep *ep)
{
	uint64_t now = rapt_now_ns(), end;

	end = ep->rtr_at_ns + ep->ia->rtr_settle_ns;
	return end > now ? end - now : 0;
}

/* How long a close must still wait for the RTR's settle time; 0: none. */
static uint64_t cm_settle_left(struct tcp_ep *ep)
{
	uint64_t left;

	if (!ep->rtr_repeat_close || tcp_rx_heard(ep))
		return 0;
	left = cm_settle_time_left(ep);
	return left && !cm_peer_spoke(ep) ? left : 0;
}

/*
 * The RTR's last repeat, before a graceful close, unless the peer has
 * spoken.  Return: true if it went to the transmit path (which sends the
 * FIN after it).
 */
static bool cm_nudge(struct tcp_ep *ep)
{
	bool due = ep->rtr_repeat_close && !cm_peer_spoke(ep);

	ep->rtr_repeat_timed = ep->rtr_repeat_close = false;
	return due && !tcp_tx_rtr(ep, TCP_MPA_RTR_WRITE);
}

/* The FIN is free to go: the RTR's repeat first, then the FIN once the
 * sends have drained. */
static void cm_fin_go(struct tcp_ep *ep)
{
	ep->fin_held = false;
	if (!cm_nudge(ep) && tcp_tx_idle(ep))
		tcp_cm_shutdown(ep);
}

/**
 * tcp_cm_close_graceful - start a graceful close
 * @ep: the EP, locked, in RTS
 *
 * The send queue drains, then our FIN; the RTR's settle time may hold the
 * FIN back a little.
 */
void tcp_cm_close_graceful(struct tcp_ep *ep)
{
	uint64_t left = cm_settle_left(ep);

	tcp_tx_flush(ep);	/* reads left for the receive path */
	tcp_ep_set_state(ep, TCP_EP_CLOSING);
	if (!left) {
		cm_fin_go(ep);
		return;
	}
	ep->fin_held = true;
	rapt_timer_arm(ep->ia->eng, &ep->timer, left);
}

/**
 * tcp_cm_heard - the peer's first FPDU is in
 * @ep: the EP, locked
 *
 * It has read our RTR: a FIN held for the settle time goes now.
 */
void tcp_cm_heard(struct tcp_ep *ep)
{
	if (ep->fin_held && ep->state == TCP_EP_CLOSING) {
		rapt_timer_cancel(ep->ia->eng, &ep->timer);
		cm_fin_go(ep);
	}
}

/*
 * A close the consumer asked for while the RTR's repeat is still owed:
 * the repeat and the FIN or RST wait in tcp_late.c for the rest of the
 * settle time.  False if it cannot (the socket closes now, as asked).
 */
static bool cm_close_late(struct tcp_ep *ep, bool abort)
{
	uint8_t frame[TCP_LATE_FRAME_MAX];
	uint64_t left;
	int n = 0;

	if (!ep->consumer_close || ep->io.fd < 0 || !ep->rtr_repeat_close ||
	    cm_peer_spoke(ep))
		return false;
	left = cm_settle_time_left(ep);	/* the peer checked just now */
	/* A repeat only where an FPDU ends: else the close alone. */
	if (tcp_tx_at_fpdu_end(ep))
		n = tcp_fpdu_build_rtr(TCP_MPA_RTR_WRITE, 0, ep->crc, frame,
				       sizeof(frame));
	ep->rtr_repeat_timed = ep->rtr_repeat_close = false;
	tcp_late_close(ep->ia, &ep->io, frame, n > 0 ? (size_t)n : 0, left,
		       abort);
	return true;
}

/* Take the socket off the engine and close it (RST if @abort). */
void tcp_cm_close(struct tcp_ep *ep, bool abort)
{
	tcp_cork_end(ep, !abort);	/* a held FIN may go much later */
	/* Or the socket is tcp_late.c's now, with the FIN or RST: the EP
	 * is left without one. */
	if (cm_close_late(ep, abort))
		abort = false;
	else if (!abort && ep->io.fd >= 0 && !ep->rx_eof)
		tcp_sock_drain(ep->io.fd);	/* unread bytes: an RST */
	ep->rx_eof = false;
	ep->fin_held = false;
	rapt_timer_cancel(ep->ia->eng, &ep->timer);
	rapt_timer_cancel(ep->ia->eng, &ep->park);
	tcp_ep_bound_drop(ep);
	tcp_cm_set_parked(ep, false);
	free(ep->cm->hs);
	ep->cm->hs = NULL;
	tcp_cm_part_free(&ep->cm->part);
	tcp_cap_close(ep->cap);
	ep->cap = NULL;
	rapt_engine_close(ep->ia->eng, &ep->io, abort);
}

/*
 * End the connection: flush every WR, report @type, then close.  The event
 * is queued before our FIN or RST leaves, so whatever the peer does once it
 * has seen the close (connect again, say) is queued after it here, even
 * when a consumer thread is running this through evd_progress.
 */
void tcp_cm_end(struct tcp_ep *ep, bool abort, uint32_t type,
		uint32_t reason, int status, const void *pdata, size_t len)
{
	rapt_timer_cancel(ep->ia->eng, &ep->timer);
	tcp_ep_set_state(ep, TCP_EP_CLOSED);
	if (!ep->freeing)
		tcp_dto_flush(ep);
	tcp_cm_event(ep, type, reason, status, pdata, len, 0);
	tcp_cm_close(ep, abort);
}

/* What a failure means in the EP's current state. */
static uint32_t cm_fail_type(const struct tcp_ep *ep)
{
	switch (ep->state) {
	case TCP_EP_CONNECTING:
	case TCP_EP_MPA_REQ_SENT:
		return RAPT_EV_NON_PEER_REJECTED;
	case TCP_EP_ACCEPTING:
	case TCP_EP_RTR_WAIT:
		return RAPT_EV_ACCEPT_ERROR;
	case TCP_EP_CLOSING:
		return RAPT_EV_DISCONNECTED;	/* it was closing anyway */
	default:
		return RAPT_EV_BROKEN;
	}
}

/**
 * tcp_cm_fail - the transport failed or the peer broke the protocol
 * @ep: the EP, locked
 * @status: the event's prov_status: a RAPT_E* code, a negated errno or
 *          a Terminate's (rapt_prov_status_term())
 *
 * Closes with an RST (a FIN after a Terminate), flushes, and reports
 * BROKEN (ACCEPT_ERROR while
 * passive and not established, DISCONNECTED during a graceful close).
 */
void tcp_cm_fail(struct tcp_ep *ep, int status)
{
	uint32_t type;

	if (!tcp_cm_open(ep))
		return;
	type = cm_fail_type(ep);
	/* After a Terminate, an RST could discard it while it still sits
	 * in our send queue (on a real link it often does): end with a FIN. */
	tcp_cm_end(ep, !ep->term_sent, type, type == RAPT_EV_NON_PEER_REJECTED ?
		   RAPT_REJECT_PROTOCOL : 0, status, NULL, 0);
}

/**
 * tcp_cm_peer_closed - the peer closed its side (the receive path read 0)
 * @ep: the EP, locked
 */
void tcp_cm_peer_closed(struct tcp_ep *ep)
{
	if (!tcp_cm_open(ep))
		return;
	if (ep->state == TCP_EP_RTS || ep->state == TCP_EP_CLOSING)
		tcp_cm_end(ep, false, RAPT_EV_DISCONNECTED, 0, 0, NULL, 0);
	else
		tcp_cm_fail(ep, RAPT_ENOTCONN);
}

/**
 * tcp_cm_rtr_arrived - the RTR the passive side waited for is in
 * @ep: the EP, locked, in TCP_EP_RTR_WAIT
 *
 * Reports ESTABLISHED: from now on either side may send first.
 */
void tcp_cm_rtr_arrived(struct tcp_ep *ep)
{
	if (ep->state != TCP_EP_RTR_WAIT)
		return;
	rapt_timer_cancel(ep->ia->eng, &ep->timer);
	tcp_ep_set_state(ep, TCP_EP_RTS);
	tcp_cm_event(ep, RAPT_EV_ESTABLISHED, 0, 0, NULL, 0, 0);
}

/* The timer of an RTS EP: the RTR's timed repeat. */
static void cm_nudge_timer(struct tcp_ep *ep)
{
	if (!ep->rtr_repeat_timed || tcp_rx_heard(ep))
		return;
	ep->rtr_repeat_timed = false;
	(void)tcp_tx_rtr(ep, TCP_MPA_RTR_WRITE);
}

/* Graceful close, sends drained: send our FIN, wait (bounded) for theirs. */
void tcp_cm_shutdown(struct tcp_ep *ep)
{
	if (shutdown(ep->io.fd, SHUT_WR)) {
		tcp_cm_fail(ep, -errno);
		return;
	}
	ep->cm->wr_shut = true;
	rapt_timer_arm(ep->ia->eng, &ep->timer, CM_FIN_WAIT_MS * CM_NS_PER_MS);
}

/**
 * tcp_cm_tx_drained - the send queue of a closing EP is empty
 * @ep: the EP, locked
 */
void tcp_cm_tx_drained(struct tcp_ep *ep)
{
	if (ep->state == TCP_EP_CLOSING && !ep->cm->wr_shut &&
	    !ep->fin_held && ep->io.fd >= 0)
		tcp_cm_shutdown(ep);
}

/* ------------------------------------------------------------------ */
/* The socket handler and the timer                                   */
/* ------------------------------------------------------------------ */

/* A hang-up the receive path did not turn into an event. */
static void cm_check_hup(struct tcp_ep *ep)
{
	int err = tcp_sock_err(ep->io.fd);
	uint8_t b;
	ssize_t n;

	if (err) {
		tcp_cm_fail(ep, -err);
		return;
	}
	n = rapt_sys_recv(ep->io.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		tcp_cm_peer_closed(ep);
	else if (n < 0 && errno != EAGAIN && errno != EINTR)
		tcp_cm_fail(ep, -errno);
}

static void cm_data_io(struct tcp_ep *ep, uint32_t events)
{
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		tcp_rx_progress(ep, false);
	/* Data only, and a consumer spins on our EVDs: it will take the
	 * next bytes itself, so do not wake for them. */
	if (events == EPOLLIN && tcp_cm_open(ep) && !ep->parked &&
	    tcp_rx_seasoned(ep) && tcp_ep_polled(ep))
		tcp_ep_park(ep);
	if (tcp_cm_open(ep) && (events & EPOLLOUT))
		tcp_tx_progress(ep);
	if (tcp_cm_open(ep) && (events & (EPOLLHUP | EPOLLERR)))
		cm_check_hup(ep);
}

void tcp_ep_io(struct rapt_io *io, uint32_t events)
{
	struct tcp_ep *ep = (struct tcp_ep *)io;

	rapt_lock(&ep->lock);
	/* A late event for a socket closed from another thread. */
	if (ep->io.fd < 0 || ep->freeing)
		goto out;
	switch (ep->state) {
	case TCP_EP_CONNECTING:
		tcp_cm_connected(ep, events);
		break;
	case TCP_EP_MPA_REQ_SENT:
		if (ep->cm->hs)
			tcp_cm_request_out(ep);
		if (tcp_cm_open(ep) && ep->state == TCP_EP_MPA_REQ_SENT &&
		    !ep->cm->hs)
			tcp_cm_read_reply(ep, events, 0);
		break;
	case TCP_EP_ACCEPTING:
		tcp_cm_accepting_io(ep, events);
		break;
	case TCP_EP_RTR_WAIT:
	case TCP_EP_RTS:
	case TCP_EP_CLOSING:
		cm_data_io(ep, events);
		break;
	default:
		break;
	}
out:
	rapt_unlock(&ep->lock);
}

void tcp_ep_timeout(struct rapt_timer *t)
{
	struct tcp_ep *ep = rapt_container_of(t, struct tcp_ep, timer);

	rapt_lock(&ep->lock);
	/* Re-armed since it expired: this firing is for the old deadline. */
	if (ep->freeing || !tcp_cm_open(ep) || rapt_timer_armed(ep->ia->eng, t))
		goto out;
	switch (ep->state) {
	case TCP_EP_CONNECTING:
	case TCP_EP_MPA_REQ_SENT:
		tcp_cm_end(ep, true, RAPT_EV_TIMED_OUT, 0, RAPT_ETIMEDOUT, NULL,
			   0);
		break;
	case TCP_EP_ACCEPTING:
	case TCP_EP_RTR_WAIT:
		tcp_cm_end(ep, true, RAPT_EV_ACCEPT_ERROR, 0, RAPT_ETIMEDOUT,
			   NULL, 0);
		break;
	case TCP_EP_RTS:
		cm_nudge_timer(ep);
		break;
	case TCP_EP_CLOSING:
		if (ep->fin_held) {
			cm_fin_go(ep);
			break;
		}
		/* No FIN from the peer in time: give up with an RST. */
		tcp_cm_end(ep, true, RAPT_EV_DISCONNECTED, 0, RAPT_ETIMEDOUT,
			   NULL, 0);
		break;
	default:
		break;
	}
out:
	rapt_unlock(&ep->lock);
}
