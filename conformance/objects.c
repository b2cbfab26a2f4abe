/* SPDX-License-Identifier: MIT */
/*
 * Area "objects": PZ, LMR, EVD and EP lifetimes; parents count children and
 * refuse to go while they have any; NULL, stale, forged and wrong-type
 * handles are defined errors; registration lengths.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conf.h"

static void t_pz(struct conf_ctx *c)
{
	enum rapt_handle_type type;
	struct rapt_pz *pz;
	void *ctx = NULL;

	EXPECT_RC(rapt_pz_create(c->ia, NULL), RAPT_EINVAL);
	REQUIRE_OK(rapt_pz_create(c->ia, &pz));
	conf_track(c, CONF_OBJ_PZ, pz);
	EXPECT_OK(rapt_handle_type(pz, &type));
	EXPECT_EQ(type, RAPT_HANDLE_PZ);
	EXPECT_OK(rapt_context_get(pz, &ctx));
	EXPECT(ctx == NULL);
	EXPECT_OK(rapt_context_set(pz, c));
	EXPECT_OK(rapt_context_get(pz, &ctx));
	EXPECT(ctx == c);
	REQUIRE_OK(rapt_pz_free(pz));
	EXPECT_RC(rapt_pz_free(pz), RAPT_EBADHANDLE);
	EXPECT_RC(rapt_handle_type(pz, &type), RAPT_EBADHANDLE);
	EXPECT_RC(rapt_context_get(pz, &ctx), RAPT_EBADHANDLE);
out:
	return;
}

static void t_pz_busy(struct conf_ctx *c)
{
	struct rapt_evd *evd;
	struct rapt_lmr *lmr;
	struct rapt_pz *pz;
	struct rapt_ep *ep;
	void *buf;

	buf = conf_alloc(c, 4096);
	REQUIRE(buf);
	REQUIRE_OK(rapt_pz_create(c->ia, &pz));
	conf_track(c, CONF_OBJ_PZ, pz);
	REQUIRE_OK(rapt_lmr_create(pz, buf, 4096, RAPT_MEM_LOCAL_WRITE, &lmr,
				   NULL));
	conf_track(c, CONF_OBJ_LMR, lmr);
	EXPECT_RC(rapt_pz_free(pz), RAPT_EBUSY);
	REQUIRE_OK(rapt_lmr_free(lmr));
	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_CONNECTION, &evd));
	REQUIRE_OK(rapt_ep_create(pz, NULL, NULL, evd, NULL, &ep));
	conf_track(c, CONF_OBJ_EP, ep);
	EXPECT_RC(rapt_pz_free(pz), RAPT_EBUSY);
	REQUIRE_OK(rapt_ep_free(ep));
	EXPECT_OK(rapt_pz_free(pz));
out:
	return;
}

static void t_evd_busy(struct conf_ctx *c)
{
	struct rapt_evd *dto, *req, *conn, *cr;
	struct conf_listener l;
	struct rapt_ep *ep;

	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_DTO, &dto));
	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_DTO, &req));
	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_CONNECTION, &conn));
	REQUIRE_OK(conf_ep_create(c, dto, req, conn, NULL, &ep));
	EXPECT_RC(rapt_evd_free(dto), RAPT_EBUSY);
	EXPECT_RC(rapt_evd_free(req), RAPT_EBUSY);
	EXPECT_RC(rapt_evd_free(conn), RAPT_EBUSY);
	EXPECT_RC(rapt_ia_close(c->ia), RAPT_EBUSY);
	REQUIRE_OK(rapt_ep_free(ep));
	EXPECT_OK(rapt_evd_free(dto));
	EXPECT_OK(rapt_evd_free(req));
	EXPECT_OK(rapt_evd_free(conn));
	TRY(conf_listen(c, &l, NULL));
	cr = l.cr_evd;
	EXPECT_RC(rapt_evd_free(cr), RAPT_EBUSY);
	REQUIRE_OK(rapt_psp_free(l.psp));
	EXPECT_OK(rapt_evd_free(cr));
out:
	return;
}

/* Each kind of object, created and freed, so its handle is stale. */
struct stale {
	struct rapt_pz *pz;
	struct rapt_lmr *lmr;
	struct rapt_evd *evd;
	struct rapt_ep *ep;
	struct rapt_psp *psp;
};

