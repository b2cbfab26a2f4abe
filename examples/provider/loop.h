/* SPDX-License-Identifier: MIT */
/*
 * loop - an example rapt provider, built out of tree against the installed
 * provider SDK (pkg-config rapt-provider).
 *
 * A transport inside one process: every IA of device "loop0" in the
 * process is on the same fabric, so an EP connects to a PSP of any IA of
 * it at a loopback address (127.0.0.0/8, ::1), and a send is a copy from
 * the sender's memory into the receiver's posted receive.  Any other
 * address is UNREACHABLE.  It does send/receive (zero length, inline,
 * solicited), connection management with private data on connect, accept,
 * reject and disconnect, and the connect timeout; it has no RDMA.
 *
 * Everything happens in the thread of the call that causes it: a connect
 * delivers the CR to the listener's EVD before it returns, an accept makes
 * both EPs ESTABLISHED (the active side first), a send completes both
 * sides.  The only thread of the provider is the timer that times out
 * connects whose CR is still undecided.
 *
 * Locking: one process-wide mutex, loop_fab.lock, guards every object of
 * the provider and is held while reporting to the core.  That is allowed
 * (no rapt_prov_*() service takes a lock the core holds around an op),
 * and it makes the ordering duties easy: flushes, then the final event;
 * after ep_free or psp_free returns nothing can name the object.  A real
 * transport would lock per object.
 */
#ifndef LOOP_H
#define LOOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rapt/provider.h>
#include <rapt/provider_util.h>

#define LOOP_NAME	"loop"
#define LOOP_DEVICE	"loop0"
#define LOOP_PDATA_MAX	256	/* raw limit, the core's header included */
#define LOOP_MAX_SGE	4
#define LOOP_MAX_INLINE	64
#define LOOP_MAX_DEPTH	1024
#define LOOP_MAX_MSG	(1u << 20)
#define LOOP_SID_MAX	65535
#define LOOP_SID_ANY_MIN 49152	/* where RAPT_SERVICE_ID_ANY starts */

#define loop_dbg(...) RAPT_PLOG(RAPT_LOG_DEBUG, LOOP_NAME, __VA_ARGS__)

struct loop_ia {
	struct rapt_core_ia *cia;
};

struct loop_lmr {
	struct rapt_list link;		/* on loop_fab.lmrs */
	struct loop_ia *ia;
	uintptr_t addr;
	size_t len;
	uint32_t access;
	uint32_t key;			/* lkey; also the (unused) rkey */
};

struct loop_evd {
	struct rapt_core_evd *cevd;
};

/* A posted receive. */
struct loop_recv {
	struct rapt_list link;
	uint64_t cookie;
	uint32_t nsge;
	struct rapt_sge sgl[LOOP_MAX_SGE];
};

enum loop_ep_state {
	LOOP_EP_IDLE,		/* never connected */
	LOOP_EP_CONNECTING,	/* our request waits at a PSP (ep->req) */
	LOOP_EP_CONNECTED,	/* ep->peer is the other end */
	LOOP_EP_CLOSED,		/* the final connection event is queued */
};

struct loop_ep {
	struct loop_ia *ia;
	struct rapt_core_ep *cep;
	struct rapt_ep *handle;		/* goes into DTO events */
	struct loop_evd *recv_evd;	/* receive completions, or NULL */
	struct loop_evd *req_evd;	/* send completions, or NULL */
	enum loop_ep_state state;
	uint32_t max_recv;
	uint32_t nrecv;
	struct rapt_list rq;		/* struct loop_recv, in posting order */
	struct loop_req *req;		/* LOOP_EP_CONNECTING */
	struct loop_ep *peer;		/* LOOP_EP_CONNECTED */
	struct sockaddr_storage local;
	struct sockaddr_storage remote;
};

struct loop_psp {
	struct rapt_list link;		/* on loop_fab.psps */
	struct loop_ia *ia;
	struct rapt_core_psp *cpsp;
	uint64_t sid;
	struct rapt_list reqs;		/* undecided requests */
};

/*
 * A connection request: the provider's object behind a core CR, from
 * rapt_prov_cr_arrive() until cr_accept or cr_reject consumes it or the
 * requester goes away (connect timeout, disconnect, ep_free), which
 * cancels the CR and frees it.
 */
struct loop_req {
	struct rapt_list link;		/* on psp->reqs */
	struct rapt_list tlink;		/* loop_fab.timed, if it has a deadline */
	struct loop_psp *psp;
	struct loop_ep *active;		/* the requester */
	struct rapt_core_cr *ccr;
	uint64_t deadline_ns;		/* 0: no connect timeout */
	struct sockaddr_storage active_addr;
	struct sockaddr_storage psp_addr;
};

/* The fabric: everything of the provider in this process. */
struct loop_fabric {
	pthread_mutex_t lock;
	pthread_cond_t timer_cond;	/* loop_fab.timed changed */
	struct rapt_list psps;
	struct rapt_list lmrs;
	struct rapt_list timed;		/* requests with a deadline */
	unsigned int nia;		/* open IAs; the timer runs while > 0 */
	bool timer_stop;
	pthread_t timer;
	uint32_t next_key;
	uint16_t next_port;		/* active sides' ephemeral ports */
};

extern struct loop_fabric loop_fab;

/* loop_cm.c */
int loop_ep_create(void *pia, void *ppz, struct rapt_core_ep *cep,
		   struct rapt_ep *handle, const struct rapt_ep_attr *attr,
		   void *recv_pevd, void *req_pevd, void *conn_pevd,
		   void **pep);
int loop_ep_free(void *pep);
int loop_ep_modify(void *pep, const struct rapt_ep_attr *attr,
		   uint32_t mask);
int loop_ep_connect(void *pep, const struct sockaddr *remote,
		    uint64_t service_id, const void *pdata, size_t pdata_len,
		    int64_t timeout_us);
int loop_ep_disconnect(void *pep, uint32_t flags, const void *pdata,
		       size_t pdata_len);
int loop_psp_create(void *pia, struct rapt_core_psp *cpsp,
		    uint64_t service_id, const struct rapt_psp_attr *attr,
		    void *cr_pevd, uint64_t *bound_id, void **ppsp);
int loop_psp_free(void *ppsp);
int loop_cr_accept(void *ppsp, struct rapt_core_cr *ccr, void *pep,
		   const void *pdata, size_t pdata_len);
int loop_cr_reject(void *ppsp, struct rapt_core_cr *ccr, const void *pdata,
		   size_t pdata_len);
void loop_timeouts(uint64_t now_ns);
void loop_ep_end(struct loop_ep *ep, uint32_t type, uint32_t reason,
		 const void *pdata, size_t pdata_len);

/* loop_dto.c */
void loop_flush(struct loop_ep *ep);
void loop_break(struct loop_ep *ep);
int loop_post_recv(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		   uint64_t cookie);
int loop_post_send(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
		   uint64_t cookie, uint32_t flags, uint32_t inv_rkey);

#endif /* LOOP_H */
