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
 *   the file stays as it was;
 * - the files a finished phase keeps for the next one expire with the
 *   phase's (non-default) lease when its controller falls silent on an
 *   open connection, not before, and every message from the controller
 *   renews that lease; files kept with --keep (persist_files) are the
 *   user's: the same expiry leaves them, also across an agent restart.
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
#include <sched.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <json-c/json.h>
#include <openssl/ssl.h>

#include "testutil.h"
#include "harness.h"
#include "tls.h"
#include "tune.h"
#include "util.h"
#include "wire.h"

#define LEASE_S		3
#define CTL_TIMEOUT_S	5	/* knobctl --timeout: silent node -> timeout */
#define APPLY_TIMEOUT_S	3	/* the same for cut_during_apply (the others answer at once) */
/* cut_during_bench_phase: MiB per node at 20 IOPS of 1 MiB, 6.4 s of
 * writing: node02 is still writing when its lease runs out after the cut
 * (its files went 4 s after it), and the others finish soon after that */
#define BENCH_MIB	128
/* cut_during_sweep: the sweep's margin over the agents' own deadlines
 * (KNOB_TEST_SWEEP_MARGIN_S, its least; 5 s otherwise): node02 is given up
 * on sooner */
#define SWEEP_MARGIN_S	"1"

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

static size_t
count_glob(const char *pattern)
{
	glob_t g;
	size_t n = glob(pattern, 0, NULL, &g) == 0 ? g.gl_pathc : 0;

	globfree(&g);
	return n;
}

static int
gone_on_node02(void *pattern)
{
	/* checked on the cut node itself, through its own namespace */
	return harness_node_sh(&h, 1, "! ls %s >/dev/null 2>&1", (const char *)pattern) == 0;
}

/* Cut or restore node i's veth on the bridge side. */
static void
link_set(int i, const char *updown)
{
	ck_assert_int_eq(harness_sh("ip -n %s link set kv%d %s", h.ctl_ns, i + 1, updown), 0);
}

/* Does node02 answer a ping? */
static int
node02_answers(void *arg)
{
	(void)arg;
	return harness_knobctl(&h, NULL, NULL, "--timeout 5 ping -w node02") == 0;
}

/* Restore node02's link and wait (30 s: neighbour entries left failed by
 * the cut recover on their own time on a loaded VM) until node02 answers;
 * a failed check when it does not. */
static void
link_up_node02(void)
{
	link_set(1, "up");
	ck_assert_msg(cu_wait(node02_answers, NULL, 30) >= 0, "node02 unreachable after the cut");
}

/* Member k of phase 0 of a knobctl --json bench document. */
static json_object *
phase0(json_object *doc, const char *k)
{
	return cu_get(cu_phase(doc, 0), k);
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
	pid = harness_knobctl_bg(&h, out, "/dev/null", "--json --timeout %d bench seq-write "
	    "-w @all --dir %s --threads 3 --size %dm --bs 1m --rate-iops 20 --lease %d", CTL_TIMEOUT_S,
	    data, BENCH_MIB, LEASE_S);
	ck_assert_msg(cu_wait(cu_glob_exists, pat, 30) >= 0, "node02 never started writing");
	link_set(1, "down");
	t_cut = now_mono_ns();
	t_gone = cu_wait(gone_on_node02, pat, LEASE_S + 5);
	ck_assert_msg(t_gone >= 0, "node02's file still there %d s after the cut", LEASE_S + 5);
	printf("bench phase, link cut: node02's files gone %.1f s after the cut (lease %d s)\n",
	    t_gone, LEASE_S);
	rc = cu_reap(pid);
	ck_assert_int_ge(rc, 0);
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
	ck_assert_int_eq(json_object_get_int64(phase0(doc, "bytes")), 2ll * (BENCH_MIB << 20));
	printf("bench phase, link cut: knobctl ended %.1f s after the cut, node02 missing\n",
	    t_end);
	json_object_put(doc);
	free(txt);
	ck_assert(harness_log_has(&h, 1, "lease expired"));
	/* every node's files are gone, and node02 serves again once the link is back */
	snprintf(pat, sizeof(pat), "%s/knob.*", data);
	ck_assert_msg(!cu_glob_exists(pat), "files left in %s", data);
	link_up_node02();
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "--timeout 10 ping -w @all"), 0);
}
END_TEST

