/* SPDX-License-Identifier: MIT */
/*
 * Area "ep_reuse" (API 1.3): rapt_ep_reset() turns a disconnected EP back
 * into an UNCONNECTED one that carries a new connection exactly like a new
 * EP (both roles reuse theirs, and a message each way proves the data path
 * started afresh); rapt_ep_get_status() counts the receives and requests
 * still outstanding.  A provider without RAPT_CAP_EP_RESET or
 * RAPT_CAP_EP_STATUS must refuse the call with RAPT_ENOTSUP: skipped.
 */
#include "config.h"

#include <string.h>

#include "conf.h"

#define MSG_OFF 1024	/* where each role builds the message it sends */

/* Receive cookie 0 and check its bytes: round @r's message. */
static int recv_round(struct conf_ctx *c, struct conf_ep_set *s, unsigned r)
{
	struct rapt_event ev;

	TRY(EXPECT_DTO(s->recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0, &ev));
	EXPECT_EQU(ev.u.dto.length, 40 + r);
	EXPECT_MSG(conf_verify(s->buf, 40 + r, r) < 0,
		   "round %u: the message arrived altered", r);
	return 0;
out:
	return -1;
}

static int send_round(struct conf_ctx *c, struct conf_ep_set *s, unsigned r)
{
	conf_fill(s->buf + MSG_OFF, 40 + r, r);
	return conf_send_msg(c, s, MSG_OFF, 40 + r, 100 + r);
}

/* The end of round @r: receive 1 flushed, DISCONNECTED, then a reset
 * that forgets the connection and keeps the attributes. */
static int reset_round(struct conf_ctx *c, struct conf_ep_set *s)
{
	struct rapt_ep_info before, after;
	struct rapt_event ev;

	TRY(EXPECT_DTO(s->recv_evd, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 1, NULL));
	TRY(EXPECT_EVENT(s->conn_evd, RAPT_EV_DISCONNECTED, &ev));
	EXPECT_EP_STATE(s->ep, RAPT_EP_DISCONNECTED);
	REQUIRE_OK(rapt_ep_query(s->ep, &before, sizeof(before)));
	REQUIRE_OK(rapt_ep_reset(s->ep));
	EXPECT_EP_STATE(s->ep, RAPT_EP_UNCONNECTED);
	REQUIRE_OK(rapt_ep_query(s->ep, &after, sizeof(after)));
	EXPECT(memcmp(&before.attr, &after.attr, sizeof(after.attr)) == 0);
	EXPECT_EQU(after.rdma_read_in, 0);
	EXPECT_EQU(after.rdma_read_out, 0);
	EXPECT_EQU(after.flags, 0);
	EXPECT_EQ(after.remote_addr.ss_family, AF_UNSPEC);
	EXPECT_EMPTY(s->conn_evd, 0);
	return 0;
out:
	return -1;
}

/* Receives posted after a reset wait for the next connection. */
static int round_recvs(struct conf_ctx *c, struct conf_ep_set *s)
{
	TRY(conf_post_recvs(c, s, 0, 2, 64));
	return EXPECT_EMPTY(s->recv_evd, 0) ? 0 : -1;
out:
	return -1;
}

static void reset_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	unsigned int r;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	SKIP_UNLESS_CAP(RAPT_CAP_EP_RESET, rapt_ep_reset(s.ep));
	EXPECT_OK(rapt_ep_reset(s.ep));	/* UNCONNECTED: nothing to do */
	EXPECT_EP_STATE(s.ep, RAPT_EP_UNCONNECTED);
	TRY(conf_lookup(c, &addr, &sid));
	for (r = 0; r < 3; r++) {
		TRY(round_recvs(c, &s));
		TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
		EXPECT_RC(rapt_ep_reset(s.ep), RAPT_ESTATE);
		TRY(send_round(c, &s, r));
		TRY(recv_round(c, &s, r));
		TRY(conf_barrier(c, "exchanged"));
		REQUIRE_OK(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, NULL,
					      0));
		TRY(reset_round(c, &s));
		TRY(conf_barrier(c, "reset"));
	}
out:
	return;
}

/* The passive role reuses its EP for rounds 0 and 1; round 2 takes a new
 * one, so that the active EP's third connection meets a peer that starts
 * from scratch (message sequence numbers, read queues): an EP that kept
 * anything of its old connections fails there. */
