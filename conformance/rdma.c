/* SPDX-License-Identifier: MIT */
/*
 * Area "rdma": RDMA write and read, with the target's memory checked byte
 * for byte at every offset class (aligned, odd, crossing pages, the whole
 * region), several SGEs, zero length, the read depth, fences and send with
 * invalidate.
 *
 * The passive role is an RDMA target (conf_target_passive, also used by
 * the "access" area): a registered region between two guard pages and a
 * shadow copy of what it must hold.  The active role writes, then sends a
 * command over the same connection; a send that follows writes arrives
 * after they are placed, so the target compares region and shadow only
 * then, and replies.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "conf.h"

#define PAGE 4096
#define GUARD PAGE
#define GUARD_BYTE 0xee
#define CMD_LEN 16
#define NCMD_RECV 4
#define REPLY_OFF 1024
#define CLIENT_REPLY_OFF 60000

/* The target's state, passive side. */
struct target {
	uint8_t *mem;		/* guard | region | guard */
	uint8_t *region;
	uint8_t *shadow;
	uint64_t len;
	uint32_t access;
	uint32_t rkey;
	struct rapt_lmr *lmr;
};

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Compare region to shadow and the guards to their byte: 0 if all is as
 * it must be, else 1 + the first bad offset from the start of mem. */
static uint32_t target_compare(const struct target *t)
{
	uint64_t i;

	for (i = 0; i < GUARD; i++)
		if (t->mem[i] != GUARD_BYTE)
			return (uint32_t)i + 1;
	for (i = 0; i < t->len; i++)
		if (t->region[i] != t->shadow[i])
			return (uint32_t)(GUARD + i) + 1;
	for (i = 0; i < GUARD; i++)
		if (t->region[t->len + i] != GUARD_BYTE)
			return (uint32_t)(GUARD + t->len + i) + 1;
	return 0;
}

static void describe_bad(struct conf_ctx *c, const struct target *t,
			 uint32_t bad, const char *when)
{
	uint64_t at = bad - 1;

	if (at < GUARD)
		FAIL("%s: the guard %llu bytes before the region was written",
		     when, (unsigned long long)(GUARD - at));
	else if (at < GUARD + t->len)
		FAIL("%s: region byte %llu is %#x, expected %#x", when,
		     (unsigned long long)(at - GUARD), t->mem[at],
		     t->shadow[at - GUARD]);
	else
		FAIL("%s: the guard byte %llu after the region was written",
		     when, (unsigned long long)(at - GUARD - t->len));
}

/* Register @t's region in a second PZ of the IA (CONF_TGT_OTHER_PZ). */
static int target_other_pz(struct conf_ctx *c, struct target *t,
			   struct rapt_lmr_info *mi)
{
	struct rapt_pz *pz;

	REQUIRE_OK(rapt_pz_create(c->ia, &pz));
	conf_track(c, CONF_OBJ_PZ, pz);
	REQUIRE_OK(rapt_lmr_create(pz, t->region, t->len, t->access, &t->lmr,
				   mi));
	conf_track(c, CONF_OBJ_LMR, t->lmr);
	return 0;
out:
	return -1;
}

static int target_make(struct conf_ctx *c, struct target *t, uint64_t len,
		       uint32_t access, uint32_t seed, uint32_t flags)
{
	struct rapt_lmr_info mi;

	t->len = len;
	t->access = access;
	t->mem = conf_alloc(c, len + 2 * GUARD);
	t->shadow = conf_alloc(c, len ? len : 1);
	TRY(!t->mem || !t->shadow);
	t->region = t->mem + GUARD;
	memset(t->mem, GUARD_BYTE, len + 2 * GUARD);
	conf_fill(t->region, len, seed);
	memcpy(t->shadow, t->region, len);
	if (flags & CONF_TGT_OTHER_PZ)
		TRY(target_other_pz(c, t, &mi));
	else
		REQUIRE_OK(conf_lmr_create(c, t->region, len, access, &t->lmr,
					   &mi));
	t->rkey = mi.rkey;
	TRY(conf_send_u64(c, "raddr", mi.raddr));
	TRY(conf_send_u64(c, "rkey", mi.rkey));
	return 0;
out:
	return -1;
}

