/* Unit tests for fleet output: folding of identical results under their
 * node set, failures grouped by cause, the summary line, the exit status
 * of every status, and --json (parsed back with json-c); the rule that
 * makes control characters visible, and a node's text printed with them
 * escaped.  The struct
 * fanout and its nodes are built by hand; no network. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "knobctl.h"
#include "log.h"
#include "util.h"
#include "visible.h"

struct fx {
	struct ctl ctl;
	struct fanout fo;
	char *buf;
	size_t len;
};

/* A fanout of n nodes named prefix + 1-based number padded to width, all ok. */
static void
fx_init(struct fx *x, size_t n, const char *prefix, int width)
{
	memset(x, 0, sizeof(*x));
	x->ctl.out = open_memstream(&x->buf, &x->len);
	ck_assert_ptr_nonnull(x->ctl.out);
	x->fo.ctl = &x->ctl;
	x->fo.n = n;
	x->fo.nodes = xcalloc(n ? n : 1, sizeof(*x->fo.nodes));
	for (size_t i = 0; i < n; i++) {
		x->fo.nodes[i].name = xasprintf("%s%0*zu", prefix, width, i + 1);
		x->fo.nodes[i].idx = i;
		x->fo.nodes[i].status = NS_OK;
		x->fo.nodes[i].fd = -1;
	}
}

static void
set_status(struct fx *x, size_t i, int st, const char *detail)
{
	x->fo.nodes[i].status = st;
	free(x->fo.nodes[i].detail);
	x->fo.nodes[i].detail = detail ? xstrdup(detail) : NULL;
}

/* Everything printed so far (the stream is flushed). */
static const char *
fx_text(struct fx *x)
{
	fflush(x->ctl.out);
	return x->buf ? x->buf : "";
}

static void
fx_free(struct fx *x)
{
	fclose(x->ctl.out);
	free(x->buf);
	for (size_t i = 0; i < x->fo.n; i++) {
		free(x->fo.nodes[i].name);
		free(x->fo.nodes[i].detail);
	}
	free(x->fo.nodes);
}

/* Render: the text stored in user (NULL: nothing to render). */
static char *
render_user(struct fanout *fo, struct fo_node *n, void *arg)
{
	int *calls = arg;

	(void)fo;
	if (calls)
		(*calls)++;
	return n->user ? xstrdup(n->user) : NULL;
}

START_TEST(folded_groups)
{
	struct fx x;
	int calls = 0;
	static const char want[] =
	    "node[001-003,006] (4): pong (knobd 0.1.0)\n"
	    "node004: pong (knobd 0.0.9)\n"
	    "node[005,007] (2): unreachable: connect: Connection refused\n"
	    "node008: timeout: no reply in 5.0 s\n";

	fx_init(&x, 8, "node", 3);
	for (size_t i = 0; i < 8; i++)
		x.fo.nodes[i].user = (void *)(uintptr_t)"pong (knobd 0.1.0)\n";
	x.fo.nodes[3].user = (void *)(uintptr_t)"pong (knobd 0.0.9)";
	set_status(&x, 4, NS_UNREACHABLE, "connect: Connection refused");
	set_status(&x, 6, NS_UNREACHABLE, "connect: Connection refused");
	set_status(&x, 7, NS_TIMEOUT, "no reply in 5.0 s");
	output_folded(&x.ctl, &x.fo, render_user, &calls);
	ck_assert_str_eq(fx_text(&x), want);
	/* render is not asked for nodes that never answered */
	ck_assert_int_eq(calls, 5);
	fx_free(&x);
}
END_TEST


/* The one rule for strings printed for people (common/visible.h): C0
 * controls (tab and line feed too, unless kept) and DEL as \xNN, C1
 * controls (U+0080..U+009F) as \u00NN, bytes that are not UTF-8 as \xNN,
 * bidi controls, line separators and invisible format characters as
 * \uNNNN (\UNNNNNNNN above the BMP); printable ASCII, a backslash and
 * other UTF-8 pass; escaping twice changes nothing. */
