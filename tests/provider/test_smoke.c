/* SPDX-License-Identifier: MIT */
/*
 * Smoke tests of the "test" provider fixture through the public API: a full
 * connection life on one IA (pdata both ways, send/recv, RDMA write and
 * read, graceful disconnect with flushes), then the fixture's knobs: the
 * special remote addresses, backlog and handshake limits, error breaks,
 * send with invalidate, two IAs talking, and the "ibsim" device.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <CUnit/Basic.h>
#include <rapt/rapt.h>

#define WAIT_US 5000000		/* generous: sanitizers slow things down */
#define BUF_LEN 4096
#define ACC_ALL (RAPT_MEM_LOCAL_WRITE | RAPT_MEM_REMOTE_READ | \
		 RAPT_MEM_REMOTE_WRITE)

static struct sockaddr_in addr4(const char *ip)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	inet_pton(AF_INET, ip, &sin.sin_addr);
	return sin;
}

/* Wait for the next event of @evd; it must be of @type. */
static void expect(struct rapt_evd *evd, uint32_t type, struct rapt_event *ev)
{
	int ret = rapt_evd_wait(evd, WAIT_US, 1, ev, NULL);

	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL_FATAL(ev->type, type);
}

/* The next event must be a DTO completion with these values. */
static void expect_dto(struct rapt_evd *evd, struct rapt_ep *ep, uint32_t op,
		       uint64_t cookie, uint32_t status, uint64_t len)
{
	struct rapt_event ev;

	expect(evd, RAPT_EV_DTO, &ev);
	CU_ASSERT_PTR_EQUAL(ev.u.dto.ep, ep);
	CU_ASSERT_EQUAL(ev.u.dto.op, op);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, cookie);
	CU_ASSERT_EQUAL(ev.u.dto.status, status);
	if (status == RAPT_DTO_SUCCESS)
		CU_ASSERT_EQUAL(ev.u.dto.length, len);
}

static void expect_empty(struct rapt_evd *evd)
{
	struct rapt_event ev;

	CU_ASSERT_EQUAL(rapt_evd_dequeue(evd, &ev), RAPT_EAGAIN);
}

static void expect_state(struct rapt_ep *ep, enum rapt_ep_state want)
{
	enum rapt_ep_state st;

	CU_ASSERT_EQUAL_FATAL(rapt_ep_get_state(ep, &st), 0);
	CU_ASSERT_EQUAL(st, want);
}

