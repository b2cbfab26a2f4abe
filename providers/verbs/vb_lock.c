/* SPDX-License-Identifier: MIT */
/*
 * verbs layer: the contended half of vb_lock.h (U. Drepper, "Futexes
 * Are Tricky", the third mutex): whoever finds the lock held marks the
 * word 2 and sleeps while it stays so; an unlock that finds 2 wakes one
 * sleeper, which marks 2 again when it takes the lock (another may
 * sleep behind it).
 */
#include "config.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vb_lock.h"

/* Tries before sleeping: a holder posts or dispatches a few completions. */
#define VB_LOCK_SPINS 64

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

void vb_lock_wait(struct vb_lock *l)
{
	uint32_t c;
	int i;

	for (i = 0; i < VB_LOCK_SPINS; i++) {
		cpu_relax();
		c = 0;
		if (atomic_load_explicit(&l->v, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_strong_explicit(
			    &l->v, &c, 1, memory_order_acquire,
			    memory_order_relaxed))
			return;
	}
	while (atomic_exchange_explicit(&l->v, 2, memory_order_acquire))
		syscall(SYS_futex, &l->v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL,
			0);
}

void vb_lock_wake(struct vb_lock *l)
{
	syscall(SYS_futex, &l->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
