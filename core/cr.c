/* SPDX-License-Identifier: MIT */
/*
 * CR: a connection request handed to the passive consumer before any EP is
 * chosen.  It holds one backlog slot of its PSP, and a user of it, until it
 * is accepted, rejected, or its requester goes away.
 *
 * Who frees a CR.  Decisions (rapt_cr_accept/reject), the provider's
 * cancel and the IA's close may meet on one CR from different threads; no
 * lock is held across the provider's op.  cr->lock guards the flags:
 * @deciding lets one decision at a time reach the provider; @dead says a
 * decision has ended and is freeing the CR.  A CR cancelled while nobody
 * decides it is an orphan: it sits on its IA's orphan list, counted in
 * ia->norphans, and whoever takes it off the list (under ia->lock) frees
 * it: the consumer's next decision (which then fails with RAPT_ENOTCONN)
 * or the IA's close.  Every other caller holds a user of the CR, so the
 * one that frees it first waits for them to let go (rapt__obj_drain()),
 * and the IA's close waits until norphans is 0: a caller that lost the
 * race still finds the CR and its IA in memory.
 *
 * The provider gets its request back only through rapt_prov_cr_request(),
 * which answers NULL once the provider has cancelled it: a cancel that
 * comes first fails the decision here (RAPT_ENOTCONN) without an op, and
 * one that races an op under way is seen by the op itself, which the
 * provider serialises with its cancel.  A decision holds the CR's backlog
 * slot, and so its PSP, for the whole op: the provider's PSP object is
 * always alive there.
 *
 * A CR of an RSP (a one-shot PSP, rsp.c) names the RSP instead of a PSP
 * and can be accepted only with the RSP's EP, which the accept takes out
 * of the RSP's hands.
 *
 * Lock order: cr->lock, then ia->lock or psp->lock.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <rapt/provider_util.h>

#include "rapt_int.h"

static void cr_verdict(struct rapt_prov_verdict *v, uint32_t reason,
		       uint32_t kind)
{
	v->reason = reason;
	v->pdata_len = (uint32_t)rapt_prov_pdata_frame(kind, NULL, 0, v->pdata);
}

static struct rapt_core_cr *cr_alloc(struct rapt_core_psp *psp, void *pcr,
				     const struct rapt_prov_request *req,
				     const struct rapt_pdata_view *v)
{
	struct rapt_core_cr *cr = rapt_zalloc(1, sizeof(*cr));

	if (!cr)
		return NULL;
	cr->psp = psp;
	cr->pcr = pcr;
	cr->counted = true;
	pthread_mutex_init(&cr->lock, NULL);
	if (psp->one_shot)
		cr->info.rsp = rapt__obj_handle(&psp->obj);
	else
		cr->info.psp = rapt__obj_handle(&psp->obj);
	pthread_mutex_lock(&psp->lock);
	cr->info.service_id = psp->info.service_id;
	pthread_mutex_unlock(&psp->lock);
	cr->info.flags = v->foreign ? RAPT_CRI_FOREIGN_PEER : 0;
	cr->info.pdata_len = (uint32_t)RAPT_MIN(v->len,
						(size_t)RAPT_PDATA_RECV_MAX);
	if (cr->info.pdata_len)
		memcpy(cr->pdata, v->data, cr->info.pdata_len);
	cr->info.pdata = cr->info.pdata_len ? cr->pdata : NULL;
	cr->info.rdma_read_in = req->rdma_read_in;
	cr->info.rdma_read_out = req->rdma_read_out;
	cr->info.remote_addr = req->remote_addr;
	cr->info.local_addr = req->local_addr;
	return cr;
}

/*
 * A cancelled CR stays valid until the consumer decides it (and learns
 * RAPT_ENOTCONN); the IA keeps it on its orphan list so that an IA close
 * frees those the consumer never touches.
 */
static void orphan_link(struct rapt_core_cr *cr)
{
	struct rapt_core_ia *ia = cr->obj.ia;

	pthread_mutex_lock(&ia->lock);
	cr->orphan = true;
	cr->orphan_prev = NULL;
	cr->orphan_next = ia->orphans;
	if (ia->orphans)
		ia->orphans->orphan_prev = cr;
	ia->orphans = cr;
	ia->norphans++;
	pthread_mutex_unlock(&ia->lock);
}

