/* Benchmark engine: the I/O worker threads.  Sequential N-to-N and N-to-1
 * (optionally in strided segments, IOR -s), random and mixed random over
 * prefilled files, at queue depth 1 (psync) or deeper (bench_aio.c);
 * time-based runs; O_DIRECT, preallocation, fsync+close inside the timing,
 * stonewall with wear-out, drop caches, reader shift, verification.
 * Metadata phases are in bench_md.c.  Everything happens inside
 * DIR/knob.<workdir-id>/ through openat(2) with O_NOFOLLOW; see bench.h
 * for the layout. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "bench.h"
#include "log.h"
#include "util.h"

/* wr: 0 reads, 1 writes, 2 both (rand-rw); read: needs existing data */
static const struct {
	const char *name;
	int md, ext, read, wr, rnd;
} kinds[BK__COUNT] = {
	[BK_SEQ_WRITE] = { "seq-write", 0, 0, 0, 1, 0 },
	[BK_SEQ_READ] = { "seq-read", 0, 0, 1, 0, 0 },
	[BK_RAND_WRITE] = { "rand-write", 0, 0, 1, 1, 1 },
	[BK_RAND_READ] = { "rand-read", 0, 0, 1, 0, 1 },
	[BK_RAND_RW] = { "rand-rw", 0, 0, 1, 2, 1 },
	[BK_MD_CREATE] = { "md-create", 1, 0, 0, 0, 0 },
	[BK_MD_STAT] = { "md-stat", 1, 0, 1, 0, 0 },
	[BK_MD_READ] = { "md-read", 1, 0, 1, 0, 0 },
	[BK_MD_REMOVE] = { "md-remove", 1, 0, 1, 0, 0 },
	[BK_MD_MKDIR] = { "md-mkdir", 1, 0, 0, 0, 0 },
	[BK_MD_DIRSTAT] = { "md-dirstat", 1, 0, 1, 0, 0 },
	[BK_MD_RMDIR] = { "md-rmdir", 1, 0, 1, 0, 0 },
	[BK_FIO] = { "fio", 0, 1, 0, 0, 0 },
	[BK_IOR] = { "ior", 0, 1, 0, 0, 0 },
	[BK_MDTEST] = { "mdtest", 0, 1, 0, 0, 0 },
};

static const char *const ioengines[] = {
	[IOE_AUTO] = "auto", [IOE_PSYNC] = "psync", [IOE_URING] = "io_uring", [IOE_AIO] = "libaio",
};

int
bench_ioengine_parse(const char *s)
{
	if (s == NULL || s[0] == '\0')
		return IOE_AUTO;
	for (size_t i = 0; i < nitems(ioengines); i++)
		if (strcmp(ioengines[i], s) == 0)
			return (int)i;
	return -1;
}

const char *
bench_ioengine_name(int e)
{
	return e >= 0 && (size_t)e < nitems(ioengines) ? ioengines[e] : "?";
}

int
bench_kind_parse(const char *s)
{
	for (int i = 0; i < BK__COUNT; i++)
		if (strcmp(kinds[i].name, s) == 0)
			return i;
	return -1;
}

const char *
bench_kind_name(int k)
{
	return (k >= 0 && k < BK__COUNT) ? kinds[k].name : "?";
}

int bench_kind_is_md(int k) { return k >= 0 && k < BK__COUNT && kinds[k].md; }
int bench_kind_is_ext(int k) { return k >= 0 && k < BK__COUNT && kinds[k].ext; }
int bench_kind_is_read(int k) { return k >= 0 && k < BK__COUNT && kinds[k].read; }
int bench_kind_writes(int k) { return k >= 0 && k < BK__COUNT && kinds[k].wr; }
int bench_kind_is_rand(int k) { return k >= 0 && k < BK__COUNT && kinds[k].rnd; }

int
bench_check_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > BENCH_ID_MAX || id[0] == '.' || id[0] == '-')
		return -1;
	return strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._-") == n ? 0 : -1;
}

/* Directories that are never a benchmark directory, nor anything under them. */
static const char *const sys_trees[] = {
	"/etc", "/usr", "/proc", "/sys", "/dev", "/boot", "/run", "/bin", "/sbin",
	"/lib", "/lib32", "/lib64", "/libx32", "/var/lib", "/var/log", "/var/cache",
	"/var/spool", "/var/run", "/var/mail", "/snap", "/efi",
};
/* Directories refused themselves (their subdirectories are fine). */
static const char *const sys_exact[] = {
	"/", "/var", "/home", "/root", "/mnt", "/media", "/opt", "/srv", "/tmp",
	"/var/tmp",
};

int
bench_check_dir(const char *path, char *err, size_t errlen)
{
	size_t i, n;

	if (path[0] != '/') {
		snprintf(err, errlen, "%s: benchmark directory must be absolute", path);
		return -1;
	}
	if (strstr(path, "/../") || strstr(path, "/./") || strstr(path, "//")) {
		snprintf(err, errlen, "%s: benchmark directory must be a canonical path", path);
		return -1;
	}
	for (i = 0; i < nitems(sys_exact); i++)
		if (strcmp(path, sys_exact[i]) == 0)
			goto refuse;
	for (i = 0; i < nitems(sys_trees); i++) {
		n = strlen(sys_trees[i]);
		if (strncmp(path, sys_trees[i], n) == 0 && (path[n] == '\0' || path[n] == '/'))
			goto refuse;
	}
	return 0;
refuse:
	snprintf(err, errlen, "%s: refusing a system path as benchmark directory "
	    "(use a subdirectory of a scratch file system)", path);
	return -1;
}

void
bench_params_free(struct bench_params *p)
{
	size_t i;

	free(p->ranks);
	for (i = 0; p->ext_args && p->ext_args[i]; i++)
		free(p->ext_args[i]);
	free(p->ext_args);
	for (i = 0; i < p->nhosts; i++)
		free(p->hosts[i]);
	free(p->hosts);
	free(p->host_slots);
	memset(p, 0, sizeof(*p));
}

