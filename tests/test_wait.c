/* SPDX-License-Identifier: MIT */
/*
 * Blocking waits on the provider's own wait objects (core/evd.c, the
 * evd_wait_fd / evd_trywait / evd_wait_done ops), driven through the public
 * API on the "wait" fixture provider (tests/waitprov/), which has no thread
 * of its own: an event reaches the EVD only in a thread that sleeps on the
 * provider's doorbell, armed, and then lets the provider run.
 *
 * Waits for another thread to reach a state poll a condition with a
 * deadline; nothing here sleeps for a fixed time to let something happen.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <CUnit/Basic.h>

#include <rapt/provider.h>

#include "cu_table.h"
#include "fd_limit.h"
#include "wait_client.h"

#define NEVENTS		20000		/* the many-waiters case */
#define NWAITERS	4

/* ------------------------------------------------------------------ */
/* Cases                                                               */
/* ------------------------------------------------------------------ */

/* The waiter sleeps on the doorbell and pushes the event itself. */
static void test_sleeps_on_wait_object(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO);
	struct wait_prov_stats st;
	struct waiter w;

	waiter_start(&w, evd, WAIT_S * 1000000ll);
	CU_ASSERT_TRUE(until_sleeping(evd, 1));
	CHECK_RC(inject(evd, 1), 0);
	pthread_join(w.thread, NULL);
	CHECK_RC(w.ret, 0);
	CU_ASSERT_EQUAL(w.ev.type, RAPT_EV_DTO);
	CU_ASSERT_EQUAL(w.ev.u.dto.cookie, 0);
	st = st_of(evd);
	/* No thread but the waiter's moved the event into the EVD. */
	CU_ASSERT_TRUE(pthread_equal(st.last_pusher, w.thread));
	CU_ASSERT_EQUAL(st.rings, 1);
	CU_ASSERT_EQUAL(st.sleeping, 0);
	CU_ASSERT_EQUAL(st.wait_done, st.trywait_block - st.trywait_eagain);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* Work pending before the wait (nothing rang): trywait says so, and the
 * wait returns it without sleeping. */
