/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: a software iWARP (MPA rev2 + DDP + RDMAP) over kernel TCP.
 *
 * Modules and who calls whom:
 *
 *   tcp_prov.c    descriptor, devices (interfaces with an address), IA,
 *                 PZ, EVD objects, evd_progress
 *   (providers/util/engine.c, <rapt/provider_util.h>: the progress
 *                 engine, one per IA: epoll over every socket of the IA,
 *                 timers, cross-thread calls)
 *   connection management (tcp_cm.h, private to these files):
 *   tcp_ep.c      EP ops: create/free/modify/connect/disconnect, teardown
 *   tcp_conn.c    an EP's connection state: the one transition function
 *                 (tcp_ep_set_state), events, fail/close/end, the EP's
 *                 socket handler and timer
 *   tcp_handshake.c  the MPA exchange, both sides, RTR negotiation
 *   tcp_listen.c  PSP ops, accept4, requests in the handshake, handshake
 *                 accounting, the CR handed to the core
 *   tcp_cm.c      cr_accept/cr_reject: request ids, the consumer's
 *                 decisions
 *   tcp_park.c    parking the EPs a consumer busy-polls
 *   tcp_cork.c    TCP_CORK while the consumer streams large messages
 *   tcp_rcvbuf.c  SO_RCVBUF of a connection that receives bulk data
 *   tcp_sock.c    addresses and socket helpers of the CM
 *   tcp_mem.c     the STag table: LMR registration, key and bounds checks
 *   tcp_srq.c     shared receive queues: the ring, the take of a receive
 *                 by an EP's message, the low-watermark event
 *   tcp_tx.c      send queue: post_send/write/read, FPDU segmentation,
 *                 writev batching, Read Responses, Terminate, the RTR
 *   tcp_rx.c      receive state machine: FPDU parsing, DDP placement,
 *                 completions, Read Request service, Terminate handling
 *   tcp_wire.h    the codec (pure functions)
 *
 * Locking: one lock per EP (ep->lock, the toolkit's struct rapt_lock: a
 * futex word, fewer instructions than a pthread mutex on every post and
 * poll) guards everything of that EP: its state, queues and socket I/O.
 * The engine calls the handlers below without it; they take it.
 * rapt_prov_*() services may be called with an EP lock held (the core
 * never calls into the provider with its own locks held).  Lock order:
 * ia->lock before ep->lock; never two EP locks at once.
 * evd_progress holds a tcp_evd's lock while it trylocks EP locks, so code
 * holding an ep->lock never takes a tcp_evd lock (attach/detach run from
 * ep_create/ep_free without it).  The engine's own lock is a leaf.
 *
 * Progress: the engine thread makes every connection progress on its own
 * (the contract: events reach the EVD without the consumer's help).  A
 * consumer that polls an EVD (rapt_evd_dequeue/wait call evd_progress)
 * also runs the receive path of that EVD's EPs itself, with a trylock, so
 * a busy-polling consumer does not wait for a thread wakeup; a post runs
 * the transmit path in the caller's thread.  While a consumer busy-polls
 * an EVD, its EPs are parked: the engine stops watching their EPOLLIN
 * until the polling stops (docs/tcp-provider.md, section 2).
 */
#ifndef RAPT_PROVIDERS_TCP_TCP_H
#define RAPT_PROVIDERS_TCP_TCP_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <rapt/provider.h>
#include <rapt/provider_util.h>

#include "tcp_wire.h"

#define TCP_PROV_NAME "tcp"

#define tcp_log(level, ...) RAPT_PLOG((level), TCP_PROV_NAME, __VA_ARGS__)
#define tcp_err(...)  tcp_log(RAPT_LOG_ERROR, __VA_ARGS__)
#define tcp_warn(...) tcp_log(RAPT_LOG_WARN, __VA_ARGS__)
#define tcp_info(...) tcp_log(RAPT_LOG_INFO, __VA_ARGS__)
#define tcp_dbg(...)  tcp_log(RAPT_LOG_DEBUG, __VA_ARGS__)

/* Limits the provider advertises. */
#define TCP_MAX_SGE		8
#define TCP_MAX_INLINE		256
#define TCP_MAX_DEPTH		4096
#define TCP_MAX_IRD		64
#define TCP_MAX_ORD		64
#define TCP_MAX_SRQ		1024		/* a bound, not a cost */
#define TCP_MAX_SRQ_RECV	(1u << 20)
/* Windows take STag slots (2^20, shared with LMRs): leave most to LMRs. */
#define TCP_MAX_RMR		(1u << 16)
#define TCP_MAX_MSG		(1ull << 31)
#define TCP_SERVICE_MIN		1
#define TCP_SERVICE_MAX		65535
#define TCP_HS_REQUEST_MS	5000	/* siw wants our request within 5 s */
/* While a consumer busy-polls, the engine thread looks ever less often,
 * up to this interval, whether it still does (rapt_engine_aside_max): a
 * look takes a CPU from the spinning consumer.  It is also how long, at
 * most, the thread takes to pick up the EPs of a consumer that stops
 * polling without going to sleep. */
#define TCP_ENGINE_ASIDE_MAX_MS	16

/* ------------------------------------------------------------------ */
/* IA, PZ, EVD (tcp_prov.c)                                            */
/* ------------------------------------------------------------------ */

struct tcp_ep;

struct tcp_ia {
	struct rapt_core_ia *cia;
	struct rapt_engine *eng;
	pthread_mutex_t lock;		/* guards the lists below */
	struct sockaddr_storage addr;	/* the device's address */
	char device[64];
	struct tcp_stag_table *stags;	/* tcp_mem.c */
	bool crc_request;		/* ask peers for CRC32c */
	uint64_t rtr_settle_ns;		/* RAPT_TCP_RTR_SETTLE_MS */
	uint32_t rcvbuf;		/* tcp_rcvbuf.c: SO_RCVBUF of bulk
					 * connections, 0: none */
	uint32_t nep;
	_Atomic uint32_t nparked;	/* EPs parked (tcp_park.c) */
	_Atomic uint32_t ncorked;	/* EPs corked (tcp_cork.c) */
	_Atomic uint32_t nhandshake;	/* EPs waiting for the peer's step
					 * of a handshake (tcp_conn.c) */
	struct rapt_list late;		/* held closes (tcp_late.c), under
					 * the lock */
	uint32_t nlate;
};

/* tcp_late.c: closes held back, owned by the IA. */
#define TCP_LATE_FRAME_MAX	32	/* a zero-length Write FPDU: 20 */
#define TCP_LATE_MAX		256	/* held at once per IA; then now */
void tcp_late_close(struct tcp_ia *ia, struct rapt_io *from,
		    const void *frame, size_t len, uint64_t delay_ns,
		    bool abort);
void tcp_late_flush(struct tcp_ia *ia);

/* A PZ: only its address matters.  An STag serves an EP only if both
 * were made in the same PZ (tcp_mem.c). */
struct tcp_pz {
	struct tcp_ia *ia;
};

struct tcp_evd {
	struct tcp_ia *ia;
	struct rapt_core_evd *cevd;
	struct rapt_lock lock;		/* guards the EP list */
	struct tcp_ep **eps;		/* EPs whose completions land here */
	uint32_t neps, cap;
	uint32_t cursor;		/* evd_progress round robin */
	bool conn;			/* it takes connection events */
	/* PSPs whose requests land here (tcp_listen.c): a consumer spinning
	 * on it waits for the listeners too (tcp_prov.c). */
	_Atomic uint32_t nlisten;
	_Atomic uint64_t accept_ns;	/* the last connection they took */
	/* Spin detection (tcp_prov.c), written under the lock: */
	uint32_t poll_streak;		/* calls in a row close together */
	uint32_t drive_tick;		/* spinning calls that moved data */
	uint32_t yield_tick;		/* spinning calls that did not */
	uint32_t listen_tick;		/* ... found no data, listening */
	/* Read by the engine without the lock: */
	_Atomic uint64_t poll_last_ns;	/* last evd_progress call */
	_Atomic uint64_t spin_until_ns;	/* a consumer spins on it till then */
	_Atomic uint32_t nattached;	/* neps */
	/* The consumer armed the EVD's fd: its next evd_progress runs an
	 * engine pass for whatever woke it (tcp_prov.c). */
	_Atomic bool fd_armed;
};

int tcp_evd_attach(struct tcp_evd *evd, struct tcp_ep *ep);
void tcp_evd_detach(struct tcp_evd *evd, struct tcp_ep *ep);
/* Whether a consumer busy-polls @evd, so its evd_progress runs the receive
 * path of every EP attached to it (any thread; NULL: false). */
bool tcp_evd_spinning(struct tcp_evd *evd, uint64_t now);

/* ------------------------------------------------------------------ */
/* Memory (tcp_mem.c)                                                  */
/* ------------------------------------------------------------------ */

/*
 * STags (tcp_mem.c).  One table per IA; a key is (slot index ^ a random
 * mask) << 12 | a 12-bit tag mixed from a per-slot generation and random
 * bits, so lookup is O(1), keys are never 0 or TCP_RTR_STAG, a freed key
 * does not come back for 4096 reuses of its slot, and keys are not
 * sequential.  raddr is the region's virtual address (as siw does).
 *
 * A slot is pinned while the data path reads or writes its memory:
 * tcp_lmr_free() clears the keys, then waits for the pins to drop, so no
 * byte lands in a region after its LMR is freed.  Pins are held for one
 * syscall or memcpy, never across calls.
 */
struct tcp_stag_slot;

int tcp_stags_create(struct tcp_stag_table **t);
void tcp_stags_destroy(struct tcp_stag_table *t);
int tcp_lmr_create(void *pia, void *ppz, void *addr, size_t length,
		   uint32_t access, struct rapt_lmr_info *info, void **plmr);
int tcp_lmr_free(void *plmr);
/*
 * Memory windows (tcp_mem.c): a window is a slot of its own, with an rkey
 * and no lkey, that points into a bound LMR's memory; every bind gives the
 * slot a new generation, so a new key.  An LMR with a bound window cannot
 * be freed.  tcp_mw_bind() (with @plmr NULL: unbind) is called by the
 * rmr_bind op (tcp_tx.c) with the EP's lock held.
 */
int tcp_rmr_create(void *pia, void *ppz, void **prmr);
int tcp_rmr_free(void *prmr);
int tcp_rmr_query(void *prmr, uint32_t *rkey);
int tcp_mw_bind(void *prmr, void *plmr, uint64_t addr, uint64_t length,
		uint32_t access, uint32_t *rkey);
int tcp_rmr_bind(void *pep, void *prmr, void *plmr, uint64_t addr,
		 uint64_t length, uint32_t access, uint64_t cookie,
		 uint32_t flags, uint32_t *rkey);

/* Check a local SGE list of an EP of @pz for access @need
 * (RAPT_MEM_LOCAL_WRITE for receive and read sinks, 0 for sources): 0, or
 * RAPT_DTO_LOCAL_PROTECTION on a bad key, bounds or rights, or a region
 * of another PZ. */
int tcp_sge_check(struct tcp_ia *ia, const struct tcp_pz *pz,
		  const struct rapt_sge *sgl, uint32_t nsge, uint32_t need);
/* Check a remote (rkey, to, len) for @need (RAPT_MEM_REMOTE_READ or
 * _WRITE) on behalf of an EP of @pz; returns a pointer into the region
 * (not pinned: only for checks), or NULL and the RDMAP protection code
 * (TCP_TERM_RDMAP_*) in @ecode: a region of another PZ is
 * TCP_TERM_RDMAP_STAG_NOT_ASSOC. */
uint8_t *tcp_rkey_resolve(struct tcp_ia *ia, const struct tcp_pz *pz,
			  uint32_t rkey, uint64_t to, uint64_t len,
			  uint32_t need, uint8_t *ecode);
/* Send with Invalidate arriving on an EP of @pz: 0, RAPT_ENOENT when
 * @rkey names no live region, or RAPT_EACCES when its region is of
 * another PZ (nothing invalidated); both are reported as
 * TCP_TERM_RDMAP_CANNOT_INVALIDATE (remote operation / protection). */
int tcp_rkey_invalidate(struct tcp_ia *ia, const struct tcp_pz *pz,
			uint32_t rkey);
/* Pinned lookups: a pointer to @len bytes at @addr/@to, and the pin to
 * drop with tcp_mem_put() once the memory is no longer touched.  Keys of
 * regions of another PZ than @pz fail, local ones as bad keys. */
uint8_t *tcp_mem_lkey(struct tcp_ia *ia, const struct tcp_pz *pz,
		      uint32_t lkey, uint64_t addr, uint64_t len,
		      uint32_t need, struct tcp_stag_slot **pin);
uint8_t *tcp_mem_rkey(struct tcp_ia *ia, const struct tcp_pz *pz,
		      uint32_t rkey, uint64_t to, uint64_t len, uint32_t need,
		      uint8_t *ecode, struct tcp_stag_slot **pin);
void tcp_mem_put(struct tcp_stag_slot *pin);
/* Turn a pin into a hold on the LMR owning the memory (a window's LMR):
 * kept while a Read Response's bytes wait for sendmsg(); tcp_mem_put(). */
struct tcp_stag_slot *tcp_mem_hold(struct tcp_ia *ia,
				   struct tcp_stag_slot *pin);

/* ------------------------------------------------------------------ */
/* EP                                                                  */
/* ------------------------------------------------------------------ */

/* Provider-side connection state (the core keeps its own EP state). */
enum tcp_ep_state {
	TCP_EP_IDLE = 0,	/* created, no socket */
	TCP_EP_CONNECTING,	/* active: TCP connect under way */
	TCP_EP_MPA_REQ_SENT,	/* active: waiting for the MPA reply */
	TCP_EP_ACCEPTING,	/* passive: reply being sent */
	TCP_EP_RTR_WAIT,	/* passive: reply sent, waiting for the RTR */
	TCP_EP_RTS,		/* data moves */
	TCP_EP_CLOSING,		/* graceful: draining sends, FIN sent */
	TCP_EP_CLOSED,		/* socket gone, everything flushed */
};

/* tcp_wr.flags: the RAPT_POST_* bits, plus these. */
#define TCP_WR_INVALIDATE	(1u << 8)	/* send with invalidate */
#define TCP_WR_DONE		(1u << 9)	/* ready to complete */
#define TCP_WR_QUEUED		(1u << 10)	/* read: in the ORQ */

/*
 * A posted work request: a ring slot of struct tcp_wrq.stride bytes, the
 * fixed part, then nsge SGEs (the EP's max SGEs), then the inline bytes
 * (the EP's max_inline, rounded up to 8).
 */
struct tcp_wr {
	uint64_t cookie;
	uint64_t raddr;		/* write/read: remote TO */
	uint32_t rkey;		/* write/read: remote STag */
	uint32_t len;		/* total bytes */
	uint32_t done;		/* bytes sent (sq) or placed (rq) so far */
	uint32_t msn;		/* untagged MSN (Send, Read Request) */
	uint32_t aux;		/* send: STag to invalidate; read: sink */
	uint16_t flags;		/* RAPT_POST_*, TCP_WR_* */
	uint8_t op;		/* enum rapt_dto_op */
	uint8_t nsge;
	struct rapt_sge sge[];
};

/*
 * A bounded FIFO of work requests, indexed by free-running sequence
 * numbers (slot = seq & (cap - 1)).  It starts small and doubles, up to
 * the EP's depth, the first times it fills (at most log2(depth / 16)
 * allocations in an EP's life, none in steady state), so an idle EP costs
 * little whatever depth it was created with.  An outgrown array is freed
 * only when no writev may still point into it (inline bytes).
 */
struct tcp_wrq {
	uint8_t *slots;
	void *old;		/* previous array, freed by tcp_wrq_reap() */
	uint32_t stride;	/* bytes per slot */
	uint32_t nsge;		/* SGEs a slot holds */
	uint32_t cap;		/* slots, a power of 2 */
	uint32_t max;		/* depth: most WRs queued */
	uint32_t head, tail;	/* sequence numbers; count = tail - head */
};

struct tcp_rx;	/* receive state, private to tcp_rx.c */
struct tcp_tx;	/* transmit state, private to tcp_tx.c */

struct tcp_ep {
	struct rapt_io io;		/* must stay first: engine handler */
	struct rapt_retire retire;
	struct tcp_ia *ia;
	const struct tcp_pz *pz;	/* remote access only to its STags */
	struct rapt_core_ep *cep;
	struct rapt_ep *handle;
	struct tcp_evd *recv_evd;
	struct tcp_evd *req_evd;
	struct tcp_evd *conn_evd;
	struct rapt_lock lock;
	enum tcp_ep_state state;
	struct rapt_ep_attr attr;
	uint32_t peer_timeout_ms;	/* keepalive + user timeout of the
					 * socket (tcp_sock_peer_timeout) */
	bool active;
	bool crc;			/* negotiated CRC32c */
	bool mpa_rev1;			/* peer spoke rev 1 */
	bool sends_held;		/* rev 1 passive: hold until 1st FPDU */
	bool reads_waiting;		/* tcp_tx.c: reads posted that wait for
					 * the receive path (read_may_wait()) */
	uint8_t rtr;			/* TCP_MPA_RTR_WRITE or _READ, or 0 */
	bool rtr_repeat_timed;		/* tcp_conn.c: active side, the RTR's
					 * repeat 200 ms after it is due */
	bool rtr_repeat_close;		/* ... and the one before our FIN */
	bool fin_held;			/* CLOSING: FIN waits for the RTR's
					 * settle time (tcp_conn.c) */
	bool consumer_close;		/* the consumer ends it (disconnect,
					 * free): the settle time holds */
	bool peer_tcp;			/* the peer is rapt's tcp provider
					 * (its mark, tcp_handshake.c) */
	uint64_t rtr_at_ns;		/* when the RTR was queued */
	uint16_t ird, ord;		/* negotiated */
	uint32_t max_ulpdu;		/* ULPDU bytes (DDP/RDMAP header and
					 * payload) per FPDU so that one FPDU
					 * fills one MSS; 0: the largest */
	bool mss_due;			/* max_ulpdu still to be read from the
					 * socket (tcp_tx.c, on the first
					 * message that needs it) */
	struct rapt_timer timer;	/* tcp_conn.c: connect, RTR, close
					 * timeouts */
	struct rapt_timer bound;	/* tcp_ep.c: an active socket's
					 * peer-timeout bound, set late */
	uint8_t bound_due;		/* tcp_ep.c: TCP_BOUND_* */
	struct tcp_wrq sq;		/* sends, writes, reads in order */
	struct tcp_wrq rq;		/* posted receives; with an SRQ, the
					 * one a message is filling */
	struct tcp_srq *srq;		/* tcp_srq.c, or NULL */
	struct tcp_rx *rx;
	struct tcp_tx *tx;
	struct tcp_cm *cm;		/* handshake state (tcp_cm.h) */
	bool freeing;			/* ep_free under way: no more events */
	bool rx_eof;			/* tcp_rx.c: the peer's FIN was read,
					 * nothing is left to drain */
	bool term_sent;			/* a Terminate went out: close with a
				 * FIN so it is not lost to an RST */
	_Atomic uint8_t poll_idle;	/* tcp_prov.c: evd_progress found the
					 * socket empty this many times */
	bool parked;			/* tcp_park.c: EPOLLIN off while a
					 * consumer spins on an EVD of ours */
	struct rapt_timer park;		/* tcp_park.c: re-checks a parked EP */
	_Atomic bool corked;		/* tcp_cork.c: TCP_CORK is on */
	bool cork_streak;		/* tcp_cork.c: a large batch went out
					 * since the last push */
	uint32_t cork_writes, cork_seen; /* tcp_cork.c: large batches
					 * written, and at the timer's look */
	struct rapt_timer cork;		/* tcp_cork.c: uncorks at the latest */
	bool rcvbuf_set;		/* tcp_rcvbuf.c: bulk seen, done */
	struct tcp_cap *cap;		/* tcp_capture.c: NULL unless
					 * RAPT_TCP_CAPTURE is set */
};

/* tcp_ep.c, tcp_listen.c, tcp_cm.c: ops */
int tcp_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
		  struct rapt_ep *handle, const struct rapt_ep_attr *attr,
		  void *recv_pevd, void *req_pevd, void *conn_pevd, void **pep);
