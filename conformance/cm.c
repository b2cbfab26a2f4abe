/* SPDX-License-Identifier: MIT */
/*
 * Area "cm": connection management.  Each connect ends in exactly one of
 * ESTABLISHED, PEER_REJECTED, NON_PEER_REJECTED (NO_LISTENER, BUSY),
 * UNREACHABLE or TIMED_OUT; CRs are decided after they arrive, with EPs
 * made before or after, in any order; PSPs and their service ids.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "conf.h"

static const char cr_pdata[] = "conformance connect";
static const char acc_pdata[] = "conformance accept";
static const char rej_pdata[] = "conformance: no thanks";

static bool pdata_is(struct conf_ctx *c, const void *p, size_t len,
		     const char *want, const char *file, int line)
{
	size_t wl = strlen(want);

	return conf_check(c, len == wl && (!wl || (p && !memcmp(p, want, wl))),
			  file, line,
			  "private data is %zu bytes \"%.*s\", expected %zu bytes \"%s\"",
			  len, p ? (int)len : 0, p ? (const char *)p : "",
			  wl, want);
}

#define EXPECT_PDATA(p, len, want)					\
	pdata_is(c, (p), (len), (want), __FILE__, __LINE__)

static void basic_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	struct rapt_event ev;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_post_recvs(c, &s, 0, 1, 64));
	TRY(conf_lookup(c, &addr, &sid));
	TRY(conf_connect(c, &s, &addr, sid, cr_pdata, strlen(cr_pdata), &ev));
	EXPECT_PDATA(ev.u.conn.pdata, ev.u.conn.pdata_len, acc_pdata);
	EXPECT_MSG(!(ev.u.conn.flags & RAPT_CONN_FOREIGN_PEER),
		   "a rapt peer was reported foreign");
	/* The connection carries data both ways. */
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0, &ev);
	EXPECT_EQ(ev.u.dto.length, 32);
	EXPECT(conf_verify(s.buf, 32, 77) < 0);
	conf_fill(s.buf + 64, 48, 78);
	TRY(conf_send_msg(c, &s, 64, 48, 9));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void basic_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct rapt_cr_info ci;
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_cr *cr;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_post_recvs(c, &s, 0, 1, 64));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, &ci));
	EXPECT(ci.psp == l.psp);
	EXPECT_EQU(ci.service_id, l.sid);
	EXPECT_EQ(ci.flags, 0);
	EXPECT_PDATA(ci.pdata, ci.pdata_len, cr_pdata);
	EXPECT(ci.remote_addr.ss_family == AF_INET ||
	       ci.remote_addr.ss_family == AF_INET6);
	TRY(conf_accept(c, cr, &s, acc_pdata, strlen(acc_pdata)));
	conf_fill(s.buf + 64, 32, 77);
	TRY(conf_send_msg(c, &s, 64, 32, 1));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0, &ev);
	EXPECT_EQ(ev.u.dto.length, 48);
	EXPECT(conf_verify(s.buf, 48, 78) < 0);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void reject_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_ep *ep2;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_set_ep(c, &s, NULL, &ep2));
	TRY(conf_lookup(c, &addr, &sid));
	REQUIRE_OK(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid, NULL,
				   0, conf_tmo(c, 20000) * 1000LL));
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_PEER_REJECTED, &ev);
	EXPECT(ev.u.conn.ep == s.ep);
	EXPECT_PDATA(ev.u.conn.pdata, ev.u.conn.pdata_len, rej_pdata);
	EXPECT_EQ(ev.u.conn.reason, 0);
	{
		enum rapt_ep_state st;

		EXPECT_OK(rapt_ep_get_state(s.ep, &st));
		EXPECT_EQ(st, RAPT_EP_DISCONNECTED);
	}
	/* A reject without private data. */
	REQUIRE_OK(rapt_ep_connect(ep2, (struct sockaddr *)&addr, sid, NULL, 0,
				   conf_tmo(c, 20000) * 1000LL));
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_PEER_REJECTED, &ev);
	EXPECT(ev.u.conn.ep == ep2);
	EXPECT_EQ(ev.u.conn.pdata_len, 0);
	EXPECT(ev.u.conn.pdata == NULL);
	EXPECT_EMPTY(s.conn_evd, 50);
