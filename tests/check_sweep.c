/* Unit tests of the controller side of sweeps: the fleet-relative rule,
 * the sweep file (schema, file:line errors, defaults and group overrides),
 * group membership and mount path normalisation, the scontrol node lists,
 * and the Prometheus text file (checked with promtool). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "harness.h"
#include "sweep.h"

static char dir[PATH_MAX];

/* A fresh directory under the case's cu_base, which the runner removes
 * even after a failed test (a failing assertion skips teardown). */
static void
setup(void)
{
	cu_subdir(dir, sizeof(dir), "sweep");
}

static void
teardown(void)
{
	cu_rm_rf(dir);
}

/* Write dir/NAME; returns its path (static buffer). */
#define put(name, text) cu_write_at(dir, name, 0644, "%s", text)

/* errs holds "path:" followed by tail. */
static void
has_err(const struct strvec *errs, const char *path, const char *tail)
{
	char want[512];

	snprintf(want, sizeof(want), "%s:%s", path, tail);
	ck_assert_msg(strvec_contains(errs, want), "missing '%s' (first: %s)", want,
	    errs->n ? errs->v[0] : "");
}

/* A controller with an empty inventory (node sets without groups). */
static struct inventory empty_inv;
static struct ctl ctl = { .inv = &empty_inv };

/* Load dir/NAME holding text, a sweep file that must load. */
static struct sweep_file *
load_ok(const char *name, const char *text)
{
	struct strvec errs = { 0 };
	struct sweep_file *sf = sweep_file_load(put(name, text), &errs);

	ck_assert_msg(sf != NULL, "%s", errs.n ? errs.v[0] : "");
	strvec_free(&errs);
	return sf;
}

/* Load dir/NAME holding text, a sweep file that must not load, its errors
 * into errs; its path (put's static buffer). */
static const char *
load_bad(const char *name, const char *text, struct strvec *errs)
{
	const char *p = put(name, text);

	ck_assert_ptr_null(sweep_file_load(p, errs));
	return p;
}

START_TEST(test_outlier_rule)
{
	const double tight[] = { 100, 101, 99, 10 }, same[] = { 5, 5, 5, 5 };
	const double spread[] = { 329, 170, 171, 3.9 }, two[] = { 100, 1 };
	const double noisy[] = { 300, 240, 260, 200, 280 };
	int slow[5];
	double med;

	ck_assert_uint_eq(outlier_slow(tight, 4, 3, 0.2, slow, &med), 1);
	ck_assert(slow[3] && !slow[0] && !slow[1] && !slow[2]);
	ck_assert(med > 99 && med < 101);
	ck_assert_uint_eq(outlier_slow(same, 4, 3, 0.2, slow, &med), 0);
	/* the slow node must not hide itself by widening the MAD */
	ck_assert_uint_eq(outlier_slow(spread, 4, 3, 0.2, slow, &med), 1);
	ck_assert(slow[3]);
	/* too few nodes to judge */
	ck_assert_uint_eq(outlier_slow(two, 2, 3, 0.2, slow, &med), 0);
	/* ordinary spread is not slow: the gap is not reached */
	ck_assert_uint_eq(outlier_slow(noisy, 5, 3, 0.2, slow, &med), 0);
}
END_TEST

