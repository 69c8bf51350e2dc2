/* Integration: knobctl apply / verify / rollback over real agents in network
 * namespaces (tests/harness.h).
 *
 * Real: a loop device this test creates (loop devices are global, so both
 * namespace agents see it under /sys/block; only its exact name is ever
 * targeted, and it is detached at the end), each node's eth0 (a veth inside
 * its namespace) through libnl, and net.core.somaxconn, which is per
 * namespace.  Fakes, said plainly: the Lustre tree is a fake under a
 * --sysroot with several OSC instances; mmchconfig, mmdiag and lctl are
 * stand-in shell scripts under that sysroot, one of them deliberately slow,
 * and an mmfsd "restart" is the test copying the stand-in's configured
 * values over the ones its mmdiag prints.
 *
 * The program runs without forking per test (CK_NOFORK) so that the
 * harness and the loop device, set up once in the unchecked fixture, are
 * always torn down by the unchecked teardown, failures or not. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
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
static int h_up;
static const char *full_mnt;	/* test_state_dir_full's tmpfs, unmounted at teardown */
static char top[64], loopdev[32];

/* Read /sys/block/LOOP/queue/ATTR into a static buffer. */
#define qattr(attr) cu_readf("/sys/block/%s/queue/%s", loopdev, attr)

static void
suite_setup(void)
{
	char cmd[256];

	cu_mkdtemp(top, sizeof(top), "tunenet");
	if (cu_loop_attach(top, loopdev, sizeof(loopdev)) == 0) {
		/* a reused loop device keeps the queue settings of its last user */
		snprintf(cmd, sizeof(cmd), "/sys/block/%s/queue/read_ahead_kb", loopdev);
		if (write_small_file(cmd, "128") < 0)
			fprintf(stderr, "cannot reset %s\n", cmd);
	}
	/* slow stand-ins must time out quickly; knobd inherits this */
	setenv("KNOB_CMD_TIMEOUT_MS", "1000", 1);
	if (harness_start(&h, 2, 0) == 0) {
		h_up = 1;
		snprintf(h.node[0].extra_args, sizeof(h.node[0].extra_args), "--test-hooks");
		if (harness_agent_start(&h, 0) < 0 || harness_agent_start(&h, 1) < 0)
			h_up = 0;
	}
}

static void
suite_teardown(void)
{
	char cmd[256];

	if (h_up || h.up)
		harness_stop(&h);
	if (full_mnt) {
		snprintf(cmd, sizeof(cmd), "umount '%s'", full_mnt);
		if (system(cmd) != 0)
			fprintf(stderr, "could not unmount %s\n", full_mnt);
	}
	cu_loop_detach(loopdev);
	if (cu_rm_rf(top) < 0)
		fprintf(stderr, "could not remove %s\n", top);
}

static void __attribute__((format(printf, 2, 3)))
write_profile(const char *name, const char *fmt, ...)
{
	char path[256];
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.xml", top, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "<?xml version=\"1.0\"?>\n<profile name=\"%s\">\n", name);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fprintf(f, "</profile>\n");
	fclose(f);
}

/* Run knobctl; print its output for the record; returns the exit status. */
static int __attribute__((format(printf, 2, 3)))
ctl(char **out, const char *fmt, ...)
{
	char cmd[2048];
	char *err = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = harness_knobctl(&h, out, &err, "%s", cmd);
	fprintf(stderr, "$ knobctl %s   (exit %d)\n%s%s", cmd, rc, *out ? *out : "",
	    err && *err ? err : "");
	free(err);
	return rc;
}

static void
precheck(void)
{
	ck_assert_msg(loopdev[0] != '\0', "no loop device");
	ck_assert_msg(h_up, "harness did not start");
}

/* --check --diff folds, writes nothing; apply; drift; read-only attribute
 * reverts the transaction; rollback restores the exact originals. */
START_TEST(test_loop_apply_verify_rollback)
{
	char sched0[256], ra0[64], *out = NULL, want[32], line[256];
	int rc;

	precheck();
	snprintf(sched0, sizeof(sched0), "%s", qattr("scheduler"));
	snprintf(ra0, sizeof(ra0), "%s", qattr("read_ahead_kb"));
	snprintf(want, sizeof(want), "%s", strstr(sched0, "[none]") ? "mq-deadline" : "none");
	write_profile("loop", "  <description>test</description>\n"
	    "  <blockdev device=\"%s\" attr=\"scheduler\" value=\"%s\"/>\n"
	    "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"4M\"/>\n",
	    loopdev, want, loopdev);

	/* dry run on both nodes: identical, folded, nothing written */
	rc = ctl(&out, "apply %s/loop.xml -w node[01-02] --check --diff", top);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "node[01-02]"));
	snprintf(line, sizeof(line), "would-change    blockdev %s read_ahead_kb: %s -> 4096",
	    loopdev, ra0);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	ck_assert_ptr_nonnull(strstr(out, "2 would-change"));
	free(out);
	ck_assert_str_eq(qattr("scheduler"), sched0);
	ck_assert_str_eq(qattr("read_ahead_kb"), ra0);

	/* apply (node01 only: the device is shared by both namespaces) */
	rc = ctl(&out, "apply %s/loop.xml -w node01", top);
	ck_assert_int_eq(rc, 0);
	snprintf(line, sizeof(line), "changed         blockdev %s read_ahead_kb: %s -> 4096",
	    loopdev, ra0);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	free(out);
	ck_assert_str_eq(qattr("read_ahead_kb"), "4096");
	ck_assert_ptr_nonnull(strstr(qattr("scheduler"), want));

	rc = ctl(&out, "verify %s/loop.xml -w node01", top);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "2 of 2 key(s) match; active profile: loop"));
	free(out);

	/* drift behind knob's back: exactly that key */
	snprintf(line, sizeof(line), "/sys/block/%s/queue/read_ahead_kb", loopdev);
	ck_assert_int_eq(write_small_file(line, "256"), 0);
	rc = ctl(&out, "verify %s/loop.xml -w node01", top);
	ck_assert_int_eq(rc, 1);
	snprintf(line, sizeof(line), "drift           blockdev %s read_ahead_kb: is 256, profile wants 4096",
	    loopdev);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	ck_assert_ptr_nonnull(strstr(out, "1 of 2 key(s) match"));
	ck_assert_ptr_nonnull(strstr(out, "1 drift"));
	free(out);

	/* a read-only attribute is known to fail: refused before any write */
	write_profile("loop-ro", "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"8M\"/>\n"
	    "  <sysfs key=\"/sys/block/%s/queue/hw_sector_size\" value=\"4096\"/>\n",
	    loopdev, loopdev);
	rc = ctl(&out, "apply %s/loop-ro.xml -w node01", top);
	ck_assert_int_eq(rc, 1);
	snprintf(line, sizeof(line), "skipped         blockdev %s read_ahead_kb: not written", loopdev);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	snprintf(line, sizeof(line), "failed          sysfs /sys/block/%s/queue/hw_sector_size: refused "
	    "before any write: /sys/block/%s/queue/hw_sector_size is read-only (mode 0444)", loopdev,
	    loopdev);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	free(out);
	ck_assert_str_eq(qattr("read_ahead_kb"), "256");

	/* read_ahead_kb was changed behind knob's back: changed-since, left
	 * alone, exit 1, the journal kept; --force writes the original */
	rc = ctl(&out, "rollback -w node01");
	ck_assert_int_eq(rc, 1);
	snprintf(line, sizeof(line), "changed-since   blockdev %s read_ahead_kb: is 256, knob set 4096",
	    loopdev);
	ck_assert_msg(strstr(out, line) != NULL, "missing '%s'", line);
	ck_assert_ptr_nonnull(strstr(out, "did not come back; they stay in the journal"));
	free(out);
	ck_assert_str_eq(qattr("read_ahead_kb"), "256");
	ck_assert_str_eq(qattr("scheduler"), sched0);
	rc = ctl(&out, "off -w node01 --force");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "1 original value(s) restored; journal cleared"));
	free(out);
	ck_assert_str_eq(qattr("scheduler"), sched0);
	ck_assert_str_eq(qattr("read_ahead_kb"), ra0);
	rc = ctl(&out, "rollback -w node[01-02]");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "nothing to roll back"));
	free(out);
}
END_TEST

