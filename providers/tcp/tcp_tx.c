/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the transmit path.
 *
 * Posts queue a WR and run the transmit path in the caller's thread;
 * EPOLLOUT (armed only while the socket is full) and the receive path run
 * it too.  Everything here runs with ep->lock held.
 *
 * A batch is what one sendmsg() writes: complete FPDUs whose headers and
 * trailers are built with the codec into a small scratch buffer and
 * whose payloads are iovecs straight into the consumer's memory (or the
 * WR's inline copy), so a trailer and the next header share one iovec.
 * A batch ends when the iovecs or the scratch run out, or the work does.
 * MSG_MORE is never set: it would hold the batch's last segment back for
 * the next sendmsg(), which may find the socket full and wait for
 * EPOLLOUT (and a Read Response's requester waits on that tail: section
 * 6.3 of docs/tcp-provider.md).  On EAGAIN the
 * batch stays as it is (iovecs advanced), EPOLLOUT is armed, and nothing
 * new is built until it is gone.
 *
 * The batch is built on tcp_tx_progress()'s stack, not in the EP: most
 * batches leave in one sendmsg(), and an idle EP then holds no scratch
 * (issue #15: memory per held connection).  Only when sendmsg() leaves
 * part of it does the rest move into the EP's spill buffer (tx_spill():
 * the scratch copied, the iovecs into it rebased, those into consumer
 * memory kept), allocated at the first EAGAIN of a busy spell and freed
 * once the EP has nothing left to send.  So the batch on the wire is the
 * same, byte for byte, as when it lived in the EP.
 *
 * A Read Response's payload iovecs point into registered memory that the
 * kernel reads only in sendmsg(), so the batch holds the LMRs they name
 * (tcp_mem_hold(), at most TX_HOLDS) until it is all in the socket or the
 * connection is flushed: rapt_lmr_free() waits for that, and never lets
 * the peer read memory the consumer has freed.  A send or write needs no
 * hold: its buffer is the consumer's until the WR completes.
 *
 * Messages never interleave on the wire: one is finished before the next
 * starts.  Priority at message boundaries: the RTR, Read Responses (in
 * Read Request order), then the send queue in post order.  A read or a
 * FENCE WR waits at the head of the untransmitted part of the send queue
 * while ORD is used up (or, for FENCE, while any read is outstanding).
 *
 * Completion: a send or write is done when its last byte is in the
 * socket (what siw does: iWARP has no acknowledgement), a read when the
 * last Read Response segment is placed.  WRs complete in post order from
 * the head of the send queue.
 *
 * The fast path: a send of at most TX_FAST_MAX bytes posted while the
 * transmit side is idle is built and written by the post itself
 * (tx_fast_send()) as the one-FPDU batch the general path would make,
 * and completes without entering the send queue; if the socket takes
 * less, the WR and the rest of its batch join the general path.
 */
#include "config.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "tcp.h"

#define TX_IOV		32	/* iovecs per sendmsg */
#define TX_SCRATCH	1024	/* headers and trailers of one batch */
#define TX_COPY_MAX	64	/* payloads copied next to their header */
#define TX_SMALL	64	/* payload bytes one FPDU holds whatever the
				 * MSS (payload_max's floor) */
/* Worst FPDU header (a Read Request) plus the worst trailer. */
#define TX_FPDU_CTL	(TCP_MPA_LEN_SIZE + TCP_RDMAP_RREQ_HDR_LEN + \
			 TCP_FPDU_TRAILER_MAX)
#define TX_TERM_MAX	(TCP_FPDU_HDR_MAX + TCP_FPDU_TRAILER_MAX)
#define TX_WRQ_MIN	4	/* initial ring slots: a held, idle
				 * connection costs 4 slots, a busy one
				 * grows its ring once */
#define TX_TERM_WAIT_MS	100	/* how long a Terminate may wait to go out */
#define TX_HOLDS	4	/* LMRs a batch's Read Responses may hold */
#define TX_READ_WAIT_MIN 2	/* reads on the wire before a new one waits
				 * for the receive path (read_may_wait()) */

#ifdef RAPT_DEBUG
#define TX_DEBUG 1		/* check every SGE at post time */
#else
#define TX_DEBUG 0
#endif

/* An inbound RDMA Read Request being answered. */
struct tcp_rresp {
	uint32_t src_stag;
	uint32_t size;
	uint32_t done;
	uint32_t sink_stag;
	uint64_t src_to;
	uint64_t sink_to;
};

enum tx_cur {
	TX_CUR_NONE = 0,	/* at a message boundary */
	TX_CUR_SQ,		/* the WR at sq_next */
	TX_CUR_RRESP,		/* the IRQ entry at irq_built */
};

/*
 * A batch: FPDU headers, trailers and small payloads in the scratch, and
 * the iovecs over them and the payloads; iov[iov_first..iov_n) is still
 * to write.  The scratch comes first so that no payload can follow it in
 * memory and be merged into a scratch iovec (iov_add()).
 */
struct tx_batch {
	uint8_t scratch[TX_SCRATCH];
	struct iovec iov[TX_IOV];
	uint32_t iov_first, iov_n;
	uint32_t used;			/* scratch bytes */
};

struct tcp_tx {
	/* The batch being built and written: tcp_tx_progress()'s own, on
	 * its stack, or @spill, which holds a batch that sendmsg() took in
	 * part until EPOLLOUT.  Only tcp_tx_progress() sets it. */
	struct tx_batch *b;
	struct tx_batch *spill;		/* allocated at the first EAGAIN of a
					 * busy spell, freed when idle */
	bool pending;			/* a batch waits in @spill */
	bool more;			/* the builder stopped at a limit */
	bool batch_rresp;		/* the batch carries Read Response data */
	uint32_t batch_sq;		/* sq seq: WRs before it end here */
	uint32_t batch_irq;		/* IRQ entries that end here */
	/* LMRs the batch's Read Response payloads point into. */
	struct tcp_stag_slot *hold[TX_HOLDS];
	uint32_t nhold;

	uint8_t cur;			/* enum tx_cur */
	uint32_t sq_next;		/* next WR to transmit (or current) */
	uint32_t sq_marked;		/* WRs before it are marked sent */

	uint32_t msn_send, msn_rreq, msn_term;
	uint32_t sink_base, sink_n;
	uint8_t rtr;			/* RTR to send, TCP_MPA_RTR_* */
	bool rtr_rresp;			/* Read RTR response outstanding */
	bool drained_told;
	bool term_pending;		/* a fatal error found while building */
	struct tcp_term term;

	/* Outstanding reads (send queue seqs), oldest first; ORD long. */
	uint32_t *orq;
	uint32_t orq_cap, orq_head, orq_count;

	/* Inbound Read Requests, oldest first; the first irq_built have
	 * their whole response in a batch. */
	struct tcp_rresp *irq;
	uint32_t irq_cap, irq_head, irq_count, irq_built;

};

/* ------------------------------------------------------------------ */
/* WR queues                                                           */
/* ------------------------------------------------------------------ */

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/**
 * tcp_wrq_init - set up a WR ring
 * @q: the ring
 * @depth: most WRs it will hold
 * @nsge: SGEs per WR
 * @inline_len: inline bytes per WR
 *
 * Return: 0, RAPT_ENOMEM.
 */
int tcp_wrq_init(struct tcp_wrq *q, uint32_t depth, uint32_t nsge,
		 uint32_t inline_len)
{
	uint32_t cap = pow2_at_least(depth ? depth : 1);

	memset(q, 0, sizeof(*q));
	q->nsge = nsge;
	q->stride = (uint32_t)(sizeof(struct tcp_wr) +
			       nsge * sizeof(struct rapt_sge) +
			       ((inline_len + 7) & ~7u));
	q->max = depth ? depth : 1;
	q->cap = cap < TX_WRQ_MIN ? cap : TX_WRQ_MIN;
	q->slots = rapt_zalloc(q->cap, q->stride);
	if (!q->slots)
		return RAPT_ENOMEM;
	return 0;
}

/**
 * tcp_wrq_fini - free a WR ring
 * @q: the ring
 */
