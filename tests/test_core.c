/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the core's rules, driven through the test-only provider
 * ("test:loop": everything advertised, raw pdata limits 256; "test:ibsim":
 * IB-like limits 56/196/148/0): handle validation, busy rules, the EP state
 * machine, private-data framing and limits, PSP counters and busy rejects.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <rapt/provider.h>
#include <rapt/rapt.h>

#define WAIT_US 5000000	/* generous: the fixture runs a thread per IA */

/*
 * One IA with the objects most tests need.  Where the IA lets streams
 * share an EVD, @evd carries DTO, CONNECTION and CR and @cr/@conn name it
 * too; otherwise (test:ibsim) each stream has its own EVD.
 */
struct fix {
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_evd *evd;	/* DTO (and the rest where merging works) */
	struct rapt_evd *cr;	/* CR arrivals */
	struct rapt_evd *conn;	/* connection events */
	struct rapt_ia_attr attr;
};

static int fix_open(struct fix *f, const char *name)
{
	const unsigned int all = RAPT_EVD_DTO | RAPT_EVD_CONNECTION |
				 RAPT_EVD_CR;

	memset(f, 0, sizeof(*f));
	if (rapt_ia_open(name, &f->ia))
		return -1;
	CU_ASSERT_EQUAL_FATAL(rapt_ia_query(f->ia, &f->attr, sizeof(f->attr)), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_pz_create(f->ia, &f->pz), 0);
	if ((f->attr.evd_merge[0] & all) == all) {
		CU_ASSERT_EQUAL_FATAL(rapt_evd_create(f->ia, 256, all,
						      &f->evd), 0);
		f->cr = f->conn = f->evd;
		return 0;
	}
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(f->ia, 256, RAPT_EVD_DTO,
					      &f->evd), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(f->ia, 256, RAPT_EVD_CR,
					      &f->cr), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(f->ia, 256, RAPT_EVD_CONNECTION,
					      &f->conn), 0);
	return 0;
}

static void fix_close(struct fix *f)
{
	if (f->cr != f->evd) {
		CU_ASSERT_EQUAL(rapt_evd_free(f->cr), 0);
		CU_ASSERT_EQUAL(rapt_evd_free(f->conn), 0);
	}
	CU_ASSERT_EQUAL(rapt_evd_free(f->evd), 0);
	CU_ASSERT_EQUAL(rapt_pz_free(f->pz), 0);
	CU_ASSERT_EQUAL(rapt_ia_close(f->ia), 0);
}

/* An EVD for one stream set, on an IA whose merging may be restricted. */
static struct rapt_evd *evd_new(struct fix *f, unsigned int streams)
{
	struct rapt_evd *evd = NULL;

	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(f->ia, 64, streams, &evd), 0);
	return evd;
}

static struct rapt_ep *ep_new(struct fix *f, struct rapt_evd *evd)
{
	struct rapt_ep *ep = NULL;

	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(f->pz, evd, evd, f->conn, NULL,
					     &ep), 0);
	return ep;
}

static struct sockaddr_in loopback(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sin;
}

/* Wait for the next event, which must be of @type. */
static int expect(struct rapt_evd *evd, uint32_t type, struct rapt_event *ev)
{
	int ret = rapt_evd_wait(evd, WAIT_US, 1, ev, NULL);

	CU_ASSERT_EQUAL(ret, 0);
	if (ret)
		return ret;
	if (ev->type != type)
		fprintf(stderr, "expected event %#x, got %#x\n", type, ev->type);
	CU_ASSERT_EQUAL(ev->type, type);
	return ev->type == type ? 0 : -1;
}

/* Nothing may be queued on @evd (after a failed call, say). */
static void expect_none(struct rapt_evd *evd)
{
	struct rapt_event ev;

	CU_ASSERT_EQUAL(rapt_evd_wait(evd, 100000, 1, &ev, NULL),
			RAPT_ETIMEDOUT);
}

static struct rapt_psp *listen_on(struct fix *f, uint64_t sid,
				  uint32_t backlog)
{
	struct rapt_psp_attr pa = { .backlog = backlog };
	struct rapt_psp *psp = NULL;

	CU_ASSERT_EQUAL_FATAL(rapt_psp_create(f->ia, sid, f->cr, &pa, &psp),
			      0);
	return psp;
}

/* Connect @a to @sid with @pdata and return the CR that arrives. */
static struct rapt_cr *request(struct fix *f, struct rapt_ep *a, uint64_t sid,
			       const void *pdata, size_t len)
{
	struct sockaddr_in sin = loopback();
	struct rapt_event ev;

	CU_ASSERT_EQUAL_FATAL(rapt_ep_connect(a, (struct sockaddr *)&sin, sid,
					      pdata, len, WAIT_US), 0);
	if (expect(f->cr, RAPT_EV_CR_ARRIVAL, &ev))
		return NULL;
	return ev.u.cr.cr;
}

/* ------------------------------------------------------------------ */

static void test_strerror(void)
{
	static const int codes[] = {
		RAPT_EINVAL, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_ESTATE,
		RAPT_ELENGTH, RAPT_ENOPROVIDER, RAPT_EDLOPEN, RAPT_EABI,
		RAPT_ECONFIG, RAPT_EBUSY, RAPT_ENOTSUP, RAPT_EAGAIN,
	};
	size_t i, j;

	CU_ASSERT_STRING_EQUAL(rapt_err_name(0), "RAPT_OK");
	CU_ASSERT_STRING_EQUAL(rapt_err_name(RAPT_EBADHANDLE),
			       "RAPT_EBADHANDLE");
	CU_ASSERT_STRING_EQUAL(rapt_err_name(-12345), "RAPT_E?");
	CU_ASSERT_EQUAL(RAPT_EINVAL, -EINVAL);
	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		CU_ASSERT(codes[i] < 0);
		for (j = 0; j < i; j++)
			CU_ASSERT_STRING_NOT_EQUAL(rapt_strerror(codes[i]),
						   rapt_strerror(codes[j]));
	}
}

/*
 * The expected names are written out here, not generated from the X-macro
 * lists, so a wrong entry in RAPT_EVENT_TYPE_MAP or RAPT_EP_STATE_MAP
 * fails; the counts make a new enumerator without a row here fail too.
 */
