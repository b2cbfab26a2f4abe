/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: the iWARP wire codec.
 *
 * MPA (RFC 5044) with enhanced connection setup (RFC 6581), DDP (RFC 5041)
 * and RDMAP (RFC 5040), byte for byte as Linux siw puts them on the wire and
 * as Wireshark's iwarp_mpa / iwarp_ddp_rdmap dissectors read them.  Layouts
 * and siw's behaviour: shared/reference/wire-semantics.md.
 *
 * Pure functions only: no sockets, no allocation, no logging.  Encoders
 * write into the caller's buffer and return a length; parsers read a
 * contiguous buffer and fill a struct whose pointers, if any, point into
 * that buffer.  The receive path learns how much to read from the
 * tcp_*_need() functions, then parses.
 *
 * Return values: encoders return a length (> 0) or RAPT_EINVAL (bad
 * argument) / RAPT_ELENGTH (caller's buffer too small, or a length the
 * wire cannot carry).  Parsers return a length or one of the negative
 * TCP_WIRE_E* codes below, each naming one way a peer's bytes are wrong;
 * tcp_wire_err_to_rapt() turns them into RAPT_E* codes at the provider
 * boundary, tcp_wire_err_term() into the Terminate that reports them.
 * Output structs are written only on success.
 *
 * All multi-byte header fields are big-endian; the MPA CRC alone is
 * little-endian (see tcp_fpdu_trailer()).
 */
#ifndef RAPT_PROVIDERS_TCP_WIRE_H
#define RAPT_PROVIDERS_TCP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rapt/rapt.h>

/* ------------------------------------------------------------------ */
/* Codec error codes                                                  */
/* ------------------------------------------------------------------ */

/*
 * One code per way a peer's bytes can be wrong.  Private to the provider:
 * map with tcp_wire_err_to_rapt() before returning to the core.  Kept far
 * below the RAPT_E* range so the two never collide.  Append only.
 */
#define TCP_WIRE_ERRNO_MAP(XX)						\
	XX(ETRUNC,	-1024, "buffer ends before the frame or header does") \
	XX(EKEY,	-1025, "not an MPA Request or Reply key")	\
	XX(EMARKERS,	-1026, "peer wants MPA markers (M=1): unsupported") \
	XX(EREV,	-1027, "MPA revision is not 1 or 2")		\
	XX(EPDLEN,	-1028, "MPA private data over 512 or the local limit") \
	XX(EIRDORD,	-1029, "MPA v2 frame too short for its IRD/ORD words") \
	XX(EDDPVER,	-1030, "DDP version is not 1")			\
	XX(ERDMAPVER,	-1031, "RDMAP version is not 1")		\
	XX(EOPCODE,	-1032, "unknown or unsupported RDMAP opcode")	\
	XX(EFLAGS,	-1033, "DDP T/L flag does not fit the RDMAP opcode") \
	XX(EQN,		-1034, "DDP queue number does not fit the RDMAP opcode") \
	XX(EULPDULEN,	-1035, "ULPDU length does not fit the DDP/RDMAP header") \
	XX(ECRC,	-1036, "MPA CRC32c mismatch")			\
	XX(EEARLY,	-1037, "bytes behind an MPA Request or Reply") \
	XX(ENORTR,	-1038, "peer-to-peer request offers no Write or Read RTR")

/**
 * enum tcp_wire_err - why the codec refused a peer's bytes
 */
enum tcp_wire_err {
#define TCP_WIRE__ERR_ENUM(name, val, msg) TCP_WIRE_##name = (val),
	TCP_WIRE_ERRNO_MAP(TCP_WIRE__ERR_ENUM)
#undef TCP_WIRE__ERR_ENUM
};

/* ------------------------------------------------------------------ */
/* MPA request / reply / reject frames (RFC 5044 7.1, RFC 6581)        */
/* ------------------------------------------------------------------ */

