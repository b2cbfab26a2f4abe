/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: FPDU framing (RFC 5044 4) and the DDP/RDMAP headers of
 * every supported RDMAP message (RFC 5041, RFC 5040).
 *
 * Offsets from the start of an FPDU:
 *
 *   0  2  ULPDU_Length
 *   2  1  DDP control: T 0x80 | L 0x40 | DV 0x03 (=1)
 *   3  1  RDMAP control: RV 0xc0 (=1) | opcode 0x0f
 *   tagged (Write, Read Response):  4 STag(4)  8 TO(8)          -> 16
 *   untagged:  4 rsvd or Invalidate STag(4)  8 QN  12 MSN  16 MO -> 20
 *   Read Request:  20 sink STag  24 sink TO  32 size  36 src STag
 *                  40 src TO                                     -> 48
 *   Terminate:  20 layer<<4|etype  21 ecode  22 M D R | rsvd  23 rsvd
 *               24 [D: seg len(2), DDP hdr(14/18)] [R: RDMAP hdr(28)]
 *   payload, pad to 4, CRC32c (little-endian) over all of the above.
 */
#include "config.h"

#include <string.h>

#include "tcp_wire.h"

#define DDP_OFF_CTRL	2
#define RDMAP_OFF_CTRL	3
#define DDP_OFF_STAG	4	/* tagged */
#define DDP_OFF_TO	8	/* tagged */
#define DDP_OFF_RSVD	4	/* untagged: RsvdULP / Invalidate STag */
#define DDP_OFF_QN	8
#define DDP_OFF_MSN	12
#define DDP_OFF_MO	16
#define RREQ_OFF	20
#define TERM_OFF	20
#define TERM_OFF_COPY	(TERM_OFF + TCP_RDMAP_TERM_CTRL_LEN)
/* The first 4 FPDU bytes: length, DDP control, RDMAP control. */
#define FPDU_CTRL_LEN	4

/**
 * struct ddp_op - what an opcode fixes in the DDP header
 * @hdr: DDP/RDMAP header bytes (Terminate: without copied headers)
 * @tagged: tagged buffer model (T=1); untagged otherwise
 * @single: one segment only, so L must be set
 * @qn: untagged queue number
 */
struct ddp_op {
	uint8_t hdr;
	bool tagged;
	bool single;
	uint8_t qn;
};

static const struct ddp_op ddp_ops[TCP_RDMAP_OP_MAX + 1] = {
	[TCP_RDMAP_WRITE] = { TCP_DDP_TAGGED_HDR_LEN, true, false, 0 },
	[TCP_RDMAP_READ_REQ] = { TCP_RDMAP_RREQ_HDR_LEN, false, true,
				 TCP_DDP_QN_READ_REQ },
	[TCP_RDMAP_READ_RESP] = { TCP_DDP_TAGGED_HDR_LEN, true, false, 0 },
	[TCP_RDMAP_SEND] = { TCP_DDP_UNTAGGED_HDR_LEN, false, false,
			     TCP_DDP_QN_SEND },
	[TCP_RDMAP_SEND_INV] = { TCP_DDP_UNTAGGED_HDR_LEN, false, false,
				 TCP_DDP_QN_SEND },
	[TCP_RDMAP_SEND_SE] = { TCP_DDP_UNTAGGED_HDR_LEN, false, false,
				TCP_DDP_QN_SEND },
	[TCP_RDMAP_SEND_SE_INV] = { TCP_DDP_UNTAGGED_HDR_LEN, false, false,
				    TCP_DDP_QN_SEND },
	[TCP_RDMAP_TERMINATE] = { TCP_RDMAP_TERM_HDR_LEN, false, true,
				  TCP_DDP_QN_TERMINATE },
};

static bool op_has_inv_stag(unsigned int op)
{
	return op == TCP_RDMAP_SEND_INV || op == TCP_RDMAP_SEND_SE_INV;
}

/**
 * tcp_ddp_hdr_size - DDP/RDMAP header bytes an opcode needs
 * @opcode: enum tcp_rdmap_op
 *
 * Return: the header size without the ULPDU_Length field (for Terminate,
 * without its copied headers), or RAPT_EINVAL for an unknown opcode.
 */
