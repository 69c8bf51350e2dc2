/* The files of one tuning transaction, each opened once.  A transaction
 * reads a key's value, writes it, re-reads it after the other writes and
 * checks it: four opens of the same path, each a path walk.  Between
 * tune_fd_begin and tune_fd_end, on the thread that began it, each path is
 * opened once for reading and writing (O_NOFOLLOW, as writes always were)
 * and every read (pread at 0, which sysfs and procfs answer afresh) and
 * write (ftruncate, as O_TRUNC did, then pwrite at 0) goes through that
 * fd.  A path that cannot be opened so (read-only or write-only
 * attributes, a symlink, no such file) is remembered as not cached and
 * takes the old open-per-call path, so its results and errors do not
 * change.  Only the thread that began the transaction sees the cache:
 * health checks and facts on other threads are untouched. */
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
		if (c->v[i].fd >= 0)
			close(c->v[i].fd);
		free(c->v[i].path);
	}
	c->n = 0;
	if (cur == c)
		cur = NULL;
}

/* The transaction's fd for the full path, opened on first use; -1 when
 * there is no transaction on this thread or the path is not cached. */
int
tune_fd_get(const char *full)
{
	struct tune_fd *e;

	if (cur == NULL)
		return -1;
	for (size_t i = 0; i < cur->n; i++)
		if (strcmp(cur->v[i].path, full) == 0)
			return cur->v[i].fd;
	if (cur->n == TUNE_FDS_MAX)
		return -1;
	e = &cur->v[cur->n++];
	e->path = xstrdup(full);
	e->fd = open(full, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	return e->fd;
}

/* Forget full's fd (a write through it failed; the old path retries). */
void
tune_fd_drop(const char *full)
{
	for (size_t i = 0; cur && i < cur->n; i++)
		if (strcmp(cur->v[i].path, full) == 0 && cur->v[i].fd >= 0) {
			close(cur->v[i].fd);
			cur->v[i].fd = -1;
		}
}
