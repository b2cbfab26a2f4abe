/* SPDX-License-Identifier: MIT */
/*
 * cm_pdata_limits - measure how many bytes of private data librdmacm
 * carries on a device, in connect (REQ), accept (REP) and reject (REJ),
 * with librdmacm alone (no rapt): the figures the ib provider declares
 * come from here (tests/vm/suite-ib.sh runs it on rxe).
 *
 * usage: cm_pdata_limits -a ADDR [-p PORT]
 *
 * One process connects to itself through ADDR (an address of the RDMA
 * device, never 127.0.0.1).  For each operation a binary search over
 * 0..255 finds the largest length that goes out, each try on a new
 * connection; a length that goes out must arrive byte for byte (the rest
 * of the field zero: IB pads it).  No QP is attached: the handshake stops
 * before the connection is used.  Prints "limit <op> N (field M)" lines;
 * the exit status is 0 only if every figure was measured and checked.
 */
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#define EV_TIMEOUT_MS	5000
#define FAKE_QPN	0x123

enum op { OP_CONNECT, OP_ACCEPT, OP_REJECT };
static const char *const op_name[] = { "connect", "accept", "reject" };

struct ev {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	uint8_t pdata[256];
	int len;
};

static struct rdma_event_channel *ch;
static struct rdma_cm_id *listener;
static struct sockaddr_in addr;
static uint8_t pattern[256];
static int field[3];		/* the length that arrives, per op */
static int bad;			/* a length went out and arrived wrong */

/* The next event of @id (or, for a request, of the listener), as @want;
 * others are acknowledged and passed over. */
static int wait_ev(struct rdma_cm_id *id, enum rdma_cm_event_type want,
		   struct ev *out)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *e;
	bool mine;

	for (;;) {
		if (poll(&pfd, 1, EV_TIMEOUT_MS) <= 0) {
			fprintf(stderr, "no %s in %d ms\n",
				rdma_event_str(want), EV_TIMEOUT_MS);
			return -1;
		}
		if (rdma_get_cm_event(ch, &e))
			return -1;
		mine = want == RDMA_CM_EVENT_CONNECT_REQUEST ?
		       e->listen_id == id : e->id == id;
		if (mine) {
			out->type = e->event;
			out->status = e->status;
			out->id = e->id;
			out->len = e->param.conn.private_data_len;
			if (out->len && e->param.conn.private_data)
				memcpy(out->pdata, e->param.conn.private_data,
				       (size_t)out->len);
		}
		rdma_ack_cm_event(e);
		if (!mine)
			continue;
		if (out->type != want) {
			fprintf(stderr, "%s (status %d), expected %s\n",
				rdma_event_str(out->type), out->status,
				rdma_event_str(want));
			return -1;
		}
		return 0;
	}
}

/* What arrived must be the first @n bytes of the pattern, then zeros. */
static void check(enum op op, int n, const struct ev *e)
{
	int i;

	field[op] = e->len;
	for (i = 0; i < e->len; i++)
		if (e->pdata[i] != (i < n ? pattern[i] : 0))
			break;
	if (e->len < n || i < e->len) {
		printf("%s of %d bytes: %d arrived, byte %d differs\n",
		       op_name[op], n, e->len, i);
		bad = 1;
	}
}

/* A new client id with its route to the listener. */
static struct rdma_cm_id *client(void)
{
	struct rdma_cm_id *id;
	struct ev e;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return NULL;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&addr, 2000) ||
	    wait_ev(id, RDMA_CM_EVENT_ADDR_RESOLVED, &e) ||
	    rdma_resolve_route(id, 2000) ||
	    wait_ev(id, RDMA_CM_EVENT_ROUTE_RESOLVED, &e)) {
		rdma_destroy_id(id);
		return NULL;
	}
	return id;
}

/* One try: 1 if @n bytes went out (and were checked), 0 if refused, -1
 * on another failure. */
