/* SPDX-License-Identifier: MIT */
/*
 * Registry-private declarations: rapt.conf and environment parsing
 * (config.c) and the provider loader (loader.c), both used by registry.c.
 */
#ifndef RAPT_CORE_REGISTRY_H
#define RAPT_CORE_REGISTRY_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

struct rapt_prov;

/* Longest names; they fit the fields of struct rapt_entry. */
#define RAPT_PROV_NAME_MAX 32		/* with the NUL */
#define RAPT_DEV_NAME_MAX 64		/* struct rapt_prov_device.name */
#define RAPT_IA_NAME_MAX 128		/* struct rapt_entry.name */
#define RAPT_WHERE_MAX 512		/* "<file>:<line>" */
#define RAPT_REASON_MAX 512		/* struct rapt_entry.reason */

/* ------------------------------------------------------------------ */
/* Names (config.c)                                                    */
/* ------------------------------------------------------------------ */

/* Is @s a provider name: [a-z0-9_]+, shorter than RAPT_PROV_NAME_MAX? */
bool rapt__prov_name_ok(const char *s, size_t len);

/* Is @s an alias name: [A-Za-z0-9_.-]+, shorter than RAPT_IA_NAME_MAX? */
bool rapt__alias_name_ok(const char *s);

/**
 * struct rapt_ia_name - an IA name taken apart
 * @prov: provider name
 * @dev: device name, "" if none was given
 * @port: port, if @has_port
 * @has_port: whether a port was given
 */
struct rapt_ia_name {
	char prov[RAPT_PROV_NAME_MAX];
	char dev[RAPT_DEV_NAME_MAX];
	uint32_t port;
	bool has_port;
};

/*
 * Parse "<provider>[:<device>[:<port>]]".  Writes what is wrong into @why.
 * Return: 0 or RAPT_EINVAL.
 */
int rapt__ia_name_parse(const char *s, struct rapt_ia_name *n,
			char *why, size_t why_len);

/* ------------------------------------------------------------------ */
/* RAPT_PROVIDER (config.c)                                            */
/* ------------------------------------------------------------------ */

#define RAPT_FILTER_MAX 32

/**
 * struct rapt_filter - the RAPT_PROVIDER list
 * @exclude: "^a,b": the names are left out; else only they are used
 * @n: number of names; 0 means no filter
 * @names: the names
 * @spec: the variable's value, for messages
 */
struct rapt_filter {
	bool exclude;
	unsigned int n;
	char names[RAPT_FILTER_MAX][RAPT_PROV_NAME_MAX];
	char spec[256];
};

/* Parse @spec (NULL or "" for no filter).  Return: 0 or RAPT_ECONFIG. */
int rapt__filter_parse(const char *spec, struct rapt_filter *f);
/* Whether @prov is in the filter's list. */
bool rapt__filter_lists(const struct rapt_filter *f, const char *prov);
/* Whether @prov may be used. */
bool rapt__filter_allows(const struct rapt_filter *f, const char *prov);

/* ------------------------------------------------------------------ */
/* rapt.conf (config.c)                                                */
/* ------------------------------------------------------------------ */

struct rapt_conf_alias {
	char name[RAPT_IA_NAME_MAX];
	char target[RAPT_IA_NAME_MAX];
	char file[RAPT_WHERE_MAX];	/* the config file */
	char where[RAPT_WHERE_MAX];	/* "<file>:<line>" */
};

struct rapt_conf_disable {
	char prov[RAPT_PROV_NAME_MAX];
	char dev[RAPT_DEV_NAME_MAX];	/* "" for the whole provider */
	char where[RAPT_WHERE_MAX];
};

#define RAPT_CONF_ORDER_MAX 64

/**
 * struct rapt_conf - the parsed configuration (all files together)
 * @aliases: aliases; a later line for the same name replaces the earlier
 * @order: the last "order" line's names (provider, IA or alias names)
 * @disables: "disable" lines
 */
struct rapt_conf {
	struct rapt_conf_alias *aliases;
	size_t naliases;
	char (*order)[RAPT_IA_NAME_MAX];
	size_t norder;
	char order_where[RAPT_WHERE_MAX];
	struct rapt_conf_disable *disables;
	size_t ndisables;
};

/**
 * rapt__conf_load - read the configuration
 * @conf: output; release with rapt__conf_free() (also after a failure)
 * @env_conf: the value of RAPT_CONF, or NULL if it is not set; "" and
 *            "/dev/null" mean no configuration
 * @sysconfdir: where rapt.conf and rapt.conf.d/ live when @env_conf is NULL
 *
 * Sets the error detail and logs the file and line of a bad line.
 * Return: 0, RAPT_ECONFIG, RAPT_ENOMEM.
 */
int rapt__conf_load(struct rapt_conf *conf, const char *env_conf,
		    const char *sysconfdir);
void rapt__conf_free(struct rapt_conf *conf);
/* Add the lines of @f (named @path in messages) to @conf: what
 * rapt__conf_load does for each file (the fuzz target calls it). */
int rapt__conf_stream(struct rapt_conf *conf, FILE *f, const char *path);

const struct rapt_conf_alias *rapt__conf_alias(const struct rapt_conf *conf,
					       const char *name);
/* The disable line for @prov (@dev NULL) or for @prov:@dev, or NULL. */
const struct rapt_conf_disable *rapt__conf_disabled(const struct rapt_conf *c,
						    const char *prov,
						    const char *dev);

/* ------------------------------------------------------------------ */
/* Loader (loader.c)                                                   */
/* ------------------------------------------------------------------ */

/**
 * rapt__prov_load - load a provider DSO and check its descriptor
 * @path: the DSO
 * @name: the provider name its file name carries
 * @prov: output, a new struct rapt_prov (on success)
 * @reason: output, why it failed, in plain words (on failure)
 * @reason_len: size of @reason
 *
 * Logs the failure.  Nothing is left loaded after a failure.
 * Return: 0, RAPT_EDLOPEN, RAPT_EABI, RAPT_EPROVIDER, RAPT_ENOMEM, or the
 * provider's init() status.
 */
int rapt__prov_load(const char *path, const char *name,
		    struct rapt_prov **prov, char *reason, size_t reason_len);

#endif /* RAPT_CORE_REGISTRY_H */
