/* SPDX-License-Identifier: MIT */
/*
 * verbs layer: connections through rdma_cm, with the EP's own QP.
 *
 * The EP's QP exists from ep_create; rdma_cm never creates one.  The
 * active side hands rdma_connect() the QP's number (rdma_conn_param
 * .qp_num), the passive side hands it to rdma_accept(), with any EP of the
 * IA, created before or after the request: the kernel's connection manager
 * finds a QP by number on the device and moves it to RTS itself (iWARP),
 * so nothing is re-created at accept time.
 *
 * All rdma_cm ids of an IA share one event channel, which the IA's engine
 * watches: events are read, copied and acknowledged at once (an id can be
 * destroyed only when its events are acknowledged), then acted on.  Ops
 * that use an id run under rapt_engine_call(), so they never race an
 * event handler; the consumer's thread runs them.
 *
 * An iWARP rdma_connect() may block: kernel siw connects its TCP socket
 * synchronously inside it (for a peer that never answers, for as long as
 * the kernel's SYN retries last).  So there it runs on the IA's connector
 * threads, and the connect timeout is the EP's engine timer, which ends
 * the connect with TIMED_OUT whatever the thread is doing.  On IB it only
 * sends the REQ and runs on the runner.
 *
 * The connector threads are made with the EPs, one per EP up to
 * VB_CONNECTORS (vb_cm_ep_added), on the thread that creates the EP: not
 * on the runner when a route is resolved, where each one held up every
 * rdma_cm event behind it, nor in a burst of connects, where a new thread
 * waited a scheduler slice behind the busy-polling consumer before it
 * first ran (dtestcm -c 30 on siw: 1.12-1.16 times the connections a
 * second, docs/dat-compat.md).  They live until the IA closes.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "verbs.h"

#define VB_RESOLVE_MS		5000
#define VB_CONNECTORS		16
/* Polling for the peer's RTR (iWARP): first look, longest step, and when
 * to stop waiting for it. */
#define VB_RTR_FIRST_NS		50000ull
#define VB_RTR_STEP_MAX_NS	2000000ull
#define VB_RTR_GIVEUP_NS	(10ull * 1000000000ull)
/* A graceful disconnect waits this long for its sends, and for the CM;
 * it looks at its sends again after an eighth of the time it has waited
 * so far, within these steps (close_step()). */
#define VB_CLOSE_WAIT_NS	(5ull * 1000000000ull)
#define VB_CLOSE_STEP_NS	200000ull
#define VB_CLOSE_STEP_MAX_NS	10000000ull
/* rdma_listen() backlog: rapt's counters decide; the kernel's only has
 * to hold the requests the engine has not read yet. */
#define VB_LISTEN_BACKLOG	256
#define VB_LISTEN_ANY_TRIES	16	/* EADDRINUSE on a port the CM picked */
/* How often undecided requests are checked for a requester that left. */
#define VB_REQ_CHECK_NS		100000000ull

/* An rdma_cm event, copied before it is acknowledged (after the ack its
 * id may be destroyed by another thread: contexts are read first). */
struct cm_ev {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	void *ctx;			/* id->context */
	void *listen_ctx;		/* listen_id->context */
	uint8_t ird, ord;		/* conn.initiator_depth/responder_res. */
	uint8_t pdata[VB_PDATA_MAX];
	uint8_t pdata_len;
};

/* ------------------------------------------------------------------ */
/* Events of an EP                                                     */
/* ------------------------------------------------------------------ */

static void ep_end(struct vb_ep *ep, uint32_t type, uint32_t reason,
		   int32_t status)
{
	struct rapt_prov_conn_event ce;

	memset(&ce, 0, sizeof(ce));
	ce.type = type;
	ce.reason = reason;
	ce.prov_status = status;
	vb_ep_shutdown(ep, &ce);
}

/* The outcome of an active connect that failed (runner). */
static void connect_fail(struct vb_ep *ep, uint32_t type, uint32_t reason,
			 int32_t status)
{
	pthread_mutex_lock(&ep->lock);
	if (ep->state != VB_EP_CONNECTING) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	pthread_mutex_unlock(&ep->lock);
	vb_dbg("connect of QP %u: %s (%d)", ep->qp->qp_num,
	       rapt_event_name(type), status);
	ep_end(ep, type, reason, status);
}

static void connect_rejected(struct vb_ep *ep, const struct cm_ev *c)
{
	struct rapt_prov_conn_event ce;

	pthread_mutex_lock(&ep->lock);
	if (ep->state != VB_EP_CONNECTING) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	pthread_mutex_unlock(&ep->lock);
	memset(&ce, 0, sizeof(ce));
	ce.type = RAPT_EV_PEER_REJECTED;
	ce.pdata = c->pdata_len ? c->pdata : NULL;
	ce.pdata_len = c->pdata_len;
	ce.reason = RAPT_REJECT_UNKNOWN;
	/* rapt's header says who rejected when there is one; without it the
	 * transport's reason does (IB), or, where rejects carry no reason
	 * (iWARP), one with private data is taken for the consumer's. */
	if (vb_tp->reject)
		ce.consumer_reject = vb_tp->reject(c->status, &ce.reason);
	else
		ce.consumer_reject = c->pdata_len != 0;
	if (!ce.consumer_reject)
		ce.type = RAPT_EV_NON_PEER_REJECTED;
	ce.prov_status = c->status;
	vb_ep_shutdown(ep, &ce);
}

/*
 * The RNR retries @ep asks its peer for (IB: the REQ's or REP's "RNR
 * retry count", which the peer's QP uses when it sends to us): without
 * end (7) for an EP with receives of its own, none for one on an SRQ,
 * whose empty SRQ must break the connection (vb_srq.c).
 */
static uint8_t vb_rnr_retry(const struct vb_ep *ep)
{
	return ep->srq ? 0 : 7;
}

static uint32_t min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* The active side's connection is up. */
static void active_up(struct vb_ep *ep, const struct cm_ev *c)
{
	size_t len = c->pdata_len;

	pthread_mutex_lock(&ep->lock);
	if (ep->state != VB_EP_CONNECTING) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	vb_ep_timer(ep, VB_TMR_NONE, 0);
	ep->kernel_up = true;
	/* rdma_cm reports the local IRD as initiator_depth and the local
	 * ORD as responder_resources on iWARP (cma_iw_handler). */
	ep->ird = min32(ep->attr.rdma_read_in, c->ird);
	ep->ord = min32(ep->attr.rdma_read_out, c->ord);
	pthread_mutex_unlock(&ep->lock);
	/* The QP to RTS and the handshake completed (IB: the RTU). */
	if (vb_tp->qp_connect && vb_tp->qp_connect(ep, ep->id, true)) {
		if (rdma_reject(ep->id, NULL, 0))
			vb_dbg("rdma_reject: %m");
		connect_fail(ep, RAPT_EV_UNREACHABLE, 0, -EPROTO);
		return;
	}
	/* Before ESTABLISHED: the RTR goes ahead of any consumer send. */
	if (vb_tp->active_up && !rapt_prov_ep_raw_pdata(ep->cep))
		vb_tp->active_up(ep, c->pdata, &len);
	pthread_mutex_lock(&ep->lock);
	if (ep->state == VB_EP_CONNECTING)
		vb_ep_report_up(ep, c->pdata, len);
	pthread_mutex_unlock(&ep->lock);
}

