/* SPDX-License-Identifier: MIT */
/*
 * Area "evd": event dispatchers.  wait with thresholds and timeouts,
 * dequeue and batch dequeue, software events, the fd with its arm step
 * under epoll (no lost wakeup), several waiting threads, freeing under a
 * waiter, stream merging, and overflow reported as an async event.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "conf.h"

static void t_create_args(struct conf_ctx *c)
{
	struct rapt_evd *evd, *a1, *a2;
	struct rapt_evd_info vi;

	EXPECT_RC(rapt_evd_create(c->ia, 0, RAPT_EVD_DTO, &evd), RAPT_EINVAL);
	EXPECT_RC(rapt_evd_create(c->ia, 4, 0, &evd), RAPT_EINVAL);
	EXPECT_RC(rapt_evd_create(c->ia, 4, 1u << 20, &evd), RAPT_EINVAL);
	EXPECT_RC(rapt_evd_create(c->ia, 4, RAPT_EVD_DTO, NULL), RAPT_EINVAL);
	if (c->attr.max_evd_qlen < UINT32_MAX)
		EXPECT_RC(rapt_evd_create(c->ia, c->attr.max_evd_qlen + 1,
					  RAPT_EVD_DTO, &evd), RAPT_ERANGE);
	REQUIRE_OK(conf_evd_create(c, 7, RAPT_EVD_DTO, &evd));
	REQUIRE_OK(rapt_evd_query(evd, &vi, sizeof(vi)));
	EXPECT_EQ(vi.qlen, 7);
	EXPECT_EQ(vi.streams, RAPT_EVD_DTO);
	EXPECT_EQ(vi.count, 0);
	EXPECT_EQ(vi.waiters, 0);
	EXPECT_EQ(vi.overflows, 0);
	EXPECT_RC(rapt_evd_query(evd, NULL, sizeof(vi)), RAPT_EINVAL);
	/* One async EVD per IA. */
	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_ASYNC, &a1));
	EXPECT_RC(rapt_evd_create(c->ia, 4, RAPT_EVD_ASYNC, &a2), RAPT_EEXIST);
	REQUIRE_OK(conf_free(c, a1));
	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_ASYNC, &a2));
out:
	return;
}

/* Streams the IA says may share an EVD can; the others RAPT_ENOTSUP. */
static void t_merge(struct conf_ctx *c)
{
	unsigned int i, j, streams;
	struct rapt_evd *evd;
	int rc;

	for (i = 0; i < RAPT_EVD_NSTREAMS; i++) {
		for (j = i + 1; j < RAPT_EVD_NSTREAMS; j++) {
			streams = (1u << i) | (1u << j);
			rc = rapt_evd_create(c->ia, 4, streams, &evd);
			if (c->attr.evd_merge[i] & (1u << j))
				EXPECT_MSG(rc == 0,
					   "streams %#x may share an EVD by evd_merge, but rapt_evd_create returned %s",
					   streams, rapt_err_name(rc));
			else
				EXPECT_MSG(rc == RAPT_ENOTSUP,
					   "streams %#x may not share an EVD by evd_merge, but rapt_evd_create returned %s",
					   streams, rapt_err_name(rc));
			if (!rc)
				EXPECT_OK(rapt_evd_free(evd));
		}
	}
	rc = rapt_evd_create(c->ia, 4, RAPT_EVD_ALL_STREAMS, &evd);
	if (c->attr.caps & RAPT_CAP_MULTI_EVD_STREAMS) {
		EXPECT_OK(rc);
	} else {
		EXPECT_RC(rc, RAPT_ENOTSUP);
	}
	if (!rc)
		EXPECT_OK(rapt_evd_free(evd));
}

static void t_empty(struct conf_ctx *c)
{
	struct rapt_event ev[4];
	struct rapt_evd *evd;
	int64_t t0;

	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_SOFTWARE, &evd));
	EXPECT_RC(rapt_evd_dequeue(evd, &ev[0]), RAPT_EAGAIN);
	EXPECT_EQ(rapt_evd_dequeue_batch(evd, ev, 4), 0);
	t0 = conf_now_us();
	EXPECT_RC(rapt_evd_wait(evd, 0, 1, &ev[0], NULL), RAPT_ETIMEDOUT);
	EXPECT_MSG(conf_now_us() - t0 < 500000,
		   "a zero-timeout wait took %lld us",
		   (long long)(conf_now_us() - t0));
out:
	return;
}

