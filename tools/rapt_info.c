/* SPDX-License-Identifier: MIT */
/*
 * rapt_info - list rapt providers, devices and aliases, what each usable
 * device offers, and why each unusable entry cannot be used.
 *
 * Exit status: 0 if at least one device (or, with -p, the named IA) can be
 * opened, 1 if none can, 2 on a usage error.  See docs/man/rapt_info.1.md.
 */
#include "config.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rapt/rapt.h>
#include <rapt/provider.h>

#define PROG "rapt_info"

struct opts {
	bool verbose;
	bool names_only;
	const char *ia_name;
};

static const struct {
	uint64_t bit;
	const char *name;
} cap_names[] = {
	{ RAPT_CAP_RDMA_WRITE, "RDMA_WRITE" },
	{ RAPT_CAP_RDMA_READ, "RDMA_READ" },
	{ RAPT_CAP_INLINE, "INLINE" },
	{ RAPT_CAP_SOLICITED, "SOLICITED" },
	{ RAPT_CAP_FENCE, "FENCE" },
	{ RAPT_CAP_SEND_INVALIDATE, "SEND_INVALIDATE" },
	{ RAPT_CAP_DISCONNECT_PDATA, "DISCONNECT_PDATA" },
	{ RAPT_CAP_EVD_FD, "EVD_FD" },
	{ RAPT_CAP_PASSIVE_SEND_FIRST, "PASSIVE_SEND_FIRST" },
	{ RAPT_CAP_RAW_PDATA, "RAW_PDATA" },
	{ RAPT_CAP_MULTI_EVD_STREAMS, "MULTI_EVD_STREAMS" },
	{ RAPT_CAP_ZERO_LENGTH, "ZERO_LENGTH" },
	{ RAPT_CAP_HANDSHAKE_LIMIT, "HANDSHAKE_LIMIT" },
	{ RAPT_CAP_CONNECT_CANCEL, "CONNECT_CANCEL" },
	{ RAPT_CAP_READ_CHECK, "READ_CHECK" },
	{ RAPT_CAP_PEER_ERRORS, "PEER_ERRORS" },
	{ RAPT_CAP_EP_RESET, "EP_RESET" },
	{ RAPT_CAP_EP_STATUS, "EP_STATUS" },
	{ RAPT_CAP_SRQ, "SRQ" },
	{ RAPT_CAP_RMR, "RMR" },
	{ RAPT_CAP_CROSS_PROCESS, "CROSS_PROCESS" },
};

static const char *const stream_names[RAPT_EVD_NSTREAMS] = {
	"DTO", "CONNECTION", "CR", "ASYNC", "SOFTWARE",
};

static const char *transport_name(uint32_t t)
{
	switch (t) {
	case RAPT_TRANSPORT_IWARP:
		return "iWARP";
	case RAPT_TRANSPORT_IB:
		return "InfiniBand";
	case RAPT_TRANSPORT_ROCE:
		return "RoCE";
	default:
		return "other";
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-v] [-l] [-p NAME] [-h]\n"
		"List rapt providers, devices and aliases; show what each usable\n"
		"device offers and why each other entry cannot be used.\n"
		"\n"
		"  -v        verbose: also files, ABI, addresses, EVD stream sharing\n"
		"  -l        list the names rapt_ia_open() accepts now, one a line\n"
		"  -p NAME   open only NAME (<provider>[:<device>[:<port>]] or alias)\n"
		"  -h        this help\n"
		"\n"
		"Exit status: 0 if at least one device (with -p: NAME) can be opened,\n"
		"1 if none can, 2 on a usage error.\n"
		"Environment: RAPT_PROVIDER_PATH, RAPT_PROVIDER, RAPT_CONF,\n"
		"RAPT_LOG_LEVEL, RAPT_LOG_PROV.\n", PROG);
}

static void print_version(uint32_t v)
{
	printf("%u.%u.%u", RAPT_VERSION_MAJOR(v), RAPT_VERSION_MINOR(v),
	       RAPT_VERSION_PATCH(v));
}

static void print_status(const struct rapt_entry *e)
{
	if (!e->status) {
		printf(": usable\n");
		return;
	}
	printf(": not usable (%s)\n", rapt_err_name(e->status));
	printf("    why:         %s\n",
	       e->reason[0] ? e->reason : rapt_strerror(e->status));
}

