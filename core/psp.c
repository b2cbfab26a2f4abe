/* SPDX-License-Identifier: MIT */
/*
 * PSP: a listener, and its admission accounting.
 *
 * Two counters bound a PSP: requests still in the transport handshake
 * (half-open: TCP accepted, MPA request not read yet) and CRs delivered to
 * the consumer but not yet accepted or rejected.  A request over either
 * bound is refused by rapt as BUSY, which the active side sees as
 * NON_PEER_REJECTED/BUSY, distinct from a consumer's reject.
 *
 * An RSP (rsp.c) is the same object with a backlog of one that admits one
 * request in its whole life: the provider sees a PSP.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "rapt_int.h"

#define PSP_DEFAULT_BACKLOG 128
#define PSP_DEFAULT_HS_LIMIT 128
#define PSP_DEFAULT_HS_TIMEOUT_MS 5000

static int psp_check(struct rapt_core_ia *ia, uint64_t sid,
		     struct rapt_evd *cr_evd, const char *what,
		     struct rapt_obj **evd)
{
	int ret;

	if (sid != RAPT_SERVICE_ID_ANY &&
	    (sid < ia->attr.service_id_min || sid > ia->attr.service_id_max))
		return rapt__fail(RAPT_ERANGE,
				  "service id %llu is outside the provider's range %llu..%llu",
				  (unsigned long long)sid,
				  (unsigned long long)ia->attr.service_id_min,
				  (unsigned long long)ia->attr.service_id_max);
	ret = rapt__obj_get(cr_evd, RAPT_CLS_EVD, evd);
	if (ret)
		return ret;
	if ((*evd)->ia != ia)
		ret = rapt__fail(RAPT_EINVAL,
				 "%s: the CR EVD belongs to another IA", what);
	else if (!(rapt__evd_streams((struct rapt_core_evd *)*evd) &
		   RAPT_EVD_CR))
		ret = rapt__fail(RAPT_EINVAL, "%s: the EVD has no CR stream",
				 what);
	if (ret)
		rapt__obj_put(*evd);
	return ret;
}

static struct rapt_core_psp *psp_alloc(const struct rapt_psp_attr *attr,
				       struct rapt_core_ep *rsp_ep,
				       struct rapt_psp_attr *a)
{
	struct rapt_core_psp *psp = calloc(1, sizeof(*psp));

	if (!psp)
		return NULL;
	memset(a, 0, sizeof(*a));
	if (attr)
		*a = *attr;
	if (rsp_ep) {
		/* One request, one EP: a second CR could never be accepted. */
		a->backlog = 1;
		psp->one_shot = true;
		psp->rsp_ep = rsp_ep;
		psp->rsp_ep_handle = rapt__obj_handle(&rsp_ep->obj);
	}
	if (!a->backlog)
		a->backlog = PSP_DEFAULT_BACKLOG;
	if (!a->handshake_limit)
		a->handshake_limit = PSP_DEFAULT_HS_LIMIT;
	if (!a->handshake_timeout_ms)
		a->handshake_timeout_ms = PSP_DEFAULT_HS_TIMEOUT_MS;
	psp->info.backlog = a->backlog;
	psp->info.handshake_limit = a->handshake_limit;
	psp->info.handshake_timeout_ms = a->handshake_timeout_ms;
	pthread_mutex_init(&psp->lock, NULL);
	pthread_cond_init(&psp->ready_cv, NULL);
	return psp;
}

static void psp_release(struct rapt_core_psp *psp)
{
	pthread_cond_destroy(&psp->ready_cv);
	pthread_mutex_destroy(&psp->lock);
	free(psp);
}

/* psp_create returned: decisions on its CRs may go to the provider. */
static void psp_ready(struct rapt_core_psp *psp, void *ppsp, uint64_t bound)
{
	pthread_mutex_lock(&psp->lock);
	psp->obj.prov = ppsp;
	psp->info.service_id = bound;
	psp->ready = true;
	pthread_cond_broadcast(&psp->ready_cv);
	pthread_mutex_unlock(&psp->lock);
}

