/* SPDX-License-Identifier: MIT */
/*
 * Provider toolkit: the progress engine, one thread per engine (the tcp
 * provider starts one per IA).
 *
 * The thread sleeps in epoll over every registered fd (for tcp: the IA's
 * listeners, requests in the MPA handshake, connections) and an eventfd,
 * with the timeout of the earliest timer, to the nanosecond where the
 * kernel allows (engine_epoll).  Each loop pass runs, in this order:
 *
 *   1. the handlers of the ready registrations (one batch of epoll events);
 *   2. the deferred functions (rapt_engine_defer, rapt_engine_call);
 *   3. the expired timers.
 *
 * Whoever runs a pass holds eng->run: handlers, deferred functions and
 * timers never run concurrently with each other, whichever thread runs
 * them.  That thread is the engine's own when the consumer is elsewhere;
 * a consumer that busy-polls drives the passes itself (rapt_engine_drive,
 * an epoll_wait() that does not block), and the engine thread then stands
 * aside: it stops waiting in epoll, which would wake it for every packet
 * the consumer reads anyway, and only looks once a millisecond (or when
 * woken) until the consumer has not driven for ENGINE_DRIVE_IDLE_NS.
 * rapt_engine_call() likewise runs its function in the caller's thread,
 * under eng->run, so a teardown or an accept costs no thread switch.
 *
 * Memory: the engine thread collects a batch in epoll_wait() *without*
 * eng->run, so another runner may tear down an object that batch still
 * names.  Objects with a registration are therefore freed through
 * rapt_engine_retire(): at once while the engine thread holds no batch,
 * otherwise once it has dispatched it (their events are dropped from it).
 * A registration deleted during a pass is also scrubbed from the rest of
 * that pass's batch.
 *
 * Timers are a list sorted by deadline (most are armed with the same delay,
 * so insertion searches from the tail).  Deferred functions are a FIFO.
 * Both sit under eng->lock, a leaf lock.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rapt/provider.h>
#include <rapt/provider_util.h>

#define ENGINE_BATCH 64
#define eng_err(eng, ...) RAPT_PLOG(RAPT_LOG_ERROR, (eng)->prov, __VA_ARGS__)
#define eng_warn(eng, ...) RAPT_PLOG(RAPT_LOG_WARN, (eng)->prov, __VA_ARGS__)
/* The engine thread stands aside while a consumer drove a pass this
 * recently, and looks again every ENGINE_ASIDE_MS meanwhile. */
#define ENGINE_DRIVE_IDLE_NS	500000ull
#define ENGINE_ASIDE_MS		1
/* Retired objects waiting for the engine thread's batch: more wake it. */
#define ENGINE_GRAVEYARD_MAX	64

/* A deferred function (rapt_engine_defer), heap-allocated, freed once run. */
struct rapt_defer {
	void (*fn)(void *arg);
	void *arg;
	struct rapt_defer *next;
};

struct rapt_engine {
	const char *prov;		/* the provider, for logs */
	int epfd;
	int evfd;
	pthread_t thread;
	pthread_mutex_t run;		/* the right to run a pass */
	pthread_mutex_t lock;		/* timers, defers, graveyard, stop */
	struct rapt_list timers;	/* armed, by deadline */
	struct rapt_defer *dfirst, *dlast;
	struct rapt_retire *graveyard;	/* retired while a batch was held */
	uint32_t ngrave;
	bool holding;			/* the thread holds a collected batch */
	_Atomic bool stop;		/* written under lock */
	struct rapt_io evio;		/* the eventfd's registration */
	_Atomic uint64_t drive_ns;	/* last pass a consumer drove, or lease */
	_Atomic uint64_t pass_ns;	/* last pass a consumer drove */
	_Atomic uint32_t sleepers;	/* consumers asleep on epfd */
	_Atomic uint64_t aside_until_ns; /* the aside thread looks by then */
	_Atomic uint32_t aside_max_ms;	/* rapt_engine_aside_max() */
	uint32_t aside_ms;		/* the thread's next look (thread) */
	/* The batch being dispatched (under run). */
	struct epoll_event *batch;
	int nbatch, ibatch;
};

