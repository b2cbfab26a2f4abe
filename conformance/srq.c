/* SPDX-License-Identifier: MIT */
/*
 * Area "srq" (API 1.3): shared receive queues.  EPs created on one SRQ
 * consume its receives oldest first; each completion goes to the EP's
 * receive EVD and names the EP the message arrived on; the low-watermark
 * event fires once each time the posted receives fall below the mark; and
 * the contract for an empty SRQ holds: the connection the message arrived
 * on breaks on both sides, nothing is delivered, and the SRQ's other
 * connections go on.  A provider without RAPT_CAP_SRQ must refuse
 * rapt_srq_create() with RAPT_ENOTSUP: skipped.
 */
#include "config.h"

#include <string.h>

#include "conf.h"

#define NEP 3		/* connections on one SRQ */
#define RSIZE 64	/* bytes per SRQ receive */
#define SEND_OFF 8192	/* where the active side builds its messages */

/* Passive EPs on one SRQ, each connected to an active EP of this IA. */
struct rig {
	struct conf_ep_set ps;	/* passive EVDs; its buffer: the SRQ's */
	struct conf_ep_set as;	/* active EVDs and send buffer */
	struct conf_listener l;
	struct rapt_srq *srq;
	struct rapt_ep *p[NEP];
	struct rapt_ep *a[NEP];
};

static const struct rapt_srq_attr srq_attr_small = {
	.max_recv = 4, .max_recv_sge = 1,
};

static int rig_open(struct conf_ctx *c, struct rig *r, uint32_t max,
		    uint32_t lw)
{
	struct rapt_srq_attr a = { .max_recv = max, .max_recv_sge = 1,
				   .low_watermark = lw };

	memset(r, 0, sizeof(*r));
	TRY(conf_set_create(c, &r->ps, NULL));
	TRY(conf_set_create(c, &r->as, NULL));
	TRY(conf_listen(c, &r->l, NULL));
	REQUIRE_OK(rapt_srq_create(c->pz, &a, &r->srq));
	conf_track(c, CONF_OBJ_SRQ, r->srq);
	return 0;
out:
	return -1;
}

