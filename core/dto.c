/* SPDX-License-Identifier: MIT */
/*
 * The data path: post calls.  Each resolves the handle without a lock,
 * checks the state and the cheap invariants, and calls the provider.
 * Debug builds (--enable-debug) also check every SGE.
 */
#include "config.h"

#include "rapt_int.h"

static struct rapt_core_ep *ep_fast(struct rapt_ep *h)
{
	return (struct rapt_core_ep *)rapt__obj_fast(h, RAPT_CLS_EP);
}

/* The slow path of a failed check: say precisely what was wrong. */
static int __attribute__((noinline)) post_fail(struct rapt_ep *h,
					       struct rapt_core_ep *ep,
					       const char *what, bool recv,
					       uint32_t nsge, uint32_t max,
					       uint32_t flags)
{
	struct rapt_obj *o;
	int ret;

	if (!ep) {
		ret = rapt__obj_lookup(h, RAPT_CLS_EP, &o);
		return ret ? ret : RAPT_EBADHANDLE;
	}
	if (!recv && atomic_load(&ep->state) != RAPT_EP_CONNECTED)
		return rapt__fail(RAPT_ESTATE, "%s: EP is %s, not CONNECTED",
				  what,
				  rapt_ep_state_name(atomic_load(&ep->state)));
	if (nsge > max)
		return rapt__fail(RAPT_EINVAL, "%s: %u SGEs, the EP allows %u",
				  what, nsge, max);
	if (flags & ~ep->post_flags)
		return rapt__fail(RAPT_ENOTSUP,
				  "%s: flags %#x not supported by this provider",
				  what, flags & ~ep->post_flags);
	return rapt__fail(RAPT_EINVAL, "%s: NULL SGE list", what);
}

static int sge_check(struct rapt_core_ep *ep, const struct rapt_sge *sgl,
		     uint32_t nsge, uint32_t flags, const char *what)
{
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < nsge; i++)
		total += sgl[i].length;
	if ((flags & RAPT_POST_INLINE) && total > ep->attr.max_inline)
		return rapt__fail(RAPT_ELENGTH,
				  "%s: %llu inline bytes, the EP allows %u",
				  what, (unsigned long long)total,
				  ep->attr.max_inline);
	if (RAPT_DEBUG_BUILD && total > ep->obj.ia->attr.max_msg_size &&
	    ep->obj.ia->attr.max_msg_size)
		return rapt__fail(RAPT_ELENGTH, "%s: %llu bytes exceed %llu",
				  what, (unsigned long long)total,
				  (unsigned long long)ep->obj.ia->attr.max_msg_size);
	return 0;
}

/* The checks of post_check() done again, slowly, to say what failed. */
static int __attribute__((noinline)) post_check_slow(struct rapt_ep *h,
						     struct rapt_core_ep *ep,
						     const struct rapt_sge *sgl,
						     uint32_t nsge,
						     uint32_t flags,
						     const char *what)
{
	if (!ep || atomic_load(&ep->state) != RAPT_EP_CONNECTED ||
	    nsge > ep->attr.max_send_sge || (flags & ~ep->post_flags) ||
	    (nsge && !sgl))
		return post_fail(h, ep, what, false, nsge,
				 ep ? ep->attr.max_send_sge : 0, flags);
	return sge_check(ep, sgl, nsge, flags, what);
}

/*
 * The fast test of every outbound post: true sends it to the slow path,
 * which checks again and says what failed.  Inline posts (and every post
 * of a debug build) go there too, so a plain post pays for one branch.
 */
static inline bool post_suspect(struct rapt_core_ep *ep,
				const struct rapt_sge *sgl, uint32_t nsge,
				uint32_t flags)
{
	return rapt_unlikely(RAPT_DEBUG_BUILD || !ep ||
			     atomic_load_explicit(&ep->state,
						  memory_order_acquire) !=
			     RAPT_EP_CONNECTED ||
			     nsge > ep->attr.max_send_sge ||
			     (flags & ep->post_slow) ||
			     (!sgl && nsge));
}

/* Shared checks of every outbound post; 0 or the failure. */
static inline int post_check(struct rapt_ep *h, struct rapt_core_ep *ep,
			     const struct rapt_sge *sgl, uint32_t nsge,
			     uint32_t flags, const char *what)
{
	if (post_suspect(ep, sgl, nsge, flags))
		return post_check_slow(h, ep, sgl, nsge, flags, what);
	return 0;
}

/*
 * The post calls below keep their fast path free of calls other than the
 * provider's op, which they tail-call, so it needs no stack frame: what
 * the fast test does not pass goes to a *_slow() twin with the same
 * arguments, which resolves the handle again and checks precisely.
 */

RAPT_API int rapt_ep_post_recv(struct rapt_ep *h, const struct rapt_sge *sgl,
			       unsigned int nsge, uint64_t cookie)
{
	struct rapt_core_ep *ep = ep_fast(h);

	if (rapt_unlikely(!ep || nsge > ep->attr.max_recv_sge ||
			  (nsge && !sgl) || ep->srq)) {
		if (ep && ep->srq)
			return rapt__fail(RAPT_EINVAL,
					  "rapt_ep_post_recv: the EP takes its receives from its SRQ (rapt_srq_post_recv)");
		return post_fail(h, ep, "rapt_ep_post_recv", true, nsge,
				 ep ? ep->attr.max_recv_sge : 0, 0);
	}
	return ep->ops->post_recv(ep->obj.prov, sgl, nsge, cookie);
}

