// SPDX-License-Identifier: MIT
/*
 * Memory registration over rapt LMRs (FI_MR_LOCAL | FI_MR_VIRT_ADDR |
 * FI_MR_ALLOCATED | FI_MR_PROV_KEY): the descriptor is the rfi_mr, the
 * key is the LMR's rkey, remote addresses are virtual addresses.
 */
#include <stdlib.h>

#include "rfi.h"

static int mr_close(struct fid *fid)
{
	struct rfi_mr *mr = (struct rfi_mr *)fid;
	struct rfi_domain *dom = mr->dom;
	int ret;

	pthread_mutex_lock(&dom->fab->lock);
	ret = rfi_errno(rapt_lmr_free(mr->lmr));
	if (!ret)
		dom->refs--;
	pthread_mutex_unlock(&dom->fab->lock);
	if (!ret)
		free(mr);
	return ret;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = rfi_no_bind,
	.control = rfi_no_control,
	.ops_open = rfi_ops_open,
	.tostr = rfi_no_tostr,
	.ops_set = rfi_no_ops_set,
};

static unsigned int access_of(uint64_t access)
{
	unsigned int a = 0;

	/* a receive buffer and an RDMA read's sink are written locally */
	if (access & (FI_RECV | FI_READ))
		a |= RAPT_MEM_LOCAL_WRITE;
	if (access & FI_REMOTE_READ)
		a |= RAPT_MEM_REMOTE_READ;
	if (access & FI_REMOTE_WRITE)
		a |= RAPT_MEM_REMOTE_WRITE | RAPT_MEM_LOCAL_WRITE;
	return a;
}

int rfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
	       uint64_t offset, uint64_t requested_key, uint64_t flags,
	       struct fid_mr **fmr, void *context)
{
	struct rfi_domain *dom = (struct rfi_domain *)fid;
	struct rfi_mr *mr;
	int ret;

	/* @flags: libfabric's own utility providers pass private bits
	 * (OFI_MR_NOCACHE): there is no cache here to bypass */
	if (fid->fclass != FI_CLASS_DOMAIN || offset || !len)
		return -FI_EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	pthread_mutex_lock(&dom->fab->lock);
	ret = rfi_errno(rapt_lmr_create(dom->pz, (void *)buf, len,
					access_of(access), &mr->lmr,
					&mr->info));
	if (!ret)
		dom->refs++;
	pthread_mutex_unlock(&dom->fab->lock);
	if (ret)
		goto err_free;
	/* FI_MR_VIRT_ADDR is promised in fi_info: a provider that names
	 * regions otherwise cannot be offered through it */
	if (mr->info.raddr != (uint64_t)(uintptr_t)buf) {
		mr->dom = dom;
		mr_close(&mr->mr.fid);
		return -FI_ENOSYS;
	}
	mr->dom = dom;
	mr->mr.fid.fclass = FI_CLASS_MR;
	mr->mr.fid.context = context;
	mr->mr.fid.ops = &mr_fi_ops;
	mr->mr.mem_desc = mr;
	mr->mr.key = mr->info.rkey;
	*fmr = &mr->mr;
	return 0;

err_free:
	free(mr);
	return ret;
}

int rfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		uint64_t access, uint64_t offset, uint64_t requested_key,
		uint64_t flags, struct fid_mr **mr, void *context)
{
	if (count != 1)
		return -FI_EINVAL;	/* mr_iov_limit is 1 */
	return rfi_mr_reg(fid, iov->iov_base, iov->iov_len, access, offset,
			  requested_key, flags, mr, context);
}

int rfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		   uint64_t flags, struct fid_mr **mr)
{
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	return rfi_mr_regv(fid, attr->mr_iov, attr->iov_count, attr->access,
			   attr->offset, attr->requested_key, flags, mr,
			   attr->context);
}

/* An inject's buffers need no descriptor: rapt copies them at once. */
int rfi_inline_sgl(struct rapt_sge *sgl, const struct iovec *iov,
		   size_t count, size_t *len)
{
	size_t i;

	*len = 0;
	for (i = 0; i < count; i++) {
		sgl[i].addr = (uint64_t)(uintptr_t)iov[i].iov_base;
		sgl[i].length = (uint32_t)iov[i].iov_len;
		sgl[i].lkey = 0;
		*len += iov[i].iov_len;
	}
	return (int)count;
}

/*
 * A consumer's iov and descriptors as rapt SGEs (FI_MR_LOCAL: every
 * non-empty buffer has a descriptor).
 */
int rfi_sgl(struct rapt_sge *sgl, const struct iovec *iov, void **desc,
	    size_t count, size_t *len)
{
	size_t i, n = 0, total = 0;
	struct rfi_mr *mr;

	for (i = 0; i < count; i++) {
		if (!iov[i].iov_len)
			continue;
		mr = desc ? desc[i] : NULL;
		if (!mr || iov[i].iov_len > UINT32_MAX)
			return -FI_EINVAL;
		sgl[n].addr = (uint64_t)(uintptr_t)iov[i].iov_base;
		sgl[n].length = (uint32_t)iov[i].iov_len;
		sgl[n].lkey = mr->info.lkey;
		total += iov[i].iov_len;
		n++;
	}
	*len = total;
	return (int)n;
}