static int try_op(enum op op, int n)
{
	struct rdma_conn_param p;
	struct rdma_cm_id *cid, *req = NULL;
	struct ev e;
	int ret = -1, out;

	cid = client();
	if (!cid)
		return -1;
	memset(&p, 0, sizeof(p));
	p.qp_num = FAKE_QPN;
	p.retry_count = 7;
	p.private_data = op == OP_CONNECT ? pattern : NULL;
	p.private_data_len = op == OP_CONNECT ? (uint8_t)n : 0;
	if (rdma_connect(cid, &p)) {
		ret = op == OP_CONNECT && errno == EINVAL ? 0 : -1;
		goto out;
	}
	if (wait_ev(listener, RDMA_CM_EVENT_CONNECT_REQUEST, &e))
		goto out;
	req = e.id;
	if (op == OP_CONNECT)
		check(op, n, &e);
	memset(&p, 0, sizeof(p));
	p.qp_num = FAKE_QPN + 1;
	p.private_data = pattern;
	p.private_data_len = (uint8_t)n;
	if (op == OP_ACCEPT) {
		/* A refused accept rejects the request itself. */
		out = !rdma_accept(req, &p);
		if (out && wait_ev(cid, RDMA_CM_EVENT_CONNECT_RESPONSE, &e))
			goto out;
		if (out)
			check(op, n, &e);
	} else {
		out = op == OP_REJECT ? !rdma_reject(req, pattern, (uint8_t)n) :
		      1;
		if (op != OP_REJECT || !out)
			rdma_reject(req, NULL, 0);
		if (wait_ev(cid, RDMA_CM_EVENT_REJECTED, &e))
			goto out;
		if (op == OP_REJECT && out)
			check(op, n, &e);
	}
	ret = out;
out:
	if (req)
		rdma_destroy_id(req);
	rdma_destroy_id(cid);
	return ret;
}

/* The largest length in 0..255 that goes out, or -1. */
static int measure(enum op op)
{
	int lo = 0, hi = 255, mid, r;

	r = try_op(op, 0);
	if (r != 1)
		return -1;
	while (lo < hi) {
		mid = (lo + hi + 1) / 2;
		r = try_op(op, mid);
		if (r < 0)
			return -1;
		if (r)
			lo = mid;
		else
			hi = mid - 1;
	}
	/* Check the data at the limit itself. */
	return try_op(op, lo) == 1 ? lo : -1;
}

int main(int argc, char **argv)
{
	const char *a = NULL;
	int c, i, n, rc = 0;
	uint16_t port = 7480;

	while ((c = getopt(argc, argv, "a:p:")) != -1) {
		if (c == 'a')
			a = optarg;
		else if (c == 'p')
			port = (uint16_t)atoi(optarg);
		else
			a = NULL, optind = argc + 1;
	}
	addr.sin_family = AF_INET;
	addr.sin_port = htons(port);
	if (!a || optind != argc || inet_pton(AF_INET, a, &addr.sin_addr) != 1) {
		fprintf(stderr, "usage: cm_pdata_limits -a ADDR [-p PORT]\n");
		return 2;
	}
	for (i = 0; i < 256; i++)
		pattern[i] = (uint8_t)(i * 7 + 1) ? (uint8_t)(i * 7 + 1) : 1;
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listener, (struct sockaddr *)&addr) ||
	    rdma_listen(listener, 8)) {
		perror("cm_pdata_limits: listening");
		return 1;
	}
	for (i = OP_CONNECT; i <= OP_REJECT; i++) {
		n = measure((enum op)i);
		if (n < 0) {
			printf("limit %s: not measured\n", op_name[i]);
			rc = 1;
		} else {
			printf("limit %s %d (field %d)\n", op_name[i], n,
			       field[i]);
		}
	}
	rdma_destroy_id(listener);
	rdma_destroy_event_channel(ch);
	return rc || bad;
}
