/* SPDX-License-Identifier: MIT */
/*
 * The object ops of the "fakeops" provider (see fake_ops.h): stubs that
 * count their calls, keep a count of the objects alive, and block where
 * the test says.  Thread-safe: the core may call them from many threads.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fake_ops.h"

struct fake_hook {
	unsigned int calls;
	unsigned int to_block;		/* calls still to block */
	unsigned int blocked;		/* calls blocked now */
	unsigned int gen;		/* bumped by each release */
};

/* A provider object: only its kind, so that ASan sees any misuse. */
struct fake_obj {
	enum fake_kind kind;
};

/* A PSP: its core object, for the requests the test raises. */
struct fake_psp {
	struct fake_obj obj;		/* must stay first */
	struct rapt_core_psp *cpsp;
};

/* A request handed to the core, until a decision or a cancel ends it. */
struct fake_req {
	struct fake_req *next;
	struct fake_psp *psp;
	struct rapt_core_cr *ccr;
};

/*
 * fk.lock also serialises the requests: raising, cancelling and the
 * decision ops' rapt_prov_cr_request() all run under it, as a real
 * provider does on its event thread.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a call blocked, or a release */
	struct fake_hook hook[FAKE_NOPS];
	int live[FAKE_NKINDS];
	uint32_t key_seq;
	struct fake_psp *newest_psp;
	struct fake_req *reqs;		/* oldest first */
	unsigned int cr_bad;
} fk = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

/* Count a call of @op, and hold it here while the test wants it held. */
static void fake_enter(enum fake_op op)
{
	struct fake_hook *h = &fk.hook[op];
	unsigned int gen;

	pthread_mutex_lock(&fk.lock);
	h->calls++;
	if (h->to_block) {
		h->to_block--;
		h->blocked++;
		gen = h->gen;
		pthread_cond_broadcast(&fk.cond);
		while (h->gen == gen)
			pthread_cond_wait(&fk.cond, &fk.lock);
		h->blocked--;
	}
	pthread_mutex_unlock(&fk.lock);
}

static int fake_new(enum fake_kind kind, void **out)
{
	struct fake_obj *o = calloc(1, sizeof(*o));

	if (!o)
		return RAPT_ENOMEM;
	o->kind = kind;
	pthread_mutex_lock(&fk.lock);
	fk.live[kind]++;
	pthread_mutex_unlock(&fk.lock);
	*out = o;
	return 0;
}

static int fake_del(void *p, enum fake_kind kind)
{
	struct fake_obj *o = p;

	if (!o || o->kind != kind)
		return RAPT_EPROVIDER;
	pthread_mutex_lock(&fk.lock);
	fk.live[kind]--;
	pthread_mutex_unlock(&fk.lock);
	free(o);
	return 0;
}

int fake_pz_create(void *pia, void **ppz)
{
	fake_enter(FAKE_PZ_CREATE);
	return fake_new(FAKE_K_PZ, ppz);
}

int fake_pz_free(void *ppz)
{
	fake_enter(FAKE_PZ_FREE);
	return fake_del(ppz, FAKE_K_PZ);
}

int fake_lmr_create(void *pia, void *ppz, void *addr, size_t length,
		    uint32_t access, struct rapt_lmr_info *info, void **plmr)
{
	fake_enter(FAKE_LMR_CREATE);
	pthread_mutex_lock(&fk.lock);
	info->lkey = ++fk.key_seq;
	info->rkey = ++fk.key_seq;
	pthread_mutex_unlock(&fk.lock);
	info->raddr = (uintptr_t)addr;
	return fake_new(FAKE_K_LMR, plmr);
}

int fake_lmr_free(void *plmr)
{
	fake_enter(FAKE_LMR_FREE);
	return fake_del(plmr, FAKE_K_LMR);
}

int fake_evd_create(void *pia, struct rapt_core_evd *cevd, uint32_t qlen,
		    uint32_t streams, void **pevd)
{
	fake_enter(FAKE_EVD_CREATE);
	return fake_new(FAKE_K_EVD, pevd);
}

int fake_evd_free(void *pevd)
{
	fake_enter(FAKE_EVD_FREE);
	return fake_del(pevd, FAKE_K_EVD);
}

int fake_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
		   struct rapt_ep *handle, const struct rapt_ep_attr *attr,
		   void *recv_pevd, void *req_pevd, void *conn_pevd,
		   void **pep)
{
	fake_enter(FAKE_EP_CREATE);
	return fake_new(FAKE_K_EP, pep);
}

int fake_ep_free(void *pep)
{
	fake_enter(FAKE_EP_FREE);
	return fake_del(pep, FAKE_K_EP);
}

/* Requests may be raised on the PSP while this op is held. */
int fake_psp_create(void *pia, struct rapt_core_psp *cpsp,
		    uint64_t service_id, const struct rapt_psp_attr *attr,
		    void *cr_pevd, uint64_t *bound_id, void **ppsp)
{
	struct fake_psp *p = calloc(1, sizeof(*p));

	if (!p)
		return RAPT_ENOMEM;
	p->obj.kind = FAKE_K_PSP;
	p->cpsp = cpsp;
	pthread_mutex_lock(&fk.lock);
	fk.live[FAKE_K_PSP]++;
	fk.newest_psp = p;
	pthread_mutex_unlock(&fk.lock);
	fake_enter(FAKE_PSP_CREATE);
	*bound_id = service_id == RAPT_SERVICE_ID_ANY ? 4242 : service_id;
	*ppsp = p;
	return 0;
}

