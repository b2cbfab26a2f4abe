/* SPDX-License-Identifier: MIT */
/*
 * Registry, loader, configuration and logging tests.
 *
 * Built twice (tests/registry.inc):
 *  - tests/test_registry: through the public API against the fake
 *    providers of tests/fake/.  Each case links the fakes it needs into a
 *    fresh directory and points RAPT_PROVIDER_PATH, RAPT_CONF and
 *    RAPT_PROVIDER at it, as a user would.
 *  - tests/test_registry_conf (RAPT_TEST_CONF_UNIT): the configuration
 *    parser and name syntax, compiled from core/config.c, so the default
 *    location ($(sysconfdir)/rapt.conf and rapt.conf.d/) can be pointed at
 *    a temporary directory; and the ops stubs of core/stubs.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include <rapt/rapt.h>
#include <rapt/provider.h>

#ifdef RAPT_TEST_CONF_UNIT
#include "../core/registry.h"
#include "../core/rapt_int.h"
#endif
#include "cu_table.h"

/* ------------------------------------------------------------------ */
/* Helpers shared by both programs                                     */
/* ------------------------------------------------------------------ */

static char root[256];		/* this run's temporary directory */

#define ASSERT_HAS(str, sub)						\
	do {								\
		const char *s_ = (str);					\
		const char *sub_ = (sub);				\
		if (!strstr(s_, sub_))					\
			fprintf(stderr, "%s:%d: \"%s\" lacks \"%s\"\n",	\
				__FILE__, __LINE__, s_, sub_);		\
		CU_ASSERT(strstr(s_, sub_) != NULL);			\
	} while (0)

#define ASSERT_STATUS(got, want)					\
	do {								\
		int g_ = (got), w_ = (want);				\
		if (g_ != w_)						\
			fprintf(stderr, "%s:%d: got %s, want %s (%s)\n",\
				__FILE__, __LINE__, rapt_err_name(g_),	\
				rapt_err_name(w_), rapt_last_error());	\
		CU_ASSERT_EQUAL(g_, w_);				\
	} while (0)

static const char *tmp_path(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* A path under root; the result lives until the next 32 calls. */
static const char *tmp_path(const char *fmt, ...)
{
	static char buf[32][512];
	static unsigned int next;
	char *p = buf[next++ % 32];
	size_t len;
	va_list ap;

	len = (size_t)snprintf(p, sizeof(buf[0]), "%s/", root);
	va_start(ap, fmt);
	vsnprintf(p + len, sizeof(buf[0]) - len, fmt, ap);
	va_end(ap);
	return p;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	CU_ASSERT_EQUAL(fclose(f), 0);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	return remove(path);
}

static int suite_init(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(root, sizeof(root), "%s/rapt-test-registry-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	return mkdtemp(root) ? 0 : -1;
}

static int suite_clean(void)
{
	return nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#ifndef RAPT_TEST_CONF_UNIT
/* ------------------------------------------------------------------ */
/* Public API against the fake providers                              */
/* ------------------------------------------------------------------ */

#define GOOD "librapt-fakegood-pv2.so"
#define ALT "librapt-fakealt-pv2.so"
#define ABI99 "librapt-fakeabi-pv2.so"
#define OLD "librapt-fakeold-pv1.so"
#define NOENTRY "librapt-fakenoentry-pv2.so"
#define UNDEF "librapt-fakeundef-pv2.so"
#define BADNAME "librapt-fakename-pv2.so"
#define BADINIT "librapt-fakeinit-pv2.so"

static const char *self_exe;

/* A directory holding links to the fakes named (NULL-terminated). */
static const char *tree(const char *tag, ...)
{
	static char dirs[8][512];
	static unsigned int next;
	char *dir = dirs[next++ % 8];
	char from[512];
	const char *f;
	va_list ap;

	snprintf(dir, sizeof(dirs[0]), "%s", tmp_path("%s", tag));
	CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0700), 0);
	va_start(ap, tag);
	while ((f = va_arg(ap, const char *))) {
		snprintf(from, sizeof(from), "%s/%s", RAPT_TEST_FAKEDIR, f);
		if (access(from, R_OK))
			fprintf(stderr, "fixture %s is missing\n", from);
		CU_ASSERT_EQUAL_FATAL(access(from, R_OK), 0);
		CU_ASSERT_EQUAL_FATAL(symlink(from, tmp_path("%s/%s", tag, f)),
				      0);
	}
	va_end(ap);
	return dir;
}

static const char *conf(const char *tag, const char *text)
{
	const char *path = tmp_path("%s.conf", tag);

	write_file(path, text);
	return path;
}

/* Point the registry at @path; NULL @conf_file means no configuration. */
static void use(const char *path, const char *conf_file, const char *prov)
{
	setenv("RAPT_PROVIDER_PATH", path, 1);
	setenv("RAPT_CONF", conf_file ? conf_file : "/dev/null", 1);
	if (prov)
		setenv("RAPT_PROVIDER", prov, 1);
	else
		unsetenv("RAPT_PROVIDER");
}

static const struct rapt_entry *find(const struct rapt_entry *e, size_t n,
				     uint32_t kind, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (e[i].kind == kind && !strcmp(e[i].name, name))
			return &e[i];
	return NULL;
}

static size_t count_kind(const struct rapt_entry *e, size_t n, uint32_t kind,
			 const char *prov)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		if (e[i].kind == kind && !strcmp(e[i].provider, prov))
			c++;
	return c;
}

/* Open @name, read its attributes, close it. */
static int open_attr(const char *name, struct rapt_ia_attr *attr)
{
	struct rapt_ia *ia;
	int ret;

	ret = rapt_ia_open(name, &ia);
	if (ret)
		return ret;
	memset(attr, 0, sizeof(*attr));
	CU_ASSERT_EQUAL(rapt_ia_query(ia, attr, sizeof(*attr)), 0);
	CU_ASSERT_EQUAL(rapt_ia_close(ia), 0);
	return 0;
}

