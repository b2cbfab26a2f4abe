/* SPDX-License-Identifier: MIT */
/*
 * EVD: the event dispatcher engine every provider shares.
 *
 * An EVD is a ring of struct rapt_event guarded by one mutex.  Providers
 * push through rapt_prov_evd_push(); consumers dequeue, wait, or poll an
 * eventfd.  docs/evd-semantics.md states the rules this file keeps; the
 * short form:
 *
 * - The ring has at least qlen + 1 slots (a power of two, so that free-
 *   running 64-bit sequence numbers index it with a mask).  At most qlen
 *   ordinary events are queued;
 *   the extra slot is reserved for this EVD's own overflow report, so a
 *   report that has to land here is never lost.
 * - A push onto a full EVD loses the event and counts it.  The first loss
 *   of an overflow episode (an episode ends when the consumer dequeues
 *   from the EVD) queues RAPT_EV_ASYNC_EVD_OVERFLOW on the IA's async EVD,
 *   or in the reserved slot if there is no async EVD or this is it.  While
 *   such a self-report is still queued, later losses update its count.
 * - Waiters queue in arrival order.  When events arrive, the earliest
 *   waiter whose threshold is met is handed the oldest event under the
 *   lock, so every event goes to exactly one thread, a later arrival never
 *   steals a woken waiter's event, and no wakeup is lost.
 *
 * Two locks.  evd->rlock, a futex-word rapt_lock (no libc call when
 * uncontended), guards the ring and the flags a push must see.
 * evd->lock, a pthread mutex, serialises the slow paths: waiters (their
 * condition variables need it), the fd, overflow and freeing.  Whoever
 * needs both takes evd->lock first.  The waiter list and evd->armed change
 * only with both held, and evd->room says, under rlock, whether anybody
 * must be told of a push: while it is non-zero (no waiter, fd not armed)
 * a push that finds the ring below room takes rlock alone; everything
 * else goes the slow way with both locks, exactly as before.  A dequeue
 * only ever takes rlock: taking events never grants or signals.
 *
 * Lock order: ia->lock, then evd->lock, then evd->rlock.  A push takes
 * ia->lock only on the overflow path of an EVD that is not the async EVD,
 * and only after releasing its own locks; the async EVD's overflow never
 * takes ia->lock.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rapt/provider_util.h>

#include "rapt_int.h"

/* The core's own bound on qlen, whatever the provider says: counts are
 * 32-bit and the ring's size, a power of two above qlen, must fit. */
#define RAPT_EVD_QLEN_LIMIT (1u << 28)

enum evd_wstate {
	EVD_W_WAITING = 0,
	EVD_W_GRANTED,		/* an event was handed over */
	EVD_W_CANCELED,		/* the EVD is being freed */
};

/* A thread blocked in rapt_evd_wait(); lives on that thread's stack. */
struct evd_waiter {
	struct evd_waiter *next;
	struct evd_waiter *prev;
	pthread_cond_t cond;
	uint32_t threshold;
	uint32_t state;			/* enum evd_wstate */
	uint32_t nmore;			/* left queued after the grant */
	struct rapt_event *event;	/* the caller's output */
	struct rapt_core_evd *evd;	/* for the cancellation handlers */
	int cancel_state;		/* the caller's, restored in sleeps */
	bool polling;			/* the leader, in the provider or poll */
	bool kicked;			/* wake_fd was written for it */
	bool in_poll;			/* the leader sleeps in ppoll() */
	int sleep_rc;			/* a sleep's result */
	int sleep_err;			/* its ppoll()'s errno, or 0 */
};

struct rapt_core_evd {
	struct rapt_obj obj;		/* must stay first */
	struct rapt_evd *handle;	/* obj.handle is cleared early */
	const struct rapt_prov_ops *ops;
	int (*progress)(void *pevd);	/* NULL: the provider has none */
	int (*wait_done)(void *pevd);	/* NULL: progress instead */
	uint32_t qlen;
	uint32_t streams;

	/* Guarded by rlock. */
	struct rapt_lock rlock;
	uint32_t room;			/* qlen, or 0 if a push must signal */
	uint32_t mask;			/* ring slots - 1 */
	struct rapt_event *ring;	/* > qlen slots, evd fields preset */
	/*
	 * Sequence numbers (never wrap): head is the next event to dequeue,
	 * tail the next to fill, so tail - head events are queued, the
	 * self-report counted.  The overflow bookkeeping is kept in them too,
	 * so that a dequeue has nothing else to update.
	 */
	uint64_t head;
	uint64_t tail;
	uint64_t ovf_seq;		/* the self-report's, if ovf_self */
	uint64_t ovf_head;		/* head when a loss was last reported */
	bool ovf_self;			/* a self-report went in at ovf_seq */
	bool ovf_rep;			/* a loss was reported at ovf_head */
	bool armed;			/* write efd on the next push */
	bool efd_set;			/* efd was written, not yet drained */
	const void *armer;		/* the thread that armed (tls_me) */
	uint64_t overflows;		/* events lost since creation */
	/* Changed with lock and rlock held, read with either. */
	struct evd_waiter *wfirst;	/* FIFO of ungranted waiters */
	struct evd_waiter *wlast;

	pthread_mutex_t lock;		/* guards the rest */
	bool freeing;			/* rapt_evd_free() under way */
	int efd;			/* eventfd, -1 until asked for */
	/*
	 * The provider's wait object (evd_wait_fd), asked for on first use.
	 * With one, the first waiter in line (the leader) sleeps on it in
	 * poll() next to wake_fd; cfd is then what rapt_evd_get_fd() gives,
	 * an epoll set of efd and pfd.
	 */
	bool pfd_known;
	int pfd;			/* -1: none, condition variables */
	int wake_fd;			/* eventfd that wakes a polling leader */
	int cfd;			/* the consumer's fd, -1 until asked for */
	uint32_t nwaiters;		/* threads inside the blocking wait */
	pthread_cond_t gone;		/* freeing: nwaiters reached 0 */
};

static const char *const stream_names[RAPT_EVD_NSTREAMS] = {
	"DTO", "CONNECTION", "CR", "ASYNC", "SOFTWARE",
};

static struct rapt_core_evd *to_evd(struct rapt_obj *o)
{
	return (struct rapt_core_evd *)o;
}

static inline struct rapt_core_evd *evd_fast(const void *handle)
{
	return to_evd(rapt__obj_fast(handle, RAPT_CLS_EVD));
}

/*
 * The lean lookup failed: the full one names the error precisely.  It
 * cannot succeed where the lean one failed (both compare the whole
 * handle), but if it ever did the caller must still fail.
 */
static int __attribute__((noinline)) evd_bad(const void *handle)
{
	struct rapt_obj *o;
	int ret = rapt__obj_lookup(handle, RAPT_CLS_EVD, &o);

	return ret ? ret : RAPT_EBADHANDLE;
}

static inline void evd_progress(struct rapt_core_evd *evd)
{
	if (evd->progress)
		evd->progress(evd->obj.prov);
}

/* ------------------------------------------------------------------ */
/* rlock: a futex lock (0 free, 1 held, 2 held and maybe sleepers)     */
/* ------------------------------------------------------------------ */

/* The provider toolkit's rapt_lock (<rapt/provider_util.h>), whose
 * contended half providers/util/lock.c also compiles into librapt. */
static inline bool evd_rlock_try(struct rapt_core_evd *evd)
{
	return rapt_lock_try(&evd->rlock);
}

static inline void evd_rlock(struct rapt_core_evd *evd)
{
	rapt_lock(&evd->rlock);
}

/* Unlock and return @ret (the hot paths end with it). */
static inline int evd_runlock_ret(struct rapt_core_evd *evd, int ret)
{
	rapt_unlock(&evd->rlock);
	return ret;
}

static inline void evd_runlock(struct rapt_core_evd *evd)
{
	rapt_unlock(&evd->rlock);
}

