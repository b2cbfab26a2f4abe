// SPDX-License-Identifier: MIT
/*
 * The event queue: rapt's CR and connection events, turned into
 * FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN and error entries; plus what the
 * consumer writes with fi_eq_write().  rapt events are converted in
 * arrival order into a list, so FI_PEEK and -FI_EAVAIL see the head.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "rfi.h"

#define RFI_EQ_DATA_MAX 256	/* connection data an entry can carry */

struct rfi_eq_entry {
	struct rfi_eq_entry *next;
	uint32_t event;
	bool err;
	struct rfi_connreq *creq;	/* FI_CONNREQ: the request */
	struct fi_eq_err_entry err_entry;
	size_t len;			/* bytes fi_eq_read copies out */
	union {
		struct fi_eq_cm_entry cm;
		struct fi_eq_entry ent;
		uint8_t raw[sizeof(struct fi_eq_cm_entry) + RFI_EQ_DATA_MAX];
	} u;
};

static void entry_append(struct rfi_eq *eq, struct rfi_eq_entry *e)
{
	e->next = NULL;
	if (eq->tail)
		eq->tail->next = e;
	else
		eq->head = e;
	eq->tail = e;
}

static void entry_pop(struct rfi_eq *eq)
{
	eq->head = eq->head->next;
	if (!eq->head)
		eq->tail = NULL;
}

static void entry_free(struct rfi_eq_entry *e)
{
	free(e->err_entry.err_data);
	free(e);
}

/* A connection-management entry with the peer's data (after rfi's own
 * prefix, which the caller has stripped). */
static struct rfi_eq_entry *cm_entry(struct rfi_eq *eq, uint32_t event,
				     struct fid *fid, struct fi_info *info,
				     const void *data, size_t len)
{
	struct rfi_eq_entry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	if (len > RFI_EQ_DATA_MAX)
		len = RFI_EQ_DATA_MAX;
	e->event = event;
	e->u.cm.fid = fid;
	e->u.cm.info = info;
	if (len)
		memcpy(e->u.cm.data, data, len);
	e->len = sizeof(e->u.cm) + len;
	entry_append(eq, e);
	return e;
}

static void err_entry(struct rfi_eq *eq, struct rfi_ep *ep, int err,
		      int prov_errno, const void *data, size_t len)
{
	struct rfi_eq_entry *e = calloc(1, sizeof(*e));

	if (!e)
		return;
	e->err = true;
	e->err_entry.fid = &ep->ep.fid;
	e->err_entry.context = ep->ep.fid.context;
	e->err_entry.err = err;
	e->err_entry.prov_errno = prov_errno;
	if (len) {
		e->err_entry.err_data = malloc(len);
		if (e->err_entry.err_data) {
			memcpy(e->err_entry.err_data, data, len);
			e->err_entry.err_data_size = len;
		}
	}
	entry_append(eq, e);
}

/* rfi's prefix on connect and accept data: the sender's slot count. */
static int prefix_parse(const void *pdata, size_t len, uint16_t *slots)
{
	const uint8_t *p = pdata;

	if (len < RFI_CM_PREFIX || p[0] != RFI_CM_MAGIC ||
	    p[1] != RFI_CM_VERSION)
		return -FI_EOTHER;
	*slots = (uint16_t)(p[2] | p[3] << 8);
	return *slots >= 2 ? 0 : -FI_EOTHER;
}

static void on_cr(struct rfi_eq *eq, const struct rapt_event_cr *ev)
{
	struct rfi_connreq *creq;
	struct rapt_cr_info ci;
	struct rfi_eq_entry *e;
	struct fi_info *info;
	struct rfi_pep *pep;
	void *ctx;
	uint16_t slots;

	if (rapt_context_get(ev->psp, &ctx) || !ctx ||
	    rapt_cr_query(ev->cr, &ci, sizeof(ci)))
		return;
	pep = ctx;
	if (prefix_parse(ci.pdata, ci.pdata_len, &slots)) {
		/* not an rfi peer: it cannot take part in the credits */
		rapt_cr_reject(ev->cr, NULL, 0);
		return;
	}
	creq = calloc(1, sizeof(*creq));
	info = fi_dupinfo(pep->info);
	if (!creq || !info)
		goto err;
	free(info->dest_addr);
	info->dest_addrlen = rfi_sockaddr_len(&ci.remote_addr);
	info->dest_addr = malloc(info->dest_addrlen);
	if (!info->dest_addr)
		goto err;
	memcpy(info->dest_addr, &ci.remote_addr, info->dest_addrlen);
	creq->fid.fclass = FI_CLASS_CONNREQ;
	creq->pep = pep;
	creq->cr = ev->cr;
	creq->peer_slots = slots;
	info->handle = &creq->fid;
	e = cm_entry(eq, FI_CONNREQ, &pep->pep.fid, info,
		     (const uint8_t *)ci.pdata + RFI_CM_PREFIX,
		     ci.pdata_len - RFI_CM_PREFIX);
	if (!e)
		goto err;
	e->creq = creq;
	return;
err:
	fi_freeinfo(info);
	free(creq);
	rapt_cr_reject(ev->cr, NULL, 0);
}

