/* SPDX-License-Identifier: MIT */
/*
 * raw_pingpong - TCP round trip on 127.0.0.1, the floor any transport over
 * kernel TCP is measured against.  TCP_NODELAY on both sides; -m poll
 * busy-polls recv(MSG_DONTWAIT), -m block uses blocking read().  Every
 * round trip is timed.  -T US: the client pauses US microseconds between
 * round trips (spinning, not timed), as rapt_perf --think.
 *
 *   raw_pingpong [-s SIZE] [-n ITERS] [-W WARMUP] [-m poll|block] [-V]
 *                [-T US] [-t SECONDS]
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bench_util.h"
#include "raw_common.h"

struct opts {
	uint64_t size;
	uint64_t iters;
	uint64_t warmup;
	uint64_t think_us;
	int spin;
	int verify;
};

static int rd(const struct opts *o, int fd, void *buf)
{
	return o->spin ? raw_read_spin(fd, buf, o->size) :
			 raw_read_full(fd, buf, o->size);
}

static int serve(void *arg, int pfd)
{
	const struct opts *o = arg;
	unsigned int port;
	int lfd, fd, ret = BU_EXIT_FAIL, r;
	char *buf = malloc(o->size);

	lfd = raw_listen(&port, 16);
	if (lfd < 0 || !buf)
		return BU_EXIT_FAIL;
	bu_announce_port(pfd, port);
	fd = raw_accept(lfd);
	if (fd < 0 || raw_nodelay(fd))
		goto out;
	for (;;) {
		r = rd(o, fd, buf);
		if (r == 1)
			break;
		if (r < 0 || raw_write_full(fd, buf, o->size))
			goto out;
	}
	ret = BU_EXIT_OK;
out:
	free(buf);
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
	char *sbuf = calloc(1, o->size), *rbuf = calloc(1, o->size);
	uint64_t i, t0, t1, start = 0;
	int fd, ret = -1;

	fd = raw_connect(port);
	if (fd < 0 || !sbuf || !rbuf || raw_nodelay(fd))
		goto out;
	for (i = 0; i < o->warmup + o->iters; i++) {
		if (o->verify)
			fill(sbuf, o->size, i);
		if (i && o->think_us)
			bu_spin_ns(o->think_us * 1000);
		if (i == o->warmup)
			start = bu_now_ns();
		t0 = bu_now_ns();
		if (raw_write_full(fd, sbuf, o->size) || rd(o, fd, rbuf))
			goto out;
		t1 = bu_now_ns();
		if (i >= o->warmup)
			rtt[i - o->warmup] = t1 - t0;
		if (o->verify && memcmp(sbuf, rbuf, o->size)) {
			fprintf(stderr, "verify: echo %llu differs\n",
				(unsigned long long)i);
			goto out;
		}
	}
	*elapsed = bu_now_ns() - start;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	free(sbuf);
	free(rbuf);
	return ret;
}

static void usage(void)
{
	fprintf(stderr, "usage: raw_pingpong [-s SIZE] [-n ITERS] [-W WARMUP] "
		"[-m poll|block] [-V] [-T US] [-t SECONDS]\n");
	exit(BU_EXIT_USAGE);
}

static void parse(int argc, char **argv, struct opts *o, uint64_t *tmo)
{
	int c;

	while ((c = getopt(argc, argv, "s:n:W:m:VT:t:h")) != -1) {
		switch (c) {
		case 's':
			if (bu_parse_size(optarg, &o->size) || !o->size)
				usage();
			break;
		case 'n':
			if (bu_parse_uint(optarg, &o->iters) || !o->iters)
				usage();
			break;
		case 'W':
			if (bu_parse_uint(optarg, &o->warmup))
				usage();
			break;
		case 'm':
			if (strcmp(optarg, "poll") && strcmp(optarg, "block"))
				usage();
			o->spin = !strcmp(optarg, "poll");
			break;
		case 'V':
			o->verify = 1;
			break;
		case 'T':
			if (bu_parse_uint(optarg, &o->think_us))
				usage();
			break;
		case 't':
			if (bu_parse_uint(optarg, tmo))
				usage();
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
}

int main(int argc, char **argv)
{
	struct opts o = { .size = 8, .iters = 100000, .warmup = 1000,
			  .spin = 1 };
	uint64_t tmo = 120, elapsed = 0, *rtt;
	struct bu_server srv;
	struct bu_stats st;
	unsigned int port;
	int ret, sret;

	parse(argc, argv, &o, &tmo);
	bu_watchdog((unsigned int)tmo);
	rtt = calloc(o.iters, sizeof(*rtt));
	if (!rtt)
		return BU_EXIT_FAIL;
	bu_line_begin("raw_pingpong", "raw");
	bu_kv("mode", "%s", o.spin ? "poll" : "block");
	bu_kv("bytes", "%llu", (unsigned long long)o.size);
	bu_kv("iters", "%llu", (unsigned long long)o.iters);
	if (o.think_us)
		bu_kv("think_us", "%llu", (unsigned long long)o.think_us);
	if (bu_fork_server(serve, &o, &srv, &port)) {
		bu_line_end("fail");
		return BU_EXIT_FAIL;
	}
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
