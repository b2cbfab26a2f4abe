// SPDX-License-Identifier: MIT
/*
 * The provider's entry points (dat_provider_init/fini), one DAT_PROVIDER
 * table per dat.conf line, and the IA: open, query, close.
 *
 * A dat.conf line names the DAT IA and, in its ia_params field, the rapt
 * IA it opens ("tcp:lo", "iwarp:siw0", an alias of rapt.conf...).  With
 * empty ia_params the DAT name says it: "rapt-<rapt IA name>", and plain
 * "rapt" opens the best IA rapt finds (docs/dat-compat.md).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdat.h"

#define RDAT_NAME_PREFIX "rapt-"
/* Counts rapt does not bound (EVDs, PZs, LMRs per IA): reported as this. */
#define RDAT_UNBOUNDED 65536

/* One registered DAT IA name: libdat2 keeps pointers to @prov and @info. */
struct rdat_entry {
	DAT_PROVIDER prov;
	DAT_PROVIDER_INFO info;
	char rapt_name[DAT_NAME_MAX_LENGTH];
	struct rdat_entry *next;
};

static pthread_mutex_t rdat_entries_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdat_entry *rdat_entries;

static void rdat_rapt_name(struct rdat_entry *e, const char *ia_params)
{
	const char *n = e->info.ia_name;
	size_t plen = strlen(RDAT_NAME_PREFIX);

	if (ia_params && *ia_params)
		n = ia_params;
	else if (!strncmp(n, RDAT_NAME_PREFIX, plen))
		n += plen;
	else if (!strcmp(n, "rapt"))
		n = "";
	snprintf(e->rapt_name, sizeof(e->rapt_name), "%s", n);
}

RDAT_EXPORT void dat_provider_init(const DAT_PROVIDER_INFO *info,
				   const char *ia_params);
RDAT_EXPORT void dat_provider_fini(const DAT_PROVIDER_INFO *info);

/**
 * dat_provider_init - register one DAT IA name with libdat2
 * @info: the dat.conf line's IA name, version and thread safety
 * @ia_params: the line's ia_params: the rapt IA name, or ""
 *
 * Called by libdat2 once per dat.conf line naming this library.  A
 * failure cannot be returned (the SPI's init is void): the name then
 * stays unregistered and dat_ia_open() says DAT_PROVIDER_NOT_FOUND.
 */
void dat_provider_init(const DAT_PROVIDER_INFO *info, const char *ia_params)
{
	struct rdat_entry *e = calloc(1, sizeof(*e));
	DAT_RETURN ret;

	if (!e)
		return;
	e->info = *info;
	e->prov = rdat_provider_template;
	e->prov.device_name = e->info.ia_name;
	e->prov.extension = e;
	rdat_rapt_name(e, ia_params);
	ret = dat_registry_add_provider(&e->prov, &e->info);
	if (ret != DAT_SUCCESS) {
		/* libdat2 will only say DAT_PROVIDER_NOT_FOUND: say why. */
		fprintf(stderr, "rapt-dat2: libdat2 refused IA %s: 0x%x\n",
			e->info.ia_name, (unsigned int)ret);
		free(e);
		return;
	}
	pthread_mutex_lock(&rdat_entries_lock);
	e->next = rdat_entries;
	rdat_entries = e;
	pthread_mutex_unlock(&rdat_entries_lock);
}

/**
 * dat_provider_fini - unregister a DAT IA name
 * @info: as given to dat_provider_init()
 */
void dat_provider_fini(const DAT_PROVIDER_INFO *info)
{
	struct rdat_entry **pp, *e = NULL;

	pthread_mutex_lock(&rdat_entries_lock);
	for (pp = &rdat_entries; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->info.ia_name, info->ia_name)) {
			e = *pp;
			*pp = e->next;
			break;
		}
	}
	pthread_mutex_unlock(&rdat_entries_lock);
	if (!e)
		return;
	dat_registry_remove_provider(&e->prov, &e->info);
	free(e);
}

static struct rdat_entry *rdat_entry_find(const char *name)
{
	struct rdat_entry *e;

	pthread_mutex_lock(&rdat_entries_lock);
	for (e = rdat_entries; e; e = e->next)
		if (!strcmp(e->info.ia_name, name))
			break;
	pthread_mutex_unlock(&rdat_entries_lock);
	return e;
}

