/* Benchmark phases end to end: four knobd agents in network namespaces
 * (tests/harness.h), knobctl in the controller namespace.  The namespaces
 * share the host file system, so every agent works in one temp directory,
 * like clients of one parallel file system.  knobctl waits for the agents
 * to confirm the removal of their files, so the tests look right after it
 * exits.  There is no GPFS here: the pagepool test gives one agent a
 * --sysroot with a stand-in mmdiag script and a fake /proc/meminfo. */
#include <check.h>
#include <liburing.h>
#include <dirent.h>
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

#include "bench.h"
#include "harness.h"
#include "util.h"

static struct harness h;
static char data[PATH_MAX];

/* Remove the data directory; also run at exit, since a failed check ends
 * the test's process without the teardown. */
static void
remove_data(void)
{
	if (data[0])
		harness_sh("rm -rf '%s'", data);
	data[0] = '\0';
}

static void
setup(void)
{
	ck_assert_msg(harness_start(&h, 4, 1) == 0, "harness start failed");
	snprintf(data, sizeof(data), "/tmp/knob-bnet.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(data));
	atexit(remove_data);
}

static void
teardown(void)
{
	harness_stop(&h);
	remove_data();
}

/* Run knobctl --json ARGS; parse stdout; returns the document. */
static json_object *
bench_json(int *rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static json_object *
bench_json(int *rc, const char *fmt, ...)
{
	json_object *doc;
	char *args;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&args, fmt, ap) < 0)
		args = NULL;
	va_end(ap);
	ck_assert_ptr_nonnull(args);
	doc = harness_knobctl_json(&h, rc, "--json bench %s", args);
	ck_assert_msg(doc != NULL, "knobctl bench %s: not JSON", args);
	free(args);
	return doc;
}

static json_object *
jget(json_object *o, const char *k)
{
	json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, k, &v), "no '%s' in %s", k,
	    json_object_to_json_string(o));
	return v;
}

static json_object *
phase(json_object *doc, size_t i)
{
	return json_object_array_get_idx(jget(doc, "phases"), i);
}

static int64_t
ji(json_object *o, const char *k)
{
	return json_object_get_int64(jget(o, k));
}

static const char *
js(json_object *o, const char *k)
{
	return json_object_get_string(jget(o, k));
}

/* Number of entries in dir (recursively), 0 when gone. */
static int
count_entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char sub[PATH_MAX + 256];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		if (de->d_type == DT_DIR) {
			snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
			n += count_entries(sub);
		}
	}
	closedir(d);
	return n;
}

/* Wait up to secs for data to be empty; seconds taken or -1. */
static int
wait_empty(int secs)
{
	for (int i = 0; i < secs * 10; i++) {
		if (count_entries(data) == 0)
			return i / 10;
		usleep(100000);
	}
	return -1;
}

/* The only knob.* directory under data (after a --keep run). */
static void
kept_dir(char *buf, size_t len)
{
	struct dirent *de;
	DIR *d = opendir(data);

	buf[0] = '\0';
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "knob.", 5) == 0)
			snprintf(buf, len, "%s/%s", data, de->d_name);
	closedir(d);
	ck_assert_msg(buf[0], "no kept directory in %s", data);
}

/* Every block of [off, off+len) of path carries rank's stamp. */
static void
check_stamps(const char *path, uint64_t off, uint64_t len, uint64_t bs, uint32_t rank)
{
	uint8_t hdr[16];
	int fd = open(path, O_RDONLY);

	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	for (uint64_t o = off; o < off + len; o += bs) {
		uint32_t magic, r;
		uint64_t fo;

		ck_assert_int_eq(pread(fd, hdr, 16, (off_t)o), 16);
		memcpy(&magic, hdr, 4);
		memcpy(&r, hdr + 4, 4);
		memcpy(&fo, hdr + 8, 8);
		ck_assert_uint_eq(magic, BENCH_MAGIC);
		ck_assert_uint_eq(r, rank);
		ck_assert_uint_eq(fo, o);
	}
	close(fd);
}

