/* SPDX-License-Identifier: MIT */
/*
 * The little protocol that iw_peer (librdmacm/libibverbs on kernel siw) and
 * rapt_iw_peer (rapt's tcp provider) run against each other in the siw VM.
 * Both programs include this header; it needs nothing but libc.
 *
 * Connect and accept private data travel RAW (no rapt header): each side
 * advertises one region the peer may RDMA-write and RDMA-read.
 *
 *   off len  field
 *     0   8  magic: "IWP-ACTV" (connect) or "IWP-PASV" (accept)
 *     8   8  region address, big-endian
 *    16   4  region rkey, big-endian
 *    20   4  region length, big-endian (IWP_REGION_LEN)
 *    24  15  iwp_fill() bytes, seed IWP_SEED_PD_ACTIVE / _PASSIVE
 *
 * 39 bytes: not a multiple of 4, so a peer that pads or drops the tail is
 * caught.  A reject carries IWP_REJECT_LEN bytes: "IWP-REJECT" and
 * iwp_fill() bytes with IWP_SEED_REJECT.
 *
 * Region layout on both sides: [0, IWP_HALF) holds iwp_fill(IWP_SEED_SRC_*)
 * from before the connect (the peer RDMA-reads it), [IWP_HALF,
 * IWP_REGION_LEN) starts zeroed (the peer RDMA-writes it).
 *
 * The script, after ESTABLISHED (A = active side, P = passive side):
 *   1. A SENDs IWP_MSG1_LEN bytes (seed IWP_SEED_MSG1); P checks them.
 *   2. P SENDs IWP_MSG2_LEN bytes (seed IWP_SEED_MSG2): several FPDUs.
 *      P posts this send as soon as it is established, before msg1 is
 *      in.  After a peer-to-peer RTR that is allowed; a rapt passive side
 *      facing siw (no P2P) must hold it until msg1 arrives, because MPA
 *      forbids a responder's FPDU before the initiator's first one, and
 *      siw fails the connection (-EPROTO) if any byte follows the MPA
 *      Reply before it has read that Reply.
 *   3. A RDMA-WRITEs IWP_HALF bytes (seed IWP_SEED_WRITE_A) into P's
 *      region + IWP_HALF, RDMA-READs P's first half and checks it, then
 *      sends "A-DONE" as a Send with Solicited Event and Invalidate of
 *      P's region rkey (its last use); rapt checks that its receive
 *      reports SOLICITED and the invalidation of that rkey (siw takes the
 *      message without error, but its verbs provider reports neither),
 *      then its second half.
 *   4. The same from P to A (seed IWP_SEED_WRITE_P, message "P-DONE").
 *   5. The side told to (-d) disconnects gracefully, or (rapt_iw_peer
 *      -a) abruptly, with a TCP RST; both see the connection end.
 * Every receive is posted before the connect or accept (iWARP has no
 * RNR).
 */
#ifndef RAPT_TESTS_INTEROP_IW_PROTO_H
#define RAPT_TESTS_INTEROP_IW_PROTO_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IWP_MAGIC_LEN		8
#define IWP_MAGIC_ACTIVE	"IWP-ACTV"
#define IWP_MAGIC_PASSIVE	"IWP-PASV"
#define IWP_PD_FILL		15
#define IWP_PD_LEN		(24 + IWP_PD_FILL)
#define IWP_REJECT_TEXT		"IWP-REJECT"
#define IWP_REJECT_LEN		29

/* Sizes over 64 KiB: many FPDUs per message, and a Read Response and a
 * tagged Write spanning many TCP segments, both ways. */
#define IWP_REGION_LEN		(256 * 1024)
#define IWP_HALF		(IWP_REGION_LEN / 2)	/* RDMA Write, Read */
#define IWP_MSG1_LEN		100
#define IWP_MSG2_LEN		100000	/* over 64 KiB: many FPDUs */
#define IWP_DONE_LEN		7	/* "A-DONE" / "P-DONE" and a NUL */
#define IWP_RECV_LEN		(128 * 1024)	/* every posted receive */

/* Each program's local buffer (not the region): two receives, a send
 * area, the RDMA READ sink and the RDMA WRITE source. */