/* rapt_ia_open(@name) must give @prov:@dev on @port. */
static void expect_open(const char *name, const char *prov, const char *dev,
			uint32_t port)
{
	struct rapt_ia_attr a;

	ASSERT_STATUS(open_attr(name, &a), 0);
	if (strcmp(a.provider, prov) || strcmp(a.device, dev) ||
	    a.max_ep != 1000 + port)
		fprintf(stderr, "open %s: got %s:%s port %u, want %s:%s:%u\n",
			name ? name : "(NULL)", a.provider, a.device,
			a.max_ep - 1000, prov, dev, port);
	CU_ASSERT_STRING_EQUAL(a.provider, prov);
	CU_ASSERT_STRING_EQUAL(a.device, dev);
	CU_ASSERT_EQUAL(a.port, port);
	CU_ASSERT_EQUAL(a.max_ep, 1000 + port);	/* the fake's port */
}

/* rapt_ia_open(@name) must fail with @status, the detail naming @what. */
static void expect_fail(const char *name, int status, const char *what)
{
	struct rapt_ia *ia = (struct rapt_ia *)&ia;

	ASSERT_STATUS(rapt_ia_open(name, &ia), status);
	CU_ASSERT_PTR_EQUAL(ia, (struct rapt_ia *)&ia);	/* untouched */
	if (what)
		ASSERT_HAS(rapt_last_error(), what);
}

static void test_good_provider(void)
{
	const char *dir = tree("good", GOOD, NULL);
	const struct rapt_entry *p, *d;
	struct rapt_entry *e;
	struct rapt_ia *ia;
	struct rapt_pz *pz;
	size_t n;

	use(dir, NULL, NULL);
	ASSERT_STATUS(rapt_registry_list(&e, &n), 0);
	p = find(e, n, RAPT_ENTRY_PROVIDER, "fakegood");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->status, 0);
	CU_ASSERT_STRING_EQUAL(p->reason, "");
	CU_ASSERT_EQUAL(p->abi, RAPT_PROVIDER_ABI);
	CU_ASSERT_EQUAL(p->prov_version, RAPT_VERSION_PACK(0, 1, 2));
	CU_ASSERT_STRING_EQUAL(p->path, tmp_path("good/" GOOD));
	CU_ASSERT_EQUAL(count_kind(e, n, RAPT_ENTRY_DEVICE, "fakegood"), 3);

	d = find(e, n, RAPT_ENTRY_DEVICE, "fakegood:d0");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(d->status, 0);
	CU_ASSERT_EQUAL(d->rank, 50);
	CU_ASSERT_EQUAL(d->transport, RAPT_TRANSPORT_IB);
	CU_ASSERT_STRING_EQUAL(d->provider, "fakegood");
	d = find(e, n, RAPT_ENTRY_DEVICE, "fakegood:d1");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(d->status, RAPT_ENODEV);
	CU_ASSERT_STRING_EQUAL(d->reason, "cable unplugged");
	d = find(e, n, RAPT_ENTRY_DEVICE, "fakegood:d2");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(d->transport, RAPT_TRANSPORT_IWARP);
	CU_ASSERT_PTR_NULL(find(e, n, RAPT_ENTRY_PROVIDER, "fakealt"));
	rapt_free(e);

	expect_open("fakegood", "fakegood", "d0", 1);

	/* The fake has no pz_create: the core's stub makes PZs work. */
	ASSERT_STATUS(rapt_ia_open("fakegood:d2", &ia), 0);
	ASSERT_STATUS(rapt_pz_create(ia, &pz), 0);
	ASSERT_STATUS(rapt_pz_free(pz), 0);
	ASSERT_STATUS(rapt_ia_close(ia), 0);
}

static void test_ia_names(void)
{
	use(tree("names", GOOD, NULL), NULL, NULL);
	expect_open("fakegood:d0", "fakegood", "d0", 1);
	expect_open("fakegood:d0:2", "fakegood", "d0", 2);
	expect_open("fakegood:d2", "fakegood", "d2", 0);
	expect_open("fakegood:d2:7", "fakegood", "d2", 7); /* no nports */
	expect_fail("fakegood:d0:3", RAPT_ENODEV, "ports 1-2");
	expect_fail("fakegood:d0:0", RAPT_ENODEV, "no port 0");
	expect_fail("fakegood:nodev", RAPT_ENODEV, "d0, d1, d2");
	expect_fail("fakegood:d1", RAPT_ENODEV, "cable unplugged");
	expect_fail("fakegood:", RAPT_EINVAL, "device name");
	expect_fail(":d0", RAPT_EINVAL, NULL);
	expect_fail("", RAPT_EINVAL, "empty");
	expect_fail("fakegood:d0:x", RAPT_EINVAL, "port 'x'");
	expect_fail("fakegood:d0:1:2", RAPT_EINVAL, NULL);
	expect_fail("fake good", RAPT_EINVAL, NULL);
	expect_fail("NoSuchAlias", RAPT_ENOPROVIDER, "NoSuchAlias");
}

static void test_missing_provider(void)
{
	const char *dir = tree("missing", GOOD, NULL);

	use(dir, NULL, NULL);
	expect_fail("nosuch", RAPT_ENOPROVIDER, "librapt-nosuch-pv2.so");
	ASSERT_HAS(rapt_last_error(), dir);
	expect_fail("nosuch:dev:1", RAPT_ENOPROVIDER, "nosuch");
}

