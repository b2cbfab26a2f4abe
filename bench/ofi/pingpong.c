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

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_common.h"

struct opts {
	struct ofi_opts oo;
	uint64_t size;
	uint64_t iters;
	uint64_t warmup;
	int verify;
};

/* One side: buffers A and B for receives, contexts per operation. */
struct side {
	struct ofi f;
	struct fid_ep *ep;
	struct fid_mr *mr;
	char *buf;
	void *desc;
	uint64_t size;
	struct fi_context2 ctx[3];	/* recv A, recv B, send */
};

#define CTX_SEND 2

static int post_recv(struct side *s, int slot)
{
	return ofi_post_recv(&s->f, s->ep, s->buf + slot * s->size, s->size,
			     s->desc, &s->ctx[slot]);
}

static int post_send(struct side *s, int slot)
{
	return ofi_post_send(&s->f, s->ep, s->buf + slot * s->size, s->size,
			     s->desc, &s->ctx[CTX_SEND]);
}

/* Wait until a receive and a send have completed, in either order. */
static int wait_both(struct side *s, int need_recv, int need_send)
{
	void *ctx;
	int ret;

	while (need_recv || need_send) {
		ret = ofi_cq_next(&s->f, &ctx, 1);
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
	s->buf = calloc(2, size);
	if (!s->buf)
		return -FI_ENOMEM;
	if (ofi_mr(&s->f, s->buf, 2 * size, FI_SEND | FI_RECV, 1, &s->mr))
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

static int server_accept(struct side *s, const struct opts *o, int pfd,
			 uint64_t *total)
{
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC };
	struct ofi_cm req;
	int ret;

	ret = ofi_serve_start(&s->f, &o->oo, pfd, 64, 64, &req);
	if (ret)
		return ret;
	*total = req.pdata.len;
	ret = side_mem(s, o->size);
	if (!ret)
		ret = ofi_ep_open(&s->f, req.info, NULL, &s->ep);
	fi_freeinfo(req.info);
	if (!ret)
		ret = post_recv(s, 0);
	if (!ret)
		ret = ofi_accept_wait(&s->f, s->ep, &pd);
	return ret;
}

static int serve(void *arg, int pfd)
{
	const struct opts *o = arg;
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
		ofi_drain_shutdown(&s.f);
	side_close(&s);
	return ofi_exit_code(ret);
}

static int client_connect(struct side *s, const struct opts *o,
			  unsigned int port)
{
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC,
				.len = o->warmup + o->iters };
	int ret;

	ret = ofi_init(&s->f, &o->oo, port, 64, 64);
	if (!ret)
		ret = side_mem(s, o->size);
	if (!ret)
		ret = ofi_ep_open(&s->f, NULL, NULL, &s->ep);
	if (!ret)
		ret = post_recv(s, 0);
	if (!ret)
		ret = ofi_connect_wait(&s->f, s->ep, &pd, NULL);
	return ret;
}

static void fill(char *p, uint64_t len, uint64_t seq)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		p[i] = (char)(seq * 13 + i);
}

static int client(const struct opts *o, unsigned int port, uint64_t *rtt,
		  uint64_t *elapsed)
{
	struct side s = { 0 };
	uint64_t i, t0, start = 0;
	int ret;

	ret = client_connect(&s, o, port);
	for (i = 0; !ret && i < o->warmup + o->iters; i++) {
		if (o->verify)
			fill(s.buf + o->size, o->size, i);
		if (i == o->warmup)
			start = bu_now_ns();
		t0 = bu_now_ns();
		ret = post_send(&s, 1);
		if (!ret)
			ret = wait_both(&s, 1, 1);
		if (!ret && i >= o->warmup)
			rtt[i - o->warmup] = bu_now_ns() - t0;
		if (!ret && o->verify && memcmp(s.buf, s.buf + o->size,
						o->size)) {
			fprintf(stderr, "verify: echo %llu differs\n",
				(unsigned long long)i);
			ret = -FI_EOTHER;
		}
		if (!ret)
			ret = post_recv(&s, 0);
	}
	*elapsed = bu_now_ns() - start;
	if (s.ep)
		fi_shutdown(s.ep, 0);
	side_close(&s);
	return ret;
}

static void usage(void)
{
	fprintf(stderr, "usage: ofi_pingpong [PROVIDER] [-s SIZE] [-n ITERS] "
		"[-W WARMUP] [-V] " OFI_COMMON_USAGE "\n");
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
	uint64_t elapsed = 0, *rtt;
	struct bu_server srv;
	struct bu_stats st;
	unsigned int port;
	int ret, sret;

	parse(argc, argv, &o);
	bu_watchdog((unsigned int)o.oo.timeout);
	rtt = calloc(o.iters, sizeof(*rtt));
	if (!rtt)
		return BU_EXIT_FAIL;
	bu_line_begin("ofi_pingpong", "ofi");
	bu_kv("prov", "%s", o.oo.prov);
	bu_kv("mode", "%s", o.oo.block ? "block" : "poll");
	bu_kv("bytes", "%llu", (unsigned long long)o.size);
	bu_kv("iters", "%llu", (unsigned long long)o.iters);
	sret = bu_fork_server(serve, &o, &srv, &port);
	if (sret)
		return bu_fail_early(sret);
	ret = client(&o, port, rtt, &elapsed);
	if (!ret) {
		bu_stats(rtt, o.iters, &st);
		bu_kv("rtt_med_us", "%.2f", st.med / 1e3);
		bu_kv("rtt_min_us", "%.2f", st.min / 1e3);
		bu_kv("rtt_p99_us", "%.2f", st.p99 / 1e3);
		bu_kv("rtt_mean_us", "%.2f", st.mean / 1e3);
		bu_kv("oneway_med_us", "%.2f", st.med / 2e3);
		bu_kv("rt_per_s", "%.0f", o.iters * 1e9 / elapsed);
	}
	sret = bu_server_finish(&srv);
	bu_line_end(!ret && !sret ? "ok" : "fail");
	free(rtt);
	return !ret && !sret ? BU_EXIT_OK : BU_EXIT_FAIL;
}
