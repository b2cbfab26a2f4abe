/* SPDX-License-Identifier: MIT */
/*
 * Area "disconnect": graceful and abrupt disconnects from either side,
 * both at once, cancelling a connect; outstanding work completes FLUSHED
 * before DISCONNECTED; a peer process that is killed shows up as BROKEN or
 * DISCONNECTED in bounded time.
 *
 * The killed peer is a second rapt-conformance process (--child-connect),
 * spawned by the active role in both modes.  An in-process provider cannot
 * connect it: the test is then skipped with the child's answer as reason.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf.h"

extern char **environ;

/* The bound on noticing a vanished peer, in ms (scaled). */
#define KILL_BOUND_MS 10000

#define EXPECT_STATE(ep, want) EXPECT_EP_STATE(ep, want)

/* After DISCONNECTED is seen, the flushes of @n receives (cookies
 * 0..n-1) are already queued: DISCONNECTED comes after its flushes. */
static void flushed_before(struct conf_ctx *c, struct conf_ep_set *s,
			   unsigned int n)
{
	struct rapt_event ev;
	unsigned int i;
	int rc;

	for (i = 0; i < n; i++) {
		rc = rapt_evd_dequeue(s->recv_evd, &ev);
		if (!EXPECT_MSG(rc == 0,
				"DISCONNECTED was delivered before the flush of receive %u",
				i))
			return;
		EXPECT_MSG(ev.type == RAPT_EV_DTO &&
			   ev.u.dto.status == RAPT_DTO_FLUSHED &&
			   ev.u.dto.op == RAPT_OP_RECV && ev.u.dto.cookie == i,
			   "receive %u: %s status %s cookie %llu, expected FLUSHED",
			   i, rapt_event_name(ev.type),
			   conf_dto_status_name(ev.u.dto.status),
			   (unsigned long long)ev.u.dto.cookie);
	}
	EXPECT_EMPTY(s->recv_evd, 0);
}

/* One side disconnects gracefully; both flush their receives first. */
static void graceful(struct conf_ctx *c, bool initiator, bool active)
{
	struct conf_ep_set s;
	struct rapt_event ev;
	uint8_t b = 1;

	if (active)
		TRY(conf_pair_active(c, &s, NULL, 3, 64));
	else
		TRY(conf_pair_passive(c, &s, NULL, 3, 64));
	TRY(conf_barrier(c, "up"));
	if (initiator) {
		EXPECT_RC(rapt_ep_disconnect(s.ep, 1u << 9, NULL, 0),
			  RAPT_EINVAL);
		if (!(c->attr.caps & RAPT_CAP_DISCONNECT_PDATA))
			EXPECT_RC(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL,
						     &b, 1), RAPT_ENOTSUP);
		else
			EXPECT_RC(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL,
						     NULL, 3), RAPT_EINVAL);
		EXPECT_STATE(s.ep, RAPT_EP_CONNECTED);
		REQUIRE_OK(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, NULL,
					      0));
	}
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, &ev);
	EXPECT(ev.u.conn.ep == s.ep);
	flushed_before(c, &s, 3);
	EXPECT_STATE(s.ep, RAPT_EP_DISCONNECTED);
	EXPECT_EMPTY(s.conn_evd, 20);
	TRY(conf_barrier(c, "down"));
out:
	return;
}

static void t_ga_active(struct conf_ctx *c)
{
	graceful(c, true, true);
}

static void t_ga_passive(struct conf_ctx *c)
{
	graceful(c, false, false);
}

static void t_gp_active(struct conf_ctx *c)
{
	graceful(c, false, true);
}

static void t_gp_passive(struct conf_ctx *c)
{
	graceful(c, true, false);
}

#define NSEND 8

/* Sends queued before a graceful disconnect are finished, not flushed. */
static void drain_active(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_sge sge;
	unsigned int i;

	TRY(conf_pair_active(c, &s, NULL, 0, 0));
	TRY(conf_barrier(c, "posted"));
	for (i = 0; i < NSEND; i++) {
		conf_fill(s.buf + 1024 * i, 1000, i);
		sge.addr = (uintptr_t)(s.buf + 1024 * i);
		sge.length = 1000;
		sge.lkey = s.mi.lkey;
		REQUIRE_OK(rapt_ep_post_send(s.ep, &sge, 1, i, 0));
	}
	REQUIRE_OK(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
	for (i = 0; i < NSEND; i++)
		REQUIRE_DTO(s.req_evd, RAPT_OP_SEND, RAPT_DTO_SUCCESS, i, NULL);
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, NULL);
	TRY(conf_barrier(c, "down"));
out:
	return;
}

