// SPDX-License-Identifier: MIT
/*
 * Messages through receive slots, with credits.
 *
 * Why slots: iWARP (and so rapt's tcp provider) has no receiver-not-ready;
 * a Send that finds no posted receive breaks the connection.  A libfabric
 * consumer may post its receives late and ofi_rxm does no flow control
 * over a core provider that has none to offer.  So each EP posts
 * rfi_params.slots receive slots of its own on rapt, a message lands in
 * a slot, and is copied into the consumer's receive when there is one.
 *
 * Credits: a sender may have as many messages in flight as the peer has
 * slots.  Every message starts with a struct rfi_hdr whose @grant says
 * how many slots its sender freed since its last message; a sender with
 * fewer than two credits holds its messages (-FI_EAGAIN) and keeps the
 * last credit for a credit-only message.  An EP that freed half its
 * slots and has nothing to say sends one (rfi_msg_flow), so a one-way
 * stream costs one extra small message per slots/2 messages, a ping-pong
 * none.  A sender is held only while the peer's slots are full of
 * messages its consumer has not received: the same back-pressure as a
 * full TCP window.
 */
#include <stdlib.h>
#include <string.h>

#include "rfi.h"

#define RFI_COOKIE_RECV (1ULL << 63)

static void frag_continue(struct rfi_ep *ep);

static size_t slot_stride(const struct rfi_ep *ep)
{
	return (RFI_HDR_LEN + ep->slot_size + 63) & ~(size_t)63;
}

static uint8_t *slot_at(const struct rfi_ep *ep, size_t i)
{
	return ep->slab + i * slot_stride(ep);
}

static struct rfi_hdr *tx_hdr(const struct rfi_ep *ep, size_t idx)
{
	return (struct rfi_hdr *)(ep->slab + ep->nslots * slot_stride(ep) +
				  idx * RFI_HDR_LEN);
}

static void slot_post(struct rfi_ep *ep, size_t i)
{
	struct rapt_sge sge = {
		.addr = (uint64_t)(uintptr_t)slot_at(ep, i),
		.length = (uint32_t)slot_stride(ep),
		.lkey = ep->slab_info.lkey,
	};

	/* on an EP that is closing it completes FLUSHED: nothing to do */
	rapt_ep_post_recv(ep->rep, &sge, 1, RFI_COOKIE_RECV | i);
}

int rfi_tx_get(struct rfi_ep *ep, void *context, uint64_t flags, size_t len,
	       bool report, uint32_t *idx)
{
	struct rfi_tx *tx;

	if (!ep->tx_nfree)
		return -FI_EAGAIN;
	*idx = ep->tx_free[--ep->tx_nfree];
	tx = &ep->tx[*idx];
	tx->context = context;
	tx->flags = flags;
	tx->len = len;
	tx->report = report;
	tx->internal = false;
	return 0;
}

void rfi_tx_put(struct rfi_ep *ep, uint32_t idx)
{
	ep->tx_free[ep->tx_nfree++] = idx;
}

ssize_t rfi_post_status(int rapt_status)
{
	if (rapt_status == RAPT_ENOSPC || rapt_status == RAPT_EAGAIN)
		return -FI_EAGAIN;
	return rfi_errno(rapt_status);
}

static int dto_err(uint32_t status)
{
	switch (status) {
	case RAPT_DTO_FLUSHED:
		return FI_ECANCELED;
	case RAPT_DTO_LOCAL_LENGTH:
		return FI_ETRUNC;
	case RAPT_DTO_LOCAL_PROTECTION:
	case RAPT_DTO_REMOTE_ACCESS:
		return FI_EACCES;
	default:
		return FI_EIO;
	}
}

