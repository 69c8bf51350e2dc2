/* XML tuning profiles: parse, validate (RelaxNG + per-driver values),
 * resolve inheritance.  See profile.h. */
#include <errno.h>
#include <fnmatch.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <libxml/parser.h>
#include <libxml/relaxng.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "log.h"
#include "normalize.h"
#include "profile.h"
#include "util.h"
#include "xml.h"

#define PROFILE_MAX_DEPTH 16
#define SCHEMA_NAME "profile.rng"

#ifndef KNOB_DATADIR
#define KNOB_DATADIR "/usr/local/share/knob"
#endif

static const char *const default_dirs[] = {
	KNOB_DATADIR "/profiles",
	"/etc/knob/profiles",
};

/* Errors of one file: "file:line: message", and the lines that have one. */
struct perrs {
	struct strvec *out;
	const char *file;
	int lines[256];
	size_t nlines;
	int in_rng;		/* collecting RelaxNG errors into rng/rng_lines */
	struct strvec rng;
	int rng_lines[256];
};

static void
perr_add(struct perrs *e, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
perr_add(struct perrs *e, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	char *msg, *s;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (msg == NULL)
		return;
	s = xasprintf("%s:%d: %s", file ? file : "?", line, strtrim(msg));
	free(msg);
	if (!strvec_contains(e->out, s))
		strvec_push_owned(e->out, s);
	else
		free(s);
	if (e->nlines < nitems(e->lines))
		e->lines[e->nlines++] = line;
}

static int
perr_has_line(const struct perrs *e, int line)
{
	for (size_t i = 0; i < e->nlines; i++)
		if (e->lines[i] == line)
			return 1;
	return 0;
}

/* libxml2 structured error handler (parser and RelaxNG). */
static void
xml_error(void *arg, xmlErrorPtr err)
{
	struct perrs *e = arg;
	char msg[512];

	if (err == NULL || err->level == XML_ERR_WARNING)
		return;
	snprintf(msg, sizeof(msg), "%s", err->message ? err->message : "error");
	strtrim(msg);
	/* "Element profile has extra content: bogus" */
	{
		const char *x = strstr(msg, " has extra content: ");

		if (strncmp(msg, "Element ", 8) == 0 && x != NULL) {
			char tmp[512];

			snprintf(tmp, sizeof(tmp), "unknown element <%s> in <%.*s>",
			    x + strlen(" has extra content: "), (int)(x - msg - 8), msg + 8);
			snprintf(msg, sizeof(msg), "%s", tmp);
		}
	}
	if (e->in_rng) {
		if (e->rng.n < nitems(e->rng_lines)) {
			e->rng_lines[e->rng.n] = (int)xml_err_line(err);
			strvec_push(&e->rng, msg);
		}
		return;
	}
	perr_add(e, err->file ? err->file : e->file, (int)xml_err_line(err), "%s", msg);
}

/* RelaxNG messages that only repeat a more precise one. */
static int
rng_generic(const char *msg)
{
	return strstr(msg, "failed to validate content") != NULL ||
	    strstr(msg, "in interleave") != NULL || strstr(msg, "got nothing") != NULL;
}

/* Keep schema errors for lines the loader's own checks said nothing about. */
static void
merge_rng(struct perrs *e)
{
	for (size_t i = 0; i < e->rng.n; i++)
		if (e->rng_lines[i] > 0 && !perr_has_line(e, e->rng_lines[i]) &&
		    !rng_generic(e->rng.v[i]))
			perr_add(e, e->file, e->rng_lines[i], "%s", e->rng.v[i]);
	strvec_free(&e->rng);
}

/* Directory that holds a "profiles/profile.rng", walking up from the
 * executable (build/knobctl, build/tests/check_x); "" when none. */
static void
source_profiles_dir(char *out, size_t len)
{
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t n;

	out[0] = '\0';
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	for (int up = 0; up < 4; up++) {
		char *slash = strrchr(exe, '/');

		if (slash == NULL || slash == exe)
			return;
		*slash = '\0';
		snprintf(cand, sizeof(cand), "%s/profiles/" SCHEMA_NAME, exe);
		if (access(cand, R_OK) == 0) {
			cand[strlen(cand) - strlen("/" SCHEMA_NAME)] = '\0';
			snprintf(out, len, "%s", cand);
			return;
		}
	}
}

void
profile_search_path(struct strvec *out)
{
	const char *env = getenv("KNOB_PROFILE_PATH");
	char src[PATH_MAX];

	if (env != NULL && *env) {
		char *copy = xstrdup(env), *save = NULL;

		for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save))
			if (*p && !strvec_contains(out, p))
				strvec_push(out, p);
		free(copy);
	}
	source_profiles_dir(src, sizeof(src));
	if (src[0] && !strvec_contains(out, src))
		strvec_push(out, src);
	for (size_t i = 0; i < nitems(default_dirs); i++)
		if (!strvec_contains(out, default_dirs[i]))
			strvec_push(out, default_dirs[i]);
}

