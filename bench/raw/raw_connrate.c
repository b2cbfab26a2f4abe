/* SPDX-License-Identifier: MIT */
/*
 * raw_connrate - sequential TCP connection setup and teardown on
 * 127.0.0.1.  One cycle: the client calls socket() and connect(), the
 * server (another process) accept()s and close()s, the client sees the
 * EOF and close()s.  The next cycle starts only then, so a cycle is
 * "established on both sides, then closed", as in the transports' tests.
 * -1 runs both ends in one thread instead (socket, connect, accept, close
 * twice), the cheapest form.  -m poll: both processes busy-poll instead
 * of blocking (a non-blocking accept() loop, a recv(MSG_DONTWAIT) loop
 * for the EOF), like a transport's busy-polling consumer.
 *
 * -x: the bytes an iWARP connection with 32 bytes of private data each
 * way exchanges, and no more: the client sends 60 bytes (an MPA request's
 * size), the server answers 60 (the reply), the client sends 20 (a
 * zero-length RTR) and closes at once; the server reads to the end of
 * the stream and closes.  The cycle is the client's, as a transport's
 * connect-then-free loop.  The floor for any implementation of that
 * exchange over the same sockets.
 *
 *   raw_connrate [-n CONNS] [-W WARMUP] [-1] [-x] [-m block|poll]
 *                [-t SECONDS]
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../bench_util.h"
#include "raw_common.h"

struct opts {
	uint64_t conns;
	uint64_t warmup;
	int one_thread;
	int poll;
	int exchange;
};

/* -x: an MPA request and reply with 32 bytes of private data, an RTR. */
#define X_REQ	60
#define X_REP	60
#define X_RTR	20

/* -m poll: accept without sleeping. */
static int accept_spin(int lfd)
{
	int fd;

	do
		fd = accept(lfd, NULL, NULL);
	while (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
			  errno == EINTR));
	if (fd < 0)
		perror("accept");
	return fd;
}

/* -m poll: wait for the server's EOF without sleeping. */
static ssize_t read_spin(int fd, char *c)
{
	ssize_t n;

	do
		n = recv(fd, c, 1, MSG_DONTWAIT);
	while (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
			 errno == EINTR));
	return n;
}

/* Read exactly @len bytes (0), or the end of the stream first (1). */
static int read_n(int fd, char *b, size_t len, int poll)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = recv(fd, b + got, len - got, poll ? MSG_DONTWAIT : 0);
		if (n > 0)
			got += (size_t)n;
		else if (!n)
			return 1;
		else if (errno != EAGAIN && errno != EWOULDBLOCK &&
			 errno != EINTR)
			return -1;
	}
	return 0;
}

/* -x, server side of one connection. */
static int serve_x(int fd, int poll)
{
	char b[X_REQ];

	if (read_n(fd, b, X_REQ, poll) ||
	    send(fd, b, X_REP, MSG_NOSIGNAL) != X_REP ||
	    read_n(fd, b, X_RTR, poll) || read_n(fd, b, 1, poll) != 1) {
		fprintf(stderr, "raw_connrate: exchange failed (server)\n");
		return -1;
	}
	return 0;
}

static int serve(void *arg, int pfd)
{
	const struct opts *o = arg;
	unsigned int port;
	uint64_t i;
	int lfd, fd;

	lfd = raw_listen(&port, 4096);
	if (lfd < 0)
		return BU_EXIT_FAIL;
	if (o->poll)
		fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
	bu_announce_port(pfd, port);
	for (i = 0; i < o->warmup + o->conns; i++) {
		fd = o->poll ? accept_spin(lfd) : raw_accept(lfd);
		if (fd < 0)
			return BU_EXIT_FAIL;
		if (o->exchange && serve_x(fd, o->poll)) {
			close(fd);
			return BU_EXIT_FAIL;
		}
		close(fd);
	}
	close(lfd);
	return BU_EXIT_OK;
}

/* -x, client side: request, reply, RTR, then close at once. */
static int cycle_x(int fd, int poll, uint64_t t0, uint64_t *t_conn)
{
	char b[X_REQ];

	memset(b, 'r', sizeof(b));
	if (send(fd, b, X_REQ, MSG_NOSIGNAL) != X_REQ ||
	    read_n(fd, b, X_REP, poll) ||
	    send(fd, b, X_RTR, MSG_NOSIGNAL) != X_RTR) {
		fprintf(stderr, "raw_connrate: exchange failed (client)\n");
		close(fd);
		return -1;
	}
	*t_conn = bu_now_ns() - t0;
	close(fd);
	return 0;
}

