/* SPDX-License-Identifier: MIT */
/*
 * rapt_perf connection tests.  The measured connections go to a second
 * PSP the server creates for the phase (its service id comes back in
 * READY), with EVDs of their own, so the session's control traffic never
 * mixes with them.  Private data of --pdata bytes travels on every
 * connect and comes back on every accept (the server echoes it).
 *
 * connrate: one connection at a time: create the EP, connect, ESTABLISHED,
 *   graceful disconnect and free (as the peers' fi_shutdown + fi_close and
 *   close()); with --disc-wait the client waits for DISCONNECTED before it
 *   frees.  The clock stops when the server has also seen every
 *   ESTABLISHED and every DISCONNECTED (its answer to DONE), so the rate
 *   counts connections complete on both sides.
 * conns: open N connections and hold them (-w connects outstanding at
 *   most, 0 = all at once; a BUSY reject is retried and counted); once
 *   all are ESTABLISHED both sides report VmRSS and open fds against
 *   their values before the first EP; then everything is torn down.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define CONN_WARMUP	10
#define ACK_WAIT_NS	(5ull * 1000000000ull)

/* The measured connections' EVDs: one for both streams where allowed;
 * with --srq, the SRQ their EPs receive from, its receives' memory. */
struct mset {
	struct rapt_evd *conn;
	struct rapt_evd *cr;
	struct rapt_psp *psp;
	uint64_t sid;
	struct rapt_ep **eps;
	uint64_t n;
	struct rapt_srq *srq;
	struct rapt_lmr *srq_lmr;
	uint8_t *srq_buf;
};

#define SRQ_RECV_BYTES 64

/* --srq N: one SRQ of N receives of SRQ_RECV_BYTES, all posted. */
static int mset_srq(struct perf_side *s, struct mset *m, uint32_t n)
{
	struct rapt_srq_attr sa = { .max_recv = n, .max_recv_sge = 1 };
	struct rapt_lmr_info li;
	struct rapt_sge sge;
	uint32_t i;
	int ret;

	if (!(s->attr.caps & RAPT_CAP_SRQ))
		return perf_fail(RAPT_ENOTSUP, "--srq: the IA has no RAPT_CAP_SRQ");
	m->srq_buf = calloc(n, SRQ_RECV_BYTES);
	if (!m->srq_buf)
		return perf_fail(RAPT_ENOMEM, "SRQ buffers");
	ret = rapt_lmr_create(s->pz, m->srq_buf, (size_t)n * SRQ_RECV_BYTES,
			      RAPT_MEM_LOCAL_WRITE, &m->srq_lmr, &li);
	if (ret)
		return perf_fail(ret, "rapt_lmr_create (SRQ)");
	ret = rapt_srq_create(s->pz, &sa, &m->srq);
	if (ret)
		return perf_fail(ret, "rapt_srq_create");
	for (i = 0; i < n; i++) {
		sge.addr = (uintptr_t)(m->srq_buf + (size_t)i * SRQ_RECV_BYTES);
		sge.length = SRQ_RECV_BYTES;
		sge.lkey = li.lkey;
		ret = rapt_srq_post_recv(m->srq, &sge, 1, i);
		if (ret)
			return perf_fail(ret, "rapt_srq_post_recv");
	}
	return 0;
}

/* A measured EP: on the SRQ with --srq. */
static int mset_ep(struct perf_side *s, struct mset *m,
		   const struct rapt_ep_attr *a, struct rapt_ep **ep)
{
	int ret;

	if (m->srq)
		ret = rapt_ep_create_with_srq(s->pz, m->srq, NULL, NULL,
					      m->conn, a, ep);
	else
		ret = rapt_ep_create(s->pz, NULL, NULL, m->conn, a, ep);
	return ret ? perf_fail(ret, "rapt_ep_create") : 0;
}