/* Run one command; the reply status goes to @status. */
static bool target_do(struct conf_ctx *c, struct target *t, const uint8_t *m,
		      const struct rapt_event_dto *d, uint32_t *status)
{
	uint32_t cmd = get32(m), off = get32(m + 4), len = get32(m + 8);
	uint32_t seed = get32(m + 12);
	uint64_t i;

	*status = 0;
	switch (cmd) {
	case CONF_TGT_WROTE:
		if ((uint64_t)off + len > t->len) {
			*status = 0xffffffff;
			return true;
		}
		for (i = 0; i < len; i++)
			t->shadow[off + i] = conf_pattern_byte(i, seed);
		/* fall through */
	case CONF_TGT_CHECK:
		*status = target_compare(t);
		if (*status)
			describe_bad(c, t, *status, "after an RDMA write");
		return true;
	case CONF_TGT_FILL:
		conf_fill(t->region, t->len, seed);
		memcpy(t->shadow, t->region, t->len);
		return true;
	case CONF_TGT_FREE:
		*status = (uint32_t)-conf_free(c, t->lmr);
		return true;
	case CONF_TGT_INVALIDATED:
		*status = !EXPECT_MSG((d->flags & RAPT_DTO_INVALIDATED) &&
				      d->invalidated_rkey == t->rkey,
				      "a send with invalidate of rkey %#x arrived with flags %#x and invalidated rkey %#x",
				      t->rkey, d->flags, d->invalidated_rkey);
		return true;
	case CONF_TGT_DONE:
		return false;
	}
	FAIL("target: unknown command %u", cmd);
	*status = 0xfffffffe;
	return true;
}

/**
 * conf_target_passive - the passive role of an RDMA test
 * @c: the role
 *
 * Connects, makes the region the active role asks for ("target": length,
 * access, seed, flags), publishes its raddr and rkey, and serves commands
 * until CONF_TGT_DONE or the connection goes down.  Then the region must
 * match the shadow and the guards must be intact.
 */
void conf_target_passive(struct conf_ctx *c)
{
	uint64_t len, access, seed, flags;
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_sge sge;
	struct target t;
	uint32_t status;
	bool more = true;
	uint8_t *m;
	int rc;

	memset(&t, 0, sizeof(t));
	TRY(conf_pair_passive(c, &s, NULL, NCMD_RECV, CMD_LEN));
	TRY(conf_recv_u64(c, "len", &len));
	TRY(conf_recv_u64(c, "access", &access));
	TRY(conf_recv_u64(c, "seed", &seed));
	TRY(conf_recv_u64(c, "flags", &flags));
	TRY(target_make(c, &t, len, (uint32_t)access, (uint32_t)seed,
			(uint32_t)flags));
	while (more) {
		rc = conf_wait(c, s.recv_evd, conf_tmo(c, 60000), &ev);
		if (rc) {
			if (rc != 1)
				FAIL("target: no command for %d ms",
				     conf_tmo(c, 60000));
			goto out;
		}
		if (ev.u.dto.status != RAPT_DTO_SUCCESS)
			break;	/* the connection went down */
		m = s.buf + ev.u.dto.cookie * CMD_LEN;
		/* A violation ends the connection before anything sent
		 * behind it is delivered; only FREE may come before. */
		EXPECT_MSG(!(flags & CONF_TGT_BREAK) ||
			   get32(m) == CONF_TGT_FREE ||
			   get32(m) == CONF_TGT_INVALIDATED,
			   "command %u was delivered after an access violation that must break the connection",
			   get32(m));
		more = target_do(c, &t, m, &ev.u.dto, &status);
		TRY(conf_post_recvs(c, &s, (unsigned int)ev.u.dto.cookie, 1,
				    CMD_LEN));
		put32(s.buf + REPLY_OFF, status);
		sge.addr = (uintptr_t)(s.buf + REPLY_OFF);
		sge.length = 4;
		sge.lkey = s.mi.lkey;
		REQUIRE_OK(rapt_ep_post_send(s.ep, &sge, 1, 77, 0));
		REQUIRE_DTO(s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 77,
			    NULL);
	}
	if (flags & CONF_TGT_BREAK)
		TRY(conf_wait_down(c, &s, NULL));
	status = target_compare(&t);
	if (status)
		describe_bad(c, &t, status, "at the end");
	TRY(conf_barrier(c, "target-done"));
out:
	return;
}

