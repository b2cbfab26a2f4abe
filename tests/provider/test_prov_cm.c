/* SPDX-License-Identifier: MIT */
/*
 * The "test" provider's connection management: EPs, listeners, requests,
 * accept/reject, disconnect and timers.  Everything here runs under tp.lock;
 * the few core calls (handshake accounting, CR arrival and cancel) are made
 * with the lock dropped and the listener pinned.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "test_prov.h"

/* What a remote address stands for (see test_prov.h). */
enum tp_dest {
	TP_DEST_LISTENER,
	TP_DEST_SILENT,
	TP_DEST_BLACKHOLE,
	TP_DEST_UNREACHABLE,
};

static enum tp_dest tp_classify(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
	uint32_t a;

	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr) ?
		       TP_DEST_LISTENER : TP_DEST_UNREACHABLE;
	if (ss->ss_family != AF_INET)
		return TP_DEST_UNREACHABLE;
	a = ntohl(s4->sin_addr.s_addr);
	if (a == 0x7f000002)			/* 127.0.0.2 */
		return TP_DEST_SILENT;
	if ((a >> 24) == 127)
		return TP_DEST_LISTENER;
	if (a == 0xc6336401)			/* 198.51.100.1 */
		return TP_DEST_BLACKHOLE;
	return TP_DEST_UNREACHABLE;		/* 192.0.2.1 and the rest */
}

/* Copy @sa into @ss with @port; unknown families keep only the family. */
static void tp_addr_set(struct sockaddr_storage *ss, const struct sockaddr *sa,
			uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (sa->sa_family == AF_INET) {
		memcpy(ss, sa, sizeof(struct sockaddr_in));
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(ss, sa, sizeof(struct sockaddr_in6));
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	} else {
		ss->ss_family = sa->sa_family;
	}
}

/* The active side's own address: loopback with an ephemeral port. */
static void tp_addr_local(struct sockaddr_storage *ss, int family)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	uint16_t port;

	if (tp.eph_port < TP_EPHEMERAL_MIN || tp.eph_port >= TP_SID_MAX)
		tp.eph_port = TP_EPHEMERAL_MIN;
	port = (uint16_t)tp.eph_port++;
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET6) {
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_loopback;
		s6->sin6_port = htons(port);
	} else {
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		s4->sin_port = htons(port);
	}
}

/* ------------------------------------------------------------------ */
/* Connect timers                                                      */
/* ------------------------------------------------------------------ */

static void tp_timer_add(struct tp_ep *ep, int64_t timeout_us)
{
	ep->deadline = tp_now() + timeout_us * 1000;
	ep->timed = true;
	TAILQ_INSERT_TAIL(&ep->ia->timed, ep, tlink);
	pthread_cond_signal(&ep->ia->cond);
}

static void tp_timer_del(struct tp_ep *ep)
{
	if (!ep->timed)
		return;
	ep->timed = false;
	TAILQ_REMOVE(&ep->ia->timed, ep, tlink);
}

/* ------------------------------------------------------------------ */
/* Ending connections                                                  */
/* ------------------------------------------------------------------ */

/* The requester leaves its request: an undecided CR gets cancelled. */
static void tp_ep_leave_req(struct tp_ep *ep)
{
	struct tp_req *req = ep->req;

	if (!req)
		return;
	ep->req = NULL;
	req->active = NULL;
	if (req->state == TP_REQ_PENDING)
		tp_queue(req->ia, tp_item_new(TP_IT_CANCEL, NULL, req));
	tp_req_put(req);
}

/**
 * tp_ep_end - give an EP its final connection event
 * @ep: the EP (not yet linked to a peer, or already unlinked)
 * @type: RAPT_EV_*
 * @reason: enum rapt_reject_reason
 * @pdata: private data for the event (framed), or NULL
 * @len: its length
 * @consumer_reject: for PEER_REJECTED
 *
 * Outstanding work is flushed first; later sends fail with RAPT_ESTATE and
 * later receives complete FLUSHED.
 */
