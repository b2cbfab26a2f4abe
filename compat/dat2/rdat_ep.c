// SPDX-License-Identifier: MIT
/*
 * EP: create (with or without an SRQ), connect, disconnect, states, and
 * the data path (LMR triplets become rapt SGEs: lmr_context is the lkey,
 * rmr_context the rkey).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "rdat.h"

/* Most segments one post may carry; rapt's providers offer fewer. */
#define RDAT_MAX_SGE 32

DAT_EP_STATE rdat_ep_state(uint32_t s)
{
	switch (s) {
	case RAPT_EP_ACTIVE_PENDING:
		return DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
	case RAPT_EP_PASSIVE_PENDING:
		return DAT_EP_STATE_COMPLETION_PENDING;
	case RAPT_EP_CONNECTED:
		return DAT_EP_STATE_CONNECTED;
	case RAPT_EP_DISCONNECT_PENDING:
		return DAT_EP_STATE_DISCONNECT_PENDING;
	case RAPT_EP_DISCONNECTED:
		return DAT_EP_STATE_DISCONNECTED;
	case RAPT_EP_RESERVED:
		return DAT_EP_STATE_RESERVED;
	default:
		return DAT_EP_STATE_UNCONNECTED;
	}
}

static uint32_t rdat_u32(DAT_COUNT v)
{
	return v > 0 ? (uint32_t)v : 0;
}

static void rdat_ep_attr_to_rapt(const DAT_EP_ATTR *d, struct rapt_ep_attr *r)
{
	memset(r, 0, sizeof(*r));
	if (!d)
		return;
	r->max_send = rdat_u32(d->max_request_dtos);
	r->max_recv = rdat_u32(d->max_recv_dtos);
	r->max_send_sge = rdat_u32(d->max_request_iov);
	r->max_recv_sge = rdat_u32(d->max_recv_iov);
	r->rdma_read_in = rdat_u32(d->max_rdma_read_in);
	r->rdma_read_out = rdat_u32(d->max_rdma_read_out);
}

/* The DAT attributes as the EP got them (defaults filled in). */
static void rdat_ep_attr_from_rapt(struct rdat_ep *ep, const DAT_EP_ATTR *d,
				   const struct rapt_ep_attr *r)
{
	const struct rapt_ia_attr *ia = &ep->o.ia->attr;
	DAT_EP_ATTR *a = &ep->attr;

	if (d)
		*a = *d;
	else
		memset(a, 0, sizeof(*a));
	a->service_type = DAT_SERVICE_TYPE_RC;
	if (!a->max_message_size || a->max_message_size > ia->max_msg_size)
		a->max_message_size = ia->max_msg_size > UINT32_MAX ?
			UINT32_MAX : (DAT_SEG_LENGTH)ia->max_msg_size;
	if (!a->max_rdma_size || a->max_rdma_size > ia->max_rdma_size)
		a->max_rdma_size = ia->max_rdma_size > UINT32_MAX ?
			UINT32_MAX : (DAT_SEG_LENGTH)ia->max_rdma_size;
	a->max_request_dtos = (DAT_COUNT)r->max_send;
	a->max_recv_dtos = (DAT_COUNT)r->max_recv;
	a->max_request_iov = (DAT_COUNT)r->max_send_sge;
	a->max_recv_iov = (DAT_COUNT)r->max_recv_sge;
	a->max_rdma_read_in = (DAT_COUNT)r->rdma_read_in;
	a->max_rdma_read_out = (DAT_COUNT)r->rdma_read_out;
	a->max_rdma_read_iov = (DAT_COUNT)r->max_send_sge;
	a->max_rdma_write_iov = (DAT_COUNT)r->max_send_sge;
	a->ep_transport_specific_count = 0;
	a->ep_transport_specific = NULL;
	a->ep_provider_specific_count = 0;
	a->ep_provider_specific = NULL;
}

/* An optional EVD handle: NULL stays NULL, anything else must be live. */
static int rdat_opt_evd(DAT_EVD_HANDLE h, struct rdat_evd **out)
{
	*out = h ? rdat_get(h, DAT_HANDLE_TYPE_EVD) : NULL;
	return h && !*out ? -1 : 0;
}

