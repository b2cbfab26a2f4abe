/* SPDX-License-Identifier: MIT */
/*
 * rapt provider SDK.
 *
 * A provider is a shared object named librapt-<name>-pv<RAPT_PROVIDER_ABI>.so
 * that exports exactly one symbol, rapt_provider_entry(), returning a
 * struct rapt_provider.  librapt checks the descriptor's size and ABI before
 * it touches anything else, copies the provider's ops over a table of core
 * stubs (a missing op returns RAPT_ENOTSUP), and drives the provider only
 * through those ops.
 *
 * The core owns every handle, the EP state machine, private-data framing,
 * PSP admission counters and the EVD rings.  A provider owns its transport:
 * it tells the core what happened through the rapt_prov_*() services below,
 * which librapt exports under the RAPT_PROVIDER_<N> symbol version.
 *
 * Provider objects are "void *" to the core; core objects are the opaque
 * struct rapt_core_* types to the provider.
 *
 * ABI rules: struct rapt_provider and struct rapt_prov_ops start with their
 * size and only grow at the end.  Any other change to this file bumps
 * RAPT_PROVIDER_ABI, and with it the DSO file names.
 */
#ifndef RAPT_API_PROVIDER_H
#define RAPT_API_PROVIDER_H

#include <stdarg.h>
#include <rapt/rapt.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bump on any incompatible change to this header. */
#define RAPT_PROVIDER_ABI 2

#define RAPT_VERSION_PACK(maj, min, patch)				\
	((uint32_t)(((maj) << 16) | ((min) << 8) | (patch)))
#define RAPT_VERSION_MAJOR(v)	(((v) >> 16) & 0xffff)
#define RAPT_VERSION_MINOR(v)	(((v) >> 8) & 0xff)
#define RAPT_VERSION_PATCH(v)	((v) & 0xff)

#define RAPT_PROVIDER_ENTRY_SYMBOL "rapt_provider_entry"

#define RAPT_PROVIDER_EXPORT __attribute__((visibility("default")))

/* Core objects, opaque to providers. */
struct rapt_core_ia;
struct rapt_core_evd;
struct rapt_core_ep;
struct rapt_core_psp;
struct rapt_core_cr;

/**
 * struct rapt_prov_device - a device a provider found
 * @name: device name, unique within the provider ("lo", "mlx5_0")
 * @nports: ports (0 if the transport has none)
 * @transport: enum rapt_transport
 * @rank: preference for rapt_ia_open(NULL); lower is better (hardware
 *        RDMA about 10, software transports 100)
 * @status: 0 if it can be opened, else a RAPT_E* code
 * @reason: when @status != 0, why, in plain words; for a usable device,
 *          an optional note rapt_info shows (a mode in force, say)
 */
struct rapt_prov_device {
	char name[64];
	uint32_t nports;
	uint32_t transport;
	uint32_t rank;
	int32_t status;
	char reason[256];
};

/**
 * struct rapt_prov_ops - what a provider implements
 * @size: sizeof(struct rapt_prov_ops) as the provider was built; must stay
 *        the first member
 *
 * Any op may be NULL: the core supplies a stub that returns RAPT_ENOTSUP
 * (or succeeds with no provider object, where noted).  Append only.
 *
 * Ops receive arguments already validated by the core: live handles of the
 * right class and IA, states allowed by the EP state machine, private data
 * already framed and within the transport limit, service ids in range.
 * Ops return 0 or a negative RAPT_E* code.
 */
/* Set by the core in post_send's flags for a send with invalidate. */
#define RAPT_PROV_POST_INVALIDATE (1u << 31)

struct rapt_prov_ops {
	size_t size;

	/* IA.  ia_query fills @attr (zeroed by the core) with the provider's
	 * raw transport limits; pdata_* are the transport's own byte limits
	 * and the core subtracts its header before the consumer sees them. */
	int (*ia_open)(void *prov, const char *device, uint32_t port,
		       struct rapt_core_ia *cia, void **pia);
	int (*ia_close)(void *pia);
	int (*ia_query)(void *pia, struct rapt_ia_attr *attr);

	/* PZ (stub: succeeds with a NULL provider object) */
	int (*pz_create)(void *pia, void **ppz);
	int (*pz_free)(void *ppz);

