/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the tcp provider's wire codec.
 *
 * Every expected frame below is assembled by hand from the RFC 5044 /
 * 5040 / 5041 / 6581 layouts (one hex group per field), never produced by
 * the encoder under test.  The CRC bytes at the end of each FPDU were
 * computed by an independent bitwise CRC32c and are written least
 * significant byte first, as siw sends them.  The MPA v2 Request is the
 * 36-byte frame of the capture in shared/reference/wire-semantics.md.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "tcp_wire.h"
#include "tests/cu_table.h"

#define KEY_REQ "4d504120 49442052 65712046 72616d65 "
#define KEY_REP "4d504120 49442052 65702046 72616d65 "

#define BUF_MAX 1024

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decode "00 0e|c1..." style hex; blanks and '|' separate fields. */
static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = 0;
	int hi = -1;

	for (; *s; s++) {
		int v = hexval(*s);

		if (v < 0) {
			CU_ASSERT_FATAL(*s == ' ' || *s == '|');
			continue;
		}
		if (hi < 0) {
			hi = v;
		} else {
			out[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	CU_ASSERT_FATAL(hi < 0);
	return n;
}

static void assert_bytes(const char *name, const uint8_t *got,
			 const uint8_t *want, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (got[i] != want[i]) {
			printf("\n  %s: byte %zu is %02x, want %02x\n", name, i,
			       got[i], want[i]);
			CU_FAIL("wire bytes differ");
			return;
		}
	}
}

/* ================================================================== */
/* CRC32c                                                              */
/* ================================================================== */

static uint32_t crc_bitwise(const uint8_t *p, size_t len)
{
	uint32_t c = 0xffffffff;
	int k;

	while (len--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78 & -(c & 1));
	}
	return ~c;
}

static void check_vector(const uint8_t *p, size_t len, uint32_t want)
{
	CU_ASSERT_EQUAL(tcp_crc32c(0, p, len), want);
	CU_ASSERT_EQUAL(tcp_crc32c_sw(0, p, len), want);
	CU_ASSERT_EQUAL(tcp_crc32c_hw(0, p, len), want);
}

