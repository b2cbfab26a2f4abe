/* SPDX-License-Identifier: MIT */
/* The tcp provider's end-to-end tests: a connected pair (tests/pair.h). */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pair.h"
#include "scenario.h"

int side_open(struct side *s, size_t len, uint32_t access)
{
	memset(s, 0, sizeof(*s));
	TOK(rapt_ia_open("tcp:lo", &s->ia));
	TOK(rapt_pz_create(s->ia, &s->pz));
	TOK(rapt_evd_create(s->ia, 4096, RAPT_EVD_CR | RAPT_EVD_CONNECTION |
			    RAPT_EVD_DTO, &s->evd));
	s->len = len;
	s->buf = malloc(len + 2 * GUARD);
	T(s->buf);
	s->mem = s->buf + GUARD;
	memset(s->buf, 0xcc, len + 2 * GUARD);
	TOK(rapt_lmr_create(s->pz, s->mem, len, access, &s->lmr, &s->mr));
	return 0;
}

int side_close(struct side *s)
{
	if (s->ep)
		TOK(rapt_ep_free(s->ep));
	TOK(rapt_lmr_free(s->lmr));
	TOK(rapt_evd_free(s->evd));
	TOK(rapt_pz_free(s->pz));
	TOK(rapt_ia_close(s->ia));
	free(s->buf);
	return 0;
}

int ev_wait(struct side *s, uint32_t type, struct rapt_event *ev)
{
	int ret = rapt_evd_wait(s->evd, EV_US, 1, ev, NULL);

	if (ret) {
		fprintf(stderr, "no event %#x: %s\n", type, rapt_strerror(ret));
		return -1;
	}
	if (type && ev->type != type) {
		fprintf(stderr, "expected event %#x, got %#x (dto status %u)\n",
			type, ev->type, ev->u.dto.status);
		return -1;
	}
	return 0;
}

const struct sockaddr *lo_addr(void)
{
	static struct sockaddr_in sin;

	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return (const struct sockaddr *)&sin;
}

int conn_open(struct conn *c, size_t alen, size_t plen, uint32_t paccess,
	      const struct rapt_ep_attr *attr, prep_fn prep)
{
	struct rapt_psp_info pi;
	struct rapt_event ev;

	memset(c, 0, sizeof(*c));
	if (side_open(&c->a, alen, RAPT_MEM_LOCAL_WRITE) ||
	    side_open(&c->p, plen, paccess))
		return -1;
	TOK(rapt_psp_create(c->p.ia, RAPT_SERVICE_ID_ANY, c->p.evd, NULL,
			    &c->psp));
	TOK(rapt_psp_query(c->psp, &pi, sizeof(pi)));
	TOK(rapt_ep_create(c->a.pz, c->a.evd, c->a.evd, c->a.evd, attr,
			   &c->a.ep));
	TOK(rapt_ep_create(c->p.pz, c->p.evd, c->p.evd, c->p.evd, attr,
			   &c->p.ep));
	if (prep && prep(c))
		return -1;
	TOK(rapt_ep_connect(c->a.ep, lo_addr(), pi.service_id, NULL, 0,
			    EV_US));
	if (ev_wait(&c->p, RAPT_EV_CR_ARRIVAL, &ev))
		return -1;
	TOK(rapt_cr_accept(ev.u.cr.cr, c->p.ep, NULL, 0));
	if (ev_wait(&c->a, RAPT_EV_ESTABLISHED, &ev) ||
	    ev_wait(&c->p, RAPT_EV_ESTABLISHED, &ev))
		return -1;
	return 0;
}

int conn_close(struct conn *c)
{
	TOK(rapt_psp_free(c->psp));
	if (side_close(&c->a) || side_close(&c->p))
		return -1;
	return 0;
}

struct rapt_sge sge(const struct side *s, size_t off, size_t n)
{
	struct rapt_sge g = {
		.addr = (uintptr_t)(s->mem + off),
		.length = (uint32_t)n,
		.lkey = s->mr.lkey,
	};

	return g;
}

bool lo_available(void)
{
	struct rapt_ia *ia;

	if (rapt_ia_open("tcp:lo", &ia)) {
		fprintf(stderr, "tcp:lo cannot be opened: %s; skipping\n",
			rapt_last_error());
		return false;
	}
	rapt_ia_close(ia);
	return true;
}