START_TEST(visible_rules)
{
	static const struct { const char *in, *out, *kept; } c[] = {
		{ "\x1b]0;owned\x07", "\\x1b]0;owned\\x07", NULL },
		{ "a\tb\r\nc\x7f\x01", "a\\x09b\\x0d\\x0ac\\x7f\\x01", "a\\x09b\\x0d\nc\\x7f\\x01" },
		{ "csi \xc2\x9b" "2J, nel \xc2\x85", "csi \\u009b2J, nel \\u0085", NULL },
		{ "lone \x9b" "2J \xff \xc3", "lone \\x9b2J \\xff \\xc3", NULL },
		{ "overlong \xc0\x9b, surrogate \xed\xa0\x80", "overlong \\xc0\\x9b, surrogate "
		    "\\xed\\xa0\\x80", NULL },
		/* Trojan Source: RLO ... PDF makes "/scratch/gpfs" read backwards;
		 * LRI/PDI isolates; LRM, RLM, the Arabic letter mark */
		{ "mnt \xe2\x80\xae" "sfpg/\xe2\x80\xac \xe2\x81\xa6x\xe2\x81\xa9 \xe2\x80\x8e\xe2\x80\x8f\xd8\x9c",
		    "mnt \\u202esfpg/\\u202c \\u2066x\\u2069 \\u200e\\u200f\\u061c", NULL },
		/* LS and PS end a line in some terminals and pagers */
		{ "a\xe2\x80\xa8" "b\xe2\x80\xa9" "c", "a\\u2028b\\u2029c", NULL },
		/* invisible: n\u200b01 looks like n01; BOM, soft hyphen, word
		 * joiner, a tag character hiding an 'A' */
		{ "n\xe2\x80\x8b" "01 \xef\xbb\xbf\xc2\xad\xe2\x81\xa0\xf3\xa0\x81\x81",
		    "n\\u200b01 \\ufeff\\u00ad\\u2060\\U000e0041", NULL },
		/* neighbours of those ranges are printable: passed */
		{ "\xe2\x80\x90 \xe2\x80\xaf \xe2\x81\xa5 \xef\xbb\xbe \xf3\xa0\x82\x80",
		    "\xe2\x80\x90 \xe2\x80\xaf \xe2\x81\xa5 \xef\xbb\xbe \xf3\xa0\x82\x80", NULL },
		{ "1.2 \xc2\xb1 0.1 \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5 C:\\x1b",
		    "1.2 \xc2\xb1 0.1 \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5 C:\\x1b", NULL },
	};

	for (size_t i = 0; i < nitems(c); i++) {
		char *v = str_visible_dup(c[i].in, 0), *again = str_visible_dup(v, 0);
		char *k = str_visible_dup(c[i].in, VIS_KEEP_NL);

		ck_assert_str_eq(v, c[i].out);
		ck_assert_str_eq(again, v);
		ck_assert_str_eq(k, c[i].kept ? c[i].kept : c[i].out);
		ck_assert_uint_le(strlen(v) + 1, VIS_SIZE(strlen(c[i].in)));
		free(v);
		free(again);
		free(k);
	}
}
END_TEST

/* A signed number that rounds to zero has no sign: a clock offset of
 * -0.0001 s is "0.000", not "-0.000". */
START_TEST(signed_zero)
{
	static const struct { double v; int prec; const char *want; } c[] = {
		{ -0.0001, 3, "0.000" }, { 0.0004, 3, "0.000" }, { 0.0, 3, "0.000" },
		{ -0.0, 1, "0.0" }, { -0.0005001, 3, "-0.001" }, { 0.0015, 3, "+0.002" },
		{ -30.25, 2, "-30.25" }, { 12.0, 0, "+12" }, { -0.4, 0, "0" },
	};
	char buf[32];

	for (size_t i = 0; i < nitems(c); i++)
		ck_assert_str_eq(signed_fmt(buf, sizeof(buf), c[i].v, c[i].prec), c[i].want);
}
END_TEST

