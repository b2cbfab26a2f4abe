/* SPDX-License-Identifier: MIT */
/*
 * rapt - RDMA API for Portable Transports, consumer API v1.
 *
 * Objects: IA (interface adapter), PZ (protection zone), LMR (registered
 * memory), EVD (event dispatcher), EP (reliable connected endpoint), PSP
 * (public service point, a listener), CR (connection request) and, since
 * API 1.3, RSP (reserved service point: a one-shot listener bound to one
 * EP), SRQ (shared receive queue) and RMR (memory window).
 *
 * Handles are opaque: the pointer types below are never dereferenced, their
 * values are tagged, generation-checked references into rapt's handle table.
 * A NULL, freed or wrong-type handle gives RAPT_EBADHANDLE or
 * RAPT_EHANDLETYPE, never a crash.
 *
 * Every call returns 0 or a negative RAPT_E* code (see rapt_errno.h) and
 * writes its output parameters only on success.  All calls are thread-safe.
 * Freeing an object while another thread is inside a call on that same object
 * is a consumer bug, as in libibverbs.
 */
#ifndef RAPT_API_RAPT_H
#define RAPT_API_RAPT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <rapt/rapt_errno.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RAPT_BUILDING_LIBRARY)
#define RAPT_API __attribute__((visibility("default")))
#else
#define RAPT_API
#endif

#define RAPT_API_VERSION_MAJOR 1
#define RAPT_API_VERSION_MINOR 3

/* Opaque handles: incomplete types, never dereferenced. */
struct rapt_ia;
struct rapt_pz;
struct rapt_lmr;
struct rapt_evd;
struct rapt_ep;
struct rapt_psp;
struct rapt_cr;
struct rapt_rsp;
struct rapt_srq;
struct rapt_rmr;

/** enum rapt_handle_type - what kind of object a handle names */
enum rapt_handle_type {
	RAPT_HANDLE_IA = 1,
	RAPT_HANDLE_PZ,
	RAPT_HANDLE_LMR,
	RAPT_HANDLE_EVD,
	RAPT_HANDLE_EP,
	RAPT_HANDLE_PSP,
	RAPT_HANDLE_CR,
	RAPT_HANDLE_RSP,		/* since API 1.3 */
	RAPT_HANDLE_SRQ,		/* since API 1.3 */
	RAPT_HANDLE_RMR,		/* since API 1.3 */
};

/* Timeouts are in microseconds; this one means "wait forever". */
#define RAPT_TIMEOUT_INFINITE ((int64_t)-1)

/* ------------------------------------------------------------------ */
/* Library                                                             */
/* ------------------------------------------------------------------ */

/**
 * rapt_strerror - describe a status code
 * @status: 0 or a negative RAPT_E* code
 *
 * Return: a static, human-readable string; never NULL.
 */
RAPT_API const char *rapt_strerror(int status);

/**
 * rapt_err_name - the symbolic name of a status code ("RAPT_EINVAL")
 * @status: 0 or a negative RAPT_E* code
 *
 * Return: a static string; "RAPT_E?" for an unknown code.
 */
RAPT_API const char *rapt_err_name(int status);

/**
 * rapt_last_error - detail of the calling thread's last failed call
 *
 * Each failing call records in thread-local storage why it failed, in plain
 * words (the dlerror() text, both ABI numbers, the config file and line...).
 * Successful calls leave it alone.
 *
 * Return: the detail string, or "" if this thread has had no failure.
 */
RAPT_API const char *rapt_last_error(void);

/**
 * rapt_version - the library's API version
 * @major: output, RAPT_API_VERSION_MAJOR of the library (may be NULL)
 * @minor: output, RAPT_API_VERSION_MINOR of the library (may be NULL)
 *
 * Return: the library version string, for example "1.0.0".
 */
RAPT_API const char *rapt_version(unsigned int *major, unsigned int *minor);

/**
 * rapt_context_set - attach the consumer's context to any handle
 * @handle: any rapt handle
 * @context: opaque value kept with the object
 *
 * Return: 0, or RAPT_EBADHANDLE.
 */
RAPT_API int rapt_context_set(void *handle, void *context);

/**
 * rapt_context_get - read back the consumer's context of any handle
 * @handle: any rapt handle
 * @context: output
 *
 * Return: 0, or RAPT_EBADHANDLE.
 */
RAPT_API int rapt_context_get(void *handle, void **context);

/**
 * rapt_handle_type - tell what kind of object a handle names
 * @handle: any rapt handle
 * @type: output
 *
 * Return: 0, or RAPT_EBADHANDLE for a NULL or stale handle.
 */
RAPT_API int rapt_handle_type(void *handle, enum rapt_handle_type *type);

/* ------------------------------------------------------------------ */
/* Registry                                                            */
/* ------------------------------------------------------------------ */

/** enum rapt_entry_kind - what a registry entry describes */
enum rapt_entry_kind {
	RAPT_ENTRY_PROVIDER = 1,	/* a provider DSO */
	RAPT_ENTRY_DEVICE,		/* an IA name that can be opened */
	RAPT_ENTRY_ALIAS,		/* a rapt.conf alias */
};

/**
 * struct rapt_entry - one line of the registry, as rapt_info prints it
 * @kind: enum rapt_entry_kind
 * @status: 0 if usable, else the RAPT_E* code that says why not
 * @name: IA name ("tcp:lo") or provider name ("tcp") or alias name
 * @provider: provider name
 * @target: for an alias, the IA name it stands for
 * @path: the DSO file, or the config file of an alias
 * @reason: why the entry is unusable, in plain words; for a usable device,
 *          its provider's note, or ""
 * @abi: provider ABI the DSO was built for (0 if unknown)
 * @prov_version: the provider's own version (RAPT_VERSION_* packing)
 * @transport: enum rapt_transport, for devices
 * @rank: order of preference; lower is better (rapt_ia_open(NULL))
 */
struct rapt_entry {
	uint32_t kind;
	int32_t status;
	char name[128];
	char provider[32];
	char target[128];
	char path[512];
	char reason[512];
	uint32_t abi;
	uint32_t prov_version;
	uint32_t transport;
	uint32_t rank;
};

/**
 * rapt_registry_list - list providers, devices and aliases, usable or not
 * @entries: output, an array owned by the caller; free with rapt_free()
 * @count: output, number of entries
 *
 * Scans RAPT_PROVIDER_PATH and the package library directory, loads every
 * provider it finds (RAPT_PROVIDER include/exclude lists apply) and reads
 * the configuration.  Every entry that cannot be used says why.
 *
 * Return: 0, RAPT_ENOMEM, or RAPT_ECONFIG (with rapt_last_error() naming
 * file:line) when the configuration cannot be parsed.
 */
RAPT_API int rapt_registry_list(struct rapt_entry **entries, size_t *count);

/**
 * rapt_free - release memory that rapt allocated for the caller
 * @ptr: what rapt_registry_list() returned, or NULL
 */
RAPT_API void rapt_free(void *ptr);

/* ------------------------------------------------------------------ */
/* IA                                                                  */
/* ------------------------------------------------------------------ */

/** enum rapt_transport - the wire an IA speaks */
enum rapt_transport {
	RAPT_TRANSPORT_OTHER = 0,
	RAPT_TRANSPORT_IWARP = 1,	/* MPA/DDP/RDMAP, including tcp */
	RAPT_TRANSPORT_IB = 2,		/* InfiniBand RC */
	RAPT_TRANSPORT_ROCE = 3,	/* IB RC over Ethernet */
};

/*
 * Capability bits (struct rapt_ia_attr.caps).  A capability that is
 * advertised works; a call that needs a capability that is not advertised
 * fails with RAPT_ENOTSUP.
 */
#define RAPT_CAP_RDMA_WRITE		(1ULL << 0)
#define RAPT_CAP_RDMA_READ		(1ULL << 1)
#define RAPT_CAP_INLINE			(1ULL << 2)	/* max_inline > 0 */
#define RAPT_CAP_SOLICITED		(1ULL << 3)	/* RAPT_POST_SOLICITED */
#define RAPT_CAP_FENCE			(1ULL << 4)	/* RAPT_POST_FENCE */
#define RAPT_CAP_SEND_INVALIDATE	(1ULL << 5)
#define RAPT_CAP_DISCONNECT_PDATA	(1ULL << 6)	/* pdata on disconnect */
#define RAPT_CAP_EVD_FD			(1ULL << 7)	/* rapt_evd_get_fd() */
/* The passive side may post sends as soon as it sees ESTABLISHED, even
 * before the active side sends anything (iWARP: MPA rev2 peer-to-peer RTR).
 * rapt guarantees this on every transport; a connection to an old peer
 * (MPA rev1) that needs holding says so in rapt_ep_info.flags. */
#define RAPT_CAP_PASSIVE_SEND_FIRST	(1ULL << 8)
#define RAPT_CAP_RAW_PDATA		(1ULL << 9)	/* RAPT_EP_RAW_PDATA */
#define RAPT_CAP_MULTI_EVD_STREAMS	(1ULL << 10)	/* any streams share */
#define RAPT_CAP_ZERO_LENGTH		(1ULL << 11)	/* 0-byte send/RDMA */
/* The provider sees requests in the transport's handshake, before they
 * are complete: a PSP's handshake_limit and handshake_timeout_ms apply
 * and in_handshake counts them.  Without it (rdma_cm) the kernel runs the
 * handshake and only complete requests reach rapt. */
