/* SPDX-License-Identifier: MIT */
/* Helpers shared by the peer benchmarks; see bench_util.h. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define LINE_MAX_LEN 4096

static char line[LINE_MAX_LEN];
static size_t line_len;
static char srv_words[2048];

uint64_t bu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Spin for @ns (an application computing): no system call. */
void bu_spin_ns(uint64_t ns)
{
	uint64_t end = bu_now_ns() + ns;

	while (bu_now_ns() < end)
		;
}

int bu_parse_uint(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

/* "8", "4k", "64K", "1m", "2g": binary multiples. */
int bu_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || s[0] == '-')
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end == 'i' || *end == 'b' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts @ns in place.  Percentiles by nearest rank. */
void bu_stats(uint64_t *ns, size_t n, struct bu_stats *st)
{
	long double sum = 0;
	size_t i;

	memset(st, 0, sizeof(*st));
	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	for (i = 0; i < n; i++)
		sum += ns[i];
	st->min = (double)ns[0];
	st->max = (double)ns[n - 1];
	st->med = n % 2 ? (double)ns[n / 2] :
		  ((double)ns[n / 2 - 1] + (double)ns[n / 2]) / 2;
	st->p99 = (double)ns[(n * 99 + 99) / 100 - 1];
	st->mean = (double)(sum / n);
}

long bu_rss_kb(void)
{
	char buf[256];
	long kb = -1;
	FILE *f;

	f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int bu_count_fds(void)
{
	struct dirent *d;
	int n = 0;
	DIR *dir;

	dir = opendir("/proc/self/fd");
	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.')
			n++;
	closedir(dir);
	return n - 1;	/* the directory's own fd */
}

static void watchdog_fired(int sig)
{
	static const char msg[] = "watchdog: time limit reached, aborting\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(BU_EXIT_FAIL);
	_exit(BU_EXIT_FAIL);
}

void bu_watchdog(unsigned int seconds)
{
	signal(SIGALRM, watchdog_fired);
	alarm(seconds);
}

void bu_raise_nofile(uint64_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur >= want)
		return;
	rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

static void __attribute__((format(printf, 1, 0)))
line_add(const char *fmt, va_list ap)
{
	int n;

	if (line_len >= sizeof(line) - 1)
		return;
	n = vsnprintf(line + line_len, sizeof(line) - line_len, fmt, ap);
	if (n > 0)
		line_len += (size_t)n;
	if (line_len >= sizeof(line))
		line_len = sizeof(line) - 1;
}

static void line_printf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void line_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	line_add(fmt, ap);
	va_end(ap);
}

void bu_line_begin(const char *bench, const char *impl)
{
	line_len = 0;
	line[0] = 0;
	line_printf("bench=%s impl=%s", bench, impl);
}

void bu_kv(const char *key, const char *fmt, ...)
{
	va_list ap;

	line_printf(" %s=", key);
	va_start(ap, fmt);
	line_add(fmt, ap);
	va_end(ap);
}

void bu_line_words(const char *words)
{
	if (words && *words)
		line_printf(" %s", words);
}

void bu_line_end(const char *status)
{
	printf("%s status=%s\n", line, status);
	fflush(stdout);
}

void bu_announce_port(int fd, unsigned int port)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "port=%u\n", port);

	if (write(fd, buf, (size_t)n) != n)
		perror("announce port");
}

void bu_report(int fd, const char *key, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n, m;

	n = snprintf(buf, sizeof(buf), "srv_%s=", key);
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = ' ';
	if (write(fd, buf, (size_t)n) != n)
		perror("report");
}

/* Read one "port=N\n" line byte by byte: the rest stays in the pipe. */
static int read_port(int fd, unsigned int *port)
{
	char buf[32];
	size_t i = 0;
	ssize_t r;

	while (i < sizeof(buf) - 1) {
		r = read(fd, buf + i, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (buf[i] == '\n')
			break;
		i++;
	}
	buf[i] = 0;
	return sscanf(buf, "port=%u", port) == 1 ? 0 : -1;
}

int bu_fork_server(int (*fn)(void *arg, int fd), void *arg,
		   struct bu_server *srv, unsigned int *port)
{
	int pfd[2], status;
	pid_t pid;

	if (pipe(pfd)) {
		perror("pipe");
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		goto err_pipe;
	}
	if (pid == 0) {
		close(pfd[0]);
		_exit(fn(arg, pfd[1]));
	}
	close(pfd[1]);
	if (read_port(pfd[0], port)) {
		close(pfd[0]);
		while (waitpid(pid, &status, 0) < 0)
			if (errno != EINTR)
				return BU_EXIT_FAIL;
		if (WIFEXITED(status) && WEXITSTATUS(status))
			return WEXITSTATUS(status);
		fprintf(stderr, "server child announced no port\n");
		return BU_EXIT_FAIL;
	}
	srv->pid = pid;
	srv->fd = pfd[0];
	return 0;
err_pipe:
	close(pfd[0]);
	close(pfd[1]);
	return BU_EXIT_FAIL;
}

int bu_server_finish(struct bu_server *srv)
{
	char buf[2048];
	size_t len = 0;
	ssize_t r;
	int status;

	for (;;) {
		r = read(srv->fd, buf + len, sizeof(buf) - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == sizeof(buf) - 1)
			break;
	}
	buf[len] = 0;
	while (len && (buf[len - 1] == ' ' || buf[len - 1] == '\n'))
		buf[--len] = 0;
	bu_line_words(buf);
	memcpy(srv_words, buf, len + 1);
	close(srv->fd);
	while (waitpid(srv->pid, &status, 0) < 0)
		if (errno != EINTR)
			return BU_EXIT_FAIL;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	fprintf(stderr, "server child killed by signal %d\n",
		WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return BU_EXIT_FAIL;
}

/* The server never came up: finish the line with why; the exit status. */
int bu_fail_early(int child_status)
{
	if (child_status == BU_EXIT_UNSUPPORTED) {
		bu_line_end("unsupported");
		return BU_EXIT_UNSUPPORTED;
	}
	bu_line_end("fail");
	return BU_EXIT_FAIL;
}

/* A number the server child reported ("srv_KEY=V"); -1 if absent. */
int bu_srv_value(const char *key, double *v)
{
	char want[64];
	const char *p;
	size_t n;

	n = (size_t)snprintf(want, sizeof(want), "srv_%s=", key);
	for (p = srv_words; (p = strstr(p, want)); p += n)
		if (p == srv_words || p[-1] == ' ')
			return sscanf(p + n, "%lf", v) == 1 ? 0 : -1;
	return -1;
}