#define TCP_MPA_KEY_LEN		16
#define TCP_MPA_KEY_REQ		"MPA ID Req Frame"
#define TCP_MPA_KEY_REP		"MPA ID Rep Frame"
/* key(16) flags(1) rev(1) PD_Length(2) */
#define TCP_MPA_HDR_LEN		20
/* RFC 5044's ceiling of PD_Length. */
#define TCP_MPA_PD_MAX		512
/* Our ceiling of PD_Length: siw's RDMA_MAX_PRIVATE_DATA; cxgb4 agrees. */
#define TCP_MPA_PD_LIMIT	256
/* The IRD and ORD words of an enhanced (rev 2, E=1) frame. */
#define TCP_MPA_V2_LEN		4
/* Private data left for the consumer when talking to siw. */
#define TCP_MPA_ULP_PD_MAX	(TCP_MPA_PD_LIMIT - TCP_MPA_V2_LEN)
/* A buffer this big holds any MPA frame the parser accepts. */
#define TCP_MPA_FRAME_MAX	(TCP_MPA_HDR_LEN + TCP_MPA_PD_MAX)

/* Flags byte (offset 16). */
#define TCP_MPA_FLAG_M		0x80	/* sender wants markers: refused */
#define TCP_MPA_FLAG_C		0x40	/* sender wants CRC32c */
#define TCP_MPA_FLAG_R		0x20	/* reply only: rejected */
#define TCP_MPA_FLAG_E		0x10	/* rev 2: IRD/ORD words lead pdata */
#define TCP_MPA_FLAG_SIW_GSO	0x08	/* siw-private; never sent, ignored */

#define TCP_MPA_REV1		1
#define TCP_MPA_REV2		2

/* The IRD/ORD words as they are on the wire (big-endian 16 bit). */
#define TCP_MPA_V2_IRD_A	0x8000	/* peer-to-peer (RTR in use) */
#define TCP_MPA_V2_IRD_B	0x4000	/* zero-length Send RTR */
#define TCP_MPA_V2_ORD_C	0x8000	/* zero-length Write RTR */
#define TCP_MPA_V2_ORD_D	0x4000	/* zero-length Read RTR */
#define TCP_MPA_V2_VALUE_MASK	0x3fff
/* "No IRD/ORD value" (IETF_NO_IRD_ORD in the Intel drivers). */
#define TCP_MPA_V2_NO_VALUE	0x3fff

/**
 * enum tcp_mpa_type - which MPA frame a key names
 * @TCP_MPA_REQUEST: "MPA ID Req Frame", initiator to responder
 * @TCP_MPA_REPLY: "MPA ID Rep Frame", responder to initiator (R=1: reject)
 */
enum tcp_mpa_type {
	TCP_MPA_REQUEST = 1,
	TCP_MPA_REPLY = 2,
};

/**
 * enum tcp_mpa_rtr - RFC 6581 peer-to-peer bits, as struct tcp_mpa_frame
 * keeps them (not their wire positions)
 * @TCP_MPA_P2P: A, peer-to-peer mode; a responder must echo it
 * @TCP_MPA_RTR_SEND: B, zero-length Send RTR (never offered: it would
 *                    consume a receive; siw, i40iw and irdma lack it)
 * @TCP_MPA_RTR_WRITE: C, zero-length RDMA Write RTR
 * @TCP_MPA_RTR_READ: D, zero-length RDMA Read Request RTR
 */
enum tcp_mpa_rtr {
	TCP_MPA_P2P = 0x1,
	TCP_MPA_RTR_SEND = 0x2,
	TCP_MPA_RTR_WRITE = 0x4,
	TCP_MPA_RTR_READ = 0x8,
};
#define TCP_MPA_RTR_ALL	(TCP_MPA_P2P | TCP_MPA_RTR_SEND |		\
			 TCP_MPA_RTR_WRITE | TCP_MPA_RTR_READ)

