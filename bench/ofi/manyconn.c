/* SPDX-License-Identifier: MIT */
/*
 * ofi_manyconn - N libfabric connections open at once: the client issues
 * the connects (-w at most outstanding, 0 = all at once), the server
 * accepts each with a receive posted; once all are connected both sides
 * measure VmRSS and open file descriptors against their state before the
 * first endpoint, the client sends 8 bytes on each connection (not with
 * -D: libfabric 1.17's tcp provider takes minutes for 10,000), and then
 * tears everything down.
 *
 *   ofi_manyconn [PROVIDER] [-n CONNS] [-w OUTSTANDING] [-D]
 *                [-m poll|block] [-v] [-t SECONDS]
 */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofi_common.h"

#define MSG_LEN 8
#define MR_KEY 0x5c

struct opts {
	struct ofi_opts oo;
	uint64_t conns;
	uint64_t window;
	int no_data;
};

/* One side: an endpoint, a message slot and a context per connection. */
struct side {
	struct ofi f;
	struct fid_ep **eps;
	struct fi_context2 *ctx;
	struct fid_mr *mr;
	char *buf;
	void *desc;
	uint64_t n;
	long rss_base;
	int fds_base;
};

/* @port 0: the server side, which listens and writes its port there. */
static int side_open(struct side *s, const struct opts *o,
		     unsigned int *port)
{
	size_t q = o->conns + 64;
	int ret;

	s->n = o->conns;
	s->eps = calloc(s->n, sizeof(*s->eps));
	s->ctx = calloc(s->n, sizeof(*s->ctx));
	s->buf = calloc(s->n, MSG_LEN);
	if (!s->eps || !s->ctx || !s->buf)
		return -FI_ENOMEM;
	ret = ofi_init(&s->f, &o->oo, *port, q, q);
	if (!ret && !*port)
		ret = ofi_listen(&s->f, port);
	if (!ret)
		ret = ofi_mr(&s->f, s->buf, s->n * MSG_LEN, FI_SEND | FI_RECV,
			     MR_KEY, &s->mr);
	if (!ret)
		s->desc = fi_mr_desc(s->mr);
	s->rss_base = bu_rss_kb();
	s->fds_base = bu_count_fds();
	return ret;
}

static void side_close(struct side *s)
{
	uint64_t i;

	for (i = 0; s->eps && i < s->n; i++)
		if (s->eps[i])
			fi_close(&s->eps[i]->fid);
	if (s->mr)
		fi_close(&s->mr->fid);
	ofi_fini(&s->f);
	free(s->eps);
	free(s->ctx);
	free(s->buf);
}

static void report_mem(struct side *s, int pfd, const char *pfx)
{
	long rss = bu_rss_kb();
	int fds = bu_count_fds();
	char key[32];

	if (pfd >= 0) {
		bu_report(pfd, "rss_base_kb", "%ld", s->rss_base);
		bu_report(pfd, "rss_kb", "%ld", rss);
		bu_report(pfd, "per_conn_B", "%.0f",
			  (rss - s->rss_base) * 1024.0 / s->n);
		bu_report(pfd, "fds_per_conn", "%.2f",
			  (double)(fds - s->fds_base) / s->n);
		return;
	}
	snprintf(key, sizeof(key), "%srss_base_kb", pfx);
	bu_kv(key, "%ld", s->rss_base);
	snprintf(key, sizeof(key), "%srss_kb", pfx);
	bu_kv(key, "%ld", rss);
	snprintf(key, sizeof(key), "%sper_conn_B", pfx);
	bu_kv(key, "%.0f", (rss - s->rss_base) * 1024.0 / s->n);
	snprintf(key, sizeof(key), "%sfds_per_conn", pfx);
	bu_kv(key, "%.2f", (double)(fds - s->fds_base) / s->n);
}

/* ----------------------------------------------------------------- */
/* Server                                                            */
/* ----------------------------------------------------------------- */

struct srv_state {
	struct side s;
	uint64_t connected;
	uint64_t recvd;
	uint64_t shut;
	uint64_t first_req_ns;
	uint64_t last_event_ns;
	uint64_t want_recvd;
	int pfd;
};

