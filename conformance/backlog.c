/* SPDX-License-Identifier: MIT */
/*
 * Area "backlog": a PSP's two bounds.  Undecided CRs are bounded by the
 * backlog, requests still in the transport handshake by the handshake
 * limit and timeout; a request over either bound is refused by rapt as
 * NON_PEER_REJECTED/BUSY, and the counters of rapt_psp_query say so.
 *
 * A silent half-open client (TCP connected, MPA request never sent) needs
 * help from outside the API: --half-open says how to make one.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf.h"

#define BACKLOG 4

static void t_attr(struct conf_ctx *c)
{
	struct rapt_psp_attr pa = {
		.backlog = 3, .handshake_limit = 5,
		.handshake_timeout_ms = 777,
	};
	struct conf_listener l;
	struct rapt_psp_info pi;

	TRY(conf_listen(c, &l, &pa));
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.backlog, 3);
	EXPECT_EQ(pi.handshake_limit, 5);
	EXPECT_EQ(pi.handshake_timeout_ms, 777);
	EXPECT_EQ(pi.in_handshake, 0);
	EXPECT_EQ(pi.pending_crs, 0);
	EXPECT_RC(rapt_psp_query(l.psp, NULL, sizeof(pi)), RAPT_EINVAL);
	EXPECT_RC(rapt_psp_query(l.psp, &pi, 0), RAPT_EINVAL);
out:
	return;
}

static struct rapt_ep *ep_of(struct rapt_ep *const *eps, unsigned int n,
			     struct rapt_ep *ep, unsigned int *idx)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (eps[i] == ep) {
			*idx = i;
			return ep;
		}
	return NULL;
}

/* EPs 0-3 fill the backlog, 4 is refused BUSY, 0 is rejected, 5 takes its
 * slot, then 1, 2, 3 and 5 are accepted. */