void tcp_wrq_fini(struct tcp_wrq *q)
{
	free(q->slots);
	free(q->old);
	q->slots = NULL;
	q->old = NULL;
}

/**
 * tcp_wrq_reap - free an outgrown array once nothing points into it
 * @q: the ring
 */
void tcp_wrq_reap(struct tcp_wrq *q)
{
	free(q->old);
	q->old = NULL;
}

static int wrq_grow(struct tcp_wrq *q)
{
	uint32_t cap = q->cap * 2, seq;
	uint8_t *n = malloc((size_t)cap * q->stride);

	if (!n)
		return RAPT_ENOMEM;
	for (seq = q->head; seq != q->tail; seq++)
		memcpy(n + (size_t)(seq & (cap - 1)) * q->stride,
		       tcp_wrq_at(q, seq), q->stride);
	/* Only the array a pending batch was built from must survive. */
	if (q->old)
		free(q->slots);
	else
		q->old = q->slots;
	q->slots = n;
	q->cap = cap;
	return 0;
}

/**
 * tcp_wrq_reserve - the slot at the tail, growing the ring if needed
 * @q: the ring
 * @err: RAPT_ENOSPC or RAPT_ENOMEM when NULL is returned
 *
 * The caller fills the slot and then counts it with q->tail++.
 */
struct tcp_wr *tcp_wrq_reserve(struct tcp_wrq *q, int *err)
{
	uint32_t n = tcp_wrq_count(q);

	if (n >= q->max) {
		*err = RAPT_ENOSPC;
		return NULL;
	}
	if (n == q->cap) {
		*err = wrq_grow(q);
		if (*err)
			return NULL;
	}
	return tcp_wrq_at(q, q->tail);
}

/* ------------------------------------------------------------------ */
/* Set-up and tear-down                                                */
/* ------------------------------------------------------------------ */

/* The batch's bytes are all in the socket, or will never be sent. */
static void tx_unhold(struct tcp_tx *tx)
{
	while (tx->nhold)
		tcp_mem_put(tx->hold[--tx->nhold]);
}

/* Nothing waits in the spill buffer: give it back. */
static void tx_unspill(struct tcp_tx *tx)
{
	free(tx->spill);
	tx->spill = NULL;
	tx->b = NULL;
}

/* Unpredictable enough for a sink STag base: xorshift32, seeded once per
 * thread from getrandom() (not a syscall per EP).  Initial-exec TLS, as
 * every provider's (providers/util/engine.c). */
