// SPDX-License-Identifier: MIT
/*
 * RMR: DAT's memory windows on rapt's (RAPT_CAP_RMR, API 1.3).  An IA
 * without the capability answers DAT_NOT_IMPLEMENTED, as before rapt had
 * them.
 *
 * rapt's windows are PZ-scoped (any EP of the PZ reaches memory through
 * one), so dat_rmr_create() makes DAT_RMR_SCOPE_PZ RMRs and
 * dat_rmr_create_for_ep() is a model rapt does not have.  An RMR's
 * rmr_context is the window's rkey; a bind's LMR triplet names the
 * window's first byte by virtual address (DAT_VA_TYPE_VA), as rapt's
 * raddr counts it.
 *
 * A bind completes as a rapt DTO event that carries one 64-bit cookie and
 * no window, while DAT's event names the RMR and the consumer's cookie.
 * So each bind leaves a record here, keyed by an id that is never reused,
 * and the id is the cookie rapt carries; rdat_evd.c turns the completion
 * back into the RMR and cookie with rdat_rmr_done().  A record lives
 * until its completion is translated or its RMR is freed, so a
 * completion that outlives its RMR (or a forged id) finds none and is
 * dropped, as events of freed EPs are.
 */
#include <stdlib.h>
#include <string.h>

#include "rdat.h"

/*
 * struct rdat_bind - a bind or unbind whose completion is still to come
 * @id: the rapt cookie of the work request
 * @rmr: the rapt window (a rapt handle: it goes stale, never dangles)
 * @cookie: the consumer's DAT_RMR_COOKIE
 * @quiet: DAT_COMPLETION_SUPPRESS_FLAG: a successful completion is
 *         dropped here (rapt is always asked for one, so that every
 *         record has an end)
 * @next: list of all records
 */
struct rdat_bind {
	uint64_t id;
	struct rapt_rmr *rmr;
	DAT_RMR_COOKIE cookie;
	int quiet;
	struct rdat_bind *next;
};

static pthread_mutex_t rdat_bind_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdat_bind *rdat_binds;
static uint64_t rdat_bind_seq;

static struct rdat_bind *rdat_bind_new(struct rdat_rmr *rmr,
				       DAT_RMR_COOKIE cookie, int quiet)
{
	struct rdat_bind *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->rmr = rmr->o.h;
	b->cookie = cookie;
	b->quiet = quiet;
	pthread_mutex_lock(&rdat_bind_lock);
	b->id = ++rdat_bind_seq;
	b->next = rdat_binds;
	rdat_binds = b;
	pthread_mutex_unlock(&rdat_bind_lock);
	return b;
}

/* Unlink the record of @id (0: every record of @rmr); the caller frees. */
static struct rdat_bind *rdat_bind_take(uint64_t id, struct rapt_rmr *rmr)
{
	struct rdat_bind **pp, *b;

	pthread_mutex_lock(&rdat_bind_lock);
	for (pp = &rdat_binds; (b = *pp); pp = &b->next) {
		if (id ? b->id == id : b->rmr == rmr) {
			*pp = b->next;
			break;
		}
	}
	pthread_mutex_unlock(&rdat_bind_lock);
	return b;
}

/**
 * rdat_rmr_done - the RMR and cookie of a bind's completion
 * @id: the rapt cookie of the completion (RAPT_OP_RMR_BIND or _UNBIND)
 * @rmr: output, the DAT RMR
 * @cookie: output, the consumer's cookie
 * @quiet: output, whether the consumer asked for no successful completion
 *
 * The bind's record is used up.
 *
 * Return: 0, or -1 when no live RMR is behind @id (drop the event).
 */
int rdat_rmr_done(uint64_t id, DAT_RMR_HANDLE *rmr, DAT_RMR_COOKIE *cookie,
		  int *quiet)
{
	struct rdat_bind *b = id ? rdat_bind_take(id, NULL) : NULL;

	if (!b)
		return -1;
	*rmr = rdat_from_rapt(b->rmr);
	*cookie = b->cookie;
	*quiet = b->quiet;
	free(b);
	return *rmr ? 0 : -1;
}

