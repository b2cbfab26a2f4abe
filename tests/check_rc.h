/* SPDX-License-Identifier: MIT */
/*
 * CHECK_RC: a CUnit assertion on a rapt status that says, when it fails,
 * which status came back and rapt_last_error()'s detail.  Test-only;
 * include after <CUnit/Basic.h> and <rapt/rapt.h>.
 */
#ifndef RAPT_TESTS_CHECK_RC_H
#define RAPT_TESTS_CHECK_RC_H

#include <stdio.h>

/* Assert a status, and say which one came back when it is wrong. */
#define CHECK_RC(expr, want)						\
	do {								\
		int rc_ = (expr);					\
		if (rc_ != (want))					\
			printf("\n%s:%d: %s returned %s (%s), want %s\n", \
			       __FILE__, __LINE__, #expr,		\
			       rapt_err_name(rc_), rapt_last_error(),	\
			       rapt_err_name(want));			\
		CU_ASSERT_EQUAL(rc_, (want));				\
	} while (0)

#endif /* RAPT_TESTS_CHECK_RC_H */
