/* Integration: the health checks of knobctl sweep that need a real system
 * to go wrong, on 3 real agents in network namespaces (tests/harness.h).
 *
 * Real:
 * - NIC counters: a veth pair inside node01's namespace whose far end has a
 *   smaller MTU, so that frames sent through it are dropped by the kernel
 *   (tx_dropped on one end, rx_dropped on the other) between two sweeps;
 *   the same pair with one end down, and an unexpected MTU;
 * - free space and inodes: a small tmpfs (4 MiB, 64 inodes) this test
 *   mounts before the agents start (so that their mount namespaces hold
 *   it), filled with data and then with files;
 * - mount type and options: the same tmpfs, and a read-only tmpfs;
 * - memory and CPU: this machine's MemTotal and CPU topology, read by the
 *   test from /proc/meminfo and sysfs, against matching and wrong
 *   expectations;
 * - load: the real 1-minute load average (raised by two busy children
 *   first when this machine is idle) against a threshold below it;
 * - modules: /sys/module of this kernel (the bridge module the harness
 *   uses, and a name no kernel has); nfsd on a real agent reports what
 *   this machine's /proc/fs/nfsd holds;
 * - authentication: an agent started with another node's certificate.
 *
 * Stand-in, said plainly: the nfsd thread count against an expectation is
 * a fake /proc/fs/nfsd/threads (and /sys/module/nfsd) under node03's
 * --sysroot: starting a kernel nfsd on this shared machine would change
 * it for everyone (nfsd's control file system is per network namespace,
 * but its mount would sit in the machine's mount table).
 *
 * CK_NOFORK: the harness and the mounts are set up once in the unchecked
 * fixture and always torn down by its teardown. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <json-c/json.h>

#include "harness.h"
#include "testutil.h"
#include "util.h"
#include "wire.h"

static struct harness h;
static int h_up;
static char top[64], small[128], rofs[128], fullst[128];

/* Mount a tmpfs with opts on dir (made first). 0 or -1. */
static int
mount_tmpfs(const char *dir, const char *opts)
{
	if (mkdir(dir, 0755) < 0)
		return -1;
	return harness_sh("mount -t tmpfs -o %s knob-test %s", opts, dir) == 0 ? 0 : -1;
}

static void
suite_setup(void)
{
	snprintf(top, sizeof(top), "/tmp/knob-sweepchk.XXXXXX");
	if (mkdtemp(top) == NULL)
		exit(1);
	snprintf(small, sizeof(small), "%s/small", top);
	snprintf(rofs, sizeof(rofs), "%s/ro", top);
	snprintf(fullst, sizeof(fullst), "%s/state03", top);
	if (harness_start(&h, 3, 0) < 0 || mount_tmpfs(small, "size=4m,nr_inodes=64,nosuid") < 0 ||
	    mount_tmpfs(rofs, "size=1m,ro"))
		return;
	h_up = 1;
	for (int i = 0; i < h.n; i++)
		if (harness_agent_start(&h, i) < 0)
			h_up = 0;
}

static void
suite_teardown(void)
{
	if (h_up || h.up)
		harness_stop(&h);
	if (harness_sh("umount %s; umount %s; ! mountpoint -q %s || umount %s", small, rofs,
	    fullst, fullst) != 0)
		fprintf(stderr, "could not unmount %s, %s or %s\n", small, rofs, fullst);
	if (cu_rm_rf(top) < 0)
		fprintf(stderr, "could not remove %s\n", top);
}

/* Write the sweep file TOP/name (printf-formatted items between <sweep>
 * and </sweep>); returns its path (static storage). */
static const char * __attribute__((format(printf, 2, 3)))
sweep_file(const char *name, const char *fmt, ...)
{
	static char path[256];
	char *items = NULL, *text;
	va_list ap;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&items, fmt, ap), 0);
	va_end(ap);
	text = xasprintf("<?xml version=\"1.0\"?>\n<sweep>\n%s</sweep>\n", items);
	snprintf(path, sizeof(path), "%s/%s", top, name);
	ck_assert_int_eq(write_file_atomic(path, text, strlen(text), 0644), 0);
	free(text);
	free(items);
	return path;
}

/* knobctl sweep ARGS (-v: every finding printed); asserts the exit status
 * and returns the output (caller frees). */
static char * __attribute__((format(printf, 2, 3)))
sweep(int want_rc, const char *fmt, ...)
{
	char args[1024], *out = NULL;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	rc = harness_knobctl_logged(&h, &out, "sweep -v %s", args);
	ck_assert_msg(rc == want_rc, "sweep %s: exit %d, expected %d", args, rc, want_rc);
	ck_assert_ptr_nonnull(out);
	return out;
}

/* out holds the line fragment printf(fmt, ...). */
static void __attribute__((format(printf, 2, 3)))
has(const char *out, const char *fmt, ...)
{
	char want[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	ck_assert_msg(strstr(out, want) != NULL, "missing '%s' in:\n%s", want, out);
}

static void
precheck(void)
{
	ck_assert_msg(h_up, "harness or mounts did not start");
}

/* ------------------------------------------------------------ NICs */

/* Send n UDP datagrams of 1400 bytes from node01 out of kerrA (whose peer
 * kerrB has MTU 1280: the kernel drops each one). */
static void
send_dropped(int n)
{
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(harness_node_sh(&h, 0, "bash -c \"head -c 1400 /dev/zero > "
		    "/dev/udp/10.99.0.2/9\""), 0);
}

/* In node01: kerrA (MTU 1500) -> kerrB (MTU 1280), both up; 10.99.0.2 is
 * a static neighbour behind kerrA, so nothing but the test's datagrams
 * goes that way (IPv6 off: no router solicitations). */
static void
nic_pair_add(void)
{
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link add kerrA type veth peer name kerrB && "
	    "sysctl -qw net.ipv6.conf.kerrA.disable_ipv6=1 net.ipv6.conf.kerrB.disable_ipv6=1 && "
	    "ip link set kerrB mtu 1280 && ip link set kerrA up && ip link set kerrB up && "
	    "ip addr add 10.99.0.1/24 dev kerrA && ip neigh add 10.99.0.2 lladdr "
	    "$(cat /sys/class/net/kerrB/address) dev kerrA nud permanent"), 0);
}

START_TEST(test_nic_counters_grow)
{
	const char *sf;
	char *out;

	precheck();
	nic_pair_add();
	sf = sweep_file("nic.xml", "  <group nodes=\"node01\">\n"
	    "    <nic name=\"kerrA\" mtu=\"1500\" counters=\"yes\"/>\n"
	    "    <nic name=\"kerrB\" mtu=\"1280\" counters=\"yes\"/>\n  </group>\n");
	/* first sweep: the baseline */
	out = sweep(0, "-w node01 -f %s", sf);
	has(out, "node01: nic kerrA ok (up, MTU 1500, 10000 Mb/s)");
	has(out, "node01: nic kerrB ok (up, MTU 1280, 10000 Mb/s)");
	free(out);
	send_dropped(3);
	out = sweep(1, "-w node01 -f %s", sf);
	has(out, "node01: nic kerrA warn (counters grew since the last sweep: tx_dropped +3)");
	has(out, "node01: nic kerrB warn (counters grew since the last sweep: rx_dropped +3)");
	free(out);
	/* nothing new since: ok again (the counters are the new baseline) */
	out = sweep(0, "-w node01 -f %s", sf);
	has(out, "node01: nic kerrA ok (up, MTU 1500");
	free(out);
	send_dropped(2);
	out = sweep(1, "-w node01 -f %s", sf);
	has(out, "node01: nic kerrA warn (counters grew since the last sweep: tx_dropped +2)");
	free(out);
	/* the pair disappears between sweeps (a driver reload, a VF torn
	 * down): a failure; then it comes back with its counters from 0, and
	 * 1 drop since is 1 drop, not a counter that went back from 5 */
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link del kerrA"), 0);
	out = sweep(1, "-w node01 -f %s", sf);
	has(out, "node01: nic kerrA fail (no such interface)");
	has(out, "node01: nic kerrB fail (no such interface)");
	free(out);
	nic_pair_add();
	send_dropped(1);
	out = sweep(1, "-w node01 -f %s", sf);
	has(out, "node01: nic kerrA warn (counters grew since the last sweep: tx_dropped +1 "
	    "(the interface was created again since then))");
	free(out);
	/* an unexpected MTU, a link whose peer is down, an absent interface */
	sf = sweep_file("nic2.xml", "  <group nodes=\"node01\">\n"
	    "    <nic name=\"kerrB\" mtu=\"9000\"/>\n    <nic name=\"kerrA\"/>\n"
	    "    <nic name=\"kerr9\"/>\n  </group>\n");
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link set kerrB down"), 0);
	out = sweep(1, "-w node01 -f %s", sf);
	has(out, "node01: nic kerrB fail (link is down)");
	has(out, "node01: nic kerrA fail (link is down)");
	has(out, "node01: nic kerr9 fail (no such interface)");
	free(out);
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link set kerrB up"), 0);
	out = sweep(1, "-w node01 -f %s", sf);
	has(out, "node01: nic kerrB fail (MTU 1280, expected 9000)");
	has(out, "node01: nic kerrA ok (up, MTU 1500");
	free(out);
	ck_assert_int_eq(harness_node_sh(&h, 0, "ip link del kerrA"), 0);
}
END_TEST