int rfi_msg_setup(struct rfi_ep *ep)
{
	size_t i, urq = ep->info->rx_attr ? ep->info->rx_attr->size : 0;
	void *slab;
	int ret;

	ep->nslots = rfi_params.slots;
	ep->slot_size = rfi_params.slot_size;
	ep->tx_depth = ep->info->tx_attr->size;
	ep->urq_len = urq < ep->nslots ? ep->nslots : urq > 65536 ? 65536 : urq;
	ep->slab_len = ep->nslots * slot_stride(ep) +
		      ep->tx_depth * RFI_HDR_LEN;
	if (posix_memalign(&slab, 4096, ep->slab_len))
		return -FI_ENOMEM;
	ep->slab = slab;
	memset(slab, 0, ep->slab_len);
	ep->rxq_slot = calloc(ep->nslots, sizeof(*ep->rxq_slot));
	ep->rxq_len = calloc(ep->nslots, sizeof(*ep->rxq_len));
	ep->urq = calloc(ep->urq_len, sizeof(*ep->urq));
	ep->tx = calloc(ep->tx_depth, sizeof(*ep->tx));
	ep->tx_free = calloc(ep->tx_depth, sizeof(*ep->tx_free));
	if (!ep->rxq_slot || !ep->rxq_len || !ep->urq || !ep->tx ||
	    !ep->tx_free) {
		ret = -FI_ENOMEM;
		goto err;
	}
	ret = rfi_errno(rapt_lmr_create(ep->dom->pz, slab, ep->slab_len,
					RAPT_MEM_LOCAL_WRITE, &ep->slab_lmr,
					&ep->slab_info));
	if (ret)
		goto err;
	for (i = 0; i < ep->tx_depth; i++)
		ep->tx_free[i] = (uint32_t)(ep->tx_depth - 1 - i);
	ep->tx_nfree = ep->tx_depth;
	for (i = 0; i < ep->nslots; i++)
		slot_post(ep, i);
	return 0;
err:
	ep->slab_lmr = NULL;
	rfi_msg_teardown(ep);
	return ret;
}

void rfi_msg_teardown(struct rfi_ep *ep)
{
	if (ep->slab_lmr)
		rapt_lmr_free(ep->slab_lmr);
	free(ep->slab);
	free(ep->rxq_slot);
	free(ep->rxq_len);
	free(ep->urq);
	free(ep->tx);
	free(ep->tx_free);
	ep->slab = NULL;
	ep->slab_lmr = NULL;
	ep->rxq_slot = ep->rxq_len = ep->tx_free = NULL;
	ep->urq = NULL;
	ep->tx = NULL;
	ep->rep = NULL;
}

/* Copy @len bytes of a message to offset @off of a receive's buffers. */
static size_t copy_out(const struct rfi_urecv *u, size_t off,
		       const uint8_t *src, size_t len)
{
	size_t i, n, done = 0;

	for (i = 0; i < u->count && done < len; i++) {
		if (off >= u->iov[i].iov_len) {
			off -= u->iov[i].iov_len;
			continue;
		}
		n = u->iov[i].iov_len - off;
		n = len - done < n ? len - done : n;
		memcpy((uint8_t *)u->iov[i].iov_base + off, src + done, n);
		done += n;
		off = 0;
	}
	return done;
}

static void recv_complete(struct rfi_ep *ep, const struct rfi_urecv *u)
{
	size_t cap = 0, i;

	if (ep->rx_trunc) {
		for (i = 0; i < u->count; i++)
			cap += u->iov[i].iov_len;
		rfi_cq_push_err(ep->rx_cq, u->context, FI_RECV | FI_MSG,
				FI_ETRUNC, 0, ep->rx_off - cap);
	} else if (u->report) {
		rfi_cq_push(ep->rx_cq, u->context, FI_RECV | FI_MSG,
			    ep->rx_off);
	}
	ep->rx_off = 0;
	ep->rx_trunc = false;
}

/*
 * Hand messages waiting in slots to receives waiting for them.  The
 * fragments of a long message fill one receive, in order.
 */
static void match(struct rfi_ep *ep)
{
	const struct rfi_hdr *h;
	struct rfi_urecv *u;
	size_t slot, len;
	bool more;

	while (ep->rxq_count && ep->urq_count) {
		slot = ep->rxq_slot[ep->rxq_head];
		len = ep->rxq_len[ep->rxq_head];
		h = (const struct rfi_hdr *)slot_at(ep, slot);
		more = h->flags & RFI_HDR_MORE;
		u = &ep->urq[ep->urq_head];
		if (copy_out(u, ep->rx_off, (const uint8_t *)(h + 1), len) <
		    len)
			ep->rx_trunc = true;
		ep->rx_off += len;
		ep->rxq_head = (ep->rxq_head + 1) % ep->nslots;
		ep->rxq_count--;
		slot_post(ep, slot);
		ep->grant++;
		if (more)
			continue;
		recv_complete(ep, u);
		ep->urq_head = (ep->urq_head + 1) % ep->urq_len;
		ep->urq_count--;
	}
}

