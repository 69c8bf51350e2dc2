/* A plain `knobctl bench` interrupted by a signal: two real knobd agents
 * in network namespaces (tests/harness.h), knobctl in the controller
 * namespace, started in the background as from a terminal
 * (harness_knobctl_bg), the real SQLite results file.  The phases are
 * throttled with --rate-iops so that one is in flight when the signal
 * comes; the tests wait for it to run on the agents (their logs). */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "testutil.h"
#include "harness.h"
#include "util.h"

static struct harness h;
static char data[PATH_MAX];	/* the file system under test (the agents share it) */
static char out[PATH_MAX], err[PATH_MAX];	/* knobctl's stdout and stderr */

static void
setup(void)
{
	ck_assert_msg(harness_start(&h, 2, 1) == 0, "harness start failed");
	snprintf(data, sizeof(data), "%s/data", h.tmp);
	ck_assert_int_eq(mkdir(data, 0755), 0);
	snprintf(out, sizeof(out), "%s/bench.out", h.tmp);
	snprintf(err, sizeof(err), "%s/bench.err", h.tmp);
}

static void
teardown(void)
{
	for (int i = 0; i < h.n; i++)	/* a test may have stopped one */
		if (h.node[i].pid > 0)
			kill(h.node[i].pid, SIGCONT);
	harness_stop(&h);
}

/* A JSON document that must be there. */
static json_object *
need(json_object *doc)
{
	ck_assert_msg(doc != NULL, "knobctl printed no JSON (see stderr)");
	return doc;
}

/* Does knobctl's stderr so far hold the string arg? */
static int
err_has(void *arg)
{
	return cu_file_has(err, arg);
}

/* How many times knobctl's stderr so far holds the string arg. */
static int
err_count(const char *arg)
{
	char *s = cu_slurp(err), *p = s;
	int n = 0;

	while (p && (p = strstr(p, arg)) != NULL) {
		n++;
		p += strlen(arg);
	}
	free(s);
	return n;
}

/* data is empty */
static int
data_empty(void *arg)
{
	(void)arg;
	return cu_count_entries(data) == 0;
}

/* Wait until phase p (its id's end, "-p2") runs on every agent. */
static void
wait_running(const char *p)
{
	char want[32];

	snprintf(want, sizeof(want), "%s: running", p);
	for (int i = 0; i < h.n; i++)
		ck_assert_msg(harness_wait_log(&h, i, want, 30) == 0, "node%02d never ran %s",
		    i + 1, p);
}

/* knobctl's summary o of a seq-write phase (its id's end, "-p2") stopped
 * by SIGINT on both nodes, whose agents confirmed the removal, with
 * finished ("1 of 2") phases finished and none left to run; no clean-up
 * named. */
static void
both_stopped(const char *o, const char *phase, const char *finished)
{
	char want[128];

	ck_assert_ptr_nonnull(strstr(o, "interrupted by SIGINT in a phase: "));
	snprintf(want, sizeof(want), "%s seq-write threads=2 stopped on node[01-02], not recorded",
	    phase);
	ck_assert_msg(strstr(o, want) != NULL, "no \"%s\"", want);
	snprintf(want, sizeof(want), "\n%s phase(s) finished and kept; 0 not run\n", finished);
	ck_assert_msg(strstr(o, want) != NULL, "no \"%s\"", want);
	ck_assert_ptr_nonnull(strstr(o, "files removed (confirmed by their agents) on: "
	    "node[01-02]\n"));
	ck_assert_ptr_null(strstr(o, "clean-up"));
}

/* The long bench: one phase, a thread on each node, 25 s at 40 writes a
 * second (its arguments after "bench"; the data directory's for %s). */
#define LONG_BENCH "seq-write -w @all --dir %s --threads 2 --bs 4k --size 4m --rate-iops 40"

/* knobctl OPTS bench LONG_BENCH in the background, once its phase runs
 * on every agent; its pid. */
static pid_t
start_long(const char *opts)
{
	pid_t pid = harness_knobctl_bg(&h, out, err, "%sbench " LONG_BENCH, opts, data);

	ck_assert_int_gt(pid, 0);
	wait_running("-p1");
	return pid;
}

/* The stored run (results show latest), printed to the log. */
static json_object *
stored_run(void)
{
	json_object *doc;
	int rc;

	doc = need(harness_knobctl_json(&h, &rc, "--json results show latest"));
	ck_assert_int_eq(rc, 0);
	fprintf(stderr, "stored: %s\n", json_object_to_json_string_ext(doc,
	    JSON_C_TO_STRING_PRETTY));
	return doc;
}

/* SIGINT while the second phase of a sweep (2 threads, one on each node,
 * 25 s at 40 writes a second) runs: knobctl stops it on both nodes, waits
 * for their agents to remove its files and exits 130 within seconds, the
 * files gone; the first phase, finished, is stored and the run with it,
 * "interrupted", the phase in flight not recorded; no node is named in
 * cleanup_failed (both confirmed); the summary says what was stopped,
 * what was kept and where the files were removed.  Before, SIGINT killed
 * knobctl: no summary, and the run stayed "running" in the database
 * (then "incomplete"), the agents left to clean up on the closed
 * connection. */