/* ------------------------------------------------------------ mounts */

/* fmt with @S, @R and @T replaced by the small tmpfs, the read-only
 * tmpfs and the test's top directory (malloc'd). */
static char *
subst(const char *fmt)
{
	static const struct {
		char tag;
		const char *path;
	} tags[] = { { 'S', small }, { 'R', rofs }, { 'T', top } };
	char *s = NULL;

	for (const char *p = fmt; *p; p++) {
		size_t t = nitems(tags);

		if (p[0] == '@')
			for (t = 0; t < nitems(tags) && tags[t].tag != p[1]; t++)
				;
		if (t < nitems(tags)) {
			str_appendf(&s, "%s", tags[t].path);
			p++;
		} else
			str_appendf(&s, "%c", *p);
	}
	return s;
}

/* out holds subst(want), or the test fails naming the step. */
static void
has_at(const char *out, const char *want, size_t step)
{
	char *w = subst(want);

	ck_assert_msg(strstr(out, w) != NULL, "step %zu: missing '%s' in:\n%s", step, w, out);
	free(w);
}

/* Steps of the space test on the small tmpfs: a shell command, then a
 * sweep with that exit status and one expected finding (both through
 * subst).  No command, after the first step: another finding of the step
 * before's sweep. */
static const struct {
	const char *cmd;
	int rc;
	const char *want;
} space_steps[] = {
	/* empty: 63 of 64 inodes free (the root directory holds one); the
	 * writable probe answers every step */
	{ NULL, 0, "node01: mount @S ok (tmpfs, stat, create and unlink answered)" },
	{ NULL, 0, "node01: space @S ok (100.0% space free (min 20%), 98.4% inodes free "
	    "(min 20%))" },
	/* 3.5 MiB of the 4: 12.5% free; the mount itself still answers */
	{ "head -c 3670016 /dev/zero > @S/fill", 1, "node01: space @S fail (12.5% space free "
	    "(min 20%), 96.9% inodes free (min 20%))" },
	{ NULL, 1, "node01: mount @S ok" },
	/* 60 empty files instead: 3 of 64 inodes free, the space untouched */
	{ "rm @S/fill && for i in $(seq 60); do : > @S/f$i; done", 1, "node01: space @S fail "
	    "(100.0% space free (min 20%), 4.7% inodes free (min 20%))" },
	{ "rm @S/f*", 0, "node01: space @S ok" },
};

START_TEST(test_space_inodes_thresholds)
{
	const char *sf;
	char *out = NULL;

	precheck();
	sf = sweep_file("space.xml", "  <group nodes=\"node01\">\n"
	    "    <mount path=\"%s\" type=\"tmpfs\" options=\"rw,nosuid\" timeout=\"5s\" "
	    "min-free=\"20%%\" min-free-inodes=\"20%%\"/>\n  </group>\n", small);
	for (size_t i = 0; i < nitems(space_steps); i++) {
		if (space_steps[i].cmd != NULL || out == NULL) {
			if (space_steps[i].cmd != NULL) {
				char *cmd = subst(space_steps[i].cmd);

				ck_assert_int_eq(harness_sh("%s", cmd), 0);
				free(cmd);
			}
			free(out);
			out = sweep(space_steps[i].rc, "-w node01 -f %s", sf);
		}
		has_at(out, space_steps[i].want, i);
	}
	free(out);
}
END_TEST

/* Sweeps of node02's mounts: the items (through subst), the exit status
 * and what the output must hold. */
static const struct {
	const char *items;
	int rc;
	const char *want[4];
} mount_cases[] = {
	/* wrong type; an option it lacks; not a mount point at all */
	{ "<mount path=\"@S\" type=\"xfs\"/><mount path=\"@R\" options=\"rw\"/>"
	    "<mount path=\"@T\"/>", 1,
	    { "node02: mount @S fail (type tmpfs, expected xfs)",
	    "node02: mount @R fail (mounted ro,relatime,size=1024k", ", expected rw)",
	    "node02: mount @T fail (not mounted)" } },
	/* one more option it lacks; a read-only mount expected writable (the
	 * default) fails its create step, though the type is right */
	{ "<mount path=\"@S\" type=\"tmpfs\" options=\"nosuid,noexec\"/>"
	    "<mount path=\"@R\" type=\"tmpfs\"/>", 1,
	    { "node02: mount @S fail (mounted rw,nosuid,relatime,size=4096k,nr_inodes=64",
	    ", expected noexec)", "node02: mount @R fail (create failed: Read-only file system)" } },
	/* as mounted: ok, the read-only one when the file says so */
	{ "<mount path=\"@S\" type=\"tmpfs\" options=\"rw,nosuid\"/>"
	    "<mount path=\"@R\" type=\"tmpfs\" options=\"ro\" writable=\"no\"/>", 0,
	    { "node02: mount @R ok (tmpfs, stat answered)" } },
};

START_TEST(test_mount_type_options)
{
	precheck();
	for (size_t i = 0; i < nitems(mount_cases); i++) {
		char *items = subst(mount_cases[i].items), *out;
		const char *sf = sweep_file("mount.xml", "  <group nodes=\"node02\">\n%s\n"
		    "  </group>\n", items);

		out = sweep(mount_cases[i].rc, "-w node02 -f %s", sf);
		for (size_t k = 0; k < nitems(mount_cases[i].want) && mount_cases[i].want[k]; k++)
			has_at(out, mount_cases[i].want[k], i);
		free(out);
		free(items);
	}
}
END_TEST

/* ------------------------------------------------------------ memory, CPU */

START_TEST(test_memory_cpu_mismatch)
{
	long mem_kb, threads, cores;
	const char *sf;
	char *out;

	precheck();
	mem_kb = harness_sh_int("sed -n 's/^MemTotal: *\\([0-9]*\\) kB/\\1/p' /proc/meminfo");
	threads = sysconf(_SC_NPROCESSORS_ONLN);
	cores = harness_sh_int("for t in /sys/devices/system/cpu/cpu[0-9]*/topology; do "
	    "[ -f $t/core_id ] && echo $(cat $t/physical_package_id):$(cat $t/core_id); done | "
	    "sort -u | wc -l");
	ck_assert(mem_kb > 0 && threads > 0 && cores > 0);
	/* node01 as it is; node02 expects twice the memory and one more thread */
	sf = sweep_file("hw.xml", "  <group nodes=\"node01\">\n"
	    "    <memory total=\"%ldK\" tolerance=\"1%%\"/>\n"
	    "    <cpu cores=\"%ld\" threads=\"%ld\"/>\n  </group>\n"
	    "  <group nodes=\"node02\">\n    <memory total=\"%ldK\" tolerance=\"10%%\"/>\n"
	    "    <cpu cores=\"%ld\" threads=\"%ld\"/>\n  </group>\n",
	    mem_kb, cores, threads, 2 * mem_kb, cores, threads + 1);
	out = sweep(1, "-w node[01-02] -f %s", sf);
	has(out, "node01: memory ok (%.1f GiB)", (double)mem_kb / 1048576.0);
	has(out, "node01: cpu ok (%ld cores / %ld threads)", cores, threads);
	has(out, "node02: memory fail (%.1f GiB, expected %.1f GiB (+-10%%))",
	    (double)mem_kb / 1048576.0, (double)(2 * mem_kb) / 1048576.0);
	has(out, "node02: cpu fail (%ld cores / %ld threads, expected %ld / %ld)", cores, threads,
	    cores, threads + 1);
	has(out, "1 ok (node01), 1 fail (node02)");
	free(out);
	/* within the tolerance: 3% more than there is, 5% allowed */
	sf = sweep_file("hw2.xml", "  <defaults>\n    <memory total=\"%ldK\" tolerance=\"5\"/>\n"
	    "    <cpu cores=\"%ld\"/>\n  </defaults>\n", mem_kb * 103 / 100, cores + 1);
	out = sweep(1, "-w node01 -f %s", sf);
	has(out, "node01: memory ok (%.1f GiB)", (double)mem_kb / 1048576.0);
	has(out, "node01: cpu fail (%ld cores / %ld threads, expected %ld cores)", cores, threads,
	    cores + 1);
	free(out);
}
END_TEST

