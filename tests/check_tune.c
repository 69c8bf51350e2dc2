/* In-process tests of the tuning subsystem: normalisers, drivers, journal
 * and the apply / check / verify / rollback transaction, run against a
 * struct agent with a temp sysroot and state dir.
 *
 * Fakes, said plainly: the Lustre tree (several OSC instances, an MGC with a
 * NID in its name) is a fake under a temp --sysroot; mmchconfig, mmdiag and
 * lctl are stand-in shell scripts under that sysroot, and an mmfsd "restart"
 * in test_gpfs_pending_restart is the test copying the stand-in's configured
 * values over the ones its mmdiag prints.  The kernel's mutually exclusive
 * vm sysctl pairs (dirty_bytes / dirty_ratio, ...) are fake files under a
 * temp --sysroot given the kernel's write semantics by this program's own
 * write(2) (fake_pairs: they are global sysctls, never the host's to
 * change).  Real things: loop devices this test creates with losetup
 * (only their exact names are targeted, and they are detached in
 * teardown), and a veth pair and net.core.somaxconn inside a private
 * network namespace (unshare) of the forked test process. */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <json-c/json.h>

#include "testutil.h"
#include "harness.h"
#include "agent.h"
#include "normalize.h"
#include "profile.h"
#include "tune.h"
#include "util.h"

static char tmp[96], root[128], state[128];
static char loopdev[32];
static char loopdev2[32];	/* a second one: the renamed-device tests */
static struct agent *ag;

/* printf into root/REL (parents made); a shell script there. */
#define put(rel, ...) cu_write_at(root, rel, 0644, __VA_ARGS__)
#define script(rel, body) cu_write_at(root, rel, 0755, "#!/bin/sh\n%s", body)

/* Contents of a file under the sysroot (static buffer). */
#define get(rel) cu_readf("%s%s", root, rel)

/* What agent a publishes as active: the profile (note 0) or its note
 * (note 1), copied through tune_active (static buffer). */
static const char *
active_pub(struct agent *a, int note)
{
	static char buf[256];
	char *v[2];

	tune_active(a, &v[0], &v[1]);
	snprintf(buf, sizeof(buf), "%s", v[note]);
	free(v[0]);
	free(v[1]);
	return buf;
}

static int agent_no_reapply;	/* the next mk_agent: knobd --no-reapply */
static int agent_same_boot;	/* the next mk_agent: in the last one's boot */

/* An agent on sysroot with the test's state dir, its tuning not started.
 * Each starts in a boot of its own ($KNOB_TEST_BOOT_ID "boot-N", as after a
 * reboot) unless agent_same_boot says knobd restarted in the last one's. */
static struct agent *
agent_new(const char *sysroot)
{
	struct agent *a = xcalloc(1, sizeof(*a));
	static unsigned boots;
	char id[32];

	boots += !agent_same_boot || boots == 0;
	snprintf(id, sizeof(id), "boot-%u", boots);
	setenv("KNOB_TEST_BOOT_ID", id, 1);

	a->cfg.no_reapply = agent_no_reapply;
	snprintf(a->sysroot, sizeof(a->sysroot), "%s", sysroot);
	snprintf(a->state_dir, sizeof(a->state_dir), "%s", state);
	snprintf(a->node, sizeof(a->node), "node01");
	a->cfg.test_hooks = 1;
	pthread_mutex_init(&a->post_mu, NULL);
	pthread_mutex_init(&a->ctl_mu, NULL);
	return a;
}

static struct agent *
mk_agent(const char *sysroot)
{
	struct agent *a = agent_new(sysroot);

	ck_assert_int_eq(tune_init(a), 0);
	return a;
}

static void
rm_agent(struct agent *a)
{
	if (a == NULL)
		return;
	tune_fini(a);
	pthread_mutex_destroy(&a->post_mu);
	pthread_mutex_destroy(&a->ctl_mu);
	free(a);
}

/* Clean-up: Check's forked test process exits on a failed assertion
 * without running checked teardowns, so what must never leak (the loop
 * device, the temp tree) belongs to the unchecked fixture, which runs in
 * the parent once per test case, failures or not.  Each test works in its
 * own subdirectory of top. */
static char top[64];

static void
suite_setup(void)
{
	char dir2[96];

	cu_mkdtemp(top, sizeof(top), "tune");
	snprintf(tmp, sizeof(tmp), "%s", top);
	if (cu_loop_attach(top, loopdev, sizeof(loopdev)) < 0)
		fprintf(stderr, "no loop device: the loop device test will fail\n");
	snprintf(dir2, sizeof(dir2), "%s/l2", top);
	if (mkdir(dir2, 0700) < 0 || cu_loop_attach(dir2, loopdev2, sizeof(loopdev2)) < 0)
		fprintf(stderr, "no second loop device: the renamed-device tests will fail\n");
}

static void
suite_teardown(void)
{
	cu_loop_detach(loopdev);
	loopdev[0] = '\0';
	cu_loop_detach(loopdev2);
	loopdev2[0] = '\0';
	if (cu_rm_rf(top) < 0)
		fprintf(stderr, "could not remove %s\n", top);
}

static void
setup(void)
{
	snprintf(tmp, sizeof(tmp), "%s/t.XXXXXX", top);
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	snprintf(root, sizeof(root), "%s/root", tmp);
	snprintf(state, sizeof(state), "%s/state", tmp);
	mkdir(root, 0755);
	ag = NULL;
}

static void
teardown(void)
{
	rm_agent(ag);
	ag = NULL;
}

/* ------------------------------------------------------------ requests */
struct s {
	const char *driver, *key, *attr, *value;
	int persistent;
	const char *match;
};

/* Every key of an apply result was changed. */
static void
all_changed(const Knob__ApplyResult *r)
{
	for (size_t i = 0; i < r->n_keys; i++)
		ck_assert_int_eq(r->keys[i]->state, KNOB__KEY_STATE__KEY_CHANGED);
}

static Knob__Setting **
mk_settings(const struct s *v, size_t n)
{
	Knob__Setting **out = xcalloc(n, sizeof(*out));

	for (size_t i = 0; i < n; i++) {
		out[i] = xcalloc(1, sizeof(**out));
		knob__setting__init(out[i]);
		out[i]->driver = (char *)(uintptr_t)v[i].driver;
		out[i]->key = (char *)(uintptr_t)v[i].key;
		out[i]->attr = (char *)(uintptr_t)(v[i].attr ? v[i].attr : "");
		out[i]->value = (char *)(uintptr_t)v[i].value;
		out[i]->match = (char *)(uintptr_t)(v[i].match ? v[i].match : "");
		out[i]->persistent = v[i].persistent;
		out[i]->origin = (char *)(uintptr_t)"test";
	}
	return out;
}

static void
free_settings(Knob__Setting **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Extra request fields for the next do_apply (reset after each). */
static int apply_stack;
static int apply_restore;	/* ApplyRequest.would_restore: a controller that knows it */
static uint32_t apply_pause_ms;
static const char *apply_pause_at;

static void
do_apply(struct agent *a, const char *profile, const struct s *v, size_t n, int check,
    int keep_going, Knob__ApplyResult *res)
{
	Knob__ApplyRequest req = KNOB__APPLY_REQUEST__INIT;

	req.stack = apply_stack;
	req.would_restore = apply_restore;
	req.test_pause_ms = apply_pause_ms;
	req.test_pause_at = (char *)(uintptr_t)(apply_pause_at ? apply_pause_at : "");
	apply_stack = 0;
	apply_restore = 0;
	apply_pause_ms = 0;
	apply_pause_at = NULL;
	req.profile = (char *)(uintptr_t)profile;
	req.settings = mk_settings(v, n);
	req.n_settings = n;
	req.check = check;
	req.keep_going = keep_going;
	ck_assert_int_eq(tune_apply(a, &req, res), 0);
	free_settings(req.settings, n);
}

static void
do_verify(struct agent *a, const struct s *v, size_t n, Knob__VerifyResult *res)
{
	Knob__VerifyRequest req = KNOB__VERIFY_REQUEST__INIT;

	req.profile = (char *)(uintptr_t)"p";
	req.settings = mk_settings(v, n);
	req.n_settings = n;
	ck_assert_int_eq(tune_verify(a, &req, res), 0);
	free_settings(req.settings, n);
}

/* The result for target (substring of KeyResult.target); fails if absent. */
static const Knob__KeyResult *
find_key(Knob__KeyResult **keys, size_t n, const char *key, const char *target)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(keys[i]->key, key) == 0 && (target == NULL || strstr(keys[i]->target, target)))
			return keys[i];
	ck_abort_msg("no result for %s %s", key, target ? target : "");
	return NULL;
}

static void
dump(Knob__KeyResult **keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "    %-14s %s %s [%s] before=%s wanted=%s after=%s %s\n",
		    tune_key_state_name(keys[i]->state), keys[i]->driver, keys[i]->key,
		    keys[i]->target, keys[i]->before, keys[i]->wanted, keys[i]->after,
		    keys[i]->message);
}

/* ------------------------------------------------------------ normalisers */
struct norm_case {
	const char *driver, *key, *attr, *in, *out;
};

static const struct norm_case norm_cases[] = {
	{ "blockdev", "sd*", "scheduler", "none [mq-deadline] kyber bfq", "mq-deadline" },
	{ "blockdev", "sd*", "scheduler", "  [none] mq-deadline\n", "none" },
	{ "blockdev", "sd*", "scheduler", "mq-deadline", "mq-deadline" },
	{ "blockdev", "sd*", "scheduler", "deadline", "mq-deadline" },	/* the kernel's alias */
	{ "blockdev", "sd*", "scheduler", "noop", "noop" },	/* refused by blk-mq: kept */
	{ "blockdev", "sd*", "read_ahead_kb", "4M", "4096" },
	{ "blockdev", "sd*", "read_ahead_kb", "4096", "4096" },
	{ "blockdev", "sd*", "read_ahead_kb", "512KiB", "512" },
	{ "blockdev", "sd*", "read_ahead_kb", "256s", "128" },
	{ "blockdev", "sd*", "max_sectors_kb", "1 MiB", "1024" },
	{ "blockdev", "sd*", "nr_requests", "0256", "256" },
	{ "gpfs", "pagepool", "", "16G", "17179869184" },
	{ "gpfs", "pagepool", "", "17179869184", "17179869184" },
	{ "gpfs", "lrocData", "", "no", "no" },
	{ "lustre", "osc.*.max_dirty_mb", "", "1G", "1024" },
	{ "lustre", "osc.*.max_pages_per_rpc", "", "1024", "1024" },
	{ "sysctl", "net.ipv4.tcp_rmem", "", "4096\t87380   6291456\n", "4096 87380 6291456" },
	{ "sysctl", "kernel.sched_x", "", " 007 ", "7" },
	{ "sysfs", "kernel/mm/transparent_hugepage/enabled", "", "always [madvise] never", "madvise" },
	{ "net", "eth*", "mtu", "09000", "9000" },
	{ "sysctl", "net.core.somaxconn", "", "0x200", "512" },
	{ "sysctl", "kernel.x", "", " 0X1f  -0x10 0x ", "31 -16 0x" },
	{ "blockdev", "sd*", "nr_requests", "0x100", "256" },
	{ "sysfs", "/sys/kernel/x", "", "0xffffffffffffffff", "18446744073709551615" },
	{ "lustre", "llite.*.max_cached_mb", "", "users: 4\nmax_cached_mb: 15958\nused_mb: 3\n", "15958" },
	{ "lustre", "llite.*.max_cached_mb", "", "2G", "2048" },
	{ "gpfs", "pagePool", "", "16G", "17179869184" },
	{ "gpfs", "maxBlockSize", "", "4M", "4194304" },
};

START_TEST(test_normalise)
{
	const struct norm_case *c = &norm_cases[_i];
	char out[NORM_VALUE_MAX], msg[256];

	ck_assert_int_eq(norm_setting(c->driver, c->key, c->attr, c->in, out, sizeof(out), msg,
	    sizeof(msg)), 0);
	ck_assert_str_eq(out, c->out);
}
END_TEST

START_TEST(test_norm_equal)
{
	ck_assert(norm_equal("sysctl", "vm.x", "", "16", "016"));
	ck_assert(!norm_equal("sysctl", "vm.x", "", "abc", "abd"));
	ck_assert(!norm_equal("sysctl", "vm.x", "", "16", "160"));
	ck_assert(norm_equal("blockdev", "sd*", "read_ahead_kb", "16M", "16384"));
	ck_assert(!norm_equal("blockdev", "sd*", "read_ahead_kb", "16M", "16383"));
	ck_assert(norm_equal("blockdev", "sd*", "scheduler", "[none] mq-deadline", "none"));
	ck_assert(norm_equal("sysctl", "net.ipv4.tcp_wmem", "", "4096 16384  4194304",
	    "4096\t16384\t4194304"));
	ck_assert(!norm_equal("sysctl", "net.ipv4.tcp_wmem", "", "4096 16384", "409616384"));
}
END_TEST

START_TEST(test_lustre_names)
{
	static const char *const c[][2] = {
		{ "osc.*OST*.max_rpcs_in_flight", "osc/*OST*/max_rpcs_in_flight" },
		{ "ldlm.namespaces.*.lru_size", "ldlm/namespaces/*/lru_size" },
		{ "timeout", "timeout" },
		{ "mgc.MGC192.168.1.1@o2ib.import", "mgc/MGC192.168.1.1@o2ib/import" },
		{ "osc.fs-OST0000-osc-10.0.0.3@tcp.state", "osc/fs-OST0000-osc-10.0.0.3@tcp/state" },
		{ "ldlm.namespaces.0@lo.lru_size", "ldlm/namespaces/0@lo/lru_size" },
	};
	char out[256];

	for (size_t i = 0; i < nitems(c); i++) {
		ck_assert_int_eq(lustre_param_path(c[i][0], out, sizeof(out)), 0);
		ck_assert_str_eq(out, c[i][1]);
	}
}
END_TEST

/* ------------------------------------------------------------ fake tree */
static void
fake_tree(void)
{
	const char *osc[] = { "fs-OST0000-osc-ffff8801", "fs-OST0001-osc-ffff8801",
		"fs-OST0002-osc-ffff8801", "fs-MDT0000-mdc-ffff8801" };

	/* a fake Lustre client: three OSCs and an MDC-like entry under osc/ */
	for (size_t i = 0; i < nitems(osc); i++) {
		char p[256];

		snprintf(p, sizeof(p), "/sys/fs/lustre/osc/%s/max_rpcs_in_flight", osc[i]);
		put(p, "8\n");
		snprintf(p, sizeof(p), "/proc/fs/lustre/osc/%s/checksums", osc[i]);
		put(p, "1\n");
	}
	/* the same parameter under /proc too: /sys wins, it must not be written twice */
	put("/proc/fs/lustre/osc/fs-OST0000-osc-ffff8801/max_rpcs_in_flight", "8\n");
	put("/sys/fs/lustre/mgc/MGC192.168.1.1@o2ib/ir_timeout", "30\n");
	put("/sys/fs/lustre/timeout", "100\n");
	put("/proc/sys/vm/dirty_ratio", "20\n");
	put("/proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
	put("/proc/fs/nfsd/threads", "8\n");
	put("/sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
	put("/sys/block/fakea/queue/scheduler", "none [mq-deadline] kyber\n");
	put("/sys/block/fakea/queue/read_ahead_kb", "128\n");
	put("/sys/block/fakea/queue/rotational", "0\n");
	put("/sys/block/fakeb/queue/scheduler", "[none] mq-deadline\n");
	put("/sys/block/fakeb/queue/read_ahead_kb", "128\n");
	put("/sys/block/fakeb/queue/rotational", "1\n");
}

START_TEST(test_resolve)
{
	Knob__ApplyResult r;
	static const struct s v[] = {
		{ "lustre", "osc.*OST*.max_rpcs_in_flight", NULL, "16", 0, NULL },
		{ "lustre", "osc.*.checksums", NULL, "0", 0, NULL },
		{ "lustre", "mgc.MGC192.168.1.1@o2ib.ir_timeout", NULL, "60", 0, NULL },
		{ "lustre", "llite.*.max_read_ahead_mb", NULL, "1024", 0, NULL },
		{ "blockdev", "fake*", "scheduler", "none", 0, "rotational=0" },
		{ "sysctl", "net.ipv4.tcp_rmem", NULL, "4096 131072    6291456", 0, NULL },
		{ "sysfs", "kernel/mm/transparent_hugepage/enabled", NULL, "never", 0, NULL },
	};

	fake_tree();
	ag = mk_agent(root);
	do_apply(ag, "p", v, nitems(v), 1, 0, &r);
	dump(r.keys, r.n_keys);
	/* 3 OSTs (not the MDT), 4 checksums, 1 NID entry, 1 unsupported, 1 device, 2 */
	ck_assert_int_eq(r.n_keys, 3 + 4 + 1 + 1 + 1 + 1 + 1);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "osc.*OST*.max_rpcs_in_flight",
	    "osc.fs-OST0001-osc-ffff8801.max_rpcs_in_flight")->state, KNOB__KEY_STATE__KEY_WOULD_CHANGE);
	ck_assert_str_eq(find_key(r.keys, r.n_keys, "mgc.MGC192.168.1.1@o2ib.ir_timeout", NULL)->target,
	    "mgc.MGC192.168.1.1@o2ib.ir_timeout");
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "llite.*.max_read_ahead_mb", NULL)->state,
	    KNOB__KEY_STATE__KEY_UNSUPPORTED);
	ck_assert_str_eq(find_key(r.keys, r.n_keys, "fake*", NULL)->target, "fakea scheduler");
	ck_assert_str_eq(find_key(r.keys, r.n_keys, "fake*", NULL)->before, "mq-deadline");
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "net.ipv4.tcp_rmem", NULL)->state,
	    KNOB__KEY_STATE__KEY_UNCHANGED);
	ck_assert_str_eq(find_key(r.keys, r.n_keys, "kernel/mm/transparent_hugepage/enabled",
	    NULL)->before, "always");
	/* --check wrote nothing and journaled nothing */
	ck_assert_str_eq(get("/sys/fs/lustre/osc/fs-OST0001-osc-ffff8801/max_rpcs_in_flight"), "8");
	ck_assert_str_eq(get("/sys/block/fakea/queue/scheduler"), "none [mq-deadline] kyber");
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
	tune_apply_result_free(&r);
}
END_TEST

/* Apply, verify, drift, a second profile, rollback: on the fake tree. */
/* Open file descriptors of this process. */
static int
count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own */
}

START_TEST(test_transaction)
{
	Knob__ApplyResult r;
	Knob__VerifyResult v;
	Knob__RollbackResult rb;
	int fds;
	static const struct s p1[] = {
		{ "lustre", "osc.*OST*.max_rpcs_in_flight", NULL, "16", 0, NULL },
		{ "sysctl", "vm.dirty_ratio", NULL, "10", 0, NULL },
		{ "blockdev", "fakeb", "read_ahead_kb", "4M", 0, NULL },
		{ "nfsd", "threads", NULL, "256", 0, NULL },
	};
	static const struct s p2[] = {
		{ "sysctl", "vm.dirty_ratio", NULL, "5", 0, NULL },
		{ "sysfs", "/sys/kernel/mm/transparent_hugepage/enabled", NULL, "never", 0, NULL },
	};

	fake_tree();
	ag = mk_agent(root);
	fds = count_fds();
	do_apply(ag, "p1", p1, nitems(p1), 0, 0, &r);
	dump(r.keys, r.n_keys);
	/* each file is opened once per transaction, and closed at its end */
	ck_assert_int_eq(count_fds(), fds);
	ck_assert_int_eq(r.reverted, 0);
	all_changed(&r);
	ck_assert_int_eq(r.n_keys, 6);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/proc/sys/vm/dirty_ratio"), "10");
	ck_assert_str_eq(get("/sys/block/fakeb/queue/read_ahead_kb"), "4096");
	ck_assert_str_eq(get("/proc/fs/nfsd/threads"), "256");
	/* /proc copy of OST0000 not touched: the /sys one hides it */
	ck_assert_str_eq(get("/proc/fs/lustre/osc/fs-OST0000-osc-ffff8801/max_rpcs_in_flight"), "8");
	ck_assert_str_eq(active_pub(ag, 0), "p1");
	ck_assert_int_eq(ag->tune->j.norig, 6);

	/* applying again changes nothing */
	do_apply(ag, "p1", p1, nitems(p1), 0, 0, &r);
	for (size_t i = 0; i < r.n_keys; i++)
		ck_assert_int_eq(r.keys[i]->state, KNOB__KEY_STATE__KEY_UNCHANGED);
	tune_apply_result_free(&r);

	/* drift behind knob's back: exactly that key */
	put("/proc/sys/vm/dirty_ratio", "33\n");
	do_verify(ag, p1, nitems(p1), &v);
	dump(v.keys, v.n_keys);
	for (size_t i = 0; i < v.n_keys; i++)
		ck_assert_int_eq(v.keys[i]->state, strcmp(v.keys[i]->key, "vm.dirty_ratio") == 0 ?
		    KNOB__KEY_STATE__KEY_DRIFT : KNOB__KEY_STATE__KEY_OK);
	ck_assert_str_eq(find_key(v.keys, v.n_keys, "vm.dirty_ratio", NULL)->before, "33");
	ck_assert_str_eq(v.active_profile, "p1");
	tune_verify_result_free(&v);

	/* switching to a second profile: p1's keys that p2 does not set go
	 * back to their originals in the same transaction; dirty_ratio keeps
	 * its first original (20, not 33 nor 10); THP is added */
	do_apply(ag, "p2", p2, nitems(p2), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 0);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "fakeb", NULL)->state,
	    KNOB__KEY_STATE__KEY_RESTORED);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "threads", NULL)->state,
	    KNOB__KEY_STATE__KEY_RESTORED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/sys/block/fakeb/queue/read_ahead_kb"), "128");
	ck_assert_str_eq(get("/proc/fs/nfsd/threads"), "8");
	ck_assert_str_eq(get("/sys/fs/lustre/osc/fs-OST0002-osc-ffff8801/max_rpcs_in_flight"), "8");
	ck_assert_str_eq(get("/proc/sys/vm/dirty_ratio"), "5");
	ck_assert_int_eq(ag->tune->j.norig, 2);
	ck_assert_str_eq(ag->tune->j.orig[journal_find(ag->tune->j.orig, ag->tune->j.norig,
	    "sysctl", "/proc/sys/vm/dirty_ratio", "")].value, "20");
	ck_assert_str_eq(active_pub(ag, 0), "p2");

	/* --stack: p1 on top of p2, p2's THP stays; active is "p2+p1" */
	apply_stack = 1;
	do_apply(ag, "p1", p1, nitems(p1), 0, 0, &r);
	ck_assert_int_eq(r.reverted, 0);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/sys/kernel/mm/transparent_hugepage/enabled"), "never");
	ck_assert_str_eq(get("/proc/sys/vm/dirty_ratio"), "10");
	ck_assert_int_eq(ag->tune->j.norig, 7);
	ck_assert_str_eq(active_pub(ag, 0), "p2+p1");
	ck_assert_int_eq(ag->tune->j.nset, 5);	/* p2's THP + p1's four */

	/* the journal survives a restart of the agent */
	rm_agent(ag);
	ag = mk_agent(root);
	ck_assert_str_eq(active_pub(ag, 0), "p2+p1");
	ck_assert_int_eq(ag->tune->j.norig, 7);

	fds = count_fds();
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_int_eq(count_fds(), fds);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_eq(rb.n_keys, 7);
	for (size_t i = 0; i < rb.n_keys; i++)
		ck_assert_int_eq(rb.keys[i]->state, KNOB__KEY_STATE__KEY_RESTORED);
	ck_assert_str_eq(rb.profile, "p2+p1");
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(get("/proc/sys/vm/dirty_ratio"), "20");
	ck_assert_str_eq(get("/sys/block/fakeb/queue/read_ahead_kb"), "128");
	ck_assert_str_eq(get("/proc/fs/nfsd/threads"), "8");
	ck_assert_str_eq(get("/sys/fs/lustre/osc/fs-OST0002-osc-ffff8801/max_rpcs_in_flight"), "8");
	ck_assert_str_eq(get("/sys/kernel/mm/transparent_hugepage/enabled"), "always");
	ck_assert_str_eq(active_pub(ag, 0), "");
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_int_eq(rb.n_keys, 0);
	tune_rollback_result_free(&rb);
}
END_TEST

/* More files than a transaction keeps open (TUNE_FDS_MAX): the ones past
 * it go the old way, every value lands exactly (shorter values than the
 * files held, too), verify sees them, rollback brings every original back
 * and no descriptor is left open. */
START_TEST(test_many_keys)
{
	enum { N = TUNE_FDS_MAX + 22 };
	static struct s v[N];
	static char keys[N][64], vals[N][16];
	Knob__ApplyResult r;
	Knob__VerifyResult vr;
	Knob__RollbackResult rb;
	char rel[96];
	int fds;

	fake_tree();
	for (int i = 0; i < N; i++) {
		snprintf(rel, sizeof(rel), "/sys/kernel/knobtest/k%03d", i);
		put(rel, "%d000000\n", i + 1);	/* originals longer than the values */
		snprintf(keys[i], sizeof(keys[i]), "%s", rel);
		snprintf(vals[i], sizeof(vals[i]), "%d", i);
		v[i] = (struct s){ "sysfs", keys[i], NULL, vals[i], 0, NULL };
	}
	ag = mk_agent(root);
	fds = count_fds();
	do_apply(ag, "many", v, N, 0, 0, &r);
	ck_assert_int_eq(r.reverted, 0);
	ck_assert_int_eq(r.n_keys, N);
	all_changed(&r);
	tune_apply_result_free(&r);
	ck_assert_int_eq(count_fds(), fds);
	for (int i = 0; i < N; i++)
		ck_assert_str_eq(get(keys[i]), vals[i]);
	do_verify(ag, v, N, &vr);
	for (size_t i = 0; i < vr.n_keys; i++)
		ck_assert_int_eq(vr.keys[i]->state, KNOB__KEY_STATE__KEY_OK);
	tune_verify_result_free(&vr);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_int_eq(rb.n_keys, N);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	ck_assert_int_eq(count_fds(), fds);
	for (int i = 0; i < N; i++) {
		char want[16];

		snprintf(want, sizeof(want), "%d000000", i + 1);
		ck_assert_str_eq(get(keys[i]), want);
	}
}
END_TEST

/* The bytes of a file under the sysroot equal want exactly (no leftover
 * tail of a longer old value). */
static void
raw_is(const char *rel, const char *want)
{
	char path[PATH_MAX];
	char *b;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	b = cu_slurp(path);
	ck_assert_msg(strcmp(b, want) == 0, "%s holds \"%.40s\" (%zu bytes), not \"%.40s\" (%zu)", rel, b,
	    strlen(b), want, strlen(want));
	free(b);
}

/* A first write leaves out O_TRUNC only when the new value covers every
 * byte the file held: a value shorter than the old content, newline
 * included, is cut to its length; a longer or equal one overwrites it; a
 * file longer than a read takes is of unknown length, so even a value as
 * long as the read is cut.  Rollback restores each (the long file's
 * original is what a read takes: real sysfs values fit in a page). */
START_TEST(test_write_lengths)
{
	static char big[NORM_VALUE_MAX + 100], bigval[NORM_VALUE_MAX];
	static struct s v[] = {
		{ "sysfs", "/sys/kernel/knobtest/longer", NULL, "4096", 0, NULL },
		{ "sysfs", "/sys/kernel/knobtest/shorter", NULL, "8", 0, NULL },
		{ "sysfs", "/sys/kernel/knobtest/newline", NULL, "5678", 0, NULL },
		{ "sysfs", "/sys/kernel/knobtest/equal", NULL, "456", 0, NULL },
		{ "sysfs", "/sys/kernel/knobtest/big", NULL, bigval, 0, NULL },
	};
	Knob__ApplyResult r;
	Knob__RollbackResult rb;

	fake_tree();
	memset(big, '7', sizeof(big) - 1);
	memset(bigval, '8', sizeof(bigval) - 1);
	put("/sys/kernel/knobtest/longer", "7\n");
	put("/sys/kernel/knobtest/shorter", "65536\n");
	put("/sys/kernel/knobtest/newline", "1234\n");
	put("/sys/kernel/knobtest/equal", "123");
	put("/sys/kernel/knobtest/big", "%s", big);
	ag = mk_agent(root);
	do_apply(ag, "lengths", v, nitems(v), 0, 0, &r);
	ck_assert_int_eq(r.reverted, 0);
	all_changed(&r);
	tune_apply_result_free(&r);
	for (size_t i = 0; i < nitems(v); i++)
		raw_is(v[i].key, v[i].value);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(get("/sys/kernel/knobtest/longer"), "7");
	ck_assert_str_eq(get("/sys/kernel/knobtest/shorter"), "65536");
	ck_assert_str_eq(get("/sys/kernel/knobtest/newline"), "1234");
	ck_assert_str_eq(get("/sys/kernel/knobtest/equal"), "123");
	big[NORM_VALUE_MAX - 1] = '\0';
	raw_is("/sys/kernel/knobtest/big", big);
}
END_TEST

/* Matches of pattern (below root) through the transaction's glob. */
static size_t
glob_count(const char *pattern)
{
	char full[PATH_MAX];
	glob_t g;
	size_t n;

	snprintf(full, sizeof(full), "%s%s", root, pattern);
	n = tune_fd_glob(full, &g) == 0 ? g.gl_pathc : 0;
	globfree(&g);
	return n;
}

/* A transaction lists each directory once for its globs and keeps the
 * listing until its next write, which may add entries (a scheduler change
 * adds entries under queue/iosched): an entry made before a write is not
 * seen, one made then is.  Past TUNE_DIRS_MAX kept listings a glob lists afresh and
 * is still right; the end of the transaction leaves no descriptor open. */
START_TEST(test_glob_listing_kept)
{
	struct tune_fds c;
	char rel[96], full[PATH_MAX];
	int fds;

	fake_tree();
	for (int i = 0; i < 3; i++) {
		snprintf(rel, sizeof(rel), "/sys/kernel/knobglob/e%d/v", i);
		put(rel, "1\n");
	}
	for (int i = 0; i < TUNE_DIRS_MAX + 4; i++) {
		snprintf(rel, sizeof(rel), "/sys/kernel/knobglob/d%02d/x", i);
		put(rel, "1\n");
	}
	fds = count_fds();
	tune_fd_begin(&c, root);
	ck_assert_uint_eq(glob_count("/sys/kernel/knobglob/e*/v"), 3);
	put("/sys/kernel/knobglob/e3/v", "1\n");
	ck_assert_uint_eq(glob_count("/sys/kernel/knobglob/e*/v"), 3);	/* kept */
	snprintf(full, sizeof(full), "%s/sys/kernel/knobglob/e0/v", root);
	ck_assert_int_eq(tune_fd_write(full, "2"), 0);
	ck_assert_uint_eq(glob_count("/sys/kernel/knobglob/e*/v"), 4);	/* listed again */
	for (int i = 0; i < TUNE_DIRS_MAX + 4; i++) {
		snprintf(rel, sizeof(rel), "/sys/kernel/knobglob/d%02d/*", i);
		ck_assert_uint_eq(glob_count(rel), 1);
	}
	put("/sys/kernel/knobglob/d19/y", "1\n");	/* not kept: the cache was full */
	ck_assert_uint_eq(glob_count("/sys/kernel/knobglob/d19/*"), 2);
	tune_fd_end(&c);
	ck_assert_int_eq(count_fds(), fds);
	ck_assert_str_eq(get("/sys/kernel/knobglob/e0/v"), "2");
}
END_TEST

/* ------------------------------------------------------------ one key per target */
/* Apply v as profile on ag: every key changed, nothing reverted, nkeys
 * keys; the result stays in r (caller frees). */
static void
apply_changed(const char *profile, const struct s *v, size_t n, size_t nkeys,
    Knob__ApplyResult *r)
{
	do_apply(ag, profile, v, n, 0, 0, r);
	dump(r->keys, r->n_keys);
	ck_assert_int_eq(r->reverted, 0);
	ck_assert_uint_eq(r->n_keys, nkeys);
	all_changed(r);
}

/* Verify of v on ag is ok for every key, then rollback restores every
 * original (complete). */
static void
verify_ok_then_rollback(const struct s *v, size_t n)
{
	Knob__VerifyResult vr;
	Knob__RollbackResult rb;

	do_verify(ag, v, n, &vr);
	dump(vr.keys, vr.n_keys);
	for (size_t i = 0; i < vr.n_keys; i++)
		ck_assert_msg(vr.keys[i]->state == KNOB__KEY_STATE__KEY_OK, "%s: %s",
		    vr.keys[i]->target, tune_key_state_name(vr.keys[i]->state));
	tune_verify_result_free(&vr);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_msg(rb.complete, "%s", rb.message);
	tune_rollback_result_free(&rb);
}

/* The message of the result for target (a substring of KeyResult.target)
 * holds want. */
static void
msg_has(const Knob__ApplyResult *r, const char *key, const char *target, const char *want)
{
	const Knob__KeyResult *k = find_key(r->keys, r->n_keys, key, target);

	ck_assert_msg(strstr(k->message, want) != NULL, "%s: \"%s\" lacks \"%s\"", k->target,
	    k->message, want);
}

static const char *const rp_ifs[] = { "all", "default", "eth0", "eth1" };

/* The fake tree with rp_filter of every interface at 2 (not the default). */
static void
fake_rp_filter(void)
{
	char rel[96];

	fake_tree();
	for (size_t i = 0; i < nitems(rp_ifs); i++) {
		snprintf(rel, sizeof(rel), "/proc/sys/net/ipv4/conf/%s/rp_filter", rp_ifs[i]);
		put(rel, "2\n");
	}
}

/* rp_filter of every interface is want, eth0's is eth0; vm.dirty_ratio is
 * dirty. */
static void
rp_filter_is(const char *want, const char *eth0, const char *dirty)
{
	char rel[96];

	for (size_t i = 0; i < nitems(rp_ifs); i++) {
		snprintf(rel, sizeof(rel), "/proc/sys/net/ipv4/conf/%s/rp_filter", rp_ifs[i]);
		ck_assert_str_eq(get(rel), strcmp(rp_ifs[i], "eth0") == 0 ? eth0 : want);
	}
	ck_assert_str_eq(get("/proc/sys/vm/dirty_ratio"), dirty);
}

/* Keys of one request that name the same target: a glob and an exact key
 * (the exact key wins, before or after the glob), one sysctl spelt two
 * ways (the later wins).  Before, both became keys of the target, their
 * writes fought ("wrote 1, reads 0 after 3 passes: clobbered by sysctl
 * net.ipv4.conf.eth0.rp_filter") and every change was reverted.  Now the
 * apply holds with the winner's value on the shared target and the glob's
 * on the others, the winner's message names the key it beat, verify is
 * ok, and rollback brings every non-default original back. */
START_TEST(test_glob_and_exact)
{
	static const struct s v[] = {
		{ "sysctl", "net.ipv4.conf.*.rp_filter", NULL, "1", 0, NULL },
		{ "sysctl", "net.ipv4.conf.eth0.rp_filter", NULL, "0", 0, NULL },
		{ "blockdev", "fakeb", "read_ahead_kb", "4M", 0, NULL },
		{ "blockdev", "fake*", "read_ahead_kb", "1024", 0, NULL },
		{ "sysctl", "vm/dirty_ratio", NULL, "30", 0, NULL },
		{ "sysctl", "vm.dirty_ratio", NULL, "10", 0, NULL },
	};
	Knob__ApplyResult r;

	fake_rp_filter();
	ag = mk_agent(root);
	apply_changed("p", v, nitems(v), 4 + 2 + 1, &r);
	msg_has(&r, "net.ipv4.conf.eth0.rp_filter", NULL,
	    "instead of net.ipv4.conf.*.rp_filter=1: an exact key wins over a glob");
	msg_has(&r, "fakeb", NULL, "instead of fake*=1024: an exact key wins over a glob");
	msg_has(&r, "vm.dirty_ratio", NULL, "instead of vm/dirty_ratio=30: the later key");
	tune_apply_result_free(&r);
	rp_filter_is("1", "0", "10");
	ck_assert_str_eq(get("/sys/block/fakeb/queue/read_ahead_kb"), "4096");
	ck_assert_str_eq(get("/sys/block/fakea/queue/read_ahead_kb"), "1024");
	ck_assert_int_eq(ag->tune->j.norig, 7);
	verify_ok_then_rollback(v, nitems(v));
	rp_filter_is("2", "2", "20");
	ck_assert_str_eq(get("/sys/block/fakeb/queue/read_ahead_kb"), "128");
	ck_assert_str_eq(get("/sys/block/fakea/queue/read_ahead_kb"), "128");
}
END_TEST

/* "All interfaces 1, but eth0 0" through inheritance: the parent's glob,
 * the child's exact key; and the child's vm.dirty_ratio overrides the
 * parent's vm/dirty_ratio (one setting spelt two ways).  The resolved
 * profile applies, verifies and rolls back. */
START_TEST(test_parent_glob_child_exact)
{
	struct strvec errs = { 0 };
	Knob__ApplyResult r;
	struct profile *pr;
	struct s *v;
	char path[PATH_MAX];

	cu_write_at(tmp, "base.xml", 0644, "<profile name=\"base\">\n"
	    "  <sysctl key=\"net.ipv4.conf.*.rp_filter\" value=\"1\"/>\n"
	    "  <sysctl key=\"vm/dirty_ratio\" value=\"30\"/>\n</profile>\n");
	cu_write_at(tmp, "child.xml", 0644, "<profile name=\"child\" extends=\"base\">\n"
	    "  <sysctl key=\"net.ipv4.conf.eth0.rp_filter\" value=\"0\"/>\n"
	    "  <sysctl key=\"vm.dirty_ratio\" value=\"10\"/>\n</profile>\n");
	snprintf(path, sizeof(path), "%s/child.xml", tmp);
	pr = profile_load(path, &errs);
	ck_assert_msg(pr != NULL, "%s", errs.n ? errs.v[0] : "?");
	ck_assert_uint_eq(pr->n, 3);
	ck_assert_str_eq(pr->s[1].key, "vm.dirty_ratio");	/* overridden in place */
	v = xcalloc(pr->n, sizeof(*v));
	for (size_t i = 0; i < pr->n; i++)
		v[i] = (struct s){ pr->s[i].driver, pr->s[i].key, pr->s[i].attr, pr->s[i].value,
		    pr->s[i].persistent, pr->s[i].match };
	fake_rp_filter();
	ag = mk_agent(root);
	apply_changed(pr->name, v, pr->n, 4 + 1, &r);
	tune_apply_result_free(&r);
	rp_filter_is("1", "0", "10");
	verify_ok_then_rollback(v, pr->n);
	rp_filter_is("2", "2", "20");
	free(v);
	profile_free(pr);
	strvec_free(&errs);
}
END_TEST