static int make_stale(struct conf_ctx *c, struct stale *s)
{
	struct rapt_evd *conn;
	struct conf_listener l;
	void *buf = conf_alloc(c, 64);

	TRY(!buf);
	REQUIRE_OK(rapt_pz_create(c->ia, &s->pz));
	REQUIRE_OK(rapt_pz_free(s->pz));
	REQUIRE_OK(rapt_lmr_create(c->pz, buf, 64, 0, &s->lmr, NULL));
	REQUIRE_OK(rapt_lmr_free(s->lmr));
	REQUIRE_OK(rapt_evd_create(c->ia, 4, RAPT_EVD_SOFTWARE, &s->evd));
	REQUIRE_OK(rapt_evd_free(s->evd));
	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_CONNECTION, &conn));
	REQUIRE_OK(rapt_ep_create(c->pz, NULL, NULL, conn, NULL, &s->ep));
	REQUIRE_OK(rapt_ep_free(s->ep));
	TRY(conf_listen(c, &l, NULL));
	REQUIRE_OK(rapt_psp_free(l.psp));
	s->psp = l.psp;
	return 0;
out:
	return -1;
}

/* Every call on handle set @s must fail with @want. */
static void bad_handles(struct conf_ctx *c, const struct stale *s, int want)
{
	struct rapt_lmr_info li;
	struct rapt_psp_info pi;
	struct rapt_evd_info vi;
	struct rapt_ep_info ei;
	struct rapt_event ev;
	enum rapt_ep_state st;
	struct rapt_sge sge = { 0 };
	struct rapt_cr_info ci;
	int rc;

	EXPECT_RC(rapt_pz_free(s->pz), want);
	EXPECT_RC(rapt_lmr_query(s->lmr, &li), want);
	EXPECT_RC(rapt_lmr_free(s->lmr), want);
	EXPECT_RC(rapt_evd_dequeue(s->evd, &ev), want);
	EXPECT_RC(rapt_evd_dequeue_batch(s->evd, &ev, 1), want);
	EXPECT_RC(rapt_evd_wait(s->evd, 0, 1, &ev, NULL), want);
	EXPECT_RC(rapt_evd_post_software(s->evd, NULL), want);
	EXPECT_RC(rapt_evd_query(s->evd, &vi, sizeof(vi)), want);
	EXPECT_RC(rapt_evd_free(s->evd), want);
	EXPECT_RC(rapt_ep_get_state(s->ep, &st), want);
	EXPECT_RC(rapt_ep_query(s->ep, &ei, sizeof(ei)), want);
	EXPECT_RC(rapt_ep_post_recv(s->ep, &sge, 1, 0), want);
	EXPECT_RC(rapt_ep_post_send(s->ep, &sge, 1, 0, 0), want);
	EXPECT_RC(rapt_ep_disconnect(s->ep, RAPT_CLOSE_ABRUPT, NULL, 0), want);
	EXPECT_RC(rapt_ep_free(s->ep), want);
	EXPECT_RC(rapt_psp_query(s->psp, &pi, sizeof(pi)), want);
	EXPECT_RC(rapt_psp_free(s->psp), want);
	/* A stale handle of another kind: either code names the mistake. */
	rc = rapt_cr_query((struct rapt_cr *)s->psp, &ci, sizeof(ci));
	EXPECT_MSG(rc == RAPT_EBADHANDLE || rc == RAPT_EHANDLETYPE,
		   "rapt_cr_query(PSP handle) returned %s", rapt_err_name(rc));
}

static void t_stale(struct conf_ctx *c)
{
	struct stale s;

	TRY(make_stale(c, &s));
	bad_handles(c, &s, RAPT_EBADHANDLE);
out:
	return;
}

static void t_null(struct conf_ctx *c)
{
	struct stale s = { 0 };
	struct rapt_pz *pz;
	struct rapt_evd *evd;

	bad_handles(c, &s, RAPT_EBADHANDLE);
	EXPECT_RC(rapt_pz_create(NULL, &pz), RAPT_EBADHANDLE);
	EXPECT_RC(rapt_evd_create(NULL, 4, RAPT_EVD_SOFTWARE, &evd),
		  RAPT_EBADHANDLE);
	EXPECT_RC(rapt_ia_close(NULL), RAPT_EBADHANDLE);
	EXPECT_RC(rapt_cr_reject(NULL, NULL, 0), RAPT_EBADHANDLE);
}