/*
 * Once rapt flushes the slots (the connection is gone), the consumer's
 * receives that no message can fill complete FI_ECANCELED, as on a
 * verbs QP: ofi_rxm frees its receive buffers on those errors.  Messages
 * already in slots are still delivered first (match() runs before).
 */
static void flush_receives(struct rfi_ep *ep)
{
	struct rfi_urecv *u;

	while (ep->rx_flushed && ep->urq_count) {
		u = &ep->urq[ep->urq_head];
		rfi_cq_push_err(ep->rx_cq, u->context, FI_RECV | FI_MSG,
				FI_ECANCELED, 0, 0);
		ep->urq_head = (ep->urq_head + 1) % ep->urq_len;
		ep->urq_count--;
		ep->rx_off = 0;
		ep->rx_trunc = false;
	}
}

/* Tell the peer about freed slots when no message of ours will. */
void rfi_msg_flow(struct rfi_ep *ep)
{
	struct rfi_hdr *h;
	struct rapt_sge sge;
	uint32_t idx;

	if (ep->state != RFI_EP_CONNECTED || ep->grant < ep->nslots / 2 ||
	    ep->credits < 1 || rfi_tx_get(ep, NULL, 0, 0, false, &idx))
		return;
	h = tx_hdr(ep, idx);
	h->grant = ep->grant;
	h->type = RFI_MSG_CREDIT;
	h->flags = 0;
	sge.addr = (uint64_t)(uintptr_t)h;
	sge.length = RFI_HDR_LEN;
	sge.lkey = ep->slab_info.lkey;
	ep->tx[idx].internal = true;
	if (rapt_ep_post_send(ep->rep, &sge, 1, idx, 0)) {
		rfi_tx_put(ep, idx);
		return;
	}
	ep->credits--;
	ep->grant = 0;
}

static void on_recv(struct rfi_ep *ep, const struct rapt_event_dto *dto)
{
	size_t slot = (size_t)(dto->cookie & ~RFI_COOKIE_RECV);
	const struct rfi_hdr *h;
	size_t tail;

	if (slot >= ep->nslots)
		return;
	if (dto->status != RAPT_DTO_SUCCESS) {
		/* flushed or broken: the EQ says why */
		ep->rx_flushed = true;
		flush_receives(ep);
		return;
	}
	if (dto->length < RFI_HDR_LEN)
		return;		/* not from rfi: the slot is lost */
	h = (const struct rfi_hdr *)slot_at(ep, slot);
	ep->credits += h->grant;
	if (h->type == RFI_MSG_CREDIT) {
		slot_post(ep, slot);
		ep->grant++;
	} else {
		tail = (ep->rxq_head + ep->rxq_count) % ep->nslots;
		ep->rxq_slot[tail] = (uint32_t)slot;
		ep->rxq_len[tail] = (uint32_t)(dto->length - RFI_HDR_LEN);
		ep->rxq_count++;
		match(ep);
	}
	frag_continue(ep);
	rfi_msg_flow(ep);
}

static void on_send(struct rfi_ep *ep, const struct rapt_event_dto *dto)
{
	uint32_t idx = (uint32_t)dto->cookie;
	struct rfi_tx *tx;

	if (idx >= ep->tx_depth)
		return;
	tx = &ep->tx[idx];
	if (tx->internal)
		;	/* a credit message: nothing to report */
	else if (dto->status != RAPT_DTO_SUCCESS)
		rfi_cq_push_err(ep->tx_cq, tx->context, tx->flags,
				dto_err(dto->status), dto->prov_status, 0);
	else if (tx->report)
		rfi_cq_push(ep->tx_cq, tx->context, tx->flags, tx->len);
	rfi_tx_put(ep, idx);
}

/* One rapt completion of this EP (called under the fabric lock). */
void rfi_msg_dto(struct rfi_ep *ep, const struct rapt_event_dto *dto)
{
	if (!ep->slab)
		return;
	if (dto->cookie & RFI_COOKIE_RECV)
		on_recv(ep, dto);
	else
		on_send(ep, dto);
}

/* ---- the consumer's calls ---- */

