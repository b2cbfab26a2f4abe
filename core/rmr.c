/* SPDX-License-Identifier: MIT */
/*
 * RMR: a memory window, a second remote key over part of an LMR with
 * rights of its own, that the consumer binds and invalidates through an
 * EP's send queue and that the peer may invalidate with a Send with
 * Invalidate.  The provider owns the key and the data path; the core
 * checks every argument against the window's PZ and the LMR's range and
 * rights (so a provider sees only binds that may succeed), serialises the
 * binds of one window and remembers the last one for rapt_rmr_query().
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "rapt_int.h"

#define RMR_ACCESS_ALL	(RAPT_MEM_REMOTE_READ | RAPT_MEM_REMOTE_WRITE)
#define RMR_FLAGS_ALL	(RAPT_POST_SUPPRESS | RAPT_POST_FENCE)

struct rapt_core_rmr {
	struct rapt_obj obj;		/* must stay first */
	pthread_mutex_t lock;		/* one bind at a time; and info */
	struct rapt_rmr_info info;	/* the last bind */
};

/* Free a core RMR and give its IA's count back. */
static void rmr_release(struct rapt_core_ia *ia, struct rapt_core_rmr *rmr)
{
	atomic_fetch_sub(&ia->nrmr, 1);
	pthread_mutex_destroy(&rmr->lock);
	free(rmr);
}

static int rmr_create(struct rapt_obj *pz, struct rapt_core_rmr **out)
{
	const struct rapt_ia_attr *ia = &pz->ia->attr;
	struct rapt_core_rmr *rmr;
	int ret;

	if (!(ia->caps & RAPT_CAP_RMR))
		return rapt__fail(RAPT_ENOTSUP,
				  "rapt_rmr_create: the provider has no memory windows (no RAPT_CAP_RMR)");
	if (atomic_fetch_add(&pz->ia->nrmr, 1) >= ia->max_rmr) {
		atomic_fetch_sub(&pz->ia->nrmr, 1);
		return rapt__fail(RAPT_EBUSY,
				  "rapt_rmr_create: the IA holds its %u windows",
				  ia->max_rmr);
	}
	rmr = calloc(1, sizeof(*rmr));
	if (!rmr) {
		atomic_fetch_sub(&pz->ia->nrmr, 1);
		return rapt__fail(RAPT_ENOMEM, "out of memory creating an RMR");
	}
	pthread_mutex_init(&rmr->lock, NULL);
	ret = rapt__obj_reserve(&rmr->obj, RAPT_CLS_RMR, pz, pz->ia);
	if (ret)
		goto err_free;
	RAPT_NOCANCEL(ret = rapt__ops(pz)->rmr_create(pz->ia->obj.prov,
						      pz->prov,
						      &rmr->obj.prov));
	if (ret) {
		rapt__fail(ret, "provider could not create a memory window: %s",
			   rapt_strerror(ret));
		rapt__obj_unregister(&rmr->obj);	/* puts the PZ */
		rmr_release(pz->ia, rmr);
		return ret;
	}
	rapt__obj_publish(&rmr->obj);
	*out = rmr;
	return 0;

err_free:
	rmr_release(pz->ia, rmr);
	return ret;
}

RAPT_API int rapt_rmr_create(struct rapt_pz *pz_handle, struct rapt_rmr **out)
{
	struct rapt_core_rmr *rmr = NULL;
	struct rapt_obj *pz;
	int ret;

	if (!out)
		return rapt__fail(RAPT_EINVAL, "rapt_rmr_create: NULL output");
	ret = rapt__obj_get(pz_handle, RAPT_CLS_PZ, &pz);
	if (ret)
		return ret;
	ret = rmr_create(pz, &rmr);
	if (ret) {
		rapt__obj_put(pz);
		return ret;
	}
	*out = rapt__obj_handle(&rmr->obj);	/* the PZ's user is its */
	return 0;
}

