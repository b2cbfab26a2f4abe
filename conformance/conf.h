/* SPDX-License-Identifier: MIT */
/*
 * rapt-conformance: shared test context and helpers.
 *
 * Every test is two roles that run in two threads (loopback) or on two
 * hosts: the ACTIVE role runs in the client process and drives the test, the
 * PASSIVE role (optional) runs in the server.  They coordinate over a small
 * control channel (ctl.c): tagged messages carrying service ids, addresses,
 * rkeys and barriers.  A role only ever uses the public API, <rapt/rapt.h>.
 *
 * Each role gets a fresh IA for each test (struct conf_ctx) and records its
 * checks there; the passive role's failures travel back to the client, which
 * hands all of them to CUnit.  Objects made through the conf_*_create()
 * helpers are freed after the role returns, so a test that stops half-way
 * never makes the next one fail.
 *
 * Check macros use the variable "c" (the role's context) and the label
 * "out" (where a REQUIRE jumps when its check fails).
 */
#ifndef RAPT_CONFORMANCE_CONF_H
#define RAPT_CONFORMANCE_CONF_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rapt/rapt.h>

/* Bump when any test's exchange on the control channel changes. */
#define CONF_PROTO_VERSION 2

/* The default TCP port of the control channel (--port). */
#define CONF_DEFAULT_PORT 47391

enum conf_mode {
	CONF_MODE_LOOPBACK = 0,	/* both roles here; passive: a thread */
	CONF_MODE_SERVER,	/* passive roles for a remote client */
	CONF_MODE_CLIENT,	/* active roles against a remote server */
};

enum conf_role {
	CONF_ACTIVE = 0,
	CONF_PASSIVE = 1,
};

/* How the backlog tests make a silent half-open request (--half-open). */
enum conf_half_open {
	CONF_HO_AUTO = 0,	/* "socket" on iWARP transports, else none */
	CONF_HO_NONE,
	CONF_HO_SOCKET,		/* a plain TCP socket to the PSP port */
	CONF_HO_CONNECT,	/* rapt_ep_connect() to --half-open's address */
};

/* Command-line options (main.c). */
struct conf_opts {
	const char *ia_name;		/* -p; NULL: rapt_ia_open(NULL) */
	const char *provider_path;	/* --provider-path */
	enum conf_mode mode;
	const char *host;		/* --client HOST */
	unsigned int port;		/* --port */
	const char *xml;		/* --xml FILE */
	bool list;
	bool verbose;
	bool long_run;			/* --long */
	bool no_fork;			/* --no-fork */
	bool netcut;			/* --netcut: may cut links (nft) */
	bool once;			/* --once (server) */
	const char **runs;		/* --run, repeatable */
	unsigned int nruns;
	const char *unreachable;	/* --unreachable-addr, "none" skips */
	const char *blackhole;		/* --blackhole-addr, "none" skips */
	enum conf_half_open half_open;
	struct sockaddr_storage half_open_addr;
	const char *server_addr;	/* --server-addr: override the peer's */
	unsigned int cycles;		/* --cycles (stress); 0: default */
	unsigned int max_size;		/* --max-size for sweeps */
	unsigned int test_timeout_s;	/* --test-timeout */
	unsigned int scale;		/* --timeout-scale */
	const char *self_exe;		/* for the peer-process child */
};

extern struct conf_opts conf_opt;

/* What the client tells the server about a test run (the RUN message). */
struct conf_params {
	uint32_t flags;			/* CONF_P_* */
	uint32_t cycles;
	uint32_t max_size;
	uint32_t scale;
};

#define CONF_P_LONG	(1u << 0)
#define CONF_P_NO_FORK	(1u << 1)

struct conf_ctx;

/**
 * struct conf_test - one row of an area's table
 * @name: short name, [a-z0-9_]+
 * @desc: one line: what must hold
 * @active: the client's role (required)
 * @passive: the server's role, or NULL for a test of one process
 */
struct conf_test {
	const char *name;
	const char *desc;
	void (*active)(struct conf_ctx *c);
	void (*passive)(struct conf_ctx *c);
};

/** struct conf_suite - one area: a CUnit suite */
struct conf_suite {
	const char *name;
	const char *desc;
	const struct conf_test *tests;
	unsigned int ntests;
};

#define CONF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define CONF_SUITE(var, nm, dsc, table)					\
	const struct conf_suite var = {					\
		.name = (nm), .desc = (dsc), .tests = (table),		\
		.ntests = CONF_ARRAY_SIZE(table),			\
	}

