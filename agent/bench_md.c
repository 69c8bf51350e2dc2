/* Benchmark engine: metadata phases, as mdtest measures them.
 *
 * Items (files for md-create/stat/read/remove, directories for
 * md-mkdir/dirstat/rmdir) live in a directory tree per rank (d.<rank>), or
 * in one tree all ranks share (d.shared, mdtest without -u).  The tree is
 * either s.<k> directories of files_per_dir items each, or an mdtest tree
 * of depth z and branching b (-z/-b) with items in every directory or only
 * in the leaves (-L).  No timed operation changes anything through a
 * symbolic link in any component below the phase's directory descriptor
 * (DIR/knob.<id>, never reached by DIR's name again, so a knob.<id>
 * renamed and replaced by a link mid-phase does not take the phase
 * elsewhere).  Creates and reads open the full path from it by default
 * ("d.<rank>/s.<k>/file.mdtest.<rank>.<i>"), so that the kernel walks the
 * path on every operation as it does for mdtest, with openat2(
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS); stat does the same walk with
 * fstatat, which changes nothing.  unlink, mkdir and rmdir have no such
 * flag, so they work on the item's name in its directory, opened with the
 * same openat2 once per directory (md_enter, which every phase does: a
 * link swapped in for a tree directory before the walk reaches it fails
 * the phase with ELOOP).  md_relative opens creates and reads in that
 * directory too.  Prepare and clean-up always go through openat(2)
 * with O_NOFOLLOW. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "bench.h"
#include "util.h"

#define MD_DEPTH_MAX	12		/* clean-up recursion stays under 16 */
#define MD_DIRS_MAX	(1ull << 20)
/* content key of file i: MD_KEY ^ (i << 32), each 4 KiB of it stamped with
 * the key + its offset in the file (files up to 4 GiB: no two alike) */
#define MD_KEY		0x6d64000000000000ull
#define md_key(i)	(MD_KEY ^ ((uint64_t)(i) << 32))

/* Which tree directories hold which items. */
struct md_shape {
	uint64_t branch;		/* children per directory */
	uint64_t first, ndirs;		/* BFS nodes [first, first + ndirs) hold items */
	uint64_t nnodes;		/* every node of the tree (BFS 0 = the root) */
	uint64_t per_dir;
};

/* Items of rank: files_total spread exactly, or md_files each. */
uint64_t
bench_md_items(const struct bench_params *p, uint32_t rank)
{
	if (p->files_total == 0)
		return p->md_files;
	return p->files_total / p->threads_total + (rank < p->files_total % p->threads_total);
}

/* Nodes of a tree of depth z and branching b; 0 when above MD_DIRS_MAX. */
static uint64_t
tree_nodes(uint32_t z, uint64_t b, uint64_t *leaves)
{
	uint64_t total = 1, level = 1;

	for (uint32_t l = 1; l <= z; l++) {
		if (level > MD_DIRS_MAX / b)
			return 0;
		level *= b;
		total += level;
		if (total > MD_DIRS_MAX)
			return 0;
	}
	*leaves = level;
	return total;
}

/* The shape for a rank with items items. */
static void
md_shape(const struct bench_params *p, uint64_t items, struct md_shape *s)
{
	uint64_t leaves = 1;

	memset(s, 0, sizeof(*s));
	if (p->md_depth == 0 && p->md_branch == 0) {
		/* s.0 .. s.<k-1> below the root, files_per_dir each */
		s->per_dir = p->files_per_dir;
		s->branch = items ? (items + s->per_dir - 1) / s->per_dir : 1;
		s->first = 1;
		s->ndirs = s->branch;
		s->nnodes = s->branch + 1;
		return;
	}
	s->branch = p->md_branch ? p->md_branch : 1;
	s->nnodes = tree_nodes(p->md_depth, s->branch, &leaves);
	s->ndirs = p->md_leaf_only ? leaves : s->nnodes;
	s->first = s->nnodes - s->ndirs;
	s->per_dir = items ? (items + s->ndirs - 1) / s->ndirs : 1;
}

