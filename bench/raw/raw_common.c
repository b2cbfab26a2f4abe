/* SPDX-License-Identifier: MIT */
/* Socket helpers of the raw TCP peer programs. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "raw_common.h"

static struct sockaddr_in loopback(unsigned int port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sin;
}

/* Listen on 127.0.0.1, an ephemeral port; write the port to @port. */
int raw_listen(unsigned int *port, int backlog)
{
	struct sockaddr_in sin = loopback(0);
	socklen_t len = sizeof(sin);
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		perror("socket");
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(fd, backlog) ||
	    getsockname(fd, (struct sockaddr *)&sin, &len)) {
		perror("bind/listen");
		close(fd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

int raw_accept(int lfd)
{
	int fd;

	do
		fd = accept(lfd, NULL, NULL);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		perror("accept");
	return fd;
}

int raw_connect(unsigned int port)
{
	struct sockaddr_in sin = loopback(port);
	int fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		perror("socket");
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		perror("connect");
		close(fd);
		return -1;
	}
	return fd;
}

int raw_nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))) {
		perror("TCP_NODELAY");
		return -1;
	}
	return 0;
}

int raw_write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t r;

	while (len) {
		r = write(fd, p, len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			perror("write");
			return -1;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

/* Blocking read of exactly @len bytes; 1 on a clean EOF before any byte. */
int raw_read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t r;

	while (got < len) {
		r = read(fd, (char *)buf + got, len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 && got == 0)
			return 1;
		if (r <= 0) {
			if (r < 0)
				perror("read");
			else
				fprintf(stderr, "read: early EOF\n");
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

/* Busy-polling read: recv(MSG_DONTWAIT) until @len bytes; 1 on EOF. */
int raw_read_spin(int fd, void *buf, size_t len)
{
	size_t got = 0;
	ssize_t r;

	while (got < len) {
		r = recv(fd, (char *)buf + got, len - got, MSG_DONTWAIT);
		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		if (r == 0) {
			if (got == 0)
				return 1;
			fprintf(stderr, "recv: early EOF\n");
			return -1;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			perror("recv");
			return -1;
		}
	}
	return 0;
}
