/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the data path through the public API over 127.0.0.1
 * ("tcp:lo"): two IAs in one process, an active and a passive EP
 * connected to each other, each side with its own EVD.
 *
 * Every transfer checks the bytes that arrive and the bytes around them;
 * every error case checks what both sides report.
 */
#include "config.h"

#include <arpa/inet.h>
#include <linux/sockios.h>	/* SIOCINQ */
#include <linux/tcp.h>	/* struct tcp_info with tcpi_bytes_sent */
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <CUnit/Basic.h>

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <rapt/rapt.h>
#include <rapt/provider_util.h>	/* prov_status: tcp's convention */

#include "tests/pair.h"
#include "tests/scenario.h"

#define MIB	(1u << 20)

/* The next event must be a DTO completion of @op with @status. */
static int dto_wait(struct side *s, uint32_t op, uint32_t status,
		    uint64_t cookie, struct rapt_event *ev)
{
	if (ev_wait(s, RAPT_EV_DTO, ev))
		return -1;
	if (ev->u.dto.op != op || ev->u.dto.status != status ||
	    ev->u.dto.cookie != cookie) {
		fprintf(stderr, "DTO op %u status %u cookie %llu, "
			"want %u %u %llu\n",
			ev->u.dto.op, ev->u.dto.status,
			(unsigned long long)ev->u.dto.cookie, op, status,
			(unsigned long long)cookie);
		return -1;
	}
	T(ev->u.dto.ep == s->ep);
	return 0;
}

/* Nothing more arrives for a while. */
static int quiet(struct side *s)
{
	struct rapt_event ev;

	T(rapt_evd_wait(s->evd, 50000, 1, &ev, NULL) == RAPT_ETIMEDOUT);
	return 0;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed + (i >> 9));
}

/* Everything outside [off, off + n) of @s's region is still 0xcc. */
static int untouched(const struct side *s, size_t off, size_t n)
{
	size_t i;

	for (i = 0; i < s->len + 2 * GUARD; i++)
		if ((i < GUARD + off || i >= GUARD + off + n) &&
		    s->buf[i] != 0xcc) {
			fprintf(stderr, "byte %zd of the region changed\n",
				(ssize_t)i - GUARD);
			return -1;
		}
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------ */
/* Send / receive                                                      */
/* ------------------------------------------------------------------ */

/* One message each way for every size, data checked both ways. */
static int run_pingpong(void)
{
	static const uint32_t sizes[] = { 0, 1, 3, 8, 255, 256, 1000, 1441,
		1442, 4096, 65535, 65536, 65537, 300001, MIB };
	struct rapt_event ev;
	struct conn c;
	unsigned int i;

	if (conn_open(&c, 2 * MIB, 2 * MIB, RAPT_MEM_LOCAL_WRITE, NULL,
		      NULL))
		return -1;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t n = sizes[i];
		struct rapt_sge ga = sge(&c.a, 0, n), gp = sge(&c.p, MIB, MIB);

		fill(c.a.mem, n, i);
		TOK(rapt_ep_post_recv(c.p.ep, &gp, 1, i));
		TOK(rapt_ep_post_send(c.a.ep, &ga, n ? 1 : 0, 100 + i, 0));
		if (dto_wait(&c.a, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 100 + i,
			     &ev) ||
		    dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_SUCCESS, i, &ev))
			return -1;
		T(ev.u.dto.length == n && ev.u.dto.flags == 0);
		T(!memcmp(c.p.mem + MIB, c.a.mem, n));
		/* and back, from the receive buffer itself */
		ga = sge(&c.a, MIB, MIB);
		gp = sge(&c.p, MIB, n);
		TOK(rapt_ep_post_recv(c.a.ep, &ga, 1, 200 + i));
		TOK(rapt_ep_post_send(c.p.ep, &gp, n ? 1 : 0, 300 + i, 0));
		if (dto_wait(&c.p, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 300 + i,
			     &ev) ||
		    dto_wait(&c.a, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 200 + i,
			     &ev))
			return -1;
		T(ev.u.dto.length == n);
		T(!memcmp(c.a.mem + MIB, c.a.mem, n));
	}
	return conn_close(&c);
}

/* Gather from 3 SGEs, scatter into 4 (one of them empty); solicited. */
static int run_multi_sge(void)
{
	struct rapt_sge g[3], s[4];
	uint8_t want[254];
	struct rapt_event ev;
	struct conn c;

	if (conn_open(&c, 4096, 4096, RAPT_MEM_LOCAL_WRITE, NULL, NULL))
		return -1;
	fill(c.a.mem, 4096, 3);
	memset(c.p.mem, 0xcc, 4096);
	g[0] = sge(&c.a, 1, 3);
	g[1] = sge(&c.a, 100, 250);
	g[2] = sge(&c.a, 4095, 1);
	s[0] = sge(&c.p, 0, 1);
	s[1] = sge(&c.p, 10, 100);
	s[2] = sge(&c.p, 500, 0);
	s[3] = sge(&c.p, 600, 300);
	memcpy(want, c.a.mem + 1, 3);
	memcpy(want + 3, c.a.mem + 100, 250);
	want[253] = c.a.mem[4095];
	TOK(rapt_ep_post_recv(c.p.ep, s, 4, 1));
	TOK(rapt_ep_post_send(c.a.ep, g, 3, 2, RAPT_POST_SOLICITED));
	if (dto_wait(&c.a, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 2, &ev) ||
	    dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 1, &ev))
		return -1;
	T(ev.u.dto.length == 254 && ev.u.dto.flags == RAPT_DTO_SOLICITED);
	T(c.p.mem[0] == want[0] && c.p.mem[1] == 0xcc);
	T(!memcmp(c.p.mem + 10, want + 1, 100) && c.p.mem[110] == 0xcc);
	T(c.p.mem[599] == 0xcc && !memcmp(c.p.mem + 600, want + 101, 153));
	T(c.p.mem[753] == 0xcc);
	return conn_close(&c);
}

/* Inline: the buffer is the caller's again when the post returns. */
static int run_inline(void)
{
	struct rapt_ep_attr attr = { .max_inline = 64 };
	uint8_t tmp[64];
	struct rapt_sge g = { (uintptr_t)tmp, sizeof(tmp), 0 }, r;
	struct rapt_event ev;
	struct conn c;
	int i;

	if (conn_open(&c, 4096, 4096, RAPT_MEM_LOCAL_WRITE, &attr, NULL))
		return -1;
	r = sge(&c.p, 0, 4096);
	for (i = 0; i < 10; i++) {
		memset(tmp, 'a' + i, sizeof(tmp));
		TOK(rapt_ep_post_recv(c.p.ep, &r, 1, i));
		TOK(rapt_ep_post_send(c.a.ep, &g, 1, i, RAPT_POST_INLINE));
		memset(tmp, 0, sizeof(tmp));
		if (dto_wait(&c.a, RAPT_OP_SEND, RAPT_DTO_SUCCESS, i, &ev) ||
		    dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_SUCCESS, i, &ev))
			return -1;
		T(ev.u.dto.length == 64);
		T(c.p.mem[0] == 'a' + i && c.p.mem[63] == 'a' + i);
	}
	g.length = 65;
	T(rapt_ep_post_send(c.a.ep, &g, 1, 0, RAPT_POST_INLINE) ==
	  RAPT_ELENGTH);
	return conn_close(&c);
}

/*
 * The lone small send's fast path (tcp_tx.c) and its fall-backs: each
 * round sends a message far larger than the socket buffers, 8 small sends
 * queued behind it (the general path), then, as soon as those complete,
 * 64 small sends in a burst: these find the send queue empty, so they
 * take the fast path while the socket is still full of the large one, and
 * some are taken in part or not at all (EAGAIN); the first sends of the
 * burst wait behind an RDMA read.  Every message must
 * arrive whole, once, in post order, into the receive posted for it, and
 * every send must complete in post order.  With and without CRC.
 */
#define FP_BIG		(256u << 10)
#define FP_QUEUED	8
#define FP_BURST	64
#define FP_MSGS		(1 + FP_QUEUED + FP_BURST)
#define FP_SLOT		256		/* TCP_MAX_INLINE */
#define FP_ROUNDS	12
#define FP_SOCKBUF	4096
#define FP_READ		1000000		/* cookies of the reads */

/* The provider's socket connected to @peer_port on 127.0.0.1 (the
 * active EP's: the passive one's peer is the active one's port). */
static int lo_sock(uint16_t peer_port)
{
	struct sockaddr_in x, y;
	socklen_t l, m;
	int fd;

	for (fd = 3; fd < 4096; fd++) {
		l = m = sizeof(x);
		if (!getsockname(fd, (struct sockaddr *)&x, &l) &&
		    !getpeername(fd, (struct sockaddr *)&y, &m) &&
		    l == sizeof(x) && x.sin_family == AF_INET &&
		    ntohs(y.sin_port) == peer_port)
			return fd;
	}
	return -1;
}

/* The active EP's socket, in *@fd. */
static int act_sock(struct conn *c, int *fd)
{
	struct rapt_psp_info pi;

	TOK(rapt_psp_query(c->psp, &pi, sizeof(pi)));
	*fd = lo_sock((uint16_t)pi.service_id);
	T(*fd >= 0);
	return 0;
}

/* Shrink the active side's send buffer, so the large message keeps it
 * full.  (A receive buffer shrunk after the handshake slows the stream
 * to the kernel's window probes, rapt or not: run_rcvbuf_shrunk.) */
static int fp_shrink(struct conn *c)
{
	int afd, n = FP_SOCKBUF;

	if (act_sock(c, &afd))
		return -1;
	T(!setsockopt(afd, SOL_SOCKET, SO_SNDBUF, &n, sizeof(n)));
	return 0;
}

static uint32_t fp_len(unsigned int r, unsigned int m)
{
	return m ? (r * 7 + m * 37) % (FP_SLOT + 1) : FP_BIG;
}

static size_t fp_off(unsigned int m)
{
	return m ? FP_BIG + (size_t)(m - 1) * FP_SLOT : 0;
}

