/* Sweep files: XML validated against sweep.rng (RelaxNG, libxml2), then
 * checked item by item; every error is "file:line: message".  A node's
 * request is built from <defaults> and then each <group> that contains it,
 * in file order; an item overrides an earlier one with the same key (kind
 * plus its identity: mount path, NIC name, ...).
 *
 * The schema is looked up next to the sweep file, in $KNOB_DATADIR/sweep
 * (installed), then in sweep/ of the source tree above the executable. */
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libxml/parser.h>
#include <libxml/relaxng.h>

#include "bench_ctl.h"
#include "nodeset.h"
#include "profile.h"
#include "normalize.h"
#include "sweep.h"
#include "visible.h"
#include "xml.h"

#define SWEEP_SCHEMA "sweep.rng"

struct lerr {
	const char *file;
	struct strvec *errs;
};

/* Append "file:line: message" to errs, made visible (it may quote the
 * file's text); duplicates dropped. */
static void lerr_add(struct lerr *e, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
lerr_add(struct lerr *e, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	char *raw, *s;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	raw = xasprintf("%s:%d: %s", e->file, line, strtrim(msg));
	s = str_visible_dup(raw, 0);
	free(raw);
	if (strvec_contains(e->errs, s))
		free(s);
	else
		strvec_push_owned(e->errs, s);
}

/* libxml2 structured errors (parser and RelaxNG) into the list. */
static void
on_xml_error(void *arg, xmlErrorPtr x)
{
	struct lerr *e = arg;

	if (x == NULL || x->level == XML_ERR_WARNING)
		return;
	if (x->message && strstr(x->message, "failed to validate content"))
		return;		/* repeats a more precise message */
	lerr_add(e, (int)xml_err_line(x), "%s", x->message ? x->message : "error");
}

/* The schema's path (malloc'd) or NULL. */
static char *
find_schema(const char *sweep_path)
{
	char dir[PATH_MAX], exe[PATH_MAX], *cand;
	ssize_t n;

	snprintf(dir, sizeof(dir), "%s", sweep_path);
	cand = xasprintf("%s/" SWEEP_SCHEMA, dirname(dir));
	if (access(cand, R_OK) == 0)
		return cand;
	free(cand);
	cand = xasprintf("%s/sweep/" SWEEP_SCHEMA, KNOB_DATADIR);
	if (access(cand, R_OK) == 0)
		return cand;
	free(cand);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	for (char *slash; (slash = strrchr(exe, '/')) != NULL && slash != exe;) {
		*slash = '\0';
		cand = xasprintf("%s/sweep/" SWEEP_SCHEMA, exe);
		if (access(cand, R_OK) == 0)
			return cand;
		free(cand);
	}
	return NULL;
}

/* Messages of one validation: line-less ones (attribute errors) are kept
 * aside to be placed. */
struct vctx {
	struct lerr *e;
	struct strvec lineless;
};

/* msg, and for a schema error about an element's attributes, what they
 * are as written: libxml2 names no value ("Invalid attribute total for
 * element memory" for total="24GiB"), and for a required attribute not
 * even which ("Element load failed to validate attributes").  n is the
 * node libxml2 gives (the element, or for some errors its child: the
 * element named in msg is looked for up from n).  Into out. */
static void
with_attrs(xmlNodePtr n, const char *msg, char *out, size_t len)
{
	char attr[64] = "", elem[64] = "";
	size_t k = (size_t)snprintf(out, len, "%s", msg), k0 = k;

	if (sscanf(msg, "Invalid attribute %63s for element %63s", attr, elem) != 2 &&
	    (sscanf(msg, "Element %63s failed to validate attributes", elem) != 1 ||
	    strstr(msg, "failed to validate attributes") == NULL))
		return;
	while (n != NULL && (n->type != XML_ELEMENT_NODE || strcmp((const char *)n->name, elem) != 0))
		n = n->parent;
	for (xmlAttrPtr a = n ? n->properties : NULL; a && k < len; a = a->next) {
		xmlChar *v;

		if (attr[0] && strcmp((const char *)a->name, attr) != 0)
			continue;
		v = xmlNodeListGetString(n->doc, a->children, 1);
		k += (size_t)snprintf(out + k, len - k, "%s%s=\"%s\"", k == k0 ? ": " : " ",
		    (const char *)a->name, v ? (const char *)v : "");
		xmlFree(v);
	}
}

static void
on_rng_error(void *arg, xmlErrorPtr x)
{
	struct vctx *v = arg;
	char buf[512], *msg = xml_err_msg(x, buf, sizeof(buf)), full[1024];

	if (msg == NULL || strstr(msg, "failed to validate content"))
		return;
	with_attrs(x->node, msg, full, sizeof(full));
	if (x->line > 0)
		lerr_add(v->e, (int)xml_err_line(x), "%s", full);
	else
		strvec_push(&v->lineless, msg);
}

/* Place the errors RelaxNG gave without a line ("Element NAME ..."): at
 * every element of that name that gives the error alone (xml_rng_locate
 * from each one found to the next), at line 1 when none does. */
static void
place_lineless(xmlRelaxNGPtr rng, xmlDocPtr doc, struct vctx *v)
{
	for (size_t i = 0; i < v->lineless.n; i++) {
		const char *msg = v->lineless.v[i];
		xmlNodePtr at = NULL;
		char name[64];
		long line;
		int found = 0;

		if (strvec_index(&v->lineless, msg) < (long)i)
			continue;	/* placed already, at every element */
		if (sscanf(msg, "Element %63s", name) == 1)
			while ((line = xml_rng_locate(rng, doc, name, msg, &at)) > 0) {
				char full[1024];

				with_attrs(at, msg, full, sizeof(full));
				lerr_add(v->e, (int)line, "%s", full);
				found = 1;
			}
		if (!found)
			lerr_add(v->e, 1, "%s", msg);
	}
}

/* RelaxNG validation; 0 when valid. */
static int
validate(xmlDocPtr doc, struct lerr *e)
{
	xmlRelaxNGParserCtxtPtr pc = NULL;
	xmlRelaxNGValidCtxtPtr vc = NULL;
	xmlRelaxNGPtr rng = NULL;
	char *schema = find_schema(e->file);
	struct vctx v = { e, { 0 } };
	int rc = -1;

	if (schema == NULL) {
		lerr_add(e, 0, "cannot find the schema %s", SWEEP_SCHEMA);
		return -1;
	}
	pc = xmlRelaxNGNewParserCtxt(schema);
	if (pc == NULL || (rng = xmlRelaxNGParse(pc)) == NULL) {
		lerr_add(e, 0, "cannot load the schema %s", schema);
		goto out;
	}
	vc = xmlRelaxNGNewValidCtxt(rng);
	xmlRelaxNGSetValidStructuredErrors(vc, on_rng_error, &v);
	rc = xmlRelaxNGValidateDoc(vc, doc) == 0 ? 0 : -1;
	place_lineless(rng, doc, &v);
	if (rc < 0 && e->errs->n == 0)
		lerr_add(e, 1, "does not match the sweep schema");
out:
	strvec_free(&v.lineless);
	xmlRelaxNGFreeValidCtxt(vc);
	xmlRelaxNGFree(rng);
	xmlRelaxNGFreeParserCtxt(pc);
	free(schema);
	return rc;
}

/* ------------------------------------------------------------ values */

/* "5", "5s", "500ms" -> seconds.  0 or -1. */
static int
parse_seconds(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return -1;
	if (strcmp(end, "ms") == 0)
		v /= 1000;
	else if (*end != '\0' && strcmp(end, "s") != 0)
		return -1;
	*out = v;
	return 0;
}

/* "10%" or "10" -> 10.  0 or -1. */
static int
parse_percent(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0 || v > 100 || (*end != '\0' && strcmp(end, "%") != 0))
		return -1;
	*out = v;
	return 0;
}