#define RAPT_CAP_HANDSHAKE_LIMIT	(1ULL << 12)
/* rapt_ep_disconnect() in ACTIVE_PENDING withdraws the request at the
 * peer at once (its CR is cancelled). */
#define RAPT_CAP_CONNECT_CANCEL		(1ULL << 13)
/* As the target of an RDMA read, the IA checks key, bounds and
 * RAPT_MEM_REMOTE_READ before it serves the read, reports a violation as
 * a remote access error and delivers nothing the peer sent behind it. */
#define RAPT_CAP_READ_CHECK		(1ULL << 14)
/* An error the peer reports about this side's operations (an iWARP
 * Terminate: a refused RDMA write or read) reaches the consumer, as a
 * failed completion or a BROKEN connection.  Without it (kernel siw, which
 * keeps a received Terminate to itself) the connection just ends. */
#define RAPT_CAP_PEER_ERRORS		(1ULL << 15)
/* rapt_ep_reset(): a disconnected EP can be made UNCONNECTED again and
 * reused for a new connection.  Since API 1.3. */
#define RAPT_CAP_EP_RESET		(1ULL << 16)
/* rapt_ep_get_status() reports the receives and requests outstanding.
 * Since API 1.3. */
#define RAPT_CAP_EP_STATUS		(1ULL << 17)
/* Shared receive queues: rapt_srq_create(), rapt_ep_create_with_srq().
 * The limits are max_srq, max_srq_recv and max_srq_sge.  Since API 1.3. */
#define RAPT_CAP_SRQ			(1ULL << 18)
/* Memory windows: rapt_rmr_create(), rapt_rmr_bind(), rapt_rmr_unbind(),
 * invalidation by the peer's rapt_ep_post_send_inv().  The limit is
 * max_rmr.  Since API 1.3. */
#define RAPT_CAP_RMR			(1ULL << 19)
/* EPs of different processes, and of different hosts, connect to each
 * other.  Without it (an in-process loopback) only EPs of one process do.
 * Since API 1.3. */
#define RAPT_CAP_CROSS_PROCESS		(1ULL << 20)

/* EVD streams (rapt_evd_create() @streams, rapt_ia_attr.evd_merge). */
#define RAPT_EVD_DTO		(1u << 0)	/* data transfer completions */
#define RAPT_EVD_CONNECTION	(1u << 1)	/* connection events of EPs */
#define RAPT_EVD_CR		(1u << 2)	/* connection requests on PSPs */
#define RAPT_EVD_ASYNC		(1u << 3)	/* the IA's async errors */
#define RAPT_EVD_SOFTWARE	(1u << 4)	/* rapt_evd_post_software() */
#define RAPT_EVD_NSTREAMS	5
#define RAPT_EVD_ALL_STREAMS	((1u << RAPT_EVD_NSTREAMS) - 1)

/**
 * struct rapt_ia_attr - what an opened IA offers (rapt_ia_query())
 * @name: the IA name as opened ("tcp:lo")
 * @provider: provider name
 * @device: device name
 * @port: port number (0 if the transport has none)
 * @transport: enum rapt_transport
 * @caps: RAPT_CAP_* bits
 * @prov_version: provider's own version
 * @max_ep: most EPs this IA can hold
 * @max_evd_qlen: longest EVD queue
 * @max_send_depth: most outstanding sends/RDMA operations per EP
 * @max_recv_depth: most posted receives per EP
 * @max_send_sge: most SGEs in a send, RDMA write or RDMA read
 * @max_recv_sge: most SGEs in a receive
 * @max_inline: most bytes a RAPT_POST_INLINE send may carry
 * @max_msg_size: largest send/recv message
 * @max_rdma_size: largest RDMA read or write
 * @max_lmr_size: largest registration
 * @max_rdma_read_in: most RDMA reads an EP can serve at once (IRD)
 * @max_rdma_read_out: most RDMA reads an EP can have outstanding (ORD)
 * @pdata_connect: consumer private-data bytes on rapt_ep_connect()
 * @pdata_accept: consumer private-data bytes on rapt_cr_accept()
 * @pdata_reject: consumer private-data bytes on rapt_cr_reject()
 * @pdata_disconnect: consumer private-data bytes on rapt_ep_disconnect()
 * @service_id_min: lowest service id rapt_psp_create() accepts
 * @service_id_max: highest service id
 * @evd_merge: for stream bit i, the streams that may share an EVD with it
 * @local_addr: the IA's own address (its listeners bind here)
 * @max_srq: most SRQs the IA can hold (0 without RAPT_CAP_SRQ); API 1.3
 * @max_srq_recv: most receives one SRQ holds; API 1.3
 * @max_srq_sge: most SGEs in an SRQ's receive; API 1.3
 * @max_rmr: most memory windows the IA can hold (0 without RAPT_CAP_RMR);
 *           API 1.3
 *
 * The pdata_* limits are what the consumer may pass: the transport's own
 * limit minus rapt's private-data header.  An EP in RAPT_EP_RAW_PDATA mode
 * may use RAPT_PDATA_HEADER_LEN more bytes.
 */
struct rapt_ia_attr {
	char name[128];
	char provider[32];
	char device[64];
	uint32_t port;
	uint32_t transport;
	uint64_t caps;
	uint32_t prov_version;
	uint32_t max_ep;
	uint32_t max_evd_qlen;
	uint32_t max_send_depth;
	uint32_t max_recv_depth;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
	uint64_t max_msg_size;
	uint64_t max_rdma_size;
	uint64_t max_lmr_size;
	uint32_t max_rdma_read_in;
	uint32_t max_rdma_read_out;
	uint16_t pdata_connect;
	uint16_t pdata_accept;
	uint16_t pdata_reject;
	uint16_t pdata_disconnect;
	uint64_t service_id_min;
	uint64_t service_id_max;
	uint32_t evd_merge[RAPT_EVD_NSTREAMS];
	struct sockaddr_storage local_addr;
	/* API 1.3: read them only with an attr_size that covers them. */
	uint32_t max_srq;
	uint32_t max_srq_recv;
	uint32_t max_srq_sge;
	uint32_t max_rmr;
};

/* Bytes of rapt's own header in framed private data. */
#define RAPT_PDATA_HEADER_LEN 4

/**
 * rapt_ia_open - open an interface adapter
 * @name: "<provider>[:<device>[:<port>]]", an alias from rapt.conf, or
 *        NULL for the best available IA
 * @ia: output handle
 *
 * Return: 0; RAPT_ENOPROVIDER (no such provider or alias), RAPT_ENODEV (the
 * provider has no such device), RAPT_EDLOPEN / RAPT_EABI (the provider could
 * not be loaded; rapt_last_error() says why), RAPT_EINVAL (malformed name).
 */
RAPT_API int rapt_ia_open(const char *name, struct rapt_ia **ia);

/**
 * rapt_ia_close - close an IA
 * @ia: the IA
 *
 * Return: 0, or RAPT_EBUSY while it still has PZs, EVDs, EPs or PSPs.
 */
RAPT_API int rapt_ia_close(struct rapt_ia *ia);

/**
 * rapt_ia_query - read an IA's attributes and limits
 * @ia: the IA
 * @attr: output
 * @attr_size: sizeof(*attr) as the caller knows it (older callers pass a
 *             smaller struct; rapt fills only that much)
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EINVAL.
 */
RAPT_API int rapt_ia_query(struct rapt_ia *ia, struct rapt_ia_attr *attr,
			   size_t attr_size);

/* ------------------------------------------------------------------ */
/* PZ and LMR                                                          */
/* ------------------------------------------------------------------ */

/**
 * rapt_pz_create - create a protection zone
 * @ia: the IA
 * @pz: output handle
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_ENOMEM.
 */
RAPT_API int rapt_pz_create(struct rapt_ia *ia, struct rapt_pz **pz);

/**
 * rapt_pz_free - free a protection zone
 * @pz: the PZ
 *
 * Return: 0, or RAPT_EBUSY while LMRs, EPs, SRQs or RMRs still use it.
 */
RAPT_API int rapt_pz_free(struct rapt_pz *pz);

/* LMR access rights. Local read is always allowed. */
#define RAPT_MEM_LOCAL_WRITE	(1u << 0)
#define RAPT_MEM_REMOTE_READ	(1u << 1)
#define RAPT_MEM_REMOTE_WRITE	(1u << 2)

/**
 * struct rapt_lmr_info - what a registration yields
 * @lkey: key for local SGEs (struct rapt_sge.lkey)
 * @rkey: key a peer uses for RDMA to this region
 * @raddr: the address a peer names for the region's first byte
 * @length: registered length
 * @access: RAPT_MEM_* rights
 */
struct rapt_lmr_info {
	uint32_t lkey;
	uint32_t rkey;
	uint64_t raddr;
	uint64_t length;
	uint32_t access;
};

/**
 * rapt_lmr_create - register memory
 * @pz: the protection zone
 * @addr: start of the region
 * @length: bytes, at least 1
 * @access: RAPT_MEM_* rights
 * @lmr: output handle
 * @info: output keys and address (may be NULL; see rapt_lmr_query())
 *
 * The whole region must be mapped readable, and writable too when @access
 * has RAPT_MEM_LOCAL_WRITE or RAPT_MEM_REMOTE_WRITE: a registration is a
 * promise that the provider (or a remote peer) may touch it.
 *
 * Return: 0, RAPT_EINVAL (NULL address, zero length, unknown access bits),
 * RAPT_ERANGE (longer than max_lmr_size), RAPT_EFAULT (part of the region
 * is not mapped: an unmapped address, or a length past the end of a
 * mapping), RAPT_EACCES (mapped without the rights @access needs: a
 * read-only mapping registered for writing, a PROT_NONE guard page),
 * RAPT_ENOMEM.
 */
