/* The tuning journal: originals, active profile and the in-progress
 * transaction, as JSON written atomically (see tune.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "json.h"
#include "log.h"
#include "normalize.h"
#include "tune.h"
#include "util.h"

#define JOURNAL_MAX (64u << 20)

void
jentry_clear(struct jentry *e)
{
	free(e->driver);
	free(e->key);
	free(e->attr);
	free(e->match);
	free(e->target);
	free(e->value);
	free(e->was);
	free(e->set);
	free(e->origin);
	free(e->ident);
	memset(e, 0, sizeof(*e));
}

void
journal_free(struct journal *j)
{
	for (size_t i = 0; i < j->norig; i++)
		jentry_clear(&j->orig[i]);
	for (size_t i = 0; i < j->ntxn; i++)
		jentry_clear(&j->txn[i]);
	for (size_t i = 0; i < j->npend; i++)
		jentry_clear(&j->pend[i]);
	for (size_t i = 0; i < j->nset; i++)
		jentry_clear(&j->set[i]);
	free(j->orig);
	free(j->txn);
	free(j->pend);
	free(j->set);
	free(j->sysroot);
	free(j->boot_id);
	memset(j, 0, sizeof(*j));
}

long
journal_find(const struct jentry *v, size_t n, const char *driver, const char *target,
    const char *attr)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].driver, driver) == 0 && strcmp(v[i].target, target) == 0 &&
		    strcmp(v[i].attr, attr ? attr : "") == 0)
			return (long)i;
	return -1;
}

/* Append a deep copy of e. */
void
journal_push(struct jentry **v, size_t *n, const struct jentry *e)
{
	struct jentry *d;

	*v = xgrow(*v, *n, sizeof(**v));
	d = &(*v)[(*n)++];
	d->driver = xstrdup(e->driver);
	d->key = xstrdup(e->key);
	d->attr = xstrdup(e->attr);
	d->match = xstrdup(e->match);
	d->target = xstrdup(e->target);
	d->value = xstrdup(e->value);
	d->was = e->was ? xstrdup(e->was) : NULL;
	d->set = e->set ? xstrdup(e->set) : NULL;
	d->origin = e->origin ? xstrdup(e->origin) : NULL;
	d->ident = e->ident ? xstrdup(e->ident) : NULL;
	d->persistent = e->persistent;
	d->added = e->added;
	d->restoring = e->restoring;
	d->coupled = e->coupled;
	d->layer = e->layer;
}

void
journal_remove(struct jentry *v, size_t *n, size_t k)
{
	if (k >= *n)
		return;
	jentry_clear(&v[k]);
	memmove(&v[k], &v[k + 1], (*n - k - 1) * sizeof(*v));
	(*n)--;
}

void
jentry_setting(const struct jentry *e, Knob__Setting *s)
{
	knob__setting__init(s);
	s->driver = e->driver;
	s->key = e->key;
	s->attr = e->attr;
	s->match = e->match;
	s->value = e->value;
	s->persistent = e->persistent;
	s->origin = (char *)(uintptr_t)(e->origin ? e->origin : "journal");
}

/* Add member k (a string constant, new to o) without copying the key or
 * looking for an old one: journal_save builds every object afresh. */
static void
jput(json_object *o, const char *k, json_object *v)
{
	json_object_object_add_ex(o, k, v, JSON_C_OBJECT_ADD_KEY_IS_NEW |
	    JSON_C_OBJECT_ADD_CONSTANT_KEY);
}

/* The entries as a JSON array; members at their defaults (attr and match
 * "", persistent false) are left out, as journal_load reads them. */
static json_object *
entries_json(const struct jentry *v, size_t n, int with_added)
{
	json_object *arr = json_object_new_array_ext(n > 0 ? (int)n : 1);

	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object();

		jput(o, "driver", json_object_new_string(v[i].driver));
		jput(o, "key", json_object_new_string(v[i].key));
		if (v[i].attr[0] != '\0')
			jput(o, "attr", json_object_new_string(v[i].attr));
		if (v[i].match[0] != '\0')
			jput(o, "match", json_object_new_string(v[i].match));
		jput(o, "target", json_object_new_string(v[i].target));
		jput(o, "value", json_object_new_string(v[i].value));
		if (v[i].persistent)
			jput(o, "persistent", json_object_new_boolean(1));
		if (v[i].was)
			jput(o, "was", json_object_new_string(v[i].was));
		if (v[i].set)
			jput(o, "set", json_object_new_string(v[i].set));
		if (v[i].origin)
			jput(o, "origin", json_object_new_string(v[i].origin));
		if (v[i].ident)
			jput(o, "ident", json_object_new_string(v[i].ident));
		if (with_added && v[i].added)
			jput(o, "added", json_object_new_boolean(1));
		if (v[i].restoring)
			jput(o, "restoring", json_object_new_boolean(1));
		if (v[i].coupled)
			jput(o, "coupled", json_object_new_boolean(1));
		if (v[i].layer > 0)
			jput(o, "layer", json_object_new_int64(v[i].layer));
		json_object_array_add(arr, o);
	}
	return arr;
}