RAPT_API int rapt_rmr_free(struct rapt_rmr *handle)
{
	struct rapt_core_ia *ia;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_kill(handle, RAPT_CLS_RMR, "calls", &o);
	if (ret)
		return ret;
	RAPT_NOCANCEL(ret = rapt__ops(o)->rmr_free(o->prov));
	if (ret) {
		rapt__obj_revive(o);
		return rapt__fail(ret, "provider could not free a memory window: %s",
				  rapt_strerror(ret));
	}
	ia = o->ia;
	rapt__obj_unregister(o);
	rmr_release(ia, (struct rapt_core_rmr *)o);
	return 0;
}

/* Take the window and the EP a bind or unbind names; check what both
 * have to agree on.  On success the caller holds both. */
static int rmr_get_ep(struct rapt_rmr *handle, struct rapt_ep *ep_handle,
		      uint32_t flags, const char *what,
		      struct rapt_core_rmr **rmr, struct rapt_obj **ep)
{
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_RMR, &o);
	if (ret)
		return ret;
	ret = rapt__obj_get(ep_handle, RAPT_CLS_EP, ep);
	if (ret)
		goto err_put;
	if ((*ep)->parent != o->parent)
		ret = rapt__fail(RAPT_EINVAL, "%s: the EP is of another PZ",
				 what);
	else if (flags & ~RMR_FLAGS_ALL)
		ret = rapt__fail(RAPT_EINVAL, "%s: flags %#x (only SUPPRESS and FENCE)",
				 what, flags & ~RMR_FLAGS_ALL);
	else if (atomic_load(&((struct rapt_core_ep *)*ep)->state) !=
		 RAPT_EP_CONNECTED)
		ret = rapt__fail(RAPT_ESTATE, "%s: the EP is not CONNECTED",
				 what);
	if (ret)
		goto err_put_ep;
	*rmr = (struct rapt_core_rmr *)o;
	return 0;

err_put_ep:
	rapt__obj_put(*ep);
err_put:
	rapt__obj_put(o);
	return ret;
}

/* May a window of @pz open [@addr, @addr + @length) of @lmr with
 * @access? */
static int rmr_range_check(const struct rapt_obj *pz,
			   const struct rapt_obj *lmr, uint64_t addr,
			   uint64_t length, uint32_t access)
{
	const struct rapt_lmr_info *li = rapt__lmr_info(lmr);

	if (lmr->parent != pz)
		return rapt__fail(RAPT_EINVAL,
				  "rapt_rmr_bind: the LMR is of another PZ");
	if (!access || (access & ~RMR_ACCESS_ALL))
		return rapt__fail(RAPT_EINVAL,
				  "rapt_rmr_bind: access %#x (remote read and/or write only)",
				  access);
	if (access & ~li->access)
		return rapt__fail(RAPT_EACCES,
				  "rapt_rmr_bind: rights %#x the LMR lacks",
				  access & ~li->access);
	if (!length)
		return rapt__fail(RAPT_EINVAL, "rapt_rmr_bind: length 0");
	if (addr < li->raddr || length > li->length ||
	    addr - li->raddr > li->length - length)
		return rapt__fail(RAPT_ERANGE,
				  "rapt_rmr_bind: %llu bytes at %#llx are not inside the LMR",
				  (unsigned long long)length,
				  (unsigned long long)addr);
	return 0;
}

