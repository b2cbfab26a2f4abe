/* SPDX-License-Identifier: MIT */
/*
 * errno -> RAPT_E*: one table for the core (rapt__errno_status(), core/
 * errno.c) and the provider toolkit (rapt_errno_status(), providers/util/
 * status.c).  Private: built into both, never installed.
 */
#ifndef RAPT_ERRNO_MAP_H
#define RAPT_ERRNO_MAP_H

#include <errno.h>

/* errno, then the RAPT_E* code it stands for (see rapt_errno_status). */
#define RAPT_ERRNO_STATUS_MAP(XX)					\
	XX(EPERM, RAPT_EACCES)						\
	XX(ENOENT, RAPT_ENOENT)						\
	XX(EINTR, RAPT_EINTR)						\
	XX(EIO, RAPT_EIO)						\
	XX(EFAULT, RAPT_EFAULT)						\
	XX(ENXIO, RAPT_ENODEV)						\
	XX(E2BIG, RAPT_ELENGTH)						\
	XX(EAGAIN, RAPT_EAGAIN)						\
	XX(ENOMEM, RAPT_ENOMEM)						\
	XX(EACCES, RAPT_EACCES)						\
	XX(EBUSY, RAPT_EBUSY)						\
	XX(EEXIST, RAPT_EEXIST)						\
	XX(ENODEV, RAPT_ENODEV)						\
	XX(EINVAL, RAPT_EINVAL)						\
	XX(ENFILE, RAPT_EMFILE)						\
	XX(EMFILE, RAPT_EMFILE)						\
	XX(ENOSPC, RAPT_ENOMEM)						\
	XX(ERANGE, RAPT_ERANGE)						\
	XX(ENOSYS, RAPT_ENOTSUP)					\
	XX(EOVERFLOW, RAPT_ERANGE)					\
	XX(EPROTO, RAPT_EPROTO)						\
	XX(EMSGSIZE, RAPT_ELENGTH)					\
	XX(EOPNOTSUPP, RAPT_ENOTSUP)					\
	XX(EAFNOSUPPORT, RAPT_EINVAL)					\
	XX(EADDRINUSE, RAPT_EADDRINUSE)					\
	XX(EADDRNOTAVAIL, RAPT_EINVAL)					\
	XX(ENOBUFS, RAPT_ENOMEM)					\
	XX(ENOTCONN, RAPT_ENOTCONN)					\
	XX(ETIMEDOUT, RAPT_ETIMEDOUT)					\
	XX(ECONNREFUSED, RAPT_ECONNREFUSED)				\
	XX(ECANCELED, RAPT_ECANCELED)

/* @err (an errno, either sign) as a RAPT_E* code; @unknown for one the
 * table does not have. */
static inline int rapt_errno_map(int err, int unknown)
{
	switch (err < 0 ? -err : err) {
	case 0:
		return 0;
#define RAPT__ERRNO_CASE(e, status) case e: return status;
	RAPT_ERRNO_STATUS_MAP(RAPT__ERRNO_CASE)
#undef RAPT__ERRNO_CASE
	default:
		return unknown;
	}
}

#endif /* RAPT_ERRNO_MAP_H */