START_TEST(test_file_errors)
{
	struct strvec errs = { 0 };
	const char *p;
	char want[256];

	p = put("bad.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <mount path=\"/mnt/a\" min-free=\"150%\"/>\n"
	    "    <mount path=\"/mnt/b\" timeout=\"0s\"/>\n  </defaults>\n</sweep>\n");
	ck_assert_ptr_null(sweep_file_load(p, &errs));
	has_err(&errs, p, "4: <mount>: bad percentage '150%'");
	has_err(&errs, p, "5: <mount>: bad timeout (1 ms to 600 s) '0s'");
	strvec_free(&errs);
	/* the file's text in an error is made visible (common/visible.h): a
	 * right-to-left override would reverse the rest of the line */
	p = put("bidi.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <mount path=\"/mnt/a\" min-free=\"1&#x202E;0%\"/>\n  </defaults>\n</sweep>\n");
	ck_assert_ptr_null(sweep_file_load(p, &errs));
	has_err(&errs, p, "4: Invalid attribute min-free for element mount: "
	    "min-free=\"1\\u202e0%\"");
	strvec_free(&errs);
	p = put("bad2.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <group nodes=\"n1\">\n"
	    "    <nic mtu=\"1500\"/>\n  </group>\n</sweep>\n");
	ck_assert_ptr_null(sweep_file_load(p, &errs));
	ck_assert_int_ge(errs.n, 1);
	snprintf(want, sizeof(want), "%s:4: ", p);
	ck_assert_msg(strncmp(errs.v[0], want, strlen(want)) == 0, "%s", errs.v[0]);
	strvec_free(&errs);
	/* numbers the schema's digits allow but no counter holds: refused,
	 * not wrapped to 0 (which would mean "not checked") */
	p = put("bad4.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <nic name=\"eth0\" mtu=\"4294967296\"/>\n"
	    "    <cpu cores=\"99999999999999999999\"/>\n"
	    "    <nfsd threads=\"18446744073709551617\"/>\n  </defaults>\n"
	    "  <slow mads=\"0\"/>\n  <drain after=\"4294967297\"/>\n</sweep>\n");
	ck_assert_ptr_null(sweep_file_load(p, &errs));
	has_err(&errs, p, "4: <nic>: bad mtu (1-1048576) '4294967296'");
	has_err(&errs, p, "5: <cpu>: bad core count '99999999999999999999'");
	has_err(&errs, p, "6: <nfsd>: bad nfsd thread count '18446744073709551617'");
	has_err(&errs, p, "9: bad after '4294967297' (1-1000000 sweeps)");
	has_err(&errs, p, "8: bad mads '0' (a number above 0, at most 100)");
	strvec_free(&errs);
	p = put("bad3.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n");
	ck_assert_ptr_null(sweep_file_load(p, &errs));
	snprintf(want, sizeof(want), "%s:", p);
	ck_assert_msg(errs.n >= 1 && strncmp(errs.v[0], want, strlen(want)) == 0, "%s",
	    errs.n ? errs.v[0] : "");
	strvec_free(&errs);
}
END_TEST

/* How many of errs are at path:line. */
static int
errs_at(const struct strvec *errs, const char *path, int line)
{
	char want[512];
	int n = 0;

	snprintf(want, sizeof(want), "%s:%d: ", path, line);
	for (size_t i = 0; i < errs->n; i++)
		n += strncmp(errs->v[i], want, strlen(want)) == 0;
	return n;
}

/* Load dir/NAME, a sweep file of a 70000-line comment, then the lines of
 * tail from line 70004 on, which must not load: its path, its errors in
 * errs. */
static const char *
load_bad_big(const char *name, const char *tail, struct strvec *errs)
{
	char *pad = xmalloc(70001);
	const char *p;

	memset(pad, '\n', 70000);
	pad[70000] = '\0';
	p = cu_write_at(dir, name, 0644, "<?xml version=\"1.0\"?>\n<sweep>\n<!--%s-->\n%s</sweep>\n",
	    pad, tail);
	free(pad);
	ck_assert_ptr_null(sweep_file_load(p, errs));
	return p;
}

/* Errors past line 65535 at the lines of their elements: a schema error
 * on an element, one libxml2 gives no line (placed by xml_rng_locate),
 * and the loader's own.  libxml2 keeps an element's line in 16 bits
 * (65535 past that); sweep files were parsed without XML_PARSE_BIG_LINES,
 * and each error said line 65535. */
static const struct {
	const char *name, *tail, *errs[2];	/* errs: path:TAIL, both */
} big_cases[] = {
	{ "big.xml", "  <defaults>\n    <mount path=\"/mnt/a\" min-free=\"1x%\"/>\n"
	  "    <nic mtu=\"1500\"/>\n  </defaults>\n",
	  { "70005: Invalid attribute min-free for element mount: min-free=\"1x%\"",
	    "70006: Element nic failed to validate attributes: mtu=\"1500\"" } },
	{ "big2.xml", "  <defaults>\n    <mount path=\"/mnt/a\" min-free=\"150%\"/>\n"
	  "  </defaults>\n  <drain after=\"4294967297\"/>\n",
	  { "70005: <mount>: bad percentage '150%'",
	    "70007: bad after '4294967297' (1-1000000 sweeps)" } },
};