static ssize_t post_recv(struct rfi_ep *ep, const struct iovec *iov,
			 size_t count, void *context, uint64_t flags)
{
	struct rfi_urecv *u;
	ssize_t ret = 0;
	size_t i;

	if (count > RFI_IOV_MAX)
		return -FI_EINVAL;
	pthread_mutex_lock(&ep->dom->fab->lock);
	if (!ep->slab) {
		ret = -FI_EOPBADSTATE;
	} else if (ep->urq_count == ep->urq_len) {
		ret = -FI_EAGAIN;
	} else {
		u = &ep->urq[(ep->urq_head + ep->urq_count) % ep->urq_len];
		u->context = context;
		u->count = count;
		for (i = 0; i < count; i++)
			u->iov[i] = iov[i];
		u->report = !ep->rx_selective || (flags & FI_COMPLETION);
		ep->urq_count++;
		match(ep);
		flush_receives(ep);
		rfi_msg_flow(ep);
	}
	pthread_mutex_unlock(&ep->dom->fab->lock);
	return ret;
}

/* The SGEs covering bytes [off, off + len) of a gather list. */
static unsigned int sgl_slice(const struct rapt_sge *src, unsigned int n,
			      size_t off, size_t len, struct rapt_sge *dst)
{
	unsigned int i, k = 0;
	size_t take;

	for (i = 0; i < n && len; i++) {
		if (off >= src[i].length) {
			off -= src[i].length;
			continue;
		}
		take = src[i].length - off;
		take = take < len ? take : len;
		dst[k] = src[i];
		dst[k].addr += off;
		dst[k].length = (uint32_t)take;
		k++;
		len -= take;
		off = 0;
	}
	return k;
}

/* Post one message or fragment: rfi's header, then the consumer's data
 * (@rflags: RAPT_POST_INLINE copies it now, for an inject). */
static int post_one(struct rfi_ep *ep, const struct rapt_sge *data,
		    unsigned int n, uint32_t idx, uint16_t flags,
		    unsigned int rflags)
{
	struct rapt_sge sgl[RFI_IOV_MAX + 1];
	struct rfi_hdr *h = tx_hdr(ep, idx);
	int rc;

	h->grant = ep->grant;
	h->type = RFI_MSG_DATA;
	h->flags = flags;
	sgl[0].addr = (uint64_t)(uintptr_t)h;
	sgl[0].length = RFI_HDR_LEN;
	sgl[0].lkey = ep->slab_info.lkey;
	memcpy(sgl + 1, data, n * sizeof(*data));
	rc = rapt_ep_post_send(ep->rep, sgl, n + 1, idx, rflags);
	if (rc)
		return rc;
	ep->credits--;
	ep->grant = 0;
	return 0;
}

/* Post the fragments of the long message under way while credits last;
 * only the last one's completion is the consumer's. */
static void frag_continue(struct rfi_ep *ep)
{
	struct rapt_sge part[RFI_IOV_MAX];
	unsigned int n;
	uint32_t idx;
	size_t len;
	bool last;
	int rc;

	while (ep->frag.active && ep->credits >= 2) {
		len = ep->frag.len - ep->frag.off;
		len = len < ep->slot_size ? len : ep->slot_size;
		last = ep->frag.off + len == ep->frag.len;
		if (rfi_tx_get(ep, ep->frag.context, FI_SEND | FI_MSG,
			       ep->frag.len, last && ep->frag.report, &idx))
			return;
		ep->tx[idx].internal = !last;
		n = sgl_slice(ep->frag.sgl, ep->frag.nsge, ep->frag.off, len,
			      part);
		rc = post_one(ep, part, n, idx, last ? 0 : RFI_HDR_MORE, 0);
		if (rc) {
			rfi_tx_put(ep, idx);
			/* a full queue waits; a closed connection ends the
			 * message, whose completion is then an error */
			if (rc == RAPT_ENOSPC || rc == RAPT_EAGAIN)
				return;
			ep->frag.active = false;
			rfi_cq_push_err(ep->tx_cq, ep->frag.context,
					FI_SEND | FI_MSG, FI_ECONNRESET, rc, 0);
			return;
		}
		ep->frag.off += len;
		ep->frag.active = !last;
	}
}

