/* SPDX-License-Identifier: MIT */
/*
 * The "wait" provider: a fixture for the core's wait-object path (the
 * evd_wait_fd / evd_trywait / evd_wait_done ops), built for make check and
 * never installed.  It models a verbs CQ with a completion channel:
 *
 * - Each EVD has a doorbell, an eventfd: its wait object.
 * - wait_prov_inject() (called by the test, from any thread) adds pending
 *   completions, like the hardware writing CQEs, and rings the doorbell
 *   only if the EVD is armed; ringing disarms it (ibv_req_notify_cq is
 *   one-shot).
 * - evd_trywait arms, then reports RAPT_EAGAIN if completions are already
 *   pending (as a verbs consumer polls the CQ once after arming).
 * - evd_progress and evd_wait_done drain the doorbell and push every
 *   pending completion as a DTO event whose cookie counts up from 0.
 *
 * It has no thread of its own: every event reaches the core in a thread
 * that called into rapt.  A blocked rapt_evd_wait() that did not sleep on
 * the doorbell, or slept without arming it, would never see an event.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rapt/provider.h>

#include "wait_prov.h"

#define WP_NAME "wait"

struct wp_evd {
	struct rapt_core_evd *cevd;
	struct rapt_evd *handle;
	int doorbell;
	_Atomic uint64_t pending;
	_Atomic bool armed;
	_Atomic uint64_t next_cookie;
	_Atomic uint64_t pushed;
	_Atomic uint64_t trywait_block;
	_Atomic uint64_t trywait_fd;
	_Atomic uint64_t trywait_eagain;
	_Atomic uint64_t wait_done;
	_Atomic int sleeping;
	_Atomic uint64_t rings;
	_Atomic int fail_trywait;	/* a RAPT_E* code to fail with */
	/* Called once, by the next BLOCK trywait, in its thread. */
	_Atomic(wait_prov_hook_fn) on_trywait;
	void *on_trywait_arg;
	_Atomic uint64_t progress_calls;
	/* Taking and pushing completions is one step, as a CQ's poll lock
	 * makes it: events reach the core in cookie order. */
	pthread_mutex_t poll_lock;
	pthread_t last_pusher;		/* under lock */
	struct wp_evd *next;		/* on the list, under lock */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct wp_evd *evds;

static int wp_init(void **prov)
{
	*prov = NULL;
	return 0;
}

static void wp_fini(void *prov)
{
}

static int wp_get_devices(void *prov, struct rapt_prov_device **devs,
			  uint32_t *ndevs)
{
	struct rapt_prov_device *d = calloc(1, sizeof(*d));

	if (!d)
		return RAPT_ENOMEM;
	snprintf(d->name, sizeof(d->name), "dev");
	d->transport = RAPT_TRANSPORT_OTHER;
	d->rank = 2000;
	*devs = d;
	*ndevs = 1;
	return 0;
}

static int wp_ia_open(void *prov, const char *device, uint32_t port,
		      struct rapt_core_ia *cia, void **pia)
{
	*pia = cia;
	return 0;
}

static int wp_ia_close(void *pia)
{
	return 0;
}

static int wp_ia_query(void *pia, struct rapt_ia_attr *a)
{
	snprintf(a->provider, sizeof(a->provider), "%s", WP_NAME);
	snprintf(a->device, sizeof(a->device), "dev");
	a->transport = RAPT_TRANSPORT_OTHER;
	a->caps = RAPT_CAP_EVD_FD;
	a->max_evd_qlen = 1u << 16;
	a->service_id_min = 1;
	a->service_id_max = 65535;
	a->evd_merge[0] = RAPT_EVD_SOFTWARE;	/* DTO with SOFTWARE */
	a->evd_merge[4] = RAPT_EVD_DTO;
	return 0;
}

static int wp_evd_create(void *pia, struct rapt_core_evd *cevd, uint32_t qlen,
			 uint32_t streams, void **pevd)
{
	struct wp_evd *e = calloc(1, sizeof(*e));

	if (!e)
		return RAPT_ENOMEM;
	e->doorbell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->doorbell < 0) {
		free(e);
		return RAPT_EIO;
	}
	pthread_mutex_init(&e->poll_lock, NULL);
	e->cevd = cevd;
	e->handle = rapt_prov_evd_handle(cevd);
	pthread_mutex_lock(&lock);
	e->next = evds;
	evds = e;
	pthread_mutex_unlock(&lock);
	*pevd = e;
	return 0;
}

