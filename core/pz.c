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
	ret = rapt__obj_get(ia_handle, RAPT_CLS_IA, &ia);
	if (ret)
		return ret;
	pz = calloc(1, sizeof(*pz));
	if (!pz) {
		ret = rapt__fail(RAPT_ENOMEM, "out of memory creating a PZ");
		goto err_put;
	}
	ret = rapt__obj_reserve(&pz->obj, RAPT_CLS_PZ, ia, ia->ia);
	if (ret)
		goto err_free;
	RAPT_NOCANCEL(ret = rapt__ops(ia)->pz_create(ia->prov, &pz->obj.prov));
	if (ret) {
		rapt__fail(ret, "provider could not create a PZ: %s",
			   rapt_strerror(ret));
		rapt__obj_unregister(&pz->obj);
		free(pz);
		return ret;
	}
	rapt__obj_publish(&pz->obj);
	*out = rapt__obj_handle(&pz->obj);
	return 0;

err_free:
	free(pz);
err_put:
	rapt__obj_put(ia);
	return ret;
}

RAPT_API int rapt_pz_free(struct rapt_pz *handle)
{
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_kill(handle, RAPT_CLS_PZ, "LMRs, EPs or calls", &o);
	if (ret)
		return ret;
	RAPT_NOCANCEL(ret = rapt__ops(o)->pz_free(o->prov));
	if (ret) {
		rapt__obj_revive(o);
		return rapt__fail(ret, "provider could not free a PZ: %s",
				  rapt_strerror(ret));
	}
	rapt__obj_unregister(o);
	free(o);
	return 0;
}
