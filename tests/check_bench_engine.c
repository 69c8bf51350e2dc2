/* The benchmark engine in-process on a temp directory: N-to-N and N-to-1
 * write then read (bytes, file sizes and the stamped content checked, files
 * removed), reader shift, a metadata sweep, stonewall wear-out, drop caches
 * through a fake sysroot, ENOSPC on a tiny tmpfs the test mounts, and the
 * path-safety refusals (system paths, a symlinked work directory). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "bench.h"
#include "log.h"
#include "util.h"

static char tmp[PATH_MAX];
static char small[PATH_MAX];	/* tiny tmpfs mount point, "" when not mounted */

/* Unmount the test's tmpfs and remove the temp dir; also run at exit,
 * since a failed check ends the test's process without the teardown. */
static void
teardown(void)
{
	char cmd[PATH_MAX + 32];

	if (small[0])
		umount2(small, MNT_DETACH);
	small[0] = '\0';
	if (tmp[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "cleanup of %s failed\n", tmp);
	}
	tmp[0] = '\0';
}

static void
setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/knob-engine.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	small[0] = '\0';
	atexit(teardown);
}

/* A params block for kind on dir with the given ranks. */
static void
mkparams(struct bench_params *p, const char *kind, const char *dir, const char *wid,
    const uint32_t *ranks, size_t n, uint32_t total)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->phase_id, sizeof(p->phase_id), "%s-%s", wid, kind);
	snprintf(p->workdir_id, sizeof(p->workdir_id), "%s", wid);
	p->kind = bench_kind_parse(kind);
	ck_assert_int_ge(p->kind, 0);
	snprintf(p->dir, sizeof(p->dir), "%s", dir);
	p->ranks = calloc(n, sizeof(*p->ranks));
	memcpy(p->ranks, ranks, n * sizeof(*ranks));
	p->nranks = n;
	p->threads_total = total;
	p->bs = 64 << 10;
	p->file_size = 1 << 20;
	p->files_per_dir = 32;
	p->md_files = 100;
	p->seed = 42;
	p->ext_args = calloc(1, sizeof(char *));
	p->hosts = calloc(1, sizeof(char *));
	p->host_slots = calloc(1, sizeof(uint32_t));
}

/* Run a params block to completion; returns the job (caller frees). */
static struct bench_job *
run(struct bench_params *p, int expect_ok)
{
	struct bench_job *j = bench_job_new(p, "testnode");
	int rc = bench_job_run(j);

	if (expect_ok)
		ck_assert_msg(rc == 0, "job failed: %s", j->err);
	return j;
}

static uint64_t
job_bytes(struct bench_job *j)
{
	uint64_t b = 0;

	for (size_t i = 0; i < j->nth; i++)
		b += atomic_load(&j->th[i].bytes);
	return b;
}

/* Check every block of path at [off, off+len) carries rank's stamp and the
 * fixed pattern after it. */
static void
check_content(const char *path, uint64_t off, uint64_t len, uint64_t bs, uint32_t rank)
{
	uint8_t *b = malloc(bs);
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	for (uint64_t o = off; o < off + len; o += bs) {
		uint32_t magic, r;
		uint64_t fo;

		ck_assert_int_eq(pread(fd, b, bs, (off_t)o), (ssize_t)bs);
		memcpy(&magic, b, 4);
		memcpy(&r, b + 4, 4);
		memcpy(&fo, b + 8, 8);
		ck_assert_uint_eq(magic, BENCH_MAGIC);
		ck_assert_uint_eq(r, rank);
		ck_assert_uint_eq(fo, o);
		for (size_t i = 16; i < bs; i += 997)
			ck_assert_uint_eq(b[i], (uint8_t)(i * 7 + 13));
	}
	close(fd);
	free(b);
}

static int
dir_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

