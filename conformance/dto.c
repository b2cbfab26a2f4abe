/* SPDX-License-Identifier: MIT */
/*
 * Area "dto": send and receive.  A sweep of sizes up to the largest
 * message both ways, zero-length messages, scatter/gather, inline sends,
 * completion flags (suppress, solicited), ordering and 64-bit cookies,
 * queue and SGE limits, a message longer than its receive.
 */
#include "config.h"

#include <string.h>

#include "conf.h"

static const uint32_t sweep_sizes[] = {
	1, 2, 3, 7, 8, 15, 16, 63, 64, 65, 127, 128, 255, 256, 511, 512,
	1023, 1024, 1500, 4095, 4096, 4097, 8191, 8192, 9000, 65535, 65536,
	65537, 262144, 1048575, 1048576,
};

#define NSIZES CONF_ARRAY_SIZE(sweep_sizes)

/* Sizes used: those up to @max; their offsets, 64-byte aligned. */
static unsigned int sweep_layout(uint64_t max, size_t *off, size_t *total)
{
	unsigned int i, n = 0;
	size_t o = 0;

	for (i = 0; i < NSIZES && sweep_sizes[i] <= max; i++, n++) {
		off[i] = o;
		o += (sweep_sizes[i] + 63) & ~(size_t)63;
	}
	*total = o;
	return n;
}

/* Agree on the largest size both sides and --max-size allow. */
static int sweep_max(struct conf_ctx *c, uint64_t *max)
{
	uint64_t peer;

	TRY(conf_send_u64(c, "max-msg", c->attr.max_msg_size));
	TRY(conf_recv_u64(c, "max-msg", &peer));
	*max = c->attr.max_msg_size < peer ? c->attr.max_msg_size : peer;
	if (c->params.max_size && *max > c->params.max_size)
		*max = c->params.max_size;
	return 0;
out:
	return -1;
}

/* One direction of the sweep: @sender posts every size, the other side
 * has every receive posted at its exact size and checks the bytes. */
static int sweep_dir(struct conf_ctx *c, struct conf_ep_set *s, bool sender,
		     unsigned int n, const size_t *off, size_t half,
		     uint32_t seed)
{
	uint8_t *sbuf = s->buf, *rbuf = s->buf + half;
	struct rapt_event ev;
	struct rapt_sge sge;
	unsigned int i;
	long bad;

	if (!sender) {
		for (i = 0; i < n; i++) {
			sge.addr = (uintptr_t)(rbuf + off[i]);
			sge.length = sweep_sizes[i];
			sge.lkey = s->mi.lkey;
			REQUIRE_OK(rapt_ep_post_recv(s->ep, &sge, 1, i));
		}
		TRY(conf_barrier(c, "posted"));
		for (i = 0; i < n; i++) {
			REQUIRE_DTO(s->recv_evd, RAPT_OP_RECV,
				    RAPT_DTO_SUCCESS, i, &ev);
			EXPECT(ev.u.dto.ep == s->ep);
			REQUIRE_MSG(ev.u.dto.length == sweep_sizes[i],
				    "a %u-byte message arrived as %llu bytes",
				    sweep_sizes[i],
				    (unsigned long long)ev.u.dto.length);
			bad = conf_verify(rbuf + off[i], sweep_sizes[i],
					  seed + i);
			REQUIRE_MSG(bad < 0,
				    "a %u-byte message differs at byte %ld",
				    sweep_sizes[i], bad);
		}
		return conf_barrier(c, "checked");
	}
	for (i = 0; i < n; i++)
		conf_fill(sbuf + off[i], sweep_sizes[i], seed + i);
	TRY(conf_barrier(c, "posted"));
	for (i = 0; i < n; i++) {
		sge.addr = (uintptr_t)(sbuf + off[i]);
		sge.length = sweep_sizes[i];
		sge.lkey = s->mi.lkey;
		REQUIRE_OK(rapt_ep_post_send(s->ep, &sge, 1, i, 0));
	}
	for (i = 0; i < n; i++) {
		REQUIRE_DTO(s->req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, i, &ev);
		EXPECT(ev.u.dto.ep == s->ep);
	}
	return conf_barrier(c, "checked");
out:
	return -1;
}