/* RFC 3720 appendix B.4, plus the usual check value. */
static void test_crc_vectors(void)
{
	uint8_t b[48];
	int i;

	check_vector((const uint8_t *)"123456789", 9, 0xe3069283);
	memset(b, 0, 32);
	check_vector(b, 32, 0x8a9136aa);
	memset(b, 0xff, 32);
	check_vector(b, 32, 0x62a8ab43);
	for (i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	check_vector(b, 32, 0x46dd794e);
	for (i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	check_vector(b, 32, 0x113fdb5c);
	check_vector(b, 0, 0);
}

/* RFC 3720 B.4: an iSCSI Read (10) command PDU. */
static void test_crc_iscsi_pdu(void)
{
	uint8_t b[48];
	size_t n;

	n = unhex("01c00000 00000000 00000000 00000000"
		  "14000000 00000400 00000014 00000018"
		  "28000000 00000000 02000000 00000000", b);
	CU_ASSERT_EQUAL_FATAL(n, 48);
	check_vector(b, n, 0xd9963a56);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint8_t rnd8(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint8_t)(rng_state >> 24);
}

/* Hardware and table agree on every length 0..4096 at every alignment. */
static void test_crc_hw_sw_agree(void)
{
	static uint8_t buf[4096 + 8];
	unsigned int align, len, bad = 0;

	for (len = 0; len < sizeof(buf); len++)
		buf[len] = rnd8();
	printf("[crc32c: %s] ", tcp_crc32c_impl());
	for (align = 0; align < 8; align++) {
		for (len = 0; len <= 4096; len++) {
			const uint8_t *p = buf + align;
			uint32_t s = tcp_crc32c_sw(0, p, len);

			if (s != tcp_crc32c_hw(0, p, len) ||
			    s != tcp_crc32c(0, p, len))
				bad++;
			if (len <= 300 && s != crc_bitwise(p, len))
				bad++;
		}
	}
	CU_ASSERT_EQUAL(bad, 0);
}

/* crc(a then b) == crc(crc(a), b), at every split of a buffer. */
static void test_crc_chaining(void)
{
	uint8_t buf[200];
	uint32_t whole;
	size_t i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = rnd8();
	whole = crc_bitwise(buf, sizeof(buf));
	for (i = 0; i <= sizeof(buf); i++) {
		CU_ASSERT_EQUAL(tcp_crc32c(tcp_crc32c(0, buf, i), buf + i,
					   sizeof(buf) - i), whole);
		CU_ASSERT_EQUAL(tcp_crc32c_sw(tcp_crc32c_sw(0, buf, i),
					      buf + i, sizeof(buf) - i),
				whole);
	}
}

/* ================================================================== */
/* MPA frames                                                          */
/* ================================================================== */

#define PD(s) .pdata = (const uint8_t *)(s), .pdata_len = sizeof(s) - 1

struct mpa_case {
	const char *name;
	struct tcp_mpa_frame f;
	const char *wire;
};

static const struct mpa_case mpa_cases[] = {
	{ "request rev 1, C, pdata",
	  { .type = TCP_MPA_REQUEST, .rev = 1, .crc = true, PD("abc") },
	  KEY_REQ "40 01 0003 616263" },
	{ "request rev 2, C, A + Write/Read RTR, IRD/ORD 16 (capture)",
	  { .type = TCP_MPA_REQUEST, .rev = 2, .crc = true, .enhanced = true,
	    .rtr = TCP_MPA_P2P | TCP_MPA_RTR_WRITE | TCP_MPA_RTR_READ,
	    .ird = 16, .ord = 16, PD("hello-ulp-pd") },
	  KEY_REQ "50 02 0010 8010 c010 68656c6c6f2d756c702d7064" },
	{ "request rev 2 as siw sends it: E, no C, no P2P",
	  { .type = TCP_MPA_REQUEST, .rev = 2, .enhanced = true,
	    .ird = 64, .ord = 64 },
	  KEY_REQ "10 02 0004 0040 0040" },
	{ "reply rev 2, C, A echoed + Write RTR chosen",
	  { .type = TCP_MPA_REPLY, .rev = 2, .crc = true, .enhanced = true,
	    .rtr = TCP_MPA_P2P | TCP_MPA_RTR_WRITE, .ird = 8, .ord = 4,
	    PD("okok") },
	  KEY_REP "50 02 0008 8008 8004 6f6b6f6b" },
	{ "reply rev 2, Send RTR bit, no-value IRD/ORD 0x3fff",
	  { .type = TCP_MPA_REPLY, .rev = 2, .enhanced = true,
	    .rtr = TCP_MPA_P2P | TCP_MPA_RTR_SEND | TCP_MPA_RTR_READ,
	    .ird = TCP_MPA_V2_NO_VALUE, .ord = TCP_MPA_V2_NO_VALUE },
	  KEY_REP "10 02 0004 ffff 7fff" },
	{ "reject rev 2 with IRD/ORD words and pdata",
	  { .type = TCP_MPA_REPLY, .rev = 2, .reject = true,
	    .enhanced = true, PD("nope!") },
	  KEY_REP "30 02 0009 0000 0000 6e6f706521" },
	{ "reject rev 1 with pdata",
	  { .type = TCP_MPA_REPLY, .rev = 1, .reject = true, PD("nope!") },
	  KEY_REP "20 01 0005 6e6f706521" },
	{ "reply rev 1, no pdata",
	  { .type = TCP_MPA_REPLY, .rev = 1 },
	  KEY_REP "00 01 0000" },
};

static void assert_mpa_equal(const struct tcp_mpa_frame *a,
			     const struct tcp_mpa_frame *b)
{
	CU_ASSERT_EQUAL(a->type, b->type);
	CU_ASSERT_EQUAL(a->rev, b->rev);
	CU_ASSERT_EQUAL(a->crc, b->crc);
	CU_ASSERT_EQUAL(a->reject, b->reject);
	CU_ASSERT_EQUAL(a->enhanced, b->enhanced);
	CU_ASSERT_EQUAL(a->rtr, b->rtr);
	CU_ASSERT_EQUAL(a->ird, b->ird);
	CU_ASSERT_EQUAL(a->ord, b->ord);
	CU_ASSERT_EQUAL_FATAL(a->pdata_len, b->pdata_len);
	if (a->pdata_len)
		CU_ASSERT(!memcmp(a->pdata, b->pdata, a->pdata_len));
}

static void test_mpa_golden(void)
{
	uint8_t want[BUF_MAX], got[BUF_MAX];
	struct tcp_mpa_frame f;
	size_t i, n;
	int ret;

	for (i = 0; i < sizeof(mpa_cases) / sizeof(mpa_cases[0]); i++) {
		const struct mpa_case *c = &mpa_cases[i];

		n = unhex(c->wire, want);
		memset(got, 0xa5, sizeof(got));
		ret = tcp_mpa_build(&c->f, got, sizeof(got));
		CU_ASSERT_EQUAL(ret, (int)n);
		assert_bytes(c->name, got, want, n);
		CU_ASSERT_EQUAL(got[n], 0xa5);
		/* Exactly enough room works, one byte less does not. */
		CU_ASSERT_EQUAL(tcp_mpa_build(&c->f, got, n), (int)n);
		CU_ASSERT_EQUAL(tcp_mpa_build(&c->f, got, n - 1),
				RAPT_ELENGTH);

		CU_ASSERT_EQUAL(tcp_mpa_need(want, 19), TCP_MPA_HDR_LEN);
		CU_ASSERT_EQUAL(tcp_mpa_need(want, n), n);
		ret = tcp_mpa_parse(want, n, TCP_MPA_PD_LIMIT, &f);
		CU_ASSERT_EQUAL(ret, (int)n);
		if (ret > 0) {
			assert_mpa_equal(&f, &c->f);
			if (f.pdata_len)
				CU_ASSERT_PTR_EQUAL(f.pdata, want + n -
						    f.pdata_len);
		}
	}
}

/* Base frame for the reject tests: the 36-byte v2 Request. */
static size_t mpa_base(uint8_t *b)
{
	return unhex(mpa_cases[1].wire, b);
}

static void expect_mpa_err(const uint8_t *b, size_t len, uint16_t pd_max,
			   int want)
{
	struct tcp_mpa_frame f, sentinel;
	int ret;

	memset(&f, 0x5a, sizeof(f));
	sentinel = f;
	ret = tcp_mpa_parse(b, len, pd_max, &f);
	if (ret != want)
		printf("\n  got %d (%s), want %s\n", ret,
		       tcp_wire_err_name(ret), tcp_wire_err_name(want));
	CU_ASSERT_EQUAL(ret, want);
	CU_ASSERT(!memcmp(&f, &sentinel, sizeof(f)));
}

static void test_mpa_reject_truncated(void)
{
	uint8_t b[64];
	size_t n = mpa_base(b), len;

	for (len = 0; len < n; len++)
		expect_mpa_err(b, len, TCP_MPA_PD_LIMIT, TCP_WIRE_ETRUNC);
	CU_ASSERT_EQUAL(tcp_mpa_need(b, 0), TCP_MPA_HDR_LEN);
	CU_ASSERT_EQUAL(tcp_mpa_need(b, 20), 36);
}

static void test_mpa_reject_key(void)
{
	uint8_t b[64];
	size_t n = mpa_base(b);

	b[0] = 'm';
	expect_mpa_err(b, n, TCP_MPA_PD_LIMIT, TCP_WIRE_EKEY);
	CU_ASSERT_EQUAL(tcp_mpa_need(b, 20), TCP_MPA_HDR_LEN);
	n = mpa_base(b);
	b[15] = 'E';
	expect_mpa_err(b, n, TCP_MPA_PD_LIMIT, TCP_WIRE_EKEY);
	n = mpa_base(b);
	b[11] = 'x';
	expect_mpa_err(b, n, TCP_MPA_PD_LIMIT, TCP_WIRE_EKEY);
	/* A zeroed buffer is not a frame of either kind. */
	memset(b, 0, sizeof(b));
	expect_mpa_err(b, 36, TCP_MPA_PD_LIMIT, TCP_WIRE_EKEY);
}

static void test_mpa_reject_markers_rev(void)
{
	uint8_t b[64];
	size_t n = mpa_base(b);

	b[16] |= TCP_MPA_FLAG_M;
	expect_mpa_err(b, n, TCP_MPA_PD_LIMIT, TCP_WIRE_EMARKERS);
	CU_ASSERT_EQUAL(tcp_mpa_need(b, n), TCP_MPA_HDR_LEN);
	n = mpa_base(b);
	b[17] = 0;
	expect_mpa_err(b, n, TCP_MPA_PD_LIMIT, TCP_WIRE_EREV);
	CU_ASSERT_EQUAL(tcp_mpa_need(b, n), TCP_MPA_HDR_LEN);
	b[17] = 3;
	expect_mpa_err(b, n, TCP_MPA_PD_LIMIT, TCP_WIRE_EREV);
	b[17] = 0xff;
	expect_mpa_err(b, n, TCP_MPA_PD_LIMIT, TCP_WIRE_EREV);
}

static void test_mpa_reject_pdlen(void)
{
	uint8_t b[600];
	size_t n = mpa_base(b);

	memset(b + n, 0, sizeof(b) - n);
	b[18] = 0x02;
	b[19] = 0x01;	/* 513 > 512: never, whatever the local limit */
	expect_mpa_err(b, sizeof(b), 0xffff, TCP_WIRE_EPDLEN);
	CU_ASSERT_EQUAL(tcp_mpa_need(b, sizeof(b)), TCP_MPA_HDR_LEN);
	b[18] = 0x01;
	b[19] = 0x2c;	/* 300 > our 256 */
	expect_mpa_err(b, sizeof(b), TCP_MPA_PD_LIMIT, TCP_WIRE_EPDLEN);
	n = mpa_base(b);
	expect_mpa_err(b, n, 15, TCP_WIRE_EPDLEN);	/* 16 > 15 */
	CU_ASSERT_EQUAL(tcp_mpa_parse(b, n, 16, &(struct tcp_mpa_frame){0}),
			(int)n);
}

static void test_mpa_reject_irdord(void)
{
	uint8_t b[64];
	struct tcp_mpa_frame f;
	size_t n = mpa_base(b);

	b[19] = 3;	/* E set but only 3 bytes of private data */
	expect_mpa_err(b, n, TCP_MPA_PD_LIMIT, TCP_WIRE_EIRDORD);
	/* In a rev 1 frame E is a reserved bit: ignored. */
	b[17] = 1;
	CU_ASSERT_EQUAL(tcp_mpa_parse(b, n, TCP_MPA_PD_LIMIT, &f), 23);
	CU_ASSERT(!f.enhanced);
	CU_ASSERT_EQUAL(f.pdata_len, 3);
	CU_ASSERT_PTR_EQUAL(f.pdata, b + 20);
}

/*
 * RFC 6581: the responder picks one of the RTR types offered.  A P2P
 * request offering only the Send RTR (B), which we never do, or no type
 * at all, has no answer: refused, not answered with a Write RTR.  A reply
 * is the initiator's business (tcp_handshake.c checks it).
 */
static void test_mpa_reject_no_rtr(void)
{
	uint8_t b[64];
	struct tcp_mpa_frame f;
	size_t n = mpa_base(b);

	b[20] = 0xc0;	/* A + B, IRD 16 */
	b[22] = 0x00;	/* neither C nor D, ORD 16 */
	expect_mpa_err(b, n, TCP_MPA_PD_LIMIT, TCP_WIRE_ENORTR);
	b[20] = 0x80;	/* A alone */
	expect_mpa_err(b, n, TCP_MPA_PD_LIMIT, TCP_WIRE_ENORTR);
	b[22] = 0x40;	/* A + Read */
	CU_ASSERT_EQUAL(tcp_mpa_parse(b, n, TCP_MPA_PD_LIMIT, &f), (int)n);
	CU_ASSERT_EQUAL(f.rtr, TCP_MPA_P2P | TCP_MPA_RTR_READ);
	b[20] = 0x00;	/* no P2P, no RTR: client-server, fine */
	b[22] = 0x00;
	CU_ASSERT_EQUAL(tcp_mpa_parse(b, n, TCP_MPA_PD_LIMIT, &f), (int)n);
	memcpy(b, "MPA ID Rep Frame", 16);	/* a reply is not judged here */
	b[20] = 0xc0;
	CU_ASSERT_EQUAL(tcp_mpa_parse(b, n, TCP_MPA_PD_LIMIT, &f), (int)n);
}

/* RFC 5044 allows 512 bytes of private data: a peer may send them all. */
static void test_mpa_pd_512(void)
{
	uint8_t b[TCP_MPA_FRAME_MAX + 1];
	struct tcp_mpa_frame f;
	size_t n = mpa_base(b);

	memset(b + n, 'x', sizeof(b) - n);
	b[18] = 0x02;
	b[19] = 0x00;
	CU_ASSERT_EQUAL(tcp_mpa_parse(b, TCP_MPA_FRAME_MAX, TCP_MPA_PD_MAX,
				      &f), TCP_MPA_FRAME_MAX);
	CU_ASSERT_EQUAL(f.pdata_len, TCP_MPA_PD_MAX - TCP_MPA_V2_LEN);
	b[19] = 0x01;
	expect_mpa_err(b, sizeof(b), TCP_MPA_PD_MAX, TCP_WIRE_EPDLEN);
}

/* Reserved bits, siw's 0x08 and R in a Request are ignored. */
static void test_mpa_ignored_bits(void)
{
	uint8_t b[64];
	struct tcp_mpa_frame f;
	size_t n = mpa_base(b);

	b[16] |= TCP_MPA_FLAG_R | TCP_MPA_FLAG_SIW_GSO | 0x07;
	CU_ASSERT_EQUAL(tcp_mpa_parse(b, n, TCP_MPA_PD_LIMIT, &f), (int)n);
	CU_ASSERT(!f.reject);
	CU_ASSERT(f.crc);
	CU_ASSERT(f.enhanced);
}

static void test_mpa_build_errors(void)
{
	static const uint8_t pd[TCP_MPA_PD_MAX];
	uint8_t b[TCP_MPA_FRAME_MAX + 8];
	struct tcp_mpa_frame f = { .type = TCP_MPA_REQUEST, .rev = 2,
				   .enhanced = true };
	struct tcp_mpa_frame g;

	g = f, g.type = 0;
	CU_ASSERT_EQUAL(tcp_mpa_build(&g, b, sizeof(b)), RAPT_EINVAL);
	g = f, g.rev = 3;
	CU_ASSERT_EQUAL(tcp_mpa_build(&g, b, sizeof(b)), RAPT_EINVAL);
	g = f, g.rev = 1;
	CU_ASSERT_EQUAL(tcp_mpa_build(&g, b, sizeof(b)), RAPT_EINVAL);
	g = f, g.reject = true;
	CU_ASSERT_EQUAL(tcp_mpa_build(&g, b, sizeof(b)), RAPT_EINVAL);
	g = f, g.ird = 0x4000;
	CU_ASSERT_EQUAL(tcp_mpa_build(&g, b, sizeof(b)), RAPT_EINVAL);
	g = f, g.ord = 0x4000;
	CU_ASSERT_EQUAL(tcp_mpa_build(&g, b, sizeof(b)), RAPT_EINVAL);
	g = f, g.rtr = 0x10;
	CU_ASSERT_EQUAL(tcp_mpa_build(&g, b, sizeof(b)), RAPT_EINVAL);
	g = f, g.pdata_len = 1;
	CU_ASSERT_EQUAL(tcp_mpa_build(&g, b, sizeof(b)), RAPT_EINVAL);
	/* 4 + 508 = 512 fits; 4 + 509 does not. */
	g = f, g.pdata = pd, g.pdata_len = 508;
	CU_ASSERT_EQUAL(tcp_mpa_build(&g, b, sizeof(b)), TCP_MPA_FRAME_MAX);
	g.pdata_len = 509;
	CU_ASSERT_EQUAL(tcp_mpa_build(&g, b, sizeof(b)), RAPT_ELENGTH);
	g = f;
	CU_ASSERT_EQUAL(tcp_mpa_build(&g, b, 23), RAPT_ELENGTH);
}

/* ================================================================== */
/* FPDUs                                                               */
/* ================================================================== */

/* Header fields of the offending FPDUs that the Terminates copy. */
#define SEND_HDR_MSN7 { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0,		\
			0, 0, 0, 7, 0, 0, 0, 0 }
#define RREQ_DDP_MSN3 { 0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1,		\
			0, 0, 0, 3, 0, 0, 0, 0 }
