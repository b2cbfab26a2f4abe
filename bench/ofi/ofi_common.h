/* SPDX-License-Identifier: MIT */
/*
 * Common part of the libfabric peer programs: the same measurements as
 * rapt_perf, written against libfabric's public API only.
 *
 * FI_EP_MSG endpoints; the server listens on a passive endpoint with one EQ
 * for it and every accepted endpoint; one CQ per process for transmit and
 * receive (FI_CQ_FORMAT_CONTEXT); 32 bytes of private data on every
 * fi_connect() and fi_accept() (struct ofi_pdata), the RMA target
 * advertising its region in the accept private data.  Hints: caps FI_MSG
 * (+ FI_RMA), mode FI_CONTEXT | FI_CONTEXT2 (each operation gets its own
 * struct fi_context2), mr_mode FI_MR_LOCAL | FI_MR_VIRT_ADDR |
 * FI_MR_ALLOCATED | FI_MR_PROV_KEY: buffers are always registered and their
 * descriptors passed; RMA addresses are offsets unless the provider keeps
 * FI_MR_VIRT_ADDR.  -m poll busy-polls fi_cq_read()/fi_eq_read(); -m block
 * uses fi_cq_sread()/fi_eq_sread().
 */
#ifndef RAPT_BENCH_OFI_COMMON_H
#define RAPT_BENCH_OFI_COMMON_H

#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "../bench_util.h"

#define OFI_API_VERSION FI_VERSION(1, 17)
#define OFI_PDATA_MAGIC 0x72617074u	/* "rapt" */
#define OFI_CM_BUF	(sizeof(struct fi_eq_cm_entry) + 256)

/** struct ofi_pdata - the 32 bytes of private data on connect and accept */
struct ofi_pdata {
	uint32_t magic;
	uint32_t seq;
	uint64_t addr;
	uint64_t key;
	uint64_t len;
};

/** struct ofi_opts - options every program takes */
struct ofi_opts {
	const char *prov;
	int block;
	int rma;
	int verbose;
	uint64_t timeout;
};

/** struct ofi - one process's fabric objects */
struct ofi {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_pep *pep;
	int block;
	int virt_addr;
};

/** struct ofi_cm - one EQ event */
struct ofi_cm {
	uint32_t event;
	fid_t fid;
	struct fi_info *info;		/* FI_CONNREQ: caller frees */
	struct ofi_pdata pdata;
	size_t pdata_len;
};

int ofi_parse_common(int c, const char *arg, struct ofi_opts *o);
int ofi_parse_prov(int argc, char **argv, struct ofi_opts *o);
void ofi_usage(const char *name, const char *opts)
	__attribute__((noreturn));
#define OFI_COMMON_OPTS "m:vt:"
#define OFI_COMMON_USAGE "[-m poll|block] [-v] [-t SECONDS]"

int ofi_init(struct ofi *f, const struct ofi_opts *o, unsigned int port,
	     size_t eq_size, size_t cq_size);
void ofi_fini(struct ofi *f);
int ofi_listen(struct ofi *f, unsigned int *port);
int ofi_ep_open(struct ofi *f, struct fi_info *info, void *context,
		struct fid_ep **ep);
int ofi_connect(struct ofi *f, struct fid_ep *ep, const struct ofi_pdata *pd);
int ofi_eq_next(struct ofi *f, struct ofi_cm *cm, int wait_ms);
int ofi_eq_expect(struct ofi *f, uint32_t event, fid_t fid,
		  struct ofi_cm *cm);
int ofi_cq_next(struct ofi *f, void **ctx, int wait);
int ofi_mr(struct ofi *f, void *buf, size_t len, uint64_t access,
	   uint64_t key, struct fid_mr **mr);
uint64_t ofi_rma_base(const struct ofi *f, const void *buf);
void ofi_progress(struct ofi *f);
int ofi_unsupported(int ret);
void ofi_err(const char *what, int ret);

int ofi_serve_start(struct ofi *f, const struct ofi_opts *o, int pfd,
		    size_t eq_size, size_t cq_size, struct ofi_cm *req);
int ofi_accept_wait(struct ofi *f, struct fid_ep *ep,
		    const struct ofi_pdata *pd);
int ofi_connect_wait(struct ofi *f, struct fid_ep *ep,
		     const struct ofi_pdata *pd, struct ofi_pdata *peer);
int ofi_post_recv(struct ofi *f, struct fid_ep *ep, void *buf, size_t len,
		  void *desc, void *ctx);
int ofi_post_send(struct ofi *f, struct fid_ep *ep, void *buf, size_t len,
		  void *desc, void *ctx);
int ofi_wait_ctx(struct ofi *f, void *ctx, uint64_t *others);
int ofi_drain_shutdown(struct ofi *f);
int ofi_exit_code(int ret);

/** struct ofi_side - one endpoint and the one buffer registered for it */
struct ofi_side {
	struct ofi f;
	struct fid_ep *ep;
	struct fid_mr *mr;
	char *buf;
	void *desc;
};

int ofi_side_mem(struct ofi_side *s, size_t len, uint64_t access,
		 uint64_t key);
void ofi_side_close(struct ofi_side *s);
void ofi_side_hangup(struct ofi_side *s);

/** struct ofi_lat_opts - options of the latency programs */
struct ofi_lat_opts {
	struct ofi_opts oo;
	uint64_t size;
	uint64_t iters;
	uint64_t warmup;
	int verify;
};

/**
 * struct ofi_lat_prog - what a latency program puts into ofi_lat_main()
 * @name: the program's name, also its bench= word
 * @rate_key: the key of the operations per second
 * @oneway: also report half the median round trip
 * @rma: the program needs FI_RMA
 * @serve: the server for bu_fork_server(); its arg is struct ofi_lat_opts
 * @client: times @o->iters operations after @o->warmup into @lat, and
 *	the time they took into @elapsed
 */
struct ofi_lat_prog {
	const char *name;
	const char *rate_key;
	int oneway;
	int rma;
	int (*serve)(void *arg, int pfd);
	int (*client)(const struct ofi_lat_opts *o, unsigned int port,
		      uint64_t *lat, uint64_t *elapsed);
};

int ofi_lat_main(int argc, char **argv, const struct ofi_lat_prog *p);

#endif /* RAPT_BENCH_OFI_COMMON_H */