/* N-to-N write then read: bytes, 2 threads per node, stamps on disk,
 * then the same through a normal run leaves nothing behind. */
START_TEST(nn_write_read)
{
	json_object *doc, *p;
	char kd[PATH_MAX], f[PATH_MAX + 64];
	struct stat st;
	int rc;

	doc = bench_json(&rc, "seq -w @all --dir %s --threads 8 --size 4m --bs 256k "
	    "--fsync", data);
	ck_assert_int_eq(rc, 0);
	for (size_t i = 0; i < 2; i++) {
		p = phase(doc, i);
		ck_assert_str_eq(js(p, "kind"), i == 0 ? "seq-write" : "seq-read");
		ck_assert_str_eq(js(p, "status"), "ok");
		ck_assert_int_eq(ji(p, "bytes"), 8 * (4 << 20));
		ck_assert_int_eq(ji(p, "nodes"), 4);
		ck_assert_int_eq(json_object_array_length(jget(p, "per_thread")), 8);
		ck_assert_int_eq(ji(json_object_array_get_idx(jget(p, "per_node"), 2), "threads"), 2);
		ck_assert(json_object_get_double(jget(p, "rate")) > 0);
		ck_assert_int_eq(ji(jget(p, "latency"), "count"), 8 * 16);
	}
	json_object_put(doc);
	ck_assert_msg(count_entries(data) == 0, "files left behind in %s", data);

	/* --keep: look at what was written */
	doc = bench_json(&rc, "seq-write -w @all --dir %s --threads 8 --size 4m "
	    "--bs 256k --keep", data);
	ck_assert_int_eq(rc, 0);
	json_object_put(doc);
	kept_dir(kd, sizeof(kd));
	for (uint32_t r = 0; r < 8; r++) {
		snprintf(f, sizeof(f), "%s/f.%08u", kd, r);
		ck_assert_int_eq(stat(f, &st), 0);
		ck_assert_uint_eq((uint64_t)st.st_size, 4u << 20);
		check_stamps(f, 0, 4 << 20, 256 << 10, r);
	}
	ck_assert_int_eq(count_entries(kd), 8);
}
END_TEST

/* N-to-1 shared file with reader shift (each rank reads the next node's
 * segment), then the kept shared file checked segment by segment. */
