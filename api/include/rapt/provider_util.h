/* SPDX-License-Identifier: MIT */
/*
 * rapt provider toolkit: what every provider needs around its transport,
 * written once.
 *
 * A static, position-independent library (librapt-util.a, linked through
 * "pkg-config --libs rapt-provider"; in-tree providers link the libtool
 * convenience library providers/util/librapt-util.la).  Its symbols end up
 * inside the provider's own DSO, hidden there like the provider's own code,
 * so two providers in one process each carry their own copy and nothing of
 * it is part of librapt's ABI: it may change between rapt releases, and a
 * provider picks up a new version when it is rebuilt.
 *
 * Parts:
 *   engine    a progress engine: one thread over an epoll set, one-shot
 *             timers, cross-thread calls, consumer-driven passes
 *             (providers/util/engine.c)
 *
 * Nothing here takes a lock of the caller's; the engine's own locks are
 * leaves.  docs/provider-guide.md, "The provider toolkit", is the
 * walk-through, with the tcp provider as the worked example.
 */
#ifndef RAPT_API_PROVIDER_UTIL_H
#define RAPT_API_PROVIDER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Progress engine (providers/util/engine.c)                           */
/* ------------------------------------------------------------------ */

/*
 * One thread sleeps in epoll_wait() over every registered fd and an
 * eventfd, with the timeout of the earliest timer.  Each pass runs the
 * handlers of the ready registrations, then the deferred functions, then
 * the expired timers.  Whoever runs a pass ("the runner") holds the
 * engine's run lock: handlers, deferred functions and timers never run
 * concurrently, whichever thread runs them.  That is the engine's own
 * thread, or a consumer thread that busy-polls (rapt_engine_drive()); the
 * engine thread then stands aside and only looks once a millisecond.
 */
struct rapt_engine;

/**
 * struct rapt_io - an fd registered with an engine
 * @fd: the file descriptor (-1 once rapt_engine_close() closed it)
 * @events: the registered EPOLL* interest
 * @registered: whether @fd is in the engine's epoll set
 * @handler: called by the runner with the ready EPOLL* bits
 *
 * Embed it in the object the fd belongs to and find the object again
 * with rapt_container_of() in @handler.  Registrations are
 * level-triggered unless @events has EPOLLET.  rapt_engine_close() never
 * waits: a handler may still be called once for an @io that was just
 * deleted from another thread, so a handler takes its object's lock and
 * checks its state first.  An object that embeds a rapt_io is torn down by
 * the runner (a handler, or a rapt_engine_call()) and its memory freed
 * through rapt_engine_retire().
 */
struct rapt_io {
	int fd;
	uint32_t events;
	bool registered;
	void (*handler)(struct rapt_io *io, uint32_t events);
};

/**
 * struct rapt_timer - a one-shot timer
 * @deadline_ns: CLOCK_MONOTONIC deadline (rapt_now_ns()); 0 when not armed
 * @fire: called by the runner once the deadline has passed
 * @next: the engine's list, in deadline order
 * @prev: the engine's list
 *
 * Set up with rapt_timer_init(); the engine owns the other fields.
 */
struct rapt_timer {
	uint64_t deadline_ns;
	void (*fire)(struct rapt_timer *t);
	struct rapt_timer *next, *prev;
};

/**
 * struct rapt_retire - a retired object's place in the engine's graveyard
 * @io: the object's registration
 * @fn: frees the object
 * @arg: for @fn
 * @next: the graveyard
 *
 * Embed one in each object that embeds a struct rapt_io; filled in by
 * rapt_engine_retire().
 */
struct rapt_retire {
	const struct rapt_io *io;
	void (*fn)(void *arg);
	void *arg;
	struct rapt_retire *next;
};

/**
 * rapt_engine_start - create an engine and start its thread
 * @eng: output, the engine
 * @prov: the provider's name: logs are its own, and the thread is named
 *        "rapt-<prov>" (cut to 15 characters); the string must outlive
 *        the engine
 *
 * The thread blocks every signal: it never runs the application's
 * handlers.
 *
 * Return: 0, RAPT_ENOMEM (also when epoll_create1(), eventfd() or the
 * thread cannot be made; logged), RAPT_EPROVIDER (the eventfd cannot be
 * registered).
 */