static uint32_t tx_random(void)
{
	static __thread uint32_t x __attribute__((tls_model("initial-exec")));

	if (!x && (getrandom(&x, sizeof(x), GRND_NONBLOCK) != sizeof(x) ||
		   !x))
		x = (uint32_t)(uintptr_t)&x * 2654435761u | 1;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

/**
 * tcp_dto_init - allocate an EP's data-path state (at ep_create)
 * @ep: the EP, with ep->attr filled in
 *
 * Return: 0, RAPT_ENOMEM.
 */
int tcp_dto_init(struct tcp_ep *ep)
{
	struct tcp_tx *tx;
	int ret;

	tx = rapt_zalloc(1, sizeof(*tx));
	if (!tx)
		goto err_nomem;
	ep->tx = tx;
	tx->msn_send = 1;
	tx->msn_rreq = 1;
	tx->msn_term = 1;
	tx->sink_base = tx_random();
	ret = tcp_wrq_init(&ep->sq, ep->attr.max_send, ep->attr.max_send_sge,
			   ep->attr.max_inline);
	if (ret)
		goto err_nomem;
	ret = tcp_wrq_init(&ep->rq, ep->attr.max_recv, ep->attr.max_recv_sge,
			   0);
	if (ret)
		goto err_nomem;
	ret = tcp_rx_init(ep);
	if (ret)
		goto err_nomem;
	return 0;

err_nomem:
	tcp_dto_fini(ep);
	tcp_err("out of memory for an EP's queues");
	return RAPT_ENOMEM;
}

/**
 * tcp_dto_fini - free an EP's data-path state (at ep_free)
 * @ep: the EP
 */
void tcp_dto_fini(struct tcp_ep *ep)
{
	tcp_rx_fini(ep);
	tcp_wrq_fini(&ep->sq);
	tcp_wrq_fini(&ep->rq);
	if (ep->tx) {
		tx_unhold(ep->tx);
		tx_unspill(ep->tx);
		free(ep->tx->irq);
		free(ep->tx->orq);
	}
	free(ep->tx);
	ep->tx = NULL;
}

/**
 * tcp_dto_footprint - bytes of data-path memory an EP holds now
 * @ep: the EP
 */
size_t tcp_dto_footprint(const struct tcp_ep *ep)
{
	size_t n = tcp_rx_footprint(ep);

	if (ep->tx)
		n += sizeof(*ep->tx) +
		     (ep->tx->spill ? sizeof(*ep->tx->spill) : 0) +
		     (size_t)ep->tx->irq_cap * sizeof(struct tcp_rresp) +
		     (size_t)ep->tx->orq_cap * sizeof(uint32_t);
	n += (size_t)ep->sq.cap * ep->sq.stride;
	n += (size_t)ep->rq.cap * ep->rq.stride;
	return n;
}

/**
 * tcp_dto_start - the connection moves data from now on
 * @ep: the EP, in RTS or RTR_WAIT, with ird/ord/crc/max_ulpdu negotiated
 *
 * Sizes the inbound read queue for the negotiated IRD.  Pushes no event.
 */
void tcp_dto_start(struct tcp_ep *ep)
{
	struct tcp_tx *tx = ep->tx;
	uint32_t icap = ep->ird ? ep->ird : 1, ocap = ep->ord ? ep->ord : 1;
	struct tcp_rresp *irq;
	uint32_t *orq;

	tcp_rx_start(ep);
	if (icap > tx->irq_cap) {
		irq = rapt_zalloc(icap, sizeof(*irq));
		if (irq) {
			free(tx->irq);
			tx->irq = irq;
			tx->irq_cap = icap;
		}
	}
	if (ocap > tx->orq_cap) {
		orq = rapt_zalloc(ocap, sizeof(*orq));
		if (orq) {
			free(tx->orq);
			tx->orq = orq;
			tx->orq_cap = ocap;
		}
	}
	/* Without the memory, reads beyond what fits wait or are refused
	 * (Terminate), which is what a smaller IRD/ORD would do. */
	if (tx->irq_cap < icap || tx->orq_cap < ocap)
		tcp_warn("no memory for an IRD of %u / ORD of %u", icap, ocap);
	if (ep->state == TCP_EP_RTS)
		tcp_tx_progress(ep);
}

/* ------------------------------------------------------------------ */
/* Completion                                                          */
/* ------------------------------------------------------------------ */

/* Complete send queue WRs from the head while they are done. */
static void tx_retire(struct tcp_ep *ep)
{
	struct tcp_wr *wr;

	while ((wr = tcp_wrq_head(&ep->sq)) && (wr->flags & TCP_WR_DONE)) {
		if (!(wr->flags & RAPT_POST_SUPPRESS))
			tcp_complete(ep, ep->req_evd, wr, RAPT_DTO_SUCCESS,
				     wr->len, 0, 0);
		ep->sq.head++;
	}
}

static uint32_t wr_status(const struct tcp_wr *wr)
{
	uint32_t s = (wr->flags & TCP_WR_ERR_MASK) >> TCP_WR_ERR_SHIFT;

	return s ? s : RAPT_DTO_FLUSHED;
}

/**
 * tcp_dto_flush - complete every outstanding WR (called by the CM before
 * it reports DISCONNECTED or BROKEN)
 * @ep: the EP, locked
 *
 * Send queue then receive queue, each in post order; a WR marked with an
 * error (Terminate, local protection) completes with it, the others
 * FLUSHED.  Nothing is transmitted afterwards.
 */
void tcp_dto_flush(struct tcp_ep *ep)
{
	struct tcp_tx *tx = ep->tx;
	struct tcp_wr *wr;

	while ((wr = tcp_wrq_head(&ep->sq))) {
		tcp_complete(ep, ep->req_evd, wr, wr_status(wr), 0, 0, 0);
		ep->sq.head++;
	}
	while ((wr = tcp_wrq_head(&ep->rq))) {
		tcp_complete(ep, ep->recv_evd, wr, wr_status(wr), wr->done, 0,
			     0);
		ep->rq.head++;
	}
	tx->pending = false;
	tx_unhold(tx);
	tx_unspill(tx);
	tx->cur = TX_CUR_NONE;
	tx->sq_next = tx->sq_marked = ep->sq.tail;
	tx->orq_count = 0;
	tx->irq_count = tx->irq_built = 0;
	tx->rtr = 0;
	tx->rtr_rresp = false;
	tx->term_pending = false;
	tcp_wrq_reap(&ep->sq);
}

/* ------------------------------------------------------------------ */
/* Posting                                                             */
/* ------------------------------------------------------------------ */

static uint64_t sgl_bytes(const struct rapt_sge *sgl, uint32_t nsge)
{
	uint64_t n = 0;
	uint32_t i;

	for (i = 0; i < nsge; i++)
		n += sgl[i].length;
	return n;
}

/* Debug builds check keys at post time (release: in the completion). */
static int post_debug_check(struct tcp_ep *ep, const struct rapt_sge *sgl,
			    uint32_t nsge, uint32_t need, const char *what)
{
	if (!TX_DEBUG || !tcp_sge_check(ep->ia, ep->pz, sgl, nsge, need))
		return 0;
	rapt_prov_set_error("%s: an SGE has a bad lkey, is outside its "
			    "region or lacks local write", what);
	return RAPT_EINVAL;
}

static void wr_fill(struct tcp_wrq *q, struct tcp_wr *wr, uint8_t op,
		    const struct rapt_sge *sgl, uint32_t nsge, uint64_t cookie,
		    uint32_t flags, uint64_t len)
{
	wr->cookie = cookie;
	wr->op = op;
	wr->flags = (uint16_t)(flags & (RAPT_POST_SUPPRESS |
					RAPT_POST_SOLICITED |
					RAPT_POST_FENCE | RAPT_POST_INLINE));
	wr->len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	wr->done = 0;
	wr->msn = 0;
	wr->aux = 0;
	wr->raddr = 0;
	wr->rkey = 0;
	if (flags & RAPT_POST_INLINE) {
		uint8_t *d = tcp_wr_inline(q, wr);
		uint32_t i;

		for (i = 0; i < nsge; i++) {
			memcpy(d, (void *)(uintptr_t)sgl[i].addr,
			       sgl[i].length);
			d += sgl[i].length;
		}
		wr->nsge = 0;
	} else {
		if (nsge)
			memcpy(wr->sge, sgl, nsge * sizeof(*sgl));
		wr->nsge = (uint8_t)nsge;
	}
}

/**
 * tcp_wrq_push_recv - queue a receive at the tail of a ring
 * @q: the EP's receive ring, or an SRQ's
 * @sgl: scatter list
 * @nsge: its length
 * @cookie: for the completion
 * @err: RAPT_ENOSPC (the ring holds its depth) or RAPT_ENOMEM on failure
 *
 * Return: the WR, or NULL.
 */
struct tcp_wr *tcp_wrq_push_recv(struct tcp_wrq *q, const struct rapt_sge *sgl,
				 uint32_t nsge, uint64_t cookie, int *err)
{
	struct tcp_wr *wr = tcp_wrq_reserve(q, err);

	if (!wr)
		return NULL;
	wr_fill(q, wr, RAPT_OP_RECV, sgl, nsge, cookie, 0,
		sgl_bytes(sgl, nsge));
	q->tail++;
	tcp_wrq_reap(q);
	return wr;
}

/**
 * tcp_post_recv - the post_recv op
 *
 * Valid in every state; on a closed EP the receive completes FLUSHED at
 * once.  Return: 0, RAPT_ENOSPC, RAPT_ENOMEM, RAPT_EINVAL (debug builds:
 * a bad SGE).
 */
int tcp_post_recv(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		  uint64_t cookie)
{
	struct tcp_ep *ep = pep;
	struct tcp_wr *wr;
	int ret = 0;

	rapt_lock(&ep->lock);
	ret = post_debug_check(ep, sgl, nsge, RAPT_MEM_LOCAL_WRITE,
			       "rapt_ep_post_recv");
	if (ret)
		goto out;
	wr = tcp_wrq_push_recv(&ep->rq, sgl, nsge, cookie, &ret);
	if (!wr)
		goto out;
	if (ep->state == TCP_EP_CLOSED) {
		tcp_complete(ep, ep->recv_evd, wr, RAPT_DTO_FLUSHED, 0, 0, 0);
		ep->rq.head++;
	}
out:
	rapt_unlock(&ep->lock);
	return ret;
}

/*
 * Whether a read posted now may wait for the EP's next receive pass
 * instead of being written at once: TX_READ_WAIT_MIN reads or more are on
 * the wire, so its response comes after theirs whatever happens, and the
 * first of theirs to arrive, or the consumer's next look at the EP,
 * whichever comes first, runs the receive path, which writes it
 * (tcp_tx_flush()).  A consumer that streams reads then writes its
 * requests a few to a system call rather than one each.
 */
static bool read_may_wait(const struct tcp_ep *ep)
{
	return ep->tx->orq_count >= TX_READ_WAIT_MIN &&
	       !rapt_engine_on_thread(ep->ia->eng);
}

/* Count in the WR just filled at the send queue's tail; transmit, unless
 * @may_wait (read_may_wait()). */
static void sq_push(struct tcp_ep *ep, bool may_wait)
{
	ep->sq.tail++;
	if (ep->sends_held)
		return;
	if (may_wait) {
		ep->reads_waiting = true;
		return;
	}
	tcp_tx_progress(ep);
}

static bool tx_fast_ok(const struct tcp_ep *ep, uint32_t flags,
		       uint64_t len);
static bool tx_fast_send(struct tcp_ep *ep, const struct rapt_sge *sgl,
			 uint32_t nsge, uint64_t cookie, uint32_t flags,
			 uint32_t aux, uint32_t len, int *ret);

/* Queue one send-queue WR and start transmitting. */
static int post_sq(struct tcp_ep *ep, uint8_t op, const struct rapt_sge *sgl,
		   uint32_t nsge, uint64_t cookie, uint32_t flags,
		   uint64_t raddr, uint32_t rkey, uint32_t aux,
		   const char *what)
{
	uint64_t len = sgl_bytes(sgl, nsge);
	struct tcp_wr *wr;
	int ret = 0;

	if (len > TCP_MAX_MSG) {
		rapt_prov_set_error("%s: %llu bytes exceed %llu", what,
				    (unsigned long long)len, TCP_MAX_MSG);
		return RAPT_ELENGTH;
	}
	rapt_lock(&ep->lock);
	if (ep->state != TCP_EP_RTS) {
		ret = RAPT_ESTATE;
		goto out;
	}
	if (op == RAPT_OP_RDMA_READ && !ep->ord) {
		rapt_prov_set_error("%s: the connection negotiated ORD 0",
				    what);
		ret = RAPT_ENOTSUP;
		goto out;
	}
	if (!(flags & RAPT_POST_INLINE)) {
		ret = post_debug_check(ep, sgl, nsge,
				       op == RAPT_OP_RDMA_READ ?
				       RAPT_MEM_LOCAL_WRITE : 0, what);
		if (ret)
			goto out;
	}
	if (op == RAPT_OP_SEND && tx_fast_ok(ep, flags, len) &&
	    tx_fast_send(ep, sgl, nsge, cookie, flags, aux, (uint32_t)len,
			 &ret))
		goto out;
	wr = tcp_wrq_reserve(&ep->sq, &ret);
	if (!wr)
		goto out;
	wr_fill(&ep->sq, wr, op, sgl, nsge, cookie, flags, len);
	if (flags & RAPT_PROV_POST_INVALIDATE)
		wr->flags |= TCP_WR_INVALIDATE;
	wr->raddr = raddr;
	wr->rkey = rkey;
	wr->aux = aux;
	sq_push(ep, op == RAPT_OP_RDMA_READ && read_may_wait(ep));
out:
	rapt_unlock(&ep->lock);
	return ret;
}

/* A bind or unbind: a WR that puts nothing on the wire. */
static bool wr_local(const struct tcp_wr *wr)
{
	return wr->op == RAPT_OP_RMR_BIND || wr->op == RAPT_OP_RMR_UNBIND;
}

/**
 * tcp_rmr_bind - the rmr_bind op (see struct rapt_prov_ops)
 *
 * The window changes now, under the EP's lock; the WR only carries the
 * completion, so that it comes in order with the send queue (and after
 * the EP's reads with RAPT_POST_FENCE).  Return: 0, RAPT_ESTATE,
 * RAPT_ENOSPC, RAPT_ENOMEM.
 */
int tcp_rmr_bind(void *pep, void *prmr, void *plmr, uint64_t addr,
		 uint64_t length, uint32_t access, uint64_t cookie,
		 uint32_t flags, uint32_t *rkey)
{
	struct tcp_ep *ep = pep;
	struct tcp_wr *wr;
	int ret = 0;

	rapt_lock(&ep->lock);
	if (ep->state != TCP_EP_RTS) {
		ret = RAPT_ESTATE;
		goto out;
	}
	wr = tcp_wrq_reserve(&ep->sq, &ret);
	if (!wr)
		goto out;
	tcp_mw_bind(prmr, plmr, addr, length, access, rkey);
	wr_fill(&ep->sq, wr, plmr ? RAPT_OP_RMR_BIND : RAPT_OP_RMR_UNBIND,
		NULL, 0, cookie, flags & ~RAPT_POST_INLINE, 0);
	sq_push(ep, false);
out:
	rapt_unlock(&ep->lock);
	return ret;
}

/** tcp_post_send - the post_send op (see struct rapt_prov_ops) */
int tcp_post_send(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		  uint64_t cookie, uint32_t flags, uint32_t inv_rkey)
{
	return post_sq(pep, RAPT_OP_SEND, sgl, nsge, cookie, flags, 0, 0,
		       inv_rkey, "rapt_ep_post_send");
}

/** tcp_post_write - the post_write op */
int tcp_post_write(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		   uint64_t cookie, uint64_t raddr, uint32_t rkey,
		   uint32_t flags)
{
	return post_sq(pep, RAPT_OP_RDMA_WRITE, sgl, nsge, cookie, flags,
		       raddr, rkey, 0, "rapt_ep_post_write");
}

/** tcp_post_read - the post_read op */
int tcp_post_read(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		  uint64_t cookie, uint64_t raddr, uint32_t rkey,
		  uint32_t flags)
{
	return post_sq(pep, RAPT_OP_RDMA_READ, sgl, nsge, cookie,
		       flags & ~RAPT_POST_INLINE, raddr, rkey, 0,
		       "rapt_ep_post_read");
}

/**
 * tcp_tx_rtr - send the zero-length RTR (active side, after the reply)
 * @ep: the EP, locked, with ep->crc negotiated
 * @rtr: TCP_MPA_RTR_WRITE or TCP_MPA_RTR_READ
 *
 * The RTR goes out before anything else; it is never completed to the
 * consumer.  A Read RTR takes an ORD slot until its zero-length Read
 * Response comes back (tcp_rx.c swallows it).  tcp_conn.c repeats a
 * Write RTR through here; a repeat never replaces an RTR not yet sent.
 *
 * Return: 0, RAPT_EINVAL for another @rtr.
 */
int tcp_tx_rtr(struct tcp_ep *ep, uint8_t rtr)
{
	if (rtr != TCP_MPA_RTR_WRITE && rtr != TCP_MPA_RTR_READ)
		return RAPT_EINVAL;
	if (!ep->tx->rtr)	/* a repeat never replaces the RTR itself */
		ep->tx->rtr = rtr;
	tcp_tx_progress(ep);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Batch building                                                      */
/* ------------------------------------------------------------------ */

static uint32_t ord_used(const struct tcp_tx *tx)
{
	return tx->orq_count + tx->rtr_rresp;
}

/*
 * ULPDU bytes per FPDU so that one FPDU (length, ULPDU, pad, CRC) fills
 * one MSS, as MPA asks: MULPDU = EMSS - 6, rounded down so the padded
 * FPDU still fits.  1442 at MSS 1448.
 */
static uint32_t sock_max_ulpdu(int fd)
{
	socklen_t len = sizeof(int);
	int mss = 0;
	uint32_t m;

	if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) || mss < 128)
		mss = 536;
	m = mss > 65535 ? 65535 : (uint32_t)mss;
	m = ((m - TCP_MPA_CRC_SIZE) & ~3u) - TCP_MPA_LEN_SIZE;
	return m > TCP_FPDU_ULPDU_MAX ? TCP_FPDU_ULPDU_MAX : m;
}