static void test_dlopen_fails(void)
{
	const struct rapt_entry *p;
	struct rapt_entry *e;
	size_t n;

	use(tree("undef", UNDEF, GOOD, NULL), NULL, NULL);
	/* The dlerror() text names the missing symbol. */
	expect_fail("fakeundef", RAPT_EDLOPEN, "rapt_fake_missing_function");
	ASSERT_HAS(rapt_last_error(), "undefined symbol");
	ASSERT_STATUS(rapt_registry_list(&e, &n), 0);
	p = find(e, n, RAPT_ENTRY_PROVIDER, "fakeundef");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->status, RAPT_EDLOPEN);
	ASSERT_HAS(p->reason, "rapt_fake_missing_function");
	CU_ASSERT_EQUAL(count_kind(e, n, RAPT_ENTRY_DEVICE, "fakeundef"), 0);
	/* A broken provider does not hide the others. */
	CU_ASSERT_PTR_NOT_NULL(find(e, n, RAPT_ENTRY_DEVICE, "fakegood:d0"));
	rapt_free(e);
	expect_open(NULL, "fakegood", "d2", 0);
}

static void test_abi_99(void)
{
	const struct rapt_entry *p;
	struct rapt_entry *e;
	size_t n;

	use(tree("abi99", ABI99, NULL), NULL, NULL);
	expect_fail("fakeabi", RAPT_EABI, "provider ABI 99");
	ASSERT_HAS(rapt_last_error(), "this librapt speaks provider ABI 2");
	ASSERT_STATUS(rapt_registry_list(&e, &n), 0);
	p = find(e, n, RAPT_ENTRY_PROVIDER, "fakeabi");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->status, RAPT_EABI);
	ASSERT_HAS(p->reason, "99");
	ASSERT_HAS(p->reason, "ABI 2");
	rapt_free(e);
}

/* The -pv1 fixture (an older rapt's provider) aborts if it is ever
 * dlopen'ed. */
static void test_old_abi_not_opened(void)
{
	const struct rapt_entry *p;
	struct rapt_entry *e;
	size_t n;

	use(tree("old", OLD, GOOD, NULL), NULL, NULL);
	ASSERT_STATUS(rapt_registry_list(&e, &n), 0);
	p = find(e, n, RAPT_ENTRY_PROVIDER, "fakeold");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->status, RAPT_EABI);
	CU_ASSERT_EQUAL(p->abi, 1);
	CU_ASSERT_STRING_EQUAL(p->reason,
			       "librapt-fakeold-pv1.so was built for provider ABI 1; this librapt speaks provider ABI 2 (a provider for an older rapt: rebuild it against this rapt's <rapt/provider.h>)");
	CU_ASSERT_EQUAL(count_kind(e, n, RAPT_ENTRY_DEVICE, "fakeold"), 0);
	rapt_free(e);
	expect_fail("fakeold", RAPT_EABI, "built for provider ABI 1");
	expect_open(NULL, "fakegood", "d2", 0);
}

static void test_missing_entry(void)
{
	use(tree("noentry", NOENTRY, NULL), NULL, NULL);
	expect_fail("fakenoentry", RAPT_EDLOPEN,
		    "missing entry symbol rapt_provider_entry");
}

static void test_name_mismatch(void)
{
	use(tree("badname", BADNAME, NULL), NULL, NULL);
	expect_fail("fakename", RAPT_EPROVIDER, "'other'");
	ASSERT_HAS(rapt_last_error(), "'fakename'");
}

static void test_init_fails(void)
{
	use(tree("badinit", BADINIT, NULL), NULL, NULL);
	expect_fail("fakeinit", RAPT_EIO, "the fake hardware is on fire");
	/* Cached: the second attempt says the same. */
	expect_fail("fakeinit", RAPT_EIO, "on fire");
}

static void test_bad_config(void)
{
	const char *dir = tree("badconf", GOOD, NULL);
	const char *c = conf("badconf", "# comment\nalias x fakegood\n"
			     "frobnicate fakegood\n");
	struct rapt_entry *e = NULL;
	size_t n = 0;
	char where[600];

	snprintf(where, sizeof(where), "%s:3: ", c);
	use(dir, c, NULL);
	expect_fail("fakegood", RAPT_ECONFIG, where);
	ASSERT_HAS(rapt_last_error(), "frobnicate");
	expect_fail(NULL, RAPT_ECONFIG, where);
	ASSERT_STATUS(rapt_registry_list(&e, &n), RAPT_ECONFIG);
	ASSERT_HAS(rapt_last_error(), where);

	c = conf("badconf2", "alias x\n");
	snprintf(where, sizeof(where), "%s:1: ", c);
	use(dir, c, NULL);
	expect_fail("x", RAPT_ECONFIG, where);

	c = conf("badconf3", "\n\ndisable fakegood:d0:1\n");
	snprintf(where, sizeof(where), "%s:3: ", c);
	use(dir, c, NULL);
	expect_fail("fakegood", RAPT_ECONFIG, where);

	/* RAPT_CONF naming a file that is not there is an error... */
	use(dir, tmp_path("no-such.conf"), NULL);
	expect_fail("fakegood", RAPT_ECONFIG, "no-such.conf");
	/* ...but an empty RAPT_CONF means no configuration. */
	use(dir, "", NULL);
	expect_open("fakegood", "fakegood", "d0", 1);
}

static void test_alias(void)
{
	const char *dir = tree("alias", GOOD, NULL);
	const char *c = conf("alias", "alias fast fakegood:d0:2 # comment\n"
			     "alias broken nosuch\n"
			     "\talias  Two.names-ok\tfakegood:d2\n");
	const struct rapt_entry *a;
	struct rapt_entry *e;
	size_t n;

	use(dir, c, NULL);
	expect_open("fast", "fakegood", "d0", 2);
	expect_open("Two.names-ok", "fakegood", "d2", 0);
	expect_fail("broken", RAPT_ENOPROVIDER, "alias broken");
	ASSERT_HAS(rapt_last_error(), "nosuch");

	ASSERT_STATUS(rapt_registry_list(&e, &n), 0);
	a = find(e, n, RAPT_ENTRY_ALIAS, "fast");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(a->status, 0);
	CU_ASSERT_STRING_EQUAL(a->target, "fakegood:d0:2");
	CU_ASSERT_STRING_EQUAL(a->provider, "fakegood");
	CU_ASSERT_STRING_EQUAL(a->path, c);
	CU_ASSERT_EQUAL(a->rank, 50);
	a = find(e, n, RAPT_ENTRY_ALIAS, "broken");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(a->status, RAPT_ENOPROVIDER);
	ASSERT_HAS(a->reason, "nosuch");
	rapt_free(e);
}

