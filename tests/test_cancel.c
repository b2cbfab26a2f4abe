/* SPDX-License-Identifier: MIT */
/*
 * Thread cancellation in rapt_evd_wait() (core/evd.c, "Thread
 * cancellation"): a thread cancelled while it sleeps there leaves the EVD
 * as if its wait had timed out, and an event already handed to it goes
 * back to the head of the queue.  Driven through the public API on the
 * "wait" fixture provider (tests/waitprov/), whose EVDs have a wait
 * object, so that both kinds of sleeper are cancelled: the leader in
 * poll() on the wait object and the followers on condition variables.
 *
 * And a thread cancelled while rapt logs (core/log.c) ends at its own
 * cancellation point, never inside rapt_prov_log(): rapt logs from inside
 * its calls, some with a lock held.
 *
 * Under ThreadSanitizer the program skips: tsan runs a cancelled thread's
 * cleanup handlers from inside its poll() interceptor, which hides their
 * locking from it, so it reports races that are not there
 * (https://github.com/google/sanitizers/issues/646).
 */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include <rapt/provider.h>

#include "cu_table.h"
#include "wait_client.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* The ret of a waiter that was cancelled (it never returned). */
#define NOT_RETURNED	0x7fffffff
#define CANCEL_ROUNDS	200

static void cancel_waiter_start(struct waiter *w, struct rapt_evd *evd)
{
	memset(w, 0, sizeof(*w));
	w->evd = evd;
	w->timeout_us = RAPT_TIMEOUT_INFINITE;
	w->ret = NOT_RETURNED;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&w->thread, NULL,
					     waiter_main, w), 0);
}

/* A wait for a full queue (64 events), which these cases never fill: it
 * sleeps until cancelled. */
static void *full_waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = rapt_evd_wait(w->evd, RAPT_TIMEOUT_INFINITE, 64, &w->ev,
			       NULL);
	return NULL;
}

/* Join @w; true if a cancellation ended it. */
static bool cancel_join_only(struct waiter *w)
{
	void *res = NULL;

	CU_ASSERT_EQUAL(pthread_join(w->thread, &res), 0);
	return res == PTHREAD_CANCELED;
}

/* Cancel @w and join it; true if the cancellation ended it. */
static bool cancel_join(struct waiter *w)
{
	CU_ASSERT_EQUAL(pthread_cancel(w->thread), 0);
	return cancel_join_only(w);
}

/* Free @evd if nobody waits on it any more (else rapt_evd_free() would
 * wait for the stale waiter forever: leak it, the case has failed). */
static void free_if_unwaited(struct rapt_evd *evd)
{
	if (until_waiters(evd, 0))
		CHECK_RC(rapt_evd_free(evd), 0);
}

/*
 * The wakeup that races with a leader's sleep, made deterministic: in the
 * leader's own thread, just before it sleeps (the fixture's trywait
 * hook), an event is posted, which the core grants to the leader, and
 * the thread is cancelled, which acts once the sleep begins.  If @fill,
 * that many more events are posted after it and a completion is made
 * pending, which the provider pushes when the sleep ends.
 */
struct grant_cancel {
	struct rapt_evd *evd;
	unsigned int fill;
	int post_rc;
	int fill_rc;
	int over_rc;
	int cancel_rc;
};

#define GRANTED_MARK	((void *)0x77)

static void *fill_mark(unsigned int i)
{
	return (void *)(uintptr_t)(0x100 + i);
}

static void post_and_cancel_self(void *arg)
{
	struct grant_cancel *g = arg;
	unsigned int i;

	g->post_rc = rapt_evd_post_software(g->evd, GRANTED_MARK);
	for (i = 0; i < g->fill && !g->fill_rc; i++)
		g->fill_rc = rapt_evd_post_software(g->evd, fill_mark(i));
	if (g->fill)	/* pushed when the sleep ends: no room for it */
		g->over_rc = inject(g->evd, 1);
	g->cancel_rc = pthread_cancel(pthread_self());
}

