/* SPDX-License-Identifier: MIT */
/*
 * verbs layer: devices, the IA, its address and its async events.
 *
 * A device is an ibverbs device whose transport is the provider's
 * (vb_tp->ibv_transport); its IA opens a context of its own
 * (ibv_open_device), so each IA has its own share of what the driver
 * allots per context (siw: the mmap keys of its queues).  rdma_cm needs
 * an IP address: the IA's is the first local address that rdma_cm binds
 * to the device (rdma_bind_addr names the device an address belongs to).
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "verbs.h"

#define VB_MAX_EVD_QLEN		(1u << 20)
/* rapt's own floor and ceiling on what a device reports. */
#define VB_MAX_DEPTH_CAP	(1u << 16)
#define VB_MAX_MSG_CAP		(1ull << 31)
/* Inline sizes tried when the IA opens, largest first. */
static const uint32_t inline_probe[] = { 1024, 512, 256, 128, 80, 64, 32 };

/* ------------------------------------------------------------------ */
/* Devices                                                             */
/* ------------------------------------------------------------------ */

static bool dev_ours(struct ibv_device *d)
{
	return (int)d->transport_type == vb_tp->ibv_transport;
}

/* Prefer IPv4, then global IPv6, then link-local IPv6. */
static int addr_score(const struct sockaddr *sa)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

	if (sa->sa_family == AF_INET)
		return 3;
	return IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr) ? 1 : 2;
}

/* Whether rdma_cm binds @sa to device @dev. */
static bool addr_on_dev(struct rdma_event_channel *ch, const char *dev,
			const struct sockaddr *sa)
{
	struct sockaddr_storage ss;
	struct rdma_cm_id *id;
	bool ok = false;

	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, sa, rapt_sockaddr_len(sa));
	rapt_sockaddr_set_port((struct sockaddr *)&ss, 0);
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return false;
	if (!rdma_bind_addr(id, (struct sockaddr *)&ss) && id->verbs &&
	    !strcmp(ibv_get_device_name(id->verbs->device), dev))
		ok = true;
	rdma_destroy_id(id);
	return ok;
}

/*
 * The IP address rdma_cm uses for @dev, or RAPT_ENODEV with @why filled.
 * Loopback addresses are skipped: rdma_cm treats 127/8 as a wildcard.
 */
static int dev_addr(const char *dev, struct sockaddr_storage *out,
		    unsigned int *ifindex, char *why, size_t why_len)
{
	struct rdma_event_channel *ch;
	struct ifaddrs *ifas, *ifa, *best = NULL;
	int n = 0;

	if (getifaddrs(&ifas)) {
		snprintf(why, why_len, "getifaddrs: %s", strerror(errno));
		return RAPT_EIO;
	}
	ch = rdma_create_event_channel();
	if (!ch) {
		snprintf(why, why_len,
			 "rdma_create_event_channel: %s (is rdma_ucm loaded?)",
			 strerror(errno));
		freeifaddrs(ifas);
		return RAPT_ENODEV;
	}
	for (ifa = ifas; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP) ||
		    (ifa->ifa_flags & IFF_LOOPBACK) ||
		    (ifa->ifa_addr->sa_family != AF_INET &&
		     ifa->ifa_addr->sa_family != AF_INET6))
			continue;
		if (best && addr_score(ifa->ifa_addr) <=
			    addr_score(best->ifa_addr))
			continue;
		n++;
		if (addr_on_dev(ch, dev, ifa->ifa_addr))
			best = ifa;
	}
	if (best) {
		memset(out, 0, sizeof(*out));
		memcpy(out, best->ifa_addr, rapt_sockaddr_len(best->ifa_addr));
		if (ifindex)
			*ifindex = if_nametoindex(best->ifa_name);
	} else {
		snprintf(why, why_len,
			 "no IP address of this machine belongs to %s (%d tried; give its network interface an address)",
			 dev, n);
	}
	rdma_destroy_event_channel(ch);
	freeifaddrs(ifas);
	return best ? 0 : RAPT_ENODEV;
}