	/* LMR: fill @info's lkey, rkey and raddr. */
	int (*lmr_create)(void *pia, void *ppz, void *addr, size_t length,
			  uint32_t access, struct rapt_lmr_info *info,
			  void **plmr);
	int (*lmr_free)(void *plmr);

	/* EVD (stub: succeeds with a NULL provider object; but a provider
	 * that pushes events needs evd_create to learn the core EVD).
	 * evd_progress
	 * is an optional fast path the core calls from dequeue and wait
	 * before it looks at the ring: the provider may poll its transport
	 * and push events.  Events must reach the ring without it too. */
	int (*evd_create)(void *pia, struct rapt_core_evd *cevd, uint32_t qlen,
			  uint32_t streams, void **pevd);
	int (*evd_free)(void *pevd);
	int (*evd_progress)(void *pevd);

	/* EP.  The core passes the provider objects of the EP's EVDs (NULL
	 * for an absent EVD) and the consumer handle to put in events. */
	int (*ep_create)(void *pia, void *ppz, struct rapt_core_ep *cep,
			 struct rapt_ep *handle, const struct rapt_ep_attr *attr,
			 void *recv_pevd, void *req_pevd, void *conn_pevd,
			 void **pep);
	/* After ep_free returns the provider must not touch @cep again. */
	int (*ep_free)(void *pep);
	int (*ep_modify)(void *pep, const struct rapt_ep_attr *attr,
			 uint32_t mask);
	int (*ep_connect)(void *pep, const struct sockaddr *remote,
			  uint64_t service_id, const void *pdata,
			  size_t pdata_len, int64_t timeout_us);
	int (*ep_disconnect)(void *pep, uint32_t flags, const void *pdata,
			     size_t pdata_len);

	/* Data path.  post_recv is called in every EP state; the others only
	 * while the core's state is CONNECTED.  post_send gets
	 * RAPT_PROV_POST_INVALIDATE in @flags for rapt_ep_post_send_inv(),
	 * and then @inv_rkey is the peer rkey to invalidate. */
	int (*post_recv)(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
			 uint64_t cookie);
	int (*post_send)(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
			 uint64_t cookie, uint32_t flags, uint32_t inv_rkey);
	int (*post_write)(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
			  uint64_t cookie, uint64_t raddr, uint32_t rkey,
			  uint32_t flags);
	int (*post_read)(void *pep, const struct rapt_sge *sgl, uint32_t nsge,
			 uint64_t cookie, uint64_t raddr, uint32_t rkey,
			 uint32_t flags);

	/* PSP: @service_id is in range or RAPT_SERVICE_ID_ANY; write the
	 * id actually bound to @bound_id.  Requests may be handed to the
	 * core before psp_create returns; decisions on them wait for it. */
	int (*psp_create)(void *pia, struct rapt_core_psp *cpsp,
			  uint64_t service_id, const struct rapt_psp_attr *attr,
			  void *cr_pevd, uint64_t *bound_id, void **ppsp);
	/* Called only when every CR of the PSP has been decided or
	 * cancelled, so no cr_accept/cr_reject for it runs or follows.
	 * After psp_free returns the provider must not touch @cpsp again;
	 * connections already accepted live on. */
	int (*psp_free)(void *ppsp);

	/* CR.  @ppsp: the provider object of the request's PSP (alive for
	 * the whole op: the CR keeps its PSP busy).  @ccr: the core's CR that
	 * rapt_prov_cr_arrive() returned, valid for the whole op; get the
	 * provider's request from rapt_prov_cr_request(@ccr), under the
	 * serialisation that also covers rapt_prov_cr_cancel(), and fail
	 * with RAPT_ENOTCONN if it returns NULL.  At most one of these runs
	 * per request.  On success the request is ended (consumed). */
	int (*cr_accept)(void *ppsp, struct rapt_core_cr *ccr, void *pep,
			 const void *pdata, size_t pdata_len);
	int (*cr_reject)(void *ppsp, struct rapt_core_cr *ccr,
			 const void *pdata, size_t pdata_len);