static void on_established(struct rfi_eq *eq, struct rfi_ep *ep,
			   const struct rapt_event_conn *c)
{
	const uint8_t *data = NULL;
	size_t len = 0;
	uint16_t slots;

	if (ep->state == RFI_EP_CONNECTING) {
		/* the accept data says how many slots the peer has */
		if (prefix_parse(c->pdata, c->pdata_len, &slots)) {
			rapt_ep_disconnect(ep->rep, RAPT_CLOSE_ABRUPT, NULL, 0);
			err_entry(eq, ep, FI_EOTHER, 0, NULL, 0);
			return;
		}
		ep->credits += slots;
		data = (const uint8_t *)c->pdata + RFI_CM_PREFIX;
		len = c->pdata_len - RFI_CM_PREFIX;
	}
	rfi_ep_set_state(ep, RFI_EP_CONNECTED);
	cm_entry(eq, FI_CONNECTED, &ep->ep.fid, NULL, data, len);
}

static void on_closed(struct rfi_eq *eq, struct rfi_ep *ep, int err)
{
	enum rfi_ep_state was = ep->state;

	rfi_ep_set_state(ep, RFI_EP_SHUTDOWN);
	if (was == RFI_EP_CONNECTING || was == RFI_EP_ACCEPTING) {
		err_entry(eq, ep, err, 0, NULL, 0);
		return;
	}
	if (ep->shutdown_reported)
		return;
	ep->shutdown_reported = true;
	cm_entry(eq, FI_SHUTDOWN, &ep->ep.fid, NULL, NULL, 0);
}

static void on_conn(struct rfi_eq *eq, uint32_t type,
		    const struct rapt_event_conn *c)
{
	struct rfi_ep *ep = rfi_ep_of(c->ep);

	if (!ep)
		return;		/* the EP was closed meanwhile */
	switch (type) {
	case RAPT_EV_ESTABLISHED:
		on_established(eq, ep, c);
		break;
	case RAPT_EV_PEER_REJECTED:
		rfi_ep_set_state(ep, RFI_EP_SHUTDOWN);
		err_entry(eq, ep, FI_ECONNREFUSED, 0, c->pdata, c->pdata_len);
		break;
	case RAPT_EV_NON_PEER_REJECTED:
		rfi_ep_set_state(ep, RFI_EP_SHUTDOWN);
		err_entry(eq, ep, FI_ECONNREFUSED, (int)c->reason, NULL, 0);
		break;
	case RAPT_EV_UNREACHABLE:
		rfi_ep_set_state(ep, RFI_EP_SHUTDOWN);
		err_entry(eq, ep, FI_EHOSTUNREACH, c->prov_status, NULL, 0);
		break;
	case RAPT_EV_TIMED_OUT:
		rfi_ep_set_state(ep, RFI_EP_SHUTDOWN);
		err_entry(eq, ep, FI_ETIMEDOUT, 0, NULL, 0);
		break;
	case RAPT_EV_ACCEPT_ERROR:
		on_closed(eq, ep, FI_ECONNABORTED);
		break;
	case RAPT_EV_DISCONNECTED:
		on_closed(eq, ep, FI_ECONNRESET);
		break;
	case RAPT_EV_BROKEN:
		on_closed(eq, ep, FI_ECONNRESET);
		break;
	}
}

static void convert(struct rfi_eq *eq, const struct rapt_event *ev)
{
	if (ev->type == RAPT_EV_CR_ARRIVAL)
		on_cr(eq, &ev->u.cr);
	else if ((ev->type >> 8) == RAPT_EVD_CONNECTION)
		on_conn(eq, ev->type, &ev->u.conn);
	/* software events only wake waiters: fi_eq_write queued the entry */
}

static void eq_progress(struct rfi_eq *eq)
{
	struct rapt_event ev;

	while (!rapt_evd_dequeue(eq->evd, &ev))
		convert(eq, &ev);
}

