/* knobctl play FILE [-w NODESET] [-e NAME=VALUE]... [--check]: load a play
 * (XML, RelaxNG schema ansible-like-plays/play.rng), substitute ${NAME}
 * variables (<var> defaults, -e overrides), check every step -- profiles
 * load, bench and health attributes are options of their command with good
 * values, node sets expand -- and report
 * every problem as file:line: message before anything runs. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <libxml/parser.h>
#include <libxml/relaxng.h>

#include "bench_ctl.h"
#include "nodeset.h"
#include "play.h"
#include "play_vars.h"
#include "profile.h"
#include "sweep.h"
#include "util.h"
#include "xml.h"

#define PLAY_SCHEMA "play.rng"

/* What the loader carries: the file, the variables, the errors. */
struct ploader {
	struct ctl *ctl;
	const char *path;
	struct pvars vars;	/* the -e values and the <var>s */
	struct strvec *errs;
	xmlDocPtr doc;		/* while it is validated */
	struct strvec unplaced;	/* schema errors without a line: element name, message */
};

static void perr(struct ploader *L, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
perr(struct ploader *L, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	play_verr(L->errs, L->path, line, fmt, ap);
	va_end(ap);
}

/* libxml2's parser and RelaxNG errors, with their line (the element's
 * when the error has none, as RelaxNG's attribute errors do). */
static void
xml_err(void *arg, xmlErrorPtr e)
{
	struct ploader *L = arg;
	char buf[512], *msg = xml_err_msg(e, buf, sizeof(buf));
	long line;

	if (msg == NULL || strstr(msg, "failed to validate content") || strstr(msg, "got nothing"))
		return;
	line = xml_err_line(e);
	if (line <= 0 && e->node != NULL)
		line = xml_line((xmlNodePtr)e->node);
	if (line <= 0 && L->doc && e->str1) {
		/* RelaxNG names the element, not which: placed after validation */
		strvec_push(&L->unplaced, e->str1);
		strvec_push(&L->unplaced, msg);
		return;
	}
	perr(L, line > 0 ? (int)line : 0, "%s", msg);
}

/* Place the schema errors libxml2 gave no line (L->unplaced, in the
 * order it gave them: the document's): each at the next element of its
 * name that gives it alone, after the one an earlier identical error took;
 * every element is validated once per message, not the play once per
 * element. */
static void
place_unplaced(struct ploader *L, xmlRelaxNGPtr schema, xmlDocPtr doc)
{
	size_t n = L->unplaced.n / 2;
	xmlNodePtr *at = xcalloc(n + 1, sizeof(*at));

	for (size_t i = 0; i < n; i++) {
		const char *name = L->unplaced.v[2 * i], *msg = L->unplaced.v[2 * i + 1];

		for (size_t j = i; j-- > 0 && at[i] == NULL;)
			if (strcmp(L->unplaced.v[2 * j], name) == 0 &&
			    strcmp(L->unplaced.v[2 * j + 1], msg) == 0)
				at[i] = at[j];
		perr(L, (int)xml_rng_locate(schema, doc, name, msg, &at[i]), "%s", msg);
	}
	free(at);
	strvec_free(&L->unplaced);
}

/* The schema: next to the play, else ansible-like-plays/ (or plays/ when
 * installed) beside a directory of the profile search path.  malloc'd or NULL. */
static char *
find_schema(const char *path)
{
	char dir[PATH_MAX], *s, *cand;
	struct strvec sp = { 0 };
	static const char *const rel[] = { "../ansible-like-plays/", "../plays/" };

	snprintf(dir, sizeof(dir), "%s", path);
	s = strrchr(dir, '/');
	cand = s ? xasprintf("%.*s/" PLAY_SCHEMA, (int)(s - dir), dir) : xstrdup(PLAY_SCHEMA);
	if (access(cand, R_OK) == 0)
		return cand;
	free(cand);
	cand = NULL;
	profile_search_path(&sp);
	for (size_t i = 0; i < sp.n && cand == NULL; i++)
		for (size_t k = 0; k < nitems(rel) && cand == NULL; k++) {
			cand = xasprintf("%s/%s" PLAY_SCHEMA, sp.v[i], rel[k]);
			if (access(cand, R_OK) != 0) {
				free(cand);
				cand = NULL;
			}
		}
	strvec_free(&sp);
	return cand;
}

/* Validate doc against the play schema, its errors into L; 1 when the doc
 * does not follow it, 0 when it does, -1 when the schema did not load. */
static int
validate(struct ploader *L, xmlDocPtr doc)
{
	char *rng = find_schema(L->path);
	xmlRelaxNGParserCtxtPtr pc = rng ? xmlRelaxNGNewParserCtxt(rng) : NULL;
	xmlRelaxNGPtr schema = pc ? xmlRelaxNGParse(pc) : NULL;
	xmlRelaxNGValidCtxtPtr vc = schema ? xmlRelaxNGNewValidCtxt(schema) : NULL;
	int rc = -1;

	if (vc == NULL)
		perr(L, 0, "the play schema %s cannot be loaded", rng ? rng : PLAY_SCHEMA);
	else {
		xmlRelaxNGSetValidStructuredErrors(vc, xml_err, L);
		L->doc = doc;
		rc = xmlRelaxNGValidateDoc(vc, doc) != 0;
		L->doc = NULL;
		xmlRelaxNGFreeValidCtxt(vc);
		place_unplaced(L, schema, doc);
	}
	if (schema)
		xmlRelaxNGFree(schema);
	if (pc)
		xmlRelaxNGFreeParserCtxt(pc);
	free(rng);
	return rc;
}

/* Attribute name of n after substitution, or NULL when absent. */
static char *
attr(struct ploader *L, xmlNodePtr n, const char *name)
{
	char *v = xml_attr(n, name), *s;

	if (v == NULL)
		return NULL;
	s = pvars_subst(&L->vars, v, (int)xml_line(n));
	free(v);
	return s;
}

static char *
attr_or(struct ploader *L, xmlNodePtr n, const char *name, const char *dflt)
{
	char *s = attr(L, n, name);

	return s ? s : xstrdup(dflt);
}

/* Attribute name of n after substitution, "" when absent.  One given
 * whose variables make it empty is an error: absent, it means every node
 * of the play or all at once (what), which an -e NAME= or an unset shell
 * variable must not choose. */
static char *
attr_given(struct ploader *L, xmlNodePtr n, const char *name, const char *what)
{
	char *s = attr(L, n, name), *raw;

	if (s == NULL)
		return xstrdup("");
	if (s[0] == '\0' && (raw = xml_attr(n, name)) != NULL) {
		perr(L, (int)xml_line(n), "%s=\"%s\" is empty: leave %s= out for %s", name,
		    raw, name, what);
		free(raw);
	}
	return s;
}

static int
yes(struct ploader *L, xmlNodePtr n, const char *name)
{
	char *s = attr(L, n, name);
	int y = s && strcmp(s, "yes") == 0;

	free(s);
	return y;
}

long
play_count(const char *s, size_t n)
{
	char *end;
	long v;

	if (s == NULL || *s == '\0')
		return -1;
	v = strtol(s, &end, 10);
	if (end == s || v < 0)
		return -1;
	if (*end == '%' && end[1] == '\0' && v <= 100)
		return n && v ? ((long)n * v + 99) / 100 : 0;
	return *end ? -1 : v;
}

int
play_exceeds(const char *s, size_t nfailed, size_t n)
{
	char *end;
	long v;

	if (s == NULL || *s == '\0')
		return nfailed > 0;
	v = strtol(s, &end, 10);
	if (*end == '%')	/* exact: no rounding of the allowance */
		return (unsigned long long)nfailed * 100 > (unsigned long long)v * n;
	return (long)nfailed > v;
}

/* The option of command ce with long name `name`, or NULL. */
static const struct opt *
cmd_opt(const struct cmd_entry *ce, const char *name)
{
	for (const struct opt *o = ce->opts; o && o->lname; o++)
		if (strcmp(o->lname, name) == 0)
			return o;
	return NULL;
}

/* A command option from an attribute: "--name=value", "--name" for yes. */
static void
cmd_arg(struct ploader *L, struct pstep *st, const struct cmd_entry *ce, const char *name,
    const char *v)
{
	const struct opt *o = cmd_opt(ce, name);

	if (o == NULL) {
		perr(L, st->line, "<%s> has no option '%s' (see knobctl %s --help)", st->kind ==
		    PS_HEALTH ? "health" : "bench", name, ce->name);
		return;
	}
	if (o->arg == OPT_NOARG || (o->arg == OPT_OPTARG && strcmp(v, "yes") == 0)) {
		if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
			perr(L, st->line, "%s=\"%s\": yes or no", name, v);
		else if (strcmp(v, "yes") == 0)
			strvec_push_owned(&st->args, xasprintf("--%s", name));
		return;
	}
	strvec_push_owned(&st->args, xasprintf("--%s=%s", name, v));
}

/* Check the step's arguments with the command's own parser, check(sub,
 * st), on a context over the play's inventory; what it prints on stderr
 * when it fails (< 0) becomes the step's file:line errors. */
static void
args_check(struct ploader *L, struct pstep *st, int (*check)(struct ctl *, struct pstep *))
{
	struct ctl sub = { 0 };
	FILE *saved = stderr, *mem;
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	int rc;

	sub.inv = L->ctl->inv;
	if ((mem = open_memstream(&buf, &len)) == NULL)
		return;
	stderr = mem;
	rc = check(&sub, st);
	stderr = saved;
	fclose(mem);
	for (line = strtok_r(buf, "\n", &save); rc < 0 && line; line = strtok_r(NULL, "\n", &save))
		perr(L, st->line, "%s", strncmp(line, "knobctl ", 8) == 0 ? line + 8 : line);
	if (rc < 0 && len == 0)
		perr(L, st->line, "bad <%s> step", st->kind == PS_HEALTH ? "health" : "bench");
	free(buf);
	opt_free(&sub);
	strvec_free(&sub.w);
	strvec_free(&sub.x);
}

/* The bench parser on a bench step's arguments; its repeat count into st. */
static int
bench_args(struct ctl *sub, struct pstep *st)
{
	struct bench_req rq;
	int rc = bench_parse_argv(sub, (int)st->args.n, st->args.v, &rq);

	st->repeat = rc < 0 || rq.repeat == 0 ? 1 : rq.repeat;
	bench_req_free(&rq);
	return rc;
}

/* knobctl sweep's own checks on a health step's arguments. */
static int
health_args(struct ctl *sub, struct pstep *st)
{
	return sweep_check_argv(sub, (int)st->args.n, st->args.v);
}

/* <at threads="32..1024" size="1g"/> into --at 32..1024:size=1g. */
static void
parse_at_elem(struct ploader *L, struct pstep *st, xmlNodePtr n)
{
	static const char *const keys[] = {
		"bs", "size", "size-total", "files", "files-total", "stripe-count", "stripe-size",
	};
	char *thr = attr_or(L, n, "threads", ""), *spec = xasprintf("--at=%s:", thr);
	int any = 0;

	for (size_t k = 0; k < nitems(keys); k++) {
		char *v = attr(L, n, keys[k]);

		if (v)
			str_appendf(&spec, "%s%s=%s", any++ ? "," : "", keys[k], v);
		free(v);
	}
	if (!any)
		perr(L, (int)xml_line(n), "<at threads=\"%s\"> overrides nothing", thr);
	strvec_push_owned(&st->args, spec);
	free(thr);
}

/* Every attribute but the step's own as an option of command ce. */
static void
attrs_as_options(struct ploader *L, struct pstep *st, xmlNodePtr n, const struct cmd_entry *ce)
{
	for (xmlAttrPtr a = n->properties; a; a = a->next) {
		const char *an = (const char *)a->name;
		char *v;

		if (strcmp(an, "kind") == 0 || strcmp(an, "on-failure") == 0 || strcmp(an, "name") == 0 ||
		    strcmp(an, "nodes") == 0)
			continue;
		v = attr(L, n, an);
		cmd_arg(L, st, ce, an, v ? v : "");
		free(v);
	}
}

static void
parse_bench_step(struct ploader *L, struct pstep *st, xmlNodePtr n)
{
	char *kind = attr_or(L, n, "kind", "");

	strvec_push(&st->args, "bench");
	attrs_as_options(L, st, n, &cmd_bench_entry);
	for (xmlNodePtr c = n->children; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE && strcmp((const char *)c->name, "at") == 0)
			parse_at_elem(L, st, c);
	strvec_push(&st->args, kind);
	free(kind);
	args_check(L, st, bench_args);
}

/* A profile a step names must be found and load now (the loader knob
 * apply uses: schema, values, extends), not fail half-way through the
 * play; its errors follow the step's line. */
static void
check_profile(struct ploader *L, int line, const char *name)
{
	struct strvec errs = { 0 };
	struct profile *p = NULL;
	char *path;

	if (name == NULL || name[0] == '\0')
		return;
	if ((path = profile_find(name)) == NULL)
		perr(L, line, "profile '%s' not found in the profile search path", name);
	else if ((p = profile_load(name, &errs)) == NULL)
		for (size_t i = 0; i < errs.n; i++)
			perr(L, line, "profile '%s': %s", name, errs.v[i]);
	if (errs.n == 0 && path && p == NULL)
		perr(L, line, "profile '%s' does not load", name);
	xmlSetStructuredErrorFunc(L, xml_err);	/* the profile loader resets it */
	profile_free(p);
	strvec_free(&errs);
	free(path);
}

/* A step's node set (attribute an) must expand against the inventory now. */
static void
check_nodes(struct ploader *L, int line, const char *an, const char *expr)
{
	struct strvec names = { 0 };
	char err[512];

	if (expr[0] && nodeset_expand(expr, inventory_group_fn, L->ctl->inv, &names, err,
	    sizeof(err)) < 0)
		perr(L, line, "%s=\"%s\": %s", an, expr, err);
	strvec_free(&names);
}

/* A report step's file must be writable now, not after the benches before
 * it ran for hours: its directory there and writable, the path no
 * directory. */
static void
check_report_file(struct ploader *L, int line, const char *file)
{
	char dir[PATH_MAX];
	struct stat st;

	path_dir(file, dir, sizeof(dir));
	if (file[0] == '\0')
		perr(L, line, "<report file=\"\">: no file");
	else if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		perr(L, line, "<report file=\"%s\">: %s is not a directory", file, dir);
	else if (access(dir, W_OK | X_OK) != 0)
		perr(L, line, "<report file=\"%s\">: cannot write in %s: %s", file, dir,
		    strerror(errno));
	else if (stat(file, &st) == 0 && S_ISDIR(st.st_mode))
		perr(L, line, "<report file=\"%s\">: is a directory", file);
}

static const struct {
	const char *elem;
	int kind;
} step_names[] = {
	{ "apply", PS_APPLY }, { "verify", PS_VERIFY }, { "rollback", PS_ROLLBACK },
	{ "bench", PS_BENCH }, { "compare", PS_COMPARE }, { "canary", PS_CANARY },
	{ "score", PS_SCORE }, { "report", PS_REPORT }, { "health", PS_HEALTH },
};

static void parse_step(struct ploader *L, struct pstep *st, xmlNodePtr n, int kind);

/* The nested <bench> steps of compare / canary.  They run on their
 * step's nodes and fail it: a nodes= or on-failure= of their own would
 * be ignored, so it is an error. */
static void
parse_nested(struct ploader *L, struct pstep *st, xmlNodePtr n)
{
	static const char *const own[] = { "nodes", "on-failure" };

	for (xmlNodePtr c = n->children; c; c = c->next) {
		if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "bench") != 0)
			continue;
		for (size_t k = 0; k < nitems(own); k++)
			if (xmlHasProp(c, (const xmlChar *)own[k]))
				perr(L, (int)xml_line(c), "a <bench> in <%s> takes no %s=: it "
				    "runs on the <%s>'s nodes and fails it (give %s= to the <%s>)",
				    (const char *)n->name, own[k], (const char *)n->name, own[k],
				    (const char *)n->name);
		st->sub = xgrow(st->sub, st->nsub, sizeof(*st->sub));
		parse_step(L, &st->sub[st->nsub++], c, PS_BENCH);
	}
	if (st->nsub == 0)
		perr(L, st->line, "<%s> needs at least one <bench>", st->name);
	for (size_t i = 0; st->kind == PS_CANARY && i < st->nsub; i++)
		if (st->sub[i].repeat < 2)
			perr(L, st->sub[i].line, "a canary's <bench> needs repeat=\"2\" or more: "
			    "with one run a side no point can be judged worse");
}