/* Cap names, wrapped under the first one at 79 columns. */
static void print_caps(uint64_t caps)
{
	const int indent = 17;
	uint64_t known = 0;
	int col = indent - 1;
	size_t i;

	printf("    caps:       ");
	for (i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++) {
		int len = (int)strlen(cap_names[i].name) + 1;

		known |= cap_names[i].bit;
		if (!(caps & cap_names[i].bit))
			continue;
		if (col > indent && col + len > 79) {
			printf("\n%*s", indent - 1, "");
			col = indent - 1;
		}
		col += printf(" %s", cap_names[i].name);
	}
	if (caps & ~known)
		printf(" 0x%llx", (unsigned long long)(caps & ~known));
	if (!caps)
		printf(" none");
	printf("\n");
}

static void print_addr(const struct sockaddr_storage *ss)
{
	char buf[INET6_ADDRSTRLEN] = "-";

	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
			  buf, sizeof(buf));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)ss)->sin6_addr, buf,
			  sizeof(buf));
	printf("    address:     %s\n", buf);
}

static void print_merge(const struct rapt_ia_attr *a)
{
	unsigned int i, j;

	for (i = 0; i < RAPT_EVD_NSTREAMS; i++) {
		printf("    evd %-10s shares with:", stream_names[i]);
		for (j = 0; j < RAPT_EVD_NSTREAMS; j++)
			if (j != i && (a->evd_merge[i] & (1u << j)))
				printf(" %s", stream_names[j]);
		printf("\n");
	}
}

static void print_attr(const struct rapt_ia_attr *a, bool verbose)
{
	printf("    transport:   %s, port %u\n", transport_name(a->transport),
	       a->port);
	print_caps(a->caps);
	printf("    limits:      ep %u, evd qlen %u, send depth %u, recv depth %u,\n"
	       "                 send sge %u, recv sge %u, inline %u,\n"
	       "                 msg %llu, rdma %llu, lmr %llu,\n"
	       "                 rdma read in %u, out %u\n",
	       a->max_ep, a->max_evd_qlen, a->max_send_depth,
	       a->max_recv_depth, a->max_send_sge, a->max_recv_sge,
	       a->max_inline, (unsigned long long)a->max_msg_size,
	       (unsigned long long)a->max_rdma_size,
	       (unsigned long long)a->max_lmr_size, a->max_rdma_read_in,
	       a->max_rdma_read_out);
	if (a->caps & RAPT_CAP_SRQ)
		printf("    srq:         %u queues of %u receives, sge %u\n",
		       a->max_srq, a->max_srq_recv, a->max_srq_sge);
	if (a->caps & RAPT_CAP_RMR)
		printf("    rmr:         %u memory windows\n", a->max_rmr);
	printf("    pdata:       connect %u, accept %u, reject %u, disconnect %u (bytes)\n",
	       a->pdata_connect, a->pdata_accept, a->pdata_reject,
	       a->pdata_disconnect);
	printf("    service ids: %llu-%llu\n",
	       (unsigned long long)a->service_id_min,
	       (unsigned long long)a->service_id_max);
	if (!verbose)
		return;
	printf("    version:     ");
	print_version(a->prov_version);
	printf("\n");
	print_addr(&a->local_addr);
	print_merge(a);
}

/* Open @name and print what it offers.  Return: 0 if it opened. */
static int show_ia(const char *name, bool verbose)
{
	struct rapt_ia_attr attr;
	struct rapt_ia *ia;
	int ret;

	ret = rapt_ia_open(name, &ia);
	if (ret) {
		printf("    why:         cannot open %s: %s (%s)%s%s\n", name,
		       rapt_strerror(ret), rapt_err_name(ret),
		       rapt_last_error()[0] ? ": " : "", rapt_last_error());
		return ret;
	}
	memset(&attr, 0, sizeof(attr));
	ret = rapt_ia_query(ia, &attr, sizeof(attr));
	if (ret) {
		printf("    why:         cannot query %s: %s: %s\n", name,
		       rapt_strerror(ret), rapt_last_error());
	} else {
		if (strcmp(name, attr.name))
			printf("    opened as:   %s\n", attr.name);
		print_attr(&attr, verbose);
	}
	rapt_ia_close(ia);
	return ret;
}

