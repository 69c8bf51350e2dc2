/* A play's variables (play_vars.c), for the play loader (play.c): the -e
 * NAME=VALUE values and the file's <var>s, each expanded (${NAME}) once,
 * when first used, by the one function that expands attributes.
 *
 * What a ${NAME} names depends on where it is written:
 *   in an -e value      the latest earlier -e of NAME, else the file's <var>
 *                       (so -e p='${p}/x' extends the value p had);
 *   in a <var>          the last -e of NAME, else a <var> above it;
 *   in an attribute     the last -e of NAME, else the file's <var>.
 * A name that is none of these, or a value that comes back to itself, is
 * an error at the -e argument or the file line that holds it. */
#ifndef KNOB_PLAY_VARS_H
#define KNOB_PLAY_VARS_H

#include <stdarg.h>
#include <stddef.h>

#include "util.h"

struct pvar {
	char *name, *raw;
	char *value;		/* expanded; NULL until first used */
	const char *arg;	/* -e: the argument as given (borrowed); NULL: a <var> */
	int line;		/* <var>: its line */
	int busy;		/* being expanded: a use now is a cycle */
	int used;		/* some ${NAME} named it */
};

struct pvars {
	const char *path;	/* the play file, for file:line errors */
	struct strvec *errs;
	struct pvar *v;		/* the -e values (first ncli, in command-line order),
				 * then the <var>s in file order */
	size_t n, ncli;
};

/* Push raw (malloc'd, taken) onto errs made visible (visible.h): the
 * quoted text of a play or of an -e argument is someone else's and must
 * not reach the terminal raw. */
void play_err_push(struct strvec *errs, char *raw);
/* "path:line: message" into errs, made visible. */
void play_verr(struct strvec *errs, const char *path, int line, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
/* Add an -e NAME=VALUE (all of them before the first <var>); -1 without '='. */
int pvars_add_cli(struct pvars *V, const char *arg);
/* Add the file's <var name value> at line; a name given twice is an error. */
void pvars_add_file(struct pvars *V, const char *name, const char *value, int line);
/* Expand every -e value, then every <var> that no -e gives: each error is
 * said once, used or not.  -1 when an -e value did not expand (what uses
 * it would only repeat the error), else 0. */
int pvars_expand_all(struct pvars *V);
/* An attribute's value at line with every ${NAME} replaced (malloc'd). */
char *pvars_subst(struct pvars *V, const char *s, int line);
/* The -e arguments whose NAME no <var> has and no ${NAME} used (a typo:
 * the play runs on its own default), as given, into out. */
void pvars_unused(const struct pvars *V, struct strvec *out);
/* The -e values as expanded, "NAME=VALUE", in command-line order, into out. */
void pvars_cli_values(struct pvars *V, struct strvec *out);
void pvars_free(struct pvars *V);

#endif