RAPT_API int rapt_lmr_create(struct rapt_pz *pz, void *addr, size_t length,
			     unsigned int access, struct rapt_lmr **lmr,
			     struct rapt_lmr_info *info);

/**
 * rapt_lmr_query - read a registration's keys and address
 * @lmr: the LMR
 * @info: output
 *
 * Return: 0, RAPT_EBADHANDLE.
 */
RAPT_API int rapt_lmr_query(struct rapt_lmr *lmr, struct rapt_lmr_info *info);

/**
 * rapt_lmr_free - deregister memory
 * @lmr: the LMR
 *
 * After this returns, the region's keys are invalid: a peer's RDMA naming
 * the rkey fails with a remote access error.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EBUSY (a call uses it, or a memory
 * window is bound over it).
 */
RAPT_API int rapt_lmr_free(struct rapt_lmr *lmr);

/* ------------------------------------------------------------------ */
/* Events and EVD                                                      */
/* ------------------------------------------------------------------ */

/*
 * The event types, XX(name, value): RAPT_EV_<name> = value.  The enum and
 * rapt_event_name() are both generated from this list.  The values are
 * ABI: append only, never renumber.  The high byte names the stream
 * (RAPT_EVD_*) that carries the event.
 */
#define RAPT_EVENT_TYPE_MAP(XX)						\
	XX(DTO,			0x0001)	/* stream RAPT_EVD_DTO */	\
									\
	XX(CR_ARRIVAL,		0x0101)	/* stream RAPT_EVD_CR */	\
									\
	XX(ESTABLISHED,		0x0201)	/* stream RAPT_EVD_CONNECTION */ \
	XX(PEER_REJECTED,	0x0202)					\
	XX(NON_PEER_REJECTED,	0x0203)					\
	XX(UNREACHABLE,		0x0204)					\
	XX(TIMED_OUT,		0x0205)					\
	XX(ACCEPT_ERROR,	0x0206)					\
	XX(DISCONNECTED,	0x0207)					\
	XX(BROKEN,		0x0208)					\
									\
	XX(ASYNC_EVD_OVERFLOW,	0x0401)	/* stream RAPT_EVD_ASYNC */	\
	XX(ASYNC_EP_BROKEN,	0x0402)					\
	XX(ASYNC_IA_CATASTROPHIC, 0x0403)				\
	XX(ASYNC_PROVIDER_ERROR, 0x0404)				\
	XX(ASYNC_SRQ_LOW_WATERMARK, 0x0405) /* API 1.3 */		\
									\
	XX(SOFTWARE,		0x0801)	/* stream RAPT_EVD_SOFTWARE */

/** enum rapt_event_type - event numbers (RAPT_EV_DTO, ...: see above) */
enum rapt_event_type {
#define RAPT__EV_ENUM(name, val) RAPT_EV_##name = (val),
	RAPT_EVENT_TYPE_MAP(RAPT__EV_ENUM)
#undef RAPT__EV_ENUM
};

/** enum rapt_dto_op - the operation a DTO completion is for */
enum rapt_dto_op {
	RAPT_OP_SEND = 1,
	RAPT_OP_RECV,
	RAPT_OP_RDMA_WRITE,
	RAPT_OP_RDMA_READ,
	RAPT_OP_RMR_BIND,		/* rapt_rmr_bind(); API 1.3 */
	RAPT_OP_RMR_UNBIND,		/* rapt_rmr_unbind(); API 1.3 */
};

/** enum rapt_dto_status - outcome of a data transfer */
enum rapt_dto_status {
	RAPT_DTO_SUCCESS = 0,
	RAPT_DTO_FLUSHED,		/* EP disconnected before it ran */
	RAPT_DTO_LOCAL_LENGTH,		/* message longer than the receive */
	RAPT_DTO_LOCAL_PROTECTION,	/* bad local key, bounds or rights */
	RAPT_DTO_REMOTE_ACCESS,		/* the peer refused key/bounds/rights */
	RAPT_DTO_REMOTE_OPERATION,	/* the peer could not do it (no recv) */
	RAPT_DTO_TRANSPORT,		/* the connection broke */
	RAPT_DTO_GENERAL,		/* anything else; see prov_status */
};

/** enum rapt_reject_reason - why NON_PEER_REJECTED */
enum rapt_reject_reason {
	RAPT_REJECT_UNKNOWN = 0,
	RAPT_REJECT_BUSY,		/* the PSP's backlog or handshake limit */
	RAPT_REJECT_NO_LISTENER,	/* nothing listens on that service id */
	RAPT_REJECT_VERSION,		/* protocol version not understood */
	RAPT_REJECT_PROTOCOL,		/* the peer broke the protocol */
	RAPT_REJECT_RESOURCES,		/* the peer lacked resources */
};

/* struct rapt_event_conn.flags */
#define RAPT_CONN_FOREIGN_PEER	(1u << 0)	/* pdata had no rapt header */
#define RAPT_CONN_SENDS_HELD	(1u << 1)	/* rev1 peer: see rapt_ep_info */

/**
 * struct rapt_event_dto - a completed data transfer
 * @ep: the endpoint
 * @cookie: the cookie given at post time
 * @op: enum rapt_dto_op
 * @status: enum rapt_dto_status
 * @length: bytes transferred (receives: bytes placed)
 * @prov_status: provider-specific detail of a failure, 0 on success
 * @flags: RAPT_DTO_* flags
 * @invalidated_rkey: with RAPT_DTO_INVALIDATED, the rkey the peer invalidated
 */
struct rapt_event_dto {
	struct rapt_ep *ep;
	uint64_t cookie;
	uint32_t op;
	uint32_t status;
	uint64_t length;
	int32_t prov_status;
	uint32_t flags;
	uint32_t invalidated_rkey;
};

#define RAPT_DTO_SOLICITED	(1u << 0)	/* receive of a solicited send */
#define RAPT_DTO_INVALIDATED	(1u << 1)	/* send with invalidate */

/**
 * struct rapt_event_cr - a connection request arrived on a PSP or an RSP
 * @psp: the PSP, or NULL for a request that arrived on an RSP
 * @cr: the request; read it with rapt_cr_query(), then accept or reject
 * @service_id: the service id it arrived on
 * @rsp: the RSP it arrived on, or NULL (a PSP's).  Since API 1.3; it fits
 *       in the event union's old size, so the event's layout is unchanged.
 */
struct rapt_event_cr {
	struct rapt_psp *psp;
	struct rapt_cr *cr;
	uint64_t service_id;
	struct rapt_rsp *rsp;
};

/**
 * struct rapt_event_conn - a connection event of an EP
 * @ep: the endpoint
 * @reason: enum rapt_reject_reason for NON_PEER_REJECTED, else 0
 * @flags: RAPT_CONN_* flags
 * @pdata: the peer's private data (ESTABLISHED: accept pdata on the active
 *         side; PEER_REJECTED: reject pdata; DISCONNECTED: disconnect pdata
 *         where supported); valid until the EP is freed; NULL if none
 * @pdata_len: its exact length
 * @rdma_read_in: negotiated IRD (ESTABLISHED)
 * @rdma_read_out: negotiated ORD (ESTABLISHED)
 * @prov_status: provider-specific detail (for example a TCP errno)
 */
struct rapt_event_conn {
	struct rapt_ep *ep;
	uint32_t reason;
	uint32_t flags;
	const void *pdata;
	uint32_t pdata_len;
	uint32_t rdma_read_in;
	uint32_t rdma_read_out;
	int32_t prov_status;
};

/**
 * struct rapt_event_async - an asynchronous error
 * @handle: the object it concerns (an EVD for EVD_OVERFLOW, an EP for
 *          EP_BROKEN, the IA for IA_CATASTROPHIC, an SRQ for
 *          SRQ_LOW_WATERMARK)
 * @count: for EVD_OVERFLOW, how many events the EVD has lost so far; for
 *         SRQ_LOW_WATERMARK, the receives the SRQ held then
 * @prov_status: provider-specific detail
 */
struct rapt_event_async {
	void *handle;
	uint64_t count;
	int32_t prov_status;
};

/** struct rapt_event_sw - a software event (rapt_evd_post_software()) */
struct rapt_event_sw {
	void *pointer;
};

/**
 * struct rapt_event - one event, as dequeued from an EVD
 * @type: enum rapt_event_type
 * @evd: the EVD it was dequeued from
 * @u: the event data, by stream
 */
struct rapt_event {
	uint32_t type;
	uint32_t reserved;
	struct rapt_evd *evd;
	union {
		struct rapt_event_dto dto;
		struct rapt_event_cr cr;
		struct rapt_event_conn conn;
		struct rapt_event_async async;
		struct rapt_event_sw sw;
	} u;
};

/**
 * rapt_event_name - the name of an event type ("ESTABLISHED")
 * @type: an event type, as in rapt_event.type
 *
 * The name is the enumerator's without its RAPT_EV_ prefix: "DTO",
 * "CR_ARRIVAL", "ESTABLISHED", "ASYNC_EVD_OVERFLOW", ...  For logs and
 * test output.  Since API 1.1.
 *
 * Return: a static string; "UNKNOWN" for a value that is not an event
 * type; never NULL.
 */