static void sweep(struct conf_ctx *c, bool active)
{
	struct conf_set_opts o = { 0 };
	struct conf_ep_set s;
	size_t off[NSIZES], total;
	unsigned int n;
	uint64_t max;

	TRY(sweep_max(c, &max));
	n = sweep_layout(max, off, &total);
	o.buf_len = 2 * total;
	if (active)
		TRY(conf_pair_active(c, &s, &o, 0, 0));
	else
		TRY(conf_pair_passive(c, &s, &o, 0, 0));
	conf_note(c, "%u sizes up to %llu bytes", n, (unsigned long long)max);
	TRY(sweep_dir(c, &s, active, n, off, total, 1));
	TRY(sweep_dir(c, &s, !active, n, off, total, 500));
out:
	return;
}

static void sweep_active(struct conf_ctx *c)
{
	sweep(c, true);
}

static void sweep_passive(struct conf_ctx *c)
{
	sweep(c, false);
}

/* ---- zero-length messages ------------------------------------------ */

static void zero_active(struct conf_ctx *c)
{
	struct conf_ep_set s;

	TRY(conf_pair_active(c, &s, NULL, 0, 0));
	SKIP_UNLESS_CAP(RAPT_CAP_ZERO_LENGTH,
			rapt_ep_post_send(s.ep, NULL, 0, 1, 0));
	TRY(conf_barrier(c, "posted"));
	REQUIRE_OK(rapt_ep_post_send(s.ep, NULL, 0, 1, 0));
	REQUIRE_DTO(s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 1, NULL);
	REQUIRE_OK(rapt_ep_post_send(s.ep, NULL, 0, 2, 0));
	REQUIRE_DTO(s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 2, NULL);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void zero_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_sge sge;

	TRY(conf_pair_passive(c, &s, NULL, 0, 0));
	/* A zero-length message into a buffer, and into no buffer. */
	sge.addr = (uintptr_t)s.buf;
	sge.length = 64;
	sge.lkey = s.mi.lkey;
	memset(s.buf, 0x3c, 64);
	REQUIRE_OK(rapt_ep_post_recv(s.ep, &sge, 1, 10));
	REQUIRE_OK(rapt_ep_post_recv(s.ep, NULL, 0, 11));
	TRY(conf_barrier(c, "posted"));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 10, &ev);
	EXPECT_EQ(ev.u.dto.length, 0);
	EXPECT_MSG(s.buf[0] == 0x3c && s.buf[63] == 0x3c,
		   "a zero-length message wrote into the receive buffer");
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 11, &ev);
	EXPECT_EQ(ev.u.dto.length, 0);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* ---- scatter / gather ---------------------------------------------- */

/* Agree on how many SGEs: both sides' limits, at most 4. */
static int sge_count(struct conf_ctx *c, uint32_t mine, uint32_t *n)
{
	uint64_t peer;

	TRY(conf_send_u64(c, "sge", mine));
	TRY(conf_recv_u64(c, "sge", &peer));
	*n = mine < peer ? mine : (uint32_t)peer;
	if (*n > 4)
		*n = 4;
	return 0;
out:
	return -1;
}

static const uint32_t gather_len[4] = { 1, 333, 4096, 77 };
static const uint32_t scatter_len[4] = { 100, 7, 4200, 200 };

