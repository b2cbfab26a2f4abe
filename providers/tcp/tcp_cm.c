/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the consumer's decisions on connection requests.
 *
 * One job: the cr_accept and cr_reject ops, and the request ids they
 * find requests by.  Requests are named to the core by a 64-bit id, never
 * by address: a request whose requester goes away is cancelled and freed
 * at once, and a decision the core had already started then finds no
 * such id (RAPT_ENOTCONN) instead of freed memory.  Decisions run on the
 * engine thread, through rapt_engine_call().
 */
#include "config.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "tcp_cm.h"

/* ------------------------------------------------------------------ */
/* Request ids                                                        */
/* ------------------------------------------------------------------ */

#define CR_BUCKETS 256

/* Process-wide: cr_reject() gets only the id and must find the engine. */
static struct {
	pthread_mutex_t lock;
	uint64_t next_id;
	struct tcp_cr *bucket[CR_BUCKETS];
} cr_table = { .lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1 };

void tcp_cr_table_add(struct tcp_cr *cr)
{
	struct tcp_cr **b;

	pthread_mutex_lock(&cr_table.lock);
	cr->id = cr_table.next_id++;
	b = &cr_table.bucket[cr->id % CR_BUCKETS];
	cr->hnext = *b;
	*b = cr;
	pthread_mutex_unlock(&cr_table.lock);
}

void tcp_cr_table_del(struct tcp_cr *cr)
{
	struct tcp_cr **pp;

	if (!cr->id)
		return;
	pthread_mutex_lock(&cr_table.lock);
	for (pp = &cr_table.bucket[cr->id % CR_BUCKETS]; *pp;
	     pp = &(*pp)->hnext) {
		if (*pp == cr) {
			*pp = cr->hnext;
			break;
		}
	}
	pthread_mutex_unlock(&cr_table.lock);
	cr->id = 0;
}

/* With cr_table.lock held. */
static struct tcp_cr *cr_table_find(uint64_t id)
{
	struct tcp_cr *cr;

	for (cr = cr_table.bucket[id % CR_BUCKETS]; cr; cr = cr->hnext)
		if (cr->id == id)
			return cr;
	return NULL;
}

/* Engine thread: only this thread removes requests, so @cr stays valid. */
static struct tcp_cr *cr_lookup(uint64_t id)
{
	struct tcp_cr *cr;

	pthread_mutex_lock(&cr_table.lock);
	cr = cr_table_find(id);
	pthread_mutex_unlock(&cr_table.lock);
	return cr;
}

static struct rapt_engine *cr_engine(uint64_t id)
{
	struct rapt_engine *eng = NULL;
	struct tcp_cr *cr;

	pthread_mutex_lock(&cr_table.lock);
	cr = cr_table_find(id);
	if (cr)
		eng = cr->psp->ia->eng;
	pthread_mutex_unlock(&cr_table.lock);
	return eng;
}

/* ------------------------------------------------------------------ */
/* Decisions                                                          */
/* ------------------------------------------------------------------ */

static void cr_accept_run(void *arg)
{
	struct cr_decision *d = arg;
	struct tcp_cr *cr = cr_lookup(d->id);
	uint8_t *hs;

	if (!cr || cr->state != CR_UNDECIDED) {
		d->ret = RAPT_ENOTCONN;
		return;
	}
	hs = malloc(CM_FRAME_MAX);
	if (!hs) {
		d->ret = RAPT_ENOMEM;
		return;
	}
	pthread_mutex_lock(&d->ep->lock);
	d->ret = tcp_cm_accept_locked(d->ep, cr, d, &hs);
	pthread_mutex_unlock(&d->ep->lock);
	free(hs);
}

/**
 * tcp_cr_accept - the cr_accept op
 *
 * Runs on the engine thread: the request's socket becomes the EP's and
 * the reply goes out; ESTABLISHED follows when the RTR arrives.
 *
 * Return: 0, RAPT_ENOTCONN (the requester went away), RAPT_ESTATE,
 * RAPT_ENOMEM.
 */
int tcp_cr_accept(void *pcr, void *pep, const void *pdata, size_t pdata_len)
{
	struct tcp_ep *ep = pep;
	struct cr_decision d = {
		.id = (uintptr_t)pcr,
		.ep = ep,
		.pdata = pdata,
		.pdata_len = pdata_len,
	};

	if (pdata_len > TCP_MPA_ULP_PD_MAX)
		return RAPT_ELENGTH;
	rapt_engine_call(ep->ia->eng, cr_accept_run, &d);
	return d.ret;
}

static void cr_reject_run(void *arg)
{
	struct cr_decision *d = arg;
	struct tcp_cr *cr = cr_lookup(d->id);

	if (!cr || cr->state != CR_UNDECIDED) {
		d->ret = RAPT_ENOTCONN;
		return;
	}
	tcp_cr_send_reject(cr->io.fd, cr->cap, cr->rev, cr->enhanced, d->pdata,
			   d->pdata_len);
	tcp_cr_close_free(cr);
	d->ret = 0;
}

/**
 * tcp_cr_reject - the cr_reject op
 *
 * Sends a reply with R=1 and @pdata, then closes (FIN).
 *
 * Return: 0, RAPT_ENOTCONN (the requester went away).
 */
int tcp_cr_reject(void *pcr, const void *pdata, size_t pdata_len)
{
	struct cr_decision d = {
		.id = (uintptr_t)pcr,
		.pdata = pdata,
		.pdata_len = pdata_len,
	};
	struct rapt_engine *eng;

	if (pdata_len > TCP_MPA_ULP_PD_MAX)
		return RAPT_ELENGTH;
	eng = cr_engine(d.id);
	if (!eng)
		return RAPT_ENOTCONN;
	rapt_engine_call(eng, cr_reject_run, &d);
	return d.ret;
}