START_TEST(n1_shared_write_read)
{
	json_object *doc, *p;
	char kd[PATH_MAX], f[PATH_MAX + 64];
	struct stat st;
	int rc;

	doc = bench_json(&rc, "seq -w @all --dir %s --threads 4 --size 8m --shared "
	    "--reader-shift", data);
	ck_assert_int_eq(rc, 0);
	for (size_t i = 0; i < 2; i++) {
		p = phase(doc, i);
		ck_assert_str_eq(js(p, "status"), "ok");
		ck_assert_int_eq(ji(p, "bytes"), 4 * (8 << 20));
	}
	json_object_put(doc);
	ck_assert_msg(count_entries(data) == 0, "files left behind in %s", data);

	doc = bench_json(&rc, "seq-write -w @all --dir %s --threads 4 --size 8m "
	    "--shared --keep", data);
	ck_assert_int_eq(rc, 0);
	json_object_put(doc);
	kept_dir(kd, sizeof(kd));
	snprintf(f, sizeof(f), "%s/shared", kd);
	ck_assert_int_eq(stat(f, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 4u * (8 << 20));
	for (uint32_t r = 0; r < 4; r++)
		check_stamps(f, (uint64_t)r * (8 << 20), 8 << 20, 1 << 20, r);
}
END_TEST

START_TEST(placement)
{
	json_object *doc, *p, *nodes;
	int rc;

	doc = bench_json(&rc, "seq-write -w @all --dir %s --threads 8,2 --size 1m",
	    data);
	ck_assert_int_eq(rc, 0);
	p = phase(doc, 0);
	ck_assert_int_eq(ji(p, "threads"), 8);
	ck_assert_int_eq(ji(p, "nodes"), 4);
	nodes = jget(p, "per_node");
	for (size_t i = 0; i < 4; i++)
		ck_assert_int_eq(ji(json_object_array_get_idx(nodes, i), "threads"), 2);
	p = phase(doc, 1);
	ck_assert_int_eq(ji(p, "threads"), 2);
	ck_assert_int_eq(ji(p, "nodes"), 2);
	nodes = jget(p, "node_names");
	ck_assert_int_eq(json_object_array_length(nodes), 2);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(nodes, 0)), "node01");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(nodes, 1)), "node02");
	json_object_put(doc);
	ck_assert_msg(count_entries(data) == 0, "files left behind in %s", data);

	/* fio as an external phase on every node, merged into one record */
	doc = bench_json(&rc, "fio -w @all --dir %s --threads 4 -- --rw=write --bs=64k "
	    "--size=1m --ioengine=psync", data);
	ck_assert_int_eq(rc, 0);
	p = phase(doc, 0);
	ck_assert_str_eq(js(p, "kind"), "fio");
	ck_assert_str_eq(js(p, "status"), "ok");
	ck_assert_int_eq(ji(p, "nodes"), 4);
	ck_assert_int_eq(ji(p, "bytes"), 4 << 20);
	nodes = jget(p, "per_node");
	ck_assert_int_eq(json_object_array_length(jget(json_object_array_get_idx(nodes, 3),
	    "ext_ops")), 1);
	json_object_put(doc);
	ck_assert_msg(count_entries(data) == 0, "fio files left behind in %s", data);
}
END_TEST

/* Metadata sweep 1..4 threads; and the stored run shows in results. */
START_TEST(md_sweep)
{
	json_object *doc, *p;
	char *out = NULL, *run;
	int rc;

	doc = bench_json(&rc, "md -w @all --dir %s --threads 1..4 --files 120 "
	    "--files-per-dir 50 --write-size 3k", data);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(json_object_array_length(jget(doc, "phases")), 12);
	for (size_t i = 0; i < 12; i++) {
		static const char *const k[] = { "md-create", "md-stat", "md-read", "md-remove" };
		int64_t t = 1 << (i / 4);

		p = phase(doc, i);
		ck_assert_str_eq(js(p, "kind"), k[i % 4]);
		ck_assert_int_eq(ji(p, "threads"), t);
		ck_assert_str_eq(js(p, "status"), "ok");
		ck_assert_int_eq(ji(p, "ops"), t * 120);
		ck_assert_str_eq(js(p, "unit"), "op/s");
	}
	run = xstrdup(js(doc, "run_id"));
	json_object_put(doc);
	ck_assert_msg(count_entries(data) == 0, "files left behind in %s", data);
	rc = harness_knobctl(&h, &out, NULL, "results show %s", run);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "md-remove"));
	free(out);
	rc = harness_knobctl(&h, &out, NULL, "results compare %s %s", run, run);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "+0.0%"));
	free(out);
	free(run);

	/* many files left for the release: knobctl returns once every agent
	 * confirmed their removal, not before */
	doc = bench_json(&rc, "md-create -w @all --dir %s --threads 4 --files 5000 "
	    "--files-per-dir 1000", data);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(ji(phase(doc, 0), "ops"), 4 * 5000);
	json_object_put(doc);
	ck_assert_msg(count_entries(data) == 0, "%d files left when knobctl returned",
	    count_entries(data));
}
END_TEST

static int
have_io_uring(void)
{
	struct io_uring ring;

	if (io_uring_queue_init(2, &ring, 0) < 0)
		return 0;
	io_uring_queue_exit(&ring);
	return 1;
}

/* Issue 9's options through knobctl and the wire to two agents: exact
 * --files-total over 3 threads in one shared mdtest tree (file and
 * directory phases), strided shared segments read back verified, and
 * rand-rw at queue depth 8 through io_uring. */
