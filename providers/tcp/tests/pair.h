/* SPDX-License-Identifier: MIT */
/*
 * The tcp provider's end-to-end tests (test_dto, test_cancel): two IAs on
 * "tcp:lo" in one process, an active and a passive EP connected to each
 * other, each side with its own EVD and a registered region between
 * guard bytes.  The functions return 0 or -1 (tests/scenario.h says
 * where one failed and why).
 */
#ifndef RAPT_TCP_TESTS_PAIR_H
#define RAPT_TCP_TESTS_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rapt/rapt.h>

#define EV_US	5000000		/* generous: the machine is shared */
#define GUARD	64

#define ACC_ALL (RAPT_MEM_LOCAL_WRITE | RAPT_MEM_REMOTE_READ | \
		 RAPT_MEM_REMOTE_WRITE)

struct side {
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	struct rapt_evd *evd;
	struct rapt_ep *ep;
	struct rapt_lmr *lmr;
	struct rapt_lmr_info mr;
	uint8_t *buf;		/* GUARD | region | GUARD */
	uint8_t *mem;		/* the registered region */
	size_t len;
};

struct conn {
	struct side a, p;	/* active, passive */
	struct rapt_psp *psp;
};

/* Called before connect/accept, to post receives in time. */
typedef int (*prep_fn)(struct conn *c);

int side_open(struct side *s, size_t len, uint32_t access);
int side_close(struct side *s);
/* The next event of @s, within EV_US; of @type unless 0. */
int ev_wait(struct side *s, uint32_t type, struct rapt_event *ev);
/* 127.0.0.1, port 0 (the service id says the port). */
const struct sockaddr *lo_addr(void);
/* Both sides (regions of @alen and @plen bytes, the passive one with
 * @paccess), the passive side's PSP, EPs with @attr; @prep before the
 * connect; then connect, accept and both ESTABLISHED. */
int conn_open(struct conn *c, size_t alen, size_t plen, uint32_t paccess,
	      const struct rapt_ep_attr *attr, prep_fn prep);
int conn_close(struct conn *c);
/* Whether "tcp:lo" opens; if not, says why on stderr (the test skips). */
bool lo_available(void);
/* An SGE for @n bytes at @off in @s's region. */
struct rapt_sge sge(const struct side *s, size_t off, size_t n);

#endif /* RAPT_TCP_TESTS_PAIR_H */
