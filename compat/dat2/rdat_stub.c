// SPDX-License-Identifier: MIT
/*
 * The DAT_PROVIDER table, and the DAT calls that rapt has no object for.
 *
 * Each of those returns DAT_NOT_IMPLEMENTED (the call exists in DAT, the
 * provider has nothing behind it) or DAT_MODEL_NOT_SUPPORTED (the model
 * asked for is one rapt does not have), as uDAPL's own providers do;
 * none pretends to succeed.  Why each one is missing:
 *  - CNO: rapt waits per EVD (rapt_evd_wait, rapt_evd_get_fd); one wait
 *    point for many EVDs is not in its API.
 *  - post_rdma_read_to_rmr: its sink is an RMR triplet (an iWARP read
 *    placed through a window's STag); rapt's reads land in LMRs only.
 *    The RMR calls themselves are in rdat_rmr.c.
 *  - CSP / ep_common_connect, cr_handoff, HA, EP watermarks, recv_query:
 *    no rapt counterpart.
 */
#include "rdat.h"

static DAT_RETURN rdat_cno_create(DAT_IA_HANDLE ia, DAT_OS_WAIT_PROXY_AGENT a,
				  DAT_CNO_HANDLE *cno)
{
	return RDAT_NOTIMPL;
}

static DAT_RETURN rdat_cno_modify_agent(DAT_CNO_HANDLE cno,
					DAT_OS_WAIT_PROXY_AGENT a)
{
	return RDAT_NOTIMPL;
}

static DAT_RETURN rdat_cno_query(DAT_CNO_HANDLE cno, DAT_CNO_PARAM_MASK m,
				 DAT_CNO_PARAM *p)
{
	return RDAT_NOTIMPL;
}

static DAT_RETURN rdat_cno_free(DAT_CNO_HANDLE cno)
{
	return RDAT_NOTIMPL;
}

static DAT_RETURN rdat_cno_wait(DAT_CNO_HANDLE cno, DAT_TIMEOUT t,
				DAT_EVD_HANDLE *evd)
{
	return RDAT_NOTIMPL;
}

static DAT_RETURN rdat_cno_fd_create(DAT_IA_HANDLE ia, DAT_FD *fd,
				     DAT_CNO_HANDLE *cno)
{
	return RDAT_NOMODEL;
}

static DAT_RETURN rdat_cno_trigger(DAT_CNO_HANDLE cno, DAT_EVD_HANDLE *evd)
{
	return RDAT_NOMODEL;
}

static DAT_RETURN rdat_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL q)
{
	return RDAT_NOTIMPL;
}

static DAT_RETURN rdat_csp_create(DAT_IA_HANDLE ia, DAT_COMM *comm,
				  DAT_IA_ADDRESS_PTR a, DAT_EVD_HANDLE evd,
				  DAT_CSP_HANDLE *csp)
{
	return RDAT_NOMODEL;
}

static DAT_RETURN rdat_csp_query(DAT_CSP_HANDLE csp, DAT_CSP_PARAM_MASK m,
				 DAT_CSP_PARAM *p)
{
	return RDAT_NOMODEL;
}

static DAT_RETURN rdat_csp_free(DAT_CSP_HANDLE csp)
{
	return RDAT_NOMODEL;
}

static DAT_RETURN rdat_ep_common_connect(DAT_EP_HANDLE ep,
					 DAT_IA_ADDRESS_PTR a, DAT_TIMEOUT t,
					 DAT_COUNT len, const DAT_PVOID pd)
{
	return RDAT_NOMODEL;
}

static DAT_RETURN rdat_post_read_to_rmr(DAT_EP_HANDLE ep,
					const DAT_RMR_TRIPLET *l,
					DAT_DTO_COOKIE c,
					const DAT_RMR_TRIPLET *r,
					DAT_COMPLETION_FLAGS f)
{
	return RDAT_NOTIMPL;
}

static DAT_RETURN rdat_ia_ha_related(DAT_IA_HANDLE ia, const DAT_NAME_PTR n,
				     DAT_BOOLEAN *answer)
{
	return RDAT_NOTIMPL;
}

static DAT_RETURN rdat_ep_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *n,
				     DAT_COUNT *span)
{
	return RDAT_NOTIMPL;
}

static DAT_RETURN rdat_ep_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT soft,
					DAT_COUNT hard)
{
	return RDAT_NOTIMPL;
}

static DAT_RETURN rdat_extendedop(DAT_HANDLE h, DAT_EXTENDED_OP op,
				  va_list args)
{
	return RDAT_NOTIMPL;	/* extension_supported is NONE */
}

