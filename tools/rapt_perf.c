/* SPDX-License-Identifier: MIT */
/*
 * rapt_perf - latency, bandwidth, message rate and connection rate over
 * any rapt provider.  See docs/man/rapt_perf.1.md.
 *
 * This file is the command line and the way the two sides are started:
 * a forked server child (default), a server thread (--loopback-thread,
 * for in-process providers), or one side only (-S / -c HOST).  The tests
 * live in tools/perf/.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf/perf.h"

#define DEFAULT_SID	18515

enum {
	OPT_JSON = 0x100,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
	OPT_THREAD,
	OPT_PDATA,
	OPT_DEPTH,
	OPT_SRQ,
	OPT_MAX_SIZE,
	OPT_DISC_WAIT,
	OPT_HIST,
	OPT_UNSIGNALED,
	OPT_THINK,
	OPT_VERSION,
};

static const struct option long_opts[] = {
	{ "ia", required_argument, NULL, 'p' },
	{ "test", required_argument, NULL, 't' },
	{ "size", required_argument, NULL, 's' },
	{ "all", no_argument, NULL, 'a' },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "iters", required_argument, NULL, 'n' },
	{ "warmup", required_argument, NULL, 'W' },
	{ "window", required_argument, NULL, 'w' },
	{ "mode", required_argument, NULL, 'm' },
	{ "verify", no_argument, NULL, 'V' },
	{ "inline", no_argument, NULL, 'I' },
	{ "server", no_argument, NULL, 'S' },
	{ "client", required_argument, NULL, 'c' },
	{ "sid", required_argument, NULL, 'P' },
	{ "loopback-thread", no_argument, NULL, OPT_THREAD },
	{ "pdata", required_argument, NULL, OPT_PDATA },
	{ "depth", required_argument, NULL, OPT_DEPTH },
	{ "srq", required_argument, NULL, OPT_SRQ },
	{ "disc-wait", no_argument, NULL, OPT_DISC_WAIT },
	{ "hist", no_argument, NULL, OPT_HIST },
	{ "unsignaled", no_argument, NULL, OPT_UNSIGNALED },
	{ "think", required_argument, NULL, OPT_THINK },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
	{ "time-limit", required_argument, NULL, 'T' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: rapt_perf [-p IA] [-t TEST] [-s SIZE | -a] [-n N] [-W N] [-w N]\n"
"                 [-m poll|block|fd] [-V] [-I] [--json] [--progress]\n"
"                 [-S | -c HOST | --loopback-thread] [-P SID]\n"
"                 [--pdata BYTES] [--depth N] [--srq N] [--disc-wait]\n"
"                 [--hist] [--unsignaled] [--think US]\n"
"                 [-T SECONDS]\n"
"  -p, --ia IA          interface adapter (default tcp:lo)\n"
"  -t, --test TEST      lat_send lat_write lat_read bw_send bw_write\n"
"                       bw_read connrate conns lat_mw (default lat_send)\n"
"  -s, --size SIZE      message size, k/m suffixes (default 8, bw 64k)\n"
"  -a, --all            sweep sizes 1 B .. --max-size (default 4m)\n"
"  -n, --iters N        iterations per size, or connections\n"
"  -W, --warmup N       untimed iterations first\n"
"  -w, --window N       operations (conns: connects) outstanding\n"
"  -m, --mode MODE      poll (dequeue loop), block (rapt_evd_wait),\n"
"                       fd (rapt_evd_arm + poll on the EVD fd)\n"
"  -V, --verify         check the data (and the private data)\n"
"  -I, --inline         inline sends and writes up to max_inline\n"
"  -S, --server         run the server side only (one client, then exit)\n"
"  -c, --client HOST    run the client side only, against HOST\n"
"  -P, --sid SID        service id (default %d with -S/-c)\n"
"      --loopback-thread  server in a thread of this process\n"
"      --pdata BYTES    connection tests: private data each way (32)\n"
"      --depth N        connection tests: EP queue depths (provider's)\n"
"      --srq N          connection tests: the EPs this side creates take\n"
"                       their receives from one SRQ of N receives\n"
"      --disc-wait      connrate: wait for DISCONNECTED before the next\n"
"      --hist           latency tests: p99.9, max and a histogram of the\n"
"                       round trips (4 buckets per doubling)\n"
"      --unsignaled     lat_send: both sides ask a completion for every\n"
"                       16th send only, and a round trip ends with the\n"
"                       reply (as ib_send_lat with -t 16 -Q 16)\n"
"      --think US       latency tests: the client pauses US microseconds\n"
"                       between round trips without calling rapt (an\n"
"                       application computing); the server waits meanwhile\n"
"      --json           one JSON object per result line\n"
"      --progress       progress line on stderr even when not a tty\n"
"  -T, --time-limit S   abort after S seconds\n", DEFAULT_SID);
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "rapt_perf: bad %s '%s'\n", what, arg);
	usage(stderr);
	return PERF_EXIT_USAGE;
}

static int parse_u64(const char *s, uint64_t *out, bool suffix)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || s[0] == '-')
		return -1;
	if (suffix && (*end == 'k' || *end == 'K'))
		shift = 10;
	else if (suffix && (*end == 'm' || *end == 'M'))
		shift = 20;
	else if (suffix && (*end == 'g' || *end == 'G'))
		shift = 30;
	if (shift)
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_test(const char *s, enum perf_test *t)
{
	int i;

	for (i = PERF_LAT_SEND; i <= PERF_LAT_MW; i++) {
		if (!strcmp(s, perf_test_name((enum perf_test)i))) {
			*t = (enum perf_test)i;
			return 0;
		}
	}
	return -1;
}

static int parse_mode(const char *s, enum perf_mode *m)
{
	if (!strcmp(s, "poll"))
		*m = PERF_MODE_POLL;
	else if (!strcmp(s, "block"))
		*m = PERF_MODE_BLOCK;
	else if (!strcmp(s, "fd"))
		*m = PERF_MODE_FD;
	else
		return -1;
	return 0;
}

static int parse_num(int c, const char *arg, struct perf_opts *o)
{
	uint64_t v;

	if (parse_u64(arg, &v, c == 's' || c == OPT_MAX_SIZE))
		return -1;
	switch (c) {
	case 's':
		o->size = v;
		return v && v <= PERF_MAX_SIZE ? 0 : -1;
	case OPT_MAX_SIZE:
		o->max_size = v;
		return v && v <= PERF_MAX_SIZE ? 0 : -1;
	case 'n':
		o->iters = v;
		return v ? 0 : -1;
	case 'W':
		o->warmup = v;
		return 0;
	case 'w':
		o->window = (uint32_t)v;
		return v < PERF_WINDOW_DEFAULT ? 0 : -1;
	case 'P':
		o->sid = v;
		return 0;
	case OPT_PDATA:
		o->pdata_len = (uint32_t)v;
		return v <= 256 ? 0 : -1;
	case OPT_THINK:
		o->think_us = v;
		return v <= 10000000 ? 0 : -1;
	case OPT_DEPTH:
		o->depth = (uint32_t)v;
		return v <= 65535 ? 0 : -1;
	case OPT_SRQ:
		o->srq = (uint32_t)v;
		return v && v <= UINT32_MAX ? 0 : -1;
	case 'T':
		o->timeout_s = v;
		return 0;
	}
	return -1;
}

/* Options that only set a flag or a string. */
static int parse_flag(int c, const char *arg, struct perf_opts *o,
		      bool *sid_set, int *progress)
{
	switch (c) {
	case 'p': o->ia_name = arg; return 0;
	case 'a': o->sweep = true; return 0;
	case 'V': o->verify = true; return 0;
	case 'I': o->inline_send = true; return 0;
	case 'S': o->role = PERF_ROLE_SERVER; return 0;
	case 'c': o->role = PERF_ROLE_CLIENT; o->host = arg; return 0;
	case OPT_THREAD: o->role = PERF_ROLE_THREAD; return 0;
	case OPT_DISC_WAIT: o->disc_wait = true; return 0;
	case OPT_HIST: o->hist = true; return 0;
	case OPT_UNSIGNALED: o->unsignaled = true; return 0;
	case OPT_JSON: o->json = true; return 0;
	case OPT_PROGRESS: *progress = 1; return 0;
	case OPT_NO_PROGRESS: *progress = 0; return 0;
	case 'P': *sid_set = true; return 1;
	}
	return 1;
}