RAPT_API const char *rapt_event_name(uint32_t type);

/**
 * rapt_evd_create - create an event dispatcher
 * @ia: the IA
 * @qlen: how many events it must hold, at least 1
 * @streams: RAPT_EVD_* bits for the event streams it will carry
 * @evd: output handle
 *
 * An EVD with RAPT_EVD_ASYNC becomes the IA's async EVD; an IA has at most
 * one.  Which streams may share one EVD is rapt_ia_attr.evd_merge.
 *
 * Return: 0, RAPT_EINVAL (qlen 0 or no stream), RAPT_ERANGE (qlen above
 * max_evd_qlen), RAPT_ENOTSUP (streams the provider cannot merge),
 * RAPT_EEXIST (a second async EVD), RAPT_ENOMEM.
 */
RAPT_API int rapt_evd_create(struct rapt_ia *ia, unsigned int qlen,
			     unsigned int streams, struct rapt_evd **evd);

/**
 * rapt_evd_free - free an EVD
 * @evd: the EVD
 *
 * Threads blocked in rapt_evd_wait() on it return RAPT_ECANCELED.
 *
 * Return: 0, or RAPT_EBUSY while an EP or PSP still uses it.
 */
RAPT_API int rapt_evd_free(struct rapt_evd *evd);

/**
 * rapt_evd_dequeue - take one event without blocking
 * @evd: the EVD
 * @event: output
 *
 * Return: 0, RAPT_EAGAIN when the EVD is empty.
 */
RAPT_API int rapt_evd_dequeue(struct rapt_evd *evd, struct rapt_event *event);

/**
 * rapt_evd_dequeue_batch - take up to @max events without blocking
 * @evd: the EVD
 * @events: output array
 * @max: its length
 *
 * Return: the number of events taken (0 when empty), or a negative code.
 */
RAPT_API int rapt_evd_dequeue_batch(struct rapt_evd *evd,
				    struct rapt_event *events,
				    unsigned int max);

/**
 * rapt_evd_wait - wait for events
 * @evd: the EVD
 * @timeout_us: microseconds, 0 to poll once, RAPT_TIMEOUT_INFINITE
 * @threshold: return once this many events are queued (1..qlen)
 * @event: output, the first event
 * @nmore: output, events still queued after it (may be NULL)
 *
 * Several threads may wait on one EVD: each event goes to exactly one of
 * them, and a waiter wakes when @threshold events are queued for it.
 *
 * Return: 0, RAPT_ETIMEDOUT (the timeout passed with fewer than @threshold
 * events; none is dequeued), RAPT_ERANGE (threshold 0 or above qlen),
 * RAPT_EINVAL (negative timeout other than RAPT_TIMEOUT_INFINITE),
 * RAPT_ECANCELED (the EVD was freed while waiting: the one call that may
 * race with a free of its object, by design).
 */
RAPT_API int rapt_evd_wait(struct rapt_evd *evd, int64_t timeout_us,
			   unsigned int threshold, struct rapt_event *event,
			   unsigned int *nmore);

/**
 * rapt_evd_get_fd - a file descriptor that polls readable when armed and
 *                   an event is queued
 * @evd: the EVD
 * @fd: output; owned by rapt, closed by rapt_evd_free()
 *
 * Use: rapt_evd_arm(); if it returns RAPT_EAGAIN, dequeue; else poll/epoll
 * the fd, then dequeue until RAPT_EAGAIN and arm again.
 *
 * Return: 0, RAPT_ENOTSUP (provider without RAPT_CAP_EVD_FD), RAPT_EMFILE
 * (out of file descriptors), RAPT_ENOMEM, RAPT_EIO.
 */
RAPT_API int rapt_evd_get_fd(struct rapt_evd *evd, int *fd);

/**
 * rapt_evd_arm - request a wakeup on the EVD's fd for the next event
 * @evd: the EVD
 *
 * Clears the fd's readable state and arms it.  If events are already
 * queued it does not arm and returns RAPT_EAGAIN, so no wakeup is lost.
 *
 * Return: 0 (armed), RAPT_EAGAIN (events queued: dequeue them first).
 */
RAPT_API int rapt_evd_arm(struct rapt_evd *evd);

/**
 * rapt_evd_post_software - queue a software event
 * @evd: an EVD created with RAPT_EVD_SOFTWARE
 * @pointer: value carried in the event
 *
 * Return: 0, RAPT_EINVAL (the EVD has no software stream), RAPT_EOVERFLOW
 * (the EVD is full; nothing is queued).
 */
RAPT_API int rapt_evd_post_software(struct rapt_evd *evd, void *pointer);

/**
 * struct rapt_evd_info - rapt_evd_query() output
 * @qlen: capacity
 * @streams: RAPT_EVD_* bits
 * @count: events queued now
 * @overflows: events lost to overflow since creation
 * @waiters: threads blocked in rapt_evd_wait() now
 */
struct rapt_evd_info {
	uint32_t qlen;
	uint32_t streams;
	uint32_t count;
	uint32_t waiters;
	uint64_t overflows;
};

/**
 * rapt_evd_query - read an EVD's state
 * @evd: the EVD
 * @info: output
 * @info_size: sizeof(*info)
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EINVAL.
 */
RAPT_API int rapt_evd_query(struct rapt_evd *evd, struct rapt_evd_info *info,
			    size_t info_size);

/* ------------------------------------------------------------------ */
/* EP                                                                  */
/* ------------------------------------------------------------------ */

/*
 * The EP states, XX(name, value): RAPT_EP_<name> = value.  The enum and
 * rapt_ep_state_name() are both generated from this list.  The values are
 * ABI: append only, never renumber.
 */
#define RAPT_EP_STATE_MAP(XX)						\
	XX(UNCONNECTED,		1)	/* new; receives may be posted */ \
	XX(ACTIVE_PENDING,	2)	/* connect called */		\
	XX(PASSIVE_PENDING,	3)	/* cr_accept called */		\
	XX(CONNECTED,		4)	/* ESTABLISHED delivered */	\
	XX(DISCONNECT_PENDING,	5)	/* graceful disconnect under way */ \
	XX(DISCONNECTED,	6)	/* over: free, or rapt_ep_reset() */ \
	XX(RESERVED,		7)	/* bound to an RSP (API 1.3) */

/** enum rapt_ep_state - an EP's connection state (RAPT_EP_UNCONNECTED, ...) */
enum rapt_ep_state {
#define RAPT__EP_STATE_ENUM(name, val) RAPT_EP_##name = (val),
	RAPT_EP_STATE_MAP(RAPT__EP_STATE_ENUM)
#undef RAPT__EP_STATE_ENUM
};

/* struct rapt_ep_attr.flags */
#define RAPT_EP_RAW_PDATA	(1u << 0)	/* no rapt header: foreign peers */

/**
 * struct rapt_ep_attr - what an EP is created with
 * @max_send: outstanding sends/RDMA operations (0: provider default)
 * @max_recv: posted receives (0: provider default)
 * @max_send_sge: SGEs per send (0: default)
 * @max_recv_sge: SGEs per receive (0: default)
 * @max_inline: inline bytes (0: none)
 * @rdma_read_in: IRD to offer (0: default)
 * @rdma_read_out: ORD to ask for (0: default)
 * @flags: RAPT_EP_* flags
 */
struct rapt_ep_attr {
	uint32_t max_send;
	uint32_t max_recv;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
	uint32_t rdma_read_in;
	uint32_t rdma_read_out;
	uint32_t flags;
};

/* rapt_ep_modify() @mask bits: which fields of the attr to apply */
#define RAPT_EP_ATTR_MAX_SEND		(1u << 0)
#define RAPT_EP_ATTR_MAX_RECV		(1u << 1)
#define RAPT_EP_ATTR_RDMA_READ_IN	(1u << 2)
#define RAPT_EP_ATTR_RDMA_READ_OUT	(1u << 3)
#define RAPT_EP_ATTR_FLAGS		(1u << 4)

/**
 * rapt_ep_create - create an endpoint
 * @pz: protection zone
 * @recv_evd: EVD for receive completions (RAPT_EVD_DTO), or NULL
 * @request_evd: EVD for send/RDMA completions (RAPT_EVD_DTO), or NULL
 * @connect_evd: EVD for connection events (RAPT_EVD_CONNECTION); required
 * @attr: attributes, or NULL for the provider's defaults
 * @ep: output handle
 *
 * The EP starts RAPT_EP_UNCONNECTED; receives may be posted at once.
 *
 * Return: 0, RAPT_EINVAL (EVD without the needed stream, EVD of another
 * IA), RAPT_ERANGE (an attribute above the IA's limit), RAPT_ENOMEM.
 */
RAPT_API int rapt_ep_create(struct rapt_pz *pz, struct rapt_evd *recv_evd,
			    struct rapt_evd *request_evd,
			    struct rapt_evd *connect_evd,
			    const struct rapt_ep_attr *attr,
			    struct rapt_ep **ep);

/**
 * rapt_ep_free - free an endpoint
 * @ep: the EP
 *
 * A connected EP is disconnected abruptly first; no event for it is queued
 * after this returns (events already queued name a stale handle).
 *
 * Return: 0, RAPT_EBADHANDLE.
 */
RAPT_API int rapt_ep_free(struct rapt_ep *ep);

