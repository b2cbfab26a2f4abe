/* SPDX-License-Identifier: MIT */
/*
 * verbs layer: an EVD that carries DTO events is a CQ with a completion
 * channel of its own; completions are polled by the consumer's calls
 * (evd_progress, evd_trywait, evd_wait_done), never by a provider thread.
 *
 * Wait objects (docs/provider-guide.md, "Wait objects"):
 *   evd_wait_fd    DTO only: the completion channel's fd.  CONNECTION, CR,
 *                  ASYNC or SOFTWARE only: the engine's epoll set, which
 *                  holds the IA's rdma_cm event channel and async fd.
 *                  Both: an epoll set of the two.
 *   evd_trywait    ibv_req_notify_cq(), then one poll: RAPT_EAGAIN if it
 *                  found completions; the engine stands aside while the
 *                  consumer sleeps on it.
 *   evd_wait_done  take the channel's events (ibv_get_cq_event, ack),
 *                  poll; run an engine pass for the CM streams.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "verbs.h"

/* Smallest CQ of an EVD: completions of every EP on it must fit. */
#define VB_CQ_MIN	256
#define VB_NULL_CQE	1024
#define VB_POLL_BATCH	16
/* A busy-polling consumer of a CM EVD runs an engine pass this often.
 * Each pass is an epoll_wait() system call: every 16th poll made rapt's
 * rxe round trip in tests/vm cost 7.8 system calls against perftest's
 * 2.4, every 256th 3.0, at the same latency; connection events wait at
 * most 256 polls for it, far below rdma_cm's own round trips. */
#define VB_DRIVE_MASK	255u
/* A busy-polling consumer renews the engine's lease this often: reading
 * the clock on every poll costs more than the poll where the clock is an
 * emulated device (hpet in a VM: it doubled siw's latency in tests/vm,
 * and every 32nd poll still cost rxe's round trips about a third more).
 * 256 polls stay well inside the engine's shortest look (1 ms). */
#define VB_LEASE_MASK	255u
/* How often the engine looks whether a polling consumer has stopped
 * (each look is a wakeup of the engine thread while the consumer runs):
 * after 10 ms, and each look that finds the consumer still there doubles
 * the wait, up to 80 ms.  An EVD whose consumer stops without sleeping on
 * it sees its completions pushed (its count, an overflow) that much
 * later; one that sleeps or polls again takes them itself. */
#define VB_CQ_RECHECK_NS	10000000ull
#define VB_CQ_RECHECK_MAX_NS	80000000ull
/* After the engine delivered completions nobody polled for, the CQ stays
 * unarmed this long: a consumer working through them comes back to an
 * empty EVD within it and takes the CQ over (see engine_delivers).  While
 * nobody comes, the look doubles, up to the maximum, as long as the CQ
 * stays at most a quarter full between two looks at the rate it filled. */
#define VB_CQ_GRACE_NS		1000000ull
#define VB_CQ_GRACE_MAX_NS	16000000ull

/* ------------------------------------------------------------------ */
/* Completion status                                                   */
/* ------------------------------------------------------------------ */