/* Wait until the PSP counts @n undecided CRs (cancels are asynchronous). */
static void wait_pending(struct rapt_psp *psp, uint32_t n)
{
	struct timespec ms = { 0, 1000000 };
	struct rapt_psp_info pi;
	int i;

	for (i = 0; i < 5000; i++) {
		CU_ASSERT_EQUAL_FATAL(rapt_psp_query(psp, &pi, sizeof(pi)), 0);
		if (pi.pending_crs == n)
			return;
		nanosleep(&ms, NULL);
	}
	CU_FAIL_FATAL("pending CR count never reached the expected value");
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static struct rapt_sge sge(const uint8_t *p, uint32_t len, uint32_t lkey)
{
	struct rapt_sge s = { (uint64_t)(uintptr_t)p, len, lkey };

	return s;
}

/* ------------------------------------------------------------------ */
/* A full connection life                                              */
/* ------------------------------------------------------------------ */

static void test_smoke(void)
{
	struct rapt_evd *a_evd, *b_dto, *b_conn, *cr_evd;
	struct rapt_ep_attr battr = { .max_inline = 64 };
	struct sockaddr_in remote = addr4("127.0.0.1");
	struct rapt_lmr_info ai, bi;
	struct rapt_lmr *alm, *blm;
	struct rapt_ia_attr attr;
	struct rapt_psp_info pi;
	struct rapt_cr_info ci;
	struct rapt_event ev;
	struct rapt_psp *psp;
	struct rapt_ep *a, *b;
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_sge s;
	uint8_t *abuf = calloc(1, BUF_LEN), *bbuf = calloc(1, BUF_LEN);

	CU_ASSERT_FATAL(abuf && bbuf);
	CU_ASSERT_EQUAL_FATAL(rapt_ia_open("test", &ia), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_ia_query(ia, &attr, sizeof(attr)), 0);
	CU_ASSERT_STRING_EQUAL(attr.provider, "test");
	CU_ASSERT_STRING_EQUAL(attr.device, "loop");
	CU_ASSERT_EQUAL(attr.pdata_connect, 256 - RAPT_PDATA_HEADER_LEN);
	CU_ASSERT(attr.caps & RAPT_CAP_DISCONNECT_PDATA);
	CU_ASSERT_EQUAL(attr.max_inline, 64);

	CU_ASSERT_EQUAL_FATAL(rapt_pz_create(ia, &pz), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_lmr_create(pz, abuf, BUF_LEN, ACC_ALL, &alm,
					      &ai), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_lmr_create(pz, bbuf, BUF_LEN, ACC_ALL, &blm,
					      &bi), 0);
	CU_ASSERT_NOT_EQUAL(ai.lkey, bi.lkey);
	CU_ASSERT_NOT_EQUAL(ai.rkey, bi.rkey);
	CU_ASSERT_EQUAL(bi.raddr, (uint64_t)(uintptr_t)bbuf);

	/* Side a merges DTO and CONNECTION so their order is visible. */
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(ia, 64, RAPT_EVD_DTO |
					      RAPT_EVD_CONNECTION, &a_evd), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(ia, 64, RAPT_EVD_DTO, &b_dto),
			      0);
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(ia, 8, RAPT_EVD_CONNECTION,
					      &b_conn), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(ia, 8, RAPT_EVD_CR, &cr_evd), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_psp_create(ia, RAPT_SERVICE_ID_ANY, cr_evd,
					      NULL, &psp), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_psp_query(psp, &pi, sizeof(pi)), 0);
	CU_ASSERT(pi.service_id >= 1 && pi.service_id <= 65535);

	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(pz, a_evd, a_evd, a_evd, NULL,
					     &a), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(pz, b_dto, b_dto, b_conn, &battr,
					     &b), 0);
	/* Receives before connect and accept, as the contract asks. */
	s = sge(abuf, 1024, ai.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_recv(a, &s, 1, 100), 0);
	s = sge(abuf + 1024, 1024, ai.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_recv(a, &s, 1, 101), 0);
	s = sge(bbuf, 1024, bi.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_recv(b, &s, 1, 200), 0);
	s = sge(bbuf + 1024, 1024, bi.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_recv(b, &s, 1, 201), 0);

	/* Connect with pdata, accept with pdata. */
	CU_ASSERT_EQUAL_FATAL(rapt_ep_connect(a, (struct sockaddr *)&remote,
					      pi.service_id, "hello", 5,
					      WAIT_US), 0);
	expect(cr_evd, RAPT_EV_CR_ARRIVAL, &ev);
	CU_ASSERT_PTR_EQUAL(ev.u.cr.psp, psp);
	CU_ASSERT_EQUAL(ev.u.cr.service_id, pi.service_id);
	CU_ASSERT_EQUAL_FATAL(rapt_cr_query(ev.u.cr.cr, &ci, sizeof(ci)), 0);
	CU_ASSERT_EQUAL_FATAL(ci.pdata_len, 5);
	CU_ASSERT_EQUAL(memcmp(ci.pdata, "hello", 5), 0);
	CU_ASSERT_EQUAL(ci.remote_addr.ss_family, AF_INET);
	CU_ASSERT_EQUAL(rapt_cr_accept(ev.u.cr.cr, b, "welcome!", 8), 0);

	expect(a_evd, RAPT_EV_ESTABLISHED, &ev);
	CU_ASSERT_PTR_EQUAL(ev.u.conn.ep, a);
	CU_ASSERT_EQUAL_FATAL(ev.u.conn.pdata_len, 8);
	CU_ASSERT_EQUAL(memcmp(ev.u.conn.pdata, "welcome!", 8), 0);
	CU_ASSERT(ev.u.conn.rdma_read_out >= 1);
	expect(b_conn, RAPT_EV_ESTABLISHED, &ev);
	CU_ASSERT_PTR_EQUAL(ev.u.conn.ep, b);
	expect_state(a, RAPT_EP_CONNECTED);
	expect_state(b, RAPT_EP_CONNECTED);

	/* Ping: a -> b. */
	fill(abuf + 2048, 64, 1);
	s = sge(abuf + 2048, 64, ai.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_send(a, &s, 1, 1, 0), 0);
	expect_dto(b_dto, b, RAPT_OP_RECV, 200, RAPT_DTO_SUCCESS, 64);
	CU_ASSERT_EQUAL(memcmp(bbuf, abuf + 2048, 64), 0);
	expect_dto(a_evd, a, RAPT_OP_SEND, 1, RAPT_DTO_SUCCESS, 64);

	/* Pong: b -> a, inline. */
	fill(bbuf + 2048, 32, 2);
	s = sge(bbuf + 2048, 32, bi.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_send(b, &s, 1, 2, RAPT_POST_INLINE), 0);
	expect_dto(a_evd, a, RAPT_OP_RECV, 100, RAPT_DTO_SUCCESS, 32);
	CU_ASSERT_EQUAL(memcmp(abuf, bbuf + 2048, 32), 0);
	expect_dto(b_dto, b, RAPT_OP_SEND, 2, RAPT_DTO_SUCCESS, 32);

	/* RDMA write a -> b, then read it back into another place. */
	fill(abuf + 3072, 128, 3);
	s = sge(abuf + 3072, 128, ai.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_write(a, &s, 1, 3, bi.raddr + 3072,
					   bi.rkey, 0), 0);
	expect_dto(a_evd, a, RAPT_OP_RDMA_WRITE, 3, RAPT_DTO_SUCCESS, 128);
	CU_ASSERT_EQUAL(memcmp(bbuf + 3072, abuf + 3072, 128), 0);
	fill(bbuf + 3584, 128, 4);
	s = sge(abuf + 3584, 128, ai.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_read(a, &s, 1, 4, bi.raddr + 3584,
					  bi.rkey, 0), 0);
	expect_dto(a_evd, a, RAPT_OP_RDMA_READ, 4, RAPT_DTO_SUCCESS, 128);
	CU_ASSERT_EQUAL(memcmp(abuf + 3584, bbuf + 3584, 128), 0);
	expect_empty(b_dto);

	/* Graceful disconnect: flushes first, then DISCONNECTED; the peer
	 * gets the disconnect pdata. */
	CU_ASSERT_EQUAL(rapt_ep_disconnect(a, RAPT_CLOSE_GRACEFUL, "bye", 3),
			0);
	expect_dto(a_evd, a, RAPT_OP_RECV, 101, RAPT_DTO_FLUSHED, 0);
	expect(a_evd, RAPT_EV_DISCONNECTED, &ev);
	CU_ASSERT_PTR_EQUAL(ev.u.conn.ep, a);
	expect_dto(b_dto, b, RAPT_OP_RECV, 201, RAPT_DTO_FLUSHED, 0);
	expect(b_conn, RAPT_EV_DISCONNECTED, &ev);
	CU_ASSERT_EQUAL_FATAL(ev.u.conn.pdata_len, 3);
	CU_ASSERT_EQUAL(memcmp(ev.u.conn.pdata, "bye", 3), 0);
	expect_state(a, RAPT_EP_DISCONNECTED);
	expect_state(b, RAPT_EP_DISCONNECTED);

	/* A receive on a disconnected EP completes FLUSHED at once. */
	s = sge(abuf, 16, ai.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_recv(a, &s, 1, 102), 0);
	expect_dto(a_evd, a, RAPT_OP_RECV, 102, RAPT_DTO_FLUSHED, 0);
	expect_empty(a_evd);

	CU_ASSERT_EQUAL(rapt_ep_free(a), 0);
	CU_ASSERT_EQUAL(rapt_ep_free(b), 0);
	CU_ASSERT_EQUAL(rapt_psp_query(psp, &pi, sizeof(pi)), 0);
	CU_ASSERT_EQUAL(pi.accepted, 1);
	CU_ASSERT_EQUAL(pi.pending_crs, 0);
	CU_ASSERT_EQUAL(rapt_psp_free(psp), 0);
	CU_ASSERT_EQUAL(rapt_lmr_free(alm), 0);
	CU_ASSERT_EQUAL(rapt_lmr_free(blm), 0);
	CU_ASSERT_EQUAL(rapt_evd_free(a_evd), 0);
	CU_ASSERT_EQUAL(rapt_evd_free(b_dto), 0);
	CU_ASSERT_EQUAL(rapt_evd_free(b_conn), 0);
	CU_ASSERT_EQUAL(rapt_evd_free(cr_evd), 0);
	CU_ASSERT_EQUAL(rapt_pz_free(pz), 0);
	CU_ASSERT_EQUAL(rapt_ia_close(ia), 0);
	free(abuf);
	free(bbuf);
}

