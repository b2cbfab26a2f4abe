/* SPDX-License-Identifier: MIT */
/*
 * Default ops: what the core calls for an op a provider leaves NULL, or that
 * its (older, shorter) ops table does not have.  After rapt__ops_fill() the
 * core never tests an op for NULL.
 *
 * Keep in the order of struct rapt_prov_ops; a new op needs a stub here and
 * a line in RAPT_OPS_LIST.
 */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "rapt_int.h"
#include "registry.h"

static int stub_ia_open(void *prov, const char *device, uint32_t port,
			struct rapt_core_ia *cia, void **pia)
{
	return RAPT_ENOTSUP;
}

static int stub_ia_close(void *pia)
{
	return RAPT_ENOTSUP;
}

static int stub_ia_query(void *pia, struct rapt_ia_attr *attr)
{
	return RAPT_ENOTSUP;
}

/* A transport without protection zones needs no provider object. */
static int stub_pz_create(void *pia, void **ppz)
{
	*ppz = NULL;
	return 0;
}

static int stub_pz_free(void *ppz)
{
	return 0;
}

static int stub_lmr_create(void *pia, void *ppz, void *addr, size_t length,
			   uint32_t access, struct rapt_lmr_info *info,
			   void **plmr)
{
	return RAPT_ENOTSUP;
}

static int stub_lmr_free(void *plmr)
{
	return RAPT_ENOTSUP;
}

/* The EVD ring is the core's; a provider may need nothing of its own. */
static int stub_evd_create(void *pia, struct rapt_core_evd *cevd,
			   uint32_t qlen, uint32_t streams, void **pevd)
{
	*pevd = NULL;
	return 0;
}

static int stub_evd_free(void *pevd)
{
	return 0;
}

static int stub_evd_progress(void *pevd)
{
	return RAPT_ENOTSUP;
}

static int stub_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
			  struct rapt_ep *handle,
			  const struct rapt_ep_attr *attr, void *recv_pevd,
			  void *req_pevd, void *conn_pevd, void **pep)
{
	return RAPT_ENOTSUP;
}

static int stub_ep_free(void *pep)
{
	return RAPT_ENOTSUP;
}

static int stub_ep_modify(void *pep, const struct rapt_ep_attr *attr,
			  uint32_t mask)
{
	return RAPT_ENOTSUP;
}

static int stub_ep_connect(void *pep, const struct sockaddr *remote,
			   uint64_t service_id, const void *pdata,
			   size_t pdata_len, int64_t timeout_us)
{
	return RAPT_ENOTSUP;
}

static int stub_ep_disconnect(void *pep, uint32_t flags, const void *pdata,
			      size_t pdata_len)
{
	return RAPT_ENOTSUP;
}

static int stub_post_recv(void *pep, const struct rapt_sge *sgl,
			  uint32_t nsge, uint64_t cookie)
{
	return RAPT_ENOTSUP;
}

static int stub_post_send(void *pep, const struct rapt_sge *sgl,
			  uint32_t nsge, uint64_t cookie, uint32_t flags,
			  uint32_t inv_rkey)
{
	return RAPT_ENOTSUP;
}

static int stub_post_write(void *pep, const struct rapt_sge *sgl,
			   uint32_t nsge, uint64_t cookie, uint64_t raddr,
			   uint32_t rkey, uint32_t flags)
{
	return RAPT_ENOTSUP;
}

static int stub_post_read(void *pep, const struct rapt_sge *sgl,
			  uint32_t nsge, uint64_t cookie, uint64_t raddr,
			  uint32_t rkey, uint32_t flags)
{
	return RAPT_ENOTSUP;
}

static int stub_psp_create(void *pia, struct rapt_core_psp *cpsp,
			   uint64_t service_id,
			   const struct rapt_psp_attr *attr, void *cr_pevd,
			   uint64_t *bound_id, void **ppsp)
{
	return RAPT_ENOTSUP;
}

static int stub_psp_free(void *ppsp)
{
	return RAPT_ENOTSUP;
}

static int stub_cr_accept(void *ppsp, struct rapt_core_cr *ccr, void *pep,
			  const void *pdata, size_t pdata_len)
{
	return RAPT_ENOTSUP;
}

static int stub_cr_reject(void *ppsp, struct rapt_core_cr *ccr,
			  const void *pdata, size_t pdata_len)
{
	return RAPT_ENOTSUP;
}

/* No wait object: the core sleeps on condition variables. */
static int stub_evd_wait_fd(void *pevd, int *fd)
{
	return RAPT_ENOTSUP;
}

static int stub_evd_trywait(void *pevd, uint32_t how)
{
	return RAPT_ENOTSUP;
}

static int stub_evd_wait_done(void *pevd)
{
	return 0;
}

