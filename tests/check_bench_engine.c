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
#include <liburing.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/stat.h>

#include "testutil.h"
#include "bench.h"
#include "log.h"
#include "util.h"

static char tmp[PATH_MAX];
static char small[PATH_MAX];	/* tiny tmpfs mount point, "" when not mounted */

/* Unmount the test's tmpfs and remove the temp dir (a failed check ends
 * the test's process without it: the dir is under cu_base, whose
 * unchecked teardown in the runner unmounts and removes what is left). */
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
	cu_subdir(tmp, sizeof(tmp), "engine");
	small[0] = '\0';
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

/* Check every block of path at [off, off+len) is rank's, every byte (its
 * stamps, and the pool bytes of seed 42 for that offset). */
static void
check_content(const char *path, uint64_t off, uint64_t len, uint64_t bs, uint32_t rank)
{
	uint8_t *b = malloc(bs);
	int fd = open(path, O_RDONLY);
	struct bench_pool pool;

	ck_assert_int_eq(bench_pool_init(&pool, 42, 0, bs, bs, 1), 0);
	ck_assert_int_ge(fd, 0);
	for (uint64_t o = off; o < off + len; o += bs) {
		uint32_t magic, r;
		uint64_t fo;

		ck_assert_int_eq(pread(fd, b, bs, (off_t)o), (ssize_t)bs);
		/* a stamp at every 4 KiB: no two 4 KiB chunks of any file are equal */
		for (uint64_t k = 0; k + 16 <= bs; k += 4096) {
			memcpy(&magic, b + k, 4);
			memcpy(&r, b + k + 4, 4);
			memcpy(&fo, b + k + 8, 8);
			ck_assert_uint_eq(magic, BENCH_MAGIC);
			ck_assert_uint_eq(r, rank);
			ck_assert_uint_eq(fo, o + k);
		}
		ck_assert_int_eq(bench_block_check(&pool, b, bs, rank, o, 1), 0);
	}
	bench_pool_free(&pool);
	close(fd);
	free(b);
}

/* Overwrite len bytes of path at off with data. */
static void
corrupt(const char *path, off_t off, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, data, len, off), (ssize_t)len);
	close(fd);
}

/* Two "nodes": prepare both, release both, wait for both, join. */
static void
run_two(struct bench_job *ja, struct bench_job *jb)
{
	ck_assert_msg(bench_job_prepare(ja) == 0, "%s", ja->err);
	ck_assert_msg(bench_job_prepare(jb) == 0, "%s", jb->err);
	bench_job_go(ja);
	bench_job_go(jb);
	while (bench_job_wait(ja, 1000) != BJ_DONE || bench_job_wait(jb, 1000) != BJ_DONE)
		;
	bench_job_join(ja);
	bench_job_join(jb);
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
		/* a file each, buffered: each block went in one piece from the
		 * thread's stamped copy of the pool (the bytes checked above) */
		ck_assert_ptr_nonnull(j->th[r].wpool);
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
	run_two(ja, jb);
	ck_assert_uint_eq(job_bytes(ja) + job_bytes(jb), 4u << 20);
	snprintf(path, sizeof(path), "%s/knob.n1/shared", tmp);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 4u << 20);
	for (uint32_t r = 0; r < 4; r++)
		check_content(path, (uint64_t)r << 20, 1 << 20, 64 << 10, r);
	/* the shared file, buffered: from the pool itself, stamps and pool
	 * pieces in one pwritev (the bytes checked above) */
	ck_assert_ptr_null(ja->th[0].wpool);
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

	mkparams(&p, "seq-write", tmp, "bad", ranks, 1, 1);
	p.keep_files = 1;
	bench_job_free(run(&p, 1));
	snprintf(path, sizeof(path), "%s/knob.bad/f.00000000", tmp);
	corrupt(path, 128 << 10, "garbage!garbage!", 16);
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
	/* a full pass of rand-write stamps every block of each rank's file */
	mkparams(&p, "rand-write", tmp, "rnd", ranks, 2, 2);
	p.bs = 4096;
	p.keep_files = 1;
	j = run(&p, 1);
	ck_assert_uint_eq(job_bytes(j), 2u << 20);
	ck_assert_uint_eq(j->read_bytes, 0);
	ck_assert_str_eq(j->warning, "");
	for (uint32_t r = 0; r < 2; r++) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/knob.rnd/f.%08u", tmp, r);
		check_content(path, 0, 1 << 20, 4096, r);
	}
	bench_job_cleanup(j);
	bench_job_free(j);
}
END_TEST

/* The set of 4 KiB blocks of path that carry rank's stamp, as a bitmap of
 * nblk bits; how many. */
static uint64_t
stamped_blocks(const char *path, uint32_t rank, uint64_t nblk, uint8_t *map)
{
	uint8_t b[16];
	uint64_t n = 0;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	memset(map, 0, (nblk + 7) / 8);
	for (uint64_t i = 0; i < nblk; i++) {
		uint32_t magic, r;
		uint64_t fo;

		ck_assert_int_eq(pread(fd, b, sizeof(b), (off_t)(i * 4096)), (ssize_t)sizeof(b));
		memcpy(&magic, b, 4);
		memcpy(&r, b + 4, 4);
		memcpy(&fo, b + 8, 8);
		if (magic == BENCH_MAGIC && r == rank && fo == i * 4096) {
			map[i / 8] |= (uint8_t)(1u << (i % 8));
			n++;
		}
	}
	close(fd);
	return n;
}

/* A file of nblk 4 KiB blocks for rank, zero but for its first and last
 * blocks, stamped as the engine stamps them: prepare then takes the data as
 * present and does not prefill, so only the timed writes stamp the rest. */
static void
sparse_with_ends(const char *path, uint32_t rank, uint64_t nblk)
{
	uint64_t ends[2] = { 0, nblk - 1 };
	struct bench_pool pool;
	uint8_t b[4096];
	int fd;

	cu_mkparents(path);
	ck_assert_int_ge(fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)(nblk * 4096)), 0);
	ck_assert_int_eq(bench_pool_init(&pool, 42, 0, sizeof(b), sizeof(b), 1), 0);
	for (int i = 0; i < 2; i++) {
		bench_block_fill(&pool, b, sizeof(b), rank, ends[i] * 4096);
		ck_assert_int_eq(pwrite(fd, b, sizeof(b), (off_t)(ends[i] * 4096)), 4096);
	}
	bench_pool_free(&pool);
	close(fd);
}

/* rand-write stopped part-way (1 s at 60 ops/s of 256 blocks) has written
 * exactly the first ops blocks of its rank's keyed permutation, the order
 * bench_perm gives (the engine's own key: seed and rank), not a prefix of
 * the file: the offsets the I/O threads used, read back from the stamps
 * (the two end blocks are stamped beforehand, see sparse_with_ends). */
START_TEST(t_random_offsets_order)
{
	enum { NBLK = 256 };
	uint32_t ranks[] = { 0, 1 };
	uint8_t map[NBLK / 8], want[NBLK / 8];
	struct bench_params p;
	struct bench_job *j;

	mkparams(&p, "rand-write", tmp, "rpart", ranks, 2, 2);
	p.bs = 4096;
	p.file_size = NBLK * 4096;
	p.runtime_s = 1;
	p.rate_iops = 60;
	p.keep_files = 1;
	for (uint32_t r = 0; r < 2; r++) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/knob.rpart/f.%08u", tmp, r);
		sparse_with_ends(path, r, NBLK);
	}
	j = run(&p, 1);
	for (uint32_t r = 0; r < 2; r++) {
		uint64_t ops = atomic_load(&j->th[r].ops), beyond = 0, n;
		char path[PATH_MAX + 64];
		struct bench_perm perm;

		ck_assert_msg(ops >= 20 && ops < NBLK / 2, "rank %u: %llu ops", r,
		    (unsigned long long)ops);
		snprintf(path, sizeof(path), "%s/knob.rpart/f.%08u", tmp, r);
		n = stamped_blocks(path, r, NBLK, map);
		bench_perm_init(&perm, NBLK, bench_mix(42) ^ bench_mix((uint64_t)r << 32));
		memset(want, 0, sizeof(want));
		want[0] |= 1;				/* the ends, stamped beforehand */
		want[(NBLK - 1) / 8] |= (uint8_t)(1u << ((NBLK - 1) % 8));
		printf("rand-write rank %u: %llu ops, %llu blocks stamped\n", r,
		    (unsigned long long)ops, (unsigned long long)n);
		for (uint64_t i = 0; i < ops; i++) {
			uint64_t b = bench_perm_at(&perm, i);

			want[b / 8] |= (uint8_t)(1u << (b % 8));
			beyond += b >= ops;
		}
		ck_assert_msg(memcmp(map, want, sizeof(map)) == 0,
		    "rank %u: the stamped blocks are not the permutation's first %llu", r,
		    (unsigned long long)ops);
		/* a random order lands most blocks past the first ops of the file */
		ck_assert_msg(beyond > ops / 2, "rank %u: %llu of %llu blocks past %llu", r,
		    (unsigned long long)beyond, (unsigned long long)ops, (unsigned long long)ops);
	}
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
			snprintf(path, sizeof(path),
			    "%s/knob.md/d.00000001/s.3/file.mdtest.1.99", tmp);
			ck_assert_int_eq(stat(path, &st), 0);
			ck_assert_uint_eq((uint64_t)st.st_size, 3000);
		}
		if (k == 3) {
			snprintf(path, sizeof(path),
			    "%s/knob.md/d.00000000/s.0/file.mdtest.0.0", tmp);
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

/* The ior command line under the default launcher, in process: stand-in
 * mpirun/ior scripts in a PATH the test makes record their arguments and
 * print real ior output (tests/fixtures/ior).  The real ior and mdtest
 * under OpenMPI across agents are in check_bench_mpi. */
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
	    "cp \"$7\" %s.hostfile\\ncat %s/%s/fixtures/ior/ior-nn-write-read.txt\\n' > %s/mpirun && "
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
	ck_assert_ptr_nonnull(strstr(buf, "--allow-run-as-root --map-by node --bind-to none --hostfile "));
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

/* ------------------------------------------------ measurement truth (issue 9) */

/* Every index of [0, n) exactly once per pass, for awkward sizes and keys. */
START_TEST(t_perm_coverage)
{
	static const uint64_t ns[] = { 1, 2, 3, 4, 5, 7, 16, 100, 1000, 4097, 65536, 65537 };
	struct bench_perm pm, pm2;

	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		uint64_t n = ns[k];
		uint8_t *seen = calloc(n, 1);

		for (uint64_t key = 1; key <= 3; key++) {
			uint64_t same = 0;

			memset(seen, 0, n);
			bench_perm_init(&pm, n, key);
			bench_perm_init(&pm2, n, key + 100);
			for (uint64_t i = 0; i < n; i++) {
				uint64_t x = bench_perm_at(&pm, i);

				ck_assert_uint_lt(x, n);
				ck_assert_msg(!seen[x], "n=%llu: %llu repeats", (unsigned long long)n,
				    (unsigned long long)x);
				seen[x] = 1;
				same += x == bench_perm_at(&pm2, i);
				ck_assert_uint_eq(x, bench_perm_at(&pm, i));	/* a function of the key */
			}
			/* another key, another order (and files of 4 blocks are not read in order) */
			if (n >= 16)
				ck_assert_uint_lt(same, n / 4);
		}
		free(seen);
	}
	bench_perm_init(&pm, 4, 1);
	ck_assert(bench_perm_at(&pm, 0) != 0 || bench_perm_at(&pm, 1) != 1 ||
	    bench_perm_at(&pm, 2) != 2 || bench_perm_at(&pm, 3) != 3);
}
END_TEST

