// SPDX-License-Identifier: MIT
/*
 * The provider's entry point, its tunables and the list of rapt IAs it
 * offers as fabrics.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>

#include "rfi.h"

struct rfi_params rfi_params = {
	.slots = 32,
	.slot_size = 32768,
};

static pthread_mutex_t ia_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rfi_ia_desc *ia_cache;
static size_t ia_count;
static bool ia_scanned;

static void rfi_cleanup(void)
{
	pthread_mutex_lock(&ia_lock);
	free(ia_cache);
	ia_cache = NULL;
	ia_count = 0;
	ia_scanned = false;
	pthread_mutex_unlock(&ia_lock);
}

struct fi_provider rfi_prov = {
	.version = RFI_PROV_VERSION,
	.fi_version = RFI_FI_VERSION,
	.name = RFI_PROV_NAME,
	.getinfo = rfi_getinfo,
	.fabric = rfi_fabric_open,
	.cleanup = rfi_cleanup,
};

/* rapt status to a negative libfabric code, for control-path calls. */
int rfi_errno(int rapt_status)
{
	switch (rapt_status) {
	case 0:
		return 0;
	case RAPT_ENOMEM:
		return -FI_ENOMEM;
	case RAPT_EBUSY:
		return -FI_EBUSY;
	case RAPT_EAGAIN:
	case RAPT_ENOSPC:
		return -FI_EAGAIN;
	case RAPT_ENOTSUP:
		return -FI_ENOSYS;
	case RAPT_ESTATE:
		return -FI_EOPBADSTATE;
	case RAPT_ELENGTH:
	case RAPT_ERANGE:
		return -FI_EINVAL;
	case RAPT_EADDRINUSE:
		return -FI_EADDRINUSE;
	case RAPT_ETIMEDOUT:
		return -FI_ETIMEDOUT;
	case RAPT_ENOTCONN:
		return -FI_ENOTCONN;
	case RAPT_EFAULT:
		return -FI_EFAULT;
	case RAPT_EACCES:
		return -FI_EACCES;
	case RAPT_ECANCELED:
		return -FI_ECANCELED;
	default:
		return -FI_EINVAL;
	}
}

/* For the timeouts of fi_eq_sread() and fi_cq_sread(). */
int64_t rfi_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* FI_OPT_CM_DATA_SIZE, the one option of active and passive endpoints. */
int rfi_getopt_cm(const struct rfi_fabric *fab, int level, int optname,
		  void *optval, size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (*optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	*(size_t *)optval = rfi_cm_data_size(&fab->attr);
	*optlen = sizeof(size_t);
	return 0;
}

/* Consumer bytes of connect and accept data: rfi's prefix rides along. */
size_t rfi_cm_data_size(const struct rapt_ia_attr *attr)
{
	size_t n = attr->pdata_connect < attr->pdata_accept ?
		   attr->pdata_connect : attr->pdata_accept;

	return n > RFI_CM_PREFIX ? n - RFI_CM_PREFIX : 0;
}

static bool is_loopback(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *in4 = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET)
		return (ntohl(in4->sin_addr.s_addr) >> 24) == 127;
	return ss->ss_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
}

/*
 * An IA can serve as a fabric if it has an IP address (rxm and every
 * libfabric consumer name peers by socket address) and does RMA (rxm's
 * large messages are RDMA reads).
 */
static bool ia_usable(const struct rapt_ia_attr *a)
{
	uint64_t need = RAPT_CAP_RDMA_WRITE | RAPT_CAP_RDMA_READ;

	if ((a->caps & need) != need)
		return false;
	if (a->local_addr.ss_family != AF_INET &&
	    a->local_addr.ss_family != AF_INET6)
		return false;
	return rfi_cm_data_size(a) > 0 && a->max_send_sge >= 2;
}

static void ia_add(const char *name)
{
	struct rfi_ia_desc *d;
	struct rapt_ia_attr a;
	struct rapt_ia *ia;

	if (rapt_ia_open(name, &ia))
		return;
	if (rapt_ia_query(ia, &a, sizeof(a)) || !ia_usable(&a)) {
		rapt_ia_close(ia);
		return;
	}
	rapt_ia_close(ia);
	d = realloc(ia_cache, (ia_count + 1) * sizeof(*d));
	if (!d)
		return;
	ia_cache = d;
	d[ia_count].attr = a;
	d[ia_count].loopback = is_loopback(&a.local_addr);
	ia_count++;
}

/* Loopback IAs go last: a consumer that takes the first fabric publishes
 * an address its peers on other hosts can reach. */
static int ia_cmp(const void *a, const void *b)
{
	const struct rfi_ia_desc *x = a, *y = b;

	if (x->loopback != y->loopback)
		return x->loopback ? 1 : -1;
	return strcmp(x->attr.name, y->attr.name);
}

static void ia_scan(void)
{
	struct rapt_entry *e;
	size_t n, i;

	if (rfi_params.ia) {
		ia_add(rfi_params.ia);
		return;
	}
	if (rapt_registry_list(&e, &n))
		return;
	for (i = 0; i < n; i++)
		if (e[i].kind == RAPT_ENTRY_DEVICE && e[i].status == 0)
			ia_add(e[i].name);
	rapt_free(e);
	if (ia_count > 1)
		qsort(ia_cache, ia_count, sizeof(*ia_cache), ia_cmp);
}

/*
 * Opening an IA starts a provider's engine, so the list is made once per
 * process (and again after fi_fini's cleanup).
 */
int rfi_ia_list(const struct rfi_ia_desc **list, size_t *count)
{
	pthread_mutex_lock(&ia_lock);
	if (!ia_scanned) {
		ia_scan();
		ia_scanned = true;
	}
	*list = ia_cache;
	*count = ia_count;
	pthread_mutex_unlock(&ia_lock);
	return ia_count ? 0 : -FI_ENODATA;
}

static void params_read(void)
{
	size_t v;

	fi_param_define(&rfi_prov, "ia", FI_PARAM_STRING,
		"rapt IA to offer, e.g. tcp:lo (default: every usable IA)");
	fi_param_define(&rfi_prov, "rx_slots", FI_PARAM_SIZE_T,
		"receive slots per endpoint: messages a peer may send ahead (default: 32)");
	fi_param_define(&rfi_prov, "slot_size", FI_PARAM_SIZE_T,
		"bytes per receive slot; longer messages take several (default: 32768)");
	fi_param_get_str(&rfi_prov, "ia", &rfi_params.ia);
	if (!fi_param_get_size_t(&rfi_prov, "rx_slots", &v) && v >= 4 &&
	    v <= 4096)
		rfi_params.slots = v;
	if (!fi_param_get_size_t(&rfi_prov, "slot_size", &v) && v >= 64 &&
	    v <= (1u << 24))
		rfi_params.slot_size = v;
}

FI_EXT_INI
{
	params_read();
	return &rfi_prov;
}
