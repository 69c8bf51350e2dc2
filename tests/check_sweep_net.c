/* Integration: knobctl sweep over 4 real agents in network namespaces.
 *
 * Real: the agents (tests/harness.h), a loop device this test creates and
 * tunes through knobctl apply and then changes behind knob's back (drift),
 * an agent that is stopped (unreachable), a FUSE file system that never
 * answers (tests/fuse_hang.c, libfuse3) mounted before the agents start so
 * that every agent's mount namespace holds it, the engine probe on the
 * local disk, SQLite, promtool (Debian's prometheus package),
 *
 * systemd-analyze, and Slurm itself: Debian's slurmctld and one slurmd per
 * node name (slurmd -N) on loopback ports 17660-17664, auth/none;
 * tests/scontrol-record only logs each scontrol call knob makes before
 * running the real scontrol, so that the test can count the batched calls.
 *
 * Stand-in, said plainly: the throttled node of the probe and bench tests is
 * an agent started with --test-hooks, whose engine honours
 * KNOB_TEST_PROBE_RATE_IOPS=16 (probe) and --test-rate-iops (bench): the
 * engine's own per-thread rate limit, as there is no cgroup io controller
 * or device-mapper here to slow a disk.  The tests after the drain test
 * that need Slurm use a stand-in scontrol (a shell script that logs its
 * calls and answers as scontrol does); test_not_slurm_node's answers
 * "Node node04 not found" and exit 1 for a node outside slurm.conf, as the
 * real one does (on stderr here; knobctl reads both of scontrol's streams).  Real again: a pids cgroup that leaves knobd no
 * thread for a check, and an ext4 loop file system frozen with fsfreeze
 * under a probe.  Stand-in again: the one-way delay of test_clock_late_pong's
 * link is a relay in the controller's namespace (this kernel has no sch_netem).
 *
 * CK_NOFORK: the harness, the loop device and the FUSE mount are set up once
 * in the unchecked fixture and always torn down by its teardown. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "testutil.h"
#include "harness.h"
#include "health.h"
#include "util.h"
#include "wire.h"

#define HANG_TIMEOUT_S 2
#define THROTTLE_NODE 3		/* node04 */

static struct harness h;
static int h_up;
static char top[64], loopdev[32], hangdir[128], recorder[PATH_MAX];
static pid_t fuse_pid;

static void slurm_stop(void);

/* 1 when path is a mount point in /proc/self/mounts. */
static int
is_mounted(const char *path)
{
	char *buf = NULL, pat[256];
	int r;

	if (read_file_bounded("/proc/self/mounts", 8u << 20, &buf, NULL) < 0)
		return 0;
	snprintf(pat, sizeof(pat), " %s fuse", path);
	r = strstr(buf, pat) != NULL;
	free(buf);
	return r;
}

/* Start the never-answering FUSE daemon on dir; wait for the mount.  Its
 * pid into *pid (0 when it did not start).  0 or -1. */
static int
start_fuse_at(const char *dir, pid_t *pid)
{
	char bin[PATH_MAX + 32];
	uint64_t end = now_mono_ns() + 10000000000ull;

	snprintf(bin, sizeof(bin), "%s/tests/fuse_hang", h.bin);
	*pid = fork();
	if (*pid == 0) {
		execl(bin, bin, dir, "120", (char *)NULL);
		_exit(127);
	}
	while (now_mono_ns() < end) {
		if (is_mounted(dir))
			return 0;
		if (waitpid(*pid, NULL, WNOHANG) == *pid) {
			*pid = 0;
			return -1;
		}
		usleep(20000);
	}
	return -1;
}

/* The suite's hung FUSE mount, on hangdir. */
static int
start_fuse(void)
{
	return start_fuse_at(hangdir, &fuse_pid);
}

static void
suite_setup(void)
{
	cu_mkdtemp(top, sizeof(top), "sweepnet");
	snprintf(hangdir, sizeof(hangdir), "%s/hang", top);
	mkdir(hangdir, 0755);
	if (cu_loop_attach(top, loopdev, sizeof(loopdev)) < 0)
		fprintf(stderr, "no loop device: the loop device tests will fail\n");
	if (harness_start(&h, 4, 0) < 0)
		return;
	/* build/ sits in the source tree */
	if (realpath("tests/scontrol-record", recorder) == NULL)
		snprintf(recorder, sizeof(recorder), "%s/../tests/scontrol-record", h.bin);
	if (start_fuse() < 0) {
		fprintf(stderr, "fuse_hang did not mount %s\n", hangdir);
		return;
	}
	snprintf(h.node[THROTTLE_NODE].extra_args, sizeof(h.node[0].extra_args), "--test-hooks");
	h_up = 1;
	for (int i = 0; i < h.n; i++) {
		if (i == THROTTLE_NODE)
			setenv("KNOB_TEST_PROBE_RATE_IOPS", "16", 1);
		if (harness_agent_start(&h, i) < 0)
			h_up = 0;
		unsetenv("KNOB_TEST_PROBE_RATE_IOPS");
	}
}

/* libfaketime leaves a shared memory segment and a semaphore named by the
 * pid of every process it was preloaded into: those of processes that are
 * gone are removed (after the clock case, and at teardown if it failed). */
static void
faketime_cleanup(void)
{
	cu_faketime_end();
	unsetenv("FAKETIME");
	unsetenv("FAKETIME_DONT_FAKE_MONOTONIC");
	harness_sh("for f in /dev/shm/faketime_shm_* /dev/shm/sem.faketime_sem_*; do "
	    "[ -e \"$f\" ] || continue; kill -0 \"${f##*_}\" 2>/dev/null || rm -f \"$f\"; done");
}

static void
suite_teardown(void)
{
	faketime_cleanup();
	char cmd[512];

	/* unmount first: a stat on the dead mount (rm -rf) would hang */
	if (hangdir[0] && is_mounted(hangdir)) {
		snprintf(cmd, sizeof(cmd), "fusermount3 -u -z %s || umount -l %s", hangdir, hangdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not unmount %s\n", hangdir);
	}
	if (fuse_pid > 0) {
		kill(fuse_pid, SIGKILL);
		waitpid(fuse_pid, NULL, 0);
	}
	slurm_stop();
	if (h_up || h.up)
		harness_stop(&h);
	cu_loop_detach(loopdev);
	if (cu_rm_rf(top) < 0)
		fprintf(stderr, "could not remove %s\n", top);
}

/* Write TOP/NAME with the printf-formatted content. */
#define write_file(name, ...) cu_write_at(top, name, 0644, __VA_ARGS__)

/* Run knobctl (output logged); returns the exit status. */
#define ctl(out, ...) harness_knobctl_logged(&h, out, __VA_ARGS__)

static void
precheck(void)
{
	ck_assert_msg(loopdev[0] != '\0', "no loop device");
	ck_assert_msg(h_up, "harness did not start");
}

/* Children of pid (one per stuck probe). */
static int
count_children(pid_t pid)
{
	return (int)harness_sh_int("pgrep -c -P %ld", (long)pid);
}

/* Start the agents of node01..node<n> that are stopped. */
static void
agents_up(int n)
{
	for (int i = 0; i < n; i++)
		if (h.node[i].pid == 0)
			ck_assert_int_eq(harness_agent_start(&h, i), 0);
}

START_TEST(test_sweep_file_errors)
{
	char *out = NULL, *err = NULL;
	int rc;

	precheck();
	write_file("bad.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <mount path=\"relative/path\"/>\n    <bogus/>\n  </defaults>\n</sweep>\n");
	rc = harness_knobctl(&h, &out, &err, "sweep -w node01 -f %s/bad.xml", top);
	fprintf(stderr, "%s%s", out, err);
	ck_assert_int_eq(rc, 2);
	ck_assert_msg(strstr(err, "/bad.xml:5:") != NULL, "no file:line for <bogus>: %s", err);
	free(out);
	free(err);
	write_file("bad2.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <mount path=\"relative/path\"/>\n  </defaults>\n</sweep>\n");
	rc = harness_knobctl(&h, &out, &err, "sweep -w node01 -f %s/bad2.xml", top);
	ck_assert_int_eq(rc, 2);
	ck_assert_msg(strstr(err, "/bad2.xml:4: <mount>: mount path must be absolute") != NULL,
	    "%s", err);
	free(out);
	free(err);
	/* a group whose node set does not expand (a typo in a group name) or
	 * names nobody: its checks would apply to no node */
	write_file("bad3.xml", "<?xml version=\"1.0\"?>\n<sweep>\n"
	    "  <group nodes=\"@clinets\">\n    <process name=\"knobd\"/>\n  </group>\n"
	    "  <group nodes=\"node[01-\">\n    <process name=\"knobd\"/>\n  </group>\n"
	    "</sweep>\n");
	rc = harness_knobctl(&h, &out, &err, "sweep -w node01 -f %s/bad3.xml", top);
	ck_assert_int_eq(rc, 2);
	ck_assert_msg(strstr(err, "/bad3.xml:3: <group nodes=\"@clinets\">: ") != NULL, "%s", err);
	ck_assert_msg(strstr(err, "/bad3.xml:6: <group nodes=\"node[01-\">: ") != NULL, "%s", err);
	free(out);
	free(err);
	/* the sweep's own failure (an unwritable --prom file) is 3, not the 1
	 * of unhealthy nodes that knob-sweep.service counts as success */
	rc = harness_knobctl(&h, &out, &err, "sweep -w node01 --prom %s/no-such-dir/k.prom", top);
	ck_assert_int_eq(rc, 3);
	ck_assert_ptr_nonnull(strstr(err, "knobctl sweep: --prom: "));
	free(out);
	free(err);
	rc = harness_knobctl(&h, &out, &err, "sweep -w node01 --bogus");
	ck_assert_int_eq(rc, 2);
	free(out);
	free(err);
}
END_TEST

/* Drift on node01, node02 stopped, a hung mount on node03, node04 fine. */
START_TEST(test_sweep_four_nodes)
{
	char *out = NULL, line[512], ra0[64], path[256];
	uint64_t t0;
	double took;
	pid_t bg;
	int rc, st;

	precheck();
	snprintf(path, sizeof(path), "/sys/block/%s/queue/read_ahead_kb", loopdev);
	ck_assert_int_ge(read_small_file(path, ra0, sizeof(ra0)), 0);
	strtrim(ra0);
	write_file("loop.xml", "<?xml version=\"1.0\"?>\n<profile name=\"loop\">\n"
	    "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"%s\"/>\n</profile>\n",
	    loopdev, strcmp(ra0, "4096") ? "4096" : "2048");
	ck_assert_int_eq(ctl(&out, "apply %s/loop.xml -w node01", top), 0);
	free(out);
	/* drift: someone changes it behind knob's back */
	ck_assert_int_eq(write_small_file(path, "136"), 0);
	write_file("sweep.xml", "<?xml version=\"1.0\"?>\n<sweep>\n"
	    "  <defaults>\n    <timeout check=\"10s\"/>\n    <clock max-offset=\"1s\"/>\n"
	    "    <nic name=\"eth0\" mtu=\"1500\" counters=\"yes\"/>\n"
	    "    <process name=\"knobd\"/>\n  </defaults>\n"
	    "  <group nodes=\"node01\">\n    <profile name=\"%s/loop.xml\"/>\n  </group>\n"
	    "  <group nodes=\"node03\">\n    <mount path=\"%s\" timeout=\"%ds\"/>\n  </group>\n"
	    "</sweep>\n", top, hangdir, HANG_TIMEOUT_S);
	harness_agent_stop(&h, 1, SIGTERM);

	/* the sweep in the background; node03 answers a ping while its probe hangs */
	snprintf(line, sizeof(line), "%s/sweep1.out", top);
	bg = harness_knobctl_bg(&h, line, NULL, "sweep -w @all -f %s/sweep.xml --prom %s/knob.prom",
	    top, top);
	t0 = now_mono_ns();
	ck_assert_int_eq(harness_wait_log(&h, 2, "health request", 20), 0);
	rc = ctl(&out, "ping -w node03");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "pong"));
	free(out);
	ck_assert_int_eq(waitpid(bg, &st, 0), bg);
	took = (double)(now_mono_ns() - t0) / 1e9;
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "sweep exit %d", WEXITSTATUS(st));
	snprintf(line, sizeof(line), "%s/sweep1.out", top);
	ck_assert_int_eq(read_file_bounded(line, 1 << 20, &out, NULL), 0);
	fprintf(stderr, "first sweep (%.1f s):\n%s", took, out);
	/* the budget: the hung probe's own deadline, not the 10 s check timeout */
	ck_assert_msg(took < HANG_TIMEOUT_S + 6, "sweep took %.1f s", took);
	snprintf(line, sizeof(line), "node03: mount %s hung (no answer to statfs in %d.0 s)",
	    hangdir, HANG_TIMEOUT_S);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	ck_assert_ptr_nonnull(strstr(out, "node02: reach unreachable (connect"));
	snprintf(line, sizeof(line), "node01: drift loop fail (1 of 1 keys drifted: blockdev %s read_ahead_kb is "
	    "136, wants", loopdev);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	ck_assert_ptr_null(strstr(out, "node04:"));
	ck_assert_ptr_nonnull(strstr(out, "1 ok (node04)"));
	ck_assert_ptr_nonnull(strstr(out, "1 hung (node03)"));
	ck_assert_ptr_nonnull(strstr(out, "1 unreachable (node02)"));
	free(out);

	/* Prometheus text file, parsed by promtool */
	ck_assert_int_eq(harness_sh("promtool check metrics < %s/knob.prom", top), 0);
	snprintf(line, sizeof(line), "knob_health_check{node=\"node03\",check=\"mount\",target=\"%s\","
	    "state=\"hung\"} 1", hangdir);
	snprintf(path, sizeof(path), "%s/knob.prom", top);
	ck_assert_int_eq(read_file_bounded(path, 1 << 20, &out, NULL), 0);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	ck_assert_ptr_nonnull(strstr(out, "knob_sweep_duration_seconds "));
	ck_assert_ptr_nonnull(strstr(out, "knob_sweep_last_timestamp_seconds "));
	free(out);

	/* second sweep while the first probe is stuck: no new probe, "since" */
	ck_assert_int_eq(count_children(h.node[2].pid), 1);
	rc = ctl(&out, "sweep -w node03 -f %s/sweep.xml --json", top);
	ck_assert_int_eq(rc, 1);
	snprintf(line, sizeof(line), "\"reason\": \"no answer to statfs (since ");
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	ck_assert_ptr_nonnull(strstr(out, "\"since_s\""));
	free(out);
	ck_assert_int_eq(count_children(h.node[2].pid), 1);
	rc = ctl(&out, "ping -w node03");
	ck_assert_int_eq(rc, 0);
	free(out);
	harness_agent_start(&h, 1);
}
END_TEST