/* A deadline ("5s", "500ms") as whole milliseconds, 1 ms to 600 s: 0
 * would be the agent's default, so a shorter one is refused, not rounded
 * down to it.  0 or -1. */
static int
parse_timeout_ms(const char *s, uint32_t *ms)
{
	double d;

	if (parse_seconds(s, &d) < 0 || d < 0.001 || d > 600)
		return -1;
	*ms = (uint32_t)(d * 1000);
	return 0;
}

/* A whole number from 1 to max ("1500"); the schema checks the digits,
 * this the range (strtoul would wrap or saturate).  0 or -1. */
static int
parse_count(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || *end != '\0' || errno || v < 1 || v > max || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static const char *
item_attr(const struct sweep_item *it, const char *name)
{
	for (size_t i = 0; i < it->na; i++)
		if (strcmp(it->a[i].name, name) == 0)
			return it->a[i].value;
	return NULL;
}

/* ------------------------------------------------------------ items */

/* Where an item's values go, and where its error goes. */
struct ictx {
	Knob__HealthRequest *r;
	struct sweep_limits *lim;
	char *err;
	size_t errlen;
};

/* What an item adds to a request.  0, or -1 with a message in c->err. */
typedef int (*item_fn)(const struct sweep_item *it, struct ictx *c);

#define PUSH(arr, n, x) do {						\
	(arr) = xrealloc((arr), ((n) + 1) * sizeof(*(arr)));		\
	(arr)[(n)++] = (x);						\
} while (0)

