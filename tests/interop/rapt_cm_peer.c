/* SPDX-License-Identifier: MIT */
/*
 * rapt_cm_peer - rapt programs that speak the protocols of rdma-core's own
 * rdma_cm examples (rdmacm-utils), so that those programs, which no one
 * here wrote, can be pointed at a rapt provider and rapt at them.  Any IA:
 * the VM suite (tests/vm/suite-foreign.sh) runs it on iwarp and on tcp.
 *
 * usage: rapt_cm_peer -i IA -m MODE -s [-p PORT] [-C N] [-S SIZE]   passive
 *        rapt_cm_peer -i IA -m MODE -c ADDR [-p PORT] [-C N] [-S SIZE] active
 *
 * MODE:
 *   rping     rping's ping-pong (librdmacm/examples/rping.c).  The client
 *             sends {addr, rkey, size} (big-endian) of a source buffer in
 *             a 16-byte Send; the server RDMA-reads it, sends a "go"; the
 *             client sends its sink buffer; the server RDMA-writes the
 *             data back and sends "go".  The client checks the echo byte
 *             for byte (rping -V); the server checks the text it read.
 *             -C pings (10), -S bytes (64).
 *   rdma      rdma_client/rdma_server: a 16-byte Send each way.
 *   ucmatose  ucmatose's exchange: the server sends -C messages of -S
 *             bytes (10, 100), the client receives them all, then sends
 *             as many back; the server disconnects.
 *
 * The EP is in RAPT_EP_RAW_PDATA mode: these programs send no private
 * data and expect none (so rapt cannot call them foreign either).  The
 * last line says "rapt_cm_peer: OK" on success.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <getopt.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rapt/rapt.h>

#define STEP_US		30000000	/* any one step */
#define MAX_SIZE	65536
#define MAX_COUNT	1024
#define RPING_INFO	16		/* struct rping_rdma_info */

enum mode { M_RPING, M_RDMA, M_UCMATOSE };

struct peer {
	enum mode mode;
	int active;
	const char *ia_name;
	const char *addr;
	uint16_t port;
	unsigned int count;
	unsigned int size;
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_evd *evd;		/* every stream */
	struct rapt_psp *psp;
	struct rapt_ep *ep;
	struct rapt_lmr *lmr;
	struct rapt_lmr_info li;
	unsigned int sends_out;		/* send completions still due */
};

/* One registered area: the rping buffers, then the message buffers. */
static struct {
	uint8_t start[MAX_SIZE];	/* rping: the client's source */
	uint8_t sink[MAX_SIZE];		/* rping: read into / written back */
	uint8_t send[RPING_INFO];
	uint8_t recv[2][RPING_INFO];
	uint8_t msgs[MAX_COUNT][128];
} area;