static const struct {
	uint32_t value;
	const char *name;
} event_names[] = {
	{ 0x0001, "DTO" },
	{ 0x0101, "CR_ARRIVAL" },
	{ 0x0201, "ESTABLISHED" },
	{ 0x0202, "PEER_REJECTED" },
	{ 0x0203, "NON_PEER_REJECTED" },
	{ 0x0204, "UNREACHABLE" },
	{ 0x0205, "TIMED_OUT" },
	{ 0x0206, "ACCEPT_ERROR" },
	{ 0x0207, "DISCONNECTED" },
	{ 0x0208, "BROKEN" },
	{ 0x0401, "ASYNC_EVD_OVERFLOW" },
	{ 0x0402, "ASYNC_EP_BROKEN" },
	{ 0x0403, "ASYNC_IA_CATASTROPHIC" },
	{ 0x0404, "ASYNC_PROVIDER_ERROR" },
	{ 0x0405, "ASYNC_SRQ_LOW_WATERMARK" },
	{ 0x0801, "SOFTWARE" },
}, ep_state_names[] = {
	{ 1, "UNCONNECTED" },
	{ 2, "ACTIVE_PENDING" },
	{ 3, "PASSIVE_PENDING" },
	{ 4, "CONNECTED" },
	{ 5, "DISCONNECT_PENDING" },
	{ 6, "DISCONNECTED" },
	{ 7, "RESERVED" },
};

#define COUNT_ONE(name, val) + 1

static void test_event_names(void)
{
	static const uint32_t unknown[] = {
		0, 0x0002, 0x0100, 0x0209, 0x0406, 0x0800, 0xffffffff,
	};
	size_t i;

	CU_ASSERT_EQUAL(sizeof(event_names) / sizeof(event_names[0]),
			0 RAPT_EVENT_TYPE_MAP(COUNT_ONE));
	for (i = 0; i < sizeof(event_names) / sizeof(event_names[0]); i++)
		CU_ASSERT_STRING_EQUAL(rapt_event_name(event_names[i].value),
				       event_names[i].name);
	/* the enumerators themselves, as a consumer spells them */
	CU_ASSERT_EQUAL(RAPT_EV_ESTABLISHED, 0x0201);
	CU_ASSERT_STRING_EQUAL(rapt_event_name(RAPT_EV_SOFTWARE), "SOFTWARE");
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		CU_ASSERT_STRING_EQUAL(rapt_event_name(unknown[i]), "UNKNOWN");
}