/**
 * struct tcp_mpa_frame - an MPA Request, Reply or reject Reply
 * @type: enum tcp_mpa_type
 * @rev: 1 or 2
 * @crc: C flag: the sender wants CRC32c (then both directions use it)
 * @reject: R flag: a Reply that rejects the connection
 * @enhanced: rev 2 with E=1: @ird, @ord and @rtr travel as the first
 *            TCP_MPA_V2_LEN bytes of the private data
 * @rtr: enum tcp_mpa_rtr bits (enhanced frames only)
 * @ird: inbound RDMA Read queue depth, 0..0x3fff (enhanced frames only)
 * @ord: outbound RDMA Read queue depth, 0..0x3fff (enhanced frames only)
 * @pdata_len: consumer private data length, without the IRD/ORD words
 * @pdata: consumer private data; after a parse it points into the
 *         parsed buffer
 *
 * The parser ignores reserved flag bits (siw's 0x08 among them), E in a
 * rev 1 frame and R in a Request, as RFC 5044 asks of a receiver.
 */
struct tcp_mpa_frame {
	uint8_t type;
	uint8_t rev;
	bool crc;
	bool reject;
	bool enhanced;
	uint8_t rtr;
	uint16_t ird;
	uint16_t ord;
	uint16_t pdata_len;
	const uint8_t *pdata;
};

size_t tcp_mpa_need(const void *buf, size_t len);
int tcp_mpa_parse(const void *buf, size_t len, uint16_t pd_max,
		  struct tcp_mpa_frame *out);
int tcp_mpa_build(const struct tcp_mpa_frame *f, void *buf, size_t len);

/* ------------------------------------------------------------------ */
/* FPDU, DDP and RDMAP (RFC 5044 4, RFC 5041, RFC 5040)                */
/* ------------------------------------------------------------------ */

/*
 * An FPDU: ULPDU_Length(2) | ULPDU = DDP/RDMAP header + payload |
 * pad to a multiple of 4 | CRC32c(4) over everything before it.
 */
#define TCP_MPA_LEN_SIZE	2
#define TCP_MPA_CRC_SIZE	4
#define TCP_FPDU_ULPDU_MAX	65535
#define TCP_FPDU_TRAILER_MAX	(3 + TCP_MPA_CRC_SIZE)

/* DDP/RDMAP header sizes, without the ULPDU_Length field. */
#define TCP_DDP_TAGGED_HDR_LEN		14	/* ctrl(2) STag(4) TO(8) */
#define TCP_DDP_UNTAGGED_HDR_LEN	18	/* ctrl(2) rsvd(4) QN MSN MO */
#define TCP_RDMAP_RREQ_LEN		28	/* sink STag/TO, size, src */
#define TCP_RDMAP_RREQ_HDR_LEN	(TCP_DDP_UNTAGGED_HDR_LEN + TCP_RDMAP_RREQ_LEN)
#define TCP_RDMAP_TERM_CTRL_LEN		4
#define TCP_RDMAP_TERM_HDR_LEN	\
	(TCP_DDP_UNTAGGED_HDR_LEN + TCP_RDMAP_TERM_CTRL_LEN)
#define TCP_RDMAP_TERM_SEGLEN_LEN	2
/* A Terminate with every copied header: 22 + 2 + 18 + 28. */
#define TCP_RDMAP_TERM_ULPDU_MAX	(TCP_RDMAP_TERM_HDR_LEN +	\
					 TCP_RDMAP_TERM_SEGLEN_LEN +	\
					 TCP_DDP_UNTAGGED_HDR_LEN +	\
					 TCP_RDMAP_RREQ_LEN)
/* A buffer this big holds the header of any FPDU the parser accepts. */
#define TCP_FPDU_HDR_MAX	(TCP_MPA_LEN_SIZE + TCP_RDMAP_TERM_ULPDU_MAX)

/* First header byte: DDP control. */
#define TCP_DDP_FLAG_T		0x80	/* tagged buffer model */
#define TCP_DDP_FLAG_L		0x40	/* last segment of the message */
#define TCP_DDP_DV_MASK		0x03
#define TCP_DDP_VERSION		1
/* Second header byte: RDMAP control. */
#define TCP_RDMAP_RV_MASK	0xc0
#define TCP_RDMAP_RV_SHIFT	6
#define TCP_RDMAP_VERSION	1
#define TCP_RDMAP_OPCODE_MASK	0x0f

