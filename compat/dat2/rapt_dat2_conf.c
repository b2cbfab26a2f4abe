// SPDX-License-Identifier: MIT
/*
 * rapt-dat2-conf: the dat.conf lines that make rapt's IAs DAT 2.0 IAs.
 *
 * One line per IA name rapt_registry_list() reports (devices and
 * rapt.conf aliases), named "rapt-<rapt IA name>", plus "rapt" for the
 * best IA; entries rapt cannot use are printed as comments saying why.
 * Append the output to /etc/dat.conf, or point DAT_OVERRIDE at it.
 *
 *   rapt-dat2-conf [-l LIBRARY] [-n]
 *     -l  the provider library path to write (default: the installed one)
 *     -n  only the mapping: DAT IA name, rapt IA name, status
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rapt/rapt.h>

#ifndef RDAT_PROVIDERDIR
#define RDAT_PROVIDERDIR "/usr/lib/rapt-dat2"
#endif

static void line(const char *lib, const char *dat, const char *rapt)
{
	printf("%s u2.0 nonthreadsafe default %s rapt.%u.%u \"%s\" \"\"\n",
	       dat, lib, RAPT_API_VERSION_MAJOR, RAPT_API_VERSION_MINOR, rapt);
}

static int usable(const struct rapt_entry *e)
{
	return e->kind != RAPT_ENTRY_PROVIDER && e->status == 0;
}

static void conf(const char *lib, const struct rapt_entry *v, size_t n)
{
	size_t i;

	printf("# DAT 2.0 IAs on rapt (rapt-dat2-conf); DAT_OVERRIDE=<this file>\n");
	line(lib, "rapt", "");
	for (i = 0; i < n; i++) {
		char dat[160];

		if (v[i].kind == RAPT_ENTRY_PROVIDER)
			continue;
		snprintf(dat, sizeof(dat), "rapt-%s", v[i].name);
		if (usable(&v[i]))
			line(lib, dat, v[i].name);
		else
			printf("# %s: %s (%s)\n", dat,
			       rapt_err_name(v[i].status), v[i].reason);
	}
}

static void mapping(const struct rapt_entry *v, size_t n)
{
	size_t i;

	printf("%-32s %-24s %s\n", "DAT IA name", "rapt IA", "status");
	printf("%-32s %-24s %s\n", "rapt", "(best usable IA)", "");
	for (i = 0; i < n; i++) {
		char dat[160];

		if (v[i].kind == RAPT_ENTRY_PROVIDER)
			continue;
		snprintf(dat, sizeof(dat), "rapt-%s", v[i].name);
		printf("%-32s %-24s %s%s%s\n", dat, v[i].name,
		       usable(&v[i]) ? "ok" : rapt_err_name(v[i].status),
		       *v[i].reason ? ": " : "", v[i].reason);
	}
}

int main(int argc, char **argv)
{
	const char *lib = RDAT_PROVIDERDIR "/librapt-dat2.so";
	struct rapt_entry *v;
	int opt, map_only = 0, rc;
	size_t n;

	while ((opt = getopt(argc, argv, "l:nh")) != -1) {
		switch (opt) {
		case 'l':
			lib = optarg;
			break;
		case 'n':
			map_only = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-l LIBRARY] [-n]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	rc = rapt_registry_list(&v, &n);
	if (rc) {
		fprintf(stderr, "rapt_registry_list: %s: %s\n",
			rapt_strerror(rc), rapt_last_error());
		return 1;
	}
	if (map_only)
		mapping(v, n);
	else
		conf(lib, v, n);
	rapt_free(v);
	return 0;
}
