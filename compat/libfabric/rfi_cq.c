// SPDX-License-Identifier: MIT
/*
 * Completion queues.  A CQ is a rapt EVD plus a software queue: rapt's
 * completions land in the EVD, but a receive completes when rfi copies a
 * message from its slot into the consumer's buffer (rfi_msg.c), which may
 * happen in fi_recv() itself.  fi_cq_read() first hands out what is
 * queued, then drains the EVD into the queue.
 */
#include <stdlib.h>
#include <string.h>

#include "rfi.h"

#define RFI_CQ_BATCH 32

static int ring_grow(struct rfi_cq *cq)
{
	size_t n = cq->ring_len ? cq->ring_len * 2 : 64, i;
	struct fi_cq_data_entry *r = malloc(n * sizeof(*r));

	if (!r)
		return -FI_ENOMEM;
	for (i = 0; i < cq->ring_count; i++)
		r[i] = cq->ring[(cq->ring_head + i) % cq->ring_len];
	free(cq->ring);
	cq->ring = r;
	cq->ring_len = n;
	cq->ring_head = 0;
	return 0;
}

int rfi_cq_push(struct rfi_cq *cq, void *context, uint64_t flags, size_t len)
{
	struct fi_cq_data_entry *e;

	if (cq->ring_count == cq->ring_len && ring_grow(cq))
		return -FI_ENOMEM;
	e = &cq->ring[(cq->ring_head + cq->ring_count) % cq->ring_len];
	e->op_context = context;
	e->flags = flags;
	e->len = len;
	e->buf = NULL;
	e->data = 0;
	cq->ring_count++;
	return 0;
}

int rfi_cq_push_err(struct rfi_cq *cq, void *context, uint64_t flags,
		    int err, int prov_errno, size_t olen)
{
	struct fi_cq_err_entry *e;

	if (cq->err_count == cq->err_len) {
		size_t n = cq->err_len ? cq->err_len * 2 : 8;

		e = realloc(cq->errs, n * sizeof(*e));
		if (!e)
			return -FI_ENOMEM;
		cq->errs = e;
		cq->err_len = n;
	}
	e = &cq->errs[cq->err_count++];
	memset(e, 0, sizeof(*e));
	e->op_context = context;
	e->flags = flags;
	e->err = err;
	e->prov_errno = prov_errno;
	e->olen = olen;
	return 0;
}

/* Drain the EVD: each completion goes to its EP's message layer. */
void rfi_cq_progress(struct rfi_cq *cq)
{
	struct rapt_event ev[RFI_CQ_BATCH];
	struct rfi_ep *ep;
	int n, i;

	do {
		n = rapt_evd_dequeue_batch(cq->evd, ev, RFI_CQ_BATCH);
		for (i = 0; i < n; i++) {
			if (ev[i].type != RAPT_EV_DTO)
				continue;
			ep = rfi_ep_of(ev[i].u.dto.ep);
			if (ep)
				rfi_msg_dto(ep, &ev[i].u.dto);
		}
	} while (n == RFI_CQ_BATCH);
}

static void entry_out(const struct rfi_cq *cq,
		      const struct fi_cq_data_entry *e, void *buf, size_t i)
{
	switch (cq->format) {
	case FI_CQ_FORMAT_CONTEXT:
		((struct fi_cq_entry *)buf)[i].op_context = e->op_context;
		break;
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry *m = &((struct fi_cq_msg_entry *)buf)[i];

		m->op_context = e->op_context;
		m->flags = e->flags;
		m->len = e->len;
		break;
	}
	default:
		((struct fi_cq_data_entry *)buf)[i] = *e;
		break;
	}
}

static ssize_t cq_read_locked(struct rfi_cq *cq, void *buf, size_t count)
{
	size_t i;

	if (!cq->ring_count && !cq->err_count)
		rfi_cq_progress(cq);
	if (cq->err_count)
		return -FI_EAVAIL;
	if (!cq->ring_count)
		return -FI_EAGAIN;
	for (i = 0; i < count && cq->ring_count; i++) {
		entry_out(cq, &cq->ring[cq->ring_head], buf, i);
		cq->ring_head = (cq->ring_head + 1) % cq->ring_len;
		cq->ring_count--;
	}
	return (ssize_t)i;
}

static ssize_t cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
	struct rfi_cq *cq = (struct rfi_cq *)fcq;
	ssize_t ret;

	pthread_mutex_lock(&cq->dom->fab->lock);
	ret = cq_read_locked(cq, buf, count);
	pthread_mutex_unlock(&cq->dom->fab->lock);
	return ret;
}

/* Connected endpoints have one peer: there is no source address. */
static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count,
			   fi_addr_t *src_addr)
{
	ssize_t ret = cq_read(fcq, buf, count), i;

	for (i = 0; src_addr && i < ret; i++)
		src_addr[i] = FI_ADDR_NOTAVAIL;
	return ret;
}