START_TEST(sigint_stops_phase_in_flight)
{
	json_object *doc, *in;
	uint64_t t0;
	char *o, *e;
	pid_t pid;
	int rc;

	pid = harness_knobctl_bg(&h, out, err, "bench seq-write -w @all --dir %s --threads 1,2 "
	    "--bs 4k --size 64k --at 2:size=4m --rate-iops 40", data);
	ck_assert_int_gt(pid, 0);
	wait_running("-p2");
	t0 = now_mono_ns();
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	rc = cu_reap(pid);
	o = cu_slurp(out);
	e = cu_slurp(err);
	fprintf(stderr, "exit %d after %.1f s\nstdout:\n%s\nstderr:\n%s\n", rc,
	    (double)(now_mono_ns() - t0) / 1e9, o, e);
	ck_assert_int_eq(rc, 130);
	ck_assert_msg(now_mono_ns() - t0 < 10000000000ull, "the stop took too long");
	ck_assert_int_eq(cu_count_entries(data), 0);	/* knobctl waited for the removal */
	ck_assert_ptr_nonnull(strstr(e, "SIGINT: stopping phase "));
	ck_assert_ptr_nonnull(strstr(e, "node01: stopped, its files removed"));
	ck_assert_ptr_nonnull(strstr(e, "node02: stopped, its files removed"));
	both_stopped(o, "-p2", "1 of 2");
	ck_assert_ptr_nonnull(strstr(o, "stored as interrupted in "));
	free(o);
	free(e);

	doc = stored_run();
	ck_assert_str_eq(cu_str(doc, "status"), "interrupted");
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "phases")), 1);
	ck_assert_str_eq(cu_str(cu_phase(doc, 0), "status"), "ok");
	ck_assert_int_eq(cu_int(cu_phase(doc, 0), "threads"), 1);
	ck_assert_int_eq(cu_int(cu_phase(doc, 0), "bytes"), 64 << 10);
	ck_assert(!json_object_object_get_ex(doc, "cleanup_failed", NULL));
	in = cu_get(doc, "interrupted");
	ck_assert_str_eq(cu_str(in, "signal"), "SIGINT");
	ck_assert_int_eq(json_object_array_length(cu_get(in, "removed_on")), 2);
	json_object_put(doc);
	doc = need(harness_knobctl_json(&h, &rc, "--json results list"));
	ck_assert_str_eq(cu_str(json_object_array_get_idx(doc, 0), "status"), "interrupted");
	json_object_put(doc);
	/* compare takes its finished phase, saying it is not a complete run */
	rc = harness_knobctl(&h, &o, NULL, "results compare latest latest");
	fprintf(stderr, "compare: exit %d\n%s\n", rc, o);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(o, "status interrupted"));
	ck_assert_ptr_nonnull(strstr(o, ") was interrupted (a signal stopped it): only the phases it "
	    "finished are compared"));
	free(o);
}
END_TEST

/* SIGTERM while node02's agent is stopped (SIGSTOP: it cannot answer the
 * abort), then a second SIGTERM once node01 confirmed: knobctl exits at
 * once, 143, with the run stored "interrupted" (cut off); cleanup_failed
 * names node02 alone, as unknown ("clean-up unknown", where its files may
 * be left), not node01, whose agent removed its files before it answered.
 * node02's agent, continued, removes its own on the closed connection.
 * Before, node01 was named too, "lost (failed: interrupted)", though its
 * files were gone, and nothing told failed from unknown. */
START_TEST(second_signal_cuts_off)
{
	json_object *doc, *cf, *in;
	const char *why;
	uint64_t t0;
	char *o;
	pid_t pid;
	int rc;

	pid = start_long("--json ");
	ck_assert_int_eq(kill(h.node[1].pid, SIGSTOP), 0);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_msg(cu_wait(err_has, (void *)(uintptr_t)"node01: stopped, its files removed",
	    10) >= 0, "node01 never confirmed");
	t0 = now_mono_ns();
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	rc = cu_reap(pid);
	o = cu_slurp(out);
	fprintf(stderr, "exit %d after %.1f s\n%s\n", rc, (double)(now_mono_ns() - t0) / 1e9, o);
	ck_assert_int_eq(rc, 143);
	ck_assert_msg(now_mono_ns() - t0 < 3000000000ull, "the second signal did not act at once");
	doc = need(json_tokener_parse(o));
	free(o);
	ck_assert_str_eq(cu_str(doc, "status"), "interrupted");
	in = cu_get(doc, "interrupted");
	ck_assert(json_object_get_boolean(cu_get(in, "cut_off")));
	ck_assert_int_eq(json_object_array_length(cu_get(in, "removed_on")), 1);
	cf = cu_get(doc, "cleanup_failed");
	ck_assert_int_eq(json_object_array_length(cf), 1);
	ck_assert_str_eq(cu_str(json_object_array_get_idx(cf, 0), "node"), "node02");
	ck_assert_str_eq(cu_str(json_object_array_get_idx(cf, 0), "state"), "unknown");
	why = cu_str(json_object_array_get_idx(cf, 0), "error");
	ck_assert_msg(strstr(why, "node02: clean-up unknown: the run was cut off (SIGTERM) before "
	    "the node confirmed it") && strstr(why, "the files of its ranks 1 may be left in "),
	    "%s", why);
	json_object_put(doc);
	ck_assert_int_eq(kill(h.node[1].pid, SIGCONT), 0);
	ck_assert_msg(cu_wait(data_empty, NULL, 10) >= 0, "node02 left its files");
	doc = stored_run();
	ck_assert_str_eq(cu_str(doc, "status"), "interrupted");
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "cleanup_failed")), 1);
	json_object_put(doc);
}
END_TEST