out:
	return;
}

static void reject_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct rapt_psp_info pi;
	struct rapt_cr_info ci;
	struct rapt_cr *cr;

	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, 1);
	REQUIRE_OK(rapt_cr_reject(cr, rej_pdata, strlen(rej_pdata)));
	conf_untrack(c, cr);
	/* A decided CR is gone. */
	EXPECT_RC(rapt_cr_query(cr, &ci, sizeof(ci)), RAPT_EBADHANDLE);
	EXPECT_RC(rapt_cr_reject(cr, NULL, 0), RAPT_EBADHANDLE);
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	REQUIRE_OK(rapt_cr_reject(cr, NULL, 0));
	conf_untrack(c, cr);
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, 0);
	EXPECT_EQ(pi.rejected, 2);
	EXPECT_EQ(pi.accepted, 0);
	EXPECT_EQ(pi.busy_rejects, 0);
out:
	return;
}

/* Connect, and expect NON_PEER_REJECTED with @reason. */
static void expect_npr(struct conf_ctx *c, struct conf_ep_set *s,
		       struct rapt_ep *ep, const struct sockaddr_storage *addr,
		       uint64_t sid, uint32_t reason)
{
	struct rapt_event ev;
	enum rapt_ep_state st;

	REQUIRE_OK(rapt_ep_connect(ep, (const struct sockaddr *)addr, sid,
				   cr_pdata, strlen(cr_pdata),
				   conf_tmo(c, 20000) * 1000LL));
	REQUIRE_EVENT(s->conn_evd, RAPT_EV_NON_PEER_REJECTED, &ev);
	EXPECT(ev.u.conn.ep == ep);
	EXPECT_MSG(ev.u.conn.reason == reason,
		   "NON_PEER_REJECTED with reason %s, expected %s",
		   conf_reason_name(ev.u.conn.reason),
		   conf_reason_name(reason));
	EXPECT_MSG(ev.u.conn.pdata_len == 0,
		   "a refusal by the provider carries %u bytes of consumer private data",
		   ev.u.conn.pdata_len);
	EXPECT_OK(rapt_ep_get_state(ep, &st));
	EXPECT_EQ(st, RAPT_EP_DISCONNECTED);
out:
	return;
}

static void nolistener_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	expect_npr(c, &s, s.ep, &addr, sid, RAPT_REJECT_NO_LISTENER);
out:
	return;
}

/* Publish a service id nobody listens on any more. */
static void nolistener_passive(struct conf_ctx *c)
{
	struct conf_listener l;

	TRY(conf_listen(c, &l, NULL));
	REQUIRE_OK(conf_free(c, l.psp));
	TRY(conf_publish(c, &l));
out:
	return;
}

static void busy_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	struct rapt_ep *ep2;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_set_ep(c, &s, NULL, &ep2));
	TRY(conf_lookup(c, &addr, &sid));
	REQUIRE_OK(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid, NULL,
				   0, conf_tmo(c, 20000) * 1000LL));
	TRY(conf_barrier(c, "first-cr"));
	expect_npr(c, &s, ep2, &addr, sid, RAPT_REJECT_BUSY);
	TRY(conf_barrier(c, "busy-seen"));
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_ESTABLISHED, NULL);
out:
	return;
}

static void busy_passive(struct conf_ctx *c)
{
	struct rapt_psp_attr pa = { .backlog = 1 };
	struct conf_listener l;
	struct rapt_psp_info pi;
	struct conf_ep_set s;
	struct rapt_cr *cr;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, &pa));
	TRY(conf_publish(c, &l));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	TRY(conf_barrier(c, "first-cr"));
	TRY(conf_barrier(c, "busy-seen"));
	/* The refused request never became a CR. */
	EXPECT_EMPTY(l.cr_evd, 0);
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.busy_rejects, 1);
	EXPECT_EQ(pi.pending_crs, 1);
	EXPECT_EQ(pi.rejected, 0);
	TRY(conf_accept(c, cr, &s, NULL, 0));
out:
	return;
}

