/* ClusterShell-style node sets.
 *
 * Expansion grammar (left to right, no precedence, as in ClusterShell):
 *   expr    := operand { op operand }
 *   op      := ',' (union) | '!' (difference) | '&' (intersection) |
 *              '^' (symmetric difference) | white space (union)
 *   operand := pattern | '@' pattern            (the latter names groups)
 *   pattern := { literal | '[' ranges ']' }     (several brackets: product)
 *   ranges  := range { ',' range }
 *   range   := N | N-M | N-M/STEP               (decimal, zero padding kept)
 * Padding of a range comes from its first number ("001-016" -> width 3).
 * The product of several brackets varies the rightmost one fastest.
 *
 * Folding groups names by their pattern (literal parts plus numeric fields),
 * then folds one numeric field at a time: names equal in every other field
 * merge their values into one range set.  Each dimension order is tried
 * (all of them up to three fields) and the shortest result kept.  Each step
 * is a sort, so folding is O(n log n). */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nodeset.h"
#include "util.h"
#include "visible.h"

#define NS_MAX_NAMES	(1u << 20)	/* cap on the names one expansion yields */
#define NS_MAX_DEPTH	32		/* @group nesting */
#define NS_MAX_DIGITS	18		/* a numeric field fits in uint64_t */
#define NS_MAX_BRACKETS	16		/* bracket groups in one pattern */

/* ------------------------------------------------------------------ set */

/* Ordered set of owned strings: insertion order in v (NULL marks a removed
 * entry), open-addressing hash table of indexes + 1 in tab. */
struct nsset {
	char **v;
	size_t n, cap, live;
	size_t *tab;
	size_t tabsz;		/* power of two, > 2 * n */
};

/* Free every string and the table; s is reusable (zeroed). */
static void
set_free(struct nsset *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	free(s->tab);
	memset(s, 0, sizeof(*s));
}

/* Table slot holding a live s, or the empty slot where it would go. */
static size_t
set_slot(const struct nsset *s, const char *str, int *found)
{
	size_t mask = s->tabsz - 1, i = (size_t)str_hash(str) & mask;

	*found = 0;
	for (;; i = (i + 1) & mask) {
		size_t e = s->tab[i];
		if (e == 0)
			return i;
		if (s->v[e - 1] != NULL && strcmp(s->v[e - 1], str) == 0) {
			*found = 1;
			return i;
		}
	}
}

/* Rebuild the table for at least want entries. */
static void
set_rehash(struct nsset *s, size_t want)
{
	size_t sz = 64;

	while (sz < want * 2 + 2)
		sz *= 2;
	free(s->tab);
	s->tab = xcalloc(sz, sizeof(*s->tab));
	s->tabsz = sz;
	for (size_t i = 0; i < s->n; i++) {
		int found;
		size_t slot;

		if (s->v[i] == NULL)
			continue;
		slot = set_slot(s, s->v[i], &found);
		s->tab[slot] = i + 1;
	}
}

/* 1 if str is in s (live). */
static int
set_has(const struct nsset *s, const char *str)
{
	int found = 0;

	if (s->tabsz == 0)
		return 0;
	set_slot(s, str, &found);
	return found;
}

/* Add str (copied, or taken when owned) unless present; 1 if added. */
static int
set_add(struct nsset *s, char *str, int owned)
{
	size_t slot;
	int found;

	if (s->tabsz == 0 || (s->n + 1) * 2 + 2 > s->tabsz)
		set_rehash(s, s->n + 1 > 32 ? (s->n + 1) * 2 : 32);
	slot = set_slot(s, str, &found);
	if (found) {
		if (owned)
			free(str);
		return 0;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 32;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n] = owned ? str : xstrdup(str);
	s->n++;
	s->live++;
	s->tab[slot] = s->n;
	return 1;
}

/* Remove str if present (its slot stays, pointing at a NULL entry). */
static void
set_del(struct nsset *s, const char *str)
{
	size_t slot;
	int found;

	if (s->tabsz == 0)
		return;
	slot = set_slot(s, str, &found);
	if (!found)
		return;
	free(s->v[s->tab[slot] - 1]);
	s->v[s->tab[slot] - 1] = NULL;
	s->live--;
}

/* --------------------------------------------------------------- expand */

struct nsctx {
	nodeset_group_fn groups;
	void *garg;
	char *err;
	size_t errlen;
	int failed;
	const char *stack[NS_MAX_DEPTH];	/* groups being expanded */
	int depth;
};

/* Record the first error, made visible (it quotes the expression, which
 * may come from someone's file); later ones are dropped.  Always -1. */