START_TEST(t_nn_write_read)
{
	uint32_t ranks[] = { 0, 1, 2 };
	struct bench_params p;
	struct bench_job *j;
	char path[PATH_MAX + 64];
	struct stat st;

	mkparams(&p, "seq-write", tmp, "nn1", ranks, 3, 3);
	p.keep_files = 1;
	p.fsync = 1;
	j = run(&p, 1);
	ck_assert_uint_eq(job_bytes(j), 3u << 20);
	for (uint32_t r = 0; r < 3; r++) {
		snprintf(path, sizeof(path), "%s/knob.nn1/f.%08u", tmp, r);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_uint_eq((uint64_t)st.st_size, 1u << 20);
		check_content(path, 0, 1 << 20, 64 << 10, r);
		ck_assert_uint_eq(atomic_load(&j->th[r].ops), 16);
		ck_assert_uint_gt(j->th[r].end_ns, j->th[r].start_ns);
		ck_assert_uint_eq(j->th[r].lat->total, 16);
	}
	bench_job_free(j);

	mkparams(&p, "seq-read", tmp, "nn1", ranks, 3, 3);
	j = run(&p, 1);
	ck_assert_uint_eq(job_bytes(j), 3u << 20);
	ck_assert_int_eq(bench_job_cleanup(j), 0);
	bench_job_free(j);
	snprintf(path, sizeof(path), "%s/knob.nn1", tmp);
	ck_assert_msg(!dir_exists(path), "work directory left behind");
}
END_TEST

/* Two "nodes" (jobs) write disjoint segments of one shared file at once,
 * then read with reader shift 1 (each rank reads its neighbour's segment). */
START_TEST(t_n1_shared)
{
	uint32_t ra[] = { 0, 2 }, rb[] = { 1, 3 };
	struct bench_params pa, pb;
	struct bench_job *ja, *jb;
	char path[PATH_MAX + 64];
	struct stat st;

	mkparams(&pa, "seq-write", tmp, "n1", ra, 2, 4);
	mkparams(&pb, "seq-write", tmp, "n1", rb, 2, 4);
	pa.shared = pb.shared = 1;
	pa.keep_files = pb.keep_files = 1;
	ja = bench_job_new(&pa, "nodeA");
	jb = bench_job_new(&pb, "nodeB");
	ck_assert_int_eq(bench_job_prepare(ja), 0);
	ck_assert_int_eq(bench_job_prepare(jb), 0);
	bench_job_go(ja);
	bench_job_go(jb);
	while (!bench_job_wait(ja, 1000) || !bench_job_wait(jb, 1000))
		;
	bench_job_join(ja);
	bench_job_join(jb);
	ck_assert_uint_eq(job_bytes(ja) + job_bytes(jb), 4u << 20);
	snprintf(path, sizeof(path), "%s/knob.n1/shared", tmp);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 4u << 20);
	for (uint32_t r = 0; r < 4; r++)
		check_content(path, (uint64_t)r << 20, 1 << 20, 64 << 10, r);
	bench_job_free(ja);
	bench_job_free(jb);

	mkparams(&pa, "seq-read", tmp, "n1", ra, 2, 4);
	mkparams(&pb, "seq-read", tmp, "n1", rb, 2, 4);
	pa.shared = pb.shared = 1;
	pa.reader_shift = pb.reader_shift = 1;
	ja = run(&pa, 1);
	jb = run(&pb, 1);
	ck_assert_uint_eq(job_bytes(ja) + job_bytes(jb), 4u << 20);
	bench_job_cleanup(ja);
	bench_job_cleanup(jb);
	bench_job_free(ja);
	bench_job_free(jb);
	snprintf(path, sizeof(path), "%s/knob.n1", tmp);
	ck_assert(!dir_exists(path));
}
END_TEST

/* A read of data some other writer corrupted is an error, not a number. */
START_TEST(t_read_detects_wrong_data)
{
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_job *j;
	char path[PATH_MAX + 64];
	int fd;

	mkparams(&p, "seq-write", tmp, "bad", ranks, 1, 1);
	p.keep_files = 1;
	bench_job_free(run(&p, 1));
	snprintf(path, sizeof(path), "%s/knob.bad/f.00000000", tmp);
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "garbage!garbage!", 16, 128 << 10), 16);
	close(fd);
	mkparams(&p, "seq-read", tmp, "bad", ranks, 1, 1);
	j = run(&p, 0);
	ck_assert_ptr_nonnull(strstr(j->th[0].err, "data mismatch"));
	bench_job_cleanup(j);
	bench_job_free(j);
}
END_TEST

