/* Plays end to end: three real knobd agents in network namespaces
 * (tests/harness.h), knobctl play in the controller namespace.  Profiles
 * tune net.core.somaxconn, which every network namespace has for itself,
 * so each agent tunes its own; the --check test also names a loop device
 * the test creates, whose attributes must not move.  A node made
 * unreachable is an agent the test stopped.  Most tests share their
 * agents (the "shared" case; "node03-down", node03's agent killed for
 * good), each starting with an empty results store and data directory
 * and leaving the agents untuned; only the tests that restart or kill an
 * agent mid-test start their own. */
#include <check.h>
#include <signal.h>
#include <stdarg.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <json-c/json.h>

#include "testutil.h"
#include "harness.h"
#include "util.h"

static struct harness h;
static char data[PATH_MAX];	/* in the harness's temp dir, removed with it */

static void
setup(void)
{
	ck_assert_msg(harness_start_with(&h, 3, "--test-hooks") == 0, "harness start failed");
	snprintf(data, sizeof(data), "%s/data", h.tmp);
	ck_assert_int_eq(mkdir(data, 0755), 0);
	setenv("KNOB_PROFILE_PATH", h.tmp, 1);
}

static void
teardown(void)
{
	harness_stop(&h);
}

/* Write h.tmp/NAME with the formatted text. */
#define write_file(name, ...) cu_write_at(h.tmp, name, 0644, __VA_ARGS__)

static pid_t shared_pid;	/* the process that started the shared agents */

/* After each shared test that passed (check runs no teardown after a
 * failed one): the mark that it left the agents as a test finds them. */
static void
shared_done(void)
{
	write_file("shared-clean", "\n");
}

/* The agents the tests of the "shared" case share (they restart none of
 * them, and leave each one running, its link up and untuned): started
 * once, not per test, whose start (namespaces, certificates, three
 * agents) took longer than most of those tests. */
static void
shared_setup(void)
{
	setup();
	shared_pid = getpid();
	shared_done();
}

/* The agents of the "node03-down" case: node01 and node02 shared as
 * shared_setup's, node03's agent killed (connection refused) for good,
 * so that the tests' own kill of it is a no-op. */
static void
down_setup(void)
{
	shared_setup();
	harness_agent_stop(&h, 2, SIGKILL);
}

/* The shared agents put back as a test finds them after a test that
 * failed half-way: running (not stopped), their links up, untuned. */
static void
shared_mend(void)
{
	fprintf(stderr, "the test before failed: the shared agents mended\n");
	for (int i = 0; i < h.n; i++) {
		if (h.node[i].pid > 0)
			(void)kill(h.node[i].pid, SIGCONT);
		(void)harness_sh("ip -n %s link set kv%d up", h.ctl_ns, i + 1);
	}
	(void)harness_knobctl(&h, NULL, NULL, "--connect-timeout 2 rollback -w @all --wait 20");
}

/* Before each shared test: this test's process (check forks one per test)
 * must not stop the shared agents as it exits; the agents are mended when
 * the test before did not pass; the test starts with an empty results
 * store and data directory. */
static void
shared_reset(void)
{
	char mark[PATH_MAX + 16];

	if (getpid() != shared_pid)
		h.up = 0;
	snprintf(mark, sizeof(mark), "%s/shared-clean", h.tmp);
	if (unlink(mark) != 0)
		shared_mend();
	ck_assert_int_eq(harness_sh("rm -rf %s/results.db* %s && mkdir %s", h.tmp, data, data), 0);
}

static void
somax_profile(void)
{
	write_file("somax.xml", "<?xml version=\"1.0\"?>\n<profile name=\"somax\">\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"2345\"/>\n</profile>\n");
}

/* The profile "other": net.core.somaxconn 3456. */
static void
other_profile(void)
{
	write_file("other.xml", "<?xml version=\"1.0\"?>\n<profile name=\"other\">\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"3456\"/>\n</profile>\n");
}

/* net.core.somaxconn in node i's namespace is v. */
static int
somax_is(int i, const char *v)
{
	return harness_node_sh(&h, i, "test \"$(cat /proc/sys/net/core/somaxconn)\" = %s", v) == 0;
}

/* net.core.somaxconn of the first n nodes set to 1111, 1112, ...: the
 * originals a rollback must put back (not the defaults). */
static void
set_originals(int n)
{
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(harness_node_sh(&h, i, "echo %d > /proc/sys/net/core/somaxconn",
		    1111 + i), 0);
}

/* A JSON document that must be there. */
static json_object *
need(json_object *doc)
{
	ck_assert_msg(doc != NULL, "knobctl printed no JSON (see stderr)");
	return doc;
}

static void knobctl_exits(int want, char **out, char **err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* knobctl with the formatted arguments, which must exit want; its stdout
 * and stderr into *out and *err (the caller frees them). */
static void
knobctl_exits(int want, char **out, char **err, const char *fmt, ...)
{
	va_list ap;
	char *args;
	int rc;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&args, fmt, ap), 0);
	va_end(ap);
	*out = *err = NULL;
	rc = harness_knobctl(&h, out, err, "%s", args);
	ck_assert_msg(rc == want, "%s: exit %d\n%s\n%s", args, rc, *out, *err);
	free(args);
}

/* A three-node play: apply in batches of 2, verify, a sweep with a fixed
 * total size and a per-thread-count value, repeats, rollback. */
START_TEST(play_three_nodes)
{
	json_object *doc, *run, *ph;
	char *out = NULL;
	int rc;

	somax_profile();
	write_file("p.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"three\" nodes=\"@all\" serial=\"2\">\n"
	    "  <var name=\"dir\" value=\"/nonexistent\"/>\n"
	    "  <apply profile=\"somax\"/>\n"
	    "  <verify profile=\"somax\"/>\n"
	    "  <bench kind=\"seq\" dir=\"${dir}\" threads=\"1..4\" bs=\"64k\" size-total=\"1m\" "
	    "repeat=\"2\" test-rate-iops=\"400\">\n"
	    "    <at threads=\"4\" bs=\"16k\"/>\n  </bench>\n"
	    "  <rollback/>\n</play>\n");
	for (int i = 0; i < 3; i++)
		ck_assert(!somax_is(i, "2345"));
	doc = need(harness_knobctl_json(&h, &rc, "--json play %s/p.xml -e dir=%s", h.tmp, data));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(cu_str(doc, "status"), "ok");
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "steps")), 4);
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "runs")), 1);
	json_object_put(doc);
	for (int i = 0; i < 3; i++)
		ck_assert(!somax_is(i, "2345"));

	/* the run: recorded under the play, tuned with somax, the total split */
	run = need(harness_knobctl_json(&h, &rc, "--json results show latest"));
	ck_assert_str_eq(cu_str(run, "play"), "three");
	ck_assert_ptr_nonnull(strstr(cu_str(run, "play_file"), "/p.xml"));
	/* the play's content as it ran, its SHA-256 (sha256sum's) and the -e values */
	{
		char path[PATH_MAX + 16], *text = NULL, sum[128] = "";
		size_t len;
		FILE *p;

		snprintf(path, sizeof(path), "%s/p.xml", h.tmp);
		ck_assert_int_eq(read_file_bounded(path, 1 << 20, &text, &len), 0);
		ck_assert_str_eq(cu_str(run, "play_text"), text);
		snprintf(path, sizeof(path), "sha256sum %s/p.xml", h.tmp);
		ck_assert_ptr_nonnull(p = popen(path, "r"));
		ck_assert_ptr_nonnull(fgets(sum, sizeof(sum), p));
		pclose(p);
		sum[64] = '\0';
		ck_assert_str_eq(cu_str(run, "play_sha256"), sum);
		ck_assert_str_eq(cu_str(cu_get(run, "play_vars"), "dir"), data);
		free(text);
	}
	ck_assert_str_eq(cu_str(cu_get(run, "profile"), "name"), "somax");
	ck_assert_int_eq(json_object_array_length(cu_get(run, "phases")), 12);
	ph = json_object_array_get_idx(cu_get(run, "phases"), 4);	/* seq-write, 2 threads */
	ck_assert_int_eq(json_object_get_int(json_object_object_get(ph, "threads")), 2);
	ck_assert_int_eq(json_object_get_int64(json_object_object_get(cu_get(ph, "params"),
	    "file_size")), 512 << 10);
	ph = json_object_array_get_idx(cu_get(run, "phases"), 8);	/* seq-write, 4 threads */
	ck_assert_int_eq(json_object_get_int64(json_object_object_get(cu_get(ph, "params"),
	    "block_size")), 16 << 10);
	ck_assert_int_eq(json_object_get_int64(json_object_object_get(cu_get(ph, "params"),
	    "file_size")), 256 << 10);
	ck_assert_int_eq(json_object_get_int64(json_object_object_get(ph, "bytes")), 1 << 20);
	json_object_put(run);
	/* one workload across the thread counts: one peak line per kind */
	rc = harness_knobctl(&h, &out, NULL, "results show latest");
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "1..4") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "\nplay three (") != NULL || strncmp(out, "play three (", 12) == 0,
	    "%s", out);
	free(out);
}
END_TEST

/* compare: the same bench untuned (rolled back) and under the profile,
 * both runs recorded with their labels, the compare table printed.
 * node01 has the site's profile "other" before the play: the "untuned"
 * A and the closing rollback take it off (an agent keeps one journal), so
 * the play applies it again at its end.  Before, node01 was left at its
 * original value, untuned, with nothing said. */
START_TEST(play_compare)
{
	json_object *doc, *list;
	char *out = NULL;
	int rc;

	somax_profile();
	other_profile();
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "apply other -w node01"), 0);
	ck_assert(somax_is(0, "3456"));
	write_file("c.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"ab\" nodes=\"node[01-02]\">\n"
	    "  <compare a=\"\" b=\"somax\" label-a=\"before\" label-b=\"after\">\n"
	    "    <bench kind=\"md-create,md-remove\" dir=\"%s\" threads=\"2\" files=\"40\" "
	    "repeat=\"2\"/>\n  </compare>\n</play>\n", data);
	rc = harness_knobctl(&h, &out, NULL, "play %s/c.xml", h.tmp);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_msg(somax_is(0, "3456"), "node01 lost its profile \"other\"");
	ck_assert_ptr_nonnull(strstr(out, "A = "));
	ck_assert_ptr_nonnull(strstr(out, "VERDICT"));
	ck_assert_ptr_nonnull(strstr(out, "md-create"));
	ck_assert_msg(strstr(out, "node01: other restored") != NULL, "%s", out);
	free(out);
	list = need(harness_knobctl_json(&h, &rc, "--json results list"));
	ck_assert_int_eq(json_object_array_length(list), 2);
	ck_assert_str_eq(cu_str(json_object_array_get_idx(list, 0), "label"), "before");
	ck_assert_str_eq(cu_str(json_object_array_get_idx(list, 0), "profile"), "");
	ck_assert_str_eq(cu_str(json_object_array_get_idx(list, 1), "label"), "after");
	ck_assert_str_eq(cu_str(json_object_array_get_idx(list, 1), "profile"), "somax");
	ck_assert_str_eq(cu_str(json_object_array_get_idx(list, 1), "play"), "ab");
	json_object_put(list);
	doc = need(harness_knobctl_json(&h, &rc, "--json results compare latest~1 latest"));
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "points")), 2);
	json_object_put(doc);
	/* rolled back at the end, node01 to the profile it had */
	ck_assert(!somax_is(1, "2345"));
	ck_assert(!somax_is(1, "3456"));
	/* the agents are shared: none is left tuned */
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "rollback -w node01"), 0);
}
END_TEST

/* max-fail="1" with one unreachable node: it counts as failed, the play
 * goes on without it and exits 1; max-fail="0" (reaching 1 exceeds it)
 * stops at the first batch and rolls back what it applied; a percentage
 * is exact: 1 of 3 nodes exceeds 10% (not rounded up to 1 node) but not
 * 34%; keep="yes" leaves it applied. */
