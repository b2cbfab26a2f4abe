/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the progress engine, one thread per IA.
 *
 * The thread sleeps in epoll_wait() over every socket of the IA (listeners,
 * requests in the MPA handshake, connections) and an eventfd, with the
 * timeout of the earliest timer.  Each loop pass runs, in this order:
 *
 *   1. the handlers of the ready registrations (one batch of epoll events);
 *   2. the deferred functions (tcp_engine_defer, tcp_engine_call);
 *   3. the expired timers.
 *
 * Deferred functions and timers therefore never run while a batch is half
 * done, so a teardown run through tcp_engine_call() cannot free an object
 * that a later event of the same batch still names.  A registration deleted
 * on the engine thread during a batch is also scrubbed from the rest of
 * that batch.
 *
 * Timers are a list sorted by deadline (most are armed with the same delay,
 * so insertion searches from the tail).  Deferred functions are a FIFO.
 * Both sit under eng->lock; handlers, deferred functions and timers run
 * without it.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "tcp.h"

#define ENGINE_BATCH 64

/* A deferred function: heap-allocated (defer) or on a waiter's stack (call). */
struct tcp_defer {
	void (*fn)(void *arg);
	void *arg;
	struct tcp_defer *next;
	bool heap;
};

/* tcp_engine_call(): the waiter sleeps on eng->cond until @done. */
struct tcp_call {
	struct tcp_defer d;
	struct tcp_engine *eng;
	void (*fn)(void *arg);
	void *arg;
	bool done;
};

struct tcp_engine {
	int epfd;
	int evfd;
	pthread_t thread;
	pthread_mutex_t lock;		/* timers, defers, stop */
	pthread_cond_t cond;		/* tcp_engine_call() completions */
	struct tcp_timer *tfirst, *tlast;
	struct tcp_defer *dfirst, *dlast;
	bool stop;
	struct tcp_io evio;		/* the eventfd's registration */
	/* The batch being dispatched (engine thread only). */
	struct epoll_event *batch;
	int nbatch, ibatch;
};

uint64_t tcp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool tcp_engine_on_thread(struct tcp_engine *eng)
{
	return pthread_equal(pthread_self(), eng->thread);
}

static void engine_wake(struct tcp_engine *eng)
{
	uint64_t one = 1;
	ssize_t n;

	/* EAGAIN means the counter is already non-zero: a wakeup is due. */
	do {
		n = write(eng->evfd, &one, sizeof(one));
	} while (n < 0 && errno == EINTR);
}

static void engine_evfd_read(struct tcp_io *io, uint32_t events)
{
	uint64_t v;
	ssize_t n;

	do {
		n = read(io->fd, &v, sizeof(v));
	} while (n < 0 && errno == EINTR);
}

/* ------------------------------------------------------------------ */
/* Registrations                                                       */
/* ------------------------------------------------------------------ */

static int engine_ctl(struct tcp_engine *eng, int op, struct tcp_io *io,
		      uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };

	if (epoll_ctl(eng->epfd, op, io->fd, &ev)) {
		int err = errno;

		tcp_err("epoll_ctl(%s, fd %d): %s",
			op == EPOLL_CTL_ADD ? "add" : "mod", io->fd,
			strerror(err));
		return err == ENOMEM || err == ENOSPC ? RAPT_ENOMEM :
		       RAPT_EPROVIDER;
	}
	io->events = events;
	return 0;
}

int tcp_engine_add(struct tcp_engine *eng, struct tcp_io *io, uint32_t events)
{
	return engine_ctl(eng, EPOLL_CTL_ADD, io, events);
}

int tcp_engine_mod(struct tcp_engine *eng, struct tcp_io *io, uint32_t events)
{
	return engine_ctl(eng, EPOLL_CTL_MOD, io, events);
}

/* Engine thread: forget @io in what is left of the current batch. */
static void engine_scrub(struct tcp_engine *eng, struct tcp_io *io)
{
	int i;

	if (!tcp_engine_on_thread(eng))
		return;
	for (i = eng->ibatch + 1; i < eng->nbatch; i++)
		if (eng->batch[i].data.ptr == io)
			eng->batch[i].data.ptr = NULL;
}

void tcp_engine_del(struct tcp_engine *eng, struct tcp_io *io)
{
	if (io->fd >= 0)
		epoll_ctl(eng->epfd, EPOLL_CTL_DEL, io->fd, NULL);
	io->events = 0;
	engine_scrub(eng, io);
}

int tcp_engine_rebind(struct tcp_engine *eng, struct tcp_io *old,
		      struct tcp_io *io, uint32_t events)
{
	int ret;

