/* SPDX-License-Identifier: MIT */
/*
 * rapt_perf bandwidth and message-rate tests.  The client keeps -w
 * operations outstanding; operation i uses local slot i mod w (and for
 * RDMA remote slot i mod w).  Warm-up operations run and complete first;
 * the clock runs from then until the server's acknowledgement, so every
 * byte counted has reached the server's memory.
 *
 * bw_write: after the last completion the client sends a marker on the
 *   data connection; RDMA ordering puts it behind every write, and the
 *   server acknowledges it on the control connection.  With -V the server
 *   checks each slot holds the last write aimed at it.
 * bw_read: after the last read completes the client sends DONE; the server
 *   acknowledges.  With -V the client checks every read.
 * bw_send: receiver-driven credits, since a send that finds no receive
 *   breaks an iWARP connection: the server keeps up to 2w receives posted
 *   and reports the total it has posted (READY, then CREDIT every quarter
 *   of that); the client sends only into posted receives.  The server
 *   acknowledges once every message arrived.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

struct bw_run {
	uint64_t size;
	uint64_t total;
	uint32_t window;
	uint32_t outstanding;
	uint64_t bad;
	uint8_t busy[PERF_MAX_WINDOW];
};

static bool verifying(const struct perf_side *s)
{
	return s->hello.flags & PERF_HELLO_VERIFY;
}

static uint8_t *slot_ptr(const struct perf_side *s, uint64_t slot)
{
	return s->data + slot * s->slot;
}

static unsigned int post_flags(const struct perf_side *s, uint64_t size)
{
	return s->max_inline && size <= s->max_inline ? RAPT_POST_INLINE : 0;
}

static int post_op(struct perf_side *s, struct bw_run *r, uint64_t op)
{
	uint64_t slot = op % r->window;
	uint8_t *p = slot_ptr(s, slot);
	struct rapt_sge sge = perf_sge(s, p, r->size);
	uint64_t raddr = s->peer_raddr + slot * s->slot;
	int ret;

	switch (s->o->test) {
	case PERF_BW_WRITE:
		if (verifying(s))
			perf_fill(p, r->size, op);
		ret = rapt_ep_post_write(s->data_ep, &sge, 1, op, raddr,
					 s->peer_rkey, post_flags(s, r->size));
		break;
	case PERF_BW_READ:
		if (verifying(s))
			memset(p, 0, r->size);
		ret = rapt_ep_post_read(s->data_ep, &sge, 1, op, raddr,
					s->peer_rkey, 0);
		break;
	default:
		if (verifying(s))
			perf_fill(p, r->size, op);
		ret = rapt_ep_post_send(s->data_ep, &sge, 1, op,
					post_flags(s, r->size));
		break;
	}
	if (ret)
		return perf_fail(ret, "posting");
	r->busy[slot] = 1;
	r->outstanding++;
	return 0;
}

/* One completion of ours: free its slot, check a read with -V. */
static int completed(struct perf_side *s, struct bw_run *r,
		     const struct rapt_event *ev)
{
	uint64_t slot = ev->u.dto.cookie % r->window;
	int ret;

	ret = perf_dto_ok(ev, perf_test_name(s->o->test));
	if (ret)
		return ret;
	if (ev->u.dto.op == RAPT_OP_RECV || !r->busy[slot]) {
		fprintf(stderr, "rapt_perf: unexpected completion\n");
		return RAPT_EPROTO;
	}
	r->busy[slot] = 0;
	r->outstanding--;
	if (s->o->test == PERF_BW_READ && verifying(s) &&
	    perf_check(slot_ptr(s, slot), r->size, slot))
		r->bad++;
	return 0;
}

/* RDMA operations [@first, @end) with the window, then drain. */
static int run_rdma(struct perf_side *s, struct bw_run *r, uint64_t first,
		    uint64_t end)
{
	struct rapt_event ev;
	uint64_t op = first;
	int ret = 0;

	while (!ret && (op < end || r->outstanding)) {
		if (op < end && r->outstanding < r->window &&
		    !r->busy[op % r->window]) {
			ret = post_op(s, r, op++);
			continue;
		}
		ret = perf_next_data(s, &ev);
		if (!ret)
			ret = completed(s, r, &ev);
		perf_progress(s->o, perf_test_name(s->o->test),
			      op - r->outstanding, r->total);
	}
	return ret;
}

/* Take every CREDIT in the inbox: the server's receives posted so far. */
static int take_credits(struct perf_side *s, uint64_t *posted)
{
	struct perf_ctl m;
	int ret;

	while ((ret = perf_ctl_poll(s, PERF_CTL_CREDIT, &m)) == 1)
		if (m.arg[0] > *posted)
			*posted = m.arg[0];
	return ret;
}

/* Sends [@first, @end) into the receives the server has posted. */
static int run_send(struct perf_side *s, struct bw_run *r, uint64_t first,
		    uint64_t end, uint64_t *posted)
{
	struct rapt_event ev;
	uint64_t op = first;
	bool ctl;
	int ret = 0;

	while (!ret && (op < end || r->outstanding)) {
		if (op < end && op < *posted && r->outstanding < r->window &&
		    !r->busy[op % r->window]) {
			ret = post_op(s, r, op++);
			continue;
		}
		ret = perf_next_event(s, &ev, &ctl);
		if (!ret && ctl)
			ret = take_credits(s, posted);
		else if (!ret)
			ret = completed(s, r, &ev);
		perf_progress(s->o, "bw_send", op - r->outstanding, r->total);
	}
	return ret;
}

