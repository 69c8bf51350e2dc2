/* Tests for agent/facts.c.
 *
 * Lustre, GPFS, an NFS server and particular disks cannot exist on the
 * test machine, so most checks run facts_gather against a fake tree under
 * --sysroot that this test builds in a mkdtemp directory.  NICs always
 * come from rtnetlink of the agent's network namespace: one test creates a
 * private namespace (unshare) with a veth pair it makes itself, and one
 * test checks invariants of the real root and namespace. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "testutil.h"
#include "agent.h"
#include "harness.h"
#include "util.h"

/* Each test works in its own directory below cu_base(). */
static char root[512];
static struct agent *ag;

static void
setup(void)
{
	cu_subdir(root, sizeof(root), "root");
	ag = calloc(1, sizeof(*ag));
	ck_assert_ptr_nonnull(ag);
	snprintf(ag->node, sizeof(ag->node), "node07");
	snprintf(ag->sysroot, sizeof(ag->sysroot), "%s", root);
}

static void
teardown(void)
{
	free(ag);
	ag = NULL;
	if (root[0] != '\0')
		cu_rm_rf(root);
	root[0] = '\0';
}

/* Write root/REL with printf content (parents made). */
#define put(rel, ...) cu_write_at(root, rel, 0644, __VA_ARGS__)

static const Knob__BlockDevFacts *
find_blockdev(const Knob__Facts *f, const char *name)
{
	for (size_t i = 0; i < f->n_blockdevs; i++)
		if (strcmp(f->blockdevs[i]->name, name) == 0)
			return f->blockdevs[i];
	return NULL;
}

static const Knob__NicFacts *
find_nic(const Knob__Facts *f, const char *name)
{
	for (size_t i = 0; i < f->n_nics; i++)
		if (strcmp(f->nics[i]->name, name) == 0)
			return f->nics[i];
	return NULL;
}

static const Knob__MountFacts *
find_mount(const Knob__Facts *f, const char *target)
{
	for (size_t i = 0; i < f->n_mounts; i++)
		if (strcmp(f->mounts[i]->target, target) == 0)
			return f->mounts[i];
	return NULL;
}

static const Knob__SoftwareFacts *
find_sw(const Knob__Facts *f, const char *name)
{
	for (size_t i = 0; i < f->n_software; i++)
		if (strcmp(f->software[i]->name, name) == 0)
			return f->software[i];
	return NULL;
}

/* One sysfs CPU: package, core, online ("" = no online file). */
static void
put_cpu(int n, int pkg, int core, const char *online)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/topology/physical_package_id", n);
	put(rel, "%d\n", pkg);
	snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/topology/core_id", n);
	put(rel, "%d\n", core);
	if (online[0] != '\0') {
		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/online", n);
		put(rel, "%s\n", online);
	}
}

/* A block device under sys/block. */
static void
put_blockdev(const char *name, const char *size, const char *rot, const char *sched,
    const char *ra, const char *nr, const char *model)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "sys/block/%s/size", name);
	put(rel, "%s\n", size);
	snprintf(rel, sizeof(rel), "sys/block/%s/queue/rotational", name);
	put(rel, "%s\n", rot);
	snprintf(rel, sizeof(rel), "sys/block/%s/queue/scheduler", name);
	put(rel, "%s\n", sched);
	snprintf(rel, sizeof(rel), "sys/block/%s/queue/read_ahead_kb", name);
	put(rel, "%s\n", ra);
	snprintf(rel, sizeof(rel), "sys/block/%s/queue/nr_requests", name);
	put(rel, "%s\n", nr);
	if (model != NULL) {
		snprintf(rel, sizeof(rel), "sys/block/%s/device/model", name);
		put(rel, "%s\n", model);
	}
}