/* What journal_load is reading, for "file:line: message" reports. */
struct jsrc {
	const char *path;
	const char *buf;
	size_t len;
};

/* Line (1-based) of byte offset off of the text. */
static int
line_at(const struct jsrc *src, size_t off)
{
	int line = 1;

	for (size_t i = 0; i < off && i < src->len; i++)
		line += src->buf[i] == '\n';
	return line;
}

/* Line of the first occurrence of "needle" (quoted), 0 when absent. */
static int
line_of(const struct jsrc *src, const char *needle)
{
	char *q = xasprintf("\"%s\"", needle);
	const char *hit = strstr(src->buf, q);

	free(q);
	return hit ? line_at(src, (size_t)(hit - src->buf)) : 0;
}

/* Log "file:line: message" for a journal knob will not start with. */
static int
jbad(const struct jsrc *src, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
jbad(const struct jsrc *src, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_err("%s:%d: %s", src->path, line, msg);
	return -1;
}

/* Parse the array member k of o (need_was: pending marks, which must carry
 * "was"); every entry needs driver, key, target and value strings and a
 * driver this agent knows.  -1 (logged) when malformed. */
static int
entries_parse(const struct jsrc *src, json_object *o, const char *k, const char *label,
    struct jentry **v, size_t *n, int need_was)
{
	json_object *arr = NULL;

	if (!json_object_object_get_ex(o, k, &arr) || arr == NULL)
		return 0;
	if (!json_object_is_type(arr, json_type_array))
		return jbad(src, line_of(src, k), "%s is not an array", label);
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *e_o = json_object_array_get_idx(arr, i);
		char why[512];
		struct jentry e;
		const char *drv = js_string(e_o, "driver"), *key = js_string(e_o, "key"),
		    *target = js_string(e_o, "target"), *value = js_string(e_o, "value");

		if (drv == NULL || key == NULL || target == NULL || value == NULL ||
		    (need_was && js_string(e_o, "was") == NULL))
			return jbad(src, line_of(src, k), "%s[%zu]: needs driver, key, target, "
			    "value%s as strings", label, i, need_was ? " and was" : "");
		if (!driver_known(drv))
			return jbad(src, line_of(src, drv), "%s[%zu]: unknown driver '%s'", label, i,
			    drv);
		if (target_validate(drv, key, js_string(e_o, "attr"), js_string(e_o, "match"),
		    target, why, sizeof(why)) < 0)	/* never write where a key cannot point */
			return jbad(src, line_of(src, target), "%s[%zu]: %s", label, i, why);
		e.was = (char *)(uintptr_t)js_string(e_o, "was");
		e.set = (char *)(uintptr_t)js_string(e_o, "set");
		e.origin = (char *)(uintptr_t)js_string(e_o, "origin");
		e.ident = (char *)(uintptr_t)js_string(e_o, "ident");
		e.driver = (char *)(uintptr_t)drv;
		e.key = (char *)(uintptr_t)key;
		e.target = (char *)(uintptr_t)target;
		e.value = (char *)(uintptr_t)value;
		e.attr = (char *)(uintptr_t)(js_string(e_o, "attr") ? js_string(e_o, "attr") : "");
		e.match = (char *)(uintptr_t)(js_string(e_o, "match") ? js_string(e_o, "match") : "");
		e.persistent = js_bool(e_o, "persistent");
		e.added = js_bool(e_o, "added");
		e.restoring = js_bool(e_o, "restoring");
		e.coupled = js_bool(e_o, "coupled");
		e.layer = js_int(e_o, "layer") > 0 && js_int(e_o, "layer") < INT_MAX ?
		    (unsigned)js_int(e_o, "layer") : 0;
		journal_push(v, n, &e);
	}
	return 0;
}

/* One JSON object and nothing after it but white space; NULL (logged)
 * otherwise. */