static int run_ops(struct perf_side *s, struct bw_run *r, uint64_t first,
		   uint64_t end, uint64_t *posted)
{
	if (s->o->test == PERF_BW_SEND)
		return run_send(s, r, first, end, posted);
	return run_rdma(s, r, first, end);
}

/* bw_write's marker: a send behind every write on the data EP. */
static int send_marker(struct perf_side *s, struct bw_run *r)
{
	uint8_t *p = slot_ptr(s, r->window);
	struct rapt_sge sge = perf_sge(s, p, PERF_CTL_LEN);
	struct rapt_event ev;
	int ret;

	ret = rapt_ep_post_send(s->data_ep, &sge, 1, UINT64_MAX, 0);
	if (ret)
		return perf_fail(ret, "rapt_ep_post_send (marker)");
	ret = perf_next_data(s, &ev);
	if (!ret)
		ret = perf_dto_ok(&ev, "marker");
	if (!ret && ev.u.dto.op != RAPT_OP_SEND)
		ret = RAPT_EPROTO;
	return ret;
}

/* The end of the phase: the server's ACK (CREDITs before it ignored). */
static int finish(struct perf_side *s, struct bw_run *r, uint64_t *srv_bad)
{
	struct perf_ctl m;
	int ret = 0;

	if (s->o->test == PERF_BW_WRITE)
		ret = send_marker(s, r);
	else if (s->o->test == PERF_BW_READ)
		ret = perf_ctl_send(s, PERF_CTL_DONE, NULL, 0);
	do {
		if (!ret)
			ret = perf_ctl_recv(s, 0, &m);
	} while (!ret && m.op == PERF_CTL_CREDIT);
	if (!ret && m.op != PERF_CTL_ACK)
		ret = RAPT_EPROTO;
	if (!ret)
		*srv_bad = m.arg[0];
	return ret;
}

/* bw_read cannot keep more reads outstanding than the negotiated ORD. */
static uint32_t client_window(struct perf_side *s)
{
	struct rapt_ep_info info;
	uint32_t w = s->hello.window;

	if (s->o->test != PERF_BW_READ)
		return w;
	if (!rapt_ep_query(s->data_ep, &info, sizeof(info)) &&
	    info.rdma_read_out && info.rdma_read_out < w)
		return info.rdma_read_out;
	return w;
}

static void fill_row(struct perf_row *row, const struct bw_run *r,
		     uint64_t iters, uint64_t elapsed, uint64_t local)
{
	double bytes = (double)r->size * iters;

	row->bytes = r->size;
	row->iters = iters;
	row->window = r->window;
	row->mbps = bytes * 1e3 / elapsed;
	row->local_mbps = bytes * 1e3 / local;
	row->msg_per_s = iters * 1e9 / elapsed;
}

