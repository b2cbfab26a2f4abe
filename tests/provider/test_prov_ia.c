/* SPDX-License-Identifier: MIT */
/*
 * The "test" provider: descriptor, devices, IA, PZ, LMR and EVD objects.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_prov.h"

#define TP_CAPS_ALL (RAPT_CAP_RDMA_WRITE | RAPT_CAP_RDMA_READ | \
		     RAPT_CAP_INLINE | RAPT_CAP_SOLICITED | RAPT_CAP_FENCE | \
		     RAPT_CAP_SEND_INVALIDATE | RAPT_CAP_DISCONNECT_PDATA | \
		     RAPT_CAP_EVD_FD | RAPT_CAP_PASSIVE_SEND_FIRST | \
		     RAPT_CAP_RAW_PDATA | RAPT_CAP_MULTI_EVD_STREAMS | \
		     RAPT_CAP_ZERO_LENGTH | RAPT_CAP_HANDSHAKE_LIMIT | \
		     RAPT_CAP_CONNECT_CANCEL | RAPT_CAP_READ_CHECK | \
		     RAPT_CAP_PEER_ERRORS)

#define TP_DTO_SW (RAPT_EVD_DTO | RAPT_EVD_SOFTWARE)

const struct tp_dev tp_devs[] = {
	{
		.name = "loop",
		.rank = 1000,
		.caps = TP_CAPS_ALL,
		.pdata_connect = 256,
		.pdata_accept = 256,
		.pdata_reject = 256,
		.pdata_disconnect = 256,
		.evd_merge = {
			RAPT_EVD_ALL_STREAMS, RAPT_EVD_ALL_STREAMS,
			RAPT_EVD_ALL_STREAMS, RAPT_EVD_ALL_STREAMS,
			RAPT_EVD_ALL_STREAMS,
		},
	},
	{
		/* IB CM private-data sizes; streams merge only DTO+SOFTWARE. */
		.name = "ibsim",
		.rank = 1001,
		.caps = TP_CAPS_ALL & ~(RAPT_CAP_DISCONNECT_PDATA |
					RAPT_CAP_MULTI_EVD_STREAMS),
		.pdata_connect = 56,
		.pdata_accept = 196,
		.pdata_reject = 148,
		.pdata_disconnect = 0,
		.evd_merge = {
			TP_DTO_SW, RAPT_EVD_CONNECTION, RAPT_EVD_CR,
			RAPT_EVD_ASYNC, TP_DTO_SW,
		},
	},
};

const unsigned int tp_ndevs = sizeof(tp_devs) / sizeof(tp_devs[0]);

/* ------------------------------------------------------------------ */
/* Provider                                                            */
/* ------------------------------------------------------------------ */

static int tp_init(void **prov)
{
	*prov = NULL;
	return 0;
}

static void tp_fini(void *prov)
{
}

static int tp_get_devices(void *prov, struct rapt_prov_device **devs,
			  uint32_t *ndevs)
{
	struct rapt_prov_device *d;
	unsigned int i;

	d = calloc(tp_ndevs, sizeof(*d));
	if (!d)
		return RAPT_ENOMEM;
	for (i = 0; i < tp_ndevs; i++) {
		snprintf(d[i].name, sizeof(d[i].name), "%s", tp_devs[i].name);
		d[i].transport = RAPT_TRANSPORT_OTHER;
		d[i].rank = tp_devs[i].rank;
	}
	*devs = d;
	*ndevs = tp_ndevs;
	return 0;
}

