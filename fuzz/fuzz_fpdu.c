/* SPDX-License-Identifier: MIT */
/*
 * The FPDU / DDP / RDMAP decoder (tcp_ddp.c) and the placement checks of
 * the STag table (tcp_mem.c), as the receive path uses them: a stream of
 * FPDUs, each header asked for (tcp_ddp_hdr_need), parsed, and a tagged
 * one placed into a registered region through tcp_rkey_resolve().  The
 * region sits between PROT_NONE guard pages, so a placement check that
 * let a byte past it would fault here, under ASan or not.
 *
 * Keys are random, so the input names the region's rkey as the STag
 * "STAG" (0x53544147) and its address as the TO 0x544f544f00000000 plus
 * an offset: the harness swaps in the real ones.
 */
#include "config.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tcp.h"
#include "fuzz.h"

#define MAGIC_STAG	0x53544147u		/* "STAG" */
#define MAGIC_TO	0x544f544f00000000ull	/* "TOTO" << 32 */
#define REGION		8192

static struct tcp_ia ia;
static uint8_t *region;
static struct rapt_lmr_info info;
static void *mr;		/* lives as long as the process */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *p;

	(void)argc;
	(void)argv;
	p = mmap(NULL, REGION + 2 * (size_t)pg, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	fuzz_check(p != MAP_FAILED);
	region = p + pg;
	fuzz_check(!mprotect(region, REGION, PROT_READ | PROT_WRITE));
	fuzz_check(!tcp_stags_create(&ia.stags));
	fuzz_check(!tcp_lmr_create(&ia, NULL, region, REGION,
				   RAPT_MEM_LOCAL_WRITE | RAPT_MEM_REMOTE_READ |
				   RAPT_MEM_REMOTE_WRITE, &info, &mr));
	return 0;
}

static uint32_t stag_of(uint32_t s)
{
	return s == MAGIC_STAG ? info.rkey : s;
}

static uint64_t to_of(uint64_t to)
{
	if ((to & 0xffffffff00000000ull) == MAGIC_TO)
		return info.raddr + (to & 0xffffffffull);
	return to;
}

/* Where the data path would put or take @len bytes, if anywhere. */
static void place(uint32_t stag, uint64_t to, uint64_t len, uint32_t need,
		  const uint8_t *src, bool write)
{
	uint8_t ecode = 0, *dst;

	dst = tcp_rkey_resolve(&ia, NULL, stag_of(stag), to_of(to), len, need,
			       &ecode);
	if (!dst)
		return;		/* a Terminate with @ecode */
	fuzz_check(dst >= region && dst + len <= region + REGION);
	if (write && src)
		memcpy(dst, src, len);
	else if (len)
		fuzz_check(dst[len - 1] == dst[len - 1]);	/* readable */
}

static void one(const struct tcp_ddp_hdr *h, const uint8_t *fpdu)
{
	const uint8_t *payload = fpdu + h->hdr_len;

	fuzz_check(h->hdr_len <= TCP_FPDU_HDR_MAX);
	fuzz_check((unsigned int)h->hdr_len + h->payload_len ==
		   TCP_MPA_LEN_SIZE + (unsigned int)h->ulpdu_len);
	switch (h->opcode) {
	case TCP_RDMAP_WRITE:
	case TCP_RDMAP_READ_RESP:
		place(h->stag, h->to, h->payload_len, RAPT_MEM_REMOTE_WRITE,
		      payload, true);
		break;
	case TCP_RDMAP_READ_REQ:
		place(h->rreq.src_stag, h->rreq.src_to, h->rreq.size,
		      RAPT_MEM_REMOTE_READ, NULL, false);
		break;
	case TCP_RDMAP_TERMINATE:
		fuzz_check(h->term.ddp_hdr_len <= sizeof(h->term.ddp_hdr));
		break;
	default:
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tcp_ddp_hdr h;
	size_t off = 0, need;
	int n;

	/* The stream as the receive path walks it, CRC off. */
	while (off < size) {
		need = tcp_ddp_hdr_need(data + off, size - off);
		fuzz_check(need >= 4 && need <= TCP_FPDU_HDR_MAX);
		n = tcp_fpdu_parse(data + off, size - off, false, &h);
		if (n <= 0)
			break;
		fuzz_check((size_t)n <= size - off);
		one(&h, data + off);
		off += (size_t)n;
	}
	/* The same bytes with CRC on: a bad CRC is an error, never more. */
	n = tcp_fpdu_parse(data, size, true, &h);
	fuzz_check(n < 0 || (size_t)n <= size);
	return 0;
}
