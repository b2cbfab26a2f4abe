/* SPDX-License-Identifier: MIT */
/*
 * Running one test: the two roles, their IAs, and the exchange that frames
 * a run on the control channel.
 *
 *   client                                   server
 *   RUN(seq, "suite/test", params)   ->
 *   active role                              passive role
 *   END(seq, flags)                  <->     DONE(seq, flags)
 *   cleanup                                  cleanup
 *                                    <-      FAIL(seq, line)...  RESULT(seq)
 *
 * Both roles finish before either frees anything, so one side's cleanup
 * never races the other's last checks.  A role that waits for the other
 * one (conf_recv, conf_wait) gives up when the other one has returned with
 * a failure or a skip, so a failing test costs no timeout on the far side.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

void conf_ctx_init(struct conf_ctx *c, enum conf_role role)
{
	memset(c, 0, sizeof(*c));
	c->role = role;
	c->params.scale = 1;
	pthread_mutex_init(&c->lock, NULL);
}

void conf_ctx_fini(struct conf_ctx *c)
{
	unsigned int i;

	for (i = 0; i < c->nmsgs; i++)
		free(c->fails[i]);
	free(c->fails);
	free(c->objs);
	pthread_mutex_destroy(&c->lock);
}

/**
 * conf_role_setup - open the role's IA and a PZ
 * @c: the role
 *
 * Return: 0, or -1 with the failure recorded.
 */
int conf_role_setup(struct conf_ctx *c)
{
	int rc = rapt_ia_open(conf_opt.ia_name, &c->ia);

	if (rc) {
		FAIL("rapt_ia_open(\"%s\") returned %s [%s]",
		     conf_opt.ia_name ? conf_opt.ia_name : "(NULL)",
		     rapt_err_name(rc), rapt_last_error());
		c->ia = NULL;
		return -1;
	}
	rc = rapt_ia_query(c->ia, &c->attr, sizeof(c->attr));
	if (!EXPECT_OK(rc))
		return -1;
	rc = rapt_pz_create(c->ia, &c->pz);
	if (!EXPECT_OK(rc)) {
		c->pz = NULL;
		return -1;
	}
	return 0;
}

/**
 * conf_role_teardown - free what the role left and close its IA
 * @c: the role
 *
 * A test that passed must leave nothing the IA would call busy.
 */
void conf_role_teardown(struct conf_ctx *c)
{
	int rc;

	conf_cleanup(c);
	if (c->pz) {
		rc = rapt_pz_free(c->pz);
		if (rc && !conf_failed(c))
			FAIL("freeing the test's PZ after the test: %s [%s]",
			     rapt_err_name(rc), rapt_last_error());
		c->pz = NULL;
	}
	if (!c->ia)
		return;
	rc = rapt_ia_close(c->ia);
	if (rc && !conf_failed(c))
		FAIL("closing the test's IA after the test: %s [%s] (an object outlived the test)",
		     rapt_err_name(rc), rapt_last_error());
	c->ia = NULL;
}

/* Run one role's code; count the checks it made itself. */
static void run_role(struct conf_ctx *c, void (*fn)(struct conf_ctx *))
{
	unsigned int before;

	pthread_mutex_lock(&c->lock);
	before = c->nchecks;
	pthread_mutex_unlock(&c->lock);
	fn(c);
	pthread_mutex_lock(&c->lock);
	c->nbody += c->nchecks - before;
	pthread_mutex_unlock(&c->lock);
}

static uint32_t end_flags(struct conf_ctx *c)
{
	uint32_t f = 0;

	if (c->nfail)
		f |= CONF_END_FAILED;
	if (c->skipped)
		f |= CONF_END_SKIPPED;
	return f;
}

static void send_end(struct conf_ctx *c, uint32_t type)
{
	(void)conf_ctl_send(c->ctl, type, c->seq, end_flags(c), "end",
			    c->skip_reason, strlen(c->skip_reason) + 1);
}

/*
 * Wait for the other role's END (@type CONF_MSG_END) or DONE: both roles
 * have run their code before either frees anything, so one side's cleanup
 * never races the other side's last checks.
 */
static void wait_peer_end(struct conf_ctx *c, uint32_t type)
{
	int64_t end = conf_now_us() + (int64_t)conf_tmo(c, 120000) * 1000;
	struct conf_msg *m;

	while (!c->peer_ended) {
		if (conf_now_us() > end) {
			FAIL("the other role did not finish within %d ms",
			     conf_tmo(c, 120000));
			return;
		}
		m = conf_ctl_recv(c->ctl, 1000);
		if (!m) {
			if (c->ctl->broken) {
				FAIL("the control channel broke");
				return;
			}
			continue;
		}
		if (m->seq == c->seq && m->type == type) {
			c->peer_ended = true;
			c->peer_flags = m->flags;
			if ((m->flags & CONF_END_SKIPPED) && !c->nfail)
				conf_skip(c, "%s", (const char *)m->data);
		}
		free(m);
	}
}

