/* SPDX-License-Identifier: MIT */
/*
 * End to end: a real tcp listener (IA tcp:lo, through librapt and the
 * provider DSO) takes a real connection: a plain socket sends an MPA
 * request (rev 2, peer-to-peer, no CRC), the consumer accepts, the socket
 * sends the Write RTR, ESTABLISHED.  Then the input goes down the
 * connection as the peer's FPDU stream, and the socket closes its sending
 * side: the EP must end (DISCONNECTED, or BROKEN after a Terminate) and
 * never touch memory it may not.  Its registered region (remote read and
 * write) and its receive buffers sit between PROT_NONE guard pages.
 *
 * Keys are random: the STag "STAG" (0x53544147) in the input becomes the
 * region's rkey and a TO of 0x544f544f00000000 + n the region's address
 * + n, as in fuzz_fpdu.  Needs RAPT_PROVIDER_PATH to find the tcp DSO of
 * this build (make fuzz sets it).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rapt/rapt.h>

#include "fuzz.h"

#define REGION		8192
#define NRECV		16
#define RECV_LEN	512
#define MAGIC_STAG	0x53544147u
#define MAGIC_TO_HI	0x544f544fu
#define WAIT_MS		5000

static struct rapt_ia *ia;
static struct rapt_pz *pz;
static struct rapt_evd *evd;
static struct rapt_psp *psp;
static struct rapt_lmr_info rinfo, binfo;
static uint8_t *region, *rbuf;
static uint16_t port;

static uint8_t *guarded(size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, len + 2 * (size_t)pg, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	fuzz_check(p != MAP_FAILED);
	fuzz_check(!mprotect(p + pg, len, PROT_READ | PROT_WRITE));
	return p + pg;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct rapt_psp_info pi;
	struct rapt_lmr *lmr;

	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	unsetenv("RAPT_TCP_CRC");
	if (!getenv("RAPT_LOG_LEVEL"))
		setenv("RAPT_LOG_LEVEL", "none", 1);
	if (rapt_ia_open("tcp:lo", &ia)) {
		fprintf(stderr, "fuzz_e2e: cannot open tcp:lo (%s); set RAPT_PROVIDER_PATH to the build's .libs\n",
			rapt_last_error());
		exit(1);
	}
	fuzz_check(!rapt_pz_create(ia, &pz));
	fuzz_check(!rapt_evd_create(ia, 4096, RAPT_EVD_DTO |
				    RAPT_EVD_CONNECTION | RAPT_EVD_CR, &evd));
	fuzz_check(!rapt_psp_create(ia, RAPT_SERVICE_ID_ANY, evd, NULL, &psp));
	fuzz_check(!rapt_psp_query(psp, &pi, sizeof(pi)));
	port = (uint16_t)pi.service_id;
	region = guarded(REGION);
	rbuf = guarded(NRECV * RECV_LEN);
	fuzz_check(!rapt_lmr_create(pz, region, REGION, RAPT_MEM_LOCAL_WRITE |
				    RAPT_MEM_REMOTE_READ |
				    RAPT_MEM_REMOTE_WRITE, &lmr, &rinfo));
	fuzz_check(!rapt_lmr_create(pz, rbuf, NRECV * RECV_LEN,
				    RAPT_MEM_LOCAL_WRITE, &lmr, &binfo));
	return 0;
}

/* The next event of @type (others are dropped), or abort. */
static void next_event(uint32_t type, struct rapt_event *ev)
{
	for (;;) {
		fuzz_check(!rapt_evd_wait(evd, WAIT_MS * 1000ll, 1, ev, NULL));
		if (ev->type == type)
			return;
	}
}