/* The objects an EP is made of, from the consumer's handles. */
struct rdat_ep_parts {
	struct rdat_pz *pz;
	struct rdat_evd *recv, *req, *conn;
	struct rdat_srq *srq;
};

static DAT_RETURN rdat_ep_parts(DAT_PZ_HANDLE pzh, DAT_EVD_HANDLE rh,
				DAT_EVD_HANDLE qh, DAT_EVD_HANDLE ch,
				DAT_SRQ_HANDLE srqh, struct rdat_ep_parts *p)
{
	if (!pzh)	/* rapt has no EP without a PZ (UNCONFIGURED states) */
		return RDAT_NOMODEL;
	p->pz = rdat_get(pzh, DAT_HANDLE_TYPE_PZ);
	if (!p->pz)
		return rdat_bad(DAT_HANDLE_TYPE_PZ);
	if (rdat_opt_evd(rh, &p->recv))
		return RDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
	if (rdat_opt_evd(qh, &p->req))
		return RDAT_ERR(DAT_INVALID_HANDLE,
				DAT_INVALID_HANDLE_EVD_REQUEST);
	if (rdat_opt_evd(ch, &p->conn) || !p->conn)
		return RDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
	p->srq = srqh ? rdat_get(srqh, DAT_HANDLE_TYPE_SRQ) : NULL;
	if (srqh && !p->srq)
		return rdat_bad(DAT_HANDLE_TYPE_SRQ);
	return DAT_SUCCESS;
}

/* Create the rapt EP behind @ep, a new DAT EP or a tentative one. */
static DAT_RETURN rdat_ep_open(struct rdat_ep *ep,
			       const struct rdat_ep_parts *p,
			       const DAT_EP_ATTR *attr)
{
	void *rh = p->recv ? p->recv->o.h : NULL;
	void *qh = p->req ? p->req->o.h : NULL;
	struct rapt_ep_info info;
	struct rapt_ep_attr ra;
	struct rapt_ep *h;
	int rc;

	if (attr && attr->service_type != DAT_SERVICE_TYPE_RC)
		return RDAT_NOMODEL;
	rdat_ep_attr_to_rapt(attr, &ra);
	if (p->srq)
		rc = rapt_ep_create_with_srq(p->pz->o.h, p->srq->o.h, rh, qh,
					     p->conn->o.h, &ra, &h);
	else
		rc = rapt_ep_create(p->pz->o.h, rh, qh, p->conn->o.h, &ra, &h);
	if (rc)
		return rdat_status(rc);
	rdat_obj_bind(&ep->o, h);
	ep->pz = p->pz;
	ep->recv_evd = p->recv;
	ep->request_evd = p->req;
	ep->connect_evd = p->conn;
	ep->srq = p->srq;
	if (rapt_ep_query(h, &info, sizeof(info)))
		info.attr = ra;
	rdat_ep_attr_from_rapt(ep, attr, &info.attr);
	return DAT_SUCCESS;
}

static DAT_RETURN rdat_ep_make(DAT_IA_HANDLE iah, DAT_PZ_HANDLE pzh,
			       DAT_EVD_HANDLE rh, DAT_EVD_HANDLE qh,
			       DAT_EVD_HANDLE ch, DAT_SRQ_HANDLE srqh,
			       const DAT_EP_ATTR *attr, DAT_EP_HANDLE *out)
{
	struct rdat_ia *ia = rdat_get(iah, DAT_HANDLE_TYPE_IA);
	struct rdat_ep_parts parts;
	struct rdat_ep *ep;
	DAT_RETURN ret;

	if (!ia)
		return rdat_bad(DAT_HANDLE_TYPE_IA);
	ret = rdat_ep_parts(pzh, rh, qh, ch, srqh, &parts);
	if (ret != DAT_SUCCESS)
		return ret;
	if (!out)
		return RDAT_ERR(DAT_INVALID_PARAMETER, 0);
	ep = rdat_obj_new(sizeof(*ep), DAT_HANDLE_TYPE_EP, ia, ia->o.prov);
	if (!ep)
		return RDAT_NOMEM;
	ret = rdat_ep_open(ep, &parts, attr);
	if (ret != DAT_SUCCESS) {
		rdat_obj_del(&ep->o);
		return ret;
	}
	*out = ep;
	return DAT_SUCCESS;
}