static int rmr_bind(struct rapt_core_rmr *rmr, struct rapt_obj *ep,
		    struct rapt_obj *lmr, uint64_t addr, uint64_t length,
		    uint32_t access, uint64_t cookie, uint32_t flags,
		    uint32_t *rkey)
{
	uint32_t key = 0;
	int ret;

	ret = rmr_range_check(rmr->obj.parent, lmr, addr, length, access);
	if (ret)
		return ret;
	pthread_mutex_lock(&rmr->lock);
	RAPT_NOCANCEL(ret = rapt__ops(ep)->rmr_bind(ep->prov, rmr->obj.prov,
						    lmr->prov, addr, length,
						    access, cookie, flags,
						    &key));
	if (!ret) {
		rmr->info.rkey = key;
		rmr->info.access = access;
		rmr->info.raddr = addr;
		rmr->info.length = length;
		rmr->info.lmr = rapt__obj_handle(lmr);
	}
	pthread_mutex_unlock(&rmr->lock);
	if (ret)
		return rapt__fail(ret, "rapt_rmr_bind: %s", rapt_strerror(ret));
	*rkey = key;
	return 0;
}

RAPT_API int rapt_rmr_bind(struct rapt_rmr *handle, struct rapt_ep *ep_handle,
			   struct rapt_lmr *lmr_handle, uint64_t addr,
			   uint64_t length, unsigned int access,
			   uint64_t cookie, unsigned int flags,
			   uint32_t *rkey)
{
	struct rapt_core_rmr *rmr;
	struct rapt_obj *ep, *lmr;
	int ret;

	if (!rkey)
		return rapt__fail(RAPT_EINVAL, "rapt_rmr_bind: NULL output");
	ret = rmr_get_ep(handle, ep_handle, flags, "rapt_rmr_bind", &rmr, &ep);
	if (ret)
		return ret;
	ret = rapt__obj_get(lmr_handle, RAPT_CLS_LMR, &lmr);
	if (!ret) {
		ret = rmr_bind(rmr, ep, lmr, addr, length, access, cookie,
			       flags, rkey);
		rapt__obj_put(lmr);
	}
	rapt__obj_put(ep);
	rapt__obj_put(&rmr->obj);
	return ret;
}

RAPT_API int rapt_rmr_unbind(struct rapt_rmr *handle,
			     struct rapt_ep *ep_handle, uint64_t cookie,
			     unsigned int flags)
{
	struct rapt_core_rmr *rmr;
	struct rapt_obj *ep;
	int ret;

	ret = rmr_get_ep(handle, ep_handle, flags, "rapt_rmr_unbind", &rmr,
			 &ep);
	if (ret)
		return ret;
	pthread_mutex_lock(&rmr->lock);
	RAPT_NOCANCEL(ret = rapt__ops(ep)->rmr_bind(ep->prov, rmr->obj.prov,
						    NULL, 0, 0, 0, cookie,
						    flags, NULL));
	if (!ret)
		rmr->info.rkey = 0;
	pthread_mutex_unlock(&rmr->lock);
	if (ret)
		rapt__fail(ret, "rapt_rmr_unbind: %s", rapt_strerror(ret));
	rapt__obj_put(ep);
	rapt__obj_put(&rmr->obj);
	return ret;
}

RAPT_API int rapt_rmr_query(struct rapt_rmr *handle,
			    struct rapt_rmr_info *info, size_t size)
{
	struct rapt_core_rmr *rmr;
	struct rapt_rmr_info i;
	struct rapt_obj *o;
	uint32_t live = 0;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_RMR, &o);
	if (ret)
		return ret;
	rmr = (struct rapt_core_rmr *)o;
	if (!info || !size) {
		ret = rapt__fail(RAPT_EINVAL, "rapt_rmr_query: no output");
		goto out;
	}
	pthread_mutex_lock(&rmr->lock);
	/* The peer may have invalidated the key: only the provider knows. */
	RAPT_NOCANCEL(ret = rapt__ops(o)->rmr_query(o->prov, &live));
	i = rmr->info;
	pthread_mutex_unlock(&rmr->lock);
	if (ret) {
		rapt__fail(ret, "provider could not query a memory window: %s",
			   rapt_strerror(ret));
		goto out;
	}
	if (live != i.rkey)
		i.rkey = 0;
	memcpy(info, &i, RAPT_MIN(size, sizeof(i)));
out:
	rapt__obj_put(o);
	return ret;
}
