/* SPDX-License-Identifier: MIT */
/*
 * iw_peer - the kernel-siw half of rapt's iWARP interoperability test.
 *
 * A librdmacm/libibverbs program that runs on a siw device inside the test
 * VM (tests/interop/run-siw-vm.sh) against rapt_iw_peer, which runs the
 * same script through rapt's tcp provider.  The protocol and the script are
 * in iw_proto.h: raw private data both ways, SEND/RECV both ways, RDMA
 * WRITE and READ both ways, a graceful disconnect; or a reject with
 * private data.
 *
 * usage: iw_peer -s ADDR [-p PORT] [-r] [-d]     passive: listen on ADDR
 *        iw_peer -c ADDR [-p PORT] [-r] [-d]     active: connect to ADDR
 *   -r  passive: reject the request with IWP_REJECT private data;
 *       active: expect exactly that reject
 *   -d  this side starts the graceful disconnect (else it waits for it)
 *
 * Exit status 0 when every check passed; the last line says "iw_peer: OK".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "iw_proto.h"

#define STEP_TIMEOUT_MS	20000
#define QP_DEPTH	8
#define IW_DEPTH	4	/* IRD and ORD asked for */

struct peer {
	int active;
	int reject;
	int disconnect;
	const char *addr;
	const char *port;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *scq;
	struct ibv_cq *rcq;
	struct ibv_mr *region_mr;
	struct ibv_mr *buf_mr;
	uint8_t *region;
	uint8_t *buf;
	struct iwp_region remote;
};

/* ------------------------------------------------------------------ */
/* rdma_cm events                                                      */
/* ------------------------------------------------------------------ */

static struct rdma_cm_event *next_event(struct peer *p)
{
	struct pollfd pfd = { .fd = p->ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int n;

	n = poll(&pfd, 1, STEP_TIMEOUT_MS);
	if (n < 0)
		fail("poll on the event channel: %m");
	if (n == 0)
		fail("no rdma_cm event within %d ms", STEP_TIMEOUT_MS);
	if (rdma_get_cm_event(p->ch, &ev))
		fail("rdma_get_cm_event: %m");
	return ev;
}

static struct rdma_cm_event *expect_event(struct peer *p,
					  enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = next_event(p);

	if (ev->event != want)
		fail("expected %s, got %s (status %d)", rdma_event_str(want),
		     rdma_event_str(ev->event), ev->status);
	return ev;
}

static void ack(struct rdma_cm_event *ev)
{
	if (rdma_ack_cm_event(ev))
		fail("rdma_ack_cm_event: %m");
}

/* ------------------------------------------------------------------ */
/* Resources                                                           */
/* ------------------------------------------------------------------ */

static void setup_memory(struct peer *p)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ;

	p->pd = ibv_alloc_pd(p->id->verbs);
	if (!p->pd)
		fail("ibv_alloc_pd: %m");
	p->region = calloc(1, IWP_REGION_LEN);
	p->buf = calloc(1, BUF_LEN);
	if (!p->region || !p->buf)
		fail("out of memory");
	iwp_fill(p->region, IWP_HALF, p->active ? IWP_SEED_SRC_ACTIVE :
		 IWP_SEED_SRC_PASSIVE);
	p->region_mr = ibv_reg_mr(p->pd, p->region, IWP_REGION_LEN, acc);
	/* iWARP: an RDMA READ sink is written by the peer's Read Response,
	 * so the local buffer needs REMOTE_WRITE too. */
	p->buf_mr = ibv_reg_mr(p->pd, p->buf, BUF_LEN, acc);
	if (!p->region_mr || !p->buf_mr)
		fail("ibv_reg_mr: %m");
}

static void setup_qp(struct peer *p)
{
	struct ibv_qp_init_attr qa;

	p->scq = ibv_create_cq(p->id->verbs, QP_DEPTH, NULL, NULL, 0);
	p->rcq = ibv_create_cq(p->id->verbs, QP_DEPTH, NULL, NULL, 0);
	if (!p->scq || !p->rcq)
		fail("ibv_create_cq: %m");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = p->scq;
	qa.recv_cq = p->rcq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = QP_DEPTH;
	qa.cap.max_recv_wr = QP_DEPTH;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(p->id, p->pd, &qa))
		fail("rdma_create_qp: %m");
}