START_TEST(play_max_fail_unreachable)
{
	json_object *doc, *failed;
	int rc;

	somax_profile();
	harness_agent_stop(&h, 2, SIGKILL);
	write_file("m1.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"mf1\" nodes=\"@all\" max-fail=\"1\">\n"
	    "  <apply profile=\"somax\"/>\n"
	    "  <bench kind=\"md-create\" dir=\"%s\" threads=\"2\" files=\"20\"/>\n"
	    "  <rollback/>\n</play>\n", data);
	doc = need(harness_knobctl_json(&h, &rc, "--json --connect-timeout 2 play %s/m1.xml", h.tmp));
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(cu_str(doc, "status"), "finished-with-failures");
	failed = cu_get(doc, "failed_nodes");
	ck_assert_int_eq(json_object_array_length(failed), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(failed, 0)), "node03");
	for (size_t i = 0; i < 3; i++)
		ck_assert_str_eq(cu_str(json_object_array_get_idx(cu_get(doc, "steps"), i), "status"), "ok");
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "runs")), 1);
	json_object_put(doc);
	ck_assert(!somax_is(0, "2345"));

	/* the same with the default max-fail (0): one failure exceeds it */
	write_file("m0.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"mf0\" nodes=\"@all\">\n"
	    "  <apply profile=\"somax\"/>\n"
	    "  <bench kind=\"md-create\" dir=\"%s\" threads=\"2\" files=\"20\"/>\n"
	    "</play>\n", data);
	doc = need(harness_knobctl_json(&h, &rc, "--json --connect-timeout 2 play %s/m0.xml", h.tmp));
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(cu_str(doc, "status"), "stopped");
	ck_assert_str_eq(cu_str(json_object_array_get_idx(cu_get(doc, "steps"), 0), "status"), "failed");
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "steps")), 1);
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "runs")), 0);
	json_object_put(doc);
	/* node01 and node02 applied, then the stop rolled them back */
	ck_assert(!somax_is(0, "2345"));
	ck_assert(!somax_is(1, "2345"));

	/* max-fail="10%": 1 failed of 3 (33 %) exceeds it; "34%": it does not */
	for (int pct = 10; pct <= 34; pct += 24) {
		write_file("mp.xml", "<?xml version=\"1.0\"?>\n"
		    "<play name=\"mfp\" nodes=\"@all\" max-fail=\"%d%%\">\n"
		    "  <apply profile=\"somax\"/>\n  <rollback/>\n</play>\n", pct);
		doc = need(harness_knobctl_json(&h, &rc, "--json --connect-timeout 2 play %s/mp.xml",
		    h.tmp));
		ck_assert_int_eq(rc, 1);
		ck_assert_str_eq(cu_str(doc, "status"), pct == 10 ? "stopped" :
		    "finished-with-failures");
		ck_assert_str_eq(cu_str(json_object_array_get_idx(cu_get(doc, "steps"), 0), "status"),
		    pct == 10 ? "failed" : "ok");
		json_object_put(doc);
		ck_assert(!somax_is(0, "2345"));
	}

	/* keep="yes": the applied profile stays */
	write_file("mk.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"mfk\" nodes=\"@all\" keep=\"yes\">\n"
	    "  <apply profile=\"somax\"/>\n</play>\n");
	doc = need(harness_knobctl_json(&h, &rc, "--json --connect-timeout 2 play %s/mk.xml", h.tmp));
	ck_assert_int_eq(rc, 1);
	json_object_put(doc);
	ck_assert(somax_is(0, "2345"));
	ck_assert(somax_is(1, "2345"));
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "rollback -w node[01-02]"), 0);
	ck_assert(!somax_is(0, "2345"));
}
END_TEST

/* A node whose apply and verify are "unsupported" (its namespace lacks the
 * interface the profile's key names) fails the play, as it fails knobctl
 * apply itself (exit 1): node02 has no kdum0, node01 and node03 have one,
 * their rp_filter set to a non-default 2 first.  It used to pass (exit 0,
 * "0 node(s) failed"), and later steps counted node02 as tuned.  (A veth
 * pair: this kernel has no dummy driver.) */
START_TEST(play_unsupported_fails_node)
{
	json_object *doc, *failed;
	int rc;

	for (int i = 0; i < 3; i += 2)
		ck_assert_int_eq(harness_node_sh(&h, i, "ip link add kdum0 type veth peer name kdum1 && "
		    "echo 2 > /proc/sys/net/ipv4/conf/kdum0/rp_filter"), 0);
	write_file("rpf.xml", "<?xml version=\"1.0\"?>\n<profile name=\"rpf\">\n"
	    "  <sysctl key=\"net.ipv4.conf.kdum0.rp_filter\" value=\"1\"/>\n</profile>\n");
	write_file("u.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"unsup\" nodes=\"@all\" max-fail=\"1\">\n"
	    "  <apply profile=\"rpf\"/>\n  <verify profile=\"rpf\"/>\n  <rollback/>\n</play>\n");
	doc = need(harness_knobctl_json(&h, &rc, "--json play %s/u.xml", h.tmp));
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(cu_str(doc, "status"), "finished-with-failures");
	failed = cu_get(doc, "failed_nodes");
	ck_assert_int_eq(json_object_array_length(failed), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(failed, 0)), "node02");
	json_object_put(doc);
	for (int i = 0; i < 3; i += 2)
		ck_assert_int_eq(harness_node_sh(&h, i,
		    "test \"$(cat /proc/sys/net/ipv4/conf/kdum0/rp_filter)\" = 2 && ip link del kdum0"),
		    0);
}
END_TEST

/* A run records the controller's profile file as it is at bench time: a
 * file edited after the apply (4096 on disk, 2345 live on node01) and a
 * key node02 lacks are named as not in effect, by results show and in the
 * report, instead of a run that looks like it measured the file.  Before,
 * both said "profile somax" with the file's text and nothing else. */
START_TEST(run_profile_not_in_effect)
{
	char *out = NULL, *html, path[PATH_MAX + 16];
	int rc;

	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link add kdum0 type veth peer name kdum1 && "
	    "echo 2 > /proc/sys/net/ipv4/conf/kdum0/rp_filter"), 0);
	write_file("nie.xml", "<?xml version=\"1.0\"?>\n<profile name=\"nie\">\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"2345\"/>\n"
	    "  <sysctl key=\"net.ipv4.conf.kdum0.rp_filter\" value=\"1\"/>\n</profile>\n");
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "apply nie -w node[01-02]"), 1);
	write_file("nie.xml", "<?xml version=\"1.0\"?>\n<profile name=\"nie\">\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"4096\"/>\n"
	    "  <sysctl key=\"net.ipv4.conf.kdum0.rp_filter\" value=\"1\"/>\n</profile>\n");
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "bench md-create -w node[01-02] "
	    "--dir %s --threads 1 --files 10", data), 0);
	rc = harness_knobctl(&h, &out, NULL, "results show latest");
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "WARNING: 3 setting(s) of this profile were not in effect") != NULL,
	    "%s", out);
	ck_assert_msg(strstr(out, "node01: sysctl net.core.somaxconn is 2345, the profile says 4096")
	    != NULL, "%s", out);
	ck_assert_msg(strstr(out, "node02: sysctl net.ipv4.conf.kdum0.rp_filter could not be "
	    "checked") != NULL, "%s", out);
	free(out);
	snprintf(path, sizeof(path), "%s/nie.html", h.tmp);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "report latest -o %s", path), 0);
	html = cu_slurp(path);
	ck_assert_msg(strstr(html, "<li>node01: sysctl net.core.somaxconn is 2345, the profile says "
	    "4096</li>") != NULL, "%s", html);
	free(html);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "rollback -w node[01-02]"), 0);
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link del kdum0"), 0);	/* shared agents */
}
END_TEST

/* The play's file at path (arg) says step 2 began. */
static int at_step2(void *arg);

/* A <rollback/> step in batches (serial="1") that fails on node01 (its
 * somaxconn changed by hand during the bench, so its rollback is
 * "changed since") trips max-fail before node02's and node03's batches
 * run: they still hold the profile, so the stop's rollback must take them
 * (originals 1111, 1112, 1113, not the defaults).  Before, the step
 * unmarked every node it was given, and node02 and node03 kept 2345 with
 * nothing said. */
START_TEST(play_rollback_step_trip_keeps_marks)
{
	char path[PATH_MAX + 16], *out;
	pid_t pid;
	int st;

	somax_profile();
	set_originals(3);
	write_file("rt.xml", "<?xml version=\"1.0\"?>\n<play name=\"rt\" nodes=\"@all\" "
	    "serial=\"1\">\n  <apply profile=\"somax\"/>\n"
	    "  <bench kind=\"seq-write\" nodes=\"node03\" dir=\"%s\" threads=\"1\" bs=\"4k\" "
	    "size=\"512k\" test-rate-iops=\"100\"/>\n  <rollback/>\n</play>\n", data);
	snprintf(path, sizeof(path), "%s/rt.out", h.tmp);
	pid = harness_knobctl_bg(&h, path, NULL, "play %s/rt.xml", h.tmp);
	ck_assert_int_gt(pid, 0);
	ck_assert_msg(cu_wait(at_step2, path, 30) >= 0, "the play never reached its bench");
	ck_assert_int_eq(harness_node_sh(&h, 0, "echo 999 > /proc/sys/net/core/somaxconn"), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	out = cu_slurp(path);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s", out);
	ck_assert_msg(strstr(out, "play stopped: rolling back what it applied") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "node01: NOT rolled back") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "node02: NOT") == NULL && strstr(out, "node03: NOT") == NULL,
	    "%s", out);
	free(out);
	ck_assert(somax_is(0, "999"));
	ck_assert(somax_is(1, "1112"));
	ck_assert(somax_is(2, "1113"));
	/* node01's journal still holds its original: its value put back as
	 * the profile set it, a rollback takes it (and leaves the shared
	 * agents untuned) */
	ck_assert_int_eq(harness_node_sh(&h, 0, "echo 2345 > /proc/sys/net/core/somaxconn"), 0);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "rollback -w node01"), 0);
	ck_assert(somax_is(0, "1111"));
}
END_TEST

/* Does the file at path (arg) hold "== step 2/"? */
static int
at_step2(void *arg)
{
	char *t = access(arg, R_OK) == 0 ? cu_slurp(arg) : NULL;
	int yes = t && strstr(t, "== step 2/") != NULL;

	free(t);
	return yes;
}

/* A play on node03 stopped with SIGSTOP before it (the kernel takes the
 * connection, the agent answers nothing), with max-fail="1": the TLS
 * handshake of its apply times out, so the request was never written and
 * nothing can land there: when the play stops (the verify of another
 * profile fails node01 and node02) its rollback takes node01 and node02
 * only and says node03 never reached, exit 1.  (Before, node03 was said
 * NOT rolled back, as if the request had gone.)  Then node03 applies for
 * real and is stopped during a bench: a <rollback/> step that times out
 * on node03 keeps node03 marked (its profile is there), the stop rollback
 * tries it again and says it NOT rolled back.  Each of the three waits
 * for node03 is the handshake's deadline (--connect-timeout 1); the bench
 * (128 writes at 100 IOPS, 1.3 s) is the window to stop node03 in. */
START_TEST(play_stop_rolls_back_timed_out)
{
	char path[PATH_MAX + 16], *out = NULL;
	pid_t pid;
	int rc, st;

	somax_profile();
	other_profile();
	write_file("to.xml", "<?xml version=\"1.0\"?>\n<play name=\"to\" nodes=\"@all\" "
	    "max-fail=\"1\">\n  <apply profile=\"somax\"/>\n  <verify profile=\"other\"/>\n"
	    "</play>\n");
	ck_assert_int_eq(kill(h.node[2].pid, SIGSTOP), 0);
	rc = harness_knobctl_logged(&h, &out, "--timeout 3 --connect-timeout 1 play %s/to.xml",
	    h.tmp);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "rollback on every node an apply may have reached (2)") != NULL,
	    "%s", out);
	ck_assert_msg(strstr(out, "node03: never reached (TLS handshake timed out") != NULL,
	    "%s", out);
	ck_assert_msg(strstr(out, "NOT rolled back") == NULL, "%s", out);
	free(out);
	ck_assert(!somax_is(0, "2345"));
	ck_assert(!somax_is(1, "2345"));
	ck_assert_int_eq(kill(h.node[2].pid, SIGCONT), 0);
	/* node03 answers again: whatever it did late, it goes back */
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "rollback -w node03 --wait 20"), 0);
	ck_assert(!somax_is(2, "2345"));

	/* the rollback step times out on node03 (stopped during the bench) */
	write_file("rb.xml", "<?xml version=\"1.0\"?>\n<play name=\"rb\" nodes=\"@all\" "
	    "max-fail=\"1\">\n  <apply profile=\"somax\"/>\n"
	    "  <bench kind=\"seq-write\" nodes=\"node[01-02]\" dir=\"%s\" threads=\"1\" bs=\"4k\" "
	    "size=\"512k\" test-rate-iops=\"100\"/>\n"
	    "  <rollback/>\n  <verify profile=\"somax\"/>\n</play>\n", data);
	snprintf(path, sizeof(path), "%s/rb.out", h.tmp);
	pid = harness_knobctl_bg(&h, path, NULL, "--timeout 3 --connect-timeout 1 play %s/rb.xml",
	    h.tmp);
	ck_assert_int_gt(pid, 0);
	ck_assert_msg(cu_wait(at_step2, path, 30) >= 0, "the play never reached its bench");
	ck_assert_int_eq(kill(h.node[2].pid, SIGSTOP), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	out = cu_slurp(path);
	fprintf(stderr, "%s\n", out);
	ck_assert_int_eq(WEXITSTATUS(st), 1);
	ck_assert_msg(strstr(out, "play stopped: rolling back what it applied") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "rollback on every node an apply may have reached (1)") != NULL,
	    "%s", out);
	ck_assert_msg(strstr(out, "node03: NOT rolled back") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(kill(h.node[2].pid, SIGCONT), 0);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "rollback -w node03 --wait 20"), 0);
	ck_assert(!somax_is(2, "2345"));
}
END_TEST

/* play --check: every apply as --check, no benchmark; the loop device's
 * attributes (set to non-default values first) and the sysctls stay, no
 * run is stored, no file is written; the plan says what it would do. */
