/* SPDX-License-Identifier: MIT */
/*
 * ofi_rma_bw - libfabric RDMA write (or read) bandwidth: -s bytes per
 * operation, -w operations outstanding, operation i using local slot
 * i mod w and remote slot i mod w.  After the last completion the client
 * sends a "fin" message; the clock stops at the target's acknowledgement,
 * so every byte has been placed at the target.  With -V the target checks
 * every slot holds the last write aimed at it (reads: the client checks
 * each read).
 *
 *   ofi_rma_bw [PROVIDER] [-o write|read] [-s SIZE] [-w WINDOW] [-n OPS]
 *              [-W WARMUP] [-V] [-m poll|block] [-v] [-t SECONDS]
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_common.h"

#define MSG_LEN 8
#define MR_KEY 0x5b
#define MAX_WINDOW 1024

struct opts {
	struct ofi_opts oo;
	uint64_t size;
	uint64_t window;
	uint64_t ops;
	uint64_t warmup;
	int read;
	int verify;
};

/* @window slots of @size bytes, then a fin and an ack message area. */
struct side {
	struct ofi_side c;
	uint64_t size;
	uint64_t window;
	char *msg;
	uint8_t busy[MAX_WINDOW];
	struct fi_context2 ctx[MAX_WINDOW + 2];
};

static uint8_t pattern(uint64_t op, uint64_t k)
{
	return (uint8_t)(op * 131 + k * 7);
}

static void fill(char *p, uint64_t len, uint64_t op)
{
	uint64_t k;

	for (k = 0; k < len; k++)
		p[k] = (char)pattern(op, k);
}

static int check(const char *p, uint64_t len, uint64_t op)
{
	uint64_t k;

	for (k = 0; k < len; k++)
		if ((uint8_t)p[k] != pattern(op, k))
			return -1;
	return 0;
}

static int side_mem(struct side *s, const struct opts *o, uint64_t access)
{
	uint64_t slots = o->size * o->window;
	int ret;

	s->size = o->size;
	s->window = o->window;
	ret = ofi_side_mem(&s->c, slots + 2 * MSG_LEN, access, MR_KEY);
	if (s->c.buf)
		s->msg = s->c.buf + slots;
	return ret;
}

/* Target: each slot must hold the last write aimed at it. */
static uint64_t verify_writes(const struct side *s, uint64_t total)
{
	uint64_t slot, last, bad = 0;

	for (slot = 0; slot < s->window && slot < total; slot++) {
		last = slot + (total - 1 - slot) / s->window * s->window;
		bad += check(s->c.buf + slot * s->size, s->size, last) != 0;
	}
	return bad;
}

static int serve_run(struct side *s, struct opts *o, int pfd)
{
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC };
	uint64_t slot, bad = 0, total;
	struct ofi_cm req;
	int ret;

	ret = ofi_serve_start(&s->c.f, &o->oo, pfd, 64, 2 * MAX_WINDOW, &req);
	if (ret)
		return ret;
	total = req.pdata.len;
	ret = side_mem(s, o, FI_REMOTE_WRITE | FI_REMOTE_READ | FI_SEND |
		       FI_RECV);
	if (!ret)
		ret = ofi_ep_open(&s->c.f, req.info, NULL, &s->c.ep);
	fi_freeinfo(req.info);
	if (ret)
		return ret;
	for (slot = 0; o->read && slot < s->window; slot++)
		fill(s->c.buf + slot * s->size, s->size, slot);
	ret = ofi_post_recv(&s->c.f, s->c.ep, s->msg, MSG_LEN, s->c.desc,
			    &s->ctx[0]);
	pd.addr = ofi_rma_base(&s->c.f, s->c.buf);
	pd.key = fi_mr_key(s->c.mr);
	pd.len = s->size * s->window;
	if (!ret)
		ret = ofi_accept_wait(&s->c.f, s->c.ep, &pd);
	if (!ret)
		ret = ofi_wait_ctx(&s->c.f, &s->ctx[0], NULL);
	if (ret)
		return ret;
	if (o->verify && !o->read) {
		bad = verify_writes(s, total);
		bu_report(pfd, "verify", "%s", bad ? "fail" : "ok");
	}
	memcpy(s->msg + MSG_LEN, &bad, sizeof(bad));
	ret = ofi_post_send(&s->c.f, s->c.ep, s->msg + MSG_LEN, MSG_LEN,
			    s->c.desc, &s->ctx[1]);
	if (!ret)
		ret = ofi_wait_ctx(&s->c.f, &s->ctx[1], NULL);
	if (!ret)
		ofi_drain_shutdown(&s->c.f);
	return ret ? ret : (bad ? -FI_EOTHER : 0);
}

