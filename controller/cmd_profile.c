/* knobctl profile show / check / list, and loading a profile for the
 * commands that send one (apply, verify, plays, sweeps).
 *
 *   profile show NAME|FILE     resolved profile, where each key came from
 *   profile check FILE...      validate; every error as file:line: message
 *   profile list               profiles in the search path
 *
 * Profiles are resolved here (inheritance, validation); agents get a flat
 * list of settings (settings_build). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knobctl.h"
#include "profile.h"
#include "util.h"
#include "visible.h"

/* s made visible (visible.h), owned by keep: a profile is someone's file,
 * its text may hold a CR or a bidi override. */
static const char *
vis(struct strvec *keep, const char *s)
{
	strvec_push_owned(keep, str_visible_dup(s, 0));
	return keep->v[keep->n - 1];
}

/* A loader's errors, one "file:line: message" a line, made visible. */
static void
print_errors(const struct strvec *errs)
{
	for (size_t i = 0; i < errs->n; i++) {
		char *v = str_visible_dup(errs->v[i], 0);

		fprintf(stderr, "%s\n", v);
		free(v);
	}
}

struct profile *
ctl_profile_load(const char *arg)
{
	struct strvec errs = { 0 };
	struct profile *p = profile_load(arg, &errs);

	if (p == NULL)
		print_errors(&errs);
	strvec_free(&errs);
	return p;
}

/* Flat wire settings of a resolved profile; free with settings_free. */
Knob__Setting **
settings_build(const struct profile *p)
{
	Knob__Setting **v = xcalloc(p->n ? p->n : 1, sizeof(*v));

	for (size_t i = 0; i < p->n; i++) {
		const struct psetting *ps = &p->s[i];
		Knob__Setting *s = xcalloc(1, sizeof(*s));

		knob__setting__init(s);
		s->driver = xstrdup(ps->driver);
		s->key = xstrdup(ps->key);
		s->value = xstrdup(ps->value);
		s->attr = xstrdup(ps->attr);
		s->match = xstrdup(ps->match);
		s->persistent = ps->persistent;
		s->origin = xasprintf("%s:%d", ps->file, ps->line);
		v[i] = s;
	}
	return v;
}

void
settings_free(Knob__Setting **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i]->driver);
		free(v[i]->key);
		free(v[i]->value);
		free(v[i]->attr);
		free(v[i]->match);
		free(v[i]->origin);
		free(v[i]);
	}
	free(v);
}

/* "driver key[ attr][ match] = value" of s, its parts made visible. */
static const char *
setting_kv(struct strvec *keep, const struct psetting *s)
{
	char *kv = xasprintf("%s %s%s%s%s%s = %s", s->driver, s->key, *s->attr ? " " : "",
	    s->attr, *s->match ? " " : "", s->match, s->value);
	const char *v = vis(keep, kv);

	free(kv);
	return v;
}

/* profile show --json: the profile's own strings, JSON-escaped (no
 * visible rule: a program reads them back as they are). */
static json_object *
profile_json(const struct profile *p)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array(),
	    *chain = json_object_new_array();

	json_object_object_add(o, "name", json_object_new_string(p->name));
	json_object_object_add(o, "path", json_object_new_string(p->path));
	json_object_object_add(o, "description", json_object_new_string(p->description));
	for (size_t i = 0; i < p->chain.n; i++)
		json_object_array_add(chain, json_object_new_string(p->chain.v[i]));
	json_object_object_add(o, "chain", chain);
	for (size_t i = 0; i < p->n; i++) {
		const struct psetting *ps = &p->s[i];
		json_object *s = json_object_new_object();
		char *origin = xasprintf("%s:%d", ps->file, ps->line);
		const struct { const char *k, *v; } f[] = {
			{ "driver", ps->driver }, { "key", ps->key }, { "attr", ps->attr },
			{ "match", ps->match }, { "value", ps->value }, { "profile", ps->profile },
			{ "origin", origin }, { "cite", ps->cite ? ps->cite : "" },
		};

		for (size_t j = 0; j < nitems(f); j++)
			json_object_object_add(s, f[j].k, json_object_new_string(f[j].v));
		json_object_object_add(s, "persistent", json_object_new_boolean(ps->persistent));
		json_object_array_add(arr, s);
		free(origin);
	}
	json_object_object_add(o, "settings", arr);
	return o;
}

