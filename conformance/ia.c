/* SPDX-License-Identifier: MIT */
/*
 * Area "ia": opening IAs by name, by NULL and by bad names; the attributes
 * and limits an IA reports, and whether they hang together.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

/* Raw private-data limits of the transports (DESIGN.md section 3). */
#define IB_REQ_RAW 56
#define IB_REP_RAW 196
#define IB_REJ_RAW 148
#define MPA_RAW 252	/* 256 minus 4 bytes of IRD/ORD */
#define ANY_RAW 256	/* no transport has more */

#define KNOWN_CAPS							\
	(RAPT_CAP_RDMA_WRITE | RAPT_CAP_RDMA_READ | RAPT_CAP_INLINE |	\
	 RAPT_CAP_SOLICITED | RAPT_CAP_FENCE |				\
	 RAPT_CAP_SEND_INVALIDATE | RAPT_CAP_DISCONNECT_PDATA |		\
	 RAPT_CAP_EVD_FD |						\
	 RAPT_CAP_PASSIVE_SEND_FIRST | RAPT_CAP_RAW_PDATA |		\
	 RAPT_CAP_MULTI_EVD_STREAMS | RAPT_CAP_ZERO_LENGTH |		\
	 RAPT_CAP_HANDSHAKE_LIMIT | RAPT_CAP_CONNECT_CANCEL |		\
	 RAPT_CAP_READ_CHECK | RAPT_CAP_PEER_ERRORS |			\
	 RAPT_CAP_EP_RESET | RAPT_CAP_EP_STATUS | RAPT_CAP_SRQ |	\
	 RAPT_CAP_RMR | RAPT_CAP_CROSS_PROCESS)

static void t_open_named(struct conf_ctx *c)
{
	enum rapt_handle_type type;
	struct rapt_ia_attr a;
	struct rapt_ia *ia;
	void *ctx = NULL;

	/* The runner opened c->ia by the name under test; open another. */
	REQUIRE_OK(rapt_ia_open(c->attr.name, &ia));
	conf_track(c, CONF_OBJ_IA, ia);
	EXPECT(ia != c->ia);
	REQUIRE_OK(rapt_handle_type(ia, &type));
	EXPECT_EQ(type, RAPT_HANDLE_IA);
	REQUIRE_OK(rapt_ia_query(ia, &a, sizeof(a)));
	EXPECT_MSG(!strcmp(a.name, c->attr.name),
		   "reopened by its name %s, the IA calls itself %s",
		   c->attr.name, a.name);
	EXPECT_OK(rapt_context_set(ia, &a));
	EXPECT_OK(rapt_context_get(ia, &ctx));
	EXPECT(ctx == &a);
	REQUIRE_OK(rapt_ia_close(ia));
	conf_untrack(c, ia);
	EXPECT_RC(rapt_ia_close(ia), RAPT_EBADHANDLE);
	EXPECT_RC(rapt_ia_query(ia, &a, sizeof(a)), RAPT_EBADHANDLE);
out:
	return;
}

static void t_open_null(struct conf_ctx *c)
{
	struct rapt_ia_attr a;
	struct rapt_ia *ia;

	REQUIRE_OK(rapt_ia_open(NULL, &ia));
	conf_track(c, CONF_OBJ_IA, ia);
	REQUIRE_OK(rapt_ia_query(ia, &a, sizeof(a)));
	EXPECT(a.name[0] != '\0');
	EXPECT(a.provider[0] != '\0');
	REQUIRE_OK(rapt_ia_close(ia));
	conf_untrack(c, ia);
out:
	return;
}

/* A failed open must say why and leave the output alone. */
static void bad_open(struct conf_ctx *c, const char *name, int want)
{
	struct rapt_ia *sentinel = (struct rapt_ia *)(uintptr_t)0x5a5a;
	struct rapt_ia *ia = sentinel;
	int rc = rapt_ia_open(name, &ia);

	if (!rc)
		conf_track(c, CONF_OBJ_IA, ia);
	EXPECT_MSG(rc == want, "rapt_ia_open(\"%s\") returned %s, expected %s",
		   name, rapt_err_name(rc), rapt_err_name(want));
	EXPECT_MSG(rc == 0 || rapt_last_error()[0] != '\0',
		   "rapt_ia_open(\"%s\") failed without a reason in rapt_last_error()",
		   name);
	EXPECT_MSG(rc == 0 || ia == sentinel,
		   "rapt_ia_open(\"%s\") failed but wrote its output", name);
}