/* Every enum ibv_wc_status, with the rapt status it maps to. */
#define VB_WC_STATUS_MAP(XX)						\
	XX(IBV_WC_SUCCESS,		RAPT_DTO_SUCCESS)		\
	XX(IBV_WC_LOC_LEN_ERR,		RAPT_DTO_LOCAL_LENGTH)		\
	XX(IBV_WC_LOC_QP_OP_ERR,	RAPT_DTO_GENERAL)		\
	XX(IBV_WC_LOC_EEC_OP_ERR,	RAPT_DTO_GENERAL)		\
	XX(IBV_WC_LOC_PROT_ERR,		RAPT_DTO_LOCAL_PROTECTION)	\
	XX(IBV_WC_WR_FLUSH_ERR,		RAPT_DTO_FLUSHED)		\
	XX(IBV_WC_MW_BIND_ERR,		RAPT_DTO_LOCAL_PROTECTION)	\
	XX(IBV_WC_BAD_RESP_ERR,		RAPT_DTO_TRANSPORT)		\
	XX(IBV_WC_LOC_ACCESS_ERR,	RAPT_DTO_LOCAL_PROTECTION)	\
	XX(IBV_WC_REM_INV_REQ_ERR,	RAPT_DTO_REMOTE_OPERATION)	\
	XX(IBV_WC_REM_ACCESS_ERR,	RAPT_DTO_REMOTE_ACCESS)		\
	XX(IBV_WC_REM_OP_ERR,		RAPT_DTO_REMOTE_OPERATION)	\
	XX(IBV_WC_RETRY_EXC_ERR,	RAPT_DTO_TRANSPORT)		\
	XX(IBV_WC_RNR_RETRY_EXC_ERR,	RAPT_DTO_REMOTE_OPERATION)	\
	XX(IBV_WC_LOC_RDD_VIOL_ERR,	RAPT_DTO_LOCAL_PROTECTION)	\
	XX(IBV_WC_REM_INV_RD_REQ_ERR,	RAPT_DTO_REMOTE_ACCESS)		\
	XX(IBV_WC_REM_ABORT_ERR,	RAPT_DTO_TRANSPORT)		\
	XX(IBV_WC_INV_EECN_ERR,		RAPT_DTO_GENERAL)		\
	XX(IBV_WC_INV_EEC_STATE_ERR,	RAPT_DTO_GENERAL)		\
	XX(IBV_WC_FATAL_ERR,		RAPT_DTO_TRANSPORT)		\
	XX(IBV_WC_RESP_TIMEOUT_ERR,	RAPT_DTO_TRANSPORT)		\
	XX(IBV_WC_GENERAL_ERR,		RAPT_DTO_GENERAL)		\
	XX(IBV_WC_TM_ERR,		RAPT_DTO_GENERAL)		\
	XX(IBV_WC_TM_RNDV_INCOMPLETE,	RAPT_DTO_GENERAL)

/**
 * vb_wc_status - the rapt DTO status of a verbs completion status
 * @status: enum ibv_wc_status (kept in the event's prov_status)
 */
uint32_t vb_wc_status(int status)
{
	switch (status) {
#define VB__WC_CASE(wc, dto) case wc: return dto;
	VB_WC_STATUS_MAP(VB__WC_CASE)
#undef VB__WC_CASE
	}
	return RAPT_DTO_GENERAL;
}

const char *vb_wc_status_str(int status)
{
	return ibv_wc_status_str((enum ibv_wc_status)status);
}

/* ------------------------------------------------------------------ */
/* Polling                                                             */
/* ------------------------------------------------------------------ */

/**
 * vb_cq_poll - poll an EVD's CQ and dispatch every completion found
 * @evd: an EVD with a CQ
 *
 * Under the EVD's poll lock, so completions reach the EVDs in CQ order.
 *
 * Return: completions found.
 */
static inline __attribute__((always_inline)) int cq_poll(struct vb_evd *evd)
{
	struct ibv_wc wc[VB_POLL_BATCH];
	int i, n, total = 0;

	rapt_lock(&evd->poll_lock);
	do {
		n = ibv_poll_cq(evd->cq, VB_POLL_BATCH, wc);
		for (i = 0; i < n; i++)
			vb_ep_complete(evd->ia, &wc[i]);
		if (n > 0)
			total += n;
	} while (n == VB_POLL_BATCH);
	rapt_unlock(&evd->poll_lock);
	if (vb_unlikely(n < 0))
		vb_err("%s: ibv_poll_cq: %d", evd->ia->dev, n);
	return total;
}

int vb_cq_poll(struct vb_evd *evd)
{
	return cq_poll(evd);
}

/* Take up to @max events the completion channel has (it is
 * non-blocking). */
