/* SPDX-License-Identifier: MIT */
/*
 * Private-data framing.
 *
 * rapt puts a 4-byte header in front of the consumer's private data:
 *
 *   byte 0-1  magic 0xa7 0x52
 *   byte 2    version (high nibble) | kind (low nibble, enum rapt_pdata_kind)
 *   byte 3    exact length of the consumer bytes that follow
 *
 * The length is needed because IB pads private data to the field size; the
 * kind tells a consumer's reject from rapt's own BUSY/VERSION rejects, which
 * iWARP cannot tell apart on the wire.  Private data that does not start
 * with the magic came from a foreign peer and is delivered as it arrived.
 * A rapt peer always sends the header (4 bytes with no consumer bytes), so
 * empty private data is foreign too: rapt_tcp(7) promises that an empty
 * request from a non-rapt peer is answered raw.
 */
#include "config.h"

#include <string.h>

#include "rapt_int.h"

_Static_assert(RAPT_PDATA_HEADER_LEN == 4, "header layout is 4 bytes");

RAPT_SDK size_t rapt_prov_pdata_frame(uint32_t kind, const void *data,
				      size_t len, void *out)
{
	uint8_t *b = out;

	b[0] = RAPT_PDATA_MAGIC0;
	b[1] = RAPT_PDATA_MAGIC1;
	b[2] = (uint8_t)((RAPT_PDATA_HDR_VERSION << 4) | (kind & 0xf));
	b[3] = (uint8_t)len;
	if (len)
		memcpy(b + RAPT_PDATA_HEADER_LEN, data, len);
	return len + RAPT_PDATA_HEADER_LEN;
}

RAPT_SDK size_t rapt_prov_pdata_end(const void *buf, size_t len)
{
	struct rapt_pdata_view v;

	if (rapt_prov_pdata_parse(buf, len, &v) || v.foreign)
		return 0;
	return RAPT_PDATA_HEADER_LEN + v.len;
}

RAPT_SDK int rapt_prov_pdata_parse(const void *buf, size_t len,
				   struct rapt_pdata_view *view)
{
	const uint8_t *b = buf;
	size_t plen;

	memset(view, 0, sizeof(*view));
	view->data = buf;
	view->len = len;
	if (len < RAPT_PDATA_HEADER_LEN || b[0] != RAPT_PDATA_MAGIC0 ||
	    b[1] != RAPT_PDATA_MAGIC1) {
		view->foreign = 1;
		return 0;
	}
	plen = b[3];
	if (plen > len - RAPT_PDATA_HEADER_LEN) {
		view->foreign = 1;
		return RAPT_EPROTO;
	}
	view->version = b[2] >> 4;
	view->kind = b[2] & 0xf;
	view->data = b + RAPT_PDATA_HEADER_LEN;
	view->len = plen;
	return view->version == RAPT_PDATA_HDR_VERSION ? 0 : RAPT_EVERSION;
}

int rapt__pdata_prepare(const void *data, size_t len, uint16_t raw_max,
			bool raw, const char *what, uint8_t out[RAPT_PDATA_MAX])
{
	size_t limit = raw ? raw_max : rapt__pdata_usable(raw_max);

	if (len && !data)
		return rapt__fail(RAPT_EINVAL,
				  "%s: NULL private data with length %zu",
				  what, len);
	if (len > limit)
		return rapt__fail(RAPT_ELENGTH,
				  "%s: %zu bytes of private data exceed the limit of %zu",
				  what, len, limit);
	if (raw) {
		if (len)
			memcpy(out, data, len);
		return (int)len;
	}
	/* A transport with no room for the header carries nothing. */
	if (raw_max < RAPT_PDATA_HEADER_LEN)
		return 0;
	return (int)rapt_prov_pdata_frame(RAPT_PDATA_CONSUMER, data, len, out);
}
