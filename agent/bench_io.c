/* Benchmark engine: the I/O worker threads.  Sequential N-to-N and N-to-1,
 * random over prefilled files, metadata create/stat/read/remove; O_DIRECT,
 * fsync+close inside the timing, stonewall with wear-out, drop caches,
 * reader shift.  Everything happens inside DIR/knob.<workdir-id>/ through
 * openat(2) with O_NOFOLLOW; see bench.h for the layout. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "bench.h"
#include "log.h"
#include "util.h"

static const struct {
	const char *name;
	int md, ext, read;
} kinds[BK__COUNT] = {
	[BK_SEQ_WRITE] = { "seq-write", 0, 0, 0 },
	[BK_SEQ_READ] = { "seq-read", 0, 0, 1 },
	[BK_RAND_WRITE] = { "rand-write", 0, 0, 1 },
	[BK_RAND_READ] = { "rand-read", 0, 0, 1 },
	[BK_MD_CREATE] = { "md-create", 1, 0, 0 },
	[BK_MD_STAT] = { "md-stat", 1, 0, 1 },
	[BK_MD_READ] = { "md-read", 1, 0, 1 },
	[BK_MD_REMOVE] = { "md-remove", 1, 0, 1 },
	[BK_FIO] = { "fio", 0, 1, 0 },
	[BK_IOR] = { "ior", 0, 1, 0 },
	[BK_MDTEST] = { "mdtest", 0, 1, 0 },
};

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
	if (bench_kind_is_md(p->kind)) {
		if (p->files_per_dir == 0)
			p->files_per_dir = 1024;
		if (p->md_files == 0)
			p->md_files = p->files_per_dir;
		if (p->md_files > (1ull << 32))
			PERR("too many files per thread");
		if (p->md_write_size > BENCH_BS_MAX)
			PERR("md write size above 64 MiB");
		return 0;
	}
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

/* ------------------------------------------------------------ data pattern */

/* Fill a buffer with the fixed pattern (stamps are written per block). */
static void
fill_pattern(uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 7 + 13);
}

/* Stamp every bs-block of buf with (magic, rank, file offset). */
static void
stamp(uint8_t *b, size_t len, uint64_t bs, uint32_t rank, uint64_t off)
{
	uint32_t magic = BENCH_MAGIC;

	if (bs < 16)
		return;
	for (size_t o = 0; o + 16 <= len; o += bs) {
		uint64_t fo = off + o;
		memcpy(b + o, &magic, 4);
		memcpy(b + o + 4, &rank, 4);
		memcpy(b + o + 8, &fo, 8);
	}
}

/* Check the stamp of one block; 0 ok, -1 mismatch. */
static int
check_stamp(const uint8_t *b, uint64_t bs, uint32_t rank, uint64_t off)
{
	uint32_t magic, r;
	uint64_t fo;

	if (bs < 16)
		return 0;
	memcpy(&magic, b, 4);
	memcpy(&r, b + 4, 4);
	memcpy(&fo, b + 8, 8);
	return (magic == BENCH_MAGIC && r == rank && fo == off) ? 0 : -1;
}

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

/* A pseudo-random permutation of [0, n): a full-period LCG modulo the next
 * power of two, skipping values >= n.  Random I/O touches every block once
 * per pass, like fio's random map, without a map. */
struct perm {
	uint64_t n, mask, x, c;
};

static void
perm_init(struct perm *p, uint64_t n, uint64_t seed)
{
	uint64_t m = 1;

	while (m < n)
		m <<= 1;
	p->n = n;
	p->mask = m - 1;
	p->x = seed & p->mask;
	p->c = (seed >> 17) | 1;	/* odd */
}

static uint64_t
perm_next(struct perm *p)
{
	if (p->n <= 1)
		return 0;
	do {
		/* a = 1 (mod 4) and c odd: full period modulo 2^k */
		p->x = (0x5851F42D4C957F2Dull * p->x + p->c) & p->mask;
	} while (p->x >= p->n);
	return p->x;
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

#define TERR(t, ...) do { \
	snprintf((t)->err, sizeof((t)->err), __VA_ARGS__); \
	(t)->failed = 1; \
} while (0)

/* pwrite/pread the whole range, retrying short transfers. n or -errno. */
static ssize_t
full_io(int fd, void *buf, size_t len, uint64_t off, int wr)
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