#define RREQ_RDMAP { 0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0x10, 0,		\
		     0, 1, 0, 0, 0, 0, 0, 0x22, 0, 0, 0, 0, 0, 0, 0x20, 0 }

struct fpdu_case {
	const char *name;
	struct tcp_ddp_hdr h;
	const char *payload;
	const char *wire;	/* CRC on; with CRC off the last 4 are 0 */
};

static const struct fpdu_case fpdu_cases[] = {
	{ "Write RTR (siw's bytes)",
	  { .opcode = TCP_RDMAP_WRITE, .last = true, .stag = 1 }, "",
	  "000e c1 40 00000001 0000000000000000 | ebd34c5f" },
	{ "Read RTR (STag 1 for sink and source)",
	  { .opcode = TCP_RDMAP_READ_REQ, .last = true, .qn = 1, .msn = 1,
	    .rreq = { .sink_stag = 1, .src_stag = 1 } }, "",
	  "002e 41 41 00000000 00000001 00000001 00000000"
	  "00000001 0000000000000000 00000000 00000001 0000000000000000"
	  "| 27dbd7e7" },
	{ "Send, last, pad 3",
	  { .opcode = TCP_RDMAP_SEND, .last = true, .msn = 1 }, "hello",
	  "0017 41 43 00000000 00000000 00000001 00000000 68656c6c6f"
	  "| 000000 | b990b10c" },
	{ "Send with SE, pad 1",
	  { .opcode = TCP_RDMAP_SEND_SE, .last = true, .msn = 2 }, "hi!",
	  "0015 41 45 00000000 00000000 00000002 00000000 686921 | 00"
	  "| 01b1dbbc" },
	{ "Send with Invalidate, no pad",
	  { .opcode = TCP_RDMAP_SEND_INV, .last = true, .msn = 3,
	    .inv_stag = 0x12345678 }, "data",
	  "0016 41 44 12345678 00000000 00000003 00000000 64617461"
	  "| 42ff4f33" },
	{ "Send with SE and Invalidate, pad 2",
	  { .opcode = TCP_RDMAP_SEND_SE_INV, .last = true, .msn = 4,
	    .inv_stag = 0xabcdef01 }, "ok",
	  "0014 41 46 abcdef01 00000000 00000004 00000000 6f6b | 0000"
	  "| c9f1d64a" },
	{ "Send, middle segment (L=0, MO 1024)",
	  { .opcode = TCP_RDMAP_SEND, .msn = 5, .mo = 1024 }, "abcd",
	  "0016 01 43 00000000 00000000 00000005 00000400 61626364"
	  "| f2134ebc" },
	{ "RDMA Write, last",
	  { .opcode = TCP_RDMAP_WRITE, .last = true, .stag = 0x1234,
	    .to = 0x100002000ull }, "12345678",
	  "0016 c1 40 00001234 0000000100002000 3132333435363738"
	  "| 1f4eaa4e" },
	{ "RDMA Write, middle segment (L=0)",
	  { .opcode = TCP_RDMAP_WRITE, .stag = 0x1234,
	    .to = 0x100001ffbull }, "xyzab",
	  "0013 81 40 00001234 0000000100001ffb 78797a6162 | 000000"
	  "| 19b71bab" },
	{ "RDMA Read Request",
	  { .opcode = TCP_RDMAP_READ_REQ, .last = true, .qn = 1, .msn = 2,
	    .rreq = { .sink_stag = 0x11, .sink_to = 0x1000,
		      .size = 0x10000, .src_stag = 0x22,
		      .src_to = 0x2000 } }, "",
	  "002e 41 41 00000000 00000001 00000002 00000000"
	  "00000011 0000000000001000 00010000 00000022 0000000000002000"
	  "| 40e525fc" },
	{ "RDMA Read Response, pad 2",
	  { .opcode = TCP_RDMAP_READ_RESP, .last = true, .stag = 0x11,
	    .to = 0x1000 }, "resp!!",
	  "0014 c1 42 00000011 0000000000001000 726573702121 | 0000"
	  "| 24e6bcf9" },
	{ "Terminate, LLP CRC error, no copies",
	  { .opcode = TCP_RDMAP_TERMINATE, .last = true, .qn = 2, .msn = 1,
	    .term = { .layer = TCP_TERM_LAYER_LLP,
		      .ecode = TCP_TERM_LLP_CRC } }, "",
	  "0016 41 47 00000000 00000002 00000001 00000000 | 20 02 00 00"
	  "| 7fe42585" },
	{ "Terminate, DDP untagged no buffer, M+D, Send header copied",
	  { .opcode = TCP_RDMAP_TERMINATE, .last = true, .qn = 2, .msn = 1,
	    .term = { .layer = TCP_TERM_LAYER_DDP,
		      .etype = TCP_TERM_DDP_UNTAGGED,
		      .ecode = TCP_TERM_DDP_U_NO_BUFFER,
		      .hdrct = TCP_TERM_M | TCP_TERM_D, .ddp_seg_len = 5,
		      .ddp_hdr_len = 18, .ddp_hdr = SEND_HDR_MSN7 } }, "",
	  "002a 41 47 00000000 00000002 00000001 00000000 | 12 02 c0 00"
	  "| 0005 | 41 43 00000000 00000000 00000007 00000000"
	  "| a74b3b39" },
	{ "Terminate, RDMAP invalid STag, M+D+R, Read Request copied",
	  { .opcode = TCP_RDMAP_TERMINATE, .last = true, .qn = 2, .msn = 1,
	    .term = { .layer = TCP_TERM_LAYER_RDMAP,
		      .etype = TCP_TERM_RDMAP_PROTECTION,
		      .ecode = TCP_TERM_RDMAP_INVALID_STAG,
		      .hdrct = TCP_TERM_M | TCP_TERM_D | TCP_TERM_R,
		      .ddp_seg_len = 0x2e, .ddp_hdr_len = 18,
		      .ddp_hdr = RREQ_DDP_MSN3, .rdmap_hdr = RREQ_RDMAP } }, "",
	  "0046 41 47 00000000 00000002 00000001 00000000 | 01 00 e0 00"
	  "| 002e | 41 41 00000000 00000001 00000003 00000000"
	  "| 00000011 0000000000001000 00010000 00000022 0000000000002000"
	  "| 96df91bf" },
};