/* Blocks stamped in place in one pool copy, one after another at random
 * offsets (so they overlap in the copy), are each the block bench_block_fill
 * makes, aligned for O_DIRECT: the stamps left in the copy by earlier
 * blocks are never another block's data; block sizes with a tail under a
 * stamp's 16 bytes too. */
START_TEST(t_block_stamp_in)
{
	static const size_t sizes[] = { 4096, 1 << 20, 6144, 4100, 512 * 9 };
	struct bench_pool pool;
	uint8_t *copy, *ref = malloc(1 << 20);
	uint64_t s = 7;

	ck_assert_int_eq(bench_pool_init(&pool, 9, 0, 1 << 20, 1 << 20, 1), 0);
	ck_assert_int_eq((uintptr_t)pool.buf % BENCH_ALIGN, 0);
	ck_assert_int_eq(posix_memalign((void **)&copy, BENCH_ALIGN, pool.len), 0);
	memcpy(copy, pool.buf, pool.len);
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
		for (int i = 0; i < 3000; i++) {
			size_t bs = sizes[z];
			uint32_t rank = (uint32_t)(i % 3);
			uint64_t off = (bench_mix(s++) % 100000) * bs;
			uint8_t *b = bench_block_stamp_in(&pool, copy, bs, rank, off);

			ck_assert_ptr_eq(b, copy + bench_block_pos(&pool, rank, off));
			ck_assert_int_eq((uintptr_t)b % BENCH_ALIGN, 0);
			bench_block_fill(&pool, ref, bs, rank, off);
			ck_assert_msg(memcmp(b, ref, bs) == 0, "bs %zu rank %u off %llu differs",
			    bs, rank, (unsigned long long)off);
			ck_assert_int_eq(bench_block_check(&pool, b, bs, rank, off, 1), 0);
		}
	free(copy);
	free(ref);
	bench_pool_free(&pool);
}
END_TEST

/* Where slices start (bench_block_pos): a block of up to 1 MiB ends in the
 * huge page of the (2 MiB-aligned) pool it starts in, from every such
 * place of the 8 MiB span; a longer one starts on any page of the span. */
START_TEST(t_pool_span)
{
	static const uint64_t sizes[] = { 4096, 65536, 69632, 256 << 10, 1 << 20, 4 << 20 };
	static uint8_t seen[(8u << 20) / BENCH_ALIGN];

	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		uint64_t bs = sizes[z], places = 0, want;
		struct bench_pool pool;

		ck_assert_int_eq(bench_pool_init(&pool, 3, 0, bs, bs, 1), 0);
		ck_assert_int_eq((uintptr_t)pool.buf % BENCH_HUGE, 0);
		ck_assert_uint_eq(pool.span, 8u << 20);
		memset(seen, 0, sizeof(seen));
		for (uint64_t i = 0; i < 200000; i++) {
			size_t pos = bench_block_pos(&pool, (uint32_t)(i % 4), (i / 4) * bs);

			ck_assert_uint_le(pos + bs, pool.len);
			if (bs <= (1u << 20))
				ck_assert_uint_eq(pos / BENCH_HUGE, (pos + bs - 1) / BENCH_HUGE);
			places += !seen[pos / BENCH_ALIGN];
			seen[pos / BENCH_ALIGN] = 1;
		}
		want = bs <= (1u << 20) ? 4 * ((BENCH_HUGE - bs) / BENCH_ALIGN + 1) :
		    (8u << 20) / BENCH_ALIGN;
		ck_assert_uint_eq(places, want);
		bench_pool_free(&pool);
	}
}
END_TEST

/* Metadata file content: each file is stamped like a data block (so two
 * files whose bytes come from the same place in the pool's small md window
 * still differ), the cheap check catches its first and last bytes, and the
 * full check every byte. */
START_TEST(t_md_content)
{
	static const size_t sizes[] = { 8, 3000, 4096, 4100, 9000 };
	uint8_t *a = malloc(16384), *b = malloc(16384);
	struct bench_pool pool;
	uint64_t ka = 0, kb = 0;

	ck_assert_int_eq(bench_pool_init(&pool, 5, 0, 16384, 16384, 1), 0);
	/* two items of rank 1 whose sources coincide */
	for (uint64_t i = 0; i < 1000000 && kb == 0; i++) {
		uint64_t k = 0x6d64000000000000ull ^ (i << 32);

		if (ka == 0)
			ka = k;
		else if (bench_md_src(&pool, 1, k) == bench_md_src(&pool, 1, ka))
			kb = k;
	}
	ck_assert_uint_ne(kb, 0);
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		size_t ws = sizes[z];

		ck_assert(bench_md_src(&pool, 1, ka) + ws <= pool.buf + pool.len);
		bench_fill(bench_md_src(&pool, 1, ka), a, ws, 1, ka);
		bench_fill(bench_md_src(&pool, 1, kb), b, ws, 1, kb);
		ck_assert_int_eq(bench_md_content(&pool, a, ws, 1, ka, 0), 1);
		ck_assert_int_eq(bench_md_content(&pool, a, ws, 1, ka, 1), 1);
		ck_assert_int_eq(bench_md_content(&pool, a, ws, 2, ka, 0), 0);	/* another rank's */
		if (ws >= 16)
			ck_assert_int_ne(memcmp(a, b, ws), 0);
		a[ws - 1] ^= 1;		/* the last byte: both checks */
		ck_assert_int_eq(bench_md_content(&pool, a, ws, 1, ka, 0), 0);
		ck_assert_int_eq(bench_md_content(&pool, a, ws, 1, ka, 1), 0);
		a[ws - 1] ^= 1;
		a[ws / 2] ^= 1;		/* the middle: only the full check */
		ck_assert_int_eq(bench_md_content(&pool, a, ws, 1, ka, 0), ws <= 32 ? 0 : 1);
		ck_assert_int_eq(bench_md_content(&pool, a, ws, 1, ka, 1), 0);
	}
	bench_pool_free(&pool);
	free(a);
	free(b);
}
END_TEST

/* Chi-square of the low bits of a pass x[0..n) of block indices, for 2^j
 * buckets: (a) over windows of 8*2^j consecutive I/Os (a short period
 * fills every bucket evenly in each window: statistic near 0) and (b) of
 * consecutive pairs (x[t], x[t+1]) mod 2^j (a period makes the next low
 * bits a function of the last).  A pass is a permutation, so every bucket
 * holds exactly n/2^j in total: the expectations are those of drawing
 * without replacement (window: df (n-w)/(n-1); pairs: fixed marginals,
 * df (m-1)^2).  Returned as z-scores (chi2 - E)/sqrt(2 E). */
struct chi {
	double win, win_e, pair, pair_e;	/* statistics and their expectations */
};

static void
chi_square(const uint64_t *x, uint64_t n, unsigned j, double *zwin, double *zpair,
    struct chi *c)
{
	uint64_t m = 1ull << j, w = 8 * m, nwin = n / w, *cnt = calloc(m * m, sizeof(*cnt));
	double chi = 0, df, e;

