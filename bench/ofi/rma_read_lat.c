/* SPDX-License-Identifier: MIT */
/*
 * ofi_rma_read_lat - libfabric RDMA read latency: one fi_read() at a time,
 * timed from the call to its completion.  The target only reads its CQ
 * (it posts nothing for the reads) until the client's final message.
 *
 *   ofi_rma_read_lat [PROVIDER] [-s SIZE] [-n ITERS] [-W WARMUP] [-V]
 *                    [-m poll|block] [-v] [-t SECONDS]
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ofi_common.h"

#define MSG_LEN 8
#define MR_KEY 0x5a

/* The region (@size bytes) and a small message area after it. */
struct side {
	struct ofi_side c;
	uint64_t size;
	struct fi_context2 ctx[2];
};

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 7 + 3);
}

static int side_mem(struct side *s, uint64_t size, uint64_t access)
{
	s->size = size;
	return ofi_side_mem(&s->c, size + MSG_LEN, access, MR_KEY);
}

static int serve(void *arg, int pfd)
{
	const struct ofi_lat_opts *o = arg;
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC };
	struct side s = { 0 };
	struct ofi_cm req;
	uint64_t i;
	int ret;

	ret = ofi_serve_start(&s.c.f, &o->oo, pfd, 64, 64, &req);
	if (ret)
		return ofi_exit_code(ret);
	ret = side_mem(&s, o->size, FI_REMOTE_READ | FI_SEND | FI_RECV);
	if (!ret)
		ret = ofi_ep_open(&s.c.f, req.info, NULL, &s.c.ep);
	fi_freeinfo(req.info);
	for (i = 0; i < o->size; i++)
		s.c.buf[i] = (char)pattern(i);
	if (!ret)
		ret = ofi_post_recv(&s.c.f, s.c.ep, s.c.buf + o->size, MSG_LEN,
				    s.c.desc, &s.ctx[0]);
	pd.addr = ofi_rma_base(&s.c.f, s.c.buf);
	pd.key = s.c.mr ? fi_mr_key(s.c.mr) : 0;
	pd.len = o->size;
	if (!ret)
		ret = ofi_accept_wait(&s.c.f, s.c.ep, &pd);
	/* The reads need nothing from us but CQ reads (progress). */
	if (!ret)
		ret = ofi_wait_ctx(&s.c.f, &s.ctx[0], NULL);
	if (!ret)
		ofi_drain_shutdown(&s.c.f);
	ofi_side_close(&s.c);
	return ofi_exit_code(ret);
}

static int check(const struct side *s)
{
	uint64_t i;

	for (i = 0; i < s->size; i++)
		if ((uint8_t)s->c.buf[i] != pattern(i))
			return -1;
	return 0;
}

static int read_loop(struct side *s, const struct ofi_lat_opts *o,
		     const struct ofi_pdata *peer, uint64_t *lat,
		     uint64_t *elapsed)
{
	uint64_t i, t0, start = 0;
	ssize_t r;
	int ret = 0;

	for (i = 0; !ret && i < o->warmup + o->iters; i++) {
		if (o->verify)
			memset(s->c.buf, 0, o->size);
		if (i == o->warmup)
			start = bu_now_ns();
		t0 = bu_now_ns();
		while ((r = fi_read(s->c.ep, s->c.buf, o->size, s->c.desc, 0,
				    peer->addr, peer->key, &s->ctx[0])) ==
		       -FI_EAGAIN)
			ofi_progress(&s->c.f);
		if (r) {
			ofi_err("fi_read", (int)r);
			return (int)r;
		}
		ret = ofi_wait_ctx(&s->c.f, &s->ctx[0], NULL);
		if (!ret && i >= o->warmup)
			lat[i - o->warmup] = bu_now_ns() - t0;
		if (!ret && o->verify && check(s)) {
			fprintf(stderr, "verify: read %llu differs\n",
				(unsigned long long)i);
			ret = -FI_EOTHER;
		}
	}
	*elapsed = bu_now_ns() - start;
	return ret;
}

static int client(const struct ofi_lat_opts *o, unsigned int port,
		  uint64_t *lat, uint64_t *elapsed)
{
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC }, peer;
	struct side s = { 0 };
	int ret;

	ret = ofi_init(&s.c.f, &o->oo, port, 64, 64);
	if (!ret)
		ret = side_mem(&s, o->size, FI_READ | FI_SEND | FI_RECV);
	if (!ret)
		ret = ofi_ep_open(&s.c.f, NULL, NULL, &s.c.ep);
	if (!ret)
		ret = ofi_connect_wait(&s.c.f, s.c.ep, &pd, &peer);
	if (!ret && peer.len < o->size) {
		fprintf(stderr, "target region too small\n");
		ret = -FI_EOTHER;
	}
	if (!ret)
		ret = read_loop(&s, o, &peer, lat, elapsed);
	/* The final message tells the target to stop. */
	if (!ret)
		ret = ofi_post_send(&s.c.f, s.c.ep, s.c.buf + o->size, MSG_LEN,
				    s.c.desc, &s.ctx[1]);
	if (!ret)
		ret = ofi_wait_ctx(&s.c.f, &s.ctx[1], NULL);
	ofi_side_hangup(&s.c);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct ofi_lat_prog p = {
		.name = "ofi_rma_read_lat", .rate_key = "reads_per_s",
		.rma = 1, .serve = serve, .client = client,
	};

	return ofi_lat_main(argc, argv, &p);
}