static void fill_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct rapt_ep *ep[BACKLOG + 2];
	struct conf_ep_set s;
	struct rapt_event ev;
	unsigned int i, idx = 0, est = 0;
	uint64_t sid;
	char p[8];

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	for (i = 0; i < BACKLOG + 2; i++)
		TRY(conf_set_ep(c, &s, NULL, &ep[i]));
	for (i = 0; i < BACKLOG; i++) {
		snprintf(p, sizeof(p), "%u", i);
		REQUIRE_OK(rapt_ep_connect(ep[i], (struct sockaddr *)&addr,
					   sid, p, 2,
					   conf_tmo(c, 30000) * 1000LL));
	}
	TRY(conf_barrier(c, "full"));
	REQUIRE_OK(rapt_ep_connect(ep[BACKLOG], (struct sockaddr *)&addr, sid,
				   "4", 2, conf_tmo(c, 30000) * 1000LL));
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_NON_PEER_REJECTED, &ev);
	EXPECT_MSG(ev.u.conn.ep == ep[BACKLOG],
		   "the request over the backlog was not the one refused");
	EXPECT_MSG(ev.u.conn.reason == RAPT_REJECT_BUSY,
		   "over the backlog: reason %s, expected BUSY",
		   conf_reason_name(ev.u.conn.reason));
	TRY(conf_barrier(c, "busy"));
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_PEER_REJECTED, &ev);
	EXPECT(ev.u.conn.ep == ep[0]);
	TRY(conf_barrier(c, "slot-free"));
	REQUIRE_OK(rapt_ep_connect(ep[BACKLOG + 1], (struct sockaddr *)&addr,
				   sid, "5", 2, conf_tmo(c, 30000) * 1000LL));
	for (i = 0; i < BACKLOG; i++) {
		REQUIRE_EVENT(s.conn_evd, RAPT_EV_ESTABLISHED, &ev);
		if (EXPECT(ep_of(ep, BACKLOG + 2, ev.u.conn.ep, &idx)))
			est |= 1u << idx;
	}
	EXPECT_MSG(est == 0x2e, "established EPs %#x, expected 1, 2, 3 and 5",
		   est);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void fill_passive(struct conf_ctx *c)
{
	struct rapt_psp_attr pa = { .backlog = BACKLOG };
	struct rapt_cr *cr[BACKLOG + 2] = { NULL };
	struct conf_listener l;
	struct rapt_psp_info pi;
	struct rapt_cr_info ci;
	struct conf_ep_set s;
	struct rapt_cr *x;
	struct rapt_ep *ep;
	unsigned int i, idx;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, &pa));
	TRY(conf_publish(c, &l));
	for (i = 0; i < BACKLOG; i++) {
		TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &x, &ci));
		REQUIRE(ci.pdata_len == 2 && ci.pdata);
		idx = ((const char *)ci.pdata)[0] - '0';
		REQUIRE(idx < BACKLOG && !cr[idx]);
		cr[idx] = x;
	}
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, BACKLOG);
	EXPECT_EQ(pi.busy_rejects, 0);
	TRY(conf_barrier(c, "full"));
	TRY(conf_barrier(c, "busy"));
	EXPECT_EMPTY(l.cr_evd, 0);
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, BACKLOG);
	EXPECT_EQ(pi.busy_rejects, 1);
	/* Deciding one frees its slot. */
	REQUIRE_OK(rapt_cr_reject(cr[0], NULL, 0));
	conf_untrack(c, cr[0]);
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, BACKLOG - 1);
	EXPECT_EQ(pi.rejected, 1);
	TRY(conf_barrier(c, "slot-free"));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr[BACKLOG + 1],
			&ci));
	EXPECT(ci.pdata_len == 2 && ci.pdata &&
	       ((const char *)ci.pdata)[0] == '5');
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, BACKLOG);
	for (i = 1; i < BACKLOG + 2; i++) {
		if (i == BACKLOG)
			continue;
		TRY(conf_set_ep(c, &s, NULL, &ep));
		REQUIRE_OK(rapt_cr_accept(cr[i], ep, NULL, 0));
		conf_untrack(c, cr[i]);
	}
	for (i = 0; i < BACKLOG; i++)
		REQUIRE_EVENT(s.conn_evd, RAPT_EV_ESTABLISHED, NULL);
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, 0);
	EXPECT_EQ(pi.accepted, BACKLOG);
	EXPECT_EQ(pi.rejected, 1);
	EXPECT_EQ(pi.busy_rejects, 1);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/*
 * A burst over the backlog: five requests at once at a backlog of two.
 * Three are refused BUSY by rapt, at once: none is left to the transport
 * (IB's kernel CM drops a request over its own backlog silently, and the
 * requester times out after its retries).
 */
#define BURST_BACKLOG	2
#define BURST_N		5

static void burst_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct rapt_ep *ep[BURST_N];
	struct conf_ep_set s;
	struct rapt_event ev;
	unsigned int i;
	uint64_t sid;
	char p[4];

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	for (i = 0; i < BURST_N; i++)
		TRY(conf_set_ep(c, &s, NULL, &ep[i]));
	for (i = 0; i < BURST_N; i++) {
		snprintf(p, sizeof(p), "%u", i);
		REQUIRE_OK(rapt_ep_connect(ep[i], (struct sockaddr *)&addr,
					   sid, p, 2,
					   conf_tmo(c, 30000) * 1000LL));
	}
	/* The passive side decides nothing until all three are refused. */
	for (i = 0; i < BURST_N - BURST_BACKLOG; i++) {
		REQUIRE_EVENT(s.conn_evd, RAPT_EV_NON_PEER_REJECTED, &ev);
		EXPECT_MSG(ev.u.conn.reason == RAPT_REJECT_BUSY,
			   "over the backlog: reason %s, expected BUSY",
			   conf_reason_name(ev.u.conn.reason));
	}
	TRY(conf_barrier(c, "busy"));
	for (i = 0; i < BURST_BACKLOG; i++)
		REQUIRE_EVENT(s.conn_evd, RAPT_EV_ESTABLISHED, NULL);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void burst_passive(struct conf_ctx *c)
{
	struct rapt_psp_attr pa = { .backlog = BURST_BACKLOG };
	struct rapt_cr *cr[BURST_BACKLOG];
	struct conf_listener l;
	struct rapt_psp_info pi;
	struct conf_ep_set s;
	struct rapt_ep *ep;
	unsigned int i;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, &pa));
	TRY(conf_publish(c, &l));
	for (i = 0; i < BURST_BACKLOG; i++)
		TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr[i],
				NULL));
	TRY(conf_barrier(c, "busy"));
	EXPECT_EMPTY(l.cr_evd, 0);
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, BURST_BACKLOG);
	EXPECT_EQ(pi.busy_rejects, BURST_N - BURST_BACKLOG);
	for (i = 0; i < BURST_BACKLOG; i++) {
		TRY(conf_set_ep(c, &s, NULL, &ep));
		REQUIRE_OK(rapt_cr_accept(cr[i], ep, NULL, 0));
		conf_untrack(c, cr[i]);
	}
	for (i = 0; i < BURST_BACKLOG; i++)
		REQUIRE_EVENT(s.conn_evd, RAPT_EV_ESTABLISHED, NULL);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* ---- silent half-open clients -------------------------------------- */