/* Values that were never handles: rejected, never dereferenced. */
static void t_forged(struct conf_ctx *c)
{
	static const uintptr_t forged[] = {
		1, 0x1000, 0xdeadbeef, 0xffffffffffffffffULL,
		0x0000000100000001ULL, 0x7fffffffffffULL,
	};
	enum rapt_handle_type type;
	struct rapt_event ev;
	unsigned int i;
	int rc;

	for (i = 0; i < CONF_ARRAY_SIZE(forged); i++) {
		void *h = (void *)forged[i];

		rc = rapt_handle_type(h, &type);
		EXPECT_MSG(rc == RAPT_EBADHANDLE,
			   "rapt_handle_type(%p) returned %s", h,
			   rapt_err_name(rc));
		rc = rapt_evd_dequeue(h, &ev);
		EXPECT_MSG(rc == RAPT_EBADHANDLE || rc == RAPT_EHANDLETYPE,
			   "rapt_evd_dequeue(%p) returned %s", h,
			   rapt_err_name(rc));
		rc = rapt_pz_free(h);
		EXPECT_MSG(rc == RAPT_EBADHANDLE || rc == RAPT_EHANDLETYPE,
			   "rapt_pz_free(%p) returned %s", h, rapt_err_name(rc));
	}
	/* The address of a real object's memory is not its handle. */
	rc = rapt_pz_free((struct rapt_pz *)&ev);
	EXPECT_MSG(rc == RAPT_EBADHANDLE || rc == RAPT_EHANDLETYPE,
		   "rapt_pz_free(stack address) returned %s",
		   rapt_err_name(rc));
}

static void t_wrong_type(struct conf_ctx *c)
{
	struct rapt_evd *evd, *conn;
	struct rapt_lmr *lmr;
	struct rapt_ep *ep;
	struct conf_listener l;
	enum rapt_handle_type type;
	enum rapt_ep_state st;
	struct rapt_lmr_info li;
	struct rapt_psp_info pi;
	struct rapt_event ev;
	void *buf = conf_alloc(c, 64);

	REQUIRE(buf);
	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_SOFTWARE, &evd));
	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_CONNECTION, &conn));
	REQUIRE_OK(conf_lmr_create(c, buf, 64, 0, &lmr, NULL));
	REQUIRE_OK(conf_ep_create(c, NULL, NULL, conn, NULL, &ep));
	TRY(conf_listen(c, &l, NULL));
	EXPECT_OK(rapt_handle_type(evd, &type));
	EXPECT_EQ(type, RAPT_HANDLE_EVD);
	EXPECT_OK(rapt_handle_type(lmr, &type));
	EXPECT_EQ(type, RAPT_HANDLE_LMR);
	EXPECT_OK(rapt_handle_type(ep, &type));
	EXPECT_EQ(type, RAPT_HANDLE_EP);
	EXPECT_OK(rapt_handle_type(l.psp, &type));
	EXPECT_EQ(type, RAPT_HANDLE_PSP);

	EXPECT_RC(rapt_pz_free((struct rapt_pz *)c->ia), RAPT_EHANDLETYPE);
	EXPECT_RC(rapt_pz_free((struct rapt_pz *)lmr), RAPT_EHANDLETYPE);
	EXPECT_RC(rapt_evd_dequeue((struct rapt_evd *)c->pz, &ev),
		  RAPT_EHANDLETYPE);
	EXPECT_RC(rapt_evd_free((struct rapt_evd *)ep), RAPT_EHANDLETYPE);
	EXPECT_RC(rapt_ep_free((struct rapt_ep *)evd), RAPT_EHANDLETYPE);
	EXPECT_RC(rapt_ep_get_state((struct rapt_ep *)l.psp, &st),
		  RAPT_EHANDLETYPE);
	EXPECT_RC(rapt_lmr_query((struct rapt_lmr *)ep, &li),
		  RAPT_EHANDLETYPE);
	EXPECT_RC(rapt_psp_query((struct rapt_psp *)evd, &pi, sizeof(pi)),
		  RAPT_EHANDLETYPE);
	EXPECT_RC(rapt_ia_close((struct rapt_ia *)c->pz), RAPT_EHANDLETYPE);
	EXPECT_RC(rapt_cr_reject((struct rapt_cr *)l.psp, NULL, 0),
		  RAPT_EHANDLETYPE);
	/* The objects survived the abuse. */
	EXPECT_OK(rapt_ep_get_state(ep, &st));
	EXPECT_OK(rapt_lmr_query(lmr, &li));
