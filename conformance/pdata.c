/* SPDX-License-Identifier: MIT */
/*
 * Area "pdata": private data.  Every size from 0 to the IA's limit on
 * connect, accept, reject and (where advertised) disconnect arrives with
 * exactly its bytes and length; one byte more fails at once with
 * RAPT_ELENGTH and queues nothing; raw (header-less) private data.
 */
#include "config.h"

#include <string.h>

#include "conf.h"

#define PD_MAX 512

/* Seeds per operation, so a mix-up between them shows. */
#define SEED_CONNECT 1000
#define SEED_ACCEPT 2000
#define SEED_REJECT 3000
#define SEED_DISC 4000

static bool pd_check(struct conf_ctx *c, const void *p, size_t len,
		     size_t want, uint32_t seed, const char *what,
		     const char *file, int line)
{
	long bad;

	if (!conf_check(c, len == want, file, line,
			"%s private data of %zu bytes arrived as %zu bytes",
			what, want, len))
		return false;
	if (!conf_check(c, want == 0 || p != NULL, file, line,
			"%s private data of %zu bytes arrived as NULL", what,
			want))
		return false;
	bad = want ? conf_verify(p, want, seed) : -1;
	return conf_check(c, bad < 0, file, line,
			  "%s private data of %zu bytes differs at byte %ld",
			  what, want, bad);
}

#define PD_CHECK(p, len, want, seed, what)				\
	pd_check(c, (p), (len), (want), (seed), (what), __FILE__, __LINE__)

/* ---- connect: every size reaches the CR exactly -------------------- */

static void connect_active(struct conf_ctx *c)
{
	unsigned int max = c->attr.pdata_connect, len;
	struct sockaddr_storage addr;
	uint8_t pd[PD_MAX];
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_ep *ep;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	TRY(conf_send_u64(c, "max", max));
	for (len = 0; len <= max; len++) {
		conf_fill(pd, len, SEED_CONNECT + len);
		TRY(conf_set_ep(c, &s, NULL, &ep));
		REQUIRE_OK(rapt_ep_connect(ep, (struct sockaddr *)&addr, sid,
					   len ? pd : NULL, len,
					   conf_tmo(c, 20000) * 1000LL));
		REQUIRE_EVENT(s.conn_evd, RAPT_EV_PEER_REJECTED, &ev);
		EXPECT_EQ(ev.u.conn.pdata_len, 0);
		REQUIRE_OK(conf_free(c, ep));
	}
out:
	return;
}

static void connect_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct rapt_cr_info ci;
	struct rapt_cr *cr;
	uint64_t max, len;

	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_recv_u64(c, "max", &max));
	for (len = 0; len <= max; len++) {
		TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, &ci));
		if (!PD_CHECK(ci.pdata, ci.pdata_len, len,
			      SEED_CONNECT + (uint32_t)len, "connect"))
			len = max;	/* one size is enough to report */
		EXPECT_MSG(!(ci.flags & RAPT_CRI_FOREIGN_PEER),
			   "a rapt requester was taken for a foreign peer");
		REQUIRE_OK(rapt_cr_reject(cr, NULL, 0));
		conf_untrack(c, cr);
	}
out:
	return;
}

/* ---- accept: every size reaches ESTABLISHED exactly ----------------- */

static void accept_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	struct rapt_event ev;
	uint64_t sid, max, len;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	TRY(conf_recv_u64(c, "max", &max));
	for (len = 0; len <= max; len++) {
		TRY(conf_set_ep(c, &s, NULL, &s.ep));
		TRY(conf_connect(c, &s, &addr, sid, NULL, 0, &ev));
		if (!PD_CHECK(ev.u.conn.pdata, ev.u.conn.pdata_len, len,
			      SEED_ACCEPT + (uint32_t)len, "accept"))
			goto out;
		/* rtr/active_closes_at_once tests closing at once. */
		TRY(conf_barrier(c, "up"));
		REQUIRE_OK(conf_free(c, s.ep));
	}
out:
	return;
}

