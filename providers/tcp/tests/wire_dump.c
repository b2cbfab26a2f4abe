/* SPDX-License-Identifier: MIT */
/*
 * Writes the frames of a whole iWARP connection, built by the tcp
 * provider's wire codec, as a text2pcap hex dump ("text2pcap -D"): each
 * TCP segment is an "O" (initiator to responder) or "I" block.
 * tshark_wire.sh turns the dump into a capture and checks what tshark's
 * iwarp_mpa / iwarp_ddp_rdmap dissectors make of it.
 *
 * Usage: wire_dump main|nocrc|reject
 *   main    MPA v2 with CRC and P2P Write RTR, every RDMAP message, two
 *           FPDUs coalesced in one segment, a Terminate
 *   nocrc   MPA v1 without CRC, one Send (CRC field zero)
 *   reject  MPA v2 Request answered by a reject Reply with private data
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tcp_wire.h"

#define SEG_MAX 4096

struct seg {
	uint8_t buf[SEG_MAX];
	size_t len;
};

static int failed;

static void seg_put(struct seg *s, int ret)
{
	if (ret < 0) {
		fprintf(stderr, "wire_dump: encoder failed: %s\n",
			tcp_wire_strerror(ret));
		failed = 1;
		return;
	}
	s->len += (size_t)ret;
}

static void seg_emit(char dir, struct seg *s)
{
	size_t i;

	printf("%c\n", dir);
	for (i = 0; i < s->len; i++) {
		if (i % 16 == 0)
			printf("%s%06zx", i ? "\n" : "", i);
		printf(" %02x", s->buf[i]);
	}
	printf("\n");
	s->len = 0;
}

static void mpa(char dir, const struct tcp_mpa_frame *f)
{
	struct seg s = { .len = 0 };

	seg_put(&s, tcp_mpa_build(f, s.buf, sizeof(s.buf)));
	seg_emit(dir, &s);
}

static void fpdu_add(struct seg *s, const struct tcp_ddp_hdr *h,
		     const char *payload, size_t plen, bool crc)
{
	seg_put(s, tcp_fpdu_build(h, payload, plen, crc, s->buf + s->len,
				  sizeof(s->buf) - s->len));
}

static void fpdu(char dir, const struct tcp_ddp_hdr *h, const char *payload,
		 size_t plen, bool crc)
{
	struct seg s = { .len = 0 };

	fpdu_add(&s, h, payload, plen, crc);
	seg_emit(dir, &s);
}

#define STR(s) s, sizeof(s) - 1

static void conn_main_setup(void)
{
	struct tcp_mpa_frame req = {
		.type = TCP_MPA_REQUEST, .rev = 2, .crc = true,
		.enhanced = true, .ird = 16, .ord = 16,
		.rtr = TCP_MPA_P2P | TCP_MPA_RTR_WRITE | TCP_MPA_RTR_READ,
		.pdata = (const uint8_t *)"rapt", .pdata_len = 4,
	};
	struct tcp_mpa_frame rep = {
		.type = TCP_MPA_REPLY, .rev = 2, .crc = true,
		.enhanced = true, .ird = 8, .ord = 4,
		.rtr = TCP_MPA_P2P | TCP_MPA_RTR_WRITE,
		.pdata = (const uint8_t *)"ok", .pdata_len = 2,
	};
	struct seg s = { .len = 0 };

	mpa('O', &req);
	mpa('I', &rep);
	seg_put(&s, tcp_fpdu_build_rtr(TCP_MPA_RTR_WRITE, 0, true, s.buf,
				       sizeof(s.buf)));
	seg_emit('O', &s);
}

static void conn_main_sends(void)
{
	struct tcp_ddp_hdr h = { .opcode = TCP_RDMAP_SEND, .last = true };
	struct seg s = { .len = 0 };

	h.msn = 1;
	fpdu('I', &h, STR("hello from the responder"), true);
	h.opcode = TCP_RDMAP_SEND_SE;
	fpdu('O', &h, STR("se!"), true);
	h.opcode = TCP_RDMAP_SEND_INV;
	h.msn = 2;
	h.inv_stag = 0x1234;
	fpdu('O', &h, STR("inv"), true);
	h.opcode = TCP_RDMAP_SEND_SE_INV;
	h.msn = 3;
	h.inv_stag = 0xabcd;
	fpdu('O', &h, STR("se+inv"), true);

	/* Two FPDUs in one TCP segment: a two-segment Send, MSN 4. */
	h.opcode = TCP_RDMAP_SEND;
	h.msn = 4;
	h.inv_stag = 0;
	h.last = false;
	fpdu_add(&s, &h, STR("first half "), true);
	h.last = true;
	h.mo = 11;
	fpdu_add(&s, &h, STR("second half"), true);
	seg_emit('O', &s);
}

