/* SPDX-License-Identifier: MIT */
/*
 * Area "rtr": the RTR/RTS rule and event order.  ESTABLISHED on either
 * side means that side may send at once (the passive side before the
 * active one has sent anything); an EP's connection events come before
 * its completions in one EVD, and DISCONNECTED after its flushes.
 */
#include "config.h"

#include <string.h>

#include "conf.h"

#define ROUNDS 10
#define BURST 16

/* Accept one request with a fresh set and send @n messages the moment
 * ESTABLISHED is seen. */
static int accept_and_send(struct conf_ctx *c, struct conf_listener *l,
			   const struct conf_set_opts *o, unsigned int n,
			   uint32_t seed)
{
	struct conf_ep_set s;
	struct rapt_sge sge;
	struct rapt_cr *cr;
	unsigned int i;

	TRY(conf_set_create(c, &s, o));
	for (i = 0; i < n; i++)
		conf_fill(s.buf + i * 128, 64 + i, seed + i);
	TRY(conf_get_cr(c, l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	TRY(conf_accept(c, cr, &s, NULL, 0));
	for (i = 0; i < n; i++) {
		sge.addr = (uintptr_t)(s.buf + i * 128);
		sge.length = 64 + i;
		sge.lkey = s.mi.lkey;
		REQUIRE_OK(rapt_ep_post_send(s.ep, &sge, 1, i, 0));
	}
	for (i = 0; i < n; i++)
		REQUIRE_DTO(s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, i, NULL);
	return 0;
out:
	return -1;
}

/* Connect with @n receives posted before; check the messages. */
static int connect_and_recv(struct conf_ctx *c, struct conf_ep_set *s,
			    const struct sockaddr_storage *addr, uint64_t sid,
			    unsigned int n, uint32_t seed)
{
	struct rapt_event ev;
	unsigned int i;

	TRY(conf_post_recvs(c, s, 0, n, 128));
	TRY(conf_connect(c, s, addr, sid, NULL, 0, NULL));
	for (i = 0; i < n; i++) {
		REQUIRE_DTO(s->recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, i,
			    &ev);
		EXPECT_EQ(ev.u.dto.length, 64 + i);
		REQUIRE_MSG(conf_verify(s->buf + i * 128, 64 + i, seed + i) < 0,
			    "message %u of the passive side arrived altered",
			    i);
	}
	return 0;
out:
	return -1;
}

static void first_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	unsigned int r;
	uint64_t sid;

	TRY(conf_lookup(c, &addr, &sid));
	for (r = 0; r < ROUNDS; r++) {
		TRY(conf_set_create(c, &s, NULL));
		TRY(connect_and_recv(c, &s, &addr, sid, 1, r * 100));
	}
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void first_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	unsigned int r;

	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	for (r = 0; r < ROUNDS; r++)
		TRY(accept_and_send(c, &l, NULL, 1, r * 100));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void burst_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	uint64_t sid;

	TRY(conf_lookup(c, &addr, &sid));
	TRY(conf_set_create(c, &s, NULL));
	TRY(connect_and_recv(c, &s, &addr, sid, BURST, 7));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void burst_passive(struct conf_ctx *c)
{
	struct conf_listener l;

	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(accept_and_send(c, &l, NULL, BURST, 7));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/*
 * An EVD with the DTO and CONNECTION streams: 0, and *@evd.  An IA that
 * cannot merge them must refuse with RAPT_ENOTSUP: then 1, and the test
 * checks the order across separate EVDs instead (an event delivered
 * before another is queued when the other is seen).
 */
static int merged_evd(struct conf_ctx *c, struct rapt_evd **evd)
{
	unsigned int st = RAPT_EVD_DTO | RAPT_EVD_CONNECTION;
	int rc;

	*evd = NULL;
	if (!(c->attr.evd_merge[0] & RAPT_EVD_CONNECTION)) {
		rc = rapt_evd_create(c->ia, 64, st, evd);
		if (!rc)
			conf_track(c, CONF_OBJ_EVD, *evd);
		*evd = NULL;
		if (!EXPECT_RC(rc, RAPT_ENOTSUP))
			return -1;
		conf_note(c, "DTO and CONNECTION cannot share an EVD: order checked across two EVDs");
		return 1;
	}
	return EXPECT_OK(conf_evd_create(c, 256, st, evd)) ? 0 : -1;
}

/* @first was seen on its EVD; @type must already be queued on @evd. */
static int already_queued(struct conf_ctx *c, struct rapt_evd *evd,
			  uint32_t type, const char *first,
			  struct rapt_event *ev)
{
	int rc = rapt_evd_dequeue(evd, ev);

	if (!EXPECT_MSG(rc == 0 && ev->type == type,
			"%s was delivered before %s (%s)", first,
			rapt_event_name(type),
			rc ? "nothing queued" : rapt_event_name(ev->type)))
		return -1;
	return 0;
}

/* Active side: ESTABLISHED, then the receive completion. */
static void order_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_set_opts o = { 0 };
	struct rapt_event ev;
	struct conf_ep_set s;
	unsigned int r;
	uint64_t sid;
	int split;

	split = merged_evd(c, &o.shared_evd);
	TRY(split < 0);
	TRY(conf_lookup(c, &addr, &sid));
	for (r = 0; r < ROUNDS; r++) {
		if (!split && r)
			TRY(merged_evd(c, &o.shared_evd));
		TRY(conf_set_create(c, &s, &o));
		TRY(conf_post_recvs(c, &s, 0, 1, 128));
		REQUIRE_OK(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid,
					   NULL, 0,
					   conf_tmo(c, 20000) * 1000LL));
		if (split) {
			REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS,
				    0, &ev);
			TRY(already_queued(c, s.conn_evd, RAPT_EV_ESTABLISHED,
					   "the first receive completion", &ev));
		} else {
			REQUIRE_EVENT(s.conn_evd, RAPT_EV_ESTABLISHED, &ev);
			REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS,
				    0, &ev);
		}
		EXPECT(conf_verify(s.buf, 64, r) < 0);
	}
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void order_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	unsigned int r;

	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	for (r = 0; r < ROUNDS; r++)
		TRY(accept_and_send(c, &l, NULL, 1, r));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* Passive side: its ESTABLISHED comes before the first message the active
 * side sends the moment it sees its own. */
