/* SPDX-License-Identifier: MIT */
/*
 * Echo stress under CPU contention (issue #13, item 6): many concurrent
 * connections over tcp:lo, each a client thread with an IA of its own
 * (its own engine thread, as separate processes would have; or one IA
 * for all with RAPT_STRESS_SHARED_IA=1) doing a send/receive ping-pong
 * with one echo server, while busy CPU hogs compete for the cores.  The
 * clients take turns at the three ways to wait: busy-poll the EVD (the
 * provider parks their EPs), sleep in rapt_evd_wait, and arm the EVD and
 * poll() its fd.  Every echo must arrive within a bound; a stall names
 * the connection, the message and the mode.
 *
 *   RAPT_STRESS_CONNS    connections (default 8)
 *   RAPT_STRESS_MSGS     round trips per connection (default 200)
 *   RAPT_STRESS_HOGS     busy processes (default 1)
 *   RAPT_STRESS_BOUND_MS the bound on one round trip (default 3000)
 *   RAPT_STRESS_ROUNDS   repeat the whole run (default 1)
 *   RAPT_STRESS_SERVER   the server's way to wait: 0 block (default),
 *                        1 busy-poll, 2 fd; with RAPT_STRESS_SRV_EVDS
 *                        EVDs (1; more only when polling or fd), its EPs
 *                        spread over them, so that few EPs share one
 *                        (and a polling server parks them)
 *
 * make check runs the defaults (a few seconds); `make stress` runs it
 * long (tests/Makefile.inc).  Exit: 0, 1 on a stall or an error, 77 when
 * tcp:lo cannot be opened.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rapt/rapt.h>

#define MSG		64
#define MAX_CONNS	256
#define SRV_RECVS	4

static unsigned int nconns, nmsgs, nhogs, bound_ms;
static uint16_t port;
static atomic_int failures;
static atomic_uint max_rtt_us;

static unsigned int env_u(const char *name, unsigned int def)
{
	const char *v = getenv(name);

	return v && atoi(v) > 0 ? (unsigned int)atoi(v) : def;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

#define CHECK(call)							\
	do {								\
		int rc_ = (call);					\
		if (rc_) {						\
			fprintf(stderr, "%s:%d: %s: %s (%s)\n",		\
				__FILE__, __LINE__, #call,		\
				rapt_err_name(rc_), rapt_last_error());	\
			atomic_fetch_add(&failures, 1);			\
			goto out;					\
		}							\
	} while (0)

/* ------------------------------------------------------------------ */
/* The echo server: one IA, one EVD, blocking waits                    */
/* ------------------------------------------------------------------ */

struct srv_conn {
	struct rapt_ep *ep;
	uint8_t *buf;		/* SRV_RECVS receive slots, then as many send */
};

#define MAX_EVDS 32

static unsigned int srv_mode, srv_nevds;

static struct {
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_evd *evd;		/* the CR's, and evds[0] */
	struct rapt_evd *evds[MAX_EVDS];
	struct rapt_psp *psp;
	struct rapt_lmr *lmr;
	struct rapt_lmr_info mi;
	uint8_t *mem;
	struct srv_conn conns[MAX_CONNS];
	unsigned int nconns, nended;
	atomic_bool stop;
} srv;

static int srv_post_recv(unsigned int c, unsigned int k)
{
	struct rapt_sge sge = {
		.addr = (uintptr_t)(srv.conns[c].buf + k * MSG),
		.length = MSG, .lkey = srv.mi.lkey,
	};

	return rapt_ep_post_recv(srv.conns[c].ep, &sge, 1,
				 (uint64_t)c << 8 | k);
}

static int srv_accept(struct rapt_cr *cr)
{
	unsigned int c = srv.nconns, k;
	int ret;

	if (c >= MAX_CONNS)
		return rapt_cr_reject(cr, NULL, 0);
	struct rapt_evd *e = srv.evds[c % srv_nevds];

	srv.conns[c].buf = srv.mem + (size_t)c * 2 * SRV_RECVS * MSG;
	ret = rapt_ep_create(srv.pz, e, e, e, NULL, &srv.conns[c].ep);
	if (ret)
		return ret;
	for (k = 0; k < SRV_RECVS && !ret; k++)
		ret = srv_post_recv(c, k);
	if (!ret)
		ret = rapt_cr_accept(cr, srv.conns[c].ep, NULL, 0);
	srv.nconns++;
	return ret;
}