static void show_provider(const struct rapt_entry *e, bool verbose)
{
	printf("provider %s", e->name);
	if (e->prov_version) {
		printf(" ");
		print_version(e->prov_version);
	}
	print_status(e);
	if (e->path[0])
		printf("    file:        %s\n", e->path);
	if (verbose && e->abi)
		printf("    abi:         provider ABI %u\n", e->abi);
}

/* Return: true if the device opened. */
static bool show_device(const struct rapt_entry *e, bool verbose)
{
	printf("device %s", e->name);
	if (e->status) {
		print_status(e);
		return false;
	}
	printf(": usable, rank %u\n", e->rank);
	if (e->reason[0])
		printf("    note:        %s\n", e->reason);
	if (verbose)
		printf("    file:        %s\n", e->path);
	return show_ia(e->name, verbose) == 0;
}

/*
 * In-tree providers this build left out, and why (configure's
 * RAPT_NOT_BUILT: "name[,name...]: reason"), unless a DSO of that name is
 * listed anyway (installed from another build).
 */
static void show_not_built_one(const struct rapt_entry *e, size_t n,
			       const char *name, size_t len, const char *why)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (e[i].kind == RAPT_ENTRY_PROVIDER &&
		    strlen(e[i].name) == len && !strncmp(e[i].name, name, len))
			return;
	printf("provider %.*s: not built\n", (int)len, name);
	printf("    why:         %s\n", why);
}

static void show_not_built(const struct rapt_entry *e, size_t n)
{
#ifdef RAPT_NOT_BUILT
	const char *nb = RAPT_NOT_BUILT, *colon = strchr(nb, ':'), *p, *q;

	if (!colon)
		return;
	for (p = nb; p < colon; p = q + 1) {
		q = memchr(p, ',', (size_t)(colon - p));
		if (!q)
			q = colon;
		if (q > p)
			show_not_built_one(e, n, p, (size_t)(q - p), colon + 1);
	}
#else
	(void)e;
	(void)n;
	(void)show_not_built_one;
#endif
}

static void show_alias(const struct rapt_entry *e)
{
	printf("alias %s -> %s", e->name, e->target);
	print_status(e);
	printf("    defined in:  %s\n", e->path);
}

static int list_all(const struct opts *o)
{
	struct rapt_entry *e;
	size_t n, i;
	bool any = false;
	uint32_t kind;
	int ret;

	ret = rapt_registry_list(&e, &n);
	if (ret) {
		fprintf(stderr, "%s: cannot list providers: %s: %s\n", PROG,
			rapt_strerror(ret), rapt_last_error());
		return 1;
	}
	for (kind = RAPT_ENTRY_PROVIDER; kind <= RAPT_ENTRY_ALIAS; kind++) {
		for (i = 0; i < n; i++) {
			if (e[i].kind != kind)
				continue;
			if (o->names_only) {
				if (!e[i].status && kind != RAPT_ENTRY_PROVIDER)
					printf("%s\n", e[i].name);
				any |= !e[i].status &&
				       kind == RAPT_ENTRY_DEVICE;
				continue;
			}
			if (kind == RAPT_ENTRY_PROVIDER)
				show_provider(&e[i], o->verbose);
			else if (kind == RAPT_ENTRY_DEVICE)
				any |= show_device(&e[i], o->verbose);
			else
				show_alias(&e[i]);
		}
	}
	if (!o->names_only)
		show_not_built(e, n);
	if (!n && !o->names_only)
		printf("no provider found (set RAPT_PROVIDER_PATH?)\n");
	if (!any && !o->names_only)
		printf("no usable device\n");
	rapt_free(e);
	return any ? 0 : 1;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	while ((c = getopt(argc, argv, "vlp:h")) != -1) {
		switch (c) {
		case 'v':
			o->verbose = true;
			break;
		case 'l':
			o->names_only = true;
			break;
		case 'p':
			o->ia_name = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", PROG,
			argv[optind]);
		usage(stderr);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .verbose = false };
	int ret;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret;
	/* rapt_info prints every reason itself: no warnings twice, unless
	 * the user asks for them. */
	setenv("RAPT_LOG_LEVEL", "error", 0);
	if (o.verbose)
		printf("rapt %s, provider ABI %d\n", rapt_version(NULL, NULL),
		       RAPT_PROVIDER_ABI);
	if (!o.ia_name)
		return list_all(&o);
	printf("ia %s\n", o.ia_name);
	return show_ia(o.ia_name, o.verbose) ? 1 : 0;
}
