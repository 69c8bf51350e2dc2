/* The files of one tuning transaction, each opened once for reading and,
 * if it is written, once for writing.  A transaction reads a key's value,
 * re-reads it before its write, writes it, and re-reads it after the
 * other writes: before this, four opens of the same path, each a path
 * walk.  Between tune_fd_begin and tune_fd_end, on the thread that began
 * it, each path read is opened once O_RDONLY (re-read with pread at 0,
 * which sysfs and procfs answer afresh), and each path written is opened
 * once O_WRONLY|O_TRUNC|O_NOFOLLOW, as every write was, for its first
 * write (later writes: pwrite at 0, then cut to length).  Only what is
 * written is opened for writing, so a verify or a key that already holds
 * opens nothing for writing (audit and inotify see what they saw before).
 * An open that fails is not cached: the caller takes the old path, whose
 * result and error are the same.  Only the thread that began the
 * transaction sees the cache: health checks and facts on other threads
 * are untouched. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune.h"
#include "util.h"

static __thread struct tune_fds *cur;

void
tune_fd_begin(struct tune_fds *c)
{
	memset(c, 0, sizeof(*c));
	cur = c;
}

void
tune_fd_end(struct tune_fds *c)
{
	for (size_t i = 0; i < c->n; i++) {
		if (c->v[i].rfd >= 0)
			close(c->v[i].rfd);
		if (c->v[i].wfd >= 0)
			close(c->v[i].wfd);
		free(c->v[i].path);
	}
	c->n = 0;
	if (cur == c)
		cur = NULL;
}

/* The entry for full, made on first use; NULL without a transaction on
 * this thread or when the cache is full. */
static struct tune_fd *
entry(const char *full)
{
	struct tune_fd *e;

	if (cur == NULL)
		return NULL;
	for (size_t i = 0; i < cur->n; i++)
		if (strcmp(cur->v[i].path, full) == 0)
			return &cur->v[i];
	if (cur->n == TUNE_FDS_MAX)
		return NULL;
	e = &cur->v[cur->n++];
	e->path = xstrdup(full);
	e->rfd = e->wfd = -1;
	e->rtried = 0;
	return e;
}

int
tune_fd_read(const char *full)
{
	struct tune_fd *e = entry(full);

	if (e == NULL)
		return -1;
	if (!e->rtried) {
		e->rtried = 1;
		e->rfd = open(full, O_RDONLY | O_CLOEXEC);
	}
	return e->rfd;
}

/* Write s to full through the transaction's write fd: the first write
 * is write_small_open, its fd kept; later ones pwrite and cut.  0,
 * -errno, or 1: not cached (the caller writes the old way). */
int
tune_fd_write(const char *full, const char *s)
{
	struct tune_fd *e = entry(full);
	int r;

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
	return write_small_open(full, s, &e->wfd);
}
