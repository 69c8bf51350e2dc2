/* The HTML report in a real browser: two real agents (tests/harness.h)
 * run two sweeps with repeats (the second throttled on purpose), knobctl
 * report writes the page, and Debian's chromium renders it headless.  The
 * rendered DOM (--dump-dom, parsed with libxml2's HTML parser) must hold
 * one chart per workload with an axis path, one polyline per run, error
 * bars and a legend naming both runs, each name inside its chart (the
 * second run's is 60 characters long); the page must reference nothing
 * outside itself; the screenshot is kept in build/tests/report-browser/.
 * Its compare table, rendered the same way from runs stored in a database
 * of its own, shows a side whose figure stands on fewer repeats than it
 * ran ("2 of 3 repeats") and warns of a run that did not end ok. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <libxml/HTMLparser.h>
#include <libxml/xpath.h>

#include "testutil.h"
#include "harness.h"
#include "results.h"
#include "rundoc.h"
#include "util.h"

#define CHROMIUM "/usr/bin/chromium"
/* 60 characters: the legend shows 47 of them and an ellipsis */
#define LONG_LABEL "throttled-to-100-iops-on-purpose-so-the-verdicts-read-worse"
#define LONG_SHOWN "throttled-to-100-iops-on-purpose-so-the-verdict\u2026"
/* two runs' label: the legend cuts it before their run ids */
#define SAME "lustre-client-seq-stripe8-before-tuning"
#define SAME_SHOWN "lustre-client-seq-stripe\u2026"

/* Marks each legend name of the page with data-fits: "yes" when its box
 * lies inside its chart (the SVG's viewBox, drawn at its own size), else
 * "no: RIGHT > WIDTH" (the report itself has no script: a copy gets it). */
#define PROBE_JS "for (const t of document.querySelectorAll('g.legend text')) {" \
	"const s = t.ownerSVGElement, b = t.getBBox(), v = s.viewBox.baseVal;" \
	"t.setAttribute('data-fits', b.x >= 0 && b.x + b.width <= v.width &&" \
	" s.getBoundingClientRect().width == v.width ? 'yes' :" \
	" 'no: ' + (b.x + b.width) + ' > ' + v.width); }"

static struct harness h;
static char dir[PATH_MAX];	/* the compare case's */

static void
setup(void)
{
	ck_assert_msg(harness_start_with(&h, 2, "--test-hooks") == 0, "harness start failed");
}

static void
teardown(void)
{
	harness_stop(&h);
}

/* The page html with PROBE_JS at the end of its body, into probe. */
static void
write_probe(const char *html, const char *probe)
{
	char *page = NULL, *body;

	ck_assert_int_eq(read_file_bounded(html, 8 << 20, &page, NULL), 0);
	ck_assert_ptr_nonnull(body = strstr(page, "</body>"));
	cu_write(probe, 0644, "%.*s<script>%s</script>%s", (int)(body - page), page, PROBE_JS,
	    body);
	free(page);
}

/* Chromium's rendered DOM of the page file into dom, with a fresh
 * profile directory (profile); with shot, a screenshot of it (1400x2600)
 * too, from the same browser start (each start takes seconds). */
static void
dump_dom(const char *profile, const char *file, const char *dom, const char *shot)
{
	char *snap = shot ? xasprintf("--window-size=1400,2600 --screenshot=%s", shot) : NULL;

	ck_assert_int_eq(harness_sh(CHROMIUM " --headless --no-sandbox --disable-gpu "
	    "--disable-background-networking --disable-component-update --no-first-run "
	    "--user-data-dir=%s %s --dump-dom file://%s > %s 2>/dev/null", profile,
	    snap ? snap : "", file, dom), 0);
	free(snap);
}

/* Number of nodes xpath selects under ctx. */
static int
count(xmlXPathContextPtr xc, xmlNodePtr ctx, const char *xpath)
{
	xmlXPathObjectPtr r = xmlXPathNodeEval(ctx, (const xmlChar *)xpath, xc);
	int n = r && r->nodesetval ? r->nodesetval->nodeNr : 0;

	xmlXPathFreeObject(r);
	return n;
}

