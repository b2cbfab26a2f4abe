/* SPDX-License-Identifier: MIT */
/*
 * The runner of table-driven CUnit tests: suites of named cases, run in
 * verbose mode.  Test-only, header-only.
 */
#ifndef RAPT_TESTS_CU_TABLE_H
#define RAPT_TESTS_CU_TABLE_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

/* A named case; a table of them ends with { NULL, NULL }. */
struct test_case {
	const char *name;
	CU_TestFunc fn;
};

struct test_suite {
	const char *name;
	const struct test_case *cases;
};

/*
 * Skips.  A case that cannot run here calls cu_skip() with the reason and
 * returns; the program then exits 77, automake's SKIP, unless a case
 * failed (1): a skipped case is never counted as a pass.
 */
static unsigned int cu_nskipped;

static inline void cu_skip(const char *why)
{
	cu_nskipped++;
	fprintf(stderr, "SKIP: %s\n", why);
}

static inline int cu_exit_status(unsigned int failed)
{
	if (failed)
		return 1;
	if (cu_nskipped) {
		fprintf(stderr, "%u case(s) skipped: reported as SKIP\n",
			cu_nskipped);
		return 77;
	}
	return 0;
}

/* Run @n suites: 0 if every case passed, 1 if one failed, 77 if none
 * failed but one skipped (cu_skip()), 99 if CUnit
 * could not be set up (the automake hard-error code).  RAPT_TEST_ONLY=text
 * runs only the cases whose name contains text (by hand, when chasing one
 * failure). */
static inline int cu_table_run(const struct test_suite *suites, size_t n)
{
	const char *only = getenv("RAPT_TEST_ONLY");
	const struct test_case *c;
	unsigned int failed;
	CU_pSuite s;
	size_t i;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 99;
	for (i = 0; i < n; i++) {
		s = CU_add_suite(suites[i].name, NULL, NULL);
		if (!s)
			goto err_registry;
		for (c = suites[i].cases; c->name; c++)
			if ((!only || strstr(c->name, only)) &&
			    !CU_add_test(s, c->name, c->fn))
				goto err_registry;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return cu_exit_status(failed);

err_registry:
	CU_cleanup_registry();
	return 99;
}

#endif /* RAPT_TESTS_CU_TABLE_H */
