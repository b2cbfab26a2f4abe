/* SPDX-License-Identifier: MIT */
/*
 * librapt private declarations.  Nothing here is installed.
 */
#ifndef RAPT_CORE_RAPT_INT_H
#define RAPT_CORE_RAPT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rapt/rapt.h>
#include <rapt/provider.h>
#include <rapt/provider_util.h>

#define RAPT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define RAPT_MIN(a, b) ((a) < (b) ? (a) : (b))

#ifdef RAPT_DEBUG
#define RAPT_DEBUG_BUILD 1
#else
#define RAPT_DEBUG_BUILD 0
#endif

#define rapt_likely(x)   __builtin_expect(!!(x), 1)
#define rapt_unlikely(x) __builtin_expect(!!(x), 0)

/* ------------------------------------------------------------------ */
/* Errors and logging (errno.c, log.c)                                 */
/* ------------------------------------------------------------------ */

/* Record the per-thread detail string and return @status unchanged. */
int rapt__fail(int status, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The RAPT_E* code of a failed system call's errno (core/errno_map.h's
 * table, as providers have it); an errno outside it is RAPT_EIO. */
int rapt__errno_status(int err);

#define rapt_log(level, ...) RAPT_PLOG((level), "core", __VA_ARGS__)
#define rapt_err(...)  rapt_log(RAPT_LOG_ERROR, __VA_ARGS__)
#define rapt_warn(...) rapt_log(RAPT_LOG_WARN, __VA_ARGS__)
#define rapt_info(...) rapt_log(RAPT_LOG_INFO, __VA_ARGS__)
#define rapt_dbg(...)  rapt_log(RAPT_LOG_DEBUG, __VA_ARGS__)

/* ------------------------------------------------------------------ */
/* Objects and handles (handle.c)                                      */
/* ------------------------------------------------------------------ */

/* Object classes; the numbers are enum rapt_handle_type's. */
enum rapt_cls {
	RAPT_CLS_IA = RAPT_HANDLE_IA,
	RAPT_CLS_PZ = RAPT_HANDLE_PZ,
	RAPT_CLS_LMR = RAPT_HANDLE_LMR,
	RAPT_CLS_EVD = RAPT_HANDLE_EVD,
	RAPT_CLS_EP = RAPT_HANDLE_EP,
	RAPT_CLS_PSP = RAPT_HANDLE_PSP,
	RAPT_CLS_CR = RAPT_HANDLE_CR,
	RAPT_CLS_RSP = RAPT_HANDLE_RSP,
	RAPT_CLS_SRQ = RAPT_HANDLE_SRQ,
	RAPT_CLS_RMR = RAPT_HANDLE_RMR,
	RAPT_CLS_MAX,
};

struct rapt_core_ia;

/*
 * The header every core object starts with (must stay the first member).
 * What keeps it from being freed (its users) is counted in its slot of the
 * handle table (handle.c), so that a count can be taken safely even while
 * another thread frees the object.
 */
struct rapt_obj {
	uint64_t handle;
	uint32_t cls;
	struct rapt_obj *parent;
	struct rapt_core_ia *ia;
	void *context;
	void *prov;		/* the provider's object */
};

/*
 * Handle values: bits 0-23 slot index, 24-31 class, 32-63 generation.
 * The generation changes every time a slot is reused, so a stale handle
 * never names a live object.
 */
#define RAPT_HANDLE_IDX_BITS 24
#define RAPT_HANDLE_IDX_MASK ((1u << RAPT_HANDLE_IDX_BITS) - 1)
#define RAPT_HANDLE_CLS(h) ((uint32_t)(((h) >> RAPT_HANDLE_IDX_BITS) & 0xff))

/*
 * Object life (handle.c explains the scheme).  A create: take the parent
 * with rapt__obj_get(), rapt__obj_reserve() the child, run the provider
 * op, rapt__obj_publish().  A free: rapt__obj_kill(), the provider op,
 * then rapt__obj_unregister() (or rapt__obj_revive() if the op failed).
 */

/*
 * Give @o a slot and a handle value that no lookup matches yet.  @parent
 * (may be NULL) must be held by the caller; that user becomes @o's, and
 * rapt__obj_unregister() drops it.  On failure the caller keeps it.
 */
