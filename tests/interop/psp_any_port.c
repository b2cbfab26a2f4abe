/* SPDX-License-Identifier: MIT */
/*
 * psp_any_port: a PSP on "any service id" must never fail because the
 * port picked is taken.  It holds a plain TCP listener on every other
 * port of the host's ephemeral range (net.ipv4.ip_local_port_range: the
 * caller narrows it first, tests/vm/suite-conformance.sh), then creates
 * and frees -n PSPs with RAPT_SERVICE_ID_ANY on the IA of -i.  Each must
 * succeed, on a port of the range that none of the listeners holds.
 *
 * On iwarp:siw*, rdma_cm picks a port free among its own IDs and siw then
 * binds a kernel TCP socket to it: without a retry, every port that a
 * listener holds is an EADDRINUSE.
 *
 * Exit: 0 when all did, 1 otherwise (each failure printed).
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rapt/rapt.h>

#define MAX_PORTS	64

static int listen_on(uint16_t port)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(fd, 1)) {
		close(fd);
		return -1;
	}
	return fd;
}

int main(int argc, char **argv)
{
	const char *ia_name = NULL;
	unsigned int n = 32, i, lo, hi, held = 0, bad = 0;
	int fds[MAX_PORTS], opt, ret;
	struct rapt_psp_info info;
	struct rapt_evd *evd;
	struct rapt_psp *psp;
	struct rapt_ia *ia;
	uint64_t bound;
	FILE *f;

	while ((opt = getopt(argc, argv, "i:n:")) != -1) {
		if (opt == 'i')
			ia_name = optarg;
		else if (opt == 'n')
			n = (unsigned int)strtoul(optarg, NULL, 0);
		else
			goto usage;
	}
	if (!ia_name)
		goto usage;
	f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	if (!f || fscanf(f, "%u %u", &lo, &hi) != 2 || hi < lo ||
	    hi - lo + 1 > MAX_PORTS) {
		fprintf(stderr, "psp_any_port: narrow the ephemeral port range to at most %d ports first\n",
			MAX_PORTS);
		return 1;
	}
	fclose(f);
	for (i = lo; i <= hi; i++) {
		fds[i - lo] = -1;
		if ((i - lo) % 2)
			continue;
		fds[i - lo] = listen_on((uint16_t)i);
		if (fds[i - lo] < 0) {
			fprintf(stderr, "psp_any_port: cannot hold port %u\n",
				i);
			return 1;
		}
		held++;
	}
	printf("holding %u of the %u ports %u-%u\n", held, hi - lo + 1, lo,
	       hi);
	ret = rapt_ia_open(ia_name, &ia);
	if (!ret)
		ret = rapt_evd_create(ia, 16, RAPT_EVD_CR, &evd);
	if (ret) {
		fprintf(stderr, "psp_any_port: %s: %s\n", ia_name,
			rapt_strerror(ret));
		return 1;
	}
	for (i = 0; i < n; i++) {
		ret = rapt_psp_create(ia, RAPT_SERVICE_ID_ANY, evd, NULL,
				      &psp);
		if (ret) {
			printf("psp %u: %s (%s)\n", i, rapt_strerror(ret),
			       rapt_last_error());
			bad++;
			continue;
		}
		ret = rapt_psp_query(psp, &info, sizeof(info));
		bound = info.service_id;
		if (ret || bound < lo || bound > hi ||
		    fds[bound - lo] >= 0) {
			printf("psp %u: bound to %llu, not a free port of the range\n",
			       i, (unsigned long long)bound);
			bad++;
		}
		rapt_psp_free(psp);
	}
	printf("%u of %u PSPs on any service id, %u failed\n", n - bad, n,
	       bad);
	rapt_evd_free(evd);
	rapt_ia_close(ia);
	return bad ? 1 : 0;
usage:
	fprintf(stderr, "usage: psp_any_port -i IA [-n COUNT]\n");
	return 2;
}