/* SIGINT and SIGTERM both reach knobctl before it runs again (sent while
 * it is stopped, SIGSTOP; on SIGCONT both handlers run before any tick
 * sees the first, in an order the kernel picks: each may go to another
 * of its threads): the run is cut off at once, yet recorded as a stop:
 * exit 128 + the first's number, the run stored "interrupted" by it, cut
 * off, the phase in flight not recorded as a phase, both nodes named as
 * unknown.  Before, the closed connections made the nodes
 * "lost": the phase was recorded failed, the run "degraded-or-failed",
 * exit 1 as any failed run. */
START_TEST(two_signals_at_once)
{
	json_object *doc, *cf;
	char *o;
	pid_t pid;
	int rc;

	pid = start_long("--json ");
	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	ck_assert_int_eq(kill(pid, SIGCONT), 0);
	rc = cu_reap(pid);
	o = cu_slurp(out);
	fprintf(stderr, "exit %d\n%s\n", rc, o);
	ck_assert_msg(rc == 130 || rc == 143, "exit %d", rc);
	doc = need(json_tokener_parse(o));
	free(o);
	ck_assert_str_eq(cu_str(doc, "status"), "interrupted");
	ck_assert_str_eq(cu_str(cu_get(doc, "interrupted"), "signal"), rc == 130 ? "SIGINT" :
	    "SIGTERM");
	ck_assert(json_object_get_boolean(cu_get(cu_get(doc, "interrupted"), "cut_off")));
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "phases")), 0);
	cf = cu_get(doc, "cleanup_failed");
	ck_assert_int_eq(json_object_array_length(cf), 2);
	for (size_t i = 0; i < 2; i++)
		ck_assert_str_eq(cu_str(json_object_array_get_idx(cf, i), "state"), "unknown");
	json_object_put(doc);
	ck_assert_msg(cu_wait(data_empty, NULL, 10) >= 0, "the agents left their files");
}
END_TEST

/* knobctl ARGS in the controller namespace in the background with SIGHUP
 * ignored, as nohup starts it (harness_knobctl_bg starts it as from a
 * terminal); stdout and stderr into out and err.  Its pid. */