static void sge_active(struct conf_ctx *c)
{
	struct rapt_ep_attr a = { .max_send_sge = c->attr.max_send_sge };
	struct conf_set_opts o = { .attr = &a };
	struct rapt_sge sgl[5];
	struct rapt_lmr_info mi2;
	struct rapt_lmr *lmr2;
	struct conf_ep_set s;
	uint8_t *buf2, *all;
	uint32_t n, i, total = 0, pos = 0;

	TRY(conf_pair_active(c, &s, &o, 0, 0));
	TRY(sge_count(c, c->attr.max_send_sge, &n));
	/* Pieces from two registrations, at odd places. */
	buf2 = conf_alloc(c, 8192);
	all = conf_alloc(c, 16384);
	REQUIRE(buf2 && all);
	REQUIRE_OK(conf_lmr_create(c, buf2, 8192, RAPT_MEM_LOCAL_WRITE, &lmr2,
				   &mi2));
	for (i = 0; i < n; i++)
		total += gather_len[i];
	conf_fill(all, total, 31);
	for (i = 0; i < n; i++) {
		uint8_t *p = i % 2 ? buf2 + 3 + 1000 * i : s.buf + 1001 * i + 5;

		memcpy(p, all + pos, gather_len[i]);
		sgl[i].addr = (uintptr_t)p;
		sgl[i].length = gather_len[i];
		sgl[i].lkey = i % 2 ? mi2.lkey : s.mi.lkey;
		pos += gather_len[i];
	}
	TRY(conf_send_u64(c, "total", total));
	TRY(conf_barrier(c, "posted"));
	REQUIRE_OK(rapt_ep_post_send(s.ep, sgl, n, 4, 0));
	REQUIRE_DTO(s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 4, NULL);
	/* One SGE over the EP's limit fails at once. */
	sgl[n] = sgl[0];
	if (a.max_send_sge < 5 && n == a.max_send_sge)
		EXPECT_RC(rapt_ep_post_send(s.ep, sgl, n + 1, 5, 0),
			  RAPT_EINVAL);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void sge_passive(struct conf_ctx *c)
{
	struct rapt_ep_attr a = { .max_recv_sge = c->attr.max_recv_sge };
	struct conf_set_opts o = { .attr = &a };
	struct rapt_sge sgl[5];
	struct conf_ep_set s;
	struct rapt_event ev;
	uint8_t *all;
	uint32_t n, i, pos = 0;
	uint64_t total;

	TRY(conf_pair_passive(c, &s, &o, 0, 0));
	TRY(sge_count(c, c->attr.max_recv_sge, &n));
	TRY(conf_recv_u64(c, "total", &total));
	all = conf_alloc(c, 16384);
	REQUIRE(all);
	for (i = 0; i < n; i++) {
		sgl[i].addr = (uintptr_t)(s.buf + 9000 * i + 1);
		sgl[i].length = scatter_len[i];
		sgl[i].lkey = s.mi.lkey;
	}
	/* The scatter list must hold the gathered message. */
	for (i = 0, pos = 0; i < n; i++)
		pos += scatter_len[i];
	if (pos < total)
		sgl[n - 1].length += (uint32_t)(total - pos);
	sgl[n] = sgl[0];
	if (a.max_recv_sge < 5 && n == a.max_recv_sge)
		EXPECT_RC(rapt_ep_post_recv(s.ep, sgl, n + 1, 99),
			  RAPT_EINVAL);
	REQUIRE_OK(rapt_ep_post_recv(s.ep, sgl, n, 3));
	TRY(conf_barrier(c, "posted"));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 3, &ev);
	EXPECT_EQU(ev.u.dto.length, total);
	for (i = 0, pos = 0; i < n && pos < total; i++) {
		uint32_t k = sgl[i].length;

		if (pos + k > total)
			k = (uint32_t)(total - pos);
		memcpy(all + pos, (void *)(uintptr_t)sgl[i].addr, k);
		pos += k;
	}
	EXPECT_MSG(conf_verify(all, total, 31) < 0,
		   "the gathered message did not scatter back in order");
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* ---- inline --------------------------------------------------------- */

static void inline_active(struct conf_ctx *c)
{
	uint32_t il = c->attr.max_inline < 64 ? c->attr.max_inline : 64;
	struct rapt_ep_attr a = { .max_inline = il };
	struct conf_set_opts o = { .attr = &a };
	struct conf_ep_set s;
	struct rapt_sge sge;

	TRY(conf_pair_active(c, &s, &o, 0, 0));
	sge.addr = (uintptr_t)s.buf;
	sge.length = 8;
	sge.lkey = s.mi.lkey;
	SKIP_UNLESS_CAP(RAPT_CAP_INLINE,
			rapt_ep_post_send(s.ep, &sge, 1, 1, RAPT_POST_INLINE));
	TRY(conf_send_u64(c, "len", il));
	TRY(conf_barrier(c, "posted"));
	conf_fill(s.buf, il, 41);
	sge.length = il;
	REQUIRE_OK(rapt_ep_post_send(s.ep, &sge, 1, 1, RAPT_POST_INLINE));
	/* Inline: the buffer is ours again as soon as the post returns. */
	memset(s.buf, 0xdd, il);
	REQUIRE_DTO(s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 1, NULL);
	sge.length = il + 1;
	EXPECT_RC(rapt_ep_post_send(s.ep, &sge, 1, 2, RAPT_POST_INLINE),
		  RAPT_ELENGTH);
	EXPECT_EMPTY(s.req_evd, 20);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void inline_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;
	uint64_t il;

	TRY(conf_pair_passive(c, &s, NULL, 1, 128));
	TRY(conf_recv_u64(c, "len", &il));
	TRY(conf_barrier(c, "posted"));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0, &ev);
	EXPECT_EQU(ev.u.dto.length, il);
	EXPECT_MSG(conf_verify(s.buf, il, 41) < 0,
		   "an inline send carried the bytes written after the post");
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* ---- completion flags ---------------------------------------------- */

#define NSUPP 10

/* Send message @i: 64 bytes of pattern @i from buf + 64 * i, cookie @i. */
static int send64(struct conf_ep_set *s, unsigned int i, unsigned int flags)
{
	struct rapt_sge sge = {
		.addr = (uintptr_t)(s->buf + 64 * i), .length = 64,
		.lkey = s->mi.lkey,
	};

	conf_fill(s->buf + 64 * i, 64, i);
	return rapt_ep_post_send(s->ep, &sge, 1, i, flags);
}

/* Receive messages 0..@n-1 of send64() in order, each checked. */
static int recv64(struct conf_ctx *c, struct conf_ep_set *s, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		REQUIRE_DTO(s->recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, i,
			    NULL);
		EXPECT(conf_verify(s->buf + 64 * i, 64, i) < 0);
	}
	return 0;
out:
	return -1;
}