/* Stand-in GPFS under root: mmchconfig takes 3 s while cfg.slow exists
 * (made here: the apply's, for the cut), then writes cfg. */
static void
gpfs_standin(const char *root, const char *cfg)
{
	char body[1024], path[PATH_MAX + 64];

	ck_assert_int_eq(harness_sh("mkdir -p %s/usr/lpp/mmfs/bin", root), 0);
	cu_write(cfg, 0755, "%s", "pagepool 1073741824\n");
	snprintf(path, sizeof(path), "%s.slow", cfg);
	cu_write(path, 0644, "%s", "");
	snprintf(body, sizeof(body), "#!/bin/sh\n# stand-in for mmdiag (no GPFS here)\n"
	    "[ \"$1\" = --config ] || exit 2\necho '=== mmdiag: config ==='\n"
	    "sed 's/^/ ! /' '%s'\n", cfg);
	snprintf(path, sizeof(path), "%s/usr/lpp/mmfs/bin/mmdiag", root);
	cu_write(path, 0755, "%s", body);
	snprintf(body, sizeof(body), "#!/bin/sh\n# stand-in for mmchconfig (no GPFS here): slow\n"
	    "kv=$1; v=${kv#*=}\n[ -e '%s.slow' ] && sleep 3\n"
	    "sed -i \"s/^pagepool .*/pagepool $v/\" '%s'\n", cfg, cfg);
	snprintf(path, sizeof(path), "%s/usr/lpp/mmfs/bin/mmchconfig", root);
	cu_write(path, 0755, "%s", body);
	ck_assert_int_eq(harness_sh("chmod 755 %s/usr/lpp/mmfs/bin/*", root), 0);
}

/* Is the stand-in mmchconfig under root running on node02?  "[m]" keeps
 * the pattern from matching the shell that runs pgrep: with the plain name,
 * pgrep -f found that shell's own command line, and this was always true
 * (so the cut came at once, in whatever phase the apply was). */
static int
mmchconfig_running(void *root)
{
	return harness_node_sh(&h, 1, "pgrep -f \"%s/usr/lpp/mmfs/bin/[m]mchconfig\" "
	    ">/dev/null", (const char *)root) == 0;
}

/* ... and has it ended? */
static int
mmchconfig_ended(void *root)
{
	return !mmchconfig_running(root);
}