static enum conf_half_open ho_mode(struct conf_ctx *c)
{
	if (conf_opt.half_open != CONF_HO_AUTO)
		return conf_opt.half_open;
	return c->attr.transport == RAPT_TRANSPORT_IWARP ? CONF_HO_SOCKET :
	       CONF_HO_NONE;
}

/* Open one silent half-open request on the peer's PSP: a socket fd, or
 * 0 for an EP made with rapt_ep_connect(), or -1 on failure. */
static int ho_open(struct conf_ctx *c, struct conf_ep_set *s,
		   const struct sockaddr_storage *addr, uint64_t sid)
{
	struct sockaddr_storage sa = *addr;
	struct rapt_evd *conn;
	struct rapt_ep *ep;
	socklen_t len;
	int fd;

	if (ho_mode(c) == CONF_HO_CONNECT) {
		/* Its own EVD: whatever becomes of it stays out of the way. */
		if (!EXPECT_OK(conf_evd_create(c, 8, RAPT_EVD_CONNECTION,
					       &conn)) ||
		    !EXPECT_OK(conf_ep_create(c, s->recv_evd, s->req_evd, conn,
					      NULL, &ep)))
			return -1;
		if (!EXPECT_OK(rapt_ep_connect(ep, (struct sockaddr *)
					       &conf_opt.half_open_addr, sid,
					       NULL, 0,
					       conf_tmo(c, 30000) * 1000LL)))
			return -1;
		return 0;
	}
	if (sid > 65535) {
		FAIL("--half-open socket: service id %llu is not a TCP port",
		     (unsigned long long)sid);
		return -1;
	}
	if (sa.ss_family == AF_INET) {
		((struct sockaddr_in *)&sa)->sin_port = htons((uint16_t)sid);
		len = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)&sa)->sin6_port = htons((uint16_t)sid);
		len = sizeof(struct sockaddr_in6);
	}
	fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, len)) {
		FAIL("--half-open socket: cannot open a TCP connection to the PSP's port %llu: %s",
		     (unsigned long long)sid, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The passive side dropped a socket half-open client: it sees the end. */
static void ho_check_dropped(struct conf_ctx *c, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char b[64];
	ssize_t n;

	if (fd <= 0)
		return;
	if (!EXPECT_MSG(poll(&pfd, 1, conf_tmo(c, 5000)) == 1,
			"the half-open socket was not closed by the passive side"))
		return;
	n = recv(fd, b, sizeof(b), 0);
	EXPECT_MSG(n <= 0, "the passive side sent %zd bytes to a silent client",
		   n);
}

static bool wait_psp(struct conf_ctx *c, struct rapt_psp *psp,
		     unsigned int in_hs, uint64_t timeouts, int ms,
		     struct rapt_psp_info *pi)
{
	int64_t end = conf_now_us() + (int64_t)conf_tmo(c, ms) * 1000;

	do {
		if (rapt_psp_query(psp, pi, sizeof(*pi)))
			return false;
		if (pi->in_handshake == in_hs &&
		    pi->handshake_timeouts == timeouts)
			return true;
		conf_sleep_ms(5);
	} while (conf_now_us() < end);
	return false;
}

#define HS_TMO_MS 1500

static void halfopen_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	uint64_t sid;
	int fd = -1;

	if (ho_mode(c) == CONF_HO_NONE) {
		conf_skip(c, "no silent half-open client on this transport (--half-open)");
		return;
	}
	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	if (!(c->peer_caps & RAPT_CAP_HANDSHAKE_LIMIT)) {
		conf_skip(c, "the listening IA does not advertise RAPT_CAP_HANDSHAKE_LIMIT");
		goto out;
	}
	fd = ho_open(c, &s, &addr, sid);
	TRY(fd < 0);
	TRY(conf_barrier(c, "half-open"));
	/* A real request goes through while the silent one sits there. */
	TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
	TRY(conf_barrier(c, "dropped"));
	ho_check_dropped(c, fd);
out:
	if (fd > 0)
		close(fd);
}

static void halfopen_passive(struct conf_ctx *c)
{
	struct rapt_psp_attr pa = {
		.handshake_limit = 8, .handshake_timeout_ms = HS_TMO_MS,
	};
	struct conf_listener l;
	struct rapt_psp_info pi;
	struct conf_ep_set s;
	struct rapt_cr *cr;
	int64_t t0, dt;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, &pa));
	TRY(conf_publish(c, &l));
	TRY(conf_barrier(c, "half-open"));
	REQUIRE_MSG(wait_psp(c, l.psp, 1, 0, 2000, &pi),
		    "the silent client is not counted: in_handshake %u, handshake_timeouts %llu",
		    pi.in_handshake,
		    (unsigned long long)pi.handshake_timeouts);
	t0 = conf_now_us();
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_MSG(pi.in_handshake == 1 && pi.handshake_timeouts == 0,
		   "a real request waited for the silent one (in_handshake %u, timeouts %llu)",
		   pi.in_handshake, (unsigned long long)pi.handshake_timeouts);
	TRY(conf_accept(c, cr, &s, NULL, 0));
	/* The silent one is dropped after the handshake timeout. */
	REQUIRE_MSG(wait_psp(c, l.psp, 0, 1, HS_TMO_MS + 5000, &pi),
		    "the silent client was not dropped: in_handshake %u, handshake_timeouts %llu",
		    pi.in_handshake,
		    (unsigned long long)pi.handshake_timeouts);
	dt = conf_now_us() - t0;
	EXPECT_MSG(dt <= (HS_TMO_MS + 5000) * 1000LL,
		   "dropped after %lld ms", (long long)dt / 1000);
	EXPECT_EQ(pi.busy_rejects, 0);
	EXPECT_EQ(pi.accepted, 1);
	TRY(conf_barrier(c, "dropped"));