START_TEST(t_random_and_memwarn)
{
	uint32_t ranks[] = { 0, 1 };
	struct bench_params p;
	struct bench_job *j;

	/* standalone rand-read: prepare prefills */
	mkparams(&p, "rand-read", tmp, "rnd", ranks, 2, 2);
	p.bs = 4096;
	p.file_size = 1 << 20;
	j = run(&p, 1);
	ck_assert_uint_eq(atomic_load(&j->th[0].ops) + atomic_load(&j->th[1].ops), 512);
	ck_assert_uint_eq(job_bytes(j), 2u << 20);
	/* the data read on this node goes to the controller, which compares
	 * it with RAM and the GPFS pagepool (check_bench_unit, check_bench_net) */
	ck_assert_uint_eq(j->read_bytes, 2u << 20);
	ck_assert_uint_gt(j->mem_total_kb, 0);
	ck_assert_str_eq(j->warning, "");
	bench_job_cleanup(j);
	bench_job_free(j);
	mkparams(&p, "rand-write", tmp, "rnd", ranks, 2, 2);
	p.bs = 4096;
	j = run(&p, 1);
	ck_assert_uint_eq(job_bytes(j), 2u << 20);
	ck_assert_uint_eq(j->read_bytes, 0);
	ck_assert_str_eq(j->warning, "");
	bench_job_cleanup(j);
	bench_job_free(j);
}
END_TEST

START_TEST(t_md_sweep)
{
	static const char *const ks[] = { "md-create", "md-stat", "md-read", "md-remove" };
	uint32_t ranks[] = { 0, 1 };
	struct bench_params p;
	struct bench_job *j;
	char path[PATH_MAX + 64];
	struct stat st;

	for (size_t k = 0; k < 4; k++) {
		mkparams(&p, ks[k], tmp, "md", ranks, 2, 2);
		p.md_write_size = 3000;
		p.keep_files = k < 3;
		j = run(&p, 1);
		ck_assert_uint_eq(atomic_load(&j->th[0].ops), 100);
		ck_assert_uint_eq(atomic_load(&j->th[1].ops), 100);
		if (k == 0 || k == 2)
			ck_assert_uint_eq(job_bytes(j), 2 * 100 * 3000);
		if (k == 0) {
			/* 100 files at 32 per directory: s.0 .. s.3 */
			snprintf(path, sizeof(path), "%s/knob.md/d.00000001/s.3/f.99", tmp);
			ck_assert_int_eq(stat(path, &st), 0);
			ck_assert_uint_eq((uint64_t)st.st_size, 3000);
		}
		if (k == 3) {
			snprintf(path, sizeof(path), "%s/knob.md/d.00000000/s.0/f.0", tmp);
			ck_assert(!dir_exists(path));
			bench_job_cleanup(j);
		}
		bench_job_free(j);
	}
	snprintf(path, sizeof(path), "%s/knob.md", tmp);
	ck_assert(!dir_exists(path));
}
END_TEST

/* Stonewall at 1 s with a throttled thread: both stop near the wall and
 * wear out to the same count; nowhere near the 50 s the full file takes. */
START_TEST(t_stonewall_wearout)
{
	uint32_t ranks[] = { 0, 1 };
	struct bench_params p;
	struct bench_job *j;
	uint64_t t0 = now_mono_ns();

	mkparams(&p, "rand-write", tmp, "sw", ranks, 2, 2);
	p.bs = 4096;
	p.file_size = 4096 * 5000;
	p.rate_iops = 100;
	p.stonewall_s = 1;
	j = run(&p, 1);
	ck_assert_uint_lt(now_mono_ns() - t0, 8000000000ull);
	ck_assert_uint_gt(j->th[0].stonewall_ops, 0);
	ck_assert_uint_eq(atomic_load(&j->th[0].ops), atomic_load(&j->th[1].ops));
	ck_assert_uint_lt(atomic_load(&j->th[0].ops), 5000);
	bench_job_cleanup(j);
	bench_job_free(j);
}
END_TEST