/* ------------------------------------------------------------ hex values */
/* "0x" integers are written as their decimal.  The real net.core.somaxconn
 * in a private network namespace of this forked test process: the kernel
 * takes 0x200 and reads back 512, which never held against "0x200" ("wrote
 * 0x200, reads 512 after 3 passes", reverted); then an integer attribute
 * of a fake device (0x100 was refused as "not an integer"). */
START_TEST(test_hex_values)
{
	static const struct s soma[] = {
		{ "sysctl", "net.core.somaxconn", NULL, "0x200", 0, NULL },
	};
	static const struct s dev[] = {
		{ "blockdev", "fakeb", "nr_requests", "0x100", 0, NULL },
	};
	Knob__ApplyResult r;
	char soma0[64], st[sizeof(state)];

	ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
	ck_assert_int_gt(read_small_file("/proc/sys/net/core/somaxconn", soma0, sizeof(soma0)), 0);
	ck_assert_str_ne(strtrim(soma0), "512");
	snprintf(st, sizeof(st), "%s", state);
	snprintf(state, sizeof(state), "%s/state-ns", tmp);
	ag = mk_agent("");
	apply_changed("hex", soma, nitems(soma), 1, &r);
	ck_assert_str_eq(r.keys[0]->after, "512");
	tune_apply_result_free(&r);
	ck_assert_str_eq(cu_readf("/proc/sys/net/core/somaxconn"), "512");
	verify_ok_then_rollback(soma, nitems(soma));
	ck_assert_str_eq(cu_readf("/proc/sys/net/core/somaxconn"), soma0);
	rm_agent(ag);

	snprintf(state, sizeof(state), "%s", st);
	fake_tree();
	put("/sys/block/fakeb/queue/nr_requests", "64\n");
	ag = mk_agent(root);
	apply_changed("hex", dev, nitems(dev), 1, &r);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/sys/block/fakeb/queue/nr_requests"), "256");
	verify_ok_then_rollback(dev, nitems(dev));
	ck_assert_str_eq(get("/sys/block/fakeb/queue/nr_requests"), "64");
}
END_TEST

/* ------------------------------------------------------------ Lustre max_cached_mb */
/* A stand-in for Lustre's llite.*.max_cached_mb (no Lustre here: a fake
 * tree under --sysroot, given Lustre's write semantics by this program's
 * write(2), see hooked_write): the file reads as a block of "name: value"
 * lines (lproc_llite.c max_cached_mb_seq_show); a write of a size in MiB,
 * or of a block holding "max_cached_mb: N", sets the limit, and the block
 * shows it. */
#define CACHED_MB "/sys/fs/lustre/llite/knobfs-ffff8801/max_cached_mb"
static int cached_on;		/* the stand-in is on */

/* The block the stand-in shows for a limit of mb, into buf. */
static void
fake_cached_block(unsigned long mb, char *buf, size_t len)
{
	snprintf(buf, len, "users: 4\nmax_cached_mb: %lu\nused_mb: 1200\nunused_mb: %lu\n"
	    "reclaim_count: 0\n", mb, mb > 1200 ? mb - 1200 : 0);
}

/* A write to max_cached_mb as Lustre answers it: 1 with *ret; else 0.
 * The file is rewritten in place by plain system calls. */
static int
fake_cached_write(const char *path, const void *buf, size_t len, ssize_t *ret)
{
	char v[256], block[256];
	const char *p;
	size_t pl = strlen(path), cl = strlen(CACHED_MB);
	int fd;

	if (pl < cl || strcmp(path + pl - cl, CACHED_MB) != 0)
		return 0;
	snprintf(v, sizeof(v), "%.*s", (int)(len < 255 ? len : 255), (const char *)buf);
	p = strstr(v, "max_cached_mb:") ? strstr(v, "max_cached_mb:") + 14 : v;
	fake_cached_block(strtoul(p, NULL, 10), block, sizeof(block));
	if ((fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)) >= 0) {
		if (syscall(SYS_write, fd, block, strlen(block)) < 0)
			fprintf(stderr, "fake %s: %s\n", path, strerror(errno));
		close(fd);
	}
	*ret = (ssize_t)len;
	return 1;
}

/* llite.*.max_cached_mb reads as a block whose max_cached_mb: field is the
 * value (before, the whole block was compared with the profile's number:
 * verify reported drift for ever and an apply was reverted): apply holds,
 * verify is ok, rollback brings the limit back. */
START_TEST(test_lustre_max_cached_mb)
{
	static const struct s set[] = {
		{ "lustre", "llite.*.max_cached_mb", NULL, "1G", 0, NULL },
	};
	Knob__ApplyResult r;
	char block[256];

	fake_cached_block(15958, block, sizeof(block));
	put(CACHED_MB, "%s", block);
	cached_on = 1;
	ag = mk_agent(root);
	apply_changed("lustre", set, nitems(set), 1, &r);
	ck_assert_str_eq(r.keys[0]->before, "15958");
	ck_assert_str_eq(r.keys[0]->after, "1024");
	tune_apply_result_free(&r);
	ck_assert_ptr_nonnull(strstr(get(CACHED_MB), "max_cached_mb: 1024\n"));
	verify_ok_then_rollback(set, nitems(set));
	ck_assert_ptr_nonnull(strstr(get(CACHED_MB), "max_cached_mb: 15958\n"));
	cached_on = 0;
}
END_TEST

/* ------------------------------------------------------------ GPFS key case */
/* GPFS attribute names are case-insensitive (mmdiag's lookup already was):
 * pagePool is the pagepool, a size (before it normalised as text, so the
 * 75 % RAM check saw 16 bytes and let 16G through on a 16 GiB node), and
 * pagepool with pagePool in one request is one key (the later wins).
 * Stand-in mmdiag / mmchconfig scripts: no GPFS here. */
START_TEST(test_gpfs_key_case)
{
	static const struct s big[] = { { "gpfs", "pagePool", NULL, "16G", 0, NULL } };
	static const struct s two[] = {
		{ "gpfs", "pagepool", NULL, "2G", 0, NULL },
		{ "gpfs", "PagePool", NULL, "4G", 0, NULL },
	};
	static const struct s hex[] = { { "gpfs", "maxMBpS", NULL, "0x1000", 0, NULL } };
	Knob__ApplyResult r;
	char log[256], body[512];

	put("/proc/meminfo", "MemTotal:       16777216 kB\nMemFree:        1000 kB\n");
	script("/usr/lpp/mmfs/bin/mmdiag", "echo ' ! pagepool 1073741824'\necho ' ! maxMBpS 2048'\n");
	snprintf(log, sizeof(log), "%s/mmchconfig.log", tmp);
	snprintf(body, sizeof(body), "echo \"$*\" >> '%s'\n", log);
	script("/usr/lpp/mmfs/bin/mmchconfig", body);
	ag = mk_agent(root);
	do_apply(ag, "big", big, nitems(big), 1, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_WOULD_FAIL);
	ck_assert_str_eq(r.keys[0]->wanted, "17179869184");
	ck_assert_str_eq(r.keys[0]->before, "1073741824");
	tune_apply_result_free(&r);
	do_apply(ag, "two", two, nitems(two), 1, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.n_keys, 1);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_WOULD_CHANGE);
	ck_assert_str_eq(r.keys[0]->wanted, "4294967296");
	msg_has(&r, "PagePool", NULL, "instead of pagepool=2G: the later key");
	tune_apply_result_free(&r);
	/* a "0x" number goes to mmchconfig as its decimal (a unit as written) */
	do_apply(ag, "hex", hex, nitems(hex), 0, 0, &r);
	dump(r.keys, r.n_keys);
	tune_apply_result_free(&r);
	ck_assert_int_gt(read_small_file(log, body, sizeof(body)), 0);
	ck_assert_msg(strstr(body, "maxMBpS=4096 -i -N node01") != NULL, "%s", body);
}
END_TEST

/* A transaction opens its files relative to the sysroot's descriptor and
 * globs through it: a sysroot reached through a symlink, a device and a
 * Lustre target that are symlinks into /sys/devices (as sysfs has them),
 * a parameter only under the second Lustre root, and a tree without the
 * first Lustre root at all resolve, land and come back as they did by
 * full path; no descriptor is left open. */
START_TEST(test_sysroot_links)
{
	static const struct s v[] = {
		{ "lustre", "osc.*OST*.max_rpcs_in_flight", NULL, "16", 0, NULL },
		{ "lustre", "llite.*.max_read_ahead_mb", NULL, "512", 0, NULL },
		{ "blockdev", "fakec", "read_ahead_kb", "4096", 0, NULL },
	};
	static const struct s only_proc[] = {
		{ "lustre", "osc.*.checksums", NULL, "0", 0, NULL },
	};
	char link[PATH_MAX + 8], dir[PATH_MAX + 64];
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	int fds;

	fake_tree();
	put("/sys/devices/lustre/fs-OST0009-osc-ffff8801/max_rpcs_in_flight", "4\n");
	snprintf(dir, sizeof(dir), "%s/sys/fs/lustre/osc/fs-OST0009-osc-ffff8801", root);
	ck_assert_int_eq(symlink("../../../devices/lustre/fs-OST0009-osc-ffff8801", dir), 0);
	put("/proc/fs/lustre/llite/fs-ffff8801/max_read_ahead_mb", "64\n");
	put("/sys/devices/virtual/block/fakec/queue/read_ahead_kb", "256\n");
	snprintf(dir, sizeof(dir), "%s/sys/block/fakec", root);
	ck_assert_int_eq(symlink("../devices/virtual/block/fakec", dir), 0);
	snprintf(link, sizeof(link), "%s/rootlink", tmp);
	ck_assert_int_eq(symlink(root, link), 0);
	ag = mk_agent(link);
	fds = count_fds();
	do_apply(ag, "links", v, nitems(v), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 0);
	ck_assert_int_eq(r.n_keys, 3 + 1 + 1 + 1);	/* 4 OSTs, llite, fakec */
	all_changed(&r);
	tune_apply_result_free(&r);
	ck_assert_int_eq(count_fds(), fds);
	ck_assert_str_eq(get("/sys/devices/lustre/fs-OST0009-osc-ffff8801/max_rpcs_in_flight"), "16");
	ck_assert_str_eq(get("/sys/fs/lustre/osc/fs-OST0001-osc-ffff8801/max_rpcs_in_flight"), "16");
	ck_assert_str_eq(get("/proc/fs/lustre/osc/fs-OST0000-osc-ffff8801/max_rpcs_in_flight"), "8");
	ck_assert_str_eq(get("/proc/fs/lustre/llite/fs-ffff8801/max_read_ahead_mb"), "512");
	ck_assert_str_eq(get("/sys/devices/virtual/block/fakec/queue/read_ahead_kb"), "4096");
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	ck_assert_int_eq(count_fds(), fds);
	ck_assert_str_eq(get("/sys/devices/lustre/fs-OST0009-osc-ffff8801/max_rpcs_in_flight"), "4");
	ck_assert_str_eq(get("/proc/fs/lustre/llite/fs-ffff8801/max_read_ahead_mb"), "64");
	ck_assert_str_eq(get("/sys/devices/virtual/block/fakec/queue/read_ahead_kb"), "256");
	rm_agent(ag);

	/* no /sys/fs/lustre at all: the parameters under /proc are found */
	snprintf(dir, sizeof(dir), "rm -rf '%s/sys/fs/lustre'", root);
	ck_assert_int_eq(system(dir), 0);
	ag = mk_agent(root);
	do_apply(ag, "proc", only_proc, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.n_keys, 4);
	all_changed(&r);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/proc/fs/lustre/osc/fs-MDT0000-mdc-ffff8801/checksums"), "0");
}
END_TEST

/* Files closed after being opened for writing under the sysroot (IN_CLOSE_WRITE
 * events queued on fd), by name; "" when none. */
static const char *
closed_written(int fd)
{
	static char names[512];
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	names[0] = '\0';
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n; ) {
			struct inotify_event *ev = (struct inotify_event *)p;

			if ((ev->mask & IN_CLOSE_WRITE) && ev->len)
				snprintf(names + strlen(names), sizeof(names) - strlen(names),
				    "%s ", ev->name);
			p += sizeof(*ev) + ev->len;
		}
	return names;
}

/* A transaction opens for writing only the files it writes: a verify and a
 * key that already holds open nothing for writing (what audit rules and
 * inotify watchers see), and a changed key's file is closed after writing. */
START_TEST(test_writes_only_written)
{
	static const struct s v[] = {
		{ "sysctl", "vm.dirty_ratio", NULL, "20", 0, NULL },	/* holds already */
		{ "nfsd", "threads", NULL, "64", 0, NULL },
	};
	Knob__ApplyResult r;
	Knob__VerifyResult vr;
	char d1[256], d2[256];
	int in;

	fake_tree();
	ag = mk_agent(root);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	ck_assert_int_ge(in, 0);
	snprintf(d1, sizeof(d1), "%s/proc/sys/vm", root);
	snprintf(d2, sizeof(d2), "%s/proc/fs/nfsd", root);
	ck_assert_int_ge(inotify_add_watch(in, d1, IN_CLOSE_WRITE), 0);
	ck_assert_int_ge(inotify_add_watch(in, d2, IN_CLOSE_WRITE), 0);
	do_apply(ag, "p", v, nitems(v), 0, 0, &r);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "vm.dirty_ratio", NULL)->state,
	    KNOB__KEY_STATE__KEY_UNCHANGED);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "threads", NULL)->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(closed_written(in), "threads ");
	do_verify(ag, v, nitems(v), &vr);
	for (size_t i = 0; i < vr.n_keys; i++)
		ck_assert_int_eq(vr.keys[i]->state, KNOB__KEY_STATE__KEY_OK);
	tune_verify_result_free(&vr);
	ck_assert_str_eq(closed_written(in), "");
	close(in);
}
END_TEST

/* One target that cannot be written (a symbolic link where the attribute
 * file should be: readable, but writes use O_NOFOLLOW): the whole
 * transaction is reverted, key by key. */
/* rel under root as a symlink to rel.real, which holds value: a file the
 * agent does not write through (O_NOFOLLOW), so its write fails. */
static void
put_link(const char *rel, const char *value)
{
	char real[PATH_MAX], link[PATH_MAX], *base;

	snprintf(real, sizeof(real), "%s.real", rel);
	put(real, "%s", value);
	snprintf(link, sizeof(link), "%s%s", root, rel);
	base = strrchr(real, '/') + 1;
	ck_assert_int_eq(symlink(base, link), 0);
}

START_TEST(test_partial_failure)
{
	Knob__ApplyResult r;
	static const struct s v[] = {
		{ "sysctl", "vm.dirty_ratio", NULL, "10", 0, NULL },
		{ "blockdev", "fakea", "read_ahead_kb", "1024", 0, NULL },
		{ "blockdev", "fakeb", "nr_requests", "64", 0, NULL },
		{ "nfsd", "threads", NULL, "64", 0, NULL },
	};

	fake_tree();
	put_link("/sys/block/fakeb/queue/nr_requests", "128\n");
	ag = mk_agent(root);
	do_apply(ag, "p", v, nitems(v), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 1);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "vm.dirty_ratio", NULL)->state,
	    KNOB__KEY_STATE__KEY_REVERTED);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "fakea", NULL)->state,
	    KNOB__KEY_STATE__KEY_REVERTED);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "fakeb", NULL)->state,
	    KNOB__KEY_STATE__KEY_FAILED);
	ck_assert_ptr_nonnull(strstr(find_key(r.keys, r.n_keys, "fakeb", NULL)->message,
	    "/sys/block/fakeb/queue/nr_requests"));
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "threads", NULL)->state,
	    KNOB__KEY_STATE__KEY_SKIPPED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/proc/sys/vm/dirty_ratio"), "20");
	ck_assert_str_eq(get("/sys/block/fakea/queue/read_ahead_kb"), "128");
	ck_assert_str_eq(get("/proc/fs/nfsd/threads"), "8");
	ck_assert_str_eq(active_pub(ag, 0), "");
	ck_assert_int_eq(ag->tune->j.norig, 0);

	/* --keep-going: the others stay changed and are journaled */
	do_apply(ag, "p", v, nitems(v), 0, 1, &r);
	ck_assert_int_eq(r.reverted, 0);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "threads", NULL)->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/proc/fs/nfsd/threads"), "64");
	ck_assert_int_eq(ag->tune->j.norig, 3);
}
END_TEST

/* SIGKILL in the middle of a transaction (test pause after the first
 * write), restart: the originals are back, and the next apply journals the
 * true originals, not the half-applied values. */
START_TEST(test_crash_recovery)
{
	static const struct s v[] = {
		{ "sysctl", "vm.dirty_ratio", NULL, "10", 0, NULL },
		{ "blockdev", "fakea", "read_ahead_kb", "2048", 0, NULL },
		{ "nfsd", "threads", NULL, "64", 0, NULL },
	};
	Knob__ApplyResult r;
	pid_t pid;
	int st, i;

	fake_tree();
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct agent *a = mk_agent(root);
		Knob__ApplyRequest req = KNOB__APPLY_REQUEST__INIT;

		req.profile = (char *)(uintptr_t)"crashme";
		req.settings = mk_settings(v, nitems(v));
		req.n_settings = nitems(v);
		req.test_pause_ms = 3000;
		tune_apply(a, &req, &r);
		_exit(0);
	}
	/* wait for the first write, then kill */
	for (i = 0; i < 200 && strcmp(get("/proc/sys/vm/dirty_ratio"), "10") != 0; i++)
		usleep(20000);
	ck_assert_str_eq(get("/proc/sys/vm/dirty_ratio"), "10");
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	ck_assert(WIFSIGNALED(st));
	ck_assert_str_eq(get("/sys/block/fakea/queue/read_ahead_kb"), "128");

	ag = mk_agent(root);	/* recovery */
	ck_assert_str_eq(get("/proc/sys/vm/dirty_ratio"), "20");
	ck_assert_int_eq(ag->tune->j.in_txn, 0);
	ck_assert_int_eq(ag->tune->j.norig, 0);
	ck_assert_str_eq(active_pub(ag, 0), "");

	do_apply(ag, "again", v, nitems(v), 0, 0, &r);
	tune_apply_result_free(&r);
	ck_assert_str_eq(ag->tune->j.orig[journal_find(ag->tune->j.orig, ag->tune->j.norig,
	    "sysctl", "/proc/sys/vm/dirty_ratio", "")].value, "20");
	ck_assert_str_eq(ag->tune->j.orig[journal_find(ag->tune->j.orig, ag->tune->j.norig,
	    "nfsd", "/proc/fs/nfsd/threads", "")].value, "8");
}
END_TEST

/* GPFS through stand-in mmchconfig / mmdiag scripts (there is no GPFS
 * here): immediate change, pending-restart, stderr surfaced, timeout. */
/* A GPFS config file, TMP/gpfs.cfg (its path into cfg), holding text,
 * and a stand-in mmdiag that prints it the way mmdiag --config does. */
static void
mmdiag_standin(char *cfg, size_t len, const char *text)
{
	char body[1024];
	FILE *f;

	snprintf(cfg, len, "%s/gpfs.cfg", tmp);
	f = fopen(cfg, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	snprintf(body, sizeof(body),
	    "[ \"$1\" = --config ] || exit 2\necho '=== mmdiag: config ==='\n"
	    "sed 's/^/ ! /' '%s'\n", cfg);
	script("/usr/lpp/mmfs/bin/mmdiag", body);
}

START_TEST(test_gpfs_standin)
{
	Knob__ApplyResult r;
	char cfg[256], body[2048];
	static const struct s ok[] = {
		{ "gpfs", "pagepool", NULL, "16G", 0, NULL },
		{ "gpfs", "maxFilesToCache", NULL, "100000", 0, NULL },
	};
	static const struct s bad[] = { { "gpfs", "bogusAttr", NULL, "1", 0, NULL } };
	static const struct s slow[] = { { "gpfs", "maxMBpS", NULL, "20000", 0, NULL } };

	mmdiag_standin(cfg, sizeof(cfg), "pagepool 1073741824\nmaxFilesToCache 4000\nmaxMBpS 2048\n");
	/* stand-in mmchconfig: KEY=VALUE [-i] -N node; maxFilesToCache needs a
	 * restart (refuses -i), maxMBpS hangs, unknown keys fail on stderr */
	snprintf(body, sizeof(body),
	    "kv=$1; k=${kv%%%%=*}; v=${kv#*=}; shift\n"
	    "echo \"$kv $*\" >> '%s/mmchconfig.log'\n"
	    "case $k in\n"
	    "maxMBpS) sleep 10;;\n"
	    "maxFilesToCache) if [ \"$1\" = -i ]; then echo 'mmchconfig: Attribute maxFilesToCache cannot be changed immediately; restart GPFS' >&2; exit 1; fi; exit 0;;\n"
	    "pagepool) case $v in *G) v=$(( ${v%%G} * 1073741824 ));; esac\n"
	    "  sed -i \"s/^pagepool .*/pagepool $v/\" '%s'; exit 0;;\n"
	    "*) echo \"mmchconfig: Unknown attribute $k\" >&2; exit 1;;\n"
	    "esac\n", tmp, cfg);
	script("/usr/lpp/mmfs/bin/mmchconfig", body);
	ag = mk_agent(root);
	ag->tune->cmd_timeout_ms = 1500;	/* each stand-in is a shell: room for a loaded machine */

	do_apply(ag, "g", ok, nitems(ok), 0, 1, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "pagepool", NULL)->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	ck_assert_str_eq(find_key(r.keys, r.n_keys, "pagepool", NULL)->after, "17179869184");
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "maxFilesToCache", NULL)->state,
	    KNOB__KEY_STATE__KEY_PENDING_RESTART);
	tune_apply_result_free(&r);
	{
		char log[256], buf[1024];

		snprintf(log, sizeof(log), "%s/mmchconfig.log", tmp);
		ck_assert_int_gt(read_small_file(log, buf, sizeof(buf)), 0);
		ck_assert_ptr_nonnull(strstr(buf, "pagepool=16G -i -N node01"));	/* as written */
	}

	do_apply(ag, "g", bad, nitems(bad), 0, 0, &r);
	dump(r.keys, r.n_keys);
	/* not in mmdiag: fails at read, before any write */
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_FAILED);
	ck_assert_ptr_nonnull(strstr(r.keys[0]->message, "bogusAttr is not in mmdiag --config"));
	tune_apply_result_free(&r);

	{
		uint64_t t0 = now_mono_ns();

		do_apply(ag, "g", slow, nitems(slow), 0, 0, &r);
		dump(r.keys, r.n_keys);
		ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_FAILED);
		ck_assert_int_eq(r.keys[0]->err, ETIMEDOUT);
		ck_assert_ptr_nonnull(strstr(r.keys[0]->message, "timed out after 1500 ms"));
		ck_assert_int_lt(now_mono_ns() - t0, 6000000000ull);
		tune_apply_result_free(&r);
	}
	/* stderr of a failing mmchconfig is in the message */
	{
		FILE *f = fopen(cfg, "a");

		fputs("badThing 1\n", f);
		fclose(f);
	}
	{
		static const struct s b2[] = { { "gpfs", "badThing", NULL, "2", 0, NULL } };

		do_apply(ag, "g", b2, nitems(b2), 0, 0, &r);
		dump(r.keys, r.n_keys);
		ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_FAILED);
		ck_assert_ptr_nonnull(strstr(r.keys[0]->message, "Unknown attribute badThing"));
		tune_apply_result_free(&r);
	}
}
END_TEST

/* Pending restart as a state, through stand-in mmchconfig / mmdiag /
 * mmlsconfig scripts (there is no GPFS here).  The stand-in keeps two
 * files: gpfs.cfg, what mmchconfig configured and mmlsconfig prints, and
 * gpfs.live, what the running mmfsd of this node (node01) uses and mmdiag
 * --config prints.  gpfs.cfg has mmfs.cfg's layout: "KEY VALUE" is the
 * cluster-wide line, "KEY VALUE [NODE]" a node's own; "mmchconfig
 * KEY=VALUE -N NODE" sets NODE's own line (KEY=DEFAULT removes it), and
 * without -N the cluster-wide one.  mmchconfig with -i changes maxMBpS at
 * once (live too), as the real one does for an attribute that -i can
 * change; everything else, and anything without -i, in gpfs.cfg only;
 * "restarting mmfsd" is making node01's configured values (its own line,
 * else the cluster-wide one) live (gpfs_restart).  apply -> pending-restart, journaled; verify ->
 * pending-restart (not drift) while the live value is the old one; restart
 * -> ok and the mark is dropped; live value changed to something else ->
 * drift; rollback of a pending key goes through mmchconfig. */
static char gcfg[256], glive[256];

static void
gpfs_pending_standins(void)
{
	char body[2048];
	FILE *f;

	snprintf(gcfg, sizeof(gcfg), "%s/gpfs.cfg", tmp);
	snprintf(glive, sizeof(glive), "%s/gpfs.live", tmp);
	f = fopen(gcfg, "w");
	ck_assert_ptr_nonnull(f);
	fputs("pagepool 4294967296\nmaxMBpS 2048\n", f);
	fclose(f);
	f = fopen(glive, "w");
	ck_assert_ptr_nonnull(f);
	fputs("pagepool 4294967296\nmaxMBpS 2048\n", f);
	fclose(f);
	snprintf(body, sizeof(body),
	    "# stand-in for mmdiag: the running daemon's values\n"
	    "[ \"$1\" = --config ] || exit 2\necho '=== mmdiag: config ==='\n"
	    "sed 's/^/ ! /' '%s'\n", glive);
	script("/usr/lpp/mmfs/bin/mmdiag", body);
	snprintf(body, sizeof(body),
	    "# stand-in for mmchconfig KEY=VALUE [-i] [-N NODE]\n"
	    "kv=$1; k=${kv%%%%=*}; v=${kv#*=}; shift\n"
	    "echo \"$kv $*\" >> '%s/mmchconfig.log'\n"
	    "c='%s'\n"
	    "grep -q \"^$k \" \"$c\" || { echo \"mmchconfig: Unknown attribute $k\" >&2; exit 1; }\n"
	    "[ \"$kv\" = maxMBpS=666 ] && { echo 'mmchconfig: maxMBpS 666 refused' >&2; exit 1; }\n"
	    "i=; n=\n"
	    "while [ $# -gt 0 ]; do case $1 in -i) i=1;; -N) n=$2; shift;; esac; shift; done\n"
	    "if [ -z \"$n\" ]; then sed -i \"s/^$k [^ ]*\\$/$k $v/\" \"$c\"\n"
	    "else\n"
	    "  grep -v \"^$k .* \\[$n\\]\\$\" \"$c\" > \"$c.new\"\n"
	    "  [ \"$v\" = DEFAULT ] || echo \"$k $v [$n]\" >> \"$c.new\"\n"
	    "  mv \"$c.new\" \"$c\"\n"
	    "fi\n"
	    "if [ \"$k\" = maxMBpS ] && [ -n \"$i\" ]; then sed -i \"s/^$k .*/$k $v/\" '%s'; fi\n"
	    "exit 0\n", tmp, gcfg, glive);
	script("/usr/lpp/mmfs/bin/mmchconfig", body);
	snprintf(body, sizeof(body),
	    "# stand-in for mmlsconfig ATTR: the configured value, as given, after\n"
	    "# another node class's own (which is not this node's)\n"
	    "echo \"$1 999G [node02,node010]\"\n"
	    "grep -i \"^$1 \" '%s'\n", gcfg);
	script("/usr/lpp/mmfs/bin/mmlsconfig", body);
}

/* The profile the stand-in GPFS tests apply: pagepool waits for a restart,
 * maxMBpS goes live at once. */
static const struct s p16[] = {
	{ "gpfs", "pagepool", NULL, "16G", 0, NULL },
	{ "gpfs", "maxMBpS", NULL, "8000", 0, NULL },
};

/* node01's configured value of the stand-in's gpfs.cfg line l ("KEY
 * VALUE" or "KEY VALUE [NODE]"), when the line is cluster-wide: its own
 * line's value if it has one, else l's; NULL for a node's line. */
static const char *
gpfs_cfg_effective(const char *cfg, const char *l, char *v, size_t len)
{
	char k[64], pk[64], pv[128], pn[64];
	int n = 0;

	if (sscanf(l, "%63s %127s%n", k, pv, &n) != 2 || (l[n] != '\0' && l[n] != '\n'))
		return NULL;
	snprintf(v, len, "%s", pv);
	for (const char *p = cfg; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != '\0'))
		if (sscanf(p, "%63s %127s [%63[^]]]", pk, pv, pn) == 3 && strcmp(pk, k) == 0 &&
		    strcmp(pn, "node01") == 0)
			snprintf(v, len, "%s", pv);
	return v;
}

/* "mmfsd restart" of the stand-in: node01's configured values become
 * live (in the cluster-wide lines' order). */