static void test_ep_state_names(void)
{
	static const uint32_t unknown[] = { 0, 8, 0x0201, 0xffffffff };
	size_t i;

	CU_ASSERT_EQUAL(sizeof(ep_state_names) / sizeof(ep_state_names[0]),
			0 RAPT_EP_STATE_MAP(COUNT_ONE));
	for (i = 0; i < sizeof(ep_state_names) / sizeof(ep_state_names[0]); i++)
		CU_ASSERT_STRING_EQUAL(
			rapt_ep_state_name(ep_state_names[i].value),
			ep_state_names[i].name);
	/* every state rapt_ep_get_state() can report has a name */
#define STATE_NAMED(name, val)						\
	CU_ASSERT_STRING_NOT_EQUAL(rapt_ep_state_name(RAPT_EP_##name),	\
				   "UNKNOWN");
	RAPT_EP_STATE_MAP(STATE_NAMED)
#undef STATE_NAMED
	CU_ASSERT_STRING_EQUAL(rapt_ep_state_name(RAPT_EP_DISCONNECT_PENDING),
			       "DISCONNECT_PENDING");
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		CU_ASSERT_STRING_EQUAL(rapt_ep_state_name(unknown[i]),
				       "UNKNOWN");
}

static void test_pdata_framing(void)
{
	uint8_t buf[64], data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct rapt_pdata_view v;
	size_t n;

	n = rapt_prov_pdata_frame(RAPT_PDATA_CONSUMER, data, 8, buf);
	CU_ASSERT_EQUAL(n, 12);
	CU_ASSERT_EQUAL(buf[0], 0xa7);
	CU_ASSERT_EQUAL(buf[1], 0x52);
	CU_ASSERT_EQUAL(buf[2], 0x10);
	CU_ASSERT_EQUAL(buf[3], 8);
	CU_ASSERT_EQUAL(rapt_prov_pdata_parse(buf, n, &v), 0);
	CU_ASSERT_FALSE(v.foreign);
	CU_ASSERT_EQUAL(v.len, 8);
	CU_ASSERT_EQUAL(memcmp(v.data, data, 8), 0);

	/* IB pads: trailing bytes beyond the header's length are ignored */
	memset(buf + n, 0, 20);
	CU_ASSERT_EQUAL(rapt_prov_pdata_parse(buf, n + 20, &v), 0);
	CU_ASSERT_EQUAL(v.len, 8);
	/* ... and pdata_end says where a provider's own bytes begin */
	CU_ASSERT_EQUAL(rapt_prov_pdata_end(buf, n + 20), 12);
	CU_ASSERT_EQUAL(rapt_prov_pdata_end(buf, n), 12);
	CU_ASSERT_EQUAL(rapt_prov_pdata_end(buf, n - 1), 0);
	CU_ASSERT_EQUAL(rapt_prov_pdata_end(data, 8), 0);
	CU_ASSERT_EQUAL(rapt_prov_pdata_end(NULL, 0), 0);

	/* BUSY marker */
	n = rapt_prov_pdata_frame(RAPT_PDATA_BUSY, NULL, 0, buf);
	CU_ASSERT_EQUAL(n, 4);
	CU_ASSERT_EQUAL(rapt_prov_pdata_parse(buf, n, &v), 0);
	CU_ASSERT_EQUAL(v.kind, RAPT_PDATA_BUSY);
	CU_ASSERT_EQUAL(v.len, 0);

	/* foreign: no magic, or too short to hold a header */
	CU_ASSERT_EQUAL(rapt_prov_pdata_parse(data, 8, &v), 0);
	CU_ASSERT_TRUE(v.foreign);
	CU_ASSERT_EQUAL(v.len, 8);
	CU_ASSERT_PTR_EQUAL(v.data, data);
	CU_ASSERT_EQUAL(rapt_prov_pdata_parse(buf, 3, &v), 0);
	CU_ASSERT_TRUE(v.foreign);

	/* nothing at all is foreign: a rapt peer always sends the header */
	CU_ASSERT_EQUAL(rapt_prov_pdata_parse(NULL, 0, &v), 0);
	CU_ASSERT_TRUE(v.foreign);
	CU_ASSERT_EQUAL(v.len, 0);

	/* a header claiming more bytes than arrived */
	rapt_prov_pdata_frame(RAPT_PDATA_CONSUMER, data, 8, buf);
	CU_ASSERT_EQUAL(rapt_prov_pdata_parse(buf, 10, &v), RAPT_EPROTO);
	CU_ASSERT_TRUE(v.foreign);

	/* an unknown header version */
	buf[2] = 0x20;
	CU_ASSERT_EQUAL(rapt_prov_pdata_parse(buf, 12, &v), RAPT_EVERSION);
	CU_ASSERT_EQUAL(v.version, 2);
}

static void test_handles(void)
{
	enum rapt_handle_type type;
	struct rapt_ia_attr attr;
	struct rapt_pz *pz;
	struct fix f;
	void *ctx = NULL;
	int x;

	if (fix_open(&f, "test:loop")) {
		CU_FAIL("cannot open test:loop");
		return;
	}
	/* NULL and wrong-type handles */
	CU_ASSERT_EQUAL(rapt_ia_query(NULL, &attr, sizeof(attr)),
			RAPT_EBADHANDLE);
	CU_ASSERT_EQUAL(rapt_ia_query((struct rapt_ia *)f.pz, &attr,
				      sizeof(attr)), RAPT_EHANDLETYPE);
	CU_ASSERT_PTR_NOT_NULL(strstr(rapt_last_error(), "PZ"));
	CU_ASSERT_EQUAL(rapt_pz_free((struct rapt_pz *)f.evd),
			RAPT_EHANDLETYPE);
	/* a value that was never a handle */
	CU_ASSERT_EQUAL(rapt_pz_free((struct rapt_pz *)(uintptr_t)0xdead0001),
			RAPT_EBADHANDLE);
	/* context and type */
	CU_ASSERT_EQUAL(rapt_context_set(f.pz, &x), 0);
	CU_ASSERT_EQUAL(rapt_context_get(f.pz, &ctx), 0);
	CU_ASSERT_PTR_EQUAL(ctx, &x);
	CU_ASSERT_EQUAL(rapt_handle_type(f.evd, &type), 0);
	CU_ASSERT_EQUAL(type, RAPT_HANDLE_EVD);
	/* stale: a freed handle stays invalid even when its slot is reused */
	CU_ASSERT_EQUAL(rapt_pz_create(f.ia, &pz), 0);
	CU_ASSERT_EQUAL(rapt_pz_free(pz), 0);
	CU_ASSERT_EQUAL(rapt_pz_free(pz), RAPT_EBADHANDLE);
	CU_ASSERT_EQUAL(rapt_context_get(pz, &ctx), RAPT_EBADHANDLE);
	{
		struct rapt_pz *pz2;

		CU_ASSERT_EQUAL(rapt_pz_create(f.ia, &pz2), 0);
		CU_ASSERT_PTR_NOT_EQUAL(pz2, pz);
		CU_ASSERT_EQUAL(rapt_pz_free(pz), RAPT_EBADHANDLE);
		CU_ASSERT_EQUAL(rapt_pz_free(pz2), 0);
	}
	fix_close(&f);
	CU_ASSERT_EQUAL(rapt_ia_close(f.ia), RAPT_EBADHANDLE);
}

static void test_busy_rules(void)
{
	struct rapt_lmr *lmr;
	struct rapt_ep *ep;
	static char buf[4096];
	struct fix f;

	if (fix_open(&f, "test:loop")) {
		CU_FAIL("cannot open test:loop");
		return;
	}
	CU_ASSERT_EQUAL(rapt_ia_close(f.ia), RAPT_EBUSY);
	CU_ASSERT_EQUAL(rapt_lmr_create(f.pz, buf, sizeof(buf),
					RAPT_MEM_LOCAL_WRITE, &lmr, NULL), 0);
	CU_ASSERT_EQUAL(rapt_pz_free(f.pz), RAPT_EBUSY);
	CU_ASSERT_EQUAL(rapt_lmr_free(lmr), 0);
	ep = ep_new(&f, f.evd);
	CU_ASSERT_EQUAL(rapt_pz_free(f.pz), RAPT_EBUSY);
	CU_ASSERT_EQUAL(rapt_evd_free(f.evd), RAPT_EBUSY);
	CU_ASSERT_EQUAL(rapt_ep_free(ep), 0);
	fix_close(&f);
}

static void test_lmr_args(void)
{
	struct rapt_lmr_info info, q;
	struct rapt_lmr *lmr;
	static char buf[4096];
	struct fix f;

	if (fix_open(&f, "test:loop")) {
		CU_FAIL("cannot open test:loop");
		return;
	}
	CU_ASSERT_EQUAL(rapt_lmr_create(f.pz, buf, 0, 0, &lmr, NULL),
			RAPT_EINVAL);
	CU_ASSERT_EQUAL(rapt_lmr_create(f.pz, NULL, 16, 0, &lmr, NULL),
			RAPT_EINVAL);
	CU_ASSERT_EQUAL(rapt_lmr_create(f.pz, buf, 16, 0x80, &lmr, NULL),
			RAPT_EINVAL);
	CU_ASSERT_EQUAL(rapt_lmr_create(f.pz, buf, f.attr.max_lmr_size + 1,
					0, &lmr, NULL), RAPT_ERANGE);
	CU_ASSERT_EQUAL(rapt_lmr_create(f.pz, buf, sizeof(buf),
					RAPT_MEM_REMOTE_READ, &lmr, &info), 0);
	CU_ASSERT_EQUAL(info.length, sizeof(buf));
	CU_ASSERT_EQUAL(info.access, RAPT_MEM_REMOTE_READ);
	CU_ASSERT_EQUAL(rapt_lmr_query(lmr, &q), 0);
	CU_ASSERT_EQUAL(q.lkey, info.lkey);
	CU_ASSERT_EQUAL(q.rkey, info.rkey);
	CU_ASSERT_EQUAL(q.raddr, info.raddr);
	CU_ASSERT_EQUAL(rapt_lmr_free(lmr), 0);
	fix_close(&f);
}

/*
 * The mapping check of rapt_lmr_create() keeps /proc/self/maps open.  A
 * child of fork() must check its own mappings, not its parent's through
 * the inherited descriptor; a program that closes that descriptor (or
 * puts another file on its number) must still get every check.  Each
 * case would pass a wrong region, or refuse a right one, if the check
 * read the wrong table.
 */
static int map_ok(struct rapt_pz *pz, void *p, size_t len)
{
	struct rapt_lmr *lmr;
	int ret = rapt_lmr_create(pz, p, len, RAPT_MEM_LOCAL_WRITE, &lmr,
				  NULL);

	if (!ret)
		rapt_lmr_free(lmr);
	return ret;
}

/*
 * In the child: a region only the child has, and one only the parent
 * still has; exit 0 when both are judged by the child's table.  The
 * child opens an IA of its own: the parent forked with none open, so no
 * provider thread held a lock the child would need.
 */
static int fork_child(uint8_t *parent_only, size_t pg)
{
	uint8_t *mine = mmap(NULL, pg, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	int ret = 0;

	/* (no CUnit here: its asserts belong to the parent's run) */
	if (mine == MAP_FAILED || munmap(parent_only, pg))
		return 2;
	if (rapt_ia_open("test:loop", &ia) || rapt_pz_create(ia, &pz))
		return 5;
	if (map_ok(pz, mine, pg))
		ret = 3;
	else if (map_ok(pz, parent_only, pg) != RAPT_EFAULT)
		ret = 4;
	rapt_pz_free(pz);
	rapt_ia_close(ia);
	return ret;
}

static int maps_fd(void)
{
	char path[64], target[256];
	ssize_t n;
	int fd;

	for (fd = 3; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (strstr(target, "/maps"))
			return fd;
	}
	return -1;
}

static void test_lmr_check_fork(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *a, *gone;
	struct fix f;
	pid_t pid;
	int st, fd, nul;

	a = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(a != MAP_FAILED);
	/* The first check opens the table; the IA (and its provider
	 * thread) is gone again before the fork. */
	if (fix_open(&f, "test:loop")) {
		CU_FAIL("cannot open test:loop");
		return;
	}
	CU_ASSERT_EQUAL(map_ok(f.pz, a, 2 * pg), 0);
	fix_close(&f);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid)
		_exit(fork_child(a + pg, pg));
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "child: exit %d\n", WEXITSTATUS(st));
	if (fix_open(&f, "test:loop")) {
		CU_FAIL("cannot open test:loop");
		return;
	}
	CU_ASSERT_EQUAL(map_ok(f.pz, a, 2 * pg), 0);	/* the parent's */
	/* Another file on the kept descriptor's number, behind rapt's
	 * back: the checks go on, and stay right. */
	fd = maps_fd();
	if (fd >= 0) {
		nul = open("/dev/null", O_RDONLY);
		CU_ASSERT_FATAL(nul >= 0);
		CU_ASSERT_EQUAL(dup2(nul, fd), fd);
		close(nul);
	}
	gone = a + pg;
	CU_ASSERT_EQUAL(munmap(gone, pg), 0);
	CU_ASSERT_EQUAL(map_ok(f.pz, gone, pg), RAPT_EFAULT);
	CU_ASSERT_EQUAL(map_ok(f.pz, a, pg), 0);
	if (fd >= 0)
		close(fd);
	CU_ASSERT_EQUAL(map_ok(f.pz, gone, pg), RAPT_EFAULT);
	CU_ASSERT_EQUAL(map_ok(f.pz, a, pg), 0);
	munmap(a, pg);
	fix_close(&f);
}