static const struct tp_dev *tp_dev_find(const char *name)
{
	unsigned int i;

	if (!name || !name[0])
		return &tp_devs[0];
	for (i = 0; i < tp_ndevs; i++)
		if (!strcmp(name, tp_devs[i].name))
			return &tp_devs[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* IA                                                                  */
/* ------------------------------------------------------------------ */

static int tp_ia_open(void *prov, const char *device, uint32_t port,
		      struct rapt_core_ia *cia, void **pia)
{
	const struct tp_dev *dev = tp_dev_find(device);
	struct tp_ia *ia;
	int ret;

	if (!dev) {
		rapt_prov_set_error("test provider: no device '%s' (loop, ibsim)",
				    device);
		return RAPT_ENODEV;
	}
	if (port) {
		rapt_prov_set_error("test provider: device %s has no ports",
				    dev->name);
		return RAPT_ENODEV;
	}
	ia = calloc(1, sizeof(*ia));
	if (!ia)
		return RAPT_ENOMEM;
	ia->dev = dev;
	ia->cia = cia;
	TAILQ_INIT(&ia->fifo);
	TAILQ_INIT(&ia->timed);
	TAILQ_INIT(&ia->halfopen);
	TAILQ_INIT(&ia->reqs);
	ret = tp_thread_start(ia);
	if (ret)
		goto err_free;
	tp_dbg("opened IA on device %s", dev->name);
	*pia = ia;
	return 0;

err_free:
	free(ia);
	return ret;
}

static int tp_ia_close(void *pia)
{
	struct tp_ia *ia = pia;

	tp_thread_stop(ia);
	pthread_mutex_lock(&tp.lock);
	tp_cm_ia_sweep(ia);
	pthread_mutex_unlock(&tp.lock);
	pthread_cond_destroy(&ia->cond);
	free(ia);
	return 0;
}

static int tp_ia_query(void *pia, struct rapt_ia_attr *a)
{
	const struct tp_dev *dev = ((struct tp_ia *)pia)->dev;
	struct sockaddr_in *sin = (struct sockaddr_in *)&a->local_addr;

	snprintf(a->provider, sizeof(a->provider), "%s", TP_NAME);
	snprintf(a->device, sizeof(a->device), "%s", dev->name);
	a->transport = RAPT_TRANSPORT_OTHER;
	a->caps = dev->caps;
	a->max_ep = 4096;
	a->max_evd_qlen = 65536;
	a->max_send_depth = TP_MAX_DEPTH;
	a->max_recv_depth = TP_MAX_DEPTH;
	a->max_send_sge = TP_MAX_SGE;
	a->max_recv_sge = TP_MAX_SGE;
	a->max_inline = TP_MAX_INLINE;
	a->max_msg_size = TP_MAX_MSG;
	a->max_rdma_size = TP_MAX_MSG;
	a->max_lmr_size = TP_MAX_LMR;
	a->max_rdma_read_in = TP_MAX_READS;
	a->max_rdma_read_out = TP_MAX_READS;
	a->pdata_connect = dev->pdata_connect;
	a->pdata_accept = dev->pdata_accept;
	a->pdata_reject = dev->pdata_reject;
	a->pdata_disconnect = dev->pdata_disconnect;
	a->service_id_min = 1;
	a->service_id_max = TP_SID_MAX;
	memcpy(a->evd_merge, dev->evd_merge, sizeof(a->evd_merge));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return 0;
}

/* ------------------------------------------------------------------ */
/* PZ                                                                  */
/* ------------------------------------------------------------------ */

static int tp_pz_create(void *pia, void **ppz)
{
	struct tp_pz *pz = calloc(1, sizeof(*pz));

	if (!pz)
		return RAPT_ENOMEM;
	pz->ia = pia;
	*ppz = pz;
	return 0;
}

static int tp_pz_free(void *ppz)
{
	free(ppz);
	return 0;
}

/* ------------------------------------------------------------------ */
/* LMR and the key table                                               */
/* ------------------------------------------------------------------ */

#define TP_KEY_BUCKETS 1024

/* Every lkey and rkey of the process; under tp.lock. */
static struct tp_key *tp_keys[TP_KEY_BUCKETS];

static struct tp_key **tp_key_bucket(uint32_t key)
{
	return &tp_keys[(key ^ (key >> 16)) % TP_KEY_BUCKETS];
}

/* A fresh key: an odd multiplier permutes 32-bit values, so keys are
 * unique while the counter is, and never 0. */
static uint32_t tp_key_next(void)
{
	uint32_t k;

	do {
		k = ++tp.key_seq * 0x9e3779b1u;
	} while (!k);
	return k;
}

static void tp_key_add(struct tp_key *k, struct tp_lmr *lmr)
{
	struct tp_key **b;

	k->key = tp_key_next();
	k->lmr = lmr;
	b = tp_key_bucket(k->key);
	k->next = *b;
	*b = k;
}

static void tp_key_del(struct tp_key *k)
{
	struct tp_key **p;

	for (p = tp_key_bucket(k->key); *p; p = &(*p)->next) {
		if (*p == k) {
			*p = k->next;
			return;
		}
	}
}

/**
 * tp_key_find - the LMR owning an lkey or rkey (tp.lock held)
 * @key: the key
 *
 * Return: the LMR, or NULL.  The caller checks which of its keys matched.
 */
struct tp_lmr *tp_key_find(uint32_t key)
{
	struct tp_key *k;

	for (k = *tp_key_bucket(key); k; k = k->next)
		if (k->key == key)
			return k->lmr;
	return NULL;
}

static int tp_lmr_create(void *pia, void *ppz, void *addr, size_t length,
			 uint32_t access, struct rapt_lmr_info *info,
			 void **plmr)
{
	struct tp_lmr *lmr = calloc(1, sizeof(*lmr));

	if (!lmr)
		return RAPT_ENOMEM;
	lmr->ia = pia;
	lmr->pz = ppz;
	lmr->addr = (uintptr_t)addr;
	lmr->len = length;
	lmr->access = access;
	lmr->rkey_valid = true;
	pthread_mutex_lock(&tp.lock);
	tp_key_add(&lmr->lkey, lmr);
	tp_key_add(&lmr->rkey, lmr);
	pthread_mutex_unlock(&tp.lock);
	info->lkey = lmr->lkey.key;
	info->rkey = lmr->rkey.key;
	info->raddr = (uint64_t)lmr->addr;
	*plmr = lmr;
	return 0;
}

/* Data moves under tp.lock, so once the keys are gone nothing touches the
 * region any more. */
static int tp_lmr_free(void *plmr)
{
	struct tp_lmr *lmr = plmr;

	pthread_mutex_lock(&tp.lock);
	tp_key_del(&lmr->lkey);
	tp_key_del(&lmr->rkey);
	pthread_mutex_unlock(&tp.lock);
	free(lmr);
	return 0;
}

/* ------------------------------------------------------------------ */
/* EVD                                                                 */
/* ------------------------------------------------------------------ */

static int tp_evd_create(void *pia, struct rapt_core_evd *cevd, uint32_t qlen,
			 uint32_t streams, void **pevd)
{
	struct tp_evd *evd = calloc(1, sizeof(*evd));

	if (!evd)
		return RAPT_ENOMEM;
	evd->cevd = cevd;
	*pevd = evd;
	return 0;
}

static int tp_evd_free(void *pevd)
{
	free(pevd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Descriptor                                                          */
/* ------------------------------------------------------------------ */

/* evd_progress stays NULL: events reach the rings from the progress
 * threads, and the core's stub gets exercised. */
static const struct rapt_prov_ops tp_ops = {
	.size = sizeof(struct rapt_prov_ops),
	.ia_open = tp_ia_open,
	.ia_close = tp_ia_close,
	.ia_query = tp_ia_query,
	.pz_create = tp_pz_create,
	.pz_free = tp_pz_free,
	.lmr_create = tp_lmr_create,
	.lmr_free = tp_lmr_free,
	.evd_create = tp_evd_create,
	.evd_free = tp_evd_free,
	.ep_create = tp_ep_create,
	.ep_free = tp_ep_free,
	.ep_modify = tp_ep_modify,
	.ep_connect = tp_ep_connect,
	.ep_disconnect = tp_ep_disconnect,
	.post_recv = tp_post_recv,
	.post_send = tp_post_send,
	.post_write = tp_post_write,
	.post_read = tp_post_read,
	.psp_create = tp_psp_create,
	.psp_free = tp_psp_free,
	.cr_accept = tp_cr_accept,
	.cr_reject = tp_cr_reject,
};

static const struct rapt_provider tp_provider = {
	.size = sizeof(struct rapt_provider),
	.abi = RAPT_PROVIDER_ABI,
	.name = TP_NAME,
	.version = RAPT_VERSION_PACK(1, 0, 0),
	.description = "in-process loopback fixture for the unit tests",
	.init = tp_init,
	.fini = tp_fini,
	.get_devices = tp_get_devices,
	.ops = &tp_ops,
};

/**
 * rapt_provider_entry - the test provider's descriptor
 *
 * Return: the static descriptor.
 */
RAPT_PROVIDER_EXPORT const struct rapt_provider *rapt_provider_entry(void)
{
	return &tp_provider;
}