int conf_target_open(struct conf_ctx *c, struct conf_target *t, uint64_t len,
		     unsigned int access, uint32_t seed, uint32_t flags,
		     size_t local_len)
{
	struct conf_set_opts o = { .buf_len = local_len };
	uint64_t v;

	memset(t, 0, sizeof(*t));
	if (o.buf_len < 65536)
		o.buf_len = 65536;
	t->len = len;
	TRY(conf_pair_active(c, &t->s, &o, 0, 0));
	TRY(conf_send_u64(c, "len", len));
	TRY(conf_send_u64(c, "access", access));
	TRY(conf_send_u64(c, "seed", seed));
	TRY(conf_send_u64(c, "flags", flags));
	TRY(conf_recv_u64(c, "raddr", &t->raddr));
	TRY(conf_recv_u64(c, "rkey", &v));
	t->rkey = (uint32_t)v;
	return 0;
out:
	return -1;
}

int conf_target_cmd(struct conf_ctx *c, struct conf_target *t, uint32_t cmd,
		    uint32_t off, uint32_t len, uint32_t seed)
{
	int rc;
	uint8_t *m = t->s.buf + t->s.len - 64;
	uint8_t *r = t->s.buf + t->s.len - 32;
	struct rapt_event ev;
	struct rapt_sge sge;

	sge.addr = (uintptr_t)r;
	sge.length = 4;
	sge.lkey = t->s.mi.lkey;
	if (!EXPECT_OK(rapt_ep_post_recv(t->s.ep, &sge, 1, 0xcafe)))
		return -1;
	put32(m, cmd);
	put32(m + 4, off);
	put32(m + 8, len);
	put32(m + 12, seed);
	sge.addr = (uintptr_t)m;
	sge.length = CMD_LEN;
	/* This one command travels as a send that invalidates the rkey. */
	if (cmd == CONF_TGT_INVALIDATED)
		rc = rapt_ep_post_send_inv(t->s.ep, &sge, 1, 0xc0de, 0,
					   t->rkey);
	else
		rc = rapt_ep_post_send(t->s.ep, &sge, 1, 0xc0de, 0);
	if (!EXPECT_OK(rc))
		return -1;
	if (EXPECT_DTO(t->s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 0xc0de,
		       NULL) ||
	    EXPECT_DTO(t->s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0xcafe,
		       &ev))
		return -1;
	return (int)(get32(r) & 0x7fffffff);
}

/* ---- the tests -------------------------------------------------------- */

/* Offset classes in a region of 3 pages and 17 bytes. */
#define REGION (3 * PAGE + 17)

static const struct {
	uint32_t off, len;
} spans[] = {
	{ 0, 1 },		/* first byte */
	{ 0, 64 },		/* aligned */
	{ 1, 7 },		/* odd offset, odd length */
	{ 3, PAGE - 3 },	/* up to a page end */
	{ PAGE - 1, 2 },	/* across a page boundary */
	{ PAGE - 5, PAGE + 9 },	/* across two boundaries */
	{ PAGE, PAGE },		/* one whole page */
	{ REGION - 1, 1 },	/* last byte */
	{ 2 * PAGE + 11, REGION - 2 * PAGE - 11 },	/* up to the end */
	{ 0, REGION },		/* the whole region */
};