/*
 * The accepting EP's connection failed before it came up: the requester
 * rejected our reply (it gave the connect up meanwhile) or never answered
 * it (IB: no RTU and no message before the CM's REP retries ran out).
 */
static void accept_fail(struct vb_ep *ep, int32_t status)
{
	pthread_mutex_lock(&ep->lock);
	if (ep->state != VB_EP_ACCEPTING || ep->kernel_up) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	pthread_mutex_unlock(&ep->lock);
	vb_dbg("accept of QP %u failed (%d)", ep->qp->qp_num, status);
	ep_end(ep, RAPT_EV_ACCEPT_ERROR, 0, status);
}

/*
 * A reply to a connect that was given up (IB: the REQ is still with the
 * peer, whose consumer accepted it): refuse it, so that the peer's
 * accepting EP ends instead of waiting for our RTU.
 */
static void late_reply(struct vb_ep *ep)
{
	vb_dbg("QP %u: a reply to a connect given up: rejected",
	       ep->qp->qp_num);
	if (ep->id && rdma_reject(ep->id, NULL, 0))
		vb_dbg("rdma_reject: %m");
}

/* The passive side's connection is up as far as the kernel knows. */
static void passive_up(struct vb_ep *ep)
{
	pthread_mutex_lock(&ep->lock);
	if (ep->state != VB_EP_ACCEPTING) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	ep->kernel_up = true;
	if (!vb_tp->passive_up || vb_tp->passive_up(ep, NULL)) {
		vb_ep_report_up(ep, NULL, 0);
	} else {
		ep->timer_start_ns = rapt_now_ns();
		ep->timer_step_ns = VB_RTR_FIRST_NS;
		vb_ep_timer(ep, VB_TMR_RTR, VB_RTR_FIRST_NS);
	}
	pthread_mutex_unlock(&ep->lock);
}

/* Whether the device has put the EP's QP in the error state. */
static bool qp_failed(struct vb_ep *ep)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;

	return !ibv_query_qp(ep->qp, &qa, IBV_QP_STATE, &ia) &&
	       qa.qp_state == IBV_QPS_ERR;
}

/* rdma_cm says the connection ended. */
static void ep_disconnected(struct vb_ep *ep, int status)
{
	enum vb_ep_state st;
	bool kernel_up;

	vb_async_poll(ep->ia);
	pthread_mutex_lock(&ep->lock);
	st = ep->state;
	kernel_up = ep->kernel_up;
	if (vb_tp->qp_err_is_error && (st == VB_EP_UP || st == VB_EP_CLOSING) &&
	    !ep->teardown && qp_failed(ep)) {
		vb_dbg("QP %u: in the error state before the disconnect: BROKEN",
		       ep->qp->qp_num);
		ep->broken = true;
	}
	/* IB: the peer's DREQ overtook its RTU (or the RTU was lost): the
	 * peer was up, so this side was too (vb_transport.disc_proves_up). */
	if (st == VB_EP_ACCEPTING && !kernel_up && vb_tp->disc_proves_up) {
		vb_dbg("QP %u: a disconnect before the RTU: up, then down",
		       ep->qp->qp_num);
		kernel_up = ep->kernel_up = true;
	}
	/* The kernel said ESTABLISHED but the RTR never came (the peer
	 * closed at once): still ESTABLISHED, then DISCONNECTED. */
	if (st == VB_EP_ACCEPTING && kernel_up)
		vb_ep_report_up(ep, NULL, 0);
	pthread_mutex_unlock(&ep->lock);
	switch (st) {
	case VB_EP_CONNECTING:
		connect_fail(ep, RAPT_EV_UNREACHABLE, 0, status);
		break;
	case VB_EP_ACCEPTING:
		ep_end(ep, kernel_up ? RAPT_EV_DISCONNECTED :
		       RAPT_EV_ACCEPT_ERROR, 0, status);
		break;
	case VB_EP_UP:
	case VB_EP_CLOSING:
		ep_end(ep, RAPT_EV_DISCONNECTED, 0, status);
		break;
	default:
		break;
	}
	if (ep->id)
		rdma_disconnect(ep->id);
}

static void connector_queue(struct vb_ep *ep);
static int run_connect(struct vb_ep *ep);
static void connect_done(void *arg);

/* The route is known: connect.  An iWARP rdma_connect() may block for as
 * long as the kernel's TCP connect lasts: it runs on a connector thread.
 * Elsewhere (IB) it only sends the request: it runs here, on the runner,
 * without two thread switches per connection. */
static void route_resolved(struct vb_ep *ep)
{
	const char *dev;

	pthread_mutex_lock(&ep->lock);
	if (ep->state != VB_EP_CONNECTING) {
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	dev = ep->id->verbs ? ibv_get_device_name(ep->id->verbs->device) :
	      "(none)";
	if (strcmp(dev, ep->ia->dev) || ep->id->port_num != ep->ia->port) {
		pthread_mutex_unlock(&ep->lock);
		vb_info("the route to the peer leaves through %s port %u, not %s port %u",
			dev, ep->id->port_num, ep->ia->dev, ep->ia->port);
		connect_fail(ep, RAPT_EV_UNREACHABLE, 0, -ENETUNREACH);
		return;
	}
	ep->in_connector = true;
	pthread_mutex_unlock(&ep->lock);
	if (vb_tp->tcp_wire) {
		connector_queue(ep);
		return;
	}
	ep->connect_err = run_connect(ep);
	connect_done(ep);
}

static void ep_event(struct vb_ep *ep, const struct cm_ev *c)
{
	enum vb_ep_state st;

	switch (c->type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(ep->id, VB_RESOLVE_MS))
			connect_fail(ep, RAPT_EV_UNREACHABLE, 0, -errno);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		route_resolved(ep);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		accept_fail(ep, c->status);
		/* fall through */
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		connect_fail(ep, c->status == -ETIMEDOUT &&
			     c->type == RDMA_CM_EVENT_UNREACHABLE ?
			     RAPT_EV_TIMED_OUT : RAPT_EV_UNREACHABLE, 0,
			     c->status);
		break;
	case RDMA_CM_EVENT_REJECTED:
		accept_fail(ep, c->status);
		connect_rejected(ep, c);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		pthread_mutex_lock(&ep->lock);
		st = ep->state;
		pthread_mutex_unlock(&ep->lock);
		if (st == VB_EP_ACCEPTING)
			passive_up(ep);
		else if (st == VB_EP_CONNECTING)
			active_up(ep, c);
		else if (c->type == RDMA_CM_EVENT_CONNECT_RESPONSE)
			late_reply(ep);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		ep_disconnected(ep, c->status);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		rapt_prov_async_event(ep->ia->cia,
				      RAPT_EV_ASYNC_IA_CATASTROPHIC, NULL,
				      c->status);
		pthread_mutex_lock(&ep->lock);
		ep->broken = true;
		pthread_mutex_unlock(&ep->lock);
		ep_disconnected(ep, c->status);
		break;
	default:
		vb_dbg("QP %u: %s (ignored)", ep->qp->qp_num,
		       rdma_event_str(c->type));
		break;
	}
}