#define BADVAL(what) do {						\
	snprintf(c->err, c->errlen, "bad %s '%s'", what, v);		\
	return -1;							\
} while (0)

static Knob__HwExpect *
hw_of(Knob__HealthRequest *r)
{
	if (r->hw == NULL) {
		r->hw = xmalloc(sizeof(*r->hw));
		knob__hw_expect__init(r->hw);
		r->hw->errors = 1;
	}
	return r->hw;
}

static int
it_mount(const struct sweep_item *it, struct ictx *c)
{
	Knob__MountExpect *m = xmalloc(sizeof(*m));
	const char *v;

	knob__mount_expect__init(m);
	PUSH(c->r->mounts, c->r->n_mounts, m);
	m->path = xstrdup(item_attr(it, "path"));
	m->fstype = xstrdup((v = item_attr(it, "type")) ? v : "");
	m->writable = (v = item_attr(it, "writable")) == NULL || strcmp(v, "yes") == 0;
	if ((v = item_attr(it, "options")) != NULL) {
		char *dup = xstrdup(v), *save = NULL;

		for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save))
			PUSH(m->options, m->n_options, xstrdup(t));
		free(dup);
	}
	if (m->path[0] != '/')
		return snprintf(c->err, c->errlen, "mount path must be absolute"), -1;
	if ((v = item_attr(it, "timeout")) != NULL && parse_timeout_ms(v, &m->timeout_ms) < 0)
		BADVAL("timeout (1 ms to 600 s)");
	if ((v = item_attr(it, "min-free")) != NULL && parse_percent(v, &m->min_free_pct) < 0)
		BADVAL("percentage");
	if ((v = item_attr(it, "min-free-inodes")) != NULL &&
	    parse_percent(v, &m->min_free_inodes_pct) < 0)
		BADVAL("percentage");
	return 0;
}

static int
it_nic(const struct sweep_item *it, struct ictx *c)
{
	Knob__NicExpect *x = xmalloc(sizeof(*x));
	unsigned long long n;
	const char *v;

	knob__nic_expect__init(x);
	PUSH(c->r->nics, c->r->n_nics, x);
	x->name = xstrdup(item_attr(it, "name"));
	x->counters = (v = item_attr(it, "counters")) == NULL || strcmp(v, "yes") == 0;
	if ((v = item_attr(it, "mtu")) != NULL) {
		if (parse_count(v, 1u << 20, &n) < 0)
			BADVAL("mtu (1-1048576)");
		x->mtu = (uint32_t)n;
	}
	if ((v = item_attr(it, "speed")) != NULL) {
		if (parse_count(v, 100000000, &n) < 0)
			BADVAL("speed (1-100000000 Mb/s)");
		x->speed_mbps = (int64_t)n;
	}
	return 0;
}

/* A blockdev setting for drift. */
static void
add_setting(Knob__HealthRequest *r, const struct sweep_item *it, const char *attr,
    const char *value)
{
	Knob__Setting *s = xmalloc(sizeof(*s));

	if (r->verify == NULL) {
		r->verify = xmalloc(sizeof(*r->verify));
		knob__verify_request__init(r->verify);
		r->verify->profile = xstrdup("");
	}
	knob__setting__init(s);
	s->driver = xstrdup("blockdev");
	s->key = xstrdup(item_attr(it, "name"));
	s->attr = xstrdup(attr);
	s->value = xstrdup(value);
	s->match = xstrdup("");
	s->origin = xasprintf("%s:%d", it->file, it->line);
	PUSH(r->verify->settings, r->verify->n_settings, s);
}