START_TEST(play_check_writes_nothing)
{
	char img[PATH_MAX + 16], dev[64] = "", *out = NULL, *err = NULL, ra[64], sched[256];
	char cmd[512];
	FILE *p;
	int rc;

	snprintf(img, sizeof(img), "%s/loop.img", h.tmp);
	snprintf(cmd, sizeof(cmd), "truncate -s 16M %s && losetup -f --show %s", img, img);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(dev, sizeof(dev), p));
	pclose(p);
	strtrim(dev);
	ck_assert(strncmp(dev, "/dev/loop", 9) == 0);
	/* not the kernel's defaults */
	ck_assert_int_eq(harness_sh("echo 384 > /sys/block/%s/queue/read_ahead_kb", dev + 5), 0);
	write_file("loopt.xml", "<?xml version=\"1.0\"?>\n<profile name=\"loopt\">\n"
	    "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"4M\"/>\n"
	    "  <blockdev device=\"%s\" attr=\"nr_requests\" value=\"32\"/>\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"2345\"/>\n</profile>\n", dev + 5, dev + 5);
	write_file("k.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"chk\" nodes=\"node01\">\n"
	    "  <apply profile=\"loopt\"/>\n  <verify profile=\"loopt\"/>\n"
	    "  <bench kind=\"seq\" dir=\"%s\" threads=\"1..2\" size=\"1m\" bs=\"64k\" repeat=\"3\"/>\n"
	    "  <compare b=\"loopt\"><bench kind=\"md\" dir=\"%s\" threads=\"2\" files=\"10\"/>"
	    "</compare>\n  <rollback/>\n</play>\n", data, data);
	{
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "/sys/block/%s/queue/read_ahead_kb", dev + 5);
		ck_assert_int_ge(read_small_file(path, ra, sizeof(ra)), 0);
		snprintf(path, sizeof(path), "/sys/block/%s/queue/nr_requests", dev + 5);
		ck_assert_int_ge(read_small_file(path, sched, sizeof(sched)), 0);
	}
	ck_assert_str_eq(ra, "384");
	rc = harness_knobctl(&h, &out, &err, "play %s/k.xml --check", h.tmp);
	ck_assert_msg(rc == 0, "%s\n%s", out, err);
	free(err);
	ck_assert_ptr_nonnull(strstr(out, "would-change"));
	ck_assert_ptr_nonnull(strstr(out, "plan: 12 phase(s) on 1 node(s), 0.02 GiB"));
	ck_assert_ptr_nonnull(strstr(out, "would roll back"));
	ck_assert_ptr_nonnull(strstr(out, "nothing was written"));
	free(out);
	ck_assert_int_eq(harness_sh("test \"$(cat /sys/block/%s/queue/read_ahead_kb)\" = 384",
	    dev + 5), 0);
	ck_assert_int_eq(harness_sh("test \"$(cat /sys/block/%s/queue/nr_requests)\" = %s",
	    dev + 5, sched), 0);
	ck_assert(!somax_is(0, "2345"));
	/* no run stored, no file written */
	{
		char db[PATH_MAX + 16];
		json_object *list;

		snprintf(db, sizeof(db), "%s/results.db", h.tmp);
		if (access(db, F_OK) == 0) {
			list = need(harness_knobctl_json(&h, &rc, "--json results list"));
			ck_assert_int_eq(json_object_array_length(list), 0);
			json_object_put(list);
		}
	}
	ck_assert_int_eq(harness_sh("test -z \"$(ls -A %s)\"", data), 0);
	harness_sh("losetup -d %s", dev);
}
END_TEST

/* A step's nodes= outside the nodes the play runs on (-w narrowed them)
 * is a file:line error before anything runs (exit 2).  Before, the play
 * applied on step 1, failed at step 2 and, keep="yes", left the profile. */
START_TEST(play_step_nodes_outside_targets)
{
	char *out = NULL, *err = NULL;
	int rc;

	somax_profile();
	write_file("sn.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"sn\" nodes=\"@all\" keep=\"yes\">\n"
	    "  <apply profile=\"somax\"/>\n"
	    "  <verify profile=\"somax\" nodes=\"node03\"/>\n  <rollback/>\n</play>\n");
	rc = harness_knobctl(&h, &out, &err, "play %s/sn.xml -w node[01-02]", h.tmp);
	ck_assert_msg(rc == 2, "exit %d\n%s\n%s", rc, out, err);
	ck_assert_msg(strstr(err, "sn.xml:4: nodes=\"node03\": node03 is not one of the play's "
	    "nodes (the play runs on node[01-02])"), "%s", err);
	ck_assert_msg(out[0] == '\0', "%s", out);
	free(out);
	free(err);
	ck_assert(!somax_is(0, "2345"));
	ck_assert(!somax_is(1, "2345"));
}
END_TEST

/* --check plans each bench as the bench runs it: <at> sizes count (before:
 * the sweep's own size, 3.50 GiB instead of 12.50), and the runtime of
 * an earlier run is found under the kind's default block size (before:
 * 1 MiB for a rand bench too, "expected runtime unknown"). */
START_TEST(play_check_plan_at)
{
	char *out = NULL, *err = NULL;
	int rc;

	write_file("r.xml", "<?xml version=\"1.0\"?>\n<play name=\"r\" nodes=\"node01\">\n"
	    "  <bench kind=\"rand-write\" dir=\"%s\" threads=\"1\" size=\"64k\"/>\n</play>\n",
	    data);
	write_file("c.xml", "<?xml version=\"1.0\"?>\n<play name=\"c\" nodes=\"node01\">\n"
	    "  <bench kind=\"rand-write\" dir=\"%s\" threads=\"1\" size=\"64k\"/>\n"
	    "  <bench kind=\"seq\" dir=\"%s\" threads=\"1..4\" bs=\"1m\" size=\"256m\">\n"
	    "    <at threads=\"2..4\" size=\"1g\"/>\n  </bench>\n</play>\n", data, data);
	rc = harness_knobctl(&h, &out, &err, "play %s/r.xml", h.tmp);
	ck_assert_msg(rc == 0, "%s\n%s", out, err);
	free(out);
	free(err);
	rc = harness_knobctl(&h, &out, &err, "play %s/c.xml --check", h.tmp);
	ck_assert_msg(rc == 0, "%s\n%s", out, err);
	ck_assert_msg(strstr(out, "plan: 1 phase(s) on 1 node(s), 0.00 GiB of data; expected "
	    "runtime ") && strstr(out, " s (from earlier runs)"), "%s", out);
	ck_assert_msg(strstr(out, "plan: 6 phase(s) on 1 node(s), 12.50 GiB of data"), "%s", out);
	free(out);
	free(err);
}
END_TEST

static char *play_errors(const char *file, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* h.tmp/FILE with the formatted text, then knobctl play on it: it exits
 * 2; its stderr (caller frees). */
static char *
play_errors(const char *file, const char *fmt, ...)
{
	char *err = NULL, *text;
	va_list ap;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&text, fmt, ap), 0);
	va_end(ap);
	write_file(file, "%s", text);
	free(text);
	ck_assert_int_eq(harness_knobctl(&h, NULL, &err, "play %s/%s", h.tmp, file), 2);
	ck_assert_ptr_nonnull(err);
	return err;
}

/* err has "h.tmp/FILE:LINE: msg" (LINE < 0: "h.tmp/FILE:" alone). */
static void
has_error(const char *err, const char *file, int line, const char *msg)
{
	char want[PATH_MAX + 256];

	if (line < 0)
		snprintf(want, sizeof(want), "%s/%s:", h.tmp, file);
	else
		snprintf(want, sizeof(want), "%s/%s:%d: %s", h.tmp, file, line, msg);
	ck_assert_msg(strstr(err, want), "missing %s in\n%s", want, err);
}

/* What a play quotes is someone else's text, made visible: a file:line
 * error's quoted profile name with U+202E (a bidi override) as \u202e,
 * an -e argument's ESC as \x1b, and --json's document through the escape
 * rule (output_doc): the play's name with U+202E as \u202e.  Before, each
 * went to the terminal raw. */
START_TEST(play_text_visible)
{
	char *out, *err;

	somax_profile();
	err = play_errors("vis.xml", "<?xml version=\"1.0\"?>\n<play name=\"vis\" nodes=\"node01\">\n"
	    "  <apply profile=\"no&#x202E;such\"/>\n</play>\n");
	has_error(err, "vis.xml", 3, "profile 'no\\u202esuch' not found");
	ck_assert_msg(!strstr(err, "\342\200\256"), "raw U+202E in %s", err);
	free(err);
	knobctl_exits(2, &out, &err, "play %s/vis.xml --check -e \"$(printf 'p\\033q')\"", h.tmp);
	ck_assert_str_eq(err, "knobctl play: -e p\\x1bq: use NAME=VALUE\n");
	free(out);
	free(err);
	write_file("vj.xml", "<?xml version=\"1.0\"?>\n<play name=\"v&#x202E;j\" nodes=\"node01\">\n"
	    "  <apply profile=\"somax\"/>\n</play>\n");
	knobctl_exits(0, &out, &err, "--json play %s/vj.xml --check", h.tmp);
	ck_assert_msg(strstr(out, "\"v\\u202ej\"") && !strstr(out, "\342\200\256"), "%s", out);
	json_object_put(need(json_tokener_parse(out)));
	free(out);
	free(err);
}
END_TEST

/* A play of n benches, one a line, the one at index bad without its
 * kind=: libxml2 gives that schema error no line; knobctl places it at
 * that bench's. */
static void
big_play_error(size_t n, size_t bad)
{
	char *text = NULL, *err;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	fprintf(f, "<?xml version=\"1.0\"?>\n<play name=\"big\" nodes=\"@all\">\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  <bench %s dir=\"/tmp\"/>\n", i == bad ? "name=\"x\"" : "kind=\"seq\"");
	fprintf(f, "</play>\n");
	ck_assert_int_eq(fclose(f), 0);
	err = play_errors("big.xml", "%s", text);
	has_error(err, "big.xml", (int)(3 + bad), "Element bench failed to validate attributes");
	free(err);
	free(text);
}

/* Errors past line 65535 (a 70000-line comment first) at the lines of
 * their elements: the loader's own, a schema error on an element, and
 * one libxml2 gives no line (placed by xml_rng_locate).  libxml2 keeps an
 * element's line in 16 bits (65535 past that) and xmlGetLineNo borrows
 * the next node's: before, each was a line late. */
static void
big_line_play(void)
{
	char *pad = xmalloc(70001), *err;

	memset(pad, '\n', 70000);
	pad[70000] = '\0';
	err = play_errors("lines.xml", "<?xml version=\"1.0\"?>\n<play name=\"l\" nodes=\"@all\">\n"
	    "<!--%s-->\n  <apply profile=\"no-such-profile\"/>\n  <bench dir=\"/tmp\"/>\n"
	    "  <reboot/>\n</play>\n", pad);
	free(pad);
	has_error(err, "lines.xml", 70004, "profile 'no-such-profile' not found");
	has_error(err, "lines.xml", 70005, "Element bench failed to validate attributes");
	has_error(err, "lines.xml", 70006, "Did not expect element reboot there");
	free(err);
}

/* A <bench> nested in <compare> or <canary> runs on that step's nodes and
 * fails it: its own nodes= or on-failure= is a file:line error.  Before,
 * both were ignored: the bench ran on every node of the compare, and its
 * failure stopped the play. */
START_TEST(play_nested_bench_own_attrs)
{
	char *err;

	somax_profile();
	err = play_errors("nb.xml", "<?xml version=\"1.0\"?>\n<play name=\"nb\" nodes=\"@all\">\n"
	    "  <compare b=\"somax\">\n"
	    "    <bench kind=\"md-create\" dir=\"%s\" threads=\"1\" files=\"2\" nodes=\"node01\"/>\n"
	    "  </compare>\n  <canary profile=\"somax\" canary=\"1\">\n"
	    "    <bench kind=\"md-create\" dir=\"%s\" threads=\"1\" files=\"2\" repeat=\"2\" "
	    "on-failure=\"continue\"/>\n  </canary>\n</play>\n", data, data);
	has_error(err, "nb.xml", 4, "a <bench> in <compare> takes no nodes=: it runs on the "
	    "<compare>'s nodes and fails it (give nodes= to the <compare>)");
	has_error(err, "nb.xml", 7, "a <bench> in <canary> takes no on-failure=");
	free(err);
	ck_assert(!somax_is(0, "2345"));
}
END_TEST

