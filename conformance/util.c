/* SPDX-License-Identifier: MIT */
/*
 * rapt-conformance helpers: checks, the roles' messages, tracked objects,
 * event waits and the usual connection set-up.  Only <rapt/rapt.h>.
 */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"

/* Helpers here keep the test's location: their TRY does not move it. */
#undef TRY
#define TRY(call) do { if ((call) != 0) goto out; } while (0)

/* ------------------------------------------------------------------ */
/* Checks                                                              */
/* ------------------------------------------------------------------ */

static const char *base_name(const char *file)
{
	const char *s = strrchr(file, '/');

	return s ? s + 1 : file;
}

void conf_at(struct conf_ctx *c, const char *file, int line)
{
	c->at_file = file;
	c->at_line = line;
}

static void record(struct conf_ctx *c, const char *file, int line,
		   const char *msg)
{
	const char *who = "";
	char at[96] = "";
	unsigned int na;
	char **f;
	char *s;

	if (c->test && c->test->passive)
		who = c->role == CONF_PASSIVE ? "[passive] " : "[active] ";
	if (c->at_file && strcmp(base_name(file), base_name(c->at_file)))
		snprintf(at, sizeof(at), " (from %s:%d)",
			 base_name(c->at_file), c->at_line);
	if (asprintf(&s, "%s:%d: %s%s%s", base_name(file), line, who, msg,
		     at) < 0)
		s = NULL;
	pthread_mutex_lock(&c->lock);
	c->nfail++;
	if (s && c->nmsgs == c->nfails_alloc) {
		na = c->nfails_alloc ? 2 * c->nfails_alloc : 16;
		f = realloc(c->fails, na * sizeof(*f));
		if (f) {
			c->fails = f;
			c->nfails_alloc = na;
		}
	}
	if (s && c->nmsgs < c->nfails_alloc) {
		c->fails[c->nmsgs++] = s;
		s = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	free(s);
	if (conf_opt.verbose)
		fprintf(stderr, "    FAILED %s:%d: %s%s%s\n", base_name(file),
			line, who, msg, at);
}

static void count_check(struct conf_ctx *c)
{
	pthread_mutex_lock(&c->lock);
	c->nchecks++;
	pthread_mutex_unlock(&c->lock);
}

bool conf_check(struct conf_ctx *c, bool ok, const char *file, int line,
		const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	count_check(c);
	if (ok)
		return true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	record(c, file, line, msg);
	return false;
}

void conf_fail(struct conf_ctx *c, const char *file, int line,
	       const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	count_check(c);
	record(c, file, line, msg);
}

bool conf_check_rc(struct conf_ctx *c, int rc, int want, const char *file,
		   int line, const char *call)
{
	char msg[1024];
	const char *detail = rc ? rapt_last_error() : "";

	count_check(c);
	if (rc == want)
		return true;
	snprintf(msg, sizeof(msg), "%s returned %s (%d), expected %s%s%s%s",
		 call, rapt_err_name(rc), rc, rapt_err_name(want),
		 detail[0] ? " [" : "", detail, detail[0] ? "]" : "");
	record(c, file, line, msg);
	return false;
}

bool conf_check_eq(struct conf_ctx *c, long long a, long long b,
		   const char *file, int line, const char *sa, const char *sb)
{
	char msg[768];

	count_check(c);
	if (a == b)
		return true;
	snprintf(msg, sizeof(msg), "%s == %s failed: %lld != %lld", sa, sb, a,
		 b);
	record(c, file, line, msg);
	return false;
}

bool conf_check_equ(struct conf_ctx *c, unsigned long long a,
		    unsigned long long b, const char *file, int line,
		    const char *sa, const char *sb)
{
	char msg[768];

	count_check(c);
	if (a == b)
		return true;
	snprintf(msg, sizeof(msg), "%s == %s failed: %llu (%#llx) != %llu (%#llx)",
		 sa, sb, a, a, b, b);
	record(c, file, line, msg);
	return false;
}

void conf_note(struct conf_ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (!conf_opt.verbose)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "    note%s: ",
		c->role == CONF_PASSIVE ? " [passive]" : "");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void conf_skip(struct conf_ctx *c, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&c->lock);
	if (!c->skipped) {
		c->skipped = true;
		va_start(ap, fmt);
		vsnprintf(c->skip_reason, sizeof(c->skip_reason), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&c->lock);
}

bool conf_failed(struct conf_ctx *c)
{
	bool f;

	pthread_mutex_lock(&c->lock);
	f = c->nfail != 0;
	pthread_mutex_unlock(&c->lock);
	return f;
}

/* ------------------------------------------------------------------ */
/* Messages between the roles                                          */
/* ------------------------------------------------------------------ */

int conf_tmo(struct conf_ctx *c, int ms)
{
	unsigned int s = c->params.scale ? c->params.scale : 1;

	return ms * (int)s;
}

/* The other role returned: note why; a normal return while we still
 * expected something is a failure of the exchange. */
static void peer_ended(struct conf_ctx *c, const struct conf_msg *m,
		       const char *waiting_for, const char *file, int line)
{
	c->peer_ended = true;
	c->peer_flags = m->flags;
	snprintf(c->peer_reason, sizeof(c->peer_reason), "%s",
		 (const char *)m->data);
	if (m->flags & CONF_END_SKIPPED)
		conf_skip(c, "%s", c->peer_reason);
	else if (!(m->flags & CONF_END_FAILED))
		conf_fail(c, file, line,
			  "the other role returned while this one waited for %s",
			  waiting_for);
}

/* Take messages of this run until the peer's END/DONE (after
 * conf_ctl_peer_ended() said it is queued). */
static void consume_peer_end(struct conf_ctx *c, const char *waiting_for,
			     const char *file, int line)
{
	struct conf_msg *m;

	while ((m = conf_ctl_recv(c->ctl, 0))) {
		if (m->seq == c->seq && (m->type == CONF_MSG_END ||
					 m->type == CONF_MSG_DONE)) {
			peer_ended(c, m, waiting_for, file, line);
			free(m);
			return;
		}
		free(m);
	}
	c->peer_ended = true;
	c->peer_flags = CONF_END_FAILED;
	conf_fail(c, file, line,
		  "the control channel broke while waiting for %s",
		  waiting_for);
}

int conf_send(struct conf_ctx *c, const char *tag, const void *data,
	      size_t len)
{
	if (!c->ctl) {
		FAIL("test bug: conf_send('%s') in a one-process test", tag);
		return -1;
	}
	if (conf_ctl_send(c->ctl, CONF_MSG_DATA, c->seq, 0, tag, data, len)) {
		FAIL("control channel: cannot send '%s' to the other role",
		     tag);
		return -1;
	}
	return 0;
}

int conf_recv(struct conf_ctx *c, const char *tag, void *buf, size_t cap,
	      size_t *len)
{
	int tmo = conf_tmo(c, 60000);
	int64_t end = conf_now_us() + (int64_t)tmo * 1000;
	struct conf_msg *m;
	int left;

	if (!c->ctl) {
		FAIL("test bug: conf_recv('%s') in a one-process test", tag);
		return -1;
	}
	if (c->peer_ended)
		return -1;
	for (;;) {
		left = (int)((end - conf_now_us()) / 1000);
		m = conf_ctl_recv(c->ctl, left > 0 ? left : 0);
		if (!m) {
			FAIL("control channel: no '%s' from the other role within %d ms%s",
			     tag, tmo, c->ctl->broken ? " (channel broken)" : "");
			return -1;
		}
		if (m->seq != c->seq) {
			free(m);	/* left over from an earlier run */
			continue;
		}
		if (m->type == CONF_MSG_END || m->type == CONF_MSG_DONE) {
			peer_ended(c, m, tag, __FILE__, __LINE__);
			free(m);
			return -1;
		}
		if (m->type != CONF_MSG_DATA || strcmp(m->tag, tag) ||
		    m->len > cap) {
			FAIL("control channel out of step: waiting for '%s' (%zu bytes max), got type %u '%s' (%u bytes)",
			     tag, cap, m->type, m->tag, m->len);
			free(m);
			return -1;
		}
		if (m->len)
			memcpy(buf, m->data, m->len);
		if (len)
			*len = m->len;
		free(m);
		return 0;
	}
}

int conf_send_u64(struct conf_ctx *c, const char *tag, uint64_t v)
{
	uint8_t b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (56 - 8 * i));
	return conf_send(c, tag, b, sizeof(b));
}

