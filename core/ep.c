/* SPDX-License-Identifier: MIT */
/* EP: endpoint objects, connect and disconnect. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <rapt/provider_util.h>

#include "rapt_int.h"

#define EP_DEFAULT_DEPTH 128
#define EP_DEFAULT_SGE 4
#define EP_DEFAULT_READS 8

/* Apply a default of @def to a zero @v, capped at the IA's @max (which
 * may be 0: an IA without RDMA reads gets read depths of 0). */
static uint32_t dflt(uint32_t v, uint32_t def, uint32_t max)
{
	if (v)
		return v;
	return def > max ? max : def;
}

static int over(const char *what, uint32_t v, uint32_t max)
{
	return rapt__fail(RAPT_ERANGE, "EP attribute %s = %u exceeds the IA's %u",
			  what, v, max);
}

/* Fill defaults and check @a against the IA's limits. */
static int ep_attr_check(const struct rapt_ia_attr *ia, struct rapt_ep_attr *a)
{
	a->max_send = dflt(a->max_send, EP_DEFAULT_DEPTH, ia->max_send_depth);
	a->max_recv = dflt(a->max_recv, EP_DEFAULT_DEPTH, ia->max_recv_depth);
	a->max_send_sge = dflt(a->max_send_sge, EP_DEFAULT_SGE,
			       ia->max_send_sge);
	a->max_recv_sge = dflt(a->max_recv_sge, EP_DEFAULT_SGE,
			       ia->max_recv_sge);
	a->rdma_read_in = dflt(a->rdma_read_in, EP_DEFAULT_READS,
			       ia->max_rdma_read_in);
	a->rdma_read_out = dflt(a->rdma_read_out, EP_DEFAULT_READS,
				ia->max_rdma_read_out);
	if (a->max_send > ia->max_send_depth)
		return over("max_send", a->max_send, ia->max_send_depth);
	if (a->max_recv > ia->max_recv_depth)
		return over("max_recv", a->max_recv, ia->max_recv_depth);
	if (a->max_send_sge > ia->max_send_sge)
		return over("max_send_sge", a->max_send_sge, ia->max_send_sge);
	if (a->max_recv_sge > ia->max_recv_sge)
		return over("max_recv_sge", a->max_recv_sge, ia->max_recv_sge);
	if (a->max_inline > ia->max_inline)
		return over("max_inline", a->max_inline, ia->max_inline);
	if (a->rdma_read_in > ia->max_rdma_read_in)
		return over("rdma_read_in", a->rdma_read_in,
			    ia->max_rdma_read_in);
	if (a->rdma_read_out > ia->max_rdma_read_out)
		return over("rdma_read_out", a->rdma_read_out,
			    ia->max_rdma_read_out);
	if (a->flags & ~RAPT_EP_RAW_PDATA)
		return rapt__fail(RAPT_EINVAL, "unknown EP flags %#x",
				  a->flags & ~RAPT_EP_RAW_PDATA);
	if ((a->flags & RAPT_EP_RAW_PDATA) && !(ia->caps & RAPT_CAP_RAW_PDATA))
		return rapt__fail(RAPT_ENOTSUP,
				  "provider does not offer raw private data");
	return 0;
}

static uint32_t ep_post_flags(uint64_t caps)
{
	uint32_t f = RAPT_POST_SUPPRESS;

	if (caps & RAPT_CAP_SOLICITED)
		f |= RAPT_POST_SOLICITED;
	if (caps & RAPT_CAP_FENCE)
		f |= RAPT_POST_FENCE;
	if (caps & RAPT_CAP_INLINE)
		f |= RAPT_POST_INLINE;
	return f;
}

/*
 * Take an optional EVD that must carry @stream and belong to @ia; the user
 * taken on it becomes the EP's (ep_put_refs() drops it).
 */