/* Every error in a play file as file:line: message, before anything runs. */
START_TEST(play_file_errors)
{
	char *err, want[PATH_MAX + 64];

	somax_profile();
	err = play_errors("bad.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"bad\" nodes=\"@all\" serial=\"0\">\n"		/* 2 */
	    "  <apply profile=\"no-such-profile\"/>\n"			/* 3 */
	    "  <bench kind=\"seq\" dir=\"${nodir}\" threads=\"1\"/>\n"	/* 4 */
	    "  <bench kind=\"seq\" dir=\"/tmp\" bogus=\"1\"/>\n"		/* 5 */
	    "  <bench kind=\"seq\" dir=\"/tmp\" bs=\"12q\"/>\n"		/* 6 */
	    "  <canary profile=\"somax\" canary=\"1\">\n"			/* 7 */
	    "    <bench kind=\"seq\" dir=\"/tmp\" threads=\"1\"/>\n"	/* 8 */
	    "  </canary>\n"
	    "</play>\n");
	has_error(err, "bad.xml", 2, "serial=\"0\"");
	has_error(err, "bad.xml", 3, "profile 'no-such-profile' not found");
	has_error(err, "bad.xml", 4, "unknown variable ${nodir}");
	has_error(err, "bad.xml", 5, "<bench> has no option 'bogus'");
	has_error(err, "bad.xml", 6, "bench: bad value '12q'");
	/* a canary that could never find a point worse (one run a side) */
	has_error(err, "bad.xml", 8, "a canary's <bench> needs repeat=\"2\" or more");
	free(err);
	/* schema: an unknown step, with its line */
	err = play_errors("bad2.xml", "<?xml version=\"1.0\"?>\n<play name=\"b2\">\n"
	    "  <apply profile=\"somax\"/>\n  <reboot/>\n  <verify profile=\"${nope}\"/>\n"
	    "</play>\n");
	has_error(err, "bad2.xml", 4, "");
	/* and the loader's own errors beside the schema's */
	has_error(err, "bad2.xml", 5, "unknown variable ${nope}");
	free(err);
	/* not XML at all */
	err = play_errors("bad3.xml", "<play name=\"x\">\n<apply\n");
	has_error(err, "bad3.xml", -1, NULL);
	free(err);
	/* a play with no step is an error, not a play that does nothing */
	err = play_errors("empty.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"e\" nodes=\"@all\">\n  <description>hi</description>\n</play>\n");
	has_error(err, "empty.xml", 2, "the play has no step");
	free(err);
	/* a schema error libxml gives no line for: the line of the element it
	 * is about (not the first of that name) */
	err = play_errors("bad4.xml", "<?xml version=\"1.0\"?>\n<play name=\"b4\" nodes=\"@all\">\n"
	    "  <compare b=\"somax\"><bench kind=\"seq-write\" dir=\"/tmp\"/></compare>\n"
	    "  <bench dir=\"/tmp\"/>\n</play>\n");
	has_error(err, "bad4.xml", 4, "Element bench failed to validate attributes");
	snprintf(want, sizeof(want), "%s/bad4.xml:0:", h.tmp);
	ck_assert_msg(strstr(err, want) == NULL, "line 0 in\n%s", err);
	free(err);
	/* a <var> given twice: which one was meant?  (before, the first won
	 * without a word) */
	err = play_errors("bad5.xml", "<?xml version=\"1.0\"?>\n<play name=\"b5\" nodes=\"@all\">\n"
	    "  <var name=\"d\" value=\"/tmp\"/>\n  <var name=\"d\" value=\"/scratch\"/>\n"
	    "  <verify profile=\"somax\"/>\n</play>\n");
	has_error(err, "bad5.xml", 4, "<var name=\"d\"> is given twice");
	free(err);
	/* an empty B profile (-e b=): said when the play loads, not after
	 * the A benches ran */
	err = play_errors("bad6.xml", "<?xml version=\"1.0\"?>\n<play name=\"b6\" nodes=\"@all\">\n"
	    "  <var name=\"b\" value=\"\"/>\n"
	    "  <compare b=\"${b}\"><bench kind=\"seq-write\" dir=\"/tmp\"/></compare>\n</play>\n");
	has_error(err, "bad6.xml", 4, "<compare> needs b=\"NAME\"");
	free(err);
	/* a profile that is there but does not load, a health value knobctl
	 * sweep refuses, a node set that does not expand: said at load, not
	 * half-way through with every node failed "no result" (keep="yes":
	 * before, the apply above them ran and stayed) */
	write_file("broken.xml", "<?xml version=\"1.0\"?>\n<profile name=\"broken\">\n"
	    "  <sysctl key=\"net.core.somaxconn\"/>\n</profile>\n");
	err = play_errors("bad7.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"b7\" nodes=\"@all\" keep=\"yes\">\n"
	    "  <apply profile=\"somax\"/>\n"			/* 3 */
	    "  <verify profile=\"broken\"/>\n"			/* 4 */
	    "  <health probe=\"scratch\"/>\n"			/* 5 */
	    "  <rollback nodes=\"@nosuchgroup\"/>\n</play>\n");	/* 6 */
	snprintf(want, sizeof(want), "profile 'broken': %s/broken.xml:3: <sysctl> needs key and "
	    "value", h.tmp);
	has_error(err, "bad7.xml", 4, want);
	has_error(err, "bad7.xml", 5, "sweep: --probe needs an absolute directory");
	has_error(err, "bad7.xml", 6, "nodes=\"@nosuchgroup\": nodeset: unknown group @nosuchgroup");
	free(err);
	/* a node set or a serial that a variable made empty: absent, each
	 * means every node (at once); given empty it is no choice of those
	 * (before, a <var> or -e tune= left empty applied the profile to
	 * every node) */
	err = play_errors("bad8.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"b8\" nodes=\"@all\" serial=\"${serial}\">\n"	/* 2 */
	    "  <var name=\"serial\" value=\"\"/>\n  <var name=\"tune\" value=\"\"/>\n"
	    "  <apply profile=\"somax\" nodes=\"${tune}\"/>\n"		/* 5 */
	    "  <canary profile=\"somax\" canary=\"0\">\n"			/* 6 */
	    "    <bench kind=\"seq-write\" dir=\"/tmp\" repeat=\"2\"/>\n  </canary>\n</play>\n");
	has_error(err, "bad8.xml", 2, "serial=\"${serial}\" is empty: leave serial= out for "
	    "every node at once");
	has_error(err, "bad8.xml", 5, "nodes=\"${tune}\" is empty: leave nodes= out for every "
	    "node of the play");
	/* no canary is no canary step (before, canary="0" took one node) */
	has_error(err, "bad8.xml", 6, "canary=\"0\": a count or a percentage above 0");
	free(err);
	/* the play's own nodes= (no -w) that does not expand: the file's line
	 * (before: "knobctl: -w @nosuchgroup: ...", as if -w were given) */
	err = play_errors("bad10.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"b10\" nodes=\"${n}\">\n  <var name=\"n\" value=\"@nosuchgroup\"/>\n"
	    "  <verify profile=\"somax\"/>\n</play>\n");
	has_error(err, "bad10.xml", 2, "nodes=\"@nosuchgroup\": nodeset: unknown group @nosuchgroup");
	free(err);
	/* a report that can only fail, after the steps before it ran: no run
	 * before it, its directory missing, a directory (before, each one
	 * failed at its step, the profile rolled back, the benches' hours
	 * spent and no page) */
	err = play_errors("bad9.xml", "<?xml version=\"1.0\"?>\n<play name=\"b9\" nodes=\"@all\">\n"
	    "  <apply profile=\"somax\"/>\n  <report file=\"%s/r.html\"/>\n"	/* 4 */
	    "  <bench kind=\"seq-write\" dir=\"%s\" size=\"1m\"/>\n"		/* 5 */
	    "  <report file=\"%s/nodir/r.html\"/>\n"				/* 6 */
	    "  <report file=\"%s\"/>\n</play>\n", h.tmp, data, h.tmp, data);	/* 7 */
	has_error(err, "bad9.xml", 4, "<report> has no run to use: no bench, compare or canary "
	    "step comes before it");
	snprintf(want, sizeof(want), "<report file=\"%s/nodir/r.html\">: %s/nodir is not a "
	    "directory", h.tmp, h.tmp);
	has_error(err, "bad9.xml", 6, want);
	snprintf(want, sizeof(want), "<report file=\"%s\">: is a directory", data);
	has_error(err, "bad9.xml", 7, want);
	free(err);
	/* nothing ran */
	ck_assert(!somax_is(0, "2345"));
	ck_assert(!somax_is(1, "2345"));
	/* that placing in a play of 20,000 steps, the bad one near the end:
	 * each element validated once, alone (before, the whole play once per
	 * <bench> up to the bad one: 30 s at 4,000 steps, hours at 20,000) */
	big_play_error(20000, 19997);
	big_line_play();
}
END_TEST

/* health: the health sweep (knobctl sweep) drops an unreachable node, the
 * bench then runs on the healthy ones; with max-fail="1" the play goes on
 * and exits 1. */
START_TEST(play_health_step)
{
	json_object *doc, *run;
	int rc;

	harness_agent_stop(&h, 2, SIGKILL);
	write_file("hs.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"hs\" nodes=\"@all\" max-fail=\"1\">\n"
	    "  <health/>\n"
	    "  <bench kind=\"md-create\" dir=\"%s\" threads=\"4\" files=\"20\"/>\n"
	    "</play>\n", data);
	doc = need(harness_knobctl_json(&h, &rc, "--json --connect-timeout 2 play %s/hs.xml", h.tmp));
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "failed_nodes")), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cu_get(doc, "failed_nodes"),
	    0)), "node03");
	ck_assert_str_eq(cu_str(json_object_array_get_idx(cu_get(doc, "steps"), 0), "status"), "ok");
	ck_assert_str_eq(cu_str(json_object_array_get_idx(cu_get(doc, "steps"), 1), "status"), "ok");
	json_object_put(doc);
	run = need(harness_knobctl_json(&h, &rc, "--json results show latest"));
	ck_assert_int_eq(json_object_array_length(cu_get(run, "nodes")), 2);
	ck_assert_str_eq(cu_str(json_object_array_get_idx(cu_get(run, "phases"), 0), "status"), "ok");
	json_object_put(run);
}
END_TEST

/* Restart agent i with a sysroot ("" none). */
static void
restart_agent(int i, const char *root)
{
	harness_agent_stop(&h, i, SIGTERM);
	snprintf(h.node[i].sysroot, sizeof(h.node[i].sysroot), "%s", root);
	ck_assert_int_eq(harness_agent_start(&h, i), 0);
}

/* The Lustre report's stripe count by thread count, through <at>: each
 * phase's directory gets lfs setstripe before its files are created, and
 * the run records the layout of every phase.  There is no Lustre here:
 * node01 and node02 get a --sysroot whose mount table puts the data
 * directory on Lustre, and the lfs they run is a stand-in on $PATH that
 * records its arguments.  node03 (no sysroot) sees the real ext4/tmpfs:
 * a stripe count there fails the phase and says why. */