static pid_t
knobctl_nohup(const char *args)
{
	pid_t pid = fork();

	if (pid == 0) {
		signal(SIGHUP, SIG_IGN);	/* inherited across exec */
		signal(SIGINT, SIG_DFL);
		execl("/bin/sh", "sh", "-c", xasprintf("exec ip netns exec %s %s/knobctl -c %s %s "
		    ">%s 2>%s </dev/null", h.ctl_ns, h.bin, h.cluster, args, out, err), (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Is signal sig in the mask field ("SigIgn:", "SigCgt:") of process pid? */
static int
sig_in(pid_t pid, const char *field, int sig)
{
	char path[64], *st, *p;
	unsigned long long mask = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	st = cu_slurp(path);
	ck_assert_ptr_nonnull(st);
	p = strstr(st, field);
	ck_assert_ptr_nonnull(p);
	mask = strtoull(p + strlen(field), NULL, 16);
	free(st);
	return (mask >> (sig - 1)) & 1;
}

/* Under nohup (SIGHUP ignored when knobctl started) SIGHUP stays ignored
 * while the bench runs, SIGINT and SIGTERM caught: a SIGHUP, then a
 * SIGINT, stop the run as SIGINT (130; the lower-numbered SIGHUP, were
 * it caught, would be the first and exit 129). */
START_TEST(nohup_keeps_sighup_ignored)
{
	char args[PATH_MAX + 128], *o;
	pid_t pid;
	int rc;

	snprintf(args, sizeof(args), "bench " LONG_BENCH, data);
	pid = knobctl_nohup(args);
	ck_assert_int_gt(pid, 0);
	wait_running("-p1");
	ck_assert(sig_in(pid, "SigIgn:", SIGHUP));
	ck_assert(sig_in(pid, "SigCgt:", SIGINT) && sig_in(pid, "SigCgt:", SIGTERM));
	ck_assert_int_eq(kill(pid, SIGHUP), 0);
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	rc = cu_reap(pid);
	o = cu_slurp(out);
	fprintf(stderr, "exit %d\n%s\n", rc, o);
	ck_assert_int_eq(rc, 130);
	ck_assert_ptr_nonnull(strstr(o, "interrupted by SIGINT in a phase: "));
	free(o);
	ck_assert_int_eq(cu_count_entries(data), 0);
}
END_TEST

/* A play's bench step interrupted (SIGINT to knobctl play): the play's
 * signal stops the bench as a plain bench's first does, so its run is
 * stored "interrupted" with no node in cleanup_failed (both confirmed the
 * removal) and the files are gone when knobctl exits 130.  Before, the
 * play closed the bench's connections at once: node01 and node02 were
 * named, their clean-up unknown, the files removed after knobctl's exit. */
START_TEST(play_bench_stops_cleanly)
{
	char play[PATH_MAX + 16];
	json_object *doc;
	FILE *f;
	pid_t pid;
	int rc;

	snprintf(play, sizeof(play), "%s/sig.xml", h.tmp);
	f = fopen(play, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "<?xml version=\"1.0\"?>\n<play name=\"sig\" nodes=\"@all\">\n  <bench "
	    "kind=\"seq-write\" dir=\"%s\" threads=\"2\" bs=\"4k\" size=\"4m\" "
	    "rate-iops=\"40\"/>\n</play>\n", data);
	ck_assert_int_eq(fclose(f), 0);
	pid = harness_knobctl_bg(&h, out, err, "play %s", play);
	ck_assert_int_gt(pid, 0);
	wait_running("-p1");
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	rc = cu_reap(pid);
	fprintf(stderr, "exit %d\n", rc);
	ck_assert_int_eq(rc, 130);
	ck_assert_int_eq(cu_count_entries(data), 0);
	doc = stored_run();
	ck_assert_str_eq(cu_str(doc, "status"), "interrupted");
	ck_assert_msg(!json_object_object_get_ex(doc, "cleanup_failed", NULL), "%s",
	    json_object_to_json_string(cu_get(doc, "cleanup_failed")));
	ck_assert_int_eq(json_object_array_length(cu_get(cu_get(doc, "interrupted"),
	    "removed_on")), 2);
	json_object_put(doc);
}
END_TEST

/* Restart agent i with --test-hooks and the test hook variable var = val. */
static void
restart_hooked(int i, const char *var, const char *val)
{
	harness_agent_stop(&h, i, SIGTERM);
	snprintf(h.node[i].extra_args, sizeof(h.node[i].extra_args), "--test-hooks");
	setenv(var, val, 1);
	ck_assert_int_eq(harness_agent_start(&h, i), 0);
	unsetenv(var);
}

/* knobctl's exit status after signal sig, within secs seconds of it; its
 * stdout and stderr printed to the log, stdout into *o (malloc'd). */
static int
stop_with(pid_t pid, int sig, double secs, char **o)
{
	uint64_t t0 = now_mono_ns();
	char *e;
	int rc;

	ck_assert_int_eq(kill(pid, sig), 0);
	rc = cu_reap(pid);
	*o = cu_slurp(out);
	e = cu_slurp(err);
	fprintf(stderr, "exit %d after %.1f s\nstdout:\n%s\nstderr:\n%s\n", rc,
	    (double)(now_mono_ns() - t0) / 1e9, *o, e);
	free(e);
	ck_assert_msg(now_mono_ns() - t0 < (uint64_t)(secs * 1e9), "the stop took too long");
	return rc;
}

/* SIGINT to knobctl (pid), which stops cleanly: exit 130 within seconds,
 * the data directory empty, the summary's first two lines begin with
 * during and finished, no clean-up named; its stdout (malloc'd). */
static char *
stopped_clean(pid_t pid, const char *during, const char *finished)
{
	char *o;

	ck_assert_int_eq(stop_with(pid, SIGINT, 10, &o), 130);
	ck_assert_int_eq(cu_count_entries(data), 0);
	ck_assert_ptr_nonnull(strstr(o, during));
	ck_assert_ptr_nonnull(strstr(o, finished));
	ck_assert_ptr_null(strstr(o, "clean-up"));
	return o;
}

/* The stored run: interrupted, with nphases phases and no node in
 * cleanup_failed. */
static json_object *
stored_interrupted(size_t nphases)
{
	json_object *doc = stored_run();

	ck_assert_str_eq(cu_str(doc, "status"), "interrupted");
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "phases")), nphases);
	ck_assert_msg(!json_object_object_get_ex(doc, "cleanup_failed", NULL), "%s",
	    json_object_to_json_string(cu_get(doc, "cleanup_failed")));
	return doc;
}

/* SIGINT while node02's agent answers the phase's prepare "busy"
 * (--test-hooks, $KNOB_TEST_BUSY_PREPARE: knobctl sends it again after
 * 100, 200, 400 ... ms), node01 Ready at the barrier: node01 stops the
 * phase and removes its files, node02, which holds nothing of it, is not
 * waited for, nor named as stopped or as having removed files: exit 130
 * within seconds, the data directory empty, the run stored interrupted
 * with no phase and no node named in cleanup_failed.  Before, a signal while node02's prepare
 * waited to be sent again (most of the time) sent it an abort no agent
 * answers: knobctl waited out the 60 s stop deadline, named node02 lost
 * (`clean-up unknown`) and "stopped on node[01-02]". */
START_TEST(sigint_while_prepare_busy)
{
	pid_t pid;
	char *o;

	restart_hooked(1, "KNOB_TEST_BUSY_PREPARE", "10");
	pid = harness_knobctl_bg(&h, out, err, "bench " LONG_BENCH, data);
	ck_assert_int_gt(pid, 0);
	ck_assert(harness_wait_log(&h, 1, "test hook: no runner thread (7 more)", 30) == 0);
	o = stopped_clean(pid, "interrupted by SIGINT in a phase: ", "0 of 1 phase(s) finished "
	    "and kept; 0 not run");
	ck_assert_ptr_nonnull(strstr(o, "-p1 seq-write threads=2 stopped on node01, not recorded"));
	ck_assert_ptr_nonnull(strstr(o, "files removed (confirmed by their agents) on: node01\n"));
	free(o);
	json_object_put(stored_interrupted(0));
}
END_TEST

/* knobctl's stderr holds a clock sync before GO (node01's: node02 is
 * stopped). */
static int
go_synced(void *arg)
{
	(void)arg;
	return err_count("before go") >= 1;
}

/* SIGINT in the clock sync before GO: every node is Ready, node01 synced
 * again, node02's agent stopped (SIGSTOP) once its Ready was in, so
 * knobctl waits for its pings (node01 answers its prepare "busy" four
 * times, $KNOB_TEST_BUSY_PREPARE, and is stopped meanwhile, so that it is
 * Ready only after node02 is stopped).  knobctl aborts the phase on both;
 * node02, continued, answers: exit 130, no phase run nor stored, the
 * files gone on both nodes, the summary naming both as stopped and as
 * having removed their files.  A guard: this stage had no test. */
START_TEST(sigint_in_go_sync)
{
	json_object *doc;
	char *o;
	pid_t pid;
	int rc;

	restart_hooked(0, "KNOB_TEST_BUSY_PREPARE", "4");
	pid = harness_knobctl_bg(&h, out, err, "--log-level debug bench " LONG_BENCH, data);
	ck_assert_int_gt(pid, 0);
	ck_assert(harness_wait_log(&h, 0, "test hook: no runner thread (3 more)", 30) == 0);
	ck_assert_int_eq(kill(h.node[0].pid, SIGSTOP), 0);	/* within 1.5 s: not Ready yet */
	ck_assert_msg(cu_wait(err_has, (void *)(uintptr_t)"node02: ready for phase", 10) >= 0,
	    "node02 never Ready");
	ck_assert_int_eq(kill(h.node[1].pid, SIGSTOP), 0);
	ck_assert_int_eq(kill(h.node[0].pid, SIGCONT), 0);
	ck_assert_msg(cu_wait(go_synced, NULL, 30) >= 0, "node01 never synced before GO");
	ck_assert_int_eq(err_count("before go"), 1);	/* node02's sync waits */
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	ck_assert_msg(cu_wait(err_has, (void *)(uintptr_t)"SIGINT: stopping phase ", 10) >= 0,
	    "no stop");
	ck_assert_int_eq(kill(h.node[1].pid, SIGCONT), 0);
	rc = cu_reap(pid);
	o = cu_slurp(out);
	fprintf(stderr, "exit %d\n%s\n", rc, o);
	ck_assert_int_eq(rc, 130);
	ck_assert_int_eq(cu_count_entries(data), 0);
	both_stopped(o, "-p1", "0 of 1");
	free(o);
	for (int i = 0; i < 2; i++)
		ck_assert(!harness_log_has(&h, i, "-p1: running"));
	doc = stored_interrupted(0);
	json_object_put(doc);
}
END_TEST

/* Regular files under dir, at any depth. */
static int
files_under(const char *dir)
{
	char *o = NULL;
	int n;

	ck_assert_int_eq(cu_sh_out(&o, "find '%s' -type f | wc -l", dir), 0);
	n = atoi(o);
	free(o);
	return n;
}

/* Cut (down) or restore (up) node i's link at the controller's bridge. */
static void
link_set(int i, const char *updown)
{
	ck_assert_int_eq(harness_sh("ip -n %s link set kv%d %s", h.ctl_ns, i + 1, updown), 0);
}

/* knobctl bench fio with the options opts, a thread on each node (200 KiB
 * at 40 writes a second: 1.25 s), with node01's result held at the
 * bridge: its link is cut while the phase runs, SIGINT once the phase
 * ended there, the link restored once knobctl stopped.  knobctl's exit status; its stdout into
 * *o, printed to the log with the time since the link came back. */
static int
result_held(const char *opts, char **o)
{
	uint64_t t0;
	pid_t pid;
	int rc;

	pid = harness_knobctl_bg(&h, out, err, "bench fio -w @all --dir %s %s--threads 2 -- "
	    "--rw=write --bs=4k --size=200k --rate_iops=40 --ioengine=psync", data, opts);
	ck_assert_int_gt(pid, 0);
	wait_running("-p1");
	link_set(0, "down");
	ck_assert(harness_wait_log(&h, 0, "-p1 finished", 30) == 0);
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	ck_assert_msg(cu_wait(err_has, (void *)(uintptr_t)"SIGINT: stopping phase ", 10) >= 0,
	    "no stop of the phase in flight");
	link_set(0, "up");
	t0 = now_mono_ns();
	rc = cu_reap(pid);
	*o = cu_slurp(out);
	fprintf(stderr, "exit %d %.1f s after the link came back\n%s\n", rc,
	    (double)(now_mono_ns() - t0) / 1e9, *o);
	/* node01's result came after the abort (else the link went down too late) */
	ck_assert_msg(strstr(*o, "threads=2 stopped on node01,") || strstr(*o, "threads=2 stopped "
	    "on node[01-02],"), "node01 was not in the phase at the stop");
	return rc;
}

/* SIGINT while node01's result is on its way: node01's link is cut while
 * its fio phase (1.25 s at 40 writes a second) runs, the phase ends there
 * (its agent keeps the files for the release), knobctl is stopped and
 * sends its abort, then the link comes back: the result arrives after the
 * abort, which came too late to remove anything.  node01's agent takes
 * 1 s to remove files ($KNOB_TEST_SLOW_RELEASE).  knobctl releases
 * node01's files and says they are removed only once its agent confirmed
 * it: exit 130, the data directory empty.  Before, it took the result for
 * the confirmation ("node01: stopped, its files removed") and exited with
 * node01's files still there (its agent removed them on the closed
 * connection, later). */
START_TEST(sigint_result_in_flight)
{
	char *o;

	restart_hooked(0, "KNOB_TEST_SLOW_RELEASE", "1");
	ck_assert_int_eq(result_held("", &o), 130);
	ck_assert_msg(cu_count_entries(data) == 0, "knobctl exited before node01's files were "
	    "removed");
	ck_assert_msg(err_has((void *)(uintptr_t)"node01: stopped, its files removed"), "node01 "
	    "never confirmed");
	ck_assert_ptr_null(strstr(o, "clean-up"));
	free(o);
	json_object_put(stored_interrupted(0));
}
END_TEST

/* The one element of the JSON array key of o, a string. */
static const char *
only_str(json_object *o, const char *key)
{
	json_object *arr = cu_get(o, key);

	ck_assert_msg(json_object_array_length(arr) == 1, "%s: %s", key,
	    json_object_to_json_string(arr));
	return json_object_get_string(json_object_array_get_idx(arr, 0));
}

/* sigint_result_in_flight with --keep, node02's agent as one before
 * PhaseResult.files ($KNOB_TEST_NO_FILES): node01's phase ended before the
 * abort came, so its agent keeps its file for the user (--keep) and says
 * so; node02's, aborted (its file removed) or ended before the stop (kept:
 * the same 1.25 s), does not say.  knobctl says node01 kept its file,
 * where, and that node02 did not say (summary, the stored interrupted
 * kept_on, unknown_on, removed_on empty); node01's file is there.
 * Before, knobctl said "node01: stopped, its files removed" and "files
 * removed (confirmed by their agents) on: node[01-02]", node01's file
 * left where it said none was, node02's taken as removed unsaid. */
START_TEST(sigint_keep_result_in_flight)
{
	char w1[PATH_MAX + 64], want[2 * PATH_MAX];
	json_object *doc, *in;
	char *o, *e;
	int both;

	restart_hooked(1, "KNOB_TEST_NO_FILES", "1");
	ck_assert_int_eq(result_held("--keep ", &o), 130);
	both = strstr(o, "threads=2 stopped on node[01-02],") != NULL;	/* node02 aborted */
	doc = stored_run();
	snprintf(w1, sizeof(w1), "%s/knob.%s-w1", data, cu_str(doc, "run_id"));
	e = cu_slurp(err);
	fprintf(stderr, "stderr:\n%s\n", e);
	snprintf(want, sizeof(want), "node01: stopped, the files kept (--keep) in %s\n", w1);
	ck_assert_msg(strstr(e, want) != NULL, "no \"%s\"", want);
	ck_assert_ptr_null(strstr(e, "its files removed"));
	snprintf(want, sizeof(want), "node02: %s; its agent does not say whether it kept or removed "
	    "its files in %s (a knobd", both ? "stopped" : "its phase ended before the stop", w1);
	ck_assert_msg(strstr(e, want) != NULL, "no \"%s\"", want);
	free(e);
	ck_assert_ptr_nonnull(strstr(o, "files removed (confirmed by their agents) on: none\n"));
	snprintf(want, sizeof(want), "files kept (--keep; said by their agents) on: node01, in "
	    "%s\n", w1);
	ck_assert_msg(strstr(o, want) != NULL, "no \"%s\"", want);
	ck_assert_ptr_nonnull(strstr(o, "not said by their agents (a knobd before it says so: look "
	    "there) on: node02, in "));
	free(o);
	/* node01's kept, as said (its directory, n.0).  Not node02's: knobctl
	 * says nothing of them, and its phase may have ended as the abort was
	 * sent (kept then, though named in "stopped on"): counting both nodes'
	 * files failed 1 clean-clone run of 3 under ASan */
	snprintf(want, sizeof(want), "%s/n.0", w1);
	ck_assert_int_eq(files_under(want), 1);
	in = cu_get(doc, "interrupted");
	ck_assert_str_eq(only_str(in, "kept_on"), "node01");
	ck_assert_str_eq(only_str(in, "unknown_on"), "node02");
	ck_assert_int_eq(json_object_array_length(cu_get(in, "removed_on")), 0);
	ck_assert_str_eq(cu_str(in, "workdir"), w1);
	json_object_put(doc);
}
END_TEST

/* SIGINT while the agents prepare an md-stat phase (20000 files a thread,
 * created in the prepare): the abort cuts the prepare short and each
 * agent answers with a failed Ready; node01's clean-up starts 1 s late
 * ($KNOB_TEST_SLOW_CLEANUP).  knobctl exits 130 with the files gone on
 * both nodes.  Before, the agent sent the failed Ready before its
 * clean-up, knobctl took the release's answer (nothing kept) for the
 * removal and exited while node01's files were still there. */
START_TEST(sigint_in_prepare_waits_cleanup)
{
	char *o;
	pid_t pid;

	restart_hooked(0, "KNOB_TEST_SLOW_CLEANUP", "1");
	pid = harness_knobctl_bg(&h, out, err, "bench md-stat -w @all --dir %s --threads 2 "
	    "--files 20000", data);
	ck_assert_int_gt(pid, 0);
	ck_assert(harness_wait_log(&h, 0, "-p1: preparing", 30) == 0);
	ck_assert_int_eq(stop_with(pid, SIGINT, 20, &o), 130);
	ck_assert_msg(err_has((void *)(uintptr_t)"node01: aborted during prepare: interrupted by "
	    "SIGINT"), "node01's prepare was not cut short (it ended before the abort)");
	ck_assert_msg(cu_count_entries(data) == 0, "knobctl exited before node01's files were "
	    "removed");
	ck_assert_ptr_nonnull(strstr(o, "stopped on node[01-02]"));
	ck_assert_ptr_null(strstr(o, "clean-up"));
	free(o);
	json_object_put(stored_interrupted(0));
}
END_TEST

/* knobctl's stderr holds node01's third clock sync (prepare and go of the
 * first phase, prepare of the second). */
static int
third_sync(void *arg)
{
	(void)arg;
	return err_count("node01: clock offset") >= 3;
}

/* SIGINT between the two phases of a composite (seq-write, then seq-read
 * of its files, one thread: node01's), the files of the first kept for
 * the second: node02's agent is stopped (SIGSTOP) while the first runs,
 * so the clock sync before the second waits for it.  knobctl releases the
 * kept files on node01 and waits for their removal: exit 130, the data
 * directory empty, the first phase stored, the run interrupted "between
 * phases", one phase not run. */
START_TEST(sigint_between_phases_composite)
{
	json_object *doc;
	char *o;
	pid_t pid;

	pid = harness_knobctl_bg(&h, out, err, "--log-level debug bench seq-write,seq-read -w "
	    "@all --dir %s --threads 1 --bs 4k --size 64k --rate-iops 40", data);
	ck_assert_int_gt(pid, 0);
	ck_assert(harness_wait_log(&h, 0, "-p1: running", 30) == 0);
	ck_assert_int_eq(kill(h.node[1].pid, SIGSTOP), 0);
	ck_assert_msg(cu_wait(third_sync, NULL, 30) >= 0, "no sync before the second phase");
	ck_assert_int_gt(cu_count_entries(data), 0);	/* the kept files */
	o = stopped_clean(pid, "interrupted by SIGINT between phases\n", "1 of 2 phase(s) "
	    "finished and kept; 1 not run");
	ck_assert_ptr_nonnull(strstr(o, "files removed (confirmed by their agents) on: node01\n"));
	free(o);
	ck_assert_int_eq(kill(h.node[1].pid, SIGCONT), 0);
	doc = stored_interrupted(1);
	ck_assert_str_eq(cu_str(cu_phase(doc, 0), "kind"), "seq-write");
	json_object_put(doc);
}
END_TEST

/* knobctl bench ARGS (after "bench") in the data directory with --keep,
 * stopped by SIGINT once its second phase runs: exit 130; its stdout into
 * *o, the first workdir's directory into w1 (len bytes); the
 * stored run, whose summary line on the kept files names w1. */
static json_object *
keep_stopped(const char *args, char **o, char *w1, size_t len)
{
	char want[2 * PATH_MAX];
	json_object *doc;
	pid_t pid;

	pid = harness_knobctl_bg(&h, out, err, "bench %s --dir %s --keep", args, data);
	ck_assert_int_gt(pid, 0);
	wait_running("-p2");
	ck_assert_int_eq(stop_with(pid, SIGINT, 10, o), 130);
	doc = stored_run();
	snprintf(w1, len, "%s/knob.%s-w1", data, cu_str(doc, "run_id"));
	snprintf(want, sizeof(want), "files of the finished phase(s) kept (--keep) in: %s (on the "
	    "nodes that ran them)\n", w1);
	ck_assert_msg(strstr(*o, want) != NULL, "no \"%s\"", want);
	return doc;
}

/* SIGINT in the second phase of a --keep sweep (1 thread, then 2, each
 * thread count in a directory of its own): the first phase's file stays
 * in its directory, as --keep promised; the second's, cut short, are
 * removed by the agents (confirmed); the summary and the stored
 * interrupted.kept say where the kept files are.  Before, the summary
 * said only where files were removed: the user was not told that the
 * finished phases' files were left, nor where. */
START_TEST(sigint_keep_run)
{
	char w1[PATH_MAX + 64], w2[PATH_MAX + 64];
	json_object *doc;
	char *o;

	doc = keep_stopped("seq-write -w @all --threads 1,2 --bs 4k --size 64k --at 2:size=4m "
	    "--rate-iops 40", &o, w1, sizeof(w1));
	snprintf(w2, sizeof(w2), "%s/knob.%s-w2", data, cu_str(doc, "run_id"));
	ck_assert_int_eq(files_under(w1), 1);
	ck_assert_int_ne(access(w2, F_OK), 0);
	ck_assert_ptr_nonnull(strstr(o, "1 of 2 phase(s) finished and kept; 0 not run"));
	ck_assert_ptr_nonnull(strstr(o, "files removed (confirmed by their agents) on: "
	    "node[01-02]\n"));
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cu_get(cu_get(doc,
	    "interrupted"), "kept"), 0)), w1);
	free(o);
	json_object_put(doc);
}
END_TEST

