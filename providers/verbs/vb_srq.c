/* SPDX-License-Identifier: MIT */
/*
 * verbs layer: shared receive queues (API 1.3) on ibv_create_srq().
 *
 * An SRQ is an ibv_srq of the PZ's ibv_pd.  An EP made with
 * rapt_ep_create_with_srq() gets a QP on it (ep_set_srq replaces the QP
 * ep_create made, which has not been used yet).
 *
 * The cookies.  A receive posted to an SRQ is taken by whichever of its
 * QPs gets a message, and its completion comes on that QP's receive CQ:
 * EPs on one SRQ may have different receive EVDs, so completions do not
 * come back in posting order.  Each posted receive therefore holds an
 * entry of the SRQ's table; its wr_id names the SRQ (its index in the
 * IA's SRQ table and that index's generation, so that the completion of
 * a receive whose SRQ is gone is dropped) and the entry.  The EP is found
 * by the completion's qp_num, in the IA's map of SRQ QPs.
 *
 * The low watermark counts as rapt_srq_query() does: receives posted
 * whose completion has not been polled.  It fires as a completion takes
 * the count below the mark, before that receive's own event; posts back
 * to the mark and a resize re-arm it.  The device's SRQ limit
 * (IBV_EVENT_SRQ_LIMIT_REACHED) is not used: it fires when the device
 * takes a receive, before rapt knows which, so its count could not be
 * told exactly.
 *
 * The empty SRQ.  On iWARP a message that finds no receive is a DDP
 * error: the device terminates the connection (siw: "no buffer").  On IB
 * the receiver answers with an RNR NAK and the sender retries as many
 * times as the receiver asked for in its CM message: an EP on an SRQ
 * asks for none (vb_cm.c), so the sender's send fails with
 * RNR_RETRY_EXC_ERR and its connection breaks at once.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

/* Entries a device SRQ gets at least: rapt_srq_resize() grows within
 * them where the device cannot resize (siw). */
#define VB_SRQ_MIN_HW	64u

/* A zero-length receive still names one SGE (siw refuses none). */
#define VB_SRQ_ZERO_BYTES 64

/* ------------------------------------------------------------------ */
/* The IA's map of SRQ QPs: qp_num -> EP                               */
/* ------------------------------------------------------------------ */

static uint32_t qpmap_hash(uint32_t qpn, uint32_t mask)
{
	return (qpn * 2654435761u) & mask;
}

static int qpmap_grow(struct vb_qpmap *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 64, i, h;
	struct vb_qpmap_ent *t = calloc(cap, sizeof(*t));

	if (!t)
		return RAPT_ENOMEM;
	for (i = 0; i < m->cap; i++) {
		if (!m->t[i].ep)
			continue;
		h = qpmap_hash(m->t[i].qpn, cap - 1);
		while (t[h].ep)
			h = (h + 1) & (cap - 1);
		t[h] = m->t[i];
	}
	free(m->t);
	m->t = t;
	m->cap = cap;
	return 0;
}

/**
 * vb_qpmap_add - name @ep's QP in the IA's map of SRQ QPs
 * @ia: the IA
 * @ep: the EP, ep->qp set
 *
 * Return: 0, RAPT_ENOMEM.
 */
int vb_qpmap_add(struct vb_ia *ia, struct vb_ep *ep)
{
	struct vb_qpmap *m = &ia->qpmap;
	uint32_t h;
	int ret = 0;

	pthread_rwlock_wrlock(&m->lock);
	if ((m->n + 1) * 2 > m->cap)
		ret = qpmap_grow(m);
	if (!ret) {
		h = qpmap_hash(ep->qp->qp_num, m->cap - 1);
		while (m->t[h].ep)
			h = (h + 1) & (m->cap - 1);
		m->t[h].qpn = ep->qp->qp_num;
		m->t[h].ep = ep;
		m->n++;
	}
	pthread_rwlock_unlock(&m->lock);
	return ret;
}

/**
 * vb_qpmap_del - forget QP number @qpn (linear probing: the entries
 * behind it move up)
 * @ia: the IA
 * @qpn: a QP number vb_qpmap_add() named
 */