static void dev_entry(struct ibv_device *d, struct rapt_prov_device *e)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_context *ctx;
	struct sockaddr_storage ss;

	snprintf(e->name, sizeof(e->name), "%s", ibv_get_device_name(d));
	e->transport = vb_tp->transport;
	e->rank = vb_tp->rank;
	ctx = ibv_open_device(d);
	if (!ctx) {
		e->status = rapt_errno_status(errno);
		snprintf(e->reason, sizeof(e->reason),
			 "ibv_open_device: %s (permission on /dev/infiniband?)",
			 strerror(errno));
		return;
	}
	if (ibv_query_device(ctx, &da)) {
		e->status = RAPT_EIO;
		snprintf(e->reason, sizeof(e->reason),
			 "ibv_query_device: %s", strerror(errno));
	} else {
		e->nports = da.phys_port_cnt;
	}
	/* A device's transport is its first port's (RoCE or IB). */
	if (!e->status && vb_tp->port_transport && !ibv_query_port(ctx, 1, &pa))
		e->transport = vb_tp->port_transport(&pa);
	ibv_close_device(ctx);
	if (e->status)
		return;
	e->status = dev_addr(e->name, &ss, NULL, e->reason,
			     sizeof(e->reason));
	if (!e->status && vb_tp->device_note)
		vb_tp->device_note(e->name, (const struct sockaddr *)&ss,
				   e->reason, sizeof(e->reason));
}

int vb_get_devices(void *prov, struct rapt_prov_device **out,
		   uint32_t *nout)
{
	struct ibv_device **list;
	struct rapt_prov_device *d;
	int i, n = 0, all = 0;

	list = ibv_get_device_list(&all);
	if (!list) {
		*out = NULL;
		*nout = 0;
		return 0;
	}
	d = calloc(all ? (size_t)all : 1, sizeof(*d));
	if (!d) {
		ibv_free_device_list(list);
		return RAPT_ENOMEM;
	}
	for (i = 0; i < all; i++)
		if (dev_ours(list[i]))
			dev_entry(list[i], &d[n++]);
	ibv_free_device_list(list);
	*out = d;
	*nout = (uint32_t)n;
	return 0;
}

/*
 * Provider init: librapt keeps a provider whose init fails, with the
 * reason, so rapt_info says "no iWARP device" instead of listing nothing.
 */
int vb_init(void **prov)
{
	struct ibv_device **list;
	int i, all = 0, ours = 0;

	*prov = NULL;
	list = ibv_get_device_list(&all);
	if (!list) {
		rapt_prov_set_error("no %s device: ibv_get_device_list: %s (no RDMA support in this kernel, or ib_uverbs not loaded)",
				    vb_tp->kind, strerror(errno));
		return RAPT_ENODEV;
	}
	for (i = 0; i < all; i++)
		ours += dev_ours(list[i]);
	ibv_free_device_list(list);
	if (!ours) {
		rapt_prov_set_error("no %s device (rdma-core sees %d RDMA device%s, none of them %s)",
				    vb_tp->kind, all, all == 1 ? "" : "s",
				    vb_tp->kind);
		return RAPT_ENODEV;
	}
	return 0;
}

void vb_fini(void *prov)
{
}

/* ------------------------------------------------------------------ */
/* IA                                                                  */
/* ------------------------------------------------------------------ */

static int ia_open_ctx(struct vb_ia *ia, const char *device)
{
	struct ibv_device **list;
	int i, all = 0, ret = RAPT_ENODEV;

	list = ibv_get_device_list(&all);
	if (!list) {
		rapt_prov_set_error("%s: ibv_get_device_list: %s", vb_tp->name,
				    strerror(errno));
		return RAPT_ENODEV;
	}
	for (i = 0; i < all; i++) {
		if (!dev_ours(list[i]) ||
		    strcmp(ibv_get_device_name(list[i]), device))
			continue;
		ia->ctx = ibv_open_device(list[i]);
		if (!ia->ctx) {
			ret = rapt_errno_status(errno);
			rapt_prov_set_error("%s: ibv_open_device(%s): %s",
					    vb_tp->name, device,
					    strerror(errno));
		} else {
			ret = 0;
		}
		break;
	}
	ibv_free_device_list(list);
	if (i == all)
		rapt_prov_set_error("%s: no %s device '%s'", vb_tp->name,
				    vb_tp->kind, device);
	return ret;
}

