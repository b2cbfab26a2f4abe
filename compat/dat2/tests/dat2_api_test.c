// SPDX-License-Identifier: MIT
/*
 * The DAT calls uDAPL's test programs do not check, through libdat2 and
 * librapt-dat2.so, in one process over loopback: private data both ways
 * (connect, accept, reject), EP states and status, an RSP, an EP reset
 * and reuse, a conn qual above rapt's service-id range, software events,
 * the events of an EP freed with its connection up, RMRs (memory
 * windows: bind, unbind, a peer's RDMA through one and refused outside
 * it, Send with Invalidate), and the calls that must answer
 * DAT_NOT_IMPLEMENTED.  A table of named
 * cases; run by dat2.sh with DAT_OVERRIDE set.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dat2/udat.h>
#include <dat2/udat_redirection.h>

/*
 * libdat2 2.1 exports no function for three DAT 2.0 calls; a consumer
 * reaches them through the provider table, with DAT's own macros.
 */
#define dat_rmr_create_for_ep DAT_RMR_CREATE_FOR_EP
#define dat_ep_post_send_with_invalidate DAT_EP_POST_SEND_WITH_INVALIDATE
#define dat_ep_post_rdma_read_to_rmr DAT_EP_POST_RDMA_READ_TO_RMR

#define IA_NAME "rapt-tcp:lo"
#define TMO 5000000u	/* 5 s */

#define CHECK(c) do { if (!(c)) { \
	fprintf(stderr, "  %s:%d: %s\n", __FILE__, __LINE__, #c); \
	return -1; } } while (0)
#define OK(call) do { DAT_RETURN r_ = (call); if (r_ != DAT_SUCCESS) { \
	fprintf(stderr, "  %s:%d: %s: 0x%x\n", __FILE__, __LINE__, #call, \
		(unsigned int)r_); return -1; } } while (0)

struct side {
	DAT_EVD_HANDLE conn, dto;
	DAT_EP_HANDLE ep;
};

static DAT_IA_HANDLE ia;
static DAT_PZ_HANDLE pz;
static DAT_EVD_HANDLE async_evd, cr_evd;
static struct sockaddr *ia_addr;

static int side_open(struct side *s)
{
	OK(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
			  &s->conn));
	OK(dat_evd_create(ia, 8, DAT_HANDLE_NULL,
			  DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG, &s->dto));
	OK(dat_ep_create(ia, pz, s->dto, s->dto, s->conn, NULL, &s->ep));
	return 0;
}

static int side_close(struct side *s)
{
	OK(dat_ep_free(s->ep));
	OK(dat_evd_free(s->dto));
	OK(dat_evd_free(s->conn));
	return 0;
}

/* The next event of @evd must be @num; its data in @ev. */
static int expect(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER num, DAT_EVENT *ev)
{
	DAT_COUNT nmore;

	OK(dat_evd_wait(evd, TMO, 1, ev, &nmore));
	if (ev->event_number != num) {
		fprintf(stderr, "  event 0x%x, wanted 0x%x\n",
			(unsigned int)ev->event_number, (unsigned int)num);
		return -1;
	}
	return 0;
}

/* Connect @a to @qual; the CR that arrives is returned in @cr. */
static int request(struct side *a, DAT_CONN_QUAL qual, const char *pd,
		   DAT_CR_HANDLE *cr)
{
	DAT_EVENT ev;

	OK(dat_ep_connect(a->ep, ia_addr, qual, TMO, (DAT_COUNT)strlen(pd) + 1,
			  (DAT_PVOID)pd, DAT_QOS_BEST_EFFORT,
			  DAT_CONNECT_DEFAULT_FLAG));
	if (expect(cr_evd, DAT_CONNECTION_REQUEST_EVENT, &ev))
		return -1;
	CHECK(ev.event_data.cr_arrival_event_data.conn_qual == qual);
	*cr = ev.event_data.cr_arrival_event_data.cr_handle;
	return 0;
}