	/*
	 * Wait objects.  A provider whose events come out of file
	 * descriptors (sockets, a verbs completion channel, an rdma_cm event
	 * channel) lets a blocked consumer sleep on them in its own thread,
	 * so that nothing of the provider's runs between the wakeup and the
	 * consumer: docs/provider-guide.md, "Wait objects".  The core uses
	 * them only if evd_wait_fd, evd_trywait and evd_progress are all
	 * provided; otherwise a blocked consumer sleeps on a condition
	 * variable that rapt_prov_evd_push() signals, as before.
	 *
	 * evd_wait_fd: a descriptor that becomes readable (POLLIN, level-
	 * triggered) when something may have happened for the EVD.  Asked
	 * for once, the first time a consumer waits or asks for the EVD's
	 * fd; the core only polls it (and adds it to an epoll set) and never
	 * reads or closes it.  It must stay open until evd_free returns.
	 * Several EVDs may share one (tcp: the IA's epoll set).
	 *
	 * evd_trywait: the caller is about to sleep on that descriptor.  Arm
	 * what needs arming (ibv_req_notify_cq), then return 0 if everything
	 * pending will make the descriptor readable, or RAPT_EAGAIN if work
	 * is already pending that it may not report: the core then calls
	 * evd_progress and looks at the EVD again instead of sleeping.
	 * @how is RAPT_PROV_WAIT_BLOCK (rapt_evd_wait sleeps now and calls
	 * evd_wait_done when it wakes, whatever woke it) or
	 * RAPT_PROV_WAIT_FD (rapt_evd_arm: the consumer sleeps in its own
	 * poll/epoll on the EVD's fd; no evd_wait_done follows, and its next
	 * dequeue or wait runs evd_progress, which must then handle what made
	 * the descriptor readable).
	 *
	 * evd_wait_done: a RAPT_PROV_WAIT_BLOCK sleep ended.  Handle what the
	 * descriptor reported, in the caller's thread, and push the events
	 * it yields (of any EVD).  Optional: without it the core calls
	 * evd_progress instead.
	 */
	int (*evd_wait_fd)(void *pevd, int *fd);
	int (*evd_trywait)(void *pevd, uint32_t how);
	int (*evd_wait_done)(void *pevd);

	/*
	 * ep_set_peer_timeout: a peer silent for about @timeout_ms (idle or
	 * with data in flight) must end in RAPT_EV_BROKEN
	 * (rapt_ep_set_peer_timeout()).  Called right after ep_create with
	 * the IA's value, and whenever the consumer changes it; an EP with a
	 * connection applies it at once.  The value is in range.  Stub:
	 * RAPT_ENOTSUP (the transport's own bound applies).
	 */
	int (*ep_set_peer_timeout)(void *pep, uint32_t timeout_ms);

	/*
	 * ep_reset: make a finished EP new again (rapt_ep_reset()).  Called
	 * only when the core's state is DISCONNECTED, that is after the
	 * provider reported the connection's final event, and never while
	 * another connect, accept or reset of the EP runs.  Keep the EP's
	 * PZ, EVDs, attributes and peer timeout; forget the connection; the
	 * next ep_connect or cr_accept must work as on a new EP.  Receives
	 * may be posted concurrently.  Advertise RAPT_CAP_EP_RESET with it.
	 * Stub: RAPT_ENOTSUP.
	 *
	 * ep_get_status: the number of receives (@recv) and of sends/RDMA
	 * operations (@req) posted and not yet completed.  Any EP state.
	 * Advertise RAPT_CAP_EP_STATUS with it.  Stub: RAPT_ENOTSUP.
	 */
	int (*ep_reset)(void *pep);
	int (*ep_get_status)(void *pep, uint32_t *recv, uint32_t *req);

	/*
	 * SRQ (API 1.3; advertise RAPT_CAP_SRQ and the max_srq* limits).
	 * srq_create gets the core's checked attributes and the consumer
	 * handle to name in the low-watermark event
	 * (rapt_prov_async_event(RAPT_EV_ASYNC_SRQ_LOW_WATERMARK, handle,
	 * receives left as prov_status: the core makes it the event's
	 * count)), which fires once each time the posted receives
	 * fall below the watermark, and again after srq_resize.
	 * ep_set_srq comes right after ep_create of an EP made with
	 * rapt_ep_create_with_srq() (whose max_recv is 1: a receive in
	 * progress, and max_recv_sge the SRQ's), before the EP is used:
	 * from then on its messages take the SRQ's oldest receive, and its
	 * completions carry the EP.  srq_free is called only once no EP
	 * uses the SRQ.  srq_query reports the receives posted.  Stubs:
	 * RAPT_ENOTSUP.
	 */
	int (*srq_create)(void *pia, void *ppz, struct rapt_srq *handle,
			  const struct rapt_srq_attr *attr, void **psrq);
	int (*srq_free)(void *psrq);
	int (*srq_post_recv)(void *psrq, const struct rapt_sge *sgl,
			     uint32_t nsge, uint64_t cookie);
	int (*srq_query)(void *psrq, uint32_t *posted);
	int (*srq_resize)(void *psrq, uint32_t max_recv,
			  uint32_t low_watermark);
	int (*ep_set_srq)(void *pep, void *psrq);

