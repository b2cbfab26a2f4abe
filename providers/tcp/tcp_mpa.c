/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: MPA Request / Reply / reject frames (RFC 5044 7.1) with
 * RFC 6581 enhanced connection setup.
 *
 *   0  16  key "MPA ID Req Frame" or "MPA ID Rep Frame"
 *  16   1  flags M C R E (0x80 0x40 0x20 0x10), low nibble reserved
 *  17   1  revision (1 or 2)
 *  18   2  PD_Length, big-endian, at most 512
 *  20   N  private data; rev 2 with E: IRD word, ORD word, then the ULP's
 *
 * IRD word: A (peer-to-peer) 0x8000 | B (Send RTR) 0x4000 | IRD (14 bits)
 * ORD word: C (Write RTR) 0x8000 | D (Read RTR) 0x4000 | ORD (14 bits)
 */
#include "config.h"

#include <string.h>

#include "tcp_wire.h"

#define MPA_OFF_FLAGS	16
#define MPA_OFF_REV	17
#define MPA_OFF_PDLEN	18

static int mpa_key_type(const uint8_t *p)
{
	if (!memcmp(p, TCP_MPA_KEY_REQ, TCP_MPA_KEY_LEN))
		return TCP_MPA_REQUEST;
	if (!memcmp(p, TCP_MPA_KEY_REP, TCP_MPA_KEY_LEN))
		return TCP_MPA_REPLY;
	return TCP_WIRE_EKEY;
}

/*
 * Everything the 20-byte header can tell without the local limit: the
 * key, M=0, the revision, PD_Length <= 512.  Returns the frame type.
 */
static int mpa_check_hdr(const uint8_t *p)
{
	int type = mpa_key_type(p);

	if (type < 0)
		return type;
	if (p[MPA_OFF_FLAGS] & TCP_MPA_FLAG_M)
		return TCP_WIRE_EMARKERS;
	if (p[MPA_OFF_REV] != TCP_MPA_REV1 && p[MPA_OFF_REV] != TCP_MPA_REV2)
		return TCP_WIRE_EREV;
	if (tcp_get_be16(p + MPA_OFF_PDLEN) > TCP_MPA_PD_MAX)
		return TCP_WIRE_EPDLEN;
	return type;
}

/**
 * tcp_mpa_need - how many bytes the MPA frame starting at @buf occupies
 * @buf: the bytes received so far
 * @len: how many
 *
 * The receive path reads TCP_MPA_HDR_LEN bytes, asks again, reads the
 * rest and then calls tcp_mpa_parse().  A header that is already wrong
 * answers TCP_MPA_HDR_LEN, so the parser says why at once instead of the
 * receive path waiting for private data that may never come.
 *
 * Return: the frame's total length as far as @buf tells it; at least
 * TCP_MPA_HDR_LEN, at most TCP_MPA_FRAME_MAX.
 */
size_t tcp_mpa_need(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (len < TCP_MPA_HDR_LEN || mpa_check_hdr(p) < 0)
		return TCP_MPA_HDR_LEN;
	return TCP_MPA_HDR_LEN + tcp_get_be16(p + MPA_OFF_PDLEN);
}

static void mpa_parse_v2(const uint8_t *w, struct tcp_mpa_frame *f)
{
	uint16_t ird = tcp_get_be16(w);
	uint16_t ord = tcp_get_be16(w + 2);

	f->ird = ird & TCP_MPA_V2_VALUE_MASK;
	f->ord = ord & TCP_MPA_V2_VALUE_MASK;
	f->rtr = 0;
	if (ird & TCP_MPA_V2_IRD_A)
		f->rtr |= TCP_MPA_P2P;
	if (ird & TCP_MPA_V2_IRD_B)
		f->rtr |= TCP_MPA_RTR_SEND;
	if (ord & TCP_MPA_V2_ORD_C)
		f->rtr |= TCP_MPA_RTR_WRITE;
	if (ord & TCP_MPA_V2_ORD_D)
		f->rtr |= TCP_MPA_RTR_READ;
}

/**
 * tcp_mpa_parse - decode and validate an MPA Request or Reply
 * @buf: the frame, from its first key byte
 * @len: bytes available at @buf (bytes after the frame are not looked at)
 * @pd_max: the local ceiling of PD_Length (IRD/ORD words included),
 *          TCP_MPA_PD_LIMIT to talk to siw; RFC 5044's 512 always holds
 * @out: the decoded frame; @out->pdata points into @buf
 *
 * Checks, in this order: a whole header, the key, M=0, the revision, the
 * private-data length, a whole frame, room for the IRD/ORD words, and in
 * a peer-to-peer Request an RTR type we can answer: RFC 6581 lets the
 * responder pick only among those offered, and we never do the Send RTR
 * (B: it would consume a receive the consumer posted).
 *
 * Return: the frame length (TCP_MPA_HDR_LEN + PD_Length), or
 * TCP_WIRE_ETRUNC, TCP_WIRE_EKEY, TCP_WIRE_EMARKERS, TCP_WIRE_EREV,
 * TCP_WIRE_EPDLEN, TCP_WIRE_EIRDORD or TCP_WIRE_ENORTR.
 */
int tcp_mpa_parse(const void *buf, size_t len, uint16_t pd_max,
		  struct tcp_mpa_frame *out)
{
	const uint8_t *p = buf;
	struct tcp_mpa_frame f = { 0 };
	unsigned int flags, pd_len, v2 = 0;
	int type;

