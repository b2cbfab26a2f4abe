/* SPDX-License-Identifier: MIT */
/*
 * rapt_iw_peer - the rapt half of rapt's iWARP interoperability test.
 *
 * Runs the script of iw_proto.h through the public rapt API against
 * iw_peer, a librdmacm/libibverbs program on the Linux kernel's soft-iWARP
 * driver (siw); tests/interop/run-siw-vm.sh runs the pair in a VM, with the
 * tcp provider on one end of a veth pair and siw on the other.  The EP is
 * in RAPT_EP_RAW_PDATA mode, so the private data goes out without rapt's
 * header, and every connection event must say the peer is foreign.
 *
 * usage: rapt_iw_peer -i IA -s [-p PORT] [-r] [-d|-a]    passive
 *        rapt_iw_peer -i IA -c ADDR [-p PORT] [-r] [-d|-a]   active
 *   -i  IA name, e.g. tcp:veth0 (the tcp provider, found through
 *       RAPT_PROVIDER_PATH; RAPT_TCP_CRC=1 makes it ask for CRC)
 *   -p  the port: the PSP's service id, or the one connected to
 *   -r  passive: reject the request with IWP_REJECT private data;
 *       active: expect exactly that reject
 *   -d  this side starts the graceful disconnect (else it waits for it)
 *   -a  this side ends the connection abruptly instead (a TCP RST)
 *
 * Exit status 0 when every check passed; the last line says
 * "rapt_iw_peer: OK".
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rapt/rapt.h>

#include "iw_proto.h"

#define STEP_TIMEOUT_US	20000000
#define EP_DEPTH	8
#define IW_DEPTH	4	/* IRD and ORD asked for */

struct peer {
	int active;
	int reject;
	int disconnect;
	int abrupt;
	const char *ia_name;
	const char *addr;
	uint16_t port;
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_evd *cm_evd;	/* CONNECTION and CR */
	struct rapt_evd *recv_evd;
	struct rapt_evd *req_evd;
	struct rapt_psp *psp;
	struct rapt_ep *ep;
	struct rapt_lmr *region_lmr;
	struct rapt_lmr *buf_lmr;
	struct rapt_lmr_info region_info;
	struct rapt_lmr_info buf_info;
	struct iwp_region remote;
};

static uint8_t region[IWP_REGION_LEN];
static uint8_t buf[BUF_LEN];

/* Fail with rapt's explanation when a call does not return 0. */
#define CHECK(call)							\
	do {								\
		int ret_ = (call);					\
		if (ret_)						\
			fail("%s: %s (%s)", #call, rapt_err_name(ret_),	\
			     rapt_last_error());			\
	} while (0)

static void expect_event(struct rapt_evd *evd, uint32_t want,
			 struct rapt_event *ev, const char *what)
{
	int ret = rapt_evd_wait(evd, STEP_TIMEOUT_US, 1, ev, NULL);

	if (ret)
		fail("%s: waiting for %s: %s", what, rapt_event_name(want),
		     rapt_err_name(ret));
	if (ev->type == want)
		return;
	if (ev->type == RAPT_EV_DTO)
		fail("%s: expected %s, got a DTO (op %u status %u prov %d)",
		     what, rapt_event_name(want), ev->u.dto.op,
		     ev->u.dto.status, ev->u.dto.prov_status);
	fail("%s: expected %s, got %s (%#x; reason %u, prov_status %d)",
	     what, rapt_event_name(want), rapt_event_name(ev->type), ev->type,
	     ev->u.conn.reason, ev->u.conn.prov_status);
}

/* ------------------------------------------------------------------ */
/* Resources                                                           */
/* ------------------------------------------------------------------ */

