/* SPDX-License-Identifier: MIT */
/*
 * The "test" provider: an in-process loopback transport for the core's unit
 * tests.  Built for make check as tests/.libs/librapt-test-pv2.so, never
 * installed.  It implements every op of <rapt/provider.h> (evd_progress is
 * left NULL on purpose so the core's stub is exercised) and reaches the
 * core only through the public provider SDK.
 *
 * KNOBS FOR TEST WRITERS
 *
 * Devices ("test" alone opens "loop"):
 *   test:loop   rank 1000, RAPT_TRANSPORT_OTHER, every RAPT_CAP_* bit,
 *               max_inline 64, raw private-data limits 256 on connect,
 *               accept, reject and disconnect (consumer sees 252), any
 *               EVD streams may share an EVD.
 *   test:ibsim  rank 1001, IB-like raw limits: connect 56, accept 196,
 *               reject 148, disconnect 0, and no RAPT_CAP_DISCONNECT_PDATA
 *               nor RAPT_CAP_MULTI_EVD_STREAMS: each EVD stream stands
 *               alone except DTO and SOFTWARE, which may share.
 *   Both: service ids 1..65535, max_ep 4096, max_evd_qlen 65536, send and
 *   recv depth 1024, 4 SGEs, messages and RDMA up to 1 MiB, LMRs up to
 *   1 GiB, IRD/ORD up to 16.  local_addr is 127.0.0.1.
 *
 * Fabrics: each device is one fabric shared by every IA of it in the
 * process: listeners live in a process-wide table keyed by (device,
 * service id), so two IAs of the same device connect to each other.  An
 * "ibsim" EP cannot reach a "loop" listener (NO_LISTENER).
 *
 * Remote addresses given to rapt_ep_connect() decide what happens:
 *   127.0.0.0/8, ::1  the listener on that service id: none gives
 *                     NON_PEER_REJECTED/NO_LISTENER; otherwise the request
 *                     enters the PSP's handshake (rapt_prov_psp_hs_begin;
 *                     over the limit: NON_PEER_REJECTED/BUSY) and becomes
 *                     a CR (backlog full: NON_PEER_REJECTED/BUSY).
 *   127.0.0.2         a silent half-open client: counted in the PSP's
 *                     handshake but never sends its request.  When the
 *                     PSP's handshake timeout passes, the PSP counts a
 *                     handshake timeout and the requester gets TIMED_OUT.
 *                     If the PSP is freed first, the requester gets
 *                     UNREACHABLE.
 *   192.0.2.1         UNREACHABLE (as is any other address).
 *   198.51.100.1      no answer: TIMED_OUT when the connect timeout passes;
 *                     with RAPT_TIMEOUT_INFINITE never (disconnect cancels
 *                     it: DISCONNECTED).
 * A connect timeout also applies to a request whose CR is still undecided:
 * the requester gets TIMED_OUT and the CR is cancelled
 * (rapt_prov_cr_cancel: accept/reject then fail with RAPT_ENOTCONN).  A
 * requester that disconnects or is freed while its CR is undecided cancels
 * the CR the same way.  If the passive consumer accepts in the window before
 * the cancel reaches the core, the accepting EP gets ACCEPT_ERROR.
 *
 * Addresses in events: the active side is 127.0.0.1 (or ::1) with an
 * ephemeral port counting up from 49152; the passive side is the address
 * the requester dialled, with the service id as port.
 *
 * Connection establishment: cr_accept binds the two EPs; the active EP gets
 * ESTABLISHED with the accept private data, and only after the progress
 * thread has delivered it (the "RTR") does the passive EP get ESTABLISHED.
 * Negotiated read depths: active ORD = passive IRD = min(active ORD,
 * passive IRD); active IRD = passive ORD = min(active IRD, passive ORD).
 *
 * Data path (everything moves on the progress threads; each EP's events are
 * delivered in order by its own IA's thread):
 * - post_recv works in every state; on a disconnected EP the receive
 *   completes FLUSHED.  Send-side posts need the provider to see the EP
 *   connected: after the peer's disconnect has been queued (but before
 *   the consumer sees DISCONNECTED) they fail with RAPT_ESTATE, so that no
 *   FLUSHED completion ever follows DISCONNECTED/BROKEN.
 * - A full queue gives RAPT_ENOSPC synchronously.  A send-queue entry is
 *   outstanding until the progress thread has executed it, so only the
 *   receive queue can be filled deterministically.
 * - A send lands in the peer's first posted receive (lkey, bounds and
 *   LOCAL_WRITE checked).  No receive posted: the send completes
 *   REMOTE_OPERATION and the connection breaks.  A message longer than the
 *   receive: the receive completes LOCAL_LENGTH, the send REMOTE_OPERATION,
 *   and the connection breaks.  A bad receive SGE: LOCAL_PROTECTION on the
 *   receive, REMOTE_OPERATION on the send, broken.
 * - A bad local SGE (unknown lkey, another PZ or IA, out of bounds, missing
 *   LOCAL_WRITE where data lands) completes LOCAL_PROTECTION and breaks.
 * - RDMA write/read check the rkey, its validity, PZ, rights and bounds on
 *   the target; a violation touches no memory, completes REMOTE_ACCESS and
 *   breaks.  Zero-length RDMA checks no key.
 * - Send with invalidate: the peer's rkey becomes invalid; the receive
 *   completes with RAPT_DTO_INVALIDATED and the rkey.  An rkey the peer
 *   does not own: the send completes REMOTE_ACCESS, the receive
 *   LOCAL_PROTECTION, and the connection breaks.
 * - Inline sends are copied at post time (the lkey is not checked, as in
 *   verbs).  RAPT_POST_SUPPRESS hides successful completions only.
 * - A broken connection: the failing operation's completion, then every
 *   other outstanding send and receive FLUSHED, then BROKEN, on both sides.
 * - Graceful disconnect runs after the sends already posted; abrupt flushes
 *   them.  Either way both sides get their outstanding work FLUSHED and then
 *   DISCONNECTED; the peer's DISCONNECTED carries the disconnect private
 *   data ("loop" only).
 *
 * Locking: one process-wide mutex (tp.lock) guards every fixture object.
 * The core is never called with it held: progress threads pin the object
 * (calling count), drop the lock, call rapt_prov_*(), and retake it.  Ops
 * that end an object (ep_free, psp_free) wait for the count to drop, so
 * after they return the core object is never touched again.
 */
