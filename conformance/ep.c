/* SPDX-License-Identifier: MIT */
/*
 * Area "ep": the endpoint state machine.  Receives may be posted in every
 * state and those posted before connect catch the first messages; sends
 * before ESTABLISHED fail at once with RAPT_ESTATE; the state after each
 * call and event; modify and free rules; what a connected EP reports.
 */
#include "config.h"

#include <string.h>

#include "conf.h"

#define EXPECT_STATE(ep, want) EXPECT_EP_STATE(ep, want)

static void t_new(struct conf_ctx *c)
{
	const struct rapt_ia_attr *ia = &c->attr;
	struct rapt_ep_info info;
	struct rapt_evd *conn;
	struct rapt_ep *ep;

	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_CONNECTION, &conn));
	REQUIRE_OK(conf_ep_create(c, NULL, NULL, conn, NULL, &ep));
	EXPECT_STATE(ep, RAPT_EP_UNCONNECTED);
	EXPECT_RC(rapt_ep_get_state(ep, NULL), RAPT_EINVAL);
	EXPECT_RC(rapt_ep_query(ep, NULL, sizeof(info)), RAPT_EINVAL);
	REQUIRE_OK(rapt_ep_query(ep, &info, sizeof(info)));
	EXPECT_EQ(info.state, RAPT_EP_UNCONNECTED);
	/* Defaults are real numbers within the IA's limits. */
	EXPECT(info.attr.max_send >= 1 &&
	       info.attr.max_send <= ia->max_send_depth);
	EXPECT(info.attr.max_recv >= 1 &&
	       info.attr.max_recv <= ia->max_recv_depth);
	EXPECT(info.attr.max_send_sge >= 1 &&
	       info.attr.max_send_sge <= ia->max_send_sge);
	EXPECT(info.attr.max_recv_sge >= 1 &&
	       info.attr.max_recv_sge <= ia->max_recv_sge);
	EXPECT(info.attr.max_inline <= ia->max_inline);
	EXPECT(info.attr.rdma_read_in <= ia->max_rdma_read_in);
	EXPECT(info.attr.rdma_read_out <= ia->max_rdma_read_out);
	EXPECT_EQ(info.attr.flags, 0);
out:
	return;
}

/* Sends of every kind on an EP that is not connected fail at once and
 * queue nothing; receives are accepted. */
static void posts_refused(struct conf_ctx *c, struct conf_ep_set *s)
{
	struct rapt_sge sge = {
		.addr = (uintptr_t)s->buf, .length = 16, .lkey = s->mi.lkey,
	};

	EXPECT_RC(rapt_ep_post_send(s->ep, &sge, 1, 1, 0), RAPT_ESTATE);
	EXPECT_RC(rapt_ep_post_write(s->ep, &sge, 1, 2, s->mi.raddr,
				     s->mi.rkey, 0), RAPT_ESTATE);
	EXPECT_RC(rapt_ep_post_read(s->ep, &sge, 1, 3, s->mi.raddr,
				    s->mi.rkey, 0), RAPT_ESTATE);
	EXPECT_EMPTY(s->req_evd, 20);
}

static void t_post_unconnected(struct conf_ctx *c)
{
	struct conf_ep_set s;

	TRY(conf_set_create(c, &s, NULL));
	posts_refused(c, &s);
	TRY(conf_post_recvs(c, &s, 0, 4, 64));
	EXPECT_STATE(s.ep, RAPT_EP_UNCONNECTED);
	EXPECT_EMPTY(s.recv_evd, 0);
	EXPECT_EMPTY(s.conn_evd, 0);
out:
	return;
}

/* The passive side holds the CR until the active side has checked its
 * ACTIVE_PENDING EP, then accepts and sends into the early receives. */
