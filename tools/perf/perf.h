/* SPDX-License-Identifier: MIT */
/*
 * rapt_perf internals: latency, bandwidth, message rate and connection
 * rate over any rapt provider, through the public API only.
 *
 * A run is one session between a client and a server.  The client opens a
 * control connection first (its connect private data is struct perf_hello:
 * what to run), then, for the data tests, a data connection.  The server
 * accepts the control connection with struct perf_welcome (its data
 * region's address and key).  Control messages (struct perf_ctl, 64 bytes,
 * self-describing) travel only on the control connection, where both sides
 * always keep PERF_CTL_RECVS receives posted; the data connection carries
 * nothing but the measured traffic, plus, where ordering with RDMA writes
 * matters, a final marker send.
 *
 * Per message size the client sends PHASE, the server prepares and answers
 * READY, the client runs the measurement, and the phase ends as the test
 * defines (see perf_latency.c and perf_bandwidth.c).  At the end the client
 * sends FIN and the server answers with its own figures (STATS).  The
 * connection tests open their measured connections to a second listener
 * the server creates for the phase (perf_connections.c).
 */
#ifndef RAPT_TOOLS_PERF_H
#define RAPT_TOOLS_PERF_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include <rapt/rapt.h>

#define PERF_MAGIC		0x52505246u	/* "RPRF" */
#define PERF_VERSION		1
#define PERF_CTL_LEN		64
#define PERF_CTL_RECVS		8
#define PERF_CTL_SENDS		16
#define PERF_MAX_SIZE		(4ull << 20)
#define PERF_MAX_WINDOW		1024
/* The stall watchdog: a side that waits this long for a completion it
 * expects gives up (RAPT_PERF_STALL_MS overrides it, for tests).  A side
 * that expects nothing until the peer ends a phase (the server of a
 * one-sided test) waits without it, PERF_PHASE_WAIT: a peer that dies is
 * reported by the connection itself (the provider's keepalive and user
 * timeout), however long the phase. */
#define PERF_STALL_US		(30 * 1000000ll)
#define PERF_PHASE_WAIT		(-1ll)
#define PERF_CONNECT_US		(10 * 1000000ll)
#define PERF_WINDOW_DEFAULT	UINT32_MAX

/* Exit codes. */
#define PERF_EXIT_OK		0
#define PERF_EXIT_FAIL		1
#define PERF_EXIT_USAGE		2
#define PERF_EXIT_UNSUPPORTED	3

enum perf_test {
	PERF_LAT_SEND = 1,
	PERF_LAT_WRITE,
	PERF_LAT_READ,
	PERF_BW_SEND,
	PERF_BW_WRITE,
	PERF_BW_READ,
	PERF_CONNRATE,
	PERF_CONNS,
	PERF_LAT_MW,		/* bind + remote invalidate (API 1.3) */
};

enum perf_mode {
	PERF_MODE_POLL = 0,	/* rapt_evd_dequeue() loop */
	PERF_MODE_BLOCK,	/* rapt_evd_wait() */
	PERF_MODE_FD,		/* rapt_evd_arm() + poll() on the EVD fd */
};

enum perf_role {
	PERF_ROLE_FORK = 0,	/* server child, client parent */
	PERF_ROLE_THREAD,	/* server thread, client in main */
	PERF_ROLE_SERVER,
	PERF_ROLE_CLIENT,
};

/** struct perf_opts - the command line */
struct perf_opts {
	const char *ia_name;
	enum perf_test test;
	enum perf_mode mode;
	enum perf_role role;
	const char *host;
	uint64_t sid;
	uint64_t size;
	uint64_t max_size;
	bool sweep;
	uint64_t iters;		/* 0: the test's default */
	uint64_t warmup;	/* UINT64_MAX: the test's default */
	uint32_t window;	/* PERF_WINDOW_DEFAULT: the test's */
	uint32_t pdata_len;
	uint32_t depth;		/* connection tests' EP depths; 0 default */
	uint32_t srq;		/* connection tests: SRQ receives; 0 none */
	bool verify;
	bool json;
	bool progress;
	bool inline_send;
	bool disc_wait;		/* connrate: wait for DISCONNECTED */
	bool hist;		/* latency: print the histogram */
	bool unsignaled;	/* lat_send: sends without completions */
	uint64_t think_us;	/* latency: the client's pause between round
				 * trips, with no rapt call */
	uint64_t timeout_s;
};

/** struct perf_hello - the client's connect private data (control EP) */
struct perf_hello {
	uint32_t magic;
	uint8_t version;
	uint8_t test;
	uint8_t mode;
	uint8_t flags;		/* PERF_HELLO_* */
	uint64_t max_size;
	uint32_t window;
	uint16_t pdata_len;
	uint16_t depth;
	uint64_t conns;
};

#define PERF_HELLO_VERIFY	(1u << 0)
#define PERF_HELLO_INLINE	(1u << 1)	/* inline sends and writes */
#define PERF_HELLO_UNSIGNALED	(1u << 2)	/* lat_send --unsignaled */
#define PERF_HELLO_DATA		(1u << 7)	/* the data EP's hello */