static int wp_evd_free(void *pevd)
{
	struct wp_evd *e = pevd, **pp;

	pthread_mutex_lock(&lock);
	for (pp = &evds; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	close(e->doorbell);
	pthread_mutex_destroy(&e->poll_lock);
	free(e);
	return 0;
}

/* Turn the pending completions into events, in the caller's thread. */
static int wp_evd_progress(void *pevd)
{
	struct rapt_event ev = { .type = RAPT_EV_DTO };
	struct wp_evd *e = pevd;
	uint64_t n, v;

	atomic_fetch_add(&e->progress_calls, 1);
	if (read(e->doorbell, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return RAPT_EIO;
	pthread_mutex_lock(&e->poll_lock);
	n = atomic_exchange(&e->pending, 0);
	if (n) {
		pthread_mutex_lock(&lock);
		e->last_pusher = pthread_self();
		pthread_mutex_unlock(&lock);
	}
	while (n--) {
		ev.u.dto.cookie = atomic_fetch_add(&e->next_cookie, 1);
		ev.u.dto.status = RAPT_DTO_SUCCESS;
		rapt_prov_evd_push(e->cevd, &ev);
		atomic_fetch_add(&e->pushed, 1);
	}
	pthread_mutex_unlock(&e->poll_lock);
	return 0;
}

static int wp_evd_wait_fd(void *pevd, int *fd)
{
	*fd = ((struct wp_evd *)pevd)->doorbell;
	return 0;
}

static int wp_evd_trywait(void *pevd, uint32_t how)
{
	struct wp_evd *e = pevd;

	if (how == RAPT_PROV_WAIT_BLOCK)
		atomic_fetch_add(&e->trywait_block, 1);
	else if (how == RAPT_PROV_WAIT_FD)
		atomic_fetch_add(&e->trywait_fd, 1);
	else
		return RAPT_EINVAL;
	if (atomic_load(&e->fail_trywait))
		return atomic_load(&e->fail_trywait);
	atomic_store(&e->armed, true);
	if (atomic_load(&e->pending)) {
		atomic_fetch_add(&e->trywait_eagain, 1);
		return RAPT_EAGAIN;
	}
	if (how == RAPT_PROV_WAIT_BLOCK) {
		wait_prov_hook_fn fn = atomic_exchange(&e->on_trywait, NULL);

		atomic_fetch_add(&e->sleeping, 1);
		if (fn)
			fn(e->on_trywait_arg);
	}
	return 0;
}

static int wp_evd_wait_done(void *pevd)
{
	struct wp_evd *e = pevd;

	atomic_fetch_sub(&e->sleeping, 1);
	atomic_fetch_add(&e->wait_done, 1);
	return wp_evd_progress(pevd);
}

static const struct rapt_prov_ops wp_ops = {
	.size = sizeof(struct rapt_prov_ops),
	.ia_open = wp_ia_open,
	.ia_close = wp_ia_close,
	.ia_query = wp_ia_query,
	.evd_create = wp_evd_create,
	.evd_free = wp_evd_free,
	.evd_progress = wp_evd_progress,
	.evd_wait_fd = wp_evd_wait_fd,
	.evd_trywait = wp_evd_trywait,
	.evd_wait_done = wp_evd_wait_done,
};

static const struct rapt_provider wp_desc = {
	.size = sizeof(struct rapt_provider),
	.abi = RAPT_PROVIDER_ABI,
	.name = WP_NAME,
	.version = RAPT_VERSION_PACK(1, 0, 0),
	.description = "test fixture: wait objects without a thread",
	.init = wp_init,
	.fini = wp_fini,
	.get_devices = wp_get_devices,
	.ops = &wp_ops,
};

RAPT_PROVIDER_EXPORT const struct rapt_provider *rapt_provider_entry(void)
{
	return &wp_desc;
}

/* With lock held. */
static struct wp_evd *wp_find(struct rapt_evd *handle)
{
	struct wp_evd *e;

	for (e = evds; e; e = e->next)
		if (e->handle == handle)
			return e;
	return NULL;
}

RAPT_PROVIDER_EXPORT int wait_prov_inject(struct rapt_evd *handle,
					  unsigned int n)
{
	uint64_t one = 1;
	struct wp_evd *e;
	int ret = 0;

	pthread_mutex_lock(&lock);
	e = wp_find(handle);
	if (!e) {
		ret = RAPT_EBADHANDLE;
		goto out;
	}
	atomic_fetch_add(&e->pending, n);
	if (atomic_exchange(&e->armed, false)) {
		atomic_fetch_add(&e->rings, 1);
		if (write(e->doorbell, &one, sizeof(one)) != sizeof(one))
			ret = RAPT_EIO;
	}
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

RAPT_PROVIDER_EXPORT int wait_prov_fail_trywait(struct rapt_evd *handle,
					       int status)
{
	struct wp_evd *e;

	pthread_mutex_lock(&lock);
	e = wp_find(handle);
	if (e)
		atomic_store(&e->fail_trywait, status);
	pthread_mutex_unlock(&lock);
	return e ? 0 : RAPT_EBADHANDLE;
}

RAPT_PROVIDER_EXPORT int wait_prov_on_trywait(struct rapt_evd *handle,
					     wait_prov_hook_fn fn, void *arg)
{
	struct wp_evd *e;

	pthread_mutex_lock(&lock);
	e = wp_find(handle);
	if (e) {
		e->on_trywait_arg = arg;
		atomic_store(&e->on_trywait, fn);
	}
	pthread_mutex_unlock(&lock);
	return e ? 0 : RAPT_EBADHANDLE;
}

RAPT_PROVIDER_EXPORT int wait_prov_stats(struct rapt_evd *handle,
					 struct wait_prov_stats *st)
{
	struct wp_evd *e;

	pthread_mutex_lock(&lock);
	e = wp_find(handle);
	if (e) {
		st->pushed = atomic_load(&e->pushed);
		st->trywait_block = atomic_load(&e->trywait_block);
		st->trywait_fd = atomic_load(&e->trywait_fd);
		st->trywait_eagain = atomic_load(&e->trywait_eagain);
		st->wait_done = atomic_load(&e->wait_done);
		st->sleeping = atomic_load(&e->sleeping);
		st->rings = atomic_load(&e->rings);
		st->progress_calls = atomic_load(&e->progress_calls);
		st->taken = rapt_prov_evd_taken(e->cevd);
		st->last_pusher = e->last_pusher;
	}
	pthread_mutex_unlock(&lock);
	return e ? 0 : RAPT_EBADHANDLE;
}