	/* MOD rather than DEL + ADD: it allocates nothing, so cannot fail
	 * for want of memory once the fd is registered. */
	io->fd = old->fd;
	ret = engine_ctl(eng, EPOLL_CTL_MOD, io, events);
	if (ret)
		return ret;
	old->events = 0;
	engine_scrub(eng, old);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Timers                                                              */
/* ------------------------------------------------------------------ */

static void timer_unlink(struct tcp_engine *eng, struct tcp_timer *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		eng->tfirst = t->next;
	if (t->next)
		t->next->prev = t->prev;
	else
		eng->tlast = t->prev;
	t->next = t->prev = NULL;
	t->deadline_ns = 0;
}

/* Insert @t (armed, unlinked) in deadline order, searching from the tail. */
static void timer_insert(struct tcp_engine *eng, struct tcp_timer *t)
{
	struct tcp_timer *after = eng->tlast;

	while (after && after->deadline_ns > t->deadline_ns)
		after = after->prev;
	t->prev = after;
	t->next = after ? after->next : eng->tfirst;
	if (t->next)
		t->next->prev = t;
	else
		eng->tlast = t;
	if (after)
		after->next = t;
	else
		eng->tfirst = t;
}

void tcp_timer_arm(struct tcp_engine *eng, struct tcp_timer *t,
		   uint64_t delay_ns)
{
	bool first;

	pthread_mutex_lock(&eng->lock);
	if (t->deadline_ns)
		timer_unlink(eng, t);
	t->deadline_ns = tcp_now_ns() + delay_ns;
	timer_insert(eng, t);
	first = eng->tfirst == t;
	pthread_mutex_unlock(&eng->lock);
	/* The thread sleeps with the old first deadline: shorten it. */
	if (first && !tcp_engine_on_thread(eng))
		engine_wake(eng);
}

void tcp_timer_cancel(struct tcp_engine *eng, struct tcp_timer *t)
{
	pthread_mutex_lock(&eng->lock);
	if (t->deadline_ns)
		timer_unlink(eng, t);
	pthread_mutex_unlock(&eng->lock);
}

bool tcp_timer_armed(struct tcp_engine *eng, struct tcp_timer *t)
{
	bool armed;

	pthread_mutex_lock(&eng->lock);
	armed = t->deadline_ns != 0;
	pthread_mutex_unlock(&eng->lock);
	return armed;
}

/* Milliseconds until the first timer, for epoll_wait(); -1 if none. */
static int timers_timeout_ms(struct tcp_engine *eng)
{
	uint64_t now, d;
	int ms = -1;

	pthread_mutex_lock(&eng->lock);
	if (eng->dfirst || eng->stop) {
		ms = 0;
	} else if (eng->tfirst) {
		now = tcp_now_ns();
		d = eng->tfirst->deadline_ns;
		if (d <= now)
			ms = 0;
		else if (d - now >= 1000000000ull * 3600)
			ms = 3600 * 1000;
		else	/* round up: never wake before the deadline */
			ms = (int)((d - now + 999999) / 1000000);
	}
	pthread_mutex_unlock(&eng->lock);
	return ms;
}

/* Fire expired timers one at a time: a firing may cancel another. */
static void timers_run(struct tcp_engine *eng)
{
	uint64_t now = tcp_now_ns();
	struct tcp_timer *t;

	for (;;) {
		pthread_mutex_lock(&eng->lock);
		t = eng->tfirst;
		if (!t || t->deadline_ns > now) {
			pthread_mutex_unlock(&eng->lock);
			return;
		}
		timer_unlink(eng, t);
		pthread_mutex_unlock(&eng->lock);
		t->fire(t);
	}
}

/* ------------------------------------------------------------------ */
/* Deferred functions                                                  */
/* ------------------------------------------------------------------ */

static void defer_queue(struct tcp_engine *eng, struct tcp_defer *d)
{
	d->next = NULL;
	pthread_mutex_lock(&eng->lock);
	if (eng->dlast)
		eng->dlast->next = d;
	else
		eng->dfirst = d;
	eng->dlast = d;
	pthread_mutex_unlock(&eng->lock);
	if (!tcp_engine_on_thread(eng))
		engine_wake(eng);
}

int tcp_engine_defer(struct tcp_engine *eng, void (*fn)(void *), void *arg)
{
	struct tcp_defer *d = malloc(sizeof(*d));

	if (!d) {
		tcp_err("out of memory deferring work to the engine");
		return RAPT_ENOMEM;
	}
	d->fn = fn;
	d->arg = arg;
	d->heap = true;
	defer_queue(eng, d);
	return 0;
}

static void call_run(void *arg)
{
	struct tcp_call *c = arg;
	struct tcp_engine *eng = c->eng;

	c->fn(c->arg);
	/* @c lives on the waiter's stack: it may be gone once the waiter
	 * sees @done, which it reads under the lock. */
	pthread_mutex_lock(&eng->lock);
	c->done = true;
	pthread_cond_broadcast(&eng->cond);
	pthread_mutex_unlock(&eng->lock);
}

void tcp_engine_call(struct tcp_engine *eng, void (*fn)(void *), void *arg)
{
	struct tcp_call c = { .eng = eng, .fn = fn, .arg = arg };

	if (tcp_engine_on_thread(eng)) {
		fn(arg);
		return;
	}
	c.d.fn = call_run;
	c.d.arg = &c;
	c.d.heap = false;
	defer_queue(eng, &c.d);
	pthread_mutex_lock(&eng->lock);
	while (!c.done)
		pthread_cond_wait(&eng->cond, &eng->lock);
	pthread_mutex_unlock(&eng->lock);
}

/* Run what is queued now; later arrivals wait for the next pass. */
static void defers_run(struct tcp_engine *eng)
{
	struct tcp_defer *d, *next;
	bool heap;

	pthread_mutex_lock(&eng->lock);
	d = eng->dfirst;
	eng->dfirst = eng->dlast = NULL;
	pthread_mutex_unlock(&eng->lock);
	for (; d; d = next) {
		/* A tcp_engine_call() node is gone once its fn returns. */
		next = d->next;
		heap = d->heap;
		d->fn(d->arg);
		if (heap)
			free(d);
	}
}

/* ------------------------------------------------------------------ */
/* The thread                                                          */
/* ------------------------------------------------------------------ */

static void engine_dispatch(struct tcp_engine *eng, struct epoll_event *ev,
			    int n)
{
	struct tcp_io *io;

	eng->batch = ev;
	eng->nbatch = n;
	for (eng->ibatch = 0; eng->ibatch < n; eng->ibatch++) {
		io = ev[eng->ibatch].data.ptr;
		if (io)
			io->handler(io, ev[eng->ibatch].events);
	}
	eng->nbatch = 0;
}

static bool engine_stopping(struct tcp_engine *eng)
{
	bool stop;

	pthread_mutex_lock(&eng->lock);
	stop = eng->stop;
	pthread_mutex_unlock(&eng->lock);
	return stop;
}

static void *engine_main(void *arg)
{
	struct epoll_event ev[ENGINE_BATCH];
	struct tcp_engine *eng = arg;
	int n;

	for (;;) {
		n = epoll_wait(eng->epfd, ev, ENGINE_BATCH,
			       timers_timeout_ms(eng));
		if (n < 0) {
			if (errno != EINTR) {
				tcp_err("epoll_wait: %m; the engine stops");
				break;
			}
			n = 0;
		}
		engine_dispatch(eng, ev, n);
		defers_run(eng);
		timers_run(eng);
		if (engine_stopping(eng))
			break;
	}
	defers_run(eng);
	return NULL;
}

static int engine_thread_start(struct tcp_engine *eng)
{
	sigset_t all, old;
	int err;

	/* The engine never runs the application's signal handlers. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&eng->thread, NULL, engine_main, eng);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		tcp_err("cannot start the progress thread: %s", strerror(err));
		return RAPT_ENOMEM;
	}
	pthread_setname_np(eng->thread, "rapt-tcp");
	return 0;
}

/**
 * tcp_engine_start - create an engine and start its thread
 * @out: the engine
 *
 * Return: 0, RAPT_ENOMEM, RAPT_EPROVIDER.
 */
int tcp_engine_start(struct tcp_engine **out)
{
	struct tcp_engine *eng = calloc(1, sizeof(*eng));
	int ret = RAPT_ENOMEM;

	if (!eng)
		goto err;
	pthread_mutex_init(&eng->lock, NULL);
	pthread_cond_init(&eng->cond, NULL);
	eng->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (eng->epfd < 0) {
		tcp_err("epoll_create1: %m");
		goto err_free;
	}
	eng->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (eng->evfd < 0) {
		tcp_err("eventfd: %m");
		goto err_epoll;
	}
	eng->evio.fd = eng->evfd;
	eng->evio.handler = engine_evfd_read;
	ret = tcp_engine_add(eng, &eng->evio, EPOLLIN);
	if (ret)
		goto err_evfd;
	ret = engine_thread_start(eng);
	if (ret)
		goto err_evfd;
	*out = eng;
	return 0;

err_evfd:
	close(eng->evfd);
err_epoll:
	close(eng->epfd);
err_free:
	pthread_cond_destroy(&eng->cond);
	pthread_mutex_destroy(&eng->lock);
	free(eng);
err:
	return ret;
}

/**
 * tcp_engine_stop - stop the thread and free the engine
 * @eng: the engine; every registration and timer must be gone
 *
 * Deferred functions still queued run before the thread exits.
 */
void tcp_engine_stop(struct tcp_engine *eng)
{
	pthread_mutex_lock(&eng->lock);
	eng->stop = true;
	pthread_mutex_unlock(&eng->lock);
	engine_wake(eng);
	pthread_join(eng->thread, NULL);
	if (eng->tfirst)
		tcp_warn("engine stopped with timers still armed");
	close(eng->evfd);
	close(eng->epfd);
	pthread_cond_destroy(&eng->cond);
	pthread_mutex_destroy(&eng->lock);
	free(eng);
}
