/* SPDX-License-Identifier: MIT */
/* PZ: protection zone. */
#include "config.h"

#include <stdlib.h>

#include "rapt_int.h"

struct rapt_core_pz {
	struct rapt_obj obj;	/* must stay first */
};

RAPT_API int rapt_pz_create(struct rapt_ia *ia_handle, struct rapt_pz **out)
{
	struct rapt_core_pz *pz;
	struct rapt_obj *ia;
	int ret;

	if (!out)
		return rapt__fail(RAPT_EINVAL, "rapt_pz_create: NULL output");
	rapt__ctl_lock();
	ret = rapt__obj_lookup(ia_handle, RAPT_CLS_IA, &ia);
	if (ret)
		goto out;
	pz = calloc(1, sizeof(*pz));
	if (!pz) {
		ret = rapt__fail(RAPT_ENOMEM, "out of memory creating a PZ");
		goto out;
	}
	ret = rapt__ops(ia)->pz_create(ia->prov, &pz->obj.prov);
	if (ret) {
		rapt__fail(ret, "provider could not create a PZ: %s",
			   rapt_strerror(ret));
		goto err_free;
	}
	ret = rapt__obj_register(&pz->obj, RAPT_CLS_PZ, ia, ia->ia);
	if (ret)
		goto err_prov;
	*out = rapt__obj_handle(&pz->obj);
	goto out;

err_prov:
	rapt__ops(ia)->pz_free(pz->obj.prov);
err_free:
	free(pz);
out:
	rapt__ctl_unlock();
	return ret;
}

RAPT_API int rapt_pz_free(struct rapt_pz *handle)
{
	struct rapt_obj *o;
	int ret;

	rapt__ctl_lock();
	ret = rapt__obj_lookup(handle, RAPT_CLS_PZ, &o);
	if (ret)
		goto out;
	if (rapt__obj_users(o)) {
		ret = rapt__fail(RAPT_EBUSY, "PZ still has %u LMRs or EPs",
				 rapt__obj_users(o));
		goto out;
	}
	ret = rapt__ops(o)->pz_free(o->prov);
	if (ret) {
		rapt__fail(ret, "provider could not free a PZ: %s",
			   rapt_strerror(ret));
		goto out;
	}
	rapt__obj_unregister(o);
	free(o);
out:
	rapt__ctl_unlock();
	return ret;
}