static int check_opts(struct perf_opts *o, bool sid_set, int progress)
{
	if (o->test == PERF_LAT_WRITE && o->mode != PERF_MODE_POLL) {
		fprintf(stderr, "rapt_perf: lat_write polls memory for the "
			"peer's write; it has no -m block or -m fd form\n");
		return PERF_EXIT_USAGE;
	}
	if (o->window != PERF_WINDOW_DEFAULT && o->test != PERF_CONNS &&
	    (!o->window || o->window > PERF_MAX_WINDOW)) {
		fprintf(stderr, "rapt_perf: -w must be 1..%d (0, all at once, "
			"is for -t conns)\n", PERF_MAX_WINDOW);
		return PERF_EXIT_USAGE;
	}
	if (o->sweep && perf_is_conn(o->test)) {
		fprintf(stderr, "rapt_perf: -a applies to the data tests\n");
		return PERF_EXIT_USAGE;
	}
	if (o->think_us && !perf_is_latency(o->test)) {
		fprintf(stderr, "rapt_perf: --think applies to the latency "
			"tests\n");
		return PERF_EXIT_USAGE;
	}
	if (o->unsignaled && o->test != PERF_LAT_SEND) {
		fprintf(stderr, "rapt_perf: --unsignaled applies to lat_send\n");
		return PERF_EXIT_USAGE;
	}
	if (!o->size)
		o->size = perf_is_latency(o->test) || perf_is_conn(o->test) ?
			  8 : 65536;
	if (!sid_set)
		o->sid = o->role == PERF_ROLE_SERVER ||
			 o->role == PERF_ROLE_CLIENT ? DEFAULT_SID :
			 RAPT_SERVICE_ID_ANY;
	o->progress = progress < 0 ? isatty(2) : progress;
	return 0;
}

