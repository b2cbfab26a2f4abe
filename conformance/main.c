/* SPDX-License-Identifier: MIT */
/*
 * rapt-conformance: certify a rapt provider through the public API only.
 *
 *   rapt-conformance [-p IA] [--run AREA[/TEST]]... [--xml FILE]
 *   rapt-conformance --server [--port P] [-p IA]
 *   rapt-conformance --client HOST [--port P] [-p IA] ...
 *
 * Each area is a CUnit suite, each test a CUnit test whose assertions come
 * from both roles.  CUnit 2.1 has no notion of a skipped test, so skips are
 * kept here and reported in the summary and the JUnit XML.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <CUnit/TestRun.h>

#include "conf.h"
#include "report.h"

struct conf_opts conf_opt = {
	.port = CONF_DEFAULT_PORT,
	/* Nothing outside the machine by default: the fault tests skip
	 * until given addresses (run-check.sh builds them in namespaces). */
	.unreachable = "none",
	.blackhole = "none",
	.max_size = 1u << 20,
	.test_timeout_s = 300,
	.scale = 1,
};

const struct conf_suite *const conf_suites[] = {
	&conf_suite_ia,
	&conf_suite_objects,
	&conf_suite_evd,
	&conf_suite_ep,
	&conf_suite_ep_reuse,
	&conf_suite_cm,
	&conf_suite_rsp,
	&conf_suite_srq,
	&conf_suite_rmr,
	&conf_suite_pdata,
	&conf_suite_backlog,
	&conf_suite_rtr,
	&conf_suite_dto,
	&conf_suite_rdma,
	&conf_suite_access,
	&conf_suite_disconnect,
	&conf_suite_cancel,
	&conf_suite_stress,
};

const unsigned int conf_nsuites = CONF_ARRAY_SIZE(conf_suites);

/* The test CUnit is running now, and where its result goes. */
static struct {
	struct conf_ctl *ctl;
	const struct conf_suite *suite;
	const struct conf_test *test;
	struct conf_result *res;
	uint32_t seq;
} cur;

/* ------------------------------------------------------------------ */
/* Watchdog: a hung test must not hang make check                      */
/* ------------------------------------------------------------------ */

static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cond = PTHREAD_COND_INITIALIZER;
static int64_t wd_deadline;	/* 0: idle */
static char wd_name[160];
static unsigned int wd_secs;
static bool wd_stop;

static void *watchdog(void *arg)
{
	struct timespec ts;

	(void)arg;
	pthread_mutex_lock(&wd_lock);
	while (!wd_stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&wd_cond, &wd_lock, &ts);
		if (wd_deadline && conf_now_us() > wd_deadline) {
			fprintf(stderr, "\nrapt-conformance: %s did not finish within %u s: aborting\n",
				wd_name, wd_secs);
			fflush(stderr);
			_exit(3);
		}
	}
	pthread_mutex_unlock(&wd_lock);
	return NULL;
}

/**
 * conf_watch - abort the process if a test runs too long
 * @name: the test ("area/test"), or NULL when it finished
 * @secs: how long it may run
 *
 * A hung provider call must not hang a whole certification run: the
 * client and the server each watch the test they run.
 */
void conf_watch(const char *name, unsigned int secs)
{
	pthread_mutex_lock(&wd_lock);
	snprintf(wd_name, sizeof(wd_name), "%s", name ? name : "");
	wd_secs = secs;
	wd_deadline = name ? conf_now_us() + (int64_t)secs * 1000000 : 0;
	pthread_mutex_unlock(&wd_lock);
}

static void wd_arm(const char *name)
{
	conf_watch(name, conf_opt.test_timeout_s * conf_opt.scale);
}

/* ------------------------------------------------------------------ */
/* CUnit glue                                                          */
/* ------------------------------------------------------------------ */

