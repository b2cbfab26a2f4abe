/* SPDX-License-Identifier: MIT */
/*
 * verbs layer: memory windows (API 1.3), each binding a registration of
 * exactly the window's bytes with exactly its rights.
 *
 * Why not ibv_alloc_mw().  rapt promises that a window's key gives only
 * what was bound: one byte outside the window, or a right not bound, is a
 * remote access error.  rxe has memory windows (type 1 and 2B), but it
 * checks an access through a window against the range of the MR under
 * it, not the window's own (Linux 6.1 rxe_resp.c check_rkey()): a write
 * one byte past the window lands.  siw has no windows at all.  A
 * registration of the window's range (ibv_reg_mr(), pinning pages the LMR
 * pins already) is checked byte for byte and right for right by every
 * device whose reads are checked (RAPT_CAP_READ_CHECK; siw serves reads
 * from any key, whatever its rights), belongs to the protection domain
 * (the peer may use the key on any EP of the PZ, as rapt promises) and
 * dies at once at ibv_dereg_mr().
 *
 * A bind registers the new range, then deregisters the old one: the new
 * key serves when rapt_rmr_bind() returns, the old one is dead.  Nothing
 * goes to the device's send queue, but the completion must come in order
 * with the EP's other sends: vb_ep_post_done() puts it in the send ring,
 * done, behind them.
 *
 * No peer can invalidate such a key with a Send with Invalidate on IB
 * (only windows and fast-registered MRs can be): windows are offered only
 * where RAPT_CAP_SEND_INVALIDATE is not, so rapt never promises it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

struct vb_rmr {
	struct vb_ia *ia;
	struct vb_pz *pz;
	pthread_mutex_t lock;		/* the binding */
	struct ibv_mr *mr;		/* the window's registration, or NULL */
	struct vb_lmr *lmr;		/* bound over, or NULL */
};

int vb_rmr_create(void *pia, void *ppz, void **prmr)
{
	struct vb_rmr *rmr;

	rmr = calloc(1, sizeof(*rmr));
	if (!rmr)
		return RAPT_ENOMEM;
	rmr->ia = pia;
	rmr->pz = ppz;
	pthread_mutex_init(&rmr->lock, NULL);
	*prmr = rmr;
	return 0;
}

/* Drop the window's registration (rmr->lock held, or the last user). */
static void rmr_unset(struct vb_rmr *rmr)
{
	int err;

	if (!rmr->mr)
		return;
	err = ibv_dereg_mr(rmr->mr);
	if (err)
		vb_err("ibv_dereg_mr of a window: %s", strerror(err));
	atomic_fetch_sub(&rmr->lmr->nbound, 1);
	rmr->mr = NULL;
	rmr->lmr = NULL;
}

int vb_rmr_free(void *prmr)
{
	struct vb_rmr *rmr = prmr;

	rmr_unset(rmr);
	pthread_mutex_destroy(&rmr->lock);
	free(rmr);
	return 0;
}

int vb_rmr_bind(void *pep, void *prmr, void *plmr, uint64_t addr,
		uint64_t length, uint32_t access, uint64_t cookie,
		uint32_t flags, uint32_t *rkey)
{
	struct vb_ep *ep = pep;
	struct vb_rmr *rmr = prmr;
	struct vb_lmr *lmr = plmr;
	struct ibv_mr *mr = NULL;
	int ret, err;

	pthread_mutex_lock(&rmr->lock);
	if (lmr) {
		mr = ibv_reg_mr(rmr->pz->pd, (void *)(uintptr_t)addr,
				(size_t)length, vb_access_flags(access));
		if (!mr) {
			err = errno;
			pthread_mutex_unlock(&rmr->lock);
			rapt_prov_set_error("%s: ibv_reg_mr of a window's %llu bytes: %s",
					    vb_tp->name,
					    (unsigned long long)length,
					    strerror(err));
			return err == ENOMEM ? RAPT_ENOMEM :
			       rapt_errno_status(err);
		}
	}
	ret = vb_ep_post_done(ep, lmr ? RAPT_OP_RMR_BIND : RAPT_OP_RMR_UNBIND,
			      cookie, flags);
	if (ret) {
		if (mr)
			ibv_dereg_mr(mr);
		pthread_mutex_unlock(&rmr->lock);
		return ret;
	}
	rmr_unset(rmr);
	if (mr) {
		rmr->mr = mr;
		rmr->lmr = lmr;
		atomic_fetch_add(&lmr->nbound, 1);
		*rkey = mr->rkey;
	}
	pthread_mutex_unlock(&rmr->lock);
	return 0;
}

int vb_rmr_query(void *prmr, uint32_t *rkey)
{
	struct vb_rmr *rmr = prmr;

	pthread_mutex_lock(&rmr->lock);
	*rkey = rmr->mr ? rmr->mr->rkey : 0;
	pthread_mutex_unlock(&rmr->lock);
	return 0;
}
