/* Benchmark engine: the phase parameters.  Kinds and I/O engines by name,
 * the checks of ids and directories, and the engine's own copy of a
 * PhaseSpec (validated without touching the file system). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_defaults.h"
#include "extargs.h"
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
int bench_kind_access(int k) { return k >= 0 && k < BK__COUNT ? kinds[k].wr : 0; }

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
		p->rwmix_read = BENCH_RWMIX;
	if (p->rwmix_read > 100)
		PERR("read percentage above 100");
	if (p->segments > 1 && !p->shared)
		PERR("segments apply to the shared file (N-to-1) only");
	if (p->queue_depth > 4096)
		PERR("queue depth above 4096");
	if (p->queue_depth > 1 && p->ioengine == IOE_PSYNC)
		PERR("psync has queue depth 1 (use io_uring or libaio)");
	return 0;
fail:
	return -1;
}

/* The sizes of a data phase (its defaults applied): the rules knobctl
 * bench applies to its plan too. */
static int
data_sizes_check(const struct bench_params *p, char *err, size_t errlen)
{
	struct bench_sizes s = {
		.bs = p->bs, .size = p->file_size, .segments = p->segments,
		.threads = p->threads_total, .direct = p->odirect, .shared = p->shared,
	};

	return bench_sizes_check(&s, err, errlen);
}

/* The ids, kind, directory and sysroot of spec s into p. 0 or -1 (err). */
static int
spec_ids(struct bench_params *p, const Knob__PhaseSpec *s, const char *sysroot,
    char *err, size_t errlen)
{
	const char *wid;

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
	return 0;
fail:
	return -1;
}

/* The plain numeric and boolean fields of spec s into p (not checked here). */
static void
spec_scalars(struct bench_params *p, const Knob__PhaseSpec *s)
{
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
	p->small_pages = s->small_pages;
	p->cpu_bind = s->cpu_bind;
	p->segments = s->segments;
	p->stripe_count = s->stripe_count;
	p->stripe_size = s->stripe_size;
}

/* Striping, I/O engine and external tool of spec s into p. 0 or -1 (err). */
static int
spec_engine(struct bench_params *p, const Knob__PhaseSpec *s, char *err, size_t errlen)
{
	if (p->stripe_count > 2000)
		PERR("stripe count above 2000 (Lustre's limit)");
	if (p->stripe_size % 65536 != 0 || p->stripe_size > (4ull << 30))
		PERR("stripe size must be a multiple of 64 KiB, at most 4 GiB");
	if ((p->ioengine = bench_ioengine_parse(s->ioengine)) < 0)
		PERR("unknown I/O engine '%s' (psync, io_uring, libaio)", s->ioengine);
	if (s->ext_tool && strlen(s->ext_tool) < sizeof(p->ext_tool))
		snprintf(p->ext_tool, sizeof(p->ext_tool), "%s", s->ext_tool);
	return 0;
fail:
	return -1;
}

/* This node's ranks of spec s into p (allocated in p, which
 * bench_params_free frees, even on error). 0 or -1 (err). */
static int
spec_ranks(struct bench_params *p, const Knob__PhaseSpec *s, char *err, size_t errlen)
{
	size_t i;

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
	return 0;
fail:
	return -1;
}

/* The external tool's arguments and the hosts of spec s into p (allocated
 * in p, which bench_params_free frees, even on error). 0 or -1 (err). */
static int
spec_args_hosts(struct bench_params *p, const Knob__PhaseSpec *s, char *err,
    size_t errlen)
{
	size_t i;

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
	return 0;
fail:
	return -1;
}

/* The checks and defaults of p's kind (external, metadata or data).
 * 0 or -1 (err). */
static int
spec_kind_check(struct bench_params *p, char *err, size_t errlen)
{
	if (bench_kind_is_ext(p->kind))
		return ext_args_check(bench_kind_name(p->kind), p->ext_args, p->next_args, err,
		    errlen) < 0 ? -1 : 0;
	if (p->compress_pct > 100)
		PERR("compressible percentage above 100");
	if (bench_kind_is_md(p->kind)) {
		p->files_per_dir = bench_files_per_dir(p->files_per_dir);
		p->md_files = bench_md_files(p->md_files, p->files_per_dir);
		return bench_md_check(p, err, errlen) < 0 ? -1 : 0;
	}
	if (data_check(p, err, errlen) < 0)
		goto fail;
	if (p->bs == 0)
		p->bs = bench_kind_is_rand(p->kind) ? BENCH_BS_RAND : BENCH_BS_SEQ;
	if (p->file_size == 0 && p->bs <= BENCH_BS_MAX)
		p->file_size = 64 * p->bs;
	return data_sizes_check(p, err, errlen) < 0 ? -1 : 0;
fail:
	return -1;
}

/* Validate a spec without touching the file system and copy it into p. */
int
bench_params_from_spec(struct bench_params *p, const Knob__PhaseSpec *s,
    const char *sysroot, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	if (s == NULL)
		PERR("phase spec missing");
	if (spec_ids(p, s, sysroot, err, errlen) < 0)
		goto fail;
	spec_scalars(p, s);
	if (spec_engine(p, s, err, errlen) < 0 || spec_ranks(p, s, err, errlen) < 0 ||
	    spec_args_hosts(p, s, err, errlen) < 0 || spec_kind_check(p, err, errlen) < 0)
		goto fail;
	return 0;
fail:
	bench_params_free(p);
	return -1;
}
