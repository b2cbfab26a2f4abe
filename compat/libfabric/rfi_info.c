// SPDX-License-Identifier: MIT
/*
 * fi_getinfo: one fi_info per usable rapt IA, what it offers stated
 * truthfully, filtered by the consumer's hints.
 */
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>

#include "rfi.h"

#define RFI_CAPS (FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
		  FI_REMOTE_READ | FI_REMOTE_WRITE | FI_LOCAL_COMM | \
		  FI_REMOTE_COMM)
/* One reliable connection carries everything in order (an RC QP). */
#define RFI_MSG_ORDER (FI_ORDER_SAS | FI_ORDER_RAR | FI_ORDER_RAW | \
		       FI_ORDER_RAS | FI_ORDER_WAW | FI_ORDER_WAS | \
		       FI_ORDER_SAW)
#define RFI_MR_MODE (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | \
		     FI_MR_PROV_KEY)
#define RFI_TX_OP_FLAGS (FI_COMPLETION | FI_TRANSMIT_COMPLETE)
#define RFI_RX_OP_FLAGS FI_COMPLETION

static size_t tx_depth(const struct rapt_ia_attr *a)
{
	return a->max_send_depth < RFI_TX_DEPTH_MAX ?
	       a->max_send_depth : RFI_TX_DEPTH_MAX;
}

static void fill_attrs(struct fi_info *fi, const struct rapt_ia_attr *a)
{
	struct fi_tx_attr *tx = fi->tx_attr;
	struct fi_rx_attr *rx = fi->rx_attr;
	struct fi_ep_attr *ep = fi->ep_attr;
	struct fi_domain_attr *dom = fi->domain_attr;
	size_t sge = a->max_send_sge - 1;	/* one is rfi's header */

	fi->caps = RFI_CAPS;
	fi->mode = 0;
	fi->addr_format = a->local_addr.ss_family == AF_INET ?
			  FI_SOCKADDR_IN : FI_SOCKADDR_IN6;

	tx->caps = RFI_CAPS & ~(FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE);
	tx->op_flags = FI_COMPLETION;
	tx->msg_order = RFI_MSG_ORDER;
	tx->comp_order = FI_ORDER_NONE;
	/* an inject rides inline with rfi's header */
	tx->inject_size = a->caps & RAPT_CAP_INLINE &&
			  a->max_inline > RFI_HDR_LEN ?
			  a->max_inline - RFI_HDR_LEN : 0;
	tx->size = tx_depth(a);
	tx->iov_limit = sge < RFI_IOV_MAX ? sge : RFI_IOV_MAX;
	tx->rma_iov_limit = 1;

	rx->caps = FI_MSG | FI_RMA | FI_RECV | FI_REMOTE_READ |
		   FI_REMOTE_WRITE | FI_LOCAL_COMM | FI_REMOTE_COMM;
	rx->op_flags = FI_COMPLETION;
	rx->msg_order = RFI_MSG_ORDER;
	rx->comp_order = FI_ORDER_NONE;
	rx->total_buffered_recv = rfi_params.slots * rfi_params.slot_size;
	rx->size = rfi_params.slots;
	rx->iov_limit = RFI_IOV_MAX;

	ep->type = FI_EP_MSG;
	ep->protocol = FI_PROTO_UNSPEC;
	ep->protocol_version = RFI_CM_VERSION;
	/* longer messages than a slot travel as fragments (rfi_msg.c) */
	ep->max_msg_size = a->max_rdma_size;
	ep->msg_prefix_size = 0;
	ep->max_order_raw_size = a->max_rdma_size;
	ep->max_order_war_size = a->max_rdma_size;
	ep->max_order_waw_size = a->max_rdma_size;
	ep->tx_ctx_cnt = 1;
	ep->rx_ctx_cnt = 1;

	dom->threading = FI_THREAD_SAFE;
	/* rapt's providers run connection management on their own thread;
	 * messages move through rfi's slots only when the consumer polls. */
	dom->control_progress = FI_PROGRESS_AUTO;
	dom->data_progress = FI_PROGRESS_MANUAL;
	dom->resource_mgmt = FI_RM_DISABLED;
	dom->av_type = FI_AV_UNSPEC;
	dom->mr_mode = RFI_MR_MODE;
	dom->mr_key_size = sizeof(uint32_t);
	dom->cq_data_size = 0;
	dom->cq_cnt = 1024;
	dom->ep_cnt = a->max_ep;
	dom->tx_ctx_cnt = a->max_ep;
	dom->rx_ctx_cnt = a->max_ep;
	dom->max_ep_tx_ctx = 1;
	dom->max_ep_rx_ctx = 1;
	dom->max_ep_stx_ctx = 0;
	dom->max_ep_srx_ctx = 0;
	dom->mr_iov_limit = 1;
	dom->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	dom->mr_cnt = 65536;

	fi->fabric_attr->prov_version = RFI_PROV_VERSION;
	fi->fabric_attr->api_version = RFI_FI_VERSION;
}

