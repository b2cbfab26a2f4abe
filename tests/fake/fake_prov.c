/* SPDX-License-Identifier: MIT */
/*
 * Fake providers for the registry and loader tests (fixtures: built for
 * make check, never installed).  One source, several DSOs; each variant is
 * chosen by -D flags in tests/registry.inc:
 *
 *   FAKE_NAME="x"	the name in the descriptor (the file says the other)
 *   FAKE_DEVS=1|2	device table: 1 = fakegood's, 2 = fakealt's
 *   FAKE_ABI=n		the ABI the descriptor claims (default: ours)
 *   FAKE_NO_ENTRY	export no rapt_provider_entry
 *   FAKE_UNDEF		need a symbol nothing defines (dlopen fails)
 *   FAKE_NEVER_OPEN	abort if ever loaded (a -pv2 file must not be)
 *   FAKE_INIT_FAIL	init() fails with RAPT_EIO and says why
 *   FAKE_OPS		add the counting, blockable object ops of fake_ops.c
 *
 * The usable ones implement only get_devices, ia_open, ia_query and
 * ia_close (and with FAKE_OPS the object ops): the core stubs the rest.
 * ia_query reports the port it was opened on as max_ep = 1000 + port so
 * tests can see which port the registry chose.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rapt/provider.h>

#ifdef FAKE_OPS
#include "fake_ops.h"
#endif

#ifndef FAKE_NAME
#error "FAKE_NAME must be defined"
#endif
#ifndef FAKE_ABI
#define FAKE_ABI RAPT_PROVIDER_ABI
#endif
#ifndef FAKE_DEVS
#define FAKE_DEVS 1
#endif

struct fake_ia {
	char device[64];
	uint32_t port;
	uint32_t transport;
};

#if FAKE_DEVS == 1
static const struct rapt_prov_device fake_devs[] = {
	{ .name = "d0", .nports = 2, .transport = RAPT_TRANSPORT_IB,
	  .rank = 50 },
	/* The lowest rank, but unusable: never the default. */
	{ .name = "d1", .nports = 1, .transport = RAPT_TRANSPORT_IB,
	  .rank = 1, .status = RAPT_ENODEV, .reason = "cable unplugged" },
	{ .name = "d2", .nports = 0, .transport = RAPT_TRANSPORT_IWARP,
	  .rank = 40 },
};
#else
static const struct rapt_prov_device fake_devs[] = {
	{ .name = "a0", .nports = 0, .transport = RAPT_TRANSPORT_ROCE,
	  .rank = 40 },
};
#endif

#ifdef FAKE_UNDEF
/* Defined nowhere: RTLD_NOW makes dlopen() fail with its name. */
extern int rapt_fake_missing_function(void);
#define FAKE_TOUCH_UNDEF() rapt_fake_missing_function()
#else
#define FAKE_TOUCH_UNDEF() 0
#endif

#ifdef FAKE_NEVER_OPEN
__attribute__((constructor)) static void fake_never_open(void)
{
	fprintf(stderr, "fake provider %s: a DSO built for another provider ABI was opened\n",
		FAKE_NAME);
	abort();
}
#endif

static int fake_state;

#ifdef FAKE_INIT_FAIL
static int fake_init(void **prov)
{
	rapt_prov_set_error("the fake hardware is on fire");
	return RAPT_EIO;
}
#else
static int fake_init(void **prov)
{
	*prov = &fake_state;
	return 0;
}
#endif

static void fake_fini(void *prov)
{
}

static int fake_get_devices(void *prov, struct rapt_prov_device **devs,
			    uint32_t *ndevs)
{
	struct rapt_prov_device *d = malloc(sizeof(fake_devs));

	if (prov != &fake_state)
		return RAPT_EINVAL;
	if (!d)
		return RAPT_ENOMEM;
	memcpy(d, fake_devs, sizeof(fake_devs));
	*devs = d;
	*ndevs = sizeof(fake_devs) / sizeof(fake_devs[0]);
	return 0;
}

static int fake_ia_open(void *prov, const char *device, uint32_t port,
			struct rapt_core_ia *cia, void **pia)
{
	struct fake_ia *ia;
	size_t i;

	for (i = 0; i < sizeof(fake_devs) / sizeof(fake_devs[0]); i++)
		if (!strcmp(fake_devs[i].name, device))
			break;
	if (i == sizeof(fake_devs) / sizeof(fake_devs[0]) ||
	    fake_devs[i].status)
		return RAPT_ENODEV;
	ia = calloc(1, sizeof(*ia));
	if (!ia)
		return RAPT_ENOMEM;
	snprintf(ia->device, sizeof(ia->device), "%s", device);
	ia->port = port;
	ia->transport = fake_devs[i].transport;
	*pia = ia;
	return 0;
}

static int fake_ia_close(void *pia)
{
	free(pia);
	return 0;
}

static int fake_ia_query(void *pia, struct rapt_ia_attr *attr)
{
	struct fake_ia *ia = pia;

	attr->transport = ia->transport;
	attr->caps = RAPT_CAP_RDMA_WRITE | RAPT_CAP_RDMA_READ |
		     RAPT_CAP_EVD_FD;
	attr->max_ep = 1000 + ia->port;
	attr->max_evd_qlen = 4096;
	attr->max_send_depth = 128;
	attr->max_recv_depth = 256;
	attr->max_send_sge = 4;
	attr->max_recv_sge = 4;
	attr->max_msg_size = 1 << 20;
	attr->max_rdma_size = 1 << 30;
	attr->max_lmr_size = 1ULL << 32;
	attr->max_rdma_read_in = 8;
	attr->max_rdma_read_out = 8;
	attr->pdata_connect = 56;
	attr->pdata_accept = 196;
	attr->pdata_reject = 148;
	attr->pdata_disconnect = 0;
	attr->service_id_min = 1;
	attr->service_id_max = 65535;
	return 0;
}

static const struct rapt_prov_ops fake_ops = {
	.size = sizeof(struct rapt_prov_ops),
	.ia_open = fake_ia_open,
	.ia_close = fake_ia_close,
	.ia_query = fake_ia_query,
#ifdef FAKE_OPS
	FAKE_OBJECT_OPS,
#endif
};

static const struct rapt_provider fake_desc = {
	.size = sizeof(struct rapt_provider),
	.abi = FAKE_ABI,
	.name = FAKE_NAME,
	.version = RAPT_VERSION_PACK(0, 1, 2),
	.description = "registry test fixture",
	.init = fake_init,
	.fini = fake_fini,
	.get_devices = fake_get_devices,
	.ops = &fake_ops,
};

#ifdef FAKE_NO_ENTRY
/* Something exported, but not the entry symbol. */
RAPT_PROVIDER_EXPORT const struct rapt_provider *rapt_provider_entri(void);

const struct rapt_provider *rapt_provider_entri(void)
{
	return &fake_desc;
}
#else
const struct rapt_provider *rapt_provider_entry(void)
{
	if (FAKE_TOUCH_UNDEF())
		return NULL;
	return &fake_desc;
}
#endif
