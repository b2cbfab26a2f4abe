/* SPDX-License-Identifier: MIT */
/*
 * The "null" provider: a benchmark fixture whose data path does nothing
 * measurable, so that bench/core_cost.sh can count the instructions the
 * core itself spends per post and completion.  Built for make check as
 * bench/null/.libs/librapt-null-pv2.so, never installed.
 *
 * One device, "null".  A connect succeeds at once: ESTABLISHED is
 * reported from inside ep_connect.  Every send, RDMA write and RDMA read
 * completes at once: the post op pushes its SUCCESS completion straight
 * onto the request EVD with rapt_prov_evd_push().  Receives wait in a
 * small table and complete FLUSHED on disconnect (nothing ever arrives).
 * No listeners: psp_create is the core's RAPT_ENOTSUP stub.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <rapt/provider.h>

#define NP_NAME		"null"
#define NP_DEPTH	1024
#define NP_PDATA	256

struct np_ia {
	struct rapt_core_ia *cia;
	uint32_t next_key;
};

struct np_evd {
	struct rapt_core_evd *cevd;
};

struct np_ep {
	struct rapt_core_ep *cep;
	struct rapt_ep *handle;
	struct np_evd *recv;
	struct np_evd *req;
	uint32_t nrecv;
	uint64_t recv_cookie[NP_DEPTH];
};

static int np_init(void **prov)
{
	*prov = NULL;
	return 0;
}

static void np_fini(void *prov)
{
}

static int np_get_devices(void *prov, struct rapt_prov_device **devs,
			  uint32_t *ndevs)
{
	struct rapt_prov_device *d = calloc(1, sizeof(*d));

	if (!d)
		return RAPT_ENOMEM;
	strcpy(d->name, "null");
	d->transport = RAPT_TRANSPORT_OTHER;
	d->rank = 2000;
	*devs = d;
	*ndevs = 1;
	return 0;
}

static int np_ia_open(void *prov, const char *device, uint32_t port,
		      struct rapt_core_ia *cia, void **pia)
{
	struct np_ia *ia;

	if (device && device[0] && strcmp(device, "null"))
		return RAPT_ENODEV;
	ia = calloc(1, sizeof(*ia));
	if (!ia)
		return RAPT_ENOMEM;
	ia->cia = cia;
	ia->next_key = 1;
	*pia = ia;
	return 0;
}

static int np_ia_close(void *pia)
{
	free(pia);
	return 0;
}

static int np_ia_query(void *pia, struct rapt_ia_attr *a)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&a->local_addr;
	unsigned int i;

	a->transport = RAPT_TRANSPORT_OTHER;
	a->caps = RAPT_CAP_RDMA_WRITE | RAPT_CAP_RDMA_READ |
		  RAPT_CAP_MULTI_EVD_STREAMS;
	a->max_ep = 4096;
	a->max_evd_qlen = 65536;
	a->max_send_depth = NP_DEPTH;
	a->max_recv_depth = NP_DEPTH;
	a->max_send_sge = 4;
	a->max_recv_sge = 4;
	a->max_msg_size = 1ull << 30;
	a->max_rdma_size = 1ull << 30;
	a->max_lmr_size = 1ull << 40;
	a->max_rdma_read_in = 16;
	a->max_rdma_read_out = 16;
	a->pdata_connect = NP_PDATA;
	a->pdata_accept = NP_PDATA;
	a->pdata_reject = NP_PDATA;
	a->service_id_min = 1;
	a->service_id_max = 65535;
	for (i = 0; i < RAPT_EVD_NSTREAMS; i++)
		a->evd_merge[i] = RAPT_EVD_ALL_STREAMS;
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return 0;
}

static int np_lmr_create(void *pia, void *ppz, void *addr, size_t length,
			 uint32_t access, struct rapt_lmr_info *info,
			 void **plmr)
{
	struct np_ia *ia = pia;

	info->lkey = ia->next_key++;
	info->rkey = ia->next_key++;
	info->raddr = (uint64_t)(uintptr_t)addr;
	*plmr = NULL;
	return 0;
}

static int np_lmr_free(void *plmr)
{
	return 0;
}

static int np_evd_create(void *pia, struct rapt_core_evd *cevd,
			 uint32_t qlen, uint32_t streams, void **pevd)
{
	struct np_evd *evd = calloc(1, sizeof(*evd));

	if (!evd)
		return RAPT_ENOMEM;
	evd->cevd = cevd;
	*pevd = evd;
	return 0;
}

static int np_evd_free(void *pevd)
{
	free(pevd);
	return 0;
}

static int np_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
			struct rapt_ep *handle,
			const struct rapt_ep_attr *attr, void *recv_pevd,
			void *req_pevd, void *conn_pevd, void **pep)
{
	struct np_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return RAPT_ENOMEM;
	ep->cep = cep;
	ep->handle = handle;
	ep->recv = recv_pevd;
	ep->req = req_pevd;
	*pep = ep;
	return 0;
}

static void np_flush_recvs(struct np_ep *ep)
{
	struct rapt_event ev;
	uint32_t i;

	if (!ep->recv)
		return;
	for (i = 0; i < ep->nrecv; i++) {
		memset(&ev, 0, sizeof(ev));
		ev.type = RAPT_EV_DTO;
		ev.u.dto.ep = ep->handle;
		ev.u.dto.cookie = ep->recv_cookie[i];
		ev.u.dto.op = RAPT_OP_RECV;
		ev.u.dto.status = RAPT_DTO_FLUSHED;
		rapt_prov_evd_push(ep->recv->cevd, &ev);
	}
	ep->nrecv = 0;
}

static int np_ep_free(void *pep)
{
	free(pep);
	return 0;
}

static int np_conn_event(struct np_ep *ep, uint32_t type)
{
	struct rapt_prov_conn_event ce;

	memset(&ce, 0, sizeof(ce));
	ce.type = type;
	ce.rdma_read_in = 16;
	ce.rdma_read_out = 16;
	return rapt_prov_ep_event(ep->cep, &ce);
}

/* No peer: the connection is up at once. */
static int np_ep_connect(void *pep, const struct sockaddr *remote,
			 uint64_t service_id, const void *pdata,
			 size_t pdata_len, int64_t timeout_us)
{
	return np_conn_event(pep, RAPT_EV_ESTABLISHED);
}

