/* Inventory: cluster.xml, parsed with libxml2.
 *
 * Schema (see controller/cluster.example.xml):
 *
 *   <cluster [port="7420"]>              root; port: default agent port
 *     <tls [ca="F"] [cert="F"] [key="F"]/>   at most once: the controller's
 *                                        CA, certificate and key
 *     <results db="F"/>                  at most once: results database
 *     <group name="NAME" nodes="NODESET"/>   any number; NODESET may use
 *                                        other @groups (no cycles)
 *     <node name="NODESET" [addr="HOST"] [port="N"]/>
 *                                        per-node overrides; a name that
 *                                        expands to several nodes gives
 *                                        them all the same port (addr is
 *                                        then not allowed)
 *   </cluster>
 *
 * Relative paths (ca, cert, key, db) resolve against the directory that
 * holds cluster.xml.  Absent ones stay NULL (the caller's defaults apply).
 * Every problem is reported as "file:line: message"; all of them are
 * collected (newline separated) before inventory_load fails.  Unknown
 * elements and attributes are errors, so a typo cannot silently drop a
 * setting.  After loading, inv->nodes is sorted by name (inventory_target
 * looks names up with bsearch). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "knobctl.h"
#include "log.h"
#include "nodeset.h"
#include "util.h"
#include "visible.h"
#include "xml.h"

#define INV_MAX_FILE	(64u << 20)	/* cluster.xml size cap */
#define INV_MAX_ERRORS	50		/* reported before "... more" */

struct inv_err {
	long line;
	size_t seq;
	char *msg;
};

/* Load state: the inventory being built and the errors found so far. */
struct invload {
	const char *path;
	struct inventory *inv;
	char *dir;		/* directory of cluster.xml */
	struct inv_err *errs;
	size_t nerr;
	long *node_line;	/* line of each inv->nodes[i] */
	long *group_line;	/* line of each inv->groups[i] */
};

/* Record one error at line (<= 0: none), made visible: it may quote the
 * file's text. */
static void __attribute__((format(printf, 3, 4)))
inv_error(struct invload *ld, long line, const char *fmt, ...)
{
	va_list ap;
	char *raw, *m;

	va_start(ap, fmt);
	if (vasprintf(&raw, fmt, ap) < 0)
		fatal("vasprintf");
	va_end(ap);
	m = str_visible_dup(raw, 0);
	free(raw);
	ld->errs = xrealloc(ld->errs, (ld->nerr + 1) * sizeof(*ld->errs));
	ld->errs[ld->nerr] = (struct inv_err){ line, ld->nerr, m };
	ld->nerr++;
}

/* Errors in line order, then in the order found. */
static int
err_cmp(const void *a, const void *b)
{
	const struct inv_err *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Write the errors in file order as "file:line: message" lines into err
 * (at most INV_MAX_ERRORS, then a count of the rest); frees them. */
static void
flush_errors(struct invload *ld, char *err, size_t errlen)
{
	size_t used = 0;

	qsort(ld->errs, ld->nerr, sizeof(*ld->errs), err_cmp);
	for (size_t i = 0; i < ld->nerr; i++) {
		char line[1200];
		int n;

		if (i == INV_MAX_ERRORS)
			snprintf(line, sizeof(line), "%s: %zu more errors", ld->path, ld->nerr - i);
		else if (ld->errs[i].line > 0)
			snprintf(line, sizeof(line), "%s:%ld: %s", ld->path, ld->errs[i].line,
			    ld->errs[i].msg);
		else
			snprintf(line, sizeof(line), "%s: %s", ld->path, ld->errs[i].msg);
		if (i <= INV_MAX_ERRORS && err != NULL && used + 1 < errlen) {
			n = snprintf(err + used, errlen - used, "%s%s", used ? "\n" : "", line);
			if (n > 0)
				used += (size_t)n;
			if (used >= errlen)
				used = errlen - 1;
		}
	}
	for (size_t i = 0; i < ld->nerr; i++)
		free(ld->errs[i].msg);
	free(ld->errs);
	ld->errs = NULL;
}

/* libxml2 structured error handler: collect parser errors with their line. */
static void
xml_error(void *arg, xmlErrorPtr e)
{
	struct invload *ld = arg;
	char msg[512];
	size_t l;

	if (e == NULL || e->level == XML_ERR_WARNING)
		return;
	snprintf(msg, sizeof(msg), "%s", e->message ? e->message : "XML error");
	l = strlen(msg);
	while (l > 0 && (msg[l - 1] == '\n' || msg[l - 1] == ' '))
		msg[--l] = '\0';
	inv_error(ld, xml_err_line(e), "XML: %s", msg);
}

/* Line of the first non-blank character of a text node: libxml2 stamps
 * text with the line where it ends. */
static long
text_line(const xmlNode *n)
{
	const xmlChar *t = n->content, *first = NULL;
	long line = xmlGetLineNo(n), before = 0;

	for (; t != NULL && *t != '\0'; t++) {
		if (first == NULL && !isspace(*t))
			first = t;
		if (*t == '\n') {
			line--;
			if (first == NULL)
				before++;
		}
	}
	return line + before;
}

/* Port from text: digits only, 1..65535; -1 otherwise. */
static int
parse_port(const char *s)
{
	long v = 0;

	if (s == NULL || *s == '\0' || strlen(s) > 5)
		return -1;
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return -1;
		v = v * 10 + (*p - '0');
	}
	return (v >= 1 && v <= 65535) ? (int)v : -1;
}