out:
	return;
}

/* Slots are reused; the handles that named them before stay stale. */
static void t_reuse(struct conf_ctx *c)
{
	struct rapt_evd *old[64], *evd;
	struct rapt_evd_info vi;
	unsigned int i;

	for (i = 0; i < CONF_ARRAY_SIZE(old); i++) {
		REQUIRE_OK(rapt_evd_create(c->ia, 4, RAPT_EVD_SOFTWARE,
					   &old[i]));
		REQUIRE_OK(rapt_evd_free(old[i]));
	}
	for (i = 0; i < CONF_ARRAY_SIZE(old); i++) {
		REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_SOFTWARE, &evd));
		REQUIRE_MSG(rapt_evd_query(old[i], &vi, sizeof(vi)) ==
			    RAPT_EBADHANDLE,
			    "a freed EVD handle works again after its slot was reused");
	}
out:
	return;
}

static void t_lmr_args(struct conf_ctx *c)
{
	struct rapt_lmr *sentinel = (struct rapt_lmr *)(uintptr_t)0x77;
	struct rapt_lmr *lmr = sentinel;
	struct rapt_lmr_info info;
	uint8_t *buf = conf_alloc(c, 4096);

	REQUIRE(buf);
	EXPECT_RC(rapt_lmr_create(c->pz, buf, 0, RAPT_MEM_LOCAL_WRITE, &lmr,
				  &info), RAPT_EINVAL);
	EXPECT_RC(rapt_lmr_create(c->pz, NULL, 64, RAPT_MEM_LOCAL_WRITE, &lmr,
				  &info), RAPT_EINVAL);
	EXPECT_RC(rapt_lmr_create(c->pz, buf, 64, 1u << 20, &lmr, &info),
		  RAPT_EINVAL);
	EXPECT_RC(rapt_lmr_create(c->pz, buf, 64, 0, NULL, &info),
		  RAPT_EINVAL);
	if (c->attr.max_lmr_size < SIZE_MAX)
		EXPECT_RC(rapt_lmr_create(c->pz, buf,
					  (size_t)c->attr.max_lmr_size + 1,
					  RAPT_MEM_LOCAL_WRITE, &lmr, &info),
			  RAPT_ERANGE);
	EXPECT_RC(rapt_lmr_create(c->pz, (void *)(uintptr_t)(UINTPTR_MAX - 16),
				  64, 0, &lmr, &info), RAPT_ERANGE);
	EXPECT_MSG(lmr == sentinel, "a failed rapt_lmr_create wrote its output");
	EXPECT_RC(rapt_lmr_query(NULL, &info), RAPT_EBADHANDLE);
out:
	return;
}

/* Whether every page of [@p, @p + @len) is mapped now. */
static bool range_mapped(const uint8_t *p, size_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(pg - 1);
	size_t n = (size_t)(((uintptr_t)p + len - a + pg - 1) / pg);
	unsigned char vec[4];

	return n <= sizeof(vec) && !mincore((void *)a, n * pg, vec);
}

/*
 * rapt_lmr_create(@access) over @len bytes from the start of @pages
 * fresh pages of which all but the first @keep are unmapped again: a
 * hole.  Another thread of this process (an engine thread, a sanitizer's
 * allocator) may map the hole again before the call looks: that attempt
 * proves nothing, and a new hole is made, a few times at most.  Return:
 * the last attempt's code; *@reused: its hole was mapped again.
 */
