// SPDX-License-Identifier: MIT
/*
 * Connection management: PSP and RSP (listeners on a conn qual, which is
 * rapt's service id) and CR (a request: its private data is copied into
 * the wrapper when the CR_ARRIVAL event is translated, so dat_cr_query()
 * reads it whatever rapt does with its own copy).
 */
#include <stdlib.h>
#include <string.h>

#include "rdat.h"

/* Where quals outside the range fold to: above the privileged ports and
 * below Linux's ephemeral ones, so that a folded listener does not meet a
 * port some connection of this host happens to use. */
#define RDAT_FOLD_MIN 1024
#define RDAT_FOLD_MAX 32767

/**
 * rdat_qual - the rapt service id of a DAT conn qual
 * @ia: the IA (its service-id range)
 * @qual: the consumer's 64-bit conn qual
 *
 * A qual inside the provider's range is the service id itself (on tcp,
 * the TCP port).  One outside it is folded into the range, the same way
 * on both sides, as uDAPL's rdma_cm provider folds quals above 16 bits
 * into its port space: two quals may then meet in one service id, and
 * the second listener gets DAT_CONN_QUAL_IN_USE.
 *
 * Return: the service id.
 */
uint64_t rdat_qual(const struct rdat_ia *ia, DAT_CONN_QUAL qual)
{
	uint64_t lo = ia->attr.service_id_min, hi = ia->attr.service_id_max;

	if ((qual >= lo && qual <= hi) || hi < lo)
		return qual;
	if (lo < RDAT_FOLD_MIN && hi >= RDAT_FOLD_MIN)
		lo = RDAT_FOLD_MIN;
	if (hi > RDAT_FOLD_MAX && lo <= RDAT_FOLD_MAX)
		hi = RDAT_FOLD_MAX;
	if (hi - lo == UINT64_MAX)
		return qual;
	return lo + qual % (hi - lo + 1);
}

/**
 * rdat_cr_wrap - the DAT CR of a rapt CR that just arrived
 * @ia: its IA
 * @h: the rapt CR
 *
 * Return: the wrapper, or NULL (no memory, or the CR is already gone).
 */
struct rdat_cr *rdat_cr_wrap(struct rdat_ia *ia, struct rapt_cr *h)
{
	struct rapt_cr_info info;
	struct rdat_cr *cr;

	if (rapt_cr_query(h, &info, sizeof(info)))
		return NULL;
	cr = rdat_obj_new(sizeof(*cr) + info.pdata_len, DAT_HANDLE_TYPE_CR,
			  ia, ia->o.prov);
	if (!cr)
		return NULL;
	rdat_obj_bind(&cr->o, h);
	cr->qual = info.service_id;
	cr->remote_addr = info.remote_addr;
	cr->pdata_len = (DAT_COUNT)info.pdata_len;
	if (info.pdata_len)
		memcpy(cr->pdata, info.pdata, info.pdata_len);
	if (info.rsp) {
		struct rdat_rsp *rsp = rdat_from_rapt(info.rsp);

		cr->ep = rsp ? rsp->ep : NULL;
	} else {
		struct rdat_psp *psp = rdat_from_rapt(info.psp);

		if (psp && psp->flags == DAT_PSP_PROVIDER_FLAG)
			cr->ep = rdat_ep_tentative(ia);
	}
	return cr;
}

DAT_RETURN rdat_cr_query(DAT_CR_HANDLE h, DAT_CR_PARAM_MASK mask,
			 DAT_CR_PARAM *p)
{
	struct rdat_cr *cr = rdat_get(h, DAT_HANDLE_TYPE_CR);

	if (!cr)
		return rdat_bad(DAT_HANDLE_TYPE_CR);
	if (!p)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	p->remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&cr->remote_addr;
	p->remote_port_qual = rdat_port(&cr->remote_addr);
	p->private_data_size = cr->pdata_len;
	p->private_data = cr->pdata_len ? cr->pdata : NULL;
	p->local_ep_handle = cr->ep;
	return DAT_SUCCESS;
}

/* A decided CR is gone in rapt: drop its wrapper too. */
static DAT_RETURN rdat_cr_done(struct rdat_cr *cr, int rc)
{
	if (!rc || rc == RAPT_ENOTCONN)
		rdat_obj_del(&cr->o);
	return rdat_status(rc);
}

DAT_RETURN rdat_cr_accept(DAT_CR_HANDLE h, DAT_EP_HANDLE eph, DAT_COUNT len,
			  const DAT_PVOID pdata)
{
	struct rdat_cr *cr = rdat_get(h, DAT_HANDLE_TYPE_CR);
	struct rdat_ep *ep;
	int rc;

	if (!cr)
		return rdat_bad(DAT_HANDLE_TYPE_CR);
	if (!eph)
		eph = cr->ep;
	ep = rdat_get(eph, DAT_HANDLE_TYPE_EP);
	if (!ep)
		return rdat_bad(DAT_HANDLE_TYPE_EP);
	if (!ep->o.h)		/* tentative, not given a PZ and EVDs yet */
		return RDAT_ERR(DAT_INVALID_STATE,
				DAT_INVALID_STATE_EP_NOTREADY);
	if (len < 0 || (len && !pdata))
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	rc = rapt_cr_accept(cr->o.h, ep->o.h, pdata, (size_t)len);
	if (!rc) {
		ep->remote_addr = cr->remote_addr;
		ep->remote_qual = rdat_port(&cr->remote_addr);
		ep->tentative = 0;
	}
	return rdat_cr_done(cr, rc);
}

