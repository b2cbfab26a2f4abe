/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: connection management, private to its files.
 *
 *   tcp_conn.c       an EP's connection state: the one transition
 *                    function, events, fail/close/end, socket handler
 *   tcp_ep.c         the EP ops
 *   tcp_handshake.c  the MPA exchange, both sides
 *   tcp_listen.c     listeners, requests in the handshake, accounting
 *   tcp_cm.c         request ids and the consumer's decisions
 *   tcp_park.c       parking EPs a consumer busy-polls
 *   tcp_sock.c       addresses and socket helpers
 *
 * Threads.  Every listener and every request still in the handshake or
 * waiting for the consumer's decision lives on the engine thread only; the
 * consumer's cr_accept/cr_reject/psp_free run there through
 * rapt_engine_call().  EPs are shared with consumer threads and guarded by
 * ep->lock; their socket handler (tcp_ep_io) runs on the engine thread.
 */
#ifndef RAPT_PROVIDERS_TCP_TCP_CM_H
#define RAPT_PROVIDERS_TCP_TCP_CM_H

#include "tcp.h"

/* The largest MPA frame we accept: RFC 5044's 512 bytes of pdata (we
 * send at most siw's 256, TCP_MPA_PD_LIMIT). */
#define CM_FRAME_MAX		TCP_MPA_FRAME_MAX

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
#define CM_RTR_REPEAT_NS	200000000ull /* RTR sent: its repeat */
#define CM_RTR_SETTLE_NS	20000000ull /* RTR sent, peer silent: no FIN
					     * or RST before (tcp_conn.c);
					     * RAPT_TCP_RTR_SETTLE_MS */
#define TCP_RTR_SETTLE_MAX_MS	60000u
#define CM_REFUSE_WAIT_MS	200	/* refused: its request due */
#define CM_REJECT_LINGER_MS	1000	/* reject sent: the requester's
					 * close due before ours */

#define CM_NS_PER_MS		1000000ull

#define CM_NS_PER_US		1000ull

#define CM_PARK_NS		1000000ull	/* parked EP: look again */
/* An active socket gets its peer-timeout bound (keepalive, user timeout:
 * four setsockopt()s) once it has lived this long: a tenth of the
 * smallest bound (RAPT_PEER_TIMEOUT_MIN_MS) late at most. */
#define CM_BOUND_DELAY_NS	100000000ull
/* ep->bound_due: nothing owed; the timer runs; due, and left to the
 * consumer spinning on the parked EP (tcp_ep_bound_fire) */
enum { TCP_BOUND_NONE, TCP_BOUND_TIMER, TCP_BOUND_CONSUMER };

#define CM_CR_WATCH_NS		1000000ull	/* undecided CR: registered */

/* The mark of rapt's tcp provider after rapt's framed private data
 * (tcp_handshake.c, tcp_cm_mark_add). */
#define TCP_CM_MARK_LEN		4

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
	CR_REFUSED,		/* over the handshake limit, not counted: BUSY
				 * once its request is in (CM_REFUSE_WAIT_MS) */
	CR_REJECTED,		/* reject reply sent: our close waits for the
				 * requester's (CM_REJECT_LINGER_MS) */
};

/*
 * A connection request: about 150 bytes, no buffer of its own.  A request
 * that arrives whole with the connection is registered with the engine
 * only if the consumer has not decided it CM_CR_WATCH_NS later (to notice
 * the requester leaving): a prompt accept then costs one epoll_ctl, the
 * EP's, made after the reply is out.
 */
struct tcp_cr {
	struct rapt_io io;		/* must stay first */
	struct rapt_retire retire;
	struct rapt_timer timer;		/* handshake timeout */
	struct tcp_psp *psp;
	struct rapt_list node;		/* in psp->reqs */
	struct rapt_core_cr *ccr;
	uint8_t state;			/* enum cr_state */
	/* What the reply needs to know of the request. */
	uint8_t rev;
	bool enhanced;
	bool crc;
	uint8_t rtr;
	uint16_t ird, ord;
	bool peer_tcp;			/* the request bore the mark */
	struct tcp_cap *cap;		/* RAPT_TCP_CAPTURE, or NULL */
	union cm_sa raddr;		/* from accept4() */
	struct cm_part part;		/* the request, if in pieces */
};

struct tcp_psp {
	struct rapt_io io;		/* the listener; must stay first */
	struct rapt_retire retire;
	struct rapt_timer timer;		/* accepting paused: no fds */
	struct tcp_ia *ia;
	struct tcp_evd *cr_evd;		/* its requests' EVD */
	struct rapt_core_psp *cpsp;
	struct rapt_list reqs;		/* its requests (struct tcp_cr) */
	uint32_t hs_timeout_ms;
	uint32_t hs_limit;		/* the core's, for psp_make_room() */
	union cm_sa laddr;		/* the listener's */
	bool wildcard;			/* laddr is no connection's address */
};