/* ------------------------------------------------------------------ */
/* A reusable pair for the knob tests                                  */
/* ------------------------------------------------------------------ */

/* Side 0 connects to side 1's PSP; each side has its own DTO and
 * CONNECTION EVDs (so "ibsim" works too). */
struct side {
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_evd *dto;
	struct rapt_evd *conn;
	struct rapt_ep *ep;
	struct rapt_lmr *lmr;
	struct rapt_lmr_info li;
	uint8_t *buf;
};

struct pair {
	struct side s[2];
	bool shared_ia;
	struct rapt_evd *cr_evd;
	struct rapt_psp *psp;
	uint64_t sid;
};

static void side_open(struct side *sd, struct rapt_ia *ia)
{
	sd->ia = ia;
	CU_ASSERT_EQUAL_FATAL(rapt_pz_create(ia, &sd->pz), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(ia, 64, RAPT_EVD_DTO, &sd->dto),
			      0);
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(ia, 16, RAPT_EVD_CONNECTION,
					      &sd->conn), 0);
	sd->buf = calloc(1, BUF_LEN);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sd->buf);
	CU_ASSERT_EQUAL_FATAL(rapt_lmr_create(sd->pz, sd->buf, BUF_LEN, ACC_ALL,
					      &sd->lmr, &sd->li), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(sd->pz, sd->dto, sd->dto,
					     sd->conn, NULL, &sd->ep), 0);
}

static void side_close(struct side *sd, bool close_ia)
{
	if (sd->ep)
		CU_ASSERT_EQUAL(rapt_ep_free(sd->ep), 0);
	CU_ASSERT_EQUAL(rapt_lmr_free(sd->lmr), 0);
	CU_ASSERT_EQUAL(rapt_evd_free(sd->dto), 0);
	CU_ASSERT_EQUAL(rapt_evd_free(sd->conn), 0);
	CU_ASSERT_EQUAL(rapt_pz_free(sd->pz), 0);
	if (close_ia)
		CU_ASSERT_EQUAL(rapt_ia_close(sd->ia), 0);
	free(sd->buf);
}

