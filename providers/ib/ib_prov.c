/* SPDX-License-Identifier: MIT */
/*
 * ib provider: the descriptor.  Devices are the ibverbs devices whose
 * transport is InfiniBand (HCAs, RoCE NICs, kernel rxe); the IA name is
 * "ib:<device>[:<port>]" ("ib:rxe0", "ib:mlx5_0:2").  On a RoCE port
 * (link layer Ethernet) rdma_cm resolves the IA's IP address to its GID
 * (RoCE v2 where the port has it, rdma_cm's preferred type) and rapt
 * takes the QP's address vector from rdma_cm (ib_rtr.c), so the GID
 * follows the address given.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "ib.h"

#define IB_VERSION	RAPT_VERSION_PACK(1, 0, 0)
#define IB_RANK		10	/* an RDMA device: ahead of software */
/* rxe's vendor id (RXE_VENDOR_ID in the kernel's rxe_param.h). */
#define IB_RXE_VENDOR	0xffffff
/* GID table entries rapt_info looks at for the address's GID. */
#define IB_GID_SCAN	16

/*
 * Not offered, and why (docs/ib-provider.md):
 *  - RAPT_CAP_SOLICITED: verbs sends solicited events but reports none
 *    on receive (struct ibv_wc has no such flag).
 *  - RAPT_CAP_DISCONNECT_PDATA: the IB CM's DREQ has room for 220 bytes,
 *    but librdmacm's rdma_disconnect() takes none: nothing would reach
 *    the peer.
 *  - RAPT_CAP_HANDSHAKE_LIMIT: the kernel's CM runs the handshake; only
 *    complete requests reach rapt.
 *  - RAPT_CAP_CONNECT_CANCEL: a connect is withdrawn when its rdma_cm id
 *    is destroyed (at ep_free), not at disconnect.
 *  - RAPT_CAP_SEND_INVALIDATE: IB invalidates only memory windows and
 *    fast-registered MRs, never an ibv_reg_mr() region, which is what an
 *    LMR is (rxe answers such a Send with Invalidate with a NAK).
 */
#define IB_CAPS (RAPT_CAP_RDMA_WRITE | RAPT_CAP_RDMA_READ |		\
		 RAPT_CAP_INLINE | RAPT_CAP_FENCE | RAPT_CAP_EVD_FD |	\
		 RAPT_CAP_PASSIVE_SEND_FIRST | RAPT_CAP_RAW_PDATA |	\
		 RAPT_CAP_MULTI_EVD_STREAMS | RAPT_CAP_ZERO_LENGTH |	\
		 RAPT_CAP_READ_CHECK | RAPT_CAP_PEER_ERRORS)

/* rxe completes a receive too short for the message with LOC_QP_OP_ERR
 * (its responder takes the copy's failure for a malformed WQE), where an
 * HCA reports LOC_LEN_ERR: rapt reports LOCAL_LENGTH either way. */
static void ib_ia_open(struct vb_ia *ia)
{
	ia->recv_short_op_err = ia->dattr.vendor_id == IB_RXE_VENDOR;
}

/* A port whose link layer is Ethernet is RoCE. */
static uint32_t ib_port_transport(const struct ibv_port_attr *pa)
{
	return pa->link_layer == IBV_LINK_LAYER_ETHERNET ?
	       RAPT_TRANSPORT_ROCE : RAPT_TRANSPORT_IB;
}

/* IB's INIT needs the port and a P_Key index too; rdma_cm's own
 * cma_ib_init_qp_attr uses the index of the default P_Key, 0 on RoCE and
 * on a port with the default partition. */
static int ib_qp_init(struct vb_ep *ep)
{
	struct ibv_qp_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.pkey_index = 0;
	qa.port_num = ep->ia->port;
	return vb_qp_to_init(ep, &qa, IBV_QP_PKEY_INDEX | IBV_QP_PORT);
}

/*
 * A REJ's reason (rdma_cm's status of REJECTED): only reason 28 comes
 * from the peer's consumer (rdma_reject); the others are the CM's.  A
 * rapt peer's own refusals (BUSY...) are consumer rejects with rapt's
 * marker in the private data, which the core reads first.
 */
