/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the descriptor, devices, IA, PZ and EVD objects.
 *
 * A device is a network interface that is up and has an IPv4 or IPv6
 * address ("lo", "eth0"); its IA listens and connects from that address.
 * Each IA runs one progress engine (providers/util/engine.c).
 */
#include "config.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "tcp.h"
#include "tcp_cm.h"

#define TCP_PROV_VERSION	RAPT_VERSION_PACK(1, 0, 0)
#define TCP_PROV_RANK		100	/* software: after RDMA hardware */
#define TCP_MAX_EP		65536	/* a socket each: RLIMIT_NOFILE */
#define TCP_MAX_EVD_QLEN	(1u << 20)
#define TCP_MAX_LMR		(1ull << 46)
/* EPs evd_progress looks at per call; the engine serves the others. */
#define TCP_EVD_PROGRESS_EPS	8
/*
 * Spin detection: a consumer that calls evd_progress TCP_SPIN_STREAK times
 * in a row, each within TCP_SPIN_GAP_NS of the last, busy-polls the EVD
 * (a blocking waiter calls it once or twice per event, at most once per
 * round trip); it counts as spinning until TCP_SPIN_HOLD_NS after its last
 * call.  Meanwhile the engine leaves the EVD's sockets to it (tcp_park.c).
 */
#define TCP_SPIN_GAP_NS		15000ull
#define TCP_SPIN_STREAK		4
#define TCP_SPIN_HOLD_NS	1000000ull
/* ... and no longer once it has not called evd_progress for this long
 * (it blocks, or works elsewhere): the engine takes the EPs back. */
#define TCP_SPIN_IDLE_NS	100000ull
/* evd_progress looks at an EP that had nothing this many times in a row
 * only once in TCP_IDLE_EVERY calls. */
#define TCP_IDLE_POLLS		200
#define TCP_IDLE_EVERY		32u
/* A spinning evd_progress that ran a data path drives the engine once in
 * this many calls (mask); one that did not drives every time. */
#define TCP_DRIVE_EVERY_MASK	63u
/* ... and one that waits on no data path yields every few calls. */
#define TCP_YIELD_EVERY_MASK	7u
/* Where requests arrive: a call that found no data drives every time
 * while connections came in this recently, else once in this many. */
#define TCP_LISTEN_HOT_NS	1000000ull
#define TCP_LISTEN_EVERY_MASK	15u

#define TCP_CAPS (RAPT_CAP_RDMA_WRITE | RAPT_CAP_RDMA_READ |		\
		  RAPT_CAP_INLINE | RAPT_CAP_SOLICITED |		\
		  RAPT_CAP_FENCE |					\
		  RAPT_CAP_SEND_INVALIDATE | RAPT_CAP_EVD_FD |		\
		  RAPT_CAP_PASSIVE_SEND_FIRST | RAPT_CAP_RAW_PDATA |	\
		  RAPT_CAP_MULTI_EVD_STREAMS | RAPT_CAP_ZERO_LENGTH |	\
		  RAPT_CAP_HANDSHAKE_LIMIT | RAPT_CAP_CONNECT_CANCEL |	\
		  RAPT_CAP_READ_CHECK | RAPT_CAP_PEER_ERRORS |		\
		  RAPT_CAP_EP_RESET | RAPT_CAP_EP_STATUS |		\
		  RAPT_CAP_SRQ | RAPT_CAP_RMR | RAPT_CAP_CROSS_PROCESS)

/* ------------------------------------------------------------------ */
/* Devices                                                             */
/* ------------------------------------------------------------------ */

static bool ifa_usable(const struct ifaddrs *ifa)
{
	return ifa->ifa_addr && (ifa->ifa_flags & IFF_UP) &&
	       (ifa->ifa_addr->sa_family == AF_INET ||
		ifa->ifa_addr->sa_family == AF_INET6);
}

static bool devs_have(const struct rapt_prov_device *d, uint32_t n,
		      const char *name)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(d[i].name, name))
			return true;
	return false;
}