/*
 * The engine whose pass this thread runs (holds eng->run), if any.
 * Initial-exec: a provider is loaded by dlopen(), where the default
 * (general-dynamic) model gives each thread a block malloc'ed at its first
 * use and a __tls_get_addr() call at every look; this takes eight bytes of
 * glibc's static TLS reserve instead (docs/provider-guide.md, "Thread-local
 * storage"; tests/provider_tls.test).
 */
static __thread struct rapt_engine *tls_runner
	__attribute__((tls_model("initial-exec")));

uint64_t rapt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool rapt_engine_on_thread(struct rapt_engine *eng)
{
	return tls_runner == eng;
}

/* The engine's own thread (not merely the runner of a pass). */
static bool engine_is_thread(struct rapt_engine *eng)
{
	return pthread_equal(pthread_self(), eng->thread);
}

static void engine_wake(struct rapt_engine *eng)
{
	uint64_t one = 1;
	ssize_t n;

	/* EAGAIN means the counter is already non-zero: a wakeup is due. */
	do {
		n = rapt_sys_write(eng->evfd, &one, sizeof(one));
	} while (n < 0 && errno == EINTR);
}

/*
 * Only the engine thread clears a wakeup: a pass that a consumer drives
 * sees the eventfd too, and if it read it the thread, woken to take a new
 * first timer into account, would find nothing ready and go back to sleep
 * with its old timeout.
 */
static void engine_evfd_clear(struct rapt_engine *eng)
{
	uint64_t v;
	ssize_t n;

	do {
		n = rapt_sys_read(eng->evfd, &v, sizeof(v));
	} while (n < 0 && errno == EINTR);
}

static void engine_evfd_read(struct rapt_io *io, uint32_t events)
{
	struct rapt_engine *eng = rapt_container_of(io, struct rapt_engine,
						    evio);

	if (engine_is_thread(eng))
		engine_evfd_clear(eng);
}

/* ------------------------------------------------------------------ */
/* Registrations                                                       */
/* ------------------------------------------------------------------ */

static int engine_ctl(struct rapt_engine *eng, int op, struct rapt_io *io,
		      uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };

	if (epoll_ctl(eng->epfd, op, io->fd, &ev)) {
		int err = errno;

		eng_err(eng, "epoll_ctl(%s, fd %d): %s",
			op == EPOLL_CTL_ADD ? "add" : "mod", io->fd,
			strerror(err));
		/* Only running out (ENOMEM, ENOSPC: max_user_watches) is
		 * not our own bug. */
		return rapt_errno_status(err) == RAPT_ENOMEM ? RAPT_ENOMEM :
		       RAPT_EPROVIDER;
	}
	io->events = events;
	return 0;
}

int rapt_engine_add(struct rapt_engine *eng, struct rapt_io *io,
		    uint32_t events)
{
	int ret = engine_ctl(eng, EPOLL_CTL_ADD, io, events);

	io->registered = !ret;
	return ret;
}

int rapt_engine_mod(struct rapt_engine *eng, struct rapt_io *io,
		    uint32_t events)
{
	return engine_ctl(eng, EPOLL_CTL_MOD, io, events);
}

/* Runner: forget @io in what is left of the current batch. */
static void engine_scrub(struct rapt_engine *eng, struct rapt_io *io)
{
	int i;

	if (!rapt_engine_on_thread(eng))
		return;
	for (i = eng->ibatch + 1; i < eng->nbatch; i++)
		if (eng->batch[i].data.ptr == io)
			eng->batch[i].data.ptr = NULL;
}

/* rapt_engine_del - kernel-doc in <rapt/provider_util.h> */
int rapt_engine_del(struct rapt_engine *eng, struct rapt_io *io)
{
	if (epoll_ctl(eng->epfd, EPOLL_CTL_DEL, io->fd, NULL)) {
		eng_err(eng, "epoll_ctl(DEL, fd %d): %m", io->fd);
		return RAPT_EPROVIDER;
	}
	io->events = 0;
	io->registered = false;
	engine_scrub(eng, io);
	return 0;
}