/**
 * rdat_ep_tentative - the EP a DAT_PSP_PROVIDER_FLAG PSP makes for a CR
 * @ia: the IA
 *
 * DAT's UNCONFIGURED_TENTATIVE EP: a handle with no rapt EP behind it
 * until the consumer gives it a PZ and EVDs with dat_ep_modify() (a rapt
 * EP has both from its creation); then TENTATIVE_CONNECTION_PENDING until
 * the CR is accepted (with this EP or none) or rejected.
 *
 * Return: the EP, or NULL when out of memory.
 */
struct rdat_ep *rdat_ep_tentative(struct rdat_ia *ia)
{
	struct rdat_ep *ep = rdat_obj_new(sizeof(*ep), DAT_HANDLE_TYPE_EP, ia,
					  ia->o.prov);

	if (ep)
		ep->tentative = 1;
	return ep;
}

/* dat_ep_modify() of a tentative EP: its PZ and EVDs make it a rapt EP. */
static DAT_RETURN rdat_ep_configure(struct rdat_ep *ep, DAT_EP_PARAM_MASK m,
				    const DAT_EP_PARAM *p)
{
	struct rdat_ep_parts parts;
	DAT_RETURN ret;

	if (!(m & DAT_EP_FIELD_PZ_HANDLE) ||
	    !(m & DAT_EP_FIELD_CONNECT_EVD_HANDLE))
		return RDAT_ERR(DAT_INVALID_STATE,
				DAT_INVALID_STATE_EP_UNCONFIGURED);
	ret = rdat_ep_parts(p->pz_handle,
			    m & DAT_EP_FIELD_RECV_EVD_HANDLE ?
			    p->recv_evd_handle : NULL,
			    m & DAT_EP_FIELD_REQUEST_EVD_HANDLE ?
			    p->request_evd_handle : NULL,
			    p->connect_evd_handle,
			    m & DAT_EP_FIELD_SRQ_HANDLE ? p->srq_handle : NULL,
			    &parts);
	if (ret != DAT_SUCCESS)
		return ret;
	return rdat_ep_open(ep, &parts, m & DAT_EP_FIELD_EP_ATTR_ALL ?
			    &p->ep_attr : NULL);
}

/* A DAT state: a tentative EP's own, else rapt's. */
static DAT_EP_STATE rdat_ep_dat_state(const struct rdat_ep *ep,
				      uint32_t rapt_state)
{
	if (ep->tentative && !ep->o.h)
		return DAT_EP_STATE_UNCONFIGURED_TENTATIVE;
	if (ep->tentative && rapt_state == RAPT_EP_UNCONNECTED)
		return DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
	return rdat_ep_state(rapt_state);
}

DAT_RETURN rdat_ep_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
			  DAT_EVD_HANDLE recv, DAT_EVD_HANDLE req,
			  DAT_EVD_HANDLE conn, const DAT_EP_ATTR *attr,
			  DAT_EP_HANDLE *out)
{
	return rdat_ep_make(ia, pz, recv, req, conn, NULL, attr, out);
}

DAT_RETURN rdat_ep_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz,
				   DAT_EVD_HANDLE recv, DAT_EVD_HANDLE req,
				   DAT_EVD_HANDLE conn, DAT_SRQ_HANDLE srq,
				   const DAT_EP_ATTR *attr, DAT_EP_HANDLE *out)
{
	if (!srq)
		return rdat_bad(DAT_HANDLE_TYPE_SRQ);
	return rdat_ep_make(ia, pz, recv, req, conn, srq, attr, out);
}