static void test_pending_before_wait(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO);
	struct wait_prov_stats st;
	struct rapt_event ev;

	CHECK_RC(inject(evd, 1), 0);
	CU_ASSERT_EQUAL(st_of(evd).rings, 0);
	CHECK_RC(rapt_evd_wait(evd, WAIT_S * 1000000ll, 1, &ev, NULL), 0);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, 0);
	st = st_of(evd);
	CU_ASSERT_EQUAL(st.trywait_eagain, 1);
	CU_ASSERT_EQUAL(st.wait_done, 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* A zero timeout still lets the provider look. */
static void test_zero_timeout_polls(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO);
	struct rapt_event ev;

	CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), RAPT_ETIMEDOUT);
	CHECK_RC(inject(evd, 1), 0);
	CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), 0);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, 0);
	CU_ASSERT_EQUAL(st_of(evd).trywait_block, 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* A timeout ends the sleep; every trywait is paired with a wait_done. */
static void test_timeout(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO);
	struct wait_prov_stats st;
	struct rapt_event ev;
	uint64_t t0 = now_ms();

	CHECK_RC(rapt_evd_wait(evd, 20000, 1, &ev, NULL), RAPT_ETIMEDOUT);
	CU_ASSERT_TRUE(now_ms() - t0 >= 20);
	st = st_of(evd);
	CU_ASSERT_TRUE(st.trywait_block >= 1);
	CU_ASSERT_EQUAL(st.wait_done, st.trywait_block);
	CU_ASSERT_EQUAL(st.sleeping, 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* The second waiter in line takes over the doorbell when the first one
 * leaves with its event; without the hand-over it would sleep on its
 * condition variable and never see the second event. */
static void test_leader_hand_over(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO);
	struct waiter a, b;

	waiter_start(&a, evd, WAIT_S * 1000000ll);
	CU_ASSERT_TRUE(until_sleeping(evd, 1));
	waiter_start(&b, evd, WAIT_S * 1000000ll);
	CU_ASSERT_TRUE(until_waiters(evd, 2));
	/* Only the first in line sleeps on the doorbell. */
	CU_ASSERT_EQUAL(st_of(evd).sleeping, 1);
	CHECK_RC(inject(evd, 1), 0);
	pthread_join(a.thread, NULL);
	CHECK_RC(a.ret, 0);
	CU_ASSERT_EQUAL(a.ev.u.dto.cookie, 0);
	CU_ASSERT_TRUE(until_sleeping(evd, 1));
	CHECK_RC(inject(evd, 1), 0);
	pthread_join(b.thread, NULL);
	CHECK_RC(b.ret, 0);
	CU_ASSERT_EQUAL(b.ev.u.dto.cookie, 1);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* The leader times out: the next waiter must lead from then on. */
static void test_leader_times_out(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO);
	struct waiter a, b;

	waiter_start(&a, evd, 50000);
	CU_ASSERT_TRUE(until_sleeping(evd, 1));
	waiter_start(&b, evd, WAIT_S * 1000000ll);
	pthread_join(a.thread, NULL);
	CHECK_RC(a.ret, RAPT_ETIMEDOUT);
	CU_ASSERT_TRUE(until_sleeping(evd, 1));
	CHECK_RC(inject(evd, 1), 0);
	pthread_join(b.thread, NULL);
	CHECK_RC(b.ret, 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* Freeing the EVD wakes a leader asleep on the doorbell. */
static void test_free_cancels_leader(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO);
	struct waiter a, b;

	waiter_start(&a, evd, RAPT_TIMEOUT_INFINITE);
	CU_ASSERT_TRUE(until_sleeping(evd, 1));
	waiter_start(&b, evd, RAPT_TIMEOUT_INFINITE);
	CU_ASSERT_TRUE(until_waiters(evd, 2));
	CHECK_RC(rapt_evd_free(evd), 0);
	pthread_join(a.thread, NULL);
	pthread_join(b.thread, NULL);
	CHECK_RC(a.ret, RAPT_ECANCELED);
	CHECK_RC(b.ret, RAPT_ECANCELED);
}

/* A software event posted by another thread wakes the leader (the core's
 * own wakeup, not the provider's doorbell). */
static void test_push_from_elsewhere_wakes_leader(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO | RAPT_EVD_SOFTWARE);
	struct waiter w;

	waiter_start(&w, evd, WAIT_S * 1000000ll);
	CU_ASSERT_TRUE(until_sleeping(evd, 1));
	CHECK_RC(rapt_evd_post_software(evd, (void *)0x5a), 0);
	pthread_join(w.thread, NULL);
	CHECK_RC(w.ret, 0);
	CU_ASSERT_EQUAL(w.ev.type, RAPT_EV_SOFTWARE);
	CU_ASSERT_PTR_EQUAL(w.ev.u.sw.pointer, (void *)0x5a);
	CU_ASSERT_EQUAL(st_of(evd).rings, 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}


/* Several waiters, events injected in bursts from another thread: every
 * event is delivered exactly once. */
struct many {
	struct rapt_evd *evd;
	_Atomic uint32_t taken;
	_Atomic uint8_t seen[NEVENTS];
	_Atomic uint32_t dup;
	_Atomic uint32_t errors;
};

static void *many_waiter(void *arg)
{
	struct many *m = arg;
	uint64_t end = now_ms() + 60000;
	struct rapt_event ev;
	int ret;

	while (atomic_load(&m->taken) < NEVENTS && now_ms() < end) {
		ret = rapt_evd_wait(m->evd, 100000, 1, &ev, NULL);
		if (ret == RAPT_ETIMEDOUT)
			continue;
		if (ret || ev.u.dto.cookie >= NEVENTS) {
			atomic_fetch_add(&m->errors, 1);
			break;
		}
		if (atomic_fetch_add(&m->seen[ev.u.dto.cookie], 1))
			atomic_fetch_add(&m->dup, 1);
		atomic_fetch_add(&m->taken, 1);
	}
	return NULL;
}

static void test_many_waiters(void)
{
	static struct many m;
	pthread_t t[NWAITERS];
	uint32_t sent = 0, n, i, missing = 0;
	uint64_t end;

	memset(&m, 0, sizeof(m));
	m.evd = new_evd(256, RAPT_EVD_DTO);
	for (i = 0; i < NWAITERS; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, many_waiter,
						     &m), 0);
	srand(7);
	while (sent < NEVENTS) {
		n = 1 + (uint32_t)rand() % 7;
		if (n > NEVENTS - sent)
			n = NEVENTS - sent;
		/* Stay within qlen: the EVD would count a loss. */
		end = now_ms() + WAIT_S * 1000;
		while (sent - atomic_load(&m.taken) + n > 200 &&
		       now_ms() < end)
			sched_yield();
		CHECK_RC(inject(m.evd, n), 0);
		sent += n;
		if (!(sent % 64))
			sched_yield();
	}
	for (i = 0; i < NWAITERS; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < NEVENTS; i++)
		missing += !atomic_load(&m.seen[i]);
	CU_ASSERT_EQUAL(atomic_load(&m.errors), 0);
	CU_ASSERT_EQUAL(atomic_load(&m.dup), 0);
	CU_ASSERT_EQUAL(missing, 0);
	CU_ASSERT_EQUAL(atomic_load(&m.taken), NEVENTS);
	CU_ASSERT_EQUAL(st_of(m.evd).sleeping, 0);
	CHECK_RC(rapt_evd_free(m.evd), 0);
}

/* The EVD's fd: arming arms the doorbell, whose ring makes the fd
 * readable; work already pending makes arm say RAPT_EAGAIN. */
static void test_fd_path(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO);
	struct pollfd p = { .events = POLLIN };
	struct rapt_event ev;

	CHECK_RC(rapt_evd_get_fd(evd, &p.fd), 0);
	CHECK_RC(rapt_evd_arm(evd), 0);
	CU_ASSERT_EQUAL(st_of(evd).trywait_fd, 1);
	CU_ASSERT_EQUAL(poll(&p, 1, 0), 0);
	CHECK_RC(inject(evd, 1), 0);
	CU_ASSERT_EQUAL(st_of(evd).rings, 1);
	CU_ASSERT_EQUAL(poll(&p, 1, WAIT_S * 1000), 1);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, 0);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), RAPT_EAGAIN);
	/* Pending but not rung (the doorbell was disarmed by the ring). */
	CHECK_RC(inject(evd, 1), 0);
	CHECK_RC(rapt_evd_arm(evd), RAPT_EAGAIN);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, 1);
	CHECK_RC(rapt_evd_arm(evd), 0);
	CU_ASSERT_EQUAL(poll(&p, 1, 0), 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* With one descriptor left the eventfd is made and the epoll set of it
 * and the doorbell is not: RAPT_EMFILE, not RAPT_EIO; then it works. */
static void test_fd_emfile(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO);
	struct pollfd p = { .events = POLLIN };
	int held[FD_LIMIT_SCAN], n;
	struct rlimit old;

	n = fd_limit_fill(&old, 1, held, FD_LIMIT_SCAN);
	CU_ASSERT_FATAL(n >= 0);
	CHECK_RC(rapt_evd_get_fd(evd, &p.fd), RAPT_EMFILE);
	CU_ASSERT_NSTRING_EQUAL(rapt_last_error(), "EVD: epoll_create1()", 20);
	CU_ASSERT_EQUAL(fd_limit_restore(&old, held, n), 0);
	CHECK_RC(rapt_evd_get_fd(evd, &p.fd), 0);
	CHECK_RC(rapt_evd_arm(evd), 0);
	CHECK_RC(inject(evd, 1), 0);
	CU_ASSERT_EQUAL(poll(&p, 1, WAIT_S * 1000), 1);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* A dequeue takes what is queued without a provider call; one that runs
 * the provider and returns the event it pushed leaves the armed fd alone,
 * unless more events are left for whoever polls it. */
static void test_dequeue_own_push(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO | RAPT_EVD_SOFTWARE);
	struct pollfd p = { .events = POLLIN };
	struct rapt_event ev;
	uint64_t calls;

	CHECK_RC(rapt_evd_get_fd(evd, &p.fd), 0);
	CHECK_RC(rapt_evd_post_software(evd, NULL), 0);
	calls = st_of(evd).progress_calls;
	CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
	CU_ASSERT_EQUAL(ev.type, RAPT_EV_SOFTWARE);
	CU_ASSERT_EQUAL(st_of(evd).progress_calls, calls);

	/* One event pushed inside the dequeue, and returned by it. */
	CHECK_RC(rapt_evd_arm(evd), 0);
	CHECK_RC(inject(evd, 1), 0);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, 0);
	CU_ASSERT_EQUAL(poll(&p, 1, 0), 0);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), RAPT_EAGAIN);

	/* Two: the one left over makes the fd readable. */
	CHECK_RC(rapt_evd_arm(evd), 0);
	CHECK_RC(inject(evd, 2), 0);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, 1);
	CU_ASSERT_EQUAL(poll(&p, 1, 0), 1);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, 2);
	CHECK_RC(rapt_evd_arm(evd), 0);
	CU_ASSERT_EQUAL(poll(&p, 1, 0), 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* A dequeue that runs the provider on an empty EVD gets the first event
 * the provider pushes straight back, with its EVD handle; the rest queue
 * behind it in order.  That one never took a slot: qlen + 1 in one
 * provider call lose nothing. */
/*
 * rapt_prov_evd_taken(): what a provider that delivered events by itself
 * (the verbs engine, for a CQ nobody polled) reads to learn that a
 * consumer works through them, although its dequeues, served from the
 * queue, never call the provider.  Events queued by the push of a wait or
 * a dequeue count once taken; the one a dequeue's own push hands straight
 * back never sat in the queue.
 */
static void test_taken_count(void)
{
	struct rapt_evd *evd = new_evd(16, RAPT_EVD_DTO);
	struct wait_prov_stats st;
	struct rapt_event ev;
	uint64_t t0, calls;
	int i;

	t0 = st_of(evd).taken;
	CHECK_RC(inject(evd, 4), 0);
	/* A zero-timeout wait pushes all four into the queue and takes the
	 * first from there. */
	CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), 0);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, 0);
	st = st_of(evd);
	CU_ASSERT_EQUAL(st.pushed, 4);
	CU_ASSERT_EQUAL(st.taken, t0 + 1);
	calls = st.progress_calls;
	for (i = 1; i <= 3; i++) {
		CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
		CU_ASSERT_EQUAL(ev.u.dto.cookie, (uint64_t)i);
		st = st_of(evd);
		CU_ASSERT_EQUAL(st.taken, t0 + 1 + (uint64_t)i);
		/* ... served from the queue: the provider was not called */
		CU_ASSERT_EQUAL(st.progress_calls, calls);
	}
	/* An empty dequeue calls the provider and takes nothing. */
	CHECK_RC(rapt_evd_dequeue(evd, &ev), RAPT_EAGAIN);
	CU_ASSERT_EQUAL(st_of(evd).taken, t0 + 4);
	/* A dequeue's own first push comes straight back: not queued. */
	CHECK_RC(inject(evd, 1), 0);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, 4);
	CU_ASSERT_EQUAL(st_of(evd).taken, t0 + 4);
	CHECK_RC(rapt_evd_free(evd), 0);
}