static void porder_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	unsigned int r;
	uint64_t sid;

	TRY(conf_lookup(c, &addr, &sid));
	for (r = 0; r < ROUNDS; r++) {
		TRY(conf_set_create(c, &s, NULL));
		conf_fill(s.buf, 64, r);
		TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
		TRY(conf_send_msg(c, &s, 0, 64, r));
	}
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void porder_passive(struct conf_ctx *c)
{
	struct conf_set_opts o = { 0 };
	struct conf_listener l;
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_cr *cr;
	unsigned int r;
	int split;

	split = merged_evd(c, &o.shared_evd);
	TRY(split < 0);
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	for (r = 0; r < ROUNDS; r++) {
		if (!split && r)
			TRY(merged_evd(c, &o.shared_evd));
		TRY(conf_set_create(c, &s, &o));
		TRY(conf_post_recvs(c, &s, 0, 1, 128));
		TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
		REQUIRE_OK(rapt_cr_accept(cr, s.ep, NULL, 0));
		conf_untrack(c, cr);
		if (split) {
			REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS,
				    0, &ev);
			TRY(already_queued(c, s.conn_evd, RAPT_EV_ESTABLISHED,
					   "the first receive completion", &ev));
		} else {
			REQUIRE_EVENT(s.conn_evd, RAPT_EV_ESTABLISHED, &ev);
			REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS,
				    0, &ev);
		}
		EXPECT(conf_verify(s.buf, 64, r) < 0);
	}
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* Every flush, then DISCONNECTED (or BROKEN) last. */
static void flush_order(struct conf_ctx *c, bool abrupt)
{
	struct conf_set_opts o = { 0 };
	struct conf_ep_set s;
	struct rapt_event ev, down;
	unsigned int i;
	int split;

	split = merged_evd(c, &o.shared_evd);
	TRY(split < 0);
	TRY(conf_pair_active(c, &s, &o, 4, 64));
	TRY(conf_send_u64(c, "abrupt", abrupt));
	if (split)
		TRY(conf_wait_down(c, &s, &down));
	for (i = 0; i < 4; i++) {
		if (split)
			TRY(already_queued(c, s.recv_evd, RAPT_EV_DTO,
					   rapt_event_name(down.type), &ev));
		else
			REQUIRE(conf_wait(c, s.recv_evd,
					  conf_tmo(c, CONF_TMO_MS), &ev) == 0);
		EXPECT_MSG(ev.type == RAPT_EV_DTO &&
			   ev.u.dto.status == RAPT_DTO_FLUSHED &&
			   ev.u.dto.cookie == i,
			   "receive %u: %s, expected its FLUSHED completion", i,
			   rapt_event_name(ev.type));
	}
	if (!split)
		REQUIRE(conf_wait(c, s.conn_evd, conf_tmo(c, CONF_TMO_MS),
				  &down) == 0);
	EXPECT_MSG(down.type == RAPT_EV_DISCONNECTED ||
		   (abrupt && down.type == RAPT_EV_BROKEN),
		   "after the flushes: %s, expected DISCONNECTED%s",
		   rapt_event_name(down.type), abrupt ? " or BROKEN" : "");
	EXPECT(down.u.conn.ep == s.ep);
	EXPECT_EMPTY(s.conn_evd, 50);
	EXPECT_EMPTY(s.recv_evd, 0);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void flush_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;
	uint64_t abrupt;

	TRY(conf_pair_passive(c, &s, NULL, 0, 0));
	TRY(conf_recv_u64(c, "abrupt", &abrupt));
	REQUIRE_OK(rapt_ep_disconnect(s.ep, abrupt ? RAPT_CLOSE_ABRUPT :
				      RAPT_CLOSE_GRACEFUL, NULL, 0));
	TRY(conf_wait_down(c, &s, NULL));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void t_flush_graceful(struct conf_ctx *c)
{
	flush_order(c, false);
}

static void t_flush_abrupt(struct conf_ctx *c)
{
	flush_order(c, true);
}

/*
 * The active side disconnects the moment it sees ESTABLISHED.  Its RTR
 * (iWARP) or RTU (IB) went out before, so the passive side still gets
 * ESTABLISHED, then DISCONNECTED: never ACCEPT_ERROR.
 */
static void closes_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	unsigned int r;
	uint64_t sid;

	TRY(conf_lookup(c, &addr, &sid));
	TRY(conf_set_create(c, &s, NULL));
	for (r = 0; r < 2 * ROUNDS; r++) {
		TRY(conf_set_ep(c, &s, NULL, &s.ep));
		TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
		/* Odd rounds free the EP instead: an abrupt close. */
		if (r % 2 == 0) {
			REQUIRE_OK(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL,
						      NULL, 0));
			REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, NULL);
		}
		REQUIRE_OK(conf_free(c, s.ep));
	}
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void closes_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_cr *cr;
	unsigned int r;

	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_set_create(c, &s, NULL));
	for (r = 0; r < 2 * ROUNDS; r++) {
		TRY(conf_set_ep(c, &s, NULL, &s.ep));
		TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
		REQUIRE_OK(rapt_cr_accept(cr, s.ep, NULL, 0));
		conf_untrack(c, cr);
		REQUIRE(conf_wait(c, s.conn_evd, conf_tmo(c, CONF_TMO_MS),
				  &ev) == 0);
		REQUIRE_MSG(ev.type == RAPT_EV_ESTABLISHED,
			    "round %u: the active side %s right after its ESTABLISHED and the passive side got %s instead of ESTABLISHED",
			    r, r % 2 ? "freed its EP" : "disconnected",
			    rapt_event_name(ev.type));
		if (r % 2 == 0)
			REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, NULL);
		else
			TRY(conf_wait_down(c, &s, NULL));
		REQUIRE_OK(conf_free(c, s.ep));
	}
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static const struct conf_test rtr_tests[] = {
	{ "passive_send_first", "the passive side sends right after its ESTABLISHED and the data arrives (10 connections)",
	  first_active, first_passive },
	{ "passive_burst", "16 sends posted right after the passive ESTABLISHED all arrive in order",
	  burst_active, burst_passive },
	{ "active_order", "active side: ESTABLISHED before the first receive completion (one EVD, or across two)",
	  order_active, order_passive },
	{ "passive_order", "passive side: ESTABLISHED before the first receive completion (one EVD, or across two)",
	  porder_active, porder_passive },
	{ "flush_then_disconnected", "every FLUSHED receive, then DISCONNECTED, then nothing",
	  t_flush_graceful, flush_passive },
	{ "active_closes_at_once", "the active side disconnects or frees its EP right after ESTABLISHED: the passive side sees ESTABLISHED first",
	  closes_active, closes_passive },
	{ "flush_then_broken", "after an abrupt peer disconnect: flushes first, then DISCONNECTED or BROKEN",
	  t_flush_abrupt, flush_passive },
};

CONF_SUITE(conf_suite_rtr, "rtr", "RTR rule and event order", rtr_tests);
