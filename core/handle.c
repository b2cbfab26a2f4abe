/* SPDX-License-Identifier: MIT */
/*
 * The handle table.
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
 */
#include "config.h"

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
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t free_head = NO_SLOT;
static uint32_t nslots;

void rapt__ctl_lock(void)
{
	pthread_mutex_lock(&ctl_lock);
}

void rapt__ctl_unlock(void)
{
	pthread_mutex_unlock(&ctl_lock);
}

static struct rapt_slot *slot_at(uint32_t idx)
{
	struct rapt_slot *c;

	c = atomic_load_explicit(&rapt__chunks[idx >> CHUNK_BITS],
				 memory_order_acquire);

	return c ? &c[idx & (CHUNK_SLOTS - 1)] : NULL;
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

int rapt__obj_register(struct rapt_obj *o, uint32_t cls,
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
	atomic_init(&o->users, 0);
	atomic_store_explicit(&s->obj, o, memory_order_relaxed);
	atomic_store_explicit(&s->handle, o->handle, memory_order_release);
	pthread_mutex_unlock(&table_lock);
	if (parent)
		rapt__obj_hold(parent);
	return 0;
}

void rapt__obj_unregister(struct rapt_obj *o)
{
	uint32_t idx = (uint32_t)(o->handle & RAPT_HANDLE_IDX_MASK);
	struct rapt_slot *s;

	pthread_mutex_lock(&table_lock);
	s = slot_at(idx);
	/* s->obj stays: a racing lean lookup must find an object. */
	atomic_store_explicit(&s->handle, 0, memory_order_release);
	s->next_free = free_head;
	free_head = idx;
	pthread_mutex_unlock(&table_lock);
	if (o->parent)
		rapt__obj_put(o->parent);
	o->handle = 0;
}

static const char *const cls_names[RAPT_CLS_MAX] = {
	[RAPT_CLS_IA] = "IA", [RAPT_CLS_PZ] = "PZ", [RAPT_CLS_LMR] = "LMR",
	[RAPT_CLS_EVD] = "EVD", [RAPT_CLS_EP] = "EP", [RAPT_CLS_PSP] = "PSP",
	[RAPT_CLS_CR] = "CR",
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
	if (obj->cls != cls)
		return rapt__fail(RAPT_EHANDLETYPE,
				  "an %s handle was passed where an %s handle is needed",
				  cls_name(obj->cls), cls_name(cls));
	*o = obj;
	return 0;
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
	*type = (enum rapt_handle_type)o->cls;
	return 0;
}