static void
parse_step(struct ploader *L, struct pstep *st, xmlNodePtr n, int kind)
{
	char *of = attr_or(L, n, "on-failure", "stop");

	memset(st, 0, sizeof(*st));
	st->kind = kind;
	st->line = (int)xml_line(n);
	st->name = attr_or(L, n, "name", (const char *)n->name);
	st->cont = strcmp(of, "continue") == 0;
	free(of);
	st->profile = attr_or(L, n, kind == PS_COMPARE ? "b" : "profile", "");
	st->profile_a = attr_or(L, n, "a", "");
	st->label_a = attr_or(L, n, "label-a", st->profile_a[0] ? st->profile_a : "untuned");
	st->label_b = attr_or(L, n, "label-b", st->profile);
	st->check = yes(L, n, "check");
	st->canary = attr_or(L, n, "canary", "");
	st->file = attr_or(L, n, "file", "report.html");
	st->nodes = attr_given(L, n, "nodes", "every node of the play");
	st->tune_nodes = attr_given(L, n, "tune-nodes", "the step's nodes");
	check_profile(L, st->line, st->profile);
	check_profile(L, st->line, st->profile_a);
	check_nodes(L, st->line, "nodes", st->nodes);
	check_nodes(L, st->line, "tune-nodes", st->tune_nodes);
	if ((kind == PS_APPLY || kind == PS_VERIFY || kind == PS_CANARY || kind == PS_COMPARE) &&
	    !st->profile[0])
		perr(L, st->line, "<%s> needs %s=\"NAME\"", (const char *)n->name,
		    kind == PS_COMPARE ? "b" : "profile");
	if (kind == PS_CANARY && play_count(st->canary, 100) <= 0)
		perr(L, st->line, "canary=\"%s\": a count or a percentage above 0", st->canary);
	if (kind == PS_REPORT)
		check_report_file(L, st->line, st->file);
	if (kind == PS_BENCH)
		parse_bench_step(L, st, n);
	if (kind == PS_HEALTH) {
		strvec_push(&st->args, "sweep");
		attrs_as_options(L, st, n, &cmd_sweep_entry);
		args_check(L, st, health_args);
	}
	if (kind == PS_COMPARE || kind == PS_CANARY)
		parse_nested(L, st, n);
}