/* Each node's eth0 (a veth in its namespace) through libnl, and a per-
 * namespace sysctl, on both nodes at once. */
START_TEST(test_net_and_sysctl)
{
	char *out = NULL;
	int rc;

	precheck();
	write_profile("netns",
	    "  <net interface=\"eth0\" attr=\"mtu\" value=\"1400\"/>\n"
	    "  <net interface=\"eth0\" attr=\"txqueuelen\" value=\"2000\"/>\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"1234\"/>\n");
	rc = ctl(&out, "apply %s/netns.xml -w node[01-02]", top);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "node[01-02]"));
	ck_assert_ptr_nonnull(strstr(out, "changed         net eth0 mtu: 1500 -> 1400"));
	ck_assert_ptr_nonnull(strstr(out, "changed         sysctl net.core.somaxconn"));
	ck_assert_ptr_nonnull(strstr(out, "2 changed"));
	free(out);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(harness_node_sh(&h, i, "ip link show eth0 | grep -q \"mtu 1400 .*qlen 2000\""), 0);
		ck_assert_int_eq(harness_node_sh(&h, i, "test $(cat /proc/sys/net/core/somaxconn) = 1234"), 0);
	}
	/* the host namespace is untouched */
	ck_assert_int_ne(system("test $(cat /proc/sys/net/core/somaxconn) = 1234"), 0);
	ck_assert_int_eq(harness_node_sh(&h, 1, "ip link set eth0 mtu 1450"), 0);
	rc = ctl(&out, "verify %s/netns.xml -w node[01-02]", top);
	ck_assert_int_eq(rc, 1);
	ck_assert_ptr_nonnull(strstr(out, "drift           net eth0 mtu: is 1450, profile wants 1400"));
	free(out);
	/* node02's mtu changed since knob set it: left alone until --force */
	rc = ctl(&out, "rollback -w node[01-02]");
	ck_assert_int_eq(rc, 1);
	ck_assert_ptr_nonnull(strstr(out, "changed-since   net eth0 mtu: is 1450, knob set 1400, original 1500"));
	ck_assert_ptr_nonnull(strstr(out, "1 changed (node01), 1 failed (node02)"));
	free(out);
	ck_assert_int_eq(harness_node_sh(&h, 1, "ip link show eth0 | grep -q \"mtu 1450 \""), 0);
	rc = ctl(&out, "rollback -w node[01-02] --force");
	ck_assert_int_eq(rc, 0);
	free(out);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(harness_node_sh(&h, i, "ip link show eth0 | grep -q \"mtu 1500 .*qlen 1000\""), 0);
		ck_assert_int_ne(harness_node_sh(&h, i, "test $(cat /proc/sys/net/core/somaxconn) = 1234"), 0);
	}
	/* --json: every node's record with its keys */
	rc = ctl(&out, "--json apply %s/netns.xml -w node[01-02] --check", top);
	ck_assert_int_eq(rc, 0);
	{
		json_object *doc = json_tokener_parse(out), *nodes, *n, *v, *keys;

		ck_assert_ptr_nonnull(doc);
		ck_assert(json_object_object_get_ex(doc, "nodes", &nodes));
		ck_assert_int_eq(json_object_array_length(nodes), 2);
		n = json_object_array_get_idx(nodes, 0);
		ck_assert(json_object_object_get_ex(n, "status", &v));
		ck_assert_str_eq(json_object_get_string(v), "would-change");
		ck_assert(json_object_object_get_ex(n, "apply", &v));
		ck_assert(json_object_object_get_ex(v, "keys", &keys));
		ck_assert_int_eq(json_object_array_length(keys), 3);
		json_object_put(doc);
	}
	free(out);
}
END_TEST

/* Write ROOT/REL (parents made); executable under a bin/ directory. */
static void
put(const char *root, const char *rel, const char *content)
{
	cu_write_at(root, rel, strstr(rel, "/bin/") != NULL ? 0755 : 0644, "%s", content);
}

/* Fake Lustre tree and stand-in GPFS commands under node02's --sysroot. */
START_TEST(test_fake_lustre_gpfs)
{
	char root[128], cfg[160], body[2048], *out = NULL;
	int rc;

	precheck();
	snprintf(root, sizeof(root), "%s/root2", top);
	snprintf(cfg, sizeof(cfg), "%s/gpfs.cfg", top);
	for (int i = 0; i < 4; i++) {
		char p[256];

		snprintf(p, sizeof(p), "/sys/fs/lustre/osc/scratch-OST000%d-osc-ffff9a/max_rpcs_in_flight", i);
		put(root, p, "8\n");
		snprintf(p, sizeof(p), "/proc/fs/lustre/osc/scratch-OST000%d-osc-ffff9a/checksums", i);
		put(root, p, "1\n");
	}
	put(root, "/sys/fs/lustre/mgc/MGC10.1.0.1@o2ib/ir_timeout", "30\n");
	put(root, "/sys/fs/lustre/ldlm/namespaces/scratch-OST0000-osc-ffff9a/lru_size", "0\n");
	put(root, "/sys/fs/lustre/ldlm/namespaces/MGC10.1.0.1@o2ib/lru_size", "0\n");
	put(top, "/gpfs.cfg", "pagepool 1073741824\nmaxMBpS 2048\n");
	/* it also keeps the signal mask and ignored signals it was started with
	 * (read by the shell itself: while it forks a child, dash blocks all) */
	snprintf(body, sizeof(body), "#!/bin/sh\n# stand-in for mmdiag (no GPFS here)\n"
	    "while read -r l; do case $l in SigBlk*|SigIgn*) echo \"$l\";; esac; done "
	    "< /proc/$$/status > '%s/mmdiag.sig'\n"
	    "[ \"$1\" = --config ] || exit 2\necho '=== mmdiag: config ==='\nsed 's/^/ ! /' '%s'\n",
	    top, cfg);
	put(root, "/usr/lpp/mmfs/bin/mmdiag", body);
	snprintf(body, sizeof(body), "#!/bin/sh\n# stand-in for mmchconfig (no GPFS here)\n"
	    "kv=$1; k=${kv%%=*}; v=${kv#*=}\n"
	    "case $k in\n"
	    "maxMBpS) sleep 30;;\n"
	    "pagepool) sed -i \"s/^pagepool .*/pagepool $v/\" '%s';;\n"
	    "*) echo \"mmchconfig: unknown attribute $k\" >&2; exit 1;;\n"
	    "esac\n", cfg);
	put(root, "/usr/lpp/mmfs/bin/mmchconfig", body);

	harness_agent_stop(&h, 1, SIGTERM);
	snprintf(h.node[1].sysroot, sizeof(h.node[1].sysroot), "%s", root);
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);

	write_profile("fake", "  <lustre key=\"osc.*OST*.max_rpcs_in_flight\" value=\"16\"/>\n"
	    "  <lustre key=\"osc.*.checksums\" value=\"0\"/>\n"
	    "  <lustre key=\"ldlm.namespaces.MGC10.1.0.1@o2ib.lru_size\" value=\"2000\"/>\n"
	    "  <lustre key=\"llite.*.max_read_ahead_mb\" value=\"1024\"/>\n"
	    "  <gpfs key=\"pagepool\" value=\"16G\"/>\n");
	/* exit 1: one key is unsupported here (the rest is applied) */
	rc = ctl(&out, "apply %s/fake.xml -w node02", top);
	ck_assert_int_eq(rc, 1);
	ck_assert_ptr_nonnull(strstr(out, "1 unsupported (node02)"));
	ck_assert_ptr_nonnull(strstr(out, "changed         lustre osc.scratch-OST0003-osc-ffff9a.max_rpcs_in_flight: 8 -> 16"));
	ck_assert_ptr_nonnull(strstr(out, "changed         lustre osc.scratch-OST0002-osc-ffff9a.checksums: 1 -> 0"));
	ck_assert_ptr_nonnull(strstr(out, "changed         lustre ldlm.namespaces.MGC10.1.0.1@o2ib.lru_size: 0 -> 2000"));
	ck_assert_ptr_nonnull(strstr(out, "unsupported     lustre llite.*.max_read_ahead_mb"));
	ck_assert_ptr_nonnull(strstr(out, "changed         gpfs pagepool: 1073741824 -> 17179869184"));
	free(out);
	/* a command knobd runs gets default signals: knobd's blocked SIGTERM
	 * and ignored SIGPIPE (its signalfd, its sockets) are not passed on.
	 * Before, SigBlk was 4003 (HUP, INT, TERM) and SigIgn 1000 (PIPE). */
	{
		unsigned long long blk = ~0ull, ign = ~0ull;
		const char *sig = cu_readf("%s/mmdiag.sig", top);

		ck_assert_int_eq(sscanf(sig, "SigBlk: %llx SigIgn: %llx", &blk, &ign), 2);
		ck_assert_msg(blk == 0, "%s", sig);
		/* HUP, INT, PIPE, TERM: what knobd ignores or blocks (a signal
		 * ignored by whoever started the tests, and glibc's own 32 and
		 * 33, are not knob's to reset) */
		ck_assert_msg((ign & 0x5003ull) == 0, "%s", sig);
	}
	{
		char buf[256], p[256];

		snprintf(p, sizeof(p), "%s/sys/fs/lustre/ldlm/namespaces/scratch-OST0000-osc-ffff9a/lru_size", root);
		ck_assert_int_ge(read_small_file(p, buf, sizeof(buf)), 0);
		ck_assert_str_eq(buf, "0");	/* the NID key matched only the MGC */
	}

	/* a hanging mmchconfig times out; the transaction is reverted */
	write_profile("slow", "  <lustre key=\"osc.*OST0000*.max_rpcs_in_flight\" value=\"64\"/>\n"
	    "  <gpfs key=\"maxMBpS\" value=\"20000\"/>\n");
	rc = ctl(&out, "apply %s/slow.xml -w node02", top);
	ck_assert_int_eq(rc, 1);
	ck_assert_ptr_nonnull(strstr(out, "failed          gpfs maxMBpS: mmchconfig maxMBpS=20000 -i -N node02 timed out after 1000 ms"));
	ck_assert_ptr_nonnull(strstr(out, "reverted        lustre osc.scratch-OST0000-osc-ffff9a.max_rpcs_in_flight: 16 -> 64, reverted to 16"));
	free(out);

	rc = ctl(&out, "rollback -w node02");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "restored        gpfs pagepool: 17179869184 -> 1073741824"));
	free(out);
	harness_agent_stop(&h, 1, SIGTERM);
	h.node[1].sysroot[0] = '\0';
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
}
END_TEST

