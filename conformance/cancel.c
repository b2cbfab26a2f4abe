/* SPDX-License-Identifier: MIT */
/*
 * Area "cancel": only rapt_evd_wait()'s sleep may act on a thread's
 * cancellation (rapt(7), THREADING).  A thread that works through rapt
 * calls is cancelled (pthread_cancel(), deferred) again and again while
 * it works: it must end at its own pthread_testcancel() between rounds,
 * never inside a rapt call, and what it used must still work from another
 * thread afterwards.  The work is the data path of a connected pair,
 * busy-polled ("dto"), or control calls: registrations, EVDs and EPs made
 * and freed, and a connection made and torn down ("control").
 *
 * A provider whose calls reach a cancellation point fails here: a
 * cancelled thread then ends inside the call, with the provider's locks
 * held (the verbs providers' libibverbs and librdmacm calls are write()s,
 * ioctl()s and read()s, which librapt and the providers hold cancellation
 * off around).
 *
 * One-process tests: both ends of the connection are EPs of the active
 * role's IA (conf_self_connect()).  The cancelled thread records its
 * failures in its own struct and never calls the check macros (nor stdio):
 * the main thread reports.
 *
 * ThreadSanitizer builds make the system calls through glibc's wrappers,
 * which are cancellation points (<rapt/provider_util.h>, RAPT_SYS_LIBC):
 * the area skips there.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf.h"

#if defined(__SANITIZE_THREAD__)
#define CX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CX_TSAN 1
#endif
#endif

#define CX_CANCELS	6	/* threads started and cancelled */
#define CX_EVERY	4	/* rounds between the thread's own
				 * cancellation points */
#define CX_MSG		8	/* bytes each way (dto) */
#define CX_MEM		4096	/* bytes registered (control) */

struct cx;
typedef int cx_round_fn(struct cx *x, uint64_t i);

/* What the cancelled thread works with, and what it leaves behind. */
struct cx {
	struct conf_ctx *c;		/* read only in the thread */
	struct conf_ep_set a, b;	/* dto: the pair; control: EVDs */
	struct conf_listener l;
	uint8_t *mem;			/* control: what it registers */
	cx_round_fn *round;
	int wait_ms;			/* for one event */
	atomic_uint_fast64_t rounds;	/* rounds done */
	atomic_int in_rapt;		/* inside a round's rapt calls */
	const char *_Atomic at;		/* the rapt call it is in or after */
	int ended_in_rapt;		/* in_rapt when the thread ended */
	const char *ended_at;		/* at, then */
	atomic_int failed;
	char why[160];			/* the first failure */
};

/* Name the rapt call the thread goes into (for the report). */
#define CX_AT(x, call) atomic_store(&(x)->at, (call))

static uint64_t cx_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Record the thread's first failure (no stdio: a cancellation point). */
static int cx_fail(struct cx *x, const char *what, int rc)
{
	if (!atomic_exchange(&x->failed, 1))
		snprintf(x->why, sizeof(x->why), "%s: %s", what,
			 rapt_err_name(rc));
	return -1;
}

/* Busy-poll @evd for one event of @type (for a DTO: @op, success,
 * @cookie); RAPT_ETIMEDOUT after x->wait_ms. */
static int cx_spin(struct cx *x, struct rapt_evd *evd, uint32_t type,
		   uint32_t op, uint64_t cookie, const char *what)
{
	uint64_t end = cx_now_ms() + (uint64_t)x->wait_ms;
	struct rapt_event ev;
	int rc;

	CX_AT(x, "rapt_evd_dequeue");
	while ((rc = rapt_evd_dequeue(evd, &ev)) == RAPT_EAGAIN)
		if (cx_now_ms() > end)
			return cx_fail(x, what, RAPT_ETIMEDOUT);
	if (rc)
		return cx_fail(x, what, rc);
	if (ev.type != type)
		return cx_fail(x, what, RAPT_EPROTO);
	if (type == RAPT_EV_DTO &&
	    (ev.u.dto.op != op || ev.u.dto.status != RAPT_DTO_SUCCESS ||
	     ev.u.dto.cookie != cookie))
		return cx_fail(x, what, RAPT_EPROTO);
	return 0;
}

static int cx_post_recv(struct cx *x, struct conf_ep_set *s, uint64_t i)
{
	struct rapt_sge sge = { .addr = (uintptr_t)s->buf,
				.length = CX_MSG, .lkey = s->mi.lkey };
	int rc;

	CX_AT(x, "rapt_ep_post_recv");
	rc = rapt_ep_post_recv(s->ep, &sge, 1, i);
	return rc ? cx_fail(x, "rapt_ep_post_recv", rc) : 0;
}