#ifndef RAPT_TESTS_TEST_PROV_H
#define RAPT_TESTS_TEST_PROV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <rapt/provider.h>

#define TP_NAME			"test"
#define TP_PDATA_MAX		256
#define TP_MAX_SGE		4
#define TP_MAX_INLINE		64
#define TP_MAX_DEPTH		1024
#define TP_MAX_READS		16
#define TP_MAX_MSG		(1u << 20)
#define TP_MAX_LMR		(1ull << 30)
#define TP_SID_MAX		65535
#define TP_EPHEMERAL_MIN	49152

#define tp_dbg(...) RAPT_PLOG(RAPT_LOG_DEBUG, TP_NAME, __VA_ARGS__)
#define tp_warn(...) RAPT_PLOG(RAPT_LOG_WARN, TP_NAME, __VA_ARGS__)

/* A device of the provider and the transport limits it reports. */
struct tp_dev {
	const char *name;
	uint32_t rank;
	uint64_t caps;
	uint16_t pdata_connect;
	uint16_t pdata_accept;
	uint16_t pdata_reject;
	uint16_t pdata_disconnect;
	uint32_t evd_merge[RAPT_EVD_NSTREAMS];
};

struct tp_item;
struct tp_ep;
struct tp_req;

/* An opened IA: one progress thread working through a FIFO. */
struct tp_ia {
	const struct tp_dev *dev;
	struct rapt_core_ia *cia;
	pthread_t thread;
	pthread_cond_t cond;			/* FIFO or timers changed */
	bool stop;
	TAILQ_HEAD(, tp_item) fifo;
	TAILQ_HEAD(, tp_ep) timed;	/* connecting EPs with a deadline */
	TAILQ_HEAD(, tp_req) halfopen;	/* silent requests on our PSPs */
	TAILQ_HEAD(, tp_req) reqs;		/* every request on our PSPs */
};

struct tp_pz {
	struct tp_ia *ia;
};

/* One key of an LMR in the process-wide key table. */
struct tp_key {
	struct tp_key *next;
	uint32_t key;
	struct tp_lmr *lmr;
};

struct tp_lmr {
	struct tp_ia *ia;
	struct tp_pz *pz;
	uintptr_t addr;
	uint64_t len;
	uint32_t access;
	bool rkey_valid;		/* false after a send with invalidate */
	struct tp_key lkey;
	struct tp_key rkey;
};

struct tp_evd {
	struct rapt_core_evd *cevd;
};

/* Send-queue marker of a graceful disconnect (not a RAPT_OP_*). */
#define TP_WR_DISC 0x100