/* Each check has its own deadline: a drift check stuck behind an apply
 * that holds the tuning lock is timeout, the others answer, and the sweep
 * ends on that deadline. */
START_TEST(test_check_timeout)
{
	char *out = NULL;
	uint64_t t0;
	double took;
	pid_t bg;
	int st;

	precheck();
	write_file("timeout.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <timeout check=\"2s\"/>\n    <profile name=\"%s/loop.xml\"/>\n"
	    "    <process name=\"knobd\"/>\n  </defaults>\n</sweep>\n", top);
	bg = harness_knobctl_bg(&h, "&2", NULL, "apply %s/loop.xml -w node04 "
	    "--test-pause-ms 20000 --test-pause-at 'after journaling'", top);
	ck_assert_int_eq(harness_wait_log(&h, THROTTLE_NODE, "test hook: pausing", 20), 0);
	t0 = now_mono_ns();
	ck_assert_int_eq(ctl(&out, "sweep -w node04 -f %s/timeout.xml -v", top), 1);
	took = (double)(now_mono_ns() - t0) / 1e9;
	ck_assert_ptr_nonnull(strstr(out, "node04: drift loop timeout (no result in 2.0 s)"));
	ck_assert_ptr_nonnull(strstr(out, "node04: service knobd ok"));
	ck_assert_ptr_nonnull(strstr(out, "1 timeout (node04)"));
	ck_assert_msg(took < 5, "sweep took %.1f s", took);
	free(out);
	harness_pause_end(&h, THROTTLE_NODE);	/* the apply goes on */
	ck_assert_int_eq(waitpid(bg, &st, 0), bg);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

/* The probe is skipped on a node that runs a knob benchmark. */
START_TEST(test_probe_skipped_during_bench)
{
	char *out = NULL;
	pid_t bg;
	int st;

	precheck();
	bg = harness_knobctl_bg(&h, "&2", NULL, "bench seq-write -w node04 --dir %s "
	    "--threads 1 --bs 64k --size 512k --rate-iops 2", top);
	ck_assert_int_eq(harness_wait_log(&h, THROTTLE_NODE, "phase-go request", 20), 0);
	ck_assert_int_eq(ctl(&out, "sweep -w node04 --probe %s -v", top), 0);
	ck_assert_msg(strstr(out, "node04: probe ") && strstr(out, " skipped (a knob benchmark is "
	    "running)"), "probe not skipped");
	free(out);
	ck_assert_int_eq(waitpid(bg, &st, 0), bg);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

/* Fleet-relative probe: exactly the throttled node is slow. */
START_TEST(test_probe_slow)
{
	char *out = NULL, line[256];
	int rc;

	precheck();
	if (h.node[1].pid == 0)
		ck_assert_int_eq(harness_agent_start(&h, 1), 0);
	/* The four "nodes" share one disk and two cores with whatever else runs
	 * on this machine; probing at the same time, healthy peers differ by up
	 * to 11x on this VM (md-create 3479/s against 38002/s under ASan: an
	 * ext4 journal stall, a busy core).  So the gap is widened to 99%: the
	 * throttled node runs 16 op/s, 99.9% below its peers on seq-read and
	 * md-stat.  The sweep waits out the probe's four phases of a second
	 * (the least <probe seq md> allows), each over only at the first op
	 * past its second, the read and stat phases after a whole pass over
	 * what was written: at 4 op/s node04 took 5.5 s alone, 16 op/s 4.7 s.
	 * 64 KiB blocks: the healthy nodes write 4 MiB (count-bound) instead of
	 * a second of 1 MiB blocks and its fsync (3.5 s alone, not 4.1 s). */
	write_file("probe.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <probe dir=\"%s\" block-size=\"64K\"/>\n  </defaults>\n  <slow mads=\"3\" "
	    "min-gap=\"99%%\"/>\n</sweep>\n", top);
	rc = ctl(&out, "sweep -w @all -f %s/probe.xml --probe %s -v", top, top);
	ck_assert_int_eq(rc, 1);
	snprintf(line, sizeof(line), "node04: probe %s slow (", top);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	ck_assert_msg(strstr(out, "fleet median") && strstr(out, "1 slow (node04)") &&
	    strstr(out, "3 ok (node[01-03])"), "not exactly node04 slow:\n%s", out);
	free(out);
	/* node04 probing another directory is not measured against the others
	 * (a group on local NVMe is not slow next to Lustre): nobody is slow,
	 * and node04's ok probe says that no fleet judged it (before, a plain
	 * ok, as if compared and found fine) */
	harness_sh("mkdir -p %s/other", top);
	write_file("probe2.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <probe dir=\"%s\" block-size=\"64K\"/>\n  </defaults>\n  <group nodes=\"node04\">\n"
	    "    <probe dir=\"%s/other\" block-size=\"64K\"/>\n  </group>\n  <slow mads=\"3\" "
	    "min-gap=\"99%%\"/>\n</sweep>\n", top, top);
	rc = ctl(&out, "sweep -w @all -f %s/probe2.xml -v", top);
	ck_assert_msg(rc == 0 && strstr(out, "4 ok (node[01-04])"), "node04 compared with the "
	    "others although it probed another directory:\n%s", out);
	snprintf(line, sizeof(line), "; not compared: 1 node probed %s/other with this block "
	    "size, the fleet-relative rule needs 3)", top);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	ck_assert_msg(strstr(out, "3 nodes probed") == NULL, "%s", out);
	free(out);
}
END_TEST

/* knobctl bench names the throttled node as a straggler under its table,
 * by the same rule.  Every thread is held to 16 ops/s (--rate-iops) so that
 * the healthy nodes' rates are steady; node04, the only agent with
 * --test-hooks, also honours --test-rate-iops 4 and runs 4x slower. */
START_TEST(test_bench_straggler)
{
	char *out = NULL;
	int rc;

	precheck();
	agents_up(h.n);
	rc = ctl(&out, "bench seq-write -w @all --dir %s --threads 4 --bs 64k --size 1m "
	    "--rate-iops 16 --test-rate-iops 4", top);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(out, "seq-write: straggler: node04 at ") != NULL, "no straggler line");
	ck_assert_ptr_nonnull(strstr(out, "fleet median"));
	ck_assert_ptr_null(strstr(out, "straggler: node01"));
	ck_assert_ptr_null(strstr(out, "straggler: node02"));
	ck_assert_ptr_null(strstr(out, "straggler: node03"));
	free(out);
}
END_TEST

/* ------------------------------------------------------------ Slurm
 * A real slurmctld and one slurmd per node name (slurmd -N), on the host's
 * loopback, ports 17660-17664, auth/none, state under TOP/slurm.  (Not in
 * the controller namespace: "ip netns exec" mounts a fresh /sys without
 * cgroups, and slurmd will not start without them.)  knobctl runs in the
 * controller namespace, so tests/scontrol-record enters this process's
 * network namespace (nsenter) to reach slurmctld. */
#define SLURM_PORT 17660

static pid_t slurm_pid[5];
static char slurm_conf[PATH_MAX];

/* Slurm's nodes: node01..node03 (node04, a knob node, is not Slurm's: an
 * NFS server, say). */
#define SLURM_NODES 3

/* Write slurm.conf for node01..node03. */
static void
slurm_write_conf(const char *dir)
{
	char *nodes = NULL;

	for (int i = 1; i <= SLURM_NODES; i++)
		str_appendf(&nodes, "NodeName=node%02d NodeAddr=127.0.0.1 Port=%d CPUs=1 "
		    "State=UNKNOWN\n", i, SLURM_PORT + i);
	snprintf(slurm_conf, sizeof(slurm_conf), "%s/slurm.conf", dir);
	write_file("slurm/slurm.conf", "ClusterName=knobtest\nSlurmctldHost=localhost\n"
	    "SlurmctldPort=%d\nAuthType=auth/none\nCredType=cred/none\nSlurmUser=root\n"
	    "StateSaveLocation=%s/state\nSlurmdSpoolDir=%s/spool/%%n\n"
	    "SlurmdPidFile=%s/slurmd.%%n.pid\nSlurmctldPidFile=%s/slurmctld.pid\n"
	    "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nReturnToService=2\n"
	    "SchedulerType=sched/builtin\nSelectType=select/linear\nMpiDefault=none\n"
	    "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
	    "%sPartitionName=batch Nodes=ALL Default=YES State=UP\n", SLURM_PORT, dir, dir, dir,
	    dir, nodes);
	free(nodes);
}

/* Start one Slurm daemon (argv NULL-terminated), its log in dir. */
static pid_t
slurm_spawn(const char *dir, const char *logname, char *const argv[])
{
	char log[PATH_MAX];
	pid_t pid;

	snprintf(log, sizeof(log), "%s/%s.log", dir, logname);
	pid = fork();
	if (pid == 0) {
		if (freopen(log, "w", stderr) == NULL || freopen(log, "a", stdout) == NULL)
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* slurmctld and a slurmd per Slurm node; wait until sinfo shows them idle. */
static int
slurm_start(const char *dir)
{
	char name[8], c[PATH_MAX + 16];
	uint64_t end = now_mono_ns() + 30000000000ull;

	ck_assert_int_eq(harness_sh("mkdir -p %s/state %s/spool", dir, dir), 0);
	slurm_write_conf(dir);
	setenv("SLURM_CONF", slurm_conf, 1);
	snprintf(c, sizeof(c), "%s", slurm_conf);
	slurm_pid[0] = slurm_spawn(dir, "slurmctld", (char *const[]){ (char *)(uintptr_t)"slurmctld",
	    (char *)(uintptr_t)"-D", (char *)(uintptr_t)"-f", c, NULL });
	for (int i = 1; i <= SLURM_NODES; i++) {
		snprintf(name, sizeof(name), "node%02d", i);
		slurm_pid[i] = slurm_spawn(dir, name, (char *const[]){ (char *)(uintptr_t)"slurmd",
		    (char *)(uintptr_t)"-D", (char *)(uintptr_t)"-N", name, (char *)(uintptr_t)"-f", c,
		    NULL });
	}
	while (now_mono_ns() < end) {
		if (harness_sh_int("sinfo -h -N -o '%%N %%t' 2>/dev/null | grep -c ' idle$'") ==
		    SLURM_NODES)
			return 0;
		usleep(200000);
	}
	return -1;
}

static void
slurm_stop(void)
{
	for (int i = 0; i < 5; i++)
		if (slurm_pid[i] > 0) {
			kill(slurm_pid[i], SIGTERM);
			waitpid(slurm_pid[i], NULL, 0);
			slurm_pid[i] = 0;
		}
}

/* 1 when scontrol shows node drained with a reason starting with prefix. */
static int
slurm_drained(const char *node, const char *prefix)
{
	return harness_sh("scontrol -o show node %s | grep -q 'State=[A-Z+]*DRAIN.* Reason=%s'",
	    node, prefix) == 0;
}

/* Calls knobctl made, matching pattern (grep -c). */
static int
calls(const char *log, const char *pattern)
{
	return (int)harness_sh_int("grep -c -- '%s' %s", pattern, log);
}

/* One sweep of node[01-04] with --drain through the recording wrapper,
 * knobctl's global options pre (may be ""); *out (when out is not NULL)
 * gets the output. */
static int
drain_sweep_as(const char *pre, char **out)
{
	char *o = NULL;
	int rc = ctl(&o, "%s sweep -w node[01-04] -f %s/drain.xml --drain --scontrol %s", pre, top,
	    recorder);

	if (out)
		*out = o;
	else
		free(o);
	return rc;
}

#define drain_sweep(out) drain_sweep_as("", out)

/* drain.xml: every node runs knobd; with bad, node01, node02 and node04
 * also need a process no node runs (their own failure). */
static void
write_drain_xml(int bad)
{
	write_file("drain.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <process name=\"knobd\"/>\n  </defaults>\n%s  <drain after=\"2\" resume=\"2\"/>\n"
	    "</sweep>\n", bad ? "  <group nodes=\"node[01-02],node04\">\n"
	    "    <process name=\"knob-no-daemon\"/>\n  </group>\n" : "");
}

/* Knob's own failures drain nobody (real slurmctld, the recording
 * scontrol): two sweeps with node01/node02's agents stopped (unreachable:
 * exit 1), two with a controller whose certificate every agent refuses
 * (node02's: exit 3, the sweep's own failure; the second with node01's
 * agent stopped too), two with the controller's
 * clock 30 s ahead (libfaketime; the nodes agree with each other: ok). */
static void
knob_side_sweeps(const char *log)
{
	char pre[PATH_MAX * 2 + 32], *out = NULL;

	harness_agent_stop(&h, 0, SIGTERM);
	harness_agent_stop(&h, 1, SIGTERM);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(drain_sweep(NULL), 1);
	ck_assert_int_eq(calls(log, "update"), 0);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
	snprintf(pre, sizeof(pre), "--cert %s/node02.crt --key %s/node02.key", h.ca_dir, h.ca_dir);
	for (int i = 0; i < 2; i++) {
		if (i == 1)	/* the others refusing us and node01 down: still ours */
			harness_agent_stop(&h, 0, SIGTERM);
		ck_assert_int_eq(drain_sweep_as(pre, &out), 3);	/* SWEEP_EXIT_ERROR */
		ck_assert_ptr_nonnull(strstr(out, "auth fail (agent refused us: certificate of 'node02' has role"));
		free(out);
	}
	ck_assert_int_eq(calls(log, "update"), 0);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	setenv("FAKETIME", "+30s", 1);
	setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
	cu_faketime_begin();
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(drain_sweep(NULL), 0);
	ck_assert_int_eq(ctl(&out, "sweep -v -w node[01-04] -f %s/drain.xml", top), 0);
	ck_assert_msg(strstr(out, "clock ok (offset -30.0") || strstr(out, "clock ok (offset -29.9"),
	    "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "s from the fleet median (max 1.000 s)"));
	free(out);
	faketime_cleanup();
	ck_assert_int_eq(calls(log, "update"), 0);
}

/* 1 when slurm_drained(node, prefix) within 10 s (polled: slurmctld
 * applies a request on its own time). */
static int
slurm_drained_soon(const char *node, const char *prefix)
{
	uint64_t end = now_mono_ns() + 10000000000ull;

	while (!slurm_drained(node, prefix))
		if (now_mono_ns() > end)
			return 0;
		else
			usleep(100000);	/* polling a condition with a deadline */
	return 1;
}

/* drain1.xml: node01 alone needs a process no node runs when bad; a drain
 * after 1 failure, a resume after 1 pass. */
static void
write_drain1_xml(int bad)
{
	write_file("drain1.xml", "<?xml version=\"1.0\"?>\n<sweep>\n%s  <drain after=\"1\" "
	    "resume=\"1\"/>\n</sweep>\n", bad ? "  <group nodes=\"node01\">\n"
	    "    <process name=\"knob-no-daemon\"/>\n  </group>\n" : "");
}

/* A drain call that times out against the real slurmctld and takes all the
 * same: TOP/scontrol-stop, around the recording scontrol, stops slurmctld
 * (SIGSTOP) just before the drain call, so that scontrol waits for an
 * answer until knobctl kills it (KNOB_SCONTROL_TIMEOUT_MS: 0.5 s); SIGCONT
 * then lets slurmctld read the request still queued on its socket and drain
 * node01.  The sweep says "drain unconfirmed" (exit 3); the next --drain
 * sweep, node01 passing, finds the drain in Slurm with knob's reason, takes
 * it as knob's own and resumes it. */
static void
drain_unconfirmed_real(const char *log)
{
	char stopper[PATH_MAX], *out = NULL, *err = NULL;
	int rc;

	write_file("scontrol-stop", "#!/bin/sh\ncase \"$*\" in *State=DRAIN*) kill -STOP %ld ;; "
	    "esac\nexec %s \"$@\"\n", (long)slurm_pid[0], recorder);
	snprintf(stopper, sizeof(stopper), "%s/scontrol-stop", top);
	ck_assert_int_eq(chmod(stopper, 0755), 0);
	write_drain1_xml(1);
	setenv("KNOB_SCONTROL_TIMEOUT_MS", "500", 1);
	rc = harness_knobctl(&h, &out, &err, "sweep -w node01 -f %s/drain1.xml --drain "
	    "--scontrol %s", top, stopper);
	unsetenv("KNOB_SCONTROL_TIMEOUT_MS");
	kill(slurm_pid[0], SIGCONT);
	ck_assert_msg(rc == 3, "exit %d: %s%s", rc, out, err);
	ck_assert_ptr_nonnull(strstr(out, "drain unconfirmed node01: knob: service fail (looked "
	    "up in Slurm next sweep)"));
	ck_assert_ptr_nonnull(strstr(err, "update timed out after 0.5 s (killed)"));
	free(out);
	free(err);
	ck_assert_int_eq(calls(log, "^update NodeName=node01 State=DRAIN"), 1);
	ck_assert_msg(slurm_drained_soon("node01", "knob: service fail"), "the drain request "
	    "queued on slurmctld's socket did not take");
	write_drain1_xml(0);
	ck_assert_int_eq(ctl(&out, "sweep -w node01 -f %s/drain1.xml --drain --scontrol %s", top,
	    recorder), 0);
	ck_assert_ptr_nonnull(strstr(out, "resumed node01"));
	free(out);
	ck_assert(!slurm_drained("node01", ""));
	ck_assert_int_eq(calls(log, "^update NodeName=node01 State=DRAIN"), 1);
	ck_assert_int_eq(ctl(&out, "sweep history node01"), 0);
	ck_assert_ptr_nonnull(strstr(out, "=> drain unconfirmed: knob: service fail (scontrol "
	    "failed or timed out; looked up in Slurm next sweep)"));
	/* Slurm may add NOT_RESPONDING: slurmctld's pings were stopped too */
	ck_assert_ptr_nonnull(strstr(out, "=> unconfirmed drain confirmed (IDLE+DRAIN"));
	ck_assert_ptr_nonnull(strstr(out, ", reason: knob: service fail); resumed"));
	free(out);
}

/* Drain after 2 failures, resume after 2 passes, in batched calls against a
 * real slurmctld; a node a person drained (or re-drained) is never resumed;
 * node04, failing with them but not a Slurm node, is reported as such and
 * does not stop the others' drain (scontrol exits 1 on it).  Knob's own
 * failures (knob_side_sweeps) never count toward a drain or a resume. */
START_TEST(test_drain_hysteresis)
{
	char dir[128], log[192], netns[64], *out = NULL;

	precheck();
	snprintf(dir, sizeof(dir), "%s/slurm", top);
	snprintf(log, sizeof(log), "%s/calls.log", dir);
	if (slurm_start(dir) != 0) {
		harness_sh("tail -n 5 %s/*.log >&2", dir);
		ck_abort_msg("slurmctld/slurmd did not come up");
	}
	setenv("KNOB_SCONTROL_LOG", log, 1);
	snprintf(netns, sizeof(netns), "/proc/%ld/ns/net", (long)getpid());
	setenv("KNOB_SCONTROL_NETNS", netns, 1);
	ck_assert_int_eq(harness_sh("touch %s && scontrol update NodeName=node03 State=DRAIN "
	    "Reason='bad DIMM, ticket 4711'", log), 0);
	write_drain_xml(0);
	/* a passing sweep first: it resets the counts the earlier tests left, and
	 * leaves node03 (drained by a person, healthy) alone */
	ck_assert_int_eq(drain_sweep(NULL), 0);
	ck_assert_int_eq(calls(log, "update"), 0);
	knob_side_sweeps(log);
	write_drain_xml(1);
	/* failure 1 of 2: nothing drained */
	ck_assert_int_eq(drain_sweep(NULL), 1);
	ck_assert_int_eq(calls(log, "update"), 0);
	/* failure 2: both drained in one call, with knob's reason */
	ck_assert_int_eq(drain_sweep(&out), 1);
	ck_assert_ptr_nonnull(strstr(out, "drained node01,node02: knob: service fail"));
	free(out);
	ck_assert_int_eq(calls(log, "^update NodeName=node01,node02 State=DRAIN Reason=knob: "), 1);
	ck_assert_int_eq(calls(log, "update"), 1);
	ck_assert(slurm_drained("node01", "knob: service fail"));
	ck_assert(slurm_drained("node02", "knob: service fail"));
	/* failure 3: already drained by knob, nothing more to do (node[01-02]
	 * only: node04 alone due for a drain makes scontrol show nothing) */
	ck_assert_int_eq(ctl(&out, "sweep -w node[01-02] -f %s/drain.xml --drain --scontrol %s",
	    top, recorder), 1);
	free(out);
	ck_assert_int_eq(calls(log, "update"), 1);
	/* a person takes over node02's drain */
	ck_assert_int_eq(harness_sh("scontrol update NodeName=node02 State=DRAIN "
	    "Reason='replacing the HBA'"), 0);
	write_drain_xml(0);
	/* pass 1 of 2: nothing resumed */
	ck_assert_int_eq(drain_sweep(NULL), 0);
	ck_assert_int_eq(calls(log, "RESUME"), 0);
	/* node01's agent down: not a pass, not a failure (still 1 of 2) */
	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_int_eq(drain_sweep(NULL), 1);
	ck_assert_int_eq(calls(log, "RESUME"), 0);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	/* pass 2: node01 resumed alone; node02 and node03 stay drained */
	ck_assert_int_eq(drain_sweep(NULL), 0);
	ck_assert_int_eq(calls(log, "^update NodeName=node01 State=RESUME"), 1);
	ck_assert_int_eq(calls(log, "RESUME"), 1);
	ck_assert(!slurm_drained("node01", ""));
	ck_assert(slurm_drained("node02", "replacing the HBA"));
	ck_assert(slurm_drained("node03", "bad DIMM, ticket 4711"));
	/* and a third pass does not resume them either */
	ck_assert_int_eq(drain_sweep(NULL), 0);
	ck_assert_int_eq(calls(log, "RESUME"), 1);
	ck_assert(slurm_drained("node02", "replacing the HBA"));
	unsetenv("KNOB_SCONTROL_LOG");
	unsetenv("KNOB_SCONTROL_NETNS");
	ck_assert_int_eq(ctl(&out, "sweep history node01"), 0);
	ck_assert_ptr_nonnull(strstr(out, "drained: knob: service fail"));
	ck_assert_ptr_nonnull(strstr(out, "=> resumed"));
	ck_assert_ptr_nonnull(strstr(out, "failing 1 of 2 before a drain"));
	ck_assert_ptr_nonnull(strstr(out, "not counted: knob's side, not the node's health"));
	ck_assert_ptr_nonnull(strstr(out, "=> still drained by knob (failing 3)"));
	ck_assert_msg(strstr(out, "failing 3 of 2") == NULL, "%s", out);
	free(out);
	ck_assert_int_eq(ctl(&out, "sweep history node04"), 0);
	ck_assert_ptr_nonnull(strstr(out, "not a Slurm node"));
	free(out);
	ck_assert_int_eq(ctl(&out, "sweep history node02"), 0);
	ck_assert_ptr_nonnull(strstr(out, "not resumed: Slurm reason is not knob's (replacing the HBA)"));
	free(out);
	setenv("KNOB_SCONTROL_LOG", log, 1);
	setenv("KNOB_SCONTROL_NETNS", netns, 1);
	drain_unconfirmed_real(log);
	unsetenv("KNOB_SCONTROL_LOG");
	unsetenv("KNOB_SCONTROL_NETNS");
	slurm_stop();
}
END_TEST

/* Set node02's fake MCE count (the sysroot's /proc/interrupts). */
static void
set_mce(const char *root, int n)
{
	ck_assert_int_eq(harness_sh("printf '           CPU0       CPU1\\n MCE:          %d          0"
	    "   Machine check exceptions\\n' > %s/proc/interrupts", n, root), 0);
}

/* knobctl sweep -v of nodes with TOP/file (extra arguments args); asserts
 * the exit status and that the output holds want. */
static void
sweep_expect(const char *nodes, const char *file, int want_rc, const char *args,
    const char *want)
{
	char *out = NULL;

	ck_assert_int_eq(ctl(&out, "sweep -v -w %s -f %s/%s %s", nodes, top, file, args), want_rc);
	ck_assert_msg(strstr(out, want) != NULL, "missing '%s' in:\n%s", want, out);
	free(out);
}

#define errors_sweep(rc, args, want) sweep_expect("node02", "errs.xml", rc, args, want)

/* Sweep node02 with errs.xml (<errors hold="3">) until its errors check
 * is ok again, failing until then: the hold is over within 3 s of the
 * last new error; a failed check when it is not 10 s on. */
static void
errors_ok_after_hold(void)
{
	const char *ok = "node02: errors ok (no new MCE or EDAC errors)";
	uint64_t end = now_mono_ns() + 10000000000ull;
	char *out = NULL;
	int rc;

	for (;;) {
		rc = harness_knobctl(&h, &out, NULL, "sweep -v -w node02 -f %s/errs.xml", top);
		if (rc == 0 && strstr(out, ok) != NULL)
			break;
		ck_assert_msg(rc == 1 && strstr(out, "node02: errors fail (") != NULL,
		    "exit %d, neither held nor ok:\n%s", rc, out);
		ck_assert_msg(now_mono_ns() < end, "still held 10 s on:\n%s", out);
		free(out);
		usleep(200000);	/* polling a condition with a deadline */
	}
	fprintf(stderr, "$ knobctl sweep -v -w node02 -f %s/errs.xml   (exit 0)\n%s", top, out);
	free(out);
}

/* A stand-in scontrol, TOP/NAME: it appends each call's arguments to
 * TOP/NAME.log (made empty here), then runs the shell code body (its
 * arguments in "$@").  "--drain --scontrol TOP/NAME" into args. */
static void
fake_scontrol_sh(const char *name, const char *body, char *args, size_t len)
{
	char path[PATH_MAX];

	write_file(name, "#!/bin/sh\necho \"$*\" >> %s/%s.log\n%s", top, name, body);
	snprintf(path, sizeof(path), "%s/%s", top, name);
	ck_assert_int_eq(chmod(path, 0755), 0);
	ck_assert_int_eq(harness_sh(": > %s.log", path), 0);
	snprintf(args, len, "--drain --scontrol %s", path);
}

/* A stand-in scontrol (fake_scontrol_sh) that shows nodes (space-separated)
 * idle, whatever it is asked (the real slurmctld is test_drain_hysteresis's). */
static void
fake_scontrol(const char *name, const char *nodes, char *args, size_t len)
{
	char body[512];

	snprintf(body, sizeof(body), "[ \"$1\" = -o ] && for n in %s; do "
	    "echo \"NodeName=$n Arch=x86_64 State=IDLE\"; done\nexit 0\n", nodes);
	fake_scontrol_sh(name, body, args, len);
}

/* MCE and EDAC counts that grow between sweeps: corrected errors warn,
 * machine checks fail and stay failing for <errors hold> (3 s here) after
 * the last, whichever sweep saw them first: a manual sweep does not use
 * them up before the --drain sweep (a stand-in scontrol that logs its
 * calls and shows node02 idle: the real slurmctld is test_drain_hysteresis's).
 * A counter that went down (a reboot) or another boot_id starts from 0.
 * The counters are a fake /proc and /sys under a --sysroot (a real
 * machine's cannot be made to grow on demand). */
START_TEST(test_error_counters)
{
	char root[128], drain[PATH_MAX + 32];

	precheck();
	snprintf(root, sizeof(root), "%s/root02", top);
	ck_assert_int_eq(harness_sh("mkdir -p %s/proc/sys/kernel/random "
	    "%s/sys/devices/system/edac/mc/mc0 && echo boot-a > %s/proc/sys/kernel/random/boot_id && "
	    "echo '0.10 0.20 0.30 1/100 4242' > %s/proc/loadavg && "
	    "echo 0 > %s/sys/devices/system/edac/mc/mc0/ce_count && "
	    "echo 0 > %s/sys/devices/system/edac/mc/mc0/ue_count", root, root, root, root, root,
	    root), 0);
	set_mce(root, 0);
	write_file("errs.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <errors check=\"yes\" hold=\"3\"/>\n  </defaults>\n  <drain after=\"1\" resume=\"1\"/>\n"
	    "</sweep>\n");
	fake_scontrol("fake-scontrol", "node02", drain, sizeof(drain));
	snprintf(h.node[1].sysroot, sizeof(h.node[1].sysroot), "%s", root);
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
	errors_sweep(0, "", "node02: errors ok (");	/* new baseline of 0 */
	ck_assert_int_eq(harness_sh("echo 3 > %s/sys/devices/system/edac/mc/mc0/ce_count", root), 0);
	errors_sweep(1, "", "node02: errors warn (3 new EDAC corrected errors)");
	set_mce(root, 2);
	errors_sweep(1, "", "node02: errors fail (2 MCE, 0 EDAC UE new since ");
	/* still failing on the next sweep, nothing new */
	errors_sweep(1, "", "node02: errors fail (2 MCE, 0 EDAC UE new since ");
	set_mce(root, 5);
	/* a manual sweep sees them; the timer's --drain sweep still does */
	errors_sweep(1, "", "node02: errors fail (5 MCE, 0 EDAC UE new since ");
	errors_sweep(1, drain, "drained node02: knob: errors fail");
	errors_ok_after_hold();
	/* a reboot: the count went down, and the one new MCE is seen */
	set_mce(root, 1);
	errors_sweep(1, "", "node02: errors fail (1 MCE, 0 EDAC UE new since ");
	errors_ok_after_hold();
	/* another boot with as many MCE as before: all of them are new */
	ck_assert_int_eq(harness_sh("echo boot-b > %s/proc/sys/kernel/random/boot_id", root), 0);
	errors_sweep(1, "", "node02: errors fail (1 MCE, 0 EDAC UE new since ");
	/* the fake counts are not this machine's: forget them */
	ck_assert_int_eq(harness_sh("rm -f %s/health-counters.json", h.node[1].state_dir), 0);
	h.node[1].sysroot[0] = '\0';
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
}
END_TEST

/* agenterr.xml: every node runs knobd; with too_many, node02's group asks
 * for 1025 mounts, one more than an agent takes in one health request
 * (HEALTH_MAX_ITEMS in agent/health.h), so node02's knobd answers with an
 * Error.  Drained after 1 failing sweep. */
static void
write_agenterr_xml(int too_many)
{
	char *mounts = NULL;

	for (int i = 0; too_many && i < 1025; i++)
		str_appendf(&mounts, "    <mount path=\"/knob-no-mount-%d\"/>\n", i);
	write_file("agenterr.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <process name=\"knobd\"/>\n  </defaults>\n"
	    "  <group nodes=\"node02\">\n%s  </group>\n  <drain after=\"1\" resume=\"1\"/>\n"
	    "</sweep>\n", mounts ? mounts : "");
	free(mounts);
}

/* An agent that answers the health request with an Error never checked its
 * node: knob's side, like an unreachable agent.  The condition is real:
 * node02's knobd refuses a request with more mounts than it takes
 * ("health request: more than 1024 mounts or NICs").  With --drain and
 * <drain after="1">, node02 is named ("agent fail", exit 1) but the
 * stand-in scontrol is never asked to drain it, and its history says not
 * counted; a sweep of node02 alone checked no node: exit 3, the sweep's own
 * failure.  Before, it was "reach fail", the node's own, and node02 was
 * drained. */
START_TEST(test_agent_error_not_drained)
{
	char drain[PATH_MAX + 32], *out = NULL, *err = NULL;
	const char *want = "node02: agent fail (answered with an error, not a health result: "
	    "health request: more than 1024 mounts or NICs; knob's side";

	precheck();
	if (h.node[1].pid == 0)
		ck_assert_int_eq(harness_agent_start(&h, 1), 0);
	fake_scontrol("scontrol-agenterr", "node02", drain, sizeof(drain));
	/* a passing sweep first: node02's counts (and a drain by knob that an
	 * earlier test left) start from nothing */
	write_agenterr_xml(0);
	sweep_expect("node[01-02]", "agenterr.xml", 0, drain, "2 ok (node[01-02])");
	write_agenterr_xml(1);
	sweep_expect("node[01-02]", "agenterr.xml", 1, drain, "1 ok (node01), 1 fail (node02)");
	ck_assert_int_eq(harness_sh_int("grep -c update %s/scontrol-agenterr.log", top), 0);
	sweep_expect("node[01-02]", "agenterr.xml", 1, drain, want);
	ck_assert_int_eq(ctl(&out, "sweep history node02"), 0);
	ck_assert_msg(strstr(out, "agent fail (") && strstr(out, "=> not counted: knob's side, "
	    "not the node's health"), "%s", out);
	free(out);
	/* no node checked, the one agent reached answered with an error: exit 3 */
	ck_assert_int_eq(harness_knobctl(&h, &out, &err, "sweep -w node02 -f %s/agenterr.xml %s",
	    top, drain), 3);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	ck_assert_msg(strstr(err, "no node could be checked") != NULL, "%s", err);
	free(out);
	free(err);
	ck_assert_int_eq(harness_sh_int("grep -c update %s/scontrol-agenterr.log", top), 0);
}
END_TEST

/* Calls of the stand-in scontrol TOP/NAME matching pattern (grep -c). */
static int
fake_calls(const char *name, const char *pattern)
{
	return (int)harness_sh_int("grep -c -- '%s' %s/%s.log", pattern, top, name);
}

static char pids_dir[PATH_MAX];

/* Put pid in a pids cgroup of its own whose pids.max leaves it room for
 * room more tasks (threads) than it has: with 0 it keeps its threads and
 * cannot start another, as a systemd unit whose TasksMax= is reached.
 * cgroup v1's pids hierarchy, else the cgroup2 root.  Undone by
 * pids_release (also after a failure). */
static void
pids_cap(pid_t pid, int room)
{
	const char *root = access("/sys/fs/cgroup/pids/cgroup.procs", W_OK) == 0 ?
	    "/sys/fs/cgroup/pids" : "/sys/fs/cgroup";

	snprintf(pids_dir, sizeof(pids_dir), "%s/knob-sweepnet.%ld", root, (long)getpid());
	ck_assert_msg(harness_sh("mkdir -p %s && echo %ld > %s/cgroup.procs && "
	    "echo $(( $(cat %s/pids.current) + %d )) > %s/pids.max", pids_dir, (long)pid, pids_dir,
	    pids_dir, room, pids_dir) == 0, "no pids cgroup at %s", pids_dir);
}

/* Move what pids_cap capped back to the parent group; remove the group. */
static void
pids_release(void)
{
	if (pids_dir[0] == '\0')
		return;
	harness_sh("for p in $(cat %s/cgroup.procs); do echo $p > %s/../cgroup.procs; done; "
	    "rmdir %s", pids_dir, pids_dir, pids_dir);
	pids_dir[0] = '\0';
}

/* An agent that cannot start the worker of a health request answers it
 * with an Error ("cannot start a worker", agent/health.c), another Error
 * than the too-large request's.  Real: node02's knobd in a pids cgroup it
 * cannot grow in (pids_cap, room 0) (systemd's TasksMax= reached does that to knobd.service).
 * As for every Error: "agent fail", exit 1, never drained (the stand-in
 * scontrol is never asked to), and node02 alone exit 3. */
START_TEST(test_agent_no_worker_not_drained)
{
	char drain[PATH_MAX + 32], *out = NULL, *err = NULL;
	const char *want = "node02: agent fail (answered with an error, not a health result: "
	    "cannot start a worker; knob's side";

	precheck();
	agents_up(2);
	fake_scontrol("scontrol-noworker", "node02", drain, sizeof(drain));
	write_agenterr_xml(0);
	sweep_expect("node[01-02]", "agenterr.xml", 0, drain, "2 ok (node[01-02])");
	pids_cap(h.node[1].pid, 0);
	sweep_expect("node[01-02]", "agenterr.xml", 1, drain, want);
	ck_assert_int_eq(harness_knobctl(&h, &out, &err, "sweep -w node02 -f %s/agenterr.xml %s",
	    top, drain), 3);
	ck_assert_msg(strstr(out, want) && strstr(err, "no node could be checked"), "%s%s", out,
	    err);
	free(out);
	free(err);
	ck_assert_int_eq(fake_calls("scontrol-noworker", "update"), 0);
	pids_release();
	sweep_expect("node02", "agenterr.xml", 0, drain, "1 ok (node02)");
}
END_TEST

/* lost.xml: every node runs knobd; node02 also checks the FUSE mount that
 * never answers, with a 30 s deadline: its agent holds a health request
 * that long before it answers.  Drained after 1 failing sweep. */
static void
write_lost_xml(void)
{
	write_file("lost.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <process name=\"knobd\"/>\n  </defaults>\n  <group nodes=\"node02\">\n"
	    "    <mount path=\"%s\" timeout=\"30s\"/>\n  </group>\n  <drain after=\"1\" "
	    "resume=\"1\"/>\n</sweep>\n", hangdir);
}

/* A sweep of nodes with lost.xml (extra arguments args) during which
 * node02's knobd is killed (SIGKILL) after it took the health request and
 * before it answered: its log names the request and its mount probe is
 * stuck in the FUSE mount, so the answer is 30 s away.  The probe is killed
 * too and the agent started again.  The exit status; the output in *out. */
static int
sweep_agent_killed(const char *nodes, const char *args, char **out)
{
	uint64_t end = now_mono_ns() + 20000000000ull;
	char path[PATH_MAX];
	pid_t bg, probe;
	int st;

	ck_assert_int_eq(harness_agent_start(&h, 1), 0);	/* a fresh log */
	snprintf(path, sizeof(path), "%s/lost.out", top);
	bg = harness_knobctl_bg(&h, path, NULL, "sweep -w %s -f %s/lost.xml %s", nodes, top, args);
	ck_assert_int_gt(bg, 0);
	ck_assert_int_eq(harness_wait_log(&h, 1, "health request", 20), 0);
	while (count_children(h.node[1].pid) < 1 && now_mono_ns() < end)
		usleep(20000);
	probe = (pid_t)harness_sh_int("pgrep -o -P %ld", (long)h.node[1].pid);
	ck_assert_int_gt(probe, 0);
	harness_agent_stop(&h, 1, SIGKILL);
	kill(probe, SIGKILL);
	ck_assert_int_eq(waitpid(bg, &st, 0), bg);
	ck_assert_int_eq(read_file_bounded(path, 1 << 20, out, NULL), 0);
	fprintf(stderr, "sweep -w %s, node02's agent killed mid-request:\n%s", nodes, *out);
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* An agent killed while it runs the checks (the connection closed before
 * any reply) never checked its node: knob's side, like an Error reply.
 * node02 is named with the cause ("agent fail (connection lost
 * mid-request ..."), exit 1, never drained with <drain after="1"> (the
 * stand-in scontrol is never asked to), history not counted; node02 alone:
 * exit 3.  Before, it was "reach fail", the node's own, and drained. */
START_TEST(test_agent_lost_not_drained)
{
	char drain[PATH_MAX + 32], *out = NULL;
	const char *want = "node02: agent fail (connection lost mid-request, no health result: ";

	precheck();
	agents_up(1);
	fake_scontrol("scontrol-lost", "node02", drain, sizeof(drain));
	write_lost_xml();
	ck_assert_int_eq(sweep_agent_killed("node[01-02]", drain, &out), 1);
	ck_assert_msg(strstr(out, want) && strstr(out, "knob's side, not counted toward a drain)") &&
	    strstr(out, "1 ok (node01), 1 fail (node02)"), "%s", out);
	free(out);
	ck_assert_int_eq(sweep_agent_killed("node02", drain, &out), 3);
	ck_assert_msg(strstr(out, want) && strstr(out, "no node could be checked"), "%s", out);
	free(out);
	ck_assert_int_eq(fake_calls("scontrol-lost", "update"), 0);
	ck_assert_int_eq(ctl(&out, "sweep history node02"), 0);
	ck_assert_msg(strstr(out, "agent fail (connection lost mid-request") &&
	    strstr(out, "=> not counted: knob's side"), "%s", out);
	free(out);
}
END_TEST

/* reasons.xml: every node runs knobd; with bad, node01 also needs a process
 * no node runs and node02 a block device no node has: each fails its own
 * check.  Drained after 1 failing sweep. */
static void
write_reasons_xml(int bad)
{
	write_file("reasons.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <process name=\"knobd\"/>\n  </defaults>\n%s  <drain after=\"1\" resume=\"1\"/>\n"
	    "</sweep>\n", bad ? "  <group nodes=\"node01\">\n    <process name=\"knob-no-daemon\"/>\n"
	    "  </group>\n  <group nodes=\"node02\">\n    <blockdev name=\"knobnosuch0\"/>\n"
	    "  </group>\n" : "");
}

/* Each drained node's Slurm reason names its own failing checks: node01
 * (a process missing) and node02 (a block device missing), drained in the
 * same sweep, get one scontrol call each, "knob: service fail" and "knob:
 * blockdev fail", as the stand-in scontrol recorded them.  Before, one call
 * drained both with "knob: service fail, blockdev fail". */
START_TEST(test_drain_reason_per_node)
{
	char drain[PATH_MAX + 32], *out = NULL;

	precheck();
	agents_up(2);
	fake_scontrol("scontrol-reasons", "node01 node02", drain, sizeof(drain));
	/* a passing sweep first: the counts (and drains by knob) of earlier tests go */
	write_reasons_xml(0);
	sweep_expect("node[01-02]", "reasons.xml", 0, drain, "2 ok (node[01-02])");
	write_reasons_xml(1);
	sweep_expect("node[01-02]", "reasons.xml", 1, drain, "drained node02: knob: blockdev fail\n");
	ck_assert_int_eq(fake_calls("scontrol-reasons",
	    "^update NodeName=node01 State=DRAIN Reason=knob: service fail$"), 1);
	ck_assert_int_eq(fake_calls("scontrol-reasons",
	    "^update NodeName=node02 State=DRAIN Reason=knob: blockdev fail$"), 1);
	ck_assert_int_eq(fake_calls("scontrol-reasons", "update"), 2);
	ck_assert_int_eq(ctl(&out, "sweep history node02"), 0);
	ck_assert_msg(strstr(out, "=> drained: knob: blockdev fail\n"), "%s", out);
	free(out);
}
END_TEST

/* A profile key the node cannot check (a device it does not have) makes the
 * drift check warn, as knobctl verify reports it (unsupported, exit 1): it
 * is named, never "ok", and a warning does not drain the node.  A key that
 * drifted still fails, and both are named.  The profile: the loop device's
 * read_ahead_kb and the same key on a device no node has.  Before, the
 * missing device was one of "1 of 2 keys drifted" and the drift check
 * failed: with --drain, node01 was drained for a device it never had. */
START_TEST(test_drift_unchecked_key)
{
	char drain[PATH_MAX + 32], path[256], want[512], *out = NULL;

	precheck();
	write_file("unsup.xml", "<?xml version=\"1.0\"?>\n<profile name=\"unsup\">\n"
	    "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"512\"/>\n"
	    "  <blockdev device=\"knobnosuch0\" attr=\"read_ahead_kb\" value=\"512\"/>\n"
	    "</profile>\n", loopdev);
	write_file("unsup-sweep.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <profile name=\"%s/unsup.xml\"/>\n  </defaults>\n"
	    "  <drain after=\"1\" resume=\"1\"/>\n</sweep>\n", top);
	ck_assert_int_eq(ctl(&out, "apply %s/unsup.xml -w node01", top), 1);	/* 1 unsupported */
	free(out);
	fake_scontrol("scontrol-unsup", "node01", drain, sizeof(drain));
	snprintf(want, sizeof(want), "node01: drift unsup warn (1 of 2 keys match, 1 could not be "
	    "checked on this node: blockdev knobnosuch0 read_ahead_kb: nothing on this node "
	    "matches)");
	sweep_expect("node01", "unsup-sweep.xml", 1, drain, "sweep of 1 node in ");
	ck_assert_int_eq(harness_sh_int("grep -c update %s/scontrol-unsup.log", top), 0);
	sweep_expect("node01", "unsup-sweep.xml", 1, drain, want);
	sweep_expect("node01", "unsup-sweep.xml", 1, "", "1 warn (node01)");
	/* drift too: fail, both named */
	snprintf(path, sizeof(path), "/sys/block/%s/queue/read_ahead_kb", loopdev);
	ck_assert_int_eq(write_small_file(path, "136"), 0);
	snprintf(want, sizeof(want), "node01: drift unsup fail (1 of 2 keys drifted: blockdev %s "
	    "read_ahead_kb is 136, wants 512; 1 could not be checked on this node: blockdev "
	    "knobnosuch0 read_ahead_kb: nothing on this node matches)", loopdev);
	sweep_expect("node01", "unsup-sweep.xml", 1, "", want);
	ck_assert_int_eq(ctl(&out, "rollback -w node01 --force"), 0);
	free(out);
}
END_TEST

/* The shipped units pass systemd-analyze verify, which also looks up each
 * Documentation= man page: knob-sweep(8) and knobctl(1), from a man
 * directory holding the pages the package installs (before, the service
 * named no documentation: its page did not exist). */
START_TEST(test_units_verify)
{
	char src[PATH_MAX + 64];

	precheck();
	snprintf(src, sizeof(src), "%s/..", h.bin);
	ck_assert_int_eq(harness_sh("mkdir -p %s/man/man1 %s/man/man8 && cp %s/knobctl.1 %s/man/man1/ && "
	    "cp %s/doc/knob-sweep.8 %s/man/man8/", top, top, h.bin, top, src, top), 0);
	ck_assert_int_eq(harness_sh("sed 's,@BINDIR@,%s,g' %s/sweep/knob-sweep.service > "
	    "%s/knob-sweep.service && cp %s/sweep/knob-sweep.timer %s/ && MANPATH=%s/man "
	    "systemd-analyze verify %s/knob-sweep.service %s/knob-sweep.timer", h.bin, src, top, src,
	    top, top, top, top), 0);
	ck_assert_int_eq(harness_sh("grep -qx 'Documentation=man:knob-sweep(8) man:knobctl(1)' "
	    "%s/knob-sweep.service && grep -qx 'Documentation=man:knob-sweep(8)' %s/knob-sweep.timer",
	    top, top), 0);
	ck_assert_int_eq(harness_sh("grep -q '^Persistent=true' %s/knob-sweep.timer && "
	    "grep -q '^RandomizedDelaySec=' %s/knob-sweep.timer", top, top), 0);
}
END_TEST

/* Threads of node i's agent. */
static long
agent_threads(int i)
{
	return harness_sh_int("ls /proc/%ld/task | wc -l", (long)h.node[i].pid);
}

/* Start knobd --stdio on two pipes, as an SSH exec channel runs it; its
 * stdin's write end in *wr and its stdout's read end in *rd. */
static pid_t
stdio_agent(const char *state, int *wr, int *rd)
{
	int in[2], out[2];

	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	*wr = in[1];
	*rd = out[0];
	return cu_knobd_stdio(h.bin, state, in[0], out[1]);
}

/* What /proc/PID/fd/FD points at ("" when unreadable). */
static const char *
fd_target(pid_t pid, int fd, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%ld/fd/%d", (long)pid, fd);
	n = readlink(link, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* knobd --stdio, as bootstrap and SSH-only nodes run it: a mount probe
 * stuck in the hung FUSE mount must not hold the session's stdin and
 * stdout, or the SSH channel would stay open behind a probe that never
 * dies.  The probe's fds 0-2 are /dev/null.  Before, they were the
 * session's pipes. */
START_TEST(test_stdio_probe_fds)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__HealthRequest hr = KNOB__HEALTH_REQUEST__INIT;
	Knob__MountExpect me = KNOB__MOUNT_EXPECT__INIT, *mp = &me;
	char state[PATH_MAX], tgt[PATH_MAX];
	int wr, rd, st = 0, hung = 0;
	struct conn c;
	pid_t pid, probe;

	precheck();
	snprintf(state, sizeof(state), "%s/stdio-state", top);
	mkdir(state, 0700);
	pid = stdio_agent(state, &wr, &rd);
	me.path = hangdir;
	me.timeout_ms = 500;
	hr.n_mounts = 1;
	hr.mounts = &mp;
	hr.check_timeout_ms = 5000;
	env.id = 1;
	env.body_case = KNOB__ENVELOPE__BODY_HEALTH;
	env.health = &hr;
	ck_assert_int_eq(fcntl(rd, F_SETFL, O_NONBLOCK), 0);
	conn_init(&c, rd, wr, NULL);
	ck_assert_int_eq(conn_send_sync(&c, &env, 5000), 0);
	ck_assert_int_eq(conn_recv_sync(&c, &got, 10000), 1);
	ck_assert_int_eq(got->body_case, KNOB__ENVELOPE__BODY_HEALTH_RESULT);
	for (size_t i = 0; i < got->health_result->n_checks; i++)
		hung |= got->health_result->checks[i]->state == KNOB__HEALTH_STATE__HEALTH_HUNG;
	knob__envelope__free_unpacked(got, NULL);
	ck_assert_msg(hung, "the probe of %s did not hang", hangdir);
	probe = (pid_t)harness_sh_int("pgrep -o -P %ld", (long)pid);
	ck_assert_int_gt(probe, 0);
	for (int fd = 0; fd <= 2; fd++)
		ck_assert_msg(strcmp(fd_target(probe, fd, tgt, sizeof(tgt)), "/dev/null") == 0,
		    "the stuck probe's fd %d is %s, not /dev/null", fd, tgt);
	conn_reset(&c);
	close(wr);	/* the session ends: the agent exits 0 */
	close(rd);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "knobd --stdio status %#x", st);
}
END_TEST

/* A probe in a directory that never answers (the FUSE mount): the first
 * sweep's probe times out and its thread stays stuck in the kernel; the
 * next sweep reports that probe hung instead of starting (and leaving
 * behind) another thread.  Last in the case: node02's stuck probe lasts
 * until fuse_hang exits. */
START_TEST(test_probe_hung)
{
	char *out = NULL, line[PATH_MAX + 64];
	long threads;

	precheck();
	write_file("phang.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <timeout check=\"1s\"/>\n    <probe dir=\"%s\"/>\n  </defaults>\n</sweep>\n",
	    hangdir);
	ck_assert_int_eq(ctl(&out, "sweep -w node02 -f %s/phang.xml -v", top), 1);
	snprintf(line, sizeof(line), "node02: probe %s timeout", hangdir);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	free(out);
	threads = agent_threads(1);
	ck_assert_int_eq(ctl(&out, "sweep -w node02 -f %s/phang.xml -v", top), 1);
	snprintf(line, sizeof(line), "node02: probe %s hung (the probe started ", hangdir);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	free(out);
	ck_assert_int_le(agent_threads(1), threads);
}
END_TEST

/* notslurm.xml: every node runs knobd; with bad, the nodes of bad also
 * need a process no node runs.  Drained after 1 failing sweep. */
static void
write_notslurm_xml(const char *bad)
{
	write_file("notslurm.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <process name=\"knobd\"/>\n  </defaults>\n  <group nodes=\"%s\">\n"
	    "    <process name=\"%s\"/>\n  </group>\n  <drain after=\"1\" resume=\"1\"/>\n"
	    "</sweep>\n", bad ? bad : "node01", bad ? "knob-no-daemon" : "knobd");
}

/* A stand-in scontrol, as real scontrol answers "-o show node LIST": a
 * record for each of node01-03 and "Node X not found" on stderr for any
 * other name, then exit 1 (the real slurmctld is test_drain_hysteresis's). */
#define SCONTROL_KNOWS_3 "[ \"$1\" = -o ] || exit 0\nrc=0\n" \
	"for n in $(echo \"$4\" | tr , ' '); do case $n in node0[1-3]) " \
	"echo \"NodeName=$n Arch=x86_64 State=IDLE\";; *) echo \"Node $n not found\" >&2; rc=1;; " \
	"esac; done\nexit $rc\n"

/* A failing node Slurm does not know (node04, an NFS server in @all) is
 * "not a Slurm node": alone due for a drain, scontrol shows nothing and
 * exits 1 with "Node node04 not found", which is no failure of the sweep
 * (exit 1, as for any failing node; nothing drained); with node02 due too,
 * node02 is drained and node04 reported.  A real scontrol failure (it
 * cannot reach slurmctld) is still the sweep's own: exit 3.  Before, node04
 * alone made every --drain sweep exit 3, "nothing drained or resumed". */
START_TEST(test_not_slurm_node)
{
	char drain[PATH_MAX + 32], *out = NULL, *err = NULL;

	precheck();
	agents_up(4);
	fake_scontrol_sh("scontrol-knows3", SCONTROL_KNOWS_3, drain, sizeof(drain));
	write_notslurm_xml(NULL);	/* a passing sweep first: counts and drains go */
	sweep_expect("node[02,04]", "notslurm.xml", 0, drain, "2 ok (node[02,04])");
	write_notslurm_xml("node[02,04]");
	ck_assert_int_eq(harness_knobctl(&h, &out, &err, "sweep -w node04 -f %s/notslurm.xml %s",
	    top, drain), 1);
	ck_assert_msg(strstr(out, "node04: service knob-no-daemon fail") && !strstr(err, "failed"),
	    "%s%s", out, err);
	free(out);
	free(err);
	ck_assert_int_eq(fake_calls("scontrol-knows3", "^-o show node node04$"), 1);
	ck_assert_int_eq(fake_calls("scontrol-knows3", "update"), 0);
	ck_assert_int_eq(ctl(&out, "sweep history node04"), 0);
	ck_assert_msg(strstr(out, "=> not a Slurm node\n"), "%s", out);
	free(out);
	sweep_expect("node[02,04]", "notslurm.xml", 1, drain, "drained node02: knob: service fail\n");
	ck_assert_int_eq(fake_calls("scontrol-knows3",
	    "^update NodeName=node02 State=DRAIN Reason=knob: service fail$"), 1);
	ck_assert_int_eq(fake_calls("scontrol-knows3", "update"), 1);
	/* slurmctld out of reach: the sweep's own failure */
	write_notslurm_xml(NULL);
	sweep_expect("node[02,04]", "notslurm.xml", 0, drain, "2 ok (node[02,04])");	/* reset */
	write_notslurm_xml("node[02,04]");
	fake_scontrol_sh("scontrol-down", "echo 'slurm_load_node error: Unable to contact slurm "
	    "controller (connect failure)' >&2\nexit 1\n", drain, sizeof(drain));
	ck_assert_int_eq(harness_knobctl(&h, &out, &err, "sweep -w node[02,04] -f %s/notslurm.xml "
	    "%s", top, drain), 3);
	ck_assert_msg(strstr(err, "Unable to contact slurm controller") &&
	    strstr(err, "failed; nothing drained or resumed"), "%s", err);
	free(out);
	free(err);
	ck_assert_int_eq(fake_calls("scontrol-down", "update"), 0);
}
END_TEST

/* An agent that starts the worker of a health request but cannot start the
 * thread of one of its checks never checked its node either: it answers
 * the whole request with an Error ("cannot start a worker for the hw
 * check"), knob's side: "agent fail", exit 1, never drained (the stand-in
 * scontrol is never asked to), history not counted.  Real: node01's fresh
 * knobd in a pids cgroup with room for one more thread (pids_cap, room 1):
 * the sweep worker starts, the first check does not (as the reviewer's
 * prlimit --nproc did).  Before, that check was the node's "hw fail
 * (cannot start a worker)" and node01 was drained. */
START_TEST(test_agent_no_check_thread_not_drained)
{
	char drain[PATH_MAX + 32], *out = NULL;
	const char *want = "node01: agent fail (answered with an error, not a health result: "
	    "cannot start a worker for the hw check; knob's side";

	precheck();
	agents_up(3);
	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);	/* idle: no sweep's thread left */
	fake_scontrol("scontrol-nocheck", "node01 node03", drain, sizeof(drain));
	write_notslurm_xml(NULL);
	pids_cap(h.node[0].pid, 1);
	sweep_expect("node[01,03]", "notslurm.xml", 1, drain, want);
	sweep_expect("node[01,03]", "notslurm.xml", 1, drain, "1 ok (node03), 1 fail (node01)");
	ck_assert_int_eq(fake_calls("scontrol-nocheck", "update"), 0);
	ck_assert_int_eq(ctl(&out, "sweep history node01"), 0);
	ck_assert_msg(strstr(out, "cannot start a worker for the hw check") &&
	    strstr(out, "=> not counted: knob's side") && !strstr(out, "hw fail"), "%s", out);
	free(out);
	pids_release();
	sweep_expect("node[01,03]", "notslurm.xml", 0, drain, "2 ok (node[01,03])");
}
END_TEST

static char frz_dir[128];

/* A small ext4 file system of its own (a loop device, mounted with -o loop)
 * on frz_dir, the probe directory of test_probe_overlap: fsfreeze stops
 * every write to it until it is thawed, as a real file system does while a
 * snapshot is taken. */
static void
frz_mount(void)
{
	snprintf(frz_dir, sizeof(frz_dir), "%s/frz", top);
	ck_assert_int_eq(harness_sh("mkdir -p %s && truncate -s 256M %s/frz.img && "
	    "mkfs.ext4 -q -F -N 150000 %s/frz.img && mount -o loop %s/frz.img %s", frz_dir, top, top, top,
	    frz_dir), 0);
}

/* Thaw and unmount frz_dir (also after a failure: a frozen file system
 * would hang the teardown's rm -rf). */
static void
frz_release(void)
{
	if (frz_dir[0] == '\0')
		return;
	harness_sh("fsfreeze -u %s 2>/dev/null; umount %s", frz_dir, frz_dir);
	frz_dir[0] = '\0';
}

/* Threads of node i's agent in uninterruptible sleep (D): waiting for the
 * frozen file system. */
static long
agent_threads_blocked(int i)
{
	return harness_sh_int("grep -l '^State:.D' /proc/%ld/task/*/status 2>/dev/null | wc -l",
	    (long)h.node[i].pid);
}

/* Two sweeps overlapping with a probe: the first sweep's probe of node03
 * waits in a frozen file system (fsfreeze: its writes block until the test
 * thaws it, no sleep in between); a second sweep with --drain meanwhile
 * finds that probe running within its deadline and skips its own:
 * "skipped (another sweep's probe is running ...)", exit 0, not hung, not
 * drained (the stand-in scontrol is never asked to).  Thawed, the first
 * sweep's probe finishes ok.  Before, the second sweep said "probe hung"
 * and drained a healthy node.  (test_probe_hung: past its deadline a
 * running probe is still hung.) */
START_TEST(test_probe_overlap)
{
	char drain[PATH_MAX + 32], path[PATH_MAX], want[512], *out = NULL;
	uint64_t end;
	pid_t bg;
	int st;

	precheck();
	agents_up(3);
	frz_mount();
	ck_assert_int_eq(harness_agent_start(&h, 2), 0);	/* its mount namespace gets frz */
	write_file("overlap.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <process name=\"knobd\"/>\n    <timeout check=\"20s\"/>\n"
	    "    <probe dir=\"%s\"/>\n  </defaults>\n  <drain after=\"1\" resume=\"1\"/>\n"
	    "</sweep>\n", frz_dir);
	fake_scontrol("scontrol-overlap", "node03", drain, sizeof(drain));
	ck_assert_int_eq(harness_sh("fsfreeze -f %s", frz_dir), 0);
	snprintf(path, sizeof(path), "%s/overlap.out", top);
	bg = harness_knobctl_bg(&h, path, NULL, "sweep -v -w node03 -f %s/overlap.xml", top);
	ck_assert_int_gt(bg, 0);
	end = now_mono_ns() + 20000000000ull;
	while (agent_threads_blocked(2) < 1 && now_mono_ns() < end)
		usleep(20000);
	ck_assert_msg(agent_threads_blocked(2) >= 1, "node03's probe did not wait on %s", frz_dir);
	snprintf(want, sizeof(want), "node03: probe %s skipped (another sweep's probe is running "
	    "(started ", frz_dir);
	sweep_expect("node03", "overlap.xml", 0, drain, want);
	ck_assert_int_eq(fake_calls("scontrol-overlap", "update"), 0);
	ck_assert_int_eq(harness_sh("fsfreeze -u %s", frz_dir), 0);
	ck_assert_int_eq(waitpid(bg, &st, 0), bg);
	ck_assert_int_eq(read_file_bounded(path, 1 << 20, &out, NULL), 0);
	fprintf(stderr, "the first sweep, thawed:\n%s", out);
	snprintf(want, sizeof(want), "node03: probe %s ok (seq-write ", frz_dir);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, want), "%s", out);
	free(out);
	frz_release();
	ck_assert_int_eq(harness_agent_start(&h, 2), 0);	/* drops its copy of the mount */
}
END_TEST

#define FLOOD 32		/* health requests sent at once */

/* Send a HealthRequest id on c: one mount, the hung FUSE mount, with a
 * 1 s deadline. */
static void
flood_send(struct conn *c, uint64_t id)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__HealthRequest hr = KNOB__HEALTH_REQUEST__INIT;
	Knob__MountExpect me = KNOB__MOUNT_EXPECT__INIT, *mp = &me;

	me.path = hangdir;
	me.timeout_ms = 1000;
	hr.n_mounts = 1;
	hr.mounts = &mp;
	env.id = id;
	env.body_case = KNOB__ENVELOPE__BODY_HEALTH;
	env.health = &hr;
	ck_assert_int_eq(conn_send_sync(c, &env, 5000), 0);
}

/* The answer's kind: 1 a health result, 0 busy (asserted: an EAGAIN
 * Error saying so); *id its request. */
static int
flood_recv(struct conn *c, uint64_t *id)
{
	Knob__Envelope *got = NULL;
	int ok;

	ck_assert_int_eq(conn_recv_sync(c, &got, 10000), 1);
	*id = got->id;
	ok = got->body_case == KNOB__ENVELOPE__BODY_HEALTH_RESULT;
	if (!ok)
		ck_assert_msg(got->body_case == KNOB__ENVELOPE__BODY_ERROR &&
		    got->error->kind == KNOB__ERROR_KIND__ERROR_KIND_BUSY &&
		    strstr(got->error->message, "agent busy: 8 health sweeps running"),
		    "request %llu: not a health result nor busy: %s",
		    (unsigned long long)got->id, got->body_case == KNOB__ENVELOPE__BODY_ERROR ?
		    got->error->message : envelope_body_name(got));
	knob__envelope__free_unpacked(got, NULL);
	return ok;
}

/* FLOOD health requests sent at once on one connection (knobd --stdio),
 * each probing the hung FUSE mount with a 1 s deadline: no probe of it is
 * known stuck yet, so each admitted sweep forks its probe and waits it out.
 * At most HEALTH_MAX_SWEEPS (8) are served with a health result, every
 * other request is answered busy at once, every request is answered once,
 * at most 8 probe children were started, and the agent serves on: a ping,
 * then a sweep once the running ones are over.  Before, every request
 * started a sweep: 32 sweeps with their threads and 32 probe children
 * stuck in FUSE. */
START_TEST(test_health_flood_bounded)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__Ping ping = KNOB__PING__INIT;
	char state[PATH_MAX], seen[FLOOD + 1] = { 0 };
	int wr, rd, st = 0, ok = 0, busy = 0, again = 1;
	uint64_t id, end;
	struct conn c;
	pid_t pid;

	precheck();
	snprintf(state, sizeof(state), "%s/flood-state", top);
	mkdir(state, 0700);
	pid = stdio_agent(state, &wr, &rd);
	ck_assert_int_eq(fcntl(rd, F_SETFL, O_NONBLOCK), 0);
	conn_init(&c, rd, wr, NULL);
	for (uint64_t i = 1; i <= FLOOD; i++)
		flood_send(&c, i);
	for (int i = 0; i < FLOOD; i++) {
		int r = flood_recv(&c, &id);

		ck_assert_msg(id >= 1 && id <= FLOOD && !seen[id], "answer to %llu",
		    (unsigned long long)id);
		seen[id] = 1;
		ok += r;
		busy += !r;
	}
	fprintf(stderr, "%d health requests at once: %d served, %d busy\n", FLOOD, ok, busy);
	ck_assert_msg(ok >= 1 && ok <= HEALTH_MAX_SWEEPS && busy == FLOOD - ok, "%d served", ok);
	ck_assert_int_le(harness_sh_int("pgrep -c -P %ld", (long)pid), HEALTH_MAX_SWEEPS);
	env.id = FLOOD + 1;
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	ck_assert_int_eq(conn_send_sync(&c, &env, 5000), 0);
	ck_assert_int_eq(conn_recv_sync(&c, &got, 10000), 1);
	ck_assert_int_eq(got->body_case, KNOB__ENVELOPE__BODY_PONG);
	knob__envelope__free_unpacked(got, NULL);
	/* the sweeps leave the count once their threads end: busy until then */
	end = now_mono_ns() + 10000000000ull;
	while (again && now_mono_ns() < end) {
		flood_send(&c, FLOOD + 2);
		if ((again = !flood_recv(&c, &id)))
			usleep(20000);	/* poll interval */
	}
	ck_assert_msg(!again, "still busy 10 s after the flood");
	conn_reset(&c);
	close(wr);
	close(rd);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "knobd --stdio status %#x", st);
}
END_TEST

