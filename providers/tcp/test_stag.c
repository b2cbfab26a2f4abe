/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: unit tests of the STag table (tcp_mem.c), linked in
 * directly: key shape and uniqueness, O(1) lookup, bounds, rights,
 * invalidation, the PZ association, reuse after free, lmr_free
 * waiting for a pin, and memory windows (lookup, key rotation,
 * invalidation, the LMR kept while a window is bound).
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "tcp.h"

#define NREG 5000

static struct tcp_ia ia;
static uint8_t region[4096];

static int suite_init(void)
{
	memset(&ia, 0, sizeof(ia));
	return tcp_stags_create(&ia.stags) ? -1 : 0;
}

static int suite_fini(void)
{
	tcp_stags_destroy(ia.stags);
	return 0;
}

static void *reg(void *addr, size_t len, uint32_t access,
		 struct rapt_lmr_info *info)
{
	void *mr = NULL;

	CU_ASSERT_EQUAL_FATAL(tcp_lmr_create(&ia, NULL, addr, len, access,
					     info, &mr), 0);
	return mr;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Keys are never 0 or the RTR STag, never repeat among live regions,
 * and do not count up. */
static void test_key_shape(void)
{
	static void *mr[NREG];
	static uint32_t keys[2 * NREG];
	struct rapt_lmr_info info;
	uint32_t i, ascending = 0;

	for (i = 0; i < NREG; i++) {
		mr[i] = reg(region, sizeof(region), RAPT_MEM_REMOTE_READ,
			    &info);
		CU_ASSERT(info.lkey != 0 && info.lkey != TCP_RTR_STAG);
		CU_ASSERT(info.rkey != 0 && info.rkey != TCP_RTR_STAG);
		CU_ASSERT(info.lkey != info.rkey);
		CU_ASSERT_EQUAL(info.raddr, (uint64_t)(uintptr_t)region);
		keys[2 * i] = info.lkey;
		keys[2 * i + 1] = info.rkey;
		if (i && info.rkey == keys[2 * i - 1] + 1)
			ascending++;
	}
	CU_ASSERT(ascending < NREG / 10);
	qsort(keys, 2 * NREG, sizeof(keys[0]), cmp_u32);
	for (i = 1; i < 2 * NREG; i++)
		CU_ASSERT_NOT_EQUAL(keys[i], keys[i - 1]);
	for (i = 0; i < NREG; i++)
		CU_ASSERT_EQUAL(tcp_lmr_free(mr[i]), 0);
}

/* Bounds and rights, through the pinned and the unpinned lookups. */
static void test_bounds_rights(void)
{
	struct rapt_lmr_info info;
	struct tcp_stag_slot *pin;
	uint64_t base = (uintptr_t)region + 100;
	uint8_t ecode = 0xaa;
	void *mr;
	uint8_t *p;

	mr = reg(region + 100, 1000, RAPT_MEM_REMOTE_WRITE |
		 RAPT_MEM_LOCAL_WRITE, &info);
	/* whole region, one byte at each end, zero bytes at the end */
	CU_ASSERT_PTR_EQUAL(tcp_rkey_resolve(&ia, NULL, info.rkey, base, 1000,
					     RAPT_MEM_REMOTE_WRITE, &ecode),
			    region + 100);
	CU_ASSERT_PTR_NOT_NULL(tcp_rkey_resolve(&ia, NULL, info.rkey,
						base + 999, 1,
						RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_PTR_NOT_NULL(tcp_rkey_resolve(&ia, NULL, info.rkey,
						base + 1000, 0,
						RAPT_MEM_REMOTE_WRITE, &ecode));
	/* one byte out on either side */
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, info.rkey, base - 1, 1,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_BASE_BOUNDS);
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, info.rkey,
					    base + 1, 1000,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_BASE_BOUNDS);
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, info.rkey,
					    base, 1ull << 40,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	/* a TO that wraps */
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, info.rkey,
					    UINT64_MAX - 3, 8,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_TO_WRAP);
	/* rights */
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, info.rkey, base, 10,
					    RAPT_MEM_REMOTE_READ, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_ACCESS);
	/* wrong keys: the lkey is no rkey, a neighbour key is nothing */
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, info.lkey, base, 10,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_INVALID_STAG);
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, info.rkey ^ 1, base, 10,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, 0, base, 0,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, TCP_RTR_STAG, base, 0,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	/* local keys */
	p = tcp_mem_lkey(&ia, NULL, info.lkey, base + 10, 20,
			 RAPT_MEM_LOCAL_WRITE, &pin);
	CU_ASSERT_PTR_EQUAL(p, region + 110);
	tcp_mem_put(pin);
	CU_ASSERT_PTR_NULL(tcp_mem_lkey(&ia, NULL, info.rkey, base, 1, 0,
					&pin));
	{
		struct rapt_sge sgl[2] = {
			{ base, 500, info.lkey },
			{ base + 500, 501, info.lkey },
		};

		CU_ASSERT_EQUAL(tcp_sge_check(&ia, NULL, sgl, 1,
					      RAPT_MEM_LOCAL_WRITE), 0);
		CU_ASSERT_EQUAL(tcp_sge_check(&ia, NULL, sgl, 2, 0),
				RAPT_DTO_LOCAL_PROTECTION);
	}
	CU_ASSERT_EQUAL(tcp_lmr_free(mr), 0);
	/* no local write right */
	mr = reg(region, 10, 0, &info);
	CU_ASSERT_PTR_NULL(tcp_mem_lkey(&ia, NULL, info.lkey,
					(uintptr_t)region, 1,
					RAPT_MEM_LOCAL_WRITE, &pin));
	CU_ASSERT_PTR_NOT_NULL(tcp_mem_lkey(&ia, NULL, info.lkey,
					    (uintptr_t)region, 1, 0, &pin));
	tcp_mem_put(pin);
	CU_ASSERT_EQUAL(tcp_lmr_free(mr), 0);
}