static void
gpfs_restart(void)
{
	char cfg[1024], live[1024] = "", v[128];
	size_t o = 0;

	ck_assert_int_gt(read_small_file(gcfg, cfg, sizeof(cfg)), 0);
	for (const char *l = cfg; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0'))
		if (gpfs_cfg_effective(cfg, l, v, sizeof(v)) != NULL)
			o += (size_t)snprintf(live + o, sizeof(live) - o, "%.*s %s\n",
			    (int)strcspn(l, " "), l, v);
	ck_assert_int_eq(write_small_file(glive, live), 0);
}

START_TEST(test_gpfs_pending_restart)
{
	Knob__ApplyResult r;
	Knob__VerifyResult v;
	Knob__RollbackResult rb;
	const Knob__KeyResult *k;
	char log[256], buf[4096];
	static const struct s p32[] = { { "gpfs", "pagepool", NULL, "32G", 0, NULL } };

	gpfs_pending_standins();
	ag = mk_agent(root);

	/* apply: pagepool accepted but not live yet; maxMBpS live at once */
	do_apply(ag, "gpfs-client", p16, nitems(p16), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 0);
	k = find_key(r.keys, r.n_keys, "pagepool", NULL);
	ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_PENDING_RESTART);
	ck_assert_str_eq(k->before, "4294967296");
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "maxMBpS", NULL)->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	/* the mark is in the journal file, with the value set and the live one */
	ck_assert_int_gt(read_small_file(ag->tune->journal_path, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"pending\""));
	rm_agent(ag);
	ag = mk_agent(root);	/* and survives an agent restart */
	ck_assert_int_eq(ag->tune->j.npend, 1);
	ck_assert_str_eq(ag->tune->j.pend[0].target, "pagepool");
	ck_assert_str_eq(ag->tune->j.pend[0].value, "17179869184");
	ck_assert_str_eq(ag->tune->j.pend[0].was, "4294967296");

	/* verify: pending-restart, not drift */
	do_verify(ag, p16, nitems(p16), &v);
	dump(v.keys, v.n_keys);
	k = find_key(v.keys, v.n_keys, "pagepool", NULL);
	ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_PENDING_RESTART);
	ck_assert_str_eq(k->before, "4294967296");
	ck_assert_str_eq(k->wanted, "17179869184");
	ck_assert_ptr_nonnull(strstr(k->message, "mmfsd restarts"));
	ck_assert_int_eq(find_key(v.keys, v.n_keys, "maxMBpS", NULL)->state, KNOB__KEY_STATE__KEY_OK);
	tune_verify_result_free(&v);

	/* --check: nothing to change, it is waiting for the restart */
	do_apply(ag, "gpfs-client", p16, nitems(p16), 1, 0, &r);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "pagepool", NULL)->state,
	    KNOB__KEY_STATE__KEY_PENDING_RESTART);
	tune_apply_result_free(&r);

	/* a profile that wants another value: drift, and the mark stays */
	do_verify(ag, p32, nitems(p32), &v);
	ck_assert_int_eq(v.keys[0]->state, KNOB__KEY_STATE__KEY_DRIFT);
	tune_verify_result_free(&v);
	ck_assert_int_eq(ag->tune->j.npend, 1);

	/* mmfsd restarts: ok, and the mark is dropped from the journal */
	gpfs_restart();
	do_verify(ag, p16, nitems(p16), &v);
	dump(v.keys, v.n_keys);
	for (size_t i = 0; i < v.n_keys; i++)
		ck_assert_int_eq(v.keys[i]->state, KNOB__KEY_STATE__KEY_OK);
	tune_verify_result_free(&v);
	ck_assert_int_eq(ag->tune->j.npend, 0);
	ck_assert_int_gt(read_small_file(ag->tune->journal_path, buf, sizeof(buf)), 0);
	ck_assert_ptr_null(strstr(buf, "\"pending\""));

	/* pending again (32G), then the live value becomes something else
	 * entirely (8G): drift, and the stale mark is dropped */
	apply_stack = 1;	/* keep maxMBpS of gpfs-client */
	do_apply(ag, "gpfs-big", p32, nitems(p32), 0, 0, &r);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_PENDING_RESTART);
	tune_apply_result_free(&r);
	do_verify(ag, p32, nitems(p32), &v);
	ck_assert_int_eq(v.keys[0]->state, KNOB__KEY_STATE__KEY_PENDING_RESTART);
	tune_verify_result_free(&v);
	ck_assert_int_eq(write_small_file(glive, "pagepool 8589934592\nmaxMBpS 8000\n"), 0);
	do_verify(ag, p32, nitems(p32), &v);
	dump(v.keys, v.n_keys);
	ck_assert_int_eq(v.keys[0]->state, KNOB__KEY_STATE__KEY_DRIFT);
	ck_assert_str_eq(v.keys[0]->before, "8589934592");
	tune_verify_result_free(&v);
	ck_assert_int_eq(ag->tune->j.npend, 0);
	/* even once the live value is back to the old one: the mark is gone */
	ck_assert_int_eq(write_small_file(glive, "pagepool 16G\nmaxMBpS 8000\n"), 0);
	do_verify(ag, p32, nitems(p32), &v);
	ck_assert_int_eq(v.keys[0]->state, KNOB__KEY_STATE__KEY_DRIFT);
	tune_verify_result_free(&v);

	/* rollback of a key pending a restart goes through mmchconfig (the
	 * live 16G is what the mark saw, not someone's change) */
	apply_stack = 1;	/* keep maxMBpS of gpfs-client */
	do_apply(ag, "gpfs-big", p32, nitems(p32), 0, 0, &r);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_PENDING_RESTART);
	tune_apply_result_free(&r);
	ck_assert_int_eq(ag->tune->j.npend, 1);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_eq(rb.n_keys, 4);	/* each attribute, and its "configured" */
	for (size_t i = 0; i < rb.n_keys; i++)
		ck_assert_int_ne(rb.keys[i]->state, KNOB__KEY_STATE__KEY_FAILED);
	tune_rollback_result_free(&rb);
	ck_assert_int_eq(ag->tune->j.npend, 0);
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
	snprintf(log, sizeof(log), "%s/mmchconfig.log", tmp);
	ck_assert_int_gt(read_small_file(log, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "pagepool=4294967296 -i -N node01"));
	ck_assert_ptr_nonnull(strstr(buf, "maxMBpS=2048 -i -N node01"));
	ck_assert_int_gt(read_small_file(gcfg, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "pagepool 4294967296\nmaxMBpS 2048");	/* no node01 lines */
	gpfs_restart();
	ck_assert_int_gt(read_small_file(glive, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "pagepool 4294967296\nmaxMBpS 2048");
}
END_TEST

/* A stand-in lctl for -P records (there is no Lustre MGS here), modelled
 * on lctl(8): "set_param -P NAME=VALUE" replaces the record of that name
 * in the MGS's params log, "set_param -P -d NAME" removes it, and
 * "--device MGS llog_print params" prints the records as
 * "- { index: N, event: set_param, device: general, param: NAME, value:
 * VALUE }".  The records live in TMP/params ("NAME VALUE" lines); every
 * set_param is logged to TMP/lctl.log. */
static void
lctl_record_standin(const char *records)
{
	char body[2048], params[256];

	snprintf(params, sizeof(params), "%s/params", tmp);
	cu_write_at(tmp, "/params", 0644, "%s", records);
	snprintf(body, sizeof(body),
	    "p='%s'\n"
	    "if [ \"$*\" = '--device MGS llog_print params' ]; then\n"
	    "  awk '{ printf \"- { index: %%d, event: set_param, device: general, "
	    "param: %%s, value: %%s }\\n\", NR, $1, $2 }' \"$p\"; exit 0\nfi\n"
	    "echo \"$*\" >> '%s/lctl.log'\n"
	    "[ \"$1 $2\" = 'set_param -P' ] || exit 2\n"
	    "if [ \"$3\" = -d ]; then n=$4; else n=${3%%%%=*}; fi\n"
	    "awk -v n=\"$n\" '$1 != n' \"$p\" > \"$p.new\"\n"
	    "[ \"$3\" = -d ] || echo \"$n ${3#*=}\" >> \"$p.new\"\n"
	    "mv \"$p.new\" \"$p\"\n", params, tmp);
	script("/usr/sbin/lctl", body);
}

/* lustre persistent="yes" goes through a stand-in lctl set_param -P, and
 * rollback deletes the record with -P -d (there was none before: its
 * journaled original is "(none)").  The record names no client
 * instance (-ffff8801: this mount's, which no other client and no later
 * mount has); before, it did, and so matched nothing after a remount. */
START_TEST(test_lustre_persistent)
{
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	char log[256], buf[2048];
	static const struct s v[] = { { "lustre", "osc.*OST0001*.max_rpcs_in_flight", NULL, "32", 1, NULL } };

	fake_tree();
	lctl_record_standin("");	/* no record before: rollback deletes knob's */
	ag = mk_agent(root);
	do_apply(ag, "l", v, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.n_keys, 2);	/* the parameter and its -P record */
	for (size_t i = 0; i < r.n_keys; i++)
		ck_assert_int_eq(r.keys[i]->state, KNOB__KEY_STATE__KEY_CHANGED);
	ck_assert_str_eq(find_key(r.keys, r.n_keys, "osc.fs-OST0001-osc-*.max_rpcs_in_flight",
	    NULL)->before, "(none)");
	tune_apply_result_free(&r);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	for (size_t i = 0; i < rb.n_keys; i++)
		ck_assert_int_eq(rb.keys[i]->state, KNOB__KEY_STATE__KEY_RESTORED);
	tune_rollback_result_free(&rb);
	snprintf(log, sizeof(log), "%s/lctl.log", tmp);
	ck_assert_int_gt(read_small_file(log, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "set_param -P osc.fs-OST0001-osc-*.max_rpcs_in_flight=32\n"
	    "set_param -P -d osc.fs-OST0001-osc-*.max_rpcs_in_flight");
	ck_assert_str_eq(get("/sys/fs/lustre/osc/fs-OST0001-osc-ffff8801/max_rpcs_in_flight"), "8");
}
END_TEST

/* persistent="yes" whose live write fails after lctl set_param -P took
 * the record (the stand-in lctl turns the parameter into a directory): the
 * key is failed, and the record is deleted again, since no revert undoes
 * a key whose live value did not move. */
START_TEST(test_lustre_persistent_write_fails)
{
	Knob__ApplyResult r;
	char body[1024], log[256], buf[2048];
	static const struct s v[] = { { "lustre", "osc.*OST0001*.max_rpcs_in_flight", NULL, "32", 1, NULL } };
	const char *param = "/sys/fs/lustre/osc/fs-OST0001-osc-ffff8801/max_rpcs_in_flight";

	fake_tree();
	snprintf(body, sizeof(body), "case \"$*\" in *llog_print*) exit 0;; esac\n"
	    "echo \"$*\" >> '%s/lctl.log'\n"
	    "case \"$*\" in *=32) rm -f '%s%s' && mkdir '%s%s';; esac\n", tmp, root, param, root,
	    param);
	script("/usr/sbin/lctl", body);
	ag = mk_agent(root);
	do_apply(ag, "l", v, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.n_keys, 1);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_FAILED);
	ck_assert_ptr_nonnull(strstr(r.keys[0]->message, "permanent record deleted again"));
	tune_apply_result_free(&r);
	snprintf(log, sizeof(log), "%s/lctl.log", tmp);
	ck_assert_int_gt(read_small_file(log, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "set_param -P osc.fs-OST0001-osc-*.max_rpcs_in_flight=32\n"
	    "set_param -P -d osc.fs-OST0001-osc-*.max_rpcs_in_flight");
	ck_assert_int_eq(ag->tune->j.norig, 0);
}
END_TEST

static const char *const llite_mnt[] = { "/sys/fs/lustre/llite/fs-ffff8801/max_read_ahead_mb",
	"/sys/fs/lustre/llite/fs-ffff8802/max_read_ahead_mb" };

/* The two mounts' max_read_ahead_mb at 64 and the admin's record (256),
 * then persistent 1024 applied through llite.* (ag made). */
static void
two_mounts_applied(void)
{
	static const struct s v[] = {
		{ "lustre", "llite.*.max_read_ahead_mb", NULL, "1024", 1, NULL },
	};
	Knob__ApplyResult r;

	fake_tree();
	for (size_t i = 0; i < nitems(llite_mnt); i++)
		put(llite_mnt[i], "64\n");
	lctl_record_standin("llite.fs-*.max_read_ahead_mb 256\n");
	ag = mk_agent(root);
	do_apply(ag, "l", v, nitems(v), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 0);
	tune_apply_result_free(&r);
}

/* persistent="yes" through a glob that matches two mounts of one file
 * system (llite.fs-ffff8801 and llite.fs-ffff8802): both name one -P
 * record, llite.fs-*.max_read_ahead_mb, and the admin had their own (256).
 * The record is journaled once, with its value before (256), and the
 * rollback puts it back once: the two mounts' live values go back to 64
 * and the admin's record is 256 again.  Before, each instance's rollback
 * ran "set_param -P -d" on it: the admin's record was deleted.  Stand-in:
 * lctl_record_standin; fake Lustre tree. */
START_TEST(test_lustre_persistent_two_mounts)
{
	Knob__RollbackResult rb;
	char log[256], buf[2048];
	size_t nrec = 0;

	two_mounts_applied();
	snprintf(log, sizeof(log), "%s/params", tmp);
	ck_assert_int_gt(read_small_file(log, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "llite.fs-*.max_read_ahead_mb 1024");
	rm_agent(ag);
	ag = mk_agent(root);	/* the journal with the record loads */
	snprintf(log, sizeof(log), "%s/lctl.log", tmp);
	ck_assert_int_eq(truncate(log, 0), 0);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_ge(read_small_file(log, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "set_param -P llite.fs-*.max_read_ahead_mb=256");
	snprintf(log, sizeof(log), "%s/params", tmp);
	ck_assert_int_gt(read_small_file(log, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "llite.fs-*.max_read_ahead_mb 256");
	ck_assert_int_eq(rb.complete, 1);
	for (size_t i = 0; i < rb.n_keys; i++)	/* the record once, restored */
		nrec += strcmp(rb.keys[i]->target, "llite.fs-*.max_read_ahead_mb") == 0 &&
		    rb.keys[i]->state == KNOB__KEY_STATE__KEY_RESTORED;
	ck_assert_int_eq(nrec, 1);
	tune_rollback_result_free(&rb);
	for (size_t i = 0; i < nitems(llite_mnt); i++)
		ck_assert_str_eq(get(llite_mnt[i]), "64");
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
}
END_TEST

/* The pair of test_lustre_persistent_two_mounts, and the admin then sets
 * one mount's value (512): the rollback leaves that mount as the admin
 * set it (changed-since) and the -P record too, since lctl set_param -P
 * reaches every mount of the file system, that one included; its message
 * says so.  Before, the record's message was the sysctl pair's ("its
 * restore would set ... to 0: the kernel keeps the two exclusive").
 * In "both", the admin changed the record too (set_param -P ...=2048):
 * the record's message names the mount, and says that the record itself
 * was changed since knob set it too (is 2048, knob set 1024).  Before,
 * the mount's message replaced the record's own, and only the mount was
 * named.
 * Stand-ins: a fake Lustre tree and lctl_record_standin (no MGS here; the
 * stand-in does not carry a record to the mounts). */
static const char *const lustre_since_cases[] = { "mount", "both" };

START_TEST(test_lustre_persistent_changed_since)
{
	Knob__RollbackResult rb;
	const Knob__KeyResult *k;
	char log[256], buf[2048];
	const int both = strcmp(lustre_since_cases[_i], "both") == 0;

	two_mounts_applied();
	put(llite_mnt[0], "512\n");	/* the admin's own change, on one mount */
	if (both)	/* and on the MGS: "lctl set_param -P" of their own */
		cu_write_at(tmp, "/params", 0644, "llite.fs-*.max_read_ahead_mb 2048\n");
	snprintf(log, sizeof(log), "%s/lctl.log", tmp);
	ck_assert_int_eq(truncate(log, 0), 0);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_eq(rb.complete, 0);
	k = find_key(rb.keys, rb.n_keys, "llite.fs-*.max_read_ahead_mb", NULL);
	ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_CHANGED_SINCE);
	ck_assert_msg(strstr(k->message, "llite.fs-*.max_read_ahead_mb left: "
	    "llite.fs-ffff8801.max_read_ahead_mb was changed since knob set it") &&
	    strstr(k->message, "set_param -P") && !strstr(k->message, " to 0"),
	    "record: %s", k->message);
	ck_assert_msg(!both || strstr(k->message, "; llite.fs-*.max_read_ahead_mb itself was "
	    "changed since knob set it too (is 2048, knob set 1024)"), "record: %s", k->message);
	tune_rollback_result_free(&rb);
	ck_assert_int_eq(read_small_file(log, buf, sizeof(buf)), 0);	/* no set_param */
	ck_assert_str_eq(get(llite_mnt[0]), "512");
	ck_assert_str_eq(get(llite_mnt[1]), "64");
}
END_TEST

/* A journal from before knob journaled -P records (a persistent
 * parameter, no record beside it): an apply on top (another value) does
 * not journal the record, which is knob's own by then, and the rollback
 * deletes it as it did.  Stand-in: lctl_record_standin. */
START_TEST(test_lustre_persistent_old_journal)
{
	static const struct s v32[] = {
		{ "lustre", "osc.*OST0001*.max_rpcs_in_flight", NULL, "32", 1, NULL } };
	static const struct s v64[] = {
		{ "lustre", "osc.*OST0001*.max_rpcs_in_flight", NULL, "64", 1, NULL } };
	struct journal *j;
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	char params[256], buf[1024];
	long k;

	fake_tree();
	lctl_record_standin("");
	ag = mk_agent(root);
	do_apply(ag, "l", v32, 1, 0, 0, &r);
	tune_apply_result_free(&r);
	j = &ag->tune->j;	/* as a journal from before: no record */
	k = journal_find(j->orig, j->norig, "lustre",
	    LUSTRE_RECORD "osc.fs-OST0001-osc-*.max_rpcs_in_flight", "");
	ck_assert_int_ge(k, 0);
	journal_remove(j->orig, &j->norig, (size_t)k);
	ck_assert_int_eq(journal_save(ag->tune->journal_path, j), 0);
	rm_agent(ag);
	ag = mk_agent(root);
	do_apply(ag, "l", v64, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.n_keys, 1);
	tune_apply_result_free(&r);
	ck_assert_int_eq(ag->tune->j.norig, 1);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	snprintf(params, sizeof(params), "%s/params", tmp);
	ck_assert_int_eq(read_small_file(params, buf, sizeof(buf)), 0);	/* deleted */
	ck_assert_str_eq(get("/sys/fs/lustre/osc/fs-OST0001-osc-ffff8801/max_rpcs_in_flight"), "8");
}
END_TEST

/* ------------------------------------------------------------ real devices */
/* Read /sys/block/DEV/queue/ATTR (or a whole path when dev is NULL). */
static const char *
sys(const char *attr, const char *dev)
{
	if (dev == NULL)
		return cu_readf("%s", attr);
	return cu_readf("/sys/block/%s/queue/%s", dev, attr);
}

START_TEST(test_loop_device)
{
	Knob__ApplyResult r;
	Knob__VerifyResult v;
	Knob__RollbackResult rb;
	char sched0[256], ra0[64], nr0[64], want_sched[32], hw[128];
	struct s set[3];

	ck_assert_msg(loopdev[0] != '\0', "no loop device");
	/* a reused loop device keeps the queue settings of its last user */
	snprintf(hw, sizeof(hw), "/sys/block/%s/queue/read_ahead_kb", loopdev);
	ck_assert_int_eq(write_small_file(hw, "128"), 0);
	snprintf(sched0, sizeof(sched0), "%s", sys("scheduler", loopdev));
	snprintf(ra0, sizeof(ra0), "%s", sys("read_ahead_kb", loopdev));
	snprintf(nr0, sizeof(nr0), "%s", sys("nr_requests", loopdev));
	/* pick a scheduler that is not the current one */
	snprintf(want_sched, sizeof(want_sched), "%s", strstr(sched0, "[none]") ? "mq-deadline" : "none");
	set[0] = (struct s){ "blockdev", loopdev, "scheduler", want_sched, 0, NULL };
	set[1] = (struct s){ "blockdev", loopdev, "read_ahead_kb", "4M", 0, NULL };
	ag = mk_agent("");
	do_apply(ag, "loop", set, 2, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_CHANGED);
	ck_assert_int_eq(r.keys[1]->state, KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "4096");
	ck_assert_ptr_nonnull(strstr(sys("scheduler", loopdev), want_sched));

	/* drift: change read_ahead_kb behind knob's back */
	snprintf(hw, sizeof(hw), "/sys/block/%s/queue/read_ahead_kb", loopdev);
	ck_assert_int_eq(write_small_file(hw, "256"), 0);
	do_verify(ag, set, 2, &v);
	dump(v.keys, v.n_keys);
	ck_assert_int_eq(v.keys[0]->state, KNOB__KEY_STATE__KEY_OK);
	ck_assert_int_eq(v.keys[1]->state, KNOB__KEY_STATE__KEY_DRIFT);
	ck_assert_str_eq(v.keys[1]->before, "256");
	tune_verify_result_free(&v);

	/* a read-only attribute in the same transaction: all reverted */
	set[2] = (struct s){ "sysfs", NULL, NULL, "4096", 0, NULL };
	snprintf(hw, sizeof(hw), "/sys/block/%s/queue/hw_sector_size", loopdev);
	set[2].key = hw;
	set[0].value = "mq-deadline";
	if (strcmp(want_sched, "mq-deadline") == 0)
		set[0].value = "none";
	/* a read-only attribute is known to fail: refused before any write */
	do_apply(ag, "loop-ro", set, 3, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 0);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_SKIPPED);
	ck_assert_int_eq(r.keys[1]->state, KNOB__KEY_STATE__KEY_SKIPPED);
	ck_assert_int_eq(r.keys[2]->state, KNOB__KEY_STATE__KEY_FAILED);
	ck_assert_ptr_nonnull(strstr(r.keys[2]->message, "read-only (mode 0444)"));
	ck_assert_int_ne(r.keys[2]->err, 0);
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "256");
	ck_assert_ptr_nonnull(strstr(sys("scheduler", loopdev), want_sched));

	/* scheduler, read_ahead_kb, nr_requests and iosched (the kernel moved
	 * them when the scheduler was written: journaled as well); read_ahead_kb was
	 * changed behind knob's back, so only --force writes it */
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_eq(rb.n_keys, 4);	/* and the elevator's tunables (iosched) */
	ck_assert_int_eq(find_key(rb.keys, rb.n_keys, loopdev, "read_ahead_kb")->state,
	    KNOB__KEY_STATE__KEY_CHANGED_SINCE);
	ck_assert_int_eq(find_key(rb.keys, rb.n_keys, loopdev, "scheduler")->state,
	    KNOB__KEY_STATE__KEY_RESTORED);
	ck_assert_int_eq(rb.complete, 0);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "256");
	{
		Knob__RollbackRequest req = KNOB__ROLLBACK_REQUEST__INIT;

		req.force = 1;
		ck_assert_int_eq(tune_rollback(ag, &req, &rb), 0);
	}
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(sys("nr_requests", loopdev), nr0);
	ck_assert_str_eq(sys("scheduler", loopdev), sched0);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), ra0);
}
END_TEST

/* net (libnl) and a per-namespace sysctl in a private network namespace of
 * this forked test process: a veth pair, nothing of the host. */
START_TEST(test_net_namespace)
{
	Knob__ApplyResult r;
	Knob__VerifyResult v;
	Knob__RollbackResult rb;
	char soma0[64];
	static const struct s set[] = {
		{ "net", "kt*", "mtu", "1400", 0, NULL },
		{ "net", "kt*", "txqueuelen", "4242", 0, NULL },
		{ "sysctl", "net.core.somaxconn", NULL, "1234", 0, NULL },
	};

	ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
	ck_assert_int_eq(system("ip link add kt0 type veth peer name kt1"), 0);
	ck_assert_int_eq(read_small_file("/proc/sys/net/core/somaxconn", soma0, sizeof(soma0)) > 0, 1);
	ag = mk_agent("");
	do_apply(ag, "net", set, nitems(set), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.n_keys, 7);	/* and kt0's and kt1's ipv6_mtu */
	all_changed(&r);
	tune_apply_result_free(&r);
	ck_assert_int_eq(system("ip link show kt1 | grep -q 'mtu 1400'"), 0);
	ck_assert_int_eq(system("ip link show kt0 | grep -q 'qlen 4242'"), 0);
	ck_assert_int_eq(system("ip link set kt1 mtu 1300"), 0);
	do_verify(ag, set, nitems(set), &v);
	ck_assert_int_eq(find_key(v.keys, v.n_keys, "kt*", "kt1 mtu")->state, KNOB__KEY_STATE__KEY_DRIFT);
	ck_assert_int_eq(find_key(v.keys, v.n_keys, "kt*", "kt0 mtu")->state, KNOB__KEY_STATE__KEY_OK);
	tune_verify_result_free(&v);
	/* kt1's mtu (and with it its ipv6_mtu) was changed after knob set
	 * it: changed-since, left alone and kept in the journal; the rest
	 * comes back */
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	for (size_t i = 0; i < rb.n_keys; i++)
		ck_assert_int_eq(rb.keys[i]->state, strcmp(rb.keys[i]->target, "kt1 mtu") == 0 ||
		    strcmp(rb.keys[i]->target, "kt1 ipv6_mtu") == 0 ?
		    KNOB__KEY_STATE__KEY_CHANGED_SINCE : KNOB__KEY_STATE__KEY_RESTORED);
	ck_assert_int_eq(rb.complete, 0);
	tune_rollback_result_free(&rb);
	ck_assert_int_eq(system("ip link show kt1 | grep -q 'mtu 1300'"), 0);
	ck_assert_int_eq(ag->tune->j.norig, 2);
	{
		Knob__RollbackRequest req = KNOB__ROLLBACK_REQUEST__INIT;

		req.force = 1;
		ck_assert_int_eq(tune_rollback(ag, &req, &rb), 0);
	}
	ck_assert_int_eq(rb.n_keys, 2);
	ck_assert_int_eq(rb.keys[0]->state, KNOB__KEY_STATE__KEY_RESTORED);
	ck_assert_int_eq(rb.keys[1]->state, KNOB__KEY_STATE__KEY_RESTORED);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	ck_assert_int_eq(system("ip link show kt1 | grep -q 'mtu 1500'"), 0);
	ck_assert_int_eq(system("ip link show kt0 | grep -q 'qlen 1000'"), 0);
	ck_assert_str_eq(sys("/proc/sys/net/core/somaxconn", NULL), soma0);
}
END_TEST

START_TEST(test_journal_corrupt)
{
	char path[256];

	mkdir(state, 0700);
	snprintf(path, sizeof(path), "%s/" TUNE_JOURNAL_NAME, state);
	ck_assert_int_eq(write_file_atomic(path, "{not json", 9, 0600), 0);
	{
		struct agent a;

		memset(&a, 0, sizeof(a));
		snprintf(a.state_dir, sizeof(a.state_dir), "%s", state);
		/* refuses to serve rather than lose the originals */
		ck_assert_int_eq(tune_init(&a), -1);
		ck_assert_ptr_null(a.tune);
		ck_assert_str_eq(active_pub(&a, 0), "");
	}
}
END_TEST

/* ------------------------------------------------------------ write(2) hook */
/* This program's write(2) and pwrite(2) take the place of libc's (the
 * agent's code is linked in, as with fsync below) for two things, each
 * off unless a test turns it on (then they are the plain system calls):
 *  - a log of the loop device's queue attributes the agent writes, in
 *    order (wlog_start / wlog_stop): the write order of a transaction;
 *  - a stand-in for the kernel's mutually exclusive sysctl pairs under the
 *    test's --sysroot (fake_pairs, below). */
static int wlog_on, pairs_on;
static int smt_on;		/* the fake SMT / cpufreq stand-in (fake_smt_*) */
static int fake_smt_write(const char *path, const void *buf, size_t len, ssize_t *ret);
static int lru_on;		/* the fake Lustre lru_size stand-in (fake_lru_*) */
static int fake_lru_write(const char *path, const void *buf, size_t len, ssize_t *ret);
static int nfsd_on;		/* the fake nfsd thread pools (fake_nfsd_*) */
static int fake_nfsd_write(const char *path, const void *buf, size_t len, ssize_t *ret);
static char wlog[512];		/* attribute names, space-separated */
static char root_real[PATH_MAX];	/* realpath of root while pairs_on */

/* The path fd is open on, or "". */
static void
fd_path(int fd, char *buf, size_t len)
{
	char l[64];
	ssize_t n;

	snprintf(l, sizeof(l), "/proc/self/fd/%d", fd);
	n = readlink(l, buf, len - 1);
	buf[n > 0 ? n : 0] = '\0';
}

static void
wlog_start(void)
{
	wlog[0] = '\0';
	wlog_on = 1;
}

/* The attributes written since wlog_start (static buffer). */
static const char *
wlog_stop(void)
{
	wlog_on = 0;
	return wlog;
}

/* Log path when it is a queue attribute of the loop device. */
static void
wlog_add(const char *path)
{
	char dir[64];
	const char *p;
	size_t o = strlen(wlog);

	snprintf(dir, sizeof(dir), "/%s/queue/", loopdev);
	if (loopdev[0] == '\0' || (p = strstr(path, dir)) == NULL)
		return;
	snprintf(wlog + o, sizeof(wlog) - o, "%s%s", o ? " " : "", p + strlen(dir));
}

/* Stand-in for the kernel's sysctl pairs (mm/page-writeback.c, mm/util.c)
 * under the test's --sysroot.  They are global sysctls: a test must never
 * change the host's, so it fakes /proc/sys/vm, and a regular file there
 * cannot act as the kernel does: writing one half sets the other to 0
 * (for dirty_bytes / dirty_ratio only when the value changes), and
 * dirty_bytes refuses less than 2 pages, dirty_background_bytes less than
 * 1 (EINVAL, nothing changed).  The values live in fake_val; every write
 * of a pair rewrites both files from them (a refused one too: the agent's
 * O_TRUNC may have emptied the file, which procfs ignores). */
static const struct fake_pair {
	const char *half[2];	/* the bytes and the ratio, below /proc/sys/vm/ */
	long min;		/* the bytes refuse less (-1: 2 pages) */
	int if_changed;		/* the other half is zeroed only on a change */
} fake_pairs[] = {
	{ { "dirty_bytes", "dirty_ratio" }, -1, 1 },
	{ { "dirty_background_bytes", "dirty_background_ratio" }, 1, 0 },
	{ { "overcommit_kbytes", "overcommit_ratio" }, 0, 0 },
};
static unsigned long fake_val[nitems(fake_pairs)][2];

/* Pair i's two files from fake_val, by plain system calls. */
static void
fake_pair_files(size_t i)
{
	for (size_t h = 0; h < 2; h++) {
		char path[PATH_MAX + 64], v[32];
		int fd;

		snprintf(path, sizeof(path), "%s/proc/sys/vm/%s", root_real, fake_pairs[i].half[h]);
		snprintf(v, sizeof(v), "%lu\n", fake_val[i][h]);
		if ((fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)) < 0)
			continue;
		if (syscall(SYS_write, fd, v, strlen(v)) < 0)
			fprintf(stderr, "fake %s: %s\n", path, strerror(errno));
		close(fd);
	}
}

/* The fake pairs under root, starting at v (bytes, ratio for each pair in
 * fake_pairs' order). */
static void
fake_pairs_start(const unsigned long v[][2])
{
	char rel[128];

	for (size_t i = 0; i < nitems(fake_pairs); i++)
		for (size_t h = 0; h < 2; h++) {
			fake_val[i][h] = v[i][h];
			snprintf(rel, sizeof(rel), "/proc/sys/vm/%s", fake_pairs[i].half[h]);
			put(rel, "%lu\n", v[i][h]);
		}
	ck_assert_ptr_nonnull(realpath(root, root_real));
	pairs_on = 1;
}

/* A write of buf to path as the kernel answers it when path is a half of
 * a fake pair: 1 with *ret (-1 and errno when refused); else 0. */
static int
fake_pair_write(const char *path, const void *buf, size_t len, ssize_t *ret)
{
	char want[PATH_MAX + 64], v[32], *end;

	for (size_t i = 0; i < nitems(fake_pairs); i++)
		for (size_t h = 0; h < 2; h++) {
			const struct fake_pair *f = &fake_pairs[i];
			long min = f->min < 0 ? 2 * sysconf(_SC_PAGESIZE) : f->min;
			unsigned long x, old = fake_val[i][h];

			snprintf(want, sizeof(want), "%s/proc/sys/vm/%s", root_real, f->half[h]);
			if (strcmp(path, want) != 0)
				continue;
			snprintf(v, sizeof(v), "%.*s", (int)(len < 31 ? len : 31),
			    (const char *)buf);
			x = strtoul(v, &end, 10);
			*ret = (ssize_t)len;
			if (end == v || (h == 0 && x < (unsigned long)min)) {
				errno = EINVAL;
				*ret = -1;
			} else {
				fake_val[i][h] = x;
				if (!f->if_changed || old != x)
					fake_val[i][1 - h] = 0;
			}
			fake_pair_files(i);
			return 1;
		}
	return 0;
}

/* write(2) and pwrite(2) of this program (see above). */
static ssize_t
hooked_write(int fd, const void *buf, size_t len, off_t off, int positional)
{
	char path[PATH_MAX];
	ssize_t ret;

	if (wlog_on || pairs_on || smt_on || lru_on || cached_on || nfsd_on) {
		fd_path(fd, path, sizeof(path));
		if (wlog_on)
			wlog_add(path);
		if (pairs_on && fake_pair_write(path, buf, len, &ret))
			return ret;
		if (smt_on && fake_smt_write(path, buf, len, &ret))
			return ret;
		if (lru_on && fake_lru_write(path, buf, len, &ret))
			return ret;
		if (cached_on && fake_cached_write(path, buf, len, &ret))
			return ret;
		if (nfsd_on && fake_nfsd_write(path, buf, len, &ret))
			return ret;
	}
	if (positional)
		return (ssize_t)syscall(SYS_pwrite64, fd, buf, len, off);
	return (ssize_t)syscall(SYS_write, fd, buf, len);
}

ssize_t
write(int fd, const void *buf, size_t len)
{
	return hooked_write(fd, buf, len, 0, 0);
}

ssize_t
pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return hooked_write(fd, buf, len, off, 1);
}

/* ------------------------------------------------------------ coupled keys */
/* Non-default originals on the loop device, set by hand in the kernel's
 * own order (scheduler, nr_requests, max_sectors_kb, add_random,
 * rotational, read_ahead_kb: each later write would be undone by an
 * earlier one otherwise; the queue limits among them raise read_ahead_kb,
 * to 2 * max_sectors_kb on a rotational device).  read_ahead_kb is written
 * as 333 and sysfs keeps it in 4 KiB pages, so the original is whatever
 * the device reads back (332). */
struct orig {
	char sched[64], nr[32], msk[32], rand[8], rot[8], ra[32];
};

static void
set_sysfs(const char *attr, const char *value)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/block/%s/queue/%s", loopdev, attr);
	ck_assert_msg(write_small_file(path, value) == 0, "cannot set %s=%s", attr, value);
}

/* The selected scheduler, without brackets. */
static const char *
sched_now(void)
{
	static char buf[64];
	const char *s = strchr(sys("scheduler", loopdev), '['), *e;

	buf[0] = '\0';
	if (s && (e = strchr(s, ']')) != NULL)
		snprintf(buf, sizeof(buf), "%.*s", (int)(e - s - 1), s + 1);
	return buf;
}

static void
set_originals(struct orig *o)
{
	ck_assert_msg(loopdev[0] != '\0', "no loop device");
	set_sysfs("scheduler", "none");
	set_sysfs("nr_requests", "100");
	set_sysfs("max_sectors_kb", "512");
	set_sysfs("add_random", "0");
	set_sysfs("rotational", "1");
	set_sysfs("read_ahead_kb", "333");
	snprintf(o->sched, sizeof(o->sched), "%s", sched_now());
	snprintf(o->nr, sizeof(o->nr), "%s", sys("nr_requests", loopdev));
	snprintf(o->msk, sizeof(o->msk), "%s", sys("max_sectors_kb", loopdev));
	snprintf(o->rand, sizeof(o->rand), "%s", sys("add_random", loopdev));
	snprintf(o->rot, sizeof(o->rot), "%s", sys("rotational", loopdev));
	snprintf(o->ra, sizeof(o->ra), "%s", sys("read_ahead_kb", loopdev));
	ck_assert_str_eq(o->sched, "none");
	ck_assert_str_eq(o->nr, "100");
	ck_assert_str_eq(o->msk, "512");
	ck_assert_str_eq(o->rand, "0");
	ck_assert_str_eq(o->rot, "1");
	ck_assert_str_eq(o->ra, "332");
}

static void
assert_originals(const struct orig *o)
{
	ck_assert_str_eq(sched_now(), o->sched);
	ck_assert_str_eq(sys("nr_requests", loopdev), o->nr);
	ck_assert_str_eq(sys("max_sectors_kb", loopdev), o->msk);
	ck_assert_str_eq(sys("add_random", loopdev), o->rand);
	ck_assert_str_eq(sys("rotational", loopdev), o->rot);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), o->ra);
}

/* The pairs of keys the kernel couples, each in the order a profile
 * author might write them (not the kernel's), plus each coupled key alone
 * (its partner is journaled because the kernel moves it).  A queue limit
 * (add_random, rotational) raises read_ahead_kb (to 2 * max_sectors_kb
 * on a rotational device, else to 128 KiB) and never lowers it: those
 * cases start it at 32, and the rollback writes it after the limit.
 * Before, it was not journaled, and the rollback left it at 1024 (and
 * the write order put read_ahead_kb first, to be raised again). */
static const struct pair_case {
	const char *name;
	struct s set[4];
	size_t n;
	const char *want_nr, *want_ra;	/* expected after apply (NULL: not checked) */
	const char *start_ra;		/* read_ahead_kb before apply (NULL: 332) */
	const char *order[2];		/* what apply, rollback write (NULL: not checked) */
} pair_cases[] = {
	{ "nr_requests+scheduler", { { "blockdev", NULL, "nr_requests", "64", 0, NULL },
	    { "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL } }, 2, "64", NULL, NULL,
	    { NULL, NULL } },
	{ "read_ahead_kb+max_sectors_kb", { { "blockdev", NULL, "read_ahead_kb", "128", 0, NULL },
	    { "blockdev", NULL, "max_sectors_kb", "256", 0, NULL } }, 2, NULL, "128", NULL,
	    { NULL, NULL } },
	{ "all four", { { "blockdev", NULL, "read_ahead_kb", "4M", 0, NULL },
	    { "blockdev", NULL, "nr_requests", "32", 0, NULL },
	    { "blockdev", NULL, "max_sectors_kb", "MAXHW", 0, NULL },
	    { "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL } }, 4, "32", "4096", NULL,
	    { NULL, NULL } },
	{ "scheduler alone", { { "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL } }, 1,
	    "256", NULL, NULL, { NULL, NULL } },
	{ "max_sectors_kb alone", { { "blockdev", NULL, "max_sectors_kb", "MAXHW", 0, NULL } }, 1,
	    NULL, NULL, NULL, { NULL, NULL } },
	{ "add_random alone", { { "blockdev", NULL, "add_random", "1", 0, NULL } }, 1, NULL, NULL,
	    "32", { "add_random", "add_random read_ahead_kb" } },
	{ "rotational alone", { { "blockdev", NULL, "rotational", "0", 0, NULL } }, 1, NULL, NULL,
	    "32", { "rotational", "rotational read_ahead_kb" } },
	{ "read_ahead_kb+add_random", { { "blockdev", NULL, "read_ahead_kb", "64", 0, NULL },
	    { "blockdev", NULL, "add_random", "1", 0, NULL } }, 2, NULL, "64", "32",
	    { "add_random read_ahead_kb", "add_random read_ahead_kb" } },
};

/* The case's settings on the loop device; "MAXHW" is the device's
 * max_hw_sectors_kb (it differs between kernels). */
static void
pair_settings(const struct pair_case *c, struct s *v)
{
	static char maxhw[32];

	snprintf(maxhw, sizeof(maxhw), "%s", sys("max_hw_sectors_kb", loopdev));
	for (size_t i = 0; i < c->n; i++) {
		v[i] = c->set[i];
		v[i].key = loopdev;
		if (strcmp(v[i].value, "MAXHW") == 0)
			v[i].value = maxhw;
	}
}

/* Apply and roll back every pair on the real loop device: the exact
 * originals read back afterwards, the rollback is complete (knobctl exits
 * 0), and the journal is gone. */
START_TEST(test_coupled_pairs)
{
	const struct pair_case *c = &pair_cases[_i];
	Knob__ApplyResult r;
	Knob__VerifyResult v;
	Knob__RollbackResult rb;
	const char *order;
	struct orig o;
	struct s set[4];

	fprintf(stderr, "-- %s\n", c->name);
	set_originals(&o);
	if (c->start_ra) {
		set_sysfs("read_ahead_kb", c->start_ra);
		snprintf(o.ra, sizeof(o.ra), "%s", sys("read_ahead_kb", loopdev));
		ck_assert_str_eq(o.ra, c->start_ra);
	}
	pair_settings(c, set);
	ag = mk_agent("");
	wlog_start();
	do_apply(ag, "pair", set, c->n, 0, 0, &r);
	dump(r.keys, r.n_keys);
	if (c->order[0])
		ck_assert_str_eq(wlog_stop(), c->order[0]);
	ck_assert_int_eq(r.reverted, 0);
	all_changed(&r);
	tune_apply_result_free(&r);
	if (c->want_nr)
		ck_assert_str_eq(sys("nr_requests", loopdev), c->want_nr);
	if (c->want_ra)
		ck_assert_str_eq(sys("read_ahead_kb", loopdev), c->want_ra);
	do_verify(ag, set, c->n, &v);
	dump(v.keys, v.n_keys);
	for (size_t i = 0; i < v.n_keys; i++)
		ck_assert_int_eq(v.keys[i]->state, KNOB__KEY_STATE__KEY_OK);
	tune_verify_result_free(&v);
	wlog_start();
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	order = wlog_stop();
	dump(rb.keys, rb.n_keys);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	assert_originals(&o);
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
	if (c->order[1])
		ck_assert_str_eq(order, c->order[1]);
}
END_TEST

/* The kernel's mutually exclusive sysctl pairs (the fake_pairs stand-in
 * under --sysroot: global sysctls), one half set by a profile: the apply
 * moves the other half, whose original is journaled too; verify reports
 * the profile's key only (no drift on the other half); the rollback
 * writes only the half whose original is not 0 (that write sets the other
 * to 0), both read back as their originals, and it is complete (knobctl
 * exits 0).  Before: (a) the rollback wrote 0 to dirty_background_bytes,
 * EINVAL, and stayed incomplete for good with the ratio at 0; (b) the
 * admin's dirty_bytes, zeroed by the profile's dirty_ratio, was not
 * journaled, and the rollback's write of the ratio's original 0 zeroed it
 * again, complete. */
static const struct sysctl_pair_case {
	const char *name, *key, *value;
	size_t pair;			/* in fake_pairs */
	unsigned long start[2], after[2];	/* its bytes and ratio */
} sysctl_pair_cases[] = {
	{ "(a) dirty_background_bytes", "vm.dirty_background_bytes", "268435456", 1,
	    { 0, 10 }, { 268435456, 0 } },
	{ "(b) dirty_ratio over the admin's dirty_bytes", "vm.dirty_ratio", "10", 0,
	    { 67108864, 0 }, { 0, 10 } },
	{ "dirty_bytes", "vm.dirty_bytes", "134217728", 0, { 0, 20 }, { 134217728, 0 } },
	{ "dirty_background_ratio over its bytes", "vm.dirty_background_ratio", "5", 1,
	    { 16777216, 0 }, { 0, 5 } },
	{ "overcommit_kbytes", "vm.overcommit_kbytes", "1048576", 2, { 0, 50 }, { 1048576, 0 } },
};

/* Every fake pair reads v. */
static void
assert_pairs(const unsigned long v[][2])
{
	char rel[128], want[32];

	for (size_t i = 0; i < nitems(fake_pairs); i++)
		for (size_t h = 0; h < 2; h++) {
			snprintf(rel, sizeof(rel), "/proc/sys/vm/%s", fake_pairs[i].half[h]);
			snprintf(want, sizeof(want), "%lu", v[i][h]);
			ck_assert_msg(strcmp(get(rel), want) == 0, "%s is %s, not %s", rel,
			    get(rel), want);
		}
}

/* The fake pairs at v, with case c's pair at its start; the agent (ag)
 * applies c's key: every key changed, the pairs read as c says after.
 * Returns the number of keys of the apply. */
static size_t
pair_case_apply(const struct sysctl_pair_case *c, unsigned long v[][2], const struct s *set)
{
	unsigned long after[nitems(fake_pairs)][2];
	Knob__ApplyResult r;
	size_t napply;

	fprintf(stderr, "-- %s\n", c->name);
	memcpy(v[c->pair], c->start, sizeof(c->start));
	memcpy(after, v, sizeof(after));
	memcpy(after[c->pair], c->after, sizeof(c->after));
	fake_pairs_start((const unsigned long (*)[2])v);
	ag = mk_agent(root);
	do_apply(ag, "pair", set, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 0);
	all_changed(&r);
	napply = r.n_keys;
	tune_apply_result_free(&r);
	assert_pairs((const unsigned long (*)[2])after);
	return napply;
}

START_TEST(test_sysctl_pairs)
{
	const struct sysctl_pair_case *c = &sysctl_pair_cases[_i];
	unsigned long v[nitems(fake_pairs)][2] = { { 0, 20 }, { 0, 10 }, { 0, 50 } };
	struct s set[] = { { "sysctl", c->key, NULL, c->value, 0, NULL } };
	char zero[64];
	size_t napply = pair_case_apply(c, v, set);
	Knob__VerifyResult vr;
	Knob__RollbackResult rb;

	do_verify(ag, set, 1, &vr);
	dump(vr.keys, vr.n_keys);
	ck_assert_int_eq(vr.n_keys, 1);
	ck_assert_int_eq(vr.keys[0]->state, KNOB__KEY_STATE__KEY_OK);
	tune_verify_result_free(&vr);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	assert_pairs((const unsigned long (*)[2])v);
	ck_assert_int_eq(rb.complete, 1);
	for (size_t i = 0; i < rb.n_keys; i++)
		ck_assert_int_eq(rb.keys[i]->state, KNOB__KEY_STATE__KEY_RESTORED);
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
	/* the key and the half the kernel moved; the half whose original is 0
	 * was not written back: the other's write set it */
	ck_assert_int_eq(napply, 2);
	ck_assert_int_eq(rb.n_keys, 2);
	snprintf(zero, sizeof(zero), "vm.%s", fake_pairs[c->pair].half[c->start[0] != 0]);
	ck_assert_str_eq(find_key(rb.keys, rb.n_keys, zero, NULL)->message,
	    "came back when a coupled key was restored");
	tune_rollback_result_free(&rb);
}
END_TEST

/* A write the kernel refuses (nomerges -5: not an unsigned number; the
 * check predicts no such value for nomerges, while nr_requests above
 * what mq-deadline takes is refused before any write now) after the
 * scheduler was written: the transaction reverts in order, so
 * nr_requests comes back to 100 after the scheduler write reset it. */
START_TEST(test_coupled_revert)
{
	Knob__ApplyResult r;
	struct orig o;
	struct s set[] = {
		{ "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL },
		{ "blockdev", NULL, "nomerges", "-5", 0, NULL },
		{ "blockdev", NULL, "read_ahead_kb", "1M", 0, NULL },
	};

	set_originals(&o);
	for (size_t i = 0; i < nitems(set); i++)
		set[i].key = loopdev;
	ag = mk_agent("");
	do_apply(ag, "bad", set, nitems(set), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 1);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, loopdev, "scheduler")->state,
	    KNOB__KEY_STATE__KEY_REVERTED);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, loopdev, "nomerges")->state,
	    KNOB__KEY_STATE__KEY_FAILED);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, loopdev, "nomerges")->err, EINVAL);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, loopdev, "read_ahead_kb")->state,
	    KNOB__KEY_STATE__KEY_SKIPPED);
	tune_apply_result_free(&r);
	assert_originals(&o);
	ck_assert_int_eq(ag->tune->j.norig, 0);
}
END_TEST

