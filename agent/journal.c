/* The tuning journal: originals, active profile and the in-progress
 * transaction, as JSON written atomically (see tune.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "log.h"
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

	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
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
	d->persistent = e->persistent;
	d->added = e->added;
	d->restoring = e->restoring;
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

static json_object *
entries_json(const struct jentry *v, size_t n, int with_added)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "driver", json_object_new_string(v[i].driver));
		json_object_object_add(o, "key", json_object_new_string(v[i].key));
		json_object_object_add(o, "attr", json_object_new_string(v[i].attr));
		json_object_object_add(o, "match", json_object_new_string(v[i].match));
		json_object_object_add(o, "target", json_object_new_string(v[i].target));
		json_object_object_add(o, "value", json_object_new_string(v[i].value));
		json_object_object_add(o, "persistent", json_object_new_boolean(v[i].persistent));
		if (v[i].was)
			json_object_object_add(o, "was", json_object_new_string(v[i].was));
		if (v[i].set)
			json_object_object_add(o, "set", json_object_new_string(v[i].set));
		if (v[i].origin)
			json_object_object_add(o, "origin", json_object_new_string(v[i].origin));
		if (with_added)
			json_object_object_add(o, "added", json_object_new_boolean(v[i].added));
		if (v[i].restoring)
			json_object_object_add(o, "restoring", json_object_new_boolean(1));
		json_object_array_add(arr, o);
	}
	return arr;
}

static const char *
jstr(json_object *o, const char *k)
{
	json_object *v;

	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int
jbool(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) && json_object_get_boolean(v);
}

/* Parse an array of entries (need_was: pending marks, which must carry
 * "was"); -1 when malformed. */
static int
entries_parse(json_object *arr, struct jentry **v, size_t *n, int need_was)
{
	if (arr == NULL)
		return 0;
	if (!json_object_is_type(arr, json_type_array))
		return -1;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *o = json_object_array_get_idx(arr, i);
		struct jentry e;
		const char *drv = jstr(o, "driver"), *key = jstr(o, "key"),
		    *target = jstr(o, "target"), *value = jstr(o, "value");

		if (drv == NULL || key == NULL || target == NULL || value == NULL ||
		    (need_was && jstr(o, "was") == NULL))
			return -1;
		e.was = (char *)(uintptr_t)jstr(o, "was");
		e.set = (char *)(uintptr_t)jstr(o, "set");
		e.origin = (char *)(uintptr_t)jstr(o, "origin");
		e.driver = (char *)(uintptr_t)drv;
		e.key = (char *)(uintptr_t)key;
		e.target = (char *)(uintptr_t)target;
		e.value = (char *)(uintptr_t)value;
		e.attr = (char *)(uintptr_t)(jstr(o, "attr") ? jstr(o, "attr") : "");
		e.match = (char *)(uintptr_t)(jstr(o, "match") ? jstr(o, "match") : "");
		e.persistent = jbool(o, "persistent");
		e.added = jbool(o, "added");
		e.restoring = jbool(o, "restoring");
		journal_push(v, n, &e);
	}
	return 0;
}

int
journal_load(const char *path, struct journal *j)
{
	json_object *root = NULL, *txn, *arr;
	char *buf = NULL;
	size_t len;
	int rc;

	memset(j, 0, sizeof(*j));
	rc = read_file_bounded(path, JOURNAL_MAX, &buf, &len);
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	root = json_tokener_parse(buf);
	if (root == NULL || !json_object_is_type(root, json_type_object)) {
		rc = -EBADMSG;
		goto out;
	}
	snprintf(j->active, sizeof(j->active), "%s", jstr(root, "active") ? jstr(root, "active") : "");
	arr = NULL;
	json_object_object_get_ex(root, "originals", &arr);
	if (entries_parse(arr, &j->orig, &j->norig, 0) < 0) {
		rc = -EBADMSG;
		goto out;
	}
	arr = NULL;
	json_object_object_get_ex(root, "settings", &arr);
	if (entries_parse(arr, &j->set, &j->nset, 0) < 0) {
		rc = -EBADMSG;
		goto out;
	}
	arr = NULL;
	json_object_object_get_ex(root, "pending", &arr);
	if (entries_parse(arr, &j->pend, &j->npend, 1) < 0) {
		rc = -EBADMSG;
		goto out;
	}
	if (json_object_object_get_ex(root, "txn", &txn) && txn != NULL &&
	    json_object_is_type(txn, json_type_object)) {
		j->in_txn = 1;
		snprintf(j->txn_id, sizeof(j->txn_id), "%s", jstr(txn, "id") ? jstr(txn, "id") : "");
		snprintf(j->txn_profile, sizeof(j->txn_profile), "%s",
		    jstr(txn, "profile") ? jstr(txn, "profile") : "");
		arr = NULL;
		json_object_object_get_ex(txn, "entries", &arr);
		if (entries_parse(arr, &j->txn, &j->ntxn, 0) < 0) {
			rc = -EBADMSG;
			goto out;
		}
	}
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
		if (unlink(path) < 0 && errno != ENOENT)
			return -errno;
		return 0;
	}
	root = json_object_new_object();
	json_object_object_add(root, "version", json_object_new_int(1));
	json_object_object_add(root, "active", json_object_new_string(j->active));
	json_object_object_add(root, "originals", entries_json(j->orig, j->norig, 0));
	if (j->nset > 0)
		json_object_object_add(root, "settings", entries_json(j->set, j->nset, 0));
	if (j->npend > 0)
		json_object_object_add(root, "pending", entries_json(j->pend, j->npend, 0));
	if (j->in_txn) {
		json_object *t = json_object_new_object();

		json_object_object_add(t, "id", json_object_new_string(j->txn_id));
		json_object_object_add(t, "profile", json_object_new_string(j->txn_profile));
		json_object_object_add(t, "entries", entries_json(j->txn, j->ntxn, 1));
		json_object_object_add(root, "txn", t);
	}
	txt = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY);
	rc = write_file_atomic(path, txt, strlen(txt), 0600);
	json_object_put(root);
	return rc;
}