static int stub_ep_set_peer_timeout(void *pep, uint32_t timeout_ms)
{
	return RAPT_ENOTSUP;
}

static int stub_ep_reset(void *pep)
{
	return RAPT_ENOTSUP;
}

static int stub_ep_get_status(void *pep, uint32_t *recv, uint32_t *req)
{
	return RAPT_ENOTSUP;
}

static int stub_srq_create(void *pia, void *ppz, struct rapt_srq *handle,
			   const struct rapt_srq_attr *attr, void **psrq)
{
	return RAPT_ENOTSUP;
}

static int stub_srq_free(void *psrq)
{
	return RAPT_ENOTSUP;
}

static int stub_srq_post_recv(void *psrq, const struct rapt_sge *sgl,
			      uint32_t nsge, uint64_t cookie)
{
	return RAPT_ENOTSUP;
}

static int stub_srq_query(void *psrq, uint32_t *posted)
{
	return RAPT_ENOTSUP;
}

static int stub_srq_resize(void *psrq, uint32_t max_recv,
			   uint32_t low_watermark)
{
	return RAPT_ENOTSUP;
}

static int stub_ep_set_srq(void *pep, void *psrq)
{
	return RAPT_ENOTSUP;
}

static int stub_rmr_create(void *pia, void *ppz, void **prmr)
{
	return RAPT_ENOTSUP;
}

static int stub_rmr_free(void *prmr)
{
	return RAPT_ENOTSUP;
}

static int stub_rmr_bind(void *pep, void *prmr, void *plmr, uint64_t addr,
			 uint64_t length, uint32_t access, uint64_t cookie,
			 uint32_t flags, uint32_t *rkey)
{
	return RAPT_ENOTSUP;
}

static int stub_rmr_query(void *prmr, uint32_t *rkey)
{
	return RAPT_ENOTSUP;
}

/* Every op of struct rapt_prov_ops, in order. */
#define RAPT_OPS_LIST(X)						\
	X(ia_open) X(ia_close) X(ia_query)				\
	X(pz_create) X(pz_free)						\
	X(lmr_create) X(lmr_free)					\
	X(evd_create) X(evd_free) X(evd_progress)			\
	X(ep_create) X(ep_free) X(ep_modify) X(ep_connect)		\
	X(ep_disconnect)						\
	X(post_recv) X(post_send) X(post_write) X(post_read)		\
	X(psp_create) X(psp_free)					\
	X(cr_accept) X(cr_reject)					\
	X(evd_wait_fd) X(evd_trywait) X(evd_wait_done)			\
	X(ep_set_peer_timeout)						\
	X(ep_reset) X(ep_get_status)					\
	X(srq_create) X(srq_free) X(srq_post_recv) X(srq_query)	\
	X(srq_resize) X(ep_set_srq)					\
	X(rmr_create) X(rmr_free) X(rmr_bind) X(rmr_query)

#define STUB_INIT(op) .op = stub_##op,
static const struct rapt_prov_ops stub_ops = {
	.size = sizeof(struct rapt_prov_ops),
	RAPT_OPS_LIST(STUB_INIT)
};
#undef STUB_INIT

/* An op added to struct rapt_prov_ops but not to the list fails here. */
#define OP_SIZE(op) + sizeof(stub_ops.op)
_Static_assert(sizeof(struct rapt_prov_ops) ==
	       offsetof(struct rapt_prov_ops, ia_open) RAPT_OPS_LIST(OP_SIZE),
	       "RAPT_OPS_LIST must name every op of struct rapt_prov_ops");
#undef OP_SIZE

/* Does a table of @size bytes have the op at @off? */
static bool has_op(size_t size, size_t off, size_t op_size)
{
	return size >= off + op_size;
}

/**
 * rapt__ops_fill - build the complete ops table of a provider
 * @full: output, a table with every op set
 * @prov_ops: the provider's table, @prov_ops->size bytes long
 *
 * Ops past the end of the provider's table, or NULL in it, are the stubs:
 * RAPT_ENOTSUP, except pz_create/evd_create (succeed with no provider
 * object) and pz_free/evd_free (succeed).  Ops past the end of ours (a
 * provider built against a newer SDK) are ignored.
 */
void rapt__ops_fill(struct rapt_prov_ops *full,
		    const struct rapt_prov_ops *prov_ops)
{
	size_t size = prov_ops ? prov_ops->size : 0;

	*full = stub_ops;
#define FILL_OP(op)							\
	if (has_op(size, offsetof(struct rapt_prov_ops, op),		\
		   sizeof(full->op)) && prov_ops->op)			\
		full->op = prov_ops->op;
	RAPT_OPS_LIST(FILL_OP)
#undef FILL_OP
	full->size = sizeof(*full);
}