/* Two settings fighting over one file (sysfs and blockdev name the same
 * nr_requests): neither holds after the passes, and the message names the
 * key that clobbered it; the transaction reverts to the original. */
START_TEST(test_clobbered)
{
	Knob__ApplyResult r;
	struct orig o;
	char path[128];
	const Knob__KeyResult *k;
	struct s set[] = {
		{ "sysfs", NULL, NULL, "64", 0, NULL },
		{ "blockdev", NULL, "nr_requests", "32", 0, NULL },
	};

	set_originals(&o);
	snprintf(path, sizeof(path), "/sys/block/%s/queue/nr_requests", loopdev);
	set[0].key = path;
	set[1].key = loopdev;
	ag = mk_agent("");
	do_apply(ag, "fight", set, nitems(set), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 1);
	k = find_key(r.keys, r.n_keys, path, NULL);
	ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_FAILED);
	ck_assert_msg(strstr(k->message, "clobbered by blockdev ") != NULL, "%s", k->message);
	tune_apply_result_free(&r);
	assert_originals(&o);
}
END_TEST

/* ------------------------------------------------------------ SIGKILL */
static const char *const pause_points[] = {
	"after journaling", "after the first write", "after the write pass", "before commit",
};

/* Wait (deadline 20 s) until the child pauses at where (its marker file). */
static void
wait_pause(const char *where)
{
	char path[256], buf[128];
	uint64_t end = now_mono_ns() + 20000000000ull;

	snprintf(path, sizeof(path), "%s/test-pause", state);
	while (now_mono_ns() < end) {
		if (read_small_file(path, buf, sizeof(buf)) > 0 && strcmp(buf, where) == 0)
			return;
		usleep(10000);
	}
	ck_abort_msg("the transaction never paused %s", where);
}

/* A child process that applies (or rolls back) with a pause at one point;
 * it is SIGKILLed there.  Returns its pid. */
static pid_t
start_paused(const char *sysroot, const struct s *set, size_t n, const char *where,
    int rollback)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct agent *a = mk_agent(sysroot);

		if (rollback) {
			Knob__RollbackRequest req = KNOB__ROLLBACK_REQUEST__INIT;
			Knob__RollbackResult rb;

			req.test_pause_ms = 60000;
			tune_rollback(a, &req, &rb);
		} else {
			Knob__ApplyResult r;

			apply_pause_ms = 60000;
			apply_pause_at = where;
			do_apply(a, "crash", set, n, 0, 0, &r);
		}
		_exit(3);
	}
	return pid;
}

/* The profiles killed: the coupled pairs' four keys, and a queue limit
 * alone (add_random, which makes the kernel raise read_ahead_kb: the
 * recovery and the rollback bring its original back too; before, it
 * stayed raised). */
static const struct kill_set {
	struct s set[4];
	size_t n;
} kill_sets[] = {
	{ { { "blockdev", NULL, "read_ahead_kb", "4M", 0, NULL },
	    { "blockdev", NULL, "nr_requests", "64", 0, NULL },
	    { "blockdev", NULL, "max_sectors_kb", "256", 0, NULL },
	    { "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL } }, 4 },
	{ { { "blockdev", NULL, "add_random", "1", 0, NULL } }, 1 },
};

/* SIGKILL at every pause point of apply, then of rollback, for each of
 * kill_sets: the restarted agent (recovery) leaves the exact originals; a
 * killed rollback is finished by the next one. */
START_TEST(test_kill_at_pause_points)
{
	const char *where = pause_points[_i % nitems(pause_points)];
	const struct kill_set *k = &kill_sets[_i / nitems(pause_points)];
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	struct orig o;
	struct s set[4];
	pid_t pid;
	int st;

	fprintf(stderr, "-- kill %s (%s)\n", where, k->set[0].attr);
	set_originals(&o);
	for (size_t i = 0; i < k->n; i++) {
		set[i] = k->set[i];
		set[i].key = loopdev;
	}
	pid = start_paused("", set, k->n, where, 0);
	wait_pause(where);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st));
	ag = mk_agent("");	/* recovery before anything else */
	assert_originals(&o);
	ck_assert_int_eq(ag->tune->j.in_txn, 0);
	ck_assert_int_eq(ag->tune->j.norig, 0);

	/* the same apply again, then a rollback killed after its first write */
	do_apply(ag, "crash", set, k->n, 0, 0, &r);
	ck_assert_int_eq(r.reverted, 0);
	tune_apply_result_free(&r);
	rm_agent(ag);
	ag = NULL;
	pid = start_paused("", set, k->n, "after the first write", 1);
	wait_pause("after the first write");
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ag = mk_agent("");
	ck_assert_int_gt(ag->tune->j.norig, 0);	/* the journal still holds them */
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	assert_originals(&o);
}
END_TEST

/* GPFS's configured value (the stand-in's gpfs.cfg) of pagepool. */
static const char *
gpfs_cfg_pagepool(void)
{
	static char v[128];
	char buf[1024];

	ck_assert_int_gt(read_small_file(gcfg, buf, sizeof(buf)), 0);
	ck_assert_int_eq(strncmp(buf, "pagepool ", 9), 0);	/* cluster-wide, first */
	ck_assert_ptr_nonnull(gpfs_cfg_effective(buf, buf, v, sizeof(v)));
	return v;
}

/* The ways an apply is undone while its pagepool=16G waits for an mmfsd
 * restart (mmchconfig configured it; mmdiag still shows the original 4G):
 * a rollback, a revert (a later key fails), a switch to a profile without
 * pagepool, and crash recovery (killed after the write pass).  Each must
 * configure the original again through mmchconfig although the live value
 * already reads as the original; otherwise the next mmfsd restart brings
 * 16G back with nothing journaled to undo it.  Stand-ins: see
 * gpfs_pending_standins. */
static const char *const gpfs_undo_cases[] = { "rollback", "revert", "switch", "recovery" };

START_TEST(test_gpfs_pending_undone)
{
	const char *how = gpfs_undo_cases[_i];
	static const struct s bad[] = {
		{ "gpfs", "pagepool", NULL, "16G", 0, NULL },
		{ "gpfs", "maxMBpS", NULL, "666", 0, NULL },
	};
	static const struct s other[] = { { "gpfs", "maxMBpS", NULL, "4000", 0, NULL } };
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	char log[256], buf[4096];
	pid_t pid;
	int st;

	fprintf(stderr, "-- gpfs pending undone by %s\n", how);
	gpfs_pending_standins();
	if (strcmp(how, "recovery") == 0) {
		pid = start_paused(root, p16, nitems(p16), "after the write pass", 0);
		wait_pause("after the write pass");
		ck_assert_str_eq(gpfs_cfg_pagepool(), "16G");	/* configured, not live */
		ck_assert_int_eq(kill(pid, SIGKILL), 0);
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		ag = mk_agent(root);	/* recovery */
		ck_assert_int_eq(ag->tune->j.in_txn, 0);
	} else {
		ag = mk_agent(root);
		do_apply(ag, "gpfs-client", strcmp(how, "revert") == 0 ? bad : p16, 2, 0, 0, &r);
		dump(r.keys, r.n_keys);
		ck_assert_int_eq(find_key(r.keys, r.n_keys, "pagepool", NULL)->state,
		    strcmp(how, "revert") == 0 ? KNOB__KEY_STATE__KEY_REVERTED :
		    KNOB__KEY_STATE__KEY_PENDING_RESTART);
		ck_assert_int_eq(r.reverted, strcmp(how, "revert") == 0);
		tune_apply_result_free(&r);
	}
	if (strcmp(how, "rollback") == 0) {
		ck_assert_str_eq(gpfs_cfg_pagepool(), "16G");
		ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
		dump(rb.keys, rb.n_keys);
		ck_assert(rb.complete);
		for (size_t i = 0; i < rb.n_keys; i++)
			ck_assert_int_eq(rb.keys[i]->state, KNOB__KEY_STATE__KEY_RESTORED);
		tune_rollback_result_free(&rb);
	} else if (strcmp(how, "switch") == 0) {
		do_apply(ag, "other", other, nitems(other), 0, 0, &r);
		dump(r.keys, r.n_keys);
		ck_assert_int_eq(find_key(r.keys, r.n_keys, "pagepool", NULL)->state,
		    KNOB__KEY_STATE__KEY_RESTORED);
		tune_apply_result_free(&r);
	}
	ck_assert_str_eq(gpfs_cfg_pagepool(), "4294967296");
	/* the layout too: pagepool was cluster-wide (and live), so node01
	 * has no line of its own again (maxMBpS: "other" sets it in switch) */
	ck_assert_int_gt(read_small_file(gcfg, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, strcmp(how, "switch") == 0 ?
	    "pagepool 4294967296\nmaxMBpS 2048\nmaxMBpS 4000 [node01]" :
	    "pagepool 4294967296\nmaxMBpS 2048");
	ck_assert_int_eq(ag->tune->j.npend, 0);
	snprintf(log, sizeof(log), "%s/mmchconfig.log", tmp);
	ck_assert_int_gt(read_small_file(log, buf, sizeof(buf)), 0);
	ck_assert_msg(strstr(buf, "pagepool=4294967296 -i -N node01"), "%s", buf);
	gpfs_restart();	/* the original stays after mmfsd restarts */
	ck_assert_str_eq(gpfs_cfg_pagepool(), "4294967296");
	ck_assert_int_gt(read_small_file(glive, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "pagepool 4294967296\n"));
}
END_TEST

/* An admin's configured values that wait for an mmfsd restart (mmchconfig
 * without -i: pagepool 8G and maxMBpS 4000 configured, mmdiag still shows
 * 4G and 2048) survive an apply and its rollback.  The apply sets
 * pagepool=16G (configured; not live until a restart) and maxMBpS=8000
 * (-i: live and configured).  Rollback puts the live values back with -i
 * (which configures them too), then the configured ones as mmlsconfig
 * spelt them, without -i; after an mmfsd restart the admin's 8G and 4000
 * are live.  Before, only the live values were journaled, and the
 * rollback configured 4G and 2048: the admin's changes were gone.  The
 * same for an apply undone at once (revert: a later key is refused).
 * The layout comes back too: the admin's values were cluster-wide, so
 * the rollback removes the lines of node01's own that the apply's -N
 * node01 made (KEY=DEFAULT -N node01), and runs no mmchconfig without -N
 * (that would change every node's configuration); in "own", the admin's
 * values were node01's own lines, and they are written back as such.
 * Before, the rollback left node01 lines of its own with the admin's
 * values, which no longer followed the cluster-wide ones.  Stand-ins: see
 * gpfs_pending_standins (mmfs.cfg's [node] lines modelled). */
static const char *const gpfs_kept_cases[] = { "rollback", "revert", "own" };

/* Every mmchconfig the stand-in logged named node01 (-N node01): none
 * changed another node's configuration; and the log holds want (unless
 * NULL). */
static void
gpfs_log_node_only(const char *want)
{
	char log[256], buf[4096];

	snprintf(log, sizeof(log), "%s/mmchconfig.log", tmp);
	ck_assert_int_gt(read_small_file(log, buf, sizeof(buf)), 0);
	for (const char *l = buf; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != '\0')) {
		const char *n = strstr(l, " -N node01");

		ck_assert_msg(n != NULL && n < l + strcspn(l, "\n"), "not -N node01: %.*s",
		    (int)strcspn(l, "\n"), l);
	}
	ck_assert_msg(want == NULL || strstr(buf, want) != NULL, "no \"%s\" in:\n%s", want, buf);
}

START_TEST(test_gpfs_configured_kept)
{
	static const struct s bad[] = {
		{ "gpfs", "pagepool", NULL, "16G", 0, NULL },
		{ "gpfs", "maxMBpS", NULL, "666", 0, NULL },
	};
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	char buf[1024];

	const int own = strcmp(gpfs_kept_cases[_i], "own") == 0;
	const char *cfg0 = own ? "pagepool 4294967296\nmaxMBpS 2048\npagepool 8G [node01]\n"
	    "maxMBpS 4000 [node01]" : "pagepool 8G\nmaxMBpS 4000";

	gpfs_pending_standins();
	ck_assert_int_eq(write_small_file(gcfg, cfg0), 0);
	ag = mk_agent(root);
	if (strcmp(gpfs_kept_cases[_i], "revert") == 0) {
		/* maxMBpS=666 is refused: the apply undoes pagepool, both values */
		do_apply(ag, "gpfs-client", bad, nitems(bad), 0, 0, &r);
		dump(r.keys, r.n_keys);
		ck_assert_int_eq(r.reverted, 1);
		tune_apply_result_free(&r);
		ck_assert_int_gt(read_small_file(gcfg, buf, sizeof(buf)), 0);
		ck_assert_str_eq(buf, "pagepool 8G\nmaxMBpS 4000");
		ck_assert_int_eq(ag->tune->j.norig, 0);
		return;
	}
	do_apply(ag, "gpfs-client", p16, nitems(p16), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "pagepool", NULL)->state,
	    KNOB__KEY_STATE__KEY_PENDING_RESTART);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "maxMBpS", NULL)->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	ck_assert_int_gt(read_small_file(gcfg, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, own ? "pagepool 4294967296\nmaxMBpS 2048\npagepool 16G [node01]\n"
	    "maxMBpS 8000 [node01]" : "pagepool 8G\nmaxMBpS 4000\npagepool 16G [node01]\n"
	    "maxMBpS 8000 [node01]");
	rm_agent(ag);
	ag = mk_agent(root);	/* the journal with "configured" loads */
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_gt(read_small_file(gcfg, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, cfg0);
	gpfs_log_node_only(own ? NULL : "pagepool=DEFAULT -N node01");
	ck_assert_int_gt(read_small_file(glive, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "pagepool 4294967296\nmaxMBpS 2048");
	ck_assert_int_eq(rb.complete, 1);
	for (size_t i = 0; i < rb.n_keys; i++)
		ck_assert_int_eq(rb.keys[i]->state, KNOB__KEY_STATE__KEY_RESTORED);
	tune_rollback_result_free(&rb);
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
	gpfs_restart();
	ck_assert_int_gt(read_small_file(glive, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "pagepool 8G\nmaxMBpS 4000");
}
END_TEST

/* Roll ag back: complete, and every (non-default) original of o is back. */
static void
rollback_complete(const struct orig *o)
{
	Knob__RollbackResult rb;

	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert(rb.complete);
	tune_rollback_result_free(&rb);
	assert_originals(o);
}

/* The start of a switch: non-default originals, the loop device as the
 * key of a[0] and b[0], and profile A (a[0]) applied. */
static void
switch_start(struct s *a, struct s *b, struct orig *o)
{
	Knob__ApplyResult r;

	set_originals(o);
	a[0].key = b[0].key = loopdev;
	ag = mk_agent("");
	do_apply(ag, "A", a, 1, 0, 0, &r);
	all_changed(&r);
	tune_apply_result_free(&r);
}

/* apply B (b, n) --check where A is active, from a controller that knows
 * would-restore (restore) or an older one: the loop device's attr is in
 * state want, its message holding msg; nothing is written. */
static void
check_switch(struct s *b, size_t n, int restore, const char *attr, int want, const char *msg)
{
	Knob__ApplyResult r;
	const Knob__KeyResult *k;

	apply_restore = restore;
	do_apply(ag, "B", b, n, 1, 0, &r);
	dump(r.keys, r.n_keys);
	fprintf(stderr, "    => %s\n", r.message);
	k = find_key(r.keys, r.n_keys, loopdev, attr);
	ck_assert_msg((int)k->state == want, "%s: %s, want %s", attr, tune_key_state_name(k->state),
	    tune_key_state_name(want));
	ck_assert_msg(strstr(k->message, msg) != NULL, "%s: no \"%s\" in \"%s\"", attr, msg,
	    k->message);
	ck_assert_str_eq(r.txn_id, "");
	tune_apply_result_free(&r);
}

/* Profiles A and B of the switch tests below (the loop device as key). */
static struct s nr_a[] = { { "blockdev", NULL, "nr_requests", "64", 0, NULL } };
static struct s sched_b[] = { { "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL } };

/* A switch to a profile whose write moves a key of the previous one: A
 * sets nr_requests, B only the scheduler, whose change makes the kernel
 * reset nr_requests.  A's nr_requests is not in B, so it goes back to its
 * (non-default) original in B's transaction, after the scheduler, as for
 * any key of A that B leaves out; a rollback then restores everything. */
START_TEST(test_switch_coupled)
{
	Knob__ApplyResult r;
	const Knob__KeyResult *k;
	struct orig o;

	switch_start(nr_a, sched_b, &o);
	ck_assert_str_eq(sys("nr_requests", loopdev), "64");
	/* --check says what the apply does: restored (an older controller,
	 * which does not know the word, is told would-change) */
	check_switch(sched_b, 1, 1, "nr_requests", KNOB__KEY_STATE__KEY_WOULD_RESTORE,
	    "would go back to its original");
	check_switch(sched_b, 1, 0, "nr_requests", KNOB__KEY_STATE__KEY_WOULD_CHANGE, "");
	ck_assert_str_eq(sched_now(), "none");
	ck_assert_str_eq(sys("nr_requests", loopdev), "64");
	do_apply(ag, "B", sched_b, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 0);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, loopdev, "scheduler")->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	k = find_key(r.keys, r.n_keys, loopdev, "nr_requests");
	ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_RESTORED);
	ck_assert_str_eq(k->after, o.nr);
	tune_apply_result_free(&r);
	ck_assert_str_eq(sched_now(), "mq-deadline");
	ck_assert_str_eq(sys("nr_requests", loopdev), o.nr);
	rollback_complete(&o);
}
END_TEST

/* A key of the previous profile that someone changed since knob set it is
 * left alone by a switch (changed-since), as a rollback leaves it, instead
 * of being overwritten with its original; it stays journaled, a rollback
 * leaves it too, and a rollback with --force restores it. */
START_TEST(test_switch_changed_since)
{
	struct s a[] = { { "blockdev", NULL, "read_ahead_kb", "1024", 0, NULL } };
	struct s b[] = { { "blockdev", NULL, "nr_requests", "64", 0, NULL } };
	Knob__RollbackRequest force = KNOB__ROLLBACK_REQUEST__INIT;
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	const Knob__KeyResult *k;
	struct orig o;

	switch_start(a, b, &o);
	check_switch(b, nitems(b), 1, "read_ahead_kb", KNOB__KEY_STATE__KEY_WOULD_RESTORE,
	    "not in the new profile");
	set_sysfs("read_ahead_kb", "2048");	/* the admin's own change */
	check_switch(b, nitems(b), 1, "read_ahead_kb", KNOB__KEY_STATE__KEY_CHANGED_SINCE,
	    "changed since knob set it; would be left alone");
	do_apply(ag, "B", b, nitems(b), 0, 0, &r);
	dump(r.keys, r.n_keys);
	k = find_key(r.keys, r.n_keys, loopdev, "read_ahead_kb");
	ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_CHANGED_SINCE);
	ck_assert_ptr_nonnull(strstr(k->message, "is 2048, knob set 1024, original 332"));
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "2048");
	ck_assert_str_eq(sys("nr_requests", loopdev), "64");
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert(!rb.complete);
	ck_assert_int_eq(find_key(rb.keys, rb.n_keys, loopdev, "read_ahead_kb")->state,
	    KNOB__KEY_STATE__KEY_CHANGED_SINCE);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "2048");
	ck_assert_str_eq(sys("nr_requests", loopdev), o.nr);
	force.force = 1;
	ck_assert_int_eq(tune_rollback(ag, &force, &rb), 0);
	ck_assert(rb.complete);
	tune_rollback_result_free(&rb);
	assert_originals(&o);
}
END_TEST

/* Apply set[0..n) to the loop device with ag (made when there is none):
 * not reverted. */
static void
loop_apply(const char *profile, struct s *set, size_t n)
{
	Knob__ApplyResult r;

	for (size_t i = 0; i < n; i++)
		set[i].key = loopdev;
	if (ag == NULL)
		ag = mk_agent("");
	do_apply(ag, profile, set, n, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 0);
	tune_apply_result_free(&r);
}

/* Roll ag back (force: --force); complete or not as want. */
static void
loop_rollback(int force, int want, Knob__RollbackResult *rb)
{
	Knob__RollbackRequest req = KNOB__ROLLBACK_REQUEST__INIT;

	req.force = force;
	ck_assert_int_eq(tune_rollback(ag, &req, rb), 0);
	dump(rb->keys, rb->n_keys);
	ck_assert_int_eq(rb->complete, want);
}

/* Roll ag back where the admin set nr_requests 32 since knob set it:
 * left alone (changed-since, the scheduler's restore does not move it
 * for good), incomplete; then --force brings every original of o back. */
static void
rollback_keeps_admin_nr(const struct orig *o)
{
	Knob__RollbackResult rb;
	const Knob__KeyResult *k;

	loop_rollback(0, 0, &rb);
	k = find_key(rb.keys, rb.n_keys, loopdev, "nr_requests");
	ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_CHANGED_SINCE);
	ck_assert_str_eq(k->after, "32");
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(sched_now(), "none");
	ck_assert_str_eq(sys("nr_requests", loopdev), "32");
	loop_rollback(1, 1, &rb);
	tune_rollback_result_free(&rb);
	assert_originals(o);
}

/* A key of the previous profile that someone changed since knob set it,
 * which a write of the new profile moves (A sets nr_requests, the admin
 * then sets 32, B sets the scheduler, whose write resets nr_requests): it
 * is changed-since, as in a switch whose writes leave it alone and as in
 * a rollback; --check says so too, the apply writes the admin's value back
 * after the scheduler's write, and only rollback --force writes its
 * original.  Before, the switch wrote its original (100) over the admin's
 * 32 and called it restored, and --check said would-change. */
START_TEST(test_switch_changed_since_coupled)
{
	Knob__ApplyResult r;
	const Knob__KeyResult *k;
	struct orig o;

	switch_start(nr_a, sched_b, &o);
	set_sysfs("nr_requests", "32");	/* the admin's own change */
	for (int check = 1; check >= 0; check--) {
		do_apply(ag, "B", sched_b, 1, check, 0, &r);
		dump(r.keys, r.n_keys);
		k = find_key(r.keys, r.n_keys, loopdev, "nr_requests");
		ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_CHANGED_SINCE);
		ck_assert_ptr_nonnull(strstr(k->message, "is 32, knob set 64, original 100"));
		ck_assert(check || strstr(k->message, "written back to 32 after a coupled key's "
		    "write moved it"));
		ck_assert_int_eq(r.reverted, 0);
		tune_apply_result_free(&r);
	}
	ck_assert_str_eq(sched_now(), "mq-deadline");
	ck_assert_str_eq(sys("nr_requests", loopdev), "32");
	rollback_keeps_admin_nr(&o);
}
END_TEST

/* The same profile applied again, and re-applied at boot, where it sets
 * only the scheduler: the kernel's nr_requests and the elevator's
 * tunables (iosched) are journaled as moved by that write, not as keys of
 * the profile, so they are not "back to their originals" while the
 * profile still sets the scheduler.  Apply, apply again, --check and the
 * boot re-apply leave the same values; rollback brings the non-default
 * originals back.  Before, the second apply wrote nr_requests 100 and the
 * none: tunables under mq-deadline, failed and reverted (exit 1), and
 * --check said would-change. */
START_TEST(test_apply_again_coupled)
{
	Knob__ApplyResult r;
	struct orig o;
	char nr[32];

	switch_start(sched_b, sched_b, &o);
	snprintf(nr, sizeof(nr), "%s", sys("nr_requests", loopdev));
	ck_assert_str_ne(nr, o.nr);
	for (int check = 1; check >= 0; check--) {
		do_apply(ag, "A", sched_b, 1, check, 0, &r);
		dump(r.keys, r.n_keys);
		ck_assert_int_eq(r.reverted, 0);
		for (size_t i = 0; i < r.n_keys; i++)
			ck_assert_int_eq(r.keys[i]->state, KNOB__KEY_STATE__KEY_UNCHANGED);
		tune_apply_result_free(&r);
	}
	ck_assert_str_eq(sys("nr_requests", loopdev), nr);
	rm_agent(ag);
	set_originals(&o);	/* "reboot" */
	ag = mk_agent("");
	ck_assert_str_eq(sched_now(), "mq-deadline");
	ck_assert_str_eq(sys("nr_requests", loopdev), nr);
	rollback_complete(&o);
}
END_TEST

/* A profile that sets coupled keys to the values they already hold, with
 * the key that moves them: the scheduler write resets nr_requests and the
 * max_sectors_kb write resets read_ahead_kb, and the apply writes them
 * back.  They end where they started, but the rollback's writes of the
 * scheduler and max_sectors_kb move them again, so their originals must
 * be journaled.  Before, they were not, and the rollback said complete
 * with nr_requests at none's default. */
START_TEST(test_coupled_same_value)
{
	struct s set[] = {
		{ "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL },
		{ "blockdev", NULL, "nr_requests", "100", 0, NULL },
		{ "blockdev", NULL, "max_sectors_kb", "256", 0, NULL },
		{ "blockdev", NULL, "read_ahead_kb", "332", 0, NULL },
	};
	Knob__RollbackResult rb;
	struct orig o;

	set_originals(&o);
	loop_apply("same", set, nitems(set));
	ck_assert_str_eq(sched_now(), "mq-deadline");
	ck_assert_str_eq(sys("nr_requests", loopdev), "100");
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "332");
	loop_rollback(0, 1, &rb);
	tune_rollback_result_free(&rb);
	assert_originals(&o);
}
END_TEST

/* The kernel may move a coupled key to the number it had: nr_requests set
 * by hand to none's queue depth under mq-deadline reads the same after a
 * switch to none.  Its original is journaled all the same, because the
 * rollback's write of mq-deadline resets it to mq-deadline's default.
 * Before, it came back as that default. */
START_TEST(test_coupled_moved_to_same)
{
	struct s set[] = { { "blockdev", NULL, "scheduler", "none", 0, NULL } };
	char depth[32];
	Knob__RollbackResult rb;
	struct orig o;

	set_originals(&o);	/* for the other keys; then the starting point */
	set_sysfs("scheduler", "mq-deadline");
	set_sysfs("scheduler", "none");
	snprintf(depth, sizeof(depth), "%s", sys("nr_requests", loopdev));
	set_sysfs("scheduler", "mq-deadline");
	ck_assert_str_ne(sys("nr_requests", loopdev), depth);	/* else nothing to see */
	set_sysfs("nr_requests", depth);
	ck_assert_str_eq(sys("nr_requests", loopdev), depth);
	loop_apply("none", set, nitems(set));
	ck_assert_str_eq(sys("nr_requests", loopdev), depth);
	loop_rollback(0, 1, &rb);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(sched_now(), "mq-deadline");
	ck_assert_str_eq(sys("nr_requests", loopdev), depth);
}
END_TEST

/* A rollback leaves a key someone changed since knob set it alone, even
 * when its own write of a coupled key moves it: the admin's nr_requests
 * is written back after the scheduler's restore reset it, and the result
 * says what it reads.  Before, nr_requests read none's default while the
 * result said 32, left alone. */
/* A rollback that could not write a key (its file briefly a symlink:
 * ELOOP) keeps it journaled; once that rollback has ended, its verdicts
 * do not bind the next one: the same profile applied again (it holds),
 * then an admin's change, and the next rollback leaves that change alone
 * (changed-since) instead of writing the original over it.  Before, the
 * first rollback's "restoring" mark stayed on the entry for good. */
START_TEST(test_failed_rollback_judged_afresh)
{
	struct s set[] = { { "sysfs", "/sys/kernel/knobtest/k", NULL, "5", 0, NULL } };
	char path[256], real[256];
	Knob__RollbackResult rb;
	Knob__ApplyResult r;

	put("/sys/kernel/knobtest/k", "1\n");
	snprintf(path, sizeof(path), "%s/sys/kernel/knobtest/k", root);
	snprintf(real, sizeof(real), "%s.real", path);
	ag = mk_agent(root);
	do_apply(ag, "p", set, 1, 0, 0, &r);
	ck_assert_int_eq(r.n_keys, 1);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	ck_assert_int_eq(rename(path, real), 0);	/* writes refuse a symlink */
	ck_assert_int_eq(symlink(real, path), 0);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_eq(rb.complete, 0);
	tune_rollback_result_free(&rb);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rename(real, path), 0);
	ck_assert_str_eq(get("/sys/kernel/knobtest/k"), "5");
	do_apply(ag, "p", set, 1, 0, 0, &r);	/* holds: nothing written */
	tune_apply_result_free(&r);
	put("/sys/kernel/knobtest/k", "7\n");	/* the admin's own change */
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_eq(rb.n_keys, 1);
	ck_assert_int_eq(rb.keys[0]->state, KNOB__KEY_STATE__KEY_CHANGED_SINCE);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(get("/sys/kernel/knobtest/k"), "7");
}
END_TEST

START_TEST(test_rollback_changed_since_coupled)
{
	struct s set[] = {
		{ "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL },
		{ "blockdev", NULL, "nr_requests", "64", 0, NULL },
	};
	struct orig o;

	set_originals(&o);
	loop_apply("dl", set, nitems(set));
	set_sysfs("nr_requests", "32");	/* the admin's own change */
	rollback_keeps_admin_nr(&o);
}
END_TEST

/* --keep-going with a key refused before any write (read_ahead_kb 333:
 * sysfs would keep 332) that another key's write moves (max_sectors_kb
 * resets read_ahead_kb): the refused key is not written, but the kernel
 * moves it, so its (non-default) original is journaled anyway and the
 * rollback brings it back. */
START_TEST(test_keep_going_refused_coupled)
{
	struct s set[] = {
		{ "blockdev", NULL, "max_sectors_kb", "256", 0, NULL },
		{ "blockdev", NULL, "read_ahead_kb", "333", 0, NULL },
	};
	Knob__ApplyResult r;
	struct orig o;

	set_originals(&o);
	set[0].key = set[1].key = loopdev;
	ag = mk_agent("");
	do_apply(ag, "kg", set, nitems(set), 0, 1, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 0);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, loopdev, "max_sectors_kb")->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, loopdev, "read_ahead_kb")->state,
	    KNOB__KEY_STATE__KEY_FAILED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("max_sectors_kb", loopdev), "256");
	rollback_complete(&o);
}
END_TEST

/* ------------------------------------------------------------ full disk */
static void fill_state_dir(void);

/* Non-default originals, the loop device as set's key, the state directory
 * on a 64 KiB tmpfs in a private mount namespace of this forked test
 * (nothing leaks), filled to its last block when full, and the agent. */
static void
tiny_state_dir(struct s *set, size_t n, struct orig *o, int full)
{
	char cmd[512];

	set_originals(o);
	for (size_t i = 0; i < n; i++)
		set[i].key = loopdev;
	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(system("mount --make-rprivate /"), 0);
	mkdir(state, 0700);
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o size=64k tmpfs '%s'", state);
	ck_assert_int_eq(system(cmd), 0);
	if (full)
		fill_state_dir();
	ag = mk_agent("");
}

/* Fill the state directory to its last block. */
static void
fill_state_dir(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "dd if=/dev/zero of='%s/fill' bs=4k 2>/dev/null; "
	    "test -s '%s/fill'", state, state);
	ck_assert_int_eq(system(cmd), 0);
}

/* The state directory on a tiny tmpfs filled to the last block (in a
 * private mount namespace of this forked test, so nothing leaks): the
 * journal cannot be written, so nothing is written, and every key is
 * failed with the reason. */
START_TEST(test_state_dir_full)
{
	Knob__ApplyResult r;
	struct orig o;
	struct s set[] = {
		{ "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL },
		{ "blockdev", NULL, "read_ahead_kb", "1M", 0, NULL },
	};

	tiny_state_dir(set, nitems(set), &o, 1);
	do_apply(ag, "full", set, nitems(set), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_uint_gt(r.n_keys, 0);
	for (size_t i = 0; i < r.n_keys; i++) {
		ck_assert_int_eq(r.keys[i]->state, KNOB__KEY_STATE__KEY_FAILED);
		ck_assert_int_eq(r.keys[i]->err, ENOSPC);
		ck_assert_ptr_nonnull(strstr(r.keys[i]->message, "not written: the journal"));
	}
	ck_assert_ptr_nonnull(strstr(r.message, "No space left on device; nothing written"));
	tune_apply_result_free(&r);
	assert_originals(&o);
}
END_TEST

/* Set by test_journal_dir_fsync_fails: fsync(2) of a directory fails
 * with EIO, as a failing disk answers.  This definition takes the place
 * of libc's in this test program (the agent's code is linked in). */
static int fail_dir_fsync;

int
fsync(int fd)
{
	struct stat st;

	if (fail_dir_fsync && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		errno = EIO;
		return -1;
	}
	return (int)syscall(SYS_fsync, fd);
}

/* The journal's rename is not known to be on disk when the fsync of its
 * directory fails: then nothing is written, as with a full disk.  Before,
 * the failure was ignored and the keys were written with their originals
 * possibly lost to a power cut. */
START_TEST(test_journal_dir_fsync_fails)
{
	struct s set[] = { { "blockdev", NULL, "read_ahead_kb", "1M", 0, NULL } };
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	struct orig o;

	set_originals(&o);
	set[0].key = loopdev;
	ag = mk_agent("");
	fail_dir_fsync = 1;
	do_apply(ag, "eio", set, nitems(set), 0, 0, &r);
	fail_dir_fsync = 0;
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.n_keys, 1);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_FAILED);
	ck_assert_int_eq(r.keys[0]->err, EIO);
	ck_assert_ptr_nonnull(strstr(r.message, "nothing written"));
	tune_apply_result_free(&r);
	assert_originals(&o);
	/* a rollback whose emptied journal's removal is not known to be on
	 * disk restores, but is not complete: a lost removal would bring the
	 * profile back at boot */
	loop_apply("eio", set, nitems(set));
	fail_dir_fsync = 1;
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	fail_dir_fsync = 0;
	dump(rb.keys, rb.n_keys);
	ck_assert(!rb.complete);
	ck_assert_ptr_nonnull(strstr(rb.message, "restored; the journal "));
	ck_assert_ptr_nonnull(strstr(rb.message, "could not be saved (Input/output error)"));
	tune_rollback_result_free(&rb);
	assert_originals(&o);
}
END_TEST

/* An apply on a thread of its own, paused before its commit. */
struct paused_apply {
	const struct s *set;
	size_t n;
	Knob__ApplyResult r;
};

static void *
apply_before_commit(void *arg)
{
	struct paused_apply *pa = arg;

	apply_pause_ms = 60000;
	apply_pause_at = "before commit";
	do_apply(ag, "full", pa->set, pa->n, 0, 0, &pa->r);
	return NULL;
}

/* SIGUSR1 ends a test pause early (usleep returns EINTR). */
static void
on_usr1(int sig)
{
	(void)sig;
}

/* The state directory fills up while an apply is paused before its commit
 * (the transaction is on disk and the keys are written): the commit cannot
 * be saved, so the apply undoes itself now, as the agent's next start
 * would, and fails.  Every key is back at its (non-default) original, no
 * profile is active, and an agent started on that state directory once
 * there is room finds nothing to undo, re-apply or roll back. */
START_TEST(test_state_dir_full_at_commit)
{
	struct s set[] = {
		{ "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL },
		{ "blockdev", NULL, "read_ahead_kb", "1M", 0, NULL },
	};
	struct paused_apply pa = { .set = set, .n = nitems(set) };
	struct sigaction sa = { .sa_handler = on_usr1 };	/* no SA_RESTART */
	Knob__RollbackResult rb;
	struct orig o;
	char cmd[512];
	pthread_t th;

	tiny_state_dir(set, nitems(set), &o, 0);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, apply_before_commit, &pa), 0);
	wait_pause("before commit");
	ck_assert_str_eq(sched_now(), "mq-deadline");	/* written, not committed */
	/* the pause's marker goes first: its page must not free up later */
	snprintf(cmd, sizeof(cmd), "%s/test-pause", state);
	ck_assert_int_eq(unlink(cmd), 0);
	fill_state_dir();
	ck_assert_int_eq(pthread_kill(th, SIGUSR1), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	dump(pa.r.keys, pa.r.n_keys);
	ck_assert(pa.r.reverted);
	ck_assert_msg(strstr(pa.r.message, "could not be saved (No space left on device): every "
	    "change of this transaction was reverted"), "%s", pa.r.message);
	for (size_t i = 0; i < pa.r.n_keys; i++)
		if (pa.r.keys[i]->state != KNOB__KEY_STATE__KEY_UNCHANGED) {
			ck_assert_int_eq(pa.r.keys[i]->state, KNOB__KEY_STATE__KEY_REVERTED);
			ck_assert_ptr_nonnull(strstr(pa.r.keys[i]->message,
			    "restored: the journal could not be saved"));
		}
	tune_apply_result_free(&pa.r);
	assert_originals(&o);
	ck_assert_str_eq(active_pub(ag, 0), "");
	rm_agent(ag);
	snprintf(cmd, sizeof(cmd), "%s/fill", state);
	ck_assert_int_eq(unlink(cmd), 0);
	ag = mk_agent("");
	assert_originals(&o);
	ck_assert_str_eq(active_pub(ag, 0), "");
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_str_eq(rb.message, "nothing to roll back");
	tune_rollback_result_free(&rb);
	assert_originals(&o);
}
END_TEST

/* tiny_state_dir (not full) with set applied: every key changed. */
static void
tiny_applied(struct s *set, size_t n, struct orig *o)
{
	Knob__ApplyResult r;

	tiny_state_dir(set, n, o, 0);
	do_apply(ag, "full", set, n, 0, 0, &r);
	all_changed(&r);
	tune_apply_result_free(&r);
}

/* The state directory fills up after an apply: a rollback still restores
 * every (non-default) original and completes, because an emptied journal
 * is removed, which needs no room; an agent started on that state
 * directory has nothing to re-apply. */