/* With ia->lock held. */
static void orphan_unlink_locked(struct rapt_core_ia *ia,
				 struct rapt_core_cr *cr)
{
	if (cr->orphan_prev)
		cr->orphan_prev->orphan_next = cr->orphan_next;
	else
		ia->orphans = cr->orphan_next;
	if (cr->orphan_next)
		cr->orphan_next->orphan_prev = cr->orphan_prev;
	cr->orphan = false;
}

/* Take @cr off its IA's orphan list; false if somebody else did. */
static bool orphan_claim(struct rapt_core_cr *cr)
{
	struct rapt_core_ia *ia = cr->obj.ia;
	bool mine;

	pthread_mutex_lock(&ia->lock);
	mine = cr->orphan;
	if (mine)
		orphan_unlink_locked(ia, cr);
	pthread_mutex_unlock(&ia->lock);
	return mine;
}

/*
 * Free @cr once its other users are gone; the caller owns @held of them
 * (the handle is invalid for everybody from the first step).
 */
static void cr_free(struct rapt_core_cr *cr, unsigned int held)
{
	rapt__obj_drain(&cr->obj, held);
	rapt__obj_unregister(&cr->obj);
	pthread_mutex_destroy(&cr->lock);
	free(cr);
}

/* Free a claimed orphan; its IA may close once none is left. */
static void orphan_free(struct rapt_core_cr *cr, unsigned int held)
{
	struct rapt_core_ia *ia = cr->obj.ia;

	cr_free(cr, held);
	pthread_mutex_lock(&ia->lock);
	if (!--ia->norphans)
		pthread_cond_broadcast(&ia->orphans_gone);
	pthread_mutex_unlock(&ia->lock);
}

/* The CR event's new rsp field must not grow the event union. */
_Static_assert(sizeof(struct rapt_event_cr) <= sizeof(struct rapt_event_conn),
	       "struct rapt_event_cr outgrew the event union");

static int cr_deliver(struct rapt_core_psp *psp, struct rapt_core_cr *cr)
{
	struct rapt_event ev = { .type = RAPT_EV_CR_ARRIVAL };
	int ret;

	/* Admitted, so the PSP is not being freed: a user it keeps. */
	rapt__obj_hold(&psp->obj);
	ret = rapt__obj_reserve(&cr->obj, RAPT_CLS_CR, &psp->obj,
				psp->obj.ia);
	if (ret) {
		rapt__obj_put(&psp->obj);
		return ret;
	}
	rapt__obj_publish(&cr->obj);
	ev.u.cr.psp = cr->info.psp;
	ev.u.cr.rsp = cr->info.rsp;
	ev.u.cr.cr = rapt__obj_handle(&cr->obj);
	ev.u.cr.service_id = cr->info.service_id;
	ret = rapt_prov_evd_push(psp->cr_evd, &ev);
	if (ret)
		cr_free(cr, 0);		/* nobody knows its handle */
	return ret;
}

RAPT_SDK int rapt_prov_cr_arrive(struct rapt_core_psp *psp, void *pcr,
				 const struct rapt_prov_request *req,
				 struct rapt_core_cr **out,
				 struct rapt_prov_verdict *verdict)
{
	struct rapt_core_cr *cr;
	struct rapt_pdata_view v;
	int ret;

	if (rapt_prov_pdata_parse(req->pdata, req->pdata_len, &v) ==
	    RAPT_EVERSION) {
		cr_verdict(verdict, RAPT_REJECT_VERSION, RAPT_PDATA_VERSION);
		return RAPT_EVERSION;
	}
	if (rapt__psp_admit(psp)) {
		cr_verdict(verdict, RAPT_REJECT_BUSY, RAPT_PDATA_BUSY);
		return RAPT_EBUSY;
	}
	cr = cr_alloc(psp, pcr, req, &v);
	if (!cr) {
		rapt_err("out of memory for a connection request");
		ret = RAPT_ENOMEM;
	} else {
		/* The CR EVD overflowed (reported there), or the handle
		 * table is full: refuse the request rather than lose it. */
		ret = cr_deliver(psp, cr) ? RAPT_EBUSY : 0;
	}
	if (ret) {
		rapt__psp_unadmit(psp);
		cr_verdict(verdict, RAPT_REJECT_RESOURCES, RAPT_PDATA_RESOURCES);
		return ret;
	}
	*out = cr;
	return 0;
}