/* Deep copy of src into dst (dst is overwritten, not freed). */
void
bench_params_copy(struct bench_params *dst, const struct bench_params *src)
{
	size_t i;

	*dst = *src;
	dst->ranks = xcalloc(src->nranks, sizeof(*dst->ranks));
	if (src->nranks)
		memcpy(dst->ranks, src->ranks, src->nranks * sizeof(*dst->ranks));
	dst->ext_args = xcalloc(src->next_args + 1, sizeof(char *));
	for (i = 0; i < src->next_args; i++)
		dst->ext_args[i] = xstrdup(src->ext_args[i]);
	dst->hosts = xcalloc(src->nhosts + 1, sizeof(char *));
	dst->host_slots = xcalloc(src->nhosts + 1, sizeof(uint32_t));
	for (i = 0; i < src->nhosts; i++) {
		dst->hosts[i] = xstrdup(src->hosts[i]);
		dst->host_slots[i] = src->host_slots[i];
	}
}

#define PERR(...) do { snprintf(err, errlen, __VA_ARGS__); goto fail; } while (0)

/* Options of data phases that do not depend on sizes. 0 or -1 (err). */
static int
data_check(struct bench_params *p, char *err, size_t errlen)
{
	if (p->rwmix_read && p->kind != BK_RAND_RW)
		PERR("a read/write mix applies to rand-rw only");
	if (p->kind == BK_RAND_RW && p->rwmix_read == 0)
		p->rwmix_read = 50;
	if (p->rwmix_read > 100)
		PERR("read percentage above 100");
	if (p->segments > 1 && !p->shared)
		PERR("segments apply to the shared file (N-to-1) only");
	if (p->segments > (1ull << 32))
		PERR("too many segments");
	if (p->queue_depth > 4096)
		PERR("queue depth above 4096");
	if (p->queue_depth > 1 && p->ioengine == IOE_PSYNC)
		PERR("psync has queue depth 1 (use io_uring or libaio)");
	return 0;
fail:
	return -1;
}

/* Validate a spec without touching the file system and copy it into p. */
int
bench_params_from_spec(struct bench_params *p, const Knob__PhaseSpec *s,
    const char *sysroot, char *err, size_t errlen)
{
	const char *wid;
	size_t i;

	memset(p, 0, sizeof(*p));
	if (s == NULL)
		PERR("phase spec missing");
	if (s->phase_id == NULL || bench_check_id(s->phase_id) < 0)
		PERR("bad phase id (1-64 of A-Z a-z 0-9 . _ -)");
	snprintf(p->phase_id, sizeof(p->phase_id), "%s", s->phase_id);
	wid = (s->workdir_id && s->workdir_id[0]) ? s->workdir_id : s->phase_id;
	if (bench_check_id(wid) < 0)
		PERR("bad workdir id");
	snprintf(p->workdir_id, sizeof(p->workdir_id), "%s", wid);
	if ((p->kind = bench_kind_parse(s->kind ? s->kind : "")) < 0)
		PERR("unknown phase kind '%s'", s->kind ? s->kind : "");
	if (s->dir == NULL || s->dir[0] != '/' || strlen(s->dir) >= sizeof(p->dir))
		PERR("benchmark directory must be an absolute path");
	snprintf(p->dir, sizeof(p->dir), "%s", s->dir);
	snprintf(p->sysroot, sizeof(p->sysroot), "%s", sysroot ? sysroot : "");
	p->bs = s->block_size;
	p->file_size = s->file_size;
	p->md_write_size = s->md_write_size;
	p->md_files = s->md_files;
	p->seed = s->seed;
	p->threads_total = s->threads_total;
	p->nodes_total = s->nodes_total;
	p->node_index = s->node_index;
	p->shared = s->shared;
	p->odirect = s->odirect;
	p->fsync = s->fsync;
	p->drop_caches = s->drop_caches;
	p->keep_files = s->keep_files;
	p->persist_files = s->persist_files;
	p->stonewall_s = s->stonewall_s;
	p->files_per_dir = s->files_per_dir;
	p->reader_shift = s->reader_shift;
	p->rate_iops = s->rate_iops;
	p->ext_timeout_s = s->ext_timeout_s;
	p->files_total = s->files_total;
	p->verify = s->verify;
	p->compress_pct = s->compress_pct;
	p->md_relative = s->md_relative;
	p->md_shared = s->md_shared;
	p->md_depth = s->md_depth;
	p->md_branch = s->md_branch;
	p->md_leaf_only = s->md_leaf_only;
	p->queue_depth = s->queue_depth;
	p->runtime_s = s->runtime_s;
	p->rwmix_read = s->rwmix_read;
	p->fallocate = s->fallocate;
	p->segments = s->segments;
	if ((p->ioengine = bench_ioengine_parse(s->ioengine)) < 0)
		PERR("unknown I/O engine '%s' (psync, io_uring, libaio)", s->ioengine);
	if (s->ext_tool && strlen(s->ext_tool) < sizeof(p->ext_tool))
		snprintf(p->ext_tool, sizeof(p->ext_tool), "%s", s->ext_tool);
	if (s->n_ranks > 4096)
		PERR("too many ranks on one node (%zu)", s->n_ranks);
	if (p->threads_total == 0 || p->threads_total > (1u << 20))
		PERR("threads_total must be 1..1048576");
	p->ranks = xcalloc(s->n_ranks, sizeof(*p->ranks));
	p->nranks = s->n_ranks;
	for (i = 0; i < s->n_ranks; i++) {
		if (s->ranks[i] >= p->threads_total)
			PERR("rank %u out of range", s->ranks[i]);
		p->ranks[i] = s->ranks[i];
	}
	if (s->n_ext_args > 256 || s->n_hosts > 100000 || s->n_hosts != s->n_host_slots)
		PERR("bad external tool arguments or hosts");
	p->ext_args = xcalloc(s->n_ext_args + 1, sizeof(char *));
	for (i = 0; i < s->n_ext_args; i++)
		p->ext_args[i] = xstrdup(s->ext_args[i]);
	p->next_args = s->n_ext_args;
	p->hosts = xcalloc(s->n_hosts + 1, sizeof(char *));
	p->host_slots = xcalloc(s->n_hosts + 1, sizeof(uint32_t));
	p->nhosts = s->n_hosts;
	for (i = 0; i < s->n_hosts; i++) {
		if (bench_check_id(s->hosts[i]) < 0)
			PERR("bad host name in spec");
		p->hosts[i] = xstrdup(s->hosts[i]);
		p->host_slots[i] = s->host_slots[i];
	}
	if (bench_kind_is_ext(p->kind))
		return 0;
	if (p->compress_pct > 100)
		PERR("compressible percentage above 100");
	if (bench_kind_is_md(p->kind)) {
		if (p->files_per_dir == 0)
			p->files_per_dir = 1024;
		if (p->md_files == 0)
			p->md_files = p->files_per_dir;
		if (bench_md_check(p, err, errlen) < 0)
			goto fail;
		return 0;
	}
	if (data_check(p, err, errlen) < 0)
		goto fail;
	if (p->bs == 0)
		p->bs = (p->kind == BK_RAND_READ || p->kind == BK_RAND_WRITE) ? 4096 : 1u << 20;
	if (p->bs < 16 || p->bs > BENCH_BS_MAX)
		PERR("block size must be 16 B .. 64 MiB");
	if (p->file_size == 0)
		p->file_size = 64 * p->bs;
	if (p->file_size % p->bs)
		PERR("file size %llu is not a multiple of the block size %llu",
		    (unsigned long long)p->file_size, (unsigned long long)p->bs);
	if (p->odirect && p->bs % BENCH_ALIGN)
		PERR("O_DIRECT needs a block size that is a multiple of %d", BENCH_ALIGN);
	if (p->shared && p->file_size > UINT64_MAX / p->threads_total)
		PERR("shared file too large");
	if (p->segments > 1 && p->file_size % (p->segments * p->bs))
		PERR("size per rank %llu is not a multiple of segments x block size",
		    (unsigned long long)p->file_size);
	return 0;
fail:
	bench_params_free(p);
	return -1;
}