/**
 * rapt_engine_close - unregister @io and close its socket
 * @eng: the engine @io is registered with (or not yet)
 * @io: its fd is closed and set to -1
 * @abort: close with an RST (SO_LINGER 0): nothing queued is sent, no
 *         TIME_WAIT
 *
 * Always an EPOLL_CTL_DEL first, even though close() would take the
 * socket out of the epoll set by itself: since Linux 6.10 an epoll_wait()
 * in another thread may hold the file for a moment while it polls it, and
 * the last reference then drops in that thread, whose pending work runs
 * only when its epoll_wait() returns: the FIN would wait for the engine
 * thread's next wakeup (seen: seconds).
 */
void rapt_engine_close(struct rapt_engine *eng, struct rapt_io *io,
		       bool abort)
{
	static const struct linger rst = { .l_onoff = 1, .l_linger = 0 };

	if (io->fd < 0)
		return;
	if (abort)
		setsockopt(io->fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst));
	if (io->registered)
		epoll_ctl(eng->epfd, EPOLL_CTL_DEL, io->fd, NULL);
	rapt_sys_close(io->fd);
	io->fd = -1;
	io->events = 0;
	io->registered = false;
	engine_scrub(eng, io);
}

int rapt_engine_rebind(struct rapt_engine *eng, struct rapt_io *old,
		       struct rapt_io *io, uint32_t events)
{
	int ret;

	/* MOD rather than DEL + ADD: it allocates nothing, so cannot fail
	 * for want of memory once the fd is registered. */
	io->fd = old->fd;
	ret = engine_ctl(eng, EPOLL_CTL_MOD, io, events);
	if (ret)
		return ret;
	io->registered = true;
	old->events = 0;
	old->registered = false;
	engine_scrub(eng, old);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Timers                                                              */
/* ------------------------------------------------------------------ */

static struct rapt_timer *timer_of(struct rapt_list *node)
{
	return node ? rapt_container_of(node, struct rapt_timer, node) : NULL;
}

static struct rapt_timer *timer_first(struct rapt_engine *eng)
{
	return timer_of(rapt_list_first(&eng->timers));
}

static void timer_unlink(struct rapt_engine *eng, struct rapt_timer *t)
{
	rapt_list_del(&t->node);
	t->deadline_ns = 0;
}

/* Insert @t (armed, unlinked) in deadline order, searching from the tail. */
static void timer_insert(struct rapt_engine *eng, struct rapt_timer *t)
{
	struct rapt_list *after = eng->timers.prev;

	while (after != &eng->timers &&
	       timer_of(after)->deadline_ns > t->deadline_ns)
		after = after->prev;
	rapt_list_insert_after(after, &t->node);
}

/*
 * Whether a consumer runs the passes itself (a busy-poll loop in
 * rapt_engine_drive(), and nobody asleep on the set, whose sleep no timer
 * would end): those passes run the timers as they fall due, so the engine
 * thread, standing aside, need not wake for them.  Each wakeup would take
 * a CPU from a spinning consumer: on two CPUs, a thousand a second made
 * the tail of a busy-poll round trip three times the median.
 */
static bool consumer_passes(struct rapt_engine *eng)
{
	return !atomic_load_explicit(&eng->sleepers, memory_order_relaxed) &&
	       rapt_now_ns() - atomic_load_explicit(&eng->pass_ns,
						    memory_order_relaxed) <
	       ENGINE_DRIVE_IDLE_NS;
}

void rapt_timer_arm(struct rapt_engine *eng, struct rapt_timer *t,
		    uint64_t delay_ns)
{
	uint64_t aside;
	bool first;

	pthread_mutex_lock(&eng->lock);
	if (t->deadline_ns)
		timer_unlink(eng, t);
	t->deadline_ns = rapt_now_ns() + delay_ns;
	timer_insert(eng, t);
	/* The thread sleeps with the old first deadline: shorten it, unless
	 * it stands aside and either looks before this one is due anyway or
	 * leaves the timers to the consumer's passes. */
	aside = atomic_load_explicit(&eng->aside_until_ns,
				     memory_order_relaxed);
	first = timer_first(eng) == t &&
		(!aside || (t->deadline_ns < aside && !consumer_passes(eng)));
	pthread_mutex_unlock(&eng->lock);
	if (first && !engine_is_thread(eng))
		engine_wake(eng);
}

void rapt_timer_cancel(struct rapt_engine *eng, struct rapt_timer *t)
{
	pthread_mutex_lock(&eng->lock);
	if (t->deadline_ns)
		timer_unlink(eng, t);
	pthread_mutex_unlock(&eng->lock);
}

bool rapt_timer_armed(struct rapt_engine *eng, struct rapt_timer *t)
{
	bool armed;

	pthread_mutex_lock(&eng->lock);
	armed = t->deadline_ns != 0;
	pthread_mutex_unlock(&eng->lock);
	return armed;
}

/*
 * Nanoseconds until the first timer, for the engine's sleeps; -1 if none,
 * 0 if one is due (or a deferral or a stop waits).
 */
static int64_t timers_timeout_ns(struct rapt_engine *eng)
{
	const uint64_t hour = 3600ull * 1000000000ull;
	struct rapt_timer *first;
	uint64_t now, d;
	int64_t ns = -1;

	pthread_mutex_lock(&eng->lock);
	first = timer_first(eng);
	if (eng->dfirst || eng->stop) {
		ns = 0;
	} else if (first) {
		now = rapt_now_ns();
		d = first->deadline_ns;
		if (d <= now)
			ns = 0;
		else
			ns = (int64_t)(d - now < hour ? d - now : hour);
	}
	pthread_mutex_unlock(&eng->lock);
	return ns;
}

/* @ns (at least 0) as a relative timespec. */
static struct timespec ns_to_ts(int64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000),
		.tv_nsec = (long)(ns % 1000000000),
	};

	return ts;
}