int tcp_ep_free(void *pep);
int tcp_ep_modify(void *pep, const struct rapt_ep_attr *attr, uint32_t mask);
int tcp_ep_set_peer_timeout(void *pep, uint32_t timeout_ms);
int tcp_ep_reset(void *pep);
int tcp_ep_get_status(void *pep, uint32_t *recv, uint32_t *req);

/* tcp_srq.c: ops, and the receive path's take (with ep->lock). */
struct tcp_srq;
int tcp_srq_create(void *pia, void *ppz, struct rapt_srq *handle,
		   const struct rapt_srq_attr *attr, void **psrq);
int tcp_srq_free(void *psrq);
int tcp_srq_post_recv(void *psrq, const struct rapt_sge *sgl, uint32_t nsge,
		      uint64_t cookie);
int tcp_srq_query(void *psrq, uint32_t *posted);
int tcp_srq_resize(void *psrq, uint32_t max_recv, uint32_t low_watermark);
int tcp_ep_set_srq(void *pep, void *psrq);
struct tcp_wr *tcp_srq_take(struct tcp_ep *ep);
int tcp_ep_connect(void *pep, const struct sockaddr *remote,
		   uint64_t service_id, const void *pdata, size_t pdata_len,
		   int64_t timeout_us);
int tcp_ep_disconnect(void *pep, uint32_t flags, const void *pdata,
		      size_t pdata_len);
