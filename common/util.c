/* Small helpers shared by knobd and knobctl. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "log.h"
#include "util.h"

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		fatal("malloc %zu", n);
	return p;
}

void *
xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (p == NULL)
		fatal("calloc %zu*%zu", n, sz);
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		fatal("realloc %zu", n);
	return q;
}

void *
xgrow(void *p, size_t n, size_t sz)
{
	if (n != 0 && (n & (n - 1)) != 0)
		return p;
	return xrealloc(p, (n ? 2 * n : 1) * sz);
}

size_t
str_copy(char *dst, const char *src, size_t len)
{
	size_t n = strlen(src);

	if (len > 0) {
		size_t k = n < len ? n : len - 1;

		memcpy(dst, src, k);
		dst[k] = '\0';
	}
	return n;
}

char *
xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");

	if (p == NULL)
		fatal("strdup");
	return p;
}

/* printf into a fresh allocation; caller frees. */
char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		fatal("vasprintf");
	va_end(ap);
	return s;
}

uint64_t
str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* Append printf output to the malloc'd string *s (NULL starts one). */
void
str_appendf(char **s, const char *fmt, ...)
{
	char small[512], *add = small;
	size_t have = *s ? strlen(*s) : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		fatal("vsnprintf");
	if ((size_t)n >= sizeof(small)) {
		va_start(ap, fmt);
		if (vasprintf(&add, fmt, ap) < 0)
			fatal("vasprintf");
		va_end(ap);
	}
	*s = xrealloc(*s, have + (size_t)n + 1);
	memcpy(*s + have, add, (size_t)n + 1);
	if (add != small)
		free(add);
}

void
strvec_push_owned(struct strvec *sv, char *s)
{
	if (sv->n + 1 >= sv->cap) {
		sv->cap = sv->cap ? sv->cap * 2 : 16;
		sv->v = xrealloc(sv->v, sv->cap * sizeof(*sv->v));
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
}

void
strvec_push(struct strvec *sv, const char *s)
{
	strvec_push_owned(sv, xstrdup(s));
}

void
strvec_free(struct strvec *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = sv->cap = 0;
}

int
strvec_contains(const struct strvec *sv, const char *s)
{
	return strvec_index(sv, s) >= 0;
}

long
strvec_index(const struct strvec *sv, const char *s)
{
	for (size_t i = 0; i < sv->n; i++)
		if (strcmp(sv->v[i], s) == 0)
			return (long)i;
	return -1;
}

/* qsort: two strings. */
static int
strp_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void
strvec_sort(struct strvec *sv)
{
	if (sv->n > 1)
		qsort(sv->v, sv->n, sizeof(*sv->v), strp_cmp);
}

int
strvec_sorted_find(const struct strvec *sv, const char *s, size_t *at)
{
	size_t lo = 0, hi = sv->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(sv->v[mid], s);

		if (c == 0) {
			*at = mid;
			return 1;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return 0;
}

void
size_fmt(char *buf, size_t len, uint64_t v)
{
	static const char suf[] = "kmgt";
	int i = -1;

	while (v >= 1024 && v % 1024 == 0 && i < 3) {
		v /= 1024;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)v, suf[i]);
}

const char *
signed_fmt(char *buf, size_t len, double v, int prec)
{
	snprintf(buf, len, "%+.*f", prec, v);
	if (len > 1 && buf[1] != '\0' && strspn(buf + 1, "0.") == strlen(buf + 1))
		memmove(buf, buf + 1, strlen(buf));	/* only zeros: no sign */
	return buf;
}

uint64_t
now_real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t
now_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* I/O counters of the block device under path: requests completed and the
 * milliseconds they spent, reads and writes (fields 1, 4, 5 and 8 of its
 * stat file). */
int
blockdev_io(const char *path, struct blockdev_io *io)
{
	char sys[96], buf[256];
	struct stat st;

	if (stat(path, &st) < 0 || major(st.st_dev) == 0)
		return -1;
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/stat", major(st.st_dev),
	    minor(st.st_dev));
	if (read_small_file(sys, buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%ld %*d %*d %ld %ld %*d %*d %ld", &io->rd, &io->rd_ms, &io->wr,
	    &io->wr_ms) != 4)
		return -1;
	return 0;
}

/* Requests completed on the block device under path. */
int
blockdev_requests(const char *path, long *reads, long *writes)
{
	struct blockdev_io io;

	if (blockdev_io(path, &io) < 0)
		return -1;
	*reads = io.rd;
	*writes = io.wr;
	return 0;
}

/* The frame number of the page at p, from pm (an open /proc/self/pagemap):
 * 0 if not present or hidden (no CAP_SYS_ADMIN), -1 if unreadable. */