void vb_qpmap_del(struct vb_ia *ia, uint32_t qpn)
{
	struct vb_qpmap *m = &ia->qpmap;
	uint32_t h, j, k;

	pthread_rwlock_wrlock(&m->lock);
	if (!m->cap)
		goto out;
	h = qpmap_hash(qpn, m->cap - 1);
	while (m->t[h].ep && m->t[h].qpn != qpn)
		h = (h + 1) & (m->cap - 1);
	if (!m->t[h].ep)
		goto out;
	m->t[h].ep = NULL;
	m->n--;
	for (j = (h + 1) & (m->cap - 1); m->t[j].ep;
	     j = (j + 1) & (m->cap - 1)) {
		k = qpmap_hash(m->t[j].qpn, m->cap - 1);
		/* Move the entry to the hole unless its home lies
		 * cyclically in (h, j]. */
		if ((j > h && (k <= h || k > j)) ||
		    (j < h && (k <= h && k > j))) {
			m->t[h] = m->t[j];
			m->t[j].ep = NULL;
			h = j;
		}
	}
out:
	pthread_rwlock_unlock(&m->lock);
}

/**
 * vb_qpmap_swap - @ep has a new QP in place of QP number @old_qpn
 * @ia: the IA
 * @old_qpn: the number its old QP had in the map
 * @ep: the EP, ep->qp the new one
 *
 * Cannot fail: the entry freed makes room for the new one.
 */
void vb_qpmap_swap(struct vb_ia *ia, uint32_t old_qpn, struct vb_ep *ep)
{
	vb_qpmap_del(ia, old_qpn);
	if (vb_qpmap_add(ia, ep))
		vb_err("%s: QP %u lost from the SRQ map", ia->dev,
		       ep->qp->qp_num);
}

static struct vb_ep *qpmap_find(struct vb_ia *ia, uint32_t qpn)
{
	struct vb_qpmap *m = &ia->qpmap;
	struct vb_ep *ep = NULL;
	uint32_t h;

	pthread_rwlock_rdlock(&m->lock);
	if (m->cap) {
		h = qpmap_hash(qpn, m->cap - 1);
		while (m->t[h].ep && m->t[h].qpn != qpn)
			h = (h + 1) & (m->cap - 1);
		ep = m->t[h].ep;
	}
	pthread_rwlock_unlock(&m->lock);
	return ep;
}

void vb_qpmap_fini(struct vb_ia *ia)
{
	free(ia->qpmap.t);
	pthread_rwlock_destroy(&ia->qpmap.lock);
}

void vb_qpmap_init(struct vb_ia *ia)
{
	pthread_rwlock_init(&ia->qpmap.lock, NULL);
}

/* ------------------------------------------------------------------ */
/* SRQs                                                                */
/* ------------------------------------------------------------------ */

static uint64_t srq_wrid(const struct vb_srq *srq, uint32_t ent)
{
	return (uint64_t)VB_SLOT_SRQ |
	       ((uint64_t)srq->index << VB_SLOT_BITS) | VB_WRID_RECV |
	       ((uint64_t)((srq->gen << VB_SRQ_ENT_BITS) | ent) << 32);
}

static int srq_index_get(struct vb_ia *ia, struct vb_srq *srq)
{
	uint32_t i;
	int ret = RAPT_EBUSY;

	pthread_mutex_lock(&ia->lock);
	for (i = 0; i < VB_SRQ_MAX; i++) {
		if (atomic_load(&ia->srqs[i].srq))
			continue;
		srq->index = i;
		srq->gen = ia->srqs[i].gen;
		atomic_store_explicit(&ia->srqs[i].srq, srq,
				      memory_order_release);
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&ia->lock);
	if (ret)
		rapt_prov_set_error("%s: %u SRQs exist", vb_tp->name,
				    VB_SRQ_MAX);
	return ret;
}

static void srq_index_put(struct vb_ia *ia, struct vb_srq *srq)
{
	pthread_mutex_lock(&ia->lock);
	ia->srqs[srq->index].gen = (srq->gen + 1) & VB_SRQ_GEN_MASK;
	atomic_store_explicit(&ia->srqs[srq->index].srq, NULL,
			      memory_order_release);
	pthread_mutex_unlock(&ia->lock);
}

static void srq_release(struct vb_srq *srq)
{
	if (srq->zero_mr)
		ibv_dereg_mr(srq->zero_mr);
	free(srq->zero);
	free(srq->cookie);
	free(srq->free);
	pthread_mutex_destroy(&srq->lock);
	free(srq);
}

