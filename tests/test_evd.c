/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the EVD engine (core/evd.c), driven through the public API
 * on the in-process "test" provider.  Provider-side pushes (the lossy path
 * that can overflow) are receives posted on a disconnected EP: the test
 * provider completes each one FLUSHED from its progress thread, in order.
 *
 * docs/evd-semantics.md is the contract these tests hold the engine to.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include <rapt/rapt.h>

#include "check_rc.h"
#include "fd_limit.h"

static struct rapt_ia *ia;
static struct rapt_ia_attr ia_attr;

/* For a status a thread returned: its detail is in that thread. */
#define CHECK_TRC(val, want)						\
	do {								\
		if ((val) != (want))					\
			printf("\n%s:%d: %s is %s, want %s\n", __FILE__, \
			       __LINE__, #val, rapt_err_name(val),	\
			       rapt_err_name(want));			\
		CU_ASSERT_EQUAL((val), (want));				\
	} while (0)

#define SKIP(why)							\
	do {								\
		printf("\n  SKIP %s: %s\n", __func__, (why));		\
		return;							\
	} while (0)

static void *ptr(uintptr_t v)
{
	return (void *)v;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static struct rapt_evd *evd_new(unsigned int qlen, unsigned int streams)
{
	struct rapt_evd *evd = NULL;

	CHECK_RC(rapt_evd_create(ia, qlen, streams, &evd), 0);
	return evd;
}

static struct rapt_evd_info evd_info(struct rapt_evd *evd)
{
	struct rapt_evd_info info;

	memset(&info, 0xff, sizeof(info));
	CHECK_RC(rapt_evd_query(evd, &info, sizeof(info)), 0);
	return info;
}

/* Wait (at most 5 s) until @n threads are blocked in rapt_evd_wait(). */
static bool wait_for_waiters(struct rapt_evd *evd, uint32_t n)
{
	int i;

	for (i = 0; i < 5000; i++) {
		if (evd_info(evd).waiters == n)
			return true;
		sleep_ms(1);
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Basic queueing                                                      */
/* ------------------------------------------------------------------ */

static void test_dequeue_empty(void)
{
	struct rapt_evd *evd = evd_new(8, RAPT_EVD_SOFTWARE);
	struct rapt_event ev[4];
	unsigned int nmore = 77;

	memset(ev, 0x5a, sizeof(ev));
	CHECK_RC(rapt_evd_dequeue(evd, &ev[0]), RAPT_EAGAIN);
	CHECK_RC(rapt_evd_dequeue_batch(evd, ev, 4), 0);
	CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev[0], &nmore), RAPT_ETIMEDOUT);
	/* Output parameters are written only on success. */
	CU_ASSERT_EQUAL(nmore, 77);
	CU_ASSERT_EQUAL(ev[0].type, 0x5a5a5a5au);
	CU_ASSERT_EQUAL(evd_info(evd).count, 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

static void test_software_fifo(void)
{
	struct rapt_evd *evd = evd_new(8, RAPT_EVD_SOFTWARE);
	struct rapt_event ev;
	uintptr_t i;

	for (i = 1; i <= 8; i++)
		CHECK_RC(rapt_evd_post_software(evd, ptr(i)), 0);
	CU_ASSERT_EQUAL(evd_info(evd).count, 8);
	for (i = 1; i <= 8; i++) {
		CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
		CU_ASSERT_EQUAL(ev.type, RAPT_EV_SOFTWARE);
		CU_ASSERT_PTR_EQUAL(ev.evd, evd);
		CU_ASSERT_PTR_EQUAL(ev.u.sw.pointer, ptr(i));
	}
	CHECK_RC(rapt_evd_dequeue(evd, &ev), RAPT_EAGAIN);
	/* Wrap around the ring a few times. */
	for (i = 1; i <= 50; i++) {
		CHECK_RC(rapt_evd_post_software(evd, ptr(i)), 0);
		CHECK_RC(rapt_evd_post_software(evd, ptr(i + 1000)), 0);
		CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
		CU_ASSERT_PTR_EQUAL(ev.u.sw.pointer, ptr(i));
		CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
		CU_ASSERT_PTR_EQUAL(ev.u.sw.pointer, ptr(i + 1000));
	}
	CHECK_RC(rapt_evd_free(evd), 0);
}

static void test_batch(void)
{
	struct rapt_evd *evd = evd_new(16, RAPT_EVD_SOFTWARE);
	struct rapt_event ev[16];
	uintptr_t i;

	for (i = 1; i <= 10; i++)
		CHECK_RC(rapt_evd_post_software(evd, ptr(i)), 0);
	CHECK_RC(rapt_evd_dequeue_batch(evd, ev, 4), 4);
	for (i = 0; i < 4; i++)
		CU_ASSERT_PTR_EQUAL(ev[i].u.sw.pointer, ptr(i + 1));
	CU_ASSERT_EQUAL(evd_info(evd).count, 6);
	CHECK_RC(rapt_evd_dequeue_batch(evd, ev, 16), 6);
	for (i = 0; i < 6; i++) {
		CU_ASSERT_PTR_EQUAL(ev[i].u.sw.pointer, ptr(i + 5));
		CU_ASSERT_PTR_EQUAL(ev[i].evd, evd);
	}
	CHECK_RC(rapt_evd_dequeue_batch(evd, ev, 16), 0);
	CHECK_RC(rapt_evd_dequeue_batch(evd, ev, 0), 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

static void test_post_software_full(void)
{
	struct rapt_evd *evd = evd_new(4, RAPT_EVD_SOFTWARE);
	struct rapt_evd_info info;
	struct rapt_event ev;
	uintptr_t i;

	for (i = 1; i <= 4; i++)
		CHECK_RC(rapt_evd_post_software(evd, ptr(i)), 0);
	CHECK_RC(rapt_evd_post_software(evd, ptr(5)), RAPT_EOVERFLOW);
	CHECK_RC(rapt_evd_post_software(evd, ptr(6)), RAPT_EOVERFLOW);
	info = evd_info(evd);
	CU_ASSERT_EQUAL(info.count, 4);
	/* The caller was told: nothing was lost, nothing is reported. */
	CU_ASSERT_EQUAL(info.overflows, 0);
	for (i = 1; i <= 4; i++) {
		CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
		CU_ASSERT_EQUAL(ev.type, RAPT_EV_SOFTWARE);
		CU_ASSERT_PTR_EQUAL(ev.u.sw.pointer, ptr(i));
	}
	CHECK_RC(rapt_evd_dequeue(evd, &ev), RAPT_EAGAIN);
	CHECK_RC(rapt_evd_post_software(evd, ptr(7)), 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

static void test_no_software_stream(void)
{
	struct rapt_evd *evd = evd_new(4, RAPT_EVD_DTO);

	CHECK_RC(rapt_evd_post_software(evd, ptr(1)), RAPT_EINVAL);
	CU_ASSERT_EQUAL(evd_info(evd).count, 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

static void test_query(void)
{
	struct rapt_evd *evd = evd_new(5, RAPT_EVD_SOFTWARE | RAPT_EVD_DTO);
	struct rapt_evd_info info;

	CHECK_RC(rapt_evd_post_software(evd, ptr(1)), 0);
	info = evd_info(evd);
	CU_ASSERT_EQUAL(info.qlen, 5);
	CU_ASSERT_EQUAL(info.streams, RAPT_EVD_SOFTWARE | RAPT_EVD_DTO);
	CU_ASSERT_EQUAL(info.count, 1);
	CU_ASSERT_EQUAL(info.waiters, 0);
	CU_ASSERT_EQUAL(info.overflows, 0);
	/* An older caller's smaller struct: only that much is written. */
	memset(&info, 0xab, sizeof(info));
	CHECK_RC(rapt_evd_query(evd, &info, 2 * sizeof(uint32_t)), 0);
	CU_ASSERT_EQUAL(info.qlen, 5);
	CU_ASSERT_EQUAL(info.streams, RAPT_EVD_SOFTWARE | RAPT_EVD_DTO);
	CU_ASSERT_EQUAL(info.count, 0xababababu);
	CU_ASSERT_EQUAL(info.overflows, 0xababababababababull);
	CHECK_RC(rapt_evd_query(evd, NULL, sizeof(info)), RAPT_EINVAL);
	CHECK_RC(rapt_evd_query(evd, &info, 0), RAPT_EINVAL);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* ------------------------------------------------------------------ */
/* Create arguments and handles                                        */
/* ------------------------------------------------------------------ */

static void test_create_args(void)
{
	struct rapt_evd *evd = NULL;

	CHECK_RC(rapt_evd_create(ia, 0, RAPT_EVD_DTO, &evd), RAPT_EINVAL);
	CHECK_RC(rapt_evd_create(ia, 4, 0, &evd), RAPT_EINVAL);
	CHECK_RC(rapt_evd_create(ia, 4, 1u << RAPT_EVD_NSTREAMS, &evd),
		 RAPT_EINVAL);
	CHECK_RC(rapt_evd_create(ia, 4, RAPT_EVD_DTO, NULL), RAPT_EINVAL);
	if (ia_attr.max_evd_qlen && ia_attr.max_evd_qlen < UINT32_MAX) {
		CHECK_RC(rapt_evd_create(ia, ia_attr.max_evd_qlen + 1,
					 RAPT_EVD_DTO, &evd), RAPT_ERANGE);
		CHECK_RC(rapt_evd_create(ia, ia_attr.max_evd_qlen,
					 RAPT_EVD_DTO, &evd), 0);
		CHECK_RC(rapt_evd_free(evd), 0);
	} else {
		printf("\n  note: IA %s has no max_evd_qlen; ERANGE not tried\n",
		       ia_attr.name);
	}
}

static void test_bad_handles(void)
{
	struct rapt_evd *evd = evd_new(4, RAPT_EVD_SOFTWARE), *stale;
	struct rapt_evd *as_evd = (struct rapt_evd *)(void *)ia;
	struct rapt_ia *as_ia = (struct rapt_ia *)(void *)evd;
	struct rapt_evd_info info;
	struct rapt_event ev;
	int fd;

	CHECK_RC(rapt_evd_dequeue(NULL, &ev), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_dequeue_batch(NULL, &ev, 1), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_wait(NULL, 0, 1, &ev, NULL), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_free(NULL), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_post_software(NULL, NULL), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_query(NULL, &info, sizeof(info)), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_arm(NULL), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_get_fd(NULL, &fd), RAPT_EBADHANDLE);

	/* Wrong type: an IA where an EVD goes, and the other way round. */
	CHECK_RC(rapt_evd_dequeue(as_evd, &ev), RAPT_EHANDLETYPE);
	CHECK_RC(rapt_evd_dequeue_batch(as_evd, &ev, 1), RAPT_EHANDLETYPE);
	CHECK_RC(rapt_evd_wait(as_evd, 0, 1, &ev, NULL), RAPT_EHANDLETYPE);
	CHECK_RC(rapt_evd_free(as_evd), RAPT_EHANDLETYPE);
	CHECK_RC(rapt_evd_post_software(as_evd, NULL), RAPT_EHANDLETYPE);
	CHECK_RC(rapt_evd_query(as_evd, &info, sizeof(info)),
		 RAPT_EHANDLETYPE);
	CHECK_RC(rapt_evd_arm(as_evd), RAPT_EHANDLETYPE);
	CHECK_RC(rapt_evd_get_fd(as_evd, &fd), RAPT_EHANDLETYPE);
	CHECK_RC(rapt_evd_create(as_ia, 4, RAPT_EVD_DTO, &stale),
		 RAPT_EHANDLETYPE);

	/* Stale: freed. */
	stale = evd;
	CHECK_RC(rapt_evd_free(evd), 0);
	CHECK_RC(rapt_evd_dequeue(stale, &ev), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_dequeue_batch(stale, &ev, 1), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_wait(stale, 0, 1, &ev, NULL), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_post_software(stale, NULL), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_query(stale, &info, sizeof(info)), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_arm(stale), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_get_fd(stale, &fd), RAPT_EBADHANDLE);
	CHECK_RC(rapt_evd_free(stale), RAPT_EBADHANDLE);

	/* Stale even after its slot is reused by a new EVD. */
	evd = evd_new(4, RAPT_EVD_SOFTWARE);
	CU_ASSERT_PTR_NOT_EQUAL(evd, stale);
	CHECK_RC(rapt_evd_post_software(stale, NULL), RAPT_EBADHANDLE);
	CU_ASSERT_EQUAL(evd_info(evd).count, 0);
	CHECK_RC(rapt_evd_free(evd), 0);

	/* A value that was never a handle. */
	CHECK_RC(rapt_evd_dequeue((struct rapt_evd *)ptr(0x4000000012345ull),
				  &ev), RAPT_EBADHANDLE);
}

static void test_async_eexist(void)
{
	struct rapt_evd *a, *b = NULL;

	a = evd_new(8, RAPT_EVD_ASYNC);
	CHECK_RC(rapt_evd_create(ia, 8, RAPT_EVD_ASYNC, &b), RAPT_EEXIST);
	CU_ASSERT_PTR_NULL(b);
	CHECK_RC(rapt_evd_free(a), 0);
	/* Freeing the async EVD makes room for a new one. */
	b = evd_new(8, RAPT_EVD_ASYNC);
	CHECK_RC(rapt_evd_free(b), 0);
}

/* Find an IA of the test provider whose evd_merge forbids a pair. */
static int find_restricted_ia(struct rapt_ia **out, uint32_t *si,
			      uint32_t *sj)
{
	struct rapt_entry *e = NULL;
	struct rapt_ia_attr a;
	struct rapt_ia *x;
	size_t n, k;
	uint32_t i, j;

	if (rapt_registry_list(&e, &n))
		return -1;
	for (k = 0; k < n; k++) {
		if (e[k].kind != RAPT_ENTRY_DEVICE || e[k].status ||
		    strcmp(e[k].provider, "test"))
			continue;
		if (rapt_ia_open(e[k].name, &x))
			continue;
		if (rapt_ia_query(x, &a, sizeof(a))) {
			rapt_ia_close(x);
			continue;
		}
		for (i = 0; i < RAPT_EVD_NSTREAMS; i++)
			for (j = 0; j < RAPT_EVD_NSTREAMS; j++)
				if (i != j && !(a.evd_merge[i] & (1u << j))) {
					*out = x;
					*si = i;
					*sj = j;
					rapt_free(e);
					return 0;
				}
		rapt_ia_close(x);
	}
	rapt_free(e);
	return -1;
}

static void test_merge_enotsup(void)
{
	struct rapt_evd *evd = NULL;
	struct rapt_ia *x;
	uint32_t i, j;

	if (find_restricted_ia(&x, &i, &j))
		SKIP("no device of the test provider restricts evd_merge");
	CHECK_RC(rapt_evd_create(x, 4, (1u << i) | (1u << j), &evd),
		 RAPT_ENOTSUP);
	CU_ASSERT_PTR_NULL(evd);
	/* Each stream on its own is always allowed. */
	CHECK_RC(rapt_evd_create(x, 4, 1u << i, &evd), 0);
	CHECK_RC(rapt_evd_free(evd), 0);
	CHECK_RC(rapt_ia_close(x), 0);
}

/* ------------------------------------------------------------------ */
/* Waiting                                                             */
/* ------------------------------------------------------------------ */

/* Long enough never to expire in a passing run; a waiter served out of
 * order then fails the test instead of hanging it. */
#define WAIT_US 5000000

struct waiter {
	pthread_t tid;
	struct rapt_evd *evd;
	int64_t timeout_us;
	unsigned int threshold;
	atomic_int done;
	int ret;
	struct rapt_event ev;
	unsigned int nmore;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = rapt_evd_wait(w->evd, w->timeout_us, w->threshold, &w->ev,
			       &w->nmore);
	atomic_store(&w->done, 1);
	return NULL;
}

static void waiter_start(struct waiter *w, struct rapt_evd *evd,
			 int64_t timeout_us, unsigned int threshold)
{
	memset(w, 0, sizeof(*w));
	w->evd = evd;
	w->timeout_us = timeout_us;
	w->threshold = threshold;
	w->ret = 1;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&w->tid, NULL, waiter_main, w),
			      0);
}

static void test_wait_threshold(void)
{
	struct rapt_evd *evd = evd_new(8, RAPT_EVD_SOFTWARE);
	struct waiter w;
	uintptr_t i;

	waiter_start(&w, evd, WAIT_US, 3);
	CU_ASSERT(wait_for_waiters(evd, 1));
	for (i = 1; i <= 2; i++) {
		CHECK_RC(rapt_evd_post_software(evd, ptr(i)), 0);
		sleep_ms(30);
		CU_ASSERT_EQUAL(atomic_load(&w.done), 0);
		CU_ASSERT_EQUAL(evd_info(evd).waiters, 1);
	}
	CHECK_RC(rapt_evd_post_software(evd, ptr(3)), 0);
	pthread_join(w.tid, NULL);
	CHECK_TRC(w.ret, 0);
	CU_ASSERT_EQUAL(w.ev.type, RAPT_EV_SOFTWARE);
	CU_ASSERT_PTR_EQUAL(w.ev.u.sw.pointer, ptr(1));
	CU_ASSERT_EQUAL(w.nmore, 2);
	CU_ASSERT_EQUAL(evd_info(evd).count, 2);
	CU_ASSERT_EQUAL(evd_info(evd).waiters, 0);

	/* Already met: returns at once, even with a zero timeout. */
	CHECK_RC(rapt_evd_wait(evd, 0, 2, &w.ev, &w.nmore), 0);
	CU_ASSERT_PTR_EQUAL(w.ev.u.sw.pointer, ptr(2));
	CU_ASSERT_EQUAL(w.nmore, 1);
	CHECK_RC(rapt_evd_wait(evd, 0, 1, &w.ev, NULL), 0);
	CU_ASSERT_PTR_EQUAL(w.ev.u.sw.pointer, ptr(3));
	CHECK_RC(rapt_evd_free(evd), 0);
}

static void test_wait_timeout(void)
{
	struct rapt_evd *evd = evd_new(4, RAPT_EVD_SOFTWARE);
	struct rapt_event ev;
	unsigned int nmore = 99;
	uint64_t t0, dt;

	CHECK_RC(rapt_evd_post_software(evd, ptr(1)), 0);
	CHECK_RC(rapt_evd_post_software(evd, ptr(2)), 0);
	t0 = now_us();
	CHECK_RC(rapt_evd_wait(evd, 100000, 3, &ev, &nmore), RAPT_ETIMEDOUT);
	dt = now_us() - t0;
	CU_ASSERT(dt >= 100000);
	CU_ASSERT(dt < 1000000);
	CU_ASSERT_EQUAL(nmore, 99);
	/* Nothing was dequeued. */
	CU_ASSERT_EQUAL(evd_info(evd).count, 2);
	CU_ASSERT_EQUAL(evd_info(evd).waiters, 0);

	t0 = now_us();
	CHECK_RC(rapt_evd_wait(evd, 0, 3, &ev, &nmore), RAPT_ETIMEDOUT);
	CU_ASSERT(now_us() - t0 < 50000);
	CU_ASSERT_EQUAL(evd_info(evd).count, 2);
	CHECK_RC(rapt_evd_wait(evd, 1000, 1, &ev, &nmore), 0);
	CU_ASSERT_PTR_EQUAL(ev.u.sw.pointer, ptr(1));
	CU_ASSERT_EQUAL(nmore, 1);
	CHECK_RC(rapt_evd_free(evd), 0);
}

static void test_wait_args(void)
{
	struct rapt_evd *evd = evd_new(4, RAPT_EVD_SOFTWARE);
	struct rapt_event ev;

	CHECK_RC(rapt_evd_post_software(evd, ptr(1)), 0);
	CHECK_RC(rapt_evd_wait(evd, 0, 0, &ev, NULL), RAPT_ERANGE);
	CHECK_RC(rapt_evd_wait(evd, 0, 5, &ev, NULL), RAPT_ERANGE);
	CHECK_RC(rapt_evd_wait(evd, RAPT_TIMEOUT_INFINITE, 5, &ev, NULL),
		 RAPT_ERANGE);
	CHECK_RC(rapt_evd_wait(evd, -2, 1, &ev, NULL), RAPT_EINVAL);
	CHECK_RC(rapt_evd_wait(evd, 0, 1, NULL, NULL), RAPT_EINVAL);
	CU_ASSERT_EQUAL(evd_info(evd).count, 1);
	CHECK_RC(rapt_evd_wait(evd, 0, 4, &ev, NULL), RAPT_ETIMEDOUT);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* FIFO among waiters whose threshold is met; see evd-semantics.md. */
static void test_wait_fairness(void)
{
	struct rapt_evd *evd = evd_new(8, RAPT_EVD_SOFTWARE);
	struct waiter w1, w2;

	waiter_start(&w1, evd, WAIT_US, 1);
	CU_ASSERT(wait_for_waiters(evd, 1));
	waiter_start(&w2, evd, WAIT_US, 1);
	CU_ASSERT(wait_for_waiters(evd, 2));
	CHECK_RC(rapt_evd_post_software(evd, ptr(1)), 0);
	pthread_join(w1.tid, NULL);
	CHECK_TRC(w1.ret, 0);
	CU_ASSERT_PTR_EQUAL(w1.ev.u.sw.pointer, ptr(1));
	CU_ASSERT_EQUAL(w1.nmore, 0);
	sleep_ms(20);
	CU_ASSERT_EQUAL(atomic_load(&w2.done), 0);
	CHECK_RC(rapt_evd_post_software(evd, ptr(2)), 0);
	pthread_join(w2.tid, NULL);
	CHECK_TRC(w2.ret, 0);
	CU_ASSERT_PTR_EQUAL(w2.ev.u.sw.pointer, ptr(2));

	/* An earlier waiter with a higher threshold does not hold back a
	 * later one whose threshold is met. */
	waiter_start(&w1, evd, WAIT_US, 3);
	CU_ASSERT(wait_for_waiters(evd, 1));
	waiter_start(&w2, evd, WAIT_US, 1);
	CU_ASSERT(wait_for_waiters(evd, 2));
	CHECK_RC(rapt_evd_post_software(evd, ptr(3)), 0);
	pthread_join(w2.tid, NULL);
	CHECK_TRC(w2.ret, 0);
	CU_ASSERT_PTR_EQUAL(w2.ev.u.sw.pointer, ptr(3));
	CU_ASSERT_EQUAL(atomic_load(&w1.done), 0);
	CHECK_RC(rapt_evd_post_software(evd, ptr(4)), 0);
	CHECK_RC(rapt_evd_post_software(evd, ptr(5)), 0);
	sleep_ms(20);
	CU_ASSERT_EQUAL(atomic_load(&w1.done), 0);
	CHECK_RC(rapt_evd_post_software(evd, ptr(6)), 0);
	pthread_join(w1.tid, NULL);
	CHECK_TRC(w1.ret, 0);
	CU_ASSERT_PTR_EQUAL(w1.ev.u.sw.pointer, ptr(4));
	CU_ASSERT_EQUAL(w1.nmore, 2);
	CHECK_RC(rapt_evd_free(evd), 0);
}

#define MW_THREADS 4
#define MW_EVENTS 10000
#define MW_STOP ((uintptr_t)UINT32_MAX)

struct mw_ctx {
	struct rapt_evd *evd;
	atomic_uint seen[MW_EVENTS + 1];
	atomic_uint got[MW_THREADS];
	atomic_int errors;
};

struct mw_thread {
	struct mw_ctx *c;
	unsigned int idx;
	pthread_t tid;
};

static void *mw_main(void *arg)
{
	struct mw_thread *t = arg;
	struct mw_ctx *c = t->c;
	struct rapt_event ev;
	uintptr_t v;

	for (;;) {
		if (rapt_evd_wait(c->evd, 10000000, 1, &ev, NULL)) {
			atomic_fetch_add(&c->errors, 1);
			return NULL;
		}
		v = (uintptr_t)ev.u.sw.pointer;
		if (v == MW_STOP)
			return NULL;
		if (ev.type != RAPT_EV_SOFTWARE || !v || v > MW_EVENTS)
			atomic_fetch_add(&c->errors, 1);
		else
			atomic_fetch_add(&c->seen[v], 1);
		atomic_fetch_add(&c->got[t->idx], 1);
	}
}

static void mw_post(struct rapt_evd *evd, uintptr_t v)
{
	int ret;

	/* The waiters drain; a full EVD just means "try again". */
	while ((ret = rapt_evd_post_software(evd, ptr(v))) == RAPT_EOVERFLOW)
		sched_yield();
	CHECK_RC(ret, 0);
}

static void test_multi_waiters(void)
{
	struct mw_thread t[MW_THREADS];
	struct mw_ctx *c = calloc(1, sizeof(*c));
	unsigned int i, total = 0;
	uintptr_t v;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	c->evd = evd_new(64, RAPT_EVD_SOFTWARE);
	for (i = 0; i < MW_THREADS; i++) {
		t[i].c = c;
		t[i].idx = i;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i].tid, NULL,
						     mw_main, &t[i]), 0);
	}
	for (v = 1; v <= MW_EVENTS; v++)
		mw_post(c->evd, v);
	for (i = 0; i < MW_THREADS; i++)
		mw_post(c->evd, MW_STOP);
	for (i = 0; i < MW_THREADS; i++)
		pthread_join(t[i].tid, NULL);
	CU_ASSERT_EQUAL(atomic_load(&c->errors), 0);
	for (v = 1; v <= MW_EVENTS; v++)
		if (atomic_load(&c->seen[v]) != 1) {
			printf("\n  event %lu seen %u times\n",
			       (unsigned long)v, atomic_load(&c->seen[v]));
			CU_FAIL("an event was not received exactly once");
			break;
		}
	for (i = 0; i < MW_THREADS; i++)
		total += atomic_load(&c->got[i]);
	CU_ASSERT_EQUAL(total, MW_EVENTS);
	CU_ASSERT_EQUAL(evd_info(c->evd).count, 0);
	CU_ASSERT_EQUAL(evd_info(c->evd).overflows, 0);
	CHECK_RC(rapt_evd_free(c->evd), 0);
	free(c);
}

static void test_free_wakes_waiters(void)
{
	struct rapt_evd *evd = evd_new(4, RAPT_EVD_SOFTWARE);
	struct waiter w1, w2;
	struct rapt_event ev;

	waiter_start(&w1, evd, RAPT_TIMEOUT_INFINITE, 1);
	waiter_start(&w2, evd, 30000000, 2);
	CU_ASSERT_FATAL(wait_for_waiters(evd, 2));
	CHECK_RC(rapt_evd_post_software(evd, ptr(1)), 0);
	/* w1 takes it; w2 (threshold 2) keeps waiting. */
	pthread_join(w1.tid, NULL);
	CHECK_TRC(w1.ret, 0);
	waiter_start(&w1, evd, RAPT_TIMEOUT_INFINITE, 1);
	CU_ASSERT_FATAL(wait_for_waiters(evd, 2));
	CHECK_RC(rapt_evd_free(evd), 0);
	pthread_join(w1.tid, NULL);
	pthread_join(w2.tid, NULL);
	CHECK_TRC(w1.ret, RAPT_ECANCELED);
	CHECK_TRC(w2.ret, RAPT_ECANCELED);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), RAPT_EBADHANDLE);
}

/* ------------------------------------------------------------------ */
/* File descriptor                                                     */
/* ------------------------------------------------------------------ */

static bool have_fd(void)
{
	return ia_attr.caps & RAPT_CAP_EVD_FD;
}

static int readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, timeout_ms);
}

struct poster {
	pthread_t tid;
	struct rapt_evd *evd;
	unsigned int n;
	unsigned int delay_ms;
};

static void *poster_main(void *arg)
{
	struct poster *p = arg;
	uintptr_t i;

	if (p->delay_ms)
		sleep_ms(p->delay_ms);
	for (i = 1; i <= p->n; i++) {
		while (rapt_evd_post_software(p->evd, ptr(i)))
			sched_yield();
		if (!(i & 7))
			sched_yield();
	}
	return NULL;
}

static void test_fd_arm(void)
{
	struct rapt_evd *evd;
	struct poster p = { 0 };
	struct rapt_event ev;
	int fd = -1, fd2 = -1, ep;
	struct epoll_event ee = { .events = EPOLLIN };

	if (!have_fd())
		SKIP("the IA does not offer RAPT_CAP_EVD_FD");
	evd = evd_new(8, RAPT_EVD_SOFTWARE);
	CHECK_RC(rapt_evd_get_fd(evd, &fd), 0);
	CU_ASSERT(fd >= 0);
	CHECK_RC(rapt_evd_get_fd(evd, &fd2), 0);
	CU_ASSERT_EQUAL(fd, fd2);
	CHECK_RC(rapt_evd_get_fd(evd, NULL), RAPT_EINVAL);

	/* Not armed: a post does not make the fd readable. */
	CHECK_RC(rapt_evd_post_software(evd, ptr(1)), 0);
	CU_ASSERT_EQUAL(readable(fd, 0), 0);
	/* Events queued: arm refuses, so the caller dequeues first. */
	CHECK_RC(rapt_evd_arm(evd), RAPT_EAGAIN);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
	CHECK_RC(rapt_evd_arm(evd), 0);
	CU_ASSERT_EQUAL(readable(fd, 0), 0);

	ep = epoll_create1(EPOLL_CLOEXEC);
	CU_ASSERT_FATAL(ep >= 0);
	CU_ASSERT_EQUAL(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee), 0);
	p.evd = evd;
	p.n = 1;
	p.delay_ms = 20;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&p.tid, NULL, poster_main, &p),
			      0);
	CU_ASSERT_EQUAL(epoll_wait(ep, &ee, 1, 5000), 1);
	pthread_join(p.tid, NULL);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
	CU_ASSERT_PTR_EQUAL(ev.u.sw.pointer, ptr(1));
	/* Arming drains the fd. */
	CHECK_RC(rapt_evd_arm(evd), 0);
	CU_ASSERT_EQUAL(readable(fd, 0), 0);
	/* A push while armed writes once and disarms. */
	CHECK_RC(rapt_evd_post_software(evd, ptr(2)), 0);
	CU_ASSERT_EQUAL(readable(fd, 0), 1);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
	CHECK_RC(rapt_evd_arm(evd), 0);
	CU_ASSERT_EQUAL(readable(fd, 0), 0);
	close(ep);
	CHECK_RC(rapt_evd_free(evd), 0);
}