/* ------------------------------------------------------------------ */
/* The connector                                                       */
/* ------------------------------------------------------------------ */

/* How many times a connect starts again from another local port. */
#define VB_CONNECT_TRIES 4

/*
 * rdma_cm picks the local port without asking TCP, and siw binds its
 * socket to it: a port whose earlier connection to the same peer is in
 * TIME_WAIT fails the connect with EADDRINUSE.  Start again with a new
 * id, which gets another port (runner, the EP CONNECTING).
 */
static bool connect_again(struct vb_ep *ep, int err)
{
	struct sockaddr_storage src = ep->ia->addr;
	struct rdma_cm_id *old = ep->id;

	if ((err != EADDRINUSE && err != EADDRNOTAVAIL) ||
	    ep->connect_tries >= VB_CONNECT_TRIES)
		return false;
	if (rdma_create_id(ep->ia->cmch, &ep->id, ep, RDMA_PS_TCP)) {
		ep->id = old;
		return false;
	}
	ep->connect_tries++;
	vb_dbg("QP %u: local port %u taken (%s): connecting from another",
	       ep->qp->qp_num,
	       rapt_sockaddr_port(rdma_get_local_addr(old)), strerror(err));
	rdma_destroy_id(old);
	rapt_sockaddr_set_port((struct sockaddr *)&src, 0);
	if (rdma_resolve_addr(ep->id, (struct sockaddr *)&src,
			      (struct sockaddr *)&ep->remote, VB_RESOLVE_MS))
		return false;	/* the caller reports it */
	return true;
}

/* What rdma_connect() returned (ep->connect_err), on the runner.  It
 * clears in_connector, which ep_free waits for: the EP lives until this
 * has run. */
static void connect_done(void *arg)
{
	struct vb_ep *ep = arg;
	int err = ep->connect_err;
	bool freeing, again, hangup;

	pthread_mutex_lock(&ep->lock);
	ep->in_connector = false;
	freeing = ep->freeing;
	hangup = ep->hangup_later;
	ep->hangup_later = false;
	pthread_cond_broadcast(&ep->conn_cv);
	pthread_mutex_unlock(&ep->lock);
	/* The connection broke before rdma_connect() returned. */
	if (hangup && !freeing && !err) {
		vb_dbg("QP %u: the hang-up held back for rdma_connect()",
		       ep->qp->qp_num);
		vb_cm_hangup(ep);
	}
	if (freeing || !err)
		return;		/* ep_free waits; or ESTABLISHED/REJECTED */
	pthread_mutex_lock(&ep->lock);
	again = ep->state == VB_EP_CONNECTING;
	pthread_mutex_unlock(&ep->lock);
	/* On the runner: nothing else touches the id meanwhile. */
	if (again && connect_again(ep, err))
		return;
	switch (err) {
	case ECONNREFUSED:
		connect_fail(ep, RAPT_EV_NON_PEER_REJECTED,
			     RAPT_REJECT_NO_LISTENER, -err);
		break;
	case ETIMEDOUT:
		connect_fail(ep, RAPT_EV_TIMED_OUT, 0, -err);
		break;
	default:
		connect_fail(ep, RAPT_EV_UNREACHABLE, 0, -err);
		break;
	}
}

static int run_connect(struct vb_ep *ep)
{
	struct rdma_conn_param p;

	memset(&p, 0, sizeof(p));
	p.private_data = ep->pdata_len ? ep->pdata : NULL;
	p.private_data_len = ep->pdata_len;
	p.responder_resources = (uint8_t)min32(ep->attr.rdma_read_in, 255);
	p.initiator_depth = (uint8_t)min32(ep->attr.rdma_read_out, 255);
	p.flow_control = 1;
	p.retry_count = 7;
	p.rnr_retry_count = vb_rnr_retry(ep);
	p.qp_num = ep->qp->qp_num;
	if (rdma_connect(ep->id, &p))
		return errno ? errno : EIO;
	return 0;
}

static void *connector_main(void *arg)
{
	struct vb_ia *ia = arg;
	struct vb_connector *cn = &ia->conn;
	struct vb_ep *ep;

	pthread_mutex_lock(&cn->lock);
	for (;;) {
		while (!cn->head && !cn->stop) {
			cn->idle++;
			pthread_cond_wait(&cn->cond, &cn->lock);
			cn->idle--;
		}
		if (!cn->head)
			break;
		ep = cn->head;
		cn->head = ep->conn_next;
		if (!cn->head)
			cn->tail = NULL;
		pthread_mutex_unlock(&cn->lock);
		ep->connect_err = run_connect(ep);
		/* Handed to the runner, not waited for: the run lock may be
		 * a busy-polling consumer's, which takes it at each poll,
		 * and the next connect should not queue behind that. */
		if (rapt_engine_defer(ia->eng, connect_done, ep))
			rapt_engine_call(ia->eng, connect_done, ep);
		pthread_mutex_lock(&cn->lock);
	}
	if (--cn->threads == 0)
		pthread_cond_broadcast(&cn->gone);
	pthread_mutex_unlock(&cn->lock);
	return NULL;
}

/* The thread runs no application signal handler (rapt_thread_create). */
static int connector_spawn(struct vb_ia *ia)
{
	pthread_attr_t a;
	pthread_t t;
	int err;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	err = rapt_thread_create(&t, &a, connector_main, ia);
	pthread_attr_destroy(&a);
	return err;
}