static int __attribute__((format(printf, 2, 3)))
ns_error(struct nsctx *cx, const char *fmt, ...)
{
	va_list ap;
	char *v;

	if (cx->failed)
		return -1;
	cx->failed = 1;
	if (cx->err == NULL || cx->errlen == 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(cx->err, cx->errlen, fmt, ap);
	va_end(ap);
	v = str_visible_dup(cx->err, 0);
	snprintf(cx->err, cx->errlen, "%s", v);
	free(v);
	return -1;
}

/* Characters allowed in node and group names outside brackets. */
static int
name_char_ok(int c)
{
	return isalnum(c) || c == '-' || c == '_' || c == '.' || c == ':' || c == '+';
}

/* Top-level separators: operators and white space. */
static int
is_sep(int c)
{
	return c == ',' || c == '!' || c == '&' || c == '^' || isspace(c);
}

struct range {
	uint64_t a, b, step;
	int width;		/* 0: no padding */
};

struct bracket {
	struct range *r;
	size_t nr;
	uint64_t count;		/* values in this bracket */
};

/* Parse one decimal number of s[0..len); -1 if not all digits, -2 if too
 * long for a numeric field. */
static int
parse_num(const char *s, size_t len, uint64_t *v)
{
	uint64_t x = 0;

	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	if (len > NS_MAX_DIGITS)
		return -2;
	*v = x;
	return 0;
}

/* Parse "N", "N-M" or "N-M/S" (white space trimmed) into r. */
static int
parse_range(struct nsctx *cx, const char *s, size_t len, const char *tok, struct range *rg)
{
	const char *dash, *slash, *e;
	size_t alen, blen;
	int r = -1;

	while (len > 0 && isspace((unsigned char)*s))
		s++, len--;
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	if (len == 0)
		return ns_error(cx, "nodeset: empty range in \"%s\"", tok);
	e = s + len;
	dash = memchr(s, '-', len);
	slash = memchr(s, '/', len);
	if (slash != NULL && (dash == NULL || slash < dash))
		goto bad;
	alen = dash ? (size_t)(dash - s) : len;
	if ((r = parse_num(s, alen, &rg->a)) < 0)
		goto bad;
	rg->width = (alen > 1 && s[0] == '0') ? (int)alen : 0;
	rg->b = rg->a;
	rg->step = 1;
	if (dash == NULL)
		return 0;
	blen = (size_t)((slash ? slash : e) - (dash + 1));
	if ((r = parse_num(dash + 1, blen, &rg->b)) < 0)
		goto bad;
	if (blen > 1 && dash[1] == '0' && (int)blen != rg->width)
		return ns_error(cx, "nodeset: inconsistent padding in range \"%.*s\" in \"%s\"",
		    (int)len, s, tok);
	if (slash != NULL) {
		if (parse_num(slash + 1, (size_t)(e - slash - 1), &rg->step) < 0 || rg->step == 0)
			return ns_error(cx, "nodeset: bad step in range \"%.*s\" in \"%s\"",
			    (int)len, s, tok);
	}
	if (rg->b < rg->a)
		return ns_error(cx, "nodeset: reversed range \"%.*s\" in \"%s\"", (int)len, s, tok);
	return 0;
bad:
	if (r == -2)
		return ns_error(cx, "nodeset: number too large in \"%s\"", tok);
	return ns_error(cx, "nodeset: bad range \"%.*s\" in \"%s\"", (int)len, s, tok);
}

/* Parse the ranges between '[' and ']' (s[0..len)) into b. */
static int
parse_bracket(struct nsctx *cx, const char *s, size_t len, const char *tok, struct bracket *b)
{
	size_t start = 0, cap = 0;

	memset(b, 0, sizeof(*b));
	for (size_t i = 0; i <= len; i++) {
		struct range r;

		if (i < len && s[i] != ',')
			continue;
		if (parse_range(cx, s + start, i - start, tok, &r) < 0)
			return -1;
		if (b->nr == cap) {
			cap = cap ? cap * 2 : 8;
			b->r = xrealloc(b->r, cap * sizeof(*b->r));
		}
		b->r[b->nr++] = r;
		b->count += (r.b - r.a) / r.step + 1;
		if (b->count > NS_MAX_NAMES)
			return ns_error(cx, "nodeset: too many nodes (more than %u) in \"%s\"",
			    NS_MAX_NAMES, tok);
		start = i + 1;
	}
	return 0;
}

/* Position in a bracket: range index and offset within that range. */
struct cursor {
	size_t ri;
	uint64_t off;
};

/* Advance c in b; returns 1 when it wrapped around to the start. */
static int
cursor_next(const struct bracket *b, struct cursor *c)
{
	const struct range *r = &b->r[c->ri];

	if (++c->off <= (r->b - r->a) / r->step)
		return 0;
	c->off = 0;
	if (++c->ri < b->nr)
		return 0;
	c->ri = 0;
	return 1;
}

/* A pattern token split into literals and bracket groups: lit[i] (litlen[i]
 * bytes) comes before br[i]; lit[nb] ends it; total names in all. */
struct pattern {
	struct bracket br[NS_MAX_BRACKETS];	/* br[0..nb): their ranges owned */
	const char *lit[NS_MAX_BRACKETS + 1];
	size_t litlen[NS_MAX_BRACKETS + 1];
	size_t nb, total;
};

/* The literal text [p, end) of token tok: 0, or -1 at an invalid
 * character (said in cx). */
static int
check_literal(struct nsctx *cx, const char *tok, const char *p, const char *end)
{
	for (const char *q = p; q < end; q++) {
		if (!name_char_ok((unsigned char)*q)) {
			if (isprint((unsigned char)*q))
				ns_error(cx, "nodeset: invalid character '%c' in \"%s\"", *q, tok);
			else
				ns_error(cx, "nodeset: invalid character 0x%02x in \"%s\"",
				    (unsigned char)*q, tok);
			return -1;
		}
	}
	return 0;
}

/* The bracket group from open to close (NULL: none) of token tok, the
 * nb-th: 0, or -1 when it is unbalanced, nested, one too many or empty
 * (said in cx). */
static int
check_group(struct nsctx *cx, const char *tok, const char *open, const char *close,
    size_t nb)
{
	if (close == NULL)
		return ns_error(cx, "nodeset: unbalanced '[' in \"%s\"", tok);
	if (memchr(open + 1, '[', (size_t)(close - open - 1)) != NULL)
		return ns_error(cx, "nodeset: nested '[' in \"%s\"", tok);
	if (nb == NS_MAX_BRACKETS)
		return ns_error(cx, "nodeset: too many bracket groups in \"%s\"", tok);
	if (close == open + 1)
		return ns_error(cx, "nodeset: empty brackets in \"%s\"", tok);
	return 0;
}

/* Split token tok into pt (pt->br[0..pt->nb) are the caller's to free,
 * even on error). 0 or -1 (said in cx). */
static int
pattern_parse(struct nsctx *cx, const char *tok, struct pattern *pt)
{
	const char *p = tok;

	pt->nb = 0;
	pt->total = 1;
	pt->lit[0] = p;
	for (;;) {
		const char *open = strchr(p, '['), *close = strchr(p, ']');
		const char *end = open ? open : p + strlen(p);
		struct bracket *br = &pt->br[pt->nb];

		if (close != NULL && (open == NULL || close < open))
			return ns_error(cx, "nodeset: unbalanced ']' in \"%s\"", tok);
		if (check_literal(cx, tok, p, end) < 0)
			return -1;
		pt->litlen[pt->nb] = (size_t)(end - pt->lit[pt->nb]);
		if (open == NULL)
			return 0;
		if (check_group(cx, tok, open, close, pt->nb) < 0)
			return -1;
		if (parse_bracket(cx, open + 1, (size_t)(close - open - 1), tok, br) < 0) {
			free(br->r);
			return -1;
		}
		pt->nb++;
		if (pt->total * br->count > NS_MAX_NAMES)
			return ns_error(cx, "nodeset: too many nodes (more than %u) in \"%s\"",
			    NS_MAX_NAMES, tok);
		pt->total *= br->count;
		p = close + 1;
		pt->lit[pt->nb] = p;
	}
}

/* The name of pt at cursors cur into buf (maxlen bytes, enough). */
static void
pattern_name(const struct pattern *pt, const struct cursor *cur, char *buf, size_t maxlen)
{
	size_t off = 0;

	for (size_t i = 0; i <= pt->nb; i++) {
		memcpy(buf + off, pt->lit[i], pt->litlen[i]);
		off += pt->litlen[i];
		if (i < pt->nb) {
			const struct range *r = &pt->br[i].r[cur[i].ri];
			off += (size_t)snprintf(buf + off, maxlen - off, "%0*" PRIu64, r->width,
			    r->a + cur[i].off * r->step);
		}
	}
	buf[off] = '\0';
}

/* Add every name of pt (from token tok) to out. */
static void
pattern_emit(const struct pattern *pt, const char *tok, struct nsset *out)
{
	struct cursor cur[NS_MAX_BRACKETS];
	size_t maxlen = strlen(tok) + pt->nb * (NS_MAX_DIGITS + 1) + 1;
	char *buf = xmalloc(maxlen);

	memset(cur, 0, sizeof(cur));
	for (size_t k = 0; k < pt->total; k++) {
		pattern_name(pt, cur, buf, maxlen);
		set_add(out, buf, 0);
		/* odometer, rightmost bracket fastest */
		for (size_t i = pt->nb; i-- > 0;)
			if (!cursor_next(&pt->br[i], &cur[i]))
				break;
	}
	free(buf);
}

/* Expand one pattern token (no operators) into out. */
static int
expand_pattern(struct nsctx *cx, const char *tok, struct nsset *out)
{
	struct pattern pt;
	int rc = -1;

	if (*tok == '\0')
		return ns_error(cx, "nodeset: empty node name");
	if (pattern_parse(cx, tok, &pt) == 0) {
		pattern_emit(&pt, tok, out);
		rc = 0;
	}
	for (size_t i = 0; i < pt.nb; i++)
		free(pt.br[i].r);
	return rc;
}

static int expand_expr(struct nsctx *cx, const char *expr, struct nsset *res);

/* May group g be expanded here: not already being expanded (a cycle),
 * not nested too deeply, groups defined?  0 or -1 (said in cx). */
static int
group_check(struct nsctx *cx, const char *g)
{
	for (int d = 0; d < cx->depth; d++) {
		if (strcmp(cx->stack[d], g) == 0) {
			char chain[512];
			size_t off = 0;

			for (int j = d; j < cx->depth && off < sizeof(chain); j++)
				off += (size_t)snprintf(chain + off, sizeof(chain) - off,
				    "@%s -> ", cx->stack[j]);
			return ns_error(cx, "nodeset: group recursion: %s@%s", chain, g);
		}
	}
	if (cx->depth == NS_MAX_DEPTH)
		return ns_error(cx, "nodeset: groups nested too deeply at @%s", g);
	if (cx->groups == NULL)
		return ns_error(cx, "nodeset: no groups defined (for @%s)", g);
	return 0;
}

/* Expand the members of group g into out (an error in them names g).
 * 0 or -1 (said in cx). */
static int
expand_group(struct nsctx *cx, const char *g, struct nsset *out)
{
	struct strvec members = { 0 };
	int r = 0;

	if (group_check(cx, g) < 0)
		return -1;
	if (cx->groups(cx->garg, g, &members) < 0) {
		strvec_free(&members);
		return ns_error(cx, "nodeset: unknown group @%s", g);
	}
	cx->stack[cx->depth++] = g;
	for (size_t m = 0; m < members.n && r == 0; m++)
		r = expand_expr(cx, members.v[m], out);
	cx->depth--;
	strvec_free(&members);
	if (r < 0) {
		size_t l = cx->err ? strlen(cx->err) : 0;
		if (cx->err != NULL && l + 1 < cx->errlen && strstr(cx->err, "recursion") == NULL)
			snprintf(cx->err + l, cx->errlen - l, " (in group @%s)", g);
		return -1;
	}
	return 0;
}

/* Expand "@pattern": each group named by the pattern, recursively. */
static int
expand_groups(struct nsctx *cx, const char *tok, struct nsset *out)
{
	struct nsset names = { 0 };
	int rc = 0;

	if (tok[1] == '\0')
		return ns_error(cx, "nodeset: empty group name in \"%s\"", tok);
	if (expand_pattern(cx, tok + 1, &names) < 0)
		rc = -1;
	for (size_t i = 0; i < names.n && rc == 0; i++)
		rc = expand_group(cx, names.v[i], out);
	set_free(&names);
	return rc;
}

/* Combine operand into res with op. */
static void
set_combine(struct nsset *res, struct nsset *opnd, int op)
{
	switch (op) {
	case ',':
		for (size_t i = 0; i < opnd->n; i++)
			if (opnd->v[i] != NULL && !set_has(res, opnd->v[i])) {
				set_add(res, opnd->v[i], 1);
				opnd->v[i] = NULL;	/* now owned by res */
			}
		break;
	case '!':
		for (size_t i = 0; i < opnd->n; i++)
			if (opnd->v[i] != NULL)
				set_del(res, opnd->v[i]);
		break;
	case '&':
		for (size_t i = 0; i < res->n; i++)
			if (res->v[i] != NULL && !set_has(opnd, res->v[i])) {
				free(res->v[i]);
				res->v[i] = NULL;
				res->live--;
			}
		break;
	case '^':
		for (size_t i = 0; i < opnd->n; i++) {
			if (opnd->v[i] == NULL)
				continue;
			if (set_has(res, opnd->v[i]))
				set_del(res, opnd->v[i]);
			else {
				set_add(res, opnd->v[i], 1);
				opnd->v[i] = NULL;
			}
		}
		break;
	}
}

/* The operand token at *p (up to a separator outside brackets), malloc'd;
 * *p moves past it. */
static char *
operand_token(const char **p)
{
	const char *start = *p, *q;
	int depth = 0;
	char *tok;

	for (q = start; *q != '\0'; q++) {
		if (*q == '[')
			depth++;
		else if (*q == ']' && depth > 0)
			depth--;
		else if (depth == 0 && is_sep((unsigned char)*q))
			break;
	}
	tok = xmalloc((size_t)(q - start) + 1);
	memcpy(tok, start, (size_t)(q - start));
	tok[q - start] = '\0';
	*p = q;
	return tok;
}

/* Expand operand tok of expression expr and combine it into res with op.
 * 0 or -1 (said in cx). */
static int
expand_operand(struct nsctx *cx, const char *tok, const char *expr, struct nsset *res,
    int op)
{
	struct nsset opnd = { 0 };
	int r;

	if (tok[0] == '@')
		r = expand_groups(cx, tok, &opnd);
	else
		r = expand_pattern(cx, tok, &opnd);
	if (r == 0 && opnd.live + res->live > NS_MAX_NAMES)
		r = ns_error(cx, "nodeset: too many nodes (more than %u) in \"%s\"",
		    NS_MAX_NAMES, expr);
	if (r == 0)
		set_combine(res, &opnd, op);
	set_free(&opnd);
	return r;
}

/* Expand a full expression with operators, combining into res. */
static int
expand_expr(struct nsctx *cx, const char *expr, struct nsset *res)
{
	const char *p = expr;
	int op = ',', have_operand = 0;

	for (;;) {
		char *tok;
		int r;

		while (isspace((unsigned char)*p))
			p++;
		if (*p == '\0') {
			if (op != ',')
				return ns_error(cx, "nodeset: missing operand after '%c' in \"%s\"",
				    op, expr);
			return 0;
		}
		if (*p == ',' && op == ',') {	/* empty item: tolerated */
			p++;
			continue;
		}
		if (is_sep((unsigned char)*p))
			return ns_error(cx, "nodeset: missing operand before '%c' in \"%s\"", *p,
			    expr);
		tok = operand_token(&p);
		r = expand_operand(cx, tok, expr, res, have_operand ? op : ',');
		free(tok);
		if (r < 0)
			return -1;
		have_operand = 1;
		/* the operator that follows, if any */
		while (isspace((unsigned char)*p))
			p++;
		if (*p == ',' || *p == '!' || *p == '&' || *p == '^')
			op = *p++;
		else
			op = ',';	/* white space or end */
	}
}

/* Expand expr, appending new names to out (names already in out are not
 * repeated).  The names pushed to out are owned by out. */
int
nodeset_expand(const char *expr, nodeset_group_fn groups, void *garg,
    struct strvec *out, char *err, size_t errlen)
{
	struct nsctx cx = { .groups = groups, .garg = garg, .err = err, .errlen = errlen };
	struct nsset res = { 0 }, have = { 0 };
	int rc = -1;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (expr == NULL)
		expr = "";
	if (expand_expr(&cx, expr, &res) < 0)
		goto out;
	for (size_t i = 0; i < out->n; i++)
		set_add(&have, out->v[i], 0);
	for (size_t i = 0; i < res.n; i++) {
		if (res.v[i] == NULL || (have.n > 0 && set_has(&have, res.v[i])))
			continue;
		strvec_push_owned(out, res.v[i]);
		res.v[i] = NULL;
	}
	rc = 0;
out:
	set_free(&res);
	set_free(&have);
	return rc;
}

/* Remove from set every name in exclude, keeping order; O(n + m). */
void
nodeset_exclude(struct strvec *set, const struct strvec *exclude)
{
	struct nsset ex = { 0 };
	size_t j = 0;

	if (exclude == NULL || exclude->n == 0 || set->n == 0)
		return;
	for (size_t i = 0; i < exclude->n; i++)
		set_add(&ex, exclude->v[i], 0);
	for (size_t i = 0; i < set->n; i++) {
		if (set_has(&ex, set->v[i]))
			free(set->v[i]);
		else
			set->v[j++] = set->v[i];
	}
	set->n = j;
	if (set->v != NULL)
		set->v[j] = NULL;
	set_free(&ex);
}

/* ----------------------------------------------------------------- fold */

/* One numeric field of a parsed name. */
struct field {
	uint64_t val;
	unsigned off, len;	/* digits at name[off..off+len) */
};

/* A name split into literal parts and numeric fields. */
struct pname {
	const char *name;
	char *key;		/* literal parts joined by '\x1f' */
	size_t nf;
	struct field *f;
	size_t order;		/* first appearance, for stable sorting */
};

/* One component of a vector being folded: a singleton (digits) or, once
 * its dimension has been folded, a range set text ("01-08,10"). */
struct comp {
	char *text;
	uint64_t val;		/* singleton value, or smallest value */
	unsigned len;		/* singleton digit count */
	int multi;		/* text needs brackets */
};

struct vec {
	struct comp *c;
	char *okey;		/* other components, while folding one */
};

/* Split name into fields and a pattern key; caller frees with pname_free. */
static void
pname_parse(struct pname *pn, const char *name, size_t order)
{
	size_t len = strlen(name), klen = 0, i = 0;

	pn->name = name;
	pn->order = order;
	pn->nf = 0;
	pn->f = NULL;
	pn->key = xmalloc(len + 2);
	while (i < len) {
		size_t j = i;

		if (!isdigit((unsigned char)name[i])) {
			pn->key[klen++] = name[i++];
			continue;
		}
		while (j < len && isdigit((unsigned char)name[j]))
			j++;
		if (j - i > NS_MAX_DIGITS) {	/* too long to be a number: literal */
			memcpy(pn->key + klen, name + i, j - i);
			klen += j - i;
		} else {
			uint64_t v = 0;

			for (size_t k = i; k < j; k++)
				v = v * 10 + (uint64_t)(name[k] - '0');
			pn->f = xrealloc(pn->f, (pn->nf + 1) * sizeof(*pn->f));
			pn->f[pn->nf].val = v;
			pn->f[pn->nf].off = (unsigned)i;
			pn->f[pn->nf].len = (unsigned)(j - i);
			pn->nf++;
			pn->key[klen++] = '\x1f';
		}
		i = j;
	}
	pn->key[klen] = '\0';
}

/* Order parsed names by pattern key, then first appearance. */
static int
pname_cmp(const void *a, const void *b)
{
	const struct pname *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c != 0)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Format v with padding width w (0: none) into buf; returns length. */
static size_t
fmt_num(char *buf, size_t len, uint64_t v, unsigned w)
{
	int n = snprintf(buf, len, "%0*" PRIu64, (int)w, v);

	return n < 0 ? 0 : (size_t)n;
}

struct run {
	uint64_t a, b;
	unsigned w;
};

/* Order runs by first value, then padding width. */
static int
run_cmp(const void *a, const void *b)
{
	const struct run *x = a, *y = b;

	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	return x->w < y->w ? -1 : x->w > y->w;
}

/* Fold singletons c[0..n) (sorted by value, then length) into the text of a
 * range set such as "01-08,10".  Runs are kept per padding width; an
 * unpadded number may continue a padded run when it prints the same under
 * that width ("08,09,10" -> "08-10").  Returns a malloc'd string. */
static char *
fold_range(struct comp *const *c, size_t n)
{
	struct { int on; uint64_t a, b; } cls[NS_MAX_DIGITS + 1];
	struct run *runs = xmalloc(n * sizeof(*runs));
	size_t nr = 0, outlen = 0, cap;
	char *out;

	memset(cls, 0, sizeof(cls));
	for (size_t i = 0; i < n; i++) {
		uint64_t v = c[i]->val;
		unsigned len = c[i]->len;
		int padded = len > 1 && c[i]->text[0] == '0';
		int w = -1;

		if (padded) {
			if (cls[len].on && cls[len].b + 1 == v)
				w = (int)len;
		} else {
			for (unsigned k = 2; k <= len && w < 0; k++)
				if (cls[k].on && cls[k].b + 1 == v)
					w = (int)k;
			if (w < 0 && cls[0].on && cls[0].b + 1 == v)
				w = 0;
		}
		if (w >= 0) {
			cls[w].b = v;
			continue;
		}
		w = padded ? (int)len : 0;
		if (cls[w].on)
			runs[nr++] = (struct run){ cls[w].a, cls[w].b, (unsigned)w };
		cls[w].on = 1;
		cls[w].a = cls[w].b = v;
	}
	for (unsigned w = 0; w <= NS_MAX_DIGITS; w++)
		if (cls[w].on)
			runs[nr++] = (struct run){ cls[w].a, cls[w].b, w };
	qsort(runs, nr, sizeof(*runs), run_cmp);
	cap = nr * (2 * (NS_MAX_DIGITS + 1) + 2) + 1;
	out = xmalloc(cap);
	for (size_t i = 0; i < nr; i++) {
		if (i > 0)
			out[outlen++] = ',';
		outlen += fmt_num(out + outlen, cap - outlen, runs[i].a, runs[i].w);
		if (runs[i].b != runs[i].a) {
			out[outlen++] = '-';
			outlen += fmt_num(out + outlen, cap - outlen, runs[i].b, runs[i].w);
		}
	}
	out[outlen] = '\0';
	free(runs);
	return out;
}

struct foldctx {
	size_t k;		/* fields per vector */
	size_t dim;		/* dimension being folded */
};

/* qsort_r: by the other components' key, then value of the folded dim. */
static int
vec_cmp(const void *a, const void *b, void *arg)
{
	const struct vec *x = *(struct vec *const *)a, *y = *(struct vec *const *)b;
	const struct foldctx *fc = arg;
	const struct comp *cx = &x->c[fc->dim], *cy = &y->c[fc->dim];
	int c = strcmp(x->okey, y->okey);

	if (c != 0)
		return c;
	if (cx->val != cy->val)
		return cx->val < cy->val ? -1 : 1;
	return cx->len < cy->len ? -1 : cx->len > cy->len;
}

/* Free a vector of k components. */
static void
vec_free(struct vec *v, size_t k)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < k; i++)
		free(v->c[i].text);
	free(v->c);
	free(v->okey);
	free(v);
}