/* The text of every node xpath selects under ctx, joined. */
static char *
texts(xmlXPathContextPtr xc, xmlNodePtr ctx, const char *xpath)
{
	xmlXPathObjectPtr r = xmlXPathNodeEval(ctx, (const xmlChar *)xpath, xc);
	char *s = xstrdup("");

	for (int i = 0; r && r->nodesetval && i < r->nodesetval->nodeNr; i++) {
		xmlChar *t = xmlNodeGetContent(r->nodesetval->nodeTab[i]);

		str_appendf(&s, "%s|", t ? (const char *)t : "");
		xmlFree(t);
	}
	xmlXPathFreeObject(r);
	return s;
}

START_TEST(report_in_chromium)
{
	char data[PATH_MAX], outdir[PATH_MAX], html[PATH_MAX + 32], shot[PATH_MAX + 32];
	char dom[PATH_MAX + 32], profile[PATH_MAX + 32], probe[PATH_MAX + 32], *page = NULL;
	char *dump = NULL, *out = NULL;
	htmlDocPtr doc;
	xmlXPathContextPtr xc;
	xmlXPathObjectPtr charts;
	struct stat st;
	int rc;

	ck_assert_msg(access(CHROMIUM, X_OK) == 0, "%s is missing (make deps installs chromium)",
	    CHROMIUM);
	snprintf(data, sizeof(data), "%s/data", h.tmp);
	ck_assert_int_eq(mkdir(data, 0755), 0);
	rc = harness_knobctl(&h, &out, NULL, "bench seq -w @all --dir %s --threads 1..4 --repeat 2 "
	    "--size 1m --bs 64k --test-rate-iops 400 --label baseline", data);
	ck_assert_int_eq(rc, 0);
	free(out);
	rc = harness_knobctl(&h, &out, NULL, "bench seq -w @all --dir %s --threads 1..4 --repeat 2 "
	    "--size 1m --bs 64k --test-rate-iops 100 --label " LONG_LABEL, data);
	ck_assert_int_eq(rc, 0);
	free(out);

	snprintf(outdir, sizeof(outdir), "%s/tests/report-browser", h.bin);
	mkdir(outdir, 0755);
	snprintf(html, sizeof(html), "%s/report.html", outdir);
	snprintf(shot, sizeof(shot), "%s/report.png", outdir);
	snprintf(dom, sizeof(dom), "%s/report.dom.html", outdir);
	snprintf(probe, sizeof(probe), "%s/report.probe.html", outdir);
	/* a fresh profile directory for the browser start */
	snprintf(profile, sizeof(profile), "%s/chromium", h.tmp);
	unlink(shot);
	rc = harness_knobctl(&h, &out, NULL, "report latest~1 latest -o %s", html);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "written to"));
	free(out);
	/* self-contained: nothing to fetch */
	ck_assert_int_eq(read_file_bounded(html, 8 << 20, &page, NULL), 0);
	ck_assert_ptr_null(strstr(page, "http://"));
	ck_assert_ptr_null(strstr(page, "https://"));
	ck_assert_ptr_null(strstr(page, "<script"));
	ck_assert_ptr_null(strstr(page, "<link"));
	free(page);
	/* the DOM is dumped from a copy that measures the legend's names (its
	 * script only marks them: the screenshot shows the report as it is) */
	write_probe(html, probe);
	dump_dom(profile, probe, dom, shot);
	ck_assert_int_eq(stat(shot, &st), 0);
	ck_assert_int_gt(st.st_size, 10000);
	{
		char *png = NULL;

		ck_assert_int_eq(read_file_bounded(shot, 16 << 20, &png, NULL), 0);
		ck_assert_int_eq(memcmp(png, "\x89PNG\r\n\x1a\n", 8), 0);
		free(png);
	}

	ck_assert_int_eq(read_file_bounded(dom, 8 << 20, &dump, NULL), 0);
	doc = htmlReadMemory(dump, (int)strlen(dump), dom, "utf-8",
	    HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET);
	ck_assert_ptr_nonnull(doc);
	xc = xmlXPathNewContext(doc);
	/* seq = seq-write and seq-read: one chart each */
	charts = xmlXPathEvalExpression((const xmlChar *)"//figure[@class='chart']", xc);
	ck_assert_ptr_nonnull(charts);
	ck_assert_int_eq(charts->nodesetval ? charts->nodesetval->nodeNr : 0, 2);
	for (int i = 0; i < charts->nodesetval->nodeNr; i++) {
		xmlNodePtr c = charts->nodesetval->nodeTab[i];
		char *legend = texts(xc, c, ".//g[@class='legend']/text"), *cap;

		ck_assert_int_eq(count(xc, c, ".//svg"), 1);
		ck_assert_int_eq(count(xc, c, ".//path[@class='axis']"), 1);
		ck_assert_int_eq(count(xc, c, ".//polyline[@class='series']"), 2);
		/* three thread counts per run, each with its error bar */
		ck_assert_int_eq(count(xc, c, ".//g[@class='run']/circle"), 6);
		ck_assert_int_eq(count(xc, c, ".//path[@class='errbar']"), 6);
		/* every name inside its chart (before, the chart kept 720 px and
		 * cut the long name at its right edge), the long one cut, whole in
		 * its tooltip */
		cap = texts(xc, c, ".//g[@class='legend']/text/@data-fits");
		ck_assert_str_eq(cap, "yes|yes|");
		free(cap);
		ck_assert_str_eq(legend, "baseline|" LONG_SHOWN "|");
		cap = texts(xc, c, ".//g[@class='legend']/title");
		ck_assert_str_eq(cap, LONG_LABEL "|");
		free(cap);
		cap = texts(xc, c, ".//text[@class='xlabel']");
		ck_assert_ptr_nonnull(strstr(cap, "threads"));
		free(cap);
		cap = texts(xc, c, ".//text[@class='ylabel']");
		ck_assert_str_eq(cap, "MiB/s|");
		free(cap);
		free(legend);
	}
	xmlXPathFreeObject(charts);
	/* the tables: peak/sustained per run and workload, compare with verdicts */
	ck_assert_int_eq(count(xc, xmlDocGetRootElement(doc), "//table[@class='peaks']//tr"), 5);
	ck_assert_int_eq(count(xc, xmlDocGetRootElement(doc), "//table[@class='compare']//tr"), 7);
	{
		char *v = texts(xc, xmlDocGetRootElement(doc), "//td[@class='verdict']");

		ck_assert_msg(strstr(v, "worse") != NULL, "verdicts: %s", v);
		free(v);
	}
	ck_assert_int_eq(count(xc, xmlDocGetRootElement(doc), "//table[@class='facts']"), 2);
	xmlXPathFreeContext(xc);
	xmlFreeDoc(doc);
	free(dump);
	fprintf(stderr, "report screenshot: %s\n", shot);
}
END_TEST