START_TEST(test_big_file_lines)
{
	struct strvec errs = { 0 };
	const char *p;

	for (size_t i = 0; i < nitems(big_cases); i++) {
		p = load_bad_big(big_cases[i].name, big_cases[i].tail, &errs);
		for (size_t k = 0; k < nitems(big_cases[i].errs); k++)
			has_err(&errs, p, big_cases[i].errs[k]);
		ck_assert_uint_eq(errs.n, nitems(big_cases[i].errs));
		strvec_free(&errs);
	}
}
END_TEST

/* The schema errors libxml2 gives without a line (a <nic> without its
 * name) land on every element that gives them, in <defaults> as in a
 * <group>, even where libxml2 stopped validating (the second <defaults>);
 * the <nic> with a bad speed gets its own error only, not theirs too. */
START_TEST(test_schema_error_lines)
{
	struct strvec errs = { 0 };
	const char *p;

	p = put("lines.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <group nodes=\"n1\">\n"
	    "    <nic mtu=\"1500\"/>\n    <nic name=\"e\" speed=\"-1\"/>\n  </group>\n"
	    "  <group nodes=\"n2\">\n    <nic mtu=\"1500\"/>\n  </group>\n</sweep>\n");
	ck_assert_ptr_null(sweep_file_load(p, &errs));
	ck_assert_int_eq(errs_at(&errs, p, 4), 1);
	ck_assert_msg(errs_at(&errs, p, 5) == 1, "line 5: %d errors (%s; %s)",
	    errs_at(&errs, p, 5), errs.v[0], errs.n > 1 ? errs.v[1] : "");
	ck_assert_int_eq(errs_at(&errs, p, 8), 1);
	ck_assert_uint_eq(errs.n, 3);
	strvec_free(&errs);
	p = put("lines2.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <nic mtu=\"1\"/>\n  </defaults>\n  <defaults>\n    <nic mtu=\"2\"/>\n"
	    "  </defaults>\n</sweep>\n");
	ck_assert_ptr_null(sweep_file_load(p, &errs));
	ck_assert_int_eq(errs_at(&errs, p, 4), 1);
	ck_assert_int_eq(errs_at(&errs, p, 6), 1);
	ck_assert_int_eq(errs_at(&errs, p, 7), 1);
	ck_assert_uint_eq(errs.n, 3);
	strvec_free(&errs);
}
END_TEST

/* A schema error about attributes shows them as written: libxml2 names
 * neither the value of an attribute the schema does not take nor, for a
 * required one, which attribute ("Element load failed to validate
 * attributes"), and a user could not tell a bad value from an unknown
 * attribute.  Before, the messages ended at libxml2's words. */
START_TEST(test_schema_error_values)
{
	struct strvec errs = { 0 };
	const char *p = load_bad("values.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <memory total=\"24GiB\" tolerance=\"3%\"/>\n    <load max=\"-1\"/>\n"
	    "    <nic mtu=\"1500\" speed=\"1000\"/>\n  </defaults>\n</sweep>\n", &errs);

	has_err(&errs, p, "4: Invalid attribute total for element memory: total=\"24GiB\"");
	has_err(&errs, p, "5: Element load failed to validate attributes: max=\"-1\"");
	has_err(&errs, p, "6: Element nic failed to validate attributes: mtu=\"1500\" "
	    "speed=\"1000\"");
	strvec_free(&errs);
}
END_TEST

/* Defaults apply everywhere; a group's item overrides the default of the
 * same kind and identity, for the group's nodes only. */
