/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: closes held back.
 *
 * One job: a close that must not reach the peer yet.  The EP is done with
 * its socket (the EP perhaps freed), but the FIN or RST waits until a
 * deadline, and a last frame goes out right before it.  tcp_conn.c uses
 * it for a connection whose responder has not been heard since our RTR
 * (the RTR's settle time).  The IA owns what waits: its timers run on the
 * IA's engine, and closing the IA finishes whatever is left, each at its
 * deadline.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tcp_cm.h"

struct tcp_late {
	struct rapt_timer timer;
	struct rapt_list node;		/* in ia->late */
	struct tcp_ia *ia;
	uint64_t deadline_ns;
	int fd;
	bool abort;			/* RST, else FIN */
	uint8_t len;
	uint8_t frame[TCP_LATE_FRAME_MAX];
};

/* The last frame (if the socket takes it whole now), then the close. */
static void late_finish(struct tcp_late *l)
{
	if (l->len && send(l->fd, l->frame, l->len,
			   MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)l->len)
		tcp_dbg("fd %d: the frame before the close did not go: %m",
			l->fd);
	if (l->abort)
		tcp_sock_abort(l->fd);
	else
		close(l->fd);
	free(l);
}

static void late_fire(struct rapt_timer *t)
{
	struct tcp_late *l = rapt_container_of(t, struct tcp_late, timer);

	pthread_mutex_lock(&l->ia->lock);
	rapt_list_del(&l->node);
	l->ia->nlate--;
	pthread_mutex_unlock(&l->ia->lock);
	late_finish(l);
}

/**
 * tcp_late_close - close @fd @delay_ns from now
 * @ia: the IA whose engine holds the wait
 * @fd: a socket no one else will use; it belongs to this function
 * @frame: sent right before the close, or NULL
 * @len: its length, at most TCP_LATE_FRAME_MAX
 * @delay_ns: how long the close waits
 * @abort: an RST (SO_LINGER 0), else a plain close (a FIN after every
 *	queued byte)
 *
 * Without memory, or with TCP_LATE_MAX closes held already (each holds a
 * file descriptor: a loop of connections closed at once would run out),
 * the close happens now, @frame first.
 */
void tcp_late_close(struct tcp_ia *ia, int fd, const void *frame, size_t len,
		    uint64_t delay_ns, bool abort)
{
	struct tcp_late *l = NULL;

	pthread_mutex_lock(&ia->lock);
	if (ia->nlate < TCP_LATE_MAX && (l = calloc(1, sizeof(*l))))
		ia->nlate++;
	pthread_mutex_unlock(&ia->lock);
	if (!l) {
		if (frame && len)
			(void)send(fd, frame, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (abort)
			tcp_sock_abort(fd);
		else
			close(fd);
		return;
	}
	l->ia = ia;
	l->fd = fd;
	l->abort = abort;
	if (frame && len && len <= sizeof(l->frame)) {
		memcpy(l->frame, frame, len);
		l->len = (uint8_t)len;
	}
	l->deadline_ns = rapt_now_ns() + delay_ns;
	rapt_timer_init(&l->timer, late_fire);
	pthread_mutex_lock(&ia->lock);
	rapt_list_insert_after(&ia->late, &l->node);
	pthread_mutex_unlock(&ia->lock);
	rapt_timer_arm(ia->eng, &l->timer, delay_ns);
}

/**
 * tcp_late_disarm - stop the timers of every held close
 * @ia: the IA, about to stop its engine
 *
 * A timer already firing finishes its close; tcp_late_flush() does the
 * others once the engine has stopped.
 */
void tcp_late_disarm(struct tcp_ia *ia)
{
	struct rapt_list *n;

	pthread_mutex_lock(&ia->lock);
	for (n = ia->late.next; n != &ia->late; n = n->next)
		rapt_timer_cancel(ia->eng,
				  &rapt_container_of(n, struct tcp_late,
						     node)->timer);
	pthread_mutex_unlock(&ia->lock);
}

/**
 * tcp_late_flush - finish every held close, each at its deadline
 * @ia: the IA, its engine stopped (no timer fires any more)
 *
 * Waits at most the longest delay given to tcp_late_close(): the reason
 * for the wait holds for a consumer that closes its IA at once too.
 */
void tcp_late_flush(struct tcp_ia *ia)
{
	struct tcp_late *l;
	struct timespec ts;
	uint64_t now;

	while (!rapt_list_empty(&ia->late)) {
		l = rapt_container_of(ia->late.next, struct tcp_late, node);
		rapt_list_del(&l->node);
		ia->nlate--;
		now = rapt_now_ns();
		if (l->deadline_ns > now) {
			ts.tv_sec = (time_t)((l->deadline_ns - now) /
					     1000000000ull);
			ts.tv_nsec = (long)((l->deadline_ns - now) %
					    1000000000ull);
			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
		}
		late_finish(l);
	}
}