/* Pending restart over the wire: node02 with stand-in mmchconfig / mmdiag
 * under its --sysroot (no GPFS here).  The stand-in's mmchconfig changes
 * gpfs-cfg (the configuration), its mmdiag prints gpfs-live (the running
 * mmfsd); "restarting mmfsd" is this test copying one over the other. */
START_TEST(test_gpfs_pending_restart)
{
	char root[128], cfg[160], live[160], body[2048], buf[1024], *out = NULL;
	int rc;

	precheck();
	snprintf(root, sizeof(root), "%s/root3", top);
	snprintf(cfg, sizeof(cfg), "%s/gpfs-cfg", top);
	snprintf(live, sizeof(live), "%s/gpfs-live", top);
	put(top, "/gpfs-cfg", "pagepool 4294967296\n");
	put(top, "/gpfs-live", "pagepool 4294967296\n");
	snprintf(body, sizeof(body), "#!/bin/sh\n# stand-in for mmdiag (no GPFS here)\n"
	    "[ \"$1\" = --config ] || exit 2\necho '=== mmdiag: config ==='\nsed 's/^/ ! /' '%s'\n",
	    live);
	put(root, "/usr/lpp/mmfs/bin/mmdiag", body);
	snprintf(body, sizeof(body), "#!/bin/sh\n# stand-in for mmchconfig (no GPFS here): "
	    "configures, takes effect at the next mmfsd start\n"
	    "kv=$1; k=${kv%%=*}; v=${kv#*=}\n"
	    "echo \"$*\" >> '%s/mmchconfig3.log'\n"
	    "sed -i \"s/^$k .*/$k $v/\" '%s'\n", top, cfg);
	put(root, "/usr/lpp/mmfs/bin/mmchconfig", body);
	harness_agent_stop(&h, 1, SIGTERM);
	snprintf(h.node[1].sysroot, sizeof(h.node[1].sysroot), "%s", root);
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
	write_profile("gpfs-client", "  <gpfs key=\"pagepool\" value=\"16G\"/>\n");

	rc = ctl(&out, "apply %s/gpfs-client.xml -w node02", top);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "pending-restart gpfs pagepool: 4294967296 -> 17179869184"));
	free(out);

	/* not drift: exit 0, node ok, the text says what is pending */
	rc = ctl(&out, "verify %s/gpfs-client.xml -w node02", top);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "pending-restart gpfs pagepool: is 4G, set to 16G, "
	    "takes effect when mmfsd restarts"));
	ck_assert_ptr_nonnull(strstr(out, "0 of 1 key(s) match, 1 set and pending a restart"));
	ck_assert_ptr_null(strstr(out, "drift           "));
	ck_assert_ptr_null(strstr(out, "1 drift"));
	ck_assert_ptr_nonnull(strstr(out, "\n1 ok\n"));
	free(out);
	rc = ctl(&out, "--json verify %s/gpfs-client.xml -w node02", top);
	ck_assert_int_eq(rc, 0);
	/* --json names states as the text does */
	ck_assert_ptr_nonnull(strstr(out, "\"state\": \"pending-restart\""));
	ck_assert_ptr_null(strstr(out, "KEY_"));
	free(out);

	/* mmfsd "restarts": the configured value is live, verify says ok */
	ck_assert_int_gt(read_small_file(cfg, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "pagepool 16G");	/* sent in the unit the admin wrote */
	ck_assert_int_eq(write_small_file(live, buf), 0);
	rc = ctl(&out, "verify %s/gpfs-client.xml -w node02", top);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "1 of 1 key(s) match; active profile: gpfs-client"));
	ck_assert_ptr_null(strstr(out, "pending"));
	free(out);

	/* changed behind knob's back to something else: drift, exit 1 */
	ck_assert_int_eq(write_small_file(live, "pagepool 8589934592\n"), 0);
	rc = ctl(&out, "verify %s/gpfs-client.xml -w node02", top);
	ck_assert_int_eq(rc, 1);
	ck_assert_ptr_nonnull(strstr(out, "drift           gpfs pagepool: is 8589934592, "
	    "profile wants 17179869184"));
	ck_assert_ptr_nonnull(strstr(out, "1 drift"));
	free(out);

	/* rollback: changed since knob set it, so left alone (exit 1) until
	 * --force restores the original through mmchconfig */
	rc = ctl(&out, "rollback -w node02");
	ck_assert_int_eq(rc, 1);
	ck_assert_ptr_nonnull(strstr(out, "changed-since   gpfs pagepool: is 8589934592"));
	free(out);
	rc = ctl(&out, "rollback -w node02 --force");
	ck_assert_int_eq(rc, 0);
	free(out);
	snprintf(body, sizeof(body), "%s/mmchconfig3.log", top);
	ck_assert_int_gt(read_small_file(body, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "pagepool=4294967296 -i -N node02"));
	ck_assert_int_gt(read_small_file(cfg, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "pagepool 4294967296");

	harness_agent_stop(&h, 1, SIGTERM);
	h.node[1].sysroot[0] = '\0';
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
}
END_TEST

/* SIGKILL between the journal write and the end of the transaction (test
 * pause after the first write), restart: originals back; a second apply
 * journals the true originals (rollback returns to them). */