static int __attribute__((noinline)) post_send_slow(struct rapt_ep *h,
						    const struct rapt_sge *sgl,
						    unsigned int nsge,
						    uint64_t cookie,
						    unsigned int flags)
{
	struct rapt_core_ep *ep = ep_fast(h);
	int ret = post_check_slow(h, ep, sgl, nsge, flags,
				  "rapt_ep_post_send");

	if (ret)
		return ret;
	return ep->ops->post_send(ep->obj.prov, sgl, nsge, cookie,
				  flags, 0);
}

RAPT_API int rapt_ep_post_send(struct rapt_ep *h, const struct rapt_sge *sgl,
			       unsigned int nsge, uint64_t cookie,
			       unsigned int flags)
{
	struct rapt_core_ep *ep = ep_fast(h);

	if (post_suspect(ep, sgl, nsge, flags))
		return post_send_slow(h, sgl, nsge, cookie, flags);
	return ep->ops->post_send(ep->obj.prov, sgl, nsge, cookie,
				  flags, 0);
}

RAPT_API int rapt_ep_post_send_inv(struct rapt_ep *h,
				   const struct rapt_sge *sgl,
				   unsigned int nsge, uint64_t cookie,
				   unsigned int flags, uint32_t rkey)
{
	struct rapt_core_ep *ep = ep_fast(h);
	int ret = post_check(h, ep, sgl, nsge, flags, "rapt_ep_post_send_inv");

	if (rapt_unlikely(ret))
		return ret;
	if (!(ep->obj.ia->attr.caps & RAPT_CAP_SEND_INVALIDATE))
		return rapt__fail(RAPT_ENOTSUP,
				  "provider does not offer send with invalidate");
	return ep->ops->post_send(ep->obj.prov, sgl, nsge, cookie,
				  flags | RAPT_PROV_POST_INVALIDATE, rkey);
}

static int rdma_check(struct rapt_core_ep *ep, uint64_t cap, const char *what)
{
	if (rapt_unlikely(!(ep->obj.ia->attr.caps & cap)))
		return rapt__fail(RAPT_ENOTSUP, "%s: not supported by this provider",
				  what);
	return 0;
}

static int __attribute__((noinline)) post_write_slow(struct rapt_ep *h,
						     const struct rapt_sge *sgl,
						     unsigned int nsge,
						     uint64_t cookie,
						     uint64_t raddr,
						     uint32_t rkey,
						     unsigned int flags)
{
	struct rapt_core_ep *ep = ep_fast(h);
	int ret = post_check_slow(h, ep, sgl, nsge, flags,
				  "rapt_ep_post_write");

	if (!ret)
		ret = rdma_check(ep, RAPT_CAP_RDMA_WRITE, "rapt_ep_post_write");
	if (ret)
		return ret;
	return ep->ops->post_write(ep->obj.prov, sgl, nsge, cookie,
				   raddr, rkey, flags);
}

RAPT_API int rapt_ep_post_write(struct rapt_ep *h, const struct rapt_sge *sgl,
				unsigned int nsge, uint64_t cookie,
				uint64_t raddr, uint32_t rkey,
				unsigned int flags)
{
	struct rapt_core_ep *ep = ep_fast(h);

	if (post_suspect(ep, sgl, nsge, flags) ||
	    rapt_unlikely(!(ep->obj.ia->attr.caps & RAPT_CAP_RDMA_WRITE)))
		return post_write_slow(h, sgl, nsge, cookie, raddr, rkey,
				       flags);
	return ep->ops->post_write(ep->obj.prov, sgl, nsge, cookie,
				   raddr, rkey, flags);
}

static int __attribute__((noinline)) post_read_slow(struct rapt_ep *h,
						    const struct rapt_sge *sgl,
						    unsigned int nsge,
						    uint64_t cookie,
						    uint64_t raddr,
						    uint32_t rkey,
						    unsigned int flags)
{
	struct rapt_core_ep *ep = ep_fast(h);
	int ret = post_check_slow(h, ep, sgl, nsge, flags & ~RAPT_POST_INLINE,
				  "rapt_ep_post_read");

	if (!ret && (flags & RAPT_POST_INLINE))
		ret = rapt__fail(RAPT_EINVAL,
				 "rapt_ep_post_read: an RDMA read cannot be inline");
	if (!ret)
		ret = rdma_check(ep, RAPT_CAP_RDMA_READ, "rapt_ep_post_read");
	if (ret)
		return ret;
	return ep->ops->post_read(ep->obj.prov, sgl, nsge, cookie,
				  raddr, rkey, flags);
}

RAPT_API int rapt_ep_post_read(struct rapt_ep *h, const struct rapt_sge *sgl,
			       unsigned int nsge, uint64_t cookie,
			       uint64_t raddr, uint32_t rkey,
			       unsigned int flags)
{
	struct rapt_core_ep *ep = ep_fast(h);

	/* An inline read is suspect too: the slow path refuses it. */
	if (post_suspect(ep, sgl, nsge, flags) ||
	    rapt_unlikely(!(ep->obj.ia->attr.caps & RAPT_CAP_RDMA_READ)))
		return post_read_slow(h, sgl, nsge, cookie, raddr, rkey,
				      flags);
	return ep->ops->post_read(ep->obj.prov, sgl, nsge, cookie,
				  raddr, rkey, flags);
}
