/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the receive buffer of a connection that carries bulk data.
 *
 * One job: give a socket that receives large messages a receive buffer
 * of its own size, once, instead of the kernel's autotuned one.
 *
 * Why.  Linux starts a socket at tcp_rmem[1] (128 KiB) and grows it as
 * the application reads (receive-buffer autotuning).  A stream of RDMA
 * Reads or Writes, 16 messages of 64 KiB outstanding, ran at 0.84 (Reads)
 * and 0.97 (Writes) of the same stream with a fixed buffer of 8 MiB on
 * loopback (docs/performance.md, "RDMA read bandwidth: the receive buffer
 * and the receive pass").  A fixed SO_RCVBUF turns
 * autotuning off for that socket, so it is set only where it is at least
 * as large as what autotuning could give a busy stream here:
 * TCP_RCVBUF_AUTO, or net.core.rmem_max (the kernel's ceiling for
 * SO_RCVBUF) if that is smaller but at least TCP_RCVBUF_MIN.  Below that
 * (Linux's own default ceiling is 208 KiB) autotuning is left alone.
 *
 * When.  The first time a direct placement (tcp_rx.c) reads
 * TCP_RCVBUF_BULK bytes or more in one call: the peer streams.  A
 * connection that only exchanges small messages, or none (a connection
 * set up and torn down), never pays the system call.  The buffer is a
 * limit, not an allocation: an idle connection holds nothing more.
 *
 * RAPT_TCP_RCVBUF (rapt_tcp(7), read by tcp_prov.c with the provider's
 * other variables) overrides: a byte count, or 0 to leave every socket to
 * autotuning.
 */
#include "config.h"

#include <stdio.h>
#include <sys/socket.h>

#include "tcp.h"

#define TCP_RCVBUF_AUTO		(4u << 20)	/* the kernel doubles it */
#define TCP_RCVBUF_MIN		(1u << 20)
#define RMEM_MAX_PATH		"/proc/sys/net/core/rmem_max"

/* net.core.rmem_max, or 0 if it cannot be read. */
static unsigned long rmem_max(void)
{
	unsigned long v = 0;
	FILE *f = fopen(RMEM_MAX_PATH, "rec");	/* c: as rapt_sys_* */

	if (!f)
		return 0;
	if (fscanf(f, "%lu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/**
 * tcp_rcvbuf_auto - RAPT_TCP_RCVBUF's automatic choice (top of the file)
 *
 * Return: the byte count for SO_RCVBUF, 0 for none.
 */
uint32_t tcp_rcvbuf_auto(void)
{
	unsigned long max = rmem_max();

	if (max >= TCP_RCVBUF_AUTO)
		return TCP_RCVBUF_AUTO;
	return max >= TCP_RCVBUF_MIN ? (uint32_t)max : 0;
}

/**
 * tcp_rcvbuf_bulk - @ep's peer streams: its own receive buffer, once
 * @ep: the EP, locked, with its socket open
 */
void tcp_rcvbuf_bulk(struct tcp_ep *ep)
{
	int v = (int)ep->ia->rcvbuf;

	ep->rcvbuf_set = true;
	if (v && ep->io.fd >= 0 &&
	    setsockopt(ep->io.fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)))
		tcp_info("fd %d: SO_RCVBUF %d: %m", ep->io.fd, v);
}