START_TEST(play_stripe_count_at)
{
	char root[PATH_MAX], bin[PATH_MAX], calls[PATH_MAX], body[PATH_MAX * 2];
	char mounts[PATH_MAX + 64], want[PATH_MAX + 128], *log = NULL, *path;
	json_object *doc, *run, *ph;
	const char *id;
	int rc;

	snprintf(root, sizeof(root), "%s/lustre-root", h.tmp);
	snprintf(bin, sizeof(bin), "%s/bin", h.tmp);
	snprintf(calls, sizeof(calls), "%s/lfs.calls", h.tmp);
	snprintf(body, sizeof(body), "#!/bin/sh\n# stand-in for Lustre's lfs (no Lustre here)\n"
	    "echo \"$*\" >> '%s'\n[ \"$1\" = setstripe ] || exit 2\n", calls);
	cu_write_at(bin, "/lfs", 0755, "%s", body);
	snprintf(mounts, sizeof(mounts), "/dev/vda / ext4 rw 0 0\n10.0.0.1@o2ib:/scratch %s "
	    "lustre rw 0 0\n", data);
	cu_write_at(root, "/proc/self/mounts", 0644, "%s", mounts);
	cu_write_at(root, "/proc/meminfo", 0644, "MemTotal:       16777216 kB\n");
	path = xasprintf("%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	setenv("PATH", path, 1);
	free(path);
	restart_agent(0, root);
	restart_agent(1, root);

	write_file("stripe.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"stripes\" nodes=\"node[01-02]\">\n"
	    "  <bench kind=\"seq-write\" dir=\"%s\" threads=\"1..4\" bs=\"64k\" size-total=\"1m\" "
	    "stripe-count=\"8\" stripe-size=\"4m\">\n"
	    "    <at threads=\"2..4\" stripe-count=\"1\"/>\n  </bench>\n</play>\n", data);
	doc = need(harness_knobctl_json(&h, &rc, "--json play %s/stripe.xml", h.tmp));
	ck_assert_int_eq(rc, 0);
	id = json_object_get_string(json_object_array_get_idx(cu_get(doc, "runs"), 0));
	/* the layout of every phase, in the run */
	run = need(harness_knobctl_json(&h, &rc, "--json results show %s", id));
	for (int i = 0; i < 3; i++) {
		ph = json_object_array_get_idx(cu_get(run, "phases"), (size_t)i);
		ck_assert_str_eq(cu_str(ph, "status"), "ok");
		ck_assert_int_eq(json_object_get_int(json_object_object_get(cu_get(ph, "params"),
		    "stripe_count")), i == 0 ? 8 : 1);
		ck_assert_int_eq(json_object_get_int64(json_object_object_get(cu_get(ph, "params"),
		    "stripe_size")), 4 << 20);
	}
	json_object_put(run);
	/* lfs ran on each phase's directory, with that phase's layout (threads
	 * 1 puts its one rank on node01 only; 2 and 4 use both nodes) */
	ck_assert_int_eq(read_file_bounded(calls, 1 << 16, &log, NULL), 0);
	snprintf(want, sizeof(want), "setstripe -c 8 -S 4194304 %s/knob.%s-w1\n", data, id);
	ck_assert_msg(strstr(log, want) != NULL, "%s", log);
	for (int w = 2; w <= 3; w++) {
		char *first, *second;

		snprintf(want, sizeof(want), "setstripe -c 1 -S 4194304 %s/knob.%s-w%d\n", data, id, w);
		first = strstr(log, want);
		ck_assert_msg(first != NULL, "%s", log);
		second = strstr(first + 1, want);
		ck_assert_msg(second != NULL && strstr(second + 1, want) == NULL,
		    "not once per node: %s", log);
	}
	free(log);
	json_object_put(doc);

	/* a stripe size Lustre cannot take is a usage error */
	rc = harness_knobctl(&h, NULL, NULL, "bench seq-write -w node01 --dir %s --stripe-size 1000",
	    data);
	ck_assert_int_eq(rc, 2);
	/* not on Lustre: the phase fails, and says why */
	doc = need(harness_knobctl_json(&h, &rc, "--json bench seq-write -w node03 --dir %s "
	    "--threads 1 --size 1m --stripe-count 2", data));
	ck_assert_int_ne(rc, 0);
	ph = json_object_array_get_idx(cu_get(doc, "phases"), 0);
	ck_assert_str_ne(cu_str(ph, "status"), "ok");
	ck_assert_msg(strstr(json_object_to_json_string(ph), "not Lustre") != NULL, "%s",
	    json_object_to_json_string(ph));
	json_object_put(doc);
}
END_TEST

/* ${cache_x2} and ${ram_x2} from the nodes' facts.  There is no GPFS here:
 * node01 gets a --sysroot whose mount table has a GPFS file system, a
 * stand-in mmdiag reporting a 4 GiB pagepool and 16 GiB of RAM; node02 one
 * with 1 GiB of RAM and no GPFS.  The cache to beat is node01's pagepool:
 * cache_x2 = 8g; ram_x2 = 32g. */
START_TEST(play_cache_x2)
{
	char r1[PATH_MAX], r2[PATH_MAX], *out = NULL, *err = NULL;
	json_object *doc;
	int rc;

	snprintf(r1, sizeof(r1), "%s/gpfs-root", h.tmp);
	snprintf(r2, sizeof(r2), "%s/small-root", h.tmp);
	cu_write_at(r1, "/usr/lpp/mmfs/bin/mmdiag", 0755, "#!/bin/sh\n# stand-in for mmdiag "
	    "(no GPFS here)\n[ \"$1\" = --config ] || exit 2\necho '=== mmdiag: config ==='\n"
	    "echo ' ! pagepool 4294967296'\n");
	cu_write_at(r1, "/usr/lpp/mmfs/bin/mmchconfig", 0755, "#!/bin/sh\nexit 1\n");
	cu_write_at(r1, "/proc/meminfo", 0644, "MemTotal:       16777216 kB\n");
	cu_write_at(r1, "/proc/self/mounts", 0644, "/dev/vda / ext4 rw 0 0\ngpfs0 /gpfs gpfs rw 0 0\n");
	cu_write_at(r2, "/proc/meminfo", 0644, "MemTotal:        1048576 kB\n");
	cu_write_at(r2, "/proc/self/mounts", 0644, "/dev/vda / ext4 rw 0 0\n");
	restart_agent(0, r1);
	restart_agent(1, r2);
	doc = need(harness_knobctl_json(&h, &rc, "--json facts -w node01"));
	ck_assert_int_eq(json_object_get_int64(json_object_object_get(json_object_object_get(
	    json_object_array_get_idx(cu_get(doc, "nodes"), 0), "facts"), "gpfs_pagepool_bytes")),
	    4ll << 30);
	json_object_put(doc);
	write_file("cache.xml", "<?xml version=\"1.0\"?>\n<play name=\"cache\" nodes=\"node[01-02]\">\n"
	    "  <bench kind=\"seq-write\" dir=\"%s\" size=\"${cache_x2}\"/>\n"
	    "  <bench kind=\"seq-write\" dir=\"%s\" size=\"${ram_x2}\"/>\n</play>\n", data, data);
	rc = harness_knobctl(&h, &out, &err, "play %s/cache.xml --check", h.tmp);
	ck_assert_msg(rc == 0, "%s\n%s", out, err);
	ck_assert_msg(strstr(out, "plan: 1 phase(s) on 2 node(s), 8.00 GiB of data") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "plan: 1 phase(s) on 2 node(s), 32.00 GiB of data") != NULL, "%s",
	    out);
	free(out);
	free(err);
	/* no node answers: the nodes are the cause, not the file (exit 1;
	 * before, exit 2 with "cache.xml:3: unknown variable ${cache_x2}") */
	harness_agent_stop(&h, 1, SIGKILL);
	rc = harness_knobctl(&h, &out, &err, "play %s/cache.xml -w node02 --check --timeout 5", h.tmp);
	ck_assert_msg(rc == 1, "exit %d\n%s\n%s", rc, out, err);
	ck_assert_msg(strstr(err, "knobctl play: ${ram_x2} and ${cache_x2} come from the nodes' "
	    "facts, and no node answered: node02 (1) did not answer") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "unknown variable") == NULL, "%s", err);
	free(out);
	free(err);
	/* the same through a <var> into an <at> override, whose error is not
	 * "bad value ''" (before, exit 2 with "at.xml:4: bench: bad value
	 * '1:size='", as if the file were wrong) */
	write_file("at.xml", "<?xml version=\"1.0\"?>\n<play name=\"at\" nodes=\"node02\">\n"
	    "  <var name=\"sz\" value=\"${cache_x2}\"/>\n"
	    "  <bench kind=\"seq-write\" dir=\"%s\"><at threads=\"1\" size=\"${sz}\"/></bench>\n"
	    "</play>\n", data);
	rc = harness_knobctl(&h, &out, &err, "play %s/at.xml --check --timeout 5", h.tmp);
	ck_assert_msg(rc == 1, "exit %d\n%s\n%s", rc, out, err);
	ck_assert_msg(strstr(err, "no node answered: node02 (1) did not answer") != NULL, "%s", err);
	free(out);
	free(err);
	/* an empty value of the file's own beside ${cache_x2}, nodes silent:
	 * the file's error, exit 2, not "no node answered" */
	write_file("empty.xml", "<?xml version=\"1.0\"?>\n<play name=\"e\" nodes=\"node02\">\n"
	    "  <bench kind=\"seq-write\" dir=\"%s\" size=\"${cache_x2}\" bs=\"\"/>\n</play>\n",
	    data);
	rc = harness_knobctl(&h, &out, &err, "play %s/empty.xml --check --timeout 5", h.tmp);
	ck_assert_msg(rc == 2, "exit %d\n%s\n%s", rc, out, err);
	ck_assert_msg(strstr(err, "/empty.xml:3: bench: bad value ''") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "no node answered") == NULL, "%s", err);
	free(out);
	free(err);
}
END_TEST

/* Every shipped play loads and plans (--check) on the three agents. */
START_TEST(shipped_plays_plan)
{
	static const char *const plays[] = {
		"seq-nn-sweep", "seq-n1-sweep", "random-4k-sweep", "mdtest-sweep", "ab-compare",
		"canary-rollout", "demo", "io500-like", "health-sweep", "lustre-seq-sweep",
	};
	char root[PATH_MAX], *out = NULL, *err = NULL;

	somax_profile();
	ck_assert_ptr_nonnull(realpath("ansible-like-plays", root));
	for (size_t i = 0; i < nitems(plays); i++) {
		int rc = harness_knobctl(&h, &out, &err, "play %s/%s.xml -w @all --check -e dir=%s "
		    "-e profile=somax -e b=somax", root, plays[i], data);

		ck_assert_msg(rc == 0, "%s: exit %d\n%s\n%s", plays[i], rc, out, err);
		ck_assert_ptr_nonnull(strstr(out, "plan total"));
		free(out);
		free(err);
	}
	/* ab-compare at 001's own sizes (its comment): 2 TB split over 1..64
	 * threads written and read, 4 GiB random files, 960000 md files; x3
	 * repeats, under A and B.  Before, its sizes were fixed (1 GiB a
	 * thread, 256 MiB random files, 65536 md files) and -e could not set
	 * them */
	knobctl_exits(0, &out, &err, "play %s/ab-compare.xml -w @all --check -e dir=%s "
	    "-e b=somax -e seq_total=2t -e rand_size=4g -e md_files=960000", root, data);
	ck_assert_msg(strstr(out, "plan total: 178128.00 GiB") != NULL, "%s", out);
	ck_assert_msg(strstr(err, "warning") == NULL, "%s", err);
	free(out);
	free(err);
	ck_assert(!somax_is(0, "2345"));
}
END_TEST

/* The shipped io500-like play, small: its score is the square root of the
 * product of the geometric means computed here from the stored runs
 * (bandwidth phases in GiB/s, metadata phases in kIOPS). */
START_TEST(io500_like_score)
{
	char root[PATH_MAX];
	json_object *doc, *runs;
	double lbw = 0, lmd = 0, bw, md;
	int rc, nbw = 0, nmd = 0;

	ck_assert_ptr_nonnull(realpath("ansible-like-plays", root));
	doc = need(harness_knobctl_json(&h, &rc, "--json play %s/io500-like.xml -w @all -e dir=%s "
	    "-e ranks=3 -e easy_size=4m -e hard_segments=20 -e hard_size=940160 -e easy_files=100 "
	    "-e hard_files=60", root, data));
	ck_assert_int_eq(rc, 0);
	runs = cu_get(doc, "runs");
	ck_assert_int_eq(json_object_array_length(runs), 4);
	for (size_t r = 0; r < 4; r++) {
		json_object *run = need(harness_knobctl_json(&h, &rc, "--json results show %s",
		    json_object_get_string(json_object_array_get_idx(runs, r))));
		json_object *ph = cu_get(run, "phases");

		/* one thread count, no repeats: each phase is a point */
		for (size_t i = 0; i < json_object_array_length(ph); i++) {
			json_object *p = json_object_array_get_idx(ph, i);
			const char *kind = cu_str(p, "kind");
			double rate = json_object_get_double(json_object_object_get(p, "rate"));

			ck_assert_str_eq(cu_str(p, "status"), "ok");
			if (strncmp(kind, "seq-", 4) == 0) {
				lbw += log(rate / (1024.0 * 1024 * 1024));
				nbw++;
			} else {
				lmd += log(rate / 1000.0);
				nmd++;
			}
		}
		json_object_put(run);
	}
	ck_assert_int_eq(nbw, 4);		/* easy and hard, write and read */
	ck_assert_int_eq(nmd, 7);		/* easy create/stat/remove, hard + read */
	bw = exp(lbw / nbw);
	md = exp(lmd / nmd);
	{
		json_object *sc = cu_get(doc, "io500_like");
		double got_bw = json_object_get_double(json_object_object_get(sc, "bandwidth_gib"));
		double got_md = json_object_get_double(json_object_object_get(sc, "metadata_kiops"));
		double got = json_object_get_double(json_object_object_get(sc, "score"));

		ck_assert_double_eq_tol(got_bw, bw, bw * 1e-9);
		ck_assert_double_eq_tol(got_md, md, md * 1e-9);
		ck_assert_double_eq_tol(got, sqrt(bw * md), got * 1e-9);
		ck_assert(!json_object_get_boolean(json_object_object_get(sc, "official")));
	}
	json_object_put(doc);
}
END_TEST

/* A score without metadata figures: the md bench fails on every node (its
 * directory is a file), the seq bench works.  The failed point is left
 * out and said, and the step fails saying what is missing.  Before, the
 * failed point went in as 0 and the score line read "metadata 0.0000
 * kIOPS (geometric mean of 1), score 0.0000" with no reason. */
START_TEST(score_without_metadata)
{
	char *out = NULL, *err = NULL;
	int rc;

	write_file("notadir", "x\n");
	write_file("score.xml", "<?xml version=\"1.0\"?>\n<play name=\"sc\" nodes=\"node01\">\n"
	    "  <bench kind=\"seq-write\" dir=\"%s\" size=\"1m\"/>\n"
	    "  <bench kind=\"md-create\" dir=\"%s/notadir\" files=\"10\" on-failure=\"continue\"/>\n"
	    "  <score method=\"io500-like\"/>\n</play>\n", data, h.tmp);
	rc = harness_knobctl(&h, &out, &err, "play %s/score.xml", h.tmp);
	ck_assert_msg(rc == 1, "exit %d\n%s\n%s", rc, out, err);
	ck_assert_msg(strstr(out, "md-create      1 threads  no figure (every repeat failed): not in "
	    "the score") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "no IO500-like score: no metadata phase has a figure (it needs "
	    "both bandwidth and metadata phases)") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "score 0.0000") == NULL, "%s", out);
	free(out);
	free(err);
}
END_TEST