START_TEST(measure_options)
{
	json_object *doc, *p;
	int rc;

	doc = bench_json(&rc, "md,mddir -w @all --dir %s --threads 3 --files-total 1000 "
	    "--md-shared --md-depth 1 --md-branch 3 --write-size 1k", data);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(json_object_array_length(jget(doc, "phases")), 7);
	for (size_t i = 0; i < 7; i++) {
		p = phase(doc, i);
		ck_assert_str_eq(js(p, "status"), "ok");
		ck_assert_int_eq(ji(p, "ops"), 1000);	/* not 3 x 334 */
		ck_assert_int_eq(json_object_get_boolean(jget(jget(p, "params"), "md_shared")), 1);
	}
	ck_assert_str_eq(js(phase(doc, 6), "kind"), "md-rmdir");
	json_object_put(doc);
	ck_assert_msg(count_entries(data) == 0, "md files left behind in %s", data);

	doc = bench_json(&rc, "seq -w @all --dir %s --threads 4 --shared --segments 4 "
	    "--bs 47008 --size 376064 --verify --reader-shift", data);
	ck_assert_int_eq(rc, 0);
	for (size_t i = 0; i < 2; i++) {
		p = phase(doc, i);
		ck_assert_str_eq(js(p, "status"), "ok");
		ck_assert_int_eq(ji(p, "bytes"), 4 * 376064);
	}
	json_object_put(doc);

	doc = bench_json(&rc, "rand-rw -w @all --dir %s --threads 2 --bs 4k --size 1m "
	    "--iodepth 8 --rwmix 70 --verify", data);
	ck_assert_int_eq(rc, 0);
	p = phase(doc, 0);
	ck_assert_str_eq(js(p, "status"), "ok");
	ck_assert_int_eq(ji(p, "ops"), 512);
	ck_assert_int_eq(ji(p, "read_ops") + ji(p, "write_ops"), 512);
	ck_assert_msg(ji(p, "read_ops") > 300 && ji(p, "read_ops") < 420, "%lld reads of 512",
	    (long long)ji(p, "read_ops"));
	/* libaio where the kernel denies io_uring (the engine test covers both) */
	ck_assert_str_eq(js(json_object_array_get_idx(jget(p, "per_node"), 0), "ioengine"),
	    have_io_uring() ? "io_uring" : "libaio");
	json_object_put(doc);
	ck_assert_msg(count_entries(data) == 0, "files left behind in %s", data);
}
END_TEST

/* Start knobctl ARGS in the controller namespace in the background,
 * stdout to outfile; returns its pid (ip netns exec execs knobctl). */
static pid_t
knobctl_bg(const char *outfile, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pid_t
knobctl_bg(const char *outfile, const char *fmt, ...)
{
	char *args, *cmd;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&args, fmt, ap) < 0)
		args = NULL;
	va_end(ap);
	ck_assert_ptr_nonnull(args);
	cmd = xasprintf("exec ip netns exec %s %s/knobctl -c %s %s >%s 2>%s.err </dev/null",
	    h.ctl_ns, h.bin, h.cluster, args, outfile, outfile);
	pid_t pid;

	free(args);
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	free(cmd);
	ck_assert_int_gt(pid, 0);
	return pid;
}

/* One agent killed mid-phase: the others finish, the result is degraded
 * and names it; the survivors remove their files. */