static void open_ia(struct peer *p)
{
	struct rapt_ia_attr attr;

	CHECK(rapt_ia_open(p->ia_name, &p->ia));
	CHECK(rapt_ia_query(p->ia, &attr, sizeof(attr)));
	if (attr.transport != RAPT_TRANSPORT_IWARP)
		fail("%s is not an iWARP IA", p->ia_name);
	if (!(attr.caps & RAPT_CAP_RAW_PDATA))
		fail("%s lacks RAPT_CAP_RAW_PDATA", p->ia_name);
	CHECK(rapt_pz_create(p->ia, &p->pz));
	CHECK(rapt_evd_create(p->ia, 16, RAPT_EVD_CONNECTION | RAPT_EVD_CR,
			      &p->cm_evd));
	CHECK(rapt_evd_create(p->ia, 16, RAPT_EVD_DTO, &p->recv_evd));
	CHECK(rapt_evd_create(p->ia, 16, RAPT_EVD_DTO, &p->req_evd));
	iwp_fill(region, IWP_HALF, p->active ? IWP_SEED_SRC_ACTIVE :
		 IWP_SEED_SRC_PASSIVE);
	CHECK(rapt_lmr_create(p->pz, region, sizeof(region),
			      RAPT_MEM_LOCAL_WRITE | RAPT_MEM_REMOTE_READ |
			      RAPT_MEM_REMOTE_WRITE, &p->region_lmr,
			      &p->region_info));
	CHECK(rapt_lmr_create(p->pz, buf, sizeof(buf), RAPT_MEM_LOCAL_WRITE,
			      &p->buf_lmr, &p->buf_info));
}

static void post_recv(struct peer *p, size_t off, uint64_t cookie)
{
	struct rapt_sge sge = { (uintptr_t)(buf + off), IWP_RECV_LEN,
				p->buf_info.lkey };

	CHECK(rapt_ep_post_recv(p->ep, &sge, 1, cookie));
}

/* A raw-pdata EP with both receives posted. */
static void create_ep(struct peer *p)
{
	struct rapt_ep_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.max_send = EP_DEPTH;
	attr.max_recv = EP_DEPTH;
	attr.rdma_read_in = IW_DEPTH;
	attr.rdma_read_out = IW_DEPTH;
	attr.flags = RAPT_EP_RAW_PDATA;
	CHECK(rapt_ep_create(p->pz, p->recv_evd, p->req_evd, p->cm_evd, &attr,
			     &p->ep));
	post_recv(p, OFF_RECV0, 0);
	post_recv(p, OFF_RECV1, 1);
}

static void teardown(struct peer *p)
{
	if (p->ep)
		CHECK(rapt_ep_free(p->ep));
	if (p->psp)
		CHECK(rapt_psp_free(p->psp));
	CHECK(rapt_lmr_free(p->buf_lmr));
	CHECK(rapt_lmr_free(p->region_lmr));
	CHECK(rapt_evd_free(p->req_evd));
	CHECK(rapt_evd_free(p->recv_evd));
	CHECK(rapt_evd_free(p->cm_evd));
	CHECK(rapt_pz_free(p->pz));
	CHECK(rapt_ia_close(p->ia));
}

/* ------------------------------------------------------------------ */
/* The script                                                          */
/* ------------------------------------------------------------------ */

static void wait_dto(struct rapt_evd *evd, uint32_t op, struct rapt_event *ev,
		     const char *what)
{
	expect_event(evd, RAPT_EV_DTO, ev, what);
	if (ev->u.dto.status != RAPT_DTO_SUCCESS)
		fail("%s: DTO status %u (prov_status %d)", what,
		     ev->u.dto.status, ev->u.dto.prov_status);
	if (ev->u.dto.op != op)
		fail("%s: DTO op %u, expected %u", what, ev->u.dto.op, op);
}

static void do_send(struct peer *p, uint32_t len, const char *what)
{
	struct rapt_sge sge = { (uintptr_t)(buf + OFF_SEND), len,
				p->buf_info.lkey };
	struct rapt_event ev;

	CHECK(rapt_ep_post_send(p->ep, &sge, 1, 10, 0));
	wait_dto(p->req_evd, RAPT_OP_SEND, &ev, what);
}

static void expect_recv(struct peer *p, size_t off, uint32_t len,
			unsigned int seed, const char *what)
{
	struct rapt_event ev;
	long bad;

	wait_dto(p->recv_evd, RAPT_OP_RECV, &ev, what);
	if (ev.u.dto.length != len)
		fail("%s: received %llu bytes, expected %u", what,
		     (unsigned long long)ev.u.dto.length, len);
	bad = iwp_check(buf + off, len, seed);
	if (bad >= 0)
		fail("%s: received data differs at offset %ld", what, bad);
	note("%s: %u bytes verified", what, len);
}