/* Give up the CR's backlog slot once; called with cr->lock held. */
static void cr_uncount(struct rapt_core_cr *cr, int outcome)
{
	struct rapt_core_psp *psp = cr->psp;

	if (!cr->counted)
		return;
	cr->counted = false;
	cr->obj.parent = NULL;
	cr->psp = NULL;
	rapt__psp_release(psp, outcome);
	/* Last: the PSP may be freed as soon as this user is gone. */
	rapt__obj_put(&psp->obj);
}

RAPT_SDK void rapt_prov_cr_cancel(struct rapt_core_cr *cr)
{
	pthread_mutex_lock(&cr->lock);
	cr->cancelled = true;
	if (!cr->deciding) {
		/* An orphan before it lets go of its PSP, so that its IA
		 * cannot close in between. */
		orphan_link(cr);
		cr_uncount(cr, 0);
	}
	pthread_mutex_unlock(&cr->lock);
}

void rapt__cr_reap_orphans(struct rapt_core_ia *ia)
{
	struct rapt_core_cr *cr;
	int nc;

	for (;;) {
		pthread_mutex_lock(&ia->lock);
		cr = ia->orphans;
		if (cr)
			orphan_unlink_locked(ia, cr);
		pthread_mutex_unlock(&ia->lock);
		if (!cr)
			break;
		orphan_free(cr, 0);
	}
	/* Orphans a decision took off the list are being freed there. */
	pthread_mutex_lock(&ia->lock);
	/* A cancellation point (and ia->lock held across it): held off. */
	nc = rapt_nocancel_begin();
	while (ia->norphans)
		pthread_cond_wait(&ia->orphans_gone, &ia->lock);
	rapt_nocancel_end(nc);
	pthread_mutex_unlock(&ia->lock);
}

RAPT_API int rapt_cr_query(struct rapt_cr *handle, struct rapt_cr_info *info,
			   size_t size)
{
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_CR, &o);
	if (ret)
		return ret;
	if (!info || !size)
		ret = rapt__fail(RAPT_EINVAL, "rapt_cr_query: no output");
	else
		memcpy(info, &((struct rapt_core_cr *)o)->info,
		       RAPT_MIN(size, sizeof(struct rapt_cr_info)));
	rapt__obj_put(o);
	return ret;
}

RAPT_SDK void *rapt_prov_cr_request(struct rapt_core_cr *cr)
{
	void *pcr;

	pthread_mutex_lock(&cr->lock);
	pcr = cr->cancelled ? NULL : cr->pcr;
	pthread_mutex_unlock(&cr->lock);
	return pcr;
}

/*
 * Start a decision on @cr, whose caller holds one user of it, and find
 * the provider's PSP object for the op.  On failure that user is gone
 * (the CR with it, if its requester had left).
 */
static int cr_begin(struct rapt_core_cr *cr, const char *what, void **ppsp)
{
	struct rapt_core_psp *psp = NULL;
	bool orphan = false;
	int ret = 0;

	pthread_mutex_lock(&cr->lock);
	if (cr->dead) {
		ret = rapt__fail(RAPT_EBADHANDLE, "%s: the CR was decided already",
				 what);
	} else if (cr->deciding) {
		ret = rapt__fail(RAPT_ESTATE, "%s: already being decided",
				 what);
	} else if (cr->cancelled) {
		orphan = true;
	} else {
		cr->deciding = true;
		psp = cr->psp;	/* counted: held until cr_end() */
	}
	pthread_mutex_unlock(&cr->lock);
	if (ret) {
		rapt__obj_put(&cr->obj);
		return ret;
	}
	if (orphan) {
		if (!orphan_claim(cr)) {
			rapt__obj_put(&cr->obj);
			return rapt__fail(RAPT_EBADHANDLE,
					  "%s: the CR is being freed", what);
		}
		orphan_free(cr, 1);
		return rapt__fail(RAPT_ENOTCONN,
				  "%s: the requester went away", what);
	}
	*ppsp = rapt__psp_prov(psp);
	return 0;
}