/* Pack and unpack f: the message must survive the wire unchanged. */
static void
check_roundtrip(const Knob__Facts *f)
{
	size_t len = knob__facts__get_packed_size(f);
	uint8_t *buf = malloc(len ? len : 1);
	Knob__Facts *g;

	ck_assert_uint_eq(knob__facts__pack(f, buf), len);
	g = knob__facts__unpack(NULL, len, buf);
	ck_assert_ptr_nonnull(g);
	ck_assert_str_eq(g->node, f->node);
	ck_assert_str_eq(g->hostname, f->hostname);
	ck_assert_uint_eq(g->n_blockdevs, f->n_blockdevs);
	ck_assert_uint_eq(g->n_nics, f->n_nics);
	ck_assert_uint_eq(g->n_mounts, f->n_mounts);
	ck_assert_uint_eq(g->n_software, f->n_software);
	ck_assert_uint_eq(g->mem_total_kb, f->mem_total_kb);
	knob__facts__free_unpacked(g, NULL);
	free(buf);
}

START_TEST(test_fake_tree)
{
	const Knob__BlockDevFacts *b;
	const Knob__MountFacts *m;
	const Knob__SoftwareFacts *s;
	Knob__Facts f;

	put("proc/sys/kernel/hostname", "fakehost\n");
	put("proc/sys/kernel/osrelease", "5.14.0-fake.x86_64\n");
	put("proc/uptime", "12345.67 99999.00\n");
	put("proc/cpuinfo",
	    "processor\t: 0\nvendor_id\t: FakeVendor\ncpu family\t: 6\n"
	    "model name\t: Fake CPU Model 9000 @ 3.00GHz\ncpu MHz\t\t: 3000.000\n"
	    "physical id\t: 0\ncore id\t\t: 0\ncpu cores\t: 1\n\n"
	    "processor\t: 1\nvendor_id\t: FakeVendor\n"
	    "model name\t: Fake CPU Model 9000 @ 3.00GHz\nphysical id\t: 0\ncore id\t\t: 0\n\n");
	/* Sysfs topology wins over cpuinfo: 2 packages, 3 cores, 4 online
	 * threads (cpu4 is offline, cpu0 has no online file). */
	put_cpu(0, 0, 0, "");
	put_cpu(1, 0, 0, "1");
	put_cpu(2, 1, 0, "1");
	put_cpu(3, 1, 1, "1");
	put_cpu(4, 1, 2, "0");
	put("sys/devices/system/cpu/cpufreq/boost", "1\n");
	put("sys/devices/system/cpu/cpuidle/current_driver", "none\n");
	put("sys/devices/system/cpu/smt/control", "on\n");
	put("proc/meminfo",
	    "MemTotal:       24681012 kB\nMemFree:         1000000 kB\n"
	    "MemAvailable:   12345678 kB\nBuffers:            1234 kB\n");

	put_blockdev("loop7", "2097152", "0", "none [mq-deadline] kyber", "4096", "128", NULL);
	put("sys/block/loop7/queue/max_sectors_kb", "1280\n");
	put_blockdev("sda", "1953525168", "1", "[bfq] mq-deadline none", "8192", "64",
	    "FAKE HDD 1TB    ");
	put_blockdev("nvme10n1", "1000", "0", "none", "128", "1023", "Fake NVMe");
	put_blockdev("nvme2n1", "2000", "0", "[none] mq-deadline", "128", "1023", "Fake NVMe");
	/* Empty loop device (size 0) and garbage sizes are left out. */
	put_blockdev("loop1", "0", "0", "none", "128", "128", NULL);
	put_blockdev("bogus0", "lots", "0", "none", "128", "128", NULL);

	put("proc/self/mounts",
	    "/dev/sda1 / ext4 rw,relatime 0 0\n"
	    "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
	    "sysfs /sys sysfs rw 0 0\n"
	    "10.0.0.1@o2ib:10.0.0.2@o2ib:/lfs01 /lustre/lfs01 lustre rw,flock,lazystatfs 0 0\n"
	    "gpfs01 /gpfs/gpfs01 gpfs rw,relatime 0 0\n"
	    "nas:/export/home /home nfs4 rw,relatime,vers=4.2 0 0\n"
	    "nas:/old /mnt/old\\040data nfs rw,vers=3 0 0\n"
	    "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n"
	    "short line\n");
	put("sys/fs/lustre/version", "2.15.4\n");
	put("usr/lpp/mmfs/bin/mmdiag", "#!/bin/sh\nexit 0\n");
	put("var/lib/dpkg/status",
	    "Package: gpfs.base-extras\nStatus: install ok installed\nVersion: 9.9.9\n\n"
	    "Package: gpfs.base\nStatus: install ok installed\nPriority: optional\n"
	    "Version: 5.1.9-2\nDescription: GPFS base\n\n"
	    "Package: zlib1g\nVersion: 1:1.2.13\n");
	put("proc/fs/nfsd/threads", "16\n");
	put("proc/fs/nfsd/versions", "-2 +3 +4 +4.1 +4.2\n");
	/* A sysfs NIC that does not exist in the namespace must not appear:
	 * NICs come from rtnetlink, not from the tree. */
	put("sys/class/net/ghost0/speed", "10000\n");
	put("sys/class/net/ghost0/mtu", "9000\n");

	ck_assert_int_eq(facts_gather(ag, &f), 0);

	ck_assert_str_eq(f.node, "node07");
	ck_assert_str_eq(f.hostname, "fakehost");
	ck_assert_str_eq(f.kernel, "5.14.0-fake.x86_64");
	ck_assert_uint_eq(f.uptime_s, 12345);

	ck_assert_ptr_nonnull(f.cpu);
	ck_assert_str_eq(f.cpu->model, "Fake CPU Model 9000 @ 3.00GHz");
	ck_assert_uint_eq(f.cpu->sockets, 2);
	ck_assert_uint_eq(f.cpu->cores, 3);
	ck_assert_uint_eq(f.cpu->threads, 4);
	ck_assert_str_eq(f.cpu->smt, "on");

	ck_assert_uint_eq(f.mem_total_kb, 24681012);
	ck_assert_uint_eq(f.mem_available_kb, 12345678);

	/* Natural order, empty and malformed devices left out. */
	ck_assert_uint_eq(f.n_blockdevs, 4);
	ck_assert_str_eq(f.blockdevs[0]->name, "loop7");
	ck_assert_str_eq(f.blockdevs[1]->name, "nvme2n1");
	ck_assert_str_eq(f.blockdevs[2]->name, "nvme10n1");
	ck_assert_str_eq(f.blockdevs[3]->name, "sda");
	b = find_blockdev(&f, "loop7");
	ck_assert_uint_eq(b->size_bytes, 2097152ull * 512);
	ck_assert(!b->rotational);
	ck_assert_str_eq(b->scheduler, "mq-deadline");
	ck_assert_uint_eq(b->read_ahead_kb, 4096);
	ck_assert_uint_eq(b->nr_requests, 128);
	ck_assert_uint_eq(b->max_sectors_kb, 1280);
	ck_assert_str_eq(b->model, "");
	b = find_blockdev(&f, "sda");
	ck_assert_uint_eq(b->size_bytes, 1953525168ull * 512);
	ck_assert(b->rotational);
	ck_assert_str_eq(b->scheduler, "bfq");
	ck_assert_uint_eq(b->read_ahead_kb, 8192);
	ck_assert_uint_eq(b->nr_requests, 64);
	ck_assert_str_eq(b->model, "FAKE HDD 1TB");
	ck_assert_str_eq(find_blockdev(&f, "nvme10n1")->scheduler, "none");
	ck_assert_str_eq(find_blockdev(&f, "nvme2n1")->scheduler, "none");
	ck_assert_ptr_null(find_blockdev(&f, "loop1"));
	ck_assert_ptr_null(find_blockdev(&f, "bogus0"));

	/* Pseudo file systems and malformed lines are left out. */
	ck_assert_uint_eq(f.n_mounts, 6);
	ck_assert_ptr_null(find_mount(&f, "/proc"));
	ck_assert_ptr_null(find_mount(&f, "/sys"));
	m = find_mount(&f, "/lustre/lfs01");
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m->kind, "lustre");
	ck_assert_str_eq(m->fstype, "lustre");
	ck_assert_str_eq(m->source, "10.0.0.1@o2ib:10.0.0.2@o2ib:/lfs01");
	m = find_mount(&f, "/gpfs/gpfs01");
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m->kind, "gpfs");
	m = find_mount(&f, "/home");
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m->kind, "nfs");
	ck_assert_str_eq(m->fstype, "nfs4");
	m = find_mount(&f, "/mnt/old data");
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m->kind, "nfs");
	ck_assert_str_eq(m->fstype, "nfs");
	ck_assert_str_eq(find_mount(&f, "/")->kind, "local");
	ck_assert_str_eq(find_mount(&f, "/dev/shm")->kind, "local");
	/* File order is kept. */
	ck_assert_str_eq(f.mounts[0]->target, "/");
	ck_assert_str_eq(f.mounts[5]->target, "/dev/shm");

	s = find_sw(&f, "lustre-client");
	ck_assert_ptr_nonnull(s);
	ck_assert(s->present);
	ck_assert_str_eq(s->version, "2.15.4");
	s = find_sw(&f, "gpfs");
	ck_assert_ptr_nonnull(s);
	ck_assert(s->present);
	ck_assert_str_eq(s->version, "5.1.9-2");
	s = find_sw(&f, "nfs-server");
	ck_assert_ptr_nonnull(s);
	ck_assert(s->present);
	ck_assert_uint_eq(s->threads, 16);
	ck_assert_str_eq(s->version, "3 4 4.1 4.2");

	ck_assert_ptr_nonnull(find_nic(&f, "lo"));
	ck_assert_ptr_null(find_nic(&f, "ghost0"));

	ck_assert_str_eq(f.agent_version, KNOB_VERSION);
	ck_assert_str_eq(f.active_profile, "");
	ck_assert(f.agent_time_ns > now_real_ns() - 10000000000ull);
	ck_assert(f.agent_time_ns <= now_real_ns());

	check_roundtrip(&f);
	facts_free(&f);
	/* facts_free re-initialises: a second free is harmless. */
	facts_free(&f);
}
END_TEST