int conf_recv_u64(struct conf_ctx *c, const char *tag, uint64_t *v)
{
	uint8_t b[8];
	size_t len;
	int i;

	if (conf_recv(c, tag, b, sizeof(b), &len))
		return -1;
	if (len != sizeof(b)) {
		FAIL("control channel: '%s' has %zu bytes, not 8", tag, len);
		return -1;
	}
	*v = 0;
	for (i = 0; i < 8; i++)
		*v = (*v << 8) | b[i];
	return 0;
}

/* Addresses travel as: family (4 or 6), port, 16 address bytes. */
int conf_send_addr(struct conf_ctx *c, const char *tag,
		   const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
	uint8_t b[20] = { 0 };

	if (ss->ss_family == AF_INET) {
		b[0] = 4;
		memcpy(b + 2, &s4->sin_port, 2);
		memcpy(b + 4, &s4->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		b[0] = 6;
		memcpy(b + 2, &s6->sin6_port, 2);
		memcpy(b + 4, &s6->sin6_addr, 16);
	}
	return conf_send(c, tag, b, sizeof(b));
}

int conf_recv_addr(struct conf_ctx *c, const char *tag,
		   struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	uint8_t b[20];
	size_t len;

	if (conf_recv(c, tag, b, sizeof(b), &len))
		return -1;
	memset(ss, 0, sizeof(*ss));
	if (len != sizeof(b))
		return -1;
	if (b[0] == 4) {
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_port, b + 2, 2);
		memcpy(&s4->sin_addr, b + 4, 4);
	} else if (b[0] == 6) {
		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_port, b + 2, 2);
		memcpy(&s6->sin6_addr, b + 4, 16);
	}
	return 0;
}