static int serve(void *arg, int pfd)
{
	struct opts *o = arg;
	struct side s = { 0 };
	int ret;

	o->oo.rma = 1;
	ret = serve_run(&s, o, pfd);
	ofi_side_close(&s.c);
	return ofi_exit_code(ret);
}

static int post_op(struct side *s, const struct opts *o,
		   const struct ofi_pdata *peer, uint64_t op)
{
	uint64_t slot = op % s->window;
	char *local = s->c.buf + slot * s->size;
	uint64_t raddr = peer->addr + slot * s->size;
	ssize_t r;

	if (o->verify && !o->read)
		fill(local, s->size, op);
	for (;;) {
		if (o->read)
			r = fi_read(s->c.ep, local, s->size, s->c.desc, 0,
				    raddr, peer->key, &s->ctx[slot]);
		else
			r = fi_write(s->c.ep, local, s->size, s->c.desc, 0,
				     raddr, peer->key, &s->ctx[slot]);
		if (r != -FI_EAGAIN)
			break;
		ofi_progress(&s->c.f);
	}
	if (r) {
		ofi_err(o->read ? "fi_read" : "fi_write", (int)r);
		return (int)r;
	}
	s->busy[slot] = 1;
	return 0;
}

/* Take one completion of a slot; check a read's data with -V. */
static int reap(struct side *s, const struct opts *o, int *outstanding)
{
	struct fi_context2 *c;
	uint64_t slot;
	void *ctx;
	int ret;

	ret = ofi_cq_next(&s->c.f, &ctx, 1);
	if (ret < 0)
		return ret;
	c = ctx;
	slot = (uint64_t)(c - s->ctx);
	if (slot >= s->window) {
		fprintf(stderr, "unexpected completion\n");
		return -FI_EOTHER;
	}
	s->busy[slot] = 0;
	(*outstanding)--;
	if (o->verify && o->read &&
	    check(s->c.buf + slot * s->size, s->size, slot)) {
		fprintf(stderr, "verify: read into slot %llu differs\n",
			(unsigned long long)slot);
		return -FI_EOTHER;
	}
	return 0;
}

/* Operations [@first, @end) with the window, then drain. */
static int run_ops(struct side *s, const struct opts *o,
		   const struct ofi_pdata *peer, uint64_t first, uint64_t end)
{
	int outstanding = 0, ret = 0;
	uint64_t op = first;

	while (!ret && (op < end || outstanding)) {
		if (op < end && !s->busy[op % s->window]) {
			ret = post_op(s, o, peer, op++);
			outstanding++;
			continue;
		}
		ret = reap(s, o, &outstanding);
	}
	return ret;
}

struct result {
	uint64_t elapsed;
	uint64_t local;
	uint64_t target_bad;
};

static int client_run(struct side *s, struct opts *o, unsigned int port,
		      struct result *res)
{
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC,
				.len = o->warmup + o->ops }, peer;
	uint64_t start;
	int ret;

	ret = ofi_init(&s->c.f, &o->oo, port, 64, 2 * MAX_WINDOW);
	if (!ret)
		ret = side_mem(s, o, FI_READ | FI_WRITE | FI_SEND | FI_RECV);
	if (!ret)
		ret = ofi_ep_open(&s->c.f, NULL, NULL, &s->c.ep);
	if (!ret)
		ret = ofi_post_recv(&s->c.f, s->c.ep, s->msg + MSG_LEN, MSG_LEN,
				    s->c.desc, &s->ctx[MAX_WINDOW + 1]);
	if (!ret)
		ret = ofi_connect_wait(&s->c.f, s->c.ep, &pd, &peer);
	if (!ret && peer.len < s->size * s->window) {
		fprintf(stderr, "target region too small\n");
		ret = -FI_EOTHER;
	}
	if (!ret)
		ret = run_ops(s, o, &peer, 0, o->warmup);
	start = bu_now_ns();
	if (!ret)
		ret = run_ops(s, o, &peer, o->warmup, o->warmup + o->ops);
	res->local = bu_now_ns() - start;
	if (!ret)
		ret = ofi_post_send(&s->c.f, s->c.ep, s->msg, MSG_LEN,
				    s->c.desc, &s->ctx[MAX_WINDOW]);
	/* The ack and the fin's completion, in either order. */
	if (!ret)
		ret = ofi_wait_ctx(&s->c.f, &s->ctx[MAX_WINDOW + 1], NULL);
	res->elapsed = bu_now_ns() - start;
	if (!ret)
		memcpy(&res->target_bad, s->msg + MSG_LEN, sizeof(uint64_t));
	return ret;
}