/* Post message @m of round @r: every third small one inline. */
static int fp_post(struct conn *c, unsigned int r, unsigned int m)
{
	uint32_t n = fp_len(r, m);
	struct rapt_sge g = sge(&c->a, fp_off(m), n);

	fill(c->a.mem + fp_off(m), n, r * FP_MSGS + m);
	TOK(rapt_ep_post_send(c->a.ep, &g, n ? 1 : 0,
			      (uint64_t)r * FP_MSGS + m,
			      m % 3 == 2 ? RAPT_POST_INLINE : 0));
	return 0;
}

/* Nothing landed past a small message in its receive's slot. */
static int fp_untouched(const struct conn *c, unsigned int r)
{
	unsigned int m;
	uint32_t i;

	for (m = 1; m < FP_MSGS; m++)
		for (i = fp_len(r, m); i < FP_SLOT; i++)
			T(c->p.mem[fp_off(m) + i] == 0xcc);
	return 0;
}

static int fp_round(struct conn *c, unsigned int r)
{
	uint64_t base = (uint64_t)r * FP_MSGS;
	struct rapt_ep_status st;
	struct rapt_event ev;
	struct rapt_sge g;
	unsigned int m;

	/* The passive side owns nothing now.  (The last round's Read
	 * Response may have left after its receives completed, and only
	 * the kernel orders its sendmsg() before this memset: asking the
	 * EP, which takes its lock, shows ThreadSanitizer that order.) */
	TOK(rapt_ep_get_status(c->p.ep, &st, sizeof(st)));
	T(st.recv_posted == 0 && st.request_outstanding == 0);
	memset(c->p.mem, 0xcc, c->p.len);
	for (m = 0; m < FP_MSGS; m++) {
		g = sge(&c->p, fp_off(m), m ? FP_SLOT : FP_BIG);
		TOK(rapt_ep_post_recv(c->p.ep, &g, 1, base + m));
	}
	for (m = 0; m <= FP_QUEUED; m++)
		if (fp_post(c, r, m))
			return -1;
	for (m = 0; m <= FP_QUEUED; m++)
		if (dto_wait(&c->a, RAPT_OP_SEND, RAPT_DTO_SUCCESS, base + m,
			     &ev))
			return -1;
	/* A read first: sends posted while it is outstanding complete after
	 * it (they must not take the fast path). */
	g = sge(&c->a, fp_off(FP_MSGS), FP_SLOT);
	TOK(rapt_ep_post_read(c->a.ep, &g, 1, FP_READ + r, c->p.mr.raddr,
			      c->p.mr.rkey, 0));
	for (m = FP_QUEUED + 1; m < FP_MSGS; m++)
		if (fp_post(c, r, m))
			return -1;
	if (dto_wait(&c->a, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, FP_READ + r,
		     &ev))
		return -1;
	for (m = FP_QUEUED + 1; m < FP_MSGS; m++)
		if (dto_wait(&c->a, RAPT_OP_SEND, RAPT_DTO_SUCCESS, base + m,
			     &ev))
			return -1;
	for (m = 0; m < FP_MSGS; m++) {
		if (dto_wait(&c->p, RAPT_OP_RECV, RAPT_DTO_SUCCESS, base + m,
			     &ev))
			return -1;
		T(ev.u.dto.length == fp_len(r, m));
		T(!memcmp(c->p.mem + fp_off(m), c->a.mem + fp_off(m),
			  fp_len(r, m)));
	}
	return fp_untouched(c, r);
}

static int fp_run(bool crc)
{
	struct rapt_ep_attr attr = {
		.max_send = 2 * FP_MSGS, .max_recv = 2 * FP_MSGS,
		.max_inline = FP_SLOT,
	};
	size_t len = fp_off(FP_MSGS) + FP_SLOT;
	struct conn c;
	unsigned int r;
	int ret;

	T(!setenv("RAPT_TCP_CRC", crc ? "1" : "0", 1));
	ret = conn_open(&c, len, len, ACC_ALL, &attr, NULL);
	unsetenv("RAPT_TCP_CRC");
	if (ret || fp_shrink(&c))
		return -1;
	for (r = 0; r < FP_ROUNDS; r++)
		if (fp_round(&c, r))
			return -1;
	if (quiet(&c.a) || quiet(&c.p))
		return -1;
	return conn_close(&c);
}

static int run_fast_send(void)
{
	return fp_run(false);
}

static int run_fast_send_crc(void)
{
	return fp_run(true);
}

/*
 * The fast path's partial write: sendmsg() takes some, not all, of the
 * one FPDU a lone small send makes (tx_fast_defer() with part of the
 * batch written).  Linux does that when the send queue's last segment
 * fills up inside the call and the socket then has no room for another
 * (tcp_sendmsg_locked(): new_segment, sk_stream_memory_free()).  So the
 * active socket gets a small SO_SNDBUF and TCP_CORK, which keeps the
 * last segment unsent and growing; a burst of small sends then fills it
 * to the size goal (about an MSS, 32-64 KiB on lo) post after post, and
 * the post that crosses the goal is written in part.
 *
 * The socket's own count of bytes written (TCP_INFO) around each post
 * that finds the transmit side idle tells the three fast-path outcomes
 * apart: the whole FPDU and the completion at once; nothing (EAGAIN);
 * or a part, with the completion later (counted only when it must be
 * the fast path: every earlier send has completed).  Not every round
 * cuts a post (about every other one did here: 3 cuts took 5 to 11
 * rounds), so rounds run until PW_WANT were seen.  Every message must
 * arrive whole, in order, into its own receive, and every send complete
 * in post order.
 */
#define PW_MSGS		512	/* ~110 KiB of FPDUs: 2 size goals */
#define PW_SLOT		256	/* TCP_MAX_INLINE */
#define PW_WANT		3
#define PW_ROUNDS	200	/* ~30 ms each */

/* Bytes the kernel took from sendmsg() on @fd so far (any base). */
static int sock_written(int fd, uint64_t *n)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	T(!getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len));
	T(len >= offsetof(struct tcp_info, tcpi_bytes_retrans) +
		 sizeof(ti.tcpi_bytes_retrans));
	/* Sent once, plus not sent yet: retransmits count in both. */
	*n = ti.tcpi_bytes_sent - ti.tcpi_bytes_retrans +
	     ti.tcpi_notsent_bytes;
	return 0;
}

/* The FPDU of an @n-byte send: MPA length, DDP/RDMAP header (18),
 * payload, pad to 4, CRC field. */
static uint64_t pw_fpdu(uint32_t n)
{
	return ((2 + 18 + n + 3) & ~3u) + 4;
}

static uint32_t pw_len(unsigned int r, unsigned int m)
{
	return 128 + (r * 13 + m * 37) % (PW_SLOT - 127);
}

/* Take the send completions there are now; all in post order. */
static int pw_reap(struct conn *c, uint64_t base, unsigned int *done)
{
	struct rapt_event ev;

	while (!rapt_evd_dequeue(c->a.evd, &ev)) {
		T(ev.type == RAPT_EV_DTO && ev.u.dto.op == RAPT_OP_SEND &&
		  ev.u.dto.status == RAPT_DTO_SUCCESS);
		T(ev.u.dto.cookie == base + *done);
		(*done)++;
	}
	return 0;
}

/* Post send @m of round @r; count a partial fast-path write. */
static int pw_post(struct conn *c, int fd, unsigned int r, unsigned int m,
		   unsigned int *done, unsigned int *partial)
{
	uint64_t base = (uint64_t)r * PW_MSGS, w0, w1, w2;
	uint32_t n = pw_len(r, m);
	struct rapt_sge g = sge(&c->a, (size_t)m * PW_SLOT, n);
	bool idle = *done == m;

	fill(c->a.mem + (size_t)m * PW_SLOT, n, r * PW_MSGS + m);
	if (sock_written(fd, &w0))
		return -1;
	TOK(rapt_ep_post_send(c->a.ep, &g, 1, base + m,
			      m % 3 == 2 ? RAPT_POST_INLINE : 0));
	if (sock_written(fd, &w1) || pw_reap(c, base, done) ||
	    sock_written(fd, &w2))
		return -1;
	if (!idle)
		return 0;	/* queued behind others: the general path */
	/* The post wrote its FPDU or part of it (the engine thread may
	 * write the rest on EPOLLOUT at any time, even before the reap);
	 * a completion means all of it is in the socket. */
	T(w1 - w0 <= pw_fpdu(n));
	if (*done == m + 1)
		T(w2 - w0 == pw_fpdu(n));
	if (w1 > w0 && w1 - w0 < pw_fpdu(n))
		(*partial)++;
	return 0;
}

static int pw_round(struct conn *c, int fd, unsigned int r,
		    unsigned int *partial)
{
	uint64_t base = (uint64_t)r * PW_MSGS;
	int on = 1, off = 0;
	struct rapt_event ev;
	struct rapt_sge g;
	unsigned int m, done = 0;
	uint32_t i;

	memset(c->p.mem, 0xcc, c->p.len);
	for (m = 0; m < PW_MSGS; m++) {
		g = sge(&c->p, (size_t)m * PW_SLOT, PW_SLOT);
		TOK(rapt_ep_post_recv(c->p.ep, &g, 1, base + m));
	}
	T(!setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)));
	for (m = 0; m < PW_MSGS; m++)
		if (pw_post(c, fd, r, m, &done, partial))
			return -1;
	/* The rest of the last segment goes out. */
	T(!setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off)));
	for (; done < PW_MSGS; done++)
		if (dto_wait(&c->a, RAPT_OP_SEND, RAPT_DTO_SUCCESS,
			     base + done, &ev))
			return -1;
	for (m = 0; m < PW_MSGS; m++) {
		if (dto_wait(&c->p, RAPT_OP_RECV, RAPT_DTO_SUCCESS, base + m,
			     &ev))
			return -1;
		T(ev.u.dto.length == pw_len(r, m));
		T(!memcmp(c->p.mem + (size_t)m * PW_SLOT,
			  c->a.mem + (size_t)m * PW_SLOT, pw_len(r, m)));
		for (i = pw_len(r, m); i < PW_SLOT; i++)
			T(c->p.mem[(size_t)m * PW_SLOT + i] == 0xcc);
	}
	return 0;
}