/* ------------------------------------------------------------ load */

/* The 1-minute load average of this machine. */
#define load1() cu_read_num("/proc/loadavg")

START_TEST(test_load_threshold)
{
	pid_t busy[2] = { 0, 0 };
	uint64_t end = now_mono_ns() + 60000000000ull;
	double l, lmax, got, max;
	const char *sf;
	char *out, *p;

	precheck();
	/* an idle machine: two busy children until the average shows it (the
	 * kernel samples every 5 s) */
	if (load1() < 0.2)
		for (int i = 0; i < 2; i++)
			if ((busy[i] = fork()) == 0)
				for (;;)
					;
	while ((l = load1()) < 0.2 && now_mono_ns() < end)
		usleep(200000);
	for (int i = 0; i < 2; i++)	/* before any assertion can leave */
		if (busy[i] > 0) {
			kill(busy[i], SIGKILL);
			waitpid(busy[i], NULL, 0);
		}
	ck_assert_msg(l >= 0.2, "load average stays at %.2f", l);
	/* half the current figure: a 1-minute average cannot halve in the
	 * seconds of a sweep (it decays by 8% per 5 s sample at most) */
	lmax = l / 2;
	sf = sweep_file("load.xml", "  <group nodes=\"node01\">\n    <load max=\"%.2f\"/>\n"
	    "  </group>\n  <group nodes=\"node02\">\n    <load max=\"1000\"/>\n  </group>\n", lmax);
	out = sweep(1, "-w node[01-02] -f %s", sf);
	p = strstr(out, "node01: load warn (load ");
	ck_assert_msg(p != NULL, "no load warning:\n%s", out);
	ck_assert_int_eq(sscanf(p, "node01: load warn (load %lf above %lf)", &got, &max), 2);
	ck_assert_msg(got > max && max > lmax - 0.01 && max < lmax + 0.01, "load %.2f, max %.2f",
	    got, max);
	has(out, "node02: load ok (load ");
	has(out, "1 ok (node02), 1 warn (node01)");
	free(out);
}
END_TEST

/* ------------------------------------------------------------ services */

START_TEST(test_modules_nfsd)
{
	char root[128], nfsd[64] = "", want[128];
	const char *sf;
	char *out;

	precheck();
	/* real: this kernel's modules (the harness's bridge is loaded or built
	 * in with parameters; no kernel has the other), and nfsd as this
	 * machine has it */
	if (read_small_file("/proc/fs/nfsd/threads", nfsd, sizeof(nfsd)) == 0) {
		strtrim(nfsd);
		snprintf(want, sizeof(want), "%s threads, expected 1048576", nfsd);
	} else
		snprintf(want, sizeof(want), "nfsd not running");
	/* stand-in (see the top): node03's nfsd under its --sysroot, 8 threads */
	snprintf(root, sizeof(root), "%s/root03", top);
	ck_assert_int_eq(harness_sh("mkdir -p %s/proc/fs/nfsd %s/sys/module/nfsd && "
	    "echo 8 > %s/proc/fs/nfsd/threads && cp /proc/loadavg %s/proc/", root, root, root,
	    root), 0);
	snprintf(h.node[2].sysroot, sizeof(h.node[2].sysroot), "%s", root);
	ck_assert_int_eq(harness_agent_start(&h, 2), 0);
	sf = sweep_file("svc.xml", "  <group nodes=\"node01\">\n    <module name=\"bridge\"/>\n"
	    "    <module name=\"knob_no_such_module\"/>\n    <nfsd threads=\"1048576\"/>\n"
	    "  </group>\n  <group nodes=\"node03\">\n    <module name=\"nfsd\"/>\n"
	    "    <nfsd threads=\"16\"/>\n  </group>\n");
	out = sweep(1, "-w node[01,03] -f %s", sf);
	has(out, "node01: service bridge ok (module loaded)");
	has(out, "node01: service knob_no_such_module fail (module not loaded)");
	has(out, "node01: service nfsd fail (%s)", want);
	has(out, "node03: service nfsd ok (module loaded)");
	has(out, "node03: service nfsd fail (8 threads, expected 16)");
	free(out);
	sf = sweep_file("svc2.xml", "  <group nodes=\"node03\">\n    <nfsd threads=\"8\"/>\n"
	    "  </group>\n");
	out = sweep(0, "-w node03 -f %s", sf);
	has(out, "node03: service nfsd ok (8 threads)");
	free(out);
	h.node[2].sysroot[0] = '\0';
	ck_assert_int_eq(harness_agent_start(&h, 2), 0);
}
END_TEST

/* A process name longer than the kernel keeps in comm (15 characters):
 * a real copy of sleep named long-process-name-x runs (comm
 * "long-process-na") and is found through its exe; long-process-name-y,
 * the same first 15 characters, is not it and is said to be not running,
 * with why. */