	for (uint64_t k = 0; k < nwin; k++) {
		memset(cnt, 0, m * sizeof(*cnt));
		for (uint64_t i = k * w; i < (k + 1) * w; i++)
			cnt[x[i] & (m - 1)]++;
		for (uint64_t b = 0; b < m; b++)
			chi += (double)((int64_t)cnt[b] - 8) * (double)((int64_t)cnt[b] - 8) / 8.0;
	}
	df = (double)nwin * (double)(m - 1) * (double)(n - w) / (double)(n - 1);
	*zwin = (chi - df) / sqrt(2 * df);
	c->win = chi;
	c->win_e = df;
	memset(cnt, 0, m * m * sizeof(*cnt));
	for (uint64_t i = 0; i + 1 < n; i++)
		cnt[(x[i] & (m - 1)) * m + (x[i + 1] & (m - 1))]++;
	e = (double)(n - 1) / (double)(m * m);
	chi = 0;
	for (uint64_t b = 0; b < m * m; b++)
		chi += ((double)cnt[b] - e) * ((double)cnt[b] - e) / e;
	df = (double)((m - 1) * (m - 1));
	*zpair = (chi - df) / sqrt(2 * df);
	c->pair = chi;
	c->pair_e = df;
	free(cnt);
}

/* The default rand phase (256 MiB of 4 KiB blocks = 65536, a power of two):
 * the low bits of one pass look random for j = 1..8, and the statistic
 * does catch the LCG the engine used before (period 2^j in the low bits). */
START_TEST(t_perm_chisquare)
{
	const uint64_t n = 65536;
	uint64_t *x = malloc(n * sizeof(*x)), lcg = 12345;
	struct bench_perm pm;
	struct chi c;
	double zw, zp, worst = 0;

	/* the key of --seed 1, rank 0, pass 0 (data_next in agent/bench_io.c) */
	bench_perm_init(&pm, n, bench_mix(1) ^ bench_mix(0));
	for (uint64_t i = 0; i < n; i++)
		x[i] = bench_perm_at(&pm, i);
	for (unsigned j = 1; j <= 8; j++) {
		chi_square(x, n, j, &zw, &zp, &c);
		printf("chi-square feistel n=%llu j=%u: windows %.0f (expected %.0f) z=%+.2f; "
		    "pairs %.0f (expected %.0f) z=%+.2f\n", (unsigned long long)n, j, c.win, c.win_e,
		    zw, c.pair, c.pair_e, zp);
		ck_assert_msg(fabs(zw) < 6 && fabs(zp) < 6, "j=%u: z %.2f %.2f", j, zw, zp);
		worst = fabs(zw) > worst ? fabs(zw) : worst;
		worst = fabs(zp) > worst ? fabs(zp) : worst;
	}
	printf("chi-square feistel: largest |z| %.2f over j=1..8 (|z| < 6 required)\n", worst);
	for (uint64_t i = 0; i < n; i++)
		x[i] = lcg = (0x5851F42D4C957F2Dull * lcg + 7) & (n - 1);
	for (unsigned j = 1; j <= 8; j++) {
		chi_square(x, n, j, &zw, &zp, &c);
		if (j == 4)
			printf("chi-square old LCG j=4: windows %.0f (expected %.0f) z=%+.2f; "
			    "pairs %.0f (expected %.0f) z=%+.2f\n", c.win, c.win_e, zw, c.pair,
			    c.pair_e, zp);
		ck_assert_msg(fabs(zw) > 6 || fabs(zp) > 6, "the test misses the LCG at j=%u", j);
	}
	free(x);
}
END_TEST

/* Compressed size of path with gzip at its default level, in bytes. */
static uint64_t
gzip_size(const char *path)
{
	char cmd[PATH_MAX + 64];
	unsigned long long n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "gzip -c '%s' | wc -c", path);
	ck_assert_ptr_nonnull(f = popen(cmd, "r"));
	ck_assert_int_eq(fscanf(f, "%llu", &n), 1);
	ck_assert_int_eq(pclose(f), 0);
	return n;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* 4 KiB chunks of path that are copies of another chunk (what a
 * deduplicating array would save). */
static uint64_t
dup_chunks(const char *path, uint64_t size)
{
	uint64_t n = size / 4096, *h = calloc(n, sizeof(*h)), dups = 0;
	uint8_t b[4096];
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = 1469598103934665603ull;

		ck_assert_int_eq(pread(fd, b, 4096, (off_t)(i * 4096)), 4096);
		for (size_t k = 0; k < 4096; k++)
			v = (v ^ b[k]) * 1099511628211ull;
		h[i] = v;
	}
	close(fd);
	qsort(h, n, sizeof(*h), cmp_u64);
	for (uint64_t i = 1; i < n; i++)
		dups += h[i] == h[i - 1];
	free(h);
	return dups;
}

/* Written data does not compress (< 2 % with gzip -6) nor deduplicate;
 * --compressible 50 gives about half. */
START_TEST(t_incompressible)
{
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	char path[PATH_MAX + 64];
	uint64_t size = 8 << 20, gz, g50;

	mkparams(&p, "seq-write", tmp, "gz", ranks, 1, 1);
	p.bs = 1 << 20;
	p.file_size = size;
	p.keep_files = 1;
	bench_job_free(run(&p, 1));
	snprintf(path, sizeof(path), "%s/knob.gz/f.00000000", tmp);
	gz = gzip_size(path);
	printf("gzip -6 of 8 MiB written by seq-write: %llu bytes, %.2f %% smaller\n",
	    (unsigned long long)gz, 100.0 * (1.0 - (double)gz / (double)size));
	ck_assert_uint_gt(gz, size * 98 / 100);
	ck_assert_uint_eq(dup_chunks(path, size), 0);

	/* small blocks in gzip's 32 KiB window, and a block that starts
	 * where it ends in the same huge page (bench_block_pos), each at 0 % */
	for (int k = 0; k < 2; k++) {
		uint64_t bs = k ? 256 << 10 : 4096;

		mkparams(&p, k ? "seq-write" : "rand-write", tmp, "gz", ranks, 1, 1);
		p.bs = bs;
		p.file_size = size;
		p.keep_files = 1;
		bench_job_free(run(&p, 1));
		gz = gzip_size(path);
		printf("gzip -6 of 8 MiB written by %s of %llu bytes: %.2f %% smaller\n",
		    k ? "seq-write" : "rand-write", (unsigned long long)bs,
		    100.0 * (1.0 - (double)gz / (double)size));
		ck_assert_uint_gt(gz, size * 98 / 100);
		ck_assert_uint_eq(dup_chunks(path, size), 0);
	}

	mkparams(&p, "rand-write", tmp, "gz", ranks, 1, 1);
	p.bs = 4096;
	p.file_size = size;
	p.compress_pct = 50;
	bench_job_free(run(&p, 1));
	g50 = gzip_size(path);
	printf("gzip -6 of 8 MiB with --compressible 50: %.1f %% smaller\n",
	    100.0 * (1.0 - (double)g50 / (double)size));
	ck_assert_uint_gt(g50, size * 40 / 100);
	ck_assert_uint_lt(g50, size * 60 / 100);
	/* the file was written at 0 % first: this verifying read of the 50 %
	 * content passes only if rand-write rewrote every block (full coverage
	 * of the permutation in the engine itself) */
	mkparams(&p, "seq-read", tmp, "gz", ranks, 1, 1);
	p.bs = 4096;
	p.compress_pct = 50;
	p.verify = 1;
	p.file_size = size;
	{
		struct bench_job *j = run(&p, 1);

		bench_job_cleanup(j);
		bench_job_free(j);
	}
}
END_TEST

/* One flipped byte in the middle of a block: the cheap stamp check does not
 * see it, --verify does, and names the byte. */
START_TEST(t_verify_every_byte)
{
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_job *j;
	char path[PATH_MAX + 64];
	uint8_t c;
	int fd;

	mkparams(&p, "seq-write", tmp, "vfy", ranks, 1, 1);
	p.keep_files = 1;
	bench_job_free(run(&p, 1));
	snprintf(path, sizeof(path), "%s/knob.vfy/f.00000000", tmp);
	ck_assert_int_ge(fd = open(path, O_RDONLY), 0);
	ck_assert_int_eq(pread(fd, &c, 1, (3 << 16) + 40000), 1);
	close(fd);
	c ^= 0x20;
	corrupt(path, (3 << 16) + 40000, &c, 1);
	mkparams(&p, "seq-read", tmp, "vfy", ranks, 1, 1);
	p.keep_files = 1;
	bench_job_free(run(&p, 1));
	for (int k = 0; k < 2; k++) {
		mkparams(&p, k ? "rand-read" : "seq-read", tmp, "vfy", ranks, 1, 1);
		p.verify = 1;
		p.keep_files = 1;
		j = run(&p, 0);
		ck_assert_msg(strstr(j->th[0].err, "offset 196608: byte 40000 differs"), "%s",
		    j->th[0].err);
		bench_job_free(j);
	}
	/* a different seed is other data, even with intact stamps */
	mkparams(&p, "seq-read", tmp, "vfy", ranks, 1, 1);
	p.verify = 1;
	p.seed = 43;
	j = run(&p, 0);
	ck_assert_ptr_nonnull(strstr(j->th[0].err, "another --seed"));
	bench_job_cleanup(j);
	bench_job_free(j);
}
END_TEST