static int run_fast_partial(void)
{
	struct rapt_ep_attr attr = {
		.max_send = PW_MSGS, .max_recv = PW_MSGS,
		.max_inline = PW_SLOT,
	};
	unsigned int r, partial = 0;
	struct conn c;
	int fd;

	if (conn_open(&c, PW_MSGS * PW_SLOT, PW_MSGS * PW_SLOT,
		      RAPT_MEM_LOCAL_WRITE, &attr, NULL) ||
	    fp_shrink(&c) || act_sock(&c, &fd))
		return -1;
	for (r = 0; r < PW_ROUNDS && partial < PW_WANT; r++)
		if (pw_round(&c, fd, r, &partial))
			return -1;
	fprintf(stderr, "fast path: %u partial writes in %u rounds\n",
		partial, r);
	T(partial >= PW_WANT);
	if (quiet(&c.a) || quiet(&c.p))
		return -1;
	return conn_close(&c);
}

/*
 * A receive buffer shrunk after the handshake (issue: "the general send
 * path stalls for more than 5 s").  The stall is the kernel's, not
 * rapt's: the sender's MSS was bounded by half the largest window the
 * receiver offered before (32 KiB or more on lo), the shrunk buffer
 * now offers about 8 KiB, and Linux sends no segment larger than the
 * window it has (tcp_snd_wnd_test()) except the persist timer's probe
 * (tcp_write_wakeup()), one window per probe interval of at least
 * TCP_RTO_MIN, 200 ms: 40 KiB/s, whoever writes.  docs/tcp-provider.md,
 * 6.3, has the figures; here the same transfer runs over a plain socket
 * pair first, then through rapt, which must deliver every byte in order
 * at that pace and neither stall for good nor lose EPOLLOUT.
 */
#define RB_LEN		(64u << 10)	/* ~0.4 s at probe pace */
#define RB_SMALL	8		/* small sends queued behind it */
#define RB_RCVBUF	4096

/* Plain sockets set up as the provider's are (loopback, TCP_NODELAY, a
 * few bytes each way first, non-blocking transfers): RB_LEN bytes
 * through a receive buffer shrunk after that.  Returns the ms it took,
 * or -1. */
static double rb_plain(void)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	int l, a = -1, p = -1, one = 1, n = RB_RCVBUF;
	size_t sent = 0, got = 0;
	static uint8_t buf[RB_LEN];
	double t0, ms = -1, end;
	ssize_t k;

	memcpy(&sin, lo_addr(), sizeof(sin));
	sin.sin_port = 0;
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(l, 1) || getsockname(l, (struct sockaddr *)&sin, &sl))
		goto out;
	a = socket(AF_INET, SOCK_STREAM, 0);
	if (a < 0 || connect(a, (struct sockaddr *)&sin, sizeof(sin)))
		goto out;
	p = accept(l, NULL, NULL);
	if (p < 0 || setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one,
				sizeof(one)) ||
	    setsockopt(p, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    write(a, "mpa", 3) != 3 || read(p, buf, 3) != 3 ||
	    write(p, "mpa", 3) != 3 || read(a, buf, 3) != 3 ||
	    setsockopt(p, SOL_SOCKET, SO_RCVBUF, &n, sizeof(n)))
		goto out;
	t0 = now_ms();
	end = t0 + EV_US / 1000;
	while (got < RB_LEN && now_ms() < end) {
		struct pollfd pf[2] = {
			{ a, sent < RB_LEN ? POLLOUT : 0, 0 },
			{ p, POLLIN, 0 },
		};

		if (poll(pf, 2, 100) < 0)
			goto out;
		if (pf[0].revents & POLLOUT) {
			k = send(a, buf + sent, RB_LEN - sent, MSG_DONTWAIT);
			sent += k > 0 ? (size_t)k : 0;
		}
		while ((pf[1].revents & POLLIN) &&
		       (k = recv(p, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			got += (size_t)k;
	}
	if (got == RB_LEN)
		ms = now_ms() - t0;
out:
	if (p >= 0)
		close(p);
	if (a >= 0)
		close(a);
	if (l >= 0)
		close(l);
	return ms;
}

/* Message @m: the large one, then 64-byte ones right after it. */
static struct rapt_sge rb_sge(const struct side *s, unsigned int m)
{
	return m ? sge(s, RB_LEN + (m - 1) * 64, 64) : sge(s, 0, RB_LEN);
}

static int run_rcvbuf_shrunk(void)
{
	struct rapt_event ev;
	struct sockaddr_in x;
	socklen_t xl = sizeof(x);
	struct rapt_sge g;
	struct conn c;
	double plain, t0;
	int afd, pfd, n = RB_RCVBUF;
	unsigned int m;

	plain = rb_plain();
	T(plain >= 0);
	if (conn_open(&c, 2 * RB_LEN, 2 * RB_LEN, RAPT_MEM_LOCAL_WRITE, NULL,
		      NULL) || act_sock(&c, &afd))
		return -1;
	/* The passive EP's socket: its peer is the active one's port. */
	T(!getsockname(afd, (struct sockaddr *)&x, &xl));
	pfd = lo_sock(ntohs(x.sin_port));
	T(pfd >= 0);
	T(!setsockopt(pfd, SOL_SOCKET, SO_RCVBUF, &n, sizeof(n)));
	fill(c.a.mem, 2 * RB_LEN, 5);
	for (m = 0; m <= RB_SMALL; m++) {
		g = rb_sge(&c.p, m);
		TOK(rapt_ep_post_recv(c.p.ep, &g, 1, m));
	}
	t0 = now_ms();
	for (m = 0; m <= RB_SMALL; m++) {
		g = rb_sge(&c.a, m);
		TOK(rapt_ep_post_send(c.a.ep, &g, 1, m, 0));
	}
	for (m = 0; m <= RB_SMALL; m++)
		if (dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_SUCCESS, m, &ev))
			return -1;
	fprintf(stderr, "%u KiB through a shrunk SO_RCVBUF: plain sockets "
		"%.0f ms, rapt %.0f ms\n", RB_LEN >> 10, plain,
		now_ms() - t0);
	for (m = 0; m <= RB_SMALL; m++)
		if (dto_wait(&c.a, RAPT_OP_SEND, RAPT_DTO_SUCCESS, m, &ev))
			return -1;
	T(!memcmp(c.p.mem, c.a.mem, RB_LEN + RB_SMALL * 64));
	if (untouched(&c.p, 0, RB_LEN + RB_SMALL * 64))
		return -1;
	return conn_close(&c);
}

/* ------------------------------------------------------------------ */
/* The receive buffer of a connection that carries bulk data            */
/* ------------------------------------------------------------------ */

#define BR_ASK		(1u << 20)	/* RAPT_TCP_RCVBUF for these cases */
#define BR_BIG		65536u		/* bulk (TCP_RCVBUF_BULK: 16 KiB) */
#define BR_SMALL	1024u		/* not */

static int rcvbuf_of(int fd)
{
	socklen_t l = sizeof(int);
	int v = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &l))
		return -1;
	return v;
}

/* What Linux makes of SO_RCVBUF @ask: at most net.core.rmem_max, then
 * doubled (socket(7)). */
static int rcvbuf_made(unsigned int ask)
{
	unsigned long max = ask;
	FILE *f = fopen("/proc/sys/net/core/rmem_max", "r");

	if (f) {
		if (fscanf(f, "%lu", &max) != 1)
			max = ask;
		fclose(f);
	}
	return 2 * (int)(ask < max ? ask : max);
}

/* A send of @n bytes from @from's region at @off into @to's at @off. */
static int br_send(struct side *from, struct side *to, size_t off, size_t n,
		   uint64_t cookie)
{
	struct rapt_sge g = sge(to, off, n);
	struct rapt_event ev;

	TOK(rapt_ep_post_recv(to->ep, &g, 1, cookie));
	g = sge(from, off, n);
	TOK(rapt_ep_post_send(from->ep, &g, 1, cookie, 0));
	if (dto_wait(to, RAPT_OP_RECV, RAPT_DTO_SUCCESS, cookie, &ev) ||
	    dto_wait(from, RAPT_OP_SEND, RAPT_DTO_SUCCESS, cookie, &ev))
		return -1;
	T(!memcmp(to->mem + off, from->mem + off, n));
	return 0;
}

/*
 * tcp_rcvbuf.c: small messages leave both sockets' receive buffers to
 * the kernel; the first bulk placement gives the receiving socket
 * RAPT_TCP_RCVBUF bytes (a Write: the target's, a Read: the requester's).
 * With RAPT_TCP_RCVBUF=0 nothing is ever set.
 */
static int rcvbuf_run(const char *ask)
{
	int afd, pfd, a0, p0, want, ret;
	struct sockaddr_in x;
	socklen_t xl = sizeof(x);
	struct rapt_event ev;
	struct rapt_sge g;
	struct conn c;

	T(!setenv("RAPT_TCP_RCVBUF", ask, 1));
	ret = conn_open(&c, 2 * BR_BIG, 2 * BR_BIG, ACC_ALL, NULL, NULL);
	unsetenv("RAPT_TCP_RCVBUF");
	if (ret || act_sock(&c, &afd))
		return -1;
	T(!getsockname(afd, (struct sockaddr *)&x, &xl));
	pfd = lo_sock(ntohs(x.sin_port));
	T(pfd >= 0);
	want = strcmp(ask, "0") ? rcvbuf_made(BR_ASK) : -1;
	a0 = rcvbuf_of(afd);
	p0 = rcvbuf_of(pfd);
	T(a0 > 0 && p0 > 0 && a0 != want && p0 != want);
	fill(c.a.mem, 2 * BR_BIG, 1);
	fill(c.p.mem, 2 * BR_BIG, 2);
	if (br_send(&c.a, &c.p, 0, BR_SMALL, 1) ||
	    br_send(&c.p, &c.a, 0, BR_SMALL, 2))
		return -1;
	T(rcvbuf_of(afd) == a0 && rcvbuf_of(pfd) == p0);
	/* A Write into the passive side; the Send behind it arrives after
	 * it is placed. */
	g = sge(&c.a, 0, BR_BIG);
	TOK(rapt_ep_post_write(c.a.ep, &g, 1, 3, c.p.mr.raddr, c.p.mr.rkey,
			       0));
	if (dto_wait(&c.a, RAPT_OP_RDMA_WRITE, RAPT_DTO_SUCCESS, 3, &ev) ||
	    br_send(&c.a, &c.p, BR_BIG, BR_SMALL, 4))
		return -1;
	T(!memcmp(c.p.mem, c.a.mem, BR_BIG));
	T(rcvbuf_of(pfd) == (want > 0 ? want : p0));
	T(rcvbuf_of(afd) == a0);
	/* A Read by the active side: the response is its bulk. */
	g = sge(&c.a, BR_BIG, BR_BIG);
	TOK(rapt_ep_post_read(c.a.ep, &g, 1, 5, c.p.mr.raddr, c.p.mr.rkey,
			      0));
	if (dto_wait(&c.a, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, 5, &ev))
		return -1;
	T(!memcmp(c.a.mem + BR_BIG, c.p.mem, BR_BIG));
	T(rcvbuf_of(afd) == (want > 0 ? want : a0));
	if (quiet(&c.a) || quiet(&c.p))
		return -1;
	return conn_close(&c);
}

