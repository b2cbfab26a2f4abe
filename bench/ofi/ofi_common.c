/* SPDX-License-Identifier: MIT */
/* Common part of the libfabric peer programs; see ofi_common.h. */
#include "config.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_common.h"

void ofi_err(const char *what, int ret)
{
	fprintf(stderr, "%s: %s (%d)\n", what, fi_strerror(-ret), ret);
}

int ofi_unsupported(int ret)
{
	return ret == -FI_ENODATA || ret == -FI_ENOSYS ||
	       ret == -FI_EOPNOTSUPP;
}

int ofi_parse_common(int c, const char *arg, struct ofi_opts *o)
{
	switch (c) {
	case 'm':
		if (!strcmp(arg, "poll"))
			o->block = 0;
		else if (!strcmp(arg, "block"))
			o->block = 1;
		else
			return -1;
		return 0;
	case 'v':
		o->verbose = 1;
		return 0;
	case 't':
		return bu_parse_uint(arg, &o->timeout);
	}
	return -1;
}

/* The optional PROVIDER operand after the options; -1 if more follow. */
int ofi_parse_prov(int argc, char **argv, struct ofi_opts *o)
{
	if (optind < argc)
		o->prov = argv[optind++];
	return optind == argc ? 0 : -1;
}

/* @opts: the program's own options, between PROVIDER and the common ones. */
void ofi_usage(const char *name, const char *opts)
{
	fprintf(stderr, "usage: %s [PROVIDER] %s " OFI_COMMON_USAGE "\n",
		name, opts);
	exit(BU_EXIT_USAGE);
}

static struct fi_info *make_hints(const struct ofi_opts *o)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG | (o->rma ? FI_RMA : 0);
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup(o->prov);
	return h;
}

/* The first answer from exactly the provider asked for (not a layering). */
static struct fi_info *pick(struct fi_info *list, const char *prov)
{
	struct fi_info *i;

	for (i = list; i; i = i->next)
		if (!strcmp(i->fabric_attr->prov_name, prov))
			return i;
	return NULL;
}