/* A second never-answering FUSE mount, for test_busy_sweep_retried and
 * test_hung_mount_replaced: its daemon is killed to end what waits on it. */
static char busydir[sizeof(top) + 8];
static pid_t busy_fuse;

/* Kill the second FUSE daemon (what waits on its mount fails at once,
 * ENOTCONN) and unmount it; also after a failed test. */
static void
busy_fuse_end(void)
{
	if (busy_fuse > 0) {
		kill(busy_fuse, SIGKILL);
		waitpid(busy_fuse, NULL, 0);
		busy_fuse = 0;
	}
	if (busydir[0] && is_mounted(busydir))
		harness_sh("fusermount3 -u -z %s || umount -l %s", busydir, busydir);
}

/* Does file path (read whole) contain s? */
static int
file_has(const char *path, const char *s)
{
	char *buf = NULL;
	int r;

	if (read_file_bounded(path, 1u << 20, &buf, NULL) < 0)
		return 0;
	r = strstr(buf, s) != NULL;
	free(buf);
	return r;
}

/* Another controller that holds node04's sweeps (a child in the
 * controller's namespace, with its certificate): HEALTH_MAX_SWEEPS health
 * requests on one TLS connection, each checking mount dir with a 30 s
 * deadline, then their answers read.  Exits 0 when every one was a
 * health result. */
