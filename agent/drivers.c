/* The driver table and helpers shared by the tuning drivers: globbing under
 * the sysroot, bounded sysfs/procfs reads and writes, and running external
 * commands (mmchconfig, mmdiag, lctl) with a timeout. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "log.h"
#include "tune.h"
#include "util.h"

extern char **environ;

static const struct tune_driver *const drivers[] = {
	&drv_sysfs, &drv_sysctl, &drv_blockdev, &drv_lustre, &drv_gpfs, &drv_nfsd, &drv_net,
};

const struct tune_driver *
tune_driver_find(const char *name)
{
	for (size_t i = 0; name && i < nitems(drivers); i++)
		if (strcmp(drivers[i]->name, name) == 0)
			return drivers[i];
	return NULL;
}

int
tune_norm_default(const Knob__Setting *s, const char *raw, char *out, size_t outlen,
    char *msg, size_t msglen)
{
	return norm_setting(s->driver, s->key, s->attr, raw, out, outlen, msg, msglen);
}

void
tune_describe_default(const Knob__Setting *s, const char *target, char *buf, size_t len)
{
	if (s->attr && *s->attr)
		snprintf(buf, len, "%s %s", target, s->attr);
	else
		snprintf(buf, len, "%s", target);
}

/* Glob below the sysroot; matches are pushed without the sysroot prefix. */
int
tune_glob(struct agent *a, const char *pattern, struct strvec *out)
{
	char full[PATH_MAX];
	size_t rl = strlen(a->sysroot);
	glob_t g;
	int r;

	if (agent_path(a, full, sizeof(full), pattern) < 0)
		return -ENAMETOOLONG;
	/* one name, opened to be read in this transaction: it exists */
	if (!tune_is_glob(full) && tune_fd_read(full) >= 0) {
		if (!strvec_contains(out, pattern))
			strvec_push(out, pattern);
		return 0;
	}
	r = tune_fd_glob(full, &g);
	if (r == GLOB_NOMATCH) {
		globfree(&g);
		return 0;
	}
	if (r != 0) {
		globfree(&g);
		return -EIO;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *p = g.gl_pathv[i];

		if (rl > 0 && strncmp(p, a->sysroot, rl) == 0)
			p += rl;
		if (!strvec_contains(out, p))
			strvec_push(out, p);
	}
	globfree(&g);
	return 0;
}

