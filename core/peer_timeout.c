/* SPDX-License-Identifier: MIT */
/*
 * The peer timeout: the bound on noticing a peer that went silent (a dead
 * host, a cut link) on an idle connection and on one with data in flight.
 * The IA holds the value new EPs start with (RAPT_PEER_TIMEOUT_DEFAULT_MS);
 * each EP holds its own, which the provider enforces (ep_set_peer_timeout:
 * TCP keepalive and TCP_USER_TIMEOUT on tcp).
 */
#include "config.h"

#include "rapt_int.h"

static int check_range(uint32_t ms, const char *what)
{
	if (ms < RAPT_PEER_TIMEOUT_MIN_MS || ms > RAPT_PEER_TIMEOUT_MAX_MS)
		return rapt__fail(RAPT_ERANGE,
				  "%s: %u ms is outside %u..%u ms", what, ms,
				  RAPT_PEER_TIMEOUT_MIN_MS,
				  RAPT_PEER_TIMEOUT_MAX_MS);
	return 0;
}

RAPT_API int rapt_ia_set_peer_timeout(struct rapt_ia *handle,
				      uint32_t timeout_ms)
{
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_IA, &o);
	if (ret)
		return ret;
	ret = check_range(timeout_ms, "rapt_ia_set_peer_timeout");
	if (!ret)
		((struct rapt_core_ia *)o)->peer_timeout_ms = timeout_ms;
	rapt__obj_put(o);
	return ret;
}

RAPT_API int rapt_ia_get_peer_timeout(struct rapt_ia *handle,
				      uint32_t *timeout_ms)
{
	struct rapt_obj *o;
	uint32_t ms;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_IA, &o);
	if (ret)
		return ret;
	ms = ((struct rapt_core_ia *)o)->peer_timeout_ms;
	rapt__obj_put(o);
	if (!timeout_ms)
		return rapt__fail(RAPT_EINVAL,
				  "rapt_ia_get_peer_timeout: NULL output");
	*timeout_ms = ms;
	return 0;
}

/* The provider first, then the record: no core lock across the op. */
static int ep_apply(struct rapt_core_ep *ep, uint32_t ms)
{
	int ret;

	RAPT_NOCANCEL(ret = ep->ops->ep_set_peer_timeout(ep->obj.prov, ms));
	if (ret)
		return ret;
	pthread_mutex_lock(&ep->lock);
	ep->peer_timeout_ms = ms;
	pthread_mutex_unlock(&ep->lock);
	return 0;
}

void rapt__ep_peer_timeout_init(struct rapt_core_ep *ep)
{
	/* A provider without the op keeps its transport's own bound: the
	 * EP then reports RAPT_ENOTSUP for it. */
	ep_apply(ep, ep->obj.ia->peer_timeout_ms);
}

RAPT_API int rapt_ep_set_peer_timeout(struct rapt_ep *handle,
				      uint32_t timeout_ms)
{
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_EP, &o);
	if (ret)
		return ret;
	ret = check_range(timeout_ms, "rapt_ep_set_peer_timeout");
	if (!ret) {
		ret = ep_apply((struct rapt_core_ep *)o, timeout_ms);
		if (ret == RAPT_ENOTSUP)
			rapt__fail(ret, "rapt_ep_set_peer_timeout: the provider has no peer timeout");
	}
	rapt__obj_put(o);
	return ret;
}

RAPT_API int rapt_ep_get_peer_timeout(struct rapt_ep *handle,
				      uint32_t *timeout_ms)
{
	struct rapt_core_ep *ep;
	struct rapt_obj *o;
	uint32_t ms;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_EP, &o);
	if (ret)
		return ret;
	ep = (struct rapt_core_ep *)o;
	pthread_mutex_lock(&ep->lock);
	ms = ep->peer_timeout_ms;
	pthread_mutex_unlock(&ep->lock);
	rapt__obj_put(o);
	if (!timeout_ms)
		return rapt__fail(RAPT_EINVAL,
				  "rapt_ep_get_peer_timeout: NULL output");
	if (!ms)
		return rapt__fail(RAPT_ENOTSUP,
				  "rapt_ep_get_peer_timeout: the provider has no peer timeout");
	*timeout_ms = ms;
	return 0;
}