int tcp_psp_create(void *pia, struct rapt_core_psp *cpsp, uint64_t service_id,
		   const struct rapt_psp_attr *attr, void *cr_pevd,
		   uint64_t *bound_id, void **ppsp);
int tcp_psp_free(void *ppsp);
int tcp_cr_accept(void *ppsp, struct rapt_core_cr *ccr, void *pep,
		  const void *pdata, size_t pdata_len);
int tcp_cr_reject(void *ppsp, struct rapt_core_cr *ccr, const void *pdata,
		  size_t pdata_len);

/* tcp_handshake.c: evd_progress, with ep->lock held, for an EP in the active
 * handshake (CONNECTING, MPA_REQ_SENT): do what the engine would do. */
void tcp_cm_progress(struct tcp_ep *ep);
/* tcp_park.c: evd_progress, with ep->lock held, when its consumer started
 * to spin on an EVD of @ep: the engine stops waking for @ep's data until
 * the spinning stops (the engine looks every millisecond). */
void tcp_cm_park(struct tcp_ep *ep);
/* With ep->lock: a consumer is about to sleep: watch EPOLLIN again. */
void tcp_cm_unpark(struct tcp_ep *ep);
static inline bool tcp_ep_handshaking(const struct tcp_ep *ep)
{
	return ep->state == TCP_EP_CONNECTING ||
	       ep->state == TCP_EP_MPA_REQ_SENT;
}

