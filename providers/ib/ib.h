/* SPDX-License-Identifier: MIT */
/*
 * ib provider: rapt on InfiniBand and RoCE devices through rdma-core
 * (HCAs, and the Linux kernel's soft-RoCE, rxe).  Everything it shares
 * with the iwarp provider is the verbs layer (providers/verbs/); here is
 * only what differs on IB:
 *
 *   ib_prov.c  the descriptor, IB's private-data limits and caps, the QP
 *              INIT transition (port, P_Key), what a REJ's reason means,
 *              what rapt_info says about a port (link layer, GID)
 *   ib_rtr.c   RTR and RTS: the EP's own QP moved by rapt through
 *              rdma_init_qp_attr (rdma_cm never owns it), the RTU the
 *              active side sends, and the passive side's ESTABLISHED on
 *              the RTU or on the first inbound message (COMM_EST)
 */
#ifndef RAPT_PROVIDERS_IB_IB_H
#define RAPT_PROVIDERS_IB_IB_H

#include "../verbs/verbs.h"

#define IB_NAME "ib"

/*
 * Private data through rdma_cm on IB and RoCE (the IB CM's fields minus
 * rdma_cm's own header, which only the REQ carries: 36 bytes of 92):
 * REQ 56, REP 196, REJ 148.  Measured on rxe (tests/vm/suite-ib.sh,
 * tests/interop/cm_pdata_limits.c): one byte more fails with EINVAL.
 * The receiver always gets the whole field, zero-padded: rapt's header
 * carries the true length.
 */
#define IB_PDATA_REQ	56
#define IB_PDATA_REP	196
#define IB_PDATA_REJ	148

/* IB CM REJ reasons rdma_cm reports as the status of REJECTED. */
#define IB_REJ_NO_QP			1
#define IB_REJ_NO_EEC			2
#define IB_REJ_NO_RESOURCES		3
#define IB_REJ_TIMEOUT			4
#define IB_REJ_INVALID_SERVICE_ID	8
#define IB_REJ_STALE_CONN		10
#define IB_REJ_CONSUMER_DEFINED		28
#define IB_REJ_VENDOR_OPTION		35

int ib_qp_connect(struct vb_ep *ep, struct rdma_cm_id *id, bool active);
void ib_request(struct vb_req *req);
bool ib_passive_up(struct vb_ep *ep, const struct rapt_event *ev);
void ib_qp_event(struct vb_ep *ep, enum ibv_event_type type);

#endif /* RAPT_PROVIDERS_IB_IB_H */
