/* SPDX-License-Identifier: MIT */
/*
 * ofi_connrate - libfabric connection setup rate, one connection at a
 * time: fi_endpoint, fi_connect with 32 bytes of private data, the server
 * sees FI_CONNREQ and fi_accept()s with 32 bytes, FI_CONNECTED on both
 * sides, then the client fi_shutdown()s and closes, and the server closes
 * its endpoint on FI_SHUTDOWN.  The server is event driven (providers
 * order CM events differently).  The clock stops when the client has
 * closed its last endpoint and the server has seen the last FI_CONNECTED
 * (both CLOCK_MONOTONIC on this host).
 *
 *   ofi_connrate [PROVIDER] [-n CONNS] [-W WARMUP] [-m poll|block] [-v]
 *                [-t SECONDS]
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_common.h"

struct opts {
	struct ofi_opts oo;
	uint64_t conns;
	uint64_t warmup;
};

struct srv_state {
	struct ofi f;
	struct fid_ep **eps;	/* by sequence number; NULL once closed */
	uint64_t total;
	uint64_t connected;
	uint64_t shut;
	uint64_t last_conn_ns;
	uint64_t last_event_ns;
};

static int on_connreq(struct srv_state *s, struct ofi_cm *cm)
{
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC };
	uint64_t seq = cm->pdata.seq;
	int ret;

	if (cm->pdata.magic != OFI_PDATA_MAGIC || seq >= s->total) {
		fprintf(stderr, "bad connect private data\n");
		fi_freeinfo(cm->info);
		return -FI_EOTHER;
	}
	pd.seq = (uint32_t)seq;
	ret = ofi_ep_open(&s->f, cm->info, &s->eps[seq], &s->eps[seq]);
	fi_freeinfo(cm->info);
	if (ret)
		return ret;
	ret = fi_accept(s->eps[seq], &pd, sizeof(pd));
	if (ret)
		ofi_err("fi_accept", ret);
	return ret;
}

/* An accepted endpoint's context points at its slot in s->eps. */
static void on_shutdown(struct srv_state *s, struct ofi_cm *cm)
{
	struct fid_ep **slot = cm->fid->context;

	if (slot < s->eps || slot >= s->eps + s->total || !*slot)
		return;
	fi_close(&(*slot)->fid);
	*slot = NULL;
	s->shut++;
}

static int handle(struct srv_state *s, struct ofi_cm *cm)
{
	s->last_event_ns = bu_now_ns();
	switch (cm->event) {
	case FI_CONNREQ:
		return on_connreq(s, cm);
	case FI_CONNECTED:
		s->connected++;
		s->last_conn_ns = s->last_event_ns;
		return 0;
	case FI_SHUTDOWN:
		on_shutdown(s, cm);
		return 0;
	}
	return 0;
}

/* Done when all connected and all shut down, or a second after. */
static int srv_done(const struct srv_state *s)
{
	if (s->connected < s->total)
		return 0;
	return s->shut == s->total ||
	       bu_now_ns() - s->last_event_ns > 1000000000ull;
}

static int srv_loop(struct srv_state *s)
{
	struct ofi_cm cm;
	int ret;

	while (!srv_done(s)) {
		ret = ofi_eq_next(&s->f, &cm, s->f.block ? 100 : 0);
		if (ret == -FI_EAGAIN) {
			ofi_progress(&s->f);
			continue;
		}
		if (!ret)
			ret = handle(s, &cm);
		if (ret)
			return ret;
	}
	return 0;
}

static int serve(void *arg, int pfd)
{
	const struct opts *o = arg;
	struct srv_state s = { .total = o->warmup + o->conns };
	struct ofi_cm req;
	uint64_t i;
	int ret;

	s.eps = calloc(s.total, sizeof(*s.eps));
	if (!s.eps)
		return BU_EXIT_FAIL;
	ret = ofi_serve_start(&s.f, &o->oo, pfd, 256, 256, &req);
	if (!ret)
		ret = handle(&s, &req);
	if (!ret)
		ret = srv_loop(&s);
	bu_report(pfd, "connected", "%llu", (unsigned long long)s.connected);
	bu_report(pfd, "shutdown_seen", "%llu", (unsigned long long)s.shut);
	bu_report(pfd, "last_connected_ns", "%llu",
		  (unsigned long long)s.last_conn_ns);
	for (i = 0; i < s.total; i++)
		if (s.eps[i])
			fi_close(&s.eps[i]->fid);
	ofi_fini(&s.f);
	free(s.eps);
	return ofi_exit_code(ret);
}

struct times {
	uint64_t *cycle;
	uint64_t *connect;
	uint64_t *close;
	uint64_t start;
	uint64_t end;
};