START_TEST(test_long_process_name)
{
	char bin[128];
	const char *sf;
	char *out;
	pid_t pid;

	precheck();
	snprintf(bin, sizeof(bin), "%s/long-process-name-x", top);
	ck_assert_int_eq(harness_sh("cp /bin/sleep %s", bin), 0);
	pid = fork();
	if (pid == 0) {
		execl(bin, bin, "60", (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	usleep(200000);
	sf = sweep_file("long.xml", "  <group nodes=\"node01\">\n"
	    "    <process name=\"long-process-name-x\"/>\n  </group>\n");
	out = sweep(0, "-w node01 -f %s", sf);
	has(out, "node01: service long-process-name-x ok (running (pid %ld))", (long)pid);
	free(out);
	sf = sweep_file("long2.xml", "  <group nodes=\"node01\">\n"
	    "    <process name=\"long-process-name-y\"/>\n  </group>\n");
	out = sweep(1, "-w node01 -f %s", sf);
	has(out, "node01: service long-process-name-y fail (not running (no process whose comm "
	    "is 'long-process-na', the kernel's first 15 characters, with the whole name as its "
	    "executable or argv[0]))");
	free(out);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}
END_TEST

/* ------------------------------------------------------------ file */

/* knobctl sweep -w node01 ARGS as user nobody (setpriv) in a private mount
 * namespace whose /etc is an overlay with dir/up on top (this machine's
 * /etc is not touched); stderr in dir/err.  The exit status. */
static int
sweep_as_nobody(const char *dir, const char *args)
{
	return harness_sh("unshare -m sh -c 'mount -t overlay knob-test -o lowerdir=/etc,"
	    "upperdir=%s/up,workdir=%s/work /etc && exec setpriv --reuid=65534 --regid=65534 "
	    "--clear-groups %s/knobctl -c %s/cluster.xml sweep -w node01 %s' >/dev/null 2>%s/err",
	    dir, dir, h.bin, dir, args, dir);
}

/* A sweep file that exists but cannot be read (a root-only 0600 file, read
 * by an operator) is an error with the path and why, exit 2, never "no
 * file": as /etc/knob/sweep.xml and as -f. */
START_TEST(test_unreadable_sweep_file)
{
	char dir[128], path[160], *err = NULL;

	precheck();
	snprintf(dir, sizeof(dir), "%s/unread", top);
	snprintf(path, sizeof(path), "%s/err", dir);
	ck_assert_int_eq(harness_sh("mkdir -p %s/up/knob %s/work && chmod 755 %s %s && "
	    "cp %s %s/cluster.xml && chmod 644 %s/cluster.xml && printf '<?xml version=\"1.0\"?>"
	    "\\n<sweep/>\\n' > %s/up/knob/sweep.xml && chmod 600 %s/up/knob/sweep.xml", dir, dir,
	    top, dir, h.cluster, dir, dir, dir, dir), 0);
	ck_assert_int_eq(sweep_as_nobody(dir, ""), 2);
	ck_assert_int_eq(read_file_bounded(path, 1 << 16, &err, NULL), 0);
	has(err, "knobctl sweep: /etc/knob/sweep.xml: Permission denied");
	free(err);
	ck_assert_int_eq(sweep_as_nobody(dir, "-f /etc/knob/sweep.xml"), 2);
	ck_assert_int_eq(harness_sh("grep -q 'Permission denied' %s/err", dir), 0);
}
END_TEST

/* --json's exit_status is the real exit status: 3 when the --prom file
 * cannot be written (after the document used to be printed). */
START_TEST(test_json_exit_status)
{
	json_object *doc, *v;
	int rc;

	precheck();
	doc = harness_knobctl_json(&h, &rc, "sweep -w node01 --json --prom %s/no/such/dir/x.prom",
	    top);
	ck_assert_int_eq(rc, 3);
	ck_assert_ptr_nonnull(doc);
	ck_assert(json_object_object_get_ex(doc, "exit_status", &v));
	ck_assert_int_eq(json_object_get_int(v), 3);
	json_object_put(doc);
}
END_TEST

/* The check named check of node i (0-based) of a sweep's --json document. */
static json_object *
json_check(json_object *doc, size_t i, const char *check)
{
	json_object *checks = cu_get(json_object_array_get_idx(cu_get(doc, "nodes"), i), "checks");

	for (size_t k = 0; k < json_object_array_length(checks); k++)
		if (strcmp(cu_str(json_object_array_get_idx(checks, k), "check"), check) == 0)
			return json_object_array_get_idx(checks, k);
	ck_abort_msg("no %s check of node %zu", check, i);
	return NULL;
}

/* 1 when a --json finding says it counts toward a drain. */
static int
counts(json_object *check)
{
	return json_object_get_boolean(cu_get(check, "counts_toward_drain"));
}

/* Each --json finding says whether it counts toward a drain: node01's
 * failing mount (TOP is no mount point) does, as the node's own; node03's
 * unreachable agent (stopped) does not, knob's side, which the text says
 * ("not counted toward a drain" for some); ok and warn findings do not.
 * Before, the JSON had no such field, and a script could not tell which
 * failures a --drain sweep acts on. */
START_TEST(test_json_counts_toward_drain)
{
	const char *sf = sweep_file("counts.xml", "  <group nodes=\"node01\">\n"
	    "    <mount path=\"%s\"/>\n  </group>\n", top);
	json_object *doc;
	int rc;

	precheck();
	harness_agent_stop(&h, 2, SIGTERM);
	doc = harness_knobctl_json(&h, &rc, "sweep -w node01,node03 --json -f %s", sf);
	ck_assert_int_eq(harness_agent_start(&h, 2), 0);
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(cu_str(json_check(doc, 0, "mount"), "state"), "fail");
	ck_assert_int_eq(counts(json_check(doc, 0, "mount")), 1);
	ck_assert_str_eq(cu_str(json_check(doc, 0, "reach"), "state"), "ok");
	ck_assert_int_eq(counts(json_check(doc, 0, "reach")), 0);
	ck_assert_str_eq(cu_str(json_check(doc, 1, "reach"), "state"), "unreachable");
	ck_assert_int_eq(counts(json_check(doc, 1, "reach")), 0);
	json_object_put(doc);
}
END_TEST

/* sweep history NODE --json is one JSON document, the node's sweeps newest
 * first, the last one as the sweep itself said (its state); a node never
 * swept has an empty list, exit 1.  Before, --json was ignored: the text
 * lines, which a script reading JSON cannot parse. */
START_TEST(test_history_json)
{
	json_object *doc, *sweeps;
	char state[32];
	int rc;

	precheck();
	doc = harness_knobctl_json(&h, &rc, "sweep -w node01 --json");
	snprintf(state, sizeof(state), "%s",
	    cu_str(json_object_array_get_idx(cu_get(doc, "nodes"), 0), "state"));
	json_object_put(doc);
	doc = harness_knobctl_json(&h, &rc, "sweep history node01 --json");
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(cu_str(doc, "node"), "node01");
	sweeps = cu_get(doc, "sweeps");
	ck_assert_int_ge(json_object_array_length(sweeps), 1);
	ck_assert_str_eq(cu_str(json_object_array_get_idx(sweeps, 0), "state"), state);
	ck_assert_ptr_nonnull(cu_str(json_object_array_get_idx(sweeps, 0), "findings"));
	json_object_put(doc);
	doc = harness_knobctl_json(&h, &rc, "sweep history node09 --json");
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "sweeps")), 0);
	json_object_put(doc);
}
END_TEST

/* sweep history with a results database it cannot read (a file that is
 * not SQLite, a path where none is) exits 3, could not run, as a sweep
 * does, naming the file; text and --json alike.  The cluster file is a copy
 * of the harness's with <results db> changed.  Before, it exited 2, a usage
 * error, with "cannot read the results database" and no file named. */
START_TEST(test_history_db_unreadable)
{
	char cl[PATH_MAX], db[PATH_MAX], errpath[PATH_MAX];
	const char *const dbs[] = { "baddb.db", "no/such/results.db" };

	precheck();
	snprintf(cl, sizeof(cl), "%s/baddb-cluster.xml", h.tmp);
	snprintf(errpath, sizeof(errpath), "%s/hist.err", h.tmp);
	ck_assert_int_eq(harness_sh("cp %s %s && echo 'not a database, not at all' > %s/baddb.db",
	    h.cluster, cl, h.tmp), 0);
	for (size_t i = 0; i < 2 * nitems(dbs); i++) {
		char *err = NULL;

		snprintf(db, sizeof(db), "%s/%s", h.tmp, dbs[i / 2]);
		ck_assert_int_eq(harness_sh("sed -i 's#<results db=\"[^\"]*\"/>#<results db=\"%s\"/>#' "
		    "%s", db, cl), 0);
		ck_assert_int_eq(harness_sh("%s/knobctl -c %s sweep history node01 %s "
		    ">%s/hist.out 2>%s", h.bin, cl, i % 2 ? "--json" : "", h.tmp, errpath), 3);
		ck_assert_int_eq(read_file_bounded(errpath, 1 << 16, &err, NULL), 0);
		has(err, "%s", db);
		free(err);
	}
}
END_TEST

/* A mount path with a newline (&#10; in the sweep file) is one finding on
 * one line of the text output, and of sweep history: "\x0a".  Before, the
 * newline split the line in two, the second starting with the path's tail
 * where a node set goes. */
START_TEST(test_text_control_chars)
{
	const char *sf = sweep_file("nl.xml", "  <defaults>\n    <mount path=\"%s/x&#10;y\"/>\n"
	    "  </defaults>\n", top);
	char *out = sweep(1, "-w node01 -f %s", sf);

	has(out, "node01: mount %s/x\\x0ay fail (not mounted)\n", top);
	ck_assert_msg(strstr(out, "\ny fail") == NULL, "%s", out);
	free(out);
	ck_assert_int_eq(harness_knobctl(&h, &out, NULL, "sweep history node01"), 0);
	has(out, "mount %s/x\\x0ay fail (not mounted)", top);
	free(out);
}
END_TEST

/* A clock offset that rounds to zero prints as "0.000 s": the agents
 * share this machine's clock with the controller, so each offset and each
 * distance from the fleet median is a few microseconds either way.
 * Before, they printed as "-0.000 s" (the node below the median always
 * did) or "+0.000 s" (the median node itself). */
START_TEST(test_clock_zero_unsigned)
{
	char *out;

	precheck();
	harness_knobctl_logged(&h, &out, "sweep -v -w node[01-03]");
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(strstr(out, "-0.000 s") == NULL && strstr(out, "+0.000 s") == NULL,
	    "%s", out);
	has(out, "clock ok (offset ");
	has(out, ", 0.000 s from the fleet median (max ");
	free(out);
}
END_TEST