static int
is_file_arg(const char *s)
{
	size_t n = strlen(s);

	return strchr(s, '/') != NULL || (n > 4 && strcmp(s + n - 4, ".xml") == 0);
}

/* DIR/NAMEEXT, malloc'd; NAMEEXT alone for the current directory ".", so
 * that a profile's origin reads as the user names the file ("b.xml:3",
 * not "./b.xml:3"). */
static char *
in_dir(const char *dir, const char *name, const char *ext)
{
	return strcmp(dir, ".") == 0 ? xasprintf("%s%s", name, ext) :
	    xasprintf("%s/%s%s", dir, name, ext);
}

/* Look NAME.xml up in dir first (when given), then the search path. */
static char *
find_in(const char *dir, const char *name)
{
	struct strvec sp = { 0 };
	char *path = NULL;

	if (dir != NULL)
		strvec_push(&sp, dir);
	profile_search_path(&sp);
	for (size_t i = 0; i < sp.n && path == NULL; i++) {
		char *cand = in_dir(sp.v[i], name, ".xml");

		if (access(cand, R_OK) == 0)
			path = cand;
		else
			free(cand);
	}
	strvec_free(&sp);
	return path;
}

char *
profile_find(const char *name_or_file)
{
	if (is_file_arg(name_or_file))
		return access(name_or_file, R_OK) == 0 ? xstrdup(name_or_file) : NULL;
	return find_in(NULL, name_or_file);
}

/* Schema next to the profile, else along the search path; malloc'd or NULL. */
static char *
find_schema(const char *profile_path)
{
	char dir[PATH_MAX];
	char *cand;

	snprintf(dir, sizeof(dir), "%s", profile_path);
	cand = xasprintf("%s/" SCHEMA_NAME, dirname(dir));
	if (access(cand, R_OK) == 0)
		return cand;
	free(cand);
	return NULL;
}

/* The description's first sentence on one line (white space folded);
 * malloc'd. */
static char *
first_sentence(const char *d)
{
	char *out = xmalloc(strlen(d) + 1), *o = out;
	int sp = 0;

	for (; *d; d++) {
		if (*d == '.' && (d[1] == '\0' || d[1] == ' ' || d[1] == '\n')) {
			*o++ = '.';
			break;
		}
		if (*d == ' ' || *d == '\n' || *d == '\t') {
			sp = o > out;
			continue;
		}
		if (sp)
			*o++ = ' ';
		sp = 0;
		*o++ = *d;
	}
	*o = '\0';
	return out;
}

/* Settings are found by identity (driver, key, attr) through an
 * open-addressing hash table of index + 1 into the setting array, so that
 * loading n settings stays linear.  Its capacity is fixed when it is made.
 * (glibc's hsearch_r hashes only the first few characters of a key, and
 * profile keys share long prefixes.) */
