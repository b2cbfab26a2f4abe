/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the receive path.
 *
 * A state machine per EP, run with ep->lock held by the engine (EPOLLIN)
 * or by a consumer polling an EVD:
 *
 *   HDR      the ULPDU length and the DDP/RDMAP header (the codec says how
 *            many bytes: tcp_ddp_hdr_need()), then validation and the
 *            placement target: a tagged Write's region (rkey, PZ,
 *            bounds, rights), a Read Response's outstanding read, a
 *            Send's first posted receive;
 *   DATA     the payload, placed where it belongs: bytes already in the
 *            staging buffer are copied; a large rest is read with one
 *            recvmsg() straight into the target's iovecs plus the staging
 *            buffer (so the trailer and the next header come with it);
 *   TRAILER  pad and CRC (checked when negotiated, computed incrementally
 *            over header, placed payload and pad), then what the FPDU
 *            means: a receive or read completes on L, a Read Request is
 *            queued for the transmit path, an RTR reports ESTABLISHED.
 *
 * Every protocol or protection error sends a Terminate and fails the
 * connection (tcp_tx_terminate()); memory outside a registered region is
 * never written.  A short read means the socket is empty: no further
 * recv() is tried in that pass (good for edge- and level-triggered
 * epoll alike), which saves a syscall per small message.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "tcp.h"

#define RX_BUF		512	/* staging: headers, trailers, small data */
#define RX_DIRECT_MIN	256	/* payload left above which recvmsg places */
#define RX_PARK_AFTER	4	/* reads before the EP may be parked */

enum rx_state {
	RX_HDR = 0,
	RX_DATA,
	RX_TRAILER,
};

enum rx_kind {
	RX_SKIP = 0,		/* nothing to place (zero-length Write) */
	RX_RTR,			/* the negotiated Write or Read RTR */
	RX_WRITE,
	RX_RRESP,
	RX_RTR_RRESP,		/* the answer to our Read RTR */
	RX_SEND,
	RX_RREQ,
	RX_TERM,
};

struct tcp_rx {
	uint32_t start, end;		/* unconsumed bytes of buf */
	uint8_t state;			/* enum rx_state */
	uint8_t kind;			/* enum rx_kind */
	bool drained;			/* the socket had no more this pass */
	bool kick;			/* the transmit path has new work */
	bool first_seen;
	uint32_t left;			/* payload bytes still to place */
	uint32_t tlen;			/* pad + CRC bytes */
	uint32_t crc;
	uint64_t to;			/* Write: TO of the next byte */
	uint32_t msn_send, msn_rreq;	/* expected MSNs */
	uint32_t events;		/* DTO events pushed so far */
	uint32_t reads;			/* recv calls that returned data */
	uint32_t reads_done;		/* our reads completed this pass */
	uint32_t npins;
	struct tcp_stag_slot *pins[TCP_MAX_SGE + 1];
	struct tcp_ddp_hdr h;		/* the current FPDU's header */
	uint8_t rreq_raw[TCP_MPA_LEN_SIZE + TCP_RDMAP_RREQ_HDR_LEN];
	uint8_t buf[RX_BUF];
};

/* ------------------------------------------------------------------ */
/* Completions                                                         */
/* ------------------------------------------------------------------ */

/**
 * tcp_complete - push a DTO completion
 * @ep: the EP, locked
 * @evd: the EVD (ep->recv_evd or ep->req_evd); NULL drops the event
 * @wr: the WR
 * @status: enum rapt_dto_status
 * @len: bytes transferred
 * @flags: RAPT_DTO_* flags
 * @inv_rkey: with RAPT_DTO_INVALIDATED, the rkey invalidated
 */
void tcp_complete(struct tcp_ep *ep, struct tcp_evd *evd,
		  const struct tcp_wr *wr, uint32_t status, uint64_t len,
		  uint32_t flags, uint32_t inv_rkey)
{
	struct rapt_event ev = { .type = RAPT_EV_DTO };

	if (!evd || ep->freeing)
		return;
	ev.u.dto.ep = ep->handle;
	ev.u.dto.cookie = wr->cookie;
	ev.u.dto.op = wr->op;
	ev.u.dto.status = status;
	ev.u.dto.length = len;
	ev.u.dto.flags = flags;
	ev.u.dto.invalidated_rkey = inv_rkey;
	rapt_prov_evd_push(evd->cevd, &ev);
	if (ep->rx)
		ep->rx->events++;
}

