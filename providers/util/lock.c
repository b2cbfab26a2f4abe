/* SPDX-License-Identifier: MIT */
/*
 * rapt provider toolkit: the contended half of rapt_lock()
 * (<rapt/provider_util.h>).  Whoever finds the word held spins a little
 * (holders are short: a post, a few completions dispatched, one event
 * copied), then marks it 2 and sleeps while it stays so; an unlock that
 * finds 2 wakes one sleeper, which marks 2 again when it takes the lock
 * (another may sleep behind it).  librapt compiles this file too, for
 * its EVDs' ring lock.
 */
#include "config.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rapt/provider_util.h>

#define LOCK_SPINS 100

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* rapt_lock_wait - kernel-doc in <rapt/provider_util.h> */
void rapt_lock_wait(_Atomic uint32_t *word)
{
	uint32_t c;
	int i;

	for (i = 0; i < LOCK_SPINS; i++) {
		cpu_relax();
		c = 0;
		if (atomic_load_explicit(word, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_weak_explicit(word, &c, 1,
							  memory_order_acquire,
							  memory_order_relaxed))
			return;
	}
	while (atomic_exchange_explicit(word, 2, memory_order_acquire) != 0)
		syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, 2,
			NULL, NULL, 0);
}

/* rapt_lock_wake - kernel-doc in <rapt/provider_util.h> */
void rapt_lock_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, 1, NULL,
		NULL, 0);
}
