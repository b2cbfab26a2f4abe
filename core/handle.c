/* SPDX-License-Identifier: MIT */
/*
 * The handle table, and the life of every object in it.
 *
 * Consumers never hold pointers into rapt: a handle is a value made of a
 * slot index, the object's class and the slot's generation.  Resolving one
 * compares the whole value with what the slot holds now, so NULL, freed,
 * reused and wrong-class handles are told apart without reading through a
 * pointer that may already be freed.
 *
 * Slots live in fixed chunks that never move, so the data path resolves a
 * handle inline (rapt__obj_fast() in rapt_int.h) with a few loads and two
 * compares and takes no lock.
 *
 * LOCKING.  No core lock is held across a provider op, and no lock is
 * process-wide except table_lock, which only guards the free list for a
 * few instructions.  Instead every slot carries a state word,
 *
 *	generation (32 bits) | DYING (1 bit) | users (31 bits)
 *
 * changed only by compare-and-swap.  Slots never go away, so a thread may
 * CAS the word of an object that another thread is freeing: the
 * generation in the word tells it apart from whatever reuses the slot.
 *
 * - users counts what keeps the object alive: its children and the
 *   objects that reference it (an EP its EVDs, a PSP its CR EVD, a CR its
 *   PSP), and every control call working on it right now.  A control
 *   call takes its objects with rapt__obj_get(), which adds a user unless
 *   the object is DYING, and drops them with rapt__obj_put().  A create
 *   keeps the user it took on its parent (and EVDs) for its child's life.
 * - A free starts with rapt__obj_kill(): users 0 -> DYING in one CAS, or
 *   RAPT_EBUSY (users left) or RAPT_EBADHANDLE (DYING already: another
 *   free won).  A DYING object takes no new user, so from then on no new
 *   call finds it, no child attaches to it, and nobody else is inside it:
 *   the provider's free op runs alone, then the slot is released and the
 *   memory freed.  If the provider's free fails, rapt__obj_revive() makes
 *   the object usable again.
 * - A create reserves its slot (rapt__obj_reserve(): the handle value is
 *   known, so the provider may be given it, but no lookup matches it),
 *   runs the provider's create op, and publishes the handle only after
 *   that (rapt__obj_publish()).
 *
 * So a provider op that blocks holds up only the calls that need the very
 * objects it holds; a create racing its parent's free either holds the
 * parent first (the free returns RAPT_EBUSY) or finds it DYING and fails
 * before it reaches the provider; of two frees of one object one wins and
 * the other gets RAPT_EBADHANDLE.  Per-object mutexes (ep->lock,
 * psp->lock, cr->lock, ia->lock) guard their fields, never a provider op.
 *
 * Calls that do not pin (the data path, rapt_evd_*(), rapt_context_*(),
 * rapt_handle_type()) resolve with rapt__obj_fast()/rapt__obj_lookup() as
 * before: freeing an object while another thread is still inside such a
 * call on it is the consumer's race.
 */
#include "config.h"

#include <sched.h>
#include <stdlib.h>

#include "rapt_int.h"

#define CHUNK_BITS RAPT_CHUNK_BITS
#define CHUNK_SLOTS RAPT_CHUNK_SLOTS
#define NCHUNKS RAPT_NCHUNKS
#define NO_SLOT UINT32_MAX

_Static_assert(sizeof(void *) == sizeof(uint64_t),
	       "handles are 64-bit values carried in pointer types");

/*
 * rapt__obj_fast() (rapt_int.h) reads these without a lock.  Only the
 * first NCHUNKS entries are used; the rest stay NULL (see rapt_int.h).
 */
struct rapt_slot *_Atomic rapt__chunks[RAPT_CHUNK_KEYS];

/*
 * Slot 0 is never handed out.  Its handle, all ones, has class 0xff and
 * index 0xffffff, so neither lookup can match it: the lean one would need
 * class 0xff, the precise one looks at slot 0xffffff.  Its object has no
 * class either, for good measure.
 */
#define SLOT0_HANDLE UINT64_MAX
static struct rapt_obj obj_none = { .cls = RAPT_CLS_MAX };

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t free_head = NO_SLOT;
static uint32_t nslots;

/* The state word of a slot (see the top of this file). */
#define ST_DYING	(1ull << 31)
#define ST_USERS	(ST_DYING - 1)
#define ST_GEN(gen)	((uint64_t)(gen) << 32)
#define ST_GEN_OF(v)	((uint32_t)((v) >> 32))

static struct rapt_slot *slot_at(uint32_t idx)
{
	struct rapt_slot *c;

	c = atomic_load_explicit(&rapt__chunks[idx >> CHUNK_BITS],
				 memory_order_acquire);

	return c ? &c[idx & (CHUNK_SLOTS - 1)] : NULL;
}

/* The slot of a reserved object (its chunk exists). */
static struct rapt_slot *obj_slot(const struct rapt_obj *o)
{
	return slot_at((uint32_t)(o->handle & RAPT_HANDLE_IDX_MASK));
}