static int srv_connreq(struct srv_state *st, struct ofi_cm *cm)
{
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC };
	struct side *s = &st->s;
	uint64_t seq = cm->pdata.seq;
	int ret;

	if (!st->first_req_ns)
		st->first_req_ns = bu_now_ns();
	if (cm->pdata.magic != OFI_PDATA_MAGIC || seq >= s->n || s->eps[seq]) {
		fprintf(stderr, "bad connect private data\n");
		fi_freeinfo(cm->info);
		return -FI_EOTHER;
	}
	ret = ofi_ep_open(&s->f, cm->info, &s->eps[seq], &s->eps[seq]);
	fi_freeinfo(cm->info);
	if (!ret)
		ret = ofi_post_recv(&s->f, s->eps[seq], s->buf + seq * MSG_LEN,
				    MSG_LEN, s->desc, &s->ctx[seq]);
	if (!ret)
		ret = fi_accept(s->eps[seq], &pd, sizeof(pd));
	return ret;
}

static void srv_connected(struct srv_state *st)
{
	if (++st->connected < st->s.n)
		return;
	bu_report(st->pfd, "accept_all_ms", "%.2f",
		  (bu_now_ns() - st->first_req_ns) / 1e6);
	report_mem(&st->s, st->pfd, "srv_");
}

static int srv_event(struct srv_state *st, struct ofi_cm *cm)
{
	struct fid_ep **slot;

	st->last_event_ns = bu_now_ns();
	switch (cm->event) {
	case FI_CONNREQ:
		return srv_connreq(st, cm);
	case FI_CONNECTED:
		srv_connected(st);
		return 0;
	case FI_SHUTDOWN:
		slot = cm->fid->context;
		if (slot >= st->s.eps && slot < st->s.eps + st->s.n && *slot) {
			fi_close(&(*slot)->fid);
			*slot = NULL;
			st->shut++;
		}
		return 0;
	}
	return 0;
}

/* One pass: an EQ event or a receive completion, whichever is there. */
static int srv_step(struct srv_state *st)
{
	struct ofi_cm cm;
	void *ctx;
	int ret;

	ret = ofi_eq_next(&st->s.f, &cm, 0);
	if (!ret)
		return srv_event(st, &cm);
	if (ret != -FI_EAGAIN)
		return ret;
	ret = ofi_cq_next(&st->s.f, &ctx, 0);
	if (ret > 0) {
		st->recvd++;
		st->last_event_ns = bu_now_ns();
	}
	/* With -D the posted receives are cancelled at teardown. */
	if (ret == -FI_ECANCELED && st->recvd >= st->want_recvd)
		return 0;
	return ret < 0 ? ret : 0;
}

static int srv_done(const struct srv_state *st)
{
	if (st->connected < st->s.n || st->recvd < st->want_recvd)
		return 0;
	return st->shut == st->s.n ||
	       bu_now_ns() - st->last_event_ns > 2000000000ull;
}

static int serve(void *arg, int pfd)
{
	const struct opts *o = arg;
	struct srv_state st = { .pfd = pfd,
				.want_recvd = o->no_data ? 0 : o->conns };
	unsigned int port = 0;
	int ret;

	ret = side_open(&st.s, o, &port);
	if (ret) {
		side_close(&st.s);
		return ofi_exit_code(ret);
	}
	bu_announce_port(pfd, port);
	st.last_event_ns = bu_now_ns();
	while (!ret && !srv_done(&st))
		ret = srv_step(&st);
	bu_report(pfd, "recvd", "%llu", (unsigned long long)st.recvd);
	bu_report(pfd, "shutdown_seen", "%llu", (unsigned long long)st.shut);
	side_close(&st.s);
	return ofi_exit_code(ret);
}

/* ----------------------------------------------------------------- */
/* Client                                                            */
/* ----------------------------------------------------------------- */

static int cli_connect_one(struct side *s, uint64_t i)
{
	struct ofi_pdata pd = { .magic = OFI_PDATA_MAGIC,
				.seq = (uint32_t)i, .len = s->n };
	int ret;

	ret = ofi_ep_open(&s->f, NULL, &s->eps[i], &s->eps[i]);
	if (!ret)
		ret = ofi_connect(&s->f, s->eps[i], &pd);
	return ret;
}