#define NFPDU (sizeof(fpdu_cases) / sizeof(fpdu_cases[0]))

static void assert_term_equal(const struct tcp_term *a,
			      const struct tcp_term *b)
{
	CU_ASSERT_EQUAL(a->layer, b->layer);
	CU_ASSERT_EQUAL(a->etype, b->etype);
	CU_ASSERT_EQUAL(a->ecode, b->ecode);
	CU_ASSERT_EQUAL(a->hdrct, b->hdrct);
	CU_ASSERT_EQUAL(a->ddp_seg_len, b->ddp_seg_len);
	CU_ASSERT_EQUAL_FATAL(a->ddp_hdr_len, b->ddp_hdr_len);
	CU_ASSERT(!memcmp(a->ddp_hdr, b->ddp_hdr, a->ddp_hdr_len));
	if (a->hdrct & TCP_TERM_R)
		CU_ASSERT(!memcmp(a->rdmap_hdr, b->rdmap_hdr,
				  TCP_RDMAP_RREQ_LEN));
}

static void assert_hdr_equal(const struct tcp_ddp_hdr *a,
			     const struct tcp_ddp_hdr *b)
{
	CU_ASSERT_EQUAL(a->opcode, b->opcode);
	CU_ASSERT_EQUAL(a->last, b->last);
	CU_ASSERT_EQUAL(a->stag, b->stag);
	CU_ASSERT_EQUAL(a->to, b->to);
	CU_ASSERT_EQUAL(a->inv_stag, b->inv_stag);
	CU_ASSERT_EQUAL(a->qn, b->qn);
	CU_ASSERT_EQUAL(a->msn, b->msn);
	CU_ASSERT_EQUAL(a->mo, b->mo);
	CU_ASSERT_EQUAL(a->rreq.sink_stag, b->rreq.sink_stag);
	CU_ASSERT_EQUAL(a->rreq.sink_to, b->rreq.sink_to);
	CU_ASSERT_EQUAL(a->rreq.size, b->rreq.size);
	CU_ASSERT_EQUAL(a->rreq.src_stag, b->rreq.src_stag);
	CU_ASSERT_EQUAL(a->rreq.src_to, b->rreq.src_to);
	assert_term_equal(&a->term, &b->term);
}

