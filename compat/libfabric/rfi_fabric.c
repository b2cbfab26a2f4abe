// SPDX-License-Identifier: MIT
/*
 * Fabric (one rapt IA) and domain (a PZ on it).  The fabric owns the IA
 * rather than the domain because libfabric opens EQs and passive
 * endpoints on the fabric, and rapt puts every EVD and PSP on an IA.
 */
#include <stdlib.h>
#include <string.h>

#include "rfi.h"

static int domain_close(struct fid *fid)
{
	struct rfi_domain *dom = (struct rfi_domain *)fid;
	struct rfi_fabric *fab = dom->fab;
	int ret;

	pthread_mutex_lock(&fab->lock);
	if (dom->refs) {
		pthread_mutex_unlock(&fab->lock);
		return -FI_EBUSY;
	}
	ret = rfi_errno(rapt_pz_free(dom->pz));
	if (!ret)
		fab->refs--;
	pthread_mutex_unlock(&fab->lock);
	if (!ret)
		free(dom);
	return ret;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = rfi_no_bind,
	.control = rfi_no_control,
	.ops_open = rfi_ops_open,
	.tostr = rfi_no_tostr,
	.ops_set = rfi_no_ops_set,
};

static int no_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		      struct fid_av **av, void *context)
{
	return -FI_ENOSYS;
}

static int no_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			  struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}

static int no_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
			struct fid_cntr **cntr, void *context)
{
	return -FI_ENOSYS;
}

static int no_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
			struct fid_poll **pollset)
{
	return -FI_ENOSYS;
}

static int no_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
		      struct fid_stx **stx, void *context)
{
	return -FI_ENOSYS;
}

static int no_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

static int no_query_atomic(struct fid_domain *domain,
			   enum fi_datatype datatype, enum fi_op op,
			   struct fi_atomic_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int no_query_collective(struct fid_domain *domain,
			       enum fi_collective_op coll,
			       struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int endpoint2(struct fid_domain *domain, struct fi_info *info,
		     struct fid_ep **ep, uint64_t flags, void *context)
{
	return flags ? -FI_EINVAL : rfi_endpoint(domain, info, ep, context);
}

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = no_av_open,
	.cq_open = rfi_cq_open,
	.endpoint = rfi_endpoint,
	.scalable_ep = no_scalable_ep,
	.cntr_open = no_cntr_open,
	.poll_open = no_poll_open,
	.stx_ctx = no_stx_ctx,
	.srx_ctx = no_srx_ctx,
	.query_atomic = no_query_atomic,
	.query_collective = no_query_collective,
	.endpoint2 = endpoint2,
};

static struct fi_ops_mr domain_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = rfi_mr_reg,
	.regv = rfi_mr_regv,
	.regattr = rfi_mr_regattr,
};

static int domain_open(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_domain **domain, void *context)
{
	struct rfi_fabric *fab = (struct rfi_fabric *)fabric;
	struct rfi_domain *dom;
	int ret;

	if (info && info->domain_attr && info->domain_attr->name &&
	    strcmp(info->domain_attr->name, fab->attr.name))
		return -FI_EINVAL;
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	pthread_mutex_lock(&fab->lock);
	ret = rfi_errno(rapt_pz_create(fab->ia, &dom->pz));
	if (!ret)
		fab->refs++;
	pthread_mutex_unlock(&fab->lock);
	if (ret) {
		free(dom);
		return ret;
	}
	dom->fab = fab;
	dom->domain.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain.fid.context = context;
	dom->domain.fid.ops = &domain_fi_ops;
	dom->domain.ops = &domain_ops;
	dom->domain.mr = &domain_mr_ops;
	*domain = &dom->domain;
	return 0;
}

static int domain2(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_domain **dom, uint64_t flags, void *context)
{
	return flags ? -FI_EINVAL : domain_open(fabric, info, dom, context);
}

static int no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			struct fid_wait **waitset)
{
	return -FI_ENOSYS;
}

/* fi_trywait: arm every EVD, or say which one has events already. */
static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids,
			  int count)
{
	struct rfi_fabric *fab = (struct rfi_fabric *)fabric;
	int i, ret = 0;

	pthread_mutex_lock(&fab->lock);
	for (i = 0; i < count && !ret; i++) {
		if (fids[i]->fclass == FI_CLASS_CQ)
			ret = rfi_cq_trywait((struct rfi_cq *)fids[i]);
		else if (fids[i]->fclass == FI_CLASS_EQ)
			ret = rfi_eq_trywait((struct rfi_eq *)fids[i]);
		else
			ret = -FI_EINVAL;
	}
	pthread_mutex_unlock(&fab->lock);
	return ret;
}

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = domain_open,
	.passive_ep = rfi_passive_ep,
	.eq_open = rfi_eq_open,
	.wait_open = no_wait_open,
	.trywait = fabric_trywait,
	.domain2 = domain2,
};

static int fabric_close(struct fid *fid)
{
	struct rfi_fabric *fab = (struct rfi_fabric *)fid;
	int ret;

	pthread_mutex_lock(&fab->lock);
	if (fab->refs) {
		pthread_mutex_unlock(&fab->lock);
		return -FI_EBUSY;
	}
	ret = rfi_errno(rapt_ia_close(fab->ia));
	pthread_mutex_unlock(&fab->lock);
	if (ret)
		return ret;
	pthread_mutex_destroy(&fab->lock);
	free(fab);
	return 0;
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = rfi_no_bind,
	.control = rfi_no_control,
	.ops_open = rfi_ops_open,
	.tostr = rfi_no_tostr,
	.ops_set = rfi_no_ops_set,
};

int rfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context)
{
	struct rfi_fabric *fab;
	int ret;

	if (!attr || !attr->name)
		return -FI_EINVAL;
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	pthread_mutex_init(&fab->lock, NULL);
	ret = rfi_errno(rapt_ia_open(attr->name, &fab->ia));
	if (ret)
		goto err_free;
	ret = rfi_errno(rapt_ia_query(fab->ia, &fab->attr, sizeof(fab->attr)));
	if (ret)
		goto err_close;
	fab->fabric.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric.fid.context = context;
	fab->fabric.fid.ops = &fabric_fi_ops;
	fab->fabric.ops = &fabric_ops;
	fab->fabric.api_version = RFI_FI_VERSION;
	*fabric = &fab->fabric;
	return 0;

err_close:
	rapt_ia_close(fab->ia);
err_free:
	pthread_mutex_destroy(&fab->lock);
	free(fab);
	return ret == -FI_EINVAL ? -FI_ENODATA : ret;
}