static void reset_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct conf_ep_set s;
	struct rapt_cr *cr;
	unsigned int r;

	TRY(conf_set_create(c, &s, NULL));
	SKIP_UNLESS_CAP(RAPT_CAP_EP_RESET, rapt_ep_reset(s.ep));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	for (r = 0; r < 3; r++) {
		if (r == 2)
			TRY(conf_set_create(c, &s, NULL));
		TRY(round_recvs(c, &s));
		TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
		TRY(conf_accept(c, cr, &s, NULL, 0));
		TRY(recv_round(c, &s, r));
		TRY(send_round(c, &s, r));
		TRY(conf_barrier(c, "exchanged"));
		TRY(reset_round(c, &s));
		TRY(conf_barrier(c, "reset"));
	}
out:
	return;
}

/* Connect @a to a PSP of this IA; return the CR on @l, undecided. */
static int self_connect(struct conf_ctx *c, struct conf_ep_set *a,
			struct conf_listener *l, struct rapt_cr **cr)
{
	TRY(conf_self_connect(c, a->ep, l->sid));
	TRY(conf_get_cr(c, l, conf_tmo(c, CONF_TMO_MS), cr, NULL));
	return 0;
out:
	return -1;
}

/* Which states a reset accepts; an EP reset after a reject connects. */
static void t_reset_states(struct conf_ctx *c)
{
	struct conf_ep_set a, p;
	struct conf_listener l;
	struct rapt_event ev;
	struct rapt_cr *cr;

	TRY(conf_set_create(c, &a, NULL));
	SKIP_UNLESS_CAP(RAPT_CAP_EP_RESET, rapt_ep_reset(a.ep));
	EXPECT_RC(rapt_ep_reset(NULL), RAPT_EBADHANDLE);
	EXPECT_RC(rapt_ep_reset((struct rapt_ep *)c->pz), RAPT_EHANDLETYPE);
	TRY(conf_set_create(c, &p, NULL));
	TRY(conf_listen(c, &l, NULL));
	TRY(self_connect(c, &a, &l, &cr));
	EXPECT_RC(rapt_ep_reset(a.ep), RAPT_ESTATE);	/* ACTIVE_PENDING */
	EXPECT_EP_STATE(a.ep, RAPT_EP_ACTIVE_PENDING);
	REQUIRE_OK(rapt_cr_reject(cr, NULL, 0));
	conf_untrack(c, cr);
	TRY(EXPECT_EVENT(a.conn_evd, RAPT_EV_PEER_REJECTED, &ev));
	EXPECT_EP_STATE(a.ep, RAPT_EP_DISCONNECTED);
	REQUIRE_OK(rapt_ep_reset(a.ep));
	EXPECT_EP_STATE(a.ep, RAPT_EP_UNCONNECTED);
	/* The same EP connects again; the passive EP too, after an abrupt
	 * end, in PASSIVE_PENDING and CONNECTED refusing a reset. */
	TRY(self_connect(c, &a, &l, &cr));
	REQUIRE_OK(rapt_cr_accept(cr, p.ep, NULL, 0));
	conf_untrack(c, cr);
	TRY(EXPECT_EVENT(a.conn_evd, RAPT_EV_ESTABLISHED, &ev));
	TRY(EXPECT_EVENT(p.conn_evd, RAPT_EV_ESTABLISHED, &ev));
	TRY(conf_post_recvs(c, &a, 0, 1, 64));
	TRY(conf_post_recvs(c, &p, 0, 1, 64));
	TRY(send_round(c, &a, 5));
	TRY(recv_round(c, &p, 5));
	TRY(send_round(c, &p, 6));
	TRY(recv_round(c, &a, 6));
	EXPECT_RC(rapt_ep_reset(a.ep), RAPT_ESTATE);
	EXPECT_RC(rapt_ep_reset(p.ep), RAPT_ESTATE);
	EXPECT_EP_STATE(p.ep, RAPT_EP_CONNECTED);
	REQUIRE_OK(rapt_ep_disconnect(p.ep, RAPT_CLOSE_ABRUPT, NULL, 0));
	TRY(EXPECT_EVENT(p.conn_evd, RAPT_EV_DISCONNECTED, &ev));
	TRY(conf_wait_down(c, &a, &ev));
	REQUIRE_OK(rapt_ep_reset(p.ep));
	REQUIRE_OK(rapt_ep_reset(a.ep));
	/* The reset passive EP, which received and sent before, talks to a
	 * new active EP: it must start from scratch. */
	TRY(conf_set_create(c, &a, NULL));
	TRY(conf_post_recvs(c, &a, 0, 1, 64));
	TRY(conf_post_recvs(c, &p, 0, 1, 64));
	TRY(self_connect(c, &a, &l, &cr));
	TRY(conf_accept(c, cr, &p, NULL, 0));
	TRY(EXPECT_EVENT(a.conn_evd, RAPT_EV_ESTABLISHED, &ev));
	TRY(send_round(c, &a, 7));
	TRY(recv_round(c, &p, 7));
	TRY(send_round(c, &p, 8));
	TRY(recv_round(c, &a, 8));
out:
	return;
}

