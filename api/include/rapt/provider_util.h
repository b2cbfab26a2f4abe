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
 *   lists     intrusive doubly linked lists (inline, below)
 *   engine    a progress engine: one thread over an epoll set, one-shot
 *             timers, cross-thread calls, consumer-driven passes
 *             (providers/util/engine.c)
 *   sockaddr  IPv4/IPv6 socket address helpers (providers/util/sockaddr.c)
 *   status    errno -> RAPT_E* mapping, the prov_status convention and its
 *             decoder (providers/util/status.c)
 *   lock      a mutex in one futex word for the post and poll paths
 *             (inline, below; the contended half in providers/util/lock.c,
 *             which librapt's EVDs use too)
 *   thread    a provider's own threads: no application signal handler
 *             runs in them, faults still reach the process's handlers
 *             (providers/util/thread.c)
 *   sys       system calls that are not cancellation points (inline,
 *             below; librapt uses them too)
 *
 * Nothing here takes a lock of the caller's; the engine's own locks are
 * leaves.  docs/provider-guide.md, "The provider toolkit", is the
 * walk-through, with the tcp provider as the worked example.
 */
#ifndef RAPT_API_PROVIDER_UTIL_H
#define RAPT_API_PROVIDER_UTIL_H

#ifndef __cplusplus
#include <stdatomic.h>
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Intrusive lists                                                     */
/* ------------------------------------------------------------------ */

/**
 * rapt_container_of - the object that embeds @ptr as its @member
 * @ptr: a pointer to the member
 * @type: the object's type
 * @member: the member's name
 */
#define rapt_container_of(ptr, type, member)				\
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/**
 * struct rapt_list - a node of a circular doubly linked list, or its head
 * @next: the next node (the head itself after the last node)
 * @prev: the previous node
 *
 * Embed one in each object; the list's head is a struct rapt_list of its
 * own.  An unlinked node (after rapt_list_init() or rapt_list_del())
 * points at itself.  No locking: the owner of the list provides it.
 */
struct rapt_list {
	struct rapt_list *next, *prev;
};

/** RAPT_LIST_INIT - static initializer of an empty list named @name */
#define RAPT_LIST_INIT(name) { &(name), &(name) }

/**
 * rapt_list_init - make @l an empty list, or an unlinked node
 * @l: the list head or node
 */
static inline void rapt_list_init(struct rapt_list *l)
{
	l->next = l->prev = l;
}

/**
 * rapt_list_empty - whether the list @head holds no node
 * @head: the list head
 *
 * Return: true if empty.  On a node: true if it is unlinked.
 */
static inline bool rapt_list_empty(const struct rapt_list *head)
{
	return head->next == head;
}

/**
 * rapt_list_insert_after - link @node right after @pos
 * @pos: a node, or the head (then @node becomes the first)
 * @node: an unlinked node
 */
static inline void rapt_list_insert_after(struct rapt_list *pos,
					  struct rapt_list *node)
{
	node->prev = pos;
	node->next = pos->next;
	pos->next->prev = node;
	pos->next = node;
}

/**
 * rapt_list_add - link @node first in @head
 * @head: the list head
 * @node: an unlinked node
 */
static inline void rapt_list_add(struct rapt_list *head,
				 struct rapt_list *node)
{
	rapt_list_insert_after(head, node);
}

/**
 * rapt_list_add_tail - link @node last in @head
 * @head: the list head
 * @node: an unlinked node
 */
static inline void rapt_list_add_tail(struct rapt_list *head,
				      struct rapt_list *node)
{
	rapt_list_insert_after(head->prev, node);
}

/**
 * rapt_list_del - unlink @node; it is left unlinked (pointing at itself)
 * @node: a linked or unlinked node
 */
static inline void rapt_list_del(struct rapt_list *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	rapt_list_init(node);
}

/**
 * rapt_list_first - the first node of @head
 * @head: the list head
 *
 * Return: the node, or NULL if the list is empty.
 */
static inline struct rapt_list *rapt_list_first(const struct rapt_list *head)
{
	return head->next != head ? head->next : NULL;
}

/**
 * rapt_list_last - the last node of @head
 * @head: the list head
 *
 * Return: the node, or NULL if the list is empty.
 */
static inline struct rapt_list *rapt_list_last(const struct rapt_list *head)
{
	return head->prev != head ? head->prev : NULL;
}

/**
 * rapt_list_for_each - walk @head's nodes from the first: @pos each
 * @pos: a struct rapt_list pointer, the current node
 * @head: the list head
 *
 * The body must not unlink @pos: use rapt_list_for_each_safe() for that.
 */
#define rapt_list_for_each(pos, head)					\
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

/**
 * rapt_list_for_each_safe - walk @head; the body may unlink @pos
 * @pos: a struct rapt_list pointer, the current node
 * @tmp: another, holding the next node
 * @head: the list head
 */
#define rapt_list_for_each_safe(pos, tmp, head)				\
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

/* ------------------------------------------------------------------ */
/* Allocation                                                          */
/* ------------------------------------------------------------------ */

/** RAPT_ZALLOC_CACHED_MAX - rapt_zalloc()'s largest malloc() block */
#define RAPT_ZALLOC_CACHED_MAX	1024u

/**
 * rapt_zalloc - calloc() for objects made and freed per connection
 * @n: the number of elements
 * @size: the size of each
 *
 * glibc's calloc() (2.36, Debian 12's) never takes a block from the
 * thread's cache (tcache), so an object allocated and freed once a
 * connection would go through the arenas each time (docs/performance.md,
 * "Connections: the allocator's share").  Up to RAPT_ZALLOC_CACHED_MAX
 * bytes this is malloc() and memset(), which the cache serves; larger
 * blocks still come from calloc(), which leaves fresh pages untouched.
 *
 * Return: the zeroed block, to be released with free(); NULL when out of
 * memory or when @n * @size overflows.
 */
static inline void *rapt_zalloc(size_t n, size_t size)
{
	size_t len;
	void *p;

	if (__builtin_mul_overflow(n, size, &len))
		return NULL;
	if (len > RAPT_ZALLOC_CACHED_MAX)
		return calloc(1, len);
	p = malloc(len);
	if (!p)
		return NULL;
	/* Else the compiler turns malloc() + memset() back into calloc(). */
	__asm__("" : "+r"(p));
	return memset(p, 0, len);
}

/* ------------------------------------------------------------------ */
/* System calls that are not cancellation points                       */
/* ------------------------------------------------------------------ */

/*
 * glibc's send(), recv(), sendmsg(), recvmsg(), read(), write(), close(),
 * connect(), accept4(), open(), poll(), epoll_wait() and nanosleep() are
 * cancellation points: a consumer thread cancelled (pthread_cancel(),
 * deferred) while a provider makes one of them inside a rapt call would
 * end with the provider's locks held (an EP's, or the engine's run lock
 * in a pass that a busy-polling consumer drives).  Only rapt_evd_wait()'s
 * sleep may act on a cancellation (rapt(7), "THREADING"): a provider makes
 * these system calls through the functions below instead.  They go
 * through syscall(2), which is not a cancellation point, and so also skip
 * the two atomic operations with which glibc's wrappers switch a thread
 * to asynchronous cancellation around each call.  Inline: the data path
 * makes them on every message.
 *
 * Each returns what the glibc function of the same name returns, with
 * errno set the same way (-1 and errno on failure).  rapt_sys_open() is
 * open() with a mode (used with O_CREAT), rapt_sys_poll() is poll() and
 * rapt_sys_epoll_wait() epoll_wait() (both with a timeout in
 * milliseconds, -1 for none), rapt_sys_nanosleep() sleeps on
 * CLOCK_MONOTONIC and reports no remaining time.
 *
 * ThreadSanitizer builds with _GNU_SOURCE call glibc's functions instead
 * (RAPT_SYS_LIBC): tsan learns the order that a file descriptor gives
 * two threads (an eventfd written by one and read by the other) from its
 * interceptors, and without them reports races that are none.
 * Cancellation is not tested there (providers/tcp/test_cancel.c).
 */
#if !defined(RAPT_SYS_LIBC) && defined(_GNU_SOURCE)
#if defined(__SANITIZE_THREAD__)
#define RAPT_SYS_LIBC 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RAPT_SYS_LIBC 1
#endif
#endif
#endif

#ifdef RAPT_SYS_LIBC
#define RAPT_SYS_(libc_call, raw_call)	return libc_call
#else
#define RAPT_SYS_(libc_call, raw_call)	return raw_call
#if !defined(__USE_MISC) && !defined(__cplusplus)
long syscall(long number, ...);	/* unistd.h's, hidden by strict modes */
#endif
#endif

/* Linux's values, which strict modes leave undefined. */
#define RAPT_SYS_AT_FDCWD		(-100)
#define RAPT_SYS_CLOCK_MONOTONIC	1

/* The kernel's sigset_t, the size ppoll() and epoll_pwait() check (no
 * mask is given: it must still be right). */
#ifdef _NSIG
#define RAPT_SYS_SIGSET_SIZE	(_NSIG / 8)
#else
#define RAPT_SYS_SIGSET_SIZE	8
#endif

static inline ssize_t rapt_sys_send(int fd, const void *buf, size_t len,
				    int flags)
{
	RAPT_SYS_(send(fd, buf, len, flags),
		  syscall(SYS_sendto, fd, buf, len, flags, NULL, 0));
}

static inline ssize_t rapt_sys_recv(int fd, void *buf, size_t len, int flags)
{
	RAPT_SYS_(recv(fd, buf, len, flags),
		  syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL));
}