static void t_wait_timeout(struct conf_ctx *c)
{
	struct rapt_event ev;
	struct rapt_evd *evd;
	int64_t t0, dt;

	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_SOFTWARE, &evd));
	t0 = conf_now_us();
	EXPECT_RC(rapt_evd_wait(evd, 100000, 1, &ev, NULL), RAPT_ETIMEDOUT);
	dt = conf_now_us() - t0;
	EXPECT_MSG(dt >= 95000, "a 100 ms wait returned after %lld us",
		   (long long)dt);
	EXPECT_MSG(dt < conf_tmo(c, 2000) * 1000LL,
		   "a 100 ms wait returned after %lld us", (long long)dt);
	EXPECT_RC(rapt_evd_wait(evd, -5, 1, &ev, NULL), RAPT_EINVAL);
	EXPECT_RC(rapt_evd_wait(evd, 0, 1, NULL, NULL), RAPT_EINVAL);
out:
	return;
}

static void t_threshold(struct conf_ctx *c)
{
	struct rapt_evd_info vi;
	struct rapt_event ev;
	struct rapt_evd *evd;
	unsigned int nmore = 99;

	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_SOFTWARE, &evd));
	EXPECT_RC(rapt_evd_wait(evd, 0, 0, &ev, NULL), RAPT_ERANGE);
	EXPECT_RC(rapt_evd_wait(evd, 0, 9, &ev, NULL), RAPT_ERANGE);
	REQUIRE_OK(rapt_evd_post_software(evd, (void *)1));
	REQUIRE_OK(rapt_evd_post_software(evd, (void *)2));
	/* Below the threshold: time out and take nothing. */
	EXPECT_RC(rapt_evd_wait(evd, 50000, 3, &ev, NULL), RAPT_ETIMEDOUT);
	REQUIRE_OK(rapt_evd_query(evd, &vi, sizeof(vi)));
	EXPECT_EQ(vi.count, 2);
	REQUIRE_OK(rapt_evd_post_software(evd, (void *)3));
	REQUIRE_OK(rapt_evd_wait(evd, 50000, 3, &ev, &nmore));
	EXPECT_EQ(ev.type, RAPT_EV_SOFTWARE);
	EXPECT(ev.u.sw.pointer == (void *)1);
	EXPECT_EQ(nmore, 2);
	REQUIRE_OK(rapt_evd_wait(evd, 0, 1, &ev, &nmore));
	EXPECT(ev.u.sw.pointer == (void *)2);
	EXPECT_EQ(nmore, 1);
	/* Exactly the qlen is a valid threshold. */
	EXPECT_RC(rapt_evd_wait(evd, 10000, 8, &ev, NULL), RAPT_ETIMEDOUT);
out:
	return;
}

static void t_software(struct conf_ctx *c)
{
	struct rapt_evd *evd, *dto;
	struct rapt_evd_info vi;
	struct rapt_event ev;
	unsigned int i;
	int x;

	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_SOFTWARE, &evd));
	REQUIRE_OK(conf_evd_create(c, 4, RAPT_EVD_DTO, &dto));
	EXPECT_RC(rapt_evd_post_software(dto, &x), RAPT_EINVAL);
	for (i = 0; i < 4; i++)
		REQUIRE_OK(rapt_evd_post_software(evd, (char *)&x + i));
	/* Full: the caller is told, nothing is lost or counted. */
	EXPECT_RC(rapt_evd_post_software(evd, NULL), RAPT_EOVERFLOW);
	REQUIRE_OK(rapt_evd_query(evd, &vi, sizeof(vi)));
	EXPECT_EQ(vi.count, 4);
	EXPECT_EQ(vi.overflows, 0);
	for (i = 0; i < 4; i++) {
		REQUIRE_OK(rapt_evd_dequeue(evd, &ev));
		EXPECT_EQ(ev.type, RAPT_EV_SOFTWARE);
		EXPECT(ev.evd == evd);
		EXPECT_MSG(ev.u.sw.pointer == (char *)&x + i,
			   "software event %u out of order or altered", i);
	}
	EXPECT_RC(rapt_evd_dequeue(evd, &ev), RAPT_EAGAIN);
out:
	return;
}