/*
 * Payload bytes for the next FPDU of a message with @left to go.  The MSS
 * is read on the first message that could need more than one FPDU: a
 * connection that only ever sends small messages (or none) never asks.
 */
static uint32_t payload_max(struct tcp_ep *ep, int hdr, uint32_t left)
{
	uint32_t u;

	if (ep->mss_due && left > TX_SMALL) {
		ep->max_ulpdu = sock_max_ulpdu(ep->io.fd);
		ep->mss_due = false;
	}
	u = ep->max_ulpdu;
	if (!u || u > TCP_FPDU_ULPDU_MAX)
		u = TCP_FPDU_ULPDU_MAX;
	if (u < (uint32_t)hdr + 64)
		u = (uint32_t)hdr + 64;
	return (u - (uint32_t)hdr) & ~3u;
}

static bool sq_may_run(const struct tcp_ep *ep)
{
	return (ep->state == TCP_EP_RTS || ep->state == TCP_EP_CLOSING) &&
	       !ep->sends_held;
}

/* May the WR at sq_next start now (ORD, FENCE)? */
static bool sq_next_ready(const struct tcp_ep *ep)
{
	const struct tcp_tx *tx = ep->tx;
	const struct tcp_wr *wr;

	if (tx->sq_next == ep->sq.tail || !sq_may_run(ep))
		return false;
	wr = tcp_wrq_at(&ep->sq, tx->sq_next);
	if ((wr->flags & RAPT_POST_FENCE) && ord_used(tx))
		return false;
	if (wr->op == RAPT_OP_RDMA_READ &&
	    (ord_used(tx) >= ep->ord || tx->orq_count >= tx->orq_cap))
		return false;
	return true;
}

/* Is there a message the builder could start or continue now? */
static bool tx_work(const struct tcp_ep *ep)
{
	const struct tcp_tx *tx = ep->tx;

	if (tx->term_pending)
		return false;
	return tx->cur != TX_CUR_NONE || tx->rtr ||
	       tx->irq_built < tx->irq_count || sq_next_ready(ep);
}

static void iov_add(struct tcp_tx *tx, const void *p, size_t len)
{
	struct tx_batch *b = tx->b;
	struct iovec *last = b->iov_n ? &b->iov[b->iov_n - 1] : NULL;

	if (!len)
		return;
	if (last && (uint8_t *)last->iov_base + last->iov_len == p) {
		last->iov_len += len;
		return;
	}
	b->iov[b->iov_n].iov_base = (void *)p;
	b->iov[b->iov_n].iov_len = len;
	b->iov_n++;
}

/* Put a header into the scratch; returns its CRC seed. */
static uint32_t put_hdr(struct tcp_ep *ep, const struct tcp_ddp_hdr *h,
			uint32_t payload, uint32_t *ulpdu)
{
	struct tcp_tx *tx = ep->tx;
	struct tx_batch *b = tx->b;
	uint8_t *p = b->scratch + b->used;
	int n = tcp_ddp_build_hdr(h, payload, p, TX_SCRATCH - b->used);

	/* Cannot fail: opcodes are ours and sizes were bounded. */
	b->used += (uint32_t)n;
	iov_add(tx, p, (size_t)n);
	*ulpdu = (uint32_t)n - TCP_MPA_LEN_SIZE + payload;
	return ep->crc ? tcp_crc32c(0, p, (size_t)n) : 0;
}

