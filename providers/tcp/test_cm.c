/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: connection management, through the public API over
 * 127.0.0.1 ("tcp:lo").
 *
 * Two-process cases fork a server before any IA is opened (so no provider
 * thread is copied) and talk to it over a socketpair.  The other cases play
 * the peer with plain sockets: a listener that never answers, a client that
 * never speaks, a peer that answers garbage, and hand-built MPA frames
 * checked byte for byte (shared/reference/wire-semantics.md 1).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>	/* SIOCINQ */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include <rapt/rapt.h>

#include "tests/scenario.h"
#include "tests/cu_table.h"

#define EV_MS		5000	/* generous: the machine is shared */
#define PD_FRAMED	248	/* 252 raw MPA bytes minus rapt's header */
#define PD_RAW		252

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

struct side {
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_evd *evd;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int side_open(struct side *s)
{
	memset(s, 0, sizeof(*s));
	TOK(rapt_ia_open("tcp:lo", &s->ia));
	TOK(rapt_pz_create(s->ia, &s->pz));
	TOK(rapt_evd_create(s->ia, 1024, RAPT_EVD_CR | RAPT_EVD_CONNECTION |
			    RAPT_EVD_DTO, &s->evd));
	return 0;
}

static int side_close(struct side *s)
{
	TOK(rapt_evd_free(s->evd));
	TOK(rapt_pz_free(s->pz));
	TOK(rapt_ia_close(s->ia));
	return 0;
}

static int ep_new(struct side *s, uint32_t flags, struct rapt_ep **ep)
{
	struct rapt_ep_attr a = { .flags = flags };

	TOK(rapt_ep_create(s->pz, s->evd, s->evd, s->evd, &a, ep));
	return 0;
}

static const struct sockaddr *lo_addr(void)
{
	static struct sockaddr_in sin;

	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return (const struct sockaddr *)&sin;
}

static int psp_new(struct side *s, uint32_t backlog, uint32_t hs_limit,
		   uint32_t hs_ms, struct rapt_psp **psp, uint16_t *port)
{
	struct rapt_psp_attr a = {
		.backlog = backlog,
		.handshake_limit = hs_limit,
		.handshake_timeout_ms = hs_ms,
	};
	struct rapt_psp_info info;

	TOK(rapt_psp_create(s->ia, RAPT_SERVICE_ID_ANY, s->evd, &a, psp));
	TOK(rapt_psp_query(*psp, &info, sizeof(info)));
	T(info.service_id >= 1 && info.service_id <= 65535);
	*port = (uint16_t)info.service_id;
	return 0;
}

/* Wait for one event of @type (0: any). */
static int ev_wait(struct side *s, uint32_t type, struct rapt_event *ev)
{
	int ret = rapt_evd_wait(s->evd, (int64_t)EV_MS * 1000, 1, ev, NULL);

	if (ret) {
		fprintf(stderr, "no event %#x: %s\n", type, rapt_strerror(ret));
		return -1;
	}
	if (type && ev->type != type) {
		fprintf(stderr, "expected event %#x, got %#x (reason %u, status %d)\n",
			type, ev->type, ev->u.conn.reason,
			ev->u.conn.prov_status);
		return -1;
	}
	return 0;
}

/* Nothing arrives within @ms. */
static int ev_none(struct side *s, int ms)
{
	struct rapt_event ev;
	int ret = rapt_evd_wait(s->evd, (int64_t)ms * 1000, 1, &ev, NULL);

	if (ret != RAPT_ETIMEDOUT) {
		fprintf(stderr, "unexpected event %#x\n", ret ? 0 : ev.type);
		return -1;
	}
	return 0;
}

/* Private data of length @n: letters only, so never rapt's magic. */
static void pattern(uint8_t *p, size_t n, char seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)('A' + (i * 7 + n + (size_t)seed) % 26);
}

static int pdata_is(const void *got, uint32_t got_len, size_t n, char seed)
{
	uint8_t want[512];

	pattern(want, n, seed);
	if (got_len != n || (n && (!got || memcmp(got, want, n)))) {
		fprintf(stderr, "private data: %u bytes, want %zu ('%c')\n",
			got_len, n, seed);
		return -1;
	}
	return 0;
}

/* Control channel between the two processes. */
static int ctl_send(int fd, uint32_t v)
{
	T(write(fd, &v, sizeof(v)) == (ssize_t)sizeof(v));
	return 0;
}

static int ctl_recv(int fd, uint32_t *v)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	T(poll(&p, 1, EV_MS) == 1);
	T(read(fd, v, sizeof(*v)) == (ssize_t)sizeof(*v));
	return 0;
}

/*
 * Fork @server(ctl), run @client(ctl, server pid); both must return 0,
 * unless @killed: then the client kills the server and only its own
 * verdict counts.
 */
static int run_two(int (*server)(int ctl), int (*client)(int ctl, pid_t pid),
		   bool killed)
{
	int sv[2], st = 0, rc;
	pid_t pid;

	T(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	fflush(NULL);
	pid = fork();
	T(pid >= 0);
	if (!pid) {
		close(sv[0]);
		exit(server(sv[1]) ? 1 : 0);
	}
	close(sv[1]);
	rc = client(sv[0], pid);
	if (rc)
		kill(pid, SIGKILL);
	close(sv[0]);
	T(waitpid(pid, &st, 0) == pid);
	T(!rc);
	if (killed)
		T(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	else if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "the server process failed (status %#x)\n", st);
		return -1;
	}
	return 0;
}

/* Plain sockets playing a non-rapt peer. */
static int plain_listen(uint16_t *port)
{
	struct sockaddr_in sin = *(const struct sockaddr_in *)lo_addr();
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(fd, 8) || getsockname(fd, (struct sockaddr *)&sin, &sl))
		return -1;
	*port = ntohs(sin.sin_port);
	return fd;
}