START_TEST(agent_killed_degraded)
{
	char outf[PATH_MAX + 16], *out = NULL;
	json_object *doc, *p, *missing;
	pid_t pid;
	int st;

	snprintf(outf, sizeof(outf), "%s/deg.json", h.tmp);
	pid = knobctl_bg(outf, "--json bench seq-write -w @all --dir %s --threads 4 "
	    "--size 1g --bs 1m --rate-iops 20 --stonewall 4", data);
	sleep(2);
	harness_agent_stop(&h, 2, SIGKILL);	/* node03 */
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 1);
	ck_assert_int_eq(read_file_bounded(outf, 1 << 24, &out, NULL), 0);
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "not JSON: %s", out);
	p = phase(doc, 0);
	ck_assert_str_eq(js(p, "status"), "degraded");
	missing = jget(p, "missing");
	ck_assert_int_eq(json_object_array_length(missing), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(missing, 0)), "node03");
	/* the three survivors' bytes are counted, the dead node's are not */
	ck_assert_int_gt(ji(p, "bytes"), 0);
	ck_assert_int_eq(json_object_array_length(jget(p, "per_thread")), 3);
	json_object_put(doc);
	free(out);
	/* only node03's file (rank 2) is left in the shared directory */
	{
		char kd[PATH_MAX], f[PATH_MAX + 64];
		struct stat sb;

		kept_dir(kd, sizeof(kd));
		ck_assert_int_eq(count_entries(kd), 1);
		snprintf(f, sizeof(f), "%s/f.00000002", kd);
		ck_assert_int_eq(stat(f, &sb), 0);
	}
}
END_TEST

/* The controller stops (SIGSTOP: connections open but silent) mid-phase:
 * every agent aborts within the lease and removes its files.  Then a
 * killed controller (connections reset) gives the same. */
START_TEST(controller_gone_lease)
{
	char outf[PATH_MAX + 16];
	pid_t pid;
	int st, t;

	snprintf(outf, sizeof(outf), "%s/lease.out", h.tmp);
	pid = knobctl_bg(outf, "bench seq-write -w @all --dir %s --threads 4 "
	    "--size 1g --bs 1m --rate-iops 10 --lease 3", data);
	sleep(2);
	ck_assert_int_gt(count_entries(data), 0);	/* the phase is writing */
	kill(pid, SIGSTOP);
	t = wait_empty(3 + 4);
	ck_assert_msg(t >= 0, "files still there %d s after the controller went silent",
	    3 + 4);
	kill(pid, SIGKILL);
	kill(pid, SIGCONT);
	waitpid(pid, &st, 0);
	{
		char *log = NULL;
		ck_assert_int_eq(read_file_bounded(h.node[0].log, 8 << 20, &log, NULL), 0);
		ck_assert_ptr_nonnull(strstr(log, "lease expired"));
		free(log);
	}

	pid = knobctl_bg(outf, "bench md-create -w @all --dir %s --threads 4 "
	    "--files 100000 --rate-iops 50 --lease 30", data);
	sleep(2);
	ck_assert_int_gt(count_entries(data), 0);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	/* connection closed: no need to wait for the 30 s lease */
	ck_assert_msg(wait_empty(5) >= 0, "files left after the controller was killed");
}
END_TEST

/* Restart agent i with extra knobd arguments and a sysroot ("" none). */
static void
restart_agent(int i, const char *args, const char *root)
{
	harness_agent_stop(&h, i, SIGTERM);
	snprintf(h.node[i].extra_args, sizeof(h.node[i].extra_args), "%s", args);
	snprintf(h.node[i].sysroot, sizeof(h.node[i].sysroot), "%s", root);
	ck_assert_int_eq(harness_agent_start(&h, i), 0);
}

/* Agent i's log contains s. */
static int
log_has(int i, const char *s)
{
	char *log = NULL;
	int found;

	if (read_file_bounded(h.node[i].log, 16 << 20, &log, NULL) < 0)
		return 0;
	found = strstr(log, s) != NULL;
	free(log);
	return found;
}

/* Stonewall across nodes (IOR's wear-out): node02 runs at half the rate of
 * the others (test throttle, honoured because only node02 has
 * --test-hooks).  At the 1 s wall node02's threads have about half the
 * count of the others; all four nodes then run on to the largest count of
 * the whole phase, so every thread ends with that same count, and the
 * phase takes the wall plus node02's wear-out. */