void tp_ep_end(struct tp_ep *ep, uint32_t type, uint32_t reason,
	       const void *pdata, size_t len, uint32_t consumer_reject)
{
	struct rapt_prov_conn_event ce;

	if (ep->state == TP_EP_CLOSED)
		return;
	tp_ep_leave_req(ep);
	tp_timer_del(ep);
	tp_flush(ep);
	ep->state = TP_EP_CLOSED;
	memset(&ce, 0, sizeof(ce));
	ce.type = type;
	ce.reason = reason;
	ce.consumer_reject = consumer_reject;
	ce.pdata = pdata;
	ce.pdata_len = len;
	tp_post_conn(ep, &ce, false);
}

/**
 * tp_pair_end - end a connection on both sides
 * @ep: the EP whose side ends it
 * @type: RAPT_EV_DISCONNECTED or RAPT_EV_BROKEN, for both sides
 * @pdata: disconnect private data for the peer, or NULL
 * @len: its length
 *
 * A peer still waiting for its RTR gets ACCEPT_ERROR instead.
 */
void tp_pair_end(struct tp_ep *ep, uint32_t type, const void *pdata,
		 size_t len)
{
	struct tp_ep *peer = ep->peer;

	ep->peer = NULL;
	tp_ep_end(ep, type, 0, NULL, 0, 0);
	if (!peer)
		return;
	peer->peer = NULL;
	if (peer->state == TP_EP_ACCEPTING)
		tp_ep_end(peer, RAPT_EV_ACCEPT_ERROR, 0, NULL, 0, 0);
	else
		tp_ep_end(peer, type, 0, pdata, len, 0);
}

/* ------------------------------------------------------------------ */
/* Listeners                                                           */
/* ------------------------------------------------------------------ */

static struct tp_lsn *tp_lsn_find(const struct tp_dev *dev, uint64_t sid)
{
	struct tp_lsn *l;

	TAILQ_FOREACH(l, &tp.listeners, link)
		if (l->ia->dev == dev && l->sid == sid)
			return l;
	return NULL;
}

/* A free service id for RAPT_SERVICE_ID_ANY, or 0. */
static uint64_t tp_sid_any(const struct tp_dev *dev)
{
	uint32_t span = TP_SID_MAX - TP_EPHEMERAL_MIN + 1;
	uint32_t i, sid;

	for (i = 0; i < span; i++) {
		sid = TP_EPHEMERAL_MIN + tp.sid_seq++ % span;
		if (!tp_lsn_find(dev, sid))
			return sid;
	}
	return 0;
}

int tp_psp_create(void *pia, struct rapt_core_psp *cpsp, uint64_t service_id,
		  const struct rapt_psp_attr *attr, void *cr_pevd,
		  uint64_t *bound_id, void **ppsp)
{
	struct tp_ia *ia = pia;
	struct tp_lsn *l = calloc(1, sizeof(*l));
	uint64_t sid = service_id;

	if (!l)
		return RAPT_ENOMEM;
	pthread_mutex_lock(&tp.lock);
	if (sid == RAPT_SERVICE_ID_ANY)
		sid = tp_sid_any(ia->dev);
	if (!sid || tp_lsn_find(ia->dev, sid)) {
		pthread_mutex_unlock(&tp.lock);
		free(l);
		rapt_prov_set_error("test provider: service id %llu is taken",
				    (unsigned long long)service_id);
		return RAPT_EADDRINUSE;
	}
	l->ia = ia;
	l->cpsp = cpsp;
	l->sid = sid;
	l->hs_limit = attr->handshake_limit;
	l->refs = 1;
	TAILQ_INSERT_TAIL(&tp.listeners, l, link);
	pthread_mutex_unlock(&tp.lock);
	*bound_id = sid;
	*ppsp = l;
	return 0;
}