static void teardown(struct peer *p)
{
	if (p->id && p->id->qp)
		rdma_destroy_qp(p->id);
	if (p->buf_mr && ibv_dereg_mr(p->buf_mr))
		fail("ibv_dereg_mr: %m");
	if (p->region_mr && ibv_dereg_mr(p->region_mr))
		fail("ibv_dereg_mr: %m");
	if (p->scq && ibv_destroy_cq(p->scq))
		fail("ibv_destroy_cq: %m");
	if (p->rcq && ibv_destroy_cq(p->rcq))
		fail("ibv_destroy_cq: %m");
	if (p->pd && ibv_dealloc_pd(p->pd))
		fail("ibv_dealloc_pd: %m");
	if (p->id && rdma_destroy_id(p->id))
		fail("rdma_destroy_id: %m");
	if (p->listen_id && rdma_destroy_id(p->listen_id))
		fail("rdma_destroy_id (listener): %m");
	rdma_destroy_event_channel(p->ch);
	free(p->region);
	free(p->buf);
}

/* ------------------------------------------------------------------ */
/* Work requests and completions                                       */
/* ------------------------------------------------------------------ */

static void post_recv(struct peer *p, size_t off, uint64_t id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(p->buf + off),
		.length = IWP_RECV_LEN,
		.lkey = p->buf_mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	if (ibv_post_recv(p->id->qp, &wr, &bad))
		fail("ibv_post_recv: %m");
}

static void post_send(struct peer *p, enum ibv_wr_opcode op, size_t off,
		      uint32_t len, uint64_t raddr)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(p->buf + off),
		.length = len,
		.lkey = p->buf_mr->lkey,
	};
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = p->remote.rkey;
	if (ibv_post_send(p->id->qp, &wr, &bad))
		fail("ibv_post_send (opcode %d): %m", op);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for one completion on @cq; it must be @want and successful. */
static struct ibv_wc wait_wc(struct ibv_cq *cq, enum ibv_wc_opcode want,
			     const char *what)
{
	int64_t end = now_ms() + STEP_TIMEOUT_MS;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
		if (now_ms() > end)
			fail("%s: no completion within %d ms", what,
			     STEP_TIMEOUT_MS);
		usleep(200);
	}
	if (n < 0)
		fail("%s: ibv_poll_cq failed", what);
	if (wc.status != IBV_WC_SUCCESS)
		fail("%s: completion status %s (vendor_err %#x)", what,
		     ibv_wc_status_str(wc.status), wc.vendor_err);
	if (wc.opcode != want)
		fail("%s: completion opcode %d, expected %d", what, wc.opcode,
		     want);
	return wc;
}

static void do_send(struct peer *p, uint32_t len, const char *what)
{
	post_send(p, IBV_WR_SEND, OFF_SEND, len, 0);
	wait_wc(p->scq, IBV_WC_SEND, what);
}

static void expect_recv(struct peer *p, size_t off, uint32_t len,
			unsigned int seed, const char *what)
{
	struct ibv_wc wc = wait_wc(p->rcq, IBV_WC_RECV, what);
	long bad;

	if (wc.byte_len != len)
		fail("%s: received %u bytes, expected %u", what, wc.byte_len,
		     len);
	bad = iwp_check(p->buf + off, len, seed);
	if (bad >= 0)
		fail("%s: received data differs at offset %ld", what, bad);
	note("%s: %u bytes verified", what, len);
}