/* A waiter on @g->evd, made to go through post_and_cancel_self(). */
static void grant_then_cancel(struct grant_cancel *g)
{
	struct waiter w;

	CHECK_RC(on_trywait(g->evd, post_and_cancel_self, g), 0);
	cancel_waiter_start(&w, g->evd);
	CU_ASSERT_TRUE(cancel_join_only(&w));
	CU_ASSERT_EQUAL(w.ret, NOT_RETURNED);
	CHECK_RC(g->post_rc, 0);
	CU_ASSERT_EQUAL(g->cancel_rc, 0);
}

static void test_cancel_after_grant(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO | RAPT_EVD_SOFTWARE);
	struct grant_cancel g = { .evd = evd };
	struct wait_prov_stats st;
	struct rapt_event ev;

	grant_then_cancel(&g);
	/* The granted event is back, ahead of a later one. */
	CHECK_RC(rapt_evd_post_software(evd, (void *)0x78), 0);
	CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), 0);
	CU_ASSERT_EQUAL(ev.type, RAPT_EV_SOFTWARE);
	CU_ASSERT_PTR_EQUAL(ev.u.sw.pointer, GRANTED_MARK);
	CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), 0);
	CU_ASSERT_PTR_EQUAL(ev.u.sw.pointer, (void *)0x78);
	CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), RAPT_ETIMEDOUT);
	/* The sleep the cancellation ended was reported done. */
	st = st_of(evd);
	CU_ASSERT_EQUAL(st.sleeping, 0);
	CU_ASSERT_EQUAL(st.wait_done, st.trywait_block - st.trywait_eagain);
	free_if_unwaited(evd);
}

/* The same with the queue filled behind the grant (3 events, then a
 * completion that overflows it, whose loss the EVD reports in its own
 * last slot): no slot is left for the granted event, which is counted as
 * lost in that report. */
static void test_cancel_after_grant_full(void)
{
	struct rapt_evd *evd = new_evd(3, RAPT_EVD_DTO | RAPT_EVD_SOFTWARE);
	struct grant_cancel g = { .evd = evd, .fill = 3 };
	struct rapt_event ev;
	unsigned int i;

	grant_then_cancel(&g);
	CHECK_RC(g.fill_rc, 0);
	CHECK_RC(g.over_rc, 0);
	for (i = 0; i < 3; i++) {
		CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), 0);
		CU_ASSERT_EQUAL(ev.type, RAPT_EV_SOFTWARE);
		CU_ASSERT_PTR_EQUAL(ev.u.sw.pointer, fill_mark(i));
	}
	CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), 0);
	CU_ASSERT_EQUAL(ev.type, RAPT_EV_ASYNC_EVD_OVERFLOW);
	CU_ASSERT_EQUAL(ev.u.async.count, 2);
	CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), RAPT_ETIMEDOUT);
	free_if_unwaited(evd);
}

/*
 * A leader sleeping on the wait object and a follower on its condition
 * variable are cancelled: each leaves the line (the leader's sleep still
 * ends in wait_done), the EVD takes and delivers events as before, and
 * rapt_evd_free() returns.
 */