/* A CR can arrive, and be decided, before psp_create has returned. */
void *rapt__psp_prov(struct rapt_core_psp *psp)
{
	void *ppsp;
	int nc;

	pthread_mutex_lock(&psp->lock);
	/* A cancellation point (and psp->lock held across it): held off. */
	nc = rapt_nocancel_begin();
	while (!psp->ready)
		pthread_cond_wait(&psp->ready_cv, &psp->lock);
	rapt_nocancel_end(nc);
	ppsp = psp->obj.prov;
	pthread_mutex_unlock(&psp->lock);
	return ppsp;
}

int rapt__psp_open(struct rapt_ia *ia_handle, uint64_t sid,
		   struct rapt_evd *cr_evd, const struct rapt_psp_attr *attr,
		   struct rapt_core_ep *rsp_ep, const char *what,
		   struct rapt_core_psp **out)
{
	uint32_t cls = rsp_ep ? RAPT_CLS_RSP : RAPT_CLS_PSP;
	struct rapt_core_psp *psp;
	struct rapt_psp_attr a;
	struct rapt_obj *ia, *evd;
	uint64_t bound = sid;
	void *ppsp = NULL;
	int ret;

	ret = rapt__obj_get(ia_handle, RAPT_CLS_IA, &ia);
	if (ret)
		return ret;
	if (rsp_ep && rsp_ep->obj.ia != ia->ia) {
		ret = rapt__fail(RAPT_EINVAL, "%s: the EP belongs to another IA",
				 what);
		goto err_put_ia;
	}
	ret = psp_check(ia->ia, sid, cr_evd, what, &evd);
	if (ret)
		goto err_put_ia;
	psp = psp_alloc(attr, rsp_ep, &a);
	if (!psp) {
		ret = rapt__fail(RAPT_ENOMEM, "%s: out of memory", what);
		goto err_put_evd;
	}
	psp->cr_evd = (struct rapt_core_evd *)evd;
	/* The provider may raise CRs before psp_create returns: they read
	 * the service id under the lock (for "any", nobody can know the
	 * port before we return it, so no CR can name it yet), and a
	 * decision on one waits for psp_ready(). */
	psp->info.service_id = sid;
	ret = rapt__obj_reserve(&psp->obj, cls, ia, ia->ia);
	if (ret)
		goto err_free;
	RAPT_NOCANCEL(ret = rapt__ops(ia)->psp_create(ia->prov,
						      (struct rapt_core_psp *)psp,
						      sid, &a, evd->prov,
						      &bound, &ppsp));
	if (ret) {
		rapt__fail(ret, "provider could not listen on service id %llu: %s",
			   (unsigned long long)sid, rapt_strerror(ret));
		rapt__obj_unregister(&psp->obj);	/* puts the IA */
		psp_release(psp);
		rapt__obj_put(evd);
		return ret;
	}
	psp_ready(psp, ppsp, bound);
	rapt__obj_publish(&psp->obj);
	*out = psp;
	return 0;

err_free:
	psp_release(psp);
err_put_evd:
	rapt__obj_put(evd);
err_put_ia:
	rapt__obj_put(ia);
	return ret;
}

RAPT_API int rapt_psp_create(struct rapt_ia *ia_handle, uint64_t sid,
			     struct rapt_evd *cr_evd,
			     const struct rapt_psp_attr *attr,
			     struct rapt_psp **out)
{
	struct rapt_core_psp *psp;
	int ret;

	if (!out)
		return rapt__fail(RAPT_EINVAL, "rapt_psp_create: NULL output");
	if (attr && attr->flags)
		return rapt__fail(RAPT_EINVAL, "rapt_psp_create: flags must be 0");
	ret = rapt__psp_open(ia_handle, sid, cr_evd, attr, NULL,
			     "rapt_psp_create", &psp);
	if (!ret)
		*out = rapt__obj_handle(&psp->obj);
	return ret;
}

RAPT_API int rapt_psp_query(struct rapt_psp *handle, struct rapt_psp_info *info,
			    size_t size)
{
	struct rapt_core_psp *psp;
	struct rapt_psp_info i;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_PSP, &o);
	if (ret)
		return ret;
	psp = (struct rapt_core_psp *)o;
	pthread_mutex_lock(&psp->lock);
	i = psp->info;
	pthread_mutex_unlock(&psp->lock);
	rapt__obj_put(o);
	if (!info || !size)
		return rapt__fail(RAPT_EINVAL, "rapt_psp_query: no output");
	memcpy(info, &i, RAPT_MIN(size, sizeof(i)));
	return 0;
}