START_TEST(test_state_dir_full_at_rollback)
{
	struct s set[] = {
		{ "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL },
		{ "blockdev", NULL, "read_ahead_kb", "1M", 0, NULL },
	};
	Knob__RollbackResult rb;
	struct orig o;
	char cmd[512];
	size_t got;

	tiny_applied(set, nitems(set), &o);
	fill_state_dir();
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert(rb.complete);
	ck_assert_int_eq(sscanf(rb.message, "%zu original", &got), 1);
	ck_assert_uint_ge(got, 2);
	ck_assert_msg(strstr(rb.message, "original value(s) restored; journal cleared"), "%s",
	    rb.message);
	tune_rollback_result_free(&rb);
	assert_originals(&o);
	snprintf(cmd, sizeof(cmd), "%s/tune-journal.json", state);
	ck_assert_int_eq(access(cmd, F_OK), -1);
	rm_agent(ag);
	ag = mk_agent("");
	ck_assert_str_eq(active_pub(ag, 0), "");
	assert_originals(&o);
}
END_TEST

/* The state directory fills up after an apply, and the rollback cannot
 * bring every key back (read_ahead_kb was changed by someone since: left
 * alone and kept), so the journal must keep that original and both of
 * the rollback's saves fail (ENOSPC).  Before, the file still named the
 * profile with its settings, and an agent started on it re-applied what
 * the admin had rolled back.  Now the name is blanked in place: the
 * rollback is not complete (knobctl exits 1) and says why, a fresh agent
 * (boot re-apply on) re-applies nothing, the restored scheduler stays
 * restored, and once there is room a --force rollback brings the rest
 * back. */
START_TEST(test_state_dir_full_at_rollback_partial)
{
	struct s set[] = {
		{ "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL },
		{ "blockdev", NULL, "read_ahead_kb", "1M", 0, NULL },
	};
	Knob__RollbackResult rb;
	struct orig o;
	char cmd[512], *msg;

	tiny_applied(set, nitems(set), &o);
	set_sysfs("read_ahead_kb", "256");	/* someone's change since */
	fill_state_dir();
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert(!rb.complete);
	ck_assert_int_eq(find_key(rb.keys, rb.n_keys, loopdev, "read_ahead_kb")->state,
	    KNOB__KEY_STATE__KEY_CHANGED_SINCE);
	ck_assert_int_eq(find_key(rb.keys, rb.n_keys, loopdev, "scheduler")->state,
	    KNOB__KEY_STATE__KEY_RESTORED);
	msg = xstrdup(rb.message);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(sched_now(), o.sched);
	ck_assert_str_eq(active_pub(ag, 0), "");
	rm_agent(ag);
	ag = mk_agent("");	/* a boot: the disk still full */
	ck_assert_str_eq(active_pub(ag, 0), "");
	ck_assert_str_eq(sched_now(), o.sched);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "256");
	ck_assert_msg(strstr(msg, "could not be saved (No space left on device): no profile is "
	    "active in it (cleared in place)"), "%s", msg);
	free(msg);
	snprintf(cmd, sizeof(cmd), "%s/fill", state);
	ck_assert_int_eq(unlink(cmd), 0);
	loop_rollback(1, 1, &rb);
	ck_assert(rb.complete);
	tune_rollback_result_free(&rb);
	assert_originals(&o);
}
END_TEST

/* ------------------------------------------------------------ check mode */
/* --check predicts the writes that would fail (on the real loop device):
 * a scheduler the device does not offer, a read-only attribute, an exact
 * path that is not there, values outside the documented range, a value
 * the normaliser rejects.  The real apply refuses the same before any
 * write. */
START_TEST(test_check_would_fail)
{
	Knob__ApplyResult r;
	struct orig o;
	char ro[128], missing[128];
	struct s set[] = {
		{ "blockdev", NULL, "scheduler", "kyberr", 0, NULL },
		{ "sysfs", NULL, NULL, "4096", 0, NULL },
		{ "sysfs", NULL, NULL, "1", 0, NULL },
		{ "blockdev", NULL, "read_ahead_kb", "333", 0, NULL },
		{ "blockdev", NULL, "nr_requests", "2", 0, NULL },
		{ "blockdev", NULL, "max_sectors_kb", "999999", 0, NULL },
		{ "blockdev", NULL, "rq_affinity", "fast", 0, NULL },
		{ "blockdev", NULL, "nomerges", "1", 0, NULL },
	};
	static const char *const why[] = {
		"does not offer scheduler kyberr (offers: [none] mq-deadline",
		"is read-only (mode 0444)", "no such path on this node",
		"would read back as 332", "below the kernel's minimum of 4",
		"is outside 4..", "", NULL,
	};

	set_originals(&o);
	set_sysfs("nomerges", "0");	/* a loop device keeps what its last user set */
	snprintf(ro, sizeof(ro), "/sys/block/%s/queue/hw_sector_size", loopdev);
	snprintf(missing, sizeof(missing), "/sys/block/%s/queue/no_such_attribute", loopdev);
	for (size_t i = 0; i < nitems(set); i++)
		set[i].key = set[i].driver[0] == 'b' ? loopdev : i == 1 ? ro : missing;
	ag = mk_agent("");
	do_apply(ag, "bad", set, nitems(set), 1, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_uint_eq(r.n_keys, nitems(set));
	for (size_t i = 0; i < nitems(set); i++) {
		const Knob__KeyResult *k = r.keys[i];

		if (why[i] == NULL) {
			ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_WOULD_CHANGE);
			continue;
		}
		ck_assert_msg(k->state == KNOB__KEY_STATE__KEY_WOULD_FAIL, "%s %s: %s", k->key,
		    k->target, tune_key_state_name(k->state));
		ck_assert_msg(strstr(k->message, why[i]) != NULL, "%s: '%s'", k->target, k->message);
	}
	ck_assert_ptr_nonnull(strstr(r.message, "7 would fail"));
	tune_apply_result_free(&r);
	/* the real apply: refused before any write, nothing changed */
	do_apply(ag, "bad", set, nitems(set), 0, 0, &r);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, loopdev, "scheduler")->state,
	    KNOB__KEY_STATE__KEY_FAILED);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, loopdev, "nomerges")->state,
	    KNOB__KEY_STATE__KEY_SKIPPED);
	tune_apply_result_free(&r);
	assert_originals(&o);
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
}
END_TEST

/* ------------------------------------------------------------ protected */
/* A test sysroot marks the loop device as the device under "/" (its
 * mountinfo names the loop's major:minor; /sys/block and /sys/dev/block
 * link to the real sysfs).  A glob never touches it; a second device the
 * glob matches is tuned; naming the loop exactly tunes it. */
START_TEST(test_protected_glob)
{
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	struct orig o;
	char dev[64], p[512], l[512];
	struct stat st;
	struct s glob[] = { { "blockdev", "*", "read_ahead_kb", "64", 0, NULL } };
	struct s exact[] = { { "blockdev", NULL, "read_ahead_kb", "64", 0, NULL } };

	set_originals(&o);
	snprintf(dev, sizeof(dev), "/dev/%s", loopdev);
	ck_assert_int_eq(stat(dev, &st), 0);
	put("/sys/block/fakeq/queue/read_ahead_kb", "128\n");
	snprintf(p, sizeof(p), "%s/sys/block/%s", root, loopdev);
	snprintf(l, sizeof(l), "/sys/block/%s", loopdev);
	ck_assert_int_eq(symlink(l, p), 0);
	put("/sys/dev/block/.keep", "\n");
	snprintf(p, sizeof(p), "%s/sys/dev/block/%u:%u", root, major(st.st_rdev), minor(st.st_rdev));
	snprintf(l, sizeof(l), "/sys/dev/block/%u:%u", major(st.st_rdev), minor(st.st_rdev));
	ck_assert_int_eq(symlink(l, p), 0);
	put("/proc/self/mountinfo", "27 1 %u:%u / / rw,relatime - ext4 %s rw\n"
	    "28 27 0:5 / /proc rw - proc proc rw\n", major(st.st_rdev), minor(st.st_rdev), dev);
	put("/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n");
	ag = mk_agent(root);
	do_apply(ag, "glob", glob, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 0);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "*", loopdev)->state,
	    KNOB__KEY_STATE__KEY_PROTECTED);
	ck_assert_ptr_nonnull(strstr(find_key(r.keys, r.n_keys, "*", loopdev)->message, "holds /"));
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "*", "fakeq")->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), o.ra);
	ck_assert_str_eq(get("/sys/block/fakeq/queue/read_ahead_kb"), "64");

	/* named exactly: the admin means it */
	exact[0].key = loopdev;
	apply_stack = 1;
	do_apply(ag, "exact", exact, 1, 0, 0, &r);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "64");
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	assert_originals(&o);

	/* active swap on a device protects it too */
	put("/proc/self/mountinfo", "28 27 0:5 / /proc rw - proc proc rw\n");
	put("/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n%s partition 1024 0 -2\n", dev);
	snprintf(p, sizeof(p), "%s/sys/class/block", root);
	ck_assert_int_eq(system("true"), 0);
	put("/sys/class/block/.keep", "\n");
	snprintf(p, sizeof(p), "%s/sys/class/block/%s", root, loopdev);
	snprintf(l, sizeof(l), "/sys/class/block/%s", loopdev);
	ck_assert_int_eq(symlink(l, p), 0);
	do_apply(ag, "glob", glob, 1, 1, 0, &r);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "*", loopdev)->state,
	    KNOB__KEY_STATE__KEY_PROTECTED);
	ck_assert_ptr_nonnull(strstr(find_key(r.keys, r.n_keys, "*", loopdev)->message, "swap"));
	tune_apply_result_free(&r);
}
END_TEST

/* ------------------------------------------------------------ renamed devices */
/* Write value to /sys/block/DEV/queue/ATTR of a loop device of this test. */
static void
set_queue(const char *dev, const char *attr, const char *value)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/block/%s/queue/%s", dev, attr);
	ck_assert_msg(write_small_file(path, value) == 0, "cannot set %s %s=%s", dev, attr, value);
}

/* A stand-in for a disk the kernel names differently after a reboot:
 * kernel names cannot be moved, so the test's sysroot has
 * /sys/block/sdb stand for loop device n (0: loopdev, 1: loopdev2), a
 * directory with that loop's real dev (major:minor), a fake device/wwid
 * of its own, and queue linked to the loop's real queue directory.  The
 * real loop devices start at non-default read-ahead values: 332 (the
 * original journaled through sdb) and 1024 (the value knob sets, so the
 * other disk does not look changed-since). */
static void
fake_sdb(int n)
{
	const char *dev = n ? loopdev2 : loopdev;
	char p[PATH_MAX], l[128], majmin[32];

	ck_assert_msg(loopdev[0] && loopdev2[0], "no loop devices");
	snprintf(p, sizeof(p), "%s/sys/block/sdb", root);
	(void)cu_rm_rf(p);
	snprintf(majmin, sizeof(majmin), "%s", cu_readf("/sys/block/%s/dev", dev));
	put("/sys/block/sdb/dev", "%s\n", majmin);
	put("/sys/block/sdb/device/wwid", "naa.5000c500a1b2c3d%d\n", n);
	snprintf(p, sizeof(p), "%s/sys/block/sdb/queue", root);
	snprintf(l, sizeof(l), "/sys/block/%s/queue", dev);
	ck_assert_int_eq(symlink(l, p), 0);
}

/* The renamed-device tests' starting values (non-default: the loops keep
 * their queue settings across attach), with sdb on loop device 0: its
 * read_ahead_kb 332 and, with nr2, nr_requests 100; loop device 1's ra2
 * and nr2; fakeq's (a fake file) 128. */
static void
ren_start(const char *ra2, const char *nr2)
{
	set_queue(loopdev, "read_ahead_kb", "332");
	set_queue(loopdev2, "read_ahead_kb", ra2);
	if (nr2) {
		set_queue(loopdev, "nr_requests", "100");
		set_queue(loopdev2, "nr_requests", nr2);
	}
	put("/sys/block/fakeq/queue/read_ahead_kb", "128\n");
	fake_sdb(0);
}

/* Apply set (keys naming sdb, loop device 0 behind it) with a fresh
 * agent on root, then "reboot" with sdb moved to loop device 1; the
 * starting values as ren_start sets them. */
static void
apply_then_rename(const struct s *set, size_t n, const char *ra2, const char *nr2)
{
	Knob__ApplyResult r;

	ren_start(ra2, nr2);
	ag = mk_agent(root);
	do_apply(ag, "ren", set, n, 0, 0, &r);
	dump(r.keys, r.n_keys);
	all_changed(&r);
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "1024");
	rm_agent(ag);
	ag = NULL;
	fake_sdb(1);
}

/* Rollback refuses sdb's original (key state st, message why): not
 * complete (knobctl rollback exits 1), nothing written to the disk now
 * called sdb, the key still journaled. */
static void
rollback_refused(int st, const char *why)
{
	Knob__RollbackResult rb;
	struct journal j;
	const Knob__KeyResult *k;

	agent_no_reapply = 1;
	ag = mk_agent(root);
	agent_no_reapply = 0;
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert(!rb.complete);
	ck_assert_uint_eq(rb.n_keys, 1);
	k = rb.keys[0];
	ck_assert_int_eq(k->state, st);
	ck_assert_msg(strstr(k->message, why), "%s", k->message);
	ck_assert_ptr_nonnull(strstr(k->message, "(kept in the journal)"));
	ck_assert_ptr_nonnull(strstr(rb.message, "1 of 1 original value(s) did not come back"));
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev2), "1024");
	ck_assert_int_eq(journal_load(ag->tune->journal_path, &j), 0);
	ck_assert_uint_eq(j.norig, 1);
	ck_assert_str_eq(j.orig[0].target, "sdb");
	ck_assert_str_eq(j.orig[0].value, "332");
	journal_free(&j);
}

/* The journal made by apply_then_rename loses its identities (a journal
 * from before them), and the disk now called sdb holds / (the sysroot's
 * mountinfo names its major:minor, and /sys/dev/block leads to sdb). */
static void
sdb_now_root(void)
{
	char path[PATH_MAX], majmin[32];

	snprintf(path, sizeof(path), "%s/tune-journal.json", state);
	cu_journal_strip_idents(path);
	snprintf(majmin, sizeof(majmin), "%s", cu_readf("/sys/block/%s/dev", loopdev2));
	put("/proc/self/mountinfo", "27 1 %s / / rw,relatime - ext4 /dev/sdb rw\n", majmin);
	put("/sys/dev/block/.keep", "\n");
	snprintf(path, sizeof(path), "%s/sys/dev/block/%s", root, majmin);
	ck_assert_int_eq(symlink("../../block/sdb", path), 0);
}

/* The journal records what sdb was (major:minor, wwid) with its
 * original; after a "reboot" sdb is another disk (see fake_sdb): rollback
 * refuses to write the old disk's original to it, reports it, keeps it
 * journaled and fails.  Before, it wrote 332 onto the other disk because
 * its live value was the one knob set.  With sdb back on the first disk
 * the original is restored. */
START_TEST(test_rollback_renamed_device)
{
	struct s set[] = { { "blockdev", "sdb", "read_ahead_kb", "1M", 0, NULL } };
	Knob__RollbackResult rb;

	apply_then_rename(set, nitems(set), "1024", NULL);
	rollback_refused(KNOB__KEY_STATE__KEY_FAILED, "sdb is another device now (journaled as ");
	ck_assert_ptr_nonnull(strstr(cu_readf("%s/tune-journal.json", state),
	    "wwid=naa.5000c500a1b2c3d0"));
	fake_sdb(0);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert(rb.complete);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "332");
	ck_assert_str_eq(sys("read_ahead_kb", loopdev2), "1024");
}
END_TEST

/* A journal from before identities (they are stripped here) whose
 * original a glob journaled on sdb; after a "reboot" the disk now called
 * sdb holds / (the sysroot's mountinfo names its major:minor, and
 * /sys/dev/block leads to sdb): rollback refuses to write it, as the boot
 * re-apply's glob does (protected, kept journaled, not complete). */
START_TEST(test_rollback_now_protected)
{
	struct s set[] = { { "blockdev", "sd*", "read_ahead_kb", "1M", 0, NULL } };

	apply_then_rename(set, nitems(set), "1024", NULL);
	sdb_now_root();
	rollback_refused(KNOB__KEY_STATE__KEY_PROTECTED, "sdb holds /");
}
END_TEST

/* Start ag on sysroot (re-apply as asked by agent_no_reapply) with its log
 * (stderr) going to a file too; the log, malloc'd. */
static char *
agent_logged(const char *sysroot)
{
	char path[PATH_MAX], *log;
	int save, fd;

	snprintf(path, sizeof(path), "%s/agent.log", tmp);
	fflush(stderr);
	ck_assert_int_ge(save = dup(2), 0);
	ck_assert_int_ge(fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), 0);
	ck_assert_int_ge(dup2(fd, 2), 0);
	close(fd);
	ag = agent_new(sysroot);
	fd = tune_init(ag);
	fflush(stderr);
	dup2(save, 2);
	close(save);
	ck_assert_int_eq(fd, 0);	/* knobd starts */
	log = cu_slurp(path);
	fprintf(stderr, "%s", log);
	return log;
}

/* Start ag on root as agent_logged does. */
static char *
mk_agent_logged(void)
{
	return agent_logged(root);
}

/* The journal holds the originals of sdb (read_ahead_kb 332, nr_requests
 * 100: loop device 0's), with their identity, and fakeq's, as set. */
static void
journal_kept_sdb(const char *fakeq)
{
	struct journal j;
	long k;

	ck_assert_int_eq(journal_load(ag->tune->journal_path, &j), 0);
	ck_assert_uint_eq(j.norig, fakeq ? 3 : 2);
	ck_assert_int_ge(k = journal_find(j.orig, j.norig, "blockdev", "sdb", "read_ahead_kb"), 0);
	ck_assert_str_eq(j.orig[k].value, "332");
	ck_assert_int_ge(k = journal_find(j.orig, j.norig, "blockdev", "sdb", "nr_requests"), 0);
	ck_assert_str_eq(j.orig[k].value, "100");
	if (fakeq) {
		ck_assert_int_ge(k = journal_find(j.orig, j.norig, "blockdev", "fakeq",
		    "read_ahead_kb"), 0);
		ck_assert_str_eq(j.orig[k].value, fakeq);
	}
	journal_free(&j);
}

/* Loop device 1, sdb after the "reboot", still has its own values (ra,
 * nr: as apply_then_rename set them). */
static void
loop2_untouched(const char *ra, const char *nr)
{
	ck_assert_str_eq(sys("read_ahead_kb", loopdev2), ra);
	ck_assert_str_eq(sys("nr_requests", loopdev2), nr);
}

/* With sdb back on loop device 0, a rollback is complete: its originals
 * (332, 100) and fakeq's (128) are back. */
static void
rollback_names_back(void)
{
	Knob__RollbackResult rb;

	fake_sdb(0);
	loop_rollback(0, 1, &rb);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "332");
	ck_assert_str_eq(sys("nr_requests", loopdev), "100");
	ck_assert_str_eq(get("/sys/block/fakeq/queue/read_ahead_kb"), "128");
}

/* The boot and crash-recovery tests' profile: sdb's read_ahead_kb and
 * nr_requests named exactly, and fakeq's read_ahead_kb. */
static const struct s ren_set[] = {
	{ "blockdev", "sdb", "read_ahead_kb", "1M", 0, NULL },
	{ "blockdev", "sdb", "nr_requests", "64", 0, NULL },
	{ "blockdev", "fakeq", "read_ahead_kb", "64", 0, NULL },
};

/* Profile A's keys on sdb, named exactly (renamed: sdb is another disk
 * now) or through a glob (protected: a journal from before identities,
 * and the disk now called sdb holds /). */
static const struct switch_ref_case {
	const char *key;
	int st;
	const char *why;
} switch_ref_cases[] = {
	{ "sdb", KNOB__KEY_STATE__KEY_FAILED, "sdb is another device now (journaled as " },
	{ "sd*", KNOB__KEY_STATE__KEY_PROTECTED, "sdb holds /" },
};

/* A switch from A (sdb's read_ahead_kb and nr_requests, loop device 0
 * behind it, from 332 and 100) to B (fakeq only) after a "reboot" that
 * moved sdb to loop device 1, which reads the values knob set (1024, 64:
 * identical disks tuned alike, so it does not look changed-since): A's
 * keys that B does not set are judged as rollback judges them: refused
 * (failed, or protected), reported, not written to the other disk, kept
 * in the journal, and counted in the reply's kept (the node fails,
 * knobctl exits 1, as its rollback would); B's key is applied and B is
 * active.  Before, the switch wrote loop device 0's originals (332, 100)
 * onto loop device 1.  With the names back, a rollback restores them. */
START_TEST(test_switch_refused)
{
	const struct switch_ref_case *c = &switch_ref_cases[_i];
	struct s a[] = {
		{ "blockdev", c->key, "read_ahead_kb", "1M", 0, NULL },
		{ "blockdev", c->key, "nr_requests", "64", 0, NULL },
	};
	struct s b[] = { { "blockdev", "fakeq", "read_ahead_kb", "64", 0, NULL } };
	static const char *const attrs[] = { "sdb read_ahead_kb", "sdb nr_requests" };
	Knob__ApplyResult r;

	apply_then_rename(a, nitems(a), "1024", "64");
	if (c->st == KNOB__KEY_STATE__KEY_PROTECTED)
		sdb_now_root();
	agent_no_reapply = 1;
	ag = mk_agent(root);
	agent_no_reapply = 0;
	do_apply(ag, "B", b, nitems(b), 0, 0, &r);
	dump(r.keys, r.n_keys);
	loop2_untouched("1024", "64");
	ck_assert_int_eq(r.reverted, 0);
	ck_assert_uint_eq(r.kept, 2);
	ck_assert_msg(strstr(r.message, "applied; 2 key(s) refused: not the device journaled, "
	    "kept in the journal"), "%s", r.message);
	for (size_t i = 0; i < nitems(attrs); i++) {
		const Knob__KeyResult *k = find_key(r.keys, r.n_keys, c->key, attrs[i]);

		ck_assert_int_eq(k->state, c->st);
		ck_assert_msg(strstr(k->message, c->why), "%s", k->message);
		ck_assert_ptr_nonnull(strstr(k->message, "(kept in the journal)"));
	}
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "fakeq", NULL)->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/sys/block/fakeq/queue/read_ahead_kb"), "64");
	ck_assert_str_eq(active_pub(ag, 0), "B");
	journal_kept_sdb("128");
	if (c->st == KNOB__KEY_STATE__KEY_PROTECTED)
		return;
	rollback_names_back();
	loop2_untouched("1024", "64");
}
END_TEST

/* knobd starts with profile "ren" active (sdb's read_ahead_kb and
 * nr_requests named exactly, fakeq's) after a "reboot" that moved sdb to
 * loop device 1 and reset fakeq: the re-apply writes nothing to the disk
 * now called sdb (its values stay 32 and 96), logs each refused key with
 * the journal file, keeps loop device 0's originals journaled, re-applies
 * fakeq, and knobd starts with the profile active and a note that counts
 * the refused keys.  Before, it wrote the profile's 1024 and 64 onto the
 * other disk. */
START_TEST(test_reapply_renamed_device)
{
	static const char *const attrs[] = { "read_ahead_kb", "nr_requests" };
	char want[PATH_MAX + 128], *log;

	apply_then_rename(ren_set, nitems(ren_set), "32", "96");
	put("/sys/block/fakeq/queue/read_ahead_kb", "128\n");	/* reset by the "reboot" */
	log = mk_agent_logged();
	loop2_untouched("32", "96");
	for (size_t i = 0; i < nitems(attrs); i++) {
		snprintf(want, sizeof(want), "journal %s/tune-journal.json: re-apply at start: "
		    "blockdev sdb %s refused: sdb is another device now (journaled as ", state,
		    attrs[i]);
		ck_assert_msg(strstr(log, want), "no '%s' in the log", want);
	}
	free(log);
	ck_assert_str_eq(get("/sys/block/fakeq/queue/read_ahead_kb"), "64");
	ck_assert_str_eq(active_pub(ag, 0), "ren");
	ck_assert_msg(strstr(active_pub(ag, 1), "(1 key(s)), 2 refused: not the device "
	    "journaled"), "%s", active_pub(ag, 1));
	journal_kept_sdb("128");
}
END_TEST

/* An agent killed after the write pass of an apply to sdb (loop device 0
 * behind it) and fakeq restarts after a "reboot" that moved sdb to loop
 * device 1: the crash recovery restores fakeq, refuses sdb's original
 * (the same refusal as rollback's: not written to the other disk, logged,
 * kept in the journal as an original), and clears the transaction; with
 * the names back, a rollback restores it. */
START_TEST(test_recovery_renamed_device)
{
	char *log;
	pid_t pid;
	int st;

	ren_start("32", "96");
	pid = start_paused(root, ren_set, nitems(ren_set), "after the write pass", 0);
	wait_pause("after the write pass");
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st));
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "1024");
	ck_assert_str_eq(get("/sys/block/fakeq/queue/read_ahead_kb"), "64");
	fake_sdb(1);
	log = mk_agent_logged();	/* recovery before anything else */
	loop2_untouched("32", "96");
	ck_assert_msg(strstr(log, "recovery: blockdev sdb read_ahead_kb: could not restore "
	    "332: sdb is another device now (journaled as "), "%s", log);
	ck_assert_msg(strstr(log, "recovery: blockdev sdb nr_requests: could not restore "
	    "100: sdb is another device now (journaled as "), "%s", log);
	free(log);
	ck_assert_int_eq(ag->tune->j.in_txn, 0);
	ck_assert_str_eq(get("/sys/block/fakeq/queue/read_ahead_kb"), "128");
	journal_kept_sdb(NULL);
	rollback_names_back();
	loop2_untouched("32", "96");
}
END_TEST

/* ------------------------------------------------------------ shipped profile */
/* hpc-storage-base as shipped, on a node that cannot switch SMT (this VM
 * reads "notsupported"; stand-in tree under a sysroot so that the host's
 * CPU and THP settings are not touched, with the SMT file copied from the
 * real one when it says so): the transaction applies, SMT is unsupported,
 * nothing is reverted. */
START_TEST(test_base_profile_smt)
{
	Knob__ApplyResult r;
	struct strvec errs = { 0 };
	struct profile *pr;
	Knob__Setting **v;
	Knob__ApplyRequest req = KNOB__APPLY_REQUEST__INIT;
	char real[64] = "";
	size_t nunsup = 0;

	read_small_file("/sys/devices/system/cpu/smt/control", real, sizeof(real));
	put("/sys/devices/system/cpu/smt/control", "%s\n",
	    strcmp(real, "forceoff") == 0 ? "forceoff" : "notsupported");
	for (int c = 0; c < 2; c++) {
		char p[256];

		snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", c);
		put(p, "powersave\n");
		snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/cpuidle/state2/disable", c);
		put(p, "0\n");
	}
	put("/sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
	put("/proc/sys/kernel/numa_balancing", "1\n");
	pr = profile_load("hpc-storage-base", &errs);
	ck_assert_msg(pr != NULL, "%s", errs.n ? errs.v[0] : "?");
	v = xcalloc(pr->n, sizeof(*v));
	for (size_t i = 0; i < pr->n; i++) {
		v[i] = xcalloc(1, sizeof(**v));
		knob__setting__init(v[i]);
		v[i]->driver = pr->s[i].driver;
		v[i]->key = pr->s[i].key;
		v[i]->attr = pr->s[i].attr;
		v[i]->match = pr->s[i].match;
		v[i]->value = pr->s[i].value;
	}
	req.profile = pr->name;
	req.settings = v;
	req.n_settings = pr->n;
	ag = mk_agent(root);
	ck_assert_int_eq(tune_apply(ag, &req, &r), 0);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 0);
	for (size_t i = 0; i < r.n_keys; i++) {
		if (strstr(r.keys[i]->key, "smt/control")) {
			ck_assert_int_eq(r.keys[i]->state, KNOB__KEY_STATE__KEY_UNSUPPORTED);
			ck_assert_ptr_nonnull(strstr(r.keys[i]->message, "SMT cannot be switched"));
			nunsup++;
		} else
			ck_assert_int_ne(r.keys[i]->state, KNOB__KEY_STATE__KEY_FAILED);
	}
	ck_assert_uint_eq(nunsup, 1);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor"), "performance");
	rm_agent(ag);

	/* the real node, --check only (nothing written): SMT is unsupported
	 * exactly when the kernel says it cannot be switched.  Its own state:
	 * the journal above is the stand-in tree's (with that one this agent
	 * once re-applied hpc-storage-base to this host: THP never) */
	snprintf(state, sizeof(state), "%s/state-real", tmp);
	ag = mk_agent("");
	req.check = 1;
	ck_assert_int_eq(tune_apply(ag, &req, &r), 0);
	for (size_t i = 0; i < r.n_keys; i++)
		if (strstr(r.keys[i]->key, "smt/control"))
			ck_assert_int_eq(r.keys[i]->state == KNOB__KEY_STATE__KEY_UNSUPPORTED,
			    strcmp(real, "notsupported") == 0 || strcmp(real, "forceoff") == 0 ||
			    strcmp(real, "notimplemented") == 0 || real[0] == '\0');
	tune_apply_result_free(&r);
	for (size_t i = 0; i < pr->n; i++)
		free(v[i]);
	free(v);
	profile_free(pr);
	strvec_free(&errs);
}
END_TEST

/* A journal is its tree's: an agent with another --sysroot refuses it and
 * writes nothing (before, it re-applied the journal's profile into its own
 * tree, and rollback would have put the other tree's originals there);
 * one from before the field is adopted, and names its tree once saved. */
START_TEST(test_journal_sysroot)
{
	struct s set[] = { { "sysctl", "vm.dirty_ratio", NULL, "10", 0, NULL } };
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	struct journal j;
	char other[160], jpath[192], *before, *after;
	struct agent *b;

	put("/proc/sys/vm/dirty_ratio", "33\n");
	ag = mk_agent(root);
	do_apply(ag, "js", set, nitems(set), 0, 0, &r);
	all_changed(&r);
	tune_apply_result_free(&r);
	rm_agent(ag);
	ag = NULL;
	snprintf(jpath, sizeof(jpath), "%s/" TUNE_JOURNAL_NAME, state);
	before = cu_slurp(jpath);
	ck_assert_ptr_nonnull(strstr(before, root));

	snprintf(other, sizeof(other), "%s/other", tmp);
	cu_write_at(other, "/proc/sys/vm/dirty_ratio", 0644, "44\n");
	b = agent_new(other);
	ck_assert_int_eq(tune_init(b), -1);
	rm_agent(b);
	ck_assert_str_eq(cu_readf("%s/proc/sys/vm/dirty_ratio", other), "44");
	after = cu_slurp(jpath);
	ck_assert_str_eq(after, before);
	free(after);

	/* a journal without "sysroot" (knob before it): adopted */
	ck_assert_int_eq(journal_load(jpath, &j), 0);
	free(j.sysroot);
	j.sysroot = NULL;
	ck_assert_int_eq(journal_save(jpath, &j), 0);
	journal_free(&j);
	after = cu_slurp(jpath);
	ck_assert_ptr_null(strstr(after, "sysroot"));
	free(after);
	ag = mk_agent(root);
	ck_assert_str_eq(active_pub(ag, 0), "js");
	set[0].value = "12";
	do_apply(ag, "js", set, nitems(set), 0, 0, &r);
	all_changed(&r);
	tune_apply_result_free(&r);
	after = cu_slurp(jpath);
	ck_assert_ptr_nonnull(strstr(after, "\"sysroot\""));
	ck_assert_ptr_nonnull(strstr(after, root));
	free(after);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(get("/proc/sys/vm/dirty_ratio"), "33");
	ck_assert_str_eq(cu_readf("%s/proc/sys/vm/dirty_ratio", other), "44");
	free(before);
}
END_TEST

/* ------------------------------------------------------------ boot */
/* Non-default originals, then profile set (the loop device as each key)
 * applied by an agent that stops again: a journal to start on. */
static void
loop_applied(const char *profile, struct s *set, size_t n, struct orig *o)
{
	Knob__ApplyResult r;

	set_originals(o);
	for (size_t i = 0; i < n; i++)
		set[i].key = loopdev;
	ag = mk_agent("");
	do_apply(ag, profile, set, n, 0, 0, &r);
	ck_assert_int_eq(r.reverted, 0);
	tune_apply_result_free(&r);
	rm_agent(ag);
	ag = NULL;
}

/* knobd restarts with an active profile after the values were reset
 * behind its back (as a reboot does): it re-applies, keeps the first
 * originals and says so; --no-reapply leaves the node alone. */
START_TEST(test_reapply_at_boot)
{
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	Knob__VerifyResult v;
	Knob__VerifyRequest vreq = KNOB__VERIFY_REQUEST__INIT;
	struct orig o;
	struct s set[] = {
		{ "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL },
		{ "blockdev", NULL, "nr_requests", "64", 0, NULL },
		{ "blockdev", NULL, "read_ahead_kb", "1M", 0, NULL },
	};

	loop_applied("boot", set, nitems(set), &o);

	/* "reboot": the kernel's values are back; --no-reapply keeps them */
	set_originals(&o);
	agent_no_reapply = 1;
	ag = mk_agent("");
	agent_no_reapply = 0;
	assert_originals(&o);
	ck_assert_str_eq(active_pub(ag, 1), "");
	rm_agent(ag);
	ag = mk_agent("");
	ck_assert_str_eq(sched_now(), "mq-deadline");
	ck_assert_str_eq(sys("nr_requests", loopdev), "64");
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "1024");
	ck_assert_ptr_nonnull(strstr(active_pub(ag, 1), "re-applied at boot"));
	ck_assert_str_eq(active_pub(ag, 0), "boot");
	/* verify without a profile: the active one, all ok, with the note */
	vreq.profile = (char *)(uintptr_t)"";
	ck_assert_int_eq(tune_verify(ag, &vreq, &v), 0);
	ck_assert_uint_eq(v.n_keys, 3);
	for (size_t i = 0; i < v.n_keys; i++)
		ck_assert_int_eq(v.keys[i]->state, KNOB__KEY_STATE__KEY_OK);
	ck_assert_ptr_nonnull(strstr(v.active_note, "re-applied at boot"));
	tune_verify_result_free(&v);
	/* --check changes nothing, the published note neither (before, it
	 * cleared the note, as a committed apply does) */
	do_apply(ag, "boot", set, nitems(set), 1, 0, &r);
	dump(r.keys, r.n_keys);
	for (size_t i = 0; i < r.n_keys; i++)
		ck_assert_int_eq(r.keys[i]->state, KNOB__KEY_STATE__KEY_UNCHANGED);
	tune_apply_result_free(&r);
	ck_assert_ptr_nonnull(strstr(active_pub(ag, 1), "re-applied at boot"));
	/* the first originals are still the ones journaled */
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	assert_originals(&o);
}
END_TEST

/* The test's journal file (static buffer). */
static const char *
journal_path(void)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/" TUNE_JOURNAL_NAME, state);
	return path;
}

/* The journal's boot id, "" for none (malloc'd). */
static char *
journal_boot_id(void)
{
	struct journal j;
	char *id;

	ck_assert_int_eq(journal_load(journal_path(), &j), 0);
	id = xstrdup(j.boot_id ? j.boot_id : "");
	journal_free(&j);
	return id;
}

/* The journal as written before the boot id was recorded. */
static void
journal_drop_boot_id(void)
{
	struct journal j;

	ck_assert_int_eq(journal_load(journal_path(), &j), 0);
	free(j.boot_id);
	j.boot_id = NULL;
	ck_assert_int_eq(journal_save(journal_path(), &j), 0);
	journal_free(&j);
}

/* knobd restarted without a reboot (systemctl restart, an upgrade, a
 * crash): sysfs kept the profile's values, so one that differs is the
 * admin's, and it stays, as rollback and a switch leave it; the log and
 * note say restarted in the same boot and count the drift.  Before, the
 * restart wrote the profile's 1024 over the admin's 2048 and said
 * "re-applied at boot".  A reboot (another boot id) re-applies, keeping
 * the first originals; so does a journal from before the boot id. */
START_TEST(test_restart_same_boot)
{
	Knob__VerifyResult v;
	Knob__VerifyRequest vreq = KNOB__VERIFY_REQUEST__INIT;
	struct orig o;
	char *log, *id;
	struct s set[] = {
		{ "blockdev", NULL, "nr_requests", "64", 0, NULL },
		{ "blockdev", NULL, "read_ahead_kb", "1M", 0, NULL },
	};

	loop_applied("tp", set, nitems(set), &o);
	id = journal_boot_id();
	ck_assert_str_eq(id, "boot-1");
	free(id);

	/* (1) the admin's own change, then knobd restarts in the same boot */
	set_sysfs("read_ahead_kb", "2048");
	agent_same_boot = 1;
	log = agent_logged("");
	agent_same_boot = 0;
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "2048");
	ck_assert_str_eq(sys("nr_requests", loopdev), "64");
	ck_assert_ptr_nonnull(strstr(log, "active profile tp: knobd restarted in the same boot "
	    "(boot id boot-1): not re-applied; 1 key(s) differ from the profile (1 changed since "
	    "knob set them): knobctl verify shows them, knobctl apply tp re-applies"));
	free(log);
	ck_assert_ptr_nonnull(strstr(active_pub(ag, 1), "restarted in the same boot "));
	ck_assert_ptr_nonnull(strstr(active_pub(ag, 1), "not re-applied, 1 key(s) differ (1 "
	    "changed since knob set them)"));
	vreq.profile = (char *)(uintptr_t)"";
	ck_assert_int_eq(tune_verify(ag, &vreq, &v), 0);
	ck_assert_uint_eq(v.n_keys, 2);
	for (size_t i = 0; i < v.n_keys; i++)
		ck_assert_int_eq(v.keys[i]->state, strcmp(v.keys[i]->before, "2048") == 0 ?
		    KNOB__KEY_STATE__KEY_DRIFT : KNOB__KEY_STATE__KEY_OK);
	ck_assert_ptr_nonnull(strstr(v.active_note, "restarted in the same boot"));
	tune_verify_result_free(&v);
	rm_agent(ag);
	ag = NULL;

	/* (2) a reboot: the kernel's values back, another boot id: re-applied */
	set_originals(&o);
	ag = mk_agent("");
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "1024");
	ck_assert_str_eq(sys("nr_requests", loopdev), "64");
	ck_assert_ptr_nonnull(strstr(active_pub(ag, 1), "re-applied at boot"));
	id = journal_boot_id();
	ck_assert_str_eq(id, "boot-2");
	free(id);
	rm_agent(ag);
	ag = NULL;

	/* (3) a journal from before the boot id: re-applied, as before */
	journal_drop_boot_id();
	set_sysfs("read_ahead_kb", "2048");
	agent_same_boot = 1;
	ag = mk_agent("");
	agent_same_boot = 0;
	ck_assert_str_eq(sys("read_ahead_kb", loopdev), "1024");
	ck_assert_ptr_nonnull(strstr(active_pub(ag, 1), "re-applied at boot"));
	rollback_complete(&o);	/* the first originals are still the ones journaled */
}
END_TEST

/* gpfs pagepool over 75 % of the node's RAM (stand-in mmdiag/mmchconfig,
 * /proc/meminfo of a 16 GiB node under the sysroot): would-fail with
 * --check, refused before any write otherwise; 8G is fine. */