static void params_text(const struct conf_params *p, char *buf, size_t len)
{
	snprintf(buf, len, "%u %u %u %u", p->flags, p->cycles, p->max_size,
		 p->scale);
}

static void params_parse(const char *s, struct conf_params *p)
{
	memset(p, 0, sizeof(*p));
	if (sscanf(s, "%u %u %u %u", &p->flags, &p->cycles, &p->max_size,
		   &p->scale) != 4)
		memset(p, 0, sizeof(*p));
	if (!p->scale)
		p->scale = 1;
}

/**
 * conf_run_passive - run the passive role of one test (server side)
 * @ctl: the channel to the client
 * @s: the area
 * @t: the test
 * @seq: the run's sequence number
 * @p: the client's parameters
 */
void conf_run_passive(struct conf_ctl *ctl, const struct conf_suite *s,
		      const struct conf_test *t, uint32_t seq,
		      const struct conf_params *p)
{
	struct conf_ctx c;
	char res[300];
	unsigned int i;

	conf_ctx_init(&c, CONF_PASSIVE);
	c.ctl = ctl;
	c.seq = seq;
	c.params = *p;
	c.test = t;
	c.suite = s;
	if (!conf_role_setup(&c))
		run_role(&c, t->passive);
	send_end(&c, CONF_MSG_DONE);
	wait_peer_end(&c, CONF_MSG_END);
	conf_role_teardown(&c);
	for (i = 0; i < c.nmsgs; i++)
		(void)conf_ctl_send(ctl, CONF_MSG_FAIL, seq, 0, "fail",
				    c.fails[i], strlen(c.fails[i]) + 1);
	snprintf(res, sizeof(res), "%u %u %u %s", c.nfail, c.nbody,
		 c.skipped ? 1u : 0u, c.skip_reason);
	(void)conf_ctl_send(ctl, CONF_MSG_RESULT, seq, 0, "result", res,
			    strlen(res) + 1);
	conf_ctx_fini(&c);
}

static const struct conf_test *find_test(const char *name,
					 const struct conf_suite **suite)
{
	const char *slash = strchr(name, '/');
	unsigned int i, j;
	size_t n;

	if (!slash)
		return NULL;
	n = (size_t)(slash - name);
	for (i = 0; i < conf_nsuites; i++) {
		const struct conf_suite *s = conf_suites[i];

		if (strlen(s->name) != n || strncmp(s->name, name, n))
			continue;
		for (j = 0; j < s->ntests; j++)
			if (!strcmp(s->tests[j].name, slash + 1)) {
				*suite = s;
				return &s->tests[j];
			}
	}
	return NULL;
}

/* The client asked for a test this server does not have. */
static void refuse(struct conf_ctl *ctl, uint32_t seq, const char *name)
{
	char msg[256], res[64];

	snprintf(msg, sizeof(msg),
		 "server: no passive role for '%s' (different suite build?)",
		 name);
	(void)conf_ctl_send(ctl, CONF_MSG_DONE, seq, CONF_END_FAILED, "end",
			    "", 1);
	(void)conf_ctl_send(ctl, CONF_MSG_FAIL, seq, 0, "fail", msg,
			    strlen(msg) + 1);
	snprintf(res, sizeof(res), "1 1 0 ");
	(void)conf_ctl_send(ctl, CONF_MSG_RESULT, seq, 0, "result", res,
			    strlen(res) + 1);
}

/**
 * conf_serve - the server's loop: run passive roles until QUIT
 * @ctl: the channel to the client (after the version handshake)
 *
 * Return: 0 after QUIT, -1 if the channel broke.
 */