static void drain_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;
	unsigned int i;

	TRY(conf_pair_passive(c, &s, NULL, NSEND + 2, 1024));
	TRY(conf_barrier(c, "posted"));
	for (i = 0; i < NSEND; i++) {
		REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, i, &ev);
		EXPECT_EQ(ev.u.dto.length, 1000);
		EXPECT(conf_verify(s.buf + 1024 * i, 1000, i) < 0);
	}
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, NULL);
	for (i = NSEND; i < NSEND + 2; i++)
		REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_FLUSHED, i,
			    NULL);
	TRY(conf_barrier(c, "down"));
out:
	return;
}

/*
 * A send the peer never takes (no receive posted; IB and RoCE retry the
 * RNR for ever): a graceful disconnect waits for it a while, then closes
 * anyway: the send FLUSHED, then DISCONNECTED on both sides.  The wait
 * sleeps: this process's threads switch fewer than STUCK_SWITCHES_MAX
 * times a second meanwhile (a close that looked every 200 us switched
 * thousands of times a second).
 */
#define STUCK_WAIT_MS		30000
#define STUCK_SWITCHES_MAX	500

static int stuck_skip(struct conf_ctx *c)
{
	if (conf_rnr_nak(c))
		return 0;
	conf_skip(c, "a send with no receive waits (RNR) only on IB and RoCE; on iWARP it breaks the connection");
	return -1;
}

/* Context switches of this process's threads so far. */
static uint64_t switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
}

static void stuck_active(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_sge sge;
	uint64_t n0, n;
	int64_t t0, us;
	int rc;

	if (stuck_skip(c))
		goto out;
	TRY(conf_pair_active(c, &s, NULL, 0, 0));
	/* Keep the peer timeout out of it: a send held by RNR holds the
	 * provider's probe behind it too. */
	rc = rapt_ep_set_peer_timeout(s.ep, 4 * STUCK_WAIT_MS);
	REQUIRE(rc == 0 || rc == RAPT_ENOTSUP);
	TRY(conf_barrier(c, "posted"));
	sge.addr = (uintptr_t)s.buf;
	sge.length = 64;
	sge.lkey = s.mi.lkey;
	REQUIRE_OK(rapt_ep_post_send(s.ep, &sge, 1, 7, 0));
	EXPECT_EMPTY(s.req_evd, 200);	/* it waits for a receive */
	t0 = conf_now_us();
	n0 = switches();
	REQUIRE_OK(rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, NULL, 0));
	rc = conf_wait(c, s.conn_evd, conf_tmo(c, STUCK_WAIT_MS), &ev);
	us = conf_now_us() - t0;
	n = switches() - n0;
	REQUIRE_MSG(rc == 0 && ev.type == RAPT_EV_DISCONNECTED,
		    "a graceful disconnect with a send stuck on its peer: %s",
		    rc ? rapt_err_name(rc) : rapt_event_name(ev.type));
	/* Its flush came first: queued already. */
	REQUIRE_OK(rapt_evd_dequeue(s.req_evd, &ev));
	EXPECT_MSG(ev.type == RAPT_EV_DTO && ev.u.dto.op == RAPT_OP_SEND &&
		   ev.u.dto.cookie == 7 &&
		   ev.u.dto.status == RAPT_DTO_FLUSHED,
		   "the stuck send: %s status %s cookie %llu, expected FLUSHED",
		   rapt_event_name(ev.type),
		   conf_dto_status_name(ev.u.dto.status),
		   (unsigned long long)ev.u.dto.cookie);
	conf_note(c, "DISCONNECTED after %lld ms, %llu thread switches",
		  (long long)(us / 1000), (unsigned long long)n);
	EXPECT_MSG(us > 0 && n * 1000000 / (uint64_t)us < STUCK_SWITCHES_MAX,
		   "%llu thread switches in the %lld ms the close waited: over %d a second, a busy wait",
		   (unsigned long long)n, (long long)(us / 1000),
		   STUCK_SWITCHES_MAX);
	TRY(conf_barrier(c, "down"));
out:
	return;
}