int conf_barrier(struct conf_ctx *c, const char *tag)
{
	if (conf_send(c, tag, NULL, 0))
		return -1;
	return conf_recv(c, tag, NULL, 0, NULL);
}

/* ------------------------------------------------------------------ */
/* Tracked objects                                                     */
/* ------------------------------------------------------------------ */

void conf_track(struct conf_ctx *c, enum conf_obj_kind kind, void *h)
{
	pthread_mutex_lock(&c->lock);
	if (c->nobjs == c->nobjs_alloc) {
		unsigned int na = c->nobjs_alloc ? 2 * c->nobjs_alloc : 64;
		struct conf_obj *o = realloc(c->objs, na * sizeof(*o));

		if (!o) {
			pthread_mutex_unlock(&c->lock);
			return;
		}
		c->objs = o;
		c->nobjs_alloc = na;
	}
	c->objs[c->nobjs].kind = kind;
	c->objs[c->nobjs].h = h;
	c->nobjs++;
	pthread_mutex_unlock(&c->lock);
}

void conf_untrack(struct conf_ctx *c, void *h)
{
	unsigned int i;

	pthread_mutex_lock(&c->lock);
	for (i = c->nobjs; i-- > 0;) {
		if (c->objs[i].h == h) {
			c->objs[i] = c->objs[--c->nobjs];
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
}

static int free_obj(const struct conf_obj *o)
{
	switch (o->kind) {
	case CONF_OBJ_CR:
		return rapt_cr_reject(o->h, NULL, 0);
	case CONF_OBJ_RSP:
		return rapt_rsp_free(o->h);
	case CONF_OBJ_EP:
		return rapt_ep_free(o->h);
	case CONF_OBJ_SRQ:
		return rapt_srq_free(o->h);
	case CONF_OBJ_PSP:
		return rapt_psp_free(o->h);
	case CONF_OBJ_RMR:
		return rapt_rmr_free(o->h);
	case CONF_OBJ_LMR:
		return rapt_lmr_free(o->h);
	case CONF_OBJ_EVD:
		return rapt_evd_free(o->h);
	case CONF_OBJ_PZ:
		return rapt_pz_free(o->h);
	case CONF_OBJ_IA:
		return rapt_ia_close(o->h);
	case CONF_OBJ_MEM:
		free(o->h);
		return 0;
	case CONF_OBJ_NKINDS:
		break;
	}
	return 0;
}

int conf_free(struct conf_ctx *c, void *h)
{
	struct conf_obj o = { .kind = CONF_OBJ_NKINDS };
	unsigned int i;
	int rc;

	pthread_mutex_lock(&c->lock);
	for (i = c->nobjs; i-- > 0;)
		if (c->objs[i].h == h) {
			o = c->objs[i];
			break;
		}
	pthread_mutex_unlock(&c->lock);
	if (o.kind == CONF_OBJ_NKINDS) {
		FAIL("test bug: conf_free of an untracked object");
		return -1;
	}
	rc = free_obj(&o);
	if (!rc)
		conf_untrack(c, h);
	else
		FAIL("freeing a %s failed: %s [%s]",
		     o.kind == CONF_OBJ_EP ? "EP" : o.kind == CONF_OBJ_PSP ?
		     "PSP" : o.kind == CONF_OBJ_EVD ? "EVD" : "object",
		     rapt_err_name(rc), rapt_last_error());
	return rc;
}

/* Reject CRs still queued on our EVDs so their PSPs can be freed. */
static void drain_crs(struct conf_ctx *c)
{
	struct rapt_event ev;
	unsigned int i;

	for (i = 0; i < c->nobjs; i++) {
		if (c->objs[i].kind != CONF_OBJ_EVD)
			continue;
		while (rapt_evd_dequeue(c->objs[i].h, &ev) == 0)
			if (ev.type == RAPT_EV_CR_ARRIVAL)
				(void)rapt_cr_reject(ev.u.cr.cr, NULL, 0);
	}
}

/**
 * conf_cleanup - free what the role left, children before parents
 * @c: the role
 *
 * Errors are ignored: a handle the test freed itself is stale by now and
 * the call just says so.
 */
void conf_cleanup(struct conf_ctx *c)
{
	unsigned int k, i;

	for (k = 0; k < CONF_OBJ_NKINDS; k++) {
		if (k == CONF_OBJ_RSP || k == CONF_OBJ_PSP)
			drain_crs(c);
		for (i = c->nobjs; i-- > 0;)
			if (c->objs[i].kind == k)
				(void)free_obj(&c->objs[i]);
	}
	free(c->objs);
	c->objs = NULL;
	c->nobjs = c->nobjs_alloc = 0;
}

int conf_evd_create(struct conf_ctx *c, unsigned int qlen,
		    unsigned int streams, struct rapt_evd **evd)
{
	int rc = rapt_evd_create(c->ia, qlen, streams, evd);

	if (!rc)
		conf_track(c, CONF_OBJ_EVD, *evd);
	return rc;
}

int conf_lmr_create(struct conf_ctx *c, void *addr, size_t len,
		    unsigned int access, struct rapt_lmr **lmr,
		    struct rapt_lmr_info *info)
{
	int rc = rapt_lmr_create(c->pz, addr, len, access, lmr, info);

	if (!rc)
		conf_track(c, CONF_OBJ_LMR, *lmr);
	return rc;
}

int conf_ep_create(struct conf_ctx *c, struct rapt_evd *recv,
		   struct rapt_evd *req, struct rapt_evd *conn,
		   const struct rapt_ep_attr *attr, struct rapt_ep **ep)
{
	int rc = rapt_ep_create(c->pz, recv, req, conn, attr, ep);

	if (!rc)
		conf_track(c, CONF_OBJ_EP, *ep);
	return rc;
}

void *conf_alloc(struct conf_ctx *c, size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len ? len : 1)) {
		FAIL("out of memory (%zu bytes)", len);
		return NULL;
	}
	memset(p, 0, len);
	conf_track(c, CONF_OBJ_MEM, p);
	return p;
}

