/* SPDX-License-Identifier: MIT */
/*
 * rapt-conformance results: one line per test as it finishes, a table per
 * area at the end, and a JUnit-style XML file (testsuites / testsuite /
 * testcase with failure and skipped elements) that CI systems read.
 * CUnit's own XML is not JUnit, so this writes its own.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "report.h"

struct conf_report {
	struct conf_result *res;
	unsigned int n;
	unsigned int alloc;
	time_t started;
};

static struct rapt_ia_attr report_ia;
static bool report_have_ia;

static const char *const status_names[] = { "PASS", "FAIL", "SKIP" };

struct conf_report *conf_report_new(void)
{
	struct conf_report *rep = calloc(1, sizeof(*rep));

	if (rep)
		rep->started = time(NULL);
	return rep;
}

void conf_report_free(struct conf_report *rep)
{
	unsigned int i, j;

	if (!rep)
		return;
	for (i = 0; i < rep->n; i++) {
		for (j = 0; j < rep->res[i].nmsgs; j++)
			free(rep->res[i].msgs[j]);
		free(rep->res[i].msgs);
	}
	free(rep->res);
	free(rep);
}

void conf_report_set_ia(const struct rapt_ia_attr *attr)
{
	report_ia = *attr;
	report_have_ia = true;
}

struct conf_result *conf_report_add(struct conf_report *rep,
				    const struct conf_suite *s,
				    const struct conf_test *t)
{
	struct conf_result *r;

	if (rep->n == rep->alloc) {
		unsigned int na = rep->alloc ? 2 * rep->alloc : 64;

		r = realloc(rep->res, na * sizeof(*r));
		if (!r)
			return NULL;
		rep->res = r;
		rep->alloc = na;
	}
	r = &rep->res[rep->n++];
	memset(r, 0, sizeof(*r));
	r->suite = s;
	r->test = t;
	return r;
}

void conf_result_take(struct conf_result *r, struct conf_ctx *c)
{
	r->nfail = c->nfail;
	r->msgs = c->fails;
	r->nmsgs = c->nmsgs;
	c->fails = NULL;
	c->nmsgs = c->nfails_alloc = 0;
	if (c->nfail)
		r->status = CONF_FAIL;
	else if (c->skipped)
		r->status = CONF_SKIP;
	else
		r->status = CONF_PASS;
	if (c->skipped)
		snprintf(r->reason, sizeof(r->reason), "%s", c->skip_reason);
}

void conf_report_start(const struct conf_result *r)
{
	if (conf_opt.verbose)
		fprintf(stderr, "RUN   %s/%s\n", r->suite->name, r->test->name);
}

void conf_report_line(const struct conf_result *r)
{
	char name[96];
	unsigned int i;

	snprintf(name, sizeof(name), "%s/%s", r->suite->name, r->test->name);
	printf("%s  %-40s %7.2f s", status_names[r->status], name, r->secs);
	if (r->status == CONF_SKIP)
		printf("  (%s)", r->reason);
	putchar('\n');
	for (i = 0; i < r->nmsgs; i++)
		printf("      %s\n", r->msgs[i]);
	if (r->status == CONF_FAIL && r->nfail > r->nmsgs)
		printf("      (%u more failures without a message)\n",
		       r->nfail - r->nmsgs);
	fflush(stdout);
}

struct tally {
	unsigned int run, pass, fail, skip;
	double secs;
};

static void tally_add(struct tally *t, const struct conf_result *r)
{
	t->run++;
	t->secs += r->secs;
	if (r->status == CONF_PASS)
		t->pass++;
	else if (r->status == CONF_FAIL)
		t->fail++;
	else
		t->skip++;
}

static struct tally suite_tally(const struct conf_report *rep,
				const struct conf_suite *s)
{
	struct tally t = { 0 };
	unsigned int i;

	for (i = 0; i < rep->n; i++)
		if (rep->res[i].suite == s)
			tally_add(&t, &rep->res[i]);
	return t;
}

unsigned int conf_report_summary(const struct conf_report *rep, FILE *f)
{
	struct tally all = { 0 }, t;
	unsigned int i;

	fprintf(f, "\n%-12s %5s %7s %7s %8s %9s\n", "area", "run", "passed",
		"failed", "skipped", "time (s)");
	for (i = 0; i < conf_nsuites; i++) {
		t = suite_tally(rep, conf_suites[i]);
		if (!t.run)
			continue;
		fprintf(f, "%-12s %5u %7u %7u %8u %9.2f\n",
			conf_suites[i]->name, t.run, t.pass, t.fail, t.skip,
			t.secs);
	}
	for (i = 0; i < rep->n; i++)
		tally_add(&all, &rep->res[i]);
	fprintf(f, "%-12s %5u %7u %7u %8u %9.2f\n", "total", all.run,
		all.pass, all.fail, all.skip, all.secs);
	if (all.fail) {
		fprintf(f, "\nfailed:");
		for (i = 0; i < rep->n; i++)
			if (rep->res[i].status == CONF_FAIL)
				fprintf(f, " %s/%s", rep->res[i].suite->name,
					rep->res[i].test->name);
		fputc('\n', f);
	}
	fprintf(f, "\n%u passed, %u failed, %u skipped\n", all.pass, all.fail,
		all.skip);
	return all.fail;
}

/* ------------------------------------------------------------------ */
/* JUnit XML                                                           */
/* ------------------------------------------------------------------ */

