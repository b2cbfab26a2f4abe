// SPDX-License-Identifier: MIT
/*
 * DAT handles: a table of the live wrappers, so that a call on a freed or
 * made-up handle fails with DAT_INVALID_HANDLE instead of reading freed
 * memory (libdat2 itself only checks for NULL), and the mapping of rapt's
 * status codes onto DAT's.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdat.h"

#define RDAT_BUCKETS 4096

static pthread_mutex_t rdat_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rdat_obj *rdat_table[RDAT_BUCKETS];

static size_t rdat_hash(const void *p)
{
	uintptr_t v = (uintptr_t)p;

	return (size_t)((v >> 4) ^ (v >> 16)) % RDAT_BUCKETS;
}

/**
 * rdat_obj_new - allocate a zeroed wrapper and make its handle live
 * @size: size of the whole object (its struct rdat_obj first)
 * @type: DAT handle type
 * @ia: the IA it belongs to (NULL for an IA: it is its own)
 * @prov: the provider table libdat2 will dispatch through
 *
 * Return: the object, or NULL when out of memory.
 */
void *rdat_obj_new(size_t size, DAT_HANDLE_TYPE type, struct rdat_ia *ia,
		   const DAT_PROVIDER *prov)
{
	struct rdat_obj *o = calloc(1, size);
	size_t b;

	if (!o)
		return NULL;
	o->prov = prov;
	o->type = type;
	o->ia = ia ? ia : (struct rdat_ia *)o;
	b = rdat_hash(o);
	pthread_mutex_lock(&rdat_lock);
	o->hnext = rdat_table[b];
	rdat_table[b] = o;
	pthread_mutex_unlock(&rdat_lock);
	return o;
}

/* Tie the rapt handle to its wrapper both ways. */
void rdat_obj_bind(struct rdat_obj *o, void *rapt_handle)
{
	o->h = rapt_handle;
	rapt_context_set(rapt_handle, o);
}

/* Free a rapt object by the type of the DAT handle that wraps it. */
static int rdat_rapt_free(DAT_HANDLE_TYPE type, void *h)
{
	switch (type) {
	case DAT_HANDLE_TYPE_PZ:
		return rapt_pz_free(h);
	case DAT_HANDLE_TYPE_LMR:
		return rapt_lmr_free(h);
	case DAT_HANDLE_TYPE_EVD:
		return rapt_evd_free(h);
	case DAT_HANDLE_TYPE_EP:
		return rapt_ep_free(h);
	case DAT_HANDLE_TYPE_SRQ:
		return rapt_srq_free(h);
	case DAT_HANDLE_TYPE_RMR:
		return rapt_rmr_free(h);
	case DAT_HANDLE_TYPE_PSP:
		return rapt_psp_free(h);
	case DAT_HANDLE_TYPE_RSP:
		return rapt_rsp_free(h);
	case DAT_HANDLE_TYPE_IA:
		return rapt_ia_close(h);
	default:	/* a CR is freed by its accept or reject */
		return 0;
	}
}

/**
 * rdat_wrap - the DAT handle of a rapt object just created
 * @ia: its IA
 * @size: size of the DAT object (its struct rdat_obj first)
 * @type: DAT handle type
 * @rapt_handle: the rapt object; freed again if no wrapper can be made
 *
 * Return: the object, or NULL (out of memory: return RDAT_NOMEM).
 */
void *rdat_wrap(struct rdat_ia *ia, size_t size, DAT_HANDLE_TYPE type,
		void *rapt_handle)
{
	struct rdat_obj *o = rdat_obj_new(size, type, ia, ia->o.prov);

	if (!o) {
		rdat_rapt_free(type, rapt_handle);
		return NULL;
	}
	rdat_obj_bind(o, rapt_handle);
	return o;
}

/**
 * rdat_free - free the rapt object behind a DAT handle, then the handle
 * @h: the handle
 * @type: the type the call needs
 *
 * Return: DAT_SUCCESS, DAT_INVALID_HANDLE, or the rapt failure's code
 * (the handle then stays).
 */
DAT_RETURN rdat_free(DAT_HANDLE h, DAT_HANDLE_TYPE type)
{
	struct rdat_obj *o = rdat_get(h, type);
	int rc;

	if (!o)
		return rdat_bad(type);
	rc = rdat_rapt_free(type, o->h);
	if (rc)
		return rdat_status(rc);
	rdat_obj_del(o);
	return DAT_SUCCESS;
}

/* Take the handle out of the table and free the wrapper. */
void rdat_obj_del(struct rdat_obj *o)
{
	struct rdat_obj **pp;

	pthread_mutex_lock(&rdat_lock);
	for (pp = &rdat_table[rdat_hash(o)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == o) {
			*pp = o->hnext;
			break;
		}
	}
	pthread_mutex_unlock(&rdat_lock);
	free(o);
}