static void conn_main_rdma(void)
{
	static char data[1000];
	struct tcp_ddp_hdr h = { .opcode = TCP_RDMAP_WRITE, .stag = 0x5678,
				 .to = 0x7f0000001000ull };

	memset(data, 'w', sizeof(data));
	fpdu('O', &h, data, sizeof(data), true);
	h.last = true;
	h.to += sizeof(data);
	fpdu('O', &h, STR("last write segment, pad"), true);

	memset(&h, 0, sizeof(h));
	h.opcode = TCP_RDMAP_READ_REQ;
	h.msn = 1;
	h.rreq.sink_stag = 0x11;
	h.rreq.sink_to = 0x1000;
	h.rreq.size = 100;
	h.rreq.src_stag = 0x22;
	h.rreq.src_to = 0x2000;
	fpdu('O', &h, NULL, 0, true);

	memset(&h, 0, sizeof(h));
	memset(data, 'r', 100);
	h.opcode = TCP_RDMAP_READ_RESP;
	h.last = true;
	h.stag = 0x11;
	h.to = 0x1000;
	fpdu('I', &h, data, 100, true);
}

/* The responder ran out of receive buffers for the initiator's MSN 5. */
static void conn_main_terminate(void)
{
	struct tcp_ddp_hdr bad = { .opcode = TCP_RDMAP_SEND, .last = true,
				   .msn = 5 };
	struct tcp_ddp_hdr h = { .opcode = TCP_RDMAP_TERMINATE, .msn = 1 };
	uint8_t raw[TCP_FPDU_HDR_MAX];
	int n;

	n = tcp_ddp_build_hdr(&bad, 64, raw, sizeof(raw));
	if (n < 0 || tcp_wire_err_term(TCP_WIRE_EQN, raw[2], &h.term) ||
	    tcp_term_copy_hdr(&h.term, raw, (size_t)n, 64, false)) {
		fprintf(stderr, "wire_dump: cannot build the Terminate\n");
		failed = 1;
		return;
	}
	h.term.ecode = TCP_TERM_DDP_U_NO_BUFFER;
	fpdu('I', &h, NULL, 0, true);
}

static void conn_nocrc(void)
{
	struct tcp_mpa_frame req = { .type = TCP_MPA_REQUEST, .rev = 1 };
	struct tcp_mpa_frame rep = { .type = TCP_MPA_REPLY, .rev = 1 };
	struct tcp_ddp_hdr h = { .opcode = TCP_RDMAP_SEND, .last = true,
				 .msn = 1 };

	mpa('O', &req);
	mpa('I', &rep);
	fpdu('O', &h, STR("no crc"), false);
}

static void conn_reject(void)
{
	struct tcp_mpa_frame req = {
		.type = TCP_MPA_REQUEST, .rev = 2, .crc = true,
		.enhanced = true, .ird = 1, .ord = 1,
		.rtr = TCP_MPA_P2P | TCP_MPA_RTR_READ,
	};
	struct tcp_mpa_frame rep = {
		.type = TCP_MPA_REPLY, .rev = 2, .reject = true,
		.enhanced = true,
		.pdata = (const uint8_t *)"busy", .pdata_len = 4,
	};

	mpa('O', &req);
	mpa('I', &rep);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		goto err_usage;
	if (!strcmp(argv[1], "main")) {
		conn_main_setup();
		conn_main_sends();
		conn_main_rdma();
		conn_main_terminate();
	} else if (!strcmp(argv[1], "nocrc")) {
		conn_nocrc();
	} else if (!strcmp(argv[1], "reject")) {
		conn_reject();
	} else {
		goto err_usage;
	}
	return failed;

err_usage:
	fprintf(stderr, "usage: wire_dump main|nocrc|reject\n");
	return 2;
}