extern const struct conf_suite conf_suite_ia;
extern const struct conf_suite conf_suite_objects;
extern const struct conf_suite conf_suite_evd;
extern const struct conf_suite conf_suite_ep;
extern const struct conf_suite conf_suite_ep_reuse;
extern const struct conf_suite conf_suite_cm;
extern const struct conf_suite conf_suite_rsp;
extern const struct conf_suite conf_suite_srq;
extern const struct conf_suite conf_suite_rmr;
extern const struct conf_suite conf_suite_pdata;
extern const struct conf_suite conf_suite_backlog;
extern const struct conf_suite conf_suite_rtr;
extern const struct conf_suite conf_suite_dto;
extern const struct conf_suite conf_suite_rdma;
extern const struct conf_suite conf_suite_access;
extern const struct conf_suite conf_suite_disconnect;
extern const struct conf_suite conf_suite_cancel;
extern const struct conf_suite conf_suite_stress;

/* ------------------------------------------------------------------ */
/* Control channel (ctl.c)                                             */
/* ------------------------------------------------------------------ */

enum conf_msg_type {
	CONF_MSG_HELLO = 1,	/* version handshake */
	CONF_MSG_RUN,		/* client: run a test's passive role */
	CONF_MSG_DATA,		/* a tagged message between roles */
	CONF_MSG_DONE,		/* server: passive role returned */
	CONF_MSG_END,		/* client: active role returned */
	CONF_MSG_FAIL,		/* server: one failure line */
	CONF_MSG_RESULT,	/* server: the passive role's result */
	CONF_MSG_QUIT,		/* client: session over */
};

/* DONE/END flags: why a role returned. */
#define CONF_END_FAILED		(1u << 0)
#define CONF_END_SKIPPED	(1u << 1)

#define CONF_TAG_LEN 32

struct conf_msg {
	struct conf_msg *next;
	uint32_t type;
	uint32_t seq;
	uint32_t flags;
	char tag[CONF_TAG_LEN];
	uint32_t len;
	uint8_t data[];
};

struct conf_ctl {
	int fd;
	pthread_mutex_t lock;		/* the read side and the queue */
	pthread_mutex_t wlock;		/* the write side */
	struct conf_msg *head;		/* received, not consumed yet */
	struct conf_msg *tail;
	bool broken;			/* read side: closed or garbage */
	bool wbroken;			/* write side failed */
	bool have_peer;			/* @peer is the other host */
	struct sockaddr_storage peer;
};

int conf_ctl_init(struct conf_ctl *ctl, int fd);
void conf_ctl_fini(struct conf_ctl *ctl);
int conf_ctl_send(struct conf_ctl *ctl, uint32_t type, uint32_t seq,
		  uint32_t flags, const char *tag, const void *data,
		  size_t len);
/* Next message, or NULL after @timeout_ms (-1: forever) or on a break. */
struct conf_msg *conf_ctl_recv(struct conf_ctl *ctl, int timeout_ms);
/* Read whatever has arrived without blocking; the CONF_END_* flags of a
 * queued END or DONE of @seq (CONF_END_FAILED if the channel broke), or
 * -1 if there is none. */
int conf_ctl_peer_ended(struct conf_ctl *ctl, uint32_t seq);
int conf_ctl_hello(struct conf_ctl *ctl, bool initiator);
int conf_ctl_listen(unsigned int port);
int conf_ctl_accept(int lfd, struct conf_ctl *ctl);
int conf_ctl_connect(const char *host, unsigned int port,
		     struct conf_ctl *ctl);

/* ------------------------------------------------------------------ */
/* The test context (runner.c)                                         */
/* ------------------------------------------------------------------ */

enum conf_obj_kind {
	CONF_OBJ_CR = 0,	/* freed first: undecided CRs are rejected */
	CONF_OBJ_RSP,		/* before its EP, which it holds */
	CONF_OBJ_EP,
	CONF_OBJ_SRQ,		/* after its EPs */
	CONF_OBJ_PSP,
	CONF_OBJ_RMR,		/* before the LMRs it is bound over */
	CONF_OBJ_LMR,
	CONF_OBJ_EVD,
	CONF_OBJ_PZ,
	CONF_OBJ_IA,		/* an extra IA a test opened */
	CONF_OBJ_MEM,		/* memory from conf_alloc() */
	CONF_OBJ_NKINDS,
};

