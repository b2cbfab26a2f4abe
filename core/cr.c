/* SPDX-License-Identifier: MIT */
/*
 * CR: a connection request handed to the passive consumer before any EP is
 * chosen.  It holds one backlog slot of its PSP until it is accepted,
 * rejected, or its requester goes away.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

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
	struct rapt_core_cr *cr = calloc(1, sizeof(*cr));

	if (!cr)
		return NULL;
	cr->psp = psp;
	cr->pcr = pcr;
	cr->counted = true;
	pthread_mutex_init(&cr->lock, NULL);
	cr->info.psp = rapt__obj_handle(&psp->obj);
	pthread_mutex_lock(&psp->lock);
	cr->info.service_id = psp->info.service_id;
	pthread_mutex_unlock(&psp->lock);
	cr->info.flags = v->foreign ? RAPT_CRI_FOREIGN_PEER : 0;
	cr->info.pdata_len = (uint32_t)RAPT_MIN(v->len, (size_t)RAPT_PDATA_MAX);
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
	pthread_mutex_unlock(&ia->lock);
}

static void orphan_unlink(struct rapt_core_cr *cr)
{
	struct rapt_core_ia *ia = cr->obj.ia;

	pthread_mutex_lock(&ia->lock);
	if (cr->orphan) {
		if (cr->orphan_prev)
			cr->orphan_prev->orphan_next = cr->orphan_next;
		else
			ia->orphans = cr->orphan_next;
		if (cr->orphan_next)
			cr->orphan_next->orphan_prev = cr->orphan_prev;
		cr->orphan = false;
	}
	pthread_mutex_unlock(&ia->lock);
}

static void cr_destroy(struct rapt_core_cr *cr)
{
	orphan_unlink(cr);
	rapt__obj_unregister(&cr->obj);
	pthread_mutex_destroy(&cr->lock);
	free(cr);
}

static int cr_deliver(struct rapt_core_psp *psp, struct rapt_core_cr *cr)
{
	struct rapt_event ev = { .type = RAPT_EV_CR_ARRIVAL };
	int ret;

	ret = rapt__obj_register(&cr->obj, RAPT_CLS_CR, &psp->obj,
				 psp->obj.ia);
	if (ret)
		return ret;
	ev.u.cr.psp = rapt__obj_handle(&psp->obj);
	ev.u.cr.cr = rapt__obj_handle(&cr->obj);
	ev.u.cr.service_id = cr->info.service_id;
	ret = rapt_prov_evd_push(psp->cr_evd, &ev);
	if (ret)
		cr_destroy(cr);
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
		/* The CR EVD overflowed (reported there): refuse the
		 * request rather than lose it. */
		ret = cr_deliver(psp, cr) ? RAPT_EBUSY : 0;
	}
	if (ret) {
		rapt__psp_release(psp, 0);
		cr_verdict(verdict, RAPT_REJECT_RESOURCES, RAPT_PDATA_RESOURCES);
		return ret;
	}
	*out = cr;
	return 0;
}

/* Give up the CR's backlog slot once; called with cr->lock held. */
static void cr_uncount(struct rapt_core_cr *cr, int outcome)
{
	if (!cr->counted)
		return;
	cr->counted = false;
	rapt__psp_release(cr->psp, outcome);
	/* Detach: the PSP may now be freed while this CR handle lives on. */
	rapt__obj_put(&cr->psp->obj);
	cr->obj.parent = NULL;
	cr->psp = NULL;
}

RAPT_SDK void rapt_prov_cr_cancel(struct rapt_core_cr *cr)
{
	bool orphan = false;

	pthread_mutex_lock(&cr->lock);
	cr->cancelled = true;
	if (!cr->deciding) {
		cr_uncount(cr, 0);
		orphan = true;
	}
	pthread_mutex_unlock(&cr->lock);
	if (orphan)
		orphan_link(cr);
}

void rapt__cr_reap_orphans(struct rapt_core_ia *ia)
{
	struct rapt_core_cr *cr;

	for (;;) {
		pthread_mutex_lock(&ia->lock);
		cr = ia->orphans;
		pthread_mutex_unlock(&ia->lock);
		if (!cr)
			return;
		cr_destroy(cr);
	}
}

RAPT_API int rapt_cr_query(struct rapt_cr *handle, struct rapt_cr_info *info,
			   size_t size)
{
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_lookup(handle, RAPT_CLS_CR, &o);
	if (ret)
		return ret;
	if (!info || !size)
		return rapt__fail(RAPT_EINVAL, "rapt_cr_query: no output");
	memcpy(info, &((struct rapt_core_cr *)o)->info,
	       RAPT_MIN(size, sizeof(struct rapt_cr_info)));
	return 0;
}

/* Lock @cr for a decision; frees it and fails if its requester is gone. */
static int cr_begin(struct rapt_core_cr *cr, const char *what)
{
	pthread_mutex_lock(&cr->lock);
	if (cr->cancelled) {
		pthread_mutex_unlock(&cr->lock);
		cr_destroy(cr);
		return rapt__fail(RAPT_ENOTCONN,
				  "%s: the requester went away", what);
	}
	if (cr->deciding) {
		pthread_mutex_unlock(&cr->lock);
		return rapt__fail(RAPT_ESTATE, "%s: already being decided",
				  what);
	}
	cr->deciding = true;
	pthread_mutex_unlock(&cr->lock);
	return 0;
}

