/* SPDX-License-Identifier: MIT */
/*
 * The core's locking, through the public API on the "fakeops" provider
 * (tests/fake/fake_ops.c), whose ops can be held inside the provider:
 *
 * - a provider op that blocks in one thread stops no other thread's calls
 *   on other objects of the same IA;
 * - what a blocked create or free holds answers at once: its parent or
 *   EVD is busy, its own handle is gone;
 * - creating and freeing children while their parent is being freed keeps
 *   the counts right.
 *
 * Every wait is bounded: calls that should complete while an op is held,
 * and do not within WAIT_MS, are a failure; the held op is then released
 * so the test ends either way.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>
#include <rapt/rapt.h>

#include "fake/fake_ops.h"

#define WAIT_MS 10000
#define IA_NAME "fakeops:d2"
#define FAKE_DSO RAPT_TEST_FAKEDIR "/librapt-fakeops-pv2.so"
#define NRES 16

static const struct fake_ctl *ctl;

/* ------------------------------------------------------------------ */
/* Fixture                                                             */
/* ------------------------------------------------------------------ */

struct fix {
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_evd *conn;	/* connection events, for EPs */
};

static char buf[4096];

static int fix_open(struct fix *f)
{
	memset(f, 0, sizeof(*f));
	ctl->reset();
	if (rapt_ia_open(IA_NAME, &f->ia))
		return -1;
	if (rapt_pz_create(f->ia, &f->pz) ||
	    rapt_evd_create(f->ia, 64, RAPT_EVD_CONNECTION, &f->conn))
		return -1;
	return 0;
}

static void fix_close(struct fix *f)
{
	CU_ASSERT_EQUAL(rapt_evd_free(f->conn), 0);
	if (f->pz) {
		CU_ASSERT_EQUAL(rapt_pz_free(f->pz), 0);
	}
	CU_ASSERT_EQUAL(rapt_ia_close(f->ia), 0);
}

/*
 * A call run on its own thread, so that the test can wait for it with a
 * bound.  @res holds what the calls returned, @out what they created.
 */
struct job {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	void (*fn)(struct job *);
	struct fix *f;
	void *arg;
	int res[NRES];
	void *out;
};

static void *job_main(void *p)
{
	struct job *j = p;

	j->fn(j);
	pthread_mutex_lock(&j->lock);
	j->done = true;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

static void job_start(struct job *j, void (*fn)(struct job *), struct fix *f,
		      void *arg)
{
	memset(j, 0, sizeof(*j));
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	j->fn = fn;
	j->f = f;
	j->arg = arg;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&j->thread, NULL, job_main, j),
			      0);
}

/* Return: true if @j finished within @ms. */
static bool job_wait(struct job *j, int ms)
{
	struct timespec end;
	bool done;
	int ret = 0;

	fake_deadline(&end, ms);
	pthread_mutex_lock(&j->lock);
	while (!j->done && !ret)
		ret = pthread_cond_timedwait(&j->cond, &j->lock, &end);
	done = j->done;
	pthread_mutex_unlock(&j->lock);
	return done;
}

static void job_join(struct job *j)
{
	pthread_join(j->thread, NULL);
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->lock);
}

/*
 * Hold the next call of @op in the provider: start it as @held (@hfn on
 * @harg), and once it is held, run @ofn on @oarg as @other, which must
 * finish before the hold is released.  Then release it; the caller joins
 * @held.  Return: true if @other ran (its results may be checked).
 */
static bool while_held(enum fake_op op, struct fix *f, struct job *held,
		       void (*hfn)(struct job *), void *harg,
		       struct job *other, void (*ofn)(struct job *),
		       void *oarg)
{
	ctl->block(op, 1);
	job_start(held, hfn, f, harg);
	if (ctl->wait_blocked(op, 1, WAIT_MS)) {
		fprintf(stderr, "provider op %d was never called\n", (int)op);
		CU_FAIL("the held call never reached the provider");
		ctl->release(op);
		return false;
	}
	job_start(other, ofn, f, oarg);
	if (!job_wait(other, WAIT_MS)) {
		fprintf(stderr, "calls on other objects did not return within "
			"%d ms while provider op %d was blocked\n", WAIT_MS,
			(int)op);
		CU_FAIL("a blocked provider op stopped another thread's calls");
	}
	ctl->release(op);
	job_join(other);
	return true;
}