static void write_offsets(struct conf_ctx *c)
{
	struct conf_target t;
	struct rapt_sge sge;
	unsigned int k;
	uint32_t lo;
	int st;

	TRY(conf_target_open(c, &t, REGION, RAPT_MEM_REMOTE_WRITE |
			     RAPT_MEM_LOCAL_WRITE, 5, 0, 0));
	sge.addr = (uintptr_t)t.s.buf;
	sge.length = 1;
	sge.lkey = t.s.mi.lkey;
	SKIP_UNLESS_CAP(RAPT_CAP_RDMA_WRITE,
			rapt_ep_post_write(t.s.ep, &sge, 1, 1, t.raddr, t.rkey,
					   0));
	for (k = 0; k < CONF_ARRAY_SIZE(spans); k++) {
		/* Local source at an odd place too. */
		lo = (k * 13) % 64;
		conf_fill(t.s.buf + lo, spans[k].len, 100 + k);
		sge.addr = (uintptr_t)(t.s.buf + lo);
		sge.length = spans[k].len;
		REQUIRE_OK(rapt_ep_post_write(t.s.ep, &sge, 1, k,
					      t.raddr + spans[k].off, t.rkey,
					      0));
		REQUIRE_DTO(t.s.req_evd, RAPT_OP_RDMA_WRITE, RAPT_DTO_SUCCESS,
			    k, NULL);
		st = conf_target_cmd(c, &t, CONF_TGT_WROTE, spans[k].off,
				     spans[k].len, 100 + k);
		REQUIRE_MSG(st == 0,
			    "write of %u bytes at offset %u: the target's memory is wrong (status %d)",
			    spans[k].len, spans[k].off, st);
	}
	EXPECT_EQ(conf_target_cmd(c, &t, CONF_TGT_DONE, 0, 0, 0), 0);
	TRY(conf_barrier(c, "target-done"));
out:
	return;
}

static void read_offsets(struct conf_ctx *c)
{
	struct conf_target t;
	struct rapt_sge sge;
	unsigned int k;
	uint32_t lo, i;
	uint8_t *p;

	TRY(conf_target_open(c, &t, REGION, RAPT_MEM_REMOTE_READ, 9, 0, 0));
	sge.addr = (uintptr_t)t.s.buf;
	sge.length = 1;
	sge.lkey = t.s.mi.lkey;
	SKIP_UNLESS_CAP(RAPT_CAP_RDMA_READ,
			rapt_ep_post_read(t.s.ep, &sge, 1, 1, t.raddr, t.rkey,
					  0));
	for (k = 0; k < CONF_ARRAY_SIZE(spans); k++) {
		lo = 64 + (k * 29) % 64;
		p = t.s.buf + lo;
		memset(t.s.buf, 0xa5, REGION + 256);
		sge.addr = (uintptr_t)p;
		sge.length = spans[k].len;
		REQUIRE_OK(rapt_ep_post_read(t.s.ep, &sge, 1, k,
					     t.raddr + spans[k].off, t.rkey,
					     0));
		REQUIRE_DTO(t.s.req_evd, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS,
			    k, NULL);
		for (i = 0; i < spans[k].len; i++)
			if (p[i] != conf_pattern_byte(spans[k].off + i, 9))
				break;
		REQUIRE_MSG(i == spans[k].len,
			    "read of %u bytes at offset %u: byte %u is wrong",
			    spans[k].len, spans[k].off, i);
		REQUIRE_MSG(p[-1] == 0xa5 && p[spans[k].len] == 0xa5,
			    "read of %u bytes at offset %u wrote outside its local buffer",
			    spans[k].len, spans[k].off);
	}
	EXPECT_EQ(conf_target_cmd(c, &t, CONF_TGT_DONE, 0, 0, 0), 0);
	TRY(conf_barrier(c, "target-done"));
out:
	return;
}

/* The largest RDMA both ways: write it all, read it back. */
static void large(struct conf_ctx *c)
{
	uint64_t len = c->attr.max_rdma_size;
	struct conf_target t;
	struct rapt_sge sge;
	uint8_t *back;
	long bad;

	if (c->params.max_size && len > c->params.max_size)
		len = c->params.max_size;
	if (len > (1u << 30))
		len = 1u << 30;
	TRY(conf_target_open(c, &t, len, RAPT_MEM_REMOTE_WRITE |
			     RAPT_MEM_REMOTE_READ | RAPT_MEM_LOCAL_WRITE, 1, 0,
			     2 * len + 65536));
	sge.addr = (uintptr_t)t.s.buf;
	sge.length = 1;
	sge.lkey = t.s.mi.lkey;
	if (!(c->attr.caps & RAPT_CAP_RDMA_WRITE)) {
		SKIP_UNLESS_CAP(RAPT_CAP_RDMA_WRITE,
				rapt_ep_post_write(t.s.ep, &sge, 1, 1, t.raddr,
						   t.rkey, 0));
	}
	SKIP_UNLESS_CAP(RAPT_CAP_RDMA_READ,
			rapt_ep_post_read(t.s.ep, &sge, 1, 1, t.raddr, t.rkey,
					  0));
	conf_fill(t.s.buf, len, 61);
	sge.length = (uint32_t)len;
	REQUIRE_OK(rapt_ep_post_write(t.s.ep, &sge, 1, 1, t.raddr, t.rkey, 0));
	REQUIRE_DTO(t.s.req_evd, RAPT_OP_RDMA_WRITE, RAPT_DTO_SUCCESS, 1,
		    NULL);
	EXPECT_EQ(conf_target_cmd(c, &t, CONF_TGT_WROTE, 0, (uint32_t)len, 61),
		  0);
	back = t.s.buf + len;
	memset(back, 0, len);
	sge.addr = (uintptr_t)back;
	REQUIRE_OK(rapt_ep_post_read(t.s.ep, &sge, 1, 2, t.raddr, t.rkey, 0));
	REQUIRE_DTO(t.s.req_evd, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, 2, NULL);
	bad = conf_verify(back, len, 61);
	EXPECT_MSG(bad < 0, "reading back %llu bytes: byte %ld differs",
		   (unsigned long long)len, bad);
	EXPECT_EQ(conf_target_cmd(c, &t, CONF_TGT_DONE, 0, 0, 0), 0);
	TRY(conf_barrier(c, "target-done"));
out:
	return;
}

