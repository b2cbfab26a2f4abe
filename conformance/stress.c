/* SPDX-License-Identifier: MIT */
/*
 * Area "stress": threads posting and polling on shared EVDs, one EP and
 * several, software events between many threads, and connect/disconnect
 * cycles that must leave no object and no file descriptor behind.
 *
 * Cycles: 100 by default, 1000 with --long, or --cycles N.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"

#define NTHREADS 4
#define MAX_EPS 4

/* ---- several threads posting on one EP, two polling ----------------- */

struct post_arg {
	struct conf_ctx *c;
	struct conf_ep_set *s;
	struct rapt_ep *ep;
	unsigned int t;
	unsigned int n;
	uint8_t *slots;		/* n 8-byte messages of this thread */
};

static void *poster(void *arg)
{
	struct post_arg *a = arg;
	struct conf_ctx *c = a->c;
	struct rapt_sge sge;
	uint64_t v;
	unsigned int i;
	int rc;

	for (i = 0; i < a->n; i++) {
		v = ((uint64_t)a->t << 32) | i;
		memcpy(a->slots + 8 * i, &v, 8);
		sge.addr = (uintptr_t)(a->slots + 8 * i);
		sge.length = 8;
		sge.lkey = a->s->mi.lkey;
		while ((rc = rapt_ep_post_send(a->ep, &sge, 1, v, 0)) ==
		       RAPT_ENOSPC)
			usleep(20);
		if (!EXPECT_OK(rc))
			break;
	}
	return NULL;
}

struct poll_arg {
	struct conf_ctx *c;
	struct rapt_evd *evd;
	atomic_uint *done;
	unsigned int total;
	atomic_uint_fast64_t *seen;	/* bitmap of (t, i) */
	unsigned int per;		/* messages per sender */
	struct rapt_ep *const *eps;	/* the EP of sender t, or NULL */
	int64_t deadline;
};

static void *poller(void *arg)
{
	struct poll_arg *a = arg;
	struct conf_ctx *c = a->c;
	struct rapt_event ev[16];
	unsigned int k, idx, t, i;
	uint64_t bit;
	int n;

	while (atomic_load(a->done) < a->total) {
		if (conf_now_us() > a->deadline) {
			FAIL("%u of %u completions after the deadline",
			     atomic_load(a->done), a->total);
			return NULL;
		}
		if (rapt_evd_wait(a->evd, 20000, 1, &ev[0], NULL))
			continue;
		n = rapt_evd_dequeue_batch(a->evd, ev + 1, 15);
		n = n < 0 ? 1 : n + 1;
		for (k = 0; k < (unsigned int)n; k++) {
			t = (unsigned int)(ev[k].u.dto.cookie >> 32);
			i = (unsigned int)ev[k].u.dto.cookie;
			if (!EXPECT_MSG(ev[k].type == RAPT_EV_DTO &&
					ev[k].u.dto.status ==
					RAPT_DTO_SUCCESS &&
					t < MAX_EPS && i < a->per,
					"unexpected completion: %s status %s cookie %#llx",
					rapt_event_name(ev[k].type),
					conf_dto_status_name(
						ev[k].u.dto.status),
					(unsigned long long)ev[k].u.dto.cookie))
				continue;
			if (a->eps)
				EXPECT_MSG(ev[k].u.dto.ep == a->eps[t],
					   "completion of sender %u names another EP",
					   t);
			idx = t * a->per + i;
			bit = 1ull << (idx % 64);
			EXPECT_MSG(!(atomic_fetch_or(&a->seen[idx / 64], bit) &
				     bit),
				   "completion %#llx delivered twice",
				   (unsigned long long)ev[k].u.dto.cookie);
			atomic_fetch_add(a->done, 1);
		}
	}
	return NULL;
}

/* Run @nsend sender threads over @eps (one EP each, or all on eps[0]) and
 * two pollers on @evd. */