static void connector_queue(struct vb_ep *ep)
{
	struct vb_connector *cn = &ep->ia->conn;
	int err = 0;

	pthread_mutex_lock(&cn->lock);
	ep->conn_next = NULL;
	if (cn->tail)
		cn->tail->conn_next = ep;
	else
		cn->head = ep;
	cn->tail = ep;
	/* Made with the EPs; only a failure then leaves it to here. */
	if (!cn->idle && cn->threads < VB_CONNECTORS) {
		err = connector_spawn(ep->ia);
		if (!err)
			cn->threads++;
	}
	if (cn->idle || !err)
		pthread_cond_signal(&cn->cond);
	pthread_mutex_unlock(&cn->lock);
	if (err && !cn->threads)
		vb_err("cannot start a connector thread: %s", strerror(err));
}

/**
 * vb_cm_ep_added - an EP of @ia was created: one connector thread more
 * @ia: the IA
 *
 * On a transport whose connects run on the connector (iWARP), the IA
 * keeps one connector thread per EP, up to VB_CONNECTORS, made here, on
 * the thread that creates the EP.  A thread that cannot be made now is
 * made by the connect that needs it (connector_queue).
 */
void vb_cm_ep_added(struct vb_ia *ia)
{
	struct vb_connector *cn = &ia->conn;
	int err = 0;

	if (!vb_tp->tcp_wire)
		return;
	pthread_mutex_lock(&cn->lock);
	cn->eps++;
	if (!cn->stop && cn->threads < cn->eps &&
	    cn->threads < VB_CONNECTORS) {
		err = connector_spawn(ia);
		if (!err)
			cn->threads++;
	}
	pthread_mutex_unlock(&cn->lock);
	if (err)
		vb_dbg("%s: no connector thread ahead of a connect: %s",
		       ia->dev, strerror(err));
}

/**
 * vb_cm_ep_removed - an EP of @ia is gone (its threads stay)
 * @ia: the IA
 */
void vb_cm_ep_removed(struct vb_ia *ia)
{
	struct vb_connector *cn = &ia->conn;

	if (!vb_tp->tcp_wire)
		return;
	pthread_mutex_lock(&cn->lock);
	cn->eps--;
	pthread_mutex_unlock(&cn->lock);
}

/* ------------------------------------------------------------------ */
/* Timers                                                              */
/* ------------------------------------------------------------------ */

void vb_ep_timer(struct vb_ep *ep, enum vb_timer_kind kind,
		 uint64_t delay_ns)
{
	struct rapt_engine *eng = ep->ia->eng;

	ep->timer_kind = kind;
	if (kind == VB_TMR_NONE)
		rapt_timer_cancel(eng, &ep->timer);
	else
		rapt_timer_arm(eng, &ep->timer, delay_ns);
}

static void timer_rtr(struct vb_ep *ep)
{
	uint64_t now = rapt_now_ns();

	if (ep->state != VB_EP_ACCEPTING)
		return;
	if (vb_tp->passive_up(ep, NULL)) {
		vb_ep_report_up(ep, NULL, 0);
		return;
	}
	if (now - ep->timer_start_ns > VB_RTR_GIVEUP_NS) {
		vb_warn("QP %u: no RTR from the peer in %llu s: ESTABLISHED without it",
			ep->qp->qp_num, VB_RTR_GIVEUP_NS / 1000000000ull);
		vb_ep_report_up(ep, NULL, 0);
		return;
	}
	ep->timer_step_ns *= 2;
	if (ep->timer_step_ns > VB_RTR_STEP_MAX_NS)
		ep->timer_step_ns = VB_RTR_STEP_MAX_NS;
	vb_ep_timer(ep, VB_TMR_RTR, ep->timer_step_ns);
}

/*
 * The next look of a graceful close at its sends: an eighth of the time
 * it has waited so far, VB_CLOSE_STEP_NS at least and VB_CLOSE_STEP_MAX_NS
 * at most.  Sends that finish soon are noticed within 200 us; sends stuck
 * on their peer (RNR retried for ever) wake the engine about 550 times in
 * VB_CLOSE_WAIT_NS, not 25,000, and a close learns of its sends at most
 * 12.5 % of its wait late.
 */
static uint64_t close_step(const struct vb_ep *ep, uint64_t now)
{
	uint64_t step = (now - ep->timer_start_ns) / 8;

	if (step < VB_CLOSE_STEP_NS)
		return VB_CLOSE_STEP_NS;
	return step > VB_CLOSE_STEP_MAX_NS ? VB_CLOSE_STEP_MAX_NS : step;
}

/* A graceful disconnect waits for its sends (polling the send CQ itself:
 * the consumer may not), then asks rdma_cm to close; then for the CM. */
static void timer_close(struct vb_ep *ep)
{
	uint64_t now;
	bool done, late;

	if (ep->state != VB_EP_CLOSING)
		return;
	now = rapt_now_ns();
	late = now - ep->timer_start_ns > VB_CLOSE_WAIT_NS;
	if (ep->disc_graceful) {
		pthread_mutex_unlock(&ep->lock);
		vb_ep_sends_mark(ep);
		if (ep->req_evd->cq)
			vb_cq_poll(ep->req_evd);
		pthread_mutex_lock(&ep->lock);
		if (ep->state != VB_EP_CLOSING)
			return;
		done = vb_ep_sends_done(ep);
		if (done || late) {
			ep->disc_graceful = false;
			ep->timer_start_ns = rapt_now_ns();
			if (rdma_disconnect(ep->id))
				vb_dbg("rdma_disconnect: %m");
			vb_ep_timer(ep, VB_TMR_DRAIN, VB_CLOSE_WAIT_NS);
			return;
		}
		vb_ep_timer(ep, VB_TMR_DRAIN, close_step(ep, now));
		return;
	}
	/* rdma_cm never said DISCONNECTED: end it here. */
	pthread_mutex_unlock(&ep->lock);
	ep_end(ep, RAPT_EV_DISCONNECTED, 0, -ETIMEDOUT);
	pthread_mutex_lock(&ep->lock);
}

void vb_ep_timer_fire(struct rapt_timer *t)
{
	struct vb_ep *ep = rapt_container_of(t, struct vb_ep, timer);
	enum vb_timer_kind kind;

	if (rapt_timer_armed(ep->ia->eng, t))
		return;		/* re-armed meanwhile */
	pthread_mutex_lock(&ep->lock);
	kind = ep->timer_kind;
	ep->timer_kind = VB_TMR_NONE;
	switch (kind) {
	case VB_TMR_CONNECT:
		pthread_mutex_unlock(&ep->lock);
		connect_fail(ep, RAPT_EV_TIMED_OUT, 0, -ETIMEDOUT);
		return;
	case VB_TMR_RTR:
		timer_rtr(ep);
		break;
	case VB_TMR_DRAIN:
		timer_close(ep);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&ep->lock);
}

/* ------------------------------------------------------------------ */
/* Active side                                                         */
/* ------------------------------------------------------------------ */