static void put_trailer(struct tcp_ep *ep, uint32_t ulpdu, uint32_t crc)
{
	struct tcp_tx *tx = ep->tx;
	struct tx_batch *b = tx->b;
	uint8_t *p = b->scratch + b->used;
	unsigned int n = tcp_fpdu_trailer(ulpdu, ep->crc, crc, p);

	b->used += n;
	iov_add(tx, p, n);
}

/* Record a fatal error found while building; it goes out as a Terminate
 * once the batch built so far is written. */
static void tx_fatal(struct tcp_ep *ep, uint8_t layer, uint8_t etype,
		     uint8_t ecode)
{
	struct tcp_tx *tx = ep->tx;

	memset(&tx->term, 0, sizeof(tx->term));
	tx->term.layer = layer;
	tx->term.etype = etype;
	tx->term.ecode = ecode;
	tx->term_pending = true;
}

/*
 * A small payload is copied into the scratch right after its header, so
 * a small message goes out as one contiguous iovec (the kernel handles
 * one segment faster than three).  Returns where the bytes now are.
 */
static const uint8_t *tx_small(struct tcp_tx *tx, const uint8_t *p,
			       uint32_t n)
{
	struct tx_batch *b = tx->b;
	uint8_t *d = b->scratch + b->used;

	if (n > TX_COPY_MAX ||
	    b->used + n + TCP_FPDU_TRAILER_MAX > TX_SCRATCH)
		return p;
	memcpy(d, p, n);
	b->used += n;
	return d;
}

/*
 * Add iovecs for @len payload bytes of @wr from byte @off, checking every
 * SGE's key and bounds (pinned while the CRC reads it).  Returns the CRC
 * or sets *@bad.
 */
static uint32_t put_wr_payload(struct tcp_ep *ep, struct tcp_wr *wr,
			       uint32_t off, uint32_t len, uint32_t crc,
			       bool *bad)
{
	struct tcp_tx *tx = ep->tx;
	struct tcp_stag_slot *pin;
	const uint8_t *p;
	uint32_t i, n;

	if (wr->flags & RAPT_POST_INLINE) {
		p = tcp_wr_inline(&ep->sq, wr) + off;
		iov_add(tx, tx_small(tx, p, len), len);
		return ep->crc ? tcp_crc32c(crc, p, len) : crc;
	}
	for (i = 0; i < wr->nsge && len; i++) {
		if (off >= wr->sge[i].length) {
			off -= wr->sge[i].length;
			continue;
		}
		n = wr->sge[i].length - off;
		if (n > len)
			n = len;
		p = tcp_mem_lkey(ep->ia, ep->pz, wr->sge[i].lkey,
				 wr->sge[i].addr + off, n, 0, &pin);
		if (!p) {
			*bad = true;
			return 0;
		}
		if (ep->crc)
			crc = tcp_crc32c(crc, p, n);
		p = tx_small(tx, p, n);
		tcp_mem_put(pin);
		iov_add(tx, p, n);
		len -= n;
		off = 0;
	}
	return crc;
}

static uint8_t send_op(bool se, bool inv)
{
	if (inv)
		return se ? TCP_RDMAP_SEND_SE_INV : TCP_RDMAP_SEND_INV;
	return se ? TCP_RDMAP_SEND_SE : TCP_RDMAP_SEND;
}

static uint8_t send_opcode(const struct tcp_wr *wr)
{
	return send_op(wr->flags & RAPT_POST_SOLICITED,
		       wr->flags & TCP_WR_INVALIDATE);
}

/* A WR starts: number it and, for a read, put it in the ORQ. */
static void sq_start(struct tcp_ep *ep, struct tcp_wr *wr)
{
	struct tcp_tx *tx = ep->tx;

	tx->cur = TX_CUR_SQ;
	if (wr->op == RAPT_OP_SEND) {
		wr->msn = tx->msn_send++;
	} else if (wr->op == RAPT_OP_RDMA_READ) {
		wr->msn = tx->msn_rreq++;
		do {
			wr->aux = tx->sink_base + ++tx->sink_n;
		} while (wr->aux <= TCP_RTR_STAG);
		tx->orq[(tx->orq_head + tx->orq_count) % tx->orq_cap] =
			tx->sq_next;
		tx->orq_count++;
		wr->flags |= TCP_WR_QUEUED;
	}
}

/* One FPDU of the current send queue WR. */
static void put_sq_fpdu(struct tcp_ep *ep)
{
	struct tcp_tx *tx = ep->tx;
	struct tx_batch *b = tx->b;
	struct tcp_wr *wr = tcp_wrq_at(&ep->sq, tx->sq_next);
	struct tcp_ddp_hdr h = { 0 };
	uint32_t n = 0, ulpdu, crc, room, iov_n, used;
	size_t last_len;
	bool bad = false;

	if (wr->op == RAPT_OP_RDMA_READ) {
		h.opcode = TCP_RDMAP_READ_REQ;
		h.msn = wr->msn;
		h.rreq.sink_stag = wr->aux;
		h.rreq.size = wr->len;
		h.rreq.src_stag = wr->rkey;
		h.rreq.src_to = wr->raddr;
	} else {
		if (wr->op == RAPT_OP_RDMA_WRITE) {
			h.opcode = TCP_RDMAP_WRITE;
			h.stag = wr->rkey;
			h.to = wr->raddr + wr->done;
		} else {
			h.opcode = send_opcode(wr);
			h.msn = wr->msn;
			h.mo = wr->done;
			h.inv_stag = wr->aux;
		}
		n = wr->len - wr->done;
		room = payload_max(ep, tcp_ddp_hdr_size(h.opcode), n);
		if (n > room)
			n = room;
	}
	h.last = wr->op == RAPT_OP_RDMA_READ || wr->done + n == wr->len;
	iov_n = b->iov_n;
	last_len = iov_n ? b->iov[iov_n - 1].iov_len : 0;
	used = b->used;
	crc = put_hdr(ep, &h, n, &ulpdu);
	if (n)
		crc = put_wr_payload(ep, wr, wr->done, n, crc, &bad);
	if (bad) {
		/* Take the FPDU back out of the batch. */
		b->iov_n = iov_n;
		if (iov_n)
			b->iov[iov_n - 1].iov_len = last_len;
		b->used = used;
		tcp_wr_set_err(wr, RAPT_DTO_LOCAL_PROTECTION);
		tx_fatal(ep, TCP_TERM_LAYER_RDMAP, TCP_TERM_RDMAP_CATASTROPHIC,
			 0);
		return;
	}
	put_trailer(ep, ulpdu, crc);
	wr->done += n;
	if (h.last) {
		tx->cur = TX_CUR_NONE;
		tx->sq_next++;
	}
}

/* Keep @pin's memory until the batch has left (tx_unhold()). */
static void tx_hold(struct tcp_ep *ep, struct tcp_stag_slot *pin)
{
	struct tcp_tx *tx = ep->tx;

	pin = tcp_mem_hold(ep->ia, pin);
	if (tx->nhold && tx->hold[tx->nhold - 1] == pin)
		tcp_mem_put(pin);	/* held already */
	else
		tx->hold[tx->nhold++] = pin;
}

/* One FPDU of the Read Response being sent. */
static void put_rresp_fpdu(struct tcp_ep *ep)
{
	struct tcp_tx *tx = ep->tx;
	struct tcp_rresp *r = &tx->irq[(tx->irq_head + tx->irq_built) %
				       tx->irq_cap];
	struct tcp_ddp_hdr h = { .opcode = TCP_RDMAP_READ_RESP };
	struct tcp_stag_slot *pin = NULL;
	uint32_t n = r->size - r->done, ulpdu, crc, room;
	uint8_t ecode = 0;
	uint8_t *p = NULL;

	room = payload_max(ep, TCP_DDP_TAGGED_HDR_LEN, n);
	if (n > room)
		n = room;
	if (n) {
		p = tcp_mem_rkey(ep->ia, ep->pz, r->src_stag,
				 r->src_to + r->done, n, RAPT_MEM_REMOTE_READ,
				 &ecode, &pin);
		if (!p) {
			/* The region went away while we answered. */
			tx_fatal(ep, TCP_TERM_LAYER_RDMAP,
				 TCP_TERM_RDMAP_PROTECTION, ecode);
			return;
		}
	}
	h.stag = r->sink_stag;
	h.to = r->sink_to + r->done;
	h.last = r->done + n == r->size;
	crc = put_hdr(ep, &h, n, &ulpdu);
	if (n) {
		if (ep->crc)
			crc = tcp_crc32c(crc, p, n);
		tx_hold(ep, pin);
		iov_add(tx, p, n);
	}
	put_trailer(ep, ulpdu, crc);
	r->done += n;
	if (h.last) {
		tx->cur = TX_CUR_NONE;
		tx->irq_built++;
	}
}