/**
 * rdat_get - look a DAT handle up
 * @h: the handle the consumer passed
 * @type: the type the call needs, or RDAT_ANY
 *
 * Return: the live object of that type, or NULL.
 */
void *rdat_get(DAT_HANDLE h, DAT_HANDLE_TYPE type)
{
	struct rdat_obj *o;

	if (!h)
		return NULL;
	pthread_mutex_lock(&rdat_lock);
	for (o = rdat_table[rdat_hash(h)]; o; o = o->hnext)
		if (o == h)
			break;
	pthread_mutex_unlock(&rdat_lock);
	return o && (o->type == type || type == RDAT_ANY) ? o : NULL;
}

/* The wrapper of a rapt handle named in an event; NULL if it is gone. */
void *rdat_from_rapt(void *rapt_handle)
{
	void *ctx = NULL;

	if (!rapt_handle || rapt_context_get(rapt_handle, &ctx))
		return NULL;
	return ctx;
}

/**
 * rdat_ia_children - the live objects of an IA (not the IA itself)
 * @ia: the IA
 * @out: array to fill, or NULL to count only
 * @max: its length
 *
 * Return: how many there are (may exceed @max).
 */
size_t rdat_ia_children(struct rdat_ia *ia, struct rdat_obj **out,
			size_t max)
{
	struct rdat_obj *o;
	size_t b, n = 0;

	pthread_mutex_lock(&rdat_lock);
	for (b = 0; b < RDAT_BUCKETS; b++) {
		for (o = rdat_table[b]; o; o = o->hnext) {
			if (o->ia != ia || o == &ia->o)
				continue;
			if (out && n < max)
				out[n] = o;
			n++;
		}
	}
	pthread_mutex_unlock(&rdat_lock);
	return n;
}

/* DAT_INVALID_HANDLE with the subtype that names the handle's kind. */
DAT_RETURN rdat_bad(DAT_HANDLE_TYPE type)
{
	static const DAT_RETURN_SUBTYPE sub[] = {
		[DAT_HANDLE_TYPE_CR] = DAT_INVALID_HANDLE_CR,
		[DAT_HANDLE_TYPE_EP] = DAT_INVALID_HANDLE_EP,
		[DAT_HANDLE_TYPE_EVD] = DAT_INVALID_HANDLE_EVD_REQUEST,
		[DAT_HANDLE_TYPE_IA] = DAT_INVALID_HANDLE_IA,
		[DAT_HANDLE_TYPE_LMR] = DAT_INVALID_HANDLE_LMR,
		[DAT_HANDLE_TYPE_PSP] = DAT_INVALID_HANDLE_PSP,
		[DAT_HANDLE_TYPE_PZ] = DAT_INVALID_HANDLE_PZ,
		[DAT_HANDLE_TYPE_RMR] = DAT_INVALID_HANDLE_RMR,
		[DAT_HANDLE_TYPE_RSP] = DAT_INVALID_HANDLE_RSP,
		[DAT_HANDLE_TYPE_CNO] = DAT_INVALID_HANDLE_CNO,
		[DAT_HANDLE_TYPE_SRQ] = DAT_INVALID_HANDLE_SRQ,
		[DAT_HANDLE_TYPE_CSP] = DAT_INVALID_HANDLE_CSP,
	};

	if ((unsigned int)type >= sizeof(sub) / sizeof(sub[0]))
		return RDAT_ERR(DAT_INVALID_HANDLE, 0);
	return RDAT_ERR(DAT_INVALID_HANDLE, sub[type]);
}

/* The port of an IP address (a DAT port qual), 0 for other families. */
uint16_t rdat_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

/*
 * DAT has no detail string per call: with RAPT_DAT2_DEBUG set, each rapt
 * failure behind a DAT code is printed with rapt_last_error()'s detail.
 */