static void stuck_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;
	int rc;

	if (stuck_skip(c))
		goto out;
	TRY(conf_pair_passive(c, &s, NULL, 0, 64));
	TRY(conf_barrier(c, "posted"));
	rc = conf_wait(c, s.conn_evd, conf_tmo(c, STUCK_WAIT_MS), &ev);
	REQUIRE_MSG(rc == 0 && ev.type == RAPT_EV_DISCONNECTED,
		    "the peer's graceful disconnect with a send stuck here: %s",
		    rc ? rapt_err_name(rc) : rapt_event_name(ev.type));
	EXPECT_EMPTY(s.recv_evd, 0);	/* nothing was delivered */
	TRY(conf_barrier(c, "down"));
out:
	return;
}

/* Abrupt: every posted operation completes exactly once, SUCCESS or
 * FLUSHED, before DISCONNECTED; the peer sees the end too. */
static void abrupt_active(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_sge sge;
	unsigned int i, seen = 0;

	TRY(conf_pair_active(c, &s, NULL, 2, 64));
	TRY(conf_barrier(c, "posted"));
	for (i = 0; i < NSEND; i++) {
		sge.addr = (uintptr_t)(s.buf + 1024 + 64 * i);
		sge.length = 64;
		sge.lkey = s.mi.lkey;
		REQUIRE_OK(rapt_ep_post_send(s.ep, &sge, 1, i, 0));
	}
	REQUIRE_OK(rapt_ep_disconnect(s.ep, RAPT_CLOSE_ABRUPT, NULL, 0));
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, &ev);
	/* Delivered before DISCONNECTED, so all there now. */
	while (rapt_evd_dequeue(s.req_evd, &ev) == 0) {
		REQUIRE(ev.type == RAPT_EV_DTO && ev.u.dto.cookie < NSEND);
		EXPECT_MSG(ev.u.dto.status == RAPT_DTO_SUCCESS ||
			   ev.u.dto.status == RAPT_DTO_FLUSHED,
			   "send %llu after an abrupt disconnect: %s",
			   (unsigned long long)ev.u.dto.cookie,
			   conf_dto_status_name(ev.u.dto.status));
		EXPECT_MSG(!(seen & (1u << ev.u.dto.cookie)),
			   "send %llu completed twice",
			   (unsigned long long)ev.u.dto.cookie);
		seen |= 1u << ev.u.dto.cookie;
	}
	EXPECT_MSG(seen == (1u << NSEND) - 1,
		   "sends completed before DISCONNECTED: %#x of %#x", seen,
		   (1u << NSEND) - 1);
	flushed_before(c, &s, 2);
	TRY(conf_barrier(c, "down"));
out:
	return;
}

static void abrupt_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;
	unsigned int got = 0, flushed = 0;

	TRY(conf_pair_passive(c, &s, NULL, NSEND, 64));
	TRY(conf_barrier(c, "posted"));
	TRY(conf_wait_down(c, &s, NULL));
	while (rapt_evd_dequeue(s.recv_evd, &ev) == 0) {
		REQUIRE(ev.type == RAPT_EV_DTO);
		if (ev.u.dto.status == RAPT_DTO_SUCCESS) {
			EXPECT_MSG(!flushed,
				   "a receive succeeded after one was flushed");
			got++;
		} else if (EXPECT_EQ(ev.u.dto.status, RAPT_DTO_FLUSHED))
			flushed++;
	}
	EXPECT_MSG(got + flushed == NSEND,
		   "%u receives completed, %u flushed, of %u posted", got,
		   flushed, NSEND);
	TRY(conf_barrier(c, "down"));
out:
	return;
}

/* Both sides disconnect at once: one DISCONNECTED each, nothing else. */
static void both(struct conf_ctx *c, bool active)
{
	struct conf_ep_set s;
	int rc;

	if (active)
		TRY(conf_pair_active(c, &s, NULL, 1, 64));
	else
		TRY(conf_pair_passive(c, &s, NULL, 1, 64));
	TRY(conf_barrier(c, "go"));
	rc = rapt_ep_disconnect(s.ep, RAPT_CLOSE_GRACEFUL, NULL, 0);
	EXPECT_MSG(rc == 0 || rc == RAPT_ESTATE,
		   "a disconnect racing the peer's returned %s",
		   rapt_err_name(rc));
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, NULL);
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 0, NULL);
	EXPECT_STATE(s.ep, RAPT_EP_DISCONNECTED);
	EXPECT_EMPTY(s.conn_evd, 50);
	TRY(conf_barrier(c, "down"));