static int read_full(int fd, uint8_t *b, size_t n)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	ssize_t r = -1;

	while (got < n) {
		if (poll(&p, 1, WAIT_MS) != 1)
			return -1;
		r = recv(fd, b + got, n - got, 0);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* A connection in full operation: the peer's socket and our EP. */
static int establish(struct rapt_ep **ep)
{
	static const uint8_t req[24] = {
		'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ',
		'F', 'r', 'a', 'm', 'e', 0x10, 2, 0, 4,
		0x80, 4, 0x80, 4,	/* A, IRD 4; Write RTR, ORD 4 */
	};
	static const uint8_t rtr[20] = {
		0x00, 0x0e, 0xc1, 0x40, 0, 0, 0, 1,
	};
	struct sockaddr_in sin = {
		.sin_family = AF_INET, .sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	struct rapt_event ev;
	struct rapt_sge sge;
	uint8_t rep[24];
	int fd, i;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fuzz_check(fd >= 0);
	fuzz_check(!connect(fd, (struct sockaddr *)&sin, sizeof(sin)));
	fuzz_check(send(fd, req, sizeof(req), MSG_NOSIGNAL) == sizeof(req));
	next_event(RAPT_EV_CR_ARRIVAL, &ev);
	fuzz_check(!rapt_ep_create(pz, evd, evd, evd, NULL, ep));
	for (i = 0; i < NRECV; i++) {
		sge.addr = (uintptr_t)(rbuf + i * RECV_LEN);
		sge.length = RECV_LEN;
		sge.lkey = binfo.lkey;
		fuzz_check(!rapt_ep_post_recv(*ep, &sge, 1, (uint64_t)i));
	}
	fuzz_check(!rapt_cr_accept(ev.u.cr.cr, *ep, NULL, 0));
	fuzz_check(!read_full(fd, rep, sizeof(rep)));
	fuzz_check(send(fd, rtr, sizeof(rtr), MSG_NOSIGNAL) == sizeof(rtr));
	next_event(RAPT_EV_ESTABLISHED, &ev);
	return fd;
}

/* The input with the magic STag and TO replaced by the real ones. */
static uint8_t *patch(const uint8_t *data, size_t size)
{
	uint8_t *b = malloc(size ? size : 1);
	size_t i;

	fuzz_check(b != NULL);
	memcpy(b, data, size);
	for (i = 0; i + 4 <= size; i++) {
		uint32_t v = (uint32_t)b[i] << 24 | (uint32_t)b[i + 1] << 16 |
			     (uint32_t)b[i + 2] << 8 | b[i + 3];
		uint64_t to;

		if (v == MAGIC_STAG) {
			b[i] = (uint8_t)(rinfo.rkey >> 24);
			b[i + 1] = (uint8_t)(rinfo.rkey >> 16);
			b[i + 2] = (uint8_t)(rinfo.rkey >> 8);
			b[i + 3] = (uint8_t)rinfo.rkey;
		} else if (v == MAGIC_TO_HI && i + 8 <= size) {
			to = rinfo.raddr + ((uint32_t)b[i + 4] << 24 |
					    (uint32_t)b[i + 5] << 16 |
					    (uint32_t)b[i + 6] << 8 | b[i + 7]);
			for (int k = 0; k < 8; k++)
				b[i + k] = (uint8_t)(to >> (56 - 8 * k));
		}
	}
	return b;
}

static bool ends(const struct rapt_event *ev, const struct rapt_ep *ep)
{
	return (ev->type == RAPT_EV_DISCONNECTED ||
		ev->type == RAPT_EV_BROKEN) && ev->u.conn.ep == ep;
}

/* Close our sending side; read what the EP sends until it ends, sleeping
 * on the EVD's fd and the socket together. */
static void finish(int fd, struct rapt_ep *ep)
{
	struct pollfd p[2] = { { .events = POLLIN }, { .fd = fd,
						       .events = POLLIN } };
	bool ended = false, eof = false;
	struct rapt_event ev;
	uint8_t sink[4096];
	int idle = 0;
	ssize_t r = -1;

	fuzz_check(!rapt_evd_get_fd(evd, &p[0].fd));
	shutdown(fd, SHUT_WR);
	for (;;) {
		while (!rapt_evd_dequeue(evd, &ev))
			ended |= ends(&ev, ep);
		while (!eof && (r = recv(fd, sink, sizeof(sink),
					 MSG_DONTWAIT)) > 0)
			;
		if (!eof && (r == 0 || (errno != EAGAIN && errno != EINTR)))
			eof = true;
		if (ended && eof)
			return;
		if (rapt_evd_arm(evd) == RAPT_EAGAIN)
			continue;
		p[1].fd = eof ? -1 : fd;
		if (!poll(p, 2, 100))
			fuzz_check(++idle < WAIT_MS / 100);	/* a hang */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };
	struct rapt_event ev;
	struct rapt_ep *ep;
	uint8_t *b = patch(data, size);
	size_t off = 0;
	ssize_t n;
	int fd;

	fd = establish(&ep);
	while (off < size) {
		n = send(fd, b + off, size - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;		/* the EP broke the connection */
		off += (size_t)n;
	}
	finish(fd, ep);
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);		/* an RST: no TIME_WAIT per input */
	fuzz_check(!rapt_ep_free(ep));
	while (!rapt_evd_dequeue(evd, &ev))
		;
	free(b);
	return 0;
}
