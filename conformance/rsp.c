/* SPDX-License-Identifier: MIT */
/*
 * Area "rsp" (API 1.3): a reserved service point is a listener bound to
 * one EP.  Its one request arrives as a CR that names the RSP, can be
 * accepted only with that EP, and is the only one: later requests are
 * refused BUSY by rapt while the RSP lives and find no listener after.
 * The EP is RESERVED meanwhile: it cannot connect, be freed, or serve
 * another listener's CR; rapt_rsp_free() gives an unused one back
 * UNCONNECTED.  RSPs are built by the core on the provider's listeners, so
 * every provider that has PSPs must pass.
 */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "conf.h"

/* An RSP for @ep on any service id (a provider-chosen one, else a free
 * one from the range), tracked; its id in @sid. */
static int rsp_open(struct conf_ctx *c, struct rapt_ep *ep,
		    struct rapt_evd *cr_evd, struct rapt_rsp **rsp,
		    uint64_t *sid)
{
	uint64_t lo = c->attr.service_id_min, hi = c->attr.service_id_max;
	struct rapt_rsp_info ri;
	uint64_t id;
	unsigned int i;
	int rc;

	rc = rapt_rsp_create(c->ia, RAPT_SERVICE_ID_ANY, ep, cr_evd, rsp);
	if (lo == 0)
		lo = 1;
	id = lo + (uint64_t)(getpid() * 7919u + 17u) % (hi - lo + 1);
	for (i = 0; rc && i < 256; i++) {
		rc = rapt_rsp_create(c->ia, id, ep, cr_evd, rsp);
		id = id >= hi ? lo : id + 1;
	}
	if (!EXPECT_OK(rc))
		return -1;
	conf_track(c, CONF_OBJ_RSP, *rsp);
	if (!EXPECT_OK(rapt_rsp_query(*rsp, &ri, sizeof(ri))))
		return -1;
	*sid = ri.service_id;
	return 0;
}

/* Wait for the RSP's CR; it names the RSP, not a PSP. */
static int rsp_get_cr(struct conf_ctx *c, struct rapt_evd *cr_evd,
		      struct rapt_rsp *rsp, uint64_t sid, struct rapt_cr **cr)
{
	struct rapt_cr_info ci;
	struct rapt_event ev;

	TRY(EXPECT_EVENT(cr_evd, RAPT_EV_CR_ARRIVAL, &ev));
	conf_track(c, CONF_OBJ_CR, ev.u.cr.cr);
	EXPECT(ev.u.cr.rsp == rsp);
	EXPECT(ev.u.cr.psp == NULL);
	EXPECT_EQU(ev.u.cr.service_id, sid);
	REQUIRE_OK(rapt_cr_query(ev.u.cr.cr, &ci, sizeof(ci)));
	EXPECT(ci.rsp == rsp);
	EXPECT(ci.psp == NULL);
	EXPECT_EQU(ci.service_id, sid);
	*cr = ev.u.cr.cr;
	return 0;
out:
	return -1;
}

static int rsp_info_is(struct conf_ctx *c, struct rapt_rsp *rsp,
		       struct rapt_ep *ep, uint32_t flags, uint32_t pending,
		       const char *file, int line)
{
	struct rapt_rsp_info ri;
	int rc;

	memset(&ri, 0, sizeof(ri));
	rc = rapt_rsp_query(rsp, &ri, sizeof(ri));
	return conf_check(c, rc == 0 && ri.ep == ep && ri.flags == flags &&
			  ri.pending_crs == pending, file, line,
			  "rsp query rc %s: ep %s, flags %#x, %u pending; expected flags %#x, %u pending",
			  rapt_err_name(rc), ri.ep == ep ? "right" : "wrong",
			  ri.flags, ri.pending_crs, flags, pending) ? 0 : -1;
}

#define RSP_INFO_IS(rsp, ep, flags, pending)				\
	rsp_info_is(c, (rsp), (ep), (flags), (pending), __FILE__, __LINE__)

/* Connect a new EP of @s and expect NON_PEER_REJECTED with @reason. */
static int refused(struct conf_ctx *c, struct conf_ep_set *s,
		   const struct sockaddr_storage *addr, uint64_t sid,
		   uint32_t reason)
{
	struct rapt_event ev;
	struct rapt_ep *ep;

	TRY(conf_set_ep(c, s, NULL, &ep));
	REQUIRE_OK(rapt_ep_connect(ep, (const struct sockaddr *)addr, sid,
				   NULL, 0, conf_tmo(c, 20000) * 1000LL));
	TRY(EXPECT_EVENT(s->conn_evd, RAPT_EV_NON_PEER_REJECTED, &ev));
	EXPECT(ev.u.conn.ep == ep);
	EXPECT_MSG(ev.u.conn.reason == reason,
		   "NON_PEER_REJECTED with reason %s, expected %s",
		   conf_reason_name(ev.u.conn.reason),
		   conf_reason_name(reason));
	return 0;
out:
	return -1;
}