int rapt__obj_reserve(struct rapt_obj *o, uint32_t cls,
		      struct rapt_obj *parent, struct rapt_core_ia *ia);
/* Make @o's handle resolvable. */
void rapt__obj_publish(struct rapt_obj *o);
/* Invalidate @o's handle and free its slot; its parent loses a user. */
void rapt__obj_unregister(struct rapt_obj *o);
/*
 * Resolve a handle of class @cls and add a user to its object, unless the
 * object is being freed (RAPT_EBADHANDLE).  Sets the error detail.
 */
int rapt__obj_get(const void *handle, uint32_t cls, struct rapt_obj **o);
/*
 * Start freeing the object a handle of class @cls names: in one step, if
 * it has no users, it becomes DYING and takes no new user.  Sets the error
 * detail.  Return: 0, RAPT_EBADHANDLE (also when another free is under
 * way), RAPT_EHANDLETYPE, RAPT_EBUSY ("is still used by N @users_what").
 */
int rapt__obj_kill(const void *handle, uint32_t cls, const char *users_what,
		   struct rapt_obj **o);
/* Undo rapt__obj_kill() (the provider could not free its side). */
void rapt__obj_revive(struct rapt_obj *o);
/*
 * Make @o DYING whatever its users, then wait until only the @held users
 * the caller owns are left (for objects whose users are all short calls).
 */
void rapt__obj_drain(struct rapt_obj *o, unsigned int held);
/* Add a user to (release one of) an object the caller already holds. */
void rapt__obj_hold(struct rapt_obj *o);
void rapt__obj_put(struct rapt_obj *o);
/* Resolve a handle of class @cls without a user; sets the error detail. */
int rapt__obj_lookup(const void *handle, uint32_t cls, struct rapt_obj **o);
/* Resolve a handle of any class, without a user. */
int rapt__obj_lookup_any(const void *handle, struct rapt_obj **o);

/*
 * The handle table (handle.c), here only so that the data path can
 * resolve a handle inline.  Slots live in chunks that never move.  A
 * slot's @obj is set before its @handle is published and is not cleared
 * when the slot is freed, so a matching handle always yields an object.
 * Slot 0 is never handed out (it holds a handle no lookup can match).
 */
struct rapt_slot {
	_Atomic uint64_t handle;	/* the live handle, 0 while free */
	struct rapt_obj *_Atomic obj;
	uint32_t gen;
	uint32_t next_free;
	/* generation | DYING | users (handle.c); also makes the slot 32
	 * bytes, so that the lookup indexes by a shift */
	_Atomic uint64_t state;
};

#define RAPT_CHUNK_BITS 16
#define RAPT_CHUNK_SLOTS (1u << RAPT_CHUNK_BITS)
#define RAPT_NCHUNKS (1u << (RAPT_HANDLE_IDX_BITS - RAPT_CHUNK_BITS))

/*
 * The chunk table is indexed by bits 16-31 of a handle: its chunk number,
 * and its class bits XOR the class the caller expects.  Only the first
 * RAPT_NCHUNKS entries are ever set, so a handle of another class lands
 * on NULL and the class needs no test of its own.
 */
#define RAPT_CHUNK_KEYS (1u << (32 - RAPT_CHUNK_BITS))
_Static_assert(RAPT_HANDLE_IDX_BITS + 8 == 32,
	       "the class must be the top byte of a handle's low 32 bits");

extern struct rapt_slot *_Atomic rapt__chunks[RAPT_CHUNK_KEYS];

/*
 * The lean data-path lookup: NULL if stale or of the wrong class (the
 * caller then names the error with rapt__obj_lookup()).  One load of the
 * chunk, one compare of the whole handle.
 */
