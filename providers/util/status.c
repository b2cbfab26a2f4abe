/* SPDX-License-Identifier: MIT */
/*
 * Provider toolkit: status codes (<rapt/provider_util.h>).
 *
 * One errno -> RAPT_E* table for every provider, and the decoder of the
 * prov_status convention: RAPT_E* codes and negated errnos, iWARP
 * Terminate layer/type/code (RFC 5040 4.8, RFC 5041 7.2, RFC 5044 8,
 * RFC 6581 4) and verbs work completion statuses.  Every name comes from
 * one X-macro list.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rapt/rapt.h>
#include <rapt/provider_util.h>

#include "errno_map.h"

/* ------------------------------------------------------------------ */
/* errno -> RAPT_E*                                                    */
/* ------------------------------------------------------------------ */

/* The table is core/errno_map.h's, which the core uses too. */

int rapt_errno_status(int err)
{
	return rapt_errno_map(err, RAPT_EPROVIDER);
}

/* ------------------------------------------------------------------ */
/* prov_status: codes and errnos                                       */
/* ------------------------------------------------------------------ */

static const char *errno_name(int err)
{
#ifdef HAVE_STRERRORNAME_NP
	return strerrorname_np(err);
#else
	(void)err;
	return NULL;
#endif
}

static void code_str(int32_t v, char *buf, size_t len)
{
	const char *name = rapt_err_name(v);
	char tmp[128];

	if (v == 0) {
		snprintf(buf, len, "no detail");
	} else if (strcmp(name, "RAPT_E?")) {
		snprintf(buf, len, "%s: %s", name, rapt_strerror(v));
	} else if (v > -4096 && errno_name(-v)) {
		snprintf(buf, len, "%s: %s", errno_name(-v),
			 strerror_r(-v, tmp, sizeof(tmp)));
	} else if (v > -4096) {
		snprintf(buf, len, "errno %d: %s", -v,
			 strerror_r(-v, tmp, sizeof(tmp)));
	} else {
		snprintf(buf, len, "status %d", v);
	}
}

/* ------------------------------------------------------------------ */
/* prov_status: iWARP Terminate                                        */
/* ------------------------------------------------------------------ */

#define TERM_LAYER_MAP(XX)						\
	XX(0, "RDMAP")							\
	XX(1, "DDP")							\
	XX(2, "LLP (MPA)")

/* layer, error type, name */
#define TERM_ETYPE_MAP(XX)						\
	XX(0, 0, "local catastrophic error")				\
	XX(0, 1, "remote protection error")				\
	XX(0, 2, "remote operation error")				\
	XX(1, 0, "local catastrophic error")				\
	XX(1, 1, "tagged buffer error")					\
	XX(1, 2, "untagged buffer error")				\
	XX(1, 3, "reserved for the use of RDMAP")			\
	XX(2, 0, "MPA error")

/* layer, error type, error code, name */
#define TERM_ECODE_MAP(XX)						\
	XX(0, 1, 0x00, "invalid STag")					\
	XX(0, 1, 0x01, "base or bounds violation")			\
	XX(0, 1, 0x02, "access rights violation")			\
	XX(0, 1, 0x03, "STag not associated with RDMAP stream")		\
	XX(0, 1, 0x04, "TO wrap")					\
	XX(0, 1, 0x09, "STag cannot be invalidated")			\
	XX(0, 1, 0xff, "unspecified error")				\
	XX(0, 2, 0x05, "invalid RDMAP version")				\
	XX(0, 2, 0x06, "unexpected opcode")				\
	XX(0, 2, 0x07, "catastrophic error, localized to RDMAP stream")	\
	XX(0, 2, 0x08, "catastrophic error, global")			\
	XX(0, 2, 0x09, "STag cannot be invalidated")			\
	XX(0, 2, 0xff, "unspecified error")				\
	XX(1, 1, 0x00, "invalid STag")					\
	XX(1, 1, 0x01, "base or bounds violation")			\
	XX(1, 1, 0x02, "STag not associated with DDP stream")		\
	XX(1, 1, 0x03, "TO wrap")					\
	XX(1, 1, 0x04, "invalid DDP version")				\
	XX(1, 2, 0x01, "invalid QN")					\
	XX(1, 2, 0x02, "invalid MSN, no buffer available")		\
	XX(1, 2, 0x03, "invalid MSN, MSN range")			\
	XX(1, 2, 0x04, "invalid MO")					\
	XX(1, 2, 0x05, "DDP message too long for available buffer")	\
	XX(1, 2, 0x06, "invalid DDP version")				\
	XX(2, 0, 0x01, "TCP stream lost")				\
	XX(2, 0, 0x02, "received MPA CRC does not match")		\
	XX(2, 0, 0x03, "FPDU start not where a marker points")		\
	XX(2, 0, 0x04, "invalid MPA request or reply")			\
	XX(2, 0, 0x05, "local catastrophic error")			\
	XX(2, 0, 0x06, "insufficient IRD resources")			\
	XX(2, 0, 0x07, "no matching RTR model")

