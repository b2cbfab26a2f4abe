/* SPDX-License-Identifier: MIT */
/*
 * The registry: which providers exist, which devices they offer, and which
 * one an IA name means.
 *
 * Every call starts a fresh "scan": it reads RAPT_PROVIDER, RAPT_CONF (or
 * the default configuration) and RAPT_PROVIDER_PATH again, so a process
 * that changes them between calls sees the change.  Loading is what is
 * kept: each DSO file is dlopen'ed at most once per process, and the
 * outcome, good or bad, is cached by its real path.  A loaded provider is
 * never unloaded (its ops may be in use by any open IA).
 *
 * Order of the search: each directory of RAPT_PROVIDER_PATH, then
 * RAPT_PKGLIBDIR.  Inside a directory, files in byte order of their names.
 * The first file of a name with our provider ABI wins; the later ones are
 * listed as shadowed.  A file built for another provider ABI is listed and
 * never opened.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rapt_int.h"
#include "registry.h"

#define DSO_PREFIX "librapt-"
#define DSO_ABI_TAG "-pv"
#define DSO_SUFFIX ".so"

/* ------------------------------------------------------------------ */
/* The per-process cache of files tried                                */
/* ------------------------------------------------------------------ */

/*
 * One file that was judged, keyed by its real path and the name it was
 * found under (a symlink may give one file two names).  Never freed: @prov
 * lives as long as the process.
 */
struct reg_cache {
	struct reg_cache *next;
	char *real;
	char base[NAME_MAX + 1];
	int status;
	char reason[RAPT_REASON_MAX];
	struct rapt_prov *prov;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct reg_cache *reg_cache;	/* guarded by reg_lock */

static struct reg_cache *cache_find(const char *real, const char *base)
{
	struct reg_cache *c;