/* Report attributes of n that are not in allowed (NULL-terminated). */
static void
check_attrs(struct invload *ld, const xmlNode *n, const char *const *allowed)
{
	for (const xmlAttr *a = n->properties; a != NULL; a = a->next) {
		int ok = 0;

		for (size_t i = 0; allowed[i] != NULL && !ok; i++)
			ok = strcmp((const char *)a->name, allowed[i]) == 0;
		if (!ok)
			inv_error(ld, xml_line(n), "<%s>: unknown attribute '%s'",
			    (const char *)n->name, (const char *)a->name);
	}
}

/* A required, non-empty attribute; reports and returns NULL when missing. */
static char *
req_attr(struct invload *ld, const xmlNode *n, const char *name)
{
	char *v = xml_attr(n, name);

	if (v == NULL || *strtrim(v) == '\0') {
		inv_error(ld, xml_line(n), "<%s>: missing attribute '%s'",
		    (const char *)n->name, name);
		free(v);
		return NULL;
	}
	return v;
}

/* Resolve a path against the inventory's directory; malloc'd. */
static char *
resolve_path(struct invload *ld, const char *p)
{
	if (p[0] == '/')
		return xstrdup(p);
	return xasprintf("%s/%s", ld->dir, p);
}

/* Optional path attribute into *dst (resolved). */
static void
path_attr(struct invload *ld, const xmlNode *n, const char *name, char **dst)
{
	char *v = xml_attr(n, name);

	if (v == NULL)
		return;
	if (*strtrim(v) == '\0')
		inv_error(ld, xml_line(n), "<%s>: empty attribute '%s'", (const char *)n->name, name);
	else {
		free(*dst);
		*dst = resolve_path(ld, strtrim(v));
	}
	free(v);
}

struct elem_state {
	long tls_line, results_line;
};

/* <tls ca cert key/>: controller credentials (resolved paths). */
static void
el_tls(struct invload *ld, const xmlNode *n, struct elem_state *st)
{
	static const char *const allowed[] = { "ca", "cert", "key", NULL };

	if (st->tls_line) {
		inv_error(ld, xml_line(n), "<tls>: duplicate element (first at line %ld)", st->tls_line);
		return;
	}
	st->tls_line = xml_line(n);
	check_attrs(ld, n, allowed);
	path_attr(ld, n, "ca", &ld->inv->ca);
	path_attr(ld, n, "cert", &ld->inv->cert);
	path_attr(ld, n, "key", &ld->inv->key);
}

/* <results db/>: results database path. */
static void
el_results(struct invload *ld, const xmlNode *n, struct elem_state *st)
{
	static const char *const allowed[] = { "db", NULL };
	char *db;

	if (st->results_line) {
		inv_error(ld, xml_line(n), "<results>: duplicate element (first at line %ld)",
		    st->results_line);
		return;
	}
	st->results_line = xml_line(n);
	check_attrs(ld, n, allowed);
	if ((db = req_attr(ld, n, "db")) == NULL)
		return;
	ld->inv->db = resolve_path(ld, strtrim(db));
	free(db);
}

/* Group names: letters, digits, '_', '-', '.', ':' (what "@name" accepts). */
static int
group_name_ok(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && strchr("_-.:+", *s) == NULL)
			return 0;
	return 1;
}