int tcp_ddp_hdr_size(unsigned int opcode)
{
	if (opcode > TCP_RDMAP_OP_MAX)
		return RAPT_EINVAL;
	return ddp_ops[opcode].hdr;
}

/* ------------------------------------------------------------------ */
/* Encoding                                                            */
/* ------------------------------------------------------------------ */

static unsigned int term_copy_len(const struct tcp_term *t)
{
	unsigned int n = 0;

	if (t->hdrct & TCP_TERM_D)
		n += TCP_RDMAP_TERM_SEGLEN_LEN + t->ddp_hdr_len;
	if (t->hdrct & TCP_TERM_R)
		n += TCP_RDMAP_RREQ_LEN;
	return n;
}

static int term_check(const struct tcp_term *t)
{
	bool tagged;

	if (t->layer > 0xf || t->etype > 0xf)
		return RAPT_EINVAL;
	if (t->hdrct & ~TCP_TERM_HDRCT_MASK)
		return RAPT_EINVAL;
	if (!(t->hdrct & TCP_TERM_D))
		return (t->hdrct & TCP_TERM_M) ? RAPT_EINVAL : 0;
	tagged = t->ddp_hdr[0] & TCP_DDP_FLAG_T;
	if (t->ddp_hdr_len != (tagged ? TCP_DDP_TAGGED_HDR_LEN :
			       TCP_DDP_UNTAGGED_HDR_LEN))
		return RAPT_EINVAL;
	return 0;
}

static void term_build(const struct tcp_term *t, uint8_t *p)
{
	uint8_t *c = p + TCP_RDMAP_TERM_CTRL_LEN;

	p[0] = (uint8_t)(t->layer << 4 | t->etype);
	p[1] = t->ecode;
	p[2] = t->hdrct;
	p[3] = 0;
	if (t->hdrct & TCP_TERM_D) {
		tcp_put_be16(c, t->ddp_seg_len);
		memcpy(c + TCP_RDMAP_TERM_SEGLEN_LEN, t->ddp_hdr,
		       t->ddp_hdr_len);
		c += TCP_RDMAP_TERM_SEGLEN_LEN + t->ddp_hdr_len;
	}
	if (t->hdrct & TCP_TERM_R)
		memcpy(c, t->rdmap_hdr, TCP_RDMAP_RREQ_LEN);
}

static void rreq_build(const struct tcp_rreq *r, uint8_t *p)
{
	tcp_put_be32(p, r->sink_stag);
	tcp_put_be64(p + 4, r->sink_to);
	tcp_put_be32(p + 12, r->size);
	tcp_put_be32(p + 16, r->src_stag);
	tcp_put_be64(p + 20, r->src_to);
}

static void untagged_build(const struct tcp_ddp_hdr *h, uint8_t *p)
{
	unsigned int op = h->opcode;

	tcp_put_be32(p + DDP_OFF_RSVD, op_has_inv_stag(op) ? h->inv_stag : 0);
	tcp_put_be32(p + DDP_OFF_QN, ddp_ops[op].qn);
	tcp_put_be32(p + DDP_OFF_MSN, h->msn);
	tcp_put_be32(p + DDP_OFF_MO, h->mo);
	if (op == TCP_RDMAP_READ_REQ)
		rreq_build(&h->rreq, p + RREQ_OFF);
	else if (op == TCP_RDMAP_TERMINATE)
		term_build(&h->term, p + TERM_OFF);
}

/**
 * tcp_ddp_build_hdr - encode ULPDU_Length and the DDP/RDMAP header
 * @h: the header; @h->qn, @h->ulpdu_len, @h->hdr_len and @h->payload_len
 *     are ignored (the opcode and @payload_len fix them)
 * @payload_len: payload bytes that will follow the header
 * @buf: where to write (TCP_FPDU_HDR_MAX bytes always suffice)
 * @len: room at @buf
 *
 * Sets L for Read Request and Terminate whatever @h->last says.  The
 * payload, pad and CRC are the caller's: tcp_fpdu_trailer() writes the
 * last two, so a Send can go out as header, user iovecs, trailer.
 *
 * Return: header bytes written (TCP_MPA_LEN_SIZE included), RAPT_EINVAL
 * for an unknown opcode, an inconsistent Terminate or a payload on a Read
 * Request or Terminate, RAPT_ELENGTH if the ULPDU would exceed
 * TCP_FPDU_ULPDU_MAX or the header @len.
 */
