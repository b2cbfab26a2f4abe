/* SPDX-License-Identifier: MIT */
/*
 * rapt_perf: a session from both ends.  The client connects the control
 * EP (struct perf_hello says what to run) and, for the data tests, the
 * data EP; then it runs one phase per message size and ends with FIN.
 * The server accepts both, answers each PHASE, and leaves after FIN.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

#define SWEEP_BUDGET	(1ull << 30)	/* bytes per size, each way */
#define MIN_SWEEP_ITERS	16

static uint32_t clamp32(uint64_t v, uint32_t max)
{
	return max && v > max ? max : (uint32_t)v;
}

/* The window a test runs with: -w, else its default. */
static uint32_t eff_window(const struct perf_opts *o)
{
	if (o->window != PERF_WINDOW_DEFAULT)
		return o->window;
	if (o->test == PERF_CONNS)
		return 64;
	if (perf_is_latency(o->test) || o->test == PERF_CONNRATE)
		return 1;
	return 16;
}

static uint64_t slot_len(uint64_t max_size)
{
	return max_size > PERF_CTL_LEN ? max_size : PERF_CTL_LEN;
}

/*
 * The data region: two slots for the latency tests; for the bandwidth
 * tests a slot per outstanding operation (the server twice that, for
 * bw_send's receives), plus room for a marker message.
 */
static uint64_t region_len(const struct perf_hello *h, bool server)
{
	uint64_t slots;

	if (perf_is_conn((enum perf_test)h->test))
		return 0;
	if (perf_is_latency((enum perf_test)h->test))
		slots = 2;
	else
		slots = server ? 2ull * h->window : h->window;
	return slots * slot_len(h->max_size) + PERF_CTL_LEN;
}

static void data_attr(struct perf_side *s, uint32_t window, bool inl,
		      struct rapt_ep_attr *a)
{
	const struct rapt_ia_attr *ia = &s->attr;

	memset(a, 0, sizeof(*a));
	a->max_send = clamp32(window + 4ull, ia->max_send_depth);
	a->max_recv = clamp32(2ull * window + 4, ia->max_recv_depth);
	a->max_send_sge = 1;
	a->max_recv_sge = 1;
	if (ia->caps & RAPT_CAP_RDMA_READ) {
		a->rdma_read_out = clamp32(window, ia->max_rdma_read_out);
		a->rdma_read_in = ia->max_rdma_read_in;
	}
	if (inl && (ia->caps & RAPT_CAP_INLINE))
		a->max_inline = ia->max_inline;
	s->max_inline = a->max_inline;
}

static void ctl_attr(struct rapt_ep_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->max_send = PERF_CTL_SENDS;
	a->max_recv = PERF_CTL_RECVS;
	a->max_send_sge = 1;
	a->max_recv_sge = 1;
}

