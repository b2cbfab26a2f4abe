/* SPDX-License-Identifier: MIT */
/*
 * ofi_pingpong - libfabric send/recv round trip (FI_EP_MSG), every round
 * trip timed: the client posts a send and waits for both its completion
 * and the reply's receive completion.  One receive is pre-posted on each
 * side; the server echoes each message from the buffer it landed in.
 *
 *   ofi_pingpong [PROVIDER] [-s SIZE] [-n ITERS] [-W WARMUP] [-V]
 *                [-m poll|block] [-v] [-t SECONDS]
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ofi_common.h"

/* One side: buffers A and B for receives, contexts per operation. */
struct side {
	struct ofi_side c;
	uint64_t size;
	struct fi_context2 ctx[3];	/* recv A, recv B, send */
};

#define CTX_SEND 2

static int post_recv(struct side *s, int slot)
{
	return ofi_post_recv(&s->c.f, s->c.ep, s->c.buf + slot * s->size,
			     s->size, s->c.desc, &s->ctx[slot]);
}

static int post_send(struct side *s, int slot)
{
	return ofi_post_send(&s->c.f, s->c.ep, s->c.buf + slot * s->size,
			     s->size, s->c.desc, &s->ctx[CTX_SEND]);
}

/* Wait until a receive and a send have completed, in either order. */
static int wait_both(struct side *s, int need_recv, int need_send)
{
	void *ctx;
	int ret;

	while (need_recv || need_send) {
		ret = ofi_cq_next(&s->c.f, &ctx, 1);
		if (ret < 0)
			return ret;
		if (ctx == &s->ctx[CTX_SEND])
			need_send = 0;
		else
			need_recv = 0;
	}
	return 0;
}

static int side_mem(struct side *s, uint64_t size)
{
	s->size = size;
	return ofi_side_mem(&s->c, 2 * size, FI_SEND | FI_RECV, 1);
}

static int server_accept(struct side *s, const struct ofi_lat_opts *o, int pfd,
			 uint64_t *total)
{
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC };
	struct ofi_cm req;
	int ret;

	ret = ofi_serve_start(&s->c.f, &o->oo, pfd, 64, 64, &req);
	if (ret)
		return ret;
	*total = req.pdata.len;
	ret = side_mem(s, o->size);
	if (!ret)
		ret = ofi_ep_open(&s->c.f, req.info, NULL, &s->c.ep);
	fi_freeinfo(req.info);
	if (!ret)
		ret = post_recv(s, 0);
	if (!ret)
		ret = ofi_accept_wait(&s->c.f, s->c.ep, &pd);
	return ret;
}

static int serve(void *arg, int pfd)
{
	const struct ofi_lat_opts *o = arg;
	struct side s = { 0 };
	uint64_t i, total = 0;
	int ret, cur = 0;

	ret = server_accept(&s, o, pfd, &total);
	for (i = 0; !ret && i < total; i++) {
		ret = wait_both(&s, 1, 0);
		if (!ret)
			ret = post_recv(&s, cur ^ 1);
		if (!ret)
			ret = post_send(&s, cur);
		if (!ret)
			ret = wait_both(&s, 0, 1);
		cur ^= 1;
	}
	if (!ret)
		ofi_drain_shutdown(&s.c.f);
	ofi_side_close(&s.c);
	return ofi_exit_code(ret);
}

static int client_connect(struct side *s, const struct ofi_lat_opts *o,
			  unsigned int port)
{
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC,
				.len = o->warmup + o->iters };
	int ret;

	ret = ofi_init(&s->c.f, &o->oo, port, 64, 64);
	if (!ret)
		ret = side_mem(s, o->size);
	if (!ret)
		ret = ofi_ep_open(&s->c.f, NULL, NULL, &s->c.ep);
	if (!ret)
		ret = post_recv(s, 0);
	if (!ret)
		ret = ofi_connect_wait(&s->c.f, s->c.ep, &pd, NULL);
	return ret;
}

static void fill(char *p, uint64_t len, uint64_t seq)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		p[i] = (char)(seq * 13 + i);
}

static int client(const struct ofi_lat_opts *o, unsigned int port,
		  uint64_t *rtt, uint64_t *elapsed)
{
	struct side s = { 0 };
	uint64_t i, t0, start = 0;
	int ret;

	ret = client_connect(&s, o, port);
	for (i = 0; !ret && i < o->warmup + o->iters; i++) {
		if (o->verify)
			fill(s.c.buf + o->size, o->size, i);
		if (i == o->warmup)
			start = bu_now_ns();
		t0 = bu_now_ns();
		ret = post_send(&s, 1);
		if (!ret)
			ret = wait_both(&s, 1, 1);
		if (!ret && i >= o->warmup)
			rtt[i - o->warmup] = bu_now_ns() - t0;
		if (!ret && o->verify && memcmp(s.c.buf, s.c.buf + o->size,
						o->size)) {
			fprintf(stderr, "verify: echo %llu differs\n",
				(unsigned long long)i);
			ret = -FI_EOTHER;
		}
		if (!ret)
			ret = post_recv(&s, 0);
	}
	*elapsed = bu_now_ns() - start;
	ofi_side_hangup(&s.c);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct ofi_lat_prog p = {
		.name = "ofi_pingpong", .rate_key = "rt_per_s", .oneway = 1,
		.serve = serve, .client = client,
	};

	return ofi_lat_main(argc, argv, &p);
}
