/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: traffic capture for debugging and tests.
 *
 * With RAPT_TCP_CAPTURE=<directory> in the environment, every connection
 * appends the bytes it writes to and reads from its socket, exactly as
 * they pass through the system calls, to
 * <directory>/<pid>-<fd>-<localport>-<remoteport>.txt, one record per
 * call, in the hex dump format of text2pcap -D:
 *
 *   O                        "O": we sent it, "I": we received it
 *   000000 4d 50 41 20 ...   16 bytes a line, offsets from 0
 *
 * so `text2pcap -D -T <remote>,<local> FILE OUT.pcap` makes a capture of
 * it without root.  Records are in the order the calls returned, under
 * ep->lock, so the order is causal from this end.  Peeks and bytes read
 * only to be thrown away (the drain before a close) are not recorded.
 *
 * The directory is read once per process, at the first connection.  This
 * is a debugging tool: every record is a write(2) of its own.  When
 * capture is off, the data path pays one test of a NULL pointer.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcp.h"

#define CAP_LINE	16	/* bytes per dump line */
#define CAP_CHUNK	4096	/* bytes per formatting pass */

struct tcp_cap {
	int fd;		/* the capture file, O_APPEND */
};

static pthread_once_t cap_once = PTHREAD_ONCE_INIT;
static const char *cap_dir;

static void cap_read_env(void)
{
	const char *d = getenv("RAPT_TCP_CAPTURE");

	if (d && *d)
		cap_dir = d;
}

static int sock_port(int fd, bool peer)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int ret;

	ret = peer ? getpeername(fd, (struct sockaddr *)&ss, &sl) :
		     getsockname(fd, (struct sockaddr *)&ss, &sl);
	if (ret)
		return 0;
	return rapt_sockaddr_port((struct sockaddr *)&ss);
}

/**
 * tcp_cap_open - start capturing a connected socket, if asked to
 * @sock: the connection's socket, before its first MPA byte moves
 *
 * Return: a capture handle, or NULL when RAPT_TCP_CAPTURE is unset or the
 * file cannot be created (logged; the connection goes on uncaptured).
 */
struct tcp_cap *tcp_cap_open(int sock)
{
	char path[PATH_MAX];
	struct tcp_cap *cap;
	int lport, rport, n;

	pthread_once(&cap_once, cap_read_env);
	if (!cap_dir)
		return NULL;
	lport = sock_port(sock, false);
	rport = sock_port(sock, true);
	n = snprintf(path, sizeof(path), "%s/%ld-%d-%d-%d.txt", cap_dir,
		     (long)getpid(), sock, lport, rport);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		tcp_warn("capture: path too long in %s", cap_dir);
		return NULL;
	}
	cap = calloc(1, sizeof(*cap));
	if (!cap)
		return NULL;
	cap->fd = rapt_sys_open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
				0644);
	if (cap->fd < 0) {
		tcp_warn("capture: cannot open %s: %s", path, strerror(errno));
		free(cap);
		return NULL;
	}
	tcp_dbg("capturing fd %d (port %d to %d) to %s", sock, lport, rport,
		path);
	return cap;
}

/**
 * tcp_cap_close - stop capturing
 * @cap: a handle from tcp_cap_open(), or NULL
 */
void tcp_cap_close(struct tcp_cap *cap)
{
	if (!cap)
		return;
	rapt_sys_close(cap->fd);
	free(cap);
}

static void cap_write(struct tcp_cap *cap, const char *buf, size_t len)
{
	ssize_t n;

	while (len) {
		n = rapt_sys_write(cap->fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;		/* a debugging aid: best effort */
		buf += n;
		len -= (size_t)n;
	}
}

/* Format @len bytes at dump offset @off into @out; returns its length. */
static size_t cap_format(char *out, const uint8_t *p, size_t len,
			 size_t off)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	for (i = 0; i < len; i++, off++) {
		if (!(off % CAP_LINE))
			o += (size_t)sprintf(out + o, "%s%06zx",
					     off ? "\n" : "", off);
		out[o++] = ' ';
		out[o++] = hex[p[i] >> 4];
		out[o++] = hex[p[i] & 15];
	}
	return o;
}

/**
 * tcp_cap_logv - record one system call's bytes
 * @cap: the connection's capture handle (not NULL)
 * @tx: true for bytes sent, false for bytes received
 * @iov: the call's buffers, after the call
 * @iovcnt: entries in @iov
 * @len: the bytes the call moved (its return value)
 */
void tcp_cap_logv(struct tcp_cap *cap, bool tx, const struct iovec *iov,
		  size_t iovcnt, size_t len)
{
	/* One chunk: 3 characters a byte, up to 20 an offset a line. */
	char out[CAP_CHUNK * 3 + (CAP_CHUNK / CAP_LINE + 1) * 20];
	size_t i, off = 0, k, o;

	if (!len)
		return;
	cap_write(cap, tx ? "O\n" : "I\n", 2);
	for (i = 0; i < iovcnt && off < len; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t left = iov[i].iov_len < len - off ?
			      iov[i].iov_len : len - off;

		while (left) {
			k = left < CAP_CHUNK ? left : CAP_CHUNK;
			o = cap_format(out, p, k, off);
			cap_write(cap, out, o);
			p += k;
			off += k;
			left -= k;
		}
	}
	cap_write(cap, "\n", 1);
}

/**
 * tcp_cap_log - record one system call's bytes from a single buffer
 * @cap: the connection's capture handle (not NULL)
 * @tx: true for bytes sent, false for bytes received
 * @buf: the bytes
 * @len: how many
 */
void tcp_cap_log(struct tcp_cap *cap, bool tx, const void *buf, size_t len)
{
	struct iovec v = { .iov_base = (void *)(uintptr_t)buf,
			   .iov_len = len };

	tcp_cap_logv(cap, tx, &v, 1, len);
}