/** struct perf_welcome - the server's accept (or reject) private data */
struct perf_welcome {
	uint32_t magic;
	int32_t status;		/* 0 or a RAPT_E* code: why rejected */
	uint64_t raddr;
	uint32_t rkey;
	uint32_t reserved;
	uint64_t rlen;
};

enum perf_ctl_op {
	PERF_CTL_PHASE = 1,	/* size, ops, window, raddr, rkey, warmup */
	PERF_CTL_READY,		/* status, sid (connection tests) */
	PERF_CTL_DONE,		/* client finished the phase; count */
	PERF_CTL_ACK,		/* server's end of phase: bad, seen, ... */
	PERF_CTL_CREDIT,	/* bw_send: receives posted so far */
	PERF_CTL_FIN,
	PERF_CTL_STATS,		/* rss, fds, ... of the server */
};

/** struct perf_ctl - a control message (PERF_CTL_LEN bytes) */
struct perf_ctl {
	uint32_t magic;
	uint32_t op;
	uint64_t arg[7];
};

/** struct perf_row - one result line */
/* Latency histogram buckets: below 0.5 us, then 4 per doubling (the
 * last one takes everything from about 7 minutes up). */
#define PERF_HIST_N	120

struct perf_row {
	uint64_t bytes;
	uint64_t iters;
	uint32_t window;
	/* latency (ns) */
	double min, med, p99, p999, max, mean;
	uint64_t hist[PERF_HIST_N];	/* perf_hist.c */
	/* bandwidth */
	double mbps, local_mbps, msg_per_s;
	/* connections */
	double conn_per_s, cycle_med, cycle_p99, connect_med, connect_p99;
	double disc_med, connect_all_ms, close_all_ms;
	double cli_per_conn, srv_per_conn, cli_fds, srv_fds;
	uint64_t busy, srv_est, srv_disc;
	long cli_rss_base, srv_rss_base;
	int verified;		/* -1 not checked, 0 failed, 1 ok */
};

/*
 * One side of a session: the IA and its objects.  Every event of the side
 * arrives on evd[0] when the IA can merge the streams; otherwise DTO,
 * CONNECTION and CR events have their own EVDs.
 */
struct perf_side {
	const struct perf_opts *o;
	enum perf_mode mode;		/* the server takes the client's */
	bool server;
	struct rapt_ia *ia;
	struct rapt_ia_attr attr;
	struct rapt_pz *pz;
	struct rapt_evd *dto_evd;
	struct rapt_evd *conn_evd;
	struct rapt_evd *cr_evd;
	struct rapt_evd *evds[3];
	int nevd;
	int fds[3];
	struct rapt_psp *psp;
	uint64_t sid;

	/* control connection */
	struct rapt_ep *ctl_ep;
	uint8_t *ctl_buf;
	struct rapt_lmr *ctl_lmr;
	struct rapt_lmr_info ctl_info;
	uint32_t ctl_send_next;
	uint32_t ctl_send_busy;
	struct perf_ctl inbox[PERF_CTL_RECVS * 2];
	uint32_t inbox_head, inbox_count;

	/* data connection and region */
	struct rapt_ep *data_ep;
	uint8_t *data;
	uint64_t data_len;
	struct rapt_lmr *data_lmr;
	struct rapt_lmr_info data_info;
	struct rapt_rmr *rmr;		/* lat_mw's window over data */
	uint64_t peer_raddr;
	uint32_t peer_rkey;
	uint64_t peer_rlen;

	struct perf_hello hello;	/* what the client asked for */
	uint64_t slot;			/* bytes per data region slot */
	uint32_t max_inline;		/* data EP: inline bytes, 0 none */
	int announce_fd;		/* server: where to tell the sid */
};

/* A busy-polling wait reads the clock (its deadline) once in this many
 * polls, and perf_next_dto() polls this often before it leaves the wait
 * to perf_next_data(). */
#define PERF_SPIN_CHECK	1024u

/* perf_common.c */
bool perf_can_merge(const struct rapt_ia_attr *a, uint32_t want);
const char *perf_reason_name(uint32_t reason);
int perf_fail(int ret, const char *what);
int perf_side_open(struct perf_side *s, const struct perf_opts *o,
		   bool server);
void perf_side_close(struct perf_side *s);
int perf_region(struct perf_side *s, uint64_t len);
int perf_wait(struct perf_side *s, struct rapt_evd *evd,
	      struct rapt_event *ev, int64_t timeout_us);
int perf_wait_any(struct perf_side *s, struct rapt_event *ev,
		  int64_t timeout_us);
int64_t perf_stall_us(void);
int perf_next_data(struct perf_side *s, struct rapt_event *ev);
int perf_next_data_from(struct perf_side *s, struct rapt_event *ev, int ret);
int perf_next_data_wait(struct perf_side *s, struct rapt_event *ev,
			int64_t timeout_us);
int perf_next_event(struct perf_side *s, struct rapt_event *ev, bool *ctl);
bool perf_ctl_event(struct perf_side *s, const struct rapt_event *ev,
		    int *err);