static void __attribute__((format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("rapt_cm_peer: FAIL: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	fflush(stdout);
	exit(1);
}

#define CHECK(call)							\
	do {								\
		int ret_ = (call);					\
		if (ret_)						\
			fail("%s: %s (%s)", #call, rapt_err_name(ret_),	\
			     rapt_last_error());			\
	} while (0)

static uint64_t addr_of(const void *p)
{
	return (uintptr_t)p;
}

/* Whether @len bytes at @p are all zero: IB's CM carries no length, so
 * "no private data" arrives as the whole field, zeroed. */
static int all_zero(const void *p, size_t len)
{
	const unsigned char *b = p;

	while (len--)
		if (*b++)
			return 0;
	return 1;
}

/* The next event.  (These peers send no private data at all, so rapt
 * cannot tell them from a rapt peer that sent none: no FOREIGN flag.) */
static void next_event(struct peer *p, struct rapt_event *ev,
		       const char *what)
{
	int ret = rapt_evd_wait(p->evd, STEP_US, 1, ev, NULL);

	if (ret)
		fail("waiting for %s: %s", what, rapt_err_name(ret));
	if (ev->type == RAPT_EV_ESTABLISHED && ev->u.conn.pdata_len &&
	    !all_zero(ev->u.conn.pdata, ev->u.conn.pdata_len))
		fail("%s carries %u bytes of private data",
		     rapt_event_name(ev->type), ev->u.conn.pdata_len);
}

/* Wait for a completion of @op (send completions on the way are
 * counted); fail on anything else. */
static void wait_dto(struct peer *p, uint32_t op, struct rapt_event *ev,
		     const char *what)
{
	for (;;) {
		next_event(p, ev, what);
		if (ev->type != RAPT_EV_DTO)
			fail("waiting for %s: %s", what,
			     rapt_event_name(ev->type));
		if (ev->u.dto.status != RAPT_DTO_SUCCESS)
			fail("%s: completion status %u (prov_status %#x)",
			     what, ev->u.dto.status, ev->u.dto.prov_status);
		if (ev->u.dto.op == RAPT_OP_SEND && op != RAPT_OP_SEND) {
			p->sends_out--;
			continue;
		}
		if (ev->u.dto.op != op)
			fail("waiting for %s: completion of op %u", what,
			     ev->u.dto.op);
		if (op == RAPT_OP_SEND)
			p->sends_out--;
		return;
	}
}

static void wait_conn(struct peer *p, uint32_t type, const char *what)
{
	struct rapt_event ev;

	for (;;) {
		next_event(p, &ev, what);
		if (ev.type == RAPT_EV_DTO &&
		    ev.u.dto.status == RAPT_DTO_FLUSHED)
			continue;
		if (ev.type == RAPT_EV_DTO && ev.u.dto.op == RAPT_OP_SEND &&
		    ev.u.dto.status == RAPT_DTO_SUCCESS) {
			p->sends_out--;
			continue;
		}
		if (ev.type != type)
			fail("waiting for %s: %s", what,
			     rapt_event_name(ev.type));
		return;
	}
}

static struct rapt_sge sge(struct peer *p, const void *buf, uint32_t len)
{
	struct rapt_sge s = {
		.addr = addr_of(buf), .length = len, .lkey = p->li.lkey,
	};

	return s;
}

static void post_recv(struct peer *p, void *buf, uint32_t len,
		      uint64_t cookie)
{
	struct rapt_sge s = sge(p, buf, len);

	CHECK(rapt_ep_post_recv(p->ep, &s, 1, cookie));
}

static void post_send(struct peer *p, const void *buf, uint32_t len)
{
	struct rapt_sge s = sge(p, buf, len);

	CHECK(rapt_ep_post_send(p->ep, &s, 1, 0, 0));
	p->sends_out++;
}

static void setup(struct peer *p)
{
	struct rapt_ep_attr a = {
		.max_send = 64, .max_recv = 64,
		.rdma_read_in = 4, .rdma_read_out = 4,
		.flags = RAPT_EP_RAW_PDATA,
	};
	unsigned int depth = p->mode == M_UCMATOSE ? p->count + 4 : 16;

	a.max_send = a.max_recv = depth;
	CHECK(rapt_ia_open(p->ia_name, &p->ia));
	CHECK(rapt_pz_create(p->ia, &p->pz));
	CHECK(rapt_evd_create(p->ia, 4 * depth + 16, RAPT_EVD_DTO |
			      RAPT_EVD_CONNECTION | RAPT_EVD_CR, &p->evd));
	CHECK(rapt_lmr_create(p->pz, &area, sizeof(area),
			      RAPT_MEM_LOCAL_WRITE | RAPT_MEM_REMOTE_READ |
			      RAPT_MEM_REMOTE_WRITE, &p->lmr, &p->li));
	CHECK(rapt_ep_create(p->pz, p->evd, p->evd, p->evd, &a, &p->ep));
}

/* Receives each mode needs before the connection comes up. */
static void prepost(struct peer *p)
{
	unsigned int i;

	switch (p->mode) {
	case M_RPING:
		post_recv(p, area.recv[0], RPING_INFO, 0);
		post_recv(p, area.recv[1], RPING_INFO, 1);
		break;
	case M_RDMA:
		post_recv(p, area.recv[0], 16, 0);
		break;
	case M_UCMATOSE:
		for (i = 0; i < p->count; i++)
			post_recv(p, area.msgs[i], p->size, i);
		break;
	}
}

static void resolve(const char *host, uint16_t port,
		    struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;

	if (getaddrinfo(host, NULL, &hints, &res))
		fail("cannot resolve %s", host);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	freeaddrinfo(res);
}

static void connect_up(struct peer *p)
{
	struct sockaddr_storage ss;

	resolve(p->addr, p->port, &ss);
	CHECK(rapt_ep_connect(p->ep, (struct sockaddr *)&ss, p->port, NULL, 0,
			      STEP_US));
	wait_conn(p, RAPT_EV_ESTABLISHED, "ESTABLISHED");
}

static void accept_up(struct peer *p)
{
	struct rapt_cr_info ci;
	struct rapt_event ev;

	CHECK(rapt_psp_create(p->ia, p->port, p->evd, NULL, &p->psp));
	printf("listening on port %u\n", p->port);
	fflush(stdout);
	next_event(p, &ev, "a connection request");
	if (ev.type != RAPT_EV_CR_ARRIVAL)
		fail("waiting for a request: %s", rapt_event_name(ev.type));
	CHECK(rapt_cr_query(ev.u.cr.cr, &ci, sizeof(ci)));
	if (!(ci.flags & RAPT_CRI_FOREIGN_PEER) && ci.pdata_len)
		fail("the request carries rapt's header");
	CHECK(rapt_cr_accept(ev.u.cr.cr, p->ep, NULL, 0));
	wait_conn(p, RAPT_EV_ESTABLISHED, "ESTABLISHED");
}

/* ---- rping ---------------------------------------------------------- */

static void rping_info(struct peer *p, const void *buf)
{
	uint64_t a = htobe64(addr_of(buf));
	uint32_t k = htobe32(p->li.rkey), n = htobe32(p->size);

	memcpy(area.send, &a, 8);
	memcpy(area.send + 8, &k, 4);
	memcpy(area.send + 12, &n, 4);
	post_send(p, area.send, RPING_INFO);
}

/* rping's source text for ping @ping, as rping_test_client makes it. */
static void rping_fill(uint8_t *b, unsigned int size, int ping, int *start)
{
	int cc = snprintf((char *)b, size, "rdma-ping-%d: ", ping);
	unsigned char c = (unsigned char)*start;
	unsigned int i;

	for (i = (unsigned int)cc; i < size; i++) {
		b[i] = c;
		if (++c > 122)
			c = 65;
	}
	if (++*start > 122)
		*start = 65;
	b[size - 1] = 0;
}

static void wait_recv_repost(struct peer *p, struct rapt_event *ev,
			     const char *what)
{
	wait_dto(p, RAPT_OP_RECV, ev, what);
	if (ev->u.dto.length != RPING_INFO)
		fail("%s: %llu bytes, expected %d", what,
		     (unsigned long long)ev->u.dto.length, RPING_INFO);
	post_recv(p, area.recv[ev->u.dto.cookie & 1], RPING_INFO,
		  ev->u.dto.cookie);
}

static void rping_client(struct peer *p)
{
	struct rapt_event ev;
	unsigned int ping;
	int start = 65;

	for (ping = 0; ping < p->count; ping++) {
		rping_fill(area.start, p->size, (int)ping, &start);
		memset(area.sink, 0, p->size);
		rping_info(p, area.start);
		wait_recv_repost(p, &ev, "the server's go after its read");
		rping_info(p, area.sink);
		wait_recv_repost(p, &ev, "the server's go after its write");
		if (memcmp(area.start, area.sink, p->size))
			fail("ping %u: the echo differs from what was sent",
			     ping);
	}
	printf("%u pings of %u bytes echoed exactly\n", p->count, p->size);
}

static void rping_remote(const uint8_t *b, uint64_t *addr, uint32_t *rkey,
			 uint32_t *len)
{
	uint64_t a;
	uint32_t k, n;

	memcpy(&a, b, 8);
	memcpy(&k, b + 8, 4);
	memcpy(&n, b + 12, 4);
	*addr = be64toh(a);
	*rkey = be32toh(k);
	*len = be32toh(n);
}

/* One ping as the server; false once the client has disconnected. */
static int rping_serve_one(struct peer *p, unsigned int ping)
{
	struct rapt_event ev;
	struct rapt_sge s;
	uint64_t raddr;
	uint32_t rkey, len;
	char want[32];

	next_event(p, &ev, "the client's source buffer");
	/* Our last sends' completions; once the client has gone, the
	 * flushed receives come before DISCONNECTED. */
	while (ev.type == RAPT_EV_DTO &&
	       (ev.u.dto.op == RAPT_OP_SEND ||
		ev.u.dto.status == RAPT_DTO_FLUSHED)) {
		if (ev.u.dto.op == RAPT_OP_SEND)
			p->sends_out--;
		next_event(p, &ev, "the client's source buffer");
	}
	if (ev.type == RAPT_EV_DISCONNECTED)
		return 0;
	if (ev.type != RAPT_EV_DTO || ev.u.dto.op != RAPT_OP_RECV ||
	    ev.u.dto.status != RAPT_DTO_SUCCESS ||
	    ev.u.dto.length != RPING_INFO)
		fail("ping %u: %s instead of the client's buffer", ping,
		     rapt_event_name(ev.type));
	rping_remote(area.recv[ev.u.dto.cookie & 1], &raddr, &rkey, &len);
	post_recv(p, area.recv[ev.u.dto.cookie & 1], RPING_INFO,
		  ev.u.dto.cookie);
	if (len > MAX_SIZE)
		fail("ping %u: a buffer of %u bytes", ping, len);
	s = sge(p, area.sink, len);
	CHECK(rapt_ep_post_read(p->ep, &s, 1, 7, raddr, rkey, 0));
	wait_dto(p, RAPT_OP_RDMA_READ, &ev, "the RDMA read");
	snprintf(want, sizeof(want), "rdma-ping-%u: ", ping);
	if (strncmp((char *)area.sink, want, strlen(want)))
		fail("ping %u: read \"%.20s\"", ping, (char *)area.sink);
	post_send(p, area.send, RPING_INFO);
	wait_recv_repost(p, &ev, "the client's sink buffer");
	rping_remote(area.recv[ev.u.dto.cookie & 1], &raddr, &rkey, &len);
	s = sge(p, area.sink, (uint32_t)strlen((char *)area.sink) + 1);
	CHECK(rapt_ep_post_write(p->ep, &s, 1, 8, raddr, rkey, 0));
	wait_dto(p, RAPT_OP_RDMA_WRITE, &ev, "the RDMA write");
	post_send(p, area.send, RPING_INFO);
	return 1;
}

static void rping_server(struct peer *p)
{
	unsigned int n = 0;

	while (rping_serve_one(p, n))
		n++;
	if (n < p->count)
		fail("%u pings, expected %u", n, p->count);
	printf("served %u pings, each read and echoed\n", n);
}

/* ---- rdma_server / rdma_client ---------------------------------------- */

static void rdma_exchange(struct peer *p)
{
	struct rapt_event ev;

	memset(area.send, 0, 16);
	if (p->active) {
		post_send(p, area.send, 16);
		wait_dto(p, RAPT_OP_RECV, &ev, "the server's reply");
	} else {
		wait_dto(p, RAPT_OP_RECV, &ev, "the client's message");
		post_send(p, area.send, 16);
	}
	if (ev.u.dto.length != 16)
		fail("a message of %llu bytes, expected 16",
		     (unsigned long long)ev.u.dto.length);
	while (p->sends_out)
		wait_dto(p, RAPT_OP_SEND, &ev, "the send");
	printf("16 bytes each way\n");
}

/* ---- ucmatose --------------------------------------------------------- */

static void uc_recv_all(struct peer *p)
{
	struct rapt_event ev;
	unsigned int i;

	for (i = 0; i < p->count; i++) {
		wait_dto(p, RAPT_OP_RECV, &ev, "a message");
		if (ev.u.dto.length != p->size)
			fail("message %u: %llu bytes, expected %u", i,
			     (unsigned long long)ev.u.dto.length, p->size);
	}
}

/* Post every message; their completions are counted on the way (the
 * peer's answers may come before them). */
static void uc_send_all(struct peer *p)
{
	unsigned int i;

	for (i = 0; i < p->count; i++) {
		memset(area.msgs[MAX_COUNT - 1], (int)i, p->size);
		post_send(p, area.msgs[MAX_COUNT - 1], p->size);
	}
}

static void uc_sends_done(struct peer *p)
{
	struct rapt_event ev;

	while (p->sends_out)
		wait_dto(p, RAPT_OP_SEND, &ev, "a send");
}

/* Free what setup() made, the EP down. */
static void teardown(struct peer *p)
{
	CHECK(rapt_ep_free(p->ep));
	if (p->psp)
		CHECK(rapt_psp_free(p->psp));
	CHECK(rapt_lmr_free(p->lmr));
	CHECK(rapt_evd_free(p->evd));
	CHECK(rapt_pz_free(p->pz));
	CHECK(rapt_ia_close(p->ia));
}

static void ucmatose(struct peer *p)
{
	struct timespec ts = { 0, 20000000 };

	if (p->active) {
		uc_recv_all(p);
		uc_send_all(p);
		uc_sends_done(p);
	} else {
		struct rapt_ep_info info;

		/* The tcp provider keeps RFC 5044's rule for an initiator
		 * that asked for no RTR (siw): nothing goes out before the
		 * peer's first message.  ucmatose's client sends only after
		 * it has received: that pairing cannot work. */
		CHECK(rapt_ep_query(p->ep, &info, sizeof(info)));
		if (info.flags & RAPT_EPI_SENDS_HELD) {
			printf("SKIP: our sends are held until the client's first message (it asked for no RTR: RFC 5044), and ucmatose's client waits for ours\n");
			/* Down and closed before exit: a process that exits
			 * with its IA open leaves the provider's threads
			 * running through exit(), where LeakSanitizer's scan
			 * of them has crashed (an ASan build in the VM). */
			CHECK(rapt_ep_disconnect(p->ep, RAPT_CLOSE_ABRUPT,
						 NULL, 0));
			wait_conn(p, RAPT_EV_DISCONNECTED, "DISCONNECTED");
			teardown(p);
			fflush(stdout);
			exit(77);
		}
		/* A foreign iWARP active side may not have read the MPA
		 * Reply yet (no peer-to-peer RTR): let it, as ucmatose's own
		 * server relies on too. */
		nanosleep(&ts, NULL);
		uc_send_all(p);
		uc_recv_all(p);
		uc_sends_done(p);
	}
	printf("%u messages of %u bytes each way\n", p->count, p->size);
}

/* ---------------------------------------------------------------------- */

static void run(struct peer *p)
{
	setup(p);
	prepost(p);
	if (p->active)
		connect_up(p);
	else
		accept_up(p);
	switch (p->mode) {
	case M_RPING:
		if (p->active)
			rping_client(p);
		else
			rping_server(p);
		break;
	case M_RDMA:
		rdma_exchange(p);
		break;
	case M_UCMATOSE:
		ucmatose(p);
		break;
	}
	/* rping's server and rdma_client end when the peer disconnects;
	 * the others disconnect themselves. */
	if (!(p->mode == M_RPING && !p->active) &&
	    !(p->mode == M_UCMATOSE && p->active)) {
		/* The peer may have been quicker (rdma_server disconnects
		 * as soon as its send is done): then the EP is down. */
		int ret = rapt_ep_disconnect(p->ep, RAPT_CLOSE_GRACEFUL,
					     NULL, 0);

		if (ret && ret != RAPT_ESTATE)
			fail("rapt_ep_disconnect: %s", rapt_err_name(ret));
		wait_conn(p, RAPT_EV_DISCONNECTED, "DISCONNECTED");
	} else if (!(p->mode == M_RPING && !p->active)) {
		wait_conn(p, RAPT_EV_DISCONNECTED, "DISCONNECTED");
	}
	teardown(p);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rapt_cm_peer -i IA -m rping|rdma|ucmatose (-s | -c ADDR) [-p PORT] [-C N] [-S SIZE]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct peer p = { .port = 7471, .count = 0, .size = 0 };
	const char *mode = NULL;
	int c;

	while ((c = getopt(argc, argv, "i:m:sc:p:C:S:")) != -1) {
		switch (c) {
		case 'i': p.ia_name = optarg; break;
		case 'm': mode = optarg; break;
		case 's': p.active = 0; break;
		case 'c': p.active = 1; p.addr = optarg; break;
		case 'p': p.port = (uint16_t)atoi(optarg); break;
		case 'C': p.count = (unsigned int)atoi(optarg); break;
		case 'S': p.size = (unsigned int)atoi(optarg); break;
		default: usage();
		}
	}
	if (!p.ia_name || !mode)
		usage();
	if (!strcmp(mode, "rping"))
		p.mode = M_RPING;
	else if (!strcmp(mode, "rdma"))
		p.mode = M_RDMA;
	else if (!strcmp(mode, "ucmatose"))
		p.mode = M_UCMATOSE;
	else
		usage();
	if (!p.count)
		p.count = 10;
	if (!p.size)
		p.size = p.mode == M_RPING ? 64 : 100;
	if (p.size > (p.mode == M_UCMATOSE ? 128u : (unsigned)MAX_SIZE) ||
	    p.count > MAX_COUNT - 1 || p.size < 32)
		usage();
	run(&p);
	printf("rapt_cm_peer: OK\n");
	return 0;
}
