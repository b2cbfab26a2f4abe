/* SPDX-License-Identifier: MIT */
/*
 * The verbs layer: what every rapt provider on rdma-core (libibverbs and
 * librdmacm) shares, written once.  A libtool convenience library; the
 * iwarp and ib providers link it.  Each provider DSO
 * gets its own hidden copy.
 *
 * A provider on this layer defines one symbol, vb_tp (struct
 * vb_transport): its name, the ibverbs transport it serves, its raw
 * private-data limits and the hooks where its connection setup differs
 * (iWARP: the RTR rapt sends itself, providers/iwarp/iwarp_rtr.c; IB:
 * RTR/RTS of the EP's own QP and the RTU, providers/ib/ib_rtr.c).
 *
 * Modules:
 *
 *   vb_dev.c    devices (ibv_get_device_list), IA open/close/query, the
 *               IA's address (found through rdma_bind_addr), async events
 *   vb_mem.c    PZ = ibv_pd, LMR = ibv_mr
 *   vb_cq.c     EVD = CQ + completion channel; completion dispatch and
 *               status mapping; the wait-object ops
 *   vb_qp.c     EP = QP from ep_create; the send and receive rings that
 *               name every work request; posts; teardown with flushes
 *   vb_rmr.c    RMR = an ibv_reg_mr() of the window's range, per bind
 *   vb_srq.c    SRQ = ibv_srq; the map of SRQ QPs that names the EP of
 *               an SRQ receive's completion
 *   vb_cm.c     rdma_cm: connect (the QP by number), listen, requests,
 *               accept/reject, disconnect, the IA's CM event channel
 *   vb_keepalive.c  the peer timeout: probes of an idle connection, and
 *               BROKEN when the peer stays silent
 *   vb_sockdiag.c   an iWARP connection's kernel TCP socket, asked about
 *               through sock_diag
 *   vb_prov.c   the ops table the providers hand the core
 *
 * Threads: each IA runs a progress engine (providers/util/engine.c) whose
 * epoll set holds the rdma_cm event channel and the device's async-event
 * fd: connection events reach the EVDs with no consumer calling in.  The
 * data path has no provider thread: CQs are polled by the consumer's own
 * calls (evd_progress, the wait ops), and a blocked consumer sleeps on the
 * completion channel.  rdma_connect() runs on helper threads
 * (vb_cm.c, "connector"), because kernel siw connects its TCP socket
 * synchronously inside it.
 *
 * Locking, in order: an EVD's poll lock (vb_evd.poll_lock) before an EP's
 * lock (vb_ep.lock); an EP's sq_lock and rq_lock are leaves taken only
 * around a post or to mark the EP dead.  The engine's run lock comes
 * before all of them: ops that touch rdma_cm ids run under
 * rapt_engine_call(), never with one of our locks held.
 */
#ifndef RAPT_PROVIDERS_VERBS_VERBS_H
#define RAPT_PROVIDERS_VERBS_VERBS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <rapt/provider.h>
#include <rapt/provider_util.h>

struct vb_ia;
struct vb_evd;
struct vb_ep;
struct vb_psp;
struct vb_req;

#define rapt_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define vb_likely(x)	__builtin_expect(!!(x), 1)
#define vb_unlikely(x)	__builtin_expect(!!(x), 0)

/* ------------------------------------------------------------------ */
/* The provider on top (defined once per provider DSO)                 */
/* ------------------------------------------------------------------ */