/*
 * Does a post on this device stay in user space?  ibv_post_send() is an
 * inline call of the driver library's post_send.  Those of rdma-core's
 * software devices (rxe, siw) and of Omni-Path and TrueScale HCAs
 * (hfi1verbs, ipathverbs) write a command to the kernel, which is a
 * cancellation point; the libraries below ring the device's doorbell from
 * user space.  dladdr() tells which library it is.  Any other counts as
 * one that may write: its posts run with cancellation held off
 * (vb_post_guard()), which on a doorbell post would be two atomic
 * operations of 25 ns a post for nothing.
 */
static bool posts_in_user_space(struct ibv_context *ctx)
{
	static const char *const doorbell[] = {
		"libmlx4", "libmlx5", "libbnxt_re", "libirdma", "libefa",
		"libhns", "libqedr", "liberdma", "libmana", "libvmw_pvrdma",
		"libmthca", "libocrdma",
	};
	const char *base;
	Dl_info di;
	size_t i, n;

	if (!dladdr((void *)(uintptr_t)ctx->ops.post_send, &di) ||
	    !di.dli_fname)
		return false;
	base = strrchr(di.dli_fname, '/');
	base = base ? base + 1 : di.dli_fname;
	for (i = 0; i < sizeof(doorbell) / sizeof(doorbell[0]); i++) {
		n = strlen(doorbell[i]);
		if (!strncmp(base, doorbell[i], n) &&
		    (base[n] == '-' || base[n] == '.'))
			return true;
	}
	return false;
}

/* The largest max_inline_data a QP of this device accepts. */
static uint32_t probe_inline(struct vb_ia *ia)
{
	struct ibv_qp_init_attr qa;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	uint32_t got = 0;
	size_t i;

	pd = ibv_alloc_pd(ia->ctx);
	cq = ibv_create_cq(ia->ctx, 4, NULL, NULL, 0);
	for (i = 0; pd && cq && i < sizeof(inline_probe) /
		    sizeof(inline_probe[0]); i++) {
		memset(&qa, 0, sizeof(qa));
		qa.send_cq = cq;
		qa.recv_cq = cq;
		qa.qp_type = IBV_QPT_RC;
		qa.cap.max_send_wr = 1;
		qa.cap.max_recv_wr = 1;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		qa.cap.max_inline_data = inline_probe[i];
		qp = ibv_create_qp(pd, &qa);
		if (qp) {
			got = qa.cap.max_inline_data >= inline_probe[i] ?
			      inline_probe[i] : qa.cap.max_inline_data;
			ibv_destroy_qp(qp);
			break;
		}
	}
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	return got;
}

static void async_handler(struct rapt_io *io, uint32_t events);

static void ia_unregister(void *arg)
{
	struct vb_ia *ia = arg;

	rapt_engine_close(ia->eng, &ia->async_io, false);
}

/*
 * The engine watches a duplicate of the context's async-event fd: it
 * closes what it watches, and the context closes its own.  (O_NONBLOCK
 * is the open file's, so it holds for both.)
 */
static int ia_start(struct vb_ia *ia)
{
	int ret, fl;

	ret = rapt_engine_start(&ia->eng, vb_tp->name);
	if (ret)
		return ret;
	/* A polling consumer's calls poll its CQs: the engine thread need
	 * not look every millisecond whether it still polls. */
	rapt_engine_aside_max(ia->eng, VB_ENGINE_ASIDE_MAX_MS);
	fl = fcntl(ia->ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(ia->ctx->async_fd, F_SETFL, fl | O_NONBLOCK)) {
		vb_err("%s: cannot make the async-event fd non-blocking: %m",
		       ia->dev);
		ret = RAPT_EIO;
		goto err_eng;
	}
	ia->async_io.fd = fcntl(ia->ctx->async_fd, F_DUPFD_CLOEXEC, 0);
	ia->async_io.handler = async_handler;
	if (ia->async_io.fd < 0) {
		vb_err("%s: dup of the async-event fd: %m", ia->dev);
		ret = RAPT_EIO;
		goto err_eng;
	}
	ret = rapt_engine_add(ia->eng, &ia->async_io, EPOLLIN);
	if (ret)
		goto err_fd;
	ret = vb_cm_start(ia);
	if (ret)
		goto err_fd;
	return 0;

err_fd:
	rapt_engine_call(ia->eng, ia_unregister, ia);
err_eng:
	rapt_engine_stop(ia->eng);
	ia->eng = NULL;
	return ret;
}

