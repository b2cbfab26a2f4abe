/* SPDX-License-Identifier: MIT */
/* IA: an opened provider device. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rapt_int.h"

static void ia_fill_names(struct rapt_core_ia *ia, const char *device,
			  uint32_t port)
{
	struct rapt_ia_attr *a = &ia->attr;

	if (!a->provider[0])
		snprintf(a->provider, sizeof(a->provider), "%s",
			 ia->prov->desc->name);
	if (!a->device[0])
		snprintf(a->device, sizeof(a->device), "%s", device);
	a->port = port;
	if (port)
		snprintf(a->name, sizeof(a->name), "%s:%s:%u", a->provider,
			 a->device, port);
	else
		snprintf(a->name, sizeof(a->name), "%s:%s", a->provider,
			 a->device);
	if (!a->prov_version)
		a->prov_version = ia->prov->desc->version;
}

static void ia_release(struct rapt_core_ia *ia)
{
	pthread_cond_destroy(&ia->orphans_gone);
	pthread_mutex_destroy(&ia->lock);
	free(ia);
}

RAPT_API int rapt_ia_open(const char *name, struct rapt_ia **out)
{
	struct rapt_core_ia *ia;
	struct rapt_prov *prov;
	char device[64];
	uint32_t port = 0;
	int ret;

	if (!out)
		return rapt__fail(RAPT_EINVAL, "rapt_ia_open: NULL output");
	ret = rapt__registry_resolve(name, &prov, device, sizeof(device),
				     &port);
	if (ret)
		return ret;
	ia = calloc(1, sizeof(*ia));
	if (!ia)
		return rapt__fail(RAPT_ENOMEM, "out of memory opening an IA");
	ia->prov = prov;
	ia->ops = &prov->ops;
	ia->peer_timeout_ms = RAPT_PEER_TIMEOUT_DEFAULT_MS;
	pthread_mutex_init(&ia->lock, NULL);
	pthread_cond_init(&ia->orphans_gone, NULL);
	/* The handle exists for the provider now; lookups find it once the
	 * IA is open. */
	ret = rapt__obj_reserve(&ia->obj, RAPT_CLS_IA, NULL, ia);
	if (ret)
		goto err_free;
	RAPT_NOCANCEL(ret = ia->ops->ia_open(prov->ctx, device, port, ia,
					     &ia->obj.prov));
	if (ret) {
		rapt__fail(ret, "provider %s could not open device %s: %s",
			   prov->desc->name, device, rapt_strerror(ret));
		goto err_unregister;
	}
	RAPT_NOCANCEL(ret = ia->ops->ia_query(ia->obj.prov, &ia->attr));
	if (ret) {
		rapt__fail(ret, "provider %s could not query device %s: %s",
			   prov->desc->name, device, rapt_strerror(ret));
		goto err_close;
	}
	ia_fill_names(ia, device, port);
	rapt_dbg("opened IA %s", ia->attr.name);
	rapt__obj_publish(&ia->obj);
	*out = rapt__obj_handle(&ia->obj);
	return 0;

err_close:
	RAPT_NOCANCEL(ia->ops->ia_close(ia->obj.prov));
err_unregister:
	rapt__obj_unregister(&ia->obj);
err_free:
	ia_release(ia);
	return ret;
}

RAPT_API int rapt_ia_close(struct rapt_ia *handle)
{
	struct rapt_core_ia *ia;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_kill(handle, RAPT_CLS_IA, "PZs, EVDs, PSPs or calls",
			     &o);
	if (ret)
		return ret;
	ia = (struct rapt_core_ia *)o;
	rapt__cr_reap_orphans(ia);
	RAPT_NOCANCEL(ret = ia->ops->ia_close(o->prov));
	if (ret) {
		rapt__obj_revive(o);
		return rapt__fail(ret, "provider could not close IA %s: %s",
				  ia->attr.name, rapt_strerror(ret));
	}
	rapt__obj_unregister(o);
	ia_release(ia);
	return 0;
}

RAPT_API int rapt_ia_query(struct rapt_ia *handle, struct rapt_ia_attr *attr,
			   size_t attr_size)
{
	struct rapt_ia_attr a;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_IA, &o);
	if (ret)
		return ret;
	a = ((struct rapt_core_ia *)o)->attr;
	rapt__obj_put(o);
	if (!attr || !attr_size)
		return rapt__fail(RAPT_EINVAL, "rapt_ia_query: no output");
	a.pdata_connect = rapt__pdata_usable(a.pdata_connect);
	a.pdata_accept = rapt__pdata_usable(a.pdata_accept);
	a.pdata_reject = rapt__pdata_usable(a.pdata_reject);
	a.pdata_disconnect = rapt__pdata_usable(a.pdata_disconnect);
	memcpy(attr, &a, RAPT_MIN(attr_size, sizeof(a)));
	return 0;
}

int rapt__ia_set_async_evd(struct rapt_core_ia *ia, struct rapt_core_evd *evd,
			   struct rapt_core_evd *expect)
{
	int ret = 0;

	pthread_mutex_lock(&ia->lock);
	if (ia->async_evd != expect)
		ret = RAPT_EEXIST;
	else
		ia->async_evd = evd;
	pthread_mutex_unlock(&ia->lock);
	return ret;
}

RAPT_SDK void rapt_prov_async_event(struct rapt_core_ia *ia, uint32_t type,
				    void *handle, int32_t prov_status)
{
	struct rapt_core_evd *evd;
	struct rapt_event ev = { .type = type };

	ev.u.async.handle = handle ? handle : rapt__obj_handle(&ia->obj);
	ev.u.async.prov_status = prov_status;
	/* The watermark's receives left (provider.h): the event's count. */
	if (type == RAPT_EV_ASYNC_SRQ_LOW_WATERMARK && prov_status >= 0)
		ev.u.async.count = (uint64_t)prov_status;
	/* Lock order is IA, then EVD; the async EVD's own overflow report
	 * never takes the IA lock, so pushing under it is safe, and an EVD
	 * free never sees a transient user. */
	pthread_mutex_lock(&ia->lock);
	evd = ia->async_evd;
	if (evd)
		rapt_prov_evd_push(evd, &ev);
	pthread_mutex_unlock(&ia->lock);
	if (!evd) {
		rapt_err("IA %s: async event %s (%#x, status %d) and no async EVD",
			 ia->attr.name, rapt_event_name(type), type,
			 prov_status);
	}
}