static inline ssize_t rapt_sys_sendmsg(int fd, const struct msghdr *msg,
				       int flags)
{
	RAPT_SYS_(sendmsg(fd, msg, flags),
		  syscall(SYS_sendmsg, fd, msg, flags));
}

static inline ssize_t rapt_sys_recvmsg(int fd, struct msghdr *msg, int flags)
{
	RAPT_SYS_(recvmsg(fd, msg, flags),
		  syscall(SYS_recvmsg, fd, msg, flags));
}

static inline ssize_t rapt_sys_read(int fd, void *buf, size_t len)
{
	RAPT_SYS_(read(fd, buf, len), syscall(SYS_read, fd, buf, len));
}

static inline ssize_t rapt_sys_write(int fd, const void *buf, size_t len)
{
	RAPT_SYS_(write(fd, buf, len), syscall(SYS_write, fd, buf, len));
}

static inline int rapt_sys_close(int fd)
{
	RAPT_SYS_(close(fd), (int)syscall(SYS_close, fd));
}

static inline int rapt_sys_connect(int fd, const struct sockaddr *sa,
				   socklen_t len)
{
	RAPT_SYS_(connect(fd, sa, len), (int)syscall(SYS_connect, fd, sa, len));
}

static inline int rapt_sys_accept4(int fd, struct sockaddr *sa,
				   socklen_t *len, int flags)
{
	RAPT_SYS_(accept4(fd, sa, len, flags),
		  (int)syscall(SYS_accept4, fd, sa, len, flags));
}