/* Fold dimension dim of vs[0..*n): vectors equal in every other component
 * merge into one whose component dim is the union.  Replaces vs in place. */
static void
fold_dim(struct vec **vs, size_t *n, size_t k, size_t dim)
{
	struct foldctx fc = { k, dim };
	struct comp **items;
	size_t out = 0;

	for (size_t i = 0; i < *n; i++) {
		size_t len = 1;
		char *p;

		for (size_t j = 0; j < k; j++)
			if (j != dim)
				len += strlen(vs[i]->c[j].text) + 1;
		p = vs[i]->okey = xmalloc(len);
		for (size_t j = 0; j < k; j++) {
			size_t l;

			if (j == dim)
				continue;
			l = strlen(vs[i]->c[j].text);
			memcpy(p, vs[i]->c[j].text, l);
			p[l] = '|';
			p += l + 1;
		}
		*p = '\0';
	}
	qsort_r(vs, *n, sizeof(*vs), vec_cmp, &fc);
	items = xmalloc(*n * sizeof(*items));
	for (size_t i = 0; i < *n;) {
		size_t j = i;
		struct vec *keep = vs[i];

		while (j < *n && strcmp(vs[j]->okey, keep->okey) == 0) {
			items[j - i] = &vs[j]->c[dim];
			j++;
		}
		if (j - i > 1) {
			char *text = fold_range(items, j - i);
			/* items[0] is keep's own component; its value is the smallest */
			free(keep->c[dim].text);
			keep->c[dim].text = text;
			keep->c[dim].multi = 1;
			for (size_t m = i + 1; m < j; m++)
				vec_free(vs[m], k);
		}
		free(keep->okey);
		keep->okey = NULL;
		vs[out++] = keep;
		i = j;
	}
	free(items);
	*n = out;
}