/* The file (name) and base offset a rank's data lives at. */
static void
data_loc(const struct bench_job *j, uint32_t rank, char *name, size_t len, uint64_t *base)
{
	if (j->p.shared) {
		snprintf(name, len, "shared");
		*base = (uint64_t)rank * j->p.file_size;
	} else {
		bench_file_name(name, len, rank);
		*base = 0;
	}
}

/* Rank whose data thread t reads (reader shift applies to reads only). */
static uint32_t
src_rank(const struct bench_job *j, const struct bench_thread *t)
{
	if (j->p.kind == BK_SEQ_WRITE || j->p.kind == BK_RAND_WRITE ||
	    j->p.kind == BK_MD_CREATE || j->p.kind == BK_MD_REMOVE || j->p.reader_shift == 0)
		return t->rank;
	return (uint32_t)((t->rank + (uint64_t)j->p.reader_shift) % j->p.threads_total);
}

static int
open_flags(const struct bench_job *j, int wr)
{
	return (wr ? O_WRONLY | O_CREAT : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC |
	    (j->p.odirect ? O_DIRECT : 0);
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

/* Make sure rank's data exists (prepare, untimed): write the rank's range
 * with stamped blocks when the file is shorter than it should be. */
static int
prefill(struct bench_thread *t)
{
	struct bench_job *j = t->job;
	uint64_t base, off, end, chunk;
	char name[64];
	struct stat st;
	uint8_t *b = NULL;
	int fd, rc = -1;

	data_loc(j, t->rank, name, sizeof(name), &base);
	end = base + j->p.file_size;
	fd = openat(j->wfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		TERR(t, "%s: open %s: %s", j->node, name, open_errstr(j, errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		TERR(t, "%s: %s is not a regular file", j->node, name);
		goto out;
	}
	if ((uint64_t)st.st_size >= end) {
		rc = 0;
		goto out;
	}
	chunk = j->p.bs >= (1u << 20) ? j->p.bs : ((1u << 20) / j->p.bs) * j->p.bs;
	if (posix_memalign((void **)&b, BENCH_ALIGN, chunk) != 0)
		fatalx("posix_memalign");
	fill_pattern(b, chunk);
	for (off = base; off < end && !j->abort; off += chunk) {
		size_t len = (size_t)(end - off < chunk ? end - off : chunk);
		ssize_t n;

		stamp(b, len, j->p.bs, t->rank, off);
		if ((n = full_io(fd, b, len, off, 1)) < 0 || (size_t)n != len) {
			TERR(t, "%s: prefill %s at %llu: %s", j->node, name,
			    (unsigned long long)off, n < 0 ? strerror((int)-n) : "short write");
			goto out;
		}
	}
	if (fdatasync(fd) < 0) {
		TERR(t, "%s: fdatasync %s: %s", j->node, name, strerror(errno));
		goto out;
	}
	/* Data written by prepare is not part of any measurement: drop it from
	 * the page cache (like fio's invalidate=1), so reads do not hit cache
	 * and O_DIRECT reads do not pay for cached pages of the range. */
	posix_fadvise(fd, (off_t)base, (off_t)j->p.file_size, POSIX_FADV_DONTNEED);
	rc = 0;
out:
	free(b);
	close(fd);
	return rc;
}

/* mkdirat that accepts an existing directory (never a symlink). */
static int
mkdir_ok(int dfd, const char *name)
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

/* Open d.<rank>/s.<k> of a metadata rank (creating it when create). -1 on error. */
static int
md_open_sub(struct bench_job *j, uint32_t rank, uint64_t k, int create)
{
	char d[32], s[32];
	int dfd, sfd;

	snprintf(d, sizeof(d), "d.%08u", rank);
	snprintf(s, sizeof(s), "s.%llu", (unsigned long long)k);
	if (create && mkdir_ok(j->wfd, d) < 0)
		return -1;
	dfd = openat(j->wfd, d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	if (create && mkdir_ok(dfd, s) < 0) {
		close(dfd);
		return -1;
	}
	sfd = openat(dfd, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	return sfd;
}

/* Write md_write_size bytes into fd; 0 or -errno. */
static int
md_write(struct bench_thread *t, int fd)
{
	ssize_t n;

	if (t->job->p.md_write_size == 0)
		return 0;
	n = full_io(fd, t->buf, (size_t)t->job->p.md_write_size, 0, 1);
	if (n < 0)
		return (int)n;
	return (size_t)n == t->job->p.md_write_size ? 0 : -EIO;
}

/* Prepare of metadata phases: sub-directories, and the files a
 * stat/read/remove phase needs when they are not there yet. */
static int
md_prepare(struct bench_thread *t)
{
	struct bench_job *j = t->job;
	uint64_t i, fpd = j->p.files_per_dir, k = UINT64_MAX;
	int sfd = -1, rc = -1, fd;
	char name[32];
	struct stat st;

	for (i = 0; i < j->p.md_files && !j->abort; i++) {
		if (i / fpd != k) {
			if (sfd >= 0)
				close(sfd);
			k = i / fpd;
			if ((sfd = md_open_sub(j, t->rank, k, 1)) < 0) {
				TERR(t, "%s: mkdir d.%08u/s.%llu: %s", j->node, t->rank,
				    (unsigned long long)k, strerror(errno));
				goto out;
			}
			if (j->p.kind == BK_MD_CREATE)
				i += fpd - 1;	/* directories only */
			if (j->p.kind == BK_MD_CREATE)
				continue;
		}
		snprintf(name, sizeof(name), "f.%llu", (unsigned long long)i);
		if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		fd = openat(sfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 || md_write(t, fd) < 0) {
			TERR(t, "%s: create d.%08u/s.%llu/%s: %s", j->node, t->rank,
			    (unsigned long long)k, name, strerror(errno));
			if (fd >= 0)
				close(fd);
			goto out;
		}
		close(fd);
	}
	rc = 0;
out:
	if (sfd >= 0)
		close(sfd);
	return rc;
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
	fill_pattern(t->buf, len);
	if (bench_kind_is_md(j->p.kind))
		return md_prepare(t);
	if (j->p.kind == BK_SEQ_WRITE)
		return 0;
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

/* Per-op bookkeeping after one timed operation: latency, progress, rate
 * limit, stonewall.  Returns the (possibly lowered) op limit. */
static uint64_t
after_op(struct bench_thread *t, uint64_t t0, uint64_t t1, uint64_t bytes,
    uint64_t nops, uint64_t limit, uint64_t start_mono, int *walled)
{
	struct bench_job *j = t->job;

	hist_add(t->lat, t1 - t0);
	atomic_fetch_add_explicit(&t->bytes, bytes, memory_order_relaxed);
	atomic_store_explicit(&t->ops, nops, memory_order_relaxed);
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
		target = wall_arrive(j, nops, 1);
		if (target < limit)
			limit = target;
	}
	return limit;
}

/* ------------------------------------------------------------ timed loops */

static void
run_data(struct bench_thread *t, uint64_t start_mono)
{
	struct bench_job *j = t->job;
	int wr = (j->p.kind == BK_SEQ_WRITE || j->p.kind == BK_RAND_WRITE);
	int rnd = (j->p.kind == BK_RAND_WRITE || j->p.kind == BK_RAND_READ);
	uint32_t owner = src_rank(j, t);
	uint64_t base, nblk = j->p.file_size / j->p.bs, limit = nblk, i, off;
	uint64_t seed = j->p.seed ^ (0x9E3779B97F4A7C15ull * (t->rank + 1));
	struct perm pm;
	char name[64];
	int fd, walled = 0;

	if (seed == 0)
		seed = 1;
	perm_init(&pm, nblk, xorshift(&seed));
	data_loc(j, owner, name, sizeof(name), &base);
	fd = openat(j->wfd, name, open_flags(j, wr) |
	    (wr && !rnd && !j->p.shared ? O_TRUNC : 0), 0644);
	if (fd < 0) {
		TERR(t, "%s: open %s: %s", j->node, name, open_errstr(j, errno));
		goto out;
	}
	for (i = 0; i < limit && !j->abort; i++) {
		uint64_t t0, t1;
		ssize_t n;

		off = base + (rnd ? perm_next(&pm) : i) * j->p.bs;
		if (wr)
			stamp(t->buf, (size_t)j->p.bs, j->p.bs, owner, off);
		t0 = now_mono_ns();
		n = full_io(fd, t->buf, (size_t)j->p.bs, off, wr);
		t1 = now_mono_ns();
		if (n < 0 || (uint64_t)n != j->p.bs) {
			TERR(t, "%s: %s %s at offset %llu: %s", j->node, wr ? "write" : "read",
			    name, (unsigned long long)off,
			    n < 0 ? strerror((int)-n) : "short transfer (file too small?)");
			break;
		}
		if (!wr && check_stamp(t->buf, j->p.bs, owner, off) < 0) {
			TERR(t, "%s: data mismatch in %s at offset %llu (not what rank %u wrote)",
			    j->node, name, (unsigned long long)off, owner);
			break;
		}
		limit = after_op(t, t0, t1, j->p.bs, i + 1, limit, start_mono, &walled);
	}
	if (!t->failed && wr && j->p.fsync && fsync(fd) < 0)
		TERR(t, "%s: fsync %s: %s", j->node, name, strerror(errno));
	if (close(fd) < 0 && !t->failed)
		TERR(t, "%s: close %s: %s", j->node, name, strerror(errno));
out:
	if (j->p.stonewall_s && !walled)
		wall_arrive(j, atomic_load(&t->ops), 0);
}

static void
run_md(struct bench_thread *t, uint64_t start_mono)
{
	struct bench_job *j = t->job;
	uint64_t i, fpd = j->p.files_per_dir, k = UINT64_MAX, limit = j->p.md_files;
	uint32_t owner = src_rank(j, t);
	int sfd = -1, fd, walled = 0, e;
	char name[32];
	struct stat st;

	for (i = 0; i < limit && !j->abort; i++) {
		uint64_t t0, t1, bytes = 0;

		if (i / fpd != k) {
			if (sfd >= 0)
				close(sfd);
			k = i / fpd;
			if ((sfd = md_open_sub(j, owner, k, 0)) < 0) {
				TERR(t, "%s: open d.%08u/s.%llu: %s", j->node, owner,
				    (unsigned long long)k, strerror(errno));
				break;
			}
		}
		snprintf(name, sizeof(name), "f.%llu", (unsigned long long)i);
		t0 = now_mono_ns();
		e = 0;
		switch (j->p.kind) {
		case BK_MD_CREATE:
			fd = openat(sfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			    O_CLOEXEC, 0644);
			if (fd < 0) {
				e = errno;
				break;
			}
			if ((e = -md_write(t, fd)) == 0 && j->p.fsync && fsync(fd) < 0)
				e = errno;
			if (close(fd) < 0 && e == 0)
				e = errno;
			bytes = j->p.md_write_size;
			break;
		case BK_MD_STAT:
			if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				e = errno;
			break;
		case BK_MD_READ:
			fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				e = errno;
				break;
			}
			if (j->p.md_write_size) {
				ssize_t n = full_io(fd, t->buf, (size_t)j->p.md_write_size, 0, 0);
				if (n < 0)
					e = (int)-n;
				else
					bytes = (uint64_t)n;
			}
			close(fd);
			break;
		case BK_MD_REMOVE:
			if (unlinkat(sfd, name, 0) < 0)
				e = errno;
			break;
		}
		t1 = now_mono_ns();
		if (e) {
			TERR(t, "%s: %s d.%08u/s.%llu/%s: %s", j->node, bench_kind_name(j->p.kind),
			    owner, (unsigned long long)k, name, strerror(e));
			break;
		}
		limit = after_op(t, t0, t1, bytes, i + 1, limit, start_mono, &walled);
	}
	if (sfd >= 0)
		close(sfd);
	if (j->p.stonewall_s && !walled)
		wall_arrive(j, atomic_load(&t->ops), 0);
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
			run_md(t, m0);
		else
			run_data(t, m0);
		m1 = now_mono_ns();
		t->end_ns = t->start_ns + (m1 - m0);
		t->cpu_ns = thread_cpu_ns() - c0;
	}
	pthread_mutex_lock(&j->mu);
	j->ndone++;
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
	return 0;
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
	if (j->p.kind == BK_SEQ_READ || j->p.kind == BK_RAND_READ)
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

/* Remove parent/name recursively without following symbolic links; stays
 * inside the tree it was given.  0 or -errno. */
static int
rm_tree(int parent, const char *name, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

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
		if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) {
			int r = rm_tree(dirfd(d), de->d_name, depth + 1);
			if (r < 0 && rc == 0)
				rc = r;
		} else if (unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT && rc == 0)
			rc = -errno;
	}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT && rc == 0)
		rc = -errno;
	return rc;
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
		snprintf(name, sizeof(name), "d.%08u", p->ranks[i]);
		if (rm_tree(wfd, name, 0) < 0)
			rc = -1;
	}
	if (unlinkat(wfd, "shared", 0) < 0 && errno != ENOENT)
		rc = -1;
	if (bench_kind_is_ext(p->kind)) {
		snprintf(name, sizeof(name), "n.%u", p->node_index);
		if (rm_tree(wfd, name, 0) < 0 || rm_tree(wfd, "ext", 0) < 0)
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
		free(j->th[i].buf);
		free(j->th[i].lat);
	}
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