#define FD_EVENTS 1000

static void test_fd_no_lost_wakeup(void)
{
	struct epoll_event ee = { .events = EPOLLIN };
	struct poster p = { 0 };
	struct rapt_evd *evd;
	struct rapt_event ev;
	unsigned int got = 0, waits = 0, timeouts = 0;
	uintptr_t expect = 1;
	int fd, ep, ret;

	if (!have_fd())
		SKIP("the IA does not offer RAPT_CAP_EVD_FD");
	evd = evd_new(16, RAPT_EVD_SOFTWARE);
	CHECK_RC(rapt_evd_get_fd(evd, &fd), 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CU_ASSERT_FATAL(ep >= 0);
	CU_ASSERT_EQUAL(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee), 0);
	p.evd = evd;
	p.n = FD_EVENTS;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&p.tid, NULL, poster_main, &p),
			      0);
	while (got < FD_EVENTS && timeouts == 0) {
		ret = rapt_evd_arm(evd);
		if (ret == 0) {
			/* Armed on an empty EVD: the next post must wake
			 * us; a lost wakeup shows as a timeout here. */
			waits++;
			if (epoll_wait(ep, &ee, 1, 5000) != 1)
				timeouts++;
		} else {
			CHECK_RC(ret, RAPT_EAGAIN);
		}
		while (rapt_evd_dequeue(evd, &ev) == 0) {
			if (ev.u.sw.pointer != ptr(expect))
				CU_FAIL("events out of order");
			expect++;
			got++;
		}
	}
	pthread_join(p.tid, NULL);
	CU_ASSERT_EQUAL(timeouts, 0);
	CU_ASSERT_EQUAL(got, FD_EVENTS);
	CU_ASSERT(waits > 0);
	close(ep);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* Lockstep: every one of 1000 cycles arms, sleeps in epoll, is woken. */