static bool ib_reject(int status, uint32_t *reason)
{
	switch (status) {
	case IB_REJ_CONSUMER_DEFINED:
		return true;
	case IB_REJ_INVALID_SERVICE_ID:
		*reason = RAPT_REJECT_NO_LISTENER;
		break;
	case IB_REJ_NO_QP:
	case IB_REJ_NO_EEC:
	case IB_REJ_NO_RESOURCES:
		*reason = RAPT_REJECT_RESOURCES;
		break;
	case IB_REJ_STALE_CONN:
	case IB_REJ_VENDOR_OPTION:
		*reason = RAPT_REJECT_PROTOCOL;
		break;
	default:
		*reason = RAPT_REJECT_UNKNOWN;
		break;
	}
	return false;
}

/* Read the first line of @path into @buf; false if there is none. */
static bool sysfs_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "rec");	/* c: as rapt_sys_* */
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* The GID index and type of @addr on port 1 of @dev (IPv4: the mapped
 * GID; IPv6: the address itself), or -1. */
static int roce_gid(const char *dev, const struct sockaddr *addr,
		    char *type, size_t type_len)
{
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)addr;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)addr;
	struct in6_addr want, got;
	char path[160], line[64];
	int i, v2 = -1, any = -1;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return -1;

	memset(&want, 0, sizeof(want));
	if (addr->sa_family == AF_INET) {
		want.s6_addr[10] = 0xff;
		want.s6_addr[11] = 0xff;
		memcpy(&want.s6_addr[12], &s4->sin_addr, 4);
	} else {
		want = s6->sin6_addr;
	}
	for (i = 0; i < IB_GID_SCAN && v2 < 0; i++) {
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/gids/%d", dev, i);
		if (!sysfs_line(path, line, sizeof(line)) ||
		    inet_pton(AF_INET6, line, &got) != 1 ||
		    memcmp(&got, &want, sizeof(got)))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/gid_attrs/types/%d",
			 dev, i);
		if (!sysfs_line(path, line, sizeof(line)))
			continue;
		line[type_len - 1] = '\0';
		if (any < 0) {
			any = i;
			memcpy(type, line, type_len);
		}
		if (strstr(line, "v2")) {
			v2 = i;
			memcpy(type, line, type_len);
		}
	}
	return v2 >= 0 ? v2 : any;
}

/* What rapt_info says about a usable device: its port's link layer and,
 * on RoCE, the GID rdma_cm uses for the IA's address. */
static void ib_device_note(const char *dev, const struct sockaddr *addr,
			   char *buf, size_t len)
{
	char path[128], ll[32] = "", type[32] = "", a[INET6_ADDRSTRLEN] = "?";
	const void *ip = addr->sa_family == AF_INET ?
			 (const void *)&((const struct sockaddr_in *)addr)->sin_addr :
			 (const void *)&((const struct sockaddr_in6 *)addr)->sin6_addr;
	int idx;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/link_layer", dev);
	sysfs_line(path, ll, sizeof(ll));
	inet_ntop(addr->sa_family, ip, a, sizeof(a));
	if (strcmp(ll, "Ethernet")) {
		snprintf(buf, len,
			 "InfiniBand (link layer %s); address %s through IPoIB",
			 ll[0] ? ll : "unknown", a);
		return;
	}
	idx = roce_gid(dev, addr, type, sizeof(type));
	if (idx < 0)
		snprintf(buf, len,
			 "RoCE (link layer Ethernet): no GID for %s among the first %d yet",
			 a, IB_GID_SCAN);
	else
		snprintf(buf, len,
			 "RoCE (link layer Ethernet): %s is GID %d (%s), which rdma_cm uses",
			 a, idx, type);
}

static const struct vb_transport ib_transport = {
	.name = IB_NAME,
	.version = IB_VERSION,
	.description = "InfiniBand and RoCE devices (HCAs, kernel soft-RoCE rxe) through rdma-core",
	.kind = "InfiniBand/RoCE",
	.ibv_transport = IBV_TRANSPORT_IB,
	.transport = RAPT_TRANSPORT_IB,
	.rank = IB_RANK,
	.caps = IB_CAPS,
	.pdata_connect = IB_PDATA_REQ,
	.pdata_accept = IB_PDATA_REP,
	.pdata_reject = IB_PDATA_REJ,
	.tcp_wire = false,
	.qp_reuse = true,
	.disc_proves_up = true,
	.qp_err_is_error = true,
	.ia_open = ib_ia_open,
	.port_transport = ib_port_transport,
	.qp_init = ib_qp_init,
	.qp_connect = ib_qp_connect,
	.request = ib_request,
	.passive_up = ib_passive_up,
	.reject = ib_reject,
	.qp_event = ib_qp_event,
	.device_note = ib_device_note,
};

const struct vb_transport *const vb_tp = &ib_transport;