int conf_serve(struct conf_ctl *ctl)
{
	const struct conf_suite *s = NULL;
	const struct conf_test *t;
	struct conf_params p;
	struct conf_msg *m;
	size_t nlen;

	for (;;) {
		m = conf_ctl_recv(ctl, -1);
		if (!m)
			return -1;
		if (m->type == CONF_MSG_QUIT) {
			free(m);
			return 0;
		}
		if (m->type != CONF_MSG_RUN) {
			free(m);	/* left over from a finished run */
			continue;
		}
		/* Payload: "suite/test" NUL "params". */
		nlen = strnlen((const char *)m->data, m->len);
		params_parse(nlen < m->len ? (const char *)m->data + nlen + 1 :
			     "", &p);
		t = find_test((const char *)m->data, &s);
		if (conf_opt.verbose)
			fprintf(stderr, "server: %s\n", (const char *)m->data);
		if (!t || !t->passive) {
			refuse(ctl, m->seq, (const char *)m->data);
		} else {
			/* A server process watches its passive roles (in
			 * loopback mode the client's watch covers both), a
			 * little longer than the client's own limit, so
			 * that the client reports first. */
			bool watch = conf_opt.mode == CONF_MODE_SERVER;

			if (watch)
				conf_watch((const char *)m->data,
					   conf_opt.test_timeout_s * p.scale +
					   30);
			conf_run_passive(ctl, s, t, m->seq, &p);
			if (watch)
				conf_watch(NULL, 0);
		}
		free(m);
	}
}

/* Client: keep one failure line of the passive role. */
static void add_line(struct conf_ctx *c, const char *line)
{
	char **f;
	char *d = strdup(line);

	pthread_mutex_lock(&c->lock);
	c->nfail++;
	f = d ? realloc(c->fails, (c->nmsgs + 1) * sizeof(*f)) : NULL;
	if (f) {
		c->fails = f;
		c->nfails_alloc = c->nmsgs + 1;
		c->fails[c->nmsgs++] = d;
		d = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	free(d);
}

/* Client: fold the server's FAIL lines and RESULT into @c. */
static void collect_result(struct conf_ctx *c)
{
	unsigned int nfail = 0, nchecks = 0, skipped = 0, lines = 0;
	int64_t end = conf_now_us() + (int64_t)conf_tmo(c, 180000) * 1000;
	char reason[256] = "";
	struct conf_msg *m;

	for (;;) {
		m = conf_ctl_recv(c->ctl, 1000);
		if (!m && (c->ctl->broken || conf_now_us() > end)) {
			FAIL("no result from the passive role (%s)",
			     c->ctl->broken ? "control channel broken" :
			     "timed out");
			return;
		}
		if (!m || m->seq != c->seq) {
			free(m);
			continue;
		}
		if (m->type == CONF_MSG_FAIL) {
			add_line(c, (const char *)m->data);
			lines++;
		} else if (m->type == CONF_MSG_RESULT) {
			(void)sscanf((const char *)m->data,
				     "%u %u %u %255[^\n]", &nfail, &nchecks,
				     &skipped, reason);
			free(m);
			break;
		}
		free(m);
	}
	pthread_mutex_lock(&c->lock);
	c->nchecks += nchecks;
	c->nbody += nchecks;	/* the passive role's own */
	if (nfail > lines)
		c->nfail += nfail - lines;
	pthread_mutex_unlock(&c->lock);
	if (skipped)
		conf_skip(c, "%s", reason);
}

/**
 * conf_run_active - run one test from the client side
 * @ctl: the channel to the server
 * @s: the area
 * @t: the test
 * @seq: a sequence number not used before in this session
 * @c: output: the merged result of both roles (conf_ctx_fini() it)
 */
void conf_run_active(struct conf_ctl *ctl, const struct conf_suite *s,
		     const struct conf_test *t, uint32_t seq,
		     struct conf_ctx *c)
{
	char run[256];
	size_t n;

	conf_ctx_init(c, CONF_ACTIVE);
	c->test = t;
	c->suite = s;
	c->seq = seq;
	c->params.flags = (conf_opt.long_run ? CONF_P_LONG : 0) |
			  (conf_opt.no_fork ? CONF_P_NO_FORK : 0);
	c->params.cycles = conf_opt.cycles;
	c->params.max_size = conf_opt.max_size;
	c->params.scale = conf_opt.scale ? conf_opt.scale : 1;
	if (t->passive) {
		c->ctl = ctl;
		n = (size_t)snprintf(run, sizeof(run), "%s/%s", s->name,
				     t->name) + 1;
		params_text(&c->params, run + n, sizeof(run) - n);
		n += strlen(run + n) + 1;
		if (conf_ctl_send(ctl, CONF_MSG_RUN, seq, 0, "run", run, n)) {
			FAIL("control channel: cannot reach the server");
			return;
		}
	}
	if (!conf_role_setup(c))
		run_role(c, t->active);
	if (t->passive) {
		send_end(c, CONF_MSG_END);
		wait_peer_end(c, CONF_MSG_DONE);
	}
	conf_role_teardown(c);
	if (t->passive)
		collect_result(c);
	/* A test that checked nothing proved nothing: it fails, unless it
	 * was skipped (with its reason).  Setup's checks do not count. */
	if (!c->nbody && !c->skipped && !c->nfail)
		FAIL("the test made no check (neither role checked anything nor skipped)");
}