START_TEST(test_crash_safety)
{
	char sched0[256], ra0[64], want[32], *out = NULL;
	pid_t pid;
	int st, i, rc;

	precheck();
	snprintf(sched0, sizeof(sched0), "%s", qattr("scheduler"));
	snprintf(ra0, sizeof(ra0), "%s", qattr("read_ahead_kb"));
	snprintf(want, sizeof(want), "%s", strstr(sched0, "[none]") ? "mq-deadline" : "none");
	write_profile("crash", "  <blockdev device=\"%s\" attr=\"scheduler\" value=\"%s\"/>\n"
	    "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"1M\"/>\n",
	    loopdev, want, loopdev);
	pid = harness_knobctl_bg(&h, "/dev/null", NULL, "apply %s/crash.xml -w node01 "
	    "--test-pause-ms 4000", top);
	ck_assert_int_gt(pid, 0);
	for (i = 0; i < 300 && strstr(qattr("scheduler"), want) == NULL; i++)
		usleep(20000);
	ck_assert_msg(strstr(qattr("scheduler"), want) != NULL, "first write did not happen");
	ck_assert_str_eq(qattr("read_ahead_kb"), ra0);	/* second write not yet */
	harness_agent_stop(&h, 0, SIGKILL);
	waitpid(pid, &st, 0);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);	/* recovery before serving */
	ck_assert_str_eq(qattr("scheduler"), sched0);
	ck_assert_str_eq(qattr("read_ahead_kb"), ra0);

	rc = ctl(&out, "apply %s/crash.xml -w node01", top);
	ck_assert_int_eq(rc, 0);
	free(out);
	ck_assert_str_eq(qattr("read_ahead_kb"), "1024");
	rc = ctl(&out, "rollback -w node01");
	ck_assert_int_eq(rc, 0);
	free(out);
	ck_assert_str_eq(qattr("scheduler"), sched0);
	ck_assert_str_eq(qattr("read_ahead_kb"), ra0);
}
END_TEST

/* Wait (deadline 20 s) until node i's agent pauses at a test pause point. */
static void
wait_agent_pause(int i)
{
	char path[PATH_MAX + 16], buf[128];
	uint64_t end = now_mono_ns() + 20000000000ull;

	snprintf(path, sizeof(path), "%s/test-pause", h.node[i].state_dir);
	while (now_mono_ns() < end) {
		if (read_small_file(path, buf, sizeof(buf)) > 0)
			return;
		usleep(10000);
	}
	ck_abort_msg("node%02d never paused", i + 1);
}

/* The first's hold: long for a loaded VM under ASan; each test ends it
 * (harness_pause_end) once what it holds the lock for is done. */
#define HOLD_MS 20000

/* Profiles ctl-a (read_ahead_kb 512) and ctl-b (768) on the loop device,
 * and ctl-a applied in the background, paused after journaling for ms while
 * it holds node01's tuning lock (its output in path); the apply's pid. */
static pid_t
first_holds_lock(const char *path, int ms)
{
	pid_t pid;

	write_profile("ctl-a", "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"512\"/>\n",
	    loopdev);
	write_profile("ctl-b", "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"768\"/>\n",
	    loopdev);
	pid = harness_knobctl_bg(&h, path, NULL, "apply %s/ctl-a.xml -w node01 --test-pause-ms %d "
	    "--test-pause-at 'after journaling'", top, ms);
	wait_agent_pause(0);
	return pid;
}

/* How many apply requests node01's agent has dispatched (its debug log). */
static long
applies_seen(void)
{
	return harness_sh_int("grep -c ': apply request ' %s", h.node[0].log);
}

/* Does node01's agent log say arg? */
static int
agent_log_has(void *arg)
{
	return cu_file_has(h.node[0].log, arg);
}

/* Is the agent's apply count at least *(long *)arg? */
static int
applies_reach(void *arg)
{
	return applies_seen() >= *(long *)arg;
}

/* An apply --wait whose controller is killed while it waits for the lock
 * (the first apply holds it): the abandoned apply is dropped, and says so
 * in the agent's log, while the lock is still held; it is not run when
 * the lock frees up: node01 keeps the first profile's value. */
START_TEST(test_wait_abandoned)
{
	char *out = NULL, path[256];
	long want;
	pid_t first, waiter;
	int st;

	precheck();
	snprintf(path, sizeof(path), "%s/ab.out", top);
	want = applies_seen() + 2;
	first = first_holds_lock(path, HOLD_MS);
	waiter = harness_knobctl_bg(&h, "/dev/null", NULL, "apply %s/ctl-b.xml -w node01 --wait 60",
	    top);
	/* the waiting apply has reached the agent: then its controller goes */
	ck_assert_msg(cu_wait(applies_reach, &want, 20) >= 0, "the second apply never arrived");
	ck_assert_int_eq(kill(waiter, SIGKILL), 0);
	ck_assert_int_eq(waitpid(waiter, &st, 0), waiter);
	/* the abandoned apply is dropped while the lock is held: then the
	 * first may go on, and the lock freeing up does not run it */
	ck_assert_msg(cu_wait(agent_log_has, (char *)(uintptr_t)"dropped: the controller went away "
	    "while this waited for the tuning lock", 20) >= 0, "no drop in the agent's log");
	ck_assert_msg(waitpid(first, &st, WNOHANG) == 0, "the holder ended before the drop");
	harness_pause_end(&h, 0);
	ck_assert_int_eq(waitpid(first, &st, 0), first);
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	ck_assert_str_eq(qattr("read_ahead_kb"), "512");
	ck_assert_int_eq(ctl(&out, "active -w node01"), 0);
	ck_assert_ptr_nonnull(strstr(out, "node01:   ctl-a"));
	free(out);
	ck_assert_int_eq(ctl(&out, "off -w node01"), 0);
	free(out);
}
END_TEST

/* Restart node01's agent (--test-hooks) with $KNOB_TEST_WAIT_MAX_S at cap
 * seconds (0: without it), for the agent only. */
static void
restart_wait_cap(int cap)
{
	char v[16];

	harness_agent_stop(&h, 0, SIGTERM);
	snprintf(v, sizeof(v), "%d", cap);
	if (cap)
		setenv("KNOB_TEST_WAIT_MAX_S", v, 1);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	unsetenv("KNOB_TEST_WAIT_MAX_S");
}

#define WAIT_CAP_S 2	/* the agent's wait_s cap in test_wait_capped */

/* The agent caps a request's wait for the tuning lock (WAIT_MAX_S, here
 * shortened to WAIT_CAP_S by the test hook) whatever the controller asks:
 * an apply --wait 86400 while another holds the lock is told busy after
 * the cap, naming the holder, and the holder is not disturbed.  Without
 * the cap it waits until the holder is done (HOLD_MS) and applies. */
START_TEST(test_wait_capped)
{
	char *out = NULL, path[256];
	uint64_t t0;
	double took;
	pid_t first;
	int st, rc;

	restart_wait_cap(WAIT_CAP_S);
	precheck();
	snprintf(path, sizeof(path), "%s/cap.out", top);
	first = first_holds_lock(path, HOLD_MS);
	t0 = now_mono_ns();
	rc = ctl(&out, "apply %s/ctl-b.xml -w node01 --wait 86400", top);
	took = (double)(now_mono_ns() - t0) / 1e9;
	ck_assert_msg(took >= WAIT_CAP_S - 0.1 && took < HOLD_MS / 2000.0, "answered after %.1f s "
	    "(the cap: %d s), exit %d", took, WAIT_CAP_S, rc);
	ck_assert_msg(waitpid(first, &st, WNOHANG) == 0, "the holder ended before the refusal");
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "busy (held by ") != NULL, "%s", out);
	printf("wait capped: apply --wait 86400 told busy after %.1f s\n", took);
	free(out);
	harness_pause_end(&h, 0);
	ck_assert_int_eq(waitpid(first, &st, 0), first);
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	ck_assert_str_eq(qattr("read_ahead_kb"), "512");
	ck_assert_int_eq(ctl(&out, "off -w node01"), 0);
	free(out);
	restart_wait_cap(0);
}
END_TEST

/* Four applies --wait 60 from four controllers while a fifth holds
 * node01's tuning lock: threads waiting for the lock are at most all but
 * one of the agent's pool (WORK_THREADS), the fourth waits without one, so
 * a facts request is answered while the lock is still held (the four
 * arrive and facts is answered in well under 1 s, also under ASan on a
 * loaded VM); then every waiting apply runs in turn.  Before, the four took all four threads and
 * facts, verify and bench clean-up waited behind them. */