static int mset_open(struct perf_side *s, struct mset *m, uint64_t n)
{
	uint32_t want = RAPT_EVD_CONNECTION | (s->server ? RAPT_EVD_CR : 0);
	uint64_t q = n + 256;
	int ret;

	memset(m, 0, sizeof(*m));
	m->n = n;
	m->eps = calloc(n, sizeof(*m->eps));
	if (!m->eps)
		return perf_fail(RAPT_ENOMEM, "EP table");
	if (s->attr.max_evd_qlen && q > s->attr.max_evd_qlen)
		q = s->attr.max_evd_qlen;
	if (perf_can_merge(&s->attr, want))
		ret = rapt_evd_create(s->ia, (unsigned int)q, want, &m->conn);
	else
		ret = rapt_evd_create(s->ia, (unsigned int)q,
				      RAPT_EVD_CONNECTION, &m->conn);
	if (ret)
		return perf_fail(ret, "rapt_evd_create (connections)");
	m->cr = m->conn;
	if (s->server && !perf_can_merge(&s->attr, want)) {
		ret = rapt_evd_create(s->ia, (unsigned int)q, RAPT_EVD_CR,
				      &m->cr);
		if (ret)
			return perf_fail(ret, "rapt_evd_create (requests)");
	}
	return s->o->srq ? mset_srq(s, m, s->o->srq) : 0;
}

static void mset_close(struct mset *m)
{
	uint64_t i;

	for (i = 0; m->eps && i < m->n; i++)
		if (m->eps[i])
			rapt_ep_free(m->eps[i]);
	if (m->psp)
		rapt_psp_free(m->psp);
	if (m->cr && m->cr != m->conn)
		rapt_evd_free(m->cr);
	if (m->conn)
		rapt_evd_free(m->conn);
	if (m->srq)
		rapt_srq_free(m->srq);
	if (m->srq_lmr)
		rapt_lmr_free(m->srq_lmr);
	free(m->srq_buf);
	free(m->eps);
	memset(m, 0, sizeof(*m));
}

/* --depth: the measured EPs' queue depths (0: the provider's default). */
static void ep_attr(const struct perf_side *s, struct rapt_ep_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->max_send = s->hello.depth;
	a->max_recv = s->hello.depth;
}

/* Private data of @len bytes for connection @seq: the sequence first. */
static void make_pdata(uint8_t *p, uint32_t len, uint64_t seq)
{
	perf_fill(p, len, seq);
	if (len >= sizeof(seq))
		memcpy(p, &seq, sizeof(seq));
}

static bool pdata_ok(const void *p, uint32_t len, uint32_t want)
{
	uint8_t ref[256];
	uint64_t seq = 0;

	if (len != want)
		return false;
	if (!len)
		return true;
	if (len >= sizeof(seq))
		memcpy(&seq, p, sizeof(seq));
	make_pdata(ref, len, seq);
	return !memcmp(ref, p, len);
}

static int map_ep(struct mset *m, struct rapt_ep *ep, uint64_t *idx)
{
	void *ctx;

	if (rapt_context_get(ep, &ctx))
		return -1;
	*idx = (uint64_t)(uintptr_t)ctx;
	return *idx < m->n && m->eps[*idx] == ep ? 0 : -1;
}

/*
 * Private data is always checked (it is cheap); a mismatch always fails
 * the run, a clean result shows only with -V.
 */
static int verdict(const struct perf_side *s, uint64_t bad)
{
	if (bad)
		return 0;
	return s->hello.flags & PERF_HELLO_VERIFY ? 1 : -1;
}

/* ------------------------------------------------------------------ */
/* Client                                                              */
/* ------------------------------------------------------------------ */

/* Connect EP table slot @i; private data for connection @seq. */
static int start_connect(struct perf_side *s, struct mset *m, uint64_t i,
			 uint64_t seq, const struct sockaddr_storage *ss)
{
	uint8_t pd[256];
	struct rapt_ep_attr a;
	uint32_t len = s->hello.pdata_len;
	int ret;

	ep_attr(s, &a);
	ret = mset_ep(s, m, &a, &m->eps[i]);
	if (ret)
		return ret;
	rapt_context_set(m->eps[i], (void *)(uintptr_t)i);
	make_pdata(pd, len, seq);
	ret = rapt_ep_connect(m->eps[i], (const struct sockaddr *)ss, m->sid,
			      len ? pd : NULL, len, PERF_CONNECT_US);
	return ret ? perf_fail(ret, "rapt_ep_connect") : 0;
}