/* Stonewall with wall_sync, two jobs standing for two nodes of different
 * speed (100 and 40 ops/s per thread), the test playing the controller:
 * each job reports at the wall once, the test sends both the larger count,
 * and every thread of both ends with exactly that count.  Without the
 * global target each job would wear out to its own maximum. */
START_TEST(t_stonewall_sync)
{
	uint32_t ra[] = { 0, 2 }, rb[] = { 1, 3 };
	struct bench_params pa, pb;
	struct bench_job *ja, *jb, *js[2];
	uint64_t t0, target = 0, maxwall = 0, wallb = 0, el;
	int done[2] = { 0, 0 }, walls[2] = { 0, 0 }, released = 0;
	size_t i, k;

	mkparams(&pa, "seq-write", tmp, "ssy", ra, 2, 4);
	mkparams(&pb, "seq-write", tmp, "ssy", rb, 2, 4);
	pa.bs = pb.bs = 4096;
	pa.file_size = pb.file_size = 4096 * 1000;
	pa.stonewall_s = pb.stonewall_s = 1;
	pa.rate_iops = 100;
	pb.rate_iops = 40;
	js[0] = ja = bench_job_new(&pa, "nodeA");
	js[1] = jb = bench_job_new(&pb, "nodeB");
	ja->wall_sync = jb->wall_sync = 1;
	ck_assert_int_eq(bench_job_prepare(ja), 0);
	ck_assert_int_eq(bench_job_prepare(jb), 0);
	t0 = now_mono_ns();
	bench_job_go(ja);
	bench_job_go(jb);
	while (!done[0] || !done[1]) {
		for (i = 0; i < 2; i++) {
			int r;

			if (done[i])
				continue;
			r = bench_job_wait(js[i], 20);
			if (r == BJ_WALL) {
				ck_assert_int_eq(walls[i], 0);	/* reported once */
				walls[i] = 1;
				if (bench_job_wall_max(js[i]) > target)
					target = bench_job_wall_max(js[i]);
			} else if (r == BJ_DONE) {
				ck_assert_msg(released, "job finished before the global target");
				done[i] = 1;
			}
		}
		if (walls[0] && walls[1] && !released) {
			/* the threads wait for the target: nobody went past the wall */
			usleep(200000);
			for (i = 0; i < 2; i++)
				for (k = 0; k < 2; k++)
					ck_assert_uint_eq(atomic_load(&js[i]->th[k].ops),
					    js[i]->th[k].stonewall_ops);
			bench_job_wearout(ja, target);
			bench_job_wearout(jb, target);
			released = 1;
		}
	}
	el = now_mono_ns() - t0;
	bench_job_join(ja);
	bench_job_join(jb);
	for (i = 0; i < 2; i++)
		for (k = 0; k < 2; k++) {
			ck_assert_uint_gt(js[i]->th[k].stonewall_ops, 0);
			if (js[i]->th[k].stonewall_ops > maxwall)
				maxwall = js[i]->th[k].stonewall_ops;
		}
	wallb = jb->th[0].stonewall_ops;
	ck_assert_uint_eq(target, maxwall);
	/* the slow node really was behind at the wall ... */
	ck_assert_uint_lt(wallb * 3, maxwall * 2);
	/* ... and every thread of both ended with the same count */
	for (i = 0; i < 2; i++)
		for (k = 0; k < 2; k++) {
			ck_assert_uint_eq(atomic_load(&js[i]->th[k].ops), target);
			ck_assert(!js[i]->th[k].failed);
		}
	/* the wall (1 s) plus the slow node's wear-out at 40/s (its throttle
	 * keeps its schedule, so it makes up the test's 0.2 s pause) */
	{
		uint64_t expect = 1000000000ull + (target - wallb) * 1000000000ull / 40;

		ck_assert_msg(el > expect * 8 / 10 && el < expect + 1000000000ull,
		    "took %.2f s, expected about %.2f s", (double)el / 1e9, (double)expect / 1e9);
	}
	bench_job_cleanup(ja);
	bench_job_cleanup(jb);
	bench_job_free(ja);
	bench_job_free(jb);
}
END_TEST