static int tcp_get_devices(void *prov, struct rapt_prov_device **out,
			   uint32_t *nout)
{
	struct rapt_prov_device *d;
	struct ifaddrs *ifas, *ifa;
	uint32_t n = 0, cap = 0;

	if (getifaddrs(&ifas)) {
		tcp_err("getifaddrs: %m");
		return RAPT_EIO;
	}
	for (ifa = ifas; ifa; ifa = ifa->ifa_next)
		cap++;
	d = calloc(cap ? cap : 1, sizeof(*d));
	if (!d) {
		freeifaddrs(ifas);
		return RAPT_ENOMEM;
	}
	for (ifa = ifas; ifa; ifa = ifa->ifa_next) {
		if (!ifa_usable(ifa) ||
		    strlen(ifa->ifa_name) >= sizeof(d->name) ||
		    devs_have(d, n, ifa->ifa_name))
			continue;
		snprintf(d[n].name, sizeof(d[n].name), "%s", ifa->ifa_name);
		d[n].transport = RAPT_TRANSPORT_IWARP;
		d[n].rank = TCP_PROV_RANK;
		n++;
	}
	freeifaddrs(ifas);
	*out = d;
	*nout = n;
	return 0;
}

/* Prefer IPv4, then a global IPv6 address, then a link-local one. */
static int addr_score(const struct sockaddr *sa)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

	if (sa->sa_family == AF_INET)
		return 3;
	return IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) ? 1 : 2;
}

