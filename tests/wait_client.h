/* SPDX-License-Identifier: MIT */
/*
 * What the test programs on the "wait" fixture provider (tests/waitprov/)
 * share: the IA and the fixture's hooks, waits on a condition with a
 * deadline, a waiter thread, and a watchdog.  Test-only, header-only;
 * include after <CUnit/Basic.h> and <rapt/provider.h>.
 */
#ifndef RAPT_TESTS_WAIT_CLIENT_H
#define RAPT_TESTS_WAIT_CLIENT_H

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check_rc.h"
#include "waitprov/wait_prov.h"

/* Bound on every wait that must end, seconds. */
#define WAIT_S		10

static struct rapt_ia *ia;
static wait_prov_inject_fn inject;
static wait_prov_stats_fn stats;
static wait_prov_fail_fn fail_trywait;
static wait_prov_on_trywait_fn on_trywait;

static const char *wc_prog = "test";

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline struct wait_prov_stats st_of(struct rapt_evd *evd)
{
	struct wait_prov_stats st = { 0 };

	CU_ASSERT_EQUAL(stats(evd, &st), 0);
	return st;
}

/* Poll until @n threads sleep on @evd's doorbell; false after WAIT_S. */
static inline bool until_sleeping(struct rapt_evd *evd, int n)
{
	uint64_t end = now_ms() + WAIT_S * 1000;

	while (now_ms() < end) {
		if (st_of(evd).sleeping == n)
			return true;
		sched_yield();
	}
	return false;
}

/* Poll until @n threads are inside rapt_evd_wait() on @evd. */
static inline bool until_waiters(struct rapt_evd *evd, uint32_t n)
{
	uint64_t end = now_ms() + WAIT_S * 1000;
	struct rapt_evd_info info;

	while (now_ms() < end) {
		if (!rapt_evd_query(evd, &info, sizeof(info)) &&
		    info.waiters == n)
			return true;
		sched_yield();
	}
	return false;
}

static inline struct rapt_evd *new_evd(unsigned int qlen, unsigned int streams)
{
	struct rapt_evd *evd = NULL;

	CHECK_RC(rapt_evd_create(ia, qlen, streams, &evd), 0);
	return evd;
}

/* ------------------------------------------------------------------ */
/* A waiter thread                                                     */
/* ------------------------------------------------------------------ */

struct waiter {
	pthread_t thread;
	struct rapt_evd *evd;
	int64_t timeout_us;
	int ret;
	struct rapt_event ev;
};

static inline void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = rapt_evd_wait(w->evd, w->timeout_us, 1, &w->ev, NULL);
	return NULL;
}

static inline void waiter_start(struct waiter *w, struct rapt_evd *evd,
			 int64_t timeout_us)
{
	memset(w, 0, sizeof(*w));
	w->evd = evd;
	w->timeout_us = timeout_us;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&w->thread, NULL, waiter_main, w),
			      0);
}

static inline int find_hooks(void)
{
	char path[4096];
	void *dl;

	snprintf(path, sizeof(path), "%s/librapt-wait-pv%d.so",
		 WAITPROV_DIR, RAPT_PROVIDER_ABI);
	dl = dlopen(path, RTLD_NOW);
	if (!dl) {
		fprintf(stderr, "%s: %s\n", wc_prog, dlerror());
		return -1;
	}
	inject = (wait_prov_inject_fn)dlsym(dl, "wait_prov_inject");
	stats = (wait_prov_stats_fn)dlsym(dl, "wait_prov_stats");
	fail_trywait = (wait_prov_fail_fn)dlsym(dl, "wait_prov_fail_trywait");
	on_trywait = (wait_prov_on_trywait_fn)dlsym(dl, "wait_prov_on_trywait");
	return inject && stats && fail_trywait && on_trywait ? 0 : -1;
}

/* Open the IA on the fixture and find its hooks; @prog names the
 * program in messages, and in the watchdog's. */
static inline int setup(const char *prog)
{
	int ret;

	wc_prog = prog;
	setenv("RAPT_PROVIDER_PATH", WAITPROV_DIR, 1);
	setenv("RAPT_PROVIDER", "wait", 1);
	setenv("RAPT_CONF", "/dev/null", 1);
	ret = rapt_ia_open("wait", &ia);
	if (ret) {
		fprintf(stderr, "%s: rapt_ia_open: %s: %s\n", prog,
			rapt_err_name(ret), rapt_last_error());
		return -1;
	}
	return find_hooks();
}

/* A wait that never ends (a cancelled waiter left holding the EVD's
 * lock, say) fails the program rather than hanging make check. */
#define WATCHDOG_S	300

static inline void watchdog(int sig)
{
	static const char msg[] = ": hung for 300 s, giving up\n";

	(void)sig;
	if (write(STDERR_FILENO, wc_prog, strlen(wc_prog)) < 0 ||
	    write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static inline void watchdog_start(void)
{
	signal(SIGALRM, watchdog);
	alarm(WATCHDOG_S);
}

#endif /* RAPT_TESTS_WAIT_CLIENT_H */