/* ------------------------------------------------------------------ */
/* Set-up                                                              */
/* ------------------------------------------------------------------ */

/** tcp_rx_init - allocate the receive state (from tcp_dto_init) */
int tcp_rx_init(struct tcp_ep *ep)
{
	struct tcp_rx *rx = rapt_zalloc(1, sizeof(*rx));

	if (!rx)
		return RAPT_ENOMEM;
	rx->msn_send = 1;
	rx->msn_rreq = 1;
	ep->rx = rx;
	return 0;
}

/** tcp_rx_fini - free the receive state */
void tcp_rx_fini(struct tcp_ep *ep)
{
	free(ep->rx);
	ep->rx = NULL;
}

/** tcp_rx_start - the next byte on the socket starts an FPDU */
void tcp_rx_start(struct tcp_ep *ep)
{
	struct tcp_rx *rx = ep->rx;

	rx->start = rx->end = 0;
	rx->state = RX_HDR;
}

/** tcp_rx_footprint - bytes of receive state */
size_t tcp_rx_footprint(const struct tcp_ep *ep)
{
	return ep->rx ? sizeof(*ep->rx) : 0;
}

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

/* Terminate for the current FPDU, with its headers copied from @hdr if
 * given (and the Read Request's RDMAP header with @rdmap). */
static int rx_term(struct tcp_ep *ep, const uint8_t *hdr, uint8_t layer,
		   uint8_t etype, uint8_t ecode, bool rdmap)
{
	struct tcp_rx *rx = ep->rx;
	struct tcp_term t = { .layer = layer, .etype = etype, .ecode = ecode };

	if (hdr)
		tcp_term_copy_hdr(&t, hdr, rx->h.hdr_len, rx->h.ulpdu_len,
				  rdmap);
	tcp_tx_terminate(ep, &t);
	return -1;
}

/* A tagged placement error: DDP has no "access rights" code; like siw,
 * report it as an invalid STag.  A region of another PZ than the EP's is
 * RFC 5041's "STag not associated with DDP Stream" (0x02). */
static uint8_t ddp_tagged_code(uint8_t rdmap_ecode)
{
	switch (rdmap_ecode) {
	case TCP_TERM_RDMAP_BASE_BOUNDS:
		return TCP_TERM_DDP_T_BASE_BOUNDS;
	case TCP_TERM_RDMAP_TO_WRAP:
		return TCP_TERM_DDP_T_TO_WRAP;
	case TCP_TERM_RDMAP_STAG_NOT_ASSOC:
		return TCP_TERM_DDP_T_STAG_NOT_ASSOC;
	default:
		return TCP_TERM_DDP_T_INVALID_STAG;
	}
}

static int rx_bad_hdr(struct tcp_ep *ep, int err, const uint8_t *p)
{
	struct tcp_rx *rx = ep->rx;
	struct tcp_term t;

	tcp_info("fd %d: bad FPDU header: %s", ep->io.fd,
		 tcp_wire_strerror(err));
	if (tcp_wire_err_term(err, p[2], &t)) {
		tcp_cm_fail(ep, RAPT_EPROTO);
		return -1;
	}
	/* Copy the header only where its layout is known. */
	if (err == TCP_WIRE_EQN || err == TCP_WIRE_EULPDULEN)
		tcp_term_copy_hdr(&t, p, rx->end - rx->start,
				  tcp_get_be16(p), false);
	tcp_tx_terminate(ep, &t);
	return -1;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

static bool rx_open(const struct tcp_ep *ep)
{
	return ep->io.fd >= 0 &&
	       (ep->state == TCP_EP_RTS || ep->state == TCP_EP_RTR_WAIT ||
		ep->state == TCP_EP_CLOSING);
}

static void rx_eof(struct tcp_ep *ep)
{
	struct tcp_rx *rx = ep->rx;

	ep->rx_eof = true;
	if (rx->state == RX_HDR && rx->start == rx->end) {
		tcp_cm_peer_closed(ep);
	} else {
		tcp_info("fd %d: peer closed inside an FPDU", ep->io.fd);
		tcp_cm_fail(ep, RAPT_EIO);
	}
}

/* recv() result handling shared by both readers: 1, 0 or -1. */
static int rx_result(struct tcp_ep *ep, ssize_t n)
{
	int err;

	if (n > 0)
		return 1;
	if (n == 0) {
		rx_eof(ep);
		return -1;
	}
	if (errno == EINTR)
		return 1;
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		ep->rx->drained = true;
		return 0;
	}
	err = errno;
	tcp_info("fd %d: recv: %m", ep->io.fd);
	tcp_cm_fail(ep, -err);	/* the socket's own error: ECONNRESET... */
	return -1;
}