static int run_rcvbuf_bulk(void)
{
	char ask[16];

	snprintf(ask, sizeof(ask), "%u", BR_ASK);
	return rcvbuf_run(ask);
}

static int run_rcvbuf_off(void)
{
	return rcvbuf_run("0");
}

/* SUPPRESS: no completion for unsignalled sends, order kept. */
static int run_suppress(void)
{
	struct rapt_event ev;
	struct rapt_sge g, r;
	struct conn c;
	int i;

	if (conn_open(&c, 4096, 4096, RAPT_MEM_LOCAL_WRITE, NULL, NULL))
		return -1;
	g = sge(&c.a, 0, 16);
	for (i = 0; i < 50; i++) {
		r = sge(&c.p, (size_t)i * 16, 16);
		TOK(rapt_ep_post_recv(c.p.ep, &r, 1, i));
	}
	for (i = 0; i < 50; i++)
		TOK(rapt_ep_post_send(c.a.ep, &g, 1, i,
				      i % 10 == 9 ? 0 : RAPT_POST_SUPPRESS));
	for (i = 9; i < 50; i += 10)
		if (dto_wait(&c.a, RAPT_OP_SEND, RAPT_DTO_SUCCESS, i, &ev))
			return -1;
	for (i = 0; i < 50; i++)
		if (dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_SUCCESS, i, &ev))
			return -1;
	if (quiet(&c.a))
		return -1;
	return conn_close(&c);
}

/* ------------------------------------------------------------------ */
/* RDMA                                                                */
/* ------------------------------------------------------------------ */

#define RL (3 * 4096 + 13)

/* The window @p (GUARD, @len bytes, GUARD) is still 0xcc outside the
 * @n bytes at @off of its middle part. */
static int window_untouched(const uint8_t *p, size_t len, size_t off,
			    size_t n)
{
	size_t i;

	for (i = 0; i < len + 2 * GUARD; i++)
		if ((i < GUARD + off || i >= GUARD + off + n) &&
		    p[i] != 0xcc) {
			fprintf(stderr, "byte %zd changed\n",
				(ssize_t)i - GUARD);
			return -1;
		}
	return 0;
}

/* Write then read back at every offset class; bytes around untouched.
 * Each case has its own window of the target region, so no byte is
 * reused while the target's engine may still be sending it. */
static int run_rdma_offsets(void)
{
	static const struct { uint32_t off, len; } cases[] = {
		{ 0, 4096 }, { 1, 7 }, { 4095, 2 }, { 4093, 4100 },
		{ 0, RL }, { 13, RL - 13 }, { RL - 1, 1 }, { 5, 0 },
	};
	enum { NC = sizeof(cases) / sizeof(cases[0]) };
	const size_t win = RL + 2 * GUARD;
	struct rapt_event ev;
	struct conn c;
	unsigned int i;

	if (conn_open(&c, 3 * RL + 64, NC * win, ACC_ALL, NULL, NULL))
		return -1;
	for (i = 0; i < NC; i++) {
		uint32_t off = cases[i].off, len = cases[i].len;
		uint8_t *pw = c.p.mem + i * win;	/* window with guards */
		uint8_t *pm = pw + GUARD;
		uint64_t raddr = c.p.mr.raddr + i * win + GUARD + off;
		struct rapt_sge g = sge(&c.a, off, len), s2[2];

		fill(c.a.mem, RL, i);
		TOK(rapt_ep_post_write(c.a.ep, &g, 1, i, raddr, c.p.mr.rkey,
				       0));
		if (dto_wait(&c.a, RAPT_OP_RDMA_WRITE, RAPT_DTO_SUCCESS, i,
			     &ev))
			return -1;
		T(ev.u.dto.length == len);
		/* a read after the write sees it (same connection, in order) */
		memset(c.a.mem, 0, 2 * RL + 32);
		s2[0] = sge(&c.a, 0, len / 3);
		s2[1] = sge(&c.a, RL + 7, len - len / 3);
		TOK(rapt_ep_post_read(c.a.ep, s2, 2, 100 + i, raddr,
				      c.p.mr.rkey, 0));
		if (dto_wait(&c.a, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS,
			     100 + i, &ev))
			return -1;
		T(ev.u.dto.length == len);
		fill(c.a.mem + 2 * RL + 32, RL, i);	/* what was written */
		T(!memcmp(pm + off, c.a.mem + 2 * RL + 32 + off, len));
		T(!memcmp(c.a.mem, pm + off, len / 3));
		T(!memcmp(c.a.mem + RL + 7, pm + off + len / 3,
			  len - len / 3));
		if (window_untouched(pw, RL, off, len) || quiet(&c.p))
			return -1;
	}
	return conn_close(&c);
}

/* 4 MiB writes and reads: many FPDUs, a full socket, suppressed WRs. */
static int run_rdma_big(void)
{
	enum { N = 4 * MIB };
	struct rapt_event ev;
	struct rapt_sge g, r;
	struct conn c;
	int i;

	if (conn_open(&c, 2 * N, N, ACC_ALL, NULL, NULL))
		return -1;
	g = sge(&c.a, 0, N);
	r = sge(&c.a, N, N);
	fill(c.a.mem, N, 5);
	for (i = 0; i < 3; i++)
		TOK(rapt_ep_post_write(c.a.ep, &g, 1, i, c.p.mr.raddr,
				       c.p.mr.rkey,
				       i < 2 ? RAPT_POST_SUPPRESS : 0));
	TOK(rapt_ep_post_read(c.a.ep, &r, 1, 9, c.p.mr.raddr, c.p.mr.rkey,
			      0));
	if (dto_wait(&c.a, RAPT_OP_RDMA_WRITE, RAPT_DTO_SUCCESS, 2, &ev) ||
	    dto_wait(&c.a, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, 9, &ev))
		return -1;
	T(ev.u.dto.length == N);
	T(!memcmp(c.a.mem, c.p.mem, N));
	T(!memcmp(c.a.mem + N, c.p.mem, N));
	return conn_close(&c);
}

/*
 * Large RDMA Writes streamed back to back cork the active socket
 * (tcp_cork.c): the second 64 KiB write in a row turns TCP_CORK on, so
 * that each write's 40-byte tail waits for the next write instead of
 * leaving as a segment of its own.  What uncorks it, each checked on the
 * socket itself (TCP_CORK as the kernel reports it): the consumer's poll
 * that finds nothing (taking completions that are queued is no such
 * poll), a small send, and, for a consumer that makes no call at all, the
 * provider's timer.  A lone large write is never corked.  Every time,
 * every byte must reach the peer, placed by its engine thread.
 */
#define CK_LEN		65536u
#define CK_MAX		4

static int ck_corked(int fd, int *on)
{
	socklen_t l = sizeof(*on);

	T(!getsockopt(fd, IPPROTO_TCP, TCP_CORK, on, &l));
	return 0;
}

/* Post @n writes of CK_LEN, seeded @seed, to the peer's first slots. */
static int ck_post(struct conn *c, unsigned int n, unsigned int seed)
{
	struct rapt_sge g;
	unsigned int i;

	/* Filled first: the posts follow each other at once, well within
	 * the cork timer's millisecond even in a sanitizer build. */
	for (i = 0; i < n; i++)
		fill(c->a.mem + (size_t)i * CK_LEN, CK_LEN, seed + i);
	for (i = 0; i < n; i++) {
		g = sge(&c->a, (size_t)i * CK_LEN, CK_LEN);
		TOK(rapt_ep_post_write(c->a.ep, &g, 1, seed + i,
				       c->p.mr.raddr + (size_t)i * CK_LEN,
				       c->p.mr.rkey, 0));
	}
	return 0;
}

/* From a poll that finds nothing (no streak), post @n writes; TCP_CORK
 * must then be @want. */
static int ck_stream(struct conn *c, int fd, unsigned int n,
		     unsigned int seed, int want)
{
	struct rapt_event ev;
	int on;

	T(rapt_evd_dequeue(c->a.evd, &ev) == RAPT_EAGAIN);
	if (ck_post(c, n, seed) || ck_corked(fd, &on))
		return -1;
	T(on == want);
	return 0;
}

/* Take @n write completions that are queued already: no empty poll. */
static int ck_take(struct conn *c, unsigned int n, unsigned int seed)
{
	struct rapt_event ev;
	unsigned int i;

	for (i = 0; i < n; i++) {
		TOK(rapt_evd_dequeue(c->a.evd, &ev));
		T(ev.type == RAPT_EV_DTO && ev.u.dto.op == RAPT_OP_RDMA_WRITE &&
		  ev.u.dto.status == RAPT_DTO_SUCCESS &&
		  ev.u.dto.cookie == seed + i);
	}
	return 0;
}

/* The peer has the @n writes: a send behind them arrives after they are
 * placed (the receive completion orders this thread after the peer's
 * placement, so the bytes may be compared). */
static int ck_arrived(struct conn *c, unsigned int n, uint64_t cookie)
{
	struct rapt_event ev;
	struct rapt_sge g;

	g = sge(&c->p, CK_MAX * CK_LEN, 64);
	TOK(rapt_ep_post_recv(c->p.ep, &g, 1, cookie));
	g = sge(&c->a, CK_MAX * CK_LEN, 8);
	TOK(rapt_ep_post_send(c->a.ep, &g, 1, cookie, 0));
	if (dto_wait(&c->p, RAPT_OP_RECV, RAPT_DTO_SUCCESS, cookie, &ev) ||
	    dto_wait(&c->a, RAPT_OP_SEND, RAPT_DTO_SUCCESS, cookie, &ev))
		return -1;
	T(!memcmp(c->p.mem, c->a.mem, (size_t)n * CK_LEN));
	return 0;
}

