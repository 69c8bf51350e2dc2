/* Fleet output: folded text, summary line, exit status and JSON.
 *
 * Folding: every node gets a text; nodes with identical text print once
 * under their folded node set, in the order their first node appears in
 * the target list:
 *
 *   node[01-03] (3): pong (knobd 0.1.0)        one-line text
 *   node[05-06] (2):                           several lines, indented
 *       line 1
 *       line 2
 *   node07: unreachable: connect: Connection refused
 *
 * The text of a node is:
 *   - timeout, unreachable, auth-failed, pending: "STATUS: DETAIL" (the
 *     render callback is not asked: there is no reply to render);
 *   - failed: "failed: DETAIL" followed by the render text, if any;
 *   - anything else: the render text; when render returns NULL,
 *     "STATUS" or "STATUS: DETAIL".
 * So failures group by their cause.  The summary line follows:
 *   "16 ok, 1 unreachable (node007)"
 * listing, for every status other than ok, the folded nodes. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knobctl.h"
#include "log.h"
#include "nodeset.h"
#include "util.h"
#include "visible.h"

static const char *const status_names[NS__COUNT] = {
	[NS_PENDING] = "pending",
	[NS_OK] = "ok",
	[NS_CHANGED] = "changed",
	[NS_WOULD_CHANGE] = "would-change",
	[NS_DRIFT] = "drift",
	[NS_DEGRADED] = "degraded",
	[NS_FAILED] = "failed",
	[NS_TIMEOUT] = "timeout",
	[NS_UNREACHABLE] = "unreachable",
	[NS_AUTH_FAILED] = "auth-failed",
	[NS_SKIPPED] = "skipped",
	[NS_UNSUPPORTED] = "unsupported",
	[NS_BUSY] = "busy",
};

/* Statuses that make the exit status 1 (a node never finished counts). */
static const int status_error[NS__COUNT] = {
	[NS_PENDING] = 1,
	[NS_DRIFT] = 1,
	[NS_DEGRADED] = 1,
	[NS_FAILED] = 1,
	[NS_TIMEOUT] = 1,
	[NS_UNREACHABLE] = 1,
	[NS_AUTH_FAILED] = 1,
	[NS_SKIPPED] = 1,
	[NS_UNSUPPORTED] = 1,
	[NS_BUSY] = 1,
};

/* Statuses where the node has no reply to render. */
static const int status_transport[NS__COUNT] = {
	[NS_PENDING] = 1,
	[NS_TIMEOUT] = 1,
	[NS_UNREACHABLE] = 1,
	[NS_AUTH_FAILED] = 1,
};

/* "ok", "unreachable", ...; "unknown" outside the enum. */
const char *
node_status_name(int st)
{
	if (st < 0 || st >= NS__COUNT)
		return "unknown";
	return status_names[st];
}

/* The status named s ("ok", "unsupported", ...), -1 for no such name. */
int
node_status_by_name(const char *s)
{
	for (int i = 0; i < NS__COUNT; i++)
		if (status_names[i] != NULL && strcmp(s, status_names[i]) == 0)
			return i;
	return -1;
}

/* 1 for statuses that make the exit status 1 (see status_error). */
int
node_status_is_error(int st)
{
	if (st < 0 || st >= NS__COUNT)
		return 1;
	return status_error[st];
}

/* Where output goes: ctl->out, else stdout. */
static FILE *
out_of(const struct ctl *ctl)
{
	return (ctl != NULL && ctl->out != NULL) ? ctl->out : stdout;
}

/* The errno of standard output's first failed write: the stream keeps
 * only its error flag, and errno is gone by the end of the command. */
static int stdout_errno;

/* Keep errno when f is standard output and has just met its first error
 * (the caller cleared errno before writing). */
static void
note_error(FILE *f)
{
	if (f == stdout && ferror(f) && stdout_errno == 0 && errno != 0)
		stdout_errno = errno;
}

/* fprintf to f, keeping standard output's first write error. */
static void out_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void
out_printf(FILE *f, const char *fmt, ...)
{
	va_list ap;

	errno = 0;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	note_error(f);
}

void
output_flush(FILE *f)
{
	errno = 0;
	fflush(f);
	note_error(f);
}

int
output_stdout_errno(void)
{
	return stdout_errno;
}

/* The folding text of node n (see the top of the file); malloc'd, with
 * trailing newlines removed. */