/* The play's <var> defaults beside the -e values, then every variable
 * expanded (a <var> that -e gives only when an -e value uses it: its
 * default may name a variable that exists only without that -e); the
 * -e values as expanded into pl (recorded with its runs).  -1 when an -e
 * value did not expand. */
static int
parse_vars(struct ploader *L, struct play *pl, xmlNodePtr root)
{
	for (xmlNodePtr n = root->children; n; n = n->next) {
		char *k, *v;

		if (n->type != XML_ELEMENT_NODE || strcmp((const char *)n->name, "var") != 0)
			continue;
		k = xml_attr(n, "name");
		v = xml_attr(n, "value");
		if (k && v)
			pvars_add_file(&L->vars, k, v, (int)xml_line(n));
		free(k);
		free(v);
	}
	if (pvars_expand_all(&L->vars) < 0)
		return -1;
	pvars_cli_values(&L->vars, &pl->vars);
	return 0;
}

/* A report or a score step (the play's last step) needs a run: a bench,
 * compare or canary step before it, else it can only fail, after every
 * step before it ran. */
static void
check_has_runs(struct ploader *L, const struct play *pl)
{
	const struct pstep *st = &pl->steps[pl->nsteps - 1];

	if (st->kind != PS_REPORT && st->kind != PS_SCORE)
		return;
	for (size_t i = 0; i + 1 < pl->nsteps; i++)
		if (pl->steps[i].kind == PS_BENCH || pl->steps[i].kind == PS_COMPARE ||
		    pl->steps[i].kind == PS_CANARY)
			return;
	perr(L, st->line, "<%s> has no run to use: no bench, compare or canary step comes "
	    "before it", st->kind == PS_REPORT ? "report" : "score");
}

