/* SPDX-License-Identifier: MIT */
/*
 * Provider toolkit: IPv4 and IPv6 socket address helpers
 * (<rapt/provider_util.h>).  Pure functions: no syscalls, no locks.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <rapt/rapt_errno.h>
#include <rapt/provider_util.h>

static const struct sockaddr_in *sa_in(const struct sockaddr *sa)
{
	return (const struct sockaddr_in *)(const void *)sa;
}

static const struct sockaddr_in6 *sa_in6(const struct sockaddr *sa)
{
	return (const struct sockaddr_in6 *)(const void *)sa;
}

socklen_t rapt_sockaddr_len(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

int rapt_sockaddr_copy(struct sockaddr_storage *dst,
		       const struct sockaddr *src)
{
	socklen_t len = rapt_sockaddr_len(src);

	if (!len)
		return RAPT_EINVAL;
	memset(dst, 0, sizeof(*dst));
	memcpy(dst, src, len);
	return 0;
}

uint16_t rapt_sockaddr_port(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return ntohs(sa_in(sa)->sin_port);
	case AF_INET6:
		return ntohs(sa_in6(sa)->sin6_port);
	default:
		return 0;
	}
}

void rapt_sockaddr_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)(void *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)(void *)sa)->sin6_port = htons(port);
}

bool rapt_sockaddr_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return sa_in(sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&sa_in6(sa)->sin6_addr);
	return false;
}

bool rapt_sockaddr_same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return sa_in(a)->sin_addr.s_addr == sa_in(b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return !memcmp(&sa_in6(a)->sin6_addr, &sa_in6(b)->sin6_addr,
			       sizeof(struct in6_addr)) &&
		       sa_in6(a)->sin6_scope_id == sa_in6(b)->sin6_scope_id;
	return false;
}

bool rapt_sockaddr_equal(const struct sockaddr *a, const struct sockaddr *b)
{
	return rapt_sockaddr_same_ip(a, b) &&
	       rapt_sockaddr_port(a) == rapt_sockaddr_port(b);
}

const char *rapt_sockaddr_str(const struct sockaddr *sa, char *buf,
			      size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (!len)
		return buf;
	switch (sa->sa_family) {
	case AF_INET:
		inet_ntop(AF_INET, &sa_in(sa)->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, rapt_sockaddr_port(sa));
		break;
	case AF_INET6:
		inet_ntop(AF_INET6, &sa_in6(sa)->sin6_addr, ip, sizeof(ip));
		if (sa_in6(sa)->sin6_scope_id)
			snprintf(buf, len, "[%s%%%u]:%u", ip,
				 sa_in6(sa)->sin6_scope_id,
				 rapt_sockaddr_port(sa));
		else
			snprintf(buf, len, "[%s]:%u", ip,
				 rapt_sockaddr_port(sa));
		break;
	case AF_UNSPEC:
		snprintf(buf, len, "unspecified");
		break;
	default:
		snprintf(buf, len, "family %d", sa->sa_family);
		break;
	}
	return buf;
}