/* md-read with a write size reads and compares every file. */
START_TEST(t_md_read_checks)
{
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_job *j;
	char path[PATH_MAX + 64];

	mkparams(&p, "md-create", tmp, "mdr", ranks, 1, 1);
	p.md_write_size = 3000;
	p.keep_files = 1;
	bench_job_free(run(&p, 1));
	snprintf(path, sizeof(path), "%s/knob.mdr/d.00000000/s.1/file.mdtest.0.40", tmp);
	corrupt(path, 2999, "x", 1);
	mkparams(&p, "md-read", tmp, "mdr", ranks, 1, 1);
	p.md_write_size = 3000;
	p.keep_files = 1;
	j = run(&p, 0);
	ck_assert_msg(strstr(j->th[0].err,
	    "file.mdtest.0.40: content is not what rank 0 wrote"), "%s",
	    j->th[0].err);
	ck_assert_uint_eq(atomic_load(&j->th[0].ops), 40);
	bench_job_free(j);
	/* a byte in the middle: the cheap check (first and last 16 bytes) lets
	 * it pass, --verify names the file */
	snprintf(path, sizeof(path), "%s/knob.mdr/d.00000000/s.0/file.mdtest.0.7", tmp);
	corrupt(path, 1500, "x", 1);
	for (int v = 0; v < 2; v++) {
		mkparams(&p, "md-read", tmp, "mdr", ranks, 1, 1);
		p.md_write_size = 3000;
		p.md_files = 40;
		p.keep_files = 1;
		p.verify = v;
		j = run(&p, !v);
		if (v)
			ck_assert_msg(strstr(j->th[0].err,
			    "file.mdtest.0.7: content is not what rank 0 wrote"),
			    "%s", j->th[0].err);
		bench_job_free(j);
	}
	mkparams(&p, "md-read", tmp, "mdr", ranks, 1, 1);
	ck_assert_int_eq(bench_cleanup_params(&p), 0);
	bench_params_free(&p);
}
END_TEST

