/* SPDX-License-Identifier: MIT */
/*
 * Names, the RAPT_PROVIDER list and rapt.conf.
 *
 * The configuration is optional: without any file every provider and
 * device found is used.  The grammar is in docs/configuration.md; keep the
 * two in step.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rapt_int.h"
#include "registry.h"

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

bool rapt__prov_name_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || len >= RAPT_PROV_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return false;
	}
	return true;
}

bool rapt__alias_name_ok(const char *s)
{
	size_t len = strlen(s);
	size_t i;

	if (!len || len >= RAPT_IA_NAME_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-'))
			return false;
	}
	return true;
}

/* Device names: printable, no blank, ':' or '#' (rapt.conf syntax). */
static bool dev_name_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || len >= RAPT_DEV_NAME_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == ':' || s[i] == '#')
			return false;
	return true;
}

static int parse_port(const char *s, uint32_t *port)
{
	uint64_t v = 0;
	size_t i;

	if (!*s || strlen(s) > 10)
		return RAPT_EINVAL;
	for (i = 0; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9')
			return RAPT_EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return RAPT_EINVAL;
	*port = (uint32_t)v;
	return 0;
}

int rapt__ia_name_parse(const char *s, struct rapt_ia_name *n,
			char *why, size_t why_len)
{
	struct rapt_ia_name r = { .has_port = false };
	const char *c1, *c2;
	size_t plen, dlen;

	if (!s || !*s) {
		snprintf(why, why_len, "the IA name is empty");
		return RAPT_EINVAL;
	}
	if (strlen(s) >= RAPT_IA_NAME_MAX) {
		snprintf(why, why_len, "the IA name is longer than %d bytes",
			 RAPT_IA_NAME_MAX - 1);
		return RAPT_EINVAL;
	}
	c1 = strchr(s, ':');
	plen = c1 ? (size_t)(c1 - s) : strlen(s);
	if (!plen) {
		snprintf(why, why_len, "'%s' has no provider name before ':'",
			 s);
		return RAPT_EINVAL;
	}
	if (!rapt__prov_name_ok(s, plen)) {
		snprintf(why, why_len,
			 "'%.*s' is not a provider name (a-z, 0-9, '_', at most %d)",
			 (int)plen, s, RAPT_PROV_NAME_MAX - 1);
		return RAPT_EINVAL;
	}
	memcpy(r.prov, s, plen);
	if (!c1)
		goto out;
	c2 = strchr(c1 + 1, ':');
	dlen = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
	if (!dlen) {
		snprintf(why, why_len, "'%s' has an empty device name", s);
		return RAPT_EINVAL;
	}
	if (!dev_name_ok(c1 + 1, dlen)) {
		snprintf(why, why_len,
			 "'%.*s' is not a device name (printable, no blank or ':', at most %d)",
			 (int)dlen, c1 + 1, RAPT_DEV_NAME_MAX - 1);
		return RAPT_EINVAL;
	}
	memcpy(r.dev, c1 + 1, dlen);
	if (!c2)
		goto out;
	if (parse_port(c2 + 1, &r.port)) {
		snprintf(why, why_len,
			 "the port '%s' in '%s' is not a number (names are <provider>[:<device>[:<port>]])",
			 c2 + 1, s);
		return RAPT_EINVAL;
	}
	r.has_port = true;
out:
	*n = r;
	return 0;
}

/* ------------------------------------------------------------------ */
/* RAPT_PROVIDER                                                       */
/* ------------------------------------------------------------------ */

int rapt__filter_parse(const char *spec, struct rapt_filter *f)
{
	struct rapt_filter r = { .exclude = false };
	const char *p = spec;
	size_t len;

	if (!p)
		p = "";
	snprintf(r.spec, sizeof(r.spec), "%s", p);
	if (*p == '^') {
		r.exclude = true;
		p++;
	}
	for (; *p; p += len + (p[len] == ',')) {
		len = strcspn(p, ",");
		if (!len)
			continue;
		if (!rapt__prov_name_ok(p, len))
			return rapt__fail(RAPT_ECONFIG,
					  "RAPT_PROVIDER=%s: '%.*s' is not a provider name (a-z, 0-9, '_')",
					  r.spec, (int)len, p);
		if (r.n == RAPT_FILTER_MAX)
			return rapt__fail(RAPT_ECONFIG,
					  "RAPT_PROVIDER=%s: more than %d names",
					  r.spec, RAPT_FILTER_MAX);
		memcpy(r.names[r.n++], p, len);
	}
	*f = r;
	return 0;
}

bool rapt__filter_lists(const struct rapt_filter *f, const char *prov)
{
	unsigned int i;

	for (i = 0; i < f->n; i++)
		if (!strcmp(f->names[i], prov))
			return true;
	return false;
}

bool rapt__filter_allows(const struct rapt_filter *f, const char *prov)
{
	if (!f->n)
		return true;
	return rapt__filter_lists(f, prov) != f->exclude;
}

/* ------------------------------------------------------------------ */
/* rapt.conf                                                           */
/* ------------------------------------------------------------------ */

/* Where a line is, for messages and for the entries it makes. */
struct conf_pos {
	const char *file;
	unsigned int line;
	char where[RAPT_WHERE_MAX];
};

#define CONF_MAX_TOKENS (RAPT_CONF_ORDER_MAX + 2)

static int bad_line(const struct conf_pos *pos, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int bad_line(const struct conf_pos *pos, const char *fmt, ...)
{
	char what[RAPT_REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	rapt_err("%s: %s", pos->where, what);
	return rapt__fail(RAPT_ECONFIG, "%s: %s", pos->where, what);
}

static int conf_alias(struct rapt_conf *conf, const struct conf_pos *pos,
		      char **tok, int ntok)
{
	struct rapt_conf_alias *a;
	struct rapt_ia_name n;
	char why[RAPT_REASON_MAX];

	if (ntok != 3)
		return bad_line(pos, "'alias' takes a name and an IA name: alias <name> <provider>[:<device>[:<port>]]");
	if (!rapt__alias_name_ok(tok[1]))
		return bad_line(pos, "'%s' is not an alias name (letters, digits, '_', '.', '-')",
				tok[1]);
	if (rapt__ia_name_parse(tok[2], &n, why, sizeof(why)))
		return bad_line(pos, "alias %s: %s", tok[1], why);

	a = (struct rapt_conf_alias *)rapt__conf_alias(conf, tok[1]);
	if (!a) {
		a = realloc(conf->aliases,
			    (conf->naliases + 1) * sizeof(*a));
		if (!a)
			return rapt__fail(RAPT_ENOMEM, "out of memory reading %s",
					  pos->file);
		conf->aliases = a;
		a = &a[conf->naliases++];
	}
	snprintf(a->name, sizeof(a->name), "%s", tok[1]);
	snprintf(a->target, sizeof(a->target), "%s", tok[2]);
	snprintf(a->file, sizeof(a->file), "%s", pos->file);
	snprintf(a->where, sizeof(a->where), "%s", pos->where);
	return 0;
}

static int conf_order(struct rapt_conf *conf, const struct conf_pos *pos,
		      char **tok, int ntok)
{
	char (*order)[RAPT_IA_NAME_MAX];
	struct rapt_ia_name n;
	char why[RAPT_REASON_MAX];
	int i;

	if (ntok < 2)
		return bad_line(pos, "'order' needs at least one provider, IA or alias name");
	if (ntok - 1 > RAPT_CONF_ORDER_MAX)
		return bad_line(pos, "'order' takes at most %d names",
				RAPT_CONF_ORDER_MAX);
	for (i = 1; i < ntok; i++) {
		if (!strchr(tok[i], ':') && rapt__alias_name_ok(tok[i]))
			continue;
		if (rapt__ia_name_parse(tok[i], &n, why, sizeof(why)))
			return bad_line(pos, "order: %s", why);
	}
	order = calloc((size_t)ntok - 1, sizeof(*order));
	if (!order)
		return rapt__fail(RAPT_ENOMEM, "out of memory reading %s",
				  pos->file);
	for (i = 1; i < ntok; i++)
		snprintf(order[i - 1], sizeof(order[0]), "%s", tok[i]);
	/* A later order line replaces an earlier one (drop-ins override). */
	free(conf->order);
	conf->order = order;
	conf->norder = (size_t)ntok - 1;
	snprintf(conf->order_where, sizeof(conf->order_where), "%s",
		 pos->where);
	return 0;
}

static int conf_disable(struct rapt_conf *conf, const struct conf_pos *pos,
			char **tok, int ntok)
{
	struct rapt_conf_disable *d;
	struct rapt_ia_name n;
	char why[RAPT_REASON_MAX];

	if (ntok != 2)
		return bad_line(pos, "'disable' takes one name: disable <provider>[:<device>]");
	if (rapt__ia_name_parse(tok[1], &n, why, sizeof(why)))
		return bad_line(pos, "disable: %s", why);
	if (n.has_port)
		return bad_line(pos, "disable %s: ports cannot be disabled, only providers and devices",
				tok[1]);
	d = realloc(conf->disables, (conf->ndisables + 1) * sizeof(*d));
	if (!d)
		return rapt__fail(RAPT_ENOMEM, "out of memory reading %s",
				  pos->file);
	conf->disables = d;
	d = &d[conf->ndisables++];
	memcpy(d->prov, n.prov, sizeof(d->prov));
	memcpy(d->dev, n.dev, sizeof(d->dev));
	snprintf(d->where, sizeof(d->where), "%s", pos->where);
	return 0;
}

static int conf_line(struct rapt_conf *conf, const struct conf_pos *pos,
		     char *line)
{
	char *tok[CONF_MAX_TOKENS];
	char *save = NULL;
	char *t;
	int ntok = 0;

	line[strcspn(line, "#")] = '\0';
	for (t = strtok_r(line, " \t\r\n\v\f", &save); t;
	     t = strtok_r(NULL, " \t\r\n\v\f", &save)) {
		if (ntok == CONF_MAX_TOKENS)
			return bad_line(pos, "too many words (at most %d)",
					CONF_MAX_TOKENS);
		tok[ntok++] = t;
	}
	if (!ntok)
		return 0;
	if (!strcmp(tok[0], "alias"))
		return conf_alias(conf, pos, tok, ntok);
	if (!strcmp(tok[0], "order"))
		return conf_order(conf, pos, tok, ntok);
	if (!strcmp(tok[0], "disable"))
		return conf_disable(conf, pos, tok, ntok);
	return bad_line(pos, "unknown keyword '%s' (expected alias, order or disable)",
			tok[0]);
}

static int conf_cannot_read(const char *path, int err)
{
	rapt_err("cannot read %s: %s", path, strerror(err));
	return rapt__fail(RAPT_ECONFIG, "cannot read %s: %s", path,
			  strerror(err));
}

int rapt__conf_stream(struct rapt_conf *conf, FILE *f, const char *path)
{
	struct conf_pos pos = { .file = path };
	size_t cap = 0;
	char *line = NULL;
	int ret = 0;

	errno = 0;
	while (getline(&line, &cap, f) >= 0) {
		pos.line++;
		snprintf(pos.where, sizeof(pos.where), "%s:%u", path,
			 pos.line);
		ret = conf_line(conf, &pos, line);
		if (ret)
			goto out;
	}
	if (ferror(f))
		ret = conf_cannot_read(path, errno ? errno : EIO);
out:
	free(line);
	return ret;
}

/* Parse one file; a missing file is fine unless @required. */
static int conf_file(struct rapt_conf *conf, const char *path, bool required)
{
	FILE *f;
	int ret;

	f = fopen(path, "rec");	/* c: no cancellation points */
	if (!f) {
		if (errno == ENOENT && !required)
			return 0;
		return conf_cannot_read(path, errno);
	}
	rapt_dbg("reading %s", path);
	ret = rapt__conf_stream(conf, f, path);
	fclose(f);
	return ret;
}

static int conf_dropin_filter(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return d->d_name[0] != '.' && len > 5 &&
	       !strcmp(d->d_name + len - 5, ".conf");
}

/* Byte order, not the locale's: the same order for everyone. */
static int conf_dropin_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int conf_dir(struct rapt_conf *conf, const char *dir)
{
	char path[RAPT_WHERE_MAX];
	struct dirent **names;
	struct stat st;
	int n, i, ret = 0;

	n = scandir(dir, &names, conf_dropin_filter, conf_dropin_cmp);
	if (n < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return conf_cannot_read(dir, errno);
	}
	for (i = 0; i < n; i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
				     names[i]->d_name) >= sizeof(path)) {
			if (!ret)
				ret = conf_cannot_read(names[i]->d_name,
						       ENAMETOOLONG);
		} else if (!ret && !stat(path, &st) && S_ISREG(st.st_mode)) {
			ret = conf_file(conf, path, true);
		}
		free(names[i]);
	}
	free(names);
	return ret;
}

int rapt__conf_load(struct rapt_conf *conf, const char *env_conf,
		    const char *sysconfdir)
{
	char path[RAPT_WHERE_MAX];
	int ret;

	memset(conf, 0, sizeof(*conf));
	if (env_conf) {
		if (!*env_conf || !strcmp(env_conf, "/dev/null"))
			return 0;
		return conf_file(conf, env_conf, true);
	}
	snprintf(path, sizeof(path), "%s/rapt.conf", sysconfdir);
	ret = conf_file(conf, path, false);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/rapt.conf.d", sysconfdir);
	return conf_dir(conf, path);
}

void rapt__conf_free(struct rapt_conf *conf)
{
	free(conf->aliases);
	free(conf->order);
	free(conf->disables);
	memset(conf, 0, sizeof(*conf));
}

const struct rapt_conf_alias *rapt__conf_alias(const struct rapt_conf *conf,
					       const char *name)
{
	size_t i;

	for (i = 0; i < conf->naliases; i++)
		if (!strcmp(conf->aliases[i].name, name))
			return &conf->aliases[i];
	return NULL;
}

const struct rapt_conf_disable *rapt__conf_disabled(const struct rapt_conf *c,
						    const char *prov,
						    const char *dev)
{
	size_t i;

	for (i = 0; i < c->ndisables; i++) {
		const struct rapt_conf_disable *d = &c->disables[i];

		if (strcmp(d->prov, prov))
			continue;
		if (!d->dev[0] || (dev && !strcmp(d->dev, dev)))
			return d;
	}
	return NULL;
}