/* Both locks, for the slow paths. */
static void evd_lock_all(struct rapt_core_evd *evd)
{
	pthread_mutex_lock(&evd->lock);
	evd_rlock(evd);
}

static void evd_unlock_all(struct rapt_core_evd *evd)
{
	evd_runlock(evd);
	pthread_mutex_unlock(&evd->lock);
}

/* Recompute room after a change of the waiters or armed; rlock held. */
static void evd_update_room(struct rapt_core_evd *evd)
{
	evd->room = evd->wfirst || evd->armed ? 0 : evd->qlen;
}

/* ------------------------------------------------------------------ */
/* The ring (all called with evd->rlock held)                          */
/* ------------------------------------------------------------------ */

/*
 * head and tail change under rlock; a dequeue looks at them without it
 * to skip the lock when nothing is queued (a stale value only sends it
 * down the locked path), so every access is atomic, relaxed.
 */
static inline uint64_t seq_get(const uint64_t *seq)
{
	return __atomic_load_n(seq, __ATOMIC_RELAXED);
}

static inline void seq_set(uint64_t *seq, uint64_t v)
{
	__atomic_store_n(seq, v, __ATOMIC_RELAXED);
}

/* Whether nothing is queued (exact with rlock held, a hint without). */
static inline bool ring_empty(const struct rapt_core_evd *evd)
{
	return seq_get(&evd->head) == seq_get(&evd->tail);
}

/* Queued events, the self-report counted. */
static inline uint32_t evd_count(const struct rapt_core_evd *evd)
{
	return (uint32_t)(seq_get(&evd->tail) - seq_get(&evd->head));
}

static inline struct rapt_event *ring_at(const struct rapt_core_evd *evd,
					 uint64_t seq)
{
	return &evd->ring[(uint32_t)seq & evd->mask];
}

/* Is this EVD's self-report still queued (not dequeued yet)? */
static bool ovf_queued(const struct rapt_core_evd *evd)
{
	return evd->ovf_self && evd->ovf_seq >= evd->head;
}

/*
 * Was this episode's loss reported?  An episode ends when the consumer
 * takes an event: head moves on.
 */
static bool ovf_reported(const struct rapt_core_evd *evd)
{
	return evd->ovf_rep && evd->ovf_head == evd->head;
}

/* Queued events that use one of the qlen ordinary slots. */
static bool ring_full(const struct rapt_core_evd *evd)
{
	return evd_count(evd) - ovf_queued(evd) >= evd->qlen;
}

static inline struct rapt_event *ring_put(struct rapt_core_evd *evd)
{
	uint64_t tail = evd->tail;

	seq_set(&evd->tail, tail + 1);
	return ring_at(evd, tail);
}

/*
 * Fill a slot from a provider's event.  Every slot's evd field holds the
 * EVD's handle from creation on, so only the rest is copied.
 */
static inline void slot_fill(struct rapt_event *slot,
			     const struct rapt_event *ev)
{
	slot->type = ev->type;
	slot->reserved = ev->reserved;
	slot->u = ev->u;
}

/* Take the oldest event; the caller knows there is one. */
static inline void ring_take(struct rapt_core_evd *evd,
			     struct rapt_event *out)
{
	uint64_t head = evd->head;

	*out = *ring_at(evd, head);
	seq_set(&evd->head, head + 1);
}

/* The waiter this thread leads for while it runs the provider's wait
 * calls: a grant to it from its own thread needs no wakeup. */
static __thread struct evd_waiter *tls_leading;

/*
 * Tell @w that its state changed or that it leads now (both locks held).
 * A waiter sleeping on its condition variable is signalled; a leader in
 * poll() is woken through wake_fd, once, unless this is its own thread.
 */
static void waiter_wake(struct rapt_core_evd *evd, struct evd_waiter *w)
{
	uint64_t one = 1;

	if (!w->polling) {
		pthread_cond_signal(&w->cond);
		return;
	}
	if (w == tls_leading || w->kicked)
		return;
	w->kicked = true;
	/* Cannot fail short of a counter overflow (one write per kick). */
	if (rapt_sys_write(evd->wake_fd, &one, sizeof(one)) != sizeof(one))
		rapt_err("EVD %p: eventfd write failed: %m",
			 (void *)evd->handle);
}

/*
 * Take @w off the line (both locks held).  With a wait object the first
 * waiter leads: if @w led, its successor is told to take over.
 */
static void waiter_unlink(struct rapt_core_evd *evd, struct evd_waiter *w)
{
	if (!w->prev && w->next && evd->pfd >= 0)
		waiter_wake(evd, w->next);
	if (w->prev)
		w->prev->next = w->next;
	else
		evd->wfirst = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		evd->wlast = w->prev;
	w->next = w->prev = NULL;
}

/*
 * Hand queued events to waiters: the earliest waiter whose threshold is
 * met takes the oldest event, until no waiter's threshold is met.
 * Invariant on return: no queued waiter has threshold <= count.  Called
 * with both locks held.
 */
static void evd_grant(struct rapt_core_evd *evd)
{
	struct evd_waiter *w, *next;

	for (w = evd->wfirst; w && evd_count(evd); w = next) {
		next = w->next;
		if (w->threshold > evd_count(evd))
			continue;
		ring_take(evd, w->event);
		w->nmore = evd_count(evd);
		w->state = EVD_W_GRANTED;
		waiter_unlink(evd, w);
		waiter_wake(evd, w);
	}
}

/*
 * The EVD whose evd_progress this thread runs inside rapt_evd_dequeue():
 * a push onto it from this thread needs no eventfd write, since the
 * thread takes the event itself right after (evd_dequeue_notify()).
 */
/* Initial-exec: read on every poll of a provider's EVD, where the
 * general-dynamic model's __tls_get_addr() call cost more than the rest
 * of the core's part (a few bytes of glibc's static TLS reserve, which
 * also serves a librapt loaded by dlopen()). */
#define RAPT_TLS_IE __attribute__((tls_model("initial-exec")))
static __thread struct rapt_core_evd *tls_quiet RAPT_TLS_IE;
static __thread bool tls_notify_due RAPT_TLS_IE;
/*
 * The caller's output while rapt_evd_dequeue() runs the progress of an
 * EVD with nothing queued (tls_quiet): the first event that progress
 * pushes there, if it finds the ring still empty and nobody to tell,
 * goes straight to it, as if queued and dequeued under one lock hold.
 * NULL once filled.
 */
static __thread struct rapt_event *tls_direct RAPT_TLS_IE;
/* This thread's token (its address), for evd->armer. */
static __thread char tls_me;

static void evd_notify_fd(struct rapt_core_evd *evd)
{
	uint64_t one = 1;

	evd->armed = false;
	evd->efd_set = true;
	/* Cannot fail short of a counter overflow, which 1 per arm rules
	 * out; a failure would only cost the consumer a wakeup it can
	 * recover by dequeueing, so it is logged, not returned. */
	if (rapt_sys_write(evd->efd, &one, sizeof(one)) != sizeof(one))
		rapt_err("EVD %p: eventfd write failed: %m",
			 (void *)evd->handle);
}

/* An event is in the ring: wake whoever should know (both locks held). */
static void evd_signal(struct rapt_core_evd *evd)
{
	if (evd->wfirst)
		evd_grant(evd);
	if (evd->armed) {
		if (tls_quiet == evd)
			tls_notify_due = true;
		else
			evd_notify_fd(evd);
	}
	evd_update_room(evd);
}

/* ------------------------------------------------------------------ */
/* Push and overflow                                                   */
/* ------------------------------------------------------------------ */

/* Queue (or refresh) this EVD's overflow report in its reserved slot. */
static void evd_self_report(struct rapt_core_evd *evd)
{
	struct rapt_event *ev;

	if (ovf_queued(evd)) {
		ring_at(evd, evd->ovf_seq)->u.async.count = evd->overflows;
		return;
	}
	evd->ovf_seq = evd->tail;
	evd->ovf_self = true;
	ev = ring_put(evd);
	memset(ev, 0, sizeof(*ev));
	ev->type = RAPT_EV_ASYNC_EVD_OVERFLOW;
	ev->evd = evd->handle;
	ev->u.async.handle = evd->handle;
	ev->u.async.count = evd->overflows;
	evd_signal(evd);
}

