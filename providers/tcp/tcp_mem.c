/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the STag table.  One per IA, shared by its EPs.
 *
 * A key is 32 bits: the high 20 are a slot index XORed with a random
 * mask, the low 12 a tag that mixes the slot's generation with random
 * bits (separate ones for lkey and rkey).  So:
 *   - lookup is O(1): unmask the index, check it, load the slot;
 *   - a key is never 0 or TCP_RTR_STAG (the index part is never 0);
 *   - a freed key comes back only after 4096 reuses of its slot;
 *   - keys do not count up, and a stale or guessed key fails unless both
 *     parts are right (and a wrong guess costs the peer its connection).
 *
 * The table is per IA, but a key serves only EPs of the PZ its region was
 * registered in: a peer's STag of a region in another PZ is refused as
 * "not associated with the stream" (tcp_mem_rkey()), as verbs and DAT
 * require of a memory region and a QP/EP in different protection domains.
 *
 * Slots live in chunks that are allocated once and never move or go
 * away before the table does, so the data path reads them without a
 * lock.  Registration and deregistration take the table's mutex.
 *
 * Pins: the data path pins a slot (an atomic count) while it reads or
 * writes the region's memory, and checks the key after pinning;
 * tcp_lmr_free() clears the keys, then waits for the count to reach 0.
 * Both sides use sequentially consistent atomics, so either the reader
 * sees the cleared key or the freer sees the pin: no byte lands in (or
 * leaves) a region once its rapt_lmr_free() has returned.
 *
 * Most pins last one syscall or memcpy.  A Read Response's payload is
 * different: its iovecs point into the region and the kernel copies the
 * bytes only in sendmsg(), which may take the batch in part and leave the
 * rest for EPOLLOUT, as long as the peer does not read.  So the transmit
 * path turns that pin into a *hold* (tcp_mem_hold()) kept until the batch
 * is all in the socket or the connection is gone, and tcp_lmr_free()
 * waits for holds as for pins, without the table's lock (the wait may be
 * long, and the receive path takes that lock).  A hold is always on an
 * LMR's slot, the one owning the memory, also for a response through a
 * window: unbinding a window runs under an EP's lock (rmr_bind, a Send
 * with Invalidate), where waiting for a socket to drain could deadlock,
 * so it waits only for short pins; the LMR, which cannot be freed while
 * the window is bound, then keeps the memory until the batch has left.
 *
 * Memory windows (API 1.3) are slots too: kind TCP_SLOT_MW, no lkey, an
 * rkey only while bound, and addr/length/access of the bound range, so
 * the data path checks a window's key, bounds and rights exactly as an
 * LMR's (tcp_mem_rkey(): the same Terminate codes).  A bind bumps the
 * slot's generation, so each bind has a new key and the old one fails as
 * an invalid STag.  Unbinding (locally, by a peer's Send with Invalidate,
 * by a rebind or by rmr_free) clears the rkey and waits for the pins as
 * tcp_lmr_free() does; the LMR counts its bound windows and refuses to be
 * freed while any is, so a window never outlives the memory it opens.
 */
#include "config.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "tcp.h"

#define STAG_TAG_BITS	12
#define STAG_TAG_MASK	((1u << STAG_TAG_BITS) - 1)
#define STAG_IDX_BITS	(32 - STAG_TAG_BITS)
#define STAG_MAX_SLOTS	(1u << STAG_IDX_BITS)
#define STAG_CHUNK_SHIFT 8
#define STAG_CHUNK	(1u << STAG_CHUNK_SHIFT)
#define STAG_NCHUNKS	(STAG_MAX_SLOTS >> STAG_CHUNK_SHIFT)

enum {
	TCP_SLOT_FREE = 0,
	TCP_SLOT_MR,			/* an LMR */
	TCP_SLOT_MW,			/* a memory window */
};

struct tcp_stag_slot {
	_Atomic uint32_t lkey;		/* 0: none (or a window) */
	_Atomic uint32_t rkey;		/* 0: not registered or invalidated */
	atomic_uint pins;
	uint32_t access;		/* RAPT_MEM_* */
	uint8_t kind;			/* TCP_SLOT_*, under t->lock */
	uint32_t nbound;		/* MR: windows bound over it */
	uint32_t bound_to;		/* MW: its MR's index + 1, or 0 */
	const struct tcp_pz *pz;	/* set before the keys are published */
	uint8_t *addr;
	uint64_t length;
	uint32_t gen;			/* registrations of this slot so far */
	uint32_t next_free;		/* free list: index + 1, 0 ends it */
};

