/* SPDX-License-Identifier: MIT */
/*
 * Cutting one connection's link, for the silent-peer tests: an nft table
 * of our own drops every packet of the connection's TCP ports, both ways,
 * so each side sees a peer that neither answers nor closes: what a dead
 * host or a pulled cable looks like.  No packet leaves the machine.
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

/* Drop every packet of @ep's connection; 0 or -1 (a failure recorded). */
int conf_netcut(struct conf_ctx *c, struct rapt_ep *ep)
{
	struct rapt_ep_info info;
	unsigned int lp, rp;
	char script[512];

	if (!EXPECT_OK(rapt_ep_query(ep, &info, sizeof(info))))
		return -1;
	lp = port_of(&info.local_addr);
	rp = port_of(&info.remote_addr);
	if (!EXPECT_MSG(lp && rp, "the EP reports no TCP ports to cut"))
		return -1;
	snprintf(script, sizeof(script),
		 "table inet rapt_netcut_%d {\n"
		 " chain in { type filter hook input priority -300;"
		 " tcp sport %u tcp dport %u drop; }\n"
		 " chain out { type filter hook output priority -300;"
		 " tcp sport %u tcp dport %u drop; }\n"
		 "}\n", (int)getpid(), rp, lp, lp, rp);
	if (!EXPECT_MSG(!nft_run(script), "nft could not cut the link"))
		return -1;
	conf_note(c, "link cut: tcp ports %u <-> %u dropped", lp, rp);
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
