// SPDX-License-Identifier: MIT
/*
 * Connection management of active endpoints: connect, accept, shutdown
 * and names.  Connect and accept data carry rfi's prefix (RFI_CM_PREFIX
 * bytes: magic, version, the sender's receive-slot count) before the
 * consumer's bytes; reject data goes raw.
 */
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "rfi.h"

#define RFI_CONNECT_TIMEOUT_US	(60 * 1000000LL)

static size_t cm_pdata(struct rfi_ep *ep, uint8_t *buf, const void *param,
		       size_t len)
{
	buf[0] = RFI_CM_MAGIC;
	buf[1] = RFI_CM_VERSION;
	buf[2] = (uint8_t)(ep->nslots & 0xff);
	buf[3] = (uint8_t)(ep->nslots >> 8);
	if (len)
		memcpy(buf + RFI_CM_PREFIX, param, len);
	return RFI_CM_PREFIX + len;
}

static int ep_connect(struct fid_ep *fep, const void *addr, const void *param,
		      size_t paramlen)
{
	struct rfi_ep *ep = (struct rfi_ep *)fep;
	const struct sockaddr_in *sin = addr;
	uint8_t pdata[RFI_CM_PREFIX + 256];
	size_t n;
	int ret;

	if (!addr || !rfi_sockaddr_len(addr))
		return -FI_EINVAL;
	if (paramlen > rfi_cm_data_size(&ep->dom->fab->attr) ||
	    paramlen > sizeof(pdata) - RFI_CM_PREFIX)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->fab->lock);
	ret = rfi_ep_enable(ep);
	if (!ret && ep->state != RFI_EP_ENABLED)
		ret = -FI_EOPBADSTATE;
	if (ret)
		goto out;
	n = cm_pdata(ep, pdata, param, paramlen);
	/* sin_port sits at the same place in sockaddr_in6 */
	ret = rfi_errno(rapt_ep_connect(ep->rep, addr, ntohs(sin->sin_port),
					pdata, n, RFI_CONNECT_TIMEOUT_US));
	if (!ret)
		rfi_ep_set_state(ep, RFI_EP_CONNECTING);
out:
	pthread_mutex_unlock(&ep->dom->fab->lock);
	return ret;
}

static int ep_accept(struct fid_ep *fep, const void *param, size_t paramlen)
{
	struct rfi_ep *ep = (struct rfi_ep *)fep;
	uint8_t pdata[RFI_CM_PREFIX + 256];
	struct rfi_connreq *creq;
	size_t n;
	int ret;

	if (paramlen > rfi_cm_data_size(&ep->dom->fab->attr) ||
	    paramlen > sizeof(pdata) - RFI_CM_PREFIX)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->fab->lock);
	creq = ep->creq;
	ret = creq ? rfi_ep_enable(ep) : -FI_EOPBADSTATE;
	if (!ret && ep->state != RFI_EP_ENABLED)
		ret = -FI_EOPBADSTATE;
	if (ret)
		goto out;
	n = cm_pdata(ep, pdata, param, paramlen);
	ret = rapt_cr_accept(creq->cr, ep->rep, pdata, n);
	if (ret && ret != RAPT_ENOTCONN) {
		ret = rfi_errno(ret);
		goto out;
	}
	ep->creq = NULL;
	if (ret) {
		/* the requester went away; rapt freed the CR */
		free(creq);
		ret = -FI_ECONNABORTED;
		goto out;
	}
	ep->credits += creq->peer_slots;
	free(creq);
	rfi_ep_set_state(ep, RFI_EP_ACCEPTING);
out:
	pthread_mutex_unlock(&ep->dom->fab->lock);
	return ret;
}

static int ep_shutdown(struct fid_ep *fep, uint64_t flags)
{
	struct rfi_ep *ep = (struct rfi_ep *)fep;
	int ret = 0;

	pthread_mutex_lock(&ep->dom->fab->lock);
	if (ep->rep && ep->state != RFI_EP_SHUTDOWN) {
		ret = rapt_ep_disconnect(ep->rep, RAPT_CLOSE_GRACEFUL, NULL, 0);
		ret = ret == RAPT_ESTATE ? 0 : rfi_errno(ret);
	}
	pthread_mutex_unlock(&ep->dom->fab->lock);
	return ret;
}

static int ep_names(struct rfi_ep *ep, bool peer, void *addr,
		    size_t *addrlen)
{
	struct rapt_ep_info info;
	int ret;

	pthread_mutex_lock(&ep->dom->fab->lock);
	if (!ep->rep || ep->state < RFI_EP_CONNECTING) {
		pthread_mutex_unlock(&ep->dom->fab->lock);
		if (peer)
			return -FI_ENOTCONN;
		return rfi_name_copy(&ep->dom->fab->attr.local_addr, 0, addr,
				     addrlen);
	}
	ret = rfi_errno(rapt_ep_query(ep->rep, &info, sizeof(info)));
	pthread_mutex_unlock(&ep->dom->fab->lock);
	if (ret)
		return ret;
	if (peer)
		return rfi_name_copy(&info.remote_addr, 0, addr, addrlen);
	if (info.local_addr.ss_family == AF_UNSPEC)
		return rfi_name_copy(&ep->dom->fab->attr.local_addr, 0, addr,
				     addrlen);
	return rfi_name_copy(&info.local_addr, 0, addr, addrlen);
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return ep_names((struct rfi_ep *)fid, false, addr, addrlen);
}

static int ep_getpeer(struct fid_ep *fep, void *addr, size_t *addrlen)
{
	return ep_names((struct rfi_ep *)fep, true, addr, addrlen);
}

struct fi_ops_cm rfi_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = rfi_no_setname,
	.getname = ep_getname,
	.getpeer = ep_getpeer,
	.connect = ep_connect,
	.listen = rfi_no_listen,
	.accept = ep_accept,
	.reject = rfi_no_reject,
	.shutdown = ep_shutdown,
	.join = rfi_no_join,
};