/* The <play> element into pl. */
static void
parse_play(struct ploader *L, struct play *pl, xmlNodePtr root)
{
	if (parse_vars(L, pl, root) < 0)
		return;		/* the steps' errors would follow from the -e */
	pl->name = attr_or(L, root, "name", "");
	pl->nodes = attr_or(L, root, "nodes", "");
	if (L->ctl->w.n == 0 && !L->ctl->all)	/* the play's own targets, not -w's */
		check_nodes(L, (int)xml_line(root), "nodes", pl->nodes);
	pl->serial = attr_given(L, root, "serial", "every node at once");
	pl->max_fail = attr_given(L, root, "max-fail", "no failure allowed");
	pl->keep = yes(L, root, "keep");
	pl->description = xstrdup("");
	if (pl->serial[0] && play_count(pl->serial, 100) <= 0)
		perr(L, (int)xml_line(root), "serial=\"%s\": a count or a percentage above 0",
		    pl->serial);
	if (pl->max_fail[0] && play_count(pl->max_fail, 100) < 0)
		perr(L, (int)xml_line(root), "max-fail=\"%s\": a count or a percentage",
		    pl->max_fail);
	for (xmlNodePtr n = root->children; n; n = n->next) {
		const char *en = (const char *)n->name;

		if (n->type != XML_ELEMENT_NODE)
			continue;
		if (strcmp(en, "description") == 0) {
			xmlChar *t = xmlNodeGetContent(n);

			char *d = xstrdup(t ? (const char *)t : "");

			free(pl->description);
			pl->description = xstrdup(strtrim(d));	/* strtrim may move the start */
			free(d);
			xmlFree(t);
		}
		for (size_t i = 0; i < nitems(step_names); i++)
			if (strcmp(en, step_names[i].elem) == 0) {
				pl->steps = xgrow(pl->steps, pl->nsteps, sizeof(*pl->steps));
				parse_step(L, &pl->steps[pl->nsteps++], n, step_names[i].kind);
				check_has_runs(L, pl);
			}
	}
	if (pl->nsteps == 0)
		perr(L, (int)xml_line(root), "the play has no step");
}