static int
it_blockdev(const struct sweep_item *it, struct ictx *c)
{
	const char *v;

	PUSH(c->r->blockdevs, c->r->n_blockdevs, xstrdup(item_attr(it, "name")));
	if ((v = item_attr(it, "scheduler")) != NULL)
		add_setting(c->r, it, "scheduler", v);
	if ((v = item_attr(it, "read-ahead-kb")) != NULL)
		add_setting(c->r, it, "read_ahead_kb", v);
	return 0;
}

static int
it_memory(const struct sweep_item *it, struct ictx *c)
{
	Knob__HwExpect *hw = hw_of(c->r);
	const char *v;
	uint64_t b;

	/* 0 is "not checked" to the agent: a total under 1 MiB ("256",
	 * bytes) or a tolerance of 0 would pass unchecked, or at 5% */
	if ((v = item_attr(it, "total")) != NULL) {
		if (bench_parse_size(v, &b) < 0 || b < (1u << 20))
			BADVAL("size (at least 1M; a number without a unit is bytes)");
		hw->mem_total_kb = b / 1024;
	}
	if ((v = item_attr(it, "tolerance")) != NULL &&
	    (parse_percent(v, &hw->mem_tolerance_pct) < 0 || hw->mem_tolerance_pct <= 0))
		BADVAL("tolerance (above 0%, at most 100%)");
	return 0;
}

static int
it_cpu(const struct sweep_item *it, struct ictx *c)
{
	Knob__HwExpect *hw = hw_of(c->r);
	unsigned long long n;
	const char *v;

	hw->cores = hw->threads = 0;
	if ((v = item_attr(it, "cores")) != NULL) {
		if (parse_count(v, 1u << 24, &n) < 0)
			BADVAL("core count");
		hw->cores = (uint32_t)n;
	}
	if ((v = item_attr(it, "threads")) != NULL) {
		if (parse_count(v, 1u << 24, &n) < 0)
			BADVAL("thread count");
		hw->threads = (uint32_t)n;
	}
	return 0;
}

static int
it_load(const struct sweep_item *it, struct ictx *c)
{
	const char *v = item_attr(it, "max");

	/* 0 would be "not checked" to the agent */
	if ((hw_of(c->r)->load_max = strtod(v, NULL)) <= 0)
		BADVAL("max (above 0)");
	return 0;
}

static int
it_errors(const struct sweep_item *it, struct ictx *c)
{
	const char *v = item_attr(it, "hold");
	double d;

	hw_of(c->r)->errors = strcmp(item_attr(it, "check"), "yes") == 0;
	if (v != NULL && (parse_seconds(v, &d) < 0 || d < 1 || d > 30 * 86400.0))
		BADVAL("hold (1 s to 30 days)");
	hw_of(c->r)->errors_hold_s = v ? (uint32_t)d : 0;
	return 0;
}

static int
it_process(const struct sweep_item *it, struct ictx *c)
{
	PUSH(c->r->processes, c->r->n_processes, xstrdup(item_attr(it, "name")));
	return 0;
}

static int
it_module(const struct sweep_item *it, struct ictx *c)
{
	PUSH(c->r->modules, c->r->n_modules, xstrdup(item_attr(it, "name")));
	return 0;
}

static int
it_nfsd(const struct sweep_item *it, struct ictx *c)
{
	const char *v = item_attr(it, "threads");
	unsigned long long n;

	if (parse_count(v, 1u << 20, &n) < 0)
		BADVAL("nfsd thread count");
	c->r->nfsd_threads = (uint32_t)n;
	return 0;
}

static int
it_clock(const struct sweep_item *it, struct ictx *c)
{
	const char *v = item_attr(it, "max-offset");

	if (parse_seconds(v, &c->lim->clock_max_s) < 0)
		BADVAL("offset");
	return 0;
}