/* Output order of folded vectors: smallest values, field by field. */
static int
vec_order_cmp(const void *a, const void *b, void *arg)
{
	const struct vec *x = *(struct vec *const *)a, *y = *(struct vec *const *)b;
	size_t k = *(const size_t *)arg;

	for (size_t i = 0; i < k; i++) {
		if (x->c[i].val != y->c[i].val)
			return x->c[i].val < y->c[i].val ? -1 : 1;
		if (x->c[i].len != y->c[i].len)
			return x->c[i].len < y->c[i].len ? -1 : 1;
	}
	return 0;
}

/* Render one folded vector with the literal parts of pattern pn, appending
 * to *buf (size *cap, length *len). */
static void
render_vec(const struct pname *pn, const struct vec *v, char **buf, size_t *len, size_t *cap)
{
	size_t need = strlen(pn->name) + 3;
	unsigned pos = 0;

	for (size_t i = 0; i < pn->nf; i++)
		need += strlen(v->c[i].text) + 2;
	if (*len + need + 1 > *cap) {
		*cap = (*len + need + 1) * 2;
		*buf = xrealloc(*buf, *cap);
	}
	if (*len > 0)
		(*buf)[(*len)++] = ',';
	for (size_t i = 0; i < pn->nf; i++) {
		size_t l = pn->f[i].off - pos;

		memcpy(*buf + *len, pn->name + pos, l);
		*len += l;
		*len += (size_t)sprintf(*buf + *len, v->c[i].multi ? "[%s]" : "%s", v->c[i].text);
		pos = pn->f[i].off + pn->f[i].len;
	}
	*len += (size_t)sprintf(*buf + *len, "%s", pn->name + pos);
}

