/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: corking the socket while the consumer streams large
 * messages.
 *
 * One job: keep the kernel from sending the last, partial segment of
 * each large batch on its own while the consumer keeps writing more.
 *
 * Why.  TCP cuts what one sendmsg() writes into segments of its size
 * goal (one GSO/TSO unit: 64 KiB on loopback and on most NICs).  A
 * 64 KiB RDMA Write is 64 KiB and 40 bytes on the wire (two FPDUs), so
 * with TCP_NODELAY each such write leaves as a full segment and a
 * 40-byte one, and every segment costs about the same on both hosts (the
 * stack's per-segment work, an ACK): on loopback, 64 KiB Writes streamed
 * at 0.8 of what 65,000-byte ones (one segment each) did
 * (docs/performance.md).  MSG_MORE does not help: with TCP_NODELAY the
 * next ACK sends the held tail anyway.  TCP_CORK holds it until it is
 * taken off, so the next batch fills the segment up.
 *
 * When.  The second large batch (TCP_CORK_MIN bytes or more) written by
 * the consumer's thread with no push in between corks the socket: the
 * consumer is streaming.  A lone large message, one per round trip, is
 * never held: the consumer's look at the EVD between two of them is a
 * push (below), so the next one does not find a streak.  The engine
 * thread, which runs the transmit path while the consumer sleeps, never
 * corks; nor does a batch carrying Read Response data (tcp_tx.c: the
 * peer's next read waits for the last byte of each response).
 *
 * Who uncorks (TCP_CORK off sends whatever the socket holds), the first
 * of:
 *   - a batch that is not large, or written by the engine: a small
 *     message goes at once, with the tail in front of it;
 *   - the consumer's next look at an EVD of the EP that finds nothing
 *     for it (tcp_evd_progress()), or the consumer going to sleep on an
 *     EVD of the EP (tcp_evd_trywait()): nothing follows soon;
 *   - the EP's cork timer, within two TCP_CORK_MAX_NS of the last
 *     large write, for a consumer that neither posts nor looks;
 *   - the connection leaving RTS, or its socket being closed.
 *
 * A corked tail is data the socket owns: a Write or Send whose bytes are
 * all in the socket completes as before; its tail only leaves a little
 * later.  Nothing is held in user space.
 */
#include "config.h"

#include <netinet/tcp.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "tcp.h"

/* The longest the socket stays corked without a push. */
#define TCP_CORK_MAX_NS		1000000ull

/* The EP's record that the socket is corked, and the IA's count. */
static void cork_mark(struct tcp_ep *ep, bool on)
{
	atomic_store_explicit(&ep->corked, on, memory_order_relaxed);
	if (on)
		atomic_fetch_add(&ep->ia->ncorked, 1);
	else
		atomic_fetch_sub(&ep->ia->ncorked, 1);
}

/* Turn TCP_CORK on or off; off sends what the socket holds. */
static void cork_set(struct tcp_ep *ep, bool on)
{
	struct rapt_engine *eng = ep->ia->eng;
	int v = on;

	if (ep->io.fd >= 0 &&
	    setsockopt(ep->io.fd, IPPROTO_TCP, TCP_CORK, &v, sizeof(v))) {
		tcp_info("fd %d: TCP_CORK %d: %m", ep->io.fd, v);
		if (on)
			return;
	}
	cork_mark(ep, on);
	if (!on)
		return;
	/* Still armed from an earlier stream, it looks then (and waking
	 * the engine to shorten its sleep costs a CPU switch). */
	ep->cork_seen = ep->cork_writes;
	if (!rapt_timer_armed(eng, &ep->cork))
		rapt_timer_arm(eng, &ep->cork, TCP_CORK_MAX_NS);
}

static bool corked(const struct tcp_ep *ep)
{
	return atomic_load_explicit(&ep->corked, memory_order_relaxed);
}

/**
 * tcp_cork_large - a large batch is about to be written (tcp_cork_write())
 * @ep: the EP, locked
 *
 * Return: whether it counts as large: only the consumer's batches in RTS.
 */
bool tcp_cork_large(struct tcp_ep *ep)
{
	if (ep->state != TCP_EP_RTS || rapt_engine_on_thread(ep->ia->eng))
		return false;
	if (ep->cork_streak && !corked(ep))
		cork_set(ep, true);
	ep->cork_streak = true;
	ep->cork_writes++;
	return true;
}

/**
 * tcp_cork_off - uncork: a batch that is not large is in the socket
 * @ep: the EP, locked and corked
 */
void tcp_cork_off(struct tcp_ep *ep)
{
	cork_set(ep, false);
}

/**
 * tcp_cork_push - nothing follows soon: send what the socket holds
 * @ep: the EP, locked
 *
 * Ends the streak too.  A batch still waiting for room in the socket
 * (EPOLLOUT) is more to follow: its write decides.
 */
void tcp_cork_push(struct tcp_ep *ep)
{
	if (ep->io.events & EPOLLOUT)
		return;
	ep->cork_streak = false;
	if (corked(ep))
		cork_set(ep, false);
}

/**
 * tcp_cork_fire - the cork timer: uncork a socket the consumer left
 * @t: ep->cork
 *
 * A socket still written to since the last look stays corked (the
 * stream goes on, and carries its tail along) and is looked at again
 * in TCP_CORK_MAX_NS, from the engine's own sleep: so a stream costs the
 * engine one wakeup per period, and a tail left by a consumer that
 * stopped waits two periods at most.
 */
void tcp_cork_fire(struct rapt_timer *t)
{
	struct tcp_ep *ep = rapt_container_of(t, struct tcp_ep, cork);

	if (!tcp_ep_timer_lock(ep, t, TCP_CORK_MAX_NS))
		return;		/* busy: the consumer's next look will do */
	if (ep->freeing || !corked(ep) || rapt_timer_armed(ep->ia->eng, t))
		goto out;
	if (ep->cork_writes != ep->cork_seen ||
	    (ep->io.events & EPOLLOUT)) {
		/* Still written to, or waiting for room (the write on
		 * EPOLLOUT decides): look again. */
		ep->cork_seen = ep->cork_writes;
		rapt_timer_arm(ep->ia->eng, t, TCP_CORK_MAX_NS);
	} else {
		tcp_cork_push(ep);
	}
out:
	rapt_unlock(&ep->lock);
}

/**
 * tcp_cork_end - the socket leaves the EP
 * @ep: the EP, locked
 * @send: a graceful close: send the tail first (a held close, tcp_late.c,
 *	  may send its FIN much later); an abort discards it with the rest
 */
void tcp_cork_end(struct tcp_ep *ep, bool send)
{
	rapt_timer_cancel(ep->ia->eng, &ep->cork);
	ep->cork_streak = false;
	if (!corked(ep))
		return;
	if (send)
		cork_set(ep, false);
	else
		cork_mark(ep, false);
}