out:
	return;
}

static void t_both_active(struct conf_ctx *c)
{
	both(c, true);
}

static void t_both_passive(struct conf_ctx *c)
{
	both(c, false);
}

/* Disconnect in ACTIVE_PENDING cancels the connect: DISCONNECTED, never
 * ESTABLISHED. */
static void cancel_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	struct conf_ep_set s;
	uint64_t sid;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_post_recvs(c, &s, 0, 1, 64));
	TRY(conf_lookup(c, &addr, &sid));
	REQUIRE_OK(rapt_ep_connect(s.ep, (struct sockaddr *)&addr, sid, NULL,
				   0, conf_tmo(c, 20000) * 1000LL));
	TRY(conf_barrier(c, "cr-seen"));
	REQUIRE_OK(rapt_ep_disconnect(s.ep, RAPT_CLOSE_ABRUPT, NULL, 0));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_FLUSHED, 0, NULL);
	REQUIRE_EVENT(s.conn_evd, RAPT_EV_DISCONNECTED, NULL);
	EXPECT_STATE(s.ep, RAPT_EP_DISCONNECTED);
	/* Whether the peer sees the request go is this IA's to say. */
	TRY(conf_send_u64(c, "withdraws",
			  !!(c->attr.caps & RAPT_CAP_CONNECT_CANCEL)));
	TRY(conf_barrier(c, "cancelled"));
	EXPECT_EMPTY(s.conn_evd, 100);
	TRY(conf_barrier(c, "done"));
out:
	return;
}

static void cancel_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct conf_ep_set s;
	struct rapt_psp_info pi = { 0 };
	uint64_t withdraws = 1;
	struct rapt_event ev;
	struct rapt_cr *cr;
	int rc, i;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	TRY(conf_get_cr(c, &l, conf_tmo(c, CONF_TMO_MS), &cr, NULL));
	TRY(conf_barrier(c, "cr-seen"));
	TRY(conf_recv_u64(c, "withdraws", &withdraws));
	TRY(conf_barrier(c, "cancelled"));
	for (i = 0; withdraws && i < 100; i++) {
		REQUIRE_OK(rapt_psp_query(l.psp, &pi, sizeof(pi)));
		if (!pi.pending_crs)
			break;
		conf_sleep_ms(10);
	}
	if (withdraws)
		EXPECT_MSG(pi.pending_crs == 0,
			   "the CR of a cancelled connect still holds a backlog slot");
	else
		conf_skip(c, "the requesting IA does not advertise RAPT_CAP_CONNECT_CANCEL: the request stays with the peer");
	rc = rapt_cr_accept(cr, s.ep, NULL, 0);
	conf_untrack(c, cr);
	EXPECT_MSG(rc == RAPT_ENOTCONN || rc == 0,
		   "accepting a cancelled request returned %s",
		   rapt_err_name(rc));
	if (rc == 0) {
		REQUIRE(conf_wait(c, s.conn_evd, conf_tmo(c, CONF_TMO_MS),
				  &ev) == 0);
		EXPECT_MSG(ev.type != RAPT_EV_ESTABLISHED ||
			   conf_wait_down(c, &s, NULL) == 0,
			   "the accepting EP of a cancelled request stayed up");
	}
	TRY(conf_barrier(c, "done"));
out:
	return;
}

/* ---- a peer process that dies ---------------------------------------- */

/**
 * conf_child_main - the peer process of "disconnect/peer_killed"
 * @ia_name: IA to open (NULL: the best)
 * @addr: the passive role's address
 * @sid: its service id, decimal
 *
 * Connects, prints "ESTABLISHED" (or "FAILED <why>") on stdout, and waits
 * to be killed; it exits by itself if its parent goes away.
 *
 * Return: the process exit status.
 */