DAT_RETURN rdat_ep_query(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask,
			 DAT_EP_PARAM *p)
{
	struct rdat_ep *ep = rdat_get(h, DAT_HANDLE_TYPE_EP);
	struct rapt_ep_info info;
	int rc;

	if (!ep)
		return rdat_bad(DAT_HANDLE_TYPE_EP);
	if (!p)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	memset(&info, 0, sizeof(info));
	rc = ep->o.h ? rapt_ep_query(ep->o.h, &info, sizeof(info)) : 0;
	if (rc)
		return rdat_status(rc);
	ep->local_addr = info.local_addr;
	if (info.remote_addr.ss_family)
		ep->remote_addr = info.remote_addr;
	memset(p, 0, sizeof(*p));
	p->ia_handle = ep->o.ia;
	p->ep_state = rdat_ep_dat_state(ep, info.state);
	p->local_ia_address_ptr = info.local_addr.ss_family ?
		(DAT_IA_ADDRESS_PTR)&ep->local_addr :
		(DAT_IA_ADDRESS_PTR)&ep->o.ia->attr.local_addr;
	p->local_port_qual = rdat_port(&ep->local_addr);
	p->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ep->remote_addr;
	p->remote_port_qual = ep->remote_qual;
	p->pz_handle = ep->pz;
	p->recv_evd_handle = ep->recv_evd;
	p->request_evd_handle = ep->request_evd;
	p->connect_evd_handle = ep->connect_evd;
	p->srq_handle = ep->srq;
	p->ep_attr = ep->attr;
	return DAT_SUCCESS;
}

/* What dat_ep_modify() can change: the depths rapt_ep_modify() takes. */
#define RDAT_EP_MODIFIABLE (DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS | \
	DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS | \
	DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN | \
	DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT)

DAT_RETURN rdat_ep_modify(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK mask,
			  const DAT_EP_PARAM *p)
{
	struct rdat_ep *ep = rdat_get(h, DAT_HANDLE_TYPE_EP);
	struct rapt_ep_attr ra;
	unsigned int rmask = 0;
	int rc;

	if (!ep)
		return rdat_bad(DAT_HANDLE_TYPE_EP);
	if (!p)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (!ep->o.h)
		return rdat_ep_configure(ep, mask, p);
	if (mask & ~RDAT_EP_MODIFIABLE)
		return RDAT_NOTIMPL;
	rdat_ep_attr_to_rapt(&p->ep_attr, &ra);
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS)
		rmask |= RAPT_EP_ATTR_MAX_RECV;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS)
		rmask |= RAPT_EP_ATTR_MAX_SEND;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN)
		rmask |= RAPT_EP_ATTR_RDMA_READ_IN;
	if (mask & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT)
		rmask |= RAPT_EP_ATTR_RDMA_READ_OUT;
	rc = rapt_ep_modify(ep->o.h, &ra, rmask);
	if (rc)
		return rdat_status(rc);
	if (rmask & RAPT_EP_ATTR_MAX_RECV)
		ep->attr.max_recv_dtos = p->ep_attr.max_recv_dtos;
	if (rmask & RAPT_EP_ATTR_MAX_SEND)
		ep->attr.max_request_dtos = p->ep_attr.max_request_dtos;
	if (rmask & RAPT_EP_ATTR_RDMA_READ_IN)
		ep->attr.max_rdma_read_in = p->ep_attr.max_rdma_read_in;
	if (rmask & RAPT_EP_ATTR_RDMA_READ_OUT)
		ep->attr.max_rdma_read_out = p->ep_attr.max_rdma_read_out;
	return DAT_SUCCESS;
}

static size_t rdat_sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
		sizeof(struct sockaddr_in);
}