/**
 * struct vb_transport - what a provider on the verbs layer declares
 * @name: provider name ("iwarp"), also the log tag
 * @version: the provider's version (RAPT_VERSION_PACK)
 * @description: what rapt_info says the provider is
 * @kind: the transport in words ("iWARP"), for messages
 * @ibv_transport: the enum ibv_transport_type of its devices
 * @transport: enum rapt_transport of its IAs
 * @rank: rapt_ia_open(NULL) preference
 * @caps: RAPT_CAP_* bits the transport can offer (the device may trim)
 * @pdata_connect: raw private-data bytes the core may fill on connect
 *                 (what the wire carries minus what the hooks append)
 * @pdata_accept: the same on accept
 * @pdata_reject: the same on reject
 * @tcp_wire: connections are TCP connections of the kernel's (iWARP): a
 *            requester that leaves is found through sock_diag
 * @qp_reuse: a QP whose connection ended can carry the next one after
 *            RESET (IB); without it, rapt_ep_reset() makes a new QP
 *            (iWARP: siw takes a QP through RESET and INIT, but the next
 *            rdma_accept() of it fails)
 * @ia_open: look at a device just opened (its quirks: vb_ia's flags)
 * @ia_caps: the caps of an opened device (NULL: @caps)
 * @port_transport: the enum rapt_transport of a port (NULL: @transport)
 * @qp_init: move a new QP to the state where receives may be posted
 *           (vb_qp_to_init() with the transport's attributes)
 * @qp_connect: move the EP's QP to RTS for the connection of @id before
 *              the accept goes out (@active false) or once the reply is in
 *              (@active true, which then also completes the handshake);
 *              NULL where the kernel's CM moves the QP itself (iWARP)
 * @connect_pdata: append the provider's bytes to framed connect private
 *                 data (@len bytes in @buf, room for 255); new length
 * @request: look at a request (foreign ones too): the read depths as the
 *           transport's CM reports them, the private data (peer_rtr)
 * @accept_pdata: append to the accept private data; new length
 * @active_up: the active side's connection is up (before ESTABLISHED is
 *             reported): act on the reply's private data (send the RTR)
 *             and say how many of its bytes are the consumer's framing
 * @passive_up: may the accepting EP report ESTABLISHED now; @ev is a
 *              completion of the EP held back meanwhile, or NULL when the
 *              CM says the connection is up (or a timer asks)
 * @reject: what a REJECTED of rdma_cm with @status means: whether the
 *          peer's consumer rejected (else @reason is the CM's); NULL: one
 *          with private data is the consumer's (iWARP cannot tell)
 * @qp_event: an async event of the EP's QP the layer does not handle
 *            (IB: COMM_EST), on the engine's runner
 * @device_note: a line rapt_info shows for a usable device (@addr: the
 *               address rdma_cm uses for it), or ""
 */
struct vb_transport {
	const char *name;
	uint32_t version;
	const char *description;
	const char *kind;
	int ibv_transport;
	uint32_t transport;
	uint32_t rank;
	uint64_t caps;
	uint16_t pdata_connect;
	uint16_t pdata_accept;
	uint16_t pdata_reject;
	bool tcp_wire;
	bool qp_reuse;
	/* A disconnect from the peer while the accepting EP waits for the
	 * connection to come up proves that the peer had it up (IB: a DREQ
	 * comes only from ESTABLISHED, after the peer's RTU, which may be
	 * lost or behind): ESTABLISHED, then DISCONNECTED. */
	bool disc_proves_up;
	/* Only the device moves the EP's QP to the error state while the
	 * connection lives (IB: rapt moves its QP itself, the CM never
	 * does): a QP found there when the peer disconnects had an error
	 * of its own, as a responder that refused an access (rxe raises
	 * no async event for it), and the end is BROKEN. */
	bool qp_err_is_error;
	void (*ia_open)(struct vb_ia *ia);
	uint64_t (*ia_caps)(const struct vb_ia *ia);
	uint32_t (*port_transport)(const struct ibv_port_attr *pa);
	int (*qp_init)(struct vb_ep *ep);
	int (*qp_connect)(struct vb_ep *ep, struct rdma_cm_id *id,
			  bool active);
	size_t (*connect_pdata)(struct vb_ep *ep, uint8_t *buf, size_t len);
	void (*request)(struct vb_req *req);
	size_t (*accept_pdata)(struct vb_ep *ep, const struct vb_req *req,
			       uint8_t *buf, size_t len);
	void (*active_up)(struct vb_ep *ep, const uint8_t *pdata,
			  size_t *len);
	bool (*passive_up)(struct vb_ep *ep, const struct rapt_event *ev);
	bool (*reject)(int status, uint32_t *reason);
	void (*qp_event)(struct vb_ep *ep, enum ibv_event_type type);
	void (*device_note)(const char *dev, const struct sockaddr *addr,
			    char *buf, size_t len);
};

/* The provider's descriptor; every DSO on this layer defines it. */
extern const struct vb_transport *const vb_tp;

/* The ops of every provider on the layer (vb_prov.c), whose entry
 * symbol, rapt_provider_entry, the layer defines too. */
extern const struct rapt_prov_ops vb_prov_ops;

#define vb_log(level, ...) RAPT_PLOG((level), vb_tp->name, __VA_ARGS__)
#define vb_err(...)  vb_log(RAPT_LOG_ERROR, __VA_ARGS__)
#define vb_warn(...) vb_log(RAPT_LOG_WARN, __VA_ARGS__)
#define vb_info(...) vb_log(RAPT_LOG_INFO, __VA_ARGS__)
#define vb_dbg(...)  vb_log(RAPT_LOG_DEBUG, __VA_ARGS__)

