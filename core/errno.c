/* SPDX-License-Identifier: MIT */
/*
 * Status strings (generated from RAPT_ERRNO_MAP) and the per-thread detail
 * of the last failure.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "rapt_int.h"
#include "errno_map.h"

static __thread char last_error[512];

RAPT_API const char *rapt_strerror(int status)
{
	switch (status) {
	case 0:
		return "success";
#define RAPT__ERR_STR(name, val, msg) case RAPT_##name: return msg;
	RAPT_ERRNO_MAP(RAPT__ERR_STR)
#undef RAPT__ERR_STR
	}
	return "unknown rapt status";
}

RAPT_API const char *rapt_err_name(int status)
{
	switch (status) {
	case 0:
		return "RAPT_OK";
#define RAPT__ERR_NAME(name, val, msg) case RAPT_##name: return "RAPT_" #name;
	RAPT_ERRNO_MAP(RAPT__ERR_NAME)
#undef RAPT__ERR_NAME
	}
	return "RAPT_E?";
}

RAPT_API const char *rapt_last_error(void)
{
	return last_error;
}

static void __attribute__((format(printf, 1, 0)))
set_error(const char *fmt, va_list ap)
{
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
}

int rapt__fail(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_error(fmt, ap);
	va_end(ap);
	return status;
}

int rapt__errno_status(int err)
{
	return rapt_errno_map(err, RAPT_EIO);
}

RAPT_SDK void rapt_prov_set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_error(fmt, ap);
	va_end(ap);
}

RAPT_API const char *rapt_version(unsigned int *major, unsigned int *minor)
{
	if (major)
		*major = RAPT_API_VERSION_MAJOR;
	if (minor)
		*minor = RAPT_API_VERSION_MINOR;
	return PACKAGE_VERSION;
}