DAT_RETURN rdat_cr_reject(DAT_CR_HANDLE h, DAT_COUNT len,
			  const DAT_PVOID pdata)
{
	struct rdat_cr *cr = rdat_get(h, DAT_HANDLE_TYPE_CR);
	struct rdat_ep *ep;
	int rc;

	if (!cr)
		return rdat_bad(DAT_HANDLE_TYPE_CR);
	if (len < 0 || (len && !pdata))
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	ep = rdat_get(cr->ep, DAT_HANDLE_TYPE_EP);
	rc = rapt_cr_reject(cr->o.h, pdata, (size_t)len);
	/* The EP the provider made for it goes with it. */
	if ((!rc || rc == RAPT_ENOTCONN) && ep && ep->tentative)
		rdat_ep_free(ep);
	return rdat_cr_done(cr, rc);
}

static DAT_RETURN rdat_psp_make(DAT_IA_HANDLE iah, uint64_t qual,
				DAT_EVD_HANDLE evdh, DAT_PSP_FLAGS flags,
				DAT_PSP_HANDLE *out, DAT_CONN_QUAL *got)
{
	struct rdat_ia *ia = rdat_get(iah, DAT_HANDLE_TYPE_IA);
	struct rdat_evd *evd = rdat_get(evdh, DAT_HANDLE_TYPE_EVD);
	struct rapt_psp_info info;
	struct rdat_psp *psp;
	struct rapt_psp *h;
	int rc;

	if (!ia)
		return rdat_bad(DAT_HANDLE_TYPE_IA);
	if (!evd)
		return RDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
	if (!out)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	rc = rapt_psp_create(ia->o.h, qual == RAPT_SERVICE_ID_ANY ? qual :
			     rdat_qual(ia, qual), evd->o.h, NULL, &h);
	if (!rc && (rc = rapt_psp_query(h, &info, sizeof(info))))
		rapt_psp_free(h);
	if (rc)
		return rdat_status(rc);
	psp = rdat_wrap(ia, sizeof(*psp), DAT_HANDLE_TYPE_PSP, h);
	if (!psp)
		return RDAT_NOMEM;
	psp->qual = qual == RAPT_SERVICE_ID_ANY ? info.service_id : qual;
	psp->evd = evd;
	psp->flags = flags;
	if (got)
		*got = psp->qual;
	*out = psp;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_psp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual,
			   DAT_EVD_HANDLE evd, DAT_PSP_FLAGS flags,
			   DAT_PSP_HANDLE *out)
{
	if (qual == RAPT_SERVICE_ID_ANY)	/* rapt's "any" is not a qual */
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	return rdat_psp_make(ia, qual, evd, flags, out, NULL);
}

DAT_RETURN rdat_psp_create_any(DAT_IA_HANDLE ia, DAT_CONN_QUAL *qual,
			       DAT_EVD_HANDLE evd, DAT_PSP_FLAGS flags,
			       DAT_PSP_HANDLE *out)
{
	if (!qual)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	return rdat_psp_make(ia, RAPT_SERVICE_ID_ANY, evd, flags, out, qual);
}

DAT_RETURN rdat_psp_query(DAT_PSP_HANDLE h, DAT_PSP_PARAM_MASK mask,
			  DAT_PSP_PARAM *p)
{
	struct rdat_psp *psp = rdat_get(h, DAT_HANDLE_TYPE_PSP);

	if (!psp)
		return rdat_bad(DAT_HANDLE_TYPE_PSP);
	if (!p)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	p->ia_handle = psp->o.ia;
	p->conn_qual = psp->qual;
	p->evd_handle = psp->evd;
	p->psp_flags = psp->flags;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_psp_free(DAT_PSP_HANDLE h)
{
	return rdat_free(h, DAT_HANDLE_TYPE_PSP);
}

DAT_RETURN rdat_rsp_create(DAT_IA_HANDLE iah, DAT_CONN_QUAL qual,
			   DAT_EP_HANDLE eph, DAT_EVD_HANDLE evdh,
			   DAT_RSP_HANDLE *out)
{
	struct rdat_ia *ia = rdat_get(iah, DAT_HANDLE_TYPE_IA);
	struct rdat_ep *ep = rdat_get(eph, DAT_HANDLE_TYPE_EP);
	struct rdat_evd *evd = rdat_get(evdh, DAT_HANDLE_TYPE_EVD);
	struct rdat_rsp *rsp;
	struct rapt_rsp *h;
	int rc;

	if (!ia)
		return rdat_bad(DAT_HANDLE_TYPE_IA);
	if (!ep)
		return rdat_bad(DAT_HANDLE_TYPE_EP);
	if (!evd)
		return RDAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
	if (!out)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	rc = rapt_rsp_create(ia->o.h, rdat_qual(ia, qual), ep->o.h, evd->o.h,
			     &h);
	if (rc)
		return rdat_status(rc);
	rsp = rdat_wrap(ia, sizeof(*rsp), DAT_HANDLE_TYPE_RSP, h);
	if (!rsp)
		return RDAT_NOMEM;
	rsp->qual = qual;
	rsp->evd = evd;
	rsp->ep = ep;
	*out = rsp;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_rsp_query(DAT_RSP_HANDLE h, DAT_RSP_PARAM_MASK mask,
			  DAT_RSP_PARAM *p)
{
	struct rdat_rsp *rsp = rdat_get(h, DAT_HANDLE_TYPE_RSP);

	if (!rsp)
		return rdat_bad(DAT_HANDLE_TYPE_RSP);
	if (!p)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	p->ia_handle = rsp->o.ia;
	p->conn_qual = rsp->qual;
	p->evd_handle = rsp->evd;
	p->ep_handle = rsp->ep;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_rsp_free(DAT_RSP_HANDLE h)
{
	return rdat_free(h, DAT_HANDLE_TYPE_RSP);
}