/* Finish a decision: @ret from the provider op. */
static int cr_end(struct rapt_core_cr *cr, int ret, int outcome,
		  const char *what)
{
	pthread_mutex_lock(&cr->lock);
	cr->deciding = false;
	if (!ret || cr->cancelled) {
		cr_uncount(cr, ret ? 0 : outcome);
		pthread_mutex_unlock(&cr->lock);
		cr_destroy(cr);
		if (ret)
			return rapt__fail(RAPT_ENOTCONN,
					  "%s: the requester went away", what);
		return 0;
	}
	pthread_mutex_unlock(&cr->lock);
	return rapt__fail(ret, "%s: provider failed: %s", what,
			  rapt_strerror(ret));
}

static int accept_ep(struct rapt_core_cr *cr, struct rapt_ep *ep_handle,
		     struct rapt_core_ep **out)
{
	struct rapt_obj *o;
	int ret = rapt__obj_lookup(ep_handle, RAPT_CLS_EP, &o);

	if (ret)
		return ret;
	if (o->ia != cr->obj.ia)
		return rapt__fail(RAPT_EINVAL,
				  "rapt_cr_accept: the EP belongs to another IA");
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

RAPT_API int rapt_cr_accept(struct rapt_cr *handle, struct rapt_ep *ep_handle,
			    const void *pdata, size_t len)
{
	uint8_t wire[RAPT_PDATA_MAX];
	struct rapt_core_ep *ep = NULL;
	struct rapt_core_cr *cr;
	struct rapt_obj *o;
	uint32_t st = RAPT_EP_UNCONNECTED;
	bool foreign;
	int ret, wlen;

	rapt__ctl_lock();
	ret = rapt__obj_lookup(handle, RAPT_CLS_CR, &o);
	if (ret)
		goto out;
	cr = (struct rapt_core_cr *)o;
	ret = accept_ep(cr, ep_handle, &ep);
	if (ret)
		goto out;
	/* Raw for a raw EP, and for a foreign requester, which would not
	 * understand rapt's header (as rapt_cr_reject does). */
	foreign = cr->info.flags & RAPT_CRI_FOREIGN_PEER;
	wlen = rapt__pdata_prepare(pdata, len, o->ia->attr.pdata_accept,
				   foreign ||
				   (ep->attr.flags & RAPT_EP_RAW_PDATA),
				   "rapt_cr_accept", wire);
	if (wlen < 0) {
		ret = wlen;
		goto out;
	}
	ret = cr_begin(cr, "rapt_cr_accept");
	if (ret)
		goto out;
	if (!atomic_compare_exchange_strong(&ep->state, &st,
					    RAPT_EP_PASSIVE_PENDING)) {
		cr_end(cr, RAPT_ESTATE, 0, "rapt_cr_accept");
		ret = rapt__fail(RAPT_ESTATE, "rapt_cr_accept: EP is %s",
				 rapt_ep_state_name(st));
		goto out;
	}
	/* Before the provider runs: its ESTABLISHED may come at once, and
	 * carries the mark (ep_event.c). */
	if (foreign)
		ep_mark_foreign(ep, true);
	ret = rapt__ops(o)->cr_accept(cr->pcr, ep->obj.prov, wire,
				      (size_t)wlen);
	if (ret) {
		if (foreign)
			ep_mark_foreign(ep, false);
		atomic_store(&ep->state, RAPT_EP_UNCONNECTED);
	}
	ret = cr_end(cr, ret, 1, "rapt_cr_accept");
out:
	rapt__ctl_unlock();
	return ret;
}

RAPT_API int rapt_cr_reject(struct rapt_cr *handle, const void *pdata,
			    size_t len)
{
	uint8_t wire[RAPT_PDATA_MAX];
	struct rapt_core_cr *cr;
	struct rapt_obj *o;
	int ret, wlen;

	rapt__ctl_lock();
	ret = rapt__obj_lookup(handle, RAPT_CLS_CR, &o);
	if (ret)
		goto out;
	cr = (struct rapt_core_cr *)o;
	/* A foreign requester gets its reject data raw, as it would expect. */
	wlen = rapt__pdata_prepare(pdata, len, o->ia->attr.pdata_reject,
				   cr->info.flags & RAPT_CRI_FOREIGN_PEER,
				   "rapt_cr_reject", wire);
	if (wlen < 0) {
		ret = wlen;
		goto out;
	}
	ret = cr_begin(cr, "rapt_cr_reject");
	if (ret)
		goto out;
	ret = rapt__ops(o)->cr_reject(cr->pcr, wire, (size_t)wlen);
	ret = cr_end(cr, ret, -1, "rapt_cr_reject");
out:
	rapt__ctl_unlock();
	return ret;
}