/* Connect to @addr_s and expect @type within the connect timeout. */
static void fault_connect(struct conf_ctx *c, const char *opt,
			  const char *addr_s, uint32_t type, int tmo_ms)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	struct rapt_event ev;
	enum rapt_ep_state st;
	int64_t t0, dt;
	int rc;

	if (!addr_s || !strcmp(addr_s, "none")) {
		conf_skip(c, "no %s given (the suite sends nothing outside the machine unless told where; run-check.sh's two-host run builds one)",
			  opt);
		return;
	}
	REQUIRE(!conf_addr_parse(addr_s, &addr));
	TRY(conf_set_create(c, &s, NULL));
	t0 = conf_now_us();
	REQUIRE_OK(rapt_ep_connect(s.ep, (struct sockaddr *)&addr,
				   c->attr.service_id_min + 1, NULL, 0,
				   tmo_ms * 1000LL));
	rc = conf_wait(c, s.conn_evd, tmo_ms + conf_tmo(c, 10000), &ev);
	dt = conf_now_us() - t0;
	REQUIRE_MSG(rc == 0, "no event %lld ms after a connect to %s %s with a %d ms timeout",
		    (long long)dt / 1000, opt, addr_s, tmo_ms);
	EXPECT_MSG(ev.type == type,
		   "a connect to %s %s ended with %s, expected %s", opt,
		   addr_s, rapt_event_name(ev.type), rapt_event_name(type));
	if (type == RAPT_EV_TIMED_OUT && ev.type == type)
		EXPECT_MSG(dt >= tmo_ms * 900LL,
			   "TIMED_OUT after %lld ms of a %d ms timeout",
			   (long long)dt / 1000, tmo_ms);
	EXPECT_OK(rapt_ep_get_state(s.ep, &st));
	EXPECT_EQ(st, RAPT_EP_DISCONNECTED);
	EXPECT_EMPTY(s.conn_evd, 20);
out:
	return;
}

static void t_unreachable(struct conf_ctx *c)
{
	fault_connect(c, "--unreachable-addr", conf_opt.unreachable,
		      RAPT_EV_UNREACHABLE, conf_tmo(c, 10000));
}

static void t_timed_out(struct conf_ctx *c)
{
	fault_connect(c, "--blackhole-addr", conf_opt.blackhole,
		      RAPT_EV_TIMED_OUT, 400);
}

/* The passive consumer chooses an EP only after reading the request. */
static void late_ep_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct rapt_cr_info ci;
	struct conf_ep_set s;
	struct rapt_ep_attr a = { 0 };
	struct conf_set_opts o = { .attr = &a };
	struct rapt_event ev;
	struct rapt_cr *cr;

	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, &ci));
	EXPECT_PDATA(ci.pdata, ci.pdata_len, cr_pdata);
	/* Size the EP from what the requester asked for. */
	a.rdma_read_in = ci.rdma_read_out < c->attr.max_rdma_read_in ?
			 ci.rdma_read_out : c->attr.max_rdma_read_in;
	TRY(conf_set_create(c, &s, &o));
	TRY(conf_post_recvs(c, &s, 0, 1, 64));
	TRY(conf_accept(c, cr, &s, acc_pdata, strlen(acc_pdata)));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0, &ev);
	EXPECT(conf_verify(s.buf, 40, 5) < 0);
out:
	return;
}

static void late_ep_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	struct rapt_event ev;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	TRY(conf_connect(c, &s, &addr, sid, cr_pdata, strlen(cr_pdata), &ev));
	EXPECT_PDATA(ev.u.conn.pdata, ev.u.conn.pdata_len, acc_pdata);
	conf_fill(s.buf, 40, 5);
	TRY(conf_send_msg(c, &s, 0, 40, 5));
out:
	return;
}

#define NCRS 8

/* NCRS requests on one PSP, decided in a scrambled order: even ones
 * accepted, odd ones rejected, each with its own private data. */