static void test_cancel_sleepers(void)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO | RAPT_EVD_SOFTWARE);
	struct wait_prov_stats st;
	struct rapt_event ev;
	struct waiter a, b;

	cancel_waiter_start(&a, evd);
	CU_ASSERT_TRUE_FATAL(until_sleeping(evd, 1));
	cancel_waiter_start(&b, evd);
	CU_ASSERT_TRUE_FATAL(until_waiters(evd, 2));
	/* The follower first: the leader keeps the wait object. */
	CU_ASSERT_TRUE(cancel_join(&b));
	CU_ASSERT_EQUAL(b.ret, NOT_RETURNED);
	CU_ASSERT_TRUE(until_waiters(evd, 1));
	CU_ASSERT_EQUAL(st_of(evd).sleeping, 1);
	CU_ASSERT_TRUE(cancel_join(&a));
	CU_ASSERT_EQUAL(a.ret, NOT_RETURNED);
	CU_ASSERT_TRUE(until_waiters(evd, 0));
	st = st_of(evd);
	CU_ASSERT_EQUAL(st.sleeping, 0);
	CU_ASSERT_EQUAL(st.wait_done, st.trywait_block - st.trywait_eagain);
	/* A new waiter leads and gets what comes. */
	cancel_waiter_start(&a, evd);
	CU_ASSERT_TRUE(until_sleeping(evd, 1));
	CHECK_RC(inject(evd, 1), 0);
	CU_ASSERT_EQUAL(pthread_join(a.thread, NULL), 0);
	CHECK_RC(a.ret, 0);
	CU_ASSERT_EQUAL(a.ev.type, RAPT_EV_DTO);
	CHECK_RC(rapt_evd_post_software(evd, (void *)0x11), 0);
	CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), 0);
	CU_ASSERT_PTR_EQUAL(ev.u.sw.pointer, (void *)0x11);
	free_if_unwaited(evd);
}

/*
 * An event posted to a waiter that is cancelled right after is delivered
 * once: to the waiter if its wait returned, else to the next wait, and
 * before what is posted later.  Now and then (a few rounds in 200 on a
 * 2-CPU machine) the cancellation acts after the grant, the waiter not
 * yet back from its sleep; test_cancel_after_grant() makes that case
 * every time for a leader, this covers followers as well.
 * @follower: another waiter sleeps first, so that the one cancelled
 * is a follower on its condition variable rather than the leader.
 */
static void cancel_after_post(bool follower)
{
	struct rapt_evd *evd = new_evd(64, RAPT_EVD_DTO | RAPT_EVD_SOFTWARE);
	unsigned int failed = CU_get_number_of_failures();
	unsigned int i, cancelled = 0, returned = 0;
	struct rapt_event ev;
	struct waiter lead, w;

	if (follower) {
		/* It leads, asleep, and is never granted: its threshold is
		 * the whole queue. */
		memset(&lead, 0, sizeof(lead));
		lead.evd = evd;
		lead.ret = NOT_RETURNED;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&lead.thread, NULL,
						     full_waiter_main, &lead),
				      0);
		CU_ASSERT_TRUE_FATAL(until_sleeping(evd, 1));
	}
	for (i = 0; i < CANCEL_ROUNDS; i++) {
		void *mark = (void *)(uintptr_t)(0x1000 + 2 * i);

		cancel_waiter_start(&w, evd);
		CU_ASSERT_TRUE_FATAL(until_waiters(evd, follower ? 2 : 1));
		CHECK_RC(rapt_evd_post_software(evd, mark), 0);
		if (cancel_join(&w)) {
			cancelled++;
			CU_ASSERT_EQUAL(w.ret, NOT_RETURNED);
		} else {
			returned++;
			CHECK_RC(w.ret, 0);
			CU_ASSERT_PTR_EQUAL(w.ev.u.sw.pointer, mark);
		}
		CHECK_RC(rapt_evd_post_software(evd, (char *)mark + 1), 0);
		if (w.ret != 0) {
			CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), 0);
			CU_ASSERT_PTR_EQUAL(ev.u.sw.pointer, mark);
		}
		CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), 0);
		CU_ASSERT_PTR_EQUAL(ev.u.sw.pointer, (char *)mark + 1);
		CHECK_RC(rapt_evd_wait(evd, 0, 1, &ev, NULL), RAPT_ETIMEDOUT);
		if (CU_get_number_of_failures() > failed)
			break;
	}
	printf("\n  %u rounds: %u waiters cancelled, %u returned first ",
	       cancelled + returned, cancelled, returned);
	if (follower) {
		CU_ASSERT_TRUE(cancel_join(&lead));
		CU_ASSERT_EQUAL(lead.ret, NOT_RETURNED);
	}
	free_if_unwaited(evd);
}

static void test_cancel_after_post_leader(void)
{
	cancel_after_post(false);
}

static void test_cancel_after_post_follower(void)
{
	cancel_after_post(true);
}