int fake_psp_free(void *ppsp)
{
	fake_enter(FAKE_PSP_FREE);
	pthread_mutex_lock(&fk.lock);
	if (fk.newest_psp == ppsp)
		fk.newest_psp = NULL;
	pthread_mutex_unlock(&fk.lock);
	return fake_del(ppsp, FAKE_K_PSP);
}

/* With fk.lock: take @req off the list; false if it is not there. */
static bool req_unlink(struct fake_req *req)
{
	struct fake_req **pp;

	for (pp = &fk.reqs; *pp; pp = &(*pp)->next) {
		if (*pp == req) {
			*pp = req->next;
			fk.live[FAKE_K_REQ]--;
			return true;
		}
	}
	return false;
}

/* A decision: it must get a live request of its own PSP, and ends it. */
static int fake_decide(enum fake_op op, void *ppsp, struct rapt_core_cr *ccr)
{
	struct fake_req *req;

	fake_enter(op);
	pthread_mutex_lock(&fk.lock);
	req = rapt_prov_cr_request(ccr);
	if (!req) {
		pthread_mutex_unlock(&fk.lock);
		return RAPT_ENOTCONN;
	}
	/* Looked up by address first: a request the core should never
	 * have handed back is not read. */
	if (!req_unlink(req) || (void *)req->psp != ppsp) {
		fk.cr_bad++;
		pthread_mutex_unlock(&fk.lock);
		return RAPT_EPROVIDER;
	}
	pthread_mutex_unlock(&fk.lock);
	free(req);
	return 0;
}

int fake_cr_accept(void *ppsp, struct rapt_core_cr *ccr, void *pep,
		   const void *pdata, size_t pdata_len)
{
	return fake_decide(FAKE_CR_ACCEPT, ppsp, ccr);
}

int fake_cr_reject(void *ppsp, struct rapt_core_cr *ccr, const void *pdata,
		   size_t pdata_len)
{
	return fake_decide(FAKE_CR_REJECT, ppsp, ccr);
}

/* ------------------------------------------------------------------ */
/* Control                                                             */
/* ------------------------------------------------------------------ */

static void ctl_reset(void)
{
	pthread_mutex_lock(&fk.lock);
	memset(fk.hook, 0, sizeof(fk.hook));
	fk.cr_bad = 0;
	pthread_mutex_unlock(&fk.lock);
}

static void ctl_block(enum fake_op op, unsigned int n)
{
	pthread_mutex_lock(&fk.lock);
	fk.hook[op].to_block = n;
	pthread_mutex_unlock(&fk.lock);
}

static int ctl_wait_blocked(enum fake_op op, unsigned int n, int timeout_ms)
{
	struct timespec end;
	int ret = 0;

	fake_deadline(&end, timeout_ms);
	pthread_mutex_lock(&fk.lock);
	while (fk.hook[op].blocked < n && !ret)
		ret = pthread_cond_timedwait(&fk.cond, &fk.lock, &end);
	ret = fk.hook[op].blocked < n ? -1 : 0;
	pthread_mutex_unlock(&fk.lock);
	return ret;
}

static void ctl_release(enum fake_op op)
{
	pthread_mutex_lock(&fk.lock);
	fk.hook[op].to_block = 0;
	fk.hook[op].gen++;
	pthread_cond_broadcast(&fk.cond);
	pthread_mutex_unlock(&fk.lock);
}

static unsigned int ctl_calls(enum fake_op op)
{
	unsigned int n;

	pthread_mutex_lock(&fk.lock);
	n = fk.hook[op].calls;
	pthread_mutex_unlock(&fk.lock);
	return n;
}

static int ctl_live(enum fake_kind kind)
{
	int n;

	pthread_mutex_lock(&fk.lock);
	n = fk.live[kind];
	pthread_mutex_unlock(&fk.lock);
	return n;
}

static int ctl_cr_raise(void)
{
	struct rapt_prov_request r;
	struct rapt_prov_verdict v;
	struct fake_req *req = calloc(1, sizeof(*req));
	int ret;

	if (!req)
		return RAPT_ENOMEM;
	memset(&r, 0, sizeof(r));
	pthread_mutex_lock(&fk.lock);
	req->psp = fk.newest_psp;
	ret = req->psp ? rapt_prov_cr_arrive(req->psp->cpsp, req, &r,
					     &req->ccr, &v) : RAPT_EINVAL;
	if (!ret) {
		struct fake_req **pp = &fk.reqs;

		while (*pp)
			pp = &(*pp)->next;
		*pp = req;
		fk.live[FAKE_K_REQ]++;
	}
	pthread_mutex_unlock(&fk.lock);
	if (ret)
		free(req);
	return ret;
}

static int ctl_cr_cancel(void)
{
	struct fake_req *req;

	pthread_mutex_lock(&fk.lock);
	req = fk.reqs;
	if (req) {
		req_unlink(req);
		rapt_prov_cr_cancel(req->ccr);
	}
	pthread_mutex_unlock(&fk.lock);
	free(req);
	return req ? 0 : -1;
}

static unsigned int ctl_cr_bad(void)
{
	unsigned int n;

	pthread_mutex_lock(&fk.lock);
	n = fk.cr_bad;
	pthread_mutex_unlock(&fk.lock);
	return n;
}

static const struct fake_ctl fake_ctl_ops = {
	.reset = ctl_reset,
	.block = ctl_block,
	.wait_blocked = ctl_wait_blocked,
	.release = ctl_release,
	.calls = ctl_calls,
	.live = ctl_live,
	.cr_raise = ctl_cr_raise,
	.cr_cancel = ctl_cr_cancel,
	.cr_bad = ctl_cr_bad,
};

const struct fake_ctl *fake_ctl(void)
{
	return &fake_ctl_ops;
}