static DAT_RETURN rdat_ia_async(struct rdat_ia *ia, DAT_COUNT qlen,
				DAT_EVD_HANDLE *async_evd)
{
	DAT_RETURN ret = DAT_SUCCESS;

	if (*async_evd == DAT_EVD_ASYNC_EXISTS)
		return DAT_SUCCESS;
	if (*async_evd != DAT_HANDLE_NULL)
		return RDAT_ERR(DAT_INVALID_HANDLE,
				DAT_INVALID_HANDLE_EVD_ASYNC);
	ia->async_evd = rdat_evd_make(ia, qlen > 0 ? qlen : 1,
				      DAT_EVD_ASYNC_FLAG, &ret);
	if (ia->async_evd)
		*async_evd = ia->async_evd;
	return ret;
}

DAT_RETURN rdat_ia_open(const DAT_NAME_PTR name, DAT_COUNT async_qlen,
			DAT_EVD_HANDLE *async_evd, DAT_IA_HANDLE *ia_handle)
{
	struct rdat_entry *e;
	struct rdat_ia *ia;
	struct rapt_ia *h;
	DAT_RETURN ret;
	int rc;

	if (!name || !(e = rdat_entry_find(name)))
		return RDAT_ERR(DAT_PROVIDER_NOT_FOUND,
				DAT_NAME_NOT_REGISTERED);
	if (!async_evd || !ia_handle)
		return RDAT_ERR(DAT_INVALID_PARAMETER,
				!ia_handle ? DAT_INVALID_ARG4 :
				DAT_INVALID_ARG3);
	rc = rapt_ia_open(*e->rapt_name ? e->rapt_name : NULL, &h);
	if (rc)
		return rdat_status(rc);
	ia = rdat_obj_new(sizeof(*ia), DAT_HANDLE_TYPE_IA, NULL, &e->prov);
	if (!ia) {
		rapt_ia_close(h);
		return RDAT_NOMEM;
	}
	rdat_obj_bind(&ia->o, h);
	snprintf(ia->rapt_name, sizeof(ia->rapt_name), "%s", e->rapt_name);
	rc = rapt_ia_query(h, &ia->attr, sizeof(ia->attr));
	ret = rc ? rdat_status(rc) : rdat_ia_async(ia, async_qlen, async_evd);
	if (ret != DAT_SUCCESS) {
		rapt_ia_close(h);
		rdat_obj_del(&ia->o);
		return ret;
	}
	*ia_handle = ia;
	return DAT_SUCCESS;
}

static DAT_COUNT rdat_count(uint64_t v)
{
	return v > INT_MAX ? INT_MAX : (DAT_COUNT)v;
}

static DAT_SEG_LENGTH rdat_seg(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (DAT_SEG_LENGTH)v;
}

static void rdat_ia_attr_fill(struct rdat_ia *ia, DAT_IA_ATTR *a)
{
	const struct rapt_ia_attr *r = &ia->attr;

	memset(a, 0, sizeof(*a));
	snprintf(a->adapter_name, sizeof(a->adapter_name), "%s", r->name);
	snprintf(a->vendor_name, sizeof(a->vendor_name), "rapt %s",
		 r->provider);
	a->hardware_version_major = r->prov_version >> 16;
	a->hardware_version_minor = r->prov_version & 0xffff;
	a->ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ia->attr.local_addr;
	a->max_eps = rdat_count(r->max_ep);
	a->max_dto_per_ep = rdat_count(r->max_send_depth < r->max_recv_depth ?
				       r->max_send_depth : r->max_recv_depth);
	a->max_rdma_read_per_ep_in = rdat_count(r->max_rdma_read_in);
	a->max_rdma_read_per_ep_out = rdat_count(r->max_rdma_read_out);
	a->max_evds = RDAT_UNBOUNDED;
	a->max_evd_qlen = rdat_count(r->max_evd_qlen);
	a->max_iov_segments_per_dto = rdat_count(r->max_send_sge <
						 r->max_recv_sge ?
						 r->max_send_sge :
						 r->max_recv_sge);
	a->max_lmrs = RDAT_UNBOUNDED;
	a->max_lmr_block_size = rdat_seg(r->max_lmr_size);
	a->max_lmr_virtual_address = UINT64_MAX;
	a->max_pzs = RDAT_UNBOUNDED;
	a->max_message_size = rdat_seg(r->max_msg_size);
	a->max_rdma_size = rdat_seg(r->max_rdma_size);
	if (r->caps & RAPT_CAP_RMR) {
		a->max_rmrs = rdat_count(r->max_rmr);
		a->max_rmr_target_address = UINT64_MAX;
	}
	a->max_srqs = rdat_count(r->max_srq);
	a->max_ep_per_srq = r->max_srq ? rdat_count(r->max_ep) : 0;
	a->max_recv_per_srq = rdat_count(r->max_srq_recv);
	a->max_iov_segments_per_rdma_read = rdat_count(r->max_send_sge);
	a->max_iov_segments_per_rdma_write = rdat_count(r->max_send_sge);
	a->max_rdma_read_in = rdat_count(r->max_rdma_read_in);
	a->max_rdma_read_out = rdat_count(r->max_rdma_read_out);
	a->max_rdma_read_per_ep_in_guaranteed = DAT_TRUE;
	a->max_rdma_read_per_ep_out_guaranteed = DAT_TRUE;
	a->zb_supported = DAT_FALSE;
	a->extension_supported = DAT_EXTENSION_NONE;
}

