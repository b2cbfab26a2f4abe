/* SPDX-License-Identifier: MIT */
/*
 * The EP state machine as providers drive it: every connection event a
 * provider reports passes through here, is checked against the EP's state,
 * has its private data decoded, and is queued on the connect EVD.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "rapt_int.h"

/* The state an event leaves the EP in, or 0 if it may not happen now. */
static uint32_t next_state(uint32_t type, uint32_t s)
{
	switch (type) {
	case RAPT_EV_ESTABLISHED:
		if (s == RAPT_EP_ACTIVE_PENDING || s == RAPT_EP_PASSIVE_PENDING)
			return RAPT_EP_CONNECTED;
		return 0;
	case RAPT_EV_PEER_REJECTED:
	case RAPT_EV_NON_PEER_REJECTED:
	case RAPT_EV_UNREACHABLE:
	case RAPT_EV_TIMED_OUT:
		return s == RAPT_EP_ACTIVE_PENDING ? RAPT_EP_DISCONNECTED : 0;
	case RAPT_EV_ACCEPT_ERROR:
		return s == RAPT_EP_PASSIVE_PENDING ? RAPT_EP_DISCONNECTED : 0;
	case RAPT_EV_DISCONNECTED:
	case RAPT_EV_BROKEN:
		if (s == RAPT_EP_UNCONNECTED || s == RAPT_EP_DISCONNECTED)
			return 0;
		return RAPT_EP_DISCONNECTED;
	}
	return 0;
}

static uint32_t kind_reason(uint32_t kind)
{
	switch (kind) {
	case RAPT_PDATA_BUSY:
		return RAPT_REJECT_BUSY;
	case RAPT_PDATA_VERSION:
		return RAPT_REJECT_VERSION;
	case RAPT_PDATA_PROTOCOL:
		return RAPT_REJECT_PROTOCOL;
	case RAPT_PDATA_RESOURCES:
		return RAPT_REJECT_RESOURCES;
	}
	return RAPT_REJECT_UNKNOWN;
}

/*
 * Decode a reject: a rapt header says who rejected; without one the
 * transport's word decides.
 */
static void decode_reject(const struct rapt_prov_conn_event *ce, int pret,
			  const struct rapt_pdata_view *v, struct rapt_event *ev)
{
	struct rapt_event_conn *c = &ev->u.conn;

	if (pret == RAPT_EVERSION) {
		ev->type = RAPT_EV_NON_PEER_REJECTED;
		c->reason = RAPT_REJECT_VERSION;
	} else if (!v->foreign && ce->pdata_len) {
		ev->type = v->kind == RAPT_PDATA_CONSUMER ?
			   RAPT_EV_PEER_REJECTED : RAPT_EV_NON_PEER_REJECTED;
		c->reason = v->kind == RAPT_PDATA_CONSUMER ?
			    0 : kind_reason(v->kind);
	} else if (ce->type == RAPT_EV_PEER_REJECTED && ce->consumer_reject) {
		ev->type = RAPT_EV_PEER_REJECTED;
	} else {
		ev->type = RAPT_EV_NON_PEER_REJECTED;
		c->reason = ce->reason;
	}
	/* Only a consumer's reject carries its private data to the consumer. */
	if (ev->type != RAPT_EV_PEER_REJECTED) {
		c->pdata = NULL;
		c->pdata_len = 0;
	}
}

