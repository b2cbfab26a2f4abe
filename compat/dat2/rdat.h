/* SPDX-License-Identifier: MIT */
/*
 * librapt-dat2: a DAT 2.0 (uDAPL) provider on rapt's public API.
 *
 * libdat2 dlopens this library for a dat.conf line, calls
 * dat_provider_init() with the line's IA name and ia_params (the rapt IA
 * name), and from then on dispatches every dat_* call through the
 * provider table whose address is the first word of each handle.  Each
 * DAT object is a struct rdat_obj wrapping one rapt handle; rapt's
 * consumer context of that handle points back at the wrapper, so events
 * translate rapt handles into DAT handles.
 *
 * Only <rapt/rapt.h> is used: nothing here knows rapt's internals.
 */
#ifndef RAPT_COMPAT_DAT2_RDAT_H
#define RAPT_COMPAT_DAT2_RDAT_H

#include <pthread.h>
#include <stdint.h>

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include <rapt/rapt.h>

#define RDAT_EXPORT __attribute__((visibility("default")))

/* An error return with its class bit, as DAT consumers test it. */
#define RDAT_ERR(type, sub) \
	((DAT_RETURN)(DAT_CLASS_ERROR | (DAT_UINT32)(type) | (DAT_UINT32)(sub)))
#define RDAT_NOTIMPL RDAT_ERR(DAT_NOT_IMPLEMENTED, 0)
#define RDAT_NOMODEL RDAT_ERR(DAT_MODEL_NOT_SUPPORTED, 0)
#define RDAT_NOMEM RDAT_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY)
/* A private handle type: rdat_evd.c's marks on the async EVD. */
#define RDAT_TYPE_MARK ((DAT_HANDLE_TYPE)(DAT_HANDLE_TYPE_EXTENSION_BASE + 1))
/* rdat_get(): a live handle of any type */
#define RDAT_ANY ((DAT_HANDLE_TYPE)-1)

struct rdat_ia;

/*
 * struct rdat_obj - the head of every DAT handle
 * @prov: the provider table of the IA; must stay the first member:
 *        libdat2 reads it through the handle (DAT_HANDLE_TO_PROVIDER)
 * @type: DAT_HANDLE_TYPE
 * @ia: the IA it belongs to (itself for an IA)
 * @ctx: the consumer's context (dat_set_consumer_context)
 * @h: the rapt handle it wraps
 * @hnext: chain of the live-handle table (rdat_obj.c)
 */
struct rdat_obj {
	const DAT_PROVIDER *prov;
	DAT_HANDLE_TYPE type;
	struct rdat_ia *ia;
	DAT_CONTEXT ctx;
	void *h;
	struct rdat_obj *hnext;
};

struct rdat_evd {
	struct rdat_obj o;
	DAT_EVD_FLAGS flags;
	DAT_COUNT qlen;
	int enabled;
	int unwaitable;
};

struct rdat_ia {
	struct rdat_obj o;
	struct rapt_ia_attr attr;
	struct rdat_evd *async_evd;
	char rapt_name[DAT_NAME_MAX_LENGTH];
};

struct rdat_pz {
	struct rdat_obj o;
};

struct rdat_lmr {
	struct rdat_obj o;
	DAT_LMR_PARAM param;
};

struct rdat_rmr {
	struct rdat_obj o;
	struct rdat_pz *pz;
};

struct rdat_srq {
	struct rdat_obj o;
	struct rdat_pz *pz;
	DAT_SRQ_ATTR attr;
};

struct rdat_ep {
	struct rdat_obj o;
	struct rdat_pz *pz;
	struct rdat_evd *recv_evd;
	struct rdat_evd *request_evd;
	struct rdat_evd *connect_evd;
	struct rdat_srq *srq;
	DAT_EP_ATTR attr;
	int tentative;	/* made for a CR by a DAT_PSP_PROVIDER_FLAG PSP,
			 * not yet accepted: o.h is NULL until
			 * dat_ep_modify() gives it a PZ and EVDs */
	int ended;	/* the consumer has had its connection's end */
	DAT_CONN_QUAL remote_qual;
	struct sockaddr_storage local_addr;
	struct sockaddr_storage remote_addr;
};

struct rdat_psp {
	struct rdat_obj o;
	DAT_CONN_QUAL qual;
	struct rdat_evd *evd;
	DAT_PSP_FLAGS flags;
};