/**
 * rapt_ep_connect - connect to a peer's PSP
 * @ep: an EP in RAPT_EP_UNCONNECTED
 * @remote: the peer's address (port ignored: @service_id names it)
 * @service_id: the PSP's service id, within the IA's range
 * @pdata: private data for the peer, or NULL
 * @pdata_len: its length, at most rapt_ia_attr.pdata_connect
 * @timeout_us: connect timeout, or RAPT_TIMEOUT_INFINITE
 *
 * The connect EVD then gets exactly one of ESTABLISHED, PEER_REJECTED,
 * NON_PEER_REJECTED, UNREACHABLE or TIMED_OUT, unless the consumer
 * cancels the connect with rapt_ep_disconnect(), which gives DISCONNECTED.
 * If this call fails, no event is queued.
 *
 * Return: 0, RAPT_ESTATE, RAPT_ELENGTH (private data too long), RAPT_ERANGE
 * (service id out of range), RAPT_EINVAL (NULL address, negative timeout
 * other than RAPT_TIMEOUT_INFINITE), RAPT_ENOMEM (nothing changed).
 */
RAPT_API int rapt_ep_connect(struct rapt_ep *ep, const struct sockaddr *remote,
			     uint64_t service_id, const void *pdata,
			     size_t pdata_len, int64_t timeout_us);

/* rapt_ep_disconnect() @flags */
#define RAPT_CLOSE_GRACEFUL	0u	/* finish queued sends, then close */
#define RAPT_CLOSE_ABRUPT	(1u << 0)	/* flush everything now */

/**
 * rapt_ep_disconnect - end a connection
 * @ep: the EP
 * @flags: RAPT_CLOSE_GRACEFUL or RAPT_CLOSE_ABRUPT
 * @pdata: disconnect private data (needs RAPT_CAP_DISCONNECT_PDATA), or NULL
 * @pdata_len: its length
 *
 * Outstanding work completes FLUSHED, then DISCONNECTED is delivered.
 * From ACTIVE_PENDING it cancels the connect (DISCONNECTED follows).
 *
 * Return: 0, RAPT_ESTATE (not connected or pending), RAPT_ENOTSUP,
 * RAPT_ELENGTH.
 */
RAPT_API int rapt_ep_disconnect(struct rapt_ep *ep, unsigned int flags,
				const void *pdata, size_t pdata_len);

/* struct rapt_ep_info.flags */
#define RAPT_EPI_FOREIGN_PEER	(1u << 0)	/* the peer is not rapt */
#define RAPT_EPI_SENDS_HELD	(1u << 1)	/* passive sends held until the
						 * peer's first message (MPA rev1) */

/**
 * struct rapt_ep_info - rapt_ep_query() output
 * @state: enum rapt_ep_state
 * @flags: RAPT_EPI_* flags
 * @attr: current attributes
 * @rdma_read_in: negotiated IRD (connected EPs)
 * @rdma_read_out: negotiated ORD
 * @local_addr: local address (connected EPs)
 * @remote_addr: peer address (connected EPs)
 */
struct rapt_ep_info {
	uint32_t state;
	uint32_t flags;
	struct rapt_ep_attr attr;
	uint32_t rdma_read_in;
	uint32_t rdma_read_out;
	struct sockaddr_storage local_addr;
	struct sockaddr_storage remote_addr;
};

/**
 * rapt_ep_query - read an EP's state and attributes
 * @ep: the EP
 * @info: output
 * @info_size: sizeof(*info)
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EINVAL.
 */
RAPT_API int rapt_ep_query(struct rapt_ep *ep, struct rapt_ep_info *info,
			   size_t info_size);

/**
 * rapt_ep_get_state - read an EP's state
 * @ep: the EP
 * @state: output, enum rapt_ep_state
 *
 * Return: 0, RAPT_EBADHANDLE.
 */
RAPT_API int rapt_ep_get_state(struct rapt_ep *ep, enum rapt_ep_state *state);

/**
 * rapt_ep_state_name - the name of an EP state ("CONNECTED")
 * @state: an EP state, as from rapt_ep_get_state() or in rapt_ep_info.state
 *
 * The name is the enumerator's without its RAPT_EP_ prefix:
 * "UNCONNECTED", "ACTIVE_PENDING", ..., "DISCONNECTED".  For logs and test
 * output.  Since API 1.1.
 *
 * Return: a static string; "UNKNOWN" for a value that is not an EP state;
 * never NULL.
 */
RAPT_API const char *rapt_ep_state_name(uint32_t state);

/**
 * rapt_ep_modify - change an EP's attributes
 * @ep: an EP in RAPT_EP_UNCONNECTED or RAPT_EP_CONNECTED
 * @attr: new values
 * @mask: RAPT_EP_ATTR_* bits selecting which fields apply
 *
 * This is how a consumer adapts an EP to what the peer's accept private data
 * asked for: after ESTABLISHED, never during the handshake.  Read depths can
 * only be lowered once connected.
 *
 * Return: 0, RAPT_ESTATE, RAPT_ERANGE, RAPT_ENOTSUP (a field the provider
 * cannot change in this state), RAPT_EINVAL.
 */
RAPT_API int rapt_ep_modify(struct rapt_ep *ep, const struct rapt_ep_attr *attr,
			    unsigned int mask);

/*
 * The peer timeout: how long a connection's peer may stay silent before
 * the EP reports RAPT_EV_BROKEN.  It bounds both cases of a peer that
 * vanishes without closing (a host that dies, a cut link): an idle
 * connection (the provider probes the peer: TCP keepalive on tcp) and one
 * with data in flight (the data must be acknowledged in time: TCP's user
 * timeout).  Since API 1.2.
 */
#define RAPT_PEER_TIMEOUT_DEFAULT_MS	30000u
#define RAPT_PEER_TIMEOUT_MIN_MS	1000u
#define RAPT_PEER_TIMEOUT_MAX_MS	86400000u	/* a day */

/**
 * rapt_ia_set_peer_timeout - the peer timeout of the IA's future EPs
 * @ia: the IA
 * @timeout_ms: RAPT_PEER_TIMEOUT_MIN_MS to RAPT_PEER_TIMEOUT_MAX_MS
 *
 * EPs created on @ia from now on start with this peer timeout (an IA
 * starts with RAPT_PEER_TIMEOUT_DEFAULT_MS, 30 seconds).  EPs that exist
 * keep theirs: see rapt_ep_set_peer_timeout().  Since API 1.2.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_ERANGE.
 */
RAPT_API int rapt_ia_set_peer_timeout(struct rapt_ia *ia, uint32_t timeout_ms);

/**
 * rapt_ia_get_peer_timeout - the peer timeout the IA gives new EPs
 * @ia: the IA
 * @timeout_ms: output
 *
 * Since API 1.2.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_EINVAL (NULL output).
 */
RAPT_API int rapt_ia_get_peer_timeout(struct rapt_ia *ia,
				      uint32_t *timeout_ms);

/**
 * rapt_ep_set_peer_timeout - bound the silence of an EP's peer
 * @ep: the EP, in any state; a connected EP applies it at once
 * @timeout_ms: RAPT_PEER_TIMEOUT_MIN_MS to RAPT_PEER_TIMEOUT_MAX_MS
 *
 * A peer that sends nothing, acknowledges nothing and answers no probe
 * for about @timeout_ms makes the EP report RAPT_EV_BROKEN (prov_status
 * -ETIMEDOUT on tcp), whether the connection was idle or had data in
 * flight.  A peer that is merely slow to consume (its receive window
 * closed, its host alive) is not silent.  Since API 1.2.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_ERANGE, RAPT_ENOTSUP
 * (the provider has no such bound: its transport's own applies).
 */
RAPT_API int rapt_ep_set_peer_timeout(struct rapt_ep *ep, uint32_t timeout_ms);

/**
 * rapt_ep_get_peer_timeout - an EP's peer timeout
 * @ep: the EP
 * @timeout_ms: output
 *
 * Since API 1.2.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_EINVAL (NULL
 * output), RAPT_ENOTSUP (the provider has no such bound).
 */
RAPT_API int rapt_ep_get_peer_timeout(struct rapt_ep *ep,
				      uint32_t *timeout_ms);

/**
 * rapt_ep_reset - make a disconnected EP unconnected again, for reuse
 * @ep: an EP in RAPT_EP_DISCONNECTED (or RAPT_EP_UNCONNECTED: nothing
 *      to do)
 *
 * The EP keeps its PZ, EVDs, attributes, peer timeout and context, and
 * forgets its last connection: negotiated read depths, addresses, the
 * peer's private data and RAPT_EPI_* flags.  Every receive and request of
 * that connection has completed (FLUSHED at the latest) before
 * DISCONNECTED, so the queues are empty; receives posted after the reset
 * wait for the next connection, which rapt_ep_connect() or
 * rapt_cr_accept() starts as on a new EP.  Events of the old connection
 * still queued on the EVDs stay there and name this same handle: dequeue
 * them before the reset to tell them apart.  Since API 1.3.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_ENOTSUP (no
 * RAPT_CAP_EP_RESET), RAPT_ESTATE (the EP is connected or a connection is
 * pending or closing: disconnect it first and wait for DISCONNECTED; or
 * another thread is resetting it).
 */
RAPT_API int rapt_ep_reset(struct rapt_ep *ep);

/* struct rapt_ep_status.flags */
#define RAPT_EPS_RECV_IDLE	(1u << 0)	/* no receive outstanding */
#define RAPT_EPS_REQUEST_IDLE	(1u << 1)	/* no send/RDMA either */