/* Gathered writes and scattered reads. */
static void multi_sge(struct conf_ctx *c)
{
	static const uint32_t piece[3] = { 5, 4096, 333 };
	uint32_t n = c->attr.max_send_sge < 3 ? c->attr.max_send_sge : 3;
	struct conf_target t;
	struct rapt_sge sgl[3];
	uint32_t i, total = 0, pos;
	uint8_t *src;

	TRY(conf_target_open(c, &t, 2 * PAGE, RAPT_MEM_REMOTE_WRITE |
			     RAPT_MEM_REMOTE_READ | RAPT_MEM_LOCAL_WRITE, 2, 0,
			     0));
	sgl[0].addr = (uintptr_t)t.s.buf;
	sgl[0].length = 1;
	sgl[0].lkey = t.s.mi.lkey;
	SKIP_UNLESS_CAP(RAPT_CAP_RDMA_WRITE,
			rapt_ep_post_write(t.s.ep, sgl, 1, 1, t.raddr, t.rkey,
					   0));
	for (i = 0; i < n; i++)
		total += piece[i];
	src = conf_alloc(c, total);
	REQUIRE(src);
	conf_fill(src, total, 71);
	for (i = 0, pos = 0; i < n; i++) {
		uint8_t *p = t.s.buf + 10000 * i + 3;

		memcpy(p, src + pos, piece[i]);
		sgl[i].addr = (uintptr_t)p;
		sgl[i].length = piece[i];
		sgl[i].lkey = t.s.mi.lkey;
		pos += piece[i];
	}
	REQUIRE_OK(rapt_ep_post_write(t.s.ep, sgl, n, 1, t.raddr + 7, t.rkey,
				      0));
	REQUIRE_DTO(t.s.req_evd, RAPT_OP_RDMA_WRITE, RAPT_DTO_SUCCESS, 1,
		    NULL);
	EXPECT_EQ(conf_target_cmd(c, &t, CONF_TGT_WROTE, 7, total, 71), 0);
	if (!(c->attr.caps & RAPT_CAP_RDMA_READ))
		goto done;
	for (i = 0; i < n; i++)
		memset((void *)(uintptr_t)sgl[i].addr, 0, piece[i]);
	REQUIRE_OK(rapt_ep_post_read(t.s.ep, sgl, n, 2, t.raddr + 7, t.rkey,
				     0));
	REQUIRE_DTO(t.s.req_evd, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, 2, NULL);
	for (i = 0, pos = 0; i < n; i++) {
		EXPECT_MSG(!memcmp((void *)(uintptr_t)sgl[i].addr, src + pos,
				   piece[i]),
			   "scattered read: piece %u differs", i);
		pos += piece[i];
	}
done:
	EXPECT_EQ(conf_target_cmd(c, &t, CONF_TGT_DONE, 0, 0, 0), 0);
	TRY(conf_barrier(c, "target-done"));
out:
	return;
}