/* Does item rel of rank 0 of work directory "mpp" exist? */
static int
mpp_exists(const char *rel)
{
	char path[PATH_MAX + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/knob.mpp/d.00000000/%s", tmp, rel);
	return stat(path, &st) == 0;
}

/* Prepare of md-stat (items must exist) probes the first and last item of
 * each directory and touches no other (a pass over every item would warm
 * the caches for the timed phase, as mdtest's phases are not): a directory
 * missing its first items (a remove stopped early) or its last (a create
 * stopped early) is refilled; a hole in the middle is not, and the timed
 * phase reports it by name. */
START_TEST(t_md_prepare_probe)
{
	static const char *const gone[] = { "s.0/file.mdtest.0.0", "s.0/file.mdtest.0.1",
	    "s.3/file.mdtest.0.99", "s.1/file.mdtest.0.40" };
	struct bench_params p;
	char path[PATH_MAX + 64];
	uint32_t rank0[] = { 0 };
	struct bench_job *j;

	mkparams(&p, "md-create", tmp, "mpp", rank0, 1, 1);
	p.keep_files = 1;
	bench_job_free(run(&p, 1));
	for (size_t k = 0; k < nitems(gone); k++) {
		snprintf(path, sizeof(path), "%s/knob.mpp/d.00000000/%s", tmp, gone[k]);
		ck_assert_int_eq(unlink(path), 0);
	}
	mkparams(&p, "md-stat", tmp, "mpp", rank0, 1, 1);
	j = bench_job_new(&p, "testnode");
	ck_assert_int_eq(bench_job_prepare(j), 0);
	for (size_t k = 0; k < nitems(gone); k++)
		ck_assert_msg(mpp_exists(gone[k]) == (k < 3), "%s", gone[k]);
	bench_job_go(j);
	while (bench_job_wait(j, 1000) != BJ_DONE)
		;
	bench_job_join(j);
	ck_assert(j->th[0].failed);
	ck_assert_msg(strstr(j->th[0].err, "md-stat") &&
	    strstr(j->th[0].err, "s.1/file.mdtest.0.40") &&
	    strstr(j->th[0].err, "No such file"), "%s", j->th[0].err);
	ck_assert_uint_eq(atomic_load(&j->th[0].ops), 40);
	bench_job_cleanup(j);
	bench_job_free(j);
	snprintf(path, sizeof(path), "%s/knob.mpp", tmp);
	ck_assert(!dir_exists(path));
}
END_TEST

/* Full paths or an open directory: with the tree directory s.0 renamed
 * after prepare and an empty one put in its place, full-path md-stat walks
 * the path (d.<rank>/s.0/<item>, from the work directory's descriptor)
 * and finds nothing.  The work directory itself renamed (and an empty one
 * in its place) changes neither mode: --md-relative works in the renamed
 * one, and the full-path walk starts at its descriptor, never its name. */
START_TEST(t_md_fullpath)
{
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_job *j;
	char a[PATH_MAX + 64], b[PATH_MAX + 64], w[PATH_MAX + 64], wm[PATH_MAX + 64];

	for (int rel = 0; rel < 2; rel++) {
		mkparams(&p, "md-stat", tmp, "fp", ranks, 1, 1);
		p.md_relative = rel;
		j = bench_job_new(&p, "testnode");
		ck_assert_int_eq(bench_job_prepare(j), 0);
		snprintf(a, sizeof(a), "%s/knob.fp/d.00000000/s.0", tmp);
		snprintf(b, sizeof(b), "%s/knob.fp/d.00000000/s.0-moved", tmp);
		if (!rel) {	/* an open directory is opened at the phase's start */
			ck_assert_int_eq(rename(a, b), 0);
			ck_assert_int_eq(mkdir(a, 0755), 0);
		}
		snprintf(w, sizeof(w), "%s/knob.fp", tmp);
		snprintf(wm, sizeof(wm), "%s/knob.fp-moved", tmp);
		ck_assert_int_eq(rename(w, wm), 0);
		ck_assert_int_eq(mkdir(w, 0755), 0);
		bench_job_go(j);
		while (bench_job_wait(j, 1000) != BJ_DONE)
			;
		bench_job_join(j);
		if (rel) {
			ck_assert_int_eq(j->th[0].failed, 0);
			ck_assert_uint_eq(atomic_load(&j->th[0].ops), 100);
		} else {
			ck_assert(j->th[0].failed);
			ck_assert_msg(strstr(j->th[0].err,
			    "knob.fp/d.00000000/s.0/file.mdtest.0.0") &&
			    strstr(j->th[0].err, "No such file"), "%s", j->th[0].err);
		}
		bench_job_free(j);
		ck_assert_int_eq(rmdir(w), 0);
		ck_assert_int_eq(rename(wm, w), 0);
		if (!rel) {
			ck_assert_int_eq(rmdir(a), 0);
			ck_assert_int_eq(rename(b, a), 0);
		}
		mkparams(&p, "md-stat", tmp, "fp", ranks, 1, 1);
		ck_assert_int_eq(bench_cleanup_params(&p), 0);
		bench_params_free(&p);
		ck_assert(!dir_exists(a));
	}
}
END_TEST

/* A directory outside the phase's for a link to point at: s.0/ holding a
 * canary file named as item 0 of rank 0 (file.mdtest.0.0) and an empty
 * canary directory named sub. */
static void
make_outside(const char *out, const char *sub)
{
	char d[PATH_MAX + 64];

	cu_write_at(out, "s.0/file.mdtest.0.0", 0644, "canary\n");
	snprintf(d, sizeof(d), "%s/s.0/%s", out, sub);
	ck_assert_int_eq(mkdir(d, 0755), 0);
}

/* out is as make_outside left it: the canary file's bytes, the empty
 * canary directory, nothing added anywhere. */
static void
check_outside(const char *out, const char *sub)
{
	char f[PATH_MAX + 64], *c;
	struct stat st;

	snprintf(f, sizeof(f), "%s/s.0/file.mdtest.0.0", out);
	c = cu_slurp(f);
	ck_assert_str_eq(c, "canary\n");
	free(c);
	snprintf(f, sizeof(f), "%s/s.0/%s", out, sub);
	ck_assert_int_eq(lstat(f, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(cu_dir_size(f), 0);
	snprintf(f, sizeof(f), "%s/s.0", out);
	ck_assert_int_eq(cu_dir_size(f), 2);
	ck_assert_int_eq(cu_dir_size(out), 1);
}

/* A symbolic link planted mid-path between prepare and the timed phase
 * (d.00000000/s.0 of a tree of depth 2, renamed and replaced by a link to
 * a directory outside the phase's, which root can do): md-stat,
 * md-dirstat, md-remove, md-mkdir and md-rmdir (an iteration each,
 * midpath[]) are refused with ELOOP before any operation, the phase fails
 * with that error in its result,
 * and the outside directory is as it was, its canary file (named as the
 * item md-remove removes first) and canary directory (named as the one
 * md-rmdir removes first; for md-mkdir another name, so that a mkdir
 * there would succeed) still there and nothing made beside them; the
 * clean-up with the link still in place removes the link, not what it
 * points at.  Before, these calls walked the full path from the phase's
 * directory and followed the link: md-remove unlinked the canary file,
 * md-rmdir the canary directory, md-mkdir made directories outside and
 * md-stat reported on files outside. */
static const struct {
	const char *kind, *sub;
} midpath[] = { { "md-stat", "dir.mdtest.0.0" }, { "md-dirstat", "dir.mdtest.0.0" },
    { "md-remove", "dir.mdtest.0.0" }, { "md-mkdir", "canary.d" },
    { "md-rmdir", "dir.mdtest.0.0" } };

START_TEST(t_md_midpath_symlink)
{
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_job *j;
	Knob__PhaseResult r;
	char out[PATH_MAX + 64], mid[PATH_MAX + 64], moved[PATH_MAX + 64];
	const char *kind = midpath[_i].kind, *sub = midpath[_i].sub;
	uint64_t ops;

	snprintf(out, sizeof(out), "%s/outside", tmp);
	make_outside(out, sub);
	mkparams(&p, kind, tmp, "mid", ranks, 1, 1);
	p.md_depth = 2;
	p.md_branch = 2;
	p.md_leaf_only = 1;
	p.md_files = 8;
	j = bench_job_new(&p, "testnode");
	ck_assert_msg(bench_job_prepare(j) == 0, "%s: %s", kind, j->err);
	snprintf(mid, sizeof(mid), "%s/knob.mid/d.00000000/s.0", tmp);
	snprintf(moved, sizeof(moved), "%s.moved", mid);
	ck_assert_int_eq(rename(mid, moved), 0);
	ck_assert_int_eq(symlink(out, mid), 0);
	bench_job_go(j);
	while (bench_job_wait(j, 1000) != BJ_DONE)
		;
	bench_job_join(j);
	check_outside(out, sub);
	ck_assert_msg(j->th[0].failed, "%s not refused", kind);
	ops = atomic_load(&j->th[0].ops);
	ck_assert_msg(ops == 0, "%s: %llu operations", kind, (unsigned long long)ops);
	bench_job_result(j, &r);
	ck_assert(!r.ok);
	ck_assert_msg(strstr(r.error, kind) &&
	    strstr(r.error, "knob.mid/d.00000000/s.0/s.0") &&
	    strstr(r.error, "Too many levels of symbolic links"), "%s", r.error);
	bench_result_free(&r);
	ck_assert_int_eq(bench_job_cleanup(j), 0);
	bench_job_free(j);
	check_outside(out, sub);
	snprintf(mid, sizeof(mid), "%s/knob.mid", tmp);
	ck_assert(!dir_exists(mid));
}
END_TEST

/* Two "nodes" in one shared tree of depth 2, branching 3, leaf-only: the
 * files of all four ranks spread over the 9 leaves and nowhere else; one
 * node's clean-up leaves the other's files. */
START_TEST(t_md_shared_tree)
{
	uint32_t ra[] = { 0, 2 }, rb[] = { 1, 3 };
	static const char *const ks[] = { "md-create", "md-stat", "md-remove" };
	struct bench_params pa, pb;
	struct bench_job *ja, *jb;
	char path[PATH_MAX + 64];

	for (size_t k = 0; k < 3; k++) {
		mkparams(&pa, ks[k], tmp, "sh", ra, 2, 4);
		mkparams(&pb, ks[k], tmp, "sh", rb, 2, 4);
		pa.md_shared = pb.md_shared = 1;
		pa.md_depth = pb.md_depth = 2;
		pa.md_branch = pb.md_branch = 3;
		pa.md_leaf_only = pb.md_leaf_only = 1;
		pa.md_files = pb.md_files = 18;
		pa.keep_files = pb.keep_files = k < 2;
		ja = bench_job_new(&pa, "nodeA");
		jb = bench_job_new(&pb, "nodeB");
		run_two(ja, jb);
		for (size_t i = 0; i < 2; i++) {
			ck_assert_msg(!ja->th[i].failed && !jb->th[i].failed, "%s %s", ja->th[i].err,
			    jb->th[i].err);
			ck_assert_uint_eq(atomic_load(&ja->th[i].ops) + atomic_load(&jb->th[i].ops), 36);
		}
		if (k == 0) {
			/* 18 files per rank over 9 leaves: 2 per leaf per rank */
			snprintf(path, sizeof(path),
			    "%s/knob.sh/d.shared/s.0/s.0/file.mdtest.0.1", tmp);
			ck_assert(dir_exists(path));
			snprintf(path, sizeof(path),
			    "%s/knob.sh/d.shared/s.2/s.2/file.mdtest.3.17", tmp);
			ck_assert(dir_exists(path));
			snprintf(path, sizeof(path), "%s/knob.sh/d.shared/s.1/s.2", tmp);
			ck_assert_int_eq(cu_dir_size(path), 8);
			snprintf(path, sizeof(path), "%s/knob.sh/d.shared/s.1", tmp);
			ck_assert_int_eq(cu_dir_size(path), 3);	/* directories only */
			snprintf(path, sizeof(path), "%s/knob.sh/d.shared", tmp);
			ck_assert_int_eq(cu_dir_size(path), 3);
		}
		if (k == 2) {
			snprintf(path, sizeof(path), "%s/knob.sh/d.shared/s.0/s.0", tmp);
			ck_assert_int_eq(cu_dir_size(path), 0);
		}
		bench_job_free(ja);
		bench_job_free(jb);
	}
	/* files again, then node A cleans up first: B's files stay */
	mkparams(&pa, "md-stat", tmp, "sh", ra, 2, 4);
	mkparams(&pb, "md-stat", tmp, "sh", rb, 2, 4);
	pa.md_shared = pb.md_shared = 1;
	ja = run(&pa, 1);
	jb = run(&pb, 1);
	/* an older agent's short names ("f.<rank>.<i>") are its ranks' too */
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/knob.sh/d.shared/s.0/f.%d.77", tmp, k);
		close(open(path, O_CREAT | O_WRONLY, 0644));
	}
	ck_assert_int_eq(bench_job_cleanup(ja), 0);
	snprintf(path, sizeof(path), "%s/knob.sh/d.shared/s.0/file.mdtest.1.0", tmp);
	ck_assert(dir_exists(path));
	snprintf(path, sizeof(path), "%s/knob.sh/d.shared/s.0/f.1.77", tmp);
	ck_assert(dir_exists(path));
	snprintf(path, sizeof(path), "%s/knob.sh/d.shared/s.0/file.mdtest.0.0", tmp);
	ck_assert(!dir_exists(path));
	snprintf(path, sizeof(path), "%s/knob.sh/d.shared/s.0/f.0.77", tmp);
	ck_assert(!dir_exists(path));
	ck_assert_int_eq(bench_job_cleanup(jb), 0);
	bench_job_free(ja);
	bench_job_free(jb);
	snprintf(path, sizeof(path), "%s/knob.sh", tmp);
	ck_assert(!dir_exists(path));
}
END_TEST

/* Directory phases in a private tree of depth 1, branching 4, items in
 * every directory (root too), and exact files_total over 3 ranks. */
START_TEST(t_md_dirs_and_total)
{
	static const char *const ks[] = { "md-mkdir", "md-dirstat", "md-rmdir" };
	uint32_t ranks[] = { 0, 1, 2 };
	struct bench_params p;
	struct bench_job *j;
	char path[PATH_MAX + 64];

	for (size_t k = 0; k < 3; k++) {
		mkparams(&p, ks[k], tmp, "dirs", ranks, 3, 3);
		p.files_total = 1000;
		p.md_depth = 1;
		p.md_branch = 4;
		p.keep_files = k < 2;
		j = run(&p, 1);
		/* 1000 over 3: 334, 333, 333, not 3 x 334 */
		ck_assert_uint_eq(atomic_load(&j->th[0].ops), 334);
		ck_assert_uint_eq(atomic_load(&j->th[1].ops), 333);
		ck_assert_uint_eq(atomic_load(&j->th[2].ops), 333);
		if (k == 0) {
			/* 334 items over 5 directories: 67 each, root first */
			snprintf(path, sizeof(path),
			    "%s/knob.dirs/d.00000000/dir.mdtest.0.66", tmp);
			ck_assert(dir_exists(path));
			snprintf(path, sizeof(path),
			    "%s/knob.dirs/d.00000000/s.3/dir.mdtest.0.333", tmp);
			ck_assert(dir_exists(path));
		}
		if (k == 2) {
			snprintf(path, sizeof(path), "%s/knob.dirs/d.00000000/s.3", tmp);
			ck_assert_int_eq(cu_dir_size(path), 0);
			bench_job_cleanup(j);
		}
		bench_job_free(j);
	}
	snprintf(path, sizeof(path), "%s/knob.dirs", tmp);
	ck_assert(!dir_exists(path));
}
END_TEST

/* Queue depth 8 through io_uring and through libaio: every block once,
 * data verified, the engine named in the result. */
START_TEST(t_iodepth)
{
	static const int engines[] = { IOE_AUTO, IOE_URING, IOE_AIO };
	uint32_t ranks[] = { 0, 1 };
	struct bench_params p;
	struct bench_job *j;
	Knob__PhaseResult r;
	struct io_uring ring;
	/* where the kernel (or a container's seccomp profile) denies io_uring,
	 * auto means libaio and io_uring by name is refused; t_iodepth_fallback
	 * forces that case on every machine */
	int have = io_uring_queue_init(2, &ring, 0) == 0;

	if (have)
		io_uring_queue_exit(&ring);
	for (size_t e = 0; e < 3; e++) {
		mkparams(&p, "rand-write", tmp, "qd", ranks, 2, 2);
		p.bs = 4096;
		p.queue_depth = 8;
		p.ioengine = engines[e];
		p.keep_files = 1;
		if (!have && engines[e] == IOE_URING) {
			j = run(&p, 0);
			ck_assert_msg(strstr(j->err, "io_uring set-up"), "%s", j->err);
			bench_job_free(j);
			continue;
		}
		j = run(&p, 1);
		ck_assert_uint_eq(atomic_load(&j->th[0].ops) + atomic_load(&j->th[1].ops), 512);
		ck_assert_uint_eq(j->th[0].lat->total, 256);
		bench_job_result(j, &r);
		ck_assert_str_eq(r.ioengine, engines[e] == IOE_AIO || !have ? "libaio" : "io_uring");
		bench_result_free(&r);
		bench_job_free(j);
		mkparams(&p, "rand-read", tmp, "qd", ranks, 2, 2);
		p.bs = 4096;
		p.queue_depth = 8;
		p.ioengine = engines[e];
		p.verify = 1;
		p.keep_files = e < 2;
		j = run(&p, 1);
		ck_assert_uint_eq(job_bytes(j), 2u << 20);
		bench_job_free(j);
	}
	/* the data the queued writes left is every rank's, every byte */
	for (uint32_t r0 = 0; r0 < 2; r0++) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/knob.qd/f.%08u", tmp, r0);
		check_content(path, 0, 1 << 20, 4096, r0);
	}
	mkparams(&p, "rand-read", tmp, "qd", ranks, 2, 2);
	ck_assert_int_eq(bench_cleanup_params(&p), 0);
	bench_params_free(&p);
}
END_TEST

/* O_DIRECT writes, at depth 1 (from the thread's pool copy, not through
 * its block buffer, which stays as prepare left it: zeros) and queued
 * (io_uring): N-to-1 1 MiB blocks of 2 ranks, then 4 KiB random rewrites
 * of rank 1's range; every byte checked, no 4 KiB chunk repeated, gzip
 * saves < 2 %, and an O_DIRECT --verify read of rank 1 passes. */
START_TEST(t_odirect_write)
{
	static const int engines[] = { IOE_PSYNC, IOE_URING };
	uint32_t ranks[] = { 0, 1 };
	uint64_t size = 4 << 20;
	struct bench_params p;
	struct bench_job *j;
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/knob.od/shared", tmp);
	for (size_t e = 0; e < 2; e++) {
		mkparams(&p, "seq-write", tmp, "od", ranks, 2, 2);
		p.shared = 1;
		p.odirect = 1;
		p.bs = 1 << 20;
		p.file_size = size;
		p.keep_files = 1;
		p.ioengine = engines[e];
		p.queue_depth = e ? 4 : 0;
		j = run(&p, 1);
		ck_assert_uint_eq(job_bytes(j), 2 * size);
		for (size_t i = 0; i < 2; i++) {
			const uint8_t *b = j->th[i].buf;
			size_t k = 0;

			while (e == 0 && k < j->th[i].buflen && b[k] == 0)
				k++;
			ck_assert_msg(e || k == j->th[i].buflen,
			    "depth 1: rank %zu wrote through its block buffer (copied)", i);
		}
		bench_job_free(j);
		check_content(path, 0, size, 1 << 20, 0);
		check_content(path, size, size, 1 << 20, 1);
	}
	for (size_t e = 0; e < 2; e++) {
		uint32_t r1[] = { 1 };

		mkparams(&p, "rand-write", tmp, "od", r1, 1, 2);
		p.shared = 1;
		p.odirect = 1;
		p.bs = 4096;
		p.file_size = size;
		p.keep_files = 1;
		p.ioengine = engines[e];
		p.queue_depth = e ? 8 : 0;
		j = run(&p, 1);
		ck_assert_uint_eq(atomic_load(&j->th[0].ops), size / 4096);
		bench_job_free(j);
		check_content(path, size, size, 4096, 1);
	}
	ck_assert_uint_gt(gzip_size(path), 2 * size * 98 / 100);
	ck_assert_uint_eq(dup_chunks(path, 2 * size), 0);
	mkparams(&p, "rand-read", tmp, "od", ranks + 1, 1, 2);
	p.shared = 1;
	p.odirect = 1;
	p.verify = 1;
	p.bs = 4096;
	p.file_size = size;
	j = run(&p, 1);
	ck_assert_uint_eq(job_bytes(j), size);
	bench_job_cleanup(j);
	bench_job_free(j);
}
END_TEST

/* Make io_uring_setup(2) fail with ENOSYS in this (forked) test process
 * only, as on a kernel without io_uring or with it disabled. */
static void
deny_io_uring(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	ck_assert_int_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
}

/* Without io_uring, queue depth 8 falls back to libaio, says so, and still
 * reads every block once; asking for io_uring by name fails plainly. */
START_TEST(t_iodepth_fallback)
{
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_job *j;
	Knob__PhaseResult r;

	deny_io_uring();
	mkparams(&p, "rand-read", tmp, "fb", ranks, 1, 1);
	p.bs = 4096;
	p.queue_depth = 8;
	p.verify = 1;
	p.keep_files = 1;
	j = run(&p, 1);
	ck_assert_uint_eq(atomic_load(&j->th[0].ops), 256);
	ck_assert_msg(strstr(j->warning, "io_uring unavailable") &&
	    strstr(j->warning, "libaio"), "%s", j->warning);
	bench_job_result(j, &r);
	ck_assert_str_eq(r.ioengine, "libaio");
	bench_result_free(&r);
	bench_job_free(j);
	mkparams(&p, "rand-read", tmp, "fb", ranks, 1, 1);
	p.bs = 4096;
	p.queue_depth = 8;
	p.ioengine = IOE_URING;
	j = run(&p, 0);
	ck_assert_msg(strstr(j->err, "io_uring set-up (queue depth 8)"), "%s", j->err);
	bench_job_cleanup(j);
	bench_job_free(j);
}
END_TEST

/* Time-based: 1 s over a 16-block file throttled to 300 IOPS wraps around
 * (many passes); rand-rw 70 reads about 70 %, and its writes are right. */
START_TEST(t_runtime_rwmix)
{
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_job *j;
	uint64_t t0 = now_mono_ns(), ops, rd;

	mkparams(&p, "rand-read", tmp, "tb", ranks, 1, 1);
	p.bs = 4096;
	p.file_size = 16 * 4096;
	p.runtime_s = 1;
	p.rate_iops = 300;
	p.verify = 1;
	p.keep_files = 1;
	j = run(&p, 1);
	ops = atomic_load(&j->th[0].ops);
	ck_assert_uint_ge(now_mono_ns() - t0, 1000000000ull);
	ck_assert_msg(ops > 200 && ops <= 301, "ops %llu", (unsigned long long)ops);
	ck_assert_uint_eq(job_bytes(j), ops * 4096);
	bench_job_free(j);

	mkparams(&p, "rand-rw", tmp, "tb", ranks, 1, 1);
	p.bs = 4096;
	p.file_size = 4 << 20;
	p.rwmix_read = 70;
	p.keep_files = 1;
	j = run(&p, 1);
	ops = atomic_load(&j->th[0].ops);
	rd = atomic_load(&j->th[0].read_ops);
	ck_assert_uint_eq(ops, 1024);
	ck_assert_msg(rd > 650 && rd < 780, "reads %llu of %llu", (unsigned long long)rd,
	    (unsigned long long)ops);
	ck_assert_uint_eq(atomic_load(&j->th[0].read_bytes), rd * 4096);
	bench_job_free(j);
	mkparams(&p, "seq-read", tmp, "tb", ranks, 1, 1);
	p.bs = 4096;
	p.file_size = 4 << 20;
	p.verify = 1;
	j = run(&p, 1);
	bench_job_cleanup(j);
	bench_job_free(j);
}
END_TEST

/* --fallocate native allocates the file in prepare, before the timing;
 * none (the default) leaves allocation to the timed writes. */
START_TEST(t_fallocate)
{
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_job *j;
	char path[PATH_MAX + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/knob.fa/f.00000000", tmp);
	for (int fa = 0; fa < 2; fa++) {
		mkparams(&p, "seq-write", tmp, "fa", ranks, 1, 1);
		p.fallocate = fa;
		p.keep_files = 1;
		j = bench_job_new(&p, "testnode");
		ck_assert_int_eq(bench_job_prepare(j), 0);
		if (fa) {
			ck_assert_int_eq(stat(path, &st), 0);
			ck_assert_uint_ge((uint64_t)st.st_blocks * 512, 1 << 20);
		} else
			ck_assert(stat(path, &st) < 0 || st.st_blocks == 0);
		bench_job_go(j);
		while (bench_job_wait(j, 1000) != BJ_DONE)
			;
		bench_job_join(j);
		ck_assert_int_eq(j->th[0].failed, 0);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_uint_eq((uint64_t)st.st_size, 1 << 20);
		check_content(path, 0, 1 << 20, 64 << 10, 0);
		bench_job_cleanup(j);
		bench_job_free(j);
	}
}
END_TEST

/* kB of AnonHugePages in the mapping of /proc/self/smaps that holds p. */
static long
anon_huge_kb(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	int in = 0;
	long kb = -1;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)	/* a mapping's first line */
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	ck_assert_msg(kb >= 0, "no mapping holds %p", p);
	return kb;
}

/* The engine's O_DIRECT buffers: by default on 2 MiB-aligned huge pages
 * where THP allows (else the phase warns), with --buffer-pages 4k on
 * 4 KiB pages, as IOR's and fio's; the data written is the same. */
START_TEST(t_buffer_pages)
{
	uint32_t ranks[] = { 0 };
	struct bench_params p;
	struct bench_job *j;
	char path[PATH_MAX + 64];
	int thp = bench_buf_pages() == NULL;	/* this kernel's THP is not off */
	Knob__PhaseResult r;

	snprintf(path, sizeof(path), "%s/knob.bp/f.00000000", tmp);
	for (int sp = 0; sp < 2; sp++) {
		struct bench_thread *t;

		mkparams(&p, "seq-write", tmp, "bp", ranks, 1, 1);
		p.odirect = 1;
		p.bs = 1 << 20;
		p.file_size = 8 << 20;
		p.keep_files = 1;
		p.small_pages = sp;
		j = bench_job_new(&p, "testnode");
		ck_assert_int_eq(bench_job_prepare(j), 0);
		t = &j->th[0];
		ck_assert_ptr_nonnull(t->wpool);
		if (sp) {
			ck_assert_int_eq(anon_huge_kb(t->wpool), 0);
			ck_assert_int_eq(anon_huge_kb(t->buf), 0);
			ck_assert_ptr_null(strstr(j->warning, "4 KiB pages"));
		} else {
			ck_assert_uint_eq((uintptr_t)t->wpool % BENCH_HUGE, 0);
			ck_assert_uint_eq((uintptr_t)t->buf % BENCH_HUGE, 0);
			ck_assert_uint_eq(bench_buf_size(j->pool.len, 1) % BENCH_HUGE, 0);
			if (thp) {
				ck_assert_int_ge(anon_huge_kb(t->wpool), 2048);
				ck_assert_int_ge(anon_huge_kb(t->buf), 2048);
			} else
				ck_assert_msg(strstr(j->warning, "4 KiB pages") != NULL,
				    "THP off, no warning: '%s'", j->warning);
		}
		bench_job_go(j);
		while (bench_job_wait(j, 1000) != BJ_DONE)
			;
		bench_job_join(j);
		ck_assert_msg(!t->failed, "%s", t->err);
		check_content(path, 0, 8 << 20, 1 << 20, 0);
		/* the result says which, for the record and compare */
		bench_job_result(j, &r);
		ck_assert_str_eq(r.buffer_pages, sp || !thp ? "4k" : "huge");
		bench_result_free(&r);
		bench_job_cleanup(j);
		bench_job_free(j);
	}
}
END_TEST

/* Ranks 0 and 1 of 2 (nodeA, nodeB) run kind on wid's shared file, size
 * per rank in segs segments, files kept; rd: verify every byte and read
 * the other rank's data; b_first: rank 1 prepares before rank 0. */
static void
run_shared_pair(const char *kind, const char *wid, uint64_t bs, uint64_t size, uint64_t segs,
    int rd, int b_first)
{
	uint32_t ra[] = { 0 }, rb[] = { 1 };
	struct bench_params pa, pb;
	struct bench_job *ja, *jb;

	mkparams(&pa, kind, tmp, wid, ra, 1, 2);
	mkparams(&pb, kind, tmp, wid, rb, 1, 2);
	pa.shared = pb.shared = 1;
	pa.segments = pb.segments = segs;
	pa.bs = pb.bs = bs;
	pa.file_size = pb.file_size = size;
	pa.keep_files = pb.keep_files = 1;
	pa.reader_shift = pb.reader_shift = (uint32_t)rd;
	pa.verify = pb.verify = rd;
	ja = bench_job_new(&pa, "nodeA");
	jb = bench_job_new(&pb, "nodeB");
	if (b_first)
		run_two(jb, ja);
	else
		run_two(ja, jb);
	ck_assert_msg(!ja->th[0].failed && !jb->th[0].failed, "%s %s", ja->th[0].err,
	    jb->th[0].err);
	ck_assert_uint_eq(job_bytes(ja) + job_bytes(jb), 2 * size);
	bench_job_free(ja);
	bench_job_free(jb);
}

/* wid's shared file is exactly both ranks' data, every segment of each
 * in its place with its bytes; then it is removed. */
static void
check_shared_pair(const char *wid, uint64_t bs, uint64_t size, uint64_t segs)
{
	uint32_t ra[] = { 0 };
	struct bench_params p;
	char path[PATH_MAX + 64];
	struct stat st;
	uint64_t seg = size / segs;

	snprintf(path, sizeof(path), "%s/knob.%s/shared", tmp, wid);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 2 * size);
	for (uint64_t s = 0; s < segs; s++)
		for (uint32_t r = 0; r < 2; r++)
			check_content(path, (s * 2 + r) * seg, seg, bs, r);
	mkparams(&p, "seq-read", tmp, wid, ra, 1, 2);
	ck_assert_int_eq(bench_cleanup_params(&p), 0);
	bench_params_free(&p);
}