/* knobctl sweep --help and knobctl --help list exit status 3 (the sweep's
 * own failure), as the README does. */
START_TEST(test_help_exit_status)
{
	precheck();
	ck_assert_int_eq(harness_sh("%s/knobctl sweep --help | tr '\\n' ' ' | "
	    "grep -q '3 the sweep itself failed (the --prom file, the results database, scontrol'",
	    h.bin), 0);
	ck_assert_int_eq(harness_sh("%s/knobctl --help | grep -q '^3 (sweep) the sweep itself "
	    "failed'", h.bin), 0);
}
END_TEST

/* ------------------------------------------------------------ auth */

/* node03's agent holds node02's certificate (copied to the wrong node):
 * reached, but not who it should be.  The sweep says auth, not
 * unreachable, and the others are swept as usual. */
START_TEST(test_auth_failure)
{
	char *out, *json;
	int rc;

	precheck();
	snprintf(h.node[2].extra_args, sizeof(h.node[2].extra_args),
	    "--cert %s/node02.crt --key %s/node02.key", h.ca_dir, h.ca_dir);
	ck_assert_int_eq(harness_agent_start(&h, 2), 0);
	out = sweep(1, "-w @all");
	has(out, "node03: auth fail (agent certificate rejected: ");
	ck_assert_msg(strstr(out, "unreachable") == NULL, "%s", out);
	has(out, "2 ok (node[01-02]), 1 fail (node03)");
	free(out);
	rc = harness_knobctl(&h, &json, NULL, "sweep -w node03 --json");
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(json, "\"check\": \"auth\"") && strstr(json, "\"state\": \"fail\""),
	    "%s", json);
	free(json);
	h.node[2].extra_args[0] = '\0';
	ck_assert_int_eq(harness_agent_start(&h, 2), 0);
	out = sweep(0, "-w node03");
	has(out, "node03: reach ok (answered with its node certificate)");
	free(out);
}
END_TEST

/* A mount path written with a trailing slash or "//" is the mount point
 * /proc/self/mounts names, over a real agent: the read-only tmpfs as "@R/"
 * and the small one as "/" + "@S" ("//tmp/..."), both ok.  Before, they
 * were "not mounted" on every node. */
START_TEST(test_mount_path_slashes)
{
	char *out, *want;
	const char *sf;

	precheck();
	sf = sweep_file("slash.xml", "  <group nodes=\"node02\">\n    <mount path=\"%s/\" "
	    "type=\"tmpfs\" writable=\"no\"/>\n    <mount path=\"/%s\" type=\"tmpfs\"/>\n"
	    "  </group>\n", rofs, small);
	out = sweep(0, "-w node02 -f %s", sf);
	has(out, "node02: mount %s ok (tmpfs, stat answered)", rofs);
	want = xasprintf("node02: mount %s ok (", small);
	has(out, "%s", want);
	free(want);
	free(out);
}
END_TEST

/* Ask knobd --stdio (state directory TOP/raw-state) about the mounts
 * paths[0..n-1] (tmpfs, stat only) in one Health request, raw on the wire;
 * each mount finding's "STATE: reason" into got[i] (caller frees; "" when
 * none came).  The agent is ended and reaped before any assertion. */
static void
raw_mounts(char *const *paths, size_t n, char **got)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *ans = NULL;
	Knob__HealthRequest hr = KNOB__HEALTH_REQUEST__INIT;
	Knob__MountExpect me[4], *mv[4];
	char state[PATH_MAX];
	int in[2], out[2], rc, st = 0;
	struct conn c;
	pid_t pid;

	ck_assert_uint_le(n, nitems(me));
	for (size_t i = 0; i < n; i++) {
		knob__mount_expect__init(&me[i]);
		me[i].path = paths[i];
		me[i].fstype = (char *)(uintptr_t)"tmpfs";
		mv[i] = &me[i];
		got[i] = xstrdup("");
	}
	hr.n_mounts = n;
	hr.mounts = mv;
	hr.check_timeout_ms = 5000;
	env.id = 1;
	env.body_case = KNOB__ENVELOPE__BODY_HEALTH;
	env.health = &hr;
	snprintf(state, sizeof(state), "%s/raw-state", top);
	ck_assert(mkdir(state, 0700) == 0 || errno == EEXIST);
	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	pid = cu_knobd_stdio(h.bin, state, in[0], out[1]);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	conn_init(&c, out[0], in[1], NULL);
	rc = conn_send_sync(&c, &env, 5000) == 0 ? conn_recv_sync(&c, &ans, 10000) : -1;
	for (size_t k = 0; rc == 1 && ans->body_case == KNOB__ENVELOPE__BODY_HEALTH_RESULT &&
	    k < ans->health_result->n_checks; k++) {
		Knob__HealthCheck *hc = ans->health_result->checks[k];

		for (size_t i = 0; i < n; i++)
			if (strcmp(hc->check, "mount") == 0 && strcmp(hc->target, paths[i]) == 0) {
				free(got[i]);
				got[i] = xasprintf("%s: %s", hc->state == KNOB__HEALTH_STATE__HEALTH_OK ?
				    "ok" : "not ok", hc->reason);
			}
	}
	if (ans != NULL)
		knob__envelope__free_unpacked(ans, NULL);
	conn_reset(&c);
	close(in[1]);	/* the session ends: the agent exits */
	close(out[0]);
	waitpid(pid, &st, 0);
	ck_assert_msg(rc == 1, "no answer from knobd --stdio");
}

/* A client that does not normalise its mount paths (any but knobctl,
 * whose sweep file does) asks knobd about "SMALL/sub/.." and
 * "//TOP/./ro/": the agent looks them up lexically as the mount table
 * spells them (no stat: "sub" does not exist), finds both tmpfs mounts
 * and probes them ok, reported under the paths as asked.  Before, both
 * were "not mounted". */
START_TEST(test_mount_path_dots_raw)
{
	char *paths[2], *got[2];

	precheck();
	paths[0] = xasprintf("%s/sub/..", small);
	paths[1] = xasprintf("/%s/./ro/", top);
	raw_mounts(paths, 2, got);
	for (size_t i = 0; i < 2; i++) {
		ck_assert_msg(strncmp(got[i], "ok: tmpfs, stat answered", 24) == 0,
		    "mount %s: '%s'", paths[i], got[i]);
		free(got[i]);
		free(paths[i]);
	}
}
END_TEST

/* ------------------------------------------------------------ counters */

#define UNSAVED "counters not saved: %s/health-counters.json: No space left on device; " \
	"compared with this agent's memory only"

/* node03 with its state directory on a 64 KiB tmpfs (mounted before the
 * agent starts, so that its mount namespace holds it) filled before the
 * first sweep, and fake EDAC counters under a --sysroot (a real machine's
 * cannot be made to grow): the counters file cannot be written.  The errors
 * check compares with the agent's memory and says so, warn at least: the
 * new UE fails.  Before, every sweep found no file and took a baseline (ok),
 * blind to the UE.  The NIC counters say so too.  With room again the file
 * is written and the note goes. */