/* Called with table_lock held. */
static int slot_alloc(uint32_t *idx)
{
	struct rapt_slot *c;

	if (free_head != NO_SLOT) {
		*idx = free_head;
		free_head = slot_at(free_head)->next_free;
		return 0;
	}
	if (nslots >= CHUNK_SLOTS * NCHUNKS)
		return RAPT_ENOMEM;
	if (!(nslots & (CHUNK_SLOTS - 1))) {
		c = calloc(CHUNK_SLOTS, sizeof(*c));
		if (!c)
			return RAPT_ENOMEM;
		if (!nslots) {
			/* Slot 0 is never handed out (see above). */
			atomic_init(&c[0].handle, SLOT0_HANDLE);
			atomic_init(&c[0].obj, &obj_none);
			nslots = 1;
		}
		atomic_store_explicit(&rapt__chunks[nslots >> CHUNK_BITS], c,
				      memory_order_release);
	}
	*idx = nslots++;
	return 0;
}

int rapt__obj_reserve(struct rapt_obj *o, uint32_t cls,
		      struct rapt_obj *parent, struct rapt_core_ia *ia)
{
	struct rapt_slot *s;
	uint32_t idx;
	int ret;

	pthread_mutex_lock(&table_lock);
	ret = slot_alloc(&idx);
	if (ret) {
		pthread_mutex_unlock(&table_lock);
		return rapt__fail(ret, "handle table is full");
	}
	s = slot_at(idx);
	if (++s->gen == 0)
		s->gen = 1;
	o->cls = cls;
	o->parent = parent;
	o->ia = ia;
	o->handle = ((uint64_t)s->gen << 32) |
		    ((uint64_t)cls << RAPT_HANDLE_IDX_BITS) | idx;
	atomic_store_explicit(&s->obj, o, memory_order_relaxed);
	atomic_store_explicit(&s->state, ST_GEN(s->gen), memory_order_relaxed);
	pthread_mutex_unlock(&table_lock);
	return 0;
}

void rapt__obj_publish(struct rapt_obj *o)
{
	struct rapt_slot *s = obj_slot(o);

	atomic_store_explicit(&s->handle, o->handle, memory_order_release);
}

void rapt__obj_unregister(struct rapt_obj *o)
{
	uint32_t idx = (uint32_t)(o->handle & RAPT_HANDLE_IDX_MASK);
	uint32_t gen = (uint32_t)(o->handle >> 32);
	struct rapt_slot *s;

	pthread_mutex_lock(&table_lock);
	s = slot_at(idx);
	/* s->obj stays: a racing lean lookup must find an object. */
	atomic_store_explicit(&s->handle, 0, memory_order_release);
	atomic_store_explicit(&s->state, ST_GEN(gen) | ST_DYING,
			      memory_order_release);
	s->next_free = free_head;
	free_head = idx;
	pthread_mutex_unlock(&table_lock);
	if (o->parent)
		rapt__obj_put(o->parent);
	o->handle = 0;
}

void rapt__obj_hold(struct rapt_obj *o)
{
	atomic_fetch_add_explicit(&obj_slot(o)->state, 1,
				  memory_order_relaxed);
}

void rapt__obj_put(struct rapt_obj *o)
{
	atomic_fetch_sub_explicit(&obj_slot(o)->state, 1,
				  memory_order_release);
}

void rapt__obj_revive(struct rapt_obj *o)
{
	atomic_fetch_and_explicit(&obj_slot(o)->state, ~ST_DYING,
				  memory_order_release);
}

void rapt__obj_drain(struct rapt_obj *o, unsigned int held)
{
	struct rapt_slot *s = obj_slot(o);

	atomic_fetch_or_explicit(&s->state, ST_DYING, memory_order_relaxed);
	while ((atomic_load_explicit(&s->state, memory_order_acquire) &
		ST_USERS) > held)
		sched_yield();
}

static const char *const cls_names[RAPT_CLS_MAX] = {
	[RAPT_CLS_IA] = "IA", [RAPT_CLS_PZ] = "PZ", [RAPT_CLS_LMR] = "LMR",
	[RAPT_CLS_EVD] = "EVD", [RAPT_CLS_EP] = "EP", [RAPT_CLS_PSP] = "PSP",
	[RAPT_CLS_CR] = "CR", [RAPT_CLS_RSP] = "RSP",
	[RAPT_CLS_SRQ] = "SRQ",
	[RAPT_CLS_RMR] = "RMR",
};

static const char *cls_name(uint32_t cls)
{
	return cls < RAPT_CLS_MAX && cls_names[cls] ? cls_names[cls] : "?";
}

/* Resolve @h to its slot's live object, or NULL. */
static struct rapt_obj *resolve(uint64_t h, uint64_t *live)
{
	struct rapt_slot *s;

	*live = 0;
	if (!h)
		return NULL;
	s = slot_at((uint32_t)(h & RAPT_HANDLE_IDX_MASK));
	if (!s)
		return NULL;
	*live = atomic_load_explicit(&s->handle, memory_order_acquire);
	if (*live != h)
		return NULL;
	return atomic_load_explicit(&s->obj, memory_order_relaxed);
}