struct cr_decision {
	struct rapt_core_cr *ccr;
	struct tcp_ep *ep;	/* accept */
	const void *pdata;
	size_t pdata_len;
	int ret;
};

/* Whether @err is one of the codec's TCP_WIRE_E* codes. */
static inline bool cm_wire_err(int err)
{
	return err <= TCP_WIRE_ETRUNC;
}

/* A socket address as a struct sockaddr, for the toolkit's helpers. */
static inline const struct sockaddr *sa_of(const struct sockaddr_storage *ss)
{
	return (const struct sockaddr *)ss;
}

void tcp_ep_set_state(struct tcp_ep *ep, enum tcp_ep_state state);

/* tcp_sock.c */
int tcp_sa_copy(const struct sockaddr *sa, uint16_t port,
		struct sockaddr_storage *ss);
void tcp_cm_sa_set(union cm_sa *a, const struct sockaddr_storage *ss);
void tcp_cm_sa_get(const union cm_sa *a, struct sockaddr_storage *ss);
void tcp_cm_sa_local(int fd, union cm_sa *a);
int tcp_sock_err(int fd);
void tcp_sock_nodelay(int fd);
void tcp_sock_peer_timeout(int fd, uint32_t ms);
void tcp_sock_abort(int fd);
void tcp_sock_send_frame(int fd, struct tcp_cap *cap, const uint8_t *buf,
			 int len);
void tcp_sock_drain(int fd);
int tcp_cm_socket(struct tcp_ia *ia, const struct sockaddr_storage *dst);

/* tcp_handshake.c */
void tcp_cm_part_free(struct cm_part *part);
int tcp_cm_read_frame(int fd, struct tcp_cap *cap, struct cm_part *part,
		      uint8_t *buf, int type, struct tcp_mpa_frame *f);
int tcp_cm_send_hs(struct tcp_ep *ep);
bool tcp_cm_mark_take(const void *pdata, uint16_t *len);
int tcp_cm_build_request(struct tcp_ep *ep, const void *pdata,
			 size_t len, uint8_t *buf);
void tcp_cm_connect_failed(struct tcp_ep *ep, int err);
void tcp_cm_read_reply(struct tcp_ep *ep, uint32_t events, int send_err);
void tcp_cm_request_out(struct tcp_ep *ep);
void tcp_cm_connected(struct tcp_ep *ep, uint32_t events);
int tcp_cm_accept_locked(struct tcp_ep *ep, struct tcp_cr *cr,
			 const struct cr_decision *d, uint8_t **hs);
void tcp_cm_accepting_io(struct tcp_ep *ep, uint32_t events);

/* tcp_conn.c */
bool tcp_cm_open(const struct tcp_ep *ep);
void tcp_cm_event(struct tcp_ep *ep, uint32_t type, uint32_t reason,
		  int status, const void *pdata, size_t len,
		  uint32_t flags);
void tcp_cm_close(struct tcp_ep *ep, bool abort);
void tcp_cm_end(struct tcp_ep *ep, bool abort, uint32_t type,
		uint32_t reason, int status, const void *pdata, size_t len);
void tcp_cm_shutdown(struct tcp_ep *ep);
void tcp_ep_io(struct rapt_io *io, uint32_t events);
void tcp_ep_timeout(struct rapt_timer *t);
void tcp_cm_nudge_start(struct tcp_ep *ep);
void tcp_cm_close_graceful(struct tcp_ep *ep);


/* tcp_park.c */
void tcp_cm_set_parked(struct tcp_ep *ep, bool parked);
bool tcp_ep_polled(struct tcp_ep *ep);
void tcp_ep_park(struct tcp_ep *ep);
void tcp_ep_park_check(struct rapt_timer *t);
void tcp_ep_bound_fire(struct rapt_timer *t);
void tcp_ep_bound_set(struct tcp_ep *ep);
void tcp_ep_bound_drop(struct tcp_ep *ep);

/* tcp_listen.c */
void tcp_cr_close_free(struct tcp_cr *cr);
void tcp_cr_refuse_request(struct tcp_cr *cr, const void *pdata, size_t len);
void tcp_cr_send_reject(int fd, struct tcp_cap *cap, uint8_t rev,
			bool enhanced, const void *pdata, size_t len);

#endif /* RAPT_PROVIDERS_TCP_TCP_CM_H */
