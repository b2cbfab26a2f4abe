/* SPDX-License-Identifier: MIT */
/*
 * rapt's libfabric provider ("rapt"): FI_EP_MSG over rapt's public API,
 * so that libfabric's ofi_rxm can layer FI_EP_RDM on any rapt transport.
 *
 * Object map: fabric = one rapt IA; domain = a PZ on it; EQ = an EVD with
 * the CR, CONNECTION and SOFTWARE streams; CQ = an EVD with the DTO
 * stream; MR = an LMR; PEP = a PSP; EP = a rapt EP, created by fi_enable()
 * once its EQ and CQs are bound (rapt wants its EVDs at creation).
 *
 * Messages go through provider-owned receive slots (rfi_msg.c): iWARP has
 * no receiver-not-ready, a send that finds no receive breaks the
 * connection, and ofi_rxm does no flow control of its own over a core that
 * answers OFI_OPS_FLOW_CTRL with -FI_ENOSYS.  So every message carries a
 * small header with credits, and a sender holds (-FI_EAGAIN) when the
 * peer has no free slot.  See docs/libfabric.md.
 *
 * Locking: one mutex per fabric guards every object of that fabric; rapt
 * calls are made under it except the blocking rapt_evd_wait().
 */
#ifndef RAPT_COMPAT_RFI_H
#define RAPT_COMPAT_RFI_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>

#include <rapt/rapt.h>

#define RFI_PROV_NAME		"rapt"
#define RFI_PROV_VERSION	FI_VERSION(1, 0)
#define RFI_FI_VERSION		FI_VERSION(1, 17)

/* Bytes rfi puts in front of the consumer's connect and accept data:
 * magic, version and the sender's receive-slot count. */
#define RFI_CM_PREFIX		4
#define RFI_CM_MAGIC		0x52u	/* 'R' */
#define RFI_CM_VERSION		1u

#define RFI_IOV_MAX		4	/* fi_recvv/fi_sendv elements */
#define RFI_TX_DEPTH_MAX	256u

extern struct fi_provider rfi_prov;
/* The entry libfabric looks up in every *fi.so (FI_EXT_INI defines it);
 * declared for -Wmissing-prototypes, exported by fi.map alone. */
struct fi_provider *fi_prov_ini(void);

/* Tunables (fi_param, environment FI_RAPT_*), read once at load. */
struct rfi_params {
	char *ia;		/* FI_RAPT_IA: use only this IA */
	size_t slots;		/* FI_RAPT_RX_SLOTS: receive slots an EP has */
	size_t slot_size;	/* FI_RAPT_SLOT_SIZE: bytes per slot */
};
extern struct rfi_params rfi_params;

/* What getinfo learned of one usable IA (rfi_prov.c caches them). */
struct rfi_ia_desc {
	struct rapt_ia_attr attr;
	bool loopback;
};

int rfi_ia_list(const struct rfi_ia_desc **list, size_t *count);
int rfi_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info);
size_t rfi_cm_data_size(const struct rapt_ia_attr *attr);
int64_t rfi_now_us(void);
int rfi_errno(int rapt_status);

/* ---- objects ---- */

struct rfi_fabric {
	struct fid_fabric fabric;	/* must stay first */
	pthread_mutex_t lock;
	struct rapt_ia *ia;
	struct rapt_ia_attr attr;
	int refs;			/* domains, EQs, PEPs */
};

struct rfi_domain {
	struct fid_domain domain;	/* must stay first */
	struct rfi_fabric *fab;
	struct rapt_pz *pz;
	int refs;			/* CQs, MRs, EPs */
};

struct rfi_eq_entry;

struct rfi_eq {
	struct fid_eq eq;		/* must stay first */
	struct rfi_fabric *fab;
	struct rapt_evd *evd;
	struct rfi_eq_entry *head, *tail;
	void *err_data;			/* the last readerr's err_data */
	int refs;			/* EPs and PEPs bound */
};