static void expect_done(struct peer *p, size_t off, const char *text)
{
	struct rapt_event ev;

	wait_dto(p->recv_evd, RAPT_OP_RECV, &ev, text);
	if (ev.u.dto.length != IWP_DONE_LEN ||
	    memcmp(buf + off, text, IWP_DONE_LEN))
		fail("expected \"%s\" (%d bytes), got %llu bytes", text,
		     IWP_DONE_LEN, (unsigned long long)ev.u.dto.length);
	if (ev.u.dto.flags != (RAPT_DTO_SOLICITED | RAPT_DTO_INVALIDATED) ||
	    ev.u.dto.invalidated_rkey != p->region_info.rkey)
		fail("\"%s\": flags %#x, invalidated rkey %#x; expected "
		     "SOLICITED and INVALIDATED of our region's rkey %#x",
		     text, ev.u.dto.flags, ev.u.dto.invalidated_rkey,
		     p->region_info.rkey);
	note("%s: Send with SE and Invalidate of rkey %#x verified", text,
	     ev.u.dto.invalidated_rkey);
}

/* The DONE message: a Send with Solicited Event and Invalidate of the
 * peer's region, whose last use this is. */
static void send_done(struct peer *p)
{
	struct rapt_sge sge = { (uintptr_t)(buf + OFF_SEND), IWP_DONE_LEN,
				p->buf_info.lkey };
	struct rapt_event ev;

	memcpy(buf + OFF_SEND, p->active ? "A-DONE" : "P-DONE", IWP_DONE_LEN);
	CHECK(rapt_ep_post_send_inv(p->ep, &sge, 1, 13, RAPT_POST_SOLICITED,
				    p->remote.rkey));
	wait_dto(p->req_evd, RAPT_OP_SEND, &ev, "SEND done");
}

/* RDMA WRITE our pattern into the peer's second half, RDMA READ its first
 * half and check it, then tell the peer with a SEND. */
static void rdma_both(struct peer *p)
{
	unsigned int wseed = p->active ? IWP_SEED_WRITE_A : IWP_SEED_WRITE_P;
	unsigned int rseed = p->active ? IWP_SEED_SRC_PASSIVE :
					 IWP_SEED_SRC_ACTIVE;
	struct rapt_sge sge;
	struct rapt_event ev;
	long bad;

	iwp_fill(buf + OFF_WSRC, IWP_HALF, wseed);
	sge = (struct rapt_sge){ (uintptr_t)(buf + OFF_WSRC), IWP_HALF,
				 p->buf_info.lkey };
	CHECK(rapt_ep_post_write(p->ep, &sge, 1, 11,
				 p->remote.addr + IWP_HALF, p->remote.rkey, 0));
	wait_dto(p->req_evd, RAPT_OP_RDMA_WRITE, &ev, "RDMA WRITE");
	sge = (struct rapt_sge){ (uintptr_t)(buf + OFF_SINK), IWP_HALF,
				 p->buf_info.lkey };
	CHECK(rapt_ep_post_read(p->ep, &sge, 1, 12, p->remote.addr,
				p->remote.rkey, 0));
	wait_dto(p->req_evd, RAPT_OP_RDMA_READ, &ev, "RDMA READ");
	if (ev.u.dto.length != IWP_HALF)
		fail("RDMA READ completed %llu bytes, expected %d",
		     (unsigned long long)ev.u.dto.length, IWP_HALF);
	bad = iwp_check(buf + OFF_SINK, IWP_HALF, rseed);
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
	long bad = iwp_check(region + IWP_HALF, IWP_HALF, seed);

	if (bad >= 0)
		fail("peer's RDMA WRITE data differs at offset %ld", bad);
	note("peer's RDMA WRITE of %d bytes verified", IWP_HALF);
}

static void run_script(struct peer *p)
{
	struct rapt_event ev;
	struct rapt_sge sge;

	if (p->active) {
		iwp_fill(buf + OFF_SEND, IWP_MSG1_LEN, IWP_SEED_MSG1);
		do_send(p, IWP_MSG1_LEN, "SEND msg1");
		expect_recv(p, OFF_RECV0, IWP_MSG2_LEN, IWP_SEED_MSG2,
			    "RECV msg2");
		rdma_both(p);
		expect_done(p, OFF_RECV1, "P-DONE");
		check_written(p);
	} else {
		/* msg2 is posted before msg1 is in (see iw_proto.h). */
		iwp_fill(buf + OFF_SEND, IWP_MSG2_LEN, IWP_SEED_MSG2);
		sge = (struct rapt_sge){ (uintptr_t)(buf + OFF_SEND),
					 IWP_MSG2_LEN, p->buf_info.lkey };
		CHECK(rapt_ep_post_send(p->ep, &sge, 1, 10, 0));
		expect_recv(p, OFF_RECV0, IWP_MSG1_LEN, IWP_SEED_MSG1,
			    "RECV msg1");
		wait_dto(p->req_evd, RAPT_OP_SEND, &ev, "SEND msg2");
		expect_done(p, OFF_RECV1, "A-DONE");
		check_written(p);
		rdma_both(p);
	}
}