static void expect_done(struct peer *p, size_t off, const char *text)
{
	struct ibv_wc wc = wait_wc(p->rcq, IBV_WC_RECV, text);

	if (wc.byte_len != IWP_DONE_LEN || memcmp(p->buf + off, text,
						  IWP_DONE_LEN))
		fail("expected \"%s\" (%d bytes), got %u bytes", text,
		     IWP_DONE_LEN, wc.byte_len);
	/* Debian 12's siw provider does not report IBV_WC_WITH_INV: what
	 * is checked here is that siw takes the message without an error;
	 * a report, where there is one, must name our region. */
	if ((wc.wc_flags & IBV_WC_WITH_INV) &&
	    wc.invalidated_rkey != p->region_mr->rkey)
		fail("\"%s\": invalidated rkey %#x, not our region's %#x",
		     text, wc.invalidated_rkey, p->region_mr->rkey);
	note("%s: Send with SE and Invalidate received (wc_flags %#x, "
	     "invalidated rkey %#x)", text, wc.wc_flags, wc.invalidated_rkey);
}

/* The DONE message: a Send with Solicited Event and Invalidate of the
 * peer's region, whose last use this is. */
static void send_done(struct peer *p)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(p->buf + OFF_SEND),
		.length = IWP_DONE_LEN,
		.lkey = p->buf_mr->lkey,
	};
	struct ibv_send_wr wr, *bad;

	memcpy(p->buf + OFF_SEND, p->active ? "A-DONE" : "P-DONE",
	       IWP_DONE_LEN);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = IBV_WR_SEND_WITH_INV;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	/* The verbs field, and where Debian 12's siw provider takes the key
	 * from (without it siw sends STag 0, which rapt refuses). */
	wr.invalidate_rkey = p->remote.rkey;
	wr.wr.rdma.rkey = p->remote.rkey;
	if (ibv_post_send(p->id->qp, &wr, &bad))
		fail("ibv_post_send (send with invalidate): %m");
	wait_wc(p->scq, IBV_WC_SEND, "SEND done");
}

/* RDMA WRITE our pattern into the peer's second half, RDMA READ its first
 * half and check it, then tell the peer with a SEND. */
static void rdma_both(struct peer *p)
{
	unsigned int wseed = p->active ? IWP_SEED_WRITE_A : IWP_SEED_WRITE_P;
	unsigned int rseed = p->active ? IWP_SEED_SRC_PASSIVE :
					 IWP_SEED_SRC_ACTIVE;
	long bad;

	iwp_fill(p->buf + OFF_WSRC, IWP_HALF, wseed);
	post_send(p, IBV_WR_RDMA_WRITE, OFF_WSRC, IWP_HALF,
		  p->remote.addr + IWP_HALF);
	wait_wc(p->scq, IBV_WC_RDMA_WRITE, "RDMA WRITE");
	post_send(p, IBV_WR_RDMA_READ, OFF_SINK, IWP_HALF, p->remote.addr);
	wait_wc(p->scq, IBV_WC_RDMA_READ, "RDMA READ");
	bad = iwp_check(p->buf + OFF_SINK, IWP_HALF, rseed);
	if (bad >= 0)
		fail("RDMA READ data differs at offset %ld", bad);
	note("RDMA WRITE %d bytes done, RDMA READ %d bytes verified",
	     IWP_HALF, IWP_HALF);
	send_done(p);
}

/* The peer's WRITE must be in our second half once its "done" is in. */
static void check_written(struct peer *p)
{
	unsigned int seed = p->active ? IWP_SEED_WRITE_P : IWP_SEED_WRITE_A;
	long bad = iwp_check(p->region + IWP_HALF, IWP_HALF, seed);

	if (bad >= 0)
		fail("peer's RDMA WRITE data differs at offset %ld", bad);
	note("peer's RDMA WRITE of %d bytes verified", IWP_HALF);
}

static void run_script(struct peer *p)
{
	if (p->active) {
		iwp_fill(p->buf + OFF_SEND, IWP_MSG1_LEN, IWP_SEED_MSG1);
		do_send(p, IWP_MSG1_LEN, "SEND msg1");
		expect_recv(p, OFF_RECV0, IWP_MSG2_LEN, IWP_SEED_MSG2,
			    "RECV msg2");
		rdma_both(p);
		expect_done(p, OFF_RECV1, "P-DONE");
		check_written(p);
	} else {
		/* msg2 is posted before msg1 is in (see iw_proto.h). */
		iwp_fill(p->buf + OFF_SEND, IWP_MSG2_LEN, IWP_SEED_MSG2);
		post_send(p, IBV_WR_SEND, OFF_SEND, IWP_MSG2_LEN, 0);
		expect_recv(p, OFF_RECV0, IWP_MSG1_LEN, IWP_SEED_MSG1,
			    "RECV msg1");
		wait_wc(p->scq, IBV_WC_SEND, "SEND msg2");
		expect_done(p, OFF_RECV1, "A-DONE");
		check_written(p);
		rdma_both(p);
	}
}