static void t_open_bad_name(struct conf_ctx *c)
{
	char name[160];

	bad_open(c, "conf_no_such_provider", RAPT_ENOPROVIDER);
	snprintf(name, sizeof(name), "%s:conf-no-such-device",
		 c->attr.provider);
	bad_open(c, name, RAPT_ENODEV);
	bad_open(c, "", RAPT_EINVAL);
	bad_open(c, ":dev", RAPT_EINVAL);
	snprintf(name, sizeof(name), "%s:%s:notaport", c->attr.provider,
		 c->attr.device);
	bad_open(c, name, RAPT_EINVAL);
	EXPECT_RC(rapt_ia_open(c->attr.name, NULL), RAPT_EINVAL);
}

static void t_query_args(struct conf_ctx *c)
{
	struct rapt_ia_attr a;
	struct rapt_pz *pz;

	EXPECT_RC(rapt_ia_query(c->ia, NULL, sizeof(a)), RAPT_EINVAL);
	EXPECT_RC(rapt_ia_query(c->ia, &a, 0), RAPT_EINVAL);
	EXPECT_RC(rapt_ia_query(NULL, &a, sizeof(a)), RAPT_EBADHANDLE);
	REQUIRE_OK(rapt_pz_create(c->ia, &pz));
	conf_track(c, CONF_OBJ_PZ, pz);
	EXPECT_RC(rapt_ia_query((struct rapt_ia *)pz, &a, sizeof(a)),
		  RAPT_EHANDLETYPE);
out:
	return;
}

/* An older caller's shorter struct is filled only as far as it goes. */
static void t_query_short(struct conf_ctx *c)
{
	size_t part = offsetof(struct rapt_ia_attr, caps) + sizeof(uint64_t);
	unsigned char buf[sizeof(struct rapt_ia_attr) + 16];
	struct rapt_ia_attr *a = (struct rapt_ia_attr *)buf;
	size_t i;

	memset(buf, 0xee, sizeof(buf));
	REQUIRE_OK(rapt_ia_query(c->ia, a, part));
	EXPECT(!strcmp(a->name, c->attr.name));
	EXPECT_EQU(a->caps, c->attr.caps);
	for (i = part; i < sizeof(buf); i++)
		if (!EXPECT_MSG(buf[i] == 0xee,
				"rapt_ia_query wrote byte %zu of a %zu-byte struct",
				i, part))
			break;
out:
	return;
}

static void t_names(struct conf_ctx *c)
{
	const struct rapt_ia_attr *a = &c->attr;
	size_t n = strlen(a->provider);

	EXPECT(a->provider[0] != '\0');
	EXPECT(a->device[0] != '\0');
	EXPECT_MSG(!strncmp(a->name, a->provider, n) && a->name[n] == ':',
		   "IA name %s does not start with its provider %s:",
		   a->name, a->provider);
	EXPECT_MSG(strstr(a->name, a->device) != NULL,
		   "IA name %s does not name its device %s", a->name,
		   a->device);
	EXPECT_MSG(a->transport <= RAPT_TRANSPORT_ROCE,
		   "unknown transport %u", a->transport);
	EXPECT_MSG(a->local_addr.ss_family == AF_INET ||
		   a->local_addr.ss_family == AF_INET6,
		   "local_addr has family %u, not AF_INET or AF_INET6",
		   a->local_addr.ss_family);
}

static void t_limits(struct conf_ctx *c)
{
	const struct rapt_ia_attr *a = &c->attr;

	EXPECT(a->max_ep >= 2);
	EXPECT(a->max_evd_qlen >= 16);
	EXPECT(a->max_send_depth >= 1);
	EXPECT(a->max_recv_depth >= 1);
	EXPECT(a->max_send_sge >= 1);
	EXPECT(a->max_recv_sge >= 1);
	EXPECT(a->max_msg_size >= 1);
	EXPECT(a->max_lmr_size >= a->max_msg_size);
	if (a->caps & (RAPT_CAP_RDMA_WRITE | RAPT_CAP_RDMA_READ)) {
		EXPECT(a->max_rdma_size >= 1);
		EXPECT(a->max_lmr_size >= a->max_rdma_size);
	}
	EXPECT_MSG(a->max_inline <= a->max_msg_size,
		   "max_inline %u exceeds max_msg_size %llu", a->max_inline,
		   (unsigned long long)a->max_msg_size);
}

static void pdata_max(struct conf_ctx *c, const char *what, unsigned int v,
		      unsigned int raw)
{
	unsigned int max = raw - RAPT_PDATA_HEADER_LEN;

	EXPECT_MSG(v <= max,
		   "%s = %u exceeds the transport's %u raw bytes minus rapt's %u-byte header",
		   what, v, raw, RAPT_PDATA_HEADER_LEN);
}