static int get_info(struct ofi *f, const struct ofi_opts *o,
		    unsigned int port)
{
	struct fi_info *hints, *list = NULL, *one;
	char svc[16];
	int ret;

	hints = make_hints(o);
	if (!hints)
		return -FI_ENOMEM;
	snprintf(svc, sizeof(svc), "%u", port);
	ret = fi_getinfo(OFI_API_VERSION, "127.0.0.1", svc,
			 port ? 0 : FI_SOURCE, hints, &list);
	fi_freeinfo(hints);
	if (ret) {
		ofi_err("fi_getinfo", ret);
		return ret;
	}
	one = pick(list, o->prov);
	if (!one) {
		fi_freeinfo(list);
		fprintf(stderr, "fi_getinfo: no FI_EP_MSG answer from %s\n",
			o->prov);
		return -FI_ENODATA;
	}
	f->info = fi_dupinfo(one);
	fi_freeinfo(list);
	if (!f->info)
		return -FI_ENOMEM;
	f->virt_addr = !!(f->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
	if (o->verbose)
		fprintf(stderr, "provider %s fabric %s domain %s mr_mode %s\n",
			f->info->fabric_attr->prov_name,
			f->info->fabric_attr->name,
			f->info->domain_attr->name,
			fi_tostr(&f->info->domain_attr->mr_mode,
				 FI_TYPE_MR_MODE));
	return 0;
}

/*
 * Open fabric, domain, EQ and CQ.  @port 0: the server side (FI_SOURCE);
 * otherwise the client, whose info then carries the server's address.
 */
int ofi_init(struct ofi *f, const struct ofi_opts *o, unsigned int port,
	     size_t eq_size, size_t cq_size)
{
	struct fi_eq_attr eqa = { .size = eq_size };
	struct fi_cq_attr cqa = { .size = cq_size,
				  .format = FI_CQ_FORMAT_CONTEXT };
	int ret;

	memset(f, 0, sizeof(*f));
	f->block = o->block;
	eqa.wait_obj = o->block ? FI_WAIT_UNSPEC : FI_WAIT_NONE;
	cqa.wait_obj = o->block ? FI_WAIT_UNSPEC : FI_WAIT_NONE;
	ret = get_info(f, o, port);
	if (ret)
		return ret;
	ret = fi_fabric(f->info->fabric_attr, &f->fabric, NULL);
	if (ret) {
		ofi_err("fi_fabric", ret);
		return ret;
	}
	ret = fi_domain(f->fabric, f->info, &f->domain, NULL);
	if (ret) {
		ofi_err("fi_domain", ret);
		return ret;
	}
	ret = fi_eq_open(f->fabric, &eqa, &f->eq, NULL);
	if (ret) {
		ofi_err("fi_eq_open", ret);
		return ret;
	}
	ret = fi_cq_open(f->domain, &cqa, &f->cq, NULL);
	if (ret)
		ofi_err("fi_cq_open", ret);
	return ret;
}

void ofi_fini(struct ofi *f)
{
	if (f->pep)
		fi_close(&f->pep->fid);
	if (f->cq)
		fi_close(&f->cq->fid);
	if (f->eq)
		fi_close(&f->eq->fid);
	if (f->domain)
		fi_close(&f->domain->fid);
	if (f->fabric)
		fi_close(&f->fabric->fid);
	if (f->info)
		fi_freeinfo(f->info);
	memset(f, 0, sizeof(*f));
}

int ofi_listen(struct ofi *f, unsigned int *port)
{
	struct sockaddr_storage ss;
	size_t len = sizeof(ss);
	int ret;

	ret = fi_passive_ep(f->fabric, f->info, &f->pep, NULL);
	if (ret) {
		ofi_err("fi_passive_ep", ret);
		return ret;
	}
	ret = fi_pep_bind(f->pep, &f->eq->fid, 0);
	if (!ret)
		ret = fi_listen(f->pep);
	if (!ret)
		ret = fi_getname(&f->pep->fid, &ss, &len);
	if (ret) {
		ofi_err("listen", ret);
		return ret;
	}
	if (ss.ss_family == AF_INET)
		*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	else
		*port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/* fi_endpoint + bind the EQ and the CQ + enable. */
int ofi_ep_open(struct ofi *f, struct fi_info *info, void *context,
		struct fid_ep **ep)
{
	int ret;

	ret = fi_endpoint(f->domain, info ? info : f->info, ep, context);
	if (ret) {
		ofi_err("fi_endpoint", ret);
		return ret;
	}
	ret = fi_ep_bind(*ep, &f->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(*ep, &f->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(*ep);
	if (ret) {
		ofi_err("fi_ep_bind/fi_enable", ret);
		fi_close(&(*ep)->fid);
	}
	return ret;
}

int ofi_connect(struct ofi *f, struct fid_ep *ep, const struct ofi_pdata *pd)
{
	int ret = fi_connect(ep, f->info->dest_addr, pd, sizeof(*pd));

	if (ret)
		ofi_err("fi_connect", ret);
	return ret;
}

static int eq_error(struct ofi *f)
{
	struct fi_eq_err_entry e;
	ssize_t r;

	memset(&e, 0, sizeof(e));
	r = fi_eq_readerr(f->eq, &e, 0);
	if (r < 0) {
		ofi_err("fi_eq_readerr", (int)r);
		return (int)r;
	}
	fprintf(stderr, "EQ error: %s (prov_errno %d)\n",
		fi_strerror(e.err), e.prov_errno);
	return e.err ? -e.err : -FI_EOTHER;
}

/*
 * Read one EQ event.  @wait_ms: -1 until there is one (spinning in poll
 * mode), 0 once.  Return: 0, -FI_EAGAIN, or an error (logged).
 */
int ofi_eq_next(struct ofi *f, struct ofi_cm *cm, int wait_ms)
{
	union {
		struct fi_eq_cm_entry e;
		uint8_t raw[OFI_CM_BUF];
	} u;
	ssize_t r;

	for (;;) {
		if (f->block && wait_ms)
			r = fi_eq_sread(f->eq, &cm->event, &u, sizeof(u),
					wait_ms, 0);
		else
			r = fi_eq_read(f->eq, &cm->event, &u, sizeof(u), 0);
		if (r == -FI_EAVAIL)
			return eq_error(f);
		if (r == -FI_EAGAIN && wait_ms < 0)
			continue;
		if (r < 0)
			return (int)r;
		break;
	}
	memset(&cm->pdata, 0, sizeof(cm->pdata));
	cm->fid = u.e.fid;
	cm->info = cm->event == FI_CONNREQ ? u.e.info : NULL;
	cm->pdata_len = 0;
	if (cm->event == FI_CONNREQ || cm->event == FI_CONNECTED) {
		cm->pdata_len = (size_t)r > sizeof(u.e) ?
				(size_t)r - sizeof(u.e) : 0;
		memcpy(&cm->pdata, u.e.data,
		       cm->pdata_len < sizeof(cm->pdata) ?
		       cm->pdata_len : sizeof(cm->pdata));
	}
	return 0;
}

/* Wait for @event on @fid (NULL: any fid); other events are dropped. */
int ofi_eq_expect(struct ofi *f, uint32_t event, fid_t fid,
		  struct ofi_cm *cm)
{
	int ret;

	for (;;) {
		ret = ofi_eq_next(f, cm, -1);
		if (ret)
			return ret;
		if (cm->event == event && (!fid || cm->fid == fid))
			return 0;
		if (cm->info)
			fi_freeinfo(cm->info);
	}
}

static int cq_error(struct ofi *f)
{
	struct fi_cq_err_entry e;
	ssize_t r;

	memset(&e, 0, sizeof(e));
	r = fi_cq_readerr(f->cq, &e, 0);
	if (r < 0) {
		ofi_err("fi_cq_readerr", (int)r);
		return (int)r;
	}
	/* Cancelled (flushed) work is the caller's to judge. */
	if (e.err != FI_ECANCELED)
		fprintf(stderr, "CQ error: %s (prov_errno %d)\n",
			fi_strerror(e.err), e.prov_errno);
	return e.err ? -e.err : -FI_EOTHER;
}

/*
 * Take one completion.  @wait: spin (poll mode) or sleep (block mode)
 * until there is one.  Return: 1 with *@ctx set, 0 if none, or an error.
 */
int ofi_cq_next(struct ofi *f, void **ctx, int wait)
{
	struct fi_cq_entry e;
	ssize_t r;

	for (;;) {
		if (wait && f->block)
			r = fi_cq_sread(f->cq, &e, 1, NULL, -1);
		else
			r = fi_cq_read(f->cq, &e, 1);
		if (r == 1) {
			*ctx = e.op_context;
			return 1;
		}
		if (r == -FI_EAVAIL)
			return cq_error(f);
		if (r != -FI_EAGAIN) {
			ofi_err("fi_cq_read", (int)r);
			return (int)r;
		}
		if (!wait)
			return 0;
	}
}

int ofi_mr(struct ofi *f, void *buf, size_t len, uint64_t access,
	   uint64_t key, struct fid_mr **mr)
{
	int ret = fi_mr_reg(f->domain, buf, len, access, 0, key, 0, mr, NULL);

	if (ret)
		ofi_err("fi_mr_reg", ret);
	return ret;
}

/* The address a peer names for @buf's first byte. */
uint64_t ofi_rma_base(const struct ofi *f, const void *buf)
{
	return f->virt_addr ? (uint64_t)(uintptr_t)buf : 0;
}

/*
 * Drive the provider without taking completions.  libfabric 1.17's tcp
 * provider reports a peer's shutdown on the EQ only when its CQ is read.
 */
void ofi_progress(struct ofi *f)
{
	(void)fi_cq_read(f->cq, NULL, 0);
}

/*
 * Server start: open everything, listen, tell the parent the port, and
 * wait for the first connection request (@req->info is the caller's).
 */
int ofi_serve_start(struct ofi *f, const struct ofi_opts *o, int pfd,
		    size_t eq_size, size_t cq_size, struct ofi_cm *req)
{
	unsigned int port;
	int ret;

	ret = ofi_init(f, o, 0, eq_size, cq_size);
	if (!ret)
		ret = ofi_listen(f, &port);
	if (ret)
		return ret;
	bu_announce_port(pfd, port);
	ret = ofi_eq_expect(f, FI_CONNREQ, NULL, req);
	if (!ret && req->pdata.magic != OFI_PDATA_MAGIC) {
		fprintf(stderr, "connect private data lost\n");
		fi_freeinfo(req->info);
		ret = -FI_EOTHER;
	}
	return ret;
}

/* fi_accept with our 32 bytes, then wait for FI_CONNECTED. */
int ofi_accept_wait(struct ofi *f, struct fid_ep *ep,
		    const struct ofi_pdata *pd)
{
	struct ofi_cm cm;
	int ret;

	ret = fi_accept(ep, pd, sizeof(*pd));
	if (ret) {
		ofi_err("fi_accept", ret);
		return ret;
	}
	return ofi_eq_expect(f, FI_CONNECTED, &ep->fid, &cm);
}

/* fi_connect with @pd, wait for FI_CONNECTED; the accept data in @peer. */
int ofi_connect_wait(struct ofi *f, struct fid_ep *ep,
		     const struct ofi_pdata *pd, struct ofi_pdata *peer)
{
	struct ofi_cm cm;
	int ret;

	ret = ofi_connect(f, ep, pd);
	if (!ret)
		ret = ofi_eq_expect(f, FI_CONNECTED, &ep->fid, &cm);
	if (!ret && cm.pdata.magic != OFI_PDATA_MAGIC) {
		fprintf(stderr, "accept private data lost\n");
		ret = -FI_EOTHER;
	}
	if (!ret && peer)
		*peer = cm.pdata;
	return ret;
}

int ofi_post_recv(struct ofi *f, struct fid_ep *ep, void *buf, size_t len,
		  void *desc, void *ctx)
{
	ssize_t r;

	while ((r = fi_recv(ep, buf, len, desc, 0, ctx)) == -FI_EAGAIN)
		ofi_progress(f);
	if (r)
		ofi_err("fi_recv", (int)r);
	return (int)r;
}

int ofi_post_send(struct ofi *f, struct fid_ep *ep, void *buf, size_t len,
		  void *desc, void *ctx)
{
	ssize_t r;

	while ((r = fi_send(ep, buf, len, desc, 0, ctx)) == -FI_EAGAIN)
		ofi_progress(f);
	if (r)
		ofi_err("fi_send", (int)r);
	return (int)r;
}

/* Take completions until the one with @ctx; others are counted. */
int ofi_wait_ctx(struct ofi *f, void *ctx, uint64_t *others)
{
	void *got;
	int ret;

	for (;;) {
		ret = ofi_cq_next(f, &got, 1);
		if (ret < 0)
			return ret;
		if (got == ctx)
			return 0;
		if (others)
			(*others)++;
	}
}

/* Give the peer's shutdown up to a second to arrive. */
int ofi_drain_shutdown(struct ofi *f)
{
	uint64_t end = bu_now_ns() + 1000000000ull;
	struct ofi_cm cm;
	int ret;

	while (bu_now_ns() < end) {
		ofi_progress(f);
		ret = ofi_eq_next(f, &cm, f->block ? 100 : 0);
		if (!ret && cm.info)
			fi_freeinfo(cm.info);
		if (!ret && cm.event == FI_SHUTDOWN)
			return 1;
		if (ret && ret != -FI_EAGAIN)
			return 0;
	}
	return 0;
}

/* The exit status of a server function. */
int ofi_exit_code(int ret)
{
	if (!ret)
		return BU_EXIT_OK;
	return ofi_unsupported(ret) ? BU_EXIT_UNSUPPORTED : BU_EXIT_FAIL;
}

/* Allocate @len bytes zeroed and register them; ofi_side_close() frees. */
int ofi_side_mem(struct ofi_side *s, size_t len, uint64_t access,
		 uint64_t key)
{
	s->buf = calloc(1, len);
	if (!s->buf)
		return -FI_ENOMEM;
	if (ofi_mr(&s->f, s->buf, len, access, key, &s->mr))
		return -FI_EOTHER;
	s->desc = fi_mr_desc(s->mr);
	return 0;
}

void ofi_side_close(struct ofi_side *s)
{
	if (s->ep)
		fi_close(&s->ep->fid);
	if (s->mr)
		fi_close(&s->mr->fid);
	ofi_fini(&s->f);
	free(s->buf);
}

/* The client's end: shut down first, for the server's drain to see. */
void ofi_side_hangup(struct ofi_side *s)
{
	if (s->ep)
		fi_shutdown(s->ep, 0);
	ofi_side_close(s);
}

#define LAT_USAGE "[-s SIZE] [-n ITERS] [-W WARMUP] [-V]"

static void lat_parse(int argc, char **argv, struct ofi_lat_opts *o,
		      const char *name)
{
	int c;

	while ((c = getopt(argc, argv, "s:n:W:Vh" OFI_COMMON_OPTS)) != -1) {
		if (c == 's' && !bu_parse_size(optarg, &o->size) && o->size)
			continue;
		if (c == 'n' && !bu_parse_uint(optarg, &o->iters) && o->iters)
			continue;
		if (c == 'W' && !bu_parse_uint(optarg, &o->warmup))
			continue;
		if (c == 'V') {
			o->verify = 1;
			continue;
		}
		if (c != 'h' && !ofi_parse_common(c, optarg, &o->oo))
			continue;
		ofi_usage(name, LAT_USAGE);
	}
	if (ofi_parse_prov(argc, argv, &o->oo))
		ofi_usage(name, LAT_USAGE);
}

static void lat_report(const struct ofi_lat_prog *p,
		       const struct ofi_lat_opts *o, uint64_t *lat,
		       uint64_t elapsed)
{
	struct bu_stats st;

	bu_stats(lat, o->iters, &st);
	bu_kv("rtt_med_us", "%.2f", st.med / 1e3);
	bu_kv("rtt_min_us", "%.2f", st.min / 1e3);
	bu_kv("rtt_p99_us", "%.2f", st.p99 / 1e3);
	bu_kv("rtt_mean_us", "%.2f", st.mean / 1e3);
	if (p->oneway)
		bu_kv("oneway_med_us", "%.2f", st.med / 2e3);
	bu_kv(p->rate_key, "%.0f", o->iters * 1e9 / elapsed);
}

/* main() of the programs timing one operation at a time. */
int ofi_lat_main(int argc, char **argv, const struct ofi_lat_prog *p)
{
	struct ofi_lat_opts o = { .oo = { .prov = "tcp", .timeout = 120 },
				  .size = 8, .iters = 100000, .warmup = 1000 };
	uint64_t elapsed = 0, *lat;
	struct bu_server srv;
	unsigned int port;
	int ret, sret;

	lat_parse(argc, argv, &o, p->name);
	o.oo.rma = p->rma;
	bu_watchdog((unsigned int)o.oo.timeout);
	lat = calloc(o.iters, sizeof(*lat));
	if (!lat)
		return BU_EXIT_FAIL;
	bu_line_begin(p->name, "ofi");
	bu_kv("prov", "%s", o.oo.prov);
	bu_kv("mode", "%s", o.oo.block ? "block" : "poll");
	bu_kv("bytes", "%llu", (unsigned long long)o.size);
	bu_kv("iters", "%llu", (unsigned long long)o.iters);
	sret = bu_fork_server(p->serve, &o, &srv, &port);
	if (sret)
		return bu_fail_early(sret);
	ret = p->client(&o, port, lat, &elapsed);
	if (!ret)
		lat_report(p, &o, lat, elapsed);
	sret = bu_server_finish(&srv);
	bu_line_end(!ret && !sret ? "ok" : "fail");
	free(lat);
	return !ret && !sret ? BU_EXIT_OK : BU_EXIT_FAIL;
}
