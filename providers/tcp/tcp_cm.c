/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: connection management.
 *
 * MPA rev 2 with enhanced connection setup (RFC 6581) and peer-to-peer RTR,
 * as Linux siw speaks it (shared/reference/wire-semantics.md, 1 and 4):
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
 *
 * Threads.  Every listener and every request still in the handshake or
 * waiting for the consumer's decision lives on the engine thread only; the
 * consumer's cr_accept/cr_reject/psp_free run there through
 * tcp_engine_call().  EPs are shared with consumer threads and guarded by
 * ep->lock; their socket handler (ep_io) runs on the engine thread.
 *
 * A request whose requester goes away is cancelled and freed at once, on
 * the engine thread.  A decision finds its request on the engine thread
 * too, through rapt_prov_cr_request(), which answers NULL once the
 * request was cancelled: a decision the core had already started then
 * fails with RAPT_ENOTCONN instead of reaching freed memory.
 */
#include "config.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "tcp.h"

/* The largest MPA frame we send or accept: siw's 256 bytes of pdata. */
#define CM_FRAME_MAX		(TCP_MPA_HDR_LEN + TCP_MPA_PD_LIMIT)
/* A frame is read with room for one byte more: bytes behind it show. */
#define CM_READ_MAX		(CM_FRAME_MAX + 1)
#define CM_LISTEN_BACKLOG	4096
/* An EP's registration from its MPA exchange to its close (level-
 * triggered; EPOLLOUT added only while a frame or FPDUs wait for room). */
#define CM_EP_EVENTS		(EPOLLIN | EPOLLRDHUP)
#define CM_ACCEPT_BATCH		64	/* accept4() retries (EINTR, aborts) */
#define CM_ACCEPT_RETRY_MS	100	/* out of file descriptors */
#define CM_RTR_WAIT_MS		10000	/* reply sent, RTR due */
#define CM_FIN_WAIT_MS		2000	/* our FIN sent, theirs due */
#define CM_NS_PER_MS		1000000ull
#define CM_NS_PER_US		1000ull
#define CM_PARK_NS		1000000ull	/* parked EP: look again */
#define CM_CR_WATCH_NS		1000000ull	/* undecided CR: registered */

#define cm_container_of(p, type, member) \
	((type *)(void *)((char *)(p) - offsetof(type, member)))

/* Per-EP connection state beyond struct tcp_ep (ep->cm). */
/* An IPv4 or IPv6 socket address, kept small (not a sockaddr_storage). */
union cm_sa {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

/* The start of an MPA frame that arrived in pieces (rare: malloc'd). */
struct cm_part {
	uint8_t *buf;
	uint16_t len;
};

struct tcp_cm {
	union cm_sa laddr, raddr;	/* for ESTABLISHED, without syscalls */
	uint8_t *hs;		/* MPA frame being sent, handshake only */
	uint16_t hs_len;
	uint16_t hs_off;	/* bytes of it sent */
	struct cm_part part;	/* the reply, while it comes in pieces */
	bool p2p;		/* passive: an RTR is due before ESTABLISHED */
	bool wr_shut;		/* graceful close: our FIN is out */
};

enum cr_state {
	CR_HANDSHAKE = 0,	/* counted in the PSP's in_handshake */
	CR_UNDECIDED,		/* a CR the consumer has not decided yet */
};

/*
 * A connection request: about 150 bytes, no buffer of its own.  A request
 * that arrives whole with the connection is registered with the engine
 * only if the consumer has not decided it CM_CR_WATCH_NS later (to notice
 * the requester leaving): a prompt accept then costs one epoll_ctl, the
 * EP's, made after the reply is out.
 */
struct tcp_cr {
	struct tcp_io io;		/* must stay first */
	struct tcp_retire retire;
	struct tcp_timer timer;		/* handshake timeout */
	struct tcp_psp *psp;
	struct tcp_cr *next, *prev;	/* psp->reqs */
	struct rapt_core_cr *ccr;
	uint8_t state;			/* enum cr_state */
	/* What the reply needs to know of the request. */
	uint8_t rev;
	bool enhanced;
	bool crc;
	uint8_t rtr;
	uint16_t ird, ord;
	struct tcp_cap *cap;		/* RAPT_TCP_CAPTURE, or NULL */
	union cm_sa raddr;		/* from accept4() */
	struct cm_part part;		/* the request, if in pieces */
};

struct tcp_psp {
	struct tcp_io io;		/* the listener; must stay first */
	struct tcp_retire retire;
	struct tcp_timer timer;		/* accepting paused: no fds */
	struct tcp_ia *ia;
	struct rapt_core_psp *cpsp;
	struct tcp_cr *reqs;
	uint32_t hs_timeout_ms;
	union cm_sa laddr;		/* the listener's */
	bool wildcard;			/* laddr is no connection's address */
};

/* ------------------------------------------------------------------ */
/* Sockets                                                             */
/* ------------------------------------------------------------------ */

static socklen_t sa_len(int family)
{
	return family == AF_INET ? sizeof(struct sockaddr_in) :
				   sizeof(struct sockaddr_in6);
}

static void sa_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static uint16_t sa_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

/* Copy an IPv4 or IPv6 @sa with port @port; RAPT_EINVAL otherwise. */
static int sa_copy(const struct sockaddr *sa, uint16_t port,
		   struct sockaddr_storage *ss)
{
	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) {
		rapt_prov_set_error("tcp: address family %d is not IPv4/IPv6",
				    sa->sa_family);
		return RAPT_EINVAL;
	}
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, sa, sa_len(sa->sa_family));
	sa_set_port(ss, port);
	return 0;
}

static void cm_sa_set(union cm_sa *a, const struct sockaddr_storage *ss)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET || ss->ss_family == AF_INET6)
		memcpy(a, ss, sa_len(ss->ss_family));
}

static void cm_sa_get(const union cm_sa *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->sa.sa_family == AF_INET || a->sa.sa_family == AF_INET6)
		memcpy(ss, a, sa_len(a->sa.sa_family));
}

/* @fd's local address into @a (AF_UNSPEC if it cannot be had). */
static void cm_sa_local(int fd, union cm_sa *a)
{
	socklen_t sl = sizeof(*a);

	if (getsockname(fd, &a->sa, &sl) || sl > sizeof(*a))
		memset(a, 0, sizeof(*a));
}