struct sindex {
	size_t cap;		/* power of two */
	size_t *slot;		/* 0 empty, else index + 1 */
};

#define KEY_ID_MAX 1024	/* a longer key is its own identity (setting_key_id) */

/* FNV-1a over driver, the key's identity (setting_key_id: vm.dirty_ratio
 * is vm/dirty_ratio) and attr with separators. */
static uint64_t
ix_hash(const char *driver, const char *key, const char *attr)
{
	char id[KEY_ID_MAX];
	const char *parts[3] = { driver, setting_key_id(driver, key, id, sizeof(id)),
		attr ? attr : "" };
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < 3; i++) {
		for (const unsigned char *c = (const unsigned char *)parts[i]; *c; c++)
			h = (h ^ *c) * 1099511628211ull;
		h = (h ^ 0x1f) * 1099511628211ull;
	}
	return h;
}

/* Is s the setting (driver, key, attr), its key spelt either way? */
static int
ix_same(const struct psetting *s, const char *driver, const char *key, const char *attr)
{
	char a[KEY_ID_MAX], b[KEY_ID_MAX];

	return s->driver != NULL && strcmp(s->driver, driver) == 0 &&
	    strcmp(s->attr, attr ? attr : "") == 0 &&
	    strcmp(setting_key_id(driver, s->key, a, sizeof(a)),
	    setting_key_id(driver, key, b, sizeof(b))) == 0;
}

/* Slot of that identity in v, or the empty slot where it would go. */
static size_t
ix_probe(const struct sindex *ix, const struct psetting *v, const char *driver,
    const char *key, const char *attr)
{
	size_t i = (size_t)ix_hash(driver, key, attr) & (ix->cap - 1);

	while (ix->slot[i] != 0 && !ix_same(&v[ix->slot[i] - 1], driver, key, attr))
		i = (i + 1) & (ix->cap - 1);
	return i;
}

/* Index of the live setting of that identity in v, or -1. */
static long
ix_find(const struct sindex *ix, const struct psetting *v, const char *driver,
    const char *key, const char *attr)
{
	size_t i = ix_probe(ix, v, driver, key, attr);

	return ix->slot[i] ? (long)ix->slot[i] - 1 : -1;
}

/* Record v[i] (replacing an entry of the same identity). */
static void
ix_add(struct sindex *ix, const struct psetting *v, size_t i)
{
	ix->slot[ix_probe(ix, v, v[i].driver, v[i].key, v[i].attr)] = i + 1;
}

/* Make ix for up to cap entries and add v[0..n). */
static void
ix_init(struct sindex *ix, size_t cap, const struct psetting *v, size_t n)
{
	ix->cap = 16;
	while (ix->cap < 2 * (cap > n ? cap : n))
		ix->cap *= 2;
	ix->slot = xcalloc(ix->cap, sizeof(*ix->slot));
	for (size_t i = 0; i < n; i++)
		ix_add(ix, v, i);
}

static void
ix_free(struct sindex *ix)
{
	free(ix->slot);
	memset(ix, 0, sizeof(*ix));
}

/* A file's own content before inheritance. */
struct pfile {
	char *path;
	char *name;
	char *extends;
	int extends_line;
	char *description;
	char *summary;
	int description_line;	/* 0: none seen */
	struct psetting *s;
	size_t n;
	struct sindex ix;	/* of s; made by parse_file */
	struct psetting *rm;	/* <remove>: driver/key/attr and line */
	size_t nrm;
};

static void
psetting_clear(struct psetting *s)
{
	free(s->driver);
	free(s->key);
	free(s->attr);
	free(s->match);
	free(s->value);
	free(s->comment);
	free(s->cite);
	free(s->file);
	free(s->profile);
	memset(s, 0, sizeof(*s));
}