static void suppress_active(struct conf_ctx *c)
{
	struct conf_ep_set s;
	unsigned int i;

	TRY(conf_pair_active(c, &s, NULL, 0, 0));
	TRY(conf_barrier(c, "posted"));
	for (i = 0; i < NSUPP; i++)
		REQUIRE_OK(send64(&s, i, i < NSUPP - 1 ?
				  RAPT_POST_SUPPRESS : 0));
	REQUIRE_DTO(s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, NSUPP - 1,
		    NULL);
	TRY(conf_barrier(c, "received"));
	EXPECT_EMPTY(s.req_evd, 20);
out:
	return;
}

static void suppress_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;

	TRY(conf_pair_passive(c, &s, NULL, NSUPP, 64));
	TRY(conf_barrier(c, "posted"));
	TRY(recv64(c, &s, NSUPP));
	TRY(conf_barrier(c, "received"));
out:
	return;
}

/*
 * Suppressed sends only, several times the send queue: each post fits
 * once the earlier ones are done (a provider that holds their slots
 * until a completion it never reports fills up for good), and they
 * arrive in order.  Posts that find the queue full are retried while
 * the EVD is progressed; nothing may be reported.
 */
#define DEPTH_SEND 8
#define DEPTH_MSGS (6 * DEPTH_SEND)