static int plain_connect(uint16_t port)
{
	struct sockaddr_in sin = *(const struct sockaddr_in *)lo_addr();
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	sin.sin_port = htons(port);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Read exactly @len bytes within EV_MS; 0 bytes at EOF. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		if (poll(&p, 1, EV_MS) != 1)
			return -1;
		n = read(fd, (uint8_t *)buf + got, len - got);
		if (n <= 0)
			return n < 0 ? -1 : (ssize_t)got;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Whether @fd reaches end of stream (or a reset) within @ms. */
static int wait_eof(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	T(poll(&p, 1, ms) == 1);
	T(read(fd, &c, 1) <= 0);
	return 0;
}

/* An MPA frame as the RFCs lay it out, built by hand. */
static size_t mpa_frame(uint8_t *b, bool req, uint8_t flags, uint8_t rev,
			int ird, int ord, const void *pd, size_t pd_len)
{
	size_t v2 = ird >= 0 ? 4 : 0;

	memcpy(b, req ? "MPA ID Req Frame" : "MPA ID Rep Frame", 16);
	b[16] = flags;
	b[17] = rev;
	b[18] = (uint8_t)((v2 + pd_len) >> 8);
	b[19] = (uint8_t)(v2 + pd_len);
	if (v2) {
		b[20] = (uint8_t)(ird >> 8);
		b[21] = (uint8_t)ird;
		b[22] = (uint8_t)(ord >> 8);
		b[23] = (uint8_t)ord;
	}
	if (pd_len)
		memcpy(b + 20 + v2, pd, pd_len);
	return 20 + v2 + pd_len;
}

/* The zero-length Write RTR an initiator sends after the reply. */
static const uint8_t rtr[20] = {
	0x00, 0x0e, 0xc1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* The zero-length Read RTR: QN 1, MSN 1, sink STag 0x5a, size 0. */
static const uint8_t rtr_read[52] = {
	0x00, 0x2e, 0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1,
	0, 0, 0, 0,				/* MO */
	0, 0, 0, 0x5a, 0, 0, 0, 0, 0, 0, 0, 0,	/* sink STag, TO */
	0, 0, 0, 0,				/* size 0 */
	0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,	/* source STag, TO */
	0, 0, 0, 0,				/* CRC field, C not set */
};

/* The mark rapt's tcp provider puts after its framed private data. */
#define MARK_LEN	4
static const uint8_t mark[MARK_LEN] = { 'r', 't', 'c', 'p' };

/* A plain socket listens, @ep connects to it without private data, the
 * socket is accepted as *@fd and the 32-byte request read: rapt's
 * header with no consumer bytes, and the mark. */
static int raw_responder(struct side *s, int *lfd, int *fd,
			 struct rapt_ep **ep)
{
	uint8_t b[28 + MARK_LEN];
	uint16_t port;

	*lfd = plain_listen(&port);
	T(*lfd >= 0);
	T(!ep_new(s, 0, ep));
	TOK(rapt_ep_connect(*ep, lo_addr(), port, NULL, 0, 5000000));
	*fd = accept(*lfd, NULL, NULL);
	T(*fd >= 0 && read_full(*fd, b, sizeof(b)) == sizeof(b));
	T(b[19] == 4 + 4 + MARK_LEN && !memcmp(b + 28, mark, MARK_LEN));
	return 0;
}

/* ------------------------------------------------------------------ */
/* Private data of every size on connect, accept and reject            */
/* ------------------------------------------------------------------ */

/* The schedule both processes walk: raw EPs use RAPT_EP_RAW_PDATA. */
struct pd_case {
	bool raw;
	bool reject;
	uint32_t n;
};

static uint32_t pd_ncases(void)
{
	return (PD_FRAMED + 1) * 2 + (PD_RAW + 1) + PD_RAW;
}

static struct pd_case pd_case(uint32_t i)
{
	struct pd_case c = { 0 };

	if (i <= PD_FRAMED)
		return (struct pd_case){ false, false, i };
	i -= PD_FRAMED + 1;
	if (i <= PD_FRAMED)
		return (struct pd_case){ false, true, i };
	i -= PD_FRAMED + 1;
	if (i <= PD_RAW)
		return (struct pd_case){ true, false, i };
	i -= PD_RAW + 1;
	/* A raw reject needs a foreign CR (its data goes back raw), so the
	 * request carries a byte; 0-byte raw rejects are tested apart. */
	c.raw = true;
	c.reject = true;
	c.n = i + 1;
	return c;
}

/* Connect pdata of a case: n bytes, or 1 for a raw reject. */
static size_t pd_conn_len(struct pd_case c)
{
	return c.raw && c.reject ? 1 : c.n;
}

static int pd_serve_one(struct side *s, struct pd_case c)
{
	uint8_t pd[PD_RAW];
	struct rapt_cr_info info;
	struct rapt_event ev;
	struct rapt_ep *ep;
	size_t clen = pd_conn_len(c);

	T(!ev_wait(s, RAPT_EV_CR_ARRIVAL, &ev));
	TOK(rapt_cr_query(ev.u.cr.cr, &info, sizeof(info)));
	T(!pdata_is(info.pdata, info.pdata_len, clen, 'c'));
	T(!!(info.flags & RAPT_CRI_FOREIGN_PEER) == c.raw);
	pattern(pd, c.n, c.reject ? 'r' : 'a');
	if (c.reject) {
		TOK(rapt_cr_reject(ev.u.cr.cr, pd, c.n));
		return 0;
	}
	T(!ep_new(s, c.raw ? RAPT_EP_RAW_PDATA : 0, &ep));
	TOK(rapt_cr_accept(ev.u.cr.cr, ep, pd, c.n));
	T(!ev_wait(s, RAPT_EV_ESTABLISHED, &ev));
	T(ev.u.conn.ep == ep && ev.u.conn.pdata_len == 0);
	T(!ev_wait(s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_free(ep));
	return 0;
}

static int pd_server(int ctl)
{
	struct rapt_psp *psp;
	struct side s;
	uint16_t port;
	uint32_t i;

	T(!side_open(&s));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	T(!ctl_send(ctl, port));
	for (i = 0; i < pd_ncases(); i++) {
		if (pd_serve_one(&s, pd_case(i))) {
			fprintf(stderr, "server: case %u failed\n", i);
			return -1;
		}
	}
	TOK(rapt_psp_free(psp));
	return side_close(&s);
}

static int pd_connect_one(struct side *s, uint16_t port, struct pd_case c)
{
	uint8_t pd[PD_RAW];
	struct rapt_event ev;
	struct rapt_ep *ep;
	size_t clen = pd_conn_len(c);

	T(!ep_new(s, c.raw ? RAPT_EP_RAW_PDATA : 0, &ep));
	pattern(pd, clen, 'c');
	TOK(rapt_ep_connect(ep, lo_addr(), port, pd, clen, 5000000));
	T(!ev_wait(s, c.reject ? RAPT_EV_PEER_REJECTED : RAPT_EV_ESTABLISHED,
		   &ev));
	T(ev.u.conn.ep == ep);
	T(!pdata_is(ev.u.conn.pdata, ev.u.conn.pdata_len, c.n,
		    c.reject ? 'r' : 'a'));
	/* Raw bytes are foreign; so is an empty raw accept (a rapt peer
	 * sends its header even then); an empty reject says nothing. */
	T(!!(ev.u.conn.flags & RAPT_CONN_FOREIGN_PEER) ==
	  (c.raw && (c.n || !c.reject)));
	if (!c.reject) {
		TOK(rapt_ep_disconnect(ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
		T(!ev_wait(s, RAPT_EV_DISCONNECTED, &ev));
	}
	TOK(rapt_ep_free(ep));
	return 0;
}

static int pd_client(int ctl, pid_t pid)
{
	struct side s;
	uint32_t port, i;

	T(!ctl_recv(ctl, &port));
	T(!side_open(&s));
	for (i = 0; i < pd_ncases(); i++) {
		if (pd_connect_one(&s, (uint16_t)port, pd_case(i))) {
			fprintf(stderr, "client: case %u (raw %d, reject %d, %u bytes) failed\n",
				i, pd_case(i).raw, pd_case(i).reject,
				pd_case(i).n);
			return -1;
		}
	}
	return side_close(&s);
}

static void test_pdata_every_size(void)
{
	CU_ASSERT_EQUAL(run_two(pd_server, pd_client, false), 0);
}

/* A raw reject of 0 bytes: iWARP cannot tell who rejected. */
static int raw_reject0(void)
{
	struct rapt_psp *psp;
	struct rapt_ep *ep;
	struct rapt_event ev;
	struct side s;
	uint16_t port;
	uint8_t b = 'x';

	T(!side_open(&s));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	T(!ep_new(&s, RAPT_EP_RAW_PDATA, &ep));
	TOK(rapt_ep_connect(ep, lo_addr(), port, &b, 1, 5000000));
	T(!ev_wait(&s, RAPT_EV_CR_ARRIVAL, &ev));
	TOK(rapt_cr_reject(ev.u.cr.cr, NULL, 0));
	T(!ev_wait(&s, RAPT_EV_NON_PEER_REJECTED, &ev));
	T(ev.u.conn.reason == RAPT_REJECT_UNKNOWN && !ev.u.conn.pdata_len);
	TOK(rapt_ep_free(ep));
	TOK(rapt_psp_free(psp));
	return side_close(&s);
}

static void test_raw_reject_empty(void)
{
	CU_ASSERT_EQUAL(raw_reject0(), 0);
}

/* ------------------------------------------------------------------ */
/* PEER_REJECTED vs NON_PEER_REJECTED/BUSY                             */
/* ------------------------------------------------------------------ */

static int busy_server(int ctl)
{
	struct rapt_psp_info info;
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct side s;
	uint16_t port;
	uint32_t v;

	T(!side_open(&s));
	T(!psp_new(&s, 1, 0, 0, &psp, &port));
	T(!ctl_send(ctl, port));
	T(!ev_wait(&s, RAPT_EV_CR_ARRIVAL, &ev));
	T(!ctl_send(ctl, 1));		/* CR 1 pending: send client 2 */
	T(!ctl_recv(ctl, &v));		/* client 2 was refused */
	TOK(rapt_psp_query(psp, &info, sizeof(info)));
	T(info.pending_crs == 1 && info.busy_rejects == 1);
	TOK(rapt_cr_reject(ev.u.cr.cr, "no", 2));
	TOK(rapt_psp_query(psp, &info, sizeof(info)));
	T(info.pending_crs == 0 && info.rejected == 1);
	T(!ev_none(&s, 100));		/* client 2 never became a CR */
	TOK(rapt_psp_free(psp));
	return side_close(&s);
}

static int busy_client(int ctl, pid_t pid)
{
	struct rapt_ep *ep1, *ep2;
	struct rapt_event ev;
	struct side s;
	uint32_t port, v;

	T(!ctl_recv(ctl, &port));
	T(!side_open(&s));
	T(!ep_new(&s, 0, &ep1));
	T(!ep_new(&s, 0, &ep2));
	TOK(rapt_ep_connect(ep1, lo_addr(), port, "one", 3, 5000000));
	T(!ctl_recv(ctl, &v));
	TOK(rapt_ep_connect(ep2, lo_addr(), port, "two", 3, 5000000));
	T(!ev_wait(&s, RAPT_EV_NON_PEER_REJECTED, &ev));
	T(ev.u.conn.ep == ep2 && ev.u.conn.reason == RAPT_REJECT_BUSY);
	T(!ev.u.conn.pdata_len);
	T(!ctl_send(ctl, 2));
	T(!ev_wait(&s, RAPT_EV_PEER_REJECTED, &ev));
	T(ev.u.conn.ep == ep1);
	T(ev.u.conn.pdata_len == 2 && !memcmp(ev.u.conn.pdata, "no", 2));
	TOK(rapt_ep_free(ep1));
	TOK(rapt_ep_free(ep2));
	return side_close(&s);
}

static void test_busy_vs_peer_reject(void)
{
	CU_ASSERT_EQUAL(run_two(busy_server, busy_client, false), 0);
}

/* ------------------------------------------------------------------ */
/* Connect failures                                                    */
/* ------------------------------------------------------------------ */

static int no_listener(void)
{
	struct rapt_event ev;
	struct rapt_ep *ep;
	struct side s;
	uint16_t port;
	int fd = plain_listen(&port);

	T(fd >= 0);
	close(fd);		/* the port is free and nobody listens */
	T(!side_open(&s));
	T(!ep_new(&s, 0, &ep));
	TOK(rapt_ep_connect(ep, lo_addr(), port, NULL, 0, 5000000));
	T(!ev_wait(&s, RAPT_EV_NON_PEER_REJECTED, &ev));
	T(ev.u.conn.reason == RAPT_REJECT_NO_LISTENER);
	TOK(rapt_ep_free(ep));
	return side_close(&s);
}

static void test_no_listener(void)
{
	CU_ASSERT_EQUAL(no_listener(), 0);
}

/* TCP is accepted (by the kernel) but nobody ever answers the request. */
static int connect_timeout(void)
{
	enum rapt_ep_state st;
	struct rapt_event ev;
	struct rapt_ep *ep;
	struct side s;
	uint64_t t0, dt;
	uint16_t port;
	int fd = plain_listen(&port);

	T(fd >= 0);
	T(!side_open(&s));
	T(!ep_new(&s, 0, &ep));
	t0 = now_ms();
	TOK(rapt_ep_connect(ep, lo_addr(), port, NULL, 0, 300000));
	T(!ev_wait(&s, RAPT_EV_TIMED_OUT, &ev));
	dt = now_ms() - t0;
	T(dt >= 290 && dt < 3000);
	TOK(rapt_ep_get_state(ep, &st));
	T(st == RAPT_EP_DISCONNECTED);
	TOK(rapt_ep_free(ep));
	close(fd);
	return side_close(&s);
}

static void test_connect_timeout(void)
{
	CU_ASSERT_EQUAL(connect_timeout(), 0);
}

/* A peer that answers garbage, and one that closes without answering. */
static int bad_peer(bool garbage)
{
	static const char junk[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
	uint8_t req[300];
	struct rapt_event ev;
	struct rapt_ep *ep;
	struct side s;
	uint16_t port;
	int lfd = plain_listen(&port), fd;

	T(lfd >= 0);
	T(!side_open(&s));
	T(!ep_new(&s, 0, &ep));
	TOK(rapt_ep_connect(ep, lo_addr(), port, "hi", 2, 5000000));
	fd = accept(lfd, NULL, NULL);
	T(fd >= 0);
	T(read_full(fd, req, 20 + 4 + 4 + 2 + MARK_LEN) == 30 + MARK_LEN);
	if (garbage)
		T(write(fd, junk, sizeof(junk) - 1) > 0);
	else
		close(fd);
	T(!ev_wait(&s, RAPT_EV_NON_PEER_REJECTED, &ev));
	T(ev.u.conn.reason == RAPT_REJECT_PROTOCOL);
	if (garbage) {
		/* A Terminate (layer LLP, bad request/reply), then close. */
		T(read_full(fd, req, 28) == 28);
		T(req[0] == 0 && req[1] == 22 && req[2] == 0x41 &&
		  req[3] == 0x47);
		T(req[20] == 0x20 && req[21] == 0x04);
		T(!wait_eof(fd, EV_MS));
		close(fd);
	}
	TOK(rapt_ep_free(ep));
	close(lfd);
	return side_close(&s);
}

static void test_garbage_peer(void)
{
	CU_ASSERT_EQUAL(bad_peer(true), 0);
}

static void test_peer_closes_in_handshake(void)
{
	CU_ASSERT_EQUAL(bad_peer(false), 0);
}

/* ------------------------------------------------------------------ */
/* The listener's handshake accounting                                 */
/* ------------------------------------------------------------------ */

static int psp_wait_info(struct rapt_psp *psp, uint32_t in_hs,
			 uint64_t timeouts, struct rapt_psp_info *info)
{
	uint64_t end = now_ms() + EV_MS;

	do {
		TOK(rapt_psp_query(psp, info, sizeof(*info)));
		if (info->in_handshake == in_hs &&
		    info->handshake_timeouts == timeouts)
			return 0;
		usleep(2000);
	} while (now_ms() < end);
	fprintf(stderr, "in_handshake %u (want %u), handshake_timeouts %llu (want %llu)\n",
		info->in_handshake, in_hs,
		(unsigned long long)info->handshake_timeouts,
		(unsigned long long)timeouts);
	return -1;
}

/* Accept @cr on a new EP and see both sides established. */
static int establish(struct side *srv, struct side *cli, struct rapt_ep *cep,
		     struct rapt_cr *cr, struct rapt_ep **sep)
{
	struct rapt_event ev;

	T(!ep_new(srv, 0, sep));
	TOK(rapt_cr_accept(cr, *sep, NULL, 0));
	T(!ev_wait(cli, RAPT_EV_ESTABLISHED, &ev) && ev.u.conn.ep == cep);
	T(!ev_wait(srv, RAPT_EV_ESTABLISHED, &ev) && ev.u.conn.ep == *sep);
	return 0;
}

static int silent_client(void)
{
	struct rapt_ep *cep, *sep;
	struct rapt_psp_info info;
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct side srv, cli;
	uint64_t t0;
	uint16_t port;
	int fd;

	T(!side_open(&srv) && !side_open(&cli));
	T(!psp_new(&srv, 0, 0, 400, &psp, &port));
	t0 = now_ms();
	fd = plain_connect(port);
	T(fd >= 0);
	T(!psp_wait_info(psp, 1, 0, &info));
	/* A real client gets through while the silent one waits. */
	T(!ep_new(&cli, 0, &cep));
	TOK(rapt_ep_connect(cep, lo_addr(), port, NULL, 0, 5000000));
	T(!ev_wait(&srv, RAPT_EV_CR_ARRIVAL, &ev));
	T(!establish(&srv, &cli, cep, ev.u.cr.cr, &sep));
	TOK(rapt_psp_query(psp, &info, sizeof(info)));
	T(info.in_handshake == 1 && info.accepted == 1);
	/* Then the silent one is dropped, after the handshake timeout. */
	T(!wait_eof(fd, EV_MS));
	T(now_ms() - t0 >= 390);
	T(!psp_wait_info(psp, 0, 1, &info));
	close(fd);
	TOK(rapt_ep_free(cep));
	TOK(rapt_ep_free(sep));
	TOK(rapt_psp_free(psp));
	T(!side_close(&cli));
	return side_close(&srv);
}

static void test_silent_client(void)
{
	CU_ASSERT_EQUAL(silent_client(), 0);
}

/* Over the handshake limit: refused as BUSY before anything is read. */
/* One prompt client against a full handshake limit; 0 if it got in. */
static int prompt_client(struct side *srv, struct side *cli, uint16_t port)
{
	struct rapt_ep *cep, *sep;
	struct rapt_event ev;

	T(!ep_new(cli, 0, &cep));
	TOK(rapt_ep_connect(cep, lo_addr(), port, "hi", 2, 5000000));
	T(!ev_wait(srv, RAPT_EV_CR_ARRIVAL, &ev));
	T(!establish(srv, cli, cep, ev.u.cr.cr, &sep));
	TOK(rapt_ep_free(cep));		/* a reset: BROKEN */
	T(!ev_wait(srv, 0, &ev) && ev.u.conn.ep == sep);
	T(ev.type == RAPT_EV_BROKEN || ev.type == RAPT_EV_DISCONNECTED);
	TOK(rapt_ep_free(sep));
	return 0;
}

/*
 * A full handshake limit (1): a silent client makes room for a prompt
 * one (it is dropped: EOF), so no BUSY; a client that has sent part of
 * its request keeps its slot, and then the next one gets BUSY.
 */
static int handshake_limit(void)
{
	struct rapt_psp_info info;
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct rapt_ep *ep;
	struct side srv, cli;
	uint16_t port;
	int fd;

	T(!side_open(&srv) && !side_open(&cli));
	T(!psp_new(&srv, 0, 1, 5000, &psp, &port));
	fd = plain_connect(port);
	T(fd >= 0);
	T(!psp_wait_info(psp, 1, 0, &info));
	T(!prompt_client(&srv, &cli, port));
	T(!wait_eof(fd, EV_MS));	/* the silent one made room */
	close(fd);
	TOK(rapt_psp_query(psp, &info, sizeof(info)));
	T(info.busy_rejects == 0 && info.in_handshake == 0);

	fd = plain_connect(port);
	T(fd >= 0);
	T(write(fd, "MPA ID Req", 10) == 10);	/* making progress */
	T(!psp_wait_info(psp, 1, 0, &info));
	T(!ep_new(&cli, 0, &ep));
	TOK(rapt_ep_connect(ep, lo_addr(), port, NULL, 0, 5000000));
	T(!ev_wait(&cli, RAPT_EV_NON_PEER_REJECTED, &ev));
	T(ev.u.conn.reason == RAPT_REJECT_BUSY);
	TOK(rapt_psp_query(psp, &info, sizeof(info)));
	T(info.busy_rejects == 1 && info.in_handshake == 1);
	close(fd);
	T(!psp_wait_info(psp, 0, 0, &info));
	TOK(rapt_ep_free(ep));
	TOK(rapt_psp_free(psp));
	T(!side_close(&cli));
	return side_close(&srv);
}

/*
 * The bar of issue #13: 1,000 silent connections held open against the
 * default handshake limit (128), and 100 prompt clients connecting during
 * them: every one gets in.  The silent ones stay connected (only the
 * listener drops the oldest of them).
 */
#define FLOOD_SILENT	1000
#define FLOOD_PROMPT	100

static int half_open_flood(void)
{
	struct rapt_psp_info info;
	struct rapt_psp *psp;
	struct side srv, cli;
	struct rlimit rl;
	int fds[FLOOD_SILENT], n = 0, ok = 0, ret = -1;
	uint16_t port;

	T(!getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_max < FLOOD_SILENT + 512) {
		cu_skip("half-open flood: RLIMIT_NOFILE hard limit too low");
		return 0;
	}
	rl.rlim_cur = rl.rlim_max;
	T(!setrlimit(RLIMIT_NOFILE, &rl));
	T(!side_open(&srv) && !side_open(&cli));
	T(!psp_new(&srv, 0, 0, 0, &psp, &port));
	for (n = 0; n < FLOOD_SILENT; n++) {
		fds[n] = plain_connect(port);
		if (fds[n] < 0)
			goto out;
		/* a prompt client every tenth silent one */
		if (n % (FLOOD_SILENT / FLOOD_PROMPT) == 0 &&
		    !prompt_client(&srv, &cli, port))
			ok++;
	}
	TOK(rapt_psp_query(psp, &info, sizeof(info)));
	fprintf(stderr, "flood: %d silent, %d of %d prompt clients in, busy %llu, in_handshake %u\n",
		n, ok, FLOOD_PROMPT, (unsigned long long)info.busy_rejects,
		info.in_handshake);
	if (ok == FLOOD_PROMPT && info.busy_rejects == 0 &&
	    info.in_handshake <= info.handshake_limit)
		ret = 0;
out:
	while (n-- > 0)
		close(fds[n]);
	TOK(rapt_psp_free(psp));
	T(!side_close(&cli));
	T(!side_close(&srv));
	return ret;
}

static void test_half_open_flood(void)
{
	CU_ASSERT_EQUAL(half_open_flood(), 0);
}

static void test_handshake_limit(void)
{
	CU_ASSERT_EQUAL(handshake_limit(), 0);
}

/* The requester leaves while its CR is undecided. */
static int cr_cancelled(void)
{
	uint8_t f[64];
	struct rapt_psp_info info;
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct rapt_ep *ep;
	struct side s;
	uint16_t port;
	uint64_t end;
	int fd;

	T(!side_open(&s));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	fd = plain_connect(port);
	T(fd >= 0);
	T(write(fd, f, mpa_frame(f, true, 0x10, 2, 0x8004, 0xc004, "x", 1)) ==
	  25);
	T(!ev_wait(&s, RAPT_EV_CR_ARRIVAL, &ev));
	close(fd);
	end = now_ms() + EV_MS;
	do {
		TOK(rapt_psp_query(psp, &info, sizeof(info)));
	} while (info.pending_crs && now_ms() < end && !usleep(2000));
	T(!info.pending_crs);
	T(!ep_new(&s, 0, &ep));
	T(rapt_cr_accept(ev.u.cr.cr, ep, NULL, 0) == RAPT_ENOTCONN);
	TOK(rapt_ep_free(ep));
	TOK(rapt_psp_free(psp));
	return side_close(&s);
}

static void test_cr_cancelled(void)
{
	CU_ASSERT_EQUAL(cr_cancelled(), 0);
}

/* ------------------------------------------------------------------ */
/* Disconnect                                                          */
/* ------------------------------------------------------------------ */

enum disc_mode {
	DISC_CLIENT_GRACEFUL,
	DISC_SERVER_GRACEFUL,
	DISC_CLIENT_ABRUPT,
	DISC_KILL_SERVER,
};

static enum disc_mode disc_mode;

/* An EP with one receive posted, to see it flushed before the end. */
struct disc_ep {
	struct rapt_ep *ep;
	struct rapt_lmr *lmr;
	uint8_t buf[64];
};

static int disc_ep_new(struct side *s, struct disc_ep *d)
{
	struct rapt_lmr_info li;
	struct rapt_sge sge;

	T(!ep_new(s, 0, &d->ep));
	TOK(rapt_lmr_create(s->pz, d->buf, sizeof(d->buf),
			    RAPT_MEM_LOCAL_WRITE, &d->lmr, &li));
	sge.addr = (uintptr_t)d->buf;
	sge.length = sizeof(d->buf);
	sge.lkey = li.lkey;
	TOK(rapt_ep_post_recv(d->ep, &sge, 1, 77));
	return 0;
}

/* The posted receive completes FLUSHED, then @type arrives. */
static int disc_end(struct side *s, struct disc_ep *d, uint32_t type)
{
	struct rapt_event ev;

	T(!ev_wait(s, RAPT_EV_DTO, &ev));
	T(ev.u.dto.ep == d->ep && ev.u.dto.cookie == 77 &&
	  ev.u.dto.status == RAPT_DTO_FLUSHED);
	T(!ev_wait(s, 0, &ev));
	T(ev.u.conn.ep == d->ep);
	if (ev.type != type &&
	    !(type == RAPT_EV_BROKEN && ev.type == RAPT_EV_DISCONNECTED)) {
		fprintf(stderr, "got event %#x, want %#x\n", ev.type, type);
		return -1;
	}
	TOK(rapt_ep_free(d->ep));
	TOK(rapt_lmr_free(d->lmr));
	return 0;
}

static int disc_server(int ctl)
{
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct disc_ep d;
	struct side s;
	uint16_t port;

	T(!side_open(&s));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	T(!ctl_send(ctl, port));
	T(!disc_ep_new(&s, &d));
	T(!ev_wait(&s, RAPT_EV_CR_ARRIVAL, &ev));
	TOK(rapt_cr_accept(ev.u.cr.cr, d.ep, NULL, 0));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(!ctl_send(ctl, 1));
	if (disc_mode == DISC_KILL_SERVER)
		pause();	/* until killed */
	if (disc_mode == DISC_SERVER_GRACEFUL)
		TOK(rapt_ep_disconnect(d.ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
	T(!disc_end(&s, &d, disc_mode == DISC_CLIENT_ABRUPT ?
		    RAPT_EV_BROKEN : RAPT_EV_DISCONNECTED));
	TOK(rapt_psp_free(psp));
	return side_close(&s);
}

static int disc_client(int ctl, pid_t pid)
{
	struct rapt_event ev;
	struct disc_ep d;
	struct side s;
	uint32_t port, v;
	uint64_t t0;

	T(!ctl_recv(ctl, &port));
	T(!side_open(&s));
	T(!disc_ep_new(&s, &d));
	TOK(rapt_ep_connect(d.ep, lo_addr(), port, NULL, 0, 5000000));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(!ctl_recv(ctl, &v));
	t0 = now_ms();
	switch (disc_mode) {
	case DISC_CLIENT_GRACEFUL:
		TOK(rapt_ep_disconnect(d.ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
		T(!disc_end(&s, &d, RAPT_EV_DISCONNECTED));
		break;
	case DISC_CLIENT_ABRUPT:
		TOK(rapt_ep_disconnect(d.ep, RAPT_CLOSE_ABRUPT, NULL, 0));
		T(!disc_end(&s, &d, RAPT_EV_DISCONNECTED));
		break;
	case DISC_SERVER_GRACEFUL:
		T(!disc_end(&s, &d, RAPT_EV_DISCONNECTED));
		break;
	case DISC_KILL_SERVER:
		T(!kill(pid, SIGKILL));
		T(!disc_end(&s, &d, RAPT_EV_BROKEN));
		T(now_ms() - t0 < 2000);
		break;
	}
	/* A graceful close ends on the peer's FIN, not on our timer. */
	if (disc_mode != DISC_KILL_SERVER)
		T(now_ms() - t0 < 1500);
	return side_close(&s);
}

static int disc_run(enum disc_mode mode)
{
	disc_mode = mode;
	return run_two(disc_server, disc_client, mode == DISC_KILL_SERVER);
}

static void test_disconnect_graceful(void)
{
	CU_ASSERT_EQUAL(disc_run(DISC_CLIENT_GRACEFUL), 0);
	CU_ASSERT_EQUAL(disc_run(DISC_SERVER_GRACEFUL), 0);
}

static void test_disconnect_abrupt(void)
{
	CU_ASSERT_EQUAL(disc_run(DISC_CLIENT_ABRUPT), 0);
}

static void test_peer_killed(void)
{
	CU_ASSERT_EQUAL(disc_run(DISC_KILL_SERVER), 0);
}

/* Cancel a connect that is still waiting for its reply. */
static int cancel_connect(void)
{
	enum rapt_ep_state st;
	struct rapt_event ev;
	struct rapt_ep *ep;
	struct side s;
	uint16_t port;
	int lfd = plain_listen(&port);

	T(lfd >= 0);
	T(!side_open(&s));
	T(!ep_new(&s, 0, &ep));
	TOK(rapt_ep_connect(ep, lo_addr(), port, NULL, 0,
			    RAPT_TIMEOUT_INFINITE));
	T(!ev_none(&s, 50));
	TOK(rapt_ep_disconnect(ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
	T(!ev_wait(&s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_get_state(ep, &st));
	T(st == RAPT_EP_DISCONNECTED);
	TOK(rapt_ep_free(ep));
	close(lfd);
	return side_close(&s);
}

static void test_cancel_connect(void)
{
	CU_ASSERT_EQUAL(cancel_connect(), 0);
}

/* Many connections at once on one listener, then all closed. */
#define MANY 64

static int many_accept(struct side *srv, struct rapt_ep **sep, int *nsrv)
{
	struct rapt_event ev;

	T(!ev_wait(srv, 0, &ev));
	if (ev.type == RAPT_EV_CR_ARRIVAL) {
		T(*nsrv < MANY);
		T(!ep_new(srv, 0, &sep[*nsrv]));
		TOK(rapt_cr_accept(ev.u.cr.cr, sep[(*nsrv)++], "ok", 2));
		return 0;
	}
	T(ev.type == RAPT_EV_ESTABLISHED);
	return 1;
}

static int many_connections(void)
{
	static struct rapt_ep *cep[MANY], *sep[MANY];
	int i, nsrv = 0, est_srv = 0, est_cli = 0, ret;
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct side srv, cli;
	uint16_t port;

	T(!side_open(&srv) && !side_open(&cli));
	T(!psp_new(&srv, MANY, MANY, 0, &psp, &port));
	for (i = 0; i < MANY; i++) {
		T(!ep_new(&cli, 0, &cep[i]));
		TOK(rapt_ep_connect(cep[i], lo_addr(), port, &i, sizeof(i),
				    5000000));
	}
	while (est_srv < MANY) {
		ret = many_accept(&srv, sep, &nsrv);
		T(ret >= 0);
		est_srv += ret;
	}
	for (; est_cli < MANY; est_cli++) {
		T(!ev_wait(&cli, RAPT_EV_ESTABLISHED, &ev));
		T(ev.u.conn.pdata_len == 2);
	}
	for (i = 0; i < MANY; i++)
		TOK(rapt_ep_disconnect(cep[i], i & 1 ? RAPT_CLOSE_ABRUPT :
				       RAPT_CLOSE_GRACEFUL, NULL, 0));
	for (i = 0; i < MANY; i++) {
		T(!ev_wait(&cli, RAPT_EV_DISCONNECTED, &ev));
		T(!ev_wait(&srv, 0, &ev));
		T(ev.type == RAPT_EV_DISCONNECTED || ev.type == RAPT_EV_BROKEN);
	}
	for (i = 0; i < MANY; i++) {
		TOK(rapt_ep_free(cep[i]));
		TOK(rapt_ep_free(sep[i]));
	}
	TOK(rapt_psp_free(psp));
	T(!side_close(&cli));
	return side_close(&srv);
}

static void test_many_connections(void)
{
	CU_ASSERT_EQUAL(many_connections(), 0);
}

/* Over ::1, when the host has IPv6 loopback. */
static int ipv6_loopback(void)
{
	struct sockaddr_in6 six = { .sin6_family = AF_INET6 };
	struct rapt_psp_attr a = { 0 };
	struct rapt_ep *cep, *sep;
	struct rapt_cr_info ci;
	struct rapt_psp_info pi;
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct side srv, cli;
	int fd;

	six.sin6_addr = in6addr_loopback;
	fd = socket(AF_INET6, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&six, sizeof(six))) {
		if (fd >= 0)
			close(fd);
		cu_skip("IPv6 loopback: no ::1 here");
		return 0;
	}
	close(fd);
	memcpy(&a.bind_addr, &six, sizeof(six));
	T(!side_open(&srv) && !side_open(&cli));
	TOK(rapt_psp_create(srv.ia, RAPT_SERVICE_ID_ANY, srv.evd, &a, &psp));
	TOK(rapt_psp_query(psp, &pi, sizeof(pi)));
	T(!ep_new(&cli, 0, &cep));
	TOK(rapt_ep_connect(cep, (struct sockaddr *)&six, pi.service_id,
			    "v6", 2, 5000000));
	T(!ev_wait(&srv, RAPT_EV_CR_ARRIVAL, &ev));
	TOK(rapt_cr_query(ev.u.cr.cr, &ci, sizeof(ci)));
	T(ci.remote_addr.ss_family == AF_INET6);
	T(ci.pdata_len == 2 && !memcmp(ci.pdata, "v6", 2));
	T(!establish(&srv, &cli, cep, ev.u.cr.cr, &sep));
	TOK(rapt_ep_free(cep));
	T(!ev_wait(&srv, 0, &ev));
	TOK(rapt_ep_free(sep));
	TOK(rapt_psp_free(psp));
	T(!side_close(&cli));
	return side_close(&srv);
}

static void test_ipv6_loopback(void)
{
	CU_ASSERT_EQUAL(ipv6_loopback(), 0);
}

/* ------------------------------------------------------------------ */
/* The wire, checked by hand                                           */
/* ------------------------------------------------------------------ */

/* Our request, a hand-made P2P reply, then the 20-byte Write RTR. */
static int wire_initiator(void)
{
	struct rapt_ep_attr a = { .rdma_read_in = 3, .rdma_read_out = 5 };
	uint8_t b[300];
	struct rapt_event ev;
	struct rapt_ep *ep;
	struct side s;
	uint16_t port;
	int lfd = plain_listen(&port), fd;

	T(lfd >= 0);
	T(!side_open(&s));
	TOK(rapt_ep_create(s.pz, s.evd, s.evd, s.evd, &a, &ep));
	TOK(rapt_ep_connect(ep, lo_addr(), port, "abc", 3, 5000000));
	fd = accept(lfd, NULL, NULL);
	T(fd >= 0);
	/* Rev 2, E (no C: RAPT_TCP_CRC is unset), PD 4 + rapt hdr 4 + 3
	 * + the mark. */
	T(read_full(fd, b, 35) == 35);
	T(!memcmp(b, "MPA ID Req Frame", 16));
	T(b[16] == 0x10 && b[17] == 2 && b[18] == 0 && b[19] == 15);
	T(b[20] == 0x80 && b[21] == 3 && b[22] == 0xc0 && b[23] == 5);
	T(b[24] == 0xa7 && b[25] == 0x52 && !memcmp(b + 28, "abc", 3));
	T(!memcmp(b + 31, mark, MARK_LEN));
	/* Echo A, pick Write, offer IRD 1 / ORD 2; foreign pdata "ok". */
	T(write(fd, b, mpa_frame(b, false, 0x10, 2, 0x8001, 0x8002, "ok",
				 2)) == 26);
	T(read_full(fd, b, 20) == 20);
	T(!memcmp(b, rtr, 20));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(ev.u.conn.pdata_len == 2 && !memcmp(ev.u.conn.pdata, "ok", 2));
	T(ev.u.conn.flags & RAPT_CONN_FOREIGN_PEER);
	/* Our reads are bounded by its IRD, its reads by our IRD. */
	T(ev.u.conn.rdma_read_in == 2 && ev.u.conn.rdma_read_out == 1);
	close(fd);
	T(!ev_wait(&s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_free(ep));
	close(lfd);
	return side_close(&s);
}

static void test_wire_initiator(void)
{
	CU_ASSERT_EQUAL(wire_initiator(), 0);
}

/* A reply that picks an RTR we did not offer: Terminate, PROTOCOL. */
static int wire_bad_rtr(void)
{
	uint8_t b[300];
	struct rapt_event ev;
	struct rapt_ep *ep;
	struct side s;
	uint16_t port;
	int lfd = plain_listen(&port), fd;

	T(!side_open(&s));
	T(!raw_responder(&s, &lfd, &fd, &ep));
	/* A with the Send RTR (B) only. */
	T(write(fd, b, mpa_frame(b, false, 0x10, 2, 0xc001, 0x0001, NULL,
				 0)) == 24);
	T(!ev_wait(&s, RAPT_EV_NON_PEER_REJECTED, &ev));
	T(ev.u.conn.reason == RAPT_REJECT_PROTOCOL);
	T(read_full(fd, b, 28) == 28 && b[20] == 0x20 && b[21] == 0x07);
	close(fd);
	TOK(rapt_ep_free(ep));
	close(lfd);
	return side_close(&s);
}

static void test_wire_bad_rtr(void)
{
	CU_ASSERT_EQUAL(wire_bad_rtr(), 0);
}

/* Accept a hand-made request on a real PSP; read the reply back. */
static int wire_accept(struct side *s, struct rapt_psp *psp, uint16_t port,
		       const uint8_t *req, size_t req_len, int *fdp,
		       struct rapt_ep **ep, uint8_t *rep, size_t rep_len)
{
	struct rapt_event ev;
	int fd = plain_connect(port);

	(void)psp;
	T(fd >= 0);
	T(write(fd, req, req_len) == (ssize_t)req_len);
	T(!ev_wait(s, RAPT_EV_CR_ARRIVAL, &ev));
	T(!ep_new(s, RAPT_EP_RAW_PDATA, ep));
	TOK(rapt_cr_accept(ev.u.cr.cr, *ep, "yes", 3));
	T(read_full(fd, rep, rep_len) == (ssize_t)rep_len);
	*fdp = fd;
	return 0;
}

static int wire_responder(void)
{
	struct rapt_ep_info info;
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct rapt_ep *ep;
	uint8_t b[300], r[64];
	struct side s;
	uint16_t port;
	int fd;

	T(!side_open(&s));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));

	/* P2P with Write and Read offered by a requester with ORD 6: A
	 * echoed, Read chosen (its response tells the requester we have
	 * the RTR), IRD and ORD clamped to what the requester offers (EP
	 * default 8). */
	T(!wire_accept(&s, psp, port, b,
		       mpa_frame(b, true, 0x10, 2, 0x8002, 0xc006, "x", 1),
		       &fd, &ep, r, 27));
	T(!memcmp(r, "MPA ID Rep Frame", 16));
	T(r[16] == 0x10 && r[17] == 2 && r[18] == 0 && r[19] == 7);
	T(r[20] == 0x80 && r[21] == 6 && r[22] == 0x40 && r[23] == 2);
	T(!memcmp(r + 24, "yes", 3));
	T(!ev_none(&s, 100));	/* no ESTABLISHED before the RTR */
	T(write(fd, rtr_read, sizeof(rtr_read)) == sizeof(rtr_read));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(!(ev.u.conn.flags & RAPT_CONN_SENDS_HELD));
	T(ev.u.conn.rdma_read_in == 6 && ev.u.conn.rdma_read_out == 2);
	/* The zero-length Read Response, to the sink STag of the RTR. */
	T(read_full(fd, r, 20) == 20);
	T(r[0] == 0 && r[1] == 0x0e && r[2] == 0xc1 && r[3] == 0x42);
	T(r[4] == 0 && r[5] == 0 && r[6] == 0 && r[7] == 0x5a);
	close(fd);
	T(!ev_wait(&s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_free(ep));

	/* Both offered by a requester with ORD 0 (it cannot issue a read):
	 * Write chosen. */
	T(!wire_accept(&s, psp, port, b,
		       mpa_frame(b, true, 0x10, 2, 0x8002, 0xc000, NULL, 0),
		       &fd, &ep, r, 27));
	T(r[20] == 0x80 && r[21] == 0 && r[22] == 0x80 && r[23] == 2);
	T(write(fd, rtr, sizeof(rtr)) == sizeof(rtr));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	close(fd);
	T(!ev_wait(&s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_free(ep));

	/* siw's default initiator: rev 2 with E but no A: no RTR, sends
	 * held until the first FPDU. */
	T(!wire_accept(&s, psp, port, b,
		       mpa_frame(b, true, 0x10, 2, 0x0010, 0x0010, NULL, 0),
		       &fd, &ep, r, 27));
	T(r[16] == 0x10 && r[17] == 2 && r[20] == 0 && r[21] == 8 &&
	  r[22] == 0 && r[23] == 8);
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(ev.u.conn.flags & RAPT_CONN_SENDS_HELD);
	TOK(rapt_ep_query(ep, &info, sizeof(info)));
	T(info.flags & RAPT_EPI_SENDS_HELD);
	close(fd);
	T(!ev_wait(&s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_free(ep));

	/* Rev 1: the reply is rev 1, without IRD/ORD. */
	T(!wire_accept(&s, psp, port, b,
		       mpa_frame(b, true, 0, 1, -1, -1, "v1", 2), &fd, &ep,
		       r, 23));
	T(r[16] == 0 && r[17] == 1 && r[18] == 0 && r[19] == 3);
	T(!memcmp(r + 20, "yes", 3));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(ev.u.conn.flags & RAPT_CONN_SENDS_HELD);
	close(fd);
	T(!ev_wait(&s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_free(ep));

	/* A requester asking for CRC gets it (C in the reply). */
	T(!wire_accept(&s, psp, port, b,
		       mpa_frame(b, true, 0x50, 2, 0x8001, 0x8001, NULL, 0),
		       &fd, &ep, r, 27));
	T(r[16] == 0x50);
	close(fd);
	T(!ev_wait(&s, RAPT_EV_ACCEPT_ERROR, &ev));
	TOK(rapt_ep_free(ep));

	TOK(rapt_psp_free(psp));
	return side_close(&s);
}

static void test_wire_responder(void)
{
	CU_ASSERT_EQUAL(wire_responder(), 0);
}

/*
 * The mark between two rapt tcp providers (tcp_handshake.c), as the
 * responder: a marked request gets the Write RTR, which needs no
 * response, and a marked reply; an unmarked one gets the Read RTR as
 * before (the reply is marked all the same).  The consumer never sees
 * the mark.
 */
static int mark_responder_one(struct side *s, uint16_t port, bool marked)
{
	/* rapt's header (version 1, consumer data) and "hi", then the
	 * mark if @marked. */
	uint8_t pd[6 + MARK_LEN] = { 0xa7, 0x52, 0x10, 2, 'h', 'i' };
	uint8_t b[300], r[64];
	struct rapt_cr_info ci;
	struct rapt_event ev;
	struct rapt_ep *ep;
	int fd = plain_connect(port);
	char c;

	T(fd >= 0);
	memcpy(pd + 6, mark, MARK_LEN);
	/* P2P, Write and Read offered, ORD 6: Read unless marked. */
	T(write(fd, b, mpa_frame(b, true, 0x10, 2, 0x8002, 0xc006, pd,
				 marked ? sizeof(pd) : 6)) > 0);
	T(!ev_wait(s, RAPT_EV_CR_ARRIVAL, &ev));
	TOK(rapt_cr_query(ev.u.cr.cr, &ci, sizeof(ci)));
	T(ci.pdata_len == 2 && !memcmp(ci.pdata, "hi", 2));
	T(!(ci.flags & RAPT_CRI_FOREIGN_PEER));
	T(!ep_new(s, 0, &ep));
	TOK(rapt_cr_accept(ev.u.cr.cr, ep, "yes", 3));
	/* PD: IRD/ORD 4 + rapt's header 4 + "yes" + the mark. */
	T(read_full(fd, r, 35) == 35);
	T(!memcmp(r, "MPA ID Rep Frame", 16) && r[19] == 15);
	T(r[20] == 0x80 && r[22] == (marked ? 0x80 : 0x40));
	T(r[24] == 0xa7 && r[25] == 0x52 && r[27] == 3);
	T(!memcmp(r + 28, "yes", 3) && !memcmp(r + 31, mark, MARK_LEN));
	if (marked)
		T(write(fd, rtr, sizeof(rtr)) == sizeof(rtr));
	else
		T(write(fd, rtr_read, sizeof(rtr_read)) == sizeof(rtr_read));
	T(!ev_wait(s, RAPT_EV_ESTABLISHED, &ev));
	TOK(rapt_ep_disconnect(ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
	/* Marked: our FIN and nothing before it; else the Read Response
	 * first. */
	if (!marked)
		T(read_full(fd, r, 20) == 20 && r[3] == 0x42);
	T(read(fd, &c, 1) == 0);
	close(fd);
	T(!ev_wait(s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_free(ep));
	return 0;
}

static int wire_mark_responder(void)
{
	struct rapt_psp *psp;
	struct side s;
	uint16_t port;

	T(!side_open(&s));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	T(!mark_responder_one(&s, port, true));
	T(!mark_responder_one(&s, port, false));
	TOK(rapt_psp_free(psp));
	return side_close(&s);
}

static void test_wire_mark_responder(void)
{
	CU_ASSERT_EQUAL(wire_mark_responder(), 0);
}

/*
 * As the initiator: a marked reply that picks the Write RTR ends the
 * settle time kept for siw before it starts, so a graceful disconnect
 * right after ESTABLISHED sends the FIN at once, with no RTR repeated
 * before it (an unmarked reply: "the RTR repeated until the responder
 * speaks" above).  ESTABLISHED carries the consumer's bytes alone.
 */
static int wire_mark_initiator(void)
{
	uint8_t pd[6 + MARK_LEN] = { 0xa7, 0x52, 0x10, 2, 'o', 'k' };
	uint8_t b[300];
	struct rapt_event ev;
	struct rapt_ep *ep;
	struct side s;
	uint16_t port;
	int lfd = plain_listen(&port), fd;
	char c;

	T(lfd >= 0);
	T(!side_open(&s));
	T(!ep_new(&s, 0, &ep));
	TOK(rapt_ep_connect(ep, lo_addr(), port, "abc", 3, 5000000));
	fd = accept(lfd, NULL, NULL);
	T(fd >= 0 && read_full(fd, b, 35) == 35);
	T(!memcmp(b + 31, mark, MARK_LEN));
	memcpy(pd + 6, mark, MARK_LEN);
	/* Echo A, pick Write. */
	T(write(fd, b, mpa_frame(b, false, 0x10, 2, 0x8001, 0x8002, pd,
				 sizeof(pd))) > 0);
	T(read_full(fd, b, 20) == 20 && !memcmp(b, rtr, 20));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(ev.u.conn.pdata_len == 2 && !memcmp(ev.u.conn.pdata, "ok", 2));
	T(!(ev.u.conn.flags & RAPT_CONN_FOREIGN_PEER));
	TOK(rapt_ep_disconnect(ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
	T(read(fd, &c, 1) == 0);
	close(fd);
	T(!ev_wait(&s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_free(ep));

	/* No room (siw's ceiling: 256 bytes with IRD/ORD): no mark.  248
	 * consumer bytes, 4 of rapt's header, 4 of IRD/ORD. */
	memset(b, 'm', 248);
	T(!ep_new(&s, 0, &ep));
	TOK(rapt_ep_connect(ep, lo_addr(), port, b, 248, 5000000));
	fd = accept(lfd, NULL, NULL);
	T(fd >= 0 && read_full(fd, b, 20 + 256) == 20 + 256);
	T(b[18] == 1 && b[19] == 0 && b[20 + 255] == 'm');
	close(fd);
	T(!ev_wait(&s, RAPT_EV_NON_PEER_REJECTED, &ev));
	TOK(rapt_ep_free(ep));
	close(lfd);
	return side_close(&s);
}

static void test_wire_mark_initiator(void)
{
	CU_ASSERT_EQUAL(wire_mark_initiator(), 0);
}

/*
 * A foreign requester with no private data (rping's default): the CR and
 * the accepting EP say foreign, and the reply carries the consumer's
 * bytes raw, with no rapt header.  The other way round, an empty reply
 * from a foreign responder makes our ESTABLISHED say foreign.
 */
static int wire_foreign_empty(void)
{
	struct rapt_cr_info ci;
	struct rapt_ep_info ei;
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct rapt_ep *ep;
	uint8_t b[300], r[64];
	struct side s;
	uint16_t port;
	int fd, lfd;

	T(!side_open(&s));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	fd = plain_connect(port);
	T(fd >= 0);
	T(write(fd, b, mpa_frame(b, true, 0x10, 2, 0x8002, 0x8002, NULL, 0)) ==
	  24);
	T(!ev_wait(&s, RAPT_EV_CR_ARRIVAL, &ev));
	TOK(rapt_cr_query(ev.u.cr.cr, &ci, sizeof(ci)));
	T(ci.flags & RAPT_CRI_FOREIGN_PEER);
	T(!ep_new(&s, 0, &ep));
	TOK(rapt_cr_accept(ev.u.cr.cr, ep, "yes", 3));
	T(read_full(fd, r, 27) == 27);
	T(r[18] == 0 && r[19] == 7 && !memcmp(r + 24, "yes", 3));
	T(write(fd, rtr, sizeof(rtr)) == sizeof(rtr));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(ev.u.conn.flags & RAPT_CONN_FOREIGN_PEER);
	TOK(rapt_ep_query(ep, &ei, sizeof(ei)));
	T(ei.flags & RAPT_EPI_FOREIGN_PEER);
	close(fd);
	T(!ev_wait(&s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_free(ep));
	TOK(rapt_psp_free(psp));

	/* Our request, an empty P2P reply choosing Write. */
	T(!raw_responder(&s, &lfd, &fd, &ep));
	T(write(fd, b, mpa_frame(b, false, 0x10, 2, 0x8002, 0x8002, NULL,
				 0)) == 24);
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(ev.u.conn.flags & RAPT_CONN_FOREIGN_PEER);
	T(ev.u.conn.pdata_len == 0);
	T(read_full(fd, b, 20) == 20 && !memcmp(b, rtr, 20));
	close(fd);
	close(lfd);
	T(!ev_wait(&s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_free(ep));
	return side_close(&s);
}

static void test_wire_foreign_empty(void)
{
	CU_ASSERT_EQUAL(wire_foreign_empty(), 0);
}

/* The peer resets an established connection: BROKEN, and its
 * prov_status is the socket's error (ECONNRESET), not a generic EIO. */
static int wire_reset(void)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };
	struct rapt_event ev;
	struct rapt_ep *ep;
	struct side s;
	uint8_t b[64];
	int fd, lfd;

	T(!side_open(&s));
	T(!raw_responder(&s, &lfd, &fd, &ep));
	T(write(fd, b, mpa_frame(b, false, 0x10, 2, 0x8002, 0x8002, NULL,
				 0)) == 24);
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(read_full(fd, b, 20) == 20);
	T(!setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)));
	close(fd);
	close(lfd);
	T(!ev_wait(&s, RAPT_EV_BROKEN, &ev));
	if (ev.u.conn.prov_status != -ECONNRESET)
		fprintf(stderr, "prov_status %d, want %d\n",
			ev.u.conn.prov_status, -ECONNRESET);
	T(ev.u.conn.prov_status == -ECONNRESET);
	TOK(rapt_ep_free(ep));
	return side_close(&s);
}

static void test_wire_reset(void)
{
	CU_ASSERT_EQUAL(wire_reset(), 0);
}

/* M=1: refused with a reject reply, never a CR. */
static int wire_markers(void)
{
	struct rapt_psp_info info;
	struct rapt_psp *psp;
	uint8_t b[64];
	struct side s;
	uint16_t port;
	int fd;

	T(!side_open(&s));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	fd = plain_connect(port);
	T(fd >= 0);
	T(write(fd, b, mpa_frame(b, true, 0x90, 2, 0x8001, 0x8001, NULL, 0)) ==
	  24);
	T(read_full(fd, b, 28) == 28);
	T(!memcmp(b, "MPA ID Rep Frame", 16));
	T(b[16] == 0x30 && b[17] == 2 && b[19] == 8);
	T(b[24] == 0xa7 && b[25] == 0x52);	/* rapt's PROTOCOL marker */
	T(!wait_eof(fd, EV_MS));
	close(fd);
	T(!ev_none(&s, 50));
	T(!psp_wait_info(psp, 0, 0, &info));
	T(info.pending_crs == 0);
	TOK(rapt_psp_free(psp));
	return side_close(&s);
}

/*
 * RFC 6581: a P2P request offering only the Send RTR, or no RTR type, has
 * no answer we may give (we pick only among the types offered): an MPA
 * reject, never a CR, never a reply choosing the Write RTR.  A request
 * with 508 bytes of private data (RFC 5044's 512 with IRD/ORD) is taken
 * whole.
 */
static int wire_rtr_and_512(void)
{
	static const int ords[] = { 0x0001, 0x0001 };
	static const int irds[] = { 0xc001, 0x8001 };
	struct rapt_cr_info ci;
	struct rapt_event ev;
	struct rapt_psp *psp;
	uint8_t b[600], pd[508];
	struct side s;
	uint16_t port;
	unsigned int i;
	int fd;

	T(!side_open(&s));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	for (i = 0; i < 2; i++) {
		fd = plain_connect(port);
		T(fd >= 0);
		T(write(fd, b, mpa_frame(b, true, 0x10, 2, irds[i], ords[i],
					 NULL, 0)) == 24);
		T(read_full(fd, b, 28) == 28);
		T(!memcmp(b, "MPA ID Rep Frame", 16));
		T(b[16] == 0x30);		/* R: rejected */
		T(!wait_eof(fd, EV_MS));
		close(fd);
		T(!ev_none(&s, 50));
	}
	pattern(pd, sizeof(pd), 'f');
	fd = plain_connect(port);
	T(fd >= 0);
	T(write(fd, b, mpa_frame(b, true, 0x10, 2, 0x8002, 0x8002, pd,
				 sizeof(pd))) == 532);
	T(!ev_wait(&s, RAPT_EV_CR_ARRIVAL, &ev));
	TOK(rapt_cr_query(ev.u.cr.cr, &ci, sizeof(ci)));
	T(ci.flags & RAPT_CRI_FOREIGN_PEER);
	T(!pdata_is(ci.pdata, ci.pdata_len, sizeof(pd), 'f'));
	TOK(rapt_cr_reject(ev.u.cr.cr, NULL, 0));
	close(fd);
	TOK(rapt_psp_free(psp));
	return side_close(&s);
}

/*
 * A consumer's reject: the reply with R=1 and the private data, and our
 * close only after the requester's (siw as requester may handle an early
 * FIN before the reply and lose the private data).  A requester that
 * keeps the connection open gets our close CM_REJECT_LINGER_MS later.
 */
static int wire_reject_linger(void)
{
	struct rapt_event ev;
	struct rapt_psp *psp;
	struct pollfd p;
	uint8_t b[300];
	struct side s;
	uint16_t port;
	int fd, round;

	T(!side_open(&s));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	for (round = 0; round < 2; round++) {
		fd = plain_connect(port);
		T(fd >= 0);
		T(write(fd, b, mpa_frame(b, true, 0x10, 2, 0x8002, 0xc002,
					 NULL, 0)) == 24);
		T(!ev_wait(&s, RAPT_EV_CR_ARRIVAL, &ev));
		TOK(rapt_cr_reject(ev.u.cr.cr, "no", 2));
		T(read_full(fd, b, 20) == 20);
		T(!memcmp(b, "MPA ID Rep Frame", 16) && (b[16] & 0x20));
		T(b[19] >= 2);
		T(read_full(fd, b, b[19]) == b[19]);
		/* Our close waits for the requester's. */
		p.fd = fd;
		p.events = POLLIN;
		T(poll(&p, 1, 100) == 0);
		if (round == 0) {
			T(!shutdown(fd, SHUT_WR));
			T(read_full(fd, b, 1) == 0);	/* then ours */
		} else {
			T(!wait_eof(fd, EV_MS));	/* ours, by itself */
		}
		close(fd);
	}
	TOK(rapt_psp_free(psp));
	return side_close(&s);
}

static void test_wire_reject_linger(void)
{
	CU_ASSERT_EQUAL(wire_reject_linger(), 0);
}

static void test_wire_rtr_and_512(void)
{
	CU_ASSERT_EQUAL(wire_rtr_and_512(), 0);
}

static void test_wire_markers(void)
{
	CU_ASSERT_EQUAL(wire_markers(), 0);
}

/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* MPA frames in pieces, bytes behind a frame                          */
/* ------------------------------------------------------------------ */

/* Write @b in three pieces, 30 ms apart (cut inside the key and inside
 * the private data). */
static int write_pieces(int fd, const uint8_t *b, size_t n)
{
	size_t cut1 = 10, cut2 = n - 3;

	T(n > 14);
	T(write(fd, b, cut1) == (ssize_t)cut1);
	usleep(30000);
	T(write(fd, b + cut1, cut2 - cut1) == (ssize_t)(cut2 - cut1));
	usleep(30000);
	T(write(fd, b + cut2, n - cut2) == (ssize_t)(n - cut2));
	return 0;
}

static int wire_pieces(void)
{
	struct rapt_cr_info ci;
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct rapt_ep *ep;
	uint8_t b[300];
	struct side s;
	uint16_t port;
	int lfd, fd;

	T(!side_open(&s));
	/* Responder: a request in pieces is one CR, private data whole. */
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	fd = plain_connect(port);
	T(fd >= 0);
	T(!write_pieces(fd, b, mpa_frame(b, true, 0x10, 2, 0x8001, 0x8001,
					 "in three pieces", 15)));
	T(!ev_wait(&s, RAPT_EV_CR_ARRIVAL, &ev));
	TOK(rapt_cr_query(ev.u.cr.cr, &ci, sizeof(ci)));
	T(ci.pdata_len == 15 && !memcmp(ci.pdata, "in three pieces", 15));
	T(!ep_new(&s, RAPT_EP_RAW_PDATA, &ep));
	TOK(rapt_cr_accept(ev.u.cr.cr, ep, "yes", 3));
	T(read_full(fd, b, 27) == 27 && !memcmp(b + 24, "yes", 3));
	T(write(fd, rtr, sizeof(rtr)) == sizeof(rtr));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	close(fd);
	T(!ev_wait(&s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_free(ep));
	TOK(rapt_psp_free(psp));

	/* Initiator: a reply in pieces, then the RTR and ESTABLISHED. */
	T(!raw_responder(&s, &lfd, &fd, &ep));
	T(!write_pieces(fd, b, mpa_frame(b, false, 0x10, 2, 0x8001, 0x8001,
					 "slowly", 6)));
	T(read_full(fd, b, 20) == 20 && !memcmp(b, rtr, 20));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(ev.u.conn.pdata_len == 6 && !memcmp(ev.u.conn.pdata, "slowly", 6));
	close(fd);
	T(!ev_wait(&s, RAPT_EV_DISCONNECTED, &ev));
	TOK(rapt_ep_free(ep));
	close(lfd);
	return side_close(&s);
}

static void test_wire_pieces(void)
{
	CU_ASSERT_EQUAL(wire_pieces(), 0);
}

/*
 * Neither side may send an FPDU before it has the other's frame: bytes
 * behind a request are refused like a bad request (a PROTOCOL reject, no
 * CR), bytes behind a reply like a bad reply (Terminate, LLP "bad
 * request/reply", NON_PEER_REJECTED / PROTOCOL).
 */
static int wire_early_bytes(void)
{
	struct rapt_psp_info info;
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct rapt_ep *ep;
	uint8_t b[300];
	struct side s;
	uint16_t port;
	size_t n;
	int lfd, fd;

	T(!side_open(&s));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	fd = plain_connect(port);
	T(fd >= 0);
	n = mpa_frame(b, true, 0x10, 2, 0x8001, 0x8001, NULL, 0);
	memcpy(b + n, rtr, sizeof(rtr));
	T(write(fd, b, n + sizeof(rtr)) == (ssize_t)(n + sizeof(rtr)));
	T(read_full(fd, b, 28) == 28);
	T(!memcmp(b, "MPA ID Rep Frame", 16) && (b[16] & 0x20));
	T(b[24] == 0xa7 && b[25] == 0x52);	/* rapt's PROTOCOL marker */
	T(!wait_eof(fd, EV_MS));
	close(fd);
	T(!ev_none(&s, 50));
	T(!psp_wait_info(psp, 0, 0, &info));
	T(info.pending_crs == 0);
	TOK(rapt_psp_free(psp));

	T(!raw_responder(&s, &lfd, &fd, &ep));
	n = mpa_frame(b, false, 0x10, 2, 0x8001, 0x8001, NULL, 0);
	memcpy(b + n, rtr, sizeof(rtr));
	T(write(fd, b, n + sizeof(rtr)) == (ssize_t)(n + sizeof(rtr)));
	T(!ev_wait(&s, RAPT_EV_NON_PEER_REJECTED, &ev));
	T(ev.u.conn.reason == RAPT_REJECT_PROTOCOL);
	T(read_full(fd, b, 28) == 28 && b[20] == 0x20 && b[21] == 0x04);
	T(!wait_eof(fd, EV_MS));
	close(fd);
	TOK(rapt_ep_free(ep));
	close(lfd);
	return side_close(&s);
}

static void test_wire_early_bytes(void)
{
	CU_ASSERT_EQUAL(wire_early_bytes(), 0);
}

/*
 * ep_free right after a graceful disconnect: the bytes the kernel still
 * holds for the peer go out before our FIN.  The peer here reads nothing
 * until the EP is gone, so a send of 512 KiB completes while most of it
 * still sits in our socket's buffer; an RST would throw that away.
 */
static int free_after_graceful(void)
{
	enum { N = 512 * 1024 };
	struct rapt_lmr_info mr;
	struct rapt_event ev;
	struct rapt_lmr *lmr;
	struct rapt_sge g;
	struct rapt_ep *ep;
	uint8_t b[300], *buf = malloc(N), *sink = malloc(1 << 16);
	struct side s;
	size_t total = 0;
	ssize_t n;
	int lfd, fd;

	T(buf && sink);
	T(!side_open(&s));
	memset(buf, 0x5a, N);
	TOK(rapt_lmr_create(s.pz, buf, N, RAPT_MEM_LOCAL_WRITE, &lmr, &mr));
	T(!raw_responder(&s, &lfd, &fd, &ep));
	T(write(fd, b, mpa_frame(b, false, 0x10, 2, 0x8001, 0x8001, NULL,
				 0)) == 24);
	T(read_full(fd, b, 20) == 20);
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	g.addr = (uintptr_t)buf;
	g.length = N;
	g.lkey = mr.lkey;
	TOK(rapt_ep_post_send(ep, &g, 1, 7, 0));
	T(!ev_wait(&s, RAPT_EV_DTO, &ev));
	T(ev.u.dto.status == RAPT_DTO_SUCCESS && ev.u.dto.cookie == 7);
	TOK(rapt_ep_disconnect(ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
	TOK(rapt_ep_free(ep));
	/* Every FPDU of the message, then the end of the stream. */
	while ((n = read_full(fd, sink, 1 << 16)) == 1 << 16)
		total += (size_t)n;
	T(n >= 0);
	total += (size_t)n;
	T(total > N);
	T(read(fd, sink, 1) == 0);
	close(fd);
	close(lfd);
	TOK(rapt_lmr_free(lmr));
	free(buf);
	free(sink);
	return side_close(&s);
}

static void test_free_after_graceful(void)
{
	CU_ASSERT_EQUAL(free_after_graceful(), 0);
}

/*
 * The peer-timeout bound on the provider's own sockets: keepalive and the
 * user timeout as tcp_sock_peer_timeout() sets them.  The accepted socket
 * takes the default from the listener (Linux copies the options at
 * accept); an EP with a bound of its own sets it.  The sockets are found
 * among this process's descriptors by their ports.
 */
static int sock_bound_ok(int fd, uint32_t ms)
{
	int ka = 0, idle = 0, intvl = 0;
	unsigned int user = 0;
	socklen_t l = sizeof(int);

	T(!getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &ka, &l) && ka == 1);
	l = sizeof(int);
	T(!getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, &l));
	T(idle == (int)(ms / 2000 ? ms / 2000 : 1));
	l = sizeof(int);
	T(!getsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, &l));
	T(intvl == (int)(ms / 6000 ? ms / 6000 : 1));
	l = sizeof(user);
	T(!getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, &l));
	T(user == ms);
	return 0;
}

/* The connected TCP socket of this process with local port @lport (0:
 * any) and peer port @rport (0: any), other than @not. */
static int sock_by_ports(uint16_t lport, uint16_t rport, int not)
{
	struct sockaddr_in a, b;
	socklen_t la, lb;
	int fd;

	for (fd = 3; fd < 4096; fd++) {
		la = lb = sizeof(a);
		if (fd == not || getsockname(fd, (struct sockaddr *)&a, &la) ||
		    getpeername(fd, (struct sockaddr *)&b, &lb) ||
		    a.sin_family != AF_INET)
			continue;
		if ((!lport || ntohs(a.sin_port) == lport) &&
		    (!rport || ntohs(b.sin_port) == rport))
			return fd;
	}
	return -1;
}

/* Whether @fd has keepalive on: the first of the bound's options. */
static bool sock_bound_set(int fd)
{
	int ka = 0;
	socklen_t l = sizeof(ka);

	return !getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &ka, &l) && ka;
}

/* Active side: its bound is not set before it has lived the provider's
 * 100 ms (checked when ESTABLISHED came sooner than that), and is set
 * later, while the consumer busy-polls the EVD (@spin: the EP is parked,
 * and the consumer's poll sets it) or sleeps on it (the engine's timer). */
#define BOUND_DELAY_MS	100
static int bound_comes_late(struct side *s, int fd, uint64_t t_connect,
			    bool spin)
{
	uint64_t end = now_ms() + EV_MS;
	struct rapt_event ev;
	uint32_t n = 0;

	if (now_ms() - t_connect < BOUND_DELAY_MS)
		T(!sock_bound_set(fd));
	for (;;) {
		if (spin) {
			if (++n % 1024 == 0 && sock_bound_set(fd))
				break;
			T(rapt_evd_dequeue(s->evd, &ev) == RAPT_EAGAIN);
		} else {
			if (sock_bound_set(fd))
				break;
			T(rapt_evd_wait(s->evd, 1000, 1, &ev, NULL) ==
			  RAPT_ETIMEDOUT);
		}
		T(now_ms() < end);
	}
	T(now_ms() - t_connect >= BOUND_DELAY_MS);
	return 0;
}

/* @a connects to @port, @p accepts; both ESTABLISHED.  *@t0: when the
 * connect began. */
static int bound_pair(struct side *s, uint16_t port, struct rapt_ep *a,
		      struct rapt_ep *p, uint64_t *t0)
{
	struct rapt_event ev;

	*t0 = now_ms();
	TOK(rapt_ep_connect(a, lo_addr(), port, NULL, 0, 5000000));
	T(!ev_wait(s, RAPT_EV_CR_ARRIVAL, &ev));
	TOK(rapt_cr_accept(ev.u.cr.cr, p, NULL, 0));
	T(!ev_wait(s, RAPT_EV_ESTABLISHED, &ev));
	T(!ev_wait(s, RAPT_EV_ESTABLISHED, &ev));
	return 0;
}

static int peer_bound_one(uint32_t passive_ms)
{
	struct rapt_ep *a, *p;
	struct rapt_psp *psp;
	struct side s;
	uint16_t port;
	uint64_t t0;
	int fa, fp;

	T(!side_open(&s));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	T(!ep_new(&s, 0, &a));
	T(!ep_new(&s, 0, &p));
	if (passive_ms)
		TOK(rapt_ep_set_peer_timeout(p, passive_ms));
	T(!bound_pair(&s, port, a, p, &t0));
	fa = sock_by_ports(0, port, -1);
	fp = sock_by_ports(port, 0, -1);
	T(fa >= 0 && fp >= 0);
	T(!bound_comes_late(&s, fa, t0, false));
	T(!sock_bound_ok(fa, RAPT_PEER_TIMEOUT_DEFAULT_MS));
	T(!sock_bound_ok(fp, passive_ms ? passive_ms :
			 RAPT_PEER_TIMEOUT_DEFAULT_MS));
	TOK(rapt_ep_free(a));
	TOK(rapt_ep_free(p));
	TOK(rapt_psp_free(psp));
	return side_close(&s);
}

/* The same with a consumer that spins on the EVD once the connection has
 * moved some messages (so that its EPs are parked): the bound still
 * comes, from that consumer's polls. */
static int peer_bound_spin(void)
{
	uint8_t mem[64] = "ping";
	struct rapt_lmr_info mr;
	struct rapt_ep *a, *p;
	struct rapt_sge gr, gs;
	struct rapt_lmr *lmr;
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct side s;
	uint16_t port;
	uint64_t t0;
	int fa, i;

	T(!side_open(&s));
	TOK(rapt_lmr_create(s.pz, mem, sizeof(mem), RAPT_MEM_LOCAL_WRITE,
			    &lmr, &mr));
	gs.addr = (uintptr_t)mem;
	gr.addr = (uintptr_t)mem + 32;
	gs.length = gr.length = 32;
	gs.lkey = gr.lkey = mr.lkey;
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	T(!ep_new(&s, 0, &a));
	T(!ep_new(&s, 0, &p));
	T(!bound_pair(&s, port, a, p, &t0));
	fa = sock_by_ports(0, port, -1);
	T(fa >= 0);
	for (i = 0; i < 8; i++) {	/* one message per read */
		TOK(rapt_ep_post_recv(a, &gr, 1, 1));
		TOK(rapt_ep_post_send(p, &gs, 1, 2, 0));
		T(!ev_wait(&s, RAPT_EV_DTO, &ev) && !ev.u.dto.status);
		T(!ev_wait(&s, RAPT_EV_DTO, &ev) && !ev.u.dto.status);
	}
	T(!bound_comes_late(&s, fa, t0, true));
	T(!sock_bound_ok(fa, RAPT_PEER_TIMEOUT_DEFAULT_MS));
	TOK(rapt_ep_free(a));
	TOK(rapt_ep_free(p));
	TOK(rapt_psp_free(psp));
	TOK(rapt_lmr_free(lmr));
	return side_close(&s);
}

static void test_peer_bound_sockets(void)
{
	CU_ASSERT_EQUAL(peer_bound_one(0), 0);
	CU_ASSERT_EQUAL(peer_bound_one(6000), 0);
	CU_ASSERT_EQUAL(peer_bound_spin(), 0);
}

/*
 * A Send with Invalidate naming a key the target never gave out, from a
 * hand-built FPDU: Terminate layer RDMAP, type "remote operation",
 * "STag cannot be invalidated" (0x02, 0x09), as siw sends it; BROKEN.
 */
static int wire_inv_unknown(void)
{
	static const uint8_t send_inv[28] = {
		0x00, 0x16,			/* MPA: ULPDU 22 bytes */
		0x41, 0x44,			/* DDP untagged L, Send+Inv */
		0x0b, 0xad, 0xf0, 0x0d,		/* the key to invalidate */
		0, 0, 0, 0, 0, 0, 0, 1,		/* QN 0, MSN 1 */
		0, 0, 0, 0,			/* MO 0 */
		'i', 'n', 'v', '!',		/* payload */
		0, 0, 0, 0,			/* CRC field, C not set */
	};
	uint8_t mem[64], b[300];
	struct rapt_lmr_info mr;
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct rapt_lmr *lmr;
	struct rapt_sge g;
	struct rapt_ep *ep;
	struct side s;
	uint16_t port;
	int fd;

	T(!side_open(&s));
	TOK(rapt_lmr_create(s.pz, mem, sizeof(mem), RAPT_MEM_LOCAL_WRITE,
			    &lmr, &mr));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	T(!wire_accept(&s, psp, port, b,
		       mpa_frame(b, true, 0x10, 2, 0x8001, 0x8001, NULL, 0),
		       &fd, &ep, b, 27));
	g.addr = (uintptr_t)mem;
	g.length = sizeof(mem);
	g.lkey = mr.lkey;
	TOK(rapt_ep_post_recv(ep, &g, 1, 1));
	T(write(fd, rtr, sizeof(rtr)) == sizeof(rtr));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(write(fd, send_inv, sizeof(send_inv)) == sizeof(send_inv));
	/* MPA length, DDP/RDMAP Terminate header, then layer|type, code */
	T(read_full(fd, b, 22) == 22);
	T(b[2] == 0x41 && b[3] == 0x47);
	T(b[20] == 0x02 && b[21] == 0x09);
	T(!ev_wait(&s, RAPT_EV_DTO, &ev));
	T(ev.u.dto.status == RAPT_DTO_FLUSHED);
	T(!ev_wait(&s, RAPT_EV_BROKEN, &ev));
	close(fd);
	TOK(rapt_ep_free(ep));
	TOK(rapt_psp_free(psp));
	TOK(rapt_lmr_free(lmr));
	return side_close(&s);
}

static void test_wire_inv_unknown(void)
{
	CU_ASSERT_EQUAL(wire_inv_unknown(), 0);
}


/* ------------------------------------------------------------------ */
/* A Read Response and rapt_lmr_free()                                 */
/* ------------------------------------------------------------------ */

#define RRESP_LEN	(8u << 20)	/* far more than both socket buffers */
#define RRESP_BUF	(64 << 10)	/* SO_SNDBUF / SO_RCVBUF of the path */
#define RRESP_BYTE	0x11		/* the region's bytes */
#define RRESP_REUSED	0xee		/* what the memory holds once freed */
#define RRESP_FREE_MS	200		/* time given to a free that returns */

struct rresp_free {
	struct rapt_rmr *rmr;		/* the window read, or NULL */
	struct rapt_lmr *lmr;
	uint8_t *mem;
	atomic_int done;
};

/* Free the region, then use its memory for something else at once. */
static void *rresp_free_thread(void *p)
{
	struct rresp_free *f = p;

	if (f->rmr && rapt_rmr_free(f->rmr))
		return NULL;
	if (!rapt_lmr_free(f->lmr))
		memset(f->mem, RRESP_REUSED, RRESP_LEN);
	atomic_store(&f->done, 1);
	return NULL;
}

static bool sin_eq(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_family == b->sin_family && a->sin_port == b->sin_port &&
	       a->sin_addr.s_addr == b->sin_addr.s_addr;
}

/* The provider's end of the loopback connection whose other end is @fd. */
static int provider_fd(int fd)
{
	struct sockaddr_in me, peer, x, y;
	socklen_t l = sizeof(me), m = sizeof(peer);
	int i;

	if (getsockname(fd, (struct sockaddr *)&me, &l) ||
	    getpeername(fd, (struct sockaddr *)&peer, &m))
		return -1;
	for (i = 0; i < 4096; i++) {
		l = m = sizeof(x);
		if (i != fd && !getsockname(i, (struct sockaddr *)&x, &l) &&
		    !getpeername(i, (struct sockaddr *)&y, &m) &&
		    l == sizeof(x) && sin_eq(&x, &peer) && sin_eq(&y, &me))
			return i;
	}
	return -1;
}

/* A Read Request (QN 1, MSN 1) for @len bytes at @to of @stag. */
static void rreq_frame(uint8_t *b, uint32_t stag, uint64_t to, uint32_t len)
{
	int i;

	memcpy(b, rtr_read, sizeof(rtr_read));
	for (i = 0; i < 4; i++) {
		b[32 + i] = (uint8_t)(len >> (24 - 8 * i));
		b[36 + i] = (uint8_t)(stag >> (24 - 8 * i));
	}
	for (i = 0; i < 8; i++)
		b[40 + i] = (uint8_t)(to >> (56 - 8 * i));
}

/* Read Response FPDUs up to a Terminate: every payload byte must be the
 * region's, never what its memory held after rapt_lmr_free(). */
static int rresp_drain(int fd, uint64_t *got)
{
	static uint8_t b[2 + 65535 + 8];
	size_t len, rest, i;

	for (;;) {
		T(read_full(fd, b, 2) == 2);
		len = (size_t)b[0] << 8 | b[1];
		rest = ((2 + len + 3) & ~(size_t)3) - 2 + 4;	/* pad, CRC */
		T(read_full(fd, b + 2, rest) == (ssize_t)rest);
		if (b[2] == 0x41 && b[3] == 0x47)		/* Terminate */
			return 0;
		T((b[2] & 0x80) && b[3] == 0x42);	/* Read Response */
		for (i = 16; i < 2 + len; i++)
			T(b[i] == RRESP_BYTE);
		*got += len - 14;
	}
}

/*
 * The peer reads a region, stops reading so that the response waits on a
 * full socket, and the consumer frees the region and reuses the memory.
 * The Read Response's iovecs point into the region: the free must wait
 * until those bytes are in the socket (the connection then ends with a
 * Terminate, invalid STag, at the next batch), or the peer would get the
 * memory's new contents.  Through a window, the window is freed first
 * (which waits for no socket) and the LMR's free waits as well.
 */
static int wire_rresp_free(bool window)
{
	uint8_t b[300], rreq[sizeof(rtr_read)];
	struct rresp_free f = { 0 };
	struct rapt_lmr_info mr;
	struct pollfd out = { .events = POLLOUT };
	struct rapt_psp *psp;
	struct rapt_event ev;
	struct rapt_ep *ep;
	struct side s;
	uint64_t got = 0, t0;
	uint32_t key;
	int fd, buf = RRESP_BUF;
	pthread_t th;
	uint16_t port;

	T(!side_open(&s));
	f.mem = malloc(RRESP_LEN);
	T(f.mem);
	memset(f.mem, RRESP_BYTE, RRESP_LEN);
	TOK(rapt_lmr_create(s.pz, f.mem, RRESP_LEN, RAPT_MEM_REMOTE_READ,
			    &f.lmr, &mr));
	T(!psp_new(&s, 0, 0, 0, &psp, &port));
	T(!wire_accept(&s, psp, port, b,
		       mpa_frame(b, true, 0x10, 2, 0x8001, 0x8001, NULL, 0),
		       &fd, &ep, b, 27));
	T(write(fd, rtr, sizeof(rtr)) == sizeof(rtr));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	key = mr.rkey;
	if (window) {
		TOK(rapt_rmr_create(s.pz, &f.rmr));
		TOK(rapt_rmr_bind(f.rmr, ep, f.lmr, mr.raddr, RRESP_LEN,
				  RAPT_MEM_REMOTE_READ, 0, RAPT_POST_SUPPRESS,
				  &key));
	}
	out.fd = provider_fd(fd);
	T(out.fd >= 0);
	T(!setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf)));
	T(!setsockopt(out.fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf)));
	rreq_frame(rreq, key, mr.raddr, RRESP_LEN);
	T(write(fd, rreq, sizeof(rreq)) == sizeof(rreq));
	/* The response fills the path and the provider's socket; once that
	 * is full, a batch waits for EPOLLOUT. */
	for (t0 = now_ms(); poll(&out, 1, 0) == 1; sched_yield())
		T(now_ms() - t0 < EV_MS);
	T(!pthread_create(&th, NULL, rresp_free_thread, &f));
	/* A free that does not wait returns at once: give it time to, so
	 * that its reuse of the memory happens before we read (a free that
	 * waits is not affected: we then read, and it returns). */
	for (t0 = now_ms(); !atomic_load(&f.done) &&
	     now_ms() - t0 < RRESP_FREE_MS; sched_yield())
		;
	T(!rresp_drain(fd, &got));
	T(!pthread_join(th, NULL) && atomic_load(&f.done));
	T(got < RRESP_LEN);
	T(!ev_wait(&s, RAPT_EV_BROKEN, &ev));
	close(fd);
	TOK(rapt_ep_free(ep));
	TOK(rapt_psp_free(psp));
	free(f.mem);
	return side_close(&s);
}

static void test_wire_rresp_free(void)
{
	CU_ASSERT_EQUAL(wire_rresp_free(false), 0);
}

static void test_wire_rresp_free_window(void)
{
	CU_ASSERT_EQUAL(wire_rresp_free(true), 0);
}

/* ------------------------------------------------------------------ */
/* A consumer's receive pass and the reads it completes                */
/* ------------------------------------------------------------------ */

#define RP_READS	16		/* the EP's reads outstanding */
#define RP_FIRST	2		/* answered one by one */
#define RP_LEN		1024u		/* each read's bytes */
#define RP_PASS		8		/* TCP_RX_PASS_READS, tcp.h */
#define RP_ROUNDS	20
#define RP_RREQ		52		/* a Read Request FPDU */
#define RP_RRESP	(2 + 14 + RP_LEN + 4)	/* its response (no pad) */
#define RP_SPIN		64		/* empty looks that park the EP */

/* The next Read Request the initiator sent; the zero-length Writes that
 * repeat its RTR until we speak are skipped. */
static int rp_next_rreq(int fd, uint8_t *b)
{
	size_t len;

	for (;;) {
		T(read_full(fd, b, 2) == 2);
		len = (size_t)b[0] << 8 | b[1];
		T(len + 6 <= RP_RREQ);
		T(read_full(fd, b + 2, len + 4) == (ssize_t)(len + 4));
		if (b[3] == 0x41)
			return 0;
		T(b[3] == 0x40 && len == 18);	/* a zero-length Write */
	}
}

/* The Read Response to request @q, with @seed's bytes. */
static void rp_rresp(uint8_t *b, const uint8_t *q, unsigned int seed)
{
	uint32_t i;

	b[0] = (uint8_t)((14 + RP_LEN) >> 8);
	b[1] = (uint8_t)(14 + RP_LEN);
	b[2] = 0xc1;				/* DDP tagged, L */
	b[3] = 0x42;				/* RDMAP Read Response */
	memcpy(b + 4, q + 20, 12);		/* sink STag and TO */
	for (i = 0; i < RP_LEN; i++)
		b[16 + i] = (uint8_t)(seed * 7 + i);
	memset(b + 16 + RP_LEN, 0, 4);		/* CRC field, C not set */
}

/* The next @n completions, in order from @cookie, with their bytes. */
static int rp_complete(struct side *s, const uint8_t *mem, uint64_t cookie,
		       unsigned int n)
{
	struct rapt_event ev;
	uint64_t t0 = now_ms();
	unsigned int k = 0;
	uint32_t i;
	int e;

	while (k < n) {
		T(now_ms() - t0 < EV_MS);
		e = rapt_evd_dequeue(s->evd, &ev);
		if (e == RAPT_EAGAIN)
			continue;
		TOK(e);
		T(ev.type == RAPT_EV_DTO && ev.u.dto.op == RAPT_OP_RDMA_READ &&
		  ev.u.dto.status == RAPT_DTO_SUCCESS &&
		  ev.u.dto.cookie == cookie + k && ev.u.dto.length == RP_LEN);
		for (i = 0; i < RP_LEN; i++)
			T(mem[(cookie + k) % RP_READS * RP_LEN + i] ==
			  (uint8_t)((cookie + k) * 7 + i));
		k++;
	}
	return 0;
}

static uint32_t rp_queued(struct side *s)
{
	struct rapt_evd_info info;

	if (rapt_evd_query(s->evd, &info, sizeof(info)))
		return UINT32_MAX;
	return info.count;
}

/*
 * One round: RP_READS reads; the first RP_FIRST answered one by one while
 * the consumer spins (so the EP is parked: the engine leaves its data to
 * the consumer), then the others all at once, in one write.  The
 * consumer's next look must end its pass after RP_PASS completions, with
 * the rest of the responses still in the socket once the pass is over
 * (the receive that is posted takes the EP's lock).  A round that the
 * engine thread got into first proves nothing and is not counted.
 */
static int rp_round(struct side *s, struct rapt_ep *ep, int fd, int pfd,
		    uint8_t *mem, const struct rapt_lmr_info *mr,
		    uint64_t base, bool *proved)
{
	static uint8_t q[RP_READS][RP_RREQ], out[RP_READS * RP_RRESP];
	struct rapt_event ev;
	struct rapt_sge g;
	uint32_t i, before, after;
	int e, inq = 0;

	memset(mem, 0, RP_READS * RP_LEN);
	for (i = 0; i < RP_READS; i++) {
		g.addr = (uintptr_t)(mem + i * RP_LEN);
		g.length = RP_LEN;
		g.lkey = mr->lkey;
		TOK(rapt_ep_post_read(ep, &g, 1, base + i, 0x1000 + i * RP_LEN,
				      0x5a5a, 0));
	}
	for (i = 0; i < RP_FIRST; i++) {
		T(!rp_next_rreq(fd, q[i]));
		rp_rresp(out, q[i], (unsigned int)(base + i));
		T(write(fd, out, RP_RRESP) == RP_RRESP);
	}
	T(!rp_complete(s, mem, base, RP_FIRST));
	for (i = 0; i < RP_SPIN; i++)
		T(rapt_evd_dequeue(s->evd, &ev) == RAPT_EAGAIN);
	for (i = RP_FIRST; i < RP_READS; i++) {
		T(!rp_next_rreq(fd, q[i]));
		rp_rresp(out + (i - RP_FIRST) * RP_RRESP, q[i],
			 (unsigned int)(base + i));
	}
	T(write(fd, out, (RP_READS - RP_FIRST) * RP_RRESP) ==
	  (ssize_t)((RP_READS - RP_FIRST) * RP_RRESP));
	before = rp_queued(s);
	e = rapt_evd_dequeue(s->evd, &ev);
	g.addr = (uintptr_t)mem;
	g.length = 1;
	g.lkey = mr->lkey;
	TOK(rapt_ep_post_recv(ep, &g, 1, base));	/* the EP's lock */
	T(!ioctl(pfd, SIOCINQ, &inq));
	after = rp_queued(s);
	*proved = before == 0 && e == 0 && inq > 0 && after == RP_PASS - 1;
	/* What is left: the responses after the pass's last, but for the
	 * staging buffer's worth of the next that came with that one. */
	if (*proved)
		T(inq > (int)((RP_READS - RP_FIRST - RP_PASS - 1) * RP_RRESP));
	if (e == 0) {
		T(ev.type == RAPT_EV_DTO && ev.u.dto.cookie == base + RP_FIRST);
		return rp_complete(s, mem, base + RP_FIRST + 1,
				   RP_READS - RP_FIRST - 1);
	}
	T(e == RAPT_EAGAIN);
	return rp_complete(s, mem, base + RP_FIRST, RP_READS - RP_FIRST);
}

static int wire_read_pass(void)
{
	struct rapt_ep_attr a = {
		.max_send = RP_READS, .max_recv = RP_ROUNDS + 1,
		.rdma_read_out = RP_READS,
	};
	struct rapt_lmr_info mr;
	struct rapt_event ev;
	struct rapt_lmr *lmr;
	struct rapt_ep *ep;
	struct side s;
	unsigned int r, proved = 0;
	uint8_t b[300], *mem;
	uint16_t port;
	int lfd = plain_listen(&port), fd, pfd, one = 1;
	bool p;

	T(lfd >= 0);
	T(!side_open(&s));
	mem = calloc(RP_READS, RP_LEN);
	T(mem);
	TOK(rapt_lmr_create(s.pz, mem, RP_READS * RP_LEN,
			    RAPT_MEM_LOCAL_WRITE, &lmr, &mr));
	TOK(rapt_ep_create(s.pz, s.evd, s.evd, s.evd, &a, &ep));
	TOK(rapt_ep_connect(ep, lo_addr(), port, NULL, 0, 5000000));
	fd = accept(lfd, NULL, NULL);
	T(fd >= 0 && read_full(fd, b, 28 + MARK_LEN) == 28 + MARK_LEN);
	/* Echo A, pick Write; IRD RP_READS for its reads, ORD 1. */
	T(write(fd, b, mpa_frame(b, false, 0x10, 2, 0x8000 | RP_READS,
				 0x8001, NULL, 0)) == 24);
	T(read_full(fd, b, 20) == 20 && !memcmp(b, rtr, 20));
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(ev.u.conn.rdma_read_out == RP_READS);
	pfd = provider_fd(fd);
	T(pfd >= 0);
	/* Each write of ours leaves at once, whatever is unacknowledged. */
	T(!setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
	for (r = 0; r < RP_ROUNDS; r++) {
		if (rp_round(&s, ep, fd, pfd, mem, &mr,
			     (uint64_t)r * RP_READS, &p))
			return -1;
		proved += p;
	}
	fprintf(stderr, "receive pass: %u of %u rounds ended after %u reads\n",
		proved, RP_ROUNDS, RP_PASS);
	T(proved > 0);
	close(fd);
	T(!ev_wait(&s, 0, &ev));
	TOK(rapt_ep_free(ep));
	TOK(rapt_lmr_free(lmr));
	free(mem);
	close(lfd);
	return side_close(&s);
}

static void test_wire_read_pass(void)
{
	CU_ASSERT_EQUAL(wire_read_pass(), 0);
}

/*
 * A responder that loses the RTR (siw as responder can: the RTR arrives
 * before it waits for it; see tcp_conn.c) still gets one: the initiator
 * repeats it as a zero-length Write until the responder speaks, and once
 * more before its FIN or RST, neither of which leaves sooner than the
 * RTR's settle time after the RTR.
 */
#define RTR_SETTLE_MS	20	/* CM_RTR_SETTLE_NS, tcp_cm.h */

enum rtr_close {
	RTR_LATE_GRACEFUL,	/* the timed repeat, then a graceful close */
	RTR_AT_ONCE_GRACEFUL,	/* closes right after ESTABLISHED: */
	RTR_AT_ONCE_ABRUPT,
	RTR_AT_ONCE_FREE,
	RTR_AT_ONCE_GRACEFUL_FREE,	/* graceful, then freed at once */
};

/* Close @*ep right after ESTABLISHED as @how says (*ep NULL once freed). */
static int rtr_close_now(struct side *s, struct rapt_ep **ep,
			 enum rtr_close how)
{
	struct rapt_event ev;

	switch (how) {
	case RTR_LATE_GRACEFUL:
	case RTR_AT_ONCE_GRACEFUL:
		TOK(rapt_ep_disconnect(*ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
		break;
	case RTR_AT_ONCE_ABRUPT:
		TOK(rapt_ep_disconnect(*ep, RAPT_CLOSE_ABRUPT, NULL, 0));
		/* Reported now; only the RST waits. */
		T(!ev_wait(s, RAPT_EV_DISCONNECTED, &ev));
		break;
	case RTR_AT_ONCE_FREE:
		TOK(rapt_ep_free(*ep));
		*ep = NULL;
		break;
	case RTR_AT_ONCE_GRACEFUL_FREE:
		TOK(rapt_ep_disconnect(*ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
		TOK(rapt_ep_free(*ep));
		*ep = NULL;
		break;
	}
	return 0;
}

/* @n, the last read of the socket, is the close @how sends (FIN or RST);
 * then everything goes. */
static int rtr_close_end(struct side *s, int lfd, int fd, struct rapt_ep *ep,
			 enum rtr_close how, ssize_t n)
{
	bool graceful = how == RTR_LATE_GRACEFUL ||
			how == RTR_AT_ONCE_GRACEFUL ||
			how == RTR_AT_ONCE_GRACEFUL_FREE;
	struct rapt_event ev;

	if (graceful)
		T(n == 0);				/* a FIN */
	else
		T(n < 0 && errno == ECONNRESET);	/* an RST */
	close(fd);
	if (graceful && ep)
		T(!ev_wait(s, RAPT_EV_DISCONNECTED, &ev));
	if (ep)
		TOK(rapt_ep_free(ep));
	close(lfd);
	return side_close(s);
}

/* Reply to the request on @fd echoing A and picking the Write RTR (at
 * *@t_reply, before the RTR can leave); read the RTR; ESTABLISHED. */
static int write_rtr_up(struct side *s, int fd, uint64_t *t_reply)
{
	struct rapt_event ev;
	uint8_t b[64];

	*t_reply = now_ms();
	T(write(fd, b, mpa_frame(b, false, 0x10, 2, 0x8001, 0x8001, NULL,
				 0)) == 24);
	T(read_full(fd, b, 20) == 20 && !memcmp(b, rtr, 20));
	T(!ev_wait(s, RAPT_EV_ESTABLISHED, &ev));
	return 0;
}

static int rtr_repeat_one(enum rtr_close how)
{
	uint8_t b[64];
	struct rapt_ep *ep;
	struct side s;
	int lfd, fd, frames = 0;
	uint64_t t_reply;
	ssize_t n;

	T(!side_open(&s));
	T(!raw_responder(&s, &lfd, &fd, &ep));
	T(!write_rtr_up(&s, fd, &t_reply));
	/* "Lost": nothing from us; the repeat comes by itself. */
	if (how == RTR_LATE_GRACEFUL)
		T(read_full(fd, b, 20) == 20 && !memcmp(b, rtr, 20));
	T(!rtr_close_now(&s, &ep, how));
	/* Until our FIN or RST: whole RTR frames only, at least one. */
	while ((n = read_full(fd, b, 20)) == 20) {
		T(!memcmp(b, rtr, 20));
		frames++;
	}
	T(frames >= 1);
	T(now_ms() - t_reply >= RTR_SETTLE_MS - 1);
	return rtr_close_end(&s, lfd, fd, ep, how, n);
}

static void test_rtr_repeat(void)
{
	CU_ASSERT_EQUAL(rtr_repeat_one(RTR_LATE_GRACEFUL), 0);
	CU_ASSERT_EQUAL(rtr_repeat_one(RTR_AT_ONCE_GRACEFUL), 0);
	CU_ASSERT_EQUAL(rtr_repeat_one(RTR_AT_ONCE_ABRUPT), 0);
	CU_ASSERT_EQUAL(rtr_repeat_one(RTR_AT_ONCE_FREE), 0);
}

/*
 * A responder that chooses the Read RTR answers it: that response, not
 * the settle time, releases the close.  The settle time is set far beyond
 * what the test waits (RAPT_TCP_RTR_SETTLE_MS), so a close that waited
 * for it would not come in time; and no repeat precedes the close.
 */
static int rtr_read_release_one(enum rtr_close how)
{
	/* zero-length Read Response; sink STag and TO from the request */
	uint8_t rresp[20] = { 0x00, 0x0e, 0xc1, 0x42 };
	struct pollfd p;
	uint8_t b[64];
	struct rapt_event ev;
	struct rapt_ep *ep;
	struct side s;
	int lfd, fd;

	T(!setenv("RAPT_TCP_RTR_SETTLE_MS", "60000", 1));
	T(!side_open(&s));
	T(!unsetenv("RAPT_TCP_RTR_SETTLE_MS"));
	T(!raw_responder(&s, &lfd, &fd, &ep));
	/* Echo A, pick the Read RTR (R in the ORD field). */
	T(write(fd, b, mpa_frame(b, false, 0x10, 2, 0x8001, 0x4001, NULL,
				 0)) == 24);
	/* The Read RTR: a zero-length Read Request on QN 1. */
	T(read_full(fd, b, 52) == 52 && b[2] == 0x41 && b[3] == 0x41 &&
	  b[11] == 1 && !b[32] && !b[33] && !b[34] && !b[35]);
	memcpy(rresp + 4, b + 20, 12);
	T(!ev_wait(&s, RAPT_EV_ESTABLISHED, &ev));
	T(!rtr_close_now(&s, &ep, how));
	/* Held: nothing yet, not even a repeat. */
	p.fd = fd;
	p.events = POLLIN;
	T(poll(&p, 1, 50) == 0);
	T(write(fd, rresp, sizeof(rresp)) == sizeof(rresp));
	return rtr_close_end(&s, lfd, fd, ep, how, read_full(fd, b, 1));
}

static void test_rtr_read_release(void)
{
	CU_ASSERT_EQUAL(rtr_read_release_one(RTR_AT_ONCE_GRACEFUL), 0);
	CU_ASSERT_EQUAL(rtr_read_release_one(RTR_AT_ONCE_ABRUPT), 0);
	CU_ASSERT_EQUAL(rtr_read_release_one(RTR_AT_ONCE_FREE), 0);
	/* The Read RTR's response outstanding is no reason for an RST. */
	CU_ASSERT_EQUAL(rtr_read_release_one(RTR_AT_ONCE_GRACEFUL_FREE), 0);
}

/*
 * Closing the IA right after an abortive close: the held RST still waits
 * for the settle time, its repeat before it.
 */
static int rtr_settle_ia_close(void)
{
	uint8_t b[64];
	struct rapt_ep *ep;
	struct side s;
	int lfd, fd;
	uint64_t t_reply;

	T(!side_open(&s));
	T(!raw_responder(&s, &lfd, &fd, &ep));
	T(!write_rtr_up(&s, fd, &t_reply));
	TOK(rapt_ep_free(ep));
	T(!side_close(&s));
	T(now_ms() - t_reply >= RTR_SETTLE_MS - 1);
	T(read_full(fd, b, 20) == 20 && !memcmp(b, rtr, 20));
	T(read_full(fd, b, 20) < 0 && errno == ECONNRESET);
	close(fd);
	close(lfd);
	return 0;
}

static void test_rtr_settle_ia_close(void)
{
	CU_ASSERT_EQUAL(rtr_settle_ia_close(), 0);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "private data of every size on connect/accept/reject",
	  test_pdata_every_size },
	{ "raw reject with no private data", test_raw_reject_empty },
	{ "PEER_REJECTED vs NON_PEER_REJECTED/BUSY", test_busy_vs_peer_reject },
	{ "connect to a port nobody listens on", test_no_listener },
	{ "connect timeout", test_connect_timeout },
	{ "garbage peer", test_garbage_peer },
	{ "peer closes during the MPA exchange",
	  test_peer_closes_in_handshake },
	{ "silent client: handshake timeout", test_silent_client },
	{ "handshake limit: silent ones make room, BUSY only for progress",
	  test_handshake_limit },
	{ "1000 silent connections, 100 prompt clients all get in",
	  test_half_open_flood },
	{ "requester leaves before the decision", test_cr_cancelled },
	{ "graceful disconnect, both directions", test_disconnect_graceful },
	{ "abrupt disconnect", test_disconnect_abrupt },
	{ "peer process killed", test_peer_killed },
	{ "cancel a pending connect", test_cancel_connect },
	{ "64 connections at once", test_many_connections },
	{ "IPv6 loopback", test_ipv6_loopback },
	{ "wire: initiator request, reply, RTR", test_wire_initiator },
	{ "wire: reply with an RTR not offered", test_wire_bad_rtr },
	{ "wire: the RTR repeated until the responder speaks",
	  test_rtr_repeat },
	{ "wire: an IA closed at once still holds the RST for the RTR's settle time",
	  test_rtr_settle_ia_close },
	{ "wire: a reject's close waits for the requester's",
	  test_wire_reject_linger },
	{ "wire: the Read RTR's response releases a held close",
	  test_rtr_read_release },
	{ "wire: responder, P2P / siw / rev 1 / CRC", test_wire_responder },
	{ "wire: responder, the mark: Write RTR, no response",
	  test_wire_mark_responder },
	{ "wire: initiator, the mark: no settle time, FIN at once",
	  test_wire_mark_initiator },
	{ "wire: empty foreign request and reply: raw, foreign",
	  test_wire_foreign_empty },
	{ "wire: reset by the peer: BROKEN with ECONNRESET", test_wire_reset },
	{ "wire: M=1 refused", test_wire_markers },
	{ "wire: no Write/Read RTR offered: refused; 512-byte pdata taken",
	  test_wire_rtr_and_512 },
	{ "wire: request and reply in pieces", test_wire_pieces },
	{ "wire: bytes behind a request or a reply", test_wire_early_bytes },
	{ "wire: Send with Invalidate of an unknown key",
	  test_wire_inv_unknown },
	{ "wire: lmr_free waits for a Read Response on a full socket",
	  test_wire_rresp_free },
	{ "wire: the same through a window freed first",
	  test_wire_rresp_free_window },
	{ "wire: a polling consumer's receive pass ends after 8 reads",
	  test_wire_read_pass },
	{ "the peer-timeout bound on both ends' sockets",
	  test_peer_bound_sockets },
	{ "ep_free after a graceful disconnect loses nothing",
	  test_free_after_graceful },
};

int main(void)
{
	CU_pSuite suite;
	unsigned int i, failed;

	/* The wire checks expect no CRC request, the default. */
	unsetenv("RAPT_TCP_CRC");
	signal(SIGPIPE, SIG_IGN);
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	suite = CU_add_suite("tcp connection management", NULL, NULL);
	for (i = 0; suite && i < sizeof(tests) / sizeof(tests[0]); i++)
		CU_add_test(suite, tests[i].name, tests[i].fn);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return cu_exit_status(failed);
}
