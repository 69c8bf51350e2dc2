/* Results store end to end: two real knobd agents in network namespaces
 * (tests/harness.h), knobctl in the controller namespace, a real SQLite
 * file.  The agents run with --test-hooks so a phase can be throttled
 * (--test-rate-iops) to make a run slower on purpose or long enough to be
 * killed in the middle. */
#include <check.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <json-c/json.h>

#include "testutil.h"
#include "harness.h"
#include "rundoc.h"
#include "util.h"

static struct harness h;
static char data[PATH_MAX];	/* inside the harness's temp dir, removed with it */

static void
setup(void)
{
	ck_assert_msg(harness_start_with(&h, 2, "--test-hooks") == 0, "harness start failed");
	snprintf(data, sizeof(data), "%s/data", h.tmp);
	ck_assert_int_eq(mkdir(data, 0755), 0);
}

static void
teardown(void)
{
	harness_stop(&h);
}

/* A JSON document that must be there. */
static json_object *
need(json_object *doc)
{
	ck_assert_msg(doc != NULL, "knobctl printed no JSON (see stderr)");
	return doc;
}

static json_object *
idx(json_object *a, size_t i)
{
	ck_assert_uint_gt(json_object_array_length(a), i);
	return json_object_array_get_idx(a, i);
}

/* --repeat 3: the table shows mean ± sd; a run throttled to a quarter of
 * the rate compares "worse" against the other (both throttled, so that
 * each is steady), the same run against itself
 * "within noise"; list, show and compare in text, --json and --csv. */
START_TEST(repeat_and_compare)
{
	json_object *doc, *cmp, *row;
	char *out = NULL;
	int rc;

	doc = need(harness_knobctl_json(&h, &rc, "--json bench seq-write -w @all --dir %s --threads 1,2 --repeat 3 "
	    "--size 2m --bs 64k --test-rate-iops 200 --label fast", data));
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "phases")), 6);
	ck_assert_int_eq(json_object_get_int(cu_get(idx(cu_get(doc, "phases"), 2), "repeat")), 3);
	json_object_put(doc);
	doc = need(harness_knobctl_json(&h, &rc, "--json bench seq-write -w @all --dir %s --threads 1,2 --repeat 3 "
	    "--size 2m --bs 64k --test-rate-iops 50 --label slow", data));
	ck_assert_int_eq(rc, 0);
	json_object_put(doc);

	rc = harness_knobctl(&h, &out, NULL, "results show latest");
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, " ± ") != NULL, "no mean ± sd in\n%s", out);
	ck_assert_ptr_nonnull(strstr(out, "MiB/s"));
	ck_assert_ptr_nonnull(strstr(out, "peak and sustained"));
	ck_assert_ptr_nonnull(strstr(out, "3 of 3 repeats ok, min "));
	free(out);

	cmp = need(harness_knobctl_json(&h, &rc, "results --json compare latest~1 latest"));
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(json_object_array_length(cu_get(cmp, "points")), 2);
	for (size_t i = 0; i < 2; i++) {
		row = idx(cu_get(cmp, "points"), i);
		ck_assert_int_eq(json_object_get_int(cu_get(row, "a_n")), 3);
		ck_assert_double_lt(json_object_get_double(cu_get(row, "change_pct")), -50);
		ck_assert_str_eq(json_object_get_string(cu_get(row, "verdict")), "worse");
	}
	json_object_put(cmp);
	cmp = need(harness_knobctl_json(&h, &rc, "results --json compare latest latest"));
	ck_assert_str_eq(json_object_get_string(cu_get(idx(cu_get(cmp, "points"), 0), "verdict")),
	    "within noise");
	json_object_put(cmp);

	rc = harness_knobctl(&h, &out, NULL, "results compare latest~1 latest");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "worse"));
	ck_assert_ptr_nonnull(strstr(out, "A = "));
	free(out);
	rc = harness_knobctl(&h, &out, NULL, "results --csv compare latest~1 latest");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "kind,threads,unit,a_n,a_mean"));
	ck_assert_ptr_nonnull(strstr(out, ",worse,"));
	free(out);
	rc = harness_knobctl(&h, &out, NULL, "results --csv list");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "run_id,started,started_ns,label"));
	ck_assert_ptr_nonnull(strstr(out, ",slow,"));
	free(out);
	rc = harness_knobctl(&h, &out, NULL, "results --csv show latest");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "run_id,phase_id,kind,threads"));
	free(out);
	rc = harness_knobctl(&h, &out, NULL, "results list");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "fast"));
	ck_assert(strstr(out, "fast") < strstr(out, "slow"));
	free(out);
	/* decimal units on request */
	rc = harness_knobctl(&h, &out, NULL, "--units decimal results show latest~1");
	ck_assert_msg(strstr(out, "MB/s") || strstr(out, "GB/s"), "%s", out);
	ck_assert_ptr_null(strstr(out, "iB/s"));
	free(out);
}
END_TEST

