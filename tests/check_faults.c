/* Faults injected into real knobd agents in network namespaces
 * (tests/harness.h): veth links cut on the bridge side during a benchmark
 * phase, during an apply and during a health sweep, SIGKILL of an agent
 * mid-phase, and corrupted journals.  What a user relies on:
 * - the cut node is reported (timeout/unreachable, phase degraded) within
 *   the configured deadline while the other nodes complete;
 * - the cut node's benchmark files are gone within lease + 5 s, checked
 *   from inside that node's namespace;
 * - after the link comes back the next command works and verify shows the
 *   node's true state (read from its stand-in GPFS configuration);
 * - an agent restarted after a SIGKILL removes the phase directory it had
 *   recorded, and nothing it had not recorded;
 * - a corrupt journal stops knobd at start-up with file:line detail, and
 *   the file stays as it was.
 * There is no GPFS here: the apply test gives node02 a --sysroot with
 * stand-in mmchconfig/mmdiag scripts (a slow mmchconfig, so that the link
 * can be cut while it runs). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <json-c/json.h>

#include "harness.h"
#include "tune.h"
#include "util.h"

#define LEASE_S		3
#define CTL_TIMEOUT_S	5	/* knobctl --timeout: silent node -> timeout */

static struct harness h;
static char data[PATH_MAX];	/* the benchmark directory, under the harness's temp dir */

static void
setup(void)
{
	ck_assert_msg(harness_start(&h, 3, 1) == 0, "harness start failed");
	snprintf(data, sizeof(data), "%s/data", h.tmp);
	ck_assert_int_eq(mkdir(data, 0755), 0);
}

static void
teardown(void)
{
	harness_stop(&h);	/* removes h.tmp, data with it */
}

/* knobctl ARGS in the background (args is freed); its stdout goes to
 * out, its exit status is the child's. */
static pid_t
knobctl_async(const char *out, char *args)
{
	char *o = NULL;
	pid_t pid = fork();

	if (pid == 0) {
		int rc = harness_knobctl(&h, &o, NULL, "%s", args);

		write_file_atomic(out, o ? o : "", o ? strlen(o) : 0, 0644);
		_exit(rc < 0 ? 127 : rc);
	}
	free(args);
	ck_assert_int_gt(pid, 0);
	return pid;
}

/* Wait for pid; its exit status. */
static int
reap(pid_t pid)
{
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* Some path matches pattern. */
static int
exists_glob(const char *pattern)
{
	glob_t g;
	int r = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;

	globfree(&g);
	return r;
}

static size_t
count_glob(const char *pattern)
{
	glob_t g;
	size_t n = glob(pattern, 0, NULL, &g) == 0 ? g.gl_pathc : 0;

	globfree(&g);
	return n;
}

/* Seconds (0.1 s steps, up to max) until cond(arg) holds; -1 if it never did. */
static double
wait_for(int (*cond)(const char *), const char *arg, double max)
{
	uint64_t t0 = now_mono_ns();

	for (;;) {
		double t = (double)(now_mono_ns() - t0) / 1e9;

		if (cond(arg))
			return t;
		if (t > max)
			return -1;
		usleep(100000);
	}
}

static int
gone_on_node02(const char *pattern)
{
	/* checked on the cut node itself, through its own namespace */
	return harness_node_sh(&h, 1, "! ls %s >/dev/null 2>&1", pattern) == 0;
}

/* Cut or restore node i's veth on the bridge side. */
static void
link_set(int i, const char *updown)
{
	ck_assert_int_eq(harness_sh("ip -n %s link set kv%d %s", h.ctl_ns, i + 1, updown), 0);
}

/* Create path with content s. 0 or -errno. */
static int
put_file(const char *path, const char *s)
{
	return write_file_atomic(path, s, strlen(s), 0755);
}

/* Member k of phase 0 of a knobctl --json bench document. */
static json_object *
phase0(json_object *doc, const char *k)
{
	json_object *phases = NULL, *v = NULL;

	ck_assert(json_object_object_get_ex(doc, "phases", &phases));
	ck_assert_msg(json_object_object_get_ex(json_object_array_get_idx(phases, 0), k, &v),
	    "no '%s' in %s", k, json_object_to_json_string(doc));
	return v;
}

START_TEST(cut_during_bench_phase)
{
	char out[PATH_MAX + 16], pat[PATH_MAX + 32], *txt = NULL;
	json_object *doc, *missing;
	double t_gone, t_end;
	uint64_t t_cut;
	pid_t pid;
	int rc;

	snprintf(out, sizeof(out), "%s/bench.json", h.tmp);
	snprintf(pat, sizeof(pat), "%s/knob.*/f.00000001", data);	/* node02's rank */
	pid = knobctl_async(out, xasprintf("--json --timeout %d bench seq-write -w @all --dir %s "
	    "--threads 3 --size 256m --bs 1m --rate-iops 20 --lease %d", CTL_TIMEOUT_S, data,
	    LEASE_S));
	ck_assert_msg(wait_for(exists_glob, pat, 30) >= 0, "node02 never started writing");
	link_set(1, "down");
	t_cut = now_mono_ns();
	t_gone = wait_for(gone_on_node02, pat, LEASE_S + 5);
	ck_assert_msg(t_gone >= 0, "node02's file still there %d s after the cut", LEASE_S + 5);
	printf("bench phase, link cut: node02's files gone %.1f s after the cut (lease %d s)\n",
	    t_gone, LEASE_S);
	rc = reap(pid);
	t_end = (double)(now_mono_ns() - t_cut) / 1e9;
	ck_assert_int_eq(rc, 1);	/* not every node finished */
	ck_assert_int_eq(read_file_bounded(out, 1 << 24, &txt, NULL), 0);
	doc = json_tokener_parse(txt);
	ck_assert_msg(doc != NULL, "not JSON: %s", txt);
	ck_assert_str_eq(json_object_get_string(phase0(doc, "status")), "degraded");
	missing = phase0(doc, "missing");
	ck_assert_int_eq(json_object_array_length(missing), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(missing, 0)), "node02");
	/* the other two wrote everything */
	ck_assert_int_eq(json_object_get_int64(phase0(doc, "bytes")), 2ll * (256 << 20));
	printf("bench phase, link cut: knobctl ended %.1f s after the cut, node02 missing\n",
	    t_end);
	json_object_put(doc);
	free(txt);
	ck_assert(harness_log_has(&h, 1, "lease expired"));
	/* every node's files are gone, and node02 serves again once the link is back */
	snprintf(pat, sizeof(pat), "%s/knob.*", data);
	ck_assert_msg(!exists_glob(pat), "files left in %s", data);
	link_set(1, "up");
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "--timeout 10 ping -w @all"), 0);
}
END_TEST