/* tcp_conn.c: called by the data path, with ep->lock held. */
/* The transport failed or the peer broke the protocol: tcp_dto_flush(),
 * report BROKEN (ACCEPT_ERROR on a passive EP not yet established,
 * DISCONNECTED during a graceful close), then close the socket with an
 * RST.  @status is the event's prov_status (<rapt/provider_util.h>): a
 * RAPT_E* code, a negated errno, or a Terminate's.  The socket is
 * gone afterwards (ep->io.fd < 0, state CLOSED): callers stop touching it.
 * Safe to call again, and from any thread that holds ep->lock. */
void tcp_cm_fail(struct tcp_ep *ep, int status);
/* The peer closed its side (read returned 0): close, flush, DISCONNECTED. */
void tcp_cm_peer_closed(struct tcp_ep *ep);
/* The passive side got the RTR it was waiting for: report ESTABLISHED. */
void tcp_cm_rtr_arrived(struct tcp_ep *ep);
/* Graceful close: the send queue has drained. */
void tcp_cm_tx_drained(struct tcp_ep *ep);

/* tcp_tx.c / tcp_rx.c: set up and tear down per-EP data-path state. */
int tcp_dto_init(struct tcp_ep *ep);
void tcp_dto_fini(struct tcp_ep *ep);
/* The connection is in RTS (or RTR_WAIT); start moving data.  Called with
 * ep->lock held before the CM reports ESTABLISHED: it must not push events
 * (nothing may complete before ESTABLISHED is queued). */