START_TEST(stonewall_across_nodes)
{
	json_object *doc, *p, *thr, *sw;
	int64_t target, slow_wall = INT64_MAX, max_wall = 0;
	double el, expect;
	char *out = NULL, *run, line[128];
	int rc;

	restart_agent(1, "--test-hooks", "");
	doc = bench_json(&rc, "seq-write -w @all --dir %s --threads 8 --bs 4k --size 8m "
	    "--rate-iops 50 --test-rate-iops 25 --stonewall 1", data);
	ck_assert_int_eq(rc, 0);
	p = phase(doc, 0);
	ck_assert_str_eq(js(p, "status"), "ok");
	sw = jget(p, "stonewall");
	ck_assert(json_object_get_boolean(jget(sw, "across_nodes")));
	target = ji(sw, "target_ops");
	thr = jget(p, "per_thread");
	ck_assert_int_eq(json_object_array_length(thr), 8);
	for (size_t i = 0; i < 8; i++) {
		json_object *t = json_object_array_get_idx(thr, i);
		int64_t w = ji(t, "stonewall_ops");

		ck_assert_int_gt(w, 0);
		/* every thread on every node: the same count */
		ck_assert_int_eq(ji(t, "ops"), target);
		if (strcmp(js(t, "node"), "node02") == 0 && w < slow_wall)
			slow_wall = w;
		if (w > max_wall)
			max_wall = w;
	}
	/* ... which is the largest count at the wall */
	ck_assert_int_eq(target, max_wall);
	ck_assert_int_eq(ji(sw, "max_ops_at_wall"), max_wall);
	ck_assert_int_eq(ji(sw, "min_ops_at_wall"), slow_wall);
	ck_assert_int_eq(ji(p, "ops"), 8 * target);
	ck_assert_int_eq(ji(p, "bytes"), 8 * target * 4096);
	/* node02 was visibly behind at the wall */
	ck_assert_msg(slow_wall * 10 < max_wall * 7, "node02 %lld ops at the wall, others %lld",
	    (long long)slow_wall, (long long)max_wall);
	/* the phase: the 1 s wall, then node02 wears out at 25 ops/s */
	el = json_object_get_double(jget(p, "elapsed_s"));
	expect = 1.0 + (double)(target - slow_wall) / 25;
	ck_assert_msg(el > 1.5 && el > expect - 0.4 && el < expect + 0.6,
	    "phase took %.2f s, expected about %.2f s", el, expect);
	run = xstrdup(js(doc, "run_id"));
	json_object_put(doc);
	ck_assert_msg(count_entries(data) == 0, "files left behind in %s", data);
	/* the table says it */
	rc = harness_knobctl(&h, &out, NULL, "results show %s", run);
	ck_assert_int_eq(rc, 0);
	fprintf(stderr, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "stonewall 1 s across nodes"));
	snprintf(line, sizeof(line), "every thread ended with %lld ops", (long long)target);
	ck_assert_ptr_nonnull(strstr(out, line));
	free(out);
	free(run);
}
END_TEST

/* A node dies while the others wait at the stonewall for it: the phase
 * does not hang; the others get the largest count among them, end equal,
 * and the result is degraded, naming the dead node. */
