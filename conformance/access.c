/* SPDX-License-Identifier: MIT */
/*
 * Area "access": remote access violations.  A wrong rkey, a span outside
 * the region, missing rights, a freed registration or a region of another
 * PZ than the target EP's: the requester gets an error completion, the
 * connection breaks on both sides, and the target's memory outside what
 * it allowed is untouched (the passive role checks its region and the
 * guard pages around it).
 *
 * iWARP reports a bad write with a TERMINATE after the write (and the
 * send posted behind it) may already have completed locally: a write
 * whose own completion is SUCCESS passes if the send behind it fails or
 * the connection ends BROKEN.  Reads must fail themselves.  Either way the
 * target must never deliver the send that followed the violation.
 */
#include "config.h"

#include <string.h>

#include "conf.h"

#define PAGE 4096
#define REGION (2 * PAGE)

enum violation {
	V_BAD_KEY = 1,
	V_PAST_END,
	V_BEFORE_START,
	V_NO_RIGHTS,
	V_FREED,
	V_INVALIDATED,
	V_OTHER_PZ,	/* key, span and rights good, but not the EP's PZ */
};

/* Post @op with the violation; the probe send goes right behind it. */
static int post_bad(struct conf_ctx *c, struct conf_target *t, bool write,
		    enum violation v, uint8_t *sink)
{
	struct rapt_sge sge = {
		.addr = (uintptr_t)sink, .length = 16, .lkey = t->s.mi.lkey,
	};
	uint64_t raddr = t->raddr;
	uint32_t rkey = t->rkey;

	if (v == V_BAD_KEY)
		rkey ^= 0x5a5a0001;
	else if (v == V_PAST_END)
		raddr += REGION - 8;
	else if (v == V_BEFORE_START)
		raddr -= 8;
	if (write)
		return EXPECT_OK(rapt_ep_post_write(t->s.ep, &sge, 1, 1, raddr,
						    rkey, 0)) ? 0 : -1;
	return EXPECT_OK(rapt_ep_post_read(t->s.ep, &sge, 1, 1, raddr, rkey,
					   0)) ? 0 : -1;
}