/* Connection @i: a new EP on the SRQ accepts a new active EP. */
static int rig_connect(struct conf_ctx *c, struct rig *r, unsigned int i)
{
	struct rapt_event ev;
	struct rapt_cr *cr;

	REQUIRE_OK(rapt_ep_create_with_srq(c->pz, r->srq, r->ps.recv_evd,
					   r->ps.req_evd, r->ps.conn_evd,
					   NULL, &r->p[i]));
	conf_track(c, CONF_OBJ_EP, r->p[i]);
	TRY(conf_set_ep(c, &r->as, NULL, &r->a[i]));
	TRY(conf_self_connect(c, r->a[i], r->l.sid));
	TRY(conf_get_cr(c, &r->l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	REQUIRE_OK(rapt_cr_accept(cr, r->p[i], NULL, 0));
	conf_untrack(c, cr);
	TRY(EXPECT_EVENT(r->ps.conn_evd, RAPT_EV_ESTABLISHED, &ev));
	EXPECT(ev.u.conn.ep == r->p[i]);
	TRY(EXPECT_EVENT(r->as.conn_evd, RAPT_EV_ESTABLISHED, &ev));
	EXPECT(ev.u.conn.ep == r->a[i]);
	return 0;
out:
	return -1;
}

/* Post SRQ receives @first..@first+@n-1: cookie i at ps.buf + i * RSIZE. */
static int srq_post(struct conf_ctx *c, struct rig *r, unsigned int first,
		    unsigned int n)
{
	struct rapt_sge sge;
	unsigned int i;

	for (i = first; i < first + n; i++) {
		sge.addr = (uintptr_t)(r->ps.buf + i * RSIZE);
		sge.length = RSIZE;
		sge.lkey = r->ps.mi.lkey;
		if (!EXPECT_OK(rapt_srq_post_recv(r->srq, &sge, 1, i)))
			return -1;
	}
	return 0;
}

/* Active EP @i sends @len bytes of pattern @seed; wait for its send. */
static int send_from(struct conf_ctx *c, struct rig *r, unsigned int i,
		     uint32_t len, uint32_t seed)
{
	struct rapt_sge sge = {
		.addr = (uintptr_t)(r->as.buf + SEND_OFF),
		.length = len,
		.lkey = r->as.mi.lkey,
	};

	conf_fill(r->as.buf + SEND_OFF, len, seed);
	REQUIRE_OK(rapt_ep_post_send(r->a[i], &sge, 1, seed, 0));
	TRY(EXPECT_DTO(r->as.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, seed,
		       NULL));
	return 0;
out:
	return -1;
}

static int srq_posted(struct conf_ctx *c, struct rapt_srq *srq)
{
	struct rapt_srq_info si;

	if (!EXPECT_OK(rapt_srq_query(srq, &si, sizeof(si))))
		return -1;
	return (int)si.posted;
}

/* Attributes, limits, depth, the EP rules and the busy rule. */
static void t_objects(struct conf_ctx *c)
{
	const struct rapt_ia_attr *ia = &c->attr;
	struct rapt_srq_attr a = srq_attr_small;
	struct rapt_srq *srq, *tmp;
	enum rapt_handle_type ht;
	struct rapt_srq_info si;
	struct conf_ep_set s;
	struct rapt_sge sge;
	struct rapt_pz *pz2;
	struct rapt_ep *ep;
	unsigned int i;

	SKIP_UNLESS_CAP(RAPT_CAP_SRQ, rapt_srq_create(c->pz, &a, &tmp));
	EXPECT_RC(rapt_srq_create(c->pz, NULL, &tmp), RAPT_EINVAL);
	EXPECT_RC(rapt_srq_create(c->pz, &a, NULL), RAPT_EINVAL);
	a.max_recv = 0;
	EXPECT_RC(rapt_srq_create(c->pz, &a, &tmp), RAPT_EINVAL);
	a.max_recv = ia->max_srq_recv + 1;
	if (a.max_recv)
		EXPECT_RC(rapt_srq_create(c->pz, &a, &tmp), RAPT_ERANGE);
	a = srq_attr_small;
	a.max_recv_sge = ia->max_srq_sge + 1;
	EXPECT_RC(rapt_srq_create(c->pz, &a, &tmp), RAPT_ERANGE);
	a = srq_attr_small;
	a.low_watermark = a.max_recv + 1;
	EXPECT_RC(rapt_srq_create(c->pz, &a, &tmp), RAPT_ERANGE);
	a = srq_attr_small;
	a.flags = 1;
	EXPECT_RC(rapt_srq_create(c->pz, &a, &tmp), RAPT_EINVAL);
	TRY(conf_set_create(c, &s, NULL));
	REQUIRE_OK(rapt_srq_create(c->pz, &srq_attr_small, &srq));
	conf_track(c, CONF_OBJ_SRQ, srq);
	REQUIRE_OK(rapt_handle_type(srq, &ht));
	EXPECT_EQ(ht, RAPT_HANDLE_SRQ);
	REQUIRE_OK(rapt_srq_query(srq, &si, sizeof(si)));
	EXPECT_EQU(si.attr.max_recv, 4);
	EXPECT_EQU(si.attr.max_recv_sge, 1);
	EXPECT_EQU(si.posted, 0);
	EXPECT_EQU(si.neps, 0);
	sge.addr = (uintptr_t)s.buf;
	sge.length = RSIZE;
	sge.lkey = s.mi.lkey;
	for (i = 0; i < 4; i++)
		REQUIRE_OK(rapt_srq_post_recv(srq, &sge, 1, i));
	EXPECT_RC(rapt_srq_post_recv(srq, &sge, 1, 9), RAPT_ENOSPC);
	EXPECT_RC(rapt_srq_post_recv(srq, &sge, 2, 9), RAPT_EINVAL);
	EXPECT_RC(rapt_srq_post_recv(srq, NULL, 1, 9), RAPT_EINVAL);
	EXPECT_EQ(srq_posted(c, srq), 4);
	/* Never below what is posted; up to the IA's limit. */
	EXPECT_RC(rapt_srq_resize(srq, 3, 0), RAPT_ERANGE);
	EXPECT_RC(rapt_srq_resize(srq, 0, 0), RAPT_EINVAL);
	EXPECT_RC(rapt_srq_resize(srq, 8, 9), RAPT_ERANGE);
	REQUIRE_OK(rapt_srq_resize(srq, 8, 2));
	for (i = 4; i < 8; i++)
		REQUIRE_OK(rapt_srq_post_recv(srq, &sge, 1, i));
	EXPECT_RC(rapt_srq_post_recv(srq, &sge, 1, 9), RAPT_ENOSPC);
	REQUIRE_OK(rapt_srq_query(srq, &si, sizeof(si)));
	EXPECT_EQU(si.attr.max_recv, 8);
	EXPECT_EQU(si.attr.low_watermark, 2);
	EXPECT_EQU(si.posted, 8);
	/* EPs: of the SRQ's PZ only; their receives are the SRQ's. */
	REQUIRE_OK(rapt_pz_create(c->ia, &pz2));
	EXPECT_RC(rapt_ep_create_with_srq(pz2, srq, NULL, NULL, s.conn_evd,
					  NULL, &ep), RAPT_EINVAL);
	EXPECT_OK(rapt_pz_free(pz2));
	EXPECT_RC(rapt_ep_create_with_srq(c->pz, NULL, NULL, NULL,
					  s.conn_evd, NULL, &ep),
		  RAPT_EBADHANDLE);
	REQUIRE_OK(rapt_ep_create_with_srq(c->pz, srq, s.recv_evd, NULL,
					   s.conn_evd, NULL, &ep));
	conf_track(c, CONF_OBJ_EP, ep);
	EXPECT_RC(rapt_ep_post_recv(ep, &sge, 1, 0), RAPT_EINVAL);
	REQUIRE_OK(rapt_srq_query(srq, &si, sizeof(si)));
	EXPECT_EQU(si.neps, 1);
	EXPECT_RC(rapt_srq_free(srq), RAPT_EBUSY);
	EXPECT_RC(rapt_pz_free(c->pz), RAPT_EBUSY);
	REQUIRE_OK(conf_free(c, ep));
	EXPECT_EMPTY(s.recv_evd, 0);	/* the SRQ's receives never flush */
	REQUIRE_OK(conf_free(c, srq));
	EXPECT_RC(rapt_srq_query(srq, &si, sizeof(si)), RAPT_EBADHANDLE);
out:
	return;
}

/* Every message takes the SRQ's oldest receive; completions name the EP. */
static void t_shared(struct conf_ctx *c)
{
	struct rapt_srq_attr a = srq_attr_small;
	unsigned int i, j, k, seen[NEP] = { 0 };
	struct rapt_ep_status st;
	struct rapt_event ev;
	struct rapt_srq *tmp;
	struct rig r;

	SKIP_UNLESS_CAP(RAPT_CAP_SRQ, rapt_srq_create(c->pz, &a, &tmp));
	TRY(rig_open(c, &r, 8, 0));
	TRY(srq_post(c, &r, 0, 8));
	for (i = 0; i < NEP; i++)
		TRY(rig_connect(c, &r, i));
	/* Two messages from each, interleaved: 0 1 2 0 1 2. */
	for (k = 0; k < 2; k++)
		for (i = 0; i < NEP; i++)
			TRY(send_from(c, &r, i, 20 + i, i * 10 + k));
	for (k = 0; k < 2 * NEP; k++) {
		TRY(EXPECT_DTO(r.ps.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS,
			       k, &ev));
		for (j = 0; j < NEP && r.p[j] != ev.u.dto.ep; j++)
			;
		REQUIRE_MSG(j < NEP, "receive %u names no EP of the SRQ", k);
		EXPECT_EQU(ev.u.dto.length, 20 + j);
		EXPECT_MSG(conf_verify(r.ps.buf + k * RSIZE, 20 + j,
				       j * 10 + seen[j]) < 0,
			   "receive %u: not EP %u's message %u", k, j,
			   seen[j]);
		seen[j]++;
	}
	for (j = 0; j < NEP; j++)
		EXPECT_EQU(seen[j], 2);
	EXPECT_EQ(srq_posted(c, r.srq), 2);
	if (c->attr.caps & RAPT_CAP_EP_STATUS) {
		REQUIRE_OK(rapt_ep_get_status(r.p[0], &st, sizeof(st)));
		EXPECT_EQU(st.recv_posted, 0);
	}
	/* A disconnect flushes nothing of the SRQ's. */
	REQUIRE_OK(rapt_ep_disconnect(r.p[0], RAPT_CLOSE_ABRUPT, NULL, 0));
	TRY(EXPECT_EVENT(r.ps.conn_evd, RAPT_EV_DISCONNECTED, &ev));
	EXPECT_EMPTY(r.ps.recv_evd, 0);
	EXPECT_EQ(srq_posted(c, r.srq), 2);
	TRY(send_from(c, &r, 1, 21, 77));
	TRY(EXPECT_DTO(r.ps.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 6,
		       &ev));
	EXPECT(ev.u.dto.ep == r.p[1]);
out:
	return;
}

static int expect_watermark(struct conf_ctx *c, struct rapt_evd *aevd,
			    struct rapt_srq *srq, uint64_t left)
{
	struct rapt_event ev;

	TRY(EXPECT_EVENT(aevd, RAPT_EV_ASYNC_SRQ_LOW_WATERMARK, &ev));
	EXPECT(ev.u.async.handle == (void *)srq);
	EXPECT_EQU(ev.u.async.count, left);
	return 0;
out:
	return -1;
}

/* Once per fall below the mark; posts back to it re-arm the event. */
static void t_low_watermark(struct conf_ctx *c)
{
	struct rapt_srq_attr a = srq_attr_small;
	struct rapt_evd *aevd;
	struct rapt_srq *tmp;
	struct rig r;
	unsigned int k;

	SKIP_UNLESS_CAP(RAPT_CAP_SRQ, rapt_srq_create(c->pz, &a, &tmp));
	REQUIRE_OK(conf_evd_create(c, 16, RAPT_EVD_ASYNC, &aevd));
	TRY(rig_open(c, &r, 8, 3));
	TRY(srq_post(c, &r, 0, 4));
	TRY(rig_connect(c, &r, 0));
	/* 4 -> 3: not below; 3 -> 2: the event, with 2 left; 2 -> 1: no
	 * second one.  A receive's completion comes after its event. */
	for (k = 0; k < 3; k++) {
		TRY(send_from(c, &r, 0, 8, k));
		TRY(EXPECT_DTO(r.ps.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS,
			       k, NULL));
		if (k == 1)
			TRY(expect_watermark(c, aevd, r.srq, 2));
		EXPECT_EMPTY(aevd, 0);
	}
	/* Back to 3 re-arms it: 3 -> 2 fires again. */
	TRY(srq_post(c, &r, 4, 2));
	TRY(send_from(c, &r, 0, 8, 3));
	TRY(EXPECT_DTO(r.ps.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 3,
		       NULL));
	TRY(expect_watermark(c, aevd, r.srq, 2));
	/* So does a resize, even below the mark. */
	REQUIRE_OK(rapt_srq_resize(r.srq, 8, 3));
	TRY(send_from(c, &r, 0, 8, 4));
	TRY(EXPECT_DTO(r.ps.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 4,
		       NULL));
	TRY(expect_watermark(c, aevd, r.srq, 1));
	EXPECT_EMPTY(aevd, 0);
out:
	return;
}

/* The contract for an empty SRQ: that connection breaks, on both sides;
 * nothing is delivered; the SRQ's other connections go on. */
static void t_empty(struct conf_ctx *c)
{
	struct rapt_srq_attr a = srq_attr_small;
	struct rapt_event ev;
	struct rapt_srq *tmp;
	struct rapt_sge sge;
	struct rig r;

	SKIP_UNLESS_CAP(RAPT_CAP_SRQ, rapt_srq_create(c->pz, &a, &tmp));
	TRY(rig_open(c, &r, 4, 0));
	TRY(rig_connect(c, &r, 0));
	TRY(rig_connect(c, &r, 1));
	conf_fill(r.as.buf + SEND_OFF, 16, 5);
	sge.addr = (uintptr_t)(r.as.buf + SEND_OFF);
	sge.length = 16;
	sge.lkey = r.as.mi.lkey;
	REQUIRE_OK(rapt_ep_post_send(r.a[0], &sge, 1, 5, 0));
	/* The receiver's end is BROKEN where it learns why: not on IB,
	 * where it answers with an RNR NAK, which is no error of its own
	 * (the sender asked for no retries: its connection breaks), nor
	 * where the device keeps its Terminates to itself (siw). */
	TRY(conf_wait(c, r.ps.conn_evd, conf_tmo(c, CONF_TMO_MS), &ev));
	EXPECT_MSG(ev.u.conn.ep == r.p[0] &&
		   (ev.type == RAPT_EV_BROKEN ||
		    ((conf_rnr_nak(c) ||
		      !(c->attr.caps & RAPT_CAP_PEER_ERRORS)) &&
		     ev.type == RAPT_EV_DISCONNECTED)),
		   "the receiver saw %s, expected BROKEN",
		   rapt_event_name(ev.type));
	TRY(conf_wait(c, r.as.conn_evd, conf_tmo(c, CONF_TMO_MS), &ev));
	EXPECT_MSG(ev.u.conn.ep == r.a[0] &&
		   (ev.type == RAPT_EV_BROKEN ||
		    (!(c->attr.caps & RAPT_CAP_PEER_ERRORS) &&
		     ev.type == RAPT_EV_DISCONNECTED)),
		   "the sender saw %s, expected BROKEN", rapt_event_name(ev.type));
	/* The send itself completes, as written or as failed. */
	TRY(conf_wait(c, r.as.req_evd, conf_tmo(c, CONF_TMO_MS), &ev));
	EXPECT(ev.type == RAPT_EV_DTO && ev.u.dto.ep == r.a[0] &&
	       ev.u.dto.cookie == 5);
	EXPECT_EMPTY(r.ps.recv_evd, 0);
	EXPECT_EQ(srq_posted(c, r.srq), 0);
	/* The other connection on the SRQ is untouched. */
	TRY(srq_post(c, &r, 0, 1));
	TRY(send_from(c, &r, 1, 12, 6));
	TRY(EXPECT_DTO(r.ps.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0,
		       &ev));
	EXPECT(ev.u.dto.ep == r.p[1]);
	EXPECT(conf_verify(r.ps.buf, 12, 6) < 0);
out:
	return;
}

#define STORM_MSGS 10	/* per EP */

/* Connect @n EPs on @srq, passive @p[i] to active @a[i]. */
static int storm_connect(struct conf_ctx *c, struct rig *r, unsigned int n,
			 struct rapt_ep **p, struct rapt_ep **a)
{
	struct rapt_event ev;
	struct rapt_cr *cr;
	unsigned int i;

	for (i = 0; i < n; i++) {
		REQUIRE_OK(rapt_ep_create_with_srq(c->pz, r->srq,
						   r->ps.recv_evd, NULL,
						   r->ps.conn_evd, NULL,
						   &p[i]));
		conf_track(c, CONF_OBJ_EP, p[i]);
		TRY(conf_set_ep(c, &r->as, NULL, &a[i]));
		TRY(conf_self_connect(c, a[i], r->l.sid));
		TRY(conf_get_cr(c, &r->l, conf_tmo(c, CONF_TMO_MS), &cr,
				NULL));
		REQUIRE_OK(rapt_cr_accept(cr, p[i], NULL, 0));
		conf_untrack(c, cr);
		TRY(EXPECT_EVENT(r->ps.conn_evd, RAPT_EV_ESTABLISHED, &ev));
		TRY(EXPECT_EVENT(r->as.conn_evd, RAPT_EV_ESTABLISHED, &ev));
	}
	return 0;
out:
	return -1;
}

/*
 * Every EP sends STORM_MSGS messages at once into one SRQ that holds a
 * receive for each: every message arrives exactly once, in its EP's
 * order, in the receive the SRQ handed out next (cookies in order).
 * Message j of EP i carries (i, j) in its first 8 bytes.
 */
static void t_storm(struct conf_ctx *c)
{
	unsigned int n = c->params.flags & CONF_P_LONG ? 1000 : 100;
	unsigned int total = n * STORM_MSGS, i, j, k;
	struct rapt_srq_attr a = srq_attr_small;
	struct conf_set_opts o = { 0 };
	struct rapt_ep **p, **act;
	struct rapt_srq *tmp;
	struct rapt_event ev;
	struct rapt_sge sge;
	unsigned int *next;
	uint32_t *msg, w[2];
	struct rig r;

	SKIP_UNLESS_CAP(RAPT_CAP_SRQ, rapt_srq_create(c->pz, &a, &tmp));
	if (total > c->attr.max_srq_recv || total + 64 > c->attr.max_evd_qlen) {
		conf_skip(c, "%u receives exceed the IA's SRQ or EVD limits",
			  total);
		goto out;
	}
	p = conf_alloc(c, n * sizeof(*p));
	act = conf_alloc(c, n * sizeof(*act));
	next = conf_alloc(c, n * sizeof(*next));
	REQUIRE(p && act && next);
	memset(next, 0, n * sizeof(*next));
	memset(&r, 0, sizeof(r));
	o.qlen = total + 64;
	o.buf_len = (size_t)total * 8 + 8;
	TRY(conf_set_create(c, &r.ps, &o));
	TRY(conf_set_create(c, &r.as, &o));
	TRY(conf_listen(c, &r.l, NULL));
	a.max_recv = total;
	REQUIRE_OK(rapt_srq_create(c->pz, &a, &r.srq));
	conf_track(c, CONF_OBJ_SRQ, r.srq);
	for (k = 0; k < total; k++) {
		sge.addr = (uintptr_t)(r.ps.buf + (size_t)k * 8);
		sge.length = 8;
		sge.lkey = r.ps.mi.lkey;
		REQUIRE_OK(rapt_srq_post_recv(r.srq, &sge, 1, k));
	}
	TRY(storm_connect(c, &r, n, p, act));
	/* All the sends, EP after EP, message after message, unwaited. */
	msg = (uint32_t *)r.as.buf;
	for (j = 0; j < STORM_MSGS; j++)
		for (i = 0; i < n; i++) {
			k = j * n + i;
			msg[2 * k] = i;
			msg[2 * k + 1] = j;
			sge.addr = (uintptr_t)&msg[2 * k];
			sge.length = 8;
			sge.lkey = r.as.mi.lkey;
			REQUIRE_OK(rapt_ep_post_send(act[i], &sge, 1, k, 0));
		}
	for (k = 0; k < total; k++)
		TRY(EXPECT_DTO(r.as.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS,
			       ~0ULL, NULL));
	for (k = 0; k < total; k++) {
		TRY(EXPECT_DTO(r.ps.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS,
			       k, &ev));
		memcpy(w, r.ps.buf + (size_t)k * 8, sizeof(w));
		REQUIRE_MSG(w[0] < n && ev.u.dto.ep == p[w[0]],
			    "receive %u: message of EP %u arrived on another EP",
			    k, w[0]);
		REQUIRE_MSG(w[1] == next[w[0]],
			    "receive %u: EP %u's message %u, expected %u", k,
			    w[0], w[1], next[w[0]]);
		next[w[0]]++;
	}
	for (i = 0; i < n; i++)
		EXPECT_EQU(next[i], STORM_MSGS);
	EXPECT_EQ(srq_posted(c, r.srq), 0);
	EXPECT_EMPTY(r.ps.conn_evd, 0);
out:
	return;
}

static const struct conf_test srq_tests[] = {
	{ "objects", "attribute and limit checks, post up to the depth, resize never below what is posted, EPs only of the SRQ's PZ and without receives of their own, busy while EPs use it",
	  t_objects, NULL },
	{ "shared", "three EPs on one SRQ: receives taken oldest first, each completion names its EP and holds that EP's message; a disconnect flushes nothing of the SRQ's",
	  t_shared, NULL },
	{ "low_watermark", "ASYNC_SRQ_LOW_WATERMARK fires once each time the receives fall below the mark, again after posts reach it or a resize",
	  t_low_watermark, NULL },
	{ "empty", "a message that finds the SRQ empty breaks its connection on both sides and is not delivered; the SRQ's other EPs go on",
	  t_empty, NULL },
	{ "storm", "100 EPs (1000 with --long) send 10 messages each at once into one SRQ: every message arrives once, in its EP's order, naming its EP",
	  t_storm, NULL },
};

CONF_SUITE(conf_suite_srq, "srq", "shared receive queues (API 1.3)",
	   srq_tests);