/* Freed keys stay dead, also after their slot is reused. */
static void test_free_reuse(void)
{
	struct rapt_lmr_info a, b;
	uint8_t ecode;
	void *mr;
	int i;

	mr = reg(region, 64, RAPT_MEM_REMOTE_READ, &a);
	CU_ASSERT_EQUAL(tcp_lmr_free(mr), 0);
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, a.rkey,
					    (uintptr_t)region, 1,
					    RAPT_MEM_REMOTE_READ, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_INVALID_STAG);
	for (i = 0; i < 100; i++) {
		mr = reg(region, 64, RAPT_MEM_REMOTE_READ, &b);
		CU_ASSERT_NOT_EQUAL(b.rkey, a.rkey);
		CU_ASSERT_NOT_EQUAL(b.lkey, a.lkey);
		CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, a.rkey,
						    (uintptr_t)region, 1,
						    RAPT_MEM_REMOTE_READ,
						    &ecode));
		CU_ASSERT_PTR_NOT_NULL(tcp_rkey_resolve(&ia, NULL, b.rkey,
							(uintptr_t)region, 1,
							RAPT_MEM_REMOTE_READ,
							&ecode));
		CU_ASSERT_EQUAL(tcp_lmr_free(mr), 0);
	}
}

static void test_invalidate(void)
{
	struct rapt_lmr_info info;
	struct tcp_stag_slot *pin;
	uint8_t ecode;
	void *mr;

	mr = reg(region, 64, RAPT_MEM_REMOTE_WRITE | RAPT_MEM_LOCAL_WRITE,
		 &info);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, NULL, info.rkey), 0);
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, info.rkey,
					    (uintptr_t)region,
					    1, RAPT_MEM_REMOTE_WRITE, &ecode));
	/* the lkey still works; invalidating twice is fine; unknown keys
	 * and lkeys are refused */
	CU_ASSERT_PTR_NOT_NULL(tcp_mem_lkey(&ia, NULL, info.lkey,
					    (uintptr_t)region, 1,
					    RAPT_MEM_LOCAL_WRITE, &pin));
	tcp_mem_put(pin);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, NULL, info.rkey), 0);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, NULL, info.rkey ^ 0x5),
			RAPT_ENOENT);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, NULL, info.lkey), RAPT_ENOENT);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, NULL, 0), RAPT_ENOENT);
	CU_ASSERT_EQUAL(tcp_lmr_free(mr), 0);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, NULL, info.rkey), RAPT_ENOENT);
}