START_TEST(test_waiters_keep_a_thread)
{
	char *out = NULL, path[256];
	pid_t first, w[4];
	uint64_t t0;
	long want;
	int st;

	precheck();
	snprintf(path, sizeof(path), "%s/wk.out", top);
	want = applies_seen() + 5;
	first = first_holds_lock(path, HOLD_MS);
	t0 = now_mono_ns();
	for (int i = 0; i < 4; i++)
		w[i] = harness_knobctl_bg(&h, "/dev/null", NULL, "apply %s/ctl-b.xml -w node01 "
		    "--wait 60", top);
	ck_assert_msg(cu_wait(applies_reach, &want, 20) >= 0, "the waiting applies never arrived");
	ck_assert_msg(cu_wait(agent_log_has, (char *)(uintptr_t)"waits for the tuning lock without "
	    "a worker thread", 20) >= 0, "no apply waited without a thread");
	ck_assert_int_eq(ctl(&out, "facts -w node01 --timeout 3"), 0);
	free(out);
	ck_assert_msg(waitpid(first, &st, WNOHANG) == 0, "the holder ended before facts came back");
	printf("waiters keep a thread: facts answered %.1f s into the first's hold\n",
	    (double)(now_mono_ns() - t0) / 1e9);
	harness_pause_end(&h, 0);	/* the first may go on, then each waiter */
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(waitpid(w[i], &st, 0), w[i]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "apply %d: status %#x", i, st);
	}
	ck_assert_int_eq(waitpid(first, &st, 0), first);
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	ck_assert_str_eq(qattr("read_ahead_kb"), "768");
	ck_assert_int_eq(ctl(&out, "off -w node01"), 0);
	free(out);
}
END_TEST

/* Two controllers at once: while the first one's apply holds node01's
 * tuning lock, the second is told busy at once, naming the owner; with
 * --wait it queues and wins after the first.  A bench phase is refused
 * the same way.  The three refusals, run side by side, must all fall
 * inside the first's hold (HOLD_MS) also on a loaded VM under ASan (one
 * after the other they needed more than 6 s there). */
START_TEST(test_two_controllers)
{
	char *out = NULL, path[256], args[3][512], buf[4096], rout[3][300];
	pid_t pid, r[3];
	uint64_t t0;
	int st, rc;

	precheck();
	snprintf(path, sizeof(path), "%s/ctl-a.out", top);
	pid = first_holds_lock(path, HOLD_MS);
	t0 = now_mono_ns();
	snprintf(args[0], sizeof(args[0]), "apply %s/ctl-b.xml -w node01", top);
	snprintf(args[1], sizeof(args[1]), "rollback -w node01");
	/* a benchmark phase is refused too (it would measure a half-tuned node) */
	snprintf(args[2], sizeof(args[2]), "bench seq-write -w node01 --dir %s --threads 1 "
	    "--size 1m --bs 1m", top);
	for (int i = 0; i < 3; i++) {
		snprintf(rout[i], sizeof(rout[i]), "%s/refused%d.out", top, i);
		r[i] = harness_knobctl_bg(&h, rout[i], "&2", "%s", args[i]);
		ck_assert_int_gt(r[i], 0);
	}
	for (int i = 0; i < 3; i++) {
		rc = cu_reap(r[i]);
		out = cu_slurp(rout[i]);
		fprintf(stderr, "$ knobctl %s   (exit %d)\n%s", args[i], rc, out);
		ck_assert_int_eq(rc, 1);
		ck_assert_ptr_nonnull(strstr(out, "busy (held by controller pid "));
		if (i == 0)
			ck_assert_ptr_nonnull(strstr(out, "1 busy (node01)"));
		free(out);
	}
	printf("two controllers: three refusals within %.1f s of the first's hold\n",
	    (double)(now_mono_ns() - t0) / 1e9);
	harness_pause_end(&h, 0);	/* the refusals are in: the first may go on */
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	ck_assert_int_gt(read_small_file(path, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "changed         blockdev"));
	ck_assert_str_eq(qattr("read_ahead_kb"), "512");

	/* --wait: queued behind the first, then applied */
	snprintf(args[0], sizeof(args[0]), "apply %s/ctl-a.xml -w node01 --test-pause-ms 2000 "
	    "--test-pause-at 'after journaling'", top);
	ck_assert_int_eq(ctl(&out, "rollback -w node01"), 0);
	free(out);
	pid = harness_knobctl_bg(&h, path, NULL, "%s", args[0]);
	wait_agent_pause(0);
	rc = ctl(&out, "apply %s/ctl-b.xml -w node01 --wait 30", top);
	ck_assert_int_eq(rc, 0);
	free(out);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	ck_assert_str_eq(qattr("read_ahead_kb"), "768");
	rc = ctl(&out, "active -w node01");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "node01:   ctl-b"));
	free(out);
	rc = ctl(&out, "off -w node01");
	ck_assert_int_eq(rc, 0);
	free(out);
}
END_TEST

/* node01's state directory on a tiny tmpfs filled to the last block: the
 * journal cannot be written, so the apply writes nothing, is failed, says
 * why, and exits 1. */
START_TEST(test_state_dir_full)
{
	static char mnt[256];
	char *out = NULL, saved[PATH_MAX], cmd[700], ra0[64];
	int rc;

	precheck();
	snprintf(ra0, sizeof(ra0), "%s", qattr("read_ahead_kb"));
	snprintf(saved, sizeof(saved), "%s", h.node[0].state_dir);
	snprintf(mnt, sizeof(mnt), "%s/full", top);
	mkdir(mnt, 0700);
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o size=64k tmpfs '%s' && "
	    "dd if=/dev/zero of='%s/fill' bs=4k 2>/dev/null; test -s '%s/fill'", mnt, mnt, mnt);
	ck_assert_int_eq(system(cmd), 0);
	full_mnt = mnt;
	harness_agent_stop(&h, 0, SIGTERM);
	snprintf(h.node[0].state_dir, sizeof(h.node[0].state_dir), "%s", mnt);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	write_profile("full", "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"2M\"/>\n",
	    loopdev);
	rc = ctl(&out, "apply %s/full.xml -w node01", top);
	ck_assert_int_eq(rc, 1);
	ck_assert_ptr_nonnull(strstr(out, "failed          blockdev"));
	ck_assert_ptr_nonnull(strstr(out, "No space left on device"));
	ck_assert_ptr_nonnull(strstr(out, "1 failed (node01)"));
	free(out);
	ck_assert_str_eq(qattr("read_ahead_kb"), ra0);
	harness_agent_stop(&h, 0, SIGTERM);
	snprintf(h.node[0].state_dir, sizeof(h.node[0].state_dir), "%s", saved);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	snprintf(cmd, sizeof(cmd), "umount '%s'", mnt);
	ck_assert_int_eq(system(cmd), 0);
	full_mnt = NULL;
}
END_TEST

/* Boot persistence: node01's agent restarts in another boot after the loop
 * device's value was reset behind its back (as a reboot resets sysfs): it re-applies the
 * active profile, and active, verify (no profile) and facts say so;
 * --no-reapply leaves the node alone. */