static void test_dequeue_direct(void)
{
	struct rapt_evd *evd = new_evd(4, RAPT_EVD_DTO);
	struct rapt_evd_info info;
	struct rapt_event ev;
	uint64_t calls, i;

	CHECK_RC(rapt_evd_query(evd, &info, sizeof(info)), 0);
	CHECK_RC(inject(evd, info.qlen + 1), 0);
	calls = st_of(evd).progress_calls;
	memset(&ev, 0xa5, sizeof(ev));
	CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
	CU_ASSERT_EQUAL(ev.type, RAPT_EV_DTO);
	CU_ASSERT_PTR_EQUAL(ev.evd, evd);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, 0);
	CU_ASSERT_EQUAL(ev.u.dto.status, RAPT_DTO_SUCCESS);
	CU_ASSERT_EQUAL(st_of(evd).progress_calls, calls + 1);
	CU_ASSERT_EQUAL(st_of(evd).pushed, info.qlen + 1);
	CHECK_RC(rapt_evd_query(evd, &info, sizeof(info)), 0);
	CU_ASSERT_EQUAL(info.count, info.qlen);
	CU_ASSERT_EQUAL(info.overflows, 0);
	/* The queued ones come without a provider call. */
	for (i = 1; i <= info.qlen; i++) {
		memset(&ev, 0xa5, sizeof(ev));
		CHECK_RC(rapt_evd_dequeue(evd, &ev), 0);
		CU_ASSERT_PTR_EQUAL(ev.evd, evd);
		CU_ASSERT_EQUAL(ev.u.dto.cookie, i);
	}
	CU_ASSERT_EQUAL(st_of(evd).progress_calls, calls + 1);
	CHECK_RC(rapt_evd_dequeue(evd, &ev), RAPT_EAGAIN);
	CHECK_RC(rapt_evd_query(evd, &info, sizeof(info)), 0);
	CU_ASSERT_EQUAL(info.overflows, 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* Two threads dequeue from one EVD while a third injects: every event
 * arrives once, and each thread sees its events in the order pushed. */
struct racer {
	struct rapt_evd *evd;
	_Atomic uint32_t *seen;
	_Atomic uint32_t *taken;
	uint32_t disorder;
	uint32_t errors;
	pthread_t thread;
};

static void *racer_main(void *arg)
{
	struct racer *r = arg;
	uint64_t end = now_ms() + 60000, last = 0;
	struct rapt_event ev;
	bool any = false;
	int ret;

	while (atomic_load(r->taken) < NEVENTS && now_ms() < end) {
		ret = rapt_evd_dequeue(r->evd, &ev);
		if (ret == RAPT_EAGAIN)
			continue;
		if (ret || ev.u.dto.cookie >= NEVENTS || ev.evd != r->evd) {
			r->errors++;
			break;
		}
		if (any && ev.u.dto.cookie <= last)
			r->disorder++;
		any = true;
		last = ev.u.dto.cookie;
		atomic_fetch_add(&r->seen[last], 1);
		atomic_fetch_add(r->taken, 1);
	}
	return NULL;
}

static void test_dequeue_race(void)
{
	static _Atomic uint32_t seen[NEVENTS];
	_Atomic uint32_t taken = 0;
	struct racer r[2];
	uint32_t sent = 0, n, i, once = 0;
	uint64_t end;

	memset(seen, 0, sizeof(seen));
	memset(r, 0, sizeof(r));
	r[0].evd = new_evd(256, RAPT_EVD_DTO);
	for (i = 0; i < 2; i++) {
		r[i].evd = r[0].evd;
		r[i].seen = seen;
		r[i].taken = &taken;
	}
	for (i = 0; i < 2; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&r[i].thread, NULL,
						     racer_main, &r[i]), 0);
	srand(11);
	while (sent < NEVENTS) {
		n = 1 + (uint32_t)rand() % 5;
		if (n > NEVENTS - sent)
			n = NEVENTS - sent;
		end = now_ms() + WAIT_S * 1000;
		while (sent - atomic_load(&taken) + n > 200 && now_ms() < end)
			sched_yield();
		CHECK_RC(inject(r[0].evd, n), 0);
		sent += n;
	}
	for (i = 0; i < 2; i++) {
		pthread_join(r[i].thread, NULL);
		CU_ASSERT_EQUAL(r[i].errors, 0);
		CU_ASSERT_EQUAL(r[i].disorder, 0);
	}
	for (i = 0; i < NEVENTS; i++)
		once += atomic_load(&seen[i]) == 1;
	CU_ASSERT_EQUAL(once, NEVENTS);
	CU_ASSERT_EQUAL(atomic_load(&taken), NEVENTS);
	CHECK_RC(rapt_evd_free(r[0].evd), 0);
}