static inline struct rapt_obj *rapt__obj_fast(const void *handle,
					      uint32_t cls)
{
	uint64_t h = (uint64_t)(uintptr_t)handle;
	uint64_t key = ((h >> RAPT_CHUNK_BITS) & (RAPT_CHUNK_KEYS - 1)) ^
		       ((uint64_t)cls << (RAPT_HANDLE_IDX_BITS -
					  RAPT_CHUNK_BITS));
	struct rapt_slot *s;
	struct rapt_obj *o;

	s = atomic_load_explicit(&rapt__chunks[key], memory_order_acquire);
	if (rapt_unlikely(!s))
		return NULL;
	s += (uint32_t)h & (RAPT_CHUNK_SLOTS - 1);
	if (rapt_unlikely(atomic_load_explicit(&s->handle,
					       memory_order_acquire) != h))
		return NULL;
	o = atomic_load_explicit(&s->obj, memory_order_relaxed);
	/* Set before the handle was published, never cleared (handle.c). */
	if (!o)
		__builtin_unreachable();
	return o;
}

static inline void *rapt__obj_handle(const struct rapt_obj *o)
{
	return (void *)(uintptr_t)o->handle;
}

/* ------------------------------------------------------------------ */
/* Registry and loader (registry.c, loader.c, config.c, stubs.c)      */
/* ------------------------------------------------------------------ */

/* A loaded provider.  @ops is complete: every NULL op is a core stub. */
struct rapt_prov {
	const struct rapt_provider *desc;
	struct rapt_prov_ops ops;
	void *ctx;		/* from desc->init */
	void *dl;		/* dlopen handle */
	char path[512];
};

/* Fill @full from the provider's (possibly shorter) table, with stubs. */
void rapt__ops_fill(struct rapt_prov_ops *full,
		    const struct rapt_prov_ops *prov_ops);

/*
 * Resolve an IA name (NULL: best available; aliases from rapt.conf) to a
 * loaded provider, a device name and a port.  Sets the error detail.
 * Return: 0, RAPT_ENOPROVIDER, RAPT_ENODEV, RAPT_EDLOPEN, RAPT_EABI,
 * RAPT_ECONFIG, RAPT_EINVAL.
 */
int rapt__registry_resolve(const char *name, struct rapt_prov **prov,
			   char *device, size_t device_len, uint32_t *port);

/* ------------------------------------------------------------------ */
/* IA (ia.c)                                                           */
/* ------------------------------------------------------------------ */

struct rapt_core_evd;

struct rapt_core_ia {
	struct rapt_obj obj;		/* must stay first */
	struct rapt_prov *prov;
	const struct rapt_prov_ops *ops;
	struct rapt_ia_attr attr;	/* raw, as the provider reported */
	pthread_mutex_t lock;		/* guards async_evd and orphans */
	struct rapt_core_evd *async_evd;
	struct rapt_core_cr *orphans;	/* cancelled CRs nobody decided */
	uint32_t norphans;		/* orphans not yet freed (cr.c) */
	pthread_cond_t orphans_gone;	/* norphans reached 0 */
	_Atomic uint32_t peer_timeout_ms;	/* new EPs' (peer_timeout.c) */
	_Atomic uint32_t nsrq;		/* SRQs, max attr.max_srq */
	_Atomic uint32_t nrmr;		/* RMRs, max attr.max_rmr */
};

static inline const struct rapt_prov_ops *rapt__ops(struct rapt_obj *o)
{
	return o->ia->ops;
}

/*
 * RAPT_NOCANCEL(stmt): @stmt, a call of a provider's control op, runs with
 * thread cancellation disabled.  A provider may reach a cancellation point
 * there (the verbs providers' libibverbs and librdmacm commands are
 * write()s and ioctl()s), and a thread cancelled inside would leave the
 * provider's locks and the core's busy marks held; only rapt_evd_wait()'s
 * sleep may act on a cancellation (rapt(7), THREADING).  The data-path
 * ops (posts, evd_progress) are the provider's to bracket, where it knows
 * it needs to (rapt_nocancel_begin()): the tcp provider's never do.
 */
#define RAPT_NOCANCEL(stmt)						\
	do {								\
		int nocancel_old_ = rapt_nocancel_begin();		\
		stmt;							\
		rapt_nocancel_end(nocancel_old_);			\
	} while (0)

/* Set (evd) or clear (NULL) the IA's async EVD; RAPT_EEXIST if taken. */
int rapt__ia_set_async_evd(struct rapt_core_ia *ia, struct rapt_core_evd *evd,
			   struct rapt_core_evd *expect);