static void t_pdata_limits(struct conf_ctx *c)
{
	const struct rapt_ia_attr *a = &c->attr;

	switch (a->transport) {
	case RAPT_TRANSPORT_IB:
	case RAPT_TRANSPORT_ROCE:
		pdata_max(c, "pdata_connect", a->pdata_connect, IB_REQ_RAW);
		pdata_max(c, "pdata_accept", a->pdata_accept, IB_REP_RAW);
		pdata_max(c, "pdata_reject", a->pdata_reject, IB_REJ_RAW);
		break;
	case RAPT_TRANSPORT_IWARP:
		pdata_max(c, "pdata_connect", a->pdata_connect, MPA_RAW);
		pdata_max(c, "pdata_accept", a->pdata_accept, MPA_RAW);
		pdata_max(c, "pdata_reject", a->pdata_reject, MPA_RAW);
		break;
	default:
		pdata_max(c, "pdata_connect", a->pdata_connect, ANY_RAW);
		pdata_max(c, "pdata_accept", a->pdata_accept, ANY_RAW);
		pdata_max(c, "pdata_reject", a->pdata_reject, ANY_RAW);
		break;
	}
	pdata_max(c, "pdata_disconnect", a->pdata_disconnect, ANY_RAW);
	EXPECT_MSG(a->pdata_connect > 0 && a->pdata_accept > 0 &&
		   a->pdata_reject > 0,
		   "connect/accept/reject private data limits %u/%u/%u: every transport carries some",
		   a->pdata_connect, a->pdata_accept, a->pdata_reject);
	if (a->caps & RAPT_CAP_DISCONNECT_PDATA)
		EXPECT_MSG(a->pdata_disconnect > 0,
			   "RAPT_CAP_DISCONNECT_PDATA with pdata_disconnect 0");
	else
		EXPECT_MSG(a->pdata_disconnect == 0,
			   "pdata_disconnect %u without RAPT_CAP_DISCONNECT_PDATA",
			   a->pdata_disconnect);
}

static void t_service_ids(struct conf_ctx *c)
{
	const struct rapt_ia_attr *a = &c->attr;
	struct sockaddr_storage addr = c->attr.local_addr;
	struct rapt_evd *cr_evd, *conn_evd;
	struct rapt_psp *psp;
	struct rapt_ep *ep;

	EXPECT_MSG(a->service_id_min < a->service_id_max,
		   "service id range %llu..%llu has fewer than two ids",
		   (unsigned long long)a->service_id_min,
		   (unsigned long long)a->service_id_max);
	EXPECT_MSG(a->service_id_max != RAPT_SERVICE_ID_ANY,
		   "service_id_max is RAPT_SERVICE_ID_ANY");
	if (a->transport != RAPT_TRANSPORT_OTHER)
		EXPECT_MSG(a->service_id_max <= 65535,
			   "rdma_cm transports have 16-bit ports, max is %llu",
			   (unsigned long long)a->service_id_max);
	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_CR, &cr_evd));
	REQUIRE_OK(conf_evd_create(c, 8, RAPT_EVD_CONNECTION, &conn_evd));
	REQUIRE_OK(conf_ep_create(c, NULL, NULL, conn_evd, NULL, &ep));
	/* Out of range fails at once: nothing hashed, nothing truncated. */
	if (a->service_id_max < UINT64_MAX - 1) {
		EXPECT_RC(rapt_psp_create(c->ia, a->service_id_max + 1, cr_evd,
					  NULL, &psp), RAPT_ERANGE);
		EXPECT_RC(rapt_ep_connect(ep, (struct sockaddr *)&addr,
					  a->service_id_max + 1, NULL, 0,
					  1000000), RAPT_ERANGE);
	}
	if (a->service_id_min > 0) {
		EXPECT_RC(rapt_psp_create(c->ia, a->service_id_min - 1, cr_evd,
					  NULL, &psp), RAPT_ERANGE);
		EXPECT_RC(rapt_ep_connect(ep, (struct sockaddr *)&addr,
					  a->service_id_min - 1, NULL, 0,
					  1000000), RAPT_ERANGE);
	}
	if (a->service_id_max < UINT64_MAX - 1)
		EXPECT_RC(rapt_psp_create(c->ia, UINT64_MAX - 1, cr_evd, NULL,
					  &psp), RAPT_ERANGE);
	EXPECT_EMPTY(conn_evd, 50);
	EXPECT_EMPTY(cr_evd, 0);
