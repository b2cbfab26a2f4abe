/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: listeners and connection requests in the handshake.
 *
 * One job: the PSP ops, accept4() of TCP connections, handshake
 * accounting (rapt_prov_psp_hs_begin/end, the handshake timer), reading
 * the MPA request, and handing a whole request to the core as a CR; a
 * request the core refuses or the requester abandons is closed here.
 *
 * Every listener and every request lives on the engine thread only.
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
#include <sys/socket.h>
#include <unistd.h>

#include "tcp_cm.h"

/* ------------------------------------------------------------------ */
/* Requests                                                           */
/* ------------------------------------------------------------------ */

void tcp_cr_close_free(struct tcp_cr *cr)
{
	struct tcp_psp *psp = cr->psp;

	rapt_timer_cancel(psp->ia->eng, &cr->timer);
	tcp_cap_close(cr->cap);
	tcp_cm_part_free(&cr->part);
	rapt_engine_close(psp->ia->eng, &cr->io, false);
	rapt_list_del(&cr->node);
	rapt_engine_retire(psp->ia->eng, &cr->retire, &cr->io, free, cr);
}

/* A request leaves the handshake without becoming a CR. */
static void cr_drop(struct tcp_cr *cr, int outcome)
{
	rapt_prov_psp_hs_end(cr->psp->cpsp, outcome);
	tcp_cr_close_free(cr);
}

/* A reject reply in the request's own revision (no FIN yet). */
static void reject_reply(int fd, struct tcp_cap *cap, uint8_t rev,
			 bool enhanced, const void *pdata, size_t len)
{
	struct tcp_mpa_frame f = {
		.type = TCP_MPA_REPLY,
		.rev = rev,
		.reject = true,
		.enhanced = enhanced,
		.pdata_len = (uint16_t)len,
		.pdata = pdata,
	};
	uint8_t buf[CM_FRAME_MAX];

	tcp_sock_send_frame(fd, cap, buf, tcp_mpa_build(&f, buf, sizeof(buf)));
}

/* Send a reject reply in the request's own revision, then our FIN. */
void tcp_cr_send_reject(int fd, struct tcp_cap *cap, uint8_t rev,
			bool enhanced, const void *pdata, size_t len)
{
	reject_reply(fd, cap, rev, enhanced, pdata, len);
	shutdown(fd, SHUT_WR);
}

/*
 * Reject a whole request: the reply with R=1 and @pdata, then our close
 * once the requester has closed (or CM_REJECT_LINGER_MS later).  Kernel
 * siw as requester reads the reply in one work item and handles our FIN
 * in another, which may run first: it then reports a reset with no
 * private data, and a consumer's reject (or BUSY) becomes a reject by no
 * one.  The requester closes when it has read the reply.
 */
void tcp_cr_refuse_request(struct tcp_cr *cr, const void *pdata, size_t len)
{
	reject_reply(cr->io.fd, cr->cap, cr->rev, cr->enhanced, pdata, len);
	cr->state = CR_REJECTED;
	if (!cr->io.registered &&
	    rapt_engine_add(cr->psp->ia->eng, &cr->io,
			    EPOLLIN | EPOLLRDHUP)) {
		shutdown(cr->io.fd, SHUT_WR);
		tcp_cr_close_free(cr);
		return;
	}
	rapt_timer_arm(cr->psp->ia->eng, &cr->timer,
		       CM_REJECT_LINGER_MS * CM_NS_PER_MS);
}

/* The requester of a rejected request closed, or did not in time. */
static void cr_rejected_end(struct tcp_cr *cr)
{
	tcp_sock_drain(cr->io.fd);	/* unread bytes would turn our FIN
					 * into an RST */
	tcp_cr_close_free(cr);
}

/* Refuse with one of rapt's own markers (BUSY, PROTOCOL, ...). */
static void cr_send_marker(int fd, struct tcp_cap *cap, uint8_t rev,
			   bool enhanced, uint32_t kind)
{
	uint8_t pd[RAPT_PDATA_HEADER_LEN];
	size_t len = rapt_prov_pdata_frame(kind, NULL, 0, pd);

	tcp_cr_send_reject(fd, cap, rev, enhanced, pd, len);
}

/* A request that looked like MPA but was not one we take (M=1, rev 3,
 * oversized pdata): answer R=1, as siw does for M=1, then drop it.
 * Bytes that are not MPA at all get no answer. */