/* A posted work request; @data holds inline bytes or disconnect pdata. */
struct tp_wr {
	TAILQ_ENTRY(tp_wr) link;
	uint32_t op;
	uint32_t flags;
	uint64_t cookie;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t inv_rkey;
	uint32_t nsge;
	uint32_t len;
	struct rapt_sge sgl[TP_MAX_SGE];
	uint8_t data[];
};

TAILQ_HEAD(tp_wrq, tp_wr);

enum tp_ep_state {
	TP_EP_IDLE,		/* unconnected */
	TP_EP_CONNECTING,	/* connect issued, no answer yet */
	TP_EP_ACCEPTING,	/* accepted; awaiting the active side's RTR */
	TP_EP_CONNECTED,
	TP_EP_CLOSING,		/* graceful disconnect queued behind sends */
	TP_EP_CLOSED,		/* final event queued */
};

struct tp_ep {
	struct tp_ia *ia;
	struct tp_pz *pz;
	struct rapt_core_ep *cep;
	struct rapt_ep *handle;
	struct tp_evd *recv_evd;
	struct tp_evd *req_evd;
	struct rapt_ep_attr attr;
	enum tp_ep_state state;
	unsigned int refs;		/* owner + queued items */
	unsigned int calling;		/* core calls in flight for it */
	bool dead;			/* ep_free ran: no more core calls */
	bool kicked;			/* a KICK item is queued */
	bool timed;			/* on ia->timed */
	struct tp_wrq sq;
	struct tp_wrq rq;
	uint32_t sq_n;
	uint32_t rq_n;
	struct tp_ep *peer;
	struct tp_req *req;		/* our request while connecting */
	TAILQ_ENTRY(tp_ep) tlink;
	int64_t deadline;		/* connect deadline, monotonic ns */
	uint64_t sid;
	uint32_t ird;			/* negotiated (or offered) depths */
	uint32_t ord;
	struct sockaddr_storage local;
	struct sockaddr_storage remote;
	size_t cpdata_len;
	uint8_t cpdata[TP_PDATA_MAX];	/* connect private data */
};

/* A listener (the provider side of a PSP). */
struct tp_lsn {
	TAILQ_ENTRY(tp_lsn) link;
	struct tp_ia *ia;
	struct rapt_core_psp *cpsp;
	uint64_t sid;
	uint32_t hs_limit;		/* the core's handshake limit */
	unsigned int refs;		/* owner + requests naming it */
	unsigned int calling;
	bool dead;
};

enum tp_req_state {
	TP_REQ_SENT,		/* travelling to the listener */
	TP_REQ_HALFOPEN,	/* silent client counted in the handshake */
	TP_REQ_ARRIVING,	/* inside rapt_prov_cr_arrive() */
	TP_REQ_PENDING,		/* a CR the consumer has not decided */
	TP_REQ_DECIDED,		/* accepted or rejected */
	TP_REQ_CANCELLED,	/* the core was told the requester left */
	TP_REQ_DONE,		/* refused before it became a CR */
};

/*
 * A connection request: the provider's CR object.  The fixture calls
 * rapt_prov_cr_cancel() outside tp.lock, so an op may have got a request
 * from rapt_prov_cr_request() just before its cancel: a cancelled request
 * keeps its "core" reference until its IA closes, and the op settles the
 * race on the state, under tp.lock.
 */
struct tp_req {
	TAILQ_ENTRY(tp_req) ia_link;
	TAILQ_ENTRY(tp_req) ho_link;
	struct tp_ia *ia;		/* the listener's IA */
	struct tp_lsn *lsn;		/* referenced */
	struct tp_ep *active;		/* the requester; NULL once it left */
	struct rapt_core_cr *ccr;
	enum tp_req_state state;
	unsigned int refs;
	bool silent;
	bool on_ho;
	int64_t ho_deadline;
	uint32_t ird;
	uint32_t ord;
	struct sockaddr_storage local;	/* as the listener sees them */
	struct sockaddr_storage remote;
	size_t pdata_len;
	uint8_t pdata[TP_PDATA_MAX];
};

enum tp_item_kind {
	TP_IT_DTO,		/* push a DTO completion */
	TP_IT_CONN,		/* report a connection event */
	TP_IT_KICK,		/* run an EP's send queue */
	TP_IT_CONNECT,		/* start an active connect */
	TP_IT_REQUEST,		/* a request reaches its listener */
	TP_IT_CANCEL,		/* tell the core a requester went away */
};

