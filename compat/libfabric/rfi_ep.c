// SPDX-License-Identifier: MIT
/*
 * Active endpoints: the object, its bindings and its life.  The rapt EP
 * is created by fi_enable() (or by connect/accept on an EP not enabled
 * yet), when the EQ and CQs it needs at creation are known.
 */
#include <stdlib.h>
#include <string.h>

#include "rfi.h"

/* The one place an rfi EP changes state. */
void rfi_ep_set_state(struct rfi_ep *ep, enum rfi_ep_state state)
{
	ep->state = state;
}

/* The rfi EP behind a rapt EP; NULL once it is closed (rapt's handle is
 * stale then, and the events still queued for it are dropped). */
struct rfi_ep *rfi_ep_of(struct rapt_ep *rep)
{
	void *ctx;

	if (rapt_context_get(rep, &ctx))
		return NULL;
	return ctx;
}

int rfi_ep_enable(struct rfi_ep *ep)
{
	struct rapt_ep_attr attr = { 0 };
	int ret;

	if (ep->state != RFI_EP_IDLE)
		return 0;
	if (!ep->eq)
		return -FI_ENOEQ;
	if (!ep->tx_cq || !ep->rx_cq)
		return -FI_ENOCQ;
	attr.max_send = (uint32_t)ep->info->tx_attr->size;
	attr.max_recv = (uint32_t)rfi_params.slots;
	attr.max_send_sge = (uint32_t)ep->info->tx_attr->iov_limit + 1;
	attr.max_recv_sge = 1;
	if (ep->info->tx_attr->inject_size)
		attr.max_inline = (uint32_t)(ep->info->tx_attr->inject_size +
					     RFI_HDR_LEN);
	/* ofi_rxm moves every large message with RDMA reads, many at once:
	 * rapt's default of 8 outstanding reads would queue them */
	attr.rdma_read_in = ep->dom->fab->attr.max_rdma_read_in;
	attr.rdma_read_out = ep->dom->fab->attr.max_rdma_read_out;
	ret = rfi_errno(rapt_ep_create(ep->dom->pz, ep->rx_cq->evd,
				       ep->tx_cq->evd, ep->eq->evd, &attr,
				       &ep->rep));
	if (ret)
		return ret;
	rapt_context_set(ep->rep, ep);
	ret = rfi_msg_setup(ep);
	if (ret) {
		rapt_ep_free(ep->rep);
		ep->rep = NULL;
		return ret;
	}
	rfi_ep_set_state(ep, RFI_EP_ENABLED);
	return 0;
}

static int ep_bind_cq(struct rfi_ep *ep, struct rfi_cq *cq, uint64_t flags)
{
	if (cq->dom != ep->dom)
		return -FI_EINVAL;
	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EINVAL;
	if ((flags & FI_TRANSMIT && ep->tx_cq) ||
	    (flags & FI_RECV && ep->rx_cq))
		return -FI_EINVAL;
	if (flags & FI_TRANSMIT) {
		ep->tx_cq = cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
		cq->refs++;
	}
	if (flags & FI_RECV) {
		ep->rx_cq = cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
		cq->refs++;
	}
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct rfi_ep *ep = (struct rfi_ep *)fid;
	struct rfi_eq *eq;
	int ret = 0;

	pthread_mutex_lock(&ep->dom->fab->lock);
	if (ep->state != RFI_EP_IDLE) {
		ret = -FI_EOPBADSTATE;
	} else if (bfid->fclass == FI_CLASS_CQ) {
		ret = ep_bind_cq(ep, (struct rfi_cq *)bfid, flags);
	} else if (bfid->fclass == FI_CLASS_EQ) {
		eq = (struct rfi_eq *)bfid;
		if (ep->eq || eq->fab != ep->dom->fab) {
			ret = -FI_EINVAL;
		} else {
			ep->eq = eq;
			eq->refs++;
		}
	} else {
		ret = -FI_ENOSYS;	/* counters, AVs, SRX: not offered */
	}
	pthread_mutex_unlock(&ep->dom->fab->lock);
	return ret;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct rfi_ep *ep = (struct rfi_ep *)fid;
	int ret;

	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	pthread_mutex_lock(&ep->dom->fab->lock);
	ret = rfi_ep_enable(ep);
	pthread_mutex_unlock(&ep->dom->fab->lock);
	return ret;
}

