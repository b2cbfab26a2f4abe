// SPDX-License-Identifier: MIT
/*
 * Events this library makes itself, and the events of EPs the consumer
 * has freed.
 *
 * A made event is queued on a rapt EVD as a software event whose pointer
 * is a mark: an object in the live-handle table (rdat_obj.c), which a
 * consumer's own pointers never are, so rdat_mark_event() can tell it and
 * turn it back into the DAT event.  There are two kinds:
 *
 * - The end of an SRQ EP's connection.  uDAPL tells it on the async EVD
 *   as DAT_ASYNC_ERROR_EP_BROKEN (InfiniBand's "last WQE reached": the EP
 *   takes no more receives from the SRQ), and dtestsrq waits for it.  rapt
 *   has no such event: one is queued when the consumer takes the EP's
 *   DISCONNECTED or BROKEN.
 * - A ghost: what is left of an EP freed while it had a connection.
 *   uDAPL still delivers the connection events of such an EP, naming the
 *   freed handle: those queued before the free, and the DISCONNECTED its
 *   free causes (an abrupt disconnect).  Consumers count on it: dtestcm's
 *   server waits for one connection event per EP it frees, and frees an
 *   EP on whatever connection event names it (an ESTABLISHED included).
 *   rapt reports nothing for a freed EP, and its events queued before the
 *   free name a rapt handle whose DAT wrapper is gone.  So the ghost keeps
 *   the two handles' values (nothing reads through them), translates those
 *   events (rdat_ghost_of()), and is itself queued on the connect EVD,
 *   after all of them: there it becomes the DISCONNECTED the consumer is
 *   owed, unless one of those events already ended the connection, and
 *   the ghost goes.
 */
#include <stdint.h>
#include <stdlib.h>

#include "rdat.h"

#define RDAT_GHOST_BUCKETS 256

struct rdat_mark {
	struct rdat_obj o;
	DAT_EVENT_NUMBER num;
	struct rdat_ep *ep;	/* a ghost's: freed, a value only */
	void *rapt_ep;		/* a ghost's: freed, a value only */
	int ghost;
	int ended;		/* a ghost's connection end was delivered */
	struct rdat_mark *gnext;
};

static pthread_mutex_t ghost_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdat_mark *ghosts[RDAT_GHOST_BUCKETS];

static size_t ghost_hash(const void *rapt_ep)
{
	uintptr_t v = (uintptr_t)rapt_ep;

	return (size_t)(v ^ (v >> 8) ^ (v >> 20)) % RDAT_GHOST_BUCKETS;
}

static struct rdat_mark *mark_new(struct rdat_ep *ep, DAT_EVENT_NUMBER num)
{
	struct rdat_mark *m;

	m = rdat_obj_new(sizeof(*m), RDAT_TYPE_MARK, ep->o.ia, ep->o.prov);
	if (m) {
		m->num = num;
		m->ep = ep;
	}
	return m;
}

/* Take a ghost out of the table (a no-op for any other mark); whether
 * its connection's end was delivered meanwhile (rdat_ghost_of()). */
static int ghost_unlink(struct rdat_mark *m)
{
	struct rdat_mark **pp;
	int ended;

	if (!m->ghost)
		return 0;
	pthread_mutex_lock(&ghost_lock);
	for (pp = &ghosts[ghost_hash(m->rapt_ep)]; *pp; pp = &(*pp)->gnext) {
		if (*pp == m) {
			*pp = m->gnext;
			break;
		}
	}
	ended = m->ended;
	pthread_mutex_unlock(&ghost_lock);
	return ended;
}

/**
 * rdat_mark_post - queue a made event on an EVD
 * @evd: the EVD
 * @ep: the EP the event names (live)
 * @num: DAT_ASYNC_ERROR_EP_BROKEN: the only kind made this way
 *
 * Without memory, or with the EVD full, the event is lost, as rapt's own
 * events are then (an overflow is reported).
 */