int rapt__obj_lookup_any(const void *handle, struct rapt_obj **o)
{
	uint64_t h = (uint64_t)(uintptr_t)handle, live;
	struct rapt_obj *obj;

	if (!h)
		return rapt__fail(RAPT_EBADHANDLE, "NULL handle");
	obj = resolve(h, &live);
	if (!obj)
		return rapt__fail(RAPT_EBADHANDLE,
				  "handle %#llx is stale or was never created",
				  (unsigned long long)h);
	*o = obj;
	return 0;
}

int rapt__obj_lookup(const void *handle, uint32_t cls, struct rapt_obj **o)
{
	uint64_t h = (uint64_t)(uintptr_t)handle;
	struct rapt_obj *obj;
	int ret;

	ret = rapt__obj_lookup_any(handle, &obj);
	if (ret) {
		if (h)
			rapt__fail(ret, "%s handle %#llx is stale or was never created",
				   cls_name(cls), (unsigned long long)h);
		else
			rapt__fail(ret, "NULL %s handle", cls_name(cls));
		return ret;
	}
	/* The live handle names the class: nothing is read through @obj,
	 * which another thread may be freeing (rapt__obj_get() pins it). */
	if (RAPT_HANDLE_CLS(h) != cls)
		return rapt__fail(RAPT_EHANDLETYPE,
				  "an %s handle was passed where an %s handle is needed",
				  cls_name(RAPT_HANDLE_CLS(h)), cls_name(cls));
	*o = obj;
	return 0;
}

/*
 * Add a user to the object of generation @gen in @s unless it is DYING or
 * the slot has moved on to another object.
 */
static bool state_pin(struct rapt_slot *s, uint32_t gen)
{
	uint64_t v = atomic_load_explicit(&s->state, memory_order_relaxed);

	do {
		if (ST_GEN_OF(v) != gen || (v & ST_DYING))
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&s->state, &v, v + 1,
							memory_order_acquire,
							memory_order_relaxed));
	return true;
}

static int gone(uint32_t cls, uint64_t h)
{
	return rapt__fail(RAPT_EBADHANDLE, "%s handle %#llx is being freed",
			  cls_name(cls), (unsigned long long)h);
}

int rapt__obj_get(const void *handle, uint32_t cls, struct rapt_obj **o)
{
	uint64_t h = (uint64_t)(uintptr_t)handle;
	struct rapt_obj *obj;
	int ret;

	ret = rapt__obj_lookup(handle, cls, &obj);
	if (ret)
		return ret;
	if (!state_pin(slot_at((uint32_t)(h & RAPT_HANDLE_IDX_MASK)),
		       (uint32_t)(h >> 32)))
		return gone(cls, h);
	/* Pinned with the generation @h names: @obj is that object. */
	*o = obj;
	return 0;
}

int rapt__obj_kill(const void *handle, uint32_t cls, const char *users_what,
		   struct rapt_obj **o)
{
	uint64_t h = (uint64_t)(uintptr_t)handle, v;
	uint32_t gen = (uint32_t)(h >> 32);
	struct rapt_slot *s;
	struct rapt_obj *obj;
	int ret;

	ret = rapt__obj_lookup(handle, cls, &obj);
	if (ret)
		return ret;
	s = slot_at((uint32_t)(h & RAPT_HANDLE_IDX_MASK));
	v = ST_GEN(gen);
	if (atomic_compare_exchange_strong_explicit(&s->state, &v,
						    v | ST_DYING,
						    memory_order_acquire,
						    memory_order_relaxed)) {
		*o = obj;
		return 0;
	}
	if (ST_GEN_OF(v) != gen || (v & ST_DYING))
		return gone(cls, h);
	return rapt__fail(RAPT_EBUSY, "%s is still used by %u %s",
			  cls_name(cls), (unsigned int)(v & ST_USERS),
			  users_what);
}

RAPT_API int rapt_context_set(void *handle, void *context)
{
	struct rapt_obj *o;
	int ret = rapt__obj_lookup_any(handle, &o);

	if (ret)
		return ret;
	__atomic_store_n(&o->context, context, __ATOMIC_RELEASE);
	return 0;
}

RAPT_API int rapt_context_get(void *handle, void **context)
{
	struct rapt_obj *o;
	int ret = rapt__obj_lookup_any(handle, &o);

	if (ret)
		return ret;
	if (!context)
		return rapt__fail(RAPT_EINVAL, "rapt_context_get: NULL output");
	*context = __atomic_load_n(&o->context, __ATOMIC_ACQUIRE);
	return 0;
}

RAPT_API int rapt_handle_type(void *handle, enum rapt_handle_type *type)
{
	struct rapt_obj *o;
	int ret = rapt__obj_lookup_any(handle, &o);

	if (ret)
		return ret;
	if (!type)
		return rapt__fail(RAPT_EINVAL, "rapt_handle_type: NULL output");
	*type = (enum rapt_handle_type)RAPT_HANDLE_CLS(
			(uint64_t)(uintptr_t)handle);
	return 0;
}