static void channel_take(struct vb_evd *evd, unsigned int max)
{
	struct ibv_cq *cq;
	void *ctx;
	unsigned int n = 0;

	while (n < max && !ibv_get_cq_event(evd->ch, &cq, &ctx))
		n++;
	if (n)
		ibv_ack_cq_events(evd->cq, n);
}

/* Take every event the completion channel has. */
static void channel_drain(struct vb_evd *evd)
{
	channel_take(evd, UINT_MAX);
}

/*
 * After a blocking wait of the consumer's own: one arm raises at most
 * one event, so one read takes it, without a second read to learn the
 * channel is empty (a system call per wait saved).  An event left there
 * by an arm of the engine's makes the next wait return at once, and that
 * wait takes it.
 */
static void channel_take_own(struct vb_evd *evd)
{
	channel_take(evd, 1);
}

/* ------------------------------------------------------------------ */
/* EVD                                                                 */
/* ------------------------------------------------------------------ */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/*
 * Count a poll: a load and a store, not a read-modify-write, which costs
 * more on the polling path than the rest of an empty poll (an emulated
 * CPU makes it a helper call).  Two threads counting at once may count
 * one: these counters only pace things and tell "changed" from "not".
 */
static unsigned int tick_bump(atomic_uint *t)
{
	unsigned int v = atomic_load_explicit(t, memory_order_relaxed);

	atomic_store_explicit(t, v + 1, memory_order_relaxed);
	return v;
}

/* A consumer looked at the CQ itself (polled, armed to wait, woke). */
static void consumer_touch(struct vb_evd *evd)
{
	tick_bump(&evd->lease_tick);
}

/*
 * Has a consumer been at this EVD since the engine last looked: polled
 * it, or taken events from its queue?  A dequeue that finds events queued
 * takes them without calling us, and the engine's own deliveries are
 * taken so: counting polls alone, a consumer working through a backlog
 * the engine delivered looked gone, and the engine kept delivering ahead
 * of it.
 */
static bool consumer_polled(struct vb_evd *evd)
{
	uint32_t n = atomic_load_explicit(&evd->lease_tick,
					  memory_order_relaxed);
	uint64_t t = evd->cevd ? rapt_prov_evd_taken(evd->cevd) : 0;
	bool polled = n != evd->engine_tick || t != evd->engine_taken;

	evd->engine_tick = n;
	evd->engine_taken = t;
	return polled;
}

/* Poll, arm, poll: the next completion reports itself again. */
static void engine_takes_cq(struct vb_evd *evd)
{
	vb_cq_poll(evd);
	if (ibv_req_notify_cq(evd->cq, 0))
		vb_err("%s: ibv_req_notify_cq failed", evd->ia->dev);
	vb_cq_poll(evd);
}

/*
 * The next look at a CQ nobody polls, which just gave @n completions in
 * the last look's time: twice that time, unless the CQ would then fill
 * past a quarter at the same rate (a consumer that posts thousands of
 * operations before it reaps any, as dapltest -T P does: looking every
 * millisecond, the engine thread woke 400 times a second for 3 or 4
 * completions each).
 */
static uint64_t grace_next(struct vb_evd *evd, uint32_t n)
{
	uint64_t g = evd->grace_ns * 2;
	uint64_t room = evd->grace_ns * (evd->cqe / 4) / n;

	if (g > room)
		g = room;
	if (g > VB_CQ_GRACE_MAX_NS)
		g = VB_CQ_GRACE_MAX_NS;
	if (g < VB_CQ_GRACE_NS)
		g = VB_CQ_GRACE_NS;
	evd->grace_ns = g;
	return g;
}

/*
 * The engine found the CQ unwatched: deliver what is there.  When that
 * was something, leave the CQ unarmed for VB_CQ_GRACE_NS.  A consumer
 * that works through the events comes back to an empty EVD within it and
 * polls and arms the CQ itself, as uDAPL's consumers do.  Re-armed at
 * once, the engine would take each completion ahead of that consumer,
 * which then never found the EVD empty: a wakeup of the engine thread, a
 * channel read and a hand-over for every completion (dapltest -T T ran
 * at 0.6x of uDAPL's rate so).
 */