static void finish(struct peer *p)
{
	if (p->disconnect && rdma_disconnect(p->id))
		fail("rdma_disconnect: %m");
	ack(expect_event(p, RDMA_CM_EVENT_DISCONNECTED));
	note("disconnected (%s)", p->disconnect ? "we closed" :
	     "the peer closed");
}

/* ------------------------------------------------------------------ */
/* Passive and active sides                                            */
/* ------------------------------------------------------------------ */

static struct rdma_addrinfo *resolve(struct peer *p)
{
	struct rdma_addrinfo hints, *ai;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (!p->active)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(p->addr, p->port, &hints, &ai))
		fail("rdma_getaddrinfo(%s, %s): %m", p->addr, p->port);
	return ai;
}

static void conn_param(struct rdma_conn_param *cp, const void *pd,
		       uint8_t len)
{
	memset(cp, 0, sizeof(*cp));
	cp->private_data = pd;
	cp->private_data_len = len;
	cp->responder_resources = IW_DEPTH;
	cp->initiator_depth = IW_DEPTH;
}

static void reject_request(struct peer *p)
{
	uint8_t pd[IWP_REJECT_LEN];

	iwp_reject_build(pd);
	if (rdma_reject(p->id, pd, sizeof(pd)))
		fail("rdma_reject: %m");
	note("rejected the request with %d bytes of private data",
	     IWP_REJECT_LEN);
}

/* Memory, QP, both receives posted, and our connect or accept private
 * data (advertising our region) in @cp, pointing at @pd. */
static void prepare(struct peer *p, struct rdma_conn_param *cp,
		    uint8_t pd[IWP_PD_LEN])
{
	struct iwp_region mine;

	setup_memory(p);
	setup_qp(p);
	post_recv(p, OFF_RECV0, 0);
	post_recv(p, OFF_RECV1, 1);
	mine = (struct iwp_region){ (uintptr_t)p->region,
				    p->region_mr->rkey, IWP_REGION_LEN };
	iwp_pd_build(pd, p->active, &mine);
	conn_param(cp, pd, IWP_PD_LEN);
}

static void accept_request(struct peer *p)
{
	struct rdma_conn_param cp;
	uint8_t pd[IWP_PD_LEN];

	prepare(p, &cp, pd);
	if (rdma_accept(p->id, &cp))
		fail("rdma_accept: %m");
	ack(expect_event(p, RDMA_CM_EVENT_ESTABLISHED));
	note("established on %s", ibv_get_device_name(p->id->verbs->device));
	run_script(p);
	finish(p);
}

static void run_passive(struct peer *p)
{
	struct rdma_addrinfo *ai = resolve(p);
	struct rdma_cm_event *ev;
	const char *why;

	if (rdma_create_id(p->ch, &p->listen_id, NULL, RDMA_PS_TCP))
		fail("rdma_create_id: %m");
	if (rdma_bind_addr(p->listen_id, ai->ai_src_addr))
		fail("rdma_bind_addr(%s): %m", p->addr);
	rdma_freeaddrinfo(ai);
	if (rdma_listen(p->listen_id, 4))
		fail("rdma_listen: %m");
	note("listening on %s port %s", p->addr, p->port);
	fflush(stdout);

	ev = expect_event(p, RDMA_CM_EVENT_CONNECT_REQUEST);
	p->id = ev->id;
	why = iwp_pd_parse(ev->param.conn.private_data,
			   ev->param.conn.private_data_len, 1, &p->remote);
	if (why)
		fail("connect request: %s (%u bytes)", why,
		     ev->param.conn.private_data_len);
	note("request with %u bytes of raw private data verified; peer "
	     "region rkey %#x", ev->param.conn.private_data_len,
	     p->remote.rkey);
	ack(ev);
	if (p->reject)
		reject_request(p);
	else
		accept_request(p);
}