static int run_cork(void)
{
	struct timespec ms = { 0, 1000000 };
	struct rapt_event ev;
	struct rapt_sge g;
	unsigned int seed = 10;
	struct conn c;
	double end;
	int fd, on, sndbuf;
	socklen_t l = sizeof(sndbuf);

	if (conn_open(&c, CK_MAX * CK_LEN + 64, CK_MAX * CK_LEN + 64,
		      ACC_ALL, NULL, NULL) ||
	    act_sock(&c, &fd))
		return -1;
	/* The writes must fit the socket at once (an EAGAIN leaves the
	 * rest to EPOLLOUT, and the engine's write uncorks): the kernel
	 * sizes a loopback socket's buffer to about 20 of its segments. */
	T(!getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &l));
	T((size_t)sndbuf >= 2 * CK_MAX * (CK_LEN + 64));

	/* A lone large write: not corked. */
	if (ck_stream(&c, fd, 1, seed, 0) || ck_take(&c, 1, seed) ||
	    ck_arrived(&c, 1, 1))
		return -1;

	/* Streamed: corked, still corked while queued completions are
	 * taken, uncorked by the poll that finds nothing. */
	seed += CK_MAX;
	if (ck_stream(&c, fd, CK_MAX, seed, 1) ||
	    ck_take(&c, CK_MAX, seed) || ck_corked(fd, &on))
		return -1;
	T(on);
	T(rapt_evd_dequeue(c.a.evd, &ev) == RAPT_EAGAIN);
	if (ck_corked(fd, &on))
		return -1;
	T(!on);
	if (ck_arrived(&c, CK_MAX, 2))
		return -1;

	/* A small send goes at once, the corked tail in front of it. */
	seed += CK_MAX;
	g = sge(&c.p, CK_MAX * CK_LEN, 64);
	TOK(rapt_ep_post_recv(c.p.ep, &g, 1, 77));
	if (ck_stream(&c, fd, 2, seed, 1))
		return -1;
	g = sge(&c.a, CK_MAX * CK_LEN, 8);
	TOK(rapt_ep_post_send(c.a.ep, &g, 1, 78, 0));
	if (ck_corked(fd, &on))
		return -1;
	T(!on);
	if (dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 77, &ev))
		return -1;
	T(!memcmp(c.p.mem, c.a.mem, 2 * CK_LEN));	/* writes first */
	if (ck_take(&c, 2, seed) ||
	    dto_wait(&c.a, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 78, &ev))
		return -1;

	/* A consumer that makes no call after its writes: the timer
	 * uncorks (the kernel never clears the option itself). */
	seed += CK_MAX;
	if (ck_stream(&c, fd, CK_MAX, seed, 1))
		return -1;
	end = now_ms() + EV_US / 1000.0;
	while (!ck_corked(fd, &on) && on) {
		T(now_ms() < end);
		nanosleep(&ms, NULL);
	}
	if (ck_take(&c, CK_MAX, seed) || ck_arrived(&c, CK_MAX, 3))
		return -1;
	if (quiet(&c.a) || quiet(&c.p))
		return -1;
	return conn_close(&c);
}

/*
 * A stream of reads.  A read posted while two or more are on the wire
 * waits for the EP's next receive pass (tcp_tx.c, read_may_wait()): that
 * pass writes its request, whether it completes an earlier read or only
 * reads part of a response, or nothing.  Each round posts two large reads
 * (their responses take milliseconds) and a small one, which must wait;
 * the next receive pass must then write it (the consumer's poll, or the
 * engine thread's pass when that thread holds the EP), while neither
 * large read is done (were one done, its completion would have written
 * it: the round proves nothing and another runs).  Then the consumer only
 * sleeps in rapt_evd_wait(), and every read must complete, in order, with
 * its bytes.  Without the wait every post writes its own request (the
 * window is below any ORD), and without the receive pass's write the
 * small request waits for the first large read to complete.
 */
#define RS_BIG		(8u * MIB)
#define RS_SMALL	65536u
#define RS_LEN		(2 * RS_BIG + RS_SMALL)
#define RS_ROUNDS	50

static int rs_post(struct conn *c, uint64_t cookie, size_t off, uint32_t n)
{
	struct rapt_sge g = sge(&c->a, off, n);

	TOK(rapt_ep_post_read(c->a.ep, &g, 1, cookie, c->p.mr.raddr + off,
			      c->p.mr.rkey, 0));
	return 0;
}

/* One round; *@proved when the small read waited and a receive pass wrote
 * it before either large read was done. */
static int rs_round(struct conn *c, int fd, unsigned int r, bool *proved)
{
	uint64_t base = (uint64_t)r * 3, w0, w1, w2, w3;
	struct rapt_ep_status st;
	struct rapt_event ev;
	int e = RAPT_EAGAIN;

	/* The responder's engine thread sent the last round's responses
	 * from this memory under its EP's lock; taking that lock orders
	 * them before the refill for ThreadSanitizer, which cannot see the
	 * order through the two sockets (the reads completed). */
	TOK(rapt_ep_get_status(c->p.ep, &st, sizeof(st)));
	memset(c->a.mem, 0xcc, RS_LEN);
	fill(c->p.mem, RS_LEN, r);
	if (sock_written(fd, &w0) || rs_post(c, base, 0, RS_BIG) ||
	    rs_post(c, base + 1, RS_BIG, RS_BIG) || sock_written(fd, &w1) ||
	    rs_post(c, base + 2, 2 * RS_BIG, RS_SMALL) ||
	    sock_written(fd, &w2))
		return -1;
	T(w1 > w0);		/* the first two go at once */
	w3 = w2;
	if (w2 == w1) {
		/* Receive passes until the small request is out or a large
		 * read is done.  Each poll runs one, unless the engine thread
		 * holds the EP: then that thread's pass writes it.  A large
		 * read's completion is queued before what it writes, so the
		 * poll after the write tells whether one came first. */
		while (e == RAPT_EAGAIN && w3 == w2) {
			e = rapt_evd_dequeue(c->a.evd, &ev);
			if (sock_written(fd, &w3))
				return -1;
		}
		if (e == RAPT_EAGAIN) {
			e = rapt_evd_dequeue(c->a.evd, &ev);
			*proved = e == RAPT_EAGAIN;
		}
		T(e == 0 || e == RAPT_EAGAIN);
	}
	if (!e) {	/* a large read done: the first, in order */
		T(ev.type == RAPT_EV_DTO && ev.u.dto.cookie == base &&
		  ev.u.dto.status == RAPT_DTO_SUCCESS);
	} else if (dto_wait(&c->a, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, base,
			    &ev)) {
		return -1;
	}
	if (dto_wait(&c->a, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, base + 1,
		     &ev) ||
	    dto_wait(&c->a, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, base + 2,
		     &ev))
		return -1;
	T(ev.u.dto.length == RS_SMALL);
	T(!memcmp(c->a.mem, c->p.mem, RS_LEN));
	return 0;
}

static int run_read_stream(void)
{
	struct rapt_ep_info info;
	bool proved = false;
	struct conn c;
	unsigned int r;
	int fd;

	if (conn_open(&c, RS_LEN, RS_LEN, ACC_ALL, NULL, NULL) ||
	    act_sock(&c, &fd))
		return -1;
	TOK(rapt_ep_query(c.a.ep, &info, sizeof(info)));
	T(info.rdma_read_out >= 3);
	for (r = 0; r < RS_ROUNDS && !proved; r++)
		if (rs_round(&c, fd, r, &proved))
			return -1;
	fprintf(stderr, "read stream: proved in round %u of %u\n", r,
		RS_ROUNDS);
	T(proved);
	if (quiet(&c.a) || quiet(&c.p))
		return -1;
	return conn_close(&c);
}

/*
 * Read Responses never cork the socket (tcp_tx.c): the requester's read
 * completes only with the last byte of its response, and its next
 * request waits for that.  A responder whose consumer spins on its EVD
 * writes them from that thread, batch after batch while the peer streams
 * reads, which is what corks a stream of large writes (run_cork); its
 * socket must stay uncorked, and every read must get its bytes.
 */
#define RC_LEN		65536u
#define RC_WIN		8
#define RC_READS	2048

struct rc_reader {
	struct conn *c;
	atomic_bool done;
	int ret;
};

/* The active side: RC_READS reads, RC_WIN outstanding, blocking waits. */
static int rc_read_all(struct conn *c)
{
	struct rapt_event ev;
	struct rapt_sge g;
	uint64_t next = 0, done = 0;
	unsigned int slot;

	while (done < RC_READS) {
		while (next < RC_READS && next - done < RC_WIN) {
			slot = (unsigned int)(next % RC_WIN);
			g = sge(&c->a, (size_t)slot * RC_LEN, RC_LEN);
			TOK(rapt_ep_post_read(c->a.ep, &g, 1, next,
					      c->p.mr.raddr +
					      (size_t)slot * RC_LEN,
					      c->p.mr.rkey, 0));
			next++;
		}
		if (dto_wait(&c->a, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, done,
			     &ev))
			return -1;
		slot = (unsigned int)(done % RC_WIN);
		T(!memcmp(c->a.mem + (size_t)slot * RC_LEN,
			  c->p.mem + (size_t)slot * RC_LEN, RC_LEN));
		memset(c->a.mem + (size_t)slot * RC_LEN, 0xcc, RC_LEN);
		done++;
	}
	return 0;
}

static void *rc_reader_main(void *arg)
{
	struct rc_reader *r = arg;

	r->ret = rc_read_all(r->c);
	atomic_store(&r->done, true);
	return NULL;
}