/* Every test runs through this: CUnit records what both roles found. */
static void cu_trampoline(void)
{
	struct conf_result *r = cur.res;
	struct conf_ctx c;
	char name[160];
	int64_t t0;
	unsigned int i;

	snprintf(name, sizeof(name), "%s/%s", cur.suite->name,
		 cur.test->name);
	wd_arm(name);
	t0 = conf_now_us();
	conf_run_active(cur.ctl, cur.suite, cur.test, cur.seq, &c);
	r->secs = (double)(conf_now_us() - t0) / 1e6;
	wd_arm(NULL);
	for (i = 0; i < c.nmsgs; i++)
		CU_assertImplementation(CU_FALSE, 0, c.fails[i], name, "",
					CU_FALSE);
	if (c.nfail > c.nmsgs)
		CU_assertImplementation(CU_FALSE, 0,
					"failures without a message", name,
					"", CU_FALSE);
	if (!c.nfail)
		CU_assertImplementation(CU_TRUE, 0, "passed", name, "",
					CU_FALSE);
	conf_result_take(r, &c);
	conf_ctx_fini(&c);
}

static int cu_register(CU_pSuite *cs, CU_pTest **ct)
{
	unsigned int i, j;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return -1;
	for (i = 0; i < conf_nsuites; i++) {
		const struct conf_suite *s = conf_suites[i];

		cs[i] = CU_add_suite(s->name, NULL, NULL);
		if (!cs[i])
			return -1;
		ct[i] = calloc(s->ntests, sizeof(CU_pTest));
		if (!ct[i])
			return -1;
		for (j = 0; j < s->ntests; j++) {
			ct[i][j] = CU_add_test(cs[i], s->tests[j].name,
					       cu_trampoline);
			if (!ct[i][j])
				return -1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Selection                                                           */
/* ------------------------------------------------------------------ */

static bool selected(const struct conf_suite *s, const struct conf_test *t)
{
	unsigned int i;
	size_t n;

	if (!conf_opt.nruns)
		return true;
	for (i = 0; i < conf_opt.nruns; i++) {
		const char *r = conf_opt.runs[i];
		const char *slash = strchr(r, '/');

		n = slash ? (size_t)(slash - r) : strlen(r);
		if (strlen(s->name) != n || strncmp(r, s->name, n))
			continue;
		if (!slash || !strcmp(slash + 1, t->name))
			return true;
	}
	return false;
}

/* Does --run @r name an area or a test? */
static bool run_exists(const char *r)
{
	const char *slash = strchr(r, '/');
	size_t n = slash ? (size_t)(slash - r) : strlen(r);
	unsigned int i, j;

	for (i = 0; i < conf_nsuites; i++) {
		const struct conf_suite *s = conf_suites[i];

		if (strlen(s->name) != n || strncmp(r, s->name, n))
			continue;
		if (!slash)
			return true;
		for (j = 0; j < s->ntests; j++)
			if (!strcmp(slash + 1, s->tests[j].name))
				return true;
	}
	return false;
}

static int check_runs(void)
{
	unsigned int i;

	for (i = 0; i < conf_opt.nruns; i++) {
		if (!run_exists(conf_opt.runs[i])) {
			fprintf(stderr, "rapt-conformance: --run %s: no such area or test (see --list)\n",
				conf_opt.runs[i]);
			return -1;
		}
	}
	return 0;
}

static void list_tests(void)
{
	unsigned int i, j;

	for (i = 0; i < conf_nsuites; i++) {
		const struct conf_suite *s = conf_suites[i];

		printf("%-12s %s\n", s->name, s->desc);
		for (j = 0; j < s->ntests; j++)
			printf("  %-34s %s%s\n", s->tests[j].name,
			       s->tests[j].desc,
			       s->tests[j].passive ? "" : " [one process]");
	}
}

/* ------------------------------------------------------------------ */
/* The client: run the selection                                       */
/* ------------------------------------------------------------------ */

static int print_ia(void)
{
	struct rapt_ia_attr a;
	struct rapt_ia *ia;
	char addr[64];
	int rc;

	rc = rapt_ia_open(conf_opt.ia_name, &ia);
	if (rc) {
		fprintf(stderr, "rapt-conformance: cannot open IA %s: %s: %s\n",
			conf_opt.ia_name ? conf_opt.ia_name : "(best)",
			rapt_err_name(rc), rapt_last_error());
		return -1;
	}
	rc = rapt_ia_query(ia, &a, sizeof(a));
	if (!rc) {
		printf("IA %s: provider %s, transport %u, caps %#llx, local address %s\n",
		       a.name, a.provider, a.transport,
		       (unsigned long long)a.caps,
		       conf_addr_str(&a.local_addr, addr, sizeof(addr)));
		conf_report_set_ia(&a);
	}
	rapt_ia_close(ia);
	return rc ? -1 : 0;
}

static int run_client(struct conf_ctl *ctl)
{
	CU_pSuite cs[CONF_ARRAY_SIZE(conf_suites)];
	CU_pTest *ct[CONF_ARRAY_SIZE(conf_suites)] = { 0 };
	struct conf_report *rep;
	unsigned int i, j, failed;
	uint32_t seq = 1;
	int ret = 1;

	rep = conf_report_new();
	if (!rep || cu_register(cs, ct)) {
		fprintf(stderr, "rapt-conformance: CUnit: %s\n", CU_get_error_msg());
		goto out;
	}
	cur.ctl = ctl;
	for (i = 0; i < conf_nsuites; i++) {
		const struct conf_suite *s = conf_suites[i];

		for (j = 0; j < s->ntests; j++) {
			if (!selected(s, &s->tests[j]))
				continue;
			cur.suite = s;
			cur.test = &s->tests[j];
			cur.seq = seq++;
			cur.res = conf_report_add(rep, s, &s->tests[j]);
			if (!cur.res)
				goto out;
			conf_report_start(cur.res);
			CU_run_test(cs[i], ct[i][j]);
			conf_report_line(cur.res);
		}
	}
	failed = conf_report_summary(rep, stdout);
	if (conf_opt.xml && conf_report_xml(rep, conf_opt.xml))
		failed++;
	ret = failed ? 1 : 0;
out:
	(void)conf_ctl_send(ctl, CONF_MSG_QUIT, 0, 0, "quit", NULL, 0);
	for (i = 0; i < conf_nsuites; i++)
		free(ct[i]);
	if (CU_get_registry())
		CU_cleanup_registry();
	conf_report_free(rep);
	return ret;
}

static void *loop_server(void *arg)
{
	struct conf_ctl *ctl = arg;

	if (!conf_ctl_hello(ctl, false))
		(void)conf_serve(ctl);
	return NULL;
}

static int mode_loopback(void)
{
	struct conf_ctl cctl, sctl;
	pthread_t th;
	int sv[2], ret;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		perror("rapt-conformance: socketpair");
		return 2;
	}
	conf_ctl_init(&cctl, sv[0]);
	conf_ctl_init(&sctl, sv[1]);
	if (pthread_create(&th, NULL, loop_server, &sctl)) {
		fprintf(stderr, "rapt-conformance: cannot start the passive thread\n");
		return 2;
	}
	ret = conf_ctl_hello(&cctl, true) ? 2 : run_client(&cctl);
	pthread_join(th, NULL);
	conf_ctl_fini(&cctl);
	conf_ctl_fini(&sctl);
	return ret;
}

static int mode_client(void)
{
	struct conf_ctl ctl;
	int ret;

	if (conf_ctl_connect(conf_opt.host, conf_opt.port, &ctl))
		return 2;
	ret = conf_ctl_hello(&ctl, true) ? 2 : run_client(&ctl);
	conf_ctl_fini(&ctl);
	return ret;
}

static int mode_server(void)
{
	struct conf_ctl ctl;
	char addr[64];
	int lfd;

	lfd = conf_ctl_listen(conf_opt.port);
	if (lfd < 0) {
		fprintf(stderr, "rapt-conformance: cannot listen on port %u: %s\n",
			conf_opt.port, strerror(errno));
		return 2;
	}
	printf("rapt-conformance server: IA %s, control port %u\n",
	       conf_opt.ia_name ? conf_opt.ia_name : "(best)", conf_opt.port);
	fflush(stdout);
	for (;;) {
		if (conf_ctl_accept(lfd, &ctl))
			continue;
		printf("client %s connected\n",
		       conf_addr_str(&ctl.peer, addr, sizeof(addr)));
		fflush(stdout);
		if (!conf_ctl_hello(&ctl, false))
			(void)conf_serve(&ctl);
		conf_ctl_fini(&ctl);
		printf("client %s done\n", addr);
		fflush(stdout);
		if (conf_opt.once)
			break;
	}
	close(lfd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

enum {
	OPT_PROVIDER_PATH = 256,
	OPT_LIST,
	OPT_RUN,
	OPT_XML,
	OPT_SERVER,
	OPT_CLIENT,
	OPT_PORT,
	OPT_ONCE,
	OPT_LONG,
	OPT_CYCLES,
	OPT_NO_FORK,
	OPT_NETCUT,
	OPT_UNREACHABLE,
	OPT_BLACKHOLE,
	OPT_HALF_OPEN,
	OPT_SERVER_ADDR,
	OPT_MAX_SIZE,
	OPT_TEST_TIMEOUT,
	OPT_SCALE,
	OPT_VERSION,
	OPT_CHILD,
};

static const struct option long_opts[] = {
	{ "ia", required_argument, NULL, 'p' },
	{ "provider-path", required_argument, NULL, OPT_PROVIDER_PATH },
	{ "list", no_argument, NULL, OPT_LIST },
	{ "run", required_argument, NULL, OPT_RUN },
	{ "xml", required_argument, NULL, OPT_XML },
	{ "server", no_argument, NULL, OPT_SERVER },
	{ "client", required_argument, NULL, OPT_CLIENT },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "long", no_argument, NULL, OPT_LONG },
	{ "cycles", required_argument, NULL, OPT_CYCLES },
	{ "no-fork", no_argument, NULL, OPT_NO_FORK },
	{ "netcut", no_argument, NULL, OPT_NETCUT },
	{ "unreachable-addr", required_argument, NULL, OPT_UNREACHABLE },
	{ "blackhole-addr", required_argument, NULL, OPT_BLACKHOLE },
	{ "half-open", required_argument, NULL, OPT_HALF_OPEN },
	{ "server-addr", required_argument, NULL, OPT_SERVER_ADDR },
	{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
	{ "test-timeout", required_argument, NULL, OPT_TEST_TIMEOUT },
	{ "timeout-scale", required_argument, NULL, OPT_SCALE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "child-connect", required_argument, NULL, OPT_CHILD },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: rapt-conformance [OPTION]...\n"
"Certify a rapt provider through the public API.\n"
"\n"
"  -p, --ia NAME            IA to test (\"tcp\", \"tcp:lo\"...); default: the best\n"
"      --provider-path DSO  test an out-of-tree provider DSO\n"
"                           (librapt-<name>-pv<N>.so)\n"
"      --list               list areas and tests, then exit\n"
"      --run AREA[/TEST]    run only these (repeatable)\n"
"      --xml FILE           write a JUnit XML report\n"
"  -v, --verbose            print failures and notes as they happen\n"
"\n"
"Two hosts:\n"
"      --server             serve passive roles (one client at a time)\n"
"      --once               with --server: exit after one client\n"
"      --client HOST        run against a server on HOST\n"
"      --port P             control channel port (default %u)\n"
"      --server-addr ADDR   the server's RDMA address, if not its IA's own\n"
"\n"
"Fault injection (\"none\", the default, skips the test: nothing is sent\n"
"outside the machine unless you name an address):\n"
"      --unreachable-addr A address that gives UNREACHABLE\n"
"      --blackhole-addr A   address that never answers: TIMED_OUT\n"
"      --netcut             this network namespace is the suite's own: the\n"
"                           silent-peer tests may cut links in it with nft\n"
"                           (root)\n"
"      --half-open MODE     silent half-open client for the backlog tests:\n"
"                           socket (a TCP socket to the PSP's port),\n"
"                           connect:ADDR (rapt_ep_connect to ADDR), none;\n"
"                           default: socket on iWARP transports, else none\n"
"      --no-fork            skip the tests that need a second process\n"
"\n"
"Size and time:\n"
"      --long               1000 connect/disconnect cycles instead of 100\n"
"      --cycles N           exactly N cycles\n"
"      --max-size BYTES     largest message and RDMA size swept (default 1 MiB)\n"
"      --test-timeout S     abort if one test runs longer (default 300)\n"
"      --timeout-scale N    multiply every timeout by N (slow machines)\n"
"\n"
"Exit status: 0 if no test failed, 1 if one did, 2 on a usage error,\n"
"3 if a test hung.\n", CONF_DEFAULT_PORT);
}

static int parse_uint(const char *opt, const char *s, unsigned int min,
		      unsigned int max, unsigned int *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || !*s || *end || v < min || v > max) {
		fprintf(stderr, "rapt-conformance: %s %s: expected a number in %u..%u\n",
			opt, s, min, max);
		return -1;
	}
	*out = (unsigned int)v;
	return 0;
}

static int parse_half_open(const char *s)
{
	if (!strcmp(s, "none")) {
		conf_opt.half_open = CONF_HO_NONE;
	} else if (!strcmp(s, "socket")) {
		conf_opt.half_open = CONF_HO_SOCKET;
	} else if (!strncmp(s, "connect:", 8) &&
		   !conf_addr_parse(s + 8, &conf_opt.half_open_addr)) {
		conf_opt.half_open = CONF_HO_CONNECT;
	} else {
		fprintf(stderr, "rapt-conformance: --half-open %s: expected socket, connect:ADDR or none\n",
			s);
		return -1;
	}
	return 0;
}

static int check_addr_opt(const char *opt, const char *s)
{
	struct sockaddr_storage ss;

	if (!s || !strcmp(s, "none") || !conf_addr_parse(s, &ss))
		return 0;
	fprintf(stderr, "rapt-conformance: %s %s: expected an IP address or none\n",
		opt, s);
	return -1;
}

/*
 * --provider-path DSO: put its directory first in RAPT_PROVIDER_PATH and
 * test the provider its file name names, unless -p says which IA.
 */
static int use_provider_path(const char *dso)
{
	static char name[64];
	char *d1 = strdup(dso), *d2 = strdup(dso);
	const char *dir, *base, *old, *pv;
	char *env = NULL;
	size_t n;
	int ret = -1;

	if (!d1 || !d2)
		goto out;
	dir = dirname(d1);
	base = basename(d2);
	pv = strstr(base, "-pv");
	if (strncmp(base, "librapt-", 8) || !pv || pv <= base + 8 ||
	    !strstr(pv, ".so")) {
		fprintf(stderr, "rapt-conformance: --provider-path %s: expected a file named librapt-<name>-pv<N>.so\n",
			dso);
		goto out;
	}
	if (access(dso, R_OK)) {
		fprintf(stderr, "rapt-conformance: --provider-path %s: %s\n",
			dso, strerror(errno));
		goto out;
	}
	n = (size_t)(pv - (base + 8));
	if (n >= sizeof(name))
		goto out;
	memcpy(name, base + 8, n);
	name[n] = '\0';
	old = getenv("RAPT_PROVIDER_PATH");
	if (asprintf(&env, "%s%s%s", dir, old && *old ? ":" : "",
		     old ? old : "") < 0)
		goto out;
	setenv("RAPT_PROVIDER_PATH", env, 1);
	if (!conf_opt.ia_name)
		conf_opt.ia_name = name;
	else if (strncmp(conf_opt.ia_name, name, n) ||
		 (conf_opt.ia_name[n] && conf_opt.ia_name[n] != ':'))
		fprintf(stderr, "rapt-conformance: warning: -p %s is not a device of provider %s\n",
			conf_opt.ia_name, name);
	ret = 0;
out:
	free(env);
	free(d1);
	free(d2);
	return ret;
}

static int add_run(const char *r)
{
	const char **n = realloc(conf_opt.runs,
				 (conf_opt.nruns + 1) * sizeof(*n));

	if (!n)
		return -1;
	n[conf_opt.nruns++] = r;
	conf_opt.runs = n;
	return 0;
}

/* Return: 0 to go on, 1 to exit 0, -1 to exit 2. */
static int parse_opts(int argc, char **argv, const char **child,
		      const char **ppath)
{
	int o;

	while ((o = getopt_long(argc, argv, "p:vh", long_opts, NULL)) != -1) {
		switch (o) {
		case 'p': conf_opt.ia_name = optarg; break;
		case OPT_PROVIDER_PATH: *ppath = optarg; break;
		case OPT_LIST: conf_opt.list = true; break;
		case OPT_RUN: if (add_run(optarg)) return -1; break;
		case OPT_XML: conf_opt.xml = optarg; break;
		case OPT_SERVER: conf_opt.mode = CONF_MODE_SERVER; break;
		case OPT_CLIENT:
			conf_opt.mode = CONF_MODE_CLIENT;
			conf_opt.host = optarg;
			break;
		case OPT_PORT:
			if (parse_uint("--port", optarg, 1, 65535,
				       &conf_opt.port))
				return -1;
			break;
		case OPT_ONCE: conf_opt.once = true; break;
		case OPT_LONG: conf_opt.long_run = true; break;
		case OPT_CYCLES:
			if (parse_uint("--cycles", optarg, 1, 10000000,
				       &conf_opt.cycles))
				return -1;
			break;
		case OPT_NO_FORK: conf_opt.no_fork = true; break;
		case OPT_NETCUT: conf_opt.netcut = true; break;
		case OPT_UNREACHABLE: conf_opt.unreachable = optarg; break;
		case OPT_BLACKHOLE: conf_opt.blackhole = optarg; break;
		case OPT_HALF_OPEN:
			if (parse_half_open(optarg))
				return -1;
			break;
		case OPT_SERVER_ADDR: conf_opt.server_addr = optarg; break;
		case OPT_MAX_SIZE:
			if (parse_uint("--max-size", optarg, 1, 1u << 30,
				       &conf_opt.max_size))
				return -1;
			break;
		case OPT_TEST_TIMEOUT:
			if (parse_uint("--test-timeout", optarg, 1, 86400,
				       &conf_opt.test_timeout_s))
				return -1;
			break;
		case OPT_SCALE:
			if (parse_uint("--timeout-scale", optarg, 1, 100,
				       &conf_opt.scale))
				return -1;
			break;
		case 'v': conf_opt.verbose = true; break;
		case 'h': usage(stdout); return 1;
		case OPT_VERSION:
			printf("rapt-conformance %s (protocol %d)\n",
			       PACKAGE_VERSION, CONF_PROTO_VERSION);
			return 1;
		case OPT_CHILD: *child = optarg; break;
		default: usage(stderr); return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rapt-conformance: unexpected argument '%s'\n",
			argv[optind]);
		return -1;
	}
	if (check_addr_opt("--unreachable-addr", conf_opt.unreachable) ||
	    check_addr_opt("--blackhole-addr", conf_opt.blackhole) ||
	    check_addr_opt("--server-addr", conf_opt.server_addr))
		return -1;
	return 0;
}

/* The path of this program, for the peer-process child. */
static const char *self_exe(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	if (n <= 0)
		return NULL;
	path[n] = '\0';
	return path;
}

int main(int argc, char **argv)
{
	const char *child = NULL, *ppath = NULL;
	pthread_t wd;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	ret = parse_opts(argc, argv, &child, &ppath);
	if (ret)
		return ret > 0 ? 0 : 2;
	if (ppath && use_provider_path(ppath))
		return 2;
	if (child) {
		char *sid = strrchr(child, ',');

		if (!sid)
			return 2;
		*sid++ = '\0';
		return conf_child_main(conf_opt.ia_name, child, sid);
	}
	if (conf_opt.list) {
		list_tests();
		return 0;
	}
	if (check_runs())
		return 2;
	conf_opt.self_exe = self_exe();
	pthread_create(&wd, NULL, watchdog, NULL);
	if (conf_opt.mode == CONF_MODE_SERVER) {
		ret = mode_server();
	} else {
		printf("rapt-conformance %s, %s mode\n", PACKAGE_VERSION,
		       conf_opt.mode == CONF_MODE_CLIENT ? "two-host" :
		       "loopback");
		ret = print_ia() ? 1 : conf_opt.mode == CONF_MODE_CLIENT ?
		      mode_client() : mode_loopback();
	}
	pthread_mutex_lock(&wd_lock);
	wd_stop = true;
	pthread_cond_signal(&wd_cond);
	pthread_mutex_unlock(&wd_lock);
	pthread_join(wd, NULL);
	free(conf_opt.runs);
	return ret;
}
