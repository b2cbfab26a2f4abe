// SPDX-License-Identifier: MIT
/*
 * PZ and LMR.  An LMR's lmr_context is rapt's lkey and its rmr_context
 * rapt's rkey; its registered address is the virtual address, which is
 * what a DAT peer names in an RMR triplet (DAT_VA_TYPE_VA).
 */
#include <stdlib.h>
#include <string.h>

#include "rdat.h"

DAT_RETURN rdat_pz_create(DAT_IA_HANDLE iah, DAT_PZ_HANDLE *out)
{
	struct rdat_ia *ia = rdat_get(iah, DAT_HANDLE_TYPE_IA);
	struct rdat_pz *pz;
	struct rapt_pz *h;
	int rc;

	if (!ia)
		return rdat_bad(DAT_HANDLE_TYPE_IA);
	if (!out)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	rc = rapt_pz_create(ia->o.h, &h);
	if (rc)
		return rdat_status(rc);
	pz = rdat_wrap(ia, sizeof(*pz), DAT_HANDLE_TYPE_PZ, h);
	if (!pz)
		return RDAT_NOMEM;
	*out = pz;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_pz_query(DAT_PZ_HANDLE h, DAT_PZ_PARAM_MASK mask,
			 DAT_PZ_PARAM *p)
{
	struct rdat_pz *pz = rdat_get(h, DAT_HANDLE_TYPE_PZ);

	if (!pz)
		return rdat_bad(DAT_HANDLE_TYPE_PZ);
	if (!p)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	p->ia_handle = pz->o.ia;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_pz_free(DAT_PZ_HANDLE h)
{
	return rdat_free(h, DAT_HANDLE_TYPE_PZ);
}

static unsigned int rdat_access(DAT_MEM_PRIV_FLAGS priv)
{
	unsigned int a = 0;

	if (priv & DAT_MEM_PRIV_LOCAL_WRITE_FLAG)
		a |= RAPT_MEM_LOCAL_WRITE;
	if (priv & DAT_MEM_PRIV_REMOTE_READ_FLAG)
		a |= RAPT_MEM_REMOTE_READ;
	if (priv & DAT_MEM_PRIV_REMOTE_WRITE_FLAG)
		a |= RAPT_MEM_REMOTE_WRITE;
	return a;
}

/* The virtual address a region description names, or NULL. */
static void *rdat_region_va(DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION desc)
{
	struct rdat_lmr *src;

	if (type == DAT_MEM_TYPE_VIRTUAL)
		return desc.for_va;
	/* DAT_MEM_TYPE_LMR: the same memory as an existing LMR */
	src = rdat_get(desc.for_lmr_handle, DAT_HANDLE_TYPE_LMR);
	return src ? src->param.region_desc.for_va : NULL;
}

static DAT_RETURN rdat_lmr_check(DAT_MEM_TYPE type, DAT_VA_TYPE va_type,
				 DAT_LMR_HANDLE *out)
{
	if (type == DAT_MEM_TYPE_SHARED_VIRTUAL)
		return RDAT_NOTIMPL;
	if (type != DAT_MEM_TYPE_VIRTUAL && type != DAT_MEM_TYPE_LMR)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (va_type != DAT_VA_TYPE_VA)	/* zero-based: not in rapt */
		return RDAT_NOMODEL;
	if (!out)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG8);
	return DAT_SUCCESS;
}

DAT_RETURN rdat_lmr_create(DAT_IA_HANDLE iah, DAT_MEM_TYPE type,
			   DAT_REGION_DESCRIPTION desc, DAT_VLEN len,
			   DAT_PZ_HANDLE pzh, DAT_MEM_PRIV_FLAGS priv,
			   DAT_VA_TYPE va_type, DAT_LMR_HANDLE *out,
			   DAT_LMR_CONTEXT *lctx, DAT_RMR_CONTEXT *rctx,
			   DAT_VLEN *reg_len, DAT_VADDR *reg_addr)
{
	struct rdat_ia *ia = rdat_get(iah, DAT_HANDLE_TYPE_IA);
	struct rdat_pz *pz = rdat_get(pzh, DAT_HANDLE_TYPE_PZ);
	struct rapt_lmr_info info;
	struct rdat_lmr *lmr;
	struct rapt_lmr *h;
	DAT_RETURN ret;
	void *va;
	int rc;

	if (!ia)
		return rdat_bad(DAT_HANDLE_TYPE_IA);
	if (!pz || pz->o.ia != ia)
		return rdat_bad(DAT_HANDLE_TYPE_PZ);
	if (!len)
		return RDAT_ERR(DAT_LENGTH_ERROR, 0);
	ret = rdat_lmr_check(type, va_type, out);
	if (ret != DAT_SUCCESS)
		return ret;
	va = rdat_region_va(type, desc);
	if (!va)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	rc = rapt_lmr_create(pz->o.h, va, (size_t)len, rdat_access(priv), &h,
			     &info);
	if (rc)
		return rdat_status(rc);
	lmr = rdat_wrap(ia, sizeof(*lmr), DAT_HANDLE_TYPE_LMR, h);
	if (!lmr)
		return RDAT_NOMEM;
	lmr->param.ia_handle = ia;
	lmr->param.mem_type = type;
	lmr->param.region_desc.for_va = va;
	lmr->param.length = len;
	lmr->param.pz_handle = pz;
	lmr->param.mem_priv = priv;
	lmr->param.va_type = va_type;
	lmr->param.lmr_context = info.lkey;
	lmr->param.rmr_context = info.rkey;
	lmr->param.registered_size = info.length;
	lmr->param.registered_address = (DAT_VADDR)(uintptr_t)va;
	*out = lmr;
	if (lctx)
		*lctx = info.lkey;
	if (rctx)
		*rctx = info.rkey;
	if (reg_len)
		*reg_len = info.length;
	if (reg_addr)
		*reg_addr = lmr->param.registered_address;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_lmr_query(DAT_LMR_HANDLE h, DAT_LMR_PARAM_MASK mask,
			  DAT_LMR_PARAM *p)
{
	struct rdat_lmr *lmr = rdat_get(h, DAT_HANDLE_TYPE_LMR);

	if (!lmr)
		return rdat_bad(DAT_HANDLE_TYPE_LMR);
	if (!p)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	*p = lmr->param;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_lmr_free(DAT_LMR_HANDLE h)
{
	return rdat_free(h, DAT_HANDLE_TYPE_LMR);
}

/*
 * rapt's memory is coherent for RDMA (lmr_sync_req is FALSE), so a sync
 * has nothing to do; the spec makes it a no-op then.
 */
DAT_RETURN rdat_lmr_sync_rdma(DAT_IA_HANDLE iah, const DAT_LMR_TRIPLET *segs,
			      DAT_VLEN n)
{
	if (!rdat_get(iah, DAT_HANDLE_TYPE_IA))
		return rdat_bad(DAT_HANDLE_TYPE_IA);
	if (n && !segs)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	return DAT_SUCCESS;
}