static int evd_push_locked(struct rapt_core_evd *evd,
			   const struct rapt_event *ev);

/*
 * Report the first loss of an episode on the IA's async EVD, or here if
 * the IA has none.  Called without evd's locks; ia->lock keeps the async
 * EVD alive while we push to it (rapt_evd_free() clears it under that
 * lock before tearing it down).
 */
static void evd_report_to_ia(struct rapt_core_evd *evd, uint64_t lost)
{
	struct rapt_core_ia *ia = evd->obj.ia;
	struct rapt_core_evd *aevd;
	struct rapt_event ev = { .type = RAPT_EV_ASYNC_EVD_OVERFLOW };

	ev.u.async.handle = evd->handle;
	ev.u.async.count = lost;
	pthread_mutex_lock(&ia->lock);
	aevd = ia->async_evd;
	if (aevd) {
		evd_lock_all(aevd);
		evd_push_locked(aevd, &ev);	/* unlocks */
	} else {
		evd_lock_all(evd);
		evd_self_report(evd);
		evd_unlock_all(evd);
	}
	pthread_mutex_unlock(&ia->lock);
}

/* Count a lost event and see that it is reported.  Unlocks both locks. */
static int evd_overflow(struct rapt_core_evd *evd)
{
	uint64_t lost = ++evd->overflows;
	bool to_ia = !ovf_reported(evd);

	evd->ovf_rep = true;
	evd->ovf_head = evd->head;
	if (ovf_queued(evd) || (evd->streams & RAPT_EVD_ASYNC)) {
		evd_self_report(evd);
		to_ia = false;
	}
	evd_unlock_all(evd);
	if (to_ia)
		evd_report_to_ia(evd, lost);
	return RAPT_EOVERFLOW;
}

/* Called with both locks held; returns with them released. */
static int evd_push_locked(struct rapt_core_evd *evd,
			   const struct rapt_event *ev)
{
	if (rapt_unlikely(ring_full(evd)))
		return evd_overflow(evd);
	slot_fill(ring_put(evd), ev);
	evd_signal(evd);
	evd_unlock_all(evd);
	return 0;
}

/*
 * A push that must tell somebody, or may overflow: called with rlock
 * held, it lets it go and starts again with both locks.
 */
static int __attribute__((noinline)) evd_push_slow(struct rapt_core_evd *evd,
						   const struct rapt_event *ev)
{
	evd_runlock(evd);
	evd_lock_all(evd);
	return evd_push_locked(evd, ev);
}

/* The fast push, with rlock held; returns with it released. */
static inline int evd_push_rlocked(struct rapt_core_evd *evd,
				   const struct rapt_event *ev)
{
	struct rapt_event *out;

	if (rapt_unlikely(evd_count(evd) >= evd->room))
		return evd_push_slow(evd, ev);
	/* Below room: not full, and no waiter or armed fd to tell. */
	out = tls_direct;
	if (out && tls_quiet == evd && ring_empty(evd)) {
		/* The dequeue running this progress takes it. */
		tls_direct = NULL;
		out->evd = evd->handle;
	} else {
		out = ring_put(evd);
	}
	slot_fill(out, ev);
	return evd_runlock_ret(evd, 0);
}

/* rlock was taken: wait for it off the hot path. */
static int __attribute__((noinline))
evd_push_contended(struct rapt_core_evd *evd, const struct rapt_event *ev)
{
	evd_rlock(evd);
	return evd_push_rlocked(evd, ev);
}

/* Which stream an event type belongs to (the type's high byte). */
static uint32_t event_stream(uint32_t type)
{
	switch (type >> 8) {
	case 0x00: return RAPT_EVD_DTO;
	case 0x01: return RAPT_EVD_CR;
	case 0x02: return RAPT_EVD_CONNECTION;
	case 0x04: return RAPT_EVD_ASYNC;
	case 0x08: return RAPT_EVD_SOFTWARE;
	}
	return 0;
}

/* Debug builds only: a provider pushing onto the wrong EVD is a bug. */
static int evd_push_check(struct rapt_core_evd *evd,
			  const struct rapt_event *ev)
{
	if (!evd || !ev) {
		rapt_err("rapt_prov_evd_push: NULL EVD or event");
		return RAPT_EINVAL;
	}
	if (!(event_stream(ev->type) & evd->streams)) {
		rapt_err("EVD %p (streams %#x) cannot carry event %s (%#x)",
			 (void *)evd->handle, evd->streams,
			 rapt_event_name(ev->type), ev->type);
		return RAPT_EINVAL;
	}
	return 0;
}

RAPT_SDK int rapt_prov_evd_push(struct rapt_core_evd *evd,
				const struct rapt_event *ev)
{
	int ret;

	if (RAPT_DEBUG_BUILD) {
		ret = evd_push_check(evd, ev);
		if (ret)
			return ret;
	}
	if (rapt_unlikely(!evd_rlock_try(evd)))
		return evd_push_contended(evd, ev);
	return evd_push_rlocked(evd, ev);
}

RAPT_SDK struct rapt_evd *rapt_prov_evd_handle(struct rapt_core_evd *evd)
{
	return evd->handle;
}

RAPT_SDK uint64_t rapt_prov_evd_taken(struct rapt_core_evd *evd)
{
	return seq_get(&evd->head);
}

uint32_t rapt__evd_streams(struct rapt_core_evd *evd)
{
	return evd->streams;
}

/* ------------------------------------------------------------------ */
/* Create                                                              */
/* ------------------------------------------------------------------ */

/*
 * Every ordered pair of requested streams must be allowed by the
 * provider's evd_merge table.  A single stream is always allowed, so a
 * provider that leaves the table zeroed offers single-stream EVDs only.
 */
static int evd_check_merge(const struct rapt_core_ia *ia, uint32_t streams)
{
	uint32_t i, j;

	for (i = 0; i < RAPT_EVD_NSTREAMS; i++) {
		if (!(streams & (1u << i)))
			continue;
		for (j = 0; j < RAPT_EVD_NSTREAMS; j++) {
			if (j == i || !(streams & (1u << j)))
				continue;
			if (!(ia->attr.evd_merge[i] & (1u << j)))
				return rapt__fail(RAPT_ENOTSUP,
						  "rapt_evd_create: IA %s cannot put streams %s and %s on one EVD",
						  ia->attr.name,
						  stream_names[i],
						  stream_names[j]);
		}
	}
	return 0;
}

static int evd_check_args(const struct rapt_core_ia *ia, unsigned int qlen,
			  unsigned int streams)
{
	uint32_t max = ia->attr.max_evd_qlen;

	if (!qlen)
		return rapt__fail(RAPT_EINVAL, "rapt_evd_create: qlen is 0");
	if (!streams)
		return rapt__fail(RAPT_EINVAL, "rapt_evd_create: no stream");
	if (streams & ~RAPT_EVD_ALL_STREAMS)
		return rapt__fail(RAPT_EINVAL,
				  "rapt_evd_create: unknown stream bits %#x",
				  streams & ~RAPT_EVD_ALL_STREAMS);
	if (max && qlen > max)
		return rapt__fail(RAPT_ERANGE,
				  "rapt_evd_create: qlen %u exceeds max_evd_qlen %u of IA %s",
				  qlen, max, ia->attr.name);
	if (qlen > RAPT_EVD_QLEN_LIMIT)
		return rapt__fail(RAPT_ERANGE,
				  "rapt_evd_create: qlen %u exceeds rapt's limit %u",
				  qlen, RAPT_EVD_QLEN_LIMIT);
	return evd_check_merge(ia, streams);
}