START_TEST(test_errors_counters_unsaved)
{
	char root[128], state[PATH_MAX];
	const char *sf;
	char *out;

	precheck();
	snprintf(root, sizeof(root), "%s/root03e", top);
	ck_assert_int_eq(harness_sh("mkdir -p %s/proc/sys/kernel/random "
	    "%s/sys/devices/system/edac/mc/mc0 && echo boot-a > %s/proc/sys/kernel/random/boot_id "
	    "&& cp /proc/loadavg %s/proc/ && echo 0 > %s/sys/devices/system/edac/mc/mc0/ce_count && "
	    "echo 0 > %s/sys/devices/system/edac/mc/mc0/ue_count", root, root, root, root, root,
	    root), 0);
	ck_assert_int_eq(mount_tmpfs(fullst, "size=64k,mode=0700"), 0);
	snprintf(state, sizeof(state), "%s", h.node[2].state_dir);
	snprintf(h.node[2].state_dir, sizeof(h.node[2].state_dir), "%s", fullst);
	snprintf(h.node[2].sysroot, sizeof(h.node[2].sysroot), "%s", root);
	ck_assert_int_eq(harness_agent_start(&h, 2), 0);
	/* full: head stops at ENOSPC */
	ck_assert_int_ne(harness_sh("head -c 1M /dev/zero > %s/fill 2>/dev/null", fullst), 0);
	sf = sweep_file("unsaved.xml", "  <group nodes=\"node03\">\n"
	    "    <errors check=\"yes\" hold=\"3600\"/>\n    <nic name=\"%s\" counters=\"yes\"/>\n"
	    "  </group>\n", h.node[2].ifname);
	out = sweep(1, "-w node03 -f %s", sf);
	has(out, "node03: errors warn (baseline: 0 MCE, 0/0 EDAC CE/UE; " UNSAVED ")", fullst);
	has(out, "node03: nic %s warn (up, MTU 1500, ", h.node[2].ifname);
	has(out, " Mb/s; " UNSAVED ")", fullst);	/* no speed file under the sysroot: -1 */
	free(out);
	ck_assert_int_eq(harness_sh("echo 1 > %s/sys/devices/system/edac/mc/mc0/ue_count", root),
	    0);
	out = sweep(1, "-w node03 -f %s", sf);
	has(out, "node03: errors fail (0 MCE, 1 EDAC UE new since ");
	has(out, " after the last); " UNSAVED ")", fullst);
	free(out);
	/* room again: saved, no note; still failing (the hold) */
	ck_assert_int_eq(harness_sh("rm %s/fill", fullst), 0);
	out = sweep(1, "-w node03 -f %s", sf);
	has(out, "node03: errors fail (0 MCE, 1 EDAC UE new since ");
	ck_assert_msg(strstr(out, "not saved") == NULL, "%s", out);
	free(out);
	ck_assert_int_eq(harness_sh("grep -q '\"errors.ue\":1' %s/health-counters.json", fullst),
	    0);
	h.node[2].sysroot[0] = '\0';
	snprintf(h.node[2].state_dir, sizeof(h.node[2].state_dir), "%s", state);
	ck_assert_int_eq(harness_agent_start(&h, 2), 0);
	ck_assert_int_eq(harness_sh("umount %s", fullst), 0);
}
END_TEST

#define RESET "counters baseline reset: %s/health-counters.json:4: not JSON: unexpected end " \
	"of file (kept as %s/health-counters.json.corrupt); growth since the last sweep not known"

/* A counters file cut short (a disk that lost its tail, an admin's edit)
 * is found at node03's first sweep after a restart: the errors and NIC
 * findings warn that the baseline was reset, naming the file and line; the
 * file is kept as health-counters.json.corrupt, the agent's log says so, and
 * the next sweep compares with the new baseline (ok, no note), and lo,
 * checked for the first time there, takes its first value without the
 * note (ok, exit 0).  Before, the broken file was silently taken as an
 * empty baseline: "errors ok (baseline: ...)", exit 0, and the growth
 * since the last sweep lost; and then every counter first seen by a later
 * sweep warned with the reset's note until the agent restarted ("nic lo
 * warn (...; counters baseline reset: ...)", exit 1). */
START_TEST(test_counters_corrupt)
{
	static const char cut[] = "{\n  \"mce\": 0,\n  \"edac.ce\": 3,\n  \"edac.ue\": ";
	const char *st = h.node[2].state_dir, *sf;
	char path[PATH_MAX], aside[PATH_MAX + 16], *out, *text = NULL;

	precheck();
	snprintf(path, sizeof(path), "%s/health-counters.json", st);
	snprintf(aside, sizeof(aside), "%s.corrupt", path);
	harness_agent_stop(&h, 2, SIGTERM);
	ck_assert_int_eq(write_file_atomic(path, cut, strlen(cut), 0600), 0);
	ck_assert_int_eq(harness_agent_start(&h, 2), 0);
	sf = sweep_file("corrupt.xml", "  <group nodes=\"node03\">\n"
	    "    <errors check=\"yes\"/>\n    <nic name=\"%s\" counters=\"yes\"/>\n"
	    "  </group>\n", h.node[2].ifname);
	out = sweep(1, "-w node03 -f %s", sf);
	has(out, "node03: errors warn (baseline: ");
	has(out, "EDAC CE/UE; " RESET ")", st, st);
	has(out, "node03: nic %s warn (up, MTU 1500, ", h.node[2].ifname);
	free(out);
	ck_assert(harness_log_has(&h, 2, "/health-counters.json:4: not JSON: unexpected end of "
	    "file; the health counters baseline is reset (file kept as "));
	ck_assert_int_eq(read_file_bounded(aside, 4096, &text, NULL), 0);
	ck_assert_str_eq(text, cut);
	free(text);
	/* the next sweep has the new baseline, and a counter new to it (lo's)
	 * takes its first value without the reset's note */
	sf = sweep_file("corrupt2.xml", "  <group nodes=\"node03\">\n"
	    "    <errors check=\"yes\"/>\n    <nic name=\"%s\" counters=\"yes\"/>\n"
	    "    <nic name=\"lo\" counters=\"yes\"/>\n  </group>\n", h.node[2].ifname);
	out = sweep(0, "-w node03 -f %s", sf);
	has(out, "node03: errors ok (no new MCE or EDAC errors)");
	has(out, "node03: nic %s ok (up, MTU 1500, ", h.node[2].ifname);
	has(out, "node03: nic lo ok (up, MTU 65536, ");
	ck_assert_msg(strstr(out, "reset") == NULL, "%s", out);
	free(out);
}
END_TEST

/* ------------------------------------------------------------ database */

/* A sweep started in the background and what a file must come to hold
 * while it runs. */
struct turn {
	pid_t pid;
	char out[PATH_MAX], err[PATH_MAX];
	const char *watch, *want;	/* want in the file watch */
};

/* t->watch holds t->want, or t's sweep ended. */
static int
turn_said(void *arg)
{
	struct turn *t = arg;
	char *text = NULL;
	int r;

	if (cu_pid_gone(t->pid))
		return 1;
	if (read_file_bounded(t->watch, 1 << 16, &text, NULL) < 0)
		return 0;
	r = strstr(text, t->want) != NULL;
	free(text);
	return r;
}

/* Start knobctl sweep ARGS in the background, stdout into TOP/NAME.out and
 * stderr into TOP/NAME.err; then wait until the file watch (NULL: its
 * stderr) holds want, or it ended.  1 when it did and the sweep still runs. */
static int
turn_start(struct turn *t, const char *name, const char *watch, const char *want,
    const char *args)
{
	snprintf(t->out, sizeof(t->out), "%s/%s.out", top, name);
	snprintf(t->err, sizeof(t->err), "%s/%s.err", top, name);
	t->watch = watch ? watch : t->err;
	t->want = want;
	t->pid = harness_knobctl_bg(&h, t->out, t->err, "sweep %s", args);
	return t->pid > 0 && cu_wait(turn_said, t, 30) >= 0 && !cu_pid_gone(t->pid);
}

/* A sweep file TOP/NAME.xml that fails node's mount (TOP is no mount
 * point), drained after 1 sweep, and a stand-in scontrol TOP/NAME-scontrol
 * (path into sc) that logs its calls into TOP/NAME-scontrol.log (log) and
 * answers "-o show" with node IDLE once a line comes on the FIFO
 * TOP/NAME.fifo (fifo).  Returns the sweep file's path. */
static const char *
held_scontrol(const char *name, const char *node, char *sc, char *fifo, char *log)
{
	char file[64], *text;
	const char *sf;

	snprintf(file, sizeof(file), "%s.xml", name);
	sf = sweep_file(file, "  <group nodes=\"%s\">\n    <mount path=\"%s\"/>\n"
	    "  </group>\n  <drain after=\"1\" resume=\"1\"/>\n", node, top);
	snprintf(fifo, PATH_MAX, "%s/%s.fifo", top, name);
	snprintf(sc, PATH_MAX, "%s/%s-scontrol", top, name);
	snprintf(log, PATH_MAX, "%s/%s-scontrol.log", top, name);
	text = xasprintf("#!/bin/sh\necho \"$*\" >> %s\n[ \"$1\" = -o ] || exit 0\n"
	    "read go < %s\necho \"NodeName=%s Arch=x86_64 State=IDLE\"\n", log, fifo, node);
	ck_assert_int_eq(write_file_atomic(sc, text, strlen(text), 0755), 0);
	free(text);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	return sf;
}

