/* SPDX-License-Identifier: MIT */
/*
 * The configuration parser (core/config.c): rapt.conf as any file may
 * hold it, line by line as rapt__conf_load reads each file
 * (rapt__conf_stream, on the input as an in-memory stream), then the
 * lookups the registry makes.  The first line of the input also goes to the IA-name
 * and RAPT_PROVIDER filter parsers.
 */
#define _GNU_SOURCE
#include "config.h"

#include <string.h>

#include "../core/rapt_int.h"
#include "../core/registry.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* Bad lines are logged: keep the fuzzer's output readable. */
	setenv("RAPT_LOG_LEVEL", "none", 1);
	return 0;
}

static void names(const uint8_t *data, size_t size)
{
	char line[256], why[128];
	struct rapt_ia_name n;
	struct rapt_filter f;
	size_t len = 0;

	while (len < size && len < sizeof(line) - 1 && data[len] != '\n')
		len++;
	memcpy(line, data, len);
	line[len] = '\0';
	(void)rapt__ia_name_parse(line, &n, why, sizeof(why));
	if (!rapt__filter_parse(line, &f))
		(void)rapt__filter_allows(&f, "tcp");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rapt_conf conf;
	FILE *f;
	size_t i;

	memset(&conf, 0, sizeof(conf));
	f = fmemopen(size ? (void *)data : (void *)"", size, "r");
	fuzz_check(f != NULL);
	if (!rapt__conf_stream(&conf, f, "rapt.conf")) {
		for (i = 0; i < conf.naliases; i++)
			fuzz_check(rapt__conf_alias(&conf,
						    conf.aliases[i].name));
		(void)rapt__conf_disabled(&conf, "tcp", NULL);
		(void)rapt__conf_disabled(&conf, "tcp", "lo");
	}
	fclose(f);
	rapt__conf_free(&conf);
	names(data, size);
	return 0;
}