static void
setup_dir(void)
{
	cu_subdir(dir, sizeof(dir), "cmp");
}

static void
teardown_dir(void)
{
	cu_rm_rf(dir);
}

/* Run id: rand-read at 4 threads on node[01-02], one repeat per status in
 * st[0..3) on 1 node and one on 2 nodes (a point of its own), and with b
 * a point at 8 threads too; ended status. */
static json_object *
rr_run(const char *id, int64_t t, const char *const *st, const char *status, int b)
{
	json_object *d = json_object_new_object(), *ph = json_object_new_array();

	json_object_object_add(d, "run_id", json_object_new_string(id));
	json_object_object_add(d, "started_ns", json_object_new_int64(t));
	json_object_object_add(d, "nodeset", json_object_new_string("node[01-02]"));
	json_object_object_add(d, "command", json_object_new_string("knobctl bench rand-read"));
	json_object_object_add(d, "status", json_object_new_string(status));
	for (int i = 0; i < 4 + b; i++) {
		struct phase_rec r = {
			.phase_id = "x", .kind = "rand-read", .status = i < 3 ? st[i] : "ok",
			.unit = "B/s", .dir = "/mnt", .repeat = i < 3 ? i + 1 : 1,
			.threads = i < 4 ? 4 : 8, .nodes = i == 3 ? 2 : 1, .elapsed_s = 1,
			.ops_rate = 1000 + 10 * i + 200 * (t > 1), .block_size = 4096,
			.file_size = 1 << 26,
		};

		r.rate = r.ops_rate * 4096;
		json_object_array_add(ph, rundoc_phase_json(&r));
	}
	json_object_object_add(d, "phases", ph);
	return d;
}

