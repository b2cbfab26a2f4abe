/* SPDX-License-Identifier: MIT */
/*
 * loop: EPs, listeners and connections.
 *
 * Active side: ep_connect finds the PSP listening on the service id and
 * hands the request to the core (rapt_prov_cr_arrive), which queues a CR
 * on the listener's EVD.  The request then waits for cr_accept or
 * cr_reject, for the connect timeout (the timer thread), or for the
 * requester to disconnect or be freed, which cancels it.
 *
 * Every function here runs with loop_fab.lock held (ops take it).
 */
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "loop.h"

/* The EP's final connection event: its receives flush first. */
void loop_ep_end(struct loop_ep *ep, uint32_t type, uint32_t reason,
		 const void *pdata, size_t pdata_len)
{
	struct rapt_prov_conn_event ce;

	loop_flush(ep);
	ep->state = LOOP_EP_CLOSED;
	memset(&ce, 0, sizeof(ce));
	ce.type = type;
	ce.reason = reason;
	/* A reject's private data is the consumer's (or the core's BUSY
	 * marker, which the core recognises by its header). */
	ce.consumer_reject = type == RAPT_EV_PEER_REJECTED;
	ce.pdata = pdata_len ? pdata : NULL;
	ce.pdata_len = pdata_len;
	rapt_prov_ep_event(ep->cep, &ce);
}

/* ------------------------------------------------------------------ */
/* Requests                                                            */
/* ------------------------------------------------------------------ */

static void req_untime(struct loop_req *req)
{
	if (req->deadline_ns)
		rapt_list_del(&req->tlink);
	req->deadline_ns = 0;
}

/* Keep loop_fab.timed in deadline order, for the timer thread. */
static void req_time(struct loop_req *req, int64_t timeout_us)
{
	struct rapt_list *pos;
	struct loop_req *o;

	if (timeout_us == RAPT_TIMEOUT_INFINITE)
		return;
	req->deadline_ns = rapt_now_ns() + (uint64_t)timeout_us * 1000u;
	rapt_list_for_each(pos, &loop_fab.timed) {
		o = rapt_container_of(pos, struct loop_req, tlink);
		if (o->deadline_ns > req->deadline_ns)
			break;
	}
	rapt_list_add_tail(pos, &req->tlink);	/* before pos */
	pthread_cond_signal(&loop_fab.timer_cond);
}

/* A request that is decided or cancelled. */
static void req_done(struct loop_req *req)
{
	req_untime(req);
	rapt_list_del(&req->link);
	free(req);
}

/*
 * The requester is going away while its CR is undecided.  Under our lock,
 * as every rapt_prov_cr_request() call: once the core has the cancel, a
 * decision it already started finds no request, so it can go now.
 */
static void req_cancel(struct loop_req *req)
{
	req->active->req = NULL;
	rapt_prov_cr_cancel(req->ccr);
	req_done(req);
}

/* The timer thread: connects whose time is up end TIMED_OUT. */
void loop_timeouts(uint64_t now_ns)
{
	struct loop_req *req;
	struct loop_ep *ep;

	while (!rapt_list_empty(&loop_fab.timed)) {
		req = rapt_container_of(rapt_list_first(&loop_fab.timed),
					struct loop_req, tlink);
		if (req->deadline_ns > now_ns)
			return;
		ep = req->active;
		req_cancel(req);
		loop_ep_end(ep, RAPT_EV_TIMED_OUT, 0, NULL, 0);
	}
}

/* ------------------------------------------------------------------ */
/* EP                                                                  */
/* ------------------------------------------------------------------ */

int loop_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
		   struct rapt_ep *handle, const struct rapt_ep_attr *attr,
		   void *recv_pevd, void *req_pevd, void *conn_pevd,
		   void **pep)
{
	struct loop_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return RAPT_ENOMEM;
	ep->ia = pia;
	ep->cep = cep;
	ep->handle = handle;
	ep->recv_evd = recv_pevd;
	ep->req_evd = req_pevd;
	/* The core filled in the defaults: max_recv is the real depth. */
	ep->max_recv = attr->max_recv;
	rapt_list_init(&ep->rq);
	*pep = ep;
	return 0;
}

/* The peer learns the end; nothing about this EP is queued after. */
int loop_ep_free(void *pep)
{
	struct loop_ep *ep = pep;
	struct rapt_list *pos, *tmp;

	pthread_mutex_lock(&loop_fab.lock);
	if (ep->state == LOOP_EP_CONNECTING) {
		req_cancel(ep->req);
	} else if (ep->state == LOOP_EP_CONNECTED) {
		ep->peer->peer = NULL;
		loop_ep_end(ep->peer, RAPT_EV_DISCONNECTED, 0, NULL, 0);
	}
	pthread_mutex_unlock(&loop_fab.lock);
	rapt_list_for_each_safe(pos, tmp, &ep->rq)
		free(rapt_container_of(pos, struct loop_recv, link));
	free(ep);
	return 0;
}