static int wait_conn(struct perf_side *s, struct mset *m,
		     struct rapt_event *ev)
{
	int ret = perf_wait(s, m->conn, ev, PERF_CONNECT_US);

	if (ret)
		return perf_fail(ret, "waiting for a connection event");
	if (ev->type >> 8 != RAPT_EV_ESTABLISHED >> 8) {
		fprintf(stderr, "rapt_perf: unexpected %s event\n",
			rapt_event_name(ev->type));
		return RAPT_EPROTO;
	}
	return 0;
}

/*
 * The next connection event of @ep.  Events of EPs freed before they were
 * dequeued (connrate frees without waiting) name stale handles: skipped.
 */
static int expect_conn(struct perf_side *s, struct mset *m,
		       struct rapt_ep *ep, uint32_t type,
		       struct rapt_event *ev)
{
	int ret;

	do
		ret = wait_conn(s, m, ev);
	while (!ret && ep && ev->u.conn.ep != ep);
	if (!ret && ev->type != type) {
		fprintf(stderr, "rapt_perf: %s (reason %s, provider status "
			"%d), expected %s\n", rapt_event_name(ev->type),
			perf_reason_name(ev->u.conn.reason),
			ev->u.conn.prov_status, rapt_event_name(type));
		ret = RAPT_ECONNREFUSED;
	}
	return ret;
}

struct cycle_times {
	uint64_t *cycle, *connect, *disc;
	uint64_t bad;
};

static int one_cycle(struct perf_side *s, struct mset *m,
		     const struct sockaddr_storage *ss, uint64_t i,
		     uint64_t t[3])
{
	struct rapt_event ev;
	uint64_t t0 = perf_now_ns();
	int ret;

	ret = start_connect(s, m, 0, i, ss);
	if (!ret)
		ret = expect_conn(s, m, m->eps[0], RAPT_EV_ESTABLISHED, &ev);
	if (ret)
		return ret;
	t[1] = perf_now_ns() - t0;
	if (!pdata_ok(ev.u.conn.pdata, ev.u.conn.pdata_len,
		      s->hello.pdata_len))
		t[2] = 1;
	ret = rapt_ep_disconnect(m->eps[0], RAPT_CLOSE_GRACEFUL, NULL, 0);
	if (ret)
		return perf_fail(ret, "rapt_ep_disconnect");
	if (s->o->disc_wait)
		ret = expect_conn(s, m, m->eps[0], RAPT_EV_DISCONNECTED, &ev);
	rapt_ep_free(m->eps[0]);
	m->eps[0] = NULL;
	t[0] = perf_now_ns() - t0;
	return ret;
}

static int connrate_loop(struct perf_side *s, struct mset *m,
			 const struct sockaddr_storage *ss, uint64_t n,
			 uint64_t warm, struct cycle_times *ct,
			 uint64_t *start)
{
	uint64_t i, t[3] = { 0, 0, 0 };
	int ret = 0;

	for (i = 0; !ret && i < warm + n; i++) {
		if (i == warm)
			*start = perf_now_ns();
		t[2] = 0;
		ret = one_cycle(s, m, ss, i, t);
		ct->bad += t[2];
		if (ret || i < warm)
			continue;
		ct->cycle[i - warm] = t[0];
		ct->connect[i - warm] = t[1];
		ct->disc[i - warm] = t[0] - t[1];
		perf_progress(s->o, "connrate", i + 1, warm + n);
	}
	perf_progress_end(s->o);
	return ret;
}

/* DONE with @count, then the server's ACK. */
static int done_ack(struct perf_side *s, uint64_t count, struct perf_ctl *m)
{
	int ret = perf_ctl_send(s, PERF_CTL_DONE, &count, 1);

	return ret ? ret : perf_ctl_recv(s, PERF_CTL_ACK, m);
}

