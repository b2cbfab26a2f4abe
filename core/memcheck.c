/* SPDX-License-Identifier: MIT */
/*
 * Is memory mapped with the rights a registration asks for?
 *
 * A registration promises a remote peer that the provider may read or
 * write the region.  A provider that writes with the CPU (tcp) would take
 * SIGSEGV on a read-only or unmapped page, so a hostile or buggy peer
 * could kill the process.  rapt_lmr_create() therefore refuses a region
 * that is not mapped, or not mapped with the rights asked for, before any
 * provider sees it.  The kernel's own table (/proc/self/maps) answers
 * without touching the memory.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rapt_int.h"

struct mem_walk {
	uintptr_t next;		/* first byte not yet covered */
	uintptr_t end;		/* one past the region */
	bool write;
	int ret;
};

/* One line of the maps table: 1 to stop (covered, or failed), else 0. */
static int walk_line(struct mem_walk *w, const char *line)
{
	uintptr_t start, stop;
	char perm[5];

	if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &start, &stop,
		   perm) != 3 || stop <= w->next)
		return 0;
	if (start > w->next) {
		w->ret = rapt__fail(RAPT_EFAULT,
				    "rapt_lmr_create: %#" PRIxPTR " is not mapped",
				    w->next);
		return 1;
	}
	if (perm[0] != 'r' || (w->write && perm[1] != 'w')) {
		w->ret = rapt__fail(RAPT_EACCES,
				    "rapt_lmr_create: %#" PRIxPTR "-%#" PRIxPTR
				    " is mapped %s: not %s", start, stop, perm,
				    w->write ? "readable and writable" :
				    "readable");
		return 1;
	}
	w->next = stop;
	return w->next >= w->end;
}

int rapt__mem_check(const void *addr, size_t len, bool write)
{
	struct mem_walk w = {
		.next = (uintptr_t)addr, .end = (uintptr_t)addr + len,
		.write = write,
	};
	char *line = NULL;
	size_t cap = 0;
	FILE *f;

	f = fopen("/proc/self/maps", "re");
	if (!f) {
		/* No /proc (a chroot): the provider's own checks remain. */
		rapt_dbg("cannot check a registration's mapping: /proc/self/maps: %m");
		return 0;
	}
	while (getline(&line, &cap, f) > 0)
		if (walk_line(&w, line))
			break;
	free(line);
	fclose(f);
	if (!w.ret && w.next < w.end)
		w.ret = rapt__fail(RAPT_EFAULT,
				   "rapt_lmr_create: %#" PRIxPTR " is not mapped",
				   w.next);
	return w.ret;
}