static void accept_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	struct rapt_event ev;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_post_recvs(c, &s, 0, 1, 64));
	TRY(conf_lookup(c, &addr, &sid));
	TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
	conf_fill(s.buf + 1024, 33, 3);
	TRY(conf_send_msg(c, &s, 1024, 33, 9));
	TRY(EXPECT_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0, &ev));
	EXPECT_EQU(ev.u.dto.length, 44);
	EXPECT(conf_verify(s.buf, 44, 4) < 0);
	/* Spent: the RSP still exists but takes no second request. */
	TRY(refused(c, &s, &addr, sid, RAPT_REJECT_BUSY));
	TRY(conf_barrier(c, "second"));
	TRY(conf_barrier(c, "freed"));
	TRY(refused(c, &s, &addr, sid, RAPT_REJECT_NO_LISTENER));
out:
	return;
}

static void accept_passive(struct conf_ctx *c)
{
	struct conf_listener l = { 0 };
	struct rapt_ep *other, *ep;
	enum rapt_handle_type ht;
	struct rapt_psp_info pi;
	struct rapt_rsp *rsp;
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_cr *cr;

	TRY(conf_set_create(c, &s, NULL));
	ep = s.ep;
	TRY(conf_post_recvs(c, &s, 0, 1, 64));
	REQUIRE_OK(conf_evd_create(c, 16, RAPT_EVD_CR, &l.cr_evd));
	TRY(rsp_open(c, ep, l.cr_evd, &rsp, &l.sid));
	REQUIRE_OK(rapt_handle_type(rsp, &ht));
	EXPECT_EQ(ht, RAPT_HANDLE_RSP);
	EXPECT_RC(rapt_psp_query((struct rapt_psp *)rsp, &pi, sizeof(pi)),
		  RAPT_EHANDLETYPE);
	EXPECT_EP_STATE(ep, RAPT_EP_RESERVED);
	TRY(RSP_INFO_IS(rsp, ep, 0, 0));
	/* Reserved: no connect, no free, no reuse by the consumer. */
	EXPECT_RC(rapt_ep_connect(ep, (struct sockaddr *)&c->attr.local_addr,
				  l.sid, NULL, 0, 1000000), RAPT_ESTATE);
	EXPECT_RC(rapt_ep_free(ep), RAPT_EBUSY);
	EXPECT_EP_STATE(ep, RAPT_EP_RESERVED);
	TRY(conf_publish(c, &l));
	TRY(rsp_get_cr(c, l.cr_evd, rsp, l.sid, &cr));
	TRY(RSP_INFO_IS(rsp, ep, RAPT_RSPI_SPENT, 1));
	EXPECT_RC(rapt_rsp_free(rsp), RAPT_EBUSY);
	/* Only the RSP's EP may take its CR; the CR survives a wrong one. */
	TRY(conf_set_ep(c, &s, NULL, &other));
	EXPECT_RC(rapt_cr_accept(cr, other, NULL, 0), RAPT_EINVAL);
	EXPECT_EP_STATE(other, RAPT_EP_UNCONNECTED);
	REQUIRE_OK(rapt_cr_accept(cr, ep, NULL, 0));
	conf_untrack(c, cr);
	TRY(EXPECT_EVENT(s.conn_evd, RAPT_EV_ESTABLISHED, &ev));
	EXPECT(ev.u.conn.ep == ep);
	TRY(EXPECT_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0, &ev));
	EXPECT_EQU(ev.u.dto.length, 33);
	EXPECT(conf_verify(s.buf, 33, 3) < 0);
	conf_fill(s.buf + 1024, 44, 4);
	TRY(conf_send_msg(c, &s, 1024, 44, 8));
	TRY(conf_barrier(c, "second"));
	EXPECT_EMPTY(l.cr_evd, 0);	/* the refused request made no CR */
	TRY(RSP_INFO_IS(rsp, ep, RAPT_RSPI_SPENT, 0));
	REQUIRE_OK(conf_free(c, rsp));
	EXPECT_EP_STATE(ep, RAPT_EP_CONNECTED);	/* ours since accepted */
	TRY(conf_barrier(c, "freed"));
out:
	return;
}