struct tcp_stag_table {
	pthread_mutex_t lock;		/* registration, free list */
	atomic_uint nslots;		/* slots ever handed out */
	uint32_t free_head;		/* index + 1 of a free slot, or 0 */
	uint32_t idx_mask;		/* random, STAG_IDX_BITS wide */
	uint32_t ltag, rtag;		/* random tag offsets */
	uint32_t tag_step;		/* random, odd */
	uint32_t nlive;
	_Atomic(struct tcp_stag_slot *) chunk[STAG_NCHUNKS];
};

/* What the core holds as the LMR's provider object. */
struct tcp_mr {
	struct tcp_stag_table *t;
	uint32_t idx;
};

static uint32_t stag_random(void)
{
	uint32_t r;
	struct timespec ts;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) == sizeof(r))
		return r;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)ts.tv_nsec * 2654435761u ^ (uint32_t)getpid();
}

/**
 * tcp_stags_create - create an IA's STag table
 * @t: output
 *
 * Return: 0, RAPT_ENOMEM.
 */
int tcp_stags_create(struct tcp_stag_table **t)
{
	struct tcp_stag_table *n = calloc(1, sizeof(*n));

	if (!n) {
		tcp_err("out of memory for the STag table");
		return RAPT_ENOMEM;
	}
	pthread_mutex_init(&n->lock, NULL);
	n->idx_mask = stag_random() & (STAG_MAX_SLOTS - 1);
	n->ltag = stag_random();
	n->rtag = n->ltag ^ (stag_random() | 1u << (STAG_TAG_BITS - 1));
	n->tag_step = stag_random() | 1;
	*t = n;
	return 0;
}

/**
 * tcp_stags_destroy - free an STag table
 * @t: the table, or NULL; its LMRs must all be freed
 */