static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf,
			  uint64_t flags)
{
	struct rfi_cq *cq = (struct rfi_cq *)fcq;
	void *keep_data = buf->err_data;

	pthread_mutex_lock(&cq->dom->fab->lock);
	if (!cq->err_count) {
		pthread_mutex_unlock(&cq->dom->fab->lock);
		return -FI_EAGAIN;
	}
	*buf = cq->errs[0];
	buf->err_data = keep_data;
	buf->err_data_size = 0;		/* rfi has no error data */
	memmove(cq->errs, cq->errs + 1, --cq->err_count * sizeof(*cq->errs));
	pthread_mutex_unlock(&cq->dom->fab->lock);
	return 1;
}

/* Blocks in rapt_evd_wait(), whose event goes through the same path as
 * a polled one. */
static ssize_t cq_sread(struct fid_cq *fcq, void *buf, size_t count,
			const void *cond, int timeout)
{
	struct rfi_cq *cq = (struct rfi_cq *)fcq;
	int64_t end = timeout < 0 ? 0 : rfi_now_us() + (int64_t)timeout * 1000;
	struct rapt_event ev;
	struct rfi_ep *ep;
	int64_t left;
	ssize_t ret;
	int rc;

	for (;;) {
		ret = cq_read(fcq, buf, count);
		if (ret != -FI_EAGAIN)
			return ret;
		left = timeout < 0 ? RAPT_TIMEOUT_INFINITE : end - rfi_now_us();
		if (timeout >= 0 && left <= 0)
			return -FI_EAGAIN;
		rc = rapt_evd_wait(cq->evd, left, 1, &ev, NULL);
		if (rc == RAPT_ETIMEDOUT)
			return -FI_EAGAIN;
		if (rc)
			return rfi_errno(rc);
		pthread_mutex_lock(&cq->dom->fab->lock);
		ep = ev.type == RAPT_EV_DTO ? rfi_ep_of(ev.u.dto.ep) : NULL;
		if (ep)
			rfi_msg_dto(ep, &ev.u.dto);
		pthread_mutex_unlock(&cq->dom->fab->lock);
	}
}

static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count,
			    fi_addr_t *src_addr, const void *cond, int timeout)
{
	ssize_t ret = cq_sread(fcq, buf, count, cond, timeout), i;

	for (i = 0; src_addr && i < ret; i++)
		src_addr[i] = FI_ADDR_NOTAVAIL;
	return ret;
}

static int cq_signal(struct fid_cq *fcq)
{
	return -FI_ENOSYS;
}

static const char *cq_strerror(struct fid_cq *fcq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	const char *s = rapt_strerror(prov_errno);

	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return s;
}

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

int rfi_cq_trywait(struct rfi_cq *cq)
{
	if (cq->ring_count || cq->err_count)
		return -FI_EAGAIN;
	return rapt_evd_arm(cq->evd) ? -FI_EAGAIN : 0;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct rfi_cq *cq = (struct rfi_cq *)fid;

	if (command != FI_GETWAIT)
		return -FI_ENOSYS;
	return rfi_errno(rapt_evd_get_fd(cq->evd, arg));
}

static int cq_close(struct fid *fid)
{
	struct rfi_cq *cq = (struct rfi_cq *)fid;
	struct rfi_domain *dom = cq->dom;
	int ret;

	pthread_mutex_lock(&dom->fab->lock);
	ret = cq->refs ? -FI_EBUSY : rfi_errno(rapt_evd_free(cq->evd));
	if (!ret)
		dom->refs--;
	pthread_mutex_unlock(&dom->fab->lock);
	if (ret)
		return ret;
	free(cq->ring);
	free(cq->errs);
	free(cq);
	return 0;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = rfi_no_bind,
	.control = cq_control,
	.ops_open = rfi_ops_open,
	.tostr = rfi_no_tostr,
	.ops_set = rfi_no_ops_set,
};

int rfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **fcq, void *context)
{
	struct rfi_domain *dom = (struct rfi_domain *)domain;
	struct rfi_fabric *fab = dom->fab;
	size_t qlen = attr->size ? attr->size : 1024;
	struct rfi_cq *cq;
	int ret;

	switch (attr->format) {
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_CONTEXT:
	case FI_CQ_FORMAT_MSG:
	case FI_CQ_FORMAT_DATA:
		break;
	default:
		return -FI_ENOSYS;
	}
	if (attr->wait_obj != FI_WAIT_NONE &&
	    attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS;
	if (attr->wait_cond != FI_CQ_COND_NONE)
		return -FI_ENOSYS;
	/* ofi_rxm asks for some 262k entries: the EVD holds what rapt
	 * allows, the software queue grows as it needs */
	if (qlen > fab->attr.max_evd_qlen)
		qlen = fab->attr.max_evd_qlen;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	pthread_mutex_lock(&fab->lock);
	ret = rfi_errno(rapt_evd_create(fab->ia, (unsigned int)qlen,
					RAPT_EVD_DTO, &cq->evd));
	if (!ret)
		dom->refs++;
	pthread_mutex_unlock(&fab->lock);
	if (ret) {
		free(cq);
		return ret;
	}
	cq->dom = dom;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ?
		     FI_CQ_FORMAT_CONTEXT : attr->format;
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = context;
	cq->cq.fid.ops = &cq_fi_ops;
	cq->cq.ops = &cq_ops;
	*fcq = &cq->cq;
	return 0;
}