void tcp_dto_start(struct tcp_ep *ep);
/* Complete every outstanding WR (sq, orq, rq) FLUSHED; with ep->lock. */
void tcp_dto_flush(struct tcp_ep *ep);

/* tcp_tx.c: ops and engine/CM entry points, with ep->lock held unless
 * named as ops. */
int tcp_post_recv(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		  uint64_t cookie);
int tcp_post_send(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		  uint64_t cookie, uint32_t flags, uint32_t inv_rkey);
int tcp_post_write(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		   uint64_t cookie, uint64_t raddr, uint32_t rkey,
		   uint32_t flags);
int tcp_post_read(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		  uint64_t cookie, uint64_t raddr, uint32_t rkey,
		  uint32_t flags);
/* Queue the RTR (active side, right after the MPA reply). */
int tcp_tx_rtr(struct tcp_ep *ep, uint8_t rtr);
/* Write what can be written now; arms EPOLLOUT when the socket is full. */
void tcp_tx_progress(struct tcp_ep *ep);

/* Write the reads that posts left for the receive path (tcp_tx.c,
 * read_may_wait()): from every receive pass, whatever it found, and
 * before a graceful close.  Inline: the receive pass of every busy poll
 * checks it. */
static inline void tcp_tx_flush(struct tcp_ep *ep)
{
	if (ep->reads_waiting)
		tcp_tx_progress(ep);
}

