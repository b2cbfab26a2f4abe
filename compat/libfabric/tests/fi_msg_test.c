// SPDX-License-Identifier: MIT
/*
 * A libfabric MSG program over the rapt provider, through libfabric's own
 * public API only: a server (this process) and a client (a forked child)
 * on loopback.  It checks what ofi_rxm and MPI rely on:
 *   - getinfo, fabric, domain, EQ, CQ, MR, passive and active endpoints;
 *   - a listener's name is a real address with a real port;
 *   - fi_info refuses hints asking for what rapt lacks (tagged, atomics,
 *     RDM, a large inject, automatic data progress) and survives hints
 *     without an ep_attr; counters, AVs, CQ data answer -FI_ENOSYS;
 *   - connection data both ways, a reject with its data seen as
 *     FI_ECONNREFUSED, OFI_OPS_FLOW_CTRL and tagged sends -FI_ENOSYS;
 *   - a ping-pong over sizes from 1 byte to 1 MiB (longer than a receive
 *     slot: fragments), every byte verified at both ends;
 *   - a sender held by flow control (-FI_EAGAIN) while the peer has no
 *     receive posted, and every message delivered in order afterwards;
 *   - RDMA write and read, verified at both ends; injects, a message
 *     and an RDMA write;
 *   - FI_SHUTDOWN at the server when the client shuts down, and its
 *     pending receive completing FI_ECANCELED.
 * The environment (the test script) points FI_PROVIDER_PATH at the
 * provider and FI_RAPT_IA at tcp:lo.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

/* any single wait longer than this fails */
#define WAIT_MS		20000
#define ITERS		20
#define HELD_MSGS	300	/* far more than the provider's 32 slots */
#define BUF_LEN		(1u << 20)

static const char *who = "server";

#define CHECK(cond) do {						\
	if (!(cond))							\
		fail("%s:%d: %s", __FILE__, __LINE__, #cond);		\
} while (0)

#define CHECK_RET(call) do {						\
	ssize_t _r = (call);						\
	if (_r)								\
		fail("%s:%d: %s: %zd (%s)", __FILE__, __LINE__, #call,	\
		     _r, fi_strerror((int)-_r));			\
} while (0)

__attribute__((noreturn, format(printf, 1, 2)))
static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL (%s): ", who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static const size_t sizes[] = { 1, 8, 1000, 4096, 32768, 32769, 100000,
				BUF_LEN };

struct side {
	struct fi_info *fi;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	uint8_t *buf;		/* send half, then receive half */
};

static uint8_t *sbuf(struct side *s)
{
	return s->buf;
}

static uint8_t *rbuf(struct side *s)
{
	return s->buf + BUF_LEN;
}

static void *desc(struct side *s)
{
	return fi_mr_desc(s->mr);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static void verify(const uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (uint8_t)(seed * 31 + i * 7 + (i >> 8)))
			fail("byte %zu of %zu (seed %u) is %u", i, len, seed,
			     p[i]);
}

static void setup(struct side *s, const char *node, const char *service)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_eq_attr eqa = { .size = 64, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cqa = { .size = 512, .format = FI_CQ_FORMAT_DATA,
				  .wait_obj = FI_WAIT_NONE };

	CHECK(hints);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("rapt");
	CHECK_RET(fi_getinfo(FI_VERSION(1, 17), node, service, 0, hints,
			     &s->fi));
	fi_freeinfo(hints);
	CHECK(!strcmp(s->fi->fabric_attr->prov_name, "rapt"));
	CHECK(s->fi->ep_attr->type == FI_EP_MSG);
	CHECK(s->fi->tx_attr->inject_size >= 8);
	CHECK_RET(fi_fabric(s->fi->fabric_attr, &s->fabric, NULL));
	CHECK_RET(fi_domain(s->fabric, s->fi, &s->domain, NULL));
	CHECK_RET(fi_eq_open(s->fabric, &eqa, &s->eq, NULL));
	CHECK_RET(fi_cq_open(s->domain, &cqa, &s->cq, NULL));
	s->buf = aligned_alloc(4096, 2 * BUF_LEN);
	CHECK(s->buf);
	memset(s->buf, 0, 2 * BUF_LEN);
	CHECK_RET(fi_mr_reg(s->domain, s->buf, 2 * BUF_LEN,
			    FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			    FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
			    &s->mr, NULL));
}