static int cx_post_send(struct cx *x, struct conf_ep_set *s, uint64_t i)
{
	struct rapt_sge sge = { .addr = (uintptr_t)s->buf + CX_MSG,
				.length = CX_MSG, .lkey = s->mi.lkey };
	int rc;

	memcpy(s->buf + CX_MSG, &i, sizeof(i));
	CX_AT(x, "rapt_ep_post_send");
	rc = rapt_ep_post_send(s->ep, &sge, 1, i, 0);
	return rc ? cx_fail(x, "rapt_ep_post_send", rc) : 0;
}

/* A round trip of CX_MSG bytes, a to b and back, both busy-polled; every
 * work request of the round completes within it. */
static int dto_round(struct cx *x, uint64_t i)
{
	uint64_t got;

	if (cx_post_recv(x, &x->a, i) || cx_post_recv(x, &x->b, i) ||
	    cx_post_send(x, &x->a, i) ||
	    cx_spin(x, x->b.recv_evd, RAPT_EV_DTO, RAPT_OP_RECV, i,
		    "b's receive") ||
	    cx_post_send(x, &x->b, i) ||
	    cx_spin(x, x->a.recv_evd, RAPT_EV_DTO, RAPT_OP_RECV, i,
		    "a's receive") ||
	    cx_spin(x, x->a.req_evd, RAPT_EV_DTO, RAPT_OP_SEND, i,
		    "a's send") ||
	    cx_spin(x, x->b.req_evd, RAPT_EV_DTO, RAPT_OP_SEND, i,
		    "b's send"))
		return -1;
	memcpy(&got, x->a.buf, sizeof(got));
	return got == i ? 0 : cx_fail(x, "the reply's bytes", RAPT_EPROTO);
}

/* The connection event @type on both sets' EVDs, the connecting side's
 * first. */
static int cx_both(struct cx *x, uint32_t type, const char *what)
{
	return cx_spin(x, x->a.conn_evd, type, 0, 0, what) ||
	       cx_spin(x, x->b.conn_evd, type, 0, 0, what) ? -1 : 0;
}

/* EP @e (on set a's EVDs) connects to the listener, @f (set b's) accepts; both
 * come up, @e disconnects, both go down. */
static int cx_connection(struct cx *x, struct rapt_ep *e, struct rapt_ep *f)
{
	struct conf_ctx *c = x->c;
	uint64_t end = cx_now_ms() + (uint64_t)x->wait_ms;
	struct rapt_event ev;
	int rc;

	CX_AT(x, "rapt_ep_connect");
	rc = rapt_ep_connect(e, (const struct sockaddr *)&c->attr.local_addr,
			     x->l.sid, NULL, 0,
			     (int64_t)x->wait_ms * 1000);
	if (rc)
		return cx_fail(x, "rapt_ep_connect", rc);
	CX_AT(x, "rapt_evd_dequeue");
	while ((rc = rapt_evd_dequeue(x->l.cr_evd, &ev)) == RAPT_EAGAIN)
		if (cx_now_ms() > end)
			return cx_fail(x, "the CR", RAPT_ETIMEDOUT);
	if (rc || ev.type != RAPT_EV_CR_ARRIVAL)
		return cx_fail(x, "the CR", rc ? rc : RAPT_EPROTO);
	CX_AT(x, "rapt_cr_accept");
	rc = rapt_cr_accept(ev.u.cr.cr, f, NULL, 0);
	if (rc)
		return cx_fail(x, "rapt_cr_accept", rc);
	if (cx_both(x, RAPT_EV_ESTABLISHED, "ESTABLISHED"))
		return -1;
	CX_AT(x, "rapt_ep_disconnect");
	rc = rapt_ep_disconnect(e, RAPT_CLOSE_GRACEFUL, NULL, 0);
	if (rc)
		return cx_fail(x, "rapt_ep_disconnect", rc);
	return cx_both(x, RAPT_EV_DISCONNECTED, "DISCONNECTED");
}

/* Control calls: a registration, an EVD and two EPs made and freed; every
 * other round the two EPs make a connection to each other first. */
