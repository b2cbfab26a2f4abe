/* SPDX-License-Identifier: MIT */
/* rapt-conformance: results, the summary table and the JUnit XML. */
#ifndef RAPT_CONFORMANCE_REPORT_H
#define RAPT_CONFORMANCE_REPORT_H

#include <stdio.h>

#include "conf.h"

enum conf_status {
	CONF_PASS = 0,
	CONF_FAIL,
	CONF_SKIP,
};

/* The outcome of one test, both roles merged. */
struct conf_result {
	const struct conf_suite *suite;
	const struct conf_test *test;
	enum conf_status status;
	double secs;
	unsigned int nfail;
	char **msgs;
	unsigned int nmsgs;
	char reason[256];
};

struct conf_report;

struct conf_report *conf_report_new(void);
void conf_report_free(struct conf_report *rep);
void conf_report_set_ia(const struct rapt_ia_attr *attr);
struct conf_result *conf_report_add(struct conf_report *rep,
				    const struct conf_suite *s,
				    const struct conf_test *t);
/* Move @c's outcome into @r (its messages change owner). */
void conf_result_take(struct conf_result *r, struct conf_ctx *c);
void conf_report_start(const struct conf_result *r);
void conf_report_line(const struct conf_result *r);
/* Print the table and the closing line; return the number failed. */
unsigned int conf_report_summary(const struct conf_report *rep, FILE *f);
int conf_report_xml(const struct conf_report *rep, const char *path);

#endif /* RAPT_CONFORMANCE_REPORT_H */