static const char *term_layer(unsigned int layer)
{
	switch (layer) {
#define TERM_LAYER_CASE(l, name) case l: return name;
	TERM_LAYER_MAP(TERM_LAYER_CASE)
#undef TERM_LAYER_CASE
	}
	return NULL;
}

static const char *term_etype(unsigned int layer, unsigned int etype)
{
	switch (layer << 4 | etype) {
#define TERM_ETYPE_CASE(l, t, name) case (l) << 4 | (t): return name;
	TERM_ETYPE_MAP(TERM_ETYPE_CASE)
#undef TERM_ETYPE_CASE
	}
	return NULL;
}

static const char *term_ecode(unsigned int layer, unsigned int etype,
			      unsigned int ecode)
{
	switch (layer << 12 | etype << 8 | ecode) {
#define TERM_ECODE_CASE(l, t, c, name) \
	case (l) << 12 | (t) << 8 | (c): return name;
	TERM_ECODE_MAP(TERM_ECODE_CASE)
#undef TERM_ECODE_CASE
	}
	return NULL;
}

static void term_str(uint32_t v, char *buf, size_t len)
{
	unsigned int layer = (v >> 12) & 0xf, etype = (v >> 8) & 0xf;
	unsigned int ecode = v & 0xff;
	const char *l = term_layer(layer), *t = term_etype(layer, etype);
	const char *c = term_ecode(layer, etype, ecode);

	snprintf(buf, len, "Terminate %s: %s %s%s%s (layer %u type %u code "
		 "0x%02x)", v & RAPT_PROV_STATUS_TERM_RECEIVED ? "received" :
		 "sent", l ? l : "unknown layer", t ? t : "unknown error type",
		 c ? ": " : "", c ? c : "", layer, etype, ecode);
}

/* ------------------------------------------------------------------ */
/* prov_status: verbs work completion status                           */
/* ------------------------------------------------------------------ */

/* enum ibv_wc_status of rdma-core's <infiniband/verbs.h>, in order. */
#define WC_STATUS_MAP(XX)						\
	XX(0, SUCCESS, "success")					\
	XX(1, LOC_LEN_ERR, "local length error")			\
	XX(2, LOC_QP_OP_ERR, "local QP operation error")		\
	XX(3, LOC_EEC_OP_ERR, "local EE context operation error")	\
	XX(4, LOC_PROT_ERR, "local protection error")			\
	XX(5, WR_FLUSH_ERR, "work request flushed")			\
	XX(6, MW_BIND_ERR, "memory window bind error")			\
	XX(7, BAD_RESP_ERR, "bad response error")			\
	XX(8, LOC_ACCESS_ERR, "local access error")			\
	XX(9, REM_INV_REQ_ERR, "remote invalid request error")		\
	XX(10, REM_ACCESS_ERR, "remote access error")			\
	XX(11, REM_OP_ERR, "remote operation error")			\
	XX(12, RETRY_EXC_ERR, "transport retry counter exceeded")	\
	XX(13, RNR_RETRY_EXC_ERR, "RNR retry counter exceeded")		\
	XX(14, LOC_RDD_VIOL_ERR, "local RDD violation error")		\
	XX(15, REM_INV_RD_REQ_ERR, "remote invalid RD request")		\
	XX(16, REM_ABORT_ERR, "operation aborted")			\
	XX(17, INV_EECN_ERR, "invalid EE context number")		\
	XX(18, INV_EEC_STATE_ERR, "invalid EE context state")		\
	XX(19, FATAL_ERR, "fatal error")				\
	XX(20, RESP_TIMEOUT_ERR, "response timeout error")		\
	XX(21, GENERAL_ERR, "general error")				\
	XX(22, TM_ERR, "tag matching error")				\
	XX(23, TM_RNDV_INCOMPLETE, "tag matching rendezvous incomplete")

static void wc_str(uint32_t v, char *buf, size_t len)
{
	switch (v) {
#define WC_STATUS_CASE(n, name, text)					\
	case n:								\
		snprintf(buf, len, "verbs completion IBV_WC_" #name ": %s", \
			 text);						\
		return;
	WC_STATUS_MAP(WC_STATUS_CASE)
#undef WC_STATUS_CASE
	}
	snprintf(buf, len, "verbs completion status %u", v);
}

const char *rapt_prov_status_str(int32_t prov_status, char *buf, size_t len)
{
	uint32_t detail = (uint32_t)prov_status & RAPT_PROV_STATUS_DETAIL_MASK;

	if (!len)
		return buf;
	switch (rapt_prov_status_kind(prov_status)) {
	case RAPT_PROV_STATUS_CODE:
		code_str(prov_status, buf, len);
		break;
	case RAPT_PROV_STATUS_TERM:
		term_str(detail, buf, len);
		break;
	case RAPT_PROV_STATUS_WC:
		wc_str(detail, buf, len);
		break;
	default:
		snprintf(buf, len, "provider status %#010x",
			 (uint32_t)prov_status);
		break;
	}
	return buf;
}