#define OFF_RECV0		0
#define OFF_RECV1		IWP_RECV_LEN
#define OFF_SEND		(2 * IWP_RECV_LEN)
#define OFF_SINK		(3 * IWP_RECV_LEN)
#define OFF_WSRC		(OFF_SINK + IWP_HALF)
#define BUF_LEN			(OFF_WSRC + IWP_HALF)

#define IWP_SEED_PD_ACTIVE	0x11
#define IWP_SEED_PD_PASSIVE	0x22
#define IWP_SEED_REJECT		0x33
#define IWP_SEED_SRC_ACTIVE	0x44
#define IWP_SEED_SRC_PASSIVE	0x55
#define IWP_SEED_MSG1		0x66
#define IWP_SEED_MSG2		0x77
#define IWP_SEED_WRITE_A	0x88
#define IWP_SEED_WRITE_P	0x99

#define IWP_DEFAULT_PORT	7500

/** struct iwp_region - what one side advertises in its private data */
struct iwp_region {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

/* A pattern no two seeds share at any offset, and no stray zero run. */
static inline uint8_t iwp_byte(unsigned int seed, size_t i)
{
	return (uint8_t)((i * 131u + seed * 7u + (i >> 8) + 1u) ^ seed);
}

static inline void iwp_fill(void *buf, size_t len, unsigned int seed)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = iwp_byte(seed, i);
}

/* Return the first offset that differs from the pattern, or -1. */
static inline long iwp_check(const void *buf, size_t len, unsigned int seed)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != iwp_byte(seed, i))
			return (long)i;
	return -1;
}

static inline void iwp_put_be(uint8_t *p, uint64_t v, int n)
{
	while (n--) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

static inline uint64_t iwp_get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* Build the IWP_PD_LEN bytes of private data of one side. */
static inline void iwp_pd_build(uint8_t *pd, int active,
				const struct iwp_region *r)
{
	memcpy(pd, active ? IWP_MAGIC_ACTIVE : IWP_MAGIC_PASSIVE,
	       IWP_MAGIC_LEN);
	iwp_put_be(pd + 8, r->addr, 8);
	iwp_put_be(pd + 16, r->rkey, 4);
	iwp_put_be(pd + 20, r->len, 4);
	iwp_fill(pd + 24, IWP_PD_FILL,
		 active ? IWP_SEED_PD_ACTIVE : IWP_SEED_PD_PASSIVE);
}

/*
 * Check the peer's private data: exact length, magic of the other role,
 * region length and fill bytes.  Return NULL and the region, or why not.
 */
static inline const char *iwp_pd_parse(const void *buf, size_t len,
				       int from_active, struct iwp_region *r)
{
	const uint8_t *pd = buf;

	if (!pd || len != IWP_PD_LEN)
		return "private data length is not IWP_PD_LEN";
	if (memcmp(pd, from_active ? IWP_MAGIC_ACTIVE : IWP_MAGIC_PASSIVE,
		   IWP_MAGIC_LEN))
		return "private data magic is wrong";
	if (iwp_check(pd + 24, IWP_PD_FILL, from_active ?
		      IWP_SEED_PD_ACTIVE : IWP_SEED_PD_PASSIVE) >= 0)
		return "private data fill bytes are wrong";
	r->addr = iwp_get_be(pd + 8, 8);
	r->rkey = (uint32_t)iwp_get_be(pd + 16, 4);
	r->len = (uint32_t)iwp_get_be(pd + 20, 4);
	if (r->len != IWP_REGION_LEN)
		return "advertised region length is wrong";
	return NULL;
}

static inline void iwp_reject_build(uint8_t *pd)
{
	memcpy(pd, IWP_REJECT_TEXT, sizeof(IWP_REJECT_TEXT) - 1);
	iwp_fill(pd + sizeof(IWP_REJECT_TEXT) - 1,
		 IWP_REJECT_LEN - (sizeof(IWP_REJECT_TEXT) - 1),
		 IWP_SEED_REJECT);
}

static inline int iwp_reject_ok(const void *buf, size_t len)
{
	uint8_t want[IWP_REJECT_LEN];

	iwp_reject_build(want);
	return buf && len == IWP_REJECT_LEN && !memcmp(buf, want, len);
}

/* Both programs report the same way, prefixed with their role. */
static const char *iwp_role = "interop peer";

static void fail(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: FAIL: ", iwp_role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void note(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", iwp_role);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

#endif /* RAPT_TESTS_INTEROP_IW_PROTO_H */
