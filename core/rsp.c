/* SPDX-License-Identifier: MIT */
/*
 * RSP: a reserved service point, DAT's one-shot listener bound to one EP.
 *
 * The core builds it from what every provider already has: an RSP is a
 * PSP object (psp.c) of its own class, with a backlog of one, that admits
 * a single request in its life and refuses the rest as BUSY.  Its EP is
 * RESERVED from the create on, which keeps it from connecting, from being
 * accepted by another listener's CR, from being modified or reset; the
 * RSP holds a user of it, so it cannot be freed either.  The accept of
 * the RSP's CR (cr.c) hands the EP back to the consumer; the RSP's free
 * gives back an EP still reserved as UNCONNECTED.  No provider op is
 * involved beyond psp_create/psp_free, so every provider with listeners
 * has RSPs.
 */
#include "config.h"

#include <string.h>

#include "rapt_int.h"

/* Take the EP for an RSP: its user and its RESERVED state. */
static int rsp_reserve(struct rapt_ep *handle, struct rapt_core_ep **out)
{
	uint32_t st = RAPT_EP_UNCONNECTED;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_EP, &o);
	if (ret)
		return ret;
	if (!atomic_compare_exchange_strong(&((struct rapt_core_ep *)o)->state,
					    &st, RAPT_EP_RESERVED)) {
		rapt__obj_put(o);
		return rapt__fail(RAPT_ESTATE,
				  "rapt_rsp_create: EP is %s, not UNCONNECTED",
				  rapt_ep_state_name(st));
	}
	*out = (struct rapt_core_ep *)o;
	return 0;
}

/* Give an EP the RSP held back to the consumer, UNCONNECTED. */
static void rsp_unreserve(struct rapt_core_ep *ep)
{
	uint32_t st = RAPT_EP_RESERVED;

	atomic_compare_exchange_strong(&ep->state, &st, RAPT_EP_UNCONNECTED);
	rapt__obj_put(&ep->obj);
}

RAPT_API int rapt_rsp_create(struct rapt_ia *ia, uint64_t sid,
			     struct rapt_ep *ep_handle,
			     struct rapt_evd *cr_evd, struct rapt_rsp **out)
{
	struct rapt_core_ep *ep = NULL;
	struct rapt_core_psp *rsp;
	int ret;

	if (!out)
		return rapt__fail(RAPT_EINVAL, "rapt_rsp_create: NULL output");
	ret = rsp_reserve(ep_handle, &ep);
	if (ret)
		return ret;
	/* Reserved before the listener exists: its request may arrive, and
	 * be accepted, before rapt__psp_open() returns. */
	ret = rapt__psp_open(ia, sid, cr_evd, NULL, ep, "rapt_rsp_create",
			     &rsp);
	if (ret) {
		rsp_unreserve(ep);
		return ret;
	}
	*out = rapt__obj_handle(&rsp->obj);
	return 0;
}

RAPT_API int rapt_rsp_query(struct rapt_rsp *handle,
			    struct rapt_rsp_info *info, size_t size)
{
	struct rapt_core_psp *rsp;
	struct rapt_rsp_info i;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_RSP, &o);
	if (ret)
		return ret;
	rsp = (struct rapt_core_psp *)o;
	memset(&i, 0, sizeof(i));
	pthread_mutex_lock(&rsp->lock);
	i.service_id = rsp->info.service_id;
	i.ep = rsp->rsp_ep_handle;
	i.flags = rsp->spent ? RAPT_RSPI_SPENT : 0;
	i.pending_crs = rsp->info.pending_crs;
	i.busy_rejects = rsp->info.busy_rejects;
	pthread_mutex_unlock(&rsp->lock);
	rapt__obj_put(o);
	if (!info || !size)
		return rapt__fail(RAPT_EINVAL, "rapt_rsp_query: no output");
	memcpy(info, &i, RAPT_MIN(size, sizeof(i)));
	return 0;
}

RAPT_API int rapt_rsp_free(struct rapt_rsp *handle)
{
	struct rapt_core_ep *ep = NULL;
	int ret;

	ret = rapt__psp_destroy(handle, RAPT_CLS_RSP, &ep);
	if (ret)
		return ret;
	if (ep)
		rsp_unreserve(ep);
	return 0;
}