static int phase_start(struct perf_side *s, struct mset *m, uint64_t total,
		       uint32_t window)
{
	uint64_t a[3] = { total, s->hello.pdata_len, window };
	struct perf_ctl r;
	int ret;

	ret = perf_ctl_send(s, PERF_CTL_PHASE, a, 3);
	if (!ret)
		ret = perf_ctl_recv(s, PERF_CTL_READY, &r);
	if (!ret && r.arg[0])
		ret = (int)(int64_t)r.arg[0];
	m->sid = r.arg[1];
	return ret;
}

static double med_of(uint64_t *v, uint64_t n, double *p99)
{
	struct perf_row tmp;

	perf_stats(v, n, &tmp);
	if (p99)
		*p99 = tmp.p99;
	return tmp.med;
}

static int client_connrate(struct perf_side *s, uint64_t n,
			   struct perf_row *row)
{
	uint64_t warm = s->o->warmup != UINT64_MAX ? s->o->warmup :
			CONN_WARMUP, start = 0;
	struct cycle_times ct = { 0 };
	struct sockaddr_storage ss;
	struct mset m = { 0 };
	struct perf_ctl ack;
	int ret;

	ct.cycle = calloc(n, sizeof(uint64_t));
	ct.connect = calloc(n, sizeof(uint64_t));
	ct.disc = calloc(n, sizeof(uint64_t));
	ret = ct.cycle && ct.connect && ct.disc ? 0 : RAPT_ENOMEM;
	if (!ret)
		ret = perf_remote_addr(s, &ss);
	if (!ret)
		ret = mset_open(s, &m, 1);
	if (!ret)
		ret = phase_start(s, &m, warm + n, 1);
	if (!ret)
		ret = connrate_loop(s, &m, &ss, n, warm, &ct, &start);
	if (!ret)
		ret = done_ack(s, warm + n, &ack);
	if (!ret) {
		row->conn_per_s = n * 1e9 / (perf_now_ns() - start);
		row->cycle_med = med_of(ct.cycle, n, &row->cycle_p99);
		row->connect_med = med_of(ct.connect, n, &row->connect_p99);
		row->disc_med = med_of(ct.disc, n, NULL);
		row->srv_est = ack.arg[1];
		row->srv_disc = ack.arg[2];
		row->busy = ack.arg[3];
		row->verified = verdict(s, ct.bad + ack.arg[0]);
	}
	mset_close(&m);
	free(ct.cycle);
	free(ct.connect);
	free(ct.disc);
	return ret;
}

/* One connection event during connect-all: count, or retry a BUSY. */
struct connect_count {
	uint64_t est;
	uint64_t busy;
	uint64_t bad;
};

static int on_connect_event(struct perf_side *s, struct mset *m,
			    const struct rapt_event *ev,
			    const struct sockaddr_storage *ss,
			    struct connect_count *cc)
{
	uint64_t i;

	if (map_ep(m, ev->u.conn.ep, &i))
		return RAPT_EPROTO;
	if (ev->type == RAPT_EV_ESTABLISHED) {
		cc->est++;
		if (!pdata_ok(ev->u.conn.pdata, ev->u.conn.pdata_len,
			      s->hello.pdata_len))
			cc->bad++;
		return 0;
	}
	if (ev->type == RAPT_EV_NON_PEER_REJECTED &&
	    ev->u.conn.reason == RAPT_REJECT_BUSY) {
		cc->busy++;
		rapt_ep_free(m->eps[i]);
		m->eps[i] = NULL;
		return start_connect(s, m, i, i, ss);
	}
	fprintf(stderr, "rapt_perf: connection %llu: %s, reason %s\n",
		(unsigned long long)i, rapt_event_name(ev->type),
		perf_reason_name(ev->u.conn.reason));
	return RAPT_ECONNREFUSED;
}

static int connect_all(struct perf_side *s, struct mset *m,
		       const struct sockaddr_storage *ss, uint32_t window,
		       struct connect_count *cc)
{
	struct rapt_event ev;
	uint64_t i = 0;
	int ret = 0;

	while (!ret && cc->est < m->n) {
		if (i < m->n && (!window || i - cc->est < window)) {
			ret = start_connect(s, m, i, i, ss);
			i++;
			continue;
		}
		ret = wait_conn(s, m, &ev);
		if (!ret)
			ret = on_connect_event(s, m, &ev, ss, cc);
		perf_progress(s->o, "conns", cc->est, m->n);
	}
	perf_progress_end(s->o);
	return ret;
}