static void t_batch(struct conf_ctx *c)
{
	struct rapt_event ev[16];
	struct rapt_evd *evd;
	uintptr_t next = 1;
	int n, i;

	REQUIRE_OK(conf_evd_create(c, 16, RAPT_EVD_SOFTWARE, &evd));
	for (i = 1; i <= 10; i++)
		REQUIRE_OK(rapt_evd_post_software(evd, (void *)(uintptr_t)i));
	n = rapt_evd_dequeue_batch(evd, ev, 4);
	REQUIRE_EQ(n, 4);
	for (i = 0; i < n; i++)
		EXPECT(ev[i].u.sw.pointer == (void *)next++);
	n = rapt_evd_dequeue_batch(evd, ev, 16);
	REQUIRE_EQ(n, 6);
	for (i = 0; i < n; i++) {
		EXPECT(ev[i].type == RAPT_EV_SOFTWARE && ev[i].evd == evd);
		EXPECT(ev[i].u.sw.pointer == (void *)next++);
	}
	EXPECT_EQ(rapt_evd_dequeue_batch(evd, ev, 16), 0);
out:
	return;
}

static int epoll_on(struct conf_ctx *c, int fd)
{
	struct epoll_event e = { .events = EPOLLIN };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e)) {
		FAIL("epoll on the EVD's fd %d: %m", fd);
		if (ep >= 0)
			close(ep);
		return -1;
	}
	return ep;
}

static void t_fd(struct conf_ctx *c)
{
	struct epoll_event e;
	struct rapt_evd *evd;
	struct rapt_event ev;
	int fd = -1, fd2 = -1, ep = -1;

	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_SOFTWARE, &evd));
	SKIP_UNLESS_CAP(RAPT_CAP_EVD_FD, rapt_evd_get_fd(evd, &fd));
	EXPECT_RC(rapt_evd_get_fd(evd, NULL), RAPT_EINVAL);
	REQUIRE_OK(rapt_evd_get_fd(evd, &fd));
	REQUIRE_OK(rapt_evd_get_fd(evd, &fd2));
	EXPECT_EQ(fd, fd2);
	ep = epoll_on(c, fd);
	REQUIRE(ep >= 0);
	REQUIRE_OK(rapt_evd_arm(evd));
	EXPECT_EQ(epoll_wait(ep, &e, 1, 0), 0);
	REQUIRE_OK(rapt_evd_post_software(evd, (void *)7));
	EXPECT_MSG(epoll_wait(ep, &e, 1, conf_tmo(c, 2000)) == 1,
		   "an armed EVD's fd did not poll readable after an event");
	REQUIRE_OK(rapt_evd_dequeue(evd, &ev));
	EXPECT(ev.u.sw.pointer == (void *)7);
	/* Armed again, nothing queued: quiet. */
	REQUIRE_OK(rapt_evd_arm(evd));
	EXPECT_EQ(epoll_wait(ep, &e, 1, 0), 0);
	/* Events queued: arm refuses so the caller drains first. */
	REQUIRE_OK(rapt_evd_post_software(evd, (void *)8));
	EXPECT_RC(rapt_evd_arm(evd), RAPT_EAGAIN);
	REQUIRE_OK(rapt_evd_dequeue(evd, &ev));
	REQUIRE_OK(rapt_evd_arm(evd));
	EXPECT_EQ(epoll_wait(ep, &e, 1, 0), 0);
out:
	if (ep >= 0)
		close(ep);
}

struct producer {
	struct rapt_evd *evd;
	unsigned int n;
	unsigned int seed;
	unsigned int full;	/* posts that found the EVD full */
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	unsigned int i = 0;

	while (i < p->n) {
		if (rand_r(&p->seed) % 8 == 0)
			usleep(rand_r(&p->seed) % 200);
		if (rapt_evd_post_software(p->evd,
					   (void *)(uintptr_t)(i + 1)) == 0)
			i++;
		else
			p->full++, usleep(50);
	}
	return NULL;
}