static void check_fpdu_case(const struct fpdu_case *c)
{
	uint8_t want[BUF_MAX], got[BUF_MAX];
	size_t n = unhex(c->wire, want), plen = strlen(c->payload);
	struct tcp_ddp_hdr h;
	int ret;

	/* Encode, CRC on. */
	memset(got, 0xa5, sizeof(got));
	ret = tcp_fpdu_build(&c->h, c->payload, plen, true, got, sizeof(got));
	CU_ASSERT_EQUAL(ret, (int)n);
	assert_bytes(c->name, got, want, n);
	CU_ASSERT_EQUAL(got[n], 0xa5);
	CU_ASSERT_EQUAL(tcp_fpdu_build(&c->h, c->payload, plen, true, got,
				       n - 1), RAPT_ELENGTH);

	/* Encode, CRC off: same bytes, zero CRC field. */
	ret = tcp_fpdu_build(&c->h, c->payload, plen, false, got, n);
	CU_ASSERT_EQUAL(ret, (int)n);
	assert_bytes(c->name, got, want, n - 4);
	CU_ASSERT(!memcmp(got + n - 4, "\0\0\0\0", 4));

	/* Decode. */
	CU_ASSERT_EQUAL(tcp_fpdu_len(tcp_get_be16(want)), n);
	ret = tcp_fpdu_parse(want, n, true, &h);
	CU_ASSERT_EQUAL_FATAL(ret, (int)n);
	assert_hdr_equal(&h, &c->h);
	CU_ASSERT_EQUAL(h.ulpdu_len, tcp_get_be16(want));
	CU_ASSERT_EQUAL(h.payload_len, plen);
	CU_ASSERT_EQUAL(h.hdr_len + h.payload_len, 2 + h.ulpdu_len);
	CU_ASSERT(!memcmp(want + h.hdr_len, c->payload, plen));
	CU_ASSERT_EQUAL(tcp_ddp_hdr_need(want, 4), h.hdr_len);
	CU_ASSERT_EQUAL(tcp_ddp_parse_hdr(want, h.hdr_len, &h), h.hdr_len);
	/* A zeroed CRC field parses when CRC is off. */
	CU_ASSERT_EQUAL(tcp_fpdu_parse(got, n, false, &h), (int)n);
}

static void test_fpdu_golden(void)
{
	size_t i;

	for (i = 0; i < NFPDU; i++)
		check_fpdu_case(&fpdu_cases[i]);
}

/*
 * The data path's way: header into its own buffer, payload from the
 * user's iovecs, the CRC chained across them, then tcp_fpdu_trailer().
 */
static void test_fpdu_split_tx(void)
{
	const struct fpdu_case *c = &fpdu_cases[2];	/* Send "hello" */
	uint8_t want[BUF_MAX], hdr[TCP_FPDU_HDR_MAX], trl[8], all[BUF_MAX];
	size_t n = unhex(c->wire, want);
	unsigned int tlen;
	uint32_t crc;
	int hlen;

	hlen = tcp_ddp_build_hdr(&c->h, 5, hdr, sizeof(hdr));
	CU_ASSERT_EQUAL_FATAL(hlen, 20);
	crc = tcp_crc32c(0, hdr, hlen);
	crc = tcp_crc32c(crc, "he", 2);
	crc = tcp_crc32c(crc, "llo", 3);
	tlen = tcp_fpdu_trailer(18 + 5, true, crc, trl);
	CU_ASSERT_EQUAL_FATAL(tlen, 7);
	memcpy(all, hdr, hlen);
	memcpy(all + hlen, "hello", 5);
	memcpy(all + hlen + 5, trl, tlen);
	CU_ASSERT_EQUAL(hlen + 5 + tlen, n);
	assert_bytes("split tx", all, want, n);
	CU_ASSERT_EQUAL(tcp_fpdu_check_crc(tcp_crc32c(0, want, n - 4),
					   want + n - 4), 0);
}

static void test_fpdu_rtr(void)
{
	uint8_t want[BUF_MAX], got[BUF_MAX];
	size_t n;

	n = unhex(fpdu_cases[0].wire, want);
	CU_ASSERT_EQUAL(tcp_fpdu_build_rtr(TCP_MPA_RTR_WRITE, 7, true, got,
					   sizeof(got)), (int)n);
	assert_bytes("write rtr", got, want, n);
	n = unhex(fpdu_cases[1].wire, want);
	CU_ASSERT_EQUAL(tcp_fpdu_build_rtr(TCP_MPA_RTR_READ, 1, true, got,
					   sizeof(got)), (int)n);
	assert_bytes("read rtr", got, want, n);
	CU_ASSERT_EQUAL(tcp_fpdu_build_rtr(TCP_MPA_RTR_SEND, 1, true, got,
					   sizeof(got)), RAPT_EINVAL);
	CU_ASSERT_EQUAL(tcp_fpdu_build_rtr(TCP_MPA_P2P, 1, true, got,
					   sizeof(got)), RAPT_EINVAL);
	CU_ASSERT_EQUAL(tcp_fpdu_build_rtr(TCP_MPA_RTR_WRITE, 1, true, got,
					   19), RAPT_ELENGTH);
}

/* siw's own Read RTR has sink STag 0: we must accept it. */
static void test_fpdu_siw_read_rtr(void)
{
	uint8_t b[BUF_MAX];
	struct tcp_ddp_hdr h;
	size_t n;

	n = unhex("002e 41 41 00000000 00000001 00000001 00000000"
		  "00000000 0000000000000000 00000000 00000001 0000000000000000"
		  "| ba10e3c9", b);
	CU_ASSERT_EQUAL_FATAL(tcp_fpdu_parse(b, n, true, &h), 52);
	CU_ASSERT_EQUAL(h.opcode, TCP_RDMAP_READ_REQ);
	CU_ASSERT_EQUAL(h.qn, 1);
	CU_ASSERT_EQUAL(h.msn, 1);
	CU_ASSERT_EQUAL(h.rreq.sink_stag, 0);
	CU_ASSERT_EQUAL(h.rreq.src_stag, 1);
	CU_ASSERT_EQUAL(h.rreq.size, 0);
	CU_ASSERT_EQUAL(h.payload_len, 0);
}