static void depth_active(struct conf_ctx *c)
{
	struct rapt_ep_attr a = { .max_send = DEPTH_SEND };
	struct conf_set_opts o = { .attr = &a };
	struct conf_ep_set s;
	struct rapt_event ev;
	int64_t end;
	unsigned int i;
	int ret;

	TRY(conf_pair_active(c, &s, &o, 0, 0));
	TRY(conf_barrier(c, "posted"));
	end = conf_now_us() + 1000ll * conf_tmo(c, CONF_TMO_MS);
	for (i = 0; i < DEPTH_MSGS; i++) {
		while ((ret = send64(&s, i, RAPT_POST_SUPPRESS)) ==
		       RAPT_ENOSPC && conf_now_us() < end) {
			ret = rapt_evd_dequeue(s.req_evd, &ev);
			REQUIRE_MSG(ret == RAPT_EAGAIN,
				    "a suppressed send was reported (%s)",
				    rapt_strerror(ret));
		}
		REQUIRE_MSG(ret == 0, "suppressed send %u of %u: %s (send queue %u)",
			    i, DEPTH_MSGS, rapt_strerror(ret), DEPTH_SEND);
	}
	TRY(conf_barrier(c, "received"));
	EXPECT_EMPTY(s.req_evd, 20);
out:
	return;
}

static void depth_passive(struct conf_ctx *c)
{
	struct rapt_ep_attr a = { .max_recv = DEPTH_MSGS };
	struct conf_set_opts o = { .attr = &a };
	struct conf_ep_set s;

	TRY(conf_pair_passive(c, &s, &o, DEPTH_MSGS, 64));
	TRY(conf_barrier(c, "posted"));
	TRY(recv64(c, &s, DEPTH_MSGS));
	TRY(conf_barrier(c, "received"));
out:
	return;
}

/*
 * The last sends before a disconnect were suppressed, and the peer has
 * them all: they succeeded, so the disconnect, graceful or abrupt,
 * reports nothing for them (not FLUSHED), and a graceful one does not
 * wait for completions that will never be reported.
 */
static void tail_active(struct conf_ctx *c, uint32_t how)
{
	struct conf_ep_set s;
	unsigned int i;

	TRY(conf_pair_active(c, &s, NULL, 0, 0));
	TRY(conf_barrier(c, "posted"));
	for (i = 0; i < NSUPP; i++)
		REQUIRE_OK(send64(&s, i, RAPT_POST_SUPPRESS));
	TRY(conf_barrier(c, "received"));
	REQUIRE_OK(rapt_ep_disconnect(s.ep, how, NULL, 0));
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, NULL);
	EXPECT_EMPTY(s.req_evd, 20);
	TRY(conf_barrier(c, "down"));
out:
	return;
}

static void tail_graceful_active(struct conf_ctx *c)
{
	tail_active(c, RAPT_CLOSE_GRACEFUL);
}

static void tail_abrupt_active(struct conf_ctx *c)
{
	tail_active(c, RAPT_CLOSE_ABRUPT);
}

static void tail_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;

	TRY(conf_pair_passive(c, &s, NULL, NSUPP, 64));
	TRY(conf_barrier(c, "posted"));
	TRY(recv64(c, &s, NSUPP));
	TRY(conf_barrier(c, "received"));
	TRY(conf_wait_down(c, &s, NULL));
	TRY(conf_barrier(c, "down"));
out:
	return;
}

static void solicited_active(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_sge sge;

	TRY(conf_pair_active(c, &s, NULL, 0, 0));
	sge.addr = (uintptr_t)s.buf;
	sge.length = 16;
	sge.lkey = s.mi.lkey;
	SKIP_UNLESS_CAP(RAPT_CAP_SOLICITED,
			rapt_ep_post_send(s.ep, &sge, 1, 1,
					  RAPT_POST_SOLICITED));
	TRY(conf_barrier(c, "posted"));
	REQUIRE_OK(rapt_ep_post_send(s.ep, &sge, 1, 1, RAPT_POST_SOLICITED));
	REQUIRE_OK(rapt_ep_post_send(s.ep, &sge, 1, 2, 0));
	REQUIRE_DTO(s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 1, NULL);
	REQUIRE_DTO(s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 2, NULL);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void solicited_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;

	TRY(conf_pair_passive(c, &s, NULL, 2, 64));
	/* The receiving side reports the flag: its IA must offer it. */
	if (!(c->attr.caps & RAPT_CAP_SOLICITED)) {
		conf_skip(c, "the receiving IA does not advertise RAPT_CAP_SOLICITED");
		goto out;
	}
	TRY(conf_barrier(c, "posted"));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0, &ev);
	EXPECT_MSG(ev.u.dto.flags & RAPT_DTO_SOLICITED,
		   "a solicited send's receive lacks RAPT_DTO_SOLICITED");
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 1, &ev);
	EXPECT_MSG(!(ev.u.dto.flags & RAPT_DTO_SOLICITED),
		   "a plain send's receive has RAPT_DTO_SOLICITED");
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* ---- ordering and cookies ------------------------------------------ */