/* A completion waiting in a CQ's software queue. */
struct rfi_cq {
	struct fid_cq cq;		/* must stay first */
	struct rfi_domain *dom;
	struct rapt_evd *evd;
	enum fi_cq_format format;
	struct fi_cq_data_entry *ring;
	size_t ring_len, ring_head, ring_count;
	struct fi_cq_err_entry *errs;
	size_t err_len, err_count;
	int refs;			/* EPs bound */
};

struct rfi_mr {
	struct fid_mr mr;		/* must stay first */
	struct rfi_domain *dom;
	struct rapt_lmr *lmr;
	struct rapt_lmr_info info;
};

struct rfi_pep {
	struct fid_pep pep;		/* must stay first */
	struct rfi_fabric *fab;
	struct rfi_eq *eq;
	struct fi_info *info;
	struct rapt_psp *psp;
	uint16_t port;
};

/* FI_CLASS_CONNREQ: info->handle of an FI_CONNREQ event. */
struct rfi_connreq {
	struct fid fid;			/* must stay first */
	struct rfi_pep *pep;
	struct rapt_cr *cr;
	uint16_t peer_slots;
};

enum rfi_ep_state {
	RFI_EP_IDLE,		/* no rapt EP yet */
	RFI_EP_ENABLED,
	RFI_EP_CONNECTING,
	RFI_EP_ACCEPTING,
	RFI_EP_CONNECTED,
	RFI_EP_SHUTDOWN,
};

/* A consumer's receive, waiting for a message in a slot. */
struct rfi_urecv {
	void *context;
	struct iovec iov[RFI_IOV_MAX];
	size_t count;
	bool report;
};

/* An operation posted on rapt, until its completion. */
struct rfi_tx {
	void *context;
	uint64_t flags;		/* FI_SEND|FI_MSG, FI_RMA|FI_READ ... */
	size_t len;
	bool report;		/* the consumer wants a completion */
	bool internal;		/* a credit message: nothing to report */
};

struct rfi_ep {
	struct fid_ep ep;		/* must stay first */
	struct rfi_domain *dom;
	struct fi_info *info;
	struct rfi_eq *eq;
	struct rfi_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	struct rfi_connreq *creq;	/* passive side, until accept */
	struct rapt_ep *rep;
	enum rfi_ep_state state;
	bool shutdown_reported;		/* FI_SHUTDOWN queued already */

	/* receive slots, their headers and the send headers: one LMR */
	uint8_t *slab;
	size_t slab_len;
	struct rapt_lmr *slab_lmr;
	struct rapt_lmr_info slab_info;
	size_t nslots, slot_size;

	/* messages in slots, in arrival order, waiting for a receive */
	uint32_t *rxq_slot;
	uint32_t *rxq_len;
	size_t rxq_head, rxq_count;
	/* the consumer's receives, in posting order */
	struct rfi_urecv *urq;
	size_t urq_len, urq_head, urq_count;

	/* operations in flight */
	struct rfi_tx *tx;
	uint32_t *tx_free;
	size_t tx_depth, tx_nfree;

	/* a message longer than a slot, sent one fragment per credit */
	struct {
		bool active;
		struct rapt_sge sgl[RFI_IOV_MAX];
		unsigned int nsge;
		size_t len, off;
		void *context;
		bool report;
	} frag;
	/* bytes of the receive at the head of urq already filled */
	size_t rx_off;
	bool rx_trunc;
	/* the connection is gone: receives complete FI_ECANCELED */
	bool rx_flushed;

	/* flow control: slots the peer has free for us, slots we freed */
	uint32_t credits;
	uint32_t grant;
};

/* Header at the front of every message in a slot. */
struct rfi_hdr {
	uint32_t grant;		/* slots the sender has freed since */
	uint16_t type;		/* RFI_MSG_* */
	uint16_t flags;		/* RFI_HDR_* */
};
#define RFI_MSG_DATA	1
#define RFI_MSG_CREDIT	2
#define RFI_HDR_MORE	(1u << 0)	/* another fragment follows */
#define RFI_HDR_LEN	sizeof(struct rfi_hdr)

int rfi_getopt_cm(const struct rfi_fabric *fab, int level, int optname,
		  void *optval, size_t *optlen);

/* rfi_fabric.c */
int rfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context);