static ssize_t eq_read_locked(struct rfi_eq *eq, uint32_t *event, void *buf,
			      size_t len, uint64_t flags)
{
	struct rfi_eq_entry *e;

	if (!eq->head)
		eq_progress(eq);
	e = eq->head;
	if (!e)
		return -FI_EAGAIN;
	if (e->err)
		return -FI_EAVAIL;
	if (len < e->len)
		return -FI_ETOOSMALL;
	memcpy(buf, e->u.raw, e->len);
	if (event)
		*event = e->event;
	if (flags & FI_PEEK)
		return (ssize_t)e->len;
	len = e->len;
	entry_pop(eq);
	entry_free(e);
	return (ssize_t)len;
}

static ssize_t eq_read(struct fid_eq *feq, uint32_t *event, void *buf,
		       size_t len, uint64_t flags)
{
	struct rfi_eq *eq = (struct rfi_eq *)feq;
	ssize_t ret;

	pthread_mutex_lock(&eq->fab->lock);
	ret = eq_read_locked(eq, event, buf, len, flags);
	pthread_mutex_unlock(&eq->fab->lock);
	return ret;
}

/* The consumer's buffer if it gave one, else rfi's, kept until the next
 * readerr (the libfabric 1.5 rule). */
static void err_copy(struct rfi_eq *eq, struct rfi_eq_entry *e,
		     struct fi_eq_err_entry *buf, bool peek)
{
	void *ubuf = buf->err_data;
	size_t ulen = buf->err_data_size, n = e->err_entry.err_data_size;

	*buf = e->err_entry;
	if (ubuf && ulen) {
		n = n < ulen ? n : ulen;
		if (n)
			memcpy(ubuf, e->err_entry.err_data, n);
		buf->err_data = ubuf;
		buf->err_data_size = n;
		return;
	}
	if (peek)
		return;
	free(eq->err_data);
	eq->err_data = e->err_entry.err_data;
	e->err_entry.err_data = NULL;
}

static ssize_t eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf,
			  uint64_t flags)
{
	struct rfi_eq *eq = (struct rfi_eq *)feq;
	struct rfi_eq_entry *e;
	bool peek = flags & FI_PEEK;

	pthread_mutex_lock(&eq->fab->lock);
	if (!eq->head)
		eq_progress(eq);
	e = eq->head;
	if (!e || !e->err) {
		pthread_mutex_unlock(&eq->fab->lock);
		return -FI_EAGAIN;
	}
	err_copy(eq, e, buf, peek);
	if (!peek) {
		entry_pop(eq);
		entry_free(e);
	}
	pthread_mutex_unlock(&eq->fab->lock);
	return sizeof(*buf);
}

static ssize_t eq_write(struct fid_eq *feq, uint32_t event, const void *buf,
			size_t len, uint64_t flags)
{
	struct rfi_eq *eq = (struct rfi_eq *)feq;
	struct rfi_eq_entry *e;

	if (len > sizeof(e->u.raw))
		return -FI_EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -FI_ENOMEM;
	e->event = event;
	e->len = len;
	memcpy(e->u.raw, buf, len);
	pthread_mutex_lock(&eq->fab->lock);
	entry_append(eq, e);
	/* wake a thread in fi_eq_sread; a full EVD has wakeups pending */
	rapt_evd_post_software(eq->evd, NULL);
	pthread_mutex_unlock(&eq->fab->lock);
	return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *feq, uint32_t *event, void *buf,
			size_t len, int timeout, uint64_t flags)
{
	struct rfi_eq *eq = (struct rfi_eq *)feq;
	int64_t end = timeout < 0 ? 0 : rfi_now_us() + (int64_t)timeout * 1000;
	struct rapt_event ev;
	ssize_t ret;
	int64_t left;
	int rc;

	for (;;) {
		pthread_mutex_lock(&eq->fab->lock);
		ret = eq_read_locked(eq, event, buf, len, flags);
		pthread_mutex_unlock(&eq->fab->lock);
		if (ret != -FI_EAGAIN)
			return ret;
		left = timeout < 0 ? RAPT_TIMEOUT_INFINITE : end - rfi_now_us();
		if (timeout >= 0 && left <= 0)
			return -FI_EAGAIN;
		rc = rapt_evd_wait(eq->evd, left, 1, &ev, NULL);
		if (rc == RAPT_ETIMEDOUT)
			return -FI_EAGAIN;
		if (rc)
			return rfi_errno(rc);
		pthread_mutex_lock(&eq->fab->lock);
		convert(eq, &ev);
		pthread_mutex_unlock(&eq->fab->lock);
	}
}