/**
 * struct rapt_ep_status - rapt_ep_get_status() output
 * @state: enum rapt_ep_state
 * @flags: RAPT_EPS_* bits
 * @recv_posted: receives posted and not yet completed
 * @request_outstanding: sends, RDMA writes and RDMA reads posted and not
 *        yet completed (a RAPT_POST_SUPPRESS one counts until it is done)
 */
struct rapt_ep_status {
	uint32_t state;
	uint32_t flags;
	uint32_t recv_posted;
	uint32_t request_outstanding;
};

/**
 * rapt_ep_get_status - an EP's state and whether work is outstanding
 * @ep: the EP, in any state
 * @status: output
 * @status_size: sizeof(*status) as the caller knows it
 *
 * A consumer that wants to reuse or free an EP without losing track of a
 * buffer asks whether the EP still owns any: RAPT_EPS_RECV_IDLE and
 * RAPT_EPS_REQUEST_IDLE say no work of that kind is outstanding (its
 * completions may still be queued on the EVDs, not yet dequeued).  The
 * answer is a snapshot: another thread's post or the peer's traffic may
 * change it at once.  Since API 1.3.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_EINVAL (no output),
 * RAPT_ENOTSUP (no RAPT_CAP_EP_STATUS).
 */
RAPT_API int rapt_ep_get_status(struct rapt_ep *ep,
				struct rapt_ep_status *status,
				size_t status_size);

/**
 * struct rapt_sge - one scatter/gather element
 * @addr: local address, inside the LMR named by @lkey
 * @length: bytes
 * @lkey: rapt_lmr_info.lkey
 */
struct rapt_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* Post flags (send, RDMA write, RDMA read). */
#define RAPT_POST_SUPPRESS	(1u << 0)	/* no completion on success */
#define RAPT_POST_SOLICITED	(1u << 1)	/* send with solicited event */
#define RAPT_POST_FENCE		(1u << 2)	/* wait for prior RDMA reads */
#define RAPT_POST_INLINE	(1u << 3)	/* copy now; buffer reusable */

/**
 * rapt_ep_post_recv - post a receive buffer
 * @ep: the EP, in any state
 * @sgl: scatter list
 * @nsge: its length (0 for a zero-length receive)
 * @cookie: returned in the completion
 *
 * Receives posted before connect or accept catch the first messages.  On a
 * disconnected EP they complete FLUSHED.
 *
 * Return: 0, RAPT_ENOSPC (receive queue full), RAPT_EINVAL (too many SGEs).
 */
RAPT_API int rapt_ep_post_recv(struct rapt_ep *ep, const struct rapt_sge *sgl,
			       unsigned int nsge, uint64_t cookie);

/**
 * rapt_ep_post_send - send a message
 * @ep: a connected EP
 * @sgl: gather list
 * @nsge: its length
 * @cookie: returned in the completion
 * @flags: RAPT_POST_* flags
 *
 * Return: 0, RAPT_ESTATE (not connected), RAPT_ENOSPC (send queue full),
 * RAPT_EINVAL (too many SGEs, NULL list), RAPT_ELENGTH (inline data too
 * long), RAPT_ENOTSUP (a flag the provider does not offer, or an unknown
 * flag).
 */
RAPT_API int rapt_ep_post_send(struct rapt_ep *ep, const struct rapt_sge *sgl,
			       unsigned int nsge, uint64_t cookie,
			       unsigned int flags);

/**
 * rapt_ep_post_send_inv - send a message that invalidates a peer's rkey
 * @ep: a connected EP
 * @sgl: gather list
 * @nsge: its length
 * @cookie: returned in the completion
 * @flags: RAPT_POST_* flags
 * @rkey: the peer's rkey to invalidate
 *
 * Return: as rapt_ep_post_send(), and RAPT_ENOTSUP without
 * RAPT_CAP_SEND_INVALIDATE.
 */
RAPT_API int rapt_ep_post_send_inv(struct rapt_ep *ep,
				   const struct rapt_sge *sgl,
				   unsigned int nsge, uint64_t cookie,
				   unsigned int flags, uint32_t rkey);

/**
 * rapt_ep_post_write - RDMA write into a peer's region
 * @ep: a connected EP
 * @sgl: local gather list
 * @nsge: its length
 * @cookie: returned in the completion
 * @raddr: remote address (rapt_lmr_info.raddr plus offset)
 * @rkey: remote key
 * @flags: RAPT_POST_* flags
 *
 * Return: as rapt_ep_post_send().
 */
RAPT_API int rapt_ep_post_write(struct rapt_ep *ep, const struct rapt_sge *sgl,
				unsigned int nsge, uint64_t cookie,
				uint64_t raddr, uint32_t rkey,
				unsigned int flags);

/**
 * rapt_ep_post_read - RDMA read from a peer's region
 * @ep: a connected EP
 * @sgl: local scatter list
 * @nsge: its length
 * @cookie: returned in the completion
 * @raddr: remote address
 * @rkey: remote key
 * @flags: RAPT_POST_* flags
 *
 * Return: as rapt_ep_post_send().
 */
RAPT_API int rapt_ep_post_read(struct rapt_ep *ep, const struct rapt_sge *sgl,
			       unsigned int nsge, uint64_t cookie,
			       uint64_t raddr, uint32_t rkey,
			       unsigned int flags);

/* ------------------------------------------------------------------ */
/* PSP and CR                                                          */
/* ------------------------------------------------------------------ */

/* rapt_psp_create() @service_id: let the provider choose a free one. */
#define RAPT_SERVICE_ID_ANY UINT64_MAX

/**
 * struct rapt_psp_attr - how a PSP admits connection requests
 * @backlog: most CRs delivered and not yet accepted or rejected (0: 128)
 * @handshake_limit: most requests still in the transport handshake
 *                   (0: 128)
 * @handshake_timeout_ms: how long a request may stay in the handshake
 *                        (0: 5000)
 * @flags: reserved, 0
 * @bind_addr: local address to listen on; AF_UNSPEC for the IA's address
 */
struct rapt_psp_attr {
	uint32_t backlog;
	uint32_t handshake_limit;
	uint32_t handshake_timeout_ms;
	uint32_t flags;
	struct sockaddr_storage bind_addr;
};

/**
 * rapt_psp_create - listen for connection requests
 * @ia: the IA
 * @service_id: within the IA's service-id range, or RAPT_SERVICE_ID_ANY
 * @cr_evd: EVD (RAPT_EVD_CR) that gets a CR_ARRIVAL per request
 * @attr: admission limits, or NULL for defaults
 * @psp: output handle
 *
 * Requests over either bound are rejected by rapt itself; the active side
 * sees NON_PEER_REJECTED with reason RAPT_REJECT_BUSY.
 *
 * Return: 0, RAPT_ERANGE (service id out of range), RAPT_EADDRINUSE,
 * RAPT_EINVAL, RAPT_ENOMEM.
 */
RAPT_API int rapt_psp_create(struct rapt_ia *ia, uint64_t service_id,
			     struct rapt_evd *cr_evd,
			     const struct rapt_psp_attr *attr,
			     struct rapt_psp **psp);

/**
 * struct rapt_psp_info - rapt_psp_query() output
 * @service_id: the service id listened on
 * @backlog: bound on undecided CRs
 * @handshake_limit: bound on requests in the handshake
 * @handshake_timeout_ms: handshake timeout
 * @in_handshake: requests in the handshake now
 * @pending_crs: CRs delivered and not yet accepted or rejected
 * @busy_rejects: requests rejected as BUSY so far
 * @handshake_timeouts: requests dropped by the handshake timeout so far
 * @accepted: CRs accepted so far
 * @rejected: CRs rejected by the consumer so far
 */
struct rapt_psp_info {
	uint64_t service_id;
	uint32_t backlog;
	uint32_t handshake_limit;
	uint32_t handshake_timeout_ms;
	uint32_t in_handshake;
	uint32_t pending_crs;
	uint32_t reserved;
	uint64_t busy_rejects;
	uint64_t handshake_timeouts;
	uint64_t accepted;
	uint64_t rejected;
};

/**
 * rapt_psp_query - read a PSP's counters
 * @psp: the PSP
 * @info: output
 * @info_size: sizeof(*info)
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EINVAL.
 */
RAPT_API int rapt_psp_query(struct rapt_psp *psp, struct rapt_psp_info *info,
			    size_t info_size);

/**
 * rapt_psp_free - stop listening
 * @psp: the PSP
 *
 * Connections already accepted live on.
 *
 * Return: 0, or RAPT_EBUSY while CRs are delivered and undecided.
 */
RAPT_API int rapt_psp_free(struct rapt_psp *psp);

/* struct rapt_cr_info.flags */
#define RAPT_CRI_FOREIGN_PEER	(1u << 0)	/* pdata had no rapt header */

/**
 * struct rapt_cr_info - rapt_cr_query() output
 * @psp: the PSP it arrived on
 * @service_id: its service id
 * @flags: RAPT_CRI_* flags
 * @pdata: the requester's private data, exactly as sent; valid until the CR
 *         is accepted or rejected; NULL if none
 * @pdata_len: its length
 * @rdma_read_in: IRD the requester offers
 * @rdma_read_out: ORD the requester asks for
 * @remote_addr: the requester's address
 * @local_addr: the address the request arrived at
 * @rsp: the RSP it arrived on (then @psp is NULL), or NULL; since API 1.3
 */
