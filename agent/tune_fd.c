/* The files of one tuning transaction, each opened once for reading and,
 * if it is written, once for writing.  A transaction reads a key's value,
 * re-reads it before its write, writes it, and re-reads it after the
 * other writes: before this, four opens of the same path, each a path
 * walk.  Between tune_fd_begin and tune_fd_end, on the thread that began
 * it, each path read is opened once O_RDONLY (re-read with pread at 0,
 * which sysfs and procfs answer afresh), and each path written is opened
 * once O_WRONLY|O_NOFOLLOW for its first write, with O_TRUNC unless the
 * value is at least as long as what the last read returned (later writes:
 * pwrite at 0, then cut to length).  Only what is
 * written is opened for writing, so a verify or a key that already holds
 * opens nothing for writing (audit and inotify see what they saw before).
 * An open that fails is not cached: the caller takes the old path, whose
 * result and error are the same.  Only the thread that began the
 * transaction sees the cache: health checks and facts on other threads
 * are untouched.  glob(3)'s directory listings are kept too, until the
 * transaction's next write (a write may add or remove entries, as a
 * scheduler change does under queue/iosched), so the globs of a plan list
 * each directory once. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "tune.h"
#include "util.h"

static __thread struct tune_fds *cur;

void
tune_fd_begin(struct tune_fds *c, const char *sysroot)
{
	memset(c, 0, sizeof(*c));
	c->root = sysroot;
	c->rl = strlen(sysroot);
	c->rootfd = c->rl > 0 ? open(sysroot, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	cur = c;
}

/* The directory fd and path to reach full by: the sysroot's fd and the
 * rest when full lies below it, else AT_FDCWD and full itself. */
static int
at_root(const char *full, const char **rel)
{
	if (cur->rootfd >= 0 && strncmp(full, cur->root, cur->rl) == 0 && full[cur->rl] == '/' &&
	    full[cur->rl + 1] != '\0') {
		*rel = full + cur->rl + 1;
		return cur->rootfd;
	}
	*rel = full;
	return AT_FDCWD;
}

/* open(2) of full, relative to the sysroot's fd when full lies below it:
 * the same file by the same walk, without walking the sysroot's own
 * components again for every key. */
static int
open_below(const char *full, int flags)
{
	const char *rel;
	int dfd = at_root(full, &rel);

	return openat(dfd, rel, flags);
}

/* Forget the kept directory listings. */
static void
dirs_drop(struct tune_fds *c)
{
	for (size_t i = 0; i < c->ndirs; i++) {
		free(c->dirs[i].path);
		free(c->dirs[i].ents);
	}
	c->ndirs = 0;
}

void
tune_fd_end(struct tune_fds *c)
{
	dirs_drop(c);
	for (size_t i = 0; i < c->n; i++) {
		if (c->v[i].rfd >= 0)
			close(c->v[i].rfd);
		if (c->v[i].wfd >= 0)
			close(c->v[i].wfd);
		free(c->v[i].path);
	}
	c->n = 0;
	if (c->rootfd >= 0)
		close(c->rootfd);
	c->rootfd = -1;
	if (cur == c)
		cur = NULL;
}

_Static_assert(TUNE_FDS_MAX < 255 && TUNE_FDS_SLOTS >= 2 * TUNE_FDS_MAX &&
    (TUNE_FDS_SLOTS & (TUNE_FDS_SLOTS - 1)) == 0, "tune_fds slot index");

/* FNV-1a of full below the sysroot (at_root's part): every path shares
 * the sysroot's long prefix, which would cost the most and tell nothing
 * apart. */
static uint64_t
path_hash(const char *full)
{
	const char *rel;

	(void)at_root(full, &rel);
	return str_hash(rel);
}

/* The entry for full, made on first use; NULL without a transaction on
 * this thread or when the cache is full.  Open addressing over slot[]. */
static struct tune_fd *
entry(const char *full)
{
	struct tune_fd *e;
	uint64_t h;
	size_t i;

	if (cur == NULL)
		return NULL;
	h = path_hash(full);
	for (i = h & (TUNE_FDS_SLOTS - 1); cur->slot[i] != 0; i = (i + 1) & (TUNE_FDS_SLOTS - 1)) {
		e = &cur->v[cur->slot[i] - 1];
		if (e->hash == h && strcmp(e->path, full) == 0)
			return e;
	}
	if (cur->n == TUNE_FDS_MAX)
		return NULL;
	e = &cur->v[cur->n++];
	cur->slot[i] = (uint8_t)cur->n;
	e->path = xstrdup(full);
	e->hash = h;
	e->rfd = e->wfd = -1;
	e->rtried = e->rerr = 0;
	e->rlen = -1;
	return e;
}

/* e's read fd, its open tried once. */
static int
entry_rfd(struct tune_fd *e, const char *full)
{
	if (!e->rtried) {
		e->rtried = 1;
		e->rfd = open_below(full, O_RDONLY | O_CLOEXEC);
		e->rerr = e->rfd < 0 ? errno : 0;
	}
	return e->rfd;
}

int
tune_fd_read(const char *full)
{
	struct tune_fd *e = entry(full);

	return e == NULL ? -1 : entry_rfd(e, full);
}