	/*
	 * RMR: memory windows (API 1.3; advertise RAPT_CAP_RMR and
	 * max_rmr).  rmr_create makes an unbound window of @ppz.  rmr_bind
	 * gets arguments the core has checked (the LMR, the EP and the
	 * window are of one PZ; the range is inside the LMR; the rights are
	 * remote ones the LMR has; @flags are SUPPRESS/FENCE): the window
	 * must serve @rkey (new, the old key dead) when it returns, and a
	 * completion of op RAPT_OP_RMR_BIND must follow on the EP's request
	 * EVD in send queue order.  @plmr NULL (and @length 0) unbinds:
	 * op RAPT_OP_RMR_UNBIND, @rkey NULL.  Refuse with RAPT_ESTATE when
	 * the EP cannot post, RAPT_ENOSPC when its send queue is full.
	 * rmr_free invalidates a bound window and waits until no RDMA
	 * touches it.  rmr_query writes the live key, or 0 (unbound or
	 * invalidated by the peer).  A provider must refuse lmr_free of an
	 * LMR with a bound window (RAPT_EBUSY).  Stubs: RAPT_ENOTSUP.
	 */
	int (*rmr_create)(void *pia, void *ppz, void **prmr);
	int (*rmr_free)(void *prmr);
	int (*rmr_bind)(void *pep, void *prmr, void *plmr, uint64_t addr,
			uint64_t length, uint32_t access, uint64_t cookie,
			uint32_t flags, uint32_t *rkey);
	int (*rmr_query)(void *prmr, uint32_t *rkey);
};

/* evd_trywait's @how. */
#define RAPT_PROV_WAIT_BLOCK	1u	/* rapt_evd_wait sleeps now */
#define RAPT_PROV_WAIT_FD	2u	/* the consumer polls the EVD's fd */

/**
 * struct rapt_provider - what rapt_provider_entry() returns
 * @size: sizeof(struct rapt_provider); must stay the first member
 * @abi: RAPT_PROVIDER_ABI the provider was built against; must stay second
 * @name: provider name, [a-z0-9_]+, as in the DSO file name
 * @version: the provider's own version, RAPT_VERSION_PACK()
 * @description: one line for rapt_info
 * @init: called once after loading; sets the provider context
 * @fini: called once before unloading
 * @get_devices: list devices in a malloc()ed array the core free()s
 * @ops: the ops table
 */
struct rapt_provider {
	uint32_t size;
	uint32_t abi;
	const char *name;
	uint32_t version;
	uint32_t reserved;
	const char *description;
	int (*init)(void **prov);
	void (*fini)(void *prov);
	int (*get_devices)(void *prov, struct rapt_prov_device **devs,
			   uint32_t *ndevs);
	const struct rapt_prov_ops *ops;
};

/**
 * rapt_provider_entry - the one symbol a provider DSO exports
 *
 * Return: the provider's static descriptor.
 */
RAPT_PROVIDER_EXPORT const struct rapt_provider *rapt_provider_entry(void);

/* ------------------------------------------------------------------ */
/* Services the core offers providers                                  */
/* ------------------------------------------------------------------ */

#if defined(RAPT_BUILDING_LIBRARY)
#define RAPT_SDK __attribute__((visibility("default")))
#else
#define RAPT_SDK
#endif

/* Log levels (RAPT_LOG_LEVEL accepts the numbers or the names). */
enum rapt_log_level {
	RAPT_LOG_NONE = 0,
	RAPT_LOG_ERROR,
	RAPT_LOG_WARN,
	RAPT_LOG_INFO,
	RAPT_LOG_DEBUG,
	RAPT_LOG_TRACE,
};