/* How rarely the engine thread looks while consumers poll (ms). */
#define VB_ENGINE_ASIDE_MAX_MS 16

/* Largest private-data field rdma_cm carries (private_data_len is u8). */
#define VB_PDATA_MAX 255

/* Service ids are TCP ports (rdma_cm RDMA_PS_TCP). */
#define VB_SERVICE_MIN 1
#define VB_SERVICE_MAX 65535

/* ------------------------------------------------------------------ */
/* IA (vb_dev.c)                                                       */
/* ------------------------------------------------------------------ */

/* The EP table: a work request's wr_id names its EP by slot and
 * generation, so a completion that outlives its EP is dropped. */
#define VB_SLOT_CHUNK_BITS	10
#define VB_SLOT_CHUNK		(1u << VB_SLOT_CHUNK_BITS)
#define VB_SLOT_BITS		20
#define VB_SLOT_CHUNKS		(1u << (VB_SLOT_BITS - VB_SLOT_CHUNK_BITS))

struct vb_slot {
	struct vb_ep *_Atomic ep;
	_Atomic uint32_t gen;
	uint32_t next_free;
};

/* Helper threads that run rdma_connect() (vb_cm.c). */
struct vb_connector {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct vb_ep *head, *tail;	/* queued connects */
	uint32_t threads;		/* alive */
	uint32_t idle;			/* waiting for work */
	uint32_t eps;			/* EPs of the IA, that might connect */
	bool stop;
	pthread_cond_t gone;		/* threads reached 0 */
};

/* SRQs of an IA: a receive's wr_id names one by index and generation. */
#define VB_SRQ_MAX		1024u
#define VB_SRQ_GEN_MASK		0xfffu
#define VB_SRQ_ENT_BITS		20
#define VB_SRQ_ENT_MAX		(1u << VB_SRQ_ENT_BITS)

struct vb_srq_slot {
	struct vb_srq *_Atomic srq;
	uint32_t gen;
};

/* The EPs on an SRQ by their QP's number (open addressing). */
struct vb_qpmap_ent {
	uint32_t qpn;
	struct vb_ep *ep;
};

struct vb_qpmap {
	pthread_rwlock_t lock;
	struct vb_qpmap_ent *t;
	uint32_t cap, n;
};

struct vb_ia {
	struct rapt_core_ia *cia;
	char dev[64];
	uint8_t port;
	struct ibv_context *ctx;
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	uint32_t max_inline;
	struct sockaddr_storage addr;	/* the device's IP address */
	unsigned int ifindex;		/* of its network interface */
	bool tcp_diag;			/* vb_tcp_state() can be believed */
	/* The device's connections are not the kernel's TCP sockets (an
	 * offloading RNIC): no peer timeout from here on (vb_keepalive.c) */
	_Atomic bool ka_blind;
	int diag_fd;			/* vb_sockdiag.c, asked on the runner;
					 * -1 without tcp_diag */
	/* The device completes a receive too short for its message with
	 * LOC_QP_OP_ERR (a "malformed WQE": rxe), not LOC_LEN_ERR. */
	bool recv_short_op_err;
	/* A post may reach a cancellation point (the driver library writes
	 * to the kernel: rxe, siw): posts hold cancellation off. */
	bool post_nocancel;
	struct rdma_event_channel *cmch;
	struct rapt_engine *eng;
	struct rapt_io cm_io;
	struct rapt_io async_io;
	/* Completions of EPs without a receive or request EVD. */
	struct vb_evd *null_evd;
	pthread_mutex_t lock;		/* the EP table */
	struct vb_slot *_Atomic chunks[VB_SLOT_CHUNKS];
	uint32_t nslots;		/* slots handed out so far */
	uint32_t free_slot;		/* free list head + 1 (0: empty) */
	struct vb_connector conn;
	/* Requests handed to the core and not decided (the engine's): */
	struct rapt_list reqs;
	struct rapt_timer req_timer;	/* looks for departed requesters */
	struct vb_srq_slot srqs[VB_SRQ_MAX];	/* under lock */
	struct vb_qpmap qpmap;
};

/*
 * Around a post: cancellation held off where the device's post may reach
 * the kernel (ia->post_nocancel), since a consumer thread cancelled inside
 * would leave the queue's lock held (rapt(7), THREADING).  Return: what
 * vb_post_unguard() restores, or -1 for nothing.
 */
static inline int vb_post_guard(const struct vb_ia *ia)
{
	return vb_unlikely(ia->post_nocancel) ? rapt_nocancel_begin() : -1;
}

static inline void vb_post_unguard(int nc)
{
	if (vb_unlikely(nc >= 0))
		rapt_nocancel_end(nc);
}