static void violate(struct conf_ctx *c, bool write, enum violation v)
{
	uint64_t cap = write ? RAPT_CAP_RDMA_WRITE : RAPT_CAP_RDMA_READ;
	unsigned int access = write ? RAPT_MEM_REMOTE_WRITE :
				      RAPT_MEM_REMOTE_READ;
	struct rapt_event ev, down, op_ev = { 0 }, probe_ev = { 0 };
	bool got_op = false, got_probe = false, reported;
	struct conf_target t;
	struct rapt_sge sge;
	uint8_t *sink, *cmd;
	unsigned int i;
	int rc;

	if (v == V_NO_RIGHTS)
		access = write ? RAPT_MEM_REMOTE_READ : RAPT_MEM_REMOTE_WRITE;
	TRY(conf_target_open(c, &t, REGION, access, 8, CONF_TGT_BREAK |
			     (v == V_OTHER_PZ ? CONF_TGT_OTHER_PZ : 0), 0));
	sge.addr = (uintptr_t)t.s.buf;
	sge.length = 1;
	sge.lkey = t.s.mi.lkey;
	SKIP_UNLESS_CAP(cap, (write ? rapt_ep_post_write : rapt_ep_post_read)
			(t.s.ep, &sge, 1, 1, t.raddr, t.rkey, 0));
	/* The target checks a read: its IA must say it does. */
	if (!write && !(c->peer_caps & RAPT_CAP_READ_CHECK)) {
		conf_skip(c, "the target's IA does not advertise RAPT_CAP_READ_CHECK");
		goto out;
	}
	if (v == V_FREED)
		REQUIRE_EQ(conf_target_cmd(c, &t, CONF_TGT_FREE, 0, 0, 0), 0);
	if (v == V_INVALIDATED) {
		SKIP_UNLESS_CAP(RAPT_CAP_SEND_INVALIDATE,
				rapt_ep_post_send_inv(t.s.ep, &sge, 1, 1, 0,
						      t.rkey));
		if (!(c->peer_caps & RAPT_CAP_SEND_INVALIDATE)) {
			conf_skip(c, "the target's IA does not advertise RAPT_CAP_SEND_INVALIDATE");
			goto out;
		}
		REQUIRE_EQ(conf_target_cmd(c, &t, CONF_TGT_INVALIDATED, 0, 0,
					   0), 0);
	}
	sink = t.s.buf + 256;
	memset(t.s.buf, 0xa5, 1024);
	conf_fill(sink, 16, 90);
	TRY(post_bad(c, &t, write, v, sink));
	/* A command right behind it: it must not be served normally. */
	cmd = t.s.buf + 512;
	memset(cmd, 0, 16);
	{
		uint32_t op = CONF_TGT_CHECK;

		memcpy(cmd, &op, sizeof(op));
	}
	sge.addr = (uintptr_t)cmd;
	sge.length = 16;
	/* The break may already be under way: then the send is refused. */
	rc = rapt_ep_post_send(t.s.ep, &sge, 1, 2, 0);
	EXPECT_MSG(rc == 0 || rc == RAPT_ESTATE,
		   "a send behind a violating %s returned %s",
		   write ? "write" : "read", rapt_err_name(rc));
	for (i = 0; i < (rc ? 1u : 2u); i++) {
		if (conf_wait(c, t.s.req_evd, conf_tmo(c, CONF_TMO_MS), &ev))
			break;
		if (ev.type != RAPT_EV_DTO)
			continue;
		if (ev.u.dto.cookie == 1)
			op_ev = ev, got_op = true;
		else if (ev.u.dto.cookie == 2)
			probe_ev = ev, got_probe = true;
	}
	REQUIRE_MSG(got_op, "no completion for the violating %s",
		    write ? "write" : "read");
	EXPECT_EQ(op_ev.u.dto.op, write ? RAPT_OP_RDMA_WRITE :
					  RAPT_OP_RDMA_READ);
	/* The connection is broken on this side: BROKEN, or DISCONNECTED
	 * as the end of a connection the transport tore down. */
	TRY(conf_wait_down(c, &t.s, &down));
	if (write) {
		/* An error completion of the write or of the send behind
		 * it, or (iWARP, both completed locally) the TERMINATE's
		 * BROKEN: one of them must tell the requester, unless the
		 * IA says the peer's report does not reach it. */
		reported = op_ev.u.dto.status == RAPT_DTO_REMOTE_ACCESS ||
			   (op_ev.u.dto.status == RAPT_DTO_SUCCESS &&
			    (rc == RAPT_ESTATE || down.type == RAPT_EV_BROKEN ||
			     (got_probe &&
			      probe_ev.u.dto.status != RAPT_DTO_SUCCESS)));
		if (!reported && !(c->attr.caps & RAPT_CAP_PEER_ERRORS)) {
			conf_skip(c, "IA does not advertise RAPT_CAP_PEER_ERRORS: the target's Terminate did not reach it (the write completed %s, the connection ended %s)",
				  conf_dto_status_name(op_ev.u.dto.status),
				  rapt_event_name(down.type));
		} else {
			EXPECT_MSG(reported,
				   "violating write completed %s, the send behind it %s, then %s: the violation was not reported",
				   conf_dto_status_name(op_ev.u.dto.status),
				   got_probe ? conf_dto_status_name(
					   probe_ev.u.dto.status) :
				   "(not posted)",
				   rapt_event_name(down.type));
		}
		if (op_ev.u.dto.status != RAPT_DTO_REMOTE_ACCESS)
			conf_note(c, "the write itself completed %s",
				  conf_dto_status_name(op_ev.u.dto.status));
	} else if (op_ev.u.dto.status == RAPT_DTO_FLUSHED &&
		   !(c->attr.caps & RAPT_CAP_PEER_ERRORS)) {
		/* The target's Terminate was not seen: the read flushed. */
		conf_skip(c, "IA does not advertise RAPT_CAP_PEER_ERRORS: the target's Terminate did not reach it (the read completed FLUSHED)");
		EXPECT_MSG(conf_verify(sink, 16, 90) < 0,
			   "a refused read placed data in its local buffer");
	} else {
		EXPECT_MSG(op_ev.u.dto.status == RAPT_DTO_REMOTE_ACCESS,
			   "violating read completed %s, expected REMOTE_ACCESS",
			   conf_dto_status_name(op_ev.u.dto.status));
		EXPECT_MSG(conf_verify(sink, 16, 90) < 0,
			   "a refused read placed data in its local buffer");
	}
	EXPECT(t.s.buf[255] == 0xa5 && t.s.buf[272] == 0xa5);
	/* The target saw the break too, checked that the send behind the
	 * violation never reached it, and checked its memory. */
	TRY(conf_barrier(c, "target-done"));
out:
	return;
}