/* <group name nodes/>: one group; its node set is checked after loading. */
static void
el_group(struct invload *ld, const xmlNode *n, struct elem_state *st)
{
	static const char *const allowed[] = { "name", "nodes", NULL };
	struct inventory *inv = ld->inv;
	struct inv_group *g;
	char *name, *nodes;

	(void)st;
	check_attrs(ld, n, allowed);
	name = req_attr(ld, n, "name");
	nodes = req_attr(ld, n, "nodes");
	if (name == NULL || nodes == NULL)
		goto out;
	if (!group_name_ok(strtrim(name))) {
		inv_error(ld, xml_line(n), "<group>: bad group name \"%s\"", name);
		goto out;
	}
	for (size_t i = 0; i < inv->ngroups; i++) {
		if (strcmp(inv->groups[i].name, strtrim(name)) == 0) {
			inv_error(ld, xml_line(n), "duplicate group \"%s\" (first at line %ld)",
			    inv->groups[i].name, ld->group_line[i]);
			goto out;
		}
	}
	inv->groups = xrealloc(inv->groups, (inv->ngroups + 1) * sizeof(*inv->groups));
	ld->group_line = xrealloc(ld->group_line, (inv->ngroups + 1) * sizeof(*ld->group_line));
	g = &inv->groups[inv->ngroups];
	memset(g, 0, sizeof(*g));
	g->name = xstrdup(strtrim(name));
	strvec_push(&g->members, strtrim(nodes));
	ld->group_line[inv->ngroups] = xml_line(n);
	inv->ngroups++;
out:
	free(name);
	free(nodes);
}

/* <node name [addr] [port]/>: overrides for one node or a node set. */
static void
el_node(struct invload *ld, const xmlNode *n, struct elem_state *st)
{
	static const char *const allowed[] = { "name", "addr", "port", NULL };
	struct inventory *inv = ld->inv;
	struct strvec names = { 0 };
	char *name, *addr = NULL, *port = NULL, nerr[512];
	int p = 0;

	(void)st;
	check_attrs(ld, n, allowed);
	if ((name = req_attr(ld, n, "name")) == NULL)
		goto out;
	addr = xml_attr(n, "addr");
	port = xml_attr(n, "port");
	if (addr != NULL && *strtrim(addr) == '\0') {
		inv_error(ld, xml_line(n), "<node>: empty attribute 'addr'");
		goto out;
	}
	if (port != NULL && (p = parse_port(strtrim(port))) < 0) {
		inv_error(ld, xml_line(n), "<node>: bad port \"%s\" (1-65535)", port);
		goto out;
	}
	if (nodeset_expand(strtrim(name), NULL, NULL, &names, nerr, sizeof(nerr)) < 0) {
		inv_error(ld, xml_line(n), "<node>: %s", nerr);
		goto out;
	}
	if (names.n == 0) {
		inv_error(ld, xml_line(n), "<node>: empty name");
		goto out;
	}
	if (names.n > 1 && addr != NULL) {
		inv_error(ld, xml_line(n), "<node>: addr given for %zu nodes (\"%s\")", names.n, name);
		goto out;
	}
	inv->nodes = xrealloc(inv->nodes, (inv->nnodes + names.n) * sizeof(*inv->nodes));
	ld->node_line = xrealloc(ld->node_line, (inv->nnodes + names.n) * sizeof(*ld->node_line));
	for (size_t i = 0; i < names.n; i++) {
		struct inv_node *in = &inv->nodes[inv->nnodes];

		in->name = names.v[i];
		names.v[i] = NULL;
		in->addr = addr ? xstrdup(strtrim(addr)) : NULL;
		in->port = p;
		ld->node_line[inv->nnodes] = xml_line(n);
		inv->nnodes++;
	}
out:
	strvec_free(&names);
	free(name);
	free(addr);
	free(port);
}

struct elem {
	const char *name;
	void (*fn)(struct invload *, const xmlNode *, struct elem_state *);
};

static const struct elem elems[] = {
	{ "tls", el_tls },
	{ "results", el_results },
	{ "group", el_group },
	{ "node", el_node },
};

/* Sort by name, stable by position: indexes compared through the nodes. */
static int
idx_cmp(const void *a, const void *b, void *arg)
{
	const struct inv_node *nodes = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(nodes[x].name, nodes[y].name);

	if (c != 0)
		return c;
	return x < y ? -1 : x > y;
}

/* Report duplicate nodes (at the later line), then sort inv->nodes by name
 * keeping the first definition of each name. */