/* ------------------------------------------------------------------ */
/* A blocked create stops nobody else                                  */
/* ------------------------------------------------------------------ */

static void do_lmr_create(struct job *j)
{
	struct rapt_lmr *lmr = NULL;

	j->res[0] = rapt_lmr_create(j->f->pz, buf, sizeof(buf),
				    RAPT_MEM_LOCAL_WRITE, &lmr, NULL);
	j->out = lmr;
}

static void do_ep_create(struct job *j)
{
	struct rapt_ep *ep = NULL;

	j->res[0] = rapt_ep_create(j->f->pz, NULL, NULL, j->f->conn, NULL,
				   &ep);
	j->out = ep;
}

/*
 * Everything another thread may do on the IA while one call is held in
 * the provider: objects of its own come and go; the held call's PZ and
 * IA are busy (r[0..9]).
 */
static void others_common(struct job *j)
{
	struct rapt_pz *pz = NULL;
	struct rapt_lmr *lmr = NULL;
	struct rapt_evd *evd = NULL;
	struct rapt_ep *ep = NULL;
	int *r = j->res;

	r[0] = rapt_pz_create(j->f->ia, &pz);
	r[1] = rapt_lmr_create(pz, buf, sizeof(buf), 0, &lmr, NULL);
	r[2] = rapt_lmr_free(lmr);
	r[3] = rapt_evd_create(j->f->ia, 16, RAPT_EVD_CONNECTION, &evd);
	r[4] = rapt_ep_create(pz, NULL, NULL, evd, NULL, &ep);
	r[5] = rapt_ep_free(ep);
	r[6] = rapt_evd_free(evd);
	r[7] = rapt_pz_free(pz);
	r[8] = rapt_pz_free(j->f->pz);	/* a create on it is under way */
	r[9] = rapt_ia_close(j->f->ia);
}

static void do_others(struct job *j)
{
	others_common(j);
	/* what the held ep_create uses; a held lmr_create uses no EVD */
	j->res[10] = j->arg ? rapt_evd_free(j->f->conn) : RAPT_EBUSY;
}