struct play *
play_load(struct ctl *ctl, const char *path, const struct strvec *vars, struct strvec *errs)
{
	struct ploader L = { .ctl = ctl, .path = path, .errs = errs,
		.vars = { .path = path, .errs = errs } };
	struct play *pl = xcalloc(1, sizeof(*pl));
	size_t before = errs->n;
	xmlDocPtr doc;
	int rc;

	pl->path = xstrdup(path);
	for (size_t i = 0; vars && i < vars->n; i++)
		if (pvars_add_cli(&L.vars, vars->v[i]) < 0)
			play_err_push(errs, xasprintf("knobctl play: -e %s: use NAME=VALUE",
			    vars->v[i]));
	if (errs->n > before)
		goto out;	/* not the file's errors that follow from it */
	/* parsed from the bytes the runs record, read once */
	if ((rc = read_file_bounded(path, PLAY_MAX, &pl->text, &pl->len)) < 0) {
		perr(&L, 0, "cannot read: %s", strerror(-rc));
		goto out;
	}
	sha256_hex(pl->text, pl->len, pl->sha256);
	xmlSetStructuredErrorFunc(&L, xml_err);
	/* an element past line 65535 keeps its line (xml_line) */
	doc = xml_read_mem(pl->text, pl->len, path, XML_PARSE_NONET);
	if (doc == NULL) {
		if (errs->n == before)
			perr(&L, 0, "not an XML document");
	} else {
		/* the schema's errors and the loader's own, all of them; a schema
		 * failure whose messages were all filtered still says so */
		size_t mark = errs->n;
		int invalid = validate(&L, doc) > 0;
		xmlNodePtr root = xmlDocGetRootElement(doc);

		if (root && strcmp((const char *)root->name, "play") == 0) {
			parse_play(&L, pl, root);
			pvars_unused(&L.vars, &pl->unused);
		}
		if (invalid && errs->n == mark)
			perr(&L, root ? (int)xml_line(root) : 0, "the play does not follow "
			    "its schema (" PLAY_SCHEMA ")");
		xmlFreeDoc(doc);
	}
	xmlSetStructuredErrorFunc(NULL, NULL);
out:
	pvars_free(&L.vars);
	if (errs->n > before) {
		play_free(pl);
		return NULL;
	}
	return pl;
}