out:
	return;
}

static void t_caps(struct conf_ctx *c)
{
	const struct rapt_ia_attr *a = &c->attr;

	EXPECT_MSG(!(a->caps & ~KNOWN_CAPS), "unknown capability bits %#llx",
		   (unsigned long long)(a->caps & ~KNOWN_CAPS));
	EXPECT_MSG(!!(a->caps & RAPT_CAP_SRQ) ==
		   (a->max_srq > 0 && a->max_srq_recv > 0 &&
		    a->max_srq_sge > 0),
		   "RAPT_CAP_SRQ is %s but max_srq %u, max_srq_recv %u, max_srq_sge %u",
		   a->caps & RAPT_CAP_SRQ ? "set" : "clear", a->max_srq,
		   a->max_srq_recv, a->max_srq_sge);
	EXPECT_MSG(!!(a->caps & RAPT_CAP_RMR) == (a->max_rmr > 0),
		   "RAPT_CAP_RMR is %s but max_rmr is %u",
		   a->caps & RAPT_CAP_RMR ? "set" : "clear", a->max_rmr);
	EXPECT_MSG(!!(a->caps & RAPT_CAP_INLINE) == (a->max_inline > 0),
		   "RAPT_CAP_INLINE is %s but max_inline is %u",
		   a->caps & RAPT_CAP_INLINE ? "set" : "clear",
		   a->max_inline);
	if (a->caps & RAPT_CAP_RDMA_READ)
		EXPECT_MSG(a->max_rdma_read_in > 0 && a->max_rdma_read_out > 0,
			   "RAPT_CAP_RDMA_READ with IRD %u / ORD %u",
			   a->max_rdma_read_in, a->max_rdma_read_out);
	if (a->transport == RAPT_TRANSPORT_IWARP ||
	    a->transport == RAPT_TRANSPORT_IB ||
	    a->transport == RAPT_TRANSPORT_ROCE)
		EXPECT_MSG((a->caps & RAPT_CAP_RDMA_WRITE) &&
			   (a->caps & RAPT_CAP_RDMA_READ),
			   "an RDMA transport without RDMA read and write");
}

static void t_evd_merge(struct conf_ctx *c)
{
	const struct rapt_ia_attr *a = &c->attr;
	unsigned int i, j;

	for (i = 0; i < RAPT_EVD_NSTREAMS; i++) {
		EXPECT_MSG(!(a->evd_merge[i] & ~RAPT_EVD_ALL_STREAMS),
			   "evd_merge[%u] has unknown bits %#x", i,
			   a->evd_merge[i]);
		for (j = 0; j < RAPT_EVD_NSTREAMS; j++) {
			bool ij = a->evd_merge[i] & (1u << j);
			bool ji = a->evd_merge[j] & (1u << i);

			if (i == j)
				continue;
			EXPECT_MSG(ij == ji,
				   "evd_merge is not symmetric: stream %u %s %u, but %u %s %u",
				   i, ij ? "merges with" : "does not merge with",
				   j, j, ji ? "merges with" : "does not merge with",
				   i);
			if (a->caps & RAPT_CAP_MULTI_EVD_STREAMS)
				EXPECT_MSG(ij,
					   "RAPT_CAP_MULTI_EVD_STREAMS but streams %u and %u cannot share",
					   i, j);
		}
	}
}

static void t_close_busy(struct conf_ctx *c)
{
	struct rapt_ia *ia;
	struct rapt_evd *evd;
	struct rapt_pz *pz;

	REQUIRE_OK(rapt_ia_open(c->attr.name, &ia));
	conf_track(c, CONF_OBJ_IA, ia);
	REQUIRE_OK(rapt_pz_create(ia, &pz));
	EXPECT_RC(rapt_ia_close(ia), RAPT_EBUSY);
	REQUIRE_OK(rapt_pz_free(pz));
	REQUIRE_OK(rapt_evd_create(ia, 4, RAPT_EVD_SOFTWARE, &evd));
	EXPECT_RC(rapt_ia_close(ia), RAPT_EBUSY);
	REQUIRE_OK(rapt_evd_free(evd));
	EXPECT_OK(rapt_ia_close(ia));
	conf_untrack(c, ia);
out:
	return;
}