/* ------------------------------------------------------------------ */
/* EVD (evd.c)                                                         */
/* ------------------------------------------------------------------ */

/* struct rapt_core_evd starts with struct rapt_obj; the rest is evd.c's. */
uint32_t rapt__evd_streams(struct rapt_core_evd *evd);

/* ------------------------------------------------------------------ */
/* Private data (pdata.c)                                              */
/* ------------------------------------------------------------------ */

#define RAPT_PDATA_MAGIC0 0xa7
#define RAPT_PDATA_MAGIC1 0x52
#define RAPT_PDATA_HDR_VERSION 1
#define RAPT_PDATA_MAX 256	/* largest raw field any transport has */
/* Largest field a peer may send us: RFC 5044's 512 bytes of MPA private
 * data (foreign iWARP peers may use them all, though rapt sends at most
 * RAPT_PDATA_MAX).  Received bytes are never truncated. */
#define RAPT_PDATA_RECV_MAX 512

/* Consumer limit for a raw transport limit. */
static inline uint16_t rapt__pdata_usable(uint16_t raw)
{
	return raw > RAPT_PDATA_HEADER_LEN ? raw - RAPT_PDATA_HEADER_LEN : 0;
}

/*
 * Frame consumer pdata for the wire (or copy it raw) after checking it
 * against the raw transport limit @raw_max.  Sets the error detail.
 * Return: framed length (>= 0), or RAPT_ELENGTH / RAPT_EINVAL.
 */
/* peer_timeout.c: give a new EP the IA's peer timeout (no lock held). */
void rapt__ep_peer_timeout_init(struct rapt_core_ep *ep);

/* memcheck.c: 0 if [@addr, @addr + @len) is mapped readable (and
 * writable if @write); RAPT_EFAULT (a hole) or RAPT_EACCES otherwise. */
int rapt__mem_check(const void *addr, size_t len, bool write);

int rapt__pdata_prepare(const void *data, size_t len, uint16_t raw_max,
			bool raw, const char *what, uint8_t out[RAPT_PDATA_MAX]);

/* ------------------------------------------------------------------ */
/* EP (ep.c), PSP (psp.c), CR (cr.c)                                   */
/* ------------------------------------------------------------------ */

struct rapt_core_ep {
	struct rapt_obj obj;		/* must stay first */
	_Atomic uint32_t state;		/* enum rapt_ep_state */
	/* Set at creation, read by every post (dto.c), next to state. */
	uint32_t post_slow;		/* ~post_flags | RAPT_POST_INLINE */
	const struct rapt_prov_ops *ops;	/* obj.ia->ops */
	pthread_mutex_t lock;		/* guards the rest */
	struct rapt_ep_attr attr;
	struct rapt_core_evd *recv_evd;
	struct rapt_core_evd *req_evd;
	struct rapt_core_evd *conn_evd;
	uint32_t flags;			/* RAPT_EPI_* */
	uint32_t peer_timeout_ms;	/* 0: the provider has none */
	uint32_t rdma_read_in;
	uint32_t rdma_read_out;
	uint32_t post_flags;		/* RAPT_POST_* the IA supports */
	_Atomic bool resetting;		/* rapt_ep_reset() under way */
	struct rapt_core_srq *srq;	/* its SRQ (a user), or NULL */
	/* The peer's private data, one buffer per event that may carry it,
	 * so a queued ESTABLISHED never sees the DISCONNECTED bytes.  Each
	 * is RAPT_PDATA_RECV_MAX bytes, allocated when a connection that may
	 * bring it starts (rapt__ep_pdata_bufs): an EP that never gets any
	 * (a passive one, on a transport without disconnect private data)
	 * spares the kilobyte, which was an eighth of a held connection. */
	uint32_t pdata_len;
	uint8_t *pdata;			/* accept or reject pdata */
	uint32_t disc_pdata_len;
	uint8_t *disc_pdata;
	struct sockaddr_storage local_addr;
	struct sockaddr_storage remote_addr;
};