static int parse(int argc, char **argv, struct perf_opts *o)
{
	bool sid_set = false;
	int c, progress = -1;

	while ((c = getopt_long(argc, argv, "p:t:s:an:W:w:m:VISc:P:T:h",
				long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(PERF_EXIT_OK);
		}
		if (c == OPT_VERSION) {
			printf("rapt_perf %s\n", rapt_version(NULL, NULL));
			exit(PERF_EXIT_OK);
		}
		if (c == 't') {
			if (parse_test(optarg, &o->test))
				return bad("test", optarg);
			continue;
		}
		if (c == 'm') {
			if (parse_mode(optarg, &o->mode))
				return bad("mode", optarg);
			continue;
		}
		if (!parse_flag(c, optarg, o, &sid_set, &progress))
			continue;
		if (c == '?')
			return PERF_EXIT_USAGE;
		if (parse_num(c, optarg, o))
			return bad("value", optarg);
	}
	if (optind != argc)
		return bad("argument", argv[optind]);
	return check_opts(o, sid_set, progress);
}

/* ------------------------------------------------------------------ */
/* Starting the two sides                                              */
/* ------------------------------------------------------------------ */

static unsigned int time_limit;

static void time_up(int sig)
{
	static const char msg[] = "rapt_perf: time limit reached\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(PERF_EXIT_FAIL);
	_exit(PERF_EXIT_FAIL);
}

static void arm_time_limit(void)
{
	if (!time_limit)
		return;
	signal(SIGALRM, time_up);
	alarm(time_limit);
}

/* Read "sid=N\n" from the server side; -1 if it never came. */
static int read_sid(int fd, uint64_t *sid)
{
	char buf[64];
	size_t len = 0;
	ssize_t r;

	while (len < sizeof(buf) - 1) {
		r = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (memchr(buf, '\n', len))
			break;
	}
	buf[len] = 0;
	return sscanf(buf, "sid=%llu", (unsigned long long *)sid) == 1 ?
	       0 : -1;
}

static int reap_child(pid_t pid, bool client_ok)
{
	int status, i;

	/* A client that failed may leave the server waiting: end it. */
	for (i = 0; !client_ok && i < 50; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) :
			       PERF_EXIT_FAIL;
		usleep(10000);
	}
	if (!client_ok)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return PERF_EXIT_FAIL;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return client_ok ? PERF_EXIT_FAIL : PERF_EXIT_OK;
}