/* One cycle against the server process. */
static int cycle2(unsigned int port, int poll, int exchange,
		  uint64_t *t_conn)
{
	uint64_t t0 = bu_now_ns();
	char c;
	int fd;

	fd = raw_connect(port);
	if (fd < 0)
		return -1;
	if (exchange)
		return cycle_x(fd, poll, t0, t_conn);
	*t_conn = bu_now_ns() - t0;
	if ((poll ? read_spin(fd, &c) : read(fd, &c, 1)) != 0) {
		fprintf(stderr, "expected EOF from the server\n");
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* One cycle with both ends in this thread. */
static int cycle1(int lfd, unsigned int port, uint64_t *t_conn)
{
	uint64_t t0 = bu_now_ns();
	int fd, afd;

	fd = raw_connect(port);
	if (fd < 0)
		return -1;
	afd = raw_accept(lfd);
	*t_conn = bu_now_ns() - t0;
	if (afd < 0) {
		close(fd);
		return -1;
	}
	close(afd);
	close(fd);
	return 0;
}

static int run(const struct opts *o, int lfd, unsigned int port,
	       uint64_t *cyc, uint64_t *con, uint64_t *elapsed)
{
	uint64_t i, t0, t1, tc, start = 0;
	int ret;

	for (i = 0; i < o->warmup + o->conns; i++) {
		if (i == o->warmup)
			start = bu_now_ns();
		t0 = bu_now_ns();
		ret = o->one_thread ? cycle1(lfd, port, &tc) :
				      cycle2(port, o->poll, o->exchange, &tc);
		if (ret)
			return -1;
		t1 = bu_now_ns();
		if (i >= o->warmup) {
			cyc[i - o->warmup] = t1 - t0;
			con[i - o->warmup] = tc;
		}
	}
	*elapsed = bu_now_ns() - start;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: raw_connrate [-n CONNS] [-W WARMUP] [-1] [-x] "
		"[-m block|poll] [-t SECONDS]\n");
	exit(BU_EXIT_USAGE);
}

int main(int argc, char **argv)
{
	struct opts o = { .conns = 1000, .warmup = 10 };
	uint64_t tmo = 120, elapsed = 0, *cyc, *con;
	struct bu_server srv = { .pid = -1 };
	struct bu_stats sc, sn;
	unsigned int port;
	int c, lfd = -1, ret, sret = 0;

	while ((c = getopt(argc, argv, "n:W:1xm:t:h")) != -1) {
		if (c == 'n' && !bu_parse_uint(optarg, &o.conns) && o.conns)
			continue;
		if (c == 'W' && !bu_parse_uint(optarg, &o.warmup))
			continue;
		if (c == 't' && !bu_parse_uint(optarg, &tmo))
			continue;
		if (c == '1') {
			o.one_thread = 1;
			continue;
		}
		if (c == 'x') {
			o.exchange = 1;
			continue;
		}
		if (c == 'm' && (!strcmp(optarg, "poll") ||
				 !strcmp(optarg, "block"))) {
			o.poll = !strcmp(optarg, "poll");
			continue;
		}
		usage();
	}
	if (optind != argc || (o.exchange && o.one_thread))
		usage();
	bu_watchdog((unsigned int)tmo);
	cyc = calloc(o.conns, sizeof(*cyc));
	con = calloc(o.conns, sizeof(*con));
	if (!cyc || !con)
		return BU_EXIT_FAIL;
	bu_line_begin("raw_connrate", "raw");
	bu_kv("procs", "%d", o.one_thread ? 1 : 2);
	bu_kv("mode", "%s", o.poll ? "poll" : "block");
	bu_kv("exchange", "%s", o.exchange ? "mpa" : "none");
	bu_kv("conns", "%llu", (unsigned long long)o.conns);
	if (o.one_thread)
		lfd = raw_listen(&port, 4096);
	else if (!bu_fork_server(serve, &o, &srv, &port))
		lfd = 0;
	if (lfd < 0) {
		bu_line_end("fail");
		return BU_EXIT_FAIL;
	}
	ret = run(&o, lfd, port, cyc, con, &elapsed);
	if (!ret) {
		bu_stats(cyc, o.conns, &sc);
		bu_stats(con, o.conns, &sn);
		bu_kv("conn_per_s", "%.0f", o.conns * 1e9 / elapsed);
		bu_kv("cycle_med_us", "%.2f", sc.med / 1e3);
		bu_kv("cycle_p99_us", "%.2f", sc.p99 / 1e3);
		bu_kv("connect_med_us", "%.2f", sn.med / 1e3);
		bu_kv("connect_p99_us", "%.2f", sn.p99 / 1e3);
	}
	if (!o.one_thread)
		sret = bu_server_finish(&srv);
	bu_line_end(!ret && !sret ? "ok" : "fail");
	free(cyc);
	free(con);
	return !ret && !sret ? BU_EXIT_OK : BU_EXIT_FAIL;
}