static int rdat_merges_all(const struct rapt_ia_attr *r)
{
	int i;

	for (i = 0; i < RAPT_EVD_NSTREAMS; i++)
		if ((r->evd_merge[i] & RAPT_EVD_ALL_STREAMS) !=
		    RAPT_EVD_ALL_STREAMS)
			return 0;
	return 1;
}

static void rdat_prov_attr_fill(struct rdat_ia *ia, DAT_PROVIDER_ATTR *p)
{
	const struct rapt_ia_attr *r = &ia->attr;
	DAT_BOOLEAN merge[6][6];
	unsigned int pd;
	int i, j;

	memset(p, 0, sizeof(*p));
	snprintf(p->provider_name, sizeof(p->provider_name), "rapt-%s",
		 r->provider);
	p->provider_version_major = RAPT_API_VERSION_MAJOR;
	p->provider_version_minor = RAPT_API_VERSION_MINOR;
	p->dapl_version_major = DAT_VERSION_MAJOR;
	p->dapl_version_minor = DAT_VERSION_MINOR;
	p->lmr_mem_types_supported = DAT_MEM_TYPE_VIRTUAL | DAT_MEM_TYPE_LMR;
	p->iov_ownership_on_return = DAT_IOV_CONSUMER;
	p->dat_qos_supported = DAT_QOS_BEST_EFFORT;
	p->completion_flags_supported = DAT_COMPLETION_SUPPRESS_FLAG |
		DAT_COMPLETION_UNSIGNALLED_FLAG |
		DAT_COMPLETION_EVD_THRESHOLD_FLAG;
	if (r->caps & RAPT_CAP_SOLICITED)
		p->completion_flags_supported |=
			DAT_COMPLETION_SOLICITED_WAIT_FLAG;
	if (r->caps & RAPT_CAP_FENCE)
		p->completion_flags_supported |=
			DAT_COMPLETION_BARRIER_FENCE_FLAG;
	p->is_thread_safe = DAT_FALSE;
	pd = r->pdata_connect;
	if (r->pdata_accept < pd)
		pd = r->pdata_accept;
	if (r->pdata_reject < pd)
		pd = r->pdata_reject;
	p->max_private_data_size = (DAT_COUNT)pd;
	p->supports_multipath = DAT_FALSE;
	p->ep_creator = DAT_PSP_CREATES_EP_IFASKED;
	p->pz_support = DAT_PZ_UNIQUE;
	p->optimal_buffer_alignment = 64;
	for (i = 0; i < 6; i++)
		for (j = 0; j < 6; j++)
			merge[i][j] = i == j || rdat_merges_all(r);
	/* A const member of the caller's struct: written once, here. */
	memcpy((void *)p->evd_stream_merging_supported, merge, sizeof(merge));
	p->srq_supported = (r->caps & RAPT_CAP_SRQ) ? DAT_TRUE : DAT_FALSE;
	p->srq_watermarks_supported = 1;	/* low watermark */
	p->srq_ep_pz_difference_supported = DAT_FALSE;
	p->lmr_sync_req = DAT_FALSE;
	p->dto_async_return_guaranteed = DAT_FALSE;
	p->rdma_write_for_rdma_read_req = DAT_FALSE;
	p->rdma_read_lmr_rmr_context_exposure = DAT_FALSE;
	p->rmr_scope_supported = DAT_RMR_SCOPE_PZ;	/* rapt's windows */
	p->is_signal_safe = DAT_FALSE;
	p->ha_supported = DAT_FALSE;
}

