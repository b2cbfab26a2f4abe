/* SPDX-License-Identifier: MIT */
/*
 * raw_stream - one TCP stream on 127.0.0.1, writes of -s bytes (default
 * 1 MiB, the kernel's best single-stream case; iperf3 -l 1M).  The clock
 * runs from the first write to a 1-byte acknowledgement the receiver sends
 * once it has read every byte, so the figure is data delivered.
 *
 *   raw_stream [-s SIZE] [-n WRITES] [-V] [-t SECONDS]
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
	uint64_t count;
	int verify;
};

static uint8_t pattern(uint64_t off)
{
	return (uint8_t)(off * 7 + (off >> 12));
}

/* Read everything; with -V check each byte against its stream offset. */
static int drain(const struct opts *o, int fd, char *buf, uint64_t *bad)
{
	uint64_t total = o->size * o->count, got = 0, i;
	ssize_t r;

	while (got < total) {
		r = read(fd, buf, o->size < total - got ? o->size :
			 total - got);
		if (r <= 0) {
			perror("read");
			return -1;
		}
		if (o->verify)
			for (i = 0; i < (uint64_t)r; i++)
				*bad += (uint8_t)buf[i] != pattern(got + i);
		got += (uint64_t)r;
	}
	return 0;
}

static int serve(void *arg, int pfd)
{
	const struct opts *o = arg;
	unsigned int port;
	uint64_t bad = 0;
	int lfd, fd, ret = BU_EXIT_FAIL;
	char *buf = malloc(o->size);

	lfd = raw_listen(&port, 16);
	if (lfd < 0 || !buf)
		return BU_EXIT_FAIL;
	bu_announce_port(pfd, port);
	fd = raw_accept(lfd);
	if (fd < 0 || drain(o, fd, buf, &bad))
		goto out;
	if (raw_write_full(fd, "A", 1))
		goto out;
	if (o->verify)
		bu_report(pfd, "verify", "%s", bad ? "fail" : "ok");
	ret = bad ? BU_EXIT_FAIL : BU_EXIT_OK;
out:
	free(buf);
	return ret;
}

static int client(const struct opts *o, unsigned int port, uint64_t *elapsed)
{
	char *buf = malloc(o->size), ack;
	uint64_t i, t0;
	int fd, ret = -1;

	fd = raw_connect(port);
	if (fd < 0 || !buf)
		goto out;
	for (i = 0; i < o->size; i++)
		buf[i] = (char)pattern(i);
	t0 = bu_now_ns();
	for (i = 0; i < o->count; i++) {
		/* With -V the pattern follows the stream offset. */
		if (o->verify && i) {
			uint64_t j, base = i * o->size;

			for (j = 0; j < o->size; j++)
				buf[j] = (char)pattern(base + j);
		}
		if (raw_write_full(fd, buf, o->size))
			goto out;
	}
	if (raw_read_full(fd, &ack, 1))
		goto out;
	*elapsed = bu_now_ns() - t0;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: raw_stream [-s SIZE] [-n WRITES] [-V] [-t SECONDS]\n");
	exit(BU_EXIT_USAGE);
}

int main(int argc, char **argv)
{
	struct opts o = { .size = 1 << 20, .count = 4096 };
	uint64_t tmo = 120, elapsed = 0;
	struct bu_server srv;
	unsigned int port;
	int c, ret, sret;
	double mbps;

	while ((c = getopt(argc, argv, "s:n:Vt:h")) != -1) {
		if (c == 's' && !bu_parse_size(optarg, &o.size) && o.size)
			continue;
		if (c == 'n' && !bu_parse_uint(optarg, &o.count) && o.count)
			continue;
		if (c == 't' && !bu_parse_uint(optarg, &tmo))
			continue;
		if (c == 'V') {
			o.verify = 1;
			continue;
		}
		usage();
	}
	if (optind != argc)
		usage();
	bu_watchdog((unsigned int)tmo);
	bu_line_begin("raw_stream", "raw");
	bu_kv("bytes", "%llu", (unsigned long long)o.size);
	bu_kv("writes", "%llu", (unsigned long long)o.count);
	if (bu_fork_server(serve, &o, &srv, &port)) {
		bu_line_end("fail");
		return BU_EXIT_FAIL;
	}
	ret = client(&o, port, &elapsed);
	if (!ret) {
		mbps = (double)o.size * o.count * 1e3 / elapsed;
		bu_kv("MBps", "%.0f", mbps);
		bu_kv("Gbps", "%.2f", mbps * 8 / 1e3);
		bu_kv("secs", "%.3f", elapsed / 1e9);
	}
	sret = bu_server_finish(&srv);
	bu_line_end(!ret && !sret ? "ok" : "fail");
	return !ret && !sret ? BU_EXIT_OK : BU_EXIT_FAIL;
}