/* SIGINT in the second phase of a --keep composite (seq-read of the files
 * the finished seq-write wrote, in the same directory): those files stay,
 * as --keep promised for the finished phase; knobctl says each node kept
 * them (not that it removed them: interrupted kept_on), and the summary
 * where.  Before, the
 * agents removed the seq-write's files with the aborted read's. */
START_TEST(sigint_keep_composite)
{
	char w1[PATH_MAX + 64], want[2 * PATH_MAX];
	json_object *doc;
	char *o, *e;

	doc = keep_stopped("seq-write,seq-read -w @all --threads 2 --bs 4k --size 128k --rate-iops "
	    "40", &o, w1, sizeof(w1));
	ck_assert_int_eq(files_under(w1), 2);	/* a thread's file on each node */
	ck_assert_int_eq(cu_count_entries(data), 3);	/* nothing else */
	e = cu_slurp(err);
	snprintf(want, sizeof(want), "node01: stopped, the files kept (--keep) in %s\n", w1);
	ck_assert_msg(strstr(e, want) != NULL, "no \"%s\"", want);
	ck_assert_ptr_null(strstr(e, "its files removed"));
	free(e);
	ck_assert_ptr_nonnull(strstr(o, "files removed (confirmed by their agents) on: none\n"));
	free(o);
	ck_assert_int_eq(json_object_array_length(cu_get(cu_get(doc, "interrupted"), "kept_on")),
	    2);
	json_object_put(doc);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("bench_sig");
	TCase *tc = cu_tcase("bench_sig", setup, teardown, 120);

	tcase_add_test(tc, sigint_stops_phase_in_flight);
	tcase_add_test(tc, second_signal_cuts_off);
	tcase_add_test(tc, two_signals_at_once);
	tcase_add_test(tc, nohup_keeps_sighup_ignored);
	tcase_add_test(tc, play_bench_stops_cleanly);
	tcase_add_test(tc, sigint_while_prepare_busy);
	tcase_add_test(tc, sigint_between_phases_composite);
	tcase_add_test(tc, sigint_keep_run);
	tcase_add_test(tc, sigint_keep_composite);
	tcase_add_test(tc, sigint_in_go_sync);
	tcase_add_test(tc, sigint_result_in_flight);
	tcase_add_test(tc, sigint_keep_result_in_flight);
	tcase_add_test(tc, sigint_in_prepare_waits_cleanup);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