/* Read into the staging buffer so that @need bytes can sit there. */
static int rx_fill(struct tcp_ep *ep, size_t need)
{
	struct tcp_rx *rx = ep->rx;
	size_t room;
	ssize_t n;

	if (rx->drained)
		return 0;
	if (rx->start == rx->end) {
		rx->start = rx->end = 0;
	} else if (RX_BUF - rx->start < need) {
		memmove(rx->buf, rx->buf + rx->start, rx->end - rx->start);
		rx->end -= rx->start;
		rx->start = 0;
	}
	room = RX_BUF - rx->end;
	n = rapt_sys_recv(ep->io.fd, rx->buf + rx->end, room, MSG_DONTWAIT);
	tcp_cap_io(ep->cap, false, rx->buf + rx->end, n);
	if (n > 0) {
		rx->reads++;
		rx->end += (uint32_t)n;
		if ((size_t)n < room)
			rx->drained = true;
	}
	return rx_result(ep, n);
}

/* ------------------------------------------------------------------ */
/* Headers                                                             */
/* ------------------------------------------------------------------ */

static int rx_hdr_write(struct tcp_ep *ep, const uint8_t *p)
{
	struct tcp_rx *rx = ep->rx;
	const struct tcp_ddp_hdr *h = &rx->h;
	uint8_t ecode;

	if (!h->payload_len) {
		rx->kind = RX_SKIP;
		return 0;
	}
	if (!tcp_rkey_resolve(ep->ia, ep->pz, h->stag, h->to, h->payload_len,
			      RAPT_MEM_REMOTE_WRITE, &ecode))
		return rx_term(ep, p, TCP_TERM_LAYER_DDP, TCP_TERM_DDP_TAGGED,
			       ddp_tagged_code(ecode), false);
	rx->kind = RX_WRITE;
	rx->to = h->to;
	return 0;
}

static int rx_hdr_rresp(struct tcp_ep *ep, const uint8_t *p)
{
	struct tcp_rx *rx = ep->rx;
	const struct tcp_ddp_hdr *h = &rx->h;
	struct tcp_wr *wr;
	bool rtr;

	wr = tcp_tx_read_head(ep, &rtr);
	if (rtr) {
		if (h->payload_len || !h->last)
			return rx_term(ep, p, TCP_TERM_LAYER_DDP,
				       TCP_TERM_DDP_TAGGED,
				       TCP_TERM_DDP_T_BASE_BOUNDS, false);
		rx->kind = RX_RTR_RRESP;
		return 0;
	}
	if (!wr || h->stag != wr->aux)
		return rx_term(ep, p, TCP_TERM_LAYER_DDP, TCP_TERM_DDP_TAGGED,
			       TCP_TERM_DDP_T_INVALID_STAG, false);
	/* Responses come in order: each continues where the last ended. */
	if (h->to != wr->done || h->payload_len > wr->len - wr->done ||
	    (h->last && wr->done + h->payload_len != wr->len))
		return rx_term(ep, p, TCP_TERM_LAYER_DDP, TCP_TERM_DDP_TAGGED,
			       TCP_TERM_DDP_T_BASE_BOUNDS, false);
	rx->kind = RX_RRESP;
	return 0;
}