static char *
node_text(struct fanout *fo, struct fo_node *n, render_fn render, void *arg)
{
	int st = (n->status >= 0 && n->status < NS__COUNT) ? n->status : NS_FAILED;
	const char *name = node_status_name(n->status);
	const char *detail = (n->detail != NULL && n->detail[0] != '\0') ? n->detail : NULL;
	char *r = NULL, *text;
	size_t l;

	if (!status_transport[st] && render != NULL)
		r = render(fo, n, arg);
	if (r != NULL) {
		l = strlen(r);
		while (l > 0 && r[l - 1] == '\n')
			r[--l] = '\0';
	}
	if (st == NS_FAILED || status_transport[st] || r == NULL) {
		if (detail != NULL)
			text = xasprintf("%s: %s%s%s", name, detail, r ? "\n" : "", r ? r : "");
		else
			text = xasprintf("%s%s%s", name, r ? "\n" : "", r ? r : "");
		free(r);
		return text;
	}
	return r;
}

/* A group of nodes with the same text, in the order of its first node;
 * its nodes are chained through output_folded's next[]. */
struct fgroup {
	char *text;
	uint64_t hash;
	size_t first, last;	/* node indexes */
	size_t count;
};

/* The group holding text (open addressing over slot[], mask+1 slots of
 * 1 + group index), made when new: then 1 is returned and the group owns
 * text, else 0 and the caller frees it. */
static int
group_of(struct fgroup *groups, size_t *ng, size_t *slot, size_t mask, char *text, size_t *gi)
{
	uint64_t h = str_hash(text);
	size_t i;

	for (i = h & mask; slot[i] != 0; i = (i + 1) & mask) {
		struct fgroup *g = &groups[slot[i] - 1];

		if (g->hash == h && strcmp(g->text, text) == 0) {
			*gi = slot[i] - 1;
			return 0;
		}
	}
	*gi = (*ng)++;
	slot[i] = *gi + 1;
	groups[*gi] = (struct fgroup){ text, h, 0, 0, 0 };
	return 1;
}

/* Each line of text, indented by 4. */
static void
print_lines(FILE *f, const char *text)
{
	for (const char *p = text; *p != '\0';) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		out_printf(f, "    %.*s\n", (int)l, p);
		p += l;
		if (*p == '\n')
			p++;
	}
}

/* Print one group: header with the folded node set, then the text, raw
 * as a node said it: made visible here (visible.h), its lines kept, so a
 * node's fact or error cannot write to the terminal. */
static void
print_group(FILE *f, const char *set, size_t count, const char *raw)
{
	char *text = str_visible_dup(raw, VIS_KEEP_NL);
	const char *nl = strchr(text, '\n');

	if (count > 1)
		out_printf(f, "%s (%zu)", set, count);
	else
		out_printf(f, "%s", set);
	if (*text == '\0')
		out_printf(f, "\n");
	else if (nl == NULL)
		out_printf(f, ": %s\n", text);
	else {
		out_printf(f, ":\n");
		print_lines(f, text);
	}
	free(text);
}

/* Print nodes with identical text once under their folded set, groups
 * in the order of their first node and nodes in target order: texts are
 * grouped through a hash table as they are rendered (a duplicate is freed
 * at once), so this is O(n) for any fleet size. */
void
output_folded(struct ctl *ctl, struct fanout *fo, render_fn render, void *arg)
{
	FILE *f = out_of(ctl);
	struct fgroup *groups;
	size_t *slot, *next, mask = 1, ng = 0;
	char **names;

	if (fo->n == 0)
		return;
	while (mask < 2 * fo->n)
		mask <<= 1;
	slot = xcalloc(mask--, sizeof(*slot));
	groups = xmalloc(fo->n * sizeof(*groups));
	next = xmalloc(fo->n * sizeof(*next));
	names = xmalloc((fo->n + 1) * sizeof(*names));
	for (size_t i = 0; i < fo->n; i++) {
		char *text = node_text(fo, &fo->nodes[i], render, arg);
		size_t gi;

		if (group_of(groups, &ng, slot, mask, text, &gi))
			groups[gi].first = i;
		else {
			free(text);
			next[groups[gi].last] = i;
		}
		groups[gi].last = i;
		groups[gi].count++;
	}
	for (size_t g = 0; g < ng; g++) {
		size_t k = 0;
		char *set;

		for (size_t i = groups[g].first; k < groups[g].count; i = next[i])
			names[k++] = fo->nodes[i].name;
		set = nodeset_fold(names, groups[g].count);
		print_group(f, set, groups[g].count, groups[g].text);
		free(set);
		free(groups[g].text);
	}
	output_flush(f);
	free(slot);
	free(groups);
	free(next);
	free(names);
}