static inline int rapt_sys_open(const char *path, int flags,
				unsigned int mode)
{
	RAPT_SYS_(open(path, flags, mode),
		  (int)syscall(SYS_openat, RAPT_SYS_AT_FDCWD, path, flags,
			       mode));
}

/* ppoll(), which every architecture has (poll() is missing on some). */
static inline int rapt_sys_poll(struct pollfd *fds, unsigned int n,
				int timeout_ms)
{
#ifdef RAPT_SYS_LIBC
	return poll(fds, n, timeout_ms);
#else
	struct timespec ts = {
		.tv_sec = timeout_ms / 1000,
		.tv_nsec = (long)(timeout_ms % 1000) * 1000000,
	};

	return (int)syscall(SYS_ppoll, fds, (nfds_t)n,
			    timeout_ms < 0 ? NULL : &ts, NULL,
			    RAPT_SYS_SIGSET_SIZE);
#endif
}

/* epoll_pwait() without a mask, which every architecture has. */
static inline int rapt_sys_epoll_wait(int epfd, struct epoll_event *ev,
				      int max, int timeout_ms)
{
	RAPT_SYS_(epoll_wait(epfd, ev, max, timeout_ms),
		  (int)syscall(SYS_epoll_pwait, epfd, ev, max, timeout_ms,
			       NULL, RAPT_SYS_SIGSET_SIZE));
}