/* Open a device the way vb_dev.c and the probes need. */
int vb_ia_slot_get(struct vb_ia *ia, struct vb_ep *ep);
void vb_ia_slot_put(struct vb_ia *ia, struct vb_ep *ep);

static inline struct vb_ep *vb_slot_ep(struct vb_ia *ia, uint32_t idx,
				       uint32_t gen)
{
	struct vb_slot *c = atomic_load_explicit(
		&ia->chunks[(idx >> VB_SLOT_CHUNK_BITS) & (VB_SLOT_CHUNKS - 1)],
		memory_order_acquire);
	struct vb_slot *s;

	if (!c)
		return NULL;
	s = &c[idx & (VB_SLOT_CHUNK - 1)];
	if (atomic_load_explicit(&s->gen, memory_order_acquire) != gen)
		return NULL;
	return atomic_load_explicit(&s->ep, memory_order_acquire);
}

/* ops (vb_dev.c) */
int vb_get_devices(void *prov, struct rapt_prov_device **devs,
		   uint32_t *ndevs);
int vb_ia_open(void *prov, const char *device, uint32_t port,
	       struct rapt_core_ia *cia, void **pia);
int vb_ia_close(void *pia);
int vb_ia_query(void *pia, struct rapt_ia_attr *attr);
/* Handle the device's pending async events (the engine's runner). */
void vb_async_poll(struct vb_ia *ia);

/* provider init: whether any device of the transport exists */
int vb_init(void **prov);
void vb_fini(void *prov);

/* ------------------------------------------------------------------ */
/* PZ, LMR (vb_mem.c)                                                  */
/* ------------------------------------------------------------------ */

struct vb_pz {
	struct vb_ia *ia;
	struct ibv_pd *pd;
};

struct vb_lmr {
	struct ibv_mr *mr;
	atomic_uint nbound;		/* windows bound over it */
};

int vb_pz_create(void *pia, void **ppz);
int vb_pz_free(void *ppz);
int vb_small_mr(struct vb_pz *pz, size_t bytes, int access,
		const char *what, void **buf, struct ibv_mr **mr);
/* ibv_reg_mr()'s flags for rapt rights @access */
int vb_access_flags(uint32_t access);
int vb_lmr_create(void *pia, void *ppz, void *addr, size_t length,
		  uint32_t access, struct rapt_lmr_info *info, void **plmr);
int vb_lmr_free(void *plmr);

/* ------------------------------------------------------------------ */
/* EVD (vb_cq.c)                                                       */
/* ------------------------------------------------------------------ */

struct vb_evd {
	struct vb_ia *ia;
	struct rapt_core_evd *cevd;	/* NULL for the IA's null EVD */
	uint32_t streams;
	struct ibv_comp_channel *ch;	/* with a CQ */
	struct ibv_cq *cq;		/* for EVDs with the DTO stream */
	uint32_t cqe;
	struct rapt_lock poll_lock;	/* poll + dispatch, in CQ order */
	int epfd;			/* CQ channel + engine, or -1 */
	_Atomic bool fd_armed;		/* trywait(RAPT_PROV_WAIT_FD) */
	_Atomic bool sleeping;		/* a consumer's blocking wait owns
					 * the channel's events */
	atomic_uint tick;
	atomic_uint lease_tick;		/* consumer polls, counted */
	uint32_t engine_tick;		/* lease_tick when the engine looked */
	uint64_t engine_taken;		/* rapt_prov_evd_taken() then */
	_Atomic bool parked;		/* the engine ignores the channel while
					 * a consumer takes the CQ (written by
					 * the engine) */
	_Atomic bool park_asked;	/* a consumer asked for the park */
	struct rapt_timer cq_timer;	/* is the polling consumer gone? */
	uint64_t recheck_ns;		/* the timer's next look (engine) */
	uint64_t grace_ns;		/* ... while nobody polls (engine) */
	/* The engine watches the channel (a duplicate of its fd) when no
	 * consumer does: completions reach the EVD with nobody calling in. */
	struct rapt_io io;
	struct rapt_retire retire;
};

/* The streams whose events the engine thread pushes (the core pushes
 * software events itself, and wakes a waiter for them). */
#define VB_EVD_CM_STREAMS (RAPT_EVD_CONNECTION | RAPT_EVD_CR | \
			   RAPT_EVD_ASYNC)

int vb_evd_create(void *pia, struct rapt_core_evd *cevd, uint32_t qlen,
		  uint32_t streams, void **pevd);
