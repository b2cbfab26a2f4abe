/* SPDX-License-Identifier: MIT */
/*
 * rapt status codes.
 *
 * Every rapt call returns 0 on success or one of the negative RAPT_E* codes
 * below.  Where a POSIX errno says the same thing, the code is that errno
 * negated, so "ret == -EINVAL" style checks keep working; codes that only
 * rapt needs start at -256.
 *
 * The list is the single source of truth: the enum, rapt_strerror() and
 * rapt_err_name() are all generated from it.  Append only; never renumber.
 */
#ifndef RAPT_API_RAPT_ERRNO_H
#define RAPT_API_RAPT_ERRNO_H

#include <errno.h>

#define RAPT_ERRNO_MAP(XX)						\
	XX(EPERM,	-EPERM,		"operation not permitted")		\
	XX(ENOENT,	-ENOENT,	"no such entry")			\
	XX(EINTR,	-EINTR,		"interrupted by a signal")		\
	XX(EIO,		-EIO,		"input/output error")			\
	XX(EAGAIN,	-EAGAIN,	"nothing to return now (queue empty or would block)") \
	XX(ENOMEM,	-ENOMEM,	"out of memory")			\
	XX(EACCES,	-EACCES,	"access rights do not allow this")	\
	XX(EBUSY,	-EBUSY,		"object is busy (it still has children or users)") \
	XX(EEXIST,	-EEXIST,	"already exists")			\
	XX(ENODEV,	-ENODEV,	"no such device")			\
	XX(EINVAL,	-EINVAL,	"invalid argument")			\
	XX(ENOSPC,	-ENOSPC,	"queue full")				\
	XX(ERANGE,	-ERANGE,	"value out of range")			\
	XX(ENOTSUP,	-EOPNOTSUPP,	"operation not supported by this provider") \
	XX(EADDRINUSE,	-EADDRINUSE,	"address or service id already in use")	\
	XX(ENOTCONN,	-ENOTCONN,	"endpoint is not connected")		\
	XX(ETIMEDOUT,	-ETIMEDOUT,	"timed out")				\
	XX(ECONNREFUSED, -ECONNREFUSED,	"connection refused")			\
	XX(EOVERFLOW,	-EOVERFLOW,	"event queue overflowed")		\
	XX(ECANCELED,	-ECANCELED,	"canceled (object freed while waiting)") \
	XX(EFAULT,	-EFAULT,	"bad address (memory not mapped)")	\
	XX(EMFILE,	-EMFILE,	"too many open files (the process's or the system's limit)") \
	XX(EBADHANDLE,	-256,		"bad handle (NULL, freed or never created)") \
	XX(EHANDLETYPE,	-257,		"handle is of the wrong type for this call") \
	XX(ESTATE,	-258,		"invalid state for this operation")	\
	XX(ELENGTH,	-259,		"length exceeds the limit for this operation") \
	XX(ENOPROVIDER,	-260,		"no provider by that name")		\
	XX(EDLOPEN,	-261,		"provider library could not be loaded")	\
	XX(EABI,	-262,		"provider ABI version mismatch")	\
	XX(ECONFIG,	-263,		"bad configuration")			\
	XX(EPROVIDER,	-264,		"provider internal error")		\
	XX(EVERSION,	-265,		"peer speaks an incompatible version")	\
	XX(EPROTO,	-266,		"protocol error")

/**
 * enum rapt_status - status codes returned by every rapt call
 *
 * RAPT_OK is 0; every other value is negative.
 */
enum rapt_status {
	RAPT_OK = 0,
#define RAPT__ERR_ENUM(name, val, msg) RAPT_##name = (val),
	RAPT_ERRNO_MAP(RAPT__ERR_ENUM)
#undef RAPT__ERR_ENUM
};

#endif /* RAPT_API_RAPT_ERRNO_H */