/**
 * enum tcp_rdmap_op - RDMAP opcodes (RFC 5040 4.3)
 *
 * Atomics (RFC 7306, 0x8..0xb) and immediate data are not supported: the
 * parser rejects them with TCP_WIRE_EOPCODE.
 */
enum tcp_rdmap_op {
	TCP_RDMAP_WRITE = 0x0,
	TCP_RDMAP_READ_REQ = 0x1,
	TCP_RDMAP_READ_RESP = 0x2,
	TCP_RDMAP_SEND = 0x3,
	TCP_RDMAP_SEND_INV = 0x4,
	TCP_RDMAP_SEND_SE = 0x5,
	TCP_RDMAP_SEND_SE_INV = 0x6,
	TCP_RDMAP_TERMINATE = 0x7,
};
#define TCP_RDMAP_OP_MAX	TCP_RDMAP_TERMINATE

/* Untagged queues (RFC 5040 5.1). */
enum tcp_ddp_qn {
	TCP_DDP_QN_SEND = 0,
	TCP_DDP_QN_READ_REQ = 1,
	TCP_DDP_QN_TERMINATE = 2,
};

/* STag of the zero-length RTRs: never 0, Chelsio fails tagged STag 0. */
#define TCP_RTR_STAG		1

/* Terminate control (RFC 5040 4.8): layer, error type, error code. */
enum tcp_term_layer {
	TCP_TERM_LAYER_RDMAP = 0x0,
	TCP_TERM_LAYER_DDP = 0x1,
	TCP_TERM_LAYER_LLP = 0x2,
};

enum tcp_term_rdmap_etype {
	TCP_TERM_RDMAP_CATASTROPHIC = 0x0,
	TCP_TERM_RDMAP_PROTECTION = 0x1,
	TCP_TERM_RDMAP_OPERATION = 0x2,
};

enum tcp_term_rdmap_ecode {
	TCP_TERM_RDMAP_INVALID_STAG = 0x00,
	TCP_TERM_RDMAP_BASE_BOUNDS = 0x01,
	TCP_TERM_RDMAP_ACCESS = 0x02,
	TCP_TERM_RDMAP_STAG_NOT_ASSOC = 0x03,
	TCP_TERM_RDMAP_TO_WRAP = 0x04,
	TCP_TERM_RDMAP_VERSION = 0x05,
	TCP_TERM_RDMAP_OPCODE = 0x06,
	TCP_TERM_RDMAP_CATASTROPHIC_STREAM = 0x07,
	TCP_TERM_RDMAP_CATASTROPHIC_GLOBAL = 0x08,
	TCP_TERM_RDMAP_CANNOT_INVALIDATE = 0x09,
	TCP_TERM_RDMAP_UNSPECIFIED = 0xff,
};

enum tcp_term_ddp_etype {
	TCP_TERM_DDP_CATASTROPHIC = 0x0,
	TCP_TERM_DDP_TAGGED = 0x1,
	TCP_TERM_DDP_UNTAGGED = 0x2,
};

enum tcp_term_ddp_ecode {
	/* tagged buffer errors */
	TCP_TERM_DDP_T_INVALID_STAG = 0x00,
	TCP_TERM_DDP_T_BASE_BOUNDS = 0x01,
	TCP_TERM_DDP_T_STAG_NOT_ASSOC = 0x02,
	TCP_TERM_DDP_T_TO_WRAP = 0x03,
	TCP_TERM_DDP_T_VERSION = 0x04,
	/* untagged buffer errors */
	TCP_TERM_DDP_U_INVALID_QN = 0x01,
	TCP_TERM_DDP_U_NO_BUFFER = 0x02,
	TCP_TERM_DDP_U_MSN_RANGE = 0x03,
	TCP_TERM_DDP_U_INVALID_MO = 0x04,
	TCP_TERM_DDP_U_TOO_LONG = 0x05,
	TCP_TERM_DDP_U_VERSION = 0x06,
};