static int close_all(struct perf_side *s, struct mset *m)
{
	struct rapt_event ev;
	uint64_t i, left = 0;
	int ret;

	for (i = 0; i < m->n; i++) {
		ret = rapt_ep_disconnect(m->eps[i], RAPT_CLOSE_GRACEFUL,
					 NULL, 0);
		if (ret)
			return perf_fail(ret, "rapt_ep_disconnect");
		left++;
	}
	while (left) {
		ret = expect_conn(s, m, NULL, RAPT_EV_DISCONNECTED, &ev);
		if (ret)
			return ret;
		if (map_ep(m, ev.u.conn.ep, &i))
			return RAPT_EPROTO;
		rapt_ep_free(m->eps[i]);
		m->eps[i] = NULL;
		left--;
	}
	return 0;
}

struct mem_probe {
	long rss;
	int fds;
};

static void probe(struct mem_probe *p)
{
	p->rss = perf_rss_kb();
	p->fds = perf_count_fds();
}

static void mem_row(struct perf_row *row, uint64_t n,
		    const struct mem_probe *before,
		    const struct mem_probe *after, const struct perf_ctl *ack)
{
	row->cli_rss_base = before->rss;
	row->cli_per_conn = (after->rss - before->rss) * 1024.0 / n;
	row->cli_fds = (double)(after->fds - before->fds) / n;
	row->srv_est = ack->arg[1];
	row->srv_rss_base = (long)ack->arg[2];
	row->srv_per_conn = ((double)ack->arg[3] - (double)ack->arg[2]) *
			    1024.0 / n;
	row->srv_fds = ((double)ack->arg[5] - (double)ack->arg[4]) / n;
}

static int client_conns(struct perf_side *s, uint64_t n, struct perf_row *row)
{
	struct mem_probe before = { 0 }, after = { 0 };
	uint32_t window = s->hello.window;
	struct sockaddr_storage ss;
	struct connect_count cc = { 0 };
	struct perf_ctl ack, ack2;
	struct mset m = { 0 };
	uint64_t t0;
	int ret;

	ret = perf_remote_addr(s, &ss);
	if (!ret)
		ret = mset_open(s, &m, n);
	if (!ret)
		ret = phase_start(s, &m, n, window);
	probe(&before);
	t0 = perf_now_ns();
	if (!ret)
		ret = connect_all(s, &m, &ss, window, &cc);
	if (!ret) {
		row->connect_all_ms = (perf_now_ns() - t0) / 1e6;
		row->conn_per_s = n * 1e9 / (perf_now_ns() - t0);
		row->busy = cc.busy;
		probe(&after);
		ret = done_ack(s, n, &ack);
	}
	if (!ret) {
		mem_row(row, n, &before, &after, &ack);
		t0 = perf_now_ns();
		ret = close_all(s, &m);
		row->close_all_ms = (perf_now_ns() - t0) / 1e6;
	}
	if (!ret)
		ret = done_ack(s, n, &ack2);
	if (!ret) {
		row->srv_disc = ack2.arg[2];
		row->verified = verdict(s, ack2.arg[0] + cc.bad);
	}
	mset_close(&m);
	return ret;
}

int perf_conn_client(struct perf_side *s, uint64_t conns,
		     struct perf_row *row)
{
	row->iters = conns;
	row->bytes = s->hello.pdata_len;
	row->window = s->hello.window;
	row->verified = -1;
	if (s->o->test == PERF_CONNRATE)
		return client_connrate(s, conns, row);
	return client_conns(s, conns, row);
}

/* ------------------------------------------------------------------ */
/* Server                                                              */
/* ------------------------------------------------------------------ */

struct srv_conn {
	struct mset m;
	uint64_t next;		/* EP table slots used */
	uint64_t est, disc, bad, errors;
	uint64_t want_est, want_disc;	/* from DONE; 0: not asked yet */
	uint64_t done_at;
	long rss_base, rss;
	int fds_base, fds;
	bool conns;
	uint32_t ctl_tick;	/* srv_loop: events since the last look */
};