/* No sysfs CPUs: topology from cpuinfo (2 sockets x 2 cores x 2 threads);
 * the older procfs Lustre version format; no GPFS version source; nothing
 * else in the tree, so everything else stays empty without failing. */
START_TEST(test_sparse_tree)
{
	char cpuinfo[8192];
	size_t off = 0;
	const Knob__SoftwareFacts *s;
	Knob__Facts f;

	for (int i = 0; i < 8; i++)
		off += (size_t)snprintf(cpuinfo + off, sizeof(cpuinfo) - off,
		    "processor\t: %d\nmodel name\t: Other CPU\nphysical id\t: %d\n"
		    "siblings\t: 4\ncore id\t\t: %d\ncpu cores\t: 2\n\n", i, i / 4, (i / 2) % 2);
	put("proc/cpuinfo", "%s", cpuinfo);
	put("proc/fs/lustre/version", "lustre: 2.12.9\nkernel: patchless_client\nbuild: 2.12.9\n");
	put("usr/lpp/mmfs/bin/mmdiag", "\n");
	put("proc/fs/nfsd/versions", "+3 +4\n");	/* no threads file: not mounted */
	put("proc/self/mounts", "%s", "");

	ck_assert_int_eq(facts_gather(ag, &f), 0);
	ck_assert_str_eq(f.node, "node07");
	ck_assert_str_eq(f.hostname, "");
	ck_assert_str_eq(f.kernel, "");
	ck_assert_uint_eq(f.uptime_s, 0);
	ck_assert_str_eq(f.cpu->model, "Other CPU");
	ck_assert_uint_eq(f.cpu->sockets, 2);
	ck_assert_uint_eq(f.cpu->cores, 4);
	ck_assert_uint_eq(f.cpu->threads, 8);
	ck_assert_str_eq(f.cpu->smt, "");
	ck_assert_uint_eq(f.mem_total_kb, 0);
	ck_assert_uint_eq(f.n_blockdevs, 0);
	ck_assert_uint_eq(f.n_mounts, 0);
	s = find_sw(&f, "lustre-client");
	ck_assert_ptr_nonnull(s);
	ck_assert(s->present);
	ck_assert_str_eq(s->version, "2.12.9");
	s = find_sw(&f, "gpfs");
	ck_assert_ptr_nonnull(s);
	ck_assert(s->present);
	ck_assert_str_eq(s->version, "");
	s = find_sw(&f, "nfs-server");
	ck_assert_ptr_nonnull(s);
	ck_assert(!s->present);
	ck_assert_uint_eq(s->threads, 0);
	check_roundtrip(&f);
	facts_free(&f);
}
END_TEST