/* LLP (MPA) errors: error type is always 0. */
enum tcp_term_llp_ecode {
	TCP_TERM_LLP_STREAM_LOST = 0x01,
	TCP_TERM_LLP_CRC = 0x02,
	TCP_TERM_LLP_FPDU_START = 0x03,
	TCP_TERM_LLP_BAD_REQ_REP = 0x04,
	/* enhanced connection setup (RFC 6581) only */
	TCP_TERM_LLP_LOCAL_CATASTROPHIC = 0x05,
	TCP_TERM_LLP_INSUFFICIENT_IRD = 0x06,
	TCP_TERM_LLP_NO_MATCHING_RTR = 0x07,
};

/* Hdr Ct bits, in their place in the third Terminate control byte. */
#define TCP_TERM_M	0x80	/* DDP segment length is valid */
#define TCP_TERM_D	0x40	/* segment length + DDP header copied */
#define TCP_TERM_R	0x20	/* RDMAP (Read Request) header copied */
#define TCP_TERM_HDRCT_MASK	(TCP_TERM_M | TCP_TERM_D | TCP_TERM_R)

/**
 * struct tcp_term - the Terminate-specific part of a Terminate message
 * @layer: enum tcp_term_layer
 * @etype: error type of that layer
 * @ecode: error code of that type
 * @hdrct: TCP_TERM_M / TCP_TERM_D / TCP_TERM_R; M goes only with D
 * @ddp_seg_len: with D, the DDP segment length field.  RFC 5040 wants the
 *               length of the segment in error; siw sends its payload
 *               length.  Nobody interprets it: the caller chooses.
 * @ddp_hdr_len: with D, TCP_DDP_TAGGED_HDR_LEN or TCP_DDP_UNTAGGED_HDR_LEN,
 *               matching the T bit of @ddp_hdr[0]
 * @ddp_hdr: with D, the offending DDP header (without its ULPDU_Length)
 * @rdmap_hdr: with R, the offending Read Request's RDMAP header
 *
 * Wire order after the control word: [D: seg len, DDP header] [R: RDMAP
 * header], which is also what tshark reads (it reads the segment length
 * only when D is set; siw always sets M and D together).
 */
struct tcp_term {
	uint8_t layer;
	uint8_t etype;
	uint8_t ecode;
	uint8_t hdrct;
	uint16_t ddp_seg_len;
	uint8_t ddp_hdr_len;
	uint8_t ddp_hdr[TCP_DDP_UNTAGGED_HDR_LEN];
	uint8_t rdmap_hdr[TCP_RDMAP_RREQ_LEN];
};

/**
 * struct tcp_rreq - the RDMAP header of an RDMA Read Request
 * @sink_stag: requester's STag, the Read Response goes there
 * @sink_to: requester's tagged offset
 * @size: bytes to read (0 for a Read RTR)
 * @src_stag: responder's STag to read from
 * @src_to: responder's tagged offset
 */
struct tcp_rreq {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
};

/**
 * struct tcp_ddp_hdr - one FPDU's DDP/RDMAP header, decoded
 * @opcode: enum tcp_rdmap_op; it fixes the buffer model (tagged for Write
 *          and Read Response) and, for untagged messages, the queue
 * @last: DDP L flag; always set for Read Request and Terminate
 * @ulpdu_len: parse: the ULPDU_Length field; build: ignored (computed)
 * @hdr_len: parse: bytes from the FPDU start to the payload, i.e.
 *           TCP_MPA_LEN_SIZE + the DDP/RDMAP header; build: ignored
 * @payload_len: parse: @ulpdu_len - (@hdr_len - 2); build: ignored
 * @stag: tagged: data sink STag
 * @to: tagged: data sink tagged offset
 * @inv_stag: Send with (SE and) Invalidate: the STag to invalidate
 * @qn: untagged: queue number; build: ignored (the opcode fixes it)
 * @msn: untagged: message sequence number (starts at 1 per queue)
 * @mo: untagged: offset of this segment in its message
 * @rreq: Read Request only
 * @term: Terminate only
 */