out:
	return;
}

/*
 * Two silent clients fill a handshake limit of 2: a prompt request still
 * gets in (the oldest silent client makes room; DESIGN.md 3).  Then, with
 * --half-open socket, two clients that have sent part of a request fill
 * it: those make progress, so the next request is refused BUSY.
 */
static int progress_open(struct conf_ctx *c, const struct sockaddr_storage *a,
			 uint64_t sid)
{
	int fd = ho_open(c, NULL, a, sid);

	if (fd > 0 && !EXPECT_MSG(write(fd, "MPA ID Req", 10) == 10,
				  "cannot send part of a request"))
		return -1;
	return fd;
}

static void hslimit_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_ep *ep2;
	uint64_t sid, progress;
	int fd[4] = { -1, -1, -1, -1 }, i;

	if (ho_mode(c) == CONF_HO_NONE) {
		conf_skip(c, "no silent half-open client on this transport (--half-open)");
		return;
	}
	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_set_ep(c, &s, NULL, &ep2));
	TRY(conf_lookup(c, &addr, &sid));
	if (!(c->peer_caps & RAPT_CAP_HANDSHAKE_LIMIT)) {
		conf_skip(c, "the listening IA does not advertise RAPT_CAP_HANDSHAKE_LIMIT");
		goto out;
	}
	for (i = 0; i < 2; i++) {
		fd[i] = ho_open(c, &s, &addr, sid);
		TRY(fd[i] < 0);
	}
	TRY(conf_barrier(c, "half-open"));
	TRY(conf_barrier(c, "counted"));
	TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
	ho_check_dropped(c, fd[0]);	/* the oldest made room */
	TRY(conf_barrier(c, "made-room"));	/* counted before we go on */
	/* Clients that make progress keep their slots: socket mode only. */
	progress = ho_mode(c) == CONF_HO_SOCKET;
	TRY(conf_send_u64(c, "progress", progress));
	if (!progress)
		goto out;
	for (i = 2; i < 4; i++) {
		fd[i] = progress_open(c, &addr, sid);
		TRY(fd[i] < 0);
	}
	TRY(conf_barrier(c, "progress"));
	REQUIRE_OK(rapt_ep_connect(ep2, (struct sockaddr *)&addr, sid, NULL,
				   0, conf_tmo(c, 30000) * 1000LL));
	REQUIRE(conf_wait(c, s.conn_evd, conf_tmo(c, CONF_TMO_MS), &ev) == 0);
	EXPECT(ev.u.conn.ep == ep2);
	EXPECT_MSG(ev.type == RAPT_EV_NON_PEER_REJECTED &&
		   ev.u.conn.reason == RAPT_REJECT_BUSY,
		   "every slot making progress: %s reason %s, expected NON_PEER_REJECTED/BUSY",
		   rapt_event_name(ev.type), conf_reason_name(ev.u.conn.reason));
	TRY(conf_barrier(c, "busy"));