static void engine_delivers(struct vb_evd *evd)
{
	int n = vb_cq_poll(evd);

	if (n) {
		rapt_timer_arm(evd->ia->eng, &evd->cq_timer,
			       grace_next(evd, (uint32_t)n));
	} else {
		evd->grace_ns = VB_CQ_GRACE_NS;
		engine_takes_cq(evd);
	}
}

/*
 * A consumer takes the CQ (polls it, or sleeps on its channel): the
 * engine stops watching the channel, whose events are the consumer's
 * (each one would wake the thread for nothing), and looks again in
 * evd->recheck_ns.
 */
static void engine_parks(struct vb_evd *evd)
{
	struct rapt_engine *eng = evd->ia->eng;

	/* Out of the set, not an interest of 0: a channel's wakeups carry
	 * no poll key, so it would still wake the engine's epoll_wait() at
	 * each completion event (dapltest -T T on rxe: 2,100 to 2,600 times
	 * a second on each side, each a preemption of the data thread). */
	if (!atomic_load_explicit(&evd->parked, memory_order_relaxed) &&
	    !rapt_engine_del(eng, &evd->io))
		atomic_store_explicit(&evd->parked, true, memory_order_relaxed);
	if (!rapt_timer_armed(eng, &evd->cq_timer))
		rapt_timer_arm(eng, &evd->cq_timer, evd->recheck_ns);
}

/*
 * A consumer at work on a CQ whose channel the engine still watches
 * (consumer's thread).  The engine parks a channel when it dispatches one
 * of its events and finds a consumer there; but a consumer that reads
 * each event itself leaves the engine nothing to dispatch: epoll_wait()
 * wakes for the event, finds the channel empty when it checks and sleeps
 * again, inside the kernel (strace shows nothing), and so does a consumer
 * asleep on the engine's set.  So the consumer asks, once per watch, for
 * the park now: the CQ timer, due at once, parks it.
 */
static void consumer_claims(struct vb_evd *evd)
{
	if (atomic_load_explicit(&evd->parked, memory_order_relaxed) ||
	    atomic_load_explicit(&evd->park_asked, memory_order_relaxed) ||
	    atomic_exchange(&evd->park_asked, true))
		return;
	rapt_timer_arm(evd->ia->eng, &evd->cq_timer, 0);
}

/* While a consumer polls the CQ or sleeps on it the engine leaves it
 * alone (no competition for the channel or the poll lock) and looks again
 * later; once the consumer has stopped, it takes over. */
static void evd_cq_timer_fire(struct rapt_timer *t)
{
	struct vb_evd *evd = rapt_container_of(t, struct vb_evd, cq_timer);

	if (consumer_polled(evd) || atomic_load(&evd->sleeping)) {
		/* Still there after a look: the next one comes later (the
		 * dapltest -T T data threads of rxe and siw, each on a CQ
		 * of its own, woke their engine threads 100 times a second
		 * with a fixed 10 ms). */
		if (atomic_load_explicit(&evd->parked, memory_order_relaxed) &&
		    evd->recheck_ns < VB_CQ_RECHECK_MAX_NS)
			evd->recheck_ns *= 2;
		evd->grace_ns = VB_CQ_GRACE_NS;
		engine_parks(evd);
		return;
	}
	evd->recheck_ns = VB_CQ_RECHECK_NS;
	if (atomic_load_explicit(&evd->parked, memory_order_relaxed)) {
		if (rapt_engine_add(evd->ia->eng, &evd->io, EPOLLIN)) {
			/* cannot watch it: keep looking this way */
			vb_err("%s: cannot watch a completion channel again",
			       evd->ia->dev);
			rapt_timer_arm(evd->ia->eng, t, VB_CQ_GRACE_NS);
			engine_delivers(evd);
			return;
		}
		atomic_store_explicit(&evd->parked, false,
				      memory_order_relaxed);
		atomic_store(&evd->park_asked, false);
	}
	engine_delivers(evd);
}