/* A sysroot that does not exist at all: still no failure. */
START_TEST(test_missing_sysroot)
{
	Knob__Facts f;

	snprintf(ag->sysroot, sizeof(ag->sysroot), "%s/does-not-exist", root);
	ck_assert_int_eq(facts_gather(ag, &f), 0);
	ck_assert_uint_eq(f.cpu->threads, 0);
	ck_assert_uint_eq(f.n_blockdevs, 0);
	ck_assert_uint_eq(f.n_mounts, 0);
	ck_assert_uint_eq(f.n_software, 3);
	for (size_t i = 0; i < f.n_software; i++)
		ck_assert(!f.software[i]->present);
	check_roundtrip(&f);
	facts_free(&f);
}
END_TEST

/* NICs in a private network namespace made by this test (the forked test
 * process unshares; nothing outside it is touched): names, MTU, queue
 * length and MAC from rtnetlink, speed from the sysroot's sysfs. */
START_TEST(test_nics_netns)
{
	const Knob__NicFacts *n;
	Knob__Facts f;
	int rc;

	ck_assert_msg(unshare(CLONE_NEWNET) == 0, "unshare(CLONE_NEWNET): %s", strerror(errno));
	rc = system("ip link add kfa0 type veth peer name kfb0 && "
	    "ip link set kfa0 mtu 9000 txqueuelen 77 address 02:00:00:00:00:aa && "
	    "ip link set lo up");
	ck_assert_int_eq(rc, 0);
	put("sys/class/net/kfa0/speed", "25000\n");
	put("sys/class/net/kfb0/speed", "-1\n");
	put("sys/class/net/eth0/speed", "1000\n");
	put("proc/self/mounts", "%s", "");

	ck_assert_int_eq(facts_gather(ag, &f), 0);
	ck_assert_uint_eq(f.n_nics, 3);
	for (size_t i = 1; i < f.n_nics; i++)
		ck_assert_uint_lt(f.nics[i - 1]->ifindex, f.nics[i]->ifindex);
	n = find_nic(&f, "lo");
	ck_assert_ptr_nonnull(n);
	ck_assert_uint_eq(n->mtu, 65536);
	ck_assert_int_eq(n->speed_mbps, -1);
	ck_assert_str_eq(n->address, "00:00:00:00:00:00");
	n = find_nic(&f, "kfa0");
	ck_assert_ptr_nonnull(n);
	ck_assert_uint_eq(n->mtu, 9000);
	ck_assert_uint_eq(n->txqueuelen, 77);
	ck_assert_str_eq(n->address, "02:00:00:00:00:aa");
	ck_assert_str_eq(n->link_kind, "veth");
	ck_assert_str_eq(n->operstate, "down");
	ck_assert_int_eq(n->speed_mbps, 25000);
	n = find_nic(&f, "kfb0");
	ck_assert_ptr_nonnull(n);
	ck_assert_uint_eq(n->mtu, 1500);
	ck_assert_int_eq(n->speed_mbps, -1);
	ck_assert_ptr_null(find_nic(&f, "eth0"));
	check_roundtrip(&f);
	facts_free(&f);
}
END_TEST