/* Pinned threads (--cpu-bind core) against floating ones: compare keeps
 * them apart and says why; --force pairs them, marked unlike. */
START_TEST(compare_cpu_bind)
{
	json_object *doc, *cmp;
	char *out = NULL, *err = NULL;
	int rc;

	for (int i = 0; i < 2; i++) {
		doc = need(harness_knobctl_json(&h, &rc, "--json bench md-create -w @all --dir %s "
		    "--threads 2 --files 40 --cpu-bind %s", data, i ? "core" : "none"));
		ck_assert_int_eq(rc, 0);
		ck_assert_str_eq(cu_str(cu_get(idx(cu_get(doc, "phases"), 0), "params"),
		    "cpu_bind"), i ? "core" : "none");
		json_object_put(doc);
	}
	rc = harness_knobctl(&h, &out, &err, "results compare latest~1 latest");
	ck_assert_int_eq(rc, 2);
	ck_assert_msg(strstr(err ? err : "", "params.cpu_bind") != NULL, "%s", err);
	free(out);
	free(err);
	cmp = need(harness_knobctl_json(&h, &rc, "results --json compare latest~1 latest --force"));
	ck_assert_str_eq(cu_str(idx(cu_get(cmp, "points"), 0), "unlike"), "params.cpu_bind");
	json_object_put(cmp);
}
END_TEST

/* The buffer pages of a phase (--buffer-pages): with O_DIRECT, compare
 * keeps huge apart from 4k and says why; buffered, they pair. */
START_TEST(compare_buffer_pages)
{
	static const char *const how[] = { "--direct", "" };
	json_object *doc, *cmp;
	int rc;

	for (size_t i = 0; i < 2; i++) {
		char pages[8];

		doc = need(harness_knobctl_json(&h, &rc, "--json bench seq-write -w @all --dir %s "
		    "--threads 2 --size 4m %s", data, how[i]));
		ck_assert_int_eq(rc, 0);
		snprintf(pages, sizeof(pages), "%s",
		    cu_str(cu_get(idx(cu_get(doc, "phases"), 0), "params"), "buffer_pages"));
		json_object_put(doc);
		doc = need(harness_knobctl_json(&h, &rc, "--json bench seq-write -w @all --dir %s "
		    "--threads 2 --size 4m --buffer-pages 4k %s", data, how[i]));
		ck_assert_int_eq(rc, 0);
		ck_assert_str_eq(cu_str(cu_get(idx(cu_get(doc, "phases"), 0), "params"),
		    "buffer_pages"), "4k");
		json_object_put(doc);
		if (i == 0 && strcmp(pages, "huge") == 0) {	/* THP on: O_DIRECT apart */
			char *out = NULL, *err = NULL;

			rc = harness_knobctl(&h, &out, &err, "results compare latest~1 latest");
			ck_assert_int_eq(rc, 2);
			ck_assert_msg(strstr(err ? err : "", "params.buffer_pages") != NULL, "%s", err);
			free(out);
			free(err);
			cmp = need(harness_knobctl_json(&h, &rc,
			    "results --json compare latest~1 latest --force"));
			ck_assert_str_eq(cu_str(idx(cu_get(cmp, "points"), 0), "unlike"),
			    "params.buffer_pages");
		} else {
			cmp = need(harness_knobctl_json(&h, &rc, "results --json compare latest~1 "
			    "latest"));
			ck_assert_int_eq(rc, 0);
			ck_assert_int_eq(json_object_array_length(cu_get(cmp, "points")), 1);
		}
		json_object_put(cmp);
	}
}
END_TEST