/* A key serves only EPs of its region's PZ: another PZ gets "not
 * associated" before bounds or rights are looked at, and cannot
 * invalidate it. */
static void test_pz(void)
{
	static const struct tcp_pz pz_a, pz_b;
	struct rapt_lmr_info info;
	struct tcp_stag_slot *pin;
	uint8_t ecode = 0xaa;
	void *mr = NULL;

	CU_ASSERT_EQUAL_FATAL(tcp_lmr_create(&ia, (void *)&pz_a, region, 64,
					     RAPT_MEM_REMOTE_WRITE |
					     RAPT_MEM_REMOTE_READ, &info,
					     &mr), 0);
	CU_ASSERT_PTR_NOT_NULL(tcp_rkey_resolve(&ia, &pz_a, info.rkey,
						(uintptr_t)region, 64,
						RAPT_MEM_REMOTE_READ, &ecode));
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, &pz_b, info.rkey,
					    (uintptr_t)region, 64,
					    RAPT_MEM_REMOTE_READ, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_STAG_NOT_ASSOC);
	ecode = 0xaa;
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, info.rkey,
					    (uintptr_t)region + 60, 64,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_STAG_NOT_ASSOC);
	CU_ASSERT_PTR_NULL(tcp_mem_rkey(&ia, &pz_b, info.rkey,
					(uintptr_t)region, 1,
					RAPT_MEM_REMOTE_WRITE, &ecode, &pin));
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, &pz_b, info.rkey),
			RAPT_EACCES);
	CU_ASSERT_PTR_NOT_NULL(tcp_rkey_resolve(&ia, &pz_a, info.rkey,
						(uintptr_t)region, 1,
						RAPT_MEM_REMOTE_WRITE, &ecode));
	/* the lkey too serves only its own PZ */
	{
		struct rapt_sge g = { (uintptr_t)region, 8, info.lkey };

		CU_ASSERT_PTR_NULL(tcp_mem_lkey(&ia, &pz_b, info.lkey,
						(uintptr_t)region, 8, 0, &pin));
		CU_ASSERT_EQUAL(tcp_sge_check(&ia, &pz_b, &g, 1, 0),
				RAPT_DTO_LOCAL_PROTECTION);
		CU_ASSERT_EQUAL(tcp_sge_check(&ia, &pz_a, &g, 1, 0), 0);
	}
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, &pz_a, info.rkey), 0);
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, &pz_a, info.rkey,
					    (uintptr_t)region, 1,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_INVALID_STAG);
	CU_ASSERT_EQUAL(tcp_lmr_free(mr), 0);
}

static void *win(void)
{
	void *mw = NULL;

	CU_ASSERT_EQUAL_FATAL(tcp_rmr_create(&ia, NULL, &mw), 0);
	return mw;
}

static uint32_t win_bind(void *mw, void *mr, uint64_t addr, uint64_t len,
			 uint32_t access)
{
	uint32_t k = 0;

	CU_ASSERT_EQUAL(tcp_mw_bind(mw, mr, addr, len, access, &k), 0);
	CU_ASSERT(k != 0 && k != TCP_RTR_STAG);
	return k;
}

static uint32_t live_key(void *mw)
{
	uint32_t k = ~0u;

	CU_ASSERT_EQUAL(tcp_rmr_query(mw, &k), 0);
	return k;
}

