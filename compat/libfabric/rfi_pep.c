// SPDX-License-Identifier: MIT
/*
 * Passive endpoints over rapt PSPs: listen, the requests they bring
 * (FI_CONNREQ, rfi_eq.c), reject, and socket-address names.
 */
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "rfi.h"

int rfi_sockaddr_len(const void *addr)
{
	const struct sockaddr *sa = addr;

	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

/* Copy a name out; @port (host order) replaces the address's if not 0. */
int rfi_name_copy(const struct sockaddr_storage *ss, uint16_t port,
		  void *addr, size_t *addrlen)
{
	struct sockaddr_storage tmp = *ss;
	size_t len = rfi_sockaddr_len(ss);

	if (!len)
		return -FI_EADDRNOTAVAIL;
	if (port)
		((struct sockaddr_in *)&tmp)->sin_port = htons(port);
	if (*addrlen < len) {
		*addrlen = len;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &tmp, len);
	*addrlen = len;
	return 0;
}

static int pep_close(struct fid *fid)
{
	struct rfi_pep *pep = (struct rfi_pep *)fid;
	struct rfi_fabric *fab = pep->fab;
	int ret = 0;

	pthread_mutex_lock(&fab->lock);
	if (pep->psp) {
		rfi_eq_drop_connreqs(pep->eq, pep);
		ret = rfi_errno(rapt_psp_free(pep->psp));
	}
	if (!ret) {
		if (pep->eq)
			pep->eq->refs--;
		fab->refs--;
	}
	pthread_mutex_unlock(&fab->lock);
	if (ret)
		return ret;
	fi_freeinfo(pep->info);
	free(pep);
	return 0;
}

static int pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct rfi_pep *pep = (struct rfi_pep *)fid;
	struct rfi_eq *eq = (struct rfi_eq *)bfid;
	int ret = 0;

	if (bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	pthread_mutex_lock(&pep->fab->lock);
	if (pep->eq || pep->psp || eq->fab != pep->fab) {
		ret = -FI_EINVAL;
	} else {
		pep->eq = eq;
		eq->refs++;
	}
	pthread_mutex_unlock(&pep->fab->lock);
	return ret;
}

static struct fi_ops pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = pep_close,
	.bind = pep_bind,
	.control = rfi_no_control,
	.ops_open = rfi_ops_open,
	.tostr = rfi_no_tostr,
	.ops_set = rfi_no_ops_set,
};

static int pep_getopt(fid_t fid, int level, int optname, void *optval,
		      size_t *optlen)
{
	struct rfi_pep *pep = (struct rfi_pep *)fid;

	return rfi_getopt_cm(pep->fab, level, optname, optval, optlen);
}

static struct fi_ops_ep pep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = rfi_no_cancel,
	.getopt = pep_getopt,
	.setopt = rfi_no_setopt,
	.tx_ctx = rfi_no_tx_ctx,
	.rx_ctx = rfi_no_rx_ctx,
	.rx_size_left = rfi_no_size_left,
	.tx_size_left = rfi_no_size_left,
};

static int pep_listen(struct fid_pep *fpep)
{
	struct rfi_pep *pep = (struct rfi_pep *)fpep;
	struct rapt_psp_info pi;
	uint64_t sid;
	int ret;

	pthread_mutex_lock(&pep->fab->lock);
	if (!pep->eq) {
		ret = -FI_ENOEQ;
		goto out;
	}
	if (pep->psp) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	sid = pep->port ? pep->port : RAPT_SERVICE_ID_ANY;
	ret = rfi_errno(rapt_psp_create(pep->fab->ia, sid, pep->eq->evd, NULL,
					&pep->psp));
	if (ret)
		goto out;
	rapt_context_set(pep->psp, pep);
	ret = rfi_errno(rapt_psp_query(pep->psp, &pi, sizeof(pi)));
	if (!ret)
		pep->port = (uint16_t)pi.service_id;
out:
	pthread_mutex_unlock(&pep->fab->lock);
	return ret;
}

/* A listener's name is its IA's address with the real port: peers
 * connect to exactly what this returns (never a wildcard, never 0). */
static int pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct rfi_pep *pep = (struct rfi_pep *)fid;

	return rfi_name_copy(&pep->fab->attr.local_addr, pep->port, addr,
			     addrlen);
}

static int pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct rfi_pep *pep = (struct rfi_pep *)fid;
	const struct sockaddr_in *sin = addr;

	if (addrlen < sizeof(*sin) || !rfi_sockaddr_len(addr))
		return -FI_EINVAL;
	if (pep->psp)
		return -FI_EOPBADSTATE;
	pep->port = ntohs(sin->sin_port);
	return 0;
}

static int pep_reject(struct fid_pep *fpep, fid_t handle, const void *param,
		      size_t paramlen)
{
	struct rfi_pep *pep = (struct rfi_pep *)fpep;
	struct rfi_connreq *creq = (struct rfi_connreq *)handle;
	int ret;

	if (!handle || handle->fclass != FI_CLASS_CONNREQ)
		return -FI_EINVAL;
	if (paramlen > pep->fab->attr.pdata_reject)
		return -FI_EINVAL;
	pthread_mutex_lock(&pep->fab->lock);
	ret = rapt_cr_reject(creq->cr, param, paramlen);
	pthread_mutex_unlock(&pep->fab->lock);
	if (ret && ret != RAPT_ENOTCONN)
		return rfi_errno(ret);
	free(creq);
	return 0;
}

static struct fi_ops_cm pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = pep_setname,
	.getname = pep_getname,
	.getpeer = rfi_no_getpeer,
	.connect = rfi_no_connect,
	.listen = pep_listen,
	.accept = rfi_no_accept,
	.reject = pep_reject,
	.shutdown = rfi_no_shutdown,
	.join = rfi_no_join,
};

int rfi_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		   struct fid_pep **fpep, void *context)
{
	struct rfi_fabric *fab = (struct rfi_fabric *)fabric;
	struct rfi_pep *pep;

	if (!info)
		return -FI_EINVAL;
	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	pep->info = fi_dupinfo(info);
	if (!pep->info) {
		free(pep);
		return -FI_ENOMEM;
	}
	if (info->src_addr && info->src_addrlen >= sizeof(struct sockaddr_in))
		pep->port = ntohs(((const struct sockaddr_in *)
				   info->src_addr)->sin_port);
	pep->fab = fab;
	pep->pep.fid.fclass = FI_CLASS_PEP;
	pep->pep.fid.context = context;
	pep->pep.fid.ops = &pep_fi_ops;
	pep->pep.ops = &pep_ops;
	pep->pep.cm = &pep_cm_ops;
	pthread_mutex_lock(&fab->lock);
	fab->refs++;
	pthread_mutex_unlock(&fab->lock);
	*fpep = &pep->pep;
	return 0;
}
