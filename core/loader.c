/* SPDX-License-Identifier: MIT */
/*
 * The provider loader: dlopen one DSO, find its entry symbol, check the
 * descriptor before touching anything else in it, then call init().
 *
 * Every failure comes back as a RAPT_E* code and a reason in plain words,
 * and is logged here, once (the registry caches the outcome per file).
 */
#include "config.h"

#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rapt_int.h"
#include "registry.h"

typedef const struct rapt_provider *(*rapt_entry_fn)(void);

/* An ops table larger than this is garbage, not a newer SDK. */
#define OPS_SIZE_MAX 4096

static int load_fail(int status, const char *path, char *reason,
		     size_t reason_len, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int load_fail(int status, const char *path, char *reason,
		     size_t reason_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, reason_len, fmt, ap);
	va_end(ap);
	rapt_warn("cannot use provider %s: %s", path, reason);
	return status;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The entry symbol must come from the DSO itself, not a dependency. */
static int find_entry(void *dl, const char *path, rapt_entry_fn *entry,
		      char *reason, size_t reason_len)
{
	struct link_map *self = NULL, *owner = NULL;
	Dl_info info;
	void *sym;

	dlerror();
	sym = dlsym(dl, RAPT_PROVIDER_ENTRY_SYMBOL);
	if (!sym)
		return load_fail(RAPT_EDLOPEN, path, reason, reason_len,
				 "missing entry symbol %s in %s: it is not a rapt provider",
				 RAPT_PROVIDER_ENTRY_SYMBOL, base_name(path));
	if (!dlinfo(dl, RTLD_DI_LINKMAP, &self) &&
	    dladdr1(sym, &info, (void **)&owner, RTLD_DL_LINKMAP) &&
	    owner && self && owner != self)
		return load_fail(RAPT_EDLOPEN, path, reason, reason_len,
				 "missing entry symbol %s in %s (the one found is in %s)",
				 RAPT_PROVIDER_ENTRY_SYMBOL, base_name(path),
				 info.dli_fname ? info.dli_fname : "?");
	*entry = (rapt_entry_fn)sym;
	return 0;
}

static int check_ops(const struct rapt_provider *d, const char *path,
		     char *reason, size_t reason_len)
{
	size_t min = offsetof(struct rapt_prov_ops, ia_open) +
		     sizeof(d->ops->ia_open);
	size_t size;

	if (!d->ops)
		return load_fail(RAPT_EPROVIDER, path, reason, reason_len,
				 "provider %s has no ops table", d->name);
	size = d->ops->size;
	if (size < min || size > OPS_SIZE_MAX ||
	    (size - offsetof(struct rapt_prov_ops, ia_open)) %
	    sizeof(void (*)(void)))
		return load_fail(RAPT_EABI, path, reason, reason_len,
				 "provider %s has an ops table of %zu bytes, which no provider ABI %d table has (this librapt's has %zu)",
				 d->name, size, RAPT_PROVIDER_ABI,
				 sizeof(struct rapt_prov_ops));
	if (!d->get_devices)
		return load_fail(RAPT_EPROVIDER, path, reason, reason_len,
				 "provider %s has no get_devices()", d->name);
	return 0;
}

/* Size and ABI first: nothing else in a foreign descriptor is trusted. */
static int check_desc(const struct rapt_provider *d, const char *path,
		      const char *name, char *reason, size_t reason_len)
{
	size_t need = offsetof(struct rapt_provider, ops) + sizeof(d->ops);

	if (!d)
		return load_fail(RAPT_EPROVIDER, path, reason, reason_len,
				 "%s() in %s returned NULL",
				 RAPT_PROVIDER_ENTRY_SYMBOL, base_name(path));
	if (d->abi != RAPT_PROVIDER_ABI)
		return load_fail(RAPT_EABI, path, reason, reason_len,
				 "%s says it was built for provider ABI %u; this librapt speaks provider ABI %d",
				 base_name(path), d->abi, RAPT_PROVIDER_ABI);
	if (d->size < need)
		return load_fail(RAPT_EABI, path, reason, reason_len,
				 "%s has a descriptor of %u bytes; provider ABI %d needs at least %zu",
				 base_name(path), d->size, RAPT_PROVIDER_ABI,
				 need);
	if (!d->name || strcmp(d->name, name))
		return load_fail(RAPT_EPROVIDER, path, reason, reason_len,
				 "%s calls itself provider '%s', but its file name says '%s'",
				 base_name(path), d->name ? d->name : "(null)",
				 name);
	return check_ops(d, path, reason, reason_len);
}

/*
 * Run the provider's init().  The detail it may leave with
 * rapt_prov_set_error() goes into the reason; on success the caller's
 * last-error detail is left as it was.
 */
static int run_init(struct rapt_prov *p, char *reason, size_t reason_len)
{
	char saved[RAPT_REASON_MAX];
	int ret;

	if (!p->desc->init)
		return 0;
	snprintf(saved, sizeof(saved), "%s", rapt_last_error());
	rapt__fail(0, "%s", "");
	ret = p->desc->init(&p->ctx);
	if (!ret) {
		rapt__fail(0, "%s", saved);
		return 0;
	}
	if (ret > 0 || !strcmp(rapt_err_name(ret), "RAPT_E?"))
		ret = RAPT_EPROVIDER;
	return load_fail(ret, p->path, reason, reason_len,
			 "provider %s failed to initialise: %s%s%s",
			 p->desc->name, rapt_strerror(ret),
			 rapt_last_error()[0] ? ": " : "", rapt_last_error());
}

static int prov_load(const char *path, const char *name,
		     struct rapt_prov **prov, char *reason, size_t reason_len)
{
	const struct rapt_provider *desc;
	struct rapt_prov *p;
	rapt_entry_fn entry = NULL;
	void *dl;
	int ret;

	dlerror();
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		return load_fail(RAPT_EDLOPEN, path, reason, reason_len, "%s",
				 dlerror());
	ret = find_entry(dl, path, &entry, reason, reason_len);
	if (ret)
		goto err_close;
	desc = entry();
	ret = check_desc(desc, path, name, reason, reason_len);
	if (ret)
		goto err_close;
	p = calloc(1, sizeof(*p));
	if (!p) {
		ret = load_fail(RAPT_ENOMEM, path, reason, reason_len,
				"out of memory");
		goto err_close;
	}
	p->desc = desc;
	p->dl = dl;
	snprintf(p->path, sizeof(p->path), "%s", path);
	rapt__ops_fill(&p->ops, desc->ops);
	/* After init() the provider may run threads: never dlclose it. */
	ret = run_init(p, reason, reason_len);
	if (ret) {
		free(p);
		return ret;
	}
	rapt_info("loaded provider %s %u.%u.%u from %s", desc->name,
		  RAPT_VERSION_MAJOR(desc->version),
		  RAPT_VERSION_MINOR(desc->version),
		  RAPT_VERSION_PATCH(desc->version), path);
	*prov = p;
	return 0;

err_close:
	dlclose(dl);
	return ret;
}

/* The provider's constructors and init() may call libraries that reach
 * cancellation points (libibverbs reads its configuration): held off. */
int rapt__prov_load(const char *path, const char *name,
		    struct rapt_prov **prov, char *reason, size_t reason_len)
{
	int ret;

	RAPT_NOCANCEL(ret = prov_load(path, name, prov, reason, reason_len));
	return ret;
}