static int disconnect(struct side *a, struct side *p)
{
	DAT_EVENT ev;

	OK(dat_ep_disconnect(a->ep, DAT_CLOSE_GRACEFUL_FLAG));
	if (expect(a->conn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev) ||
	    expect(p->conn, DAT_CONNECTION_EVENT_DISCONNECTED, &ev))
		return -1;
	return 0;
}

/* A connection with private data each way, states, a send, status. */
static int t_pdata_accept(void)
{
	struct side a, p;
	DAT_PSP_HANDLE psp;
	DAT_CR_HANDLE cr;
	DAT_CR_PARAM cp;
	DAT_EVENT ev;
	DAT_EP_STATE st;
	DAT_BOOLEAN ri, qi;
	const char *reply = "accepted";

	if (side_open(&a) || side_open(&p))
		return -1;
	OK(dat_psp_create(ia, 31001, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
	if (request(&a, 31001, "hello passive side", &cr))
		return -1;
	OK(dat_ep_get_status(a.ep, &st, NULL, NULL));
	CHECK(st == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
	OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
	CHECK(cp.private_data_size == 19);
	CHECK(!strcmp(cp.private_data, "hello passive side"));
	OK(dat_cr_accept(cr, p.ep, (DAT_COUNT)strlen(reply) + 1,
			 (DAT_PVOID)reply));
	if (expect(a.conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev))
		return -1;
	CHECK(ev.event_data.connect_event_data.private_data_size == 9);
	CHECK(!strcmp(ev.event_data.connect_event_data.private_data, reply));
	if (expect(p.conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev))
		return -1;
	OK(dat_ep_get_status(p.ep, &st, &ri, &qi));
	CHECK(st == DAT_EP_STATE_CONNECTED && ri && qi);
	if (disconnect(&a, &p))
		return -1;
	OK(dat_ep_get_status(a.ep, &st, NULL, NULL));
	CHECK(st == DAT_EP_STATE_DISCONNECTED);
	OK(dat_psp_free(psp));
	return side_close(&a) || side_close(&p);
}

/* A reject with private data: PEER_REJECTED carries it. */
static int t_pdata_reject(void)
{
	static char no[] = "no";
	struct side a;
	DAT_PSP_HANDLE psp;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;

	if (side_open(&a))
		return -1;
	OK(dat_psp_create(ia, 31002, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
	if (request(&a, 31002, "let me in", &cr))
		return -1;
	OK(dat_cr_reject(cr, 3, no));
	if (expect(a.conn, DAT_CONNECTION_EVENT_PEER_REJECTED, &ev))
		return -1;
	CHECK(ev.event_data.connect_event_data.private_data_size == 3);
	CHECK(!memcmp(ev.event_data.connect_event_data.private_data, "no", 3));
	OK(dat_psp_free(psp));
	return side_close(&a);
}

/* An RSP's CR names its EP, which accept takes when given none. */
static int t_rsp(void)
{
	struct side a, p;
	DAT_RSP_HANDLE rsp;
	DAT_CR_HANDLE cr;
	DAT_CR_PARAM cp;
	DAT_EVENT ev;
	DAT_EP_STATE st;

	if (side_open(&a) || side_open(&p))
		return -1;
	OK(dat_rsp_create(ia, 31003, p.ep, cr_evd, &rsp));
	OK(dat_ep_get_status(p.ep, &st, NULL, NULL));
	CHECK(st == DAT_EP_STATE_RESERVED);
	if (request(&a, 31003, "rsp", &cr))
		return -1;
	OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
	CHECK(cp.local_ep_handle == p.ep);
	OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
	if (expect(a.conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev) ||
	    expect(p.conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev) ||
	    disconnect(&a, &p))
		return -1;
	OK(dat_rsp_free(rsp));
	return side_close(&a) || side_close(&p);
}

/* A conn qual above 16 bits folds to the same service id both ways; a
 * reset EP connects again. */
static int t_big_qual_reset(void)
{
	const DAT_CONN_QUAL qual = 0x123456789ull;
	struct side a, p;
	DAT_PSP_HANDLE psp;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;
	int round;

	if (side_open(&a))
		return -1;
	OK(dat_psp_create(ia, qual, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
	for (round = 0; round < 2; round++) {
		if (side_open(&p) || request(&a, qual, "again", &cr))
			return -1;
		OK(dat_cr_accept(cr, p.ep, 0, NULL));
		if (expect(a.conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev) ||
		    expect(p.conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev) ||
		    disconnect(&a, &p) || side_close(&p))
			return -1;
		OK(dat_ep_reset(a.ep));
	}
	OK(dat_psp_free(psp));
	return side_close(&a);
}

/* dat_evd_post_se, and the software event it queues. */
static int t_software_event(void)
{
	DAT_EVD_HANDLE evd;
	DAT_EVENT ev;
	int token;

	OK(dat_evd_create(ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd));
	CHECK(dat_evd_dequeue(evd, &ev) == DAT_QUEUE_EMPTY);
	memset(&ev, 0, sizeof(ev));
	ev.event_number = DAT_SOFTWARE_EVENT;
	ev.event_data.software_event_data.pointer = &token;
	OK(dat_evd_post_se(evd, &ev));
	memset(&ev, 0, sizeof(ev));
	OK(dat_evd_dequeue(evd, &ev));
	CHECK(ev.event_number == DAT_SOFTWARE_EVENT);
	CHECK(ev.event_data.software_event_data.pointer == &token);
	CHECK(DAT_GET_TYPE(dat_evd_wait(evd, 1000, 1, &ev, NULL)) ==
	      DAT_TIMEOUT_EXPIRED);
	OK(dat_evd_free(evd));
	return 0;
}

/* What rapt has no object for answers so, and changes nothing. */
static int t_not_implemented(void)
{
	DAT_RMR_TRIPLET rt;
	DAT_DTO_COOKIE ck;
	DAT_RMR_HANDLE rmr;
	DAT_CNO_HANDLE cno;
	DAT_EP_HANDLE ep;
	DAT_EVD_HANDLE evd;
	struct side a;

	/* EP-scoped windows, and reads into one: rapt's are PZ-wide. */
	CHECK(DAT_GET_TYPE(dat_rmr_create_for_ep(pz, &rmr)) ==
	      DAT_MODEL_NOT_SUPPORTED);
	if (side_open(&a))
		return -1;
	memset(&rt, 0, sizeof(rt));
	ck.as_64 = 0;
	CHECK(DAT_GET_TYPE(dat_ep_post_rdma_read_to_rmr(a.ep, &rt, ck, &rt,
		DAT_COMPLETION_DEFAULT_FLAG)) == DAT_NOT_IMPLEMENTED);
	if (side_close(&a))
		return -1;
	CHECK(DAT_GET_TYPE(dat_cno_create(ia, DAT_OS_WAIT_PROXY_AGENT_NULL,
					  &cno)) == DAT_NOT_IMPLEMENTED);
	OK(dat_evd_create(ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
			  &evd));
	CHECK(DAT_GET_TYPE(dat_ep_create(ia, DAT_HANDLE_NULL, DAT_HANDLE_NULL,
					 DAT_HANDLE_NULL, evd, NULL, &ep)) ==
	      DAT_MODEL_NOT_SUPPORTED);
	OK(dat_evd_free(evd));
	return 0;
}

/* DAT_PSP_PROVIDER_FLAG: the CR comes with an EP, which takes a PZ and
 * EVDs by dat_ep_modify() and is accepted by dat_cr_accept(cr, NULL). */
static int t_provider_ep(void)
{
	struct side a, p;
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL qual;
	DAT_CR_HANDLE cr;
	DAT_CR_PARAM cp;
	DAT_EP_PARAM param;
	DAT_EP_STATE st;
	DAT_EVENT ev;

	if (side_open(&a) || side_open(&p))
		return -1;
	OK(dat_ep_free(p.ep));
	OK(dat_psp_create_any(ia, &qual, cr_evd, DAT_PSP_PROVIDER_FLAG, &psp));
	if (request(&a, qual, "made for me", &cr))
		return -1;
	OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
	CHECK(cp.local_ep_handle != DAT_HANDLE_NULL);
	p.ep = cp.local_ep_handle;
	OK(dat_ep_get_status(p.ep, &st, NULL, NULL));
	CHECK(st == DAT_EP_STATE_UNCONFIGURED_TENTATIVE);
	CHECK(DAT_GET_TYPE(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL)) ==
	      DAT_INVALID_STATE);
	memset(&param, 0, sizeof(param));
	param.pz_handle = pz;
	param.recv_evd_handle = p.dto;
	param.request_evd_handle = p.dto;
	param.connect_evd_handle = p.conn;
	OK(dat_ep_modify(p.ep, DAT_EP_FIELD_PZ_HANDLE |
			 DAT_EP_FIELD_RECV_EVD_HANDLE |
			 DAT_EP_FIELD_REQUEST_EVD_HANDLE |
			 DAT_EP_FIELD_CONNECT_EVD_HANDLE, &param));
	OK(dat_ep_get_status(p.ep, &st, NULL, NULL));
	CHECK(st == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING);
	OK(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
	if (expect(a.conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev) ||
	    expect(p.conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev) ||
	    disconnect(&a, &p))
		return -1;
	OK(dat_psp_free(psp));
	return side_close(&a) || side_close(&p);
}

/* Connect @a to @p through a PSP on @qual; both ESTABLISHED taken if
 * @take_p, else @p's left queued. */
static int connect_pair(struct side *a, struct side *p, DAT_CONN_QUAL qual,
			int take_p)
{
	DAT_PSP_HANDLE psp;
	DAT_CR_HANDLE cr;
	DAT_EVENT ev;

	OK(dat_psp_create(ia, qual, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
	if (request(a, qual, "x", &cr))
		return -1;
	OK(dat_cr_accept(cr, p->ep, 0, NULL));
	if (expect(a->conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev) ||
	    (take_p && expect(p->conn, DAT_CONNECTION_EVENT_ESTABLISHED, &ev)))
		return -1;
	OK(dat_psp_free(psp));
	return 0;
}

/* The next event of @evd is @num and names @ep. */
static int expect_ep(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER num,
		     DAT_EP_HANDLE ep)
{
	DAT_EVENT ev;

	if (expect(evd, num, &ev))
		return -1;
	CHECK(ev.event_data.connect_event_data.ep_handle == ep);
	return 0;
}

/*
 * An EP freed with its connection up, or with its events still queued:
 * as in uDAPL, the consumer still gets them, naming the freed handle, and
 * exactly one DISCONNECTED (dtestcm counts on it).
 */
static int t_freed_ep_events(void)
{
	struct side a, p;
	DAT_EP_HANDLE old;
	DAT_EP_STATE st;
	DAT_EVENT ev;
	int n;

	/* 1. Freed while connected: its free is a disconnect. */
	if (side_open(&a) || side_open(&p) || connect_pair(&a, &p, 31007, 1))
		return -1;
	old = p.ep;
	OK(dat_ep_free(p.ep));
	if (expect_ep(p.conn, DAT_CONNECTION_EVENT_DISCONNECTED, old) ||
	    expect_ep(a.conn, DAT_CONNECTION_EVENT_DISCONNECTED, a.ep))
		return -1;
	CHECK(DAT_GET_TYPE(dat_evd_dequeue(p.conn, &ev)) == DAT_QUEUE_EMPTY);
	OK(dat_ep_create(ia, pz, p.dto, p.dto, p.conn, NULL, &p.ep));
	if (side_close(&a) || side_close(&p))
		return -1;

	/* 2. Freed with its ESTABLISHED and DISCONNECTED both queued. */
	if (side_open(&a) || side_open(&p) || connect_pair(&a, &p, 31008, 0))
		return -1;
	OK(dat_ep_disconnect(a.ep, DAT_CLOSE_GRACEFUL_FLAG));
	if (expect_ep(a.conn, DAT_CONNECTION_EVENT_DISCONNECTED, a.ep))
		return -1;
	/* Wait until the passive side has seen the close (its state moves
	 * as its event is queued): at most TMO. */
	for (n = 0; n < 5000; n++) {
		OK(dat_ep_get_status(p.ep, &st, NULL, NULL));
		if (st == DAT_EP_STATE_DISCONNECTED)
			break;
		dat_evd_wait(a.dto, 1000, 1, &ev, NULL);	/* 1 ms pause */
	}
	CHECK(st == DAT_EP_STATE_DISCONNECTED);
	old = p.ep;
	OK(dat_ep_free(p.ep));
	if (expect_ep(p.conn, DAT_CONNECTION_EVENT_ESTABLISHED, old) ||
	    expect_ep(p.conn, DAT_CONNECTION_EVENT_DISCONNECTED, old))
		return -1;
	CHECK(DAT_GET_TYPE(dat_evd_dequeue(p.conn, &ev)) == DAT_QUEUE_EMPTY);
	OK(dat_ep_create(ia, pz, p.dto, p.dto, p.conn, NULL, &p.ep));
	return side_close(&a) || side_close(&p);
}

/* ---- RMR: memory windows --------------------------------------------- */

#define WIN_OFF 1024u	/* the window: mem[WIN_OFF, WIN_OFF + WIN_LEN) */
#define WIN_LEN 1024u
#define RECV_OFF 3072u	/* where the owner's receive lands */

/*
 * @p owns mem, registered with every right, and a window on it; @a has
 * buf, registered for local use: the source of its writes and sends,
 * the sink of its reads.
 */
struct rmr_rig {
	struct side a, p;
	unsigned char mem[4096], buf[4096];
	DAT_LMR_HANDLE mem_lmr, buf_lmr;
	DAT_LMR_CONTEXT mem_lctx, buf_lctx;
	DAT_RMR_HANDLE rmr;
};

static void triplet(DAT_LMR_TRIPLET *t, DAT_LMR_CONTEXT lctx, void *va,
		    DAT_SEG_LENGTH len)
{
	t->lmr_context = lctx;
	t->virtual_address = (DAT_VADDR)(uintptr_t)va;
	t->segment_length = len;
}

static int reg(unsigned char *va, DAT_VLEN len, DAT_MEM_PRIV_FLAGS priv,
	       DAT_LMR_HANDLE *lmr, DAT_LMR_CONTEXT *lctx)
{
	DAT_REGION_DESCRIPTION d;
	DAT_RMR_CONTEXT rctx;

	d.for_va = va;
	OK(dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, d, len, pz, priv,
			  DAT_VA_TYPE_VA, lmr, lctx, &rctx, NULL, NULL));
	return 0;
}

static int rig_open(struct rmr_rig *r, DAT_CONN_QUAL qual)
{
	memset(r->mem, 0, sizeof(r->mem));
	memset(r->buf, 0, sizeof(r->buf));
	if (side_open(&r->a) || side_open(&r->p) ||
	    connect_pair(&r->a, &r->p, qual, 1) ||
	    reg(r->mem, sizeof(r->mem), DAT_MEM_PRIV_ALL_FLAG, &r->mem_lmr,
		&r->mem_lctx) ||
	    reg(r->buf, sizeof(r->buf), DAT_MEM_PRIV_LOCAL_WRITE_FLAG |
		DAT_MEM_PRIV_LOCAL_READ_FLAG, &r->buf_lmr, &r->buf_lctx))
		return -1;
	OK(dat_rmr_create(pz, &r->rmr));
	return 0;
}

static int rig_close(struct rmr_rig *r)
{
	OK(dat_rmr_free(r->rmr));
	OK(dat_lmr_free(r->mem_lmr));
	OK(dat_lmr_free(r->buf_lmr));
	return side_close(&r->a) || side_close(&r->p);
}

/* Bind the window (len 0: unbind) through @p's EP; its completion must
 * come, name the RMR and carry @cookie. */
static int bind_wait(struct rmr_rig *r, DAT_SEG_LENGTH len,
		     DAT_MEM_PRIV_FLAGS priv, uint64_t cookie,
		     DAT_RMR_CONTEXT *ctx)
{
	DAT_RMR_BIND_COMPLETION_EVENT_DATA *x;
	DAT_LMR_TRIPLET t;
	DAT_RMR_COOKIE ck;
	DAT_EVENT ev;

	triplet(&t, r->mem_lctx, r->mem + WIN_OFF, len);
	ck.as_64 = cookie;
	OK(dat_rmr_bind(r->rmr, len ? r->mem_lmr : DAT_HANDLE_NULL, &t, priv,
			DAT_VA_TYPE_VA, r->p.ep, ck,
			DAT_COMPLETION_DEFAULT_FLAG, ctx));
	if (expect(r->p.dto, DAT_RMR_BIND_COMPLETION_EVENT, &ev))
		return -1;
	x = &ev.event_data.rmr_completion_event_data;
	CHECK(x->rmr_handle == r->rmr && x->user_cookie.as_64 == cookie);
	CHECK(x->status == DAT_RMR_BIND_SUCCESS);
	return 0;
}

static int rmr_context_now(struct rmr_rig *r, DAT_RMR_CONTEXT *ctx)
{
	DAT_RMR_PARAM rp;

	OK(dat_rmr_query(r->rmr, DAT_RMR_FIELD_ALL, &rp));
	*ctx = rp.rmr_context;
	return 0;
}

/* @a's RDMA write or read of @len bytes at mem + @off through @ctx. */
static int rdma(struct rmr_rig *r, int write, DAT_RMR_CONTEXT ctx,
		unsigned int off, unsigned int len, DAT_EVENT *ev)
{
	DAT_LMR_TRIPLET l;
	DAT_RMR_TRIPLET rt;
	DAT_DTO_COOKIE ck;

	triplet(&l, r->buf_lctx, r->buf, len);
	rt.rmr_context = ctx;
	rt.virtual_address = (DAT_VADDR)(uintptr_t)(r->mem + off);
	rt.segment_length = len;
	ck.as_64 = 77;
	if (write)
		OK(dat_ep_post_rdma_write(r->a.ep, 1, &l, ck, &rt,
					  DAT_COMPLETION_DEFAULT_FLAG));
	else
		OK(dat_ep_post_rdma_read(r->a.ep, 1, &l, ck, &rt,
					 DAT_COMPLETION_DEFAULT_FLAG));
	return expect(r->a.dto, DAT_DTO_COMPLETION_EVENT, ev);
}

/*
 * The refused RDMA of rdma(): the requester learns it, both sides go
 * down, and nothing of @p's memory changed.  A read completes
 * REMOTE_ACCESS; a write may have completed locally before the owner
 * refused it (iWARP's, and rapt's tcp provider's), and then the
 * requester learns it from its connection's BROKEN.
 */
static int refused(struct rmr_rig *r, int write, DAT_RMR_CONTEXT ctx,
		   unsigned int off, unsigned int len)
{
	unsigned char before[sizeof(r->mem)];
	DAT_DTO_COMPLETION_STATUS st;
	DAT_EVENT ev;

	memcpy(before, r->mem, sizeof(before));
	memset(r->buf, write ? 'x' : 0, len);
	if (rdma(r, write, ctx, off, len, &ev))
		return -1;
	st = ev.event_data.dto_completion_event_data.status;
	CHECK(st == DAT_DTO_ERR_REMOTE_ACCESS ||
	      (write && st == DAT_DTO_SUCCESS));
	if (expect(r->a.conn, DAT_CONNECTION_EVENT_BROKEN, &ev) ||
	    expect(r->p.conn, DAT_CONNECTION_EVENT_BROKEN, &ev))
		return -1;
	CHECK(!memcmp(before, r->mem, sizeof(before)));
	if (!write)
		CHECK(!r->buf[0] && !memcmp(r->buf, r->buf + 1, len - 1));
	return 0;
}

/* A Send with Invalidate of @ctx from @a: @p's receive says so, and the
 * window is closed. */
static int send_inv(struct rmr_rig *r, DAT_RMR_CONTEXT ctx)
{
	DAT_DTO_COMPLETION_EVENT_DATA *x;
	DAT_LMR_TRIPLET l;
	DAT_DTO_COOKIE ck;
	DAT_EVENT ev;

	triplet(&l, r->mem_lctx, r->mem + RECV_OFF, 64);
	ck.as_64 = 5;
	OK(dat_ep_post_recv(r->p.ep, 1, &l, ck, DAT_COMPLETION_DEFAULT_FLAG));
	triplet(&l, r->buf_lctx, r->buf, 8);
	OK(dat_ep_post_send_with_invalidate(r->a.ep, 1, &l, ck,
					    DAT_COMPLETION_DEFAULT_FLAG,
					    DAT_TRUE, ctx));
	if (expect(r->a.dto, DAT_DTO_COMPLETION_EVENT, &ev) ||
	    expect(r->p.dto, DAT_DTO_COMPLETION_EVENT, &ev))
		return -1;
	x = &ev.event_data.dto_completion_event_data;
	CHECK(x->status == DAT_DTO_SUCCESS && x->transfered_length == 8);
	CHECK(x->operation == DAT_DTO_RECEIVE_WITH_INVALIDATE);
	CHECK(x->rmr_context == ctx);
	if (rmr_context_now(r, &ctx))
		return -1;
	CHECK(ctx == 0);
	return 0;
}

/* A window of remote write only over part of an LMR: the peer writes
 * inside it (the data arrives, nothing around it changes), invalidates
 * it by a send; unbound and bound again it has a new context; a write
 * past its end is refused and breaks the connection. */
static int t_rmr_write(void)
{
	DAT_RMR_CONTEXT c1, c2, c3, now;
	struct rmr_rig r;
	DAT_RMR_PARAM rp;
	DAT_EVENT ev;
	unsigned int i;

	if (rig_open(&r, 31010))
		return -1;
	OK(dat_rmr_query(r.rmr, DAT_RMR_FIELD_ALL, &rp));
	CHECK(rp.rmr_context == 0 && rp.pz_handle == pz &&
	      rp.rmr_scope == DAT_RMR_SCOPE_PZ);
	if (bind_wait(&r, WIN_LEN, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, 1, &c1))
		return -1;
	OK(dat_rmr_query(r.rmr, DAT_RMR_FIELD_ALL, &rp));
	CHECK(rp.rmr_context == c1 && c1 != 0);
	CHECK(rp.mem_priv == DAT_MEM_PRIV_REMOTE_WRITE_FLAG);
	CHECK(rp.lmr_triplet.virtual_address ==
	      (DAT_VADDR)(uintptr_t)(r.mem + WIN_OFF));
	CHECK(rp.lmr_triplet.segment_length == WIN_LEN &&
	      rp.lmr_triplet.lmr_context == r.mem_lctx);
	/* An LMR stays while a window is bound over it. */
	CHECK(DAT_GET_TYPE(dat_lmr_free(r.mem_lmr)) == DAT_INVALID_STATE);
	memset(r.buf, 'w', 512);
	if (rdma(&r, 1, c1, WIN_OFF + 256, 512, &ev))
		return -1;
	CHECK(ev.event_data.dto_completion_event_data.status ==
	      DAT_DTO_SUCCESS);
	/* The send comes after the write: once it is in, so is the data. */
	if (send_inv(&r, c1))
		return -1;
	for (i = 0; i < RECV_OFF; i++)
		CHECK(r.mem[i] == (i >= WIN_OFF + 256 && i < WIN_OFF + 768 ?
				   'w' : 0));
	if (bind_wait(&r, WIN_LEN, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, 2, &c2) ||
	    bind_wait(&r, 0, 0, 3, NULL) || rmr_context_now(&r, &now))
		return -1;
	CHECK(now == 0);
	if (bind_wait(&r, WIN_LEN, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, 4, &c3))
		return -1;
	CHECK(c2 != c1 && c3 != c2 && c3 != c1);
	if (refused(&r, 1, c3, WIN_OFF + WIN_LEN - 256, 512))
		return -1;
	return rig_close(&r);
}

/* A read through a window bound for remote write only is refused; a
 * bind asked for no completion gives none (the next one is the
 * unbind's). */
static int t_rmr_read(void)
{
	DAT_PROVIDER_ATTR pa;
	DAT_RMR_CONTEXT ctx;
	DAT_IA_ATTR attr;
	DAT_LMR_TRIPLET t;
	DAT_RMR_COOKIE ck;
	struct rmr_rig r;
	DAT_EVENT ev;

	OK(dat_ia_query(ia, NULL, DAT_IA_FIELD_ALL, &attr,
			DAT_PROVIDER_FIELD_ALL, &pa));
	CHECK(attr.max_rmrs > 0 && pa.rmr_scope_supported == DAT_RMR_SCOPE_PZ);
	if (rig_open(&r, 31011))
		return -1;
	triplet(&t, r.mem_lctx, r.mem + WIN_OFF, WIN_LEN);
	ck.as_64 = 6;
	OK(dat_rmr_bind(r.rmr, r.mem_lmr, &t, DAT_MEM_PRIV_REMOTE_WRITE_FLAG,
			DAT_VA_TYPE_VA, r.p.ep, ck,
			DAT_COMPLETION_SUPPRESS_FLAG, &ctx));
	if (bind_wait(&r, 0, 0, 7, NULL) ||
	    bind_wait(&r, WIN_LEN, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, 8, &ctx))
		return -1;
	/* Zero-based windows are not in rapt; nothing changes. */
	CHECK(DAT_GET_TYPE(dat_rmr_bind(r.rmr, r.mem_lmr, &t,
					DAT_MEM_PRIV_REMOTE_READ_FLAG,
					DAT_VA_TYPE_ZB, r.p.ep, ck,
					DAT_COMPLETION_DEFAULT_FLAG,
					&ctx)) == DAT_MODEL_NOT_SUPPORTED);
	CHECK(dat_evd_dequeue(r.p.dto, &ev) == DAT_QUEUE_EMPTY);
	r.mem[WIN_OFF] = 'm';
	if (refused(&r, 0, ctx, WIN_OFF, 64))
		return -1;
	return rig_close(&r);
}

static const struct {
	const char *name;
	int (*fn)(void);
} cases[] = {
	{ "private data on connect and accept, EP states", t_pdata_accept },
	{ "private data on reject (PEER_REJECTED)", t_pdata_reject },
	{ "RSP: its CR names its EP, accepted with none", t_rsp },
	{ "conn qual above 16 bits, EP reset and reuse", t_big_qual_reset },
	{ "software events, empty dequeue, wait timeout", t_software_event },
	{ "provider-created EP (DAT_PSP_PROVIDER_FLAG)", t_provider_ep },
	{ "freed EP: its queued events and its DISCONNECTED still come",
	  t_freed_ep_events },
	{ "RMR: write inside a window, Send with Invalidate, rebind, "
	  "write outside refused", t_rmr_write },
	{ "RMR: read without the right refused, suppressed bind",
	  t_rmr_read },
	{ "CNO, EPs without a PZ, EP-scoped RMRs: not supported",
	  t_not_implemented },
};

int main(void)
{
	static char name[] = IA_NAME;
	DAT_IA_ATTR attr;
	unsigned int i, failed = 0;

	async_evd = DAT_HANDLE_NULL;
	if (dat_ia_open(name, 8, &async_evd, &ia) != DAT_SUCCESS) {
		fprintf(stderr, "dat_ia_open(%s) failed\n", IA_NAME);
		return 1;
	}
	if (dat_ia_query(ia, NULL, DAT_IA_FIELD_IA_ADDRESS_PTR, &attr, 0,
			 NULL) != DAT_SUCCESS ||
	    dat_pz_create(ia, &pz) != DAT_SUCCESS ||
	    dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG,
			   &cr_evd) != DAT_SUCCESS)
		return 1;
	ia_addr = attr.ia_address_ptr;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int bad = cases[i].fn();

		printf("%s: %s\n", bad ? "FAIL" : "PASS", cases[i].name);
		failed += bad != 0;
	}
	dat_evd_free(cr_evd);
	dat_pz_free(pz);
	if (dat_ia_close(ia, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS) {
		printf("FAIL: dat_ia_close(GRACEFUL) after freeing everything\n");
		failed++;
	}
	return failed ? 1 : 0;
}