/* IOR -s: two "nodes", 4 segments of 2 transfers of 47008 bytes per rank
 * (io500 hard); segment s of rank r at (s*2 + r) * 94016; then read back
 * with reader shift and verify. */
START_TEST(t_segments)
{
	const uint64_t bs = 47008, seg = 2 * bs;

	for (int k = 0; k < 2; k++)
		run_shared_pair(k ? "seq-read" : "seq-write", "seg", bs, 4 * seg, 4, k, 0);
	check_shared_pair("seg", bs, 4 * seg, 4);
}
END_TEST

/* Prefill of a size that is not a multiple of the 1 MiB chunk: rank 1
 * prepares first, rank 0 after it; rank 0's last chunk must stop at its
 * range (and at each segment's end), or it stamps rank 1's first blocks
 * (the read of rank 1's data fails) and leaves a hole at a segment's end. */
static void
prefill_shared(const char *kind, uint64_t bs, uint64_t size, uint64_t segs)
{
	run_shared_pair(kind, "pfs", bs, size, segs, 1, 1);
	check_shared_pair("pfs", bs, size, segs);
}

/* Prefill writes exactly each rank's blocks: N-to-1 with 300 4 KiB blocks
 * (chunks of 256), with 2 segments of 7 256 KiB blocks (chunks of 4), and
 * an N-to-N file of 18 64 KiB blocks is --size long, not 32 blocks. */