static void many_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct rapt_ep *ep[NCRS];
	struct conf_ep_set s;
	struct rapt_event ev;
	char want[32];
	bool done[NCRS] = { false };
	unsigned int i, k;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	for (i = 0; i < NCRS; i++) {
		char p[16];

		TRY(conf_set_ep(c, &s, NULL, &ep[i]));
		snprintf(p, sizeof(p), "req %u", i);
		REQUIRE_OK(rapt_ep_connect(ep[i], (struct sockaddr *)&addr,
					   sid, p, strlen(p) + 1,
					   conf_tmo(c, 30000) * 1000LL));
	}
	for (k = 0; k < NCRS; k++) {
		REQUIRE(conf_wait(c, s.conn_evd, conf_tmo(c, CONF_TMO_MS),
				  &ev) == 0);
		for (i = 0; i < NCRS && ep[i] != ev.u.conn.ep; i++)
			;
		REQUIRE_MSG(i < NCRS && !done[i],
			    "a %s event for an EP that %s",
			    rapt_event_name(ev.type),
			    i < NCRS ? "already had its event" :
			    "is not one of ours");
		done[i] = true;
		snprintf(want, sizeof(want), "%s %u", i % 2 ? "rej" : "acc", i);
		EXPECT_MSG(ev.type == (i % 2 ? RAPT_EV_PEER_REJECTED :
					       RAPT_EV_ESTABLISHED),
			   "request %u got %s", i, rapt_event_name(ev.type));
		EXPECT_PDATA(ev.u.conn.pdata, ev.u.conn.pdata_len, want);
	}
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void many_passive(struct conf_ctx *c)
{
	static const unsigned int order[NCRS] = { 5, 2, 7, 0, 3, 6, 1, 4 };
	struct rapt_cr *crs[NCRS] = { NULL };
	struct conf_listener l;
	struct rapt_psp_info pi;
	struct rapt_cr_info ci;
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_cr *cr;
	struct rapt_ep *ep;
	unsigned int i, k, idx;
	char p[16];

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	for (k = 0; k < NCRS; k++) {
		TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, &ci));
		REQUIRE_MSG(ci.pdata_len >= 6 && ci.pdata &&
			    sscanf(ci.pdata, "req %u", &idx) == 1 &&
			    idx < NCRS && !crs[idx],
			    "unexpected request private data (%u bytes)",
			    ci.pdata_len);
		crs[idx] = cr;
	}
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, NCRS);
	for (k = 0; k < NCRS; k++) {
		i = order[k];
		snprintf(p, sizeof(p), "%s %u", i % 2 ? "rej" : "acc", i);
		if (i % 2) {
			EXPECT_OK(rapt_cr_reject(crs[i], p, strlen(p)));
		} else {
			TRY(conf_set_ep(c, &s, NULL, &ep));
			EXPECT_OK(rapt_cr_accept(crs[i], ep, p, strlen(p)));
		}
		conf_untrack(c, crs[i]);
	}
	for (k = 0; k < NCRS / 2; k++)
		REQUIRE_EVENT(s.conn_evd, RAPT_EV_ESTABLISHED, &ev);
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, 0);
	EXPECT_EQ(pi.accepted, NCRS / 2);
	EXPECT_EQ(pi.rejected, NCRS / 2);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void t_psp(struct conf_ctx *c)
{
	struct rapt_psp_attr pa = { .flags = 1 };
	struct rapt_evd *cr_evd, *dto;
	struct rapt_psp *p1, *p2, *p3;
	struct rapt_psp_info i1, i2;

	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_CR, &cr_evd));
	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_DTO, &dto));
	REQUIRE_OK(rapt_psp_create(c->ia, RAPT_SERVICE_ID_ANY, cr_evd, NULL,
				   &p1));
	conf_track(c, CONF_OBJ_PSP, p1);
	REQUIRE_OK(rapt_psp_create(c->ia, RAPT_SERVICE_ID_ANY, cr_evd, NULL,
				   &p2));
	conf_track(c, CONF_OBJ_PSP, p2);
	REQUIRE_OK(rapt_psp_query(p1, &i1, sizeof(i1)));
	REQUIRE_OK(rapt_psp_query(p2, &i2, sizeof(i2)));
	EXPECT(i1.service_id >= c->attr.service_id_min &&
	       i1.service_id <= c->attr.service_id_max);
	EXPECT(i2.service_id >= c->attr.service_id_min &&
	       i2.service_id <= c->attr.service_id_max);
	EXPECT_MSG(i1.service_id != i2.service_id,
		   "two RAPT_SERVICE_ID_ANY listeners got the same id %llu",
		   (unsigned long long)i1.service_id);
	/* Defaults of a NULL attr. */
	EXPECT_EQ(i1.backlog, 128);
	EXPECT_EQ(i1.handshake_limit, 128);
	EXPECT_EQ(i1.handshake_timeout_ms, 5000);
	EXPECT_EQ(i1.pending_crs + i1.in_handshake + i1.busy_rejects +
		  i1.accepted + i1.rejected + i1.handshake_timeouts, 0);
	EXPECT_RC(rapt_psp_create(c->ia, i1.service_id, cr_evd, NULL, &p3),
		  RAPT_EADDRINUSE);
	EXPECT_RC(rapt_psp_create(c->ia, RAPT_SERVICE_ID_ANY, dto, NULL, &p3),
		  RAPT_EINVAL);
	EXPECT_RC(rapt_psp_create(c->ia, RAPT_SERVICE_ID_ANY, cr_evd, &pa,
				  &p3), RAPT_EINVAL);
	EXPECT_RC(rapt_psp_create(c->ia, RAPT_SERVICE_ID_ANY, cr_evd, NULL,
				  NULL), RAPT_EINVAL);
	/* Freed, the id can be listened on again. */
	REQUIRE_OK(conf_free(c, p1));
	REQUIRE_OK(rapt_psp_create(c->ia, i1.service_id, cr_evd, NULL, &p3));
	conf_track(c, CONF_OBJ_PSP, p3);
	EXPECT_EMPTY(cr_evd, 0);