/* The arm / poll / drain loop never sleeps while an event is queued. */
static void t_fd_no_lost_wakeup(struct conf_ctx *c)
{
	struct producer p = { .n = 3000, .seed = 42 };
	unsigned int got = 0, expect = 1;
	struct rapt_evd_info vi;
	struct rapt_event ev[32];
	struct epoll_event e;
	pthread_t th;
	bool started = false;
	int fd = -1, ep = -1, n, i, rc;

	REQUIRE_OK(conf_evd_create(c, 64, RAPT_EVD_SOFTWARE, &p.evd));
	SKIP_UNLESS_CAP(RAPT_CAP_EVD_FD, rapt_evd_get_fd(p.evd, &fd));
	REQUIRE_OK(rapt_evd_get_fd(p.evd, &fd));
	ep = epoll_on(c, fd);
	REQUIRE(ep >= 0);
	REQUIRE(pthread_create(&th, NULL, produce, &p) == 0);
	started = true;
	while (got < p.n) {
		rc = rapt_evd_arm(p.evd);
		if (rc == 0) {
			n = epoll_wait(ep, &e, 1, conf_tmo(c, 3000));
			if (n == 0) {
				(void)rapt_evd_query(p.evd, &vi, sizeof(vi));
				FAIL("lost wakeup: epoll_wait timed out after arm with %u events queued, %u of %u received",
				     vi.count, got, p.n);
				break;
			}
		} else if (!EXPECT_RC(rc, RAPT_EAGAIN)) {
			break;
		}
		while ((n = rapt_evd_dequeue_batch(p.evd, ev, 32)) > 0) {
			for (i = 0; i < n; i++, got++) {
				if ((uintptr_t)ev[i].u.sw.pointer != expect++) {
					FAIL("software events out of order at %u",
					     got);
					got = p.n;
					break;
				}
			}
		}
	}
	EXPECT_EQ(got, p.n);
out:
	if (started)
		pthread_join(th, NULL);
	if (ep >= 0)
		close(ep);
}

struct waiter {
	struct rapt_evd *evd;
	int64_t timeout_us;
	int rc;
	struct rapt_event ev;
};

static void *wait_one(void *arg)
{
	struct waiter *w = arg;

	w->rc = rapt_evd_wait(w->evd, w->timeout_us, 1, &w->ev, NULL);
	return NULL;
}

/* Wait until @n threads are blocked in rapt_evd_wait on @evd. */
static bool waiters_reach(struct conf_ctx *c, struct rapt_evd *evd,
			  unsigned int n)
{
	struct rapt_evd_info vi = { 0 };
	int i;

	for (i = 0; i < conf_tmo(c, 500); i++) {
		if (rapt_evd_query(evd, &vi, sizeof(vi)) == 0 &&
		    vi.waiters == n)
			return true;
		conf_sleep_ms(10);
	}
	return EXPECT_MSG(false, "expected %u waiters, rapt_evd_query says %u",
			  n, vi.waiters);
}

#define NWAITERS 4

static void t_multi_waiters(struct conf_ctx *c)
{
	struct waiter w[NWAITERS];
	pthread_t th[NWAITERS];
	unsigned int seen = 0, i, started = 0;
	uintptr_t p;

	memset(w, 0, sizeof(w));
	REQUIRE_OK(conf_evd_create(c, 16, RAPT_EVD_SOFTWARE, &w[0].evd));
	for (i = 0; i < NWAITERS; i++) {
		w[i].evd = w[0].evd;
		w[i].timeout_us = conf_tmo(c, 10000) * 1000LL;
		REQUIRE(pthread_create(&th[i], NULL, wait_one, &w[i]) == 0);
		started++;
	}
	TRY(!waiters_reach(c, w[0].evd, NWAITERS));
	for (i = 0; i < NWAITERS; i++) {
		p = (uintptr_t)1 << i;
		REQUIRE_OK(rapt_evd_post_software(w[0].evd, (void *)p));
	}
out:
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < started && !conf_failed(c); i++) {
		EXPECT_OK(w[i].rc);
		p = (uintptr_t)w[i].ev.u.sw.pointer;
		EXPECT_MSG(p && !(seen & p),
			   "waiter %u got event %#lx, seen %#x: each event goes to exactly one waiter",
			   i, (unsigned long)p, seen);
		seen |= (unsigned int)p;
	}
	if (started == NWAITERS && !conf_failed(c))
		EXPECT_EQ(seen, (1u << NWAITERS) - 1);
}

static void t_free_waiter(struct conf_ctx *c)
{
	struct waiter w = { .timeout_us = RAPT_TIMEOUT_INFINITE };
	pthread_t th;

	REQUIRE_OK(rapt_evd_create(c->ia, 4, RAPT_EVD_SOFTWARE, &w.evd));
	REQUIRE(pthread_create(&th, NULL, wait_one, &w) == 0);
	if (waiters_reach(c, w.evd, 1))
		EXPECT_OK(rapt_evd_free(w.evd));
	else
		(void)rapt_evd_post_software(w.evd, NULL);
	pthread_join(th, NULL);
	EXPECT_RC(w.rc, RAPT_ECANCELED);
out:
	return;
}

/*
 * Overflow: the active side's receive EVD holds 2 events; the passive side
 * sends 4 messages into 4 posted receives.  2 completions are lost, which
 * is counted and reported as an ASYNC_EVD_OVERFLOW event, on the IA's
 * async EVD if there is one (@async), else on the EVD itself.
 */