static void expect_others(const struct job *other)
{
	int i;

	for (i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(other->res[i], 0);
	CU_ASSERT_EQUAL(other->res[8], RAPT_EBUSY);
	CU_ASSERT_EQUAL(other->res[9], RAPT_EBUSY);
}

static void held_create(enum fake_op op, void (*create)(struct job *),
			bool uses_evd)
{
	struct job held, other;
	struct fix f;

	CU_ASSERT_EQUAL_FATAL(fix_open(&f), 0);
	if (while_held(op, &f, &held, create, NULL, &other, do_others,
		       uses_evd ? &f : NULL)) {
		expect_others(&other);
		CU_ASSERT_EQUAL(other.res[10], RAPT_EBUSY);
	}
	job_join(&held);
	CU_ASSERT_EQUAL(held.res[0], 0);
	if (op == FAKE_LMR_CREATE) {
		CU_ASSERT_EQUAL(rapt_lmr_free(held.out), 0);
	} else {
		CU_ASSERT_EQUAL(rapt_ep_free(held.out), 0);
	}
	fix_close(&f);
}

static void test_held_lmr_create(void)
{
	held_create(FAKE_LMR_CREATE, do_lmr_create, false);
}

static void test_held_ep_create(void)
{
	held_create(FAKE_EP_CREATE, do_ep_create, true);
}

/* ------------------------------------------------------------------ */
/* What a held free holds                                              */
/* ------------------------------------------------------------------ */

static void do_lmr_free(struct job *j)
{
	j->res[0] = rapt_lmr_free(j->arg);
}

/* The handle being freed is already gone for everybody else. */
static void do_lmr_twice(struct job *j)
{
	struct rapt_lmr_info info;

	j->res[0] = rapt_lmr_free(j->arg);
	j->res[1] = rapt_lmr_query(j->arg, &info);
}

static void test_free_twice(void)
{
	struct rapt_lmr *lmr;
	struct job held, other;
	struct fix f;

	CU_ASSERT_EQUAL_FATAL(fix_open(&f), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_lmr_create(f.pz, buf, sizeof(buf), 0, &lmr,
					      NULL), 0);
	if (while_held(FAKE_LMR_FREE, &f, &held, do_lmr_free, lmr, &other,
		       do_lmr_twice, lmr)) {
		CU_ASSERT_EQUAL(other.res[0], RAPT_EBADHANDLE);
		CU_ASSERT_EQUAL(other.res[1], RAPT_EBADHANDLE);
	}
	job_join(&held);
	CU_ASSERT_EQUAL(held.res[0], 0);
	CU_ASSERT_EQUAL(ctl->calls(FAKE_LMR_FREE), 1);
	CU_ASSERT_EQUAL(ctl->live(FAKE_K_LMR), 0);
	fix_close(&f);
}

static void do_pz_free(struct job *j)
{
	j->res[0] = rapt_pz_free(j->f->pz);
}

static void do_evd_free(struct job *j)
{
	j->res[0] = rapt_evd_free(j->arg);
}

/* Children of a parent being freed: refused, never seen by the provider. */
static void do_orphan_creates(struct job *j)
{
	struct rapt_lmr *lmr;
	struct rapt_ep *ep;

	j->res[0] = rapt_lmr_create(j->f->pz, buf, sizeof(buf), 0, &lmr,
				    NULL);
	j->res[1] = rapt_ep_create(j->f->pz, NULL, NULL, j->f->conn, NULL,
				   &ep);
	j->res[2] = rapt_ia_close(j->f->ia);
}

static void test_create_on_dying_pz(void)
{
	struct job held, other;
	struct fix f;

	CU_ASSERT_EQUAL_FATAL(fix_open(&f), 0);
	if (while_held(FAKE_PZ_FREE, &f, &held, do_pz_free, NULL, &other,
		       do_orphan_creates, NULL)) {
		CU_ASSERT_EQUAL(other.res[0], RAPT_EBADHANDLE);
		CU_ASSERT_EQUAL(other.res[1], RAPT_EBADHANDLE);
		CU_ASSERT_EQUAL(other.res[2], RAPT_EBUSY);
	}
	job_join(&held);
	CU_ASSERT_EQUAL(held.res[0], 0);
	CU_ASSERT_EQUAL(ctl->calls(FAKE_LMR_CREATE), 0);
	CU_ASSERT_EQUAL(ctl->calls(FAKE_EP_CREATE), 0);
	f.pz = NULL;
	fix_close(&f);
}

static void do_ep_on_evd(struct job *j)
{
	struct rapt_ep *ep;

	j->res[0] = rapt_ep_create(j->f->pz, NULL, NULL, j->arg, NULL, &ep);
}

static void test_create_on_dying_evd(void)
{
	struct rapt_evd *evd;
	struct job held, other;
	struct fix f;

	CU_ASSERT_EQUAL_FATAL(fix_open(&f), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(f.ia, 8, RAPT_EVD_CONNECTION,
					      &evd), 0);
	if (while_held(FAKE_EVD_FREE, &f, &held, do_evd_free, evd, &other,
		       do_ep_on_evd, evd)) {
		CU_ASSERT_EQUAL(other.res[0], RAPT_EBADHANDLE);
	}
	job_join(&held);
	CU_ASSERT_EQUAL(held.res[0], 0);
	CU_ASSERT_EQUAL(ctl->calls(FAKE_EP_CREATE), 0);
	fix_close(&f);
}

/* ------------------------------------------------------------------ */
/* Connection requests                                                 */
/* ------------------------------------------------------------------ */

/* A listener on the fixture's IA, and an EP to accept with. */
struct crfix {
	struct rapt_evd *evd;	/* CR arrivals */
	struct rapt_psp *psp;
	struct rapt_ep *ep;
};

static void cr_open(struct fix *f, struct crfix *c)
{
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(f->ia, 256, RAPT_EVD_CR,
					      &c->evd), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_psp_create(f->ia, 77, c->evd, NULL,
					      &c->psp), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_ep_create(f->pz, NULL, NULL, f->conn, NULL,
					     &c->ep), 0);
}

static void cr_close(struct crfix *c)
{
	CU_ASSERT_EQUAL(rapt_ep_free(c->ep), 0);
	CU_ASSERT_EQUAL(rapt_psp_free(c->psp), 0);
	CU_ASSERT_EQUAL(rapt_evd_free(c->evd), 0);
}

/* The CR of the next CR_ARRIVAL on @evd, or NULL. */
static struct rapt_cr *next_cr(struct rapt_evd *evd, int ms)
{
	struct rapt_event ev;

