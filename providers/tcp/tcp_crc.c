/* SPDX-License-Identifier: MIT */
/*
 * tcp provider: CRC32c (Castagnoli) for MPA FPDUs.
 *
 * Two implementations that must agree bit for bit: the SSE4.2 crc32
 * instruction (about 9 GB/s per core here, one dependency chain) and a
 * slicing-by-8 table (about 1.5 GB/s).  The choice is made once, at load
 * time, from the CPU's feature bits; the hardware path is compiled with a
 * target attribute so the rest of the provider needs no -msse4.2.
 *
 * Internally the CRC runs "raw" (no pre/post inversion); the exported
 * functions take and return finished CRCs so callers can chain calls.
 */
#include "config.h"

#include <string.h>

#include "tcp_wire.h"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define TCP_CRC_HAVE_X86 1
#else
#define TCP_CRC_HAVE_X86 0
#endif

/* Reflected Castagnoli polynomial 0x1EDC6F41. */
#define CRC32C_POLY_REFLECTED	0x82f63b78u

typedef uint32_t (*crc_raw_fn)(uint32_t crc, const uint8_t *p, size_t len);

/* crc_tab[k][b]: CRC of byte b followed by k zero bytes. */
static uint32_t crc_tab[8][256];
static bool crc_hw_ok;

static uint32_t crc_sw_raw(uint32_t crc, const uint8_t *p, size_t len);
static crc_raw_fn crc_impl = crc_sw_raw;

static uint32_t load_le32(const uint8_t *p)
{
	return tcp_get_le32(p);
}

static uint32_t crc_sw_bytes(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* Slicing-by-8: eight table lookups per 8 input bytes. */
static uint32_t crc_sw_raw(uint32_t crc, const uint8_t *p, size_t len)
{
	size_t head = (8 - ((uintptr_t)p & 7)) & 7;

	if (head > len)
		head = len;
	crc = crc_sw_bytes(crc, p, head);
	p += head;
	len -= head;

	for (; len >= 8; p += 8, len -= 8) {
		uint32_t lo = crc ^ load_le32(p);
		uint32_t hi = load_le32(p + 4);

		crc = crc_tab[7][lo & 0xff] ^
		      crc_tab[6][(lo >> 8) & 0xff] ^
		      crc_tab[5][(lo >> 16) & 0xff] ^
		      crc_tab[4][lo >> 24] ^
		      crc_tab[3][hi & 0xff] ^
		      crc_tab[2][(hi >> 8) & 0xff] ^
		      crc_tab[1][(hi >> 16) & 0xff] ^
		      crc_tab[0][hi >> 24];
	}
	return crc_sw_bytes(crc, p, len);
}

#if TCP_CRC_HAVE_X86
__attribute__((target("sse4.2")))
static uint32_t crc_hw_raw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c;

	/* Align so the 8-byte loads never straddle a cache line. */
	for (; len && ((uintptr_t)p & 7); len--)
		crc = _mm_crc32_u8(crc, *p++);

	c = crc;
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v;

		memcpy(&v, p, sizeof(v));
		c = _mm_crc32_u64(c, v);
	}
	crc = (uint32_t)c;

	for (; len; len--)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}

static bool crc_cpu_has_hw(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
}
#else
/* No crc32 instruction known here: the "hardware" path is the table. */
static uint32_t crc_hw_raw(uint32_t crc, const uint8_t *p, size_t len)
{
	return crc_sw_raw(crc, p, len);
}

static bool crc_cpu_has_hw(void)
{
	return false;
}
#endif

static void crc_tables_init(void)
{
	unsigned int b, k;

	for (b = 0; b < 256; b++) {
		uint32_t c = b;

		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY_REFLECTED & -(c & 1));
		crc_tab[0][b] = c;
	}
	for (k = 1; k < 8; k++)
		for (b = 0; b < 256; b++)
			crc_tab[k][b] = (crc_tab[k - 1][b] >> 8) ^
					crc_tab[0][crc_tab[k - 1][b] & 0xff];
}

/*
 * Runs at load time, before any thread of the process can call in, so the
 * tables and the chosen implementation need no locking afterwards.
 */
__attribute__((constructor))
static void tcp_crc_init(void)
{
	crc_tables_init();
	crc_hw_ok = crc_cpu_has_hw();
	crc_impl = crc_hw_ok ? crc_hw_raw : crc_sw_raw;
}

/**
 * tcp_crc32c - extend a CRC32c over @len bytes at @buf
 * @crc: CRC of the bytes before @buf (0 to start)
 * @buf: data
 * @len: bytes
 *
 * Uses the fastest implementation this CPU supports.
 *
 * Return: the CRC32c of the preceding bytes and @buf.
 */
uint32_t tcp_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return ~crc_impl(~crc, buf, len);
}

/**
 * tcp_crc32c_sw - tcp_crc32c() through the slicing-by-8 table
 * @crc: CRC of the bytes before @buf (0 to start)
 * @buf: data
 * @len: bytes
 *
 * Return: the CRC32c of the preceding bytes and @buf.
 */
uint32_t tcp_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	return ~crc_sw_raw(~crc, buf, len);
}

/**
 * tcp_crc32c_hw - tcp_crc32c() through the CPU's crc32 instruction
 * @crc: CRC of the bytes before @buf (0 to start)
 * @buf: data
 * @len: bytes
 *
 * Falls back to the table when tcp_crc32c_has_hw() is false.
 *
 * Return: the CRC32c of the preceding bytes and @buf.
 */
uint32_t tcp_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	if (!crc_hw_ok)
		return tcp_crc32c_sw(crc, buf, len);
	return ~crc_hw_raw(~crc, buf, len);
}

/**
 * tcp_crc32c_has_hw - whether tcp_crc32c() uses a CRC instruction
 *
 * Return: true if this CPU has SSE4.2 (x86) and tcp_crc32c() uses it.
 */
bool tcp_crc32c_has_hw(void)
{
	return crc_hw_ok;
}

/**
 * tcp_crc32c_impl - name of the implementation tcp_crc32c() uses
 *
 * Return: "sse4.2" or "slice8", for logs and rapt_info.
 */
const char *tcp_crc32c_impl(void)
{
	return crc_hw_ok ? "sse4.2" : "slice8";
}