int perf_ctl_arm(struct perf_side *s);
int perf_ctl_send(struct perf_side *s, uint32_t op, const uint64_t *args,
		  unsigned int nargs);
int perf_ctl_recv(struct perf_side *s, uint32_t op, struct perf_ctl *out);
int perf_ctl_recv_wait(struct perf_side *s, uint32_t op, struct perf_ctl *out,
		       int64_t timeout_us);
int perf_ctl_poll(struct perf_side *s, uint32_t op, struct perf_ctl *out);
int perf_dto_ok(const struct rapt_event *ev, const char *what);
int perf_conn_wait(struct perf_side *s, struct rapt_ep *ep, uint32_t type,
		   struct rapt_event *ev);
int perf_ep_create(struct perf_side *s, const struct rapt_ep_attr *attr,
		   struct rapt_ep **ep);
int perf_remote_addr(struct perf_side *s, struct sockaddr_storage *ss);
void perf_disconnect(struct perf_side *s, struct rapt_ep **ep);
long perf_rss_kb(void);
int perf_count_fds(void);

/*
 * The hot path's helpers, inline: under an emulator (tests/vm) every call
 * and return of the tool's own costs some 20 ns of a round trip, so the
 * measuring loop keeps its calls to rapt's.
 */

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t perf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* An SGE of the data region. */
static inline struct rapt_sge perf_sge(const struct perf_side *s,
				       const void *p, uint64_t len)
{
	struct rapt_sge sge = { (uint64_t)(uintptr_t)p, (uint32_t)len,
				s->data_info.lkey };

	return sge;
}

/* perf_dto_ok() with its common case inline. */
static inline int perf_dto_check(const struct rapt_event *ev,
				 const char *what)
{
	if (ev->type == RAPT_EV_DTO && ev->u.dto.status == RAPT_DTO_SUCCESS)
		return 0;
	return perf_dto_ok(ev, what);
}

/*
 * perf_next_data() for the measuring loops: a busy-polling side takes a
 * successful completion of its data EP in the caller's frame; anything
 * else (control traffic, errors, a long wait, other modes) goes through
 * perf_next_data_from() with what was dequeued.
 */
static inline int perf_next_dto(struct perf_side *s, struct rapt_event *ev)
{
	unsigned int n;
	int ret = RAPT_EAGAIN;

	if (s->mode != PERF_MODE_POLL)
		return perf_next_data(s, ev);
	for (n = 0; n < PERF_SPIN_CHECK && ret == RAPT_EAGAIN; n++)
		ret = rapt_evd_dequeue(s->dto_evd, ev);
	if (!ret && ev->type == RAPT_EV_DTO && ev->u.dto.ep == s->data_ep &&
	    ev->u.dto.status == RAPT_DTO_SUCCESS)
		return 0;
	return perf_next_data_from(s, ev, ret);
}
void perf_progress(const struct perf_opts *o, const char *what,
		   uint64_t done, uint64_t total);
void perf_progress_end(const struct perf_opts *o);
void perf_stats(uint64_t *ns, uint64_t n, struct perf_row *row);
void perf_hist_fill(const uint64_t *ns, uint64_t n, struct perf_row *row);
void perf_hist_print(const struct perf_row *row, bool json);
uint8_t perf_pattern(uint64_t seq, uint64_t k);
void perf_fill(uint8_t *p, uint64_t len, uint64_t seq);
int perf_check(const uint8_t *p, uint64_t len, uint64_t seq);
bool perf_is_rdma(enum perf_test t);
bool perf_is_latency(enum perf_test t);
bool perf_is_conn(enum perf_test t);
const char *perf_test_name(enum perf_test t);
const char *perf_mode_name(enum perf_mode m);
uint64_t perf_default_iters(const struct perf_opts *o);

/* perf_session.c */
int perf_client_run(const struct perf_opts *o);
int perf_server_run(const struct perf_opts *o, int announce_fd);
int perf_server_phase(struct perf_side *s, const struct perf_ctl *phase);

/* perf_latency.c */
int perf_lat_client(struct perf_side *s, uint64_t size, uint64_t iters,
		    uint64_t warmup, struct perf_row *row);
int perf_lat_server(struct perf_side *s, const struct perf_ctl *phase);

/* perf_bandwidth.c */
int perf_bw_client(struct perf_side *s, uint64_t size, uint64_t iters,
		   uint64_t warmup, struct perf_row *row);
int perf_bw_server(struct perf_side *s, const struct perf_ctl *phase);

/* perf_connections.c */
int perf_conn_client(struct perf_side *s, uint64_t conns,
		     struct perf_row *row);
int perf_conn_server(struct perf_side *s, const struct perf_ctl *phase);

/* perf_output.c */
void perf_out_header(const struct perf_opts *o, const struct perf_side *s);
void perf_out_row(const struct perf_opts *o, const struct perf_side *s,
		  const struct perf_row *row);
void perf_out_error(const struct perf_opts *o, const char *status,
		    const char *why);

#endif /* RAPT_TOOLS_PERF_H */