static void t_registry(struct conf_ctx *c)
{
	struct rapt_entry *e = NULL;
	bool prov = false, dev = false;
	char devname[sizeof(c->attr.provider) + sizeof(c->attr.device) + 1];
	size_t n = 0, i;

	/* The registry lists devices ("iwarp:siw0"); an IA of a device with
	 * ports is named with its port too ("iwarp:siw0:1"). */
	snprintf(devname, sizeof(devname), "%s:%s", c->attr.provider,
		 c->attr.device);
	REQUIRE_OK(rapt_registry_list(&e, &n));
	for (i = 0; i < n; i++) {
		/* A file of the same name built for another provider ABI
		 * (an older install left behind) is listed beside the one in
		 * use and explained; it does not make this provider
		 * unusable. */
		if (e[i].kind == RAPT_ENTRY_PROVIDER &&
		    !strcmp(e[i].name, c->attr.provider) &&
		    e[i].status != RAPT_EABI) {
			prov = true;
			EXPECT_MSG(e[i].status == 0,
				   "registry: provider %s listed as unusable: %s",
				   e[i].name, e[i].reason);
		}
		if (e[i].kind == RAPT_ENTRY_DEVICE &&
		    (!strcmp(e[i].name, c->attr.name) ||
		     !strcmp(e[i].name, devname))) {
			dev = true;
			EXPECT_EQ(e[i].status, 0);
			EXPECT_EQU(e[i].transport, c->attr.transport);
			EXPECT(!strcmp(e[i].provider, c->attr.provider));
		}
	}
	EXPECT_MSG(prov, "rapt_registry_list has no provider entry %s",
		   c->attr.provider);
	EXPECT_MSG(dev, "rapt_registry_list has no device entry %s",
		   c->attr.name);
out:
	rapt_free(e);
}

#define ERR_NAME_CHECK(name, val, msg)					\
	EXPECT_MSG(!strcmp(rapt_err_name(RAPT_##name), "RAPT_" #name),	\
		   "rapt_err_name(%d) is %s", RAPT_##name,		\
		   rapt_err_name(RAPT_##name));				\
	EXPECT(rapt_strerror(RAPT_##name)[0] != '\0');

static void t_status_strings(struct conf_ctx *c)
{
	unsigned int major = 0, minor = 0;

	RAPT_ERRNO_MAP(ERR_NAME_CHECK)
	EXPECT(rapt_strerror(0) != NULL);
	EXPECT(rapt_strerror(-99999) != NULL);
	EXPECT(rapt_err_name(-99999) != NULL);
	EXPECT(rapt_version(&major, &minor) != NULL);
	EXPECT_EQ(major, RAPT_API_VERSION_MAJOR);
	/* A library of this major runs consumers built for older minors. */
	EXPECT_MSG(minor + 1 > RAPT_API_VERSION_MINOR,
		   "library API %u.%u is older than this suite's %u.%u", major,
		   minor, RAPT_API_VERSION_MAJOR, RAPT_API_VERSION_MINOR);
}

static const struct conf_test ia_tests[] = {
	{ "open_named", "open the IA again by its name, query, close; a closed handle is stale",
	  t_open_named, NULL },
	{ "open_null", "rapt_ia_open(NULL) opens the best IA", t_open_null, NULL },
	{ "open_bad_name", "unknown provider, unknown device and malformed names fail with clear codes",
	  t_open_bad_name, NULL },
	{ "query_args", "rapt_ia_query rejects NULL, zero size, stale and wrong-type handles",
	  t_query_args, NULL },
	{ "query_short", "a shorter (older) attr struct is filled only that far",
	  t_query_short, NULL },
	{ "names", "name, provider, device, transport and local address are consistent",
	  t_names, NULL },
	{ "limits", "queue, SGE, message and registration limits are usable and ordered",
	  t_limits, NULL },
	{ "pdata_limits", "private-data limits fit the raw transport limits minus the header",
	  t_pdata_limits, NULL },
	{ "service_ids", "the service-id range is sane; ids outside it fail with RAPT_ERANGE",
	  t_service_ids, NULL },
	{ "caps", "capability bits are known and agree with the limits",
	  t_caps, NULL },
	{ "evd_merge", "the EVD stream merge table is symmetric and agrees with the caps",
	  t_evd_merge, NULL },
	{ "close_busy", "an IA with a PZ or an EVD cannot be closed (RAPT_EBUSY)",
	  t_close_busy, NULL },
	{ "registry", "rapt_registry_list lists the provider and the device as usable",
	  t_registry, NULL },
	{ "status_strings", "every status code has a name and a description",
	  t_status_strings, NULL },
};

CONF_SUITE(conf_suite_ia, "ia", "IA: open, query, limits", ia_tests);