/* The PZ of a create, and whether its IA has windows at all. */
static DAT_RETURN rdat_rmr_pz(DAT_PZ_HANDLE pzh, DAT_RMR_HANDLE *out,
			      struct rdat_pz **pz)
{
	*pz = rdat_get(pzh, DAT_HANDLE_TYPE_PZ);
	if (!*pz)
		return rdat_bad(DAT_HANDLE_TYPE_PZ);
	if (!((*pz)->o.ia->attr.caps & RAPT_CAP_RMR))
		return RDAT_NOTIMPL;
	if (!out)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	return DAT_SUCCESS;
}

DAT_RETURN rdat_rmr_create(DAT_PZ_HANDLE pzh, DAT_RMR_HANDLE *out)
{
	struct rdat_rmr *rmr;
	struct rapt_rmr *h;
	struct rdat_pz *pz;
	DAT_RETURN ret;
	int rc;

	ret = rdat_rmr_pz(pzh, out, &pz);
	if (ret != DAT_SUCCESS)
		return ret;
	rc = rapt_rmr_create(pz->o.h, &h);
	if (rc)
		return rdat_status(rc);
	rmr = rdat_wrap(pz->o.ia, sizeof(*rmr), DAT_HANDLE_TYPE_RMR, h);
	if (!rmr)
		return RDAT_NOMEM;
	rmr->pz = pz;
	*out = rmr;
	return DAT_SUCCESS;
}

/* DAT_RMR_SCOPE_EP: a window only one EP reaches through; rapt's serve
 * the whole PZ. */
DAT_RETURN rdat_rmr_create_for_ep(DAT_PZ_HANDLE pzh, DAT_RMR_HANDLE *out)
{
	struct rdat_pz *pz;
	DAT_RETURN ret = rdat_rmr_pz(pzh, out, &pz);

	return ret != DAT_SUCCESS ? ret : RDAT_NOMODEL;
}

static DAT_MEM_PRIV_FLAGS rdat_rmr_priv(unsigned int access)
{
	DAT_MEM_PRIV_FLAGS p = DAT_MEM_PRIV_NONE_FLAG;

	if (access & RAPT_MEM_REMOTE_READ)
		p |= DAT_MEM_PRIV_REMOTE_READ_FLAG;
	if (access & RAPT_MEM_REMOTE_WRITE)
		p |= DAT_MEM_PRIV_REMOTE_WRITE_FLAG;
	return p;
}

DAT_RETURN rdat_rmr_query(DAT_RMR_HANDLE h, DAT_RMR_PARAM_MASK mask,
			  DAT_RMR_PARAM *p)
{
	struct rdat_rmr *rmr = rdat_get(h, DAT_HANDLE_TYPE_RMR);
	struct rapt_rmr_info info;
	struct rdat_lmr *lmr;
	int rc;

	if (!rmr)
		return rdat_bad(DAT_HANDLE_TYPE_RMR);
	if (!p)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	rc = rapt_rmr_query(rmr->o.h, &info, sizeof(info));
	if (rc)
		return rdat_status(rc);
	memset(p, 0, sizeof(*p));
	p->ia_handle = rmr->o.ia;
	p->pz_handle = rmr->pz;
	p->rmr_scope = DAT_RMR_SCOPE_PZ;
	p->va_type = DAT_VA_TYPE_VA;
	if (!info.rkey)		/* not bound: no triplet, no rights */
		return DAT_SUCCESS;
	lmr = rdat_from_rapt(info.lmr);
	p->lmr_triplet.lmr_context = lmr ? lmr->param.lmr_context : 0;
	p->lmr_triplet.virtual_address = info.raddr;
	p->lmr_triplet.segment_length = (DAT_SEG_LENGTH)info.length;
	p->mem_priv = rdat_rmr_priv(info.access);
	p->rmr_context = info.rkey;
	return DAT_SUCCESS;
}