/* A window's key reaches exactly its range with its rights, through the
 * same checks and Terminate codes as an LMR's; the LMR's keys are its
 * own; an unbound window's key is nothing. */
static void test_window_lookup(void)
{
	uint64_t base = (uintptr_t)region, wb = base + 1024;
	struct rapt_lmr_info info;
	struct tcp_stag_slot *pin;
	uint8_t ecode = 0xaa;
	uint32_t k;
	void *mr, *mw;

	mr = reg(region, 4096, RAPT_MEM_REMOTE_WRITE | RAPT_MEM_REMOTE_READ |
		 RAPT_MEM_LOCAL_WRITE, &info);
	mw = win();
	CU_ASSERT_EQUAL(live_key(mw), 0);
	k = win_bind(mw, mr, wb, 256, RAPT_MEM_REMOTE_WRITE);
	CU_ASSERT(k != info.rkey && k != info.lkey);
	CU_ASSERT_EQUAL(live_key(mw), k);
	CU_ASSERT_PTR_EQUAL(tcp_rkey_resolve(&ia, NULL, k, wb, 256,
					     RAPT_MEM_REMOTE_WRITE, &ecode),
			    region + 1024);
	CU_ASSERT_PTR_NOT_NULL(tcp_rkey_resolve(&ia, NULL, k, wb + 255, 1,
						RAPT_MEM_REMOTE_WRITE,
						&ecode));
	/* a byte out on either side: inside the LMR, outside the window */
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, k, wb - 1, 1,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_BASE_BOUNDS);
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, k, wb + 1, 256,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_BASE_BOUNDS);
	/* a right the LMR has and the window was not given */
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, k, wb, 1,
					    RAPT_MEM_REMOTE_READ, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_ACCESS);
	/* no local use, and the LMR's keys are untouched */
	CU_ASSERT_PTR_NULL(tcp_mem_lkey(&ia, NULL, k, wb, 1, 0, &pin));
	CU_ASSERT_PTR_NOT_NULL(tcp_rkey_resolve(&ia, NULL, info.rkey, base,
						4096, RAPT_MEM_REMOTE_READ,
						&ecode));
	/* the LMR cannot go while the window is bound */
	CU_ASSERT_EQUAL(tcp_lmr_free(mr), RAPT_EBUSY);
	CU_ASSERT_EQUAL(tcp_mw_bind(mw, NULL, 0, 0, 0, NULL), 0);
	CU_ASSERT_EQUAL(live_key(mw), 0);
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, k, wb, 1,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_INVALID_STAG);
	CU_ASSERT_EQUAL(tcp_rmr_free(mw), 0);
	CU_ASSERT_EQUAL(tcp_lmr_free(mr), 0);
}

/* Every bind has a new key and kills the last one, for thousands of
 * binds; a rebind over another LMR moves the LMR's busy count along. */
static void test_window_rotation(void)
{
	struct rapt_lmr_info info;
	uint32_t k, prev = 0, first;
	uint8_t ecode;
	void *mr, *mr2, *mw;
	int i;

	mr = reg(region, 64, RAPT_MEM_REMOTE_WRITE, &info);
	mr2 = reg(region, 64, RAPT_MEM_REMOTE_WRITE, &info);
	mw = win();
	first = win_bind(mw, mr, (uintptr_t)region, 64, RAPT_MEM_REMOTE_WRITE);
	prev = first;
	for (i = 0; i < 4000; i++) {
		k = win_bind(mw, i & 1 ? mr : mr2, (uintptr_t)region, 64,
			 RAPT_MEM_REMOTE_WRITE);
		CU_ASSERT_NOT_EQUAL(k, prev);
		CU_ASSERT_NOT_EQUAL(k, first);
		CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, prev,
						    (uintptr_t)region, 1,
						    RAPT_MEM_REMOTE_WRITE,
						    &ecode));
		CU_ASSERT_PTR_NOT_NULL(tcp_rkey_resolve(&ia, NULL, k,
							(uintptr_t)region, 1,
							RAPT_MEM_REMOTE_WRITE,
							&ecode));
		prev = k;
	}
	/* the last bind (i = 3999) is over mr: mr2 is free to go */
	CU_ASSERT_EQUAL(tcp_lmr_free(mr2), 0);
	CU_ASSERT_EQUAL(tcp_lmr_free(mr), RAPT_EBUSY);
	/* freeing a bound window unbinds it */
	CU_ASSERT_EQUAL(tcp_rmr_free(mw), 0);
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, NULL, prev,
					    (uintptr_t)region, 1,
					    RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_EQUAL(tcp_lmr_free(mr), 0);
}