	for (c = reg_cache; c; c = c->next)
		if (!strcmp(c->real, real) && !strcmp(c->base, base))
			return c;
	return NULL;
}

static struct reg_cache *cache_add(const char *real, const char *base)
{
	struct reg_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->real = strdup(real);
	if (!c->real) {
		free(c);
		return NULL;
	}
	snprintf(c->base, sizeof(c->base), "%s", base);
	c->next = reg_cache;
	reg_cache = c;
	return c;
}

/* ------------------------------------------------------------------ */
/* One scan                                                            */
/* ------------------------------------------------------------------ */

enum reg_state {
	REG_CANDIDATE,		/* ours; loaded when needed */
	REG_MISMATCH,		/* another provider ABI: never opened */
	REG_SHADOWED,		/* an earlier directory has it */
	REG_EXCLUDED,		/* left out by RAPT_PROVIDER */
	REG_DISABLED,		/* disabled in rapt.conf */
};

/* One entry's reason, or one resolve's failure, is at most this long. */
typedef char reg_why[RAPT_REASON_MAX];

struct reg_file {
	char path[RAPT_REASON_MAX];
	char name[RAPT_PROV_NAME_MAX];
	unsigned int abi;
	enum reg_state state;
	bool loaded;			/* load tried (candidates) */
	bool listed;			/* get_devices() called */
	int status;			/* 0 if usable */
	char reason[RAPT_REASON_MAX];
	struct rapt_prov *prov;
	struct rapt_prov_device *devs;	/* from get_devices() */
	uint32_t ndevs;
};

struct reg_scan {
	struct reg_file *files;
	size_t nfiles;
	size_t cap;
	char **seen;			/* real paths of directories seen */
	size_t nseen;
	reg_why dirs;			/* the search path, for messages */
	struct rapt_filter filter;
	struct rapt_conf conf;
};

static int why_set(int status, char *why, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int why_set(int status, char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, RAPT_REASON_MAX, fmt, ap);
	va_end(ap);
	return status;
}

static void why_add(char *why, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void why_add(char *why, const char *fmt, ...)
{
	size_t len = strlen(why);
	va_list ap;

	if (len >= RAPT_REASON_MAX - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(why + len, RAPT_REASON_MAX - len, fmt, ap);
	va_end(ap);
}

/* A status from a provider: a RAPT_E* code, or RAPT_EPROVIDER. */
static int prov_status(int status)
{
	if (status < 0 && strcmp(rapt_err_name(status), "RAPT_E?"))
		return status;
	return RAPT_EPROVIDER;
}

/* "librapt-<name>-pv<N>.so" */
static bool dso_name_parse(const char *fname, char *name, unsigned int *abi)
{
	const char *p = fname + strlen(DSO_PREFIX);
	const char *dash;
	unsigned long v = 0;
	size_t len;

	if (strncmp(fname, DSO_PREFIX, strlen(DSO_PREFIX)))
		return false;
	dash = strchr(p, '-');
	if (!dash || !rapt__prov_name_ok(p, (size_t)(dash - p)))
		return false;
	len = (size_t)(dash - p);
	if (strncmp(dash, DSO_ABI_TAG, strlen(DSO_ABI_TAG)))
		return false;
	p = dash + strlen(DSO_ABI_TAG);
	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > 1000000)
			return false;
	}
	if (strcmp(p, DSO_SUFFIX))
		return false;
	if (name) {
		memcpy(name, fname + strlen(DSO_PREFIX), len);
		name[len] = '\0';
	}
	if (abi)
		*abi = (unsigned int)v;
	return true;
}

static int dso_filter(const struct dirent *d)
{
	return dso_name_parse(d->d_name, NULL, NULL);
}

static int dso_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The file of provider @name that is ours to load, if any. */
static struct reg_file *find_file(struct reg_scan *s, const char *name,
				  bool with_our_abi)
{
	size_t i;

	for (i = 0; i < s->nfiles; i++) {
		struct reg_file *f = &s->files[i];

		if (strcmp(f->name, name))
			continue;
		if (!with_our_abi || f->state != REG_MISMATCH)
			return f;
	}
	return NULL;
}

/* What to do about a provider of another ABI, in plain words. */
static const char *abi_advice(unsigned int abi)
{
	if (abi < RAPT_PROVIDER_ABI)
		return "a provider for an older rapt: rebuild it against this rapt's <rapt/provider.h>";
	return "a provider for a newer rapt: install that rapt, or a build of the provider for this one";
}

static void classify(struct reg_scan *s, struct reg_file *f)
{
	const struct rapt_conf_disable *dis;
	struct reg_file *first;

	if (f->abi != RAPT_PROVIDER_ABI) {
		f->state = REG_MISMATCH;
		f->status = why_set(RAPT_EABI, f->reason,
				    "%s was built for provider ABI %u; this librapt speaks provider ABI %d (%s)",
				    base_name(f->path), f->abi,
				    RAPT_PROVIDER_ABI, abi_advice(f->abi));
		return;
	}
	first = find_file(s, f->name, true);
	if (first != f) {
		f->state = REG_SHADOWED;
		f->status = why_set(RAPT_EEXIST, f->reason,
				    "shadowed by %s, found earlier in the search path",
				    first->path);
		return;
	}
	if (!rapt__filter_allows(&s->filter, f->name)) {
		f->state = REG_EXCLUDED;
		f->status = why_set(RAPT_ENOPROVIDER, f->reason,
				    "left out by RAPT_PROVIDER=%s",
				    s->filter.spec);
		return;
	}
	dis = rapt__conf_disabled(&s->conf, f->name, NULL);
	if (dis) {
		f->state = REG_DISABLED;
		f->status = why_set(RAPT_ENOPROVIDER, f->reason,
				    "disabled by %s", dis->where);
		return;
	}
	f->state = REG_CANDIDATE;
}

/* Log a file that is never opened once per process, not once per scan. */
static void note_mismatch(const struct reg_file *f)
{
	char *real = realpath(f->path, NULL);
	struct reg_cache *c;

	if (!real)
		return;
	if (!cache_find(real, base_name(f->path))) {
		c = cache_add(real, base_name(f->path));
		if (c) {
			c->status = f->status;
			snprintf(c->reason, sizeof(c->reason), "%s",
				 f->reason);
		}
		rapt_warn("not loading %s: %s", f->path, f->reason);
	}
	free(real);
}

static int add_file(struct reg_scan *s, const char *dir, const char *fname)
{
	struct reg_file *f;
	struct stat st;

	if (s->nfiles == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;

		f = realloc(s->files, cap * sizeof(*f));
		if (!f)
			return rapt__fail(RAPT_ENOMEM,
					  "out of memory listing providers");
		s->files = f;
		s->cap = cap;
	}
	f = &s->files[s->nfiles];
	memset(f, 0, sizeof(*f));
	if ((size_t)snprintf(f->path, sizeof(f->path), "%s/%s", dir, fname) >=
	    sizeof(f->path)) {
		rapt_warn("ignoring %s/%s: the path is too long", dir, fname);
		return 0;
	}
	if (stat(f->path, &st) || !S_ISREG(st.st_mode)) {
		rapt_dbg("ignoring %s: not a regular file", f->path);
		return 0;
	}
	dso_name_parse(fname, f->name, &f->abi);
	s->nfiles++;
	classify(s, f);
	if (f->state == REG_MISMATCH)
		note_mismatch(f);
	return 0;
}

static bool dir_seen(struct reg_scan *s, const char *dir)
{
	char *real = realpath(dir, NULL);
	char **seen;
	size_t i;

	if (!real)
		return false;	/* scandir() will say why */
	for (i = 0; i < s->nseen; i++) {
		if (!strcmp(s->seen[i], real)) {
			free(real);
			return true;
		}
	}
	seen = realloc(s->seen, (s->nseen + 1) * sizeof(*seen));
	if (!seen) {
		free(real);
		return false;
	}
	s->seen = seen;
	s->seen[s->nseen++] = real;
	return false;
}

static int scan_dir(struct reg_scan *s, const char *dir)
{
	struct dirent **names;
	int n, i, ret = 0;

	why_add(s->dirs, "%s%s", s->dirs[0] ? ":" : "", dir);
	if (dir_seen(s, dir))
		return 0;
	n = scandir(dir, &names, dso_filter, dso_cmp);
	if (n < 0) {
		rapt_dbg("not searching %s: %s", dir, strerror(errno));
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (!ret)
			ret = add_file(s, dir, names[i]->d_name);
		free(names[i]);
	}
	free(names);
	return ret;
}

static int scan_path(struct reg_scan *s)
{
	const char *env = getenv("RAPT_PROVIDER_PATH");
	char *path, *dir, *save = NULL;
	int ret = 0;

	if (env && *env) {
		path = strdup(env);
		if (!path)
			return rapt__fail(RAPT_ENOMEM,
					  "out of memory listing providers");
		for (dir = strtok_r(path, ":", &save); dir && !ret;
		     dir = strtok_r(NULL, ":", &save))
			ret = scan_dir(s, dir);
		free(path);
		if (ret)
			return ret;
	}
	return scan_dir(s, RAPT_PKGLIBDIR);
}

static void scan_end(struct reg_scan *s)
{
	size_t i;

	for (i = 0; i < s->nfiles; i++)
		free(s->files[i].devs);
	free(s->files);
	for (i = 0; i < s->nseen; i++)
		free(s->seen[i]);
	free(s->seen);
	rapt__conf_free(&s->conf);
	memset(s, 0, sizeof(*s));
}

/* Read the environment and the configuration, and find the files. */
static int scan_begin(struct reg_scan *s)
{
	int ret;

	memset(s, 0, sizeof(*s));
	ret = rapt__filter_parse(getenv("RAPT_PROVIDER"), &s->filter);
	if (ret) {
		rapt_err("%s", rapt_last_error());
		return ret;
	}
	ret = rapt__conf_load(&s->conf, getenv("RAPT_CONF"), RAPT_SYSCONFDIR);
	if (ret)
		return ret;
	return scan_path(s);
}

/* ------------------------------------------------------------------ */
/* Loading and devices                                                 */
/* ------------------------------------------------------------------ */

static int file_load(struct reg_file *f)
{
	struct reg_cache *c;
	char *real;

	if (f->loaded)
		return f->status;
	f->loaded = true;
	real = realpath(f->path, NULL);
	if (!real)
		return f->status = why_set(RAPT_EDLOPEN, f->reason, "%s: %s",
					   f->path, strerror(errno));
	c = cache_find(real, base_name(f->path));
	if (!c) {
		c = cache_add(real, base_name(f->path));
		if (!c) {
			free(real);
			return f->status = why_set(RAPT_ENOMEM, f->reason,
						   "out of memory");
		}
		c->status = rapt__prov_load(f->path, f->name, &c->prov,
					    c->reason, sizeof(c->reason));
	}
	free(real);
	f->status = c->status;
	f->prov = c->prov;
	snprintf(f->reason, sizeof(f->reason), "%s", c->reason);
	return f->status;
}

/* Keep only devices whose names an IA name can carry. */
static void devs_check(struct reg_file *f)
{
	uint32_t i, n = 0;

	for (i = 0; i < f->ndevs; i++) {
		struct rapt_prov_device *d = &f->devs[i];
		struct rapt_ia_name in;
		char ia[RAPT_IA_NAME_MAX + RAPT_DEV_NAME_MAX];
		reg_why why;

		d->name[sizeof(d->name) - 1] = '\0';
		d->reason[sizeof(d->reason) - 1] = '\0';
		snprintf(ia, sizeof(ia), "%s:%s", f->name, d->name);
		if (rapt__ia_name_parse(ia, &in, why, sizeof(why)) ||
		    strcmp(in.dev, d->name)) {
			rapt_warn("provider %s reports a device named '%s', which is not a valid device name; ignoring it",
				  f->name, d->name);
			continue;
		}
		if (d->status)
			d->status = prov_status(d->status);
		f->devs[n++] = *d;
	}
	f->ndevs = n;
}

static int file_devices(struct reg_file *f)
{
	struct rapt_prov_device *devs = NULL;
	uint32_t ndevs = 0;
	int ret;

	ret = file_load(f);
	if (ret || f->listed)
		return ret;
	f->listed = true;
	RAPT_NOCANCEL(ret = f->prov->desc->get_devices(f->prov->ctx, &devs,
							&ndevs));
	if (ret) {
		free(devs);
		ret = prov_status(ret);
		rapt_warn("provider %s: get_devices() failed: %s", f->name,
			  rapt_strerror(ret));
		return f->status = why_set(ret, f->reason,
					   "provider %s could not list its devices: %s",
					   f->name, rapt_strerror(ret));
	}
	f->devs = devs;
	f->ndevs = devs ? ndevs : 0;
	devs_check(f);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Resolving names                                                     */
/* ------------------------------------------------------------------ */

struct reg_pick {
	struct reg_file *file;
	const struct rapt_prov_device *dev;
	uint32_t port;
};

/* Whether a device may be opened; if not, @why says why (no name). */
static int dev_usable(struct reg_scan *s, const struct reg_file *f,
		      const struct rapt_prov_device *d, char *why)
{
	const struct rapt_conf_disable *dis;

	if (d->status)
		return why_set(d->status, why, "%s",
			       d->reason[0] ? d->reason :
			       rapt_strerror(d->status));
	dis = rapt__conf_disabled(&s->conf, f->name, d->name);
	if (dis)
		return why_set(RAPT_ENODEV, why, "disabled by %s", dis->where);
	why[0] = '\0';
	return 0;
}

static int pick_port(struct reg_file *f, const struct rapt_prov_device *d,
		     const struct rapt_ia_name *n, struct reg_pick *pick,
		     char *why)
{
	uint32_t port = n->has_port ? n->port : (d->nports ? 1 : 0);

	if (d->nports && (port < 1 || port > d->nports))
		return why_set(RAPT_ENODEV, why,
			       "device %s:%s has port%s 1-%u; there is no port %u",
			       f->name, d->name, d->nports > 1 ? "s" : "",
			       d->nports, port);
	pick->file = f;
	pick->dev = d;
	pick->port = port;
	return 0;
}

/* No usable file of that name: say what there is instead. */
static int prov_missing(struct reg_scan *s, const char *name, char *why)
{
	const struct reg_file *f;
	size_t i;

	for (i = 0; i < s->nfiles; i++) {
		f = &s->files[i];
		if (!strcmp(f->name, name) &&
		    (f->state == REG_EXCLUDED || f->state == REG_DISABLED))
			return why_set(RAPT_ENOPROVIDER, why,
				       "provider %s is %s", name, f->reason);
	}
	f = find_file(s, name, false);
	if (f)
		return why_set(f->status, why, "cannot use provider %s: %s",
			       name, f->reason);
	return why_set(RAPT_ENOPROVIDER, why,
		       "no provider named '%s': no %s%s%s%d%s in %s", name,
		       DSO_PREFIX, name, DSO_ABI_TAG, RAPT_PROVIDER_ABI,
		       DSO_SUFFIX, s->dirs);
}

static int resolve_prov(struct reg_scan *s, const char *name,
			struct reg_file **file, char *why)
{
	struct reg_file *f = find_file(s, name, true);
	int ret;

	if (!f || f->state != REG_CANDIDATE)
		return prov_missing(s, name, why);
	ret = file_devices(f);
	if (ret)
		return why_set(ret, why, "cannot use provider %s: %s", name,
			       f->reason);
	*file = f;
	return 0;
}

static int first_dev(struct reg_scan *s, struct reg_file *f,
		     const struct rapt_ia_name *n, struct reg_pick *pick,
		     char *why)
{
	reg_why r;
	uint32_t i;
	int ret = RAPT_ENODEV;

	for (i = 0; i < f->ndevs; i++)
		if (!dev_usable(s, f, &f->devs[i], r))
			return pick_port(f, &f->devs[i], n, pick, why);
	if (!f->ndevs)
		return why_set(RAPT_ENODEV, why, "provider %s found no devices",
			       f->name);
	why_set(RAPT_ENODEV, why, "provider %s has no usable device:",
		f->name);
	for (i = 0; i < f->ndevs; i++) {
		ret = dev_usable(s, f, &f->devs[i], r);
		why_add(why, "%s %s: %s", i ? ";" : "", f->devs[i].name, r);
	}
	return f->ndevs == 1 ? ret : RAPT_ENODEV;
}

static int resolve_ia(struct reg_scan *s, const struct rapt_ia_name *n,
		      struct reg_pick *pick, char *why)
{
	struct reg_file *f = NULL;
	reg_why r;
	uint32_t i;
	int ret;

	ret = resolve_prov(s, n->prov, &f, why);
	if (ret)
		return ret;
	if (!n->dev[0])
		return first_dev(s, f, n, pick, why);
	for (i = 0; i < f->ndevs; i++)
		if (!strcmp(f->devs[i].name, n->dev))
			break;
	if (i == f->ndevs) {
		why_set(RAPT_ENODEV, why, "provider %s has no device '%s'; ",
			n->prov, n->dev);
		if (!f->ndevs)
			why_add(why, "it found no devices");
		for (i = 0; i < f->ndevs; i++)
			why_add(why, "%s%s", i ? ", " : "its devices: ",
				f->devs[i].name);
		return RAPT_ENODEV;
	}
	ret = dev_usable(s, f, &f->devs[i], r);
	if (ret)
		return why_set(ret, why, "device %s:%s cannot be used: %s",
			       n->prov, n->dev, r);
	return pick_port(f, &f->devs[i], n, pick, why);
}

/* An IA name or alias (config order entries and consumers' names). */
static int resolve_named(struct reg_scan *s, const char *name,
			 struct reg_pick *pick, char *why)
{
	const struct rapt_conf_alias *a = NULL;
	struct rapt_ia_name n;
	reg_why r;
	int ret;

	if (!strchr(name, ':'))
		a = rapt__conf_alias(&s->conf, name);
	if (!a && !strchr(name, ':') && rapt__alias_name_ok(name) &&
	    !rapt__prov_name_ok(name, strlen(name)))
		return why_set(RAPT_ENOPROVIDER, why,
			       "no alias or provider named '%s'", name);
	ret = rapt__ia_name_parse(a ? a->target : name, &n, r, sizeof(r));
	if (!ret)
		ret = resolve_ia(s, &n, pick, r);
	if (!ret)
		return 0;
	if (a)
		return why_set(ret, why, "alias %s (%s) names %s: %s", name,
			       a->where, a->target, r);
	return why_set(ret, why, "%s", r);
}

/* Is device @d of @f better for rapt_ia_open(NULL) than @best? */
static bool better(const struct reg_file *f, const struct rapt_prov_device *d,
		   const struct reg_pick *best)
{
	int c;

	if (!best->dev)
		return true;
	if (d->rank != best->dev->rank)
		return d->rank < best->dev->rank;
	c = strcmp(f->name, best->file->name);
	if (c)
		return c < 0;
	return strcmp(d->name, best->dev->name) < 0;
}

/*
 * Nothing usable at all: RAPT_ENODEV (there was no name to be unknown),
 * with what was found and why it cannot be used.
 */
static int best_none(struct reg_scan *s, bool any_prov, char *why)
{
	size_t i;
	uint32_t j;
	reg_why r;

	if (!any_prov)
		why_set(RAPT_ENODEV, why,
			"no usable device: no usable provider in %s", s->dirs);
	else
		why_set(RAPT_ENODEV, why, "no usable device");
	for (i = 0; i < s->nfiles; i++) {
		struct reg_file *f = &s->files[i];

		if (f->status && f->state != REG_SHADOWED)
			why_add(why, "; %s: %s", f->name, f->reason);
		for (j = 0; !f->status && j < f->ndevs; j++) {
			dev_usable(s, f, &f->devs[j], r);
			why_add(why, "; %s:%s: %s", f->name,
				f->devs[j].name, r);
		}
	}
	return RAPT_ENODEV;
}

static int resolve_best(struct reg_scan *s, struct reg_pick *pick, char *why)
{
	const struct rapt_ia_name none = { .has_port = false };
	struct reg_pick best = { .file = NULL };
	bool any_prov = false;
	reg_why r;
	size_t i;
	uint32_t j;

	for (i = 0; i < s->conf.norder; i++) {
		if (!resolve_named(s, s->conf.order[i], pick, r))
			return 0;
		rapt_dbg("order (%s): skipping %s: %s", s->conf.order_where,
			 s->conf.order[i], r);
	}
	for (i = 0; i < s->nfiles; i++) {
		struct reg_file *f = &s->files[i];

		if (f->state != REG_CANDIDATE || file_devices(f))
			continue;
		any_prov = true;
		for (j = 0; j < f->ndevs; j++)
			if (!dev_usable(s, f, &f->devs[j], r) &&
			    better(f, &f->devs[j], &best))
				pick_port(f, &f->devs[j], &none, &best, r);
	}
	if (!best.dev)
		return best_none(s, any_prov, why);
	*pick = best;
	return 0;
}

/**
 * rapt__registry_resolve - find the provider, device and port of an IA name
 * @name: "<provider>[:<device>[:<port>]]", an alias, or NULL for the best
 * @prov: output, the loaded provider
 * @device: output, the device name
 * @device_len: size of @device
 * @port: output, the port (1 by default where the device has ports, else 0)
 *
 * Sets the error detail (rapt_last_error()) on failure.
 * Return: 0, RAPT_ENOPROVIDER, RAPT_ENODEV, RAPT_EDLOPEN, RAPT_EABI,
 * RAPT_ECONFIG, RAPT_EINVAL, or the reason a provider gave.
 */
int rapt__registry_resolve(const char *name, struct rapt_prov **prov,
			   char *device, size_t device_len, uint32_t *port)
{
	struct reg_pick pick = { .file = NULL };
	struct reg_scan s;
	reg_why why = "";
	int ret;

	if (!prov || !device || !port)
		return rapt__fail(RAPT_EINVAL, "resolve: NULL output");
	pthread_mutex_lock(&reg_lock);
	ret = scan_begin(&s);
	if (ret)
		goto out;
	ret = name ? resolve_named(&s, name, &pick, why) :
		     resolve_best(&s, &pick, why);
	if (!ret && strlen(pick.dev->name) >= device_len)
		ret = why_set(RAPT_EINVAL, why,
			      "device name buffer of %zu bytes is too small",
			      device_len);
	if (ret) {
		rapt_dbg("cannot resolve %s: %s", name ? name : "(default)",
			 why);
		rapt__fail(ret, "%s", why);
		goto out;
	}
	rapt_dbg("%s is %s:%s:%u", name ? name : "(default)",
		 pick.file->name, pick.dev->name, pick.port);
	*prov = pick.file->prov;
	snprintf(device, device_len, "%s", pick.dev->name);
	*port = pick.port;
out:
	scan_end(&s);
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Listing                                                             */
/* ------------------------------------------------------------------ */

struct reg_list {
	struct rapt_entry *e;
	size_t n;
	size_t cap;
};

static struct rapt_entry *list_add(struct reg_list *l, uint32_t kind)
{
	struct rapt_entry *e;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;

		e = realloc(l->e, cap * sizeof(*e));
		if (!e)
			return NULL;
		l->e = e;
		l->cap = cap;
	}
	e = &l->e[l->n++];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	return e;
}

static int list_file(struct reg_list *l, struct reg_file *f)
{
	struct rapt_entry *e = list_add(l, RAPT_ENTRY_PROVIDER);

	if (!e)
		return RAPT_ENOMEM;
	if (f->state == REG_CANDIDATE)
		file_devices(f);
	e->status = f->status;
	snprintf(e->name, sizeof(e->name), "%s", f->name);
	snprintf(e->provider, sizeof(e->provider), "%s", f->name);
	snprintf(e->path, sizeof(e->path), "%s", f->path);
	snprintf(e->reason, sizeof(e->reason), "%s",
		 f->status ? f->reason : "");
	e->abi = f->prov ? f->prov->desc->abi : f->abi;
	e->prov_version = f->prov ? f->prov->desc->version : 0;
	return 0;
}

static int list_devices(struct reg_scan *s, struct reg_list *l,
			struct reg_file *f)
{
	struct rapt_entry *e;
	uint32_t i;

	for (i = 0; !f->status && i < f->ndevs; i++) {
		const struct rapt_prov_device *d = &f->devs[i];

		e = list_add(l, RAPT_ENTRY_DEVICE);
		if (!e)
			return RAPT_ENOMEM;
		e->status = dev_usable(s, f, d, e->reason);
		/* A usable device's reason is its provider's note. */
		if (!e->status && d->reason[0])
			snprintf(e->reason, sizeof(e->reason), "%s", d->reason);
		snprintf(e->name, sizeof(e->name), "%s:%s", f->name, d->name);
		snprintf(e->provider, sizeof(e->provider), "%s", f->name);
		snprintf(e->path, sizeof(e->path), "%s", f->path);
		e->abi = f->prov->desc->abi;
		e->prov_version = f->prov->desc->version;
		e->transport = d->transport;
		e->rank = d->rank;
	}
	return 0;
}

/* Names RAPT_PROVIDER asks for that are nowhere to be found. */
static int list_missing(struct reg_scan *s, struct reg_list *l)
{
	struct rapt_entry *e;
	unsigned int i;

	for (i = 0; !s->filter.exclude && i < s->filter.n; i++) {
		const char *name = s->filter.names[i];

		if (find_file(s, name, false))
			continue;
		e = list_add(l, RAPT_ENTRY_PROVIDER);
		if (!e)
			return RAPT_ENOMEM;
		e->status = prov_missing(s, name, e->reason);
		snprintf(e->name, sizeof(e->name), "%s", name);
		snprintf(e->provider, sizeof(e->provider), "%s", name);
	}
	return 0;
}

static int list_aliases(struct reg_scan *s, struct reg_list *l)
{
	struct reg_pick pick;
	struct rapt_entry *e;
	struct rapt_ia_name n;
	size_t i;

	for (i = 0; i < s->conf.naliases; i++) {
		const struct rapt_conf_alias *a = &s->conf.aliases[i];

		e = list_add(l, RAPT_ENTRY_ALIAS);
		if (!e)
			return RAPT_ENOMEM;
		snprintf(e->name, sizeof(e->name), "%s", a->name);
		snprintf(e->target, sizeof(e->target), "%s", a->target);
		snprintf(e->path, sizeof(e->path), "%s", a->file);
		/* The target, not the alias: the entry names the alias. */
		e->status = rapt__ia_name_parse(a->target, &n, e->reason,
						sizeof(e->reason));
		if (e->status)
			continue;
		snprintf(e->provider, sizeof(e->provider), "%s", n.prov);
		e->status = resolve_ia(s, &n, &pick, e->reason);
		if (e->status)
			continue;
		e->reason[0] = '\0';
		e->transport = pick.dev->transport;
		e->rank = pick.dev->rank;
		e->abi = pick.file->prov->desc->abi;
		e->prov_version = pick.file->prov->desc->version;
	}
	return 0;
}

static int list_all(struct reg_scan *s, struct reg_list *l)
{
	size_t i;
	int ret = 0;

	for (i = 0; !ret && i < s->nfiles; i++)
		ret = list_file(l, &s->files[i]);
	if (!ret)
		ret = list_missing(s, l);
	for (i = 0; !ret && i < s->nfiles; i++)
		ret = list_devices(s, l, &s->files[i]);
	if (!ret)
		ret = list_aliases(s, l);
	if (ret)
		rapt__fail(ret, "out of memory listing providers");
	return ret;
}

/**
 * rapt_registry_list - list providers, devices and aliases, usable or not
 * @entries: output, an array owned by the caller; free with rapt_free()
 * @count: output, number of entries
 *
 * Provider entries come first (in search order, then the names
 * RAPT_PROVIDER asks for that were not found), then the devices of the
 * usable providers, then the aliases of rapt.conf.
 *
 * Return: 0, RAPT_EINVAL, RAPT_ENOMEM, RAPT_ECONFIG.
 */
RAPT_API int rapt_registry_list(struct rapt_entry **entries, size_t *count)
{
	struct reg_list l = { .e = NULL };
	struct reg_scan s;
	int ret;

	if (!entries || !count)
		return rapt__fail(RAPT_EINVAL,
				  "rapt_registry_list: NULL output pointer");
	pthread_mutex_lock(&reg_lock);
	ret = scan_begin(&s);
	if (!ret)
		ret = list_all(&s, &l);
	scan_end(&s);
	pthread_mutex_unlock(&reg_lock);
	if (ret) {
		free(l.e);
		return ret;
	}
	if (!l.e) {
		/* Nothing found: still hand out something rapt_free() takes. */
		l.e = malloc(sizeof(*l.e));
		if (!l.e)
			return rapt__fail(RAPT_ENOMEM,
					  "out of memory listing providers");
	}
	*entries = l.e;
	*count = l.n;
	return 0;
}

/**
 * rapt_free - release memory that rapt allocated for the caller
 * @ptr: what rapt_registry_list() returned, or NULL
 */
RAPT_API void rapt_free(void *ptr)
{
	free(ptr);
}