START_TEST(t_prefill_partial_chunk)
{
	uint32_t r0[] = { 0 };
	struct bench_params p;
	struct bench_job *j;
	char path[PATH_MAX + 64];
	struct stat st;

	prefill_shared("rand-read", 4096, 1200 << 10, 1);
	prefill_shared("seq-read", 256 << 10, 3584 << 10, 2);
	mkparams(&p, "seq-read", tmp, "pfn", r0, 1, 1);
	p.file_size = 18 * (64 << 10);
	p.keep_files = 1;
	j = run(&p, 1);
	ck_assert_uint_eq(job_bytes(j), 18 * (64 << 10));
	bench_job_free(j);
	snprintf(path, sizeof(path), "%s/knob.pfn/f.%08u", tmp, 0u);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 18 * (64 << 10));
	check_content(path, 0, 18 * (64 << 10), 64 << 10, 0);
	mkparams(&p, "seq-read", tmp, "pfn", r0, 1, 1);
	ck_assert_int_eq(bench_cleanup_params(&p), 0);
	bench_params_free(&p);
}
END_TEST

/* Options that do not go together are refused before anything runs. */
START_TEST(t_option_checks)
{
	static const struct { const char *kind; int shared; uint32_t rwmix, qd, runtime;
	    uint64_t segs; const char *eng, *want; } bad[] = {
		{ "rand-read", 0, 70, 0, 0, 0, "", "rand-rw only" },
		{ "seq-write", 0, 0, 0, 0, 4, "", "shared file" },
		{ "seq-write", 1, 0, 0, 0, 3, "", "multiple of segments" },
		{ "rand-read", 0, 0, 8, 0, 0, "psync", "queue depth 1" },
		{ "rand-read", 0, 0, 8, 0, 0, "spdk", "unknown I/O engine" },
		{ "md-stat", 0, 0, 0, 5, 0, "", "data phases only" },
	};
	struct bench_params p;
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		Knob__PhaseSpec s = KNOB__PHASE_SPEC__INIT;

		s.phase_id = (char *)(uintptr_t)"opt";
		s.kind = (char *)(uintptr_t)bad[i].kind;
		s.dir = (char *)(uintptr_t)"/tmp/x";
		s.threads_total = 1;
		s.block_size = 4096;
		s.file_size = 4096 * 16;
		s.shared = bad[i].shared;
		s.rwmix_read = bad[i].rwmix;
		s.queue_depth = bad[i].qd;
		s.runtime_s = bad[i].runtime;
		s.segments = bad[i].segs;
		s.ioengine = (char *)(uintptr_t)bad[i].eng;
		err[0] = '\0';
		ck_assert_int_eq(bench_params_from_spec(&p, &s, "", err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, bad[i].want), "%zu: '%s'", i, err);
	}
}
END_TEST

/* cpu_bind: each thread on the i-th CPU the process may use, round
 * robin, and there when its phase ends; the allowed set is honoured (the
 * test narrows it to one CPU); without cpu_bind the threads float. */
START_TEST(t_cpu_bind)
{
	uint32_t ranks[] = { 0, 1, 2 };
	struct bench_params p;
	struct bench_job *j;
	cpu_set_t saved, one;
	int cpus[CPU_SETSIZE], n = 0;

	ck_assert_int_eq(sched_getaffinity(0, sizeof(saved), &saved), 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &saved))
			cpus[n++] = c;
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 2) {	/* one CPU allowed: the last of the set */
			CPU_ZERO(&one);
			CPU_SET(cpus[n - 1], &one);
			ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
		}
		mkparams(&p, "md-create", tmp, "cb", ranks, 3, 3);
		p.cpu_bind = pass > 0;
		j = run(&p, 1);
		for (size_t i = 0; i < j->nth; i++) {
			int want = pass == 0 ? -1 : pass == 1 ? cpus[i % (size_t)n] : cpus[n - 1];

			ck_assert_int_eq(j->th[i].bound_cpu, want);
			if (want >= 0)
				ck_assert_int_eq(j->th[i].ran_cpu, want);
		}
		ck_assert_int_eq(bench_job_cleanup(j), 0);
		bench_job_free(j);
	}
	ck_assert_int_eq(sched_setaffinity(0, sizeof(saved), &saved), 0);
}
END_TEST

/* Each worker has a descriptor table of its own, as a rank (a process)
 * has, holding stdio and the work directory: a pipe the test opened before
 * the phase is in no worker's table (/proc/self/task/TID/fd), and closing
 * its write end while the workers wait to start gives the reader EOF at
 * once, so a socket the agent closes mid-phase is closed for real.  The
 * phase then runs as before. */