int conf_child_main(const char *ia_name, const char *addr, const char *sid)
{
	struct rapt_evd *conn = NULL, *dto = NULL;
	struct sockaddr_storage ss;
	struct rapt_event ev;
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_ep *ep;
	pid_t parent = getppid();
	int rc;

	if (conf_addr_parse(addr, &ss)) {
		printf("FAILED bad address %s\n", addr);
		return 2;
	}
	rc = rapt_ia_open(ia_name, &ia);
	if (!rc)
		rc = rapt_pz_create(ia, &pz);
	if (!rc)
		rc = rapt_evd_create(ia, 8, RAPT_EVD_CONNECTION, &conn);
	if (!rc)
		rc = rapt_evd_create(ia, 8, RAPT_EVD_DTO, &dto);
	if (!rc)
		rc = rapt_ep_create(pz, dto, dto, conn, NULL, &ep);
	if (!rc)
		rc = rapt_ep_post_recv(ep, NULL, 0, 1);
	if (!rc)
		rc = rapt_ep_connect(ep, (struct sockaddr *)&ss,
				     strtoull(sid, NULL, 10), NULL, 0,
				     10000000);
	if (!rc)
		rc = rapt_evd_wait(conn, 15000000, 1, &ev, NULL);
	if (rc) {
		printf("FAILED %s: %s\n", rapt_err_name(rc), rapt_last_error());
		return 1;
	}
	if (ev.type != RAPT_EV_ESTABLISHED) {
		printf("FAILED the connect ended with %s%s%s\n",
		       rapt_event_name(ev.type),
		       ev.type == RAPT_EV_NON_PEER_REJECTED ? "/" : "",
		       ev.type == RAPT_EV_NON_PEER_REJECTED ?
		       conf_reason_name(ev.u.conn.reason) : "");
		return 1;
	}
	printf("ESTABLISHED\n");
	fflush(stdout);
	while (getppid() == parent)
		sleep(1);
	return 0;
}

