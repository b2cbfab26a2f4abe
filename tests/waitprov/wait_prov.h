/* SPDX-License-Identifier: MIT */
/*
 * The "wait" fixture provider's test hooks (wait_prov.c).  The test
 * program finds them with dlsym() in the same DSO the core loaded.
 */
#ifndef RAPT_TESTS_WAIT_PROV_H
#define RAPT_TESTS_WAIT_PROV_H

#include <pthread.h>
#include <stdint.h>

struct rapt_evd;

struct wait_prov_stats {
	uint64_t pushed;		/* events pushed */
	uint64_t trywait_block;		/* evd_trywait(RAPT_PROV_WAIT_BLOCK) */
	uint64_t trywait_fd;		/* evd_trywait(RAPT_PROV_WAIT_FD) */
	uint64_t trywait_eagain;	/* ... that found work pending */
	uint64_t wait_done;		/* evd_wait_done */
	int sleeping;			/* BLOCK trywaits not yet done */
	uint64_t rings;			/* doorbell writes */
	uint64_t progress_calls;	/* evd_progress (and wait_done) */
	uint64_t taken;			/* rapt_prov_evd_taken() */
	pthread_t last_pusher;		/* thread of the last push */
};

/* Add @n pending completions to the EVD; ring the doorbell if armed. */
typedef int (*wait_prov_inject_fn)(struct rapt_evd *evd, unsigned int n);
/* Read the EVD's counters. */
typedef int (*wait_prov_stats_fn)(struct rapt_evd *evd,
				  struct wait_prov_stats *st);

int wait_prov_inject(struct rapt_evd *evd, unsigned int n);
int wait_prov_stats(struct rapt_evd *evd, struct wait_prov_stats *st);
/* Make evd_trywait fail with @status (0: work again). */
typedef int (*wait_prov_fail_fn)(struct rapt_evd *evd, int status);
int wait_prov_fail_trywait(struct rapt_evd *evd, int status);
/* Call @fn(@arg) once, in the thread of the next evd_trywait(BLOCK)
 * that lets it sleep, once armed: what may happen between the arming
 * and the sleep. */
typedef void (*wait_prov_hook_fn)(void *arg);
typedef int (*wait_prov_on_trywait_fn)(struct rapt_evd *evd,
				       wait_prov_hook_fn fn, void *arg);
int wait_prov_on_trywait(struct rapt_evd *evd, wait_prov_hook_fn fn,
			 void *arg);

#endif /* RAPT_TESTS_WAIT_PROV_H */