static void
step_free(struct pstep *st)
{
	for (size_t i = 0; i < st->nsub; i++)
		step_free(&st->sub[i]);
	free(st->sub);
	free(st->name);
	free(st->profile);
	free(st->profile_a);
	free(st->label_a);
	free(st->label_b);
	free(st->canary);
	free(st->file);
	free(st->nodes);
	free(st->tune_nodes);
	strvec_free(&st->args);
}

void
play_free(struct play *pl)
{
	if (pl == NULL)
		return;
	for (size_t i = 0; i < pl->nsteps; i++)
		step_free(&pl->steps[i]);
	free(pl->steps);
	free(pl->path);
	free(pl->text);
	strvec_free(&pl->vars);
	strvec_free(&pl->unused);
	free(pl->name);
	free(pl->description);
	free(pl->nodes);
	free(pl->serial);
	free(pl->max_fail);
	free(pl);
}

/* A play by file name, or NAME in the shipped plays beside the schema. */
static char *
play_find(const char *arg)
{
	char *rng, *cand;

	if (strchr(arg, '/') || access(arg, R_OK) == 0)
		return xstrdup(arg);
	if ((rng = find_schema("./x")) == NULL)
		return xstrdup(arg);
	*strrchr(rng, '/') = '\0';
	cand = xasprintf("%s/%s%s", rng, arg, strstr(arg, ".xml") ? "" : ".xml");
	free(rng);
	if (access(cand, R_OK) == 0)
		return cand;
	free(cand);
	return xstrdup(arg);
}