/* Spawn the child; its stdout is *@rfd. */
static pid_t spawn_child(struct conf_ctx *c, const char *arg, int *rfd)
{
	posix_spawn_file_actions_t fa;
	const char *argv[8];
	int p[2], n = 0;
	pid_t pid;

	if (!conf_opt.self_exe) {
		FAIL("cannot find this program's path for the peer process");
		return -1;
	}
	if (pipe(p)) {
		FAIL("pipe: %s", strerror(errno));
		return -1;
	}
	argv[n++] = conf_opt.self_exe;
	argv[n++] = "--child-connect";
	argv[n++] = arg;
	if (conf_opt.ia_name) {
		argv[n++] = "-p";
		argv[n++] = conf_opt.ia_name;
	}
	argv[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	if (posix_spawn(&pid, conf_opt.self_exe, &fa, NULL,
			(char *const *)argv, environ)) {
		FAIL("cannot start the peer process %s", conf_opt.self_exe);
		pid = -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (pid < 0)
		close(p[0]);
	else
		*rfd = p[0];
	return pid;
}

/* Read the child's one line within @ms. */
static int child_line(int fd, char *buf, size_t len, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	ssize_t n;

	while (got + 1 < len) {
		if (poll(&pfd, 1, ms) != 1)
			break;
		n = read(fd, buf + got, len - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(buf, '\n', got))
			break;
	}
	buf[got] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return got ? 0 : -1;
}

static void killed_active(struct conf_ctx *c)
{
	struct sockaddr_storage addr;
	char arg[128], a[64], line[512];
	pid_t pid = -1;
	uint64_t sid;
	int fd = -1, st;

	if (c->params.flags & CONF_P_NO_FORK) {
		conf_skip(c, "--no-fork");
		return;
	}
	TRY(conf_lookup(c, &addr, &sid));
	snprintf(arg, sizeof(arg), "%s,%llu",
		 conf_addr_str(&addr, a, sizeof(a)), (unsigned long long)sid);
	pid = spawn_child(c, arg, &fd);
	TRY(pid < 0);
	if (child_line(fd, line, sizeof(line), conf_tmo(c, 20000))) {
		FAIL("the peer process said nothing within %d ms",
		     conf_tmo(c, 20000));
		goto out;
	}
	if (strcmp(line, "ESTABLISHED")) {
		TRY(conf_send_u64(c, "child", 0));
		/* Only a provider that says it stays in one process may
		 * turn a failed connect into a skip. */
		if (c->attr.caps & RAPT_CAP_CROSS_PROCESS)
			FAIL("the IA advertises RAPT_CAP_CROSS_PROCESS but a second process could not connect: %s",
			     line);
		else
			conf_skip(c, "a second process could not connect (%s): IA does not advertise RAPT_CAP_CROSS_PROCESS",
				  line);
		goto out;
	}
	TRY(conf_send_u64(c, "child", 1));
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	pid = -1;
	TRY(conf_send_u64(c, "killed", 1));
	TRY(conf_barrier(c, "down"));
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	if (fd >= 0)
		close(fd);
}

static void killed_passive(struct conf_ctx *c)
{
	struct conf_listener l;
	struct conf_ep_set s;
	struct rapt_event ev;
	struct rapt_cr *cr;
	uint64_t child, v;
	int64_t t0, dt;
	int rc;

	TRY(conf_set_create(c, &s, NULL));
	TRY(conf_post_recvs(c, &s, 0, 2, 64));
	TRY(conf_listen(c, &l, NULL));
	TRY(conf_publish(c, &l));
	/* The child either connects or tells the active role why not. */
	rc = conf_wait(c, l.cr_evd, conf_tmo(c, 30000), &ev);
	if (rc) {
		if (rc != 1)
			FAIL("no connection request from the peer process");
		goto out;
	}
	REQUIRE_EQ(ev.type, RAPT_EV_CR_ARRIVAL);
	cr = ev.u.cr.cr;
	conf_track(c, CONF_OBJ_CR, cr);
	TRY(conf_accept(c, cr, &s, NULL, 0));
	TRY(conf_recv_u64(c, "child", &child));
	REQUIRE(child == 1);
	TRY(conf_recv_u64(c, "killed", &v));
	t0 = conf_now_us();
	rc = conf_wait(c, s.conn_evd, conf_tmo(c, KILL_BOUND_MS), &ev);
	dt = conf_now_us() - t0;
	REQUIRE_MSG(rc == 0, "the peer process was killed %lld ms ago and the EP says nothing",
		    (long long)dt / 1000);
	EXPECT_MSG(ev.type == RAPT_EV_BROKEN ||
		   ev.type == RAPT_EV_DISCONNECTED,
		   "after the peer process died: %s, expected BROKEN or DISCONNECTED",
		   rapt_event_name(ev.type));
	conf_note(c, "peer death noticed after %lld ms", (long long)dt / 1000);
	flushed_before(c, &s, 2);
	EXPECT_STATE(s.ep, RAPT_EP_DISCONNECTED);
	TRY(conf_barrier(c, "down"));
out:
	return;
}

/*
 * A peer that goes silent (its host dies, the link is cut) must end in
 * BROKEN or DISCONNECTED within the EP's peer timeout, on an idle
 * connection and on one with data in flight.  Both roles set a short
 * bound; the active role cuts the link of the data connection only (the
 * control channel lives on), and in the busy case keeps sends in flight.
 */
#define SILENT_BOUND_MS		2000u
#define SILENT_SENDS		16

/* Both roles agree whether the test can run: 0 to go on. */
static int silent_agree(struct conf_ctx *c, bool active)
{
	const char *why = conf_netcut_why_not();
	uint64_t ok = why == NULL;

	if (active ? conf_send_u64(c, "can-cut", ok) :
		     conf_recv_u64(c, "can-cut", &ok))
		return -1;
	if (!ok) {
		conf_skip(c, "%s", why ? why : "the active role cannot cut a link");
		return -1;
	}
	return 0;
}

/* Set a bound of @bound ms on @ep and read it back: 0, 1 if the
 * provider has none (RAPT_ENOTSUP), -1 on a failure (recorded). */
static int peer_bound(struct conf_ctx *c, struct rapt_ep *ep, uint32_t bound)
{
	uint32_t ms = 0;
	int rc = rapt_ep_set_peer_timeout(ep, bound);

	if (rc == RAPT_ENOTSUP)
		return 1;
	if (!EXPECT_OK(rc) || !EXPECT_OK(rapt_ep_get_peer_timeout(ep, &ms)) ||
	    !EXPECT_EQ(ms, bound))
		return -1;
	return 0;
}

/* Set the bound on @ep; 0, or -1 (skipped: the provider has none). */
static int silent_bound(struct conf_ctx *c, struct rapt_ep *ep)
{
	int rc = peer_bound(c, ep, SILENT_BOUND_MS);

	if (rc == 1)
		conf_skip(c, "the provider has no peer timeout (RAPT_ENOTSUP)");
	return rc ? -1 : 0;
}

/* Whether this connection can be cut (the active role looks at its EP
 * and tells): 0 to go on, -1 skipped. */
static int silent_can_cut(struct conf_ctx *c, struct conf_ep_set *s,
			  bool active)
{
	const char *why = active ? conf_netcut_ep_why_not(c, s->ep) : NULL;
	uint64_t ok = why == NULL;

	if (active ? conf_send_u64(c, "can-cut-ep", ok) :
		     conf_recv_u64(c, "can-cut-ep", &ok))
		return -1;
	if (!ok) {
		conf_skip(c, "%s", why ? why :
			  "the active role cannot cut this connection");
		return -1;
	}
	return 0;
}

/* The end of a silent peer, within the bound (and some slack). */
static void silent_end(struct conf_ctx *c, struct conf_ep_set *s,
		       int64_t t0)
{
	int limit = conf_tmo(c, 2 * SILENT_BOUND_MS + 2000);
	struct rapt_event ev;
	int64_t dt;
	int rc;

	rc = conf_wait(c, s->conn_evd, limit, &ev);
	dt = (conf_now_us() - t0) / 1000;
	if (!EXPECT_MSG(rc == 0, "the peer has been silent for %lld ms (bound %u ms) and the EP says nothing",
			(long long)dt, SILENT_BOUND_MS))
		return;
	EXPECT_MSG(ev.type == RAPT_EV_BROKEN ||
		   ev.type == RAPT_EV_DISCONNECTED,
		   "a silent peer gave %s, expected BROKEN or DISCONNECTED",
		   rapt_event_name(ev.type));
	conf_note(c, "silent peer noticed after %lld ms (bound %u ms), prov_status %d",
		  (long long)dt, SILENT_BOUND_MS, ev.u.conn.prov_status);
}

static void silent_active(struct conf_ctx *c, bool busy)
{
	struct conf_ep_set s;
	struct rapt_sge sge;
	int64_t t0;
	int i;

	TRY(silent_agree(c, true));
	TRY(conf_pair_active(c, &s, NULL, 1, 64));
	TRY(silent_bound(c, s.ep));
	TRY(silent_can_cut(c, &s, true));
	TRY(conf_netcut(c, s.ep));
	t0 = conf_now_us();
	TRY(conf_barrier(c, "cut"));
	for (i = 0; busy && i < SILENT_SENDS; i++) {
		sge.addr = (uintptr_t)s.buf;
		sge.length = (uint32_t)s.len;
		sge.lkey = s.mi.lkey;
		REQUIRE_OK(rapt_ep_post_send(s.ep, &sge, 1, (uint64_t)i, 0));
	}
	silent_end(c, &s, t0);
	TRY(conf_barrier(c, "down"));
out:
	conf_netcut_undo();
}

static void silent_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;
	int64_t t0;

	TRY(silent_agree(c, false));
	TRY(conf_pair_passive(c, &s, NULL, 1, 64));	/* nothing arrives */
	TRY(silent_bound(c, s.ep));
	TRY(silent_can_cut(c, &s, false));
	TRY(conf_barrier(c, "cut"));
	t0 = conf_now_us();
	silent_end(c, &s, t0);
	TRY(conf_barrier(c, "down"));
out:
	return;
}

static void t_silent_idle(struct conf_ctx *c)
{
	silent_active(c, false);
}

static void t_silent_busy(struct conf_ctx *c)
{
	silent_active(c, true);
}

/*
 * A live peer that sends nothing is not silent: with the shortest bound
 * on both sides, an idle connection outlives it four times over (the
 * transport's keepalive or the provider's probes are answered), and then
 * still carries a message.  The bound is set after the connection has
 * been idle for longer than it (under the default bound): the peer must
 * get the chance to answer before the new bound may end anything.
 * Needs no cut, so it runs everywhere the bound exists.
 */
#define ALIVE_IDLE_MS	(4 * RAPT_PEER_TIMEOUT_MIN_MS)
#define ALIVE_BEFORE_MS	(3 * RAPT_PEER_TIMEOUT_MIN_MS / 2)

/* Both roles set the bound and agree that both could: 0 to go on. */
static int alive_bound(struct conf_ctx *c, struct rapt_ep *ep, bool active)
{
	int rc = peer_bound(c, ep, RAPT_PEER_TIMEOUT_MIN_MS);
	uint64_t mine = rc == 0, theirs = 0;

	if (active ? conf_send_u64(c, "alive-bound", mine) ||
		     conf_recv_u64(c, "alive-bound", &theirs) :
		     conf_recv_u64(c, "alive-bound", &theirs) ||
		     conf_send_u64(c, "alive-bound", mine))
		return -1;
	if (conf_failed(c))
		return -1;
	if (!mine || !theirs) {
		conf_skip(c, "%s provider has no peer timeout (RAPT_ENOTSUP)",
			  mine ? "the peer's" : "this");
		return -1;
	}
	return 0;
}

/* Idle for @ms: no event may come. */
static int alive_idle(struct conf_ctx *c, struct conf_ep_set *s, int ms,
		      const char *tag)
{
	struct rapt_event ev;
	int64_t t0 = conf_now_us();
	int rc = conf_wait(c, s->conn_evd, ms, &ev);

	if (!EXPECT_MSG(rc == RAPT_ETIMEDOUT,
			"a live idle peer (%s): %s after %lld ms", tag,
			rc == 0 ? rapt_event_name(ev.type) : "the wait failed",
			(long long)(conf_now_us() - t0) / 1000))
		return -1;
	return conf_barrier(c, tag);
}

static void alive_active(struct conf_ctx *c)
{
	struct conf_ep_set s;

	TRY(conf_pair_active(c, &s, NULL, 1, 64));
	TRY(alive_idle(c, &s, ALIVE_BEFORE_MS, "the default bound"));
	TRY(alive_bound(c, s.ep, true));
	TRY(alive_idle(c, &s, ALIVE_IDLE_MS, "a bound of 1 s"));
	EXPECT_STATE(s.ep, RAPT_EP_CONNECTED);
	TRY(conf_send_msg(c, &s, 0, 64, 1));
	TRY(conf_barrier(c, "sent"));
out:
	return;
}

static void alive_passive(struct conf_ctx *c)
{
	struct conf_ep_set s;
	struct rapt_event ev;

	TRY(conf_pair_passive(c, &s, NULL, 1, 64));
	TRY(alive_idle(c, &s, ALIVE_BEFORE_MS, "the default bound"));
	TRY(alive_bound(c, s.ep, false));
	TRY(alive_idle(c, &s, ALIVE_IDLE_MS, "a bound of 1 s"));
	REQUIRE_DTO(s.recv_evd, RAPT_OP_RECV, RAPT_DTO_SUCCESS, 0, &ev);
	EXPECT_STATE(s.ep, RAPT_EP_CONNECTED);
	TRY(conf_barrier(c, "sent"));
out:
	return;
}

static const struct conf_test disconnect_tests[] = {
	{ "graceful_active", "the active side disconnects gracefully: both flush receives, then DISCONNECTED",
	  t_ga_active, t_ga_passive },
	{ "graceful_passive", "the passive side disconnects gracefully: both flush receives, then DISCONNECTED",
	  t_gp_active, t_gp_passive },
	{ "graceful_drains", "sends queued before a graceful disconnect complete and arrive",
	  drain_active, drain_passive },
	{ "graceful_stuck", "a graceful disconnect whose send the peer never takes (RNR, IB and RoCE): the send FLUSHED, then DISCONNECTED on both sides, and no busy wait meanwhile",
	  stuck_active, stuck_passive },
	{ "abrupt", "abrupt: every operation completes once, SUCCESS or FLUSHED, before DISCONNECTED",
	  abrupt_active, abrupt_passive },
	{ "both_sides", "both sides disconnect at once: one DISCONNECTED each",
	  t_both_active, t_both_passive },
	{ "cancel_connect", "a disconnect in ACTIVE_PENDING cancels: DISCONNECTED, the CR is withdrawn",
	  cancel_active, cancel_passive },
	{ "peer_killed", "a peer process killed with SIGKILL gives BROKEN or DISCONNECTED in bounded time",
	  killed_active, killed_passive },
	{ "peer_silent_idle", "an idle connection whose link is cut ends BROKEN or DISCONNECTED within the peer timeout",
	  t_silent_idle, silent_passive },
	{ "peer_silent_busy", "a connection with sends in flight whose link is cut ends BROKEN or DISCONNECTED within the peer timeout",
	  t_silent_busy, silent_passive },
	{ "peer_alive_idle", "an idle connection to a live peer outlives its peer timeout four times over, set after a longer idle spell, and still carries a message",
	  alive_active, alive_passive },
};

CONF_SUITE(conf_suite_disconnect, "disconnect", "graceful, abrupt, peer death",
	   disconnect_tests);
