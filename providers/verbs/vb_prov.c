/* SPDX-License-Identifier: MIT */
/*
 * verbs layer: the descriptor every provider on the layer hands the core,
 * and its ops table.  A provider on rdma-core differs in its struct
 * vb_transport (vb_tp), not in its ops: the DSO's one export,
 * rapt_provider_entry, is defined here and describes vb_tp.
 */
#include "config.h"

#include <pthread.h>

#include "verbs.h"

const struct rapt_prov_ops vb_prov_ops = {
	.size = sizeof(struct rapt_prov_ops),
	.ia_open = vb_ia_open,
	.ia_close = vb_ia_close,
	.ia_query = vb_ia_query,
	.pz_create = vb_pz_create,
	.pz_free = vb_pz_free,
	.lmr_create = vb_lmr_create,
	.lmr_free = vb_lmr_free,
	.evd_create = vb_evd_create,
	.evd_free = vb_evd_free,
	.evd_progress = vb_evd_progress,
	.ep_create = vb_ep_create,
	.ep_free = vb_ep_free,
	.ep_modify = vb_ep_modify,
	.ep_connect = vb_ep_connect,
	.ep_disconnect = vb_ep_disconnect,
	.ep_reset = vb_ep_reset,
	.ep_set_peer_timeout = vb_ep_set_peer_timeout,
	.ep_get_status = vb_ep_get_status,
	.post_recv = vb_post_recv,
	.post_send = vb_post_send,
	.post_write = vb_post_write,
	.post_read = vb_post_read,
	.psp_create = vb_psp_create,
	.psp_free = vb_psp_free,
	.cr_accept = vb_cr_accept,
	.cr_reject = vb_cr_reject,
	.evd_wait_fd = vb_evd_wait_fd,
	.evd_trywait = vb_evd_trywait,
	.evd_wait_done = vb_evd_wait_done,
	.srq_create = vb_srq_create,
	.srq_free = vb_srq_free,
	.srq_post_recv = vb_srq_post_recv,
	.srq_query = vb_srq_query,
	.srq_resize = vb_srq_resize,
	.ep_set_srq = vb_ep_set_srq,
	.rmr_create = vb_rmr_create,
	.rmr_free = vb_rmr_free,
	.rmr_bind = vb_rmr_bind,
	.rmr_query = vb_rmr_query,
};

static struct rapt_provider vb_provider = {
	.size = sizeof(struct rapt_provider),
	.abi = RAPT_PROVIDER_ABI,
	.init = vb_init,
	.fini = vb_fini,
	.get_devices = vb_get_devices,
	.ops = &vb_prov_ops,
};
static pthread_once_t vb_provider_once = PTHREAD_ONCE_INIT;

static void vb_provider_fill(void)
{
	vb_provider.name = vb_tp->name;
	vb_provider.version = vb_tp->version;
	vb_provider.description = vb_tp->description;
}

RAPT_PROVIDER_EXPORT const struct rapt_provider *rapt_provider_entry(void)
{
	pthread_once(&vb_provider_once, vb_provider_fill);
	return &vb_provider;
}