	if (rapt_evd_wait(evd, (int64_t)ms * 1000, 1, &ev, NULL) ||
	    ev.type != RAPT_EV_CR_ARRIVAL)
		return NULL;
	return ev.u.cr.cr;
}

/* A request, delivered: its CR. */
static struct rapt_cr *raise_cr(struct crfix *c)
{
	struct rapt_cr *cr;

	CU_ASSERT_EQUAL_FATAL(ctl->cr_raise(), 0);
	cr = next_cr(c->evd, WAIT_MS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(cr);
	return cr;
}

static void test_cr_cancelled(void)
{
	struct rapt_psp_info pi;
	enum rapt_ep_state st;
	struct rapt_cr *cr;
	struct crfix c;
	struct fix f;

	CU_ASSERT_EQUAL_FATAL(fix_open(&f), 0);
	cr_open(&f, &c);
	cr = raise_cr(&c);
	CU_ASSERT_EQUAL(ctl->cr_cancel(), 0);
	CU_ASSERT_EQUAL(rapt_cr_accept(cr, c.ep, NULL, 0), RAPT_ENOTCONN);
	CU_ASSERT_EQUAL(rapt_cr_accept(cr, c.ep, NULL, 0), RAPT_EBADHANDLE);
	CU_ASSERT_EQUAL(rapt_ep_get_state(c.ep, &st), 0);
	CU_ASSERT_EQUAL(st, RAPT_EP_UNCONNECTED);
	cr = raise_cr(&c);
	CU_ASSERT_EQUAL(ctl->cr_cancel(), 0);
	CU_ASSERT_EQUAL(rapt_cr_reject(cr, "no", 2), RAPT_ENOTCONN);
	CU_ASSERT_EQUAL(rapt_cr_reject(cr, NULL, 0), RAPT_EBADHANDLE);
	CU_ASSERT_EQUAL(ctl->calls(FAKE_CR_ACCEPT), 0);
	CU_ASSERT_EQUAL(ctl->calls(FAKE_CR_REJECT), 0);
	/* and requests nobody cancelled do reach it, with their PSP */
	CU_ASSERT_EQUAL(rapt_cr_accept(raise_cr(&c), c.ep, NULL, 0), 0);
	CU_ASSERT_EQUAL(rapt_cr_reject(raise_cr(&c), NULL, 0), 0);
	CU_ASSERT_EQUAL(ctl->calls(FAKE_CR_ACCEPT), 1);
	CU_ASSERT_EQUAL(ctl->calls(FAKE_CR_REJECT), 1);
	CU_ASSERT_EQUAL(ctl->cr_bad(), 0);
	CU_ASSERT_EQUAL(ctl->live(FAKE_K_REQ), 0);
	CU_ASSERT_EQUAL(rapt_psp_query(c.psp, &pi, sizeof(pi)), 0);
	CU_ASSERT_EQUAL(pi.pending_crs, 0);
	CU_ASSERT_EQUAL(pi.accepted, 1);
	CU_ASSERT_EQUAL(pi.rejected, 1);
	cr_close(&c);
	fix_close(&f);
}

struct accept_arg {
	struct crfix *c;
	struct rapt_cr *cr;
};

static void do_accept(struct job *j)
{
	struct accept_arg *a = j->arg;

	j->res[0] = rapt_cr_accept(a->cr, a->c->ep, NULL, 0);
}

/* While an accept is held: its EP and PSP are busy, the rest goes on. */
static void do_others_accept(struct job *j)
{
	struct crfix *c = j->arg;
	struct rapt_cr *cr;

	others_common(j);
	j->res[10] = rapt_ep_free(c->ep);
	j->res[11] = rapt_psp_free(c->psp);
	j->res[12] = ctl->cr_raise();
	cr = next_cr(c->evd, WAIT_MS);
	j->res[13] = cr ? rapt_cr_reject(cr, NULL, 0) : RAPT_ETIMEDOUT;
}

static void test_held_cr_accept(void)
{
	struct accept_arg a;
	struct job held, other;
	struct crfix c;
	struct fix f;

	CU_ASSERT_EQUAL_FATAL(fix_open(&f), 0);
	cr_open(&f, &c);
	a.c = &c;
	a.cr = raise_cr(&c);
	if (while_held(FAKE_CR_ACCEPT, &f, &held, do_accept, &a, &other,
		       do_others_accept, &c)) {
		expect_others(&other);
		CU_ASSERT_EQUAL(other.res[10], RAPT_EBUSY);
		CU_ASSERT_EQUAL(other.res[11], RAPT_EBUSY);
		CU_ASSERT_EQUAL(other.res[12], 0);
		CU_ASSERT_EQUAL(other.res[13], 0);
	}
	job_join(&held);
	CU_ASSERT_EQUAL(held.res[0], 0);
	CU_ASSERT_EQUAL(ctl->calls(FAKE_CR_ACCEPT), 1);
	CU_ASSERT_EQUAL(ctl->calls(FAKE_CR_REJECT), 1);
	CU_ASSERT_EQUAL(ctl->cr_bad(), 0);
	cr_close(&c);
	fix_close(&f);
}

static void do_psp_create(struct job *j)
{
	struct rapt_psp *psp = NULL;

	j->res[0] = rapt_psp_create(j->f->ia, 78, j->arg, NULL, &psp);
	j->out = psp;
}

static void do_reject(struct job *j)
{
	j->res[0] = rapt_cr_reject(j->arg, NULL, 0);
}

/*
 * A request may reach the consumer before its PSP's psp_create returns;
 * deciding it waits for that, so the op gets the provider's PSP object.
 */
static void test_cr_before_psp(void)
{
	struct job held, decide;
	struct rapt_evd *evd;
	struct rapt_cr *cr;
	struct fix f;

	CU_ASSERT_EQUAL_FATAL(fix_open(&f), 0);
	CU_ASSERT_EQUAL_FATAL(rapt_evd_create(f.ia, 16, RAPT_EVD_CR, &evd),
			      0);
	ctl->block(FAKE_PSP_CREATE, 1);
	job_start(&held, do_psp_create, &f, evd);
	if (ctl->wait_blocked(FAKE_PSP_CREATE, 1, WAIT_MS)) {
		CU_FAIL("psp_create never reached the provider");
	} else {
		CU_ASSERT_EQUAL(ctl->cr_raise(), 0);
		cr = next_cr(evd, WAIT_MS);
		CU_ASSERT_PTR_NOT_NULL(cr);
		job_start(&decide, do_reject, &f, cr);
		/* a reject that returned now would have had no PSP object */
		CU_ASSERT_FALSE(job_wait(&decide, 200));
		ctl->release(FAKE_PSP_CREATE);
		CU_ASSERT_TRUE(job_wait(&decide, WAIT_MS));
		job_join(&decide);
		CU_ASSERT_EQUAL(decide.res[0], 0);
	}
	ctl->release(FAKE_PSP_CREATE);
	job_join(&held);
	CU_ASSERT_EQUAL(held.res[0], 0);
	CU_ASSERT_EQUAL(ctl->calls(FAKE_CR_REJECT), 1);
	CU_ASSERT_EQUAL(ctl->cr_bad(), 0);
	CU_ASSERT_EQUAL(rapt_psp_free(held.out), 0);
	CU_ASSERT_EQUAL(rapt_evd_free(evd), 0);
	fix_close(&f);
}

/* ------------------------------------------------------------------ */
/* Stress: requesters leave while their CRs are decided                */
/* ------------------------------------------------------------------ */

#define CR_STRESS 400

struct cr_stress {
	struct fix *f;
	struct crfix *c;
	atomic_uint raised;		/* CRs delivered */
	atomic_bool raising;
	unsigned int decided;		/* consumer thread only */
	unsigned int notconn;
	unsigned int bad;
};

/* The provider side: requests arrive, and every third requester leaves. */
static void *cr_stress_provider(void *p)
{
	struct cr_stress *st = p;
	int i = 0, ret;

	while (i < CR_STRESS) {
		ret = ctl->cr_raise();
		if (ret == RAPT_EBUSY) {	/* backlog full: let it drain */
			sched_yield();
			continue;
		}
		if (ret) {
			fprintf(stderr, "cr_raise: %d\n", ret);
			break;
		}
		atomic_fetch_add(&st->raised, 1);
		if (!(++i % 3))
			ctl->cr_cancel();
	}
	atomic_store(&st->raising, false);
	return NULL;
}

/* One decision: accept on a fresh EP, or reject. */
static void cr_stress_decide(struct cr_stress *st, struct rapt_cr *cr)
{
	struct rapt_ep *ep = NULL;
	int ret;

	if (st->decided % 4) {
		ret = rapt_cr_reject(cr, NULL, 0);
	} else {
		if (rapt_ep_create(st->f->pz, NULL, NULL, st->f->conn, NULL,
				   &ep)) {
			st->bad++;
			return;
		}
		ret = rapt_cr_accept(cr, ep, NULL, 0);
		if (rapt_ep_free(ep))
			st->bad++;
	}
	st->decided++;
	if (ret == RAPT_ENOTCONN)
		st->notconn++;
	else if (ret)
		st->bad++;
}

static void *cr_stress_consumer(void *p)
{
	struct cr_stress *st = p;
	struct rapt_cr *cr;

	while (atomic_load(&st->raising) ||
	       st->decided < atomic_load(&st->raised)) {
		cr = next_cr(st->c->evd, 10);
		if (cr)
			cr_stress_decide(st, cr);
	}
	return NULL;
}

static void test_stress_cr(void)
{
	struct rapt_psp_info pi;
	struct cr_stress st;
	pthread_t prov, cons;
	struct crfix c;
	struct fix f;

	CU_ASSERT_EQUAL_FATAL(fix_open(&f), 0);
	cr_open(&f, &c);
	memset(&st, 0, sizeof(st));
	st.f = &f;
	st.c = &c;
	atomic_init(&st.raising, true);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&prov, NULL, cr_stress_provider,
					     &st), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&cons, NULL, cr_stress_consumer,
					     &st), 0);
	pthread_join(prov, NULL);
	pthread_join(cons, NULL);
	CU_ASSERT_EQUAL(atomic_load(&st.raised), CR_STRESS);
	CU_ASSERT_EQUAL(st.decided, CR_STRESS);
	CU_ASSERT_EQUAL(st.bad, 0);
	CU_ASSERT(st.notconn <= CR_STRESS / 3);
	CU_ASSERT_EQUAL(ctl->cr_bad(), 0);
	CU_ASSERT_EQUAL(ctl->live(FAKE_K_REQ), 0);
	CU_ASSERT_EQUAL(rapt_psp_query(c.psp, &pi, sizeof(pi)), 0);
	CU_ASSERT_EQUAL(pi.pending_crs, 0);
	CU_ASSERT_EQUAL(pi.accepted + pi.rejected + st.notconn, CR_STRESS);
	cr_close(&c);
	fix_close(&f);
}

