/* SPDX-License-Identifier: MIT */
/*
 * verbs layer: a mutex in one futex word, for the locks taken on every
 * post and every poll (an EP's send and receive rings, an EVD's poll
 * lock).  Uncontended, a lock is one compare-and-swap and an unlock one
 * exchange, a few instructions each, where a pthread_mutex_t pair costs
 * about 57 (callgrind, docs/performance.md).  The word is 0 free, 1 held,
 * 2 held with perhaps a sleeper; a contended lock spins a little (the
 * holders are short), then sleeps on the futex.
 */
#ifndef RAPT_VB_LOCK_H
#define RAPT_VB_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

struct vb_lock {
	_Atomic uint32_t v;
};

void vb_lock_wait(struct vb_lock *l);
void vb_lock_wake(struct vb_lock *l);

static inline void vb_lock_init(struct vb_lock *l)
{
	atomic_init(&l->v, 0);
}

static inline void vb_lock(struct vb_lock *l)
{
	uint32_t c = 0;

	if (__builtin_expect(!atomic_compare_exchange_strong_explicit(
			&l->v, &c, 1, memory_order_acquire,
			memory_order_relaxed), 0))
		vb_lock_wait(l);
}

static inline void vb_unlock(struct vb_lock *l)
{
	if (__builtin_expect(atomic_exchange_explicit(&l->v, 0,
						      memory_order_release) !=
			     1, 0))
		vb_lock_wake(l);
}

#endif /* RAPT_VB_LOCK_H */
