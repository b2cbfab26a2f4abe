/* SPDX-License-Identifier: MIT */
/*
 * rapt_perf latency tests; every round trip is timed on the client.
 *
 * lat_send: the client posts a receive, then a send; the server echoes
 *   each message from the buffer it landed in, with its next receive
 *   already posted.  A round trip ends when the client has both the
 *   reply's receive completion and its own send completion, as
 *   perftest's ib_send_lat does by default (TX depth 1, so every send is
 *   signalled and its completion polled).  With --unsignaled, as
 *   ib_send_lat -t 16 -Q 16: both sides post their sends
 *   with RAPT_POST_SUPPRESS but every PERF_SIG_EVERY-th (and the last),
 *   whose completion also frees the queue slots of the suppressed ones
 *   before it, and a round trip ends with the reply (a signalled send's
 *   completion is awaited in its own round trip).
 * lat_write: RDMA write ping-pong, as perftest does it: each side writes
 *   the whole message into the other's buffer and polls the last byte of
 *   its own buffer for the new sequence number.  The send-side
 *   completions are reaped while polling.  Polling only (-m poll).
 * lat_read: one RDMA read at a time, timed from the post to its
 *   completion; the server posts nothing for it.
 * lat_mw: the one-shot buffer of NFS/RDMA-style storage protocols.  The
 *   client binds a memory window over the first @size bytes of its
 *   buffer (remote write only) and sends its rkey and address; the
 *   server writes @size bytes into the window and answers with a Send
 *   with Invalidate naming the rkey.  A round trip ends when the client
 *   has the bind's, its send's and the reply's completions, the reply
 *   saying that the window's rkey was invalidated.
 *
 * --think US: the client pauses between round trips without calling rapt
 *   (the time is not counted), so the server polls an idle EVD meanwhile,
 *   as a rank waits for a peer that computes.
 *
 * Phase protocol: PHASE (size, total, window, client raddr, client rkey,
 * warmup) -> READY -> the round trips -> DONE -> ACK (server-side check
 * failures).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* --unsignaled: one send in this many asks for a completion. */
#define PERF_SIG_EVERY	16

static unsigned int post_flags(const struct perf_side *s, uint64_t size)
{
	return s->max_inline && size <= s->max_inline ? RAPT_POST_INLINE : 0;
}

/* Whether send @i of @total asks for a completion. */
static bool signaled(const struct perf_side *s, uint64_t i, uint64_t total)
{
	return !(s->hello.flags & PERF_HELLO_UNSIGNALED) ||
	       i % PERF_SIG_EVERY == PERF_SIG_EVERY - 1 || i + 1 == total;
}

static int post_recv(struct perf_side *s, uint8_t *p, uint64_t size,
		     uint64_t cookie)
{
	struct rapt_sge sge = perf_sge(s, p, size);
	int ret = rapt_ep_post_recv(s->data_ep, &sge, 1, cookie);

	return ret ? perf_fail(ret, "rapt_ep_post_recv") : 0;
}

static int post_send(struct perf_side *s, uint8_t *p, uint64_t size,
		     bool sig)
{
	struct rapt_sge sge = perf_sge(s, p, size);
	int ret;

	ret = rapt_ep_post_send(s->data_ep, &sge, 1, 0, post_flags(s, size) |
				(sig ? 0 : RAPT_POST_SUPPRESS));
	return ret ? perf_fail(ret, "rapt_ep_post_send") : 0;
}

static int post_write(struct perf_side *s, uint8_t *p, uint64_t size,
		      uint64_t raddr, uint32_t rkey)
{
	struct rapt_sge sge = perf_sge(s, p, size);
	int ret;

	ret = rapt_ep_post_write(s->data_ep, &sge, 1, 0, raddr, rkey,
				 post_flags(s, size));
	return ret ? perf_fail(ret, "rapt_ep_post_write") : 0;
}

/*
 * Wait for a data completion of @op; send-side completions of other
 * operations met on the way are counted off *@out.
 */
static int wait_op(struct perf_side *s, uint32_t op, uint32_t *out,
		   struct rapt_event *ev)
{
	int ret;

	for (;;) {
		ret = perf_next_dto(s, ev);
		if (!ret)
			ret = perf_dto_check(ev, "data transfer");
		if (ret)
			return ret;
		if (ev->u.dto.op == op)
			return 0;
		if (ev->u.dto.op == RAPT_OP_RECV) {
			fprintf(stderr, "rapt_perf: unexpected receive\n");
			return RAPT_EPROTO;
		}
		(*out)--;
	}
}