static int lmr_over_hole(struct conf_ctx *c, size_t pages, size_t keep,
			 size_t len, unsigned int access, bool *reused)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	struct rapt_lmr *lmr = NULL;
	int i, rc = RAPT_EFAULT;
	uint8_t *p;

	*reused = false;
	for (i = 0; i < 8; i++) {
		p = mmap(NULL, pg * pages, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return RAPT_ENOMEM;
		munmap(p + pg * keep, pg * (pages - keep));
		rc = rapt_lmr_create(c->pz, p, len, access, &lmr, NULL);
		if (rc == RAPT_OK)
			rapt_lmr_free(lmr);
		*reused = rc != RAPT_EFAULT &&
			  range_mapped(p + pg * keep, pg * (pages - keep));
		/* only our own pages: the hole may be someone else's now */
		if (keep)
			munmap(p, pg * keep);
		if (!*reused)
			break;
	}
	return rc;
}

/*
 * Registration refuses memory it could not honour: a peer's RDMA write
 * into a read-only page, a hole or a guard page would kill the process.
 * Three pages: read-write, read-only, none; then holes: a length past
 * the end of a mapping, and nothing mapped at all.
 */
static void t_lmr_mapping(struct conf_ctx *c)
{
	const unsigned int w = RAPT_MEM_LOCAL_WRITE;
	const unsigned int rw = RAPT_MEM_REMOTE_WRITE;
	long pg = sysconf(_SC_PAGESIZE);
	struct rapt_lmr *lmr = NULL;
	bool reused;
	uint8_t *p;
	int rc;

	p = mmap(NULL, (size_t)pg * 3, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(p != MAP_FAILED);
	REQUIRE(!mprotect(p + pg, (size_t)pg, PROT_READ));
	REQUIRE(!mprotect(p + 2 * pg, (size_t)pg, PROT_NONE));
	/* read-only: fine to read, refused for any write right */
	EXPECT_OK(rapt_lmr_create(c->pz, p + pg, 64, RAPT_MEM_REMOTE_READ,
				  &lmr, NULL));
	if (lmr)
		EXPECT_OK(rapt_lmr_free(lmr));
	EXPECT_RC(rapt_lmr_create(c->pz, p + pg, 64, rw, &lmr, NULL),
		  RAPT_EACCES);
	EXPECT_RC(rapt_lmr_create(c->pz, p + pg, 64, w, &lmr, NULL),
		  RAPT_EACCES);
	/* read-write running into the read-only page */
	EXPECT_RC(rapt_lmr_create(c->pz, p, (size_t)pg + 1, rw, &lmr, NULL),
		  RAPT_EACCES);
	/* a PROT_NONE guard page is not even readable */
	EXPECT_RC(rapt_lmr_create(c->pz, p + 2 * pg, 64, 0, &lmr, NULL),
		  RAPT_EACCES);
	REQUIRE(!munmap(p, (size_t)pg * 3));
	/* a length past the end of a mapping, then nothing mapped at all */
	rc = lmr_over_hole(c, 2, 1, (size_t)pg + 64, 0, &reused);
	EXPECT_MSG(rc == RAPT_EFAULT, "a length past the end of a mapping: "
		   "%s, expected RAPT_EFAULT%s", rapt_err_name(rc),
		   reused ? " (the hole was mapped again by another thread, "
			    "8 times)" : "");
	rc = lmr_over_hole(c, 1, 0, 64, rw, &reused);
	EXPECT_MSG(rc == RAPT_EFAULT, "nothing mapped: %s, expected "
		   "RAPT_EFAULT%s", rapt_err_name(rc),
		   reused ? " (the hole was mapped again by another thread, "
			    "8 times)" : "");
out:
	return;
}

static void t_lmr_info(struct conf_ctx *c)
{
	static const struct {
		size_t off, len;
		unsigned int access;
	} cases[] = {
		{ 0, 1, 0 },
		{ 1, 7, RAPT_MEM_LOCAL_WRITE },
		{ 4095, 2, RAPT_MEM_REMOTE_READ },
		{ 3, 3 * 4096 + 5,
		  RAPT_MEM_LOCAL_WRITE | RAPT_MEM_REMOTE_WRITE },
		{ 0, 4 * 4096, RAPT_MEM_LOCAL_WRITE | RAPT_MEM_REMOTE_READ |
			       RAPT_MEM_REMOTE_WRITE },
	};
	struct rapt_lmr_info info[CONF_ARRAY_SIZE(cases)], q;
	struct rapt_lmr *lmr[CONF_ARRAY_SIZE(cases)];
	uint8_t *buf = conf_alloc(c, 5 * 4096);
	unsigned int i, j;

	REQUIRE(buf);
	for (i = 0; i < CONF_ARRAY_SIZE(cases); i++) {
		REQUIRE_OK(conf_lmr_create(c, buf + cases[i].off, cases[i].len,
					   cases[i].access, &lmr[i],
					   &info[i]));
		REQUIRE_OK(rapt_lmr_query(lmr[i], &q));
		EXPECT_EQU(q.length, cases[i].len);
		EXPECT_EQU(q.access, cases[i].access);
		EXPECT_EQU(q.lkey, info[i].lkey);
		EXPECT_EQU(q.rkey, info[i].rkey);
		EXPECT_EQU(q.raddr, info[i].raddr);
		EXPECT_EQU(info[i].length, cases[i].len);
	}
	/* Overlapping registrations are separate: keys never repeat. */
	for (i = 0; i < CONF_ARRAY_SIZE(cases); i++)
		for (j = i + 1; j < CONF_ARRAY_SIZE(cases); j++) {
			EXPECT_MSG(info[i].lkey != info[j].lkey,
				   "two LMRs share lkey %#x", info[i].lkey);
			if (cases[i].access & cases[j].access &
			    (RAPT_MEM_REMOTE_READ | RAPT_MEM_REMOTE_WRITE))
				EXPECT_MSG(info[i].rkey != info[j].rkey,
					   "two LMRs share rkey %#x",
					   info[i].rkey);
		}
out:
	return;
}

static void t_ep_args(struct conf_ctx *c)
{
	struct rapt_evd *dto, *conn, *sw, *other_evd;
	struct rapt_ep_attr a;
	struct rapt_ia *other;
	struct rapt_ep *ep;

	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_DTO, &dto));
	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_CONNECTION, &conn));
	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_SOFTWARE, &sw));
	EXPECT_RC(rapt_ep_create(c->pz, dto, dto, NULL, NULL, &ep),
		  RAPT_EINVAL);
	EXPECT_RC(rapt_ep_create(c->pz, dto, dto, dto, NULL, &ep),
		  RAPT_EINVAL);
	EXPECT_RC(rapt_ep_create(c->pz, sw, dto, conn, NULL, &ep),
		  RAPT_EINVAL);
	EXPECT_RC(rapt_ep_create(c->pz, dto, conn, conn, NULL, &ep),
		  RAPT_EINVAL);
	EXPECT_RC(rapt_ep_create(c->pz, NULL, NULL, conn, NULL, NULL),
		  RAPT_EINVAL);
	/* An EVD of another IA. */
	REQUIRE_OK(rapt_ia_open(c->attr.name, &other));
	conf_track(c, CONF_OBJ_IA, other);
	REQUIRE_OK(rapt_evd_create(other, 8, RAPT_EVD_CONNECTION, &other_evd));
	conf_track(c, CONF_OBJ_EVD, other_evd);
	EXPECT_RC(rapt_ep_create(c->pz, NULL, NULL, other_evd, NULL, &ep),
		  RAPT_EINVAL);
	/* Attributes above the IA's limits. */
	memset(&a, 0, sizeof(a));
	a.max_send = c->attr.max_send_depth + 1;
	EXPECT_RC(rapt_ep_create(c->pz, dto, dto, conn, &a, &ep), RAPT_ERANGE);
	memset(&a, 0, sizeof(a));
	a.max_recv = c->attr.max_recv_depth + 1;
	EXPECT_RC(rapt_ep_create(c->pz, dto, dto, conn, &a, &ep), RAPT_ERANGE);
	memset(&a, 0, sizeof(a));
	a.max_send_sge = c->attr.max_send_sge + 1;
	EXPECT_RC(rapt_ep_create(c->pz, dto, dto, conn, &a, &ep), RAPT_ERANGE);
	memset(&a, 0, sizeof(a));
	a.max_inline = c->attr.max_inline + 1;
	EXPECT_RC(rapt_ep_create(c->pz, dto, dto, conn, &a, &ep), RAPT_ERANGE);
	memset(&a, 0, sizeof(a));
	a.flags = 1u << 30;
	EXPECT_RC(rapt_ep_create(c->pz, dto, dto, conn, &a, &ep), RAPT_EINVAL);
	/* Without an EVD for a stream, an EP can still be made. */
	REQUIRE_OK(conf_ep_create(c, NULL, NULL, conn, NULL, &ep));
	EXPECT_OK(conf_free(c, ep));
	memset(&a, 0, sizeof(a));
	a.flags = RAPT_EP_RAW_PDATA;
	SKIP_UNLESS_CAP(RAPT_CAP_RAW_PDATA,
			rapt_ep_create(c->pz, dto, dto, conn, &a, &ep));
	REQUIRE_OK(conf_ep_create(c, dto, dto, conn, &a, &ep));