/*
 * Finish a decision: @ret from the provider op.  Frees the CR if it is
 * settled, and releases the caller's user of it either way.
 */
static int cr_end(struct rapt_core_cr *cr, int ret, int outcome,
		  const char *what)
{
	bool done;

	pthread_mutex_lock(&cr->lock);
	cr->deciding = false;
	done = !ret || cr->cancelled;
	if (done) {
		cr_uncount(cr, ret ? 0 : outcome);
		cr->dead = true;
	}
	pthread_mutex_unlock(&cr->lock);
	if (!done) {
		rapt__obj_put(&cr->obj);
		return rapt__fail(ret, "%s: provider failed: %s", what,
				  rapt_strerror(ret));
	}
	cr_free(cr, 1);
	if (ret)
		return rapt__fail(RAPT_ENOTCONN, "%s: the requester went away",
				  what);
	return 0;
}

/* Take the accepting EP: of @cr's IA (the caller puts it). */
static int accept_ep(struct rapt_core_cr *cr, struct rapt_ep *ep_handle,
		     struct rapt_core_ep **out)
{
	struct rapt_obj *o;
	int ret = rapt__obj_get(ep_handle, RAPT_CLS_EP, &o);

	if (ret)
		return ret;
	if (o->ia != cr->obj.ia) {
		rapt__obj_put(o);
		return rapt__fail(RAPT_EINVAL,
				  "rapt_cr_accept: the EP belongs to another IA");
	}
	*out = (struct rapt_core_ep *)o;
	return 0;
}

/* The accepting EP's peer is not rapt: its query and ESTABLISHED say so. */
static void ep_mark_foreign(struct rapt_core_ep *ep, bool on)
{
	pthread_mutex_lock(&ep->lock);
	if (on)
		ep->flags |= RAPT_EPI_FOREIGN_PEER;
	else
		ep->flags &= ~(uint32_t)RAPT_EPI_FOREIGN_PEER;
	pthread_mutex_unlock(&ep->lock);
}

/*
 * The state @ep must be in to accept a CR of @psp (held by the decision):
 * UNCONNECTED for a PSP's; RESERVED, and the RSP's own EP, for an RSP's.
 */
static int accept_from(struct rapt_core_psp *psp, struct rapt_core_ep *ep,
		       uint32_t *from)
{
	bool mine;

	*from = RAPT_EP_UNCONNECTED;
	if (!psp->one_shot)
		return 0;
	pthread_mutex_lock(&psp->lock);
	mine = psp->rsp_ep == ep;
	pthread_mutex_unlock(&psp->lock);
	if (!mine)
		return rapt__fail(RAPT_EINVAL,
				  "rapt_cr_accept: a CR of an RSP can only be accepted with the RSP's EP");
	*from = RAPT_EP_RESERVED;
	return 0;
}

/* An accepted RSP CR: the EP is the consumer's now, the RSP lets it go. */
static void accept_take_ep(struct rapt_core_psp *psp)
{
	struct rapt_core_ep *ep;

	pthread_mutex_lock(&psp->lock);
	ep = psp->rsp_ep;
	psp->rsp_ep = NULL;
	pthread_mutex_unlock(&psp->lock);
	rapt__obj_put(&ep->obj);	/* the caller still holds one */
}