/* Copied per dat.conf line by dat_provider_init() (device_name, extension). */
const DAT_PROVIDER rdat_provider_template = {
	.ia_open_func = rdat_ia_open,
	.ia_query_func = rdat_ia_query,
	.ia_close_func = rdat_ia_close,
	.set_consumer_context_func = rdat_set_consumer_context,
	.get_consumer_context_func = rdat_get_consumer_context,
	.get_handle_type_func = rdat_get_handle_type,
	.cno_create_func = rdat_cno_create,
	.cno_modify_agent_func = rdat_cno_modify_agent,
	.cno_query_func = rdat_cno_query,
	.cno_free_func = rdat_cno_free,
	.cno_wait_func = rdat_cno_wait,
	.cr_query_func = rdat_cr_query,
	.cr_accept_func = rdat_cr_accept,
	.cr_reject_func = rdat_cr_reject,
	.cr_handoff_func = rdat_cr_handoff,
	.evd_create_func = rdat_evd_create,
	.evd_query_func = rdat_evd_query,
	.evd_modify_cno_func = rdat_evd_modify_cno,
	.evd_enable_func = rdat_evd_enable,
	.evd_disable_func = rdat_evd_disable,
	.evd_wait_func = rdat_evd_wait,
	.evd_resize_func = rdat_evd_resize,
	.evd_post_se_func = rdat_evd_post_se,
	.evd_dequeue_func = rdat_evd_dequeue,
	.evd_free_func = rdat_evd_free,
	.ep_create_func = rdat_ep_create,
	.ep_query_func = rdat_ep_query,
	.ep_modify_func = rdat_ep_modify,
	.ep_connect_func = rdat_ep_connect,
	.ep_dup_connect_func = rdat_ep_dup_connect,
	.ep_disconnect_func = rdat_ep_disconnect,
	.ep_post_send_func = rdat_ep_post_send,
	.ep_post_recv_func = rdat_ep_post_recv,
	.ep_post_rdma_read_func = rdat_ep_post_rdma_read,
	.ep_post_rdma_write_func = rdat_ep_post_rdma_write,
	.ep_get_status_func = rdat_ep_get_status,
	.ep_free_func = rdat_ep_free,
	.lmr_create_func = rdat_lmr_create,
	.lmr_query_func = rdat_lmr_query,
	.lmr_free_func = rdat_lmr_free,
	.rmr_create_func = rdat_rmr_create,
	.rmr_query_func = rdat_rmr_query,
	.rmr_bind_func = rdat_rmr_bind,
	.rmr_free_func = rdat_rmr_free,
	.psp_create_func = rdat_psp_create,
	.psp_query_func = rdat_psp_query,
	.psp_free_func = rdat_psp_free,
	.rsp_create_func = rdat_rsp_create,
	.rsp_query_func = rdat_rsp_query,
	.rsp_free_func = rdat_rsp_free,
	.pz_create_func = rdat_pz_create,
	.pz_query_func = rdat_pz_query,
	.pz_free_func = rdat_pz_free,
	.psp_create_any_func = rdat_psp_create_any,
	.ep_reset_func = rdat_ep_reset,
	.evd_set_unwaitable_func = rdat_evd_set_unwaitable,
	.evd_clear_unwaitable_func = rdat_evd_clear_unwaitable,
	.lmr_sync_rdma_read_func = rdat_lmr_sync_rdma,
	.lmr_sync_rdma_write_func = rdat_lmr_sync_rdma,
	.ep_create_with_srq_func = rdat_ep_create_with_srq,
	.ep_recv_query_func = rdat_ep_recv_query,
	.ep_set_watermark_func = rdat_ep_set_watermark,
	.srq_create_func = rdat_srq_create,
	.srq_free_func = rdat_srq_free,
	.srq_post_recv_func = rdat_srq_post_recv,
	.srq_query_func = rdat_srq_query,
	.srq_resize_func = rdat_srq_resize,
	.srq_set_lw_func = rdat_srq_set_lw,
	.csp_create_func = rdat_csp_create,
	.csp_query_func = rdat_csp_query,
	.csp_free_func = rdat_csp_free,
	.ep_common_connect_func = rdat_ep_common_connect,
	.rmr_create_for_ep_func = rdat_rmr_create_for_ep,
	.ep_post_send_with_invalidate_func = rdat_ep_post_send_inv,
	.ep_post_rdma_read_to_rmr_func = rdat_post_read_to_rmr,
	.cno_fd_create_func = rdat_cno_fd_create,
	.cno_trigger_func = rdat_cno_trigger,
	.ia_ha_related_func = rdat_ia_ha_related,
	.handle_extendedop_func = rdat_extendedop,
};
