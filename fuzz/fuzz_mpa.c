/* SPDX-License-Identifier: MIT */
/*
 * The MPA Request / Reply / reject parser (tcp_mpa.c), as a peer's bytes
 * reach it: any prefix of any bytes.  Invariants: the parser never reads
 * past @size, says how much it needs consistently, and what it accepts
 * re-encodes (tcp_mpa_build) to a frame that parses to the same fields.
 */
#include "config.h"

#include <string.h>

#include "tcp_wire.h"
#include "fuzz.h"

static void round_trip(const struct tcp_mpa_frame *f, int len)
{
	uint8_t buf[TCP_MPA_FRAME_MAX];
	struct tcp_mpa_frame g;
	int n;

	n = tcp_mpa_build(f, buf, sizeof(buf));
	if (n < 0)
		return;		/* a frame we would never send (rev 1 + E) */
	fuzz_check(n == len);
	fuzz_check(tcp_mpa_parse(buf, (size_t)n, TCP_MPA_PD_MAX, &g) == n);
	fuzz_check(g.type == f->type && g.rev == f->rev &&
		   g.crc == f->crc && g.reject == f->reject &&
		   g.enhanced == f->enhanced && g.pdata_len == f->pdata_len);
	fuzz_check(!f->enhanced || (g.ird == f->ird && g.ord == f->ord &&
				    g.rtr == f->rtr));
	fuzz_check(!f->pdata_len ||
		   !memcmp(g.pdata, f->pdata, f->pdata_len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tcp_mpa_frame f;
	size_t need = tcp_mpa_need(data, size);
	int n;

	fuzz_check(need >= TCP_MPA_HDR_LEN && need <= TCP_MPA_FRAME_MAX + 1);
	n = tcp_mpa_parse(data, size, TCP_MPA_PD_MAX, &f);
	if (n > 0) {
		fuzz_check((size_t)n <= size && (size_t)n == need);
		fuzz_check(!f.pdata_len ||
			   (f.pdata >= data && f.pdata + f.pdata_len <=
			    data + n));
		round_trip(&f, n);
	}
	/* siw's limit too: a subset of what 512 accepts */
	if (tcp_mpa_parse(data, size, TCP_MPA_PD_LIMIT, &f) > 0)
		fuzz_check(n > 0);
	return 0;
}