/* Build the summary line "16 ok, 1 unreachable (node007)"; malloc'd. */
static char *
summary_text(const struct fanout *fo)
{
	size_t count[NS__COUNT] = { 0 };
	char **names = xmalloc((fo->n + 1) * sizeof(*names));
	char *s = xstrdup(""), *t;

	for (size_t i = 0; i < fo->n; i++) {
		int st = fo->nodes[i].status;
		count[(st >= 0 && st < NS__COUNT) ? st : NS_FAILED]++;
	}
	if (fo->n == 0) {
		free(s);
		free(names);
		return xstrdup("0 nodes");
	}
	for (int st = NS_OK; st <= NS__COUNT; st++) {
		int real = st == NS__COUNT ? NS_PENDING : st;	/* pending last */
		size_t k = 0;
		char *set = NULL;

		if (count[real] == 0)
			continue;
		if (real != NS_OK) {
			for (size_t i = 0; i < fo->n; i++) {
				int ns = fo->nodes[i].status;
				if (((ns >= 0 && ns < NS__COUNT) ? ns : NS_FAILED) == real)
					names[k++] = fo->nodes[i].name;
			}
			set = nodeset_fold(names, k);
		}
		t = xasprintf("%s%s%zu %s%s%s%s", s, *s ? ", " : "", count[real],
		    node_status_name(real), set ? " (" : "", set ? set : "", set ? ")" : "");
		free(s);
		free(set);
		s = t;
	}
	free(names);
	return s;
}

/* Print the summary line on ctl->out. */
void
output_summary(struct ctl *ctl, struct fanout *fo)
{
	FILE *f = out_of(ctl);
	char *s = summary_text(fo);

	out_printf(f, "%s\n", s);
	output_flush(f);
	free(s);
}

/* 0 when every node is ok, changed or would-change; else 1. */
int
output_exit_status(struct fanout *fo)
{
	for (size_t i = 0; i < fo->n; i++)
		if (node_status_is_error(fo->nodes[i].status))
			return 1;
	return 0;
}

/* One JSON document with every node's record and the status counts. */
void
output_json(struct ctl *ctl, struct fanout *fo, json_fn extra, void *arg)
{
	FILE *f = out_of(ctl);
	json_object *doc = json_object_new_object();
	json_object *nodes = json_object_new_array();
	json_object *summary = json_object_new_object();
	size_t count[NS__COUNT] = { 0 };

	for (size_t i = 0; i < fo->n; i++) {
		struct fo_node *n = &fo->nodes[i];
		json_object *rec = json_object_new_object(), *x;
		int st = (n->status >= 0 && n->status < NS__COUNT) ? n->status : NS_FAILED;

		count[st]++;
		json_object_object_add(rec, "node", json_object_new_string(n->name));
		json_object_object_add(rec, "status", json_object_new_string(node_status_name(st)));
		json_object_object_add(rec, "detail",
		    n->detail ? json_object_new_string(n->detail) : NULL);
		x = extra ? extra(fo, n, arg) : NULL;
		if (x != NULL && json_object_is_type(x, json_type_object)) {
			json_object_object_foreach(x, key, val) {
				if (strcmp(key, "node") != 0 && strcmp(key, "status") != 0)
					json_object_object_add(rec, key, json_object_get(val));
			}
			json_object_put(x);
		} else if (x != NULL)
			json_object_object_add(rec, "result", x);
		json_object_array_add(nodes, rec);
	}
	for (int st = 0; st < NS__COUNT; st++)
		if (count[st] > 0)
			json_object_object_add(summary, node_status_name(st),
			    json_object_new_int64((int64_t)count[st]));
	json_object_object_add(doc, "nodes", nodes);
	json_object_object_add(doc, "summary", summary);
	json_object_object_add(doc, "exit_status", json_object_new_int(output_exit_status(fo)));
	output_doc(f, doc);
}

void
output_text(FILE *f, json_object *o, int spaced)
{
	char *text = json_text_visible(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
	    (spaced ? JSON_C_TO_STRING_SPACED : 0) | JSON_C_TO_STRING_NOSLASHESCAPE));

	out_printf(f, "%s\n", text);
	free(text);
	output_flush(f);
}

void
output_doc(FILE *f, json_object *doc)
{
	output_text(f, doc, 1);
	json_object_put(doc);
}

const Knob__Envelope *
output_answer(const struct fo_node *n, int body)
{
	if (n->status != NS_OK || n->reply == NULL || (int)n->reply->body_case != body)
		return NULL;
	return n->reply;
}

int
output_request(struct ctl *ctl, int argc, char **argv, const Knob__Envelope *req,
    render_fn render, json_fn json)
{
	struct strvec names = { 0 };
	struct fanout fo;
	int rc = 2;

	if (opt_operands(ctl, argc, argv, 0, 0) < 0 || ctl_targets(ctl, &names) < 0) {
		strvec_free(&names);
		return 2;
	}
	fanout_init(&fo, ctl, &names);
	if (fanout_request(&fo, req) < 0)
		goto out;
	if (ctl->json)
		output_json(ctl, &fo, json, NULL);
	else {
		output_folded(ctl, &fo, render, NULL);
		output_summary(ctl, &fo);
	}
	rc = output_exit_status(&fo);
out:
	fanout_free(&fo);
	strvec_free(&names);
	return rc;
}
