/* SPDX-License-Identifier: MIT */
/*
 * The tcp provider's adaptive progress ("parking", docs/tcp-provider.md
 * section 2) through the public API over tcp:lo: connect by spinning on both
 * sides (the active handshake runs in the polling thread), ping-pong while
 * spinning so the passive EP gets parked, then block at once while data
 * arrives before or during the wait: it must still be delivered, promptly.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <rapt/rapt.h>

#define EV_US	5000000		/* generous: the machine is shared */
#define GUARD	64
#define MIB	(1u << 20)

#define T(cond)								\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: %s\n", __FILE__,	\
				__LINE__, #cond);			\
			return -1;					\
		}							\
	} while (0)
#define TOK(call)							\
	do {								\
		int t_ret_ = (call);					\
		if (t_ret_) {						\
			fprintf(stderr, "%s:%d: %s: %s (%s)\n",		\
				__FILE__, __LINE__, #call,		\
				rapt_strerror(t_ret_), rapt_last_error()); \
			return -1;					\
		}							\
	} while (0)

/* ------------------------------------------------------------------ */
/* Fixture                                                             */
/* ------------------------------------------------------------------ */

struct side {
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_evd *evd;
	struct rapt_ep *ep;
	struct rapt_lmr *lmr;
	struct rapt_lmr_info mr;
	uint8_t *buf;		/* GUARD | region | GUARD */
	uint8_t *mem;		/* the registered region */
	size_t len;
};

struct conn {
	struct side a, p;	/* active, passive */
	struct rapt_psp *psp;
};

static int side_open(struct side *s, size_t len, uint32_t access)
{
	memset(s, 0, sizeof(*s));
	TOK(rapt_ia_open("tcp:lo", &s->ia));
	TOK(rapt_pz_create(s->ia, &s->pz));
	TOK(rapt_evd_create(s->ia, 4096, RAPT_EVD_CR | RAPT_EVD_CONNECTION |
			    RAPT_EVD_DTO, &s->evd));
	s->len = len;
	s->buf = malloc(len + 2 * GUARD);
	T(s->buf);
	s->mem = s->buf + GUARD;
	memset(s->buf, 0xcc, len + 2 * GUARD);
	TOK(rapt_lmr_create(s->pz, s->mem, len, access, &s->lmr, &s->mr));
	return 0;
}

static int side_close(struct side *s)
{
	if (s->ep)
		TOK(rapt_ep_free(s->ep));
	TOK(rapt_lmr_free(s->lmr));
	TOK(rapt_evd_free(s->evd));
	TOK(rapt_pz_free(s->pz));
	TOK(rapt_ia_close(s->ia));
	free(s->buf);
	return 0;
}

static const struct sockaddr *lo_addr(void)
{
	static struct sockaddr_in sin;

	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return (const struct sockaddr *)&sin;
}

#define ACC_ALL (RAPT_MEM_LOCAL_WRITE | RAPT_MEM_REMOTE_READ | \
		 RAPT_MEM_REMOTE_WRITE)

static int conn_close(struct conn *c)
{
	TOK(rapt_psp_free(c->psp));
	if (side_close(&c->a) || side_close(&c->p))
		return -1;
	return 0;
}


static struct rapt_sge sge(const struct side *s, size_t off, size_t n)
{
	struct rapt_sge g = {
		.addr = (uintptr_t)(s->mem + off),
		.length = (uint32_t)n,
		.lkey = s->mr.lkey,
	};