struct connect_args {
	struct vb_ep *ep;
	int ret;
};

static bool net_error(int err)
{
	return err == ENETUNREACH || err == EHOSTUNREACH ||
	       err == EADDRNOTAVAIL || err == ENODEV || err == ENETDOWN;
}

static void unreachable_deferred(void *arg)
{
	connect_fail(arg, RAPT_EV_UNREACHABLE, 0, -ENETUNREACH);
}

static void connect_call(void *arg)
{
	struct connect_args *a = arg;
	struct vb_ep *ep = a->ep;
	struct sockaddr_storage src = ep->ia->addr;
	int err;

	if (rdma_create_id(ep->ia->cmch, &ep->id, ep, RDMA_PS_TCP)) {
		err = errno;
		rapt_prov_set_error("%s: rdma_create_id: %s", vb_tp->name,
				    strerror(err));
		a->ret = rapt_errno_status(err);
		return;
	}
	rapt_sockaddr_set_port((struct sockaddr *)&src, 0);
	pthread_mutex_lock(&ep->lock);
	ep->state = VB_EP_CONNECTING;
	ep->connect_tries = 0;
	pthread_mutex_unlock(&ep->lock);
	if (rdma_resolve_addr(ep->id, (struct sockaddr *)&src,
			      (struct sockaddr *)&ep->remote,
			      VB_RESOLVE_MS)) {
		err = errno;
		if (!net_error(err)) {
			rapt_prov_set_error("%s: rdma_resolve_addr: %s",
					    vb_tp->name, strerror(err));
			rdma_destroy_id(ep->id);
			ep->id = NULL;
			ep->state = VB_EP_IDLE;
			a->ret = rapt_errno_status(err);
			return;
		}
		/* No route: that is the connect's outcome, an event. */
		rapt_engine_defer(ep->ia->eng, unreachable_deferred, ep);
	}
	if (ep->timeout_us != RAPT_TIMEOUT_INFINITE) {
		pthread_mutex_lock(&ep->lock);
		vb_ep_timer(ep, VB_TMR_CONNECT,
			    (uint64_t)ep->timeout_us * 1000ull);
		pthread_mutex_unlock(&ep->lock);
	}
	a->ret = 0;
}

int vb_ep_connect(void *pep, const struct sockaddr *remote,
		  uint64_t service_id, const void *pdata, size_t pdata_len,
		  int64_t timeout_us)
{
	struct vb_ep *ep = pep;
	struct connect_args a = { .ep = ep };
	size_t len = pdata_len;

	if (remote->sa_family != AF_INET && remote->sa_family != AF_INET6) {
		rapt_prov_set_error("%s: address family %d: only IPv4 and IPv6",
				    vb_tp->name, remote->sa_family);
		return RAPT_EINVAL;
	}
	if (ep->id) {
		rapt_prov_set_error("%s: an EP connects once", vb_tp->name);
		return RAPT_ESTATE;
	}
	memset(&ep->remote, 0, sizeof(ep->remote));
	memcpy(&ep->remote, remote, rapt_sockaddr_len(remote));
	rapt_sockaddr_set_port((struct sockaddr *)&ep->remote, (uint16_t)service_id);
	if (len)
		memcpy(ep->pdata, pdata, len);
	if (vb_tp->connect_pdata && !rapt_prov_ep_raw_pdata(ep->cep))
		len = vb_tp->connect_pdata(ep, ep->pdata, len);
	ep->pdata_len = (uint8_t)len;
	ep->timeout_us = timeout_us;
	rapt_engine_call(ep->ia->eng, connect_call, &a);
	return a.ret;
}

/* ------------------------------------------------------------------ */
/* Disconnect                                                          */
/* ------------------------------------------------------------------ */

struct disc_args {
	struct vb_ep *ep;
	uint32_t flags;
};

static void disc_call(void *arg)
{
	struct disc_args *a = arg;
	struct vb_ep *ep = a->ep;
	bool abrupt = a->flags & RAPT_CLOSE_ABRUPT;

	pthread_mutex_lock(&ep->lock);
	switch (ep->state) {
	case VB_EP_UP:
		if (abrupt)
			break;
		ep->state = VB_EP_CLOSING;
		ep->disc_graceful = true;
		ep->timer_start_ns = rapt_now_ns();
		timer_close(ep);
		pthread_mutex_unlock(&ep->lock);
		return;
	case VB_EP_CLOSING:
		if (!abrupt) {
			pthread_mutex_unlock(&ep->lock);
			return;
		}
		break;
	case VB_EP_CONNECTING:
	case VB_EP_ACCEPTING:
		break;
	default:
		pthread_mutex_unlock(&ep->lock);
		return;
	}
	pthread_mutex_unlock(&ep->lock);
	/* Abrupt, or a connect or accept cancelled: flushes, then
	 * DISCONNECTED; the QP in the error state resets the connection. */
	ep_end(ep, RAPT_EV_DISCONNECTED, 0, 0);
	vb_cm_hangup(ep);
}

/**
 * vb_cm_hangup - tell the peer the connection is over (runner)
 * @ep: the EP, torn down
 *
 * iWARP's QP in the error state resets the TCP connection by itself; an
 * IB QP says nothing on the wire, so the peer learns only from the CM's
 * DREQ (or from its own traffic failing).
 */
void vb_cm_hangup(struct vb_ep *ep)
{
	bool freeing, later;

	pthread_mutex_lock(&ep->lock);
	freeing = ep->freeing;
	/* rdma_connect() has not returned on its thread yet (its reply
	 * can be handled first): connect_done() hangs up. */
	later = ep->hangup_later = ep->in_connector;
	pthread_mutex_unlock(&ep->lock);
	if (!freeing && ep->id && !later && rdma_disconnect(ep->id))
		vb_dbg("QP %u: rdma_disconnect: %m", ep->qp->qp_num);
}

int vb_ep_disconnect(void *pep, uint32_t flags, const void *pdata,
		     size_t pdata_len)
{
	struct vb_ep *ep = pep;
	struct disc_args a = { .ep = ep, .flags = flags };

	rapt_engine_call(ep->ia->eng, disc_call, &a);
	return 0;
}

/*
 * ep_free, after its engine part (no event of this EP is dispatched any
 * more: its id's context is NULL): wait for an rdma_connect() still
 * running (siw connects synchronously; for a peer that never answers,
 * as long as the kernel's SYN retries), then destroy the id.  Not on the
 * engine: destroying an iWARP id whose connect awaits its MPA reply waits
 * for the reply or siw's MPA timeout.
 */