int perf_bw_client(struct perf_side *s, uint64_t size, uint64_t iters,
		   uint64_t warmup, struct perf_row *row)
{
	struct bw_run r = { .size = size, .total = warmup + iters };
	uint64_t a[6] = { size, warmup + iters, 0, 0, 0, warmup };
	uint64_t start, local, posted = 0, srv_bad = 0;
	struct perf_ctl m;
	int ret;

	r.window = client_window(s);
	a[2] = r.window;
	ret = perf_ctl_send(s, PERF_CTL_PHASE, a, 6);
	/* The server fills its window (up to 1,024 x 4 MiB) before READY:
	 * a preparation as long as the window, so no stall watchdog either
	 * (a slow sanitizer build under load took over 500 ms to fill 16 MiB
	 * in tools/perf_phase.test). */
	if (!ret)
		ret = perf_ctl_recv_wait(s, PERF_CTL_READY, &m,
					 PERF_PHASE_WAIT);
	if (!ret && m.arg[0])
		ret = (int)(int64_t)m.arg[0];
	posted = m.arg[1];
	if (!ret)
		ret = run_ops(s, &r, 0, warmup, &posted);
	start = perf_now_ns();
	if (!ret)
		ret = run_ops(s, &r, warmup, r.total, &posted);
	local = perf_now_ns() - start;
	perf_progress_end(s->o);
	if (!ret)
		ret = finish(s, &r, &srv_bad);
	if (ret)
		return ret;
	fill_row(row, &r, iters, perf_now_ns() - start, local);
	if (verifying(s))
		row->verified = !r.bad && !srv_bad;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Server                                                              */
/* ------------------------------------------------------------------ */

static int post_recv(struct perf_side *s, uint64_t n, uint64_t q,
		     uint64_t size)
{
	struct rapt_sge sge = perf_sge(s, slot_ptr(s, n % q), size);
	int ret = rapt_ep_post_recv(s->data_ep, &sge, 1, n);

	return ret ? perf_fail(ret, "rapt_ep_post_recv") : 0;
}

/* How many receives bw_send keeps posted. */
static uint64_t recv_slots(const struct perf_side *s)
{
	struct rapt_ep_info info;
	uint64_t q = 2ull * s->hello.window;

	if (!rapt_ep_query(s->data_ep, &info, sizeof(info)) &&
	    info.attr.max_recv && info.attr.max_recv < q)
		q = info.attr.max_recv;
	return q ? q : 1;
}

static int one_recv(struct perf_side *s, uint64_t size, uint64_t q,
		    uint64_t *bad)
{
	struct rapt_event ev;
	int ret;

	ret = perf_next_data(s, &ev);
	if (!ret)
		ret = perf_dto_ok(&ev, "bw_send receive");
	if (!ret && ev.u.dto.op != RAPT_OP_RECV)
		ret = RAPT_EPROTO;
	if (ret)
		return ret;
	if (ev.u.dto.length != size)
		(*bad)++;
	else if (verifying(s) && perf_check(slot_ptr(s, ev.u.dto.cookie % q),
					    size, ev.u.dto.cookie))
		(*bad)++;
	return 0;
}

static int serve_send(struct perf_side *s, uint64_t size, uint64_t total,
		      uint64_t *bad)
{
	uint64_t q = recv_slots(s), posted = 0, recvd, fresh = 0;
	uint64_t a[2] = { 0, 0 }, every = q / 4 ? q / 4 : 1;
	int ret = 0;

	while (!ret && posted < q && posted < total)
		ret = post_recv(s, posted++, q, size);
	a[1] = posted;
	if (!ret)
		ret = perf_ctl_send(s, PERF_CTL_READY, a, 2);
	for (recvd = 0; !ret && recvd < total; recvd++) {
		ret = one_recv(s, size, q, bad);
		if (!ret && posted < total) {
			ret = post_recv(s, posted++, q, size);
			fresh++;
		}
		if (!ret && fresh && (fresh >= every || posted == total)) {
			ret = perf_ctl_send(s, PERF_CTL_CREDIT, &posted, 1);
			fresh = 0;
		}
	}
	return ret;
}

/* Each slot must hold the last write aimed at it. */
static uint64_t check_writes(const struct perf_side *s, uint64_t size,
			     uint64_t total, uint64_t w)
{
	uint64_t slot, last, bad = 0;

	for (slot = 0; slot < w && slot < total; slot++) {
		last = slot + (total - 1 - slot) / w * w;
		bad += perf_check(slot_ptr(s, slot), size, last) != 0;
	}
	return bad;
}

static int serve_write(struct perf_side *s, const struct perf_ctl *ph,
		       uint64_t *bad)
{
	uint64_t w = ph->arg[2];
	struct rapt_sge sge = perf_sge(s, slot_ptr(s, 2 * s->hello.window),
				       PERF_CTL_LEN);
	struct rapt_event ev;
	int ret;

	ret = rapt_ep_post_recv(s->data_ep, &sge, 1, UINT64_MAX);
	if (ret)
		return perf_fail(ret, "rapt_ep_post_recv (marker)");
	ret = perf_ctl_send(s, PERF_CTL_READY, NULL, 0);
	/* The writes land unseen: the marker ends the phase, however long
	 * it lasts. */
	if (!ret)
		ret = perf_next_data_wait(s, &ev, PERF_PHASE_WAIT);
	if (!ret)
		ret = perf_dto_ok(&ev, "marker");
	if (!ret && ev.u.dto.op != RAPT_OP_RECV)
		ret = RAPT_EPROTO;
	if (!ret && verifying(s))
		*bad = check_writes(s, ph->arg[0], ph->arg[1], w);
	return ret;
}

static int serve_read(struct perf_side *s, const struct perf_ctl *ph)
{
	struct perf_ctl m;
	uint64_t slot;
	int ret;

	for (slot = 0; slot < ph->arg[2]; slot++)
		perf_fill(slot_ptr(s, slot), ph->arg[0], slot);
	ret = perf_ctl_send(s, PERF_CTL_READY, NULL, 0);
	if (!ret)
		ret = perf_ctl_recv_wait(s, PERF_CTL_DONE, &m,
					 PERF_PHASE_WAIT);
	return ret;
}

int perf_bw_server(struct perf_side *s, const struct perf_ctl *ph)
{
	uint64_t size = ph->arg[0], total = ph->arg[1], bad = 0;
	uint64_t status = (uint64_t)(int64_t)RAPT_ERANGE;
	int ret;

	if (!size || size > s->hello.max_size || !ph->arg[2] ||
	    ph->arg[2] > s->hello.window)
		return perf_ctl_send(s, PERF_CTL_READY, &status, 1);
	switch (s->hello.test) {
	case PERF_BW_SEND:
		ret = serve_send(s, size, total, &bad);
		break;
	case PERF_BW_WRITE:
		ret = serve_write(s, ph, &bad);
		break;
	default:
		ret = serve_read(s, ph);
		break;
	}
	if (!ret)
		ret = perf_ctl_send(s, PERF_CTL_ACK, &bad, 1);
	return ret;
}