static int rdat_debug_on(void)
{
	static int on = -1;

	if (__atomic_load_n(&on, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&on, getenv("RAPT_DAT2_DEBUG") != NULL,
				 __ATOMIC_RELAXED);
	return __atomic_load_n(&on, __ATOMIC_RELAXED);
}

/*
 * RAPT_DAT2_TRACE=FILE: one line per connection event delivered, in the
 * order the consumer gets them, fully buffered (written at exit or when
 * the buffer fills) so that tracing hardly changes the timing it records.
 */
static pthread_mutex_t rdat_trace_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *rdat_trace_file;
static int rdat_trace_state;	/* 0 not looked, 1 on, -1 off */

static void rdat_trace_close(void)
{
	pthread_mutex_lock(&rdat_trace_lock);
	if (rdat_trace_file)
		fclose(rdat_trace_file);
	rdat_trace_file = NULL;
	rdat_trace_state = -1;
	pthread_mutex_unlock(&rdat_trace_lock);
}

/**
 * rdat_trace - note a delivered event in RAPT_DAT2_TRACE's file
 * @num: the DAT event number
 * @h: the DAT handle it names
 */
void rdat_trace(DAT_EVENT_NUMBER num, const void *h)
{
	const char *path;

	if (__atomic_load_n(&rdat_trace_state, __ATOMIC_RELAXED) < 0)
		return;
	pthread_mutex_lock(&rdat_trace_lock);
	if (!rdat_trace_state) {
		path = getenv("RAPT_DAT2_TRACE");
		rdat_trace_file = path && *path ? fopen(path, "a") : NULL;
		if (rdat_trace_file) {
			setvbuf(rdat_trace_file, NULL, _IOFBF, 1 << 16);
			atexit(rdat_trace_close);
		}
		__atomic_store_n(&rdat_trace_state,
				 rdat_trace_file ? 1 : -1, __ATOMIC_RELAXED);
	}
	if (rdat_trace_file)
		fprintf(rdat_trace_file, "event %#x handle %p\n",
			(unsigned int)num, h);
	pthread_mutex_unlock(&rdat_trace_lock);
}

static void rdat_debug(int rc)
{
	if (rdat_debug_on() && rc && rc != RAPT_EAGAIN &&
	    rc != RAPT_ETIMEDOUT)
		fprintf(stderr, "rapt-dat2: %s: %s\n", rapt_err_name(rc),
			rapt_last_error());
}

/* One rapt status code to its DAT return code. */
DAT_RETURN rdat_status(int rc)
{
	rdat_debug(rc);
	switch (rc) {
	case 0:
		return DAT_SUCCESS;
	case RAPT_EBADHANDLE:
	case RAPT_EHANDLETYPE:
		return RDAT_ERR(DAT_INVALID_HANDLE, 0);
	case RAPT_EINVAL:
	case RAPT_ERANGE:
	case RAPT_EFAULT:
		return RDAT_ERR(DAT_INVALID_PARAMETER, 0);
	case RAPT_EACCES:
		return RDAT_ERR(DAT_PRIVILEGES_VIOLATION, 0);
	case RAPT_ELENGTH:
		return RDAT_ERR(DAT_LENGTH_ERROR, 0);
	case RAPT_ENOMEM:
	case RAPT_EMFILE:
		return RDAT_ERR(DAT_INSUFFICIENT_RESOURCES,
				DAT_RESOURCE_MEMORY);
	case RAPT_ENOSPC:
		return RDAT_ERR(DAT_INSUFFICIENT_RESOURCES, 0);
	case RAPT_ESTATE:
	case RAPT_EBUSY:
	case RAPT_EEXIST:
	case RAPT_ENOTCONN:
		return RDAT_ERR(DAT_INVALID_STATE, 0);
	case RAPT_ENOTSUP:
		return RDAT_NOMODEL;
	case RAPT_EADDRINUSE:
		return RDAT_ERR(DAT_CONN_QUAL_IN_USE, 0);
	/* "No event": bare types, as consumers compare them with ==
	 * (dtest's polling loop: dat_evd_dequeue() == DAT_QUEUE_EMPTY). */
	case RAPT_ETIMEDOUT:
		return DAT_TIMEOUT_EXPIRED;
	case RAPT_EAGAIN:
		return DAT_QUEUE_EMPTY;
	case RAPT_EOVERFLOW:
		return RDAT_ERR(DAT_QUEUE_FULL, 0);
	case RAPT_ECANCELED:
		return RDAT_ERR(DAT_ABORT, 0);
	case RAPT_EINTR:
		return RDAT_ERR(DAT_INTERRUPTED_CALL, 0);
	case RAPT_ENOPROVIDER:
	case RAPT_ENODEV:
	case RAPT_EDLOPEN:
	case RAPT_EABI:
		return RDAT_ERR(DAT_PROVIDER_NOT_FOUND, 0);
	default:
		return RDAT_ERR(DAT_INTERNAL_ERROR, 0);
	}
}

DAT_RETURN rdat_set_consumer_context(DAT_HANDLE h, DAT_CONTEXT ctx)
{
	struct rdat_obj *o = rdat_get(h, RDAT_ANY);

	if (!o)
		return rdat_bad(DAT_HANDLE_TYPE_EXTENSION_BASE);
	o->ctx = ctx;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *ctx)
{
	struct rdat_obj *o = rdat_get(h, RDAT_ANY);

	if (!o)
		return rdat_bad(DAT_HANDLE_TYPE_EXTENSION_BASE);
	if (!ctx)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	*ctx = o->ctx;
	return DAT_SUCCESS;
}

DAT_RETURN rdat_get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *type)
{
	struct rdat_obj *o = rdat_get(h, RDAT_ANY);

	if (!o)
		return rdat_bad(DAT_HANDLE_TYPE_EXTENSION_BASE);
	if (!type)
		return RDAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	*type = o->type;
	return DAT_SUCCESS;
}
