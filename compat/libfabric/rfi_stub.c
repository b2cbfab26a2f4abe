// SPDX-License-Identifier: MIT
/*
 * The ops rfi does not offer.  libfabric calls its ops tables without a
 * NULL check and exports none of its own "not supported" helpers to
 * external providers, so every slot gets a function here that answers
 * -FI_ENOSYS: a consumer learns at once, and truthfully, what is missing.
 */
#include "rfi.h"

int rfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int rfi_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

/*
 * No extension ops at all.  ofi_rxm asks for OFI_OPS_FLOW_CTRL: the
 * -FI_ENOSYS answer tells it rfi does its own flow control (rfi_msg.c).
 */
int rfi_ops_open(struct fid *fid, const char *name, uint64_t flags,
		 void **ops, void *context)
{
	return -FI_ENOSYS;
}

int rfi_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

int rfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		   void *ops, void *context)
{
	return -FI_ENOSYS;
}

int rfi_no_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}

int rfi_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

int rfi_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		   size_t paramlen)
{
	return -FI_ENOSYS;
}

int rfi_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

int rfi_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int rfi_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		  size_t paramlen)
{
	return -FI_ENOSYS;
}

int rfi_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

int rfi_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

ssize_t rfi_no_cancel(fid_t fid, void *context)
{
	return -FI_ENOSYS;
}

int rfi_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		  struct fid_ep **tx_ep, void *context)
{
	return -FI_ENOSYS;
}

int rfi_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		  struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

ssize_t rfi_no_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

int rfi_no_getopt(fid_t fid, int level, int optname, void *optval,
		  size_t *optlen)
{
	return -FI_ENOPROTOOPT;
}

int rfi_no_setopt(fid_t fid, int level, int optname, const void *optval,
		  size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

/* ---- tagged messages: ofi_rxm provides them on top of FI_MSG ---- */

static ssize_t no_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_trecvv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src_addr,
			 uint64_t tag, uint64_t ignore, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_trecvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			   uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t no_tsend(struct fid_ep *ep, const void *buf, size_t len,
			void *desc, fi_addr_t dest_addr, uint64_t tag,
			void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_tsendv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest_addr,
			 uint64_t tag, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_tsendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			   uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t no_tinject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest_addr, uint64_t tag)
{
	return -FI_ENOSYS;
}

static ssize_t no_tsenddata(struct fid_ep *ep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest_addr,
			    uint64_t tag, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_tinjectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
	return -FI_ENOSYS;
}

struct fi_ops_tagged rfi_no_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = no_trecv,
	.recvv = no_trecvv,
	.recvmsg = no_trecvmsg,
	.send = no_tsend,
	.sendv = no_tsendv,
	.sendmsg = no_tsendmsg,
	.inject = no_tinject,
	.senddata = no_tsenddata,
	.injectdata = no_tinjectdata,
};

/* ---- atomics: not offered (rapt has no atomic verbs yet) ---- */