/*
 * The engine's side of a CQ: whatever the channel reports when no
 * consumer waits on it (or after the consumer moved on).  Once nothing is
 * left to deliver it leaves the CQ armed, so the next completion reports
 * itself again, unless a consumer polls it.
 */
static void evd_chan_handler(struct rapt_io *io, uint32_t events)
{
	struct vb_evd *evd = rapt_container_of(io, struct vb_evd, io);

	/* A consumer asleep on the channel takes its event itself. */
	if (atomic_load(&evd->sleeping)) {
		engine_parks(evd);
		return;
	}
	channel_drain(evd);
	/* One that began to sleep meanwhile may have lost the event of its
	 * arm to us: the push of what we find wakes it. */
	if (!atomic_load(&evd->sleeping) && consumer_polled(evd)) {
		engine_parks(evd);
		return;
	}
	engine_delivers(evd);
}

static int evd_make_cq(struct vb_evd *evd, uint32_t qlen)
{
	struct vb_ia *ia = evd->ia;
	uint32_t cqe = qlen > VB_CQ_MIN ? qlen : VB_CQ_MIN;
	int err;

	if ((int)cqe > ia->dattr.max_cqe)
		cqe = (uint32_t)ia->dattr.max_cqe;
	evd->ch = ibv_create_comp_channel(ia->ctx);
	if (!evd->ch || set_nonblock(evd->ch->fd)) {
		err = errno;
		rapt_prov_set_error("%s: ibv_create_comp_channel: %s",
				    vb_tp->name, strerror(err));
		return rapt_errno_status(err);
	}
	evd->cq = ibv_create_cq(ia->ctx, (int)cqe, evd, evd->ch, 0);
	if (!evd->cq) {
		err = errno;
		rapt_prov_set_error("%s: ibv_create_cq(%u): %s", vb_tp->name,
				    cqe, strerror(err));
		return rapt_errno_status(err);
	}
	evd->cqe = (uint32_t)evd->cq->cqe;
	err = ibv_req_notify_cq(evd->cq, 0);
	if (err) {
		rapt_prov_set_error("%s: ibv_req_notify_cq: %s", vb_tp->name,
				    strerror(err));
		return rapt_errno_status(err);
	}
	evd->io.fd = fcntl(evd->ch->fd, F_DUPFD_CLOEXEC, 0);
	evd->io.handler = evd_chan_handler;
	if (evd->io.fd < 0) {
		err = errno;
		rapt_prov_set_error("%s: dup of a completion channel: %s",
				    vb_tp->name, strerror(err));
		return rapt_errno_status(err);
	}
	return rapt_engine_add(ia->eng, &evd->io, EPOLLIN);
}

/* An epoll set of the completion channel and the engine's set. */
static int evd_make_epoll(struct vb_evd *evd)
{
	struct epoll_event e = { .events = EPOLLIN };

	evd->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (evd->epfd < 0)
		goto err;
	if (epoll_ctl(evd->epfd, EPOLL_CTL_ADD, evd->ch->fd, &e))
		goto err;
	if (epoll_ctl(evd->epfd, EPOLL_CTL_ADD,
		      rapt_engine_fd(evd->ia->eng), &e))
		goto err;
	return 0;
err:
	rapt_prov_set_error("%s: epoll set of an EVD: %s", vb_tp->name,
			    strerror(errno));
	return RAPT_ENOMEM;
}

static void evd_release(void *arg)
{
	struct vb_evd *evd = arg;

	if (evd->epfd >= 0)
		rapt_sys_close(evd->epfd);
	if (evd->cq) {
		channel_drain(evd);
		if (ibv_destroy_cq(evd->cq))
			vb_err("%s: ibv_destroy_cq: %m", evd->ia->dev);
	}
	if (evd->ch && ibv_destroy_comp_channel(evd->ch))
		vb_err("%s: ibv_destroy_comp_channel: %m", evd->ia->dev);
	free(evd);
}