/* Count the phases stored for the latest run (-1: no run yet). */
static int
stored_phases(void)
{
	char *out = NULL;
	json_object *arr;
	int n = -1, rc;

	rc = harness_knobctl(&h, &out, NULL, "results --json list");
	arr = rc == 0 ? json_tokener_parse(out) : NULL;
	if (arr && json_object_array_length(arr) > 0)
		n = json_object_get_int(cu_get(idx(arr, json_object_array_length(arr) - 1), "phases"));
	json_object_put(arr);
	free(out);
	return n;
}

/* The start time of process pid (field 22 of /proc/PID/stat), -1 if none. */
static long long
starttime(pid_t pid)
{
	char path[64], buf[1024], *p;
	long long t = -1;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_small_file(path, buf, sizeof(buf)) < 0 || (p = strrchr(buf, ')')) == NULL)
		return -1;
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
	    "%*d %*d %lld", &t) != 1)
		return -1;
	return t;
}

/* SIGKILL of knobctl mid-sweep: the finished phases stay readable and the
 * run reads incomplete (its writer, recorded by boot id, pid and start
 * time, is gone). */
START_TEST(sigkill_mid_sweep)
{
	char boot[64];
	json_object *doc, *ph, *w;
	pid_t pid;
	int st, rc, n = -1;

	pid = harness_knobctl_bg(&h, "/dev/null", NULL, "bench seq-write -w @all --dir %s "
	    "--threads 1,2,4,8 --size 1m --bs 64k --test-rate-iops 20", data);
	ck_assert_int_gt(pid, 0);
	/* wait (bounded) for the first finished phase to be committed */
	for (int i = 0; i < 300 && n < 1; i++) {
		n = stored_phases();
		if (n < 1)
			usleep(100000);
	}
	ck_assert_int_ge(n, 1);
	/* the run names its writer: this knobctl, by boot id, pid and start time */
	doc = need(harness_knobctl_json(&h, &rc, "results --json show latest"));
	ck_assert_str_eq(json_object_get_string(cu_get(doc, "status")), "running");
	w = cu_get(doc, "writer");
	ck_assert_int_eq(json_object_get_int64(cu_get(w, "pid")), pid);
	ck_assert_int_eq(json_object_get_int64(cu_get(w, "pid_start")), starttime(pid));
	ck_assert_int_eq(read_small_file("/proc/sys/kernel/random/boot_id", boot, sizeof(boot)) > 0, 1);
	ck_assert_str_eq(json_object_get_string(cu_get(w, "boot_id")), boot);
	ck_assert_int_ge(json_object_get_int64(cu_get(w, "heartbeat_ns")),
	    json_object_get_int64(cu_get(doc, "started_ns")));
	json_object_put(doc);
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st));
	doc = need(harness_knobctl_json(&h, &rc, "results --json show latest"));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(json_object_get_string(cu_get(doc, "status")), "incomplete");
	ck_assert_int_ge(json_object_array_length(cu_get(doc, "phases")), 1);
	ck_assert_int_lt(json_object_array_length(cu_get(doc, "phases")), 4);
	ph = idx(cu_get(doc, "phases"), 0);
	ck_assert_str_eq(json_object_get_string(cu_get(ph, "status")), "ok");
	ck_assert_int_eq(json_object_get_int(cu_get(ph, "threads")), 1);
	ck_assert_int_eq(json_object_get_int64(cu_get(ph, "bytes")), 1 << 20);
	json_object_put(doc);
	doc = need(harness_knobctl_json(&h, &rc, "results --json list"));
	ck_assert_str_eq(json_object_get_string(cu_get(idx(doc, 0), "status")), "incomplete");
	json_object_put(doc);
	{	/* the text says whose run it was */
		char *out = NULL, want[128];

		ck_assert_int_eq(harness_knobctl(&h, &out, NULL, "results show latest"), 0);
		snprintf(want, sizeof(want), "written by knobctl pid %d on ", (int)pid);
		ck_assert_msg(strstr(out, want) && strstr(out, "that knobctl is gone"), "%s", out);
		free(out);
	}
}
END_TEST