/* Fold the names pn[0..n) sharing one pattern with the dimension order
 * perm; returns the malloc'd comma-joined text. */
static char *
fold_pattern(const struct pname *pn, size_t n, const size_t *perm)
{
	size_t k = pn[0].nf, nv = n, len = 0, cap = 0;
	struct vec **vs = xmalloc(n * sizeof(*vs));
	char *buf = NULL;

	for (size_t i = 0; i < n; i++) {
		vs[i] = xcalloc(1, sizeof(**vs));
		vs[i]->c = xcalloc(k, sizeof(struct comp));
		for (size_t j = 0; j < k; j++) {
			struct comp *c = &vs[i]->c[j];

			c->text = xmalloc(pn[i].f[j].len + 1);
			memcpy(c->text, pn[i].name + pn[i].f[j].off, pn[i].f[j].len);
			c->text[pn[i].f[j].len] = '\0';
			c->val = pn[i].f[j].val;
			c->len = pn[i].f[j].len;
		}
	}
	for (size_t d = 0; d < k; d++)
		fold_dim(vs, &nv, k, perm[d]);
	qsort_r(vs, nv, sizeof(*vs), vec_order_cmp, &k);
	for (size_t i = 0; i < nv; i++) {
		render_vec(&pn[0], vs[i], &buf, &len, &cap);
		vec_free(vs[i], k);
	}
	free(vs);
	return buf;
}