int
bench_md_check(const struct bench_params *p, char *err, size_t errlen)
{
	uint64_t leaves;

	if (p->md_files > (1ull << 32) || p->files_total / p->threads_total > (1ull << 32)) {
		snprintf(err, errlen, "too many files per thread");
		return -1;
	}
	if (p->md_write_size > BENCH_BS_MAX) {
		snprintf(err, errlen, "md write size above 64 MiB");
		return -1;
	}
	if (p->md_depth > MD_DEPTH_MAX) {
		snprintf(err, errlen, "tree depth above %d", MD_DEPTH_MAX);
		return -1;
	}
	if ((p->md_depth || p->md_branch) &&
	    tree_nodes(p->md_depth, p->md_branch ? p->md_branch : 1, &leaves) == 0) {
		snprintf(err, errlen, "directory tree above %llu directories",
		    (unsigned long long)MD_DIRS_MAX);
		return -1;
	}
	if (p->runtime_s) {
		snprintf(err, errlen, "a time-based run (runtime) applies to data phases only");
		return -1;
	}
	return 0;
}

/* Name of the tree root of rank under the work directory. */
static void
root_name(const struct bench_params *p, uint32_t rank, char *buf, size_t len)
{
	if (p->md_shared)
		snprintf(buf, len, "d.shared");
	else
		snprintf(buf, len, "d.%08u", rank);
}

/* Path of BFS node n below the root ("" for the root, else "/s.a/s.b"). */
static void
node_path(const struct md_shape *s, uint64_t n, char *buf, size_t len)
{
	uint64_t c[MD_DEPTH_MAX + 2];
	size_t k = 0, o = 0;

	while (n > 0 && k < nitems(c)) {
		c[k++] = (n - 1) % s->branch;
		n = (n - 1) / s->branch;
	}
	buf[0] = '\0';
	while (k-- > 0 && o < len)
		o += (size_t)snprintf(buf + o, len - o, "/s.%llu", (unsigned long long)c[k]);
}

/* Open directory path ("a/b/c", changed in place) beneath dfd one
 * component at a time through openat with O_NOFOLLOW, creating the
 * directories when create.  The fd, or -1 (errno). */
static int
walk_dirs(int dfd, char *path, int create)
{
	char *comp, *save = NULL;
	int fd = dup(dfd), nfd;

	for (comp = strtok_r(path, "/", &save); comp && fd >= 0;
	    comp = strtok_r(NULL, "/", &save)) {
		if (create && bench_mkdir_ok(fd, comp) < 0) {
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = nfd;
	}
	return fd;
}

/* Open node n of the tree at rootfd (walk_dirs), creating the
 * directories when create.  The fd, or -1 (errno). */
static int
open_node(int rootfd, const struct md_shape *s, uint64_t n, int create)
{
	char path[PATH_MAX];

	node_path(s, n, path, sizeof(path));
	return walk_dirs(rootfd, path, create);
}

/* Item i of owner, named as mdtest names it ("file.mdtest.<rank>.<i>",
 * "dir.mdtest.<rank>.<i>"): on file systems that scan directory blocks
 * (ext4, and so a Lustre MDT on ldiskfs) the name's length sets how many
 * entries a block holds and so what a create or a lookup scans; with the
 * short names of before ("f.<rank>.<i>") one thread's md-create on ext4
 * ran at 0.91x mdtest's, with these at 1.03x (README, engine-vs-mdtest). */
static void
item_name(int dir, uint32_t owner, uint64_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%s.mdtest.%u.%llu", dir ? "dir" : "file", owner,
	    (unsigned long long)i);
}

/* ------------------------------------------------------------ operations */

/* One operation on item i of owner at (dfd, path): 0, an errno, or -1
 * when md-read found other content than the owner wrote. */
typedef int (*md_fn)(struct bench_thread *t, int dfd, const char *path, uint32_t owner,
    uint64_t i, uint64_t *bytes);

/* openat2 of path beneath dfd, refusing a symbolic link in any of its
 * components (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS: the same walk as
 * openat's).  The fd, or -1 (errno; ENOSYS before Linux 5.6). */