START_TEST(test_reapply_at_start)
{
	char *out = NULL, path[256], ra0[64], saved[sizeof(h.node[0].extra_args)];
	int rc;

	precheck();
	snprintf(ra0, sizeof(ra0), "%s", qattr("read_ahead_kb"));
	snprintf(path, sizeof(path), "/sys/block/%s/queue/read_ahead_kb", loopdev);
	write_profile("boot", "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"1536K\"/>\n",
	    loopdev);
	rc = ctl(&out, "apply %s/boot.xml -w node01", top);
	ck_assert_int_eq(rc, 0);
	free(out);
	/* knobd restarted in the same boot (the kernel's boot id, read by
	 * knobd): the admin's own value stays; before, it was overwritten */
	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_int_eq(write_small_file(path, "2048"), 0);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	ck_assert_str_eq(qattr("read_ahead_kb"), "2048");
	rc = ctl(&out, "active -w node01");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "node01:   boot (restarted in the same boot "));
	ck_assert_ptr_nonnull(strstr(out, "1 key(s) differ (1 changed since knob set them)"));
	free(out);
	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_int_eq(write_small_file(path, ra0), 0);
	/* the "reboot": another boot id (--test-hooks), or the restart is
	 * one in the same boot, which keeps the value and counts the drift */
	setenv("KNOB_TEST_BOOT_ID", "reboot-1", 1);
	rc = harness_agent_start(&h, 0);
	unsetenv("KNOB_TEST_BOOT_ID");
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(qattr("read_ahead_kb"), "1536");
	rc = ctl(&out, "active -w node01");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "node01:   boot (re-applied at boot "));
	free(out);
	rc = ctl(&out, "verify -w node01");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "1 of 1 key(s) match; active profile: boot (re-applied at boot"));
	free(out);
	rc = ctl(&out, "facts -w node01");
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "profile: boot (re-applied at boot"));
	free(out);

	/* --no-reapply: the reset value stays, verify reports the drift */
	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_int_eq(write_small_file(path, ra0), 0);
	snprintf(saved, sizeof(saved), "%s", h.node[0].extra_args);
	snprintf(h.node[0].extra_args, sizeof(h.node[0].extra_args), "%s --no-reapply", saved);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
	snprintf(h.node[0].extra_args, sizeof(h.node[0].extra_args), "%s", saved);
	ck_assert_str_eq(qattr("read_ahead_kb"), ra0);
	rc = ctl(&out, "verify -w node01");
	ck_assert_int_eq(rc, 1);
	ck_assert_ptr_nonnull(strstr(out, "drift"));
	free(out);
	rc = ctl(&out, "off -w node01");
	ck_assert_int_eq(rc, 0);
	free(out);
	ck_assert_str_eq(qattr("read_ahead_kb"), ra0);
	harness_agent_stop(&h, 0, SIGTERM);
	ck_assert_int_eq(harness_agent_start(&h, 0), 0);
}
END_TEST

/* Switching profiles through knobctl on the real loop device: B does not
 * set A's nr_requests, so it goes back to its original in B's
 * transaction; --stack keeps A's keys and the node reports "B+A". */
START_TEST(test_switch_and_stack)
{
	char *out = NULL, nr0[32], ra0[32], want[256];
	int rc;

	precheck();
	snprintf(nr0, sizeof(nr0), "%s", qattr("nr_requests"));
	snprintf(ra0, sizeof(ra0), "%s", qattr("read_ahead_kb"));
	write_profile("sw-a", "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"768\"/>\n"
	    "  <blockdev device=\"%s\" attr=\"nr_requests\" value=\"48\"/>\n", loopdev, loopdev);
	write_profile("sw-b", "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"896\"/>\n",
	    loopdev);
	ck_assert_int_eq(ctl(&out, "apply %s/sw-a.xml -w node01", top), 0);
	free(out);
	ck_assert_str_eq(qattr("nr_requests"), "48");
	/* --check says what the switch does: A's nr_requests would be restored */
	rc = ctl(&out, "apply %s/sw-b.xml -w node01 --check --diff", top);
	ck_assert_int_eq(rc, 0);
	snprintf(want, sizeof(want), "would-restore   blockdev %s nr_requests: 48 -> %s", loopdev,
	    nr0);
	ck_assert_msg(strstr(out, want) != NULL, "no \"%s\" in:\n%s", want, out);
	ck_assert_ptr_nonnull(strstr(out, "1 would be restored"));
	free(out);
	ck_assert_str_eq(qattr("nr_requests"), "48");
	rc = ctl(&out, "apply %s/sw-b.xml -w node01", top);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "restored        blockdev"));
	ck_assert_ptr_nonnull(strstr(out, "not in the new profile"));
	free(out);
	ck_assert_str_eq(qattr("nr_requests"), nr0);
	ck_assert_str_eq(qattr("read_ahead_kb"), "896");
	rc = ctl(&out, "apply %s/sw-a.xml -w node01 --stack", top);
	ck_assert_int_eq(rc, 0);
	free(out);
	rc = ctl(&out, "active -w node01");
	ck_assert_ptr_nonnull(strstr(out, "node01:   sw-b+sw-a"));
	free(out);
	rc = ctl(&out, "verify -w node01");
	ck_assert_int_eq(rc, 0);
	free(out);
	ck_assert_int_eq(ctl(&out, "off -w node01"), 0);
	free(out);
	ck_assert_str_eq(qattr("nr_requests"), nr0);
	ck_assert_str_eq(qattr("read_ahead_kb"), ra0);
}
END_TEST

/* Run knobctl CMD; assert exit status want and that the output holds
 * every string of the NULL-terminated list that follows. */
static void
ctl_expect(int want, const char *cmd, ...)
{
	char *out = NULL;
	const char *needle;
	va_list ap;

	ck_assert_int_eq(ctl(&out, "%s", cmd), want);
	va_start(ap, cmd);
	while ((needle = va_arg(ap, const char *)) != NULL)
		ck_assert_msg(strstr(out, needle) != NULL, "no \"%s\" in the output", needle);
	va_end(ap);
	free(out);
}

/* A key verify cannot check (nothing on the node matches) is no match:
 * the node is unsupported and the exit status 1, as apply --check says
 * (review G, finding 3); a node where every key matches stays ok. */
START_TEST(test_verify_unsupported)
{
	char cmd[512];

	precheck();
	write_profile("unsup",
	    "  <sysctl key=\"net.core.somaxconn\" value=\"4096\"/>\n"
	    "  <sysfs key=\"/sys/class/net/knobnosuch*/mtu\" value=\"1500\"/>\n");
	write_profile("sup", "  <sysctl key=\"net.core.somaxconn\" value=\"4096\"/>\n");
	ck_assert_int_eq(harness_node_sh(&h, 0, "echo 4096 >/proc/sys/net/core/somaxconn"), 0);
	snprintf(cmd, sizeof(cmd), "verify %s/unsup.xml -w node01", top);
	ctl_expect(1, cmd, "unsupported     sysfs /sys/class/net/knobnosuch*/mtu: nothing on this "
	    "node matches", "=> 1 of 2 key(s) match", "1 unsupported (node01)", NULL);
	snprintf(cmd, sizeof(cmd), "apply %s/unsup.xml -w node01 --check", top);
	ctl_expect(1, cmd, "1 unsupported (node01)", NULL);
	snprintf(cmd, sizeof(cmd), "verify %s/sup.xml -w node01", top);
	ctl_expect(0, cmd, "\n1 ok\n", NULL);
}
END_TEST

/* The fake disk sdb of node02's sysroot (root4): identity dev and wwid
 * suffix n, its read_ahead_kb ra (NULL: left as it is). */
static void
fake_disk(const char *root, const char *dev, int n, const char *ra)
{
	char v[64];

	put(root, "/sys/block/sdb/dev", dev);
	snprintf(v, sizeof(v), "naa.5000c500a1b2c3d%d\n", n);
	put(root, "/sys/block/sdb/device/wwid", v);
	if (ra != NULL)
		put(root, "/sys/block/sdb/queue/read_ahead_kb", ra);
}

/* node02 restarted on the fake disks sdb (332, identity 8:16 and wwid
 * suffix 0) and fakeq (128) under root, with knobd arguments args. */
static void
disks_start(const char *root, const char *args)
{
	fake_disk(root, "8:16\n", 0, "332\n");
	put(root, "/sys/block/sdb/queue/max_sectors_kb", "1280\n");
	put(root, "/sys/block/fakeq/dev", "8:48\n");
	put(root, "/sys/block/fakeq/queue/read_ahead_kb", "128\n");
	harness_agent_stop(&h, 1, SIGTERM);
	snprintf(h.node[1].sysroot, sizeof(h.node[1].sysroot), "%s", root);
	snprintf(h.node[1].extra_args, sizeof(h.node[1].extra_args), "%s", args);
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
}

/* node02 restarted as the other tests expect it: no sysroot, no arguments. */
static void
node02_plain(void)
{
	harness_agent_stop(&h, 1, SIGTERM);
	h.node[1].sysroot[0] = '\0';
	h.node[1].extra_args[0] = '\0';
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
}

/* Profile A (sdb's read_ahead_kb 1M, through the device name key) on
 * node02 restarted with knobd arguments args on fake disks under root. */