START_TEST(test_defaults_and_groups)
{
	struct strvec errs = { 0 };
	struct sweep_file *sf;
	struct sweep_limits lim;
	Knob__HealthRequest r1, r3;

	sf = load_ok("ok.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <mount path=\"/scratch\" timeout=\"5s\" min-free=\"10%\"/>\n"
	    "    <process name=\"sshd\"/>\n    <clock max-offset=\"500ms\"/>\n  </defaults>\n"
	    "  <group nodes=\"node[01-02]\">\n    <mount path=\"/scratch\" timeout=\"2s\"/>\n"
	    "    <mount path=\"/home\" type=\"nfs\" options=\"rw,hard\" writable=\"no\"/>\n"
	    "    <blockdev name=\"nvme0n1\" scheduler=\"none\"/>\n  </group>\n"
	    "  <slow mads=\"4\" min-gap=\"30%\"/>\n  <drain after=\"2\" resume=\"3\"/>\n</sweep>\n");
	ck_assert(sf->pol.slow_mads == 4 && sf->pol.slow_min_gap > 0.29 && sf->pol.slow_min_gap < 0.31);
	ck_assert_uint_eq(sf->pol.drain_after, 2);
	ck_assert_uint_eq(sf->pol.resume_after, 3);
	ck_assert_int_eq(sweep_request_for(&ctl, sf, "node01", NULL, &r1, &lim, &errs), 0);
	ck_assert(lim.clock_max_s == 0.5);
	ck_assert_uint_eq(r1.n_mounts, 2);
	ck_assert_str_eq(r1.mounts[0]->path, "/scratch");
	ck_assert_uint_eq(r1.mounts[0]->timeout_ms, 2000);
	ck_assert(r1.mounts[0]->min_free_pct == 0);	/* the group's item replaces the default */
	ck_assert_str_eq(r1.mounts[1]->fstype, "nfs");
	ck_assert_uint_eq(r1.mounts[1]->n_options, 2);
	ck_assert(!r1.mounts[1]->writable);
	ck_assert_uint_eq(r1.n_processes, 1);
	ck_assert_ptr_nonnull(r1.verify);
	ck_assert_uint_eq(r1.verify->n_settings, 1);
	ck_assert_str_eq(r1.verify->settings[0]->attr, "scheduler");
	ck_assert_int_eq(sweep_request_for(&ctl, sf, "node03", "/probe", &r3, &lim, &errs), 0);
	ck_assert_uint_eq(r3.n_mounts, 1);
	ck_assert_uint_eq(r3.mounts[0]->timeout_ms, 5000);
	ck_assert(r3.mounts[0]->min_free_pct == 10);
	ck_assert_ptr_null(r3.verify);
	ck_assert_ptr_nonnull(r3.probe);
	ck_assert_str_eq(r3.probe->dir, "/probe");
	sweep_request_free(&r1);
	sweep_request_free(&r3);
	sweep_file_free(sf);
	strvec_free(&errs);
}
END_TEST