static void pending_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	struct rapt_event ev;
	uint64_t sid;
	unsigned int i;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_post_recvs(c, &s, 0, 2, 256));
	TRY(conf_lookup(c, &addr, &sid));
	REQUIRE_OK(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid, NULL,
				   0, conf_tmo(c, 20000) * 1000LL));
	EXPECT_STATE(s.ep, RAPT_EP_ACTIVE_PENDING);
	EXPECT_RC(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid, NULL,
				  0, 1000000), RAPT_ESTATE);
	posts_refused(c, &s);
	/* Receives are fine in every state. */
	TRY(conf_post_recvs(c, &s, 2, 2, 256));
	EXPECT_EMPTY(s.conn_evd, 0);
	TRY(conf_barrier(c, "checked"));
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_ESTABLISHED, &ev);
	EXPECT_STATE(s.ep, RAPT_EP_CONNECTED);
	/* The 4 messages land in the 4 receives, in posting order. */
	for (i = 0; i < 4; i++) {
		REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, i, &ev);
		EXPECT_EQ(ev.u.dto.length, 100 + i);
		EXPECT(ev.u.dto.ep == s.ep);
		EXPECT_MSG(conf_verify(s.buf + i * 256, 100 + i, i) < 0,
			   "message %u arrived altered", i);
	}
out:
	return;
}

static void pending_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct conf_ep_set s;
	struct rapt_cr *cr;
	unsigned int i;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	TRY(conf_barrier(c, "checked"));
	TRY(conf_accept(c, cr, &s, NULL, 0));
	EXPECT_STATE(s.ep, RAPT_EP_CONNECTED);
	for (i = 0; i < 4; i++) {
		conf_fill(s.buf + i * 256, 100 + i, i);
		TRY(conf_send_msg(c, &s, i * 256, 100 + i, i));
	}
out:
	return;
}

static void lifecycle_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	struct rapt_event ev;
	enum rapt_ep_state st;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_post_recvs(c, &s, 0, 2, 64));
	TRY(conf_lookup(c, &addr, &sid));
	EXPECT_RC(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, NULL, 0),
		  RAPT_ESTATE);
	EXPECT_RC(rapt_ep_connect(s.ep, NULL, sid, NULL, 0, 1000000),
		  RAPT_EINVAL);
	EXPECT_RC(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid, NULL,
				  0, -7), RAPT_EINVAL);
	EXPECT_STATE(s.ep, RAPT_EP_UNCONNECTED);
	EXPECT_EMPTY(s.conn_evd, 0);
	TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
	EXPECT_STATE(s.ep, RAPT_EP_CONNECTED);
	EXPECT_RC(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid, NULL,
				  0, 1000000), RAPT_ESTATE);
	TRY(conf_barrier(c, "up"));
	REQUIRE_OK(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
	REQUIRE_OK(rapt_ep_get_state(s.ep, &st));
	EXPECT_MSG(st == RAPT_EP_DISCONNECT_PENDING ||
		   st == RAPT_EP_DISCONNECTED,
		   "after a graceful disconnect the EP is %s",
		   rapt_ep_state_name(st));
	/* The two receives flush before DISCONNECTED. */
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 0, NULL);
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 1, NULL);
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, &ev);
	EXPECT(ev.u.conn.ep == s.ep);
	EXPECT_STATE(s.ep, RAPT_EP_DISCONNECTED);
	/* Final: only receives (which flush) and free. */
	EXPECT_RC(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, NULL, 0),
		  RAPT_ESTATE);
	EXPECT_RC(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid, NULL,
				  0, 1000000), RAPT_ESTATE);
	posts_refused(c, &s);
	TRY(conf_post_recvs(c, &s, 5, 1, 64));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 5, NULL);
	EXPECT_EMPTY(s.conn_evd, 20);
	REQUIRE_OK(conf_free(c, s.ep));
	/* Freed: its EVDs are no longer busy. */
	EXPECT_OK(conf_free(c, s.conn_evd));
	EXPECT_OK(conf_free(c, s.recv_evd));
out:
	return;
}

static void lifecycle_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct conf_ep_set s;
	struct rapt_cr *cr;
	enum rapt_ep_state st;
	struct rapt_event ev;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_post_recvs(c, &s, 0, 1, 64));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	REQUIRE_OK(rapt_cr_accept(cr, s.ep, NULL, 0));
	conf_untrack(c, cr);
	REQUIRE_OK(rapt_ep_get_state(s.ep, &st));
	EXPECT_MSG(st == RAPT_EP_PASSIVE_PENDING || st == RAPT_EP_CONNECTED,
		   "after rapt_cr_accept the EP is %s", rapt_ep_state_name(st));
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_ESTABLISHED, &ev);
	EXPECT_STATE(s.ep, RAPT_EP_CONNECTED);
	TRY(conf_barrier(c, "up"));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 0, NULL);
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, &ev);
	EXPECT_STATE(s.ep, RAPT_EP_DISCONNECTED);
	EXPECT_EMPTY(s.conn_evd, 20);
