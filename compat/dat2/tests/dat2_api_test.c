// SPDX-License-Identifier: MIT
/*
 * The DAT calls uDAPL's test programs do not check, through libdat2 and
 * librapt-dat2.so, in one process over loopback: private data both ways
 * (connect, accept, reject), EP states and status, an RSP, an EP reset
 * and reuse, a conn qual above rapt's service-id range, software events,
 * the events of an EP freed with its connection up, and the calls that
 * must answer DAT_NOT_IMPLEMENTED.  A table of named
 * cases; run by dat2.sh with DAT_OVERRIDE set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dat2/udat.h>

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
	OK(dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->dto));
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
	DAT_RMR_HANDLE rmr;
	DAT_CNO_HANDLE cno;
	DAT_EP_HANDLE ep;
	DAT_EVD_HANDLE evd;

	CHECK(DAT_GET_TYPE(dat_rmr_create(pz, &rmr)) == DAT_NOT_IMPLEMENTED);
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
	{ "RMR, CNO, EPs without a PZ: not supported", t_not_implemented },
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