static int ep_close(struct fid *fid)
{
	struct rfi_ep *ep = (struct rfi_ep *)fid;
	struct rfi_fabric *fab = ep->dom->fab;

	pthread_mutex_lock(&fab->lock);
	if (ep->rep) {
		/* abrupt if still connected; its queued events go stale */
		rapt_ep_free(ep->rep);
		rfi_msg_teardown(ep);
	}
	if (ep->creq) {
		rapt_cr_reject(ep->creq->cr, NULL, 0);
		free(ep->creq);
	}
	if (ep->eq) {
		/* after rapt_ep_free(): its events still in the EVD are
		 * stale and dropped, those already converted go here */
		rfi_eq_remove_fid(ep->eq, &ep->ep.fid);
		ep->eq->refs--;
	}
	if (ep->tx_cq)
		ep->tx_cq->refs--;
	if (ep->rx_cq)
		ep->rx_cq->refs--;
	ep->dom->refs--;
	pthread_mutex_unlock(&fab->lock);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = rfi_ops_open,
	.tostr = rfi_no_tostr,
	.ops_set = rfi_no_ops_set,
};

static int ep_getopt(fid_t fid, int level, int optname, void *optval,
		     size_t *optlen)
{
	struct rfi_ep *ep = (struct rfi_ep *)fid;

	return rfi_getopt_cm(ep->dom->fab, level, optname, optval, optlen);
}

static ssize_t ep_rx_size_left(struct fid_ep *fep)
{
	struct rfi_ep *ep = (struct rfi_ep *)fep;

	return (ssize_t)(ep->urq_len - ep->urq_count);
}

static ssize_t ep_tx_size_left(struct fid_ep *fep)
{
	struct rfi_ep *ep = (struct rfi_ep *)fep;

	return (ssize_t)ep->tx_nfree;
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = rfi_no_cancel,
	.getopt = ep_getopt,
	.setopt = rfi_no_setopt,
	.tx_ctx = rfi_no_tx_ctx,
	.rx_ctx = rfi_no_rx_ctx,
	.rx_size_left = ep_rx_size_left,
	.tx_size_left = ep_tx_size_left,
};

int rfi_endpoint(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **fep, void *context)
{
	struct rfi_domain *dom = (struct rfi_domain *)domain;
	struct rfi_ep *ep;

	if (!info || !info->ep_attr || !info->tx_attr ||
	    info->ep_attr->type != FI_EP_MSG)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	if (ep->info->tx_attr->size == 0 ||
	    ep->info->tx_attr->size > dom->fab->attr.max_send_depth)
		ep->info->tx_attr->size = dom->fab->attr.max_send_depth;
	if (ep->info->tx_attr->size > RFI_TX_DEPTH_MAX)
		ep->info->tx_attr->size = RFI_TX_DEPTH_MAX;
	if (ep->info->tx_attr->iov_limit == 0 ||
	    ep->info->tx_attr->iov_limit >= dom->fab->attr.max_send_sge)
		ep->info->tx_attr->iov_limit = dom->fab->attr.max_send_sge - 1;
	if (ep->info->tx_attr->iov_limit > RFI_IOV_MAX)
		ep->info->tx_attr->iov_limit = RFI_IOV_MAX;
	if (!(dom->fab->attr.caps & RAPT_CAP_INLINE) ||
	    dom->fab->attr.max_inline <= RFI_HDR_LEN)
		ep->info->tx_attr->inject_size = 0;
	else if (ep->info->tx_attr->inject_size >
		 dom->fab->attr.max_inline - RFI_HDR_LEN)
		ep->info->tx_attr->inject_size =
			dom->fab->attr.max_inline - RFI_HDR_LEN;
	if (info->handle && info->handle->fclass == FI_CLASS_CONNREQ)
		ep->creq = (struct rfi_connreq *)info->handle;
	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &ep_fi_ops;
	ep->ep.ops = &ep_ops;
	ep->ep.cm = &rfi_ep_cm_ops;
	ep->ep.msg = &rfi_msg_ops;
	ep->ep.rma = &rfi_rma_ops;
	ep->ep.tagged = &rfi_no_tagged_ops;
	ep->ep.atomic = &rfi_no_atomic_ops;
	ep->ep.collective = &rfi_no_collective_ops;
	ep->dom = dom;
	pthread_mutex_lock(&dom->fab->lock);
	dom->refs++;
	pthread_mutex_unlock(&dom->fab->lock);
	*fep = &ep->ep;
	return 0;
}