void rdat_mark_post(struct rdat_evd *evd, struct rdat_ep *ep,
		    DAT_EVENT_NUMBER num)
{
	struct rdat_mark *m = mark_new(ep, num);

	if (m && rapt_evd_post_software(evd->o.h, m))
		rdat_obj_del(&m->o);
}

/**
 * rdat_ep_gone - leave a ghost of an EP just freed
 * @ep: the EP, its rapt EP freed, its wrapper not yet
 * @owes_end: its connection was established: a DISCONNECTED is owed
 *            unless the consumer has had (or will have) another end
 */
void rdat_ep_gone(struct rdat_ep *ep, int owes_end)
{
	struct rdat_evd *evd = ep->connect_evd;
	struct rdat_mark *m;
	size_t b;

	if (!evd || !rdat_get(evd, DAT_HANDLE_TYPE_EVD))
		return;
	m = mark_new(ep, DAT_CONNECTION_EVENT_DISCONNECTED);
	if (!m)
		return;
	m->ghost = 1;
	m->rapt_ep = ep->o.h;
	m->ended = !owes_end || __atomic_load_n(&ep->ended, __ATOMIC_RELAXED);
	b = ghost_hash(m->rapt_ep);
	pthread_mutex_lock(&ghost_lock);
	m->gnext = ghosts[b];
	ghosts[b] = m;
	pthread_mutex_unlock(&ghost_lock);
	if (rapt_evd_post_software(evd->o.h, m)) {
		ghost_unlink(m);
		rdat_obj_del(&m->o);
	}
}

/**
 * rdat_ghost_of - the DAT handle a freed rapt EP had
 * @rapt_ep: the rapt EP an event names
 * @end: the event ends the connection (the ghost then owes no other)
 *
 * Return: the freed DAT handle's value, or NULL if no ghost has it.
 */
void *rdat_ghost_of(void *rapt_ep, int end)
{
	struct rdat_mark *m;
	void *ep = NULL;

	pthread_mutex_lock(&ghost_lock);
	for (m = ghosts[ghost_hash(rapt_ep)]; m; m = m->gnext) {
		if (m->rapt_ep == rapt_ep) {
			ep = m->ep;
			if (end)
				m->ended = 1;
			break;
		}
	}
	pthread_mutex_unlock(&ghost_lock);
	return ep;
}

/**
 * rdat_mark_event - the DAT event of a software event's pointer
 * @pointer: the pointer the software event carries
 * @e: the event to fill (zeroed, its EVD set)
 *
 * Return: 1 if @pointer is not a mark (the consumer's software event),
 * 0 with @e filled, -1 if the mark stands for nothing any more (the event
 * is skipped).  The mark is freed either way.
 */
int rdat_mark_event(void *pointer, DAT_EVENT *e)
{
	struct rdat_mark *m = rdat_get(pointer, RDAT_TYPE_MARK);
	DAT_ASYNCH_ERROR_EVENT_DATA *x = &e->event_data.asynch_error_event_data;
	struct rdat_ep *ep;
	int ended;

	if (!m)
		return 1;
	ended = ghost_unlink(m);
	e->event_number = m->num;
	ep = m->ep;
	if (m->ghost) {
		rdat_obj_del(&m->o);
		if (ended)
			return -1;
		e->event_data.connect_event_data.ep_handle = ep;
		return 0;
	}
	rdat_obj_del(&m->o);
	if (!rdat_get(ep, DAT_HANDLE_TYPE_EP))
		return -1;	/* freed since: nothing to report */
	x->dat_handle = ep;
	x->reason = DAT_EP_OTHER_ERROR;
	return 0;
}

/* Free a mark whose event nobody will take (the IA is closing). */
void rdat_mark_del(struct rdat_obj *o)
{
	ghost_unlink((struct rdat_mark *)o);
	rdat_obj_del(o);
}
