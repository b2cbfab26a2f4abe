/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the consumer's decisions on connection requests.
 *
 * One job: the cr_accept and cr_reject ops.  A request whose requester
 * goes away is cancelled and freed at once, on the engine thread.  A
 * decision finds its request on the engine thread too (through
 * rapt_engine_call()), with rapt_prov_cr_request(), which answers NULL
 * once the request was cancelled: a decision the core had already started
 * then fails with RAPT_ENOTCONN instead of reaching freed memory.
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
/* Decisions                                                          */
/* ------------------------------------------------------------------ */

static void cr_accept_run(void *arg)
{
	struct cr_decision *d = arg;
	struct tcp_cr *cr = rapt_prov_cr_request(d->ccr);
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
	rapt_lock(&d->ep->lock);
	d->ret = tcp_cm_accept_locked(d->ep, cr, d, &hs);
	rapt_unlock(&d->ep->lock);
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
int tcp_cr_accept(void *ppsp, struct rapt_core_cr *ccr, void *pep,
		  const void *pdata, size_t pdata_len)
{
	struct tcp_psp *psp = ppsp;
	struct cr_decision d = {
		.ccr = ccr,
		.ep = pep,
		.pdata = pdata,
		.pdata_len = pdata_len,
	};

	if (pdata_len > TCP_MPA_ULP_PD_MAX)
		return RAPT_ELENGTH;
	rapt_engine_call(psp->ia->eng, cr_accept_run, &d);
	return d.ret;
}

static void cr_reject_run(void *arg)
{
	struct cr_decision *d = arg;
	struct tcp_cr *cr = rapt_prov_cr_request(d->ccr);

	if (!cr || cr->state != CR_UNDECIDED) {
		d->ret = RAPT_ENOTCONN;
		return;
	}
	tcp_cr_refuse_request(cr, d->pdata, d->pdata_len);
	d->ret = 0;
}

/**
 * tcp_cr_reject - the cr_reject op
 *
 * Sends a reply with R=1 and @pdata, then closes (FIN) once the requester
 * has (tcp_cr_refuse_request).
 *
 * Return: 0, RAPT_ENOTCONN (the requester went away).
 */
int tcp_cr_reject(void *ppsp, struct rapt_core_cr *ccr, const void *pdata,
		  size_t pdata_len)
{
	struct tcp_psp *psp = ppsp;
	struct cr_decision d = {
		.ccr = ccr,
		.pdata = pdata,
		.pdata_len = pdata_len,
	};

	if (pdata_len > TCP_MPA_ULP_PD_MAX)
		return RAPT_ELENGTH;
	rapt_engine_call(psp->ia->eng, cr_reject_run, &d);
	return d.ret;
}