static const char *eq_strerror(struct fid_eq *feq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	static const char *const reasons[] = {
		[RAPT_REJECT_UNKNOWN] = "no detail",
		[RAPT_REJECT_BUSY] = "the listener's backlog is full",
		[RAPT_REJECT_NO_LISTENER] = "nothing listens there",
		[RAPT_REJECT_VERSION] = "protocol version not understood",
		[RAPT_REJECT_PROTOCOL] = "the peer broke the protocol",
		[RAPT_REJECT_RESOURCES] = "the peer lacked resources",
	};
	const char *s = prov_errno >= 0 && prov_errno <= RAPT_REJECT_RESOURCES ?
			reasons[prov_errno] : "provider error";

	if (buf && len) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	return s;
}

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

/* Undecided requests of a passive endpoint that closes: rejected. */
void rfi_eq_drop_connreqs(struct rfi_eq *eq, struct rfi_pep *pep)
{
	struct rfi_eq_entry **pp = &eq->head, *e;

	eq_progress(eq);
	eq->tail = NULL;
	while ((e = *pp)) {
		if (!e->creq || e->creq->pep != pep) {
			eq->tail = e;
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		rapt_cr_reject(e->creq->cr, NULL, 0);
		/* fi_freeinfo() leaves info->handle, the creq, alone */
		fi_freeinfo(e->u.cm.info);
		free(e->creq);
		entry_free(e);
	}
}

/*
 * An EP that closes takes its queued entries with it, as libfabric's own
 * providers do: ofi_rxm counts on it, and must never read a freed fid.
 */
void rfi_eq_remove_fid(struct rfi_eq *eq, struct fid *fid)
{
	struct rfi_eq_entry **pp = &eq->head, *e;

	eq->tail = NULL;
	while ((e = *pp)) {
		if ((e->err ? e->err_entry.fid : e->u.cm.fid) != fid) {
			eq->tail = e;
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		entry_free(e);
	}
}

int rfi_eq_trywait(struct rfi_eq *eq)
{
	if (eq->head)
		return -FI_EAGAIN;
	return rapt_evd_arm(eq->evd) ? -FI_EAGAIN : 0;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct rfi_eq *eq = (struct rfi_eq *)fid;

	if (command != FI_GETWAIT)
		return -FI_ENOSYS;
	return rfi_errno(rapt_evd_get_fd(eq->evd, arg));
}

static int eq_close(struct fid *fid)
{
	struct rfi_eq *eq = (struct rfi_eq *)fid;
	struct rfi_fabric *fab = eq->fab;
	struct rfi_eq_entry *e;
	int ret;

	pthread_mutex_lock(&fab->lock);
	if (eq->refs) {
		pthread_mutex_unlock(&fab->lock);
		return -FI_EBUSY;
	}
	ret = rfi_errno(rapt_evd_free(eq->evd));
	if (ret) {
		pthread_mutex_unlock(&fab->lock);
		return ret;
	}
	fab->refs--;
	pthread_mutex_unlock(&fab->lock);
	while ((e = eq->head)) {
		entry_pop(eq);
		if (e->event == FI_CONNREQ && !e->err)
			fi_freeinfo(e->u.cm.info);
		entry_free(e);
	}
	free(eq->err_data);
	free(eq);
	return 0;
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = rfi_no_bind,
	.control = eq_control,
	.ops_open = rfi_ops_open,
	.tostr = rfi_no_tostr,
	.ops_set = rfi_no_ops_set,
};

int rfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **feq, void *context)
{
	struct rfi_fabric *fab = (struct rfi_fabric *)fabric;
	unsigned int streams = RAPT_EVD_CR | RAPT_EVD_CONNECTION |
			       RAPT_EVD_SOFTWARE;
	size_t qlen = attr && attr->size ? attr->size : 256;
	struct rfi_eq *eq;
	int ret;

	if (attr && attr->wait_obj != FI_WAIT_NONE &&
	    attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS;
	if (qlen > fab->attr.max_evd_qlen)
		qlen = fab->attr.max_evd_qlen;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	pthread_mutex_lock(&fab->lock);
	ret = rfi_errno(rapt_evd_create(fab->ia, (unsigned int)qlen, streams,
					&eq->evd));
	if (!ret)
		fab->refs++;
	pthread_mutex_unlock(&fab->lock);
	if (ret) {
		free(eq);
		return ret;
	}
	eq->fab = fab;
	eq->eq.fid.fclass = FI_CLASS_EQ;
	eq->eq.fid.context = context;
	eq->eq.fid.ops = &eq_fi_ops;
	eq->eq.ops = &eq_ops;
	*feq = &eq->eq;
	return 0;
}