static int status_is(struct conf_ctx *c, struct rapt_ep *ep, uint32_t state,
		     uint32_t recv, uint32_t req, const char *file, int line)
{
	struct rapt_ep_status st;
	uint32_t flags = (recv ? 0 : RAPT_EPS_RECV_IDLE) |
			 (req ? 0 : RAPT_EPS_REQUEST_IDLE);
	int rc;

	memset(&st, 0xa5, sizeof(st));
	rc = rapt_ep_get_status(ep, &st, sizeof(st));
	return conf_check(c, rc == 0 && st.state == state &&
			  st.recv_posted == recv &&
			  st.request_outstanding == req && st.flags == flags,
			  file, line,
			  "status rc %s: %s, %u receives, %u requests, flags %#x; expected %s, %u, %u, %#x",
			  rapt_err_name(rc), rapt_ep_state_name(st.state),
			  st.recv_posted, st.request_outstanding, st.flags,
			  rapt_ep_state_name(state), recv, req, flags) ? 0 : -1;
}

#define STATUS_IS(ep, state, recv, req)					\
	status_is(c, (ep), (state), (recv), (req), __FILE__, __LINE__)

/* Receives count until they complete, requests until their completion. */
static void t_status(struct conf_ctx *c)
{
	struct rapt_ep_status st;
	struct conf_ep_set a, p;
	struct conf_listener l;
	struct rapt_event ev;
	struct rapt_cr *cr;

	TRY(conf_set_create(c, &p, NULL));
	SKIP_UNLESS_CAP(RAPT_CAP_EP_STATUS,
			rapt_ep_get_status(p.ep, &st, sizeof(st)));
	EXPECT_RC(rapt_ep_get_status(p.ep, NULL, sizeof(st)), RAPT_EINVAL);
	EXPECT_RC(rapt_ep_get_status(p.ep, &st, 0), RAPT_EINVAL);
	EXPECT_RC(rapt_ep_get_status(NULL, &st, sizeof(st)), RAPT_EBADHANDLE);
	EXPECT_RC(rapt_ep_get_status((struct rapt_ep *)c->pz, &st,
				     sizeof(st)), RAPT_EHANDLETYPE);
	TRY(STATUS_IS(p.ep, RAPT_EP_UNCONNECTED, 0, 0));
	TRY(conf_post_recvs(c, &p, 0, 3, 64));
	TRY(STATUS_IS(p.ep, RAPT_EP_UNCONNECTED, 3, 0));
	TRY(conf_set_create(c, &a, NULL));
	TRY(conf_listen(c, &l, NULL));
	TRY(self_connect(c, &a, &l, &cr));
	TRY(conf_accept(c, cr, &p, NULL, 0));
	TRY(EXPECT_EVENT(a.conn_evd, RAPT_EV_ESTABLISHED, &ev));
	TRY(send_round(c, &a, 1));	/* returns with its completion */
	TRY(STATUS_IS(a.ep, RAPT_EP_CONNECTED, 0, 0));
	TRY(recv_round(c, &p, 1));
	TRY(STATUS_IS(p.ep, RAPT_EP_CONNECTED, 2, 0));
	/* A disconnect flushes the rest: nothing is outstanding after. */
	REQUIRE_OK(rapt_ep_disconnect(p.ep, RAPT_CLOSE_ABRUPT, NULL, 0));
	TRY(EXPECT_DTO(p.recv_evd, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 1, NULL));
	TRY(EXPECT_DTO(p.recv_evd, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 2, NULL));
	TRY(EXPECT_EVENT(p.conn_evd, RAPT_EV_DISCONNECTED, &ev));
	TRY(STATUS_IS(p.ep, RAPT_EP_DISCONNECTED, 0, 0));
out:
	return;
}

static const struct conf_test ep_reuse_tests[] = {
	{ "reset", "both roles reset their EPs after each of three connections and carry the next one on them, a message each way",
	  reset_active, reset_passive },
	{ "reset_states", "a reset works in UNCONNECTED and DISCONNECTED (also after a reject), fails with RAPT_ESTATE while pending or connected",
	  t_reset_states, NULL },
	{ "status", "rapt_ep_get_status counts receives and requests until they complete and checks its arguments",
	  t_status, NULL },
};

CONF_SUITE(conf_suite_ep_reuse, "ep_reuse", "EP reset and status (API 1.3)",
	   ep_reuse_tests);