/* The text file parses with promtool; label values are escaped. */
START_TEST(test_prom_file)
{
	/* node01: the module and the thread count both say "service nfsd ok" */
	struct sweep_check c[4] = {
		{ (char *)(uintptr_t)"service", (char *)(uintptr_t)"nfsd",
		    (char *)(uintptr_t)"module loaded", SS_OK, 0, SC_NODE },
		{ (char *)(uintptr_t)"service", (char *)(uintptr_t)"nfsd",
		    (char *)(uintptr_t)"64 threads", SS_OK, 0, SC_NODE },
		{ (char *)(uintptr_t)"mount", (char *)(uintptr_t)"/mnt/a \"b\"\\c",
		    (char *)(uintptr_t)"no answer", SS_HUNG, 1, SC_NODE },
		{ (char *)(uintptr_t)"reach", (char *)(uintptr_t)"", (char *)(uintptr_t)"ok",
		    SS_OK, 0, SC_NODE },
	};
	struct sweep_node n[2] = { { "node01", c, 4, SS_HUNG }, { "node02", c + 3, 1, SS_OK } };
	struct sweep_run run = { n, 2, 1.5, 1796115501000000000ull };
	char path[128], err[256], *text = NULL, *p;

	snprintf(path, sizeof(path), "%s/knob.prom", dir);
	ck_assert_int_eq(sweep_prom_write(path, &run, err, sizeof(err)), 0);
	ck_assert_int_eq(harness_sh("promtool check metrics < %s", path), 0);
	ck_assert_int_eq(read_file_bounded(path, 1 << 20, &text, NULL), 0);
	ck_assert_ptr_nonnull(strstr(text, "knob_health_check{node=\"node01\",check=\"mount\","
	    "target=\"/mnt/a \\\"b\\\"\\\\c\",state=\"hung\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "knob_health_node_ok{node=\"node02\",state=\"ok\"} 1\n"));
	/* one series for the two "service nfsd ok" findings */
	ck_assert_ptr_nonnull(p = strstr(text, "check=\"service\",target=\"nfsd\",state=\"ok\"} 1\n"));
	ck_assert_ptr_null(strstr(p + 1, "check=\"service\",target=\"nfsd\",state=\"ok\"}"));
	ck_assert_ptr_nonnull(strstr(text, "knob_sweep_duration_seconds 1.500\n"));
	free(text);
	/* no temp file left behind */
	ck_assert_int_eq(harness_sh("ls %s | grep -c tmp >/dev/null", dir), 1);
}
END_TEST

/* Group membership: each group's node set is expanded once and looked up
 * by hash (sweep_file.c scope_set), and says what it said before: node03 is
 * in both groups (the later group's mount timeout wins), node01 in the
 * first only, node05 in the second only (an exclusion in its expression),
 * node04 excluded and node09 in none (the defaults only). */
START_TEST(test_group_membership)
{
	struct strvec errs = { 0 };
	struct sweep_file *sf;
	struct sweep_limits lim;
	static const struct {
		const char *node;
		size_t nics, blockdevs;
		uint32_t mount_ms;	/* 0: no mount */
	} want[] = {
		{ "node01", 1, 0, 2000 }, { "node03", 1, 1, 3000 }, { "node05", 0, 1, 3000 },
		{ "node04", 0, 0, 0 }, { "node09", 0, 0, 0 },
	};

	sf = load_ok("groups.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <process name=\"sshd\"/>\n  </defaults>\n"
	    "  <group nodes=\"node[01-03]\">\n    <mount path=\"/scratch\" timeout=\"2s\"/>\n"
	    "    <nic name=\"ib0\"/>\n  </group>\n"
	    "  <group nodes=\"node[03-06]!node[04,06]\">\n    <blockdev name=\"sda\"/>\n"
	    "    <mount path=\"/scratch\" timeout=\"3s\"/>\n  </group>\n</sweep>\n");
	ck_assert_int_eq(sweep_file_check_nodes(&ctl, sf, &errs), 0);
	for (size_t i = 0; i < nitems(want); i++) {
		Knob__HealthRequest r;

		ck_assert_int_eq(sweep_request_for(&ctl, sf, want[i].node, NULL, &r, &lim, &errs), 0);
		ck_assert_msg(r.n_nics == want[i].nics && r.n_blockdevs == want[i].blockdevs &&
		    r.n_processes == 1 && r.n_mounts == (want[i].mount_ms ? 1u : 0u) &&
		    (r.n_mounts == 0 || r.mounts[0]->timeout_ms == want[i].mount_ms),
		    "%s: %zu nics, %zu blockdevs, %zu mounts", want[i].node, r.n_nics,
		    r.n_blockdevs, r.n_mounts);
		sweep_request_free(&r);
	}
	sweep_file_free(sf);
	strvec_free(&errs);
}
END_TEST

/* The mounts node01 is asked about by the sweep file dir/NAME holding
 * body (between <sweep> and </sweep>), as "PATH TIMEOUT_MS" joined by ", "
 * (caller frees). */
static char *
node01_mounts(const char *name, const char *body)
{
	char *text = xasprintf("<?xml version=\"1.0\"?>\n<sweep>\n%s</sweep>\n", body), *got = NULL;
	struct sweep_file *sf = load_ok(name, text);
	struct strvec errs = { 0 };
	struct sweep_limits lim;
	Knob__HealthRequest r;

	ck_assert_int_eq(sweep_request_for(&ctl, sf, "node01", NULL, &r, &lim, &errs), 0);
	for (size_t i = 0; i < r.n_mounts; i++)
		str_appendf(&got, "%s%s %u", i ? ", " : "", r.mounts[i]->path,
		    r.mounts[i]->timeout_ms);
	sweep_request_free(&r);
	sweep_file_free(sf);
	strvec_free(&errs);
	free(text);
	return got;
}

/* A mount path is normalised at load as /proc/self/mounts spells mount
 * points: "/sys/" is checked as "/sys" (before, it was "not mounted" on every
 * node), "//scratch//a/" as "/scratch/a", "/" stays "/"; and "/sys/" in a
 * group overrides the defaults' "/sys" (one mount, the group's timeout). */
START_TEST(test_mount_path_normalised)
{
	char *got = node01_mounts("paths.xml", "  <defaults>\n"
	    "    <mount path=\"/sys\" timeout=\"2s\"/>\n    <mount path=\"//scratch//a/\"/>\n"
	    "    <mount path=\"/\"/>\n    <mount path=\"///\" timeout=\"4s\"/>\n  </defaults>\n"
	    "  <group nodes=\"node01\">\n    <mount path=\"/sys/\" timeout=\"3s\"/>\n  </group>\n");

	ck_assert_str_eq(got, "/sys 3000, /scratch/a 0, / 4000");
	free(got);
}
END_TEST

/* "." and ".." in a mount path are resolved lexically at load (no stat of
 * the mount: a dead one would hang it): "/scratch//x/.." is checked as
 * "/scratch", "/./sys/." as "/sys" (overriding the defaults' "/sys"), "/.."
 * as "/".  Before, they went to the agent as written and were "not
 * mounted" there.  A relative path is still a file:line error, as written. */
START_TEST(test_mount_path_dots)
{
	struct strvec errs = { 0 };
	const char *p;
	char *got = node01_mounts("dots.xml", "  <defaults>\n"
	    "    <mount path=\"/sys\" timeout=\"2s\"/>\n    <mount path=\"/scratch//x/..\"/>\n"
	    "    <mount path=\"/a/./b/../../c/d/../\"/>\n    <mount path=\"/..\"/>\n"
	    "  </defaults>\n  <group nodes=\"node01\">\n"
	    "    <mount path=\"/./sys/.\" timeout=\"3s\"/>\n  </group>\n");

	ck_assert_str_eq(got, "/sys 3000, /scratch 0, /c 0, / 0");
	free(got);
	p = put("rel.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <mount path=\"./scratch/..\"/>\n  </defaults>\n</sweep>\n");
	ck_assert_ptr_null(sweep_file_load(p, &errs));
	has_err(&errs, p, "4: <mount>: mount path must be absolute");
	strvec_free(&errs);
}
END_TEST

/* scontrol's NodeName lists: 14,000 failing names (154,000 bytes joined,
 * past the 128 KiB exec allows one argument: E2BIG, nothing drained) go in
 * lists of at most SWEEP_SLURM_LIST_MAX bytes, every name once and in
 * order; a name longer than the bound still goes, alone. */
START_TEST(test_slurm_lists)
{
	enum { N = 14000 };
	const char **names = xcalloc(N, sizeof(*names));
	char *all = NULL, *joined = NULL, *list;
	size_t pos = 0, lists = 0, k;
	const char *big[] = { "averyveryverylongnodename", "n2" };

	for (size_t i = 0; i < N; i++) {
		names[i] = xasprintf("node%05zu", i + 1);
		str_appendf(&all, "%s%s", i ? "," : "", names[i]);
	}
	ck_assert_uint_gt(strlen(all), 128u << 10);
	while (pos < N) {
		k = sweep_slurm_list(names + pos, N - pos, SWEEP_SLURM_LIST_MAX, &list);
		ck_assert_uint_ge(k, 1);
		ck_assert_uint_le(strlen(list), SWEEP_SLURM_LIST_MAX);
		str_appendf(&joined, "%s%s", joined ? "," : "", list);
		free(list);
		pos += k;
		lists++;
	}
	ck_assert_uint_eq(lists, 3);
	ck_assert_str_eq(joined, all);
	ck_assert_uint_eq(sweep_slurm_list(big, 2, 8, &list), 1);
	ck_assert_str_eq(list, "averyveryverylongnodename");
	free(list);
	ck_assert_uint_eq(sweep_slurm_list(big + 1, 1, 8, &list), 1);
	ck_assert_str_eq(list, "n2");
	free(list);
	for (size_t i = 0; i < N; i++)
		free((char *)(uintptr_t)names[i]);
	free(names);
	free(all);
	free(joined);
}
END_TEST

/* A <profile> that does not load is a sweep-file error at load, at its
 * line (a play's health step checks the file at load too); and knobctl
 * sweep of two nodes with it exits 2 with that line.  Before, the file
 * loaded, each node's request loaded the profile again, and with more than
 * one target knobctl aborted (SIGABRT, exit 134) freeing the requests that
 * were never built. */
START_TEST(test_profile_not_loading)
{
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	struct strvec errs = { 0 };
	char *out = NULL, *p;

	p = xstrdup(put("noprof.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <profile name=\"knob-test-no-such-profile\"/>\n  </defaults>\n</sweep>\n"));
	ck_assert_ptr_null(sweep_file_load(p, &errs));
	has_err(&errs, p, "4: <profile>: profile knob-test-no-such-profile does not load");
	strvec_free(&errs);
	put("cluster.xml", "<?xml version=\"1.0\"?>\n<cluster port=\"7420\">\n"
	    "  <results db=\"r.db\"/>\n</cluster>\n");
	ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER %s/knobctl -c %s/cluster.xml sweep "
	    "-w 'n[1-2]' -f %s", bin, dir, p), 2);
	ck_assert_msg(strstr(out, ":4: <profile>: profile knob-test-no-such-profile does not "
	    "load") != NULL, "%s", out);
	free(out);
	free(p);
}
END_TEST