/* The core checked the mask and the limits; only the depth matters here
 * (loop has no send queue and no RDMA reads). */
int loop_ep_modify(void *pep, const struct rapt_ep_attr *attr,
		   uint32_t mask)
{
	struct loop_ep *ep = pep;

	pthread_mutex_lock(&loop_fab.lock);
	if (mask & RAPT_EP_ATTR_MAX_RECV)
		ep->max_recv = attr->max_recv;
	pthread_mutex_unlock(&loop_fab.lock);
	return 0;
}

static bool is_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

	if (sa->sa_family == AF_INET)
		return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
}

static struct loop_psp *psp_find(uint64_t sid)
{
	struct rapt_list *pos;
	struct loop_psp *psp;

	rapt_list_for_each(pos, &loop_fab.psps) {
		psp = rapt_container_of(pos, struct loop_psp, link);
		if (psp->sid == sid)
			return psp;
	}
	return NULL;
}

/* The addresses both ends will report: the requester gets an ephemeral
 * port at the loopback address of its family, the listener is where the
 * requester dialled, with the service id as its port. */
static void req_addresses(struct loop_req *req, const struct sockaddr *remote,
			  uint64_t sid)
{
	struct sockaddr *a = (struct sockaddr *)&req->active_addr;
	struct sockaddr *p = (struct sockaddr *)&req->psp_addr;

	rapt_sockaddr_copy(&req->psp_addr, remote);
	rapt_sockaddr_set_port(p, (uint16_t)sid);
	rapt_sockaddr_copy(&req->active_addr, remote);
	if (remote->sa_family == AF_INET)
		((struct sockaddr_in *)a)->sin_addr.s_addr =
			htonl(INADDR_LOOPBACK);
	else
		((struct sockaddr_in6 *)a)->sin6_addr = in6addr_loopback;
	if (++loop_fab.next_port < 32768)
		loop_fab.next_port = 32768;
	rapt_sockaddr_set_port(a, loop_fab.next_port);
}

/* Hand @req to its listener's consumer, or refuse it as the core says. */
static void req_deliver(struct loop_ep *ep, struct loop_req *req,
			const void *pdata, size_t pdata_len,
			int64_t timeout_us)
{
	struct rapt_prov_request r;
	struct rapt_prov_verdict v;

	memset(&r, 0, sizeof(r));
	r.pdata = pdata_len ? pdata : NULL;	/* framed by the core */
	r.pdata_len = pdata_len;
	r.remote_addr = req->active_addr;
	r.local_addr = req->psp_addr;
	if (rapt_prov_cr_arrive(req->psp->cpsp, req, &r, &req->ccr, &v)) {
		/* BUSY, VERSION or RESOURCES: the marker in v.pdata makes
		 * the core report NON_PEER_REJECTED with that reason. */
		free(req);
		loop_ep_end(ep, RAPT_EV_PEER_REJECTED, 0, v.pdata,
			    v.pdata_len);
		return;
	}
	rapt_list_add_tail(&req->psp->reqs, &req->link);
	rapt_list_init(&req->tlink);
	req_time(req, timeout_us);
	ep->req = req;
	ep->state = LOOP_EP_CONNECTING;
	ep->local = req->active_addr;
	ep->remote = req->psp_addr;
}

/* The core has moved the EP to ACTIVE_PENDING; exactly one outcome
 * follows, here or later. */
int loop_ep_connect(void *pep, const struct sockaddr *remote,
		    uint64_t service_id, const void *pdata, size_t pdata_len,
		    int64_t timeout_us)
{
	struct loop_ep *ep = pep;
	struct loop_req *req;
	struct loop_psp *psp;

	req = calloc(1, sizeof(*req));
	if (!req)
		return RAPT_ENOMEM;
	pthread_mutex_lock(&loop_fab.lock);
	psp = is_loopback(remote) ? psp_find(service_id) : NULL;
	if (!is_loopback(remote)) {
		free(req);
		loop_ep_end(ep, RAPT_EV_UNREACHABLE, 0, NULL, 0);
	} else if (!psp) {
		free(req);
		loop_ep_end(ep, RAPT_EV_NON_PEER_REJECTED,
			    RAPT_REJECT_NO_LISTENER, NULL, 0);
	} else {
		req->psp = psp;
		req->active = ep;
		req_addresses(req, remote, service_id);
		req_deliver(ep, req, pdata, pdata_len, timeout_us);
	}
	pthread_mutex_unlock(&loop_fab.lock);
	return 0;
}