/* The play's text output out (freed) says node03, down from the start,
 * never reached and nothing NOT rolled back; node01 and node02 have their
 * originals back (set_originals). */
static void
node03_never_reached(char *out)
{
	ck_assert_msg(strstr(out, "node03: never reached (connection refused): nothing to roll "
	    "back") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "NOT rolled back") == NULL, "%s", out);
	free(out);
	ck_assert(somax_is(0, "1111"));
	ck_assert(somax_is(1, "1112"));
}

/* A <rollback/> step takes the dropped nodes an apply may have reached,
 * not only the live ones: node02 drifts at a verify of another profile
 * (dropped, within max-fail).  The step rolls node02 back to its original
 * (1112, not the default).  Before, the step ran on node01 alone: node02
 * kept 2345 and nothing said so.  node03 is down from the start
 * (connection refused): the apply never reached it, the step says so and
 * does not call it NOT rolled back (play_never_reached_not_rolled_back). */
START_TEST(play_rollback_step_takes_dropped)
{
	char *out = NULL;
	int rc;

	somax_profile();
	other_profile();
	set_originals(2);
	harness_agent_stop(&h, 2, SIGKILL);
	write_file("rd.xml", "<?xml version=\"1.0\"?>\n<play name=\"rd\" nodes=\"@all\" "
	    "max-fail=\"2\">\n  <apply profile=\"somax\"/>\n"
	    "  <verify profile=\"other\" nodes=\"node02\"/>\n  <rollback/>\n</play>\n");
	rc = harness_knobctl_logged(&h, &out, "--connect-timeout 2 play %s/rd.xml", h.tmp);
	ck_assert_msg(rc == 1, "exit %d\n%s", rc, out);
	node03_never_reached(out);
}
END_TEST

/* A health step whose sweep itself fails (exit 3: its --prom file cannot
 * be written) fails, and so does the play (exit 1), with the reason on
 * stderr, though every node is healthy.  Before, the step was ok and the
 * play exited 0. */
START_TEST(play_health_sweep_fails)
{
	json_object *doc;
	char *out = NULL, *err = NULL;
	int rc;

	write_file("hf.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"hf\" nodes=\"@all\">\n"
	    "  <health prom=\"/nonexistent/dir/knob.prom\"/>\n</play>\n");
	rc = harness_knobctl(&h, &out, &err, "play %s/hf.xml", h.tmp);
	ck_assert_msg(rc == 1, "exit %d\n%s\n%s", rc, out, err);
	ck_assert_msg(strstr(err, "knobctl sweep: --prom: ") != NULL, "%s", err);
	ck_assert_msg(strstr(out, "knobctl sweep itself failed (exit 3") != NULL, "%s", out);
	free(out);
	free(err);
	doc = need(harness_knobctl_json(&h, &rc, "--json play %s/hf.xml", h.tmp));
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(cu_str(json_object_array_get_idx(cu_get(doc, "steps"), 0), "status"),
	    "failed");
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "failed_nodes")), 0);
	json_object_put(doc);
}
END_TEST

/* -e given twice: the last value wins (as Ansible's -e), over the play's
 * <var> too.  Before, the first won: the plan applied "other".  A <var>
 * that -e gives is not expanded: its default may name a variable that
 * only exists when -e does not give it (before: "unknown variable"). */
START_TEST(play_extra_var_last_wins)
{
	char *out = NULL, *err = NULL;
	int rc;

	write_file("ev.xml", "<?xml version=\"1.0\"?>\n<play name=\"ev\" nodes=\"node01\">\n"
	    "  <var name=\"p\" value=\"${site}-profile\"/>\n  <apply profile=\"${p}\"/>\n"
	    "</play>\n");
	somax_profile();
	other_profile();
	/* the plan names the profile it would apply */
	rc = harness_knobctl_logged(&h, &out, "play %s/ev.xml --check -e p=other -e p=somax",
	    h.tmp);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "knobctl apply somax --check -w node01") != NULL &&
	    strstr(out, "apply other") == NULL, "%s", out);
	ck_assert_msg(strstr(out, "warning") == NULL, "%s", out);
	free(out);
	/* an -e of a name the play neither has nor uses (a typo: the play
	 * would run on its default) is said; before, nothing was */
	knobctl_exits(0, &out, &err, "play %s/ev.xml --check -e p=somax -e pp=other", h.tmp);
	ck_assert_msg(strstr(err, "knobctl play: warning: -e pp=other: the play has no <var "
	    "name=\"pp\"> and no ${pp}: not used") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "-e p=") == NULL, "%s", err);
	free(out);
	free(err);
	ck_assert(!somax_is(0, "2345"));
}
END_TEST

/* An -e value is expanded as a <var> is, by the same function: it may use
 * the file's <var>s and the -e values given before it (the same name's
 * too: -e p='${p}ax' extends the p before it).  A name it cannot find is
 * an error naming the -e argument, not a file line, exit 2.  Before, the
 * value went in as written: the plan applied profile '${p}${suf}'. */
START_TEST(play_extra_var_expanded)
{
	char *out, *err;

	write_file("ee.xml", "<?xml version=\"1.0\"?>\n<play name=\"ee\" nodes=\"node01\">\n"
	    "  <var name=\"pre\" value=\"so\"/>\n  <var name=\"p\" value=\"${pre}-none\"/>\n"
	    "  <apply profile=\"${p}\"/>\n</play>\n");
	somax_profile();
	knobctl_exits(0, &out, &err, "play %s/ee.xml --check -e suf=ax -e 'p=${pre}m' "
	    "-e 'p=${p}${suf}'", h.tmp);
	ck_assert_msg(strstr(out, "knobctl apply somax --check -w node01") != NULL, "%s", out);
	free(out);
	free(err);
	/* a later -e is not seen by an earlier one */
	knobctl_exits(2, &out, &err, "play %s/ee.xml --check -e 'p=${pre}${suf}' -e suf=max",
	    h.tmp);
	ck_assert_msg(strstr(err, "knobctl play: -e 'p=${pre}${suf}': unknown variable ${suf} "
	    "(neither a <var> of the play nor an -e given before this one)\n") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "ee.xml:") == NULL, "%s", err);
	free(out);
	free(err);
	ck_assert(!somax_is(0, "2345"));
}
END_TEST

/* -e NAME without a value: one error line, knobctl play's, exit 2.
 * Before, it lacked the "knobctl play:" prefix and the load went on to
 * "em.xml:3: unknown variable ${p}" after it. */
START_TEST(play_extra_var_malformed)
{
	char *out, *err;

	write_file("em.xml", "<?xml version=\"1.0\"?>\n<play name=\"em\" nodes=\"node01\">\n"
	    "  <apply profile=\"${p}\"/>\n</play>\n");
	knobctl_exits(2, &out, &err, "play %s/em.xml --check -e p", h.tmp);
	ck_assert_str_eq(err, "knobctl play: -e p: use NAME=VALUE\n");
	ck_assert_str_eq(out, "");
	free(out);
	free(err);
}
END_TEST

/* A bench the agent would refuse for its sizes (the rule is one function,
 * the agent's and knobctl bench's): size="64k" under seq-write's default
 * 1m block, an <at> size that is not a multiple of the bench's bs, are
 * file:line errors when the play loads, --check or not, exit 2, and the
 * apply above them never runs (keep="yes").  Before, the play applied,
 * then the bench failed on every node and somaxconn stayed 2345. */
START_TEST(play_bench_sizes_refused)
{
	char *out, *err;

	somax_profile();
	err = play_errors("bsz.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"bsz\" nodes=\"@all\" keep=\"yes\">\n  <apply profile=\"somax\"/>\n"
	    "  <bench kind=\"seq-write\" dir=\"%s\" threads=\"1\" size=\"64k\"/>\n"	/* 4 */
	    "  <bench kind=\"seq\" dir=\"%s\" threads=\"1..2\" bs=\"64k\" size=\"1m\">\n"	/* 5 */
	    "    <at threads=\"2\" size=\"100k\"/>\n  </bench>\n</play>\n", data, data);
	has_error(err, "bsz.xml", 4, "bench: seq-write, 1 thread(s): size 64k is not a multiple "
	    "of the block size 1m (the kind's default block size: set bs)");
	has_error(err, "bsz.xml", 5, "bench: seq-write, 2 thread(s): size 100k is not a multiple "
	    "of the block size 64k\n");
	free(err);
	knobctl_exits(2, &out, &err, "play %s/bsz.xml --check", h.tmp);
	has_error(err, "bsz.xml", 4, "bench: seq-write, 1 thread(s): size 64k");
	free(out);
	free(err);
	for (int i = 0; i < 3; i++)
		ck_assert(!somax_is(i, "2345"));
}
END_TEST

/* --check with no earlier run of any phase: the total's runtime is
 * unknown, as each bench's line says.  Before: "expected runtime at
 * least 0 s". */
START_TEST(play_check_runtime_unknown)
{
	char *out, *err;

	write_file("ru.xml", "<?xml version=\"1.0\"?>\n<play name=\"ru\" nodes=\"node01\">\n"
	    "  <bench kind=\"seq\" dir=\"%s\" threads=\"1..2\" size=\"1m\"/>\n</play>\n", data);
	knobctl_exits(0, &out, &err, "play %s/ru.xml --check", h.tmp);
	ck_assert_msg(strstr(out, "expected runtime unknown: no earlier run") && strstr(out,
	    " GiB of data; expected runtime unknown (no earlier run of these phases); nothing "
	    "was written\n") && !strstr(out, "at least"), "%s", out);
	free(out);
	free(err);
}
END_TEST

/* Is the directory at path (arg) empty? */
static int
dir_empty(void *arg)
{
	return harness_sh("test -z \"$(ls -A %s)\"", (const char *)arg) == 0;
}

/* Is there something in the directory at path (arg)? */
static int
dir_full(void *arg)
{
	return !dir_empty(arg);
}

/* The stored run of the interrupted bench (one thread, on node01) names
 * no node but node01 in cleanup_failed, with its rank (none when the
 * signal came before its prepare): node02 and node03 had no ranks and
 * hold no files.  Before, they were named too, "the files of its ranks
 * may be left" (no rank), their release cut off mid-wait. */
static void
only_node01_named(void)
{
	json_object *doc, *cf = NULL;
	int rc;

	doc = need(harness_knobctl_json(&h, &rc, "--json results show latest"));
	json_object_object_get_ex(doc, "cleanup_failed", &cf);
	fprintf(stderr, "cleanup_failed: %s\n", cf ? json_object_to_json_string(cf) : "none");
	ck_assert_msg(!cf || json_object_array_length(cf) <= 1, "%s", json_object_to_json_string(cf));
	for (size_t i = 0; cf && i < json_object_array_length(cf); i++) {
		ck_assert_str_eq(cu_str(json_object_array_get_idx(cf, i), "node"), "node01");
		ck_assert_msg(strstr(cu_str(json_object_array_get_idx(cf, i), "error"),
		    "the files of its ranks 0 may be left in "), "%s",
		    json_object_to_json_string(cf));
	}
	json_object_put(doc);
}

/* SIGINT, then with --json SIGTERM, to knobctl itself while the play's
 * long bench runs (256 writes at 10 a second: 25 s): the bench stops at
 * once, the stop's rollback puts back every node's original (1111, 1112,
 * 1113, not the defaults), the summary says so (the JSON's status
 * "interrupted"), exit 128 + the signal, and the agents remove the
 * bench's files.  Before, the signal killed knobctl: the nodes kept the
 * profile, with nothing printed.  SIGHUP too, the terminal or the ssh
 * session of the play gone: before, it killed knobctl (exit 129) and
 * every node kept the profile.  Only node01, which had the bench's one
 * thread, is named where files may be left (only_node01_named). */