/* A message came in: send it back from a send slot, repost the receive. */
static int srv_echo(const struct rapt_event *ev)
{
	unsigned int c = (unsigned int)(ev->u.dto.cookie >> 8);
	unsigned int k = (unsigned int)(ev->u.dto.cookie & 0xff);
	uint8_t *out = srv.conns[c].buf + (SRV_RECVS + k) * MSG;
	struct rapt_sge sge = {
		.addr = (uintptr_t)out, .length = ev->u.dto.length,
		.lkey = srv.mi.lkey,
	};
	int ret;

	memcpy(out, srv.conns[c].buf + k * MSG, ev->u.dto.length);
	ret = rapt_ep_post_send(srv.conns[c].ep, &sge, 1, UINT64_MAX, 0);
	return ret ? ret : srv_post_recv(c, k);
}

static int srv_event(const struct rapt_event *ev)
{
	switch (ev->type) {
	case RAPT_EV_CR_ARRIVAL:
		return srv_accept(ev->u.cr.cr);
	case RAPT_EV_DTO:
		if (ev->u.dto.status != RAPT_DTO_SUCCESS)
			return 0;	/* flushes at the end */
		if (ev->u.dto.op == RAPT_OP_RECV)
			return srv_echo(ev);
		return 0;
	case RAPT_EV_DISCONNECTED:
	case RAPT_EV_BROKEN:
		srv.nended++;
		return 0;
	default:
		return 0;
	}
}

/* One pass over the server's EVDs, its way: 0 or an error. */
static int srv_pass(void)
{
	struct pollfd p[MAX_EVDS];
	struct rapt_event ev;
	unsigned int i;
	int ret;

	if (srv_mode == 0) {
		ret = rapt_evd_wait(srv.evd, 100000, 1, &ev, NULL);
		return ret == RAPT_ETIMEDOUT ? 0 : ret ? ret : srv_event(&ev);
	}
	for (i = 0; i < srv_nevds; i++) {
		while ((ret = rapt_evd_dequeue(srv.evds[i], &ev)) == 0) {
			ret = srv_event(&ev);
			if (ret)
				return ret;
		}
		if (ret != RAPT_EAGAIN)
			return ret;
	}
	if (srv_mode == 1)
		return 0;
	for (i = 0; i < srv_nevds; i++) {
		p[i].events = POLLIN;
		ret = rapt_evd_get_fd(srv.evds[i], &p[i].fd);
		if (ret)
			return ret;
		if (rapt_evd_arm(srv.evds[i]) == RAPT_EAGAIN)
			return 0;
	}
	poll(p, srv_nevds, 100);
	return 0;
}

static void *srv_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&srv.stop))
		CHECK(srv_pass());
out:
	return NULL;
}

static int srv_open(void)
{
	struct rapt_psp_info pi;
	size_t len = (size_t)MAX_CONNS * 2 * SRV_RECVS * MSG;
	unsigned int i;

	if (rapt_ia_open("tcp:lo", &srv.ia)) {
		fprintf(stderr, "SKIP: tcp:lo cannot be opened: %s\n",
			rapt_last_error());
		return 77;
	}
	srv.mem = calloc(1, len);
	for (i = 0; i < srv_nevds; i++)
		if (rapt_evd_create(srv.ia, 8192, RAPT_EVD_DTO |
				    RAPT_EVD_CONNECTION | RAPT_EVD_CR,
				    &srv.evds[i]))
			return 1;
	srv.evd = srv.evds[0];
	if (!srv.mem ||
	    rapt_pz_create(srv.ia, &srv.pz) ||
	    rapt_lmr_create(srv.pz, srv.mem, len, RAPT_MEM_LOCAL_WRITE,
			    &srv.lmr, &srv.mi) ||
	    rapt_psp_create(srv.ia, RAPT_SERVICE_ID_ANY, srv.evd, NULL,
			    &srv.psp) ||
	    rapt_psp_query(srv.psp, &pi, sizeof(pi))) {
		fprintf(stderr, "server: %s\n", rapt_last_error());
		return 1;
	}
	port = (uint16_t)pi.service_id;
	return 0;
}

static void srv_close(void)
{
	unsigned int c;

	for (c = 0; c < srv.nconns; c++)
		rapt_ep_free(srv.conns[c].ep);
	rapt_psp_free(srv.psp);
	rapt_lmr_free(srv.lmr);
	for (c = 0; c < srv_nevds; c++)
		rapt_evd_free(srv.evds[c]);
	rapt_pz_free(srv.pz);
	rapt_ia_close(srv.ia);
	free(srv.mem);
	memset(&srv, 0, sizeof(srv));
}