int tcp_ddp_build_hdr(const struct tcp_ddp_hdr *h, size_t payload_len,
		      void *buf, size_t len)
{
	uint8_t *p = buf;
	unsigned int op = h->opcode, hsize;
	const struct ddp_op *o;
	uint8_t ctrl;

	if (op > TCP_RDMAP_OP_MAX)
		return RAPT_EINVAL;
	o = &ddp_ops[op];
	hsize = o->hdr;
	if (op == TCP_RDMAP_TERMINATE) {
		if (term_check(&h->term))
			return RAPT_EINVAL;
		hsize += term_copy_len(&h->term);
	}
	if (o->single && payload_len)
		return RAPT_EINVAL;
	if (payload_len > TCP_FPDU_ULPDU_MAX - hsize)
		return RAPT_ELENGTH;
	if (len < TCP_MPA_LEN_SIZE + hsize)
		return RAPT_ELENGTH;

	ctrl = TCP_DDP_VERSION;
	if (o->tagged)
		ctrl |= TCP_DDP_FLAG_T;
	if (h->last || o->single)
		ctrl |= TCP_DDP_FLAG_L;
	tcp_put_be16(p, (uint16_t)(hsize + payload_len));
	p[DDP_OFF_CTRL] = ctrl;
	p[RDMAP_OFF_CTRL] = (uint8_t)(TCP_RDMAP_VERSION << TCP_RDMAP_RV_SHIFT |
				      op);
	if (o->tagged) {
		tcp_put_be32(p + DDP_OFF_STAG, h->stag);
		tcp_put_be64(p + DDP_OFF_TO, h->to);
	} else {
		untagged_build(h, p);
	}
	return (int)(TCP_MPA_LEN_SIZE + hsize);
}

/**
 * tcp_fpdu_trailer - encode the pad and CRC that end an FPDU
 * @ulpdu_len: the FPDU's ULPDU_Length
 * @crc_on: CRC32c negotiated; otherwise the CRC field is zero, as siw
 *          sends it
 * @crc: tcp_crc32c() of the length field and the whole ULPDU
 * @out: TCP_FPDU_TRAILER_MAX bytes of room
 *
 * The CRC covers the pad too and goes out least significant byte first
 * (siw: put_unaligned_le32; tshark reports big-endian bytes as bad).
 *
 * Return: trailer bytes written, tcp_fpdu_pad(@ulpdu_len) + 4.
 */
unsigned int tcp_fpdu_trailer(unsigned int ulpdu_len, bool crc_on,
			      uint32_t crc, uint8_t *out)
{
	unsigned int pad = tcp_fpdu_pad(ulpdu_len);

	memset(out, 0, pad);
	if (crc_on)
		crc = tcp_crc32c(crc, out, pad);
	tcp_put_le32(out + pad, crc_on ? crc : 0);
	return pad + TCP_MPA_CRC_SIZE;
}

/**
 * tcp_fpdu_build - encode a whole FPDU into one buffer
 * @h: the header, as for tcp_ddp_build_hdr()
 * @payload: payload bytes (may be NULL if @payload_len is 0)
 * @payload_len: how many
 * @crc_on: CRC32c negotiated
 * @buf: where to write
 * @len: room at @buf; tcp_fpdu_len(header + @payload_len) is needed
 *
 * For control messages (RTRs, Read Requests, Terminates) and small sends.
 *
 * Return: FPDU bytes written, or the errors of tcp_ddp_build_hdr().
 */
int tcp_fpdu_build(const struct tcp_ddp_hdr *h, const void *payload,
		   size_t payload_len, bool crc_on, void *buf, size_t len)
{
	uint8_t *p = buf;
	unsigned int ulpdu, body;
	uint32_t crc = 0;
	int hlen;

	hlen = tcp_ddp_build_hdr(h, payload_len, buf, len);
	if (hlen < 0)
		return hlen;
	ulpdu = hlen - TCP_MPA_LEN_SIZE + (unsigned int)payload_len;
	if (len < tcp_fpdu_len(ulpdu))
		return RAPT_ELENGTH;
	if (payload_len)
		memcpy(p + hlen, payload, payload_len);
	body = TCP_MPA_LEN_SIZE + ulpdu;
	if (crc_on)
		crc = tcp_crc32c(0, p, body);
	return (int)(body + tcp_fpdu_trailer(ulpdu, crc_on, crc, p + body));
}