/* A read through the cached fd; a read that filled buf leaves the file's
 * length unknown. */
ssize_t
tune_fd_value(const char *full, char *buf, size_t len)
{
	struct tune_fd *e = entry(full);
	size_t raw;
	ssize_t n;

	if (e == NULL || entry_rfd(e, full) < 0)
		return -EBADF;
	n = read_small_fd(e->rfd, buf, len, &raw);
	e->rlen = n < 0 || raw + 1 >= len ? -1 : (ssize_t)raw;
	return n;
}

int
tune_fd_exists(const char *full)
{
	struct tune_fd *e = entry(full);

	if (e == NULL)
		return access(full, F_OK) == 0;
	if (entry_rfd(e, full) >= 0)
		return 1;
	return e->rerr != ENOENT && e->rerr != ENOTDIR && access(full, F_OK) == 0;
}

/* Write s to full through the transaction's write fd: the first write
 * is write_small_openat (below the sysroot's fd), its fd kept, without
 * O_TRUNC when the last read saw no more bytes than s has (a regular file
 * of a fake tree then keeps its page; sysfs and procfs ignore O_TRUNC);
 * later ones pwrite and cut.  0, -errno, or 1: not cached (the caller writes
 * the old way). */
int
tune_fd_write(const char *full, const char *s)
{
	struct tune_fd *e = entry(full);
	const char *rel;
	int r, dfd, trunc;

	if (cur != NULL)
		dirs_drop(cur);
	if (e == NULL)
		return 1;
	if (e->wfd >= 0) {
		r = write_small_fd(e->wfd, s);
		if (r == 0 || (r < 0 && r != -ENODEV))
			return r;
		close(e->wfd);	/* cannot be cut, or the node went away */
		e->wfd = -1;
		return 1;
	}
	dfd = at_root(full, &rel);
	trunc = e->rlen < 0 || strlen(s) < (size_t)e->rlen;
	return write_small_openat(dfd, rel, s, trunc, &e->wfd);
}

/* A listing being read by glob: a kept one, or its own when none is free. */
struct dir_iter {
	struct tune_dir *d;
	struct tune_dir own;
	size_t i;
};

/* Read the directory name (below the sysroot's fd) whole into d. */
static int
dir_list(const char *name, struct tune_dir *d)
{
	int fd = open_below(name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *dp;

	if (fd < 0)
		return -1;
	if ((dp = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	d->ents = NULL;
	d->n = 0;
	while ((de = readdir(dp)) != NULL) {
		struct dirent *c;

		d->ents = xgrow(d->ents, d->n, sizeof(*d->ents));
		c = &d->ents[d->n++];	/* by field: de may end before sizeof(*de) */
		c->d_ino = de->d_ino;
		c->d_off = de->d_off;
		c->d_reclen = sizeof(*c);
		c->d_type = de->d_type;
		str_copy(c->d_name, de->d_name, sizeof(c->d_name));
	}
	closedir(dp);
	d->path = xstrdup(name);
	return 0;
}

/* glob(3)'s directory open: the kept listing of name, listed now when
 * there is none. */
static void *
glob_opendir(const char *name)
{
	struct dir_iter *it = xcalloc(1, sizeof(*it));
	struct tune_dir *d = NULL;

	for (size_t i = 0; i < cur->ndirs && d == NULL; i++)
		if (strcmp(cur->dirs[i].path, name) == 0)
			d = &cur->dirs[i];
	if (d == NULL) {
		d = cur->ndirs < TUNE_DIRS_MAX ? &cur->dirs[cur->ndirs] : &it->own;
		if (dir_list(name, d) < 0) {
			free(it);
			return NULL;
		}
		if (d != &it->own)
			cur->ndirs++;
	}
	it->d = d;
	return it;
}

static struct dirent *
glob_readdir(void *p)
{
	struct dir_iter *it = p;

	return it->i < it->d->n ? &it->d->ents[it->i++] : NULL;
}

static void
glob_closedir(void *p)
{
	struct dir_iter *it = p;

	if (it->d == &it->own) {
		free(it->own.path);
		free(it->own.ents);
	}
	free(it);
}

static int
glob_statat(const char *name, struct stat *st, int flags)
{
	const char *rel;
	int dfd = at_root(name, &rel);

	return fstatat(dfd, rel, st, flags);
}

static int
glob_lstat(const char *name, struct stat *st)
{
	return glob_statat(name, st, AT_SYMLINK_NOFOLLOW);
}

static int
glob_stat(const char *name, struct stat *st)
{
	return glob_statat(name, st, 0);
}

int
tune_fd_glob(const char *pattern, glob_t *g)
{
	memset(g, 0, sizeof(*g));
	if (cur == NULL || cur->rootfd < 0)
		return glob(pattern, 0, NULL, g);
	g->gl_opendir = glob_opendir;
	g->gl_readdir = glob_readdir;
	g->gl_closedir = glob_closedir;
	g->gl_lstat = glob_lstat;
	g->gl_stat = glob_stat;
	return glob(pattern, GLOB_ALTDIRFUNC, NULL, g);
}
