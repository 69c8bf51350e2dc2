/* Benchmark phases end to end: four knobd agents in network namespaces
 * (tests/harness.h), knobctl in the controller namespace.  The namespaces
 * share the host file system, so every agent works in one temp directory,
 * like clients of one parallel file system. */
#include <check.h>
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
	char *out = NULL, *err = NULL, *args;
	json_object *doc;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&args, fmt, ap) < 0)
		args = NULL;
	va_end(ap);
	ck_assert_ptr_nonnull(args);
	*rc = harness_knobctl(&h, &out, &err, "--json bench %s", args);
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "not JSON (rc %d): %s\nstderr: %s", *rc, out, err);
	if (*rc != 0)
		fprintf(stderr, "knobctl bench %s: exit %d\n%s\n", args, *rc, out);
	free(out);
	free(err);
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
	ck_assert_msg(wait_empty(5) >= 0, "files left behind in %s", data);

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
	ck_assert_msg(wait_empty(5) >= 0, "files left behind in %s", data);

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
	ck_assert_msg(wait_empty(5) >= 0, "files left behind in %s", data);

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
	ck_assert_msg(wait_empty(5) >= 0, "fio files left behind in %s", data);
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
	ck_assert_msg(wait_empty(5) >= 0, "files left behind in %s", data);
	rc = harness_knobctl(&h, &out, NULL, "results show %s", run);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "md-remove"));
	free(out);
	rc = harness_knobctl(&h, &out, NULL, "results compare %s %s", run, run);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "+0.0%"));
	free(out);
	free(run);
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
		for (int i = 0; i < 50 && count_entries(kd) > 1; i++)
			usleep(100000);
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
	tcase_add_test(tc, agent_killed_degraded);
	tcase_add_test(tc, controller_gone_lease);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