/* Two sweeps at once take turns on the results database.  The first
 * (--drain; node02 fails a mount, <drain after="1">) holds its record while
 * its stand-in scontrol (a shell script that logs its calls) waits on a
 * FIFO; the second (no --drain) says it waits, and once the first has
 * drained node02 it counts on from there: "still drained by knob (failing
 * 2)".  Before, the second read the counters the first had not written
 * ("would drain", failing 1) and the first then wrote its own over them. */
START_TEST(test_concurrent_sweeps_take_turns)
{
	char sc[PATH_MAX], fifo[PATH_MAX], log[PATH_MAX], args[2 * PATH_MAX], *out = NULL;
	struct turn t1, t2;
	const char *sf;
	int held, waited;

	precheck();
	sf = held_scontrol("turns", "node02", sc, fifo, log);
	out = sweep(0, "-w node02");	/* passing: failing 0, not drained */
	free(out);
	snprintf(args, sizeof(args), "-w node02 -f %s --drain --scontrol %s", sf, sc);
	held = turn_start(&t1, "turns1", log, "-o show node node02", args);
	snprintf(args, sizeof(args), "-w node02 -f %s", sf);
	waited = held && turn_start(&t2, "turns2", NULL, "another sweep is recording", args);
	/* the first goes on whatever happened: nothing is left behind (a
	 * scontrol that never came is not waited for) */
	harness_sh("timeout 5 sh -c 'echo go > %s'", fifo);
	ck_assert_int_eq(cu_reap(t1.pid), 1);
	ck_assert_msg(held, "the first sweep's scontrol show was not called");
	ck_assert_int_eq(cu_reap(t2.pid), 1);
	ck_assert_int_eq(harness_knobctl(&h, &out, NULL, "sweep history node02"), 0);
	ck_assert_msg(strstr(out, "=> still drained by knob (failing 2)") &&
	    strstr(out, "=> drained: knob: mount fail"), "%s", out);
	free(out);
	ck_assert_msg(waited, "the second sweep did not wait for the first's record");
}
END_TEST

/* A scontrol that never answers is killed after the sweep's timeout
 * (KNOB_SCONTROL_TIMEOUT_MS, here 0.5 s; 60 s by default), with its
 * process group: the sweep says so, drains nothing and exits 3, and the
 * sweep lock is free again (a sweep holds it through the scontrol
 * calls).  The stand-in blocks on a FIFO nobody writes.
 * Before, knobctl waited on it for ever, with the lock. */
START_TEST(test_scontrol_hung_killed)
{
	char sc[PATH_MAX], fifo[PATH_MAX], args[2 * PATH_MAX], *out = NULL, *err = NULL, *text;
	const char *sf;
	int rc;

	precheck();
	sf = sweep_file("hung.xml", "  <group nodes=\"node01\">\n    <mount path=\"%s\"/>\n"
	    "  </group>\n  <drain after=\"1\"/>\n", top);
	snprintf(fifo, sizeof(fifo), "%s/hung.fifo", top);
	snprintf(sc, sizeof(sc), "%s/hung-scontrol", top);
	text = xasprintf("#!/bin/sh\nread go < %s\n", fifo);
	ck_assert_int_eq(write_file_atomic(sc, text, strlen(text), 0755), 0);
	free(text);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	snprintf(args, sizeof(args), "sweep -w node01 -f %s --drain --scontrol %s", sf, sc);
	setenv("KNOB_SCONTROL_TIMEOUT_MS", "500", 1);
	rc = harness_knobctl(&h, &out, &err, "%s", args);
	unsetenv("KNOB_SCONTROL_TIMEOUT_MS");
	ck_assert_msg(rc == 3, "exit %d: %s%s", rc, out, err);
	ck_assert_msg(strstr(err, "-o timed out after 0.5 s (killed)") &&
	    strstr(err, "nothing drained or resumed"), "%s", err);
	free(out);
	free(err);
	/* [h]: the pattern does not match pgrep's own shell's command line */
	ck_assert_msg(harness_sh("pgrep -f '%s/[h]ung-scontrol'", top) != 0,
	    "the stand-in scontrol still runs");
	ck_assert_int_eq(harness_knobctl(&h, &out, NULL, "sweep history node01"), 0);
	ck_assert_msg(strstr(out, "drained: ") == NULL, "%s", out);
	free(out);
}
END_TEST

/* A drain whose scontrol call timed out but took effect in Slurm is knob's
 * own: recorded "drain unconfirmed" (exit 3), looked up in the next
 * sweep's one "scontrol -o show node", found drained with a "knob:" reason,
 * and resumed once node01 passes.  The stand-in scontrol (a shell script,
 * logging its calls) keeps the drain in a file, as slurmctld would, then
 * hangs on a FIFO nobody writes until it is killed (0.5 s).  Before, the
 * failed call left node01 "not drained" in knob's records: Slurm was never
 * asked again, and knob never resumed the node it had drained. */
START_TEST(test_drain_timed_out_took)
{
	char sc[PATH_MAX], fifo[PATH_MAX], log[PATH_MAX], st[PATH_MAX], *out = NULL, *err = NULL;
	char *text, pass[PATH_MAX], fail[PATH_MAX];
	int rc;

	precheck();
	snprintf(fifo, sizeof(fifo), "%s/took.fifo", top);
	snprintf(sc, sizeof(sc), "%s/took-scontrol", top);
	snprintf(log, sizeof(log), "%s/took-scontrol.log", top);
	snprintf(st, sizeof(st), "%s/took.drained", top);
	text = xasprintf("#!/bin/sh\necho \"$*\" >> %s\ncase \"$*\" in\n"
	    "\"-o show node\"*) if [ -e %s ]; then echo \"NodeName=node01 Arch=x86_64 "
	    "State=IDLE+DRAIN Reason=$(cat %s) [root@2026-12-07T13:00:00]\"; else "
	    "echo 'NodeName=node01 Arch=x86_64 State=IDLE'; fi ;;\n"
	    "*State=DRAIN*) printf '%%s' \"${4#Reason=}\" > %s; read go < %s ;;\n"
	    "*State=RESUME*) rm -f %s ;;\nesac\n", log, st, st, st, fifo, st);
	ck_assert_int_eq(write_file_atomic(sc, text, strlen(text), 0755), 0);
	free(text);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	snprintf(pass, sizeof(pass), "%s", sweep_file("took-pass.xml",
	    "  <drain after=\"1\" resume=\"1\"/>\n"));
	out = sweep(0, "-w node01 -f %s", pass);	/* failing 0, not drained */
	free(out);
	snprintf(fail, sizeof(fail), "%s", sweep_file("took-fail.xml", "  <group nodes=\"node01\">\n"
	    "    <mount path=\"%s\"/>\n  </group>\n  <drain after=\"1\" resume=\"1\"/>\n", top));
	setenv("KNOB_SCONTROL_TIMEOUT_MS", "500", 1);
	rc = harness_knobctl(&h, &out, &err, "sweep -w node01 -f %s --drain --scontrol %s", fail,
	    sc);
	unsetenv("KNOB_SCONTROL_TIMEOUT_MS");
	ck_assert_msg(rc == 3, "exit %d: %s%s", rc, out, err);
	has(out, "drain unconfirmed node01: knob: mount fail (looked up in Slurm next sweep)");
	has(err, "update timed out after 0.5 s (killed)");
	free(out);
	free(err);
	rc = harness_knobctl(&h, &out, &err, "sweep -w node01 -f %s --drain --scontrol %s", pass,
	    sc);
	ck_assert_msg(rc == 0, "exit %d: %s%s", rc, out, err);
	has(out, "resumed node01");
	free(out);
	free(err);
	ck_assert_int_eq(harness_sh("grep -c '^update NodeName=node01 State=RESUME$' %s", log), 0);
	ck_assert_int_eq(harness_knobctl(&h, &out, NULL, "sweep history node01"), 0);
	has(out, "=> drain unconfirmed: knob: mount fail (scontrol failed or timed out; looked "
	    "up in Slurm next sweep)");
	has(out, "=> unconfirmed drain confirmed (IDLE+DRAIN, reason: knob: mount fail); "
	    "resumed");
	free(out);
}
END_TEST