/* Values the agent takes as "not set" are refused at load, at their line:
 * a memory total under 1 MiB (a number without a unit is bytes: "256"
 * meant 256G), a tolerance of 0 (the agent's 5%), a load max of 0, and a
 * deadline under 1 ms (0 ms: the agent's 10 s or 5 s).  Before, each one
 * loaded and its check passed on every node, unchecked.  The smallest
 * values that mean what they say still load. */
START_TEST(test_unset_values_refused)
{
	struct strvec errs = { 0 };
	const char *p = load_bad("unset.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <memory total=\"256\"/>\n    <memory tolerance=\"0%\"/>\n"
	    "    <load max=\"0\"/>\n    <timeout check=\"0.0004s\"/>\n"
	    "    <mount path=\"/mnt/a\" timeout=\"0.5ms\"/>\n  </defaults>\n</sweep>\n", &errs);

	has_err(&errs, p, "4: <memory>: bad size (at least 1M; a number without a unit is bytes) "
	    "'256'");
	has_err(&errs, p, "5: <memory>: bad tolerance (above 0%, at most 100%) '0%'");
	has_err(&errs, p, "6: <load>: bad max (above 0) '0'");
	has_err(&errs, p, "7: <timeout>: bad timeout (1 ms to 600 s) '0.0004s'");
	has_err(&errs, p, "8: <mount>: bad timeout (1 ms to 600 s) '0.5ms'");
	ck_assert_uint_eq(errs.n, 5);
	strvec_free(&errs);
	sweep_file_free(load_ok("set.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <memory total=\"1M\" tolerance=\"0.5%\"/>\n    <load max=\"0.01\"/>\n"
	    "    <timeout check=\"1ms\"/>\n  </defaults>\n</sweep>\n"));
}
END_TEST

static Suite *
sweep_suite(void)
{
	Suite *s = suite_create("sweep");
	TCase *tc = tcase_create("sweep");

	tcase_add_unchecked_fixture(tc, cu_base_setup, cu_base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_outlier_rule);
	tcase_add_test(tc, test_file_errors);
	tcase_add_test(tc, test_big_file_lines);
	tcase_add_test(tc, test_schema_error_lines);
	tcase_add_test(tc, test_schema_error_values);
	tcase_add_test(tc, test_defaults_and_groups);
	tcase_add_test(tc, test_prom_file);
	tcase_add_test(tc, test_group_membership);
	tcase_add_test(tc, test_mount_path_normalised);
	tcase_add_test(tc, test_slurm_lists);
	tcase_add_test(tc, test_mount_path_dots);
	tcase_add_test(tc, test_profile_not_loading);
	tcase_add_test(tc, test_unset_values_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cu_run(sweep_suite());
}
