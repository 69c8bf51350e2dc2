/* Running a command with a deadline: its stdout and stderr into bounded
 * buffers, its process group killed when the deadline passes.  The agent's
 * drivers (mmchconfig, mmdiag, lctl, lfs) and the controller's sweep
 * (scontrol) share it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cmd.h"
#include "util.h"

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
		if (strchr(argv[0], '/') != NULL)
			execve(argv[0], argv, environ);
		else
			execvp(argv[0], argv);
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
cmd_run(char *const argv[], int timeout_ms, char *out, size_t outlen, char *err,
    size_t errlen)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, status = 0, rc;
	uint64_t deadline = now_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	pid_t pid;

	if (outlen)
		out[0] = '\0';
	if (errlen)
		err[0] = '\0';
	if (strchr(argv[0], '/') != NULL && access(argv[0], X_OK) < 0)
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