/* Seconds attribute name of it as a whole number of seconds (default 1). */
static int
whole_seconds(const struct sweep_item *it, const char *name, uint32_t *out)
{
	const char *v = item_attr(it, name);
	double d = 1;

	if (v != NULL && (parse_seconds(v, &d) < 0 || d < 1 || d > 60))
		return -1;
	*out = (uint32_t)d;
	return 0;
}

static int
it_probe(const struct sweep_item *it, struct ictx *c)
{
	const char *v;

	if (c->r->probe == NULL) {
		c->r->probe = xmalloc(sizeof(*c->r->probe));
		knob__probe_spec__init(c->r->probe);
	} else
		free(c->r->probe->dir);
	c->r->probe->dir = xstrdup(item_attr(it, "dir"));
	if (c->r->probe->dir[0] != '/')
		return snprintf(c->err, c->errlen, "probe dir must be absolute"), -1;
	if (whole_seconds(it, "seq", &c->r->probe->seq_s) < 0 ||
	    whole_seconds(it, "md", &c->r->probe->md_s) < 0)
		return snprintf(c->err, c->errlen, "probe seconds must be 1-60"), -1;
	if ((v = item_attr(it, "block-size")) != NULL &&
	    (bench_parse_size(v, &c->r->probe->block_size) < 0 || c->r->probe->block_size < 4096 ||
	    c->r->probe->block_size > (64u << 20)))
		BADVAL("block size (4K-64M)");
	return 0;
}

static int
it_timeout(const struct sweep_item *it, struct ictx *c)
{
	const char *v = item_attr(it, "check");

	if (parse_timeout_ms(v, &c->r->check_timeout_ms) < 0)
		BADVAL("timeout (1 ms to 600 s)");
	return 0;
}

/* Kinds of items: element, identity attribute (NULL: one per node), adder.
 * <profile> is handled by sweep_request_for (it loads the profile). */
static const struct {
	const char *kind, *id;
	item_fn fn;
} kinds[] = {
	{ "profile", NULL, NULL },
	{ "mount", "path", it_mount },
	{ "nic", "name", it_nic },
	{ "blockdev", "name", it_blockdev },
	{ "memory", NULL, it_memory },
	{ "cpu", NULL, it_cpu },
	{ "load", NULL, it_load },
	{ "errors", NULL, it_errors },
	{ "process", "name", it_process },
	{ "module", "name", it_module },
	{ "nfsd", NULL, it_nfsd },
	{ "clock", NULL, it_clock },
	{ "probe", NULL, it_probe },
	{ "timeout", NULL, it_timeout },
};

static int
kind_index(const char *kind)
{
	for (size_t i = 0; i < nitems(kinds); i++)
		if (strcmp(kinds[i].kind, kind) == 0)
			return (int)i;
	return -1;
}

/* ------------------------------------------------------------ loading */

void
sweep_policy_default(struct sweep_policy *p)
{
	p->slow_mads = 3;
	p->slow_min_gap = 0.2;
	p->drain_after = 1;
	p->resume_after = 1;
}

/* Copy element n into an item of scope sc; a <mount path> is normalised
 * (norm_mount_path, common/normalize.c: lexical, as the agent looks it
 * up), so "/sys/" checks and overrides "/sys". */
static void
read_item(struct sweep_scope *sc, xmlNodePtr n, const char *file)
{
	struct sweep_item *it;
	int k = kind_index((const char *)n->name);

	sc->items = xrealloc(sc->items, (sc->n + 1) * sizeof(*sc->items));
	it = &sc->items[sc->n++];
	memset(it, 0, sizeof(*it));
	it->kind = xstrdup((const char *)n->name);
	it->file = xstrdup(file);
	it->line = (int)xml_line(n);
	for (xmlAttrPtr a = n->properties; a; a = a->next) {
		xmlChar *v = xmlNodeListGetString(n->doc, a->children, 1);

		it->a = xrealloc(it->a, (it->na + 1) * sizeof(*it->a));
		it->a[it->na].name = xstrdup((const char *)a->name);
		it->a[it->na++].value = xstrdup(v ? (const char *)v : "");
		xmlFree(v);
		if (strcmp(it->kind, "mount") == 0 && strcmp(it->a[it->na - 1].name, "path") == 0)
			norm_mount_path(it->a[it->na - 1].value);
	}
	it->key = xasprintf("%s %s", it->kind,
	    k >= 0 && kinds[k].id && item_attr(it, kinds[k].id) ? item_attr(it, kinds[k].id) : "");
}