/*
 * Stop admitting requests; RAPT_EBUSY if some were admitted already (a CR
 * on its way to the consumer holds a backlog slot before it is counted as
 * a user).
 */
static int psp_close(struct rapt_core_psp *psp)
{
	uint32_t pending;

	pthread_mutex_lock(&psp->lock);
	pending = psp->info.pending_crs;
	if (!pending)
		psp->closing = true;
	pthread_mutex_unlock(&psp->lock);
	if (pending)
		return rapt__fail(RAPT_EBUSY,
				  "PSP has %u undecided CRs: accept or reject them first",
				  pending);
	return 0;
}

int rapt__psp_destroy(const void *handle, uint32_t cls,
		      struct rapt_core_ep **rsp_ep)
{
	struct rapt_core_psp *psp;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_kill(handle, cls, "undecided CRs or calls", &o);
	if (ret)
		return ret;
	psp = (struct rapt_core_psp *)o;
	ret = psp_close(psp);
	if (ret)
		goto err_revive;
	/* From here the provider's requests are refused as BUSY. */
	RAPT_NOCANCEL(ret = rapt__ops(o)->psp_free(o->prov));
	if (ret) {
		pthread_mutex_lock(&psp->lock);
		psp->closing = false;
		pthread_mutex_unlock(&psp->lock);
		rapt__fail(ret, "provider could not stop listening: %s",
			   rapt_strerror(ret));
		goto err_revive;
	}
	rapt__obj_put((struct rapt_obj *)psp->cr_evd);
	if (rsp_ep)
		*rsp_ep = psp->rsp_ep;	/* no CR is left to take it */
	rapt__obj_unregister(o);
	psp_release(psp);
	return 0;

err_revive:
	rapt__obj_revive(o);
	return ret;
}

RAPT_API int rapt_psp_free(struct rapt_psp *handle)
{
	return rapt__psp_destroy(handle, RAPT_CLS_PSP, NULL);
}

RAPT_SDK int rapt_prov_psp_hs_begin(struct rapt_core_psp *psp)
{
	int ret = 0;

	pthread_mutex_lock(&psp->lock);
	if (psp->closing ||
	    psp->info.in_handshake >= psp->info.handshake_limit) {
		psp->info.busy_rejects++;
		ret = RAPT_EBUSY;
	} else {
		psp->info.in_handshake++;
	}
	pthread_mutex_unlock(&psp->lock);
	return ret;
}

RAPT_SDK void rapt_prov_psp_hs_end(struct rapt_core_psp *psp, int outcome)
{
	pthread_mutex_lock(&psp->lock);
	if (psp->info.in_handshake)
		psp->info.in_handshake--;
	if (outcome == RAPT_HS_TIMEOUT)
		psp->info.handshake_timeouts++;
	pthread_mutex_unlock(&psp->lock);
}

RAPT_SDK uint32_t rapt_prov_psp_hs_timeout_ms(struct rapt_core_psp *psp)
{
	return psp->info.handshake_timeout_ms;
}

/* Take a backlog slot; RAPT_EBUSY (counted) when there is none. */
int rapt__psp_admit(struct rapt_core_psp *psp)
{
	int ret = 0;

	pthread_mutex_lock(&psp->lock);
	if (psp->closing || psp->spent ||
	    psp->info.pending_crs >= psp->info.backlog) {
		psp->info.busy_rejects++;
		ret = RAPT_EBUSY;
	} else {
		psp->info.pending_crs++;
		psp->spent = psp->one_shot;
	}
	pthread_mutex_unlock(&psp->lock);
	return ret;
}

/* An admitted request never became a CR: an RSP may take another. */
void rapt__psp_unadmit(struct rapt_core_psp *psp)
{
	pthread_mutex_lock(&psp->lock);
	psp->info.pending_crs--;
	psp->spent = false;
	pthread_mutex_unlock(&psp->lock);
}

/* Give a backlog slot back; @outcome: 1 accepted, -1 rejected, 0 neither. */
void rapt__psp_release(struct rapt_core_psp *psp, int outcome)
{
	pthread_mutex_lock(&psp->lock);
	psp->info.pending_crs--;
	if (outcome > 0)
		psp->info.accepted++;
	else if (outcome < 0)
		psp->info.rejected++;
	pthread_mutex_unlock(&psp->lock);
}