START_TEST(test_gpfs_pagepool_ram)
{
	Knob__ApplyResult r;
	char body[512];
	static const struct s big[] = { { "gpfs", "pagepool", NULL, "16G", 0, NULL } };
	static const struct s ok[] = { { "gpfs", "pagepool", NULL, "8G", 0, NULL } };

	put("/proc/meminfo", "MemTotal:       16777216 kB\nMemFree:        1000 kB\n");
	snprintf(body, sizeof(body), "echo ' ! pagepool 1073741824'\n");
	script("/usr/lpp/mmfs/bin/mmdiag", body);
	snprintf(body, sizeof(body), "echo \"$*\" >> '%s/mmchconfig.log'\n", tmp);
	script("/usr/lpp/mmfs/bin/mmchconfig", body);
	ag = mk_agent(root);
	do_apply(ag, "big", big, 1, 1, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_WOULD_FAIL);
	ck_assert_ptr_nonnull(strstr(r.keys[0]->message, "pagepool 16G is over 75% of this node's RAM"));
	tune_apply_result_free(&r);
	do_apply(ag, "big", big, 1, 0, 0, &r);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_FAILED);
	tune_apply_result_free(&r);
	snprintf(body, sizeof(body), "%s/mmchconfig.log", tmp);
	ck_assert_int_ne(access(body, F_OK), 0);	/* never called */
	do_apply(ag, "ok", ok, 1, 1, 0, &r);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_WOULD_CHANGE);
	tune_apply_result_free(&r);
}
END_TEST

/* Protected devices through the layers (a fake sysfs tree under the
 * sysroot, said plainly: no device-mapper here): "/" on dm-0, which sits
 * on a partition of fakea; swap on a partition of fakeb.  A glob touches
 * neither dm-0, nor fakea, nor fakeb; fakec is tuned. */
START_TEST(test_protected_layers)
{
	Knob__ApplyResult r;
	struct s glob[] = { { "blockdev", "*", "read_ahead_kb", "64", 0, NULL } };
	static const char *const links[][2] = {
		{ "/sys/dev/block/253:0", "../../block/dm-0" },
		{ "/sys/class/block/dm-0", "../../block/dm-0" },
		{ "/sys/class/block/fakea2", "../../block/fakea/fakea2" },
		{ "/sys/class/block/fakeb1", "../../block/fakeb/fakeb1" },
		{ "/sys/block/dm-0/slaves/fakea2", "../../fakea/fakea2" },
	};
	const char *devs[] = { "dm-0", "fakea", "fakeb", "fakec" };

	for (size_t i = 0; i < nitems(devs); i++) {
		char p[128];

		snprintf(p, sizeof(p), "/sys/block/%s/queue/read_ahead_kb", devs[i]);
		put(p, "128\n");
	}
	put("/sys/block/fakea/fakea2/partition", "2\n");
	put("/sys/block/fakeb/fakeb1/partition", "1\n");
	put("/sys/block/dm-0/slaves/.keep", "\n");
	put("/sys/dev/block/.keep", "\n");
	put("/sys/class/block/.keep", "\n");
	for (size_t i = 0; i < nitems(links); i++) {
		char p[512];

		snprintf(p, sizeof(p), "%s%s", root, links[i][0]);
		ck_assert_int_eq(symlink(links[i][1], p), 0);
	}
	put("/proc/self/mountinfo", "27 1 253:0 / / rw,relatime - xfs /dev/mapper/vg-root rw\n");
	put("/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/dev/fakeb1 partition 1 0 -2\n");
	ag = mk_agent(root);
	do_apply(ag, "layers", glob, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	for (size_t i = 0; i < nitems(devs); i++)
		ck_assert_int_eq(find_key(r.keys, r.n_keys, "*", devs[i])->state, i == 3 ?
		    KNOB__KEY_STATE__KEY_CHANGED : KNOB__KEY_STATE__KEY_PROTECTED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/sys/block/fakea/queue/read_ahead_kb"), "128");
	ck_assert_str_eq(get("/sys/block/fakec/queue/read_ahead_kb"), "64");
}
END_TEST

/* A scheduler that is a module not loaded yet is not a would-fail: the
 * write loads it (fake sysfs and modules.dep under the sysroot, said
 * plainly); a name that is neither offered nor a module is. */
START_TEST(test_check_sched_module)
{
	Knob__ApplyResult r;
	struct utsname u;
	char p[256];
	static const struct s set[] = {
		{ "blockdev", "fakem", "scheduler", "kyber", 0, NULL },
		{ "blockdev", "fakem", "scheduler", "bogus", 0, NULL },
	};

	ck_assert_int_eq(uname(&u), 0);
	put("/sys/block/fakem/queue/scheduler", "[none] mq-deadline\n");
	snprintf(p, sizeof(p), "/lib/modules/%s/modules.dep", u.release);
	put(p, "kernel/block/kyber-iosched.ko.xz:\nkernel/block/bfq.ko.xz:\n");
	ag = mk_agent(root);
	do_apply(ag, "m", set, 1, 1, 0, &r);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_WOULD_CHANGE);
	tune_apply_result_free(&r);
	do_apply(ag, "m", set + 1, 1, 1, 0, &r);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_WOULD_FAIL);
	tune_apply_result_free(&r);
}
END_TEST

/* modules.dep out of sight, as the shipped unit's ProtectKernelModules=
 * leaves it (an empty /usr/lib/modules): on a modular kernel (the
 * sysroot has /proc/modules) an elevator mainline builds as a module is
 * not a would-fail, since the kernel's own request_module at the write
 * loads it; a name that is no such elevator still is.  On a kernel
 * without modules (no /proc/modules) an elevator not offered is one.
 * Before, --check (and apply's step 1, before any write) refused bfq and
 * kyber under the unit.  Fake sysfs and /proc/modules, said plainly. */
START_TEST(test_check_sched_module_hidden)
{
	static const char *const name[] = { "kyber", "bfq", "bogus" };
	Knob__ApplyResult r;
	struct s set[] = { { "blockdev", "fakem", "scheduler", NULL, 0, NULL } };

	put("/sys/block/fakem/queue/scheduler", "[none] mq-deadline\n");
	ag = mk_agent(root);
	for (int modular = 0; modular < 2; modular++) {
		if (modular)
			put("/proc/modules", "loop 45056 0 - Live 0x0000000000000000\n");
		for (size_t i = 0; i < nitems(name); i++) {
			set[0].value = name[i];
			do_apply(ag, "m", set, 1, 1, 0, &r);
			ck_assert_msg(r.keys[0]->state == (modular && i < 2 ?
			    KNOB__KEY_STATE__KEY_WOULD_CHANGE : KNOB__KEY_STATE__KEY_WOULD_FAIL),
			    "%s, modular %d: state %d", name[i], modular, r.keys[0]->state);
			tune_apply_result_free(&r);
		}
	}
}
END_TEST

/* ------------------------------------------------------------ SMT and per-CPU keys */
/* A stand-in for the kernel's SMT switch and cpufreq, by this program's own
 * write(2) and pread(2) (the ones above and below): the host's CPUs are
 * never the test's to switch, and a plain file under --sysroot cannot
 * refuse a read.  cpu0..cpu3 under the sysroot, cpu2 and cpu3 the SMT
 * siblings of cpu0 and cpu1.  Writing smt/control "off" sets their
 * cpuN/online to 0, "on" back to 1; while a CPU is offline, reads and
 * writes of its cpufreq files fail with EBUSY, as the kernel answers them
 * while the CPU's cpufreq policy is inactive (drivers/cpufreq/cpufreq.c
 * show() / store(); one policy per CPU, as with intel_pstate).  The files
 * keep their contents meanwhile, as the policy keeps its governor
 * (last_governor) and gets it back when the CPU comes online. */
static int fake_smt_off;
static char fake_smt_gov[2][32];	/* cpu2's and cpu3's governor while offline */

/* Whether path (real) is a cpufreq file of an offline sibling. */
static int
fake_smt_busy(const char *path)
{
	char want[PATH_MAX + 64];

	for (int c = 2; c < 4 && fake_smt_off; c++) {
		snprintf(want, sizeof(want), "%s/sys/devices/system/cpu/cpu%d/cpufreq/", root_real, c);
		if (strncmp(path, want, strlen(want)) == 0)
			return 1;
	}
	return 0;
}

/* Put cpu c's governor file back to what it held when it went offline (a
 * refused write's O_TRUNC emptied it, which sysfs ignores); plain calls. */
static void
fake_smt_keep(int c)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor",
	    root_real, c);
	if ((fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)) < 0)
		return;
	if (syscall(SYS_write, fd, fake_smt_gov[c - 2], strlen(fake_smt_gov[c - 2])) < 0)
		fprintf(stderr, "fake %s: %s\n", path, strerror(errno));
	close(fd);
}

/* The siblings' online files from fake_smt_off, by plain system calls;
 * going offline, their governors are kept in fake_smt_gov. */
static void
fake_smt_online(void)
{
	for (int c = 2; c < 4; c++) {
		char path[PATH_MAX + 64];
		int fd;

		snprintf(path, sizeof(path), "%s/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor",
		    root_real, c);
		if (fake_smt_off && (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			ssize_t n = syscall(SYS_pread64, fd, fake_smt_gov[c - 2],
			    sizeof(fake_smt_gov[0]) - 1, 0);

			fake_smt_gov[c - 2][n > 0 ? n : 0] = '\0';
			close(fd);
		}

		snprintf(path, sizeof(path), "%s/sys/devices/system/cpu/cpu%d/online", root_real, c);
		if ((fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)) < 0)
			continue;
		if (syscall(SYS_write, fd, fake_smt_off ? "0\n" : "1\n", 2) < 0)
			fprintf(stderr, "fake %s: %s\n", path, strerror(errno));
		close(fd);
	}
}

/* A write of buf to path as the kernel answers it: 1 with *ret (-1,
 * EBUSY) for a cpufreq file of an offline sibling; smt/control also
 * switches the siblings (0: the plain write goes ahead); else 0. */
static int
fake_smt_write(const char *path, const void *buf, size_t len, ssize_t *ret)
{
	char want[PATH_MAX + 64];

	snprintf(want, sizeof(want), "%s/sys/devices/system/cpu/smt/control", root_real);
	if (strcmp(path, want) == 0) {
		fake_smt_off = len >= 3 && memcmp(buf, "off", 3) == 0;
		fake_smt_online();
		return 0;
	}
	if (!fake_smt_busy(path))
		return 0;
	for (int c = 2; c < 4; c++)
		fake_smt_keep(c);
	errno = EBUSY;
	*ret = -1;
	return 1;
}

/* pread(2) of this program: EBUSY for a cpufreq file of an offline
 * sibling while the stand-in is on. */
ssize_t
pread(int fd, void *buf, size_t len, off_t off)
{
	char path[PATH_MAX];

	if (smt_on) {
		fd_path(fd, path, sizeof(path));
		if (fake_smt_busy(path)) {
			errno = EBUSY;
			return -1;
		}
	}
	return (ssize_t)syscall(SYS_pread64, fd, buf, len, off);
}

#define GOV "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor"
/* Non-default starting governors, one per CPU. */
static const char *const smt_govs[] = { "schedutil", "powersave", "ondemand", "conservative" };

/* The stand-in tree: SMT on, cpu1..3 online (cpu0 has no online file), the
 * governors of smt_govs. */
static void
fake_smt_tree(void)
{
	char p[128];

	put("/sys/devices/system/cpu/smt/control", "on\n");
	for (int c = 0; c < 4; c++) {
		snprintf(p, sizeof(p), GOV, c);
		put(p, "%s\n", smt_govs[c]);
		snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/online", c);
		if (c > 0)
			put(p, "1\n");
	}
	ck_assert_ptr_nonnull(realpath(root, root_real));
	fake_smt_off = 0;
	smt_on = 1;
}

/* get(rel) as the test sees the file, past the stand-in (static buffer). */
static const char *
smt_get(const char *rel)
{
	const char *v;

	smt_on = 0;
	v = get(rel);
	smt_on = 1;
	return v;
}

/* SMT on and every governor at its original (after a rollback). */
static void
smt_originals_back(void)
{
	char p[128];

	ck_assert_str_eq(get("/sys/devices/system/cpu/smt/control"), "on");
	for (int c = 0; c < 4; c++) {
		snprintf(p, sizeof(p), GOV, c);
		ck_assert_str_eq(get(p), smt_govs[c]);
	}
	for (int c = 1; c < 4; c++) {
		snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/online", c);
		ck_assert_str_eq(get(p), "1");
	}
}

/* No key of r failed, was skipped or unsupported, nothing reverted (exit 0). */
static void
apply_ok(const Knob__ApplyResult *r)
{
	ck_assert_int_eq(r->reverted, 0);
	for (size_t i = 0; i < r->n_keys; i++)
		ck_assert_msg(r->keys[i]->state == KNOB__KEY_STATE__KEY_CHANGED ||
		    r->keys[i]->state == KNOB__KEY_STATE__KEY_UNCHANGED, "%s %s: %s",
		    r->keys[i]->target, tune_key_state_name(r->keys[i]->state), r->keys[i]->message);
}

/* Verify set on ag: nkeys keys, every one ok; then a complete rollback. */
static void
verify_ok_rollback(const struct s *set, size_t n, size_t nkeys)
{
	Knob__VerifyResult v;
	Knob__RollbackResult rb;

	do_verify(ag, set, n, &v);
	dump(v.keys, v.n_keys);
	ck_assert_int_eq(v.n_keys, nkeys);
	for (size_t i = 0; i < v.n_keys; i++)
		ck_assert_int_eq(v.keys[i]->state, KNOB__KEY_STATE__KEY_OK);
	tune_verify_result_free(&v);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
}

/* nfs-server's smt/control=off with bios-performance's per-CPU governor, in
 * the profiles' order (governor first): smt/control is written first (its
 * rank), the siblings it takes offline are not applicable now (unchanged,
 * not journaled) instead of failing the apply; verify is ok; rollback turns
 * SMT on first and every governor is as it was.  Before, the closing
 * re-read got EBUSY for cpu2/cpu3, the next pass's write failed and the
 * apply was reverted (exit 1), leaving their governors at performance. */
START_TEST(test_smt_off_per_cpu)
{
	static const struct s set[] = {
		{ "sysfs", "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor", NULL,
		  "performance", 0, NULL },
		{ "sysfs", "/sys/devices/system/cpu/smt/control", NULL, "off", 0, NULL },
	};
	const char *gk = set[0].key;
	Knob__ApplyResult r;

	fake_smt_tree();
	ag = mk_agent(root);
	do_apply(ag, "nfs", set, nitems(set), 0, 0, &r);
	dump(r.keys, r.n_keys);
	apply_ok(&r);
	ck_assert_int_eq(r.n_keys, 5);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, set[1].key, NULL)->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, gk, "/cpu1/")->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, gk, "/cpu3/")->state,
	    KNOB__KEY_STATE__KEY_UNCHANGED);
	ck_assert_ptr_nonnull(strstr(find_key(r.keys, r.n_keys, gk, "/cpu3/")->message,
	    "cpu3 is offline"));
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/sys/devices/system/cpu/smt/control"), "off");
	ck_assert_str_eq(get("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"), "performance");
	ck_assert_str_eq(get("/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor"), "performance");
	ck_assert_str_eq(smt_get("/sys/devices/system/cpu/cpu2/cpufreq/scaling_governor"), "ondemand");
	ck_assert_str_eq(get("/sys/devices/system/cpu/cpu3/online"), "0");
	/* verify: the offline siblings are not reached by the glob */
	verify_ok_rollback(set, nitems(set), 3);
	smt_originals_back();
}
END_TEST

/* The mirror: the governors were set while every CPU was online
 * (bios-performance), then SMT was switched off (nfs-server's key, stacked),
 * so the siblings' originals can only be written once SMT is back on.
 * Rollback reads them as not applicable now (before: EBUSY, failed, kept in
 * the journal, rollback incomplete), writes smt/control first and puts them
 * back once their CPUs are online. */
START_TEST(test_smt_off_rollback)
{
	static const struct s gov[] = {
		{ "sysfs", "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor", NULL,
		  "performance", 0, NULL },
	};
	static const struct s smt[] = {
		{ "sysfs", "/sys/devices/system/cpu/smt/control", NULL, "off", 0, NULL },
	};
	Knob__ApplyResult r;
	Knob__RollbackResult rb;

	fake_smt_tree();
	ag = mk_agent(root);
	do_apply(ag, "bios", gov, nitems(gov), 0, 0, &r);
	apply_ok(&r);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor"), "performance");
	apply_stack = 1;
	do_apply(ag, "nfs", smt, nitems(smt), 0, 0, &r);
	dump(r.keys, r.n_keys);
	apply_ok(&r);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/sys/devices/system/cpu/cpu3/online"), "0");
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_msg(rb.complete, "%s", rb.message);
	tune_rollback_result_free(&rb);
	smt_originals_back();
}
END_TEST

/* ------------------------------------------------------------ Lustre lru_size */
/* A stand-in for Lustre's ldlm lru_size (no Lustre here: a fake tree under
 * --sysroot, given Lustre's write semantics by this program's write(2)):
 * one namespace whose lru_size shows lock_unused_count while dynamic LRU
 * sizing is on and the fixed limit otherwise; writing 0 turns dynamic
 * sizing on, any other number sets that limit and turns it off
 * (ldlm_resource.c lru_size_show / lru_size_store). */
#define LRU_NS "/sys/fs/lustre/ldlm/namespaces/fs-OST0000-osc-ffff8801/"
static int fake_lru_dyn;	/* dynamic LRU sizing on */

/* A write to the namespace's lru_size as Lustre answers it: 1 with *ret;
 * else 0.  The file is rewritten by plain system calls. */
static int
fake_lru_write(const char *path, const void *buf, size_t len, ssize_t *ret)
{
	char want[PATH_MAX + 64], v[32], shown[32];
	unsigned long x;
	int fd;

	snprintf(want, sizeof(want), "%s" LRU_NS "lru_size", root_real);
	if (strcmp(path, want) != 0)
		return 0;
	snprintf(v, sizeof(v), "%.*s", (int)(len < 31 ? len : 31), (const char *)buf);
	x = strtoul(v, NULL, 10);
	fake_lru_dyn = x == 0;
	snprintf(shown, sizeof(shown), "%s", x == 0 ? get(LRU_NS "lock_unused_count") : v);
	if ((fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)) >= 0) {
		if (syscall(SYS_write, fd, shown, strlen(shown)) < 0)
			fprintf(stderr, "fake %s: %s\n", path, strerror(errno));
		close(fd);
	}
	*ret = (ssize_t)len;
	return 1;
}

static const struct lru_case {
	const char *lru, *unused;	/* what the namespace shows at the start */
	int dyn;			/* its mode */
	const char *orig;		/* the original that must be journaled */
} lru_cases[] = {
	{ "153", "153", 1, "0" },	/* dynamic: 153 unused locks */
	{ "500", "120", 0, "500" },	/* a static limit of 500 */
};

/* The namespace as case c starts, and the agent (ag) applies set (one
 * lru_size key): changed, from c's original. */
static void
lru_apply(const struct lru_case *c, const struct s *set)
{
	Knob__ApplyResult r;

	put(LRU_NS "lru_size", "%s\n", c->lru);
	put(LRU_NS "lock_unused_count", "%s\n", c->unused);
	ck_assert_ptr_nonnull(realpath(root, root_real));
	fake_lru_dyn = c->dyn;
	lru_on = 1;
	ag = mk_agent(root);
	do_apply(ag, "seq", set, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.n_keys, 1);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_CHANGED);
	ck_assert_str_eq(r.keys[0]->before, c->orig);
	tune_apply_result_free(&r);
}

/* lctl set_param ldlm.namespaces.*.lru_size=2000 (lustre-client-seq) and
 * rollback: a namespace in dynamic mode has "0" journaled as its original
 * and is dynamic again after rollback; a static limit comes back as it
 * was.  Before, the dynamic case journaled 153 (the count of unused locks)
 * and rollback wrote 153: it read back, "restored", and dynamic sizing was
 * off for good. */
START_TEST(test_lustre_lru_dynamic)
{
	const struct lru_case *c = &lru_cases[_i];
	static const struct s set[] = {
		{ "lustre", "ldlm.namespaces.*.lru_size", NULL, "2000", 0, NULL },
	};
	Knob__VerifyResult v;
	Knob__RollbackResult rb;
	struct journal j = { 0 };
	char jpath[192];

	lru_apply(c, set);
	ck_assert_str_eq(get(LRU_NS "lru_size"), "2000");
	ck_assert_int_eq(fake_lru_dyn, 0);
	snprintf(jpath, sizeof(jpath), "%s/" TUNE_JOURNAL_NAME, state);
	ck_assert_int_eq(journal_load(jpath, &j), 0);
	ck_assert_uint_eq(j.norig, 1);
	ck_assert_str_eq(j.orig[0].value, c->orig);
	journal_free(&j);
	/* a full LRU (as many unused locks as the limit) still verifies */
	put(LRU_NS "lock_unused_count", "2000\n");
	do_verify(ag, set, nitems(set), &v);
	ck_assert_int_eq(v.keys[0]->state, KNOB__KEY_STATE__KEY_OK);
	tune_verify_result_free(&v);
	put(LRU_NS "lock_unused_count", "%s\n", c->unused);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_msg(rb.complete, "%s", rb.message);
	tune_rollback_result_free(&rb);
	ck_assert_int_eq(fake_lru_dyn, c->dyn);
	ck_assert_str_eq(get(LRU_NS "lru_size"), c->lru);
}
END_TEST

/* ------------------------------------------------------------ iosched */
/* A new agent on the real root applies set (the caller frees r). */
static void
apply_new(const struct s *set, size_t n, Knob__ApplyResult *r)
{
	ag = mk_agent("");
	do_apply(ag, "p", set, n, 0, 0, r);
	dump(r->keys, r->n_keys);
}

/* A new agent applies set: nothing reverted, every key changed (the
 * caller frees r). */
static void
apply_all_changed(const struct s *set, size_t n, Knob__ApplyResult *r)
{
	apply_new(set, n, r);
	ck_assert_int_eq(r->reverted, 0);
	all_changed(r);
}

/* The agent is dropped and a new one started on the same journal (a
 * knobd restart: the journal is read back and validated), which rolls
 * back, completely (the caller frees rb). */
static void
restart_rollback(Knob__RollbackResult *rb)
{
	rm_agent(ag);
	ag = mk_agent("");
	ck_assert_int_eq(tune_rollback(ag, NULL, rb), 0);
	dump(rb->keys, rb->n_keys);
	ck_assert_msg(rb->complete, "%s", rb->message);
}

/* mq-deadline on the loop device with non-default tunables the scheduler
 * write replaces: nr_requests 100 (the kernel resets it), then
 * async_depth 50 (an nr_requests write resets it), fifo_batch 32 and
 * read_expire 100 (defaults 16 and 500). */
static void
ios_set_originals(void)
{
	ck_assert_msg(loopdev[0] != '\0', "no loop device");
	set_sysfs("scheduler", "mq-deadline");
	set_sysfs("nr_requests", "100");
	set_sysfs("iosched/async_depth", "50");
	set_sysfs("iosched/fifo_batch", "32");
	set_sysfs("iosched/read_expire", "100");
}

static void
ios_assert_originals(void)
{
	ck_assert_str_eq(sched_now(), "mq-deadline");
	ck_assert_str_eq(sys("nr_requests", loopdev), "100");
	ck_assert_str_eq(sys("iosched/async_depth", loopdev), "50");
	ck_assert_str_eq(sys("iosched/fifo_batch", loopdev), "32");
	ck_assert_str_eq(sys("iosched/read_expire", loopdev), "100");
}

/* Apply result r was reverted: the scheduler's key says so, loop device
 * 0 is back at ios_set_originals' values, nothing is journaled. */
static void
ios_reverted(const Knob__ApplyResult *r)
{
	ck_assert_int_eq(r->reverted, 1);
	ck_assert_int_eq(find_key(r->keys, r->n_keys, loopdev, "scheduler")->state,
	    KNOB__KEY_STATE__KEY_REVERTED);
	ios_assert_originals();
	ck_assert_int_eq(ag->tune->j.norig, 0);
}

/* A scheduler write destroys the iosched/ tunables: the apply journals
 * the elevator's snapshot beside the scheduler, and the rollback brings
 * them back after the scheduler (and nr_requests).  Before, the rollback
 * said complete and left fifo_batch 16, read_expire 500. */
START_TEST(test_iosched_rollback)
{
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	struct s set[] = { { "blockdev", NULL, "scheduler", "none", 0, NULL } };
	const Knob__KeyResult *k;

	ios_set_originals();
	set[0].key = loopdev;
	apply_new(set, 1, &r);
	ck_assert_int_eq(r.reverted, 0);
	ck_assert_str_eq(sched_now(), "none");
	restart_rollback(&rb);	/* the journal, with iosched, read back */
	ios_assert_originals();
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
	k = find_key(r.keys, r.n_keys, loopdev, "iosched");
	ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_CHANGED);
	ck_assert_ptr_nonnull(strstr(k->before, "mq-deadline:"));
	ck_assert_ptr_nonnull(strstr(k->before, " fifo_batch=32"));
	tune_apply_result_free(&r);
	ck_assert_int_eq(find_key(rb.keys, rb.n_keys, loopdev, "iosched")->state,
	    KNOB__KEY_STATE__KEY_RESTORED);
	tune_rollback_result_free(&rb);
}
END_TEST

/* "deadline", the old name older tuned profiles use, which this kernel
 * takes for mq-deadline (and reads back as [mq-deadline]): --check and
 * apply write mq-deadline, verify says ok, a second apply unchanged, the
 * rollback brings back kyber.  "noop", which the kernel refuses, stays
 * refused and names none.  Before, deadline was a would-fail (loop0 does
 * not offer scheduler deadline). */
START_TEST(test_sched_alias)
{
	Knob__ApplyResult r;
	Knob__VerifyResult v;
	Knob__RollbackResult rb;
	struct s set[] = { { "blockdev", NULL, "scheduler", "deadline", 0, NULL } };
	const Knob__KeyResult *k;

	ck_assert_msg(loopdev[0] != '\0', "no loop device");
	set_sysfs("scheduler", "kyber");
	set[0].key = loopdev;
	ag = mk_agent("");
	do_apply(ag, "p", set, 1, 1, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_WOULD_CHANGE);
	tune_apply_result_free(&r);
	do_apply(ag, "p", set, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	k = find_key(r.keys, r.n_keys, loopdev, "scheduler");
	ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_CHANGED);
	ck_assert_str_eq(k->after, "mq-deadline");
	tune_apply_result_free(&r);
	ck_assert_str_eq(sched_now(), "mq-deadline");
	do_verify(ag, set, 1, &v);
	ck_assert_int_eq(v.keys[0]->state, KNOB__KEY_STATE__KEY_OK);
	tune_verify_result_free(&v);
	do_apply(ag, "p", set, 1, 0, 0, &r);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_UNCHANGED);
	tune_apply_result_free(&r);
	set[0].value = "noop";
	do_apply(ag, "p", set, 1, 1, 0, &r);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_WOULD_FAIL);
	ck_assert_msg(strstr(r.keys[0]->message, "does not offer scheduler noop") &&
	    strstr(r.keys[0]->message, "the blk-mq one is none"), "%s", r.keys[0]->message);
	tune_apply_result_free(&r);
	restart_rollback(&rb);
	ck_assert_int_eq(find_key(rb.keys, rb.n_keys, loopdev, "scheduler")->state,
	    KNOB__KEY_STATE__KEY_RESTORED);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(sched_now(), "kyber");
}
END_TEST

/* The same when a later key of the transaction fails (two settings
 * fighting over read_ahead_kb: neither holds after the passes): the
 * revert puts the scheduler, nr_requests and the tunables back. */
START_TEST(test_iosched_revert)
{
	Knob__ApplyResult r;
	char path[128];
	struct s set[] = {
		{ "blockdev", NULL, "scheduler", "none", 0, NULL },
		{ "blockdev", NULL, "read_ahead_kb", "128", 0, NULL },
		{ "sysfs", NULL, NULL, "64", 0, NULL },
	};

	ios_set_originals();
	set[0].key = set[1].key = loopdev;
	snprintf(path, sizeof(path), "/sys/block/%s/queue/read_ahead_kb", loopdev);
	set[2].key = path;
	apply_new(set, nitems(set), &r);
	ios_reverted(&r);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, loopdev, "iosched")->state,
	    KNOB__KEY_STATE__KEY_REVERTED);
	tune_apply_result_free(&r);
}
END_TEST

/* A write the kernel refuses on ANOTHER device after a scheduler write:
 * loop device 0 goes from mq-deadline (nr_requests 100, tuned iosched/)
 * to none, which resets its nr_requests and drops its tunables (keys the
 * transaction journals but does not write), then loop device 1's
 * nomerges -5 is refused (EINVAL; its nr_requests 100000 was, before
 * the check predicted it).  The revert must see what the
 * scheduler write moved on device 0 and put it all back.  Before, the
 * write pass stopped without reading those keys again, the revert took
 * them for unchanged, and nr_requests stayed at the kernel's reset
 * value. */
START_TEST(test_refused_write_reverts_coupled)
{
	Knob__ApplyResult r;
	char nr2[32];
	struct s set[] = {
		{ "blockdev", NULL, "scheduler", "none", 0, NULL },
		{ "blockdev", NULL, "nomerges", "-5", 0, NULL },
	};

	ck_assert_msg(loopdev2[0] != '\0', "no second loop device");
	ios_set_originals();
	snprintf(nr2, sizeof(nr2), "%s", sys("nr_requests", loopdev2));
	set[0].key = loopdev;
	set[1].key = loopdev2;
	apply_new(set, nitems(set), &r);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, loopdev2, "nomerges")->err, EINVAL);
	ios_reverted(&r);
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("nr_requests", loopdev2), nr2);
}
END_TEST

/* A switch to a profile that does not set the scheduler puts the previous
 * profile's scheduler back, and the tunables after it; the rollback of
 * the new profile leaves them so. */
START_TEST(test_iosched_switch)
{
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	struct s a[] = { { "blockdev", NULL, "scheduler", "none", 0, NULL } };
	struct s b[] = { { "blockdev", NULL, "read_ahead_kb", "64", 0, NULL } };

	ios_set_originals();
	a[0].key = b[0].key = loopdev;
	apply_new(a, 1, &r);
	tune_apply_result_free(&r);
	ck_assert_str_eq(sched_now(), "none");
	do_apply(ag, "b", b, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 0);
	tune_apply_result_free(&r);
	ios_assert_originals();
	restart_rollback(&rb);
	tune_rollback_result_free(&rb);
	ios_assert_originals();
}
END_TEST

/* ------------------------------------------------------------ anonymous roots */
/* A root file system whose MAJ:MIN is anonymous (btrfs, bcachefs: 0:N,
 * no /sys/dev/block/0:N): the disk behind it is found from the mount
 * source, and for btrfs the other devices /sys/fs/btrfs/FSID/devices
 * lists; a swap file on such a file system too.  A fake sysroot: sdb
 * (partition sdb2), sdc and sdd.  Before, only the ext4 case protected
 * sdb: the glob sd* changed the btrfs root's disk. */
static const struct anon_case {
	const char *name, *mountinfo;	/* %s: the swap file's MAJ:MIN */
	int swapfile, btrfs_multi;
	const char *protected;		/* the disks protected, the others changed */
	const char *udev[3];		/* run/udev/data/b8:18, b8:32, b8:48 */
} anon_cases[] = {
	{ "ext4", "27 1 8:18 / / rw,relatime - ext4 /dev/sdb2 rw\n", 0, 0, "sdb", { NULL } },
	{ "btrfs", "27 1 0:32 /@rootfs / rw,relatime - btrfs /dev/sdb2 rw,subvol=/@rootfs\n",
	    0, 0, "sdb", { NULL } },
	{ "btrfs on two devices", "27 1 0:32 /@ / rw - btrfs /dev/sdb2 rw,subvol=/@\n", 0, 1,
	    "sdb sdc", { NULL } },
	{ "bcachefs on two devices", "27 1 0:33 / / rw - bcachefs /dev/sdb2:/dev/sdc rw\n", 0, 0,
	    "sdb sdc", { NULL } },
	{ "btrfs by /dev/disk link", "27 1 0:32 / / rw - btrfs /dev/disk/by-label/root rw\n", 0,
	    0, "sdb", { NULL } },
	{ "swap file on btrfs", "27 1 8:18 / / rw - ext4 /dev/sdb2 rw\n"
	    "40 27 %s / /swap rw - btrfs /dev/sdc rw\n", 1, 0, "sdb sdc", { NULL } },
	/* ZFS: the pool's members from udev's database (blkid's TYPE and
	 * LABEL); another pool's disk (sdd, tank) is not protected.  A
	 * stand-in: Debian 12's main archive has no ZFS module. */
	{ "zfs mirror root", "27 1 0:25 / / rw,relatime - zfs rpool/ROOT/debian rw,xattr\n", 0,
	    0, "sdb sdc", { "E:ID_FS_TYPE=zfs_member\nE:ID_FS_LABEL=rpool\n",
	    "S:disk/by-id/x\nE:ID_FS_LABEL=rpool\nE:ID_FS_TYPE=zfs_member",
	    "E:ID_FS_TYPE=zfs_member\nE:ID_FS_LABEL=tank\n" } },
	{ "zfs root, pool name a prefix of another's", "27 1 0:25 / / rw - zfs rp/ROOT rw\n", 0,
	    0, "sdc", { "E:ID_FS_TYPE=zfs_member\nE:ID_FS_LABEL=rpool\n",
	    "E:ID_FS_TYPE=zfs_member\nE:ID_FS_LABEL=rp\n", "E:ID_FS_TYPE=ext4\n"
	    "E:ID_FS_LABEL=rp\n" } },
};

/* c's mountinfo with the swap file's MAJ:MIN (static buffer). */
static const char *
anon_mountinfo(const struct anon_case *c, const char *mm)
{
	static char buf[512];
	const char *at = strstr(c->mountinfo, "%s");

	if (at == NULL)
		return c->mountinfo;
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - c->mountinfo), c->mountinfo, mm,
	    at + 2);
	return buf;
}

START_TEST(test_protected_anonymous_root)
{
	const struct anon_case *c = &anon_cases[_i];
	static const char *const disks[] = { "sdb", "sdc", "sdd" };
	static const char *const links[][2] = {
		{ "/sys/dev/block/8:18", "../../block/sdb/sdb2" },
		{ "/sys/dev/block/8:32", "../../block/sdc" },
		{ "/sys/dev/block/8:48", "../../block/sdd" },
		{ "/sys/class/block/sdb2", "../../block/sdb/sdb2" },
		{ "/sys/class/block/sdc", "../../block/sdc" },
		{ "/sys/class/block/sdd", "../../block/sdd" },
		{ "/dev/disk/by-label/root", "../../sdb2" },
	};
	struct s glob[] = { { "blockdev", "sd*", "read_ahead_kb", "64", 0, NULL } };
	Knob__ApplyResult r;
	char p[512], mm[32];
	struct stat st;

	fprintf(stderr, "-- %s\n", c->name);
	for (size_t i = 0; i < nitems(disks); i++) {
		snprintf(p, sizeof(p), "/sys/block/%s/queue/read_ahead_kb", disks[i]);
		put(p, "128\n");
	}
	put("/sys/block/sdb/sdb2/partition", "2\n");
	put("/sys/dev/block/.keep", "\n");
	put("/sys/class/block/.keep", "\n");
	put("/dev/sdb2", "\n");
	put("/dev/disk/by-label/.keep", "\n");
	for (size_t i = 0; i < nitems(links); i++) {
		snprintf(p, sizeof(p), "%s%s", root, links[i][0]);
		ck_assert_int_eq(symlink(links[i][1], p), 0);
	}
	if (c->btrfs_multi) {
		put("/sys/fs/btrfs/0c1d/devices/.keep", "\n");
		snprintf(p, sizeof(p), "%s/sys/fs/btrfs/0c1d/devices/sdb2", root);
		ck_assert_int_eq(symlink("../../../../block/sdb/sdb2", p), 0);
		snprintf(p, sizeof(p), "%s/sys/fs/btrfs/0c1d/devices/sdc", root);
		ck_assert_int_eq(symlink("../../../../block/sdc", p), 0);
	}
	for (int i = 0; i < 3; i++)
		if (c->udev[i] != NULL)
			put(i == 0 ? "/run/udev/data/b8:18" : i == 1 ? "/run/udev/data/b8:32" :
			    "/run/udev/data/b8:48", "%s", c->udev[i]);
	put("/swap/file", "swap\n");
	snprintf(p, sizeof(p), "%s/swap/file", root);
	ck_assert_int_eq(stat(p, &st), 0);
	snprintf(mm, sizeof(mm), "%u:%u", major(st.st_dev), minor(st.st_dev));
	put("/proc/self/mountinfo", "%s", anon_mountinfo(c, mm));
	put("/proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n%s", c->swapfile ?
	    "/swap/file file 1024 0 -2\n" : "");
	ag = mk_agent(root);
	do_apply(ag, "glob", glob, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	for (size_t i = 0; i < nitems(disks); i++) {
		const Knob__KeyResult *k = find_key(r.keys, r.n_keys, "sd*", disks[i]);

		ck_assert_msg(k->state == (strstr(c->protected, disks[i]) ?
		    KNOB__KEY_STATE__KEY_PROTECTED : KNOB__KEY_STATE__KEY_CHANGED), "%s: %s",
		    disks[i], tune_key_state_name(k->state));
	}
	tune_apply_result_free(&r);
	for (size_t i = 0; i < nitems(disks); i++) {
		snprintf(p, sizeof(p), "/sys/block/%s/queue/read_ahead_kb", disks[i]);
		ck_assert_str_eq(get(p), strstr(c->protected, disks[i]) ? "128" : "64");
	}
}
END_TEST

/* ------------------------------------------------------------ 4 KiB blocks */
/* A loop device with 4096-byte logical blocks (losetup -b 4096), in a
 * test case of its own whose unchecked fixture attaches and detaches it
 * (and makes the tests' top directory, as suite_setup does). */
static char lbsdev[32];

static void
lbs_setup(void)
{
	char cmd[256];
	FILE *p;

	lbsdev[0] = '\0';
	cu_mkdtemp(top, sizeof(top), "tune-lbs");
	snprintf(cmd, sizeof(cmd), "truncate -s 16M '%s/loop.img' && losetup -b 4096 -f --show "
	    "'%s/loop.img'", top, top);
	if ((p = popen(cmd, "r")) == NULL)
		return;
	if (fgets(cmd, sizeof(cmd), p) != NULL && strncmp(cmd, "/dev/", 5) == 0)
		snprintf(lbsdev, sizeof(lbsdev), "%s", strtrim(cmd) + 5);
	pclose(p);
}

static void
lbs_teardown(void)
{
	cu_loop_detach(lbsdev);
	lbsdev[0] = '\0';
	if (cu_rm_rf(top) < 0)
		fprintf(stderr, "could not remove %s\n", top);
}

/* The kernel rounds max_sectors_kb down to a multiple of the logical
 * block size: --check says would-fail for 130 (it would read back as
 * 128) and the apply refuses it before any write; 132 is fine.  Before,
 * check said would-change and the apply failed "wrote 130, reads 128
 * after 3 passes". */
START_TEST(test_max_sectors_4k)
{
	Knob__ApplyResult r;
	char path[128];
	struct s set[] = { { "blockdev", NULL, "max_sectors_kb", "130", 0, NULL } };

	ck_assert_msg(lbsdev[0] != '\0', "no 4 KiB loop device");
	ck_assert_str_eq(sys("logical_block_size", lbsdev), "4096");
	snprintf(path, sizeof(path), "/sys/block/%s/queue/max_sectors_kb", lbsdev);
	ck_assert_int_eq(write_small_file(path, "256"), 0);
	set[0].key = lbsdev;
	ag = mk_agent("");
	do_apply(ag, "odd", set, 1, 1, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_WOULD_FAIL);
	ck_assert_msg(strstr(r.keys[0]->message, "130 would read back as 128") != NULL, "%s",
	    r.keys[0]->message);
	tune_apply_result_free(&r);
	do_apply(ag, "odd", set, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_FAILED);
	ck_assert_ptr_nonnull(strstr(r.keys[0]->message, "refused before any write"));
	ck_assert_int_eq(r.reverted, 0);
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("max_sectors_kb", lbsdev), "256");
	set[0].value = "132";
	do_apply(ag, "even", set, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("max_sectors_kb", lbsdev), "132");
	ck_assert_int_eq(write_small_file(path, "512"), 0);
}
END_TEST