struct lockstep {
	struct rapt_evd *evd;
	pthread_mutex_t m;
	pthread_cond_t c;
	unsigned int armed;
	unsigned int stop;
};

static void *lockstep_main(void *arg)
{
	struct lockstep *l = arg;
	uintptr_t i;

	for (i = 1; i <= FD_EVENTS; i++) {
		pthread_mutex_lock(&l->m);
		while (l->armed < i && !l->stop)
			pthread_cond_wait(&l->c, &l->m);
		pthread_mutex_unlock(&l->m);
		if (l->stop)
			break;
		if (rapt_evd_post_software(l->evd, ptr(i)))
			break;
	}
	return NULL;
}

static void test_fd_lockstep(void)
{
	struct epoll_event ee = { .events = EPOLLIN };
	struct lockstep l = { 0 };
	struct rapt_event ev;
	pthread_t tid;
	unsigned int i, bad = 0;
	int fd, ep;

	if (!have_fd())
		SKIP("the IA does not offer RAPT_CAP_EVD_FD");
	l.evd = evd_new(4, RAPT_EVD_SOFTWARE);
	pthread_mutex_init(&l.m, NULL);
	pthread_cond_init(&l.c, NULL);
	CHECK_RC(rapt_evd_get_fd(l.evd, &fd), 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	CU_ASSERT_FATAL(ep >= 0);
	CU_ASSERT_EQUAL(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&tid, NULL, lockstep_main, &l),
			      0);
	for (i = 1; i <= FD_EVENTS && !bad; i++) {
		if (rapt_evd_arm(l.evd) != 0)
			bad++;
		pthread_mutex_lock(&l.m);
		l.armed = i;
		pthread_cond_signal(&l.c);
		pthread_mutex_unlock(&l.m);
		if (epoll_wait(ep, &ee, 1, 5000) != 1 ||
		    rapt_evd_dequeue(l.evd, &ev) ||
		    ev.u.sw.pointer != ptr(i))
			bad++;
	}
	pthread_mutex_lock(&l.m);
	l.stop = 1;
	pthread_cond_signal(&l.c);
	pthread_mutex_unlock(&l.m);
	pthread_join(tid, NULL);
	CU_ASSERT_EQUAL(bad, 0);
	close(ep);
	pthread_cond_destroy(&l.c);
	pthread_mutex_destroy(&l.m);
	CHECK_RC(rapt_evd_free(l.evd), 0);
}