static ssize_t post_send_locked(struct rfi_ep *ep, const struct iovec *iov,
				void **desc, size_t count, void *context,
				uint64_t flags, bool report)
{
	bool inject = flags & FI_INJECT;
	struct rapt_sge sgl[RFI_IOV_MAX];
	uint32_t idx;
	size_t len;
	int n, rc;

	if (ep->state != RFI_EP_CONNECTED)
		return -FI_EOPBADSTATE;
	if (count > ep->info->tx_attr->iov_limit)
		return -FI_EINVAL;
	n = inject ? rfi_inline_sgl(sgl, iov, count, &len) :
		     rfi_sgl(sgl, iov, desc, count, &len);
	if (n < 0)
		return n;
	if (inject && len > ep->info->tx_attr->inject_size)
		return -FI_EINVAL;
	if (ep->credits < 2 || ep->frag.active)
		rfi_cq_progress(ep->rx_cq);	/* credits may be waiting */
	frag_continue(ep);
	if (ep->credits < 2 || ep->frag.active)
		return -FI_EAGAIN;
	if (len > ep->slot_size) {
		memcpy(ep->frag.sgl, sgl, (size_t)n * sizeof(*sgl));
		ep->frag.nsge = (unsigned int)n;
		ep->frag.len = len;
		ep->frag.off = 0;
		ep->frag.context = context;
		ep->frag.report = report;
		ep->frag.active = true;
		frag_continue(ep);
		return 0;
	}
	if (rfi_tx_get(ep, context, FI_SEND | FI_MSG, len, report, &idx))
		return -FI_EAGAIN;
	rc = post_one(ep, sgl, (unsigned int)n, idx, 0,
		      inject ? RAPT_POST_INLINE : 0);
	if (rc) {
		rfi_tx_put(ep, idx);
		return rfi_post_status(rc);
	}
	return 0;
}

/* @report: false for fi_inject(), which never completes */
static ssize_t post_send(struct rfi_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, void *context,
			 uint64_t flags, bool report)
{
	ssize_t ret;

	if (flags & FI_REMOTE_CQ_DATA)
		return -FI_ENOSYS;	/* the CQ data size is 0 */
	if (report)
		report = !ep->tx_selective || (flags & FI_COMPLETION);
	pthread_mutex_lock(&ep->dom->fab->lock);
	ret = post_send_locked(ep, iov, desc, count, context, flags, report);
	pthread_mutex_unlock(&ep->dom->fab->lock);
	return ret;
}

static uint64_t tx_op_flags(const struct rfi_ep *ep)
{
	return ep->info->tx_attr->op_flags;
}

static ssize_t msg_recv(struct fid_ep *fep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, void *context)
{
	struct rfi_ep *ep = (struct rfi_ep *)fep;
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return post_recv(ep, &iov, 1, context, ep->info->rx_attr->op_flags);
}

static ssize_t msg_recvv(struct fid_ep *fep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src_addr,
			 void *context)
{
	struct rfi_ep *ep = (struct rfi_ep *)fep;

	return post_recv(ep, iov, count, context, ep->info->rx_attr->op_flags);
}

static ssize_t msg_recvmsg(struct fid_ep *fep, const struct fi_msg *msg,
			   uint64_t flags)
{
	return post_recv((struct rfi_ep *)fep, msg->msg_iov, msg->iov_count,
			 msg->context, flags);
}

static ssize_t msg_send(struct fid_ep *fep, const void *buf, size_t len,
			void *desc, fi_addr_t dest_addr, void *context)
{
	struct rfi_ep *ep = (struct rfi_ep *)fep;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return post_send(ep, &iov, &desc, 1, context, tx_op_flags(ep), true);
}

static ssize_t msg_sendv(struct fid_ep *fep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 void *context)
{
	struct rfi_ep *ep = (struct rfi_ep *)fep;

	return post_send(ep, iov, desc, count, context, tx_op_flags(ep),
			 true);
}

static ssize_t msg_sendmsg(struct fid_ep *fep, const struct fi_msg *msg,
			   uint64_t flags)
{
	return post_send((struct rfi_ep *)fep, msg->msg_iov, msg->desc,
			 msg->iov_count, msg->context, flags, true);
}

static ssize_t msg_inject(struct fid_ep *fep, const void *buf, size_t len,
			  fi_addr_t dest_addr)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return post_send((struct rfi_ep *)fep, &iov, NULL, 1, NULL, FI_INJECT,
			 false);
}

static ssize_t msg_senddata(struct fid_ep *fep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest_addr,
			    void *context)
{
	return -FI_ENOSYS;
}

static ssize_t msg_injectdata(struct fid_ep *fep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr)
{
	return -FI_ENOSYS;
}

struct fi_ops_msg rfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = msg_recv,
	.recvv = msg_recvv,
	.recvmsg = msg_recvmsg,
	.send = msg_send,
	.sendv = msg_sendv,
	.sendmsg = msg_sendmsg,
	.inject = msg_inject,
	.senddata = msg_senddata,
	.injectdata = msg_injectdata,
};