static void cr_bad_request(struct tcp_cr *cr, int err, const uint8_t *buf)
{
	uint8_t rev;
	bool enh;

	tcp_dbg("bad MPA request: %s", tcp_wire_strerror(err));
	/* Past the key check, the parser has seen a whole header. */
	if (err != TCP_WIRE_EKEY) {
		rev = buf[TCP_MPA_KEY_LEN + 1];
		if (rev != TCP_MPA_REV1 && rev != TCP_MPA_REV2)
			rev = TCP_MPA_REV2;
		enh = rev == TCP_MPA_REV2 &&
		      (buf[TCP_MPA_KEY_LEN] & TCP_MPA_FLAG_E);
		cr_send_marker(cr->io.fd, cr->cap, rev, enh,
			       err == TCP_WIRE_EREV ? RAPT_PDATA_VERSION :
						      RAPT_PDATA_PROTOCOL);
	}
	cr_drop(cr, RAPT_HS_FAILED);
}

/* The requester went away before the consumer decided. */
static void cr_cancel(struct tcp_cr *cr)
{
	rapt_prov_cr_cancel(cr->ccr);
	tcp_cr_close_free(cr);
}

static void cr_keep(struct tcp_cr *cr, const struct tcp_mpa_frame *f)
{
	cr->rev = f->rev;
	cr->enhanced = f->enhanced;
	cr->crc = f->crc;
	cr->rtr = f->rtr;
	cr->ird = f->ird;
	cr->ord = f->ord;
}

/* Register @cr (edge-triggered): for the rest of its request, or, once
 * it is undecided, for its requester leaving.  Return: 0 or RAPT_E*. */
static int cr_watch(struct tcp_cr *cr)
{
	if (cr->io.registered)
		return 0;
	return rapt_engine_add(cr->psp->ia->eng, &cr->io,
			       EPOLLIN | EPOLLRDHUP | EPOLLET);
}

/* A whole request: hand it to the core as a CR. */
static void cr_arrived(struct tcp_cr *cr, const struct tcp_mpa_frame *f)
{
	struct rapt_core_psp *cpsp = cr->psp->cpsp;
	struct rapt_prov_request req;
	struct rapt_prov_verdict v;
	uint16_t len = f->pdata_len;
	union cm_sa la;
	int ret;

	rapt_timer_cancel(cr->psp->ia->eng, &cr->timer);
	rapt_prov_psp_hs_end(cpsp, RAPT_HS_DONE);
	cr_keep(cr, f);
	cr->peer_tcp = tcp_cm_mark_take(f->pdata, &len);
	memset(&req, 0, sizeof(req));
	req.pdata = f->pdata;
	req.pdata_len = len;
	req.rdma_read_in = f->enhanced ? f->ird : 0;
	req.rdma_read_out = f->enhanced ? f->ord : 0;
	tcp_cm_sa_get(&cr->raddr, &req.remote_addr);
	if (cr->psp->wildcard)
		tcp_cm_sa_local(cr->io.fd, &la);
	else
		la = cr->psp->laddr;
	tcp_cm_sa_get(&la, &req.local_addr);
	/* A decision runs on this thread: not before we return. */
	ret = rapt_prov_cr_arrive(cpsp, cr, &req, &cr->ccr, &v);
	if (ret) {
		if (ret == RAPT_EBUSY || ret == RAPT_EVERSION)
			tcp_cr_refuse_request(cr, v.pdata, v.pdata_len);
		else
			tcp_cr_close_free(cr);
		return;
	}
	/* From now on only the requester's departure matters: watched
	 * (cr_io ignores EPOLLIN) unless the consumer decides first. */
	cr->state = CR_UNDECIDED;
	if (!cr->io.registered)
		rapt_timer_arm(cr->psp->ia->eng, &cr->timer, CM_CR_WATCH_NS);
}

static void cr_refused_end(struct tcp_cr *cr);