/* Load a <profile> item's profile into it->prof, once for the whole
 * sweep (not once per node); its errors, then "file:line: <profile>:
 * ...", into e. */
static void
load_profile(struct sweep_item *it, struct lerr *e)
{
	const char *name = item_attr(it, "name");

	it->prof = profile_load(name, e->errs);
	if (it->prof == NULL)
		lerr_add(e, it->line, "<profile>: profile %s does not load", name);
}

/* Check every item's values once (a scratch request); load the profiles. */
static void
check_items(struct sweep_file *sf, struct lerr *e)
{
	for (size_t s = 0; s < sf->n; s++)
		for (size_t i = 0; i < sf->scopes[s].n; i++) {
			struct sweep_item *it = &sf->scopes[s].items[i];
			Knob__HealthRequest r = KNOB__HEALTH_REQUEST__INIT;
			struct sweep_limits lim = { 1 };
			int k = kind_index(it->kind);
			char err[256];
			struct ictx c = { &r, &lim, err, sizeof(err) };

			if (strcmp(it->kind, "profile") == 0)
				load_profile(it, e);
			else if (k >= 0 && kinds[k].fn && kinds[k].fn(it, &c) < 0)
				lerr_add(e, it->line, "<%s>: %s", it->kind, err);
			sweep_request_free(&r);
		}
}

/* A sweep count attribute of n (drain after/resume) into *out. */
static void
read_count(xmlNodePtr n, const char *name, unsigned *out, struct lerr *e)
{
	char *v = xml_attr(n, name);
	unsigned long long c;

	if (v == NULL)
		return;
	if (parse_count(v, 1000000, &c) < 0)
		lerr_add(e, (int)xml_line(n), "bad %s '%s' (1-1000000 sweeps)", name, v);
	else
		*out = (unsigned)c;
	free(v);
}

/* <slow> and <drain>. */
static void
read_policy(struct sweep_file *sf, xmlNodePtr n, struct lerr *e)
{
	char *v;
	double d;

	if ((v = xml_attr(n, "mads")) != NULL) {
		char *end;

		d = strtod(v, &end);
		if (end == v || *end != '\0' || !(d > 0 && d <= 100))
			lerr_add(e, (int)xml_line(n), "bad mads '%s' (a number above 0, "
			    "at most 100)", v);
		else
			sf->pol.slow_mads = d;
		free(v);
	}
	if ((v = xml_attr(n, "min-gap")) != NULL) {
		if (parse_percent(v, &d) < 0)
			lerr_add(e, (int)xml_line(n), "bad min-gap '%s'", v);
		else
			sf->pol.slow_min_gap = d / 100;
		free(v);
	}
	read_count(n, "after", &sf->pol.drain_after, e);
	read_count(n, "resume", &sf->pol.resume_after, e);
}

/* Walk the validated document into sf. */
static void
read_doc(struct sweep_file *sf, xmlNodePtr root, struct lerr *e)
{
	for (xmlNodePtr n = root->children; n; n = n->next) {
		struct sweep_scope *sc;
		int grp;

		if (n->type != XML_ELEMENT_NODE)
			continue;
		if (strcmp((const char *)n->name, "slow") == 0 ||
		    strcmp((const char *)n->name, "drain") == 0) {
			read_policy(sf, n, e);
			continue;
		}
		grp = strcmp((const char *)n->name, "group") == 0;
		sf->scopes = xrealloc(sf->scopes, (sf->n + 1) * sizeof(*sf->scopes));
		sc = &sf->scopes[sf->n++];
		memset(sc, 0, sizeof(*sc));
		sc->line = (int)xml_line(n);
		if (grp) {
			char *v = xml_attr(n, "nodes");

			sc->nodes = v ? v : xstrdup("");
		}
		for (xmlNodePtr c = n->children; c; c = c->next)
			if (c->type == XML_ELEMENT_NODE)
				read_item(sc, c, e->file);
	}
	/* <defaults> applies first wherever it is written */
	for (size_t i = 1; i < sf->n; i++)
		if (sf->scopes[i].nodes == NULL) {
			struct sweep_scope d = sf->scopes[i];

			memmove(&sf->scopes[1], &sf->scopes[0], i * sizeof(d));
			sf->scopes[0] = d;
		}
}

