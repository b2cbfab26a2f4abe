/* SPDX-License-Identifier: MIT */
/*
 * verbs layer: the TCP state of an iWARP connection, through sock_diag.
 *
 * An iWARP device (siw) runs MPA over a kernel TCP socket that user space
 * never sees, and Linux 6.1's siw tells nobody when the requester of a
 * connection request it has handed up closes its socket: rdma_cm keeps
 * the request, the CR stays in the backlog, and accepting it anyway can
 * crash the kernel (siw then reports a close to iw_cm in a state iw_cm
 * BUG()s on, when the requester asked for peer-to-peer RTR).  So the
 * provider asks the kernel about the socket itself, the way ss(8) does:
 * one NETLINK_SOCK_DIAG request for the connection's exact 4-tuple, on a
 * socket the IA keeps open (two system calls a question, not five).
 *
 * The same question with TCP_INFO attached tells the peer timeout
 * (vb_keepalive.c) when the peer's host last answered: TCP's own
 * acknowledgements are the proof of life on iWARP, where a send's
 * completion is not (siw completes it once TCP has the bytes).
 */
#include "config.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "verbs.h"

#define DIAG_TIMEOUT_MS 200

static void diag_addr(const struct sockaddr *sa, __be16 *port, __be32 *a)
{
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;

		*port = s6->sin6_port;
		memcpy(a, &s6->sin6_addr, 16);
	} else {
		const struct sockaddr_in *s4 = (const void *)sa;

		*port = s4->sin_port;
		a[0] = s4->sin_addr.s_addr;
	}
}

/* Sequence numbers of the questions: an answer that came after its
 * question timed out is told from the next question's. */
static _Atomic uint32_t diag_seq;

/* What one answer says. */
struct diag_res {
	int state;		/* TCP_*, or -1: no such socket */
	bool info;		/* @ti was filled */
	struct tcp_info ti;
};

/* The TCP_INFO attribute of answer @m (@len bytes in all), if any. */
static void diag_info(const struct nlmsghdr *h, const struct inet_diag_msg *m,
		      struct diag_res *res)
{
	const struct rtattr *a = (const struct rtattr *)(m + 1);
	int len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*m));
	size_t n;

	for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type != INET_DIAG_INFO)
			continue;
		n = RTA_PAYLOAD(a);
		memset(&res->ti, 0, sizeof(res->ti));
		memcpy(&res->ti, RTA_DATA(a),
		       n < sizeof(res->ti) ? n : sizeof(res->ti));
		res->info = true;
		return;
	}
}

/* Read the answer to question @seq into @res: 0, or -2 if the kernel
 * cannot say. */
static int diag_answer(int fd, uint32_t seq, struct diag_res *res)
{
	char buf[8192];
	struct nlmsghdr *h;
	ssize_t n;

	res->state = -1;
	res->info = false;
	for (;;) {
		n = rapt_sys_recv(fd, buf, sizeof(buf), 0);
		if (n < 0)
			return -2;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != seq)
				continue;	/* a late answer to an earlier one */
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				/* ENOENT: no such socket */
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error == -ENOENT ? 0 : -2;
			}
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
				continue;
			res->state = ((struct inet_diag_msg *)NLMSG_DATA(h))->
				     idiag_state;
			diag_info(h, NLMSG_DATA(h), res);
			/* A request for one 4-tuple gets one answer. */
			return 0;
		}
	}
}

/**
 * vb_tcp_diag_open - a socket for vb_tcp_state()'s questions
 *
 * Return: the socket, or -1.
 */
int vb_tcp_diag_open(void)
{
	struct timeval tv = { 0, DIAG_TIMEOUT_MS * 1000 };
	int fd;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* One question about @local <-> @remote; @info: ask for TCP_INFO too. */
static int diag_ask(int fd, const struct sockaddr *local,
		    const struct sockaddr *remote, unsigned int ifindex,
		    bool info, struct diag_res *res)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	uint32_t seq = atomic_fetch_add_explicit(&diag_seq, 1,
						 memory_order_relaxed) + 1;

	if (fd < 0 || local->sa_family != remote->sa_family ||
	    (local->sa_family != AF_INET && local->sa_family != AF_INET6))
		return -2;
	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.nlh.nlmsg_seq = seq;
	req.r.sdiag_family = (__u8)local->sa_family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	if (info)
		req.r.idiag_ext = 1u << (INET_DIAG_INFO - 1);
	diag_addr(local, &req.r.id.idiag_sport, req.r.id.idiag_src);
	diag_addr(remote, &req.r.id.idiag_dport, req.r.id.idiag_dst);
	req.r.id.idiag_if = ifindex;
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&nl,
		   sizeof(nl)) < 0)
		return -2;
	return diag_answer(fd, seq, res);
}

/**
 * vb_tcp_state - the TCP state of the connection @local <-> @remote
 * @fd: from vb_tcp_diag_open(), used by one thread at a time
 * @local: this side's address and port
 * @remote: the peer's
 * @ifindex: the interface (sockets bound to one are found only with it)
 *
 * Return: the state (TCP_ESTABLISHED, TCP_CLOSE_WAIT...), -1 if this
 * machine has no such connection, -2 if the kernel cannot say (no
 * sock_diag: the caller then assumes the connection is there).
 */
int vb_tcp_state(int fd, const struct sockaddr *local,
		 const struct sockaddr *remote, unsigned int ifindex)
{
	struct diag_res res;
	int ret = diag_ask(fd, local, remote, ifindex, false, &res);

	return ret ? ret : res.state;
}

/**
 * vb_tcp_heard - how long ago the peer of @local <-> @remote was last
 * heard from
 * @fd: from vb_tcp_diag_open(), used by one thread at a time
 * @local: this side's address and port
 * @remote: the peer's
 * @ifindex: the interface
 * @ms: set to the milliseconds since the connection last received an
 *      acknowledgement or data (TCP_INFO's tcpi_last_ack_recv and
 *      tcpi_last_data_recv, the smaller)
 *
 * Return: 0 (in any TCP state), -1 if this machine has no such
 * connection, -2 if the kernel cannot say.
 */
int vb_tcp_heard(int fd, const struct sockaddr *local,
		 const struct sockaddr *remote, unsigned int ifindex,
		 uint32_t *ms)
{
	struct diag_res res;
	int ret = diag_ask(fd, local, remote, ifindex, true, &res);

	if (ret)
		return ret;
	if (res.state < 0)
		return -1;
	if (!res.info)
		return -2;
	*ms = res.ti.tcpi_last_ack_recv < res.ti.tcpi_last_data_recv ?
	      res.ti.tcpi_last_ack_recv : res.ti.tcpi_last_data_recv;
	return 0;
}

/**
 * vb_tcp_diag_works - whether the kernel answers sock_diag for TCP
 * @diag: from vb_tcp_diag_open()
 *
 * inet_diag and tcp_diag are modules, loaded on first use where module
 * loading works; without them every lookup says "no such socket", which
 * must not be taken for a departed peer.  Asks about a listener of its
 * own on the loopback address.
 *
 * Return: true if it does.
 */
bool vb_tcp_diag_works(int diag)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct sockaddr_in any = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd, st = -2;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa)) && !listen(fd, 1) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &len))
		st = vb_tcp_state(diag, (struct sockaddr *)&sa,
				  (struct sockaddr *)&any, 0);
	rapt_sys_close(fd);
	return st == TCP_LISTEN;
}