void vb_cm_ep_release(struct vb_ep *ep)
{
	pthread_mutex_lock(&ep->lock);
	while (ep->in_connector)
		pthread_cond_wait(&ep->conn_cv, &ep->lock);
	pthread_mutex_unlock(&ep->lock);
	if (ep->id) {
		rdma_destroy_id(ep->id);
		ep->id = NULL;
	}
}

/* ------------------------------------------------------------------ */
/* Passive side                                                        */
/* ------------------------------------------------------------------ */

static void req_free(struct vb_req *req, bool destroy_id)
{
	rapt_list_del(&req->node);
	if (destroy_id && req->id)
		rdma_destroy_id(req->id);
	free(req);
}

/* Whether the requester of @req closed its TCP connection. */
static bool req_departed(const struct vb_req *req)
{
	char l[RAPT_SOCKADDR_STRLEN], r[RAPT_SOCKADDR_STRLEN];
	int st;

	if (!req->ia->tcp_diag)
		return false;
	st = vb_tcp_state(req->ia->diag_fd,
			  (const struct sockaddr *)&req->local,
			  (const struct sockaddr *)&req->remote,
			  req->ia->ifindex);
	vb_dbg("request %s <- %s: TCP state %d",
	       rapt_sockaddr_str((const struct sockaddr *)&req->local, l,
				 sizeof(l)),
	       rapt_sockaddr_str((const struct sockaddr *)&req->remote, r,
				 sizeof(r)), st);
	return st == -1 || (st >= 0 && st != TCP_ESTABLISHED);
}

/*
 * siw says nothing when the requester of an undecided request goes away;
 * the engine looks every VB_REQ_CHECK_NS while requests wait, and
 * withdraws those whose TCP connection closed.  A request younger than
 * that is left for the next look: a burst of requests that the consumer
 * accepts one after another (dtestcm's thirty) would otherwise cost a
 * question each to the kernel, under the run lock the consumer's accepts
 * wait for, while every accept asks about its own request anyway.
 */
static void req_timer_fire(struct rapt_timer *t)
{
	struct vb_ia *ia = rapt_container_of(t, struct vb_ia, req_timer);
	uint64_t now = rapt_now_ns();
	struct rapt_list *pos, *tmp;
	struct vb_req *req;

	if (rapt_timer_armed(ia->eng, t))
		return;
	rapt_list_for_each_safe(pos, tmp, &ia->reqs) {
		req = rapt_container_of(pos, struct vb_req, node);
		if (now - req->arrived_ns < VB_REQ_CHECK_NS ||
		    !req_departed(req))
			continue;
		vb_dbg("%s: the requester of a pending request left",
		       ia->dev);
		rapt_prov_cr_cancel(req->ccr);
		req_free(req, true);
	}
	if (!rapt_list_empty(&ia->reqs))
		rapt_timer_arm(ia->eng, t, VB_REQ_CHECK_NS);
}

static void on_request(struct vb_ia *ia, const struct cm_ev *c)
{
	struct vb_psp *psp = c->listen_ctx;
	struct rapt_prov_request r;
	struct rapt_prov_verdict v;
	struct rapt_pdata_view view;
	struct sockaddr *sa;
	struct vb_req *req;

	req = calloc(1, sizeof(*req));
	if (!req) {
		vb_err("out of memory for a connection request: rejected");
		rdma_reject(c->id, NULL, 0);
		rdma_destroy_id(c->id);
		return;
	}
	req->kind = VB_CM_REQ;
	req->arrived_ns = rapt_now_ns();
	req->ia = ia;
	req->psp = psp;
	req->id = c->id;
	req->id->context = req;
	memcpy(req->pdata, c->pdata, c->pdata_len);
	req->pdata_len = c->pdata_len;
	/* What the requester offers: its IRD, and the ORD it asks for. */
	req->ird = c->ird;
	req->ord = c->ord;
	rapt_prov_pdata_parse(req->pdata, req->pdata_len, &view);
	req->foreign = view.foreign || !req->pdata_len;
	if (vb_tp->request)
		vb_tp->request(req);

	memset(&r, 0, sizeof(r));
	r.pdata = req->pdata_len ? req->pdata : NULL;
	r.pdata_len = req->pdata_len;
	r.rdma_read_in = req->ird;
	r.rdma_read_out = req->ord;
	sa = rdma_get_peer_addr(req->id);
	memcpy(&req->remote, sa, rapt_sockaddr_len(sa));
	sa = rdma_get_local_addr(req->id);
	memcpy(&req->local, sa, rapt_sockaddr_len(sa));
	r.remote_addr = req->remote;
	r.local_addr = req->local;
	rapt_list_init(&req->node);
	if (rapt_prov_cr_arrive(psp->cpsp, req, &r, &req->ccr, &v)) {
		if (rdma_reject(req->id, v.pdata, (uint8_t)v.pdata_len))
			vb_dbg("rdma_reject: %m");
		req_free(req, true);
		return;
	}
	rapt_list_add_tail(&ia->reqs, &req->node);
	if (ia->tcp_diag && !rapt_timer_armed(ia->eng, &ia->req_timer))
		rapt_timer_arm(ia->eng, &ia->req_timer, VB_REQ_CHECK_NS);
}

/* The requester of an undecided request went away. */
static void req_event(struct vb_req *req, const struct cm_ev *c)
{
	vb_dbg("request: %s (%d): the requester went away",
	       rdma_event_str(c->type), c->status);
	rapt_prov_cr_cancel(req->ccr);
	req_free(req, true);
}

struct accept_args {
	struct rapt_core_cr *ccr;
	struct vb_ep *ep;
	const void *pdata;
	size_t len;
	int ret;
};

/* The request of a CR, or NULL (and the error set) once it is cancelled;
 * runs on the engine's runner, where cancels run too. */
static struct vb_req *cr_req(struct rapt_core_cr *ccr)
{
	struct vb_req *req = rapt_prov_cr_request(ccr);

	if (!req)
		rapt_prov_set_error("%s: the requester went away",
				    vb_tp->name);
	return req;
}