/* Next permutation of p[0..k) in lexicographic order; 0 after the last. */
static int
next_perm(size_t *p, size_t k)
{
	size_t i, j, t;

	if (k < 2)
		return 0;
	for (i = k - 1; i > 0 && p[i - 1] >= p[i]; i--)
		;
	if (i == 0)
		return 0;
	for (j = k - 1; p[j] <= p[i - 1]; j--)
		;
	t = p[i - 1], p[i - 1] = p[j], p[j] = t;
	for (j = k - 1; i < j; i++, j--)
		t = p[i], p[i] = p[j], p[j] = t;
	return 1;
}

/* The shortest fold of pn[0..cnt) (one key, k > 0 fields) over the
 * orders of its fields tried: the last field first (ties keep it), then
 * every other order up to 3 fields, or the first field first beyond.
 * Malloc'd. */
static char *
fold_best(const struct pname *pn, size_t cnt, size_t k)
{
	size_t *perm = xmalloc(k * sizeof(*perm));
	char *best;
	int more = 1;

	for (size_t d = 0; d < k; d++)
		perm[d] = k - 1 - d;
	best = fold_pattern(pn, cnt, perm);
	for (size_t d = 0; d < k; d++)
		perm[d] = d;
	for (; more; more = k <= 3 ? next_perm(perm, k) : 0) {
		char *s;
		size_t d;

		for (d = 0; d < k && perm[d] == k - 1 - d; d++)
			;
		if (d == k)
			continue;	/* the order already tried */
		s = fold_pattern(pn, cnt, perm);
		if (strlen(s) < strlen(best)) {
			free(best);
			best = s;
		} else
			free(s);
	}
	free(perm);
	return best;
}