int vb_evd_free(void *pevd);
int vb_evd_progress(void *pevd);
int vb_evd_wait_fd(void *pevd, int *fd);
int vb_evd_trywait(void *pevd, uint32_t how);
int vb_evd_wait_done(void *pevd);

/* The IA's null EVD (a CQ nobody waits on). */
int vb_evd_null_create(struct vb_ia *ia);
void vb_evd_null_free(struct vb_ia *ia);

/* Poll @evd's CQ and dispatch what it had; the number of completions. */
int vb_cq_poll(struct vb_evd *evd);

/* enum ibv_wc_status -> enum rapt_dto_status */
uint32_t vb_wc_status(int status);
const char *vb_wc_status_str(int status);

/* ------------------------------------------------------------------ */
/* RMR (vb_rmr.c)                                                      */
/* ------------------------------------------------------------------ */

int vb_rmr_create(void *pia, void *ppz, void **prmr);
int vb_rmr_free(void *prmr);
int vb_rmr_bind(void *pep, void *prmr, void *plmr, uint64_t addr,
		uint64_t length, uint32_t access, uint64_t cookie,
		uint32_t flags, uint32_t *rkey);
int vb_rmr_query(void *prmr, uint32_t *rkey);

/* ------------------------------------------------------------------ */
/* SRQ (vb_srq.c)                                                      */
/* ------------------------------------------------------------------ */

struct vb_srq {
	struct vb_ia *ia;
	struct vb_pz *pz;
	struct rapt_srq *handle;
	struct ibv_srq *srq;
	uint32_t index, gen;		/* in ia->srqs */
	pthread_mutex_t lock;
	uint64_t *cookie;		/* per table entry */
	uint32_t *free;			/* stack of free entries */
	uint32_t nfree;
	uint32_t hw;			/* entries: what the device holds */
	uint32_t max;			/* rapt's depth (max_recv) */
	uint32_t max_sge;
	uint32_t posted;		/* posted, completion not yet polled */
	uint32_t lw;			/* low watermark, 0: none */
	bool lw_armed;			/* the watermark's event may fire */
	void *zero;			/* a zero-length receive's SGE */
	struct ibv_mr *zero_mr;
};

int vb_srq_create(void *pia, void *ppz, struct rapt_srq *handle,
		  const struct rapt_srq_attr *attr, void **psrq);
int vb_srq_free(void *psrq);
int vb_srq_post_recv(void *psrq, const struct rapt_sge *sgl, uint32_t nsge,
		     uint64_t cookie);
int vb_srq_query(void *psrq, uint32_t *posted);
int vb_srq_resize(void *psrq, uint32_t max_recv, uint32_t low_watermark);
int vb_ep_set_srq(void *pep, void *psrq);

/* An SRQ receive's completion: its cookie and its EP (or NULL). */
struct vb_ep *vb_srq_complete(struct vb_ia *ia, const struct ibv_wc *wc,
			      uint64_t *cookie);

void vb_qpmap_init(struct vb_ia *ia);
void vb_qpmap_fini(struct vb_ia *ia);
int vb_qpmap_add(struct vb_ia *ia, struct vb_ep *ep);
void vb_qpmap_del(struct vb_ia *ia, uint32_t qpn);
void vb_qpmap_swap(struct vb_ia *ia, uint32_t old_qpn, struct vb_ep *ep);

/* ------------------------------------------------------------------ */
/* EP (vb_qp.c)                                                        */
/* ------------------------------------------------------------------ */

/* What an rdma_cm id's context names (the first member of each). */
enum vb_cm_kind {
	VB_CM_EP = 1,
	VB_CM_PSP,
	VB_CM_REQ,
};

/* wr_id: bits 0-19 EP slot, 20-30 slot generation, 31 receive, 32-63
 * the work request's sequence number in its ring. */
#define VB_WRID_SLOT(w)		((uint32_t)(w) & ((1u << VB_SLOT_BITS) - 1))
#define VB_WRID_GEN(w)		(((uint32_t)(w) >> VB_SLOT_BITS) & 0x7ff)
#define VB_WRID_RECV		(1ull << 31)
/* An SRQ's receive (vb_srq.c): slot VB_SLOT_SRQ, bits 20-30 the SRQ's
 * index, 32-63 its generation and the entry. */
#define VB_SLOT_SRQ		((1u << VB_SLOT_BITS) - 1)
#define VB_WRID_SEQ(w)		((uint32_t)((w) >> 32))
#define VB_GEN_MASK		0x7ffu