/*
 * An EP timer's callback (engine pass) takes the EP's lock: true when it
 * has it.  Held elsewhere, a consumer is in a post or a poll of the EP
 * right now, so the timer looks again in @again_ns instead: waiting for
 * the lock would cost the engine thread a sleep and the consumer a
 * wakeup at its unlock.  (ep->freeing is set under the engine's run,
 * which the callback holds too.)
 */
static inline bool tcp_ep_timer_lock(struct tcp_ep *ep, struct rapt_timer *t,
				     uint64_t again_ns)
{
	if (rapt_lock_try(&ep->lock))
		return true;
	if (!ep->freeing)
		rapt_timer_arm(ep->ia->eng, t, again_ns);
	return false;
}
/* Send a Terminate, then fail the connection. */
void tcp_tx_terminate(struct tcp_ep *ep, const struct tcp_term *t);
bool tcp_tx_idle(struct tcp_ep *ep);
bool tcp_tx_at_fpdu_end(const struct tcp_ep *ep);

/* tcp_cork.c: TCP_CORK while the consumer streams large messages; with
 * ep->lock held.  A batch of at least TCP_CORK_MIN bytes is large: one
 * size-goal unit (GSO/TSO) or more, so its tail is a segment of its own. */
#define TCP_CORK_MIN		65536u
bool tcp_cork_large(struct tcp_ep *ep);
void tcp_cork_off(struct tcp_ep *ep);
void tcp_cork_push(struct tcp_ep *ep);
void tcp_cork_fire(struct rapt_timer *t);
void tcp_cork_end(struct tcp_ep *ep, bool send);