int64_t
page_frame(int pm, const void *p)
{
	uint64_t e;
	long pg = sysconf(_SC_PAGESIZE);

	if (pread(pm, &e, 8, (off_t)((uintptr_t)p / (uintptr_t)pg * 8)) != 8)
		return -1;
	if (!(e >> 63))
		return 0;
	return (int64_t)(e & ((1ull << 55) - 1));
}

/* Runs of physically contiguous pages in [b, b+len) (the scatter-gather
 * segments of a transfer from or to it): 1 + the breaks in the frame
 * numbers; -1 when a frame is unknown. */
int
page_runs(int pm, const void *b, size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	int64_t prev = -2, f;
	int n = 0;

	for (size_t i = 0; i < len; i += (size_t)pg) {
		if ((f = page_frame(pm, (const uint8_t *)b + i)) <= 0)
			return -1;
		n += f != prev + 1;
		prev = f;
	}
	return n;
}

/* Bounded read of a small (sysfs/procfs) file from an open fd, from
 * offset 0; strips trailing newlines. */
ssize_t
read_small_fd(int fd, char *buf, size_t max, size_t *raw)
{
	ssize_t n, tot = 0;

	if (max == 0)
		return -EINVAL;
	while ((size_t)tot < max - 1) {
		n = pread(fd, buf + tot, max - 1 - (size_t)tot, (off_t)tot);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		tot += n;
	}
	buf[tot] = '\0';
	if (raw != NULL)
		*raw = (size_t)tot;
	while (tot > 0 && buf[tot - 1] == '\n')
		buf[--tot] = '\0';
	return tot;
}

/* Bounded read of a small file, as read_small_fd. */
ssize_t
read_small_file(const char *path, char *buf, size_t max)
{
	ssize_t n;
	int fd;

	if (max == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read_small_fd(fd, buf, max, NULL);
	close(fd);
	return n;
}

/* The same one write on an open fd: s at offset 0, then the file cut to
 * its length (what O_TRUNC did first; cheaper after, where the length
 * does not change; a no-op on sysfs and procfs).  0, -errno of the write,
 * or 1 when the cut was refused (write again the old way). */
int
write_small_fd(int fd, const char *s)
{
	size_t len = strlen(s);
	ssize_t n;

	n = pwrite(fd, s, len, 0);
	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO;
	return ftruncate(fd, (off_t)len) < 0 ? 1 : 0;
}

/* One write(2) of s, as sysfs and procfs expect; with trunc, O_TRUNC like
 * a shell's "echo v > f" (a no-op on sysfs/procfs, needed for fake trees
 * of regular files; a caller that knows s covers the old content may leave
 * it out); O_NOFOLLOW so a planted symlink is not followed.  path is
 * relative to dirfd (AT_FDCWD: as open(2)).  The fd is left open in *fdp
 * (-1 when the open failed).  0 or -errno. */
int
write_small_openat(int dirfd, const char *path, const char *s, int trunc, int *fdp)
{
	size_t len = strlen(s);
	ssize_t n;

	*fdp = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | (trunc ? O_TRUNC : 0));
	if (*fdp < 0)
		return -errno;
	n = write(*fdp, s, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* write_small_openat, then close.  0 or -errno. */
int
write_small_file(const char *path, const char *s)
{
	int fd, rc;

	rc = write_small_openat(AT_FDCWD, path, s, 1, &fd);
	if (fd >= 0 && close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* data written through path as it is (O_TRUNC, no O_CREAT): a device or
 * a FIFO, which a rename would replace by a regular file (/dev/null,
 * /dev/stdout).  0 or -errno. */
static int
write_in_place(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	while (len > 0 && rc == 0) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno != EINTR)
			rc = -errno;
		else if (n > 0) {
			data += n;
			len -= (size_t)n;
		}
	}
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

int
write_file_atomic_with(const char *path, mode_t mode, int (*fill)(FILE *f, void *arg),
    void *arg)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	if (f == NULL)
		return -errno;
	rc = fill(f, arg);
	if (fclose(f) != 0 || rc < 0)
		rc = -EIO;
	else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		rc = write_in_place(path, buf, len);
	else
		rc = write_file_atomic(path, buf, len, mode);
	free(buf);
	return rc;
}

/* In the child of a fork, before exec: every signal back to its default
 * action (those glibc lets a program set: not its own 32 and 33) and none
 * blocked.  An ignored signal and the mask survive exec, and knobd ignores
 * SIGPIPE and blocks SIGTERM, SIGINT and SIGHUP for its signalfd:
 * mmchconfig or ior would run deaf to them. */
void
child_signals_default(void)
{
	sigset_t none;

	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* fsync the directory that holds path, so that a rename or unlink in it
 * is on disk.  0 or -errno; a file system that cannot sync a directory
 * (EINVAL) has nothing to wait for. */
int
sync_parent_dir(const char *path)
{
	char dir[PATH_MAX];
	int dfd, rc;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	rc = fsync(dfd) < 0 && errno != EINVAL && errno != EOPNOTSUPP ? -errno : 0;
	close(dfd);
	return rc;
}

/* tmp + fsync + rename + fsync(dir): the file is either old or new, and
 * 0 only once the rename is on disk too (the journal's original must be
 * there before the first write it allows). */
int
write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	char tmp[PATH_MAX];
	const char *p = data;
	int fd, rc = 0;

	/* a new file of a random name (O_EXCL: never someone's file or
	 * symlink put there first), mode set before anything is written */
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
		return -errno;
	if (fchmod(fd, mode) < 0) {
		rc = -errno;
		goto fail;
	}
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto fail;
		}
		p += n;
		len -= (size_t)n;
	}
	if (fsync(fd) < 0) {
		rc = -errno;
		goto fail;
	}
	close(fd);
	fd = -1;
	if (rename(tmp, path) < 0) {
		rc = -errno;
		goto fail;
	}
	return sync_parent_dir(path);
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}