/**
 * rapt_prov_log_enabled - would a message at @level from @prov be printed
 * @level: enum rapt_log_level
 * @prov: provider name, or "core"
 */
RAPT_SDK int rapt_prov_log_enabled(int level, const char *prov);

/**
 * rapt_prov_log - print a log message (use the RAPT_PLOG macros)
 */
RAPT_SDK void rapt_prov_log(int level, const char *prov, const char *func,
			    int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/**
 * rapt_prov_set_error - record the detail string rapt_last_error() returns
 * @fmt: printf format
 */
RAPT_SDK void rapt_prov_set_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* Tests the level before formatting anything. */
#define RAPT_PLOG(level, prov, ...)					\
	do {								\
		if (rapt_prov_log_enabled((level), (prov)))		\
			rapt_prov_log((level), (prov), __func__,	\
				      __LINE__, __VA_ARGS__);		\
	} while (0)

/**
 * rapt_prov_evd_push - queue an event on an EVD
 * @cevd: the EVD
 * @ev: the event; ev->evd is filled in by the core
 *
 * Thread-safe; may be called from any provider thread.  On overflow the
 * event is counted as lost and an EVD_OVERFLOW async event reports it.
 *
 * Return: 0, RAPT_EOVERFLOW.
 */
RAPT_SDK int rapt_prov_evd_push(struct rapt_core_evd *cevd,
				const struct rapt_event *ev);

/**
 * rapt_prov_evd_handle - the consumer handle of an EVD
 */
RAPT_SDK struct rapt_evd *rapt_prov_evd_handle(struct rapt_core_evd *cevd);

/**
 * rapt_prov_evd_taken - how many events consumers have taken from an EVD
 * @cevd: the EVD
 *
 * A count that only grows: two reads that differ mean a consumer took
 * events from the EVD's queue in between, although it may never have
 * called the provider (a dequeue that finds events queued takes them
 * without the evd_progress op).  Any thread; a relaxed read.
 */
RAPT_SDK uint64_t rapt_prov_evd_taken(struct rapt_core_evd *cevd);

/**
 * struct rapt_prov_conn_event - a connection event, as the transport saw it
 * @type: RAPT_EV_ESTABLISHED, PEER_REJECTED (the peer sent a reject with
 *        private data), NON_PEER_REJECTED, UNREACHABLE, TIMED_OUT,
 *        ACCEPT_ERROR, DISCONNECTED or BROKEN
 * @reason: enum rapt_reject_reason the transport determined, if any
 * @consumer_reject: for a reject whose pdata has no rapt header, whether
 *        the transport itself says the peer consumer rejected (IB REJ
 *        reason 28); iWARP cannot tell and passes 1 when the reply carried
 *        private data
 * @flags: RAPT_CONN_* flags (SENDS_HELD)
 * @pdata: private data exactly as received off the wire (framed), or NULL
 * @pdata_len: its length
 * @rdma_read_in: negotiated IRD (ESTABLISHED)
 * @rdma_read_out: negotiated ORD (ESTABLISHED)
 * @prov_status: detail (errno of the transport, for example)
 * @local_addr: local address (ESTABLISHED), AF_UNSPEC if unknown
 * @remote_addr: peer address (ESTABLISHED), AF_UNSPEC if unknown
 */
struct rapt_prov_conn_event {
	uint32_t type;
	uint32_t reason;
	uint32_t consumer_reject;
	uint32_t flags;
	const void *pdata;
	size_t pdata_len;
	uint32_t rdma_read_in;
	uint32_t rdma_read_out;
	int32_t prov_status;
	struct sockaddr_storage local_addr;
	struct sockaddr_storage remote_addr;
};

/**
 * rapt_prov_ep_event - report a connection event of an EP
 * @cep: the EP
 * @ce: what happened
 *
 * The core parses rapt's private-data header (a BUSY/VERSION marker turns a
 * reject into NON_PEER_REJECTED with that reason), moves the EP's state,
 * keeps the private data on the EP and queues the event on its connect EVD.
 * Deliver DTO flushes before DISCONNECTED/BROKEN.
 *
 * Return: 0, or RAPT_ESTATE if the event makes no sense in the EP's current
 * state (the event is then dropped and logged: a provider bug).
 */
RAPT_SDK int rapt_prov_ep_event(struct rapt_core_ep *cep,
				const struct rapt_prov_conn_event *ce);

/**
 * rapt_prov_ep_state - the core's view of an EP's state
 */
RAPT_SDK enum rapt_ep_state rapt_prov_ep_state(struct rapt_core_ep *cep);

/**
 * rapt_prov_ep_raw_pdata - whether the EP sends raw (unframed) private data
 */
RAPT_SDK int rapt_prov_ep_raw_pdata(struct rapt_core_ep *cep);

/**
 * rapt_prov_async_event - report an asynchronous error on an IA
 * @cia: the IA
 * @type: RAPT_EV_ASYNC_*
 * @handle: the consumer handle it concerns, or NULL for the IA
 * @prov_status: detail
 *
 * Queued on the IA's async EVD; logged at error level if there is none.
 */
RAPT_SDK void rapt_prov_async_event(struct rapt_core_ia *cia, uint32_t type,
				    void *handle, int32_t prov_status);

/* Handshake outcomes for rapt_prov_psp_hs_end(). */
enum rapt_hs_outcome {
	RAPT_HS_DONE = 0,	/* became a CR (or was rejected as one) */
	RAPT_HS_TIMEOUT,	/* the handshake timeout passed */
	RAPT_HS_FAILED,		/* the peer closed or spoke garbage */
};

/**
 * rapt_prov_psp_hs_begin - a new request entered the transport handshake
 * @cpsp: the PSP
 *
 * Return: 0 (counted), or RAPT_EBUSY when the handshake limit is reached:
 * the provider then refuses the request (MPA reject with the BUSY marker,
 * or a close if it never spoke) and the core has counted a busy reject.
 */
RAPT_SDK int rapt_prov_psp_hs_begin(struct rapt_core_psp *cpsp);

/**
 * rapt_prov_psp_hs_end - a request left the handshake
 * @cpsp: the PSP
 * @outcome: enum rapt_hs_outcome
 */
RAPT_SDK void rapt_prov_psp_hs_end(struct rapt_core_psp *cpsp, int outcome);

/**
 * rapt_prov_psp_hs_timeout_ms - the PSP's handshake timeout
 */
RAPT_SDK uint32_t rapt_prov_psp_hs_timeout_ms(struct rapt_core_psp *cpsp);

/**
 * struct rapt_prov_request - a connection request as the transport got it
 * @pdata: private data exactly as received (framed), or NULL
 * @pdata_len: its length
 * @rdma_read_in: IRD the requester offers
 * @rdma_read_out: ORD the requester asks for
 * @remote_addr: requester's address
 * @local_addr: where it arrived
 */
struct rapt_prov_request {
	const void *pdata;
	size_t pdata_len;
	uint32_t rdma_read_in;
	uint32_t rdma_read_out;
	struct sockaddr_storage remote_addr;
	struct sockaddr_storage local_addr;
};

/**
 * struct rapt_prov_verdict - what to send back when the core refuses
 * @reason: enum rapt_reject_reason
 * @pdata: framed reject private data to send
 * @pdata_len: its length
 */
struct rapt_prov_verdict {
	uint32_t reason;
	uint32_t pdata_len;
	uint8_t pdata[RAPT_PDATA_HEADER_LEN];
};

/**
 * rapt_prov_cr_arrive - hand a connection request to the core
 * @cpsp: the PSP
 * @pcr: the provider's request object; cr_accept/cr_reject get it back
 *       through rapt_prov_cr_request()
 * @req: the request
 * @ccr: output, the core's CR (on success)
 * @verdict: output, when the core refuses
 *
 * On success a CR_ARRIVAL event is queued.  Otherwise the core refuses
 * the request, fills @verdict, and the provider sends that reject itself
 * and frees @pcr: RAPT_EBUSY when the backlog is full (BUSY marker,
 * counted in busy_rejects) or the CR EVD is full (RESOURCES marker; the
 * EVD reports its overflow), RAPT_EVERSION when the requester speaks a
 * rapt header version this core does not know (VERSION marker),
 * RAPT_ENOMEM (RESOURCES marker).  Call rapt_prov_psp_hs_end() for the
 * request before this.
 *
 * Return: 0, RAPT_EBUSY, RAPT_EVERSION, RAPT_ENOMEM.
 */
RAPT_SDK int rapt_prov_cr_arrive(struct rapt_core_psp *cpsp, void *pcr,
				 const struct rapt_prov_request *req,
				 struct rapt_core_cr **ccr,
				 struct rapt_prov_verdict *verdict);

/**
 * rapt_prov_cr_cancel - the requester of an undecided CR went away
 * @ccr: the CR
 *
 * The core frees its backlog slot; a later rapt_cr_accept() or
 * rapt_cr_reject() fails with RAPT_ENOTCONN without calling the provider,
 * and from now on rapt_prov_cr_request(@ccr) returns NULL, so the request
 * never comes back to the provider: free it right after this returns.
 * A decision already under way still runs its op, which then finds no
 * request (and fails with RAPT_ENOTCONN).  Call at most once per CR, and
 * only for a request no cr_accept/cr_reject has consumed.
 */
RAPT_SDK void rapt_prov_cr_cancel(struct rapt_core_cr *ccr);

/**
 * rapt_prov_cr_request - the provider's request of a CR, for an op
 * @ccr: the CR that cr_accept or cr_reject received
 *
 * Call it in cr_accept/cr_reject (or on a thread they wait for) under the
 * same serialisation as the provider's rapt_prov_cr_cancel() for this
 * request (its lock, its event thread): then a non-NULL result is a
 * request that cannot be cancelled and freed under the op.
 *
 * Return: the @pcr given to rapt_prov_cr_arrive(), or NULL once the
 * provider has cancelled the CR.
 */
RAPT_SDK void *rapt_prov_cr_request(struct rapt_core_cr *ccr);

/**
 * rapt_prov_pdata_frame - frame consumer private data with rapt's header
 * @kind: enum rapt_pdata_kind
 * @data: consumer bytes, or NULL
 * @len: their length
 * @out: output buffer, at least @len + RAPT_PDATA_HEADER_LEN bytes
 *
 * Providers rarely need this: the core frames what it passes to ops.
 *
 * Return: bytes written.
 */
RAPT_SDK size_t rapt_prov_pdata_frame(uint32_t kind, const void *data,
				      size_t len, void *out);

/** enum rapt_pdata_kind - the kind nibble of rapt's private-data header */
enum rapt_pdata_kind {
	RAPT_PDATA_CONSUMER = 0,	/* connect, accept, consumer reject */
	RAPT_PDATA_BUSY = 1,		/* rapt's own BUSY reject */
	RAPT_PDATA_VERSION = 2,		/* rapt's own VERSION reject */
	RAPT_PDATA_PROTOCOL = 3,	/* rapt's own PROTOCOL reject */
	RAPT_PDATA_RESOURCES = 4,	/* rapt's own RESOURCES reject */
};

/**
 * struct rapt_pdata_view - a parsed private-data field
 * @foreign: 1 if there was no rapt header: @data is all the bytes as-is
 *	(empty private data is foreign too: a rapt peer always sends the
 *	header, even with no consumer bytes)
 * @version: header version (0 if foreign)
 * @kind: enum rapt_pdata_kind (0 if foreign)
 * @data: consumer bytes
 * @len: their exact length
 */
struct rapt_pdata_view {
	uint32_t foreign;
	uint32_t version;
	uint32_t kind;
	const void *data;
	size_t len;
};

/**
 * rapt_prov_pdata_parse - parse received private data
 * @buf: the bytes received, or NULL
 * @len: their length
 * @view: output
 *
 * Return: 0, RAPT_EVERSION (a rapt header of an unknown version; @view
 * still describes the bytes), RAPT_EPROTO (a rapt header whose length
 * exceeds the bytes received).
 */
RAPT_SDK int rapt_prov_pdata_parse(const void *buf, size_t len,
				   struct rapt_pdata_view *view);

/**
 * rapt_prov_pdata_end - where rapt's framed private data ends
 * @buf: the bytes received, or NULL
 * @len: their length
 *
 * For a provider that puts bytes of its own after the framed private data
 * (the core ignores what lies past the header's length, as it does IB's
 * padding) and must find them in what its peer sent.
 *
 * Return: RAPT_PDATA_HEADER_LEN plus the consumer bytes' length, or 0 when
 * @buf holds no valid rapt header (foreign, an unknown version, a length
 * past @len).
 */
RAPT_SDK size_t rapt_prov_pdata_end(const void *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* RAPT_API_PROVIDER_H */