/* ThreadSanitizer (gcc 12's libtsan) has no interceptor for
 * epoll_pwait2(), so it misses the ordering between a registration
 * (epoll_ctl) and the event that names it, and reports races that are
 * none: its builds sleep in ppoll() on the epoll fd instead, then collect
 * with an epoll_wait() that does not wait (a system call more a wakeup). */
#if defined(__SANITIZE_THREAD__)
#define ENGINE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ENGINE_TSAN 1
#endif
#endif

/* Sleep in epoll over @eng's set for up to @ns (-1: no limit), to the
 * nanosecond: epoll_wait()'s milliseconds would round a timer of 50 us
 * up to 1 ms.  Where the kernel lacks epoll_pwait2() (before 5.11, or a
 * seccomp filter that does not know it), milliseconds, rounded up: a
 * timer never fires early. */
static int engine_epoll(struct rapt_engine *eng, struct epoll_event *ev,
			int64_t ns)
{
#if defined(ENGINE_TSAN)
	struct pollfd p = { .fd = eng->epfd, .events = POLLIN };
	struct timespec ts;

	if (ns > 0) {
		ts = ns_to_ts(ns);
		if (ppoll(&p, 1, &ts, NULL) < 0 && errno != EINTR)
			return -1;
		ns = 0;
	}
	return rapt_sys_epoll_wait(eng->epfd, ev, ENGINE_BATCH,
				   ns < 0 ? -1 : 0);
#else
#ifdef HAVE_EPOLL_PWAIT2
	static atomic_bool no_pwait2;
	struct timespec ts, *tp = NULL;
	int n;

	if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
		if (ns >= 0) {
			ts = ns_to_ts(ns);
			tp = &ts;
		}
		n = epoll_pwait2(eng->epfd, ev, ENGINE_BATCH, tp, NULL);
		if (n >= 0 || (errno != ENOSYS && errno != EPERM))
			return n;
		atomic_store_explicit(&no_pwait2, true, memory_order_relaxed);
	}