START_TEST(play_signal_rolls_back)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	char path[PATH_MAX + 16], proc[64], comm[64], *out;

	somax_profile();
	write_file("sig.xml", "<?xml version=\"1.0\"?>\n<play name=\"sig\" nodes=\"@all\">\n"
	    "  <apply profile=\"somax\"/>\n"
	    "  <bench kind=\"seq-write\" dir=\"%s\" threads=\"1\" bs=\"4k\" size=\"1m\" "
	    "test-rate-iops=\"10\"/>\n  <rollback/>\n</play>\n", data);
	snprintf(path, sizeof(path), "%s/sig.out", h.tmp);
	for (size_t k = 0; k < nitems(sigs); k++) {
		uint64_t t0;
		pid_t pid;
		int st;

		set_originals(3);
		unlink(path);
		pid = harness_knobctl_bg(&h, path, "&2", "%splay %s/sig.xml", k ? "--json " : "",
		    h.tmp);
		ck_assert_int_gt(pid, 0);
		/* with --json nothing is printed until the end: the bench's
		 * files tell that it began, after the apply */
		ck_assert_msg(k == 0 ? cu_wait(at_step2, path, 30) >= 0 :
		    cu_wait(dir_full, data, 30) >= 0, "the play never reached its bench");
		snprintf(proc, sizeof(proc), "/proc/%d/comm", (int)pid);
		ck_assert_int_ge(read_small_file(proc, comm, sizeof(comm)), 0);
		ck_assert_str_eq(comm, "knobctl");	/* not a wrapper */
		t0 = now_mono_ns();
		ck_assert_int_eq(kill(pid, sigs[k]), 0);
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		out = cu_slurp(path);
		fprintf(stderr, "%s\n", out);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 128 + sigs[k], "signal %d: %s "
		    "%d: %s", sigs[k], WIFEXITED(st) ? "exit" : "killed by signal", WIFEXITED(st) ?
		    WEXITSTATUS(st) : WTERMSIG(st), out);
		ck_assert_msg(now_mono_ns() - t0 < 10000000000ull, "%s", out);
		if (k == 0) {
			ck_assert_msg(strstr(out, "SIGINT: the play stops") != NULL, "%s", out);
			ck_assert_msg(strstr(out, "play stopped: rolling back what it applied") !=
			    NULL, "%s", out);
			ck_assert_msg(strstr(out, "play sig: interrupted by SIGINT") != NULL, "%s",
			    out);
		} else {
			json_object *doc = need(json_tokener_parse(out));

			ck_assert_str_eq(cu_str(doc, "status"), "interrupted");
			ck_assert_str_eq(cu_str(doc, "signal"), sigs[k] == SIGTERM ? "SIGTERM" :
			    "SIGHUP");
			ck_assert_str_eq(cu_str(json_object_array_get_idx(cu_get(doc, "steps"), 1),
			    "status"), "interrupted");
			json_object_put(doc);
		}
		free(out);
		for (int i = 0; i < 3; i++)
			ck_assert_msg(somax_is(i, i == 0 ? "1111" : i == 1 ? "1112" : "1113"),
			    "node%02d", i + 1);
		ck_assert_msg(cu_wait(dir_empty, data, 10) >= 0, "the bench's files stay");
		only_node01_named();
	}
}
END_TEST

/* The cut play's stdout and stderr files. */
static char cut_out[PATH_MAX + 16], cut_err[PATH_MAX + 16];

/* The cut play's stdout holds arg: a cu_wait condition. */
static int
cut_out_has(void *arg)
{
	return cu_file_has(cut_out, arg);
}

/* The cut play's stderr holds arg: a cu_wait condition. */
static int
cut_err_has(void *arg)
{
	return cu_file_has(cut_err, arg);
}

/* Cut (down) or restore (up) node i's link at the controller's bridge:
 * its TCP connections neither fail nor answer. */
static void
link_set(int i, const char *updown)
{
	ck_assert_int_eq(harness_sh("ip -n %s link set kv%d %s", h.ctl_ns, i + 1, updown), 0);
}

/* A background play's stdout and stderr: h.tmp/NAME.out and NAME.err
 * (cut_out, cut_err). */
static void
cut_files(const char *name)
{
	snprintf(cut_out, sizeof(cut_out), "%s/%s.out", h.tmp, name);
	snprintf(cut_err, sizeof(cut_err), "%s/%s.err", h.tmp, name);
}

/* The cut play, and where its stdout and stderr go: somax applied on
 * 1111, 1112, 1113, then a three-rank bench of 25 s. */
static void
cut_play_write(void)
{
	somax_profile();
	write_file("cut.xml", "<?xml version=\"1.0\"?>\n<play name=\"cut\" nodes=\"@all\">\n"
	    "  <apply profile=\"somax\"/>\n"
	    "  <bench kind=\"seq-write\" dir=\"%s\" threads=\"3\" bs=\"4k\" size=\"1m\" "
	    "test-rate-iops=\"10\"/>\n  <rollback/>\n</play>\n", data);
	cut_files("cut");
}

/* The cut play's bench stop has node01's and node02's answers: it waits
 * for node03 alone. */
static void
cut_play_waits_node03(void)
{
	ck_assert_msg(cu_wait(cut_err_has, (void *)(uintptr_t)"node01: stopped, its files removed",
	    20) >= 0 && cu_wait(cut_err_has, (void *)(uintptr_t)"node02: stopped, its files "
	    "removed", 20) >= 0, "node01 and node02 never answered the stop");
}

/* The cut play (cut_play_write) started with the formatted options, node03's link cut
 * once its rank runs, then SIGINT to knobctl; its pid. */
static pid_t
cut_play_stopped(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static pid_t
cut_play_stopped(const char *fmt, ...)
{
	va_list ap;
	char *opts;
	pid_t pid;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&opts, fmt, ap), 0);
	va_end(ap);
	set_originals(3);
	unlink(cut_out);
	unlink(cut_err);
	ck_assert_int_eq(truncate(h.node[2].log, 0), 0);	/* an earlier run's ": running" */
	pid = harness_knobctl_bg(&h, cut_out, cut_err, "play %s %s/cut.xml", opts, h.tmp);
	free(opts);
	ck_assert_int_gt(pid, 0);
	ck_assert_msg(harness_wait_log(&h, 2, ": running", 30) == 0, "node03 never ran the bench");
	link_set(2, "down");
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	return pid;
}

/* knobctl (pid) exits 130 within secs s; its stdout (malloc'd). */
static char *
cut_play_exits(pid_t pid, double secs)
{
	uint64_t t0 = now_mono_ns();
	char *out, *err;
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	out = cu_slurp(cut_out);
	err = cu_slurp(cut_err);
	fprintf(stderr, "after %.1f s:\n%s\nstderr:\n%s\n", (double)(now_mono_ns() - t0) / 1e9,
	    out, err);
	free(err);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 130, "%s %d", WIFEXITED(st) ? "exit" :
	    "killed by signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	ck_assert_msg(now_mono_ns() - t0 < (uint64_t)(secs * 1e9), "the stop's rollback came "
	    "late");
	return out;
}

/* The stop's rollback put node01's and node02's originals back, not
 * node03's (its link cut); node03's link restored, a plain
 * rollback (what knobctl says to run) puts its original back too. */
static void
cut_play_rolled_back(void)
{
	ck_assert(somax_is(0, "1111"));
	ck_assert(somax_is(1, "1112"));
	ck_assert(somax_is(2, "2345"));
	link_set(2, "up");
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "rollback -w node03 --wait 20"), 0);
	ck_assert(somax_is(2, "1113"));
}

/* A play stopped in a bench whose node03 link is cut (its TCP
 * connection neither fails nor answers): the bench's stop waits for the
 * nodes' answers to its abort at most --stop-wait (2 s here), names
 * node03 (its clean-up unknown), and the rollback puts back node01's and
 * node02's originals: exit 130 within 8 s of the SIGINT; --json says
 * which nodes were rolled back and which not.  Before, the stop waited
 * the bench's stall limit, 60 s, before the rollback began.  Then with
 * --stop-wait 60 a second SIGINT once node01 and node02 answered, while
 * the stop waits for node03: the rollback runs at once (exit 130 within
 * 8 s, the originals back, said on stderr; only node03 named).
 * Before, the second signal killed knobctl and every node kept the
 * play's tuning. */
START_TEST(play_stop_cut_node_bounded)
{
	json_object *doc, *run;
	char *out;
	pid_t pid;
	int rc;

	cut_play_write();
	pid = cut_play_stopped("--connect-timeout 1 --json --stop-wait 2");
	out = cut_play_exits(pid, 8);
	doc = need(json_tokener_parse(out));
	ck_assert_str_eq(cu_str(doc, "status"), "interrupted");
	ck_assert_int_eq(json_object_get_int(cu_get(doc, "stop_wait_s")), 2);
	ck_assert(!json_object_get_boolean(cu_get(doc, "wait_cut_short")));
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "rolled_back")), 2);
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "not_rolled_back")), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cu_get(doc,
	    "not_rolled_back"), 0)), "node03");
	json_object_put(doc);
	cut_play_rolled_back();
	free(out);
	/* the stored run names node03 alone, its clean-up unknown */
	run = need(harness_knobctl_json(&h, &rc, "--json results show latest"));
	ck_assert_int_eq(json_object_array_length(cu_get(run, "cleanup_failed")), 1);
	ck_assert_str_eq(cu_str(json_object_array_get_idx(cu_get(run, "cleanup_failed"), 0),
	    "node"), "node03");
	ck_assert_msg(strstr(cu_str(json_object_array_get_idx(cu_get(run, "cleanup_failed"), 0),
	    "error"), "no answer to the stop for 2 s"), "%s", json_object_to_json_string(run));
	json_object_put(run);

	pid = cut_play_stopped("--connect-timeout 1 --stop-wait 60");
	cut_play_waits_node03();
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	out = cut_play_exits(pid, 8);
	ck_assert(cu_file_has(cut_err, "knobctl play: SIGINT again: not waiting any longer"));
	ck_assert_msg(strstr(out, "play stopped: rolling back what it applied") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "node03: NOT rolled back") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "clean-up unknown: node03") && !strstr(out, "clean-up unknown: "
	    "node01") && !strstr(out, "clean-up unknown: node02"), "%s", out);
	cut_play_rolled_back();
	free(out);
	ck_assert_msg(cu_wait(dir_empty, data, 10) >= 0, "the bench's files stay");
}
END_TEST

/* The play stopped, SIGINT again during the bench's wait, and a third
 * during the rollback (which waits node03's connect timeout): knobctl
 * exits at once (killed by SIGINT), naming on stderr the nodes that may
 * keep the play's tuning and the rollback that undoes it; that rollback,
 * run once node03's link is back, puts every original back. */
START_TEST(play_third_signal_says_what_stays)
{
	char *out, *err;
	pid_t pid;
	int st;

	cut_play_write();
	pid = cut_play_stopped("--connect-timeout 5 --stop-wait 60");
	cut_play_waits_node03();
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	ck_assert_msg(cu_wait(cut_out_has, (void *)(uintptr_t)"knobctl rollback on every node",
	    10) >= 0, "the stop's rollback never began");
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	out = cu_slurp(cut_out);
	err = cu_slurp(cut_err);
	fprintf(stderr, "%s\nstderr:\n%s\n", out, err);
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT, "not killed by SIGINT");
	ck_assert_msg(strstr(err, "knobctl play: SIGINT a third time: exiting at once, NOT rolled "
	    "back: node[01-03] may keep the play's tuning (each agent's journal holds the "
	    "originals): knobctl rollback -w node[01-03] undoes it\n"), "%s", err);
	free(out);
	free(err);
	link_set(2, "up");
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "rollback -w node[01-03] --wait 20"), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_msg(somax_is(i, i == 0 ? "1111" : i == 1 ? "1112" : "1113"), "node%02d",
		    i + 1);
}
END_TEST

/* The profile "third": net.core.somaxconn 4567. */
static void
third_profile(void)
{
	write_file("third.xml", "<?xml version=\"1.0\"?>\n<profile name=\"third\">\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"4567\"/>\n</profile>\n");
}

/* A third signal after a <rollback/> of the play took the nodes off the
 * profiles they had before it (node01 and node03 "other", node02
 * "third"; originals 1111, 1112, 1113): knobctl exits at once, its words
 * naming no node with the play's tuning and, per earlier profile, the
 * nodes that went back to their originals and the apply that puts it
 * back; the nodes hold the originals, and those applies put the
 * profiles back.  knobctl is stopped while the three signals queue (three
 * kinds: one kind does not queue twice), so all three land in the bench
 * step, before the play's own restore. */
START_TEST(play_third_signal_says_untuned)
{
	static const char *const want = " a third time: exiting at once; no node holds the "
	    "play's tuning; node[01,03] went back to its original values, not to profile other "
	    "it had before the play (knobctl apply other -w node[01,03] puts that back); node02 "
	    "went back to its original values, not to profile third it had before the play "
	    "(knobctl apply third -w node02 puts that back)\n";
	char *err;
	pid_t pid;
	int st;

	somax_profile();
	other_profile();
	third_profile();
	set_originals(3);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "apply other -w node[01,03]"), 0);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "apply third -w node02"), 0);
	write_file("ut.xml", "<?xml version=\"1.0\"?>\n<play name=\"ut\" nodes=\"@all\">\n"
	    "  <apply profile=\"somax\"/>\n  <rollback/>\n"
	    "  <bench kind=\"seq-write\" nodes=\"node01\" dir=\"%s\" threads=\"1\" bs=\"4k\" "
	    "size=\"1m\" test-rate-iops=\"10\"/>\n</play>\n", data);
	cut_files("ut");
	pid = harness_knobctl_bg(&h, cut_out, cut_err, "play %s/ut.xml", h.tmp);
	ck_assert_int_gt(pid, 0);
	ck_assert_msg(cu_wait(cut_out_has, (void *)(uintptr_t)"== step 3/", 30) >= 0,
	    "the play never reached its bench");
	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	ck_assert_int_eq(kill(pid, SIGHUP), 0);
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_int_eq(kill(pid, SIGCONT), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	err = cu_slurp(cut_err);
	fprintf(stderr, "stderr:\n%s\n", err);
	ck_assert_msg(WIFSIGNALED(st), "exit %d", WEXITSTATUS(st));
	ck_assert_msg(strstr(err, want) != NULL, "%s", err);
	free(err);
	for (int i = 0; i < 3; i++)
		ck_assert_msg(somax_is(i, i == 0 ? "1111" : i == 1 ? "1112" : "1113"), "node%02d",
		    i + 1);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "apply other -w node[01,03] --wait 20"),
	    0);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "apply third -w node02 --wait 20"), 0);
	ck_assert(somax_is(0, "3456") && somax_is(1, "4567") && somax_is(2, "3456"));
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "rollback -w @all"), 0);	/* shared */
}
END_TEST