out:
	for (i = 0; i < 4; i++)
		if (fd[i] > 0)
			close(fd[i]);
}

static void hslimit_passive(struct conf_ctx *c)
{
	struct rapt_psp_attr pa = {
		.handshake_limit = 2, .handshake_timeout_ms = 30000,
	};
	struct conf_listener l;
	struct rapt_psp_info pi;
	struct conf_ep_set s;
	struct rapt_cr *cr;
	uint64_t progress;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, &pa));
	TRY(conf_publish(c, &l));
	TRY(conf_barrier(c, "half-open"));
	REQUIRE_MSG(wait_psp(c, l.psp, 2, 0, 2000, &pi),
		    "2 silent clients: in_handshake %u", pi.in_handshake);
	TRY(conf_barrier(c, "counted"));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	TRY(conf_accept(c, cr, &s, NULL, 0));
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.busy_rejects, 0);
	EXPECT_EQ(pi.in_handshake, 1);	/* the oldest silent one went */
	TRY(conf_barrier(c, "made-room"));
	TRY(conf_recv_u64(c, "progress", &progress));
	if (!progress)
		goto out;
	TRY(conf_barrier(c, "progress"));
	REQUIRE_MSG(wait_psp(c, l.psp, 2, 0, 2000, &pi),
		    "2 clients in progress: in_handshake %u", pi.in_handshake);
	TRY(conf_barrier(c, "busy"));
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.busy_rejects, 1);
	EXPECT_EMPTY(l.cr_evd, 0);
out:
	return;
}

static const struct conf_test backlog_tests[] = {
	{ "psp_attr", "a PSP reports the backlog, handshake limit and timeout it was given",
	  t_attr, NULL },
	{ "fill", "a full backlog refuses BUSY without a CR; deciding a CR frees its slot; counters right",
	  fill_active, fill_passive },
	{ "burst", "five requests at once at a backlog of two: three BUSY at once, none timing out, two accepted",
	  burst_active, burst_passive },
	{ "half_open", "a silent half-open client is counted, blocks no one, and is dropped after the handshake timeout",
	  halfopen_active, halfopen_passive },
	{ "handshake_limit", "silent clients at the handshake limit make room for a prompt request; clients sending their request keep their slots, and the next is BUSY",
	  hslimit_active, hslimit_passive },
};

CONF_SUITE(conf_suite_backlog, "backlog", "PSP backlog and handshake accounting",
	   backlog_tests);