out:
	return;
}

/* A CR accepted with an EP that is not UNCONNECTED stays undecided. */
static void accept_state_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	struct rapt_ep *ep2;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_set_ep(c, &s, NULL, &ep2));
	TRY(conf_lookup(c, &addr, &sid));
	TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
	TRY(conf_barrier(c, "first"));
	s.ep = ep2;
	TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
	TRY(conf_barrier(c, "second"));
out:
	return;
}

static void accept_state_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct conf_ep_set s;
	struct rapt_psp_info pi;
	struct rapt_ep *first, *fresh;
	struct rapt_cr *cr;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	TRY(conf_accept(c, cr, &s, NULL, 0));
	first = s.ep;
	TRY(conf_barrier(c, "first"));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	EXPECT_RC(rapt_cr_accept(cr, first, NULL, 0), RAPT_ESTATE);
	EXPECT_STATE(first, RAPT_EP_CONNECTED);
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, 1);
	TRY(conf_set_ep(c, &s, NULL, &fresh));
	s.ep = fresh;
	TRY(conf_accept(c, cr, &s, NULL, 0));
	TRY(conf_barrier(c, "second"));
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, 0);
	EXPECT_EQ(pi.accepted, 2);
out:
	return;
}

static void t_modify_unconnected(struct conf_ctx *c)
{
	struct rapt_ep_attr a;
	struct rapt_ep_info info;
	struct rapt_evd *conn;
	struct rapt_ep *ep;
	int rc;

	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_CONNECTION, &conn));
	REQUIRE_OK(conf_ep_create(c, NULL, NULL, conn, NULL, &ep));
	REQUIRE_OK(rapt_ep_query(ep, &info, sizeof(info)));
	a = info.attr;
	EXPECT_RC(rapt_ep_modify(ep, NULL, RAPT_EP_ATTR_MAX_RECV),
		  RAPT_EINVAL);
	EXPECT_RC(rapt_ep_modify(ep, &a, 0), RAPT_EINVAL);
	EXPECT_RC(rapt_ep_modify(ep, &a, 1u << 20), RAPT_EINVAL);
	a.max_recv = c->attr.max_recv_depth + 1;
	EXPECT_RC(rapt_ep_modify(ep, &a, RAPT_EP_ATTR_MAX_RECV), RAPT_ERANGE);
	a.max_recv = info.attr.max_recv > 1 ? info.attr.max_recv - 1 : 1;
	rc = rapt_ep_modify(ep, &a, RAPT_EP_ATTR_MAX_RECV);
	EXPECT_MSG(rc == 0 || rc == RAPT_ENOTSUP,
		   "rapt_ep_modify(max_recv) on an unconnected EP returned %s",
		   rapt_err_name(rc));
	REQUIRE_OK(rapt_ep_query(ep, &info, sizeof(info)));
	if (!rc)
		EXPECT_EQ(info.attr.max_recv, a.max_recv);
	else
		EXPECT_MSG(info.attr.max_recv != a.max_recv,
			   "a refused modify changed the EP");
	EXPECT_STATE(ep, RAPT_EP_UNCONNECTED);
out:
	return;
}

/* After ESTABLISHED the consumer may lower its read depths, but not raise
 * them or change flags. */