/* ------------------------------------------------------------------ */
/* Stress: children come and go while their parent is being freed      */
/* ------------------------------------------------------------------ */

#define STRESS_WORKERS 3
#define STRESS_ROUNDS 300

struct stress {
	struct fix *f;
	atomic_bool pz_gone;		/* a rapt_pz_free() returned 0 */
	atomic_uint workers_left;
	atomic_uint created;		/* children the core handed out */
	atomic_uint freed;
	atomic_uint bad;		/* results the rules do not allow */
	atomic_uint late;		/* created after the PZ was gone */
};

static void stress_note(struct stress *st, int ret, int allowed)
{
	if (ret && ret != allowed) {
		fprintf(stderr, "stress: unexpected status %d\n", ret);
		atomic_fetch_add(&st->bad, 1);
	}
}

/* One child: create (0, or EBADHANDLE once the PZ is gone), then free. */
static void stress_child(struct stress *st, bool ep)
{
	bool gone = atomic_load(&st->pz_gone);
	struct rapt_lmr *lmr;
	struct rapt_ep *e;
	int ret;

	if (ep)
		ret = rapt_ep_create(st->f->pz, NULL, NULL, st->f->conn, NULL,
				     &e);
	else
		ret = rapt_lmr_create(st->f->pz, buf, sizeof(buf), 0, &lmr,
				      NULL);
	stress_note(st, ret, RAPT_EBADHANDLE);
	if (ret)
		return;
	if (gone)
		atomic_fetch_add(&st->late, 1);
	atomic_fetch_add(&st->created, 1);
	ret = ep ? rapt_ep_free(e) : rapt_lmr_free(lmr);
	stress_note(st, ret, 0);
	if (!ret)
		atomic_fetch_add(&st->freed, 1);
}