static int rx_hdr_send(struct tcp_ep *ep, const uint8_t *p)
{
	struct tcp_rx *rx = ep->rx;
	const struct tcp_ddp_hdr *h = &rx->h;
	struct tcp_wr *wr;

	if (h->msn != rx->msn_send)
		return rx_term(ep, p, TCP_TERM_LAYER_DDP, TCP_TERM_DDP_UNTAGGED,
			       TCP_TERM_DDP_U_MSN_RANGE, false);
	wr = tcp_wrq_head(&ep->rq);
	if (!wr && ep->srq && !h->mo)
		wr = tcp_srq_take(ep);	/* a new message: the oldest */
	if (!wr) {
		tcp_info("fd %d: a Send found no posted receive", ep->io.fd);
		return rx_term(ep, p, TCP_TERM_LAYER_DDP, TCP_TERM_DDP_UNTAGGED,
			       TCP_TERM_DDP_U_NO_BUFFER, false);
	}
	if (h->mo != wr->done)
		return rx_term(ep, p, TCP_TERM_LAYER_DDP, TCP_TERM_DDP_UNTAGGED,
			       TCP_TERM_DDP_U_INVALID_MO, false);
	if (h->payload_len > wr->len - wr->done) {
		tcp_wr_set_err(wr, RAPT_DTO_LOCAL_LENGTH);
		return rx_term(ep, p, TCP_TERM_LAYER_DDP, TCP_TERM_DDP_UNTAGGED,
			       TCP_TERM_DDP_U_TOO_LONG, false);
	}
	rx->kind = RX_SEND;
	return 0;
}

static int rx_hdr_rreq(struct tcp_ep *ep, const uint8_t *p)
{
	struct tcp_rx *rx = ep->rx;
	const struct tcp_rreq *r = &rx->h.rreq;
	uint8_t ecode;

	if (rx->h.msn != rx->msn_rreq)
		return rx_term(ep, p, TCP_TERM_LAYER_DDP, TCP_TERM_DDP_UNTAGGED,
			       TCP_TERM_DDP_U_MSN_RANGE, false);
	/* A source region of another PZ: ecode is RFC 5040's "STag not
	 * associated with RDMAP Stream" (layer 0, type 1, code 0x03). */
	if (r->size && !tcp_rkey_resolve(ep->ia, ep->pz, r->src_stag,
					 r->src_to, r->size,
					 RAPT_MEM_REMOTE_READ, &ecode))
		return rx_term(ep, p, TCP_TERM_LAYER_RDMAP,
			       TCP_TERM_RDMAP_PROTECTION, ecode, true);
	memcpy(rx->rreq_raw, p, sizeof(rx->rreq_raw));
	rx->kind = RX_RREQ;
	return 0;
}

/* In RTR_WAIT the first FPDU must be the negotiated RTR. */
static int rx_hdr_rtr(struct tcp_ep *ep)
{
	struct tcp_rx *rx = ep->rx;
	const struct tcp_ddp_hdr *h = &rx->h;

	if (h->opcode == TCP_RDMAP_TERMINATE) {
		rx->kind = RX_TERM;
		return 0;
	}
	if ((ep->rtr == TCP_MPA_RTR_WRITE && h->opcode == TCP_RDMAP_WRITE &&
	     !h->payload_len && h->last) ||
	    (ep->rtr == TCP_MPA_RTR_READ && h->opcode == TCP_RDMAP_READ_REQ &&
	     !h->rreq.size && h->msn == rx->msn_rreq)) {
		rx->kind = RX_RTR;
		return 0;
	}
	tcp_info("fd %d: first FPDU (opcode %u) is not the negotiated RTR",
		 ep->io.fd, h->opcode);
	return rx_term(ep, NULL, TCP_TERM_LAYER_LLP, 0,
		       TCP_TERM_LLP_NO_MATCHING_RTR, false);
}

static int rx_dispatch(struct tcp_ep *ep, const uint8_t *p)
{
	switch (ep->rx->h.opcode) {
	case TCP_RDMAP_WRITE:
		return rx_hdr_write(ep, p);
	case TCP_RDMAP_READ_RESP:
		return rx_hdr_rresp(ep, p);
	case TCP_RDMAP_READ_REQ:
		return rx_hdr_rreq(ep, p);
	case TCP_RDMAP_TERMINATE:
		ep->rx->kind = RX_TERM;
		return 0;
	default:
		return rx_hdr_send(ep, p);
	}
}