static void test_default_rank(void)
{
	/* fakegood:d2 and fakealt:a0 both rank 40: the name decides. */
	use(tree("rank", GOOD, ALT, NULL), NULL, NULL);
	expect_open(NULL, "fakealt", "a0", 0);
	use(tree("rank1", GOOD, NULL), NULL, NULL);
	expect_open(NULL, "fakegood", "d2", 0);	/* d1 ranks 1, unusable */
}

static void test_order(void)
{
	const char *dir = tree("order", GOOD, ALT, NULL);

	use(dir, conf("order1", "order fakegood\n"), NULL);
	expect_open(NULL, "fakegood", "d0", 1);
	use(dir, conf("order2", "order nosuch fakegood:d1 fakegood:d2:3\n"),
	    NULL);
	expect_open(NULL, "fakegood", "d2", 3);
	use(dir, conf("order3", "alias fast fakegood:d0:2\norder fast\n"),
	    NULL);
	expect_open(NULL, "fakegood", "d0", 2);
	/* The last order line wins. */
	use(dir, conf("order4", "order fakegood\norder fakealt\n"), NULL);
	expect_open(NULL, "fakealt", "a0", 0);
	/* Nothing in the order usable: back to the ranks. */
	use(dir, conf("order5", "order nosuch\n"), NULL);
	expect_open(NULL, "fakealt", "a0", 0);
	/* Order does not restrict what can be named. */
	expect_open("fakegood:d0", "fakegood", "d0", 1);
}

static void test_disable(void)
{
	const char *dir = tree("disable", GOOD, ALT, NULL);
	const char *c = conf("disable", "disable fakealt\n");
	const struct rapt_entry *p;
	struct rapt_entry *e;
	char where[600];
	size_t n;

	use(dir, c, NULL);
	expect_open(NULL, "fakegood", "d2", 0);
	snprintf(where, sizeof(where), "%s:1", c);
	expect_fail("fakealt", RAPT_ENOPROVIDER, where);
	ASSERT_STATUS(rapt_registry_list(&e, &n), 0);
	p = find(e, n, RAPT_ENTRY_PROVIDER, "fakealt");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->status, RAPT_ENOPROVIDER);
	ASSERT_HAS(p->reason, "disabled by");
	ASSERT_HAS(p->reason, where);
	CU_ASSERT_EQUAL(count_kind(e, n, RAPT_ENTRY_DEVICE, "fakealt"), 0);
	rapt_free(e);

	c = conf("disable2", "disable fakealt\ndisable fakegood:d2\n");
	use(dir, c, NULL);
	expect_open(NULL, "fakegood", "d0", 1);
	expect_fail("fakegood:d2", RAPT_ENODEV, "disabled by");
	ASSERT_STATUS(rapt_registry_list(&e, &n), 0);
	p = find(e, n, RAPT_ENTRY_DEVICE, "fakegood:d2");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->status, RAPT_ENODEV);
	ASSERT_HAS(p->reason, "disabled by");
	rapt_free(e);
}

static void test_provider_filter(void)
{
	const char *dir = tree("filter", GOOD, ALT, NULL);
	const struct rapt_entry *p;
	struct rapt_entry *e;
	size_t n;

	use(dir, NULL, "fakegood");
	expect_open(NULL, "fakegood", "d2", 0);
	expect_fail("fakealt", RAPT_ENOPROVIDER, "RAPT_PROVIDER=fakegood");

	use(dir, NULL, "^fakealt");
	expect_open(NULL, "fakegood", "d2", 0);
	expect_fail("fakealt", RAPT_ENOPROVIDER, "RAPT_PROVIDER=^fakealt");

	use(dir, NULL, "^fakegood");
	expect_open(NULL, "fakealt", "a0", 0);
	expect_fail("fakegood:d0", RAPT_ENOPROVIDER, "RAPT_PROVIDER");

	/* Asked for and nowhere: listed with the reason. */
	use(dir, NULL, "fakegood,nosuch");
	ASSERT_STATUS(rapt_registry_list(&e, &n), 0);
	p = find(e, n, RAPT_ENTRY_PROVIDER, "nosuch");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->status, RAPT_ENOPROVIDER);
	ASSERT_HAS(p->reason, "librapt-nosuch-pv2.so");
	p = find(e, n, RAPT_ENTRY_PROVIDER, "fakealt");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(p->status, RAPT_ENOPROVIDER);
	ASSERT_HAS(p->reason, "RAPT_PROVIDER");
	rapt_free(e);

	use(dir, NULL, "Bad!");
	expect_fail(NULL, RAPT_ECONFIG, "RAPT_PROVIDER=Bad!");
	use(dir, NULL, NULL);
}