	return g;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Spin (dequeue) on both sides until the connection is up. */
static int spin_connect(struct conn *c)
{
	struct rapt_psp_info pi;
	struct rapt_event ev;
	int est = 0;
	double end = now_ms() + 5000;

	memset(c, 0, sizeof(*c));
	if (side_open(&c->a, 4096, RAPT_MEM_LOCAL_WRITE) ||
	    side_open(&c->p, 4096, RAPT_MEM_LOCAL_WRITE))
		return -1;
	TOK(rapt_psp_create(c->p.ia, RAPT_SERVICE_ID_ANY, c->p.evd, NULL,
			    &c->psp));
	TOK(rapt_psp_query(c->psp, &pi, sizeof(pi)));
	TOK(rapt_ep_create(c->a.pz, c->a.evd, c->a.evd, c->a.evd, NULL,
			   &c->a.ep));
	TOK(rapt_ep_create(c->p.pz, c->p.evd, c->p.evd, c->p.evd, NULL,
			   &c->p.ep));
	TOK(rapt_ep_connect(c->a.ep, lo_addr(), pi.service_id, NULL, 0,
			    EV_US));
	while (est < 2) {
		T(now_ms() < end);
		if (!rapt_evd_dequeue(c->p.evd, &ev)) {
			if (ev.type == RAPT_EV_CR_ARRIVAL)
				TOK(rapt_cr_accept(ev.u.cr.cr, c->p.ep, NULL, 0));
			else if (ev.type == RAPT_EV_ESTABLISHED)
				est++;
			else
				T(0);
		}
		if (!rapt_evd_dequeue(c->a.evd, &ev)) {
			T(ev.type == RAPT_EV_ESTABLISHED);
			est++;
		}
	}
	return 0;
}

struct late { struct conn *c; int us; int n; };

static void *late_send(void *arg)
{
	struct late *l = arg;
	struct rapt_sge g = sge(&l->c->a, 0, 8);
	int i;

	usleep(l->us);
	for (i = 0; i < l->n; i++)
		rapt_ep_post_send(l->c->a.ep, &g, 1, 1000 + i, 0);
	return NULL;
}

/* Spin on @s until one DTO of @op; returns the ms it took. */
static int spin_dto(struct side *s, uint32_t op)
{
	struct rapt_event ev;
	double end = now_ms() + 5000;

	for (;;) {
		T(now_ms() < end);
		if (!rapt_evd_dequeue(s->evd, &ev)) {
			T(ev.type == RAPT_EV_DTO);
			if (ev.u.dto.op == op)
				return 0;
		}
	}
}

static int run(int mode)
{
	struct rapt_sge ga, gp;
	struct rapt_event ev;
	struct conn c;
	struct late l;
	pthread_t t;
	double t0, worst = 0;
	int i, k;

	if (spin_connect(&c))
		return -1;
	for (k = 0; k < 50; k++) {
		/* spin ping-pongs: the passive EP gets parked */
		for (i = 0; i < 20; i++) {
			ga = sge(&c.a, 0, 8);
			gp = sge(&c.p, 0, 64);
			TOK(rapt_ep_post_recv(c.p.ep, &gp, 1, i));
			TOK(rapt_ep_post_send(c.a.ep, &ga, 1, i, 0));
			if (spin_dto(&c.a, RAPT_OP_SEND) ||
			    spin_dto(&c.p, RAPT_OP_RECV))
				return -1;
		}
		/* then block at once; the data comes while blocked */
		gp = sge(&c.p, 0, 64);
		TOK(rapt_ep_post_recv(c.p.ep, &gp, 1, 77));
		l.c = &c; l.us = mode ? 200 * (k % 10) : 0; l.n = 1;
		t0 = now_ms();
		if (mode)
			pthread_create(&t, NULL, late_send, &l);
		else
			late_send(&l);
		TOK(rapt_evd_wait(c.p.evd, EV_US, 1, &ev, NULL));
		T(ev.type == RAPT_EV_DTO && ev.u.dto.op == RAPT_OP_RECV &&
		  ev.u.dto.cookie == 77);
		if (now_ms() - t0 - l.us / 1000.0 > worst)
			worst = now_ms() - t0 - l.us / 1000.0;
		if (mode)
			pthread_join(t, NULL);
		TOK(rapt_evd_wait(c.a.evd, EV_US, 1, &ev, NULL));
		T(ev.type == RAPT_EV_DTO && ev.u.dto.op == RAPT_OP_SEND);
	}
	printf("mode %d: worst spin->block delivery delay %.2f ms\n", mode,
	       worst);
	T(worst < 50);
	return conn_close(&c);
}

int main(void)
{
	struct rapt_ia *ia;
	int failed = 0;

	/* Skip (automake: 77) only when the tcp provider cannot open lo. */
	if (rapt_ia_open("tcp:lo", &ia)) {
		printf("SKIP: tcp:lo cannot be opened: %s\n", rapt_last_error());
		return 77;
	}
	rapt_ia_close(ia);
	failed += run(0) != 0;	/* data sent before the wait */
	failed += run(1) != 0;	/* data sent while it waits */
	printf("park: %d passed, %d failed\n", 2 - failed, failed);
	return failed ? 1 : 0;
}
