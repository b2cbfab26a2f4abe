/* SPDX-License-Identifier: MIT */
/*
 * The Terminate parser: the input is a Terminate's ULPDU after its DDP
 * header (control, then the copied DDP and RDMAP headers), wrapped by the
 * harness in a valid untagged FPDU header on queue 2 so that every input
 * reaches term_parse().  Also the reverse direction: a codec error turned
 * into a Terminate (tcp_wire_err_term) that copies the offending header
 * (tcp_term_copy_hdr) from the input.
 */
#include "config.h"

#include <string.h>

#include "tcp_wire.h"
#include "fuzz.h"

#define HDR	(TCP_MPA_LEN_SIZE + TCP_DDP_UNTAGGED_HDR_LEN)

static int all_errs[] = {
#define ERR_LIST(name, val, msg) TCP_WIRE_##name,
	TCP_WIRE_ERRNO_MAP(ERR_LIST)
#undef ERR_LIST
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t b[HDR + TCP_RDMAP_TERM_ULPDU_MAX + 8] = { 0 };
	unsigned int body = size > sizeof(b) - HDR ? sizeof(b) - HDR :
						      (unsigned int)size;
	struct tcp_ddp_hdr h;
	struct tcp_term t;
	int n;

	tcp_put_be16(b, (uint16_t)(TCP_DDP_UNTAGGED_HDR_LEN + body));
	b[2] = 0x41;			/* untagged, L, DDP version 1 */
	b[3] = 0x47;			/* RDMAP version 1, Terminate */
	tcp_put_be32(b + 8, TCP_DDP_QN_TERMINATE);
	tcp_put_be32(b + 12, 1);	/* MSN */
	memcpy(b + HDR, data, body);
	n = tcp_ddp_parse_hdr(b, HDR + body, &h);
	if (n > 0) {
		fuzz_check(h.opcode == TCP_RDMAP_TERMINATE);
		fuzz_check(h.term.ddp_hdr_len == 0 ||
			   h.term.ddp_hdr_len == TCP_DDP_TAGGED_HDR_LEN ||
			   h.term.ddp_hdr_len == TCP_DDP_UNTAGGED_HDR_LEN);
	}
	/* Codec error -> Terminate, copying what the input holds. */
	if (size) {
		n = tcp_wire_err_term(all_errs[data[0] % (sizeof(all_errs) /
						       sizeof(all_errs[0]))],
				      size > 1 ? data[1] : 0, &t);
		if (!n && size > 2)
			tcp_term_copy_hdr(&t, data + 2, size - 2,
					  (uint16_t)size, size & 1);
	}
	return 0;
}