struct sweep_file *
sweep_file_load(const char *path, struct strvec *errs)
{
	struct lerr e = { path, errs };
	struct sweep_file *sf = NULL;
	xmlDocPtr doc;
	int rc;

	xmlSetStructuredErrorFunc(&e, on_xml_error);
	rc = xml_read_path(path, XML_FILE_MAX, XML_PARSE_NONET | XML_PARSE_NOBLANKS, &doc);
	xmlSetStructuredErrorFunc(NULL, NULL);
	if (rc < 0)
		lerr_add(&e, 0, "cannot read: %s", strerror(-rc));
	else if (doc == NULL && errs->n == 0)
		lerr_add(&e, 0, "not an XML document");
	if (doc == NULL)
		return NULL;
	if (validate(doc, &e) == 0) {
		sf = xcalloc(1, sizeof(*sf));
		sf->path = xstrdup(path);
		sweep_policy_default(&sf->pol);
		read_doc(sf, xmlDocGetRootElement(doc), &e);
		check_items(sf, &e);
	}
	xmlFreeDoc(doc);
	if (sf != NULL && errs->n > 0) {
		sweep_file_free(sf);
		sf = NULL;
	}
	return sf;
}

/* A group's node set, expanded once: the names and an open-addressing
 * table of their indexes + 1 (a power of two in size, at most half full),
 * or the expansion error. */
struct scope_set {
	struct strvec names;
	size_t *tab, mask;
	char *err;
};

/* The table slot holding name, or the empty slot where it would go. */
static size_t
set_slot(const struct scope_set *ss, const char *name)
{
	size_t i = (size_t)str_hash(name) & ss->mask;

	while (ss->tab[i] != 0 && strcmp(ss->names.v[ss->tab[i] - 1], name) != 0)
		i = (i + 1) & ss->mask;
	return i;
}

static void
scope_set_free(struct scope_set *ss)
{
	if (ss == NULL)
		return;
	strvec_free(&ss->names);
	free(ss->tab);
	free(ss->err);
	free(ss);
}

/* The group's node set, expanded against the inventory on first use and
 * kept in the scope (freed with the file): a sweep expands each group once,
 * not once per node.  sc->nodes is not NULL. */
static const struct scope_set *
scope_set(struct ctl *ctl, struct sweep_scope *sc)
{
	struct scope_set *ss = sc->set;
	char err[256];
	size_t sz = 4;

	if (ss != NULL)
		return ss;
	ss = sc->set = xcalloc(1, sizeof(*ss));
	if (nodeset_expand(sc->nodes, inventory_group_fn, ctl->inv, &ss->names, err,
	    sizeof(err)) < 0)
		ss->err = xstrdup(err);
	while (sz < 2 * ss->names.n + 2)
		sz *= 2;
	ss->tab = xcalloc(sz, sizeof(*ss->tab));
	ss->mask = sz - 1;
	for (size_t i = 0; ss->err == NULL && i < ss->names.n; i++) {
		size_t slot = set_slot(ss, ss->names.v[i]);

		if (ss->tab[slot] == 0)
			ss->tab[slot] = i + 1;
	}
	return ss;
}

void
sweep_file_free(struct sweep_file *sf)
{
	if (sf == NULL)
		return;
	for (size_t s = 0; s < sf->n; s++) {
		for (size_t i = 0; i < sf->scopes[s].n; i++) {
			struct sweep_item *it = &sf->scopes[s].items[i];

			for (size_t k = 0; k < it->na; k++) {
				free(it->a[k].name);
				free(it->a[k].value);
			}
			free(it->a);
			profile_free(it->prof);
			free(it->kind);
			free(it->key);
			free(it->file);
		}
		free(sf->scopes[s].items);
		free(sf->scopes[s].nodes);
		scope_set_free(sf->scopes[s].set);
	}
	free(sf->scopes);
	free(sf->path);
	free(sf);
}