/* Is what @h asks for possible on this IA?  0, or why not. */
static int hello_check(const struct perf_side *s, const struct perf_hello *h,
		       const char **why)
{
	const struct rapt_ia_attr *a = &s->attr;
	enum perf_test t = (enum perf_test)h->test;

	*why = NULL;
	if (h->magic != PERF_MAGIC || h->version != PERF_VERSION)
		*why = "not a rapt_perf client of this version";
	else if (t < PERF_LAT_SEND || t > PERF_LAT_MW)
		*why = "unknown test";
	else if (!perf_is_conn(t) && (!h->window ||
				      h->window > PERF_MAX_WINDOW))
		*why = "window too large";
	else if (h->mode > PERF_MODE_FD ||
		 (h->mode == PERF_MODE_FD && !(a->caps & RAPT_CAP_EVD_FD)))
		*why = "no EVD file descriptors on this IA (-m fd)";
	else if ((t == PERF_LAT_WRITE || t == PERF_BW_WRITE ||
		  t == PERF_LAT_MW) && !(a->caps & RAPT_CAP_RDMA_WRITE))
		*why = "no RDMA write on this IA";
	else if ((t == PERF_LAT_READ || t == PERF_BW_READ) &&
		 !(a->caps & RAPT_CAP_RDMA_READ))
		*why = "no RDMA read on this IA";
	else if (t == PERF_LAT_MW && !(a->caps & RAPT_CAP_SEND_INVALIDATE))
		*why = "no Send with Invalidate on this IA";
	else if (!perf_is_conn(t) && h->max_size > PERF_MAX_SIZE)
		*why = "message size too large";
	if (*why)
		return RAPT_ENOTSUP;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Server                                                              */
/* ------------------------------------------------------------------ */

static int reject(struct rapt_cr *cr, int status)
{
	struct perf_welcome w = { .magic = PERF_MAGIC, .status = status };

	return rapt_cr_reject(cr, &w, sizeof(w));
}

static int accept_ep(struct perf_side *s, struct rapt_cr *cr,
		     struct rapt_ep *ep)
{
	struct perf_welcome w = { .magic = PERF_MAGIC };
	int ret;

	w.raddr = s->data_info.raddr;
	w.rkey = s->data_info.rkey;
	w.rlen = s->data_len;
	ret = rapt_cr_accept(cr, ep, &w, sizeof(w));
	return ret ? perf_fail(ret, "rapt_cr_accept") : 0;
}

static int accept_ctl(struct perf_side *s, struct rapt_cr *cr,
		      const struct perf_hello *h)
{
	struct rapt_ep_attr a;
	const char *why;
	int ret;

	ret = hello_check(s, h, &why);
	if (ret) {
		fprintf(stderr, "rapt_perf: refusing the client: %s\n", why);
		reject(cr, ret);
		return ret;
	}
	s->hello = *h;
	s->mode = (enum perf_mode)h->mode;
	s->slot = slot_len(h->max_size);
	if (region_len(h, true)) {
		ret = perf_region(s, region_len(h, true));
		if (ret) {
			reject(cr, ret);
			return ret;
		}
	}
	ctl_attr(&a);
	ret = perf_ep_create(s, &a, &s->ctl_ep);
	if (!ret)
		ret = perf_ctl_arm(s);
	if (!ret)
		ret = accept_ep(s, cr, s->ctl_ep);
	return ret;
}

static int accept_data(struct perf_side *s, struct rapt_cr *cr)
{
	struct rapt_ep_attr a;
	int ret;

	if (!s->ctl_ep || s->data_ep) {
		fprintf(stderr, "rapt_perf: unexpected data connection\n");
		reject(cr, RAPT_EPROTO);
		return RAPT_EPROTO;
	}
	data_attr(s, s->hello.window, s->hello.flags & PERF_HELLO_INLINE, &a);
	ret = perf_ep_create(s, &a, &s->data_ep);
	if (!ret)
		ret = accept_ep(s, cr, s->data_ep);
	return ret;
}

static int on_request(struct perf_side *s, const struct rapt_event *ev)
{
	struct rapt_cr_info ci;
	struct perf_hello h;
	int ret;

	ret = rapt_cr_query(ev->u.cr.cr, &ci, sizeof(ci));
	if (ret)
		return perf_fail(ret, "rapt_cr_query");
	memset(&h, 0, sizeof(h));
	if (ci.pdata_len != sizeof(h)) {
		fprintf(stderr, "rapt_perf: a request without a rapt_perf "
			"hello (%u bytes of private data)\n", ci.pdata_len);
		reject(ev->u.cr.cr, RAPT_EPROTO);
		return RAPT_EPROTO;
	}
	memcpy(&h, ci.pdata, sizeof(h));
	if (h.flags & PERF_HELLO_DATA)
		return accept_data(s, ev->u.cr.cr);
	if (s->ctl_ep) {
		fprintf(stderr, "rapt_perf: a second client; refused\n");
		reject(ev->u.cr.cr, RAPT_EBUSY);
		return 0;
	}
	return accept_ctl(s, ev->u.cr.cr, &h);
}

/* Accept the control EP and, for the data tests, the data EP. */
static int server_accept(struct perf_side *s)
{
	bool ctl_up = false, data_up = false;
	struct rapt_event ev;
	int ret, err;

	while (!ctl_up || (!data_up &&
			   !perf_is_conn((enum perf_test)s->hello.test))) {
		/* Only a stand-alone server waits for its client forever. */
		ret = perf_wait_any(s, &ev, s->ctl_ep ||
				    s->o->role != PERF_ROLE_SERVER ?
				    PERF_CONNECT_US : -1);
		if (ret)
			return perf_fail(ret, "waiting for the client");
		if (perf_ctl_event(s, &ev, &err)) {
			if (err)
				return err;
			continue;
		}
		if (ev.type == RAPT_EV_CR_ARRIVAL) {
			ret = on_request(s, &ev);
		} else if (ev.type == RAPT_EV_ESTABLISHED &&
			   ev.u.conn.ep == s->ctl_ep) {
			ctl_up = true;
		} else if (ev.type == RAPT_EV_ESTABLISHED &&
			   ev.u.conn.ep == s->data_ep) {
			data_up = true;
		} else {
			fprintf(stderr, "rapt_perf: %s event while accepting "
				"the client\n", rapt_event_name(ev.type));
			ret = RAPT_EPROTO;
		}
		if (ret)
			return ret;
	}
	return 0;
}

int perf_server_phase(struct perf_side *s, const struct perf_ctl *phase)
{
	enum perf_test t = (enum perf_test)s->hello.test;

	if (perf_is_latency(t))
		return perf_lat_server(s, phase);
	if (perf_is_conn(t))
		return perf_conn_server(s, phase);
	return perf_bw_server(s, phase);
}

static void announce(struct perf_side *s)
{
	char buf[64];
	int n;

	if (s->announce_fd < 0) {
		fprintf(stderr, "rapt_perf: server on %s, service id %llu, "
			"waiting for one client\n", s->attr.name,
			(unsigned long long)s->sid);
		return;
	}
	n = snprintf(buf, sizeof(buf), "sid=%llu\n",
		     (unsigned long long)s->sid);
	if (write(s->announce_fd, buf, (size_t)n) != n)
		perror("rapt_perf: announce");
	close(s->announce_fd);
	s->announce_fd = -1;
}

/* After FIN: our figures, then wait for the client to disconnect. */
static int server_fin(struct perf_side *s)
{
	uint64_t a[2] = { (uint64_t)perf_rss_kb(), (uint64_t)perf_count_fds() };
	struct rapt_event ev;
	int ret;

	ret = perf_ctl_send(s, PERF_CTL_STATS, a, 2);
	if (ret)
		return ret;
	if (s->data_ep)
		perf_conn_wait(s, s->data_ep, RAPT_EV_DISCONNECTED, &ev);
	perf_conn_wait(s, s->ctl_ep, RAPT_EV_DISCONNECTED, &ev);
	return 0;
}

int perf_server_run(const struct perf_opts *o, int announce_fd)
{
	struct perf_side s;
	struct perf_ctl m;
	int ret;

	ret = perf_side_open(&s, o, true);
	s.announce_fd = announce_fd;
	if (!ret) {
		announce(&s);
		ret = server_accept(&s);
	}
	while (!ret) {
		ret = perf_ctl_recv(&s, 0, &m);
		if (ret)
			break;
		if (m.op == PERF_CTL_FIN) {
			ret = server_fin(&s);
			break;
		}
		ret = m.op == PERF_CTL_PHASE ? perf_server_phase(&s, &m) :
		      RAPT_EPROTO;
	}
	if (s.announce_fd >= 0)
		close(s.announce_fd);
	perf_side_close(&s);
	if (ret == RAPT_ENOTSUP)
		return PERF_EXIT_UNSUPPORTED;
	return ret ? PERF_EXIT_FAIL : PERF_EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* Client                                                              */
/* ------------------------------------------------------------------ */

static void explain(const struct perf_side *s, const struct rapt_event *ev)
{
	struct perf_welcome w;

	if (ev->type == RAPT_EV_PEER_REJECTED &&
	    ev->u.conn.pdata_len == sizeof(w)) {
		memcpy(&w, ev->u.conn.pdata, sizeof(w));
		fprintf(stderr, "rapt_perf: the server refused: %s\n",
			rapt_strerror(w.status));
		return;
	}
	fprintf(stderr, "rapt_perf: connecting failed: %s",
		rapt_event_name(ev->type));
	if (ev->type == RAPT_EV_NON_PEER_REJECTED)
		fprintf(stderr, " (%s)", perf_reason_name(ev->u.conn.reason));
	if (ev->u.conn.prov_status)
		fprintf(stderr, ", provider status %d", ev->u.conn.prov_status);
	fprintf(stderr, "\n");
	if (ev->type == RAPT_EV_NON_PEER_REJECTED &&
	    ev->u.conn.reason == RAPT_REJECT_NO_LISTENER)
		fprintf(stderr, "rapt_perf: no server listens on service id "
			"%llu there (an in-process provider such as \"test\" "
			"needs --loopback-thread)\n",
			(unsigned long long)s->o->sid);
}

static int client_connect(struct perf_side *s, struct rapt_ep *ep,
			  const struct perf_hello *h, struct perf_welcome *w)
{
	struct sockaddr_storage ss;
	struct rapt_event ev;
	int ret;

	ret = perf_remote_addr(s, &ss);
	if (ret)
		return ret;
	ret = rapt_ep_connect(ep, (struct sockaddr *)&ss, s->o->sid, h,
			      sizeof(*h), PERF_CONNECT_US);
	if (ret)
		return perf_fail(ret, "rapt_ep_connect");
	ret = perf_conn_wait(s, ep, RAPT_EV_ESTABLISHED, &ev);
	if (ret == RAPT_ECONNREFUSED) {
		explain(s, &ev);
		if (ev.type == RAPT_EV_PEER_REJECTED && ev.u.conn.pdata_len ==
		    sizeof(*w)) {
			memcpy(w, ev.u.conn.pdata, sizeof(*w));
			return w->status ? w->status : ret;
		}
	}
	if (ret)
		return ret;
	if (ev.u.conn.pdata_len != sizeof(*w)) {
		fprintf(stderr, "rapt_perf: the server sent no welcome\n");
		return RAPT_EPROTO;
	}
	memcpy(w, ev.u.conn.pdata, sizeof(*w));
	return 0;
}

static int client_session(struct perf_side *s, struct perf_hello *h)
{
	struct perf_welcome w;
	struct rapt_ep_attr a;
	int ret;

	s->hello = *h;
	s->slot = slot_len(h->max_size);
	if (region_len(h, false)) {
		ret = perf_region(s, region_len(h, false));
		if (ret)
			return ret;
	}
	ctl_attr(&a);
	ret = perf_ep_create(s, &a, &s->ctl_ep);
	if (!ret)
		ret = perf_ctl_arm(s);
	if (!ret)
		ret = client_connect(s, s->ctl_ep, h, &w);
	if (ret)
		return ret;
	s->peer_raddr = w.raddr;
	s->peer_rkey = w.rkey;
	s->peer_rlen = w.rlen;
	if (perf_is_conn(s->o->test))
		return 0;
	data_attr(s, h->window, h->flags & PERF_HELLO_INLINE, &a);
	ret = perf_ep_create(s, &a, &s->data_ep);
	h->flags |= PERF_HELLO_DATA;
	if (!ret)
		ret = client_connect(s, s->data_ep, h, &w);
	h->flags &= (uint8_t)~PERF_HELLO_DATA;
	return ret;
}

/* --pdata must fit a connect and an accept of this IA. */
static int pdata_fits(const struct perf_side *s)
{
	uint32_t lim = s->attr.pdata_connect < s->attr.pdata_accept ?
		       s->attr.pdata_connect : s->attr.pdata_accept;

	if (s->o->pdata_len <= lim)
		return 0;
	fprintf(stderr, "rapt_perf: %s carries at most %u bytes of private "
		"data on connect and accept\n", s->attr.name, lim);
	return RAPT_ERANGE;
}

/* The largest size the test may use on this IA. */
static uint64_t size_limit(const struct perf_side *s)
{
	uint64_t lim = perf_is_rdma(s->o->test) ? s->attr.max_rdma_size :
		       s->attr.max_msg_size;

	return lim && lim < PERF_MAX_SIZE ? lim : PERF_MAX_SIZE;
}

static int client_sizes(struct perf_side *s, struct perf_hello *h)
{
	const struct perf_opts *o = s->o;
	uint64_t lim = size_limit(s);

	h->max_size = o->sweep ? o->max_size : o->size;
	if (perf_is_conn(o->test))
		return pdata_fits(s);
	if (h->max_size > lim && o->sweep) {
		fprintf(stderr, "rapt_perf: %s allows at most %llu bytes; the "
			"sweep stops there\n", s->attr.name,
			(unsigned long long)lim);
		h->max_size = lim;
	} else if (h->max_size > lim) {
		fprintf(stderr, "rapt_perf: %s allows at most %llu bytes\n",
			s->attr.name, (unsigned long long)lim);
		return RAPT_ERANGE;
	}
	return 0;
}

static uint64_t iters_for(const struct perf_opts *o, uint64_t size)
{
	uint64_t n = perf_default_iters(o), cap;

	if (!o->sweep)
		return n;
	cap = SWEEP_BUDGET / (size ? size : 1);
	if (cap < MIN_SWEEP_ITERS)
		cap = MIN_SWEEP_ITERS;
	return n < cap ? n : cap;
}

static uint64_t warmup_for(const struct perf_opts *o, uint64_t iters)
{
	uint64_t w = perf_is_latency(o->test) ? 1000 : 256, tenth;

	if (o->warmup != UINT64_MAX)
		return o->warmup;
	tenth = iters / 10 ? iters / 10 : 1;
	return w < tenth ? w : tenth;
}

static int client_phases(struct perf_side *s, const struct perf_hello *h)
{
	const struct perf_opts *o = s->o;
	uint64_t size = o->sweep ? 1 : h->max_size, n;
	struct perf_row row;
	int ret = 0;

	perf_out_header(o, s);
	if (perf_is_conn(o->test)) {
		memset(&row, 0, sizeof(row));
		ret = perf_conn_client(s, perf_default_iters(o), &row);
		if (!ret)
			perf_out_row(o, s, &row);
		return !ret && !row.verified ? RAPT_EIO : ret;
	}
	for (; !ret && size <= h->max_size; size *= 2) {
		memset(&row, 0, sizeof(row));
		row.verified = -1;
		n = iters_for(o, size);
		if (perf_is_latency(o->test))
			ret = perf_lat_client(s, size, n, warmup_for(o, n),
					      &row);
		else
			ret = perf_bw_client(s, size, n, warmup_for(o, n),
					     &row);
		if (!ret)
			perf_out_row(o, s, &row);
		if (!ret && !row.verified) {
			fprintf(stderr, "rapt_perf: the data check failed\n");
			ret = RAPT_EIO;
		}
		if (!o->sweep)
			break;
	}
	return ret;
}

static int client_fin(struct perf_side *s)
{
	struct perf_ctl m;
	int ret;

	ret = perf_ctl_send(s, PERF_CTL_FIN, NULL, 0);
	if (!ret)
		ret = perf_ctl_recv(s, PERF_CTL_STATS, &m);
	perf_disconnect(s, &s->data_ep);
	perf_disconnect(s, &s->ctl_ep);
	return ret;
}

int perf_client_run(const struct perf_opts *o)
{
	struct perf_hello h = { .magic = PERF_MAGIC,
				.version = PERF_VERSION };
	struct perf_side s;
	int ret;

	h.test = (uint8_t)o->test;
	h.mode = (uint8_t)o->mode;
	h.flags = (o->verify ? PERF_HELLO_VERIFY : 0) |
		  (o->inline_send ? PERF_HELLO_INLINE : 0) |
		  (o->unsignaled ? PERF_HELLO_UNSIGNALED : 0);
	h.window = eff_window(o);
	h.pdata_len = (uint16_t)o->pdata_len;
	h.depth = (uint16_t)o->depth;
	h.conns = perf_default_iters(o);
	ret = perf_side_open(&s, o, false);
	if (!ret)
		ret = client_sizes(&s, &h);
	if (!ret)
		ret = client_session(&s, &h);
	if (!ret)
		ret = client_phases(&s, &h);
	if (!ret)
		ret = client_fin(&s);
	if (ret)
		perf_out_error(o, ret == RAPT_ENOTSUP ? "unsupported" : "fail",
			       rapt_strerror(ret));
	perf_side_close(&s);
	if (ret == RAPT_ENOTSUP || ret == RAPT_ERANGE)
		return PERF_EXIT_UNSUPPORTED;
	return ret ? PERF_EXIT_FAIL : PERF_EXIT_OK;
}
