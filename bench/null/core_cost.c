/* SPDX-License-Identifier: MIT */
/*
 * core_cost - the driver of bench/core_cost.sh: posts an operation and
 * dequeues its completion, ITERS times, against the "null" provider
 * (bench/null/null_prov.c), whose post ops push the completion at once.
 * Whatever librapt.so executes in core_cost_loop() is the core's own cost
 * per post + completion; callgrind counts it.
 *
 *   core_cost [-o send|write|read] [ITERS]
 *
 * RAPT_PROVIDER_PATH must name the folder of librapt-null-pv2.so.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rapt/rapt.h>

struct rig {
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_lmr *lmr;
	struct rapt_lmr_info li;
	struct rapt_evd *evd;
	struct rapt_ep *ep;
	char buf[64];
};

static int fail(const char *what, int ret)
{
	fprintf(stderr, "core_cost: %s: %s: %s\n", what, rapt_strerror(ret),
		rapt_last_error());
	return 1;
}

static int rig_open(struct rig *r)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rapt_event ev;
	int ret;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ret = rapt_ia_open("null", &r->ia);
	if (ret)
		return fail("rapt_ia_open(\"null\")", ret);
	ret = rapt_pz_create(r->ia, &r->pz);
	if (!ret)
		ret = rapt_lmr_create(r->pz, r->buf, sizeof(r->buf),
				      RAPT_MEM_LOCAL_WRITE, &r->lmr, &r->li);
	if (!ret)
		ret = rapt_evd_create(r->ia, 1024, RAPT_EVD_DTO |
				      RAPT_EVD_CONNECTION, &r->evd);
	if (!ret)
		ret = rapt_ep_create(r->pz, r->evd, r->evd, r->evd, NULL,
				     &r->ep);
	if (!ret)
		ret = rapt_ep_connect(r->ep, (struct sockaddr *)&sin, 1, NULL,
				      0, RAPT_TIMEOUT_INFINITE);
	if (!ret)
		ret = rapt_evd_dequeue(r->evd, &ev);
	if (ret)
		return fail("setting up", ret);
	if (ev.type != RAPT_EV_ESTABLISHED) {
		fprintf(stderr, "core_cost: no ESTABLISHED event\n");
		return 1;
	}
	return 0;
}

static void rig_close(struct rig *r)
{
	struct rapt_event ev;

	rapt_ep_disconnect(r->ep, RAPT_CLOSE_ABRUPT, NULL, 0);
	while (!rapt_evd_dequeue(r->evd, &ev))
		;
	rapt_ep_free(r->ep);
	rapt_evd_free(r->evd);
	rapt_lmr_free(r->lmr);
	rapt_pz_free(r->pz);
	rapt_ia_close(r->ia);
}

static int post(struct rig *r, const struct rapt_sge *sge, uint64_t i,
		int op)
{
	switch (op) {
	case RAPT_OP_RDMA_WRITE:
		return rapt_ep_post_write(r->ep, sge, 1, i, r->li.raddr,
					  r->li.rkey, 0);
	case RAPT_OP_RDMA_READ:
		return rapt_ep_post_read(r->ep, sge, 1, i, r->li.raddr,
					 r->li.rkey, 0);
	}
	return rapt_ep_post_send(r->ep, sge, 1, i, 0);
}

/* What callgrind measures (--toggle-collect=core_cost_loop). */
__attribute__((noinline)) int core_cost_loop(struct rig *r, uint64_t n,
					     int op);
__attribute__((noinline)) int core_cost_loop(struct rig *r, uint64_t n,
					     int op)
{
	struct rapt_sge sge = { (uint64_t)(uintptr_t)r->buf, 8, r->li.lkey };
	struct rapt_event ev;
	uint64_t i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = post(r, &sge, i, op);
		if (!ret)
			ret = rapt_evd_dequeue(r->evd, &ev);
		if (ret)
			return fail("post or dequeue", ret);
		if (ev.type != RAPT_EV_DTO || ev.u.dto.cookie != i ||
		    ev.u.dto.status != RAPT_DTO_SUCCESS) {
			fprintf(stderr, "core_cost: wrong completion\n");
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t n = 100000;
	struct rig r;
	int c, op = RAPT_OP_SEND, ret;

	while ((c = getopt(argc, argv, "o:")) != -1) {
		if (c == 'o' && !strcmp(optarg, "send"))
			op = RAPT_OP_SEND;
		else if (c == 'o' && !strcmp(optarg, "write"))
			op = RAPT_OP_RDMA_WRITE;
		else if (c == 'o' && !strcmp(optarg, "read"))
			op = RAPT_OP_RDMA_READ;
		else
			goto usage;
	}
	if (optind < argc)
		n = strtoull(argv[optind++], NULL, 0);
	if (optind != argc || !n)
		goto usage;
	memset(&r, 0, sizeof(r));
	ret = rig_open(&r);
	if (!ret)
		ret = core_cost_loop(&r, n, op);
	rig_close(&r);
	if (!ret)
		printf("core_cost: %llu posts and completions ok\n",
		       (unsigned long long)n);
	return ret;
usage:
	fprintf(stderr, "usage: core_cost [-o send|write|read] [ITERS]\n");
	return 2;
}
