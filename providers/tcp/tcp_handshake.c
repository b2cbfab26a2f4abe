/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the MPA exchange, both sides.
 *
 * One job: MPA rev 2 with enhanced connection setup (RFC 6581) and
 * peer-to-peer RTR, as Linux siw speaks it (shared/reference/
 * wire-semantics.md, 1 and 4): frames in and out, the active side from the
 * TCP connect to ESTABLISHED, the passive side from the consumer's accept
 * to the reply (the RTR's arrival is tcp_conn.c's).
 *
 *   initiator                              responder
 *   TCP connect  ------------------------>  accept4, handshake timer
 *   Request rev 2, E, [C], A+C+D, IRD/ORD, pdata
 *                ------------------------>  CR_ARRIVAL ... cr_accept
 *                <------------------------  Reply rev 2, E, [C], A + Write
 *   (C or D: CRC on if either side set C)   (or Read) RTR, IRD/ORD, pdata
 *   zero-length Write RTR (or Read RTR)
 *   ESTABLISHED  ------------------------>  RTR arrives: ESTABLISHED
 *
 * A rev 1 initiator, or a rev 2 one that does not set A (siw's default),
 * gets a reply in its own revision and no RTR; the responder then reports
 * ESTABLISHED with RAPT_CONN_SENDS_HELD once the reply is out, and the data
 * path holds its sends until the first FPDU arrives (RFC 5044's rule).
 */
#include "config.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "tcp_cm.h"


/* Whether the first @n bytes can start the key of @type. */
static bool key_prefix_ok(const uint8_t *buf, size_t n, int type)
{
	const char *key = type == TCP_MPA_REQUEST ? TCP_MPA_KEY_REQ :
						   TCP_MPA_KEY_REP;

	return !memcmp(buf, key, n < TCP_MPA_KEY_LEN ? n : TCP_MPA_KEY_LEN);
}

void tcp_cm_part_free(struct cm_part *part)
{
	free(part->buf);
	part->buf = NULL;
	part->len = 0;
}

/*
 * Read the MPA frame of @type that @fd's peer sends.  Neither side sends
 * an FPDU before it has the other's frame (RFC 5044 7.1, RFC 6581), so
 * the frame is all the stream holds: one recv() takes it whole in the
 * usual case, and bytes behind it are the peer's error.  A frame that
 * comes in pieces is kept in @part until whole.
 *
 * Return: the frame length when it is whole (@f describes it, its pdata
 * pointing into @buf), 0 when more bytes are due, a TCP_WIRE_E* code for
 * bytes that are not such a frame (TCP_WIRE_EEARLY: bytes behind it),
 * RAPT_ENOTCONN at end of stream, RAPT_ENOMEM, or a negated errno.
 */
int tcp_cm_read_frame(int fd, struct tcp_cap *cap, struct cm_part *part,
		      uint8_t *buf, int type, struct tcp_mpa_frame *f)
{
	size_t have = part->len;
	ssize_t n;
	int ret;

	if (have)
		memcpy(buf, part->buf, have);
	do {
		n = rapt_sys_recv(fd, buf + have, CM_READ_MAX - have,
				  MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	if (n == 0)
		return RAPT_ENOTCONN;
	tcp_cap_io(cap, false, buf + have, n);
	have += (size_t)n;
	if (!key_prefix_ok(buf, have, type))
		return TCP_WIRE_EKEY;
	ret = tcp_mpa_parse(buf, have, TCP_MPA_PD_MAX, f);
	if (ret == TCP_WIRE_ETRUNC) {
		if (!part->buf && !(part->buf = malloc(CM_FRAME_MAX)))
			return RAPT_ENOMEM;
		memcpy(part->buf, buf, have);
		part->len = (uint16_t)have;
		return 0;
	}
	if (ret > 0 && (size_t)ret != have)
		ret = TCP_WIRE_EEARLY;
	tcp_cm_part_free(part);
	return ret;
}

/* Send what is left of the handshake frame; frees it once it is out. */
int tcp_cm_send_hs(struct tcp_ep *ep)
{
	struct tcp_cm *cm = ep->cm;
	ssize_t n;

	while (cm->hs && cm->hs_off < cm->hs_len) {
		n = rapt_sys_send(ep->io.fd, cm->hs + cm->hs_off,
				  cm->hs_len - cm->hs_off,
				  MSG_NOSIGNAL | MSG_DONTWAIT);
		tcp_cap_io(ep->cap, true, cm->hs + cm->hs_off, n);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		cm->hs_off += (uint16_t)n;
	}
	free(cm->hs);
	cm->hs = NULL;
	return 0;
}

/*
 * An MPA-level error before full operation: a Terminate (layer LLP), as
 * siw sends for a bad reply, then the caller closes.  Best effort.
 */
static void cm_terminate(int fd, struct tcp_cap *cap, uint8_t ecode,
			 bool crc)
{
	struct tcp_ddp_hdr h = {
		.opcode = TCP_RDMAP_TERMINATE,
		.last = true,
		.msn = 1,
		.term = { .layer = TCP_TERM_LAYER_LLP, .ecode = ecode },
	};
	uint8_t buf[64];

	tcp_sock_send_frame(fd, cap, buf, tcp_fpdu_build(&h, NULL, 0, crc, buf,
							 sizeof(buf)));
}

/* ------------------------------------------------------------------ */
/* The mark: two rapt tcp providers know each other                   */
/* ------------------------------------------------------------------ */

/*
 * Four bytes after rapt's framed private data, in a request and in an
 * accepting reply, where the field has room for them.  A rapt peer on any
 * provider takes the consumer's bytes by the header's exact length and
 * never sees them (IB pads the field the same way); raw private data (a
 * foreign peer's) is never marked.  With both ends marked the responder
 * picks the Write RTR and the initiator keeps no settle time (tcp_conn.c):
 * that is for siw as responder, and between two of us neither the Read
 * RTR's response nor a FIN held for it has any use.  rapt over kernel siw
 * frames its private data as well but never marks it.
 */
static const uint8_t cm_mark[TCP_CM_MARK_LEN] = { 'r', 't', 'c', 'p' };

/* Whether @len bytes at @pdata are exactly rapt's framed private data. */
static bool cm_framed(const void *pdata, size_t len)
{
	return len && rapt_prov_pdata_end(pdata, len) == len;
}

/* @pdata with the mark after it in @out, if it takes one: the new length,
 * else 0 (send @pdata as it is). */
static size_t cm_mark_add(const void *pdata, size_t len, uint8_t *out)
{
	if (len + TCP_CM_MARK_LEN > TCP_MPA_ULP_PD_MAX ||
	    !cm_framed(pdata, len))
		return 0;
	memcpy(out, pdata, len);
	memcpy(out + len, cm_mark, TCP_CM_MARK_LEN);
	return len + TCP_CM_MARK_LEN;
}

/**
 * tcp_cm_mark_take - whether received private data bears the mark
 * @pdata: the field as received
 * @len: its length; shortened by the mark when it has one
 *
 * Return: true if the peer is rapt's tcp provider.
 */
bool tcp_cm_mark_take(const void *pdata, uint16_t *len)
{
	size_t n = *len;

	if (n < RAPT_PDATA_HEADER_LEN + TCP_CM_MARK_LEN ||
	    memcmp((const uint8_t *)pdata + n - TCP_CM_MARK_LEN, cm_mark,
		   TCP_CM_MARK_LEN) ||
	    !cm_framed(pdata, n - TCP_CM_MARK_LEN))
		return false;
	*len = (uint16_t)(n - TCP_CM_MARK_LEN);
	return true;
}

/* ------------------------------------------------------------------ */
/* Active side                                                        */
/* ------------------------------------------------------------------ */

int tcp_cm_build_request(struct tcp_ep *ep, const void *pdata,
			 size_t len, uint8_t *buf)
{
	uint8_t marked[TCP_MPA_ULP_PD_MAX];
	size_t mlen;
	struct tcp_mpa_frame f = {
		.type = TCP_MPA_REQUEST,
		.rev = TCP_MPA_REV2,
		.crc = ep->ia->crc_request,
		.enhanced = true,
		.rtr = TCP_MPA_P2P | TCP_MPA_RTR_WRITE | TCP_MPA_RTR_READ,
		.ird = (uint16_t)ep->attr.rdma_read_in,
		.ord = (uint16_t)ep->attr.rdma_read_out,
		.pdata_len = (uint16_t)len,
		.pdata = pdata,
	};

	if (len > TCP_MPA_ULP_PD_MAX)
		return RAPT_ELENGTH;
	mlen = cm_mark_add(pdata, len, marked);
	if (mlen) {
		f.pdata = marked;
		f.pdata_len = (uint16_t)mlen;
	}
	return tcp_mpa_build(&f, buf, CM_FRAME_MAX);
}

/* The TCP connect failed with @err. */
void tcp_cm_connect_failed(struct tcp_ep *ep, int err)
{
	uint32_t type = RAPT_EV_UNREACHABLE, reason = 0;

	/* An RST to our SYN: nothing listens on that port. */
	if (err == ECONNREFUSED || err == ECONNRESET) {
		type = RAPT_EV_NON_PEER_REJECTED;
		reason = RAPT_REJECT_NO_LISTENER;
	}
	tcp_dbg("connect failed: %s", strerror(err));
	tcp_cm_end(ep, true, type, reason, -err, NULL, 0);
}

/* The peer's reply is not MPA, or not one we can work with. */
static void cm_bad_reply(struct tcp_ep *ep, int err, uint8_t ecode)
{
	tcp_dbg("bad MPA reply: %s", cm_wire_err(err) ?
		tcp_wire_strerror(err) : rapt_strerror(err));
	cm_terminate(ep->io.fd, ep->cap, ecode, ep->crc);
	tcp_sock_drain(ep->io.fd);
	tcp_cm_end(ep, false, RAPT_EV_NON_PEER_REJECTED, RAPT_REJECT_PROTOCOL,
		   cm_wire_err(err) ? tcp_wire_err_to_rapt(err) : err, NULL, 0);
}

static uint16_t min16(uint32_t a, uint32_t b)
{
	return (uint16_t)(a < b ? a : b);
}

/* Settle CRC, IRD/ORD and the RTR from an accepting reply. */
static int cm_negotiate_reply(struct tcp_ep *ep, const struct tcp_mpa_frame *f)
{
	uint8_t rtr = f->rtr & (TCP_MPA_RTR_WRITE | TCP_MPA_RTR_READ);

	ep->crc = f->crc || ep->ia->crc_request;
	ep->mpa_rev1 = f->rev == TCP_MPA_REV1;
	ep->rtr = 0;
	ep->rtr_repeat_timed = ep->rtr_repeat_close = false;
	ep->consumer_close = ep->fin_held = false;
	if (!f->enhanced) {
		ep->ird = (uint16_t)ep->attr.rdma_read_in;
		ep->ord = (uint16_t)ep->attr.rdma_read_out;
		return 0;
	}
	/* Clamp rather than fail, as siw does: our reads never exceed what
	 * the peer can serve, and we serve no more than it will issue. */
	ep->ird = min16(ep->attr.rdma_read_in, f->ord);
	ep->ord = min16(ep->attr.rdma_read_out, f->ird);
	if (!(f->rtr & TCP_MPA_P2P))
		return 0;
	if (rtr != TCP_MPA_RTR_WRITE && rtr != TCP_MPA_RTR_READ)
		return RAPT_EPROTO;	/* exactly one of those we offered */
	ep->rtr = rtr;
	return 0;
}

/* Full operation: send the RTR if one was agreed, then ESTABLISHED. */
static void cm_active_ready(struct tcp_ep *ep, const struct tcp_mpa_frame *f)
{
	int ret;

	rapt_timer_cancel(ep->ia->eng, &ep->timer);
	ret = ep->io.events == CM_EP_EVENTS ? 0 :
	      rapt_engine_mod(ep->ia->eng, &ep->io, CM_EP_EVENTS);
	if (ret) {
		tcp_cm_end(ep, true, RAPT_EV_NON_PEER_REJECTED,
			   RAPT_REJECT_RESOURCES, ret, NULL, 0);
		return;
	}
	/* Still MPA_REQ_SENT while the RTR goes out: a socket that fails
	 * now fails the connect (NON_PEER_REJECTED), not an established
	 * connection the consumer never heard of. */
	tcp_dto_start(ep);
	if (ep->rtr) {
		ret = tcp_tx_rtr(ep, ep->rtr);
		if (ret) {
			tcp_cm_end(ep, true, RAPT_EV_NON_PEER_REJECTED,
				   RAPT_REJECT_RESOURCES, ret, NULL, 0);
			return;
		}
		if (!tcp_cm_open(ep))
			return;		/* tcp_cm_fail() reported it */
	}
	tcp_ep_set_state(ep, TCP_EP_RTS);
	/* The settle time is siw's (tcp_conn.c): not for a marked reply
	 * that picked the Write RTR.  A Read RTR's response is still due,
	 * and a close waits for it as before. */
	if (ep->rtr && !(ep->peer_tcp && ep->rtr == TCP_MPA_RTR_WRITE))
		tcp_cm_nudge_start(ep);
	tcp_cm_event(ep, RAPT_EV_ESTABLISHED, 0, 0, f->pdata, f->pdata_len, 0);
	tcp_tx_progress(ep);
}

static void cm_reply(struct tcp_ep *ep, const struct tcp_mpa_frame *f)
{
	if (f->reject) {
		tcp_cm_end(ep, false, RAPT_EV_PEER_REJECTED, 0,
			   RAPT_ECONNREFUSED, f->pdata, f->pdata_len);
		return;
	}
	if (cm_negotiate_reply(ep, f)) {
		cm_bad_reply(ep, RAPT_EPROTO, TCP_TERM_LLP_NO_MATCHING_RTR);
		return;
	}
	cm_active_ready(ep, f);
}

/*
 * Read the reply.  A reply (a reject above all) may sit in the receive
 * queue in front of an RST or a FIN, so the queue is looked at first and
 * the end of the stream only counts when no whole reply is there.
 */
void tcp_cm_read_reply(struct tcp_ep *ep, uint32_t events, int send_err)
{
	uint8_t buf[CM_READ_MAX];
	struct tcp_mpa_frame f;
	int n;

	n = tcp_cm_read_frame(ep->io.fd, ep->cap, &ep->cm->part, buf,
			      TCP_MPA_REPLY, &f);
	if (n > 0 && f.type != TCP_MPA_REPLY)
		n = TCP_WIRE_EKEY;
	if (n > 0) {
		ep->peer_tcp = !f.reject && tcp_cm_mark_take(f.pdata,
							     &f.pdata_len);
		cm_reply(ep, &f);
		return;
	}
	if (n == RAPT_ENOMEM) {
		cm_bad_reply(ep, n, TCP_TERM_LLP_LOCAL_CATASTROPHIC);
		return;
	}
	if (cm_wire_err(n)) {
		cm_bad_reply(ep, n, TCP_TERM_LLP_BAD_REQ_REP);
		return;
	}
	if (!n && !send_err &&
	    !(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		return;		/* more to come */
	/* The peer closed or reset during the exchange: not an MPA peer. */
	if (!n || n == RAPT_ENOTCONN)
		n = send_err ? send_err : RAPT_ENOTCONN;
	tcp_dbg("the peer closed during the MPA exchange: %s",
		rapt_strerror(n));
	tcp_cm_end(ep, true, RAPT_EV_NON_PEER_REJECTED, RAPT_REJECT_PROTOCOL, n,
		   NULL, 0);
}

/*
 * Send what is left of the request; once it is all out, the registration
 * watches for the reply alone.  TCP may still be connecting: EAGAIN, and
 * the EPOLLOUT of its completion brings us back.  A connect that failed
 * fails the send with its error (no SO_ERROR needed).
 */
void tcp_cm_request_out(struct tcp_ep *ep)
{
	uint32_t want;
	int ret = tcp_cm_send_hs(ep);

	if (ret && ep->state == TCP_EP_CONNECTING) {
		tcp_cm_connect_failed(ep, -ret);
		return;
	}
	if (ret) {
		tcp_cm_read_reply(ep, 0, ret);
		return;
	}
	if (ep->cm->hs_off)
		/* so TCP is up */
		tcp_ep_set_state(ep, TCP_EP_MPA_REQ_SENT);
	want = CM_EP_EVENTS | (ep->cm->hs ? EPOLLOUT : 0);
	ret = ep->io.events == want ? 0 :
	      rapt_engine_mod(ep->ia->eng, &ep->io, want);
	if (ret)
		tcp_cm_end(ep, true, RAPT_EV_NON_PEER_REJECTED,
			   RAPT_REJECT_RESOURCES, ret, NULL, 0);
}

/* An event while TCP connects: EPOLLOUT (with EPOLLERR and EPOLLHUP if
 * it failed) says it is over either way. */
void tcp_cm_connected(struct tcp_ep *ep, uint32_t events)
{
	if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
		return;
	tcp_cm_request_out(ep);
	/* A reply already in (level-triggered: else the next pass sees it) */
	if ((events & EPOLLIN) && tcp_cm_open(ep) &&
	    ep->state == TCP_EP_MPA_REQ_SENT && !ep->cm->hs)
		tcp_cm_read_reply(ep, events, 0);
}

/**
 * tcp_cm_progress - run the active handshake in a polling consumer's thread
 * @ep: an EP in CONNECTING or MPA_REQ_SENT, with ep->lock held
 *
 * What the engine does on the socket's events, so a consumer that polls
 * the connect EVD sees ESTABLISHED without waiting for a thread wakeup.
 * Errors and hang-ups are left to the engine (it watches them anyway).
 */
void tcp_cm_progress(struct tcp_ep *ep)
{
	struct pollfd p;

	if (ep->io.fd < 0 || ep->freeing)
		return;
	if (ep->state == TCP_EP_CONNECTING) {
		p.fd = ep->io.fd;
		p.events = POLLOUT;
		p.revents = 0;
		if (rapt_sys_poll(&p, 1, 0) == 1 && p.revents == POLLOUT)
			tcp_cm_connected(ep, EPOLLOUT);
		return;
	}
	if (ep->state != TCP_EP_MPA_REQ_SENT)
		return;
	if (ep->cm->hs)
		tcp_cm_request_out(ep);
	if (tcp_cm_open(ep) && ep->state == TCP_EP_MPA_REQ_SENT && !ep->cm->hs)
		tcp_cm_read_reply(ep, 0, 0);
}

/* ------------------------------------------------------------------ */
/* Passive side: the reply                                            */
/* ------------------------------------------------------------------ */

/* Settle CRC, IRD/ORD and the RTR for a request; the reply's fields. */
static void cm_negotiate_request(struct tcp_ep *ep, const struct tcp_cr *cr,
				 bool marked, struct tcp_mpa_frame *f)
{
	ep->crc = cr->crc || ep->ia->crc_request;
	ep->mpa_rev1 = cr->rev == TCP_MPA_REV1;
	ep->rtr = 0;
	ep->rtr_repeat_timed = ep->rtr_repeat_close = false;
	ep->consumer_close = ep->fin_held = false;
	ep->cm->p2p = false;
	ep->ird = (uint16_t)ep->attr.rdma_read_in;
	ep->ord = (uint16_t)ep->attr.rdma_read_out;
	if (cr->enhanced) {
		ep->ird = min16(ep->ird, cr->ord);
		ep->ord = min16(ep->ord, cr->ird);
	}
	if (cr->enhanced && (cr->rtr & TCP_MPA_P2P)) {
		/* Echo A.  Read if offered to a requester that can issue a
		 * read (ORD 1 or more: siw as requester fails a Read RTR
		 * without one), else Write if offered, else Read
		 * (tcp_mpa_parse refused a request that offers neither).
		 * The Read RTR's zero-length response tells the requester
		 * that we have its RTR, which lets it close at once (see
		 * tcp_conn.c, the RTR's settle time).  A requester that is
		 * rapt's tcp provider, answered with the mark, keeps no
		 * settle time: Write, which needs no response. */
		ep->cm->p2p = true;
		if (marked && (cr->rtr & TCP_MPA_RTR_WRITE))
			ep->rtr = TCP_MPA_RTR_WRITE;
		else if ((cr->rtr & TCP_MPA_RTR_READ) && cr->ord)
			ep->rtr = TCP_MPA_RTR_READ;
		else if (cr->rtr & TCP_MPA_RTR_WRITE)
			ep->rtr = TCP_MPA_RTR_WRITE;
		else
			ep->rtr = TCP_MPA_RTR_READ;
		/* A Read RTR takes one inbound read slot. */
		if (ep->rtr == TCP_MPA_RTR_READ && !ep->ird)
			ep->ird = 1;
	}
	memset(f, 0, sizeof(*f));
	f->type = TCP_MPA_REPLY;
	f->rev = cr->rev;
	f->enhanced = cr->enhanced;
	f->crc = ep->crc;
	f->rtr = ep->cm->p2p ? TCP_MPA_P2P | ep->rtr : 0;
	f->ird = ep->ird;
	f->ord = ep->ord;
}

/* The reply is out: wait for the RTR, or (no P2P) be established now. */
static void cm_passive_ready(struct tcp_ep *ep)
{
	int ret = 0;

	if (ep->io.events != (EPOLLIN | EPOLLRDHUP))
		ret = rapt_engine_mod(ep->ia->eng, &ep->io,
				      EPOLLIN | EPOLLRDHUP);
	if (ret) {
		tcp_cm_fail(ep, ret);
		return;
	}
	if (ep->cm->p2p) {
		tcp_ep_set_state(ep, TCP_EP_RTR_WAIT);
		rapt_timer_arm(ep->ia->eng, &ep->timer,
			       CM_RTR_WAIT_MS * CM_NS_PER_MS);
		tcp_dto_start(ep);
		return;
	}
	/* RFC 5044: the responder sends nothing before an FPDU arrives. */
	tcp_ep_set_state(ep, TCP_EP_RTS);
	ep->sends_held = true;
	tcp_dto_start(ep);
	tcp_cm_event(ep, RAPT_EV_ESTABLISHED, 0, 0, NULL, 0,
		     RAPT_CONN_SENDS_HELD);
}

/* With ep->lock: give @cr's socket to @ep and send the reply in @hs. */
int tcp_cm_accept_locked(struct tcp_ep *ep, struct tcp_cr *cr,
			 const struct cr_decision *d, uint8_t **hs)
{
	uint8_t marked[TCP_MPA_ULP_PD_MAX];
	struct tcp_mpa_frame f;
	int len, ret, send_err;
	size_t mlen;
	bool watched;

	if (ep->state != TCP_EP_IDLE)
		return RAPT_ESTATE;
	mlen = cm_mark_add(d->pdata, d->pdata_len, marked);
	ep->peer_tcp = cr->peer_tcp;
	cm_negotiate_request(ep, cr, cr->peer_tcp && mlen, &f);
	f.pdata = mlen ? marked : d->pdata;
	f.pdata_len = (uint16_t)(mlen ? mlen : d->pdata_len);
	len = tcp_mpa_build(&f, *hs, CM_FRAME_MAX);
	if (len < 0)
		return len;
	ep->io.fd = cr->io.fd;	/* the EP's now */
	if (ep->peer_timeout_ms != RAPT_PEER_TIMEOUT_DEFAULT_MS)
		tcp_sock_peer_timeout(ep->io.fd, ep->peer_timeout_ms);
	watched = cr->io.registered;
	ep->cm->raddr = cr->raddr;
	if (cr->psp->wildcard)
		tcp_cm_sa_local(ep->io.fd, &ep->cm->laddr);
	else
		ep->cm->laddr = cr->psp->laddr;
	ep->cap = cr->cap;	/* and so is its capture */
	cr->cap = NULL;
	ep->active = false;
	ep->mss_due = true;	/* read once a message needs it (tcp_tx.c) */
	ep->cm->hs = *hs;
	ep->cm->hs_len = (uint16_t)len;
	ep->cm->hs_off = 0;
	*hs = NULL;
	tcp_ep_set_state(ep, TCP_EP_ACCEPTING);
	/*
	 * The registration, off the requester's wait, as it will stay, then
	 * the reply.  In that order the engine hears of the RTR as soon as
	 * it arrives: registered after the reply, the socket joined the
	 * engine's ready list only then, behind whatever the same peer did
	 * meanwhile on its other connections (a close, say), and the
	 * consumer saw those first although they came later.  A reply that
	 * did not fit then waits for EPOLLOUT instead.  From here on a
	 * failure is the EP's ACCEPT_ERROR, not the op's: the request is
	 * consumed either way.
	 */
	ret = watched ? rapt_engine_rebind(ep->ia->eng, &cr->io, &ep->io,
					   CM_EP_EVENTS) :
			rapt_engine_add(ep->ia->eng, &ep->io, CM_EP_EVENTS);
	cr->io.fd = -1;
	tcp_cr_close_free(cr);
	send_err = ret ? 0 : tcp_cm_send_hs(ep);
	if (!ret && !send_err && ep->cm->hs)
		ret = rapt_engine_mod(ep->ia->eng, &ep->io,
				      EPOLLOUT | EPOLLRDHUP);
	if (ret || send_err)
		tcp_cm_fail(ep, ret ? ret : send_err);
	else if (!ep->cm->hs)
		cm_passive_ready(ep);
	return 0;
}

void tcp_cm_accepting_io(struct tcp_ep *ep, uint32_t events)
{
	int err;

	if (events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
		err = tcp_sock_err(ep->io.fd);
		tcp_cm_fail(ep, err ? -err : RAPT_ENOTCONN);
		return;
	}
	err = tcp_cm_send_hs(ep);
	if (err)
		tcp_cm_fail(ep, err);
	else if (!ep->cm->hs)
		cm_passive_ready(ep);
}