struct conf_obj {
	enum conf_obj_kind kind;
	void *h;
};

/**
 * struct conf_ctx - one role of one test run
 * @role: CONF_ACTIVE or CONF_PASSIVE
 * @test: the test
 * @suite: its area
 * @ctl: the control channel to the other role (NULL in a one-process test)
 * @seq: the run's sequence number on the channel
 * @params: run parameters, the same on both sides
 * @ia: the IA this role opened for the test
 * @attr: its attributes
 * @pz: a PZ for the test's convenience (created with the IA)
 */
struct conf_ctx {
	enum conf_role role;
	const struct conf_test *test;
	const struct conf_suite *suite;
	struct conf_ctl *ctl;
	uint32_t seq;
	struct conf_params params;
	struct rapt_ia *ia;
	struct rapt_ia_attr attr;
	struct rapt_pz *pz;

	pthread_mutex_t lock;		/* guards results and objects */
	unsigned int nchecks;
	unsigned int nbody;		/* checks the test itself made (both
					 * roles), not setup's or teardown's */
	unsigned int nfail;
	char **fails;			/* "file:line: message" */
	unsigned int nmsgs;		/* entries of @fails */
	unsigned int nfails_alloc;
	bool skipped;
	char skip_reason[256];
	bool peer_ended;		/* the other role returned */
	uint32_t peer_flags;		/* its CONF_END_* flags */
	char peer_reason[256];
	/* The caps of the other role's IA, once conf_lookup() read them
	 * (conf_publish() sends them): what a test needs of the receiving
	 * or target side is the peer's to advertise. */
	uint64_t peer_caps;
	struct conf_obj *objs;
	unsigned int nobjs;
	unsigned int nobjs_alloc;
	const char *at_file;		/* the test's last TRY */
	int at_line;
};

/* ------------------------------------------------------------------ */
/* Checks (util.c)                                                     */
/* ------------------------------------------------------------------ */

bool conf_check(struct conf_ctx *c, bool ok, const char *file, int line,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));
bool conf_check_rc(struct conf_ctx *c, int rc, int want, const char *file,
		   int line, const char *call);
bool conf_check_eq(struct conf_ctx *c, long long a, long long b,
		   const char *file, int line, const char *sa,
		   const char *sb);
bool conf_check_equ(struct conf_ctx *c, unsigned long long a,
		    unsigned long long b, const char *file, int line,
		    const char *sa, const char *sb);