static int rx_header(struct tcp_ep *ep)
{
	struct tcp_rx *rx = ep->rx;
	const uint8_t *p = rx->buf + rx->start;
	int ret;

	ret = tcp_ddp_parse_hdr(p, rx->end - rx->start, &rx->h);
	if (ret < 0)
		return rx_bad_hdr(ep, ret, p);
	if (!rx->first_seen) {
		rx->first_seen = true;
		if (ep->sends_held) {
			ep->sends_held = false;
			rx->kick = true;
		}
		tcp_cm_heard(ep);
	}
	if (ep->state == TCP_EP_RTR_WAIT)
		ret = rx_hdr_rtr(ep);
	else
		ret = rx_dispatch(ep, p);
	if (ret)
		return -1;
	rx->crc = ep->crc ? tcp_crc32c(0, p, rx->h.hdr_len) : 0;
	rx->start += rx->h.hdr_len;
	rx->left = rx->h.payload_len;
	rx->tlen = tcp_fpdu_pad(rx->h.ulpdu_len) + TCP_MPA_CRC_SIZE;
	rx->state = rx->left ? RX_DATA : RX_TRAILER;
	return 1;
}

/* ------------------------------------------------------------------ */
/* Placement                                                           */
/* ------------------------------------------------------------------ */

static void rx_unpin(struct tcp_rx *rx)
{
	while (rx->npins)
		tcp_mem_put(rx->pins[--rx->npins]);
}

/* Iovecs (pinned) for @len bytes of @wr's SGL from its placed offset. */
static int rx_sgl(struct tcp_ep *ep, struct tcp_wr *wr, uint32_t len,
		  struct iovec *iov, uint32_t *niov)
{
	struct tcp_rx *rx = ep->rx;
	uint32_t i, off = wr->done, n;
	uint8_t *p;

	for (i = 0; i < wr->nsge && len; i++) {
		if (off >= wr->sge[i].length) {
			off -= wr->sge[i].length;
			continue;
		}
		n = wr->sge[i].length - off;
		if (n > len)
			n = len;
		p = tcp_mem_lkey(ep->ia, ep->pz, wr->sge[i].lkey,
				 wr->sge[i].addr + off, n,
				 RAPT_MEM_LOCAL_WRITE, &rx->pins[rx->npins]);
		if (!p) {
			rx_unpin(rx);
			tcp_wr_set_err(wr, RAPT_DTO_LOCAL_PROTECTION);
			return rx_term(ep, NULL, TCP_TERM_LAYER_RDMAP,
				       TCP_TERM_RDMAP_CATASTROPHIC, 0, false);
		}
		rx->npins++;
		iov[*niov].iov_base = p;
		iov[*niov].iov_len = n;
		(*niov)++;
		len -= n;
		off = 0;
	}
	return 0;
}

static struct tcp_wr *rx_wr(struct tcp_ep *ep)
{
	bool rtr;

	if (ep->rx->kind == RX_SEND)
		return tcp_wrq_head(&ep->rq);
	return tcp_tx_read_head(ep, &rtr);
}

/* Pinned iovecs for the next @len payload bytes of the current FPDU. */
static int rx_target(struct tcp_ep *ep, uint32_t len, struct iovec *iov,
		     uint32_t *niov)
{
	struct tcp_rx *rx = ep->rx;
	uint8_t ecode;
	uint8_t *p;

	*niov = 0;
	if (rx->kind != RX_WRITE)
		return rx_sgl(ep, rx_wr(ep), len, iov, niov);
	p = tcp_mem_rkey(ep->ia, ep->pz, rx->h.stag, rx->to, len,
			 RAPT_MEM_REMOTE_WRITE, &ecode, &rx->pins[0]);
	if (!p)
		return rx_term(ep, NULL, TCP_TERM_LAYER_DDP,
			       TCP_TERM_DDP_TAGGED, ddp_tagged_code(ecode),
			       false);
	rx->npins = 1;
	iov[0].iov_base = p;
	iov[0].iov_len = len;
	*niov = 1;
	return 0;
}