static int combine(int client, int server)
{
	if (client)
		return client;
	return server;
}

static int run_fork(struct perf_opts *o)
{
	struct perf_opts co = *o;
	int pfd[2], ret, sret;
	pid_t pid;

	if (pipe(pfd)) {
		perror("rapt_perf: pipe");
		return PERF_EXIT_FAIL;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("rapt_perf: fork");
		return PERF_EXIT_FAIL;
	}
	if (pid == 0) {
		close(pfd[0]);
		arm_time_limit();
		_exit(perf_server_run(o, pfd[1]));
	}
	close(pfd[1]);
	ret = read_sid(pfd[0], &co.sid);
	close(pfd[0]);
	if (ret) {
		sret = reap_child(pid, true);
		perf_out_error(o, sret == PERF_EXIT_UNSUPPORTED ?
			       "unsupported" : "fail",
			       "the server did not start");
		return sret ? sret : PERF_EXIT_FAIL;
	}
	co.role = PERF_ROLE_FORK;
	ret = perf_client_run(&co);
	sret = reap_child(pid, ret == PERF_EXIT_OK);
	return combine(ret, sret);
}

struct srv_thread {
	const struct perf_opts *o;
	int fd;
	int ret;
};

static void *server_thread(void *arg)
{
	struct srv_thread *t = arg;

	t->ret = perf_server_run(t->o, t->fd);
	return NULL;
}

static int run_thread(struct perf_opts *o)
{
	struct srv_thread t = { .o = o };
	struct perf_opts co = *o;
	pthread_t th;
	int pfd[2], ret;

	if (pipe(pfd)) {
		perror("rapt_perf: pipe");
		return PERF_EXIT_FAIL;
	}
	t.fd = pfd[1];
	if (pthread_create(&th, NULL, server_thread, &t)) {
		fprintf(stderr, "rapt_perf: cannot start the server thread\n");
		return PERF_EXIT_FAIL;
	}
	ret = read_sid(pfd[0], &co.sid);
	close(pfd[0]);
	if (!ret)
		ret = perf_client_run(&co);
	else
		ret = PERF_EXIT_FAIL;
	pthread_join(th, NULL);
	return combine(ret, t.ret);
}

int main(int argc, char **argv)
{
	struct perf_opts o = {
		.ia_name = "tcp:lo", .test = PERF_LAT_SEND,
		.max_size = PERF_MAX_SIZE, .warmup = UINT64_MAX,
		.pdata_len = 32, .window = PERF_WINDOW_DEFAULT,
	};
	int ret;

	ret = parse(argc, argv, &o);
	if (ret)
		return ret;
	signal(SIGPIPE, SIG_IGN);
	time_limit = (unsigned int)o.timeout_s;
	arm_time_limit();
	switch (o.role) {
	case PERF_ROLE_SERVER:
		return perf_server_run(&o, -1);
	case PERF_ROLE_CLIENT:
		return perf_client_run(&o);
	case PERF_ROLE_THREAD:
		return run_thread(&o);
	case PERF_ROLE_FORK:
		break;
	}
	return run_fork(&o);
}