static inline int rapt_sys_nanosleep(const struct timespec *req)
{
	RAPT_SYS_(nanosleep(req, NULL),
		  (int)syscall(SYS_clock_nanosleep, RAPT_SYS_CLOCK_MONOTONIC,
			       0, req, NULL));
}

#undef RAPT_SYS_
#undef RAPT_SYS_AT_FDCWD
#undef RAPT_SYS_CLOCK_MONOTONIC
#undef RAPT_SYS_SIGSET_SIZE

/**
 * rapt_nocancel_begin - hold off thread cancellation for a stretch of code
 *
 * For code that calls a library whose functions may reach a cancellation
 * point: libibverbs' and librdmacm's commands are write()s and ioctl()s,
 * a post on rxe or siw rings the device with write(), and
 * rdma_get_cm_event() reads.  librapt already runs every control op of a
 * provider this way, and its loading (dlopen(), init, get_devices), and
 * the engine every pass (rapt_engine_drive(), rapt_engine_call() and the
 * engine thread's own); a provider brackets such calls on its data path
 * itself (a post, its evd_progress).  Two atomic operations on the
 * thread's own word, about 25 ns the pair: keep them off a path that
 * cannot reach a cancellation point.  A cancellation requested meanwhile
 * waits for the thread's next cancellation point after
 * rapt_nocancel_end().  Not a cancellation point itself; nests.
 *
 * Return: the caller's cancelability state, for rapt_nocancel_end().
 */
