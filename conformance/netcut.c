/* SPDX-License-Identifier: MIT */
/*
 * Cutting one connection's link, for the silent-peer tests: an nft table
 * of our own drops every packet of the connection, both ways, so each
 * side sees a peer that neither answers nor closes: what a dead host or a
 * pulled cable looks like.  No packet leaves the machine.
 *
 * On iWARP (the tcp provider, siw) the connection is a TCP connection:
 * its two ports.  On RoCE v2 it is UDP to port 4791 between the two
 * addresses (every RoCE packet between them, the CM's too); a connection
 * of a device to its own address never reaches the IP stack (rxe loops it
 * back inside), and native InfiniBand has no IP packets: both cannot be
 * cut here.
 *
 * Only where it harms nothing: with --netcut (the network namespace is
 * the suite's own: run-check.sh runs the tcp suite in namespaces it
 * creates), as root, with nft; otherwise the test is skipped with the
 * reason.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"

/* Why a link cannot be cut here (NULL: it can). */
const char *conf_netcut_why_not(void)
{
	if (!conf_opt.netcut)
		return "cutting a link changes the firewall of this network namespace: allowed only with --netcut (run-check.sh's tcp runs, in namespaces of their own, pass it)";
	if (geteuid() != 0)
		return "cutting a link needs root (nft)";
	if (system("nft --version >/dev/null 2>&1"))
		return "nft is not installed";
	return NULL;
}

static unsigned int port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

static int nft_run(const char *script)
{
	FILE *f = popen("nft -f - 2>&1", "w");

	if (!f)
		return -1;
	fputs(script, f);
	return pclose(f) ? -1 : 0;
}

/* Why @ep's connection cannot be cut (NULL: it can). */
const char *conf_netcut_ep_why_not(struct conf_ctx *c, struct rapt_ep *ep)
{
	struct rapt_ep_info info;

	switch (c->attr.transport) {
	case RAPT_TRANSPORT_IWARP:
		return NULL;
	case RAPT_TRANSPORT_ROCE:
		if (rapt_ep_query(ep, &info, sizeof(info)))
			return "the EP reports no addresses";
		if (conf_addr_same_host(&info.local_addr, &info.remote_addr))
			return "a RoCE connection to the device's own address never reaches the IP stack (rxe loops it back): no packet to drop";
		return NULL;
	case RAPT_TRANSPORT_IB:
		return "native InfiniBand carries no IP packets to drop";
	default:
		return "the IA's transport is unknown: no packets known to drop";
	}
}

/* The rules that drop the packets of the connection of @i's ends. */
static void cut_rules(struct conf_ctx *c, const struct rapt_ep_info *i,
		      char *buf, size_t len)
{
	const char *ip = i->local_addr.ss_family == AF_INET6 ? "ip6" : "ip";
	unsigned int lp = port_of(&i->local_addr);
	unsigned int rp = port_of(&i->remote_addr);
	char l[INET6_ADDRSTRLEN + 2], r[INET6_ADDRSTRLEN + 2];
	const char *lh = l, *rh = r;

	if (c->attr.transport != RAPT_TRANSPORT_ROCE) {
		snprintf(buf, len,
			 " chain in { type filter hook input priority -300;"
			 " tcp sport %u tcp dport %u drop; }\n"
			 " chain out { type filter hook output priority -300;"
			 " tcp sport %u tcp dport %u drop; }\n",
			 rp, lp, lp, rp);
		return;
	}
	/* The hosts, without conf_addr_str()'s brackets around IPv6. */
	conf_addr_str(&i->local_addr, l, sizeof(l));
	conf_addr_str(&i->remote_addr, r, sizeof(r));
	if (*lh == '[') {
		lh++;
		rh++;
		l[strlen(l) - 1] = 0;
		r[strlen(r) - 1] = 0;
	}
	snprintf(buf, len,
		 " chain in { type filter hook input priority -300;"
		 " %s saddr %s %s daddr %s udp dport 4791 drop;"
		 " %s saddr %s %s daddr %s udp dport 4791 drop; }\n"
		 " chain out { type filter hook output priority -300;"
		 " %s saddr %s %s daddr %s udp dport 4791 drop;"
		 " %s saddr %s %s daddr %s udp dport 4791 drop; }\n",
		 ip, lh, ip, rh, ip, rh, ip, lh,
		 ip, lh, ip, rh, ip, rh, ip, lh);
}

/* Drop every packet of @ep's connection; 0 or -1 (a failure recorded). */
int conf_netcut(struct conf_ctx *c, struct rapt_ep *ep)
{
	struct rapt_ep_info info;
	char rules[768], script[896];

	if (!EXPECT_OK(rapt_ep_query(ep, &info, sizeof(info))))
		return -1;
	if (!EXPECT_MSG(port_of(&info.local_addr) &&
			port_of(&info.remote_addr),
			"the EP reports no ports to cut"))
		return -1;
	cut_rules(c, &info, rules, sizeof(rules));
	snprintf(script, sizeof(script), "table inet rapt_netcut_%d {\n%s}\n",
		 (int)getpid(), rules);
	if (!EXPECT_MSG(!nft_run(script), "nft could not cut the link"))
		return -1;
	conf_note(c, "link cut: %s",
		  c->attr.transport == RAPT_TRANSPORT_ROCE ?
		  "RoCE (udp 4791) between the two addresses dropped" :
		  "the connection's TCP ports dropped");
	return 0;
}

/* Undo conf_netcut() (harmless if nothing was cut). */
void conf_netcut_undo(void)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd),
		 "nft delete table inet rapt_netcut_%d >/dev/null 2>&1",
		 (int)getpid());
	if (system(cmd))
		return;	/* nothing was cut */
}