int vb_ia_open(void *prov, const char *device, uint32_t port,
	       struct rapt_core_ia *cia, void **pia)
{
	char why[256];
	struct vb_ia *ia;
	int ret;

	ia = calloc(1, sizeof(*ia));
	if (!ia)
		return RAPT_ENOMEM;
	ia->cia = cia;
	snprintf(ia->dev, sizeof(ia->dev), "%s", device);
	pthread_mutex_init(&ia->lock, NULL);
	vb_qpmap_init(ia);
	ret = ia_open_ctx(ia, device);
	if (ret)
		goto err_free;
	ia->post_nocancel = !posts_in_user_space(ia->ctx);
	vb_dbg("%s: posts %s", device, ia->post_nocancel ?
	       "may reach the kernel: cancellation held off around them" :
	       "ring the doorbell from user space");
	if (ibv_query_device(ia->ctx, &ia->dattr)) {
		ret = RAPT_EIO;
		rapt_prov_set_error("%s: ibv_query_device(%s): %s",
				    vb_tp->name, device, strerror(errno));
		goto err_ctx;
	}
	ia->port = port ? (uint8_t)port : 1;
	if (ia->port > ia->dattr.phys_port_cnt ||
	    ibv_query_port(ia->ctx, ia->port, &ia->pattr)) {
		ret = RAPT_ENODEV;
		rapt_prov_set_error("%s: %s has no port %u (it has %u)",
				    vb_tp->name, device, ia->port,
				    ia->dattr.phys_port_cnt);
		goto err_ctx;
	}
	ret = dev_addr(device, &ia->addr, &ia->ifindex, why, sizeof(why));
	if (ret) {
		rapt_prov_set_error("%s: %s", vb_tp->name, why);
		goto err_ctx;
	}
	ia->max_inline = probe_inline(ia);
	if (vb_tp->ia_open)
		vb_tp->ia_open(ia);
	ret = ia_start(ia);
	if (ret)
		goto err_ctx;
	ret = vb_evd_null_create(ia);
	if (ret)
		goto err_stop;
	vb_dbg("opened %s port %u (inline %u)", device, ia->port,
	       ia->max_inline);
	*pia = ia;
	return 0;

err_stop:
	vb_cm_stop(ia);
	rapt_engine_call(ia->eng, ia_unregister, ia);
	rapt_engine_stop(ia->eng);
err_ctx:
	ibv_close_device(ia->ctx);
err_free:
	vb_qpmap_fini(ia);
	pthread_mutex_destroy(&ia->lock);
	free(ia);
	return ret;
}

int vb_ia_close(void *pia)
{
	struct vb_ia *ia = pia;
	uint32_t i;

	vb_evd_null_free(ia);
	vb_cm_stop(ia);
	rapt_engine_call(ia->eng, ia_unregister, ia);
	rapt_engine_stop(ia->eng);
	if (ibv_close_device(ia->ctx))
		vb_err("%s: ibv_close_device: %m", ia->dev);
	for (i = 0; i < VB_SLOT_CHUNKS; i++)
		free(atomic_load(&ia->chunks[i]));
	vb_qpmap_fini(ia);
	pthread_mutex_destroy(&ia->lock);
	free(ia);
	return 0;
}

static uint32_t cap32(uint64_t v, uint64_t cap)
{
	return (uint32_t)(v < cap ? v : cap);
}

