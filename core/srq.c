/* SPDX-License-Identifier: MIT */
/*
 * SRQ: a shared receive queue, one ring of receives that many EPs of one
 * PZ consume, so that a server's receive memory follows its traffic
 * instead of its connection count.  The provider owns the ring and the
 * data path (a message takes the oldest receive, its completion names the
 * EP it arrived on); the core checks attributes against the IA's limits,
 * ties EPs to the SRQ (each holds a user of it, so it cannot be freed
 * under them) and keeps the attributes for rapt_srq_query().
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "rapt_int.h"

#define SRQ_DEFAULT_SGE 4

static int srq_attr_check(const struct rapt_ia_attr *ia,
			  const struct rapt_srq_attr *in,
			  struct rapt_srq_attr *a)
{
	if (!in)
		return rapt__fail(RAPT_EINVAL, "rapt_srq_create: NULL attr");
	*a = *in;
	if (!a->max_recv_sge)
		a->max_recv_sge = RAPT_MIN(SRQ_DEFAULT_SGE, ia->max_srq_sge);
	if (!a->max_recv || a->flags)
		return rapt__fail(RAPT_EINVAL,
				  "rapt_srq_create: max_recv must be > 0 and flags 0");
	if (a->max_recv > ia->max_srq_recv)
		return rapt__fail(RAPT_ERANGE,
				  "rapt_srq_create: max_recv %u exceeds the IA's %u",
				  a->max_recv, ia->max_srq_recv);
	if (a->max_recv_sge > ia->max_srq_sge)
		return rapt__fail(RAPT_ERANGE,
				  "rapt_srq_create: max_recv_sge %u exceeds the IA's %u",
				  a->max_recv_sge, ia->max_srq_sge);
	if (a->low_watermark > a->max_recv)
		return rapt__fail(RAPT_ERANGE,
				  "rapt_srq_create: low_watermark %u exceeds max_recv %u",
				  a->low_watermark, a->max_recv);
	return 0;
}

/* Free a core SRQ and give its IA's count back. */
static void srq_release(struct rapt_core_ia *ia, struct rapt_core_srq *srq)
{
	atomic_fetch_sub(&ia->nsrq, 1);
	pthread_mutex_destroy(&srq->lock);
	free(srq);
}

static int srq_create(struct rapt_obj *pz, const struct rapt_srq_attr *in,
		      struct rapt_core_srq **out)
{
	const struct rapt_ia_attr *ia = &pz->ia->attr;
	struct rapt_core_srq *srq;
	int ret;

	if (!(ia->caps & RAPT_CAP_SRQ))
		return rapt__fail(RAPT_ENOTSUP,
				  "rapt_srq_create: the provider has no shared receive queues (no RAPT_CAP_SRQ)");
	if (atomic_fetch_add(&pz->ia->nsrq, 1) >= ia->max_srq) {
		atomic_fetch_sub(&pz->ia->nsrq, 1);
		return rapt__fail(RAPT_EBUSY, "rapt_srq_create: the IA holds its %u SRQs",
				  ia->max_srq);
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		atomic_fetch_sub(&pz->ia->nsrq, 1);
		return rapt__fail(RAPT_ENOMEM, "out of memory creating an SRQ");
	}
	pthread_mutex_init(&srq->lock, NULL);
	ret = srq_attr_check(ia, in, &srq->attr);
	if (!ret)
		ret = rapt__obj_reserve(&srq->obj, RAPT_CLS_SRQ, pz, pz->ia);
	if (ret)
		goto err_free;
	RAPT_NOCANCEL(ret = rapt__ops(pz)->srq_create(pz->ia->obj.prov,
						      pz->prov,
						      rapt__obj_handle(&srq->obj),
						      &srq->attr,
						      &srq->obj.prov));
	if (ret) {
		rapt__fail(ret, "provider could not create an SRQ: %s",
			   rapt_strerror(ret));
		rapt__obj_unregister(&srq->obj);	/* puts the PZ */
		srq_release(pz->ia, srq);
		return ret;
	}
	rapt__obj_publish(&srq->obj);
	*out = srq;
	return 0;

err_free:
	srq_release(pz->ia, srq);
	return ret;
}

RAPT_API int rapt_srq_create(struct rapt_pz *pz_handle,
			     const struct rapt_srq_attr *attr,
			     struct rapt_srq **out)
{
	struct rapt_core_srq *srq = NULL;
	struct rapt_obj *pz;
	int ret;

	if (!out)
		return rapt__fail(RAPT_EINVAL, "rapt_srq_create: NULL output");
	ret = rapt__obj_get(pz_handle, RAPT_CLS_PZ, &pz);
	if (ret)
		return ret;
	ret = srq_create(pz, attr, &srq);
	if (ret) {
		rapt__obj_put(pz);
		return ret;
	}
	*out = rapt__obj_handle(&srq->obj);	/* the PZ's user is its */
	return 0;
}

RAPT_API int rapt_srq_free(struct rapt_srq *handle)
{
	struct rapt_core_ia *ia;
	struct rapt_core_srq *srq;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_kill(handle, RAPT_CLS_SRQ, "EPs or calls", &o);
	if (ret)
		return ret;
	srq = (struct rapt_core_srq *)o;
	RAPT_NOCANCEL(ret = rapt__ops(o)->srq_free(o->prov));
	if (ret) {
		rapt__obj_revive(o);
		return rapt__fail(ret, "provider could not free an SRQ: %s",
				  rapt_strerror(ret));
	}
	ia = o->ia;
	rapt__obj_unregister(o);
	srq_release(ia, srq);
	return 0;
}