static void test_ep_create_rules(void)
{
	struct rapt_ep_attr a = { 0 };
	struct rapt_ep_info info;
	struct rapt_evd *cr_only;
	struct rapt_ep *ep;
	struct fix f;

	if (fix_open(&f, "test:loop")) {
		CU_FAIL("cannot open test:loop");
		return;
	}
	a.max_send = f.attr.max_send_depth + 1;
	CU_ASSERT_EQUAL(rapt_ep_create(f.pz, f.evd, f.evd, f.evd, &a, &ep),
			RAPT_ERANGE);
	a.max_send = 0;
	a.flags = 0x100;
	CU_ASSERT_EQUAL(rapt_ep_create(f.pz, f.evd, f.evd, f.evd, &a, &ep),
			RAPT_EINVAL);
	CU_ASSERT_EQUAL(rapt_ep_create(f.pz, f.evd, f.evd, NULL, NULL, &ep),
			RAPT_EINVAL);
	cr_only = evd_new(&f, RAPT_EVD_CR);
	CU_ASSERT_EQUAL(rapt_ep_create(f.pz, cr_only, f.evd, f.evd, NULL, &ep),
			RAPT_EINVAL);
	CU_ASSERT_EQUAL(rapt_ep_create(f.pz, f.evd, f.evd, cr_only, NULL, &ep),
			RAPT_EINVAL);
	CU_ASSERT_EQUAL(rapt_evd_free(cr_only), 0);
	/* defaults are filled in and reported */
	ep = ep_new(&f, f.evd);
	CU_ASSERT_EQUAL(rapt_ep_query(ep, &info, sizeof(info)), 0);
	CU_ASSERT_EQUAL(info.state, RAPT_EP_UNCONNECTED);
	CU_ASSERT(info.attr.max_send > 0);
	CU_ASSERT(info.attr.max_recv > 0);
	CU_ASSERT(info.attr.max_send_sge > 0);
	CU_ASSERT_EQUAL(rapt_ep_free(ep), 0);
	fix_close(&f);
}