static void
psetting_copy(struct psetting *d, const struct psetting *s)
{
	d->driver = xstrdup(s->driver);
	d->key = xstrdup(s->key);
	d->attr = xstrdup(s->attr);
	d->match = xstrdup(s->match);
	d->value = xstrdup(s->value);
	d->persistent = s->persistent;
	d->comment = xstrdup(s->comment);
	d->cite = xstrdup(s->cite);
	d->file = xstrdup(s->file);
	d->line = s->line;
	d->profile = xstrdup(s->profile);
}

static void
pfile_free(struct pfile *f)
{
	for (size_t i = 0; i < f->n; i++)
		psetting_clear(&f->s[i]);
	for (size_t i = 0; i < f->nrm; i++)
		psetting_clear(&f->rm[i]);
	free(f->s);
	free(f->rm);
	ix_free(&f->ix);
	free(f->path);
	free(f->name);
	free(f->extends);
	free(f->description);
	free(f->summary);
	memset(f, 0, sizeof(*f));
}

char *
psetting_id(const struct psetting *s)
{
	if (s->attr && *s->attr)
		return xasprintf("%s %s %s", s->driver, s->key, s->attr);
	return xasprintf("%s %s", s->driver, s->key);
}

/* Which attribute holds the key for each driver element. */
struct elem_spec {
	const char *elem;
	const char *key_attr;
	int has_attr;		/* attr="..." */
};

static const struct elem_spec elem_specs[] = {
	{ "sysfs", "key", 0 },
	{ "sysctl", "key", 0 },
	{ "blockdev", "device", 1 },
	{ "lustre", "key", 0 },
	{ "gpfs", "key", 0 },
	{ "nfsd", "key", 0 },
	{ "net", "interface", 1 },
};

static const struct elem_spec *
elem_spec(const char *name)
{
	for (size_t i = 0; i < nitems(elem_specs); i++)
		if (strcmp(elem_specs[i].elem, name) == 0)
			return &elem_specs[i];
	return NULL;
}

/* One driver element -> f->s (values validated). */
static void
parse_setting(struct pfile *f, xmlNodePtr n, const struct elem_spec *es, struct perrs *e)
{
	struct psetting s = { 0 };
	char msg[512], *pers, *rot;
	int line = (int)xml_line(n);
	long dup;

	s.driver = xstrdup(es->elem);
	s.key = xml_attr(n, es->key_attr);
	s.attr = es->has_attr ? xml_attr(n, "attr") : NULL;
	s.value = xml_attr(n, "value");
	s.comment = xml_attr(n, "comment");
	s.cite = xml_attr(n, "cite");
	pers = xml_attr(n, "persistent");
	rot = xml_attr(n, "rotational");
	if (s.key == NULL || s.value == NULL || (es->has_attr && s.attr == NULL)) {
		/* the schema has reported the missing attribute */
		perr_add(e, f->path, line, "<%s> needs %s%s and value", es->elem,
		    es->key_attr, es->has_attr ? ", attr" : "");
		goto fail;
	}
	if (s.attr == NULL)
		s.attr = xstrdup("");
	s.match = rot ? xasprintf("rotational=%s", rot) : xstrdup("");
	if (pers != NULL) {
		if (strcmp(pers, "yes") == 0 || strcmp(pers, "true") == 0)
			s.persistent = 1;
		else if (strcmp(pers, "no") != 0 && strcmp(pers, "false") != 0) {
			perr_add(e, f->path, line, "persistent must be yes or no, not '%s'", pers);
			goto fail;
		}
		if (s.persistent && strcmp(es->elem, "lustre") != 0) {
			perr_add(e, f->path, line, "persistent=\"yes\" is only for lustre");
			goto fail;
		}
	}
	if (setting_validate(s.driver, s.key, s.attr, s.match, s.value, msg, sizeof(msg)) < 0) {
		perr_add(e, f->path, line, "%s", msg);
		goto fail;
	}
	if ((dup = ix_find(&f->ix, f->s, s.driver, s.key, s.attr)) >= 0) {
		const char *was = f->s[dup].key;
		int same = strcmp(was, s.key) == 0;

		perr_add(e, f->path, line, "duplicate setting %s %s%s%s (first at line %d%s%s)",
		    s.driver, s.key, *s.attr ? " " : "", s.attr, f->s[dup].line,
		    same ? "" : " as ", same ? "" : was);
		goto fail;
	}
	s.file = xstrdup(f->path);
	s.line = line;
	s.profile = xstrdup(f->name ? f->name : "");
	f->s = xrealloc(f->s, (f->n + 1) * sizeof(*f->s));
	f->s[f->n] = s;
	ix_add(&f->ix, f->s, f->n);
	f->n++;
	free(pers);
	free(rot);
	return;
fail:
	free(pers);
	free(rot);
	psetting_clear(&s);
}