int conf_set_create(struct conf_ctx *c, struct conf_ep_set *s,
		    const struct conf_set_opts *o)
{
	static const struct conf_set_opts dflt;
	unsigned int qlen, access;

	if (!o)
		o = &dflt;
	memset(s, 0, sizeof(*s));
	qlen = o->qlen ? o->qlen : 512;
	access = o->access ? o->access : RAPT_MEM_LOCAL_WRITE |
		 RAPT_MEM_REMOTE_READ | RAPT_MEM_REMOTE_WRITE;
	s->len = o->buf_len ? o->buf_len : 65536;
	if (o->shared_evd) {
		s->recv_evd = s->req_evd = s->conn_evd = o->shared_evd;
	} else {
		TRY(!EXPECT_OK(conf_evd_create(c, qlen, RAPT_EVD_DTO,
					       &s->recv_evd)));
		TRY(!EXPECT_OK(conf_evd_create(c, qlen, RAPT_EVD_DTO,
					       &s->req_evd)));
		TRY(!EXPECT_OK(conf_evd_create(c, 16, RAPT_EVD_CONNECTION,
					       &s->conn_evd)));
	}
	s->buf = conf_alloc(c, s->len);
	TRY(!s->buf);
	TRY(!EXPECT_OK(conf_lmr_create(c, s->buf, s->len, access, &s->lmr,
				       &s->mi)));
	TRY(!EXPECT_OK(conf_ep_create(c, s->recv_evd, s->req_evd, s->conn_evd,
				      o->attr, &s->ep)));
	return 0;
out:
	return -1;
}

