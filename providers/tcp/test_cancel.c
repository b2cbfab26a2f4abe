/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: thread cancellation.  Only rapt_evd_wait()'s sleep may
 * act on a cancellation (rapt(7), "THREADING").  A thread that runs a
 * busy-polled ping-pong over a connected pair ("tcp:lo", tests/pair.h)
 * is cancelled (pthread_cancel(), deferred): it must end at its own
 * pthread_testcancel(), between rounds, never inside a rapt call, where
 * the provider's locks (the EP's, the EVD's, the engine's run lock in a
 * pass its polling drives) would stay held.  Then the pair must still
 * work from another thread.
 *
 * With glibc's send() and recv() in the provider, each cancellation acts
 * in the first of them after it is requested, inside
 * rapt_ep_post_send() or rapt_evd_dequeue(): the provider makes its
 * system calls through rapt_sys_*() (<rapt/provider_util.h>) for this.
 *
 * ThreadSanitizer builds make those calls through glibc
 * (<rapt/provider_util.h>, RAPT_SYS_LIBC, says why): the program skips
 * there.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include <rapt/provider_util.h>	/* RAPT_SYS_LIBC */
#include <rapt/rapt.h>

#include "tests/pair.h"
#include "tests/scenario.h"

#define CX_MSG		8		/* bytes each way */
#define CX_EVERY	64		/* rounds between the thread's own
					 * cancellation points */
#define CX_CANCELS	6		/* threads started and cancelled */
#define CX_WAIT_S	60		/* for rounds or a completion */

struct cx {
	struct conn *c;
	atomic_uint_fast64_t rounds;	/* round trips done */
	atomic_int in_rapt;		/* inside a round's rapt calls */
	int cancelled_in_rapt;		/* in_rapt when cancelled */
	atomic_int err;
};

static uint64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

/* Busy-poll @s's EVD for the completion of @op with @cookie. */
static int spin(struct side *s, uint32_t op, uint64_t cookie)
{
	uint64_t end = now_s() + CX_WAIT_S;
	struct rapt_event ev;
	int ret;

	while ((ret = rapt_evd_dequeue(s->evd, &ev)) == RAPT_EAGAIN)
		if (now_s() > end)
			return -1;
	return ret || ev.type != RAPT_EV_DTO || ev.u.dto.op != op ||
	       ev.u.dto.status != RAPT_DTO_SUCCESS ||
	       ev.u.dto.cookie != cookie ? -1 : 0;
}

/* One round trip of CX_MSG bytes, both sides polled by this thread. */
static int cx_round(struct conn *c, uint64_t i)
{
	struct rapt_sge a_out = sge(&c->a, 0, CX_MSG),
			a_in = sge(&c->a, CX_MSG, CX_MSG),
			p_in = sge(&c->p, 0, CX_MSG),
			p_out = sge(&c->p, CX_MSG, CX_MSG);

	memcpy(c->a.mem, &i, sizeof(i));
	if (rapt_ep_post_recv(c->p.ep, &p_in, 1, i) ||
	    rapt_ep_post_recv(c->a.ep, &a_in, 1, i) ||
	    rapt_ep_post_send(c->a.ep, &a_out, 1, i, 0) ||
	    spin(&c->a, RAPT_OP_SEND, i) || spin(&c->p, RAPT_OP_RECV, i))
		return -1;
	memcpy(c->p.mem + CX_MSG, c->p.mem, CX_MSG);
	if (rapt_ep_post_send(c->p.ep, &p_out, 1, i, 0) ||
	    spin(&c->p, RAPT_OP_SEND, i) || spin(&c->a, RAPT_OP_RECV, i))
		return -1;
	return memcmp(c->a.mem + CX_MSG, &i, sizeof(i)) ? -1 : 0;
}

static void cx_cleanup(void *arg)
{
	struct cx *x = arg;

	x->cancelled_in_rapt = atomic_load(&x->in_rapt);
}

/* Round trips until cancelled; a cancellation point every CX_EVERY. */
static void *cx_main(void *arg)
{
	struct cx *x = arg;
	uint64_t i;

	pthread_cleanup_push(cx_cleanup, x);
	for (i = 0;; i++) {
		atomic_store(&x->in_rapt, 1);
		if (cx_round(x->c, i)) {
			atomic_store(&x->err, 1);
			atomic_store(&x->in_rapt, 0);
			break;
		}
		atomic_store(&x->in_rapt, 0);
		atomic_store(&x->rounds, i + 1);
		if (i % CX_EVERY == CX_EVERY - 1)
			pthread_testcancel();
	}
	pthread_cleanup_pop(0);
	return NULL;
}

/* Start a thread, let it run @rounds round trips, cancel it. */
static int cx_cancel_one(struct conn *c, uint64_t rounds)
{
	struct cx x = { .c = c };
	uint64_t end = now_s() + CX_WAIT_S;
	pthread_t t;
	void *res;

	T(!pthread_create(&t, NULL, cx_main, &x));
	while (atomic_load(&x.rounds) < rounds && !atomic_load(&x.err) &&
	       now_s() <= end)
		sched_yield();
	T(!pthread_cancel(t));
	T(!pthread_join(t, &res));
	if (x.cancelled_in_rapt) {
		/* The provider's locks may be held: nothing can be freed. */
		fprintf(stderr, "cancelled inside a rapt call after %llu "
			"round trips\n",
			(unsigned long long)atomic_load(&x.rounds));
		fflush(stderr);
		_exit(1);
	}
	T(!atomic_load(&x.err));
	T(atomic_load(&x.rounds) >= rounds);
	T(res == PTHREAD_CANCELED);
	return 0;
}

static int run_cancel(void)
{
	struct conn c;
	unsigned int k;

	if (conn_open(&c, 2 * CX_MSG, 2 * CX_MSG, RAPT_MEM_LOCAL_WRITE, NULL,
		      NULL))
		return -1;
	/* The first waits long enough for the EPs to be parked (the EVDs
	 * spin), so the later ones cancel a loop that drives the engine. */
	for (k = 0; k < CX_CANCELS; k++)
		if (cx_cancel_one(&c, k ? 37 * k : 2000))
			return -1;
	/* Nothing stayed locked: the pair works from this thread. */
	T(!cx_round(&c, UINT32_MAX));
	return conn_close(&c);
}

static void cu_run_cancel(void)
{
	CU_ASSERT_EQUAL(run_cancel(), 0);
}

int main(void)
{
	unsigned int fails;
	CU_pSuite s;

#ifdef RAPT_SYS_LIBC
	fprintf(stderr, "ThreadSanitizer build: rapt_sys_*() are glibc's "
		"functions, cancellation points (<rapt/provider_util.h>); "
		"skipping\n");
	return 77;
#endif
	if (!lo_available())
		return 77;
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("tcp_cancel", NULL, NULL);
	CU_add_test(s, "a busy-polling thread is cancelled between rapt calls, "
		    "never inside one", cu_run_cancel);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