static void evd_destroy(struct rapt_core_evd *evd)
{
	if (evd->efd >= 0)
		rapt_sys_close(evd->efd);
	if (evd->wake_fd >= 0)
		rapt_sys_close(evd->wake_fd);
	if (evd->cfd >= 0)
		rapt_sys_close(evd->cfd);
	pthread_cond_destroy(&evd->gone);
	pthread_mutex_destroy(&evd->lock);
	free(evd->ring);
	free(evd);
}

/* Whether the provider's own table has the op at @off (not a stub). */
static bool provider_has(const struct rapt_core_ia *ia, size_t off)
{
	const struct rapt_prov_ops *pops = ia->prov->desc->ops;
	void (*fn)(void);

	if (!pops || pops->size < off + sizeof(fn))
		return false;
	memcpy(&fn, (const char *)pops + off, sizeof(fn));
	return fn != NULL;
}

#define PROVIDER_HAS(ia, op) \
	provider_has((ia), offsetof(struct rapt_prov_ops, op))

/*
 * The provider's own evd_progress op, or NULL when it has none (its table
 * lacks it and the core's stub would only say so), so that dequeue skips
 * the call.  Likewise evd_wait_done.
 */
static int (*provider_progress(const struct rapt_core_ia *ia))(void *)
{
	return PROVIDER_HAS(ia, evd_progress) ? ia->ops->evd_progress : NULL;
}

static int (*provider_wait_done(const struct rapt_core_ia *ia))(void *)
{
	return PROVIDER_HAS(ia, evd_wait_done) ? ia->ops->evd_wait_done : NULL;
}

/* The ring's mask: one less than the least power of two above qlen. */
static uint32_t ring_mask(uint32_t qlen)
{
	uint32_t size = 2;

	while (size <= qlen)
		size <<= 1;
	return size - 1;
}

/* Return: the new EVD, or NULL when out of memory. */
static struct rapt_core_evd *evd_alloc(const struct rapt_core_ia *ia,
				       uint32_t qlen, uint32_t streams)
{
	const struct rapt_prov_ops *ops = ia->ops;
	struct rapt_core_evd *evd = calloc(1, sizeof(*evd));

	if (!evd)
		return NULL;
	evd->mask = ring_mask(qlen);
	evd->ring = calloc((size_t)evd->mask + 1, sizeof(*evd->ring));
	if (!evd->ring) {
		free(evd);
		return NULL;
	}
	evd->ops = ops;
	rapt_lock_init(&evd->rlock);
	evd->progress = provider_progress(ia);
	evd->wait_done = provider_wait_done(ia);
	evd->qlen = qlen;
	evd->streams = streams;
	evd->room = qlen;
	evd->efd = -1;
	evd->pfd = -1;
	evd->wake_fd = -1;
	evd->cfd = -1;
	pthread_mutex_init(&evd->lock, NULL);
	pthread_cond_init(&evd->gone, NULL);
	return evd;
}

static int evd_set_async(struct rapt_core_ia *ia, struct rapt_core_evd *evd)
{
	if (rapt__ia_set_async_evd(ia, evd, NULL))
		return rapt__fail(RAPT_EEXIST,
				  "rapt_evd_create: IA %s already has an async EVD",
				  ia->attr.name);
	return 0;
}

static void evd_find_pfd(struct rapt_core_evd *evd);
static void evd_make_wake_fd(struct rapt_core_evd *evd);

/* Learn the provider's wait object now, so that the descriptors a wait
 * needs exist from the start (a consumer counting its fds sees none come
 * and go with its first wait). */
static void evd_wait_setup(struct rapt_core_evd *evd)
{
	evd_lock_all(evd);
	evd_find_pfd(evd);
	evd_make_wake_fd(evd);
	evd_unlock_all(evd);
}

/* The rest of rapt_evd_create(), with the EVD allocated and reserved. */
static int evd_setup(struct rapt_core_ia *ia, struct rapt_core_evd *evd)
{
	uint32_t i;
	int ret;

	evd->handle = rapt__obj_handle(&evd->obj);
	for (i = 0; i <= evd->mask; i++)
		evd->ring[i].evd = evd->handle;
	if (evd->streams & RAPT_EVD_ASYNC) {
		ret = evd_set_async(ia, evd);
		if (ret)
			return ret;
	}
	RAPT_NOCANCEL(ret = ia->ops->evd_create(ia->obj.prov, evd, evd->qlen,
						evd->streams, &evd->obj.prov));
	if (ret) {
		rapt__fail(ret, "provider could not create an EVD on IA %s: %s",
			   ia->attr.name, rapt_strerror(ret));
		goto err_async;
	}
	evd_wait_setup(evd);
	return 0;

err_async:
	if (evd->streams & RAPT_EVD_ASYNC)
		rapt__ia_set_async_evd(ia, NULL, evd);
	return ret;
}

/**
 * rapt_evd_create - create an event dispatcher
 * @ia_handle: the IA
 * @qlen: how many events it must hold, 1..max_evd_qlen
 * @streams: RAPT_EVD_* bits
 * @out: output handle
 *
 * See rapt.h.  Streams are checked pairwise against the IA's evd_merge.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_EINVAL, RAPT_ERANGE,
 * RAPT_ENOTSUP, RAPT_EEXIST, RAPT_ENOMEM, or the provider's status.
 */