struct rdat_rsp {
	struct rdat_obj o;
	DAT_CONN_QUAL qual;
	struct rdat_evd *evd;
	struct rdat_ep *ep;
};

struct rdat_cr {
	struct rdat_obj o;
	struct rdat_ep *ep;	/* the RSP's, or the one made for it */
	DAT_CONN_QUAL qual;
	struct sockaddr_storage remote_addr;
	DAT_COUNT pdata_len;
	unsigned char pdata[];
};

/* rdat_obj.c: the live-handle table and the rapt -> DAT code mapping */
void *rdat_obj_new(size_t size, DAT_HANDLE_TYPE type, struct rdat_ia *ia,
		   const DAT_PROVIDER *prov);
void rdat_obj_bind(struct rdat_obj *o, void *rapt_handle);
void *rdat_wrap(struct rdat_ia *ia, size_t size, DAT_HANDLE_TYPE type,
		void *rapt_handle);
DAT_RETURN rdat_free(DAT_HANDLE h, DAT_HANDLE_TYPE type);
void rdat_obj_del(struct rdat_obj *o);
void *rdat_get(DAT_HANDLE h, DAT_HANDLE_TYPE type);
void *rdat_from_rapt(void *rapt_handle);
size_t rdat_ia_children(struct rdat_ia *ia, struct rdat_obj **out,
			size_t max);
DAT_RETURN rdat_status(int rc);
uint16_t rdat_port(const struct sockaddr_storage *ss);
DAT_RETURN rdat_bad(DAT_HANDLE_TYPE type);
void rdat_trace(DAT_EVENT_NUMBER num, const void *h);

/* Per-object files: the calls the provider table names. */
DAT_RETURN rdat_set_consumer_context(DAT_HANDLE, DAT_CONTEXT);
DAT_RETURN rdat_get_consumer_context(DAT_HANDLE, DAT_CONTEXT *);
DAT_RETURN rdat_get_handle_type(DAT_HANDLE, DAT_HANDLE_TYPE *);

DAT_RETURN rdat_pz_create(DAT_IA_HANDLE, DAT_PZ_HANDLE *);
DAT_RETURN rdat_pz_query(DAT_PZ_HANDLE, DAT_PZ_PARAM_MASK, DAT_PZ_PARAM *);
DAT_RETURN rdat_pz_free(DAT_PZ_HANDLE);
DAT_RETURN rdat_lmr_create(DAT_IA_HANDLE, DAT_MEM_TYPE, DAT_REGION_DESCRIPTION,
			   DAT_VLEN, DAT_PZ_HANDLE, DAT_MEM_PRIV_FLAGS,
			   DAT_VA_TYPE, DAT_LMR_HANDLE *, DAT_LMR_CONTEXT *,
			   DAT_RMR_CONTEXT *, DAT_VLEN *, DAT_VADDR *);
DAT_RETURN rdat_lmr_query(DAT_LMR_HANDLE, DAT_LMR_PARAM_MASK, DAT_LMR_PARAM *);
DAT_RETURN rdat_lmr_free(DAT_LMR_HANDLE);
DAT_RETURN rdat_lmr_sync_rdma(DAT_IA_HANDLE, const DAT_LMR_TRIPLET *,
			      DAT_VLEN);

DAT_RETURN rdat_evd_create(DAT_IA_HANDLE, DAT_COUNT, DAT_CNO_HANDLE,
			   DAT_EVD_FLAGS, DAT_EVD_HANDLE *);
DAT_RETURN rdat_evd_query(DAT_EVD_HANDLE, DAT_EVD_PARAM_MASK, DAT_EVD_PARAM *);
DAT_RETURN rdat_evd_modify_cno(DAT_EVD_HANDLE, DAT_CNO_HANDLE);
DAT_RETURN rdat_evd_enable(DAT_EVD_HANDLE);
DAT_RETURN rdat_evd_disable(DAT_EVD_HANDLE);
DAT_RETURN rdat_evd_wait(DAT_EVD_HANDLE, DAT_TIMEOUT, DAT_COUNT, DAT_EVENT *,
			 DAT_COUNT *);