static void accept_passive(struct conf_ctx *c)
{
	unsigned int max = c->attr.pdata_accept, len;
	struct conf_listener l;
	struct conf_ep_set s;
	uint8_t pd[PD_MAX];
	struct rapt_cr *cr;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_send_u64(c, "max", max));
	for (len = 0; len <= max; len++) {
		conf_fill(pd, len, SEED_ACCEPT + len);
		TRY(conf_set_ep(c, &s, NULL, &s.ep));
		TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
		TRY(conf_accept(c, cr, &s, len ? pd : NULL, len));
		TRY(conf_barrier(c, "up"));
		/* The active side frees its EP: ours goes down. */
		TRY(conf_wait_down(c, &s, NULL));
		REQUIRE_OK(conf_free(c, s.ep));
	}
out:
	return;
}

/* ---- reject: every size reaches PEER_REJECTED exactly --------------- */

static void reject_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_ep *ep;
	uint64_t sid, max, len;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	TRY(conf_recv_u64(c, "max", &max));
	for (len = 0; len <= max; len++) {
		TRY(conf_set_ep(c, &s, NULL, &ep));
		REQUIRE_OK(rapt_ep_connect(ep, (struct sockaddr *)&addr, sid,
					   NULL, 0,
					   conf_tmo(c, 20000) * 1000LL));
		REQUIRE_EVENT(s.conn_evd, RAPT_EV_PEER_REJECTED, &ev);
		if (!PD_CHECK(ev.u.conn.pdata, ev.u.conn.pdata_len, len,
			      SEED_REJECT + (uint32_t)len, "reject"))
			goto out;
		REQUIRE_OK(conf_free(c, ep));
	}
out:
	return;
}

static void reject_passive(struct conf_ctx *c)
{
	unsigned int max = c->attr.pdata_reject, len;
	struct conf_listener l;
	uint8_t pd[PD_MAX];
	struct rapt_cr *cr;

	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_send_u64(c, "max", max));
	for (len = 0; len <= max; len++) {
		conf_fill(pd, len, SEED_REJECT + len);
		TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
		REQUIRE_OK(rapt_cr_reject(cr, len ? pd : NULL, len));
		conf_untrack(c, cr);
	}
out:
	return;
}

/* ---- disconnect: every size reaches the peer's DISCONNECTED --------- */

static void disc_active(struct conf_ctx *c)
{
	unsigned int max = c->attr.pdata_disconnect, len;
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	uint8_t pd[PD_MAX] = { 1 };
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
	SKIP_UNLESS_CAP(RAPT_CAP_DISCONNECT_PDATA,
			rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, pd, 1));
	TRY(conf_send_u64(c, "max", max));
	for (len = 0; len <= max; len++) {
		if (len) {
			TRY(conf_set_ep(c, &s, NULL, &s.ep));
			TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
		}
		TRY(conf_barrier(c, "up"));
		conf_fill(pd, len, SEED_DISC + len);
		REQUIRE_OK(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL,
					      len ? pd : NULL, len));
		REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, NULL);
		REQUIRE_OK(conf_free(c, s.ep));
		TRY(conf_barrier(c, "checked"));
	}
out:
	return;
}

static void disc_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_cr *cr;
	uint64_t max, len;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	TRY(conf_accept(c, cr, &s, NULL, 0));
	TRY(conf_recv_u64(c, "max", &max));
	for (len = 0; len <= max; len++) {
		if (len) {
			TRY(conf_set_ep(c, &s, NULL, &s.ep));
			TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr,
					NULL));
			TRY(conf_accept(c, cr, &s, NULL, 0));
		}
		TRY(conf_barrier(c, "up"));
		REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, &ev);
		PD_CHECK(ev.u.conn.pdata, ev.u.conn.pdata_len, len,
			 SEED_DISC + (uint32_t)len, "disconnect");
		REQUIRE_OK(conf_free(c, s.ep));
		TRY(conf_barrier(c, "checked"));
	}
out:
	return;
}

