/* SPDX-License-Identifier: MIT */
/*
 * Area "rmr" (API 1.3): memory windows.  One IA plays both sides: the
 * owner's EP accepts the user's, the owner binds windows over its buffer
 * through its EP, and the user writes and reads through the window's key.
 * A window gives exactly what was bound: the bytes of its range with its
 * rights, until it is unbound, rebound (a new key) or invalidated by the
 * user's Send with Invalidate; anything else is a remote access error that
 * breaks the connection and touches nothing.  Bad binds fail at once.  A
 * provider without RAPT_CAP_RMR must refuse rapt_rmr_create() with
 * RAPT_ENOTSUP: skipped.
 */
#include "config.h"

#include <string.h>

#include "conf.h"

#define WIN_OFF	4096	/* the window's offset in the owner's buf */
#define WIN_LEN	256
#define SRC_OFF	8192	/* where the user builds what it writes */
#define SINK_OFF 12288	/* where the user's reads land */
#define MSG_OFF	16384	/* the owner's receive buffer */

struct rig {
	struct conf_ep_set o;	/* the owner: its buffer has the window */
	struct conf_ep_set u;	/* the user: RDMA through the window */
	struct conf_listener l;
	struct rapt_rmr *rmr;
	uint64_t raddr;		/* the window's first byte */
};

