// SPDX-License-Identifier: MIT
/*
 * EVD: a rapt EVD carrying the streams the DAT flags ask for, and the
 * translation of rapt events into DAT events (rapt handles in the event
 * become the DAT handles wrapping them, through rapt's consumer context).
 */
#include <stdlib.h>
#include <string.h>

#include "rdat.h"

/* DAT_EVD_*_FLAG to rapt streams.  A bind completes on rapt's DTO
 * stream, in order with the EP's other requests. */
static unsigned int rdat_streams(struct rdat_ia *ia, DAT_EVD_FLAGS flags)
{
	unsigned int s = 0;

	if (flags & (DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG))
		s |= RAPT_EVD_DTO;
	if (flags & DAT_EVD_CONNECTION_FLAG)
		s |= RAPT_EVD_CONNECTION;
	if (flags & DAT_EVD_CR_FLAG)
		s |= RAPT_EVD_CR;
	if (flags & DAT_EVD_SOFTWARE_FLAG)
		s |= RAPT_EVD_SOFTWARE;
	/* One async EVD per IA (dat_ia_open's); DEFAULT_FLAG asks again. */
	if ((flags & DAT_EVD_ASYNC_FLAG) && !ia->async_evd)
		s |= RAPT_EVD_ASYNC;
	return s;
}

/**
 * rdat_evd_make - create an EVD of @ia
 * @ia: the IA
 * @qlen: DAT's evd_min_qlen
 * @flags: DAT_EVD_*_FLAG bits
 * @ret: output, the DAT code when NULL is returned
 *
 * dat_evd_post_se() may post to any EVD in uDAPL, so every EVD gets the
 * software stream too where the provider lets it share.
 *
 * Return: the EVD, or NULL.
 */
struct rdat_evd *rdat_evd_make(struct rdat_ia *ia, DAT_COUNT qlen,
			       DAT_EVD_FLAGS flags, DAT_RETURN *ret)
{
	unsigned int s = rdat_streams(ia, flags);
	struct rdat_evd *evd;
	struct rapt_evd *h;
	int rc;

	if (qlen <= 0) {
		*ret = RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
		return NULL;
	}
	if (!s)
		s = RAPT_EVD_SOFTWARE;
	rc = rapt_evd_create(ia->o.h, (unsigned int)qlen,
			     s | RAPT_EVD_SOFTWARE, &h);
	if (rc == RAPT_ENOTSUP)
		rc = rapt_evd_create(ia->o.h, (unsigned int)qlen, s, &h);
	if (rc) {
		*ret = rdat_status(rc);
		return NULL;
	}
	evd = rdat_wrap(ia, sizeof(*evd), DAT_HANDLE_TYPE_EVD, h);
	if (!evd) {
		*ret = RDAT_NOMEM;
		return NULL;
	}
	evd->flags = flags;
	evd->qlen = qlen;
	evd->enabled = 1;
	return evd;
}