/* A --drain sweep whose scontrol is missing (a path that is not there, a
 * name not in PATH) finishes, reports node01's failing mount, says which
 * scontrol it could not run and exits 3, the --json document's
 * exit_status too; nothing is recorded as drained.  Before, the name not
 * in PATH said only "scontrol -o show node node01 failed" (execvp's exit
 * 127, with nothing on stderr). */
START_TEST(test_scontrol_missing)
{
	const char *sf = sweep_file("nosc.xml", "  <group nodes=\"node01\">\n    <mount path=\"%s\"/>\n"
	    "  </group>\n  <drain after=\"1\"/>\n", top);
	char sc[PATH_MAX], *out = NULL, *err = NULL;
	json_object *doc, *v;
	int rc;

	precheck();
	for (int i = 0; i < 2; i++) {
		snprintf(sc, sizeof(sc), i ? "knob-no-such-scontrol" : "%s/no-such-scontrol", top);
		rc = harness_knobctl(&h, &out, &err, "sweep -w node01 -f %s --drain --scontrol %s "
		    "--json", sf, sc);
		ck_assert_msg(rc == 3, "exit %d: %s%s", rc, out, err);
		has(err, "knobctl sweep: cannot run %s: ", sc);
		has(err, "nothing drained or resumed");
		ck_assert_ptr_nonnull(doc = json_tokener_parse(out));
		ck_assert(json_object_object_get_ex(doc, "exit_status", &v));
		ck_assert_int_eq(json_object_get_int(v), 3);
		ck_assert_str_eq(cu_str(json_check(doc, 0, "mount"), "state"), "fail");
		json_object_put(doc);
		free(out);
		free(err);
	}
	ck_assert_int_eq(harness_knobctl(&h, &out, NULL, "sweep history node01"), 0);
	ck_assert_msg(strstr(out, "drained: ") == NULL, "%s", out);
	free(out);
}
END_TEST

/* While a sweep's scontrol runs (node03 due for a drain; the stand-in
 * waits on a FIFO), the results database is free: a write transaction on
 * another connection, as a bench storing its results makes, gets its lock
 * with a 1 s busy timeout.  Then the sweep records node03's drain.  Before,
 * the sweep held the database's write lock through its scontrol calls (up
 * to 60 s each) and that write failed: "database is locked". */
START_TEST(test_db_free_during_scontrol)
{
	char sc[PATH_MAX], fifo[PATH_MAX], log[PATH_MAX], args[2 * PATH_MAX], *out = NULL;
	struct turn t;
	const char *sf;
	int held, wrote = -1;

	precheck();
	sf = held_scontrol("dbfree", "node03", sc, fifo, log);
	snprintf(args, sizeof(args), "-w node03 -f %s --drain --scontrol %s", sf, sc);
	held = turn_start(&t, "dbfree", log, "-o show node node03", args);
	if (held)
		wrote = harness_sh("sqlite3 -cmd '.timeout 1000' %s/results.db "
		    "'BEGIN IMMEDIATE; COMMIT;'", h.tmp);
	harness_sh("timeout 5 sh -c 'echo go > %s'", fifo);
	ck_assert_int_eq(cu_reap(t.pid), 1);
	ck_assert_msg(held, "the sweep's scontrol show was not called");
	ck_assert_msg(wrote == 0, "the results database was locked while scontrol ran");
	ck_assert_int_eq(harness_knobctl(&h, &out, NULL, "sweep history node03"), 0);
	ck_assert_msg(strstr(out, "=> drained: knob: mount fail"), "%s", out);
	free(out);
}
END_TEST

/* A Slurm that answers "scontrol -o show node" but whose every update
 * hangs (the stand-in scontrol, a shell script logging its calls, blocks
 * on a FIFO nobody writes until it is killed, 0.5 s): node02 and node03
 * fail in two ways (a module, "service fail"; a mount), two drain calls due; the first is
 * killed, "drain unconfirmed", and no further call is made this sweep
 * (node03: "not drained: an earlier scontrol call of this sweep timed
 * out"), exit 3.  Before, every distinct drain reason's call hung its full
 * timeout in turn (60 s each by default), the sweep lock held meanwhile. */
START_TEST(test_scontrol_updates_hung)
{
	char sc[PATH_MAX], fifo[PATH_MAX], log[PATH_MAX], *out = NULL, *err = NULL, *text;
	const char *sf;
	int rc;

	precheck();
	sf = sweep_file("uhung.xml", "  <group nodes=\"node02\">\n"
	    "    <module name=\"knob_no_such_module\"/>\n  </group>\n"
	    "  <group nodes=\"node03\">\n    <mount path=\"%s\"/>\n  </group>\n"
	    "  <drain after=\"1\"/>\n", top);
	snprintf(fifo, sizeof(fifo), "%s/uhung.fifo", top);
	snprintf(sc, sizeof(sc), "%s/uhung-scontrol", top);
	snprintf(log, sizeof(log), "%s/uhung-scontrol.log", top);
	text = xasprintf("#!/bin/sh\necho \"$*\" >> %s\n[ \"$1\" = -o ] || read go < %s\n"
	    "for n in node02 node03; do echo \"NodeName=$n Arch=x86_64 State=IDLE\"; done\n",
	    log, fifo);
	ck_assert_int_eq(write_file_atomic(sc, text, strlen(text), 0755), 0);
	free(text);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	setenv("KNOB_SCONTROL_TIMEOUT_MS", "500", 1);
	rc = harness_knobctl(&h, &out, &err, "sweep -w node02,node03 -f %s --drain --scontrol %s",
	    sf, sc);
	unsetenv("KNOB_SCONTROL_TIMEOUT_MS");
	ck_assert_msg(rc == 3, "exit %d: %s%s", rc, out, err);
	has(out, "drain unconfirmed node02: knob: service fail");
	has(err, "timed out: no further scontrol call this sweep");
	free(out);
	free(err);
	ck_assert_int_eq(harness_sh("test \"$(grep -c '^update ' %s)\" = 1", log), 0);
	ck_assert_int_eq(harness_knobctl(&h, &out, NULL, "sweep history node03"), 0);
	has(out, "=> not drained: an earlier scontrol call of this sweep timed out");
	free(out);
}
END_TEST

static Suite *
sweep_checks_suite(void)
{
	Suite *s = suite_create("sweep_checks");
	TCase *tc = tcase_create("sweep_checks");

	tcase_set_timeout(tc, 180);
	tcase_add_unchecked_fixture(tc, suite_setup, suite_teardown);
	tcase_add_test(tc, test_nic_counters_grow);
	tcase_add_test(tc, test_space_inodes_thresholds);
	tcase_add_test(tc, test_mount_type_options);
	tcase_add_test(tc, test_memory_cpu_mismatch);
	tcase_add_test(tc, test_load_threshold);
	tcase_add_test(tc, test_modules_nfsd);
	tcase_add_test(tc, test_long_process_name);
	tcase_add_test(tc, test_unreadable_sweep_file);
	tcase_add_test(tc, test_json_exit_status);
	tcase_add_test(tc, test_history_json);
	tcase_add_test(tc, test_json_counts_toward_drain);
	tcase_add_test(tc, test_history_db_unreadable);
	tcase_add_test(tc, test_text_control_chars);
	tcase_add_test(tc, test_clock_zero_unsigned);
	tcase_add_test(tc, test_help_exit_status);
	tcase_add_test(tc, test_auth_failure);
	tcase_add_test(tc, test_mount_path_slashes);
	tcase_add_test(tc, test_mount_path_dots_raw);
	tcase_add_test(tc, test_errors_counters_unsaved);
	tcase_add_test(tc, test_concurrent_sweeps_take_turns);
	tcase_add_test(tc, test_scontrol_hung_killed);
	tcase_add_test(tc, test_counters_corrupt);
	tcase_add_test(tc, test_db_free_during_scontrol);
	tcase_add_test(tc, test_scontrol_missing);
	tcase_add_test(tc, test_drain_timed_out_took);
	tcase_add_test(tc, test_scontrol_updates_hung);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cu_run_nofork(sweep_checks_suite());
}