/* The address of interface @name, or RAPT_ENODEV. */
static int ifa_addr_of(const char *name, struct sockaddr_storage *out)
{
	struct ifaddrs *ifas, *ifa, *best = NULL;

	if (getifaddrs(&ifas)) {
		tcp_err("getifaddrs: %m");
		return RAPT_EIO;
	}
	for (ifa = ifas; ifa; ifa = ifa->ifa_next) {
		if (!ifa_usable(ifa) || strcmp(ifa->ifa_name, name))
			continue;
		if (!best || addr_score(ifa->ifa_addr) >
			     addr_score(best->ifa_addr))
			best = ifa;
	}
	if (best)
		rapt_sockaddr_copy(out, best->ifa_addr);	/* IPv4 or 6 */
	freeifaddrs(ifas);
	if (!best) {
		rapt_prov_set_error("tcp: no interface \"%s\" that is up with an IPv4 or IPv6 address",
				    name);
		return RAPT_ENODEV;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* IA                                                                  */
/* ------------------------------------------------------------------ */

static bool env_crc_request(void)
{
	const char *v = getenv("RAPT_TCP_CRC");

	return v && (!strcmp(v, "1") || !strcmp(v, "yes") ||
		     !strcmp(v, "on") || !strcmp(v, "true"));
}

/*
 * Environment variable @name as a number from 0 to @max: true and *@n
 * when it is one; false when it is unset or empty, or is something else,
 * which is warned about (@dflt: what is used instead).
 */
static bool env_uint(const char *name, unsigned long max, const char *dflt,
		     unsigned long *n)
{
	const char *v = getenv(name);
	char *end;

	if (!v || !*v)
		return false;
	errno = 0;
	*n = strtoul(v, &end, 10);
	if (!errno && !*end && v[0] != '-' && *n <= max)
		return true;
	tcp_warn("%s=%s is not 0 to %lu: using %s", name, v, max, dflt);
	return false;
}

/* RAPT_TCP_RTR_SETTLE_MS (rapt_tcp(7)): how long a close waits for a
 * silent responder after our RTR; default CM_RTR_SETTLE_NS. */
static uint64_t env_rtr_settle_ns(void)
{
	unsigned long ms;

	if (!env_uint("RAPT_TCP_RTR_SETTLE_MS", TCP_RTR_SETTLE_MAX_MS,
		      "the default", &ms))
		return CM_RTR_SETTLE_NS;
	return ms * CM_NS_PER_MS;
}

/* RAPT_TCP_RCVBUF (rapt_tcp(7)): the SO_RCVBUF of bulk connections, 0
 * for none; unset, empty or "auto": tcp_rcvbuf_auto(). */
static uint32_t env_rcvbuf(void)
{
	const char *v = getenv("RAPT_TCP_RCVBUF");
	unsigned long n;

	if (v && strcmp(v, "auto") &&
	    env_uint("RAPT_TCP_RCVBUF", TCP_RCVBUF_MAX, "auto", &n))
		return (uint32_t)n;
	return tcp_rcvbuf_auto();
}

static int tcp_ia_open(void *prov, const char *device, uint32_t port,
		       struct rapt_core_ia *cia, void **pia)
{
	struct tcp_ia *ia;
	int ret;

	if (port) {
		rapt_prov_set_error("tcp: device %s has no ports", device);
		return RAPT_ENODEV;
	}
	ia = calloc(1, sizeof(*ia));
	if (!ia)
		return RAPT_ENOMEM;
	ret = ifa_addr_of(device, &ia->addr);
	if (ret)
		goto err_free;
	snprintf(ia->device, sizeof(ia->device), "%s", device);
	ia->cia = cia;
	ia->crc_request = env_crc_request();
	ia->rtr_settle_ns = env_rtr_settle_ns();
	ia->rcvbuf = env_rcvbuf();
	pthread_mutex_init(&ia->lock, NULL);
	rapt_list_init(&ia->late);
	ret = tcp_stags_create(&ia->stags);
	if (ret)
		goto err_lock;
	ret = rapt_engine_start(&ia->eng, TCP_PROV_NAME);
	if (ret)
		goto err_stags;
	rapt_engine_aside_max(ia->eng, TCP_ENGINE_ASIDE_MAX_MS);
	tcp_dbg("opened %s%s", device,
		ia->crc_request ? " (asking for CRC)" : "");
	*pia = ia;
	return 0;

err_stags:
	tcp_stags_destroy(ia->stags);
err_lock:
	pthread_mutex_destroy(&ia->lock);
err_free:
	free(ia);
	return ret;
}

static int tcp_ia_close(void *pia)
{
	struct tcp_ia *ia = pia;

	tcp_late_flush(ia);
	rapt_engine_stop(ia->eng);
	tcp_stags_destroy(ia->stags);
	pthread_mutex_destroy(&ia->lock);
	free(ia);
	return 0;
}

static int tcp_ia_query(void *pia, struct rapt_ia_attr *a)
{
	struct tcp_ia *ia = pia;
	uint32_t i;

	a->transport = RAPT_TRANSPORT_IWARP;
	a->caps = TCP_CAPS;
	a->prov_version = TCP_PROV_VERSION;
	a->max_ep = TCP_MAX_EP;
	a->max_evd_qlen = TCP_MAX_EVD_QLEN;
	a->max_send_depth = TCP_MAX_DEPTH;
	a->max_recv_depth = TCP_MAX_DEPTH;
	a->max_send_sge = TCP_MAX_SGE;
	a->max_recv_sge = TCP_MAX_SGE;
	a->max_inline = TCP_MAX_INLINE;
	a->max_msg_size = TCP_MAX_MSG;
	a->max_rdma_size = TCP_MAX_MSG;
	a->max_lmr_size = TCP_MAX_LMR;
	a->max_srq = TCP_MAX_SRQ;
	a->max_srq_recv = TCP_MAX_SRQ_RECV;
	a->max_srq_sge = TCP_MAX_SGE;
	a->max_rmr = TCP_MAX_RMR;
	a->max_rdma_read_in = TCP_MAX_IRD;
	a->max_rdma_read_out = TCP_MAX_ORD;
	/* Raw MPA limits; the core takes its header off. */
	a->pdata_connect = TCP_MPA_ULP_PD_MAX;
	a->pdata_accept = TCP_MPA_ULP_PD_MAX;
	a->pdata_reject = TCP_MPA_ULP_PD_MAX;
	a->pdata_disconnect = 0;	/* iWARP has no disconnect data */
	a->service_id_min = TCP_SERVICE_MIN;
	a->service_id_max = TCP_SERVICE_MAX;
	for (i = 0; i < RAPT_EVD_NSTREAMS; i++)
		a->evd_merge[i] = RAPT_EVD_ALL_STREAMS;
	a->local_addr = ia->addr;
	return 0;
}

/* ------------------------------------------------------------------ */
/* PZ: an identity.  Registrations and EPs keep its address; a peer's   */
/* STag serves an EP only if both have the same (tcp_mem.c).            */
/* ------------------------------------------------------------------ */

static int tcp_pz_create(void *pia, void **ppz)
{
	struct tcp_pz *pz = malloc(sizeof(*pz));

	if (!pz) {
		tcp_err("out of memory for a PZ");
		return RAPT_ENOMEM;
	}
	pz->ia = pia;
	*ppz = pz;
	return 0;
}

/* The core frees a PZ only once no LMR or EP of it is left. */
static int tcp_pz_free(void *ppz)
{
	free(ppz);
	return 0;
}

/* ------------------------------------------------------------------ */
/* EVD                                                                 */
/* ------------------------------------------------------------------ */

static int tcp_evd_create(void *pia, struct rapt_core_evd *cevd, uint32_t qlen,
			  uint32_t streams, void **pevd)
{
	struct tcp_evd *evd = calloc(1, sizeof(*evd));

	if (!evd)
		return RAPT_ENOMEM;
	evd->ia = pia;
	evd->cevd = cevd;
	evd->conn = streams & RAPT_EVD_CONNECTION;
	rapt_lock_init(&evd->lock);
	*pevd = evd;
	return 0;
}

static int tcp_evd_free(void *pevd)
{
	struct tcp_evd *evd = pevd;

	/* The core frees an EVD only when no EP uses it. */
	if (evd->neps)
		tcp_err("EVD freed with %u EPs attached", evd->neps);
	free(evd->eps);
	free(evd);
	return 0;
}

/**
 * tcp_evd_attach - let @evd's consumer progress @ep (evd_progress)
 * @evd: the EVD
 * @ep: an EP whose events land on @evd
 *
 * Return: 0, RAPT_ENOMEM.
 */
int tcp_evd_attach(struct tcp_evd *evd, struct tcp_ep *ep)
{
	struct tcp_ep **eps;
	uint32_t cap;
	int ret = 0;

	rapt_lock(&evd->lock);
	if (evd->neps == evd->cap) {
		cap = evd->cap ? evd->cap * 2 : 4;
		eps = realloc(evd->eps, cap * sizeof(*eps));
		if (!eps) {
			ret = RAPT_ENOMEM;
			goto out;
		}
		evd->eps = eps;
		evd->cap = cap;
	}
	evd->eps[evd->neps++] = ep;
	atomic_store_explicit(&evd->nattached, evd->neps,
			      memory_order_relaxed);
out:
	rapt_unlock(&evd->lock);
	return ret;
}

/**
 * tcp_evd_detach - undo tcp_evd_attach
 * @evd: the EVD
 * @ep: the EP
 *
 * Once this returns, evd_progress no longer touches @ep: it holds the
 * EVD's lock while it works.
 */
void tcp_evd_detach(struct tcp_evd *evd, struct tcp_ep *ep)
{
	uint32_t i;

	rapt_lock(&evd->lock);
	for (i = 0; i < evd->neps; i++) {
		if (evd->eps[i] == ep) {
			evd->eps[i] = evd->eps[--evd->neps];
			atomic_store_explicit(&evd->nattached, evd->neps,
					      memory_order_relaxed);
			break;
		}
	}
	rapt_unlock(&evd->lock);
}

static bool ep_moves_data(const struct tcp_ep *ep)
{
	return ep->state == TCP_EP_RTR_WAIT || ep->state == TCP_EP_RTS ||
	       ep->state == TCP_EP_CLOSING;
}

/**
 * tcp_evd_spinning - whether a consumer busy-polls @evd
 * @evd: the EVD, or NULL
 * @now: rapt_now_ns()
 *
 * True when its last calls to evd_progress were a busy-poll loop, recent,
 * and the EVD has no more EPs than one evd_progress call looks at, so that
 * every EP attached to it is progressed by that consumer.
 */
bool tcp_evd_spinning(struct tcp_evd *evd, uint64_t now)
{
	if (!evd)
		return false;
	return atomic_load_explicit(&evd->nattached, memory_order_relaxed) <=
	       TCP_EVD_PROGRESS_EPS &&
	       atomic_load_explicit(&evd->spin_until_ns,
				    memory_order_relaxed) > now &&
	       now - atomic_load_explicit(&evd->poll_last_ns,
					  memory_order_relaxed) <
	       TCP_SPIN_IDLE_NS;
}

/* With evd->lock: account one evd_progress call; true when it is part of
 * a busy-poll loop and the EVD's EPs may be parked. */
static bool evd_note_poll(struct tcp_evd *evd)
{
	uint64_t now = rapt_now_ns();
	bool spin = false;

	if (now - atomic_load_explicit(&evd->poll_last_ns,
				       memory_order_relaxed) < TCP_SPIN_GAP_NS) {
		if (evd->poll_streak < TCP_SPIN_STREAK) {
			evd->poll_streak++;
		} else {
			atomic_store_explicit(&evd->spin_until_ns,
					      now + TCP_SPIN_HOLD_NS,
					      memory_order_relaxed);
			spin = evd->neps <= TCP_EVD_PROGRESS_EPS;
		}
	} else {
		evd->poll_streak = 0;
	}
	atomic_store_explicit(&evd->poll_last_ns, now, memory_order_relaxed);
	return spin;
}

/*
 * An EP whose socket had nothing TCP_IDLE_POLLS times in a row is looked at
 * only every TCP_IDLE_EVERY calls: a ping-pong on one EP of an EVD that
 * also holds quiet ones (a control connection) then costs one recv() per
 * call rather than one per EP, which halves the time it takes to notice
 * the reply.  The quiet EP's data waits a few calls longer.  When every EP
 * a call would look at is that quiet, it looks at them all: the consumer
 * then waits for whichever speaks first.
 */
static bool ep_skip_idle(struct tcp_ep *ep)
{
	uint8_t n = atomic_load_explicit(&ep->poll_idle, memory_order_relaxed);

	if (n < TCP_IDLE_POLLS)
		return false;
	/* TCP_IDLE_POLLS .. + TCP_IDLE_EVERY - 1: a look at the first */
	if (++n == TCP_IDLE_POLLS + TCP_IDLE_EVERY)
		n = TCP_IDLE_POLLS;
	atomic_store_explicit(&ep->poll_idle, n, memory_order_relaxed);
	return n != TCP_IDLE_POLLS;
}

static void ep_note_idle(struct tcp_ep *ep, int got)
{
	uint8_t n = atomic_load_explicit(&ep->poll_idle, memory_order_relaxed);

	if (got)
		n = 0;
	else if (n < TCP_IDLE_POLLS)
		n++;
	atomic_store_explicit(&ep->poll_idle, n, memory_order_relaxed);
}

/*
 * evd_progress's look at @ep (evd->lock held): its receive path, or the
 * active side of its handshake; trylock: an EP busy elsewhere is being
 * progressed already.  1 when its data path ran (*@got counts those that
 * read something, *@out whether one waits for room in its socket).
 */
static uint32_t evd_visit(struct tcp_ep *ep, bool spin, uint32_t *got,
			  bool *out)
{
	uint32_t own = 0;
	int r;

	if (!rapt_lock_try(&ep->lock))
		return 0;
	if (ep_moves_data(ep)) {
		if (spin && !ep->parked)
			tcp_cm_park(ep);
		r = tcp_rx_progress(ep, true);
		ep_note_idle(ep, r);
		*got += r > 0;
		/* The consumer found nothing here: it is not about to
		 * write more, so a corked tail goes now. */
		if (!r)
			tcp_cork_idle(ep);
		own = 1;
		/* A send waits for room in the socket: the pass below takes
		 * EPOLLOUT in this thread, rather than the engine thread
		 * waking for it. */
		*out |= !!(ep->io.events & EPOLLOUT);
		if (ep->bound_due == TCP_BOUND_CONSUMER)
			tcp_ep_bound_set(ep);	/* tcp_ep_bound_fire */
	} else if (!spin && tcp_ep_handshaking(ep)) {
		/* (a spinning consumer drives the engine instead) */
		tcp_cm_progress(ep);
	}
	rapt_unlock(&ep->lock);
	return own;
}

/*
 * The consumer is about to look at the EVD: run the receive path of a few
 * of its EPs here (and the active side of their handshake), so a polling
 * consumer does not wait for the engine thread to wake up.  trylock: an EP
 * busy elsewhere is being progressed already.
 */
static int tcp_evd_progress(void *pevd)
{
	struct tcp_ep *ep, *idle[TCP_EVD_PROGRESS_EPS];
	struct tcp_evd *evd = pevd;
	uint32_t i, n, own = 0, got = 0, nidle = 0;
	bool spin, drive, yield, fdwake, early, listen = false, out = false;
	bool quiet;
	uint64_t acc, now;

	if (!evd)
		return 0;
	rapt_lock(&evd->lock);
	spin = evd_note_poll(evd);
	/* Woken through the EVD's fd: whatever made the engine's set
	 * readable is handled here (below), or the consumer's poll would
	 * keep waking for it. */
	fdwake = atomic_load_explicit(&evd->fd_armed, memory_order_relaxed) &&
		 atomic_exchange(&evd->fd_armed, false);
	n = evd->neps < TCP_EVD_PROGRESS_EPS ? evd->neps :
	    TCP_EVD_PROGRESS_EPS;
	/*
	 * On an EVD of connection events, while some handshake waits for
	 * its peer, the engine's ready list goes first: an RTR or a reply
	 * that came in before a close on another connection is reported
	 * before the DISCONNECTED that this loop's own reads would find, in
	 * the order the peer sent them.  (A data-only EVD's busy poll never
	 * pays for it.)
	 */
	early = n && evd->conn &&
		atomic_load_explicit(&evd->ia->nhandshake,
				     memory_order_relaxed);
	if (early) {
		rapt_unlock(&evd->lock);
		rapt_engine_drive(evd->ia->eng);
		rapt_lock(&evd->lock);
		n = evd->neps < n ? evd->neps : n;
	}
	for (i = 0; i < n; i++) {
		if (evd->cursor >= evd->neps)
			evd->cursor = 0;
		ep = evd->eps[evd->cursor++];
		if (ep_skip_idle(ep) &&
		    !atomic_load_explicit(&ep->corked, memory_order_relaxed)) {
			idle[nidle++] = ep;
			continue;
		}
		own += evd_visit(ep, spin, &got, &out);
	}
	/* No data path ran, and the EPs skipped were quiet: the consumer
	 * waits for any of them (a rank for a peer that computes), so all
	 * are looked at.  The skip saves recv()s for an active EP's sake. */
	quiet = !own && nidle;
	if (quiet)
		for (i = 0; i < nidle; i++)
			own += evd_visit(idle[i], spin, &got, &out);
	/* A busy-poll loop runs the engine's passes itself: listeners,
	 * handshakes, closes and timers, with no thread switch.  One that
	 * moves data drives only now and then: that keeps a syscall off its
	 * round trip.  But where requests arrive (a PSP's EVD), calls that
	 * found no data look at the listeners more often: every time while
	 * connections keep coming (else each waits up to
	 * TCP_DRIVE_EVERY_MASK calls behind an open connection's idle
	 * reads), every TCP_LISTEN_EVERY_MASK + 1 otherwise (a server's
	 * round trips on the same EVD keep their pace).  (The ticks are the
	 * EVD's: counted under its lock.) */
	if (spin && own && !got &&
	    atomic_load_explicit(&evd->nlisten, memory_order_relaxed)) {
		acc = atomic_load_explicit(&evd->accept_ns,
					   memory_order_relaxed);
		now = atomic_load_explicit(&evd->poll_last_ns,
					   memory_order_relaxed);
		listen = (acc && (acc >= now ||
				  now - acc < TCP_LISTEN_HOT_NS)) ||
			 !(++evd->listen_tick & TCP_LISTEN_EVERY_MASK);
	}
	drive = !early && ((fdwake && !own) ||
		(spin && (!own || listen || out ||
			  !(++evd->drive_tick & TCP_DRIVE_EVERY_MASK))));
	/* Spinning on no data path (a CR, a handshake, both of which need
	 * the peer's), or on EPs quiet for a while: now and then let the
	 * peer have this CPU, should it share it, rather than after a time
	 * slice. */
	yield = spin && (!own || quiet) &&
		!(++evd->yield_tick & TCP_YIELD_EVERY_MASK);
	rapt_unlock(&evd->lock);
	if (drive)
		rapt_engine_drive(evd->ia->eng);
	if (yield)
		sched_yield();
	return 0;
}

/* ------------------------------------------------------------------ */
/* Wait objects: a blocked consumer sleeps on the engine's epoll set    */
/* ------------------------------------------------------------------ */

static int tcp_evd_wait_fd(void *pevd, int *fd)
{
	struct tcp_evd *evd = pevd;

	if (!evd)
		return RAPT_ENOTSUP;
	*fd = rapt_engine_fd(evd->ia->eng);
	return 0;
}

/*
 * The consumer stops spinning on @evd: its EPs must wake the sleep, so
 * none may stay parked (the engine would not watch their data).
 */
static void evd_unspin(struct tcp_evd *evd)
{
	struct tcp_ep *ep;
	uint32_t i;

	rapt_lock(&evd->lock);
	evd->poll_streak = 0;
	atomic_store_explicit(&evd->spin_until_ns, 0, memory_order_relaxed);
	if (atomic_load(&evd->ia->nparked)) {
		for (i = 0; i < evd->neps; i++) {
			ep = evd->eps[i];
			rapt_lock(&ep->lock);
			tcp_cm_unpark(ep);
			rapt_unlock(&ep->lock);
		}
	}
	rapt_unlock(&evd->lock);
}

/* The consumer is about to sleep: the tails its EPs corked go now
 * (tcp_cork.c), not when the cork timer fires. */
static void evd_uncork(struct tcp_evd *evd)
{
	struct tcp_ep *ep;
	uint32_t i;

	if (!atomic_load_explicit(&evd->ia->ncorked, memory_order_relaxed))
		return;
	rapt_lock(&evd->lock);
	for (i = 0; i < evd->neps; i++) {
		ep = evd->eps[i];
		if (!atomic_load_explicit(&ep->corked, memory_order_relaxed))
			continue;
		rapt_lock(&ep->lock);
		tcp_cork_push(ep);
		rapt_unlock(&ep->lock);
	}
	rapt_unlock(&evd->lock);
}

/*
 * Nothing to arm: the engine's epoll set is level-triggered, so whatever
 * is ready when the consumer sleeps wakes it at once, and events pushed
 * meanwhile wake it through the core.
 */
static int tcp_evd_trywait(void *pevd, uint32_t how)
{
	struct tcp_evd *evd = pevd;

	evd_unspin(evd);
	evd_uncork(evd);
	if (how == RAPT_PROV_WAIT_BLOCK) {
		rapt_engine_sleep_begin(evd->ia->eng);
	} else {
		/* No call tells when the consumer's own poll ends: the
		 * engine thread stands aside for a while, as for a
		 * busy-polling consumer, and then takes over again. */
		atomic_store(&evd->fd_armed, true);
		rapt_engine_lease(evd->ia->eng);
	}
	return 0;
}

/* With few EPs on the EVD, whatever woke the sleeper is most likely their
 * data: read it straight away, and run an engine pass (an epoll_wait()
 * more) only if it was something else. */
#define TCP_WAKE_OWN_EPS	2

/* Run the receive path of @evd's EPs: whether any of them read data. */
static bool evd_rx_own(struct tcp_evd *evd)
{
	struct tcp_ep *ep;
	bool got = false;
	uint32_t i;
	int n;

	rapt_lock(&evd->lock);
	for (i = 0; i < evd->neps; i++) {
		ep = evd->eps[i];
		if (ep_skip_idle(ep) || !rapt_lock_try(&ep->lock))
			continue;
		if (ep_moves_data(ep)) {
			n = tcp_rx_progress(ep, false);
			ep_note_idle(ep, n);
			got |= n > 0;
		}
		rapt_unlock(&ep->lock);
	}
	rapt_unlock(&evd->lock);
	return got;
}

static int tcp_evd_wait_done(void *pevd)
{
	struct tcp_evd *evd = pevd;
	struct rapt_engine *eng = evd->ia->eng;

	rapt_engine_sleep_end(eng);
	if (atomic_load_explicit(&evd->nattached, memory_order_relaxed) >
	    TCP_WAKE_OWN_EPS || !evd_rx_own(evd))
		rapt_engine_drive(eng);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Descriptor                                                          */
/* ------------------------------------------------------------------ */

static int tcp_init(void **prov)
{
	*prov = NULL;
	return 0;
}

static void tcp_fini(void *prov)
{
}

static const struct rapt_prov_ops tcp_ops = {
	.size = sizeof(struct rapt_prov_ops),
	.ia_open = tcp_ia_open,
	.ia_close = tcp_ia_close,
	.ia_query = tcp_ia_query,
	.pz_create = tcp_pz_create,
	.pz_free = tcp_pz_free,
	.lmr_create = tcp_lmr_create,
	.lmr_free = tcp_lmr_free,
	.evd_create = tcp_evd_create,
	.evd_free = tcp_evd_free,
	.evd_progress = tcp_evd_progress,
	.ep_create = tcp_ep_create,
	.ep_free = tcp_ep_free,
	.ep_modify = tcp_ep_modify,
	.ep_set_peer_timeout = tcp_ep_set_peer_timeout,
	.ep_reset = tcp_ep_reset,
	.ep_get_status = tcp_ep_get_status,
	.srq_create = tcp_srq_create,
	.srq_free = tcp_srq_free,
	.srq_post_recv = tcp_srq_post_recv,
	.srq_query = tcp_srq_query,
	.srq_resize = tcp_srq_resize,
	.ep_set_srq = tcp_ep_set_srq,
	.rmr_create = tcp_rmr_create,
	.rmr_free = tcp_rmr_free,
	.rmr_bind = tcp_rmr_bind,
	.rmr_query = tcp_rmr_query,
	.ep_connect = tcp_ep_connect,
	.ep_disconnect = tcp_ep_disconnect,
	.post_recv = tcp_post_recv,
	.post_send = tcp_post_send,
	.post_write = tcp_post_write,
	.post_read = tcp_post_read,
	.psp_create = tcp_psp_create,
	.psp_free = tcp_psp_free,
	.cr_accept = tcp_cr_accept,
	.cr_reject = tcp_cr_reject,
	.evd_wait_fd = tcp_evd_wait_fd,
	.evd_trywait = tcp_evd_trywait,
	.evd_wait_done = tcp_evd_wait_done,
};

static const struct rapt_provider tcp_provider = {
	.size = sizeof(struct rapt_provider),
	.abi = RAPT_PROVIDER_ABI,
	.name = TCP_PROV_NAME,
	.version = TCP_PROV_VERSION,
	.description = "software iWARP (MPA rev 2, DDP, RDMAP) over kernel TCP",
	.init = tcp_init,
	.fini = tcp_fini,
	.get_devices = tcp_get_devices,
	.ops = &tcp_ops,
};

RAPT_PROVIDER_EXPORT const struct rapt_provider *rapt_provider_entry(void)
{
	return &tcp_provider;
}