static void
hold_sweeps(const char *dir)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__HealthRequest hr = KNOB__HEALTH_REQUEST__INIT;
	Knob__MountExpect me = KNOB__MOUNT_EXPECT__INIT, *mp = &me;
	SSL_CTX *ctx;
	SSL *ssl;
	struct conn c;
	int ok = 0;

	if (harness_enter_ns(h.ctl_ns) < 0 || (ctx = harness_tls_ctx(&h, "controller")) == NULL ||
	    (ssl = harness_tls_dial(&h, ctx, 3)) == NULL)
		_exit(2);
	conn_init(&c, SSL_get_fd(ssl), SSL_get_fd(ssl), ssl);
	me.path = (char *)(uintptr_t)dir;
	me.timeout_ms = 30000;
	hr.n_mounts = 1;
	hr.mounts = &mp;
	env.body_case = KNOB__ENVELOPE__BODY_HEALTH;
	env.health = &hr;
	for (env.id = 1; env.id <= HEALTH_MAX_SWEEPS; env.id++)
		if (conn_send_sync(&c, &env, 5000) < 0)
			_exit(3);
	for (int i = 0; i < HEALTH_MAX_SWEEPS && conn_recv_sync(&c, &got, 40000) == 1; i++) {
		ok += got->body_case == KNOB__ENVELOPE__BODY_HEALTH_RESULT;
		knob__envelope__free_unpacked(got, NULL);
	}
	_exit(ok == HEALTH_MAX_SWEEPS ? 0 : 4);
}

