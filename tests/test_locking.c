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
#define FAKE_DSO RAPT_TEST_FAKEDIR "/librapt-fakeops-pv1.so"
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
 * Everything another thread may do on the IA while one create is held in
 * the provider: objects of its own come and go; the held create's PZ and
 * IA are busy.
 */
static void do_others(struct job *j)
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
	/* what the held ep_create uses; a held lmr_create uses no EVD */
	r[10] = j->arg ? rapt_evd_free(j->f->conn) : RAPT_EBUSY;
}

static void held_create(enum fake_op op, void (*create)(struct job *),
			bool uses_evd)
{
	struct job held, other;
	struct fix f;
	int i;

	CU_ASSERT_EQUAL_FATAL(fix_open(&f), 0);
	if (while_held(op, &f, &held, create, NULL, &other, do_others,
		       uses_evd ? &f : NULL)) {
		for (i = 0; i < 8; i++)
			CU_ASSERT_EQUAL(other.res[i], 0);
		CU_ASSERT_EQUAL(other.res[8], RAPT_EBUSY);
		CU_ASSERT_EQUAL(other.res[9], RAPT_EBUSY);
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
	snprintf(link_path, sizeof(link_path), "%s/librapt-fakeops-pv1.so",
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