static void put_rtr(struct tcp_ep *ep)
{
	struct tcp_tx *tx = ep->tx;
	struct tx_batch *b = tx->b;
	uint8_t *p = b->scratch + b->used;
	uint32_t msn = 0;
	int n;

	if (tx->rtr == TCP_MPA_RTR_READ) {
		msn = tx->msn_rreq++;
		tx->rtr_rresp = true;
	}
	n = tcp_fpdu_build_rtr(tx->rtr, msn, ep->crc, p, TX_SCRATCH - b->used);
	tx->rtr = 0;
	if (n <= 0)
		return;
	b->used += (uint32_t)n;
	iov_add(tx, p, (size_t)n);
}

static void tx_batch_done(struct tcp_ep *ep);

/* Build the next batch; false when there is nothing to send. */
static bool tx_build(struct tcp_ep *ep)
{
	struct tcp_tx *tx = ep->tx;
	struct tx_batch *b = tx->b;

	b->iov_first = b->iov_n = 0;
	b->used = 0;
	tx->more = false;
	tx->batch_rresp = false;
	tx->batch_irq = tx->irq_built;
	while (tx_work(ep)) {
		if (b->iov_n + TCP_MAX_SGE + 2 > TX_IOV ||
		    b->used + TX_FPDU_CTL > TX_SCRATCH ||
		    tx->nhold == TX_HOLDS) {
			tx->more = true;
			break;
		}
		if (tx->cur == TX_CUR_SQ) {
			put_sq_fpdu(ep);
		} else if (tx->cur == TX_CUR_RRESP) {
			put_rresp_fpdu(ep);
			tx->batch_rresp = true;
		} else if (tx->rtr) {
			put_rtr(ep);
		} else if (tx->irq_built < tx->irq_count) {
			tx->cur = TX_CUR_RRESP;
		} else if (wr_local(tcp_wrq_at(&ep->sq, tx->sq_next))) {
			tx->sq_next++;	/* done by the post */
		} else {
			sq_start(ep, tcp_wrq_at(&ep->sq, tx->sq_next));
		}
	}
	tx->batch_sq = tx->sq_next;
	tx->batch_irq = tx->irq_built - tx->batch_irq;
	tx->pending = b->iov_n > 0;
	/* Binds and nothing else: they complete without a write. */
	if (!tx->pending && tx->sq_marked != tx->batch_sq)
		tx_batch_done(ep);
	return tx->pending;
}

/* The whole batch is in the socket: mark what it finished. */
static void tx_batch_done(struct tcp_ep *ep)
{
	struct tcp_tx *tx = ep->tx;
	struct tcp_wr *wr;

	tx->pending = false;
	tx_unhold(tx);
	for (; tx->sq_marked != tx->batch_sq; tx->sq_marked++) {
		wr = tcp_wrq_at(&ep->sq, tx->sq_marked);
		if (wr->op != RAPT_OP_RDMA_READ)
			wr->flags |= TCP_WR_DONE;
	}
	tx->irq_head = (tx->irq_head + tx->batch_irq) %
		       (tx->irq_cap ? tx->irq_cap : 1);
	tx->irq_count -= tx->batch_irq;
	tx->irq_built -= tx->batch_irq;
	tx->batch_irq = 0;
	tcp_wrq_reap(&ep->sq);
	tx_retire(ep);
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

static void tx_epollout(struct tcp_ep *ep, bool on)
{
	uint32_t ev = ep->io.events;

	if (!!(ev & EPOLLOUT) == on)
		return;
	ev = on ? ev | EPOLLOUT : ev & ~(uint32_t)EPOLLOUT;
	if (rapt_engine_mod(ep->ia->eng, &ep->io, ev))
		tcp_warn("could not %s EPOLLOUT on fd %d",
			 on ? "arm" : "disarm", ep->io.fd);
}

/* Bytes of the batch still to write. */
static size_t tx_batch_left(const struct tx_batch *b)
{
	size_t len = 0;
	uint32_t i;

	for (i = b->iov_first; i < b->iov_n; i++)
		len += b->iov[i].iov_len;
	return len;
}

/* Write the pending batch: 0 (all of it), RAPT_EAGAIN, or the socket's
 * negated errno. */
static int tx_write(struct tcp_ep *ep)
{
	struct tcp_tx *tx = ep->tx;
	struct tx_batch *b = tx->b;
	struct msghdr msg = { 0 };
	int flags = MSG_DONTWAIT | MSG_NOSIGNAL;
	ssize_t n;

	while (b->iov_first < b->iov_n) {
		msg.msg_iov = &b->iov[b->iov_first];
		msg.msg_iovlen = b->iov_n - b->iov_first;
		/* One iovec (a small message): send() spares the kernel
		 * the msghdr and iovec copies. */
		if (msg.msg_iovlen == 1)
			n = rapt_sys_send(ep->io.fd, msg.msg_iov->iov_base,
					  msg.msg_iov->iov_len, flags);
		else
			n = rapt_sys_sendmsg(ep->io.fd, &msg, flags);
		tcp_cap_iov(ep->cap, true, msg.msg_iov, msg.msg_iovlen, n);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return RAPT_EAGAIN;
			/* The socket's own error (ETIMEDOUT from the user
			 * timeout, ECONNRESET, EPIPE) is the event's
			 * prov_status. */
			n = -errno;
			tcp_info("fd %d: sendmsg: %m", ep->io.fd);
			return (int)n;
		}
		while (n > 0) {
			struct iovec *v = &b->iov[b->iov_first];

			if ((size_t)n < v->iov_len) {
				v->iov_base = (uint8_t *)v->iov_base + n;
				v->iov_len -= (size_t)n;
				break;
			}
			n -= (ssize_t)v->iov_len;
			b->iov_first++;
		}
	}
	return 0;
}

/*
 * sendmsg() took part of the batch built on the stack: move the rest into
 * the EP's spill buffer, where it waits for EPOLLOUT.  Iovecs into the
 * scratch are rebased onto the copy; those into consumer memory or a WR's
 * inline bytes stay.  Returns RAPT_EAGAIN, or -ENOMEM (the batch is lost:
 * the connection must end, as the stream is cut inside a batch).
 */
static int tx_spill(struct tcp_tx *tx)
{
	struct tx_batch *from = tx->b, *to = tx->spill;
	uintptr_t s = (uintptr_t)from->scratch, p;
	uint32_t i, n = from->iov_n - from->iov_first;

	if (!to) {
		to = malloc(sizeof(*to));
		if (!to) {
			tcp_err("out of memory for a batch the socket took "
				"in part");
			return -ENOMEM;
		}
		tx->spill = to;
	}
	memcpy(to->scratch, from->scratch, from->used);
	for (i = 0; i < n; i++) {
		to->iov[i] = from->iov[from->iov_first + i];
		p = (uintptr_t)to->iov[i].iov_base;
		if (p >= s && p < s + from->used)
			to->iov[i].iov_base = to->scratch + (p - s);
	}
	to->iov_first = 0;
	to->iov_n = n;
	to->used = from->used;
	tx->b = to;
	return RAPT_EAGAIN;
}

/* Data may go out: a connection in full operation, or the RTR (or the
 * rest of a batch) whatever the CM has set the state to meanwhile. */
static bool tx_open(const struct tcp_ep *ep)
{
	if (ep->io.fd < 0 || ep->state == TCP_EP_IDLE ||
	    ep->state == TCP_EP_CLOSED)
		return false;
	return ep->state == TCP_EP_RTS || ep->state == TCP_EP_CLOSING ||
	       ep->state == TCP_EP_RTR_WAIT || ep->tx->rtr ||
	       ep->tx->pending;
}