static ssize_t no_awrite(struct fid_ep *ep, const void *buf, size_t count,
			 void *desc, fi_addr_t dest_addr, uint64_t addr,
			 uint64_t key, enum fi_datatype datatype,
			 enum fi_op op, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_awritev(struct fid_ep *ep, const struct fi_ioc *iov,
			  void **desc, size_t count, fi_addr_t dest_addr,
			  uint64_t addr, uint64_t key,
			  enum fi_datatype datatype, enum fi_op op,
			  void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_awritemsg(struct fid_ep *ep,
			    const struct fi_msg_atomic *msg, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t no_ainject(struct fid_ep *ep, const void *buf, size_t count,
			  fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			  enum fi_datatype datatype, enum fi_op op)
{
	return -FI_ENOSYS;
}

static ssize_t no_areadwrite(struct fid_ep *ep, const void *buf,
			     size_t count, void *desc, void *result,
			     void *result_desc, fi_addr_t dest_addr,
			     uint64_t addr, uint64_t key,
			     enum fi_datatype datatype, enum fi_op op,
			     void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_areadwritev(struct fid_ep *ep, const struct fi_ioc *iov,
			      void **desc, size_t count,
			      struct fi_ioc *resultv, void **result_desc,
			      size_t result_count, fi_addr_t dest_addr,
			      uint64_t addr, uint64_t key,
			      enum fi_datatype datatype, enum fi_op op,
			      void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_areadwritemsg(struct fid_ep *ep,
				const struct fi_msg_atomic *msg,
				struct fi_ioc *resultv, void **result_desc,
				size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t no_acompwrite(struct fid_ep *ep, const void *buf,
			     size_t count, void *desc, const void *compare,
			     void *compare_desc, void *result,
			     void *result_desc, fi_addr_t dest_addr,
			     uint64_t addr, uint64_t key,
			     enum fi_datatype datatype, enum fi_op op,
			     void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_acompwritev(struct fid_ep *ep, const struct fi_ioc *iov,
			      void **desc, size_t count,
			      const struct fi_ioc *comparev,
			      void **compare_desc, size_t compare_count,
			      struct fi_ioc *resultv, void **result_desc,
			      size_t result_count, fi_addr_t dest_addr,
			      uint64_t addr, uint64_t key,
			      enum fi_datatype datatype, enum fi_op op,
			      void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_acompwritemsg(struct fid_ep *ep,
				const struct fi_msg_atomic *msg,
				const struct fi_ioc *comparev,
				void **compare_desc, size_t compare_count,
				struct fi_ioc *resultv, void **result_desc,
				size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int no_avalid(struct fid_ep *ep, enum fi_datatype datatype,
		     enum fi_op op, size_t *count)
{
	return -FI_ENOSYS;
}

struct fi_ops_atomic rfi_no_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = no_awrite,
	.writev = no_awritev,
	.writemsg = no_awritemsg,
	.inject = no_ainject,
	.readwrite = no_areadwrite,
	.readwritev = no_areadwritev,
	.readwritemsg = no_areadwritemsg,
	.compwrite = no_acompwrite,
	.compwritev = no_acompwritev,
	.compwritemsg = no_acompwritemsg,
	.writevalid = no_avalid,
	.readwritevalid = no_avalid,
	.compwritevalid = no_avalid,
};

/* ---- collectives: not offered ---- */

static ssize_t no_barrier(struct fid_ep *ep, fi_addr_t coll_addr,
			  void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_broadcast(struct fid_ep *ep, void *buf, size_t count,
			    void *desc, fi_addr_t coll_addr,
			    fi_addr_t root_addr, enum fi_datatype datatype,
			    uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

/* alltoall and allgather share a signature */
static ssize_t no_coll(struct fid_ep *ep, const void *buf, size_t count,
		       void *desc, void *result, void *result_desc,
		       fi_addr_t coll_addr, enum fi_datatype datatype,
		       uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

/* allreduce and reduce_scatter share a signature */
static ssize_t no_coll_op(struct fid_ep *ep, const void *buf, size_t count,
			  void *desc, void *result, void *result_desc,
			  fi_addr_t coll_addr, enum fi_datatype datatype,
			  enum fi_op op, uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_reduce(struct fid_ep *ep, const void *buf, size_t count,
			 void *desc, void *result, void *result_desc,
			 fi_addr_t coll_addr, fi_addr_t root_addr,
			 enum fi_datatype datatype, enum fi_op op,
			 uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

/* scatter and gather share a signature */
static ssize_t no_coll_root(struct fid_ep *ep, const void *buf, size_t count,
			    void *desc, void *result, void *result_desc,
			    fi_addr_t coll_addr, fi_addr_t root_addr,
			    enum fi_datatype datatype, uint64_t flags,
			    void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_coll_msg(struct fid_ep *ep,
			   const struct fi_msg_collective *msg,
			   struct fi_ioc *resultv, void **result_desc,
			   size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t no_barrier2(struct fid_ep *ep, fi_addr_t coll_addr,
			   uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

struct fi_ops_collective rfi_no_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = no_barrier,
	.broadcast = no_broadcast,
	.alltoall = no_coll,
	.allreduce = no_coll_op,
	.allgather = no_coll,
	.reduce_scatter = no_coll_op,
	.reduce = no_reduce,
	.scatter = no_coll_root,
	.gather = no_coll_root,
	.msg = no_coll_msg,
	.barrier2 = no_barrier2,
};