void tcp_stags_destroy(struct tcp_stag_table *t)
{
	uint32_t i;

	if (!t)
		return;
	if (t->nlive)
		tcp_warn("STag table freed with %u live regions", t->nlive);
	for (i = 0; i < STAG_NCHUNKS; i++)
		free(atomic_load(&t->chunk[i]));
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static uint32_t stag_key(const struct tcp_stag_table *t, uint32_t idx,
			 uint32_t gen, uint32_t off)
{
	uint32_t tag = (off + gen * t->tag_step) & STAG_TAG_MASK;

	return (idx ^ t->idx_mask) << STAG_TAG_BITS | tag;
}

static struct tcp_stag_slot *slot_at(struct tcp_stag_table *t, uint32_t idx)
{
	struct tcp_stag_slot *c;

	c = atomic_load_explicit(&t->chunk[idx >> STAG_CHUNK_SHIFT],
				 memory_order_acquire);
	return &c[idx & (STAG_CHUNK - 1)];
}

/* The slot a key names, if it was ever handed out (key not checked). */
static struct tcp_stag_slot *slot_of(struct tcp_stag_table *t, uint32_t key,
				     uint32_t *pidx)
{
	uint32_t idx = (key >> STAG_TAG_BITS) ^ t->idx_mask;

	if (idx >= atomic_load_explicit(&t->nslots, memory_order_acquire))
		return NULL;
	if (pidx)
		*pidx = idx;
	return slot_at(t, idx);
}

/* A new slot index, with t->lock held; STAG_MAX_SLOTS when full. */
static uint32_t slot_alloc(struct tcp_stag_table *t)
{
	uint32_t idx, n;
	struct tcp_stag_slot *c;

	if (t->free_head) {
		idx = t->free_head - 1;
		t->free_head = slot_at(t, idx)->next_free;
		return idx;
	}
	n = atomic_load_explicit(&t->nslots, memory_order_relaxed);
	/* The index whose key part would be 0 is never used. */
	if (n == t->idx_mask)
		n++;
	if (n >= STAG_MAX_SLOTS)
		return STAG_MAX_SLOTS;
	if (!atomic_load_explicit(&t->chunk[n >> STAG_CHUNK_SHIFT],
				  memory_order_relaxed)) {
		c = calloc(STAG_CHUNK, sizeof(*c));
		if (!c)
			return STAG_MAX_SLOTS;
		atomic_store_explicit(&t->chunk[n >> STAG_CHUNK_SHIFT], c,
				      memory_order_release);
	}
	atomic_store_explicit(&t->nslots, n + 1, memory_order_release);
	return n;
}

/*
 * A slot of @kind for @pz in a new provider object, its generation bumped
 * so that the slot's last keys stay dead.  Returns with t->lock held (the
 * caller publishes the keys), or NULL with nothing held.
 */
static struct tcp_mr *slot_new(struct tcp_stag_table *t, uint8_t kind,
			       const struct tcp_pz *pz)
{
	struct tcp_mr *mr = malloc(sizeof(*mr));
	struct tcp_stag_slot *s;

	if (!mr)
		return NULL;
	pthread_mutex_lock(&t->lock);
	mr->idx = slot_alloc(t);
	if (mr->idx == STAG_MAX_SLOTS) {
		pthread_mutex_unlock(&t->lock);
		free(mr);
		return NULL;
	}
	mr->t = t;
	s = slot_at(t, mr->idx);
	s->gen++;
	s->pz = pz;
	s->kind = kind;
	s->nbound = 0;
	s->bound_to = 0;
	s->next_free = 0;
	t->nlive++;
	return mr;
}

/**
 * tcp_lmr_create - register memory (the lmr_create op)
 * @pia: the IA (struct tcp_ia)
 * @ppz: the provider PZ object (struct tcp_pz): only EPs of this PZ
 *        may use the rkey
 * @addr: start of the region
 * @length: bytes
 * @access: RAPT_MEM_* rights
 * @info: lkey, rkey and raddr (the virtual address) are filled in
 * @plmr: output provider object
 *
 * Return: 0, RAPT_ENOMEM (no memory, or 2^20 live registrations).
 */
int tcp_lmr_create(void *pia, void *ppz, void *addr, size_t length,
		   uint32_t access, struct rapt_lmr_info *info, void **plmr)
{
	struct tcp_stag_table *t = ((struct tcp_ia *)pia)->stags;
	struct tcp_stag_slot *s;
	struct tcp_mr *mr;
	uint32_t lkey, rkey;

	mr = slot_new(t, TCP_SLOT_MR, ppz);
	if (!mr) {
		tcp_err("no STag for a %zu-byte region: out of memory or slots",
			length);
		return RAPT_ENOMEM;
	}
	s = slot_at(t, mr->idx);
	s->addr = addr;
	s->length = length;
	s->access = access;
	lkey = stag_key(t, mr->idx, s->gen, t->ltag);
	rkey = stag_key(t, mr->idx, s->gen, t->rtag);
	/* Publish the region before its keys. */
	atomic_store(&s->lkey, lkey);
	atomic_store(&s->rkey, rkey);
	pthread_mutex_unlock(&t->lock);

	info->lkey = lkey;
	info->rkey = rkey;
	info->raddr = (uint64_t)(uintptr_t)addr;
	*plmr = mr;
	return 0;
}

/*
 * Wait until nothing pins or holds @s.  Pins last a syscall; a hold lasts
 * until a peer reads a Read Response, so after a while back off to sleeps
 * instead of taking a CPU from the threads that drain the socket.
 */
static void pins_wait(struct tcp_stag_slot *s)
{
	const struct timespec nap = { .tv_nsec = 100000 };
	unsigned int i;

	for (i = 0; atomic_load(&s->pins); i++) {
		if (i < 1000)
			sched_yield();
		else
			rapt_sys_nanosleep(&nap);
	}
}

/* Put a slot whose keys are dead and whose pins are gone on the free
 * list; t->lock held. */
static void slot_release(struct tcp_stag_table *t, uint32_t idx)
{
	struct tcp_stag_slot *s = slot_at(t, idx);

	s->addr = NULL;
	s->length = 0;
	s->access = 0;
	s->pz = NULL;
	s->kind = TCP_SLOT_FREE;
	s->next_free = t->free_head;
	t->free_head = idx + 1;
	t->nlive--;
}

/**
 * tcp_lmr_free - deregister memory (the lmr_free op)
 * @plmr: what tcp_lmr_create() returned
 *
 * Clears both keys, then waits until no data-path operation still
 * touches the region: a pin lasts one syscall or memcpy, a hold until a
 * Read Response batch from the region is all in its socket or its
 * connection is gone.  The table's lock is not held while waiting.
 *
 * Return: 0, RAPT_EBUSY while a memory window is bound over it.
 */
int tcp_lmr_free(void *plmr)
{
	struct tcp_mr *mr = plmr;
	struct tcp_stag_table *t = mr->t;
	struct tcp_stag_slot *s;

	pthread_mutex_lock(&t->lock);
	s = slot_at(t, mr->idx);
	if (s->nbound) {
		pthread_mutex_unlock(&t->lock);
		rapt_prov_set_error("rapt_lmr_free: %u memory windows are bound over the LMR",
				    s->nbound);
		return RAPT_EBUSY;
	}
	/* Dead keys keep every new lookup out; the slot is not on the free
	 * list yet, so nothing reuses it while we wait. */
	atomic_store(&s->lkey, 0);
	atomic_store(&s->rkey, 0);
	pthread_mutex_unlock(&t->lock);
	pins_wait(s);
	pthread_mutex_lock(&t->lock);
	slot_release(t, mr->idx);
	pthread_mutex_unlock(&t->lock);
	free(mr);
	return 0;
}

/* End a window's binding, if any: kill its key, wait until no data path
 * touches it, and let its LMR go; t->lock held. */
static void mw_unbind(struct tcp_stag_table *t, struct tcp_stag_slot *s)
{
	if (!s->bound_to)
		return;
	atomic_store(&s->rkey, 0);
	pins_wait(s);
	slot_at(t, s->bound_to - 1)->nbound--;
	s->bound_to = 0;
}

/* Pin the slot of @key if @key is its current lkey (@remote: rkey). */
static struct tcp_stag_slot *slot_get(struct tcp_stag_table *t, uint32_t key,
				      bool remote)
{
	struct tcp_stag_slot *s = slot_of(t, key, NULL);

	if (!s || !key)
		return NULL;
	atomic_fetch_add(&s->pins, 1);
	if (atomic_load(remote ? &s->rkey : &s->lkey) != key) {
		atomic_fetch_sub(&s->pins, 1);
		return NULL;
	}
	return s;
}

/**
 * tcp_mem_put - drop a pin taken by tcp_mem_lkey() or tcp_mem_rkey()
 * @pin: the pin, or NULL
 */
void tcp_mem_put(struct tcp_stag_slot *pin)
{
	if (pin)
		atomic_fetch_sub_explicit(&pin->pins, 1, memory_order_release);
}

/**
 * tcp_mem_hold - keep the memory behind a pin until tcp_mem_put()
 * @ia: the IA
 * @pin: a pin from tcp_mem_rkey(), given up
 *
 * For a pin on an LMR's slot, the pin itself becomes the hold.  For a
 * window's, the hold is taken on its LMR's slot (the binding cannot
 * change while the window is pinned) and the window's pin is dropped, so
 * that an unbind never waits for a socket (see the file's comment).
 *
 * Return: the slot to give to tcp_mem_put() when the bytes have left.
 */
struct tcp_stag_slot *tcp_mem_hold(struct tcp_ia *ia,
				   struct tcp_stag_slot *pin)
{
	struct tcp_stag_slot *owner;

	if (pin->kind != TCP_SLOT_MW)
		return pin;
	owner = slot_at(ia->stags, pin->bound_to - 1);
	atomic_fetch_add(&owner->pins, 1);
	tcp_mem_put(pin);
	return owner;
}

/* Range and rights of a pinned slot: 0 or a TCP_TERM_RDMAP_* code + 1. */
static int slot_check(const struct tcp_stag_slot *s, uint64_t addr,
		      uint64_t len, uint32_t need)
{
	uint64_t base = (uintptr_t)s->addr;

	if (len && addr + len - 1 < addr)
		return TCP_TERM_RDMAP_TO_WRAP + 1;
	if (addr < base || len > s->length || addr - base > s->length - len)
		return TCP_TERM_RDMAP_BASE_BOUNDS + 1;
	if ((s->access & need) != need)
		return TCP_TERM_RDMAP_ACCESS + 1;
	return 0;
}

/**
 * tcp_mem_lkey - pin a local region and point at @len bytes of it
 * @ia: the IA
 * @pz: the PZ of the EP whose work request names @lkey: a region of
 *      another PZ is refused (verbs' local protection error for an MR of
 *      another PD)
 * @lkey: the SGE's key
 * @addr: the SGE's address
 * @len: bytes that will be touched
 * @need: RAPT_MEM_LOCAL_WRITE to write, 0 to read
 * @pin: output, for tcp_mem_put()
 *
 * Return: the memory, or NULL (bad key, PZ, bounds or rights: nothing
 * pinned).
 */
uint8_t *tcp_mem_lkey(struct tcp_ia *ia, const struct tcp_pz *pz,
		      uint32_t lkey, uint64_t addr, uint64_t len,
		      uint32_t need, struct tcp_stag_slot **pin)
{
	struct tcp_stag_slot *s = slot_get(ia->stags, lkey, false);

	if (!s)
		return NULL;
	if (s->pz != pz || slot_check(s, addr, len, need)) {
		tcp_mem_put(s);
		return NULL;
	}
	*pin = s;
	return (uint8_t *)(uintptr_t)addr;
}

/**
 * tcp_mem_rkey - pin a region a peer names and point at @len bytes of it
 * @ia: the IA
 * @pz: the PZ of the EP the peer's message arrived on
 * @rkey: the peer's STag
 * @to: the peer's tagged offset (a virtual address in the region)
 * @len: bytes that will be touched
 * @need: RAPT_MEM_REMOTE_WRITE or RAPT_MEM_REMOTE_READ
 * @ecode: output on failure, a TCP_TERM_RDMAP_* protection code
 * @pin: output, for tcp_mem_put()
 *
 * A live key of a region registered in another PZ than @pz is refused
 * before its bounds and rights are looked at (they are none of this
 * stream's business) with TCP_TERM_RDMAP_STAG_NOT_ASSOC: RFC 5040's
 * "STag not associated with RDMAP Stream" (layer 0, type 1, code 0x03),
 * which the tagged-placement caller reports as RFC 5041's "STag not
 * associated with DDP Stream" (layer 1, type 1, code 0x02).  siw and
 * irdma use the same two codes for a PD mismatch.
 *
 * Return: the memory, or NULL (nothing pinned).
 */
uint8_t *tcp_mem_rkey(struct tcp_ia *ia, const struct tcp_pz *pz,
		      uint32_t rkey, uint64_t to, uint64_t len, uint32_t need,
		      uint8_t *ecode, struct tcp_stag_slot **pin)
{
	struct tcp_stag_slot *s = slot_get(ia->stags, rkey, true);
	int bad;

	if (!s) {
		*ecode = TCP_TERM_RDMAP_INVALID_STAG;
		return NULL;
	}
	if (s->pz != pz) {
		tcp_mem_put(s);
		*ecode = TCP_TERM_RDMAP_STAG_NOT_ASSOC;
		return NULL;
	}
	bad = slot_check(s, to, len, need);
	if (bad) {
		tcp_mem_put(s);
		*ecode = (uint8_t)(bad - 1);
		return NULL;
	}
	*pin = s;
	return (uint8_t *)(uintptr_t)to;
}

/**
 * tcp_rkey_resolve - check a peer's (rkey, to, len) without pinning
 *
 * See tcp.h.  The pointer is only good for a yes/no: use tcp_mem_rkey()
 * to touch the memory.
 */
uint8_t *tcp_rkey_resolve(struct tcp_ia *ia, const struct tcp_pz *pz,
			  uint32_t rkey, uint64_t to, uint64_t len,
			  uint32_t need, uint8_t *ecode)
{
	struct tcp_stag_slot *pin;
	uint8_t *p = tcp_mem_rkey(ia, pz, rkey, to, len, need, ecode, &pin);

	if (p)
		tcp_mem_put(pin);
	return p;
}

/**
 * tcp_sge_check - check a local SGE list (see tcp.h)
 */
int tcp_sge_check(struct tcp_ia *ia, const struct tcp_pz *pz,
		  const struct rapt_sge *sgl, uint32_t nsge, uint32_t need)
{
	struct tcp_stag_slot *pin;
	uint32_t i;

	for (i = 0; i < nsge; i++) {
		if (!tcp_mem_lkey(ia, pz, sgl[i].lkey, sgl[i].addr,
				  sgl[i].length, need, &pin))
			return RAPT_DTO_LOCAL_PROTECTION;
		tcp_mem_put(pin);
	}
	return 0;
}

/**
 * tcp_rkey_invalidate - invalidate an rkey (Send with Invalidate)
 * @ia: the IA
 * @pz: the PZ of the EP the Send arrived on
 * @rkey: the key the peer named
 *
 * The region stays registered and its lkey valid; RDMA naming @rkey
 * fails from now on.  Invalidating an already invalidated key of a live
 * region succeeds (as siw does).  A region of another PZ than @pz is
 * left alone: a peer may only invalidate what it may access.
 *
 * Return: 0, RAPT_ENOENT when @rkey names no live region, RAPT_EACCES
 * when it names one of another PZ.
 */
int tcp_rkey_invalidate(struct tcp_ia *ia, const struct tcp_pz *pz,
			uint32_t rkey)
{
	struct tcp_stag_table *t = ia->stags;
	struct tcp_stag_slot *s;
	uint32_t idx;
	int ret = RAPT_ENOENT;

	pthread_mutex_lock(&t->lock);
	s = slot_of(t, rkey, &idx);
	if (s && rkey && s->kind != TCP_SLOT_FREE &&
	    stag_key(t, idx, s->gen, t->rtag) == rkey) {
		ret = RAPT_EACCES;
		if (s->pz == pz) {
			if (s->kind == TCP_SLOT_MW)
				mw_unbind(t, s);
			else
				atomic_store(&s->rkey, 0);
			ret = 0;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Memory windows                                                      */
/* ------------------------------------------------------------------ */

/**
 * tcp_rmr_create - the rmr_create op: an unbound window of @ppz
 * @pia: the IA
 * @ppz: the window's PZ (struct tcp_pz)
 * @prmr: output
 *
 * Return: 0, RAPT_ENOMEM (no memory, or no STag slot left).
 */
int tcp_rmr_create(void *pia, void *ppz, void **prmr)
{
	struct tcp_stag_table *t = ((struct tcp_ia *)pia)->stags;
	struct tcp_mr *mw = slot_new(t, TCP_SLOT_MW, ppz);

	if (!mw) {
		tcp_err("no STag for a memory window: out of memory or slots");
		return RAPT_ENOMEM;
	}
	pthread_mutex_unlock(&t->lock);
	*prmr = mw;
	return 0;
}

/**
 * tcp_rmr_free - the rmr_free op: unbind (if bound) and free a window
 * @prmr: what tcp_rmr_create() returned
 *
 * Return: 0.
 */
int tcp_rmr_free(void *prmr)
{
	struct tcp_mr *mw = prmr;
	struct tcp_stag_table *t = mw->t;
	struct tcp_stag_slot *s;

	pthread_mutex_lock(&t->lock);
	s = slot_at(t, mw->idx);
	mw_unbind(t, s);
	pins_wait(s);	/* a lookup's passing pin: the key is already 0 */
	slot_release(t, mw->idx);
	pthread_mutex_unlock(&t->lock);
	free(mw);
	return 0;
}

/**
 * tcp_rmr_query - the rmr_query op: the window's live rkey, 0 if none
 */
int tcp_rmr_query(void *prmr, uint32_t *rkey)
{
	struct tcp_mr *mw = prmr;

	*rkey = atomic_load(&slot_at(mw->t, mw->idx)->rkey);
	return 0;
}

/**
 * tcp_mw_bind - point a window at a range of an LMR, or unbind it
 * @prmr: the window
 * @plmr: the LMR (struct tcp_mr), or NULL to unbind
 * @addr: the window's first byte (a virtual address inside the LMR)
 * @length: its bytes
 * @access: RAPT_MEM_REMOTE_* (a subset of the LMR's: the core checks)
 * @rkey: output, the new key (bind only)
 *
 * The old binding, if any, ends first (its key dies, its pins drain), so
 * a rebind never leaves two keys to one window.
 *
 * Return: 0.
 */
int tcp_mw_bind(void *prmr, void *plmr, uint64_t addr, uint64_t length,
		uint32_t access, uint32_t *rkey)
{
	struct tcp_mr *mw = prmr, *mr = plmr;
	struct tcp_stag_table *t = mw->t;
	struct tcp_stag_slot *s;
	uint32_t key;

	pthread_mutex_lock(&t->lock);
	s = slot_at(t, mw->idx);
	mw_unbind(t, s);
	if (mr) {
		s->gen++;
		s->addr = (uint8_t *)(uintptr_t)addr;
		s->length = length;
		s->access = access;
		s->bound_to = mr->idx + 1;
		slot_at(t, mr->idx)->nbound++;
		key = stag_key(t, mw->idx, s->gen, t->rtag);
		/* Publish the range before the key. */
		atomic_store(&s->rkey, key);
		*rkey = key;
	}
	pthread_mutex_unlock(&t->lock);
	return 0;
}