static int send_storm(struct conf_ctx *c, struct conf_ep_set *s,
		      struct rapt_ep *const *eps, bool one_ep,
		      unsigned int nsend, unsigned int per)
{
	atomic_uint_fast64_t seen[(MAX_EPS * 1024 + 63) / 64];
	struct post_arg pa[MAX_EPS];
	struct poll_arg qa;
	pthread_t pt[MAX_EPS], qt[2];
	atomic_uint done;
	unsigned int i, np = 0, nq = 0;

	for (i = 0; i < CONF_ARRAY_SIZE(seen); i++)
		atomic_init(&seen[i], 0);
	atomic_init(&done, 0);
	qa = (struct poll_arg){
		.c = c, .evd = s->req_evd, .done = &done,
		.total = nsend * per, .seen = seen, .per = per,
		.eps = one_ep ? NULL : eps,
		.deadline = conf_now_us() + conf_tmo(c, 30000) * 1000LL,
	};
	for (i = 0; i < 2; i++)
		if (!pthread_create(&qt[i], NULL, poller, &qa))
			nq++;
	for (i = 0; i < nsend; i++) {
		pa[i] = (struct post_arg){
			.c = c, .s = s, .ep = eps[one_ep ? 0 : i], .t = i,
			.n = per, .slots = s->buf + 8 * per * i,
		};
		if (!pthread_create(&pt[i], NULL, poster, &pa[i]))
			np++;
	}
	for (i = 0; i < np; i++)
		pthread_join(pt[i], NULL);
	for (i = 0; i < nq; i++)
		pthread_join(qt[i], NULL);
	EXPECT_EQ(np, nsend);
	return EXPECT_EQ(atomic_load(&done), nsend * per) ? 0 : -1;
}

#define STORM_MAX (1024 * NTHREADS)	/* messages, all senders */

/* EVDs that hold every completion of a storm: nothing is lost to an
 * overflow while the pollers fall behind. */
static unsigned int storm_qlen(struct conf_ctx *c)
{
	unsigned int q = STORM_MAX + 64;

	return c->attr.max_evd_qlen && q > c->attr.max_evd_qlen ?
	       c->attr.max_evd_qlen : q;
}

/* How many messages each sender sends: what the receiver can hold (its
 * receive queue and its EVD's), and what our EVD can. */
static unsigned int storm_per(struct conf_ctx *c, uint64_t peer_depth,
			      unsigned int nsend)
{
	unsigned int per = c->params.flags & CONF_P_LONG ? 1024 : 64;
	uint64_t cap = storm_qlen(c) - 64;

	if (peer_depth < cap)
		cap = peer_depth;
	if ((uint64_t)per * nsend > cap)
		per = (unsigned int)(cap / nsend);
	return per;
}