static void modify_active(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_ep_info info;
	struct rapt_ep_attr a;

	TRY(conf_pair_active(c, &s, NULL, 0, 0));
	REQUIRE_OK(rapt_ep_query(s.ep, &info, sizeof(info)));
	a = info.attr;
	a.flags = info.attr.flags ^ RAPT_EP_RAW_PDATA;
	EXPECT_RC(rapt_ep_modify(s.ep, &a, RAPT_EP_ATTR_FLAGS), RAPT_ESTATE);
	a = info.attr;
	a.rdma_read_out = info.rdma_read_out + 1;
	EXPECT_RC(rapt_ep_modify(s.ep, &a, RAPT_EP_ATTR_RDMA_READ_OUT),
		  RAPT_ERANGE);
	if (info.rdma_read_out >= 2) {
		a.rdma_read_out = info.rdma_read_out - 1;
		EXPECT_OK(rapt_ep_modify(s.ep, &a,
					 RAPT_EP_ATTR_RDMA_READ_OUT));
		REQUIRE_OK(rapt_ep_query(s.ep, &info, sizeof(info)));
		EXPECT_EQ(info.rdma_read_out, a.rdma_read_out);
	}
	EXPECT_STATE(s.ep, RAPT_EP_CONNECTED);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void modify_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;

	TRY(conf_pair_passive(c, &s, NULL, 0, 0));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* Read depths and addresses agree on both sides. */
static void query_check(struct conf_ctx *c, struct conf_ep_set *s,
			const struct rapt_event *est)
{
	struct sockaddr_storage peer_local, peer_remote;
	struct rapt_ep_info info;
	uint64_t peer_in, peer_out, peer_attr_in, peer_attr_out;
	char a1[64], a2[64];

	REQUIRE_OK(rapt_ep_query(s->ep, &info, sizeof(info)));
	EXPECT_EQ(info.state, RAPT_EP_CONNECTED);
	EXPECT_EQ(info.rdma_read_in, est->u.conn.rdma_read_in);
	EXPECT_EQ(info.rdma_read_out, est->u.conn.rdma_read_out);
	EXPECT(info.rdma_read_in <= info.attr.rdma_read_in);
	EXPECT(info.rdma_read_out <= info.attr.rdma_read_out);
	TRY(conf_send_u64(c, "in", info.rdma_read_in));
	TRY(conf_send_u64(c, "out", info.rdma_read_out));
	TRY(conf_send_u64(c, "attr-in", info.attr.rdma_read_in));
	TRY(conf_send_u64(c, "attr-out", info.attr.rdma_read_out));
	TRY(conf_send_addr(c, "local", &info.local_addr));
	TRY(conf_send_addr(c, "remote", &info.remote_addr));
	TRY(conf_recv_u64(c, "in", &peer_in));
	TRY(conf_recv_u64(c, "out", &peer_out));
	TRY(conf_recv_u64(c, "attr-in", &peer_attr_in));
	TRY(conf_recv_u64(c, "attr-out", &peer_attr_out));
	TRY(conf_recv_addr(c, "local", &peer_local));
	TRY(conf_recv_addr(c, "remote", &peer_remote));
	/* My ORD is the peer's IRD: both sides report the same pair. */
	EXPECT_MSG(info.rdma_read_out == peer_in &&
		   info.rdma_read_in == peer_out,
		   "negotiated read depths disagree: here IRD %u ORD %u, peer IRD %llu ORD %llu",
		   info.rdma_read_in, info.rdma_read_out,
		   (unsigned long long)peer_in, (unsigned long long)peer_out);
	EXPECT(info.rdma_read_out <= peer_attr_in);
	EXPECT(info.rdma_read_in <= peer_attr_out);
	if (c->attr.caps & RAPT_CAP_RDMA_READ)
		EXPECT_MSG(info.rdma_read_out >= 1 && info.rdma_read_in >= 1,
			   "RDMA read advertised but negotiated IRD %u ORD %u",
			   info.rdma_read_in, info.rdma_read_out);
	EXPECT_MSG(conf_addr_same_host(&info.remote_addr, &peer_local),
		   "remote_addr %s is not the peer's local_addr %s",
		   conf_addr_str(&info.remote_addr, a1, sizeof(a1)),
		   conf_addr_str(&peer_local, a2, sizeof(a2)));
	EXPECT_MSG(conf_addr_same_host(&info.local_addr, &peer_remote),
		   "local_addr %s is not the peer's remote_addr %s",
		   conf_addr_str(&info.local_addr, a1, sizeof(a1)),
		   conf_addr_str(&peer_remote, a2, sizeof(a2)));
out:
	return;
}

static void query_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct rapt_event est;
	struct conf_ep_set s;
	uint64_t sid;
	char a1[64], a2[64];

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	TRY(conf_connect(c, &s, &addr, sid, NULL, 0, &est));
	query_check(c, &s, &est);
	if (!conf_opt.server_addr) {
		struct rapt_ep_info info;

		REQUIRE_OK(rapt_ep_query(s.ep, &info, sizeof(info)));
		EXPECT_MSG(conf_addr_same_host(&info.remote_addr, &addr),
			   "connected to %s, remote_addr says %s",
			   conf_addr_str(&addr, a1, sizeof(a1)),
			   conf_addr_str(&info.remote_addr, a2, sizeof(a2)));
	}
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void query_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct rapt_cr_info ci;
	struct rapt_ep_info info;
	struct conf_ep_set s;
	struct rapt_event est;
	struct rapt_cr *cr;
	char a1[64], a2[64];

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, &ci));
	REQUIRE_OK(rapt_cr_accept(cr, s.ep, NULL, 0));
	conf_untrack(c, cr);
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_ESTABLISHED, &est);
	query_check(c, &s, &est);
	REQUIRE_OK(rapt_ep_query(s.ep, &info, sizeof(info)));
	EXPECT_MSG(conf_addr_same_host(&info.remote_addr, &ci.remote_addr),
		   "the CR came from %s, remote_addr says %s",
		   conf_addr_str(&ci.remote_addr, a1, sizeof(a1)),
		   conf_addr_str(&info.remote_addr, a2, sizeof(a2)));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* Freeing a connected EP: no event for it afterwards, the peer sees the
 * connection end, and its EVDs are free to go. */