static void evd_unregister(void *arg)
{
	struct vb_evd *evd = arg;

	rapt_timer_cancel(evd->ia->eng, &evd->cq_timer);
	rapt_engine_close(evd->ia->eng, &evd->io, false);
}

/* The engine forgets the channel first; the rest goes once no batch of
 * the engine thread can name it. */
static void evd_destroy(struct vb_evd *evd)
{
	struct rapt_engine *eng = evd->ia->eng;

	if (evd->io.fd >= 0)
		rapt_engine_call(eng, evd_unregister, evd);
	rapt_engine_retire(eng, &evd->retire, &evd->io, evd_release, evd);
}

static struct vb_evd *evd_alloc(struct vb_ia *ia, struct rapt_core_evd *cevd,
				uint32_t streams)
{
	struct vb_evd *evd = calloc(1, sizeof(*evd));

	if (!evd)
		return NULL;
	evd->ia = ia;
	evd->cevd = cevd;
	evd->streams = streams;
	evd->epfd = -1;
	evd->io.fd = -1;
	rapt_timer_init(&evd->cq_timer, evd_cq_timer_fire);
	evd->recheck_ns = VB_CQ_RECHECK_NS;
	evd->grace_ns = VB_CQ_GRACE_NS;
	rapt_lock_init(&evd->poll_lock);
	return evd;
}

int vb_evd_create(void *pia, struct rapt_core_evd *cevd, uint32_t qlen,
		  uint32_t streams, void **pevd)
{
	struct vb_evd *evd = evd_alloc(pia, cevd, streams);
	int ret = 0;

	if (!evd)
		return RAPT_ENOMEM;
	if (streams & RAPT_EVD_DTO)
		ret = evd_make_cq(evd, qlen);
	if (!ret && (streams & RAPT_EVD_DTO) && (streams & VB_EVD_CM_STREAMS))
		ret = evd_make_epoll(evd);
	if (ret) {
		evd_destroy(evd);
		return ret;
	}
	*pevd = evd;
	return 0;
}

int vb_evd_free(void *pevd)
{
	evd_destroy(pevd);
	return 0;
}

/* The IA's EVD for EPs created without a receive or request EVD: their
 * completions are polled (and dropped) by the engine and by teardown, so
 * the CQ never overruns. */
int vb_evd_null_create(struct vb_ia *ia)
{
	struct vb_evd *evd = evd_alloc(ia, NULL, RAPT_EVD_DTO);
	int ret;

	if (!evd)
		return RAPT_ENOMEM;
	ret = evd_make_cq(evd, VB_NULL_CQE);
	if (ret) {
		evd_destroy(evd);
		return ret;
	}
	ia->null_evd = evd;
	return 0;
}

void vb_evd_null_free(struct vb_ia *ia)
{
	if (ia->null_evd)
		evd_destroy(ia->null_evd);
	ia->null_evd = NULL;
}

/* ------------------------------------------------------------------ */
/* Progress and wait objects                                           */
/* ------------------------------------------------------------------ */

int vb_evd_progress(void *pevd)
{
	struct vb_evd *evd = pevd;
	struct vb_ia *ia = evd->ia;
	bool armed;

	armed = atomic_load_explicit(&evd->fd_armed, memory_order_relaxed) &&
		atomic_exchange(&evd->fd_armed, false);
	if (evd->cq) {
		/* A polling consumer: the engine thread stands aside. */
		if (armed || !(tick_bump(&evd->lease_tick) & VB_LEASE_MASK))
			rapt_engine_lease(ia->eng);
		consumer_claims(evd);
		if (armed) {
			/* A read of the channel: a cancellation point. */
			int nc = rapt_nocancel_begin();

			channel_drain(evd);
			rapt_nocancel_end(nc);
		}
		/* Inline: the busy-poll path makes one call fewer. */
		cq_poll(evd);
	}
	/* CM events reach the EVD from the engine thread anyway, which
	 * stands aside while a consumer drives.  A consumer that busy-polls
	 * an EVD of CM streams alone runs a pass at each poll: that pass is
	 * its poll, and a step of a connection (address, route, reply,
	 * accept) waits for no 256th poll.  One that polls a CQ too runs a
	 * pass now and then; one woken through the EVD's fd handles what
	 * woke it. */
	if ((evd->streams & VB_EVD_CM_STREAMS) &&
	    (armed || !evd->cq || !(tick_bump(&evd->tick) & VB_DRIVE_MASK)))
		rapt_engine_drive(ia->eng);
	return 0;
}