/* Half-open requests die with their listener: the requester sees the
 * connection reset (UNREACHABLE). */
static void tp_lsn_drop_halfopen(struct tp_lsn *l)
{
	struct tp_req *req, *next;

	for (req = TAILQ_FIRST(&l->ia->halfopen); req; req = next) {
		next = TAILQ_NEXT(req, ho_link);
		if (req->lsn != l)
			continue;
		TAILQ_REMOVE(&l->ia->halfopen, req, ho_link);
		req->on_ho = false;
		if (req->active)
			tp_ep_end(req->active, RAPT_EV_UNREACHABLE, 0, NULL,
				  0, 0);
		req->state = TP_REQ_DONE;
		tp_req_put(req);
	}
}

int tp_psp_free(void *ppsp)
{
	struct tp_lsn *l = ppsp;

	pthread_mutex_lock(&tp.lock);
	l->dead = true;
	TAILQ_REMOVE(&tp.listeners, l, link);
	tp_lsn_drop_halfopen(l);
	while (l->calling)
		pthread_cond_wait(&tp.idle, &tp.lock);
	tp_lsn_put(l);
	pthread_mutex_unlock(&tp.lock);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Requests                                                            */
/* ------------------------------------------------------------------ */

static struct tp_req *tp_req_new(struct tp_ep *a, struct tp_lsn *l,
				 bool silent)
{
	struct tp_req *req = tp_xcalloc(sizeof(*req));

	req->ia = l->ia;
	req->lsn = l;
	l->refs++;
	req->active = a;
	req->refs = 1;			/* the requester's */
	req->state = TP_REQ_SENT;
	req->silent = silent;
	req->ird = a->ird;
	req->ord = a->ord;
	req->local = a->remote;
	req->remote = a->local;
	req->pdata_len = a->cpdata_len;
	memcpy(req->pdata, a->cpdata, a->cpdata_len);
	TAILQ_INSERT_TAIL(&l->ia->reqs, req, ia_link);
	a->req = req;
	return req;
}

/* Refuse a request that never became a CR; its requester gets @type. */
static void tp_req_refuse(struct tp_req *req, uint32_t type, uint32_t reason,
			  const void *pdata, size_t len)
{
	req->state = TP_REQ_DONE;
	if (req->active)
		tp_ep_end(req->active, type, reason, pdata, len, 0);
}

/**
 * tp_cm_connect - an active connect leaves the requester (its IA's thread)
 * @a: the requester
 */
void tp_cm_connect(struct tp_ep *a)
{
	enum tp_dest dest;
	struct tp_lsn *l;
	struct tp_req *req;

	if (a->dead || a->state != TP_EP_CONNECTING || a->req)
		return;
	dest = tp_classify(&a->remote);
	if (dest == TP_DEST_BLACKHOLE)
		return;
	if (dest == TP_DEST_UNREACHABLE) {
		tp_ep_end(a, RAPT_EV_UNREACHABLE, 0, NULL, 0, 0);
		return;
	}
	l = tp_lsn_find(a->ia->dev, a->sid);
	if (!l) {
		tp_ep_end(a, RAPT_EV_NON_PEER_REJECTED,
			  RAPT_REJECT_NO_LISTENER, NULL, 0, 0);
		return;
	}
	req = tp_req_new(a, l, dest == TP_DEST_SILENT);
	tp_queue(l->ia, tp_item_new(TP_IT_REQUEST, NULL, req));
}

static void tp_req_halfopen(struct tp_req *req, uint32_t hs_ms)
{
	if (req->lsn->dead) {
		tp_req_refuse(req, RAPT_EV_UNREACHABLE, 0, NULL, 0);
		return;
	}
	req->state = TP_REQ_HALFOPEN;
	req->ho_deadline = tp_now() + (int64_t)hs_ms * 1000000;
	req->on_ho = true;
	req->refs++;			/* the half-open list's */
	TAILQ_INSERT_TAIL(&req->ia->halfopen, req, ho_link);
}

/* The core refused the CR: send its verdict back as the reject. */
static void tp_req_verdict(struct tp_req *req, int ret,
			   const struct rapt_prov_verdict *v)
{
	if (ret == RAPT_EBUSY || ret == RAPT_EVERSION)
		tp_req_refuse(req, RAPT_EV_PEER_REJECTED, 0, v->pdata,
			      v->pdata_len);
	else
		tp_req_refuse(req, RAPT_EV_NON_PEER_REJECTED,
			      RAPT_REJECT_RESOURCES, NULL, 0);
}

/* Leave the handshake and hand the request to the core as a CR.  Called
 * with the listener pinned; unpins it. */
static void tp_req_arrive(struct tp_req *req)
{
	struct tp_lsn *l = req->lsn;
	struct rapt_core_cr *ccr = NULL;
	struct rapt_prov_request r;
	struct rapt_prov_verdict v;
	bool gone = !req->active;
	int ret = 0;

	memset(&r, 0, sizeof(r));
	r.pdata = req->pdata_len ? req->pdata : NULL;
	r.pdata_len = req->pdata_len;
	r.rdma_read_in = req->ird;
	r.rdma_read_out = req->ord;
	r.remote_addr = req->remote;
	r.local_addr = req->local;
	req->state = gone ? TP_REQ_DONE : TP_REQ_ARRIVING;
	req->refs++;			/* the core's, if it takes it */
	pthread_mutex_unlock(&tp.lock);
	rapt_prov_psp_hs_end(l->cpsp, gone ? RAPT_HS_FAILED : RAPT_HS_DONE);
	if (!gone)
		ret = rapt_prov_cr_arrive(l->cpsp, req, &r, &ccr, &v);
	pthread_mutex_lock(&tp.lock);
	tp_unpin(&l->calling);
	if (gone || ret) {
		tp_req_put(req);	/* the item still holds one */
		if (ret)
			tp_req_verdict(req, ret, &v);
		return;
	}
	req->ccr = ccr;
	if (req->state != TP_REQ_ARRIVING)
		return;			/* the consumer decided already */
	req->state = TP_REQ_PENDING;
	if (!req->active)
		tp_queue(req->ia, tp_item_new(TP_IT_CANCEL, NULL, req));
}

/**
 * tp_cm_request - a request reaches its listener (the listener IA's thread)
 * @req: the request
 */
static void tp_ho_make_room(struct tp_lsn *l);

void tp_cm_request(struct tp_req *req)
{
	uint8_t busy[RAPT_PDATA_HEADER_LEN];
	struct tp_lsn *l = req->lsn;
	size_t busy_len = 0;
	uint32_t hs_ms = 0;
	int ret;

	if (req->state != TP_REQ_SENT)
		return;
	if (!req->active) {
		req->state = TP_REQ_DONE;
		return;
	}
	if (l->dead) {
		tp_req_refuse(req, RAPT_EV_NON_PEER_REJECTED,
			      RAPT_REJECT_NO_LISTENER, NULL, 0);
		return;
	}
	l->calling++;
	tp_ho_make_room(l);
	pthread_mutex_unlock(&tp.lock);
	ret = rapt_prov_psp_hs_begin(l->cpsp);
	if (ret)
		busy_len = rapt_prov_pdata_frame(RAPT_PDATA_BUSY, NULL, 0,
						 busy);
	else if (req->silent)
		hs_ms = rapt_prov_psp_hs_timeout_ms(l->cpsp);
	pthread_mutex_lock(&tp.lock);
	if (ret) {
		tp_unpin(&l->calling);
		tp_req_refuse(req, RAPT_EV_PEER_REJECTED, 0, busy, busy_len);
	} else if (req->silent) {
		tp_unpin(&l->calling);
		tp_req_halfopen(req, hs_ms);
	} else {
		tp_req_arrive(req);
	}
}

/**
 * tp_cm_cancel - tell the core an undecided CR's requester went away
 * @req: the request
 */
void tp_cm_cancel(struct tp_req *req)
{
	if (req->state != TP_REQ_PENDING)
		return;
	req->state = TP_REQ_CANCELLED;
	pthread_mutex_unlock(&tp.lock);
	rapt_prov_cr_cancel(req->ccr);
	pthread_mutex_lock(&tp.lock);
}

/* A silent client leaves the handshake: its timeout passed (TIMED_OUT
 * for it), or it made room for a new request (the listener closed it:
 * UNREACHABLE).  Drops tp.lock for the core. */
static void tp_ho_end(struct tp_req *req, int outcome, uint32_t type)
{
	struct tp_lsn *l = req->lsn;

	TAILQ_REMOVE(&req->ia->halfopen, req, ho_link);
	req->on_ho = false;
	if (!l->dead) {
		l->calling++;
		pthread_mutex_unlock(&tp.lock);
		rapt_prov_psp_hs_end(l->cpsp, outcome);
		pthread_mutex_lock(&tp.lock);
		tp_unpin(&l->calling);
	}
	tp_req_refuse(req, type, 0, NULL, 0);
	tp_req_put(req);
}

static void tp_ho_expire(struct tp_req *req)
{
	tp_ho_end(req, RAPT_HS_TIMEOUT, RAPT_EV_TIMED_OUT);
}

/*
 * Before a request is counted: if @l's handshake limit is full, its
 * oldest silent client makes room (DESIGN.md 3), as the tcp provider
 * does; every half-open request of the fixture is silent, so BUSY comes
 * only from the CR backlog here.  May drop tp.lock.
 */
static void tp_ho_make_room(struct tp_lsn *l)
{
	struct tp_req *req, *oldest = NULL;
	uint32_t n = 0;

	TAILQ_FOREACH(req, &l->ia->halfopen, ho_link) {
		if (req->lsn != l)
			continue;
		if (!oldest)
			oldest = req;
		n++;
	}
	if (oldest && n >= l->hs_limit)
		tp_ho_end(oldest, RAPT_HS_FAILED, RAPT_EV_UNREACHABLE);
}

/**
 * tp_cm_timers - fire expired connect and handshake timers of @ia
 * @ia: the IA
 *
 * Return: the next deadline (monotonic ns), or INT64_MAX.
 */
int64_t tp_cm_timers(struct tp_ia *ia)
{
	struct tp_ep *ep, *enext;
	struct tp_req *req;
	int64_t now, next;

again:
	now = tp_now();
	next = INT64_MAX;
	for (ep = TAILQ_FIRST(&ia->timed); ep; ep = enext) {
		enext = TAILQ_NEXT(ep, tlink);
		if (ep->deadline <= now)
			tp_ep_end(ep, RAPT_EV_TIMED_OUT, 0, NULL, 0, 0);
		else if (ep->deadline < next)
			next = ep->deadline;
	}
	TAILQ_FOREACH(req, &ia->halfopen, ho_link) {
		if (req->ho_deadline <= now) {
			tp_ho_expire(req);	/* drops the lock */
			goto again;
		}
		if (req->ho_deadline < next)
			next = req->ho_deadline;
	}
	return next;
}

/**
 * tp_cm_drop_item - an item left in a closing IA's FIFO
 * @it: the item
 *
 * Only requests in flight to the IA's (freed) listeners still matter:
 * their requesters hear that nobody listens.
 */
void tp_cm_drop_item(struct tp_item *it)
{
	if (it->kind == TP_IT_REQUEST && it->req->state == TP_REQ_SENT)
		tp_req_refuse(it->req, RAPT_EV_NON_PEER_REJECTED,
			      RAPT_REJECT_NO_LISTENER, NULL, 0);
}

/**
 * tp_cm_ia_sweep - free the requests of a closing IA
 * @ia: the IA, its thread stopped and FIFO drained
 *
 * Cancelled requests keep their core reference until now.
 */
void tp_cm_ia_sweep(struct tp_ia *ia)
{
	struct tp_req *req;

	while ((req = TAILQ_FIRST(&ia->reqs))) {
		TAILQ_REMOVE(&ia->reqs, req, ia_link);
		if (req->on_ho)
			TAILQ_REMOVE(&ia->halfopen, req, ho_link);
		if (req->active)
			req->active->req = NULL;
		tp_lsn_put(req->lsn);
		free(req);
	}
}

/* ------------------------------------------------------------------ */
/* Accept and reject                                                   */
/* ------------------------------------------------------------------ */

static void tp_conn_addrs(struct rapt_prov_conn_event *ce,
			  const struct tp_ep *ep)
{
	ce->local_addr = ep->local;
	ce->remote_addr = ep->remote;
	ce->rdma_read_in = ep->ird;
	ce->rdma_read_out = ep->ord;
}

/* Bind requester @a and acceptor @b; @a gets ESTABLISHED, then the RTR. */
static void tp_connect_pair(struct tp_ep *a, struct tp_ep *b,
			    struct tp_req *req, const void *pdata, size_t len)
{
	struct rapt_prov_conn_event ce;
	uint32_t a_ord = a->ord < b->attr.rdma_read_in ?
			 a->ord : b->attr.rdma_read_in;
	uint32_t a_ird = a->ird < b->attr.rdma_read_out ?
			 a->ird : b->attr.rdma_read_out;

	b->local = req->local;
	b->remote = req->remote;
	b->sid = a->sid;
	a->ord = a_ord;
	b->ird = a_ord;
	a->ird = a_ird;
	b->ord = a_ird;
	tp_ep_leave_req(a);
	tp_timer_del(a);
	a->peer = b;
	b->peer = a;
	a->state = TP_EP_CONNECTED;
	b->state = TP_EP_ACCEPTING;
	memset(&ce, 0, sizeof(ce));
	ce.type = RAPT_EV_ESTABLISHED;
	ce.pdata = pdata;
	ce.pdata_len = len;
	tp_conn_addrs(&ce, a);
	tp_post_conn(a, &ce, true);
}

/**
 * tp_cm_rtr - the active side's RTR reaches the passive side
 * @a: the active EP, whose ESTABLISHED was just delivered
 */
void tp_cm_rtr(struct tp_ep *a)
{
	struct rapt_prov_conn_event ce;
	struct tp_ep *b = a->peer;

	if (!b || b->state != TP_EP_ACCEPTING)
		return;
	b->state = TP_EP_CONNECTED;
	memset(&ce, 0, sizeof(ce));
	ce.type = RAPT_EV_ESTABLISHED;
	tp_conn_addrs(&ce, b);
	tp_post_conn(b, &ce, false);
}

/* The request of @ccr, or NULL once cancelled; it stays in memory until
 * its IA closes, so the state check under tp.lock settles a race with a
 * cancel that comes after this. */
static struct tp_req *tp_req_of(void *ppsp, struct rapt_core_cr *ccr)
{
	struct tp_req *req = rapt_prov_cr_request(ccr);

	if (req && req->lsn != ppsp) {
		tp_warn("cr op: request of another listener");
		return NULL;
	}
	return req;
}

int tp_cr_accept(void *ppsp, struct rapt_core_cr *ccr, void *pep,
		 const void *pdata, size_t pdata_len)
{
	struct tp_req *req = tp_req_of(ppsp, ccr);
	struct tp_ep *b = pep, *a;

	if (!req)
		return RAPT_ENOTCONN;
	if (pdata_len > b->ia->dev->pdata_accept)
		return RAPT_ELENGTH;
	pthread_mutex_lock(&tp.lock);
	if (req->state == TP_REQ_CANCELLED) {
		pthread_mutex_unlock(&tp.lock);
		return RAPT_ENOTCONN;
	}
	if (b->state != TP_EP_IDLE) {
		pthread_mutex_unlock(&tp.lock);
		return RAPT_ESTATE;
	}
	req->state = TP_REQ_DECIDED;
	a = req->active;
	if (a && a->state == TP_EP_CONNECTING)
		tp_connect_pair(a, b, req, pdata, pdata_len);
	else
		tp_ep_end(b, RAPT_EV_ACCEPT_ERROR, 0, NULL, 0, 0);
	tp_req_put(req);		/* the core's */
	pthread_mutex_unlock(&tp.lock);
	return 0;
}

int tp_cr_reject(void *ppsp, struct rapt_core_cr *ccr, const void *pdata,
		 size_t pdata_len)
{
	struct tp_req *req = tp_req_of(ppsp, ccr);
	struct tp_ep *a;

	if (!req)
		return RAPT_ENOTCONN;
	if (pdata_len > req->ia->dev->pdata_reject)
		return RAPT_ELENGTH;
	pthread_mutex_lock(&tp.lock);
	if (req->state == TP_REQ_CANCELLED) {
		pthread_mutex_unlock(&tp.lock);
		return RAPT_ENOTCONN;
	}
	req->state = TP_REQ_DECIDED;
	a = req->active;
	if (a && a->state == TP_EP_CONNECTING)
		tp_ep_end(a, RAPT_EV_PEER_REJECTED, 0, pdata, pdata_len, 1);
	tp_req_put(req);		/* the core's */
	pthread_mutex_unlock(&tp.lock);
	return 0;
}

/* ------------------------------------------------------------------ */
/* EP                                                                  */
/* ------------------------------------------------------------------ */

int tp_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
		 struct rapt_ep *handle, const struct rapt_ep_attr *attr,
		 void *recv_pevd, void *req_pevd, void *conn_pevd, void **pep)
{
	struct tp_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return RAPT_ENOMEM;
	ep->ia = pia;
	ep->pz = ppz;
	ep->cep = cep;
	ep->handle = handle;
	ep->recv_evd = recv_pevd;
	ep->req_evd = req_pevd;
	ep->attr = *attr;
	ep->state = TP_EP_IDLE;
	ep->refs = 1;
	TAILQ_INIT(&ep->sq);
	TAILQ_INIT(&ep->rq);
	*pep = ep;
	return 0;
}