/* ------------------------------------------------------------------ */
/* Clients: one thread and one IA each                                  */
/* ------------------------------------------------------------------ */

enum cli_mode { CLI_POLL, CLI_BLOCK, CLI_FD, CLI_NMODES };

static const char *const mode_names[] = { "polling", "blocking", "fd" };

struct client {
	unsigned int id;
	enum cli_mode mode;
	pthread_t th;
};

static struct rapt_ia *shared_ia;

/* Arm the EVD, poll() its fd, dequeue. */
static int fd_wait(struct rapt_evd *evd, int64_t us, struct rapt_event *ev)
{
	struct pollfd p = { .events = POLLIN };
	int ret = rapt_evd_dequeue(evd, ev);

	if (ret != RAPT_EAGAIN)
		return ret;
	ret = rapt_evd_get_fd(evd, &p.fd);
	if (ret)
		return ret;
	if (rapt_evd_arm(evd) == 0)
		poll(&p, 1, (int)(us / 1000) + 1);
	return rapt_evd_dequeue(evd, ev);
}

/* The next event, the client's way, until @deadline (us). */
static int cli_next(struct rapt_evd *evd, enum cli_mode mode,
		    uint64_t deadline, struct rapt_event *ev)
{
	uint64_t now;
	int ret;

	for (;;) {
		now = now_us();
		if (now >= deadline)
			return RAPT_ETIMEDOUT;
		if (mode == CLI_POLL)
			ret = rapt_evd_dequeue(evd, ev);
		else if (mode == CLI_FD)
			ret = fd_wait(evd, (int64_t)(deadline - now), ev);
		else
			ret = rapt_evd_wait(evd, (int64_t)(deadline - now), 1,
					    ev, NULL);
		if (ret != RAPT_EAGAIN && ret != RAPT_ETIMEDOUT)
			return ret;
	}
}

/* Wait for the echo of message @i: its receive completion. */
static int cli_round(struct client *cl, struct rapt_ep *ep,
		     struct rapt_evd *evd, struct rapt_lmr_info *mi,
		     uint8_t *buf, unsigned int i)
{
	struct rapt_sge r = { (uintptr_t)(buf + MSG), MSG, mi->lkey };
	struct rapt_sge s = { (uintptr_t)buf, MSG, mi->lkey };
	uint64_t t0 = now_us(), dt;
	struct rapt_event ev;
	bool got = false, sent = false;
	int ret;

	memset(buf, 0, 2 * MSG);
	snprintf((char *)buf, MSG, "conn %u msg %u", cl->id, i);
	ret = rapt_ep_post_recv(ep, &r, 1, 1);
	if (!ret)
		ret = rapt_ep_post_send(ep, &s, 1, 2, 0);
	while (!ret && !(got && sent)) {
		ret = cli_next(evd, cl->mode, t0 + bound_ms * 1000ull, &ev);
		if (ret == RAPT_ETIMEDOUT) {
			fprintf(stderr, "STALL: conn %u (%s) msg %u: no %s within %u ms\n",
				cl->id, mode_names[cl->mode], i,
				got ? "send completion" : "echo", bound_ms);
			return ret;
		}
		if (ret)
			break;
		if (ev.type != RAPT_EV_DTO) {
			fprintf(stderr, "conn %u: %s at msg %u\n", cl->id,
				rapt_event_name(ev.type), i);
			return RAPT_EPROTO;
		}
		if (ev.u.dto.status != RAPT_DTO_SUCCESS)
			return RAPT_EIO;
		if (ev.u.dto.op == RAPT_OP_RECV)
			got = true;
		else
			sent = true;
	}
	if (!ret && memcmp(buf, buf + MSG, MSG)) {
		fprintf(stderr, "conn %u msg %u: wrong echo\n", cl->id, i);
		ret = RAPT_EPROTO;
	}
	dt = now_us() - t0;
	if (dt > atomic_load(&max_rtt_us))
		atomic_store(&max_rtt_us, (unsigned int)dt);
	return ret;
}