out:
	return;
}

/* A PSP with an undecided CR cannot go; accepted connections outlive it. */
static void pspfree_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_cr *cr;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_post_recvs(c, &s, 0, 1, 64));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	EXPECT_RC(rapt_psp_free(l.psp), RAPT_EBUSY);
	TRY(conf_accept(c, cr, &s, NULL, 0));
	REQUIRE_OK(conf_free(c, l.psp));
	EXPECT_OK(conf_free(c, l.cr_evd));
	TRY(conf_barrier(c, "psp-gone"));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0, &ev);
	EXPECT(conf_verify(s.buf, 16, 3) < 0);
out:
	return;
}

static void pspfree_active(struct conf_ctx *c)
{
	struct conf_ep_set s;

	TRY(conf_pair_active(c, &s, NULL, 0, 0));
	TRY(conf_barrier(c, "psp-gone"));
	conf_fill(s.buf, 16, 3);
	TRY(conf_send_msg(c, &s, 0, 16, 3));
out:
	return;
}

static const struct conf_test cm_tests[] = {
	{ "connect_accept", "connect with private data, read the CR, accept with private data, exchange data",
	  basic_active, basic_passive },
	{ "peer_rejected", "a consumer reject gives PEER_REJECTED with exactly its private data",
	  reject_active, reject_passive },
	{ "no_listener", "a service id nobody listens on gives NON_PEER_REJECTED/NO_LISTENER",
	  nolistener_active, nolistener_passive },
	{ "busy", "a full backlog gives NON_PEER_REJECTED/BUSY, no CR, and a counted busy reject",
	  busy_active, busy_passive },
	{ "unreachable", "a connect to --unreachable-addr gives UNREACHABLE",
	  t_unreachable, NULL },
	{ "timed_out", "a connect to --blackhole-addr gives TIMED_OUT after its timeout",
	  t_timed_out, NULL },
	{ "accept_late_ep", "accept with an EP created after the CR arrived, sized from the request",
	  late_ep_active, late_ep_passive },
	{ "many_crs", "8 requests on one PSP decided in a scrambled order, each gets its own answer",
	  many_active, many_passive },
	{ "psp", "RAPT_SERVICE_ID_ANY, defaults, a taken id, bad arguments, reuse after free",
	  t_psp, NULL },
	{ "psp_free", "a PSP with an undecided CR is busy; accepted connections outlive it",
	  pspfree_active, pspfree_passive },
};

CONF_SUITE(conf_suite_cm, "cm", "connection management", cm_tests);