static int np_ep_disconnect(void *pep, uint32_t flags, const void *pdata,
			    size_t pdata_len)
{
	np_flush_recvs(pep);
	return np_conn_event(pep, RAPT_EV_DISCONNECTED);
}

static int np_post_recv(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
			uint64_t cookie)
{
	struct np_ep *ep = pep;

	if (ep->nrecv == NP_DEPTH)
		return RAPT_ENOSPC;
	ep->recv_cookie[ep->nrecv++] = cookie;
	if (rapt_prov_ep_state(ep->cep) == RAPT_EP_DISCONNECTED)
		np_flush_recvs(ep);
	return 0;
}

/* The whole data path: one completion, pushed at once. */
static int np_complete(struct np_ep *ep, const struct rapt_sge *sgl,
		       uint32_t nsge, uint64_t cookie, uint32_t op,
		       uint32_t flags)
{
	struct rapt_event ev;
	uint64_t len = 0;
	uint32_t i;

	if (!ep->req || (flags & RAPT_POST_SUPPRESS))
		return 0;
	for (i = 0; i < nsge; i++)
		len += sgl[i].length;
	ev.type = RAPT_EV_DTO;
	ev.reserved = 0;
	ev.evd = NULL;
	ev.u.dto.ep = ep->handle;
	ev.u.dto.cookie = cookie;
	ev.u.dto.op = op;
	ev.u.dto.status = RAPT_DTO_SUCCESS;
	ev.u.dto.length = len;
	ev.u.dto.prov_status = 0;
	ev.u.dto.flags = 0;
	ev.u.dto.invalidated_rkey = 0;
	return rapt_prov_evd_push(ep->req->cevd, &ev);
}

static int np_post_send(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
			uint64_t cookie, uint32_t flags, uint32_t inv_rkey)
{
	return np_complete(pep, sgl, nsge, cookie, RAPT_OP_SEND, flags);
}

static int np_post_write(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
			 uint64_t cookie, uint64_t raddr, uint32_t rkey,
			 uint32_t flags)
{
	return np_complete(pep, sgl, nsge, cookie, RAPT_OP_RDMA_WRITE, flags);
}

static int np_post_read(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
			uint64_t cookie, uint64_t raddr, uint32_t rkey,
			uint32_t flags)
{
	return np_complete(pep, sgl, nsge, cookie, RAPT_OP_RDMA_READ, flags);
}

static const struct rapt_prov_ops np_ops = {
	.size = sizeof(struct rapt_prov_ops),
	.ia_open = np_ia_open,
	.ia_close = np_ia_close,
	.ia_query = np_ia_query,
	.lmr_create = np_lmr_create,
	.lmr_free = np_lmr_free,
	.evd_create = np_evd_create,
	.evd_free = np_evd_free,
	.ep_create = np_ep_create,
	.ep_free = np_ep_free,
	.ep_connect = np_ep_connect,
	.ep_disconnect = np_ep_disconnect,
	.post_recv = np_post_recv,
	.post_send = np_post_send,
	.post_write = np_post_write,
	.post_read = np_post_read,
};

static const struct rapt_provider np_provider = {
	.size = sizeof(struct rapt_provider),
	.abi = RAPT_PROVIDER_ABI,
	.name = NP_NAME,
	.version = RAPT_VERSION_PACK(1, 0, 0),
	.description = "benchmark fixture: every operation completes at once",
	.init = np_init,
	.fini = np_fini,
	.get_devices = np_get_devices,
	.ops = &np_ops,
};

/**
 * rapt_provider_entry - the null provider's descriptor
 *
 * Return: the static descriptor.
 */
RAPT_PROVIDER_EXPORT const struct rapt_provider *rapt_provider_entry(void)
{
	return &np_provider;
}