struct tcp_ddp_hdr {
	uint8_t opcode;
	bool last;
	uint16_t ulpdu_len;
	uint16_t hdr_len;
	uint16_t payload_len;
	uint32_t stag;
	uint64_t to;
	uint32_t inv_stag;
	uint32_t qn;
	uint32_t msn;
	uint32_t mo;
	struct tcp_rreq rreq;
	struct tcp_term term;
};

/**
 * tcp_fpdu_pad - pad bytes after a ULPDU of @ulpdu_len bytes
 */
static inline unsigned int tcp_fpdu_pad(unsigned int ulpdu_len)
{
	return (4 - ((TCP_MPA_LEN_SIZE + ulpdu_len) & 3)) & 3;
}

/**
 * tcp_fpdu_len - total FPDU bytes (length field to CRC) for @ulpdu_len
 */
static inline unsigned int tcp_fpdu_len(unsigned int ulpdu_len)
{
	return TCP_MPA_LEN_SIZE + ulpdu_len + tcp_fpdu_pad(ulpdu_len) +
	       TCP_MPA_CRC_SIZE;
}

int tcp_ddp_hdr_size(unsigned int opcode);
int tcp_ddp_build_hdr(const struct tcp_ddp_hdr *h, size_t payload_len,
		      void *buf, size_t len);
unsigned int tcp_fpdu_trailer(unsigned int ulpdu_len, bool crc_on,
			      uint32_t crc, uint8_t *out);
int tcp_fpdu_build(const struct tcp_ddp_hdr *h, const void *payload,
		   size_t payload_len, bool crc_on, void *buf, size_t len);
int tcp_fpdu_build_rtr(unsigned int rtr, uint32_t msn, bool crc_on,
		       void *buf, size_t len);
int tcp_term_copy_hdr(struct tcp_term *t, const void *hdr, size_t len,
		      uint16_t seg_len, bool with_rdmap);

size_t tcp_ddp_hdr_need(const void *buf, size_t len);
int tcp_ddp_parse_hdr(const void *buf, size_t len, struct tcp_ddp_hdr *out);
int tcp_fpdu_check_crc(uint32_t crc, const void *crc_field);
int tcp_fpdu_parse(const void *buf, size_t len, bool crc_on,
		   struct tcp_ddp_hdr *out);

const char *tcp_wire_strerror(int err);
const char *tcp_wire_err_name(int err);
int tcp_wire_err_to_rapt(int err);
int tcp_wire_err_term(int err, uint8_t ddp_ctrl, struct tcp_term *t);

/* ------------------------------------------------------------------ */
/* CRC32c (Castagnoli, reflected, as iSCSI and MPA use it)             */
/* ------------------------------------------------------------------ */

/*
 * All three take and return a finished CRC, zlib style: start with 0 and
 * chain, tcp_crc32c(tcp_crc32c(0, a, n), b, m) is the CRC of a then b.
 * tcp_crc32c() uses the SSE4.2 crc32 instruction when the CPU has it, the
 * slicing-by-8 table otherwise; the other two are there for tests.
 */
uint32_t tcp_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t tcp_crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t tcp_crc32c_hw(uint32_t crc, const void *buf, size_t len);
bool tcp_crc32c_has_hw(void);
const char *tcp_crc32c_impl(void);

/* ------------------------------------------------------------------ */
/* Byte order helpers (unaligned, big-endian unless named _le)         */
/* ------------------------------------------------------------------ */

static inline void tcp_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void tcp_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void tcp_put_be64(uint8_t *p, uint64_t v)
{
	tcp_put_be32(p, (uint32_t)(v >> 32));
	tcp_put_be32(p + 4, (uint32_t)v);
}

static inline void tcp_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline uint16_t tcp_get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t tcp_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t tcp_get_be64(const uint8_t *p)
{
	return (uint64_t)tcp_get_be32(p) << 32 | tcp_get_be32(p + 4);
}

static inline uint32_t tcp_get_le32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[1] << 8 | p[0];
}

#endif /* RAPT_PROVIDERS_TCP_WIRE_H */
