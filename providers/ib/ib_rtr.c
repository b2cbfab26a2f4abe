/* SPDX-License-Identifier: MIT */
/*
 * ib provider: RTR, RTS and when ESTABLISHED may be reported.
 *
 * The EP's QP exists from ep_create (INIT, receives may be posted) and is
 * never attached to an rdma_cm id: rdma_cm carries its number in the REQ
 * and REP, and rapt moves it itself with the attributes rdma_init_qp_attr
 * gives for the connection (the path, the GID of the address on RoCE, the
 * remote QP number and PSN), with the read depths the EPs negotiated:
 *
 *   passive  RTR and RTS before rdma_accept() sends the REP (rdma_cm's
 *            own order: the QP is ready before the peer can send);
 *            ESTABLISHED when rdma_cm says so: on the RTU, or, when the
 *            RTU is lost, on the first inbound message: a receive
 *            completion of the accepting EP (rapt sees it first), or the
 *            QP's COMM_EST async event (a write or read with no
 *            completion here); either is passed on to rdma_notify(), so
 *            that the kernel's CM stops waiting for the RTU
 *   active   on the REP (rdma_cm's CONNECT_RESPONSE, since no QP is
 *            attached): RTR, RTS, then rdma_establish() sends the RTU;
 *            ESTABLISHED right after, the QP may send
 *
 * So ESTABLISHED means "may send" on both sides, as on every transport:
 * the passive QP is RTS before the REP leaves; the active one before its
 * ESTABLISHED is reported.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "ib.h"

/*
 * rdma_init_qp_attr() on RoCE sets mask bits 21-24 that the ucma ABI
 * uses for itself (librdmacm's ucma_modify_qp_rtr masks them off too).
 */
#define IB_UCMA_MASK_BITS	0xe00000

static const char *state_name(enum ibv_qp_state state)
{
	return state == IBV_QPS_RTR ? "RTR" : "RTS";
}

static int qp_to(struct vb_ep *ep, struct rdma_cm_id *id,
		 enum ibv_qp_state state)
{
	struct ibv_qp_attr qa;
	int mask = 0, err;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = state;
	if (rdma_init_qp_attr(id, &qa, &mask)) {
		/* The CM has no connection to describe: the peer left
		 * (rejected, or timed out), its REJ on the way. */
		err = errno;
		rapt_prov_set_error("%s: rdma_init_qp_attr(%s) for QP %u: %s (the peer gave the connection up)",
				    IB_NAME, state_name(state),
				    ep->qp->qp_num, strerror(err));
		return RAPT_ENOTCONN;
	}
	mask &= ~IB_UCMA_MASK_BITS;
	/* The depths the EPs negotiated, not the device's maximum. */
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qa.max_dest_rd_atomic = (uint8_t)ep->ird;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qa.max_rd_atomic = (uint8_t)ep->ord;
	err = ibv_modify_qp(ep->qp, &qa, mask);
	if (err) {
		rapt_prov_set_error("%s: QP %u to %s: %s", IB_NAME,
				    ep->qp->qp_num, state_name(state),
				    strerror(err));
		return rapt_errno_status(err);
	}
	if (state == IBV_QPS_RTR)
		vb_dbg("QP %u: RTR to QP %u, GID index %u, read depth %u/%u",
		       ep->qp->qp_num, qa.dest_qp_num, qa.ah_attr.grh.sgid_index,
		       ep->ird, ep->ord);
	return 0;
}

/**
 * ib_qp_connect - move the EP's QP to RTS for the connection of @id
 * @ep: the EP (INIT; ep->ird and ep->ord negotiated)
 * @id: the rdma_cm id of the connection
 * @active: the REP is in (then the RTU goes out), else an accept
 *
 * Runs on the engine's runner.
 *
 * Return: 0, or a RAPT_E* code (the reason set).
 */
int ib_qp_connect(struct vb_ep *ep, struct rdma_cm_id *id, bool active)
{
	int ret;

	ret = qp_to(ep, id, IBV_QPS_RTR);
	if (!ret)
		ret = qp_to(ep, id, IBV_QPS_RTS);
	if (!ret && active && rdma_establish(id)) {
		ret = rapt_errno_status(errno);
		rapt_prov_set_error("%s: rdma_establish (the RTU) for QP %u: %s",
				    IB_NAME, ep->qp->qp_num, strerror(errno));
	}
	if (ret && active)
		vb_err("connect of QP %u: %s", ep->qp->qp_num,
		       rapt_last_error());
	return ret;
}

/*
 * rdma_cm reports a request's read depths as the REQ has them: its
 * initiator depth (the ORD the requester wants) as initiator_depth, its
 * responder resources (the requester's IRD) as responder_resources.  The
 * layer reads them the iWARP way round (cma_iw_handler swaps them).
 */
void ib_request(struct vb_req *req)
{
	uint32_t ord = req->ird;

	req->ird = req->ord;
	req->ord = ord;
}

/* Tell the kernel's CM that the connection is up (the RTU was lost). */
static void notify_established(struct vb_ep *ep)
{
	struct rdma_cm_id *id;

	pthread_mutex_lock(&ep->lock);
	id = ep->freeing || ep->teardown ? NULL : ep->id;
	pthread_mutex_unlock(&ep->lock);
	if (id && rdma_notify(id, IBV_EVENT_COMM_EST))
		vb_dbg("QP %u: rdma_notify(COMM_EST): %m", ep->qp->qp_num);
}

static void notify_deferred(void *arg)
{
	notify_established(arg);
}

/**
 * ib_passive_up - may the accepting EP report ESTABLISHED now
 * @ep: the EP (ep->lock held)
 * @ev: a completion held back, or NULL: rdma_cm's ESTABLISHED
 *
 * A successful receive is the peer's first message: it sent, so it has
 * our REP and its QP is RTS; its RTU is late or lost.
 */
bool ib_passive_up(struct vb_ep *ep, const struct rapt_event *ev)
{
	if (!ev)
		return true;
	if (ev->type != RAPT_EV_DTO || ev->u.dto.op != RAPT_OP_RECV ||
	    ev->u.dto.status != RAPT_DTO_SUCCESS)
		return false;
	vb_dbg("QP %u: a message before the RTU: ESTABLISHED",
	       ep->qp->qp_num);
	if (rapt_engine_defer(ep->ia->eng, notify_deferred, ep))
		vb_warn("QP %u: cannot pass COMM_EST on to rdma_cm",
			ep->qp->qp_num);
	return true;
}

/**
 * ib_qp_event - an async event of an EP's QP (the engine's runner)
 * @ep: the EP
 * @type: the event
 *
 * COMM_EST: the QP received before the RTU came; rdma_cm's ESTABLISHED
 * follows rdma_notify() and reports the EP up.
 */
void ib_qp_event(struct vb_ep *ep, enum ibv_event_type type)
{
	if (type != IBV_EVENT_COMM_EST)
		return;
	vb_dbg("QP %u: COMM_EST before the RTU", ep->qp->qp_num);
	notify_established(ep);
}