static void test_term_copy_hdr(void)
{
	const struct fpdu_case *tc = &fpdu_cases[12], *rc = &fpdu_cases[13];
	uint8_t send[BUF_MAX], rreq[BUF_MAX];
	struct tcp_term t = { .layer = TCP_TERM_LAYER_DDP,
			      .etype = TCP_TERM_DDP_UNTAGGED,
			      .ecode = TCP_TERM_DDP_U_NO_BUFFER };

	/* The offending Send, MSN 7, 5 payload bytes. */
	unhex("0017 41 43 00000000 00000000 00000007 00000000", send);
	CU_ASSERT_EQUAL(tcp_term_copy_hdr(&t, send, 20, 5, false), 0);
	assert_term_equal(&t, &tc->h.term);

	/* The offending Read Request, MSN 3. */
	unhex("002e 41 41 00000000 00000001 00000003 00000000"
	      "00000011 0000000000001000 00010000 00000022 0000000000002000",
	      rreq);
	memset(&t, 0, sizeof(t));
	t.etype = TCP_TERM_RDMAP_PROTECTION;
	CU_ASSERT_EQUAL(tcp_term_copy_hdr(&t, rreq, 48, 0x2e, true), 0);
	assert_term_equal(&t, &rc->h.term);

	CU_ASSERT_EQUAL(tcp_term_copy_hdr(&t, send, 20, 5, true),
			RAPT_EINVAL);
	CU_ASSERT_EQUAL(tcp_term_copy_hdr(&t, send, 19, 5, false),
			RAPT_EINVAL);
	CU_ASSERT_EQUAL(tcp_term_copy_hdr(&t, rreq, 47, 0, true),
			RAPT_EINVAL);
	CU_ASSERT_EQUAL(tcp_term_copy_hdr(&t, send, 3, 0, false),
			RAPT_EINVAL);
}

/* siw sets R for a Send's protection error but copies no RDMAP header. */
static void test_term_siw_r_quirk(void)
{
	uint8_t b[BUF_MAX];
	struct tcp_ddp_hdr h;
	size_t n;

	n = unhex("002a 41 47 00000000 00000002 00000001 00000000 | 01 00 e0 00"
		  "| 0004 | 41 44 00000099 00000000 00000001 00000000"
		  "| 00000000", b);
	CU_ASSERT_EQUAL_FATAL(tcp_fpdu_parse(b, n, false, &h), 48);
	CU_ASSERT_EQUAL(h.term.hdrct, TCP_TERM_M | TCP_TERM_D);
	CU_ASSERT_EQUAL(h.term.ddp_hdr_len, 18);
	CU_ASSERT_EQUAL(h.term.ddp_hdr[1], 0x44);
	CU_ASSERT_EQUAL(h.term.ddp_seg_len, 4);
}

static void expect_hdr_err(const uint8_t *b, size_t len, int want)
{
	struct tcp_ddp_hdr h, sentinel;
	int ret;

	memset(&h, 0x5a, sizeof(h));
	sentinel = h;
	ret = tcp_ddp_parse_hdr(b, len, &h);
	if (ret != want)
		printf("\n  got %d (%s), want %s\n", ret,
		       tcp_wire_err_name(ret), tcp_wire_err_name(want));
	CU_ASSERT_EQUAL(ret, want);
	CU_ASSERT(!memcmp(&h, &sentinel, sizeof(h)));
	/* A bad header never asks for more than its first 4 bytes. */
	if (want != TCP_WIRE_ETRUNC)
		CU_ASSERT_EQUAL(tcp_ddp_hdr_need(b, len), 4);
}

static size_t load(unsigned int i, uint8_t *b)
{
	CU_ASSERT_FATAL(i < NFPDU);
	return unhex(fpdu_cases[i].wire, b);
}

static void test_fpdu_reject_truncated(void)
{
	uint8_t b[BUF_MAX];
	struct tcp_ddp_hdr h;
	size_t i, n, len;

	for (i = 0; i < NFPDU; i++) {
		unsigned int need;

		n = load(i, b);
		need = tcp_ddp_hdr_need(b, n);
		for (len = 0; len < need; len++)
			expect_hdr_err(b, len, TCP_WIRE_ETRUNC);
		CU_ASSERT_EQUAL(tcp_ddp_hdr_need(b, 3), 4);
		CU_ASSERT_EQUAL(tcp_fpdu_parse(b, n - 1, true, &h),
				TCP_WIRE_ETRUNC);
	}
}

static void test_fpdu_reject_versions(void)
{
	uint8_t b[BUF_MAX];
	size_t n = load(2, b);	/* Send */
	unsigned int v;

	for (v = 0; v < 4; v++) {
		if (v == 1)
			continue;
		n = load(2, b);
		b[2] = (uint8_t)((b[2] & ~TCP_DDP_DV_MASK) | v);
		expect_hdr_err(b, n, TCP_WIRE_EDDPVER);
		n = load(2, b);
		b[3] = (uint8_t)((b[3] & ~TCP_RDMAP_RV_MASK) | v << 6);
		expect_hdr_err(b, n, TCP_WIRE_ERDMAPVER);
	}
}

static void test_fpdu_reject_opcode(void)
{
	uint8_t b[BUF_MAX];
	size_t n;
	unsigned int op;

	/* Atomics (RFC 7306) and the reserved rest. */
	for (op = 8; op < 16; op++) {
		n = load(2, b);
		b[3] = (uint8_t)(0x40 | op);
		expect_hdr_err(b, n, TCP_WIRE_EOPCODE);
		n = load(7, b);
		b[3] = (uint8_t)(0x40 | op);
		expect_hdr_err(b, n, TCP_WIRE_EOPCODE);
	}
}

static void test_fpdu_reject_flags(void)
{
	uint8_t b[BUF_MAX];
	size_t n;

	n = load(2, b);		/* Send marked tagged */
	b[2] |= TCP_DDP_FLAG_T;
	expect_hdr_err(b, n, TCP_WIRE_EFLAGS);
	n = load(7, b);		/* Write marked untagged */
	b[2] &= ~TCP_DDP_FLAG_T;
	expect_hdr_err(b, n, TCP_WIRE_EFLAGS);
	n = load(10, b);	/* Read Response marked untagged */
	b[2] &= ~TCP_DDP_FLAG_T;
	expect_hdr_err(b, n, TCP_WIRE_EFLAGS);
	n = load(9, b);		/* Read Request without L */
	b[2] &= ~TCP_DDP_FLAG_L;
	expect_hdr_err(b, n, TCP_WIRE_EFLAGS);
	n = load(11, b);	/* Terminate without L */
	b[2] &= ~TCP_DDP_FLAG_L;
	expect_hdr_err(b, n, TCP_WIRE_EFLAGS);
}

static void set_ulpdu(uint8_t *b, unsigned int v)
{
	tcp_put_be16(b, (uint16_t)v);
}