/* Another controller holds node04's HEALTH_MAX_SWEEPS sweeps: each checks
 * a second hung FUSE mount (mounted, then node04's agent started again)
 * with a 30 s deadline, so each forks a probe child and waits.  A sweep of node04 meanwhile is answered "agent busy";
 * knobctl says it sends it again in 100 ms, and keeps trying.  Then the
 * FUSE daemon is killed, the held sweeps end, and a retry is served: the
 * sweep exits 0 with node04 ok.  Before, it failed at once with the
 * agent's "agent busy: 8 health sweeps running; try again" (exit 3). */
START_TEST(test_busy_sweep_retried)
{
	char outp[PATH_MAX], errp[PATH_MAX];
	const char *busy = "node04: node04: agent busy: 8 health sweeps running; try again; "
	    "sending again in 100 ms (1 of 5)";
	uint64_t end;
	int base, st;
	pid_t pid, sw;

	precheck();
	agents_up(4);
	snprintf(busydir, sizeof(busydir), "%s/hang2", top);
	mkdir(busydir, 0755);
	ck_assert_int_eq(start_fuse_at(busydir, &busy_fuse), 0);
	/* the agents' mount namespaces see only what was mounted before they
	 * started (private propagation): node04's agent starts again */
	harness_agent_stop(&h, 3, SIGTERM);
	ck_assert_int_eq(harness_agent_start(&h, 3), 0);
	write_file("pfree.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <process name=\"knobd\"/>\n  </defaults>\n</sweep>\n");
	base = count_children(h.node[3].pid);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0)
		hold_sweeps(busydir);
	end = now_mono_ns() + 10000000000ull;
	while (count_children(h.node[3].pid) < base + HEALTH_MAX_SWEEPS && now_mono_ns() < end)
		usleep(20000);	/* poll interval */
	ck_assert_int_ge(count_children(h.node[3].pid), base + HEALTH_MAX_SWEEPS);
	snprintf(outp, sizeof(outp), "%s/busy.out", top);
	snprintf(errp, sizeof(errp), "%s/busy.err", top);
	ck_assert_int_gt(sw = harness_knobctl_bg(&h, outp, errp, "--log-level debug sweep -w node04 "
	    "-f %s/pfree.xml", top), 0);
	end = now_mono_ns() + 20000000000ull;
	while (!file_has(errp, busy) && now_mono_ns() < end)
		usleep(20000);	/* poll interval */
	busy_fuse_end();
	ck_assert_int_eq(waitpid(sw, &st, 0), sw);
	harness_sh("cat %s %s >&2", outp, errp);
	ck_assert_msg(file_has(errp, busy), "no retry logged");
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sweep status %#x", st);
	ck_assert_msg(strstr(cu_readf("%s", outp), "1 ok") != NULL, "%s", cu_readf("%s", outp));
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "holder status %#x", st);
}
END_TEST