START_TEST(stonewall_node_dies)
{
	char outf[PATH_MAX + 16], *out = NULL;
	json_object *doc, *p, *thr, *missing;
	int64_t target, max_wall = 0;
	uint64_t t_kill;
	pid_t pid;
	int st, i;

	restart_agent(1, "--test-hooks", "");
	snprintf(outf, sizeof(outf), "%s/swdie.json", h.tmp);
	/* node02 at 1 op/s reaches the 2 s wall only after its third op, at
	 * 3 s; the others are there at 2 s */
	pid = knobctl_bg(outf, "--json bench seq-write -w @all --dir %s --threads 8 "
	    "--bs 4k --size 8m --rate-iops 50 --test-rate-iops 1 --stonewall 2", data);
	for (i = 0; i < 100 && !log_has(0, "at the stonewall"); i++)
		usleep(50000);
	ck_assert_msg(log_has(0, "at the stonewall"), "node01 never reached the stonewall");
	ck_assert(!log_has(0, "wearing out"));		/* it waits for node02 */
	t_kill = now_mono_ns();
	harness_agent_stop(&h, 1, SIGKILL);		/* node02 */
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(now_mono_ns() - t_kill < 3000000000ull, "knobctl took %.1f s after the kill",
	    (double)(now_mono_ns() - t_kill) / 1e9);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 1);
	ck_assert(log_has(0, "wearing out"));
	ck_assert_int_eq(read_file_bounded(outf, 1 << 24, &out, NULL), 0);
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "not JSON: %s", out);
	p = phase(doc, 0);
	ck_assert_str_eq(js(p, "status"), "degraded");
	missing = jget(p, "missing");
	ck_assert_int_eq(json_object_array_length(missing), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(missing, 0)), "node02");
	target = ji(jget(p, "stonewall"), "target_ops");
	thr = jget(p, "per_thread");
	ck_assert_int_eq(json_object_array_length(thr), 6);
	for (size_t k = 0; k < 6; k++) {
		json_object *t = json_object_array_get_idx(thr, k);

		if (ji(t, "stonewall_ops") > max_wall)
			max_wall = ji(t, "stonewall_ops");
		ck_assert_int_eq(ji(t, "ops"), target);
	}
	ck_assert_int_eq(target, max_wall);
	json_object_put(doc);
	free(out);
}
END_TEST

/* The controller goes silent (SIGSTOP) while the agents wait at the
 * stonewall for the wear-out target: the lease still runs, every agent
 * aborts and removes its files. */
START_TEST(stonewall_controller_silent)
{
	char outf[PATH_MAX + 16];
	pid_t pid;
	int st, i, t;

	restart_agent(1, "--test-hooks", "");
	snprintf(outf, sizeof(outf), "%s/swlease.out", h.tmp);
	pid = knobctl_bg(outf, "bench seq-write -w @all --dir %s --threads 4 --bs 4k "
	    "--size 8m --rate-iops 50 --test-rate-iops 1 --stonewall 1 --lease 2", data);
	for (i = 0; i < 100 && !log_has(0, "at the stonewall"); i++)
		usleep(50000);
	ck_assert_msg(log_has(0, "at the stonewall"), "node01 never reached the stonewall");
	kill(pid, SIGSTOP);
	ck_assert_int_gt(count_entries(data), 0);
	t = wait_empty(2 + 3);
	ck_assert_msg(t >= 0, "files still there 5 s after the controller went silent");
	for (i = 0; i < 4; i++)
		ck_assert_msg(log_has(i, "lease expired"), "node%02d did not see the lease expire",
		    i + 1);
	ck_assert(!log_has(0, "wearing out"));
	kill(pid, SIGKILL);
	kill(pid, SIGCONT);
	waitpid(pid, &st, 0);
}
END_TEST

/* Put text in root/rel (parents created) with mode. */
static void
put_file(const char *root, const char *rel, const char *text, mode_t mode)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	ck_assert_int_eq(harness_sh("mkdir -p \"$(dirname '%s')\"", path), 0);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
}

/* The cache warning uses the larger of RAM and the GPFS pagepool.  There
 * is no GPFS here: node01 gets a --sysroot with a stand-in mmdiag (and the
 * mmchconfig the gpfs driver also looks for) reporting a 4 GiB pagepool,
 * and a fake /proc/meminfo of 1 GiB; node02 a sysroot with 2 GiB of RAM
 * and no GPFS.  The read phase warns about node01's pagepool and node02's
 * RAM; mmdiag runs once, for the read phase only. */
