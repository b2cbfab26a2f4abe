/* SPDX-License-Identifier: MIT */
/*
 * rapt_client - the active half of the rapt demo.
 *
 * Creates its EP and posts a receive before connecting, connects with
 * private data, learns the server's region from the accept private data,
 * sends a message, receives the answer, RDMA-writes a pattern into the
 * server's region, RDMA-reads it back, says "done" and disconnects.
 *
 * usage: rapt_client [-p IA] [-s SERVICE_ID] [SERVER_ADDRESS]
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <string.h>

#include "common.h"

static char msg[DEMO_MSG_SIZE], buf[DEMO_MSG_SIZE], back[DEMO_MSG_SIZE];

static void resolve(const char *host, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;

	if (getaddrinfo(host, NULL, &hints, &ai)) {
		fprintf(stderr, "client: cannot resolve %s\n", host);
		exit(1);
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
}

int main(int argc, char **argv)
{
	const char *ia_name = "tcp:lo", *host = "127.0.0.1";
	static const char hello[] = "hello from the rapt client";
	uint64_t sid = DEMO_SERVICE_ID;
	struct rapt_lmr_info li;
	struct sockaddr_storage ss;
	struct demo_region dr;
	struct rapt_event ev;
	struct rapt_lmr *lmr;
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
	if (optind < argc)
		host = argv[optind];
	resolve(host, &ss);
	CHECK(rapt_ia_open(ia_name, &ia));
	CHECK(rapt_pz_create(ia, &pz));
	CHECK(rapt_evd_create(ia, 64, RAPT_EVD_DTO | RAPT_EVD_CONNECTION,
			      &evd));
	/* one registration covers the three buffers' region */
	CHECK(rapt_lmr_create(pz, msg, sizeof(msg), RAPT_MEM_LOCAL_WRITE,
			      &lmr, &li));
	CHECK(rapt_ep_create(pz, evd, evd, evd, NULL, &ep));
	sge = (struct rapt_sge){ (uintptr_t)msg, sizeof(msg), li.lkey };
	CHECK(rapt_ep_post_recv(ep, &sge, 1, 1));	/* before connect */

	CHECK(rapt_ep_connect(ep, (struct sockaddr *)&ss, sid, "demo", 4,
			      5000000));
	demo_expect(evd, RAPT_EV_ESTABLISHED, &ev);
	if (ev.u.conn.pdata_len != sizeof(dr))
		return fprintf(stderr, "client: bad accept pdata\n"), 1;
	memcpy(&dr, ev.u.conn.pdata, sizeof(dr));
	printf("client: established; server region %u bytes at %#llx\n",
	       dr.length, (unsigned long long)dr.raddr);

	{
		struct rapt_lmr_info bi, ki;
		struct rapt_lmr *blmr, *klmr;
		struct rapt_sge s;

		CHECK(rapt_lmr_create(pz, buf, sizeof(buf), 0, &blmr, &bi));
		CHECK(rapt_lmr_create(pz, back, sizeof(back),
				      RAPT_MEM_LOCAL_WRITE, &klmr, &ki));
		memcpy(buf, hello, sizeof(hello));
		s = (struct rapt_sge){ (uintptr_t)buf, sizeof(hello), bi.lkey };
		CHECK(rapt_ep_post_send(ep, &s, 1, 2, 0));
		/* Our send done and the answer, in either order (the send
		 * completes when the server's acknowledgement arrives). */
		for (i = 0; i < 2; i++) {
			demo_expect(evd, RAPT_EV_DTO, &ev);
			if (ev.u.dto.status ||
			    (ev.u.dto.op != RAPT_OP_SEND &&
			     ev.u.dto.op != RAPT_OP_RECV))
				return fprintf(stderr,
					       "client: bad %s\n",
					       ev.u.dto.op == RAPT_OP_SEND ?
					       "send" : "receive"), 1;
		}
		printf("client: received \"%s\"\n", msg);

		for (i = 0; i < DEMO_MSG_SIZE; i++)
			buf[i] = (char)(i * 7);
		s = (struct rapt_sge){ (uintptr_t)buf, DEMO_MSG_SIZE, bi.lkey };
		CHECK(rapt_ep_post_write(ep, &s, 1, 3, dr.raddr, dr.rkey, 0));
		demo_expect(evd, RAPT_EV_DTO, &ev);
		if (ev.u.dto.op != RAPT_OP_RDMA_WRITE || ev.u.dto.status)
			return fprintf(stderr, "client: write failed\n"), 1;
		s = (struct rapt_sge){ (uintptr_t)back, DEMO_MSG_SIZE, ki.lkey };
		CHECK(rapt_ep_post_read(ep, &s, 1, 4, dr.raddr, dr.rkey, 0));
		demo_expect(evd, RAPT_EV_DTO, &ev);
		if (ev.u.dto.op != RAPT_OP_RDMA_READ || ev.u.dto.status ||
		    memcmp(back, buf, DEMO_MSG_SIZE)) {
			for (i = 0; i < DEMO_MSG_SIZE && back[i] == buf[i]; i++)
				;
			fprintf(stderr, "client: read-back mismatch: op %u "
				"status %u len %llu, first difference at %d\n",
				ev.u.dto.op, ev.u.dto.status,
				(unsigned long long)ev.u.dto.length, i);
			return 1;
		}
		printf("client: RDMA write + read of %d bytes verified\n",
		       DEMO_MSG_SIZE);

		s = (struct rapt_sge){ (uintptr_t)buf, 5, bi.lkey };
		memcpy(buf, "done", 5);
		CHECK(rapt_ep_post_send(ep, &s, 1, 5, 0));
		demo_expect(evd, RAPT_EV_DTO, &ev);
		CHECK(rapt_ep_disconnect(ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
		demo_expect(evd, RAPT_EV_DISCONNECTED, &ev);
		printf("client: disconnected\n");
		CHECK(rapt_lmr_free(blmr));
		CHECK(rapt_lmr_free(klmr));
	}
	CHECK(rapt_ep_free(ep));
	CHECK(rapt_lmr_free(lmr));
	CHECK(rapt_evd_free(evd));
	CHECK(rapt_pz_free(pz));
	CHECK(rapt_ia_close(ia));
	printf("client: done\n");
	return 0;
}