static void
switch_from_a(const char *root, const char *key, const char *args)
{
	char *out = NULL;

	disks_start(root, args);
	write_profile("sw-ref-a", "  <blockdev device=\"%s\" attr=\"read_ahead_kb\" value=\"1M\"/>\n",
	    key);
	write_profile("sw-ref-b", "  <blockdev device=\"fakeq\" attr=\"read_ahead_kb\" value=\"64\"/>\n");
	ck_assert_int_eq(ctl(&out, "apply %s/sw-ref-a.xml -w node02", top), 0);
	free(out);
	ck_assert_str_eq(cu_readf("%s/sys/block/sdb/queue/read_ahead_kb", root), "1024");
}

/* The switch to B refused sdb's original (why in the output): knobctl
 * exits 1, node02 failed, sdb keeps 1024 and fakeq has B's 64. */
static void
switch_to_b_refused(const char *root, const char *why)
{
	char *out = NULL;

	ck_assert_int_eq(ctl(&out, "apply %s/sw-ref-b.xml -w node02", top), 1);
	ck_assert_ptr_nonnull(strstr(out, why));
	ck_assert_ptr_nonnull(strstr(out, "1 key(s) refused: not the device journaled"));
	ck_assert_ptr_nonnull(strstr(out, "1 failed (node02)"));
	free(out);
	ck_assert_str_eq(cu_readf("%s/sys/block/sdb/queue/read_ahead_kb", root), "1024");
	ck_assert_str_eq(cu_readf("%s/sys/block/fakeq/queue/read_ahead_kb", root), "64");
}

/* Rollback restores both originals (332, 128) and exits 0; node02 back
 * as the other tests expect it. */
static void
rollback_both(const char *root)
{
	char *out = NULL;

	ck_assert_int_eq(ctl(&out, "rollback -w node02"), 0);
	free(out);
	ck_assert_str_eq(cu_readf("%s/sys/block/sdb/queue/read_ahead_kb", root), "332");
	ck_assert_str_eq(cu_readf("%s/sys/block/fakeq/queue/read_ahead_kb", root), "128");
	node02_plain();
}

/* A refused profile switch fails the node through knobctl (stand-in
 * disks: a fake tree under node02's --sysroot).  A (sdb's read_ahead_kb,
 * from 332) is applied; sdb is then another disk (another dev and wwid)
 * that reads the value knob set; a switch to B (fakeq only) applies B's
 * key but refuses to write A's original onto the other disk: knobctl
 * apply exits 1 with node02 failed and the refusal on its key, and the
 * disk keeps its value.  With the first disk back, rollback restores
 * both originals and exits 0.  The agent's side is check_tune's
 * test_switch_refused; this is the exit status a user scripts on. */
START_TEST(test_switch_refused_exit)
{
	char root[128];

	precheck();
	snprintf(root, sizeof(root), "%s/root4", top);
	switch_from_a(root, "sdb", "");
	fake_disk(root, "8:32\n", 1, NULL);	/* another disk, tuned alike */
	switch_to_b_refused(root, "sdb is another device now");
	fake_disk(root, "8:16\n", 0, NULL);
	rollback_both(root);
}
END_TEST

/* The other refusal, which fails the node only through the reply's
 * kept count (its key is "protected", not failed): A set sdb's
 * read_ahead_kb through the glob sd* (from 332); with a journal from
 * before identities, sdb now holds / (the sysroot's mountinfo and
 * /sys/dev/block say so).  A switch to B applies fakeq, leaves sdb alone
 * and keeps its original: knobctl apply exits 1 with node02 failed.
 * Without the root mount, rollback restores 332 and 128. */
START_TEST(test_switch_protected_exit)
{
	char root[128], link[256];

	precheck();
	snprintf(root, sizeof(root), "%s/root5", top);
	switch_from_a(root, "sd*", "--no-reapply");
	harness_agent_stop(&h, 1, SIGTERM);
	snprintf(link, sizeof(link), "%s/tune-journal.json", h.node[1].state_dir);
	cu_journal_strip_idents(link);
	put(root, "/proc/self/mountinfo", "27 1 8:16 / / rw,relatime - ext4 /dev/sdb rw\n");
	put(root, "/sys/dev/block/.keep", "\n");
	snprintf(link, sizeof(link), "%s/sys/dev/block/8:16", root);
	ck_assert_int_eq(symlink("../../block/sdb", link), 0);
	ck_assert_int_eq(harness_agent_start(&h, 1), 0);
	switch_to_b_refused(root, "sdb holds /");
	ck_assert_int_eq(unlink(link), 0);
	rollback_both(root);
}
END_TEST

/* ------------------------------------------------------------ one file, one key: net */
/* node01's veth kq0 (peer kq1), made afresh at MTU 1400 and txqueuelen 600 (not
 * the defaults: a rollback to a default is caught), and the profiles:
 * nf-net tunes it over netlink (mtu 1450, txqueuelen 700), nf-sys its
 * txqueuelen through its sysfs file (800), nf-both its txqueuelen both
 * ways in one profile (700, 800), nf-sysmtu its MTU through its sysfs
 * file (1500: refused, see test_mtu_fights_ipv6_sysctl).  node01's journal is cleared
 * first (what an earlier test left when it failed). */
static void
nf_setup(void)
{
	char *out = NULL;

	precheck();
	ck_assert_int_eq(ctl(&out, "off -w node01 --force"), 0);	/* a failed test's journal */
	free(out);
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link del kq0 2>/dev/null; "
	    "ip link add kq0 type veth peer name kq1 && ip link set kq0 mtu 1400 txqueuelen 600"), 0);
	write_profile("nf-net", "  <net interface=\"kq0\" attr=\"mtu\" value=\"1450\"/>\n"
	    "  <net interface=\"kq0\" attr=\"txqueuelen\" value=\"700\"/>\n");
	write_profile("nf-sys", "  <sysfs key=\"/sys/class/net/kq0/tx_queue_len\" value=\"800\"/>\n");
	write_profile("nf-both", "  <net interface=\"kq0\" attr=\"txqueuelen\" value=\"700\"/>\n"
	    "  <sysfs key=\"/sys/class/net/kq0/tx_queue_len\" value=\"800\"/>\n");
	write_profile("nf-sysmtu", "  <sysfs key=\"/sys/class/net/kq0/mtu\" value=\"1500\"/>\n");
}

/* kq0 has MTU mtu and txqueuelen qlen (ip link's line on stderr if not). */
static void
nf_is(int mtu, int qlen)
{
	ck_assert_msg(harness_node_sh(&h, 0, "ip link show kq0 | grep -q \"mtu %d .*qlen %d$\" || "
	    "{ ip link show kq0 >&2; false; }", mtu, qlen) == 0, "kq0 is not mtu %d qlen %d",
	    mtu, qlen);
}

/* Apply profile second over first (--stack, then a switch): refused
 * before any write, exit 1, each key's message naming the journaled key
 * (want, want2); kq0 keeps first's values (mtu, qlen).  Then rollback
 * exits 0 and brings 1400 and 600 back; kq0 goes. */
static void
nf_second_refused(const char *first, const char *second, const char *want, const char *want2,
    int mtu, int qlen)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "apply %s/%s.xml -w node01", top, first);
	ctl_expect(0, cmd, "=> applied", NULL);
	nf_is(mtu, qlen);
	for (int stack = 1; stack >= 0; stack--) {
		snprintf(cmd, sizeof(cmd), "apply %s/%s.xml -w node01%s", top, second,
		    stack ? " --stack" : "");
		ctl_expect(1, cmd, want, want2, "1 failed (node01)", NULL);
		nf_is(mtu, qlen);
	}
	ctl_expect(0, "rollback -w node01", NULL);
	nf_is(1400, 600);
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link del kq0"), 0);
}

/* One file, one key for net keys: kq0 tuned over netlink (nf-net), then
 * its txqueuelen through /sys/class/net/kq0/tx_queue_len (nf-sys; its
 * mtu file no sysfs key tunes), stacked or switched to: refused before
 * any write, and the rollback brings 1400 and 600 back.  Before, the net driver named no
 * file: the sysfs keys journaled 1450 and 700 as their originals and
 * changed the interface, and the rollback left 1450 and 700 (the net
 * keys changed-since, exit 1). */
START_TEST(test_shared_file_net_first)
{
	nf_setup();
	nf_second_refused("nf-net", "nf-sys", "failed          sysfs /sys/class/net/kq0/tx_queue_len: "
	    "its file is also net kq0 txqueuelen, which knob journaled (original 600): one file "
	    "is tuned through one key", "1 failed (node01)", 1450, 700);
}
END_TEST