enum { PL_VAR = 'e', PL_CHECK = 256, PL_STOP_WAIT };

static const struct opt play_opts[] = {
	{ PL_VAR, "extra-var", OPT_ARG, "NAME=VALUE", "set a play variable (${NAME}); repeatable, the last wins", 0 },
	{ PL_CHECK, "check", OPT_NOARG, NULL, "print the plan: every apply as --check, no benchmark, no writes", 0 },
	{ PL_STOP_WAIT, "stop-wait", OPT_ARG, "S", "on a stop signal, wait at most S s (default 10) for a bench's nodes to answer its abort before the play's rollback; a node that has not is named, its clean-up unknown", 0 },
	OPT_END
};

/* Twice a size in KiB as "48g" (rounded up to GiB). */
static void
twice_gib(uint64_t kb, char *buf, size_t len)
{
	snprintf(buf, len, "%llug", (unsigned long long)((2 * kb + 1048575) / 1048576));
}

/* From the nodes' facts: ${ram_x2}, twice the largest RAM, and
 * ${cache_x2}, twice the largest cache a node reads through: its GPFS
 * pagepool where it has GPFS mounted (GPFS does not cache data in the
 * page cache), its RAM elsewhere.  Rounded up to GiB, from the nodes that
 * answer ("" when none does; the others into silent).  The file sizes of
 * the shipped sweeps.  And each node's active profile before the play,
 * into before (one per node of nodes, "" when none or no answer). */
static void
cache_vars(struct ctl *ctl, const struct strvec *nodes, char *ram, char *cache, size_t len,
    struct strvec *silent, struct strvec *before)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__FactsRequest req = KNOB__FACTS_REQUEST__INIT;
	struct fanout fo;
	uint64_t kb = 0, ckb = 0;

	ram[0] = cache[0] = '\0';
	for (size_t i = 0; i < nodes->n; i++)
		strvec_push(before, "");
	env.body_case = KNOB__ENVELOPE__BODY_FACTS_REQUEST;
	env.facts_request = &req;
	fanout_init(&fo, ctl, nodes);
	if (fanout_request(&fo, &env) == 0)
		for (size_t i = 0; i < fo.n; i++) {
			Knob__Envelope *r = fo.nodes[i].reply;
			uint64_t c;

			if (r == NULL || r->body_case != KNOB__ENVELOPE__BODY_FACTS) {
				strvec_push(silent, fo.nodes[i].name);
				continue;
			}
			kb = r->facts->mem_total_kb > kb ? r->facts->mem_total_kb : kb;
			c = r->facts->gpfs_pagepool_bytes ? r->facts->gpfs_pagepool_bytes / 1024 :
			    r->facts->mem_total_kb;
			ckb = c > ckb ? c : ckb;
			for (size_t k = 0; k < nodes->n; k++)
				if (strcmp(nodes->v[k], fo.nodes[i].name) == 0) {
					free(before->v[k]);
					before->v[k] = xstrdup(r->facts->active_profile);
				}
		}
	fanout_free(&fo);
	if (kb)
		twice_gib(kb, ram, len);
	if (ckb)
		twice_gib(ckb, cache, len);
}

/* A second load that failed where the first, with stand-ins for ${ram_x2}
 * and ${cache_x2}, loaded: its errors come from attributes that used them
 * (directly or through a <var>).  When they are missing because no node
 * answered facts, the nodes are the cause, not the file: errs says so
 * instead (exit 1).  Else 2: the file's errors with the facts' values. */
static int
facts_missing(struct strvec *errs, const struct strvec *silent, const char *ram,
    const char *cache)
{
	char *folded;

	if (silent->n == 0 || (ram[0] && cache[0]))
		return 2;
	folded = nodeset_fold(silent->v, silent->n);
	strvec_free(errs);
	strvec_push_owned(errs, xasprintf("knobctl play: ${ram_x2} and ${cache_x2} come from the "
	    "nodes' facts, and no node answered: %s (%zu) did not answer", folded, silent->n));
	free(folded);
	return 1;
}

/* The variables of a load into out: ram_x2 and cache_x2 (those not "")
 * first, so that a -e of the same name, later, wins; then user's -e. */
static void
load_vars(struct strvec *out, const char *ram, const char *cache, const struct strvec *user)
{
	strvec_free(out);
	if (ram[0])
		strvec_push_owned(out, xasprintf("ram_x2=%s", ram));
	if (cache[0])
		strvec_push_owned(out, xasprintf("cache_x2=%s", cache));
	for (size_t i = 0; i < user->n; i++)
		strvec_push(out, user->v[i]);
}