/* An admin's fix of a hung mount: the dead one lazily unmounted and a new
 * one mounted at the same path (in node01's agent's mount namespace: the
 * second FUSE mount, then a tmpfs).  The next sweep probes the new mount:
 * ok, exit 0.  Before, the probe still stuck on the old mount held the
 * path: "hung (since ...)" on every sweep until knobd restarted or the dead
 * server answered, and --drain kept a repaired node drained. */
START_TEST(test_hung_mount_replaced)
{
	char *out = NULL, line[PATH_MAX + 64];

	precheck();
	agents_up(1);
	snprintf(busydir, sizeof(busydir), "%s/hang2", top);
	mkdir(busydir, 0755);
	ck_assert_int_eq(start_fuse_at(busydir, &busy_fuse), 0);
	harness_agent_stop(&h, 0, SIGTERM);	/* its mount namespace gets the mount */
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	write_file("replaced.xml", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <mount path=\"%s\" timeout=\"1s\"/>\n  </defaults>\n</sweep>\n", busydir);
	ck_assert_int_eq(ctl(&out, "sweep -w node01 -f %s/replaced.xml", top), 1);
	snprintf(line, sizeof(line), "node01: mount %s hung (no answer to statfs in 1.0 s)",
	    busydir);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	free(out);
	ck_assert_int_eq(harness_sh("nsenter -t %ld -m sh -c 'umount -l %s && mount -t tmpfs "
	    "knob-test %s'", (long)h.node[0].pid, busydir, busydir), 0);
	ck_assert_int_eq(ctl(&out, "sweep -w node01 -v -f %s/replaced.xml", top), 0);
	snprintf(line, sizeof(line), "node01: mount %s ok (tmpfs, ", busydir);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	free(out);
	ck_assert_int_eq(harness_sh("nsenter -t %ld -m umount %s", (long)h.node[0].pid, busydir), 0);
}
END_TEST