/* Out of descriptors is RAPT_EMFILE, not RAPT_EIO, and goes away with
 * the shortage. */
static void test_fd_emfile(void)
{
	struct rapt_evd *evd;
	struct rlimit old;
	int held[FD_LIMIT_SCAN], n, fd = -1;

	if (!have_fd())
		SKIP("the IA does not offer RAPT_CAP_EVD_FD");
	evd = evd_new(8, RAPT_EVD_SOFTWARE);
	n = fd_limit_fill(&old, 0, held, FD_LIMIT_SCAN);
	CU_ASSERT_FATAL(n >= 0);
	CHECK_RC(rapt_evd_get_fd(evd, &fd), RAPT_EMFILE);
	CU_ASSERT_EQUAL(fd, -1);
	CHECK_RC(rapt_evd_arm(evd), RAPT_EMFILE);
	CU_ASSERT_EQUAL(fd_limit_restore(&old, held, n), 0);
	CHECK_RC(rapt_evd_get_fd(evd, &fd), 0);
	CU_ASSERT(fd >= 0);
	CHECK_RC(rapt_evd_arm(evd), 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* ------------------------------------------------------------------ */
/* Overflow                                                            */
/* ------------------------------------------------------------------ */

/*
 * A source of provider pushes onto @target: an EP whose connect failed
 * (UNREACHABLE), so every receive posted on it completes FLUSHED on
 * @target, pushed by the provider's progress thread in posting order.
 */
struct flusher {
	struct rapt_pz *pz;
	struct rapt_evd *conn;
	struct rapt_ep *ep;
};

static int flusher_open(struct flusher *f, struct rapt_evd *target)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rapt_event ev;

	memset(f, 0, sizeof(*f));
	inet_pton(AF_INET, "192.0.2.1", &sin.sin_addr);
	CHECK_RC(rapt_pz_create(ia, &f->pz), 0);
	f->conn = evd_new(4, RAPT_EVD_CONNECTION);
	CHECK_RC(rapt_ep_create(f->pz, target, NULL, f->conn, NULL, &f->ep),
		 0);
	if (!f->ep)
		return -1;
	CHECK_RC(rapt_ep_connect(f->ep, (struct sockaddr *)&sin, 1, NULL, 0,
				 RAPT_TIMEOUT_INFINITE), 0);
	CHECK_RC(rapt_evd_wait(f->conn, 5000000, 1, &ev, NULL), 0);
	CU_ASSERT_EQUAL(ev.type, RAPT_EV_UNREACHABLE);
	return ev.type == RAPT_EV_UNREACHABLE ? 0 : -1;
}

static void flusher_close(struct flusher *f)
{
	if (f->ep)
		CHECK_RC(rapt_ep_free(f->ep), 0);
	CHECK_RC(rapt_evd_free(f->conn), 0);
	CHECK_RC(rapt_pz_free(f->pz), 0);
}

/* One provider push of a DTO event carrying @cookie. */
static void flush_one(struct flusher *f, uint64_t cookie)
{
	CHECK_RC(rapt_ep_post_recv(f->ep, NULL, 0, cookie), 0);
}

/* Wait (at most 5 s) for the provider's pushes to reach a state. */
static bool settle(struct rapt_evd *evd, uint32_t count, uint64_t overflows)
{
	struct rapt_evd_info info;
	int i;

	for (i = 0; i < 5000; i++) {
		info = evd_info(evd);
		if (info.count == count && info.overflows == overflows)
			return true;
		sleep_ms(1);
	}
	printf("\n  EVD has %u events and %llu lost, want %u and %llu\n",
	       info.count, (unsigned long long)info.overflows, count,
	       (unsigned long long)overflows);
	return false;
}

static void expect_dto(struct rapt_evd *evd, uint64_t cookie)
{
	struct rapt_event ev;

	CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
	CU_ASSERT_EQUAL(ev.type, RAPT_EV_DTO);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, cookie);
	CU_ASSERT_EQUAL(ev.u.dto.status, RAPT_DTO_FLUSHED);
	CU_ASSERT_PTR_EQUAL(ev.evd, evd);
}