/* ------------------------------------------------------------ net names, uppers */
/* ip(8) in this test's network namespace; fails the test when it does. */
static void
ip(const char *fmt, ...)
{
	char cmd[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

/* The number after word ("mtu", "qlen") in ip -o link show dev
 * (static buffer; sysfs shows the namespace that mounted it). */
static const char *
link_attr(const char *dev, const char *word)
{
	static char out[32];
	char cmd[128], line[1024], *at;
	FILE *p;

	snprintf(out, sizeof(out), "<none>");
	snprintf(cmd, sizeof(cmd), "ip -o link show dev %s", dev);
	if ((p = popen(cmd, "r")) == NULL)
		return out;
	if (fgets(line, sizeof(line), p) != NULL) {
		snprintf(cmd, sizeof(cmd), " %s ", word);
		if ((at = strstr(line, cmd)) != NULL)
			sscanf(at + strlen(cmd), "%31[0-9]", out);
	}
	pclose(p);
	return out;
}

/* An interface named by an alternative name (ip link property add ...
 * altname, as systemd sets them): exactly and by a glob, both resolve to
 * the primary name (the target, reported and journaled); the journal
 * reads back after a restart and the rollback restores the non-default
 * originals.  Before: "unsupported: nothing on this node matches". */
START_TEST(test_net_altname)
{
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	static const struct s set[] = {
		{ "net", "ktalt0", "mtu", "1400", 0, NULL },
		{ "net", "ktal*", "txqueuelen", "4242", 0, NULL },
	};

	ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
	ip("ip link add kt0 type veth peer name kt1");
	ip("ip link property add dev kt0 altname ktalt0");
	ip("ip link set kt0 mtu 1450 txqueuelen 500");
	apply_all_changed(set, nitems(set), &r);
	ck_assert_int_eq(r.n_keys, 3);	/* and kt0's ipv6_mtu */
	ck_assert_str_eq(find_key(r.keys, r.n_keys, "ktalt0", NULL)->target, "kt0 mtu");
	ck_assert_str_eq(find_key(r.keys, r.n_keys, "ktal*", NULL)->target, "kt0 txqueuelen");
	tune_apply_result_free(&r);
	ck_assert_str_eq(link_attr("kt0", "mtu"), "1400");
	ck_assert_str_eq(link_attr("kt0", "qlen"), "4242");
	ck_assert_str_eq(link_attr("kt1", "mtu"), "1500");
	restart_rollback(&rb);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(link_attr("kt0", "mtu"), "1450");
	ck_assert_str_eq(link_attr("kt0", "qlen"), "500");
}
END_TEST

/* The kernel lowers the MTU of the devices stacked on an interface when
 * its MTU drops below theirs: macvlans at 9000 and 4000 on a 9000 veth go
 * to 1500 with it, one at 1400 stays.  Their MTUs are journaled beside the
 * interface's (upper_mtu) and the rollback, after a restart, brings them
 * all back, after the interface's own.  Before: the rollback said complete
 * with the veth at 9000 and the macvlans at 1500. */
START_TEST(test_net_upper_mtu)
{
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	static const struct s set[] = { { "net", "kt0", "mtu", "1500", 0, NULL } };

	ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
	ip("ip link add kt0 type veth peer name kt1");
	ip("ip link set kt0 mtu 9000");
	ip("ip link add link kt0 name ktm0 mtu 9000 type macvlan");
	ip("ip link add link kt0 name ktm1 mtu 4000 type macvlan");
	ip("ip link add link kt0 name ktm2 mtu 1400 type macvlan");
	apply_all_changed(set, 1, &r);
	tune_apply_result_free(&r);
	ck_assert_str_eq(link_attr("kt0", "mtu"), "1500");
	ck_assert_str_eq(link_attr("ktm0", "mtu"), "1500");
	ck_assert_str_eq(link_attr("ktm1", "mtu"), "1500");
	restart_rollback(&rb);
	ck_assert_str_eq(link_attr("kt0", "mtu"), "9000");
	ck_assert_str_eq(link_attr("ktm0", "mtu"), "9000");
	ck_assert_str_eq(link_attr("ktm1", "mtu"), "4000");
	ck_assert_str_eq(link_attr("ktm2", "mtu"), "1400");
	ck_assert_str_eq(link_attr("kt1", "mtu"), "1500");
	ck_assert_str_eq(find_key(rb.keys, rb.n_keys, "kt0", "upper_mtu")->wanted,
	    "ktm0=9000 ktm1=4000 ktm2=1400");
	tune_rollback_result_free(&rb);
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
}
END_TEST

/* Every MTU change of an interface sets its IPv6 MTU to the new MTU: a
 * veth at 9000 with net.ipv6.conf.kt0.mtu 4000 goes to 1500 and 1500.
 * The IPv6 MTU is journaled beside the MTU (ipv6_mtu) and the rollback,
 * after a restart, puts it back after the MTU (which set it to 9000).
 * Before: the rollback said complete with the IPv6 MTU at 9000. */
START_TEST(test_net_ipv6_mtu)
{
	static const char v6[] = "/proc/sys/net/ipv6/conf/kt0/mtu";
	static const struct s set[] = { { "net", "kt0", "mtu", "1500", 0, NULL } };
	Knob__ApplyResult r;
	Knob__RollbackResult rb;

	ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
	ip("ip link add kt0 type veth peer name kt1");
	ip("ip link set kt0 mtu 9000");
	ck_assert_int_eq(write_small_file(v6, "4000"), 0);
	apply_all_changed(set, 1, &r);
	tune_apply_result_free(&r);
	ck_assert_str_eq(link_attr("kt0", "mtu"), "1500");
	ck_assert_str_eq(cu_readf("%s", v6), "1500");
	restart_rollback(&rb);
	ck_assert_str_eq(link_attr("kt0", "mtu"), "9000");
	ck_assert_str_eq(cu_readf("%s", v6), "4000");
	ck_assert_str_eq(find_key(rb.keys, rb.n_keys, "kt0", "ipv6_mtu")->wanted, "4000");
	tune_rollback_result_free(&rb);
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
}
END_TEST

/* An mtu below 1280 takes IPv6 off an interface, with the addresses
 * and conf settings the admin gave it, and no rollback brings them back
 * (raising the MTU gives a fresh IPv6 with defaults).  While kt0 has IPv6
 * (an address, accept_ra 2): --check says would-fail and the apply is
 * refused before any write, the address and setting still there.  Once
 * kt0 has none (its MTU already 1100), 1200 is tuned and rolled back.
 * Before: applied, and rollback left kt0 without its address. */
START_TEST(test_net_mtu_below_ipv6)
{
	static const struct s set[] = { { "net", "kt0", "mtu", "1200", 0, NULL } };
	static const char ra[] = "/proc/sys/net/ipv6/conf/kt0/accept_ra";
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	const Knob__KeyResult *k;

	ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
	ip("ip link add kt0 type veth peer name kt1");
	ip("ip link set kt0 mtu 1400");
	ip("ip addr add 2001:db8::7/64 dev kt0 nodad");
	ck_assert_int_eq(write_small_file(ra, "2"), 0);
	ag = mk_agent("");
	for (int check = 1; check >= 0; check--) {
		do_apply(ag, "p", set, 1, check, 0, &r);
		dump(r.keys, r.n_keys);
		k = find_key(r.keys, r.n_keys, "kt0", "mtu");
		ck_assert_int_eq(k->state, check ? KNOB__KEY_STATE__KEY_WOULD_FAIL :
		    KNOB__KEY_STATE__KEY_FAILED);
		ck_assert_msg(strstr(k->message, "would take IPv6 off kt0") != NULL, "%s",
		    k->message);
		tune_apply_result_free(&r);
	}
	ck_assert_str_eq(link_attr("kt0", "mtu"), "1400");
	ck_assert_int_eq(ag->tune->j.norig, 0);
	ck_assert_str_eq(cu_readf("%s", ra), "2");
	ck_assert_int_eq(system("ip -6 addr show dev kt0 | grep -q 2001:db8::7"), 0);

	ip("ip link set kt0 mtu 1100");
	ck_assert_int_ne(access(ra, F_OK), 0);
	rm_agent(ag);
	apply_all_changed(set, 1, &r);
	tune_apply_result_free(&r);
	ck_assert_str_eq(link_attr("kt0", "mtu"), "1200");
	restart_rollback(&rb);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(link_attr("kt0", "mtu"), "1100");
}
END_TEST

/* ------------------------------------------------------------ nr_requests depth */
/* r's result for loop device 0's nr_requests is in state st with a
 * message containing want. */
static void
nr_key_is(const Knob__ApplyResult *r, int st, const char *want)
{
	const Knob__KeyResult *k = find_key(r->keys, r->n_keys, loopdev, "nr_requests");

	ck_assert_msg((int)k->state == st, "nr_requests is %s: %s", tune_key_state_name(k->state),
	    k->message);
	ck_assert_msg(strstr(k->message, want) != NULL, "'%s' not in '%s'", want, k->message);
}

/* nr_requests above the hardware queue depth (a loop device's: 128, its
 * mq/0/nr_tags) is refused by the kernel under scheduler none; with an
 * elevator the limit is 2048.  --check and the apply predict it from the
 * scheduler the device will have when nr_requests is written: the one
 * the same apply sets, else its own.  From none with nr_requests 100:
 * 129 would fail, and the apply writes nothing; mq-deadline with 1000 is
 * applied and rolled back; mq-deadline with 4096 would fail.  From
 * mq-deadline with 300: none with 200 would fail.  Before: --check said
 * would-change and the apply wrote, was refused and reverted. */
START_TEST(test_check_nr_requests_depth)
{
	struct s set[] = {
		{ "blockdev", NULL, "nr_requests", "129", 0, NULL },
		{ "blockdev", NULL, "scheduler", "mq-deadline", 0, NULL },
	};
	Knob__ApplyResult r;
	Knob__RollbackResult rb;

	ck_assert_msg(loopdev[0] != '\0', "no loop device");
	set[0].key = set[1].key = loopdev;
	set_sysfs("scheduler", "none");
	set_sysfs("nr_requests", "100");
	ag = mk_agent("");
	do_apply(ag, "p", set, 1, 1, 0, &r);
	dump(r.keys, r.n_keys);
	nr_key_is(&r, KNOB__KEY_STATE__KEY_WOULD_FAIL, "is above its hardware queue depth 128");
	tune_apply_result_free(&r);
	do_apply(ag, "p", set, 1, 0, 0, &r);
	nr_key_is(&r, KNOB__KEY_STATE__KEY_FAILED, "refused before any write");
	ck_assert_int_eq(r.reverted, 0);
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("nr_requests", loopdev), "100");
	ck_assert_int_eq(ag->tune->j.norig, 0);

	set[0].value = "1000";
	do_apply(ag, "p", set, 2, 0, 0, &r);
	dump(r.keys, r.n_keys);
	nr_key_is(&r, KNOB__KEY_STATE__KEY_CHANGED, "");
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("nr_requests", loopdev), "1000");
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_msg(rb.complete, "%s", rb.message);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(sched_now(), "none");
	ck_assert_str_eq(sys("nr_requests", loopdev), "100");

	set[0].value = "4096";
	do_apply(ag, "p", set, 2, 1, 0, &r);
	nr_key_is(&r, KNOB__KEY_STATE__KEY_WOULD_FAIL,
	    "above 2048, the limit with scheduler mq-deadline (which this apply sets)");
	tune_apply_result_free(&r);

	set_sysfs("scheduler", "mq-deadline");
	set_sysfs("nr_requests", "300");
	set[0].value = "200";
	set[1].value = "none";
	do_apply(ag, "p", set, 2, 1, 0, &r);
	dump(r.keys, r.n_keys);
	nr_key_is(&r, KNOB__KEY_STATE__KEY_WOULD_FAIL, "the limit with scheduler none (which "
	    "this apply sets)");
	tune_apply_result_free(&r);
	ck_assert_str_eq(sys("nr_requests", loopdev), "300");
}
END_TEST

/* ------------------------------------------------------------ --stack over a key */
/* ag rolls back completely and the loop device's attr reads want. */
static void
rollback_loop_to(const char *attr, const char *want)
{
	Knob__RollbackResult rb;

	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_msg(rb.complete, "%s", rb.message);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(sys(attr, loopdev), want);
}

/* Verify without a profile (the journal's active settings, as `knobctl
 * verify` sends it): every key ok, and a key's message says want. */
static void
verify_active_ok(const char *want)
{
	Knob__VerifyRequest vreq = KNOB__VERIFY_REQUEST__INIT;
	Knob__VerifyResult v;
	int said = 0;

	vreq.profile = (char *)(uintptr_t)"";
	ck_assert_int_eq(tune_verify(ag, &vreq, &v), 0);
	dump(v.keys, v.n_keys);
	ck_assert_uint_ge(v.n_keys, 1);
	for (size_t i = 0; i < v.n_keys; i++) {
		ck_assert_msg(v.keys[i]->state == KNOB__KEY_STATE__KEY_OK, "%s: %s %s",
		    v.keys[i]->target, tune_key_state_name(v.keys[i]->state), v.keys[i]->message);
		said |= strstr(v.keys[i]->message, want) != NULL;
	}
	ck_assert_msg(said, "verify says no \"%s\": %s", want, v.keys[0]->message);
	tune_verify_result_free(&v);
}

/* The loop device's read_ahead_kb at 384: one profile sets it exactly
 * (256), another through a glob that matches only it ("loop1[2]", 512),
 * stacked on it either way round; then a second such glob ("loo[p]12",
 * 256) stacked on the first.  The exact key wins, else the stacked one,
 * as verify and the boot re-apply judge the journal's stacked settings:
 * --check and the apply leave (or write) 256 and name the key they beat,
 * a reboot re-applies nothing, verify is ok and names the key that lost
 * as apply does (before and after the reboot: the journal keeps each
 * key's stack layer), rollback brings 384 back.  Before, the glob stacked
 * on the exact key wrote "256 -> 512" silently and verify said drift "is
 * 512, profile wants 256"; and verify said "the later key in the profile
 * wins" where apply said "the stacked profile's key wins". */
START_TEST(test_stack_glob_over_exact)
{
	struct s lit[] = { { "blockdev", NULL, "read_ahead_kb", "256", 0, NULL } };
	struct s glob[] = { { "blockdev", NULL, "read_ahead_kb", "512", 0, NULL } };
	struct s glob2[] = { { "blockdev", NULL, "read_ahead_kb", "256", 0, NULL } };
	const struct {
		const struct s *base, *over;
		int check, apply;	/* the stacked key's state */
		const char *why;
	} cases[] = {
		{ lit, glob, KNOB__KEY_STATE__KEY_UNCHANGED, KNOB__KEY_STATE__KEY_UNCHANGED,
		  "an exact key wins over a glob" },
		{ glob, lit, KNOB__KEY_STATE__KEY_WOULD_CHANGE, KNOB__KEY_STATE__KEY_CHANGED,
		  "an exact key wins over a glob" },
		{ glob, glob2, KNOB__KEY_STATE__KEY_WOULD_CHANGE, KNOB__KEY_STATE__KEY_CHANGED,
		  "the stacked profile's key wins" },
	};
	char pat[64], pat2[64], want[128];
	size_t len = strlen(loopdev);
	Knob__ApplyResult r;

	ck_assert_msg(len > 3, "no loop device");
	snprintf(pat, sizeof(pat), "%.*s[%c]", (int)len - 1, loopdev, loopdev[len - 1]);
	snprintf(pat2, sizeof(pat2), "loo[p]%s", loopdev + 4);
	lit[0].key = loopdev;
	glob[0].key = pat;
	glob2[0].key = pat2;
	for (size_t c = 0; c < nitems(cases); c++) {
		set_sysfs("read_ahead_kb", "384");
		rm_agent(ag);
		apply_all_changed(cases[c].base, 1, &r);
		tune_apply_result_free(&r);
		snprintf(want, sizeof(want), "instead of %s=512: %s", pat, cases[c].why);
		for (int check = 1; check >= 0; check--) {
			apply_stack = 1;
			do_apply(ag, "top", cases[c].over, 1, check, 0, &r);
			dump(r.keys, r.n_keys);
			ck_assert_int_eq(r.reverted, 0);
			ck_assert_uint_eq(r.n_keys, 1);
			ck_assert_str_eq(r.keys[0]->key, c == 2 ? pat2 : loopdev);
			ck_assert_int_eq(r.keys[0]->state, check ? cases[c].check : cases[c].apply);
			ck_assert_msg(strstr(r.keys[0]->message, want) != NULL, "%s",
			    r.keys[0]->message);
			tune_apply_result_free(&r);
		}
		ck_assert_str_eq(sys("read_ahead_kb", loopdev), "256");
		verify_active_ok(want);
		rm_agent(ag);	/* a reboot that kept the values: nothing to re-apply */
		ag = mk_agent("");
		ck_assert_str_eq(active_pub(ag, 0), "p+top");
		ck_assert_str_eq(active_pub(ag, 1), "");
		verify_active_ok(want);
		rollback_loop_to("read_ahead_kb", "384");
	}
}
END_TEST

/* ------------------------------------------------------------ one file, one key */
/* A profile that tunes loop device 0's nr_requests through blockdev (from
 * 100 to 64), then one stacked on it, or switched to, that sets the same
 * file through a sysfs path: the second key is refused before any write,
 * naming the journaled key, and the rollback brings 100 back.  Before, the
 * stacked apply journaled 64 as the sysfs key's original, and the
 * rollback left nr_requests at 64 (the blockdev key changed-since). */
START_TEST(test_shared_file_refused)
{
	struct s a[] = { { "blockdev", NULL, "nr_requests", "64", 0, NULL } };
	struct s b[] = { { "sysfs", NULL, NULL, "32", 0, NULL } };
	char path[96], want[128];
	Knob__ApplyResult r;

	ck_assert_msg(loopdev[0] != '\0', "no loop device");
	set_sysfs("scheduler", "none");
	set_sysfs("nr_requests", "100");
	snprintf(path, sizeof(path), "/sys/block/%s/queue/nr_requests", loopdev);
	snprintf(want, sizeof(want), "its file is also blockdev %s nr_requests, which knob "
	    "journaled (original 100)", loopdev);
	a[0].key = loopdev;
	b[0].key = path;
	apply_all_changed(a, 1, &r);
	tune_apply_result_free(&r);
	for (int stack = 1; stack >= 0; stack--) {
		apply_stack = stack;
		do_apply(ag, "b", b, 1, 0, 0, &r);
		dump(r.keys, r.n_keys);
		ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_FAILED);
		ck_assert_msg(strstr(r.keys[0]->message, want) != NULL, "%s", r.keys[0]->message);
		tune_apply_result_free(&r);
		ck_assert_str_eq(sys("nr_requests", loopdev), "64");
	}
	rollback_loop_to("nr_requests", "100");
}
END_TEST

/* The same for a Lustre parameter, which is a file under /sys/fs/lustre
 * that the sysfs driver reaches too (a stand-in tree under --sysroot:
 * there is no Lustre here).  Either way round, the second key is refused
 * before any write and the rollback brings 8 back.  Before, the lustre
 * driver told no file, and the rollback left the second key's value. */
START_TEST(test_shared_file_lustre)
{
	static const char path[] = "/sys/fs/lustre/osc/fs-OST0001-osc-ffff8801/max_rpcs_in_flight";
	struct s lu[] = { { "lustre", "osc.*OST0001*.max_rpcs_in_flight", NULL, "32", 0, NULL } };
	struct s sy[] = { { "sysfs", path, NULL, "16", 0, NULL } };
	struct s *first[] = { lu, sy }, *second[] = { sy, lu };
	const char *want[] = { "its file is also lustre", "its file is also sysfs" };
	Knob__ApplyResult r;
	Knob__RollbackResult rb;

	fake_tree();
	ag = mk_agent(root);
	for (int i = 0; i < 2; i++) {
		do_apply(ag, "a", first[i], 1, 0, 0, &r);
		ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_CHANGED);
		tune_apply_result_free(&r);
		apply_stack = 1;
		do_apply(ag, "b", second[i], 1, 0, 0, &r);
		dump(r.keys, r.n_keys);
		ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_FAILED);
		ck_assert_msg(strstr(r.keys[0]->message, want[i]) != NULL, "%s", r.keys[0]->message);
		tune_apply_result_free(&r);
		ck_assert_str_eq(cu_readf("%s%s", root, path), i == 0 ? "32" : "16");
		ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
		ck_assert_msg(rb.complete, "%s", rb.message);
		tune_rollback_result_free(&rb);
		ck_assert_str_eq(cu_readf("%s%s", root, path), "8");
	}
}
END_TEST

/* ------------------------------------------------------------ net protected */
/* key's result for target (e.g. "np7a mtu") is in want_state, and its
 * message contains want when want is not NULL. */
static void
net_key_is(Knob__KeyResult **keys, size_t n, const char *key, const char *target,
    int want_state, const char *want)
{
	const Knob__KeyResult *k = find_key(keys, n, key, target);

	ck_assert_msg((int)k->state == want_state, "%s %s: %s (%s)", key, target,
	    tune_key_state_name(k->state), k->message);
	if (want != NULL)
		ck_assert_msg(strstr(k->message, want) != NULL, "%s: '%s' lacks '%s'", target,
		    k->message, want);
}

/* A private network namespace for this test process with veths np7a
 * (MTU 1400, up, its peer kp7a too) and np7b (MTU 1300, down). */
static void
net_np7_up(void)
{
	ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
	ip("ip link add np7a type veth peer name kp7a");
	ip("ip link add np7b type veth peer name kp7b");
	ip("ip link set np7a mtu 1400 up && ip link set kp7a up && ip link set np7b mtu 1300");
}

/* A glob key of set[0] in this namespace: lo and np7a (the default route)
 * protected, np7b written, as apply (check or not) and verify say; a
 * rollback restores np7b only. */
static void
net_glob_round(const struct s *set, int lo)
{
	static const char *const np7a_why = "np7a carries the default route: a glob never "
	    "touches it (name the interface exactly to tune it)";
	Knob__ApplyResult r;
	Knob__VerifyResult v;
	Knob__RollbackResult rb;

	do_apply(ag, "glob", set, 1, 1, 0, &r);
	net_key_is(r.keys, r.n_keys, set->key, "np7a mtu", KNOB__KEY_STATE__KEY_PROTECTED, np7a_why);
	net_key_is(r.keys, r.n_keys, set->key, "np7b mtu", KNOB__KEY_STATE__KEY_WOULD_CHANGE, NULL);
	tune_apply_result_free(&r);
	do_apply(ag, "glob", set, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	net_key_is(r.keys, r.n_keys, set->key, "np7a mtu", KNOB__KEY_STATE__KEY_PROTECTED, np7a_why);
	net_key_is(r.keys, r.n_keys, set->key, "np7b mtu", KNOB__KEY_STATE__KEY_CHANGED, NULL);
	if (lo)
		net_key_is(r.keys, r.n_keys, set->key, "lo mtu", KNOB__KEY_STATE__KEY_PROTECTED,
		    "lo is the loopback: a glob never touches it");
	tune_apply_result_free(&r);
	ck_assert_str_eq(link_attr("np7a", "mtu"), "1400");
	ck_assert_str_eq(link_attr("np7b", "mtu"), "1500");
	ck_assert_str_eq(link_attr("lo", "mtu"), "65536");
	do_verify(ag, set, 1, &v);
	net_key_is(v.keys, v.n_keys, set->key, "np7a mtu", KNOB__KEY_STATE__KEY_PROTECTED, np7a_why);
	net_key_is(v.keys, v.n_keys, set->key, "np7b mtu", KNOB__KEY_STATE__KEY_OK, NULL);
	tune_verify_result_free(&v);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_msg(rb.complete, "%s", rb.message);
	ck_assert_int_eq(rb.n_keys, 2);	/* and np7b's ipv6_mtu */
	ck_assert_str_eq(rb.keys[0]->target, "np7b mtu");
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(link_attr("np7a", "mtu"), "1400");
	ck_assert_str_eq(link_attr("np7b", "mtu"), "1300");
	ck_assert_str_eq(link_attr("lo", "mtu"), "65536");
}

/* Named exactly, interface ifn (MTU orig) takes MTU 1500 and a rollback
 * restores orig. */
static void
net_exact_round(const char *ifn, const char *orig)
{
	const struct s exact[] = { { "net", ifn, "mtu", "1500", 0, NULL } };
	char target[64];
	Knob__ApplyResult r;
	Knob__RollbackResult rb;

	snprintf(target, sizeof(target), "%s mtu", ifn);
	do_apply(ag, "exact", exact, 1, 0, 0, &r);
	net_key_is(r.keys, r.n_keys, ifn, target, KNOB__KEY_STATE__KEY_CHANGED, NULL);
	tune_apply_result_free(&r);
	ck_assert_str_eq(link_attr(ifn, "mtu"), "1500");
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_msg(rb.complete, "%s", rb.message);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(link_attr(ifn, "mtu"), orig);
}

/* A glob never reaches the loopback nor the interface that carries the
 * default route (the node's way to its controller); named exactly, it is
 * tuned and rolled back.  Before: "*" and "np7*" set np7a's and lo's MTU
 * to 1500 (the uplink and the loopback of a real node). */
START_TEST(test_net_protected)
{
	static const struct s np7[] = { { "net", "np7*", "mtu", "1500", 0, NULL } };
	static const struct s all[] = { { "net", "*", "mtu", "1500", 0, NULL } };

	net_np7_up();
	ip("ip link set lo up");
	ip("ip addr add 10.77.0.1/24 dev np7a && ip route add default via 10.77.0.2 dev np7a");
	ag = mk_agent("");
	net_glob_round(np7, 0);
	net_glob_round(all, 1);
	net_exact_round("np7a", "1400");
}
END_TEST

/* A new agent on the real root checks np7* mtu 1500 (apply --check; the
 * caller frees r). */
static void
net_check_np7(Knob__ApplyResult *r)
{
	static const struct s set[] = { { "net", "np7*", "mtu", "1500", 0, NULL } };

	ag = mk_agent("");
	do_apply(ag, "glob", set, 1, 1, 0, r);
	dump(r->keys, r->n_keys);
}

/* An IPv6 default route protects its interface the same way (no IPv4
 * route in this namespace). */
START_TEST(test_net_protected_ipv6)
{
	Knob__ApplyResult r;

	net_np7_up();
	ip("ip -6 addr add 2001:db8:7::1/64 dev np7a nodad");
	ip("ip -6 route add default via 2001:db8:7::2 dev np7a");
	net_check_np7(&r);
	net_key_is(r.keys, r.n_keys, "np7*", "np7a mtu", KNOB__KEY_STATE__KEY_PROTECTED,
	    "np7a carries the IPv6 default route: a glob never touches it");
	net_key_is(r.keys, r.n_keys, "np7*", "np7b mtu", KNOB__KEY_STATE__KEY_WOULD_CHANGE, NULL);
	tune_apply_result_free(&r);
}
END_TEST

/* The devices beneath an interface that carries the default route are
 * protected with it: a bridge's port, the veth a macvlan sits on (their
 * MTU bounds the uplink's).  Before: both were would-change. */
START_TEST(test_net_protected_lower)
{
	Knob__ApplyResult r;

	ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
	ip("ip link add np7c mtu 1400 type veth peer name kp7c");
	ip("ip link add np7br type bridge && ip link set np7c master np7br");
	ip("ip link add np7d mtu 1400 type veth peer name kp7d");
	ip("ip link add link np7d name np7m type macvlan");
	ip("for d in np7c kp7c np7br np7d kp7d np7m; do ip link set $d up; done");
	ip("ip addr add 10.77.1.1/24 dev np7br && ip addr add 10.77.2.1/24 dev np7m");
	ip("ip route add default via 10.77.1.2 dev np7br");
	ip("ip route add default via 10.77.2.2 dev np7m metric 10");
	net_check_np7(&r);
	net_key_is(r.keys, r.n_keys, "np7*", "np7c mtu", KNOB__KEY_STATE__KEY_PROTECTED,
	    "np7c is beneath np7br, which carries the default route: a glob never touches it");
	net_key_is(r.keys, r.n_keys, "np7*", "np7d mtu", KNOB__KEY_STATE__KEY_PROTECTED,
	    "np7d is beneath np7m, which carries the default route");
	net_key_is(r.keys, r.n_keys, "np7*", "np7br mtu", KNOB__KEY_STATE__KEY_PROTECTED,
	    "np7br carries the default route");
	tune_apply_result_free(&r);
}
END_TEST

/* An interface a glob tuned that carries the default route by the time
 * of the rollback is protected there, as a disk that holds / by then:
 * its original is not written, it stays journaled, and a rollback once
 * the route is gone restores it.  Before: np7b was written under the
 * route. */
START_TEST(test_net_rollback_now_protected)
{
	static const struct s set[] = { { "net", "np7*", "mtu", "1500", 0, NULL } };
	Knob__ApplyResult r;
	Knob__RollbackResult rb;

	net_np7_up();
	ag = mk_agent("");
	do_apply(ag, "glob", set, 1, 0, 0, &r);
	ck_assert_int_eq(r.reverted, 0);
	all_changed(&r);
	tune_apply_result_free(&r);
	ip("ip link set np7b up && ip link set kp7b up && ip addr add 10.77.3.1/24 dev np7b");
	ip("ip route add default via 10.77.3.2 dev np7b");
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert(!rb.complete);
	net_key_is(rb.keys, rb.n_keys, "np7*", "np7b mtu", KNOB__KEY_STATE__KEY_PROTECTED,
	    "np7b carries the default route: a glob never touches it");
	net_key_is(rb.keys, rb.n_keys, "np7*", "np7a mtu", KNOB__KEY_STATE__KEY_RESTORED, NULL);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(link_attr("np7a", "mtu"), "1400");
	ck_assert_str_eq(link_attr("np7b", "mtu"), "1500");
	ip("ip route del default");
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_msg(rb.complete, "%s", rb.message);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(link_attr("np7b", "mtu"), "1300");
}
END_TEST

/* A controller's TCP connection to addr on a dual-stack listener of this
 * namespace: the accepted socket's local address (what the agent's loop
 * records once it authenticates) into *ss.  The sockets are closed. */
static void
net_ctl_local(const char *addr, struct sockaddr_storage *ss)
{
	struct sockaddr_in6 l6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in to = { .sin_family = AF_INET };
	socklen_t sl = sizeof(l6);
	int lfd, cfd, afd, off = 0;

	ck_assert_int_ge(lfd = socket(AF_INET6, SOCK_STREAM, 0), 0);
	setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&l6, sizeof(l6)), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&l6, &sl), 0);
	to.sin_port = l6.sin6_port;
	ck_assert_int_eq(inet_pton(AF_INET, addr, &to.sin_addr), 1);
	ck_assert_int_ge(cfd = socket(AF_INET, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(connect(cfd, (struct sockaddr *)&to, sizeof(to)), 0);
	ck_assert_int_ge(afd = accept(lfd, NULL, NULL), 0);
	sl = sizeof(*ss);
	ck_assert_int_eq(getsockname(afd, (struct sockaddr *)ss, &sl), 0);
	ck_assert_int_eq(ss->ss_family, AF_INET6);	/* ::ffff:addr */
	close(afd);
	close(cfd);
	close(lfd);
}

/* The interface that carries the controller's connection, a management
 * network reached through a connected /24 without any default route, is
 * protected from a glob like the uplink, and so is the veth beneath the
 * macvlan that carries a second one; named exactly, it is tuned and rolled
 * back; once the connection closes a glob reaches it again.  The agent
 * runs in-process (no event loop): the test records the connections'
 * local addresses with agent_ctl_addr_add, as the loop does when a
 * controller authenticates.  Before: np7e and np7g were written. */
START_TEST(test_net_protected_ctl)
{
	static const struct s glob[] = { { "net", "np7*", "mtu", "1500", 0, NULL } };
	struct sockaddr_storage ss;
	struct agent_ctl_addr ke, km;
	Knob__ApplyResult r;
	char path[PATH_MAX];

	ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
	ip("ip link set lo up && ip link add np7e mtu 1400 type veth peer name kp7e");
	ip("ip link add np7g mtu 1400 type veth peer name kp7g");
	ip("ip link add link np7g name np7m type macvlan");
	ip("for d in np7e kp7e np7g kp7g np7m; do ip link set $d up; done");
	ip("ip addr add 10.77.5.1/24 dev np7e && ip addr add 10.77.6.1/24 dev np7m");
	ag = mk_agent("");
	net_ctl_local("10.77.5.1", &ss);
	agent_ctl_addr_add(ag, (struct sockaddr *)&ss, &ke);
	net_ctl_local("10.77.6.1", &ss);
	agent_ctl_addr_add(ag, (struct sockaddr *)&ss, &km);
	do_apply(ag, "glob", glob, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	net_key_is(r.keys, r.n_keys, "np7*", "np7e mtu", KNOB__KEY_STATE__KEY_PROTECTED,
	    "np7e carries the controller's connection (10.77.5.1): a glob never touches it");
	net_key_is(r.keys, r.n_keys, "np7*", "np7g mtu", KNOB__KEY_STATE__KEY_PROTECTED,
	    "np7g is beneath np7m, which carries the controller's connection (10.77.6.1)");
	tune_apply_result_free(&r);
	ck_assert_str_eq(link_attr("np7e", "mtu"), "1400");
	ck_assert_str_eq(link_attr("np7g", "mtu"), "1400");
	net_exact_round("np7e", "1400");
	agent_ctl_addr_del(ag, &ke);	/* that connection closed: remembered */
	do_apply(ag, "glob", glob, 1, 1, 0, &r);
	net_key_is(r.keys, r.n_keys, "np7*", "np7e mtu", KNOB__KEY_STATE__KEY_PROTECTED,
	    "np7e carries a controller's earlier connection (10.77.5.1): a glob never touches it");
	net_key_is(r.keys, r.n_keys, "np7*", "np7g mtu", KNOB__KEY_STATE__KEY_PROTECTED,
	    "the controller's connection (10.77.6.1)");
	tune_apply_result_free(&r);
	/* forgotten once STATE/controller-addrs is gone (and knobd restarted) */
	rm_agent(ag);
	snprintf(path, sizeof(path), "%s/controller-addrs", state);
	ck_assert_int_eq(unlink(path), 0);
	ag = mk_agent("");
	do_apply(ag, "glob", glob, 1, 1, 0, &r);
	net_key_is(r.keys, r.n_keys, "np7*", "np7e mtu", KNOB__KEY_STATE__KEY_WOULD_CHANGE, NULL);
	tune_apply_result_free(&r);
}
END_TEST

/* The boot re-apply, which runs before any controller connects, keeps a
 * glob off the interface of a controller's earlier connection, as the
 * apply did: knobd remembers the local addresses of its controller
 * connections in STATE/controller-addrs.  np7e, a management network on a
 * connected /24 without a default route, carried the connection; np7f
 * did not.  "The reboot" is a new agent on the same state directory, the
 * links back at their MTU.  Before: the boot re-apply wrote np7e. */
START_TEST(test_net_protected_ctl_boot)
{
	static const struct s glob[] = { { "net", "np7*", "mtu", "1500", 0, NULL } };
	struct sockaddr_storage ss;
	struct agent_ctl_addr ke;
	Knob__ApplyResult r;
	char path[PATH_MAX], buf[256];

	ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
	ip("ip link set lo up && ip link add np7e mtu 1400 type veth peer name kp7e");
	ip("ip link add np7f mtu 1400 type veth peer name kp7f");
	ip("for d in np7e kp7e np7f kp7f; do ip link set $d up; done");
	ip("ip addr add 10.77.5.1/24 dev np7e");
	ag = mk_agent("");
	net_ctl_local("10.77.5.1", &ss);
	agent_ctl_addr_add(ag, (struct sockaddr *)&ss, &ke);
	do_apply(ag, "glob", glob, 1, 0, 0, &r);
	net_key_is(r.keys, r.n_keys, "np7*", "np7e mtu", KNOB__KEY_STATE__KEY_PROTECTED,
	    "np7e carries the controller's connection (10.77.5.1)");
	net_key_is(r.keys, r.n_keys, "np7*", "np7f mtu", KNOB__KEY_STATE__KEY_CHANGED, NULL);
	tune_apply_result_free(&r);
	agent_ctl_addr_del(ag, &ke);
	rm_agent(ag);
	snprintf(path, sizeof(path), "%s/controller-addrs", state);
	ck_assert_int_gt(read_small_file(path, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "10.77.5.1");
	ip("ip link set np7f mtu 1400");	/* the reboot */
	ag = mk_agent("");	/* tune_init: the boot re-apply */
	ck_assert_str_eq(link_attr("np7f", "mtu"), "1500");
	ck_assert_str_eq(link_attr("np7e", "mtu"), "1400");
}
END_TEST

/* ------------------------------------------------------------ nfsd pools */
/* A stand-in for the kernel NFS server's thread pools (no nfsd on a shared
 * test machine: a fake tree under --sysroot, given the kernel's write
 * semantics by this program's write(2)).  Modelled on net/sunrpc/svc.c
 * and fs/nfsd/nfsctl.c: writing threads N starts or stops the difference
 * round-robin over the pools (svc_set_num_threads with no pool: starting
 * from pool (T - 1) mod P, T the old total, each next thread in the next
 * pool; stopping from the pool before (T - 1), going down, skipping empty
 * pools); writing pool_threads sets each pool named (fewer numbers leave
 * the rest alone, pool 0 keeps at least one thread) and threads reads
 * their sum.  A stopped server (threads 0) is never started here: knob
 * refuses that write before it. */
#define NFSD_POOLS_MAX 8
static unsigned long fake_pools[NFSD_POOLS_MAX];
static size_t fake_npools;

/* threads and pool_threads from fake_pools, by plain system calls. */
static void
fake_nfsd_files(void)
{
	char v[256], path[PATH_MAX + 64];
	unsigned long t = 0;
	size_t o = 0;
	int fd;

	for (size_t i = 0; i < fake_npools; i++) {
		t += fake_pools[i];
		o += (size_t)snprintf(v + o, sizeof(v) - o, "%s%lu", i ? " " : "", fake_pools[i]);
	}
	snprintf(v + o, sizeof(v) - o, "\n");
	for (int f = 0; f < 2; f++) {
		char tv[32];

		snprintf(path, sizeof(path), "%s/proc/fs/nfsd/%s", root_real,
		    f ? "pool_threads" : "threads");
		snprintf(tv, sizeof(tv), "%lu\n", t);
		if ((fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)) < 0)
			continue;
		if (syscall(SYS_write, fd, f ? v : tv, strlen(f ? v : tv)) < 0)
			fprintf(stderr, "fake %s: %s\n", path, strerror(errno));
		close(fd);
	}
}

/* Start (n > 0) or stop (-n) threads round-robin as svc_set_num_threads
 * does with no pool. */
static void
fake_nfsd_threads(long n)
{
	unsigned long t = 0, at;

	for (size_t i = 0; i < fake_npools; i++)
		t += fake_pools[i];
	at = t - 1;
	for (; n > 0; n--)
		fake_pools[at++ % fake_npools]++;
	for (; n < 0; n++)
		for (size_t i = 0; i < fake_npools; i++) {
			unsigned long *p = &fake_pools[--at % fake_npools];

			if (*p > 0) {
				(*p)--;
				break;
			}
		}
}

/* A write to the fake threads or pool_threads as the kernel answers it:
 * 1 with *ret; else 0. */
static int
fake_nfsd_write(const char *path, const void *buf, size_t len, ssize_t *ret)
{
	char want[PATH_MAX + 64], v[256], *p = v, *end;
	unsigned long t = 0;
	int pools;

	snprintf(want, sizeof(want), "%s/proc/fs/nfsd/threads", root_real);
	pools = strcmp(path, want) != 0;
	snprintf(want, sizeof(want), "%s/proc/fs/nfsd/pool_threads", root_real);
	if (pools && strcmp(path, want) != 0)
		return 0;
	snprintf(v, sizeof(v), "%.*s", (int)(len < 255 ? len : 255), (const char *)buf);
	for (size_t i = 0; i < fake_npools; i++)
		t += fake_pools[i];
	if (!pools)
		fake_nfsd_threads((long)strtoul(v, NULL, 10) - (long)t);
	for (size_t i = 0; pools && i < fake_npools; i++, p = end) {
		unsigned long n = strtoul(p, &end, 10);

		if (end == p)
			break;
		fake_pools[i] = i == 0 && n == 0 ? 1 : n;
	}
	fake_nfsd_files();
	*ret = (ssize_t)len;
	return 1;
}

/* The fake server with pools "p0 p1 ..." (n of them). */
static void
fake_nfsd_start(const unsigned long *pools, size_t n)
{
	put("/proc/fs/nfsd/threads", "0\n");
	put("/proc/fs/nfsd/pool_threads", "0\n");
	ck_assert_ptr_nonnull(realpath(root, root_real));
	memcpy(fake_pools, pools, n * sizeof(*pools));
	fake_npools = n;
	fake_nfsd_files();
	nfsd_on = 1;
}

/* nfsd threads=4 (a profile that lowers it) on a server whose admin gave
 * its two pools 1 and 15 threads (pool_threads "1 15"): the kernel takes
 * the 12 threads round-robin, the first pool runs dry, pool_threads reads
 * "0 4".  Rollback must give "1 15" back; writing threads=16 alone starts
 * the 12 round-robin ("6 10"), as it did before pool_threads was journaled
 * beside threads.  Pools already even ("8 8") journal nothing more (a
 * threads write leaves them even).  Stand-in: fake_nfsd_write. */
START_TEST(test_nfsd_pool_threads)
{
	static const struct s v[] = { { "nfsd", "threads", NULL, "4", 0, NULL } };
	static const unsigned long uneven[] = { 1, 15 }, even[] = { 8, 8 };
	Knob__ApplyResult r;
	Knob__RollbackResult rb;

	fake_tree();
	fake_nfsd_start(uneven, 2);
	ag = mk_agent(root);
	do_apply(ag, "fewer", v, nitems(v), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "threads", NULL)->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/proc/fs/nfsd/pool_threads"), "0 4");
	rm_agent(ag);
	ag = mk_agent(root);	/* the journal with pool_threads loads */
	ck_assert_int_eq(ag->tune->j.norig, 2);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_str_eq(get("/proc/fs/nfsd/threads"), "16");
	ck_assert_str_eq(get("/proc/fs/nfsd/pool_threads"), "1 15");
	ck_assert_int_eq(rb.complete, 1);
	ck_assert_int_eq(find_key(rb.keys, rb.n_keys, "pool_threads", NULL)->state,
	    KNOB__KEY_STATE__KEY_RESTORED);
	tune_rollback_result_free(&rb);
	ck_assert_int_eq(ag->tune->j.norig, 0);

	fake_nfsd_start(even, 2);
	do_apply(ag, "fewer", v, nitems(v), 0, 0, &r);
	tune_apply_result_free(&r);
	ck_assert_int_eq(ag->tune->j.norig, 1);	/* threads only */
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	ck_assert_int_eq(rb.complete, 1);
	ck_assert_int_eq(rb.n_keys, 1);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(get("/proc/fs/nfsd/pool_threads"), "8 8");
}
END_TEST

/* Roll ag back into rb where key since was changed since knob set it:
 * incomplete, since and its partner (returned) both changed-since. */
static const Knob__KeyResult *
rollback_left(Knob__RollbackResult *rb, const char *since, const char *partner)
{
	const Knob__KeyResult *k;

	ck_assert_int_eq(tune_rollback(ag, NULL, rb), 0);
	dump(rb->keys, rb->n_keys);
	ck_assert_int_eq(rb->complete, 0);
	ck_assert_int_eq(find_key(rb->keys, rb->n_keys, since, NULL)->state,
	    KNOB__KEY_STATE__KEY_CHANGED_SINCE);
	k = find_key(rb->keys, rb->n_keys, partner, NULL);
	ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_CHANGED_SINCE);
	return k;
}

/* test_nfsd_pool_threads' apply (threads 4 on pools "1 15"), then the
 * admin starts 2 more threads (threads 6): the rollback leaves threads
 * (changed-since) and pool_threads, whose original adds up to threads'
 * original (16) and so would undo the admin's change; its message says
 * that.  Before, it said the sysctl pair's "its restore would set threads
 * (changed since knob set it) to 0: the kernel keeps the two exclusive".
 * Stand-in: fake_nfsd_write (no kernel NFS server here). */
START_TEST(test_nfsd_pool_threads_changed_since)
{
	static const struct s v[] = { { "nfsd", "threads", NULL, "4", 0, NULL } };
	static const unsigned long uneven[] = { 1, 15 };
	Knob__RollbackResult rb;
	Knob__ApplyResult r;
	const Knob__KeyResult *k;
	char pools[64];

	fake_tree();
	fake_nfsd_start(uneven, 2);
	ag = mk_agent(root);
	do_apply(ag, "fewer", v, nitems(v), 0, 0, &r);
	tune_apply_result_free(&r);
	fake_nfsd_threads(2);	/* the admin writes threads 6: pools "1 5" */
	fake_nfsd_files();
	ck_assert_str_eq(get("/proc/fs/nfsd/threads"), "6");
	snprintf(pools, sizeof(pools), "%s", get("/proc/fs/nfsd/pool_threads"));
	k = rollback_left(&rb, "threads", "pool_threads");
	ck_assert_msg(strstr(k->message, "pool_threads left: threads was changed since knob set "
	    "it") && strstr(k->message, "adds up to") && !strstr(k->message, " to 0"),
	    "pool_threads: %s", k->message);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(get("/proc/fs/nfsd/threads"), "6");
	ck_assert_str_eq(get("/proc/fs/nfsd/pool_threads"), pools);
}
END_TEST

/* A profile that asks nfsd threads=0 of a running server (8 threads, a
 * fake tree: no kernel NFS server on a shared test machine): writing 0
 * stops the server, and no rollback, revert or crash recovery of knob's
 * brings it back (writing a count to a stopped server is refused: it would
 * start it, with the kernel's own listeners).  So the key is refused before
 * any write (would-fail with --check), nothing is written, the server runs
 * on.  Before, the apply wrote 0 (changed) and the rollback failed on
 * threads ("nfsd is stopped") for as long as nfsd stayed down. */
START_TEST(test_nfsd_no_stop)
{
	static const struct s v[] = {
		{ "sysctl", "vm.dirty_ratio", NULL, "10", 0, NULL },
		{ "nfsd", "threads", NULL, "0", 0, NULL },
	};
	Knob__ApplyResult r;
	const Knob__KeyResult *k;

	fake_tree();
	ag = mk_agent(root);
	for (int check = 1; check >= 0; check--) {
		do_apply(ag, "stop", v, nitems(v), check, 0, &r);
		dump(r.keys, r.n_keys);
		k = find_key(r.keys, r.n_keys, "threads", NULL);
		ck_assert_int_eq(k->state, check ? KNOB__KEY_STATE__KEY_WOULD_FAIL :
		    KNOB__KEY_STATE__KEY_FAILED);
		ck_assert_ptr_nonnull(strstr(k->message, "stops the NFS server"));
		tune_apply_result_free(&r);
		ck_assert_str_eq(get("/proc/fs/nfsd/threads"), "8");
		ck_assert_str_eq(get("/proc/sys/vm/dirty_ratio"), "20");
	}
	ck_assert_int_eq(ag->tune->j.norig, 0);
}
END_TEST

/* Writing a thread count to a stopped kernel NFS server starts it (the
 * kernel opens port 2049 itself).  The fake tree stands in for nfsd: no
 * kernel NFS server is started on a shared machine.  A stopped server
 * (threads 0) is unsupported on apply and verify, and nothing is written;
 * one stopped after an apply is not restarted by the rollback, which
 * fails and keeps the original (8, not a default) until nfsd runs again. */
START_TEST(test_nfsd_stopped)
{
	static const struct s v[] = {
		{ "sysctl", "vm.dirty_ratio", NULL, "10", 0, NULL },
		{ "nfsd", "threads", NULL, "64", 0, NULL },
	};
	Knob__ApplyResult r;
	Knob__VerifyResult vr;
	Knob__RollbackResult rb;
	const Knob__KeyResult *k;

	fake_tree();
	put("/proc/fs/nfsd/threads", "0\n");
	ag = mk_agent(root);
	do_apply(ag, "p", v, nitems(v), 0, 0, &r);
	dump(r.keys, r.n_keys);
	k = find_key(r.keys, r.n_keys, "threads", NULL);
	ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(k->message, "nfsd is stopped (threads 0): knob does not start"));
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "vm.dirty_ratio", NULL)->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/proc/fs/nfsd/threads"), "0");
	ck_assert_int_lt(journal_find(ag->tune->j.orig, ag->tune->j.norig, "nfsd",
	    "/proc/fs/nfsd/threads", ""), 0);
	do_verify(ag, v, nitems(v), &vr);
	ck_assert_int_eq(find_key(vr.keys, vr.n_keys, "threads", NULL)->state,
	    KNOB__KEY_STATE__KEY_UNSUPPORTED);
	tune_verify_result_free(&vr);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	tune_rollback_result_free(&rb);

	/* running with 8: applied; then stopped; the rollback must not start it */
	put("/proc/fs/nfsd/threads", "8\n");
	do_apply(ag, "p", v, nitems(v), 0, 0, &r);
	ck_assert_int_eq(find_key(r.keys, r.n_keys, "threads", NULL)->state,
	    KNOB__KEY_STATE__KEY_CHANGED);
	tune_apply_result_free(&r);
	put("/proc/fs/nfsd/threads", "0\n");
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	k = find_key(rb.keys, rb.n_keys, "threads", NULL);
	ck_assert_int_eq(k->state, KNOB__KEY_STATE__KEY_FAILED);
	ck_assert_ptr_nonnull(strstr(k->message, "nfsd is stopped"));
	ck_assert_int_eq(rb.complete, 0);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(get("/proc/fs/nfsd/threads"), "0");
	ck_assert_str_eq(get("/proc/sys/vm/dirty_ratio"), "20");
	ck_assert_int_ge(journal_find(ag->tune->j.orig, ag->tune->j.norig, "nfsd",
	    "/proc/fs/nfsd/threads", ""), 0);

	/* nfsd runs again (with the tuned count): now the original comes back */
	put("/proc/fs/nfsd/threads", "64\n");
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	ck_assert_str_eq(get("/proc/fs/nfsd/threads"), "8");
}
END_TEST