/* Stand-in GPFS under root: mmchconfig takes 3 s, then writes cfg. */
static void
gpfs_standin(const char *root, const char *cfg)
{
	char body[1024], path[PATH_MAX + 64];

	ck_assert_int_eq(harness_sh("mkdir -p %s/usr/lpp/mmfs/bin", root), 0);
	ck_assert_int_eq(put_file(cfg, "pagepool 1073741824\n"), 0);
	snprintf(body, sizeof(body), "#!/bin/sh\n# stand-in for mmdiag (no GPFS here)\n"
	    "[ \"$1\" = --config ] || exit 2\necho '=== mmdiag: config ==='\n"
	    "sed 's/^/ ! /' '%s'\n", cfg);
	snprintf(path, sizeof(path), "%s/usr/lpp/mmfs/bin/mmdiag", root);
	ck_assert_int_eq(put_file(path, body), 0);
	snprintf(body, sizeof(body), "#!/bin/sh\n# stand-in for mmchconfig (no GPFS here): slow\n"
	    "kv=$1; v=${kv#*=}\nsleep 3\nsed -i \"s/^pagepool .*/pagepool $v/\" '%s'\n", cfg);
	snprintf(path, sizeof(path), "%s/usr/lpp/mmfs/bin/mmchconfig", root);
	ck_assert_int_eq(put_file(path, body), 0);
	ck_assert_int_eq(harness_sh("chmod 755 %s/usr/lpp/mmfs/bin/*", root), 0);
}