/* The control channel is looked at when no connection event came for a
 * wait (the client's DONE comes after its last connection), and every
 * SRV_CTL_EVERY events besides: not after each event, which would put a
 * poll of another EVD on every connection's path (the peers' servers
 * have no such channel). */
#define SRV_CTL_EVERY	64

static int srv_listen(struct perf_side *s, struct srv_conn *c,
		      uint64_t window)
{
	struct rapt_psp_attr a;
	struct rapt_psp_info pi;
	uint64_t lim = window ? 2 * window : c->m.n;
	int ret;

	memset(&a, 0, sizeof(a));
	a.backlog = (uint32_t)(lim < 128 ? 128 : lim > 65535 ? 65535 : lim);
	a.handshake_limit = a.backlog;
	ret = rapt_psp_create(s->ia, RAPT_SERVICE_ID_ANY, c->m.cr, &a,
			      &c->m.psp);
	if (ret)
		return perf_fail(ret, "rapt_psp_create (connections)");
	ret = rapt_psp_query(c->m.psp, &pi, sizeof(pi));
	if (ret)
		return perf_fail(ret, "rapt_psp_query");
	c->m.sid = pi.service_id;
	return 0;
}

static int srv_request(struct perf_side *s, struct srv_conn *c,
		       const struct rapt_event *ev)
{
	struct rapt_ep_attr a;
	struct rapt_cr_info ci;
	uint8_t pd[256];
	uint32_t len;
	uint64_t i;
	int ret;

	ret = rapt_cr_query(ev->u.cr.cr, &ci, sizeof(ci));
	if (ret)
		return perf_fail(ret, "rapt_cr_query");
	len = ci.pdata_len < sizeof(pd) ? ci.pdata_len : sizeof(pd);
	if (len)
		memcpy(pd, ci.pdata, len);
	if (!pdata_ok(pd, len, s->hello.pdata_len))
		c->bad++;
	if (c->next == c->m.n) {
		rapt_cr_reject(ev->u.cr.cr, NULL, 0);
		c->errors++;
		return 0;
	}
	i = c->next++;
	ep_attr(s, &a);
	ret = mset_ep(s, &c->m, &a, &c->m.eps[i]);
	if (ret)
		return ret;
	rapt_context_set(c->m.eps[i], (void *)(uintptr_t)i);
	ret = rapt_cr_accept(ev->u.cr.cr, c->m.eps[i], len ? pd : NULL, len);
	return ret ? perf_fail(ret, "rapt_cr_accept") : 0;
}

static void srv_all_up(struct srv_conn *c)
{
	c->rss = perf_rss_kb();
	c->fds = perf_count_fds();
}

static int srv_conn_event(struct perf_side *s, struct srv_conn *c,
			  const struct rapt_event *ev)
{
	uint64_t i;

	if (ev->type == RAPT_EV_CR_ARRIVAL)
		return srv_request(s, c, ev);
	if (map_ep(&c->m, ev->u.conn.ep, &i))
		return 0;
	switch (ev->type) {
	case RAPT_EV_ESTABLISHED:
		if (++c->est == c->m.n && c->conns)
			srv_all_up(c);
		return 0;
	case RAPT_EV_DISCONNECTED:
	case RAPT_EV_BROKEN:
		c->disc++;
		break;
	default:
		c->errors++;
		break;
	}
	rapt_ep_free(c->m.eps[i]);
	c->m.eps[i] = NULL;
	return 0;
}

/* Is the client's DONE answered yet?  1: send the ACK now. */
static int srv_ready_to_ack(const struct srv_conn *c)
{
	if (!c->done_at)
		return 0;
	if (c->est >= c->want_est && c->disc >= c->want_disc)
		return 1;
	return perf_now_ns() - c->done_at > ACK_WAIT_NS;
}