/* A rejected CR spends the RSP too; its EP stays reserved until the free. */
static void t_reject(struct conf_ctx *c)
{
	struct conf_ep_set a, p;
	struct rapt_evd *cr_evd;
	struct rapt_rsp *rsp;
	struct rapt_event ev;
	struct rapt_cr *cr;
	struct rapt_ep *a2;
	uint64_t sid;

	TRY(conf_set_create(c, &a, NULL));
	TRY(conf_set_create(c, &p, NULL));
	REQUIRE_OK(conf_evd_create(c, 16, RAPT_EVD_CR, &cr_evd));
	TRY(rsp_open(c, p.ep, cr_evd, &rsp, &sid));
	TRY(conf_self_connect(c, a.ep, sid));
	TRY(rsp_get_cr(c, cr_evd, rsp, sid, &cr));
	REQUIRE_OK(rapt_cr_reject(cr, "no", 2));
	conf_untrack(c, cr);
	TRY(EXPECT_EVENT(a.conn_evd, RAPT_EV_PEER_REJECTED, &ev));
	EXPECT_EQU(ev.u.conn.pdata_len, 2);
	EXPECT_EP_STATE(p.ep, RAPT_EP_RESERVED);
	TRY(RSP_INFO_IS(rsp, p.ep, RAPT_RSPI_SPENT, 0));
	TRY(conf_set_ep(c, &a, NULL, &a2));
	TRY(conf_self_connect(c, a2, sid));
	TRY(EXPECT_EVENT(a.conn_evd, RAPT_EV_NON_PEER_REJECTED, &ev));
	EXPECT(ev.u.conn.ep == a2);
	EXPECT_EQ(ev.u.conn.reason, RAPT_REJECT_BUSY);
	EXPECT_EMPTY(cr_evd, 0);
	REQUIRE_OK(conf_free(c, rsp));
	EXPECT_EP_STATE(p.ep, RAPT_EP_UNCONNECTED);
	EXPECT_OK(conf_free(c, p.ep));	/* no longer held */
out:
	return;
}

/* Arguments and states rapt_rsp_create() refuses, leaving the EP as it
 * was; an unused RSP gives its EP back. */
static void t_create_checks(struct conf_ctx *c)
{
	struct rapt_evd *cr_evd, *conn_evd;
	struct rapt_rsp *rsp, *rsp2;
	struct conf_ep_set s;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	REQUIRE_OK(conf_evd_create(c, 16, RAPT_EVD_CR, &cr_evd));
	REQUIRE_OK(conf_evd_create(c, 16, RAPT_EVD_CONNECTION, &conn_evd));
	EXPECT_RC(rapt_rsp_create(c->ia, RAPT_SERVICE_ID_ANY, s.ep, cr_evd,
				  NULL), RAPT_EINVAL);
	EXPECT_RC(rapt_rsp_create(c->ia, RAPT_SERVICE_ID_ANY, s.ep, conn_evd,
				  &rsp), RAPT_EINVAL);
	EXPECT_RC(rapt_rsp_create(c->ia, RAPT_SERVICE_ID_ANY, NULL, cr_evd,
				  &rsp), RAPT_EBADHANDLE);
	EXPECT_RC(rapt_rsp_create(c->ia, RAPT_SERVICE_ID_ANY,
				  (struct rapt_ep *)c->pz, cr_evd, &rsp),
		  RAPT_EHANDLETYPE);
	if (c->attr.service_id_max < UINT64_MAX - 1)
		EXPECT_RC(rapt_rsp_create(c->ia, c->attr.service_id_max + 1,
					  s.ep, cr_evd, &rsp), RAPT_ERANGE);
	EXPECT_EP_STATE(s.ep, RAPT_EP_UNCONNECTED);
	EXPECT_RC(rapt_rsp_free(NULL), RAPT_EBADHANDLE);
	EXPECT_RC(rapt_rsp_free((struct rapt_rsp *)cr_evd), RAPT_EHANDLETYPE);
	TRY(rsp_open(c, s.ep, cr_evd, &rsp, &sid));
	/* One RSP per EP: the EP is RESERVED now. */
	EXPECT_RC(rapt_rsp_create(c->ia, RAPT_SERVICE_ID_ANY, s.ep, cr_evd,
				  &rsp2), RAPT_ESTATE);
	EXPECT_RC(rapt_ep_reset(s.ep), c->attr.caps & RAPT_CAP_EP_RESET ?
		  RAPT_ESTATE : RAPT_ENOTSUP);
	EXPECT_RC(rapt_ia_close(c->ia), RAPT_EBUSY);
	TRY(RSP_INFO_IS(rsp, s.ep, 0, 0));
	EXPECT_RC(rapt_rsp_query(rsp, NULL, 8), RAPT_EINVAL);
	REQUIRE_OK(conf_free(c, rsp));
	EXPECT_EP_STATE(s.ep, RAPT_EP_UNCONNECTED);
	EXPECT_RC(rapt_rsp_query(rsp, NULL, 8), RAPT_EBADHANDLE);
	/* Free again, and it can serve a new RSP. */
	TRY(rsp_open(c, s.ep, cr_evd, &rsp, &sid));
out:
	return;
}

static const struct conf_test rsp_tests[] = {
	{ "accept", "the RSP's one CR names it, is accepted only with its EP, and later requests are refused BUSY, then find no listener",
	  accept_active, accept_passive },
	{ "reject", "a rejected CR spends the RSP; its EP stays RESERVED until rapt_rsp_free gives it back UNCONNECTED",
	  t_reject, NULL },
	{ "create_checks", "rapt_rsp_create refuses bad arguments and a reserved EP, leaving the EP as it was",
	  t_create_checks, NULL },
};

CONF_SUITE(conf_suite_rsp, "rsp", "reserved service points (API 1.3)",
	   rsp_tests);