static void accept_call(void *arg)
{
	struct accept_args *a = arg;
	struct vb_req *req = cr_req(a->ccr);
	struct vb_ep *ep = a->ep;
	uint8_t buf[VB_PDATA_MAX];
	struct rdma_conn_param p;
	size_t len = a->len;
	int err;

	if (!req) {
		a->ret = RAPT_ENOTCONN;
		return;
	}
	if (ep->id || ep->state != VB_EP_IDLE) {
		rapt_prov_set_error("%s: the EP has been connected before",
				    vb_tp->name);
		a->ret = RAPT_ESTATE;
		return;
	}
	if (req_departed(req)) {
		/* Accepting it could even crash siw's kernel side. */
		rapt_prov_set_error("%s: the requester went away",
				    vb_tp->name);
		rapt_prov_cr_cancel(a->ccr);
		req_free(req, true);
		a->ret = RAPT_ENOTCONN;
		return;
	}
	if (len)
		memcpy(buf, a->pdata, len);
	ep->peer_rtr = 0;
	if (!req->foreign && !rapt_prov_ep_raw_pdata(ep->cep) &&
	    vb_tp->accept_pdata)
		len = vb_tp->accept_pdata(ep, req, buf, len);
	/* Negotiated: reads the peer may issue to us, and we to it. */
	ep->ird = min32(ep->attr.rdma_read_in, req->ord);
	ep->ord = min32(ep->attr.rdma_read_out, req->ird);
	memset(&p, 0, sizeof(p));
	p.private_data = len ? buf : NULL;
	p.private_data_len = (uint8_t)len;
	p.responder_resources = (uint8_t)min32(ep->attr.rdma_read_in, 255);
	p.initiator_depth = (uint8_t)ep->ord;
	p.flow_control = 1;
	p.rnr_retry_count = vb_rnr_retry(ep);
	p.qp_num = ep->qp->qp_num;
	/* The QP to RTR and RTS before the reply goes out (IB).  The
	 * request's id has no attributes once the requester gave up
	 * (RAPT_ENOTCONN) and its REJ is on the way. */
	err = vb_tp->qp_connect ? vb_tp->qp_connect(ep, req->id, false) : 0;
	if (err == RAPT_ENOTCONN) {
		rapt_prov_cr_cancel(a->ccr);
		req_free(req, true);
	}
	if (err) {
		a->ret = err;
		return;
	}
	pthread_mutex_lock(&ep->lock);
	ep->id = req->id;
	ep->state = VB_EP_ACCEPTING;
	pthread_mutex_unlock(&ep->lock);
	req->id->context = ep;
	if (rdma_accept(req->id, &p)) {
		err = errno;
		req->id->context = req;
		pthread_mutex_lock(&ep->lock);
		ep->id = NULL;
		ep->state = VB_EP_IDLE;
		pthread_mutex_unlock(&ep->lock);
		rapt_prov_set_error("%s: rdma_accept: %s", vb_tp->name,
				    strerror(err));
		a->ret = rapt_errno_status(err);
		if (err == ECONNRESET || err == ENOTCONN ||
		    err == ECONNABORTED) {
			/* The requester left before we knew (siw says nothing
			 * of a request whose TCP connection closes). */
			rapt_prov_cr_cancel(a->ccr);
			req_free(req, true);
			a->ret = RAPT_ENOTCONN;
		}
		return;
	}
	req_free(req, false);
	a->ret = 0;
}

int vb_cr_accept(void *ppsp, struct rapt_core_cr *ccr, void *pep,
		 const void *pdata, size_t pdata_len)
{
	struct vb_psp *psp = ppsp;
	struct accept_args a = {
		.ccr = ccr, .ep = pep, .pdata = pdata, .len = pdata_len,
	};

	rapt_engine_call(psp->ia->eng, accept_call, &a);
	return a.ret;
}

struct reject_args {
	struct rapt_core_cr *ccr;
	const void *pdata;
	size_t len;
	int ret;
};

static void reject_call(void *arg)
{
	struct reject_args *a = arg;
	struct vb_req *req = cr_req(a->ccr);

	if (!req) {
		a->ret = RAPT_ENOTCONN;
		return;
	}
	if (rdma_reject(req->id, a->pdata, (uint8_t)a->len))
		vb_dbg("rdma_reject: %m");
	req_free(req, true);
	a->ret = 0;
}

int vb_cr_reject(void *ppsp, struct rapt_core_cr *ccr, const void *pdata,
		 size_t pdata_len)
{
	struct vb_psp *psp = ppsp;
	struct reject_args a = { .ccr = ccr, .pdata = pdata, .len = pdata_len };

	rapt_engine_call(psp->ia->eng, reject_call, &a);
	return a.ret;
}

struct psp_args {
	struct vb_psp *psp;
	uint64_t sid;
	const struct rapt_psp_attr *attr;
	uint64_t bound;
	int ret;
};

/*
 * Listen on @port (0: one the CM picks).  Return: 0 or an errno value.
 * On failure psp->id is destroyed and the error message set.
 */
static int psp_listen(struct vb_psp *psp, struct sockaddr_storage *ss,
		      uint16_t port)
{
	int err;

	rapt_sockaddr_set_port((struct sockaddr *)ss, port);
	if (rdma_create_id(psp->ia->cmch, &psp->id, psp, RDMA_PS_TCP)) {
		err = errno;
		rapt_prov_set_error("%s: rdma_create_id: %s", vb_tp->name,
				    strerror(err));
		return err;
	}
	if (rdma_bind_addr(psp->id, (struct sockaddr *)ss) ||
	    rdma_listen(psp->id, VB_LISTEN_BACKLOG)) {
		err = errno;
		rapt_prov_set_error("%s: listening on port %u: %s",
				    vb_tp->name,
				    rapt_sockaddr_port((struct sockaddr *)ss),
				    strerror(err));
		rdma_destroy_id(psp->id);
		return err;
	}
	return 0;
}

static void psp_call(void *arg)
{
	struct psp_args *a = arg;
	struct vb_psp *psp = a->psp;
	struct sockaddr_storage ss = psp->ia->addr;
	unsigned int tries = 0;
	int err;

	if (a->attr && a->attr->bind_addr.ss_family != AF_UNSPEC)
		ss = a->attr->bind_addr;
	if (a->sid != RAPT_SERVICE_ID_ANY) {
		err = psp_listen(psp, &ss, (uint16_t)a->sid);
	} else {
		/* The CM picks a port free among its own IDs, but an iWARP
		 * device (siw) then listens on a kernel TCP socket, and the
		 * host's TCP may hold that port (another program's
		 * connection): EADDRINUSE, which "any port" must never
		 * answer.  The next try gets another port. */
		do
			err = psp_listen(psp, &ss, 0);
		while (err == EADDRINUSE && ++tries < VB_LISTEN_ANY_TRIES);
	}
	if (err) {
		a->ret = rapt_errno_status(err);
		return;
	}
	a->bound = ntohs(rdma_get_src_port(psp->id));
	a->ret = 0;
}

int vb_psp_create(void *pia, struct rapt_core_psp *cpsp,
		  uint64_t service_id, const struct rapt_psp_attr *attr,
		  void *cr_pevd, uint64_t *bound_id, void **ppsp)
{
	struct vb_ia *ia = pia;
	struct vb_psp *psp = calloc(1, sizeof(*psp));
	struct psp_args a = { .psp = psp, .sid = service_id, .attr = attr };

	if (!psp)
		return RAPT_ENOMEM;
	psp->kind = VB_CM_PSP;
	psp->ia = ia;
	psp->cpsp = cpsp;
	rapt_engine_call(ia->eng, psp_call, &a);
	if (a.ret) {
		free(psp);
		return a.ret;
	}
	*bound_id = a.bound;
	*ppsp = psp;
	return 0;
}

