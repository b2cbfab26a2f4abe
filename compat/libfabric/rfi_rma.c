// SPDX-License-Identifier: MIT
/*
 * RDMA read and write: straight onto rapt, no slot and no credit (a
 * tagged transfer needs no receive at the target).
 */
#include "rfi.h"

static ssize_t rma_post_locked(struct rfi_ep *ep, bool write,
			       const struct iovec *iov, void **desc,
			       size_t count, uint64_t addr, uint64_t key,
			       void *context, uint64_t flags)
{
	struct rapt_sge sgl[RFI_IOV_MAX];
	uint64_t op = FI_RMA | (write ? FI_WRITE : FI_READ);
	uint32_t idx;
	size_t len;
	int n, rc;

	if (ep->state != RFI_EP_CONNECTED)
		return -FI_EOPBADSTATE;
	if (count > ep->info->tx_attr->iov_limit || key > UINT32_MAX)
		return -FI_EINVAL;
	n = rfi_sgl(sgl, iov, desc, count, &len);
	if (n < 0)
		return n;
	if (rfi_tx_get(ep, context, op, len,
		       !ep->tx_selective || (flags & FI_COMPLETION), &idx))
		return -FI_EAGAIN;
	if (write)
		rc = rapt_ep_post_write(ep->rep, sgl, (unsigned int)n, idx,
					addr, (uint32_t)key, 0);
	else
		rc = rapt_ep_post_read(ep->rep, sgl, (unsigned int)n, idx,
				       addr, (uint32_t)key, 0);
	if (rc) {
		rfi_tx_put(ep, idx);
		return rfi_post_status(rc);
	}
	return 0;
}

static ssize_t rma_post(struct fid_ep *fep, bool write,
			const struct iovec *iov, void **desc, size_t count,
			uint64_t addr, uint64_t key, void *context,
			uint64_t flags)
{
	struct rfi_ep *ep = (struct rfi_ep *)fep;
	ssize_t ret;

	if (flags & (FI_INJECT | FI_REMOTE_CQ_DATA))
		return -FI_ENOSYS;	/* inject and CQ data sizes are 0 */
	pthread_mutex_lock(&ep->dom->fab->lock);
	ret = rma_post_locked(ep, write, iov, desc, count, addr, key, context,
			      flags);
	pthread_mutex_unlock(&ep->dom->fab->lock);
	return ret;
}

static uint64_t op_flags(struct fid_ep *fep)
{
	return ((struct rfi_ep *)fep)->info->tx_attr->op_flags;
}

static ssize_t rma_msg(struct fid_ep *fep, bool write,
		       const struct fi_msg_rma *msg, uint64_t flags)
{
	if (msg->rma_iov_count != 1)
		return -FI_EINVAL;	/* rma_iov_limit is 1 */
	return rma_post(fep, write, msg->msg_iov, msg->desc, msg->iov_count,
			msg->rma_iov[0].addr, msg->rma_iov[0].key,
			msg->context, flags);
}

static ssize_t rma_read(struct fid_ep *fep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, uint64_t addr, uint64_t key,
			void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rma_post(fep, false, &iov, &desc, 1, addr, key, context,
			op_flags(fep));
}

static ssize_t rma_readv(struct fid_ep *fep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src_addr,
			 uint64_t addr, uint64_t key, void *context)
{
	return rma_post(fep, false, iov, desc, count, addr, key, context,
			op_flags(fep));
}

static ssize_t rma_readmsg(struct fid_ep *fep, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	return rma_msg(fep, false, msg, flags);
}

static ssize_t rma_write(struct fid_ep *fep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest_addr, uint64_t addr,
			 uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rma_post(fep, true, &iov, &desc, 1, addr, key, context,
			op_flags(fep));
}

static ssize_t rma_writev(struct fid_ep *fep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest_addr,
			  uint64_t addr, uint64_t key, void *context)
{
	return rma_post(fep, true, iov, desc, count, addr, key, context,
			op_flags(fep));
}

static ssize_t rma_writemsg(struct fid_ep *fep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	return rma_msg(fep, true, msg, flags);
}

static ssize_t rma_inject(struct fid_ep *fep, const void *buf, size_t len,
			  fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	return -FI_ENOSYS;
}

static ssize_t rma_writedata(struct fid_ep *fep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest_addr,
			     uint64_t addr, uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t rma_injectdata(struct fid_ep *fep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr,
			      uint64_t addr, uint64_t key)
{
	return -FI_ENOSYS;
}

struct fi_ops_rma rfi_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read,
	.readv = rma_readv,
	.readmsg = rma_readmsg,
	.write = rma_write,
	.writev = rma_writev,
	.writemsg = rma_writemsg,
	.inject = rma_inject,
	.writedata = rma_writedata,
	.injectdata = rma_injectdata,
};