/* Before the last batch of a transmit pass, of @len bytes, is written:
 * whether it is large (for tcp_cork_written()); may cork the socket. */
static inline bool tcp_cork_write(struct tcp_ep *ep, size_t len)
{
	return len >= TCP_CORK_MIN && tcp_cork_large(ep);
}

/* That batch is in the socket: one that is not large goes at once. */
static inline void tcp_cork_written(struct tcp_ep *ep, bool large)
{
	if (!large && atomic_load_explicit(&ep->corked, memory_order_relaxed))
		tcp_cork_off(ep);
}

/* The consumer looked at an EVD of @ep and found nothing for it. */
static inline void tcp_cork_idle(struct tcp_ep *ep)
{
	if (ep->cork_streak)
		tcp_cork_push(ep);
}

/* tcp_rcvbuf.c: a socket that receives bulk data gets a receive buffer
 * of ia->rcvbuf bytes, once; with ep->lock held.  A direct placement of
 * TCP_RCVBUF_BULK bytes or more in one call is bulk. */
#define TCP_RCVBUF_BULK		16384u
#define TCP_RCVBUF_MAX		(1u << 30)	/* RAPT_TCP_RCVBUF at most */
uint32_t tcp_rcvbuf_auto(void);
void tcp_rcvbuf_bulk(struct tcp_ep *ep);

/* After a direct placement of @n bytes. */
static inline void tcp_rcvbuf_placed(struct tcp_ep *ep, size_t n)
{
	if (n >= TCP_RCVBUF_BULK && !ep->rcvbuf_set)
		tcp_rcvbuf_bulk(ep);
}

/* tcp_rx.c: read and process what the socket has; with ep->lock held.
 * @look: a polling consumer's look at the EP (evd_progress): the pass
 * ends after TCP_RX_PASS_READS of our reads have completed in it.
 * Returns 1 if the socket had anything, 0 if not. */
#define TCP_RX_PASS_READS	8
int tcp_rx_progress(struct tcp_ep *ep, bool look);
bool tcp_rx_seasoned(const struct tcp_ep *ep);
bool tcp_rx_heard(const struct tcp_ep *ep);
void tcp_cm_heard(struct tcp_ep *ep);		/* tcp_conn.c */

/* Completion helper (tcp_rx.c): push a DTO event for @wr on @evd. */
void tcp_complete(struct tcp_ep *ep, struct tcp_evd *evd,
		  const struct tcp_wr *wr, uint32_t status, uint64_t len,
		  uint32_t flags, uint32_t inv_rkey);

/* WR queues (tcp_tx.c) */
int tcp_wrq_init(struct tcp_wrq *q, uint32_t depth, uint32_t nsge,
		 uint32_t inline_len);
void tcp_wrq_fini(struct tcp_wrq *q);
/* A free slot at the tail (not yet counted), or NULL: RAPT_ENOSPC in
 * @err when the queue holds its depth, RAPT_ENOMEM if it cannot grow. */