static void test_shadow(void)
{
	const char *a = tree("shadowA", GOOD, NULL);
	const char *b = tree("shadowB", GOOD, ALT, NULL);
	const struct rapt_entry *first = NULL, *second = NULL;
	struct rapt_entry *e;
	char path[1100];
	size_t n, i;

	/* b twice (second spelling with a trailing slash) counts once. */
	snprintf(path, sizeof(path), "%s:%s:%s/", a, b, b);
	use(path, NULL, NULL);
	ASSERT_STATUS(rapt_registry_list(&e, &n), 0);
	for (i = 0; i < n; i++) {
		if (e[i].kind != RAPT_ENTRY_PROVIDER ||
		    strcmp(e[i].name, "fakegood"))
			continue;
		CU_ASSERT_PTR_NULL(second);
		if (first)
			second = &e[i];
		else
			first = &e[i];
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(first);
	CU_ASSERT_PTR_NOT_NULL_FATAL(second);
	CU_ASSERT_EQUAL(first->status, 0);
	CU_ASSERT_STRING_EQUAL(first->path, tmp_path("shadowA/" GOOD));
	CU_ASSERT_EQUAL(second->status, RAPT_EEXIST);
	ASSERT_HAS(second->reason, "shadowed by");
	ASSERT_HAS(second->reason, first->path);
	CU_ASSERT_EQUAL(count_kind(e, n, RAPT_ENTRY_PROVIDER, "fakealt"), 1);
	CU_ASSERT_EQUAL(count_kind(e, n, RAPT_ENTRY_DEVICE, "fakegood"), 3);
	rapt_free(e);
}

static bool pkglibdir_has_providers(void)
{
	struct rapt_entry *e;
	size_t n, i;
	bool any = false;

	use(tmp_path("nonexistent"), NULL, NULL);
	if (rapt_registry_list(&e, &n))
		return true;
	for (i = 0; i < n; i++)
		any |= e[i].kind == RAPT_ENTRY_PROVIDER;
	rapt_free(e);
	return any;
}

static void test_nothing_found(void)
{
	const char *dir = tree("empty", NULL);
	struct rapt_entry *e = NULL;
	size_t n = 99;

	if (pkglibdir_has_providers()) {
		cu_skip("'nothing found': providers are installed in "
			RAPT_PKGLIBDIR);
		return;
	}
	use(dir, NULL, NULL);
	ASSERT_STATUS(rapt_registry_list(&e, &n), 0);
	CU_ASSERT_EQUAL(n, 0);
	rapt_free(e);
	expect_fail(NULL, RAPT_ENODEV, "no usable provider");
	ASSERT_HAS(rapt_last_error(), dir);

	/* Only broken ones: each says why. */
	use(tree("broken", OLD, UNDEF, NULL), NULL, NULL);
	expect_fail(NULL, RAPT_ENODEV, "fakeold");
	ASSERT_HAS(rapt_last_error(), "fakeundef");
	ASSERT_STATUS(rapt_registry_list(NULL, &n), RAPT_EINVAL);
}

static void *list_open_loop(void *arg)
{
	struct rapt_ia_attr a;
	struct rapt_entry *e;
	size_t n;
	int i, bad = 0;

	for (i = 0; i < 20; i++) {
		if (rapt_registry_list(&e, &n))
			bad++;
		else
			rapt_free(e);
		if (open_attr(i & 1 ? NULL : "fakegood:d0:2", &a))
			bad++;
	}
	return (void *)(intptr_t)bad;
}

static void test_threads(void)
{
	pthread_t t[4];
	void *bad;
	int i;

	use(tree("threads", GOOD, ALT, OLD, UNDEF, NULL), NULL, NULL);
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL,
						     list_open_loop, NULL), 0);
	for (i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(pthread_join(t[i], &bad), 0);
		CU_ASSERT_PTR_NULL(bad);
	}
}

/* ------------------------------------------------------------------ */
/* Logging: in a child process, since the environment is read once    */
/* ------------------------------------------------------------------ */

static int log_child(void)
{
	int bad = 0;

	bad |= !rapt_prov_log_enabled(RAPT_LOG_INFO, "fakex") << 0;
	bad |= rapt_prov_log_enabled(RAPT_LOG_DEBUG, "fakex") << 1;
	bad |= rapt_prov_log_enabled(RAPT_LOG_ERROR, "core") << 2;
	bad |= rapt_prov_log_enabled(RAPT_LOG_NONE, "fakex") << 3;
	errno = ENOENT;
	rapt_prov_log(RAPT_LOG_INFO, "fakex", "fn", 7, "hello %d: %m", 42);
	bad |= (errno != ENOENT) << 4;
	rapt_prov_log(RAPT_LOG_ERROR, "core", "fn", 8, "filtered out");
	rapt_prov_log(RAPT_LOG_DEBUG, "fakex", "fn", 9, "above the level");
	RAPT_PLOG(RAPT_LOG_WARN, "fakey", "filtered out too");
	RAPT_PLOG(RAPT_LOG_WARN, "fakez", "macro %s", "works");
	return bad;
}