/* A node's text (its facts, its error) reaches the terminal with its
 * control characters escaped, its lines kept: a kernel release holding
 * "ESC[2J" cleared the screen, one holding "ESC[1A" went back over the
 * line above it, a CR hid what came before it, and a right-to-left
 * override (U+202E) in a path reversed the rest of the line. */
START_TEST(folded_controls)
{
	struct fx x;

	fx_init(&x, 2, "n", 0);
	x.fo.nodes[0].user = (void *)(uintptr_t)"kernel: 6.1\x1b[2J\x1b[1A\nos: debian\rforged "
	    "\xc2\x9b" "31m\n";
	set_status(&x, 1, NS_FAILED, "open: \x1b]0;title\x07 /mnt/\xe2\x80\xae" "ko\xe2\x80\xac");
	output_folded(&x.ctl, &x.fo, render_user, NULL);
	ck_assert_str_eq(fx_text(&x), "n1:\n    kernel: 6.1\\x1b[2J\\x1b[1A\n"
	    "    os: debian\\x0dforged \\u009b31m\nn2: failed: open: \\x1b]0;title\\x07 "
	    "/mnt/\\u202eko\\u202c\n");
	fx_free(&x);
}
END_TEST

/* Multi-line text is indented under the header; failed nodes show the
 * status and detail above their rendered text; NULL render falls back to
 * the status. */
START_TEST(folded_multiline)
{
	struct fx x;
	static const char want[] =
	    "n[1-2] (2):\n"
	    "    cpu: x\n"
	    "    mem: 4 GiB\n"
	    "n3:\n"
	    "    failed: write vm.dirty_ratio: Permission denied\n"
	    "    vm.dirty_ratio 20 -> 10\n"
	    "n4: changed\n"
	    "n[5-6] (2): auth-failed: certificate names node99, not n5\n";

	fx_init(&x, 6, "n", 0);
	x.fo.nodes[0].user = x.fo.nodes[1].user = (void *)(uintptr_t)"cpu: x\nmem: 4 GiB\n";
	x.fo.nodes[2].user = (void *)(uintptr_t)"vm.dirty_ratio 20 -> 10";
	set_status(&x, 2, NS_FAILED, "write vm.dirty_ratio: Permission denied");
	set_status(&x, 3, NS_CHANGED, NULL);
	/* same text even though the real names differ: grouped by text */
	set_status(&x, 4, NS_AUTH_FAILED, "certificate names node99, not n5");
	set_status(&x, 5, NS_AUTH_FAILED, "certificate names node99, not n5");
	output_folded(&x.ctl, &x.fo, render_user, NULL);
	ck_assert_str_eq(fx_text(&x), want);
	fx_free(&x);
}
END_TEST

START_TEST(summary_line)
{
	struct fx x;

	fx_init(&x, 17, "node", 3);
	set_status(&x, 6, NS_UNREACHABLE, "connect: Connection refused");
	output_summary(&x.ctl, &x.fo);
	ck_assert_str_eq(fx_text(&x), "16 ok, 1 unreachable (node007)\n");
	fx_free(&x);

	fx_init(&x, 10, "n", 0);
	set_status(&x, 2, NS_CHANGED, NULL);
	set_status(&x, 3, NS_FAILED, "x");
	set_status(&x, 4, NS_FAILED, "y");
	set_status(&x, 5, NS_DRIFT, NULL);
	set_status(&x, 6, NS_TIMEOUT, NULL);
	set_status(&x, 7, NS_AUTH_FAILED, NULL);
	set_status(&x, 8, NS_WOULD_CHANGE, NULL);
	set_status(&x, 9, NS_PENDING, NULL);
	output_summary(&x.ctl, &x.fo);
	ck_assert_str_eq(fx_text(&x), "2 ok, 1 changed (n3), 1 would-change (n9), 1 drift (n6), "
	    "2 failed (n[4-5]), 1 timeout (n7), 1 auth-failed (n8), 1 pending (n10)\n");
	fx_free(&x);

	fx_init(&x, 0, "n", 0);
	output_summary(&x.ctl, &x.fo);
	ck_assert_str_eq(fx_text(&x), "0 nodes\n");
	fx_free(&x);
}
END_TEST