/* A run records each node's active profile as the agent reports it, the
 * live value of its keys, facts, and the resolved profile with its hash. */
START_TEST(run_records_profile)
{
	char prof[PATH_MAX + 32], *out = NULL, tuned_hash[80];
	json_object *doc, *ni, *live;
	FILE *f;
	int rc;

	snprintf(prof, sizeof(prof), "%s/rec-test.xml", data);
	f = fopen(prof, "w");
	ck_assert_ptr_nonnull(f);
	/* net.core.somaxconn is per network namespace: each agent's own */
	fprintf(f, "<?xml version=\"1.0\"?>\n<profile name=\"rec-test\">\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"2345\"/>\n</profile>\n");
	fclose(f);
	setenv("KNOB_PROFILE_PATH", data, 1);
	rc = harness_knobctl(&h, &out, NULL, "apply %s -w @all", prof);
	ck_assert_msg(rc == 0, "%s", out);
	free(out);
	doc = need(harness_knobctl_json(&h, &rc, "--json bench md-create -w @all --dir %s --threads 2 --files 20 "
	    "--label tuned", data));
	ck_assert_int_eq(rc, 0);
	json_object_put(doc);
	doc = need(harness_knobctl_json(&h, &rc, "results --json show latest"));
	ck_assert_str_eq(json_object_get_string(cu_get(cu_get(doc, "profile"), "name")), "rec-test");
	ck_assert_int_eq(strlen(json_object_get_string(cu_get(cu_get(doc, "profile"), "sha256"))), 64);
	snprintf(tuned_hash, sizeof(tuned_hash), "%s",
	    json_object_get_string(cu_get(cu_get(doc, "profile"), "sha256")));
	ck_assert_ptr_nonnull(strstr(json_object_get_string(cu_get(cu_get(doc, "profile"), "text")),
	    "sysctl net.core.somaxconn = 2345"));
	ck_assert_str_eq(json_object_get_string(cu_get(doc, "label")), "tuned");
	ni = cu_get(doc, "node_info");
	ck_assert_int_eq(json_object_array_length(ni), 2);
	for (size_t i = 0; i < 2; i++) {
		json_object *n = idx(ni, i);

		ck_assert_str_eq(json_object_get_string(cu_get(n, "active_profile")), "rec-test");
		live = cu_get(n, "live");
		ck_assert_int_eq(json_object_array_length(live), 1);
		ck_assert_str_eq(json_object_get_string(cu_get(idx(live, 0), "value")), "2345");
		ck_assert_ptr_nonnull(strstr(json_object_get_string(cu_get(cu_get(n, "facts"), "kernel")),
		    "."));
	}
	json_object_put(doc);
	rc = harness_knobctl(&h, &out, NULL, "results list");
	ck_assert_ptr_nonnull(strstr(out, "rec-test"));
	free(out);
	/* node02 untuned, node01 tuned: a mixed run records both, and a hash
	 * that differs from the tuned run's */
	rc = harness_knobctl(&h, &out, NULL, "rollback -w node02");
	ck_assert_int_eq(rc, 0);
	free(out);
	doc = need(harness_knobctl_json(&h, &rc, "--json bench md-create -w @all --dir %s --threads 2 "
	    "--files 20 --label mixed", data));
	json_object_put(doc);
	doc = need(harness_knobctl_json(&h, &rc, "results --json show latest"));
	ck_assert_str_eq(json_object_get_string(cu_get(cu_get(doc, "profile"), "name")), "mixed");
	ck_assert_int_eq(strlen(json_object_get_string(cu_get(cu_get(doc, "profile"), "sha256"))), 64);
	ck_assert_ptr_nonnull(strstr(json_object_get_string(cu_get(cu_get(doc, "profile"), "text")),
	    "# node01: rec-test\nsysctl net.core.somaxconn = 2345\n# node02: (untuned)\n"));
	ck_assert_int_eq(json_object_array_length(cu_get(cu_get(doc, "profile"), "profiles")), 2);
	ck_assert_str_ne(json_object_get_string(cu_get(cu_get(doc, "profile"), "sha256")), tuned_hash);
	json_object_put(doc);
	rc = harness_knobctl(&h, &out, NULL, "rollback -w @all");
	ck_assert_int_eq(rc, 0);
	free(out);
	unsetenv("KNOB_PROFILE_PATH");
}
END_TEST