static void *stress_worker(void *p)
{
	struct stress *st = p;
	int i;

	for (i = 0; i < STRESS_ROUNDS; i++)
		stress_child(st, i & 1);
	atomic_fetch_sub(&st->workers_left, 1);
	return NULL;
}

/* Free the PZ as soon as it has no child: EBUSY until then. */
static void *stress_freer(void *p)
{
	struct stress *st = p;
	int ret;

	do {
		ret = rapt_pz_free(st->f->pz);
		stress_note(st, ret, RAPT_EBUSY);
	} while (ret && atomic_load(&st->workers_left));
	if (!ret)
		atomic_store(&st->pz_gone, true);
	return NULL;
}

static void test_stress_pz_free(void)
{
	pthread_t w[STRESS_WORKERS], fr;
	struct stress st;
	struct fix f;
	int i;

	CU_ASSERT_EQUAL_FATAL(fix_open(&f), 0);
	memset(&st, 0, sizeof(st));
	st.f = &f;
	atomic_init(&st.workers_left, STRESS_WORKERS);
	for (i = 0; i < STRESS_WORKERS; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&w[i], NULL,
						     stress_worker, &st), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&fr, NULL, stress_freer, &st), 0);
	for (i = 0; i < STRESS_WORKERS; i++)
		pthread_join(w[i], NULL);
	pthread_join(fr, NULL);
	CU_ASSERT_EQUAL(atomic_load(&st.bad), 0);
	CU_ASSERT_EQUAL(atomic_load(&st.late), 0);
	CU_ASSERT_EQUAL(atomic_load(&st.created), atomic_load(&st.freed));
	CU_ASSERT_EQUAL(ctl->live(FAKE_K_LMR), 0);
	CU_ASSERT_EQUAL(ctl->live(FAKE_K_EP), 0);
	/* the freer gave up only when the workers had finished */
	if (!atomic_load(&st.pz_gone)) {
		CU_ASSERT_EQUAL(rapt_pz_free(f.pz), 0);
	}
	CU_ASSERT_EQUAL(ctl->calls(FAKE_PZ_FREE), 1);
	CU_ASSERT_EQUAL(ctl->live(FAKE_K_PZ), 0);
	f.pz = NULL;
	fix_close(&f);
}