static int ep_evd(struct rapt_evd *h, uint32_t stream, struct rapt_core_ia *ia,
		  const char *what, bool required, struct rapt_core_evd **out)
{
	struct rapt_obj *o;
	int ret;

	*out = NULL;
	if (!h) {
		if (required)
			return rapt__fail(RAPT_EINVAL, "rapt_ep_create: %s is required",
					  what);
		return 0;
	}
	ret = rapt__obj_get(h, RAPT_CLS_EVD, &o);
	if (ret)
		return ret;
	if (o->ia != ia)
		ret = rapt__fail(RAPT_EINVAL,
				 "rapt_ep_create: %s belongs to another IA", what);
	else if (!(rapt__evd_streams((struct rapt_core_evd *)o) & stream))
		ret = rapt__fail(RAPT_EINVAL,
				 "rapt_ep_create: %s lacks the needed event stream",
				 what);
	if (ret) {
		rapt__obj_put(o);
		return ret;
	}
	*out = (struct rapt_core_evd *)o;
	return 0;
}

static void *evd_prov(struct rapt_core_evd *evd)
{
	return evd ? ((struct rapt_obj *)evd)->prov : NULL;
}

static void evd_put(struct rapt_core_evd *evd)
{
	if (evd)
		rapt__obj_put((struct rapt_obj *)evd);
}

/* Drop what the EP holds: its EVDs and its SRQ. */
static void ep_put_refs(struct rapt_core_ep *ep)
{
	evd_put(ep->recv_evd);
	evd_put(ep->req_evd);
	evd_put(ep->conn_evd);
	if (ep->srq)
		rapt__srq_unbind(ep->srq);
	ep->srq = NULL;
}

static int ep_resolve_evds(struct rapt_core_ep *ep, struct rapt_core_ia *ia,
			   struct rapt_evd *recv, struct rapt_evd *req,
			   struct rapt_evd *conn)
{
	int ret;

	ret = ep_evd(recv, RAPT_EVD_DTO, ia, "recv_evd", false, &ep->recv_evd);
	if (!ret)
		ret = ep_evd(req, RAPT_EVD_DTO, ia, "request_evd", false,
			     &ep->req_evd);
	if (!ret)
		ret = ep_evd(conn, RAPT_EVD_CONNECTION, ia, "connect_evd", true,
			     &ep->conn_evd);
	return ret;
}

static struct rapt_core_ep *ep_alloc(struct rapt_core_ia *ia,
				     const struct rapt_ep_attr *attr)
{
	struct rapt_core_ep *ep = rapt_zalloc(1, sizeof(*ep));

	if (!ep)
		return NULL;
	if (attr)
		ep->attr = *attr;
	atomic_init(&ep->state, RAPT_EP_UNCONNECTED);
	pthread_mutex_init(&ep->lock, NULL);
	ep->post_flags = ep_post_flags(ia->attr.caps);
	/* Flags a post cannot take on its fast path (see dto.c). */
	ep->post_slow = ~ep->post_flags | RAPT_POST_INLINE;
	ep->ops = ia->ops;
	return ep;
}

static void ep_release(struct rapt_core_ep *ep)
{
	pthread_mutex_destroy(&ep->lock);
	free(ep->pdata);
	free(ep->disc_pdata);
	free(ep);
}