/* The other way round: the sysfs file first (nf-sys), then net keys on
 * the same interface (nf-net): refused, and the rollback brings 1400 and
 * 600 back.  Before, the net key journaled 800 as its original and
 * changed the interface. */
START_TEST(test_shared_file_net_second)
{
	nf_setup();
	nf_second_refused("nf-sys", "nf-net", "failed          net kq0 txqueuelen: its file is "
	    "also sysfs /sys/class/net/kq0/tx_queue_len, which knob journaled (original 600)",
	    "1 failed (node01)", 1400, 800);
}
END_TEST

/* Both in one profile (nf-both): each key reads the true original before
 * any write, so there is nothing to refuse; with different values they
 * fight in the re-read passes (clobbered by), the apply exits 1 and the
 * transaction is reverted to 600, nothing journaled. */
START_TEST(test_shared_file_net_one_profile)
{
	char cmd[512];

	nf_setup();
	snprintf(cmd, sizeof(cmd), "apply %s/nf-both.xml -w node01", top);
	ctl_expect(1, cmd, "clobbered by ", "1 failed (node01)", NULL);
	nf_is(1400, 600);
	ctl_expect(0, "rollback -w node01", "nothing to roll back", NULL);
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link del kq0"), 0);
}
END_TEST

/* ------------------------------------------------------------ link MTU vs IPv6 MTU */
/* kq0 has MTU mtu and IPv6 MTU (net.ipv6.conf.kq0.mtu) v6, else the test
 * fails with both printed. */
static void
v6_is(int mtu, int v6)
{
	ck_assert_msg(harness_node_sh(&h, 0, "ip link show kq0 | grep -q \"mtu %d \" && "
	    "test $(cat /proc/sys/net/ipv6/conf/kq0/mtu) = %d || { ip link show kq0 >&2; "
	    "cat /proc/sys/net/ipv6/conf/kq0/mtu >&2; false; }", mtu, v6) == 0,
	    "kq0 is not mtu %d, IPv6 mtu %d", mtu, v6);
}

/* Apply first, then second --stack over it: the stacked apply is refused
 * before any write (exit 1, its key's message want), kq0 keeps (mtu, v6);
 * the rollback brings back 1400 and 1300. */
static void
v6_stack_refused(const char *first, const char *second, const char *want, int mtu, int v6)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "apply %s/%s.xml -w node01", top, first);
	ctl_expect(0, cmd, "=> applied", NULL);
	v6_is(mtu, v6);
	snprintf(cmd, sizeof(cmd), "apply %s/%s.xml -w node01 --stack", top, second);
	ctl_expect(1, cmd, want, "1 failed (node01)", NULL);
	v6_is(mtu, v6);
	ctl_expect(0, "rollback -w node01", NULL);
	v6_is(1400, 1300);
}

/* Every write of an interface's link MTU sets its IPv6 MTU
 * (net.ipv6.conf.IF.mtu) to the new MTU: kq0, made at MTU 1400 and IPv6
 * MTU 1300 (not what the kernel would give it), tuned through both keys.
 * Its MTU through its sysfs file: refused before any write (before,
 * written, and the rollback left the IPv6 MTU at the restored 1400).
 * In one profile: refused at load (exit 2, file:line naming both keys);
 * through globs the loader cannot pair: refused by the agent before any
 * write; stacked either way: refused, and the rollback brings back 1400
 * and 1300.  Before, the stacked sysctl key journaled 9000 (what the MTU
 * write left) as its original and the rollback ended at 1400 and 1400 or
 * failed; the net key stacked over the sysctl journaled 1350 as the IPv6
 * MTU's original. */
START_TEST(test_mtu_fights_ipv6_sysctl)
{
	char cmd[512], *out = NULL, *err = NULL;

	nf_setup();
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link set kq0 mtu 1400 && "
	    "sysctl -qw net.ipv6.conf.kq0.mtu=1300"), 0);
	v6_is(1400, 1300);
	snprintf(cmd, sizeof(cmd), "apply %s/nf-sysmtu.xml -w node01", top);
	ctl_expect(1, cmd, "failed          sysfs /sys/class/net/kq0/mtu: refused before any "
	    "write: it is kq0's MTU, whose every write also sets its IPv6 MTU", "set it with "
	    "<net interface=\"kq0\" attr=\"mtu\">", NULL);
	v6_is(1400, 1300);
	write_profile("v6-link", "  <net interface=\"kq0\" attr=\"mtu\" value=\"9000\"/>\n");
	write_profile("v6-sys", "  <sysctl key=\"net.ipv6.conf.kq0.mtu\" value=\"1350\"/>\n");
	write_profile("v6-both", "  <net interface=\"kq0\" attr=\"mtu\" value=\"9000\"/>\n"
	    "  <sysctl key=\"net.ipv6.conf.kq0.mtu\" value=\"1350\"/>\n");
	write_profile("v6-globs", "  <net interface=\"kq*\" attr=\"mtu\" value=\"9000\"/>\n"
	    "  <sysctl key=\"net.ipv6.conf.*q0.mtu\" value=\"1350\"/>\n");
	ck_assert_int_eq(harness_knobctl(&h, &out, &err, "apply %s/v6-both.xml -w node01", top), 2);
	fprintf(stderr, "%s", err ? err : "");
	snprintf(cmd, sizeof(cmd), "%s/v6-both.xml:4: sysctl net.ipv6.conf.kq0.mtu and net kq0 "
	    "mtu (line 3) fight", top);
	ck_assert_msg(err && strstr(err, cmd), "no \"%s\"", cmd);
	free(out);
	free(err);
	v6_is(1400, 1300);
	snprintf(cmd, sizeof(cmd), "apply %s/v6-globs.xml -w node01", top);
	ctl_expect(1, cmd, "failed          net kq0 mtu: refused before any write: every write "
	    "of kq0's link MTU sets its IPv6 MTU, and sysctl net.ipv6.conf.kq0.mtu sets it too "
	    "(this apply writes it)", "skipped         sysctl net.ipv6.conf.kq0.mtu: not written",
	    NULL);
	v6_is(1400, 1300);
	v6_stack_refused("v6-link", "v6-sys", "failed          sysctl net.ipv6.conf.kq0.mtu: "
	    "refused before any write: it is kq0's IPv6 MTU, which every write of its link MTU "
	    "sets, and net kq0 mtu sets that (knob journaled it, and a rollback writes it back)",
	    9000, 9000);
	v6_stack_refused("v6-sys", "v6-link", "failed          net kq0 mtu: refused before any "
	    "write: every write of kq0's link MTU sets its IPv6 MTU, and sysctl "
	    "net.ipv6.conf.kq0.mtu sets it too (knob journaled it", 1400, 1350);
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link del kq0"), 0);
}
END_TEST

static Suite *
tune_net_suite(void)
{
	Suite *s = suite_create("tune_net");
	TCase *tc = tcase_create("tune_net");

	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
	tcase_add_test(tc, test_loop_apply_verify_rollback);
	tcase_add_test(tc, test_net_and_sysctl);
	tcase_add_test(tc, test_fake_lustre_gpfs);
	tcase_add_test(tc, test_gpfs_pending_restart);
	tcase_add_test(tc, test_crash_safety);
	tcase_add_test(tc, test_two_controllers);
	tcase_add_test(tc, test_waiters_keep_a_thread);
	tcase_add_test(tc, test_wait_abandoned);
	tcase_add_test(tc, test_wait_capped);
	tcase_add_test(tc, test_state_dir_full);
	tcase_add_test(tc, test_reapply_at_start);
	tcase_add_test(tc, test_switch_and_stack);
	tcase_add_test(tc, test_verify_unsupported);
	tcase_add_test(tc, test_switch_refused_exit);
	tcase_add_test(tc, test_switch_protected_exit);
	tcase_add_test(tc, test_shared_file_net_first);
	tcase_add_test(tc, test_shared_file_net_second);
	tcase_add_test(tc, test_shared_file_net_one_profile);
	tcase_add_test(tc, test_mtu_fights_ipv6_sysctl);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cu_run_nofork(tune_net_suite());
}