/* @name1 NULL: both sides on one IA of @name0. */
static void pair_open(struct pair *p, const char *name0, const char *name1,
		      const struct rapt_psp_attr *pattr)
{
	struct rapt_ia *ia0, *ia1;
	struct rapt_psp_info pi;

	memset(p, 0, sizeof(*p));
	CU_ASSERT_EQUAL_FATAL(rapt_ia_open(name0, &ia0), 0);
	ia1 = ia0;
	if (name1)
		CU_ASSERT_EQUAL_FATAL(rapt_ia_open(name1, &ia1), 0);
	p->shared_ia = !name1;
	side_open(&p->s[0], ia0);
	side_open(&p->s[1], ia1);
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(ia1, 16, RAPT_EVD_CR,
					      &p->cr_evd), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_psp_create(ia1, RAPT_SERVICE_ID_ANY,
					      p->cr_evd, pattr, &p->psp), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_psp_query(p->psp, &pi, sizeof(pi)), 0);
	p->sid = pi.service_id;
}

static void pair_close(struct pair *p)
{
	if (p->s[0].ep)
		CU_ASSERT_EQUAL(rapt_ep_free(p->s[0].ep), 0);
	if (p->s[1].ep)
		CU_ASSERT_EQUAL(rapt_ep_free(p->s[1].ep), 0);
	p->s[0].ep = NULL;
	p->s[1].ep = NULL;
	CU_ASSERT_EQUAL(rapt_psp_free(p->psp), 0);
	CU_ASSERT_EQUAL(rapt_evd_free(p->cr_evd), 0);
	side_close(&p->s[0], !p->shared_ia);
	side_close(&p->s[1], true);
}

static void pair_connect_to(struct pair *p, const char *ip, uint64_t sid,
			    int64_t timeout_us)
{
	struct sockaddr_in remote = addr4(ip);

	CU_ASSERT_EQUAL_FATAL(rapt_ep_connect(p->s[0].ep,
					      (struct sockaddr *)&remote, sid,
					      NULL, 0, timeout_us), 0);
}

/* Connect side 0 to side 1 and accept; both get ESTABLISHED. */
static void pair_connect(struct pair *p)
{
	struct rapt_event ev;

	pair_connect_to(p, "127.0.0.1", p->sid, WAIT_US);
	expect(p->cr_evd, RAPT_EV_CR_ARRIVAL, &ev);
	CU_ASSERT_EQUAL_FATAL(rapt_cr_accept(ev.u.cr.cr, p->s[1].ep, NULL, 0),
			      0);
	expect(p->s[0].conn, RAPT_EV_ESTABLISHED, &ev);
	expect(p->s[1].conn, RAPT_EV_ESTABLISHED, &ev);
}

static void post_recv(struct side *sd, uint32_t off, uint32_t len,
		      uint64_t cookie)
{
	struct rapt_sge s = sge(sd->buf + off, len, sd->li.lkey);

	CU_ASSERT_EQUAL_FATAL(rapt_ep_post_recv(sd->ep, &s, 1, cookie), 0);
}

/* ------------------------------------------------------------------ */
/* Connection knobs                                                    */
/* ------------------------------------------------------------------ */

static void test_reject(void)
{
	struct rapt_psp_info pi;
	struct rapt_event ev;
	struct pair p;

	pair_open(&p, "test", NULL, NULL);
	post_recv(&p.s[0], 0, 64, 7);
	pair_connect_to(&p, "127.0.0.1", p.sid, WAIT_US);
	expect(p.cr_evd, RAPT_EV_CR_ARRIVAL, &ev);
	CU_ASSERT_EQUAL(rapt_cr_reject(ev.u.cr.cr, "go away", 7), 0);
	expect_dto(p.s[0].dto, p.s[0].ep, RAPT_OP_RECV, 7, RAPT_DTO_FLUSHED, 0);
	expect(p.s[0].conn, RAPT_EV_PEER_REJECTED, &ev);
	CU_ASSERT_EQUAL_FATAL(ev.u.conn.pdata_len, 7);
	CU_ASSERT_EQUAL(memcmp(ev.u.conn.pdata, "go away", 7), 0);
	expect_state(p.s[0].ep, RAPT_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(rapt_psp_query(p.psp, &pi, sizeof(pi)), 0);
	CU_ASSERT_EQUAL(pi.rejected, 1);
	pair_close(&p);
}

static void test_no_listener_unreachable(void)
{
	struct sockaddr_in6 six = { .sin6_family = AF_INET6 };
	struct rapt_event ev;
	struct pair p;

	pair_open(&p, "test", NULL, NULL);
	pair_connect_to(&p, "127.0.0.1", p.sid == 7 ? 8 : 7, WAIT_US);
	expect(p.s[0].conn, RAPT_EV_NON_PEER_REJECTED, &ev);
	CU_ASSERT_EQUAL(ev.u.conn.reason, RAPT_REJECT_NO_LISTENER);
	CU_ASSERT_EQUAL(rapt_ep_free(p.s[0].ep), 0);

	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(p.s[0].pz, p.s[0].dto, p.s[0].dto,
					     p.s[0].conn, NULL, &p.s[0].ep), 0);
	pair_connect_to(&p, "192.0.2.1", p.sid, WAIT_US);
	expect(p.s[0].conn, RAPT_EV_UNREACHABLE, &ev);
	CU_ASSERT_EQUAL(rapt_ep_free(p.s[0].ep), 0);

	/* ::1 reaches the listener too. */
	six.sin6_addr = in6addr_loopback;
	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(p.s[0].pz, p.s[0].dto, p.s[0].dto,
					     p.s[0].conn, NULL, &p.s[0].ep), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_ep_connect(p.s[0].ep,
					      (struct sockaddr *)&six, p.sid,
					      NULL, 0, WAIT_US), 0);
	expect(p.cr_evd, RAPT_EV_CR_ARRIVAL, &ev);
	CU_ASSERT_EQUAL(rapt_cr_reject(ev.u.cr.cr, NULL, 0), 0);
	expect(p.s[0].conn, RAPT_EV_PEER_REJECTED, &ev);
	pair_close(&p);
}