static int run_rresp_uncorked(void)
{
	struct rc_reader rd;
	struct rapt_event ev;
	struct sockaddr_in sin;
	socklen_t l = sizeof(sin);
	unsigned int i, corked = 0;
	uint64_t polls = 0;
	struct conn c;
	pthread_t t;
	int afd, pfd, on, ret;

	if (conn_open(&c, RC_WIN * RC_LEN, RC_WIN * RC_LEN, ACC_ALL, NULL,
		      NULL) ||
	    act_sock(&c, &afd))
		return -1;
	T(!getsockname(afd, (struct sockaddr *)&sin, &l));
	pfd = lo_sock(ntohs(sin.sin_port));
	T(pfd >= 0);
	for (i = 0; i < RC_WIN; i++)
		fill(c.p.mem + (size_t)i * RC_LEN, RC_LEN, 500 + i);
	rd.c = &c;
	rd.ret = -1;
	atomic_init(&rd.done, false);
	T(!pthread_create(&t, NULL, rc_reader_main, &rd));
	/* The responder's consumer spins: its EP is parked, and the Read
	 * Requests are answered from this thread. */
	while (!atomic_load(&rd.done)) {
		ret = rapt_evd_dequeue(c.p.evd, &ev);
		if (ret != RAPT_EAGAIN) {
			fprintf(stderr, "responder: unexpected %d, event "
				"%#x\n", ret, ev.type);
			corked = UINT32_MAX;
			break;
		}
		polls++;
		if (ck_corked(pfd, &on))
			on = -1;
		if (on)
			corked++;
	}
	T(!pthread_join(t, NULL));
	fprintf(stderr, "responder: %llu polls, socket corked after %u\n",
		(unsigned long long)polls, corked);
	T(rd.ret == 0);
	T(corked == 0);
	if (quiet(&c.a) || quiet(&c.p))
		return -1;
	return conn_close(&c);
}

/*
 * An EP whose socket had nothing for a long time is looked at only now
 * and then, for the sake of an active EP on the same EVD (tcp_prov.c).
 * A consumer whose EPs are all quiet waits for whichever speaks first:
 * the first poll after the data is in the socket must find it, not up
 * to 31 polls later (each an engine pass instead of a recv()).
 */
#define IDLE_POLLS	300	/* well past the provider's 200 */
#define IDLE_ROUNDS	8	/* parked (polled, not woken for) from the
				 * 4th: found 21-27 polls late before */
/* Polls that may miss the bytes while they still sit in the socket: the
 * engine thread may be at the socket itself (the EP was handed back to
 * it while the consumer did not poll, on a loaded machine), and a poll
 * skips an EP that another thread holds.  On a busy machine the engine
 * thread can lose its CPU there, for more polls than that: one round
 * may miss more.  The fault this guards against missed 21-27 in every
 * parked round. */
#define IDLE_MISSES_MAX	3
#define IDLE_BAD_ROUNDS	1

static int idle_round(struct conn *c, int fd, unsigned int r,
		      unsigned int *bad)
{
	struct rapt_event ev;
	struct rapt_sge g;
	int i, ret, misses = 0, inq = 0;
	double end;

	g = sge(&c->a, 0, 64);
	TOK(rapt_ep_post_recv(c->a.ep, &g, 1, r));
	for (i = 0; i < IDLE_POLLS; i++)
		T(rapt_evd_dequeue(c->a.evd, &ev) == RAPT_EAGAIN);
	fill(c->p.mem, 8, r);
	g = sge(&c->p, 0, 8);
	TOK(rapt_ep_post_send(c->p.ep, &g, 1, r, 0));
	/* The bytes are in our socket (no rapt call meanwhile), or the
	 * engine thread has read them already: the EP is not parked while
	 * it is new (the first rounds) or once the consumer stops polling
	 * for a while (a loaded machine), and then the event is queued. */
	end = now_ms() + 2000;
	while (!ioctl(fd, SIOCINQ, &inq) && inq <= 0 && now_ms() < end)
		sched_yield();
	/* The first poll finds them.  A miss while they are still in the
	 * socket is the fault this guards against (each a skipped look at
	 * a quiet EP); one while the engine thread reads them is not. */
	while ((ret = rapt_evd_dequeue(c->a.evd, &ev)) == RAPT_EAGAIN &&
	       now_ms() < end + 2000)
		if (!ioctl(fd, SIOCINQ, &inq) && inq > 0)
			misses++;
	TOK(ret);
	if (misses)
		printf("round %u: %d poll(s) missed the bytes in the socket ",
		       r, misses);
	*bad += misses > IDLE_MISSES_MAX;
	T(*bad <= IDLE_BAD_ROUNDS);
	T(ev.type == RAPT_EV_DTO && ev.u.dto.op == RAPT_OP_RECV &&
	  ev.u.dto.status == RAPT_DTO_SUCCESS && ev.u.dto.cookie == r &&
	  ev.u.dto.length == 8);
	T(!memcmp(c->a.mem, c->p.mem, 8));
	return dto_wait(&c->p, RAPT_OP_SEND, RAPT_DTO_SUCCESS, r, &ev);
}

static int run_idle_found(void)
{
	struct conn c;
	struct rapt_event ev;
	struct rapt_sge g;
	unsigned int r, bad = 0;
	int fd;

	if (conn_open(&c, 64, 64, ACC_ALL, NULL, NULL) || act_sock(&c, &fd))
		return -1;
	/* One message first: the active side has then read as much as it
	 * had with the Read RTR's response (two tcp providers now agree on
	 * the Write RTR, which has none), so it is parked from the 4th
	 * round.  Before that the engine thread also watches its socket and
	 * may be reading the round's bytes when the consumer looks. */
	g = sge(&c.a, 0, 64);
	TOK(rapt_ep_post_recv(c.a.ep, &g, 1, 0));
	g = sge(&c.p, 0, 8);
	TOK(rapt_ep_post_send(c.p.ep, &g, 1, 0, 0));
	T(!dto_wait(&c.a, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0, &ev));
	T(!dto_wait(&c.p, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 0, &ev));
	for (r = 1; r <= IDLE_ROUNDS; r++)
		if (idle_round(&c, fd, r, &bad))
			return -1;
	if (quiet(&c.a) || quiet(&c.p))
		return -1;
	return conn_close(&c);
}

/* FENCE: a send after reads is not started before they complete. */
static int run_fence(void)
{
	struct rapt_event ev;
	struct rapt_sge g, r;
	struct conn c;
	int i;

	if (conn_open(&c, 8 * 65536, 65536, ACC_ALL, NULL, NULL))
		return -1;
	fill(c.p.mem, 65536, 1);
	r = sge(&c.p, 0, 64);
	TOK(rapt_ep_post_recv(c.p.ep, &r, 1, 50));
	for (i = 0; i < 6; i++) {
		g = sge(&c.a, (size_t)i * 65536, 65536 - (size_t)i);
		TOK(rapt_ep_post_read(c.a.ep, &g, 1, i, c.p.mr.raddr + i,
				      c.p.mr.rkey, 0));
	}
	TOK(rapt_ep_post_send(c.a.ep, NULL, 0, 10, RAPT_POST_FENCE));
	for (i = 0; i < 6; i++) {
		if (dto_wait(&c.a, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, i,
			     &ev))
			return -1;
		T(!memcmp(c.a.mem + (size_t)i * 65536, c.p.mem + i,
			  65536 - (size_t)i));
	}
	if (dto_wait(&c.a, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 10, &ev) ||
	    dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 50, &ev))
		return -1;
	return conn_close(&c);
}

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

enum { BAD_RKEY, BAD_PAST_END, BAD_BEFORE, BAD_RIGHTS, BAD_PZ };

/* A second PZ of @s's IA, and @s's region registered in it again with
 * every right: its rkey and raddr are good, only not for an EP of @s->pz. */
struct other_pz {
	struct rapt_pz *pz;
	struct rapt_lmr *lmr;
	struct rapt_lmr_info mr;
};

static int other_pz_open(struct side *s, struct other_pz *o)
{
	TOK(rapt_pz_create(s->ia, &o->pz));
	TOK(rapt_lmr_create(o->pz, s->mem, s->len, ACC_ALL, &o->lmr, &o->mr));
	return 0;
}

static int other_pz_close(struct other_pz *o)
{
	TOK(rapt_lmr_free(o->lmr));
	TOK(rapt_pz_free(o->pz));
	return 0;
}

/*
 * The BROKEN that a Terminate for a remote access violation ends with:
 * its prov_status names the Terminate (RDMAP protection or DDP tagged
 * buffer), @received by the initiator, sent by the target.
 */
static int term_check(const struct rapt_event *ev, bool received)
{
	uint32_t v = (uint32_t)ev->u.conn.prov_status;
	uint32_t layer = v >> 12 & 0xf, etype = v >> 8 & 0xf;
	char text[RAPT_PROV_STATUS_STRLEN];

	rapt_prov_status_str(ev->u.conn.prov_status, text, sizeof(text));
	if (rapt_prov_status_kind(ev->u.conn.prov_status) !=
	    RAPT_PROV_STATUS_TERM ||
	    !(v & RAPT_PROV_STATUS_TERM_RECEIVED) != !received ||
	    layer > 1 || etype != 1) {
		fprintf(stderr, "BROKEN with prov_status %#x: %s\n", v, text);
		return -1;
	}
	return 0;
}

/*
 * A remote access violation: the target writes nothing, both sides see
 * BROKEN.  A read completes REMOTE_ACCESS and places nothing; a write
 * completes at transmit (iWARP has no acknowledgement), so it is SUCCESS
 * or REMOTE_ACCESS depending on timing, never FLUSHED-then-silence.
 */
static int violation(int kind, bool read)
{
	uint32_t access = ACC_ALL, rkey;
	struct other_pz o = { 0 };
	struct rapt_event ev;
	struct rapt_sge g;
	struct conn c;
	uint64_t raddr;

	if (kind == BAD_RIGHTS)
		access = RAPT_MEM_LOCAL_WRITE | (read ? RAPT_MEM_REMOTE_WRITE :
						 RAPT_MEM_REMOTE_READ);
	if (conn_open(&c, 4096, 4096, access, NULL, NULL))
		return -1;
	memset(c.p.buf, 0xcc, 4096 + 2 * GUARD);
	fill(c.a.mem, 4096, 1);
	rkey = c.p.mr.rkey ^ (kind == BAD_RKEY ? 0x10 : 0);
	raddr = c.p.mr.raddr + (kind == BAD_PAST_END ? 4096 - 99 : 0) -
		(kind == BAD_BEFORE ? 1 : 0);
	if (kind == BAD_PZ) {
		if (other_pz_open(&c.p, &o))
			return -1;
		rkey = o.mr.rkey;
		raddr = o.mr.raddr;
	}
	g = sge(&c.a, 0, 100);
	if (read)
		TOK(rapt_ep_post_read(c.a.ep, &g, 1, 7, raddr, rkey, 0));
	else
		TOK(rapt_ep_post_write(c.a.ep, &g, 1, 7, raddr, rkey, 0));
	if (ev_wait(&c.a, RAPT_EV_DTO, &ev))
		return -1;
	T(ev.u.dto.cookie == 7);
	if (read)
		T(ev.u.dto.status == RAPT_DTO_REMOTE_ACCESS);
	else
		T(ev.u.dto.status == RAPT_DTO_SUCCESS ||
		  ev.u.dto.status == RAPT_DTO_REMOTE_ACCESS);
	if (ev_wait(&c.a, RAPT_EV_BROKEN, &ev) || term_check(&ev, true) ||
	    ev_wait(&c.p, RAPT_EV_BROKEN, &ev) || term_check(&ev, false) ||
	    untouched(&c.p, 0, 0))
		return -1;
	if (read) {
		uint8_t want[100];

		fill(want, sizeof(want), 1);
		T(!memcmp(c.a.mem, want, sizeof(want)));
	}
	T(rapt_ep_post_send(c.a.ep, &g, 1, 8, 0) == RAPT_ESTATE);
	if (kind == BAD_PZ && other_pz_close(&o))
		return -1;
	return conn_close(&c);
}