/* Warn of each -e the play has no use for (not ${ram_x2} or ${cache_x2},
 * which knobctl gives every play): a misspelt name leaves the play on its
 * default, a benchmark of the wrong directory. */
static void
warn_unused(const struct play *pl)
{
	for (size_t i = 0; i < pl->unused.n; i++) {
		const char *a = pl->unused.v[i];
		size_t len = strcspn(a, "=");

		if (strncmp(a, "ram_x2=", 7) != 0 && strncmp(a, "cache_x2=", 9) != 0)
			fprintf(stderr, "knobctl play: warning: -e %s: the play has no <var "
			    "name=\"%.*s\"> and no ${%.*s}: not used\n", a, (int)len, a, (int)len, a);
	}
}

int
cmd_play(struct ctl *ctl, int argc, char **argv)
{
	struct strvec vars = { 0 }, user = { 0 }, errs = { 0 }, nodes = { 0 }, silent = { 0 };
	struct strvec before = { 0 };
	struct play *pl = NULL;
	char *path = NULL, ram[32], cache[32];
	int ch, check = 0, rc = 2;

	ctl->stop_wait_s = PLAY_STOP_WAIT_S;
	while ((ch = opt_next(ctl, argc, argv)) != -1) {
		if (ch == PL_VAR)
			strvec_push(&user, optarg);
		else if (ch == PL_CHECK)
			check = 1;
		else if (ch == PL_STOP_WAIT) {
			if (opt_parse_uint(optarg, 1, 86400, NULL, &ctl->stop_wait_s) < 0) {
				opt_bad_value(ctl, "--stop-wait (seconds, 1 to 86400)");
				goto out;
			}
		} else
			goto out;
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "knobctl play: one FILE (see knobctl play --help)\n");
		goto out;
	}
	path = play_find(argv[optind]);
	/* a first load, with stand-ins for the facts: the play's nodes, and every
	 * error of the file itself; then again with the facts */
	load_vars(&vars, "1g", "1g", &user);
	if ((pl = play_load(ctl, path, &vars, &errs)) == NULL)
		goto errors;
	if (ctl->w.n == 0 && !ctl->all && pl->nodes[0])
		strvec_push(&ctl->w, pl->nodes);
	if (ctl_targets(ctl, &nodes) < 0)
		goto out;
	cache_vars(ctl, &nodes, ram, cache, sizeof(ram), &silent, &before);
	load_vars(&vars, ram, cache, &user);
	play_free(pl);
	if ((pl = play_load(ctl, path, &vars, &errs)) == NULL) {
		rc = facts_missing(&errs, &silent, ram, cache);
		goto errors;
	}
	warn_unused(pl);
	rc = play_run(ctl, pl, &nodes, &before, check);
	goto out;
errors:
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.v[i]);
out:
	play_free(pl);
	free(path);
	strvec_free(&vars);
	strvec_free(&user);
	strvec_free(&errs);
	strvec_free(&nodes);
	strvec_free(&silent);
	strvec_free(&before);
	return rc;
}

const struct cmd_entry cmd_play_entry = {
	"play", "FILE", "run a play: ordered apply / verify / bench / compare / canary / rollback steps",
	CMD_NODES | CMD_NODES_OPT, play_opts, cmd_play,
	"FILE is a path or the name of a shipped play (ansible-like-plays/).  -w overrides the\n"
	"play's nodes=.  serial=\"4\" or \"25%\" rolls apply/verify/rollback out in batches;\n"
	"max-fail=\"N\" or \"P%\" trips when the failed nodes EXCEED it (reaching it does not;\n"
	"P% is of the play's nodes, not rounded: 10% of 5 nodes trips at the first failure),\n"
	"and then no new batch starts.  Unreachable nodes count as failed.\n"
	"${ram_x2} is twice the largest RAM of the target nodes, ${cache_x2} twice the largest cache\n"
	"they read through (the GPFS pagepool on GPFS nodes, else RAM): file sizes that beat the cache.\n"
	"SIGINT, SIGTERM or SIGHUP stops the play (a bench's phase aborted on its nodes,\n"
	"waiting up to --stop-wait for their answers; a sweep at once), rolls back what it\n"
	"applied (unless keep=\"yes\") and exits 130, 143 or 129.  A second signal stops the\n"
	"waiting: the rollback runs at once.  A third exits at once, naming the nodes that keep\n"
	"the play's tuning (knobctl rollback undoes it).",
};