struct rapt_cr_info {
	struct rapt_psp *psp;
	uint64_t service_id;
	uint32_t flags;
	uint32_t pdata_len;
	const void *pdata;
	uint32_t rdma_read_in;
	uint32_t rdma_read_out;
	struct sockaddr_storage remote_addr;
	struct sockaddr_storage local_addr;
	struct rapt_rsp *rsp;
};

/**
 * rapt_cr_query - read a connection request
 * @cr: the CR
 * @info: output
 * @info_size: sizeof(*info)
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EINVAL.
 */
RAPT_API int rapt_cr_query(struct rapt_cr *cr, struct rapt_cr_info *info,
			   size_t info_size);

/**
 * rapt_cr_accept - accept a connection request
 * @cr: the CR (its handle is freed by this call when it succeeds)
 * @ep: an EP of the same IA in RAPT_EP_UNCONNECTED, created before or after
 *      the CR arrived; for a CR that arrived on an RSP, the RSP's EP (in
 *      RAPT_EP_RESERVED), and no other
 * @pdata: private data for the requester, or NULL
 * @pdata_len: its length, at most rapt_ia_attr.pdata_accept
 *
 * The EP moves to RAPT_EP_PASSIVE_PENDING; its connect EVD then gets
 * ESTABLISHED (the EP may send at once) or ACCEPT_ERROR.
 *
 * Return: 0, RAPT_ESTATE (EP not unconnected, or another thread is deciding
 * this CR), RAPT_ELENGTH, RAPT_EINVAL (EP of another IA; for an RSP's CR,
 * an EP other than the RSP's: the CR stays undecided), RAPT_EBADHANDLE,
 * RAPT_ENOTCONN (the requester went away; the CR is freed), RAPT_ENOMEM
 * (the CR stays undecided).
 */
RAPT_API int rapt_cr_accept(struct rapt_cr *cr, struct rapt_ep *ep,
			    const void *pdata, size_t pdata_len);

/**
 * rapt_cr_reject - reject a connection request
 * @cr: the CR (freed by this call when it succeeds)
 * @pdata: private data for the requester, or NULL
 * @pdata_len: its length, at most rapt_ia_attr.pdata_reject
 *
 * The requester sees PEER_REJECTED with exactly this private data.  A
 * foreign requester (RAPT_CRI_FOREIGN_PEER) gets the bytes raw.
 *
 * Return: 0, RAPT_ELENGTH, RAPT_EBADHANDLE, RAPT_ESTATE (another thread is
 * deciding this CR), RAPT_ENOTCONN (the requester went away; the CR is
 * freed).  A CR whose requester went away and that nobody decides is
 * freed when its IA is closed.
 */
RAPT_API int rapt_cr_reject(struct rapt_cr *cr, const void *pdata,
			    size_t pdata_len);

/* ------------------------------------------------------------------ */
/* RSP (since API 1.3)                                                 */
/* ------------------------------------------------------------------ */

/**
 * rapt_rsp_create - a one-shot listener bound to one EP
 * @ia: the IA
 * @service_id: within the IA's service-id range, or RAPT_SERVICE_ID_ANY
 * @ep: an EP of @ia in RAPT_EP_UNCONNECTED; it becomes RAPT_EP_RESERVED
 * @cr_evd: EVD (RAPT_EVD_CR) that gets the CR_ARRIVAL
 * @rsp: output handle
 *
 * A reserved service point is the simplest passive side: the EP exists
 * before the request, and the one request that arrives is the only one
 * the RSP ever delivers (its CR_ARRIVAL names the RSP in u.cr.rsp and has
 * u.cr.psp NULL).  That CR can be accepted only with @ep; rejecting it
 * leaves @ep reserved until the RSP is freed.  Every later request is
 * refused by rapt itself: the requester sees NON_PEER_REJECTED with
 * reason RAPT_REJECT_BUSY while the RSP exists, and nothing listens once
 * it is freed.  A reserved EP cannot connect, be accepted by a PSP's CR,
 * be modified, reset or freed (RAPT_EBUSY): an accept hands it back to
 * the consumer as a normal EP, rapt_rsp_free() as an UNCONNECTED one.
 * Receives may be posted on it.  DAT's dat_rsp_create(), on every
 * provider that has listeners.  Since API 1.3.
 *
 * Return: 0, RAPT_ESTATE (@ep is not UNCONNECTED), RAPT_ERANGE (service id
 * out of range), RAPT_EADDRINUSE, RAPT_EINVAL (NULL output, EP or EVD of
 * another IA, EVD without RAPT_EVD_CR), RAPT_EBADHANDLE,
 * RAPT_EHANDLETYPE, RAPT_ENOMEM.
 */
RAPT_API int rapt_rsp_create(struct rapt_ia *ia, uint64_t service_id,
			     struct rapt_ep *ep, struct rapt_evd *cr_evd,
			     struct rapt_rsp **rsp);

/* struct rapt_rsp_info.flags */
#define RAPT_RSPI_SPENT		(1u << 0)	/* its CR arrived */

/**
 * struct rapt_rsp_info - rapt_rsp_query() output
 * @service_id: the service id listened on
 * @ep: the EP the RSP was created with
 * @flags: RAPT_RSPI_* bits
 * @pending_crs: 1 while its CR is delivered and undecided, else 0
 * @busy_rejects: requests refused so far (those after the first, and any
 *                over the handshake limit)
 */
struct rapt_rsp_info {
	uint64_t service_id;
	struct rapt_ep *ep;
	uint32_t flags;
	uint32_t pending_crs;
	uint64_t busy_rejects;
};

/**
 * rapt_rsp_query - read an RSP's state
 * @rsp: the RSP
 * @info: output
 * @info_size: sizeof(*info) as the caller knows it
 *
 * Since API 1.3.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_EINVAL.
 */
RAPT_API int rapt_rsp_query(struct rapt_rsp *rsp, struct rapt_rsp_info *info,
			    size_t info_size);

/**
 * rapt_rsp_free - stop listening and release the EP
 * @rsp: the RSP
 *
 * An EP still reserved (its CR never came, or was rejected or withdrawn)
 * becomes RAPT_EP_UNCONNECTED again; an EP that accepted the CR lives on
 * with its connection.  Since API 1.3.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_EBUSY while its CR
 * is delivered and undecided.
 */
RAPT_API int rapt_rsp_free(struct rapt_rsp *rsp);

/* ------------------------------------------------------------------ */
/* SRQ (since API 1.3)                                                 */
/* ------------------------------------------------------------------ */

/**
 * struct rapt_srq_attr - what an SRQ is created with
 * @max_recv: receives it holds at most, 1..max_srq_recv
 * @max_recv_sge: SGEs per receive (0: 4, capped at max_srq_sge)
 * @low_watermark: RAPT_EV_ASYNC_SRQ_LOW_WATERMARK when the posted
 *                 receives fall below it (0: never)
 * @flags: reserved, 0
 */
struct rapt_srq_attr {
	uint32_t max_recv;
	uint32_t max_recv_sge;
	uint32_t low_watermark;
	uint32_t flags;
};

/**
 * rapt_srq_create - create a shared receive queue
 * @pz: its protection zone: its receives' memory and its EPs are of it
 * @attr: attributes (required)
 * @srq: output handle
 *
 * One queue of receives that many EPs consume (rapt_ep_create_with_srq()),
 * so a server with thousands of connections posts one ring instead of one
 * per EP.  A message arriving on such an EP takes the oldest receive of
 * the SRQ; its completion goes to that EP's receive EVD and names the EP.
 * When the SRQ is empty the message has no buffer: the contract is that
 * the connection it arrived on breaks (RAPT_EV_BROKEN on both sides; on
 * iWARP a Terminate, DDP "no buffer"), nothing is delivered elsewhere and
 * nothing is lost silently; keep the SRQ above its low watermark.  A side
 * the transport does not tell why sees RAPT_EV_DISCONNECTED instead: the
 * receiver on IB (an RNR NAK is no error of its own; the sender, asked
 * for no RNR retries, breaks), and without RAPT_CAP_PEER_ERRORS (kernel
 * siw) both sides.  Since API 1.3.
 *
 * Return: 0, RAPT_ENOTSUP (no RAPT_CAP_SRQ), RAPT_EINVAL (NULL attr or
 * output, max_recv 0, flags), RAPT_ERANGE (above max_srq_recv,
 * max_srq_sge, or a low watermark above max_recv), RAPT_EBUSY (max_srq
 * SRQs exist), RAPT_EBADHANDLE, RAPT_ENOMEM.
 */
RAPT_API int rapt_srq_create(struct rapt_pz *pz,
			     const struct rapt_srq_attr *attr,
			     struct rapt_srq **srq);

/**
 * rapt_srq_free - free a shared receive queue
 * @srq: the SRQ
 *
 * Receives still posted are dropped without a completion: their buffers
 * are the consumer's again.  Since API 1.3.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_EBUSY while EPs use
 * it.
 */
RAPT_API int rapt_srq_free(struct rapt_srq *srq);

/**
 * rapt_srq_post_recv - post a receive to a shared receive queue
 * @srq: the SRQ
 * @sgl: scatter list, in the SRQ's PZ
 * @nsge: its length (0 for a zero-length receive), at most max_recv_sge
 * @cookie: returned in the completion
 *
 * Receives are consumed oldest first, by whichever of the SRQ's EPs gets a
 * message.  Since API 1.3.
 *
 * Return: 0, RAPT_ENOSPC (max_recv receives are posted), RAPT_EINVAL (too
 * many SGEs, NULL list), RAPT_EBADHANDLE, RAPT_EHANDLETYPE.
 */