static void cr_io(struct rapt_io *io, uint32_t events)
{
	struct tcp_cr *cr = (struct tcp_cr *)io;
	uint8_t buf[CM_READ_MAX];
	struct tcp_mpa_frame f;
	int n;

	if (cr->state == CR_UNDECIDED) {
		if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			cr_cancel(cr);
		return;
	}
	if (cr->state == CR_REFUSED) {
		cr_refused_end(cr);
		return;
	}
	if (cr->state == CR_REJECTED) {
		cr_rejected_end(cr);
		return;
	}
	n = tcp_cm_read_frame(cr->io.fd, cr->cap, &cr->part, buf,
			      TCP_MPA_REQUEST, &f);
	if (n > 0 && f.type != TCP_MPA_REQUEST)
		n = TCP_WIRE_EKEY;
	if (n > 0)
		cr_arrived(cr, &f);
	else if (cm_wire_err(n))
		cr_bad_request(cr, n, buf);
	else if (n || (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
		cr_drop(cr, RAPT_HS_FAILED);	/* closed or reset */
	else if (cr_watch(cr))
		cr_drop(cr, RAPT_HS_FAILED);	/* cannot wait for the rest */
}

static void cr_timeout(struct rapt_timer *t)
{
	struct tcp_cr *cr = rapt_container_of(t, struct tcp_cr, timer);

	if (cr->state == CR_UNDECIDED) {
		if (cr_watch(cr))
			tcp_warn("cannot watch a connection request: its "
				 "requester leaving is seen at the decision");
		return;
	}
	if (cr->state == CR_REFUSED) {
		cr_refused_end(cr);
		return;
	}
	if (cr->state == CR_REJECTED) {
		cr_rejected_end(cr);
		return;
	}
	tcp_dbg("a request stayed in the MPA handshake too long");
	cr_drop(cr, RAPT_HS_TIMEOUT);
}

/* ------------------------------------------------------------------ */
/* The listener                                                       */
/* ------------------------------------------------------------------ */

/*
 * Over the handshake limit: refuse without parsing anything, and without
 * counting.  The BUSY reject goes out once the request is in (it usually
 * is, as the initiator sends it with the connection): kernel siw as
 * initiator ignores a reply that comes before it has sent its request,
 * and then sees a reset connection instead of BUSY.  What arrived is read
 * (unparsed) so that the close sends a FIN, not a reset that could
 * overtake the reply.
 */
static void refuse_now(int fd)
{
	uint8_t sink[CM_FRAME_MAX];

	cr_send_marker(fd, NULL, TCP_MPA_REV2, true, RAPT_PDATA_BUSY);
	(void)!rapt_sys_recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
}

/* A refused request's data (or its end) came, or its wait is over. */
static void cr_refused_end(struct tcp_cr *cr)
{
	refuse_now(cr->io.fd);
	tcp_cr_close_free(cr);
}

static void psp_refuse(struct tcp_psp *psp, int fd)
{
	struct tcp_cr *cr;
	uint8_t c;

	if (rapt_sys_recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1 ||
	    !(cr = rapt_zalloc(1, sizeof(*cr)))) {
		refuse_now(fd);
		rapt_sys_close(fd);
		return;
	}
	cr->state = CR_REFUSED;
	cr->io.fd = fd;
	cr->io.handler = cr_io;
	cr->psp = psp;
	rapt_timer_init(&cr->timer, cr_timeout);
	rapt_list_add(&psp->reqs, &cr->node);
	if (rapt_engine_add(psp->ia->eng, &cr->io, EPOLLIN | EPOLLRDHUP)) {
		cr_refused_end(cr);
		return;
	}
	rapt_timer_arm(psp->ia->eng, &cr->timer,
		       CM_REFUSE_WAIT_MS * CM_NS_PER_MS);
}

/* Has @cr's requester sent nothing at all, not even unread bytes? */
static bool cr_silent(const struct tcp_cr *cr)
{
	uint8_t c;

	if (cr->state != CR_HANDSHAKE || cr->part.len)
		return false;
	return rapt_sys_recv(cr->io.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 &&
	       (errno == EAGAIN || errno == EWOULDBLOCK);
}

/*
 * Before a new request is counted: if the handshake limit is full, the
 * oldest request that has sent nothing makes room (DESIGN.md 3: the bound
 * protects memory, never at the cost of prompt clients; a flood of silent
 * connections must not lock anyone out).  The core answers BUSY only when
 * every slot holds a request that has sent something.  At most
 * handshake_limit requests are walked; the list has the newest first.
 */
static void psp_make_room(struct tcp_psp *psp)
{
	struct tcp_cr *cr, *oldest = NULL;
	struct rapt_list *pos;
	uint32_t n = 0;

	for (pos = psp->reqs.prev; pos != &psp->reqs; pos = pos->prev) {
		cr = rapt_container_of(pos, struct tcp_cr, node);
		if (cr->state != CR_HANDSHAKE)
			continue;
		n++;
		if (!oldest && cr_silent(cr))
			oldest = cr;
	}
	if (n < psp->hs_limit || !oldest)
		return;
	tcp_dbg("handshake limit %u: dropping the oldest silent connection",
		psp->hs_limit);
	cr_drop(oldest, RAPT_HS_FAILED);
}

static void psp_new_request(struct tcp_psp *psp, int fd,
			    const struct sockaddr_storage *peer)
{
	struct tcp_cr *cr;

	psp_make_room(psp);
	if (rapt_prov_psp_hs_begin(psp->cpsp)) {
		psp_refuse(psp, fd);
		return;
	}
	cr = rapt_zalloc(1, sizeof(*cr));
	if (!cr)
		goto err;
	/* TCP_NODELAY: the listener's */
	tcp_cm_sa_set(&cr->raddr, peer);
	cr->io.fd = fd;
	cr->io.handler = cr_io;
	cr->cap = tcp_cap_open(fd);
	cr->psp = psp;
	rapt_timer_init(&cr->timer, cr_timeout);
	rapt_list_add(&psp->reqs, &cr->node);
	rapt_timer_arm(psp->ia->eng, &cr->timer,
		       psp->hs_timeout_ms * CM_NS_PER_MS);
	/* An initiator sends its request as soon as TCP is up, so it is
	 * usually in already: take it now, unregistered (cr_io registers
	 * the request if it has to wait for more of it). */
	cr_io(&cr->io, 0);
	return;

err:
	rapt_prov_psp_hs_end(psp->cpsp, RAPT_HS_FAILED);
	tcp_sock_abort(fd);
}

static void psp_resume(struct rapt_timer *t)
{
	struct tcp_psp *psp = rapt_container_of(t, struct tcp_psp, timer);

	rapt_engine_mod(psp->ia->eng, &psp->io, EPOLLIN);
}

/* Out of descriptors: stop accepting for a while rather than spin. */
static void psp_pause(struct tcp_psp *psp, int err)
{
	tcp_warn("cannot accept a connection: %s; retrying in %d ms",
		 strerror(err), CM_ACCEPT_RETRY_MS);
	rapt_engine_mod(psp->ia->eng, &psp->io, 0);
	rapt_timer_arm(psp->ia->eng, &psp->timer,
		       CM_ACCEPT_RETRY_MS * CM_NS_PER_MS);
}

/* One connection per event: the registration is level-triggered, so the
 * next pass sees the rest, and a lone connection costs no accept4() that
 * fails with EAGAIN. */
static void psp_io(struct rapt_io *io, uint32_t events)
{
	struct tcp_psp *psp = (struct tcp_psp *)io;
	struct sockaddr_storage peer;
	socklen_t sl;
	int i, fd;

	for (i = 0; i < CM_ACCEPT_BATCH; i++) {
		sl = sizeof(peer);
		fd = rapt_sys_accept4(psp->io.fd, (struct sockaddr *)&peer,
				      &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			if (psp->cr_evd)
				atomic_store_explicit(&psp->cr_evd->accept_ns,
						      rapt_now_ns(),
						      memory_order_relaxed);
			psp_new_request(psp, fd, &peer);
			return;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM)
			psp_pause(psp, errno);
		else if (errno != EAGAIN && errno != EWOULDBLOCK)
			tcp_err("accept4: %m");
		return;
	}
}

static int psp_listen(const struct sockaddr_storage *addr)
{
	int fd, err, one = 1;

	fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		goto err;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Linux copies these to every accepted socket: no setsockopt each
	 * (an EP with a peer-timeout bound of its own sets it at accept). */
	tcp_sock_nodelay(fd);
	tcp_sock_peer_timeout(fd, RAPT_PEER_TIMEOUT_DEFAULT_MS);
	if (bind(fd, sa_of(addr), rapt_sockaddr_len(sa_of(addr))) ||
	    listen(fd, CM_LISTEN_BACKLOG))
		goto err_close;
	return fd;

err_close:
	err = errno;
	rapt_sys_close(fd);
	errno = err;
err:
	err = errno;
	rapt_prov_set_error("tcp: cannot listen on port %u: %s",
			    rapt_sockaddr_port(sa_of(addr)), strerror(err));
	if (err != EADDRINUSE)
		tcp_err("cannot listen on port %u: %s",
			rapt_sockaddr_port(sa_of(addr)), strerror(err));
	return rapt_errno_status(err);
}

static int psp_addr(struct tcp_ia *ia, const struct rapt_psp_attr *attr,
		    uint64_t service_id, struct sockaddr_storage *ss)
{
	uint16_t port = service_id == RAPT_SERVICE_ID_ANY ? 0 :
			(uint16_t)service_id;

	if (attr && attr->bind_addr.ss_family != AF_UNSPEC)
		return tcp_sa_copy((const struct sockaddr *)&attr->bind_addr,
				   port, ss);
	return tcp_sa_copy((const struct sockaddr *)&ia->addr, port, ss);
}

/**
 * tcp_psp_create - the psp_create op
 *
 * Listens on the IA's address (or @attr->bind_addr) with the service id
 * as the TCP port; RAPT_SERVICE_ID_ANY lets the kernel pick one.
 *
 * Return: 0, RAPT_EADDRINUSE, RAPT_EACCES, RAPT_EINVAL, RAPT_ENOMEM.
 */
int tcp_psp_create(void *pia, struct rapt_core_psp *cpsp, uint64_t service_id,
		   const struct rapt_psp_attr *attr, void *cr_pevd,
		   uint64_t *bound_id, void **ppsp)
{
	struct tcp_ia *ia = pia;
	struct sockaddr_storage ss;
	struct tcp_psp *psp;
	socklen_t sl = sizeof(ss);
	int ret, fd;

	ret = psp_addr(ia, attr, service_id, &ss);
	if (ret)
		return ret;
	psp = calloc(1, sizeof(*psp));
	if (!psp)
		return RAPT_ENOMEM;
	fd = psp_listen(&ss);
	if (fd < 0) {
		ret = fd;
		goto err_free;
	}
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	tcp_cm_sa_set(&psp->laddr, &ss);
	psp->wildcard = rapt_sockaddr_is_any(sa_of(&ss));
	psp->io.fd = fd;
	psp->io.handler = psp_io;
	psp->ia = ia;
	psp->cpsp = cpsp;
	rapt_list_init(&psp->reqs);
	psp->hs_timeout_ms = rapt_prov_psp_hs_timeout_ms(cpsp);
	psp->hs_limit = attr->handshake_limit;
	rapt_timer_init(&psp->timer, psp_resume);
	/* Before the engine can see the listener. */
	psp->cr_evd = cr_pevd;
	ret = rapt_engine_add(ia->eng, &psp->io, EPOLLIN);
	if (ret)
		goto err_close;
	if (psp->cr_evd)
		atomic_fetch_add(&psp->cr_evd->nlisten, 1);
	*bound_id = rapt_sockaddr_port(sa_of(&ss));
	*ppsp = psp;
	return 0;

err_close:
	rapt_sys_close(fd);
err_free:
	free(psp);
	return ret;
}

static void psp_teardown(void *arg)
{
	struct tcp_psp *psp = arg;
	struct tcp_cr *cr;

	rapt_timer_cancel(psp->ia->eng, &psp->timer);
	rapt_engine_close(psp->ia->eng, &psp->io, false);
	if (psp->cr_evd)
		atomic_fetch_sub(&psp->cr_evd->nlisten, 1);
	/* The core frees a PSP only with no undecided CR: what is left is
	 * still in the handshake. */
	while (!rapt_list_empty(&psp->reqs)) {
		cr = rapt_container_of(psp->reqs.next, struct tcp_cr, node);
		if (cr->state == CR_HANDSHAKE)
			cr_drop(cr, RAPT_HS_FAILED);
		else
			tcp_cr_close_free(cr);
	}
	rapt_engine_retire(psp->ia->eng, &psp->retire, &psp->io, free, psp);
}

/**
 * tcp_psp_free - the psp_free op
 *
 * Closes the listener and every request still in the handshake, on the
 * engine thread, and waits for that.
 *
 * Return: 0.
 */
int tcp_psp_free(void *ppsp)
{
	struct tcp_psp *psp = ppsp;

	rapt_engine_call(psp->ia->eng, psp_teardown, psp);
	return 0;
}