/* runs[0..n) stored in dir/results.db; each put. */
static void
store_runs(json_object **runs, size_t n)
{
	char db[PATH_MAX + 16], err[256] = "";
	sqlite3 *sq;

	snprintf(db, sizeof(db), "%s/results.db", dir);
	ck_assert_msg((sq = results_open_path(db, err, sizeof(err))) != NULL, "%s", err);
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(results_store(sq, runs[i]), 0);
		json_object_put(runs[i]);
	}
	sqlite3_close(sq);
}

/* The DOM chromium renders of "knobctl report IDS" of the runs in
 * dir/results.db, measured by PROBE_JS when probe; free with xmlFreeDoc. */
static htmlDocPtr
report_dom(const char *ids, int probe)
{
	const char *bin = getenv("KNOB_BIN");
	char html[PATH_MAX + 16], pr[PATH_MAX + 16], dom[PATH_MAX + 16], prof[PATH_MAX + 16];
	char *out = NULL;
	htmlDocPtr doc;

	snprintf(html, sizeof(html), "%s/report.html", dir);
	snprintf(pr, sizeof(pr), "%s/probe.html", dir);
	snprintf(dom, sizeof(dom), "%s/report.dom.html", dir);
	snprintf(prof, sizeof(prof), "%s/chromium", dir);
	ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER KNOB_DB=%s/results.db %s/knobctl "
	    "report %s -o %s", dir, bin ? bin : "build", ids, html), 0);
	free(out);
	if (probe)
		write_probe(html, pr);
	dump_dom(prof, probe ? pr : html, dom, NULL);
	ck_assert_int_eq(read_file_bounded(dom, 8 << 20, &out, NULL), 0);
	doc = htmlReadMemory(out, (int)strlen(out), dom, "utf-8",
	    HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET);
	ck_assert_ptr_nonnull(doc);
	free(out);
	return doc;
}

/* The compare table of a report of A (3 repeats) and B (ended "failed",
 * repeat 2 of 3 failed), rendered in chromium: B's cell says "(2 of 3
 * repeats)", A's nothing, and a warning above the table names B's status.
 * Before, B's mean from 2 repeats stood as if all 3 had run.  Each row
 * says its node count (the points at 4 threads on 1 and on 2 nodes were
 * two rows alike), and the heading B's status, as the text compare's head
 * does (it named the runs alone); B's point at 8 threads, which A has not,
 * is listed under the table, as the text compare lists it (it was left
 * out with nothing said).  A third run, C, of another kind is said to be
 * compared with none (it was left out of the Compare section silently).
 * A and B have the same label: each goes by it and its run id, the label
 * cut in the legend before the id (both read alike in the heading and the
 * legend). */