#endif
	return rapt_sys_epoll_wait(eng->epfd, ev, ENGINE_BATCH,
				   ns < 0 ? -1 :
				   (int)((ns + 999999) / 1000000));
#endif
}

/* Fire expired timers one at a time: a firing may cancel another. */
static void timers_run(struct rapt_engine *eng)
{
	uint64_t now = rapt_now_ns();
	struct rapt_timer *t;

	for (;;) {
		pthread_mutex_lock(&eng->lock);
		t = timer_first(eng);
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

static void defer_queue(struct rapt_engine *eng, struct rapt_defer *d)
{
	d->next = NULL;
	pthread_mutex_lock(&eng->lock);
	if (eng->dlast)
		eng->dlast->next = d;
	else
		eng->dfirst = d;
	eng->dlast = d;
	pthread_mutex_unlock(&eng->lock);
	if (!engine_is_thread(eng))
		engine_wake(eng);
}

int rapt_engine_defer(struct rapt_engine *eng, void (*fn)(void *),
		      void *arg)
{
	struct rapt_defer *d = malloc(sizeof(*d));

	if (!d) {
		eng_err(eng, "out of memory deferring work to the engine");
		return RAPT_ENOMEM;
	}
	d->fn = fn;
	d->arg = arg;
	defer_queue(eng, d);
	return 0;
}

/* Run what is queued now; later arrivals wait for the next pass. */
static void defers_run(struct rapt_engine *eng)
{
	struct rapt_defer *d, *next;

	pthread_mutex_lock(&eng->lock);
	d = eng->dfirst;
	eng->dfirst = eng->dlast = NULL;
	pthread_mutex_unlock(&eng->lock);
	for (; d; d = next) {
		next = d->next;
		d->fn(d->arg);
		free(d);
	}
}

/* ------------------------------------------------------------------ */
/* Retired objects                                                     */
/* ------------------------------------------------------------------ */

/**
 * rapt_engine_retire - free an object once no batch can name its @io
 * @eng: the engine
 * @r: the object's retire node
 * @io: the object's registration, already deleted (or never added)
 * @fn: frees the object
 * @arg: for @fn
 *
 * Any thread.  Runs @fn at once unless the engine thread holds a batch
 * collected before the registration was deleted; then the thread runs it
 * after that batch, whose events for @io it drops.
 */
void rapt_engine_retire(struct rapt_engine *eng, struct rapt_retire *r,
			const struct rapt_io *io, void (*fn)(void *),
			void *arg)
{
	bool wake = false;

	r->io = io;
	r->fn = fn;
	r->arg = arg;
	pthread_mutex_lock(&eng->lock);
	if (eng->holding && !engine_is_thread(eng)) {
		r->next = eng->graveyard;
		eng->graveyard = r;
		r = NULL;
		/* A thread asleep in epoll_wait frees them only when it
		 * wakes: bound what an idle IA can pile up. */
		wake = ++eng->ngrave == ENGINE_GRAVEYARD_MAX;
	}
	pthread_mutex_unlock(&eng->lock);
	if (r)
		fn(arg);
	else if (wake)
		engine_wake(eng);
}

/* The engine thread, under run: drop events of retired objects. */
static void graveyard_scrub(struct rapt_engine *eng, struct epoll_event *ev,
			    int n)
{
	struct rapt_retire *r;
	int i;

	pthread_mutex_lock(&eng->lock);
	for (r = eng->graveyard; r; r = r->next)
		for (i = 0; i < n; i++)
			if (ev[i].data.ptr == r->io)
				ev[i].data.ptr = NULL;
	pthread_mutex_unlock(&eng->lock);
}

/* The engine thread, its batch dispatched: free what waited for it. */
static void graveyard_free(struct rapt_engine *eng)
{
	struct rapt_retire *r, *next;

	pthread_mutex_lock(&eng->lock);
	r = eng->graveyard;
	eng->graveyard = NULL;
	eng->ngrave = 0;
	eng->holding = false;
	pthread_mutex_unlock(&eng->lock);
	for (; r; r = next) {
		next = r->next;
		r->fn(r->arg);
	}
}

/* ------------------------------------------------------------------ */
/* The thread                                                          */
/* ------------------------------------------------------------------ */

static void engine_dispatch(struct rapt_engine *eng, struct epoll_event *ev,
			    int n)
{
	struct rapt_io *io;

	eng->batch = ev;
	eng->nbatch = n;
	for (eng->ibatch = 0; eng->ibatch < n; eng->ibatch++) {
		io = ev[eng->ibatch].data.ptr;
		if (io)
			io->handler(io, ev[eng->ibatch].events);
	}
	eng->nbatch = 0;
}

/* What a runner restores when its pass ends. */
struct run_saved {
	struct rapt_engine *runner;	/* tls_runner before */
	int cancel;			/* the thread's cancelability */
};

/*
 * Take eng->run (blocking or not) and become the runner of a pass.  A pass
 * runs with cancellation disabled: its handlers, deferred functions and
 * timers may call libraries that reach cancellation points (librdmacm's
 * rdma_get_cm_event() reads), and a consumer thread cancelled in a pass
 * it drives would leave the run lock held (rapt(7), THREADING).
 */
static bool run_enter(struct rapt_engine *eng, bool wait,
		      struct run_saved *saved)
{
	if (wait)
		pthread_mutex_lock(&eng->run);
	else if (pthread_mutex_trylock(&eng->run))
		return false;
	saved->cancel = rapt_nocancel_begin();
	saved->runner = tls_runner;
	tls_runner = eng;
	return true;
}

static void run_exit(struct rapt_engine *eng, const struct run_saved *saved)
{
	tls_runner = saved->runner;
	pthread_mutex_unlock(&eng->run);
	rapt_nocancel_end(saved->cancel);
}

/* Under run: one pass over what is ready now (epoll_wait does not block). */
static void pass_now(struct rapt_engine *eng)
{
	struct epoll_event ev[ENGINE_BATCH];
	int n;

	n = rapt_sys_epoll_wait(eng->epfd, ev, ENGINE_BATCH, 0);
	engine_dispatch(eng, ev, n > 0 ? n : 0);
	defers_run(eng);
	timers_run(eng);
}

/**
 * rapt_engine_drive - run a pass of the engine in the caller's thread
 * @eng: the engine
 *
 * For a consumer that busy-polls: whatever is ready is handled here, at
 * once, instead of after a wakeup of the engine thread, which stands aside
 * while such passes keep coming.  Does nothing when another thread runs a
 * pass.  The caller holds no provider lock.
 */
void rapt_engine_drive(struct rapt_engine *eng)
{
	struct run_saved saved;
	uint64_t now;

	if (tls_runner == eng || !run_enter(eng, false, &saved))
		return;
	now = rapt_now_ns();
	atomic_store_explicit(&eng->drive_ns, now, memory_order_relaxed);
	atomic_store_explicit(&eng->pass_ns, now, memory_order_relaxed);
	pass_now(eng);
	run_exit(eng, &saved);
}

/* rapt_engine_fd - kernel-doc in <rapt/provider_util.h> */
int rapt_engine_fd(struct rapt_engine *eng)
{
	return eng->epfd;
}

/* rapt_engine_sleep_begin - kernel-doc in <rapt/provider_util.h> */
void rapt_engine_sleep_begin(struct rapt_engine *eng)
{
	atomic_fetch_add_explicit(&eng->sleepers, 1, memory_order_relaxed);
}

/* rapt_engine_lease - kernel-doc in <rapt/provider_util.h> */
void rapt_engine_lease(struct rapt_engine *eng)
{
	atomic_store_explicit(&eng->drive_ns, rapt_now_ns(),
			      memory_order_relaxed);
}

/* rapt_engine_aside_max - kernel-doc in <rapt/provider_util.h> */
void rapt_engine_aside_max(struct rapt_engine *eng, unsigned int ms)
{
	atomic_store_explicit(&eng->aside_max_ms,
			      ms > ENGINE_ASIDE_MS ? ms : ENGINE_ASIDE_MS,
			      memory_order_relaxed);
}

/* rapt_engine_sleep_end - kernel-doc in <rapt/provider_util.h> */
void rapt_engine_sleep_end(struct rapt_engine *eng)
{
	rapt_engine_lease(eng);
	atomic_fetch_sub_explicit(&eng->sleepers, 1, memory_order_relaxed);
}

/**
 * rapt_engine_call - run @fn(@arg) between two passes of the engine
 * @eng: the engine
 * @fn: the function
 * @arg: for @fn
 *
 * Runs in the caller's thread under eng->run, after the deferred functions
 * queued before it, so no handler, timer or deferred function runs
 * meanwhile (at once when the caller is already the runner).  The caller
 * must hold no lock a handler takes (ep->lock).  Never fails.
 */
void rapt_engine_call(struct rapt_engine *eng, void (*fn)(void *),
		      void *arg)
{
	struct run_saved saved;

	if (tls_runner == eng) {
		fn(arg);
		return;
	}
	run_enter(eng, true, &saved);
	defers_run(eng);
	fn(arg);
	run_exit(eng, &saved);
}

/* Without eng->lock, which a busy consumer's passes hold often: each
 * wait for it would be one more sleep of the thread. */
static bool engine_stopping(struct rapt_engine *eng)
{
	return atomic_load_explicit(&eng->stop, memory_order_acquire);
}

/* A consumer drives the passes: it busy-polls, or sleeps on epfd. */
static bool engine_driven(struct rapt_engine *eng)
{
	return atomic_load_explicit(&eng->sleepers, memory_order_relaxed) ||
	       rapt_now_ns() - atomic_load_explicit(&eng->drive_ns,
						    memory_order_relaxed) <
	       ENGINE_DRIVE_IDLE_NS;
}

/* A consumer drives: sleep on the eventfd alone for a while, then run a
 * pass (timers the consumer may not be due to run, its deferrals).  While
 * the consumer's own passes run the timers, only its stopping matters. */
static void engine_aside(struct rapt_engine *eng)
{
	struct pollfd p = { .fd = eng->evfd, .events = POLLIN };
	int64_t ns = consumer_passes(eng) ? -1 : timers_timeout_ns(eng);
	int64_t cap = (int64_t)eng->aside_ms * 1000000;
	struct run_saved saved;
	uint32_t max = atomic_load_explicit(&eng->aside_max_ms,
					    memory_order_relaxed);
	struct timespec ts;

	if (ns < 0 || ns > cap)
		ns = cap;
	ts = ns_to_ts(ns);
	/* A consumer that keeps driving: look less and less often. */
	if (eng->aside_ms < max)
		eng->aside_ms = eng->aside_ms * 2 < max ? eng->aside_ms * 2 :
							max;
	atomic_store_explicit(&eng->aside_until_ns,
			      rapt_now_ns() + (uint64_t)ns,
			      memory_order_relaxed);
	ppoll(&p, 1, &ts, NULL);
	atomic_store_explicit(&eng->aside_until_ns, 0, memory_order_relaxed);
	/* Taken now, whoever runs the pass: left set, it would end every
	 * poll() at once while a busy consumer holds the run lock (this
	 * thread spinning), and every ppoll() of a consumer sleeping on
	 * epfd (which watches the eventfd too). */
	if (p.revents & POLLIN)
		engine_evfd_clear(eng);
	/* A busy consumer in a pass of its own runs the timers and
	 * deferrals now: waiting for it would only cost a sleep more. */
	if (!run_enter(eng, false, &saved)) {
		if (consumer_passes(eng))
			return;
		run_enter(eng, true, &saved);
	}
	pass_now(eng);
	run_exit(eng, &saved);
}

/* Sleep in epoll_wait(), then dispatch the batch under run. */
static void engine_wait(struct rapt_engine *eng)
{
	struct epoll_event ev[ENGINE_BATCH];
	struct run_saved saved;
	int64_t ns = timers_timeout_ns(eng);
	int n;

	pthread_mutex_lock(&eng->lock);
	eng->holding = true;
	pthread_mutex_unlock(&eng->lock);
	n = engine_epoll(eng, ev, ns);
	if (n < 0) {
		if (errno != EINTR) {
			eng_err(eng, "epoll_wait: %m; the engine thread stops");
			pthread_mutex_lock(&eng->lock);
			eng->stop = true;
			pthread_mutex_unlock(&eng->lock);
		}
		n = 0;
	}
	run_enter(eng, true, &saved);
	graveyard_scrub(eng, ev, n);
	engine_dispatch(eng, ev, n);
	graveyard_free(eng);
	defers_run(eng);
	timers_run(eng);
	run_exit(eng, &saved);
}

static void *engine_main(void *arg)
{
	struct rapt_engine *eng = arg;
	struct run_saved saved;

	while (!engine_stopping(eng)) {
		if (engine_driven(eng)) {
			engine_aside(eng);
		} else {
			eng->aside_ms = ENGINE_ASIDE_MS;
			engine_wait(eng);
		}
	}
	run_enter(eng, true, &saved);
	defers_run(eng);
	run_exit(eng, &saved);
	return NULL;
}

static int engine_thread_start(struct rapt_engine *eng)
{
	char name[16];		/* the kernel's limit, with the NUL */
	int err;

	/* The engine never runs the application's signal handlers. */
	err = rapt_thread_create(&eng->thread, NULL, engine_main, eng);
	if (err) {
		eng_err(eng, "cannot start the progress thread: %s",
			strerror(err));
		return RAPT_ENOMEM;
	}
	snprintf(name, sizeof(name), "rapt-%s", eng->prov);
	pthread_setname_np(eng->thread, name);
	return 0;
}

/* rapt_engine_start - kernel-doc in <rapt/provider_util.h> */
int rapt_engine_start(struct rapt_engine **out, const char *prov)
{
	struct rapt_engine *eng = calloc(1, sizeof(*eng));
	int ret = RAPT_ENOMEM;

	if (!eng)
		goto err;
	eng->prov = prov;
	eng->aside_max_ms = ENGINE_ASIDE_MS;
	eng->aside_ms = ENGINE_ASIDE_MS;
	rapt_list_init(&eng->timers);
	pthread_mutex_init(&eng->lock, NULL);
	pthread_mutex_init(&eng->run, NULL);
	eng->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (eng->epfd < 0) {
		eng_err(eng, "epoll_create1: %m");
		goto err_free;
	}
	eng->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (eng->evfd < 0) {
		eng_err(eng, "eventfd: %m");
		goto err_epoll;
	}
	eng->evio.fd = eng->evfd;
	eng->evio.handler = engine_evfd_read;
	ret = rapt_engine_add(eng, &eng->evio, EPOLLIN);
	if (ret)
		goto err_evfd;
	ret = engine_thread_start(eng);
	if (ret)
		goto err_evfd;
	*out = eng;
	return 0;

err_evfd:
	rapt_sys_close(eng->evfd);
err_epoll:
	rapt_sys_close(eng->epfd);
err_free:
	pthread_mutex_destroy(&eng->run);
	pthread_mutex_destroy(&eng->lock);
	free(eng);
err:
	return ret;
}

/**
 * rapt_engine_stop - stop the thread and free the engine
 * @eng: the engine; every registration and timer must be gone
 *
 * Deferred functions still queued run before the thread exits.
 */
void rapt_engine_stop(struct rapt_engine *eng)
{
	pthread_mutex_lock(&eng->lock);
	eng->stop = true;
	pthread_mutex_unlock(&eng->lock);
	engine_wake(eng);
	pthread_join(eng->thread, NULL);
	graveyard_free(eng);
	if (!rapt_list_empty(&eng->timers))
		eng_warn(eng, "engine stopped with timers still armed");
	rapt_sys_close(eng->evfd);
	rapt_sys_close(eng->epfd);
	pthread_mutex_destroy(&eng->run);
	pthread_mutex_destroy(&eng->lock);
	free(eng);
}