START_TEST(cut_during_apply)
{
	char root[PATH_MAX + 16], cfg[PATH_MAX + 16], prof[PATH_MAX + 16], out[PATH_MAX + 16];
	char slow[PATH_MAX + 32];
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
	cu_write(prof, 0755, "%s", "<?xml version=\"1.0\"?>\n<profile name=\"cut\">\n"
	    "  <gpfs key=\"pagepool\" value=\"512M\"/>\n</profile>\n");

	snprintf(out, sizeof(out), "%s/apply.out", h.tmp);
	t0 = now_mono_ns();
	pid = harness_knobctl_bg(&h, out, "/dev/null", "--timeout %d apply %s -w @all",
	    APPLY_TIMEOUT_S, prof);
	/* the stand-in mmchconfig is running on node02: cut now */
	ck_assert_msg(cu_wait(mmchconfig_running, root, 10) >= 0, "mmchconfig never ran on node02");
	link_set(1, "down");
	/* that one runs its 3 s; the rollback's at the end need not */
	snprintf(slow, sizeof(slow), "%s.slow", cfg);
	ck_assert_int_eq(unlink(slow), 0);
	rc = cu_reap(pid);
	ck_assert_int_ge(rc, 0);
	t = (double)(now_mono_ns() - t0) / 1e9;
	ck_assert_int_eq(read_file_bounded(out, 1 << 20, &txt, NULL), 0);
	fprintf(stderr, "%s", txt);
	ck_assert_int_eq(rc, 1);
	/* node02 is reported as not done: a timeout when its TCP retransmits go
	 * unanswered, or unreachable when the kernel answers them with "no route
	 * to host" (the link is down on its side).  Its connection was open
	 * (the agent was running the apply), so no connect or handshake report */
	ck_assert_msg(strstr(txt, "node02: timeout: no reply within") != NULL ||
	    strstr(txt, "node02: unreachable: no route to host") != NULL,
	    "node02 not reported: %s", txt);
	/* the others finished their apply (no GPFS there: the key is unsupported) */
	ck_assert_msg(strstr(txt, "1 timeout (node02), 2 unsupported (node[01,03])") != NULL ||
	    strstr(txt, "1 unreachable (node02), 2 unsupported (node[01,03])") != NULL,
	    "the others: %s", txt);
	ck_assert_msg(t < APPLY_TIMEOUT_S + 5, "apply took %.1f s", t);
	printf("apply, link cut: node02 reported after %.1f s (deadline %d s)\n", t,
	    APPLY_TIMEOUT_S);
	free(txt);
	/* the others were answered: their lines are there, and not as errors
	 * (the profile is active; its GPFS key cannot be checked there, which
	 * verify says, exit 1) */
	rc = harness_knobctl(&h, &txt, NULL, "verify %s -w node01,node03", prof);
	fprintf(stderr, "verify on the others (exit %d):\n%s", rc, txt);
	ck_assert_msg(rc == 1 && strstr(txt, "active profile: cut") &&
	    strstr(txt, "2 unsupported (node[01,03])"), "verify on the others: exit %d: %s", rc,
	    txt);
	free(txt);

	/* link back: the next command works, and verify tells what node02's
	 * stand-in GPFS really holds once the agent is done with the apply it
	 * went on with while cut off (committed, or reverted if it failed) */
	link_up_node02();
	ck_assert_msg(cu_wait(mmchconfig_ended, root, 10) >= 0,
	    "the stand-in mmchconfig never ended");
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
	pid = harness_knobctl_bg(&h, out, "/dev/null", "--json bench seq-write -w node01 "
	    "--dir %s --threads 2 --size 256m --bs 1m --rate-iops 20", data);
	ck_assert_msg(cu_wait(cu_glob_exists, pat, 30) >= 0, "node01 never started writing");
	harness_agent_stop(&h, 0, SIGKILL);
	ck_assert_int_gt(cu_reap(pid), 0);
	ck_assert_msg(cu_glob_exists(pat), "the files went with the agent?");
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	/* start-up (before listening) removed what the killed agent recorded */
	ck_assert_msg(!cu_glob_exists(pat), "orphaned files still there after the restart");
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
	cu_write(path, 0755, "%s", content);
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
	    "\"/proc/sys/vm/x\",\"value\":\"1\"},\n{\"driver\":\"bogus\",\"key\":\"k\",\"target\":\"t\","
	    "\"value\":\"1\"}]}}\n", TUNE_JOURNAL_NAME ":4: txn.entries[1]: unknown driver 'bogus'");
	/* a journal whose target points where its key cannot (copied from
	 * another node, edited, corrupted): rollback would write there as root */
	refuses("{\"version\":1,\"active\":\"\",\n\"originals\":[\n{\"driver\":\"sysfs\","
	    "\"key\":\"/sys/x\",\"target\":\"/etc/important\",\"value\":\"1\"}]}\n",
	    TUNE_JOURNAL_NAME ":3: originals[0]: sysfs target '/etc/important' is not one that key "
	    "'/sys/x' names");
	refuses("{\"version\":1,\"active\":\"\",\"originals\":[],\n\"txn\":{\"id\":\"t1\","
	    "\"profile\":\"p\",\"entries\":[\n{\"driver\":\"sysctl\",\"key\":\"vm.*\",\"target\":"
	    "\"/proc/sys/vm/../../etc/x\",\"value\":\"1\"}]}}\n",
	    TUNE_JOURNAL_NAME ":3: txn.entries[0]: sysctl target '/proc/sys/vm/../../etc/x'");
	refuses("{\"version\":1,\"active\":\"\",\n\"originals\":[\n{\"driver\":\"blockdev\","
	    "\"key\":\"sd*\",\"attr\":\"read_ahead_kb\",\"target\":\"../../../etc\","
	    "\"value\":\"1\"}]}\n", TUNE_JOURNAL_NAME ":3: originals[0]: blockdev target '../../../etc'");
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
	cu_write(sweep, 0755, "%s", "<?xml version=\"1.0\"?>\n<sweep>\n  <defaults>\n"
	    "    <timeout check=\"2s\"/>\n  </defaults>\n</sweep>\n");
	snprintf(out, sizeof(out), "%s/sweep.out", h.tmp);
	snprintf(pat, sizeof(pat), "%s/knob.*", data);
	t0 = now_mono_ns();
	setenv("KNOB_TEST_SWEEP_MARGIN_S", SWEEP_MARGIN_S, 1);
	pid = harness_knobctl_bg(&h, out, "/dev/null", "sweep -w @all -f %s --probe %s", sweep, data);
	unsetenv("KNOB_TEST_SWEEP_MARGIN_S");
	ck_assert_msg(cu_wait(cu_glob_exists, pat, 30) >= 0, "the probes never started");
	link_set(1, "down");
	rc = cu_reap(pid);
	ck_assert_int_ge(rc, 0);
	t = (double)(now_mono_ns() - t0) / 1e9;
	ck_assert_int_eq(read_file_bounded(out, 1 << 20, &txt, NULL), 0);
	fprintf(stderr, "%s", txt);
	ck_assert_int_ne(rc, 0);
	ck_assert_msg(strstr(txt, "node02: reach timeout") != NULL, "node02 not reported: %s",
	    txt);
	ck_assert_msg(strstr(txt, ": 2 ok (node[01,03]), 1 timeout (node02)") != NULL,
	    "the others: %s", txt);
	printf("sweep, link cut: knobctl ended %.1f s after it started, node02 reported\n", t);
	free(txt);
	t = cu_wait(gone_on_node02, pat, LEASE_S + 5);
	ck_assert_msg(t >= 0, "probe files left in %s", data);
	link_up_node02();
	rc = harness_knobctl(&h, &txt, NULL, "--timeout 10 sweep -w node02 -f %s", sweep);
	ck_assert_msg(rc == 0, "sweep after the cut: exit %d\n%s", rc, txt);
	free(txt);
}
END_TEST