START_TEST(compare_failed_repeats)
{
	static const char *const ok3[] = { "ok", "ok", "ok" }, *const one[] = { "ok", "failed",
	    "ok" };
	char *v;
	json_object *runs[] = { rr_run("20260111-000000-aaaa", 1, ok3, "ok", 0),
	    rr_run("20260111-000000-bbbb", 2, one, "failed", 1),
	    rr_run("20260111-000000-cccc", 3, ok3, "ok", 0) };
	htmlDocPtr doc;
	xmlXPathContextPtr xc;

	for (size_t i = 0; i < 2; i++)	/* A and B labelled alike */
		json_object_object_add(runs[i], "label", json_object_new_string(SAME));
	for (size_t i = 0; i < 4; i++)	/* C's one kind: nothing in common with A or B */
		json_object_object_add(json_object_array_get_idx(cu_get(runs[2], "phases"), i),
		    "kind", json_object_new_string("md-stat"));
	store_runs(runs, nitems(runs));
	doc = report_dom("20260111-000000-aaaa 20260111-000000-bbbb 20260111-000000-cccc", 0);
	xc = xmlXPathNewContext(doc);
	v = texts(xc, xmlDocGetRootElement(doc), "//table[@class='compare']//tr/td[3]");
	ck_assert_msg(strcmp(v, "1|2|") == 0, "nodes: %s", v);
	free(v);
	v = texts(xc, xmlDocGetRootElement(doc), "//table[@class='compare']//tr[2]/td[5]");
	ck_assert_msg(strcmp(v, "1010.0 ± 10.0|") == 0, "A: %s", v);
	free(v);
	v = texts(xc, xmlDocGetRootElement(doc), "//table[@class='compare']//tr[2]/td[6]");
	ck_assert_msg(strcmp(v, "1210.0 ± 14.1 (2 of 3 repeats)|") == 0, "B: %s", v);
	free(v);
	v = texts(xc, xmlDocGetRootElement(doc), "//h3[starts-with(., 'A = ')]");
	ck_assert_msg(strcmp(v, "A = " SAME " (20260111-000000-aaaa), B = " SAME
	    " (20260111-000000-bbbb) (status failed)|") == 0, "heading: %s", v);
	free(v);
	v = texts(xc, xmlDocGetRootElement(doc), "//p[@class='only']");
	ck_assert_msg(strcmp(v, "Only in B: rand-read, bs 4k, size 64m, 8 threads on 1 "
	    "node(s)|") == 0, "only in: %s", v);
	free(v);
	v = texts(xc, xmlDocGetRootElement(doc), "(//figure)[1]//g[@class='legend']/text");
	ck_assert_msg(strcmp(v, SAME_SHOWN " (20260111-000000-aaaa)|" SAME_SHOWN
	    " (20260111-000000-bbbb)|") == 0, "legend: %s", v);
	free(v);
	v = texts(xc, xmlDocGetRootElement(doc), "//p[@class='refused']");
	ck_assert_msg(strcmp(v, "Not compared: 20260111-000000-cccc has no point (kind and "
	    "thread count) in common with a run given before it.|") == 0, "C: %s", v);
	free(v);
	v = texts(xc, xmlDocGetRootElement(doc), "//p[@class='warning']");
	ck_assert_msg(strstr(v, "Warning: B (20260111-000000-bbbb) ended failed, not ok") &&
	    strstr(v, "Warning: A") == NULL, "warnings: %s", v);
	free(v);
	xmlXPathFreeContext(xc);
	xmlFreeDoc(doc);
}
END_TEST

/* Legend names of wide glyphs stay inside their chart, as chromium lays
 * them out: before, the width estimate took any character for 1.1 em, and
 * 40 "\u2031" (1.7 em each in DejaVu Sans) ran 300 px past the edge.  Two
 * runs sharing a point, each named by its label: one of per-ten-thousand
 * signs, one of CJK ideographs, fullwidth letters and emoji. */
START_TEST(wide_glyph_legend)
{
	static const char *const ok3[] = { "ok", "ok", "ok" };
	static const char *const label[] = {
		"\u2031\u2031\u2031\u2031\u2031\u2031\u2031\u2031\u2031\u2031"
		"\u2031\u2031\u2031\u2031\u2031\u2031\u2031\u2031\u2031\u2031"
		"\u2031\u2031\u2031\u2031\u2031\u2031\u2031\u2031\u2031\u2031"
		"\u2031\u2031\u2031\u2031\u2031\u2031\u2031\u2031\u2031\u2031",
		"\u6027\u80fd\u6d4b\u8bd5\uff46\uff55\uff4c\uff4c\U0001f600\U0001f680"
		"\u6027\u80fd\u6d4b\u8bd5\uff46\uff55\uff4c\uff4c\U0001f600\U0001f680",
	};
	json_object *runs[] = { rr_run("20260112-000000-aaaa", 1, ok3, "ok", 0),
	    rr_run("20260112-000000-bbbb", 2, ok3, "ok", 0) };
	htmlDocPtr doc;
	xmlXPathContextPtr xc;
	char *v;

	for (size_t i = 0; i < nitems(runs); i++)
		json_object_object_add(runs[i], "label", json_object_new_string(label[i]));
	store_runs(runs, nitems(runs));
	doc = report_dom("20260112-000000-aaaa 20260112-000000-bbbb", 1);
	xc = xmlXPathNewContext(doc);
	v = texts(xc, xmlDocGetRootElement(doc), "(//figure)[1]//g[@class='legend']/text");
	ck_assert_msg(strcmp(v, "") != 0 && strstr(v, label[0]) && strstr(v, label[1]),
	    "legend: %s", v);
	free(v);
	v = texts(xc, xmlDocGetRootElement(doc), "//g[@class='legend']/text/@data-fits");
	ck_assert_msg(strcmp(v, "yes|yes|") == 0, "fits: %s", v);
	free(v);
	xmlXPathFreeContext(xc);
	xmlFreeDoc(doc);
}
END_TEST