/**
 * tcp_fpdu_build_rtr - encode the zero-length FPDU that ends P2P setup
 * @rtr: TCP_MPA_RTR_WRITE or TCP_MPA_RTR_READ, as negotiated
 * @msn: Read RTR: the Read Request queue's MSN (1 on a new connection;
 *       the next real Read Request uses @msn + 1); unused for Write
 * @crc_on: CRC32c negotiated
 * @buf: where to write
 * @len: room at @buf (20 bytes for Write, 52 for Read)
 *
 * Write RTR: a tagged, last, zero-length RDMA Write to STag TCP_RTR_STAG,
 * TO 0 (siw's bytes exactly).  Read RTR: a zero-length Read Request with
 * source STag TCP_RTR_STAG, TOs 0 and size 0, as siw sends it except for
 * the sink STag: siw sends 0, so the peer's zero-length Read Response
 * goes out under STag 0, which Chelsio rejects; we use TCP_RTR_STAG for
 * it too.  The requester must absorb that Read Response.
 *
 * Return: FPDU bytes written, RAPT_EINVAL for another @rtr, RAPT_ELENGTH.
 */
int tcp_fpdu_build_rtr(unsigned int rtr, uint32_t msn, bool crc_on,
		       void *buf, size_t len)
{
	struct tcp_ddp_hdr h = { .last = true };

	if (rtr == TCP_MPA_RTR_WRITE) {
		h.opcode = TCP_RDMAP_WRITE;
		h.stag = TCP_RTR_STAG;
	} else if (rtr == TCP_MPA_RTR_READ) {
		h.opcode = TCP_RDMAP_READ_REQ;
		h.msn = msn;
		h.rreq.sink_stag = TCP_RTR_STAG;
		h.rreq.src_stag = TCP_RTR_STAG;
	} else {
		return RAPT_EINVAL;
	}
	return tcp_fpdu_build(&h, NULL, 0, crc_on, buf, len);
}

/**
 * tcp_term_copy_hdr - put an offending FPDU's headers into a Terminate
 * @t: the Terminate to complete (layer, etype and ecode stay as they are)
 * @hdr: the offending FPDU's header as received, from its ULPDU_Length
 * @len: bytes at @hdr
 * @seg_len: the value for the DDP segment length field (see struct
 *           tcp_term)
 * @with_rdmap: also copy the RDMAP header (Read Requests only)
 *
 * Sets M and D (and R), as siw does.  Do not call it when the offending
 * header's layout is unknown (bad DDP/RDMAP version or opcode): siw sends
 * no copy then, and neither should we.
 *
 * Return: 0, or RAPT_EINVAL if @hdr is too short for its own DDP header
 * (or RDMAP header), or @with_rdmap is set for anything but a Read
 * Request.
 */