struct bench_job *
bench_job_new(struct bench_params *p, const char *node)
{
	struct bench_job *j = xcalloc(1, sizeof(*j));
	pthread_condattr_t ca;

	j->p = *p;
	memset(p, 0, sizeof(*p));
	snprintf(j->node, sizeof(j->node), "%s", node ? node : "");
	snprintf(j->wname, sizeof(j->wname), "knob.%s", j->p.workdir_id);
	j->dirfd = j->wfd = -1;
	pthread_mutex_init(&j->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cv, &ca);
	pthread_condattr_destroy(&ca);
	return j;
}

void
bench_file_name(char *buf, size_t len, uint32_t rank)
{
	snprintf(buf, len, "f.%08u", rank);
}

uint64_t
bench_mem_total_kb(const char *sysroot)
{
	char path[PATH_MAX], *buf = NULL, *s;
	unsigned long long kb = 0;

	if (path_under_root(path, sizeof(path), sysroot, "/proc/meminfo") < 0)
		return 0;
	if (read_file_bounded(path, 1 << 16, &buf, NULL) < 0)
		return 0;
	if ((s = strstr(buf, "MemTotal:")) != NULL)
		sscanf(s, "MemTotal: %llu", &kb);
	free(buf);
	return kb;
}

#define WB_IOV		1024		/* IOV_MAX on Linux */

/* ------------------------------------------------------------ helpers */

static uint64_t
xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t
thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

ssize_t
bench_full_io(int fd, void *buf, size_t len, uint64_t off, int wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = wr ? pwrite(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done))
		    : pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Rank whose data thread t works on (reader shift applies to reads only). */
static uint32_t
src_rank(const struct bench_job *j, const struct bench_thread *t)
{
	static const int own[] = { BK_SEQ_WRITE, BK_RAND_WRITE, BK_MD_CREATE, BK_MD_REMOVE,
	    BK_MD_MKDIR, BK_MD_RMDIR };

	for (size_t i = 0; i < nitems(own); i++)
		if (j->p.kind == own[i])
			return t->rank;
	if (j->p.reader_shift == 0)
		return t->rank;
	return (uint32_t)((t->rank + (uint64_t)j->p.reader_shift) % j->p.threads_total);
}

/* Bytes of one segment of a rank in the shared file (all of its data
 * without segments). */
static uint64_t
seg_size(const struct bench_job *j)
{
	return j->p.segments > 1 ? j->p.file_size / j->p.segments : j->p.file_size;
}

/* File offset of block b (0 .. file_size/bs - 1) of rank: N-to-N from 0;
 * N-to-1 in the rank's segments, segment s of rank r at (s*N + r)*seg. */
static uint64_t
blk_off(const struct bench_job *j, uint32_t rank, uint64_t b)
{
	uint64_t seg = seg_size(j), bps = seg / j->p.bs;

	if (!j->p.shared)
		return b * j->p.bs;
	return ((b / bps) * j->p.threads_total + rank) * seg + (b % bps) * j->p.bs;
}

static void
data_name(const struct bench_job *j, uint32_t rank, char *name, size_t len)
{
	if (j->p.shared)
		snprintf(name, len, "shared");
	else
		bench_file_name(name, len, rank);
}

static int
open_flags(const struct bench_job *j, int wr)
{
	static const int acc[] = { O_RDONLY, O_WRONLY | O_CREAT, O_RDWR };

	return acc[wr] | O_NOFOLLOW | O_CLOEXEC | (j->p.odirect ? O_DIRECT : 0);
}

static const char *
open_errstr(const struct bench_job *j, int e)
{
	if (e == EINVAL && j->p.odirect)
		return "O_DIRECT not supported by this file system";
	if (e == ELOOP)
		return "is a symbolic link (refused)";
	return strerror(e);
}

/* fallocate(2) what the rank will write (prepare, untimed; fio's
 * fallocate=native): its file, or the whole shared file (harmless where
 * another rank allocated already).  0 or -1 (t->err). */
static int
prealloc(struct bench_thread *t, int fd, const char *name)
{
	struct bench_job *j = t->job;
	uint64_t len = j->p.shared ? j->p.file_size * j->p.threads_total : j->p.file_size;

	if (!j->p.fallocate || fallocate(fd, 0, 0, (off_t)len) == 0)
		return 0;
	TERR(t, "%s: fallocate %s: %s", j->node, name,
	    errno == EOPNOTSUPP ? "not supported by this file system (use --fallocate none)" :
	    strerror(errno));
	return -1;
}

/* Does the rank's data look written already (first and last block stamped)? */
static int
data_present(struct bench_thread *t, int fd)
{
	struct bench_job *j = t->job;
	uint64_t nblk = j->p.file_size / j->p.bs, b[2] = { 0, nblk - 1 };
	uint8_t st[16];

	if (j->p.bs < 16)
		return 0;
	for (int i = 0; i < 2; i++) {
		uint64_t off = blk_off(j, t->rank, b[i]);

		if (pread(fd, st, 16, (off_t)off) != 16 ||
		    bench_block_check(&j->pool, st, 16, t->rank, off, 0) != 0)
			return 0;
	}
	return 1;
}