out:
	return;
}

static void t_context(struct conf_ctx *c)
{
	struct rapt_evd *evd;
	struct rapt_lmr *lmr;
	struct rapt_ep *ep;
	struct conf_listener l;
	void *objs[6], *ctx;
	unsigned int i;
	void *buf = conf_alloc(c, 64);

	REQUIRE(buf);
	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_CONNECTION, &evd));
	REQUIRE_OK(conf_lmr_create(c, buf, 64, 0, &lmr, NULL));
	REQUIRE_OK(conf_ep_create(c, NULL, NULL, evd, NULL, &ep));
	TRY(conf_listen(c, &l, NULL));
	objs[0] = c->ia;
	objs[1] = c->pz;
	objs[2] = evd;
	objs[3] = lmr;
	objs[4] = ep;
	objs[5] = l.psp;
	for (i = 0; i < CONF_ARRAY_SIZE(objs); i++)
		EXPECT_OK(rapt_context_set(objs[i], (char *)buf + i));
	for (i = 0; i < CONF_ARRAY_SIZE(objs); i++) {
		ctx = NULL;
		EXPECT_OK(rapt_context_get(objs[i], &ctx));
		EXPECT_MSG(ctx == (char *)buf + i,
			   "object %u lost its context", i);
	}
	EXPECT_RC(rapt_context_set(NULL, buf), RAPT_EBADHANDLE);