static void ep_open(struct side *s, struct fi_info *fi)
{
	CHECK_RET(fi_endpoint(s->domain, fi, &s->ep, NULL));
	CHECK_RET(fi_ep_bind(s->ep, &s->eq->fid, 0));
	CHECK_RET(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK_RET(fi_enable(s->ep));
}

static void teardown(struct side *s)
{
	if (s->ep)
		CHECK_RET(fi_close(&s->ep->fid));
	CHECK_RET(fi_close(&s->mr->fid));
	CHECK_RET(fi_close(&s->cq->fid));
	CHECK_RET(fi_close(&s->eq->fid));
	CHECK_RET(fi_close(&s->domain->fid));
	CHECK_RET(fi_close(&s->fabric->fid));
	fi_freeinfo(s->fi);
	free(s->buf);
}

/* The next EQ event, which must be @want; its data goes to @entry. */
static ssize_t eq_expect(struct side *s, uint32_t want,
			 struct fi_eq_cm_entry *entry, size_t len)
{
	struct fi_eq_err_entry err = { 0 };
	uint32_t ev;
	ssize_t n;

	n = fi_eq_sread(s->eq, &ev, entry, len, WAIT_MS, 0);
	if (n == -FI_EAVAIL) {
		fi_eq_readerr(s->eq, &err, 0);
		fail("EQ error %d (%s) waiting for event %u", err.err,
		     fi_strerror(err.err), want);
	}
	if (n < 0)
		fail("fi_eq_sread: %zd (%s) waiting for event %u", n,
		     fi_strerror((int)-n), want);
	if (ev != want)
		fail("EQ event %u, expected %u", ev, want);
	return n - (ssize_t)sizeof(*entry);
}

/* The next completion, which must be a success for @ctx. */
static void cq_expect(struct side *s, void *ctx, uint64_t flags, size_t len)
{
	struct fi_cq_data_entry c;
	struct fi_cq_err_entry err = { 0 };
	int64_t end = now_ms() + WAIT_MS;
	ssize_t n;

	do {
		n = fi_cq_read(s->cq, &c, 1);
		if (n == -FI_EAVAIL) {
			fi_cq_readerr(s->cq, &err, 0);
			fail("completion error %d (%s), ctx %p", err.err,
			     fi_strerror(err.err), err.op_context);
		}
		if (n != -FI_EAGAIN && n != 1)
			fail("fi_cq_read: %zd", n);
	} while (n == -FI_EAGAIN && now_ms() < end);
	if (n != 1)
		fail("no completion for ctx %p in %d ms", ctx, WAIT_MS);
	if (c.op_context != ctx || (c.flags & flags) != flags)
		fail("completion ctx %p flags %#lx, expected %p %#lx",
		     c.op_context, (unsigned long)c.flags, ctx,
		     (unsigned long)flags);
	if ((flags & FI_RECV) && c.len != len)
		fail("received %zu bytes, expected %zu", c.len, len);
}

/* The next completion is an FI_ECANCELED receive error for @ctx. */
static void cq_expect_flushed(struct side *s, void *ctx)
{
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_data_entry c;
	int64_t end = now_ms() + WAIT_MS;
	ssize_t n;

	while ((n = fi_cq_read(s->cq, &c, 1)) == -FI_EAGAIN &&
	       now_ms() < end)
		;
	if (n != -FI_EAVAIL)
		fail("fi_cq_read: %zd, expected a flushed receive", n);
	CHECK(fi_cq_readerr(s->cq, &err, 0) == 1);
	CHECK(err.err == FI_ECANCELED && err.op_context == ctx);
	CHECK(err.flags & FI_RECV);
}

/* Post a send, riding out -FI_EAGAIN (flow control) by polling. */
static bool send_msg(struct side *s, const void *buf, size_t len, void *ctx)
{
	int64_t end = now_ms() + WAIT_MS;
	bool held = false;
	ssize_t r;

	while ((r = fi_send(s->ep, buf, len, desc(s), 0, ctx)) == -FI_EAGAIN) {
		held = true;
		if (now_ms() > end)
			fail("send of %zu bytes held for %d ms", len, WAIT_MS);
	}
	if (r)
		fail("fi_send: %zd (%s)", r, fi_strerror((int)-r));
	return held;
}

static void pingpong(struct side *s, bool server)
{
	size_t k, i, len;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		len = sizes[k];
		for (i = 0; i < ITERS; i++) {
			unsigned int seed = (unsigned int)(k * 100 + i);

			CHECK_RET(fi_recv(s->ep, rbuf(s), len, desc(s), 0,
					  rbuf(s)));
			if (!server) {
				fill(sbuf(s), len, seed);
				send_msg(s, sbuf(s), len, sbuf(s));
				cq_expect(s, sbuf(s), FI_SEND, 0);
			}
			cq_expect(s, rbuf(s), FI_RECV | FI_MSG, len);
			verify(rbuf(s), len, seed);
			if (server) {
				memcpy(sbuf(s), rbuf(s), len);
				send_msg(s, sbuf(s), len, sbuf(s));
				cq_expect(s, sbuf(s), FI_SEND, 0);
			}
			memset(rbuf(s), 0, len);
		}
	}
}