/* Run log_child() with @level and @provs; return what it printed. */
static int run_log_child(const char *level, const char *provs, char *out,
			 size_t len)
{
	int fd[2], status;
	size_t got = 0;
	ssize_t r;
	pid_t pid;

	CU_ASSERT_EQUAL_FATAL(pipe(fd), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid) {
		dup2(fd[1], 2);
		close(fd[0]);
		setenv("RAPT_LOG_LEVEL", level, 1);
		setenv("RAPT_LOG_PROV", provs, 1);
		execl(self_exe, self_exe, "--log-child", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while (got < len - 1 && (r = read(fd[0], out + got, len - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = '\0';
	close(fd[0]);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_log(void)
{
	char out[2048];

	CU_ASSERT_EQUAL(run_log_child("info", "fakex,fakez", out,
				      sizeof(out)), 0);
	if (!strstr(out, "hello 42"))
		fprintf(stderr, "log child printed: %s\n", out);
	ASSERT_HAS(out, "rapt:fakex:fn:7: info: hello 42: ");
	ASSERT_HAS(out, strerror(ENOENT));
	ASSERT_HAS(out, "rapt:fakez:log_child:");
	ASSERT_HAS(out, ": warn: macro works\n");
	CU_ASSERT_PTR_NULL(strstr(out, "filtered out"));
	CU_ASSERT_PTR_NULL(strstr(out, "above the level"));

	/* Numbers work as well as names. */
	CU_ASSERT_EQUAL(run_log_child("3", "fakex,fakez", out, sizeof(out)),
			0);
	ASSERT_HAS(out, "info: hello 42");
	/* Level none: nothing, and "enabled" is false for INFO. */
	CU_ASSERT_EQUAL(run_log_child("none", "", out, sizeof(out)), 1);
	CU_ASSERT_STRING_EQUAL(out, "");
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "good provider loads and lists its devices", test_good_provider },
	{ "IA names: device, port, malformed", test_ia_names },
	{ "no DSO for a requested provider", test_missing_provider },
	{ "dlopen fails: EDLOPEN with dlerror", test_dlopen_fails },
	{ "descriptor ABI 99: EABI, both numbers", test_abi_99 },
	{ "-pv1 file (older ABI) listed, explained, never opened",
	  test_old_abi_not_opened },
	{ "missing entry symbol", test_missing_entry },
	{ "descriptor name differs from file name", test_name_mismatch },
	{ "init() fails", test_init_fails },
	{ "bad config line: ECONFIG file:line", test_bad_config },
	{ "alias", test_alias },
	{ "NULL: lowest rank, ties by name", test_default_rank },
	{ "order", test_order },
	{ "disable", test_disable },
	{ "RAPT_PROVIDER include and exclude", test_provider_filter },
	{ "first directory wins, later shadowed", test_shadow },
	{ "nothing usable", test_nothing_found },
	{ "threads list and open at once", test_threads },
	{ "RAPT_LOG_LEVEL and RAPT_LOG_PROV", test_log },
};

static int pre_main(int argc, char **argv)
{
	static char exe[4096];
	ssize_t len;

	if (argc > 1 && !strcmp(argv[1], "--log-child"))
		exit(log_child());
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return -1;
	exe[len] = '\0';
	self_exe = exe;
	return 0;
}

#else /* RAPT_TEST_CONF_UNIT */
/* ------------------------------------------------------------------ */
/* The configuration parser on its own                                 */
/* ------------------------------------------------------------------ */

static __thread char last_error[512];

int rapt__fail(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return status;
}

const char *rapt_last_error(void)
{
	return last_error;
}

const char *rapt_err_name(int status)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "%d", status);
	return buf;
}

static void test_dropins(void)
{
	struct rapt_conf c;
	char etc[512];

	snprintf(etc, sizeof(etc), "%s", tmp_path("etc"));
	CU_ASSERT_EQUAL_FATAL(mkdir(etc, 0700), 0);
	CU_ASSERT_EQUAL_FATAL(mkdir(tmp_path("etc/rapt.conf.d"), 0700), 0);
	write_file(tmp_path("etc/rapt.conf"),
		   "alias a fakegood:d0\nalias c x\norder x y\n");
	write_file(tmp_path("etc/rapt.conf.d/20-b.conf"),
		   "alias a fakealt\nalias c z\norder z\n");
	write_file(tmp_path("etc/rapt.conf.d/10-a.conf"),
		   "alias c y\ndisable fakegood:d1\n");
	write_file(tmp_path("etc/rapt.conf.d/notes.txt"), "garbage\n");
	write_file(tmp_path("etc/rapt.conf.d/.hidden.conf"), "garbage\n");
	CU_ASSERT_EQUAL_FATAL(mkdir(tmp_path("etc/rapt.conf.d/dir.conf"),
				    0700), 0);

	ASSERT_STATUS(rapt__conf_load(&c, NULL, etc), 0);
	CU_ASSERT_EQUAL(c.naliases, 2);
	CU_ASSERT_STRING_EQUAL(rapt__conf_alias(&c, "a")->target, "fakealt");
	/* rapt.conf, then 10-a, then 20-b: 20-b has the last word. */
	CU_ASSERT_STRING_EQUAL(rapt__conf_alias(&c, "c")->target, "z");
	ASSERT_HAS(rapt__conf_alias(&c, "c")->where, "20-b.conf:2");
	CU_ASSERT_STRING_EQUAL(rapt__conf_alias(&c, "c")->file,
			       tmp_path("etc/rapt.conf.d/20-b.conf"));
	CU_ASSERT_EQUAL_FATAL(c.norder, 1);
	CU_ASSERT_STRING_EQUAL(c.order[0], "z");
	CU_ASSERT_EQUAL_FATAL(c.ndisables, 1);
	CU_ASSERT_PTR_NOT_NULL(rapt__conf_disabled(&c, "fakegood", "d1"));
	CU_ASSERT_PTR_NULL(rapt__conf_disabled(&c, "fakegood", "d0"));
	CU_ASSERT_PTR_NULL(rapt__conf_disabled(&c, "fakegood", NULL));
	ASSERT_HAS(rapt__conf_disabled(&c, "fakegood", "d1")->where,
		   "10-a.conf:2");
	rapt__conf_free(&c);

	/* RAPT_CONF: one file instead of all of that; "" or /dev/null: none */
	write_file(tmp_path("only.conf"), "disable fakealt\n");
	ASSERT_STATUS(rapt__conf_load(&c, tmp_path("only.conf"), etc), 0);
	CU_ASSERT_EQUAL(c.naliases, 0);
	CU_ASSERT_PTR_NOT_NULL(rapt__conf_disabled(&c, "fakealt", NULL));
	CU_ASSERT_PTR_NOT_NULL(rapt__conf_disabled(&c, "fakealt", "any"));
	rapt__conf_free(&c);
	ASSERT_STATUS(rapt__conf_load(&c, "", etc), 0);
	CU_ASSERT_EQUAL(c.naliases + c.norder + c.ndisables, 0);
	rapt__conf_free(&c);
	ASSERT_STATUS(rapt__conf_load(&c, "/dev/null", etc), 0);
	CU_ASSERT_EQUAL(c.naliases + c.norder + c.ndisables, 0);
	rapt__conf_free(&c);

	/* Never required. */
	ASSERT_STATUS(rapt__conf_load(&c, NULL, tmp_path("no-etc")), 0);
	CU_ASSERT_EQUAL(c.naliases + c.norder + c.ndisables, 0);
	rapt__conf_free(&c);

	/* A bad drop-in is named with its line. */
	write_file(tmp_path("etc/rapt.conf.d/30-bad.conf"),
		   "# fine\n\norder\n");
	ASSERT_STATUS(rapt__conf_load(&c, NULL, etc), RAPT_ECONFIG);
	ASSERT_HAS(rapt_last_error(), "30-bad.conf:3: ");
	rapt__conf_free(&c);
}

static void test_grammar_ok(void)
{
	const char *f = tmp_path("ok.conf");
	struct rapt_conf c;

	write_file(f, "# leading comment\n"
		   "\n   \t\n"
		   "alias\tx  fakegood:d0:1   # trailing comment\r\n"
		   "order x fakegood fakegood:d0 fakegood:d0:2 Mixed.Case-1\n"
		   "disable fakealt\n"
		   "disable fakegood:mlx5_0\n"
		   "alias x fakealt\n"
		   "alias y fakegood#comment right after\n");
	ASSERT_STATUS(rapt__conf_load(&c, f, NULL), 0);
	CU_ASSERT_EQUAL(c.naliases, 2);
	CU_ASSERT_STRING_EQUAL(rapt__conf_alias(&c, "x")->target, "fakealt");
	CU_ASSERT_STRING_EQUAL(rapt__conf_alias(&c, "y")->target, "fakegood");
	CU_ASSERT_EQUAL_FATAL(c.norder, 5);
	CU_ASSERT_STRING_EQUAL(c.order[3], "fakegood:d0:2");
	CU_ASSERT_STRING_EQUAL(c.order[4], "Mixed.Case-1");
	CU_ASSERT_EQUAL(c.ndisables, 2);
	CU_ASSERT_PTR_NOT_NULL(rapt__conf_disabled(&c, "fakegood", "mlx5_0"));
	rapt__conf_free(&c);
}

static void test_grammar_bad(void)
{
	static const struct {
		const char *line;
		const char *what;
	} bad[] = {
		{ "frob x", "unknown keyword 'frob'" },
		{ "alias", "'alias' takes a name and an IA name" },
		{ "alias x", "'alias' takes a name and an IA name" },
		{ "alias x y z", "'alias' takes a name and an IA name" },
		{ "alias b@d fakegood", "'b@d' is not an alias name" },
		{ "alias x Fake", "not a provider name" },
		{ "alias x fakegood:", "empty device name" },
		{ "alias x fakegood:d 0", "takes a name and an IA name" },
		{ "alias x fakegood:d\x01", "not a device name" },
		{ "alias x fakegood:d0:p", "port 'p'" },
		{ "alias x fakegood:d0:99999999999", "is not a number" },
		{ "order", "at least one" },
		{ "order ok :d0", "no provider name" },
		{ "disable", "'disable' takes one name" },
		{ "disable a b", "'disable' takes one name" },
		{ "disable fakegood:d0:1", "ports cannot be disabled" },
		{ "disable Fake", "not a provider name" },
		{ "ALIAS x fakegood", "unknown keyword 'ALIAS'" },
	};
	const char *f = tmp_path("bad.conf");
	struct rapt_conf c;
	char text[256], where[600];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "# line 1\nalias ok fakegood\n%s\n",
			 bad[i].line);
		write_file(f, text);
		snprintf(where, sizeof(where), "%s:3: ", f);
		ASSERT_STATUS(rapt__conf_load(&c, f, NULL), RAPT_ECONFIG);
		CU_ASSERT_EQUAL(strncmp(rapt_last_error(), where,
					strlen(where)), 0);
		ASSERT_HAS(rapt_last_error(), bad[i].what);
		rapt__conf_free(&c);
	}
	ASSERT_STATUS(rapt__conf_load(&c, tmp_path("absent.conf"), NULL),
		      RAPT_ECONFIG);
	ASSERT_HAS(rapt_last_error(), "absent.conf");
	rapt__conf_free(&c);
}

static void test_ia_name_syntax(void)
{
	static const struct {
		const char *s;
		int ret;
		const char *prov, *dev;
		int port;	/* -1: none */
	} cases[] = {
		{ "tcp", 0, "tcp", "", -1 },
		{ "tcp:lo", 0, "tcp", "lo", -1 },
		{ "ib:mlx5_0:1", 0, "ib", "mlx5_0", 1 },
		{ "a_1:eth0.100:65535", 0, "a_1", "eth0.100", 65535 },
		{ "", RAPT_EINVAL, NULL, NULL, 0 },
		{ ":lo", RAPT_EINVAL, NULL, NULL, 0 },
		{ "tcp:", RAPT_EINVAL, NULL, NULL, 0 },
		{ "tcp::1", RAPT_EINVAL, NULL, NULL, 0 },
		{ "tcp:lo:", RAPT_EINVAL, NULL, NULL, 0 },
		{ "tcp:lo:1:2", RAPT_EINVAL, NULL, NULL, 0 },
		{ "tcp:lo:-1", RAPT_EINVAL, NULL, NULL, 0 },
		{ "tcp:lo:4294967296", RAPT_EINVAL, NULL, NULL, 0 },
		{ "TCP", RAPT_EINVAL, NULL, NULL, 0 },
		{ "tcp:l o", RAPT_EINVAL, NULL, NULL, 0 },
		{ "a_very_long_provider_name_of_32_c", RAPT_EINVAL, NULL,
		  NULL, 0 },
	};
	struct rapt_ia_name n;
	char why[256];
	size_t i;
	int ret;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why[0] = '\0';
		memset(&n, 0x5a, sizeof(n));
		ret = rapt__ia_name_parse(cases[i].s, &n, why, sizeof(why));
		if (ret != cases[i].ret)
			fprintf(stderr, "'%s': got %d (%s)\n", cases[i].s, ret,
				why);
		CU_ASSERT_EQUAL(ret, cases[i].ret);
		if (ret) {
			CU_ASSERT(why[0] != '\0');
			continue;
		}
		CU_ASSERT_STRING_EQUAL(n.prov, cases[i].prov);
		CU_ASSERT_STRING_EQUAL(n.dev, cases[i].dev);
		CU_ASSERT_EQUAL(n.has_port, cases[i].port >= 0);
		if (cases[i].port >= 0)
			CU_ASSERT_EQUAL(n.port, (uint32_t)cases[i].port);
	}
}

