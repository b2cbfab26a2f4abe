/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: parking.
 *
 * One job: while a consumer busy-polls an EVD, the engine stops watching
 * EPOLLIN of the EVD's EPs (the consumer reads their sockets itself) and
 * looks again every CM_PARK_NS; a consumer about to sleep unparks them
 * (docs/tcp-provider.md, section 2).
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

/* With ep->lock: the one place ep->parked changes; the IA counts them so
 * that a consumer about to sleep knows whether to look (tcp_prov.c). */
void tcp_cm_set_parked(struct tcp_ep *ep, bool parked)
{
	if (ep->parked == parked)
		return;
	ep->parked = parked;
	if (parked)
		atomic_fetch_add(&ep->ia->nparked, 1);
	else
		atomic_fetch_sub(&ep->ia->nparked, 1);
}

/* Whether a consumer busy-polls an EVD that @ep is attached to: its
 * evd_progress runs our receive path, so the engine need not wake. */
bool tcp_ep_polled(struct tcp_ep *ep)
{
	uint64_t now = rapt_now_ns();

	return tcp_evd_spinning(ep->recv_evd, now) ||
	       tcp_evd_spinning(ep->req_evd, now) ||
	       tcp_evd_spinning(ep->conn_evd, now);
}

/* With ep->lock: stop watching EPOLLIN (EPOLLRDHUP stays) and look again
 * in CM_PARK_NS. */
void tcp_ep_park(struct tcp_ep *ep)
{
	if (rapt_engine_mod(ep->ia->eng, &ep->io,
			    ep->io.events & ~(uint32_t)EPOLLIN))
		return;		/* stay level-triggered on EPOLLIN */
	tcp_cm_set_parked(ep, true);
	rapt_timer_arm(ep->ia->eng, &ep->park, CM_PARK_NS);
}

/* With ep->lock: watch EPOLLIN again.  Level-triggered, so whatever the
 * consumer left in the socket is reported at once: nothing is lost. */
static void ep_unpark(struct tcp_ep *ep)
{
	int ret;

	tcp_cm_set_parked(ep, false);
	if (ep->bound_due == TCP_BOUND_CONSUMER)
		tcp_ep_bound_set(ep);	/* the spinning was left to do it */
	ret = rapt_engine_mod(ep->ia->eng, &ep->io, ep->io.events | EPOLLIN);
	if (ret)
		tcp_cm_fail(ep, ret);
}

/**
 * tcp_cm_park - a consumer started to spin on an EVD of @ep: park it
 * @ep: the EP, locked, moving data
 *
 * From then on the engine does not wake for @ep's data until the consumer
 * stops spinning (it looks every CM_PARK_NS); hang-ups still wake it.
 */
void tcp_cm_park(struct tcp_ep *ep)
{
	if (tcp_cm_open(ep) && !ep->freeing && !ep->parked &&
	    (ep->io.events & EPOLLIN) && tcp_rx_seasoned(ep))
		tcp_ep_park(ep);
}

/**
 * tcp_cm_unpark - a consumer of @ep's EVD is about to sleep on the engine
 * @ep: the EP, locked
 *
 * Its sleep must wake for @ep's data, so the engine watches EPOLLIN again
 * now rather than at the next park check.
 */
void tcp_cm_unpark(struct tcp_ep *ep)
{
	if (ep->parked && tcp_cm_open(ep) && !ep->freeing) {
		rapt_timer_cancel(ep->ia->eng, &ep->park);
		ep_unpark(ep);
	}
}

void tcp_ep_park_check(struct rapt_timer *t)
{
	struct tcp_ep *ep = rapt_container_of(t, struct tcp_ep, park);

	if (!tcp_ep_timer_lock(ep, t, CM_PARK_NS))
		return;		/* busy: a consumer is at work on the EP */
	if (ep->freeing || ep->io.fd < 0 || !ep->parked ||
	    rapt_timer_armed(ep->ia->eng, t))
		goto out;
	if (tcp_ep_polled(ep))
		rapt_timer_arm(ep->ia->eng, &ep->park, CM_PARK_NS);
	else
		ep_unpark(ep);
out:
	rapt_unlock(&ep->lock);
}