START_TEST(cache_warning_pagepool)
{
	char r1[PATH_MAX], r2[PATH_MAX], body[PATH_MAX + 512], calls[PATH_MAX], *log = NULL;
	json_object *doc, *p, *w, *nd;
	int rc, pp = 0, ram = 0;

	snprintf(r1, sizeof(r1), "%s/root1", h.tmp);
	snprintf(r2, sizeof(r2), "%s/root2", h.tmp);
	snprintf(calls, sizeof(calls), "%s/mmdiag.calls", h.tmp);
	snprintf(body, sizeof(body), "#!/bin/sh\n# stand-in for mmdiag (no GPFS here)\n"
	    "echo \"$*\" >> '%s'\n[ \"$1\" = --config ] || exit 2\n"
	    "echo '=== mmdiag: config ==='\necho ' ! maxMBpS 2048'\n"
	    "echo ' ! pagepool 4294967296'\n", calls);
	put_file(r1, "/usr/lpp/mmfs/bin/mmdiag", body, 0755);
	put_file(r1, "/usr/lpp/mmfs/bin/mmchconfig", "#!/bin/sh\nexit 1\n", 0755);
	put_file(r1, "/proc/meminfo", "MemTotal:        1048576 kB\nMemFree:  1000 kB\n", 0644);
	put_file(r2, "/proc/meminfo", "MemTotal:        2097152 kB\n", 0644);
	restart_agent(0, "", r1);
	restart_agent(1, "", r2);
	doc = bench_json(&rc, "seq -w @all --dir %s --threads 4 --size 4m", data);
	ck_assert_int_eq(rc, 0);
	/* the write phase reads nothing: no cache warning */
	ck_assert_int_eq(json_object_array_length(jget(phase(doc, 0), "warnings")), 0);
	p = phase(doc, 1);
	ck_assert_str_eq(js(p, "kind"), "seq-read");
	w = jget(p, "warnings");
	for (size_t i = 0; i < json_object_array_length(w); i++) {
		const char *t = json_object_get_string(json_object_array_get_idx(w, i));

		if (strcmp(t, "node01: reads 4.0 MiB per node, under twice the node's GPFS "
		    "pagepool (4.00 GiB; RAM 1.00 GiB): this measures the GPFS cache") == 0)
			pp++;
		else if (strcmp(t, "node02: reads 4.0 MiB per node, under twice the node's RAM "
		    "(2.00 GiB): this measures the page cache") == 0)
			ram++;
		else
			ck_assert_msg(strncmp(t, "node[03-04]: reads 4.0 MiB per node, under twice "
			    "the node's RAM", 60) == 0, "unexpected warning: %s", t);
	}
	ck_assert_int_eq(pp, 1);
	ck_assert_int_eq(ram, 1);
	nd = json_object_array_get_idx(jget(p, "per_node"), 0);
	ck_assert_str_eq(js(nd, "node"), "node01");
	ck_assert_int_eq(ji(nd, "gpfs_pagepool_bytes"), 4ll << 30);
	json_object_put(doc);
	ck_assert_msg(count_entries(data) == 0, "files left behind in %s", data);
	/* mmdiag ran once (read phase), as "mmdiag --config" */
	ck_assert_int_eq(read_file_bounded(calls, 4096, &log, NULL), 0);
	ck_assert_str_eq(log, "--config\n");
	free(log);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("bench_net");
	TCase *tc = tcase_create("net");
	SRunner *sr;
	int nf;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, nn_write_read);
	tcase_add_test(tc, n1_shared_write_read);
	tcase_add_test(tc, placement);
	tcase_add_test(tc, md_sweep);
	tcase_add_test(tc, measure_options);
	tcase_add_test(tc, agent_killed_degraded);
	tcase_add_test(tc, controller_gone_lease);
	tcase_add_test(tc, stonewall_across_nodes);
	tcase_add_test(tc, stonewall_node_dies);
	tcase_add_test(tc, stonewall_controller_silent);
	tcase_add_test(tc, cache_warning_pagepool);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