struct tcp_wr *tcp_wrq_reserve(struct tcp_wrq *q, int *err);
struct tcp_wr *tcp_wrq_push_recv(struct tcp_wrq *q, const struct rapt_sge *sgl,
				 uint32_t nsge, uint64_t cookie, int *err);
void tcp_wrq_reap(struct tcp_wrq *q);

static inline uint32_t tcp_wrq_count(const struct tcp_wrq *q)
{
	return q->tail - q->head;
}

static inline struct tcp_wr *tcp_wrq_at(const struct tcp_wrq *q,
					uint32_t seq)
{
	return (struct tcp_wr *)(q->slots +
				 (size_t)(seq & (q->cap - 1)) * q->stride);
}

static inline struct tcp_wr *tcp_wrq_head(const struct tcp_wrq *q)
{
	return q->tail != q->head ? tcp_wrq_at(q, q->head) : NULL;
}

/* Inline bytes of a slot (RAPT_POST_INLINE copies land here). */
static inline uint8_t *tcp_wr_inline(const struct tcp_wrq *q,
				     struct tcp_wr *wr)
{
	return (uint8_t *)&wr->sge[q->nsge];
}

/* Per-EP data-path memory in bytes, for docs and tests. */
size_t tcp_dto_footprint(const struct tcp_ep *ep);

/* A WR's error status (enum rapt_dto_status) kept in its flags until it
 * completes: tcp_dto_flush() reports it instead of FLUSHED. */
#define TCP_WR_ERR_SHIFT	12
#define TCP_WR_ERR_MASK		(7u << TCP_WR_ERR_SHIFT)
static inline void tcp_wr_set_err(struct tcp_wr *wr, uint32_t status)
{
	wr->flags = (uint16_t)((wr->flags & ~TCP_WR_ERR_MASK) |
			       (status << TCP_WR_ERR_SHIFT));
}

/* tcp_rx.c services for tcp_tx.c: receive state set-up. */
int tcp_rx_init(struct tcp_ep *ep);
void tcp_rx_fini(struct tcp_ep *ep);
void tcp_rx_start(struct tcp_ep *ep);
size_t tcp_rx_footprint(const struct tcp_ep *ep);

/* tcp_tx.c services for tcp_rx.c, with ep->lock held. */
/* The read the next Read Response belongs to; *@rtr when it is the Read
 * RTR's zero-length response (then NULL is returned). */
struct tcp_wr *tcp_tx_read_head(struct tcp_ep *ep, bool *rtr);
/* The Read Response with L arrived: complete that read, kick the tx. */
void tcp_tx_read_done(struct tcp_ep *ep);
/* Queue the answer to an inbound Read Request: 0, or -1 beyond IRD. */
int tcp_tx_rresp_queue(struct tcp_ep *ep, const struct tcp_rreq *r);
/* An inbound Terminate: mark the WR it names (or the oldest outstanding
 * read) with @status for the flush. */
void tcp_tx_blame(struct tcp_ep *ep, const struct tcp_term *t,
		  uint32_t status);

/* ------------------------------------------------------------------ */
/* Capture (tcp_capture.c): RAPT_TCP_CAPTURE=<dir>, docs/tcp-provider.md */
/* ------------------------------------------------------------------ */

struct tcp_cap;

/* NULL when capture is off (the usual case) or the file cannot be made. */
struct tcp_cap *tcp_cap_open(int sock);
void tcp_cap_close(struct tcp_cap *cap);
void tcp_cap_log(struct tcp_cap *cap, bool tx, const void *buf, size_t len);
void tcp_cap_logv(struct tcp_cap *cap, bool tx, const struct iovec *iov,
		  size_t iovcnt, size_t len);

/* Call sites: one predictable branch when capture is off. */
static inline void tcp_cap_io(struct tcp_cap *cap, bool tx, const void *buf,
			      ssize_t n)
{
	if (__builtin_expect(cap != NULL, 0) && n > 0)
		tcp_cap_log(cap, tx, buf, (size_t)n);
}

static inline void tcp_cap_iov(struct tcp_cap *cap, bool tx,
			       const struct iovec *iov, size_t iovcnt,
			       ssize_t n)
{
	if (__builtin_expect(cap != NULL, 0) && n > 0)
		tcp_cap_logv(cap, tx, iov, iovcnt, (size_t)n);
}

#endif /* RAPT_PROVIDERS_TCP_TCP_H */