DAT_RETURN rdat_evd_create(DAT_IA_HANDLE iah, DAT_COUNT qlen,
			   DAT_CNO_HANDLE cno, DAT_EVD_FLAGS flags,
			   DAT_EVD_HANDLE *out)
{
	struct rdat_ia *ia = rdat_get(iah, DAT_HANDLE_TYPE_IA);
	struct rdat_evd *evd;
	DAT_RETURN ret;

	if (!ia)
		return rdat_bad(DAT_HANDLE_TYPE_IA);
	if (cno)	/* dat_cno_create() never made one */
		return rdat_bad(DAT_HANDLE_TYPE_CNO);
	if (!out)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	evd = rdat_evd_make(ia, qlen, flags, &ret);
	if (!evd)
		return ret;
	if (flags & DAT_EVD_ASYNC_FLAG && !ia->async_evd)
		ia->async_evd = evd;
	*out = evd;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_evd_query(DAT_EVD_HANDLE h, DAT_EVD_PARAM_MASK mask,
			  DAT_EVD_PARAM *p)
{
	struct rdat_evd *evd = rdat_get(h, DAT_HANDLE_TYPE_EVD);

	if (!evd)
		return rdat_bad(DAT_HANDLE_TYPE_EVD);
	if (!p)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	p->ia_handle = evd->o.ia;
	p->evd_qlen = evd->qlen;
	p->evd_state = (evd->enabled ? DAT_EVD_STATE_ENABLED :
			DAT_EVD_STATE_DISABLED) |
		(evd->unwaitable ? DAT_EVD_STATE_UNWAITABLE :
		 DAT_EVD_STATE_WAITABLE);
	p->cno_handle = DAT_HANDLE_NULL;
	p->evd_flags = evd->flags;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_evd_modify_cno(DAT_EVD_HANDLE h, DAT_CNO_HANDLE cno)
{
	if (!rdat_get(h, DAT_HANDLE_TYPE_EVD))
		return rdat_bad(DAT_HANDLE_TYPE_EVD);
	/* No CNOs: detaching from none is all there is to do. */
	return cno ? rdat_bad(DAT_HANDLE_TYPE_CNO) : DAT_SUCCESS;
}

/*
 * Enabled/disabled only decides whether an EVD triggers its CNO; with no
 * CNOs it is state the consumer can read back, as the spec keeps it.
 */
enum rdat_evd_bit { RDAT_EVD_ENABLED, RDAT_EVD_UNWAITABLE };

static DAT_RETURN rdat_evd_set(DAT_EVD_HANDLE h, enum rdat_evd_bit bit,
			       int v)
{
	struct rdat_evd *evd = rdat_get(h, DAT_HANDLE_TYPE_EVD);

	if (!evd)
		return rdat_bad(DAT_HANDLE_TYPE_EVD);
	if (bit == RDAT_EVD_ENABLED)
		evd->enabled = v;
	else
		evd->unwaitable = v;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_evd_enable(DAT_EVD_HANDLE h)
{
	return rdat_evd_set(h, RDAT_EVD_ENABLED, 1);
}

DAT_RETURN rdat_evd_disable(DAT_EVD_HANDLE h)
{
	return rdat_evd_set(h, RDAT_EVD_ENABLED, 0);
}

DAT_RETURN rdat_evd_set_unwaitable(DAT_EVD_HANDLE h)
{
	return rdat_evd_set(h, RDAT_EVD_UNWAITABLE, 1);
}

DAT_RETURN rdat_evd_clear_unwaitable(DAT_EVD_HANDLE h)
{
	return rdat_evd_set(h, RDAT_EVD_UNWAITABLE, 0);
}

DAT_RETURN rdat_evd_resize(DAT_EVD_HANDLE h, DAT_COUNT qlen)
{
	if (!rdat_get(h, DAT_HANDLE_TYPE_EVD))
		return rdat_bad(DAT_HANDLE_TYPE_EVD);
	return RDAT_NOTIMPL;	/* rapt EVDs have a fixed capacity */
}

static DAT_DTOS rdat_dto_op(const struct rapt_event_dto *d)
{
	switch (d->op) {
	case RAPT_OP_SEND:
		return DAT_DTO_SEND;
	case RAPT_OP_RDMA_WRITE:
		return DAT_DTO_RDMA_WRITE;
	case RAPT_OP_RDMA_READ:
		return DAT_DTO_RDMA_READ;
	default:
		return (d->flags & RAPT_DTO_INVALIDATED) ?
			DAT_DTO_RECEIVE_WITH_INVALIDATE : DAT_DTO_RECEIVE;
	}
}

static DAT_DTO_COMPLETION_STATUS rdat_dto_status(uint32_t s)
{
	switch (s) {
	case RAPT_DTO_SUCCESS:
		return DAT_DTO_SUCCESS;
	case RAPT_DTO_FLUSHED:
		return DAT_DTO_ERR_FLUSHED;
	case RAPT_DTO_LOCAL_LENGTH:
		return DAT_DTO_ERR_LOCAL_LENGTH;
	case RAPT_DTO_LOCAL_PROTECTION:
		return DAT_DTO_ERR_LOCAL_PROTECTION;
	case RAPT_DTO_REMOTE_ACCESS:
		return DAT_DTO_ERR_REMOTE_ACCESS;
	case RAPT_DTO_REMOTE_OPERATION:
		return DAT_DTO_ERR_REMOTE_RESPONDER;
	case RAPT_DTO_TRANSPORT:
		return DAT_DTO_ERR_TRANSPORT;
	default:
		return DAT_DTO_ERR_LOCAL_EP;
	}
}

/*
 * A bind or unbind (rdat_rmr.c): DAT names the RMR and the consumer's
 * cookie, which rdat_rmr_done() finds by rapt's cookie.  A successful
 * bind the consumer asked no completion for ends here.
 */
static int rdat_ev_bind(const struct rapt_event_dto *d, DAT_EVENT *e)
{
	DAT_RMR_BIND_COMPLETION_EVENT_DATA *x =
		&e->event_data.rmr_completion_event_data;
	int quiet;

	if (rdat_rmr_done(d->cookie, &x->rmr_handle, &x->user_cookie, &quiet))
		return -1;
	if (quiet && d->status == RAPT_DTO_SUCCESS)
		return -1;
	e->event_number = DAT_RMR_BIND_COMPLETION_EVENT;
	x->status = rdat_dto_status(d->status);
	return 0;
}

static int rdat_ev_dto(const struct rapt_event_dto *d, DAT_EVENT *e)
{
	DAT_DTO_COMPLETION_EVENT_DATA *x = &e->event_data.dto_completion_event_data;

	if (d->op == RAPT_OP_RMR_BIND || d->op == RAPT_OP_RMR_UNBIND)
		return rdat_ev_bind(d, e);
	x->ep_handle = rdat_from_rapt(d->ep);
	if (!x->ep_handle)
		return -1;
	e->event_number = DAT_DTO_COMPLETION_EVENT;
	x->user_cookie.as_64 = d->cookie;
	x->status = rdat_dto_status(d->status);
	x->transfered_length = (DAT_SEG_LENGTH)d->length;
	x->operation = rdat_dto_op(d);
	x->rmr_context = d->invalidated_rkey;
	return 0;
}

static int rdat_ev_cr(struct rdat_evd *evd, const struct rapt_event_cr *c,
		      DAT_EVENT *e)
{
	DAT_CR_ARRIVAL_EVENT_DATA *x = &e->event_data.cr_arrival_event_data;
	struct rdat_cr *cr;
	void *sp = rdat_from_rapt(c->rsp ? (void *)c->rsp : (void *)c->psp);

	cr = sp ? rdat_cr_wrap(evd->o.ia, c->cr) : NULL;
	if (!cr) {
		rapt_cr_reject(c->cr, NULL, 0);
		return -1;
	}
	e->event_number = DAT_CONNECTION_REQUEST_EVENT;
	if (c->rsp)
		x->sp_handle.rsp_handle = sp;
	else
		x->sp_handle.psp_handle = sp;
	x->local_ia_address_ptr =
		(DAT_IA_ADDRESS_PTR)&evd->o.ia->attr.local_addr;
	/* The qual the consumer listens on (rdat_qual() may fold it). */
	x->conn_qual = c->rsp ? ((struct rdat_rsp *)sp)->qual :
		((struct rdat_psp *)sp)->qual;
	x->cr_handle = cr;
	x->truncate_flag = DAT_FALSE;
	return 0;
}

static void rdat_srq_ep_done(struct rdat_ep *ep)
{
	if (ep->srq && ep->o.ia->async_evd)
		rdat_mark_post(ep->o.ia->async_evd, ep,
			       DAT_ASYNC_ERROR_EP_BROKEN);
}

static int rdat_ev_sw(void *pointer, DAT_EVENT *e)
{
	int rc = rdat_mark_event(pointer, e);

	if (rc <= 0)
		return rc;
	e->event_number = DAT_SOFTWARE_EVENT;
	e->event_data.software_event_data.pointer = pointer;
	return 0;
}

static int rdat_ev_conn(uint32_t type, const struct rapt_event_conn *c,
			DAT_EVENT *e)
{
	static const DAT_EVENT_NUMBER num[] = {
		[RAPT_EV_ESTABLISHED & 0xff] = DAT_CONNECTION_EVENT_ESTABLISHED,
		[RAPT_EV_PEER_REJECTED & 0xff] =
			DAT_CONNECTION_EVENT_PEER_REJECTED,
		[RAPT_EV_NON_PEER_REJECTED & 0xff] =
			DAT_CONNECTION_EVENT_NON_PEER_REJECTED,
		[RAPT_EV_UNREACHABLE & 0xff] = DAT_CONNECTION_EVENT_UNREACHABLE,
		[RAPT_EV_TIMED_OUT & 0xff] = DAT_CONNECTION_EVENT_TIMED_OUT,
		[RAPT_EV_ACCEPT_ERROR & 0xff] =
			DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR,
		[RAPT_EV_DISCONNECTED & 0xff] =
			DAT_CONNECTION_EVENT_DISCONNECTED,
		[RAPT_EV_BROKEN & 0xff] = DAT_CONNECTION_EVENT_BROKEN,
	};
	DAT_CONNECTION_EVENT_DATA *x = &e->event_data.connect_event_data;
	unsigned int i = type & 0xff;

	struct rdat_ep *ep;
	int end = type != RAPT_EV_ESTABLISHED;

	if (i >= sizeof(num) / sizeof(num[0]) || !num[i])
		return -1;
	e->event_number = num[i];
	ep = rdat_from_rapt(c->ep);
	if (!ep) {	/* queued before the consumer freed the EP */
		x->ep_handle = rdat_ghost_of(c->ep, end);
		return x->ep_handle ? 0 : -1;
	}
	x->ep_handle = ep;
	/* The consumer has had this connection's end: rdat_ep_free(). */
	if (end)
		__atomic_store_n(&ep->ended, 1, __ATOMIC_RELAXED);
	if (type == RAPT_EV_DISCONNECTED || type == RAPT_EV_BROKEN)
		rdat_srq_ep_done(ep);
	x->private_data_size = (DAT_COUNT)c->pdata_len;
	x->private_data = (DAT_PVOID)c->pdata;
	return 0;
}

static int rdat_ev_async(struct rdat_evd *evd, uint32_t type,
			 const struct rapt_event_async *a, DAT_EVENT *e)
{
	DAT_ASYNCH_ERROR_EVENT_DATA *x = &e->event_data.asynch_error_event_data;

	x->dat_handle = rdat_from_rapt(a->handle);
	x->reason = 0;
	switch (type) {
	case RAPT_EV_ASYNC_EVD_OVERFLOW:
		e->event_number = DAT_ASYNC_ERROR_EVD_OVERFLOW;
		x->reason = DAT_EVD_OVERFLOW_ERROR;
		break;
	case RAPT_EV_ASYNC_EP_BROKEN:
		e->event_number = DAT_ASYNC_ERROR_EP_BROKEN;
		x->reason = DAT_EP_TRANSFER_TO_ERROR;
		break;
	case RAPT_EV_ASYNC_IA_CATASTROPHIC:
		e->event_number = DAT_ASYNC_ERROR_IA_CATASTROPHIC;
		x->dat_handle = evd->o.ia;
		x->reason = DAT_IA_CATASTROPHIC_ERROR;
		break;
	case RAPT_EV_ASYNC_SRQ_LOW_WATERMARK:
		/* DAT 2.0 has no event number of its own for it. */
		e->event_number = DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR;
		x->reason = DAT_SRQ_LOW_WATERMARK_EVENT;
		break;
	default:
		e->event_number = DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR;
		break;
	}
	return 0;
}

/* Translate one rapt event; -1 when it names an object already freed. */
static int rdat_event(struct rdat_evd *evd, const struct rapt_event *r,
		      DAT_EVENT *e)
{
	int rc;

	memset(e, 0, sizeof(*e));
	e->evd_handle = evd;
	switch (r->type >> 8) {
	case 0x00:
		return rdat_ev_dto(&r->u.dto, e);
	case 0x01:
		return rdat_ev_cr(evd, &r->u.cr, e);
	case 0x02:
		rc = rdat_ev_conn(r->type, &r->u.conn, e);
		break;
	case 0x04:
		return rdat_ev_async(evd, r->type, &r->u.async, e);
	case 0x08:
		rc = rdat_ev_sw(r->u.sw.pointer, e);
		break;
	default:
		return -1;
	}
	if (!rc && (e->event_number & ~0xffu) ==
	    (DAT_CONNECTION_EVENT_ESTABLISHED & ~0xffu))
		rdat_trace(e->event_number,
			   e->event_data.connect_event_data.ep_handle);
	return rc;
}

DAT_RETURN rdat_evd_wait(DAT_EVD_HANDLE h, DAT_TIMEOUT timeout,
			 DAT_COUNT threshold, DAT_EVENT *event,
			 DAT_COUNT *nmore)
{
	struct rdat_evd *evd = rdat_get(h, DAT_HANDLE_TYPE_EVD);
	int64_t t = timeout == DAT_TIMEOUT_INFINITE ? RAPT_TIMEOUT_INFINITE :
		(int64_t)timeout;
	struct rapt_event r;
	unsigned int more = 0;
	int rc;

	if (!evd)
		return rdat_bad(DAT_HANDLE_TYPE_EVD);
	if (!event)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	if (threshold <= 0 || threshold > evd->qlen)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (evd->unwaitable)
		return RDAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE);
	do {
		rc = rapt_evd_wait(evd->o.h, t, (unsigned int)threshold, &r,
				   &more);
		if (rc)
			return rdat_status(rc);
	} while (rdat_event(evd, &r, event));
	if (nmore)
		*nmore = (DAT_COUNT)more;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_evd_dequeue(DAT_EVD_HANDLE h, DAT_EVENT *event)
{
	struct rdat_evd *evd = rdat_get(h, DAT_HANDLE_TYPE_EVD);
	struct rapt_event r;
	int rc;

	if (!evd)
		return rdat_bad(DAT_HANDLE_TYPE_EVD);
	if (!event)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	do {
		rc = rapt_evd_dequeue(evd->o.h, &r);
		if (rc)
			return rdat_status(rc);
	} while (rdat_event(evd, &r, event));
	return DAT_SUCCESS;
}

DAT_RETURN rdat_evd_post_se(DAT_EVD_HANDLE h, const DAT_EVENT *event)
{
	struct rdat_evd *evd = rdat_get(h, DAT_HANDLE_TYPE_EVD);

	if (!evd)
		return rdat_bad(DAT_HANDLE_TYPE_EVD);
	if (!event || event->event_number != DAT_SOFTWARE_EVENT)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	return rdat_status(rapt_evd_post_software(
		evd->o.h, event->event_data.software_event_data.pointer));
}

DAT_RETURN rdat_evd_free(DAT_EVD_HANDLE h)
{
	struct rdat_evd *evd = rdat_get(h, DAT_HANDLE_TYPE_EVD);
	struct rdat_ia *ia = evd ? evd->o.ia : NULL;
	DAT_RETURN ret = rdat_free(h, DAT_HANDLE_TYPE_EVD);

	if (ret == DAT_SUCCESS && ia->async_evd == evd)
		ia->async_evd = NULL;
	return ret;
}