/* ------------------------------------------------------------------ */

static const struct {
	const char *name;
	CU_TestFunc fn;
} tests[] = {
	{ "a held lmr_create stops no other call", test_held_lmr_create },
	{ "a held ep_create stops no other call", test_held_ep_create },
	{ "two frees at once: one wins, one EBADHANDLE", test_free_twice },
	{ "no child attaches to a PZ being freed", test_create_on_dying_pz },
	{ "no EP attaches to an EVD being freed", test_create_on_dying_evd },
	{ "stress: LMRs and EPs come and go while the PZ is freed",
	  test_stress_pz_free },
	{ "a CR the provider cancelled never reaches it", test_cr_cancelled },
	{ "a held cr_accept stops no other call", test_held_cr_accept },
	{ "a decision waits for its PSP's psp_create", test_cr_before_psp },
	{ "stress: requesters leave while their CRs are decided",
	  test_stress_cr },
};

static char dir[64];
static char link_path[128];

/*
 * Load the fake ourselves to reach its control table; the core's dlopen
 * of the same file then shares it.  The core looks in a directory of its
 * own that holds only this fake.
 */
static int suite_init(void)
{
	const struct fake_ctl *(*get)(void);
	void *dl;

	snprintf(dir, sizeof(dir), "/tmp/rapt-locking-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(link_path, sizeof(link_path), "%s/librapt-fakeops-pv2.so",
		 dir);
	if (symlink(FAKE_DSO, link_path))
		return -1;
	setenv("RAPT_PROVIDER_PATH", dir, 1);
	dl = dlopen(link_path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		fprintf(stderr, "cannot load %s: %s\n", FAKE_DSO, dlerror());
		return -1;
	}
	*(void **)&get = dlsym(dl, FAKE_CTL_SYMBOL);
	if (!get) {
		fprintf(stderr, "%s has no %s\n", FAKE_DSO, FAKE_CTL_SYMBOL);
		return -1;
	}
	ctl = get();
	return 0;
}

static int suite_clean(void)
{
	unlink(link_path);
	rmdir(dir);
	return 0;
}

int main(void)
{
	CU_pSuite s;
	unsigned int failed;
	size_t i;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("locking", suite_init, suite_clean);
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		CU_add_test(s, tests[i].name, tests[i].fn);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_tests_failed() +
		 CU_get_number_of_suites_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}