/* Both halves of a sysctl pair 0 to begin with (the fake_pairs stand-in
 * under --sysroot: global sysctls; the kernel allows it, every ratio
 * takes 0 and writing it zeroes the bytes), and the others at
 * non-default values: the rollback brings back 0 and 0 and is complete.
 * Before, each half was left to the other's restore: neither was written,
 * the key the profile set kept its value, and the rollback stayed
 * incomplete ("did not come back: wants 0") for good. */
static const struct sysctl_pair_case both_zero_cases[] = {
	{ "dirty_bytes over 0/0", "vm.dirty_bytes", "134217728", 0, { 0, 0 },
	    { 134217728, 0 } },
	{ "dirty_ratio over 0/0", "vm.dirty_ratio", "15", 0, { 0, 0 }, { 0, 15 } },
	{ "dirty_background_bytes over 0/0", "vm.dirty_background_bytes", "268435456", 1,
	    { 0, 0 }, { 268435456, 0 } },
	{ "overcommit_kbytes over 0/0", "vm.overcommit_kbytes", "1048576", 2, { 0, 0 },
	    { 1048576, 0 } },
};

START_TEST(test_sysctl_pairs_both_zero)
{
	const struct sysctl_pair_case *c = &both_zero_cases[_i];
	unsigned long v[nitems(fake_pairs)][2] = { { 33554432, 0 }, { 0, 7 }, { 0, 60 } };
	struct s set[] = { { "sysctl", c->key, NULL, c->value, 0, NULL } };
	Knob__RollbackResult rb;

	pair_case_apply(c, v, set);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	assert_pairs((const unsigned long (*)[2])v);
	ck_assert_int_eq(rb.complete, 1);
	ck_assert_int_eq(rb.n_keys, 2);
	for (size_t i = 0; i < rb.n_keys; i++)
		ck_assert_int_eq(rb.keys[i]->state, KNOB__KEY_STATE__KEY_RESTORED);
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
	tune_rollback_result_free(&rb);
}
END_TEST

/* Drift on a sysctl pair: the profile set dirty_bytes (originals: bytes 0,
 * the admin's dirty_ratio 30), then the admin set dirty_bytes again by
 * hand (64 MiB; the ratio stays 0).  A rollback, or a switch to a profile
 * without the pair, leaves that change alone (changed-since), and so it
 * must not write the ratio's original either: that write sets dirty_bytes
 * to 0 (the kernel's pair).  Both originals stay journaled, and a forced
 * rollback brings back 0 and 30.  Before, the rollback wrote the ratio,
 * wrote the admin's bytes back (which zeroed the ratio again), called the
 * ratio restored and dropped its original 30 from the journal. */
static const char *const pair_drift_cases[] = { "rollback", "switch" };

START_TEST(test_sysctl_pair_drift)
{
	unsigned long v[nitems(fake_pairs)][2] = { { 0, 30 }, { 0, 7 }, { 0, 60 } };
	struct s set[] = { { "sysctl", "vm.dirty_bytes", NULL, "134217728", 0, NULL } };
	struct s other[] = { { "sysctl", "vm.swappiness", NULL, "10", 0, NULL } };
	static const struct sysctl_pair_case c = { "dirty_bytes, then the admin's", "vm.dirty_bytes",
		"134217728", 0, { 0, 30 }, { 134217728, 0 } };
	Knob__RollbackRequest force = KNOB__ROLLBACK_REQUEST__INIT;
	Knob__RollbackResult rb;
	Knob__ApplyResult r;
	const Knob__KeyResult *kr;
	char path[PATH_MAX];
	long k;

	fprintf(stderr, "-- pair drift, then %s\n", pair_drift_cases[_i]);
	put("/proc/sys/vm/swappiness", "60\n");
	pair_case_apply(&c, v, set);
	snprintf(path, sizeof(path), "%s/proc/sys/vm/dirty_bytes", root);
	ck_assert_int_eq(write_small_file(path, "67108864"), 0);	/* the admin's */
	ck_assert_str_eq(get("/proc/sys/vm/dirty_bytes"), "67108864");
	if (_i == 0) {
		kr = rollback_left(&rb, "vm.dirty_bytes", "vm.dirty_ratio");
		ck_assert_ptr_nonnull(strstr(kr->message, "would set vm.dirty_bytes"));
		tune_rollback_result_free(&rb);
	} else {
		do_apply(ag, "other", other, 1, 0, 0, &r);
		dump(r.keys, r.n_keys);
		for (const char *const *h = (const char *const[]){ "vm.dirty_bytes", "vm.dirty_ratio",
		    NULL }; *h; h++)
			ck_assert_int_eq(find_key(r.keys, r.n_keys, *h, NULL)->state,
			    KNOB__KEY_STATE__KEY_CHANGED_SINCE);
		tune_apply_result_free(&r);
		ck_assert_str_eq(get("/proc/sys/vm/swappiness"), "10");
	}
	ck_assert_str_eq(get("/proc/sys/vm/dirty_bytes"), "67108864");
	ck_assert_str_eq(get("/proc/sys/vm/dirty_ratio"), "0");
	k = journal_find(ag->tune->j.orig, ag->tune->j.norig, "sysctl", "/proc/sys/vm/dirty_ratio",
	    "");
	ck_assert_int_ge(k, 0);
	ck_assert_str_eq(ag->tune->j.orig[k].value, "30");
	force.force = 1;
	ck_assert_int_eq(tune_rollback(ag, &force, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_int_eq(rb.complete, 1);
	tune_rollback_result_free(&rb);
	assert_pairs((const unsigned long (*)[2])v);
	ck_assert_str_eq(get("/proc/sys/vm/swappiness"), "60");
}
END_TEST

/* A sysctl key as sysctl(8) and sysctl.d(5) spell an interface name with
 * a dot (VLAN eth0.100): net.ipv4.conf.eth0/100.rp_filter, dots and
 * slashes swapped after a first dot, is /proc/sys/net/ipv4/conf/eth0.100/
 * rp_filter (a fake tree under --sysroot); it is set, reported under that
 * name, verifies and rolls back; the path spelling names the same file.
 * Before, a key with any '/' was taken as a path: nothing matched
 * "net.ipv4.conf.eth0/100.rp_filter" and the key was unsupported. */
START_TEST(test_sysctl_slash_name)
{
	static const struct s set[] = {
		{ "sysctl", "net.ipv4.conf.eth0/100.rp_filter", NULL, "2", 0, NULL },
		{ "sysctl", "net/ipv4/conf/eth0.100/arp_ignore", NULL, "1", 0, NULL },
	};
	static const struct s dotdot[] = {
		{ "sysctl", "net.ipv4.conf.eth0.//.eth0/100.rp_filter", NULL, "0", 0, NULL },
	};
	Knob__ApplyResult r;

	put("/proc/sys/net/ipv4/conf/eth0.100/rp_filter", "1\n");
	put("/proc/sys/net/ipv4/conf/eth0.100/arp_ignore", "0\n");
	ag = mk_agent(root);
	do_apply(ag, "vlan", set, nitems(set), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.n_keys, 2);
	all_changed(&r);
	ck_assert_str_eq(find_key(r.keys, r.n_keys, set[0].key, NULL)->target,
	    "net.ipv4.conf.eth0/100.rp_filter");
	tune_apply_result_free(&r);
	ck_assert_str_eq(get("/proc/sys/net/ipv4/conf/eth0.100/rp_filter"), "2");
	verify_ok_rollback(set, nitems(set), 2);
	ck_assert_str_eq(get("/proc/sys/net/ipv4/conf/eth0.100/rp_filter"), "1");
	ck_assert_str_eq(get("/proc/sys/net/ipv4/conf/eth0.100/arp_ignore"), "0");
	/* "//" would be ".." once swapped: refused */
	do_apply(ag, "up", dotdot, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_FAILED);
	tune_apply_result_free(&r);
}
END_TEST

/* GPFS booleans (stand-in mmdiag / mmchconfig scripts: there is no GPFS
 * here): mmdiag --config prints 1/0, mmchconfig takes yes/no (and refuses
 * 1/0, as the stand-in does).  Starting from non-default values
 * (lrocData off, verbsRdmaSend on), a profile asking lrocData=yes and
 * verbsRdmaSend=true writes only lrocData, as "yes", is not
 * pending-restart, verifies without drift, and the rollback writes "no".
 * Before, "1" read back was not "yes": lrocData was reported
 * pending-restart, verbsRdmaSend was rewritten, and verify saw drift. */
START_TEST(test_gpfs_booleans)
{
	Knob__ApplyResult r;
	char cfg[256], log[256], body[1024], buf[1024];
	static const struct s set[] = {
		{ "gpfs", "lrocData", NULL, "yes", 0, NULL },
		{ "gpfs", "verbsRdmaSend", NULL, "true", 0, NULL },
	};

	snprintf(log, sizeof(log), "%s/mmchconfig.log", tmp);
	mmdiag_standin(cfg, sizeof(cfg), "lrocData 0\nverbsRdmaSend 1\n");
	snprintf(body, sizeof(body), "kv=$1; k=${kv%%%%=*}; v=${kv#*=}; shift\n"
	    "echo \"$kv $*\" >> '%s'\n"
	    "case $v in yes) v=1;; no) v=0;; *) echo \"mmchconfig: $k: yes or no\" >&2; exit 1;; esac\n"
	    "sed -i \"s/^$k .*/$k $v/\" '%s'\n", log, cfg);
	script("/usr/lpp/mmfs/bin/mmchconfig", body);
	ag = mk_agent(root);
	do_apply(ag, "g", set, nitems(set), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.n_keys, 2);
	/* lrocData written (from "no", as 0 reads), verbsRdmaSend holds */
	for (size_t i = 0; i < r.n_keys; i++) {
		int lroc = strcmp(r.keys[i]->key, "lrocData") == 0;

		ck_assert_int_eq(r.keys[i]->state, lroc ? KNOB__KEY_STATE__KEY_CHANGED :
		    KNOB__KEY_STATE__KEY_UNCHANGED);
		ck_assert_str_eq(r.keys[i]->before, lroc ? "no" : "yes");
	}
	tune_apply_result_free(&r);
	verify_ok_rollback(set, nitems(set), 2);
	ck_assert_int_gt(read_small_file(cfg, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "lrocData 0\nverbsRdmaSend 1");
	ck_assert_int_gt(read_small_file(log, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "lrocData=yes -i -N node01\nlrocData=no -i -N node01");
}
END_TEST

/* Roll ag back: complete, its one key (lru_size) restored. */
static void
lru_rollback_restored(void)
{
	Knob__RollbackResult rb;

	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_msg(rb.complete, "%s", rb.message);
	ck_assert_int_eq(rb.keys[0]->state, KNOB__KEY_STATE__KEY_RESTORED);
	tune_rollback_result_free(&rb);
}

/* lru_size=2000 as in test_lustre_lru_dynamic (the fake Lustre tree and
 * lru_size stand-in under --sysroot), but the LRU fills up before the
 * rollback (2000 unused locks: a busy client's steady state under a
 * static limit): the rollback still sees knob's 2000, writes the
 * original, and the namespace is in its original mode again.  Before, the
 * full LRU read as dynamic mode, i.e. "0": the dynamic case was "already
 * at its original" and stayed fixed at 2000, the static one was
 * "changed since knob set it" and left alone. */
START_TEST(test_lustre_lru_full_rollback)
{
	const struct lru_case *c = &lru_cases[_i];
	static const struct s set[] = {
		{ "lustre", "ldlm.namespaces.*.lru_size", NULL, "2000", 0, NULL },
	};

	lru_apply(c, set);
	put(LRU_NS "lock_unused_count", "2000\n");
	lru_rollback_restored();
	ck_assert_int_eq(fake_lru_dyn, c->dyn);
	ck_assert_str_eq(get(LRU_NS "lru_size"), c->dyn ? "2000" : c->lru);
}
END_TEST

/* lru_size=0 (dynamic LRU sizing on, as stop 44 listed it) from a static
 * limit of 400 (120 unused locks), with the lru_size stand-in of
 * test_lustre_lru_dynamic: the apply writes 0, "400" journaled; the
 * namespace now shows its unused locks (120, later 400, the original's
 * number) and verify still sees 0 (dynamic); rollback writes 400 back,
 * a static limit again.  Over a namespace in dynamic mode the same key
 * is unchanged, nothing written or journaled. */
START_TEST(test_lustre_lru_zero)
{
	static const struct s zero[] = {
		{ "lustre", "ldlm.namespaces.*.lru_size", NULL, "0", 0, NULL },
	};
	static const struct lru_case dyn = { "153", "153", 1, "0" };
	const struct lru_case fixed = { "400", "120", 0, "400" };
	Knob__ApplyResult r;
	Knob__VerifyResult v;

	lru_apply(&fixed, zero);
	ck_assert_int_eq(fake_lru_dyn, 1);
	ck_assert_str_eq(get(LRU_NS "lru_size"), "120");
	ck_assert_uint_eq(ag->tune->j.norig, 1);
	ck_assert_str_eq(ag->tune->j.orig[0].value, "400");
	for (int i = 0; i < 2; i++) {
		put(LRU_NS "lock_unused_count", "%s\n", i ? "400" : "120");
		put(LRU_NS "lru_size", "%s\n", i ? "400" : "120");
		do_verify(ag, zero, nitems(zero), &v);
		dump(v.keys, v.n_keys);
		ck_assert_int_eq(v.keys[0]->state, KNOB__KEY_STATE__KEY_OK);
		tune_verify_result_free(&v);
	}
	put(LRU_NS "lock_unused_count", "120\n");
	put(LRU_NS "lru_size", "120\n");
	lru_rollback_restored();
	ck_assert_int_eq(fake_lru_dyn, 0);
	ck_assert_str_eq(get(LRU_NS "lru_size"), "400");
	rm_agent(ag);
	put(LRU_NS "lru_size", "%s\n", dyn.lru);
	put(LRU_NS "lock_unused_count", "%s\n", dyn.unused);
	fake_lru_dyn = 1;
	ag = mk_agent(root);
	do_apply(ag, "dyn", zero, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.keys[0]->state, KNOB__KEY_STATE__KEY_UNCHANGED);
	tune_apply_result_free(&r);
	ck_assert_uint_eq(ag->tune->j.norig, 0);
	ck_assert_int_eq(fake_lru_dyn, 1);
}
END_TEST

/* A Lustre glob key across a remount (the fake tree under --sysroot: a
 * reboot is the test removing the client's instances, fs-...-ffff8801,
 * and making the new mount's, fs-...-ffff9902, one more OST among them;
 * OST0001 at a non-default 5 both times): the boot re-apply writes the
 * new instances, their originals journaled first; the old instances'
 * originals are dropped by the rollback (their mount ended: nothing to put
 * back), which is complete and brings back the new ones' 5 and 8.  Before,
 * every rollback failed on the old instances ("No such file or
 * directory"), incomplete for good, one more set after every remount. */
START_TEST(test_lustre_glob_remount)
{
	static const struct s set[] = {
		{ "lustre", "osc.*OST*.max_rpcs_in_flight", NULL, "16", 0, NULL },
	};
	static const char *const now[] = { "fs-OST0001-osc-ffff9902", "fs-OST0003-osc-ffff9902" };
	Knob__ApplyResult r;
	Knob__RollbackResult rb;
	char cmd[PATH_MAX * 2], rel[128];

	fake_tree();
	put("/sys/fs/lustre/osc/fs-OST0001-osc-ffff8801/max_rpcs_in_flight", "5\n");
	ag = mk_agent(root);
	do_apply(ag, "l", set, 1, 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.n_keys, 3);
	tune_apply_result_free(&r);
	rm_agent(ag);
	ag = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/sys/fs/lustre/osc' '%s/proc/fs/lustre/osc'", root,
	    root);
	ck_assert_int_eq(system(cmd), 0);
	for (size_t i = 0; i < nitems(now); i++) {
		snprintf(rel, sizeof(rel), "/sys/fs/lustre/osc/%s/max_rpcs_in_flight", now[i]);
		put(rel, "%s\n", i == 0 ? "5" : "8");
	}
	ag = mk_agent(root);
	for (size_t i = 0; i < nitems(now); i++) {
		long k;

		snprintf(rel, sizeof(rel), "/sys/fs/lustre/osc/%s/max_rpcs_in_flight", now[i]);
		ck_assert_str_eq(get(rel), "16");
		k = journal_find(ag->tune->j.orig, ag->tune->j.norig, "lustre", rel, "");
		ck_assert_int_ge(k, 0);
		ck_assert_str_eq(ag->tune->j.orig[k].value, i == 0 ? "5" : "8");
	}
	ck_assert_uint_eq(ag->tune->j.norig, 5);
	ck_assert_int_eq(tune_rollback(ag, NULL, &rb), 0);
	dump(rb.keys, rb.n_keys);
	ck_assert_msg(rb.complete, "%s", rb.message);
	tune_rollback_result_free(&rb);
	for (size_t i = 0; i < nitems(now); i++) {
		snprintf(rel, sizeof(rel), "/sys/fs/lustre/osc/%s/max_rpcs_in_flight", now[i]);
		ck_assert_str_eq(get(rel), i == 0 ? "5" : "8");
	}
	ck_assert_int_ne(access(ag->tune->journal_path, F_OK), 0);
}
END_TEST

/* The revert of an apply over a pair whose halves are both 0 (fake_pairs
 * under --sysroot, the others at non-default values): dirty_bytes is
 * written, then a later key fails (a symlink, which the agent does not
 * write through), and the revert brings dirty_bytes and dirty_ratio back
 * to 0 and 0 (their values before the transaction).  Before, it was
 * "revert failed" and dirty_bytes stayed set. */
START_TEST(test_sysctl_pairs_both_zero_revert)
{
	unsigned long v[nitems(fake_pairs)][2] = { { 0, 0 }, { 0, 7 }, { 0, 60 } };
	static const struct s set[] = {
		{ "sysctl", "vm.dirty_bytes", NULL, "134217728", 0, NULL },
		{ "sysctl", "vm.zz_link", NULL, "1", 0, NULL },
	};
	Knob__ApplyResult r;

	fake_pairs_start((const unsigned long (*)[2])v);
	put_link("/proc/sys/vm/zz_link", "0\n");
	ag = mk_agent(root);
	do_apply(ag, "pair", set, nitems(set), 0, 0, &r);
	dump(r.keys, r.n_keys);
	ck_assert_int_eq(r.reverted, 1);
	ck_assert_uint_eq(r.n_keys, 2);
	for (size_t i = 0; i < r.n_keys; i++)
		ck_assert_int_eq(r.keys[i]->state, strcmp(r.keys[i]->key, set[0].key) == 0 ?
		    KNOB__KEY_STATE__KEY_REVERTED : KNOB__KEY_STATE__KEY_FAILED);
	tune_apply_result_free(&r);
	assert_pairs((const unsigned long (*)[2])v);
	ck_assert_str_eq(get("/proc/sys/vm/zz_link.real"), "0");
}
END_TEST

static Suite *
tune_suite(void)
{
	Suite *s = suite_create("tune");
	TCase *tc = tcase_create("tune");

	tcase_set_timeout(tc, 30);
	tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_normalise, 0, (int)nitems(norm_cases));
	tcase_add_test(tc, test_norm_equal);
	tcase_add_test(tc, test_lustre_names);
	tcase_add_test(tc, test_resolve);
	tcase_add_test(tc, test_sysroot_links);
	tcase_add_test(tc, test_transaction);
	tcase_add_test(tc, test_partial_failure);
	tcase_add_test(tc, test_many_keys);
	tcase_add_test(tc, test_write_lengths);
	tcase_add_test(tc, test_glob_listing_kept);
	tcase_add_test(tc, test_glob_and_exact);
	tcase_add_test(tc, test_parent_glob_child_exact);
	tcase_add_test(tc, test_hex_values);
	tcase_add_test(tc, test_lustre_max_cached_mb);
	tcase_add_test(tc, test_gpfs_key_case);
	tcase_add_test(tc, test_writes_only_written);
	tcase_add_test(tc, test_crash_recovery);
	tcase_add_test(tc, test_gpfs_standin);
	tcase_add_test(tc, test_gpfs_pending_restart);
	tcase_add_test(tc, test_lustre_persistent);
	tcase_add_test(tc, test_loop_device);
	tcase_add_test(tc, test_net_namespace);
	tcase_add_test(tc, test_journal_corrupt);
	tcase_add_loop_test(tc, test_coupled_pairs, 0, (int)nitems(pair_cases));
	tcase_add_loop_test(tc, test_sysctl_pairs, 0, (int)nitems(sysctl_pair_cases));
	tcase_add_test(tc, test_coupled_revert);
	tcase_add_test(tc, test_clobbered);
	tcase_add_loop_test(tc, test_kill_at_pause_points, 0,
	    (int)(nitems(pause_points) * nitems(kill_sets)));
	tcase_add_test(tc, test_switch_coupled);
	tcase_add_test(tc, test_keep_going_refused_coupled);
	tcase_add_test(tc, test_switch_changed_since);
	tcase_add_test(tc, test_switch_changed_since_coupled);
	tcase_add_test(tc, test_apply_again_coupled);
	tcase_add_test(tc, test_coupled_same_value);
	tcase_add_test(tc, test_coupled_moved_to_same);
	tcase_add_test(tc, test_rollback_changed_since_coupled);
	tcase_add_test(tc, test_failed_rollback_judged_afresh);
	tcase_add_test(tc, test_lustre_persistent_write_fails);
	tcase_add_test(tc, test_lustre_persistent_two_mounts);
	tcase_add_test(tc, test_lustre_persistent_old_journal);
	tcase_add_loop_test(tc, test_lustre_persistent_changed_since, 0,
	    (int)nitems(lustre_since_cases));
	tcase_add_test(tc, test_state_dir_full);
	tcase_add_test(tc, test_journal_dir_fsync_fails);
	tcase_add_loop_test(tc, test_gpfs_pending_undone, 0, (int)nitems(gpfs_undo_cases));
	tcase_add_loop_test(tc, test_gpfs_configured_kept, 0, (int)nitems(gpfs_kept_cases));
	tcase_add_test(tc, test_state_dir_full_at_commit);
	tcase_add_test(tc, test_state_dir_full_at_rollback);
	tcase_add_test(tc, test_state_dir_full_at_rollback_partial);
	tcase_add_test(tc, test_check_would_fail);
	tcase_add_test(tc, test_check_sched_module);
	tcase_add_test(tc, test_check_sched_module_hidden);
	tcase_add_test(tc, test_protected_glob);
	tcase_add_test(tc, test_protected_layers);
	tcase_add_test(tc, test_rollback_renamed_device);
	tcase_add_test(tc, test_rollback_now_protected);
	tcase_add_loop_test(tc, test_switch_refused, 0, (int)nitems(switch_ref_cases));
	tcase_add_test(tc, test_reapply_renamed_device);
	tcase_add_test(tc, test_recovery_renamed_device);
	tcase_add_test(tc, test_base_profile_smt);
	tcase_add_test(tc, test_reapply_at_boot);
	tcase_add_test(tc, test_restart_same_boot);
	tcase_add_test(tc, test_journal_sysroot);
	tcase_add_test(tc, test_gpfs_pagepool_ram);
	tcase_add_test(tc, test_smt_off_per_cpu);
	tcase_add_test(tc, test_smt_off_rollback);
	tcase_add_loop_test(tc, test_lustre_lru_dynamic, 0, (int)nitems(lru_cases));
	tcase_add_test(tc, test_iosched_rollback);
	tcase_add_test(tc, test_sched_alias);
	tcase_add_test(tc, test_iosched_revert);
	tcase_add_test(tc, test_iosched_switch);
	tcase_add_test(tc, test_refused_write_reverts_coupled);
	tcase_add_loop_test(tc, test_protected_anonymous_root, 0, (int)nitems(anon_cases));
	tcase_add_test(tc, test_net_altname);
	tcase_add_test(tc, test_net_upper_mtu);
	tcase_add_test(tc, test_net_protected);
	tcase_add_test(tc, test_net_protected_ipv6);
	tcase_add_test(tc, test_net_protected_lower);
	tcase_add_test(tc, test_net_rollback_now_protected);
	tcase_add_test(tc, test_nfsd_stopped);
	tcase_add_test(tc, test_nfsd_no_stop);
	tcase_add_test(tc, test_nfsd_pool_threads);
	tcase_add_test(tc, test_nfsd_pool_threads_changed_since);
	tcase_add_test(tc, test_net_ipv6_mtu);
	tcase_add_test(tc, test_net_mtu_below_ipv6);
	tcase_add_test(tc, test_check_nr_requests_depth);
	tcase_add_test(tc, test_shared_file_refused);
	tcase_add_test(tc, test_stack_glob_over_exact);
	tcase_add_test(tc, test_shared_file_lustre);
	tcase_add_loop_test(tc, test_sysctl_pairs_both_zero, 0, (int)nitems(both_zero_cases));
	tcase_add_test(tc, test_gpfs_booleans);
	tcase_add_test(tc, test_lustre_lru_zero);
	tcase_add_loop_test(tc, test_lustre_lru_full_rollback, 0, (int)nitems(lru_cases));
	tcase_add_test(tc, test_lustre_glob_remount);
	tcase_add_test(tc, test_sysctl_pairs_both_zero_revert);
	tcase_add_loop_test(tc, test_sysctl_pair_drift, 0, (int)nitems(pair_drift_cases));
	tcase_add_test(tc, test_sysctl_slash_name);
	tcase_add_test(tc, test_net_protected_ctl);
	tcase_add_test(tc, test_net_protected_ctl_boot);
	suite_add_tcase(s, tc);
	tc = tcase_create("lbs4k");
	tcase_set_timeout(tc, 30);
	tcase_add_unchecked_fixture(tc, lbs_setup, lbs_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_max_sectors_4k);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cu_run(tune_suite());
}