RAPT_API int rapt_srq_post_recv(struct rapt_srq *srq,
				const struct rapt_sge *sgl, unsigned int nsge,
				uint64_t cookie);

/**
 * struct rapt_srq_info - rapt_srq_query() output
 * @attr: current attributes
 * @posted: receives posted and not yet taken by a message
 * @neps: EPs created on it
 */
struct rapt_srq_info {
	struct rapt_srq_attr attr;
	uint32_t posted;
	uint32_t neps;
};

/**
 * rapt_srq_query - read an SRQ's attributes and fill
 * @srq: the SRQ
 * @info: output
 * @info_size: sizeof(*info) as the caller knows it
 *
 * Since API 1.3.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_EINVAL.
 */
RAPT_API int rapt_srq_query(struct rapt_srq *srq, struct rapt_srq_info *info,
			    size_t info_size);

/**
 * rapt_srq_resize - change an SRQ's depth and low watermark
 * @srq: the SRQ
 * @max_recv: new depth, at least the receives posted now, at most
 *            max_srq_recv
 * @low_watermark: new low watermark (0: none), at most @max_recv
 *
 * Setting the watermark also re-arms its event: it fires again the next
 * time the posted receives fall below it.  Since API 1.3.
 *
 * Return: 0, RAPT_ERANGE, RAPT_EINVAL (@max_recv 0), RAPT_ENOTSUP (the
 * device cannot grow it that far), RAPT_EBADHANDLE, RAPT_EHANDLETYPE.
 */
RAPT_API int rapt_srq_resize(struct rapt_srq *srq, uint32_t max_recv,
			     uint32_t low_watermark);

/**
 * rapt_ep_create_with_srq - create an endpoint that receives from an SRQ
 * @pz: protection zone, the SRQ's
 * @srq: the SRQ its messages take their receives from
 * @recv_evd: EVD for its receive completions (RAPT_EVD_DTO), or NULL
 * @request_evd: EVD for send/RDMA completions (RAPT_EVD_DTO), or NULL
 * @connect_evd: EVD for connection events (RAPT_EVD_CONNECTION); required
 * @attr: attributes, or NULL; max_recv and max_recv_sge are the SRQ's
 *        business and ignored
 * @ep: output handle
 *
 * As rapt_ep_create(), but rapt_ep_post_recv() on this EP fails with
 * RAPT_EINVAL: its receives come from @srq.  A receive a message has
 * started to fill belongs to the EP: if the connection ends, it completes
 * FLUSHED on the EP's receive EVD; receives still in the SRQ stay there.
 * rapt_ep_get_status() counts such a receive only.  The SRQ cannot be
 * freed while the EP exists.  Since API 1.3.
 *
 * Return: as rapt_ep_create(), and RAPT_ENOTSUP (no RAPT_CAP_SRQ),
 * RAPT_EINVAL (an SRQ of another PZ).
 */
RAPT_API int rapt_ep_create_with_srq(struct rapt_pz *pz, struct rapt_srq *srq,
				     struct rapt_evd *recv_evd,
				     struct rapt_evd *request_evd,
				     struct rapt_evd *connect_evd,
				     const struct rapt_ep_attr *attr,
				     struct rapt_ep **ep);

/* ------------------------------------------------------------------ */
/* RMR: memory windows (since API 1.3)                                 */
/* ------------------------------------------------------------------ */

/**
 * struct rapt_rmr_info - rapt_rmr_query() output
 * @rkey: the key a peer names for the window now; 0 while it is not
 *        bound (never bound, unbound, invalidated by the peer, or its
 *        last bind was refused)
 * @access: the remote rights of the last bind (RAPT_MEM_REMOTE_*)
 * @raddr: the address of the window's first byte, as a peer names it
 * @length: the window's length in bytes
 * @lmr: the LMR of the last bind, or NULL
 */
struct rapt_rmr_info {
	uint32_t rkey;
	uint32_t access;
	uint64_t raddr;
	uint64_t length;
	struct rapt_lmr *lmr;
};

/**
 * rapt_rmr_create - create a memory window
 * @pz: its protection zone: it can be bound over LMRs of this PZ, through
 *      EPs of this PZ, and serves only EPs of this PZ
 * @rmr: output handle
 *
 * A new window is not bound: no key reaches memory through it.  Since API
 * 1.3.
 *
 * Return: 0, RAPT_ENOTSUP (no RAPT_CAP_RMR), RAPT_EINVAL (NULL output),
 * RAPT_EBUSY (max_rmr windows exist), RAPT_EBADHANDLE, RAPT_EHANDLETYPE,
 * RAPT_ENOMEM.
 */
RAPT_API int rapt_rmr_create(struct rapt_pz *pz, struct rapt_rmr **rmr);

/**
 * rapt_rmr_bind - open a window over part of an LMR, with narrower rights
 * @rmr: the window
 * @ep: a connected EP of the window's PZ: the bind is a work request on
 *      its send queue and completes on its request EVD
 * @lmr: the LMR, of the window's PZ
 * @addr: the window's first byte, inside the LMR (as its raddr counts)
 * @length: bytes, at least 1, all inside the LMR
 * @access: RAPT_MEM_REMOTE_READ and/or RAPT_MEM_REMOTE_WRITE, each one the
 *          LMR has
 * @cookie: returned in the completion
 * @flags: RAPT_POST_SUPPRESS (no completion on success), RAPT_POST_FENCE
 *         (wait for the EP's RDMA reads)
 * @rkey: output: the window's new key, for the peer
 *
 * A bound window is rebound in one step: its old key stops working and
 * @rkey is new (each bind changes the key's tag part; a key returns only
 * after thousands of binds of one window).  The window takes effect when
 * the call returns; its completion (a RAPT_EV_DTO of op RAPT_OP_RMR_BIND,
 * length 0) comes in order with the EP's other sends and RDMA operations,
 * and a bind that completes FLUSHED has still taken effect.  The peer may
 * write and/or read through @rkey (at addresses @addr.. @addr + @length -
 * 1) whatever EP of the PZ its RDMA arrives on; a byte outside the window
 * or a right not bound is a remote access error for the peer, breaks the
 * connection (on iWARP a Terminate) and touches nothing.  The LMR's own
 * rkey is unchanged.  The LMR cannot be freed (RAPT_EBUSY) while a window
 * is bound over it.  Since API 1.3.
 *
 * Return: 0; RAPT_ENOTSUP (no RAPT_CAP_RMR); RAPT_EINVAL (NULL output,
 * length 0, access bits other than the remote ones or none, flags other
 * than SUPPRESS and FENCE, an LMR or EP of another PZ); RAPT_EACCES (a
 * right the LMR lacks); RAPT_ERANGE (a range not inside the LMR);
 * RAPT_ESTATE (the EP is not connected); RAPT_ENOSPC (its send queue is
 * full); RAPT_EBADHANDLE; RAPT_EHANDLETYPE.  Nothing changes on failure.
 */
RAPT_API int rapt_rmr_bind(struct rapt_rmr *rmr, struct rapt_ep *ep,
			   struct rapt_lmr *lmr, uint64_t addr,
			   uint64_t length, unsigned int access,
			   uint64_t cookie, unsigned int flags,
			   uint32_t *rkey);

/**
 * rapt_rmr_unbind - invalidate a window locally
 * @rmr: the window
 * @ep: a connected EP of the window's PZ (as for rapt_rmr_bind())
 * @cookie: returned in the completion
 * @flags: RAPT_POST_SUPPRESS, RAPT_POST_FENCE
 *
 * The window's key stops working when the call returns (RDMA already
 * touching the window finishes first); the completion is a RAPT_EV_DTO of
 * op RAPT_OP_RMR_UNBIND.  Unbinding a window that is not bound (or that
 * the peer invalidated) succeeds.  The window can be bound again.  Since
 * API 1.3.
 *
 * Return: 0, RAPT_ENOTSUP, RAPT_EINVAL (flags, an EP of another PZ),
 * RAPT_ESTATE, RAPT_ENOSPC, RAPT_EBADHANDLE, RAPT_EHANDLETYPE.
 */
RAPT_API int rapt_rmr_unbind(struct rapt_rmr *rmr, struct rapt_ep *ep,
			     uint64_t cookie, unsigned int flags);

/**
 * rapt_rmr_query - read a window's binding
 * @rmr: the window
 * @info: output
 * @info_size: sizeof(*info) as the caller knows it
 *
 * @info->rkey is 0 once the window is not bound, including after the
 * peer invalidated it with a Send with Invalidate.  Since API 1.3.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE, RAPT_EINVAL.
 */
RAPT_API int rapt_rmr_query(struct rapt_rmr *rmr, struct rapt_rmr_info *info,
			    size_t info_size);

/**
 * rapt_rmr_free - free a memory window
 * @rmr: the window
 *
 * A bound window is invalidated first (no completion: the window needs
 * no EP to be freed).  After this returns no byte moves through its key.
 * Since API 1.3.
 *
 * Return: 0, RAPT_EBADHANDLE, RAPT_EHANDLETYPE.
 */
RAPT_API int rapt_rmr_free(struct rapt_rmr *rmr);

#ifdef __cplusplus
}
#endif

#endif /* RAPT_API_RAPT_H */