/* A send-ring entry: one ibv_send_wr. */
struct vb_swr {
	uint64_t cookie;
	uint64_t length;	/* bytes; for the last part of a split read,
				 * the whole read */
	uint8_t op;		/* enum rapt_dto_op */
	uint8_t flags;		/* VB_SWR_* */
	uint8_t wc_status;	/* enum ibv_wc_status, once VB_SWR_DONE */
};

#define VB_SWR_QUIET	(1u << 0)	/* RAPT_POST_SUPPRESS */
#define VB_SWR_INTERNAL	(1u << 1)	/* the provider's own (RTR) */
#define VB_SWR_PART	(1u << 2)	/* a split read, not its last part */
#define VB_SWR_DONE	(1u << 3)	/* completed, waiting for an older
					 * entry to complete (post order) */
#define VB_SWR_UNSIG	(1u << 4)	/* posted unsignalled: done once a
					 * later entry's completion is in */

enum vb_ep_state {
	VB_EP_IDLE = 0,		/* not connected yet */
	VB_EP_CONNECTING,	/* active: resolving, connecting */
	VB_EP_ACCEPTING,	/* passive: accepted, not yet up */
	VB_EP_UP,		/* ESTABLISHED reported */
	VB_EP_CLOSING,		/* a graceful disconnect waits for its sends
				 * or for the CM's DISCONNECTED */
	VB_EP_DOWN,		/* the final event is out (or ep_free) */
};

/* What the EP's timer is doing. */
enum vb_timer_kind {
	VB_TMR_NONE = 0,
	VB_TMR_CONNECT,		/* the connect timeout */
	VB_TMR_RTR,		/* polling for the peer's RTR */
	VB_TMR_DRAIN,		/* graceful: waiting for the sends */
};

/* A completion held back until ESTABLISHED is out (vb_qp.c). */
struct vb_held {
	struct rapt_core_evd *cevd;
	struct rapt_event ev;
};

struct vb_ep {
	enum vb_cm_kind kind;		/* VB_CM_EP; must stay first */
	struct vb_ia *ia;
	struct rapt_core_ep *cep;
	struct rapt_ep *handle;
	struct vb_evd *recv_evd;	/* the IA's null EVD if none */
	struct vb_evd *req_evd;		/* the IA's null EVD if none */
	struct vb_evd *conn_evd;
	struct vb_pz *pz;
	struct vb_srq *srq;		/* its receives' SRQ, or NULL */
	struct ibv_qp *qp;
	/* A small registered buffer of the EP's own: [0] the word a peer's
	 * RTR writes, [1] what our RTR writes. */
	uint64_t *ctl;
	struct ibv_mr *ctl_mr;
	uint32_t slot, gen;
	struct rapt_ep_attr attr;

	/* Send ring: sq_head..sq_tail are posted and not completed. */
	struct rapt_lock sq_lock;
	struct vb_swr *sq;
	uint32_t sq_mask;
	uint32_t sq_max;		/* operations the consumer may have
					 * outstanding (max_send) */
	uint32_t sq_cap;		/* entries the QP holds: a split read
					 * takes several, the RTR one */
	_Atomic uint32_t sq_extra;	/* entries outstanding that are not
					 * an operation of the consumer's
					 * (VB_SWR_PART, VB_SWR_INTERNAL) */
	uint32_t sq_head, sq_tail;
	uint32_t sq_unsig;		/* unsignalled entries at the tail,
					 * since the last signalled one */
	uint32_t sq_skip;		/* swallow parts of a failed read up to
					 * this sequence (sq_skipping) */
	bool sq_skipping;
	/* Receive ring: the cookies, in posting order. */
	struct rapt_lock rq_lock;
	uint64_t *rq;
	uint32_t rq_mask;
	uint32_t rq_max;
	uint32_t rq_head, rq_tail;
	bool dead;			/* under both: no more posts to the QP */