/* rapt__ep_pdata_bufs - comment in rapt_int.h */
int rapt__ep_pdata_bufs(struct rapt_core_ep *ep, bool active)
{
	bool disc = ep->obj.ia->attr.caps & RAPT_CAP_DISCONNECT_PDATA;
	int ret = 0;

	pthread_mutex_lock(&ep->lock);
	if (active && !ep->pdata) {
		ep->pdata = malloc(RAPT_PDATA_RECV_MAX);
		if (!ep->pdata)
			ret = RAPT_ENOMEM;
	}
	if (!ret && disc && !ep->disc_pdata) {
		ep->disc_pdata = malloc(RAPT_PDATA_RECV_MAX);
		if (!ep->disc_pdata)
			ret = RAPT_ENOMEM;
	}
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/* Allocate @ep's state and take its EVDs (and SRQ), for a create on @pz. */
static int ep_prepare(struct rapt_obj *pz, struct rapt_srq *srq,
		      struct rapt_evd *recv, struct rapt_evd *req,
		      struct rapt_evd *conn, const struct rapt_ep_attr *attr,
		      struct rapt_core_ep **out)
{
	struct rapt_core_ep *ep;
	int ret = 0;

	ep = ep_alloc(pz->ia, attr);
	if (!ep)
		return rapt__fail(RAPT_ENOMEM, "out of memory creating an EP");
	if (srq)
		ret = rapt__srq_bind(srq, pz, &ep->attr, &ep->srq);
	if (!ret)
		ret = ep_attr_check(&pz->ia->attr, &ep->attr);
	if (!ret)
		ret = ep_resolve_evds(ep, pz->ia, recv, req, conn);
	if (ret) {
		ep_put_refs(ep);
		ep_release(ep);
		return ret;
	}
	*out = ep;
	return 0;
}

/* The provider's EP, tied to its SRQ if it has one. */
static int ep_prov_create(struct rapt_obj *pz, struct rapt_core_ep *ep)
{
	const struct rapt_prov_ops *ops = rapt__ops(pz);
	int ret;

	RAPT_NOCANCEL(ret = ops->ep_create(pz->ia->obj.prov, pz->prov, ep,
					   rapt__obj_handle(&ep->obj),
					   &ep->attr, evd_prov(ep->recv_evd),
					   evd_prov(ep->req_evd),
					   evd_prov(ep->conn_evd),
					   &ep->obj.prov));
	if (ret || !ep->srq)
		return ret;
	RAPT_NOCANCEL(ret = ops->ep_set_srq(ep->obj.prov, ep->srq->obj.prov));
	if (ret)
		RAPT_NOCANCEL(ops->ep_free(ep->obj.prov));
	return ret;
}

static int ep_create(struct rapt_pz *pz_handle, struct rapt_srq *srq,
		     struct rapt_evd *recv, struct rapt_evd *req,
		     struct rapt_evd *conn, const struct rapt_ep_attr *attr,
		     struct rapt_ep **out)
{
	struct rapt_core_ep *ep = NULL;
	struct rapt_obj *pz;
	int ret;

	if (!out)
		return rapt__fail(RAPT_EINVAL, "rapt_ep_create: NULL output");
	ret = rapt__obj_get(pz_handle, RAPT_CLS_PZ, &pz);
	if (ret)
		return ret;
	ret = ep_prepare(pz, srq, recv, req, conn, attr, &ep);
	if (ret)
		goto err_put;
	ret = rapt__obj_reserve(&ep->obj, RAPT_CLS_EP, pz, pz->ia);
	if (ret)
		goto err_free;
	ret = ep_prov_create(pz, ep);
	if (ret) {
		rapt__fail(ret, "provider could not create an EP: %s",
			   rapt_strerror(ret));
		rapt__obj_unregister(&ep->obj);
		pz = NULL;	/* its user went with the EP's slot */
		goto err_free;
	}
	rapt__ep_peer_timeout_init(ep);
	rapt__obj_publish(&ep->obj);
	*out = rapt__obj_handle(&ep->obj);
	return 0;

err_free:
	ep_put_refs(ep);
	ep_release(ep);
err_put:
	if (pz)
		rapt__obj_put(pz);
	return ret;
}

RAPT_API int rapt_ep_create(struct rapt_pz *pz, struct rapt_evd *recv,
			    struct rapt_evd *req, struct rapt_evd *conn,
			    const struct rapt_ep_attr *attr,
			    struct rapt_ep **out)
{
	return ep_create(pz, NULL, recv, req, conn, attr, out);
}

RAPT_API int rapt_ep_create_with_srq(struct rapt_pz *pz, struct rapt_srq *srq,
				     struct rapt_evd *recv,
				     struct rapt_evd *req,
				     struct rapt_evd *conn,
				     const struct rapt_ep_attr *attr,
				     struct rapt_ep **out)
{
	if (!srq)
		return rapt__fail(RAPT_EBADHANDLE,
				  "rapt_ep_create_with_srq: NULL SRQ");
	return ep_create(pz, srq, recv, req, conn, attr, out);
}

RAPT_API int rapt_ep_free(struct rapt_ep *handle)
{
	struct rapt_core_ep *ep;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_kill(handle, RAPT_CLS_EP, "calls or an RSP", &o);
	if (ret)
		return ret;
	ep = (struct rapt_core_ep *)o;
	RAPT_NOCANCEL(ret = rapt__ops(o)->ep_free(o->prov));
	if (ret) {
		rapt__obj_revive(o);
		return rapt__fail(ret, "provider could not free an EP: %s",
				  rapt_strerror(ret));
	}
	ep_put_refs(ep);
	rapt__obj_unregister(o);
	ep_release(ep);
	return 0;
}

/* Take the EP a handle names for the length of a call (ep_put()). */
static int ep_get(struct rapt_ep *handle, struct rapt_core_ep **ep)
{
	struct rapt_obj *o;
	int ret = rapt__obj_get(handle, RAPT_CLS_EP, &o);

	if (!ret)
		*ep = (struct rapt_core_ep *)o;
	return ret;
}

static int ep_put(struct rapt_core_ep *ep, int ret)
{
	rapt__obj_put(&ep->obj);
	return ret;
}

/* Move @ep from @from to @to; RAPT_ESTATE if it is not in @from. */
static int ep_transit(struct rapt_core_ep *ep, uint32_t from, uint32_t to)
{
	if (atomic_compare_exchange_strong(&ep->state, &from, to))
		return 0;
	return RAPT_ESTATE;
}

static int ep_state_fail(struct rapt_core_ep *ep, const char *what)
{
	return rapt__fail(RAPT_ESTATE, "%s: EP is %s", what,
			  rapt_ep_state_name(atomic_load(&ep->state)));
}

static int connect_check(struct rapt_core_ep *ep, const struct sockaddr *remote,
			 uint64_t sid, int64_t timeout_us)
{
	const struct rapt_ia_attr *a = &ep->obj.ia->attr;

	if (!remote)
		return rapt__fail(RAPT_EINVAL, "rapt_ep_connect: NULL address");
	if (timeout_us < 0 && timeout_us != RAPT_TIMEOUT_INFINITE)
		return rapt__fail(RAPT_EINVAL,
				  "rapt_ep_connect: negative timeout %lld",
				  (long long)timeout_us);
	if (sid < a->service_id_min || sid > a->service_id_max)
		return rapt__fail(RAPT_ERANGE,
				  "service id %llu is outside the provider's range %llu..%llu",
				  (unsigned long long)sid,
				  (unsigned long long)a->service_id_min,
				  (unsigned long long)a->service_id_max);
	return 0;
}

static int ep_connect(struct rapt_core_ep *ep, const struct sockaddr *remote,
		      uint64_t sid, const void *pdata, size_t len,
		      int64_t timeout_us)
{
	uint8_t wire[RAPT_PDATA_MAX];
	int ret, wlen;

	ret = connect_check(ep, remote, sid, timeout_us);
	if (ret)
		return ret;
	wlen = rapt__pdata_prepare(pdata, len, ep->obj.ia->attr.pdata_connect,
				   ep->attr.flags & RAPT_EP_RAW_PDATA,
				   "rapt_ep_connect", wire);
	if (wlen < 0)
		return wlen;
	if (rapt__ep_pdata_bufs(ep, true))
		return rapt__fail(RAPT_ENOMEM, "rapt_ep_connect: out of memory");
	if (ep_transit(ep, RAPT_EP_UNCONNECTED, RAPT_EP_ACTIVE_PENDING))
		return ep_state_fail(ep, "rapt_ep_connect");
	RAPT_NOCANCEL(ret = rapt__ops(&ep->obj)->ep_connect(ep->obj.prov,
			remote, sid, wire, (size_t)wlen, timeout_us));
	if (ret) {
		atomic_store(&ep->state, RAPT_EP_UNCONNECTED);
		return rapt__fail(ret, "provider could not start the connect: %s",
				  rapt_strerror(ret));
	}
	return 0;
}

RAPT_API int rapt_ep_connect(struct rapt_ep *handle,
			     const struct sockaddr *remote, uint64_t sid,
			     const void *pdata, size_t len, int64_t timeout_us)
{
	struct rapt_core_ep *ep;
	int ret = ep_get(handle, &ep);

	if (ret)
		return ret;
	return ep_put(ep, ep_connect(ep, remote, sid, pdata, len, timeout_us));
}

static int disconnect_move(struct rapt_core_ep *ep, uint32_t flags)
{
	uint32_t s = atomic_load(&ep->state);

	for (;;) {
		switch (s) {
		case RAPT_EP_CONNECTED:
			if (atomic_compare_exchange_weak(&ep->state, &s,
						RAPT_EP_DISCONNECT_PENDING))
				return 0;
			continue;
		case RAPT_EP_ACTIVE_PENDING:
		case RAPT_EP_PASSIVE_PENDING:
			return 0;	/* cancel; DISCONNECTED follows */
		case RAPT_EP_DISCONNECT_PENDING:
			if (flags & RAPT_CLOSE_ABRUPT)
				return 0;	/* escalate */
			/* fall through */
		default:
			return ep_state_fail(ep, "rapt_ep_disconnect");
		}
	}
}

static int ep_disconnect(struct rapt_core_ep *ep, unsigned int flags,
			 const void *pdata, size_t len)
{
	const struct rapt_ia_attr *a = &ep->obj.ia->attr;
	uint8_t wire[RAPT_PDATA_MAX];
	int ret, wlen = 0;

	if (flags & ~RAPT_CLOSE_ABRUPT)
		return rapt__fail(RAPT_EINVAL, "unknown disconnect flags %#x",
				  flags & ~RAPT_CLOSE_ABRUPT);
	if (len && !(a->caps & RAPT_CAP_DISCONNECT_PDATA))
		return rapt__fail(RAPT_ENOTSUP,
				  "provider carries no private data on disconnect");
	if (a->caps & RAPT_CAP_DISCONNECT_PDATA) {
		wlen = rapt__pdata_prepare(pdata, len, a->pdata_disconnect,
					   ep->attr.flags & RAPT_EP_RAW_PDATA,
					   "rapt_ep_disconnect", wire);
		if (wlen < 0)
			return wlen;
	}
	ret = disconnect_move(ep, flags);
	if (ret)
		return ret;
	RAPT_NOCANCEL(ret = rapt__ops(&ep->obj)->ep_disconnect(ep->obj.prov,
			flags, wire, (size_t)wlen));
	if (ret)
		return rapt__fail(ret, "provider could not disconnect: %s",
				  rapt_strerror(ret));
	return 0;
}

RAPT_API int rapt_ep_disconnect(struct rapt_ep *handle, unsigned int flags,
				const void *pdata, size_t len)
{
	struct rapt_core_ep *ep;
	int ret = ep_get(handle, &ep);

	if (ret)
		return ret;
	return ep_put(ep, ep_disconnect(ep, flags, pdata, len));
}

RAPT_API int rapt_ep_get_state(struct rapt_ep *handle, enum rapt_ep_state *st)
{
	struct rapt_core_ep *ep;
	uint32_t s;
	int ret = ep_get(handle, &ep);

	if (ret)
		return ret;
	s = atomic_load(&ep->state);
	ep_put(ep, 0);
	if (!st)
		return rapt__fail(RAPT_EINVAL, "rapt_ep_get_state: NULL output");
	*st = (enum rapt_ep_state)s;
	return 0;
}

RAPT_API int rapt_ep_query(struct rapt_ep *handle, struct rapt_ep_info *info,
			   size_t size)
{
	struct rapt_core_ep *ep;
	struct rapt_ep_info i;
	int ret = ep_get(handle, &ep);

	if (ret)
		return ret;
	if (!info || !size)
		return ep_put(ep, rapt__fail(RAPT_EINVAL,
					     "rapt_ep_query: no output"));
	memset(&i, 0, sizeof(i));
	pthread_mutex_lock(&ep->lock);
	i.state = atomic_load(&ep->state);
	i.flags = ep->flags;
	i.attr = ep->attr;
	i.rdma_read_in = ep->rdma_read_in;
	i.rdma_read_out = ep->rdma_read_out;
	i.local_addr = ep->local_addr;
	i.remote_addr = ep->remote_addr;
	pthread_mutex_unlock(&ep->lock);
	ep_put(ep, 0);
	memcpy(info, &i, RAPT_MIN(size, sizeof(i)));
	return 0;
}

#define EP_ATTR_ALL (RAPT_EP_ATTR_MAX_SEND | RAPT_EP_ATTR_MAX_RECV | \
		     RAPT_EP_ATTR_RDMA_READ_IN | RAPT_EP_ATTR_RDMA_READ_OUT | \
		     RAPT_EP_ATTR_FLAGS)