/* The decision part of rapt_cr_accept(), with @cr and @ep held. */
static int cr_accept(struct rapt_core_cr *cr, struct rapt_core_ep *ep,
		     const void *pdata, size_t len)
{
	uint8_t wire[RAPT_PDATA_MAX];
	struct rapt_core_psp *psp;
	uint32_t st, from;
	void *ppsp;
	bool foreign;
	int ret, wlen;

	/* Raw for a raw EP, and for a foreign requester, which would not
	 * understand rapt's header (as rapt_cr_reject does). */
	foreign = cr->info.flags & RAPT_CRI_FOREIGN_PEER;
	wlen = rapt__pdata_prepare(pdata, len, cr->obj.ia->attr.pdata_accept,
				   foreign ||
				   (ep->attr.flags & RAPT_EP_RAW_PDATA),
				   "rapt_cr_accept", wire);
	if (wlen < 0) {
		rapt__obj_put(&cr->obj);
		return wlen;
	}
	if (rapt__ep_pdata_bufs(ep, false)) {
		rapt__obj_put(&cr->obj);
		return rapt__fail(RAPT_ENOMEM, "rapt_cr_accept: out of memory");
	}
	ret = cr_begin(cr, "rapt_cr_accept", &ppsp);
	if (ret)
		return ret;
	psp = cr->psp;		/* counted while we decide */
	ret = accept_from(psp, ep, &from);
	if (ret) {
		cr_end(cr, ret, 0, "rapt_cr_accept");
		return rapt__fail(ret, "rapt_cr_accept: a CR of an RSP can only be accepted with the RSP's EP");
	}
	st = from;
	if (!atomic_compare_exchange_strong(&ep->state, &st,
					    RAPT_EP_PASSIVE_PENDING)) {
		cr_end(cr, RAPT_ESTATE, 0, "rapt_cr_accept");
		return rapt__fail(RAPT_ESTATE, "rapt_cr_accept: EP is %s",
				  rapt_ep_state_name(st));
	}
	/* Before the provider runs: its ESTABLISHED may come at once, and
	 * carries the mark (ep_event.c). */
	if (foreign)
		ep_mark_foreign(ep, true);
	RAPT_NOCANCEL(ret = rapt__ops(&cr->obj)->cr_accept(ppsp, cr,
			ep->obj.prov, wire, (size_t)wlen));
	if (ret) {
		if (foreign)
			ep_mark_foreign(ep, false);
		atomic_store(&ep->state, from);
	} else if (psp->one_shot) {
		accept_take_ep(psp);	/* before cr_end drops the RSP */
	}
	return cr_end(cr, ret, 1, "rapt_cr_accept");
}

RAPT_API int rapt_cr_accept(struct rapt_cr *handle, struct rapt_ep *ep_handle,
			    const void *pdata, size_t len)
{
	struct rapt_core_ep *ep = NULL;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_CR, &o);
	if (ret)
		return ret;
	ret = accept_ep((struct rapt_core_cr *)o, ep_handle, &ep);
	if (ret) {
		rapt__obj_put(o);
		return ret;
	}
	/* The accept may take long (rdma_accept): only the CR and the EP
	 * are held meanwhile. */
	ret = cr_accept((struct rapt_core_cr *)o, ep, pdata, len);
	rapt__obj_put(&ep->obj);
	return ret;
}

RAPT_API int rapt_cr_reject(struct rapt_cr *handle, const void *pdata,
			    size_t len)
{
	uint8_t wire[RAPT_PDATA_MAX];
	struct rapt_core_cr *cr;
	struct rapt_obj *o;
	void *ppsp;
	int ret, wlen;

	ret = rapt__obj_get(handle, RAPT_CLS_CR, &o);
	if (ret)
		return ret;
	cr = (struct rapt_core_cr *)o;
	/* A foreign requester gets its reject data raw, as it would expect. */
	wlen = rapt__pdata_prepare(pdata, len, o->ia->attr.pdata_reject,
				   cr->info.flags & RAPT_CRI_FOREIGN_PEER,
				   "rapt_cr_reject", wire);
	if (wlen < 0) {
		rapt__obj_put(o);
		return wlen;
	}
	ret = cr_begin(cr, "rapt_cr_reject", &ppsp);
	if (ret)
		return ret;
	RAPT_NOCANCEL(ret = rapt__ops(o)->cr_reject(ppsp, cr, wire,
						    (size_t)wlen));
	return cr_end(cr, ret, -1, "rapt_cr_reject");
}
