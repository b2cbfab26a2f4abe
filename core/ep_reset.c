/* SPDX-License-Identifier: MIT */
/*
 * EP reset: a disconnected EP back to UNCONNECTED, so that a consumer can
 * reuse its queues, EVD bindings and attributes for the next connection
 * instead of freeing it and creating another (DAT's dat_ep_reset).
 */
#include "config.h"

#include <string.h>

#include "rapt_int.h"

/* Under ep->lock: what the last connection left on the EP. */
static void ep_forget_connection(struct rapt_core_ep *ep)
{
	ep->flags = 0;
	ep->rdma_read_in = 0;
	ep->rdma_read_out = 0;
	ep->pdata_len = 0;
	ep->disc_pdata_len = 0;
	memset(&ep->local_addr, 0, sizeof(ep->local_addr));
	memset(&ep->remote_addr, 0, sizeof(ep->remote_addr));
}

/*
 * DISCONNECTED is final for the provider's events, so nothing but this
 * reset moves the state out of it; @resetting keeps two resets apart
 * without holding ep->lock across the provider op (the provider's own
 * lock would then nest inside it, the reverse of the event path's order).
 */
static int ep_reset(struct rapt_core_ep *ep)
{
	bool busy = false;
	uint32_t s;
	int ret;

	if (!(ep->obj.ia->attr.caps & RAPT_CAP_EP_RESET))
		return rapt__fail(RAPT_ENOTSUP,
				  "rapt_ep_reset: the provider cannot reuse an EP (no RAPT_CAP_EP_RESET)");
	if (!atomic_compare_exchange_strong(&ep->resetting, &busy, true))
		return rapt__fail(RAPT_ESTATE,
				  "rapt_ep_reset: another reset of this EP is under way");
	s = atomic_load(&ep->state);
	if (s == RAPT_EP_UNCONNECTED) {
		ret = 0;
		goto out;
	}
	if (s != RAPT_EP_DISCONNECTED) {
		ret = rapt__fail(RAPT_ESTATE,
				 "rapt_ep_reset: EP is %s; only a DISCONNECTED EP can be reset",
				 rapt_ep_state_name(s));
		goto out;
	}
	RAPT_NOCANCEL(ret = ep->ops->ep_reset(ep->obj.prov));
	if (ret) {
		rapt__fail(ret, "provider could not reset the EP: %s",
			   rapt_strerror(ret));
		goto out;
	}
	pthread_mutex_lock(&ep->lock);
	ep_forget_connection(ep);
	atomic_store(&ep->state, RAPT_EP_UNCONNECTED);
	pthread_mutex_unlock(&ep->lock);
out:
	atomic_store(&ep->resetting, false);
	return ret;
}

RAPT_API int rapt_ep_reset(struct rapt_ep *handle)
{
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_EP, &o);
	if (ret)
		return ret;
	ret = ep_reset((struct rapt_core_ep *)o);
	rapt__obj_put(o);
	return ret;
}