static void free_active(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;

	TRY(conf_pair_active(c, &s, NULL, 4, 64));
	TRY(conf_barrier(c, "up"));
	REQUIRE_OK(conf_free(c, s.ep));
	EXPECT_RC(rapt_ep_get_state(s.ep, NULL), RAPT_EBADHANDLE);
	/* Whatever was queued before the free names a stale EP; nothing
	 * may come after. */
	while (rapt_evd_dequeue(s.conn_evd, &ev) == 0)
		;
	while (rapt_evd_dequeue(s.recv_evd, &ev) == 0)
		;
	EXPECT_EMPTY(s.conn_evd, 200);
	EXPECT_EMPTY(s.recv_evd, 0);
	EXPECT_OK(conf_free(c, s.conn_evd));
	EXPECT_OK(conf_free(c, s.recv_evd));
	EXPECT_OK(conf_free(c, s.req_evd));
	TRY(conf_barrier(c, "freed"));
out:
	return;
}

static void free_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;

	TRY(conf_pair_passive(c, &s, NULL, 2, 64));
	TRY(conf_barrier(c, "up"));
	TRY(conf_wait_down(c, &s, NULL));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 0, NULL);
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 1, NULL);
	EXPECT_STATE(s.ep, RAPT_EP_DISCONNECTED);
	TRY(conf_barrier(c, "freed"));
out:
	return;
}

/* An active EP freed while its request waits at the passive side: the
 * CR then cannot be accepted, or the accepting EP fails. */