static void xml_esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		switch (ch) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* XML 1.0 forbids most control characters. */
			if (ch < 0x20 && ch != '\n' && ch != '\t')
				fputc('?', f);
			else
				fputc(ch, f);
		}
	}
}

static void xml_prop(FILE *f, const char *name, const char *value)
{
	fprintf(f, "      <property name=\"%s\" value=\"", name);
	xml_esc(f, value);
	fputs("\"/>\n", f);
}

static void xml_properties(FILE *f)
{
	char buf[64];

	fputs("    <properties>\n", f);
	xml_prop(f, "suite.version", PACKAGE_VERSION);
	xml_prop(f, "mode", conf_opt.mode == CONF_MODE_CLIENT ? "two-host" :
		 "loopback");
	if (report_have_ia) {
		xml_prop(f, "ia", report_ia.name);
		xml_prop(f, "provider", report_ia.provider);
		snprintf(buf, sizeof(buf), "%u", report_ia.transport);
		xml_prop(f, "transport", buf);
		snprintf(buf, sizeof(buf), "%#llx",
			 (unsigned long long)report_ia.caps);
		xml_prop(f, "caps", buf);
	}
	fputs("    </properties>\n", f);
}

static void xml_case(FILE *f, const struct conf_result *r)
{
	unsigned int i;

	fprintf(f, "    <testcase classname=\"rapt.%s\" name=\"%s\" time=\"%.3f\">\n",
		r->suite->name, r->test->name, r->secs);
	if (r->status == CONF_FAIL) {
		fputs("      <failure type=\"assertion\" message=\"", f);
		xml_esc(f, r->nmsgs ? r->msgs[0] : "failed");
		fputs("\">", f);
		for (i = 0; i < r->nmsgs; i++) {
			xml_esc(f, r->msgs[i]);
			fputc('\n', f);
		}
		fputs("</failure>\n", f);
	} else if (r->status == CONF_SKIP) {
		fputs("      <skipped message=\"", f);
		xml_esc(f, r->reason);
		fputs("\"/>\n", f);
	}
	fputs("      <system-out>", f);
	xml_esc(f, r->test->desc);
	fputs("</system-out>\n", f);
	fputs("    </testcase>\n", f);
}

static void xml_suite(FILE *f, const struct conf_report *rep,
		      const struct conf_suite *s, const char *stamp)
{
	struct tally t = suite_tally(rep, s);
	char host[128] = "localhost";
	unsigned int i;

	if (!t.run)
		return;
	(void)gethostname(host, sizeof(host) - 1);
	fprintf(f, "  <testsuite name=\"%s\" tests=\"%u\" failures=\"%u\" errors=\"0\" skipped=\"%u\" time=\"%.3f\" timestamp=\"%s\" hostname=\"",
		s->name, t.run, t.fail, t.skip, t.secs, stamp);
	xml_esc(f, host);
	fputs("\">\n", f);
	xml_properties(f);
	for (i = 0; i < rep->n; i++)
		if (rep->res[i].suite == s)
			xml_case(f, &rep->res[i]);
	fputs("  </testsuite>\n", f);
}

int conf_report_xml(const struct conf_report *rep, const char *path)
{
	struct tally all = { 0 };
	char stamp[32];
	unsigned int i;
	struct tm tm;
	FILE *f;

	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return -1;
	}
	gmtime_r(&rep->started, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	for (i = 0; i < rep->n; i++)
		tally_add(&all, &rep->res[i]);
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(f, "<testsuites name=\"rapt-conformance\" tests=\"%u\" failures=\"%u\" errors=\"0\" skipped=\"%u\" time=\"%.3f\">\n",
		all.run, all.fail, all.skip, all.secs);
	for (i = 0; i < conf_nsuites; i++)
		xml_suite(f, rep, conf_suites[i], stamp);
	fputs("</testsuites>\n", f);
	if (fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}
