/* Small helpers shared by knobd and knobctl: allocation that cannot fail
 * silently, string vectors, clocks, bounded file reads, sysroot paths. */
#ifndef KNOB_UTIL_H
#define KNOB_UTIL_H

#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KNOB_VERSION "0.1.0"
#define KNOB_DEFAULT_PORT 7420
#define nitems(a) (sizeof(a) / sizeof((a)[0]))

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t sz);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* p with room for element n (n elements in use) of an array that grows at
 * its end and may shrink: the allocation doubles when n is 0 or a power of
 * two, so it always holds the next power of two at least n. */
void *xgrow(void *p, size_t n, size_t sz);
/* Copy src into dst[len] (truncated, NUL-terminated when len > 0), as
 * snprintf "%s" without the format machinery; strlen(src). */
size_t str_copy(char *dst, const char *src, size_t len);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* FNV-1a, 64 bits, of a NUL-terminated string (hash tables). */
uint64_t str_hash(const char *s);
void str_appendf(char **s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A growable vector of owned strings. */
struct strvec {
	char **v;
	size_t n, cap;
};
void strvec_push(struct strvec *sv, const char *s);		/* copies s */
void strvec_push_owned(struct strvec *sv, char *s);	/* takes s */
void strvec_free(struct strvec *sv);
int strvec_contains(const struct strvec *sv, const char *s);
/* Index of the first s in sv, -1 when absent. */
long strvec_index(const struct strvec *sv, const char *s);
/* Sort sv's strings (strcmp order). */
void strvec_sort(struct strvec *sv);
/* Is s in sv, sorted by strvec_sort?  Its place (or where it would go) in
 * *at. */
int strvec_sorted_find(const struct strvec *sv, const char *s, size_t *at);
/* Binary size for people: "4k", "1m", "16g", "4500": the largest unit of
 * kmgt that divides v. */
void size_fmt(char *buf, size_t len, uint64_t v);
/* v with a sign and prec decimals ("+0.012", "-1.500") into buf, buf;
 * a value that rounds to zero is "0.000", never "-0.000". */
const char *signed_fmt(char *buf, size_t len, double v, int prec);

uint64_t now_real_ns(void);	/* CLOCK_REALTIME */
uint64_t now_mono_ns(void);	/* CLOCK_MONOTONIC */

/* Read at most max-1 bytes of a (sysfs/proc) file into buf, NUL-terminated,
 * trailing newline stripped.  Returns length or -errno. */
ssize_t read_small_file(const char *path, char *buf, size_t max);
/* The same from an open fd, from offset 0 (a re-read of sysfs/procfs);
 * *raw (if not NULL) gets the bytes read, before the newline strip. */
ssize_t read_small_fd(int fd, char *buf, size_t max, size_t *raw);
/* Write s to an existing file (sysfs/proc style: one write). 0 or -errno. */
int write_small_file(const char *path, const char *s);
/* The same, the fd left open in *fdp (-1 when the open failed); trunc 0
 * leaves out O_TRUNC (s is known to cover what the file held). */
int write_small_openat(int dirfd, const char *path, const char *s, int trunc, int *fdp);
/* The same on an fd open for writing: one write at 0, then cut to its
 * length.  0 or -errno; 1 when the cut was refused. */
int write_small_fd(int fd, const char *s);
/* Write data to path atomically: tmp file, fsync, rename, fsync dir. 0/-errno. */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* In a forked child before exec: default signal actions, empty mask. */
void child_signals_default(void);
/* write_file_atomic of what fill(f, arg) writes on f (in memory first):
 * the file is whole or as it was.  A path that is a device or a FIFO
 * (/dev/null, /dev/stdout) is written through as it is, not replaced.
 * fill returns 0 or -1.  0 or -errno. */
int write_file_atomic_with(const char *path, mode_t mode, int (*fill)(FILE *f, void *arg),
    void *arg);
/* fsync the directory holding path (a rename or unlink there is on disk). */
int sync_parent_dir(const char *path);
/* Read a whole regular file up to max bytes; *out malloc'd and NUL-terminated. */
int read_file_bounded(const char *path, size_t max, char **out, size_t *len);

/* Requests completed so far (reads, writes) on the block device that holds
 * path, from its /sys/dev/block stat.  0, or -1 (no block device). */
int blockdev_requests(const char *path, long *reads, long *writes);
/* The same with the milliseconds those requests spent in the device's
 * queue and service (summed over requests in flight). */
struct blockdev_io {
	long rd, rd_ms, wr, wr_ms;
};
int blockdev_io(const char *path, struct blockdev_io *io);
/* The frame number of the page at p, from an open /proc/self/pagemap (0 if
 * unknown, -1 if unreadable), and the runs of contiguous frames under a
 * buffer (its scatter-gather segments; -1 if a frame is unknown). */
int64_t page_frame(int pm, const void *p);
int page_runs(int pm, const void *b, size_t len);

/* Join a root (sysroot, "/" or "" for none) and an absolute path into buf. */
int path_under_root(char *buf, size_t len, const char *root, const char *abs);

/* The last component of path (after its last '/'). */
const char *path_base(const char *path);
/* The directory of path into dir: ".", "/", or what comes before its
 * last '/' ("/r.html": "/"). */
void path_dir(const char *path, char *dir, size_t len);
/* Trim leading/trailing white space in place; returns s. */
char *strtrim(char *s);
/* $name as a number from min to max, else dflt (unset, not a number, out
 * of range: ignored, not clamped); leading digits count ("10d" is 10). */
long env_number(const char *name, long min, long max, long dflt);
int set_nonblock(int fd);

/* TCP keepalive on fd: first probe after idle s, then every intvl s, cnt
 * unanswered ones close it.  0 or -1. */
int sock_keepalive(int fd, int idle, int intvl, int cnt);
/* Raise the soft open-file limit to the hard one when it is below
 * want + 64 descriptors (want 0: always). */
void raise_nofile(size_t want);
/* Keep one descriptor (/dev/null) in reserve, once per process, for
 * accept_refuse_one; call it before serving. */
void fd_spare_reserve(void);
/* accept(2) on listener lfd failed with EMFILE or ENFILE: the waiting
 * connection would keep a level-triggered listener readable and its loop
 * spinning.  Take that connection with the spare descriptor, close it and
 * take the spare back.  1 when one was refused; 0 when none was waiting
 * or there is no spare.  Thread-safe. */
int accept_refuse_one(int lfd);

#endif