/* A thread that logs error lines (printed at the default level) in a
 * loop, its one cancellation point its own pthread_testcancel(). */
struct logger {
	pthread_t thread;
	atomic_ulong lines;
	atomic_int in_log;	/* inside rapt_prov_log() */
	atomic_int died_in_log;	/* where the cancel found it: -1 not yet */
};

static void logger_cancelled(void *arg)
{
	struct logger *l = arg;

	atomic_store(&l->died_in_log, atomic_load(&l->in_log));
}

static void *logger_main(void *arg)
{
	struct logger *l = arg;

	pthread_cleanup_push(logger_cancelled, l);
	for (;;) {
		atomic_store(&l->in_log, 1);
		rapt_prov_log(RAPT_LOG_ERROR, "core", __func__, __LINE__,
			      "line %lu of a thread about to be cancelled",
			      atomic_load(&l->lines));
		atomic_store(&l->in_log, 0);
		atomic_fetch_add(&l->lines, 1);
		pthread_testcancel();
	}
	pthread_cleanup_pop(0);
	return NULL;
}

#define LOG_ROUNDS	20
#define LOG_LINES	1000

static void test_cancel_logging(void)
{
	int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
	struct logger l;
	int round, inside = 0, outside = 0;
	unsigned long seen;

	CU_ASSERT_FATAL(saved >= 0 && null >= 0);
	CU_ASSERT_FATAL(rapt_prov_log_enabled(RAPT_LOG_ERROR, "core"));
	CU_ASSERT_EQUAL_FATAL(dup2(null, STDERR_FILENO), STDERR_FILENO);
	for (round = 0; round < LOG_ROUNDS; round++) {
		memset(&l, 0, sizeof(l));
		atomic_store(&l.died_in_log, -1);
		if (pthread_create(&l.thread, NULL, logger_main, &l))
			break;
		/* Cancel once the thread has logged for a while: almost all
		 * of its time is then inside rapt_prov_log(). */
		do
			sched_yield();
		while (atomic_load(&l.lines) < LOG_LINES * (round + 1u));
		seen = atomic_load(&l.lines);
		pthread_cancel(l.thread);
		pthread_join(l.thread, NULL);
		/* The cleanup handler ran and says where: 0 outside. */
		switch (atomic_load(&l.died_in_log)) {
		case 0:
			outside++;
			break;
		case 1:
			inside++;
			fprintf(stdout, "\n  round %d: cancelled inside rapt_prov_log() after %lu lines",
				round, seen);
			break;
		default:
			fprintf(stdout, "\n  round %d: the thread ended without its cleanup handler",
				round);
			break;
		}
	}
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(null);
	CU_ASSERT_EQUAL(inside, 0);
	CU_ASSERT_EQUAL(outside, LOG_ROUNDS);
}

static const struct test_case cases[] = {
	{ "cancelled waiters, leader and follower, leave the line",
	  test_cancel_sleepers },
	{ "a leader granted an event, then cancelled, gives it back",
	  test_cancel_after_grant },
	{ "... and counts it lost if the queue filled up meanwhile",
	  test_cancel_after_grant_full },
	{ "an event granted to a cancelled leader is not lost",
	  test_cancel_after_post_leader },
	{ "an event granted to a cancelled follower is not lost",
	  test_cancel_after_post_follower },
	{ "a thread cancelled while rapt logs ends outside the log call",
	  test_cancel_logging },
	{ NULL, NULL },
};

int main(void)
{
	static const struct test_suite suite = { "cancellation", cases };
	int ret;

#ifdef UNDER_TSAN
	cu_skip("ThreadSanitizer cannot follow a thread cancelled in poll() "
		"(google/sanitizers#646): it would report races that are not "
		"there");
	return cu_exit_status(0);
#endif
	watchdog_start();
	if (setup("test_cancel"))
		return 99;	/* the automake hard-error code */
	ret = cu_table_run(&suite, 1);
	if (rapt_ia_close(ia))
		ret = ret ? ret : 1;
	return ret;
}