/* ---- one byte too many: RAPT_ELENGTH now, and nothing else ---------- */

static void over_active(struct conf_ctx *c)
{
	unsigned int max = c->attr.pdata_connect;
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	uint8_t pd[PD_MAX + 8];
	struct rapt_event ev;
	enum rapt_ep_state st;
	uint64_t sid, amax;

	conf_fill(pd, sizeof(pd), 9);
	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	EXPECT_RC(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid, pd,
				  max + 1, conf_tmo(c, 20000) * 1000LL),
		  RAPT_ELENGTH);
	EXPECT_RC(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid, NULL,
				  5, conf_tmo(c, 20000) * 1000LL),
		  RAPT_EINVAL);
	EXPECT_OK(rapt_ep_get_state(s.ep, &st));
	EXPECT_EQ(st, RAPT_EP_UNCONNECTED);
	EXPECT_EMPTY(s.conn_evd, 50);
	TRY(conf_barrier(c, "attempted"));
	TRY(conf_barrier(c, "checked"));
	/* The same EP still connects, with the most allowed. */
	TRY(conf_connect(c, &s, &addr, sid, pd, max, &ev));
	TRY(conf_recv_u64(c, "amax", &amax));
	PD_CHECK(ev.u.conn.pdata, ev.u.conn.pdata_len, amax, 11, "accept");
	if (c->attr.caps & RAPT_CAP_DISCONNECT_PDATA)
		EXPECT_RC(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, pd,
					     c->attr.pdata_disconnect + 1),
			  RAPT_ELENGTH);
	else
		EXPECT_RC(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, pd, 1),
			  RAPT_ENOTSUP);
	EXPECT_OK(rapt_ep_get_state(s.ep, &st));
	EXPECT_EQ(st, RAPT_EP_CONNECTED);
	EXPECT_EMPTY(s.conn_evd, 50);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void over_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct rapt_psp_info pi;
	struct rapt_cr_info ci;
	struct conf_ep_set s;
	uint8_t pd[PD_MAX + 8];
	struct rapt_cr *cr;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_barrier(c, "attempted"));
	/* The refused connect never left the active side. */
	EXPECT_EMPTY(l.cr_evd, 100);
	TRY(conf_barrier(c, "checked"));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, &ci));
	PD_CHECK(ci.pdata, ci.pdata_len, ci.pdata_len, 9, "connect");
	conf_fill(pd, sizeof(pd), 11);
	EXPECT_RC(rapt_cr_accept(cr, s.ep, pd, c->attr.pdata_accept + 1u),
		  RAPT_ELENGTH);
	EXPECT_RC(rapt_cr_reject(cr, pd, c->attr.pdata_reject + 1u),
		  RAPT_ELENGTH);
	EXPECT_RC(rapt_cr_accept(cr, s.ep, NULL, 3), RAPT_EINVAL);
	/* Still undecided, and still acceptable. */
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQ(pi.pending_crs, 1);
	EXPECT_OK(rapt_cr_query(cr, &ci, sizeof(ci)));
	EXPECT_EMPTY(s.conn_evd, 0);
	TRY(conf_accept(c, cr, &s, pd, c->attr.pdata_accept));
	TRY(conf_send_u64(c, "amax", c->attr.pdata_accept));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* ---- raw private data for foreign peers ----------------------------- */

static bool pd_nonzero(const uint8_t *p, size_t len)
{
	while (len--)
		if (*p++)
			return true;
	return false;
}