DAT_RETURN rdat_ia_query(DAT_IA_HANDLE h, DAT_EVD_HANDLE *async_evd,
			 DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR *ia_attr,
			 DAT_PROVIDER_ATTR_MASK prov_mask,
			 DAT_PROVIDER_ATTR *prov_attr)
{
	struct rdat_ia *ia = rdat_get(h, DAT_HANDLE_TYPE_IA);

	if (!ia)
		return rdat_bad(DAT_HANDLE_TYPE_IA);
	if ((ia_mask && !ia_attr) || (prov_mask && !prov_attr))
		return RDAT_ERR(DAT_INVALID_PARAMETER, 0);
	if (async_evd)
		*async_evd = ia->async_evd;
	if (ia_mask)
		rdat_ia_attr_fill(ia, ia_attr);
	if (prov_mask)
		rdat_prov_attr_fill(ia, prov_attr);
	return DAT_SUCCESS;
}

/* Free order for an abrupt close: users before what they use. */
static const DAT_HANDLE_TYPE rdat_close_order[] = {
	DAT_HANDLE_TYPE_CR, DAT_HANDLE_TYPE_RSP, DAT_HANDLE_TYPE_EP,
	DAT_HANDLE_TYPE_PSP, DAT_HANDLE_TYPE_SRQ, DAT_HANDLE_TYPE_RMR,
	DAT_HANDLE_TYPE_LMR,
	DAT_HANDLE_TYPE_PZ, DAT_HANDLE_TYPE_EVD, RDAT_TYPE_MARK,
};

static void rdat_free_one(struct rdat_obj *o)
{
	/* Gone already: a reject frees the EP a PSP made for its CR. */
	if (!rdat_get(o, RDAT_ANY))
		return;
	if (o->type == RDAT_TYPE_MARK) {	/* nothing behind it */
		rdat_mark_del(o);
		return;
	}
	switch (o->type) {
	case DAT_HANDLE_TYPE_CR:
		rdat_cr_reject(o, 0, NULL);
		break;
	case DAT_HANDLE_TYPE_EP:
		rdat_ep_free(o);
		break;
	case DAT_HANDLE_TYPE_EVD:
		rdat_evd_free(o);
		break;
	case DAT_HANDLE_TYPE_RMR:
		rdat_rmr_free(o);
		break;
	default:
		rdat_free(o, o->type);
		break;
	}
}

/* DAT_CLOSE_ABRUPT_FLAG: free whatever the consumer left behind. */
static void rdat_ia_free_children(struct rdat_ia *ia)
{
	size_t t, i, n, m;
	struct rdat_obj **v;

	n = rdat_ia_children(ia, NULL, 0);
	if (!n)
		return;
	v = calloc(n, sizeof(*v));
	if (!v)
		return;
	m = rdat_ia_children(ia, v, n);	/* more may have come since */
	n = m < n ? m : n;
	for (t = 0; t < sizeof(rdat_close_order) / sizeof(rdat_close_order[0]);
	     t++)
		for (i = 0; i < n; i++)
			if (v[i] && v[i]->type == rdat_close_order[t]) {
				rdat_free_one(v[i]);
				v[i] = NULL;
			}
	free(v);
}

/* The IA's objects but its marks (events of ours nobody took); -1: ENOMEM */
static size_t rdat_ia_consumer_objs(struct rdat_ia *ia)
{
	struct rdat_obj **v;
	size_t i, n, m, k = 0;

	n = rdat_ia_children(ia, NULL, 0);
	if (!n)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v)
		return (size_t)-1;
	m = rdat_ia_children(ia, v, n);
	for (i = 0; i < n && i < m; i++)
		k += v[i] && v[i]->type != RDAT_TYPE_MARK;
	free(v);
	return k;
}

DAT_RETURN rdat_ia_close(DAT_IA_HANDLE h, DAT_CLOSE_FLAGS flags)
{
	struct rdat_ia *ia = rdat_get(h, DAT_HANDLE_TYPE_IA);
	size_t n;
	int rc;

	if (!ia)
		return rdat_bad(DAT_HANDLE_TYPE_IA);
	if (flags == DAT_CLOSE_ABRUPT_FLAG) {
		rdat_ia_free_children(ia);
	} else {
		n = rdat_ia_consumer_objs(ia);
		if (n == (size_t)-1)
			return RDAT_NOMEM;
		if (n > (ia->async_evd ? 1u : 0u))
			return RDAT_ERR(DAT_INVALID_STATE, 0);
		/* The async EVD and the marks of events never taken. */
		rdat_ia_free_children(ia);
	}
	rc = rapt_ia_close(ia->o.h);
	if (rc)
		return rdat_status(rc);
	rdat_obj_del(&ia->o);
	return DAT_SUCCESS;
}