/* Point the harness's knobctl at a copy of its cluster.xml orig whose
 * results database is db. */
static void
use_db(const char *orig, const char *db)
{
	char *xml = cu_slurp(orig), *at = strstr(xml, "results.db"), path[PATH_MAX + 32];

	ck_assert_ptr_nonnull(at);
	*at = '\0';
	snprintf(path, sizeof(path), "%s/cluster-db.xml", h.tmp);
	cu_write(path, 0644, "%s%s%s", xml, db, at + strlen("results.db"));
	snprintf(h.cluster, sizeof(h.cluster), "%s", path);
	free(xml);
}

/* A results database that cannot be opened runs nothing and exits 3; one
 * on a full file system exits 3 after the run, says it is not all stored
 * and prints no "db".  Before, both exited 0 with the run lost (and a
 * play said "run ... stored"). */
START_TEST(store_fails)
{
	char saved[sizeof(h.cluster)], full[PATH_MAX], o[PATH_MAX], e[PATH_MAX];
	char *out = NULL, *err = NULL;
	json_object *doc;
	int rc, n = -1;
	pid_t pid;

	snprintf(saved, sizeof(saved), "%s", h.cluster);
	use_db(saved, "/proc/knob-none/results.db");
	rc = harness_knobctl(&h, &out, &err, "bench md-create -w @all --dir %s --threads 1 --files 10",
	    data);
	ck_assert_msg(rc == 3, "exit %d: %s%s", rc, out, err);
	ck_assert_ptr_nonnull(strstr(err, "knobctl bench: nothing run: it could not be stored"));
	ck_assert_str_eq(out, "");
	free(out);
	free(err);
	/* the tmpfs lives in a mount namespace of this test's own (knobctl,
	 * started from here, sees it): it goes with the test, even a failed one */
	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	snprintf(full, sizeof(full), "%s/full", h.tmp);
	ck_assert_int_eq(mkdir(full, 0755), 0);
	ck_assert_int_eq(mount("tmpfs", full, "tmpfs", 0, "size=2m"), 0);
	use_db(saved, "full/results.db");
	snprintf(o, sizeof(o), "%s/full.out", h.tmp);
	snprintf(e, sizeof(e), "%s/full.err", h.tmp);
	pid = harness_knobctl_bg(&h, o, e, "--json bench seq-write -w @all --dir %s --threads 1,2 "
	    "--size 1m --bs 64k --test-rate-iops 20", data);
	ck_assert_int_gt(pid, 0);
	for (int i = 0; i < 300 && n < 1; i++)	/* the first phase is stored */
		if ((n = stored_phases()) < 1)
			usleep(100000);	/* polling a condition with a deadline */
	ck_assert_int_ge(n, 1);
	harness_sh("dd if=/dev/zero of=%s/fill bs=4k >/dev/null 2>&1", full);	/* ENOSPC */
	rc = cu_reap(pid);
	err = cu_slurp(e);
	ck_assert_msg(rc == 3, "exit %d: %s", rc, err);
	ck_assert_msg(strstr(err, " is not all stored in the results database ") != NULL, "%s", err);
	free(err);
	out = cu_slurp(o);
	doc = need(json_tokener_parse(out));
	free(out);
	ck_assert(!json_object_object_get_ex(doc, "db", NULL));
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "phases")), 2);	/* it ran */
	json_object_put(doc);
	snprintf(h.cluster, sizeof(h.cluster), "%s", saved);
	ck_assert_int_eq(umount2(full, MNT_DETACH), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("results_net");
	TCase *tc = cu_tcase("results_net", setup, teardown, 180);

	tcase_add_test(tc, repeat_and_compare);
	tcase_add_test(tc, compare_buffer_pages);
	tcase_add_test(tc, compare_cpu_bind);
	tcase_add_test(tc, sigkill_mid_sweep);
	tcase_add_test(tc, run_records_profile);
	tcase_add_test(tc, store_fails);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