static int one_conn(struct ofi *f, uint64_t seq, uint64_t total,
		    uint64_t *t_conn, uint64_t *t_close)
{
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC,
				.seq = (uint32_t)seq, .len = total };
	uint64_t t0 = bu_now_ns(), t1;
	struct fid_ep *ep;
	int ret;

	ret = ofi_ep_open(f, NULL, NULL, &ep);
	if (ret)
		return ret;
	ret = ofi_connect_wait(f, ep, &pd, NULL);
	t1 = bu_now_ns();
	*t_conn = t1 - t0;
	if (!ret)
		fi_shutdown(ep, 0);
	fi_close(&ep->fid);
	*t_close = bu_now_ns() - t1;
	return ret;
}

static int client(const struct opts *o, unsigned int port, struct times *t)
{
	uint64_t i, j, t0, tc, tx, total = o->warmup + o->conns;
	struct ofi f;
	int ret;

	ret = ofi_init(&f, &o->oo, port, 64, 64);
	for (i = 0; !ret && i < total; i++) {
		if (i == o->warmup)
			t->start = bu_now_ns();
		t0 = bu_now_ns();
		ret = one_conn(&f, i, total, &tc, &tx);
		if (ret || i < o->warmup)
			continue;
		j = i - o->warmup;
		t->cycle[j] = bu_now_ns() - t0;
		t->connect[j] = tc;
		t->close[j] = tx;
	}
	t->end = bu_now_ns();
	ofi_fini(&f);
	return ret;
}

static void usage(void)
{
	ofi_usage("ofi_connrate", "[-n CONNS] [-W WARMUP]");
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt(argc, argv, "n:W:h" OFI_COMMON_OPTS)) != -1) {
		if (c == 'n' && !bu_parse_uint(optarg, &o->conns) && o->conns)
			continue;
		if (c == 'W' && !bu_parse_uint(optarg, &o->warmup))
			continue;
		if (c != 'h' && !ofi_parse_common(c, optarg, &o->oo))
			continue;
		usage();
	}
	if (ofi_parse_prov(argc, argv, &o->oo) ||
	    o->warmup + o->conns > UINT32_MAX)
		usage();
}

static void report(const struct opts *o, struct times *t)
{
	struct bu_stats sc, sn, sx;
	double last = 0;
	uint64_t end = t->end;

	if (!bu_srv_value("last_connected_ns", &last) && last > end)
		end = (uint64_t)last;
	bu_stats(t->cycle, o->conns, &sc);
	bu_stats(t->connect, o->conns, &sn);
	bu_stats(t->close, o->conns, &sx);
	bu_kv("conn_per_s", "%.0f", o->conns * 1e9 / (end - t->start));
	bu_kv("cycle_med_us", "%.2f", sc.med / 1e3);
	bu_kv("cycle_p99_us", "%.2f", sc.p99 / 1e3);
	bu_kv("connect_med_us", "%.2f", sn.med / 1e3);
	bu_kv("connect_p99_us", "%.2f", sn.p99 / 1e3);
	bu_kv("close_med_us", "%.2f", sx.med / 1e3);
}

int main(int argc, char **argv)
{
	struct opts o = { .oo = { .prov = "tcp", .timeout = 120 },
			  .conns = 1000, .warmup = 10 };
	struct bu_server srv;
	struct times t = { 0 };
	unsigned int port;
	int ret, sret;

	parse(argc, argv, &o);
	bu_watchdog((unsigned int)o.oo.timeout);
	t.cycle = calloc(o.conns, sizeof(uint64_t));
	t.connect = calloc(o.conns, sizeof(uint64_t));
	t.close = calloc(o.conns, sizeof(uint64_t));
	if (!t.cycle || !t.connect || !t.close)
		return BU_EXIT_FAIL;
	bu_line_begin("ofi_connrate", "ofi");
	bu_kv("prov", "%s", o.oo.prov);
	bu_kv("mode", "%s", o.oo.block ? "block" : "poll");
	bu_kv("conns", "%llu", (unsigned long long)o.conns);
	bu_kv("pdata", "%zu", sizeof(struct ofi_pdata));
	sret = bu_fork_server(serve, &o, &srv, &port);
	if (sret)
		return bu_fail_early(sret);
	ret = client(&o, port, &t);
	sret = bu_server_finish(&srv);
	if (!ret)
		report(&o, &t);
	bu_line_end(!ret && !sret ? "ok" : "fail");
	free(t.cycle);
	free(t.connect);
	free(t.close);
	return !ret && !sret ? BU_EXIT_OK : BU_EXIT_FAIL;
}
