/* SPDX-License-Identifier: MIT */
/*
 * The "fakeops" provider (tests/fake/fake_ops.c with fake_prov.c): every
 * object op is a small thread-safe stub that counts its calls, and any op
 * can be told to block until the test releases it.  The core's locking
 * tests use it to hold one thread inside a provider op while others work.
 *
 * The test reaches the control table below through dlsym() on the loaded
 * DSO (fakeops exports it; the other fakes do not).
 */
#ifndef RAPT_TESTS_FAKE_OPS_H
#define RAPT_TESTS_FAKE_OPS_H

#include <time.h>

#include <rapt/provider.h>

#define FAKE_CTL_SYMBOL "fake_ctl"

/* The CLOCK_REALTIME time @ms from now, for pthread_cond_timedwait(). */
static inline void fake_deadline(struct timespec *end, int ms)
{
	clock_gettime(CLOCK_REALTIME, end);
	end->tv_sec += ms / 1000;
	end->tv_nsec += (long)(ms % 1000) * 1000000;
	if (end->tv_nsec >= 1000000000) {
		end->tv_sec++;
		end->tv_nsec -= 1000000000;
	}
}

enum fake_op {
	FAKE_PZ_CREATE,
	FAKE_PZ_FREE,
	FAKE_LMR_CREATE,
	FAKE_LMR_FREE,
	FAKE_EVD_CREATE,
	FAKE_EVD_FREE,
	FAKE_EP_CREATE,
	FAKE_EP_FREE,
	FAKE_PSP_CREATE,
	FAKE_PSP_FREE,
	FAKE_CR_ACCEPT,
	FAKE_CR_REJECT,
	FAKE_NOPS,
};

/* Provider objects of one kind that exist now (created, not yet freed). */
enum fake_kind {
	FAKE_K_PZ,
	FAKE_K_LMR,
	FAKE_K_EVD,
	FAKE_K_EP,
	FAKE_K_PSP,
	FAKE_K_REQ,		/* requests handed to the core, not ended */
	FAKE_NKINDS,
};

/**
 * struct fake_ctl - what a test can do to the fakeops provider
 * @reset: forget counts and hooks (no call may be blocked)
 * @block: the next @n calls of @op block inside the op until released
 * @wait_blocked: wait until @n calls are blocked in @op; 0, or -1 when
 *                @timeout_ms passed first
 * @release: let every blocked call of @op return; block no more
 * @calls: how many times @op was called since the last reset
 * @live: how many provider objects of @kind exist
 * @cr_raise: a request arrives on the newest PSP (which may still be in
 *            its psp_create); returns what rapt_prov_cr_arrive() did
 * @cr_cancel: the requester of the oldest request not yet ended goes
 *             away: rapt_prov_cr_cancel(), then the request is freed;
 *             returns -1 if there is none
 * @cr_bad: cr_accept/cr_reject calls that got a PSP object other than
 *          their request's, or a request already ended
 */
struct fake_ctl {
	void (*reset)(void);
	void (*block)(enum fake_op op, unsigned int n);
	int (*wait_blocked)(enum fake_op op, unsigned int n, int timeout_ms);
	void (*release)(enum fake_op op);
	unsigned int (*calls)(enum fake_op op);
	int (*live)(enum fake_kind kind);
	int (*cr_raise)(void);
	int (*cr_cancel)(void);
	unsigned int (*cr_bad)(void);
};

/* The object ops, for fake_prov.c's table. */
int fake_pz_create(void *pia, void **ppz);
int fake_pz_free(void *ppz);
int fake_lmr_create(void *pia, void *ppz, void *addr, size_t length,
		    uint32_t access, struct rapt_lmr_info *info, void **plmr);
int fake_lmr_free(void *plmr);
int fake_evd_create(void *pia, struct rapt_core_evd *cevd, uint32_t qlen,
		    uint32_t streams, void **pevd);
int fake_evd_free(void *pevd);
int fake_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
		   struct rapt_ep *handle, const struct rapt_ep_attr *attr,
		   void *recv_pevd, void *req_pevd, void *conn_pevd,
		   void **pep);
int fake_ep_free(void *pep);
int fake_psp_create(void *pia, struct rapt_core_psp *cpsp,
		    uint64_t service_id, const struct rapt_psp_attr *attr,
		    void *cr_pevd, uint64_t *bound_id, void **ppsp);
int fake_psp_free(void *ppsp);
int fake_cr_accept(void *ppsp, struct rapt_core_cr *ccr, void *pep,
		   const void *pdata, size_t pdata_len);
int fake_cr_reject(void *ppsp, struct rapt_core_cr *ccr, const void *pdata,
		   size_t pdata_len);

#define FAKE_OBJECT_OPS							\
	.pz_create = fake_pz_create,					\
	.pz_free = fake_pz_free,					\
	.lmr_create = fake_lmr_create,					\
	.lmr_free = fake_lmr_free,					\
	.evd_create = fake_evd_create,					\
	.evd_free = fake_evd_free,					\
	.ep_create = fake_ep_create,					\
	.ep_free = fake_ep_free,					\
	.psp_create = fake_psp_create,					\
	.psp_free = fake_psp_free,					\
	.cr_accept = fake_cr_accept,					\
	.cr_reject = fake_cr_reject

/* Exported by fakeops: the control table. */
RAPT_PROVIDER_EXPORT const struct fake_ctl *fake_ctl(void);

#endif /* RAPT_TESTS_FAKE_OPS_H */
