/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the sockets of connection management.
 *
 * One job: what the CM does to a socket that is not MPA: addresses
 * (union cm_sa, the IA's source address), socket options, the error
 * status, small frames sent now or never, draining and aborting.
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

/* Copy an IPv4 or IPv6 @sa with port @port; RAPT_EINVAL otherwise. */
int tcp_sa_copy(const struct sockaddr *sa, uint16_t port,
		struct sockaddr_storage *ss)
{
	if (rapt_sockaddr_copy(ss, sa)) {
		rapt_prov_set_error("tcp: address family %d is not IPv4/IPv6",
				    sa->sa_family);
		return RAPT_EINVAL;
	}
	rapt_sockaddr_set_port((struct sockaddr *)ss, port);
	return 0;
}

void tcp_cm_sa_set(union cm_sa *a, const struct sockaddr_storage *ss)
{
	memset(a, 0, sizeof(*a));
	memcpy(a, ss, rapt_sockaddr_len(sa_of(ss)));
}

void tcp_cm_sa_get(const union cm_sa *a, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, a, rapt_sockaddr_len(&a->sa));
}

/* @fd's local address into @a (AF_UNSPEC if it cannot be had). */
void tcp_cm_sa_local(int fd, union cm_sa *a)
{
	socklen_t sl = sizeof(*a);

	if (getsockname(fd, &a->sa, &sl) || sl > sizeof(*a))
		memset(a, 0, sizeof(*a));
}

int tcp_sock_err(int fd)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return errno;
	return err;
}

void tcp_sock_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * Bound a silent peer to about @ms (rapt_ep_set_peer_timeout): keepalive
 * probes find it on an idle connection, the user timeout on one with
 * data in flight.  Idle for half the bound, then a probe every sixth of
 * it; with TCP_USER_TIMEOUT set, Linux ends a probed connection once it
 * has heard nothing for @ms (tcp_keepalive_timer) and never counts the
 * probes, so TCP_KEEPCNT is left alone (one system call less per
 * connection).  Both cases end with ETIMEDOUT in about @ms, whole seconds
 * rounding up.
 */
void tcp_sock_peer_timeout(int fd, uint32_t ms)
{
	int one = 1, idle = (int)(ms / 2000), intvl = (int)(ms / 6000);
	unsigned int user = ms;

	if (idle < 1)
		idle = 1;
	if (intvl < 1)
		intvl = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl,
		       sizeof(intvl)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user,
		       sizeof(user)))
		tcp_warn("fd %d: cannot bound a silent peer to %u ms: %m", fd,
			 ms);
}

/* Close with an RST: nothing queued is sent, no TIME_WAIT. */
void tcp_sock_abort(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	rapt_sys_close(fd);
}

/* Send a small frame now or not at all (replies to requests we drop). */
void tcp_sock_send_frame(int fd, struct tcp_cap *cap, const uint8_t *buf,
			 int len)
{
	ssize_t n;

	if (len <= 0)
		return;
	do {
		n = rapt_sys_send(fd, buf, (size_t)len,
				  MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	tcp_cap_io(cap, true, buf, n);
}

/* Throw away what the peer sent, so that close() sends a FIN (unread
 * data would turn it into an RST that can overtake our last frame). */
void tcp_sock_drain(int fd)
{
	uint8_t buf[512];
	ssize_t n;
	int i;

	/* Less than asked for: the queue was empty after it. */
	for (i = 0; i < 128; i++) {
		n = rapt_sys_recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < (ssize_t)sizeof(buf))
			return;
	}
}

/*
 * A non-blocking stream socket to @dst, from the IA's address.  A
 * connection to the IA's own address needs no bind: the kernel takes
 * the destination as the source of a local route anyway.  (TCP_NODELAY
 * comes once the request is out: ep_connect_start.)
 */
int tcp_cm_socket(struct tcp_ia *ia, const struct sockaddr_storage *dst)
{
	struct sockaddr_storage src;
	int fd, one = 1, family = dst->ss_family;

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		int err = errno;

		tcp_err("socket: %s", strerror(err));
		return rapt_errno_status(err);
	}
	if (ia->addr.ss_family != family ||
	    rapt_sockaddr_same_ip(sa_of(&ia->addr), sa_of(dst)))
		return fd;
	/* The port is picked at connect time, per destination. */
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	src = ia->addr;
	rapt_sockaddr_set_port((struct sockaddr *)&src, 0);
	if (bind(fd, sa_of(&src), rapt_sockaddr_len(sa_of(&src))))
		tcp_dbg("cannot bind to %s's address (%m); the kernel picks",
			ia->device);
	return fd;
}