START_TEST(t_drop_caches_sysroot)
{
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_job *j;
	char root[PATH_MAX + 16], f[PATH_MAX + 64], buf[16];

	snprintf(root, sizeof(root), "%s/root", tmp);
	snprintf(f, sizeof(f), "mkdir -p %s/proc/sys/vm && : > %s/proc/sys/vm/drop_caches",
	    root, root);
	ck_assert_int_eq(system(f), 0);
	mkparams(&p, "seq-read", tmp, "dc", ranks, 1, 1);
	snprintf(p.sysroot, sizeof(p.sysroot), "%s", root);
	p.drop_caches = 1;
	j = run(&p, 1);
	snprintf(f, sizeof(f), "%s/proc/sys/vm/drop_caches", root);
	ck_assert_int_eq(read_small_file(f, buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "3");
	bench_job_cleanup(j);
	bench_job_free(j);
}
END_TEST

/* A 1 MiB tmpfs and 4 MiB to write: a clear ENOSPC error and clean-up. */
START_TEST(t_enospc)
{
	uint32_t ranks[] = { 0, 1 };
	struct bench_params p;
	struct bench_job *j;
	char path[PATH_MAX + 64];

	snprintf(small, sizeof(small), "%s/small", tmp);
	ck_assert_int_eq(mkdir(small, 0755), 0);
	ck_assert_msg(mount("knobtest", small, "tmpfs", 0, "size=1m") == 0, "mount: %s",
	    strerror(errno));
	mkparams(&p, "seq-write", small, "full", ranks, 2, 2);
	p.file_size = 4 << 20;
	j = run(&p, 0);
	ck_assert(j->th[0].failed || j->th[1].failed);
	ck_assert_msg(strstr(j->th[0].err, "No space left on device") ||
	    strstr(j->th[1].err, "No space left on device"), "errors: '%s' '%s'",
	    j->th[0].err, j->th[1].err);
	ck_assert_ptr_nonnull(strstr(j->th[j->th[0].failed ? 0 : 1].err, "testnode"));
	{
		Knob__PhaseResult r;

		bench_job_result(j, &r);
		ck_assert(!r.ok);
		ck_assert_ptr_nonnull(strstr(r.error, "No space left"));
		bench_result_free(&r);
	}
	ck_assert_int_eq(bench_job_cleanup(j), 0);
	bench_job_free(j);
	snprintf(path, sizeof(path), "%s/knob.full", small);
	ck_assert(!dir_exists(path));
}
END_TEST

START_TEST(t_path_safety)
{
	static const char *const bad[] = { "/", "/etc", "/etc/knob", "/usr", "/usr/local/x",
	    "/proc", "/sys/kernel", "/dev/shm", "/boot", "/var/lib", "/var/lib/knob", "/run",
	    "/home", "/tmp", "relative/dir", "/tmp/../etc" };
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_job *j;
	char err[256], victim[PATH_MAX + 16], link[PATH_MAX + 16], f[PATH_MAX + 32];
	Knob__PhaseSpec s = KNOB__PHASE_SPEC__INIT;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(bench_check_dir(bad[i], err, sizeof(err)) < 0, "%s accepted", bad[i]);
	ck_assert_int_eq(bench_check_dir("/tmp/scratch", err, sizeof(err)), 0);
	ck_assert_int_eq(bench_check_dir("/lustre/scratch/u1", err, sizeof(err)), 0);
	ck_assert_int_eq(bench_check_id("ok-1.2_3"), 0);
	ck_assert_int_eq(bench_check_id("../x"), -1);
	ck_assert_int_eq(bench_check_id("a/b"), -1);
	ck_assert_int_eq(bench_check_id(""), -1);
	ck_assert_int_eq(bench_check_id(".hidden"), -1);

	/* a spec with a bad id or a system directory never gets to the engine */
	s.phase_id = (char *)(uintptr_t)"../../etc";
	s.kind = (char *)(uintptr_t)"seq-write";
	s.dir = (char *)(uintptr_t)"/tmp/x";
	s.threads_total = 1;
	ck_assert_int_eq(bench_params_from_spec(&p, &s, "", err, sizeof(err)), -1);
	mkparams(&p, "seq-write", "/etc", "sys", ranks, 1, 1);
	j = run(&p, 0);
	ck_assert_ptr_nonnull(strstr(j->err, "refusing a system path"));
	bench_job_free(j);

	/* knob.<id> planted as a symlink to another directory: refused, the
	 * target untouched */
	snprintf(victim, sizeof(victim), "%s/victim", tmp);
	ck_assert_int_eq(mkdir(victim, 0755), 0);
	snprintf(f, sizeof(f), "%s/keep", victim);
	ck_assert_int_eq(close(open(f, O_CREAT | O_WRONLY, 0644)), 0);
	snprintf(link, sizeof(link), "%s/knob.evil", tmp);
	ck_assert_int_eq(symlink(victim, link), 0);
	mkparams(&p, "seq-write", tmp, "evil", ranks, 1, 1);
	j = run(&p, 0);
	ck_assert_ptr_nonnull(strstr(j->err, "refused"));
	bench_job_cleanup(j);
	bench_job_free(j);
	ck_assert(dir_exists(f));
	ck_assert(dir_exists(link));
}
END_TEST

/* fio for real: an external phase in the engine, JSON parsed, files gone. */
START_TEST(t_fio_external)
{
	uint32_t ranks[] = { 0, 1 };
	struct bench_params p;
	struct bench_job *j;
	char path[PATH_MAX + 64];

	mkparams(&p, "fio", tmp, "fio", ranks, 2, 2);
	free(p.ext_args);
	p.ext_args = calloc(5, sizeof(char *));
	p.ext_args[0] = strdup("--rw=write");
	p.ext_args[1] = strdup("--bs=64k");
	p.ext_args[2] = strdup("--size=1m");
	p.ext_args[3] = strdup("--ioengine=psync");
	p.next_args = 4;
	j = run(&p, 1);
	ck_assert_ptr_nonnull(j->ext);
	ck_assert_uint_eq(j->ext->n, 1);
	ck_assert_str_eq(j->ext->op[0].op, "write");
	ck_assert_uint_eq(j->ext->op[0].bytes, 2u << 20);	/* --numjobs=2 from the ranks */
	ck_assert_uint_eq(j->ext->op[0].ops, 32);
	ck_assert(j->ext->op[0].bw_bytes > 0);
	ck_assert_uint_ge(j->ext_end_ns, j->ext_start_ns);
	{
		Knob__PhaseResult r;

		bench_job_result(j, &r);
		ck_assert(r.ok);
		ck_assert_uint_eq(r.bytes, 2u << 20);
		ck_assert_uint_eq(r.n_ext_ops, 1);
		ck_assert_ptr_nonnull(strstr(r.ext_output, "\"jobs\""));
		bench_result_free(&r);
	}
	ck_assert_int_eq(bench_job_cleanup(j), 0);
	bench_job_free(j);
	snprintf(path, sizeof(path), "%s/knob.fio", tmp);
	ck_assert(!dir_exists(path));
}
END_TEST

/* ior under mpirun: OpenMPI and ior are not installed here, so stand-in
 * mpirun/ior scripts in a PATH the test makes record their arguments and
 * print real ior output (tests/fixtures/ior). */
START_TEST(t_ior_standin)
{
	uint32_t ranks[] = { 0, 1, 2 };
	struct bench_params p;
	struct bench_job *j;
	char bin[PATH_MAX + 16], cmd[3 * PATH_MAX], args[PATH_MAX + 32], *buf = NULL;
	char src[] = __FILE__;
	const char *oldpath = getenv("PATH");
	char *newpath, cwd[PATH_MAX];

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	snprintf(bin, sizeof(bin), "%s/bin", tmp);
	snprintf(args, sizeof(args), "%s/args", tmp);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && printf '#!/bin/sh\\necho \"$@\" > %s\\n"
	    "cp \"$3\" %s.hostfile\\ncat %s/%s/fixtures/ior/ior-nn-write-read.txt\\n' > %s/mpirun && "
	    "printf '#!/bin/sh\\nexit 0\\n' > %s/ior && chmod +x %s/mpirun %s/ior",
	    bin, args, args, cwd, dirname(src), bin, bin, bin, bin);
	ck_assert_int_eq(system(cmd), 0);
	newpath = xasprintf("%s:%s", bin, oldpath ? oldpath : "/usr/bin:/bin");
	setenv("PATH", newpath, 1);
	free(newpath);

	mkparams(&p, "ior", tmp, "ior", ranks, 3, 5);
	free(p.ext_args);
	p.ext_args = calloc(3, sizeof(char *));
	p.ext_args[0] = strdup("-t");
	p.ext_args[1] = strdup("1m");
	p.next_args = 2;
	free(p.hosts);
	free(p.host_slots);
	p.hosts = calloc(3, sizeof(char *));
	p.hosts[0] = strdup("node01");
	p.hosts[1] = strdup("node02");
	p.host_slots = calloc(3, sizeof(uint32_t));
	p.host_slots[0] = 3;
	p.host_slots[1] = 2;
	p.nhosts = 2;
	p.node_index = 0;
	j = run(&p, 1);
	ck_assert_uint_eq(j->ext->n, 2);
	ck_assert_str_eq(j->ext->op[0].op, "write");
	ck_assert_double_eq_tol(j->ext->op[0].bw_bytes, 1038.96 * 1048576, 1);
	ck_assert_int_eq(read_file_bounded(args, 4096, &buf, NULL), 0);
	ck_assert_ptr_nonnull(strstr(buf, "--allow-run-as-root --hostfile "));
	ck_assert_ptr_nonnull(strstr(buf, "-np 5 ior -t 1m -o "));
	free(buf);
	snprintf(cmd, sizeof(cmd), "%s.hostfile", args);
	ck_assert_int_eq(read_file_bounded(cmd, 4096, &buf, NULL), 0);
	ck_assert_str_eq(buf, "node01 slots=3\nnode02 slots=2\n");
	free(buf);
	bench_job_cleanup(j);
	bench_job_free(j);

	/* a node other than the first only takes part */
	mkparams(&p, "ior", tmp, "ior2", ranks, 1, 5);
	p.node_index = 1;
	j = run(&p, 1);
	ck_assert_ptr_null(j->ext);
	bench_job_cleanup(j);
	bench_job_free(j);
	if (oldpath)
		setenv("PATH", oldpath, 1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("bench_engine");
	TCase *tc = tcase_create("engine");
	SRunner *sr;
	int nf;

	log_init("check_bench_engine", LOG_LVL_WARN);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, t_nn_write_read);
	tcase_add_test(tc, t_n1_shared);
	tcase_add_test(tc, t_read_detects_wrong_data);
	tcase_add_test(tc, t_random_and_memwarn);
	tcase_add_test(tc, t_md_sweep);
	tcase_add_test(tc, t_stonewall_wearout);
	tcase_add_test(tc, t_stonewall_sync);
	tcase_add_test(tc, t_drop_caches_sysroot);
	tcase_add_test(tc, t_enospc);
	tcase_add_test(tc, t_path_safety);
	tcase_add_test(tc, t_fio_external);
	tcase_add_test(tc, t_ior_standin);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