/* Read a whole file of at most max bytes; caller frees *out. 0 or -errno. */
int
read_file_bounded(const char *path, size_t max, char **out, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t tot = 0, cap;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (st.st_size > 0 && (size_t)st.st_size > max) {
		rc = -EFBIG;
		goto out;
	}
	/* the buffer grows with what is read (the size may change meanwhile) */
	cap = (size_t)st.st_size < 4096 ? 4096 : (size_t)st.st_size + 1;
	if (cap > max + 1)
		cap = max + 1;
	buf = xmalloc(cap);
	for (;;) {
		ssize_t n;

		if (tot + 1 == cap) {
			if (tot == max) {
				char c;

				if (read(fd, &c, 1) == 1)
					rc = -EFBIG;
				break;
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			buf = xrealloc(buf, cap);
		}
		n = read(fd, buf + tot, cap - 1 - tot);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		if (n == 0)
			break;
		tot += (size_t)n;
	}
	if (rc < 0)
		goto out;
	buf[tot] = '\0';
	*out = buf;
	buf = NULL;
	if (len)
		*len = tot;
out:
	free(buf);
	close(fd);
	return rc;
}

/* root "" or "/" means the real root. */
int
path_under_root(char *buf, size_t len, const char *root, const char *abs)
{
	size_t rl, sl, al = strlen(abs);

	if (root == NULL || root[0] == '\0' || strcmp(root, "/") == 0)
		root = "";
	rl = strlen(root);
	sl = rl > 0 && abs[0] != '/' && root[rl - 1] != '/';	/* a '/' between */
	if (rl + sl + al >= len)
		return -ENAMETOOLONG;
	memcpy(buf, root, rl);
	buf[rl] = '/';
	memcpy(buf + rl + sl, abs, al + 1);
	return 0;
}

char *
strtrim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	return 0;
}

const char *
path_base(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

void
path_dir(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		snprintf(dir, len, ".");
	else if (slash == path)
		snprintf(dir, len, "/");
	else
		snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

int
sock_keepalive(int fd, int idle, int intvl, int cnt)
{
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) < 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) < 0)
		return -1;
	return 0;
}

void
raise_nofile(size_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max &&
	    (want == 0 || rl.rlim_cur < want + 64)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static int spare_fd = -1;	/* fd_spare_reserve's, for accept_refuse_one */

void
fd_spare_reserve(void)
{
	pthread_mutex_lock(&spare_mu);
	if (spare_fd < 0)
		spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pthread_mutex_unlock(&spare_mu);
}

int
accept_refuse_one(int lfd)
{
	int c, rc = 0;

	pthread_mutex_lock(&spare_mu);
	if (spare_fd >= 0) {
		close(spare_fd);
		if ((c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
			close(c);
			rc = 1;
		}
		spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	pthread_mutex_unlock(&spare_mu);
	return rc;
}

/* $name read as strtol does, within min to max, else dflt (see util.h). */
long
env_number(const char *name, long min, long max, long dflt)
{
	const char *e = getenv(name);
	char *end;
	long v;

	if (e == NULL)
		return dflt;
	errno = 0;
	v = strtol(e, &end, 10);
	if (end == e || errno != 0 || v < min || v > max)
		return dflt;
	return v;
}