static inline int rapt_nocancel_begin(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

/**
 * rapt_nocancel_end - restore what rapt_nocancel_begin() changed
 * @old: its return value
 */
static inline void rapt_nocancel_end(int old)
{
	pthread_setcancelstate(old, NULL);
}

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
 * @node: in the engine's list, in deadline order, while armed
 *
 * Set up with rapt_timer_init(); the engine owns the other fields.
 */
struct rapt_timer {
	uint64_t deadline_ns;
	void (*fire)(struct rapt_timer *t);
	struct rapt_list node;
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
 * The thread is made with rapt_thread_create(): it never runs the
 * application's signal handlers.
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
 * rapt_engine_del - unregister @io, keeping its fd open
 * @eng: the engine
 * @io: a registered io; rapt_engine_add() registers it again
 *
 * Runner.  For an fd to be ignored for a while whose wakeups carry no
 * poll key, such as a verbs completion channel: with an interest of 0
 * (rapt_engine_mod()) each of its wakeups still wakes an epoll_wait() on
 * the engine's set, which only then finds nothing to report and sleeps
 * again, inside the kernel, and so does any poll() of the engine's fd.
 * Clears @io->events and @io->registered.
 *
 * Return: 0, RAPT_EPROVIDER (an epoll_ctl() error, logged).
 */
int rapt_engine_del(struct rapt_engine *eng, struct rapt_io *io);

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
 * For an object that hands its fd to another (a listener's request
 * becoming a connection, a connection handing its close over).  The
 * runner calls it, or a thread that holds the lock @old's handler takes
 * first and leaves @old->fd at -1 afterwards: an event for @old that a
 * pass in another thread collected before the move must find no fd.  An
 * EPOLL_CTL_MOD: it allocates nothing, so it cannot fail for want of
 * memory.
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
 * rapt_engine_aside_max - how rarely the engine thread may look while a
 *                         consumer keeps driving
 * @eng: the engine
 * @ms: the longest interval, in milliseconds (at least 1, the default)
 *
 * While consumers drive the passes, the engine thread looks every
 * millisecond whether they still do; with a longer maximum the interval
 * doubles from 1 ms up to @ms as long as they keep driving, so that the
 * thread's wakeups do not take a CPU from a polling consumer (the verbs
 * layer and tcp use 16 ms).  Timers still fire on time: a busy-polling
 * consumer's passes (rapt_engine_drive()) run them, and while a consumer
 * sleeps on the engine's fd the thread wakes for each.  The thread takes
 * over at most @ms after the last consumer stopped driving.
 */
void rapt_engine_aside_max(struct rapt_engine *eng, unsigned int ms);

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
	rapt_list_init(&t->node);
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

/* ------------------------------------------------------------------ */
/* Provider threads (providers/util/thread.c)                          */
/* ------------------------------------------------------------------ */

/**
 * rapt_thread_create - pthread_create() for a provider's own thread
 * @thread: output, as pthread_create()'s
 * @attr: as pthread_create()'s, or NULL
 * @fn: the thread's function
 * @arg: its argument
 *
 * The thread starts with every signal blocked but the faults it may
 * raise itself (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS): it
 * never runs the application's signal handlers, and a crash in it still
 * reaches the process's (a sanitizer's report, a crash reporter); Linux
 * kills a process without running any handler when a thread faults with
 * that signal blocked.  The caller's own mask is left as it was.  The engine's
 * thread (rapt_engine_start()) is made so.
 *
 * Return: 0, or pthread_create()'s error number.
 */
int rapt_thread_create(pthread_t *thread, const pthread_attr_t *attr,
		       void *(*fn)(void *), void *arg);

/* ------------------------------------------------------------------ */
/* A futex-word lock (providers/util/lock.c)                           */
/* ------------------------------------------------------------------ */

/*
 * A mutex in one 32-bit word, for locks taken on every post and every
 * poll: uncontended, a lock is one compare-and-swap and an unlock one
 * exchange, a few instructions each, where a pthread_mutex_t pair costs
 * about 57 (callgrind, docs/performance.md).  The word is 0 free, 1 held,
 * 2 held with perhaps a sleeper (U. Drepper, "Futexes Are Tricky", the
 * third mutex); a contended lock spins a little, then sleeps on the
 * futex.  No condition variables, not recursive, process-private.
 */
#ifndef __cplusplus	/* C11 atomics */
struct rapt_lock {
	_Atomic uint32_t word;
};

/**
 * rapt_lock_wait - the contended half of rapt_lock(): spin a little, then
 * mark the word 2 and sleep until it is taken
 * @word: a lock word that was not 0
 */
void rapt_lock_wait(_Atomic uint32_t *word);

/**
 * rapt_lock_wake - the contended half of rapt_unlock(): wake one sleeper
 * @word: a lock word just released from 2
 */
void rapt_lock_wake(_Atomic uint32_t *word);

static inline void rapt_lock_init(struct rapt_lock *l)
{
	atomic_init(&l->word, 0);
}

/* Take the lock if it is free; true if taken. */
static inline bool rapt_lock_try(struct rapt_lock *l)
{
	uint32_t c = 0;

	return __builtin_expect(atomic_compare_exchange_strong_explicit(
			&l->word, &c, 1, memory_order_acquire,
			memory_order_relaxed), 1);
}

static inline void rapt_lock(struct rapt_lock *l)
{
	if (__builtin_expect(!rapt_lock_try(l), 0))
		rapt_lock_wait(&l->word);
}

static inline void rapt_unlock(struct rapt_lock *l)
{
	if (__builtin_expect(atomic_exchange_explicit(&l->word, 0,
						      memory_order_release) !=
			     1, 0))
		rapt_lock_wake(&l->word);
}
#endif /* !__cplusplus */

/* ------------------------------------------------------------------ */
/* Socket addresses (providers/util/sockaddr.c)                        */
/* ------------------------------------------------------------------ */

/* Room rapt_sockaddr_str() needs for any address: "[v6%scope]:port". */
#define RAPT_SOCKADDR_STRLEN	64

/**
 * rapt_sockaddr_len - the length of an IPv4 or IPv6 address
 * @sa: the address (a sockaddr_in, sockaddr_in6 or sockaddr_storage)
 *
 * Return: sizeof(struct sockaddr_in) or sizeof(struct sockaddr_in6), for
 * bind() and connect(); 0 for any other family.
 */
socklen_t rapt_sockaddr_len(const struct sockaddr *sa);

/**
 * rapt_sockaddr_copy - copy an IPv4 or IPv6 address into a storage
 * @dst: zeroed, then the address
 * @src: the address
 *
 * Return: 0, or RAPT_EINVAL (@dst untouched) when @src is neither.
 */
int rapt_sockaddr_copy(struct sockaddr_storage *dst,
		       const struct sockaddr *src);

/**
 * rapt_sockaddr_port - the port of an IPv4 or IPv6 address
 * @sa: the address
 *
 * Return: the port in host order; 0 for any other family.
 */
uint16_t rapt_sockaddr_port(const struct sockaddr *sa);

/**
 * rapt_sockaddr_set_port - set the port of an IPv4 or IPv6 address
 * @sa: the address; any other family is left as it is
 * @port: in host order
 */
void rapt_sockaddr_set_port(struct sockaddr *sa, uint16_t port);

/**
 * rapt_sockaddr_is_any - whether @sa is the wildcard address
 * @sa: the address
 *
 * Return: true for 0.0.0.0 and ::, false otherwise (any other family too).
 */
bool rapt_sockaddr_is_any(const struct sockaddr *sa);

/**
 * rapt_sockaddr_same_ip - whether two addresses name the same IP address
 * @a: an address
 * @b: an address
 *
 * Ports aside: the family, the address and, for IPv6, the scope id.
 *
 * Return: true if they are the same; false for families other than
 * IPv4 and IPv6.
 */
bool rapt_sockaddr_same_ip(const struct sockaddr *a, const struct sockaddr *b);

/**
 * rapt_sockaddr_equal - whether two addresses are the same, ports too
 * @a: an address
 * @b: an address
 *
 * Return: rapt_sockaddr_same_ip() and the same port.
 */
bool rapt_sockaddr_equal(const struct sockaddr *a, const struct sockaddr *b);

/**
 * rapt_sockaddr_str - an address as text, for logs
 * @sa: the address
 * @buf: where to write it
 * @len: its size, RAPT_SOCKADDR_STRLEN for any address
 *
 * "192.0.2.1:4791", "[fe80::1%2]:4791" (the scope id as a number),
 * "unspecified" for AF_UNSPEC, "family N" for others; cut to fit @len.
 *
 * Return: @buf ("" when @len is 0).
 */
const char *rapt_sockaddr_str(const struct sockaddr *sa, char *buf,
			      size_t len);

/* ------------------------------------------------------------------ */
/* Status codes (providers/util/status.c)                              */
/* ------------------------------------------------------------------ */

/**
 * rapt_errno_status - the RAPT_E* code for a positive errno
 * @err: an errno value, as errno, verbs' return values or -1/errno of
 *       rdma_cm give it (0 gives 0; a negative value is negated first)
 *
 * One table for every provider.  Where rapt has a code with the errno's
 * own number it is that code (ENOENT, EINTR, EIO, EAGAIN, EBUSY, EEXIST,
 * EINVAL, ERANGE, EADDRINUSE, ENOTCONN, ETIMEDOUT, ECONNREFUSED,
 * ECANCELED, EMFILE, EFAULT); the others fold: ENFILE (the system's limit) is
 * RAPT_EMFILE; ENOMEM, ENOBUFS and ENOSPC (a kernel limit, not a full
 * rapt queue) are RAPT_ENOMEM; EPERM
 * and EACCES RAPT_EACCES; ENODEV and ENXIO RAPT_ENODEV; EOPNOTSUPP and
 * ENOSYS RAPT_ENOTSUP; EADDRNOTAVAIL and EAFNOSUPPORT RAPT_EINVAL;
 * EMSGSIZE and E2BIG RAPT_ELENGTH; EOVERFLOW RAPT_ERANGE (RAPT_EOVERFLOW is an
 * EVD's); EPROTO RAPT_EPROTO.
 * Anything else is RAPT_EPROVIDER.  A caller for which an errno means
 * something else in its context (verbs' ENOMEM from a full send queue)
 * tests for it first.
 *
 * Return: 0 or a negative RAPT_E* code.
 */
int rapt_errno_status(int err);

/*
 * The prov_status convention.  The prov_status field of events (DTO,
 * connection, async) is a provider's detail; providers that link the
 * toolkit fill it so that rapt_prov_status_str() can say what it means:
 *
 *   0                 no detail
 *   < 0               a RAPT_E* code, or a negated errno (the same number
 *                     where rapt has the errno's code: -ECONNREFUSED is
 *                     RAPT_ECONNREFUSED)
 *   > 0               a kind in bits 24-30 and its detail in bits 0-23:
 *     RAPT_PROV_STATUS_TERM  an iWARP Terminate (RFC 5040 4.8): layer in
 *                     bits 12-15, error type 8-11, error code 0-7, and
 *                     RAPT_PROV_STATUS_TERM_RECEIVED when the peer sent
 *                     it (else this side did)
 *     RAPT_PROV_STATUS_WC    a verbs work completion status (enum
 *                     ibv_wc_status) in bits 0-23
 *
 * New kinds are appended; a kind's meaning never changes.
 */
#define RAPT_PROV_STATUS_KIND_SHIFT	24
#define RAPT_PROV_STATUS_DETAIL_MASK	0x00ffffff
#define RAPT_PROV_STATUS_TERM_RECEIVED	(1u << 16)

/** enum rapt_prov_status_kind - the kind of a prov_status value */
enum rapt_prov_status_kind {
	RAPT_PROV_STATUS_CODE = 0,	/* 0, a RAPT_E* code or -errno */
	RAPT_PROV_STATUS_TERM = 1,	/* an iWARP Terminate */
	RAPT_PROV_STATUS_WC = 2,	/* a verbs work completion status */
};

/**
 * rapt_prov_status_kind - the kind of @prov_status
 * @prov_status: a value made by the convention above
 *
 * Return: enum rapt_prov_status_kind (an unknown kind is returned as is).
 */
static inline int rapt_prov_status_kind(int32_t prov_status)
{
	return prov_status <= 0 ? RAPT_PROV_STATUS_CODE :
	       (int)(prov_status >> RAPT_PROV_STATUS_KIND_SHIFT);
}

/**
 * rapt_prov_status_term - the prov_status of an iWARP Terminate
 * @received: the peer sent it (false: this side sent it)
 * @layer: 0 RDMAP, 1 DDP, 2 LLP (MPA)
 * @etype: the error type (4 bits)
 * @ecode: the error code
 *
 * Return: the value, always > 0.
 */
static inline int32_t rapt_prov_status_term(bool received, uint8_t layer,
					    uint8_t etype, uint8_t ecode)
{
	return (int32_t)(((uint32_t)RAPT_PROV_STATUS_TERM <<
			  RAPT_PROV_STATUS_KIND_SHIFT) |
			 (received ? RAPT_PROV_STATUS_TERM_RECEIVED : 0) |
			 ((uint32_t)(layer & 0xf) << 12) |
			 ((uint32_t)(etype & 0xf) << 8) | ecode);
}

/**
 * rapt_prov_status_wc - the prov_status of a verbs completion status
 * @wc_status: enum ibv_wc_status
 *
 * Return: the value, always > 0 (IBV_WC_SUCCESS too).
 */
static inline int32_t rapt_prov_status_wc(uint32_t wc_status)
{
	return (int32_t)(((uint32_t)RAPT_PROV_STATUS_WC <<
			  RAPT_PROV_STATUS_KIND_SHIFT) |
			 (wc_status & RAPT_PROV_STATUS_DETAIL_MASK));
}

/* Room rapt_prov_status_str() needs for any value. */
#define RAPT_PROV_STATUS_STRLEN	160

/**
 * rapt_prov_status_str - a prov_status as text, like fi_cq_strerror()
 * @prov_status: a value made by the convention above
 * @buf: where to write the text
 * @len: its size, RAPT_PROV_STATUS_STRLEN for any value
 *
 * Examples: "no detail"; "RAPT_EPROTO: protocol error";
 * "EHOSTUNREACH: No route to host"; "Terminate received: RDMAP remote
 * protection error: invalid STag (layer 0 type 1 code 0x00)"; "verbs
 * completion IBV_WC_REM_ACCESS_ERR: remote access error".  Values outside
 * the tables are shown as numbers.  Cut to fit @len.
 *
 * Return: @buf ("" when @len is 0).
 */
const char *rapt_prov_status_str(int32_t prov_status, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* RAPT_API_PROVIDER_UTIL_H */