/* A run a signal stopped (stored "interrupted", 2 of 3 phases finished),
 * reported alone and first against a complete one, rendered in chromium:
 * a warning above the charts says it was interrupted and is not a
 * complete run, its peak rows say "(interrupted)", and the compare warns
 * of it.  Before, a report of it alone read as of a complete run: its
 * status stood only in the heading at the foot of the page. */
START_TEST(interrupted_run_said)
{
	static const char *const ok3[] = { "ok", "ok", "ok" };
	json_object *runs[] = { rr_run("20260113-000000-aaaa", 1, ok3, "interrupted", 0),
	    rr_run("20260113-000000-bbbb", 2, ok3, "ok", 0) }, *in = json_object_new_object();
	const char *want = "Warning: 20260113-000000-aaaa was interrupted (SIGINT in a phase): "
	    "not a complete run; its charts, peaks and compares hold only the 4 of 6 phase(s) it "
	    "finished.";
	htmlDocPtr doc;
	xmlXPathContextPtr xc;
	char *v;

	json_object_object_add(in, "signal", json_object_new_string("SIGINT"));
	json_object_object_add(in, "during", json_object_new_string("in a phase"));
	json_object_object_add(in, "phases_planned", json_object_new_int(6));
	json_object_object_add(runs[0], "interrupted", in);
	store_runs(runs, nitems(runs));
	for (int both = 0; both < 2; both++) {
		doc = report_dom(both ? "20260113-000000-aaaa 20260113-000000-bbbb" :
		    "20260113-000000-aaaa", 0);
		xc = xmlXPathNewContext(doc);
		v = texts(xc, xmlDocGetRootElement(doc), "//p[@class='warning interrupted']");
		ck_assert_msg(strncmp(v, want, strlen(want)) == 0 && strchr(v, '|') == v +
		    strlen(want), "warning: %s", v);
		free(v);
		v = texts(xc, xmlDocGetRootElement(doc), "//p[@class='warning interrupted']"
		    "/following::h2[1]");
		ck_assert_msg(strcmp(v, "Charts|") == 0, "the warning is not above the charts: %s", v);
		free(v);
		v = texts(xc, xmlDocGetRootElement(doc), "//table[@class='peaks']//tr/td[1]");
		ck_assert_msg(strstr(v, "20260113-000000-aaaa (interrupted)|") != NULL, "peaks: %s", v);
		free(v);
		v = texts(xc, xmlDocGetRootElement(doc), "//p[@class='warning']");
		ck_assert_msg(!both || strstr(v, "Warning: A (20260113-000000-aaaa) was interrupted "
		    "(a signal stopped it): only the phases it finished are compared"), "compare: %s",
		    v);
		free(v);
		xmlXPathFreeContext(xc);
		xmlFreeDoc(doc);
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("report");
	TCase *tc = cu_tcase("report", setup, teardown, 180);
	TCase *cmp = cu_tcase("compare", setup_dir, teardown_dir, 60);

	tcase_add_test(tc, report_in_chromium);
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(cmp, cu_base_setup, cu_base_teardown);
	tcase_add_test(cmp, compare_failed_repeats);
	tcase_add_test(cmp, wide_glyph_legend);
	tcase_add_test(cmp, interrupted_run_said);
	suite_add_tcase(s, cmp);
	return cu_run(s);
}