static int srv_ack(struct perf_side *s, struct srv_conn *c)
{
	uint64_t a[6] = { c->bad, c->est, c->disc, 0, c->errors, 0 };
	struct rapt_psp_info pi;

	if (!rapt_psp_query(c->m.psp, &pi, sizeof(pi)))
		a[3] = pi.busy_rejects;
	if (c->conns && !c->want_disc) {
		a[2] = (uint64_t)c->rss_base;
		a[3] = (uint64_t)c->rss;
		a[4] = (uint64_t)c->fds_base;
		a[5] = (uint64_t)c->fds;
	}
	c->done_at = 0;
	return perf_ctl_send(s, PERF_CTL_ACK, a, 6);
}

/* A DONE from the client: what must be seen before the ACK. */
static void srv_done(struct srv_conn *c, const struct perf_ctl *m,
		     int *dones)
{
	(*dones)++;
	c->want_est = m->arg[0];
	c->want_disc = !c->conns || *dones == 2 ? m->arg[0] : 0;
	c->done_at = perf_now_ns();
}

/* Control traffic between connection events; never blocks. */
static int srv_poll_ctl(struct perf_side *s, struct srv_conn *c, int *dones)
{
	struct rapt_event ev;
	struct perf_ctl m;
	int ret, err;

	while ((ret = rapt_evd_dequeue(s->dto_evd, &ev)) == 0) {
		if (!perf_ctl_event(s, &ev, &err))
			return RAPT_EPROTO;
		if (err)
			return err;
	}
	if (ret != RAPT_EAGAIN)
		return ret;
	while ((ret = perf_ctl_poll(s, PERF_CTL_DONE, &m)) == 1)
		srv_done(c, &m, dones);
	return ret;
}

static int srv_wait(struct perf_side *s, struct srv_conn *c,
		    struct rapt_event *ev)
{
	int ret = perf_wait(s, c->m.conn, ev, 1000);

	if (ret == RAPT_ETIMEDOUT && c->m.cr != c->m.conn)
		ret = rapt_evd_dequeue(c->m.cr, ev);
	return ret;
}

static int srv_loop(struct perf_side *s, struct srv_conn *c, int last_done)
{
	struct rapt_event ev;
	int ret = 0, dones = 0;

	bool idle;

	while (!ret && dones < last_done) {
		ret = srv_wait(s, c, &ev);
		idle = ret == RAPT_ETIMEDOUT || ret == RAPT_EAGAIN;
		if (!ret)
			ret = srv_conn_event(s, c, &ev);
		else if (idle)
			ret = 0;
		if (!ret && (idle || ++c->ctl_tick == SRV_CTL_EVERY)) {
			c->ctl_tick = 0;
			ret = srv_poll_ctl(s, c, &dones);
		}
		if (!ret && srv_ready_to_ack(c))
			ret = srv_ack(s, c);
	}
	/* The last ACK may still be owed. */
	while (!ret && c->done_at) {
		ret = srv_wait(s, c, &ev);
		if (!ret)
			ret = srv_conn_event(s, c, &ev);
		else if (ret == RAPT_ETIMEDOUT || ret == RAPT_EAGAIN)
			ret = 0;
		if (!ret && srv_ready_to_ack(c))
			ret = srv_ack(s, c);
	}
	return ret;
}

int perf_conn_server(struct perf_side *s, const struct perf_ctl *ph)
{
	uint64_t total = ph->arg[0], a[2] = { 0, 0 };
	struct srv_conn c;
	int ret;

	memset(&c, 0, sizeof(c));
	c.conns = s->hello.test == PERF_CONNS;
	if (ph->arg[1] != s->hello.pdata_len || !total) {
		a[0] = (uint64_t)(int64_t)RAPT_EINVAL;
		return perf_ctl_send(s, PERF_CTL_READY, a, 1);
	}
	ret = mset_open(s, &c.m, total);
	if (!ret)
		ret = srv_listen(s, &c, ph->arg[2]);
	c.rss_base = perf_rss_kb();
	c.fds_base = perf_count_fds();
	a[1] = c.m.sid;
	if (!ret)
		ret = perf_ctl_send(s, PERF_CTL_READY, a, 2);
	if (!ret)
		ret = srv_loop(s, &c, c.conns ? 2 : 1);
	mset_close(&c.m);
	return ret;
}