static void test_timeouts(void)
{
	struct rapt_event ev;
	struct rapt_cr *cr;
	struct pair p;

	pair_open(&p, "test", NULL, NULL);
	pair_connect_to(&p, "198.51.100.1", p.sid, 20000);
	expect(p.s[0].conn, RAPT_EV_TIMED_OUT, &ev);
	CU_ASSERT_EQUAL(rapt_ep_free(p.s[0].ep), 0);

	/* No answer and no timeout: a disconnect cancels the connect. */
	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(p.s[0].pz, p.s[0].dto, p.s[0].dto,
					     p.s[0].conn, NULL, &p.s[0].ep), 0);
	pair_connect_to(&p, "198.51.100.1", p.sid, RAPT_TIMEOUT_INFINITE);
	CU_ASSERT_EQUAL(rapt_evd_wait(p.s[0].conn, 20000, 1, &ev, NULL),
			RAPT_ETIMEDOUT);
	CU_ASSERT_EQUAL(rapt_ep_disconnect(p.s[0].ep, RAPT_CLOSE_ABRUPT,
					   NULL, 0), 0);
	expect(p.s[0].conn, RAPT_EV_DISCONNECTED, &ev);
	CU_ASSERT_EQUAL(rapt_ep_free(p.s[0].ep), 0);

	/* An undecided CR times out: the requester gets TIMED_OUT and the
	 * CR is cancelled. */
	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(p.s[0].pz, p.s[0].dto, p.s[0].dto,
					     p.s[0].conn, NULL, &p.s[0].ep), 0);
	pair_connect_to(&p, "127.0.0.1", p.sid, 300000);
	expect(p.cr_evd, RAPT_EV_CR_ARRIVAL, &ev);
	cr = ev.u.cr.cr;
	expect(p.s[0].conn, RAPT_EV_TIMED_OUT, &ev);
	wait_pending(p.psp, 0);
	CU_ASSERT_EQUAL(rapt_cr_accept(cr, p.s[1].ep, NULL, 0), RAPT_ENOTCONN);
	expect_state(p.s[1].ep, RAPT_EP_UNCONNECTED);
	pair_close(&p);
}

static void test_backlog_busy(void)
{
	struct rapt_psp_attr pa = { .backlog = 1 };
	struct sockaddr_in lo = addr4("127.0.0.1");
	struct rapt_psp_info pi;
	struct rapt_event ev;
	struct rapt_ep *x;
	struct rapt_cr *cr;
	struct pair p;

	pair_open(&p, "test", NULL, &pa);
	pair_connect_to(&p, "127.0.0.1", p.sid, WAIT_US);
	expect(p.cr_evd, RAPT_EV_CR_ARRIVAL, &ev);
	cr = ev.u.cr.cr;
	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(p.s[0].pz, p.s[0].dto, p.s[0].dto,
					     p.s[0].conn, NULL, &x), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_ep_connect(x, (struct sockaddr *)&lo, p.sid,
					      NULL, 0, WAIT_US), 0);
	expect(p.s[0].conn, RAPT_EV_NON_PEER_REJECTED, &ev);
	CU_ASSERT_PTR_EQUAL(ev.u.conn.ep, x);
	CU_ASSERT_EQUAL(ev.u.conn.reason, RAPT_REJECT_BUSY);
	CU_ASSERT_EQUAL(rapt_psp_query(p.psp, &pi, sizeof(pi)), 0);
	CU_ASSERT_EQUAL(pi.busy_rejects, 1);
	CU_ASSERT_EQUAL(pi.pending_crs, 1);
	CU_ASSERT_EQUAL(rapt_ep_free(x), 0);
	/* The requester leaves: the CR is cancelled, the slot freed. */
	CU_ASSERT_EQUAL(rapt_ep_free(p.s[0].ep), 0);
	p.s[0].ep = NULL;
	wait_pending(p.psp, 0);
	CU_ASSERT_EQUAL(rapt_cr_reject(cr, NULL, 0), RAPT_ENOTCONN);
	pair_close(&p);
}

/* A silent half-open client is dropped after the handshake timeout; and
 * at a full handshake limit it makes room for a prompt request (which
 * becomes a CR, no BUSY). */