static bool cm_sa_wildcard(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(
		&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

static int sock_err(int fd)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return errno;
	return err;
}

static void sock_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Close with an RST: nothing queued is sent, no TIME_WAIT. */
static void sock_abort(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

/* Send a small frame now or not at all (replies to requests we drop). */
static void sock_send_frame(int fd, struct tcp_cap *cap, const uint8_t *buf,
			    int len)
{
	ssize_t n;

	if (len <= 0)
		return;
	do {
		n = send(fd, buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	tcp_cap_io(cap, true, buf, n);
}

/* Throw away what the peer sent, so that close() sends a FIN (unread
 * data would turn it into an RST that can overtake our last frame). */
static void sock_drain(int fd)
{
	uint8_t buf[512];
	int i;

	for (i = 0; i < 128; i++)
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			return;
}

/* A socket error as a RAPT_E* code (the errno negated where they agree). */
static int errno_to_rapt(int err)
{
	switch (err) {
	case EMFILE:
	case ENFILE:
	case ENOBUFS:
	case ENOMEM:
		return RAPT_ENOMEM;
	case EADDRINUSE:
		return RAPT_EADDRINUSE;
	case EACCES:
	case EPERM:
		return RAPT_EACCES;
	case EADDRNOTAVAIL:
	case EAFNOSUPPORT:
		return RAPT_EINVAL;
	default:
		return RAPT_EPROVIDER;
	}
}

/* Whether @a and @b hold the same IP address (ports aside). */
static bool sa_same_ip(const struct sockaddr_storage *a,
		       const struct sockaddr_storage *b)
{
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof(a6->sin6_addr)) &&
	       a6->sin6_scope_id == b6->sin6_scope_id;
}

/*
 * A non-blocking stream socket to @dst, from the IA's address.  A
 * connection to the IA's own address needs no bind: the kernel takes
 * the destination as the source of a local route anyway.  (TCP_NODELAY
 * comes once the request is out: ep_connect_start.)
 */
static int cm_socket(struct tcp_ia *ia, const struct sockaddr_storage *dst)
{
	struct sockaddr_storage src;
	int fd, one = 1, family = dst->ss_family;

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		int err = errno;

		tcp_err("socket: %s", strerror(err));
		return errno_to_rapt(err);
	}
	if (ia->addr.ss_family != family || sa_same_ip(&ia->addr, dst))
		return fd;
	/* The port is picked at connect time, per destination. */
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	src = ia->addr;
	sa_set_port(&src, 0);
	if (bind(fd, (struct sockaddr *)&src, sa_len(family)))
		tcp_dbg("cannot bind to %s's address (%m); the kernel picks",
			ia->device);
	return fd;
}

/* ------------------------------------------------------------------ */
/* MPA frames                                                          */
/* ------------------------------------------------------------------ */

static bool wire_err(int err)
{
	return err <= TCP_WIRE_ETRUNC;
}

/* Whether the first @n bytes can start the key of @type. */
static bool key_prefix_ok(const uint8_t *buf, size_t n, int type)
{
	const char *key = type == TCP_MPA_REQUEST ? TCP_MPA_KEY_REQ :
						   TCP_MPA_KEY_REP;

	return !memcmp(buf, key, n < TCP_MPA_KEY_LEN ? n : TCP_MPA_KEY_LEN);
}

static void cm_part_free(struct cm_part *part)
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
static int cm_read_frame(int fd, struct tcp_cap *cap, struct cm_part *part,
			 uint8_t *buf, int type, struct tcp_mpa_frame *f)
{
	size_t have = part->len;
	ssize_t n;
	int ret;

	if (have)
		memcpy(buf, part->buf, have);
	do {
		n = recv(fd, buf + have, CM_READ_MAX - have,
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
	ret = tcp_mpa_parse(buf, have, TCP_MPA_PD_LIMIT, f);
	if (ret == TCP_WIRE_ETRUNC) {
		if (!part->buf && !(part->buf = malloc(CM_FRAME_MAX)))
			return RAPT_ENOMEM;
		memcpy(part->buf, buf, have);
		part->len = (uint16_t)have;
		return 0;
	}
	if (ret > 0 && (size_t)ret != have)
		ret = TCP_WIRE_EEARLY;
	cm_part_free(part);
	return ret;
}

/* Send what is left of the handshake frame; frees it once it is out. */
static int cm_send_hs(struct tcp_ep *ep)
{
	struct tcp_cm *cm = ep->cm;
	ssize_t n;

	while (cm->hs && cm->hs_off < cm->hs_len) {
		n = send(ep->io.fd, cm->hs + cm->hs_off,
			 cm->hs_len - cm->hs_off, MSG_NOSIGNAL | MSG_DONTWAIT);
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

	sock_send_frame(fd, cap, buf, tcp_fpdu_build(&h, NULL, 0, crc, buf,
						     sizeof(buf)));
}

/* ------------------------------------------------------------------ */
/* EP events and teardown                                              */
/* ------------------------------------------------------------------ */

static void cm_event(struct tcp_ep *ep, uint32_t type, uint32_t reason,
		     int status, const void *pdata, size_t len,
		     uint32_t flags)
{
	struct rapt_prov_conn_event ce;

	if (ep->freeing)
		return;
	memset(&ce, 0, sizeof(ce));
	ce.type = type;
	ce.reason = reason;
	ce.prov_status = status;
	ce.flags = flags;
	ce.pdata = len ? pdata : NULL;
	ce.pdata_len = len;
	/* iWARP cannot tell who rejected: a reply with private data is
	 * taken for the consumer's (the core reads rapt's own markers). */
	ce.consumer_reject = type == RAPT_EV_PEER_REJECTED && len;
	if (type == RAPT_EV_ESTABLISHED) {
		ce.rdma_read_in = ep->ird;
		ce.rdma_read_out = ep->ord;
		if (!ep->cm->laddr.sa.sa_family)	/* active side */
			cm_sa_local(ep->io.fd, &ep->cm->laddr);
		cm_sa_get(&ep->cm->laddr, &ce.local_addr);
		cm_sa_get(&ep->cm->raddr, &ce.remote_addr);
	}
	rapt_prov_ep_event(ep->cep, &ce);
}

/* Take the socket off the engine and close it (RST if @abort). */
static void cm_close(struct tcp_ep *ep, bool abort)
{
	tcp_timer_cancel(ep->ia->eng, &ep->timer);
	tcp_timer_cancel(ep->ia->eng, &ep->park);
	ep->parked = false;
	free(ep->cm->hs);
	ep->cm->hs = NULL;
	cm_part_free(&ep->cm->part);
	tcp_cap_close(ep->cap);
	ep->cap = NULL;
	tcp_engine_close(ep->ia->eng, &ep->io, abort);
}

/*
 * End the connection: flush every WR, report @type, then close.  The event
 * is queued before our FIN or RST leaves, so whatever the peer does once it
 * has seen the close (connect again, say) is queued after it here, even
 * when a consumer thread is running this through evd_progress.
 */
static void cm_end(struct tcp_ep *ep, bool abort, uint32_t type,
		   uint32_t reason, int status, const void *pdata, size_t len)
{
	tcp_timer_cancel(ep->ia->eng, &ep->timer);
	ep->state = TCP_EP_CLOSED;
	if (!ep->freeing)
		tcp_dto_flush(ep);
	cm_event(ep, type, reason, status, pdata, len, 0);
	cm_close(ep, abort);
}

/* What a failure means in the EP's current state. */
static uint32_t cm_fail_type(const struct tcp_ep *ep)
{
	switch (ep->state) {
	case TCP_EP_CONNECTING:
	case TCP_EP_MPA_REQ_SENT:
		return RAPT_EV_NON_PEER_REJECTED;
	case TCP_EP_ACCEPTING:
	case TCP_EP_RTR_WAIT:
		return RAPT_EV_ACCEPT_ERROR;
	case TCP_EP_CLOSING:
		return RAPT_EV_DISCONNECTED;	/* it was closing anyway */
	default:
		return RAPT_EV_BROKEN;
	}
}

static bool cm_open(const struct tcp_ep *ep)
{
	return ep->io.fd >= 0 && ep->state != TCP_EP_CLOSED;
}

/**
 * tcp_cm_fail - the transport failed or the peer broke the protocol
 * @ep: the EP, locked
 * @status: RAPT_E* code, reported as the event's prov_status
 *
 * Closes with an RST (a FIN after a Terminate), flushes, and reports
 * BROKEN (ACCEPT_ERROR while
 * passive and not established, DISCONNECTED during a graceful close).
 */
void tcp_cm_fail(struct tcp_ep *ep, int status)
{
	uint32_t type;

	if (!cm_open(ep))
		return;
	type = cm_fail_type(ep);
	/* After a Terminate, an RST could discard it while it still sits
	 * in our send queue (on a real link it often does): end with a FIN. */
	cm_end(ep, !ep->term_sent, type, type == RAPT_EV_NON_PEER_REJECTED ?
	       RAPT_REJECT_PROTOCOL : 0, status, NULL, 0);
}

/**
 * tcp_cm_peer_closed - the peer closed its side (the receive path read 0)
 * @ep: the EP, locked
 */
void tcp_cm_peer_closed(struct tcp_ep *ep)
{
	if (!cm_open(ep))
		return;
	if (ep->state == TCP_EP_RTS || ep->state == TCP_EP_CLOSING)
		cm_end(ep, false, RAPT_EV_DISCONNECTED, 0, 0, NULL, 0);
	else
		tcp_cm_fail(ep, RAPT_ENOTCONN);
}

/**
 * tcp_cm_rtr_arrived - the RTR the passive side waited for is in
 * @ep: the EP, locked, in TCP_EP_RTR_WAIT
 *
 * Reports ESTABLISHED: from now on either side may send first.
 */
void tcp_cm_rtr_arrived(struct tcp_ep *ep)
{
	if (ep->state != TCP_EP_RTR_WAIT)
		return;
	tcp_timer_cancel(ep->ia->eng, &ep->timer);
	ep->state = TCP_EP_RTS;
	cm_event(ep, RAPT_EV_ESTABLISHED, 0, 0, NULL, 0, 0);
}

/* Graceful close, sends drained: send our FIN, wait (bounded) for theirs. */
static void cm_shutdown(struct tcp_ep *ep)
{
	if (shutdown(ep->io.fd, SHUT_WR)) {
		tcp_cm_fail(ep, -errno);
		return;
	}
	ep->cm->wr_shut = true;
	tcp_timer_arm(ep->ia->eng, &ep->timer, CM_FIN_WAIT_MS * CM_NS_PER_MS);
}

/**
 * tcp_cm_tx_drained - the send queue of a closing EP is empty
 * @ep: the EP, locked
 */
void tcp_cm_tx_drained(struct tcp_ep *ep)
{
	if (ep->state == TCP_EP_CLOSING && !ep->cm->wr_shut && ep->io.fd >= 0)
		cm_shutdown(ep);
}

/* ------------------------------------------------------------------ */
/* Active side                                                         */
/* ------------------------------------------------------------------ */

static int cm_build_request(struct tcp_ep *ep, const void *pdata,
			    size_t len, uint8_t *buf)
{
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
	return tcp_mpa_build(&f, buf, CM_FRAME_MAX);
}

/* The TCP connect failed with @err. */
static void cm_connect_failed(struct tcp_ep *ep, int err)
{
	uint32_t type = RAPT_EV_UNREACHABLE, reason = 0;

	/* An RST to our SYN: nothing listens on that port. */
	if (err == ECONNREFUSED || err == ECONNRESET) {
		type = RAPT_EV_NON_PEER_REJECTED;
		reason = RAPT_REJECT_NO_LISTENER;
	}
	tcp_dbg("connect failed: %s", strerror(err));
	cm_end(ep, true, type, reason, -err, NULL, 0);
}

/* The peer's reply is not MPA, or not one we can work with. */
static void cm_bad_reply(struct tcp_ep *ep, int err, uint8_t ecode)
{
	tcp_dbg("bad MPA reply: %s", wire_err(err) ? tcp_wire_strerror(err) :
		rapt_strerror(err));
	cm_terminate(ep->io.fd, ep->cap, ecode, ep->crc);
	sock_drain(ep->io.fd);
	cm_end(ep, false, RAPT_EV_NON_PEER_REJECTED, RAPT_REJECT_PROTOCOL,
	       wire_err(err) ? tcp_wire_err_to_rapt(err) : err, NULL, 0);
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

	tcp_timer_cancel(ep->ia->eng, &ep->timer);
	ret = ep->io.events == CM_EP_EVENTS ? 0 :
	      tcp_engine_mod(ep->ia->eng, &ep->io, CM_EP_EVENTS);
	if (ret) {
		cm_end(ep, true, RAPT_EV_NON_PEER_REJECTED,
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
			cm_end(ep, true, RAPT_EV_NON_PEER_REJECTED,
			       RAPT_REJECT_RESOURCES, ret, NULL, 0);
			return;
		}
		if (!cm_open(ep))
			return;		/* tcp_cm_fail() reported it */
	}
	ep->state = TCP_EP_RTS;
	cm_event(ep, RAPT_EV_ESTABLISHED, 0, 0, f->pdata, f->pdata_len, 0);
	tcp_tx_progress(ep);
}

static void cm_reply(struct tcp_ep *ep, const struct tcp_mpa_frame *f)
{
	if (f->reject) {
		cm_end(ep, false, RAPT_EV_PEER_REJECTED, 0, RAPT_ECONNREFUSED,
		       f->pdata, f->pdata_len);
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
static void cm_read_reply(struct tcp_ep *ep, uint32_t events, int send_err)
{
	uint8_t buf[CM_READ_MAX];
	struct tcp_mpa_frame f;
	int n;

	n = cm_read_frame(ep->io.fd, ep->cap, &ep->cm->part, buf,
			  TCP_MPA_REPLY, &f);
	if (n > 0 && f.type != TCP_MPA_REPLY)
		n = TCP_WIRE_EKEY;
	if (n > 0) {
		cm_reply(ep, &f);
		return;
	}
	if (n == RAPT_ENOMEM) {
		cm_bad_reply(ep, n, TCP_TERM_LLP_LOCAL_CATASTROPHIC);
		return;
	}
	if (wire_err(n)) {
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
	cm_end(ep, true, RAPT_EV_NON_PEER_REJECTED, RAPT_REJECT_PROTOCOL, n,
	       NULL, 0);
}

/*
 * Send what is left of the request; once it is all out, the registration
 * watches for the reply alone.  TCP may still be connecting: EAGAIN, and
 * the EPOLLOUT of its completion brings us back.  A connect that failed
 * fails the send with its error (no SO_ERROR needed).
 */
static void cm_request_out(struct tcp_ep *ep)
{
	uint32_t want;
	int ret = cm_send_hs(ep);

	if (ret && ep->state == TCP_EP_CONNECTING) {
		cm_connect_failed(ep, -ret);
		return;
	}
	if (ret) {
		cm_read_reply(ep, 0, ret);
		return;
	}
	if (ep->cm->hs_off)
		ep->state = TCP_EP_MPA_REQ_SENT;	/* so TCP is up */
	want = CM_EP_EVENTS | (ep->cm->hs ? EPOLLOUT : 0);
	ret = ep->io.events == want ? 0 :
	      tcp_engine_mod(ep->ia->eng, &ep->io, want);
	if (ret)
		cm_end(ep, true, RAPT_EV_NON_PEER_REJECTED,
		       RAPT_REJECT_RESOURCES, ret, NULL, 0);
}

/* An event while TCP connects: EPOLLOUT (with EPOLLERR and EPOLLHUP if
 * it failed) says it is over either way. */
static void cm_connected(struct tcp_ep *ep, uint32_t events)
{
	if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
		return;
	cm_request_out(ep);
	/* A reply already in (level-triggered: else the next pass sees it) */
	if ((events & EPOLLIN) && cm_open(ep) &&
	    ep->state == TCP_EP_MPA_REQ_SENT && !ep->cm->hs)
		cm_read_reply(ep, events, 0);
}

/* ------------------------------------------------------------------ */
/* EP socket handler                                                   */
/* ------------------------------------------------------------------ */

/* A hang-up the receive path did not turn into an event. */
static void cm_check_hup(struct tcp_ep *ep)
{
	int err = sock_err(ep->io.fd);
	uint8_t b;
	ssize_t n;

	if (err) {
		tcp_cm_fail(ep, -err);
		return;
	}
	n = recv(ep->io.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		tcp_cm_peer_closed(ep);
	else if (n < 0 && errno != EAGAIN && errno != EINTR)
		tcp_cm_fail(ep, -errno);
}

/* ------------------------------------------------------------------ */
/* Parking: the engine leaves a spinning consumer's sockets to it      */
/* ------------------------------------------------------------------ */

/* Whether a consumer busy-polls an EVD that @ep is attached to: its
 * evd_progress runs our receive path, so the engine need not wake. */
static bool ep_polled(struct tcp_ep *ep)
{
	uint64_t now = tcp_now_ns();

	return tcp_evd_spinning(ep->recv_evd, now) ||
	       tcp_evd_spinning(ep->req_evd, now) ||
	       tcp_evd_spinning(ep->conn_evd, now);
}

/* With ep->lock: stop watching EPOLLIN (EPOLLRDHUP stays) and look again
 * in CM_PARK_NS. */
static void ep_park(struct tcp_ep *ep)
{
	if (tcp_engine_mod(ep->ia->eng, &ep->io,
			   ep->io.events & ~(uint32_t)EPOLLIN))
		return;		/* stay level-triggered on EPOLLIN */
	ep->parked = true;
	tcp_timer_arm(ep->ia->eng, &ep->park, CM_PARK_NS);
}

/* With ep->lock: watch EPOLLIN again.  Level-triggered, so whatever the
 * consumer left in the socket is reported at once: nothing is lost. */
static void ep_unpark(struct tcp_ep *ep)
{
	int ret;

	ep->parked = false;
	ret = tcp_engine_mod(ep->ia->eng, &ep->io, ep->io.events | EPOLLIN);
	if (ret)
		tcp_cm_fail(ep, ret);
}

/**
 * tcp_cm_park - a consumer started to spin on an EVD of @ep: park it
 * @ep: the EP, locked, moving data
 *
 * From then on the engine does not wake for @ep's data until the consumer
 * stops spinning (it looks every CM_PARK_NS); hang-ups still wake it.
 */
void tcp_cm_park(struct tcp_ep *ep)
{
	if (cm_open(ep) && !ep->freeing && !ep->parked &&
	    (ep->io.events & EPOLLIN) && tcp_rx_seasoned(ep))
		ep_park(ep);
}

static void ep_park_check(struct tcp_timer *t)
{
	struct tcp_ep *ep = cm_container_of(t, struct tcp_ep, park);

	pthread_mutex_lock(&ep->lock);
	if (ep->freeing || ep->io.fd < 0 || !ep->parked ||
	    tcp_timer_armed(ep->ia->eng, t))
		goto out;
	if (ep_polled(ep))
		tcp_timer_arm(ep->ia->eng, &ep->park, CM_PARK_NS);
	else
		ep_unpark(ep);
out:
	pthread_mutex_unlock(&ep->lock);
}

static void cm_data_io(struct tcp_ep *ep, uint32_t events)
{
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		tcp_rx_progress(ep);
	/* Data only, and a consumer spins on our EVDs: it will take the
	 * next bytes itself, so do not wake for them. */
	if (events == EPOLLIN && cm_open(ep) && !ep->parked &&
	    tcp_rx_seasoned(ep) && ep_polled(ep))
		ep_park(ep);
	if (cm_open(ep) && (events & EPOLLOUT))
		tcp_tx_progress(ep);
	if (cm_open(ep) && (events & (EPOLLHUP | EPOLLERR)))
		cm_check_hup(ep);
}

static void cm_passive_ready(struct tcp_ep *ep);

static void cm_accepting_io(struct tcp_ep *ep, uint32_t events)
{
	int err;

	if (events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
		err = sock_err(ep->io.fd);
		tcp_cm_fail(ep, err ? -err : RAPT_ENOTCONN);
		return;
	}
	err = cm_send_hs(ep);
	if (err)
		tcp_cm_fail(ep, err);
	else if (!ep->cm->hs)
		cm_passive_ready(ep);
}

static void ep_io(struct tcp_io *io, uint32_t events)
{
	struct tcp_ep *ep = (struct tcp_ep *)io;

	pthread_mutex_lock(&ep->lock);
	/* A late event for a socket closed from another thread. */
	if (ep->io.fd < 0 || ep->freeing)
		goto out;
	switch (ep->state) {
	case TCP_EP_CONNECTING:
		cm_connected(ep, events);
		break;
	case TCP_EP_MPA_REQ_SENT:
		if (ep->cm->hs)
			cm_request_out(ep);
		if (cm_open(ep) && ep->state == TCP_EP_MPA_REQ_SENT &&
		    !ep->cm->hs)
			cm_read_reply(ep, events, 0);
		break;
	case TCP_EP_ACCEPTING:
		cm_accepting_io(ep, events);
		break;
	case TCP_EP_RTR_WAIT:
	case TCP_EP_RTS:
	case TCP_EP_CLOSING:
		cm_data_io(ep, events);
		break;
	default:
		break;
	}
out:
	pthread_mutex_unlock(&ep->lock);
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
		if (poll(&p, 1, 0) == 1 && p.revents == POLLOUT)
			cm_connected(ep, EPOLLOUT);
		return;
	}
	if (ep->state != TCP_EP_MPA_REQ_SENT)
		return;
	if (ep->cm->hs)
		cm_request_out(ep);
	if (cm_open(ep) && ep->state == TCP_EP_MPA_REQ_SENT && !ep->cm->hs)
		cm_read_reply(ep, 0, 0);
}

static void ep_timeout(struct tcp_timer *t)
{
	struct tcp_ep *ep = cm_container_of(t, struct tcp_ep, timer);

	pthread_mutex_lock(&ep->lock);
	/* Re-armed since it expired: this firing is for the old deadline. */
	if (ep->freeing || !cm_open(ep) || tcp_timer_armed(ep->ia->eng, t))
		goto out;
	switch (ep->state) {
	case TCP_EP_CONNECTING:
	case TCP_EP_MPA_REQ_SENT:
		cm_end(ep, true, RAPT_EV_TIMED_OUT, 0, RAPT_ETIMEDOUT, NULL, 0);
		break;
	case TCP_EP_ACCEPTING:
	case TCP_EP_RTR_WAIT:
		cm_end(ep, true, RAPT_EV_ACCEPT_ERROR, 0, RAPT_ETIMEDOUT,
		       NULL, 0);
		break;
	case TCP_EP_CLOSING:
		/* No FIN from the peer in time: give up with an RST. */
		cm_end(ep, true, RAPT_EV_DISCONNECTED, 0, RAPT_ETIMEDOUT,
		       NULL, 0);
		break;
	default:
		break;
	}
out:
	pthread_mutex_unlock(&ep->lock);
}

/* ------------------------------------------------------------------ */
/* EP ops                                                              */
/* ------------------------------------------------------------------ */

/* The distinct EVDs of @ep, for evd_progress. */
static uint32_t ep_evds(struct tcp_ep *ep, struct tcp_evd *evds[3])
{
	struct tcp_evd *all[3] = { ep->recv_evd, ep->req_evd, ep->conn_evd };
	uint32_t i, j, n = 0;

	for (i = 0; i < 3; i++) {
		if (!all[i])
			continue;
		for (j = 0; j < n && evds[j] != all[i]; j++)
			;
		if (j == n)
			evds[n++] = all[i];
	}
	return n;
}

static void ep_detach(struct tcp_ep *ep, uint32_t upto)
{
	struct tcp_evd *evds[3];
	uint32_t i, n = ep_evds(ep, evds);

	for (i = 0; i < n && i < upto; i++)
		tcp_evd_detach(evds[i], ep);
}

static int ep_attach(struct tcp_ep *ep)
{
	struct tcp_evd *evds[3];
	uint32_t i, n = ep_evds(ep, evds);
	int ret;

	for (i = 0; i < n; i++) {
		ret = tcp_evd_attach(evds[i], ep);
		if (ret) {
			ep_detach(ep, i);
			return ret;
		}
	}
	return 0;
}

static struct tcp_ep *ep_alloc(struct tcp_ia *ia, struct rapt_core_ep *cep,
			       struct rapt_ep *handle,
			       const struct rapt_ep_attr *attr)
{
	struct tcp_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return NULL;
	ep->cm = calloc(1, sizeof(*ep->cm));
	if (!ep->cm) {
		free(ep);
		return NULL;
	}
	ep->ia = ia;
	ep->cep = cep;
	ep->handle = handle;
	ep->attr = *attr;
	ep->io.fd = -1;
	ep->io.handler = ep_io;
	tcp_timer_init(&ep->timer, ep_timeout);
	tcp_timer_init(&ep->park, ep_park_check);
	ep->state = TCP_EP_IDLE;
	pthread_mutex_init(&ep->lock, NULL);
	return ep;
}

static void ep_release(void *arg)
{
	struct tcp_ep *ep = arg;

	pthread_mutex_destroy(&ep->lock);
	tcp_cap_close(ep->cap);
	free(ep->cm->hs);
	cm_part_free(&ep->cm->part);
	free(ep->cm);
	free(ep);
}

/**
 * tcp_ep_create - the ep_create op
 *
 * Return: 0, RAPT_ENOMEM, or what tcp_dto_init() returns.
 */
int tcp_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
		  struct rapt_ep *handle, const struct rapt_ep_attr *attr,
		  void *recv_pevd, void *req_pevd, void *conn_pevd, void **pep)
{
	struct tcp_ia *ia = pia;
	struct tcp_ep *ep;
	int ret;

	ep = ep_alloc(ia, cep, handle, attr);
	if (!ep)
		return RAPT_ENOMEM;
	ep->pz = ppz;
	ep->recv_evd = recv_pevd;
	ep->req_evd = req_pevd;
	ep->conn_evd = conn_pevd;
	ret = tcp_dto_init(ep);
	if (ret)
		goto err_free;
	ret = ep_attach(ep);
	if (ret)
		goto err_dto;
	pthread_mutex_lock(&ia->lock);
	ia->nep++;
	pthread_mutex_unlock(&ia->lock);
	*pep = ep;
	return 0;

err_dto:
	tcp_dto_fini(ep);
err_free:
	ep_release(ep);
	return ret;
}

/* The runner, between passes: after this no handler acts on @ep. */
static void ep_teardown(void *arg)
{
	struct tcp_ep *ep = arg;

	pthread_mutex_lock(&ep->lock);
	ep->freeing = true;
	/* Our FIN is out after every byte we sent: let TCP finish that
	 * close (an RST would drop what is still unacknowledged). */
	cm_close(ep, !(ep->state == TCP_EP_CLOSING && ep->cm->wr_shut));
	ep->state = TCP_EP_CLOSED;
	pthread_mutex_unlock(&ep->lock);
}

/**
 * tcp_ep_free - the ep_free op
 *
 * An open connection is reset, unless a graceful disconnect has sent our
 * FIN already: TCP then finishes that close on its own.  No event is
 * reported for @pep any more.
 *
 * Return: 0.
 */
int tcp_ep_free(void *pep)
{
	struct tcp_ep *ep = pep;
	struct tcp_ia *ia = ep->ia;

	ep_detach(ep, 3);
	tcp_engine_call(ia->eng, ep_teardown, ep);
	tcp_dto_fini(ep);
	pthread_mutex_lock(&ia->lock);
	ia->nep--;
	pthread_mutex_unlock(&ia->lock);
	tcp_engine_retire(ia->eng, &ep->retire, &ep->io, ep_release, ep);
	return 0;
}

static int modify_depth(uint32_t want, uint32_t have, const char *what)
{
	if (want == have)
		return 0;
	rapt_prov_set_error("tcp: %s is fixed when the EP is created (%u)",
			    what, have);
	return RAPT_ENOTSUP;
}

/**
 * tcp_ep_modify - the ep_modify op
 *
 * Read depths and flags change; queue depths are fixed at creation.
 * Connected, lowered read depths take effect at once.
 *
 * Return: 0, RAPT_ENOTSUP.
 */
int tcp_ep_modify(void *pep, const struct rapt_ep_attr *attr, uint32_t mask)
{
	struct tcp_ep *ep = pep;
	int ret = 0;

	pthread_mutex_lock(&ep->lock);
	if (mask & RAPT_EP_ATTR_MAX_SEND)
		ret = modify_depth(attr->max_send, ep->attr.max_send,
				   "max_send");
	if (!ret && (mask & RAPT_EP_ATTR_MAX_RECV))
		ret = modify_depth(attr->max_recv, ep->attr.max_recv,
				   "max_recv");
	if (ret)
		goto out;
	if (mask & RAPT_EP_ATTR_RDMA_READ_IN) {
		ep->attr.rdma_read_in = attr->rdma_read_in;
		if (ep->state == TCP_EP_RTS)
			ep->ird = (uint16_t)attr->rdma_read_in;
	}
	if (mask & RAPT_EP_ATTR_RDMA_READ_OUT) {
		ep->attr.rdma_read_out = attr->rdma_read_out;
		if (ep->state == TCP_EP_RTS)
			ep->ord = (uint16_t)attr->rdma_read_out;
	}
	if (mask & RAPT_EP_ATTR_FLAGS)
		ep->attr.flags = attr->flags;
out:
	pthread_mutex_unlock(&ep->lock);
	return ret;
}

/* Start the TCP connect of a locked, idle EP; @hs is the request. */
static void ep_connect_start(struct tcp_ep *ep, int fd,
			     const struct sockaddr_storage *ss,
			     int64_t timeout_us)
{
	int ret;

	ep->io.fd = fd;
	ep->active = true;
	ep->state = TCP_EP_CONNECTING;
	cm_sa_set(&ep->cm->raddr, ss);
	memset(&ep->cm->laddr, 0, sizeof(ep->cm->laddr));
	ep->cap = tcp_cap_open(fd);
	ep->mss_due = true;	/* read once a message needs it (tcp_tx.c) */
	if (connect(fd, (const struct sockaddr *)ss, sa_len(ss->ss_family)) &&
	    errno != EINPROGRESS) {
		/* Refused or unreachable at once: the event says so. */
		cm_connect_failed(ep, errno);
		return;
	}
	/* On a local path TCP is up by now as a rule: the request goes at
	 * once, without a wait for EPOLLOUT; a connect that already failed
	 * fails the send. */
	ret = cm_send_hs(ep);
	if (ret) {
		cm_connect_failed(ep, -ret);
		return;
	}
	if (ep->cm->hs_off)
		ep->state = TCP_EP_MPA_REQ_SENT;
	/* While the peer reads the request: what Nagle's algorithm would
	 * not have delayed anyway (nothing was in flight), our address for
	 * ESTABLISHED, the registration. */
	sock_nodelay(fd);
	cm_sa_local(fd, &ep->cm->laddr);
	ret = tcp_engine_add(ep->ia->eng, &ep->io,
			     CM_EP_EVENTS | (ep->cm->hs ? EPOLLOUT : 0));
	if (ret) {
		cm_end(ep, true, RAPT_EV_NON_PEER_REJECTED,
		       RAPT_REJECT_RESOURCES, ret, NULL, 0);
		return;
	}
	if (timeout_us != RAPT_TIMEOUT_INFINITE &&
	    timeout_us < INT64_MAX / (int64_t)CM_NS_PER_US)
		tcp_timer_arm(ep->ia->eng, &ep->timer,
			      (uint64_t)timeout_us * CM_NS_PER_US);
}

/**
 * tcp_ep_connect - the ep_connect op
 *
 * Starts a non-blocking TCP connect; the MPA request goes out when it
 * completes.  A connect refused or unreachable at once is reported as an
 * event, like one that fails later.
 *
 * Return: 0, RAPT_EINVAL (not IPv4/IPv6), RAPT_ESTATE, RAPT_ENOMEM.
 */
int tcp_ep_connect(void *pep, const struct sockaddr *remote,
		   uint64_t service_id, const void *pdata, size_t pdata_len,
		   int64_t timeout_us)
{
	struct tcp_ep *ep = pep;
	struct sockaddr_storage ss;
	uint8_t *hs;
	int ret, fd;

	ret = sa_copy(remote, (uint16_t)service_id, &ss);
	if (ret)
		return ret;
	hs = malloc(CM_FRAME_MAX);
	if (!hs)
		return RAPT_ENOMEM;
	pthread_mutex_lock(&ep->lock);
	ret = ep->state == TCP_EP_IDLE ? 0 : RAPT_ESTATE;
	if (!ret)
		ret = cm_build_request(ep, pdata, pdata_len, hs);
	if (ret < 0)
		goto err;
	ep->cm->hs = hs;
	ep->cm->hs_len = (uint16_t)ret;
	ep->cm->hs_off = 0;
	fd = cm_socket(ep->ia, &ss);
	if (fd < 0) {
		ret = fd;
		goto err;
	}
	/* The EP owns the socket and the request from here on: whatever
	 * happens next is an event. */
	ep_connect_start(ep, fd, &ss, timeout_us);
	pthread_mutex_unlock(&ep->lock);
	return 0;

err:
	if (ep->cm->hs == hs)
		ep->cm->hs = NULL;
	pthread_mutex_unlock(&ep->lock);
	free(hs);
	return ret;
}

/**
 * tcp_ep_disconnect - the ep_disconnect op
 *
 * Graceful: the send queue drains, then our FIN; DISCONNECTED when the
 * peer's FIN arrives (or CM_FIN_WAIT_MS later, with an RST).  Abrupt, or
 * a connection not yet established: an RST now.  Either way every WR is
 * flushed before DISCONNECTED.
 *
 * Return: 0.
 */
int tcp_ep_disconnect(void *pep, uint32_t flags, const void *pdata,
		      size_t pdata_len)
{
	struct tcp_ep *ep = pep;

	pthread_mutex_lock(&ep->lock);
	if (!cm_open(ep))
		goto out;	/* the outcome is already reported */
	if (ep->state == TCP_EP_RTS && !(flags & RAPT_CLOSE_ABRUPT)) {
		ep->state = TCP_EP_CLOSING;
		if (tcp_tx_idle(ep))
			cm_shutdown(ep);
	} else if (ep->state != TCP_EP_CLOSING ||
		   (flags & RAPT_CLOSE_ABRUPT)) {
		cm_end(ep, true, RAPT_EV_DISCONNECTED, 0, 0, NULL, 0);
	}
out:
	pthread_mutex_unlock(&ep->lock);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Passive side: requests                                              */
/* ------------------------------------------------------------------ */

static void cr_close_free(struct tcp_cr *cr)
{
	struct tcp_psp *psp = cr->psp;

	tcp_timer_cancel(psp->ia->eng, &cr->timer);
	tcp_cap_close(cr->cap);
	cm_part_free(&cr->part);
	tcp_engine_close(psp->ia->eng, &cr->io, false);
	if (cr->prev)
		cr->prev->next = cr->next;
	else
		psp->reqs = cr->next;
	if (cr->next)
		cr->next->prev = cr->prev;
	tcp_engine_retire(psp->ia->eng, &cr->retire, &cr->io, free, cr);
}

/* A request leaves the handshake without becoming a CR. */
static void cr_drop(struct tcp_cr *cr, int outcome)
{
	rapt_prov_psp_hs_end(cr->psp->cpsp, outcome);
	cr_close_free(cr);
}

/* Send a reject reply in the request's own revision, then our FIN. */
static void cr_send_reject(int fd, struct tcp_cap *cap, uint8_t rev,
			   bool enhanced, const void *pdata, size_t len)
{
	struct tcp_mpa_frame f = {
		.type = TCP_MPA_REPLY,
		.rev = rev,
		.reject = true,
		.enhanced = enhanced,
		.pdata_len = (uint16_t)len,
		.pdata = pdata,
	};
	uint8_t buf[CM_FRAME_MAX];

	sock_send_frame(fd, cap, buf, tcp_mpa_build(&f, buf, sizeof(buf)));
	shutdown(fd, SHUT_WR);
}

/* Refuse with one of rapt's own markers (BUSY, PROTOCOL, ...). */
static void cr_send_marker(int fd, struct tcp_cap *cap, uint8_t rev,
			   bool enhanced, uint32_t kind)
{
	uint8_t pd[RAPT_PDATA_HEADER_LEN];
	size_t len = rapt_prov_pdata_frame(kind, NULL, 0, pd);

	cr_send_reject(fd, cap, rev, enhanced, pd, len);
}

/* A request that looked like MPA but was not one we take (M=1, rev 3,
 * oversized pdata): answer R=1, as siw does for M=1, then drop it.
 * Bytes that are not MPA at all get no answer. */
static void cr_bad_request(struct tcp_cr *cr, int err, const uint8_t *buf)
{
	uint8_t rev;
	bool enh;

	tcp_dbg("bad MPA request: %s", tcp_wire_strerror(err));
	/* Past the key check, the parser has seen a whole header. */
	if (err != TCP_WIRE_EKEY) {
		rev = buf[TCP_MPA_KEY_LEN + 1];
		if (rev != TCP_MPA_REV1 && rev != TCP_MPA_REV2)
			rev = TCP_MPA_REV2;
		enh = rev == TCP_MPA_REV2 &&
		      (buf[TCP_MPA_KEY_LEN] & TCP_MPA_FLAG_E);
		cr_send_marker(cr->io.fd, cr->cap, rev, enh,
			       err == TCP_WIRE_EREV ? RAPT_PDATA_VERSION :
						      RAPT_PDATA_PROTOCOL);
	}
	cr_drop(cr, RAPT_HS_FAILED);
}

/* The requester went away before the consumer decided. */
static void cr_cancel(struct tcp_cr *cr)
{
	rapt_prov_cr_cancel(cr->ccr);
	cr_close_free(cr);
}

static void cr_keep(struct tcp_cr *cr, const struct tcp_mpa_frame *f)
{
	cr->rev = f->rev;
	cr->enhanced = f->enhanced;
	cr->crc = f->crc;
	cr->rtr = f->rtr;
	cr->ird = f->ird;
	cr->ord = f->ord;
}

/* Register @cr (edge-triggered): for the rest of its request, or, once
 * it is undecided, for its requester leaving.  Return: 0 or RAPT_E*. */
static int cr_watch(struct tcp_cr *cr)
{
	if (cr->io.registered)
		return 0;
	return tcp_engine_add(cr->psp->ia->eng, &cr->io,
			      EPOLLIN | EPOLLRDHUP | EPOLLET);
}

/* A whole request: hand it to the core as a CR. */
static void cr_arrived(struct tcp_cr *cr, const struct tcp_mpa_frame *f)
{
	struct rapt_core_psp *cpsp = cr->psp->cpsp;
	struct rapt_prov_request req;
	struct rapt_prov_verdict v;
	union cm_sa la;
	int ret;

	tcp_timer_cancel(cr->psp->ia->eng, &cr->timer);
	rapt_prov_psp_hs_end(cpsp, RAPT_HS_DONE);
	cr_keep(cr, f);
	memset(&req, 0, sizeof(req));
	req.pdata = f->pdata;
	req.pdata_len = f->pdata_len;
	req.rdma_read_in = f->enhanced ? f->ird : 0;
	req.rdma_read_out = f->enhanced ? f->ord : 0;
	cm_sa_get(&cr->raddr, &req.remote_addr);
	if (cr->psp->wildcard)
		cm_sa_local(cr->io.fd, &la);
	else
		la = cr->psp->laddr;
	cm_sa_get(&la, &req.local_addr);
	/* A decision runs on this thread: not before we return. */
	ret = rapt_prov_cr_arrive(cpsp, cr, &req, &cr->ccr, &v);
	if (ret) {
		if (ret == RAPT_EBUSY || ret == RAPT_EVERSION)
			cr_send_reject(cr->io.fd, cr->cap, cr->rev,
				       cr->enhanced,
				       v.pdata, v.pdata_len);
		cr_close_free(cr);
		return;
	}
	/* From now on only the requester's departure matters: watched
	 * (cr_io ignores EPOLLIN) unless the consumer decides first. */
	cr->state = CR_UNDECIDED;
	if (!cr->io.registered)
		tcp_timer_arm(cr->psp->ia->eng, &cr->timer, CM_CR_WATCH_NS);
}

static void cr_io(struct tcp_io *io, uint32_t events)
{
	struct tcp_cr *cr = (struct tcp_cr *)io;
	uint8_t buf[CM_READ_MAX];
	struct tcp_mpa_frame f;
	int n;

	if (cr->state == CR_UNDECIDED) {
		if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			cr_cancel(cr);
		return;
	}
	n = cm_read_frame(cr->io.fd, cr->cap, &cr->part, buf,
			  TCP_MPA_REQUEST, &f);
	if (n > 0 && f.type != TCP_MPA_REQUEST)
		n = TCP_WIRE_EKEY;
	if (n > 0)
		cr_arrived(cr, &f);
	else if (wire_err(n))
		cr_bad_request(cr, n, buf);
	else if (n || (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		cr_drop(cr, RAPT_HS_FAILED);	/* closed or reset */
	else if (cr_watch(cr))
		cr_drop(cr, RAPT_HS_FAILED);	/* cannot wait for the rest */
}

static void cr_timeout(struct tcp_timer *t)
{
	struct tcp_cr *cr = cm_container_of(t, struct tcp_cr, timer);

	if (cr->state == CR_UNDECIDED) {
		if (cr_watch(cr))
			tcp_warn("cannot watch a connection request: its "
				 "requester leaving is seen at the decision");
		return;
	}
	tcp_dbg("a request stayed in the MPA handshake too long");
	cr_drop(cr, RAPT_HS_TIMEOUT);
}

/* ------------------------------------------------------------------ */
/* Passive side: the listener                                          */
/* ------------------------------------------------------------------ */

/*
 * Over the handshake limit: refuse before reading anything.  The BUSY
 * reject goes out first so a rapt initiator reports NON_PEER_REJECTED /
 * BUSY; the close then resets if the request had already arrived, which
 * Linux delivers after the reply.
 */
static void psp_refuse(int fd)
{
	cr_send_marker(fd, NULL, TCP_MPA_REV2, true, RAPT_PDATA_BUSY);
	close(fd);
}

static void psp_new_request(struct tcp_psp *psp, int fd,
			    const struct sockaddr_storage *peer)
{
	struct tcp_cr *cr;

	if (rapt_prov_psp_hs_begin(psp->cpsp)) {
		psp_refuse(fd);
		return;
	}
	cr = calloc(1, sizeof(*cr));
	if (!cr)
		goto err;
	cm_sa_set(&cr->raddr, peer);	/* TCP_NODELAY: the listener's */
	cr->io.fd = fd;
	cr->io.handler = cr_io;
	cr->cap = tcp_cap_open(fd);
	cr->psp = psp;
	tcp_timer_init(&cr->timer, cr_timeout);
	cr->next = psp->reqs;
	if (cr->next)
		cr->next->prev = cr;
	psp->reqs = cr;
	tcp_timer_arm(psp->ia->eng, &cr->timer,
		      psp->hs_timeout_ms * CM_NS_PER_MS);
	/* An initiator sends its request as soon as TCP is up, so it is
	 * usually in already: take it now, unregistered (cr_io registers
	 * the request if it has to wait for more of it). */
	cr_io(&cr->io, 0);
	return;

err:
	rapt_prov_psp_hs_end(psp->cpsp, RAPT_HS_FAILED);
	sock_abort(fd);
}

static void psp_resume(struct tcp_timer *t)
{
	struct tcp_psp *psp = cm_container_of(t, struct tcp_psp, timer);

	tcp_engine_mod(psp->ia->eng, &psp->io, EPOLLIN);
}

/* Out of descriptors: stop accepting for a while rather than spin. */
static void psp_pause(struct tcp_psp *psp, int err)
{
	tcp_warn("cannot accept a connection: %s; retrying in %d ms",
		 strerror(err), CM_ACCEPT_RETRY_MS);
	tcp_engine_mod(psp->ia->eng, &psp->io, 0);
	tcp_timer_arm(psp->ia->eng, &psp->timer,
		      CM_ACCEPT_RETRY_MS * CM_NS_PER_MS);
}

/* One connection per event: the registration is level-triggered, so the
 * next pass sees the rest, and a lone connection costs no accept4() that
 * fails with EAGAIN. */
static void psp_io(struct tcp_io *io, uint32_t events)
{
	struct tcp_psp *psp = (struct tcp_psp *)io;
	struct sockaddr_storage peer;
	socklen_t sl;
	int i, fd;

	for (i = 0; i < CM_ACCEPT_BATCH; i++) {
		sl = sizeof(peer);
		fd = accept4(psp->io.fd, (struct sockaddr *)&peer, &sl,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			psp_new_request(psp, fd, &peer);
			return;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM)
			psp_pause(psp, errno);
		else if (errno != EAGAIN && errno != EWOULDBLOCK)
			tcp_err("accept4: %m");
		return;
	}
}

static int psp_listen(const struct sockaddr_storage *addr)
{
	int fd, err, one = 1;

	fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		goto err;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Linux copies it to every accepted socket: no setsockopt each. */
	sock_nodelay(fd);
	if (bind(fd, (const struct sockaddr *)addr, sa_len(addr->ss_family)) ||
	    listen(fd, CM_LISTEN_BACKLOG))
		goto err_close;
	return fd;

err_close:
	err = errno;
	close(fd);
	errno = err;
err:
	err = errno;
	rapt_prov_set_error("tcp: cannot listen on port %u: %s",
			    sa_port(addr), strerror(err));
	if (err != EADDRINUSE)
		tcp_err("cannot listen on port %u: %s", sa_port(addr),
			strerror(err));
	return errno_to_rapt(err);
}

static int psp_addr(struct tcp_ia *ia, const struct rapt_psp_attr *attr,
		    uint64_t service_id, struct sockaddr_storage *ss)
{
	uint16_t port = service_id == RAPT_SERVICE_ID_ANY ? 0 :
			(uint16_t)service_id;

	if (attr && attr->bind_addr.ss_family != AF_UNSPEC)
		return sa_copy((const struct sockaddr *)&attr->bind_addr, port,
			       ss);
	return sa_copy((const struct sockaddr *)&ia->addr, port, ss);
}

/**
 * tcp_psp_create - the psp_create op
 *
 * Listens on the IA's address (or @attr->bind_addr) with the service id
 * as the TCP port; RAPT_SERVICE_ID_ANY lets the kernel pick one.
 *
 * Return: 0, RAPT_EADDRINUSE, RAPT_EACCES, RAPT_EINVAL, RAPT_ENOMEM.
 */
int tcp_psp_create(void *pia, struct rapt_core_psp *cpsp, uint64_t service_id,
		   const struct rapt_psp_attr *attr, void *cr_pevd,
		   uint64_t *bound_id, void **ppsp)
{
	struct tcp_ia *ia = pia;
	struct sockaddr_storage ss;
	struct tcp_psp *psp;
	socklen_t sl = sizeof(ss);
	int ret, fd;

	ret = psp_addr(ia, attr, service_id, &ss);
	if (ret)
		return ret;
	psp = calloc(1, sizeof(*psp));
	if (!psp)
		return RAPT_ENOMEM;
	fd = psp_listen(&ss);
	if (fd < 0) {
		ret = fd;
		goto err_free;
	}
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	cm_sa_set(&psp->laddr, &ss);
	psp->wildcard = cm_sa_wildcard(&ss);
	psp->io.fd = fd;
	psp->io.handler = psp_io;
	psp->ia = ia;
	psp->cpsp = cpsp;
	psp->hs_timeout_ms = rapt_prov_psp_hs_timeout_ms(cpsp);
	tcp_timer_init(&psp->timer, psp_resume);
	ret = tcp_engine_add(ia->eng, &psp->io, EPOLLIN);
	if (ret)
		goto err_close;
	*bound_id = sa_port(&ss);
	*ppsp = psp;
	return 0;

err_close:
	close(fd);
err_free:
	free(psp);
	return ret;
}

static void psp_teardown(void *arg)
{
	struct tcp_psp *psp = arg;

	tcp_timer_cancel(psp->ia->eng, &psp->timer);
	tcp_engine_close(psp->ia->eng, &psp->io, false);
	/* The core frees a PSP only with no undecided CR: what is left is
	 * still in the handshake. */
	while (psp->reqs) {
		if (psp->reqs->state == CR_HANDSHAKE)
			cr_drop(psp->reqs, RAPT_HS_FAILED);
		else
			cr_close_free(psp->reqs);
	}
	tcp_engine_retire(psp->ia->eng, &psp->retire, &psp->io, free, psp);
}

/**
 * tcp_psp_free - the psp_free op
 *
 * Closes the listener and every request still in the handshake, on the
 * engine thread, and waits for that.
 *
 * Return: 0.
 */
int tcp_psp_free(void *ppsp)
{
	struct tcp_psp *psp = ppsp;

	tcp_engine_call(psp->ia->eng, psp_teardown, psp);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Passive side: decisions                                             */
/* ------------------------------------------------------------------ */

struct cr_decision {
	struct rapt_core_cr *ccr;
	struct tcp_ep *ep;	/* accept */
	const void *pdata;
	size_t pdata_len;
	int ret;
};

/* Settle CRC, IRD/ORD and the RTR for a request; the reply's fields. */
static void cm_negotiate_request(struct tcp_ep *ep, const struct tcp_cr *cr,
				 struct tcp_mpa_frame *f)
{
	ep->crc = cr->crc || ep->ia->crc_request;
	ep->mpa_rev1 = cr->rev == TCP_MPA_REV1;
	ep->rtr = 0;
	ep->cm->p2p = false;
	ep->ird = (uint16_t)ep->attr.rdma_read_in;
	ep->ord = (uint16_t)ep->attr.rdma_read_out;
	if (cr->enhanced) {
		ep->ird = min16(ep->ird, cr->ord);
		ep->ord = min16(ep->ord, cr->ird);
	}
	if (cr->enhanced && (cr->rtr & TCP_MPA_P2P)) {
		/* Echo A; Write if offered, else Read; with only B (Send)
		 * offered, propose Write as siw does. */
		ep->cm->p2p = true;
		ep->rtr = (cr->rtr & TCP_MPA_RTR_WRITE) ||
			  !(cr->rtr & TCP_MPA_RTR_READ) ?
			  TCP_MPA_RTR_WRITE : TCP_MPA_RTR_READ;
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
		ret = tcp_engine_mod(ep->ia->eng, &ep->io,
				     EPOLLIN | EPOLLRDHUP);
	if (ret) {
		tcp_cm_fail(ep, ret);
		return;
	}
	if (ep->cm->p2p) {
		ep->state = TCP_EP_RTR_WAIT;
		tcp_timer_arm(ep->ia->eng, &ep->timer,
			      CM_RTR_WAIT_MS * CM_NS_PER_MS);
		tcp_dto_start(ep);
		return;
	}
	/* RFC 5044: the responder sends nothing before an FPDU arrives. */
	ep->state = TCP_EP_RTS;
	ep->sends_held = true;
	tcp_dto_start(ep);
	cm_event(ep, RAPT_EV_ESTABLISHED, 0, 0, NULL, 0, RAPT_CONN_SENDS_HELD);
}

/* With ep->lock: give @cr's socket to @ep and send the reply in @hs. */
static int cm_accept_locked(struct tcp_ep *ep, struct tcp_cr *cr,
			    const struct cr_decision *d, uint8_t **hs)
{
	struct tcp_mpa_frame f;
	int len, ret, send_err;
	uint32_t events;
	bool watched;

	if (ep->state != TCP_EP_IDLE)
		return RAPT_ESTATE;
	cm_negotiate_request(ep, cr, &f);
	f.pdata = d->pdata;
	f.pdata_len = (uint16_t)d->pdata_len;
	len = tcp_mpa_build(&f, *hs, CM_FRAME_MAX);
	if (len < 0)
		return len;
	ep->io.fd = cr->io.fd;	/* the EP's now */
	watched = cr->io.registered;
	ep->cm->raddr = cr->raddr;
	if (cr->psp->wildcard)
		cm_sa_local(ep->io.fd, &ep->cm->laddr);
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
	ep->state = TCP_EP_ACCEPTING;
	/* The reply first, then the registration, off the requester's
	 * wait: as it will stay, or with EPOLLOUT for a reply that did not
	 * fit.  From here on a failure is the EP's ACCEPT_ERROR, not the
	 * op's: the request is consumed either way. */
	send_err = cm_send_hs(ep);
	events = ep->cm->hs ? EPOLLOUT | EPOLLRDHUP : CM_EP_EVENTS;
	ret = watched ? tcp_engine_rebind(ep->ia->eng, &cr->io, &ep->io,
					  events) :
			tcp_engine_add(ep->ia->eng, &ep->io, events);
	cr->io.fd = -1;
	cr_close_free(cr);
	if (ret || send_err)
		tcp_cm_fail(ep, ret ? ret : send_err);
	else if (!ep->cm->hs)
		cm_passive_ready(ep);
	return 0;
}

static void cr_accept_run(void *arg)
{
	struct cr_decision *d = arg;
	struct tcp_cr *cr = rapt_prov_cr_request(d->ccr);
	uint8_t *hs;

	if (!cr || cr->state != CR_UNDECIDED) {
		d->ret = RAPT_ENOTCONN;
		return;
	}
	hs = malloc(CM_FRAME_MAX);
	if (!hs) {
		d->ret = RAPT_ENOMEM;
		return;
	}
	pthread_mutex_lock(&d->ep->lock);
	d->ret = cm_accept_locked(d->ep, cr, d, &hs);
	pthread_mutex_unlock(&d->ep->lock);
	free(hs);
}

/**
 * tcp_cr_accept - the cr_accept op
 *
 * Runs on the engine thread: the request's socket becomes the EP's and
 * the reply goes out; ESTABLISHED follows when the RTR arrives.
 *
 * Return: 0, RAPT_ENOTCONN (the requester went away), RAPT_ESTATE,
 * RAPT_ENOMEM.
 */
int tcp_cr_accept(void *ppsp, struct rapt_core_cr *ccr, void *pep,
		  const void *pdata, size_t pdata_len)
{
	struct tcp_psp *psp = ppsp;
	struct cr_decision d = {
		.ccr = ccr,
		.ep = pep,
		.pdata = pdata,
		.pdata_len = pdata_len,
	};

	if (pdata_len > TCP_MPA_ULP_PD_MAX)
		return RAPT_ELENGTH;
	tcp_engine_call(psp->ia->eng, cr_accept_run, &d);
	return d.ret;
}

static void cr_reject_run(void *arg)
{
	struct cr_decision *d = arg;
	struct tcp_cr *cr = rapt_prov_cr_request(d->ccr);

	if (!cr || cr->state != CR_UNDECIDED) {
		d->ret = RAPT_ENOTCONN;
		return;
	}
	cr_send_reject(cr->io.fd, cr->cap, cr->rev, cr->enhanced, d->pdata,
		       d->pdata_len);
	cr_close_free(cr);
	d->ret = 0;
}

/**
 * tcp_cr_reject - the cr_reject op
 *
 * Sends a reply with R=1 and @pdata, then closes (FIN).
 *
 * Return: 0, RAPT_ENOTCONN (the requester went away).
 */
int tcp_cr_reject(void *ppsp, struct rapt_core_cr *ccr, const void *pdata,
		  size_t pdata_len)
{
	struct tcp_psp *psp = ppsp;
	struct cr_decision d = {
		.ccr = ccr,
		.pdata = pdata,
		.pdata_len = pdata_len,
	};

	if (pdata_len > TCP_MPA_ULP_PD_MAX)
		return RAPT_ELENGTH;
	tcp_engine_call(psp->ia->eng, cr_reject_run, &d);
	return d.ret;
}