static void one_ep_active(struct conf_ctx *c)
{
	struct conf_set_opts o = {
		.buf_len = 8 * 1024 * NTHREADS, .qlen = storm_qlen(c),
	};
	struct conf_ep_set s;
	uint64_t depth;
	unsigned int per;

	TRY(conf_pair_active(c, &s, &o, 0, 0));
	TRY(conf_recv_u64(c, "depth", &depth));
	per = storm_per(c, depth, NTHREADS);
	TRY(conf_send_u64(c, "per", per));
	TRY(conf_barrier(c, "posted"));
	TRY(send_storm(c, &s, &s.ep, true, NTHREADS, per));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* Receive @total messages of @nsend senders on the shared recv EVD and
 * check each sender's are in order; @eps maps EPs to senders. */
static void storm_recv(struct conf_ctx *c, struct conf_ep_set *s,
		       struct rapt_ep *const *eps, unsigned int neps,
		       unsigned int nsend, unsigned int per)
{
	uint32_t next[MAX_EPS] = { 0 };
	struct rapt_event ev;
	unsigned int k, e, t, i;
	uint64_t v;

	for (k = 0; k < nsend * per; k++) {
		REQUIRE_DTO(s->recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, ~0ULL,
			    &ev);
		memcpy(&v, s->buf + 8 * ev.u.dto.cookie, 8);
		t = (unsigned int)(v >> 32);
		i = (unsigned int)v;
		for (e = 0; e < neps && eps[e] != ev.u.dto.ep; e++)
			;
		REQUIRE_MSG(e < neps && t < nsend,
			    "message %#llx on an unknown EP or sender",
			    (unsigned long long)v);
		if (neps > 1)
			EXPECT_MSG(t == e, "sender %u's message on EP %u", t,
				   e);
		REQUIRE_MSG(i == next[t],
			    "sender %u: message %u arrived where %u was due",
			    t, i, next[t]);
		next[t]++;
	}
out:
	return;
}

static void one_ep_passive(struct conf_ctx *c)
{
	uint32_t depth = c->attr.max_recv_depth < 1024 * NTHREADS ?
			 c->attr.max_recv_depth : 1024 * NTHREADS;
	struct rapt_ep_attr a = { .max_recv = depth };
	struct conf_set_opts o = {
		.attr = &a, .buf_len = 8 * 1024 * NTHREADS,
		.qlen = storm_qlen(c),
	};
	struct conf_ep_set s;
	uint64_t per;

	if (depth > storm_qlen(c) - 64)
		depth = storm_qlen(c) - 64;
	TRY(conf_pair_passive(c, &s, &o, 0, 0));
	TRY(conf_send_u64(c, "depth", depth));
	TRY(conf_recv_u64(c, "per", &per));
	TRY(conf_post_recvs(c, &s, 0, NTHREADS * (unsigned int)per, 8));
	TRY(conf_barrier(c, "posted"));
	storm_recv(c, &s, &s.ep, 1, NTHREADS, (unsigned int)per);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* ---- several EPs on shared EVDs ------------------------------------- */

static void many_active(struct conf_ctx *c)
{
	struct conf_set_opts o = {
		.buf_len = 8 * 1024 * MAX_EPS, .qlen = storm_qlen(c),
	};
	struct sockaddr_storage addr;
	struct rapt_ep *eps[MAX_EPS];
	struct conf_ep_set s;
	uint64_t sid, depth;
	unsigned int i, per;

	TRY(conf_set_create(c, &s, &o));
	TRY(conf_lookup(c, &addr, &sid));
	for (i = 0; i < MAX_EPS; i++) {
		TRY(conf_set_ep(c, &s, NULL, &eps[i]));
		s.ep = eps[i];
		TRY(conf_connect(c, &s, &addr, sid, &i, sizeof(i), NULL));
	}
	TRY(conf_recv_u64(c, "depth", &depth));
	per = storm_per(c, depth * MAX_EPS, MAX_EPS);
	TRY(conf_send_u64(c, "per", per));
	TRY(conf_barrier(c, "posted"));
	TRY(send_storm(c, &s, eps, false, MAX_EPS, per));
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void many_passive(struct conf_ctx *c)
{
	uint32_t depth = c->attr.max_recv_depth < 1024 ?
			 c->attr.max_recv_depth : 1024;
	struct rapt_ep_attr a = { .max_recv = depth };
	struct conf_set_opts o = {
		.buf_len = 8 * 1024 * MAX_EPS, .qlen = storm_qlen(c),
	};
	struct rapt_ep *eps[MAX_EPS];
	struct conf_listener l;
	struct rapt_cr_info ci;
	struct conf_ep_set s;
	struct rapt_sge sge;
	struct rapt_cr *cr;
	unsigned int i, k, idx;
	uint64_t per;

	/* Every EP's receives complete on the one shared EVD. */
	if (depth > (storm_qlen(c) - 64) / MAX_EPS)
		depth = (storm_qlen(c) - 64) / MAX_EPS;
	a.max_recv = depth;
	TRY(conf_set_create(c, &s, &o));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	for (i = 0; i < MAX_EPS; i++) {
		TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, &ci));
		REQUIRE(ci.pdata_len == sizeof(idx) && ci.pdata);
		memcpy(&idx, ci.pdata, sizeof(idx));
		REQUIRE(idx == i);
		TRY(conf_set_ep(c, &s, &a, &eps[i]));
		s.ep = eps[i];
		TRY(conf_accept(c, cr, &s, NULL, 0));
	}
	TRY(conf_send_u64(c, "depth", depth));
	TRY(conf_recv_u64(c, "per", &per));
	/* Message k of EP i lands at slot i * per + k. */
	for (i = 0; i < MAX_EPS; i++)
		for (k = 0; k < per; k++) {
			sge.addr = (uintptr_t)(s.buf + 8 * (i * per + k));
			sge.length = 8;
			sge.lkey = s.mi.lkey;
			REQUIRE_OK(rapt_ep_post_recv(eps[i], &sge, 1,
						     i * per + k));
		}
	TRY(conf_barrier(c, "posted"));
	storm_recv(c, &s, eps, MAX_EPS, MAX_EPS, (unsigned int)per);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* ---- software events between many threads --------------------------- */

#define SW_PER 2500

struct sw_arg {
	struct conf_ctx *c;
	struct rapt_evd *evd;
	unsigned int t;
	atomic_uint *taken;
	atomic_uchar *seen;
};

static void *sw_produce(void *arg)
{
	struct sw_arg *a = arg;
	uintptr_t v;
	unsigned int i;

	for (i = 0; i < SW_PER; i++) {
		v = (uintptr_t)a->t * SW_PER + i + 1;
		while (rapt_evd_post_software(a->evd, (void *)v) ==
		       RAPT_EOVERFLOW)
			sched_yield();
	}
	return NULL;
}

static void *sw_consume(void *arg)
{
	struct sw_arg *a = arg;
	struct conf_ctx *c = a->c;
	int64_t end = conf_now_us() + conf_tmo(c, 30000) * 1000LL;
	struct rapt_event ev;
	uintptr_t v;
	int rc;

	while (atomic_load(a->taken) < NTHREADS * SW_PER) {
		if (conf_now_us() > end) {
			FAIL("software events: %u of %u taken by the deadline",
			     atomic_load(a->taken), NTHREADS * SW_PER);
			return NULL;
		}
		rc = rapt_evd_wait(a->evd, 20000, 1, &ev, NULL);
		if (rc == RAPT_ETIMEDOUT)
			continue;
		if (!EXPECT_OK(rc))
			return NULL;
		v = (uintptr_t)ev.u.sw.pointer;
		if (EXPECT_MSG(v >= 1 && v <= NTHREADS * SW_PER,
			       "software event %#lx was never posted",
			       (unsigned long)v))
			EXPECT_MSG(atomic_fetch_add(&a->seen[v - 1], 1) == 0,
				   "software event %lu taken twice",
				   (unsigned long)v);
		atomic_fetch_add(a->taken, 1);
	}
	return NULL;
}

static void t_evd_threads(struct conf_ctx *c)
{
	struct sw_arg pa[NTHREADS], ca[NTHREADS];
	pthread_t pt[NTHREADS], ct[NTHREADS];
	unsigned int i, np = 0, nc = 0;
	struct rapt_evd *evd;
	atomic_uchar *seen;
	atomic_uint taken;

	seen = conf_alloc(c, NTHREADS * SW_PER);
	REQUIRE(seen);
	atomic_init(&taken, 0);
	REQUIRE_OK(conf_evd_create(c, 64, RAPT_EVD_SOFTWARE, &evd));
	for (i = 0; i < NTHREADS; i++) {
		ca[i] = (struct sw_arg){ c, evd, i, &taken, seen };
		if (!pthread_create(&ct[i], NULL, sw_consume, &ca[i]))
			nc++;
	}
	for (i = 0; i < NTHREADS; i++) {
		pa[i] = (struct sw_arg){ c, evd, i, &taken, seen };
		if (!pthread_create(&pt[i], NULL, sw_produce, &pa[i]))
			np++;
	}
	for (i = 0; i < np; i++)
		pthread_join(pt[i], NULL);
	for (i = 0; i < nc; i++)
		pthread_join(ct[i], NULL);
	EXPECT_EQ(atomic_load(&taken), NTHREADS * SW_PER);
out:
	return;
}

/* ---- connect / disconnect cycles ------------------------------------- */

static unsigned int cycles(struct conf_ctx *c)
{
	if (c->params.cycles)
		return c->params.cycles;
	return c->params.flags & CONF_P_LONG ? 1000 : 100;
}

/*
 * The passive role counts its process's fds only in a server process: in
 * loopback mode both roles share one process and the active role's count
 * covers both (two counts at once would see each other's directory fd).
 */
static int own_fds(void)
{
	return conf_opt.mode == CONF_MODE_SERVER ? conf_open_fds() : 0;
}

static void cycles_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	unsigned int n = cycles(c), i;
	struct conf_ep_set s;
	int fds0, fds1;
	int64_t t0;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_lookup(c, &addr, &sid));
	TRY(conf_send_u64(c, "cycles", n));
	REQUIRE_OK(conf_free(c, s.ep));
	/* Warm up once: a provider may open lasting resources on first use. */
	TRY(conf_set_ep(c, &s, NULL, &s.ep));
	TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
	TRY(conf_barrier(c, "up"));
	REQUIRE_OK(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, NULL);
	REQUIRE_OK(conf_free(c, s.ep));
	TRY(conf_barrier(c, "warm"));
	fds0 = conf_open_fds();
	t0 = conf_now_us();
	for (i = 0; i < n; i++) {
		TRY(conf_set_ep(c, &s, NULL, &s.ep));
		TRY(conf_connect(c, &s, &addr, sid, NULL, 0, NULL));
		/* Both sides up (rtr/active_closes_at_once covers closing
		 * at once). */
		TRY(conf_barrier(c, "up"));
		REQUIRE_OK(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, NULL,
					      0));
		REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, NULL);
		REQUIRE_OK(conf_free(c, s.ep));
	}
	conf_note(c, "%u cycles, %.1f us each", n,
		  (double)(conf_now_us() - t0) / n);
	TRY(conf_barrier(c, "cycled"));
	fds1 = conf_open_fds();
	EXPECT_MSG(fds1 <= fds0,
		   "%u connect/disconnect cycles leaked %d file descriptors",
		   n, fds1 - fds0);
	EXPECT_EMPTY(s.conn_evd, 0);
	EXPECT_EMPTY(s.recv_evd, 0);
	EXPECT_EMPTY(s.req_evd, 0);