static void finish(struct peer *p)
{
	struct rapt_event ev;

	if (p->disconnect)
		CHECK(rapt_ep_disconnect(p->ep, p->abrupt ? RAPT_CLOSE_ABRUPT :
					 RAPT_CLOSE_GRACEFUL, NULL, 0));
	expect_event(p->cm_evd, RAPT_EV_DISCONNECTED, &ev, "disconnect");
	note("disconnected (%s)", !p->disconnect ? "the peer closed" :
	     p->abrupt ? "we reset" : "we closed");
}

/* ------------------------------------------------------------------ */
/* Connection setup                                                    */
/* ------------------------------------------------------------------ */

/*
 * ESTABLISHED from siw.  siw never asks for peer-to-peer mode (its
 * peer_to_peer is a constant false in Linux 6.1), so a rapt passive side
 * must hold its sends until siw's first message, and say so; a rapt active
 * side offers P2P, siw echoes it and picks an RTR, so nothing is held.
 *
 * Foreignness: the active side learns it from the accept private data, so
 * its ESTABLISHED and rapt_ep_query() must say foreign.  The passive side
 * learnt it from the CR (checked in run_passive()); its ESTABLISHED carries
 * no private data and the core does not carry the CR's flag over to the
 * EP (rapt 1.0), so there it is only reported.
 */
static void check_established(struct peer *p, const struct rapt_event *ev)
{
	const struct rapt_event_conn *c = &ev->u.conn;
	struct rapt_ep_info info;
	int held = !p->active;

	CHECK(rapt_ep_query(p->ep, &info, sizeof(info)));
	if (info.state != RAPT_EP_CONNECTED)
		fail("rapt_ep_query: state %u, expected CONNECTED",
		     info.state);
	if (!(c->flags & RAPT_CONN_FOREIGN_PEER) ||
	    !(info.flags & RAPT_EPI_FOREIGN_PEER))
		fail("ESTABLISHED flags %#x, EP flags %#x: the peer is not "
		     "reported foreign", c->flags, info.flags);
	if (!!(c->flags & RAPT_CONN_SENDS_HELD) != held ||
	    !!(info.flags & RAPT_EPI_SENDS_HELD) != held)
		fail("ESTABLISHED flags %#x, EP flags %#x: SENDS_HELD should "
		     "be %s", c->flags, info.flags, held ? "set" : "clear");
	if (!c->rdma_read_in || !c->rdma_read_out)
		fail("ESTABLISHED with IRD %u ORD %u", c->rdma_read_in,
		     c->rdma_read_out);
	note("established: IRD %u ORD %u, event flags %#x, EP flags %#x%s",
	     c->rdma_read_in, c->rdma_read_out, c->flags, info.flags,
	     held ? " (sends held until the peer's first message)" : "");
}

static void run_passive(struct peer *p)
{
	uint8_t pd[IWP_PD_LEN], rj[IWP_REJECT_LEN];
	struct rapt_cr_info ci;
	struct rapt_event ev;
	struct iwp_region mine;
	const char *why;

	CHECK(rapt_psp_create(p->ia, p->port, p->cm_evd, NULL, &p->psp));
	note("listening on %s port %u", p->ia_name, p->port);
	fflush(stdout);
	expect_event(p->cm_evd, RAPT_EV_CR_ARRIVAL, &ev, "listen");
	CHECK(rapt_cr_query(ev.u.cr.cr, &ci, sizeof(ci)));
	if (!(ci.flags & RAPT_CRI_FOREIGN_PEER))
		fail("CR without RAPT_CRI_FOREIGN_PEER (flags %#x)", ci.flags);
	why = iwp_pd_parse(ci.pdata, ci.pdata_len, 1, &p->remote);
	if (why)
		fail("connect request: %s (%u bytes)", why, ci.pdata_len);
	note("request (foreign peer, IRD %u ORD %u) with %u bytes of raw "
	     "private data verified", ci.rdma_read_in, ci.rdma_read_out,
	     ci.pdata_len);
	if (p->reject) {
		iwp_reject_build(rj);
		CHECK(rapt_cr_reject(ev.u.cr.cr, rj, sizeof(rj)));
		note("rejected the request with %d bytes of private data",
		     IWP_REJECT_LEN);
		return;
	}
	create_ep(p);
	mine = (struct iwp_region){ p->region_info.raddr,
				    p->region_info.rkey, IWP_REGION_LEN };
	iwp_pd_build(pd, 0, &mine);
	CHECK(rapt_cr_accept(ev.u.cr.cr, p->ep, pd, sizeof(pd)));
	expect_event(p->cm_evd, RAPT_EV_ESTABLISHED, &ev, "accept");
	check_established(p, &ev);
	run_script(p);
	finish(p);
}

