/* Benchmark engine: the job lifecycle.  Open the work directory, start the
 * I/O threads (bench_io.c) or the external tool (bench_ext.c), the barrier,
 * the stonewall report and wear-out, the wire result and the clean-up of
 * what the ranks wrote. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>
#include <sys/stat.h>

#include "bench.h"
#include "log.h"
#include "util.h"
#include "wire.h"

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

/* ------------------------------------------------------------ job control */

/* Add a warning to the phase's ("; " between them; cut at its size). */
static void __attribute__((format(printf, 2, 3)))
job_warn(struct bench_job *j, const char *fmt, ...)
{
	size_t n = strlen(j->warning);
	va_list ap;

	if (n > 0 && n + 2 < sizeof(j->warning))
		n += (size_t)snprintf(j->warning + n, sizeof(j->warning) - n, "; ");
	va_start(ap, fmt);
	vsnprintf(j->warning + n, sizeof(j->warning) - n, fmt, ap);
	va_end(ap);
}

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
		job_warn(j, "could not drop caches (%s: %s)", path, strerror(-rc));
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
 * warning).  libaio queues only O_DIRECT I/O: buffered, io_submit does
 * each I/O before it returns, so the phase says it ran at depth 1. */
static void
choose_engine(struct bench_job *j)
{
	struct io_uring ring;
	int rc = 0;

	j->ioengine = j->p.ioengine;
	if (bench_kind_is_md(j->p.kind) || (j->ioengine == IOE_AUTO && j->p.queue_depth <= 1)) {
		j->ioengine = IOE_PSYNC;
		return;
	}
	if (j->ioengine == IOE_AUTO && (rc = io_uring_queue_init(2, &ring, 0)) == 0) {
		io_uring_queue_exit(&ring);
		j->ioengine = IOE_URING;
	} else if (j->ioengine == IOE_AUTO) {
		j->ioengine = IOE_AIO;
		job_warn(j, "io_uring unavailable (%s): queue depth %u through libaio",
		    strerror(-rc), j->p.queue_depth);
	}
	if (j->ioengine == IOE_AIO && !j->p.odirect && j->p.queue_depth > 1)
		job_warn(j, "libaio queues only with --direct: buffered I/O ran at queue depth 1");
}

/* The queue depth a data phase's threads kept (0 for md and external
 * tools): 1 with psync and with libaio on buffered I/O. */
static uint32_t
depth_ran(const struct bench_job *j)
{
	if (bench_kind_is_ext(j->p.kind) || bench_kind_is_md(j->p.kind))
		return 0;
	if (j->ioengine == IOE_PSYNC || (j->ioengine == IOE_AIO && !j->p.odirect))
		return 1;
	return j->p.queue_depth > 1 ? j->p.queue_depth : 1;
}

int
bench_job_wpool(const struct bench_job *j)
{
	if (!bench_kind_writes(j->p.kind) || j->ioengine != IOE_PSYNC)
		return 0;
	return j->p.odirect || (!j->p.shared && j->copy_fits);
}

/* Whether a data phase's buffers get huge pages (j->huge, what its
 * result says): unless --buffer-pages 4k or THP is off.  An O_DIRECT phase
 * of blocks of a megabyte or more that cannot have them says so: its rate
 * then carries their layout. */
static void
choose_pages(struct bench_job *j)
{
	const char *why;

	if (j->p.small_pages || bench_kind_is_md(j->p.kind))
		return;
	if ((why = bench_buf_pages()) == NULL) {
		j->huge = 1;
		return;
	}
	if (j->p.odirect && j->p.bs >= BENCH_HUGE_MIN)
		job_warn(j, "%s: the O_DIRECT buffers are on 4 KiB pages, so each transfer is as "
		    "many pieces as the allocator gave", why);
}

/* The buffers a phase allocates on this node, from the sizes of its
 * request: each thread's block buffer and the blocks it keeps in flight,
 * the content pool, and an O_DIRECT writer's copy of it.  They must fit
 * in half of the node's memory, so that an absurd request is an error
 * sent back, not an agent the allocator or the OOM killer ends.  0, or -1
 * with j->err. */