/* ------------------------------------------------ kept files, silent controller */

#define KEEP_LEASE_S	3	/* non-default (the agent's default is 10 s) */
#define KEEP_PINGS	3	/* 1 s apart after the phases: each renews the lease */

/* In the controller namespace: a TLS connection to node02's agent with
 * the controller's certificate, as a struct conn.  0 or -1. */
static int
ctl_dial(struct conn *c)
{
	char ca[PATH_MAX + 16], crt[PATH_MAX + 16], key[PATH_MAX + 16], err[256];
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(7420) };
	SSL_CTX *ctx;
	SSL *ssl;
	int fd, ns;

	snprintf(ca, sizeof(ca), "%s/ca.crt", h.ca_dir);
	snprintf(crt, sizeof(crt), "%s/controller.crt", h.ca_dir);
	snprintf(key, sizeof(key), "%s/controller.key", h.ca_dir);
	snprintf(err, sizeof(err), "/run/netns/%s", h.ctl_ns);
	if ((ns = open(err, O_RDONLY | O_CLOEXEC)) < 0 || setns(ns, CLONE_NEWNET) < 0)
		return -1;
	if ((ctx = tls_ctx_new(0, ca, crt, key, err, sizeof(err))) == NULL)
		return -1;
	inet_pton(AF_INET, h.node[1].addr, &sa.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (SSL_connect(ssl) != 1)
		return -1;
	conn_init(c, fd, fd, ssl);
	return 0;
}