static void expect_overflow(struct rapt_evd *from, struct rapt_evd *about,
			    uint64_t count)
{
	struct rapt_event ev;

	CHECK_RC(rapt_evd_dequeue(from, &ev), 0);
	CU_ASSERT_EQUAL(ev.type, RAPT_EV_ASYNC_EVD_OVERFLOW);
	CU_ASSERT_PTR_EQUAL(ev.evd, from);
	CU_ASSERT_PTR_EQUAL(ev.u.async.handle, about);
	CU_ASSERT_EQUAL(ev.u.async.count, count);
}

static void test_overflow_to_async_evd(void)
{
	struct rapt_evd *aevd = evd_new(8, RAPT_EVD_ASYNC);
	struct rapt_evd *evd = evd_new(4, RAPT_EVD_DTO);
	struct rapt_event ev;
	struct flusher f;
	uint64_t i;

	if (flusher_open(&f, evd))
		goto out;
	for (i = 1; i <= 6; i++)
		flush_one(&f, i);
	CU_ASSERT(settle(evd, 4, 2));
	/* One report per episode, with the count when it was made. */
	CU_ASSERT(settle(aevd, 1, 0));
	expect_overflow(aevd, evd, 1);
	CHECK_RC(rapt_evd_dequeue(aevd, &ev), RAPT_EAGAIN);

	/* Dequeueing ends the episode: the next loss is reported again. */
	expect_dto(evd, 1);
	flush_one(&f, 7);
	flush_one(&f, 8);
	CU_ASSERT(settle(evd, 4, 3));
	CU_ASSERT(settle(aevd, 1, 0));
	expect_overflow(aevd, evd, 3);
	for (i = 2; i <= 4; i++)
		expect_dto(evd, i);
	expect_dto(evd, 7);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), RAPT_EAGAIN);
	CHECK_RC(rapt_evd_dequeue(aevd, &ev), RAPT_EAGAIN);