/* A node knob drained that a person resumed while it still fails is
 * drained again; one a person took over (drained with their own reason)
 * is theirs: knob forgets its drain and never resumes it.  Stand-in
 * scontrol (the real slurmctld is test_drain_hysteresis's): the first shows
 * node02 idle, as after "scontrol update NodeName=node02 State=RESUME",
 * the second drained with a person's reason.  Before, knob called the
 * resumed node "still drained by knob (failing 2)" for as long as it
 * failed, asked Slurm nothing, and left it in service. */
START_TEST(test_drain_resumed_by_hand)
{
	char drain[PATH_MAX + 32], *out = NULL;

	precheck();
	agents_up(2);
	fake_scontrol("scontrol-resumed", "node02", drain, sizeof(drain));
	write_notslurm_xml(NULL);	/* a passing sweep first: counts and drains go */
	sweep_expect("node02", "notslurm.xml", 0, drain, "1 ok (node02)");
	write_notslurm_xml("node02");
	sweep_expect("node02", "notslurm.xml", 1, drain, "drained node02: knob: service fail\n");
	/* a person resumed it; it still fails: drained again */
	sweep_expect("node02", "notslurm.xml", 1, drain, "drained node02: knob: service fail\n");
	ck_assert_int_eq(fake_calls("scontrol-resumed", "^update NodeName=node02 State=DRAIN "
	    "Reason=knob: service fail$"), 2);
	/* a person drains it with their own reason: theirs from now on */
	fake_scontrol_sh("scontrol-taken", "[ \"$1\" = -o ] && echo \"NodeName=node02 "
	    "Arch=x86_64 State=IDLE+DRAIN Reason=RMA, ticket 17 [root@2026-12-07T13:00:00]\"\n"
	    "exit 0\n", drain, sizeof(drain));
	sweep_expect("node02", "notslurm.xml", 1, drain, "1 fail (node02)");
	write_notslurm_xml(NULL);
	sweep_expect("node02", "notslurm.xml", 0, drain, "1 ok (node02)");
	ck_assert_int_eq(fake_calls("scontrol-taken", "update"), 0);
	ck_assert_int_eq(ctl(&out, "sweep history node02"), 0);
	ck_assert_ptr_nonnull(strstr(out, "=> drained by someone else now (IDLE+DRAIN, reason: "
	    "RMA, ticket 17): knob forgets its drain"));
	free(out);
}
END_TEST

/* ------------------------------------------------------------ a slow link */

/* A one-way delay between the controller and some nodes: this kernel has
 * no sch_netem, so a relay in the controller's namespace (LINK_ADDR, port
 * LINK_PORT + the node's index, named the node's address in a cluster file
 * of its own) passes what the controller sends LINK_DELAY_MS late and the
 * node's answers at once, as a congested link or an agent slow to read
 * does.  Stand-in for netem, said plainly; the agents and knobctl are the
 * real ones. */
#define LINK_ADDR "198.18.0.1"
#define LINK_PORT 17421
#define LINK_DELAY_MS 600
#define LINK_NODE 2		/* node03 */
#define LINK_MAX 8		/* connections at once */
#define LINK_CHUNKS 32		/* reads of the controller's queued per connection */

struct lchunk {
	uint64_t due;		/* monotonic: when it may go on */
	size_t len;
	char buf[16384];
};

/* One relayed connection: c the controller's, a the agent's. */
struct llink {
	int c, a, c_eof;
	struct lchunk q[LINK_CHUNKS];
	size_t head, n;
};

static struct harness_child link_child;
static char link_saved_cluster[PATH_MAX];
static unsigned link_nodes;	/* the relayed nodes: bit i for node i */

/* Write all of buf to fd (blocking). 0 or -1. */
static int
link_write(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

static void
link_close(struct llink *k)
{
	close(k->c);
	close(k->a);
	k->c = k->a = -1;
	k->head = k->n = 0;
	k->c_eof = 0;
}

/* A new connection from the controller into a free slot of k, joined to
 * node's agent.  1 when relayed. */
static int
link_accept(int l, int node, struct llink *k)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(7420) };
	int c = accept4(l, NULL, NULL, SOCK_CLOEXEC), a, i;

	for (i = 0; i < LINK_MAX && k[i].c >= 0; i++)
		;
	if (c < 0 || i == LINK_MAX) {
		if (c >= 0)
			close(c);
		return 0;
	}
	a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	inet_pton(AF_INET, h.node[node].addr, &sa.sin_addr);
	if (a < 0 || connect(a, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(c);
		if (a >= 0)
			close(a);
		return 0;
	}
	k[i].c = c;
	k[i].a = a;
	return 1;
}

/* One round of link k: the controller's bytes queued (due LINK_DELAY_MS
 * later), the due ones passed to the agent, the agent's passed back at
 * once. */
static void
link_step(struct llink *k, short crev, short arev)
{
	char buf[16384];
	ssize_t r;

	if (k->c < 0)
		return;
	if ((crev & (POLLIN | POLLHUP | POLLERR)) && !k->c_eof && k->n < LINK_CHUNKS) {
		struct lchunk *q = &k->q[(k->head + k->n) % LINK_CHUNKS];

		if ((r = read(k->c, q->buf, sizeof(q->buf))) <= 0)
			k->c_eof = 1;
		else {
			q->len = (size_t)r;
			q->due = now_mono_ns() + LINK_DELAY_MS * 1000000ull;
			k->n++;
		}
	}
	for (; k->n > 0 && k->q[k->head].due <= now_mono_ns(); k->n--) {
		if (link_write(k->a, k->q[k->head].buf, k->q[k->head].len) < 0) {
			link_close(k);
			return;
		}
		k->head = (k->head + 1) % LINK_CHUNKS;
	}
	if (arev & (POLLIN | POLLHUP | POLLERR)) {
		if ((r = read(k->a, buf, sizeof(buf))) <= 0 ||
		    link_write(k->c, buf, (size_t)r) < 0) {
			link_close(k);
			return;
		}
	}
	if (k->c_eof && k->n == 0)
		link_close(k);
}

/* poll's timeout (ms) until the first queued chunk of k is due; -1 none. */
static int
link_wait_ms(const struct llink *k)
{
	uint64_t now = now_mono_ns(), next = UINT64_MAX;

	for (int i = 0; i < LINK_MAX; i++)
		if (k[i].c >= 0 && k[i].n > 0 && k[i].q[k[i].head].due < next)
			next = k[i].q[k[i].head].due;
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)((next - now) / 1000000) + 1;
}