static void test_filter_syntax(void)
{
	struct rapt_filter f;

	ASSERT_STATUS(rapt__filter_parse(NULL, &f), 0);
	CU_ASSERT(rapt__filter_allows(&f, "any"));
	ASSERT_STATUS(rapt__filter_parse("tcp,,ib", &f), 0);
	CU_ASSERT_EQUAL(f.n, 2);
	CU_ASSERT(rapt__filter_allows(&f, "ib"));
	CU_ASSERT(!rapt__filter_allows(&f, "iwarp"));
	ASSERT_STATUS(rapt__filter_parse("^tcp", &f), 0);
	CU_ASSERT(!rapt__filter_allows(&f, "tcp"));
	CU_ASSERT(rapt__filter_allows(&f, "ib"));
	ASSERT_STATUS(rapt__filter_parse("^", &f), 0);
	CU_ASSERT(rapt__filter_allows(&f, "tcp"));
	ASSERT_STATUS(rapt__filter_parse("tcp,i-b", &f), RAPT_ECONFIG);
	ASSERT_HAS(rapt_last_error(), "'i-b'");
}

static int my_ia_open(void *prov, const char *device, uint32_t port,
		      struct rapt_core_ia *cia, void **pia)
{
	return 0;
}

static int my_pz_create(void *pia, void **ppz)
{
	return RAPT_EIO;
}