out:
	flusher_close(&f);
	CHECK_RC(rapt_evd_free(evd), 0);
	CHECK_RC(rapt_evd_free(aevd), 0);
}

static void test_overflow_self_report(void)
{
	struct rapt_evd *evd = evd_new(4, RAPT_EVD_DTO);
	struct rapt_event ev;
	struct flusher f;
	uint64_t i;

	if (flusher_open(&f, evd))
		goto out;
	for (i = 1; i <= 7; i++)
		flush_one(&f, i);
	/* No async EVD: the report sits in the reserved slot, after what
	 * was queued. */
	CU_ASSERT(settle(evd, 5, 3));
	expect_dto(evd, 1);
	/* The freed slot takes an event; the report keeps its place and
	 * counts the losses while it waits to be read. */
	flush_one(&f, 8);
	flush_one(&f, 9);
	CU_ASSERT(settle(evd, 5, 4));
	for (i = 2; i <= 4; i++)
		expect_dto(evd, i);
	expect_overflow(evd, evd, 4);
	expect_dto(evd, 8);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), RAPT_EAGAIN);

	/* A new episode after the report was read: a new report. */
	for (i = 10; i <= 14; i++)
		flush_one(&f, i);
	CU_ASSERT(settle(evd, 5, 5));
	for (i = 10; i <= 13; i++)
		expect_dto(evd, i);
	expect_overflow(evd, evd, 5);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), RAPT_EAGAIN);
