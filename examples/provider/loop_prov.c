/* SPDX-License-Identifier: MIT */
/*
 * loop: the descriptor, the device, IAs, the timer thread, memory and
 * EVDs.  See loop.h for what the provider is.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "loop.h"

struct loop_fabric loop_fab = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.psps = RAPT_LIST_INIT(loop_fab.psps),
	.lmrs = RAPT_LIST_INIT(loop_fab.lmrs),
	.timed = RAPT_LIST_INIT(loop_fab.timed),
	.next_key = 1,
	.next_port = 32768,
};

/* ------------------------------------------------------------------ */
/* Device and IA                                                       */
/* ------------------------------------------------------------------ */

static int loop_get_devices(void *prov, struct rapt_prov_device **devs,
			    uint32_t *ndevs)
{
	struct rapt_prov_device *d = calloc(1, sizeof(*d));

	if (!d)
		return RAPT_ENOMEM;
	strcpy(d->name, LOOP_DEVICE);
	d->transport = RAPT_TRANSPORT_OTHER;
	d->rank = 1000;		/* rapt_ia_open(NULL) prefers real networks */
	*devs = d;		/* the core free()s it */
	*ndevs = 1;
	return 0;
}

/* Once, when the core loads the provider: the timer thread's deadlines
 * are rapt_now_ns() times, CLOCK_MONOTONIC, and so must its waits be. */
static int loop_init(void **prov)
{
	pthread_condattr_t ca;
	int err;

	err = pthread_condattr_init(&ca);
	if (!err)
		err = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!err)
		err = pthread_cond_init(&loop_fab.timer_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (err) {
		rapt_prov_set_error(LOOP_NAME ": no monotonic condition "
				    "variable: %s", strerror(err));
		return rapt_errno_status(err);
	}
	return 0;
}

static void loop_fini(void *prov)
{
	pthread_cond_destroy(&loop_fab.timer_cond);
}

/* The timer thread: times out connects whose CR is still undecided. */
static void *loop_timer_main(void *arg)
{
	struct timespec ts;
	uint64_t now, next;
	struct loop_req *req;

	pthread_mutex_lock(&loop_fab.lock);
	while (!loop_fab.timer_stop) {
		now = rapt_now_ns();
		loop_timeouts(now);
		if (rapt_list_empty(&loop_fab.timed)) {
			pthread_cond_wait(&loop_fab.timer_cond, &loop_fab.lock);
			continue;
		}
		/* loop_fab.timed is in deadline order */
		req = rapt_container_of(rapt_list_first(&loop_fab.timed),
					struct loop_req, tlink);
		next = req->deadline_ns;
		ts.tv_sec = (time_t)(next / 1000000000u);
		ts.tv_nsec = (long)(next % 1000000000u);
		pthread_cond_timedwait(&loop_fab.timer_cond, &loop_fab.lock,
				       &ts);
	}
	pthread_mutex_unlock(&loop_fab.lock);
	return NULL;
}

static int loop_ia_open(void *prov, const char *device, uint32_t port,
			struct rapt_core_ia *cia, void **pia)
{
	struct loop_ia *ia;
	int err;

	if (strcmp(device, LOOP_DEVICE)) {
		rapt_prov_set_error(LOOP_NAME ": no device '%s' (there is "
				    LOOP_DEVICE ")", device);
		return RAPT_ENODEV;
	}
	ia = calloc(1, sizeof(*ia));
	if (!ia)
		return RAPT_ENOMEM;
	ia->cia = cia;

	pthread_mutex_lock(&loop_fab.lock);
	if (loop_fab.nia == 0) {
		loop_fab.timer_stop = false;
		err = pthread_create(&loop_fab.timer, NULL, loop_timer_main,
				     NULL);
		if (err) {
			pthread_mutex_unlock(&loop_fab.lock);
			free(ia);
			rapt_prov_set_error(LOOP_NAME ": no timer thread: %s",
					    strerror(err));
			return rapt_errno_status(err);
		}
	}
	loop_fab.nia++;
	pthread_mutex_unlock(&loop_fab.lock);
	*pia = ia;
	return 0;
}

/* The core closes an IA only when it has no objects left. */
static int loop_ia_close(void *pia)
{
	bool last;

	pthread_mutex_lock(&loop_fab.lock);
	last = --loop_fab.nia == 0;
	if (last) {
		loop_fab.timer_stop = true;
		pthread_cond_signal(&loop_fab.timer_cond);
	}
	pthread_mutex_unlock(&loop_fab.lock);
	if (last)
		pthread_join(loop_fab.timer, NULL);
	free(pia);
	return 0;
}