/* Send env (id) and wait for a reply of body type want (other bodies,
 * e.g. PhaseProgress, are skipped); 0 when it came and says ok. */
static int
ctl_call(struct conn *c, Knob__Envelope *env, uint64_t id, int want)
{
	Knob__Envelope *r = NULL;
	int ok = 0;

	env->id = id;
	if (conn_send_sync(c, env, 10000) < 0)
		return -1;
	while (conn_recv_sync(c, &r, 30000) == 1) {
		int body = r->body_case;

		if (body == want)
			ok = want == KNOB__ENVELOPE__BODY_PHASE_READY ? r->phase_ready->ok :
			    want == KNOB__ENVELOPE__BODY_PHASE_RESULT ? r->phase_result->ok : 1;
		knob__envelope__free_unpacked(r, NULL);
		if (body == want)
			return ok ? 0 : -1;
	}
	return -1;
}

/* One seq-write phase of 1 MiB in data/knob.<workdir>/ on node02, run to
 * its result; persist as knobctl --keep sets it.  0 or -1. */
static int
ctl_phase(struct conn *c, const char *workdir, int persist, uint64_t id)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__PhasePrepare prep = KNOB__PHASE_PREPARE__INIT;
	Knob__PhaseGo go = KNOB__PHASE_GO__INIT;
	Knob__PhaseSpec sp = KNOB__PHASE_SPEC__INIT;
	uint32_t rank = 0;

	sp.phase_id = (char *)(uintptr_t)workdir;
	sp.workdir_id = (char *)(uintptr_t)workdir;
	sp.kind = (char *)(uintptr_t)"seq-write";
	sp.dir = data;
	sp.block_size = 64 << 10;
	sp.file_size = 1 << 20;
	sp.threads_total = 1;
	sp.ranks = &rank;
	sp.n_ranks = 1;
	sp.nodes_total = 1;
	sp.lease_s = KEEP_LEASE_S;
	sp.keep_files = 1;
	sp.persist_files = persist;
	prep.spec = &sp;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_PREPARE;
	env.phase_prepare = &prep;
	if (ctl_call(c, &env, id, KNOB__ENVELOPE__BODY_PHASE_READY) < 0)
		return -1;
	go.phase_id = sp.phase_id;
	env.body_case = KNOB__ENVELOPE__BODY_PHASE_GO;
	env.phase_go = &go;
	return ctl_call(c, &env, id + 1, KNOB__ENVELOPE__BODY_PHASE_RESULT);
}

/* Child: the controller.  Runs phase "gapkeep" (kept for a next phase)
 * and "gappersist" (--keep), then pings KEEP_PINGS times 1 s apart (the
 * pace of the scenario, not a synchronisation), writes "T\n" on w with the
 * monotonic time of the last pong, and stays silent with the connection
 * open until r closes. */
static void
silent_controller(int r, int w)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Ping ping = KNOB__PING__INIT;
	struct conn c;
	char line[64], x;

	if (ctl_dial(&c) < 0)
		_exit(2);
	if (ctl_phase(&c, "gapkeep", 0, 1) < 0 || ctl_phase(&c, "gappersist", 1, 3) < 0)
		_exit(3);
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	for (int i = 0; i < KEEP_PINGS; i++) {
		usleep(1000000);
		if (ctl_call(&c, &env, 10 + (uint64_t)i, KNOB__ENVELOPE__BODY_PONG) < 0)
			_exit(4);
	}
	snprintf(line, sizeof(line), "%llu\n", (unsigned long long)now_mono_ns());
	if (write(w, line, strlen(line)) != (ssize_t)strlen(line))
		_exit(5);
	while (read(r, &x, 1) > 0)	/* silent until the test is done */
		;
	_exit(0);
}

/* A record of workdir in node02's state directory (bench/<workdir>+*). */
static int
record_exists(const char *workdir)
{
	char pat[PATH_MAX + 64];

	snprintf(pat, sizeof(pat), "%s/bench/%s+*", h.node[1].state_dir, workdir);
	return cu_glob_exists(pat);
}