static json_object *
parse_whole(const struct jsrc *src)
{
	json_tokener *tok = json_tokener_new();
	json_object *root;
	size_t end;

	if (tok == NULL)
		return NULL;
	root = json_tokener_parse_ex(tok, src->buf, (int)src->len);
	end = json_tokener_get_parse_end(tok);
	if (root == NULL) {
		enum json_tokener_error je = json_tokener_get_error(tok);

		jbad(src, line_at(src, end), "not JSON: %s", je == json_tokener_continue ?
		    "unexpected end of file" : json_tokener_error_desc(je));
		goto out;
	}
	while (end < src->len && strchr(" \t\r\n", src->buf[end]) != NULL)
		end++;
	if (end < src->len) {
		jbad(src, line_at(src, end), "trailing garbage after the journal object");
		goto fail;
	}
	if (!json_object_is_type(root, json_type_object)) {
		jbad(src, 1, "the journal is not a JSON object");
		goto fail;
	}
	goto out;
fail:
	json_object_put(root);
	root = NULL;
out:
	json_tokener_free(tok);
	return root;
}

/* The in-progress transaction, when there is one: an object with an id
 * and an entries array.  0, or -1 (logged). */
static int
txn_parse(const struct jsrc *src, json_object *root, struct journal *j)
{
	json_object *txn = NULL, *arr = NULL;
	const char *id;

	if (!json_object_object_get_ex(root, "txn", &txn))
		return 0;
	if (txn == NULL || !json_object_is_type(txn, json_type_object))
		return jbad(src, line_of(src, "txn"), "\"txn\" must be an object with id and "
		    "entries; recovery cannot tell what was changed");
	if ((id = js_string(txn, "id")) == NULL || !json_object_object_get_ex(txn, "entries", &arr))
		return jbad(src, line_of(src, "txn"), "\"txn\" needs an id and entries");
	j->in_txn = 1;
	snprintf(j->txn_id, sizeof(j->txn_id), "%s", id);
	snprintf(j->txn_profile, sizeof(j->txn_profile), "%s",
	    js_string(txn, "profile") ? js_string(txn, "profile") : "");
	return entries_parse(src, txn, "entries", "txn.entries", &j->txn, &j->ntxn, 0);
}

/* Validate and load; every refusal is logged as "file:line: message". */
int
journal_load(const char *path, struct journal *j)
{
	struct jsrc src = { .path = path };
	json_object *root = NULL, *ver = NULL;
	char *buf = NULL;
	int rc;

	memset(j, 0, sizeof(*j));
	rc = read_file_bounded(path, JOURNAL_MAX, &buf, &src.len);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	src.buf = buf;
	rc = -EBADMSG;
	if ((root = parse_whole(&src)) == NULL)
		goto out;
	if (json_object_object_get_ex(root, "version", &ver) &&
	    (!json_object_is_type(ver, json_type_int) || json_object_get_int(ver) != 1)) {
		jbad(&src, line_of(&src, "version"), "unsupported journal version");
		goto out;
	}
	if (json_object_object_get_ex(root, "active", NULL) && js_string(root, "active") == NULL) {
		jbad(&src, line_of(&src, "active"), "\"active\" is not a string");
		goto out;
	}
	snprintf(j->active, sizeof(j->active), "%s",
	    js_string(root, "active") ? js_string(root, "active") : "");
	if (json_object_object_get_ex(root, "sysroot", NULL) && js_string(root, "sysroot") == NULL) {
		jbad(&src, line_of(&src, "sysroot"), "\"sysroot\" is not a string");
		goto out;
	}
	if (js_string(root, "sysroot") != NULL)
		j->sysroot = xstrdup(js_string(root, "sysroot"));
	if (json_object_object_get_ex(root, "boot_id", NULL) && js_string(root, "boot_id") == NULL) {
		jbad(&src, line_of(&src, "boot_id"), "\"boot_id\" is not a string");
		goto out;
	}
	if (js_string(root, "boot_id") != NULL)
		j->boot_id = xstrdup(js_string(root, "boot_id"));
	if (entries_parse(&src, root, "originals", "originals", &j->orig, &j->norig, 0) < 0 ||
	    entries_parse(&src, root, "settings", "settings", &j->set, &j->nset, 0) < 0 ||
	    entries_parse(&src, root, "pending", "pending", &j->pend, &j->npend, 1) < 0 ||
	    txn_parse(&src, root, j) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0)
		journal_free(j);
	json_object_put(root);
	free(buf);
	return rc;
}