out:
	return;
}

static const struct conf_test objects_tests[] = {
	{ "pz", "create, type, context, free; a freed PZ is stale", t_pz, NULL },
	{ "pz_busy", "a PZ with an LMR or an EP cannot be freed (RAPT_EBUSY)",
	  t_pz_busy, NULL },
	{ "evd_busy", "an EVD used by an EP or a PSP cannot be freed, nor their IA",
	  t_evd_busy, NULL },
	{ "stale_handles", "every call on a freed handle returns RAPT_EBADHANDLE",
	  t_stale, NULL },
	{ "null_handles", "every call on a NULL handle returns RAPT_EBADHANDLE",
	  t_null, NULL },
	{ "forged_handles", "values that were never handles are refused, not dereferenced",
	  t_forged, NULL },
	{ "wrong_type", "a handle of the wrong kind returns RAPT_EHANDLETYPE and harms nothing",
	  t_wrong_type, NULL },
	{ "handle_reuse", "a freed handle stays stale after its slot is reused",
	  t_reuse, NULL },
	{ "lmr_args", "zero, NULL, huge and wrapping registrations fail; outputs untouched",
	  t_lmr_args, NULL },
	{ "lmr_mapping", "registering unmapped memory fails RAPT_EFAULT, memory without the asked rights RAPT_EACCES",
	  t_lmr_mapping, NULL },
	{ "lmr_info", "registrations of odd offsets and lengths report what was asked; keys unique",
	  t_lmr_info, NULL },
	{ "ep_args", "EP creation checks its EVDs' streams and IA, attributes and flags",
	  t_ep_args, NULL },
	{ "context", "every kind of handle keeps the consumer's context", t_context,
	  NULL },
};

CONF_SUITE(conf_suite_objects, "objects",
	   "PZ, LMR, EVD, EP lifetimes and handles", objects_tests);