/* <remove driver="" key="" [attr=""]/> -> f->rm. */
static void
parse_remove(struct pfile *f, xmlNodePtr n, struct perrs *e)
{
	struct psetting r = { 0 };
	int line = (int)xml_line(n);

	r.driver = xml_attr(n, "driver");
	r.key = xml_attr(n, "key");
	r.attr = xml_attr(n, "attr");
	if (r.driver == NULL || r.key == NULL) {
		perr_add(e, f->path, line, "<remove> needs driver and key");
		goto fail;
	}
	if (!driver_known(r.driver)) {
		perr_add(e, f->path, line, "remove: unknown driver '%s'", r.driver);
		goto fail;
	}
	if (r.attr == NULL)
		r.attr = xstrdup("");
	r.file = xstrdup(f->path);
	r.line = line;
	f->rm = xrealloc(f->rm, (f->nrm + 1) * sizeof(*f->rm));
	f->rm[f->nrm++] = r;
	return;
fail:
	psetting_clear(&r);
}

/* RelaxNG validation of doc against the shipped schema; errors into e. */
static void
validate_schema(xmlDocPtr doc, const char *path, struct perrs *e)
{
	xmlRelaxNGParserCtxtPtr pctx = NULL;
	xmlRelaxNGValidCtxtPtr vctx = NULL;
	xmlRelaxNGPtr schema = NULL;
	char *rng = find_schema(path);

	if (rng == NULL) {
		struct strvec sp = { 0 };

		profile_search_path(&sp);
		for (size_t i = 0; i < sp.n && rng == NULL; i++) {
			char *cand = xasprintf("%s/" SCHEMA_NAME, sp.v[i]);

			if (access(cand, R_OK) == 0)
				rng = cand;
			else
				free(cand);
		}
		strvec_free(&sp);
	}
	if (rng == NULL) {
		perr_add(e, path, 0, "schema %s not found in the profile search path", SCHEMA_NAME);
		return;
	}
	pctx = xmlRelaxNGNewParserCtxt(rng);
	if (pctx == NULL || (schema = xmlRelaxNGParse(pctx)) == NULL) {
		perr_add(e, rng, 0, "cannot load the profile schema");
		goto out;
	}
	vctx = xmlRelaxNGNewValidCtxt(schema);
	if (vctx == NULL)
		goto out;
	xmlRelaxNGSetValidStructuredErrors(vctx, xml_error, e);
	e->in_rng = 1;
	(void)xmlRelaxNGValidateDoc(vctx, doc);
	e->in_rng = 0;
out:
	if (vctx)
		xmlRelaxNGFreeValidCtxt(vctx);
	if (schema)
		xmlRelaxNGFree(schema);
	if (pctx)
		xmlRelaxNGFreeParserCtxt(pctx);
	free(rng);
}