/* rfi_eq.c */
int rfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eq, void *context);
void rfi_eq_drop_connreqs(struct rfi_eq *eq, struct rfi_pep *pep);
void rfi_eq_remove_fid(struct rfi_eq *eq, struct fid *fid);
int rfi_eq_trywait(struct rfi_eq *eq);

/* rfi_cq.c */
int rfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **cq, void *context);
int rfi_cq_push(struct rfi_cq *cq, void *context, uint64_t flags,
		size_t len);
int rfi_cq_push_err(struct rfi_cq *cq, void *context, uint64_t flags,
		    int err, int prov_errno, size_t olen);
void rfi_cq_progress(struct rfi_cq *cq);
int rfi_cq_trywait(struct rfi_cq *cq);

/* rfi_mr.c */
int rfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
	       uint64_t offset, uint64_t requested_key, uint64_t flags,
	       struct fid_mr **mr, void *context);
int rfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		uint64_t access, uint64_t offset, uint64_t requested_key,
		uint64_t flags, struct fid_mr **mr, void *context);
int rfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		   uint64_t flags, struct fid_mr **mr);
int rfi_sgl(struct rapt_sge *sgl, const struct iovec *iov, void **desc,
	    size_t count, size_t *len);
int rfi_inline_sgl(struct rapt_sge *sgl, const struct iovec *iov,
		   size_t count, size_t *len);

/* rfi_ep.c */
int rfi_endpoint(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep, void *context);
int rfi_ep_enable(struct rfi_ep *ep);
struct rfi_ep *rfi_ep_of(struct rapt_ep *rep);
void rfi_ep_set_state(struct rfi_ep *ep, enum rfi_ep_state state);
extern struct fi_ops_cm rfi_ep_cm_ops;

/* rfi_pep.c */
int rfi_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **pep, void *context);
int rfi_sockaddr_len(const void *addr);
int rfi_name_copy(const struct sockaddr_storage *ss, uint16_t port,
		  void *addr, size_t *addrlen);

/* rfi_msg.c */
extern struct fi_ops_msg rfi_msg_ops;
void rfi_msg_dto(struct rfi_ep *ep, const struct rapt_event_dto *dto);
void rfi_msg_flow(struct rfi_ep *ep);
int rfi_msg_setup(struct rfi_ep *ep);
void rfi_msg_teardown(struct rfi_ep *ep);
int rfi_tx_get(struct rfi_ep *ep, void *context, uint64_t flags, size_t len,
	       bool report, uint32_t *idx);
void rfi_tx_put(struct rfi_ep *ep, uint32_t idx);
ssize_t rfi_post_status(int rapt_status);

/* rfi_rma.c */
extern struct fi_ops_rma rfi_rma_ops;

/* rfi_stub.c: every slot rfi does not offer answers -FI_ENOSYS */
extern struct fi_ops_tagged rfi_no_tagged_ops;
extern struct fi_ops_atomic rfi_no_atomic_ops;
extern struct fi_ops_collective rfi_no_collective_ops;
int rfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int rfi_no_control(struct fid *fid, int command, void *arg);
int rfi_ops_open(struct fid *fid, const char *name, uint64_t flags,
		 void **ops, void *context);
int rfi_no_tostr(const struct fid *fid, char *buf, size_t len);
int rfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		   void *ops, void *context);
int rfi_no_setname(fid_t fid, void *addr, size_t addrlen);
int rfi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int rfi_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		   size_t paramlen);
int rfi_no_listen(struct fid_pep *pep);
int rfi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int rfi_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		  size_t paramlen);
int rfi_no_shutdown(struct fid_ep *ep, uint64_t flags);
int rfi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		struct fid_mc **mc, void *context);
ssize_t rfi_no_cancel(fid_t fid, void *context);
int rfi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		  struct fid_ep **tx_ep, void *context);
int rfi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		  struct fid_ep **rx_ep, void *context);
ssize_t rfi_no_size_left(struct fid_ep *ep);
int rfi_no_getopt(fid_t fid, int level, int optname, void *optval,
		  size_t *optlen);
int rfi_no_setopt(fid_t fid, int level, int optname, const void *optval,
		  size_t optlen);

#endif /* RAPT_COMPAT_RFI_H */