START_TEST(exit_status)
{
	static const struct { int st, want, err; const char *name; } t[] = {
		{ NS_OK, 0, 0, "ok" },
		{ NS_CHANGED, 0, 0, "changed" },
		{ NS_WOULD_CHANGE, 0, 0, "would-change" },
		{ NS_DRIFT, 1, 1, "drift" },
		{ NS_DEGRADED, 1, 1, "degraded" },
		{ NS_FAILED, 1, 1, "failed" },
		{ NS_TIMEOUT, 1, 1, "timeout" },
		{ NS_UNREACHABLE, 1, 1, "unreachable" },
		{ NS_AUTH_FAILED, 1, 1, "auth-failed" },
		{ NS_PENDING, 1, 1, "pending" },
	};

	for (size_t i = 0; i < nitems(t); i++) {
		struct fx x;

		ck_assert_str_eq(node_status_name(t[i].st), t[i].name);
		ck_assert_int_eq(node_status_is_error(t[i].st), t[i].err);
		fx_init(&x, 5, "n", 0);
		ck_assert_int_eq(output_exit_status(&x.fo), 0);
		set_status(&x, 3, t[i].st, NULL);
		ck_assert_msg(output_exit_status(&x.fo) == t[i].want, "status %s", t[i].name);
		fx_free(&x);
	}
	ck_assert_str_eq(node_status_name(-1), "unknown");
	ck_assert_str_eq(node_status_name(NS__COUNT), "unknown");
}
END_TEST

/* Extra per-node JSON: the node's index, plus a nested object. */
static json_object *
json_extra(struct fanout *fo, struct fo_node *n, void *arg)
{
	json_object *o;

	(void)fo;
	(void)arg;
	if (n->status != NS_OK)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "index", json_object_new_int((int)n->idx));
	json_object_object_add(o, "facts", json_object_new_object());
	json_object_object_add(o, "status", json_object_new_string("spoofed"));
	return o;
}

/* RLO, NEL (C1) and a tag character: raw in JSON, json-c's output, they
 * act on a terminal; the euro sign stays as it is; a lone 0x9b (CSI in
 * an 8-bit locale), which no JSON string can hold, is U+FFFD */
#define DETAIL_HIDDEN "\xe2\x80\xae\xc2\x85\xf3\xa0\x81\x81\xe2\x82\xac\x9b"