static int
buffers_fit(struct bench_job *j)
{
	uint64_t blk = bench_kind_is_md(j->p.kind) ? j->p.md_write_size : j->p.bs;
	uint64_t depth = j->ioengine == IOE_PSYNC ? 0 : (j->p.queue_depth ? j->p.queue_depth : 1);
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0, need;
	uint64_t pool;
	int huge = !j->p.small_pages;

	/* the request's sizes are bounded (bench_params.c), so none of this wraps */
	blk = (blk < BENCH_ALIGN ? BENCH_ALIGN : blk + BENCH_ALIGN - 1) / BENCH_ALIGN * BENCH_ALIGN;
	pool = bench_buf_size((size_t)((8u << 20) + blk + 8), huge);
	/* as allocated: each thread's buffer, its queued slots, the pool */
	need = (uint64_t)j->p.nranks * (bench_buf_size((size_t)blk, huge) +
	    (depth ? bench_buf_size((size_t)(blk * depth), huge) : 0)) + pool;
	/* a buffered writer's pool copy is a speed-up, taken while all the
	 * buffers stay within a quarter of the memory; O_DIRECT needs it */
	j->copy_fits = ram == 0 || need + (uint64_t)j->p.nranks * pool <= ram / 4;
	if (bench_job_wpool(j))
		need += (uint64_t)j->p.nranks * pool;	/* pool copies */
	if (ram == 0 || need <= ram / 2)
		return 0;
	snprintf(j->err, sizeof(j->err), "%s: the buffers of this phase need %llu MiB here "
	    "(%zu threads, each %llu blocks of %llu bytes), more than half of this node's "
	    "memory (%llu MiB)", j->node, (unsigned long long)(need >> 20), j->p.nranks,
	    (unsigned long long)(depth + 1), (unsigned long long)blk,
	    (unsigned long long)(ram >> 20));
	return -1;
}

/* Was every thread of the job pinned to its CPU (cpu_bind)? */
static int
threads_bound(const struct bench_job *j)
{
	if (!j->p.cpu_bind || j->nth == 0)
		return 0;
	for (size_t i = 0; i < j->nth; i++)
		if (j->th[i].bound_cpu < 0)
			return 0;
	return 1;
}