int rapt_engine_start(struct rapt_engine **eng, const char *prov);

/**
 * rapt_engine_stop - stop the thread and free the engine
 * @eng: the engine; every registration and timer must be gone
 *
 * Deferred functions still queued run before the thread exits.  Logs a
 * warning if a timer is still armed.
 */
void rapt_engine_stop(struct rapt_engine *eng);

/**
 * rapt_engine_add - register @io's fd with the engine
 * @eng: the engine
 * @io: @io->fd and @io->handler set
 * @events: EPOLL* interest
 *
 * Any thread.  Sets @io->events and @io->registered on success.
 *
 * Return: 0, RAPT_ENOMEM (the kernel's ENOMEM or ENOSPC), RAPT_EPROVIDER
 * (any other epoll_ctl() error, logged).
 */
int rapt_engine_add(struct rapt_engine *eng, struct rapt_io *io,
		    uint32_t events);

/**
 * rapt_engine_mod - change the interest of a registered @io
 * @eng: the engine
 * @io: a registered io
 * @events: EPOLL* interest
 *
 * Return: as rapt_engine_add().
 */
int rapt_engine_mod(struct rapt_engine *eng, struct rapt_io *io,
		    uint32_t events);

/**
 * rapt_engine_close - unregister @io and close its socket
 * @eng: the engine @io is registered with (or not yet)
 * @io: its fd is closed and set to -1; nothing happens if it is -1
 * @abort: close with an RST (SO_LINGER 0): nothing queued is sent, no
 *         TIME_WAIT
 *
 * Never waits.  Deletes the registration before close(): since Linux 6.10
 * an epoll_wait() in another thread may hold the file for a moment, and
 * the last reference would then drop in that thread (a FIN delayed until
 * the engine thread's next wakeup).  When the runner calls it, @io is also
 * forgotten in the rest of the current batch.
 */
void rapt_engine_close(struct rapt_engine *eng, struct rapt_io *io,
		       bool abort);

/**
 * rapt_engine_rebind - move @old's registration (same fd) to @io
 * @eng: the engine
 * @old: a registered io
 * @io: takes @old's fd, with @events
 * @events: EPOLL* interest
 *
 * Runner only.  For an object that hands its fd to another (a listener's
 * request becoming a connection).  An EPOLL_CTL_MOD: it allocates
 * nothing, so it cannot fail for want of memory.
 *
 * Return: as rapt_engine_mod(); on failure @old keeps the registration.
 */
int rapt_engine_rebind(struct rapt_engine *eng, struct rapt_io *old,
		       struct rapt_io *io, uint32_t events);

/**
 * rapt_engine_defer - run @fn(@arg) on the engine thread soon
 * @eng: the engine
 * @fn: the function
 * @arg: for @fn
 *
 * Any thread.  Deferred functions run in the order they were queued,
 * after the handlers of a pass.
 *
 * Return: 0, RAPT_ENOMEM.
 */
int rapt_engine_defer(struct rapt_engine *eng, void (*fn)(void *),
		      void *arg);

/**
 * rapt_engine_call - run @fn(@arg) between two passes of the engine
 * @eng: the engine
 * @fn: the function
 * @arg: for @fn
 *
 * Runs in the caller's thread under the run lock, after the deferred
 * functions queued before it (waiting for a pass under way to end), so no
 * handler, timer or deferred function runs meanwhile; at once when the
 * caller is already the runner.  The caller must hold no lock a handler
 * takes.  Never fails.
 */
void rapt_engine_call(struct rapt_engine *eng, void (*fn)(void *),
		      void *arg);

/**
 * rapt_engine_drive - run a pass of the engine in the caller's thread
 * @eng: the engine
 *
 * For a consumer that busy-polls: whatever is ready is handled here, at
 * once, instead of after a wakeup of the engine thread, which stands
 * aside while such passes keep coming (until none came for 500 us).  Does
 * nothing when another thread runs a pass.  The caller holds no lock a
 * handler takes.
 */
void rapt_engine_drive(struct rapt_engine *eng);