START_TEST(cut_during_apply)
{
	char root[PATH_MAX + 16], cfg[PATH_MAX + 16], prof[PATH_MAX + 16], out[PATH_MAX + 16];
	char *txt = NULL;
	uint64_t t0;
	double t;
	pid_t pid;
	int rc, applied;

	snprintf(root, sizeof(root), "%s/root2", h.tmp);
	snprintf(cfg, sizeof(cfg), "%s/gpfs.cfg", h.tmp);
	gpfs_standin(root, cfg);
	harness_agent_stop(&h, 1, SIGTERM);
	snprintf(h.node[1].sysroot, sizeof(h.node[1].sysroot), "%s", root);
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
	snprintf(prof, sizeof(prof), "%s/cut.xml", h.tmp);
	ck_assert_int_eq(put_file(prof, "<?xml version=\"1.0\"?>\n<profile name=\"cut\">\n"
	    "  <gpfs key=\"pagepool\" value=\"512M\"/>\n</profile>\n"), 0);

	snprintf(out, sizeof(out), "%s/apply.out", h.tmp);
	t0 = now_mono_ns();
	pid = knobctl_async(out, xasprintf("--timeout %d apply %s -w @all", CTL_TIMEOUT_S, prof));
	/* the stand-in mmchconfig is running on node02: cut now */
	for (int i = 0; i < 200 && harness_node_sh(&h, 1, "pgrep -f '%s/usr/lpp/mmfs/bin/"
	    "mmchconfig' >/dev/null", root) != 0; i++)
		usleep(50000);
	ck_assert_msg(harness_node_sh(&h, 1, "pgrep -f '%s/usr/lpp/mmfs/bin/mmchconfig' "
	    ">/dev/null", root) == 0, "mmchconfig never ran on node02");
	link_set(1, "down");
	rc = reap(pid);
	t = (double)(now_mono_ns() - t0) / 1e9;
	ck_assert_int_eq(read_file_bounded(out, 1 << 20, &txt, NULL), 0);
	fprintf(stderr, "%s", txt);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(txt, "node02") && (strstr(txt, "timeout") ||
	    strstr(txt, "unreachable")), "node02 not reported: %s", txt);
	ck_assert_msg(t < CTL_TIMEOUT_S + 5, "apply took %.1f s", t);
	printf("apply, link cut: node02 reported after %.1f s (deadline %d s)\n", t,
	    CTL_TIMEOUT_S);
	free(txt);
	/* the others were answered: their lines are there, and not as errors */
	rc = harness_knobctl(&h, &txt, NULL, "verify %s -w node01,node03", prof);
	ck_assert_msg(rc == 0 || rc == 1, "verify on the others: exit %d", rc);
	free(txt);

	/* link back: the next command works, and verify tells what node02's
	 * stand-in GPFS really holds once the agent is done with the apply it
	 * went on with while cut off (committed, or reverted if it failed) */
	link_set(1, "up");
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "--timeout 10 ping -w node02"), 0);
	for (int i = 0; i < 200 && harness_node_sh(&h, 1, "pgrep -f '%s/usr/lpp/mmfs/bin/"
	    "mmchconfig' >/dev/null", root) == 0; i++)
		usleep(50000);
	ck_assert_int_eq(read_file_bounded(cfg, 4096, &txt, NULL), 0);
	applied = strstr(txt, "pagepool 1073741824") == NULL;	/* the original */
	printf("apply, link cut: node02 %s the apply while cut off\n", applied ?
	    "committed" : "reverted");
	free(txt);
	rc = harness_knobctl(&h, &txt, NULL, "verify %s -w node02", prof);
	ck_assert_msg(rc == (applied ? 0 : 1), "verify: exit %d\n%s", rc, txt);
	ck_assert_msg(strstr(txt, applied ? "1 of 1 key(s) match" :
	    "drift           gpfs pagepool: is 1073741824") != NULL, "%s", txt);
	free(txt);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "rollback -w node02"), 0);
}
END_TEST

START_TEST(sigkill_mid_phase_orphan_removed)
{
	char out[PATH_MAX + 16], pat[PATH_MAX + 32], other[PATH_MAX + 32];
	pid_t pid;

	/* a directory knob never recorded: it must survive the clean-up */
	snprintf(other, sizeof(other), "%s/knob.not-ours", data);
	ck_assert_int_eq(mkdir(other, 0755), 0);
	snprintf(out, sizeof(out), "%s/kill.json", h.tmp);
	snprintf(pat, sizeof(pat), "%s/knob.*/f.00000000", data);
	pid = knobctl_async(out, xasprintf("--json bench seq-write -w node01 --dir %s --threads 2 "
	    "--size 256m --bs 1m --rate-iops 20", data));
	ck_assert_msg(wait_for(exists_glob, pat, 30) >= 0, "node01 never started writing");
	harness_agent_stop(&h, 0, SIGKILL);
	ck_assert_int_ne(reap(pid), 0);
	ck_assert_msg(exists_glob(pat), "the files went with the agent?");
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	/* start-up (before listening) removed what the killed agent recorded */
	ck_assert_msg(!exists_glob(pat), "orphaned files still there after the restart");
	snprintf(pat, sizeof(pat), "%s/knob.*", data);
	ck_assert_msg(count_glob(pat) == 1, "orphaned directory still there after the restart");
	ck_assert(harness_log_has(&h, 0, "removed orphaned benchmark files"));
	ck_assert_int_eq(access(other, F_OK), 0);
	rmdir(other);
}
END_TEST

/* knobd with this journal content: exits 1, says file:line and why, and
 * leaves the file alone. */