static void test_silent_halfopen(void)
{
	struct rapt_psp_attr pa = { .handshake_limit = 1,
				    .handshake_timeout_ms = 500 };
	struct sockaddr_in lo = addr4("127.0.0.1"), lo2;
	struct rapt_psp_info pi;
	struct rapt_event ev;
	struct rapt_ep *x, *y;
	struct pair p;

	pair_open(&p, "test", NULL, &pa);
	pair_connect_to(&p, "127.0.0.2", p.sid, RAPT_TIMEOUT_INFINITE);
	expect(p.s[0].conn, RAPT_EV_TIMED_OUT, &ev);
	CU_ASSERT_PTR_EQUAL(ev.u.conn.ep, p.s[0].ep);
	CU_ASSERT_EQUAL(rapt_psp_query(p.psp, &pi, sizeof(pi)), 0);
	CU_ASSERT_EQUAL(pi.in_handshake, 0);
	CU_ASSERT_EQUAL(pi.handshake_timeouts, 1);

	/* Another silent one, then a prompt request: the handshake is
	 * full, so the silent one goes and the prompt one becomes a CR. */
	lo2 = addr4("127.0.0.2");
	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(p.s[0].pz, p.s[0].dto, p.s[0].dto,
					     p.s[0].conn, NULL, &x), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(p.s[0].pz, p.s[0].dto, p.s[0].dto,
					     p.s[0].conn, NULL, &y), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_ep_connect(x, (struct sockaddr *)&lo2,
					      p.sid, NULL, 0,
					      RAPT_TIMEOUT_INFINITE), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_ep_connect(y, (struct sockaddr *)&lo,
					      p.sid, NULL, 0, WAIT_US), 0);
	expect(p.s[0].conn, RAPT_EV_UNREACHABLE, &ev);
	CU_ASSERT_PTR_EQUAL(ev.u.conn.ep, x);
	expect(p.cr_evd, RAPT_EV_CR_ARRIVAL, &ev);
	CU_ASSERT_EQUAL(rapt_cr_reject(ev.u.cr.cr, NULL, 0), 0);
	expect(p.s[0].conn, RAPT_EV_PEER_REJECTED, &ev);
	CU_ASSERT_PTR_EQUAL(ev.u.conn.ep, y);
	CU_ASSERT_EQUAL(rapt_psp_query(p.psp, &pi, sizeof(pi)), 0);
	CU_ASSERT_EQUAL(pi.busy_rejects, 0);
	CU_ASSERT_EQUAL(pi.handshake_timeouts, 1);
	CU_ASSERT_EQUAL(rapt_ep_free(y), 0);
	CU_ASSERT_EQUAL(rapt_ep_free(x), 0);
	pair_close(&p);
}

/* ------------------------------------------------------------------ */
/* Data-path knobs                                                     */
/* ------------------------------------------------------------------ */

static void test_remote_access_breaks(void)
{
	struct rapt_event ev;
	struct rapt_sge s;
	struct pair p;

	pair_open(&p, "test", NULL, NULL);
	post_recv(&p.s[1], 0, 64, 9);
	pair_connect(&p);
	memset(p.s[1].buf + 1024, 0x5a, 64);
	fill(p.s[0].buf + 1024, 64, 5);
	s = sge(p.s[0].buf + 1024, 64, p.s[0].li.lkey);
	/* One byte past the region: refused, nothing written. */
	CU_ASSERT_EQUAL(rapt_ep_post_write(p.s[0].ep, &s, 1, 11,
					   p.s[1].li.raddr + BUF_LEN - 63,
					   p.s[1].li.rkey, 0), 0);
	expect_dto(p.s[0].dto, p.s[0].ep, RAPT_OP_RDMA_WRITE, 11,
		   RAPT_DTO_REMOTE_ACCESS, 0);
	expect(p.s[0].conn, RAPT_EV_BROKEN, &ev);
	expect_dto(p.s[1].dto, p.s[1].ep, RAPT_OP_RECV, 9, RAPT_DTO_FLUSHED, 0);
	expect(p.s[1].conn, RAPT_EV_BROKEN, &ev);
	CU_ASSERT_EQUAL(p.s[1].buf[BUF_LEN - 1], 0);
	CU_ASSERT_EQUAL(p.s[1].buf[1024], 0x5a);
	CU_ASSERT_EQUAL(rapt_ep_post_send(p.s[0].ep, &s, 1, 12, 0),
			RAPT_ESTATE);
	pair_close(&p);
}

static void test_no_recv_and_length(void)
{
	struct rapt_event ev;
	struct rapt_sge s;
	struct pair p;

	/* No receive posted: REMOTE_OPERATION, both sides broken. */
	pair_open(&p, "test", NULL, NULL);
	pair_connect(&p);
	s = sge(p.s[0].buf, 16, p.s[0].li.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_send(p.s[0].ep, &s, 1, 1, 0), 0);
	expect_dto(p.s[0].dto, p.s[0].ep, RAPT_OP_SEND, 1,
		   RAPT_DTO_REMOTE_OPERATION, 0);
	expect(p.s[0].conn, RAPT_EV_BROKEN, &ev);
	expect(p.s[1].conn, RAPT_EV_BROKEN, &ev);
	pair_close(&p);

	/* A message longer than the receive: LOCAL_LENGTH there. */
	pair_open(&p, "test", NULL, NULL);
	post_recv(&p.s[1], 0, 8, 2);
	pair_connect(&p);
	s = sge(p.s[0].buf, 16, p.s[0].li.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_send(p.s[0].ep, &s, 1, 1,
					  RAPT_POST_SUPPRESS), 0);
	expect_dto(p.s[1].dto, p.s[1].ep, RAPT_OP_RECV, 2,
		   RAPT_DTO_LOCAL_LENGTH, 0);
	expect(p.s[1].conn, RAPT_EV_BROKEN, &ev);
	expect_dto(p.s[0].dto, p.s[0].ep, RAPT_OP_SEND, 1,
		   RAPT_DTO_REMOTE_OPERATION, 0);
	expect(p.s[0].conn, RAPT_EV_BROKEN, &ev);
	pair_close(&p);
}