/* A play stopped by SIGINT in a bench on node01, whose "other" a
 * <rollback/> before the bench took off: the bench's stop waits
 * --stop-wait 1 s for node01's abort, whose clean-up takes 3 s
 * ($KNOB_TEST_SLOW_CLEANUP: a delete of many large files), so node01
 * still holds its tuning lock when the play applies "other" back; that
 * apply queues for the lock as the stop's rollback does, and node01 has
 * "other" (3456) again, exit 130.  Before, it was refused busy at once:
 * "node01: NOT restored to other (busy)", node01 left at its original. */
START_TEST(play_signal_restore_waits_lock)
{
	char *out;
	pid_t pid;

	somax_profile();
	other_profile();
	set_originals(1);
	harness_agent_stop(&h, 0, SIGTERM);
	setenv("KNOB_TEST_SLOW_CLEANUP", "3", 1);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	unsetenv("KNOB_TEST_SLOW_CLEANUP");
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "apply other -w node01"), 0);
	write_file("rw.xml", "<?xml version=\"1.0\"?>\n<play name=\"rw\" nodes=\"node01\">\n"
	    "  <apply profile=\"somax\"/>\n  <rollback/>\n"
	    "  <bench kind=\"seq-write\" dir=\"%s\" threads=\"1\" bs=\"4k\" size=\"1m\" "
	    "test-rate-iops=\"10\"/>\n</play>\n", data);
	cut_files("rw");
	pid = harness_knobctl_bg(&h, cut_out, cut_err, "play --stop-wait 1 %s/rw.xml", h.tmp);
	ck_assert_int_gt(pid, 0);
	ck_assert_msg(cu_wait(dir_full, data, 30) >= 0, "the play never reached its bench");
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	out = cut_play_exits(pid, 20);
	ck_assert_msg(strstr(out, "node01: other restored") != NULL, "%s", out);
	free(out);
	ck_assert(somax_is(0, "3456"));
}
END_TEST

/* --json says why: each failed node with its step and reason ("failed"),
 * the nodes NOT rolled back ("not_rolled_back") and a failed step's
 * "reason".  The play of play_rollback_step_takes_dropped (node03
 * unreachable, node02 drifting at a verify) with a last verify on node03,
 * which has no node left: that step fails and the play stops; node03,
 * which no apply reached, is not in not_rolled_back (a node that is:
 * play_bench_lost_node_within_max_fail).  Before, --json had only the
 * names in failed_nodes and "failed" per step: every reason was dropped. */
START_TEST(play_json_reasons)
{
	json_object *doc, *failed, *f, *step;
	int rc;

	somax_profile();
	other_profile();
	harness_agent_stop(&h, 2, SIGKILL);
	write_file("jr.xml", "<?xml version=\"1.0\"?>\n<play name=\"jr\" nodes=\"@all\" "
	    "max-fail=\"2\">\n  <apply profile=\"somax\"/>\n"
	    "  <verify profile=\"other\" nodes=\"node02\"/>\n  <rollback/>\n"
	    "  <verify profile=\"somax\" nodes=\"node03\"/>\n</play>\n");
	doc = need(harness_knobctl_json(&h, &rc, "--json --connect-timeout 2 play %s/jr.xml",
	    h.tmp));
	fprintf(stderr, "%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY));
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(cu_str(doc, "status"), "stopped");
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "failed_nodes")), 2);
	failed = cu_get(doc, "failed");
	ck_assert_int_eq(json_object_array_length(failed), 2);
	f = json_object_array_get_idx(failed, 0);
	ck_assert_str_eq(cu_str(f, "node"), "node03");
	ck_assert_str_eq(cu_str(f, "step"), "apply");
	ck_assert_int_eq(json_object_get_int(json_object_object_get(f, "line")), 3);
	ck_assert_msg(strstr(cu_str(f, "reason"), "connection refused") != NULL, "%s",
	    cu_str(f, "reason"));
	f = json_object_array_get_idx(failed, 1);
	ck_assert_str_eq(cu_str(f, "node"), "node02");
	ck_assert_str_eq(cu_str(f, "step"), "verify");
	ck_assert_int_eq(json_object_get_int(json_object_object_get(f, "line")), 4);
	ck_assert_msg(strstr(cu_str(f, "reason"), "drift") != NULL, "%s", cu_str(f, "reason"));
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "not_rolled_back")), 0);
	step = json_object_array_get_idx(cu_get(doc, "steps"), 3);
	ck_assert_str_eq(cu_str(step, "status"), "failed");
	ck_assert_str_eq(cu_str(step, "reason"), "no node left to verify");
	ck_assert_ptr_null(json_object_object_get(json_object_array_get_idx(cu_get(doc, "steps"),
	    0), "reason"));
	json_object_put(doc);
	ck_assert(!somax_is(0, "2345"));
	ck_assert(!somax_is(1, "2345"));
}
END_TEST

/* A node down from the start of the play (its agent killed: connection
 * refused) never got the apply's request: nothing of the play can be
 * there.  max-fail="1": node01 and node02 apply, then a verify of another
 * profile fails them, the play stops and its rollback puts their originals
 * back (1111, 1112); node03 is said never reached, not NOT rolled back,
 * and is not in not_rolled_back; still exit 1 (node03 failed).  Before,
 * the rollback took node03 as one an apply may have reached (3) and said
 * it NOT rolled back. */
START_TEST(play_never_reached_not_rolled_back)
{
	json_object *doc;
	char *out = NULL;
	int rc;

	somax_profile();
	other_profile();
	harness_agent_stop(&h, 2, SIGKILL);
	write_file("nr.xml", "<?xml version=\"1.0\"?>\n<play name=\"nr\" nodes=\"@all\" "
	    "max-fail=\"1\">\n  <apply profile=\"somax\"/>\n  <verify profile=\"other\"/>\n"
	    "</play>\n");
	set_originals(2);
	rc = harness_knobctl_logged(&h, &out, "--connect-timeout 2 play %s/nr.xml", h.tmp);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "rollback on every node an apply may have reached (2)") != NULL,
	    "%s", out);
	node03_never_reached(out);

	/* --json: node03 failed, not in not_rolled_back */
	doc = need(harness_knobctl_json(&h, &rc, "--json --connect-timeout 2 play %s/nr.xml",
	    h.tmp));
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(cu_str(doc, "status"), "stopped");
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "not_rolled_back")), 0);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cu_get(doc,
	    "failed_nodes"), 2)), "node03");
	json_object_put(doc);
	ck_assert(somax_is(0, "1111"));
	ck_assert(somax_is(1, "1112"));
}
END_TEST

/* A bench step that loses node03 (its agent killed mid-phase) with
 * max-fail="1": node03 is dropped and counted, the run is stored degraded
 * (node03 missing, the phase a partial sum of the others), and the play
 * goes on: the verify after it runs on node01 and node02, the rollback
 * puts their originals back; exit 1, node03 in failed_nodes and in
 * not_rolled_back (it holds the profile, its agent gone).  Before, the
 * bench step failed and the play stopped there, though an apply or a
 * verify that loses a node within max-fail goes on. */
START_TEST(play_bench_lost_node_within_max_fail)
{
	json_object *doc, *run, *ph, *steps, *f;
	char path[PATH_MAX + 16], *out;
	pid_t pid;
	int st;

	somax_profile();
	set_originals(3);
	write_file("bl.xml", "<?xml version=\"1.0\"?>\n<play name=\"bl\" nodes=\"@all\" "
	    "max-fail=\"1\">\n  <apply profile=\"somax\"/>\n"
	    "  <bench kind=\"seq-write\" dir=\"%s\" threads=\"3\" bs=\"4k\" size=\"256k\" "
	    "test-rate-iops=\"100\"/>\n  <verify profile=\"somax\"/>\n  <rollback/>\n"
	    "</play>\n", data);
	snprintf(path, sizeof(path), "%s/bl.out", h.tmp);
	pid = harness_knobctl_bg(&h, path, "&2", "--json --connect-timeout 2 play %s/bl.xml", h.tmp);
	ck_assert_int_gt(pid, 0);
	ck_assert_msg(harness_wait_log(&h, 2, ": running", 30) == 0, "node03 never ran the bench");
	harness_agent_stop(&h, 2, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	out = cu_slurp(path);
	fprintf(stderr, "%s\n", out);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s", out);
	doc = need(json_tokener_parse(out));
	free(out);
	ck_assert_str_eq(cu_str(doc, "status"), "finished-with-failures");
	steps = cu_get(doc, "steps");
	ck_assert_int_eq(json_object_array_length(steps), 4);
	for (size_t i = 0; i < 4; i++)
		ck_assert_str_eq(cu_str(json_object_array_get_idx(steps, i), "status"), "ok");
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "failed_nodes")), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cu_get(doc,
	    "failed_nodes"), 0)), "node03");
	f = json_object_array_get_idx(cu_get(doc, "failed"), 0);
	ck_assert_str_eq(cu_str(f, "step"), "bench");
	ck_assert_str_eq(cu_str(f, "reason"), "lost during the benchmark");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cu_get(doc,
	    "not_rolled_back"), 0)), "node03");
	json_object_put(doc);
	/* the run: stored degraded, node03 missing from its partial phase */
	run = need(harness_knobctl_json(&h, &st, "--json results show latest"));
	ck_assert_str_eq(cu_str(run, "status"), "degraded-or-failed");
	ph = json_object_array_get_idx(cu_get(run, "phases"), 0);
	ck_assert_str_eq(cu_str(ph, "status"), "degraded");
	ck_assert(json_object_get_boolean(cu_get(ph, "partial")));
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cu_get(ph, "missing"),
	    0)), "node03");
	json_object_put(run);
	ck_assert(somax_is(0, "1111"));
	ck_assert(somax_is(1, "1112"));
}
END_TEST

/* A case whose tests share the agents start starts (the case's
 * teardown stops them), each test after shared_reset. */
static TCase *
shared_tcase(const char *name, void (*start)(void))
{
	TCase *tc = tcase_create(name);

	tcase_add_unchecked_fixture(tc, start, teardown);
	tcase_add_checked_fixture(tc, shared_reset, shared_done);
	tcase_set_timeout(tc, 180);
	return tc;
}

int
main(void)
{
	Suite *s = suite_create("play");
	TCase *ts = shared_tcase("shared", shared_setup);
	TCase *td = shared_tcase("node03-down", down_setup);
	TCase *tc = cu_tcase("play", setup, teardown, 180);

	tcase_add_test(ts, play_three_nodes);
	tcase_add_test(ts, play_compare);
	tcase_add_test(ts, play_unsupported_fails_node);
	tcase_add_test(ts, run_profile_not_in_effect);
	tcase_add_test(ts, play_check_writes_nothing);
	tcase_add_test(ts, play_check_plan_at);
	tcase_add_test(ts, play_step_nodes_outside_targets);
	tcase_add_test(ts, play_file_errors);
	tcase_add_test(ts, play_text_visible);
	tcase_add_test(ts, play_nested_bench_own_attrs);
	tcase_add_test(ts, shipped_plays_plan);
	tcase_add_test(ts, io500_like_score);
	tcase_add_test(ts, score_without_metadata);
	tcase_add_test(ts, play_health_sweep_fails);
	tcase_add_test(ts, play_extra_var_last_wins);
	tcase_add_test(ts, play_extra_var_expanded);
	tcase_add_test(ts, play_extra_var_malformed);
	tcase_add_test(ts, play_bench_sizes_refused);
	tcase_add_test(ts, play_check_runtime_unknown);
	tcase_add_test(ts, play_stop_rolls_back_timed_out);
	tcase_add_test(ts, play_signal_rolls_back);
	tcase_add_test(ts, play_stop_cut_node_bounded);
	tcase_add_test(ts, play_rollback_step_trip_keeps_marks);
	tcase_add_test(ts, play_third_signal_says_what_stays);
	tcase_add_test(ts, play_third_signal_says_untuned);
	tcase_add_test(td, play_max_fail_unreachable);
	tcase_add_test(td, play_rollback_step_takes_dropped);
	tcase_add_test(td, play_json_reasons);
	tcase_add_test(td, play_never_reached_not_rolled_back);
	tcase_add_test(td, play_health_step);
	/* each of these restarts or kills an agent mid-test: agents of its own */
	tcase_add_test(tc, play_stripe_count_at);
	tcase_add_test(tc, play_cache_x2);
	tcase_add_test(tc, play_signal_restore_waits_lock);
	tcase_add_test(tc, play_bench_lost_node_within_max_fail);
	suite_add_tcase(s, ts);
	suite_add_tcase(s, td);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