/* Table entries for up to @n receives, all free. */
static int srq_table(struct vb_srq *srq, uint32_t n)
{
	uint64_t *cookie = realloc(srq->cookie, n * sizeof(*cookie));
	uint32_t *fr, i;

	if (!cookie)
		return RAPT_ENOMEM;
	srq->cookie = cookie;
	fr = realloc(srq->free, n * sizeof(*fr));
	if (!fr)
		return RAPT_ENOMEM;
	srq->free = fr;
	/* New entries go to the bottom of the free stack. */
	memmove(fr + (n - srq->hw), fr, srq->nfree * sizeof(*fr));
	for (i = 0; i < n - srq->hw; i++)
		fr[i] = srq->hw + i;
	srq->nfree += n - srq->hw;
	srq->hw = n;
	return 0;
}

int vb_srq_create(void *pia, void *ppz, struct rapt_srq *handle,
		  const struct rapt_srq_attr *attr, void **psrq)
{
	struct vb_ia *ia = pia;
	struct vb_pz *pz = ppz;
	struct ibv_srq_init_attr sa;
	struct vb_srq *srq;
	uint32_t hw;
	int ret, err;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return RAPT_ENOMEM;
	pthread_mutex_init(&srq->lock, NULL);
	srq->ia = ia;
	srq->pz = pz;
	srq->handle = handle;
	srq->max = attr->max_recv;
	srq->max_sge = attr->max_recv_sge;
	srq->lw = attr->low_watermark;
	hw = attr->max_recv > VB_SRQ_MIN_HW ? attr->max_recv : VB_SRQ_MIN_HW;
	if (hw > (uint32_t)ia->dattr.max_srq_wr)
		hw = (uint32_t)ia->dattr.max_srq_wr;
	memset(&sa, 0, sizeof(sa));
	sa.srq_context = srq;
	sa.attr.max_wr = hw;
	sa.attr.max_sge = srq->max_sge ? srq->max_sge : 1;
	srq->srq = ibv_create_srq(pz->pd, &sa);
	if (!srq->srq) {
		err = errno;
		rapt_prov_set_error("%s: ibv_create_srq (%u receives, %u SGEs): %s",
				    vb_tp->name, hw, sa.attr.max_sge,
				    strerror(err));
		srq_release(srq);
		return err == ENOMEM ? RAPT_ENOMEM : rapt_errno_status(err);
	}
	/* The device may give more than asked; the table covers what it
	 * holds, rapt's limit stays max_recv. */
	if (sa.attr.max_wr > hw && sa.attr.max_wr < VB_SRQ_ENT_MAX)
		hw = sa.attr.max_wr;
	ret = srq_table(srq, hw);
	if (ret)
		goto err_srq;
	ret = vb_small_mr(pz, VB_SRQ_ZERO_BYTES, IBV_ACCESS_LOCAL_WRITE,
			  "an SRQ's empty receive", &srq->zero, &srq->zero_mr);
	if (ret)
		goto err_srq;
	ret = srq_index_get(ia, srq);
	if (ret)
		goto err_srq;
	srq->lw_armed = true;
	*psrq = srq;
	return 0;

err_srq:
	ibv_destroy_srq(srq->srq);
	srq_release(srq);
	return ret;
}

int vb_srq_free(void *psrq)
{
	struct vb_srq *srq = psrq;
	int err;

	srq_index_put(srq->ia, srq);
	err = ibv_destroy_srq(srq->srq);
	if (err)
		vb_err("ibv_destroy_srq: %s", strerror(err));
	srq_release(srq);
	return 0;
}