static void
check_nodes(struct invload *ld)
{
	struct inventory *inv = ld->inv;
	struct inv_node *sorted;
	size_t *idx, n = 0, first = 0;

	if (inv->nnodes == 0)
		return;
	idx = xmalloc(inv->nnodes * sizeof(*idx));
	for (size_t i = 0; i < inv->nnodes; i++)
		idx[i] = i;
	qsort_r(idx, inv->nnodes, sizeof(*idx), idx_cmp, inv->nodes);
	sorted = xmalloc(inv->nnodes * sizeof(*sorted));
	for (size_t i = 0; i < inv->nnodes; i++) {
		struct inv_node *in = &inv->nodes[idx[i]];

		if (n > 0 && strcmp(sorted[n - 1].name, in->name) == 0) {
			inv_error(ld, ld->node_line[idx[i]], "duplicate node \"%s\" (first at line %ld)",
			    in->name, ld->node_line[first]);
			free(in->name);
			free(in->addr);
			continue;
		}
		first = idx[i];
		sorted[n++] = *in;
	}
	free(inv->nodes);
	inv->nodes = sorted;
	inv->nnodes = n;
	free(idx);
}

/* Expand every group once, reporting unknown groups, cycles and syntax
 * errors at the group's line. */
static void
check_groups(struct invload *ld)
{
	for (size_t i = 0; i < ld->inv->ngroups; i++) {
		struct strvec out = { 0 };
		char expr[300], nerr[512];

		snprintf(expr, sizeof(expr), "@%s", ld->inv->groups[i].name);
		if (nodeset_expand(expr, inventory_group_fn, ld->inv, &out, nerr, sizeof(nerr)) < 0)
			inv_error(ld, ld->group_line[i], "group \"%s\": %s", ld->inv->groups[i].name,
			    nerr);
		strvec_free(&out);
	}
}

/* Report n, a non-element child of parent, when it is text that is not
 * blank (comments and processing instructions pass). */
static void
check_text(struct invload *ld, const xmlNode *parent, const xmlNode *n)
{
	const xmlChar *t = n->content;

	if (n->type != XML_TEXT_NODE && n->type != XML_CDATA_SECTION_NODE)
		return;
	while (t && *t && isspace(*t))
		t++;
	if (t && *t)
		inv_error(ld, text_line(n), "unexpected text in <%s>", (const char *)parent->name);
}

/* Report every child element and every non-blank text inside el, an
 * element that holds only attributes. */
static void
check_empty(struct invload *ld, const xmlNode *el)
{
	for (const xmlNode *c = el->children; c != NULL; c = c->next) {
		if (c->type == XML_ELEMENT_NODE)
			inv_error(ld, xml_line(c), "<%s>: unexpected child element <%s>",
			    (const char *)el->name, (const char *)c->name);
		else
			check_text(ld, el, c);
	}
}

/* Directory of path, absolute when it can be resolved; malloc'd. */
static char *
dir_of(const char *path)
{
	char *copy = xstrdup(path), *d = dirname(copy), *res, *real;

	real = realpath(d, NULL);
	res = xstrdup(real ? real : d);
	free(real);
	free(copy);
	return res;
}

/* Read and parse ld->path: the document (the caller frees it), or NULL
 * with the errors recorded in ld.  Recoverable parser errors are errors
 * too (the document is returned, ld->nerr says so). */
static xmlDocPtr
inv_parse(struct invload *ld)
{
	xmlDocPtr doc;
	int rc;

	xmlSetStructuredErrorFunc(ld, xml_error);
	rc = xml_read_path(ld->path, INV_MAX_FILE, XML_PARSE_NONET | XML_PARSE_NOERROR |
	    XML_PARSE_NOWARNING, &doc);
	xmlSetStructuredErrorFunc(NULL, NULL);
	if (rc < 0)
		inv_error(ld, 0, "cannot read: %s", strerror(-rc));
	else if (doc == NULL && ld->nerr == 0)
		inv_error(ld, 0, "XML: cannot parse");
	return doc;
}

/* The <cluster> root of doc and its attributes (the port into ld->inv):
 * the root, or NULL when it is not <cluster> (said in ld). */
static xmlNode *
inv_root(struct invload *ld, xmlDocPtr doc)
{
	static const char *const allowed[] = { "port", NULL };
	xmlNode *root = xmlDocGetRootElement(doc);
	char *rootport;

	if (root == NULL || strcmp((const char *)root->name, "cluster") != 0) {
		inv_error(ld, root ? xml_line(root) : 0, "root element must be <cluster>%s%s%s",
		    root ? ", not <" : "", root ? (const char *)root->name : "", root ? ">" : "");
		return NULL;
	}
	check_attrs(ld, root, allowed);
	if ((rootport = xml_attr(root, "port")) != NULL &&
	    (ld->inv->port = parse_port(strtrim(rootport))) < 0) {
		inv_error(ld, xml_line(root), "<cluster>: bad port \"%s\" (1-65535)", rootport);
		ld->inv->port = KNOB_DEFAULT_PORT;
	}
	free(rootport);
	return root;
}