/* Both ends see DISCONNECTED; the peer's carries our private data. */
int loop_ep_disconnect(void *pep, uint32_t flags, const void *pdata,
		       size_t pdata_len)
{
	struct loop_ep *ep = pep, *peer;

	pthread_mutex_lock(&loop_fab.lock);
	switch (ep->state) {
	case LOOP_EP_CONNECTING:
		req_cancel(ep->req);
		loop_ep_end(ep, RAPT_EV_DISCONNECTED, 0, NULL, 0);
		break;
	case LOOP_EP_CONNECTED:
		/* Sends complete when they are posted: a graceful close has
		 * nothing to wait for. */
		peer = ep->peer;
		peer->peer = NULL;
		ep->peer = NULL;
		loop_ep_end(peer, RAPT_EV_DISCONNECTED, 0, pdata, pdata_len);
		loop_ep_end(ep, RAPT_EV_DISCONNECTED, 0, NULL, 0);
		break;
	default:
		/* The peer ended it first: our DISCONNECTED is queued. */
		break;
	}
	pthread_mutex_unlock(&loop_fab.lock);
	return 0;
}

/* ------------------------------------------------------------------ */
/* PSP and CR                                                          */
/* ------------------------------------------------------------------ */

int loop_psp_create(void *pia, struct rapt_core_psp *cpsp,
		    uint64_t service_id, const struct rapt_psp_attr *attr,
		    void *cr_pevd, uint64_t *bound_id, void **ppsp)
{
	struct loop_psp *psp;
	uint64_t sid = service_id;

	psp = calloc(1, sizeof(*psp));
	if (!psp)
		return RAPT_ENOMEM;
	pthread_mutex_lock(&loop_fab.lock);
	if (service_id == RAPT_SERVICE_ID_ANY) {
		for (sid = LOOP_SID_ANY_MIN; sid <= LOOP_SID_MAX; sid++)
			if (!psp_find(sid))
				break;
	}
	if (sid > LOOP_SID_MAX || psp_find(sid)) {
		pthread_mutex_unlock(&loop_fab.lock);
		free(psp);
		rapt_prov_set_error(LOOP_NAME ": service id %llu is taken",
				    (unsigned long long)service_id);
		return RAPT_EADDRINUSE;
	}
	psp->ia = pia;
	psp->cpsp = cpsp;
	psp->sid = sid;
	rapt_list_init(&psp->reqs);
	rapt_list_add_tail(&loop_fab.psps, &psp->link);
	pthread_mutex_unlock(&loop_fab.lock);
	*bound_id = sid;
	*ppsp = psp;
	return 0;
}

/* The core frees a PSP only when no CR of it is undecided: connections
 * already accepted do not depend on it. */
int loop_psp_free(void *ppsp)
{
	struct loop_psp *psp = ppsp;

	pthread_mutex_lock(&loop_fab.lock);
	rapt_list_del(&psp->link);
	pthread_mutex_unlock(&loop_fab.lock);
	free(psp);
	return 0;
}

/*
 * The requester of @ccr, its request consumed, with loop_fab.lock held;
 * NULL, with the lock released, when the requester left (the CR is
 * cancelled).  The lock serialises this with req_cancel.
 */
static struct loop_ep *req_take(struct rapt_core_cr *ccr)
{
	struct loop_req *req;
	struct loop_ep *act;

	pthread_mutex_lock(&loop_fab.lock);
	req = rapt_prov_cr_request(ccr);
	if (!req) {
		pthread_mutex_unlock(&loop_fab.lock);
		rapt_prov_set_error(LOOP_NAME ": the requester went away");
		return NULL;
	}
	act = req->active;
	act->req = NULL;
	req_done(req);
	return act;
}

/* Both ESTABLISHED, the active side first: when the passive consumer
 * sees its ESTABLISHED, the active EP can already receive. */
int loop_cr_accept(void *ppsp, struct rapt_core_cr *ccr, void *pep,
		   const void *pdata, size_t pdata_len)
{
	struct loop_ep *pas = pep, *act;
	struct rapt_prov_conn_event ce;

	act = req_take(ccr);
	if (!act)
		return RAPT_ENOTCONN;
	act->peer = pas;
	act->state = LOOP_EP_CONNECTED;
	pas->peer = act;
	pas->state = LOOP_EP_CONNECTED;
	pas->local = act->remote;
	pas->remote = act->local;

	memset(&ce, 0, sizeof(ce));
	ce.type = RAPT_EV_ESTABLISHED;
	ce.pdata = pdata_len ? pdata : NULL;
	ce.pdata_len = pdata_len;
	ce.local_addr = act->local;
	ce.remote_addr = act->remote;
	rapt_prov_ep_event(act->cep, &ce);

	memset(&ce, 0, sizeof(ce));
	ce.type = RAPT_EV_ESTABLISHED;
	ce.local_addr = pas->local;
	ce.remote_addr = pas->remote;
	rapt_prov_ep_event(pas->cep, &ce);
	pthread_mutex_unlock(&loop_fab.lock);
	return 0;
}

int loop_cr_reject(void *ppsp, struct rapt_core_cr *ccr, const void *pdata,
		   size_t pdata_len)
{
	struct loop_ep *act = req_take(ccr);

	if (!act)
		return RAPT_ENOTCONN;
	loop_ep_end(act, RAPT_EV_PEER_REJECTED, 0, pdata, pdata_len);
	pthread_mutex_unlock(&loop_fab.lock);
	return 0;
}
