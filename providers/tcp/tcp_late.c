/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: closes held back.
 *
 * One job: a close that must not reach the peer yet.  The EP is done with
 * its socket (the EP perhaps freed), but the FIN or RST waits until the
 * peer sends something or a deadline passes, whichever comes first; at
 * the deadline a last frame goes out right before it.  tcp_conn.c uses it
 * for a connection whose responder has not been heard since our RTR (the
 * RTR's settle time): a byte from the peer means it has read the RTR.
 *
 * The IA owns what waits: the socket (the EP's, its registration moved
 * over) is watched by the IA's engine, and closing the IA finishes
 * whatever is left, each at its deadline or when its peer speaks.  Everything after the hand-over
 * runs in engine passes, one at a time.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp_cm.h"

struct tcp_late {
	struct rapt_io io;		/* first: the handler's container */
	struct rapt_timer timer;
	struct rapt_retire retire;
	struct rapt_list node;		/* in ia->late */
	struct tcp_ia *ia;
	uint64_t deadline_ns;
	bool abort;			/* RST, else FIN */
	uint8_t len;
	uint8_t frame[TCP_LATE_FRAME_MAX];
};

static void late_free(void *arg)
{
	free(arg);
}

/*
 * In a pass: the frame unless the peer spoke, then the close.  A graceful
 * close reads what the peer sent first: a socket closed with unread bytes
 * sends an RST, not a FIN.
 */
static void late_finish(struct tcp_late *l, bool heard)
{
	struct rapt_engine *eng = l->ia->eng;

	pthread_mutex_lock(&l->ia->lock);
	rapt_list_del(&l->node);
	l->ia->nlate--;
	pthread_mutex_unlock(&l->ia->lock);
	rapt_timer_cancel(eng, &l->timer);
	if (!heard && l->len &&
	    rapt_sys_send(l->io.fd, l->frame, l->len,
			  MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)l->len)
		tcp_dbg("fd %d: the frame before the close did not go: %m",
			l->io.fd);
	if (!l->abort)
		tcp_sock_drain(l->io.fd);
	rapt_engine_close(eng, &l->io, l->abort);
	rapt_engine_retire(eng, &l->retire, &l->io, late_free, l);
}

/* The peer sent something (or hung up): it has read our RTR. */
static void late_io(struct rapt_io *io, uint32_t events)
{
	(void)events;
	late_finish((struct tcp_late *)io, true);
}

static void late_fire(struct rapt_timer *t)
{
	late_finish(rapt_container_of(t, struct tcp_late, timer), false);
}

/* Close @io's socket now, @frame first (when there is no room to hold
 * it). */
static void close_now(struct tcp_ia *ia, struct rapt_io *io,
		      const void *frame, size_t len, bool abort)
{
	if (frame && len)
		(void)rapt_sys_send(io->fd, frame, len,
				    MSG_DONTWAIT | MSG_NOSIGNAL);
	if (!abort)
		tcp_sock_drain(io->fd);
	rapt_engine_close(ia->eng, io, abort);
}

/**
 * tcp_late_close - close a socket once its peer speaks, at most @delay_ns
 * on
 * @ia: the IA whose engine watches it
 * @from: the registration of the socket (an EP's, whose lock the caller
 *	holds); its socket, and the watch over it, move here (@from->fd is
 *	-1 on return)
 * @frame: sent right before a close at the deadline, or NULL
 * @len: its length, at most TCP_LATE_FRAME_MAX
 * @delay_ns: the deadline, from now
 * @abort: an RST (SO_LINGER 0), else a plain close (a FIN after every
 *	queued byte)
 *
 * Without memory, or with TCP_LATE_MAX closes held already (each holds a
 * file descriptor: a loop of connections closed at once would run out),
 * the close happens now, @frame first.
 */
void tcp_late_close(struct tcp_ia *ia, struct rapt_io *from,
		    const void *frame, size_t len, uint64_t delay_ns,
		    bool abort)
{
	struct tcp_late *l = NULL;
	int ret;

	pthread_mutex_lock(&ia->lock);
	if (ia->nlate < TCP_LATE_MAX && (l = calloc(1, sizeof(*l))))
		ia->nlate++;
	pthread_mutex_unlock(&ia->lock);
	if (!l) {
		close_now(ia, from, frame, len, abort);
		return;
	}
	l->ia = ia;
	l->io.handler = late_io;
	l->abort = abort;
	if (frame && len && len <= sizeof(l->frame)) {
		memcpy(l->frame, frame, len);
		l->len = (uint8_t)len;
	}
	l->deadline_ns = rapt_now_ns() + delay_ns;
	rapt_timer_init(&l->timer, late_fire);
	/* One EPOLL_CTL_MOD moves the watch (a dup, an ADD, a DEL and a
	 * close cost four calls). */
	if (from->registered) {
		ret = rapt_engine_rebind(ia->eng, from, &l->io,
					 EPOLLIN | EPOLLRDHUP);
	} else {
		l->io.fd = from->fd;
		ret = rapt_engine_add(ia->eng, &l->io, EPOLLIN | EPOLLRDHUP);
	}
	if (ret) {
		l->io.fd = -1;
		pthread_mutex_lock(&ia->lock);
		ia->nlate--;
		pthread_mutex_unlock(&ia->lock);
		free(l);
		close_now(ia, from, frame, len, abort);
		return;
	}
	from->fd = -1;
	pthread_mutex_lock(&ia->lock);
	rapt_list_insert_after(&ia->late, &l->node);
	pthread_mutex_unlock(&ia->lock);
	rapt_timer_arm(ia->eng, &l->timer, delay_ns);
}

/* In a pass: wait for each held close's peer or deadline, then close. */
static void late_flush_call(void *arg)
{
	struct tcp_ia *ia = arg;
	struct pollfd p = { .events = POLLIN | POLLRDHUP };
	struct tcp_late *l;
	uint64_t now;
	int ms, n;

	for (;;) {
		pthread_mutex_lock(&ia->lock);
		l = rapt_list_empty(&ia->late) ? NULL :
		    rapt_container_of(ia->late.next, struct tcp_late, node);
		pthread_mutex_unlock(&ia->lock);
		if (!l)
			return;
		now = rapt_now_ns();
		ms = l->deadline_ns > now ?
		     (int)((l->deadline_ns - now + 999999) / 1000000) : 0;
		p.fd = l->io.fd;
		do
			n = rapt_sys_poll(&p, 1, ms);
		while (n < 0 && errno == EINTR);
		late_finish(l, n > 0);
	}
}

/**
 * tcp_late_flush - finish every held close
 * @ia: the IA, about to stop its engine
 *
 * Waits at most the longest delay given to tcp_late_close(): the reason
 * for the wait holds for a consumer that closes its IA at once too.
 */
void tcp_late_flush(struct tcp_ia *ia)
{
	rapt_engine_call(ia->eng, late_flush_call, ia);
}