static void test_queue_full(void)
{
	struct rapt_ep_attr attr = { .max_recv = 2 };
	struct rapt_event ev;
	struct rapt_ep *x;
	struct rapt_sge s;
	struct pair p;

	pair_open(&p, "test", NULL, NULL);
	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(p.s[0].pz, p.s[0].dto, p.s[0].dto,
					     p.s[0].conn, &attr, &x), 0);
	s = sge(p.s[0].buf, 8, p.s[0].li.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_recv(x, &s, 1, 1), 0);
	CU_ASSERT_EQUAL(rapt_ep_post_recv(x, &s, 1, 2), 0);
	CU_ASSERT_EQUAL(rapt_ep_post_recv(x, &s, 1, 3), RAPT_ENOSPC);
	/* Freeing an unconnected EP reports nothing for it. */
	CU_ASSERT_EQUAL(rapt_ep_free(x), 0);
	CU_ASSERT_EQUAL(rapt_evd_wait(p.s[0].dto, 10000, 1, &ev, NULL),
			RAPT_ETIMEDOUT);
	pair_close(&p);
}

static void test_send_invalidate(void)
{
	struct rapt_event ev;
	struct rapt_sge s;
	struct pair p;

	pair_open(&p, "test", NULL, NULL);
	post_recv(&p.s[1], 0, 64, 3);
	pair_connect(&p);
	s = sge(p.s[0].buf, 8, p.s[0].li.lkey);
	CU_ASSERT_EQUAL(rapt_ep_post_send_inv(p.s[0].ep, &s, 1, 1,
					      RAPT_POST_SOLICITED |
					      RAPT_POST_SUPPRESS,
					      p.s[1].li.rkey), 0);
	expect(p.s[1].dto, RAPT_EV_DTO, &ev);
	CU_ASSERT_EQUAL(ev.u.dto.status, RAPT_DTO_SUCCESS);
	CU_ASSERT(ev.u.dto.flags & RAPT_DTO_INVALIDATED);
	CU_ASSERT(ev.u.dto.flags & RAPT_DTO_SOLICITED);
	CU_ASSERT_EQUAL(ev.u.dto.invalidated_rkey, p.s[1].li.rkey);
	/* The invalidated rkey no longer admits RDMA. */
	CU_ASSERT_EQUAL(rapt_ep_post_read(p.s[0].ep, &s, 1, 2,
					  p.s[1].li.raddr, p.s[1].li.rkey, 0),
			0);
	expect_dto(p.s[0].dto, p.s[0].ep, RAPT_OP_RDMA_READ, 2,
		   RAPT_DTO_REMOTE_ACCESS, 0);
	expect(p.s[0].conn, RAPT_EV_BROKEN, &ev);
	expect(p.s[1].conn, RAPT_EV_BROKEN, &ev);
	pair_close(&p);
}

/* Two IAs, two progress threads: a burst of sends both ways in order,
 * then the peer is freed while connected and the other side hears it. */
static void test_two_ias(void)
{
	struct rapt_event ev;
	unsigned int i, nrecv = 0, nsend = 0;
	struct rapt_sge s;
	struct pair p;

	pair_open(&p, "test:loop", "test:loop", NULL);
	for (i = 0; i < 8; i++) {
		post_recv(&p.s[0], i * 64, 64, 100 + i);
		post_recv(&p.s[1], i * 64, 64, 200 + i);
	}
	pair_connect(&p);
	for (i = 0; i < 8; i++) {
		fill(p.s[0].buf + 2048 + i * 64, 64, i);
		s = sge(p.s[0].buf + 2048 + i * 64, 64, p.s[0].li.lkey);
		CU_ASSERT_EQUAL(rapt_ep_post_send(p.s[0].ep, &s, 1, i,
						  RAPT_POST_SUPPRESS), 0);
		s = sge(p.s[1].buf + 2048, 64, p.s[1].li.lkey);
		CU_ASSERT_EQUAL(rapt_ep_post_send(p.s[1].ep, &s, 1, i, 0), 0);
	}
	/* Side 1 sees its receives and its send completions interleaved,
	 * each stream in post order. */
	for (i = 0; i < 16; i++) {
		expect(p.s[1].dto, RAPT_EV_DTO, &ev);
		CU_ASSERT_EQUAL(ev.u.dto.status, RAPT_DTO_SUCCESS);
		if (ev.u.dto.op == RAPT_OP_RECV) {
			CU_ASSERT_EQUAL(ev.u.dto.cookie, 200 + nrecv);
			CU_ASSERT_EQUAL(memcmp(p.s[1].buf + nrecv * 64,
					       p.s[0].buf + 2048 + nrecv * 64,
					       64), 0);
			nrecv++;
		} else {
			CU_ASSERT_EQUAL(ev.u.dto.op, RAPT_OP_SEND);
			CU_ASSERT_EQUAL(ev.u.dto.cookie, nsend);
			nsend++;
		}
	}
	CU_ASSERT_EQUAL(nrecv, 8);
	for (i = 0; i < 8; i++)
		expect_dto(p.s[0].dto, p.s[0].ep, RAPT_OP_RECV, 100 + i,
			   RAPT_DTO_SUCCESS, 64);
	post_recv(&p.s[0], 0, 64, 999);
	CU_ASSERT_EQUAL(rapt_ep_free(p.s[1].ep), 0);
	p.s[1].ep = NULL;
	expect_dto(p.s[0].dto, p.s[0].ep, RAPT_OP_RECV, 999, RAPT_DTO_FLUSHED,
		   0);
	expect(p.s[0].conn, RAPT_EV_DISCONNECTED, &ev);
	pair_close(&p);
}

