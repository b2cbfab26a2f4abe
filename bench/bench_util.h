/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the peer benchmarks in bench/raw and bench/ofi: clock,
 * size parsing, statistics, the fork-a-server convention, RSS and fd
 * counts, and the one summary line every program prints.
 *
 * Convention of every peer program: by default it fork()s a server child
 * and runs the client in the parent, both on 127.0.0.1.  The child tells
 * the parent its port on a pipe ("port=N\n"), and after its run writes its
 * own figures on the same pipe as "srv_key=value" words; the parent appends
 * them to its summary line.  stdout gets exactly one line:
 *
 *   bench=NAME impl=raw|ofi status=ok|fail|unsupported key=value ...
 *
 * Exit status: 0 ok, 1 failure, 2 usage, 3 unsupported.
 */
#ifndef RAPT_BENCH_UTIL_H
#define RAPT_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BU_EXIT_OK		0
#define BU_EXIT_FAIL		1
#define BU_EXIT_USAGE		2
#define BU_EXIT_UNSUPPORTED	3

/** struct bu_stats - summary of a set of durations, in nanoseconds */
struct bu_stats {
	double min;
	double med;
	double p99;
	double max;
	double mean;
};

uint64_t bu_now_ns(void);
void bu_spin_ns(uint64_t ns);
int bu_parse_size(const char *s, uint64_t *out);
int bu_parse_uint(const char *s, uint64_t *out);
void bu_stats(uint64_t *ns, size_t n, struct bu_stats *st);
long bu_rss_kb(void);
int bu_count_fds(void);
void bu_watchdog(unsigned int seconds);
void bu_raise_nofile(uint64_t want);

/* The summary line, built word by word into a static buffer. */
void bu_line_begin(const char *bench, const char *impl);
void bu_kv(const char *key, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void bu_line_words(const char *words);
void bu_line_end(const char *status);

/* Server child side: announce the port, then the figures, on @fd. */
void bu_announce_port(int fd, unsigned int port);
void bu_report(int fd, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/**
 * bu_fork_server - run @fn in a child process
 * @fn: the server; gets @arg and the pipe's write end; returns an exit code
 * @arg: its argument
 * @srv: output, the child's pid and the pipe's read end
 * @port: output, the port the child announced
 *
 * Return: 0, or the child's exit status if it exited without announcing a
 * port (BU_EXIT_UNSUPPORTED: the provider lacks what the test needs), or
 * BU_EXIT_FAIL.
 */
struct bu_server {
	pid_t pid;
	int fd;
};
int bu_fork_server(int (*fn)(void *arg, int fd), void *arg,
		   struct bu_server *srv, unsigned int *port);

/**
 * bu_server_finish - collect the child's figures and its exit status
 * @srv: from bu_fork_server()
 *
 * Appends the child's "srv_*" words to the summary line.
 *
 * Return: the child's exit status (0 ok).
 */
int bu_server_finish(struct bu_server *srv);

/**
 * bu_fail_early - end the summary line when the server never came up
 * @child_status: what bu_fork_server() returned
 *
 * Return: the exit status for main(): BU_EXIT_UNSUPPORTED or BU_EXIT_FAIL.
 */
int bu_fail_early(int child_status);

/**
 * bu_srv_value - a number the server child reported as srv_@key
 * @key: the key without "srv_"
 * @v: output
 *
 * Valid after bu_server_finish().  Return: 0, or -1 if not reported.
 */
int bu_srv_value(const char *key, double *v);

#endif /* RAPT_BENCH_UTIL_H */