/*
 * fi_getinfo with hints asking for one thing rapt does not offer: 0 if
 * rapt itself answered, else the error.  (libfabric may answer with
 * ofi_rxm layered on rapt, "rapt;ofi_rxm", which offers more.)
 */
static int getinfo_lacking(void (*ask)(struct fi_info *))
{
	struct fi_info *hints = fi_allocinfo(), *fi = NULL, *cur;
	int ret;

	CHECK(hints);
	hints->fabric_attr->prov_name = strdup("rapt");
	ask(hints);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &fi);
	for (cur = ret ? NULL : fi; cur; cur = cur->next)
		if (!strcmp(cur->fabric_attr->prov_name, "rapt"))
			break;
	if (!ret && !cur)
		ret = -FI_ENODATA;
	fi_freeinfo(fi);
	fi_freeinfo(hints);
	return ret;
}

static void ask_tagged(struct fi_info *h)
{
	h->caps = FI_TAGGED;
}

static void ask_atomic(struct fi_info *h)
{
	h->caps = FI_ATOMIC;
}

static void ask_rdm(struct fi_info *h)
{
	h->ep_attr->type = FI_EP_RDM;
}

static void ask_inject(struct fi_info *h)
{
	h->tx_attr->inject_size = 4096;	/* more than inline takes */
}

static void ask_auto_progress(struct fi_info *h)
{
	h->domain_attr->data_progress = FI_PROGRESS_AUTO;
}

/* ofi_rxm asks with only a fabric_attr: no ep_attr at all. */
static void ask_fabric_only(struct fi_info *h)
{
	free(h->ep_attr);
	h->ep_attr = NULL;
}

/* fi_info says what rapt offers, and what it does not is refused. */
static void truthful_info(struct side *s)
{
	struct fi_cntr_attr ca = { 0 };
	struct fi_av_attr aa = { 0 };
	struct fid_cntr *cntr;
	struct fid_av *av;

	CHECK(getinfo_lacking(ask_tagged) == -FI_ENODATA);
	CHECK(getinfo_lacking(ask_atomic) == -FI_ENODATA);
	CHECK(getinfo_lacking(ask_rdm) == -FI_ENODATA);
	CHECK(getinfo_lacking(ask_inject) == -FI_ENODATA);
	CHECK(getinfo_lacking(ask_auto_progress) == -FI_ENODATA);
	CHECK(getinfo_lacking(ask_fabric_only) == 0);
	CHECK(!(s->fi->caps & (FI_TAGGED | FI_ATOMIC)));
	CHECK(s->fi->domain_attr->cq_data_size == 0);
	CHECK(fi_cntr_open(s->domain, &ca, &cntr, NULL) == -FI_ENOSYS);
	CHECK(fi_av_open(s->domain, &aa, &av, NULL) == -FI_ENOSYS);
}

/* ---- server ---- */

static struct fi_info *connreq(struct side *s, struct fid_pep *pep,
			       const char *data)
{
	uint8_t raw[sizeof(struct fi_eq_cm_entry) + 64];
	struct fi_eq_cm_entry *e = (void *)raw;
	ssize_t n = eq_expect(s, FI_CONNREQ, e, sizeof(raw));

	CHECK(e->fid == &pep->fid);
	CHECK(e->info && e->info->handle);
	CHECK((size_t)n == strlen(data) + 1 && !memcmp(e->data, data, n));
	return e->info;
}

static void server_held(struct side *s, int from_client)
{
	uint32_t seq;
	char c;
	int i;

	/* the client says its sends are held: no receive was posted */
	CHECK(read(from_client, &c, 1) == 1 && c == 'H');
	for (i = 0; i < HELD_MSGS; i++) {
		CHECK_RET(fi_recv(s->ep, rbuf(s), 64, desc(s), 0, rbuf(s)));
		cq_expect(s, rbuf(s), FI_RECV, 64);
		memcpy(&seq, rbuf(s), sizeof(seq));
		if (seq != (uint32_t)i)
			fail("held message %d arrived as %u", i, seq);
		verify(rbuf(s) + 4, 60, (unsigned int)i);
	}
}