out:
	return;
}

static void cycles_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct rapt_psp_info pi;
	struct conf_ep_set s;
	struct rapt_cr *cr;
	uint64_t n, i;
	int fds0 = 0, fds1;

	TRY(conf_set_create(c, &s, NULL));
	REQUIRE_OK(conf_free(c, s.ep));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_recv_u64(c, "cycles", &n));
	for (i = 0; i <= n; i++) {
		if (i == 1) {
			TRY(conf_barrier(c, "warm"));
			fds0 = own_fds();
		}
		TRY(conf_set_ep(c, &s, NULL, &s.ep));
		TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
		TRY(conf_accept(c, cr, &s, NULL, 0));
		TRY(conf_barrier(c, "up"));
		REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, NULL);
		REQUIRE_OK(conf_free(c, s.ep));
	}
	if (n == 0) {
		TRY(conf_barrier(c, "warm"));
		fds0 = own_fds();
	}
	TRY(conf_barrier(c, "cycled"));
	fds1 = own_fds();
	EXPECT_MSG(fds1 <= fds0,
		   "%llu connect/disconnect cycles leaked %d file descriptors",
		   (unsigned long long)n, fds1 - fds0);
	REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
	EXPECT_EQU(pi.accepted, n + 1);
	EXPECT_EQ(pi.pending_crs, 0);
	EXPECT_EQ(pi.in_handshake, 0);
	EXPECT_EMPTY(s.conn_evd, 0);
	EXPECT_EMPTY(l.cr_evd, 0);
out:
	return;
}

static const struct conf_test stress_tests[] = {
	{ "threads_one_ep", "4 threads post sends on one EP, 2 threads poll its EVD: each completion once, each sender in order",
	  one_ep_active, one_ep_passive },
	{ "shared_evds", "4 EPs on shared EVDs, a thread each: completions name the right EP, order per EP",
	  many_active, many_passive },
	{ "evd_threads", "4 producer and 4 waiter threads on one EVD: every software event taken once",
	  t_evd_threads, NULL },
	{ "connect_cycles", "100 connect/disconnect cycles (1000 with --long) leak no object and no fd",
	  cycles_active, cycles_passive },
};

CONF_SUITE(conf_suite_stress, "stress", "threads and cycles", stress_tests);