int conf_set_ep(struct conf_ctx *c, struct conf_ep_set *s,
		const struct rapt_ep_attr *attr, struct rapt_ep **ep)
{
	if (!EXPECT_OK(conf_ep_create(c, s->recv_evd, s->req_evd, s->conn_evd,
				      attr, ep)))
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

static const char *const dto_status_names[] = {
	"SUCCESS", "FLUSHED", "LOCAL_LENGTH", "LOCAL_PROTECTION",
	"REMOTE_ACCESS", "REMOTE_OPERATION", "TRANSPORT", "GENERAL",
};

const char *conf_dto_status_name(uint32_t status)
{
	if (status < CONF_ARRAY_SIZE(dto_status_names))
		return dto_status_names[status];
	return "?";
}

const char *conf_reason_name(uint32_t reason)
{
	static const char *const n[] = {
		"UNKNOWN", "BUSY", "NO_LISTENER", "VERSION", "PROTOCOL",
		"RESOURCES",
	};

	return reason < CONF_ARRAY_SIZE(n) ? n[reason] : "?";
}

/* Describe an event for a failure message. */
static void ev_describe(const struct rapt_event *ev, char *buf, size_t len)
{
	const struct rapt_event_dto *d = &ev->u.dto;

	if (ev->type == RAPT_EV_DTO)
		snprintf(buf, len, "DTO op %u status %s (%u) cookie %#llx length %llu",
			 d->op, conf_dto_status_name(d->status), d->status,
			 (unsigned long long)d->cookie,
			 (unsigned long long)d->length);
	else if (ev->type == RAPT_EV_NON_PEER_REJECTED)
		snprintf(buf, len, "NON_PEER_REJECTED reason %s (prov_status %d)",
			 conf_reason_name(ev->u.conn.reason),
			 ev->u.conn.prov_status);
	else if ((ev->type & 0xff00) == 0x0200)	/* connection events */
		snprintf(buf, len, "%s (%#x, prov_status %d)",
			 rapt_event_name(ev->type), ev->type,
			 ev->u.conn.prov_status);
	else
		snprintf(buf, len, "%s (%#x)", rapt_event_name(ev->type),
			 ev->type);
}

int conf_wait(struct conf_ctx *c, struct rapt_evd *evd, int timeout_ms,
	      struct rapt_event *ev)
{
	int64_t end = conf_now_us() + (int64_t)timeout_ms * 1000;
	int64_t left, slice;
	int rc, pf;

	for (;;) {
		left = end - conf_now_us();
		if (left < 0)
			left = 0;
		/* Look at the control channel now and then, so a wait does
		 * not outlast a peer that gave up. */
		slice = c->ctl && !c->peer_ended && left > 50000 ? 50000 : left;
		rc = rapt_evd_wait(evd, slice, 1, ev, NULL);
		if (rc != RAPT_ETIMEDOUT)
			return rc;
		if (conf_now_us() >= end)
			return RAPT_ETIMEDOUT;
		if (c->ctl && !c->peer_ended) {
			pf = conf_ctl_peer_ended(c->ctl, c->seq);
			if (pf >= 0 && (pf & (CONF_END_FAILED |
					      CONF_END_SKIPPED)))
				return 1;
		}
	}
}

int conf_expect_event(struct conf_ctx *c, struct rapt_evd *evd, uint32_t type,
		      int timeout_ms, struct rapt_event *ev, const char *file,
		      int line)
{
	struct rapt_event e;
	char what[64], got[160];
	int rc;

	snprintf(what, sizeof(what), "%s", rapt_event_name(type));
	rc = conf_wait(c, evd, timeout_ms, &e);
	if (rc == 1) {
		consume_peer_end(c, what, file, line);
		return -1;
	}
	if (rc == RAPT_ETIMEDOUT) {
		conf_fail(c, file, line, "no %s event within %d ms", what,
			  timeout_ms);
		return -1;
	}
	if (rc) {
		conf_fail(c, file, line, "rapt_evd_wait returned %s waiting for %s [%s]",
			  rapt_err_name(rc), what, rapt_last_error());
		return -1;
	}
	count_check(c);
	if (e.type != type) {
		ev_describe(&e, got, sizeof(got));
		conf_fail(c, file, line, "expected %s, got %s", what, got);
		if (ev)
			*ev = e;
		return -1;
	}
	if (!conf_check(c, e.evd == evd, file, line,
			"event.evd names the EVD it was dequeued from"))
		return -1;
	if (ev)
		*ev = e;
	return 0;
}

int conf_expect_dto(struct conf_ctx *c, struct rapt_evd *evd, uint32_t op,
		    uint32_t status, uint64_t cookie, struct rapt_event *ev,
		    const char *file, int line)
{
	struct rapt_event e;
	char got[160];

	if (conf_expect_event(c, evd, RAPT_EV_DTO, conf_tmo(c, CONF_TMO_MS),
			      &e, file, line))
		return -1;
	if (ev)
		*ev = e;
	if (e.u.dto.op != op || e.u.dto.status != status ||
	    (cookie != ~0ULL && e.u.dto.cookie != cookie)) {
		ev_describe(&e, got, sizeof(got));
		conf_fail(c, file, line,
			  "expected DTO op %u status %s cookie %#llx, got %s",
			  op, conf_dto_status_name(status),
			  (unsigned long long)cookie, got);
		return -1;
	}
	return 0;
}

bool conf_expect_empty(struct conf_ctx *c, struct rapt_evd *evd, int ms,
		       const char *file, int line)
{
	struct rapt_event e;
	char got[160];
	int rc;

	if (ms)
		conf_sleep_ms((unsigned int)ms);
	rc = rapt_evd_dequeue(evd, &e);
	if (rc == RAPT_EAGAIN) {
		count_check(c);
		return true;
	}
	if (rc) {
		conf_fail(c, file, line, "rapt_evd_dequeue returned %s",
			  rapt_err_name(rc));
		return false;
	}
	ev_describe(&e, got, sizeof(got));
	conf_fail(c, file, line, "expected no event, got %s", got);
	return false;
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */
/* ------------------------------------------------------------------ */

/* Find a free service id when the provider does not choose one. */
static int listen_fixed(struct conf_ctx *c, struct conf_listener *l,
			const struct rapt_psp_attr *attr)
{
	uint64_t lo = c->attr.service_id_min, hi = c->attr.service_id_max;
	uint64_t span = hi - lo + 1, sid;
	unsigned int i;
	int rc = RAPT_EADDRINUSE;

	if (lo == 0 && span > 1)
		lo = 1, span--;
	sid = lo + (uint64_t)(getpid() * 7919u + (unsigned int)conf_now_us()) %
	      (span ? span : 1);
	for (i = 0; i < 256 && rc == RAPT_EADDRINUSE; i++) {
		rc = rapt_psp_create(c->ia, sid, l->cr_evd, attr, &l->psp);
		if (!rc)
			l->sid = sid;
		sid = sid >= hi ? lo : sid + 1;
	}
	return rc;
}

int conf_listen(struct conf_ctx *c, struct conf_listener *l,
		const struct rapt_psp_attr *attr)
{
	struct rapt_psp_info pi;
	int rc;

	memset(l, 0, sizeof(*l));
	if (!EXPECT_OK(conf_evd_create(c, 256, RAPT_EVD_CR, &l->cr_evd)))
		return -1;
	rc = rapt_psp_create(c->ia, RAPT_SERVICE_ID_ANY, l->cr_evd, attr,
			     &l->psp);
	if (!rc) {
		if (!EXPECT_OK(rapt_psp_query(l->psp, &pi, sizeof(pi)))) {
			(void)rapt_psp_free(l->psp);
			return -1;
		}
		l->sid = pi.service_id;
	} else {
		rc = listen_fixed(c, l, attr);
		if (!EXPECT_OK(rc))
			return -1;
	}
	conf_track(c, CONF_OBJ_PSP, l->psp);
	return 0;
}

int conf_publish(struct conf_ctx *c, const struct conf_listener *l)
{
	if (conf_send_addr(c, "listen-addr", &c->attr.local_addr))
		return -1;
	if (conf_send_u64(c, "listen-caps", c->attr.caps))
		return -1;
	return conf_send_u64(c, "listen-sid", l->sid);
}

int conf_lookup(struct conf_ctx *c, struct sockaddr_storage *addr,
		uint64_t *sid)
{
	if (conf_recv_addr(c, "listen-addr", addr))
		return -1;
	if (conf_recv_u64(c, "listen-caps", &c->peer_caps))
		return -1;
	if (conf_recv_u64(c, "listen-sid", sid))
		return -1;
	if (conf_opt.server_addr) {
		if (conf_addr_parse(conf_opt.server_addr, addr)) {
			FAIL("--server-addr %s is not an IP address",
			     conf_opt.server_addr);
			return -1;
		}
	} else if (conf_addr_is_any(addr) && c->ctl->have_peer) {
		/* The server listens everywhere: dial the host we reached
		 * it through. */
		*addr = c->ctl->peer;
	}
	return 0;
}

int conf_get_cr(struct conf_ctx *c, struct conf_listener *l, int timeout_ms,
		struct rapt_cr **cr, struct rapt_cr_info *info)
{
	struct rapt_event ev;

	if (conf_expect_event(c, l->cr_evd, RAPT_EV_CR_ARRIVAL, timeout_ms,
			      &ev, __FILE__, __LINE__))
		return -1;
	conf_track(c, CONF_OBJ_CR, ev.u.cr.cr);
	if (!EXPECT(ev.u.cr.psp == l->psp) ||
	    !EXPECT_EQU(ev.u.cr.service_id, l->sid))
		return -1;
	if (info && !EXPECT_OK(rapt_cr_query(ev.u.cr.cr, info, sizeof(*info))))
		return -1;
	*cr = ev.u.cr.cr;
	return 0;
}

int conf_accept(struct conf_ctx *c, struct rapt_cr *cr, struct conf_ep_set *s,
		const void *pdata, size_t len)
{
	struct rapt_event ev;

	if (!EXPECT_OK(rapt_cr_accept(cr, s->ep, pdata, len)))
		return -1;
	conf_untrack(c, cr);
	if (EXPECT_EVENT(s->conn_evd, RAPT_EV_ESTABLISHED, &ev))
		return -1;
	if (!EXPECT(ev.u.conn.ep == s->ep))
		return -1;
	return 0;
}

int conf_connect(struct conf_ctx *c, struct conf_ep_set *s,
		 const struct sockaddr_storage *addr, uint64_t sid,
		 const void *pdata, size_t len, struct rapt_event *ev)
{
	struct rapt_event e;

	if (!EXPECT_OK(rapt_ep_connect(s->ep, (const struct sockaddr *)addr,
				       sid, pdata, len,
				       conf_tmo(c, 20000) * 1000LL)))
		return -1;
	if (EXPECT_EVENT(s->conn_evd, RAPT_EV_ESTABLISHED, &e))
		return -1;
	if (!EXPECT(e.u.conn.ep == s->ep))
		return -1;
	if (ev)
		*ev = e;
	return 0;
}

int conf_post_recvs(struct conf_ctx *c, struct conf_ep_set *s,
		    unsigned int first, unsigned int n, size_t size)
{
	struct rapt_sge sge;
	unsigned int i;

	for (i = first; i < first + n; i++) {
		if ((i + 1) * size > s->len) {
			FAIL("test bug: %u receives of %zu bytes exceed the %zu-byte buffer",
			     first + n, size, s->len);
			return -1;
		}
		sge.addr = (uintptr_t)(s->buf + i * size);
		sge.length = (uint32_t)size;
		sge.lkey = s->mi.lkey;
		if (!EXPECT_OK(rapt_ep_post_recv(s->ep, &sge, size ? 1 : 0,
						 i)))
			return -1;
	}
	return 0;
}

int conf_pair_passive(struct conf_ctx *c, struct conf_ep_set *s,
		      const struct conf_set_opts *o, unsigned int nrecv,
		      size_t rsize)
{
	struct conf_listener l;
	struct rapt_cr *cr;

	if (conf_set_create(c, s, o) || conf_post_recvs(c, s, 0, nrecv, rsize))
		return -1;
	if (conf_listen(c, &l, NULL) || conf_publish(c, &l))
		return -1;
	if (conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL))
		return -1;
	return conf_accept(c, cr, s, NULL, 0);
}

int conf_pair_active(struct conf_ctx *c, struct conf_ep_set *s,
		     const struct conf_set_opts *o, unsigned int nrecv,
		     size_t rsize)
{
	struct sockaddr_storage addr;
	uint64_t sid;

	if (conf_set_create(c, s, o) || conf_post_recvs(c, s, 0, nrecv, rsize))
		return -1;
	if (conf_lookup(c, &addr, &sid))
		return -1;
	return conf_connect(c, s, &addr, sid, NULL, 0, NULL);
}

int conf_send_msg(struct conf_ctx *c, struct conf_ep_set *s, size_t off,
		  size_t len, uint64_t cookie)
{
	struct rapt_sge sge = {
		.addr = (uintptr_t)(s->buf + off),
		.length = (uint32_t)len,
		.lkey = s->mi.lkey,
	};

	if (!EXPECT_OK(rapt_ep_post_send(s->ep, &sge, len ? 1 : 0, cookie, 0)))
		return -1;
	return EXPECT_DTO(s->req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, cookie,
			  NULL);
}

int conf_self_connect(struct conf_ctx *c, struct rapt_ep *ep, uint64_t sid)
{
	return EXPECT_OK(rapt_ep_connect(ep, (const struct sockaddr *)
					 &c->attr.local_addr, sid, NULL, 0,
					 conf_tmo(c, 20000) * 1000LL)) ? 0 : -1;
}

bool conf_expect_state(struct conf_ctx *c, struct rapt_ep *ep, uint32_t want,
		       const char *file, int line)
{
	enum rapt_ep_state st = 0;
	int rc = rapt_ep_get_state(ep, &st);

	return conf_check(c, rc == 0 && st == want, file, line,
			  "EP state is %s (rc %s), expected %s",
			  rapt_ep_state_name(st), rapt_err_name(rc),
			  rapt_ep_state_name(want));
}

int conf_wait_down(struct conf_ctx *c, struct conf_ep_set *s,
		   struct rapt_event *ev)
{
	struct rapt_event e;
	int rc;

	rc = conf_wait(c, s->conn_evd, conf_tmo(c, CONF_TMO_MS), &e);
	if (rc == 1) {
		consume_peer_end(c, "DISCONNECTED or BROKEN", __FILE__,
				 __LINE__);
		return -1;
	}
	if (rc) {
		FAIL("no DISCONNECTED or BROKEN within %d ms: %s",
		     conf_tmo(c, CONF_TMO_MS), rapt_err_name(rc));
		return -1;
	}
	if (!EXPECT_MSG(e.type == RAPT_EV_DISCONNECTED ||
			e.type == RAPT_EV_BROKEN,
			"expected DISCONNECTED or BROKEN, got %s",
			rapt_event_name(e.type)))
		return -1;
	if (ev)
		*ev = e;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Misc                                                                */
/* ------------------------------------------------------------------ */

uint8_t conf_pattern_byte(size_t i, uint32_t seed)
{
	uint32_t x = (uint32_t)i * 0x9e3779b1u + (seed + 1) * 0x85ebca6bu;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return (uint8_t)x;
}

void conf_fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = conf_pattern_byte(i, seed);
}

long conf_verify(const void *buf, size_t len, uint32_t seed)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != conf_pattern_byte(i, seed))
			return (long)i;
	return -1;
}