static int
open_beneath(int dfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)flags,
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
	};

	return (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
}

/* The directory that holds path's last component, opened beneath dfd
 * without following a symbolic link (open_beneath; before Linux 5.6 the
 * same through walk_dirs), and in *name that component.  dfd itself when
 * path has one component; else an fd the caller closes (md_close), or -1
 * (errno: ELOOP for a link in the way). */
static int
md_dir(int dfd, const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	int fd;

	*name = slash ? slash + 1 : path;
	if (!slash)
		return dfd;
	if ((size_t)(slash - path) >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	fd = open_beneath(dfd, dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd >= 0 || errno != ENOSYS)
		return fd;
	return walk_dirs(dfd, dir, 0);
}

/* Close what md_dir opened (not dfd). */
static void
md_close(int fd, int dfd)
{
	if (fd >= 0 && fd != dfd)
		close(fd);
}

/* Open path beneath dfd without following a symbolic link in any of its
 * components: one openat2 (open_beneath), so that the kernel walks the
 * full path as it does for mdtest; before Linux 5.6, openat with
 * O_NOFOLLOW in the directory md_dir opens.  The fd or -1. */
static int
md_open(int dfd, const char *path, int flags, mode_t mode)
{
	const char *name;
	int fd = open_beneath(dfd, path, flags, mode), pfd, e;

	if (fd >= 0 || errno != ENOSYS)
		return fd;
	if ((pfd = md_dir(dfd, path, &name)) < 0)
		return -1;
	fd = openat(pfd, name, flags | O_NOFOLLOW, mode);
	e = errno;
	md_close(pfd, dfd);
	errno = e;
	return fd;
}

static int
op_create(struct bench_thread *t, int dfd, const char *path, uint32_t owner, uint64_t i,
    uint64_t *bytes)
{
	const struct bench_job *j = t->job;
	size_t ws = (size_t)j->p.md_write_size;
	int fd, e = 0;
	ssize_t n;

	fd = md_open(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	if (ws) {
		n = bench_write_from(t, fd, bench_md_src(&j->pool, owner, md_key(i)), ws, owner,
		    md_key(i), 0);
		if (n < 0)
			e = (int)-n;
		else if ((size_t)n != ws)
			e = EIO;
	}
	if (e == 0 && j->p.fsync && fsync(fd) < 0)
		e = errno;
	if (close(fd) < 0 && e == 0)
		e = errno;
	*bytes = ws;
	return e;
}

/* A call on name in an open directory, as unlinkat: 0 or -1 (errno). */
typedef int (*at_fn)(int dfd, const char *name, int arg);

/* call (unlinkat, mkdir_at) on path's last component in the
 * directory md_dir opens beneath dfd: nothing outside dfd is touched,
 * whatever symbolic link is swapped in for a directory on the way.
 * 0 or an errno. */
static int
md_at(int dfd, const char *path, at_fn call, int arg)
{
	const char *name;
	int pfd = md_dir(dfd, path, &name), e;

	if (pfd < 0)
		return errno;
	e = call(pfd, name, arg) < 0 ? errno : 0;
	md_close(pfd, dfd);
	return e;
}

static int
mkdir_at(int dfd, const char *name, int mode)
{
	return mkdirat(dfd, name, (mode_t)mode);
}

/* A stat of the full path from the phase's directory, one fstatat as
 * mdtest's: it changes nothing, so it keeps mdtest's walk (a link planted
 * on the way makes it look at what the link names; only root can plant
 * one in the tree's directories). */
static int
op_stat(struct bench_thread *t, int dfd, const char *path, uint32_t owner, uint64_t i,
    uint64_t *bytes)
{
	struct stat st;

	(void)t, (void)owner, (void)i, (void)bytes;
	return fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
}

/* Is md file i of owner (ws bytes read into b) what owner wrote?  Its
 * first and last 16 bytes (cheap, as a data block's stamp check; mdtest
 * checks nothing unless -X), every byte with verify. */
static int
md_content_ok(const struct bench_job *j, const uint8_t *b, size_t ws, uint32_t owner, uint64_t i)
{
	return bench_md_content(&j->pool, b, ws, owner, md_key(i), j->p.verify);
}

/* Open and close; with a write size read the file and check it. */
static int
op_read(struct bench_thread *t, int dfd, const char *path, uint32_t owner, uint64_t i,
    uint64_t *bytes)
{
	const struct bench_job *j = t->job;
	size_t ws = (size_t)j->p.md_write_size;
	int fd, e = 0;
	ssize_t n;

	fd = md_open(dfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (ws) {
		n = bench_full_io(fd, t->buf, ws, 0, 0);
		if (n < 0)
			e = (int)-n;
		else if ((size_t)n != ws || !md_content_ok(j, t->buf, ws, owner, i))
			e = -1;
		else
			*bytes = (uint64_t)n;
	}
	close(fd);
	return e;
}

static int
op_unlink(struct bench_thread *t, int dfd, const char *path, uint32_t owner, uint64_t i,
    uint64_t *bytes)
{
	(void)t, (void)owner, (void)i, (void)bytes;
	return md_at(dfd, path, unlinkat, 0);
}

static int
op_mkdir(struct bench_thread *t, int dfd, const char *path, uint32_t owner, uint64_t i,
    uint64_t *bytes)
{
	(void)t, (void)owner, (void)i, (void)bytes;
	return md_at(dfd, path, mkdir_at, 0755);
}

static int
op_rmdir(struct bench_thread *t, int dfd, const char *path, uint32_t owner, uint64_t i,
    uint64_t *bytes)
{
	(void)t, (void)owner, (void)i, (void)bytes;
	return md_at(dfd, path, unlinkat, AT_REMOVEDIR);
}

static const struct md_op {
	int kind;
	md_fn fn;
	int dir;			/* items are directories */
	int full;			/* fn works on the full path (create, read:
					 * md_open refuses links; stat changes nothing) */
	int needs;			/* items must exist before the phase */
	md_fn make;			/* how prepare makes a missing item */
} md_ops[] = {
	{ BK_MD_CREATE, op_create, 0, 1, 0, op_create },
	{ BK_MD_STAT, op_stat, 0, 1, 1, op_create },
	{ BK_MD_READ, op_read, 0, 1, 1, op_create },
	{ BK_MD_REMOVE, op_unlink, 0, 0, 1, op_create },
	{ BK_MD_MKDIR, op_mkdir, 1, 0, 0, op_mkdir },
	{ BK_MD_DIRSTAT, op_stat, 1, 1, 1, op_mkdir },
	{ BK_MD_RMDIR, op_rmdir, 1, 0, 1, op_mkdir },
};

static const struct md_op *
md_op(int kind)
{
	for (size_t i = 0; i < nitems(md_ops); i++)
		if (md_ops[i].kind == kind)
			return &md_ops[i];
	return NULL;
}

/* ------------------------------------------------------------ prepare */

/* Open (creating) the tree root of rank under the work directory. */
static int
open_root(struct bench_job *j, uint32_t rank, int create)
{
	char name[32];

	root_name(&j->p, rank, name, sizeof(name));
	if (create && bench_mkdir_ok(j->wfd, name) < 0)
		return -1;
	return openat(j->wfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Does the directory at dfd, whose first item is first, hold its first
 * and last items?  The phases make and remove items in order, so then it
 * holds them all (as a data file whose first and last blocks are stamped).
 * Prepare then touches no other item: a pass over every item would warm
 * the caches for the timed phase, which mdtest's phases do not get. */
static int
dir_complete(struct bench_thread *t, const struct md_shape *s, int dfd, int dir,
    uint64_t first)
{
	uint64_t last = first + s->per_dir - 1, probe[2];
	char name[48];
	struct stat st;

	if (last >= t->nitems)
		last = t->nitems - 1;
	probe[0] = first;
	probe[1] = last;
	for (int k = 0; k < 2; k++) {
		item_name(dir, t->rank, probe[k], name, sizeof(name));
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    S_ISDIR(st.st_mode) != !!dir)
			return 0;
	}
	return 1;
}

/* Create the tree directories of the rank, and the items a phase that
 * needs them finds missing (a standalone md-stat, say). */
int
bench_md_prepare(struct bench_thread *t)
{
	struct bench_job *j = t->job;
	const struct md_op *op = md_op(j->p.kind);
	struct md_shape s;
	uint64_t n, i, node = UINT64_MAX, bytes;
	int root, dfd = -1, rc = -1, e;
	char name[48];
	struct stat st;

	t->nitems = bench_md_items(&j->p, t->rank);
	md_shape(&j->p, t->nitems, &s);
	if ((root = open_root(j, t->rank, 1)) < 0) {
		TERR(t, "%s: mkdir tree root of rank %u: %s", j->node, t->rank, strerror(errno));
		return -1;
	}
	/* every directory of the tree, parents first (BFS order) */
	for (n = 1; n < s.nnodes && !j->abort; n++) {
		if ((dfd = open_node(root, &s, n, 1)) < 0) {
			TERR(t, "%s: mkdir tree directory %llu of rank %u: %s", j->node,
			    (unsigned long long)n, t->rank, strerror(errno));
			goto out;
		}
		close(dfd);
	}
	dfd = -1;
	for (i = 0; op->needs && i < t->nitems && !j->abort; i++) {
		if ((n = s.first + i / s.per_dir) != node) {
			if (dfd >= 0)
				close(dfd);
			node = n;
			if ((dfd = open_node(root, &s, n, 0)) < 0) {
				TERR(t, "%s: open tree directory %llu: %s", j->node,
				    (unsigned long long)n, strerror(errno));
				goto out;
			}
			if (dir_complete(t, &s, dfd, op->dir, i)) {
				i = (i / s.per_dir + 1) * s.per_dir - 1;
				continue;
			}
		}
		item_name(op->dir, t->rank, i, name, sizeof(name));
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		if ((e = op->make(t, dfd, name, t->rank, i, &bytes)) != 0) {
			TERR(t, "%s: create %s: %s", j->node, name, strerror(e));
			goto out;
		}
	}
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	close(root);
	return rc;
}

/* ------------------------------------------------------------ timed loop */

/* The current tree directory of a timed loop and the item's path. */
struct md_where {
	int dfd;			/* the directory, opened beneath DIR/knob.<id>, or -1 */
	char path[PATH_MAX];		/* "d.<rank>/s.<k>/<item>" below DIR/knob.<id> */
	size_t plen;			/* its directory part, "d.<rank>/s.<k>/" */
};

/* Point w at tree node n of owner: its directory opened once beneath the
 * phase's directory, refusing a symbolic link on the way (md_dir), for
 * every operation on its items to work in.  0, or -1 (errno). */
static int
md_enter(struct bench_job *j, uint32_t owner, const struct md_shape *s, uint64_t n,
    struct md_where *w)
{
	char root[32], rel[PATH_MAX / 2];
	const char *name;

	md_close(w->dfd, j->wfd);
	w->dfd = -1;
	root_name(&j->p, owner, root, sizeof(root));
	node_path(s, n, rel, sizeof(rel));
	w->plen = (size_t)snprintf(w->path, sizeof(w->path), "%s%s/", root, rel);
	if (w->plen >= sizeof(w->path) - 48) {
		errno = ENAMETOOLONG;
		return -1;
	}
	w->dfd = md_dir(j->wfd, w->path, &name);
	return w->dfd < 0 ? -1 : 0;
}

/* Run the op on item i of owner, named in w->path: create, read and stat
 * on the full path from the phase's directory (one walk of it, as mdtest's)
 * unless md_relative; unlink, mkdir and rmdir on the name in the directory
 * md_enter opened (an openat2 of the directory per operation, which these
 * calls would need to refuse links on the way, cost a third of
 * md-remove's rate on tmpfs).  0, an errno, or -1 (md-read: wrong
 * content). */
static int
md_item(struct bench_thread *t, const struct md_op *op, struct md_where *w, uint32_t owner,
    uint64_t i, uint64_t *bytes)
{
	struct bench_job *j = t->job;

	if (op->full && !j->p.md_relative)
		return op->fn(t, j->wfd, w->path, owner, i, bytes);
	return op->fn(t, w->dfd, w->path + w->plen, owner, i, bytes);
}

void
bench_md_run(struct bench_thread *t, uint32_t owner, uint64_t start_mono)
{
	struct bench_job *j = t->job;
	const struct md_op *op = md_op(j->p.kind);
	struct md_where w = { .dfd = -1 };
	struct md_shape s;
	uint64_t i, n, node = UINT64_MAX, limit = bench_md_items(&j->p, owner);
	int walled = 0, e;

	md_shape(&j->p, limit, &s);
	for (i = 0; i < limit && !j->abort; i++) {
		uint64_t t0, t1, bytes = 0;

		if ((n = s.first + i / s.per_dir) != node) {
			node = n;
			if (md_enter(j, owner, &s, n, &w) < 0) {
				TERR(t, "%s: %s: open tree directory %s/%s of rank %u: %s", j->node,
				    bench_kind_name(j->p.kind), j->wpath, w.path, owner,
				    strerror(errno));
				break;
			}
		}
		item_name(op->dir, owner, i, w.path + w.plen, sizeof(w.path) - w.plen);
		t0 = now_mono_ns();
		e = md_item(t, op, &w, owner, i, &bytes);
		t1 = now_mono_ns();
		if (e) {
			if (e < 0)
				TERR(t, "%s: md-read %s/%s: content is not what rank %u wrote",
				    j->node, j->wpath, w.path, owner);
			else
				TERR(t, "%s: %s %s/%s: %s", j->node, bench_kind_name(j->p.kind),
				    j->wpath, w.path, strerror(e));
			break;
		}
		limit = bench_after_op(t, t0, t1, bytes, i + 1, limit, start_mono, &walled);
	}
	md_close(w.dfd, j->wfd);
	bench_wall_leave(t, walled);
}

/* ------------------------------------------------------------ clean-up */

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The ranks whose items a clean-up removes, sorted. */
struct own_ranks {
	uint32_t *v;
	size_t n;
};

/* The rank in an item's name: "file.mdtest.<rank>.<i>", "dir.mdtest.<rank>.<i>",
 * or an older agent's "f.<rank>.<i>", "e.<rank>.<i>".  0, or -1 when the name
 * is none of these. */
static int
item_rank(const char *name, unsigned *r)
{
	static const char *const pfx[] = { "file.mdtest.", "dir.mdtest.", "f.", "e." };
	char c;

	for (size_t k = 0; k < nitems(pfx); k++) {
		size_t n = strlen(pfx[k]);

		if (strncmp(name, pfx[k], n) == 0 && sscanf(name + n, "%u.%c", r, &c) == 2)
			return 0;
	}
	return -1;
}

/* In the shared tree: walk the tree directories, remove the items of our
 * ranks, keep the others'. */
static int
pick_own(const char *name, const void *arg)
{
	const struct own_ranks *o = arg;
	unsigned r;

	if (strncmp(name, "s.", 2) == 0)
		return RM_DESCEND;
	if (item_rank(name, &r) < 0)
		return RM_KEEP;
	return bsearch(&(uint32_t){ r }, o->v, o->n, sizeof(*o->v), cmp_u32) ? RM_ALL : RM_KEEP;
}

int
bench_md_cleanup(int wfd, const struct bench_params *p)
{
	struct own_ranks o = { xcalloc(p->nranks + 1, sizeof(*o.v)), p->nranks };
	char name[32];
	int rc = 0;

	for (size_t i = 0; i < p->nranks; i++) {
		snprintf(name, sizeof(name), "d.%08u", p->ranks[i]);
		if (bench_rm_tree(wfd, name, 0, p->removed) < 0)
			rc = -1;
	}
	memcpy(o.v, p->ranks, p->nranks * sizeof(*o.v));
	qsort(o.v, o.n, sizeof(*o.v), cmp_u32);
	if (bench_rm_walk(wfd, "d.shared", 0, pick_own, &o, p->removed) < 0)
		rc = -1;
	free(o.v);
	return rc;
}