#define NORDER 64
#define COOKIE_BASE 0xfedcba9876543210ULL

static void order_active(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_sge sge;
	unsigned int i;

	TRY(conf_pair_active(c, &s, NULL, 0, 0));
	TRY(conf_barrier(c, "posted"));
	for (i = 0; i < NORDER; i++) {
		memcpy(s.buf + 16 * i, &i, sizeof(i));
		sge.addr = (uintptr_t)(s.buf + 16 * i);
		sge.length = sizeof(i);
		sge.lkey = s.mi.lkey;
		REQUIRE_OK(rapt_ep_post_send(s.ep, &sge, 1, COOKIE_BASE + i,
					     0));
	}
	for (i = 0; i < NORDER; i++)
		REQUIRE_DTO(s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS,
			    COOKIE_BASE + i, NULL);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void order_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_sge sge;
	unsigned int i, v;

	TRY(conf_pair_passive(c, &s, NULL, 0, 0));
	for (i = 0; i < NORDER; i++) {
		sge.addr = (uintptr_t)(s.buf + 16 * i);
		sge.length = 16;
		sge.lkey = s.mi.lkey;
		REQUIRE_OK(rapt_ep_post_recv(s.ep, &sge, 1, ~COOKIE_BASE + i));
	}
	TRY(conf_barrier(c, "posted"));
	for (i = 0; i < NORDER; i++) {
		REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS,
			    ~COOKIE_BASE + i, &ev);
		memcpy(&v, s.buf + 16 * i, sizeof(v));
		REQUIRE_MSG(v == i, "receive %u holds message %u", i, v);
	}
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* ---- limits ---------------------------------------------------------- */

static void t_recv_full(struct conf_ctx *c)
{
	struct rapt_ep_attr a = { .max_recv = 4 };
	struct conf_set_opts o = { .attr = &a };
	struct rapt_ep_info info;
	struct rapt_sge sge, big[65];
	struct conf_ep_set s;

	memset(big, 0, sizeof(big));
	TRY(conf_set_create(c, &s, &o));
	REQUIRE_OK(rapt_ep_query(s.ep, &info, sizeof(info)));
	EXPECT_EQ(info.attr.max_recv, 4);
	TRY(conf_post_recvs(c, &s, 0, 4, 64));
	sge.addr = (uintptr_t)s.buf;
	sge.length = 64;
	sge.lkey = s.mi.lkey;
	EXPECT_RC(rapt_ep_post_recv(s.ep, &sge, 1, 9), RAPT_ENOSPC);
	if (info.attr.max_recv_sge < 64)
		EXPECT_RC(rapt_ep_post_recv(s.ep, big,
					    info.attr.max_recv_sge + 1, 9),
			  RAPT_EINVAL);
	EXPECT_RC(rapt_ep_post_recv(s.ep, NULL, 2, 9), RAPT_EINVAL);
	EXPECT_EMPTY(s.recv_evd, 20);
out:
	return;
}