int
bench_job_prepare(struct bench_job *j)
{
	size_t i;

	j->mem_total_kb = bench_mem_total_kb(j->p.sysroot);
	if (open_workdir(j) < 0 || bench_stripe(j) < 0)
		return -1;
	if (bench_kind_is_ext(j->p.kind))
		return ext_prepare(j);
	choose_engine(j);
	if (buffers_fit(j) < 0)
		return -1;
	choose_pages(j);
	/* the content pool (8 MiB and the longest block), unless nothing is written */
	if (!(bench_kind_is_md(j->p.kind) && j->p.md_write_size == 0) &&
	    bench_pool_init(&j->pool, j->p.seed, j->p.compress_pct, j->p.bs,
	    (size_t)(j->p.bs > j->p.md_write_size ? j->p.bs : j->p.md_write_size),
	    !j->p.small_pages) < 0) {
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
		if (pthread_create(&t->tid, NULL, bench_io_thread, t) != 0) {
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
	if (j->p.cpu_bind && !threads_bound(j))
		job_warn(j, "not every thread could be pinned to a CPU (cpu-bind core): they float");
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

uint64_t
bench_job_at_ns(const struct bench_job *j, uint64_t mono)
{
	return j->go_real_ns + (mono - j->go_mono_ns);
}

uint64_t
bench_job_now_ns(const struct bench_job *j)
{
	return bench_job_at_ns(j, now_mono_ns());
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

/* An external tool's summary into r: every operation with its own
 * figures, and the phase's bytes/ops and times from the counted one only
 * (ior and mdtest run theirs one after the other; fio: every direction). */
static void
ext_result(const struct bench_job *j, Knob__PhaseResult *r)
{
	int c = ext_counted_op(j->ext, j->p.kind);

	r->n_ext_ops = j->ext->n;
	r->ext_ops = xcalloc(j->ext->n + 1, sizeof(*r->ext_ops));
	for (size_t i = 0; i < j->ext->n; i++) {
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
		o->counted = c < 0 || (size_t)c == i;
		r->ext_ops[i] = o;
		if (o->counted) {
			r->bytes += e->bytes;
			r->ops += e->ops;
		}
	}
	r->start_ns = j->ext_start_ns;
	r->end_ns = j->ext_end_ns;
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
	if (j->ext)
		ext_result(j, r);
	r->ext_output = xstrdup(j->ext_output ? j->ext_output : "");
	r->ioengine = xstrdup(bench_kind_is_ext(j->p.kind) || bench_kind_is_md(j->p.kind) ? "" :
	    bench_ioengine_name(j->ioengine));
	r->iodepth = depth_ran(j);
	r->buffer_pages = xstrdup(j->huge ? "huge" : "4k");
	r->cpu_bind = xstrdup(bench_kind_is_ext(j->p.kind) ? ext_cpu_bind(j) :
	    threads_bound(j) ? "core" : "none");
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
	pb_free_fields(&r->base);
}

/* ------------------------------------------------------------ stonewall */

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

/* ------------------------------------------------------------ clean-up */

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
		if (bench_unlink_count(wfd, name, 0, p->removed) < 0 && errno != ENOENT)
			rc = -1;
	}
	if (bench_md_cleanup(wfd, p) < 0)
		rc = -1;
	if (bench_unlink_count(wfd, "shared", 0, p->removed) < 0 && errno != ENOENT)
		rc = -1;
	if (bench_kind_is_ext(p->kind)) {
		snprintf(name, sizeof(name), "n.%u", p->node_index);
		if (bench_rm_tree(wfd, name, 0, p->removed) < 0 ||
		    bench_rm_tree(wfd, "ext", 0, p->removed) < 0)
			rc = -1;
	}
	close(wfd);
	/* other nodes may still have files in a shared directory */
	if (bench_unlink_count(dirfd, wname, AT_REMOVEDIR, p->removed) < 0 && errno != ENOENT &&
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

/* Append item to the comma list in buf while it fits, else " ..." once. */
static void
left_add(char *buf, size_t len, const char *item)
{
	size_t n = strlen(buf);

	if (n >= 4 && strcmp(buf + n - 4, " ...") == 0)
		return;
	if (n + strlen(item) + 2 + 5 < len)
		snprintf(buf + n, len - n, "%s%s", n ? ", " : "", item);
	else
		snprintf(buf + n, len - n, " ...");
}

/* List what is left in directory fd (paths from pre) into buf, depth
 * first, without following links; closes fd.  How many entries it held. */
static size_t
left_walk(int fd, const char *pre, char *buf, size_t len, int depth)
{
	struct dirent *de;
	size_t n = 0;
	DIR *d = fdopendir(fd);

	if (d == NULL) {
		close(fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX];
		int sub;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		snprintf(path, sizeof(path), "%s%s", pre, de->d_name);
		sub = depth < 16 ? openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC) : -1;
		if (sub < 0) {
			left_add(buf, len, path);
			continue;
		}
		strncat(path, "/", sizeof(path) - strlen(path) - 1);
		if (left_walk(sub, path, buf, len, depth + 1) == 0)
			left_add(buf, len, path);	/* an empty directory is left */
	}
	closedir(d);
	return n;
}

void
bench_cleanup_failure(const char *node, const struct bench_params *p, char *buf, size_t len)
{
	char real[PATH_MAX], wname[BENCH_ID_MAX + 8], left[512] = "";
	int dfd, wfd = -1, e = 0;

	snprintf(wname, sizeof(wname), "knob.%s", p->workdir_id);
	if (realpath(p->dir, real) == NULL)
		snprintf(real, sizeof(real), "%s", p->dir);
	if ((dfd = open(real, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		wfd = openat(dfd, wname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		e = errno;
		close(dfd);
	}
	if (wfd >= 0)
		left_walk(wfd, "", left, sizeof(left), 0);
	else
		snprintf(left, sizeof(left), "(cannot open it: %s)", strerror(e ? e : errno));
	snprintf(buf, len, "%s: clean-up of %s/%s incomplete, left: %s", node, real, wname,
	    left[0] ? left : "(nothing now)");
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
		bench_buf_free(j->th[i].buf, j->th[i].buflen, !j->p.small_pages);
		bench_buf_free(j->th[i].wpool, j->pool.len, j->pool.huge);
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
