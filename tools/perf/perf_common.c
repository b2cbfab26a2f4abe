/* SPDX-License-Identifier: MIT */
/*
 * rapt_perf: what every test shares.  A side's IA and EVDs, the three
 * ways of waiting for an event, the control channel, and small helpers.
 */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

#define SESSION_QLEN	4096
#define CTL_SEND_COOKIE	0x10000u

/* Report a failed rapt call once, with the library's detail. */
int perf_fail(int ret, const char *what)
{
	const char *detail = rapt_last_error();

	fprintf(stderr, "rapt_perf: %s: %s (%s)%s%s\n", what,
		rapt_strerror(ret), rapt_err_name(ret),
		detail[0] ? ": " : "", detail);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Side set-up                                                         */
/* ------------------------------------------------------------------ */

/* May streams @want all share one EVD on this IA? */
bool perf_can_merge(const struct rapt_ia_attr *a, uint32_t want)
{
	unsigned int i;

	for (i = 0; i < RAPT_EVD_NSTREAMS; i++)
		if ((want & (1u << i)) &&
		    (want & ~(a->evd_merge[i] | (1u << i))))
			return false;
	return true;
}

static int evd_add(struct perf_side *s, uint32_t streams,
		   struct rapt_evd **evd)
{
	uint32_t qlen = SESSION_QLEN;
	int ret, fd = -1;

	if (s->attr.max_evd_qlen && qlen > s->attr.max_evd_qlen)
		qlen = s->attr.max_evd_qlen;
	ret = rapt_evd_create(s->ia, qlen, streams, evd);
	if (ret)
		return perf_fail(ret, "rapt_evd_create");
	if (s->mode == PERF_MODE_FD) {
		ret = rapt_evd_get_fd(*evd, &fd);
		if (ret)
			return perf_fail(ret, "rapt_evd_get_fd");
	}
	s->fds[s->nevd] = fd;
	s->evds[s->nevd++] = *evd;
	return 0;
}

/*
 * One EVD for every stream when the IA lets them share, else one per
 * stream: DTO (control and data EPs), CONNECTION, and CR (server).
 */
static int side_evds(struct perf_side *s)
{
	uint32_t want = RAPT_EVD_DTO | RAPT_EVD_CONNECTION |
			(s->server ? RAPT_EVD_CR : 0);
	int ret;

	if (perf_can_merge(&s->attr, want)) {
		ret = evd_add(s, want, &s->dto_evd);
		s->conn_evd = s->dto_evd;
		s->cr_evd = s->server ? s->dto_evd : NULL;
		return ret;
	}
	ret = evd_add(s, RAPT_EVD_DTO, &s->dto_evd);
	if (!ret)
		ret = evd_add(s, RAPT_EVD_CONNECTION, &s->conn_evd);
	if (!ret && s->server)
		ret = evd_add(s, RAPT_EVD_CR, &s->cr_evd);
	return ret;
}

static int side_ctl_mem(struct perf_side *s)
{
	size_t len = (PERF_CTL_RECVS + PERF_CTL_SENDS) * PERF_CTL_LEN;
	int ret;

	s->ctl_buf = calloc(1, len);
	if (!s->ctl_buf)
		return perf_fail(RAPT_ENOMEM, "control buffers");
	ret = rapt_lmr_create(s->pz, s->ctl_buf, len, RAPT_MEM_LOCAL_WRITE,
			      &s->ctl_lmr, &s->ctl_info);
	if (ret)
		return perf_fail(ret, "rapt_lmr_create (control)");
	return 0;
}

static int side_listen(struct perf_side *s)
{
	struct rapt_psp_info pi;
	int ret;

	ret = rapt_psp_create(s->ia, s->o->sid, s->cr_evd, NULL, &s->psp);
	if (ret)
		return perf_fail(ret, "rapt_psp_create");
	ret = rapt_psp_query(s->psp, &pi, sizeof(pi));
	if (ret)
		return perf_fail(ret, "rapt_psp_query");
	s->sid = pi.service_id;
	return 0;
}

int perf_side_open(struct perf_side *s, const struct perf_opts *o,
		   bool server)
{
	int ret, i;

	memset(s, 0, sizeof(*s));
	s->o = o;
	s->mode = o->mode;
	s->server = server;
	s->announce_fd = -1;
	for (i = 0; i < 3; i++)
		s->fds[i] = -1;
	ret = rapt_ia_open(o->ia_name, &s->ia);
	if (ret)
		return perf_fail(ret, "rapt_ia_open");
	ret = rapt_ia_query(s->ia, &s->attr, sizeof(s->attr));
	if (ret)
		return perf_fail(ret, "rapt_ia_query");
	if (o->mode == PERF_MODE_FD && !(s->attr.caps & RAPT_CAP_EVD_FD)) {
		fprintf(stderr, "rapt_perf: %s offers no EVD file descriptors "
			"(-m fd)\n", s->attr.name);
		return RAPT_ENOTSUP;
	}
	ret = rapt_pz_create(s->ia, &s->pz);
	if (ret)
		return perf_fail(ret, "rapt_pz_create");
	ret = side_evds(s);
	if (!ret)
		ret = side_ctl_mem(s);
	if (!ret && server)
		ret = side_listen(s);
	return ret;
}

static void free_ep(struct rapt_ep **ep)
{
	if (*ep)
		rapt_ep_free(*ep);
	*ep = NULL;
}

void perf_side_close(struct perf_side *s)
{
	int i;

	free_ep(&s->data_ep);
	free_ep(&s->ctl_ep);
	if (s->psp)
		rapt_psp_free(s->psp);
	if (s->rmr)
		rapt_rmr_free(s->rmr);	/* before the LMR it opens */
	if (s->data_lmr)
		rapt_lmr_free(s->data_lmr);
	if (s->ctl_lmr)
		rapt_lmr_free(s->ctl_lmr);
	for (i = s->nevd - 1; i >= 0; i--)
		rapt_evd_free(s->evds[i]);
	if (s->pz)
		rapt_pz_free(s->pz);
	if (s->ia)
		rapt_ia_close(s->ia);
	free(s->ctl_buf);
	free(s->data);
	memset(s, 0, sizeof(*s));
}

/* The data region: page aligned, touched, registered for everything. */
int perf_region(struct perf_side *s, uint64_t len)
{
	unsigned int acc = RAPT_MEM_LOCAL_WRITE | RAPT_MEM_REMOTE_READ |
			   RAPT_MEM_REMOTE_WRITE;
	void *p;
	int ret;

	if (posix_memalign(&p, 4096, len))
		return perf_fail(RAPT_ENOMEM, "data region");
	memset(p, 0, len);
	s->data = p;
	s->data_len = len;
	ret = rapt_lmr_create(s->pz, p, len, acc, &s->data_lmr, &s->data_info);
	if (ret)
		return perf_fail(ret, "rapt_lmr_create (data)");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Waiting                                                             */
/* ------------------------------------------------------------------ */

/**
 * deadline_passed - the clock, read only once a wait has lasted
 * @end: 0 before the first look (then set to now + @timeout_us)
 * @timeout_us: the wait's timeout
 *
 * A wait that ends within PERF_SPIN_CHECK polls reads no clock at all: where
 * the clock is an emulated device (hpet under TCG, tests/vm) a read costs
 * microseconds, more than the round trip being measured gains.
 */
static bool deadline_passed(uint64_t *end, int64_t timeout_us)
{
	uint64_t now = perf_now_ns();

	if (!*end) {
		*end = now + (uint64_t)timeout_us * 1000;
		return false;
	}
	return now > *end;
}

static int spin(struct rapt_evd *evd, struct rapt_event *ev,
		int64_t timeout_us)
{
	uint64_t end = 0;
	unsigned int n = 0;
	int ret;

	for (;;) {
		ret = rapt_evd_dequeue(evd, ev);
		if (ret != RAPT_EAGAIN)
			return ret;
		if (++n % PERF_SPIN_CHECK == 0 && timeout_us >= 0 &&
		    deadline_passed(&end, timeout_us))
			return RAPT_ETIMEDOUT;
	}
}

static int fd_wait(struct rapt_evd *evd, int fd, struct rapt_event *ev,
		   int64_t timeout_us)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int ret, tmo = timeout_us < 0 ? -1 : (int)(timeout_us / 1000);

	for (;;) {
		ret = rapt_evd_dequeue(evd, ev);
		if (ret != RAPT_EAGAIN)
			return ret;
		ret = rapt_evd_arm(evd);
		if (ret == RAPT_EAGAIN)
			continue;
		if (ret)
			return ret;
		ret = poll(&pfd, 1, tmo);
		if (ret < 0 && errno != EINTR)
			return RAPT_EIO;
		if (ret == 0)
			return RAPT_ETIMEDOUT;
	}
}

/* The fd of the side's EVD number @i, fetched the first time. */
static int side_fd(struct perf_side *s, int i)
{
	if (s->fds[i] < 0 && rapt_evd_get_fd(s->evds[i], &s->fds[i]))
		s->fds[i] = -1;
	return s->fds[i];
}

static int evd_fd(struct perf_side *s, struct rapt_evd *evd)
{
	int i;

	for (i = 0; i < s->nevd; i++)
		if (s->evds[i] == evd)
			return side_fd(s, i);
	return -1;
}

/*
 * Wait for one event of @evd the way -m asks: spin on rapt_evd_dequeue(),
 * sleep in rapt_evd_wait(), or arm the EVD and poll() its fd.
 */
int perf_wait(struct perf_side *s, struct rapt_evd *evd,
	      struct rapt_event *ev, int64_t timeout_us)
{
	int fd;

	switch (s->mode) {
	case PERF_MODE_POLL:
		return spin(evd, ev, timeout_us);
	case PERF_MODE_BLOCK:
		return rapt_evd_wait(evd, timeout_us, 1, ev, NULL);
	case PERF_MODE_FD:
		fd = evd_fd(s, evd);
		if (fd < 0 && rapt_evd_get_fd(evd, &fd))
			return RAPT_ENOTSUP;
		return fd_wait(evd, fd, ev, timeout_us);
	}
	return RAPT_EINVAL;
}

/* Arm every EVD, then poll() all their fds. */
static int fd_wait_all(struct perf_side *s, struct rapt_event *ev,
		       int64_t timeout_us)
{
	struct pollfd pfd[3];
	int i, ret;

	for (i = 0; i < s->nevd; i++) {
		ret = rapt_evd_dequeue(s->evds[i], ev);
		if (ret != RAPT_EAGAIN)
			return ret;
		ret = rapt_evd_arm(s->evds[i]);
		if (ret == RAPT_EAGAIN)
			return rapt_evd_dequeue(s->evds[i], ev);
		if (ret)
			return ret;
		pfd[i].fd = side_fd(s, i);
		pfd[i].events = POLLIN;
	}
	ret = poll(pfd, (nfds_t)s->nevd,
		   timeout_us < 0 ? -1 : (int)(timeout_us / 1000));
	if (ret < 0 && errno != EINTR)
		return RAPT_EIO;
	return ret == 0 ? RAPT_ETIMEDOUT : RAPT_EAGAIN;
}

/*
 * Wait for an event on any of the side's EVDs.  With separate EVDs in
 * block mode this takes turns with 1 ms waits: only IAs that cannot merge
 * event streams pay that.
 */
int perf_wait_any(struct perf_side *s, struct rapt_event *ev,
		  int64_t timeout_us)
{
	uint64_t end = perf_now_ns() + (uint64_t)timeout_us * 1000;
	int i, ret;

	if (s->nevd == 1)
		return perf_wait(s, s->evds[0], ev, timeout_us);
	for (;;) {
		for (i = 0; i < s->nevd; i++) {
			if (s->mode == PERF_MODE_BLOCK)
				ret = rapt_evd_wait(s->evds[i], 1000, 1, ev,
						    NULL);
			else
				ret = rapt_evd_dequeue(s->evds[i], ev);
			if (ret != RAPT_EAGAIN && ret != RAPT_ETIMEDOUT)
				return ret;
		}
		if (s->mode == PERF_MODE_FD) {
			ret = fd_wait_all(s, ev, timeout_us);
			if (ret != RAPT_EAGAIN)
				return ret;
		}
		if (timeout_us >= 0 && perf_now_ns() > end)
			return RAPT_ETIMEDOUT;
	}
}

/* ------------------------------------------------------------------ */
/* Control channel                                                     */
/* ------------------------------------------------------------------ */

const char *perf_reason_name(uint32_t reason)
{
	static const char *const names[] = {
		"UNKNOWN", "BUSY", "NO_LISTENER", "VERSION", "PROTOCOL",
		"RESOURCES",
	};

	return reason < sizeof(names) / sizeof(names[0]) ? names[reason] :
	       "?";
}

static const char *dto_status_name(uint32_t st)
{
	static const char *const names[] = {
		"SUCCESS", "FLUSHED", "LOCAL_LENGTH", "LOCAL_PROTECTION",
		"REMOTE_ACCESS", "REMOTE_OPERATION", "TRANSPORT", "GENERAL",
	};

	return st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

/* A DTO completion must have succeeded. */
int perf_dto_ok(const struct rapt_event *ev, const char *what)
{
	if (ev->type != RAPT_EV_DTO) {
		fprintf(stderr, "rapt_perf: %s: unexpected %s event\n", what,
			rapt_event_name(ev->type));
		return RAPT_EPROTO;
	}
	if (ev->u.dto.status == RAPT_DTO_SUCCESS)
		return 0;
	fprintf(stderr, "rapt_perf: %s: completion status %s (op %u, "
		"provider status %d)\n", what,
		dto_status_name(ev->u.dto.status), ev->u.dto.op,
		ev->u.dto.prov_status);
	return RAPT_EIO;
}

static int ctl_post_recv(struct perf_side *s, uint32_t slot)
{
	struct rapt_sge sge = {
		(uint64_t)(uintptr_t)(s->ctl_buf + slot * PERF_CTL_LEN),
		PERF_CTL_LEN, s->ctl_info.lkey };
	int ret = rapt_ep_post_recv(s->ctl_ep, &sge, 1, slot);

	return ret ? perf_fail(ret, "rapt_ep_post_recv (control)") : 0;
}

/* Post every control receive: call before connect or accept. */
int perf_ctl_arm(struct perf_side *s)
{
	uint32_t i;
	int ret = 0;

	for (i = 0; !ret && i < PERF_CTL_RECVS; i++)
		ret = ctl_post_recv(s, i);
	return ret;
}

static int ctl_received(struct perf_side *s, const struct rapt_event *ev)
{
	uint32_t slot = (uint32_t)ev->u.dto.cookie, tail;
	struct perf_ctl m;
	int ret;

	ret = perf_dto_ok(ev, "control receive");
	if (ret)
		return ret;
	memcpy(&m, s->ctl_buf + slot * PERF_CTL_LEN, sizeof(m));
	if (ev->u.dto.length != PERF_CTL_LEN || m.magic != PERF_MAGIC) {
		fprintf(stderr, "rapt_perf: garbled control message\n");
		return RAPT_EPROTO;
	}
	if (s->inbox_count == PERF_CTL_RECVS * 2)
		return RAPT_EOVERFLOW;
	tail = (s->inbox_head + s->inbox_count++) % (PERF_CTL_RECVS * 2);
	s->inbox[tail] = m;
	return ctl_post_recv(s, slot);
}

static bool is_session_ep(const struct perf_side *s, const struct rapt_ep *ep)
{
	return ep && (ep == s->ctl_ep || ep == s->data_ep);
}

/*
 * Handle @ev if it belongs to the control channel: a control message
 * goes to the inbox (and its receive is posted again), a control send
 * completion frees its slot.  A session connection that ends is an error.
 * Return: true if @ev was consumed; *@err is then 0 or the failure.
 */
bool perf_ctl_event(struct perf_side *s, const struct rapt_event *ev,
		    int *err)
{
	*err = 0;
	/* Flushed work of a session EP: its connection is ending, and the
	 * DISCONNECTED that follows says so. */
	if (ev->type == RAPT_EV_DTO && is_session_ep(s, ev->u.dto.ep) &&
	    ev->u.dto.status == RAPT_DTO_FLUSHED) {
		if (ev->u.dto.ep == s->ctl_ep && ev->u.dto.op != RAPT_OP_RECV)
			s->ctl_send_busy--;
		return true;
	}
	if (ev->type == RAPT_EV_DTO && ev->u.dto.ep == s->ctl_ep) {
		if (ev->u.dto.op == RAPT_OP_RECV) {
			*err = ctl_received(s, ev);
			return true;
		}
		*err = perf_dto_ok(ev, "control send");
		s->ctl_send_busy--;
		return true;
	}
	if ((ev->type == RAPT_EV_DISCONNECTED || ev->type == RAPT_EV_BROKEN) &&
	    is_session_ep(s, ev->u.conn.ep)) {
		fprintf(stderr, "rapt_perf: the peer's connection ended (%s)\n",
			rapt_event_name(ev->type));
		*err = RAPT_ENOTCONN;
		return true;
	}
	if (ev->type == RAPT_EV_ASYNC_EVD_OVERFLOW) {
		fprintf(stderr, "rapt_perf: an EVD overflowed\n");
		*err = RAPT_EOVERFLOW;
		return true;
	}
	return false;
}

int64_t perf_stall_us(void)
{
	/* Server and client may be threads of one process: the value is
	 * the same whoever reads the environment first. */
	static _Atomic int64_t stall;
	int64_t us = atomic_load_explicit(&stall, memory_order_relaxed);
	const char *v;

	if (!us) {
		v = getenv("RAPT_PERF_STALL_MS");
		us = v && atoll(v) > 0 ? atoll(v) * 1000 : PERF_STALL_US;
		atomic_store_explicit(&stall, us, memory_order_relaxed);
	}
	return us;
}

static void stall_report(void)
{
	fprintf(stderr, "rapt_perf: no completion for %lld ms\n",
		(long long)(perf_stall_us() / 1000));
}

/*
 * The next event of the DTO EVD, whatever it is: control traffic is
 * handled first and reported through *@ctl.
 */
int perf_next_event(struct perf_side *s, struct rapt_event *ev, bool *ctl)
{
	int ret, err;

	ret = perf_wait(s, s->dto_evd, ev, perf_stall_us());
	if (ret == RAPT_ETIMEDOUT)
		stall_report();
	if (ret)
		return ret;
	*ctl = perf_ctl_event(s, ev, &err);
	return *ctl ? err : 0;
}

/* The next event that is not for the control channel. */
int perf_next_data(struct perf_side *s, struct rapt_event *ev)
{
	return perf_next_data_wait(s, ev, perf_stall_us());
}

/* The same, waiting up to @timeout_us (PERF_PHASE_WAIT: no bound). */
int perf_next_data_wait(struct perf_side *s, struct rapt_event *ev,
			int64_t timeout_us)
{
	int ret, err;

	for (;;) {
		ret = perf_wait(s, s->dto_evd, ev, timeout_us);
		if (ret == RAPT_ETIMEDOUT)
			stall_report();
		if (ret)
			return ret;
		if (!perf_ctl_event(s, ev, &err))
			return 0;
		if (err)
			return err;
	}
}

/*
 * The rest of perf_next_dto(): @ret and *@ev are what its polls got (an
 * event that is not a successful completion of the data EP, an error, or
 * RAPT_EAGAIN after PERF_SPIN_CHECK polls).
 */
int perf_next_data_from(struct perf_side *s, struct rapt_event *ev, int ret)
{
	int err;

	if (!ret && perf_ctl_event(s, ev, &err)) {
		if (err)
			return err;
		ret = RAPT_EAGAIN;
	}
	return ret == RAPT_EAGAIN ? perf_next_data(s, ev) : ret;
}

static int ctl_make_room(struct perf_side *s)
{
	struct rapt_event ev;
	int ret, err;

	while (s->ctl_send_busy >= PERF_CTL_SENDS) {
		ret = perf_wait(s, s->dto_evd, &ev, perf_stall_us());
		if (ret)
			return perf_fail(ret, "waiting for a control send");
		if (!perf_ctl_event(s, &ev, &err)) {
			fprintf(stderr, "rapt_perf: unexpected %s event while "
				"waiting for a control send\n",
				rapt_event_name(ev.type));
			return RAPT_EPROTO;
		}
		if (err)
			return err;
	}
	return 0;
}

int perf_ctl_send(struct perf_side *s, uint32_t op, const uint64_t *args,
		  unsigned int nargs)
{
	uint32_t slot = s->ctl_send_next++ % PERF_CTL_SENDS;
	uint8_t *p = s->ctl_buf + (PERF_CTL_RECVS + slot) * PERF_CTL_LEN;
	struct perf_ctl m = { .magic = PERF_MAGIC, .op = op };
	struct rapt_sge sge = { (uint64_t)(uintptr_t)p, PERF_CTL_LEN,
				s->ctl_info.lkey };
	int ret;

	ret = ctl_make_room(s);
	if (ret)
		return ret;
	if (nargs > 7)
		nargs = 7;
	if (nargs)
		memcpy(m.arg, args, nargs * sizeof(*args));
	memcpy(p, &m, sizeof(m));
	ret = rapt_ep_post_send(s->ctl_ep, &sge, 1, CTL_SEND_COOKIE + slot, 0);
	if (ret)
		return perf_fail(ret, "rapt_ep_post_send (control)");
	s->ctl_send_busy++;
	return 0;
}

/*
 * Take the oldest control message if there is one: 1 and *@out, 0 if the
 * inbox is empty, or RAPT_EPROTO if it is not @op.
 */
int perf_ctl_poll(struct perf_side *s, uint32_t op, struct perf_ctl *out)
{
	struct perf_ctl *m;

	if (!s->inbox_count)
		return 0;
	m = &s->inbox[s->inbox_head];
	if (op && m->op != op) {
		fprintf(stderr, "rapt_perf: control message %u, expected %u\n",
			m->op, op);
		return RAPT_EPROTO;
	}
	*out = *m;
	s->inbox_head = (s->inbox_head + 1) % (PERF_CTL_RECVS * 2);
	s->inbox_count--;
	return 1;
}

/* Wait for control message @op (0: any); any other event is an error. */
int perf_ctl_recv(struct perf_side *s, uint32_t op, struct perf_ctl *out)
{
	return perf_ctl_recv_wait(s, op, out, perf_stall_us());
}

/* The same, waiting up to @timeout_us (PERF_PHASE_WAIT: no bound). */
int perf_ctl_recv_wait(struct perf_side *s, uint32_t op, struct perf_ctl *out,
		       int64_t timeout_us)
{
	struct rapt_event ev;
	int ret, err;

	for (;;) {
		ret = perf_ctl_poll(s, op, out);
		if (ret)
			return ret < 0 ? ret : 0;
		ret = perf_wait_any(s, &ev, timeout_us);
		if (ret)
			return perf_fail(ret, "waiting for the peer");
		if (!perf_ctl_event(s, &ev, &err)) {
			fprintf(stderr, "rapt_perf: unexpected %s event while "
				"waiting for a control message\n",
				rapt_event_name(ev.type));
			return RAPT_EPROTO;
		}
		if (err)
			return err;
	}
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */
/* ------------------------------------------------------------------ */

int perf_ep_create(struct perf_side *s, const struct rapt_ep_attr *attr,
		   struct rapt_ep **ep)
{
	int ret = rapt_ep_create(s->pz, s->dto_evd, s->dto_evd, s->conn_evd,
				 attr, ep);

	return ret ? perf_fail(ret, "rapt_ep_create") : 0;
}

/*
 * Wait for connection event @type on @ep, handling control traffic.  Any
 * other connection event of @ep is returned as RAPT_ECONNREFUSED with
 * *@ev holding it.
 */
int perf_conn_wait(struct perf_side *s, struct rapt_ep *ep, uint32_t type,
		   struct rapt_event *ev)
{
	int ret, err;

	for (;;) {
		ret = perf_wait_any(s, ev, PERF_CONNECT_US);
		if (ret)
			return perf_fail(ret, "waiting for a connection event");
		if (ev->type >> 8 == RAPT_EV_ESTABLISHED >> 8 &&
		    ev->u.conn.ep == ep)
			return ev->type == type ? 0 : RAPT_ECONNREFUSED;
		if (perf_ctl_event(s, ev, &err)) {
			if (err)
				return err;
			continue;
		}
		/* A flushed receive of an EP being torn down is expected. */
		if (ev->type == RAPT_EV_DTO &&
		    ev->u.dto.status == RAPT_DTO_FLUSHED)
			continue;
		fprintf(stderr, "rapt_perf: unexpected %s event while "
			"waiting for %s\n", rapt_event_name(ev->type),
			rapt_event_name(type));
		return RAPT_EPROTO;
	}
}

static int resolve(const char *host, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int ret;

	ret = getaddrinfo(host, NULL, &hints, &res);
	if (ret) {
		fprintf(stderr, "rapt_perf: %s: %s\n", host, gai_strerror(ret));
		return RAPT_EINVAL;
	}
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

/* The server's address: -c HOST, else the IA's own address. */
int perf_remote_addr(struct perf_side *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	if (s->o->host)
		return resolve(s->o->host, ss);
	if (s->attr.local_addr.ss_family == AF_INET ||
	    s->attr.local_addr.ss_family == AF_INET6) {
		*ss = s->attr.local_addr;
		return 0;
	}
	memset(ss, 0, sizeof(*ss));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return 0;
}

/* Graceful disconnect, wait (boundedly) for DISCONNECTED, free. */
void perf_disconnect(struct perf_side *s, struct rapt_ep **ep)
{
	enum rapt_ep_state st;
	struct rapt_event ev;

	if (!*ep)
		return;
	if (!rapt_ep_get_state(*ep, &st) && st == RAPT_EP_CONNECTED &&
	    !rapt_ep_disconnect(*ep, RAPT_CLOSE_GRACEFUL, NULL, 0))
		perf_conn_wait(s, *ep, RAPT_EV_DISCONNECTED, &ev);
	rapt_ep_free(*ep);
	*ep = NULL;
}

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

long perf_rss_kb(void)
{
	char buf[256];
	long kb = -1;
	FILE *f;

	f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int perf_count_fds(void)
{
	struct dirent *d;
	DIR *dir;
	int n = 0;

	dir = opendir("/proc/self/fd");
	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.')
			n++;
	closedir(dir);
	return n - 1;
}

/* A progress line on stderr, at most four times a second. */
void perf_progress(const struct perf_opts *o, const char *what,
		   uint64_t done, uint64_t total)
{
	static uint64_t last;
	uint64_t now;

	if (!o->progress)
		return;
	now = perf_now_ns();
	if (now - last < 250000000ull && done != total)
		return;
	last = now;
	fprintf(stderr, "\r%s: %llu/%llu (%.0f%%)\033[K", what,
		(unsigned long long)done, (unsigned long long)total,
		total ? 100.0 * done / total : 100.0);
}

void perf_progress_end(const struct perf_opts *o)
{
	if (o->progress)
		fprintf(stderr, "\r\033[K");
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts @ns; percentiles by nearest rank; the histogram too. */
void perf_stats(uint64_t *ns, uint64_t n, struct perf_row *row)
{
	long double sum = 0;
	uint64_t i;

	if (!n)
		return;
	qsort(ns, n, sizeof(*ns), cmp_u64);
	for (i = 0; i < n; i++)
		sum += ns[i];
	row->min = (double)ns[0];
	row->med = n % 2 ? (double)ns[n / 2] :
		   ((double)ns[n / 2 - 1] + (double)ns[n / 2]) / 2;
	row->p99 = (double)ns[(n * 99 + 99) / 100 - 1];
	row->p999 = (double)ns[(n * 999 + 999) / 1000 - 1];
	row->max = (double)ns[n - 1];
	row->mean = (double)(sum / n);
	perf_hist_fill(ns, n, row);
}

uint8_t perf_pattern(uint64_t seq, uint64_t k)
{
	return (uint8_t)(seq * 131 + k * 7 + 1);
}

void perf_fill(uint8_t *p, uint64_t len, uint64_t seq)
{
	uint64_t k;

	for (k = 0; k < len; k++)
		p[k] = perf_pattern(seq, k);
}

int perf_check(const uint8_t *p, uint64_t len, uint64_t seq)
{
	uint64_t k;

	for (k = 0; k < len; k++)
		if (p[k] != perf_pattern(seq, k))
			return -1;
	return 0;
}

bool perf_is_rdma(enum perf_test t)
{
	return t == PERF_LAT_WRITE || t == PERF_LAT_READ ||
	       t == PERF_BW_WRITE || t == PERF_BW_READ || t == PERF_LAT_MW;
}

bool perf_is_latency(enum perf_test t)
{
	return t == PERF_LAT_SEND || t == PERF_LAT_WRITE ||
	       t == PERF_LAT_READ || t == PERF_LAT_MW;
}

bool perf_is_conn(enum perf_test t)
{
	return t == PERF_CONNRATE || t == PERF_CONNS;
}

const char *perf_test_name(enum perf_test t)
{
	switch (t) {
	case PERF_LAT_SEND: return "lat_send";
	case PERF_LAT_WRITE: return "lat_write";
	case PERF_LAT_READ: return "lat_read";
	case PERF_BW_SEND: return "bw_send";
	case PERF_BW_WRITE: return "bw_write";
	case PERF_BW_READ: return "bw_read";
	case PERF_CONNRATE: return "connrate";
	case PERF_CONNS: return "conns";
	case PERF_LAT_MW: return "lat_mw";
	}
	return "?";
}

const char *perf_mode_name(enum perf_mode m)
{
	switch (m) {
	case PERF_MODE_POLL: return "poll";
	case PERF_MODE_BLOCK: return "block";
	case PERF_MODE_FD: return "fd";
	}
	return "?";
}

/* -n's default: per size for the data tests, connections otherwise. */
uint64_t perf_default_iters(const struct perf_opts *o)
{
	if (o->iters)
		return o->iters;
	if (perf_is_conn(o->test))
		return 1000;
	if (perf_is_latency(o->test))
		return o->sweep ? 1000 : 10000;
	return o->sweep ? 1000 : 16384;
}