out:
	flusher_close(&f);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* The async EVD overflowing: with its own events, and with reports. */
static void test_overflow_of_async_evd(void)
{
	struct rapt_evd *aevd, *a, *b;
	struct flusher fa, fb, fs;
	struct rapt_event ev;
	uint64_t i;

	/* Its own DTO stream: the loss is reported in its reserved slot. */
	aevd = evd_new(2, RAPT_EVD_ASYNC | RAPT_EVD_DTO);
	if (!flusher_open(&fs, aevd)) {
		for (i = 1; i <= 4; i++)
			flush_one(&fs, i);
		CU_ASSERT(settle(aevd, 3, 2));
		expect_dto(aevd, 1);
		expect_dto(aevd, 2);
		expect_overflow(aevd, aevd, 2);
		CHECK_RC(rapt_evd_dequeue(aevd, &ev), RAPT_EAGAIN);
	}
	flusher_close(&fs);
	CHECK_RC(rapt_evd_free(aevd), 0);

	/* Full of other EVDs' reports: a report that cannot fit is lost
	 * like any event, and the async EVD reports that loss itself. */
	aevd = evd_new(1, RAPT_EVD_ASYNC);
	a = evd_new(1, RAPT_EVD_DTO);
	b = evd_new(1, RAPT_EVD_DTO);
	if (!flusher_open(&fa, a) && !flusher_open(&fb, b)) {
		flush_one(&fa, 1);
		flush_one(&fa, 2);
		CU_ASSERT(settle(a, 1, 1));
		CU_ASSERT(settle(aevd, 1, 0));
		flush_one(&fb, 1);
		flush_one(&fb, 2);
		CU_ASSERT(settle(b, 1, 1));
		CU_ASSERT(settle(aevd, 2, 1));
		expect_overflow(aevd, a, 1);
		expect_overflow(aevd, aevd, 1);
		CHECK_RC(rapt_evd_dequeue(aevd, &ev), RAPT_EAGAIN);
	}
	flusher_close(&fa);
	flusher_close(&fb);
	CHECK_RC(rapt_evd_free(a), 0);
	CHECK_RC(rapt_evd_free(b), 0);
	CHECK_RC(rapt_evd_free(aevd), 0);
}