int vb_evd_wait_fd(void *pevd, int *fd)
{
	struct vb_evd *evd = pevd;

	if (evd->epfd >= 0)
		*fd = evd->epfd;
	else if (evd->ch)
		*fd = evd->ch->fd;
	else
		*fd = rapt_engine_fd(evd->ia->eng);
	return 0;
}

/*
 * Does a consumer asleep on this EVD wake for the engine's set too (an
 * EVD with CM streams: vb_evd_wait_fd)?  Then it runs the pass itself when
 * it wakes, and the engine thread stands aside while it sleeps.  A sleep
 * on the completion channel alone handles no CM event and no timer: the
 * engine thread stays in epoll_wait() for those.  Standing aside, it
 * would wake every 1 to 16 ms to look for them instead, and in dapltest
 * -T T those looks were most of the system calls rapt made beyond uDAPL's.
 */
static bool sleep_drives(const struct vb_evd *evd)
{
	return evd->epfd >= 0 || !evd->ch;
}

/*
 * Arm, then look once more: a completion that came before the arm raises
 * no event.  While the consumer sleeps its channel is its own: the engine
 * thread leaves it alone (evd_chan_handler parks it).
 */
int vb_evd_trywait(void *pevd, uint32_t how)
{
	struct vb_evd *evd = pevd;
	struct rapt_engine *eng = evd->ia->eng;
	bool block = how == RAPT_PROV_WAIT_BLOCK;
	bool drives = block && sleep_drives(evd);
	int err, ret = 0;

	/* A blocking wait owns the events of its arm from before the arm
	 * on (evd_chan_handler); one that drives the engine's passes makes
	 * the engine stand aside from then. */
	if (block) {
		if (drives)
			rapt_engine_sleep_begin(eng);
		atomic_store(&evd->sleeping, true);
	}
	if (evd->cq) {
		consumer_touch(evd);
		consumer_claims(evd);
		/* Poll before arming, as uDAPL does: an arm raises a channel
		 * event at the next completion, which the engine thread then
		 * wakes for, although we found what we wait for right here. */
		if (vb_cq_poll(evd)) {
			ret = RAPT_EAGAIN;
			goto out;
		}
		err = ibv_req_notify_cq(evd->cq, 0);
		if (err) {
			vb_err("%s: ibv_req_notify_cq: %s", evd->ia->dev,
			       strerror(err));
			ret = RAPT_EIO;
		} else if (vb_cq_poll(evd)) {
			ret = RAPT_EAGAIN;
		}
	}
out:
	if (block && ret) {
		atomic_store(&evd->sleeping, false);
		if (drives)
			rapt_engine_sleep_end(eng);
	} else if (!block && !ret) {
		rapt_engine_lease(eng);
		atomic_store(&evd->fd_armed, true);
	}
	return ret;
}

int vb_evd_wait_done(void *pevd)
{
	struct vb_evd *evd = pevd;
	struct rapt_engine *eng = evd->ia->eng;

	atomic_store(&evd->sleeping, false);
	if (sleep_drives(evd))
		rapt_engine_sleep_end(eng);
	if (evd->cq) {
		/* Whatever the engine takes from here on, we poll after it. */
		consumer_touch(evd);
		channel_take_own(evd);
		vb_cq_poll(evd);
	}
	if (evd->streams & VB_EVD_CM_STREAMS)
		rapt_engine_drive(eng);
	return 0;
}