/* Parse and validate one file into f.  Returns the number of new errors. */
static size_t
parse_file(const char *path, struct pfile *f, struct strvec *errs)
{
	struct perrs e = { .out = errs, .file = path };
	size_t before = errs->n;
	xmlDocPtr doc = NULL;
	xmlNodePtr root;
	int rc;

	f->path = xstrdup(path);
	xmlSetStructuredErrorFunc(&e, xml_error);
	rc = xml_read_path(path, XML_FILE_MAX, XML_PARSE_NONET | XML_PARSE_NOCDATA, &doc);
	if (rc < 0)
		perr_add(&e, path, 0, "cannot read: %s", strerror(-rc));
	else if (doc == NULL && errs->n == before)
		perr_add(&e, path, 0, "not an XML document");
	if (doc == NULL)
		goto out;
	root = xmlDocGetRootElement(doc);
	validate_schema(doc, path, &e);
	if (root == NULL || strcmp((const char *)root->name, "profile") != 0)
		goto out;
	f->name = xml_attr(root, "name");
	f->extends = xml_attr(root, "extends");
	f->summary = xml_attr(root, "summary");
	f->extends_line = (int)xml_line(root);
	f->description = xstrdup("");
	ix_init(&f->ix, xmlChildElementCount(root), NULL, 0);
	for (xmlNodePtr n = root->children; n; n = n->next) {
		const char *name = (const char *)n->name;
		const struct elem_spec *es;
		int line = (int)xml_line(n);

		if (n->type != XML_ELEMENT_NODE)
			continue;
		if (strcmp(name, "description") == 0 && f->description_line) {
			perr_add(&e, path, line, "second <description> (the first is at line %d)",
			    f->description_line);
		} else if (strcmp(name, "description") == 0) {
			xmlChar *t = xmlNodeGetContent(n);

			f->description_line = line;
			free(f->description);
			f->description = xstrdup(t ? (const char *)t : "");
			strtrim(f->description);
			xmlFree(t);
		} else if (strcmp(name, "remove") == 0)
			parse_remove(f, n, &e);
		else if ((es = elem_spec(name)) != NULL)
			parse_setting(f, n, es, &e);
		else
			perr_add(&e, path, line, "unknown element <%s>", name);
	}
out:
	merge_rng(&e);
	xmlSetStructuredErrorFunc(NULL, NULL);
	if (doc)
		xmlFreeDoc(doc);
	return errs->n - before;
}

/* Apply one file's <remove>s, overrides and additions to the inherited
 * settings in p (errors into errs).  Linear in the number of settings. */
static void
merge_file(const char *path, const struct pfile *f, struct profile *p, struct strvec *errs)
{
	struct sindex ix;
	size_t w = 0;

	ix_init(&ix, p->n + f->n, p->s, p->n);
	for (size_t i = 0; i < f->nrm; i++) {
		const struct psetting *r = &f->rm[i];
		long k = ix_find(&ix, p->s, r->driver, r->key, r->attr);

		if (k < 0) {
			strvec_push_owned(errs, xasprintf("%s:%d: remove: no inherited setting "
			    "%s %s%s%s", path, r->line, r->driver, r->key, *r->attr ? " " : "",
			    r->attr));
			continue;
		}
		psetting_clear(&p->s[k]);	/* driver NULL: dropped below */
	}
	if (f->nrm > 0) {
		for (size_t i = 0; i < p->n; i++)
			if (p->s[i].driver != NULL)
				p->s[w++] = p->s[i];
		p->n = w;
		ix_free(&ix);
		ix_init(&ix, p->n + f->n, p->s, p->n);
	}
	for (size_t i = 0; i < f->n; i++) {
		long k = ix_find(&ix, p->s, f->s[i].driver, f->s[i].key, f->s[i].attr);

		if (k >= 0) {
			psetting_clear(&p->s[k]);
			psetting_copy(&p->s[k], &f->s[i]);
		} else {
			p->s = xrealloc(p->s, (p->n + 1) * sizeof(*p->s));
			psetting_copy(&p->s[p->n], &f->s[i]);
			ix_add(&ix, p->s, p->n);
			p->n++;
		}
	}
	ix_free(&ix);
}

/* Resolve path with its ancestors into p; stack holds the real paths being
 * resolved (cycle detection).  0 or -1 (errors in errs). */