/* A bind's LMR, triplet and rights, checked; the rapt rights out. */
static DAT_RETURN rdat_rmr_target(struct rdat_rmr *rmr, DAT_LMR_HANDLE lh,
				  const DAT_LMR_TRIPLET *t,
				  DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va,
				  struct rdat_lmr **lmr, unsigned int *access)
{
	*lmr = rdat_get(lh, DAT_HANDLE_TYPE_LMR);
	if (!*lmr || (*lmr)->o.ia != rmr->o.ia)
		return rdat_bad(DAT_HANDLE_TYPE_LMR);
	if (t->lmr_context != (*lmr)->param.lmr_context)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (priv & ~(DAT_MEM_PRIV_FLAGS)DAT_MEM_PRIV_ALL_FLAG)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	if (va != DAT_VA_TYPE_VA)	/* zero-based: not in rapt */
		return RDAT_NOMODEL;
	/* Local rights mean nothing for a window; the LMR has them. */
	*access = 0;
	if (priv & DAT_MEM_PRIV_REMOTE_READ_FLAG)
		*access |= RAPT_MEM_REMOTE_READ;
	if (priv & DAT_MEM_PRIV_REMOTE_WRITE_FLAG)
		*access |= RAPT_MEM_REMOTE_WRITE;
	return DAT_SUCCESS;
}

/* The EP a bind goes through: live, of the RMR's IA, configured. */
static DAT_RETURN rdat_rmr_ep(struct rdat_rmr *rmr, DAT_EP_HANDLE eh,
			      struct rdat_ep **ep)
{
	*ep = rdat_get(eh, DAT_HANDLE_TYPE_EP);
	if (!*ep || (*ep)->o.ia != rmr->o.ia)
		return rdat_bad(DAT_HANDLE_TYPE_EP);
	if (!(*ep)->o.h)	/* tentative: no rapt EP yet */
		return RDAT_ERR(DAT_INVALID_STATE,
				DAT_INVALID_STATE_EP_UNCONNECTED);
	return DAT_SUCCESS;
}

/*
 * DAT 2.0: a triplet of length 0 unbinds; the RMR's context is then 0,
 * as rapt_rmr_query() reports an unbound window's key.
 */
DAT_RETURN rdat_rmr_bind(DAT_RMR_HANDLE h, DAT_LMR_HANDLE lh,
			 const DAT_LMR_TRIPLET *t, DAT_MEM_PRIV_FLAGS priv,
			 DAT_VA_TYPE va, DAT_EP_HANDLE eh,
			 DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS cf,
			 DAT_RMR_CONTEXT *out)
{
	struct rdat_rmr *rmr = rdat_get(h, DAT_HANDLE_TYPE_RMR);
	unsigned int access = 0, f = 0;
	struct rdat_lmr *lmr = NULL;
	struct rdat_bind *b;
	struct rdat_ep *ep;
	uint32_t rkey = 0;
	DAT_RETURN ret;
	int rc;

	if (!rmr)
		return rdat_bad(DAT_HANDLE_TYPE_RMR);
	if (!t)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (t->segment_length && !out)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG9);
	ret = rdat_rmr_ep(rmr, eh, &ep);
	if (ret == DAT_SUCCESS && t->segment_length)
		ret = rdat_rmr_target(rmr, lh, t, priv, va, &lmr, &access);
	if (ret != DAT_SUCCESS)
		return ret;
	if (cf & DAT_COMPLETION_BARRIER_FENCE_FLAG)
		f |= RAPT_POST_FENCE;
	b = rdat_bind_new(rmr, cookie, !!(cf & DAT_COMPLETION_SUPPRESS_FLAG));
	if (!b)
		return RDAT_NOMEM;
	if (t->segment_length)
		rc = rapt_rmr_bind(rmr->o.h, ep->o.h, lmr->o.h,
				   t->virtual_address, t->segment_length,
				   access, b->id, f, &rkey);
	else
		rc = rapt_rmr_unbind(rmr->o.h, ep->o.h, b->id, f);
	if (rc) {	/* no completion will come */
		free(rdat_bind_take(b->id, NULL));
		return rdat_status(rc);
	}
	if (out)
		*out = rkey;
	return DAT_SUCCESS;
}

/* A bound RMR is unbound by its free (rapt_rmr_free()). */
DAT_RETURN rdat_rmr_free(DAT_RMR_HANDLE h)
{
	struct rdat_rmr *rmr = rdat_get(h, DAT_HANDLE_TYPE_RMR);
	struct rapt_rmr *rh = rmr ? rmr->o.h : NULL;
	DAT_RETURN ret = rdat_free(h, DAT_HANDLE_TYPE_RMR);
	struct rdat_bind *b;

	/* Binds whose completions never came: none will be translated. */
	while (ret == DAT_SUCCESS && (b = rdat_bind_take(0, rh)))
		free(b);
	return ret;
}