/* Create the window (or skip without RAPT_CAP_RMR) and connect. */
static int rig_open(struct conf_ctx *c, struct rig *r)
{
	struct rapt_event ev;
	struct rapt_cr *cr;

	memset(r, 0, sizeof(*r));
	if (!(c->attr.caps & RAPT_CAP_RMR)) {
		EXPECT_RC(rapt_rmr_create(c->pz, &r->rmr), RAPT_ENOTSUP);
		conf_skip(c, "IA does not advertise RAPT_CAP_RMR");
		return -1;
	}
	REQUIRE_OK(rapt_rmr_create(c->pz, &r->rmr));
	conf_track(c, CONF_OBJ_RMR, r->rmr);
	TRY(conf_set_create(c, &r->o, NULL));
	TRY(conf_set_create(c, &r->u, NULL));
	TRY(conf_listen(c, &r->l, NULL));
	TRY(conf_self_connect(c, r->u.ep, r->l.sid));
	TRY(conf_get_cr(c, &r->l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	REQUIRE_OK(rapt_cr_accept(cr, r->o.ep, NULL, 0));
	conf_untrack(c, cr);
	TRY(EXPECT_EVENT(r->o.conn_evd, RAPT_EV_ESTABLISHED, &ev));
	TRY(EXPECT_EVENT(r->u.conn_evd, RAPT_EV_ESTABLISHED, &ev));
	r->raddr = r->o.mi.raddr + WIN_OFF;
	memset(r->o.buf, 0xa5, WIN_OFF + 2 * WIN_LEN);
	return 0;
out:
	return -1;
}

/* Bind the window over [WIN_OFF, WIN_OFF + WIN_LEN) with @access and
 * wait for its completion. */
static int bind_win(struct conf_ctx *c, struct rig *r, unsigned int access,
		    uint32_t *rkey)
{
	struct rapt_event ev;

	REQUIRE_OK(rapt_rmr_bind(r->rmr, r->o.ep, r->o.lmr, r->raddr,
				 WIN_LEN, access, 0xb1d, 0, rkey));
	TRY(EXPECT_DTO(r->o.req_evd, RAPT_OP_RMR_BIND, RAPT_DTO_SUCCESS,
		       0xb1d, &ev));
	EXPECT(ev.u.dto.ep == r->o.ep);
	EXPECT(*rkey != 0 && *rkey != r->o.mi.rkey);
	return 0;
out:
	return -1;
}

/* The user writes @len bytes of @seed at @raddr with @rkey, then a send
 * behind it; once the owner has the send, the write has landed. */
static int write_ok(struct conf_ctx *c, struct rig *r, uint32_t rkey,
		    uint64_t raddr, uint32_t len, uint32_t seed)
{
	struct rapt_sge sge = {
		.addr = (uintptr_t)(r->u.buf + SRC_OFF), .length = len,
		.lkey = r->u.mi.lkey,
	};
	struct rapt_sge rsge = {
		.addr = (uintptr_t)(r->o.buf + MSG_OFF), .length = 16,
		.lkey = r->o.mi.lkey,
	};

	conf_fill(r->u.buf + SRC_OFF, len, seed);
	REQUIRE_OK(rapt_ep_post_recv(r->o.ep, &rsge, 1, seed));
	REQUIRE_OK(rapt_ep_post_write(r->u.ep, &sge, 1, 1, raddr, rkey, 0));
	sge.length = 0;
	REQUIRE_OK(rapt_ep_post_send(r->u.ep, &sge, 0, 2, 0));
	TRY(EXPECT_DTO(r->u.req_evd, RAPT_OP_RDMA_WRITE, RAPT_DTO_SUCCESS, 1,
		       NULL));
	TRY(EXPECT_DTO(r->u.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 2,
		       NULL));
	TRY(EXPECT_DTO(r->o.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, seed,
		       NULL));
	return 0;
out:
	return -1;
}

/*
 * The user's write (or read) at @raddr with @rkey must be refused: the
 * requester learns it (an error completion, or on iWARP the Terminate's
 * BROKEN after a write that completed locally), both sides go down, and
 * the owner's bytes around the window are what they were.
 */
static void refused(struct conf_ctx *c, struct rig *r, bool write,
		    uint32_t rkey, uint64_t raddr, uint32_t len)
{
	struct rapt_sge sge = {
		.addr = (uintptr_t)(r->u.buf + (write ? SRC_OFF : SINK_OFF)),
		.length = len, .lkey = r->u.mi.lkey,
	};
	struct rapt_event ev, down;
	uint8_t before[WIN_OFF + 2 * WIN_LEN];
	bool reported;
	uint32_t i;

	memcpy(before, r->o.buf, sizeof(before));
	conf_fill(r->u.buf + SRC_OFF, len, 77);
	memset(r->u.buf + SINK_OFF, 0, len);
	if (write)
		REQUIRE_OK(rapt_ep_post_write(r->u.ep, &sge, 1, 9, raddr,
					      rkey, 0));
	else
		REQUIRE_OK(rapt_ep_post_read(r->u.ep, &sge, 1, 9, raddr,
					     rkey, 0));
	TRY(EXPECT_EVENT(r->u.req_evd, RAPT_EV_DTO, &ev));
	EXPECT(ev.u.dto.cookie == 9 &&
	       ev.u.dto.op == (write ? RAPT_OP_RDMA_WRITE :
				       RAPT_OP_RDMA_READ));
	TRY(conf_wait_down(c, &r->u, &down));
	reported = ev.u.dto.status == RAPT_DTO_REMOTE_ACCESS ||
		   (write && ev.u.dto.status == RAPT_DTO_SUCCESS &&
		    down.type == RAPT_EV_BROKEN);
	EXPECT_MSG(reported || !(c->attr.caps & RAPT_CAP_PEER_ERRORS),
		   "the refused %s completed %s, then %s",
		   write ? "write" : "read",
		   conf_dto_status_name(ev.u.dto.status),
		   rapt_event_name(down.type));
	TRY(EXPECT_EVENT(r->o.conn_evd, RAPT_EV_BROKEN, &ev));
	EXPECT_MSG(!memcmp(before, r->o.buf, sizeof(before)),
		   "a refused %s changed the owner's memory",
		   write ? "write" : "read");
	for (i = 0; !write && i < len; i++)
		if (!EXPECT_MSG(!r->u.buf[SINK_OFF + i],
				"a refused read placed data"))
			break;
out:
	return;
}

static uint32_t query_rkey(struct conf_ctx *c, struct rapt_rmr *rmr)
{
	struct rapt_rmr_info i;

	if (!EXPECT_OK(rapt_rmr_query(rmr, &i, sizeof(i))))
		return ~0u;
	return i.rkey;
}

/* Bad binds fail at once and change nothing. */
static int bad_binds(struct conf_ctx *c, struct rig *r, uint32_t good)
{
	struct rapt_lmr_info ri;
	struct rapt_lmr *ro;
	struct rapt_pz *pz2;
	struct rapt_ep *ep2;
	uint32_t k = 0;
	int n = 0;

#define BAD(lmr, addr, len, acc, fl, want)				\
	n += !EXPECT_RC(rapt_rmr_bind(r->rmr, r->o.ep, (lmr), (addr),	\
				      (len), (acc), 0, (fl), &k), (want))
	BAD(r->o.lmr, r->raddr, 0, RAPT_MEM_REMOTE_WRITE, 0, RAPT_EINVAL);
	BAD(r->o.lmr, r->raddr, 8, 0, 0, RAPT_EINVAL);
	BAD(r->o.lmr, r->raddr, 8, RAPT_MEM_LOCAL_WRITE, 0, RAPT_EINVAL);
	BAD(r->o.lmr, r->raddr, 8, RAPT_MEM_REMOTE_WRITE,
	    RAPT_POST_SOLICITED, RAPT_EINVAL);
	BAD(r->o.lmr, r->o.mi.raddr - 1, 8, RAPT_MEM_REMOTE_WRITE, 0,
	    RAPT_ERANGE);
	BAD(r->o.lmr, r->o.mi.raddr + r->o.mi.length - 7, 8,
	    RAPT_MEM_REMOTE_WRITE, 0, RAPT_ERANGE);
	BAD(r->o.lmr, r->raddr, UINT64_MAX, RAPT_MEM_REMOTE_WRITE, 0,
	    RAPT_ERANGE);
	BAD((struct rapt_lmr *)r->u.ep, r->raddr, 8, RAPT_MEM_REMOTE_WRITE, 0,
	    RAPT_EHANDLETYPE);
	/* A right the LMR lacks. */
	REQUIRE_OK(conf_lmr_create(c, r->o.buf, 4096, RAPT_MEM_REMOTE_READ,
				   &ro, &ri));
	BAD(ro, ri.raddr, 8, RAPT_MEM_REMOTE_WRITE, 0, RAPT_EACCES);
	BAD(ro, ri.raddr, 8, RAPT_MEM_REMOTE_READ | RAPT_MEM_REMOTE_WRITE, 0,
	    RAPT_EACCES);
	/* An LMR of another PZ. */
	REQUIRE_OK(rapt_pz_create(c->ia, &pz2));
	conf_track(c, CONF_OBJ_PZ, pz2);
	REQUIRE_OK(rapt_lmr_create(pz2, r->o.buf, 4096, RAPT_MEM_REMOTE_READ,
				   &ro, &ri));
	conf_track(c, CONF_OBJ_LMR, ro);
	BAD(ro, ri.raddr, 8, RAPT_MEM_REMOTE_READ, 0, RAPT_EINVAL);
#undef BAD
	/* An EP of another PZ; an EP that is not connected. */
	REQUIRE_OK(rapt_ep_create(pz2, NULL, r->o.req_evd, r->o.conn_evd,
				  NULL, &ep2));
	conf_track(c, CONF_OBJ_EP, ep2);
	n += !EXPECT_RC(rapt_rmr_bind(r->rmr, ep2, r->o.lmr, r->raddr, 8,
				      RAPT_MEM_REMOTE_READ, 0, 0, &k),
			RAPT_EINVAL);
	n += !EXPECT_RC(rapt_rmr_unbind(r->rmr, ep2, 0, 0), RAPT_EINVAL);
	REQUIRE_OK(rapt_ep_create(c->pz, NULL, r->o.req_evd, r->o.conn_evd,
				  NULL, &ep2));
	conf_track(c, CONF_OBJ_EP, ep2);
	n += !EXPECT_RC(rapt_rmr_bind(r->rmr, ep2, r->o.lmr, r->raddr, 8,
				      RAPT_MEM_REMOTE_READ, 0, 0, &k),
			RAPT_ESTATE);
	n += !EXPECT_RC(rapt_rmr_bind(r->rmr, r->o.ep, r->o.lmr, r->raddr, 8,
				      RAPT_MEM_REMOTE_READ, 0, 0, NULL),
			RAPT_EINVAL);
	n += !EXPECT_EQU(k, 0);
	n += !EXPECT_EQU(query_rkey(c, r->rmr), good);
	EXPECT_EMPTY(r->o.req_evd, 0);
	return n ? -1 : 0;
out:
	return -1;
}

/* Objects: create, query, free, the busy rules, and bad binds. */
static void t_objects(struct conf_ctx *c)
{
	enum rapt_handle_type ht;
	struct rapt_rmr_info i;
	struct rapt_rmr *tmp;
	struct rapt_pz *pz;
	struct rig r;
	uint32_t k;

	TRY(rig_open(c, &r));
	EXPECT_OK(rapt_handle_type(r.rmr, &ht));
	EXPECT_EQ(ht, RAPT_HANDLE_RMR);
	EXPECT_RC(rapt_rmr_create(c->pz, NULL), RAPT_EINVAL);
	EXPECT_RC(rapt_rmr_query(r.rmr, NULL, sizeof(i)), RAPT_EINVAL);
	EXPECT_RC(rapt_rmr_free((struct rapt_rmr *)r.o.ep), RAPT_EHANDLETYPE);
	EXPECT_EQU(query_rkey(c, r.rmr), 0);
	TRY(bad_binds(c, &r, 0));
	TRY(bind_win(c, &r, RAPT_MEM_REMOTE_WRITE, &k));
	REQUIRE_OK(rapt_rmr_query(r.rmr, &i, sizeof(i)));
	EXPECT_EQU(i.rkey, k);
	EXPECT_EQU(i.raddr, r.raddr);
	EXPECT_EQU(i.length, WIN_LEN);
	EXPECT_EQU(i.access, RAPT_MEM_REMOTE_WRITE);
	EXPECT(i.lmr == r.o.lmr);
	/* A bad rebind leaves the bound window as it was. */
	TRY(bad_binds(c, &r, k));
	/* The LMR and the PZ are busy while the window lives. */
	EXPECT_RC(rapt_lmr_free(r.o.lmr), RAPT_EBUSY);
	REQUIRE_OK(rapt_rmr_unbind(r.rmr, r.o.ep, 0x0b, 0));
	TRY(EXPECT_DTO(r.o.req_evd, RAPT_OP_RMR_UNBIND, RAPT_DTO_SUCCESS,
		       0x0b, NULL));
	EXPECT_EQU(query_rkey(c, r.rmr), 0);
	/* Unbinding twice is fine; a suppressed one completes silently. */
	EXPECT_OK(rapt_rmr_unbind(r.rmr, r.o.ep, 0x0c, RAPT_POST_SUPPRESS));
	REQUIRE_OK(rapt_pz_create(c->ia, &pz));
	conf_track(c, CONF_OBJ_PZ, pz);
	REQUIRE_OK(rapt_rmr_create(pz, &tmp));
	EXPECT_RC(rapt_pz_free(pz), RAPT_EBUSY);
	EXPECT_OK(rapt_rmr_free(tmp));
	EXPECT_RC(rapt_rmr_free(tmp), RAPT_EBADHANDLE);
	EXPECT_OK(conf_free(c, pz));
	EXPECT_EMPTY(r.o.req_evd, 0);
out:
	return;
}

/* Writes and reads through the window land exactly; the LMR's own key
 * still works. */
static void t_write_read(struct conf_ctx *c)
{
	struct rapt_sge sge;
	struct rig r;
	uint32_t k;

	TRY(rig_open(c, &r));
	TRY(bind_win(c, &r, RAPT_MEM_REMOTE_READ | RAPT_MEM_REMOTE_WRITE,
		     &k));
	TRY(write_ok(c, &r, k, r.raddr, WIN_LEN, 3));
	EXPECT(conf_verify(r.o.buf + WIN_OFF, WIN_LEN, 3) < 0);
	EXPECT(r.o.buf[WIN_OFF - 1] == 0xa5 &&
	       r.o.buf[WIN_OFF + WIN_LEN] == 0xa5);
	/* The last byte alone, at the window's edge. */
	TRY(write_ok(c, &r, k, r.raddr + WIN_LEN - 1, 1, 4));
	EXPECT(r.o.buf[WIN_OFF + WIN_LEN - 1] == conf_pattern_byte(0, 4));
	conf_fill(r.o.buf + WIN_OFF, WIN_LEN, 5);
	sge.addr = (uintptr_t)(r.u.buf + SINK_OFF);
	sge.length = WIN_LEN;
	sge.lkey = r.u.mi.lkey;
	REQUIRE_OK(rapt_ep_post_read(r.u.ep, &sge, 1, 6, r.raddr, k, 0));
	TRY(EXPECT_DTO(r.u.req_evd, RAPT_OP_RDMA_READ, RAPT_DTO_SUCCESS, 6,
		       NULL));
	EXPECT(conf_verify(r.u.buf + SINK_OFF, WIN_LEN, 5) < 0);
	/* The LMR's rkey is untouched by the window. */
	TRY(write_ok(c, &r, r.o.mi.rkey, r.o.mi.raddr, 16, 7));
	EXPECT(conf_verify(r.o.buf, 16, 7) < 0);
out:
	return;
}

static void t_outside(struct conf_ctx *c)
{
	struct rig r;
	uint32_t k;

	TRY(rig_open(c, &r));
	TRY(bind_win(c, &r, RAPT_MEM_REMOTE_WRITE, &k));
	/* One byte past the end: still inside the LMR, not the window. */
	refused(c, &r, true, k, r.raddr + 1, WIN_LEN);
out:
	return;
}

static void t_before(struct conf_ctx *c)
{
	struct rig r;
	uint32_t k;

	TRY(rig_open(c, &r));
	TRY(bind_win(c, &r, RAPT_MEM_REMOTE_READ, &k));
	refused(c, &r, false, k, r.raddr - 1, 8);
out:
	return;
}

static void t_no_right(struct conf_ctx *c)
{
	struct rig r;
	uint32_t k;

	TRY(rig_open(c, &r));
	TRY(bind_win(c, &r, RAPT_MEM_REMOTE_WRITE, &k));
	refused(c, &r, false, k, r.raddr, 8);
out:
	return;
}

static void t_unbind(struct conf_ctx *c)
{
	struct rig r;
	uint32_t k;

	TRY(rig_open(c, &r));
	TRY(bind_win(c, &r, RAPT_MEM_REMOTE_WRITE, &k));
	TRY(write_ok(c, &r, k, r.raddr, 8, 8));
	REQUIRE_OK(rapt_rmr_unbind(r.rmr, r.o.ep, 0x0b, 0));
	TRY(EXPECT_DTO(r.o.req_evd, RAPT_OP_RMR_UNBIND, RAPT_DTO_SUCCESS,
		       0x0b, NULL));
	EXPECT_EQU(query_rkey(c, r.rmr), 0);
	refused(c, &r, true, k, r.raddr, 8);
out:
	return;
}

/* The user's Send with Invalidate names the window's key: the owner's
 * receive says so, the key is dead, the LMR's own key is not. */
static void t_remote_invalidate(struct conf_ctx *c)
{
	struct rapt_sge rsge, sge;
	struct rapt_event ev;
	struct rig r;
	uint32_t k;

	TRY(rig_open(c, &r));
	if (!(c->attr.caps & RAPT_CAP_SEND_INVALIDATE)) {
		conf_skip(c, "IA does not advertise RAPT_CAP_SEND_INVALIDATE");
		goto out;
	}
	TRY(bind_win(c, &r, RAPT_MEM_REMOTE_WRITE, &k));
	rsge.addr = (uintptr_t)(r.o.buf + MSG_OFF);
	rsge.length = 16;
	rsge.lkey = r.o.mi.lkey;
	REQUIRE_OK(rapt_ep_post_recv(r.o.ep, &rsge, 1, 0x1a));
	sge.addr = (uintptr_t)(r.u.buf + SRC_OFF);
	sge.length = 4;
	sge.lkey = r.u.mi.lkey;
	REQUIRE_OK(rapt_ep_post_send_inv(r.u.ep, &sge, 1, 0x1b, 0, k));
	TRY(EXPECT_DTO(r.u.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, 0x1b,
		       NULL));
	TRY(EXPECT_DTO(r.o.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0x1a,
		       &ev));
	EXPECT(ev.u.dto.flags & RAPT_DTO_INVALIDATED);
	EXPECT_EQU(ev.u.dto.invalidated_rkey, k);
	EXPECT_EQU(query_rkey(c, r.rmr), 0);
	TRY(write_ok(c, &r, r.o.mi.rkey, r.raddr, 8, 10));
	refused(c, &r, true, k, r.raddr, 8);
out:
	return;
}

/* A rebind gives a new key; the old one is dead at once. */
static void t_rebind(struct conf_ctx *c)
{
	struct rig r;
	uint32_t k1, k2;

	TRY(rig_open(c, &r));
	TRY(bind_win(c, &r, RAPT_MEM_REMOTE_WRITE, &k1));
	TRY(bind_win(c, &r, RAPT_MEM_REMOTE_WRITE, &k2));
	EXPECT(k1 != k2);
	TRY(write_ok(c, &r, k2, r.raddr, WIN_LEN, 11));
	EXPECT(conf_verify(r.o.buf + WIN_OFF, WIN_LEN, 11) < 0);
	refused(c, &r, true, k1, r.raddr, 8);
out:
	return;
}

static const struct conf_test rmr_tests[] = {
	{ "objects", "create, query, free; LMR and PZ busy while a window lives; bad binds (length, rights, range, flags, another PZ's LMR or EP, an unconnected EP) fail at once and change nothing",
	  t_objects, NULL },
	{ "write_read", "a bind completes as RAPT_OP_RMR_BIND; writes and reads through the window land exactly, up to its last byte; the LMR's key still works",
	  t_write_read, NULL },
	{ "write_outside", "a write running one byte past the window is a remote access error, breaks the connection on both sides, writes nothing",
	  t_outside, NULL },
	{ "read_before", "a read starting one byte before the window completes REMOTE_ACCESS and breaks the connection",
	  t_before, NULL },
	{ "read_not_granted", "a read through a window bound for remote write only completes REMOTE_ACCESS and breaks the connection",
	  t_no_right, NULL },
	{ "unbind", "after rapt_rmr_unbind (completion RAPT_OP_RMR_UNBIND) the key is refused",
	  t_unbind, NULL },
	{ "remote_invalidate", "a Send with Invalidate naming the window's key: the receive says so, the key is refused after, the LMR's key is not",
	  t_remote_invalidate, NULL },
	{ "rebind", "a rebind gives a new key that works, and the old key is refused",
	  t_rebind, NULL },
};

CONF_SUITE(conf_suite_rmr, "rmr", "memory windows (API 1.3)", rmr_tests);