static void server_rma(struct side *s)
{
	uint64_t adv[2] = { (uint64_t)(uintptr_t)rbuf(s), fi_mr_key(s->mr) };

	/* the client writes its pattern into our receive half, reads it
	 * back, then says "done" */
	memcpy(sbuf(s), adv, sizeof(adv));
	send_msg(s, sbuf(s), sizeof(adv), sbuf(s));
	cq_expect(s, sbuf(s), FI_SEND, 0);
	CHECK_RET(fi_recv(s->ep, sbuf(s) + 4096, 8, desc(s), 0, s));
	cq_expect(s, s, FI_RECV, 5);
	CHECK(!memcmp(sbuf(s) + 4096, "done", 5));
	verify(rbuf(s), 200000, 77);
	CHECK(!memcmp(rbuf(s) + 200000, "injected", 9));
}

static void run_server(int to_client, int from_client)
{
	struct side s = { 0 };
	struct fi_eq_cm_entry e;
	struct sockaddr_in sin;
	size_t len = sizeof(sin), cm_size = 0;
	struct fid_pep *pep;
	struct fi_info *fi;
	void *ops = NULL;

	setup(&s, NULL, NULL);
	truthful_info(&s);
	/* ofi_rxm asks for this: rapt must say it has none */
	CHECK(fi_open_ops(&s.domain->fid, "ofi_flow_ctrl_v1", 0, &ops,
			  NULL) == -FI_ENOSYS);
	CHECK_RET(fi_passive_ep(s.fabric, s.fi, &pep, NULL));
	CHECK_RET(fi_pep_bind(pep, &s.eq->fid, 0));
	len = sizeof(cm_size);
	CHECK_RET(fi_getopt(&pep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE,
			    &cm_size, &len));
	CHECK(cm_size >= 24);
	CHECK_RET(fi_listen(pep));
	len = sizeof(sin);
	CHECK_RET(fi_getname(&pep->fid, &sin, &len));
	CHECK(sin.sin_family == AF_INET && sin.sin_port != 0);
	CHECK(sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	CHECK(write(to_client, &sin.sin_port, 2) == 2);

	fi = connreq(&s, pep, "reject me");
	CHECK_RET(fi_reject(pep, fi->handle, "go away", 8));
	fi_freeinfo(fi);

	fi = connreq(&s, pep, "hello");
	ep_open(&s, fi);
	fi_freeinfo(fi);
	CHECK_RET(fi_accept(s.ep, "welcome", 8));
	CHECK(eq_expect(&s, FI_CONNECTED, &e, sizeof(e)) == 0);
	CHECK(e.fid == &s.ep->fid);

	pingpong(&s, true);
	server_held(&s, from_client);
	server_rma(&s);
	/* a receive no message will fill, then the client shuts down */
	CHECK_RET(fi_recv(s.ep, rbuf(&s), 64, desc(&s), 0, &pep));
	CHECK(eq_expect(&s, FI_SHUTDOWN, &e, sizeof(e)) == 0);
	CHECK(e.fid == &s.ep->fid);
	cq_expect_flushed(&s, &pep);
	CHECK_RET(fi_close(&pep->fid));
	teardown(&s);
}

/* ---- client ---- */

static void client_rejected(struct side *s)
{
	struct fi_eq_err_entry err = { 0 };
	struct fi_eq_cm_entry e;
	char data[8];
	uint32_t ev;

	CHECK_RET(fi_connect(s->ep, s->fi->dest_addr, "reject me", 10));
	CHECK(fi_eq_sread(s->eq, &ev, &e, sizeof(e), WAIT_MS, 0) ==
	      -FI_EAVAIL);
	CHECK(fi_eq_readerr(s->eq, &err, 0) == sizeof(err));
	CHECK(err.err == FI_ECONNREFUSED && err.fid == &s->ep->fid);
	CHECK(err.err_data_size == 8);
	memcpy(data, err.err_data, 8);
	CHECK(!memcmp(data, "go away", 8));
	CHECK_RET(fi_close(&s->ep->fid));
	s->ep = NULL;
}

/* Send completions of the held phase; returns how many it read. */
static int reap_sends(struct side *s)
{
	struct fi_cq_data_entry c;
	int n = 0;

	while (fi_cq_read(s->cq, &c, 1) == 1) {
		CHECK(c.flags & FI_SEND);
		n++;
	}
	return n;
}

static void client_held(struct side *s, int to_server)
{
	int64_t end = now_ms() + WAIT_MS;
	bool told = false;
	int done = 0;
	uint32_t i;
	uint8_t *m;

	for (i = 0; i < HELD_MSGS; i++) {
		m = sbuf(s) + i * 64;
		memcpy(m, &i, sizeof(i));
		fill(m + 4, 60, i);
		while (fi_send(s->ep, m, 64, desc(s), 0, m) == -FI_EAGAIN) {
			if (!told) {
				/* held: now the server may post receives */
				CHECK(write(to_server, "H", 1) == 1);
				told = true;
			}
			/* send completions, and the server's credits */
			done += reap_sends(s);
		}
	}
	if (!told)
		fail("%d sends, none held: no flow control", HELD_MSGS);
	while (done < HELD_MSGS && now_ms() < end)
		done += reap_sends(s);
	CHECK(done == HELD_MSGS);
}

static void client_rma(struct side *s)
{
	struct fi_cq_data_entry c;
	uint64_t adv[2];
	ssize_t r;

	CHECK_RET(fi_recv(s->ep, rbuf(s), 16, desc(s), 0, rbuf(s)));
	cq_expect(s, rbuf(s), FI_RECV, 16);
	memcpy(adv, rbuf(s), sizeof(adv));
	fill(sbuf(s), 200000, 77);
	CHECK_RET(fi_write(s->ep, sbuf(s), 200000, desc(s), 0, adv[0], adv[1],
			   s));
	cq_expect(s, s, FI_RMA | FI_WRITE, 0);
	memset(rbuf(s), 0, 200000);
	CHECK_RET(fi_read(s->ep, rbuf(s), 200000, desc(s), 0, adv[0], adv[1],
			  s));
	cq_expect(s, s, FI_RMA | FI_READ, 0);
	verify(rbuf(s), 200000, 77);
	/* injects: the buffer is free at once, and nothing completes; the
	 * RDMA write is placed before the message that follows it */
	memcpy(sbuf(s), "injected", 9);
	while ((r = fi_inject_write(s->ep, sbuf(s), 9, 0, adv[0] + 200000,
				    adv[1])) == -FI_EAGAIN)
		;
	CHECK(r == 0);
	memset(sbuf(s), 0, 9);
	memcpy(sbuf(s), "done", 5);
	while ((r = fi_inject(s->ep, sbuf(s), 5, 0)) == -FI_EAGAIN)
		;
	CHECK(r == 0);
	memset(sbuf(s), 0, 5);
	CHECK(fi_cq_read(s->cq, &c, 1) == -FI_EAGAIN);
}

static void run_client(int from_server, int to_server)
{
	uint8_t raw[sizeof(struct fi_eq_cm_entry) + 64];
	struct fi_eq_cm_entry *e = (void *)raw;
	struct side s = { 0 };
	uint16_t port;
	char service[8];

	who = "client";
	CHECK(read(from_server, &port, 2) == 2);
	snprintf(service, sizeof(service), "%u", ntohs(port));
	setup(&s, "127.0.0.1", service);
	CHECK(s.fi->dest_addr);

	ep_open(&s, s.fi);
	client_rejected(&s);

	ep_open(&s, s.fi);
	/* no tagged interface (ofi_rxm layers it), no inject, no CQ data */
	CHECK(fi_tsend(s.ep, sbuf(&s), 1, desc(&s), 0, 1, NULL) ==
	      -FI_ENOSYS);
	CHECK(fi_senddata(s.ep, sbuf(&s), 1, desc(&s), 7, 0, NULL) ==
	      -FI_ENOSYS);
	CHECK_RET(fi_connect(s.ep, s.fi->dest_addr, "hello", 6));
	CHECK(eq_expect(&s, FI_CONNECTED, e, sizeof(raw)) == 8);
	CHECK(e->fid == &s.ep->fid && !memcmp(e->data, "welcome", 8));

	pingpong(&s, false);
	client_held(&s, to_server);
	client_rma(&s);
	CHECK_RET(fi_shutdown(s.ep, 0));
	teardown(&s);
}

int main(void)
{
	int to_client[2], to_server[2], status;
	pid_t pid;

	if (pipe(to_client) || pipe(to_server)) {
		perror("pipe");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		close(to_client[1]);
		close(to_server[0]);
		run_client(to_client[0], to_server[1]);
		return 0;
	}
	close(to_client[0]);
	close(to_server[1]);
	run_server(to_client[1], to_server[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "FAIL: the client failed\n");
		return 1;
	}
	printf("PASS: MSG ping-pong 1 B..1 MiB, reject, flow control, RMA, "
	       "shutdown over rapt\n");
	return 0;
}