START_TEST(t_worker_fds)
{
	static const char *kinds[] = { "md-create", "seq-write" };
	uint32_t ranks[] = { 0, 1 };
	struct bench_params p;
	struct bench_job *j;

	for (size_t k = 0; k < nitems(kinds); k++) {
		int pfd[2], without = 0, with_wfd = 0;
		struct dirent *de;
		DIR *d;
		char c, path[PATH_MAX];

		ck_assert_int_eq(pipe2(pfd, O_NONBLOCK | O_CLOEXEC), 0);
		mkparams(&p, kinds[k], tmp, "wfd", ranks, 2, 2);
		j = bench_job_new(&p, "testnode");
		ck_assert_msg(bench_job_prepare(j) == 0, "%s", j->err);
		ck_assert_ptr_nonnull(d = opendir("/proc/self/task"));
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/self/task/%s/fd/%d", de->d_name, pfd[1]);
			if (access(path, F_OK) == 0)
				continue;
			without++;
			snprintf(path, sizeof(path), "/proc/self/task/%s/fd/%d", de->d_name, j->wfd);
			with_wfd += access(path, F_OK) == 0;
		}
		closedir(d);
		ck_assert_int_eq(without, (int)j->nth);
		ck_assert_int_eq(with_wfd, (int)j->nth);
		close(pfd[1]);
		ck_assert_int_eq(read(pfd[0], &c, 1), 0);	/* EOF, not EAGAIN */
		close(pfd[0]);
		bench_job_go(j);
		while (bench_job_wait(j, 1000) != BJ_DONE)
			;
		bench_job_join(j);
		for (size_t i = 0; i < j->nth; i++)
			ck_assert_msg(!j->th[i].failed, "%s", j->th[i].err);
		if (k == 0)
			for (size_t i = 0; i < j->nth; i++)
				ck_assert_uint_eq(atomic_load(&j->th[i].ops), j->p.md_files);
		else
			ck_assert_uint_eq(job_bytes(j), 2 * j->p.file_size);
		ck_assert_int_eq(bench_job_cleanup(j), 0);
		bench_job_free(j);
	}
}
END_TEST

/* libaio queues only O_DIRECT I/O (io_submit runs buffered I/O before it
 * returns): buffered at depth 8 the phase warns and says it ran at depth 1,
 * O_DIRECT keeps 8, and so does io_uring buffered where it is there.
 * Before, the result claimed depth 8 with no word. */
START_TEST(t_libaio_buffered)
{
	static const char want[] = "libaio queues only with --direct: buffered I/O ran at "
	    "queue depth 1";
	struct io_uring ring;
	int have = io_uring_queue_init(2, &ring, 0) == 0;

	if (have)
		io_uring_queue_exit(&ring);
	for (int c = 0; c < 3; c++) {
		uint32_t ranks[] = { 0 };
		struct bench_params p;
		struct bench_job *j;
		Knob__PhaseResult r;

		if (c == 2 && !have)
			continue;
		mkparams(&p, "rand-write", tmp, "la", ranks, 1, 1);
		p.bs = 4096;
		p.queue_depth = 8;
		p.ioengine = c == 2 ? IOE_URING : IOE_AIO;
		p.odirect = c == 1;
		j = run(&p, 1);
		ck_assert_uint_eq(atomic_load(&j->th[0].ops), 256);
		bench_job_result(j, &r);
		ck_assert_uint_eq(r.iodepth, c == 0 ? 1 : 8);
		ck_assert_msg((strstr(r.warning, want) != NULL) == (c == 0), "%d: %s", c, r.warning);
		bench_result_free(&r);
		bench_job_cleanup(j);
		bench_job_free(j);
	}
}
END_TEST

/* A queued phase's io_uring ring is a descriptor of its worker's own
 * table (its lowest free number, 3 there): freeing the job closes none of
 * the process's.  The process's 3..7 (the test framework's) are set aside
 * for the run and stand-ins put there, as an agent has connections there;
 * before, the ring was closed from the freeing thread, which closed the
 * process's descriptor of that number (an agent lost its controller's
 * connection in its next phase). */
START_TEST(t_ring_fd_own_table)
{
	uint32_t ranks[] = { 0, 1 };
	struct bench_params p;
	struct bench_job *j;
	struct io_uring ring;
	int saved[5], flags[5], closed = 0, nul, fd;

	if (io_uring_queue_init(2, &ring, 0) != 0)
		return;		/* no io_uring here: no ring to close */
	io_uring_queue_exit(&ring);
	ck_assert_int_ge(fd = open("/dev/null", O_RDONLY | O_CLOEXEC), 0);
	nul = fcntl(fd, F_DUPFD_CLOEXEC, 100);	/* above the numbers it stands in for */
	close(fd);
	ck_assert_int_ge(nul, 100);
	for (int i = 0; i < 5; i++) {
		flags[i] = fcntl(3 + i, F_GETFD);
		saved[i] = fcntl(3 + i, F_DUPFD_CLOEXEC, 100);
		ck_assert_int_ge(dup3(nul, 3 + i, O_CLOEXEC), 0);
	}
	close(nul);
	mkparams(&p, "rand-write", tmp, "rf", ranks, 2, 2);
	p.bs = 4096;
	p.queue_depth = 8;
	p.ioengine = IOE_URING;
	j = bench_job_new(&p, "testnode");
	if (bench_job_run(j) == 0)
		bench_job_cleanup(j);
	bench_job_free(j);
	for (int i = 0; i < 5; i++) {
		closed |= (fcntl(3 + i, F_GETFD) == -1) << i;
		close(3 + i);
		if (saved[i] < 0)
			continue;
		dup3(saved[i], 3 + i, flags[i] & FD_CLOEXEC ? O_CLOEXEC : 0);
		close(saved[i]);
	}
	ck_assert_msg(closed == 0, "the job closed the process's descriptors %#x << 3", closed);
}
END_TEST

/* A release's progress (PhaseProgress release_removed): the clean-up adds
 * every entry it removes to bench_params.removed, the rank files and the
 * metadata trees and the work directory itself, so that the controller can
 * tell a slow delete (the count moves) from one stuck in the kernel. */
START_TEST(t_cleanup_counts_removed)
{
	static const char *const kinds[] = { "seq-write", "md-create" };
	uint32_t ranks[] = { 0, 1 };
	_Atomic uint64_t removed;
	struct bench_params p;
	char wd[PATH_MAX + 16];
	int n;

	for (size_t k = 0; k < nitems(kinds); k++) {
		mkparams(&p, kinds[k], tmp, "cnt", ranks, 2, 2);
		p.file_size = 64 << 10;
		p.md_files = 10;
		p.keep_files = 1;
		bench_job_free(run(&p, 1));	/* the job took p */
		mkparams(&p, kinds[k], tmp, "cnt", ranks, 2, 2);
		snprintf(wd, sizeof(wd), "%s/knob.cnt", tmp);
		n = cu_count_entries(wd) + 1;	/* and knob.cnt */
		ck_assert_int_gt(n, 2);
		atomic_store(&removed, 0);
		p.removed = &removed;
		ck_assert_int_eq(bench_cleanup_params(&p), 0);
		ck_assert_uint_eq(atomic_load(&removed), (uint64_t)n);
		ck_assert(!dir_exists(wd));
		bench_params_free(&p);
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("bench_engine");
	TCase *tc = cu_tcase("engine", setup, teardown, 60), *tco;

	tcase_add_unchecked_fixture(tc, cu_base_setup, cu_base_teardown);

	log_init("check_bench_engine", LOG_LVL_WARN);
	tcase_add_test(tc, t_nn_write_read);
	tcase_add_test(tc, t_n1_shared);
	tcase_add_test(tc, t_read_detects_wrong_data);
	tcase_add_test(tc, t_random_and_memwarn);
	tcase_add_test(tc, t_random_offsets_order);
	tcase_add_test(tc, t_md_sweep);
	tcase_add_test(tc, t_stonewall_wearout);
	tcase_add_test(tc, t_stonewall_sync);
	tcase_add_test(tc, t_drop_caches_sysroot);
	tcase_add_test(tc, t_enospc);
	tcase_add_test(tc, t_path_safety);
	tcase_add_test(tc, t_fio_external);
	tcase_add_test(tc, t_ior_standin);
	tcase_add_test(tc, t_incompressible);
	tcase_add_test(tc, t_verify_every_byte);
	tcase_add_test(tc, t_md_read_checks);
	tcase_add_test(tc, t_md_content);
	tcase_add_test(tc, t_md_prepare_probe);
	tcase_add_test(tc, t_md_fullpath);
	tcase_add_loop_test(tc, t_md_midpath_symlink, 0, nitems(midpath));
	tcase_add_test(tc, t_md_shared_tree);
	tcase_add_test(tc, t_md_dirs_and_total);
	tcase_add_test(tc, t_iodepth);
	tcase_add_test(tc, t_odirect_write);
	tcase_add_test(tc, t_iodepth_fallback);
	tcase_add_test(tc, t_runtime_rwmix);
	tcase_add_test(tc, t_fallocate);
	tcase_add_test(tc, t_buffer_pages);
	tcase_add_test(tc, t_cpu_bind);
	tcase_add_test(tc, t_worker_fds);
	tcase_add_test(tc, t_segments);
	tcase_add_test(tc, t_prefill_partial_chunk);
	tcase_add_test(tc, t_option_checks);
	tcase_add_test(tc, t_libaio_buffered);
	tcase_add_test(tc, t_ring_fd_own_table);
	tcase_add_test(tc, t_cleanup_counts_removed);
	suite_add_tcase(s, tc);
	/* CK_RUN_CASE=offsets build/tests/check_bench_engine prints the chi-square figures */
	tco = tcase_create("offsets");
	tcase_add_test(tco, t_perm_coverage);
	tcase_add_test(tco, t_perm_chisquare);
	tcase_add_test(tco, t_block_stamp_in);
	tcase_add_test(tco, t_pool_span);
	suite_add_tcase(s, tco);
	return cu_run(s);
}