static int
resolve(const char *path, struct profile *p, struct strvec *stack, struct strvec *errs)
{
	struct pfile f = { 0 };
	char real[PATH_MAX], dir[PATH_MAX];
	char *parent = NULL, *pdir;
	size_t before = errs->n;
	int rc = -1;

	if (realpath(path, real) == NULL) {
		strvec_push_owned(errs, xasprintf("%s:0: %s", path, strerror(errno)));
		return -1;
	}
	(void)parse_file(path, &f, errs);
	if (f.extends != NULL) {
		snprintf(dir, sizeof(dir), "%s", path);
		pdir = dirname(dir);	/* "." for a bare file name: not in dir */
		if (is_file_arg(f.extends)) {
			char *cand = f.extends[0] == '/' ? xstrdup(f.extends) :
			    in_dir(pdir, f.extends, "");

			if (access(cand, R_OK) == 0)
				parent = cand;
			else
				free(cand);
		} else
			parent = find_in(pdir, f.extends);
		if (parent == NULL) {
			strvec_push_owned(errs, xasprintf("%s:%d: parent profile '%s' not found",
			    path, f.extends_line, f.extends));
			goto out;
		}
		{
			char preal[PATH_MAX];

			if (realpath(parent, preal) != NULL && (strvec_contains(stack, preal) ||
			    strcmp(preal, real) == 0)) {
				strvec_push_owned(errs, xasprintf("%s:%d: inheritance cycle: "
				    "'%s' extends '%s', which is already being resolved",
				    path, f.extends_line, f.name ? f.name : path, f.extends));
				goto out;
			}
		}
		if (stack->n >= PROFILE_MAX_DEPTH) {
			strvec_push_owned(errs, xasprintf("%s:%d: inheritance deeper than %d levels",
			    path, f.extends_line, PROFILE_MAX_DEPTH));
			goto out;
		}
		strvec_push(stack, real);
		(void)resolve(parent, p, stack, errs);
		free(stack->v[--stack->n]);
		stack->v[stack->n] = NULL;
	}
	if (errs->n > before)
		goto out;
	merge_file(path, &f, p, errs);
	strvec_push(&p->chain, f.name ? f.name : path);
	strvec_push(&p->chain_paths, path);
	free(p->name);
	free(p->path);
	free(p->description);
	free(p->summary);
	p->name = xstrdup(f.name ? f.name : path);
	p->path = xstrdup(path);
	p->description = xstrdup(f.description ? f.description : "");
	p->summary = f.summary ? xstrdup(f.summary) : first_sentence(p->description);
	rc = 0;
out:
	free(parent);
	pfile_free(&f);
	return rc;
}

/* ------------------------------------------------------------ keys that fight */
/* Every write of an interface's link MTU (net IF mtu) sets its IPv6 MTU,
 * net.ipv6.conf.IF.mtu, to the new MTU, up or down (addrconf's
 * NETDEV_CHANGEMTU), and the sysctl refuses a value above the link's.  A
 * profile that sets both through two drivers leaves the outcome to the
 * write order, and the two originals to a rollback that may put them back
 * in the wrong one; the net driver already journals and restores the
 * IPv6 MTU beside the link's.  So such a pair is refused at load, the
 * sysctl's line naming the net key. */

/* The interface (a glob when the key is one) whose IPv6 MTU sysctl key s
 * is (net.ipv6.conf.IF.mtu, either spelling) into buf: 1, else 0. */
static int
ipv6_mtu_if(const struct psetting *s, char *buf, size_t len)
{
	char id[KEY_ID_MAX];

	return strcmp(s->driver, "sysctl") == 0 &&
	    sysctl_ipv6_mtu_if(setting_key_id("sysctl", s->key, id, sizeof(id)), buf, len);
}

/* Can net key glob and the interface (glob) ifn name the same interface?
 * Either matches the other as written. */
static int
if_globs_meet(const char *glob, const char *ifn)
{
	return fnmatch(glob, ifn, 0) == 0 || fnmatch(ifn, glob, 0) == 0;
}