	/* Connection (under lock; the CM side runs on the engine). */
	pthread_mutex_t lock;
	enum vb_ep_state state;
	_Atomic bool direct;		/* completions go straight to EVDs */
	bool teardown;			/* flushing has begun */
	bool freeing;			/* ep_free: no more events */
	bool broken;			/* a fatal error: BROKEN, not
					 * DISCONNECTED */
	bool kernel_up;			/* rdma_cm said ESTABLISHED */
	bool in_connector;		/* rdma_connect() is running */
	bool hangup_later;		/* vb_cm_hangup() when it returns */
	uint8_t connect_tries;		/* ids whose local port was taken */
	int connect_err;		/* what rdma_connect() returned */
	pthread_cond_t conn_cv;		/* signalled when it returns */
	bool disc_graceful;		/* a graceful disconnect was asked */
	struct vb_held *held;
	uint32_t nheld, held_cap;
	struct rdma_cm_id *id;
	struct rapt_timer timer;
	enum vb_timer_kind timer_kind;
	uint64_t timer_start_ns;
	uint64_t timer_step_ns;
	int64_t timeout_us;		/* connect timeout */
	uint8_t pdata[VB_PDATA_MAX];	/* connect private data to send */
	uint8_t pdata_len;
	struct sockaddr_storage remote;
	/* Negotiated on the way up. */
	uint32_t ird, ord;
	/* The transport's connection state (iWARP: the RTR). */
	uint8_t peer_rtr;		/* enum set by the transport hooks */
	/* The peer timeout (vb_keepalive.c; under lock, the timer's fields
	 * on the engine's runner). */
	uint32_t ka_ms;			/* the bound; 0 until one is set */
	struct rapt_timer ka_timer;
	uint64_t ka_heard_ns;		/* when the peer last gave a sign */
	uint32_t ka_rq, ka_sq;		/* the rings' heads at the last look */
	uint32_t ka_probe;		/* sq_tail after the probe went */
	uint64_t ka_asked_ns;		/* the first probe after the last sign */
	bool ka_probing;		/* a probe is outstanding */
	uint8_t ka_unseen;		/* looks that found no TCP socket */
	bool ka_sock_seen;		/* one did find it */
	struct vb_ep *conn_next;	/* the connector's queue */
};

int vb_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
		 struct rapt_ep *handle, const struct rapt_ep_attr *attr,
		 void *recv_pevd, void *req_pevd, void *conn_pevd,
		 void **pep);
int vb_ep_free(void *pep);
int vb_ep_modify(void *pep, const struct rapt_ep_attr *attr, uint32_t mask);
int vb_ep_reset(void *pep);
int vb_ep_get_status(void *pep, uint32_t *recv, uint32_t *req);
int vb_post_recv(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		 uint64_t cookie);
int vb_post_send(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		 uint64_t cookie, uint32_t flags, uint32_t inv_rkey);
int vb_post_write(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		  uint64_t cookie, uint64_t raddr, uint32_t rkey,
		  uint32_t flags);
int vb_post_read(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		 uint64_t cookie, uint64_t raddr, uint32_t rkey,
		 uint32_t flags);

/* Dispatch one completion (an EVD's poll lock held). */
void vb_ep_complete(struct vb_ia *ia, const struct ibv_wc *wc);

/*
 * Post the provider's own RDMA write of @len bytes of ep->ctl[1]
 * (inline) to @raddr/@rkey, before any consumer work: the RTR.
 */
int vb_ep_post_internal_write(struct vb_ep *ep, uint64_t raddr,
			      uint32_t rkey, uint32_t len);

/*
 * Move a new QP to INIT with the access rights every rapt QP has, plus
 * the transport's @qa fields named by @mask (IB: the port and P_Key).
 */
int vb_qp_to_init(struct vb_ep *ep, struct ibv_qp_attr *qa, int mask);

/* A new QP for @ep with @a's sizes (on ep->srq if set), in INIT; on
 * success ep->qp is it and the old one is the caller's. */
int vb_qp_create(struct vb_ep *ep, const struct rapt_ep_attr *a);

/**
 * vb_recv_wr - fill a receive work request (wr_id aside)
 * @wr: the request
 * @sgl: its SGEs, rapt's laid out as verbs' (@nsge of them)
 * @nsge: may be 0
 * @zero: room for the SGE of a receive without SGEs, which some drivers
 *        (siw) refuse: one of length 0 at @buf, registered as @mr
 * @buf: registered memory
 * @mr: its registration
 *
 * Inline: it is on every receive post.
 */
static inline void vb_recv_wr(struct ibv_recv_wr *wr,
			      const struct rapt_sge *sgl, uint32_t nsge,
			      struct ibv_sge *zero, void *buf,
			      const struct ibv_mr *mr)
{
	wr->next = NULL;
	wr->sg_list = (struct ibv_sge *)sgl;
	wr->num_sge = (int)nsge;
	if (!nsge) {
		zero->addr = (uintptr_t)buf;
		zero->length = 0;
		zero->lkey = mr->lkey;
		wr->sg_list = zero;
		wr->num_sge = 1;
	}
}

int vb_ep_post_done(struct vb_ep *ep, uint8_t op, uint64_t cookie,
		    uint32_t flags);

/* Report ESTABLISHED (ep->lock held) and release what it held back. */
void vb_ep_report_up(struct vb_ep *ep, const void *pdata, size_t len);

/*
 * End the connection: no more posts, the QP to ERROR, every outstanding
 * work request completed (FLUSHED), then the final event @ce (none if NULL
 * or the EP is being freed).  Engine runner only.
 */