static void free_pending_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	REQUIRE_OK(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid, NULL,
				   0, conf_tmo(c, 20000) * 1000LL));
	TRY(conf_barrier(c, "cr-seen"));
	REQUIRE_OK(conf_free(c, s.ep));
	TRY(conf_barrier(c, "freed"));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void free_pending_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct conf_ep_set s;
	struct rapt_psp_info pi;
	struct rapt_event ev;
	struct rapt_cr *cr;
	int rc, i;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	TRY(conf_barrier(c, "cr-seen"));
	TRY(conf_barrier(c, "freed"));
	/* Give the transport a moment to carry the requester's departure. */
	for (i = 0; i < 50; i++) {
		REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
		if (!pi.pending_crs)
			break;
		conf_sleep_ms(10);
	}
	rc = rapt_cr_accept(cr, s.ep, NULL, 0);
	EXPECT_MSG(rc == 0 || rc == RAPT_ENOTCONN,
		   "accepting the CR of a vanished requester returned %s",
		   rapt_err_name(rc));
	conf_untrack(c, cr);
	if (rc == 0) {
		/* Accepted in the window: the EP must not stay up. */
		rc = conf_wait(c, s.conn_evd, conf_tmo(c, CONF_TMO_MS), &ev);
		REQUIRE_MSG(rc == 0, "no event on the accepting EP");
		if (ev.type == RAPT_EV_ESTABLISHED)
			TRY(conf_wait_down(c, &s, &ev));
		else
			EXPECT_MSG(ev.type == RAPT_EV_ACCEPT_ERROR ||
				   ev.type == RAPT_EV_DISCONNECTED ||
				   ev.type == RAPT_EV_BROKEN,
				   "accepting EP of a vanished requester got %s",
				   rapt_event_name(ev.type));
	}
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, 0);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* The peer timeout: 30 s by default, per IA for new EPs, per EP. */
static void t_peer_timeout(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_ep *ep2;
	uint32_t ms = 0;
	int rc;

	REQUIRE_OK(rapt_ia_get_peer_timeout(c->ia, &ms));
	EXPECT_EQ(ms, RAPT_PEER_TIMEOUT_DEFAULT_MS);
	EXPECT_RC(rapt_ia_set_peer_timeout(c->ia, RAPT_PEER_TIMEOUT_MIN_MS - 1),
		  RAPT_ERANGE);
	EXPECT_RC(rapt_ia_set_peer_timeout(c->ia, RAPT_PEER_TIMEOUT_MAX_MS + 1),
		  RAPT_ERANGE);
	EXPECT_RC(rapt_ia_get_peer_timeout(c->ia, NULL), RAPT_EINVAL);
	TRY(conf_set_create(c, &s, NULL));
	rc = rapt_ep_get_peer_timeout(s.ep, &ms);
	if (rc == RAPT_ENOTSUP) {
		EXPECT_RC(rapt_ep_set_peer_timeout(s.ep, 5000), RAPT_ENOTSUP);
		conf_skip(c, "the provider has no peer timeout (RAPT_ENOTSUP)");
		goto out;
	}
	REQUIRE_OK(rc);
	EXPECT_EQ(ms, RAPT_PEER_TIMEOUT_DEFAULT_MS);
	EXPECT_RC(rapt_ep_set_peer_timeout(s.ep, 999), RAPT_ERANGE);
	REQUIRE_OK(rapt_ep_set_peer_timeout(s.ep, 4000));
	REQUIRE_OK(rapt_ep_get_peer_timeout(s.ep, &ms));
	EXPECT_EQ(ms, 4000);
	/* The IA's value is for EPs created afterwards. */
	REQUIRE_OK(rapt_ia_set_peer_timeout(c->ia, 7000));
	REQUIRE_OK(rapt_ep_get_peer_timeout(s.ep, &ms));
	EXPECT_EQ(ms, 4000);
	TRY(conf_set_ep(c, &s, NULL, &ep2));
	REQUIRE_OK(rapt_ep_get_peer_timeout(ep2, &ms));
	EXPECT_EQ(ms, 7000);
out:
	return;
}

static const struct conf_test ep_tests[] = {
	{ "new", "a new EP is UNCONNECTED with default attributes within the IA's limits",
	  t_new, NULL },
	{ "peer_timeout", "the peer timeout is 30 s by default, set per IA for new EPs and per EP, and range-checked",
	  t_peer_timeout, NULL },
	{ "post_unconnected", "send/write/read on an unconnected EP fail with RAPT_ESTATE; receives work",
	  t_post_unconnected, NULL },
	{ "post_pending", "ACTIVE_PENDING refuses sends; receives posted before and during connect catch the first messages",
	  pending_active, pending_passive },
	{ "lifecycle", "the state after connect, ESTABLISHED, disconnect and DISCONNECTED on both sides",
	  lifecycle_active, lifecycle_passive },
	{ "accept_state", "accepting with a connected EP fails with RAPT_ESTATE and the CR stays usable",
	  accept_state_active, accept_state_passive },
	{ "modify_unconnected", "rapt_ep_modify checks mask, attr and limits",
	  t_modify_unconnected, NULL },
	{ "modify_connected", "once connected, read depths only go down and flags do not change",
	  modify_active, modify_passive },
	{ "query_connected", "negotiated read depths and addresses agree on both sides",
	  query_active, query_passive },
	{ "free_connected", "freeing a connected EP queues nothing after; the peer sees the end",
	  free_active, free_passive },
	{ "free_pending", "freeing an EP whose CR is undecided cancels the CR",
	  free_pending_active, free_pending_passive },
};

CONF_SUITE(conf_suite_ep, "ep", "EP state machine", ep_tests);