static void overflow_active(struct conf_ctx *c, bool async)
{
	struct rapt_evd *aevd = NULL, *place;
	struct conf_set_opts o = { .qlen = 2 };
	struct rapt_evd_info vi = { 0 };
	struct conf_ep_set s;
	struct rapt_event ev;
	unsigned int i, dto = 0, ovf = 0;

	if (async)
		REQUIRE_OK(conf_evd_create(c, 16, RAPT_EVD_ASYNC, &aevd));
	TRY(conf_pair_active(c, &s, &o, 4, 64));
	TRY(conf_barrier(c, "connected"));
	/* The passive side says all 4 sends completed. */
	TRY(conf_barrier(c, "sent"));
	for (i = 0; i < (unsigned int)conf_tmo(c, 500); i++) {
		REQUIRE_OK(rapt_evd_query(s.recv_evd, &vi, sizeof(vi)));
		if (vi.overflows >= 2)
			break;
		conf_sleep_ms(10);
	}
	EXPECT_EQU(vi.overflows, 2);
	place = async ? aevd : s.recv_evd;
	while (conf_wait(c, place, 200, &ev) == 0) {
		if (ev.type == RAPT_EV_DTO) {
			dto++;
			EXPECT_EQ(ev.u.dto.status, RAPT_DTO_SUCCESS);
		} else if (EXPECT_EQ(ev.type, RAPT_EV_ASYNC_EVD_OVERFLOW)) {
			ovf++;
			EXPECT(ev.u.async.handle == (void *)s.recv_evd);
			EXPECT_MSG(ev.u.async.count >= 1 &&
				   ev.u.async.count <= 2,
				   "overflow event counts %llu lost events",
				   (unsigned long long)ev.u.async.count);
		}
	}
	EXPECT_MSG(ovf == 1, "%u ASYNC_EVD_OVERFLOW events on the %s EVD",
		   ovf, async ? "async" : "overflowing");
	if (async) {
		while (rapt_evd_dequeue(s.recv_evd, &ev) == 0)
			dto++;
	}
	EXPECT_EQ(dto, 2);
out:
	return;
}

static void overflow_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;
	unsigned int i;

	TRY(conf_pair_passive(c, &s, NULL, 0, 0));
	TRY(conf_barrier(c, "connected"));
	conf_fill(s.buf, 256, 1);
	for (i = 0; i < 4; i++)
		TRY(conf_send_msg(c, &s, i * 64, 64, i));
	TRY(conf_barrier(c, "sent"));
out:
	return;
}

static void t_overflow_async(struct conf_ctx *c)
{
	overflow_active(c, true);
}

static void t_overflow_self(struct conf_ctx *c)
{
	overflow_active(c, false);
}

static const struct conf_test evd_tests[] = {
	{ "create_args", "qlen, streams and the one async EVD per IA are checked",
	  t_create_args, NULL },
	{ "merge", "streams share an EVD exactly as evd_merge says, else RAPT_ENOTSUP",
	  t_merge, NULL },
	{ "empty", "dequeue on empty is RAPT_EAGAIN, batch 0, a 0 wait times out at once",
	  t_empty, NULL },
	{ "wait_timeout", "a wait on an empty EVD times out after its timeout, not before",
	  t_wait_timeout, NULL },
	{ "threshold", "wait returns only with threshold events queued; nmore counts the rest",
	  t_threshold, NULL },
	{ "software", "software events keep their pointer and order; full is RAPT_EOVERFLOW",
	  t_software, NULL },
	{ "batch", "batch dequeue takes up to max events in order", t_batch, NULL },
	{ "fd", "the fd polls readable only when armed and an event is queued",
	  t_fd, NULL },
	{ "fd_no_lost_wakeup", "arm/epoll/drain with a racing producer loses no wakeup",
	  t_fd_no_lost_wakeup, NULL },
	{ "multi_waiters", "several threads wait on one EVD; each event goes to one of them",
	  t_multi_waiters, NULL },
	{ "free_waiter", "freeing an EVD wakes its waiter with RAPT_ECANCELED",
	  t_free_waiter, NULL },
	{ "overflow_async", "lost completions are counted and reported on the async EVD",
	  t_overflow_async, overflow_passive },
	{ "overflow_self", "without an async EVD the overflow report lands in the full EVD",
	  t_overflow_self, overflow_passive },
};

CONF_SUITE(conf_suite_evd, "evd", "EVD: wait, dequeue, fd, threads, overflow",
	   evd_tests);
