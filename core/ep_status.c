/* SPDX-License-Identifier: MIT */
/*
 * EP status: the state plus whether receives and requests are still
 * outstanding (DAT's dat_ep_get_status "recv idle" / "request idle").
 * Only the provider knows what it has not completed yet.
 */
#include "config.h"

#include <string.h>

#include "rapt_int.h"

static int ep_status(struct rapt_core_ep *ep, struct rapt_ep_status *st)
{
	uint32_t recv = 0, req = 0;
	int ret;

	if (!(ep->obj.ia->attr.caps & RAPT_CAP_EP_STATUS))
		return rapt__fail(RAPT_ENOTSUP,
				  "rapt_ep_get_status: the provider does not count outstanding work (no RAPT_CAP_EP_STATUS)");
	memset(st, 0, sizeof(*st));
	st->state = atomic_load(&ep->state);
	RAPT_NOCANCEL(ret = ep->ops->ep_get_status(ep->obj.prov, &recv, &req));
	if (ret)
		return rapt__fail(ret, "provider could not read the EP's status: %s",
				  rapt_strerror(ret));
	st->recv_posted = recv;
	st->request_outstanding = req;
	if (!recv)
		st->flags |= RAPT_EPS_RECV_IDLE;
	if (!req)
		st->flags |= RAPT_EPS_REQUEST_IDLE;
	return 0;
}

RAPT_API int rapt_ep_get_status(struct rapt_ep *handle,
				struct rapt_ep_status *status, size_t size)
{
	struct rapt_ep_status st;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_EP, &o);
	if (ret)
		return ret;
	if (!status || !size)
		ret = rapt__fail(RAPT_EINVAL, "rapt_ep_get_status: no output");
	else
		ret = ep_status((struct rapt_core_ep *)o, &st);
	rapt__obj_put(o);
	if (!ret)
		memcpy(status, &st, RAPT_MIN(size, sizeof(st)));
	return ret;
}