static void test_ibsim(void)
{
	struct rapt_ia_attr attr;
	struct rapt_evd *evd;
	struct rapt_event ev;
	struct pair p;

	pair_open(&p, "test:ibsim", NULL, NULL);
	CU_ASSERT_EQUAL(rapt_ia_query(p.s[0].ia, &attr, sizeof(attr)), 0);
	CU_ASSERT_STRING_EQUAL(attr.device, "ibsim");
	CU_ASSERT_EQUAL(attr.pdata_connect, 56 - RAPT_PDATA_HEADER_LEN);
	CU_ASSERT_EQUAL(attr.pdata_accept, 196 - RAPT_PDATA_HEADER_LEN);
	CU_ASSERT_EQUAL(attr.pdata_reject, 148 - RAPT_PDATA_HEADER_LEN);
	CU_ASSERT_EQUAL(attr.pdata_disconnect, 0);
	CU_ASSERT_FALSE(attr.caps & RAPT_CAP_DISCONNECT_PDATA);
	CU_ASSERT_EQUAL(rapt_evd_create(p.s[0].ia, 8, RAPT_EVD_DTO |
					RAPT_EVD_CONNECTION, &evd),
			RAPT_ENOTSUP);
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(p.s[0].ia, 8, RAPT_EVD_DTO |
					      RAPT_EVD_SOFTWARE, &evd), 0);
	CU_ASSERT_EQUAL(rapt_evd_free(evd), 0);
	/* A "loop" requester cannot reach an "ibsim" listener. */
	{
		struct sockaddr_in lo = addr4("127.0.0.1");
		struct rapt_evd *conn;
		struct rapt_ep *x;
		struct rapt_ia *ia;
		struct rapt_pz *pz;

		CU_ASSERT_EQUAL_FATAL(rapt_ia_open("test:loop", &ia), 0);
		CU_ASSERT_EQUAL_FATAL(rapt_pz_create(ia, &pz), 0);
		CU_ASSERT_EQUAL_FATAL(rapt_evd_create(ia, 8,
						      RAPT_EVD_CONNECTION,
						      &conn), 0);
		CU_ASSERT_EQUAL_FATAL(rapt_ep_create(pz, NULL, NULL, conn,
						     NULL, &x), 0);
		CU_ASSERT_EQUAL(rapt_ep_connect(x, (struct sockaddr *)&lo,
						p.sid, NULL, 0, WAIT_US), 0);
		expect(conn, RAPT_EV_NON_PEER_REJECTED, &ev);
		CU_ASSERT_EQUAL(ev.u.conn.reason, RAPT_REJECT_NO_LISTENER);
		CU_ASSERT_EQUAL(rapt_ep_free(x), 0);
		CU_ASSERT_EQUAL(rapt_evd_free(conn), 0);
		CU_ASSERT_EQUAL(rapt_pz_free(pz), 0);
		CU_ASSERT_EQUAL(rapt_ia_close(ia), 0);
	}
	pair_connect(&p);
	CU_ASSERT_EQUAL(rapt_ep_disconnect(p.s[1].ep, RAPT_CLOSE_ABRUPT, NULL,
					   0), 0);
	expect(p.s[1].conn, RAPT_EV_DISCONNECTED, &ev);
	expect(p.s[0].conn, RAPT_EV_DISCONNECTED, &ev);
	CU_ASSERT_EQUAL(ev.u.conn.pdata_len, 0);
	pair_close(&p);
}

/* ------------------------------------------------------------------ */

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "smoke: connect, pdata, send/recv, RDMA, disconnect", test_smoke },
	{ "consumer reject with pdata", test_reject },
	{ "no listener, unreachable, ::1", test_no_listener_unreachable },
	{ "connect timeouts and cancel", test_timeouts },
	{ "backlog full is BUSY", test_backlog_busy },
	{ "silent half-open client", test_silent_halfopen },
	{ "RDMA out of bounds breaks", test_remote_access_breaks },
	{ "no receive, short receive", test_no_recv_and_length },
	{ "receive queue full", test_queue_full },
	{ "send with invalidate", test_send_invalidate },
	{ "two IAs", test_two_ias },
	{ "ibsim device", test_ibsim },
};

int main(void)
{
	CU_pSuite suite;
	unsigned int i, failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return CU_get_error();
	suite = CU_add_suite("test provider", NULL, NULL);
	if (!suite)
		goto err;
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!CU_add_test(suite, tests[i].name, tests[i].fn))
			goto err;
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed ? 1 : 0;
err:
	CU_cleanup_registry();
	return CU_get_error();
}