/* cu_wait condition: no record of workdir (arg) in node02's state
 * directory.  The agent's clean-up removes the files first, then the
 * record (cleanup_run): the files gone, the record may still be there for
 * a moment. */
static int
record_gone(void *workdir)
{
	return !record_exists(workdir);
}

START_TEST(kept_files_expire_silent_controller)
{
	char keep[PATH_MAX + 32], persist[PATH_MAX + 32], line[64] = "", msg[128];
	int to_child[2], from_child[2];
	uint64_t t_last;
	double t_gone;
	ssize_t n;
	pid_t pid;

	snprintf(keep, sizeof(keep), "%s/knob.gapkeep/f.00000000", data);
	snprintf(persist, sizeof(persist), "%s/knob.gappersist/f.00000000", data);
	ck_assert_int_eq(pipe(to_child), 0);
	ck_assert_int_eq(pipe(from_child), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(to_child[1]);
		close(from_child[0]);
		silent_controller(to_child[0], from_child[1]);
	}
	close(to_child[0]);
	close(from_child[1]);
	n = read(from_child[0], line, sizeof(line) - 1);
	ck_assert_msg(n > 0, "the controller failed (exit %d)", n == 0 ? cu_reap(pid) : -1);
	t_last = strtoull(line, NULL, 10);
	/* both phases finished KEEP_PINGS s ago, more than half the lease:
	 * the pings kept both sets of files */
	ck_assert_msg(gone_on_node02(keep) == 0, "kept files removed while the controller talked");
	ck_assert_msg(gone_on_node02(persist) == 0, "--keep files removed");
	ck_assert(record_exists("gapkeep"));
	/* silent from t_last on, connection open: the lease runs out */
	ck_assert_msg(cu_wait(gone_on_node02, keep, KEEP_LEASE_S + 5 + 1) >= 0,
	    "kept files still there %d s after the controller fell silent", KEEP_LEASE_S + 5);
	t_gone = (double)(now_mono_ns() - t_last) / 1e9;
	printf("kept files of a finished phase gone %.1f s after the controller's last message "
	    "(lease %d s; phases ended %d s before that)\n", t_gone, KEEP_LEASE_S, KEEP_PINGS);
	ck_assert_msg(t_gone >= KEEP_LEASE_S - 1, "gone after %.1f s: before the lease of %d s",
	    t_gone, KEEP_LEASE_S);
	ck_assert_msg(t_gone <= KEEP_LEASE_S + 5, "gone after %.1f s", t_gone);
	snprintf(msg, sizeof(msg), "lease expired: no word from the controller for %d s; "
	    "removing the files kept", KEEP_LEASE_S);
	ck_assert_msg(harness_log_has(&h, 1, msg), "no '%s' in node02's log", msg);
	ck_assert_msg(cu_wait(record_gone, (void *)(uintptr_t)"gapkeep", 5) >= 0,
	    "orphan record left 5 s after the clean-up");
	/* the same expiry left the --keep files, and forgot their record */
	ck_assert_msg(gone_on_node02(persist) == 0, "--keep files removed by the lease");
	ck_assert_msg(!record_exists("gappersist"), "--keep files still recorded as orphans");
	close(to_child[1]);
	ck_assert_int_eq(cu_reap(pid), 0);
	/* an agent restart does not treat them as orphans either */
	harness_agent_stop(&h, 1, SIGTERM);
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
	ck_assert_msg(gone_on_node02(persist) == 0, "--keep files removed at restart");
}
END_TEST

static Suite *
faults_suite(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = cu_tcase("faults", setup, teardown, 120);

	tcase_add_test(tc, cut_during_bench_phase);
	tcase_add_test(tc, cut_during_apply);
	tcase_add_test(tc, cut_during_sweep);
	tcase_add_test(tc, sigkill_mid_phase_orphan_removed);
	tcase_add_test(tc, corrupt_journals_refuse_start);
	tcase_add_test(tc, kept_files_expire_silent_controller);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cu_run(faults_suite());
}