static struct fi_info *info_new(const struct rapt_ia_attr *a)
{
	struct fi_info *fi = fi_allocinfo();

	if (!fi)
		return NULL;
	fill_attrs(fi, a);
	fi->fabric_attr->name = strdup(a->name);
	/* prov_name stays NULL: libfabric names core providers itself */
	fi->domain_attr->name = strdup(a->name);
	fi->src_addr = malloc(sizeof(struct sockaddr_storage));
	if (!fi->fabric_attr->name || !fi->domain_attr->name ||
	    !fi->src_addr) {
		fi_freeinfo(fi);
		return NULL;
	}
	fi->src_addrlen = rfi_sockaddr_len(&a->local_addr);
	memcpy(fi->src_addr, &a->local_addr, fi->src_addrlen);
	((struct sockaddr_in *)fi->src_addr)->sin_port = 0;
	return fi;
}

static bool str_ok(const char *hint, const char *ours)
{
	return !hint || !strcmp(hint, ours);
}

/* A utility provider asks with a list ("rapt;^ofi_rxm"): rapt must be
 * one of its names, not excluded. */
static bool prov_ok(const char *hint)
{
	size_t n = strlen(RFI_PROV_NAME);
	const char *p = hint;

	if (!hint)
		return true;
	while (p && *p) {
		if (!strncasecmp(p, RFI_PROV_NAME, n) &&
		    (p[n] == ';' || p[n] == '\0'))
			return true;
		p = strchr(p, ';');
		p = p ? p + 1 : NULL;
	}
	return false;
}

/* The hints ask for nothing rfi lacks. */
static bool hints_match(const struct fi_info *h, const struct fi_info *fi)
{
	if (!h)
		return true;
	if (h->caps & ~fi->caps)
		return false;
	if (h->addr_format != FI_FORMAT_UNSPEC &&
	    h->addr_format != fi->addr_format)
		return false;
	if (h->fabric_attr &&
	    (!str_ok(h->fabric_attr->name, fi->fabric_attr->name) ||
	     !prov_ok(h->fabric_attr->prov_name)))
		return false;
	if (h->ep_attr && h->ep_attr->type != FI_EP_UNSPEC &&
	    h->ep_attr->type != FI_EP_MSG)
		return false;
	if (h->ep_attr && h->ep_attr->max_msg_size >
	    fi->ep_attr->max_msg_size)
		return false;
	if (h->domain_attr) {
		const struct fi_domain_attr *d = h->domain_attr;

		if (!str_ok(d->name, fi->domain_attr->name))
			return false;
		/* rfi needs descriptors and uses virtual addresses and its
		 * own keys: a consumer that cannot follow is refused.
		 * FI_MR_UNSPEC and FI_MR_BASIC (0, 1) say "anything". */
		if (d->mr_mode > FI_MR_BASIC &&
		    (fi->domain_attr->mr_mode & ~d->mr_mode))
			return false;
		if (d->data_progress == FI_PROGRESS_AUTO)
			return false;
		if (d->caps & ~fi->domain_attr->caps)
			return false;
	}
	if (h->tx_attr && (h->tx_attr->msg_order & ~RFI_MSG_ORDER ||
			   h->tx_attr->op_flags & ~RFI_TX_OP_FLAGS ||
			   h->tx_attr->inject_size > fi->tx_attr->inject_size))
		return false;
	if (h->rx_attr && (h->rx_attr->msg_order & ~RFI_MSG_ORDER ||
			   h->rx_attr->op_flags & ~RFI_RX_OP_FLAGS))
		return false;
	return true;
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return a4->sin_addr.s_addr == b4->sin_addr.s_addr ||
		       b4->sin_addr.s_addr == htonl(INADDR_ANY);
	return !memcmp(&a6->sin6_addr, &b6->sin6_addr, 16) ||
	       IN6_IS_ADDR_UNSPECIFIED(&b6->sin6_addr);
}

