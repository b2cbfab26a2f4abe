/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the example programs. */
#ifndef RAPT_EXAMPLES_COMMON_H
#define RAPT_EXAMPLES_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#include <rapt/rapt.h>

/* Exit with rapt's explanation when @call fails. */
#define CHECK(call)							\
	do {								\
		int ret_ = (call);					\
		if (ret_) {						\
			fprintf(stderr, "%s:%d: %s: %s (%s)\n",		\
				__FILE__, __LINE__, #call,		\
				rapt_strerror(ret_), rapt_last_error());\
			exit(1);					\
		}							\
	} while (0)

/* What the server tells the client in its accept private data. */
struct demo_region {
	uint64_t raddr;
	uint32_t rkey;
	uint32_t length;
};

#define DEMO_SERVICE_ID 7471
#define DEMO_MSG_SIZE 4096

/* Wait up to 10 s for one event and insist on its type. */
static inline void demo_expect(struct rapt_evd *evd, uint32_t type,
			       struct rapt_event *ev)
{
	CHECK(rapt_evd_wait(evd, 10000000, 1, ev, NULL));
	if (ev->type != type) {
		fprintf(stderr, "expected event %#x, got %#x", type, ev->type);
		if (ev->type == RAPT_EV_DTO)
			fprintf(stderr, " (DTO status %u)", ev->u.dto.status);
		if (ev->type == RAPT_EV_NON_PEER_REJECTED)
			fprintf(stderr, " (reason %u)", ev->u.conn.reason);
		fprintf(stderr, "\n");
		exit(1);
	}
}

#endif /* RAPT_EXAMPLES_COMMON_H */