DAT_RETURN rdat_evd_resize(DAT_EVD_HANDLE, DAT_COUNT);
DAT_RETURN rdat_evd_post_se(DAT_EVD_HANDLE, const DAT_EVENT *);
DAT_RETURN rdat_evd_dequeue(DAT_EVD_HANDLE, DAT_EVENT *);
DAT_RETURN rdat_evd_free(DAT_EVD_HANDLE);
DAT_RETURN rdat_evd_set_unwaitable(DAT_EVD_HANDLE);
DAT_RETURN rdat_evd_clear_unwaitable(DAT_EVD_HANDLE);
struct rdat_evd *rdat_evd_make(struct rdat_ia *ia, DAT_COUNT qlen,
			       DAT_EVD_FLAGS flags, DAT_RETURN *ret);

DAT_RETURN rdat_ep_create(DAT_IA_HANDLE, DAT_PZ_HANDLE, DAT_EVD_HANDLE,
			  DAT_EVD_HANDLE, DAT_EVD_HANDLE, const DAT_EP_ATTR *,
			  DAT_EP_HANDLE *);
DAT_RETURN rdat_ep_create_with_srq(DAT_IA_HANDLE, DAT_PZ_HANDLE,
				   DAT_EVD_HANDLE, DAT_EVD_HANDLE,
				   DAT_EVD_HANDLE, DAT_SRQ_HANDLE,
				   const DAT_EP_ATTR *, DAT_EP_HANDLE *);
DAT_RETURN rdat_ep_query(DAT_EP_HANDLE, DAT_EP_PARAM_MASK, DAT_EP_PARAM *);
DAT_RETURN rdat_ep_modify(DAT_EP_HANDLE, DAT_EP_PARAM_MASK,
			  const DAT_EP_PARAM *);
DAT_RETURN rdat_ep_connect(DAT_EP_HANDLE, DAT_IA_ADDRESS_PTR, DAT_CONN_QUAL,
			   DAT_TIMEOUT, DAT_COUNT, const DAT_PVOID, DAT_QOS,
			   DAT_CONNECT_FLAGS);
DAT_RETURN rdat_ep_dup_connect(DAT_EP_HANDLE, DAT_EP_HANDLE, DAT_TIMEOUT,
			       DAT_COUNT, const DAT_PVOID, DAT_QOS);
DAT_RETURN rdat_ep_disconnect(DAT_EP_HANDLE, DAT_CLOSE_FLAGS);
DAT_RETURN rdat_ep_post_send(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *,
			     DAT_DTO_COOKIE, DAT_COMPLETION_FLAGS);
DAT_RETURN rdat_ep_post_recv(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *,
			     DAT_DTO_COOKIE, DAT_COMPLETION_FLAGS);
DAT_RETURN rdat_ep_post_rdma_read(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *,
				  DAT_DTO_COOKIE, const DAT_RMR_TRIPLET *,
				  DAT_COMPLETION_FLAGS);
DAT_RETURN rdat_ep_post_rdma_write(DAT_EP_HANDLE, DAT_COUNT,
				   DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
				   const DAT_RMR_TRIPLET *,
				   DAT_COMPLETION_FLAGS);
DAT_RETURN rdat_ep_post_send_inv(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *,
				 DAT_DTO_COOKIE, DAT_COMPLETION_FLAGS,
				 DAT_BOOLEAN, DAT_RMR_CONTEXT);
DAT_RETURN rdat_ep_get_status(DAT_EP_HANDLE, DAT_EP_STATE *, DAT_BOOLEAN *,
			      DAT_BOOLEAN *);
DAT_RETURN rdat_ep_free(DAT_EP_HANDLE);
DAT_RETURN rdat_ep_reset(DAT_EP_HANDLE);
DAT_EP_STATE rdat_ep_state(uint32_t rapt_state);
struct rdat_ep *rdat_ep_tentative(struct rdat_ia *ia);

DAT_RETURN rdat_srq_create(DAT_IA_HANDLE, DAT_PZ_HANDLE, DAT_SRQ_ATTR *,
			   DAT_SRQ_HANDLE *);
DAT_RETURN rdat_srq_free(DAT_SRQ_HANDLE);
DAT_RETURN rdat_srq_post_recv(DAT_SRQ_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *,
			      DAT_DTO_COOKIE);
DAT_RETURN rdat_srq_query(DAT_SRQ_HANDLE, DAT_SRQ_PARAM_MASK, DAT_SRQ_PARAM *);
DAT_RETURN rdat_srq_resize(DAT_SRQ_HANDLE, DAT_COUNT);
DAT_RETURN rdat_srq_set_lw(DAT_SRQ_HANDLE, DAT_COUNT);