static int control_round(struct cx *x, uint64_t i)
{
	struct conf_ctx *c = x->c;
	struct rapt_ep *e = NULL, *f = NULL;
	struct rapt_lmr *lmr;
	struct rapt_evd *evd;
	int rc, ret = -1;

	CX_AT(x, "rapt_lmr_create");
	rc = rapt_lmr_create(c->pz, x->mem, CX_MEM, RAPT_MEM_LOCAL_WRITE,
			     &lmr, NULL);
	if (rc)
		return cx_fail(x, "rapt_lmr_create", rc);
	CX_AT(x, "rapt_lmr_free");
	rc = rapt_lmr_free(lmr);
	if (rc)
		return cx_fail(x, "rapt_lmr_free", rc);
	CX_AT(x, "rapt_evd_create");
	rc = rapt_evd_create(c->ia, 8, RAPT_EVD_DTO, &evd);
	if (rc)
		return cx_fail(x, "rapt_evd_create", rc);
	CX_AT(x, "rapt_evd_free");
	rc = rapt_evd_free(evd);
	if (rc)
		return cx_fail(x, "rapt_evd_free", rc);
	CX_AT(x, "rapt_ep_create");
	rc = rapt_ep_create(c->pz, x->a.recv_evd, x->a.req_evd,
			    x->a.conn_evd, NULL, &e);
	if (rc)
		return cx_fail(x, "rapt_ep_create", rc);
	CX_AT(x, "rapt_ep_create");
	rc = rapt_ep_create(c->pz, x->b.recv_evd, x->b.req_evd,
			    x->b.conn_evd, NULL, &f);
	if (rc) {
		cx_fail(x, "rapt_ep_create", rc);
		goto out;
	}
	if (i % 2 == 0 && cx_connection(x, e, f))
		goto out;
	ret = 0;
out:
	CX_AT(x, "rapt_ep_free");
	if (f && (rc = rapt_ep_free(f)) != 0)
		ret = cx_fail(x, "rapt_ep_free", rc);
	if ((rc = rapt_ep_free(e)) != 0)
		ret = cx_fail(x, "rapt_ep_free", rc);
	return ret;
}

static void cx_cleanup(void *arg)
{
	struct cx *x = arg;

	x->ended_in_rapt = atomic_load(&x->in_rapt);
	x->ended_at = atomic_load(&x->at);
}

/* Rounds until cancelled; a cancellation point of its own every
 * CX_EVERY rounds, outside every rapt call. */
static void *cx_main(void *arg)
{
	struct cx *x = arg;
	uint64_t i;

	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, NULL);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	pthread_cleanup_push(cx_cleanup, x);
	for (i = 0;; i++) {
		atomic_store(&x->in_rapt, 1);
		if (x->round(x, i)) {
			atomic_store(&x->in_rapt, 0);
			break;
		}
		atomic_store(&x->in_rapt, 0);
		atomic_fetch_add(&x->rounds, 1);
		if (i % CX_EVERY == CX_EVERY - 1)
			pthread_testcancel();
	}
	pthread_cleanup_pop(0);
	return NULL;
}

/* Wait (polling, at most x->wait_ms per round) until @want rounds are
 * done or the thread failed. */
static void cx_await(struct cx *x, uint64_t want)
{
	struct timespec nap = { .tv_nsec = 200000 };
	uint64_t end = cx_now_ms() + (uint64_t)x->wait_ms * want;

	while (atomic_load(&x->rounds) < want && !atomic_load(&x->failed) &&
	       cx_now_ms() < end)
		nanosleep(&nap, NULL);
}

/* Join @t, or fail if it has not ended within x->wait_ms: a thread that
 * hangs on what a cancelled one left held is left behind (the role's
 * process ends with the test). */
static int cx_join(struct conf_ctx *c, struct cx *x, pthread_t t,
		   unsigned int k)
{
	struct timespec ts;
	int rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += x->wait_ms / 1000 + 1;
	rc = pthread_timedjoin_np(t, NULL, &ts);
	if (rc)
		FAIL("thread %u did not end within %d ms of its cancel "
		     "(%llu rounds): stuck inside a rapt call", k, x->wait_ms,
		     (unsigned long long)atomic_load(&x->rounds));
	return rc ? -1 : 0;
}

/*
 * CX_CANCELS threads, each cancelled once it has done a few rounds (one
 * more each time, so the request meets different points of a round).
 * Each must end outside every rapt call; then a round from this thread
 * must still work.
 */