static int run_violations(void)
{
	int kind;

	for (kind = BAD_RKEY; kind <= BAD_RIGHTS; kind++)
		if (violation(kind, false) || violation(kind, true))
			return -1;
	return 0;
}

/* An rkey of another PZ of the target's IA: refused like a bad key. */
static int run_other_pz(void)
{
	return violation(BAD_PZ, false) || violation(BAD_PZ, true) ? -1 : 0;
}

/*
 * An lkey of a region of another PZ than the EP's, as verbs' MR of another
 * PD: the work request completes LOCAL_PROTECTION and the connection
 * breaks (a send on the sender, a receive on the target), nothing placed.
 * A debug build refuses the post itself.
 */
static int local_other_pz(bool recv)
{
	struct other_pz o = { 0 };
	struct rapt_event ev;
	struct rapt_sge g, r;
	struct conn c;

	if (conn_open(&c, 4096, 4096, RAPT_MEM_LOCAL_WRITE, NULL, NULL))
		return -1;
	if (other_pz_open(recv ? &c.p : &c.a, &o))
		return -1;
	memset(c.p.buf, 0xcc, 4096 + 2 * GUARD);
	fill(c.a.mem, 100, 3);
	g = sge(&c.a, 0, 100);
	r = sge(&c.p, 0, 100);
	if (recv)
		r.lkey = o.mr.lkey;
	else
		g.lkey = o.mr.lkey;
#ifdef RAPT_DEBUG
	/* --enable-debug: the core checks every SGE at post time */
	T((recv ? rapt_ep_post_recv(c.p.ep, &r, 1, 1) :
		  rapt_ep_post_send(c.a.ep, &g, 1, 2, 0)) == RAPT_EINVAL);
	if (quiet(&c.a) || quiet(&c.p) || other_pz_close(&o))
		return -1;
	return conn_close(&c);
#endif
	TOK(rapt_ep_post_recv(c.p.ep, &r, 1, 1));
	TOK(rapt_ep_post_send(c.a.ep, &g, 1, 2, 0));
	if (recv) {
		if (dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_LOCAL_PROTECTION, 1,
			     &ev))
			return -1;
	} else if (dto_wait(&c.a, RAPT_OP_SEND, RAPT_DTO_LOCAL_PROTECTION, 2,
			    &ev)) {
		return -1;
	}
	if (ev_wait(&c.p, recv ? RAPT_EV_BROKEN : 0, &ev))
		return -1;
	if (!recv) {
		/* the target's receive flushes, then BROKEN */
		T(ev.type == RAPT_EV_DTO &&
		  ev.u.dto.status == RAPT_DTO_FLUSHED);
		if (ev_wait(&c.p, RAPT_EV_BROKEN, &ev))
			return -1;
	}
	if (ev_wait(&c.a, 0, &ev))
		return -1;
	if (recv) {
		/* the sender's send may complete before the Terminate */
		if (ev.type == RAPT_EV_DTO && ev_wait(&c.a, 0, &ev))
			return -1;
	}
	T(ev.type == RAPT_EV_BROKEN);
	T(untouched(&c.p, 0, 0) == 0);
	if (other_pz_close(&o))
		return -1;
	return conn_close(&c);
}

static int run_local_other_pz(void)
{
	return local_other_pz(false) || local_other_pz(true) ? -1 : 0;
}

/* iWARP has no RNR: a Send that finds no receive breaks the connection
 * on both sides; receives posted later flush. */
static int run_no_receive(void)
{
	struct rapt_event ev;
	struct rapt_sge g;
	struct conn c;

	if (conn_open(&c, 4096, 4096, RAPT_MEM_LOCAL_WRITE, NULL, NULL))
		return -1;
	g = sge(&c.a, 0, 20);
	TOK(rapt_ep_post_send(c.a.ep, &g, 1, 1, 0));
	if (ev_wait(&c.p, RAPT_EV_BROKEN, &ev))
		return -1;
	if (ev_wait(&c.a, RAPT_EV_DTO, &ev))
		return -1;
	T(ev.u.dto.cookie == 1);
	if (ev_wait(&c.a, RAPT_EV_BROKEN, &ev))
		return -1;
	g = sge(&c.p, 0, 20);
	TOK(rapt_ep_post_recv(c.p.ep, &g, 1, 2));
	if (dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 2, &ev))
		return -1;
	return conn_close(&c);
}

/* A message longer than the receive: LOCAL_LENGTH, nothing written past
 * the receive, the next receive flushed, both sides broken. */
static int run_too_long(void)
{
	struct rapt_event ev;
	struct rapt_sge g, r;
	struct conn c;

	if (conn_open(&c, 4096, 4096, RAPT_MEM_LOCAL_WRITE, NULL, NULL))
		return -1;
	memset(c.p.buf, 0xcc, 4096 + 2 * GUARD);
	r = sge(&c.p, 0, 10);
	TOK(rapt_ep_post_recv(c.p.ep, &r, 1, 1));
	r = sge(&c.p, 100, 10);
	TOK(rapt_ep_post_recv(c.p.ep, &r, 1, 2));
	g = sge(&c.a, 0, 11);
	TOK(rapt_ep_post_send(c.a.ep, &g, 1, 3, 0));
	if (dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_LOCAL_LENGTH, 1, &ev) ||
	    dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 2, &ev) ||
	    ev_wait(&c.p, RAPT_EV_BROKEN, &ev) || untouched(&c.p, 0, 10))
		return -1;
	if (ev_wait(&c.a, RAPT_EV_DTO, &ev) ||
	    ev_wait(&c.a, RAPT_EV_BROKEN, &ev))
		return -1;
	return conn_close(&c);
}

/* Send with Invalidate: the receive says so, the rkey is dead after. */
static int run_send_inv(void)
{
	struct rapt_event ev;
	struct rapt_sge g, r;
	struct conn c;

	if (conn_open(&c, 4096, 4096, ACC_ALL, NULL, NULL))
		return -1;
	r = sge(&c.p, 0, 100);
	TOK(rapt_ep_post_recv(c.p.ep, &r, 1, 1));
	g = sge(&c.a, 0, 10);
	TOK(rapt_ep_post_write(c.a.ep, &g, 1, 2, c.p.mr.raddr + 200,
			       c.p.mr.rkey, 0));
	TOK(rapt_ep_post_send_inv(c.a.ep, &g, 1, 3, RAPT_POST_SOLICITED,
				  c.p.mr.rkey));
	if (dto_wait(&c.a, RAPT_OP_RDMA_WRITE, RAPT_DTO_SUCCESS, 2, &ev) ||
	    dto_wait(&c.a, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 3, &ev) ||
	    dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 1, &ev))
		return -1;
	T(ev.u.dto.flags == (RAPT_DTO_INVALIDATED | RAPT_DTO_SOLICITED));
	T(ev.u.dto.invalidated_rkey == c.p.mr.rkey);
	memset(c.p.mem + 1000, 0xcc, 100);
	TOK(rapt_ep_post_write(c.a.ep, &g, 1, 4, c.p.mr.raddr + 1000,
			       c.p.mr.rkey, 0));
	if (ev_wait(&c.p, RAPT_EV_BROKEN, &ev))
		return -1;
	T(c.p.mem[1000] == 0xcc);
	return conn_close(&c);
}

/* Send with Invalidate naming an rkey of another PZ of the target's IA:
 * refused (a Terminate), the receive does not complete, both sides see
 * BROKEN. */
static int run_send_inv_other_pz(void)
{
	struct other_pz o = { 0 };
	struct rapt_event ev;
	struct rapt_sge g, r;
	struct conn c;

	if (conn_open(&c, 4096, 4096, ACC_ALL, NULL, NULL) ||
	    other_pz_open(&c.p, &o))
		return -1;
	r = sge(&c.p, 0, 100);
	TOK(rapt_ep_post_recv(c.p.ep, &r, 1, 1));
	g = sge(&c.a, 0, 10);
	TOK(rapt_ep_post_send_inv(c.a.ep, &g, 1, 3, 0, o.mr.rkey));
	if (dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 1, &ev) ||
	    ev_wait(&c.p, RAPT_EV_BROKEN, &ev) ||
	    ev_wait(&c.a, RAPT_EV_DTO, &ev))
		return -1;
	T(ev.u.dto.cookie == 3);
	if (ev_wait(&c.a, RAPT_EV_BROKEN, &ev) || other_pz_close(&o))
		return -1;
	return conn_close(&c);
}

/* The passive side may send as soon as it sees ESTABLISHED: the active
 * side's receive, posted before connect, gets it. */
static int prep_active_recv(struct conn *c)
{
	struct rapt_sge r = sge(&c->a, 0, 100);

	TOK(rapt_ep_post_recv(c->a.ep, &r, 1, 77));
	return 0;
}