int64_t conf_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void conf_sleep_ms(unsigned int ms)
{
	struct timespec ts = {
		.tv_sec = ms / 1000,
		.tv_nsec = (long)(ms % 1000) * 1000000,
	};

	while (nanosleep(&ts, &ts))
		;
}

int conf_addr_parse(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	char tmp[64];
	size_t n;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		return 0;
	}
	n = strlen(s);
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']' && n - 2 < sizeof(tmp)) {
		memcpy(tmp, s + 1, n - 2);
		tmp[n - 2] = '\0';
		s = tmp;
	}
	if (inet_pton(AF_INET6, s, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		return 0;
	}
	return -1;
}

const char *conf_addr_str(const struct sockaddr_storage *ss, char *buf,
			  size_t len)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
	char a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET &&
	    inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a)))
		snprintf(buf, len, "%s", a);
	else if (ss->ss_family == AF_INET6 &&
		 inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a)))
		snprintf(buf, len, "[%s]", a);
	else
		snprintf(buf, len, "(family %u)", ss->ss_family);
	return buf;
}

bool conf_addr_same_host(const struct sockaddr_storage *a,
			 const struct sockaddr_storage *b)
{
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)a;
	const struct sockaddr_in6 *b6 = (const struct sockaddr_in6 *)b;
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)a;
	const struct sockaddr_in *b4 = (const struct sockaddr_in *)b;

	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&a6->sin6_addr, &b6->sin6_addr, 16);
	return false;
}

bool conf_addr_is_any(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

	if (ss->ss_family == AF_INET)
		return s4->sin_addr.s_addr == htonl(INADDR_ANY);
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr);
	return true;
}

bool conf_rnr_nak(const struct conf_ctx *c)
{
	return c->attr.transport == RAPT_TRANSPORT_IB ||
	       c->attr.transport == RAPT_TRANSPORT_ROCE;
}

int conf_open_fds(void)
{
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");
	int n = 0;

	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.')
			n++;
	closedir(dir);
	return n - 1;	/* the directory's own fd */
}