static void psp_free_call(void *arg)
{
	struct vb_psp *psp = arg;

	rdma_destroy_id(psp->id);
}

int vb_psp_free(void *ppsp)
{
	struct vb_psp *psp = ppsp;

	rapt_engine_call(psp->ia->eng, psp_free_call, psp);
	free(psp);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The event channel                                                   */
/* ------------------------------------------------------------------ */

static void cm_copy(const struct rdma_cm_event *e, struct cm_ev *c)
{
	size_t n = 0;

	memset(c, 0, offsetof(struct cm_ev, pdata));
	c->type = e->event;
	c->status = e->status;
	c->id = e->id;
	c->ctx = e->id ? e->id->context : NULL;
	c->listen_ctx = e->listen_id ? e->listen_id->context : NULL;
	if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST ||
	    e->event == RDMA_CM_EVENT_ESTABLISHED ||
	    e->event == RDMA_CM_EVENT_CONNECT_RESPONSE ||
	    e->event == RDMA_CM_EVENT_REJECTED) {
		c->ird = e->param.conn.initiator_depth;
		c->ord = e->param.conn.responder_resources;
		n = e->param.conn.private_data_len;
		if (n > VB_PDATA_MAX)
			n = VB_PDATA_MAX;
		if (n && e->param.conn.private_data)
			memcpy(c->pdata, e->param.conn.private_data, n);
		else
			n = 0;
	}
	c->pdata_len = (uint8_t)n;
}

static void cm_dispatch(struct vb_ia *ia, const struct cm_ev *c)
{
	void *ctx;

	if (c->type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		on_request(ia, c);
		return;
	}
	ctx = c->ctx;
	if (!ctx)
		return;
	switch (*(enum vb_cm_kind *)ctx) {
	case VB_CM_EP:
		ep_event(ctx, c);
		break;
	case VB_CM_REQ:
		req_event(ctx, c);
		break;
	case VB_CM_PSP:
		if (c->type == RDMA_CM_EVENT_DEVICE_REMOVAL)
			rapt_prov_async_event(ia->cia,
					      RAPT_EV_ASYNC_IA_CATASTROPHIC,
					      NULL, c->status);
		break;
	}
}

static void cm_handler(struct rapt_io *io, uint32_t events)
{
	struct vb_ia *ia = rapt_container_of(io, struct vb_ia, cm_io);
	struct rdma_cm_event *e;
	struct cm_ev c;

	while (!rdma_get_cm_event(ia->cmch, &e)) {
		cm_copy(e, &c);
		rdma_ack_cm_event(e);
		vb_dbg("%s: %s (%d)", ia->dev, rdma_event_str(c.type),
		       c.status);
		cm_dispatch(ia, &c);
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK)
		vb_err("%s: rdma_get_cm_event: %m", ia->dev);
}

static void cm_unregister(void *arg)
{
	struct vb_ia *ia = arg;

	rapt_engine_close(ia->eng, &ia->cm_io, false);
}

/**
 * vb_cm_start - the IA's rdma_cm event channel, watched by its engine
 * @ia: the IA (its engine runs)
 *
 * Return: 0, or a RAPT_E* code (the reason set).
 */
int vb_cm_start(struct vb_ia *ia)
{
	struct vb_connector *cn = &ia->conn;
	int fl, ret;

	ia->cmch = rdma_create_event_channel();
	if (!ia->cmch) {
		rapt_prov_set_error("%s: rdma_create_event_channel: %s (is rdma_ucm loaded?)",
				    vb_tp->name, strerror(errno));
		return RAPT_ENODEV;
	}
	fl = fcntl(ia->cmch->fd, F_GETFL);
	if (fl < 0 || fcntl(ia->cmch->fd, F_SETFL, fl | O_NONBLOCK))
		goto err_ch;
	/* The engine closes what it watches; the channel closes its own. */
	ia->cm_io.fd = fcntl(ia->cmch->fd, F_DUPFD_CLOEXEC, 0);
	ia->cm_io.handler = cm_handler;
	if (ia->cm_io.fd < 0)
		goto err_ch;
	ret = rapt_engine_add(ia->eng, &ia->cm_io, EPOLLIN);
	if (ret) {
		rapt_sys_close(ia->cm_io.fd);
		rdma_destroy_event_channel(ia->cmch);
		return ret;
	}
	pthread_mutex_init(&cn->lock, NULL);
	pthread_cond_init(&cn->cond, NULL);
	pthread_cond_init(&cn->gone, NULL);
	rapt_list_init(&ia->reqs);
	rapt_timer_init(&ia->req_timer, req_timer_fire);
	ia->diag_fd = vb_tp->tcp_wire ? vb_tcp_diag_open() : -1;
	ia->tcp_diag = ia->diag_fd >= 0 && vb_tcp_diag_works(ia->diag_fd);
	if (!ia->tcp_diag && ia->diag_fd >= 0) {
		rapt_sys_close(ia->diag_fd);
		ia->diag_fd = -1;
	}
	if (vb_tp->tcp_wire && !ia->tcp_diag)
		vb_info("%s: no sock_diag for TCP (tcp_diag not loaded?): a requester that leaves before its request is decided goes unnoticed",
			ia->dev);
	return 0;

err_ch:
	rapt_prov_set_error("%s: the rdma_cm event channel: %s", vb_tp->name,
			    strerror(errno));
	rdma_destroy_event_channel(ia->cmch);
	return RAPT_EIO;
}

void vb_cm_stop(struct vb_ia *ia)
{
	struct vb_connector *cn = &ia->conn;

	pthread_mutex_lock(&cn->lock);
	cn->stop = true;
	pthread_cond_broadcast(&cn->cond);
	if (cn->threads)
		vb_dbg("%s: waiting for %u connector threads", ia->dev,
		       cn->threads);
	while (cn->threads)
		pthread_cond_wait(&cn->gone, &cn->lock);
	pthread_mutex_unlock(&cn->lock);
	rapt_timer_cancel(ia->eng, &ia->req_timer);
	rapt_engine_call(ia->eng, cm_unregister, ia);
	if (ia->diag_fd >= 0)
		rapt_sys_close(ia->diag_fd);
	ia->diag_fd = -1;
	rdma_destroy_event_channel(ia->cmch);
	pthread_cond_destroy(&cn->gone);
	pthread_cond_destroy(&cn->cond);
	pthread_mutex_destroy(&cn->lock);
}
