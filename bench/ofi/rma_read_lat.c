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

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_common.h"

#define MSG_LEN 8
#define MR_KEY 0x5a

struct opts {
	struct ofi_opts oo;
	uint64_t size;
	uint64_t iters;
	uint64_t warmup;
	int verify;
};

/* The region (@size bytes) and a small message area after it. */
struct side {
	struct ofi f;
	struct fid_ep *ep;
	struct fid_mr *mr;
	char *buf;
	void *desc;
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
	s->buf = calloc(1, size + MSG_LEN);
	if (!s->buf)
		return -FI_ENOMEM;
	if (ofi_mr(&s->f, s->buf, size + MSG_LEN, access, MR_KEY, &s->mr))
		return -FI_EOTHER;
	s->desc = fi_mr_desc(s->mr);
	return 0;
}

static void side_close(struct side *s)
{
	if (s->ep)
		fi_close(&s->ep->fid);
	if (s->mr)
		fi_close(&s->mr->fid);
	ofi_fini(&s->f);
	free(s->buf);
}

static int serve(void *arg, int pfd)
{
	struct opts *o = arg;
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC };
	struct side s = { 0 };
	struct ofi_cm req;
	uint64_t i;
	int ret;

	o->oo.rma = 1;
	ret = ofi_serve_start(&s.f, &o->oo, pfd, 64, 64, &req);
	if (ret)
		return ofi_exit_code(ret);
	ret = side_mem(&s, o->size, FI_REMOTE_READ | FI_SEND | FI_RECV);
	if (!ret)
		ret = ofi_ep_open(&s.f, req.info, NULL, &s.ep);
	fi_freeinfo(req.info);
	for (i = 0; i < o->size; i++)
		s.buf[i] = (char)pattern(i);
	if (!ret)
		ret = ofi_post_recv(&s.f, s.ep, s.buf + o->size, MSG_LEN,
				    s.desc, &s.ctx[0]);
	pd.addr = ofi_rma_base(&s.f, s.buf);
	pd.key = s.mr ? fi_mr_key(s.mr) : 0;
	pd.len = o->size;
	if (!ret)
		ret = ofi_accept_wait(&s.f, s.ep, &pd);
	/* The reads need nothing from us but CQ reads (progress). */
	if (!ret)
		ret = ofi_wait_ctx(&s.f, &s.ctx[0], NULL);
	if (!ret)
		ofi_drain_shutdown(&s.f);
	side_close(&s);
	return ofi_exit_code(ret);
}

static int check(const struct side *s)
{
	uint64_t i;

	for (i = 0; i < s->size; i++)
		if ((uint8_t)s->buf[i] != pattern(i))
			return -1;
	return 0;
}

static int read_loop(struct side *s, const struct opts *o,
		     const struct ofi_pdata *peer, uint64_t *lat,
		     uint64_t *elapsed)
{
	uint64_t i, t0, start = 0;
	ssize_t r;
	int ret = 0;

	for (i = 0; !ret && i < o->warmup + o->iters; i++) {
		if (o->verify)
			memset(s->buf, 0, o->size);
		if (i == o->warmup)
			start = bu_now_ns();
		t0 = bu_now_ns();
		while ((r = fi_read(s->ep, s->buf, o->size, s->desc, 0,
				    peer->addr, peer->key, &s->ctx[0])) ==
		       -FI_EAGAIN)
			ofi_progress(&s->f);
		if (r) {
			ofi_err("fi_read", (int)r);
			return (int)r;
		}
		ret = ofi_wait_ctx(&s->f, &s->ctx[0], NULL);
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

static int client(struct opts *o, unsigned int port, uint64_t *lat,
		  uint64_t *elapsed)
{
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC }, peer;
	struct side s = { 0 };
	int ret;

	o->oo.rma = 1;
	ret = ofi_init(&s.f, &o->oo, port, 64, 64);
	if (!ret)
		ret = side_mem(&s, o->size, FI_READ | FI_SEND | FI_RECV);
	if (!ret)
		ret = ofi_ep_open(&s.f, NULL, NULL, &s.ep);
	if (!ret)
		ret = ofi_connect_wait(&s.f, s.ep, &pd, &peer);
	if (!ret && peer.len < o->size) {
		fprintf(stderr, "target region too small\n");
		ret = -FI_EOTHER;
	}
	if (!ret)
		ret = read_loop(&s, o, &peer, lat, elapsed);
	/* The final message tells the target to stop. */
	if (!ret)
		ret = ofi_post_send(&s.f, s.ep, s.buf + o->size, MSG_LEN,
				    s.desc, &s.ctx[1]);
	if (!ret)
		ret = ofi_wait_ctx(&s.f, &s.ctx[1], NULL);
	if (s.ep)
		fi_shutdown(s.ep, 0);
	side_close(&s);
	return ret;
}

static void usage(void)
{
	fprintf(stderr, "usage: ofi_rma_read_lat [PROVIDER] [-s SIZE] "
		"[-n ITERS] [-W WARMUP] [-V] " OFI_COMMON_USAGE "\n");
	exit(BU_EXIT_USAGE);
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt(argc, argv, "s:n:W:Vh" OFI_COMMON_OPTS)) != -1) {
		if (c == 's' && !bu_parse_size(optarg, &o->size) && o->size)
			continue;
		if (c == 'n' && !bu_parse_uint(optarg, &o->iters) && o->iters)
			continue;
		if (c == 'W' && !bu_parse_uint(optarg, &o->warmup))
			continue;
		if (c == 'V') {
			o->verify = 1;
			continue;
		}
		if (c != 'h' && !ofi_parse_common(c, optarg, &o->oo))
			continue;
		usage();
	}
	if (optind < argc)
		o->oo.prov = argv[optind++];
	if (optind != argc)
		usage();
}

int main(int argc, char **argv)
{
	struct opts o = { .oo = { .prov = "tcp", .timeout = 120 },
			  .size = 8, .iters = 100000, .warmup = 1000 };
	uint64_t elapsed = 0, *lat;
	struct bu_server srv;
	struct bu_stats st;
	unsigned int port;
	int ret, sret;

	parse(argc, argv, &o);
	bu_watchdog((unsigned int)o.oo.timeout);
	lat = calloc(o.iters, sizeof(*lat));
	if (!lat)
		return BU_EXIT_FAIL;
	bu_line_begin("ofi_rma_read_lat", "ofi");
	bu_kv("prov", "%s", o.oo.prov);
	bu_kv("mode", "%s", o.oo.block ? "block" : "poll");
	bu_kv("bytes", "%llu", (unsigned long long)o.size);
	bu_kv("iters", "%llu", (unsigned long long)o.iters);
	sret = bu_fork_server(serve, &o, &srv, &port);
	if (sret)
		return bu_fail_early(sret);
	ret = client(&o, port, lat, &elapsed);
	if (!ret) {
		bu_stats(lat, o.iters, &st);
		bu_kv("rtt_med_us", "%.2f", st.med / 1e3);
		bu_kv("rtt_min_us", "%.2f", st.min / 1e3);
		bu_kv("rtt_p99_us", "%.2f", st.p99 / 1e3);
		bu_kv("rtt_mean_us", "%.2f", st.mean / 1e3);
		bu_kv("reads_per_s", "%.0f", o.iters * 1e9 / elapsed);
	}
	sret = bu_server_finish(&srv);
	bu_line_end(!ret && !sret ? "ok" : "fail");
	free(lat);
	return !ret && !sret ? BU_EXIT_OK : BU_EXIT_FAIL;
}
