/* SPDX-License-Identifier: MIT */
/* LMR: registered memory. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "rapt_int.h"

#define LMR_ACCESS_ALL (RAPT_MEM_LOCAL_WRITE | RAPT_MEM_REMOTE_READ | \
			RAPT_MEM_REMOTE_WRITE)

struct rapt_core_lmr {
	struct rapt_obj obj;	/* must stay first */
	struct rapt_lmr_info info;
};

static int lmr_check(struct rapt_obj *pz, void *addr, size_t length,
		     unsigned int access)
{
	uint64_t max = pz->ia->attr.max_lmr_size;

	if (!addr)
		return rapt__fail(RAPT_EINVAL, "rapt_lmr_create: NULL address");
	if (!length)
		return rapt__fail(RAPT_EINVAL, "rapt_lmr_create: zero length");
	if (access & ~LMR_ACCESS_ALL)
		return rapt__fail(RAPT_EINVAL,
				  "rapt_lmr_create: unknown access bits %#x",
				  access & ~LMR_ACCESS_ALL);
	if (max && length > max)
		return rapt__fail(RAPT_ERANGE,
				  "rapt_lmr_create: %zu bytes exceeds max_lmr_size %llu",
				  length, (unsigned long long)max);
	if ((uintptr_t)addr + length < (uintptr_t)addr)
		return rapt__fail(RAPT_ERANGE,
				  "rapt_lmr_create: region wraps the address space");
	/* Nothing a peer sends may crash the process (DESIGN.md 4). */
	return rapt__mem_check(addr, length,
			       access & (RAPT_MEM_LOCAL_WRITE |
					 RAPT_MEM_REMOTE_WRITE));
}

RAPT_API int rapt_lmr_create(struct rapt_pz *pz_handle, void *addr,
			     size_t length, unsigned int access,
			     struct rapt_lmr **out, struct rapt_lmr_info *info)
{
	struct rapt_core_lmr *lmr;
	struct rapt_obj *pz;
	int ret;

	if (!out)
		return rapt__fail(RAPT_EINVAL, "rapt_lmr_create: NULL output");
	ret = rapt__obj_get(pz_handle, RAPT_CLS_PZ, &pz);
	if (ret)
		return ret;
	ret = lmr_check(pz, addr, length, access);
	if (ret)
		goto err_put;
	lmr = calloc(1, sizeof(*lmr));
	if (!lmr) {
		ret = rapt__fail(RAPT_ENOMEM, "out of memory creating an LMR");
		goto err_put;
	}
	lmr->info.length = length;
	lmr->info.access = access;
	ret = rapt__obj_reserve(&lmr->obj, RAPT_CLS_LMR, pz, pz->ia);
	if (ret)
		goto err_free;
	/* May take long (pinning a large buffer): nothing but the PZ is
	 * held meanwhile. */
	RAPT_NOCANCEL(ret = rapt__ops(pz)->lmr_create(pz->ia->obj.prov,
						      pz->prov, addr, length,
						      access, &lmr->info,
						      &lmr->obj.prov));
	if (ret) {
		rapt__fail(ret, "provider could not register %zu bytes: %s",
			   length, rapt_strerror(ret));
		rapt__obj_unregister(&lmr->obj);
		free(lmr);
		return ret;
	}
	rapt__obj_publish(&lmr->obj);
	if (info)
		*info = lmr->info;
	*out = rapt__obj_handle(&lmr->obj);
	return 0;

err_free:
	free(lmr);
err_put:
	rapt__obj_put(pz);
	return ret;
}

const struct rapt_lmr_info *rapt__lmr_info(const struct rapt_obj *lmr)
{
	/* Written once, before the handle was published. */
	return &((const struct rapt_core_lmr *)lmr)->info;
}

RAPT_API int rapt_lmr_query(struct rapt_lmr *handle, struct rapt_lmr_info *info)
{
	struct rapt_lmr_info i;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_LMR, &o);
	if (ret)
		return ret;
	i = ((struct rapt_core_lmr *)o)->info;
	rapt__obj_put(o);
	if (!info)
		return rapt__fail(RAPT_EINVAL, "rapt_lmr_query: NULL output");
	*info = i;
	return 0;
}

RAPT_API int rapt_lmr_free(struct rapt_lmr *handle)
{
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_kill(handle, RAPT_CLS_LMR, "calls", &o);
	if (ret)
		return ret;
	RAPT_NOCANCEL(ret = rapt__ops(o)->lmr_free(o->prov));
	if (ret) {
		rapt__obj_revive(o);
		return rapt__fail(ret, "provider could not deregister an LMR: %s",
				  rapt_strerror(ret));
	}
	rapt__obj_unregister(o);
	free(o);
	return 0;
}