int vb_srq_post_recv(void *psrq, const struct rapt_sge *sgl, uint32_t nsge,
		     uint64_t cookie)
{
	struct vb_srq *srq = psrq;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge zero;
	uint32_t ent;
	int err, nc;

	vb_recv_wr(&wr, sgl, nsge, &zero, srq->zero, srq->zero_mr);
	pthread_mutex_lock(&srq->lock);
	if (srq->posted >= srq->max || !srq->nfree) {
		pthread_mutex_unlock(&srq->lock);
		return RAPT_ENOSPC;
	}
	ent = srq->free[--srq->nfree];
	srq->cookie[ent] = cookie;
	wr.wr_id = srq_wrid(srq, ent);
	nc = vb_post_guard(srq->ia);
	err = ibv_post_srq_recv(srq->srq, &wr, &bad);
	vb_post_unguard(nc);
	if (err) {
		srq->nfree++;
		pthread_mutex_unlock(&srq->lock);
		rapt_prov_set_error("%s: ibv_post_srq_recv: %s", vb_tp->name,
				    strerror(err));
		return err == ENOMEM ? RAPT_ENOSPC : rapt_errno_status(err);
	}
	if (++srq->posted >= srq->lw)
		srq->lw_armed = true;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

int vb_srq_query(void *psrq, uint32_t *posted)
{
	struct vb_srq *srq = psrq;

	pthread_mutex_lock(&srq->lock);
	*posted = srq->posted;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

int vb_srq_resize(void *psrq, uint32_t max_recv, uint32_t low_watermark)
{
	struct vb_srq *srq = psrq;
	struct ibv_srq_attr sa = { .max_wr = max_recv };
	int ret = 0, err;

	pthread_mutex_lock(&srq->lock);
	if (max_recv < srq->posted) {
		rapt_prov_set_error("%s: %u receives are posted: more than %u",
				    vb_tp->name, srq->posted, max_recv);
		ret = RAPT_ERANGE;
		goto out;
	}
	if (max_recv > srq->hw) {
		if (max_recv >= VB_SRQ_ENT_MAX) {
			ret = RAPT_ERANGE;
			goto out;
		}
		err = ibv_modify_srq(srq->srq, &sa, IBV_SRQ_MAX_WR);
		if (err) {
			rapt_prov_set_error("%s: %s cannot grow an SRQ beyond the %u receives it was made with (ibv_modify_srq: %s)",
					    vb_tp->name, srq->ia->dev, srq->hw,
					    strerror(err));
			ret = err == EOPNOTSUPP || err == ENOSYS ||
			      err == EINVAL ? RAPT_ENOTSUP :
			      rapt_errno_status(err);
			goto out;
		}
		ret = srq_table(srq, max_recv);
		if (ret)
			goto out;
	}
	srq->max = max_recv;
	srq->lw = low_watermark;
	srq->lw_armed = true;
out:
	pthread_mutex_unlock(&srq->lock);
	return ret;
}

/**
 * vb_srq_complete - a completion of an SRQ's receive (a poll lock held)
 * @ia: the IA
 * @wc: its completion
 * @cookie: set to the receive's cookie
 *
 * The entry goes back to the SRQ.
 *
 * Return: the EP whose QP took the receive, or NULL (the SRQ or the EP
 * is gone: nothing to report).
 */
struct vb_ep *vb_srq_complete(struct vb_ia *ia, const struct ibv_wc *wc,
			      uint64_t *cookie)
{
	uint32_t idx = VB_WRID_GEN(wc->wr_id);
	uint32_t seq = VB_WRID_SEQ(wc->wr_id);
	uint32_t ent = seq & (VB_SRQ_ENT_MAX - 1), left;
	struct vb_srq *srq;
	bool fire;

	if (idx >= VB_SRQ_MAX)
		return NULL;
	srq = atomic_load_explicit(&ia->srqs[idx].srq, memory_order_acquire);
	if (!srq || srq->gen != seq >> VB_SRQ_ENT_BITS)
		return NULL;
	pthread_mutex_lock(&srq->lock);
	if (ent >= srq->hw) {
		pthread_mutex_unlock(&srq->lock);
		return NULL;
	}
	*cookie = srq->cookie[ent];
	srq->free[srq->nfree++] = ent;
	left = --srq->posted;
	fire = srq->lw_armed && left < srq->lw;
	if (fire)
		srq->lw_armed = false;
	pthread_mutex_unlock(&srq->lock);
	/* Before the receive's own event, as on tcp. */
	if (fire)
		rapt_prov_async_event(ia->cia,
				      RAPT_EV_ASYNC_SRQ_LOW_WATERMARK,
				      srq->handle, (int32_t)left);
	return qpmap_find(ia, wc->qp_num);
}

/**
 * vb_ep_set_srq - the ep_set_srq op: @pep takes its receives from @psrq
 * @pep: an EP just made, never used
 * @psrq: the SRQ
 *
 * Its QP is made again, on the SRQ.
 *
 * Return: 0, or a RAPT_E* code.
 */
int vb_ep_set_srq(void *pep, void *psrq)
{
	struct vb_ep *ep = pep;
	struct ibv_qp *old = ep->qp;
	int ret;

	pthread_mutex_lock(&ep->lock);
	ep->srq = psrq;
	ret = vb_qp_create(ep, &ep->attr);
	if (!ret) {
		ret = vb_qpmap_add(ep->ia, ep);
		if (ret) {
			ibv_destroy_qp(ep->qp);
			ep->qp = old;
		} else {
			ibv_destroy_qp(old);
		}
	}
	if (ret)
		ep->srq = NULL;
	pthread_mutex_unlock(&ep->lock);
	return ret;
}