/* The real root: only what holds on any Linux machine, and the uptime the
 * agent reports is the one this process reads around the call. */
START_TEST(test_real_root)
{
	const Knob__NicFacts *lo;
	struct utsname u;
	Knob__Facts f;
	double up0, up1;
	int have_root = 0;

	ag->sysroot[0] = '\0';
	up0 = cu_read_num("/proc/uptime");
	ck_assert_int_eq(facts_gather(ag, &f), 0);
	up1 = cu_read_num("/proc/uptime");
	ck_assert_int_eq(uname(&u), 0);
	ck_assert_str_eq(f.hostname, u.nodename);
	ck_assert_str_eq(f.kernel, u.release);
	ck_assert_msg((double)f.uptime_s >= floor(up0) && (double)f.uptime_s <= up1,
	    "uptime %llu s, /proc/uptime %.2f .. %.2f", (unsigned long long)f.uptime_s, up0, up1);
	ck_assert_uint_ge(f.cpu->threads, 1);
	ck_assert_uint_ge(f.cpu->cores, 1);
	ck_assert_uint_ge(f.cpu->sockets, 1);
	ck_assert_uint_ge(f.cpu->threads, f.cpu->cores);
	ck_assert_uint_ge(f.cpu->cores, f.cpu->sockets);
	ck_assert_int_eq((long)f.cpu->threads, sysconf(_SC_NPROCESSORS_ONLN));
	ck_assert_uint_gt(f.mem_total_kb, 0);
	ck_assert_uint_le(f.mem_available_kb, f.mem_total_kb);
	for (size_t i = 0; i < f.n_blockdevs; i++)
		ck_assert_uint_gt(f.blockdevs[i]->size_bytes, 0);
	lo = find_nic(&f, "lo");
	ck_assert_ptr_nonnull(lo);
	ck_assert_uint_eq(lo->mtu, 65536);
	for (size_t i = 0; i < f.n_mounts; i++)
		if (strcmp(f.mounts[i]->target, "/") == 0)
			have_root = 1;
	ck_assert(have_root);
	ck_assert_str_eq(f.agent_version, KNOB_VERSION);
	check_roundtrip(&f);
	facts_free(&f);
}
END_TEST