static void connect_peer(struct peer *p)
{
	struct rdma_addrinfo *ai = resolve(p);
	struct rdma_conn_param cp;
	uint8_t pd[IWP_PD_LEN];

	if (rdma_create_id(p->ch, &p->id, NULL, RDMA_PS_TCP))
		fail("rdma_create_id: %m");
	if (rdma_resolve_addr(p->id, NULL, ai->ai_dst_addr, 5000))
		fail("rdma_resolve_addr(%s): %m", p->addr);
	rdma_freeaddrinfo(ai);
	ack(expect_event(p, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(p->id, 5000))
		fail("rdma_resolve_route: %m");
	ack(expect_event(p, RDMA_CM_EVENT_ROUTE_RESOLVED));
	prepare(p, &cp, pd);
	if (rdma_connect(p->id, &cp))
		fail("rdma_connect: %m");
}

/*
 * siw reports an MPA reject reply as iw_cm status -ECONNRESET, which
 * rdma_cm turns into REJECTED with that status, and hands the reply's
 * private data over without the MPA v2 IRD/ORD words.
 */
static void expect_reject(struct peer *p)
{
	struct rdma_cm_event *ev = expect_event(p, RDMA_CM_EVENT_REJECTED);
	const struct rdma_conn_param *c = &ev->param.conn;

	if (ev->status != -ECONNRESET)
		fail("REJECTED with status %d, expected %d (-ECONNRESET)",
		     ev->status, -ECONNRESET);
	if (!iwp_reject_ok(c->private_data, c->private_data_len))
		fail("reject private data: %u bytes, not the %d expected",
		     c->private_data_len, IWP_REJECT_LEN);
	note("REJECTED (status %d) with the %u bytes of private data "
	     "verified", ev->status, c->private_data_len);
	ack(ev);
}

static void run_active(struct peer *p)
{
	struct rdma_cm_event *ev;
	const char *why;

	connect_peer(p);
	if (p->reject) {
		expect_reject(p);
		return;
	}
	ev = expect_event(p, RDMA_CM_EVENT_ESTABLISHED);
	why = iwp_pd_parse(ev->param.conn.private_data,
			   ev->param.conn.private_data_len, 0, &p->remote);
	if (why)
		fail("accept private data: %s (%u bytes)", why,
		     ev->param.conn.private_data_len);
	note("established on %s; accept private data verified, peer region "
	     "rkey %#x", ibv_get_device_name(p->id->verbs->device),
	     p->remote.rkey);
	ack(ev);
	run_script(p);
	finish(p);
}

static void usage(void)
{
	fprintf(stderr, "usage: iw_peer -s ADDR | -c ADDR [-p PORT] [-r] "
		"[-d]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static char port[8];
	struct peer p;
	int c;

	memset(&p, 0, sizeof(p));
	p.active = -1;
	snprintf(port, sizeof(port), "%d", IWP_DEFAULT_PORT);
	p.port = port;
	while ((c = getopt(argc, argv, "s:c:p:rd")) != -1) {
		switch (c) {
		case 's': p.active = 0; p.addr = optarg; break;
		case 'c': p.active = 1; p.addr = optarg; break;
		case 'p': p.port = optarg; break;
		case 'r': p.reject = 1; break;
		case 'd': p.disconnect = 1; break;
		default: usage();
		}
	}
	if (p.active < 0 || optind != argc)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	iwp_role = p.active ? "iw_peer(active)" : "iw_peer(passive)";
	p.ch = rdma_create_event_channel();
	if (!p.ch)
		fail("rdma_create_event_channel: %m");
	if (p.active)
		run_active(&p);
	else
		run_passive(&p);
	teardown(&p);
	note("OK");
	return 0;
}