int vb_ia_query(void *pia, struct rapt_ia_attr *a)
{
	struct vb_ia *ia = pia;
	const struct ibv_device_attr *d = &ia->dattr;
	uint32_t i;

	a->transport = vb_tp->port_transport ?
		       vb_tp->port_transport(&ia->pattr) : vb_tp->transport;
	a->port = ia->port;
	a->caps = vb_tp->ia_caps ? vb_tp->ia_caps(ia) : vb_tp->caps;
	/* vb_qp.c's, for every transport on the layer; rdma_cm
	 * connects any two processes */
	a->caps |= RAPT_CAP_EP_RESET | RAPT_CAP_EP_STATUS |
		   RAPT_CAP_CROSS_PROCESS;
	if (!ia->max_inline)
		a->caps &= ~(uint64_t)RAPT_CAP_INLINE;
	a->max_ep = cap32((uint64_t)d->max_qp, VB_SLOT_SRQ);
	if ((a->caps & RAPT_CAP_READ_CHECK) &&
	    !(a->caps & RAPT_CAP_SEND_INVALIDATE)) {
		/* vb_rmr.c's windows: registrations, which the device
		 * checks as tightly as rapt promises where it checks the
		 * rights of reads, and which no peer can invalidate. */
		a->caps |= RAPT_CAP_RMR;
		a->max_rmr = (uint32_t)d->max_mr;
	}
	if (d->max_srq > 0 && d->max_srq_wr > 0) {
		/* vb_srq.c's */
		a->caps |= RAPT_CAP_SRQ;
		a->max_srq = cap32((uint64_t)d->max_srq, VB_SRQ_MAX);
		a->max_srq_recv = cap32((uint64_t)d->max_srq_wr,
					VB_SRQ_ENT_MAX - 1);
		a->max_srq_sge = (uint32_t)d->max_srq_sge;
	}
	a->max_evd_qlen = cap32((uint64_t)d->max_cqe, VB_MAX_EVD_QLEN);
	a->max_send_depth = cap32((uint64_t)d->max_qp_wr, VB_MAX_DEPTH_CAP);
	a->max_recv_depth = cap32((uint64_t)d->max_qp_wr, VB_MAX_DEPTH_CAP);
	a->max_send_sge = (uint32_t)d->max_sge;
	/* A receive needs no SGE of its own: a zero-length receive posts
	 * one of length 0 (some drivers refuse none). */
	a->max_recv_sge = (uint32_t)d->max_sge;
	a->max_inline = ia->max_inline;
	a->max_msg_size = ia->pattr.max_msg_sz ?
			  (ia->pattr.max_msg_sz < VB_MAX_MSG_CAP ?
			   ia->pattr.max_msg_sz : VB_MAX_MSG_CAP) :
			  VB_MAX_MSG_CAP;
	a->max_rdma_size = a->max_msg_size;
	a->max_lmr_size = d->max_mr_size;
	a->max_rdma_read_in = (uint32_t)d->max_qp_rd_atom;
	a->max_rdma_read_out = (uint32_t)d->max_qp_init_rd_atom;
	a->pdata_connect = vb_tp->pdata_connect;
	a->pdata_accept = vb_tp->pdata_accept;
	a->pdata_reject = vb_tp->pdata_reject;
	a->pdata_disconnect = 0;
	a->service_id_min = VB_SERVICE_MIN;
	a->service_id_max = VB_SERVICE_MAX;
	for (i = 0; i < RAPT_EVD_NSTREAMS; i++)
		a->evd_merge[i] = RAPT_EVD_ALL_STREAMS;
	a->local_addr = ia->addr;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The EP table                                                        */
/* ------------------------------------------------------------------ */

static struct vb_slot *slot_at(struct vb_ia *ia, uint32_t idx)
{
	return &atomic_load(&ia->chunks[idx >> VB_SLOT_CHUNK_BITS])
		[idx & (VB_SLOT_CHUNK - 1)];
}

/**
 * vb_ia_slot_get - give @ep a slot (and generation) in the EP table
 * @ia: the IA
 * @ep: sets ep->slot and ep->gen
 *
 * Return: 0, RAPT_ENOMEM, RAPT_ENOSPC (a million EPs).
 */
int vb_ia_slot_get(struct vb_ia *ia, struct vb_ep *ep)
{
	struct vb_slot *s, *c;
	uint32_t idx;
	int ret = 0;

	pthread_mutex_lock(&ia->lock);
	if (ia->free_slot) {
		idx = ia->free_slot - 1;
		ia->free_slot = slot_at(ia, idx)->next_free;
	} else if (ia->nslots < VB_SLOT_SRQ) {
		idx = ia->nslots;
		if (!atomic_load(&ia->chunks[idx >> VB_SLOT_CHUNK_BITS])) {
			c = calloc(VB_SLOT_CHUNK, sizeof(*c));
			if (!c) {
				ret = RAPT_ENOMEM;
				goto out;
			}
			atomic_store_explicit(
				&ia->chunks[idx >> VB_SLOT_CHUNK_BITS], c,
				memory_order_release);
		}
		ia->nslots++;
	} else {
		ret = RAPT_ENOSPC;
		goto out;
	}
	s = slot_at(ia, idx);
	ep->slot = idx;
	ep->gen = atomic_load(&s->gen);
	atomic_store_explicit(&s->ep, ep, memory_order_release);
out:
	pthread_mutex_unlock(&ia->lock);
	return ret;
}

/* After this, completions that name @ep's slot and generation are
 * dropped; the caller then makes sure no poller still holds @ep. */
void vb_ia_slot_put(struct vb_ia *ia, struct vb_ep *ep)
{
	struct vb_slot *s;

	pthread_mutex_lock(&ia->lock);
	s = slot_at(ia, ep->slot);
	atomic_store(&s->gen, (atomic_load(&s->gen) + 1) & VB_GEN_MASK);
	atomic_store(&s->ep, NULL);
	s->next_free = ia->free_slot;
	ia->free_slot = ep->slot + 1;
	pthread_mutex_unlock(&ia->lock);
}

/* ------------------------------------------------------------------ */
/* Async events                                                        */
/* ------------------------------------------------------------------ */

static void async_qp(struct vb_ia *ia, struct ibv_async_event *ev)
{
	struct vb_ep *ep = ev->element.qp->qp_context;
	struct rapt_prov_conn_event ce;

	memset(&ce, 0, sizeof(ce));
	switch (ev->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		vb_dbg("%s: QP %u: %s", ia->dev, ev->element.qp->qp_num,
		       ibv_event_type_str(ev->event_type));
		if (!ep)
			return;
		pthread_mutex_lock(&ep->lock);
		ep->broken = true;
		pthread_mutex_unlock(&ep->lock);
		rapt_prov_async_event(ia->cia, RAPT_EV_ASYNC_EP_BROKEN,
				      ep->handle, ev->event_type);
		ce.type = RAPT_EV_BROKEN;
		ce.prov_status = ev->event_type;
		vb_ep_shutdown(ep, &ce);
		vb_cm_hangup(ep);
		break;
	default:
		vb_dbg("%s: QP %u: %s", ia->dev, ev->element.qp->qp_num,
		       ibv_event_type_str(ev->event_type));
		if (ep && vb_tp->qp_event)
			vb_tp->qp_event(ep, ev->event_type);
		break;
	}
}

static void async_handler(struct rapt_io *io, uint32_t events)
{
	vb_async_poll(rapt_container_of(io, struct vb_ia, async_io));
}

/**
 * vb_async_poll - handle the device's pending async events (runner)
 * @ia: the IA
 *
 * Also called before a DISCONNECTED of rdma_cm is acted on: a QP error
 * the device reported first (an iWARP Terminate) makes it BROKEN.
 */
void vb_async_poll(struct vb_ia *ia)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(ia->ctx, &ev)) {
		switch (ev.event_type) {
		case IBV_EVENT_QP_FATAL:
		case IBV_EVENT_QP_REQ_ERR:
		case IBV_EVENT_QP_ACCESS_ERR:
		case IBV_EVENT_COMM_EST:
		case IBV_EVENT_SQ_DRAINED:
		case IBV_EVENT_QP_LAST_WQE_REACHED:
			async_qp(ia, &ev);
			break;
		case IBV_EVENT_SRQ_ERR:
			vb_err("%s: SRQ error", ia->dev);
			rapt_prov_async_event(ia->cia,
					      RAPT_EV_ASYNC_PROVIDER_ERROR,
					      NULL, ev.event_type);
			break;
		case IBV_EVENT_DEVICE_FATAL:
			vb_err("%s: device fatal error", ia->dev);
			rapt_prov_async_event(ia->cia,
					      RAPT_EV_ASYNC_IA_CATASTROPHIC,
					      NULL, ev.event_type);
			break;
		case IBV_EVENT_CQ_ERR:
			vb_err("%s: CQ error (overrun?)", ia->dev);
			rapt_prov_async_event(ia->cia,
					      RAPT_EV_ASYNC_PROVIDER_ERROR,
					      NULL, ev.event_type);
			break;
		default:
			vb_dbg("%s: async event %s", ia->dev,
			       ibv_event_type_str(ev.event_type));
			break;
		}
		ibv_ack_async_event(&ev);
	}
}