static void rx_advance(struct tcp_ep *ep, uint32_t n)
{
	struct tcp_rx *rx = ep->rx;

	rx->left -= n;
	if (rx->kind == RX_WRITE)
		rx->to += n;
	else
		rx_wr(ep)->done += n;
}

/* Place @n payload bytes that sit in the staging buffer. */
static int rx_place_copy(struct tcp_ep *ep, uint32_t n)
{
	struct tcp_rx *rx = ep->rx;
	const uint8_t *src = rx->buf + rx->start;
	struct iovec iov[TCP_MAX_SGE];
	uint32_t niov, i;

	if (rx_target(ep, n, iov, &niov))
		return -1;
	if (ep->crc)
		rx->crc = tcp_crc32c(rx->crc, src, n);
	for (i = 0; i < niov; i++) {
		memcpy(iov[i].iov_base, src, iov[i].iov_len);
		src += iov[i].iov_len;
	}
	rx_unpin(rx);
	rx->start += n;
	rx_advance(ep, n);
	return 1;
}

/* Do two of the iovecs share bytes?  (Overlapping scatter entries are
 * legal; the CRC must then be taken before placement, not after.) */
static bool iov_overlap(const struct iovec *iov, uint32_t n)
{
	uint32_t i, j;

	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if ((uint8_t *)iov[i].iov_base <
			    (uint8_t *)iov[j].iov_base + iov[j].iov_len &&
			    (uint8_t *)iov[j].iov_base <
			    (uint8_t *)iov[i].iov_base + iov[i].iov_len)
				return true;
	return false;
}

/* Read the rest of the payload straight into place, and what follows it
 * into the staging buffer. */
static int rx_place_direct(struct tcp_ep *ep)
{
	struct tcp_rx *rx = ep->rx;
	struct iovec iov[TCP_MAX_SGE + 1];
	struct msghdr msg = { .msg_iov = iov };
	uint32_t niov, i, want = rx->left, placed, n;
	ssize_t got;

	if (rx_target(ep, want, iov, &niov))
		return -1;
	if (ep->crc && niov > 1 && iov_overlap(iov, niov)) {
		rx_unpin(rx);
		return rx_fill(ep, 1);
	}
	rx->start = rx->end = 0;
	iov[niov].iov_base = rx->buf;
	iov[niov].iov_len = RX_BUF;
	msg.msg_iovlen = niov + 1;
	got = rapt_sys_recvmsg(ep->io.fd, &msg, MSG_DONTWAIT);
	tcp_cap_iov(ep->cap, false, iov, msg.msg_iovlen, got);
	if (got <= 0) {
		rx_unpin(rx);
		return rx_result(ep, got);
	}
	rx->reads++;
	tcp_rcvbuf_placed(ep, (size_t)got);
	placed = (size_t)got < want ? (uint32_t)got : want;
	if (ep->crc)
		for (i = 0, n = placed; i < niov && n; i++) {
			size_t k = iov[i].iov_len < n ? iov[i].iov_len : n;

			rx->crc = tcp_crc32c(rx->crc, iov[i].iov_base, k);
			n -= (uint32_t)k;
		}
	rx_unpin(rx);
	rx->end = (uint32_t)got - placed;
	if ((size_t)got < (size_t)want + RX_BUF)
		rx->drained = true;
	rx_advance(ep, placed);
	return 1;
}

static int rx_data(struct tcp_ep *ep)
{
	struct tcp_rx *rx = ep->rx;
	uint32_t avail = rx->end - rx->start;
	int ret;

	if (avail)
		ret = rx_place_copy(ep, avail < rx->left ? avail : rx->left);
	else if (rx->left >= RX_DIRECT_MIN)
		ret = rx->drained ? 0 : rx_place_direct(ep);
	else
		return rx_fill(ep, 1);
	if (ret > 0 && !rx->left)
		rx->state = RX_TRAILER;
	return ret;
}

/* ------------------------------------------------------------------ */
/* End of an FPDU                                                      */
/* ------------------------------------------------------------------ */