/* A live connection ends abruptly: the peer sees DISCONNECTED.  Nothing
 * is reported for @ep itself, and once no core call is in flight for it,
 * it is never named to the core again. */
int tp_ep_free(void *pep)
{
	struct tp_ep *ep = pep;

	pthread_mutex_lock(&tp.lock);
	ep->dead = true;
	if (ep->state == TP_EP_IDLE)
		tp_flush(ep);
	else
		tp_pair_end(ep, RAPT_EV_DISCONNECTED, NULL, 0);
	while (ep->calling)
		pthread_cond_wait(&tp.idle, &tp.lock);
	tp_ep_put(ep);
	pthread_mutex_unlock(&tp.lock);
	return 0;
}

int tp_ep_modify(void *pep, const struct rapt_ep_attr *attr, uint32_t mask)
{
	struct tp_ep *ep = pep;
	bool conn;

	pthread_mutex_lock(&tp.lock);
	conn = ep->state == TP_EP_CONNECTED;
	if (mask & RAPT_EP_ATTR_MAX_SEND)
		ep->attr.max_send = attr->max_send;
	if (mask & RAPT_EP_ATTR_MAX_RECV)
		ep->attr.max_recv = attr->max_recv;
	if (mask & RAPT_EP_ATTR_RDMA_READ_IN) {
		ep->attr.rdma_read_in = attr->rdma_read_in;
		if (conn)
			ep->ird = attr->rdma_read_in;
	}
	if (mask & RAPT_EP_ATTR_RDMA_READ_OUT) {
		ep->attr.rdma_read_out = attr->rdma_read_out;
		if (conn)
			ep->ord = attr->rdma_read_out;
	}
	if (mask & RAPT_EP_ATTR_FLAGS)
		ep->attr.flags = attr->flags;
	pthread_mutex_unlock(&tp.lock);
	return 0;
}