/**
 * rapt_engine_fd - the descriptor a consumer's thread may sleep on
 * @eng: the engine
 *
 * The engine's epoll set itself: readable (level-triggered) while a
 * registration or the engine's own eventfd is ready.  A provider hands it
 * to the core as an EVD's wait object (the evd_wait_fd op).
 *
 * Return: the descriptor, owned by the engine.
 */
int rapt_engine_fd(struct rapt_engine *eng);

/**
 * rapt_engine_sleep_begin - a consumer is about to sleep on rapt_engine_fd()
 * @eng: the engine
 *
 * For the evd_trywait op (RAPT_PROV_WAIT_BLOCK).  While any consumer
 * sleeps, the engine thread stands aside as it does for a busy-polling
 * one: the sleeper handles what woke it, with no thread switch.  The
 * thread still runs timers and deferred work, and takes over again once
 * no consumer sleeps or drives.
 */
void rapt_engine_sleep_begin(struct rapt_engine *eng);

/**
 * rapt_engine_sleep_end - the sleep rapt_engine_sleep_begin() announced
 * ended
 * @eng: the engine
 *
 * For the evd_wait_done op, which then handles what woke the consumer:
 * its own connections' data, or a pass (rapt_engine_drive()).  Counts as
 * driving: the engine thread stays aside between two sleeps.
 */
void rapt_engine_sleep_end(struct rapt_engine *eng);

/**
 * rapt_engine_lease - a consumer will run the passes for a while
 * @eng: the engine
 *
 * For the evd_trywait op (RAPT_PROV_WAIT_FD), when the consumer sleeps in
 * its own poll() and no call tells when it stops: the engine thread stands
 * aside as after a pass the consumer drove, and takes over if the consumer
 * has not come back within half a millisecond.
 */
void rapt_engine_lease(struct rapt_engine *eng);

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
 * after that batch, whose events for @io it drops; the 64th object
 * waiting so wakes the thread.
 */
void rapt_engine_retire(struct rapt_engine *eng, struct rapt_retire *r,
			const struct rapt_io *io, void (*fn)(void *),
			void *arg);

/**
 * rapt_engine_on_thread - whether the caller is the runner of a pass
 * @eng: the engine
 *
 * Return: true inside a handler, deferred function, timer or
 * rapt_engine_call() of @eng.
 */
bool rapt_engine_on_thread(struct rapt_engine *eng);

/**
 * rapt_timer_init - set up a timer, not armed
 * @t: the timer
 * @fire: what the runner calls when it expires
 */
static inline void rapt_timer_init(struct rapt_timer *t,
				   void (*fire)(struct rapt_timer *t))
{
	t->deadline_ns = 0;
	t->fire = fire;
	t->next = t->prev = NULL;
}

/**
 * rapt_timer_arm - arm (or re-arm) @t to fire in @delay_ns
 * @eng: the engine
 * @t: the timer
 * @delay_ns: from now
 *
 * Any thread.  Timers with equal deadlines fire in the order they were
 * armed.  Wakes the engine thread if @t became the first deadline.
 */
void rapt_timer_arm(struct rapt_engine *eng, struct rapt_timer *t,
		    uint64_t delay_ns);

/**
 * rapt_timer_cancel - disarm @t
 * @eng: the engine
 * @t: the timer; nothing happens if it is not armed
 *
 * Any thread.  A firing already under way on another thread is not
 * waited for.
 */
void rapt_timer_cancel(struct rapt_engine *eng, struct rapt_timer *t);

/**
 * rapt_timer_armed - whether @t is armed
 * @eng: the engine
 * @t: the timer
 *
 * A fire function that finds its timer armed again runs for an older
 * arming that another thread superseded: it returns.
 *
 * Return: true if armed.
 */
bool rapt_timer_armed(struct rapt_engine *eng, struct rapt_timer *t);

/**
 * rapt_now_ns - the CLOCK_MONOTONIC time timers use
 *
 * Return: nanoseconds.
 */
uint64_t rapt_now_ns(void);

#ifdef __cplusplus
}
#endif

#endif /* RAPT_API_PROVIDER_UTIL_H */