int tcp_term_copy_hdr(struct tcp_term *t, const void *hdr, size_t len,
		      uint16_t seg_len, bool with_rdmap)
{
	const uint8_t *p = hdr;
	unsigned int dlen;

	if (len < FPDU_CTRL_LEN)
		return RAPT_EINVAL;
	dlen = (p[DDP_OFF_CTRL] & TCP_DDP_FLAG_T) ? TCP_DDP_TAGGED_HDR_LEN :
						    TCP_DDP_UNTAGGED_HDR_LEN;
	if (len < TCP_MPA_LEN_SIZE + dlen)
		return RAPT_EINVAL;
	if (with_rdmap &&
	    ((p[RDMAP_OFF_CTRL] & TCP_RDMAP_OPCODE_MASK) != TCP_RDMAP_READ_REQ ||
	     len < TCP_MPA_LEN_SIZE + TCP_RDMAP_RREQ_HDR_LEN))
		return RAPT_EINVAL;

	memcpy(t->ddp_hdr, p + TCP_MPA_LEN_SIZE, dlen);
	t->ddp_hdr_len = (uint8_t)dlen;
	t->ddp_seg_len = seg_len;
	t->hdrct = TCP_TERM_M | TCP_TERM_D;
	if (with_rdmap) {
		memcpy(t->rdmap_hdr, p + RREQ_OFF, TCP_RDMAP_RREQ_LEN);
		t->hdrct |= TCP_TERM_R;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Decoding                                                            */
/* ------------------------------------------------------------------ */

/*
 * Everything the first four FPDU bytes can tell.  On success *hsize is the
 * DDP/RDMAP header size; a Terminate is parsed whole, so its "header" is
 * its whole ULPDU.
 */
static int ddp_classify(const uint8_t *p, unsigned int *hsize)
{
	unsigned int ulpdu = tcp_get_be16(p);
	unsigned int ddp = p[DDP_OFF_CTRL], rdmap = p[RDMAP_OFF_CTRL];
	unsigned int op = rdmap & TCP_RDMAP_OPCODE_MASK;
	const struct ddp_op *o;

	/* Too short for the smallest DDP header: its "control bytes" are
	 * not even inside the ULPDU (the CRC or the next FPDU), so no
	 * version or opcode read from them means anything. */
	if (ulpdu < TCP_DDP_TAGGED_HDR_LEN)
		return TCP_WIRE_EULPDULEN;
	if ((ddp & TCP_DDP_DV_MASK) != TCP_DDP_VERSION)
		return TCP_WIRE_EDDPVER;
	if ((rdmap & TCP_RDMAP_RV_MASK) >> TCP_RDMAP_RV_SHIFT !=
	    TCP_RDMAP_VERSION)
		return TCP_WIRE_ERDMAPVER;
	if (op > TCP_RDMAP_OP_MAX)
		return TCP_WIRE_EOPCODE;
	o = &ddp_ops[op];
	if (!!(ddp & TCP_DDP_FLAG_T) != o->tagged)
		return TCP_WIRE_EFLAGS;
	if (o->single && !(ddp & TCP_DDP_FLAG_L))
		return TCP_WIRE_EFLAGS;
	if (ulpdu < o->hdr)
		return TCP_WIRE_EULPDULEN;
	if (op == TCP_RDMAP_READ_REQ && ulpdu != o->hdr)
		return TCP_WIRE_EULPDULEN;
	if (op == TCP_RDMAP_TERMINATE) {
		if (ulpdu > TCP_RDMAP_TERM_ULPDU_MAX)
			return TCP_WIRE_EULPDULEN;
		*hsize = ulpdu;
		return 0;
	}
	*hsize = o->hdr;
	return 0;
}

/**
 * tcp_ddp_hdr_need - how many bytes the header of the FPDU at @buf needs
 * @buf: the FPDU's first bytes
 * @len: how many are there
 *
 * The receive path reads 4 bytes (ULPDU_Length and both control bytes),
 * asks, reads up to the answer, then calls tcp_ddp_parse_hdr().  If the
 * first 4 bytes are already wrong the answer is 4, so the parser reports
 * why without reading into the next FPDU.
 *
 * Return: 4 if @len < 4, else header bytes from the FPDU start (at most
 * TCP_FPDU_HDR_MAX).
 */
size_t tcp_ddp_hdr_need(const void *buf, size_t len)
{
	unsigned int hsize;

	if (len < FPDU_CTRL_LEN || ddp_classify(buf, &hsize))
		return FPDU_CTRL_LEN;
	return TCP_MPA_LEN_SIZE + hsize;
}

/*
 * The copied headers of a Terminate.  Lenient where siw is sloppy: siw
 * sets R on the Terminate for a Send's protection error but copies only
 * the DDP header, so a missing RDMAP copy clears R instead of failing.
 */
static int term_parse(const uint8_t *p, unsigned int left, struct tcp_term *t)
{
	const uint8_t *c = p + TCP_RDMAP_TERM_CTRL_LEN;
	unsigned int dlen;

	t->layer = p[0] >> 4;
	t->etype = p[0] & 0xf;
	t->ecode = p[1];
	t->hdrct = p[2] & TCP_TERM_HDRCT_MASK;
	left -= TCP_RDMAP_TERM_CTRL_LEN;
	if (t->hdrct & TCP_TERM_D) {
		if (left < TCP_RDMAP_TERM_SEGLEN_LEN + 1)
			return TCP_WIRE_EULPDULEN;
		dlen = (c[TCP_RDMAP_TERM_SEGLEN_LEN] & TCP_DDP_FLAG_T) ?
		       TCP_DDP_TAGGED_HDR_LEN : TCP_DDP_UNTAGGED_HDR_LEN;
		if (left < TCP_RDMAP_TERM_SEGLEN_LEN + dlen)
			return TCP_WIRE_EULPDULEN;
		t->ddp_seg_len = tcp_get_be16(c);
		t->ddp_hdr_len = (uint8_t)dlen;
		memcpy(t->ddp_hdr, c + TCP_RDMAP_TERM_SEGLEN_LEN, dlen);
		c += TCP_RDMAP_TERM_SEGLEN_LEN + dlen;
		left -= TCP_RDMAP_TERM_SEGLEN_LEN + dlen;
	}
	if (t->hdrct & TCP_TERM_R) {
		if (left >= TCP_RDMAP_RREQ_LEN)
			memcpy(t->rdmap_hdr, c, TCP_RDMAP_RREQ_LEN);
		else
			t->hdrct &= ~TCP_TERM_R;
	}
	return 0;
}

static void rreq_parse(const uint8_t *p, struct tcp_rreq *r)
{
	r->sink_stag = tcp_get_be32(p);
	r->sink_to = tcp_get_be64(p + 4);
	r->size = tcp_get_be32(p + 12);
	r->src_stag = tcp_get_be32(p + 16);
	r->src_to = tcp_get_be64(p + 20);
}

static int untagged_parse(const uint8_t *p, unsigned int hsize,
			  struct tcp_ddp_hdr *h)
{
	unsigned int op = h->opcode;

	h->qn = tcp_get_be32(p + DDP_OFF_QN);
	h->msn = tcp_get_be32(p + DDP_OFF_MSN);
	h->mo = tcp_get_be32(p + DDP_OFF_MO);
	if (h->qn != ddp_ops[op].qn)
		return TCP_WIRE_EQN;
	if (op_has_inv_stag(op))
		h->inv_stag = tcp_get_be32(p + DDP_OFF_RSVD);
	if (op == TCP_RDMAP_READ_REQ)
		rreq_parse(p + RREQ_OFF, &h->rreq);
	else if (op == TCP_RDMAP_TERMINATE)
		return term_parse(p + TERM_OFF,
				  hsize - TCP_DDP_UNTAGGED_HDR_LEN, &h->term);
	return 0;
}

/**
 * tcp_ddp_parse_hdr - decode and validate an FPDU's header
 * @buf: the FPDU from its ULPDU_Length field
 * @len: bytes at @buf; tcp_ddp_hdr_need() says how many are enough
 * @out: the decoded header
 *
 * Checks, in this order: a ULPDU long enough for the smallest DDP header,
 * the DDP version, the RDMAP version, the opcode, the T and L flags
 * against the opcode, the ULPDU length against the header, a whole header, the queue number, a Terminate's copies.
 * Reserved bits are ignored.  MSN, MO, STags and bounds are the data
 * path's to check.
 *
 * Return: header bytes from the FPDU start (@out->hdr_len), or
 * TCP_WIRE_ETRUNC, TCP_WIRE_EDDPVER, TCP_WIRE_ERDMAPVER, TCP_WIRE_EOPCODE,
 * TCP_WIRE_EFLAGS, TCP_WIRE_EULPDULEN or TCP_WIRE_EQN.
 */
int tcp_ddp_parse_hdr(const void *buf, size_t len, struct tcp_ddp_hdr *out)
{
	const uint8_t *p = buf;
	struct tcp_ddp_hdr h = { 0 };
	unsigned int hsize;
	int ret;

	if (len < FPDU_CTRL_LEN)
		return TCP_WIRE_ETRUNC;
	ret = ddp_classify(p, &hsize);
	if (ret)
		return ret;
	if (len < TCP_MPA_LEN_SIZE + hsize)
		return TCP_WIRE_ETRUNC;

	h.opcode = p[RDMAP_OFF_CTRL] & TCP_RDMAP_OPCODE_MASK;
	h.last = p[DDP_OFF_CTRL] & TCP_DDP_FLAG_L;
	h.ulpdu_len = tcp_get_be16(p);
	h.hdr_len = (uint16_t)(TCP_MPA_LEN_SIZE + hsize);
	h.payload_len = (uint16_t)(h.ulpdu_len - hsize);
	if (ddp_ops[h.opcode].tagged) {
		h.stag = tcp_get_be32(p + DDP_OFF_STAG);
		h.to = tcp_get_be64(p + DDP_OFF_TO);
	} else {
		ret = untagged_parse(p, hsize, &h);
		if (ret)
			return ret;
	}
	*out = h;
	return h.hdr_len;
}

/**
 * tcp_fpdu_check_crc - compare a computed CRC with an FPDU's CRC field
 * @crc: tcp_crc32c() of the length field, the ULPDU and the pad
 * @crc_field: the 4 CRC bytes as received
 *
 * Return: 0 if they match, TCP_WIRE_ECRC otherwise.
 */
int tcp_fpdu_check_crc(uint32_t crc, const void *crc_field)
{
	return tcp_get_le32(crc_field) == crc ? 0 : TCP_WIRE_ECRC;
}

/**
 * tcp_fpdu_parse - decode and validate a whole FPDU held in one buffer
 * @buf: the FPDU from its ULPDU_Length field
 * @len: bytes at @buf (bytes after the FPDU are not looked at)
 * @crc_on: CRC32c negotiated; otherwise the CRC field is ignored
 * @out: the decoded header; the payload is at @buf + @out->hdr_len
 *
 * Return: FPDU bytes (tcp_fpdu_len() of its ULPDU), the errors of
 * tcp_ddp_parse_hdr(), TCP_WIRE_ETRUNC if @len ends inside the FPDU, or
 * TCP_WIRE_ECRC.
 */
int tcp_fpdu_parse(const void *buf, size_t len, bool crc_on,
		   struct tcp_ddp_hdr *out)
{
	const uint8_t *p = buf;
	struct tcp_ddp_hdr h;
	unsigned int total;
	int ret;

	ret = tcp_ddp_parse_hdr(buf, len, &h);
	if (ret < 0)
		return ret;
	total = tcp_fpdu_len(h.ulpdu_len);
	if (len < total)
		return TCP_WIRE_ETRUNC;
	if (crc_on) {
		ret = tcp_fpdu_check_crc(tcp_crc32c(0, p, total -
						    TCP_MPA_CRC_SIZE),
					 p + total - TCP_MPA_CRC_SIZE);
		if (ret)
			return ret;
	}
	*out = h;
	return (int)total;
}

/* ------------------------------------------------------------------ */
/* Error codes                                                         */
/* ------------------------------------------------------------------ */

/**
 * tcp_wire_strerror - what a codec return code means
 * @err: a TCP_WIRE_E* code, RAPT_EINVAL or RAPT_ELENGTH
 *
 * Return: a static string.
 */
const char *tcp_wire_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
#define TCP_WIRE__ERR_STR(name, val, msg) case TCP_WIRE_##name: return msg;
	TCP_WIRE_ERRNO_MAP(TCP_WIRE__ERR_STR)
#undef TCP_WIRE__ERR_STR
	case RAPT_EINVAL:
		return "invalid argument to a wire encoder";
	case RAPT_ELENGTH:
		return "frame does not fit the buffer or the wire's limits";
	default:
		return "unknown tcp wire error";
	}
}