/* Raw transport limits: the core subtracts its private-data header. */
static int loop_ia_query(void *pia, struct rapt_ia_attr *a)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&a->local_addr;
	unsigned int i;

	a->transport = RAPT_TRANSPORT_OTHER;
	a->caps = RAPT_CAP_INLINE | RAPT_CAP_SOLICITED |
		  RAPT_CAP_DISCONNECT_PDATA | RAPT_CAP_EVD_FD |
		  RAPT_CAP_PASSIVE_SEND_FIRST | RAPT_CAP_RAW_PDATA |
		  RAPT_CAP_MULTI_EVD_STREAMS | RAPT_CAP_ZERO_LENGTH;
	a->max_ep = 4096;
	a->max_evd_qlen = 65536;
	a->max_send_depth = LOOP_MAX_DEPTH;
	a->max_recv_depth = LOOP_MAX_DEPTH;
	a->max_send_sge = LOOP_MAX_SGE;
	a->max_recv_sge = LOOP_MAX_SGE;
	a->max_inline = LOOP_MAX_INLINE;
	a->max_msg_size = LOOP_MAX_MSG;
	a->max_lmr_size = 1ull << 30;
	a->pdata_connect = LOOP_PDATA_MAX;
	a->pdata_accept = LOOP_PDATA_MAX;
	a->pdata_reject = LOOP_PDATA_MAX;
	a->pdata_disconnect = LOOP_PDATA_MAX;
	a->service_id_min = 1;
	a->service_id_max = LOOP_SID_MAX;
	for (i = 0; i < RAPT_EVD_NSTREAMS; i++)
		a->evd_merge[i] = RAPT_EVD_ALL_STREAMS;
	/* Where peers reach us: any loopback address works. */
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Memory                                                              */
/* ------------------------------------------------------------------ */

/* The core checks the arguments; keys, bounds and rights are ours. */
static int loop_lmr_create(void *pia, void *ppz, void *addr, size_t length,
			   uint32_t access, struct rapt_lmr_info *info,
			   void **plmr)
{
	struct loop_lmr *m = calloc(1, sizeof(*m));

	if (!m)
		return RAPT_ENOMEM;
	m->ia = pia;
	m->addr = (uintptr_t)addr;
	m->len = length;
	m->access = access;
	pthread_mutex_lock(&loop_fab.lock);
	m->key = loop_fab.next_key++;
	rapt_list_add_tail(&loop_fab.lmrs, &m->link);
	pthread_mutex_unlock(&loop_fab.lock);
	info->lkey = m->key;
	info->rkey = m->key;
	info->raddr = m->addr;
	*plmr = m;
	return 0;
}

static int loop_lmr_free(void *plmr)
{
	struct loop_lmr *m = plmr;

	pthread_mutex_lock(&loop_fab.lock);
	rapt_list_del(&m->link);
	pthread_mutex_unlock(&loop_fab.lock);
	free(m);
	return 0;
}

/* ------------------------------------------------------------------ */
/* EVD: remember the core's EVD, to push events to it                  */
/* ------------------------------------------------------------------ */

static int loop_evd_create(void *pia, struct rapt_core_evd *cevd,
			   uint32_t qlen, uint32_t streams, void **pevd)
{
	struct loop_evd *e = calloc(1, sizeof(*e));

	if (!e)
		return RAPT_ENOMEM;
	e->cevd = cevd;
	*pevd = e;
	return 0;
}

static int loop_evd_free(void *pevd)
{
	free(pevd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Descriptor                                                          */
/* ------------------------------------------------------------------ */

/* NULL ops are core stubs: PZs succeed with no object; RDMA and send
 * with invalidate fail with RAPT_ENOTSUP, as the capabilities say. */
static const struct rapt_prov_ops loop_ops = {
	.size = sizeof(struct rapt_prov_ops),
	.ia_open = loop_ia_open,
	.ia_close = loop_ia_close,
	.ia_query = loop_ia_query,
	.lmr_create = loop_lmr_create,
	.lmr_free = loop_lmr_free,
	.evd_create = loop_evd_create,
	.evd_free = loop_evd_free,
	.ep_create = loop_ep_create,
	.ep_free = loop_ep_free,
	.ep_modify = loop_ep_modify,
	.ep_connect = loop_ep_connect,
	.ep_disconnect = loop_ep_disconnect,
	.post_recv = loop_post_recv,
	.post_send = loop_post_send,
	.psp_create = loop_psp_create,
	.psp_free = loop_psp_free,
	.cr_accept = loop_cr_accept,
	.cr_reject = loop_cr_reject,
};

static const struct rapt_provider loop_provider = {
	.size = sizeof(struct rapt_provider),
	.abi = RAPT_PROVIDER_ABI,
	.name = LOOP_NAME,
	.version = RAPT_VERSION_PACK(1, 0, 0),
	.description = "example: a loopback transport inside one process",
	.init = loop_init,
	.fini = loop_fini,
	.get_devices = loop_get_devices,
	.ops = &loop_ops,
};

RAPT_PROVIDER_EXPORT const struct rapt_provider *rapt_provider_entry(void)
{
	return &loop_provider;
}