static void test_ep_state_rules(void)
{
	struct sockaddr_in sin = loopback();
	static char buf[256];
	struct rapt_lmr_info li;
	enum rapt_ep_state st;
	struct rapt_ep_attr a;
	struct rapt_lmr *lmr;
	struct rapt_ep *ep;
	struct rapt_sge sge;
	struct fix f;

	if (fix_open(&f, "test:loop")) {
		CU_FAIL("cannot open test:loop");
		return;
	}
	CU_ASSERT_EQUAL(rapt_lmr_create(f.pz, buf, sizeof(buf),
					RAPT_MEM_LOCAL_WRITE, &lmr, &li), 0);
	sge = (struct rapt_sge){ (uintptr_t)buf, 16, li.lkey };
	ep = ep_new(&f, f.evd);
	/* receives in every state; sends only when connected */
	CU_ASSERT_EQUAL(rapt_ep_post_recv(ep, &sge, 1, 1), 0);
	CU_ASSERT_EQUAL(rapt_ep_post_send(ep, &sge, 1, 2, 0), RAPT_ESTATE);
	CU_ASSERT_EQUAL(rapt_ep_post_write(ep, &sge, 1, 3, 0, 0, 0),
			RAPT_ESTATE);
	CU_ASSERT_EQUAL(rapt_ep_post_read(ep, &sge, 1, 4, 0, 0, 0),
			RAPT_ESTATE);
	CU_ASSERT_EQUAL(rapt_ep_disconnect(ep, 0, NULL, 0), RAPT_ESTATE);
	/* synchronous failures leave the EP as it was and queue nothing */
	CU_ASSERT_EQUAL(rapt_ep_connect(ep, (struct sockaddr *)&sin, 0, NULL,
					0, WAIT_US), RAPT_ERANGE);
	CU_ASSERT_EQUAL(rapt_ep_connect(ep, (struct sockaddr *)&sin, 70000,
					NULL, 0, WAIT_US), RAPT_ERANGE);
	CU_ASSERT_EQUAL(rapt_ep_connect(ep, NULL, 5000, NULL, 0, WAIT_US),
			RAPT_EINVAL);
	CU_ASSERT_EQUAL(rapt_ep_get_state(ep, &st), 0);
	CU_ASSERT_EQUAL(st, RAPT_EP_UNCONNECTED);
	expect_none(f.evd);
	/* EP flags can change before connecting */
	a = (struct rapt_ep_attr){ .flags = RAPT_EP_RAW_PDATA };
	CU_ASSERT_EQUAL(rapt_ep_modify(ep, &a, RAPT_EP_ATTR_FLAGS), 0);
	a.flags = 0;
	CU_ASSERT_EQUAL(rapt_ep_modify(ep, &a, RAPT_EP_ATTR_FLAGS), 0);
	CU_ASSERT_EQUAL(rapt_ep_modify(ep, &a, 0), RAPT_EINVAL);
	/* a free of an EP with a posted receive is fine */
	CU_ASSERT_EQUAL(rapt_ep_free(ep), 0);
	CU_ASSERT_EQUAL(rapt_lmr_free(lmr), 0);
	fix_close(&f);
}