/**
 * tcp_wire_err_name - the symbolic name of a TCP_WIRE_E* code
 * @err: the code
 *
 * Return: "TCP_WIRE_ECRC" and so on, or "?" for anything else.
 */
const char *tcp_wire_err_name(int err)
{
	switch (err) {
#define TCP_WIRE__ERR_NAME(name, val, msg)				\
	case TCP_WIRE_##name: return "TCP_WIRE_" #name;
	TCP_WIRE_ERRNO_MAP(TCP_WIRE__ERR_NAME)
#undef TCP_WIRE__ERR_NAME
	default:
		return "?";
	}
}

/**
 * tcp_wire_err_to_rapt - the RAPT_E* code to report for a codec code
 * @err: a codec return code
 *
 * Return: RAPT_EVERSION for version mismatches, RAPT_ENOTSUP for markers,
 * RAPT_ELENGTH for oversized private data, RAPT_EPROTO for the other
 * TCP_WIRE_E* codes; @err itself if it is not one of them.
 */
int tcp_wire_err_to_rapt(int err)
{
	if (err == TCP_WIRE_EREV || err == TCP_WIRE_EDDPVER ||
	    err == TCP_WIRE_ERDMAPVER)
		return RAPT_EVERSION;
	if (err == TCP_WIRE_EMARKERS)
		return RAPT_ENOTSUP;
	if (err == TCP_WIRE_EPDLEN)
		return RAPT_ELENGTH;
	switch (err) {
#define TCP_WIRE__ERR_PROTO(name, val, msg) case TCP_WIRE_##name:
	TCP_WIRE_ERRNO_MAP(TCP_WIRE__ERR_PROTO)
#undef TCP_WIRE__ERR_PROTO
		return RAPT_EPROTO;
	default:
		return err;
	}
}