static void zero(struct conf_ctx *c)
{
	struct conf_target t;

	TRY(conf_target_open(c, &t, PAGE, RAPT_MEM_REMOTE_WRITE |
			     RAPT_MEM_REMOTE_READ, 3, 0, 0));
	SKIP_UNLESS_CAP(RAPT_CAP_ZERO_LENGTH,
			rapt_ep_post_write(t.s.ep, NULL, 0, 1, t.raddr, t.rkey,
					   0));
	if (c->attr.caps & RAPT_CAP_RDMA_WRITE) {
		REQUIRE_OK(rapt_ep_post_write(t.s.ep, NULL, 0, 1, t.raddr,
					      t.rkey, 0));
		REQUIRE_DTO(t.s.req_evd, RAPT_OP_RDMA_WRITE, RAPT_DTO_SUCCESS,
			    1, NULL);
	}
	if (c->attr.caps & RAPT_CAP_RDMA_READ) {
		REQUIRE_OK(rapt_ep_post_read(t.s.ep, NULL, 0, 2, t.raddr,
					     t.rkey, 0));
		REQUIRE_DTO(t.s.req_evd, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS,
			    2, NULL);
	}
	EXPECT_EQ(conf_target_cmd(c, &t, CONF_TGT_CHECK, 0, 0, 0), 0);
	EXPECT_EQ(conf_target_cmd(c, &t, CONF_TGT_DONE, 0, 0, 0), 0);
	TRY(conf_barrier(c, "target-done"));
out:
	return;
}

/* As many reads in flight as the negotiated ORD. */
static void read_depth(struct conf_ctx *c)
{
	struct rapt_ep_info info;
	struct conf_target t;
	struct rapt_sge sge;
	uint32_t i, n;

	TRY(conf_target_open(c, &t, 16 * PAGE, RAPT_MEM_REMOTE_READ, 4, 0,
			     0));
	sge.addr = (uintptr_t)t.s.buf;
	sge.length = 1;
	sge.lkey = t.s.mi.lkey;
	SKIP_UNLESS_CAP(RAPT_CAP_RDMA_READ,
			rapt_ep_post_read(t.s.ep, &sge, 1, 1, t.raddr, t.rkey,
					  0));
	REQUIRE_OK(rapt_ep_query(t.s.ep, &info, sizeof(info)));
	n = info.rdma_read_out < 16 ? info.rdma_read_out : 16;
	REQUIRE_MSG(n >= 1, "negotiated ORD is 0 with RDMA read advertised");
	for (i = 0; i < n; i++) {
		sge.addr = (uintptr_t)(t.s.buf + i * PAGE);
		sge.length = PAGE;
		REQUIRE_OK(rapt_ep_post_read(t.s.ep, &sge, 1, i,
					     t.raddr + i * PAGE, t.rkey, 0));
	}
	for (i = 0; i < n; i++)
		REQUIRE_DTO(t.s.req_evd, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, i,
			    NULL);
	for (i = 0; i < n * PAGE; i++)
		if (t.s.buf[i] != conf_pattern_byte(i, 4))
			break;
	EXPECT_MSG(i == n * PAGE, "%u parallel reads: byte %u differs", n, i);
	EXPECT_EQ(conf_target_cmd(c, &t, CONF_TGT_DONE, 0, 0, 0), 0);
	TRY(conf_barrier(c, "target-done"));
out:
	return;
}

/*
 * A send right behind a read: the read completes first, fenced or not.
 * Unfenced, the send may execute before the read's data is back (siw
 * sends it at once), but completions of an EP's request queue come in
 * post order.
 */
