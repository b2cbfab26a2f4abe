/* SPDX-License-Identifier: MIT */
/*
 * Logging for the core and the providers.
 *
 * RAPT_LOG_LEVEL (0-5 or none, error, warn, info, debug, trace; default
 * warn) and RAPT_LOG_PROV (a comma list of provider names, "core" for the
 * core) are read once.  rapt_prov_log_enabled() sits on hot paths behind
 * RAPT_PLOG(): a message above the level costs one relaxed load and one
 * compare.
 *
 * A line goes to stderr's file descriptor with write(2) as the toolkit
 * makes it (rapt_sys_write(), not a cancellation point): rapt logs from
 * inside its calls, some with a lock held, and a thread cancelled there
 * must not end in the middle of a line.  stdio's buffer is bypassed, so a
 * program that made stderr buffered sees rapt's lines before its own
 * unflushed output.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rapt/provider_util.h>

#include "rapt_int.h"
#include "registry.h"

#define LOG_PROV_MAX 16

/* -1 until the environment has been read. */
static atomic_int log_level = -1;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

/* Written once under log_once, read-only afterwards. */
static unsigned int log_nprov;
static char log_prov[LOG_PROV_MAX][RAPT_PROV_NAME_MAX];

static const char *const level_names[] = {
	[RAPT_LOG_NONE] = "none",
	[RAPT_LOG_ERROR] = "error",
	[RAPT_LOG_WARN] = "warn",
	[RAPT_LOG_INFO] = "info",
	[RAPT_LOG_DEBUG] = "debug",
	[RAPT_LOG_TRACE] = "trace",
};

/* All of @s on stderr's descriptor, in as few write(2)s as it takes. */
static void log_write(const char *s, size_t n)
{
	int fd = fileno(stderr);
	ssize_t w;

	while (fd >= 0 && n > 0) {
		w = rapt_sys_write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static int parse_level(const char *s)
{
	char buf[256];
	unsigned int i;
	int n;

	if (!s || !*s)
		return RAPT_LOG_WARN;
	if (s[0] >= '0' && s[0] <= '5' && s[1] == '\0')
		return s[0] - '0';
	for (i = 0; i < RAPT_ARRAY_SIZE(level_names); i++)
		if (!strcasecmp(s, level_names[i]))
			return (int)i;
	if (!strcasecmp(s, "warning"))
		return RAPT_LOG_WARN;
	n = snprintf(buf, sizeof(buf),
		     "rapt:core:%s: warn: RAPT_LOG_LEVEL=%.64s is not 0-5 or none, error, warn, info, debug, trace; using warn\n",
		     __func__, s);
	if (n > 0)
		log_write(buf, (size_t)n < sizeof(buf) ? (size_t)n :
			  sizeof(buf) - 1);
	return RAPT_LOG_WARN;
}

static void parse_provs(const char *s)
{
	const char *p = s;
	size_t len;

	while (p && *p && log_nprov < LOG_PROV_MAX) {
		len = strcspn(p, ",");
		if (len > 0 && len < RAPT_PROV_NAME_MAX) {
			memcpy(log_prov[log_nprov], p, len);
			log_prov[log_nprov][len] = '\0';
			log_nprov++;
		}
		p += len;
		if (*p == ',')
			p++;
	}
}

static void log_init(void)
{
	int saved = errno;

	parse_provs(getenv("RAPT_LOG_PROV"));
	/* Release: whoever sees the level also sees log_prov. */
	atomic_store_explicit(&log_level, parse_level(getenv("RAPT_LOG_LEVEL")),
			      memory_order_release);
	errno = saved;
}

static int log_level_slow(void)
{
	pthread_once(&log_once, log_init);
	return atomic_load_explicit(&log_level, memory_order_acquire);
}

static bool prov_selected(const char *prov)
{
	unsigned int i;

	if (!log_nprov)
		return true;
	for (i = 0; i < log_nprov; i++)
		if (prov && !strcmp(prov, log_prov[i]))
			return true;
	return false;
}

/**
 * rapt_prov_log_enabled - would a message at @level from @prov be printed
 * @level: enum rapt_log_level
 * @prov: provider name, or "core"
 *
 * Return: non-zero if it would.
 */
RAPT_SDK int rapt_prov_log_enabled(int level, const char *prov)
{
	int cur = atomic_load_explicit(&log_level, memory_order_relaxed);

	if (rapt_likely(cur >= 0 && level > cur))
		return 0;
	/* Enabled or not yet initialised: synchronise with log_init(). */
	cur = log_level_slow();
	if (level > cur || level <= RAPT_LOG_NONE)
		return 0;
	return prov_selected(prov);
}

/**
 * rapt_prov_log - print one log line on stderr
 * @level: enum rapt_log_level
 * @prov: provider name, or "core"
 * @func: the calling function
 * @line: the calling line
 * @fmt: printf format of the message
 *
 * The line reads "rapt:<prov>:<func>:<line>: <level>: <message>" and is
 * written with one write(2), so lines of concurrent threads do not mix;
 * the call is not a cancellation point.
 * errno is preserved, so "%m" works and callers may log before they look
 * at errno.
 */
RAPT_SDK void rapt_prov_log(int level, const char *prov, const char *func,
			    int line, const char *fmt, ...)
{
	char buf[1024];
	int saved = errno;
	va_list ap;
	int n;

	if (!rapt_prov_log_enabled(level, prov))
		return;
	n = snprintf(buf, sizeof(buf), "rapt:%s:%s:%d: %s: ", prov ? prov : "?",
		     func ? func : "?", line, level_names[level]);
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = 0;
	va_start(ap, fmt);
	errno = saved;
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	n = (int)strlen(buf);
	if ((size_t)n == sizeof(buf) - 1)
		n--;		/* truncated: make room for the newline */
	buf[n++] = '\n';
	log_write(buf, (size_t)n);
	errno = saved;
}