int
journal_save(const char *path, const struct journal *j)
{
	json_object *root;
	const char *txt;
	int rc;

	if (j->active[0] == '\0' && j->norig == 0 && j->npend == 0 && j->nset == 0 &&
	    !j->in_txn) {
		if (unlink(path) < 0)
			return errno == ENOENT ? 0 : -errno;
		return sync_parent_dir(path);	/* a lost unlink would re-apply at boot */
	}
	root = json_object_new_object();
	jput(root, "version", json_object_new_int(1));
	jput(root, "active", json_object_new_string(j->active));
	if (j->sysroot != NULL)
		jput(root, "sysroot", json_object_new_string(j->sysroot));
	if (j->boot_id != NULL)
		jput(root, "boot_id", json_object_new_string(j->boot_id));
	jput(root, "originals", entries_json(j->orig, j->norig, 0));
	if (j->nset > 0)
		jput(root, "settings", entries_json(j->set, j->nset, 0));
	if (j->npend > 0)
		jput(root, "pending", entries_json(j->pend, j->npend, 0));
	if (j->in_txn) {
		json_object *t = json_object_new_object();

		jput(t, "id", json_object_new_string(j->txn_id));
		jput(t, "profile", json_object_new_string(j->txn_profile));
		jput(t, "entries", entries_json(j->txn, j->ntxn, 1));
		jput(root, "txn", t);
	}
	txt = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	rc = write_file_atomic(path, txt, strlen(txt), 0600);
	json_object_put(root);
	return rc;
}

/* Offset of the value of the member "active" in buf (a string, quotes
 * included; its length in *vlen), or -1.  Only the top-level object has
 * that member; journal_clear_active checks the result by parsing it. */
static long
active_span(const char *buf, size_t len, size_t *vlen)
{
	const char *end = buf + len, *p = buf, *q;

	while ((p = memmem(p, (size_t)(end - p), "\"active\"", 8)) != NULL) {
		for (q = p + 8; q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'); q++)
			;
		if (q == end || *q != ':') {
			p += 8;
			continue;
		}
		for (q++; q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'); q++)
			;
		if (q == end || *q != '"')
			return -1;
		for (p = q++; q < end && *q != '"'; q += *q == '\\' ? 2 : 1)
			;
		if (q >= end)
			return -1;
		*vlen = (size_t)(q + 1 - p);
		return p - buf;
	}
	return -1;
}

/* Whether text b is text a with its "active" member "" and nothing else
 * changed (both parsed). */
static int
only_active_cleared(const char *a, const char *b)
{
	json_object *ja = json_tokener_parse(a), *jb = json_tokener_parse(b);
	int ok = ja != NULL && jb != NULL && json_object_is_type(ja, json_type_object) &&
	    js_string(jb, "active") != NULL && strcmp(js_string(jb, "active"), "") == 0;

	if (ok) {
		json_object_object_add(ja, "active", json_object_new_string(""));
		ok = json_object_equal(ja, jb);
	}
	json_object_put(ja);
	json_object_put(jb);
	return ok;
}

/* An overwrite of bytes a file already has allocates nothing on the file
 * systems a state directory lives on (ext4, xfs, tmpfs), so this works on
 * a full disk; the rest of the file, originals included, is untouched, and
 * a write torn by a crash leaves a journal knobd refuses to start with
 * (file:line), never one without its originals.  The reasoning: losing
 * originals is worse than re-applying, so the journal is never cut down
 * in place, only its profile name blanked. */
int
journal_clear_active(const char *path)
{
	char *buf = NULL, *mod = NULL;
	size_t len = 0, vlen = 0;
	struct stat st;
	long off;
	int fd = -1, rc;

	rc = read_file_bounded(path, JOURNAL_MAX, &buf, &len);
	if (rc == -ENOENT)
		return 1;
	if (rc < 0)
		return rc;
	rc = -EBADMSG;
	if ((off = active_span(buf, len, &vlen)) < 0)
		goto out;
	rc = 0;
	if (vlen == 2)
		goto out;	/* "" already */
	mod = xstrdup(buf);
	memset(mod + off, ' ', vlen);
	memcpy(mod + off, "\"\"", 2);
	rc = -EBADMSG;
	if (!only_active_cleared(buf, mod))
		goto out;
	if ((fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)) < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	rc = -ESTALE;	/* not the file read above */
	if ((size_t)st.st_size != len)
		goto out;
	errno = 0;
	if (pwrite(fd, mod + off, vlen, off) != (ssize_t)vlen || fsync(fd) < 0)
		rc = errno ? -errno : -EIO;
	else
		rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(mod);
	free(buf);
	return rc;
}