/* One "file:line: message" for each IPv6 MTU sysctl key of p that a net
 * mtu key of p moves (see above). */
static void
refuse_mtu_fights(const struct profile *p, struct strvec *errs)
{
	char ifn[256], *at;

	for (size_t i = 0; i < p->n; i++) {
		const struct psetting *s = &p->s[i];

		if (!ipv6_mtu_if(s, ifn, sizeof(ifn)))
			continue;
		for (size_t k = 0; k < p->n; k++) {
			const struct psetting *m = &p->s[k];
			int same = strcmp(m->file, s->file) == 0;

			if (strcmp(m->driver, "net") != 0 || strcmp(m->attr, "mtu") != 0 ||
			    !if_globs_meet(m->key, ifn))
				continue;
			at = same ? xasprintf("line %d", m->line) : xasprintf("%s:%d", m->file, m->line);
			strvec_push_owned(errs, xasprintf("%s:%d: sysctl %s and net %s mtu (%s) fight: "
			    "every write of %s's link MTU sets its IPv6 MTU to it, so the outcome and "
			    "a rollback's originals would depend on the write order; set the link MTU "
			    "alone (its IPv6 MTU follows it) or the IPv6 MTU alone", s->file, s->line,
			    s->key, m->key, at, m->key));
			free(at);
			break;
		}
	}
}

struct err_key {
	char *s;
	size_t idx;
};

/* Order errors by file (first appearance), then line, then arrival. */
static int
err_cmp(const void *x, const void *y)
{
	const struct err_key *a = x, *b = y;
	size_t fa, fb;
	long la = 0, lb = 0;

	/* "file:line: msg": the file part ends at the ':' before the line */
	fa = strcspn(a->s, ":");
	fb = strcspn(b->s, ":");
	if (fa != fb || strncmp(a->s, b->s, fa) != 0)
		return a->idx < b->idx ? -1 : 1;
	la = strtol(a->s + fa + 1, NULL, 10);
	lb = strtol(b->s + fb + 1, NULL, 10);
	if (la != lb)
		return la < lb ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static void
sort_errors(struct strvec *errs, size_t from)
{
	size_t n = errs->n - from;
	struct err_key *k;

	if (n < 2)
		return;
	k = xcalloc(n, sizeof(*k));
	for (size_t i = 0; i < n; i++) {
		k[i].s = errs->v[from + i];
		k[i].idx = i;
	}
	qsort(k, n, sizeof(*k), err_cmp);
	for (size_t i = 0; i < n; i++)
		errs->v[from + i] = k[i].s;
	free(k);
}

struct profile *
profile_load(const char *name_or_file, struct strvec *errs)
{
	struct profile *p;
	struct strvec stack = { 0 };
	char *path = profile_find(name_or_file);
	size_t before = errs->n;
	int rc;

	if (path == NULL) {
		if (is_file_arg(name_or_file))
			strvec_push_owned(errs, xasprintf("%s:0: %s", name_or_file, strerror(ENOENT)));
		else
			strvec_push_owned(errs, xasprintf("%s:0: no profile of that name in the "
			    "search path (KNOB_PROFILE_PATH, profiles/, " KNOB_DATADIR "/profiles, "
			    "/etc/knob/profiles)", name_or_file));
		return NULL;
	}
	p = xcalloc(1, sizeof(*p));
	if ((rc = resolve(path, p, &stack, errs)) == 0)
		refuse_mtu_fights(p, errs);
	if (rc < 0 || errs->n > before) {
		sort_errors(errs, before);
		profile_free(p);
		p = NULL;
	}
	strvec_free(&stack);
	free(path);
	return p;
}

void
profile_free(struct profile *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n; i++)
		psetting_clear(&p->s[i]);
	free(p->s);
	free(p->name);
	free(p->path);
	free(p->description);
	free(p->summary);
	strvec_free(&p->chain);
	strvec_free(&p->chain_paths);
	free(p);
}