	if (len < TCP_MPA_HDR_LEN)
		return TCP_WIRE_ETRUNC;
	type = mpa_check_hdr(p);
	if (type < 0)
		return type;
	flags = p[MPA_OFF_FLAGS];
	f.rev = p[MPA_OFF_REV];
	pd_len = tcp_get_be16(p + MPA_OFF_PDLEN);
	if (pd_len > pd_max)
		return TCP_WIRE_EPDLEN;
	if (len < TCP_MPA_HDR_LEN + pd_len)
		return TCP_WIRE_ETRUNC;

	f.type = (uint8_t)type;
	f.crc = flags & TCP_MPA_FLAG_C;
	f.reject = type == TCP_MPA_REPLY && (flags & TCP_MPA_FLAG_R);
	f.enhanced = f.rev == TCP_MPA_REV2 && (flags & TCP_MPA_FLAG_E);
	if (f.enhanced) {
		if (pd_len < TCP_MPA_V2_LEN)
			return TCP_WIRE_EIRDORD;
		mpa_parse_v2(p + TCP_MPA_HDR_LEN, &f);
		v2 = TCP_MPA_V2_LEN;
		if (type == TCP_MPA_REQUEST && (f.rtr & TCP_MPA_P2P) &&
		    !(f.rtr & (TCP_MPA_RTR_WRITE | TCP_MPA_RTR_READ)))
			return TCP_WIRE_ENORTR;
	}
	f.pdata_len = (uint16_t)(pd_len - v2);
	f.pdata = f.pdata_len ? p + TCP_MPA_HDR_LEN + v2 : NULL;
	*out = f;
	return (int)(TCP_MPA_HDR_LEN + pd_len);
}

static int mpa_check(const struct tcp_mpa_frame *f)
{
	if (f->type != TCP_MPA_REQUEST && f->type != TCP_MPA_REPLY)
		return RAPT_EINVAL;
	if (f->rev != TCP_MPA_REV1 && f->rev != TCP_MPA_REV2)
		return RAPT_EINVAL;
	if (f->enhanced && f->rev != TCP_MPA_REV2)
		return RAPT_EINVAL;
	if (f->reject && f->type != TCP_MPA_REPLY)
		return RAPT_EINVAL;
	if (f->enhanced && (f->ird > TCP_MPA_V2_VALUE_MASK ||
			    f->ord > TCP_MPA_V2_VALUE_MASK ||
			    (f->rtr & ~TCP_MPA_RTR_ALL)))
		return RAPT_EINVAL;
	if (f->pdata_len && !f->pdata)
		return RAPT_EINVAL;
	return 0;
}

static void mpa_build_v2(const struct tcp_mpa_frame *f, uint8_t *w)
{
	uint16_t ird = f->ird, ord = f->ord;

	if (f->rtr & TCP_MPA_P2P)
		ird |= TCP_MPA_V2_IRD_A;
	if (f->rtr & TCP_MPA_RTR_SEND)
		ird |= TCP_MPA_V2_IRD_B;
	if (f->rtr & TCP_MPA_RTR_WRITE)
		ord |= TCP_MPA_V2_ORD_C;
	if (f->rtr & TCP_MPA_RTR_READ)
		ord |= TCP_MPA_V2_ORD_D;
	tcp_put_be16(w, ird);
	tcp_put_be16(w + 2, ord);
}

/**
 * tcp_mpa_build - encode an MPA Request, Reply or reject Reply
 * @f: the frame; @f->enhanced puts the IRD/ORD words before @f->pdata
 * @buf: where to write it (TCP_MPA_FRAME_MAX bytes always suffice)
 * @len: room at @buf
 *
 * Never sets M (markers are not supported) nor any reserved bit.
 *
 * Return: the frame length, RAPT_EINVAL for an inconsistent @f, or
 * RAPT_ELENGTH if the private data exceeds TCP_MPA_PD_MAX (IRD/ORD words
 * included) or the frame exceeds @len.
 */
int tcp_mpa_build(const struct tcp_mpa_frame *f, void *buf, size_t len)
{
	uint8_t *p = buf;
	unsigned int v2 = f->enhanced ? TCP_MPA_V2_LEN : 0;
	unsigned int pd_len = v2 + f->pdata_len;
	uint8_t flags = 0;
	int ret;

	ret = mpa_check(f);
	if (ret)
		return ret;
	if (pd_len > TCP_MPA_PD_MAX || len < TCP_MPA_HDR_LEN + pd_len)
		return RAPT_ELENGTH;

	if (f->crc)
		flags |= TCP_MPA_FLAG_C;
	if (f->reject)
		flags |= TCP_MPA_FLAG_R;
	if (f->enhanced)
		flags |= TCP_MPA_FLAG_E;
	memcpy(p, f->type == TCP_MPA_REQUEST ? TCP_MPA_KEY_REQ :
	       TCP_MPA_KEY_REP, TCP_MPA_KEY_LEN);
	p[MPA_OFF_FLAGS] = flags;
	p[MPA_OFF_REV] = f->rev;
	tcp_put_be16(p + MPA_OFF_PDLEN, (uint16_t)pd_len);
	if (v2)
		mpa_build_v2(f, p + TCP_MPA_HDR_LEN);
	if (f->pdata_len)
		memcpy(p + TCP_MPA_HDR_LEN + v2, f->pdata, f->pdata_len);
	return (int)(TCP_MPA_HDR_LEN + pd_len);
}