static int cli_connect_all(struct side *s, uint64_t window)
{
	uint64_t i = 0, out = 0, done = 0;
	struct ofi_cm cm;
	int ret = 0;

	while (!ret && done < s->n) {
		if (i < s->n && (!window || out < window)) {
			ret = cli_connect_one(s, i++);
			out++;
			continue;
		}
		ret = ofi_eq_next(&s->f, &cm, -1);
		if (ret)
			break;
		if (cm.event == FI_CONNECTED) {
			done++;
			out--;
		}
	}
	return ret;
}

static int cli_send_all(struct side *s)
{
	uint64_t i, done = 0;
	void *ctx;
	int ret = 0;

	for (i = 0; !ret && i < s->n; i++)
		ret = ofi_post_send(&s->f, s->eps[i], s->buf + i * MSG_LEN,
				    MSG_LEN, s->desc, &s->ctx[i]);
	while (!ret && done < s->n) {
		ret = ofi_cq_next(&s->f, &ctx, 1);
		if (ret > 0) {
			done++;
			ret = 0;
		}
	}
	return ret;
}

static void cli_close_all(struct side *s)
{
	uint64_t i;

	for (i = 0; i < s->n; i++) {
		fi_shutdown(s->eps[i], 0);
		fi_close(&s->eps[i]->fid);
		s->eps[i] = NULL;
	}
}

static int client(const struct opts *o, unsigned int port)
{
	struct side s = { 0 };
	uint64_t t0;
	int ret;

	ret = side_open(&s, o, &port);
	t0 = bu_now_ns();
	if (!ret)
		ret = cli_connect_all(&s, o->window);
	if (!ret) {
		bu_kv("connect_all_ms", "%.2f", (bu_now_ns() - t0) / 1e6);
		bu_kv("conn_per_s", "%.0f", s.n * 1e9 / (bu_now_ns() - t0));
		report_mem(&s, -1, "");
		t0 = bu_now_ns();
		ret = o->no_data ? 0 : cli_send_all(&s);
	}
	if (!ret) {
		if (!o->no_data)
			bu_kv("send_all_ms", "%.2f",
			      (bu_now_ns() - t0) / 1e6);
		t0 = bu_now_ns();
		cli_close_all(&s);
		bu_kv("close_all_ms", "%.2f", (bu_now_ns() - t0) / 1e6);
	}
	side_close(&s);
	return ret;
}

static void usage(void)
{
	ofi_usage("ofi_manyconn", "[-n CONNS] [-w OUTSTANDING] [-D]");
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt(argc, argv, "n:w:Dh" OFI_COMMON_OPTS)) != -1) {
		if (c == 'n' && !bu_parse_uint(optarg, &o->conns) && o->conns)
			continue;
		if (c == 'D') {
			o->no_data = 1;
			continue;
		}
		if (c == 'w' && !bu_parse_uint(optarg, &o->window))
			continue;
		if (c != 'h' && !ofi_parse_common(c, optarg, &o->oo))
			continue;
		usage();
	}
	if (ofi_parse_prov(argc, argv, &o->oo) || o->conns > UINT32_MAX)
		usage();
}

int main(int argc, char **argv)
{
	struct opts o = { .oo = { .prov = "tcp", .timeout = 120 },
			  .conns = 1000 };
	struct bu_server srv;
	unsigned int port;
	int ret, sret;

	parse(argc, argv, &o);
	bu_watchdog((unsigned int)o.oo.timeout);
	bu_raise_nofile(2 * o.conns + 256);
	bu_line_begin("ofi_manyconn", "ofi");
	bu_kv("prov", "%s", o.oo.prov);
	bu_kv("mode", "%s", o.oo.block ? "block" : "poll");
	bu_kv("conns", "%llu", (unsigned long long)o.conns);
	bu_kv("window", "%llu", (unsigned long long)o.window);
	sret = bu_fork_server(serve, &o, &srv, &port);
	if (sret)
		return bu_fail_early(sret);
	ret = client(&o, port);
	sret = bu_server_finish(&srv);
	bu_line_end(!ret && !sret ? "ok" : "fail");
	return !ret && !sret ? BU_EXIT_OK : BU_EXIT_FAIL;
}