static void
refuses(const char *content, const char *line_and_msg)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], log[PATH_MAX + 16], *after = NULL, *l = NULL;
	int rc;

	snprintf(dir, sizeof(dir), "%s/jstate.XXXXXX", h.tmp);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/" TUNE_JOURNAL_NAME, dir);
	snprintf(log, sizeof(log), "%s/knobd.log", dir);
	ck_assert_int_eq(put_file(path, content), 0);
	rc = harness_sh("%s/knobd --stdio --state-dir %s </dev/null >/dev/null 2>%s", h.bin, dir,
	    log);
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(read_file_bounded(log, 1 << 20, &l, NULL), 0);
	ck_assert_msg(strstr(l, line_and_msg) != NULL, "expected '%s' in:\n%s", line_and_msg, l);
	ck_assert_ptr_nonnull(strstr(l, "refusing to serve"));
	ck_assert_int_eq(read_file_bounded(path, 1 << 20, &after, NULL), 0);
	ck_assert_str_eq(after, content);	/* kept, byte for byte */
	free(after);
	free(l);
}

START_TEST(corrupt_journals_refuse_start)
{
	refuses("{\"version\":1,\"active\":\"p\",\"originals\":[]}\n}garbage\n",
	    TUNE_JOURNAL_NAME ":2: trailing garbage after the journal object");
	refuses("{\"version\":1,\n\"active\":\"\",\n\"originals\":[],\n\"txn\":\"x\"}\n",
	    TUNE_JOURNAL_NAME ":4: \"txn\" must be an object");
	refuses("{\"version\":1,\"active\":\"\",\"originals\":[],\n\"txn\":{\"id\":\"t1\","
	    "\"profile\":\"p\",\"entries\":[\n{\"driver\":\"sysctl\",\"key\":\"vm.x\",\"target\":"
	    "\"vm.x\",\"value\":\"1\"},\n{\"driver\":\"bogus\",\"key\":\"k\",\"target\":\"t\","
	    "\"value\":\"1\"}]}}\n", TUNE_JOURNAL_NAME ":4: txn.entries[1]: unknown driver 'bogus'");
}
END_TEST

/* A sweep with the engine probe (files in data, seq 1 s + md 1 s per
 * node): node02's link is cut while the probes run.  node02 is reported
 * within the sweep's budget, the others answer, and node02's probe files
 * are gone within lease + 5 s; once the link is back, node02 sweeps. */
START_TEST(cut_during_sweep)
{
	char sweep[PATH_MAX + 16], out[PATH_MAX + 16], pat[PATH_MAX + 32], *txt = NULL;
	uint64_t t0;
	double t;
	pid_t pid;
	int rc;

	snprintf(sweep, sizeof(sweep), "%s/sweep.xml", h.tmp);
	ck_assert_int_eq(put_file(sweep, "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <timeout check=\"2s\"/>\n  </defaults>\n</sweep>\n"), 0);
	snprintf(out, sizeof(out), "%s/sweep.out", h.tmp);
	snprintf(pat, sizeof(pat), "%s/knob.*", data);
	t0 = now_mono_ns();
	pid = knobctl_async(out, xasprintf("sweep -w @all -f %s --probe %s", sweep, data));
	ck_assert_msg(wait_for(exists_glob, pat, 30) >= 0, "the probes never started");
	link_set(1, "down");
	rc = reap(pid);
	t = (double)(now_mono_ns() - t0) / 1e9;
	ck_assert_int_eq(read_file_bounded(out, 1 << 20, &txt, NULL), 0);
	fprintf(stderr, "%s", txt);
	ck_assert_int_ne(rc, 0);
	ck_assert_msg(strstr(txt, "node02") && (strstr(txt, "timeout") ||
	    strstr(txt, "unreachable")), "node02 not reported: %s", txt);
	ck_assert_msg(strstr(txt, "node[01,03]") != NULL, "the others: %s", txt);
	printf("sweep, link cut: knobctl ended %.1f s after it started, node02 reported\n", t);
	free(txt);
	t = wait_for(gone_on_node02, pat, LEASE_S + 5);
	ck_assert_msg(t >= 0, "probe files left in %s", data);
	link_set(1, "up");
	rc = harness_knobctl(&h, &txt, NULL, "--timeout 10 sweep -w node02 -f %s", sweep);
	ck_assert_msg(rc == 0, "sweep after the cut: exit %d\n%s", rc, txt);
	free(txt);
}
END_TEST

static Suite *
faults_suite(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("faults");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, cut_during_bench_phase);
	tcase_add_test(tc, cut_during_apply);
	tcase_add_test(tc, cut_during_sweep);
	tcase_add_test(tc, sigkill_mid_phase_orphan_removed);
	tcase_add_test(tc, corrupt_journals_refuse_start);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(faults_suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? 0 : 1;
}