static void flags_active(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_sge sge;
	int rc;

	TRY(conf_pair_active(c, &s, NULL, 0, 0));
	sge.addr = (uintptr_t)s.buf;
	sge.length = 8;
	sge.lkey = s.mi.lkey;
	rc = rapt_ep_post_send(s.ep, &sge, 1, 1, 1u << 20);
	EXPECT_MSG(rc == RAPT_ENOTSUP || rc == RAPT_EINVAL,
		   "an unknown post flag returned %s", rapt_err_name(rc));
	EXPECT_RC(rapt_ep_post_send(s.ep, NULL, 1, 1, 0), RAPT_EINVAL);
	EXPECT_EMPTY(s.req_evd, 20);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void flags_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;

	TRY(conf_pair_passive(c, &s, NULL, 1, 64));
	TRY(conf_barrier(c, "done"));
	EXPECT_EMPTY(s.recv_evd, 0);
out:
	return;
}

/* ---- a message longer than its receive ------------------------------ */

static void short_active(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;

	TRY(conf_pair_active(c, &s, NULL, 0, 0));
	TRY(conf_barrier(c, "posted"));
	conf_fill(s.buf, 64, 3);
	{
		struct rapt_sge sge = {
			.addr = (uintptr_t)s.buf, .length = 64,
			.lkey = s.mi.lkey,
		};

		REQUIRE_OK(rapt_ep_post_send(s.ep, &sge, 1, 1, 0));
	}
	/* The sender may see success or an error; the connection breaks. */
	REQUIRE(conf_wait(c, s.req_evd, conf_tmo(c, CONF_TMO_MS), &ev) == 0);
	EXPECT_EQ(ev.type, RAPT_EV_DTO);
	TRY(conf_wait_down(c, &s, NULL));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void short_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;

	TRY(conf_pair_passive(c, &s, NULL, 1, 16));
	memset(s.buf + 16, 0x6b, 64);
	TRY(conf_barrier(c, "posted"));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_LOCAL_LENGTH, 0, &ev);
	EXPECT_MSG(s.buf[16] == 0x6b && s.buf[79] == 0x6b,
		   "a message longer than its receive wrote past it");
	TRY(conf_wait_down(c, &s, NULL));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static const struct conf_test dto_tests[] = {
	{ "sweep", "messages of 1 byte to the largest size, both ways, exact length and bytes",
	  sweep_active, sweep_passive },
	{ "zero_length", "a zero-length send completes into a buffer and into no buffer",
	  zero_active, zero_passive },
	{ "sge", "a send gathered from 2 registrations scatters back in order; SGE limits",
	  sge_active, sge_passive },
	{ "inline", "an inline send carries the bytes at post time; over max_inline is RAPT_ELENGTH",
	  inline_active, inline_passive },
	{ "suppress", "RAPT_POST_SUPPRESS hides successful completions only",
	  suppress_active, suppress_passive },
	{ "suppress_depth", "suppressed sends six times the send queue: every post fits in time, nothing reported",
	  depth_active, depth_passive },
	{ "suppress_tail", "suppressed sends the peer has, then a graceful disconnect: DISCONNECTED, nothing FLUSHED",
	  tail_graceful_active, tail_passive },
	{ "suppress_tail_abrupt", "suppressed sends the peer has, then an abrupt disconnect: DISCONNECTED, nothing FLUSHED",
	  tail_abrupt_active, tail_passive },
	{ "solicited", "a solicited send's receive carries RAPT_DTO_SOLICITED, a plain one not",
	  solicited_active, solicited_passive },
	{ "ordering", "64 sends arrive and complete in posting order with 64-bit cookies intact",
	  order_active, order_passive },
	{ "recv_full", "a full receive queue gives RAPT_ENOSPC; too many SGEs RAPT_EINVAL",
	  t_recv_full, NULL },
	{ "bad_post", "an unknown flag or a NULL SGE list fails at once and queues nothing",
	  flags_active, flags_passive },
	{ "recv_too_short", "a message longer than its receive completes LOCAL_LENGTH, writes nothing past it, breaks",
	  short_active, short_passive },
};

CONF_SUITE(conf_suite_dto, "dto", "send and receive", dto_tests);