/* Connect, accept, then walk the connected-state rules. */
static void test_connected_rules(void)
{
	static char buf[256];
	struct rapt_lmr_info li;
	struct rapt_ep *a, *p;
	struct rapt_ep_attr at;
	struct rapt_ep_info info;
	struct rapt_event ev;
	struct rapt_psp *psp;
	struct rapt_lmr *lmr;
	struct rapt_sge sge;
	struct rapt_cr *cr;
	struct fix f;

	if (fix_open(&f, "test:loop")) {
		CU_FAIL("cannot open test:loop");
		return;
	}
	CU_ASSERT_EQUAL(rapt_lmr_create(f.pz, buf, sizeof(buf),
					RAPT_MEM_LOCAL_WRITE, &lmr, &li), 0);
	sge = (struct rapt_sge){ (uintptr_t)buf, 16, li.lkey };
	psp = listen_on(&f, 4001, 8);
	a = ep_new(&f, f.evd);
	p = ep_new(&f, f.evd);
	cr = request(&f, a, 4001, "hi", 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cr);
	/* a second connect on a pending EP is a state error */
	{
		struct sockaddr_in sin = loopback();

		CU_ASSERT_EQUAL(rapt_ep_connect(a, (struct sockaddr *)&sin,
						4001, NULL, 0, WAIT_US),
				RAPT_ESTATE);
	}
	CU_ASSERT_EQUAL(rapt_cr_accept(cr, a, NULL, 0), RAPT_ESTATE);
	CU_ASSERT_EQUAL(rapt_cr_accept(cr, p, "ok", 2), 0);
	CU_ASSERT_EQUAL(rapt_cr_accept(cr, p, "ok", 2), RAPT_EBADHANDLE);
	/* both sides establish; order between them is the provider's */
	CU_ASSERT_EQUAL(expect(f.evd, RAPT_EV_ESTABLISHED, &ev), 0);
	CU_ASSERT_EQUAL(expect(f.evd, RAPT_EV_ESTABLISHED, &ev), 0);
	CU_ASSERT_EQUAL(rapt_ep_query(a, &info, sizeof(info)), 0);
	CU_ASSERT_EQUAL(info.state, RAPT_EP_CONNECTED);
	CU_ASSERT(info.rdma_read_out > 0);
	/* connected: flags are frozen, read depths only go down */
	at = (struct rapt_ep_attr){ .flags = RAPT_EP_RAW_PDATA };
	CU_ASSERT_EQUAL(rapt_ep_modify(a, &at, RAPT_EP_ATTR_FLAGS),
			RAPT_ESTATE);
	at.rdma_read_out = info.rdma_read_out + 1;
	CU_ASSERT_EQUAL(rapt_ep_modify(a, &at, RAPT_EP_ATTR_RDMA_READ_OUT),
			RAPT_ERANGE);
	at.rdma_read_out = 1;
	CU_ASSERT_EQUAL(rapt_ep_modify(a, &at, RAPT_EP_ATTR_RDMA_READ_OUT), 0);
	CU_ASSERT_EQUAL(rapt_ep_query(a, &info, sizeof(info)), 0);
	CU_ASSERT_EQUAL(info.rdma_read_out, 1);
	/* flags the provider has, flags nobody has */
	CU_ASSERT_EQUAL(rapt_ep_post_send(a, &sge, 1, 1, 0x1000), RAPT_ENOTSUP);
	CU_ASSERT_EQUAL(rapt_ep_post_send(a, &sge, 9999, 1, 0), RAPT_EINVAL);
	CU_ASSERT_EQUAL(rapt_ep_post_read(a, &sge, 1, 1, 0, 0,
					  RAPT_POST_INLINE), RAPT_EINVAL);
	/* disconnect: DISCONNECTED on both, then sends are refused */
	CU_ASSERT_EQUAL(rapt_ep_disconnect(a, RAPT_CLOSE_GRACEFUL, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect(f.evd, RAPT_EV_DISCONNECTED, &ev), 0);
	CU_ASSERT_EQUAL(expect(f.evd, RAPT_EV_DISCONNECTED, &ev), 0);
	CU_ASSERT_EQUAL(rapt_ep_post_send(a, &sge, 1, 1, 0), RAPT_ESTATE);
	CU_ASSERT_EQUAL(rapt_ep_disconnect(a, 0, NULL, 0), RAPT_ESTATE);
	CU_ASSERT_EQUAL(rapt_ep_free(a), 0);
	CU_ASSERT_EQUAL(rapt_ep_free(p), 0);
	CU_ASSERT_EQUAL(rapt_psp_free(psp), 0);
	CU_ASSERT_EQUAL(rapt_lmr_free(lmr), 0);
	fix_close(&f);
}

/* Every size 0..max on connect, accept and reject arrives exactly. */
static void pdata_roundtrip(const char *ia_name)
{
	uint8_t out[256], tag;
	struct rapt_cr_info ci;
	struct rapt_event ev;
	struct rapt_psp *psp;
	struct rapt_ep *a, *p;
	struct rapt_cr *cr;
	struct fix f;
	uint32_t n;

	if (fix_open(&f, ia_name)) {
		CU_FAIL("cannot open the IA");
		return;
	}
	psp = listen_on(&f, 4002, 8);
	for (n = 0; n <= f.attr.pdata_connect; n++) {
		tag = (uint8_t)n;
		memset(out, tag, sizeof(out));
		a = ep_new(&f, f.evd);
		cr = request(&f, a, 4002, out, n);
		CU_ASSERT_PTR_NOT_NULL_FATAL(cr);
		CU_ASSERT_EQUAL(rapt_cr_query(cr, &ci, sizeof(ci)), 0);
		CU_ASSERT_EQUAL(ci.pdata_len, n);
		CU_ASSERT(n == 0 || memcmp(ci.pdata, out, n) == 0);
		CU_ASSERT_FALSE(ci.flags & RAPT_CRI_FOREIGN_PEER);
		if (n % 2) {
			uint32_t m = n % (f.attr.pdata_reject + 1u);

			CU_ASSERT_EQUAL(rapt_cr_reject(cr, out, m), 0);
			if (!expect(f.conn, RAPT_EV_PEER_REJECTED, &ev)) {
				CU_ASSERT_EQUAL(ev.u.conn.pdata_len, m);
				CU_ASSERT(m == 0 || memcmp(ev.u.conn.pdata, out,
							   m) == 0);
			}
		} else {
			uint32_t m = n % (f.attr.pdata_accept + 1u);

			p = ep_new(&f, f.evd);
			CU_ASSERT_EQUAL(rapt_cr_accept(cr, p, out, m), 0);
			/* the active side's ESTABLISHED carries the pdata */
			for (int k = 0; k < 2; k++) {
				if (expect(f.conn, RAPT_EV_ESTABLISHED, &ev))
					break;
				if (ev.u.conn.ep != a)
					continue;
				CU_ASSERT_EQUAL(ev.u.conn.pdata_len, m);
				CU_ASSERT(m == 0 || memcmp(ev.u.conn.pdata,
							   out, m) == 0);
			}
			/* both sides see the end before the EPs go */
			CU_ASSERT_EQUAL(rapt_ep_disconnect(a, RAPT_CLOSE_ABRUPT,
							   NULL, 0), 0);
			CU_ASSERT_EQUAL(expect(f.conn, RAPT_EV_DISCONNECTED,
					       &ev), 0);
			CU_ASSERT_EQUAL(expect(f.conn, RAPT_EV_DISCONNECTED,
					       &ev), 0);
			CU_ASSERT_EQUAL(rapt_ep_free(p), 0);
		}
		CU_ASSERT_EQUAL(rapt_ep_free(a), 0);
	}
	/* max + 1 fails synchronously everywhere */
	a = ep_new(&f, f.evd);
	{
		struct sockaddr_in sin = loopback();

		CU_ASSERT_EQUAL(rapt_ep_connect(a, (struct sockaddr *)&sin,
						4002, out,
						f.attr.pdata_connect + 1u,
						WAIT_US), RAPT_ELENGTH);
	}
	expect_none(f.conn);
	cr = request(&f, a, 4002, NULL, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cr);
	p = ep_new(&f, f.evd);
	CU_ASSERT_EQUAL(rapt_cr_accept(cr, p, out, f.attr.pdata_accept + 1u),
			RAPT_ELENGTH);
	CU_ASSERT_EQUAL(rapt_cr_reject(cr, out, f.attr.pdata_reject + 1u),
			RAPT_ELENGTH);
	CU_ASSERT_EQUAL(rapt_cr_reject(cr, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect(f.conn, RAPT_EV_PEER_REJECTED, &ev), 0);
	CU_ASSERT_EQUAL(ev.u.conn.pdata_len, 0);
	CU_ASSERT_EQUAL(rapt_ep_free(p), 0);
	CU_ASSERT_EQUAL(rapt_ep_free(a), 0);
	CU_ASSERT_EQUAL(rapt_psp_free(psp), 0);
	fix_close(&f);
}

static void test_pdata_loop(void)
{
	pdata_roundtrip("test:loop");
}

static void test_pdata_ibsim(void)
{
	pdata_roundtrip("test:ibsim");
}

static void test_pdata_limits(void)
{
	struct fix f;

	if (fix_open(&f, "test:ibsim")) {
		CU_FAIL("cannot open test:ibsim");
		return;
	}
	/* the transport's limit minus the 4-byte header */
	CU_ASSERT_EQUAL(f.attr.pdata_connect, 56 - RAPT_PDATA_HEADER_LEN);
	CU_ASSERT_EQUAL(f.attr.pdata_accept, 196 - RAPT_PDATA_HEADER_LEN);
	CU_ASSERT_EQUAL(f.attr.pdata_reject, 148 - RAPT_PDATA_HEADER_LEN);
	CU_ASSERT_EQUAL(f.attr.pdata_disconnect, 0);
	fix_close(&f);
}

/* Raw private data: a foreign-peer EP sends bytes without the header. */
static void test_pdata_raw(void)
{
	struct rapt_ep_attr at = { .flags = RAPT_EP_RAW_PDATA };
	struct rapt_cr_info ci;
	struct rapt_ep_info ei;
	struct rapt_event ev;
	struct rapt_psp *psp;
	struct rapt_ep *a, *p;
	struct rapt_cr *cr;
	uint8_t raw[256];
	struct fix f;

	if (fix_open(&f, "test:loop")) {
		CU_FAIL("cannot open test:loop");
		return;
	}
	memset(raw, 0x5a, sizeof(raw));
	psp = listen_on(&f, 4003, 8);
	CU_ASSERT_EQUAL(rapt_ep_create(f.pz, f.evd, f.evd, f.evd, &at, &a), 0);
	/* raw mode may use the header's bytes too */
	cr = request(&f, a, 4003, raw, f.attr.pdata_connect +
		     RAPT_PDATA_HEADER_LEN);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cr);
	CU_ASSERT_EQUAL(rapt_cr_query(cr, &ci, sizeof(ci)), 0);
	CU_ASSERT_TRUE(ci.flags & RAPT_CRI_FOREIGN_PEER);
	CU_ASSERT_EQUAL(ci.pdata_len, f.attr.pdata_connect +
			RAPT_PDATA_HEADER_LEN);
	CU_ASSERT_EQUAL(memcmp(ci.pdata, raw, ci.pdata_len), 0);
	p = ep_new(&f, f.evd);
	CU_ASSERT_EQUAL(rapt_cr_accept(cr, p, "abc", 3), 0);
	for (int k = 0; k < 2; k++) {
		if (expect(f.evd, RAPT_EV_ESTABLISHED, &ev))
			break;
		/* a foreign requester is answered raw, and the accepting
		 * side knows its peer is foreign */
		CU_ASSERT_TRUE(ev.u.conn.flags & RAPT_CONN_FOREIGN_PEER);
		if (ev.u.conn.ep != a)
			continue;
		CU_ASSERT_EQUAL(ev.u.conn.pdata_len, 3);
		CU_ASSERT_EQUAL(memcmp(ev.u.conn.pdata, "abc", 3), 0);
	}
	CU_ASSERT_EQUAL(rapt_ep_query(p, &ei, sizeof(ei)), 0);
	CU_ASSERT_TRUE(ei.flags & RAPT_EPI_FOREIGN_PEER);
	CU_ASSERT_EQUAL(rapt_ep_free(a), 0);
	CU_ASSERT_EQUAL(rapt_ep_free(p), 0);
	CU_ASSERT_EQUAL(rapt_psp_free(psp), 0);
	fix_close(&f);
}

static void test_psp_rules(void)
{
	struct rapt_psp_attr pa = { .flags = 1 };
	struct rapt_psp *psp, *psp2;
	struct rapt_psp_info pi;
	struct rapt_evd *dto;
	struct fix f;

	if (fix_open(&f, "test:loop")) {
		CU_FAIL("cannot open test:loop");
		return;
	}
	CU_ASSERT_EQUAL(rapt_psp_create(f.ia, 0, f.evd, NULL, &psp),
			RAPT_ERANGE);
	CU_ASSERT_EQUAL(rapt_psp_create(f.ia, 65536, f.evd, NULL, &psp),
			RAPT_ERANGE);
	CU_ASSERT_EQUAL(rapt_psp_create(f.ia, 4004, f.evd, &pa, &psp),
			RAPT_EINVAL);
	dto = evd_new(&f, RAPT_EVD_DTO);
	CU_ASSERT_EQUAL(rapt_psp_create(f.ia, 4004, dto, NULL, &psp),
			RAPT_EINVAL);
	CU_ASSERT_EQUAL(rapt_evd_free(dto), 0);
	psp = listen_on(&f, 4004, 0);
	CU_ASSERT_EQUAL(rapt_psp_create(f.ia, 4004, f.evd, NULL, &psp2),
			RAPT_EADDRINUSE);
	CU_ASSERT_EQUAL(rapt_psp_query(psp, &pi, sizeof(pi)), 0);
	CU_ASSERT_EQUAL(pi.service_id, 4004);
	CU_ASSERT_EQUAL(pi.backlog, 128);	/* the default */
	CU_ASSERT(pi.handshake_limit > 0);
	CU_ASSERT(pi.handshake_timeout_ms > 0);
	CU_ASSERT_EQUAL(rapt_evd_free(f.evd), RAPT_EBUSY);
	CU_ASSERT_EQUAL(rapt_psp_free(psp), 0);
	/* "any" picks a free id in range */
	CU_ASSERT_EQUAL(rapt_psp_create(f.ia, RAPT_SERVICE_ID_ANY, f.evd, NULL,
					&psp), 0);
	CU_ASSERT_EQUAL(rapt_psp_query(psp, &pi, sizeof(pi)), 0);
	CU_ASSERT(pi.service_id >= f.attr.service_id_min &&
		  pi.service_id <= f.attr.service_id_max);
	CU_ASSERT_EQUAL(rapt_psp_free(psp), 0);
	fix_close(&f);
}

/* Fill a backlog of 2: the third requester sees NON_PEER_REJECTED/BUSY. */
static void test_backlog_busy(void)
{
	struct rapt_ep *a[4], *p;
	struct rapt_cr *cr[2];
	struct rapt_psp_info pi;
	struct rapt_event ev;
	struct rapt_psp *psp;
	struct sockaddr_in sin = loopback();
	struct fix f;
	int i;

	if (fix_open(&f, "test:loop")) {
		CU_FAIL("cannot open test:loop");
		return;
	}
	psp = listen_on(&f, 4005, 2);
	for (i = 0; i < 4; i++)
		a[i] = ep_new(&f, f.evd);
	cr[0] = request(&f, a[0], 4005, "0", 1);
	cr[1] = request(&f, a[1], 4005, "1", 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cr[1]);
	CU_ASSERT_EQUAL(rapt_ep_connect(a[2], (struct sockaddr *)&sin, 4005,
					"2", 1, WAIT_US), 0);
	if (!expect(f.evd, RAPT_EV_NON_PEER_REJECTED, &ev)) {
		CU_ASSERT_PTR_EQUAL(ev.u.conn.ep, a[2]);
		CU_ASSERT_EQUAL(ev.u.conn.reason, RAPT_REJECT_BUSY);
		CU_ASSERT_EQUAL(ev.u.conn.pdata_len, 0);
	}
	CU_ASSERT_EQUAL(rapt_psp_query(psp, &pi, sizeof(pi)), 0);
	CU_ASSERT_EQUAL(pi.pending_crs, 2);
	CU_ASSERT_EQUAL(pi.busy_rejects, 1);
	CU_ASSERT_EQUAL(rapt_psp_free(psp), RAPT_EBUSY);
	/* a decision frees a slot */
	CU_ASSERT_EQUAL(rapt_cr_reject(cr[0], "no", 2), 0);
	CU_ASSERT_EQUAL(expect(f.evd, RAPT_EV_PEER_REJECTED, &ev), 0);
	CU_ASSERT_EQUAL(rapt_psp_query(psp, &pi, sizeof(pi)), 0);
	CU_ASSERT_EQUAL(pi.pending_crs, 1);
	CU_ASSERT_EQUAL(pi.rejected, 1);
	cr[0] = request(&f, a[3], 4005, "3", 1);
	CU_ASSERT_PTR_NOT_NULL(cr[0]);
	p = ep_new(&f, f.evd);
	CU_ASSERT_EQUAL(rapt_cr_accept(cr[1], p, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect(f.evd, RAPT_EV_ESTABLISHED, &ev), 0);
	CU_ASSERT_EQUAL(expect(f.evd, RAPT_EV_ESTABLISHED, &ev), 0);
	CU_ASSERT_EQUAL(rapt_cr_reject(cr[0], NULL, 0), 0);
	CU_ASSERT_EQUAL(expect(f.evd, RAPT_EV_PEER_REJECTED, &ev), 0);
	CU_ASSERT_EQUAL(rapt_psp_query(psp, &pi, sizeof(pi)), 0);
	CU_ASSERT_EQUAL(pi.pending_crs, 0);
	CU_ASSERT_EQUAL(pi.accepted, 1);
	CU_ASSERT_EQUAL(pi.rejected, 2);
	CU_ASSERT_EQUAL(pi.busy_rejects, 1);
	CU_ASSERT_EQUAL(rapt_psp_free(psp), 0);
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(rapt_ep_free(a[i]), 0);
	CU_ASSERT_EQUAL(rapt_ep_free(p), 0);
	fix_close(&f);
}

/* A CR can be accepted only with an unconnected EP of its own IA. */
static void test_cr_rules(void)
{
	struct rapt_ep *a, *other_ep;
	struct rapt_event ev;
	struct rapt_psp *psp;
	struct rapt_cr *cr;
	struct fix f, g;

	if (fix_open(&f, "test:loop") || fix_open(&g, "test:loop")) {
		CU_FAIL("cannot open test:loop twice");
		return;
	}
	psp = listen_on(&f, 4006, 4);
	a = ep_new(&f, f.evd);
	other_ep = ep_new(&g, g.evd);
	cr = request(&f, a, 4006, NULL, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cr);
	CU_ASSERT_EQUAL(rapt_cr_accept(cr, other_ep, NULL, 0), RAPT_EINVAL);
	CU_ASSERT_EQUAL(rapt_cr_accept(cr, (struct rapt_ep *)psp, NULL, 0),
			RAPT_EHANDLETYPE);
	/* the CR is still there after failed accepts */
	CU_ASSERT_EQUAL(rapt_cr_reject(cr, NULL, 0), 0);
	CU_ASSERT_EQUAL(expect(f.evd, RAPT_EV_PEER_REJECTED, &ev), 0);
	CU_ASSERT_EQUAL(rapt_cr_reject(cr, NULL, 0), RAPT_EBADHANDLE);
	CU_ASSERT_EQUAL(rapt_ep_free(a), 0);
	CU_ASSERT_EQUAL(rapt_ep_free(other_ep), 0);
	CU_ASSERT_EQUAL(rapt_psp_free(psp), 0);
	fix_close(&g);
	fix_close(&f);
}

/* A CR whose requester went away, never decided, is freed with its IA. */
static void test_cr_orphan(void)
{
	struct rapt_cr_info ci;
	struct rapt_psp_info pi;
	struct rapt_psp *psp;
	struct rapt_ep *a;
	struct rapt_cr *cr;
	struct fix f;
	int i;

	if (fix_open(&f, "test:loop")) {
		CU_FAIL("cannot open test:loop");
		return;
	}
	psp = listen_on(&f, 4007, 4);
	a = ep_new(&f, f.evd);
	cr = request(&f, a, 4007, NULL, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cr);
	CU_ASSERT_EQUAL(rapt_ep_free(a), 0);	/* the requester leaves */
	for (i = 0; i < 500; i++) {
		CU_ASSERT_EQUAL(rapt_psp_query(psp, &pi, sizeof(pi)), 0);
		if (!pi.pending_crs)
			break;
		usleep(10000);
	}
	CU_ASSERT_EQUAL(pi.pending_crs, 0);
	/* still a valid handle until decided or the IA closes */
	CU_ASSERT_EQUAL(rapt_cr_query(cr, &ci, sizeof(ci)), 0);
	CU_ASSERT_EQUAL(rapt_psp_free(psp), 0);
	fix_close(&f);
	CU_ASSERT_EQUAL(rapt_cr_query(cr, &ci, sizeof(ci)), RAPT_EBADHANDLE);
}

/* The IA's EVD stream-merge rule is enforced for every provider. */
static void test_evd_merge(void)
{
	struct rapt_evd *evd;
	struct fix f;

	if (fix_open(&f, "test:ibsim")) {
		CU_FAIL("cannot open test:ibsim");
		return;
	}
	CU_ASSERT_EQUAL(f.attr.evd_merge[0] & RAPT_EVD_CONNECTION, 0);
	CU_ASSERT_EQUAL(rapt_evd_create(f.ia, 8, RAPT_EVD_DTO |
					RAPT_EVD_CONNECTION, &evd),
			RAPT_ENOTSUP);
	CU_ASSERT_EQUAL(rapt_evd_create(f.ia, 8, RAPT_EVD_DTO |
					RAPT_EVD_SOFTWARE, &evd), 0);
	CU_ASSERT_EQUAL(rapt_evd_free(evd), 0);
	fix_close(&f);
}

static const struct {
	const char *name;
	CU_TestFunc fn;
} tests[] = {
	{ "strerror and names", test_strerror },
	{ "event type names", test_event_names },
	{ "EP state names", test_ep_state_names },
	{ "private-data framing", test_pdata_framing },
	{ "handles: NULL, stale, wrong type", test_handles },
	{ "busy rules of parents", test_busy_rules },
	{ "LMR argument checks", test_lmr_args },
	{ "LMR mapping checks after fork and a closed descriptor",
	  test_lmr_check_fork },
	{ "EP create rules", test_ep_create_rules },
	{ "EP state rules before connecting", test_ep_state_rules },
	{ "EP rules once connected", test_connected_rules },
	{ "pdata limits are transport minus header", test_pdata_limits },
	{ "pdata every size, loop", test_pdata_loop },
	{ "pdata every size, ibsim", test_pdata_ibsim },
	{ "raw pdata for foreign peers", test_pdata_raw },
	{ "PSP argument rules", test_psp_rules },
	{ "backlog full gives BUSY", test_backlog_busy },
	{ "CR accept rules", test_cr_rules },
	{ "undecided cancelled CR freed with its IA", test_cr_orphan },
	{ "EVD stream merging", test_evd_merge },
};

int main(void)
{
	CU_pSuite s;
	unsigned int failed;
	size_t i;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("core", NULL, NULL);
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		CU_add_test(s, tests[i].name, tests[i].fn);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}