int tp_ep_connect(void *pep, const struct sockaddr *remote,
		  uint64_t service_id, const void *pdata, size_t pdata_len,
		  int64_t timeout_us)
{
	struct tp_ep *ep = pep;

	if (pdata_len > ep->ia->dev->pdata_connect)
		return RAPT_ELENGTH;
	pthread_mutex_lock(&tp.lock);
	if (ep->state != TP_EP_IDLE) {
		pthread_mutex_unlock(&tp.lock);
		return RAPT_ESTATE;
	}
	ep->state = TP_EP_CONNECTING;
	ep->sid = service_id;
	tp_addr_set(&ep->remote, remote, (uint16_t)service_id);
	tp_addr_local(&ep->local, remote->sa_family);
	ep->cpdata_len = pdata_len;
	if (pdata_len)
		memcpy(ep->cpdata, pdata, pdata_len);
	ep->ird = ep->attr.rdma_read_in;
	ep->ord = ep->attr.rdma_read_out;
	if (timeout_us != RAPT_TIMEOUT_INFINITE)
		tp_timer_add(ep, timeout_us);
	tp_queue(ep->ia, tp_item_new(TP_IT_CONNECT, ep, NULL));
	pthread_mutex_unlock(&tp.lock);
	return 0;
}

/* Queue the graceful-disconnect marker behind the posted sends. */
static void tp_disc_queue(struct tp_ep *ep, struct tp_wr *wr)
{
	TAILQ_INSERT_TAIL(&ep->sq, wr, link);
	ep->sq_n++;
	ep->state = TP_EP_CLOSING;
	tp_kick(ep);
}