/* Each child of root, through its handler in elems; unknown elements and
 * stray text are errors. */
static void
inv_elements(struct invload *ld, const xmlNode *root)
{
	struct elem_state st = { 0 };

	for (xmlNode *n = root->children; n != NULL; n = n->next) {
		size_t i;

		if (n->type != XML_ELEMENT_NODE) {
			check_text(ld, root, n);
			continue;	/* comments, processing instructions */
		}
		for (i = 0; i < nitems(elems); i++)
			if (strcmp((const char *)n->name, elems[i].name) == 0)
				break;
		if (i == nitems(elems)) {
			inv_error(ld, xml_line(n), "unknown element <%s>", (const char *)n->name);
			continue;
		}
		check_empty(ld, n);
		elems[i].fn(ld, n, &st);
	}
}

/* Parse and validate path.  Returns the inventory (free with
 * inventory_free) or NULL with every problem in err. */
struct inventory *
inventory_load(const char *path, char *err, size_t errlen)
{
	struct invload ld = { .path = path };
	xmlDocPtr doc;
	xmlNode *root;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	ld.inv = xcalloc(1, sizeof(*ld.inv));
	ld.inv->path = xstrdup(path);
	ld.inv->port = KNOB_DEFAULT_PORT;
	ld.dir = dir_of(path);
	doc = inv_parse(&ld);
	/* recoverable parser errors are still errors */
	if (doc != NULL && ld.nerr == 0 && (root = inv_root(&ld, doc)) != NULL) {
		inv_elements(&ld, root);
		check_nodes(&ld);
		check_groups(&ld);
	}
	if (doc != NULL)
		xmlFreeDoc(doc);
	free(ld.dir);
	free(ld.node_line);
	free(ld.group_line);
	if (ld.nerr > 0) {
		flush_errors(&ld, err, errlen);
		inventory_free(ld.inv);
		return NULL;
	}
	return ld.inv;
}

/* Free inv and everything it owns; NULL is fine. */
void
inventory_free(struct inventory *inv)
{
	if (inv == NULL)
		return;
	for (size_t i = 0; i < inv->nnodes; i++) {
		free(inv->nodes[i].name);
		free(inv->nodes[i].addr);
	}
	free(inv->nodes);
	for (size_t i = 0; i < inv->ngroups; i++) {
		free(inv->groups[i].name);
		strvec_free(&inv->groups[i].members);
	}
	free(inv->groups);
	free(inv->path);
	free(inv->ca);
	free(inv->cert);
	free(inv->key);
	free(inv->db);
	free(inv);
}

/* The built-in @all (unless the inventory defines its own): every group
 * and every <node> of the inventory. */
static void
group_all(const struct inventory *inv, struct strvec *out)
{
	for (size_t i = 0; i < inv->ngroups; i++)
		strvec_push_owned(out, xasprintf("@%s", inv->groups[i].name));
	for (size_t i = 0; i < inv->nnodes; i++)
		strvec_push(out, inv->nodes[i].name);
}

/* nodeset_group_fn: push the member expressions of group; -1 if unknown. */
int
inventory_group_fn(void *arg, const char *group, struct strvec *out)
{
	const struct inventory *inv = arg;

	if (inv == NULL)
		return -1;
	for (size_t i = 0; i < inv->ngroups; i++) {
		if (strcmp(inv->groups[i].name, group) != 0)
			continue;
		for (size_t j = 0; j < inv->groups[i].members.n; j++)
			strvec_push(out, inv->groups[i].members.v[j]);
		return 0;
	}
	if (strcmp(group, "all") == 0) {
		group_all(inv, out);
		return 0;
	}
	return -1;
}

/* bsearch: node name against an inv_node. */
static int
target_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct inv_node *)elem)->name);
}

/* Address and port for node: its <node> overrides, else the name and the
 * inventory port.  *addr points into inv or at node. */
void
inventory_target(const struct inventory *inv, const char *node, const char **addr, int *port)
{
	const struct inv_node *in = NULL;

	*addr = node;
	*port = KNOB_DEFAULT_PORT;
	if (inv == NULL)
		return;
	if (inv->port > 0)
		*port = inv->port;
	if (inv->nnodes > 0)
		in = bsearch(node, inv->nodes, inv->nnodes, sizeof(*inv->nodes), target_cmp);
	if (in == NULL)
		return;
	if (in->addr != NULL)
		*addr = in->addr;
	if (in->port > 0)
		*port = in->port;
}