static int client(struct opts *o, unsigned int port, struct result *res)
{
	struct side s = { 0 };
	int ret;

	o->oo.rma = 1;
	ret = client_run(&s, o, port, res);
	ofi_side_hangup(&s.c);
	return ret;
}

static void usage(void)
{
	ofi_usage("ofi_rma_bw", "[-o write|read] [-s SIZE] [-w WINDOW] "
		  "[-n OPS] [-W WARMUP] [-V]");
}

static int parse_one(int c, struct opts *o)
{
	switch (c) {
	case 'o':
		if (strcmp(optarg, "write") && strcmp(optarg, "read"))
			return -1;
		o->read = !strcmp(optarg, "read");
		return 0;
	case 's':
		return bu_parse_size(optarg, &o->size) || !o->size;
	case 'w':
		return bu_parse_uint(optarg, &o->window) || !o->window ||
		       o->window > MAX_WINDOW;
	case 'n':
		return bu_parse_uint(optarg, &o->ops) || !o->ops;
	case 'W':
		return bu_parse_uint(optarg, &o->warmup);
	case 'V':
		o->verify = 1;
		return 0;
	case 'h':
		return -1;
	}
	return ofi_parse_common(c, optarg, &o->oo);
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt(argc, argv, "o:s:w:n:W:Vh" OFI_COMMON_OPTS)) != -1)
		if (parse_one(c, o))
			usage();
	if (ofi_parse_prov(argc, argv, &o->oo))
		usage();
}

int main(int argc, char **argv)
{
	struct opts o = { .oo = { .prov = "tcp", .timeout = 120 },
			  .size = 65536, .window = 16, .ops = 16384,
			  .warmup = 256 };
	struct result res = { 0 };
	struct bu_server srv;
	unsigned int port;
	int ret, sret;
	double mbps;

	parse(argc, argv, &o);
	bu_watchdog((unsigned int)o.oo.timeout);
	bu_line_begin("ofi_rma_bw", "ofi");
	bu_kv("prov", "%s", o.oo.prov);
	bu_kv("op", "%s", o.read ? "read" : "write");
	bu_kv("mode", "%s", o.oo.block ? "block" : "poll");
	bu_kv("bytes", "%llu", (unsigned long long)o.size);
	bu_kv("window", "%llu", (unsigned long long)o.window);
	bu_kv("ops", "%llu", (unsigned long long)o.ops);
	sret = bu_fork_server(serve, &o, &srv, &port);
	if (sret)
		return bu_fail_early(sret);
	ret = client(&o, port, &res);
	if (!ret) {
		mbps = (double)o.size * o.ops * 1e3 / res.elapsed;
		bu_kv("MBps", "%.1f", mbps);
		bu_kv("Gbps", "%.2f", mbps * 8 / 1e3);
		bu_kv("msg_per_s", "%.0f", o.ops * 1e9 / res.elapsed);
		bu_kv("local_MBps", "%.0f",
		      (double)o.size * o.ops * 1e3 / res.local);
		if (o.verify && o.read)
			bu_kv("verify", "ok");
	}
	sret = bu_server_finish(&srv);
	bu_line_end(!ret && !sret ? "ok" : "fail");
	return !ret && !sret ? BU_EXIT_OK : BU_EXIT_FAIL;
}