static void test_fpdu_reject_ulpdu_len(void)
{
	uint8_t b[BUF_MAX];
	size_t n;

	n = load(2, b);
	set_ulpdu(b, 17);	/* Send header is 18 */
	expect_hdr_err(b, n, TCP_WIRE_EULPDULEN);
	set_ulpdu(b, 0);
	expect_hdr_err(b, n, TCP_WIRE_EULPDULEN);
	n = load(7, b);
	set_ulpdu(b, 13);	/* Write header is 14 */
	expect_hdr_err(b, n, TCP_WIRE_EULPDULEN);
	n = load(9, b);
	set_ulpdu(b, 45);	/* Read Request is exactly 46 */
	expect_hdr_err(b, n, TCP_WIRE_EULPDULEN);
	set_ulpdu(b, 47);
	expect_hdr_err(b, n, TCP_WIRE_EULPDULEN);
	n = load(11, b);
	/* Shorter than any DDP header: whatever the bytes where the
	 * control bytes would be say, it is a length error (the DDP
	 * catastrophic Terminate), not a version or opcode error. */
	n = load(2, b);
	b[2] = 0x00;		/* DDP version 0 */
	b[3] = 0x00;		/* RDMAP version 0 */
	set_ulpdu(b, 1);
	expect_hdr_err(b, n, TCP_WIRE_EULPDULEN);
	set_ulpdu(b, 13);
	expect_hdr_err(b, n, TCP_WIRE_EULPDULEN);
	n = load(11, b);
	set_ulpdu(b, 21);	/* Terminate is at least 22 */
	expect_hdr_err(b, n, TCP_WIRE_EULPDULEN);
	set_ulpdu(b, 71);	/* and at most 70 */
	expect_hdr_err(b, n, TCP_WIRE_EULPDULEN);
	/* D set, but no room for the copied DDP header. */
	n = load(12, b);
	set_ulpdu(b, 22 + 2 + 17);
	CU_ASSERT_EQUAL(tcp_ddp_parse_hdr(b, n, &(struct tcp_ddp_hdr){0}),
			TCP_WIRE_EULPDULEN);
	set_ulpdu(b, 22);
	CU_ASSERT_EQUAL(tcp_ddp_parse_hdr(b, n, &(struct tcp_ddp_hdr){0}),
			TCP_WIRE_EULPDULEN);
}

static void test_fpdu_reject_qn(void)
{
	uint8_t b[BUF_MAX];
	struct tcp_ddp_hdr h;
	size_t n;

	n = load(2, b);
	b[11] = 1;		/* Send on the Read Request queue */
	CU_ASSERT_EQUAL(tcp_ddp_parse_hdr(b, n, &h), TCP_WIRE_EQN);
	n = load(9, b);
	b[11] = 0;		/* Read Request on the Send queue */
	CU_ASSERT_EQUAL(tcp_ddp_parse_hdr(b, n, &h), TCP_WIRE_EQN);
	n = load(11, b);
	b[11] = 3;		/* Terminate on a queue that does not exist */
	CU_ASSERT_EQUAL(tcp_ddp_parse_hdr(b, n, &h), TCP_WIRE_EQN);
}

static void test_fpdu_reject_crc(void)
{
	uint8_t b[BUF_MAX];
	struct tcp_ddp_hdr h, sentinel;
	size_t n, i;
	uint8_t t;

	memset(&h, 0x5a, sizeof(h));
	sentinel = h;
	n = load(2, b);
	b[20] ^= 0x01;		/* one payload bit */
	CU_ASSERT_EQUAL(tcp_fpdu_parse(b, n, true, &h), TCP_WIRE_ECRC);
	CU_ASSERT(!memcmp(&h, &sentinel, sizeof(h)));
	CU_ASSERT_EQUAL(tcp_fpdu_parse(b, n, false, &h), (int)n);
	n = load(2, b);
	b[25] = 1;		/* a pad byte is covered too */
	CU_ASSERT_EQUAL(tcp_fpdu_parse(b, n, true, &h), TCP_WIRE_ECRC);
	/* The CRC sent big-endian: the byte-order trap. */
	for (i = 0; i < NFPDU; i++) {
		n = load(i, b);
		t = b[n - 4], b[n - 4] = b[n - 1], b[n - 1] = t;
		t = b[n - 3], b[n - 3] = b[n - 2], b[n - 2] = t;
		CU_ASSERT_EQUAL(tcp_fpdu_parse(b, n, true, &h),
				TCP_WIRE_ECRC);
	}
}

static void test_fpdu_build_errors(void)
{
	static uint8_t b[70000], pl[65536];
	struct tcp_ddp_hdr h = { .opcode = TCP_RDMAP_SEND, .last = true };
	struct tcp_ddp_hdr t = { .opcode = TCP_RDMAP_TERMINATE };

	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&h, 65535 - 18, b, 20), 20);
	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&h, 65535 - 17, b, 20),
			RAPT_ELENGTH);
	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&h, 0, b, 19), RAPT_ELENGTH);
	CU_ASSERT_EQUAL(tcp_fpdu_build(&h, pl, 65535 - 18, true, b,
				       sizeof(b)), 65544);
	h.opcode = 8;
	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&h, 0, b, 64), RAPT_EINVAL);
	CU_ASSERT_EQUAL(tcp_ddp_hdr_size(8), RAPT_EINVAL);
	CU_ASSERT_EQUAL(tcp_ddp_hdr_size(TCP_RDMAP_WRITE), 14);
	CU_ASSERT_EQUAL(tcp_ddp_hdr_size(TCP_RDMAP_READ_REQ), 46);
	CU_ASSERT_EQUAL(tcp_ddp_hdr_size(TCP_RDMAP_READ_RESP), 14);
	CU_ASSERT_EQUAL(tcp_ddp_hdr_size(TCP_RDMAP_SEND_SE_INV), 18);
	CU_ASSERT_EQUAL(tcp_ddp_hdr_size(TCP_RDMAP_TERMINATE), 22);
	h.opcode = TCP_RDMAP_READ_REQ;
	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&h, 1, b, 64), RAPT_EINVAL);
	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&t, 1, b, 64), RAPT_EINVAL);
	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&t, 0, b, 23), RAPT_ELENGTH);
	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&t, 0, b, 24), 24);
	t.term.hdrct = TCP_TERM_M;		/* M without D */
	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&t, 0, b, 80), RAPT_EINVAL);
	t.term.hdrct = 0x10;			/* reserved bit */
	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&t, 0, b, 80), RAPT_EINVAL);
	t.term.hdrct = TCP_TERM_D;		/* untagged copy says 14 */
	t.term.ddp_hdr_len = 14;
	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&t, 0, b, 80), RAPT_EINVAL);
	t.term.ddp_hdr[0] = 0xc1;		/* now it is tagged */
	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&t, 0, b, 80), 2 + 22 + 2 + 14);
	t.term.hdrct = 0;
	t.term.layer = 16;
	CU_ASSERT_EQUAL(tcp_ddp_build_hdr(&t, 0, b, 80), RAPT_EINVAL);
}

/* ================================================================== */
/* Error codes                                                         */
/* ================================================================== */