/* Write the rank's data in prepare (untimed) in chunks of whole blocks. */
static int
prefill_write(struct bench_thread *t, int fd, const char *name)
{
	struct bench_job *j = t->job;
	uint64_t bs = j->p.bs, nblk = j->p.file_size / bs, per, b, k;
	size_t chunk;
	uint8_t *buf = NULL;
	int rc = -1;

	per = bs >= (1u << 20) ? 1 : (1u << 20) / bs;
	if (per > seg_size(j) / bs)
		per = seg_size(j) / bs;		/* a chunk never crosses a segment */
	chunk = (size_t)(per * bs);
	if (posix_memalign((void **)&buf, BENCH_ALIGN, chunk) != 0)
		fatalx("posix_memalign");
	for (b = 0; b < nblk && !j->abort; b += per) {
		uint64_t off = blk_off(j, t->rank, b);
		ssize_t n;

		for (k = 0; k < per; k++)
			bench_block_fill(&j->pool, buf + k * bs, (size_t)bs, t->rank, off + k * bs);
		if ((n = bench_full_io(fd, buf, chunk, off, 1)) < 0 || (size_t)n != chunk) {
			TERR(t, "%s: prefill %s at %llu: %s", j->node, name,
			    (unsigned long long)off, n < 0 ? strerror((int)-n) : "short write");
			goto out;
		}
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

/* Make sure rank's data exists (prepare, untimed): write the rank's range
 * when its first or last block does not carry the rank's stamp. */
static int
prefill(struct bench_thread *t)
{
	struct bench_job *j = t->job;
	struct stat st;
	char name[64];
	int fd, rc = -1;

	data_name(j, t->rank, name, sizeof(name));	/* its own data, not the owner's */
	fd = openat(j->wfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		TERR(t, "%s: open %s: %s", j->node, name, open_errstr(j, errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		TERR(t, "%s: %s is not a regular file", j->node, name);
		goto out;
	}
	if (data_present(t, fd)) {
		rc = 0;
		goto out;
	}
	if (prealloc(t, fd, name) < 0 || prefill_write(t, fd, name) < 0)
		goto out;
	if (fdatasync(fd) < 0) {
		TERR(t, "%s: fdatasync %s: %s", j->node, name, strerror(errno));
		goto out;
	}
	/* Data written by prepare is not part of any measurement: drop it from
	 * the page cache (like fio's invalidate=1), so reads do not hit cache
	 * and O_DIRECT reads do not pay for cached pages of the range. */
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	rc = 0;
out:
	close(fd);
	return rc;
}

/* Preallocated seq-write: create (N-to-N: empty) and allocate the file. */
static int
prepare_write(struct bench_thread *t)
{
	struct bench_job *j = t->job;
	int fd, rc;

	if (!j->p.fallocate)
		return 0;
	fd = openat(j->wfd, t->fname, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
	    (j->p.shared ? 0 : O_TRUNC), 0644);
	if (fd < 0) {
		TERR(t, "%s: open %s: %s", j->node, t->fname, open_errstr(j, errno));
		return -1;
	}
	rc = prealloc(t, fd, t->fname);
	close(fd);
	return rc;
}

int
bench_mkdir_ok(int dfd, const char *name)
{
	struct stat st;

	if (mkdirat(dfd, name, 0755) == 0)
		return 0;
	if (errno != EEXIST)
		return -1;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

/* Per-thread preparation before the barrier. */
static int
thread_prepare(struct bench_thread *t)
{
	struct bench_job *j = t->job;
	size_t len;

	len = bench_kind_is_md(j->p.kind) ? (size_t)j->p.md_write_size : (size_t)j->p.bs;
	if (len < BENCH_ALIGN)
		len = BENCH_ALIGN;
	len = (len + BENCH_ALIGN - 1) / BENCH_ALIGN * BENCH_ALIGN;
	if (posix_memalign(&t->buf, BENCH_ALIGN, len) != 0)
		fatalx("posix_memalign");
	t->buflen = len;
	memset(t->buf, 0, len);
	t->owner = src_rank(j, t);
	t->rng = bench_mix(j->p.seed ^ (0x9E3779B97F4A7C15ull * (t->rank + 1))) | 1;
	if (bench_kind_is_md(j->p.kind))
		return bench_md_prepare(t);
	data_name(j, t->owner, t->fname, sizeof(t->fname));
	if (j->ioengine != IOE_PSYNC && bench_aio_setup(t) < 0)
		return -1;
	if (j->p.kind == BK_SEQ_WRITE)
		return prepare_write(t);
	return prefill(t);
}

/* ------------------------------------------------------------ stonewall */

/* A thread stopped at the stonewall (or finished): publish its count and,
 * when wait, block until the wear-out target is known: the largest count on
 * this node once every thread of the node arrived, or with wall_sync the
 * largest count across all nodes (bench_job_wearout, after the runner
 * reported this node's).  Returns the target. */
static uint64_t
wall_arrive(struct bench_job *j, uint64_t ops, int wait)
{
	uint64_t target;

	pthread_mutex_lock(&j->mu);
	j->nwall++;
	if (ops > j->wall_target)
		j->wall_target = ops;
	pthread_cond_broadcast(&j->cv);
	while (wait && !j->abort && (j->wall_sync ? !j->wall_released : j->nwall < j->nth))
		pthread_cond_wait(&j->cv, &j->mu);
	target = j->wall_target;
	if (j->wall_sync && j->wall_released && j->wall_global > target)
		target = j->wall_global;
	pthread_mutex_unlock(&j->mu);
	return target;
}

void
bench_wall_leave(struct bench_thread *t, int walled)
{
	if (t->job->p.stonewall_s && !walled)
		wall_arrive(t->job, atomic_load(&t->ops), 0);
}

uint64_t
bench_job_wall_max(struct bench_job *j)
{
	uint64_t v;

	pthread_mutex_lock(&j->mu);
	v = j->wall_target;
	pthread_mutex_unlock(&j->mu);
	return v;
}

void
bench_job_wearout(struct bench_job *j, uint64_t target)
{
	pthread_mutex_lock(&j->mu);
	j->wall_global = target;
	j->wall_released = 1;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

uint64_t
bench_after_op(struct bench_thread *t, uint64_t t0, uint64_t t1, uint64_t bytes,
    uint64_t nops, uint64_t limit, uint64_t start_mono, int *walled)
{
	struct bench_job *j = t->job;
	uint64_t total;

	hist_add(t->lat, t1 - t0);
	total = atomic_fetch_add_explicit(&t->bytes, bytes, memory_order_relaxed) + bytes;
	atomic_store_explicit(&t->ops, nops, memory_order_relaxed);
	if (t->ckpt)	/* checkpoint hook (first done) */
		bench_ckpt_op(t->ckpt, t->start_ns + (t1 - start_mono), total, nops);
	if (j->p.rate_iops) {
		uint64_t due = start_mono + nops * 1000000000ull / j->p.rate_iops;
		if (due > t1)
			sleep_ns(due - t1);
	}
	if (j->p.stonewall_s && !*walled &&
	    t1 - start_mono >= (uint64_t)j->p.stonewall_s * 1000000000ull) {
		uint64_t target;

		*walled = 1;
		t->stonewall_ops = nops;
		t->stonewall_ns = t->start_ns + (t1 - start_mono);	/* checkpoint hook */
		target = wall_arrive(j, nops, 1);
		if (target < limit)
			limit = target;
	}
	return limit;
}

/* ------------------------------------------------------------ timed loops */

/* Op i of the data phase of t: sequential or in the random order of the
 * pass (a new order every pass of a time-based run), read or write (the
 * coin of rand-rw).  0 when the phase has no more ops. */
static int
data_next(struct bench_thread *t, uint64_t i, uint64_t start_mono, struct bench_op *op)
{
	struct bench_job *j = t->job;
	uint64_t nblk = j->p.file_size / j->p.bs, pass = i / nblk, b = i % nblk;

	if (j->p.runtime_s) {
		if (now_mono_ns() - start_mono >= (uint64_t)j->p.runtime_s * 1000000000ull)
			return 0;
	} else if (i >= nblk)
		return 0;
	if (kinds[j->p.kind].rnd) {
		if (i == 0 || pass != t->pass) {
			t->pass = pass;
			bench_perm_init(&t->perm, nblk, bench_mix(j->p.seed) ^
			    bench_mix(((uint64_t)t->owner << 32) + pass));
		}
		b = bench_perm_at(&t->perm, b);
	}
	op->wr = kinds[j->p.kind].wr;
	if (op->wr == 2)
		op->wr = xorshift(&t->rng) % 100 >= j->p.rwmix_read;
	op->off = blk_off(j, t->owner, b);
	return 1;
}

/* Book one finished data op: check the transfer and, for reads, the data
 * (stamp, or every byte with verify).  0, or -1 (t->err) to stop. */
static int
data_done(struct bench_thread *t, const struct bench_op *op, const uint8_t *buf, ssize_t n,
    uint64_t t0, uint64_t t1, uint64_t nops, uint64_t *limit, uint64_t start_mono, int *walled)
{
	struct bench_job *j = t->job;
	int64_t bad;

	if (n < 0 || (uint64_t)n != j->p.bs) {
		TERR(t, "%s: %s %s at offset %llu: %s", j->node, op->wr ? "write" : "read",
		    t->fname, (unsigned long long)op->off,
		    n < 0 ? strerror((int)-n) : "short transfer (file too small?)");
		return -1;
	}
	if (!op->wr) {
		if ((bad = bench_block_check(&j->pool, buf, (size_t)j->p.bs, t->owner, op->off,
		    j->p.verify)) < 0) {
			TERR(t, "%s: data mismatch in %s at offset %llu (not what rank %u wrote)",
			    j->node, t->fname, (unsigned long long)op->off, t->owner);
			return -1;
		}
		if (bad > 0) {
			TERR(t, "%s: data mismatch in %s at offset %llu: byte %lld differs from "
			    "what rank %u wrote (corrupted, or written with another --seed or "
			    "--compressible)", j->node, t->fname, (unsigned long long)op->off,
			    (long long)bad - 1, t->owner);
			return -1;
		}
		atomic_fetch_add_explicit(&t->read_ops, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&t->read_bytes, (uint64_t)n, memory_order_relaxed);
	}
	*limit = bench_after_op(t, t0, t1, (uint64_t)n, nops, *limit, start_mono, walled);
	return 0;
}

/* Write the block at off straight from the pool with pwritev (stamps and
 * pool pieces, no copy), in batches of IOV_MAX; O_DIRECT needs one aligned
 * buffer, and a short write finishes from one: those copy. */
static ssize_t
write_block(struct bench_thread *t, int fd, uint64_t off)
{
	struct bench_job *j = t->job;
	size_t bs = (size_t)j->p.bs, from = 0, len, niov;
	uint8_t stamps[WB_IOV / 2][16];
	struct iovec iov[WB_IOV];
	ssize_t n = 0;

	while (!j->p.odirect && from < bs) {
		niov = bench_block_iov(&j->pool, bs, t->owner, off, from, stamps, iov, WB_IOV, &len);
		do
			n = pwritev(fd, iov, (int)niov, (off_t)(off + from));
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return -errno;
		from += (size_t)n;
		if ((size_t)n != len)
			break;
	}
	if (from == bs)
		return (ssize_t)bs;
	bench_block_fill(&j->pool, t->buf, bs, t->owner, off);
	n = bench_full_io(fd, (uint8_t *)t->buf + from, bs - from, off + from, 1);
	return n < 0 ? n : (ssize_t)(from + (size_t)n);
}

/* Queue depth 1: one pread/pwrite at a time. */
static void
data_sync_loop(struct bench_thread *t, int fd, uint64_t start_mono, int *walled)
{
	struct bench_job *j = t->job;
	uint64_t i, limit = UINT64_MAX;
	struct bench_op op;

	for (i = 0; i < limit && !j->abort && data_next(t, i, start_mono, &op); i++) {
		uint64_t t0, t1;
		ssize_t n;

		t0 = now_mono_ns();
		n = op.wr ? write_block(t, fd, op.off) :
		    bench_full_io(fd, t->buf, (size_t)j->p.bs, op.off, 0);
		t1 = now_mono_ns();
		if (data_done(t, &op, t->buf, n, t0, t1, i + 1, &limit, start_mono, walled) < 0)
			break;
	}
}

static void
run_data(struct bench_thread *t, uint64_t start_mono)
{
	struct bench_job *j = t->job;
	int wr = kinds[j->p.kind].wr, fd, walled = 0;

	fd = openat(j->wfd, t->fname, open_flags(j, wr) | (j->p.kind == BK_SEQ_WRITE &&
	    !j->p.shared && !j->p.fallocate ? O_TRUNC : 0), 0644);
	if (fd < 0) {
		TERR(t, "%s: open %s: %s", j->node, t->fname, open_errstr(j, errno));
		goto out;
	}
	if (t->aio)
		bench_aio_run(t, fd, start_mono, data_next, data_done, &walled);
	else
		data_sync_loop(t, fd, start_mono, &walled);
	if (!t->failed && wr && j->p.fsync && fsync(fd) < 0)
		TERR(t, "%s: fsync %s: %s", j->node, t->fname, strerror(errno));
	if (close(fd) < 0 && !t->failed)
		TERR(t, "%s: close %s: %s", j->node, t->fname, strerror(errno));
out:
	bench_wall_leave(t, walled);
}

/* I/O thread: prepare, wait at the barrier, run timed, report done. */
static void *
io_thread(void *arg)
{
	struct bench_thread *t = arg;
	struct bench_job *j = t->job;
	uint64_t m0, m1, c0;
	int ok;

	ok = thread_prepare(t) == 0;
	pthread_mutex_lock(&j->mu);
	j->nprepped++;
	pthread_cond_broadcast(&j->cv);
	while (!j->go && !j->abort)
		pthread_cond_wait(&j->cv, &j->mu);
	pthread_mutex_unlock(&j->mu);
	if (ok && !j->abort) {
		c0 = thread_cpu_ns();
		m0 = now_mono_ns();
		t->start_ns = j->go_real_ns + (m0 - j->go_mono_ns);
		if (bench_kind_is_md(j->p.kind))
			bench_md_run(t, t->owner, m0);
		else
			run_data(t, m0);
		m1 = now_mono_ns();
		t->end_ns = t->start_ns + (m1 - m0);
		t->cpu_ns = thread_cpu_ns() - c0;
	}
	pthread_mutex_lock(&j->mu);
	j->ndone++;
	/* checkpoint hook: the node's first finished thread, for first-done */
	if (t->end_ns && (j->first_end_ns == 0 || t->end_ns < j->first_end_ns))
		j->first_end_ns = t->end_ns;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* ------------------------------------------------------------ job control */

/* Drop the page cache through <sysroot>/proc/sys/vm/drop_caches. */
static void
drop_caches(struct bench_job *j)
{
	char path[PATH_MAX];
	int rc;

	sync();
	if (path_under_root(path, sizeof(path), j->p.sysroot, "/proc/sys/vm/drop_caches") < 0)
		return;
	if ((rc = write_small_file(path, "3")) < 0)
		snprintf(j->warning + strlen(j->warning), sizeof(j->warning) - strlen(j->warning),
		    "%scould not drop caches (%s: %s)", j->warning[0] ? "; " : "", path,
		    strerror(-rc));
}

/* Resolve and open DIR and DIR/knob.<workdir-id>. 0 or -1 (j->err). */
static int
open_workdir(struct bench_job *j)
{
	char real[PATH_MAX], why[256];
	struct stat st;

	if (realpath(j->p.dir, real) == NULL) {
		snprintf(j->err, sizeof(j->err), "%s: %s: %s", j->node, j->p.dir, strerror(errno));
		return -1;
	}
	if (bench_check_dir(real, why, sizeof(why)) < 0) {
		snprintf(j->err, sizeof(j->err), "%s: %s", j->node, why);
		return -1;
	}
	j->dirfd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->dirfd < 0) {
		snprintf(j->err, sizeof(j->err), "%s: %s: %s", j->node, real, strerror(errno));
		return -1;
	}
	if (mkdirat(j->dirfd, j->wname, 0755) < 0 && errno != EEXIST) {
		snprintf(j->err, sizeof(j->err), "%s: mkdir %s/%s: %s", j->node, real,
		    j->wname, strerror(errno));
		return -1;
	}
	j->wfd = openat(j->dirfd, j->wname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (j->wfd < 0) {
		snprintf(j->err, sizeof(j->err), "%s: %s/%s: %s", j->node, real, j->wname,
		    errno == ELOOP || errno == ENOTDIR ? "exists and is not a directory "
		    "(symbolic link?), refused" : strerror(errno));
		return -1;
	}
	if (fstat(j->wfd, &st) == 0 && st.st_uid != geteuid()) {
		snprintf(j->err, sizeof(j->err), "%s: %s/%s belongs to another user, refused",
		    j->node, real, j->wname);
		return -1;
	}
	snprintf(j->wpath, sizeof(j->wpath), "%s/%s", real, j->wname);
	return 0;
}

/* The I/O engine of a data phase: psync at queue depth 1 unless asked;
 * deeper, io_uring when the kernel allows it, else libaio (with a
 * warning). */
static void
choose_engine(struct bench_job *j)
{
	struct io_uring ring;
	int rc;

	j->ioengine = j->p.ioengine;
	if (bench_kind_is_md(j->p.kind) || (j->ioengine == IOE_AUTO && j->p.queue_depth <= 1)) {
		j->ioengine = IOE_PSYNC;
		return;
	}
	if (j->ioengine != IOE_AUTO)
		return;
	if ((rc = io_uring_queue_init(2, &ring, 0)) == 0) {
		io_uring_queue_exit(&ring);
		j->ioengine = IOE_URING;
		return;
	}
	j->ioengine = IOE_AIO;
	snprintf(j->warning + strlen(j->warning), sizeof(j->warning) - strlen(j->warning),
	    "%sio_uring unavailable (%s): queue depth %u through libaio", j->warning[0] ? "; " : "",
	    strerror(-rc), j->p.queue_depth);
}

int
bench_job_prepare(struct bench_job *j)
{
	size_t i;

	j->mem_total_kb = bench_mem_total_kb(j->p.sysroot);
	if (open_workdir(j) < 0)
		return -1;
	if (bench_kind_is_ext(j->p.kind))
		return ext_prepare(j);
	choose_engine(j);
	/* the content pool (8 MiB and the longest block), unless nothing is written */
	if (!(bench_kind_is_md(j->p.kind) && j->p.md_write_size == 0) &&
	    bench_pool_init(&j->pool, j->p.seed, j->p.compress_pct,
	    (size_t)(j->p.bs > j->p.md_write_size ? j->p.bs : j->p.md_write_size)) < 0) {
		snprintf(j->err, sizeof(j->err), "%s: no memory for the data pool", j->node);
		return -1;
	}
	j->nth = j->p.nranks;
	j->th = xcalloc(j->nth ? j->nth : 1, sizeof(*j->th));
	for (i = 0; i < j->nth; i++) {
		struct bench_thread *t = &j->th[i];

		t->job = j;
		t->rank = j->p.ranks[i];
		t->fd = -1;
		t->lat = xmalloc(sizeof(*t->lat));
		hist_init(t->lat);
		if (pthread_create(&t->tid, NULL, io_thread, t) != 0) {
			snprintf(j->err, sizeof(j->err), "%s: cannot start thread %zu", j->node, i);
			bench_job_abort(j, "thread start failed");
			return -1;
		}
		t->created = 1;
	}
	pthread_mutex_lock(&j->mu);
	while (j->nprepped < j->nth)
		pthread_cond_wait(&j->cv, &j->mu);
	pthread_mutex_unlock(&j->mu);
	for (i = 0; i < j->nth; i++) {
		if (j->th[i].failed) {
			snprintf(j->err, sizeof(j->err), "%s", j->th[i].err);
			bench_job_abort(j, "prepare failed");
			bench_job_join(j);
			return -1;
		}
	}
	if (j->abort) {
		snprintf(j->err, sizeof(j->err), "%s: aborted during prepare: %s", j->node,
		    j->abort_reason);
		bench_job_join(j);
		return -1;
	}
	if (j->p.drop_caches && bench_kind_is_read(j->p.kind))
		drop_caches(j);
	/* the controller compares this with RAM and the GPFS pagepool */
	if (j->p.kind == BK_SEQ_READ || j->p.kind == BK_RAND_READ || j->p.kind == BK_RAND_RW)
		j->read_bytes = j->p.file_size * j->nth;
	return 0;
}

void
bench_job_go(struct bench_job *j)
{
	pthread_mutex_lock(&j->mu);
	j->go_mono_ns = now_mono_ns();
	j->go_real_ns = now_real_ns();
	j->go = 1;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

void
bench_job_abort(struct bench_job *j, const char *reason)
{
	pthread_mutex_lock(&j->mu);
	if (!j->abort)
		snprintf(j->abort_reason, sizeof(j->abort_reason), "%s", reason);
	j->abort = 1;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

/* The stonewall is reached on this node and not reported yet (j->mu held). */
static int
wall_due(const struct bench_job *j)
{
	return j->wall_sync && !j->wall_reported && j->nwall >= j->nth;
}

int
bench_job_wait(struct bench_job *j, int timeout_ms)
{
	struct timespec ts;
	uint64_t dl = now_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	int rc;

	ts.tv_sec = (time_t)(dl / 1000000000ull);
	ts.tv_nsec = (long)(dl % 1000000000ull);
	pthread_mutex_lock(&j->mu);
	while (j->ndone < j->nth && !wall_due(j)) {
		if (pthread_cond_timedwait(&j->cv, &j->mu, &ts) == ETIMEDOUT)
			break;
	}
	if (wall_due(j)) {
		j->wall_reported = 1;
		rc = BJ_WALL;
	} else
		rc = j->ndone >= j->nth ? BJ_DONE : BJ_TIMEOUT;
	pthread_mutex_unlock(&j->mu);
	return rc;
}

void
bench_job_join(struct bench_job *j)
{
	for (size_t i = 0; i < j->nth; i++) {
		if (j->th[i].created)
			pthread_join(j->th[i].tid, NULL);
		j->th[i].created = 0;
	}
}

void
bench_job_progress(struct bench_job *j, uint64_t *bytes, uint64_t *ops, uint32_t *done)
{
	uint64_t b = 0, o = 0;

	for (size_t i = 0; i < j->nth; i++) {
		b += atomic_load_explicit(&j->th[i].bytes, memory_order_relaxed);
		o += atomic_load_explicit(&j->th[i].ops, memory_order_relaxed);
	}
	*bytes = b;
	*ops = o;
	pthread_mutex_lock(&j->mu);
	*done = (uint32_t)j->ndone;
	pthread_mutex_unlock(&j->mu);
}

/* Build the wire result; strings and arrays are malloc'd (bench_result_free). */
void
bench_job_result(struct bench_job *j, Knob__PhaseResult *r)
{
	struct hist *h = xmalloc(sizeof(*h));
	const char *err = NULL;
	size_t i;

	knob__phase_result__init(r);
	hist_init(h);
	r->phase_id = xstrdup(j->p.phase_id);
	r->node = xstrdup(j->node);
	r->mem_total_kb = j->mem_total_kb;
	r->warning = xstrdup(j->warning);
	r->n_threads = j->nth;
	r->threads = xcalloc(j->nth ? j->nth : 1, sizeof(*r->threads));
	for (i = 0; i < j->nth; i++) {
		struct bench_thread *t = &j->th[i];
		Knob__ThreadResult *tr = xmalloc(sizeof(*tr));

		knob__thread_result__init(tr);
		tr->rank = t->rank;
		tr->bytes = atomic_load(&t->bytes);
		tr->ops = atomic_load(&t->ops);
		tr->start_ns = t->start_ns;
		tr->end_ns = t->end_ns;
		tr->cpu_ns = t->cpu_ns;
		tr->stonewall_ops = t->stonewall_ops;
		tr->read_ops = atomic_load(&t->read_ops);
		tr->read_bytes = atomic_load(&t->read_bytes);
		tr->error = xstrdup(t->failed ? t->err : "");
		r->threads[i] = tr;
		r->bytes += tr->bytes;
		r->ops += tr->ops;
		r->cpu_ns += tr->cpu_ns;
		if (t->start_ns && (r->start_ns == 0 || t->start_ns < r->start_ns))
			r->start_ns = t->start_ns;
		if (t->end_ns > r->end_ns)
			r->end_ns = t->end_ns;
		if (t->failed && err == NULL)
			err = t->err;
		hist_merge(h, t->lat);
	}
	if (j->ext) {
		r->n_ext_ops = j->ext->n;
		r->ext_ops = xcalloc(j->ext->n + 1, sizeof(*r->ext_ops));
		for (i = 0; i < j->ext->n; i++) {
			const struct ext_op *e = &j->ext->op[i];
			Knob__PhaseExtOp *o = xmalloc(sizeof(*o));

			knob__phase_ext_op__init(o);
			o->op = xstrdup(e->op);
			o->bw_bytes = e->bw_bytes;
			o->iops = e->iops;
			o->bytes = e->bytes;
			o->ops = e->ops;
			o->runtime_s = e->runtime_s;
			o->lat_p50_ns = e->p50_ns;
			o->lat_p99_ns = e->p99_ns;
			o->lat_p999_ns = e->p999_ns;
			r->ext_ops[i] = o;
			r->bytes += e->bytes;
			r->ops += e->ops;
		}
		r->start_ns = j->ext_start_ns;
		r->end_ns = j->ext_end_ns;
	}
	r->ext_output = xstrdup(j->ext_output ? j->ext_output : "");
	r->ioengine = xstrdup(bench_kind_is_ext(j->p.kind) || bench_kind_is_md(j->p.kind) ? "" :
	    bench_ioengine_name(j->ioengine));
	if (j->err[0] && err == NULL)
		err = j->err;
	if (j->abort && err == NULL)
		err = j->abort_reason;
	r->ok = err == NULL && !j->abort;
	if (j->abort)
		r->error = xasprintf("%s: aborted: %s", j->node, j->abort_reason);
	else
		r->error = xstrdup(err ? err : "");
	r->latency = xmalloc(sizeof(*r->latency));
	hist_to_proto(h, r->latency);
	free(h);
}

void
bench_result_free(Knob__PhaseResult *r)
{
	size_t i;

	free(r->phase_id);
	free(r->node);
	free(r->warning);
	free(r->error);
	free(r->ext_output);
	free(r->ioengine);
	for (i = 0; i < r->n_threads; i++) {
		free(r->threads[i]->error);
		free(r->threads[i]);
	}
	free(r->threads);
	for (i = 0; i < r->n_ext_ops; i++) {
		free(r->ext_ops[i]->op);
		free(r->ext_ops[i]);
	}
	free(r->ext_ops);
	if (r->latency) {
		hist_proto_free(r->latency);
		free(r->latency);
	}
	memset(r, 0, sizeof(*r));
}

/* ------------------------------------------------------------ clean-up */

/* Stays inside the tree it was given; with pick, only what pick chooses
 * goes, and directories that keep something stay. */
int
bench_rm_walk(int parent, const char *name, int depth, bench_rm_pick pick, const void *arg)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0, r, what;

	if (depth > 16)
		return -ELOOP;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno == ENOTDIR || errno == ELOOP)
			return unlinkat(parent, name, 0) < 0 && errno != ENOENT ? -errno : 0;
		return -errno;
	}
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		what = pick ? pick(de->d_name, arg) : RM_ALL;
		if (what == RM_DESCEND)
			r = bench_rm_walk(dirfd(d), de->d_name, depth + 1, pick, arg);
		else if (what == RM_ALL)
			r = bench_rm_walk(dirfd(d), de->d_name, depth + 1, NULL, NULL);
		else
			r = 0;
		if (r < 0 && rc == 0)
			rc = r;
	}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && rc == 0 &&
	    !(pick && (errno == ENOTEMPTY || errno == EEXIST)))
		rc = -errno;
	return rc;
}

int
bench_rm_tree(int parent, const char *name, int depth)
{
	return bench_rm_walk(parent, name, depth, NULL, NULL);
}

/* Remove what the ranks of p wrote under dirfd/knob.<workdir-id>. */
static int
cleanup_at(int dirfd, const struct bench_params *p)
{
	char wname[BENCH_ID_MAX + 8], name[64];
	int wfd, rc = 0;
	size_t i;

	snprintf(wname, sizeof(wname), "knob.%s", p->workdir_id);
	wfd = openat(dirfd, wname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (wfd < 0)
		return errno == ENOENT ? 0 : -1;
	for (i = 0; i < p->nranks; i++) {
		bench_file_name(name, sizeof(name), p->ranks[i]);
		if (unlinkat(wfd, name, 0) < 0 && errno != ENOENT)
			rc = -1;
	}
	if (bench_md_cleanup(wfd, p) < 0)
		rc = -1;
	if (unlinkat(wfd, "shared", 0) < 0 && errno != ENOENT)
		rc = -1;
	if (bench_kind_is_ext(p->kind)) {
		snprintf(name, sizeof(name), "n.%u", p->node_index);
		if (bench_rm_tree(wfd, name, 0) < 0 || bench_rm_tree(wfd, "ext", 0) < 0)
			rc = -1;
	}
	close(wfd);
	/* other nodes may still have files in a shared directory */
	if (unlinkat(dirfd, wname, AT_REMOVEDIR) < 0 && errno != ENOENT &&
	    errno != ENOTEMPTY && errno != EEXIST)
		rc = -1;
	return rc;
}

int
bench_cleanup_params(const struct bench_params *p)
{
	char real[PATH_MAX], why[256];
	int dfd, rc;

	if (realpath(p->dir, real) == NULL)
		return errno == ENOENT ? 0 : -1;
	if (bench_check_dir(real, why, sizeof(why)) < 0)
		return -1;
	if ((dfd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	rc = cleanup_at(dfd, p);
	close(dfd);
	return rc;
}

int
bench_job_cleanup(struct bench_job *j)
{
	if (j->dirfd < 0)
		return 0;
	if (j->wfd >= 0) {
		close(j->wfd);
		j->wfd = -1;
	}
	return cleanup_at(j->dirfd, &j->p);
}

void
bench_job_free(struct bench_job *j)
{
	if (j == NULL)
		return;
	bench_job_abort(j, "freed");
	bench_job_join(j);
	for (size_t i = 0; i < j->nth; i++) {
		bench_aio_free(&j->th[i]);
		free(j->th[i].buf);
		free(j->th[i].lat);
	}
	bench_pool_free(&j->pool);
	free(j->th);
	if (j->wfd >= 0)
		close(j->wfd);
	if (j->dirfd >= 0)
		close(j->dirfd);
	free(j->ext);
	free(j->ext_output);
	bench_params_free(&j->p);
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

int
bench_job_run(struct bench_job *j)
{
	if (bench_job_prepare(j) < 0)
		return -1;
	bench_job_go(j);
	if (bench_kind_is_ext(j->p.kind))
		return ext_run(j);
	for (;;) {
		int r = bench_job_wait(j, 1000);

		if (r == BJ_DONE)
			break;
		if (r == BJ_WALL)	/* no other node: this node's largest count */
			bench_job_wearout(j, bench_job_wall_max(j));
	}
	bench_job_join(j);
	for (size_t i = 0; i < j->nth; i++)
		if (j->th[i].failed) {
			snprintf(j->err, sizeof(j->err), "%s", j->th[i].err);
			return -1;
		}
	return 0;
}