/* A report wakes a waiter like any other event. */
static void test_overflow_wakes(void)
{
	struct rapt_evd *aevd = evd_new(4, RAPT_EVD_ASYNC);
	struct rapt_evd *evd = evd_new(1, RAPT_EVD_DTO);
	struct flusher f;
	struct waiter w;

	if (flusher_open(&f, evd))
		goto out;
	waiter_start(&w, aevd, WAIT_US, 1);
	CU_ASSERT(wait_for_waiters(aevd, 1));
	flush_one(&f, 1);
	flush_one(&f, 2);
	pthread_join(w.tid, NULL);
	CHECK_TRC(w.ret, 0);
	CU_ASSERT_EQUAL(w.ev.type, RAPT_EV_ASYNC_EVD_OVERFLOW);
	CU_ASSERT_PTR_EQUAL(w.ev.u.async.handle, evd);
	CU_ASSERT_EQUAL(w.ev.u.async.count, 1);
out:
	flusher_close(&f);
	CHECK_RC(rapt_evd_free(evd), 0);
	CHECK_RC(rapt_evd_free(aevd), 0);
}

/* ------------------------------------------------------------------ */
/* Users                                                               */
/* ------------------------------------------------------------------ */

static void test_free_busy(void)
{
	struct rapt_evd *evd = evd_new(8, RAPT_EVD_DTO | RAPT_EVD_CONNECTION);
	struct rapt_evd *dto = evd_new(8, RAPT_EVD_DTO);
	struct rapt_pz *pz = NULL;
	struct rapt_ep *ep = NULL;

	CHECK_RC(rapt_pz_create(ia, &pz), 0);
	CHECK_RC(rapt_ep_create(pz, dto, evd, evd, NULL, &ep), 0);
	CHECK_RC(rapt_evd_free(evd), RAPT_EBUSY);
	CHECK_RC(rapt_evd_free(dto), RAPT_EBUSY);
	/* Still fully alive. */
	CU_ASSERT_EQUAL(evd_info(evd).qlen, 8);
	CHECK_RC(rapt_ep_free(ep), 0);
	CHECK_RC(rapt_evd_free(evd), 0);
	CHECK_RC(rapt_evd_free(dto), 0);
	CHECK_RC(rapt_pz_free(pz), 0);
}

/* ------------------------------------------------------------------ */

static int suite_init(void)
{
	if (rapt_ia_open("test", &ia)) {
		fprintf(stderr, "cannot open IA \"test\": %s\n",
			rapt_last_error());
		return -1;
	}
	if (rapt_ia_query(ia, &ia_attr, sizeof(ia_attr)))
		return -1;
	return 0;
}

static int suite_cleanup(void)
{
	int ret = rapt_ia_close(ia);

	/* Every test frees what it creates: the IA must close now. */
	if (ret)
		fprintf(stderr, "rapt_ia_close: %s (%s)\n",
			rapt_err_name(ret), rapt_last_error());
	return ret ? -1 : 0;
}

static const struct {
	const char *name;
	CU_TestFunc fn;
} tests[] = {
	{ "dequeue on empty", test_dequeue_empty },
	{ "software events in FIFO order", test_software_fifo },
	{ "batch dequeue", test_batch },
	{ "post_software on a full EVD", test_post_software_full },
	{ "post_software without the stream", test_no_software_stream },
	{ "query and info_size", test_query },
	{ "create arguments", test_create_args },
	{ "bad, stale and wrong-type handles", test_bad_handles },
	{ "second async EVD", test_async_eexist },
	{ "streams that cannot merge", test_merge_enotsup },
	{ "wait threshold", test_wait_threshold },
	{ "wait timeout", test_wait_timeout },
	{ "wait arguments", test_wait_args },
	{ "waiter fairness", test_wait_fairness },
	{ "4 waiters, 10000 events", test_multi_waiters },
	{ "free wakes waiters", test_free_wakes_waiters },
	{ "fd arm and epoll", test_fd_arm },
	{ "fd: no lost wakeup, free running", test_fd_no_lost_wakeup },
	{ "fd: no lost wakeup, lockstep", test_fd_lockstep },
	{ "fd: out of descriptors is RAPT_EMFILE", test_fd_emfile },
	{ "overflow reported on the async EVD", test_overflow_to_async_evd },
	{ "overflow reported in the EVD itself", test_overflow_self_report },
	{ "overflow of the async EVD", test_overflow_of_async_evd },
	{ "overflow report wakes a waiter", test_overflow_wakes },
	{ "free of an EVD an EP uses", test_free_busy },
};

/* A lost wakeup shows as a hang: turn it into a failure. */
static void watchdog(int sig)
{
	static const char msg[] = "\ntest_evd: hung for 120 s, giving up\n";

	(void)sig;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

int main(void)
{
	CU_pSuite s;
	unsigned int i, failed;

	signal(SIGALRM, watchdog);
	alarm(120);
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 99;
	s = CU_add_suite("evd", suite_init, suite_cleanup);
	if (!s)
		return 99;
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!CU_add_test(s, tests[i].name, tests[i].fn))
			return 99;
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures() +
		 CU_get_number_of_suites_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}