/* In a time namespace whose boot clock runs 10^6 s ahead of the host's, the
 * agent's uptime is that namespace's: between the /proc/uptime read there
 * before and after (the child entered at fork; exit status 0 when so). */
START_TEST(test_uptime_timens)
{
	Knob__Facts f;
	pid_t pid;

	ck_assert_msg(unshare(CLONE_NEWTIME) == 0, "unshare(CLONE_NEWTIME): %s", strerror(errno));
	ck_assert_int_eq(write_small_file("/proc/self/timens_offsets", "boottime 1000000 0"), 0);
	ag->sysroot[0] = '\0';
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		double up0 = cu_read_num("/proc/uptime"), up1;
		int rc = facts_gather(ag, &f);

		up1 = cu_read_num("/proc/uptime");
		fprintf(stderr, "time namespace: /proc/uptime %.2f .. %.2f, facts %llu\n", up0, up1,
		    rc == 0 ? (unsigned long long)f.uptime_s : 0ull);
		_exit(rc == 0 && up0 >= 1e6 && (double)f.uptime_s >= floor(up0) &&
		    (double)f.uptime_s <= up1 ? 0 : 1);
	}
	ck_assert_int_eq(cu_reap(pid), 0);
}
END_TEST

static Suite *
facts_suite(void)
{
	Suite *s = suite_create("facts");
	TCase *tc = tcase_create("facts");

	tcase_add_unchecked_fixture(tc, cu_base_setup, cu_base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_fake_tree);
	tcase_add_test(tc, test_sparse_tree);
	tcase_add_test(tc, test_missing_sysroot);
	tcase_add_test(tc, test_nics_netns);
	tcase_add_test(tc, test_real_root);
	tcase_add_test(tc, test_uptime_timens);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cu_run(facts_suite());
}