/* Reap one write completion if there is one (also handles control). */
static int reap_write(struct perf_side *s, uint32_t *out)
{
	struct rapt_event ev;
	int ret, err;

	ret = rapt_evd_dequeue(s->dto_evd, &ev);
	if (ret == RAPT_EAGAIN)
		return 0;
	if (ret)
		return perf_fail(ret, "rapt_evd_dequeue");
	if (perf_ctl_event(s, &ev, &err))
		return err;
	ret = perf_dto_ok(&ev, "RDMA write");
	if (!ret && ev.u.dto.op != RAPT_OP_RDMA_WRITE) {
		fprintf(stderr, "rapt_perf: unexpected completion\n");
		ret = RAPT_EPROTO;
	}
	if (!ret)
		(*out)--;
	return ret;
}

/*
 * Reading memory a peer's RDMA write fills races, in the C memory model,
 * with the provider thread that places it: nothing on the target side
 * orders the two (no completion is reported there).  That is the point
 * of lat_write, so the two readers of landed data are not instrumented
 * by ThreadSanitizer (an in-process provider in --loopback-thread mode
 * would otherwise be reported).
 */
#define PERF_NO_TSAN __attribute__((no_sanitize("thread")))

static PERF_NO_TSAN uint8_t landed_byte(const uint8_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static PERF_NO_TSAN int landed_check(const uint8_t *p, uint64_t len,
				     uint64_t seq)
{
	uint64_t k;

	for (k = 0; k < len; k++)
		if (p[k] != perf_pattern(seq, k))
			return -1;
	return 0;
}

/*
 * Poll the last byte of our buffer until the peer's write lands there,
 * dequeuing meanwhile (our write completions; and the provider's progress
 * for providers that move data from rapt_evd_dequeue()).
 */
static int spin_byte(struct perf_side *s, const uint8_t *p, uint8_t want,
		     uint32_t *out)
{
	uint64_t end = perf_now_ns() + (uint64_t)perf_stall_us() * 1000ull;
	unsigned int n = 0;
	int ret;

	while (landed_byte(p) != want) {
		ret = reap_write(s, out);
		if (ret)
			return ret;
		if (++n % 4096 == 0 && perf_now_ns() > end) {
			fprintf(stderr, "rapt_perf: the peer's write never "
				"arrived\n");
			return RAPT_ETIMEDOUT;
		}
	}
	return 0;
}

static int drain_writes(struct perf_side *s, uint32_t *out)
{
	struct rapt_event ev;

	while (*out) {
		int ret = wait_op(s, RAPT_OP_RDMA_WRITE, out, &ev);

		if (ret)
			return ret;
		(*out)--;
	}
	return 0;
}

/*
 * Write @size bytes to the peer: pattern @seq, last byte @tag.  The source
 * buffer is refilled only after the previous write from it completed (the
 * caller drains first): the provider may read it until then.
 */
static int write_tagged(struct perf_side *s, uint8_t *src, uint64_t size,
			uint64_t seq, uint8_t tag, uint64_t raddr,
			uint32_t rkey, uint32_t *out)
{
	int ret;

	if (s->hello.flags & PERF_HELLO_VERIFY)
		perf_fill(src, size - 1, seq);
	src[size - 1] = tag;
	ret = post_write(s, src, size, raddr, rkey);
	if (!ret)
		(*out)++;
	return ret;
}

/* ------------------------------------------------------------------ */
/* Client                                                              */
/* ------------------------------------------------------------------ */

struct lat_run {
	uint64_t size;
	uint64_t total;
	uint64_t warmup;
	uint64_t *ns;
	uint64_t bad;
	const char *what;
};

static void record(const struct perf_side *s, struct lat_run *r,
		   uint64_t i, uint64_t t0)
{
	uint64_t t1 = perf_now_ns();

	if (i >= r->warmup)
		r->ns[i - r->warmup] = t1 - t0;
	if (s->o->progress)
		perf_progress(s->o, r->what, i + 1, r->total);
}

static int send_one(struct perf_side *s, struct lat_run *r, uint64_t i)
{
	uint8_t *in = s->data, *outb = s->data + s->slot;
	bool sig = signaled(s, i, r->total);
	bool got_recv = false, got_send = !sig;
	struct rapt_event ev;
	uint64_t t0;
	int ret;

	ret = post_recv(s, in, r->size, i);
	if (ret)
		return ret;
	if (s->hello.flags & PERF_HELLO_VERIFY)
		perf_fill(outb, r->size, i);
	t0 = perf_now_ns();
	ret = post_send(s, outb, r->size, sig);
	while (!ret && (!got_recv || !got_send)) {
		ret = perf_next_dto(s, &ev);
		if (!ret)
			ret = perf_dto_check(&ev, "ping-pong");
		if (!ret && ev.u.dto.op == RAPT_OP_RECV)
			got_recv = true;
		else if (!ret)
			got_send = true;
	}
	if (ret)
		return ret;
	record(s, r, i, t0);
	if (ev.u.dto.op == RAPT_OP_RECV && ev.u.dto.length != r->size)
		r->bad++;
	if ((s->hello.flags & PERF_HELLO_VERIFY) &&
	    memcmp(in, outb, r->size))
		r->bad++;
	return 0;
}

static int write_one(struct perf_side *s, struct lat_run *r, uint64_t i,
		     uint32_t *out)
{
	uint8_t *in = s->data, *src = s->data + s->slot;
	uint8_t tag = (uint8_t)(i + 1);
	uint64_t t0;
	int ret;

	ret = drain_writes(s, out);
	if (ret)
		return ret;
	t0 = perf_now_ns();
	ret = write_tagged(s, src, r->size, i, tag, s->peer_raddr,
			   s->peer_rkey, out);
	if (!ret)
		ret = spin_byte(s, in + r->size - 1, tag, out);
	if (ret)
		return ret;
	record(s, r, i, t0);
	if ((s->hello.flags & PERF_HELLO_VERIFY) &&
	    landed_check(in, r->size - 1, i))
		r->bad++;
	return 0;
}

static int read_one(struct perf_side *s, struct lat_run *r, uint64_t i)
{
	struct rapt_sge sge = perf_sge(s, s->data, r->size);
	struct rapt_event ev;
	uint32_t none = 0;
	uint64_t t0;
	int ret;

	if (s->hello.flags & PERF_HELLO_VERIFY)
		memset(s->data, 0, r->size);
	t0 = perf_now_ns();
	ret = rapt_ep_post_read(s->data_ep, &sge, 1, i, s->peer_raddr,
				s->peer_rkey, 0);
	if (ret)
		return perf_fail(ret, "rapt_ep_post_read");
	ret = wait_op(s, RAPT_OP_RDMA_READ, &none, &ev);
	if (ret)
		return ret;
	record(s, r, i, t0);
	if ((s->hello.flags & PERF_HELLO_VERIFY) &&
	    perf_check(s->data, r->size, 0))
		r->bad++;
	return 0;
}

/* lat_mw's request: where the server writes, and the key to invalidate. */
struct mw_msg {
	uint64_t raddr;
	uint32_t rkey;
	uint32_t seq;
};

#define MW_MSG_OFF	0	/* in slot 1: the client's request */
#define MW_REPLY_OFF	32	/* in slot 1: the server's reply */

static int mw_one(struct perf_side *s, struct lat_run *r, uint64_t i)
{
	struct mw_msg m = { .raddr = s->data_info.raddr, .seq = (uint32_t)i };
	uint8_t *slot1 = s->data + s->slot;
	unsigned int got = 0;
	struct rapt_event ev;
	uint64_t t0;
	int ret;

	ret = post_recv(s, slot1 + MW_REPLY_OFF, sizeof(m), i);
	if (ret)
		return ret;
	t0 = perf_now_ns();
	ret = rapt_rmr_bind(s->rmr, s->data_ep, s->data_lmr, m.raddr, r->size,
			    RAPT_MEM_REMOTE_WRITE, i, 0, &m.rkey);
	if (ret)
		return perf_fail(ret, "rapt_rmr_bind");
	memcpy(slot1 + MW_MSG_OFF, &m, sizeof(m));
	ret = post_send(s, slot1 + MW_MSG_OFF, sizeof(m), true);
	while (!ret && got != 7) {
		ret = perf_next_dto(s, &ev);
		if (!ret)
			ret = perf_dto_check(&ev, "bind and invalidate");
		if (ret)
			break;
		got |= ev.u.dto.op == RAPT_OP_RECV ? 1u :
		       ev.u.dto.op == RAPT_OP_SEND ? 2u : 4u;
		if (ev.u.dto.op == RAPT_OP_RECV &&
		    (!(ev.u.dto.flags & RAPT_DTO_INVALIDATED) ||
		     ev.u.dto.invalidated_rkey != m.rkey))
			r->bad++;
	}
	if (ret)
		return ret;
	record(s, r, i, t0);
	if ((s->hello.flags & PERF_HELLO_VERIFY) &&
	    perf_check(s->data, r->size, i))
		r->bad++;
	return 0;
}

/* --think: the application computes; the peer's EVD sits idle. */
static void think(const struct perf_side *s)
{
	uint64_t end;

	if (!s->o->think_us)
		return;
	end = perf_now_ns() + s->o->think_us * 1000ull;
	while (perf_now_ns() < end)
		;
}

static int lat_loop(struct perf_side *s, struct lat_run *r)
{
	uint32_t out = 0;
	uint64_t i;
	int ret = 0;

	for (i = 0; !ret && i < r->total; i++) {
		if (i)
			think(s);
		switch (s->o->test) {
		case PERF_LAT_SEND:
			ret = send_one(s, r, i);
			break;
		case PERF_LAT_WRITE:
			ret = write_one(s, r, i, &out);
			break;
		case PERF_LAT_MW:
			ret = mw_one(s, r, i);
			break;
		default:
			ret = read_one(s, r, i);
			break;
		}
	}
	perf_progress_end(s->o);
	if (!ret)
		ret = drain_writes(s, &out);
	return ret;
}

/* lat_mw's window: one for the whole run. */
static int mw_open(struct perf_side *s)
{
	int ret;

	if (s->rmr)
		return 0;
	if (!(s->attr.caps & RAPT_CAP_RMR))
		return perf_fail(RAPT_ENOTSUP,
				 "lat_mw: the IA has no memory windows (RAPT_CAP_RMR)");
	ret = rapt_rmr_create(s->pz, &s->rmr);
	return ret ? perf_fail(ret, "rapt_rmr_create") : 0;
}

int perf_lat_client(struct perf_side *s, uint64_t size, uint64_t iters,
		    uint64_t warmup, struct perf_row *row)
{
	struct lat_run r = { .size = size, .total = warmup + iters,
			     .warmup = warmup,
			     .what = perf_test_name(s->o->test) };
	uint64_t a[6] = { size, warmup + iters, 1, s->data_info.raddr,
			  s->data_info.rkey, warmup };
	struct perf_ctl m;
	int ret;

	if (s->o->test == PERF_LAT_MW) {
		ret = mw_open(s);
		if (ret)
			return ret;
	}
	r.ns = calloc(iters, sizeof(*r.ns));
	if (!r.ns)
		return perf_fail(RAPT_ENOMEM, "latency samples");
	memset(s->data, 0, 2 * s->slot);
	ret = perf_ctl_send(s, PERF_CTL_PHASE, a, 6);
	if (!ret)
		ret = perf_ctl_recv(s, PERF_CTL_READY, &m);
	if (!ret && m.arg[0])
		ret = (int)(int64_t)m.arg[0];
	if (!ret)
		ret = lat_loop(s, &r);
	if (!ret)
		ret = perf_ctl_send(s, PERF_CTL_DONE, NULL, 0);
	if (!ret)
		ret = perf_ctl_recv(s, PERF_CTL_ACK, &m);
	if (!ret) {
		row->bytes = size;
		row->iters = iters;
		row->window = 1;
		perf_stats(r.ns, iters, row);
		if (s->hello.flags & PERF_HELLO_VERIFY)
			row->verified = !r.bad && !m.arg[0];
		else if (r.bad)
			row->verified = 0;
	}
	free(r.ns);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Server                                                              */
/* ------------------------------------------------------------------ */

static int serve_send(struct perf_side *s, uint64_t size, uint64_t total)
{
	uint32_t sends = 0;
	struct rapt_event ev;
	unsigned int cur = 0;
	uint64_t i;
	int ret;

	ret = post_recv(s, s->data, size, 0);
	if (!ret)
		ret = perf_ctl_send(s, PERF_CTL_READY, NULL, 0);
	for (i = 0; !ret && i < total; i++) {
		ret = wait_op(s, RAPT_OP_RECV, &sends, &ev);
		if (!ret && i + 1 < total)
			ret = post_recv(s, s->data + (cur ^ 1) * s->slot,
					size, i + 1);
		if (!ret)
			ret = post_send(s, s->data + cur * s->slot,
					ev.u.dto.length, signaled(s, i, total));
		sends += signaled(s, i, total);
		cur ^= 1;
	}
	while (!ret && sends) {
		ret = wait_op(s, RAPT_OP_SEND, &sends, &ev);
		sends--;
	}
	return ret;
}

static int serve_write(struct perf_side *s, const struct perf_ctl *ph,
		       uint64_t *bad)
{
	uint64_t size = ph->arg[0], total = ph->arg[1], i;
	uint8_t *in = s->data, *src = s->data + s->slot;
	uint32_t out = 0;
	int ret;

	ret = perf_ctl_send(s, PERF_CTL_READY, NULL, 0);
	for (i = 0; !ret && i < total; i++) {
		ret = spin_byte(s, in + size - 1, (uint8_t)(i + 1), &out);
		if (ret)
			break;
		if ((s->hello.flags & PERF_HELLO_VERIFY) &&
		    landed_check(in, size - 1, i))
			(*bad)++;
		ret = drain_writes(s, &out);
		if (!ret)
			ret = write_tagged(s, src, size, i, (uint8_t)(i + 1),
					   ph->arg[3], (uint32_t)ph->arg[4],
					   &out);
	}
	if (!ret)
		ret = drain_writes(s, &out);
	return ret;
}

/* lat_mw: write into each window the client names, then invalidate it
 * with the reply. */
static int serve_mw(struct perf_side *s, uint64_t size, uint64_t total)
{
	uint8_t *msg = s->data + s->slot;
	struct rapt_sge sge = perf_sge(s, msg, sizeof(struct mw_msg));
	struct rapt_event ev;
	struct mw_msg m;
	uint32_t out = 0;
	uint64_t i;
	int ret;

	ret = post_recv(s, msg, sizeof(m), 0);
	if (!ret)
		ret = perf_ctl_send(s, PERF_CTL_READY, NULL, 0);
	for (i = 0; !ret && i < total; i++) {
		ret = wait_op(s, RAPT_OP_RECV, &out, &ev);
		if (ret)
			break;
		memcpy(&m, msg, sizeof(m));
		if (i + 1 < total)	/* none left for the next phase */
			ret = post_recv(s, msg, sizeof(m), i + 1);
		if (!ret && (s->hello.flags & PERF_HELLO_VERIFY))
			perf_fill(s->data, size, m.seq);
		if (!ret)
			ret = post_write(s, s->data, size, m.raddr, m.rkey);
		if (!ret)
			ret = rapt_ep_post_send_inv(s->data_ep, &sge, 1, 0, 0,
						    m.rkey);
		out += 2;
	}
	while (!ret && out) {
		ret = wait_op(s, RAPT_OP_SEND, &out, &ev);
		out--;
	}
	return ret ? perf_fail(ret, "lat_mw") : 0;
}

int perf_lat_server(struct perf_side *s, const struct perf_ctl *ph)
{
	uint64_t size = ph->arg[0], total = ph->arg[1], bad = 0;
	uint64_t status = (uint64_t)(int64_t)RAPT_ERANGE;
	struct perf_ctl m;
	int ret;

	if (!size || size > s->hello.max_size)
		return perf_ctl_send(s, PERF_CTL_READY, &status, 1);
	memset(s->data, 0, 2 * s->slot);
	switch (s->hello.test) {
	case PERF_LAT_SEND:
		ret = serve_send(s, size, total);
		break;
	case PERF_LAT_WRITE:
		ret = serve_write(s, ph, &bad);
		break;
	case PERF_LAT_MW:
		ret = serve_mw(s, size, total);
		break;
	default:
		perf_fill(s->data, size, 0);
		ret = perf_ctl_send(s, PERF_CTL_READY, NULL, 0);
		break;
	}
	/* However long the client's phase lasts (a one-sided test shows the
	 * server nothing until DONE). */
	if (!ret)
		ret = perf_ctl_recv_wait(s, PERF_CTL_DONE, &m, PERF_PHASE_WAIT);
	if (!ret)
		ret = perf_ctl_send(s, PERF_CTL_ACK, &bad, 1);
	return ret;
}