static void *cli_thread(void *arg)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	struct client *cl = arg;
	struct rapt_ia *ia = NULL;
	struct rapt_pz *pz = NULL;
	struct rapt_evd *evd = NULL;
	struct rapt_ep *ep = NULL;
	struct rapt_lmr *lmr = NULL;
	struct rapt_lmr_info mi;
	struct rapt_event ev;
	uint8_t *buf = calloc(1, 2 * MSG);
	unsigned int i;

	sin.sin_port = htons(port);
	CHECK(buf ? 0 : RAPT_ENOMEM);
	if (shared_ia)
		ia = shared_ia;
	else
		CHECK(rapt_ia_open("tcp:lo", &ia));
	CHECK(rapt_pz_create(ia, &pz));
	CHECK(rapt_evd_create(ia, 64, RAPT_EVD_DTO | RAPT_EVD_CONNECTION,
			      &evd));
	CHECK(rapt_lmr_create(pz, buf, 2 * MSG, RAPT_MEM_LOCAL_WRITE, &lmr,
			      &mi));
	CHECK(rapt_ep_create(pz, evd, evd, evd, NULL, &ep));
	CHECK(rapt_ep_connect(ep, (struct sockaddr *)&sin, port, NULL, 0,
			      20000000));
	CHECK(cli_next(evd, CLI_BLOCK, now_us() + 20000000, &ev));
	CHECK(ev.type == RAPT_EV_ESTABLISHED ? 0 : RAPT_EPROTO);
	for (i = 0; i < nmsgs; i++)
		CHECK(cli_round(cl, ep, evd, &mi, buf, i));
	CHECK(rapt_ep_disconnect(ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
	CHECK(cli_next(evd, CLI_BLOCK, now_us() + 20000000, &ev));
out:
	if (ep)
		rapt_ep_free(ep);
	if (lmr)
		rapt_lmr_free(lmr);
	if (evd)
		rapt_evd_free(evd);
	if (pz)
		rapt_pz_free(pz);
	if (ia && ia != shared_ia)
		rapt_ia_close(ia);
	free(buf);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* CPU hogs and the run                                                 */
/* ------------------------------------------------------------------ */

static pid_t hog(void)
{
	pid_t pid = fork();
	volatile unsigned long n = 0;

	if (pid == 0) {
		for (;;)
			n++;
	}
	return pid;
}

static int one_round(unsigned int round)
{
	static struct client cl[MAX_CONNS];
	pthread_t st;
	uint64_t t0 = now_us();
	unsigned int i;
	int ret = srv_open();

	if (ret)
		return ret;
	if (env_u("RAPT_STRESS_SHARED_IA", 0) &&
	    rapt_ia_open("tcp:lo", &shared_ia))
		return 1;
	pthread_create(&st, NULL, srv_thread, NULL);
	for (i = 0; i < nconns; i++) {
		cl[i].id = i;
		cl[i].mode = (enum cli_mode)(i % CLI_NMODES);
		pthread_create(&cl[i].th, NULL, cli_thread, &cl[i]);
	}
	for (i = 0; i < nconns; i++)
		pthread_join(cl[i].th, NULL);
	atomic_store(&srv.stop, true);
	pthread_join(st, NULL);
	if (shared_ia)
		rapt_ia_close(shared_ia);
	shared_ia = NULL;
	srv_close();
	printf("round %u: %u connections x %u messages, %u hogs, server mode %u x %u EVDs: max round trip %u us, %d failures, %.1f s\n",
	       round, nconns, nmsgs, nhogs, srv_mode, srv_nevds,
	       atomic_load(&max_rtt_us),
	       atomic_load(&failures), (double)(now_us() - t0) / 1e6);
	fflush(stdout);
	return atomic_load(&failures) ? 1 : 0;
}

int main(void)
{
	pid_t hogs[64];
	unsigned int i, rounds;
	int ret = 0;

	signal(SIGPIPE, SIG_IGN);
	nconns = env_u("RAPT_STRESS_CONNS", 8);
	nmsgs = env_u("RAPT_STRESS_MSGS", 200);
	nhogs = env_u("RAPT_STRESS_HOGS", 1);
	bound_ms = env_u("RAPT_STRESS_BOUND_MS", 3000);
	rounds = env_u("RAPT_STRESS_ROUNDS", 1);
	srv_mode = env_u("RAPT_STRESS_SERVER", 0) % 3;
	srv_nevds = srv_mode ? env_u("RAPT_STRESS_SRV_EVDS", 1) : 1;
	if (srv_nevds > MAX_EVDS)
		srv_nevds = MAX_EVDS;
	if (nconns > MAX_CONNS)
		nconns = MAX_CONNS;
	if (nhogs > 64)
		nhogs = 64;
	for (i = 0; i < nhogs; i++)
		hogs[i] = hog();
	for (i = 0; i < rounds && !ret; i++)
		ret = one_round(i);
	for (i = 0; i < nhogs; i++) {
		kill(hogs[i], SIGKILL);
		waitpid(hogs[i], NULL, 0);
	}
	return ret;
}