/* Allocate the private-data buffers a connection of @ep may fill: the
 * reply's or reject's when @active, the disconnect's where the IA carries
 * any.  Return: 0, RAPT_ENOMEM (nothing changed; the caller fails). */
int rapt__ep_pdata_bufs(struct rapt_core_ep *ep, bool active);

/*
 * A listener: a PSP (class RAPT_CLS_PSP), or an RSP (RAPT_CLS_RSP, rsp.c),
 * which is a PSP with a backlog of one that admits one request in its
 * life and holds the EP its CR must be accepted with.
 */
struct rapt_core_psp {
	struct rapt_obj obj;		/* must stay first */
	struct rapt_core_evd *cr_evd;
	pthread_mutex_t lock;		/* guards the rest, and obj.prov */
	pthread_cond_t ready_cv;	/* ready became true */
	bool ready;			/* psp_create returned: obj.prov set */
	bool closing;
	bool one_shot;			/* an RSP */
	bool spent;			/* an RSP that admitted its CR */
	/* An RSP's EP while reserved, with a user of it; NULL once an
	 * accept took it.  @rsp_ep_handle stays, for rapt_rsp_query(). */
	struct rapt_core_ep *rsp_ep;
	struct rapt_ep *rsp_ep_handle;
	struct rapt_psp_info info;
};

/* Create a listener: a PSP, or an RSP for @rsp_ep (reserved by the
 * caller, whose user of it the RSP takes over on success).  @what names
 * the call in errors.  Return: the published object, or an error. */
int rapt__psp_open(struct rapt_ia *ia, uint64_t sid, struct rapt_evd *cr_evd,
		   const struct rapt_psp_attr *attr,
		   struct rapt_core_ep *rsp_ep, const char *what,
		   struct rapt_core_psp **out);
/* Free a listener of class @cls; for an RSP, hand back in @rsp_ep the EP
 * still reserved (with the RSP's user of it), or NULL. */
int rapt__psp_destroy(const void *handle, uint32_t cls,
		      struct rapt_core_ep **rsp_ep);

/* A shared receive queue (srq.c).  Its EPs each hold a user of it. */
struct rapt_core_srq {
	struct rapt_obj obj;		/* must stay first; parent: PZ */
	pthread_mutex_t lock;		/* guards attr */
	struct rapt_srq_attr attr;
	_Atomic uint32_t neps;
};

/* srq.c: take the SRQ an EP is created on (a user the EP keeps); check
 * it is of @pz.  Adjusts @a's receive depth and SGEs for the provider. */
int rapt__srq_bind(struct rapt_srq *handle, struct rapt_obj *pz,
		   struct rapt_ep_attr *a, struct rapt_core_srq **out);
void rapt__srq_unbind(struct rapt_core_srq *srq);

/* lmr.c: the keys, range and rights of an LMR the caller holds. */
const struct rapt_lmr_info *rapt__lmr_info(const struct rapt_obj *lmr);

/* Free the cancelled CRs the consumer never decided (at IA close). */
void rapt__cr_reap_orphans(struct rapt_core_ia *ia);

int rapt__psp_admit(struct rapt_core_psp *psp);
void rapt__psp_unadmit(struct rapt_core_psp *psp);
/* The provider's PSP object; waits until its psp_create has returned. */
void *rapt__psp_prov(struct rapt_core_psp *psp);
void rapt__psp_release(struct rapt_core_psp *psp, int outcome);

struct rapt_core_cr {
	struct rapt_obj obj;		/* must stay first */
	struct rapt_core_psp *psp;
	void *pcr;			/* rapt_prov_cr_request()'s */
	pthread_mutex_t lock;		/* guards the flags (cr.c) */
	bool cancelled;			/* the requester went away */
	bool deciding;			/* accept/reject under way */
	bool counted;			/* holds a backlog slot */
	bool dead;			/* decided: being freed */
	/* Under ia->lock. */
	struct rapt_core_cr *orphan_next;	/* on ia->orphans */
	struct rapt_core_cr *orphan_prev;
	bool orphan;
	struct rapt_cr_info info;
	uint8_t pdata[RAPT_PDATA_RECV_MAX];
};

#endif /* RAPT_CORE_RAPT_INT_H */