/* A unit of work for a progress thread; holds a reference on @ep/@req. */
struct tp_item {
	TAILQ_ENTRY(tp_item) link;
	enum tp_item_kind kind;
	bool rtr;		/* CONN: send the RTR once delivered */
	struct tp_ep *ep;
	struct tp_req *req;
	struct tp_evd *evd;
	struct rapt_event ev;
	struct rapt_prov_conn_event ce;
	uint8_t pdata[TP_PDATA_MAX];
};

/* Process-wide state, all under @lock. */
struct tp_global {
	pthread_mutex_t lock;
	pthread_cond_t idle;		/* a calling count dropped to 0 */
	TAILQ_HEAD(, tp_lsn) listeners;
	uint32_t key_seq;
	uint32_t eph_port;
	uint32_t sid_seq;
};

extern struct tp_global tp;
extern const struct tp_dev tp_devs[];
extern const unsigned int tp_ndevs;

/* test_prov_progress.c: FIFOs, items, the thread, references */
int64_t tp_now(void);
void *tp_xcalloc(size_t size);
struct tp_item *tp_item_new(enum tp_item_kind kind, struct tp_ep *ep,
			    struct tp_req *req);
void tp_queue(struct tp_ia *ia, struct tp_item *it);
void tp_ep_hold(struct tp_ep *ep);
void tp_ep_put(struct tp_ep *ep);
void tp_req_put(struct tp_req *req);
void tp_lsn_put(struct tp_lsn *l);
void tp_unpin(unsigned int *calling);
void tp_post_dto(struct tp_ep *ep, const struct tp_wr *wr, uint32_t status,
		 uint64_t len, uint32_t flags, uint32_t inv_rkey);
void tp_post_conn(struct tp_ep *ep, const struct rapt_prov_conn_event *ce,
		  bool rtr);
int tp_thread_start(struct tp_ia *ia);
void tp_thread_stop(struct tp_ia *ia);

/* test_prov_ia.c: keys */
struct tp_lmr *tp_key_find(uint32_t key);

/* test_prov_cm.c */
void tp_ep_end(struct tp_ep *ep, uint32_t type, uint32_t reason,
	       const void *pdata, size_t len, uint32_t consumer_reject);
void tp_pair_end(struct tp_ep *ep, uint32_t type, const void *pdata,
		 size_t len);
void tp_cm_connect(struct tp_ep *ep);
void tp_cm_request(struct tp_req *req);
void tp_cm_cancel(struct tp_req *req);
void tp_cm_rtr(struct tp_ep *ep);
int64_t tp_cm_timers(struct tp_ia *ia);
void tp_cm_drop_item(struct tp_item *it);
void tp_cm_ia_sweep(struct tp_ia *ia);

int tp_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
		 struct rapt_ep *handle, const struct rapt_ep_attr *attr,
		 void *recv_pevd, void *req_pevd, void *conn_pevd, void **pep);
int tp_ep_free(void *pep);
int tp_ep_modify(void *pep, const struct rapt_ep_attr *attr, uint32_t mask);
int tp_ep_connect(void *pep, const struct sockaddr *remote,
		  uint64_t service_id, const void *pdata, size_t pdata_len,
		  int64_t timeout_us);
int tp_ep_disconnect(void *pep, uint32_t flags, const void *pdata,
		     size_t pdata_len);
int tp_psp_create(void *pia, struct rapt_core_psp *cpsp, uint64_t service_id,
		  const struct rapt_psp_attr *attr, void *cr_pevd,
		  uint64_t *bound_id, void **ppsp);
int tp_psp_free(void *ppsp);
int tp_cr_accept(void *ppsp, struct rapt_core_cr *ccr, void *pep,
		 const void *pdata, size_t pdata_len);
int tp_cr_reject(void *ppsp, struct rapt_core_cr *ccr, const void *pdata,
		 size_t pdata_len);

/* test_prov_dto.c */
void tp_flush(struct tp_ep *ep);
void tp_kick(struct tp_ep *ep);
void tp_dto_run(struct tp_ep *ep);
struct tp_wr *tp_wr_new(uint32_t op, const struct rapt_sge *sgl,
			uint32_t nsge, uint64_t cookie, size_t extra);
int tp_post_recv(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		 uint64_t cookie);
int tp_post_send(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		 uint64_t cookie, uint32_t flags, uint32_t inv_rkey);
int tp_post_write(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		  uint64_t cookie, uint64_t raddr, uint32_t rkey,
		  uint32_t flags);
int tp_post_read(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		 uint64_t cookie, uint64_t raddr, uint32_t rkey,
		 uint32_t flags);

#endif /* RAPT_TESTS_TEST_PROV_H */