static int rx_recv_done(struct tcp_ep *ep)
{
	struct tcp_rx *rx = ep->rx;
	struct tcp_wr *wr = tcp_wrq_head(&ep->rq);
	uint8_t op = rx->h.opcode;
	uint32_t flags = 0, inv = 0;
	int ret;

	rx->msn_send++;
	if (op == TCP_RDMAP_SEND_SE || op == TCP_RDMAP_SEND_SE_INV)
		flags |= RAPT_DTO_SOLICITED;
	if (op == TCP_RDMAP_SEND_INV || op == TCP_RDMAP_SEND_SE_INV) {
		/* RFC 5040's "STag cannot be invalidated" (code 0x09), as
		 * siw reports it: a region of another PZ is a protection
		 * error (layer 0, type 1), a key that names no region a
		 * remote operation error (type 2). */
		ret = tcp_rkey_invalidate(ep->ia, ep->pz, rx->h.inv_stag);
		if (ret)
			return rx_term(ep, NULL, TCP_TERM_LAYER_RDMAP,
				       ret == RAPT_EACCES ?
				       TCP_TERM_RDMAP_PROTECTION :
				       TCP_TERM_RDMAP_OPERATION,
				       TCP_TERM_RDMAP_CANNOT_INVALIDATE, false);
		flags |= RAPT_DTO_INVALIDATED;
		inv = rx->h.inv_stag;
	}
	tcp_complete(ep, ep->recv_evd, wr, RAPT_DTO_SUCCESS, wr->done, flags,
		     inv);
	ep->rq.head++;
	return 1;
}

static int rx_rreq_done(struct tcp_ep *ep, bool rtr)
{
	struct tcp_rx *rx = ep->rx;

	rx->msn_rreq++;
	if (tcp_tx_rresp_queue(ep, &rx->h.rreq)) {
		if (rtr)
			return rx_term(ep, NULL, TCP_TERM_LAYER_LLP, 0,
				       TCP_TERM_LLP_INSUFFICIENT_IRD, false);
		tcp_info("fd %d: Read Request beyond the IRD of %u",
			 ep->io.fd, ep->ird);
		return rx_term(ep, rx->rreq_raw, TCP_TERM_LAYER_DDP,
			       TCP_TERM_DDP_UNTAGGED, TCP_TERM_DDP_U_MSN_RANGE,
			       true);
	}
	rx->kick = true;
	return 1;
}

/* The peer ended the connection with a Terminate. */
static int rx_term_in(struct tcp_ep *ep)
{
	const struct tcp_term *t = &ep->rx->h.term;
	bool access = (t->layer == TCP_TERM_LAYER_RDMAP &&
		       t->etype == TCP_TERM_RDMAP_PROTECTION) ||
		      (t->layer == TCP_TERM_LAYER_DDP &&
		       t->etype == TCP_TERM_DDP_TAGGED);

	tcp_info("fd %d: peer sent Terminate layer %u type %u code %#x",
		 ep->io.fd, t->layer, t->etype, t->ecode);
	tcp_tx_blame(ep, t, access ? RAPT_DTO_REMOTE_ACCESS :
				     RAPT_DTO_REMOTE_OPERATION);
	tcp_cm_fail(ep, rapt_prov_status_term(true, t->layer, t->etype,
					      t->ecode));
	return -1;
}

static int rx_fpdu_end(struct tcp_ep *ep)
{
	struct tcp_rx *rx = ep->rx;
	int ret;

	switch (rx->kind) {
	case RX_RTR:
		if (rx->h.opcode == TCP_RDMAP_READ_REQ) {
			ret = rx_rreq_done(ep, true);
			if (ret < 0)
				return ret;
		}
		/* ESTABLISHED goes out before anything after the RTR is
		 * placed or completed. */
		tcp_cm_rtr_arrived(ep);
		return 1;
	case RX_RTR_RRESP:
		tcp_tx_read_done(ep);
		return 1;
	case RX_RRESP:
		if (rx->h.last) {
			rx->reads_done++;
			tcp_tx_read_done(ep);
		}
		return 1;
	case RX_SEND:
		return rx->h.last ? rx_recv_done(ep) : 1;
	case RX_RREQ:
		return rx_rreq_done(ep, false);
	case RX_TERM:
		return rx_term_in(ep);
	default:
		return 1;
	}
}

