/* SPDX-License-Identifier: MIT */
/*
 * The control channel between the two roles: a plain TCP connection between
 * two rapt-conformance processes, or one end of a socketpair in loopback
 * mode, so a test's code is the same in both.
 *
 * A message is a 52-byte header (magic, type, seq, flags, length, tag; all
 * big-endian) and its payload.  Messages of a test run carry its sequence
 * number; what is left of an earlier run is dropped by the reader.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"

#define CTL_MAGIC 0x52505443u	/* "RPTC" */
#define CTL_HDR_LEN (5 * 4 + CONF_TAG_LEN)
#define CTL_MAX_PAYLOAD (1u << 20)
/* Once a message has started, the rest must follow promptly. */
#define CTL_BODY_TMO_MS 30000

int conf_ctl_init(struct conf_ctl *ctl, int fd)
{
	int one = 1;

	memset(ctl, 0, sizeof(*ctl));
	ctl->fd = fd;
	pthread_mutex_init(&ctl->lock, NULL);
	pthread_mutex_init(&ctl->wlock, NULL);
	/* Harmless on a socketpair (it fails there and is ignored). */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

void conf_ctl_fini(struct conf_ctl *ctl)
{
	struct conf_msg *m;

	while ((m = ctl->head)) {
		ctl->head = m->next;
		free(m);
	}
	if (ctl->fd >= 0)
		close(ctl->fd);
	ctl->fd = -1;
	pthread_mutex_destroy(&ctl->lock);
	pthread_mutex_destroy(&ctl->wlock);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static int write_full(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Wait until @fd is readable; 1 readable, 0 timeout, -1 error. */
static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int n;

	do {
		n = poll(&pfd, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	return n > 0;
}

static int read_full(int fd, void *buf, size_t len, int timeout_ms)
{
	uint8_t *p = buf;
	ssize_t n;
	int r;

	while (len) {
		r = wait_readable(fd, timeout_ms);
		if (r <= 0)
			return -1;
		n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int conf_ctl_send(struct conf_ctl *ctl, uint32_t type, uint32_t seq,
		  uint32_t flags, const char *tag, const void *data,
		  size_t len)
{
	uint8_t *msg;
	int ret;

	if (len > CTL_MAX_PAYLOAD)
		return -1;
	msg = calloc(1, CTL_HDR_LEN + len);
	if (!msg)
		return -1;
	put32(msg, CTL_MAGIC);
	put32(msg + 4, type);
	put32(msg + 8, seq);
	put32(msg + 12, flags);
	put32(msg + 16, (uint32_t)len);
	if (tag)
		strncpy((char *)msg + 20, tag, CONF_TAG_LEN - 1);
	if (len)
		memcpy(msg + CTL_HDR_LEN, data, len);
	/* One write per message: a reader that sees its first byte gets the
	 * rest promptly. */
	pthread_mutex_lock(&ctl->wlock);
	ret = ctl->wbroken ? -1 : write_full(ctl->fd, msg, CTL_HDR_LEN + len);
	if (ret)
		ctl->wbroken = true;
	pthread_mutex_unlock(&ctl->wlock);
	free(msg);
	return ret;
}

/* Read one message off the socket; called with ctl->lock held. */
static struct conf_msg *read_msg(struct conf_ctl *ctl, int timeout_ms)
{
	uint8_t hdr[CTL_HDR_LEN];
	struct conf_msg *m;
	uint32_t len;
	int r;

	r = wait_readable(ctl->fd, timeout_ms);
	if (r < 0)
		ctl->broken = true;
	if (r <= 0)
		return NULL;
	if (read_full(ctl->fd, hdr, sizeof(hdr), CTL_BODY_TMO_MS) ||
	    get32(hdr) != CTL_MAGIC)
		goto err;
	len = get32(hdr + 16);
	if (len > CTL_MAX_PAYLOAD)
		goto err;
	m = calloc(1, sizeof(*m) + len + 1);	/* NUL-terminated payload */
	if (!m)
		goto err;
	m->type = get32(hdr + 4);
	m->seq = get32(hdr + 8);
	m->flags = get32(hdr + 12);
	m->len = len;
	memcpy(m->tag, hdr + 20, CONF_TAG_LEN);
	m->tag[CONF_TAG_LEN - 1] = '\0';
	if (len && read_full(ctl->fd, m->data, len, CTL_BODY_TMO_MS)) {
		free(m);
		goto err;
	}
	return m;

err:
	ctl->broken = true;
	return NULL;
}

static void queue_msg(struct conf_ctl *ctl, struct conf_msg *m)
{
	m->next = NULL;
	if (ctl->tail)
		ctl->tail->next = m;
	else
		ctl->head = m;
	ctl->tail = m;
}

static struct conf_msg *dequeue_msg(struct conf_ctl *ctl)
{
	struct conf_msg *m = ctl->head;

	if (m) {
		ctl->head = m->next;
		if (!ctl->head)
			ctl->tail = NULL;
		m->next = NULL;
	}
	return m;
}

struct conf_msg *conf_ctl_recv(struct conf_ctl *ctl, int timeout_ms)
{
	struct conf_msg *m;

	pthread_mutex_lock(&ctl->lock);
	m = dequeue_msg(ctl);
	if (!m && !ctl->broken)
		m = read_msg(ctl, timeout_ms);
	pthread_mutex_unlock(&ctl->lock);
	return m;
}

int conf_ctl_peer_ended(struct conf_ctl *ctl, uint32_t seq)
{
	struct conf_msg *m;
	int flags = -1;

	pthread_mutex_lock(&ctl->lock);
	while (!ctl->broken && (m = read_msg(ctl, 0)))
		queue_msg(ctl, m);
	for (m = ctl->head; m; m = m->next)
		if (m->seq == seq && (m->type == CONF_MSG_END ||
				      m->type == CONF_MSG_DONE))
			flags = (int)m->flags;
	if (ctl->broken)
		flags = CONF_END_FAILED;
	pthread_mutex_unlock(&ctl->lock);
	return flags;
}

static void hello_text(char *buf, size_t len)
{
	snprintf(buf, len, "rapt-conformance %s protocol %d", PACKAGE_VERSION,
		 CONF_PROTO_VERSION);
}

/**
 * conf_ctl_hello - exchange versions with the other process
 * @ctl: the channel
 * @initiator: unused; both sides send first (the socket buffers it)
 *
 * Return: 0 if the peer runs the same suite version, else -1 with a
 * message on stderr.
 */
int conf_ctl_hello(struct conf_ctl *ctl, bool initiator)
{
	struct conf_msg *m;
	char mine[128];
	int ret = -1;

	(void)initiator;
	hello_text(mine, sizeof(mine));
	if (conf_ctl_send(ctl, CONF_MSG_HELLO, 0, 0, "hello", mine,
			  strlen(mine))) {
		fprintf(stderr, "rapt-conformance: control channel: cannot send the version handshake\n");
		return -1;
	}
	m = conf_ctl_recv(ctl, 30000);
	if (!m) {
		fprintf(stderr, "rapt-conformance: control channel: no version handshake from the peer within 30 s\n");
		return -1;
	}
	if (m->type != CONF_MSG_HELLO) {
		fprintf(stderr, "rapt-conformance: control channel: the peer is not rapt-conformance (message type %u)\n",
			m->type);
	} else if (strcmp((const char *)m->data, mine)) {
		fprintf(stderr, "rapt-conformance: refusing a peer of another suite version:\n  peer: %s\n  here: %s\nRun the same rapt-conformance version on both hosts.\n",
			(const char *)m->data, mine);
	} else {
		ret = 0;
	}
	free(m);
	return ret;
}

int conf_ctl_listen(unsigned int port)
{
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd, one = 1, zero = 0;

	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero,
				 sizeof(zero));
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				 sizeof(one));
		sa6.sin6_port = htons((uint16_t)port);
		sa6.sin6_addr = in6addr_any;
		if (!bind(fd, (struct sockaddr *)&sa6, sizeof(sa6)) &&
		    !listen(fd, 4))
			return fd;
		close(fd);
	}
	/* No IPv6 here: IPv4 only. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A v4-mapped v6 address becomes plain IPv4, as a provider expects. */
static void unmap_v4(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in sin = { .sin_family = AF_INET };

	if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		return;
	memcpy(&sin.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
	sin.sin_port = s6->sin6_port;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, &sin, sizeof(sin));
}

int conf_ctl_accept(int lfd, struct conf_ctl *ctl)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd;

	do {
		fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	} while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -1;
	conf_ctl_init(ctl, fd);
	unmap_v4(&ss);
	ctl->peer = ss;
	ctl->have_peer = true;
	return 0;
}

int conf_ctl_connect(const char *host, unsigned int port,
		     struct conf_ctl *ctl)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	char sport[16];
	int fd = -1, rc;

	snprintf(sport, sizeof(sport), "%u", port);
	rc = getaddrinfo(host, sport, &hints, &res);
	if (rc) {
		fprintf(stderr, "rapt-conformance: cannot resolve %s: %s\n",
			host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0)
			continue;
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		fprintf(stderr, "rapt-conformance: cannot connect to the server at %s port %u: %s\n",
			host, port, strerror(errno));
		freeaddrinfo(res);
		return -1;
	}
	conf_ctl_init(ctl, fd);
	memset(&ctl->peer, 0, sizeof(ctl->peer));
	memcpy(&ctl->peer, ai->ai_addr, ai->ai_addrlen);
	unmap_v4(&ctl->peer);
	ctl->have_peer = true;
	freeaddrinfo(res);
	return 0;
}
