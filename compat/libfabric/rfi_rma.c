// SPDX-License-Identifier: MIT
/*
 * RDMA read and write: straight onto rapt, no slot and no credit (a
 * tagged transfer needs no receive at the target).
 */
#include "rfi.h"

static ssize_t rma_post_locked(struct rfi_ep *ep, bool write,
			       const struct iovec *iov, void **desc,
			       size_t count, uint64_t addr, uint64_t key,
			       void *context, uint64_t flags, bool report)
{
	uint64_t op = FI_RMA | (write ? FI_WRITE : FI_READ);
	bool inject = flags & FI_INJECT;
	struct rapt_sge sgl[RFI_IOV_MAX];
	uint32_t idx;
	size_t len;
	int n, rc;

	if (ep->state != RFI_EP_CONNECTED)
		return -FI_EOPBADSTATE;
	if (count > ep->info->tx_attr->iov_limit || key > UINT32_MAX)
		return -FI_EINVAL;
	n = inject ? rfi_inline_sgl(sgl, iov, count, &len) :
		     rfi_sgl(sgl, iov, desc, count, &len);
	if (n < 0)
		return n;
	/* the inject size leaves room for a message header RMA lacks */
	if (inject && len > ep->info->tx_attr->inject_size)
		return -FI_EINVAL;
	if (rfi_tx_get(ep, context, op, len, report, &idx))
		return -FI_EAGAIN;
	if (write)
		rc = rapt_ep_post_write(ep->rep, sgl, (unsigned int)n, idx,
					addr, (uint32_t)key,
					inject ? RAPT_POST_INLINE : 0);
	else
		rc = rapt_ep_post_read(ep->rep, sgl, (unsigned int)n, idx,
				       addr, (uint32_t)key, 0);
	if (rc) {
		rfi_tx_put(ep, idx);
		return rfi_post_status(rc);
	}
	return 0;
}

/* @report: false for fi_inject_write(), which never completes */
static ssize_t rma_post(struct fid_ep *fep, bool write,
			const struct iovec *iov, void **desc, size_t count,
			uint64_t addr, uint64_t key, void *context,
			uint64_t flags, bool report)
{
	struct rfi_ep *ep = (struct rfi_ep *)fep;
	ssize_t ret;

	if (flags & FI_REMOTE_CQ_DATA)
		return -FI_ENOSYS;	/* the CQ data size is 0 */
	if (!write && (flags & FI_INJECT))
		return -FI_EINVAL;	/* a read's sink cannot be copied now */
	if (report)
		report = !ep->tx_selective || (flags & FI_COMPLETION);
	pthread_mutex_lock(&ep->dom->fab->lock);
	ret = rma_post_locked(ep, write, iov, desc, count, addr, key, context,
			      flags, report);
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
			msg->context, flags, true);
}

static ssize_t rma_read(struct fid_ep *fep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, uint64_t addr, uint64_t key,
			void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rma_post(fep, false, &iov, &desc, 1, addr, key, context,
			op_flags(fep), true);
}

static ssize_t rma_readv(struct fid_ep *fep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src_addr,
			 uint64_t addr, uint64_t key, void *context)
{
	return rma_post(fep, false, iov, desc, count, addr, key, context,
			op_flags(fep), true);
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
			op_flags(fep), true);
}

static ssize_t rma_writev(struct fid_ep *fep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest_addr,
			  uint64_t addr, uint64_t key, void *context)
{
	return rma_post(fep, true, iov, desc, count, addr, key, context,
			op_flags(fep), true);
}

static ssize_t rma_writemsg(struct fid_ep *fep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	return rma_msg(fep, true, msg, flags);
}

static ssize_t rma_inject(struct fid_ep *fep, const void *buf, size_t len,
			  fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rma_post(fep, true, &iov, NULL, 1, addr, key, NULL, FI_INJECT,
			false);
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