static void cx_run(struct conf_ctx *c, struct cx *x)
{
	unsigned int k;
	pthread_t t;
	int rc;

	for (k = 0; k < CX_CANCELS && !atomic_load(&x->failed); k++) {
		atomic_store(&x->rounds, 0);
		x->ended_in_rapt = -1;
		REQUIRE_EQ(pthread_create(&t, NULL, cx_main, x), 0);
		cx_await(x, CX_EVERY + k);
		EXPECT_MSG(atomic_load(&x->rounds) >= CX_EVERY + k ||
			   atomic_load(&x->failed),
			   "thread %u: %llu rounds in %d ms each", k,
			   (unsigned long long)atomic_load(&x->rounds),
			   x->wait_ms);
		rc = pthread_cancel(t);
		TRY(cx_join(c, x, t, k));
		/* Ended inside a call: what it held stays held, and the next
		 * thread or round would only hang on it. */
		if (rc == 0 && !atomic_load(&x->failed))
			REQUIRE_MSG(x->ended_in_rapt == 0,
				    "thread %u was cancelled inside a rapt "
				    "call, %s or after it in its round (after "
				    "%llu rounds)", k, x->ended_at,
				    (unsigned long long)
				    atomic_load(&x->rounds));
	}
	EXPECT_MSG(!atomic_load(&x->failed), "the cancelled thread: %s",
		   x->why);
	/* Nothing of the pair or the IA stays held: a round from here. */
	REQUIRE(!atomic_load(&x->failed));
	EXPECT_MSG(x->round(x, 1000) == 0, "a round after the cancels: %s",
		   x->why);
out:
	return;
}

static bool cx_tsan_skip(struct conf_ctx *c)
{
#ifdef CX_TSAN
	conf_skip(c, "ThreadSanitizer build: rapt's system calls go through "
		  "glibc's wrappers, which are cancellation points "
		  "(RAPT_SYS_LIBC)");
	return true;
#else
	(void)c;
	return false;
#endif
}

static void cancel_dto(struct conf_ctx *c)
{
	struct cx *x = conf_alloc(c, sizeof(*x));
	struct rapt_cr *cr;

	if (cx_tsan_skip(c))
		return;
	REQUIRE(x);
	memset(x, 0, sizeof(*x));
	x->c = c;
	x->round = dto_round;
	x->wait_ms = conf_tmo(c, CONF_TMO_MS);
	TRY(conf_set_create(c, &x->a, NULL));
	TRY(conf_set_create(c, &x->b, NULL));
	TRY(conf_listen(c, &x->l, NULL));
	TRY(conf_self_connect(c, x->a.ep, x->l.sid));
	TRY(conf_get_cr(c, &x->l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	REQUIRE_OK(rapt_cr_accept(cr, x->b.ep, NULL, 0));
	conf_untrack(c, cr);
	REQUIRE_EVENT(x->a.conn_evd, RAPT_EV_ESTABLISHED, NULL);
	REQUIRE_EVENT(x->b.conn_evd, RAPT_EV_ESTABLISHED, NULL);
	cx_run(c, x);
out:
	return;
}

static void cancel_control(struct conf_ctx *c)
{
	struct cx *x = conf_alloc(c, sizeof(*x));

	if (cx_tsan_skip(c))
		return;
	REQUIRE(x);
	memset(x, 0, sizeof(*x));
	x->c = c;
	x->round = control_round;
	x->wait_ms = conf_tmo(c, CONF_TMO_MS);
	x->mem = conf_alloc(c, CX_MEM);
	REQUIRE(x->mem);
	/* The sets' EVDs take the EPs' events; their own EPs stay idle. */
	TRY(conf_set_create(c, &x->a, NULL));
	TRY(conf_set_create(c, &x->b, NULL));
	TRY(conf_listen(c, &x->l, NULL));
	cx_run(c, x);
	EXPECT_EMPTY(x->a.conn_evd, 0);
	EXPECT_EMPTY(x->b.conn_evd, 0);
	EXPECT_EMPTY(x->l.cr_evd, 0);
out:
	return;
}

static const struct conf_test cancel_tests[] = {
	{ "dto", "a thread busy-polling a connected pair is cancelled only "
	  "between rapt calls; the pair works on", cancel_dto, NULL },
	{ "control", "a thread making and freeing objects and connections "
	  "is cancelled only between rapt calls; the IA works on",
	  cancel_control, NULL },
};

CONF_SUITE(conf_suite_cancel, "cancel",
	   "thread cancellation acts only between rapt calls", cancel_tests);