/* Merge the @mask fields of @in into @a; check the connected-state rules. */
static int modify_merge(struct rapt_core_ep *ep, uint32_t st,
			const struct rapt_ep_attr *in, uint32_t mask,
			struct rapt_ep_attr *a)
{
	if (mask & RAPT_EP_ATTR_MAX_SEND)
		a->max_send = in->max_send;
	if (mask & RAPT_EP_ATTR_MAX_RECV)
		a->max_recv = in->max_recv;
	if (mask & RAPT_EP_ATTR_RDMA_READ_IN)
		a->rdma_read_in = in->rdma_read_in;
	if (mask & RAPT_EP_ATTR_RDMA_READ_OUT)
		a->rdma_read_out = in->rdma_read_out;
	if (mask & RAPT_EP_ATTR_FLAGS)
		a->flags = in->flags;
	if (st != RAPT_EP_CONNECTED)
		return 0;
	if ((mask & RAPT_EP_ATTR_FLAGS) && a->flags != ep->attr.flags)
		return rapt__fail(RAPT_ESTATE,
				  "EP flags can only change before connecting");
	if (((mask & RAPT_EP_ATTR_RDMA_READ_IN) &&
	     a->rdma_read_in > ep->rdma_read_in) ||
	    ((mask & RAPT_EP_ATTR_RDMA_READ_OUT) &&
	     a->rdma_read_out > ep->rdma_read_out))
		return rapt__fail(RAPT_ERANGE,
				  "read depths can only be lowered below the negotiated %u/%u",
				  ep->rdma_read_in, ep->rdma_read_out);
	return 0;
}