int
tune_read_path(struct agent *a, const char *path, char *buf, size_t len, char *msg,
    size_t msglen)
{
	char full[PATH_MAX];
	ssize_t n;

	if (agent_path(a, full, sizeof(full), path) < 0) {
		snprintf(msg, msglen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	if ((n = tune_fd_value(full, buf, len)) < 0)
		n = read_small_file(full, buf, len);
	if (n < 0) {
		snprintf(msg, msglen, "read %s: %s", path, strerror((int)-n));
		return (int)n;
	}
	return 0;
}

int
tune_write_path(struct agent *a, const char *path, const char *value, char *msg,
    size_t msglen)
{
	char full[PATH_MAX];
	int rc;

	if (agent_path(a, full, sizeof(full), path) < 0) {
		snprintf(msg, msglen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	if ((rc = tune_fd_write(full, value)) > 0)
		rc = write_small_file(full, value);
	if (rc < 0)
		snprintf(msg, msglen, "write %s: %s", path, strerror(-rc));
	return rc;
}

int
tune_read_default(struct agent *a, const Knob__Setting *s, const char *target, char *buf,
    size_t len, char *msg, size_t msglen)
{
	(void)s;
	return tune_read_path(a, target, buf, len, msg, msglen);
}

int
tune_write_default(struct agent *a, const Knob__Setting *s, const char *target,
    const char *value, char *msg, size_t msglen)
{
	(void)s;
	return tune_write_path(a, target, value, msg, msglen);
}

static int
cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

void
tune_strvec_sort(struct strvec *v)
{
	if (v->n > 1)
		qsort(v->v, v->n, sizeof(*v->v), cmp_str);
}

int
tune_is_glob(const char *key)
{
	return key != NULL && strpbrk(key, "*?[") != NULL;
}

int
tune_check_path(struct agent *a, const char *path, char *msg, size_t msglen)
{
	char full[PATH_MAX];
	struct stat st;
	int fd;

	if (agent_path(a, full, sizeof(full), path) < 0) {
		snprintf(msg, msglen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	fd = tune_fd_read(full);
	if (fd >= 0 ? fstat(fd, &st) < 0 : stat(full, &st) < 0) {
		snprintf(msg, msglen, "%s: %s on this node", path, strerror(errno));
		return -errno;
	}
	if ((st.st_mode & 0222) == 0) {
		snprintf(msg, msglen, "%s is read-only (mode %04o)", path,
		    (unsigned)(st.st_mode & 07777));
		return -EACCES;
	}
	/* the open file's inode when there is one: no second path walk */
	if ((fd < 0 || faccessat(fd, "", W_OK, AT_EMPTY_PATH) < 0) && access(full, W_OK) < 0) {
		snprintf(msg, msglen, "%s is not writable: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

int
tune_check_default(struct agent *a, const Knob__Setting *s, const char *target,
    const char *value, char *msg, size_t msglen)
{
	(void)s;
	(void)value;
	return tune_check_path(a, target, msg, msglen);
}

/* Append what is readable on fd to buf (bounded, excess dropped). 0 at EOF. */
static int
drain_fd(int fd, char *buf, size_t cap, size_t *have)
{
	char tmp[4096];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (n == 0)
		return 0;
	if (cap > 0 && *have < cap - 1) {
		size_t k = (size_t)n < cap - 1 - *have ? (size_t)n : cap - 1 - *have;

		memcpy(buf + *have, tmp, k);
		*have += k;
		buf[*have] = '\0';
	}
	return 1;
}

/* Past the deadline: kill the child's process group and reap the child.
 * 1 when it was killed, 0 while there is time left. */
static int
kill_at_deadline(pid_t pid, uint64_t deadline, int *status)
{
	if ((int64_t)(deadline - now_mono_ns()) > 0)
		return 0;
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	return 1;
}

/* fork/exec argv in a process group of its own, stdin /dev/null, stdout
 * and stderr on the write ends of po and pe.  The pid, or -errno. */
static pid_t
spawn_cmd(char *const argv[], const int po[2], const int pe[2])
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		child_signals_default();
		setpgid(0, 0);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		execve(argv[0], argv, environ);
		_exit(127);
	}
	return pid;
}

/* Read the child's stdout and stderr until both close (bounded buffers).
 * 0, or -ETIMEDOUT once the deadline killed it. */
static int
read_cmd(pid_t pid, uint64_t deadline, int fo, int fe, char *out, size_t outlen, char *err,
    size_t errlen, int *status)
{
	size_t ho = 0, he = 0;
	int open_o = 1, open_e = 1;

	while (open_o || open_e) {
		struct pollfd pfd[2];
		int64_t left = (int64_t)(deadline - now_mono_ns()) / 1000000;
		nfds_t np = 0;

		if (kill_at_deadline(pid, deadline, status))
			return -ETIMEDOUT;
		if (open_o)
			pfd[np++] = (struct pollfd){ .fd = fo, .events = POLLIN };
		if (open_e)
			pfd[np++] = (struct pollfd){ .fd = fe, .events = POLLIN };
		if (poll(pfd, np, (int)(left > 0 ? left : 1)) < 0 && errno != EINTR)
			break;
		for (nfds_t i = 0; i < np; i++) {
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (pfd[i].fd == fo && !drain_fd(fo, out, outlen, &ho))
				open_o = 0;
			else if (pfd[i].fd == fe && !drain_fd(fe, err, errlen, &he))
				open_e = 0;
		}
	}
	return 0;
}

/* Pipes closed: the child is exiting; wait for it, still bounded by the
 * deadline.  0, -ETIMEDOUT or -errno. */
static int
reap_cmd(pid_t pid, uint64_t deadline, int *status)
{
	for (;;) {
		pid_t w = waitpid(pid, status, WNOHANG);

		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -errno;
		if (kill_at_deadline(pid, deadline, status))
			return -ETIMEDOUT;
		usleep(2000);
	}
}

/* fork/exec argv with stdout and stderr on pipes; poll with a deadline and
 * kill the child's process group on timeout. */
int
tune_run_cmd(char *const argv[], int timeout_ms, char *out, size_t outlen, char *err,
    size_t errlen)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, status = 0, rc;
	uint64_t deadline = now_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	pid_t pid;

	if (outlen)
		out[0] = '\0';
	if (errlen)
		err[0] = '\0';
	if (access(argv[0], X_OK) < 0)
		return -errno;
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out;
	}
	if ((pid = spawn_cmd(argv, po, pe)) < 0) {
		rc = (int)pid;
		goto out;
	}
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	if ((rc = read_cmd(pid, deadline, po[0], pe[0], out, outlen, err, errlen, &status)) < 0 ||
	    (rc = reap_cmd(pid, deadline, &status)) < 0)
		goto out;
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (errlen)
		strtrim(err);
out:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return rc;
}