/* ------------------------------------------------------------------ */
/* The fast path: a lone small send                                    */
/* ------------------------------------------------------------------ */

/*
 * A send posted to an idle send queue would become a batch of its one
 * FPDU: tx_fast_send() builds that batch on the spot, without the
 * queue, the builder and the retire loop (about 1,200 instructions per
 * post before, issue #14).  The wire bytes, the MSN and the completion
 * are those the general path gives; only the payload is always copied
 * next to its header (one iovec), which the wire does not show.
 */
#define TX_FAST_MAX	TCP_MAX_INLINE	/* payload bytes, copied */

/*
 * The general path would build a batch of this send's FPDUs alone, now:
 * nothing queued, built, pending or due first (RTR, Read Responses, a
 * Terminate), no FENCE to wait for, EPOLLOUT off, no spill to free.
 */
static bool tx_fast_ok(const struct tcp_ep *ep, uint32_t flags,
		       uint64_t len)
{
	const struct tcp_tx *tx = ep->tx;

	return len <= TX_FAST_MAX && ep->sq.head == ep->sq.tail &&
	       tx->sq_next == ep->sq.tail && !tx->spill && !tx->pending &&
	       tx->cur == TX_CUR_NONE && !tx->rtr && !tx->irq_count &&
	       !tx->term_pending && !ep->sends_held && ep->io.fd >= 0 &&
	       !(ep->io.events & EPOLLOUT) &&
	       (!(flags & RAPT_POST_FENCE) || !ord_used(tx));
}

/*
 * Copy a send's @len payload bytes to @d; keys are checked as
 * put_wr_payload() checks them (inline sends: not at all, as wr_fill()).
 * False on a bad SGE.
 */
static bool tx_fast_gather(struct tcp_ep *ep, const struct rapt_sge *sgl,
			   uint32_t nsge, uint32_t flags, uint8_t *d,
			   uint32_t len)
{
	struct tcp_stag_slot *pin;
	const uint8_t *p;
	uint32_t i, n;

	for (i = 0; i < nsge && len; i++) {
		n = sgl[i].length;
		if (!n)
			continue;
		pin = NULL;
		if (flags & RAPT_POST_INLINE) {
			p = (const uint8_t *)(uintptr_t)sgl[i].addr;
		} else {
			p = tcp_mem_lkey(ep->ia, ep->pz, sgl[i].lkey,
					 sgl[i].addr, n, 0, &pin);
			if (!p)
				return false;
		}
		memcpy(d, p, n);
		tcp_mem_put(pin);
		d += n;
		len -= n;
	}
	return true;
}

/*
 * The socket took less than the whole FPDU (or failed): queue the send
 * as a WR whose FPDU is built, and let the batch, rebased into the
 * spill, wait for EPOLLOUT, as tcp_tx_progress() does with a batch it
 * built (the WR completes when the rest is in the socket); or fail the
 * connection, which flushes the WR.  The queue is empty: its tail slot
 * is free.
 */
static int tx_fast_defer(struct tcp_ep *ep, const struct rapt_sge *sgl,
			 uint32_t nsge, uint64_t cookie, uint32_t flags,
			 uint32_t aux, uint32_t msn, int ret)
{
	struct tcp_tx *tx = ep->tx;
	struct tcp_wr *wr = tcp_wrq_at(&ep->sq, ep->sq.tail);
	uint64_t len = sgl_bytes(sgl, nsge);

	wr_fill(&ep->sq, wr, RAPT_OP_SEND, sgl, nsge, cookie, flags, len);
	if (flags & RAPT_PROV_POST_INVALIDATE)
		wr->flags |= TCP_WR_INVALIDATE;
	wr->aux = aux;
	wr->msn = msn;
	wr->done = wr->len;
	ep->sq.tail++;
	tx->sq_next = tx->batch_sq = ep->sq.tail;
	tx->batch_irq = 0;
	tx->pending = true;
	if (ret == RAPT_EAGAIN)
		ret = tx_spill(tx);
	if (ret == RAPT_EAGAIN)
		tx_epollout(ep, true);
	else
		tcp_cm_fail(ep, ret);
	return 0;
}

/*
 * post_sq() for a send tx_fast_ok() let through: the one FPDU
 * put_sq_fpdu() would build goes out in one sendmsg() and the completion
 * is pushed at once.  False, with nothing changed, when the general path
 * must take the send (more than one FPDU; a bad SGE, which it reports);
 * else true, with the post's result in *@ret.
 */
static bool tx_fast_send(struct tcp_ep *ep, const struct rapt_sge *sgl,
			 uint32_t nsge, uint64_t cookie, uint32_t flags,
			 uint32_t aux, uint32_t len, int *ret)
{
	struct tcp_tx *tx = ep->tx;
	struct tcp_ddp_hdr h = { .last = true };
	struct tx_batch local;
	uint32_t n, crc = 0;
	int hlen;

	h.opcode = send_op(flags & RAPT_POST_SOLICITED,
			   flags & RAPT_PROV_POST_INVALIDATE);
	h.msn = tx->msn_send;
	h.inv_stag = aux;
	if (len > payload_max(ep, tcp_ddp_hdr_size(h.opcode), len))
		return false;
	hlen = tcp_ddp_build_hdr(&h, len, local.scratch, TX_SCRATCH);
	if (!tx_fast_gather(ep, sgl, nsge, flags, local.scratch + hlen, len))
		return false;
	n = (uint32_t)hlen + len;
	if (ep->crc)
		crc = tcp_crc32c(0, local.scratch, n);
	n += tcp_fpdu_trailer(n - TCP_MPA_LEN_SIZE, ep->crc, crc,
			      local.scratch + n);
	tx->msn_send++;
	local.iov[0].iov_base = local.scratch;
	local.iov[0].iov_len = n;
	local.iov_first = 0;
	local.iov_n = 1;
	local.used = n;
	tx->b = &local;
	tx->more = false;
	*ret = tx_write(ep);
	if (*ret) {
		*ret = tx_fast_defer(ep, sgl, nsge, cookie, flags, aux, h.msn,
				     *ret);
		return true;
	}
	tcp_cork_written(ep, false);	/* a corked tail goes out with it */
	if (!(flags & RAPT_POST_SUPPRESS)) {
		struct tcp_wr wr = { .cookie = cookie, .op = RAPT_OP_SEND };

		tcp_complete(ep, ep->req_evd, &wr, RAPT_DTO_SUCCESS, len, 0,
			     0);
	}
	return true;
}

/**
 * tcp_tx_progress - write what can be written now
 * @ep: the EP, locked
 *
 * Arms EPOLLOUT when the socket is full and disarms it when the work is
 * done; tells the CM when a graceful close has nothing left to send.
 */
void tcp_tx_progress(struct tcp_ep *ep)
{
	struct tcp_tx *tx = ep->tx;
	struct tx_batch local;
	bool large;
	int ret;

	ep->reads_waiting = false;
	while (tx_open(ep)) {
		tx->b = tx->pending ? tx->spill : &local;
		if (!tx->pending && !tx_build(ep))
			break;
		/* A stream of large batches corks the socket (tcp_cork.c);
		 * Read Responses never do: the peer's read completes only
		 * with its last byte, and its next request waits for that,
		 * so a held tail would stall the stream of reads. */
		large = !tx->more && !tx->batch_rresp &&
			tcp_cork_write(ep, tx_batch_left(tx->b));
		ret = tx_write(ep);
		if (ret == RAPT_EAGAIN && tx->b == &local)
			ret = tx_spill(tx);
		if (ret == RAPT_EAGAIN) {
			tx_epollout(ep, true);
			return;
		}
		if (ret) {
			tcp_cm_fail(ep, ret);
			return;
		}
		tx_batch_done(ep);
		if (!tx->more)
			tcp_cork_written(ep, large);
	}
	if (!tx_open(ep))
		return;
	if (tx->term_pending) {
		tx->term_pending = false;
		tcp_tx_terminate(ep, &tx->term);
		return;
	}
	tx_epollout(ep, false);
	if (tx->spill && !tx->pending)
		tx_unspill(tx);
	if (ep->state == TCP_EP_CLOSING && !tx->drained_told &&
	    tcp_tx_idle(ep)) {
		tx->drained_told = true;
		tcp_cm_tx_drained(ep);
	}
}