/* Copy the consumer view of @ce's private data into *@bufp. */
static void take_pdata(struct rapt_core_ep *ep,
		       const struct rapt_prov_conn_event *ce, bool active,
		       uint8_t **bufp, uint32_t *buf_len, struct rapt_event *ev)
{
	struct rapt_event_conn *c = &ev->u.conn;
	struct rapt_pdata_view v;
	int pret = 0;

	if (ep->attr.flags & RAPT_EP_RAW_PDATA) {
		memset(&v, 0, sizeof(v));
		v.foreign = 1;	/* the consumer says the peer is not rapt */
		v.data = ce->pdata;
		v.len = ce->pdata_len;
	} else {
		pret = rapt_prov_pdata_parse(ce->pdata, ce->pdata_len, &v);
	}
	*buf_len = (uint32_t)RAPT_MIN(v.len, (size_t)RAPT_PDATA_RECV_MAX);
	/* Bytes where no buffer was set up (rapt__ep_pdata_bufs): only a
	 * provider that carries more than the contract asks brings them. */
	if (*buf_len && !*bufp && !(*bufp = malloc(RAPT_PDATA_RECV_MAX))) {
		rapt_err("%u bytes of private data with %s: out of memory, dropped",
			 *buf_len, rapt_event_name(ce->type));
		*buf_len = 0;
	}
	if (*buf_len)
		memcpy(*bufp, v.data, *buf_len);
	c->pdata = *buf_len ? *bufp : NULL;
	c->pdata_len = *buf_len;
	/* Empty private data is foreign only where a rapt peer would have
	 * sent its header: the reply to our request.  A passive EP's
	 * ESTABLISHED carries nothing (its CR said who the peer is), nor do
	 * the transport's own rejects and disconnects. */
	if (v.foreign && (ce->pdata_len || (ce->type == RAPT_EV_ESTABLISHED &&
					    active)))
		c->flags |= RAPT_CONN_FOREIGN_PEER;
	if (ce->type == RAPT_EV_PEER_REJECTED ||
	    ce->type == RAPT_EV_NON_PEER_REJECTED)
		decode_reject(ce, pret, &v, ev);
}

static void note_established(struct rapt_core_ep *ep,
			     const struct rapt_prov_conn_event *ce,
			     struct rapt_event *ev)
{
	ep->rdma_read_in = ce->rdma_read_in;
	ep->rdma_read_out = ce->rdma_read_out;
	ep->local_addr = ce->local_addr;
	ep->remote_addr = ce->remote_addr;
	if (ce->flags & RAPT_CONN_SENDS_HELD)
		ep->flags |= RAPT_EPI_SENDS_HELD;
	if (ev->u.conn.flags & RAPT_CONN_FOREIGN_PEER)
		ep->flags |= RAPT_EPI_FOREIGN_PEER;
	else if (ep->flags & RAPT_EPI_FOREIGN_PEER)	/* accepted a foreign CR */
		ev->u.conn.flags |= RAPT_CONN_FOREIGN_PEER;
	ev->u.conn.rdma_read_in = ce->rdma_read_in;
	ev->u.conn.rdma_read_out = ce->rdma_read_out;
}

RAPT_SDK int rapt_prov_ep_event(struct rapt_core_ep *ep,
				const struct rapt_prov_conn_event *ce)
{
	struct rapt_event ev = { .type = ce->type };
	uint32_t s, next;
	bool disc;

	ev.u.conn.ep = rapt__obj_handle(&ep->obj);
	ev.u.conn.reason = ce->reason;
	ev.u.conn.flags = ce->flags & RAPT_CONN_SENDS_HELD;
	ev.u.conn.prov_status = ce->prov_status;
	disc = ce->type == RAPT_EV_DISCONNECTED || ce->type == RAPT_EV_BROKEN;

	pthread_mutex_lock(&ep->lock);
	s = atomic_load(&ep->state);
	next = next_state(ce->type, s);
	if (!next) {
		pthread_mutex_unlock(&ep->lock);
		rapt_err("provider reported event %s (%#x) on an EP in state %s; dropped",
			 rapt_event_name(ce->type), ce->type,
			 rapt_ep_state_name(s));
		return RAPT_ESTATE;
	}
	if (disc)
		take_pdata(ep, ce, false, &ep->disc_pdata,
			   &ep->disc_pdata_len, &ev);
	else
		take_pdata(ep, ce, s == RAPT_EP_ACTIVE_PENDING, &ep->pdata,
			   &ep->pdata_len, &ev);
	if (ce->type == RAPT_EV_ESTABLISHED)
		note_established(ep, ce, &ev);
	/* The state moves before the event is visible: a consumer that sees
	 * ESTABLISHED may post at once.  Pushing under the EP lock keeps
	 * one EP's events in the order the provider reported them. */
	atomic_store(&ep->state, next);
	rapt_prov_evd_push(ep->conn_evd, &ev);
	pthread_mutex_unlock(&ep->lock);
	return 0;
}
