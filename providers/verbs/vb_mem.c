/* SPDX-License-Identifier: MIT */
/*
 * verbs layer: a PZ is a protection domain, an LMR a memory region.
 *
 * Rights map one to one, except that verbs wants local write with remote
 * write (ibv_reg_mr(3)): an LMR with RAPT_MEM_REMOTE_WRITE is registered
 * with IBV_ACCESS_LOCAL_WRITE too.  The kernel pins the pages with the
 * rights asked for, so memory that is not mapped, or not writable when
 * write access is asked, is refused here, synchronously.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

int vb_pz_create(void *pia, void **ppz)
{
	struct vb_ia *ia = pia;
	struct vb_pz *pz = calloc(1, sizeof(*pz));

	if (!pz)
		return RAPT_ENOMEM;
	pz->ia = ia;
	pz->pd = ibv_alloc_pd(ia->ctx);
	if (!pz->pd) {
		int err = errno;

		rapt_prov_set_error("%s: ibv_alloc_pd: %s", vb_tp->name,
				    strerror(err));
		free(pz);
		return rapt_errno_status(err);
	}
	*ppz = pz;
	return 0;
}

int vb_pz_free(void *ppz)
{
	struct vb_pz *pz = ppz;
	int err;

	err = ibv_dealloc_pd(pz->pd);
	if (err) {
		vb_err("ibv_dealloc_pd: %s", strerror(err));
		return RAPT_EBUSY;
	}
	free(pz);
	return 0;
}

/**
 * vb_small_mr - a small zeroed buffer of the provider's own, registered
 * @pz: its PZ
 * @bytes: its size, a power of two (it is aligned to it)
 * @access: ibv_reg_mr()'s flags
 * @what: what it is for, for the error message
 * @buf: set to the buffer (NULL on failure)
 * @mr: set to its registration
 *
 * Return: 0, RAPT_ENOMEM, or the registration's error (the reason set).
 */
int vb_small_mr(struct vb_pz *pz, size_t bytes, int access,
		const char *what, void **buf, struct ibv_mr **mr)
{
	int err;

	*buf = aligned_alloc(bytes, bytes);
	if (!*buf)
		return RAPT_ENOMEM;
	memset(*buf, 0, bytes);
	*mr = ibv_reg_mr(pz->pd, *buf, bytes, access);
	if (!*mr) {
		err = errno;
		rapt_prov_set_error("%s: ibv_reg_mr of %s: %s", vb_tp->name,
				    what, strerror(err));
		free(*buf);
		*buf = NULL;
		return rapt_errno_status(err);
	}
	return 0;
}

int vb_access_flags(uint32_t access)
{
	int f = 0;

	if (access & RAPT_MEM_LOCAL_WRITE)
		f |= IBV_ACCESS_LOCAL_WRITE;
	if (access & RAPT_MEM_REMOTE_READ)
		f |= IBV_ACCESS_REMOTE_READ;
	if (access & RAPT_MEM_REMOTE_WRITE)
		f |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	return f;
}

int vb_lmr_create(void *pia, void *ppz, void *addr, size_t length,
		  uint32_t access, struct rapt_lmr_info *info, void **plmr)
{
	struct vb_pz *pz = ppz;
	struct vb_lmr *lmr;
	struct ibv_mr *mr;
	int err, f = vb_access_flags(access);

	lmr = calloc(1, sizeof(*lmr));
	if (!lmr)
		return RAPT_ENOMEM;
	mr = ibv_reg_mr(pz->pd, addr, length, f);
	if (!mr) {
		free(lmr);
		err = errno;
		if (err == EFAULT || err == EACCES || err == EPERM) {
			rapt_prov_set_error("%s: %zu bytes at %p cannot be registered with the rights asked for (not mapped, or not writable): ibv_reg_mr: %s",
					    vb_tp->name, length, addr,
					    strerror(err));
			return RAPT_EACCES;
		}
		rapt_prov_set_error("%s: ibv_reg_mr of %zu bytes at %p: %s%s",
				    vb_tp->name, length, addr, strerror(err),
				    err == ENOMEM ?
				    " (RLIMIT_MEMLOCK too low?)" : "");
		return rapt_errno_status(err);
	}
	info->lkey = mr->lkey;
	info->rkey = mr->rkey;
	info->raddr = (uintptr_t)addr;
	lmr->mr = mr;
	*plmr = lmr;
	return 0;
}

int vb_lmr_free(void *plmr)
{
	struct vb_lmr *lmr = plmr;
	int err;

	if (atomic_load(&lmr->nbound)) {
		rapt_prov_set_error("%s: %u memory windows are bound over the LMR",
				    vb_tp->name, atomic_load(&lmr->nbound));
		return RAPT_EBUSY;
	}
	err = ibv_dereg_mr(lmr->mr);
	if (err) {
		vb_err("ibv_dereg_mr: %s", strerror(err));
		return rapt_errno_status(err);
	}
	free(lmr);
	return 0;
}