DAT_RETURN rdat_ep_connect(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR addr,
			   DAT_CONN_QUAL qual, DAT_TIMEOUT timeout,
			   DAT_COUNT pdata_len, const DAT_PVOID pdata,
			   DAT_QOS qos, DAT_CONNECT_FLAGS flags)
{
	struct rdat_ep *ep = rdat_get(h, DAT_HANDLE_TYPE_EP);
	int64_t t = timeout == DAT_TIMEOUT_INFINITE ? RAPT_TIMEOUT_INFINITE :
		(int64_t)timeout;
	int rc;

	if (!ep)
		return rdat_bad(DAT_HANDLE_TYPE_EP);
	if (!addr)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (pdata_len < 0 || (pdata_len && !pdata))
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	if (qos != DAT_QOS_BEST_EFFORT || flags != DAT_CONNECT_DEFAULT_FLAG)
		return RDAT_NOMODEL;	/* no QoS classes, no multipath */
	rc = rapt_ep_connect(ep->o.h, addr, rdat_qual(ep->o.ia, qual), pdata,
			     (size_t)pdata_len, t);
	if (rc)
		return rdat_status(rc);
	memset(&ep->remote_addr, 0, sizeof(ep->remote_addr));
	memcpy(&ep->remote_addr, addr, rdat_sa_len(addr));
	ep->remote_qual = qual;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_ep_dup_connect(DAT_EP_HANDLE h, DAT_EP_HANDLE dup,
			       DAT_TIMEOUT timeout, DAT_COUNT pdata_len,
			       const DAT_PVOID pdata, DAT_QOS qos)
{
	struct rdat_ep *d = rdat_get(dup, DAT_HANDLE_TYPE_EP);
	DAT_EP_STATE st;

	if (!d)
		return RDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
	if (rdat_ep_get_status(d, &st, NULL, NULL) != DAT_SUCCESS ||
	    st != DAT_EP_STATE_CONNECTED)
		return RDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
	return rdat_ep_connect(h, (DAT_IA_ADDRESS_PTR)&d->remote_addr,
			       d->remote_qual, timeout, pdata_len, pdata, qos,
			       DAT_CONNECT_DEFAULT_FLAG);
}

/*
 * DAT_CLOSE_ABRUPT_FLAG is DAT's default, and DAT consumers use it right
 * after their last send completed: on InfiniBand that completion means
 * the peer has the data.  On rapt's tcp (and on iWARP generally) it means
 * the data is in the local socket, and an abrupt close (RST) makes the
 * peer's kernel discard what it has not read yet.  So with no send or
 * RDMA outstanding, an abrupt close is done as rapt's graceful one: no
 * work of ours is left to flush, and the peer gets every byte before the
 * close.  Receives still complete FLUSHED at the close.
 */
static unsigned int rdat_close_flags(struct rdat_ep *ep, DAT_CLOSE_FLAGS f)
{
	struct rapt_ep_status s;

	if (f == DAT_CLOSE_GRACEFUL_FLAG)
		return RAPT_CLOSE_GRACEFUL;
	if (!rapt_ep_get_status(ep->o.h, &s, sizeof(s)) &&
	    s.state == RAPT_EP_CONNECTED && (s.flags & RAPT_EPS_REQUEST_IDLE))
		return RAPT_CLOSE_GRACEFUL;
	return RAPT_CLOSE_ABRUPT;
}

DAT_RETURN rdat_ep_disconnect(DAT_EP_HANDLE h, DAT_CLOSE_FLAGS flags)
{
	struct rdat_ep *ep = rdat_get(h, DAT_HANDLE_TYPE_EP);
	enum rapt_ep_state st;
	int rc;

	if (!ep)
		return rdat_bad(DAT_HANDLE_TYPE_EP);
	rc = rapt_ep_disconnect(ep->o.h, rdat_close_flags(ep, flags), NULL, 0);
	/* Already over (the peer closed first): nothing left to do. */
	if (rc == RAPT_ESTATE && !rapt_ep_get_state(ep->o.h, &st) &&
	    (st == RAPT_EP_DISCONNECTED || st == RAPT_EP_DISCONNECT_PENDING))
		return DAT_SUCCESS;
	return rdat_status(rc);
}

DAT_RETURN rdat_ep_get_status(DAT_EP_HANDLE h, DAT_EP_STATE *state,
			      DAT_BOOLEAN *recv_idle, DAT_BOOLEAN *req_idle)
{
	struct rdat_ep *ep = rdat_get(h, DAT_HANDLE_TYPE_EP);
	struct rapt_ep_status s;
	int rc;

	if (!ep)
		return rdat_bad(DAT_HANDLE_TYPE_EP);
	memset(&s, 0, sizeof(s));
	s.flags = RAPT_EPS_RECV_IDLE | RAPT_EPS_REQUEST_IDLE;
	rc = ep->o.h ? rapt_ep_get_status(ep->o.h, &s, sizeof(s)) : 0;
	if (rc)
		return rdat_status(rc);
	if (state)
		*state = rdat_ep_dat_state(ep, s.state);
	if (recv_idle)
		*recv_idle = (s.flags & RAPT_EPS_RECV_IDLE) ? DAT_TRUE :
			DAT_FALSE;
	if (req_idle)
		*req_idle = (s.flags & RAPT_EPS_REQUEST_IDLE) ? DAT_TRUE :
			DAT_FALSE;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_ep_free(DAT_EP_HANDLE h)
{
	struct rdat_ep *ep = rdat_get(h, DAT_HANDLE_TYPE_EP);
	enum rapt_ep_state st;
	int rc;

	if (ep && !ep->o.h) {	/* tentative, never configured */
		rdat_obj_del(&ep->o);
		return DAT_SUCCESS;
	}
	if (!ep)
		return rdat_bad(DAT_HANDLE_TYPE_EP);
	if (rapt_ep_get_state(ep->o.h, &st))
		st = RAPT_EP_UNCONNECTED;
	/* As an abrupt disconnect: let the peer have what we sent. */
	if (rdat_close_flags(ep, DAT_CLOSE_ABRUPT_FLAG) == RAPT_CLOSE_GRACEFUL)
		rapt_ep_disconnect(ep->o.h, RAPT_CLOSE_GRACEFUL, NULL, 0);
	rc = rapt_ep_free(ep->o.h);
	if (rc)
		return rdat_status(rc);
	/* Its events still queued, and the DISCONNECTED that ends an
	 * established connection, still reach the consumer. */
	if (st != RAPT_EP_UNCONNECTED && st != RAPT_EP_RESERVED)
		rdat_ep_gone(ep, st == RAPT_EP_CONNECTED ||
			     st == RAPT_EP_DISCONNECT_PENDING ||
			     st == RAPT_EP_DISCONNECTED);
	rdat_obj_del(&ep->o);
	return DAT_SUCCESS;
}

DAT_RETURN rdat_ep_reset(DAT_EP_HANDLE h)
{
	struct rdat_ep *ep = rdat_get(h, DAT_HANDLE_TYPE_EP);
	int rc;

	if (!ep)
		return rdat_bad(DAT_HANDLE_TYPE_EP);
	rc = rapt_ep_reset(ep->o.h);
	if (!rc)	/* a new connection: a new end to report */
		__atomic_store_n(&ep->ended, 0, __ATOMIC_RELAXED);
	return rdat_status(rc);
}

/* DAT completion flags to rapt post flags. */
static unsigned int rdat_post_flags(DAT_COMPLETION_FLAGS f)
{
	unsigned int r = 0;

	if (f & DAT_COMPLETION_SUPPRESS_FLAG)
		r |= RAPT_POST_SUPPRESS;
	if (f & DAT_COMPLETION_SOLICITED_WAIT_FLAG)
		r |= RAPT_POST_SOLICITED;
	if (f & DAT_COMPLETION_BARRIER_FENCE_FLAG)
		r |= RAPT_POST_FENCE;
	/* UNSIGNALLED and EVD_THRESHOLD are notification hints: an
	 * event is still queued, which is all rapt does anyway. */
	return r;
}

static int rdat_sgl(DAT_COUNT n, const DAT_LMR_TRIPLET *iov,
		    struct rapt_sge *sgl)
{
	DAT_COUNT i;

	if (n < 0 || n > RDAT_MAX_SGE || (n && !iov))
		return -1;
	for (i = 0; i < n; i++) {
		sgl[i].addr = iov[i].virtual_address;
		sgl[i].length = iov[i].segment_length;
		sgl[i].lkey = iov[i].lmr_context;
	}
	return 0;
}

enum rdat_op { RDAT_SEND, RDAT_SEND_INV, RDAT_RECV, RDAT_READ, RDAT_WRITE };

/* The posts: the same checks, then the rapt call of @op (@rt->rmr_context
 * is the key a RDAT_SEND_INV invalidates). */
static DAT_RETURN rdat_post(DAT_EP_HANDLE h, enum rdat_op op, DAT_COUNT n,
			    const DAT_LMR_TRIPLET *iov,
			    const DAT_RMR_TRIPLET *rt, uint64_t cookie,
			    DAT_COMPLETION_FLAGS flags)
{
	struct rdat_ep *ep = rdat_get(h, DAT_HANDLE_TYPE_EP);
	unsigned int f = rdat_post_flags(flags), k = (unsigned int)n;
	struct rapt_sge sgl[RDAT_MAX_SGE];
	int rc;

	if (!ep)
		return rdat_bad(DAT_HANDLE_TYPE_EP);
	if (rdat_sgl(n, iov, sgl))
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if ((op == RDAT_READ || op == RDAT_WRITE) && !rt)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	switch (op) {
	case RDAT_SEND:
		rc = rapt_ep_post_send(ep->o.h, sgl, k, cookie, f);
		break;
	case RDAT_SEND_INV:
		rc = rapt_ep_post_send_inv(ep->o.h, sgl, k, cookie, f,
					   rt->rmr_context);
		break;
	case RDAT_RECV:
		rc = rapt_ep_post_recv(ep->o.h, sgl, k, cookie);
		break;
	case RDAT_READ:
		rc = rapt_ep_post_read(ep->o.h, sgl, k, cookie,
				       rt->virtual_address, rt->rmr_context, f);
		break;
	default:
		rc = rapt_ep_post_write(ep->o.h, sgl, k, cookie,
					rt->virtual_address, rt->rmr_context,
					f);
		break;
	}
	return rdat_status(rc);
}

DAT_RETURN rdat_ep_post_send(DAT_EP_HANDLE h, DAT_COUNT n,
			     DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			     DAT_COMPLETION_FLAGS flags)
{
	return rdat_post(h, RDAT_SEND, n, iov, NULL, cookie.as_64, flags);
}

/*
 * The peer's key goes in a Send with Invalidate where rapt has one
 * (RAPT_CAP_SEND_INVALIDATE: any rkey the peer gave, an RMR's or an
 * LMR's); a send without invalidate_flag is a plain send.
 */
DAT_RETURN rdat_ep_post_send_inv(DAT_EP_HANDLE h, DAT_COUNT n,
				 DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				 DAT_COMPLETION_FLAGS flags, DAT_BOOLEAN inv,
				 DAT_RMR_CONTEXT rmr_context)
{
	struct rdat_ep *ep = rdat_get(h, DAT_HANDLE_TYPE_EP);
	DAT_RMR_TRIPLET rt = { .rmr_context = rmr_context };

	if (!ep)
		return rdat_bad(DAT_HANDLE_TYPE_EP);
	if (!(ep->o.ia->attr.caps & RAPT_CAP_SEND_INVALIDATE))
		return RDAT_NOTIMPL;
	return rdat_post(h, inv ? RDAT_SEND_INV : RDAT_SEND, n, iov, &rt,
			 cookie.as_64, flags);
}

DAT_RETURN rdat_ep_post_recv(DAT_EP_HANDLE h, DAT_COUNT n,
			     DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
			     DAT_COMPLETION_FLAGS flags)
{
	return rdat_post(h, RDAT_RECV, n, iov, NULL, cookie.as_64, flags);
}

DAT_RETURN rdat_ep_post_rdma_read(DAT_EP_HANDLE h, DAT_COUNT n,
				  DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				  const DAT_RMR_TRIPLET *rt,
				  DAT_COMPLETION_FLAGS flags)
{
	return rdat_post(h, RDAT_READ, n, iov, rt, cookie.as_64, flags);
}

DAT_RETURN rdat_ep_post_rdma_write(DAT_EP_HANDLE h, DAT_COUNT n,
				   DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie,
				   const DAT_RMR_TRIPLET *rt,
				   DAT_COMPLETION_FLAGS flags)
{
	return rdat_post(h, RDAT_WRITE, n, iov, rt, cookie.as_64, flags);
}

/* ------------------------------------------------------------------ */
/* SRQ                                                                 */
/* ------------------------------------------------------------------ */

DAT_RETURN rdat_srq_create(DAT_IA_HANDLE iah, DAT_PZ_HANDLE pzh,
			   DAT_SRQ_ATTR *attr, DAT_SRQ_HANDLE *out)
{
	struct rdat_ia *ia = rdat_get(iah, DAT_HANDLE_TYPE_IA);
	struct rdat_pz *pz = rdat_get(pzh, DAT_HANDLE_TYPE_PZ);
	struct rapt_srq_attr ra;
	struct rdat_srq *srq;
	struct rapt_srq *h;
	int rc;

	if (!ia)
		return rdat_bad(DAT_HANDLE_TYPE_IA);
	if (!pz || pz->o.ia != ia)
		return rdat_bad(DAT_HANDLE_TYPE_PZ);
	if (!attr || !out || attr->max_recv_dtos <= 0 ||
	    attr->max_recv_iov < 0 || attr->low_watermark < 0)
		return RDAT_ERR(DAT_INVALID_PARAMETER, 0);
	memset(&ra, 0, sizeof(ra));
	ra.max_recv = (uint32_t)attr->max_recv_dtos;
	ra.max_recv_sge = (uint32_t)attr->max_recv_iov;
	ra.low_watermark = (uint32_t)attr->low_watermark;
	rc = rapt_srq_create(pz->o.h, &ra, &h);
	if (rc)
		return rdat_status(rc);
	srq = rdat_wrap(ia, sizeof(*srq), DAT_HANDLE_TYPE_SRQ, h);
	if (!srq)
		return RDAT_NOMEM;
	srq->pz = pz;
	srq->attr = *attr;
	*out = srq;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_srq_free(DAT_SRQ_HANDLE h)
{
	return rdat_free(h, DAT_HANDLE_TYPE_SRQ);
}

DAT_RETURN rdat_srq_post_recv(DAT_SRQ_HANDLE h, DAT_COUNT n,
			      DAT_LMR_TRIPLET *iov, DAT_DTO_COOKIE cookie)
{
	struct rdat_srq *srq = rdat_get(h, DAT_HANDLE_TYPE_SRQ);
	struct rapt_sge sgl[RDAT_MAX_SGE];

	if (!srq)
		return rdat_bad(DAT_HANDLE_TYPE_SRQ);
	if (rdat_sgl(n, iov, sgl))
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	return rdat_status(rapt_srq_post_recv(srq->o.h, sgl, (unsigned int)n,
					      cookie.as_64));
}

DAT_RETURN rdat_srq_query(DAT_SRQ_HANDLE h, DAT_SRQ_PARAM_MASK mask,
			  DAT_SRQ_PARAM *p)
{
	struct rdat_srq *srq = rdat_get(h, DAT_HANDLE_TYPE_SRQ);
	struct rapt_srq_info info;
	int rc;

	if (!srq)
		return rdat_bad(DAT_HANDLE_TYPE_SRQ);
	if (!p)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	rc = rapt_srq_query(srq->o.h, &info, sizeof(info));
	if (rc)
		return rdat_status(rc);
	p->ia_handle = srq->o.ia;
	p->srq_state = DAT_SRQ_STATE_OPERATIONAL;
	p->pz_handle = srq->pz;
	p->max_recv_dtos = (DAT_COUNT)info.attr.max_recv;
	p->max_recv_iov = (DAT_COUNT)info.attr.max_recv_sge;
	p->low_watermark = (DAT_COUNT)info.attr.low_watermark;
	p->available_dto_count = (DAT_COUNT)info.posted;
	p->outstanding_dto_count = DAT_VALUE_UNKNOWN;
	return DAT_SUCCESS;
}

static DAT_RETURN rdat_srq_set(DAT_SRQ_HANDLE h, DAT_COUNT max, DAT_COUNT lw)
{
	struct rdat_srq *srq = rdat_get(h, DAT_HANDLE_TYPE_SRQ);
	struct rapt_srq_info info;
	int rc;

	if (!srq)
		return rdat_bad(DAT_HANDLE_TYPE_SRQ);
	rc = rapt_srq_query(srq->o.h, &info, sizeof(info));
	if (rc)
		return rdat_status(rc);
	if (max < 0)
		max = (DAT_COUNT)info.attr.max_recv;
	if (lw < 0)
		lw = (DAT_COUNT)info.attr.low_watermark;
	return rdat_status(rapt_srq_resize(srq->o.h, (uint32_t)max,
					   (uint32_t)lw));
}

DAT_RETURN rdat_srq_resize(DAT_SRQ_HANDLE h, DAT_COUNT max)
{
	if (max <= 0)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	return rdat_srq_set(h, max, -1);
}

DAT_RETURN rdat_srq_set_lw(DAT_SRQ_HANDLE h, DAT_COUNT lw)
{
	if (lw < 0)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	return rdat_srq_set(h, -1, lw);
}