static int tp_disconnect_locked(struct tp_ep *ep, bool abrupt,
				struct tp_wr **wr, const void *pdata,
				size_t len)
{
	switch (ep->state) {
	case TP_EP_CONNECTING:
		tp_ep_end(ep, RAPT_EV_DISCONNECTED, 0, NULL, 0, 0);
		return 0;
	case TP_EP_CONNECTED:
		if (!abrupt) {
			tp_disc_queue(ep, *wr);
			*wr = NULL;
			return 0;
		}
		tp_pair_end(ep, RAPT_EV_DISCONNECTED, pdata, len);
		return 0;
	case TP_EP_CLOSING:
		if (!abrupt)
			return RAPT_ESTATE;
		tp_pair_end(ep, RAPT_EV_DISCONNECTED, pdata, len);
		return 0;
	case TP_EP_ACCEPTING:
		tp_pair_end(ep, RAPT_EV_DISCONNECTED, pdata, len);
		return 0;
	case TP_EP_CLOSED:
		return 0;	/* the final event is already queued */
	default:
		return RAPT_ESTATE;
	}
}

int tp_ep_disconnect(void *pep, uint32_t flags, const void *pdata,
		     size_t pdata_len)
{
	bool abrupt = flags & RAPT_CLOSE_ABRUPT;
	struct tp_ep *ep = pep;
	struct tp_wr *wr = NULL;
	int ret;

	if (pdata_len > ep->ia->dev->pdata_disconnect)
		return RAPT_ELENGTH;
	if (!abrupt) {
		wr = tp_wr_new(TP_WR_DISC, NULL, 0, 0, pdata_len);
		if (!wr)
			return RAPT_ENOMEM;
		wr->len = (uint32_t)pdata_len;
		if (pdata_len)
			memcpy(wr->data, pdata, pdata_len);
	}
	pthread_mutex_lock(&tp.lock);
	ret = tp_disconnect_locked(ep, abrupt, &wr, pdata, pdata_len);
	pthread_mutex_unlock(&tp.lock);
	free(wr);
	return ret;
}