RAPT_API int rapt_evd_create(struct rapt_ia *ia_handle, unsigned int qlen,
			     unsigned int streams, struct rapt_evd **out)
{
	struct rapt_core_evd *evd;
	struct rapt_core_ia *ia;
	struct rapt_obj *o;
	int ret;

	if (!out)
		return rapt__fail(RAPT_EINVAL, "rapt_evd_create: NULL output");
	ret = rapt__obj_get(ia_handle, RAPT_CLS_IA, &o);
	if (ret)
		return ret;
	ia = (struct rapt_core_ia *)o;
	ret = evd_check_args(ia, qlen, streams);
	if (ret)
		goto err_put;
	evd = evd_alloc(ia, qlen, streams);
	if (!evd) {
		ret = rapt__fail(RAPT_ENOMEM,
				 "out of memory creating an EVD of %u events",
				 qlen);
		goto err_put;
	}
	/* The IA's user becomes the EVD's; the handle works once the
	 * provider has its side. */
	ret = rapt__obj_reserve(&evd->obj, RAPT_CLS_EVD, o, ia);
	if (ret)
		goto err_destroy;
	ret = evd_setup(ia, evd);
	if (ret) {
		rapt__obj_unregister(&evd->obj);	/* puts the IA */
		evd_destroy(evd);
		return ret;
	}
	rapt__obj_publish(&evd->obj);
	*out = evd->handle;
	return 0;

err_destroy:
	evd_destroy(evd);
err_put:
	rapt__obj_put(o);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Free                                                                */
/* ------------------------------------------------------------------ */

/*
 * Wake every blocked waiter with RAPT_ECANCELED and wait until they have
 * all left, so neither the provider's evd_free nor free() races with them.
 */
static void evd_cancel_waiters(struct rapt_core_evd *evd)
{
	struct evd_waiter *w;
	int nc;

	pthread_mutex_lock(&evd->lock);
	evd->freeing = true;
	evd_rlock(evd);
	while ((w = evd->wfirst)) {
		w->state = EVD_W_CANCELED;
		waiter_unlink(evd, w);
		waiter_wake(evd, w);
	}
	evd_update_room(evd);
	evd_runlock(evd);
	/* A cancellation point (and evd->lock held across it): held off. */
	nc = rapt_nocancel_begin();
	while (evd->nwaiters)
		pthread_cond_wait(&evd->gone, &evd->lock);
	rapt_nocancel_end(nc);
	pthread_mutex_unlock(&evd->lock);
}

/*
 * Stop the IA from routing async events here.  A pusher finds this EVD
 * and pushes to it under ia->lock (rapt_prov_async_event()), so once the
 * IA has forgotten it, none is inside.
 */
static void evd_detach_async(struct rapt_core_evd *evd)
{
	rapt__ia_set_async_evd(evd->obj.ia, NULL, evd);
}

static void evd_undo_free(struct rapt_core_evd *evd)
{
	pthread_mutex_lock(&evd->lock);
	evd->freeing = false;
	pthread_mutex_unlock(&evd->lock);
	if (evd->streams & RAPT_EVD_ASYNC)
		rapt__ia_set_async_evd(evd->obj.ia, evd, NULL);
	rapt__obj_revive(&evd->obj);
}

/**
 * rapt_evd_free - free an EVD
 * @handle: the EVD
 *
 * Threads blocked in rapt_evd_wait() on it return RAPT_ECANCELED; this
 * returns only after they have left.  If the provider fails to free its
 * side, the EVD stays usable (its waiters were still cancelled).
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_EBUSY (an EP or PSP
 * uses it), or the provider's status.
 */
RAPT_API int rapt_evd_free(struct rapt_evd *handle)
{
	struct rapt_core_evd *evd;
	struct rapt_obj *o;
	int ret;

	/* DYING from here: no EP or PSP can take it any more. */
	ret = rapt__obj_kill(handle, RAPT_CLS_EVD, "EPs, PSPs or calls", &o);
	if (ret)
		return ret;
	evd = to_evd(o);
	if (evd->streams & RAPT_EVD_ASYNC)
		evd_detach_async(evd);
	evd_cancel_waiters(evd);
	RAPT_NOCANCEL(ret = evd->ops->evd_free(o->prov));
	if (ret) {
		evd_undo_free(evd);
		return rapt__fail(ret, "provider could not free an EVD: %s",
				  rapt_strerror(ret));
	}
	rapt__obj_unregister(o);
	evd_destroy(evd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Dequeue and wait                                                    */
/* ------------------------------------------------------------------ */

/* Take the oldest event, with rlock held; returns with it released. */
static inline int evd_dequeue_rlocked(struct rapt_core_evd *evd,
				      struct rapt_event *event)
{
	if (rapt_unlikely(ring_empty(evd)))
		return evd_runlock_ret(evd, RAPT_EAGAIN);
	ring_take(evd, event);
	return evd_runlock_ret(evd, 0);
}

/*
 * The provider's progress pushed onto this EVD, armed, from the thread
 * that is dequeueing from it (evd_signal() left the eventfd alone): take
 * the event (unless the first went to @event directly: @taken), and
 * write the eventfd only if more are left for whoever polls it.
 */
static int __attribute__((noinline))
evd_dequeue_notify(struct rapt_core_evd *evd, struct rapt_event *event,
		   bool taken)
{
	int ret = RAPT_EAGAIN;

	tls_notify_due = false;
	evd_lock_all(evd);
	if (taken) {
		ret = 0;
	} else if (!ring_empty(evd)) {
		ring_take(evd, event);
		ret = 0;
	}
	/* If this thread armed the EVD it is not polling now, and it
	 * re-arms before it does (the loop of docs/evd-semantics.md): the
	 * event it takes here counts as the wakeup, so its next pushes (a
	 * post's completion) write nothing either.  Anyone else who armed
	 * is told of what is left. */
	if (evd->armed && evd_count(evd))
		evd_notify_fd(evd);
	else if (evd->armed && evd->armer == &tls_me && !ret)
		evd->armed = false;
	evd_update_room(evd);
	evd_unlock_all(evd);
	return ret;
}

/*
 * A dequeue that waits for rlock, or may call the provider's progress op:
 * only when nothing is queued, so that an event already here costs no
 * provider call (a syscall, for the tcp provider).  Nothing queued is
 * seen without the lock; the first event the progress pushes here then
 * comes straight back (tls_direct), so that a poll that finds one takes
 * rlock once, in the push, and one that finds none not at all.
 */
static int __attribute__((noinline))
evd_dequeue_call(struct rapt_core_evd *evd, struct rapt_event *event)
{
	bool taken;

	if (!evd->progress || !ring_empty(evd)) {
		evd_rlock(evd);
		return evd_dequeue_rlocked(evd, event);
	}
	tls_quiet = evd;
	tls_direct = event;
	evd->progress(evd->obj.prov);
	tls_quiet = NULL;
	taken = !tls_direct;
	tls_direct = NULL;
	if (rapt_unlikely(tls_notify_due))
		return evd_dequeue_notify(evd, event, taken);
	if (taken)
		return 0;
	/* Nothing came (a push that raced with the look is the next
	 * call's): an empty poll takes no lock. */
	if (ring_empty(evd))
		return RAPT_EAGAIN;
	evd_rlock(evd);
	return evd_dequeue_rlocked(evd, event);
}

/**
 * rapt_evd_dequeue - take one event without blocking
 * @handle: the EVD
 * @event: output
 *
 * Return: 0, RAPT_EAGAIN (empty), RAPT_EBADHANDLE, RAPT_EHANDLETYPE.
 */
RAPT_API int rapt_evd_dequeue(struct rapt_evd *handle,
			      struct rapt_event *event)
{
	struct rapt_core_evd *evd = evd_fast(handle);

	if (rapt_unlikely(!evd))
		return evd_bad(handle);
	if (RAPT_DEBUG_BUILD && !event)
		return rapt__fail(RAPT_EINVAL, "rapt_evd_dequeue: NULL event");
	/* Every call below is a tail call: no stack frame on this path. */
	if (rapt_unlikely(evd->progress || !evd_rlock_try(evd)))
		return evd_dequeue_call(evd, event);
	return evd_dequeue_rlocked(evd, event);
}

/**
 * rapt_evd_dequeue_batch - take up to @max events without blocking
 * @handle: the EVD
 * @events: output array
 * @max: its length
 *
 * Return: the number taken (0 when empty), RAPT_EBADHANDLE,
 * RAPT_EHANDLETYPE.
 */
RAPT_API int rapt_evd_dequeue_batch(struct rapt_evd *handle,
				    struct rapt_event *events,
				    unsigned int max)
{
	struct rapt_core_evd *evd;
	uint32_t i, n;

	evd = evd_fast(handle);
	if (rapt_unlikely(!evd))
		return evd_bad(handle);
	if (RAPT_DEBUG_BUILD && !events && max)
		return rapt__fail(RAPT_EINVAL,
				  "rapt_evd_dequeue_batch: NULL events");
	/* The count is returned as an int. */
	if (max > INT32_MAX)
		max = INT32_MAX;
	evd_progress(evd);
	evd_rlock(evd);
	n = RAPT_MIN(max, evd_count(evd));
	for (i = 0; i < n; i++)
		ring_take(evd, &events[i]);
	evd_runlock(evd);
	return (int)n;
}

static void deadline_after(struct timespec *ts, int64_t timeout_us)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += timeout_us / 1000000;
	ts->tv_nsec += (timeout_us % 1000000) * 1000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

static void waiter_init(struct evd_waiter *w, struct rapt_core_evd *evd,
			uint32_t threshold, struct rapt_event *event,
			int cancel_state)
{
	pthread_condattr_t attr;

	memset(w, 0, sizeof(*w));
	w->threshold = threshold;
	w->event = event;
	w->evd = evd;
	w->cancel_state = cancel_state;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &attr);
	pthread_condattr_destroy(&attr);
}

/* Called with both locks held. */
static void waiter_enqueue(struct rapt_core_evd *evd, struct evd_waiter *w)
{
	w->prev = evd->wlast;
	if (evd->wlast)
		evd->wlast->next = w;
	else
		evd->wfirst = w;
	evd->wlast = w;
	evd->nwaiters++;
	evd_update_room(evd);
}

/* ------------------------------------------------------------------ */
/* Wait objects                                                        */
/* ------------------------------------------------------------------ */

/*
 * Ask the provider for its wait object once (evd->lock held).  A provider
 * without one, or without the trywait and progress ops that go with it,
 * leaves pfd at -1: waiters then sleep on condition variables.
 */
static void evd_find_pfd(struct rapt_core_evd *evd)
{
	int fd = -1, ret;

	if (evd->pfd_known)
		return;
	evd->pfd_known = true;
	if (!evd->progress || !PROVIDER_HAS(evd->obj.ia, evd_trywait))
		return;
	RAPT_NOCANCEL(ret = evd->ops->evd_wait_fd(evd->obj.prov, &fd));
	if (ret || fd < 0)
		return;
	evd->pfd = fd;
}

/* The eventfd that wakes a leader in poll(), made on first use (both
 * locks held).  Without it waiters sleep on condition variables. */
static void evd_make_wake_fd(struct rapt_core_evd *evd)
{
	if (evd->pfd < 0 || evd->wake_fd >= 0)
		return;
	evd->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (evd->wake_fd < 0) {
		rapt_warn("EVD %p: eventfd() failed (%m): waiters sleep on condition variables",
			  (void *)evd->handle);
		evd->pfd = -1;
	}
}

/* Remaining time to @deadline for ppoll(); false if it has passed. */
static bool deadline_left(const struct timespec *deadline,
			  struct timespec *left)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	left->tv_sec = deadline->tv_sec - now.tv_sec;
	left->tv_nsec = deadline->tv_nsec - now.tv_nsec;
	if (left->tv_nsec < 0) {
		left->tv_sec--;
		left->tv_nsec += 1000000000;
	}
	return left->tv_sec > 0 || (left->tv_sec == 0 && left->tv_nsec > 0);
}

/*
 * Sleep in poll() on the provider's wait object and wake_fd.  Return:
 * RAPT_ETIMEDOUT if @deadline has passed, else 0 with *@err the error of
 * a failed ppoll() (logged by the caller, outside the cancellable sleep).
 */
static int evd_poll(struct rapt_core_evd *evd, const struct timespec *deadline,
		    int *err)
{
	struct pollfd p[2] = {
		{ .fd = evd->pfd, .events = POLLIN },
		{ .fd = evd->wake_fd, .events = POLLIN },
	};
	struct timespec left;

	if (deadline && !deadline_left(deadline, &left))
		return RAPT_ETIMEDOUT;
	if (ppoll(p, 2, deadline ? &left : NULL, NULL) < 0 && errno != EINTR)
		*err = errno;
	return 0;
}

/* Sleep up to a millisecond, or until a push kicks us (*@err as above). */
static void evd_nap(struct rapt_core_evd *evd, int *err)
{
	struct pollfd p = { .fd = evd->wake_fd, .events = POLLIN };
	const struct timespec ms = { 0, 1000000 };

	if (ppoll(&p, 1, &ms, NULL) < 0 && errno != EINTR)
		*err = errno;
}

/* ------------------------------------------------------------------ */
/* Thread cancellation                                                 */
/* ------------------------------------------------------------------ */

/*
 * rapt_evd_wait() is a cancellation point, and only where it sleeps.  The
 * rest of a wait, the provider's progress and its system calls included,
 * runs with cancellation disabled (evd_wait_slow()), so that none acts
 * with a lock held.  Each sleep restores the caller's state for its
 * length, under a cleanup handler that leaves the EVD as if the wait had
 * timed out: the waiter is off the line, an event already granted to it
 * is back at the head of the queue, and rapt_evd_free() does not wait
 * for it.
 */
static inline void cancel_allow(const struct evd_waiter *w)
{
	pthread_setcancelstate(w->cancel_state, NULL);
}

static inline void cancel_block(void)
{
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
}

/*
 * Give a cancelled waiter's event back (both locks held): it is the
 * oldest, so it goes in front.  If pushes have filled every slot since
 * it was granted, it is lost and counted as an overflow.
 */
static void evd_unget(struct rapt_core_evd *evd, const struct rapt_event *ev)
{
	uint64_t head = evd->head - 1;

	if (rapt_unlikely(evd_count(evd) > evd->mask)) {
		evd_overflow(evd);		/* unlocks */
		evd_lock_all(evd);
		return;
	}
	*ring_at(evd, head) = *ev;
	seq_set(&evd->head, head);
	evd_signal(evd);
}

/*
 * @w leaves the line (both locks held): unlinked if still waiting, and
 * if @cancelled its event given back.  Return: the wait's result.
 */
static int waiter_leave(struct rapt_core_evd *evd, struct evd_waiter *w,
			bool cancelled)
{
	int ret = w->state == EVD_W_GRANTED ? 0 :
		  w->state == EVD_W_CANCELED ? RAPT_ECANCELED : RAPT_ETIMEDOUT;

	if (w->state == EVD_W_WAITING) {
		waiter_unlink(evd, w);
		evd_update_room(evd);
	} else if (cancelled && w->state == EVD_W_GRANTED) {
		evd_unget(evd, w->event);
	}
	if (--evd->nwaiters == 0 && evd->freeing)
		pthread_cond_signal(&evd->gone);
	pthread_cond_destroy(&w->cond);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Blocking                                                            */
/* ------------------------------------------------------------------ */

/*
 * The leader's sleep is over, or was cancelled: if it slept on the wait
 * object the provider handles what woke it, in this thread (pushes to
 * @w meanwhile need no wakeup); then both locks again.
 */
static void lead_end(struct rapt_core_evd *evd, struct evd_waiter *w)
{
	void *pevd = evd->obj.prov;

	if (w->in_poll) {
		w->in_poll = false;
		if (evd->wait_done)
			evd->wait_done(pevd);
		else
			evd->progress(pevd);
	}
	tls_leading = NULL;
	evd_lock_all(evd);
	w->polling = false;
	if (w->kicked) {
		uint64_t v;

		w->kicked = false;
		if (rapt_sys_read(evd->wake_fd, &v, sizeof(v)) < 0 &&
		    errno != EAGAIN)
			rapt_err("EVD %p: eventfd read failed: %m",
				 (void *)evd->handle);
	}
}

static void lead_cancelled(void *arg)
{
	struct evd_waiter *w = arg;

	cancel_block();
	lead_end(w->evd, w);
	waiter_leave(w->evd, w, true);
	evd_unlock_all(w->evd);
}

/* The leader's sleep, in poll() (or a nap if @nap), cancellable. */
static int lead_sleep(struct rapt_core_evd *evd, struct evd_waiter *w,
		      const struct timespec *deadline, bool nap)
{
	/* The results go through *w: a local written after the cleanup's
	 * setjmp would have to be volatile. */
	w->in_poll = !nap;
	w->sleep_rc = 0;
	w->sleep_err = 0;
	pthread_cleanup_push(lead_cancelled, w);
	cancel_allow(w);
	if (nap)
		evd_nap(evd, &w->sleep_err);
	else
		w->sleep_rc = evd_poll(evd, deadline, &w->sleep_err);
	cancel_block();
	pthread_cleanup_pop(0);
	if (w->sleep_err)
		rapt_err("EVD %p: ppoll: %s", (void *)evd->handle,
			 strerror(w->sleep_err));
	return w->sleep_rc;
}

/*
 * The leader's turn (called and returns with both locks held): arm the
 * provider's wait object, sleep on it, and let the provider turn what
 * woke us into events, all in this thread.  Pushes meanwhile grant to
 * us under the locks; one from another thread writes wake_fd.
 */
static int waiter_lead(struct rapt_core_evd *evd, struct evd_waiter *w,
		       const struct timespec *deadline)
{
	void *pevd = evd->obj.prov;
	int ret, rc = 0;

	w->polling = true;
	evd_unlock_all(evd);
	tls_leading = w;
	ret = evd->ops->evd_trywait(pevd, RAPT_PROV_WAIT_BLOCK);
	if (!ret) {
		rc = lead_sleep(evd, w, deadline, false);
	} else {
		/* Work is pending (RAPT_EAGAIN): look once more without
		 * sleeping.  A provider that cannot arm (it logs why) is
		 * looked at once a millisecond rather than in a busy loop. */
		evd->progress(pevd);
		if (ret != RAPT_EAGAIN)
			lead_sleep(evd, w, NULL, true);
		if (deadline && !deadline_left(deadline, &(struct timespec){0}))
			rc = RAPT_ETIMEDOUT;
	}
	lead_end(evd, w);
	return rc;
}

static void follow_cancelled(void *arg)
{
	struct evd_waiter *w = arg;

	/* The condition wait took evd->lock back before this runs. */
	evd_rlock(w->evd);
	waiter_leave(w->evd, w, true);
	evd_unlock_all(w->evd);
}

/* A follower's sleep on its condition variable, cancellable. */
static int follow_sleep(struct rapt_core_evd *evd, struct evd_waiter *w,
			const struct timespec *deadline)
{
	/* The result goes through *w, as in lead_sleep(). */
	pthread_cleanup_push(follow_cancelled, w);
	cancel_allow(w);
	if (deadline)
		w->sleep_rc = pthread_cond_timedwait(&w->cond, &evd->lock,
						     deadline);
	else
		w->sleep_rc = pthread_cond_wait(&w->cond, &evd->lock);
	cancel_block();
	pthread_cleanup_pop(0);
	return w->sleep_rc;
}

/*
 * A waiter behind the leader, or any waiter of a provider without a wait
 * object: sleep on the condition variable (called and returns with both
 * locks held).  Without a wait object, a wakeup that brings nothing gives
 * a caller-driven provider a turn.
 */
static int waiter_follow(struct rapt_core_evd *evd, struct evd_waiter *w,
			 const struct timespec *deadline)
{
	int rc;

	evd_runlock(evd);
	rc = follow_sleep(evd, w, deadline);
	if (w->state == EVD_W_WAITING && rc != ETIMEDOUT && evd->pfd < 0) {
		pthread_mutex_unlock(&evd->lock);
		evd_progress(evd);
		pthread_mutex_lock(&evd->lock);
	}
	evd_rlock(evd);
	return rc == ETIMEDOUT ? RAPT_ETIMEDOUT : 0;
}

/* Block for an event; called and returns with both locks held. */
static int evd_block(struct rapt_core_evd *evd, int64_t timeout_us,
		     uint32_t threshold, struct rapt_event *event,
		     uint32_t *nmore, int cancel_state)
{
	const struct timespec *dl = NULL;
	struct timespec deadline;
	struct evd_waiter w;
	int rc = 0, ret;

	if (timeout_us != RAPT_TIMEOUT_INFINITE) {
		deadline_after(&deadline, timeout_us);
		dl = &deadline;
	}
	evd_find_pfd(evd);
	evd_make_wake_fd(evd);
	waiter_init(&w, evd, threshold, event, cancel_state);
	waiter_enqueue(evd, &w);
	while (w.state == EVD_W_WAITING && !rc) {
		if (evd->pfd >= 0 && evd->wfirst == &w)
			rc = waiter_lead(evd, &w, dl);
		else
			rc = waiter_follow(evd, &w, dl);
	}
	ret = waiter_leave(evd, &w, false);
	if (!ret)
		*nmore = w.nmore;
	return ret;
}

/* Take the oldest event if @threshold are queued (both locks held).
 * Return: 0, RAPT_EAGAIN (too few), RAPT_ECANCELED (being freed). */
static int evd_take(struct rapt_core_evd *evd, uint32_t threshold,
		    struct rapt_event *event, uint32_t *more)
{
	if (rapt_unlikely(evd->freeing))
		return RAPT_ECANCELED;
	if (evd_count(evd) < threshold)
		return RAPT_EAGAIN;
	ring_take(evd, event);
	*more = evd_count(evd);
	return 0;
}

/*
 * Nothing to take at once (both locks held, and on return): the
 * provider's progress, then the sleep, with cancellation disabled except
 * in the sleep itself (see "Thread cancellation").
 */
static int __attribute__((noinline))
evd_wait_slow(struct rapt_core_evd *evd, int64_t timeout_us,
	      uint32_t threshold, struct rapt_event *event, uint32_t *more)
{
	int cs, ret = RAPT_EAGAIN;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
	evd_find_pfd(evd);
	/* A caller-driven provider gets a look first.  With a wait object
	 * the sleep looks: a ready object ends it at once. */
	if (evd->progress && (evd->pfd < 0 || !timeout_us)) {
		evd_unlock_all(evd);
		evd_progress(evd);
		evd_lock_all(evd);
		ret = evd_take(evd, threshold, event, more);
	}
	if (ret == RAPT_EAGAIN)
		ret = timeout_us ? evd_block(evd, timeout_us, threshold, event,
					     more, cs)
				 : RAPT_ETIMEDOUT;
	pthread_setcancelstate(cs, NULL);
	return ret;
}

static int evd_wait_check(struct rapt_core_evd *evd, int64_t timeout_us,
			  unsigned int threshold, struct rapt_event *event)
{
	if (!event)
		return rapt__fail(RAPT_EINVAL, "rapt_evd_wait: NULL event");
	if (timeout_us < 0 && timeout_us != RAPT_TIMEOUT_INFINITE)
		return rapt__fail(RAPT_EINVAL,
				  "rapt_evd_wait: negative timeout %lld",
				  (long long)timeout_us);
	if (!threshold || threshold > evd->qlen)
		return rapt__fail(RAPT_ERANGE,
				  "rapt_evd_wait: threshold %u is not in 1..%u (qlen)",
				  threshold, evd->qlen);
	return 0;
}

/**
 * rapt_evd_wait - wait for events
 * @handle: the EVD
 * @timeout_us: microseconds, 0 to check once, RAPT_TIMEOUT_INFINITE
 * @threshold: return once this many events are queued (1..qlen)
 * @event: output, the oldest event
 * @nmore: output, events still queued after it when it was taken (may be
 *         NULL)
 *
 * Waiters are served in arrival order among those whose threshold is met;
 * see docs/evd-semantics.md.
 *
 * Return: 0, RAPT_ETIMEDOUT (nothing dequeued), RAPT_ERANGE, RAPT_EINVAL,
 * RAPT_ECANCELED (the EVD is being freed), RAPT_EBADHANDLE,
 * RAPT_EHANDLETYPE.
 */
RAPT_API int rapt_evd_wait(struct rapt_evd *handle, int64_t timeout_us,
			   unsigned int threshold, struct rapt_event *event,
			   unsigned int *nmore)
{
	struct rapt_core_evd *evd;
	uint32_t more = 0;
	int ret;

	evd = evd_fast(handle);
	if (rapt_unlikely(!evd))
		return evd_bad(handle);
	ret = evd_wait_check(evd, timeout_us, threshold, event);
	if (ret)
		return ret;
	evd_lock_all(evd);
	ret = evd_take(evd, threshold, event, &more);
	if (ret == RAPT_EAGAIN)
		ret = evd_wait_slow(evd, timeout_us, threshold, event, &more);
	evd_unlock_all(evd);
	if (!ret && nmore)
		*nmore = more;
	return ret;
}

/* ------------------------------------------------------------------ */
/* File descriptor                                                     */
/* ------------------------------------------------------------------ */

/* Create the eventfd on first use; called with evd->lock held. */
static int evd_make_fd(struct rapt_core_evd *evd)
{
	if (evd->efd >= 0)
		return 0;
	evd->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (evd->efd < 0)
		return rapt__fail(rapt__errno_status(errno),
				  "EVD: eventfd() failed: %s", strerror(errno));
	return 0;
}

/*
 * The consumer's fd (evd->lock held): the eventfd, or for a provider with
 * a wait object an epoll set of the eventfd and that object, so that the
 * consumer's own poll wakes for the provider's descriptors directly.
 */
static int evd_make_cfd(struct rapt_core_evd *evd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ret, fd;

	ret = evd_make_fd(evd);
	if (ret)
		return ret;
	evd_find_pfd(evd);
	if (evd->pfd < 0 || evd->cfd >= 0)
		return 0;
	fd = epoll_create1(EPOLL_CLOEXEC);
	if (fd < 0)
		return rapt__fail(rapt__errno_status(errno),
				  "EVD: epoll_create1() failed: %s",
				  strerror(errno));
	if (epoll_ctl(fd, EPOLL_CTL_ADD, evd->efd, &ev) ||
	    epoll_ctl(fd, EPOLL_CTL_ADD, evd->pfd, &ev)) {
		ret = rapt__fail(errno == ENOMEM ? RAPT_ENOMEM : RAPT_EIO,
				 "EVD: epoll_ctl() failed: %s",
				 strerror(errno));
		rapt_sys_close(fd);
		return ret;
	}
	evd->cfd = fd;
	return 0;
}

static int evd_fd_check(struct rapt_core_evd *evd, const char *fn)
{
	if (!(evd->obj.ia->attr.caps & RAPT_CAP_EVD_FD))
		return rapt__fail(RAPT_ENOTSUP,
				  "%s: IA %s does not offer RAPT_CAP_EVD_FD",
				  fn, evd->obj.ia->attr.name);
	return 0;
}

/**
 * rapt_evd_get_fd - the EVD's file descriptor, created on first use
 * @handle: the EVD
 * @fd: output; owned by rapt, closed by rapt_evd_free()
 *
 * An eventfd, or, when the provider has wait objects, an epoll set of
 * that eventfd and the provider's descriptors (docs/evd-semantics.md).
 *
 * Return: 0, RAPT_ENOTSUP (no RAPT_CAP_EVD_FD), RAPT_EINVAL,
 * RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_EMFILE (out of descriptors),
 * RAPT_ENOMEM, RAPT_EIO.
 */
RAPT_API int rapt_evd_get_fd(struct rapt_evd *handle, int *fd)
{
	struct rapt_core_evd *evd;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_lookup(handle, RAPT_CLS_EVD, &o);
	if (ret)
		return ret;
	evd = to_evd(o);
	if (!fd)
		return rapt__fail(RAPT_EINVAL, "rapt_evd_get_fd: NULL output");
	ret = evd_fd_check(evd, "rapt_evd_get_fd");
	if (ret)
		return ret;
	pthread_mutex_lock(&evd->lock);
	ret = evd_make_cfd(evd);
	if (!ret)
		*fd = evd->cfd >= 0 ? evd->cfd : evd->efd;
	pthread_mutex_unlock(&evd->lock);
	return ret;
}

/* rapt_evd_arm's second half: arm the provider's wait objects. */
static int evd_arm_provider(struct rapt_core_evd *evd)
{
	int ret;

	RAPT_NOCANCEL(ret = evd->ops->evd_trywait(evd->obj.prov,
						  RAPT_PROV_WAIT_FD));
	if (!ret || ret == RAPT_EAGAIN)
		return ret;
	return rapt__fail(ret, "rapt_evd_arm: the provider could not arm its wait objects: %s",
			  rapt_strerror(ret));
}

/* Consume a pending wakeup; called with evd->lock held. */
static void evd_drain_fd(struct rapt_core_evd *evd)
{
	uint64_t v;

	/* Only this EVD writes it, and says so: no syscall otherwise. */
	if (!evd->efd_set)
		return;
	evd->efd_set = false;
	if (rapt_sys_read(evd->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		rapt_err("EVD %p: eventfd read failed: %m",
			 (void *)evd->handle);
}

/**
 * rapt_evd_arm - request a wakeup on the EVD's fd for the next event
 * @handle: the EVD
 *
 * Drains the fd, then arms it unless events are already queued.  The next
 * push writes the fd and disarms it.  With a provider that has wait
 * objects, also arms them (evd_trywait); work already pending there
 * counts as queued events.
 *
 * Return: 0 (armed), RAPT_EAGAIN (events queued or pending: dequeue, then
 * arm again), RAPT_ENOTSUP, RAPT_EBADHANDLE, RAPT_EHANDLETYPE,
 * RAPT_EMFILE, RAPT_ENOMEM, RAPT_EIO, or the provider's status.
 */
RAPT_API int rapt_evd_arm(struct rapt_evd *handle)
{
	struct rapt_core_evd *evd;
	int ret, pfd = -1;

	evd = evd_fast(handle);
	if (rapt_unlikely(!evd))
		return evd_bad(handle);
	ret = evd_fd_check(evd, "rapt_evd_arm");
	if (ret)
		return ret;
	pthread_mutex_lock(&evd->lock);
	ret = evd_make_cfd(evd);
	if (ret)
		goto out;
	/* A caller-driven provider gets a look first; one with wait objects
	 * needs none (a ready object makes the fd readable at once). */
	if (evd->pfd < 0 && evd->progress) {
		pthread_mutex_unlock(&evd->lock);
		evd_progress(evd);
		pthread_mutex_lock(&evd->lock);
	}
	evd_drain_fd(evd);
	evd_rlock(evd);
	if (evd_count(evd)) {
		evd->armed = false;
		ret = RAPT_EAGAIN;
	} else {
		evd->armed = true;
		evd->armer = &tls_me;
	}
	evd_update_room(evd);
	evd_runlock(evd);
	pfd = evd->pfd;
out:
	pthread_mutex_unlock(&evd->lock);
	/* Armed first, so that a push from now on writes the eventfd; then
	 * the provider's objects, so that what it has not pushed yet makes
	 * them readable. */
	if (!ret && pfd >= 0)
		ret = evd_arm_provider(evd);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Software events and query                                           */
/* ------------------------------------------------------------------ */

/**
 * rapt_evd_post_software - queue a software event
 * @handle: an EVD with RAPT_EVD_SOFTWARE
 * @pointer: carried in the event's u.sw.pointer
 *
 * Unlike a provider push, a post on a full EVD loses nothing: the caller
 * is told and nothing is counted.
 *
 * Return: 0, RAPT_EOVERFLOW (full; nothing queued), RAPT_EINVAL (no
 * software stream), RAPT_EBADHANDLE, RAPT_EHANDLETYPE.
 */
RAPT_API int rapt_evd_post_software(struct rapt_evd *handle, void *pointer)
{
	struct rapt_event ev = { .type = RAPT_EV_SOFTWARE };
	struct rapt_core_evd *evd;

	evd = evd_fast(handle);
	if (rapt_unlikely(!evd))
		return evd_bad(handle);
	if (!(evd->streams & RAPT_EVD_SOFTWARE))
		return rapt__fail(RAPT_EINVAL,
				  "rapt_evd_post_software: the EVD has no RAPT_EVD_SOFTWARE stream");
	ev.u.sw.pointer = pointer;
	evd_lock_all(evd);
	if (ring_full(evd)) {
		evd_unlock_all(evd);
		return rapt__fail(RAPT_EOVERFLOW,
				  "rapt_evd_post_software: the EVD is full (%u events)",
				  evd->qlen);
	}
	return evd_push_locked(evd, &ev);
}

/**
 * rapt_evd_query - read an EVD's state
 * @handle: the EVD
 * @info: output
 * @info_size: sizeof(*info) as the caller knows it; at most that many
 *             bytes are written
 *
 * Return: 0, RAPT_EINVAL, RAPT_EBADHANDLE, RAPT_EHANDLETYPE.
 */
RAPT_API int rapt_evd_query(struct rapt_evd *handle,
			    struct rapt_evd_info *info, size_t info_size)
{
	struct rapt_evd_info i = { 0 };
	struct rapt_core_evd *evd;
	struct rapt_obj *o;
	int ret;

	ret = rapt__obj_lookup(handle, RAPT_CLS_EVD, &o);
	if (ret)
		return ret;
	if (!info || !info_size)
		return rapt__fail(RAPT_EINVAL, "rapt_evd_query: no output");
	evd = to_evd(o);
	i.qlen = evd->qlen;
	i.streams = evd->streams;
	evd_lock_all(evd);
	i.count = evd_count(evd);
	i.waiters = evd->nwaiters;
	i.overflows = evd->overflows;
	evd_unlock_all(evd);
	memcpy(info, &i, RAPT_MIN(info_size, sizeof(i)));
	return 0;
}
