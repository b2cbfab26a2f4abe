/* SPDX-License-Identifier: MIT */
/*
 * rapt's private-data header (core/pdata.c) as any peer may send it.
 * Invariants: the consumer view lies inside the bytes received, a rapt
 * header's length never exceeds them, and what parses as rapt's frames
 * back to the same bytes.
 */
#include "config.h"

#include <string.h>

#include <rapt/provider.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t out[RAPT_PDATA_HEADER_LEN + 256];
	struct rapt_pdata_view v;
	size_t n;
	int ret;

	ret = rapt_prov_pdata_parse(size ? data : NULL, size, &v);
	fuzz_check(ret == 0 || ret == RAPT_EPROTO || ret == RAPT_EVERSION);
	fuzz_check(v.len <= size);
	fuzz_check(!v.len || ((const uint8_t *)v.data >= data &&
			      (const uint8_t *)v.data + v.len <= data + size));
	fuzz_check(v.foreign || size >= RAPT_PDATA_HEADER_LEN);
	if (!ret && !v.foreign && v.len <= 255) {
		n = rapt_prov_pdata_frame(v.kind, v.data, v.len, out);
		fuzz_check(n == v.len + RAPT_PDATA_HEADER_LEN);
		fuzz_check(!memcmp(out, data, n));
	}
	return 0;
}