static void t_write_bad_key(struct conf_ctx *c)
{
	violate(c, true, V_BAD_KEY);
}

static void t_write_past_end(struct conf_ctx *c)
{
	violate(c, true, V_PAST_END);
}

static void t_write_before(struct conf_ctx *c)
{
	violate(c, true, V_BEFORE_START);
}

static void t_write_no_rights(struct conf_ctx *c)
{
	violate(c, true, V_NO_RIGHTS);
}

static void t_write_freed(struct conf_ctx *c)
{
	violate(c, true, V_FREED);
}

static void t_write_invalidated(struct conf_ctx *c)
{
	violate(c, true, V_INVALIDATED);
}

static void t_write_other_pz(struct conf_ctx *c)
{
	violate(c, true, V_OTHER_PZ);
}

static void t_read_bad_key(struct conf_ctx *c)
{
	violate(c, false, V_BAD_KEY);
}

static void t_read_past_end(struct conf_ctx *c)
{
	violate(c, false, V_PAST_END);
}

static void t_read_no_rights(struct conf_ctx *c)
{
	violate(c, false, V_NO_RIGHTS);
}

static void t_read_freed(struct conf_ctx *c)
{
	violate(c, false, V_FREED);
}

static void t_read_other_pz(struct conf_ctx *c)
{
	violate(c, false, V_OTHER_PZ);
}

static const struct conf_test access_tests[] = {
	{ "write_bad_key", "an RDMA write with a wrong rkey fails, breaks the connection, writes nothing",
	  t_write_bad_key, conf_target_passive },
	{ "write_past_end", "an RDMA write running 8 bytes past the region fails and writes nothing",
	  t_write_past_end, conf_target_passive },
	{ "write_before_start", "an RDMA write starting 8 bytes before the region fails and writes nothing",
	  t_write_before, conf_target_passive },
	{ "write_no_rights", "an RDMA write into a region without REMOTE_WRITE fails and writes nothing",
	  t_write_no_rights, conf_target_passive },
	{ "write_freed", "an RDMA write with the rkey of a freed LMR fails and writes nothing",
	  t_write_freed, conf_target_passive },
	{ "write_invalidated", "an RDMA write with an rkey the requester invalidated by a send fails",
	  t_write_invalidated, conf_target_passive },
	{ "write_other_pz", "an RDMA write with the rkey of a region in another PZ than the target EP's fails and writes nothing",
	  t_write_other_pz, conf_target_passive },
	{ "read_bad_key", "an RDMA read with a wrong rkey completes REMOTE_ACCESS and breaks",
	  t_read_bad_key, conf_target_passive },
	{ "read_past_end", "an RDMA read running past the region completes REMOTE_ACCESS",
	  t_read_past_end, conf_target_passive },
	{ "read_no_rights", "an RDMA read of a region without REMOTE_READ completes REMOTE_ACCESS",
	  t_read_no_rights, conf_target_passive },
	{ "read_freed", "an RDMA read with the rkey of a freed LMR completes REMOTE_ACCESS",
	  t_read_freed, conf_target_passive },
	{ "read_other_pz", "an RDMA read with the rkey of a region in another PZ than the target EP's completes REMOTE_ACCESS",
	  t_read_other_pz, conf_target_passive },
};

CONF_SUITE(conf_suite_access, "access", "remote access violations",
	   access_tests);