static void resolve(const char *host, struct sockaddr_storage *ss)
{
	struct addrinfo hints, *ai;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(host, NULL, &hints, &ai))
		fail("cannot parse address %s", host);
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
}

/* siw's reject reply: PEER_REJECTED, foreign, exactly its bytes. */
static void expect_reject(struct peer *p)
{
	struct rapt_event ev;
	const struct rapt_event_conn *c = &ev.u.conn;

	expect_event(p->cm_evd, RAPT_EV_PEER_REJECTED, &ev, "connect");
	if (!(c->flags & RAPT_CONN_FOREIGN_PEER))
		fail("PEER_REJECTED without RAPT_CONN_FOREIGN_PEER (flags "
		     "%#x)", c->flags);
	if (!iwp_reject_ok(c->pdata, c->pdata_len))
		fail("reject private data: %u bytes, not the %d expected",
		     c->pdata_len, IWP_REJECT_LEN);
	note("PEER_REJECTED (foreign peer, prov_status %d) with the %u bytes "
	     "of private data verified", c->prov_status, c->pdata_len);
}

static void run_active(struct peer *p)
{
	struct sockaddr_storage ss;
	uint8_t pd[IWP_PD_LEN];
	struct rapt_event ev;
	struct iwp_region mine;
	const char *why;

	resolve(p->addr, &ss);
	create_ep(p);
	mine = (struct iwp_region){ p->region_info.raddr,
				    p->region_info.rkey, IWP_REGION_LEN };
	iwp_pd_build(pd, 1, &mine);
	CHECK(rapt_ep_connect(p->ep, (struct sockaddr *)&ss, p->port, pd,
			      sizeof(pd), STEP_TIMEOUT_US));
	if (p->reject) {
		expect_reject(p);
		return;
	}
	expect_event(p->cm_evd, RAPT_EV_ESTABLISHED, &ev, "connect");
	why = iwp_pd_parse(ev.u.conn.pdata, ev.u.conn.pdata_len, 0,
			   &p->remote);
	if (why)
		fail("accept private data: %s (%u bytes)", why,
		     ev.u.conn.pdata_len);
	note("accept private data verified, peer region rkey %#x",
	     p->remote.rkey);
	check_established(p, &ev);
	run_script(p);
	finish(p);
}

static void usage(void)
{
	fprintf(stderr, "usage: rapt_iw_peer -i IA -s | -c ADDR [-p PORT] "
		"[-r] [-d]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct peer p;
	unsigned long port = IWP_DEFAULT_PORT;
	char *end;
	int c;

	memset(&p, 0, sizeof(p));
	p.active = -1;
	while ((c = getopt(argc, argv, "i:sc:p:rda")) != -1) {
		switch (c) {
		case 'i': p.ia_name = optarg; break;
		case 's': p.active = 0; break;
		case 'c': p.active = 1; p.addr = optarg; break;
		case 'p':
			port = strtoul(optarg, &end, 10);
			if (*end || !port || port > 65535)
				usage();
			break;
		case 'r': p.reject = 1; break;
		case 'd': p.disconnect = 1; break;
		case 'a': p.disconnect = p.abrupt = 1; break;
		default: usage();
		}
	}
	if (p.active < 0 || !p.ia_name || optind != argc)
		usage();
	p.port = (uint16_t)port;
	setvbuf(stdout, NULL, _IOLBF, 0);
	iwp_role = p.active ? "rapt_iw_peer(active)" : "rapt_iw_peer(passive)";
	open_ia(&p);
	if (p.active)
		run_active(&p);
	else
		run_passive(&p);
	teardown(&p);
	note("OK");
	return 0;
}