void vb_ep_shutdown(struct vb_ep *ep, const struct rapt_prov_conn_event *ce);

/* End a connection that broke: vb_ep_shutdown() with BROKEN and
 * @prov_status, then vb_cm_hangup().  Engine runner only. */
void vb_ep_break(struct vb_ep *ep, int32_t prov_status);

/* Free what an EP holds once its rdma_cm id is gone. */
void vb_ep_destroy(struct vb_ep *ep);

/* The ep_set_peer_timeout op, and the probes' start and end
 * (vb_keepalive.c): start when ESTABLISHED goes out (ep->lock held),
 * stop at teardown and reset. */
int vb_ep_set_peer_timeout(void *pep, uint32_t timeout_ms);
void vb_ka_init(struct vb_ep *ep);
void vb_ka_start(struct vb_ep *ep);
void vb_ka_stop(struct vb_ep *ep);

/* Whether the send ring is empty (graceful disconnect). */
int vb_ep_sends_mark(struct vb_ep *ep);
bool vb_ep_sends_done(struct vb_ep *ep);

/* ------------------------------------------------------------------ */
/* rdma_cm (vb_cm.c)                                                   */
/* ------------------------------------------------------------------ */

struct vb_psp {
	enum vb_cm_kind kind;		/* VB_CM_PSP; must stay first */
	struct vb_ia *ia;
	struct rapt_core_psp *cpsp;
	struct rdma_cm_id *id;
};

struct vb_req {
	enum vb_cm_kind kind;		/* VB_CM_REQ; must stay first */
	struct vb_ia *ia;
	struct vb_psp *psp;
	struct rapt_core_cr *ccr;
	struct rdma_cm_id *id;
	bool foreign;			/* no rapt header */
	uint8_t peer_rtr;		/* set by the transport's request hook */
	uint8_t pdata[VB_PDATA_MAX];
	uint8_t pdata_len;
	uint32_t ird, ord;		/* the requester's offer */
	struct rapt_list node;		/* ia->reqs */
	struct sockaddr_storage local, remote;	/* its TCP 4-tuple */
	uint64_t arrived_ns;		/* rapt_now_ns() at its arrival */
};

/*
 * The TCP state of @local <-> @remote (vb_sockdiag.c): TCP_ESTABLISHED,
 * TCP_CLOSE_WAIT..., -1 when there is no such connection, -2 when the
 * kernel cannot say.
 */
int vb_tcp_diag_open(void);
int vb_tcp_state(int fd, const struct sockaddr *local,
		 const struct sockaddr *remote, unsigned int ifindex);
bool vb_tcp_diag_works(int diag);
int vb_tcp_heard(int fd, const struct sockaddr *local,
		 const struct sockaddr *remote, unsigned int ifindex,
		 uint32_t *ms);

int vb_cm_start(struct vb_ia *ia);
void vb_cm_stop(struct vb_ia *ia);

int vb_ep_connect(void *pep, const struct sockaddr *remote,
		  uint64_t service_id, const void *pdata, size_t pdata_len,
		  int64_t timeout_us);
int vb_ep_disconnect(void *pep, uint32_t flags, const void *pdata,
		     size_t pdata_len);
int vb_psp_create(void *pia, struct rapt_core_psp *cpsp,
		  uint64_t service_id, const struct rapt_psp_attr *attr,
		  void *cr_pevd, uint64_t *bound_id, void **ppsp);
int vb_psp_free(void *ppsp);
int vb_cr_accept(void *ppsp, struct rapt_core_cr *ccr, void *pep,
		 const void *pdata, size_t pdata_len);
int vb_cr_reject(void *ppsp, struct rapt_core_cr *ccr, const void *pdata,
		 size_t pdata_len);

/* After a teardown: tell the peer (rdma_disconnect), runner only. */
void vb_cm_hangup(struct vb_ep *ep);

/* ep_free's part in vb_cm.c: wait for the connector, destroy the id
 * (outside the engine: a connecting iWARP id waits for its reply). */
void vb_cm_ep_release(struct vb_ep *ep);
void vb_cm_ep_added(struct vb_ia *ia);
void vb_cm_ep_removed(struct vb_ia *ia);

/* Arm (kind != VB_TMR_NONE) or cancel the EP's timer. */
void vb_ep_timer(struct vb_ep *ep, enum vb_timer_kind kind,
		 uint64_t delay_ns);
void vb_ep_timer_fire(struct rapt_timer *t);

#endif /* RAPT_PROVIDERS_VERBS_VERBS_H */