RAPT_API int rapt_srq_post_recv(struct rapt_srq *handle,
				const struct rapt_sge *sgl, unsigned int nsge,
				uint64_t cookie)
{
	struct rapt_core_srq *srq;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_SRQ, &o);
	if (ret)
		return ret;
	srq = (struct rapt_core_srq *)o;
	/* max_recv_sge never changes after the create: no lock. */
	if (rapt_unlikely(nsge > srq->attr.max_recv_sge || (nsge && !sgl)))
		ret = rapt__fail(RAPT_EINVAL,
				 "rapt_srq_post_recv: %u SGEs (the SRQ takes %u), list %p",
				 nsge, srq->attr.max_recv_sge,
				 (const void *)sgl);
	else
		ret = rapt__ops(o)->srq_post_recv(o->prov, sgl, nsge, cookie);
	rapt__obj_put(o);
	return ret;
}

RAPT_API int rapt_srq_query(struct rapt_srq *handle,
			    struct rapt_srq_info *info, size_t size)
{
	struct rapt_core_srq *srq;
	struct rapt_srq_info i;
	struct rapt_obj *o;
	uint32_t posted = 0;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_SRQ, &o);
	if (ret)
		return ret;
	srq = (struct rapt_core_srq *)o;
	if (!info || !size) {
		ret = rapt__fail(RAPT_EINVAL, "rapt_srq_query: no output");
		goto out;
	}
	RAPT_NOCANCEL(ret = rapt__ops(o)->srq_query(o->prov, &posted));
	if (ret) {
		rapt__fail(ret, "provider could not query an SRQ: %s",
			   rapt_strerror(ret));
		goto out;
	}
	memset(&i, 0, sizeof(i));
	pthread_mutex_lock(&srq->lock);
	i.attr = srq->attr;
	pthread_mutex_unlock(&srq->lock);
	i.posted = posted;
	i.neps = atomic_load(&srq->neps);
	memcpy(info, &i, RAPT_MIN(size, sizeof(i)));
out:
	rapt__obj_put(o);
	return ret;
}

static int srq_resize(struct rapt_core_srq *srq, uint32_t max_recv,
		      uint32_t lw)
{
	const struct rapt_ia_attr *ia = &srq->obj.ia->attr;
	int ret;

	if (!max_recv)
		return rapt__fail(RAPT_EINVAL, "rapt_srq_resize: max_recv 0");
	if (max_recv > ia->max_srq_recv || lw > max_recv)
		return rapt__fail(RAPT_ERANGE,
				  "rapt_srq_resize: max_recv %u (IA: %u), low_watermark %u",
				  max_recv, ia->max_srq_recv, lw);
	/* The provider refuses a depth below what is posted (RAPT_ERANGE):
	 * only it knows the count at the moment it changes the depth. */
	RAPT_NOCANCEL(ret = rapt__ops(&srq->obj)->srq_resize(srq->obj.prov,
			max_recv, lw));
	if (ret)
		return rapt__fail(ret, "rapt_srq_resize: %s (receives posted above %u?)",
				  rapt_strerror(ret), max_recv);
	pthread_mutex_lock(&srq->lock);
	srq->attr.max_recv = max_recv;
	srq->attr.low_watermark = lw;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

RAPT_API int rapt_srq_resize(struct rapt_srq *handle, uint32_t max_recv,
			     uint32_t low_watermark)
{
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_get(handle, RAPT_CLS_SRQ, &o);
	if (ret)
		return ret;
	ret = srq_resize((struct rapt_core_srq *)o, max_recv, low_watermark);
	rapt__obj_put(o);
	return ret;
}

int rapt__srq_bind(struct rapt_srq *handle, struct rapt_obj *pz,
		   struct rapt_ep_attr *a, struct rapt_core_srq **out)
{
	struct rapt_core_srq *srq;
	struct rapt_obj *o;
	int ret;

	if (!(pz->ia->attr.caps & RAPT_CAP_SRQ))
		return rapt__fail(RAPT_ENOTSUP,
				  "rapt_ep_create_with_srq: the provider has no shared receive queues (no RAPT_CAP_SRQ)");
	ret = rapt__obj_get(handle, RAPT_CLS_SRQ, &o);
	if (ret)
		return ret;
	if (o->parent != pz) {
		rapt__obj_put(o);
		return rapt__fail(RAPT_EINVAL,
				  "rapt_ep_create_with_srq: the SRQ belongs to another PZ");
	}
	srq = (struct rapt_core_srq *)o;
	/* The EP keeps room for the one receive a message is filling. */
	a->max_recv = 1;
	a->max_recv_sge = srq->attr.max_recv_sge;
	atomic_fetch_add(&srq->neps, 1);
	*out = srq;
	return 0;
}

void rapt__srq_unbind(struct rapt_core_srq *srq)
{
	atomic_fetch_sub(&srq->neps, 1);
	rapt__obj_put(&srq->obj);
}