static int run_passive_first(void)
{
	struct rapt_event ev;
	struct rapt_sge g;
	struct conn c;
	int i;

	for (i = 0; i < 20; i++) {
		if (conn_open(&c, 4096, 4096, RAPT_MEM_LOCAL_WRITE, NULL,
			      prep_active_recv))
			return -1;
		memcpy(c.p.mem, "hello", 5);
		g = sge(&c.p, 0, 5);
		TOK(rapt_ep_post_send(c.p.ep, &g, 1, 5, 0));
		if (dto_wait(&c.p, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 5, &ev) ||
		    dto_wait(&c.a, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 77, &ev))
			return -1;
		T(ev.u.dto.length == 5 && !memcmp(c.a.mem, "hello", 5));
		if (conn_close(&c))
			return -1;
	}
	return 0;
}

/* Disconnect flushes outstanding receives in order before DISCONNECTED. */
static int run_flush(void)
{
	struct rapt_event ev;
	struct rapt_sge r;
	struct conn c;
	int i;

	if (conn_open(&c, 4096, 4096, RAPT_MEM_LOCAL_WRITE, NULL, NULL))
		return -1;
	r = sge(&c.p, 0, 64);
	for (i = 0; i < 100; i++)
		TOK(rapt_ep_post_recv(c.p.ep, &r, 1, i));
	TOK(rapt_ep_disconnect(c.a.ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
	for (i = 0; i < 100; i++)
		if (dto_wait(&c.p, RAPT_OP_RECV, RAPT_DTO_FLUSHED, i, &ev))
			return -1;
	if (ev_wait(&c.p, RAPT_EV_DISCONNECTED, &ev) ||
	    ev_wait(&c.a, RAPT_EV_DISCONNECTED, &ev))
		return -1;
	return conn_close(&c);
}

/* ------------------------------------------------------------------ */
/* Adaptive progress ("parking", docs/tcp-provider.md section 2): connect
 * by spinning on both sides (the active handshake runs in the polling
 * thread), ping-pong while spinning so the passive EP gets parked, then
 * block at once while data arrives before (mode 0) or during (mode 1) the
 * wait: it must still be delivered, promptly.                          */
/* ------------------------------------------------------------------ */

/* Spin (dequeue) on both sides until the connection is up. */
static int spin_connect(struct conn *c)
{
	struct rapt_psp_info pi;
	struct rapt_event ev;
	int est = 0;
	double end = now_ms() + 5000;

	memset(c, 0, sizeof(*c));
	if (side_open(&c->a, 4096, RAPT_MEM_LOCAL_WRITE) ||
	    side_open(&c->p, 4096, RAPT_MEM_LOCAL_WRITE))
		return -1;
	TOK(rapt_psp_create(c->p.ia, RAPT_SERVICE_ID_ANY, c->p.evd, NULL,
			    &c->psp));
	TOK(rapt_psp_query(c->psp, &pi, sizeof(pi)));
	TOK(rapt_ep_create(c->a.pz, c->a.evd, c->a.evd, c->a.evd, NULL,
			   &c->a.ep));
	TOK(rapt_ep_create(c->p.pz, c->p.evd, c->p.evd, c->p.evd, NULL,
			   &c->p.ep));
	TOK(rapt_ep_connect(c->a.ep, lo_addr(), pi.service_id, NULL, 0,
			    EV_US));
	while (est < 2) {
		T(now_ms() < end);
		if (!rapt_evd_dequeue(c->p.evd, &ev)) {
			if (ev.type == RAPT_EV_CR_ARRIVAL)
				TOK(rapt_cr_accept(ev.u.cr.cr, c->p.ep, NULL, 0));
			else if (ev.type == RAPT_EV_ESTABLISHED)
				est++;
			else
				T(0);
		}
		if (!rapt_evd_dequeue(c->a.evd, &ev)) {
			T(ev.type == RAPT_EV_ESTABLISHED);
			est++;
		}
	}
	return 0;
}

struct late { struct conn *c; int us; int n; };

static void *late_send(void *arg)
{
	struct late *l = arg;
	struct rapt_sge g = sge(&l->c->a, 0, 8);
	int i;

	usleep(l->us);
	for (i = 0; i < l->n; i++)
		rapt_ep_post_send(l->c->a.ep, &g, 1, 1000 + i, 0);
	return NULL;
}

/* Spin on @s until one DTO of @op; returns the ms it took. */
static int spin_dto(struct side *s, uint32_t op)
{
	struct rapt_event ev;
	double end = now_ms() + 5000;

	for (;;) {
		T(now_ms() < end);
		if (!rapt_evd_dequeue(s->evd, &ev)) {
			T(ev.type == RAPT_EV_DTO);
			if (ev.u.dto.op == op)
				return 0;
		}
	}
}

static int park_run(int mode)
{
	struct rapt_sge ga, gp;
	struct rapt_event ev;
	struct conn c;
	struct late l;
	pthread_t t;
	double t0, worst = 0;
	int i, k;

	if (spin_connect(&c))
		return -1;
	for (k = 0; k < 50; k++) {
		/* spin ping-pongs: the passive EP gets parked */
		for (i = 0; i < 20; i++) {
			ga = sge(&c.a, 0, 8);
			gp = sge(&c.p, 0, 64);
			TOK(rapt_ep_post_recv(c.p.ep, &gp, 1, i));
			TOK(rapt_ep_post_send(c.a.ep, &ga, 1, i, 0));
			if (spin_dto(&c.a, RAPT_OP_SEND) ||
			    spin_dto(&c.p, RAPT_OP_RECV))
				return -1;
		}
		/* then block at once; the data comes while blocked */
		gp = sge(&c.p, 0, 64);
		TOK(rapt_ep_post_recv(c.p.ep, &gp, 1, 77));
		l.c = &c; l.us = mode ? 200 * (k % 10) : 0; l.n = 1;
		t0 = now_ms();
		if (mode)
			pthread_create(&t, NULL, late_send, &l);
		else
			late_send(&l);
		TOK(rapt_evd_wait(c.p.evd, EV_US, 1, &ev, NULL));
		T(ev.type == RAPT_EV_DTO && ev.u.dto.op == RAPT_OP_RECV &&
		  ev.u.dto.cookie == 77);
		if (now_ms() - t0 - l.us / 1000.0 > worst)
			worst = now_ms() - t0 - l.us / 1000.0;
		if (mode)
			pthread_join(t, NULL);
		TOK(rapt_evd_wait(c.a.evd, EV_US, 1, &ev, NULL));
		T(ev.type == RAPT_EV_DTO && ev.u.dto.op == RAPT_OP_SEND);
	}
	fprintf(stderr, "parking mode %d: worst spin->block delivery delay %.2f ms\n",
		mode, worst);
	/* A liveness bound, not a speed target: a parked EP that the sleep
	 * does not watch would stall (until a park re-check, or for good);
	 * a second is far above any scheduling delay of a busy machine. */
	T(worst < 1000);
	return conn_close(&c);
}

static int run_park_before(void)
{
	return park_run(0);
}

static int run_park_during(void)
{
	return park_run(1);
}

/* ------------------------------------------------------------------ */

#define CASE(fn) static void cu_##fn(void) { CU_ASSERT_EQUAL(fn(), 0); }
CASE(run_pingpong)
CASE(run_multi_sge)
CASE(run_inline)
CASE(run_suppress)
CASE(run_fast_send)
CASE(run_fast_send_crc)
CASE(run_fast_partial)
CASE(run_rcvbuf_shrunk)
CASE(run_rcvbuf_bulk)
CASE(run_rcvbuf_off)
CASE(run_rdma_offsets)
CASE(run_rdma_big)
CASE(run_cork)
CASE(run_read_stream)
CASE(run_rresp_uncorked)
CASE(run_idle_found)
CASE(run_fence)
CASE(run_violations)
CASE(run_other_pz)
CASE(run_local_other_pz)
CASE(run_no_receive)
CASE(run_too_long)
CASE(run_send_inv)
CASE(run_send_inv_other_pz)
CASE(run_passive_first)
CASE(run_flush)
CASE(run_park_before)
CASE(run_park_during)

static const struct {
	const char *name;
	void (*fn)(void);
} cases[] = {
	{ "send/recv ping-pong, 0 B to 1 MiB", cu_run_pingpong },
	{ "multi-SGE gather and scatter, solicited", cu_run_multi_sge },
	{ "inline sends", cu_run_inline },
	{ "suppressed completions", cu_run_suppress },
	{ "small sends: fast path, in part, behind a large one",
	  cu_run_fast_send },
	{ "the same with CRC32c", cu_run_fast_send_crc },
	{ "small sends: the fast path's write taken in part",
	  cu_run_fast_partial },
	{ "receive buffer shrunk after connect: the kernel's pace",
	  cu_run_rcvbuf_shrunk },
	{ "bulk Write or Read: the receiving socket's SO_RCVBUF, once",
	  cu_run_rcvbuf_bulk },
	{ "RAPT_TCP_RCVBUF=0: no socket's receive buffer set",
	  cu_run_rcvbuf_off },
	{ "RDMA write and read at every offset class", cu_run_rdma_offsets },
	{ "4 MiB RDMA writes and read", cu_run_rdma_big },
	{ "streamed large writes cork the socket; what uncorks it",
	  cu_run_cork },
	{ "streamed reads: a receive pass writes the requests left to it",
	  cu_run_read_stream },
	{ "a spinning responder's Read Responses never cork",
	  cu_run_rresp_uncorked },
	{ "an EVD whose EPs are all quiet finds data at the first poll",
	  cu_run_idle_found },
	{ "FENCE waits for earlier reads", cu_run_fence },
	{ "remote access violations", cu_run_violations },
	{ "rkey of a region in another PZ", cu_run_other_pz },
	{ "lkey of a region in another PZ", cu_run_local_other_pz },
	{ "send with no posted receive", cu_run_no_receive },
	{ "message longer than the receive", cu_run_too_long },
	{ "send with invalidate", cu_run_send_inv },
	{ "send with invalidate of another PZ's rkey",
	  cu_run_send_inv_other_pz },
	{ "passive side sends right after ESTABLISHED",
	  cu_run_passive_first },
	{ "disconnect flushes receives in order", cu_run_flush },
	{ "parked EP: data sent, then the consumer blocks",
	  cu_run_park_before },
	{ "parked EP: data arrives while the consumer blocks",
	  cu_run_park_during },
};

int main(void)
{
	unsigned int i, fails;
	CU_pSuite s;

	if (!lo_available())
		return 77;
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("tcp_dto", NULL, NULL);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CU_add_test(s, cases[i].name, cases[i].fn);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