/* Append ",s" (just s when *len is 0) to the malloc'd string *out of *cap
 * bytes, growing it. */
static void
fold_append(char **out, size_t *len, size_t *cap, const char *s)
{
	if (*len + strlen(s) + 2 > *cap) {
		*cap = (*len + strlen(s) + 2) * 2;
		*out = xrealloc(*out, *cap);
	}
	if (*len > 0)
		(*out)[(*len)++] = ',';
	memcpy(*out + *len, s, strlen(s) + 1);
	*len += strlen(s);
}

/* Fold names[0..n) into the shortest bracket form found; duplicates are
 * ignored.  Returns a malloc'd string ("" for no names); caller frees. */
char *
nodeset_fold(char *const *names, size_t n)
{
	struct nsset uniq = { 0 };
	struct pname *pn;
	size_t np = 0, len = 0, cap = 64;
	char *out = xmalloc(cap);

	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		if (names[i] != NULL && names[i][0] != '\0')
			set_add(&uniq, names[i], 0);
	pn = xmalloc((uniq.n ? uniq.n : 1) * sizeof(*pn));
	for (size_t i = 0; i < uniq.n; i++)
		pname_parse(&pn[np++], uniq.v[i], i);
	qsort(pn, np, sizeof(*pn), pname_cmp);
	for (size_t i = 0; i < np;) {
		size_t j = i;
		char *best;

		while (j < np && strcmp(pn[j].key, pn[i].key) == 0)
			j++;
		if (pn[i].nf == 0)
			best = xstrdup(pn[i].name);	/* unique, so j == i + 1 */
		else
			best = fold_best(&pn[i], j - i, pn[i].nf);
		fold_append(&out, &len, &cap, best);
		free(best);
		i = j;
	}
	for (size_t i = 0; i < np; i++) {
		free(pn[i].key);
		free(pn[i].f);
	}
	free(pn);
	set_free(&uniq);
	return out;
}