static void raw_active(struct conf_ctx *c)
{
	struct rapt_ep_attr a = { .flags = RAPT_EP_RAW_PDATA };
	struct conf_set_opts o = { .attr = &a };
	unsigned int raw = c->attr.pdata_connect + RAPT_PDATA_HEADER_LEN;
	struct sockaddr_storage addr;
	struct rapt_evd *conn;
	struct conf_ep_set s;
	uint8_t pd[PD_MAX + 8];
	struct rapt_event ev;
	struct rapt_ep *ep;
	uint64_t sid, alen;

	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_CONNECTION, &conn));
	SKIP_UNLESS_CAP(RAPT_CAP_RAW_PDATA,
			rapt_ep_create(c->pz, NULL, NULL, conn, &a, &ep));
	TRY(conf_set_create(c, &s, &o));
	TRY(conf_lookup(c, &addr, &sid));
	conf_fill(pd, sizeof(pd), 21);
	pd[0] = 0;	/* never rapt's magic */
	EXPECT_RC(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid, pd,
				  raw + 1, 1000000), RAPT_ELENGTH);
	TRY(conf_send_u64(c, "raw", raw));
	TRY(conf_connect(c, &s, &addr, sid, pd, raw, &ev));
	/* A requester without rapt's header is answered without it too:
	 * the accept bytes arrive as the peer passed them.  IB's CM carries
	 * no length: the whole field arrives, zeros after the peer's bytes
	 * (only rapt's header could say where they end). */
	TRY(conf_recv_u64(c, "alen", &alen));
	if (c->attr.transport == RAPT_TRANSPORT_IB ||
	    c->attr.transport == RAPT_TRANSPORT_ROCE) {
		EXPECT_EQU(ev.u.conn.pdata_len,
			   c->attr.pdata_accept + RAPT_PDATA_HEADER_LEN);
		EXPECT_MSG(ev.u.conn.pdata_len < alen ||
			   !pd_nonzero((const uint8_t *)ev.u.conn.pdata + alen,
				       ev.u.conn.pdata_len - alen),
			   "IB's padding after the raw accept bytes is not zero");
	} else {
		EXPECT_EQU(ev.u.conn.pdata_len, alen);
	}
	if (ev.u.conn.pdata_len >= alen)
		PD_CHECK(ev.u.conn.pdata, alen, alen, 22, "accept");
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void raw_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct rapt_cr_info ci;
	struct rapt_ep_info ei;
	struct conf_ep_set s;
	uint8_t pd[PD_MAX + 8];
	struct rapt_cr *cr;
	uint64_t raw;
	long bad;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_recv_u64(c, "raw", &raw));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, &ci));
	EXPECT_MSG(ci.flags & RAPT_CRI_FOREIGN_PEER,
		   "private data without rapt's header not flagged foreign");
	EXPECT_EQU(ci.pdata_len, raw);
	conf_fill(pd, sizeof(pd), 21);
	pd[0] = 0;
	bad = ci.pdata_len == raw && ci.pdata ?
	      (memcmp(ci.pdata, pd, raw) ? 0 : -1) : 0;
	EXPECT_MSG(bad < 0, "raw connect private data altered");
	conf_fill(pd, sizeof(pd), 22);
	TRY(conf_accept(c, cr, &s, pd, 16));
	REQUIRE_OK(rapt_ep_query(s.ep, &ei, sizeof(ei)));
	EXPECT_MSG(ei.flags & RAPT_EPI_FOREIGN_PEER,
		   "the EP that accepted a foreign request is not flagged foreign");
	TRY(conf_send_u64(c, "alen", 16));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static const struct conf_test pdata_tests[] = {
	{ "connect_sizes", "connect private data of every size 0..max reaches the CR exactly",
	  connect_active, connect_passive },
	{ "accept_sizes", "accept private data of every size 0..max reaches ESTABLISHED exactly",
	  accept_active, accept_passive },
	{ "reject_sizes", "reject private data of every size 0..max reaches PEER_REJECTED exactly",
	  reject_active, reject_passive },
	{ "disconnect_sizes", "disconnect private data of every size 0..max reaches DISCONNECTED exactly",
	  disc_active, disc_passive },
	{ "oversize", "max+1 bytes fail with RAPT_ELENGTH at once, queue nothing, change nothing",
	  over_active, over_passive },
	{ "raw", "a RAW_PDATA EP sends header-less bytes (flagged foreign on both sides) and gets a raw accept",
	  raw_active, raw_passive },
};

CONF_SUITE(conf_suite_pdata, "pdata", "private data sizes and limits",
	   pdata_tests);