/* The description, indented, a line at a time, each made visible. */
static void
show_description(FILE *f, const char *desc, struct strvec *keep)
{
	char *d = xstrdup(desc), *save = NULL;

	fprintf(f, "description:\n");
	for (char *l = strtok_r(d, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		fprintf(f, "  %s\n", vis(keep, strtrim(l)));
	free(d);
}

/* profile show as text: every string from the files made visible. */
static void
profile_text(FILE *f, const struct profile *p)
{
	struct strvec keep = { 0 };
	size_t w = 0;

	fprintf(f, "profile %s (%s)\n", vis(&keep, p->name), vis(&keep, p->path));
	fprintf(f, "inherits: ");
	for (size_t i = 0; i < p->chain.n; i++)
		fprintf(f, "%s%s", i ? " -> " : "", vis(&keep, p->chain.v[i]));
	fprintf(f, "\n");
	if (*p->description)
		show_description(f, p->description, &keep);
	for (size_t i = 0; i < p->n; i++) {
		size_t l = strlen(setting_kv(&keep, &p->s[i]));

		w = l > w ? l : w;
	}
	fprintf(f, "settings (%zu):\n", p->n);
	for (size_t i = 0; i < p->n; i++) {
		const struct psetting *s = &p->s[i];

		fprintf(f, "  %-*s  from %s (%s:%d)%s\n", (int)w, setting_kv(&keep, s),
		    vis(&keep, s->profile), vis(&keep, s->file), s->line,
		    s->persistent ? " persistent" : "");
		fprintf(f, "      cite: %s\n", s->cite && *s->cite ? vis(&keep, s->cite) : "(none)");
	}
	strvec_free(&keep);
}

static int
profile_show(struct ctl *ctl, const char *arg)
{
	struct profile *p = ctl_profile_load(arg);

	if (p == NULL)
		return 2;
	if (ctl->json)
		output_doc(ctl->out, profile_json(p));
	else
		profile_text(ctl->out, p);
	profile_free(p);
	return 0;
}

/* profile check's --json record of one FILE: ok with the profile's name
 * and settings count, or its errors. */
static json_object *
check_json(const char *arg, const struct profile *p, const struct strvec *errs)
{
	json_object *o = json_object_new_object(), *e;

	json_object_object_add(o, "file", json_object_new_string(arg));
	json_object_object_add(o, "ok", json_object_new_boolean(p != NULL));
	if (p != NULL) {
		json_object_object_add(o, "name", json_object_new_string(p->name));
		json_object_object_add(o, "settings", json_object_new_int64((int64_t)p->n));
		return o;
	}
	e = json_object_new_array();
	for (size_t i = 0; i < errs->n; i++)
		json_object_array_add(e, json_object_new_string(errs->v[i]));
	json_object_object_add(o, "errors", e);
	return o;
}

/* FILE, or the profile NAME the search path finds, loaded; NULL with errs. */
static struct profile *
check_load(const char *arg, struct strvec *errs)
{
	struct profile *p;
	char *path;

	if (strchr(arg, '/') != NULL || strstr(arg, ".xml") != NULL)
		return profile_load(arg, errs);
	path = profile_find(arg);
	p = profile_load(path ? path : arg, errs);
	free(path);
	return p;
}

/* profile check FILE...: each ok or its file:line errors (on stderr, and
 * with --json in one document {"profiles": [...], "exit_status"}); 2 when
 * any does not load. */
static int
profile_check(struct ctl *ctl, int argc, char **argv)
{
	struct strvec keep = { 0 };
	json_object *arr = ctl->json ? json_object_new_array() : NULL, *doc;
	int bad = 0;

	for (int i = 0; i < argc; i++) {
		struct strvec errs = { 0 };
		struct profile *p = check_load(argv[i], &errs);

		if (p == NULL) {
			print_errors(&errs);
			bad++;
		} else if (arr == NULL)
			fprintf(ctl->out, "%s: ok (%s, %zu settings)\n", argv[i],
			    vis(&keep, p->name), p->n);
		if (arr != NULL)
			json_object_array_add(arr, check_json(argv[i], p, &errs));
		profile_free(p);
		strvec_free(&errs);
	}
	strvec_free(&keep);
	if (arr != NULL) {
		doc = json_object_new_object();
		json_object_object_add(doc, "profiles", arr);
		json_object_object_add(doc, "exit_status", json_object_new_int(bad ? 2 : 0));
		output_doc(ctl->out, doc);
	}
	return bad ? 2 : 0;
}

/* One row of profile list. */
struct plist_row {
	char *name, *parent, *summary;
};

static int
plist_cmp(const void *x, const void *y)
{
	return strcmp(((const struct plist_row *)x)->name, ((const struct plist_row *)y)->name);
}

/* The profiles of one search-path directory not seen yet, appended to rows. */
static void
plist_dir(const char *dir, struct strvec *seen, struct plist_row **rows, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		struct strvec errs = { 0 };
		struct profile *p;
		char *name, *path;

		if (l < 5 || strcmp(de->d_name + l - 4, ".xml") != 0)
			continue;
		name = xasprintf("%.*s", (int)(l - 4), de->d_name);
		path = xasprintf("%s/%s", dir, de->d_name);
		if (!strvec_contains(seen, name)) {
			strvec_push(seen, name);
			*rows = xrealloc(*rows, (*n + 1) * sizeof(**rows));
			p = profile_load(path, &errs);
			(*rows)[*n].name = xstrdup(name);
			(*rows)[*n].parent = xstrdup(p && p->chain.n > 1 ?
			    p->chain.v[p->chain.n - 2] : "-");
			(*rows)[*n].summary = p ? xstrdup(p->summary) :
			    xasprintf("(does not load: %s)", errs.n ? errs.v[0] : "?");
			(*n)++;
			profile_free(p);
		}
		strvec_free(&errs);
		free(path);
		free(name);
	}
	closedir(d);
}

/* profile list --json: {"profiles": [{"name", "parent" (null: none),
 * "summary"}]}. */
static json_object *
plist_json(const struct plist_row *rows, size_t n)
{
	json_object *doc = json_object_new_object(), *arr = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "name", json_object_new_string(rows[i].name));
		json_object_object_add(o, "parent", strcmp(rows[i].parent, "-") == 0 ? NULL :
		    json_object_new_string(rows[i].parent));
		json_object_object_add(o, "summary", json_object_new_string(rows[i].summary));
		json_object_array_add(arr, o);
	}
	json_object_object_add(doc, "profiles", arr);
	return doc;
}