void conf_fail(struct conf_ctx *c, const char *file, int line,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void conf_note(struct conf_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Mark the test skipped (never overrides a failure). */
void conf_skip(struct conf_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool conf_failed(struct conf_ctx *c);

#define EXPECT(cond)							\
	conf_check(c, !!(cond), __FILE__, __LINE__, "%s", #cond)
#define EXPECT_MSG(cond, ...)						\
	conf_check(c, !!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define EXPECT_RC(call, want)						\
	conf_check_rc(c, (call), (want), __FILE__, __LINE__, #call)
#define EXPECT_OK(call) EXPECT_RC(call, 0)
#define EXPECT_EQ(a, b)							\
	conf_check_eq(c, (long long)(a), (long long)(b), __FILE__,	\
		      __LINE__, #a, #b)
#define EXPECT_EQU(a, b)						\
	conf_check_equ(c, (unsigned long long)(a),			\
		       (unsigned long long)(b), __FILE__, __LINE__, #a, #b)
#define FAIL(...) conf_fail(c, __FILE__, __LINE__, __VA_ARGS__)

#define REQUIRE(cond)	do { if (!EXPECT(cond)) goto out; } while (0)
#define REQUIRE_MSG(cond, ...)						\
	do { if (!EXPECT_MSG(cond, __VA_ARGS__)) goto out; } while (0)
#define REQUIRE_RC(call, want)						\
	do { if (!EXPECT_RC(call, want)) goto out; } while (0)
#define REQUIRE_OK(call)	REQUIRE_RC(call, 0)
#define REQUIRE_EQ(a, b)	do { if (!EXPECT_EQ(a, b)) goto out; } while (0)
/* For helpers that record their own failure and return nonzero; a failure
 * a helper records names the test's line too. */
#define TRY(call)							\
	do {								\
		conf_at(c, __FILE__, __LINE__);				\
		if ((call) != 0)					\
			goto out;					\
	} while (0)

void conf_at(struct conf_ctx *c, const char *file, int line);

/*
 * The skip rule: a capability the IA does not advertise is skipped with
 * its reason, and only after checking that @call, which needs it, returns
 * RAPT_ENOTSUP.  Jumps to "out" either way when the cap is missing.
 */
#define SKIP_UNLESS_CAP(cap, call)					\
	do {								\
		if (!(c->attr.caps & (cap))) {				\
			EXPECT_RC(call, RAPT_ENOTSUP);			\
			conf_skip(c, "IA does not advertise " #cap);	\
			goto out;					\
		}							\
	} while (0)

/* ------------------------------------------------------------------ */
/* Talking to the other role (util.c)                                  */
/* ------------------------------------------------------------------ */

int conf_send(struct conf_ctx *c, const char *tag, const void *data,
	      size_t len);
/* Receive the next message; it must carry @tag.  Records a failure on a
 * timeout or a tag mismatch; returns nonzero also when the peer ended. */
int conf_recv(struct conf_ctx *c, const char *tag, void *buf, size_t cap,
	      size_t *len);
int conf_send_u64(struct conf_ctx *c, const char *tag, uint64_t v);
int conf_recv_u64(struct conf_ctx *c, const char *tag, uint64_t *v);
int conf_send_addr(struct conf_ctx *c, const char *tag,
		   const struct sockaddr_storage *ss);
int conf_recv_addr(struct conf_ctx *c, const char *tag,
		   struct sockaddr_storage *ss);
int conf_barrier(struct conf_ctx *c, const char *tag);

/* ------------------------------------------------------------------ */
/* Objects (util.c): created, tracked, freed after the role           */
/* ------------------------------------------------------------------ */

void conf_track(struct conf_ctx *c, enum conf_obj_kind kind, void *h);
void conf_untrack(struct conf_ctx *c, void *h);
void conf_cleanup(struct conf_ctx *c);

int conf_evd_create(struct conf_ctx *c, unsigned int qlen,
		    unsigned int streams, struct rapt_evd **evd);
int conf_lmr_create(struct conf_ctx *c, void *addr, size_t len,
		    unsigned int access, struct rapt_lmr **lmr,
		    struct rapt_lmr_info *info);
int conf_ep_create(struct conf_ctx *c, struct rapt_evd *recv,
		   struct rapt_evd *req, struct rapt_evd *conn,
		   const struct rapt_ep_attr *attr, struct rapt_ep **ep);
void *conf_alloc(struct conf_ctx *c, size_t len);
/* Free a tracked object now: records a failure if the call fails. */
int conf_free(struct conf_ctx *c, void *h);

/**
 * struct conf_ep_set - an EP with its own EVDs and a registered buffer
 * @recv_evd: receive completions (RAPT_EVD_DTO)
 * @req_evd: send/RDMA completions (RAPT_EVD_DTO)
 * @conn_evd: connection events (RAPT_EVD_CONNECTION)
 * @buf: @len bytes, registered as @lmr with LOCAL_WRITE and remote rights
 */
struct conf_ep_set {
	struct rapt_evd *recv_evd;
	struct rapt_evd *req_evd;
	struct rapt_evd *conn_evd;
	struct rapt_ep *ep;
	struct rapt_lmr *lmr;
	struct rapt_lmr_info mi;
	uint8_t *buf;
	size_t len;
};

/* Options of conf_set_create(); zero fields take defaults. */
struct conf_set_opts {
	unsigned int qlen;		/* each EVD; default 512 */
	size_t buf_len;			/* default 64 KiB */
	unsigned int access;		/* default all rights */
	const struct rapt_ep_attr *attr;
	struct rapt_evd *shared_evd;	/* one EVD for every stream */
};

int conf_set_create(struct conf_ctx *c, struct conf_ep_set *s,
		    const struct conf_set_opts *o);
/* Create another EP on @s's EVDs (several connections, one set). */
int conf_set_ep(struct conf_ctx *c, struct conf_ep_set *s,
		const struct rapt_ep_attr *attr, struct rapt_ep **ep);

/* ------------------------------------------------------------------ */
/* Events (util.c)                                                     */
/* ------------------------------------------------------------------ */

/* The default wait for an event that must come, in ms (scaled). */
#define CONF_TMO_MS 5000
int conf_tmo(struct conf_ctx *c, int ms);

/* Wait for one event; returns 0, RAPT_ETIMEDOUT, or 1 if the peer role
 * ended while we waited.  Records nothing. */
int conf_wait(struct conf_ctx *c, struct rapt_evd *evd, int timeout_ms,
	      struct rapt_event *ev);
/* Wait for an event of @type; a different one or none is a failure. */
int conf_expect_event(struct conf_ctx *c, struct rapt_evd *evd, uint32_t type,
		      int timeout_ms, struct rapt_event *ev, const char *file,
		      int line);
/* Wait for a DTO completion and check it (cookie ~0ULL: any). */
int conf_expect_dto(struct conf_ctx *c, struct rapt_evd *evd, uint32_t op,
		    uint32_t status, uint64_t cookie, struct rapt_event *ev,
		    const char *file, int line);
/* Nothing may be queued on @evd (after waiting @ms). */
bool conf_expect_empty(struct conf_ctx *c, struct rapt_evd *evd, int ms,
		       const char *file, int line);

#define EXPECT_EVENT(evd, type, ev)					\
	conf_expect_event(c, (evd), (type), conf_tmo(c, CONF_TMO_MS), (ev), \
			  __FILE__, __LINE__)
#define REQUIRE_EVENT(evd, type, ev) TRY(EXPECT_EVENT(evd, type, ev))
#define EXPECT_DTO(evd, op, status, cookie, ev)			\
	conf_expect_dto(c, (evd), (op), (status), (cookie), (ev),	\
			__FILE__, __LINE__)
#define REQUIRE_DTO(evd, op, status, cookie, ev)			\
	TRY(EXPECT_DTO(evd, op, status, cookie, ev))
#define EXPECT_EMPTY(evd, ms)						\
	conf_expect_empty(c, (evd), (ms), __FILE__, __LINE__)

const char *conf_dto_status_name(uint32_t status);
const char *conf_reason_name(uint32_t reason);

/* ------------------------------------------------------------------ */
/* Connections (util.c)                                                */
/* ------------------------------------------------------------------ */

/**
 * struct conf_listener - a PSP and its CR EVD
 */
struct conf_listener {
	struct rapt_evd *cr_evd;
	struct rapt_psp *psp;
	uint64_t sid;
};

/* Create a PSP (RAPT_SERVICE_ID_ANY, else a free id from the range). */
int conf_listen(struct conf_ctx *c, struct conf_listener *l,
		const struct rapt_psp_attr *attr);
/* Tell the active role where to connect ("listen": address + sid). */
int conf_publish(struct conf_ctx *c, const struct conf_listener *l);
/* The passive role's address and service id, as published. */
int conf_lookup(struct conf_ctx *c, struct sockaddr_storage *addr,
		uint64_t *sid);
/* Wait for a CR on @l; @info may be NULL. */
int conf_get_cr(struct conf_ctx *c, struct conf_listener *l, int timeout_ms,
		struct rapt_cr **cr, struct rapt_cr_info *info);
/* Accept @cr on @s->ep and wait for its ESTABLISHED. */
int conf_accept(struct conf_ctx *c, struct rapt_cr *cr, struct conf_ep_set *s,
		const void *pdata, size_t len);
/* Connect @s->ep and wait for ESTABLISHED (@ev may be NULL). */
int conf_connect(struct conf_ctx *c, struct conf_ep_set *s,
		 const struct sockaddr_storage *addr, uint64_t sid,
		 const void *pdata, size_t len, struct rapt_event *ev);

/* The usual pair: set created, @nrecv receives of @rsize bytes posted
 * (cookies 0..nrecv-1, at buf + i * rsize), connected. */
int conf_pair_passive(struct conf_ctx *c, struct conf_ep_set *s,
		      const struct conf_set_opts *o, unsigned int nrecv,
		      size_t rsize);
int conf_pair_active(struct conf_ctx *c, struct conf_ep_set *s,
		     const struct conf_set_opts *o, unsigned int nrecv,
		     size_t rsize);
int conf_post_recvs(struct conf_ctx *c, struct conf_ep_set *s,
		    unsigned int first, unsigned int n, size_t size);
/* Post one send of @len bytes from @s->buf + @off and check it completes. */
int conf_send_msg(struct conf_ctx *c, struct conf_ep_set *s, size_t off,
		  size_t len, uint64_t cookie);
/* Start a connect of @ep to @sid on this role's own IA (one-process tests
 * that play both sides). */
int conf_self_connect(struct conf_ctx *c, struct rapt_ep *ep, uint64_t sid);
/* Check that @ep is in @want; records a failure naming both states. */
bool conf_expect_state(struct conf_ctx *c, struct rapt_ep *ep, uint32_t want,
		       const char *file, int line);
#define EXPECT_EP_STATE(ep, want)					\
	conf_expect_state(c, (ep), (want), __FILE__, __LINE__)
/* Wait until the EP's connection ends (DISCONNECTED or BROKEN). */
int conf_wait_down(struct conf_ctx *c, struct conf_ep_set *s,
		   struct rapt_event *ev);

/* ------------------------------------------------------------------ */
/* RDMA target (rdma.c), also the passive role of the access tests     */
/* ------------------------------------------------------------------ */

/* Commands the active role sends the target over the connection. */
enum conf_tgt_cmd {
	CONF_TGT_WROTE = 1,	/* off, len, seed written: check it all */
	CONF_TGT_CHECK,		/* check region and guards */
	CONF_TGT_FILL,		/* refill the region with seed */
	CONF_TGT_FREE,		/* free the region's LMR */
	CONF_TGT_DONE,		/* stop serving */
	CONF_TGT_INVALIDATED,	/* sent with invalidate of the rkey */
};

/* conf_target_open() @flags */
#define CONF_TGT_BREAK (1u << 0)	/* the connection will break */
#define CONF_TGT_OTHER_PZ (1u << 1)	/* region in a PZ not the EP's */

/**
 * struct conf_target - the active side's view of an RDMA target
 * @s: the connection (its buffer is the local source and sink)
 * @raddr: the region's first byte, for the peer
 * @rkey: its key
 * @len: its length
 */
struct conf_target {
	struct conf_ep_set s;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t len;
};

void conf_target_passive(struct conf_ctx *c);
int conf_target_open(struct conf_ctx *c, struct conf_target *t, uint64_t len,
		     unsigned int access, uint32_t seed, uint32_t flags,
		     size_t local_len);
/* Send a command; return the target's status (0: memory as expected). */
int conf_target_cmd(struct conf_ctx *c, struct conf_target *t, uint32_t cmd,
		    uint32_t off, uint32_t len, uint32_t seed);

/* ------------------------------------------------------------------ */
/* Misc (util.c)                                                       */
/* ------------------------------------------------------------------ */

void conf_fill(void *buf, size_t len, uint32_t seed);
/* Return the first offset that differs from the pattern, or -1. */
long conf_verify(const void *buf, size_t len, uint32_t seed);
uint8_t conf_pattern_byte(size_t i, uint32_t seed);
int64_t conf_now_us(void);

/* netcut.c: cut one connection's link (the silent-peer tests). */
const char *conf_netcut_why_not(void);
const char *conf_netcut_ep_why_not(struct conf_ctx *c, struct rapt_ep *ep);
int conf_netcut(struct conf_ctx *c, struct rapt_ep *ep);
void conf_netcut_undo(void);
void conf_sleep_ms(unsigned int ms);
int conf_addr_parse(const char *s, struct sockaddr_storage *ss);
const char *conf_addr_str(const struct sockaddr_storage *ss, char *buf,
			  size_t len);
bool conf_addr_same_host(const struct sockaddr_storage *a,
			 const struct sockaddr_storage *b);
bool conf_addr_is_any(const struct sockaddr_storage *ss);
int conf_open_fds(void);
/* Whether the IA's transport answers a message that finds no receive
 * with an RNR NAK (IB, RoCE) rather than breaking the connection. */
bool conf_rnr_nak(const struct conf_ctx *c);

/* Peer-process child (disconnect.c), run by main() for --child-connect. */
int conf_child_main(const char *ia_name, const char *addr, const char *sid);

/* Runner (runner.c). */
int conf_serve(struct conf_ctl *ctl);
void conf_watch(const char *name, unsigned int secs);
void conf_ctx_init(struct conf_ctx *c, enum conf_role role);
void conf_ctx_fini(struct conf_ctx *c);
int conf_role_setup(struct conf_ctx *c);
void conf_role_teardown(struct conf_ctx *c);
void conf_run_passive(struct conf_ctl *ctl, const struct conf_suite *s,
		      const struct conf_test *t, uint32_t seq,
		      const struct conf_params *p);
void conf_run_active(struct conf_ctl *ctl, const struct conf_suite *s,
		     const struct conf_test *t, uint32_t seq,
		     struct conf_ctx *c);

extern const struct conf_suite *const conf_suites[];
extern const unsigned int conf_nsuites;

#endif /* RAPT_CONFORMANCE_CONF_H */