/* A listening socket on LINK_ADDR:port, -1 on failure. */
static int
link_listen(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	inet_pton(AF_INET, LINK_ADDR, &sa.sin_addr);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l >= 0 && (bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 8) < 0)) {
		close(l);
		return -1;
	}
	return l;
}

/* harness_child: the delayed links of link_nodes until stop; the
 * connections relayed. */
static int
link_serve(int ready, int stop)
{
	struct llink *k = xcalloc(LINK_MAX, sizeof(*k));
	struct pollfd p[1 + HARNESS_MAX + 2 * LINK_MAX] = { { stop, POLLIN, 0 } };
	int node[HARNESS_MAX], nl = 0, served = 0;

	for (int i = 0; i < LINK_MAX; i++)
		k[i].c = k[i].a = -1;
	for (int i = 0; i < h.n; i++)
		if (link_nodes & (1u << i)) {
			node[nl] = i;
			p[1 + nl++] = (struct pollfd){ link_listen(LINK_PORT + i), POLLIN, 0 };
			if (p[nl].fd < 0)
				_exit(1);
		}
	if (write(ready, "r", 1) != 1)
		_exit(1);
	for (;;) {
		for (int i = 0; i < LINK_MAX; i++) {
			p[1 + nl + 2 * i] = (struct pollfd){ k[i].c, POLLIN, 0 };
			p[2 + nl + 2 * i] = (struct pollfd){ k[i].a, POLLIN, 0 };
		}
		if (poll(p, (nfds_t)(1 + nl + 2 * LINK_MAX), link_wait_ms(k)) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		for (int i = 0; i < nl; i++)
			if (p[1 + i].revents & POLLIN)
				served += link_accept(p[1 + i].fd, node[i], k);
		for (int i = 0; i < LINK_MAX; i++)
			link_step(&k[i], p[1 + nl + 2 * i].revents, p[2 + nl + 2 * i].revents);
	}
	return served;
}

/* Start the delayed links of the nodes in mask (bit i: node i) and point
 * knobctl at them: a cluster file beside the harness's, each such node at
 * LINK_ADDR:LINK_PORT+i (its certificate still its own). */
static void
link_begin(unsigned mask)
{
	char path[PATH_MAX], *sed = NULL;

	snprintf(path, sizeof(path), "%s/cluster-slowlink.xml", h.tmp);
	for (int i = 0; i < h.n; i++)
		if (mask & (1u << i))
			str_appendf(&sed, " -e 's|<node name=\"%s\" addr=\"[^\"]*\"/>|<node "
			    "name=\"%s\" addr=\"%s\" port=\"%d\"/>|'", h.node[i].name,
			    h.node[i].name, LINK_ADDR, LINK_PORT + i);
	ck_assert_int_eq(harness_sh("sed%s %s > %s && [ $(grep -c 'addr=\"%s\"' %s) = %d ]", sed,
	    h.cluster, path, LINK_ADDR, path, __builtin_popcount(mask)), 0);
	free(sed);
	link_nodes = mask;
	harness_child_start(&link_child, h.ctl_ns, link_serve);
	/* an agent started meanwhile must not hold the stop pipe open */
	fcntl(link_child.stop, F_SETFD, FD_CLOEXEC);
	fcntl(link_child.res, F_SETFD, FD_CLOEXEC);
	snprintf(link_saved_cluster, sizeof(link_saved_cluster), "%s", h.cluster);
	snprintf(h.cluster, sizeof(h.cluster), "%s", path);
}

/* Stop the delayed link (after a failed test too); the connections it
 * relayed, -1 when it was not running. */
static int
link_end(void)
{
	if (link_saved_cluster[0] == '\0')
		return -1;
	snprintf(h.cluster, sizeof(h.cluster), "%s", link_saved_cluster);
	link_saved_cluster[0] = '\0';
	return harness_child_end(&link_child);
}

/* The number after key in node's clock finding of out ("node03: clock
 * ...", key "(offset " or "round trip took "); NAN when there is none. */
static double
clock_num(const char *out, const char *node, const char *key)
{
	char pat[64];
	const char *l, *k, *nl;
	double v;

	snprintf(pat, sizeof(pat), "%s: clock ", node);
	if ((l = strstr(out, pat)) == NULL || (k = strstr(l, key)) == NULL)
		return NAN;
	if ((nl = strchr(l, '\n')) != NULL && k > nl)
		return NAN;
	return sscanf(k + strlen(key), "%lf", &v) == 1 ? v : NAN;
}

/* TOP/name: a sweep file with <clock max-offset="max"/> and tail. */
static void
write_clock_xml(const char *name, const char *max, const char *tail)
{
	write_file(name, "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <clock max-offset=\"%s\"/>\n  </defaults>\n%s</sweep>\n", max, tail);
}

/* knobctl sweep -v of node[01-04] with TOP/file and args: asserts the exit
 * status and that the output holds each string of the NULL-terminated
 * list; the output (to free). */
static char *
clock_sweep(const char *file, const char *args, int want_rc, ...)
{
	char *out = NULL;
	const char *w;
	va_list ap;

	ck_assert_int_eq(ctl(&out, "sweep -v -w node[01-04] -f %s/%s %s", top, file, args),
	    want_rc);
	va_start(ap, want_rc);
	while ((w = va_arg(ap, const char *)) != NULL)
		ck_assert_msg(strstr(out, w) != NULL, "missing '%s' in:\n%s", w, out);
	va_end(ap);
	return out;
}

/* Restart node i's agent with its clock ahead by skew ("+3s", libfaketime),
 * or right (NULL). */
static void
agent_skewed(int i, const char *skew)
{
	harness_agent_stop(&h, i, SIGTERM);
	if (skew != NULL) {
		setenv("FAKETIME", skew, 1);
		setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
		cu_faketime_begin();
	}
	ck_assert_int_eq(harness_agent_start(&h, i), 0);
	faketime_cleanup();
}

/* A pong that comes back late is not a clock that is off, and the fleet
 * median is taken over the nodes whose ping bounds their offset within the
 * max.  A slow link delays what the controller sends by 0.6 s and nothing
 * back: the ping reaches the agent 0.6 s after it left and the pong comes
 * back at once, so the round trip's midpoint says +0.3 s for a clock that
 * agrees with the others to microseconds, known to within 0.3 s only.
 * node03 behind such a link, its offset within a max of 0.5 s: ok, the
 * round trip said, exit 0.  node04's agent then 3 s ahead (libfaketime) on
 * a fast link, max 0.1 s: node03 is warn, not judged and not in the
 * median; node04 fails and is drained.  Before, node03 was "clock fail"
 * and drained; and the median of +0.0, +0.0, +0.3, +3.0 was +0.15, so
 * node01 and node02, fast and right, failed and were drained with node04.
 * node02 behind a slow link too (max 0.2 s): only node01 and node04 bound
 * their offset, too few for a median, so each node is judged against the
 * controller, said so, and node04 fails without counting toward a drain
 * (before, the median was +0.3 and node01 failed 0.3 s from it).  A clock
 * really off (node03's agent 3 s ahead) still fails through the link. */
START_TEST(test_clock_late_pong)
{
	char drain[PATH_MAX + 32], *out;

	precheck();
	agents_up(4);
	link_begin(1u << LINK_NODE);
	write_clock_xml("clock5.xml", "0.5s", "");
	out = clock_sweep("clock5.xml", "", 0, "node03: clock ok (offset +0.",
	    "(max 0.500 s); the ping's round trip took ", "4 ok (node[01-04])", NULL);
	ck_assert_double_ge(clock_num(out, "node03", "round trip took "), 0.6);
	free(out);
	agent_skewed(3, "+3s");
	write_clock_xml("clock1.xml", "0.1s", "  <drain after=\"1\" resume=\"1\"/>\n");
	fake_scontrol("scontrol-clock", "node01 node02 node03 node04", drain, sizeof(drain));
	out = clock_sweep("clock1.xml", drain, 1, "node03: clock warn (offset +0.",
	    "from the fleet median (max 0.100 s); the ping's round trip took ",
	    "not judged, not counted toward a drain; not in the fleet median)",
	    "2 ok (node[01-02]), 1 warn (node03), 1 fail (node04)",
	    "drained node04: knob: clock fail\n", NULL);
	ck_assert_double_ge(clock_num(out, "node03", "round trip took "), 0.6);
	ck_assert_double_ge(clock_num(out, "node04", " s, "), 2.5);
	free(out);
	ck_assert_int_eq(fake_calls("scontrol-clock", "update"), 1);
	ck_assert_int_ge(link_end(), 2);
	/* node02 and node03 slow: no fleet median */
	link_begin(1u << 1 | 1u << LINK_NODE);
	write_clock_xml("clock.xml", "0.2s", "");
	out = clock_sweep("clock.xml", "", 1, "node01: clock ok (offset ",
	    " s (max 0.200 s); against the controller's clock: only 2 of 4 nodes' pings bound "
	    "their offset within the max (the fleet median needs 3)",
	    ": clock warn (offset +0.", "node04: clock fail (offset +",
	    ", so the controller's clock may be the one off: not counted toward a drain",
	    "1 ok (node01), 2 warn (node[02-03]), 1 fail (node04)", NULL);
	ck_assert_double_ge(clock_num(out, "node04", "(offset "), 2.5);
	ck_assert_ptr_null(strstr(out, "fleet median ("));
	free(out);
	/* node03's clock 3 s ahead: off by more than the round trip explains */
	agent_skewed(LINK_NODE, "+3s");
	out = clock_sweep("clock.xml", "", 1, "node03: clock fail (offset +",
	    "; more than the max even with the ping's ", NULL);
	ck_assert_double_ge(clock_num(out, "node03", "(offset "), 2.5);
	ck_assert_double_ge(clock_num(out, "node03", "even with the ping's "), 0.6);
	free(out);
	ck_assert_int_ge(link_end(), 4);
	/* stopped, not restarted: agents_up starts them right when needed */
	harness_agent_stop(&h, LINK_NODE, SIGTERM);
	harness_agent_stop(&h, 3, SIGTERM);
}
END_TEST

/* sweep history lists the sweeps newest first in the order they were
 * recorded, whatever the controller's clock said: a sweep run while its
 * clock was two days ahead (libfaketime), then the clock put right and a
 * sweep run again: the second comes first.  Before, the rows were ordered
 * by the time stamp, and after an NTP step back the newest sweeps came last
 * (below the 50 listed, until the clock caught up). */
START_TEST(test_history_after_clock_step)
{
	char *out = NULL, ahead[16], *nl;
	time_t t = time(NULL) + 2 * 86400;
	struct tm tm;

	precheck();
	agents_up(1);
	strftime(ahead, sizeof(ahead), "%Y-%m-%d", gmtime_r(&t, &tm));
	setenv("FAKETIME", "+2d", 1);
	setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
	cu_faketime_begin();
	ctl(&out, "sweep -w node01");
	free(out);
	faketime_cleanup();
	ctl(&out, "sweep -w node01");
	free(out);
	ck_assert_int_eq(ctl(&out, "sweep history node01"), 0);
	ck_assert_ptr_nonnull(nl = strchr(out, '\n'));
	ck_assert_msg(strncmp(out, ahead, strlen(ahead)) != 0, "newest sweep not first: "
	    "%.*s", (int)(nl - out), out);
	ck_assert_msg(strncmp(nl + 1, ahead, strlen(ahead)) == 0, "the sweep 2 days ahead "
	    "not second");
	free(out);
}
END_TEST

/* After each test, also a failed one: faketime's leftovers, the pids cap,
 * the frozen file system. */
static void
case_cleanup(void)
{
	faketime_cleanup();
	pids_release();
	frz_release();
	busy_fuse_end();
	link_end();
}

static Suite *
sweep_net_suite(void)
{
	Suite *s = suite_create("sweep_net");
	TCase *tc = tcase_create("sweep_net");

	tcase_set_timeout(tc, 180);
	tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
	tcase_add_checked_fixture(tc, NULL, case_cleanup);	/* also after a failure */
	tcase_add_test(tc, test_sweep_file_errors);
	tcase_add_test(tc, test_sweep_four_nodes);
	tcase_add_test(tc, test_check_timeout);
	tcase_add_test(tc, test_probe_slow);
	tcase_add_test(tc, test_probe_skipped_during_bench);
	tcase_add_test(tc, test_bench_straggler);
	tcase_add_test(tc, test_drain_hysteresis);
	tcase_add_test(tc, test_error_counters);
	tcase_add_test(tc, test_agent_error_not_drained);
	tcase_add_test(tc, test_agent_no_worker_not_drained);
	tcase_add_test(tc, test_agent_lost_not_drained);
	tcase_add_test(tc, test_drain_reason_per_node);
	tcase_add_test(tc, test_drift_unchecked_key);
	tcase_add_test(tc, test_units_verify);
	tcase_add_test(tc, test_stdio_probe_fds);
	tcase_add_test(tc, test_probe_hung);
	tcase_add_test(tc, test_not_slurm_node);
	tcase_add_test(tc, test_agent_no_check_thread_not_drained);
	tcase_add_test(tc, test_probe_overlap);
	tcase_add_test(tc, test_busy_sweep_retried);
	tcase_add_test(tc, test_hung_mount_replaced);
	tcase_add_test(tc, test_health_flood_bounded);
	tcase_add_test(tc, test_drain_resumed_by_hand);
	tcase_add_test(tc, test_clock_late_pong);
	tcase_add_test(tc, test_history_after_clock_step);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cu_run_nofork(sweep_net_suite());
}