/**
 * tcp_tx_idle - nothing to write and no read waiting for its response
 * @ep: the EP, locked
 *
 * The Read RTR's response does not count: it is no consumer's work, and
 * our FIN need not wait for it (the RTR's settle time, tcp_conn.c, is
 * what holds a close back until the peer has spoken).
 */
bool tcp_tx_idle(struct tcp_ep *ep)
{
	const struct tcp_tx *tx = ep->tx;

	return !tx->pending && !tx_work(ep) && !tx->orq_count &&
	       !tx->irq_count &&
	       (tx->sq_next == ep->sq.tail || !sq_may_run(ep));
}

/**
 * tcp_tx_at_fpdu_end - whether what the socket got so far ends an FPDU
 * @ep: the EP, locked
 *
 * A batch holds whole FPDUs: only one written in part leaves the stream
 * inside an FPDU.
 */
bool tcp_tx_at_fpdu_end(const struct tcp_ep *ep)
{
	return !ep->tx->pending;
}

/* ------------------------------------------------------------------ */
/* Terminate                                                           */
/* ------------------------------------------------------------------ */

/* Write @len bytes, waiting up to *@ms for room; false if it cannot. */
static bool term_write(int fd, struct tcp_cap *cap, const void *buf,
		       size_t len, int *ms)
{
	const uint8_t *p = buf;
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	uint64_t t0;
	ssize_t n;

	while (len) {
		n = rapt_sys_send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		tcp_cap_io(cap, true, p, n);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return false;
		t0 = rapt_now_ns();
		if (*ms <= 0 || rapt_sys_poll(&pfd, 1, *ms) <= 0)
			return false;
		*ms -= (int)((rapt_now_ns() - t0) / 1000000);
	}
	return true;
}

/* The prov_status of the event that ends a connection we terminated. */
static int term_status(const struct tcp_term *t)
{
	return rapt_prov_status_term(false, t->layer, t->etype, t->ecode);
}

/**
 * tcp_tx_terminate - send a Terminate, then fail the connection
 * @ep: the EP, locked
 * @t: what to report (layer, type, code, copied headers)
 *
 * The rest of a partly written batch goes first (an FPDU cannot be cut),
 * waiting at most TX_TERM_WAIT_MS for socket room; then the Terminate;
 * then what the peer has already sent is discarded, so closing the
 * socket does not turn into a reset that would destroy the Terminate.
 */
void tcp_tx_terminate(struct tcp_ep *ep, const struct tcp_term *t)
{
	struct tcp_tx *tx = ep->tx;
	struct tcp_ddp_hdr h = { .opcode = TCP_RDMAP_TERMINATE, .last = true };
	struct tx_batch *b;
	uint8_t buf[TX_TERM_MAX];
	int ms = TX_TERM_WAIT_MS, n;
	uint32_t i;

	tcp_info("fd %d: sending Terminate layer %u type %u code %#x",
		 ep->io.fd, t->layer, t->etype, t->ecode);
	if (!tx_open(ep)) {
		tcp_cm_fail(ep, term_status(t));
		return;
	}
	h.msn = tx->msn_term++;
	h.term = *t;
	n = tcp_fpdu_build(&h, NULL, 0, ep->crc, buf, sizeof(buf));
	b = tx->pending ? tx->spill : NULL;
	for (i = b ? b->iov_first : 0; b && i < b->iov_n; i++)
		if (!term_write(ep->io.fd, ep->cap, b->iov[i].iov_base,
				b->iov[i].iov_len, &ms))
			break;
	if (n > 0 && (!b || i == b->iov_n))
		term_write(ep->io.fd, ep->cap, buf, (size_t)n, &ms);
	tx->pending = false;
	tx_unhold(tx);
	tcp_cork_written(ep, false);	/* a corked socket sends it now */
	while (rapt_sys_recv(ep->io.fd, NULL, 1 << 20,
			     MSG_DONTWAIT | MSG_TRUNC) > 0)
		;
	ep->term_sent = true;
	tcp_cm_fail(ep, term_status(t));
}

/* ------------------------------------------------------------------ */
/* Services for the receive path                                       */
/* ------------------------------------------------------------------ */

/** tcp_tx_read_head - see tcp.h */
struct tcp_wr *tcp_tx_read_head(struct tcp_ep *ep, bool *rtr)
{
	struct tcp_tx *tx = ep->tx;

	*rtr = tx->rtr_rresp;
	if (tx->rtr_rresp || !tx->orq_count)
		return NULL;
	return tcp_wrq_at(&ep->sq, tx->orq[tx->orq_head]);
}

/** tcp_tx_read_done - see tcp.h */
void tcp_tx_read_done(struct tcp_ep *ep)
{
	struct tcp_tx *tx = ep->tx;
	struct tcp_wr *wr;

	if (tx->rtr_rresp) {
		tx->rtr_rresp = false;
	} else if (tx->orq_count) {
		wr = tcp_wrq_at(&ep->sq, tx->orq[tx->orq_head]);
		wr->flags |= TCP_WR_DONE;
		tx->orq_head = (tx->orq_head + 1) % tx->orq_cap;
		tx->orq_count--;
		tx_retire(ep);
	}
	tcp_tx_progress(ep);
}

/** tcp_tx_rresp_queue - see tcp.h */
int tcp_tx_rresp_queue(struct tcp_ep *ep, const struct tcp_rreq *r)
{
	struct tcp_tx *tx = ep->tx;
	struct tcp_rresp *e;

	if (tx->irq_count >= tx->irq_cap || tx->irq_count >= ep->ird)
		return -1;
	e = &tx->irq[(tx->irq_head + tx->irq_count) % tx->irq_cap];
	e->src_stag = r->src_stag;
	e->src_to = r->src_to;
	e->size = r->size;
	e->done = 0;
	e->sink_stag = r->sink_stag;
	e->sink_to = r->sink_to;
	tx->irq_count++;
	return 0;
}

/* The not yet completed WR of @op whose @key field matches, oldest first. */
static struct tcp_wr *sq_find(struct tcp_ep *ep, uint8_t op, bool by_msn,
			      uint32_t key)
{
	struct tcp_wr *wr;
	uint32_t seq;

	for (seq = ep->sq.head; seq != ep->tx->sq_next; seq++) {
		wr = tcp_wrq_at(&ep->sq, seq);
		if (wr->op == op && (by_msn ? wr->msn : wr->rkey) == key)
			return wr;
	}
	if (ep->tx->cur == TX_CUR_SQ && seq != ep->sq.tail) {
		wr = tcp_wrq_at(&ep->sq, seq);
		if (wr->op == op && (by_msn ? wr->msn : wr->rkey) == key)
			return wr;
	}
	return NULL;
}

/** tcp_tx_blame - see tcp.h */
void tcp_tx_blame(struct tcp_ep *ep, const struct tcp_term *t,
		  uint32_t status)
{
	struct tcp_wr *wr = NULL;
	const uint8_t *d = t->ddp_hdr;
	bool rtr;

	if (t->hdrct & TCP_TERM_D) {
		if (d[0] & TCP_DDP_FLAG_T) {
			wr = sq_find(ep, RAPT_OP_RDMA_WRITE, false,
				     tcp_get_be32(d + 2));
		} else if (tcp_get_be32(d + 6) == TCP_DDP_QN_READ_REQ) {
			wr = sq_find(ep, RAPT_OP_RDMA_READ, true,
				     tcp_get_be32(d + 10));
		} else if (tcp_get_be32(d + 6) == TCP_DDP_QN_SEND) {
			wr = sq_find(ep, RAPT_OP_SEND, true,
				     tcp_get_be32(d + 10));
		}
	} else {
		wr = tcp_tx_read_head(ep, &rtr);
	}
	if (wr)
		tcp_wr_set_err(wr, status);
}
