/* SPDX-License-Identifier: MIT */
/*
 * The tcp provider's end-to-end tests (test_cm, test_dto) are lists of
 * scenarios that return 0 or -1; these report where one failed and why.
 */
#ifndef RAPT_TCP_TESTS_SCENARIO_H
#define RAPT_TCP_TESTS_SCENARIO_H

#include <stdio.h>

#include <rapt/rapt.h>

/* Fail the scenario unless @cond holds. */
#define T(cond)								\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: %s\n", __FILE__,	\
				__LINE__, #cond);			\
			return -1;					\
		}							\
	} while (0)

/* Fail the scenario unless @call returns 0; print rapt's error. */
#define TOK(call)							\
	do {								\
		int t_ret_ = (call);					\
		if (t_ret_) {						\
			fprintf(stderr, "%s:%d: %s: %s (%s)\n",		\
				__FILE__, __LINE__, #call,		\
				rapt_strerror(t_ret_), rapt_last_error()); \
			return -1;					\
		}							\
	} while (0)

#endif /* RAPT_TCP_TESTS_SCENARIO_H */