static const int all_errs[] = {
#define ERR_LIST(name, val, msg) TCP_WIRE_##name,
	TCP_WIRE_ERRNO_MAP(ERR_LIST)
#undef ERR_LIST
};

#define NERR (sizeof(all_errs) / sizeof(all_errs[0]))

static void test_err_strings(void)
{
	const char *unknown = tcp_wire_strerror(12345);
	size_t i, j;

	for (i = 0; i < NERR; i++) {
		CU_ASSERT(all_errs[i] < RAPT_EPROTO - 100);
		CU_ASSERT_STRING_NOT_EQUAL(tcp_wire_strerror(all_errs[i]),
					   unknown);
		CU_ASSERT_STRING_NOT_EQUAL(tcp_wire_err_name(all_errs[i]),
					   "?");
		for (j = 0; j < i; j++)
			CU_ASSERT_NOT_EQUAL(all_errs[i], all_errs[j]);
	}
	CU_ASSERT_STRING_EQUAL(tcp_wire_err_name(TCP_WIRE_ECRC),
			       "TCP_WIRE_ECRC");
	CU_ASSERT_STRING_NOT_EQUAL(tcp_wire_strerror(RAPT_ELENGTH), unknown);
}

static void test_err_to_rapt(void)
{
	size_t i;

	CU_ASSERT_EQUAL(tcp_wire_err_to_rapt(TCP_WIRE_EREV), RAPT_EVERSION);
	CU_ASSERT_EQUAL(tcp_wire_err_to_rapt(TCP_WIRE_EDDPVER),
			RAPT_EVERSION);
	CU_ASSERT_EQUAL(tcp_wire_err_to_rapt(TCP_WIRE_EMARKERS),
			RAPT_ENOTSUP);
	CU_ASSERT_EQUAL(tcp_wire_err_to_rapt(TCP_WIRE_EPDLEN), RAPT_ELENGTH);
	CU_ASSERT_EQUAL(tcp_wire_err_to_rapt(TCP_WIRE_ECRC), RAPT_EPROTO);
	CU_ASSERT_EQUAL(tcp_wire_err_to_rapt(RAPT_EINVAL), RAPT_EINVAL);
	CU_ASSERT_EQUAL(tcp_wire_err_to_rapt(0), 0);
	for (i = 0; i < NERR; i++) {
		int r = tcp_wire_err_to_rapt(all_errs[i]);

		CU_ASSERT(r < 0 && r >= RAPT_EPROTO);
	}
}

static void expect_term(int err, uint8_t ctrl, unsigned int layer,
			unsigned int etype, unsigned int ecode)
{
	struct tcp_term t;

	memset(&t, 0xff, sizeof(t));
	CU_ASSERT_EQUAL_FATAL(tcp_wire_err_term(err, ctrl, &t), 0);
	CU_ASSERT_EQUAL(t.layer, layer);
	CU_ASSERT_EQUAL(t.etype, etype);
	CU_ASSERT_EQUAL(t.ecode, ecode);
	CU_ASSERT_EQUAL(t.hdrct, 0);
}

static void test_err_term(void)
{
	struct tcp_term t;

	expect_term(TCP_WIRE_ECRC, 0, 2, 0, 2);
	expect_term(TCP_WIRE_EKEY, 0, 2, 0, 4);
	expect_term(TCP_WIRE_EMARKERS, 0, 2, 0, 4);
	expect_term(TCP_WIRE_EDDPVER, 0xc2, 1, 1, 4);
	expect_term(TCP_WIRE_EDDPVER, 0x42, 1, 2, 6);
	expect_term(TCP_WIRE_ERDMAPVER, 0x41, 0, 2, 5);
	expect_term(TCP_WIRE_EOPCODE, 0x41, 0, 2, 6);
	expect_term(TCP_WIRE_EFLAGS, 0xc1, 0, 2, 6);
	expect_term(TCP_WIRE_EQN, 0x41, 1, 2, 1);
	expect_term(TCP_WIRE_EULPDULEN, 0x41, 1, 0, 0);
	expect_term(TCP_WIRE_ENORTR, 0, 2, 0, 7);
	CU_ASSERT_EQUAL(tcp_wire_err_term(TCP_WIRE_ETRUNC, 0, &t),
			RAPT_EINVAL);
	CU_ASSERT_EQUAL(tcp_wire_err_term(RAPT_EINVAL, 0, &t), RAPT_EINVAL);
}

/* ================================================================== */

static const struct test_case crc_cases[] = {
	{ "RFC 3720 B.4 vectors", test_crc_vectors },
	{ "RFC 3720 B.4 iSCSI read PDU", test_crc_iscsi_pdu },
	{ "hardware == table, len 0..4096 x align 0..7",
	  test_crc_hw_sw_agree },
	{ "chaining", test_crc_chaining },
	{ NULL, NULL },
};

static const struct test_case mpa_tests[] = {
	{ "golden bytes + round trip", test_mpa_golden },
	{ "reject truncated", test_mpa_reject_truncated },
	{ "reject bad key", test_mpa_reject_key },
	{ "reject M=1, bad rev", test_mpa_reject_markers_rev },
	{ "reject pdata too long", test_mpa_reject_pdlen },
	{ "reject short IRD/ORD", test_mpa_reject_irdord },
	{ "reject a P2P request with no Write/Read RTR",
	  test_mpa_reject_no_rtr },
	{ "512 bytes of private data", test_mpa_pd_512 },
	{ "ignore reserved bits", test_mpa_ignored_bits },
	{ "encoder argument errors", test_mpa_build_errors },
	{ NULL, NULL },
};

static const struct test_case fpdu_tests[] = {
	{ "golden bytes + round trip, every opcode", test_fpdu_golden },
	{ "header / iovec / trailer TX", test_fpdu_split_tx },
	{ "RTR builder", test_fpdu_rtr },
	{ "siw's Read RTR (sink STag 0)", test_fpdu_siw_read_rtr },
	{ "Terminate header copies", test_term_copy_hdr },
	{ "Terminate: siw's R without RDMAP copy", test_term_siw_r_quirk },
	{ "reject truncated", test_fpdu_reject_truncated },
	{ "reject DDP/RDMAP version", test_fpdu_reject_versions },
	{ "reject unknown opcode", test_fpdu_reject_opcode },
	{ "reject T/L flags", test_fpdu_reject_flags },
	{ "reject ULPDU length", test_fpdu_reject_ulpdu_len },
	{ "reject queue number", test_fpdu_reject_qn },
	{ "reject bad CRC", test_fpdu_reject_crc },
	{ "encoder argument errors", test_fpdu_build_errors },
	{ NULL, NULL },
};

static const struct test_case err_tests[] = {
	{ "strings and names", test_err_strings },
	{ "to RAPT_E*", test_err_to_rapt },
	{ "to Terminate codes", test_err_term },
	{ NULL, NULL },
};

static const struct test_suite suites[] = {
	{ "crc32c", crc_cases },
	{ "mpa", mpa_tests },
	{ "fpdu", fpdu_tests },
	{ "errors", err_tests },
};

int main(void)
{
	return cu_table_run(suites, sizeof(suites) / sizeof(suites[0]));
}
