/* A play's variables: -e values and <var>s, expanded once when first used
 * (the rules of what ${NAME} names are in play_vars.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "play_vars.h"
#include "visible.h"

void
play_err_push(struct strvec *errs, char *raw)
{
	strvec_push_owned(errs, str_visible_dup(raw, 0));
	free(raw);
}

void
play_verr(struct strvec *errs, const char *path, int line, const char *fmt, va_list ap)
{
	char *m;

	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	play_err_push(errs, xasprintf("%s:%d: %s", path, line, m ? m : "error"));
	free(m);
}

static void verr(struct pvars *V, size_t from, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* An error of what is expanded at from: an -e value's names its argument,
 * the others their file line. */
static void
verr(struct pvars *V, size_t from, int line, const char *fmt, ...)
{
	va_list ap;
	char *m;

	va_start(ap, fmt);
	if (from < V->ncli) {
		if (vasprintf(&m, fmt, ap) < 0)
			m = NULL;
		play_err_push(V->errs, xasprintf("knobctl play: -e '%s': %s", V->v[from].arg,
		    m ? m : "error"));
		free(m);
	} else
		play_verr(V->errs, V->path, line, fmt, ap);
	va_end(ap);
}

static struct pvar *
var_push(struct pvars *V, const char *name, size_t namelen, const char *raw)
{
	struct pvar *p;

	V->v = xgrow(V->v, V->n, sizeof(*V->v));
	p = &V->v[V->n++];
	memset(p, 0, sizeof(*p));
	p->name = xasprintf("%.*s", (int)namelen, name);
	p->raw = xstrdup(raw);
	return p;
}

int
pvars_add_cli(struct pvars *V, const char *arg)
{
	const char *eq = strchr(arg, '=');

	if (eq == NULL)
		return -1;
	var_push(V, arg, (size_t)(eq - arg), eq + 1)->arg = arg;
	V->ncli = V->n;
	return 0;
}

/* Is variable p the name of len bytes at name? */
static int
named(const struct pvar *p, const char *name, size_t len)
{
	return strlen(p->name) == len && strncmp(p->name, name, len) == 0;
}

/* The variable ${NAME} (len bytes at name) means where from expands (an
 * index into V->v; V->n for an attribute): -1 when none. */
static long
var_find(const struct pvars *V, const char *name, size_t len, size_t from)
{
	size_t cli = from < V->ncli ? from : V->ncli, file = from >= V->ncli ? from : V->n;

	for (size_t i = cli; i-- > 0;)
		if (named(&V->v[i], name, len))
			return (long)i;
	for (size_t i = V->ncli; i < file; i++)
		if (named(&V->v[i], name, len))
			return (long)i;
	return -1;
}

void
pvars_add_file(struct pvars *V, const char *name, const char *value, int line)
{
	for (size_t i = V->ncli; i < V->n; i++)
		if (strcmp(V->v[i].name, name) == 0) {
			verr(V, V->n, line, "<var name=\"%s\"> is given twice", name);
			return;
		}
	var_push(V, name, strlen(name), value)->line = line;
}

static char *expand(struct pvars *V, const char *s, size_t from, int line);

/* Variable i's value, expanded on its first use (by from, at line). */
static const char *
var_value(struct pvars *V, size_t i, size_t from, int line)
{
	struct pvar *p = &V->v[i];

	if (p->value == NULL && !p->busy) {
		p->busy = 1;
		p->value = expand(V, p->raw, i, p->line);
		p->busy = 0;
	}
	if (p->value == NULL) {
		verr(V, from, line, "${%s} comes back to itself (through the variables it uses)",
		    p->name);
		return "";
	}
	return p->value;
}

/* s with every ${NAME} replaced as from sees them; errors at from (line). */
static char *
expand(struct pvars *V, const char *s, size_t from, int line)
{
	char *out = xstrdup("");
	const char *p = s, *q;

	while ((q = strstr(p, "${")) != NULL) {
		const char *end = strchr(q, '}');
		size_t len;
		long i;

		str_appendf(&out, "%.*s", (int)(q - p), p);
		if (end == NULL) {
			verr(V, from, line, "unterminated ${ in '%s'", s);
			return out;
		}
		len = (size_t)(end - q - 2);
		if ((i = var_find(V, q + 2, len, from)) >= 0) {
			V->v[i].used = 1;
			str_appendf(&out, "%s", var_value(V, (size_t)i, from, line));
		}
		else if (from < V->ncli)
			verr(V, from, line, "unknown variable ${%.*s} (neither a <var> of the play "
			    "nor an -e given before this one)", (int)len, q + 2);
		else
			verr(V, from, line, "unknown variable ${%.*s} (define it with <var> or -e)",
			    (int)len, q + 2);
		p = end + 1;
	}
	str_appendf(&out, "%s", p);
	return out;
}

/* Does an -e give the name of variable i? */
static int
cli_gives(const struct pvars *V, size_t i)
{
	for (size_t k = 0; k < V->ncli; k++)
		if (strcmp(V->v[k].name, V->v[i].name) == 0)
			return 1;
	return 0;
}

int
pvars_expand_all(struct pvars *V)
{
	size_t before = V->errs->n;
	int rc = 0;

	for (size_t i = 0; i < V->n; i++) {
		if (i < V->ncli || !cli_gives(V, i))
			var_value(V, i, i, V->v[i].line);
		if (i + 1 == V->ncli && V->errs->n > before)
			rc = -1;
	}
	return rc;
}

char *
pvars_subst(struct pvars *V, const char *s, int line)
{
	return expand(V, s, V->n, line);
}

/* Does a <var> have the name of -e i, or did some ${NAME} use that name? */
static int
name_known(const struct pvars *V, size_t i)
{
	for (size_t k = 0; k < V->n; k++)
		if (strcmp(V->v[k].name, V->v[i].name) == 0 && (k >= V->ncli || V->v[k].used))
			return 1;
	return 0;
}

void
pvars_unused(const struct pvars *V, struct strvec *out)
{
	for (size_t i = 0; i < V->ncli; i++)
		if (!name_known(V, i))
			strvec_push(out, V->v[i].arg);
}

void
pvars_cli_values(struct pvars *V, struct strvec *out)
{
	for (size_t i = 0; i < V->ncli; i++)
		strvec_push_owned(out, xasprintf("%s=%s", V->v[i].name, V->v[i].value ?
		    V->v[i].value : V->v[i].raw));
}

void
pvars_free(struct pvars *V)
{
	for (size_t i = 0; i < V->n; i++) {
		free(V->v[i].name);
		free(V->v[i].raw);
		free(V->v[i].value);
	}
	free(V->v);
	V->v = NULL;
	V->n = V->ncli = 0;
}