/* Name, parent and one-line summary of every profile in the search path,
 * sorted by name (the first directory that has a name wins). */
static int
profile_list(struct ctl *ctl)
{
	struct strvec sp = { 0 }, seen = { 0 }, keep = { 0 };
	struct plist_row *rows = NULL;
	size_t n = 0;

	profile_search_path(&sp);
	for (size_t i = 0; i < sp.n; i++)
		plist_dir(sp.v[i], &seen, &rows, &n);
	if (n > 1)
		qsort(rows, n, sizeof(*rows), plist_cmp);
	if (ctl->json)
		output_doc(ctl->out, plist_json(rows, n));
	else
		fprintf(ctl->out, "%-22s %-18s %s\n", "NAME", "PARENT", "SUMMARY");
	for (size_t i = 0; i < n; i++) {
		if (!ctl->json)
			fprintf(ctl->out, "%-22s %-18s %s\n", vis(&keep, rows[i].name),
			    vis(&keep, rows[i].parent), vis(&keep, rows[i].summary));
		free(rows[i].name);
		free(rows[i].parent);
		free(rows[i].summary);
	}
	free(rows);
	strvec_free(&sp);
	strvec_free(&seen);
	strvec_free(&keep);
	return 0;
}

int
cmd_profile(struct ctl *ctl, int argc, char **argv)
{
	int i = opt_operands(ctl, argc, argv, 1, -1), n = argc - i;

	if (i < 0)
		return 2;
	if (n >= 2 && strcmp(argv[i], "show") == 0)
		return profile_show(ctl, argv[i + 1]);
	if (n >= 2 && strcmp(argv[i], "check") == 0)
		return profile_check(ctl, n - 1, argv + i + 1);
	if (n == 1 && strcmp(argv[i], "list") == 0)
		return profile_list(ctl);
	fprintf(stderr, "usage: knobctl profile show NAME|FILE | profile check FILE... | "
	    "profile list\n");
	return 2;
}

const struct cmd_entry cmd_profile_entry = {
	"profile", "show NAME|FILE | check FILE... | list", "resolve, validate or list tuning profiles",
	CMD_NOINV, NULL, cmd_profile,
	"profile show NAME|FILE   the resolved profile and where each key came from\n"
	"profile check FILE...    validate; every error as file:line: message\n"
	"profile list             the profiles in the search path",
};