static int ep_modify(struct rapt_core_ep *ep, const struct rapt_ep_attr *in,
		     unsigned int mask)
{
	struct rapt_ep_attr a;
	uint32_t st;
	int ret;

	if (!in || !mask || (mask & ~EP_ATTR_ALL))
		return rapt__fail(RAPT_EINVAL, "rapt_ep_modify: bad attr or mask");
	pthread_mutex_lock(&ep->lock);
	st = atomic_load(&ep->state);
	if (st != RAPT_EP_UNCONNECTED && st != RAPT_EP_CONNECTED) {
		ret = ep_state_fail(ep, "rapt_ep_modify");
		goto out;
	}
	a = ep->attr;
	ret = modify_merge(ep, st, in, mask, &a);
	if (!ret)
		ret = ep_attr_check(&ep->obj.ia->attr, &a);
	pthread_mutex_unlock(&ep->lock);
	/* Never call into the provider with the core EP lock held: the
	 * provider takes its own EP lock there, and holds that one when it
	 * reports events, which take the core lock. */
	if (!ret)
		RAPT_NOCANCEL(ret = rapt__ops(&ep->obj)->ep_modify(ep->obj.prov,
				&a, mask));
	pthread_mutex_lock(&ep->lock);
	if (!ret) {
		ep->attr = a;
		if (st == RAPT_EP_CONNECTED &&
		    (mask & RAPT_EP_ATTR_RDMA_READ_IN))
			ep->rdma_read_in = a.rdma_read_in;
		if (st == RAPT_EP_CONNECTED &&
		    (mask & RAPT_EP_ATTR_RDMA_READ_OUT))
			ep->rdma_read_out = a.rdma_read_out;
	}
out:
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

RAPT_API int rapt_ep_modify(struct rapt_ep *handle,
			    const struct rapt_ep_attr *in, unsigned int mask)
{
	struct rapt_core_ep *ep;
	int ret = ep_get(handle, &ep);

	if (ret)
		return ret;
	return ep_put(ep, ep_modify(ep, in, mask));
}

RAPT_SDK enum rapt_ep_state rapt_prov_ep_state(struct rapt_core_ep *ep)
{
	return (enum rapt_ep_state)atomic_load(&ep->state);
}

RAPT_SDK int rapt_prov_ep_raw_pdata(struct rapt_core_ep *ep)
{
	return !!(ep->attr.flags & RAPT_EP_RAW_PDATA);
}