static int rx_trailer(struct tcp_ep *ep)
{
	struct tcp_rx *rx = ep->rx;
	const uint8_t *p = rx->buf + rx->start;
	uint32_t pad = rx->tlen - TCP_MPA_CRC_SIZE;

	if (ep->crc &&
	    tcp_fpdu_check_crc(tcp_crc32c(rx->crc, p, pad), p + pad)) {
		tcp_info("fd %d: FPDU CRC mismatch", ep->io.fd);
		return rx_term(ep, NULL, TCP_TERM_LAYER_LLP, 0,
			       TCP_TERM_LLP_CRC, false);
	}
	rx->start += rx->tlen;
	rx->state = RX_HDR;
	return rx_fpdu_end(ep);
}

/* ------------------------------------------------------------------ */
/* The loop                                                            */
/* ------------------------------------------------------------------ */

/* 1: progress, 0: the socket is empty, -1: the connection ended. */
static int rx_step(struct tcp_ep *ep)
{
	struct tcp_rx *rx = ep->rx;
	uint32_t avail = rx->end - rx->start;
	size_t need;

	switch (rx->state) {
	case RX_HDR:
		need = avail < 4 ? 4 :
		       tcp_ddp_hdr_need(rx->buf + rx->start, avail);
		if (avail < need)
			return rx_fill(ep, need);
		return rx_header(ep);
	case RX_DATA:
		return rx_data(ep);
	default:
		if (avail < rx->tlen)
			return rx_fill(ep, rx->tlen);
		return rx_trailer(ep);
	}
}

/**
 * tcp_rx_seasoned - whether @ep has read data often enough to be parked
 * @ep: the EP, locked
 *
 * Parking (tcp_park.c) saves the engine a wakeup per message of a busy
 * connection; for one that has moved almost nothing (a connection set up
 * and torn down at once) it would only cost two epoll_ctl calls.
 */
bool tcp_rx_seasoned(const struct tcp_ep *ep)
{
	return ep->rx && ep->rx->reads >= RX_PARK_AFTER;
}

/**
 * tcp_rx_heard - whether @ep has read an FPDU from its peer
 * @ep: the EP, locked
 */
bool tcp_rx_heard(const struct tcp_ep *ep)
{
	return ep->rx && ep->rx->first_seen;
}

/**
 * tcp_rx_progress - read and process what the socket has
 * @ep: the EP, locked
 * @look: a polling consumer's look at the EP (evd_progress)
 *
 * Reads until the socket is empty or the connection ends, then runs the
 * transmit path once if the FPDUs read gave it work (Read Responses, a
 * read that unblocks a FENCE, sends held for an MPA rev 1 peer), or if
 * posts left it reads to write (tcp_tx_flush()).
 *
 * With @look the pass also ends once TCP_RX_PASS_READS of our reads have
 * completed in it, whatever the socket still holds.  A consumer that
 * keeps reads outstanding posts the next ones only when it has the
 * completions; a pass that read a whole window of Read Responses left
 * the responder without a request for that long, and the stream of
 * reads ran in bursts (docs/performance.md, "RDMA read bandwidth: the
 * receive buffer and the receive pass").  What the pass leaves is read
 * by the consumer's next look, or by the engine: an EP that is not
 * parked has EPOLLIN watched level-triggered, a parked one is looked at
 * again within CM_PARK_NS and unparked when its consumer sleeps
 * (tcp_park.c).
 *
 * Return: 1 if the socket had anything, 0 if not.
 */
int tcp_rx_progress(struct tcp_ep *ep, bool look)
{
	struct tcp_rx *rx = ep->rx;
	uint32_t r0, most = look ? TCP_RX_PASS_READS : UINT32_MAX;
	int ret;

	if (!rx || !rx_open(ep))
		return 0;
	r0 = rx->reads;
	rx->drained = false;
	rx->reads_done = 0;
	do {
		ret = rx_step(ep);
	} while (ret > 0 && rx_open(ep) && rx->reads_done < most);
	if (rx->kick && rx_open(ep)) {
		rx->kick = false;
		tcp_tx_progress(ep);
	} else {
		tcp_tx_flush(ep);
	}
	return rx->reads != r0;
}