DAT_RETURN rdat_psp_create(DAT_IA_HANDLE, DAT_CONN_QUAL, DAT_EVD_HANDLE,
			   DAT_PSP_FLAGS, DAT_PSP_HANDLE *);
DAT_RETURN rdat_psp_create_any(DAT_IA_HANDLE, DAT_CONN_QUAL *, DAT_EVD_HANDLE,
			       DAT_PSP_FLAGS, DAT_PSP_HANDLE *);
DAT_RETURN rdat_psp_query(DAT_PSP_HANDLE, DAT_PSP_PARAM_MASK, DAT_PSP_PARAM *);
DAT_RETURN rdat_psp_free(DAT_PSP_HANDLE);
DAT_RETURN rdat_rsp_create(DAT_IA_HANDLE, DAT_CONN_QUAL, DAT_EP_HANDLE,
			   DAT_EVD_HANDLE, DAT_RSP_HANDLE *);
DAT_RETURN rdat_rsp_query(DAT_RSP_HANDLE, DAT_RSP_PARAM_MASK, DAT_RSP_PARAM *);
DAT_RETURN rdat_rsp_free(DAT_RSP_HANDLE);
DAT_RETURN rdat_cr_query(DAT_CR_HANDLE, DAT_CR_PARAM_MASK, DAT_CR_PARAM *);
DAT_RETURN rdat_cr_accept(DAT_CR_HANDLE, DAT_EP_HANDLE, DAT_COUNT,
			  const DAT_PVOID);
DAT_RETURN rdat_cr_reject(DAT_CR_HANDLE, DAT_COUNT, const DAT_PVOID);
uint64_t rdat_qual(const struct rdat_ia *ia, DAT_CONN_QUAL qual);
struct rdat_cr *rdat_cr_wrap(struct rdat_ia *ia, struct rapt_cr *cr);

/* rdat_rmr.c: memory windows (RAPT_CAP_RMR) */
DAT_RETURN rdat_rmr_create(DAT_PZ_HANDLE, DAT_RMR_HANDLE *);
DAT_RETURN rdat_rmr_create_for_ep(DAT_PZ_HANDLE, DAT_RMR_HANDLE *);
DAT_RETURN rdat_rmr_query(DAT_RMR_HANDLE, DAT_RMR_PARAM_MASK, DAT_RMR_PARAM *);
DAT_RETURN rdat_rmr_bind(DAT_RMR_HANDLE, DAT_LMR_HANDLE,
			 const DAT_LMR_TRIPLET *, DAT_MEM_PRIV_FLAGS,
			 DAT_VA_TYPE, DAT_EP_HANDLE, DAT_RMR_COOKIE,
			 DAT_COMPLETION_FLAGS, DAT_RMR_CONTEXT *);
DAT_RETURN rdat_rmr_free(DAT_RMR_HANDLE);
int rdat_rmr_done(uint64_t id, DAT_RMR_HANDLE *rmr, DAT_RMR_COOKIE *cookie,
		  int *quiet);

/* rdat_mark.c: events this library makes, and freed EPs' events */
void rdat_mark_post(struct rdat_evd *evd, struct rdat_ep *ep,
		    DAT_EVENT_NUMBER num);
int rdat_mark_event(void *pointer, DAT_EVENT *e);
void rdat_mark_del(struct rdat_obj *o);
void rdat_ep_gone(struct rdat_ep *ep, int owes_end);
void *rdat_ghost_of(void *rapt_ep, int end);

/* rdat_prov.c: the IA */
DAT_RETURN rdat_ia_open(const DAT_NAME_PTR, DAT_COUNT, DAT_EVD_HANDLE *,
			DAT_IA_HANDLE *);
DAT_RETURN rdat_ia_query(DAT_IA_HANDLE, DAT_EVD_HANDLE *, DAT_IA_ATTR_MASK,
			 DAT_IA_ATTR *, DAT_PROVIDER_ATTR_MASK,
			 DAT_PROVIDER_ATTR *);
DAT_RETURN rdat_ia_close(DAT_IA_HANDLE, DAT_CLOSE_FLAGS);

/* rdat_stub.c: the provider table, with what DAT has and rapt does not */
extern const DAT_PROVIDER rdat_provider_template;

#endif /* RAPT_COMPAT_DAT2_RDAT_H */
