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
 * without touching the memory: since Linux 6.11 one mapping at a time
 * through its PROCMAP_QUERY ioctl, before that as text.  The text costs
 * the kernel about 2.5 us a mapping, every one below the region read; an
 * MPI process has hundreds (1 ms for 377, more than sending the 1 MiB
 * message the registration was for), the ioctl a few us in all.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <rapt/provider_util.h>

#include "rapt_int.h"

/*
 * The PROCMAP_QUERY interface of <linux/fs.h> (Linux 6.11), spelled out
 * here because older headers (Debian 12's) lack it: the kernel ABI, and a
 * kernel without it answers ENOTTY.
 */
struct mc_procmap_query {
	uint64_t size;			/* in: sizeof(this) */
	uint64_t query_flags;		/* in: 0, the mapping covering addr */
	uint64_t query_addr;		/* in */
	uint64_t vma_start, vma_end;	/* out */
	uint64_t vma_flags;		/* out: MC_VMA_* */
	uint64_t vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor;
	uint32_t vma_name_size;		/* in: 0, no name wanted */
	uint32_t build_id_size;		/* in: 0, no build ID wanted */
	uint64_t vma_name_addr, build_id_addr;
};
#define MC_PROCMAP_QUERY \
	_IOWR('f', 17, struct mc_procmap_query)
#define MC_VMA_READABLE		0x01u
#define MC_VMA_WRITABLE		0x02u

/* The kernel has no PROCMAP_QUERY: the text it is, from then on. */
static atomic_bool no_query;

/*
 * The /proc/self/maps that PROCMAP_QUERY asks, kept open: an open and a
 * close cost about as much as the ioctl itself (3 of the 5 us of a 1 MiB
 * registration and its free).  A child of fork() must not ask its
 * parent's table through the inherited descriptor: it closes it at once
 * (pthread_atfork) and opens its own when it first registers.
 */
static atomic_int query_fd = -1;
static pthread_once_t query_once = PTHREAD_ONCE_INIT;

static void query_fd_drop(void)
{
	int fd = atomic_exchange(&query_fd, -1);

	if (fd >= 0)
		rapt_sys_close(fd);
}

/* Close @fd if it is still the kept one (another thread may have
 * replaced it meanwhile: that one is not ours to close). */
static void query_fd_drop_if(int fd)
{
	if (atomic_compare_exchange_strong(&query_fd, &fd, -1))
		rapt_sys_close(fd);
}

static void query_once_init(void)
{
	pthread_atfork(NULL, NULL, query_fd_drop);
}

__attribute__((destructor)) static void query_fd_fini(void)
{
	query_fd_drop();
}

/* The kept descriptor, opened on first use; -1 without /proc. */
static int query_fd_get(void)
{
	int fd = atomic_load_explicit(&query_fd, memory_order_acquire);
	int none = -1;

	if (fd >= 0)
		return fd;
	pthread_once(&query_once, query_once_init);
	fd = rapt_sys_open("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (!atomic_compare_exchange_strong(&query_fd, &none, fd)) {
		rapt_sys_close(fd);	/* another thread's is in */
		fd = none;
	}
	return fd;
}

struct mem_walk {
	uintptr_t next;		/* first byte not yet covered */
	uintptr_t end;		/* one past the region */
	bool write;
	int ret;
};

/* One mapping, [start, stop) with rights "rw..": 1 to stop (covered,
 * or failed), else 0. */
static int walk_span(struct mem_walk *w, uintptr_t start, uintptr_t stop,
		     const char *perm)
{
	if (stop <= w->next)
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

/* One line of the maps table, as walk_span(). */
static int walk_line(struct mem_walk *w, const char *line)
{
	uintptr_t start, stop;
	char perm[5];

	if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &start, &stop,
		   perm) != 3)
		return 0;
	return walk_span(w, start, stop, perm);
}

/*
 * Walk the mappings under the region with PROCMAP_QUERY on @fd (an open
 * /proc/self/maps): 1 when it answered (w->ret says how), 0 when @fd does
 * not take the ioctl, -1 when it failed otherwise.
 */
static int walk_query(struct mem_walk *w, int fd)
{
	struct mc_procmap_query q;
	char perm[4];

	while (w->next < w->end) {
		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.query_addr = w->next;
		if (ioctl(fd, MC_PROCMAP_QUERY, &q)) {
			if (errno == ENOENT)	/* nothing covers next */
				break;
			if (errno == ENOTTY || errno == EINVAL ||
			    errno == E2BIG)
				return 0;
			rapt_dbg("cannot check a registration's mapping: PROCMAP_QUERY: %m");
			return -1;
		}
		snprintf(perm, sizeof(perm), "%c%c-",
			 q.vma_flags & MC_VMA_READABLE ? 'r' : '-',
			 q.vma_flags & MC_VMA_WRITABLE ? 'w' : '-');
		if (walk_span(w, q.vma_start, q.vma_end, perm))
			return 1;
	}
	return 1;
}

/* The same with the text of /proc/self/maps, read from @fd.  stdio's
 * read() and close() are cancellation points, which no call but
 * rapt_evd_wait() may be (rapt(7), THREADING): held off meanwhile.
 * fdopen() has no "c" mode (config.c's fopen() has): glibc 2.36's
 * getline() on an fdopen(fd, "rc") stream still acts on a cancel. */
static void walk_text(struct mem_walk *w, int fd)
{
	char *line = NULL;
	size_t cap = 0;
	int nc = rapt_nocancel_begin();
	FILE *f = fdopen(fd, "r");

	if (!f) {
		rapt_sys_close(fd);
		w->next = w->end;	/* out of memory: no check */
		rapt_nocancel_end(nc);
		return;
	}
	while (getline(&line, &cap, f) > 0)
		if (walk_line(w, line))
			break;
	free(line);
	fclose(f);
	rapt_nocancel_end(nc);
}

int rapt__mem_check(const void *addr, size_t len, bool write)
{
	struct mem_walk w = {
		.next = (uintptr_t)addr, .end = (uintptr_t)addr + len,
		.write = write,
	};
	int fd = -1, r = 0;

	if (!atomic_load_explicit(&no_query, memory_order_relaxed))
		fd = query_fd_get();
	if (fd >= 0)
		r = walk_query(&w, fd);
	if (fd >= 0 && r <= 0) {
		/* Not the ioctl's answer: perhaps no longer our descriptor
		 * (a program that closed every fd it did not open).  A new
		 * one decides, once. */
		query_fd_drop_if(fd);
		fd = query_fd_get();
		w.next = (uintptr_t)addr;
		r = fd >= 0 ? walk_query(&w, fd) : -1;
		if (!r)
			atomic_store(&no_query, true);
	}
	if (r <= 0) {
		fd = rapt_sys_open("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
		if (fd < 0) {
			/* No /proc (a chroot): the provider's own checks
			 * remain. */
			rapt_dbg("cannot check a registration's mapping: /proc/self/maps: %m");
			return 0;
		}
		w.next = (uintptr_t)addr;
		walk_text(&w, fd);
	}
	if (!w.ret && w.next < w.end)
		w.ret = rapt__fail(RAPT_EFAULT,
				   "rapt_lmr_create: %#" PRIxPTR " is not mapped",
				   w.next);
	return w.ret;
}