static void read_then_send(struct conf_ctx *c, bool fenced)
{
	struct conf_target t;
	struct rapt_event ev;
	struct rapt_sge sge;

	TRY(conf_target_open(c, &t, PAGE, RAPT_MEM_REMOTE_READ, 6, 0, 0));
	sge.addr = (uintptr_t)t.s.buf;
	sge.length = PAGE;
	sge.lkey = t.s.mi.lkey;
	SKIP_UNLESS_CAP(RAPT_CAP_RDMA_READ,
			rapt_ep_post_read(t.s.ep, &sge, 1, 1, t.raddr, t.rkey,
					  0));
	if (fenced)
		SKIP_UNLESS_CAP(RAPT_CAP_FENCE,
				rapt_ep_post_read(t.s.ep, &sge, 1, 1, t.raddr,
						  t.rkey, RAPT_POST_FENCE));
	REQUIRE_OK(rapt_ep_post_read(t.s.ep, &sge, 1, 1, t.raddr, t.rkey, 0));
	/* The command send carries the fence; its reply proves arrival. */
	{
		uint8_t *m = t.s.buf + t.s.len - 64;
		struct rapt_sge cs = {
			.addr = (uintptr_t)m, .length = CMD_LEN,
			.lkey = t.s.mi.lkey,
		};
		struct rapt_sge rs = {
			.addr = (uintptr_t)(t.s.buf + t.s.len - 32),
			.length = 4, .lkey = t.s.mi.lkey,
		};

		REQUIRE_OK(rapt_ep_post_recv(t.s.ep, &rs, 1, 0xcafe));
		put32(m, CONF_TGT_CHECK);
		REQUIRE_OK(rapt_ep_post_send(t.s.ep, &cs, 1, 2,
					     fenced ? RAPT_POST_FENCE : 0));
	}
	REQUIRE_DTO(t.s.req_evd, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, 1, &ev);
	REQUIRE_DTO(t.s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 2, &ev);
	REQUIRE_DTO(t.s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0xcafe, &ev);
	EXPECT(conf_verify(t.s.buf, PAGE, 6) < 0);
	EXPECT_EQ(conf_target_cmd(c, &t, CONF_TGT_DONE, 0, 0, 0), 0);
	TRY(conf_barrier(c, "target-done"));
out:
	return;
}

static void fence(struct conf_ctx *c)
{
	read_then_send(c, true);
}

static void unfenced(struct conf_ctx *c)
{
	read_then_send(c, false);
}

/* A send with invalidate names the target's rkey; the target's receive
 * says so, and a write with that rkey then fails (access area). */
static void send_inv(struct conf_ctx *c)
{
	struct conf_target t;
	struct rapt_sge sge;

	TRY(conf_target_open(c, &t, PAGE, RAPT_MEM_REMOTE_WRITE, 2, 0, 0));
	sge.addr = (uintptr_t)t.s.buf;
	sge.length = 16;
	sge.lkey = t.s.mi.lkey;
	SKIP_UNLESS_CAP(RAPT_CAP_SEND_INVALIDATE,
			rapt_ep_post_send_inv(t.s.ep, &sge, 1, 1, 0, t.rkey));
	/* The target's receive reports it: its IA must offer it too. */
	if (!(c->peer_caps & RAPT_CAP_SEND_INVALIDATE)) {
		conf_skip(c, "the target's IA does not advertise RAPT_CAP_SEND_INVALIDATE");
		goto out;
	}
	EXPECT_EQ(conf_target_cmd(c, &t, CONF_TGT_INVALIDATED, 0, 0, 0), 0);
	EXPECT_EQ(conf_target_cmd(c, &t, CONF_TGT_DONE, 0, 0, 0), 0);
	TRY(conf_barrier(c, "target-done"));
out:
	return;
}

static const struct conf_test rdma_tests[] = {
	{ "write_offsets", "RDMA writes at aligned, odd, page-crossing and whole-region spans land exactly",
	  write_offsets, conf_target_passive },
	{ "read_offsets", "RDMA reads at every offset class return the target's bytes, nothing more",
	  read_offsets, conf_target_passive },
	{ "large", "the largest RDMA write, then read back, byte for byte",
	  large, conf_target_passive },
	{ "multi_sge", "an RDMA write gathered from 3 SGEs and a read scattered into them",
	  multi_sge, conf_target_passive },
	{ "zero_length", "zero-length RDMA write and read complete and touch nothing",
	  zero, conf_target_passive },
	{ "read_depth", "as many reads in flight as the negotiated ORD all complete correctly",
	  read_depth, conf_target_passive },
	{ "fence", "a fenced send after an RDMA read completes after it",
	  fence, conf_target_passive },
	{ "read_then_send", "a send posted right behind an RDMA read completes after it (post order)",
	  unfenced, conf_target_passive },
	{ "send_invalidate", "a send with invalidate reaches the target flagged RAPT_DTO_INVALIDATED with its rkey",
	  send_inv, conf_target_passive },
};

CONF_SUITE(conf_suite_rdma, "rdma", "RDMA write and read", rdma_tests);
