/* SPDX-License-Identifier: MIT */
/*
 * Running out of file descriptors on purpose: lower the soft
 * RLIMIT_NOFILE to just above the highest descriptor open and hold every
 * free one below it, but @spare.  Test-only, header-only.
 */
#ifndef RAPT_TESTS_FD_LIMIT_H
#define RAPT_TESTS_FD_LIMIT_H

#include <fcntl.h>
#include <unistd.h>
#include <sys/resource.h>

/* Highest descriptor looked for; a test process has far fewer open. */
#define FD_LIMIT_SCAN	4096

/*
 * Hold all free descriptors but @spare in @held (room for @max); the old
 * limit goes to *@old.  Return: how many are held, or -1 (the limit
 * could not be read or lowered; nothing changed).
 */
static inline int fd_limit_fill(struct rlimit *old, int spare, int *held,
				int max)
{
	struct rlimit low;
	int top = 0, fd, n = 0;

	if (getrlimit(RLIMIT_NOFILE, old))
		return -1;
	for (fd = 0; fd < (int)old->rlim_cur && fd < FD_LIMIT_SCAN; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			top = fd;
	low = *old;
	low.rlim_cur = (rlim_t)top + 2;
	if (setrlimit(RLIMIT_NOFILE, &low))
		return -1;
	while (n < max && (fd = dup(0)) >= 0)
		held[n++] = fd;
	while (spare-- > 0 && n > 0)
		close(held[--n]);
	return n;
}

/* Give the held descriptors back and restore the limit (0 or -1). */
static inline int fd_limit_restore(const struct rlimit *old, const int *held,
				   int n)
{
	while (n > 0)
		close(held[--n]);
	return setrlimit(RLIMIT_NOFILE, old);
}

#endif /* RAPT_TESTS_FD_LIMIT_H */