/* Send with Invalidate of a window: only its PZ may, only its current
 * key works, twice is fine, and the LMR is free again after. */
static void test_window_invalidate(void)
{
	static const struct tcp_pz pz_a, pz_b;
	struct rapt_lmr_info info;
	uint32_t k, k2;
	uint8_t ecode;
	void *mr = NULL, *mw = NULL;

	CU_ASSERT_EQUAL_FATAL(tcp_lmr_create(&ia, (void *)&pz_a, region, 64,
					     RAPT_MEM_REMOTE_WRITE, &info,
					     &mr), 0);
	CU_ASSERT_EQUAL_FATAL(tcp_rmr_create(&ia, (void *)&pz_a, &mw), 0);
	k = win_bind(mw, mr, (uintptr_t)region, 64, RAPT_MEM_REMOTE_WRITE);
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, &pz_b, k, (uintptr_t)region,
					    1, RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_STAG_NOT_ASSOC);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, &pz_b, k), RAPT_EACCES);
	CU_ASSERT_EQUAL(live_key(mw), k);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, &pz_a, k ^ 0x7),
			RAPT_ENOENT);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, &pz_a, k), 0);
	CU_ASSERT_EQUAL(live_key(mw), 0);
	CU_ASSERT_PTR_NULL(tcp_rkey_resolve(&ia, &pz_a, k, (uintptr_t)region,
					    1, RAPT_MEM_REMOTE_WRITE, &ecode));
	CU_ASSERT_EQUAL(ecode, TCP_TERM_RDMAP_INVALID_STAG);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, &pz_a, k), 0);
	/* the LMR's own key was never touched */
	CU_ASSERT_PTR_NOT_NULL(tcp_rkey_resolve(&ia, &pz_a, info.rkey,
						(uintptr_t)region, 1,
						RAPT_MEM_REMOTE_WRITE,
						&ecode));
	/* a rebind after an invalidation: a new key; the old stays dead */
	k2 = win_bind(mw, mr, (uintptr_t)region, 8, RAPT_MEM_REMOTE_WRITE);
	CU_ASSERT_NOT_EQUAL(k2, k);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, &pz_a, k), RAPT_ENOENT);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, &pz_a, k2), 0);
	CU_ASSERT_EQUAL(tcp_lmr_free(mr), 0);
	CU_ASSERT_EQUAL(tcp_rmr_free(mw), 0);
	CU_ASSERT_EQUAL(tcp_rkey_invalidate(&ia, &pz_a, k2), RAPT_ENOENT);
}

struct free_arg {
	void *mr;
	atomic_int done;
};

static void *free_thread(void *p)
{
	struct free_arg *a = p;

	tcp_lmr_free(a->mr);
	atomic_store(&a->done, 1);
	return NULL;
}

/* rapt_lmr_free() does not return while the data path touches the region,
 * and the key is dead for new lookups at once. */