int
sweep_file_check_nodes(struct ctl *ctl, const struct sweep_file *sf, struct strvec *errs)
{
	size_t n0 = errs->n;

	for (size_t s = 0; s < sf->n; s++) {
		struct sweep_scope *sc = &sf->scopes[s];
		const struct scope_set *ss;

		if (sc->nodes == NULL)
			continue;
		ss = scope_set(ctl, sc);
		if (ss->err != NULL)
			strvec_push_owned(errs, xasprintf("%s:%d: <group nodes=\"%s\">: %s", sf->path,
			    sc->line, sc->nodes, ss->err));
		else if (ss->names.n == 0)
			strvec_push_owned(errs, xasprintf("%s:%d: <group nodes=\"%s\">: names no "
			    "node", sf->path, sc->line, sc->nodes));
	}
	return errs->n > n0 ? -1 : 0;
}

/* ------------------------------------------------------------ per node */

/* 1 when node is in the scope's node set (a hash look-up). */
static int
scope_has(struct ctl *ctl, struct sweep_scope *sc, const char *node)
{
	const struct scope_set *ss;

	if (sc->nodes == NULL)
		return 1;
	ss = scope_set(ctl, sc);
	return ss->err == NULL && ss->tab[set_slot(ss, node)] != 0;
}

/* The profile's settings (loaded with the file) into the request's
 * verify (before blockdev items). */
static int
add_profile(Knob__HealthRequest *r, const struct sweep_item *it, struct strvec *errs)
{
	const struct profile *p = it->prof;
	Knob__VerifyRequest *v;

	if (p == NULL) {
		strvec_push_owned(errs, xasprintf("%s:%d: <profile>: profile %s does not load",
		    it->file, it->line, item_attr(it, "name")));
		return -1;
	}
	v = xmalloc(sizeof(*v));
	knob__verify_request__init(v);
	v->profile = xstrdup(p->name);
	v->settings = settings_build(p);
	v->n_settings = p->n;
	r->verify = v;
	return 0;
}

int
sweep_request_for(struct ctl *ctl, const struct sweep_file *sf, const char *node,
    const char *probe_dir, Knob__HealthRequest *req, struct sweep_limits *lim,
    struct strvec *errs)
{
	const struct sweep_item **sel = NULL;
	size_t nsel = 0;
	int rc = 0;

	knob__health_request__init(req);
	lim->clock_max_s = 1;
	for (size_t s = 0; sf && s < sf->n; s++) {
		if (!scope_has(ctl, &sf->scopes[s], node))
			continue;
		for (size_t i = 0; i < sf->scopes[s].n; i++) {
			const struct sweep_item *it = &sf->scopes[s].items[i];
			size_t k;

			for (k = 0; k < nsel && strcmp(sel[k]->key, it->key) != 0; k++)
				;
			if (k == nsel)
				PUSH(sel, nsel, it);
			else
				sel[k] = it;
		}
	}
	for (size_t i = 0; i < nsel && rc == 0; i++)
		if (strcmp(sel[i]->kind, "profile") == 0)
			rc = add_profile(req, sel[i], errs);
	for (size_t i = 0; i < nsel && rc == 0; i++) {
		int k = kind_index(sel[i]->kind);
		char err[256];
		struct ictx c = { req, lim, err, sizeof(err) };

		if (k >= 0 && kinds[k].fn && kinds[k].fn(sel[i], &c) < 0) {
			strvec_push_owned(errs, xasprintf("%s:%d: %s", sel[i]->file, sel[i]->line, err));
			rc = -1;
		}
	}
	if (rc == 0 && probe_dir != NULL) {
		if (req->probe == NULL) {
			req->probe = xmalloc(sizeof(*req->probe));
			knob__probe_spec__init(req->probe);
			req->probe->seq_s = req->probe->md_s = 1;
		} else
			free(req->probe->dir);
		req->probe->dir = xstrdup(probe_dir);
	}
	free(sel);
	return rc;
}

void
sweep_request_free(Knob__HealthRequest *req)
{
	/* Every field was allocated here: protobuf-c's own free walks them. */
	Knob__HealthRequest *copy = xmalloc(sizeof(*copy));

	*copy = *req;
	knob__health_request__free_unpacked(copy, NULL);
	knob__health_request__init(req);
}