START_TEST(json_document)
{
	struct fx x;
	json_object *doc, *nodes, *summary, *rec, *v;

	fx_init(&x, 4, "node", 2);
	set_status(&x, 2, NS_UNREACHABLE, "connect: \"quoted\" \\ and\nnewline " DETAIL_HIDDEN);
	output_json(&x.ctl, &x.fo, json_extra, NULL);
	doc = json_tokener_parse(fx_text(&x));
	ck_assert_msg(doc != NULL, "not JSON: %s", fx_text(&x));
	/* the same strings to a parser, escaped on a terminal */
	ck_assert_msg(strstr(fx_text(&x), "newline \\u202e\\u0085\\udb40\\udc41\xe2\x82\xac\\ufffd\"") != NULL,
	    "%s", fx_text(&x));
	ck_assert_int_eq(json_object_object_get_ex(doc, "nodes", &nodes), 1);
	ck_assert_int_eq(json_object_array_length(nodes), 4);
	for (size_t i = 0; i < 4; i++) {
		char want[16];

		rec = json_object_array_get_idx(nodes, i);
		snprintf(want, sizeof(want), "node%02zu", i + 1);
		ck_assert_int_eq(json_object_object_get_ex(rec, "node", &v), 1);
		ck_assert_str_eq(json_object_get_string(v), want);
		ck_assert_int_eq(json_object_object_get_ex(rec, "status", &v), 1);
		ck_assert_str_eq(json_object_get_string(v), i == 2 ? "unreachable" : "ok");
		ck_assert_int_eq(json_object_object_get_ex(rec, "detail", &v), 1);
		if (i == 2) {
			ck_assert_str_eq(json_object_get_string(v), "connect: \"quoted\" \\ and\nnewline "
			    "\xe2\x80\xae\xc2\x85\xf3\xa0\x81\x81\xe2\x82\xac\xef\xbf\xbd");
			ck_assert_int_eq(json_object_object_get_ex(rec, "index", &v), 0);
		} else {
			ck_assert_ptr_null(v);	/* JSON null */
			ck_assert_int_eq(json_object_object_get_ex(rec, "index", &v), 1);
			ck_assert_int_eq(json_object_get_int(v), (int)i);
			ck_assert_int_eq(json_object_object_get_ex(rec, "facts", &v), 1);
			ck_assert_int_eq(json_object_is_type(v, json_type_object), 1);
		}
	}
	ck_assert_int_eq(json_object_object_get_ex(doc, "summary", &summary), 1);
	ck_assert_int_eq(json_object_object_length(summary), 2);
	ck_assert_int_eq(json_object_object_get_ex(summary, "ok", &v), 1);
	ck_assert_int_eq(json_object_get_int(v), 3);
	ck_assert_int_eq(json_object_object_get_ex(summary, "unreachable", &v), 1);
	ck_assert_int_eq(json_object_get_int(v), 1);
	ck_assert_int_eq(json_object_object_get_ex(doc, "exit_status", &v), 1);
	ck_assert_int_eq(json_object_get_int(v), 1);
	json_object_put(doc);
	fx_free(&x);

	/* no nodes, no extra: still one valid document */
	fx_init(&x, 0, "n", 0);
	output_json(&x.ctl, &x.fo, NULL, NULL);
	doc = json_tokener_parse(fx_text(&x));
	ck_assert_ptr_nonnull(doc);
	ck_assert_int_eq(json_object_object_get_ex(doc, "nodes", &nodes), 1);
	ck_assert_int_eq(json_object_array_length(nodes), 0);
	json_object_put(doc);
	fx_free(&x);
}
END_TEST

/* 10,000 nodes: a handful of distinct texts fold into a handful of lines. */
START_TEST(folded_large)
{
	struct fx x;
	const char *out;
	int lines = 0;

	fx_init(&x, 10000, "node", 5);
	for (size_t i = 0; i < 10000; i++)
		x.fo.nodes[i].user = (void *)(uintptr_t)(i % 1000 == 999 ? "old" : "new");
	set_status(&x, 4242, NS_UNREACHABLE, "connect: No route to host");
	output_folded(&x.ctl, &x.fo, render_user, NULL);
	output_summary(&x.ctl, &x.fo);
	out = fx_text(&x);
	for (const char *p = out; *p; p++)
		lines += *p == '\n';
	ck_assert_int_eq(lines, 4);
	ck_assert_ptr_nonnull(strstr(out, "node[00001-00999,01001-01999,02001-02999,03001-03999,"
	    "04001-04242,04244-04999,05001-05999,06001-06999,07001-07999,08001-08999,"
	    "09001-09999] (9989): new\n"));
	ck_assert_ptr_nonnull(strstr(out, "node[01000,02000,03000,04000,05000,06000,07000,08000,"
	    "09000,10000] (10): old\n"));
	ck_assert_ptr_nonnull(strstr(out, "node04243: unreachable: connect: No route to host\n"));
	ck_assert_ptr_nonnull(strstr(out, "9999 ok, 1 unreachable (node04243)\n"));
	fx_free(&x);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("output");
	TCase *tc = tcase_create("output");

	log_init("check_output", LOG_LVL_WARN);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, folded_groups);
	tcase_add_test(tc, folded_multiline);
	tcase_add_test(tc, visible_rules);
	tcase_add_test(tc, folded_controls);
	tcase_add_test(tc, signed_zero);
	tcase_add_test(tc, summary_line);
	tcase_add_test(tc, exit_status);
	tcase_add_test(tc, json_document);
	tcase_add_test(tc, folded_large);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