static void test_free_waits_for_pin(void)
{
	struct rapt_lmr_info info;
	struct tcp_stag_slot *pin;
	struct free_arg a = { 0 };
	pthread_t th;
	uint8_t ecode;
	int i;

	a.mr = reg(region, 64, RAPT_MEM_REMOTE_WRITE, &info);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tcp_mem_rkey(&ia, NULL, info.rkey,
						  (uintptr_t)region, 64,
						  RAPT_MEM_REMOTE_WRITE, &ecode,
						  &pin));
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, free_thread, &a), 0);
	/* No sleep-then-hope: wait (however long the freeing thread takes
	 * to be scheduled) until it has killed the key, so it is inside
	 * tcp_lmr_free(); the pin we hold must keep it there. */
	for (i = 0; tcp_rkey_resolve(&ia, NULL, info.rkey, (uintptr_t)region,
				     1, RAPT_MEM_REMOTE_WRITE, &ecode); i++)
		sched_yield();
	CU_ASSERT_EQUAL(atomic_load(&a.done), 0);
	for (i = 0; i < 1000; i++)	/* and it stays there */
		sched_yield();
	CU_ASSERT_EQUAL(atomic_load(&a.done), 0);
	tcp_mem_put(pin);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(atomic_load(&a.done), 1);
}

static void *unbind_thread(void *p)
{
	struct free_arg *a = p;

	tcp_mw_bind(a->mr, NULL, 0, 0, 0, NULL);
	atomic_store(&a->done, 1);
	return NULL;
}

/* An unbind (or a rebind, or a Send with Invalidate: the same path) does
 * not return while the data path touches the window, and its key is dead
 * for new lookups at once. */
static void test_unbind_waits_for_pin(void)
{
	struct rapt_lmr_info info;
	struct tcp_stag_slot *pin;
	struct free_arg a = { 0 };
	pthread_t th;
	uint8_t ecode;
	uint32_t k;
	void *mr;
	int i;

	mr = reg(region, 64, RAPT_MEM_REMOTE_WRITE, &info);
	a.mr = win();
	k = win_bind(a.mr, mr, (uintptr_t)region, 64, RAPT_MEM_REMOTE_WRITE);
	CU_ASSERT_PTR_NOT_NULL_FATAL(tcp_mem_rkey(&ia, NULL, k,
						  (uintptr_t)region, 64,
						  RAPT_MEM_REMOTE_WRITE, &ecode,
						  &pin));
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, unbind_thread, &a),
			      0);
	for (i = 0; tcp_rkey_resolve(&ia, NULL, k, (uintptr_t)region, 1,
				     RAPT_MEM_REMOTE_WRITE, &ecode); i++)
		sched_yield();
	CU_ASSERT_EQUAL(atomic_load(&a.done), 0);
	for (i = 0; i < 1000; i++)
		sched_yield();
	CU_ASSERT_EQUAL(atomic_load(&a.done), 0);
	tcp_mem_put(pin);
	pthread_join(th, NULL);
	CU_ASSERT_EQUAL(atomic_load(&a.done), 1);
	CU_ASSERT_EQUAL(tcp_lmr_free(mr), 0);
	CU_ASSERT_EQUAL(tcp_rmr_free(a.mr), 0);
}

int main(void)
{
	CU_pSuite s;
	unsigned int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("tcp_stag", suite_init, suite_fini);
	CU_add_test(s, "key shape and uniqueness", test_key_shape);
	CU_add_test(s, "bounds and rights", test_bounds_rights);
	CU_add_test(s, "free and reuse", test_free_reuse);
	CU_add_test(s, "invalidate", test_invalidate);
	CU_add_test(s, "PZ association", test_pz);
	CU_add_test(s, "free waits for a pin", test_free_waits_for_pin);
	CU_add_test(s, "window lookup", test_window_lookup);
	CU_add_test(s, "window key rotation", test_window_rotation);
	CU_add_test(s, "window invalidate", test_window_invalidate);
	CU_add_test(s, "window unbind waits for a pin",
		    test_unbind_waits_for_pin);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures() + CU_get_number_of_suites_failed();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
