/* SPDX-License-Identifier: MIT */
/*
 * rapt_server - the passive half of the rapt demo.
 *
 * Listens on a service id, reads the client's private data from the
 * connection request, accepts with private data that tells the client
 * where it may RDMA-write, then: receives a message, answers it, waits for
 * the client's RDMA write and checks it, and waits for the disconnect.
 *
 * usage: rapt_server [-p IA] [-s SERVICE_ID]
 */
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static char msg[DEMO_MSG_SIZE], region[DEMO_MSG_SIZE];

int main(int argc, char **argv)
{
	const char *ia_name = "tcp:lo";
	uint64_t sid = DEMO_SERVICE_ID;
	struct rapt_lmr_info mi, ri;
	struct demo_region dr;
	struct rapt_cr_info ci;
	struct rapt_event ev;
	struct rapt_lmr *mlmr, *rlmr;
	struct rapt_psp *psp;
	struct rapt_evd *evd;
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_ep *ep;
	struct rapt_sge sge;
	int c, i;

	while ((c = getopt(argc, argv, "p:s:")) != -1) {
		if (c == 'p')
			ia_name = optarg;
		else if (c == 's')
			sid = strtoull(optarg, NULL, 0);
		else
			return 2;
	}
	CHECK(rapt_ia_open(ia_name, &ia));
	CHECK(rapt_pz_create(ia, &pz));
	CHECK(rapt_evd_create(ia, 64, RAPT_EVD_DTO | RAPT_EVD_CONNECTION |
			      RAPT_EVD_CR, &evd));
	CHECK(rapt_lmr_create(pz, msg, sizeof(msg), RAPT_MEM_LOCAL_WRITE,
			      &mlmr, &mi));
	CHECK(rapt_lmr_create(pz, region, sizeof(region),
			      RAPT_MEM_LOCAL_WRITE | RAPT_MEM_REMOTE_WRITE |
			      RAPT_MEM_REMOTE_READ,
			      &rlmr, &ri));
	CHECK(rapt_psp_create(ia, sid, evd, NULL, &psp));
	printf("server: listening on %s service %llu\n", ia_name,
	       (unsigned long long)sid);
	fflush(stdout);

	demo_expect(evd, RAPT_EV_CR_ARRIVAL, &ev);
	CHECK(rapt_cr_query(ev.u.cr.cr, &ci, sizeof(ci)));
	printf("server: request with %u bytes of private data: \"%.*s\"\n",
	       ci.pdata_len, (int)ci.pdata_len, (const char *)ci.pdata);

	/* The EP is chosen after the request is seen; receives go first. */
	CHECK(rapt_ep_create(pz, evd, evd, evd, NULL, &ep));
	sge = (struct rapt_sge){ (uintptr_t)msg, sizeof(msg), mi.lkey };
	CHECK(rapt_ep_post_recv(ep, &sge, 1, 1));
	dr = (struct demo_region){ ri.raddr, ri.rkey, sizeof(region) };
	CHECK(rapt_cr_accept(ev.u.cr.cr, ep, &dr, sizeof(dr)));
	demo_expect(evd, RAPT_EV_ESTABLISHED, &ev);
	printf("server: established (IRD %u, ORD %u)\n",
	       ev.u.conn.rdma_read_in, ev.u.conn.rdma_read_out);

	demo_expect(evd, RAPT_EV_DTO, &ev);
	if (ev.u.dto.op != RAPT_OP_RECV || ev.u.dto.status)
		return fprintf(stderr, "server: bad receive\n"), 1;
	printf("server: received %llu bytes: \"%s\"\n",
	       (unsigned long long)ev.u.dto.length, msg);

	/* Re-arm a receive for the client's "done", then answer. */
	CHECK(rapt_ep_post_recv(ep, &sge, 1, 2));
	snprintf(region, sizeof(region), "%s", "");
	{
		static char reply[64] = "pong from the rapt server";
		struct rapt_lmr_info pi;
		struct rapt_lmr *plmr;
		struct rapt_sge ps;

		CHECK(rapt_lmr_create(pz, reply, sizeof(reply), 0, &plmr, &pi));
		ps = (struct rapt_sge){ (uintptr_t)reply, strlen(reply) + 1,
					pi.lkey };
		CHECK(rapt_ep_post_send(ep, &ps, 1, 3, 0));
		/* The client writes into region, then sends "done".  Our
		 * send's completion and that receive come in either order:
		 * the send completes when the client's acknowledgement
		 * arrives, which may be after its next message (rxe). */
		for (i = 0; i < 2; i++) {
			demo_expect(evd, RAPT_EV_DTO, &ev);
			if (ev.u.dto.status ||
			    (ev.u.dto.op != RAPT_OP_SEND &&
			     ev.u.dto.op != RAPT_OP_RECV))
				return fprintf(stderr, "server: %s failed: "
					       "status %u cookie %llu\n",
					       ev.u.dto.op == RAPT_OP_SEND ?
					       "send" : "receive",
					       ev.u.dto.status,
					       (unsigned long long)
					       ev.u.dto.cookie), 1;
		}
		for (i = 0; i < DEMO_MSG_SIZE; i++)
			if ((unsigned char)region[i] != (unsigned char)(i * 7))
				return fprintf(stderr,
					       "server: RDMA write mismatch at %d\n",
					       i), 1;
		printf("server: RDMA write of %d bytes verified\n",
		       DEMO_MSG_SIZE);
		demo_expect(evd, RAPT_EV_DISCONNECTED, &ev);
		printf("server: disconnected\n");
		CHECK(rapt_lmr_free(plmr));
	}
	CHECK(rapt_ep_free(ep));
	CHECK(rapt_psp_free(psp));
	CHECK(rapt_lmr_free(rlmr));
	CHECK(rapt_lmr_free(mlmr));
	CHECK(rapt_evd_free(evd));
	CHECK(rapt_pz_free(pz));
	CHECK(rapt_ia_close(ia));
	printf("server: done\n");
	return 0;
}