/* A provider that cannot arm: the waiter still sees its events (through
 * evd_progress) and naps between looks instead of spinning. */
static void test_trywait_fails(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO);
	struct rapt_event ev;
	uint64_t t0;

	CHECK_RC(fail_trywait(evd, RAPT_EIO), 0);
	t0 = now_ms();
	CHECK_RC(rapt_evd_wait(evd, 100000, 1, &ev, NULL), RAPT_ETIMEDOUT);
	CU_ASSERT_TRUE(now_ms() - t0 >= 100);
	/* About one look a millisecond, not a busy loop. */
	CU_ASSERT_TRUE(st_of(evd).trywait_block < 1000);
	CHECK_RC(inject(evd, 1), 0);
	CHECK_RC(rapt_evd_wait(evd, WAIT_S * 1000000ll, 1, &ev, NULL), 0);
	CU_ASSERT_EQUAL(ev.u.dto.cookie, 0);
	CU_ASSERT_EQUAL(st_of(evd).sleeping, 0);
	CHECK_RC(rapt_evd_free(evd), 0);
}

/* ------------------------------------------------------------------ */
/* Runner                                                              */
/* ------------------------------------------------------------------ */

/* The fixture DSO the core loaded, for its test hooks. */


static const struct test_case cases[] = {
	{ "a waiter sleeps on the provider's wait object and pushes in its own thread",
	  test_sleeps_on_wait_object },
	{ "work pending before the wait: trywait says so, no sleep",
	  test_pending_before_wait },
	{ "a zero timeout lets the provider look", test_zero_timeout_polls },
	{ "a timeout ends the sleep; trywait and wait_done pair up",
	  test_timeout },
	{ "the next waiter takes over the wait object", test_leader_hand_over },
	{ "a leader that times out hands over", test_leader_times_out },
	{ "freeing the EVD wakes the leader", test_free_cancels_leader },
	{ "a push from another thread wakes the leader",
	  test_push_from_elsewhere_wakes_leader },
	{ "four waiters, 20,000 events: each delivered once",
	  test_many_waiters },
	{ "the EVD fd wakes on the provider's wait object", test_fd_path },
	{ "out of descriptors for the EVD fd is RAPT_EMFILE", test_fd_emfile },
	{ "dequeue: queued events first; its own push leaves the fd alone",
	  test_dequeue_own_push },
	{ "dequeue: the provider's first push comes straight back, in order",
	  test_dequeue_direct },
	{ "the taken count moves with dequeues the provider never sees",
	  test_taken_count },
	{ "two threads dequeue while a third injects: once each, in order",
	  test_dequeue_race },
	{ "a provider that cannot arm is looked at, not spun on",
	  test_trywait_fails },
	{ NULL, NULL },
};


int main(void)
{
	static const struct test_suite suite = { "wait objects", cases };
	int ret;

	watchdog_start();
	if (setup("test_wait"))
		return 99;	/* the automake hard-error code */
	ret = cu_table_run(&suite, 1);
	if (rapt_ia_close(ia))
		ret = ret ? ret : 1;
	return ret;
}