/* node and service, or the hints' addresses, into source and dest. */
static int resolve(const char *node, const char *service, uint64_t flags,
		   const struct fi_info *hints, struct sockaddr_storage *src,
		   struct sockaddr_storage *dst)
{
	struct addrinfo ai = { .ai_socktype = SOCK_STREAM }, *res;
	struct sockaddr_storage *to;

	src->ss_family = AF_UNSPEC;
	dst->ss_family = AF_UNSPEC;
	if (hints && hints->src_addr &&
	    hints->src_addrlen <= sizeof(*src))
		memcpy(src, hints->src_addr, hints->src_addrlen);
	if (hints && hints->dest_addr &&
	    hints->dest_addrlen <= sizeof(*dst))
		memcpy(dst, hints->dest_addr, hints->dest_addrlen);
	if (!node && !service)
		return 0;
	to = flags & FI_SOURCE ? src : dst;
	if (flags & FI_SOURCE)
		ai.ai_flags = AI_PASSIVE;
	if (getaddrinfo(node, service, &ai, &res))
		return -FI_ENODATA;
	memcpy(to, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static bool addr_fits(const struct rfi_ia_desc *d,
		      const struct sockaddr_storage *src,
		      const struct sockaddr_storage *dst)
{
	const struct sockaddr *ia = (const void *)&d->attr.local_addr;

	if (src->ss_family != AF_UNSPEC &&
	    !same_ip(ia, (const struct sockaddr *)src))
		return false;
	if (dst->ss_family != AF_UNSPEC && dst->ss_family != ia->sa_family)
		return false;
	return true;
}

static int set_addrs(struct fi_info *fi, const struct sockaddr_storage *src,
		     const struct sockaddr_storage *dst)
{
	if (src->ss_family != AF_UNSPEC)
		((struct sockaddr_in *)fi->src_addr)->sin_port =
			((const struct sockaddr_in *)src)->sin_port;
	if (dst->ss_family == AF_UNSPEC)
		return 0;
	fi->dest_addrlen = rfi_sockaddr_len(dst);
	fi->dest_addr = malloc(fi->dest_addrlen);
	if (!fi->dest_addr)
		return -FI_ENOMEM;
	memcpy(fi->dest_addr, dst, fi->dest_addrlen);
	return 0;
}

int rfi_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info)
{
	struct sockaddr_storage src, dst;
	struct fi_info *head = NULL, **tail = &head, *fi;
	const struct rfi_ia_desc *ias;
	size_t n, i;
	int ret;

	ret = rfi_ia_list(&ias, &n);
	if (ret)
		return ret;
	ret = resolve(node, service, flags, hints, &src, &dst);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (!addr_fits(&ias[i], &src, &dst))
			continue;
		fi = info_new(&ias[i].attr);
		if (!fi || set_addrs(fi, &src, &dst)) {
			fi_freeinfo(fi);
			fi_freeinfo(head);
			return -FI_ENOMEM;
		}
		if (!hints_match(hints, fi)) {
			fi_freeinfo(fi);
			continue;
		}
		*tail = fi;
		tail = &fi->next;
	}
	if (!head)
		return -FI_ENODATA;
	*info = head;
	return 0;
}