static void term_set(struct tcp_term *t, unsigned int layer,
		     unsigned int etype, unsigned int ecode)
{
	memset(t, 0, sizeof(*t));
	t->layer = (uint8_t)layer;
	t->etype = (uint8_t)etype;
	t->ecode = (uint8_t)ecode;
}

/**
 * tcp_wire_err_term - the Terminate that reports a codec error to the peer
 * @err: a TCP_WIRE_E* code from a parser
 * @ddp_ctrl: the offending FPDU's DDP control byte (its T bit picks the
 *            DDP error type of a version error); 0 for MPA frames
 * @t: cleared, then given layer, error type and error code
 *
 * RFC 5040 has no code for a ULPDU too short for its header nor for T/L
 * flags that contradict the opcode; they become a DDP local catastrophic
 * error and an RDMAP "unexpected opcode".  Add copied headers with
 * tcp_term_copy_hdr() where the layout is known.
 *
 * Return: 0, or RAPT_EINVAL for TCP_WIRE_ETRUNC and non-codec codes
 * (there is no stream left to send a Terminate on, or nothing to report).
 */
int tcp_wire_err_term(int err, uint8_t ddp_ctrl, struct tcp_term *t)
{
	bool tagged = ddp_ctrl & TCP_DDP_FLAG_T;

	switch (err) {
	case TCP_WIRE_EKEY:
	case TCP_WIRE_EMARKERS:
	case TCP_WIRE_EREV:
	case TCP_WIRE_EPDLEN:
	case TCP_WIRE_EIRDORD:
	case TCP_WIRE_EEARLY:
		term_set(t, TCP_TERM_LAYER_LLP, 0, TCP_TERM_LLP_BAD_REQ_REP);
		return 0;
	case TCP_WIRE_ECRC:
		term_set(t, TCP_TERM_LAYER_LLP, 0, TCP_TERM_LLP_CRC);
		return 0;
	case TCP_WIRE_ENORTR:
		term_set(t, TCP_TERM_LAYER_LLP, 0,
			 TCP_TERM_LLP_NO_MATCHING_RTR);
		return 0;
	case TCP_WIRE_EDDPVER:
		term_set(t, TCP_TERM_LAYER_DDP,
			 tagged ? TCP_TERM_DDP_TAGGED : TCP_TERM_DDP_UNTAGGED,
			 tagged ? TCP_TERM_DDP_T_VERSION :
				  TCP_TERM_DDP_U_VERSION);
		return 0;
	case TCP_WIRE_ERDMAPVER:
		term_set(t, TCP_TERM_LAYER_RDMAP, TCP_TERM_RDMAP_OPERATION,
			 TCP_TERM_RDMAP_VERSION);
		return 0;
	case TCP_WIRE_EOPCODE:
	case TCP_WIRE_EFLAGS:
		term_set(t, TCP_TERM_LAYER_RDMAP, TCP_TERM_RDMAP_OPERATION,
			 TCP_TERM_RDMAP_OPCODE);
		return 0;
	case TCP_WIRE_EQN:
		term_set(t, TCP_TERM_LAYER_DDP, TCP_TERM_DDP_UNTAGGED,
			 TCP_TERM_DDP_U_INVALID_QN);
		return 0;
	case TCP_WIRE_EULPDULEN:
		term_set(t, TCP_TERM_LAYER_DDP, TCP_TERM_DDP_CATASTROPHIC, 0);
		return 0;
	default:
		return RAPT_EINVAL;
	}
}