static int my_cr_reject(void *ppsp, struct rapt_core_cr *ccr,
			const void *pdata, size_t pdata_len)
{
	return RAPT_EIO;
}

static void test_ops_fill(void)
{
	struct rapt_prov_ops full, prov;
	struct {
		struct rapt_prov_ops ops;
		void (*newer)(void);	/* an op this core does not know */
	} big;
	void *obj = &obj;

	/* No ops: every op is a stub. */
	memset(&prov, 0, sizeof(prov));
	prov.size = sizeof(prov);
	rapt__ops_fill(&full, &prov);
	CU_ASSERT_EQUAL(full.size, sizeof(struct rapt_prov_ops));
	CU_ASSERT_EQUAL(full.ia_open(NULL, "d", 0, NULL, &obj), RAPT_ENOTSUP);
	CU_ASSERT_EQUAL(full.lmr_create(NULL, NULL, NULL, 1, 0, NULL, &obj),
			RAPT_ENOTSUP);
	CU_ASSERT_EQUAL(full.post_send(NULL, NULL, 0, 0, 0, 0), RAPT_ENOTSUP);
	CU_ASSERT_EQUAL(full.cr_reject(NULL, NULL, NULL, 0), RAPT_ENOTSUP);
	CU_ASSERT_EQUAL(full.evd_progress(NULL), RAPT_ENOTSUP);
	CU_ASSERT_PTR_EQUAL(obj, &obj);
	/* Except: PZ and EVD need no provider object. */
	CU_ASSERT_EQUAL(full.pz_create(NULL, &obj), 0);
	CU_ASSERT_PTR_NULL(obj);
	obj = &obj;
	CU_ASSERT_EQUAL(full.evd_create(NULL, NULL, 1, 1, &obj), 0);
	CU_ASSERT_PTR_NULL(obj);
	CU_ASSERT_EQUAL(full.pz_free(NULL), 0);
	CU_ASSERT_EQUAL(full.evd_free(NULL), 0);

	/* Set ops are taken. */
	prov.ia_open = my_ia_open;
	prov.cr_reject = my_cr_reject;
	rapt__ops_fill(&full, &prov);
	CU_ASSERT_PTR_EQUAL(full.ia_open, my_ia_open);
	CU_ASSERT_PTR_EQUAL(full.cr_reject, my_cr_reject);
	CU_ASSERT_EQUAL(full.pz_create(NULL, &obj), 0);

	/* An older, shorter table: what lies past its size is not read. */
	prov.pz_create = my_pz_create;
	prov.size = offsetof(struct rapt_prov_ops, pz_create);
	rapt__ops_fill(&full, &prov);
	CU_ASSERT_PTR_EQUAL(full.ia_open, my_ia_open);
	CU_ASSERT_PTR_NOT_EQUAL(full.pz_create, my_pz_create);
	CU_ASSERT_PTR_NOT_EQUAL(full.cr_reject, my_cr_reject);
	CU_ASSERT_EQUAL(full.size, sizeof(struct rapt_prov_ops));

	/* A newer, longer table: ours are taken, the size is ours. */
	memset(&big, 0, sizeof(big));
	big.ops = prov;
	big.ops.size = sizeof(big);
	rapt__ops_fill(&full, &big.ops);
	CU_ASSERT_PTR_EQUAL(full.pz_create, my_pz_create);
	CU_ASSERT_PTR_EQUAL(full.cr_reject, my_cr_reject);
	CU_ASSERT_EQUAL(full.size, sizeof(struct rapt_prov_ops));
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "ops table: stubs, short and long tables", test_ops_fill },
	{ "rapt.conf then rapt.conf.d/*.conf in order", test_dropins },
	{ "grammar: comments, blanks, all keywords", test_grammar_ok },
	{ "grammar: each bad line names file:line", test_grammar_bad },
	{ "IA name syntax", test_ia_name_syntax },
	{ "RAPT_PROVIDER syntax", test_filter_syntax },
};

static int pre_main(int argc, char **argv)
{
	return 0;
}
#endif /* RAPT_TEST_CONF_UNIT */

int main(int argc, char **argv)
{
	CU_pSuite suite;
	unsigned int failed;
	size_t i;

	if (pre_main(argc, argv))
		return 99;
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 99;
	suite = CU_add_suite("registry", suite_init, suite_clean);
	if (!suite)
		return 99;
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!CU_add_test(suite, tests[i].name, tests[i].fn))
			return 99;
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures() +
		 CU_get_number_of_suites_failed();
	CU_cleanup_registry();
	return cu_exit_status(failed);
}
