/* Mount checks: present with its type and options (from the text of
 * /proc/self/mounts), then a probe in a child process: statfs (free space
 * and inodes), stat, and for writable mounts create + unlink of a scratch
 * file.  The child reports each step through a pipe; the agent thread only
 * polls that pipe.  A child that misses its deadline is left running (it may
 * sit in the kernel waiting for a dead server) and remembered: its mount is
 * hung, and until the child ends no other probe is started there, unless
 * another mount (another mount ID) is there now. */
#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include "health.h"
#include "log.h"
#include "normalize.h"
#include "util.h"

/* One step report of the probe child. */
struct prec {
	char step;		/* 'f' statfs, 's' stat, 'c' create, 'u' unlink */
	int err;		/* errno, 0 on success */
	uint64_t blocks, bavail, files, ffree;
};

static const struct {
	char step;
	const char *name;
} steps[] = {
	{ 'f', "statfs" }, { 's', "stat" }, { 'c', "create" }, { 'u', "unlink" },
};

/* Name of a reported step. */
static const char *
step_name(char step)
{
	for (size_t i = 0; i < nitems(steps); i++)
		if (steps[i].step == step)
			return steps[i].name;
	return "probe";
}

/* Name of the step after the last one reported (what the probe waits for). */
static const char *
next_step(char last, int writable)
{
	size_t n = writable ? nitems(steps) : 2;

	for (size_t i = 0; i < n; i++)
		if (steps[i].step == last)
			return i + 1 < n ? steps[i + 1].name : "exit";
	return steps[0].name;
}

/* Child side: only system calls, then _exit.  fd 3 is the report pipe. */
static void
probe_child(const char *path, const char *scratch, int writable)
{
	struct prec r;
	struct statfs sf;
	struct stat st;
	int fd;

	memset(&r, 0, sizeof(r));
	r.step = 'f';
	if (statfs(path, &sf) < 0)
		r.err = errno;
	else {
		r.blocks = sf.f_blocks;
		r.bavail = sf.f_bavail;
		r.files = sf.f_files;
		r.ffree = sf.f_ffree;
	}
	if (write(3, &r, sizeof(r)) < 0 || r.err)
		_exit(1);
	memset(&r, 0, sizeof(r));
	r.step = 's';
	r.err = stat(path, &st) < 0 ? errno : 0;
	if (write(3, &r, sizeof(r)) < 0 || r.err || !writable)
		_exit(r.err != 0);
	r.step = 'c';
	fd = open(scratch, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	r.err = fd < 0 ? errno : 0;
	if (fd >= 0 && (write(fd, "knob", 4) != 4 || close(fd) < 0))
		r.err = errno;
	if (write(3, &r, sizeof(r)) < 0 || fd < 0)
		_exit(1);
	r.step = 'u';
	r.err = unlink(scratch) < 0 ? errno : 0;
	(void)!write(3, &r, sizeof(r));
	_exit(r.err != 0);
}

/* Point fds 0-2 at /dev/null (closed when it cannot be opened). */
static void
null_stdio(void)
{
	int nul = open("/dev/null", O_RDWR);

	for (int fd = 0; fd <= 2; fd++)
		if (fd != nul && (nul < 0 || dup2(nul, fd) < 0))
			close(fd);
}

/* Fork the probe; *fd gets the read end of its pipe.  pid or -1. */
static pid_t
probe_start(const char *path, int writable, int *fd)
{
	char scratch[PATH_MAX];
	int p[2];
	pid_t pid;

	snprintf(scratch, sizeof(scratch), "%s/.knob-health.%ld.%llu", path, (long)getpid(),
	    (unsigned long long)(now_mono_ns() % 1000000007ull));
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		/* The child must not hold the agent's sockets open if it gets
		 * stuck: nor fds 0-2, which are the session under --stdio. */
		if (dup2(p[1], 3) < 0)
			_exit(1);
		null_stdio();
		close_range(4, ~0u, 0);
		probe_child(path, scratch, writable);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return -1;
	}
	*fd = p[0];
	return pid;
}

/* Read reports (room for one per step in recs) until the child closes
 * the pipe or the deadline passes.  Returns 1 when the child finished, 0
 * on timeout; *nrecs is the number of reports. */
static int
probe_wait(int fd, uint64_t deadline_ns, struct prec *recs, size_t *nrecs)
{
	for (;;) {
		uint64_t now = now_mono_ns();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct prec extra;	/* a report beyond the steps is read and dropped */
		int room = *nrecs < nitems(steps);
		ssize_t r;

		if (now >= deadline_ns)
			return 0;
		if (poll(&pfd, 1, (int)((deadline_ns - now) / 1000000ull) + 1) <= 0)
			continue;
		r = read(fd, room ? &recs[*nrecs] : &extra, sizeof(recs[0]));
		if (r == 0)
			return 1;
		if (r == (ssize_t)sizeof(recs[0]) && room)
			(*nrecs)++;
		else if (r < 0 && errno != EINTR)
			return 1;
	}
}

/* "2026-12-01T09:41:02Z" of a CLOCK_REALTIME time. */
void
health_fmt_time(uint64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A probe still stuck on path (hs->mu held); ended ones are reaped and
 * dropped. */
static struct hprobe *
stuck_find(struct health_state *hs, const char *path)
{
	struct hprobe **pp = &hs->stuck, *p;

	while ((p = *pp) != NULL) {
		int st;

		if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
			log_info("health: stuck probe of %s (pid %ld) ended", p->path, (long)p->pid);
			*pp = p->next;
			close(p->fd);
			free(p);
			continue;
		}
		if (!p->replaced && strcmp(p->path, path) == 0)
			return p;
		pp = &p->next;
	}
	return NULL;
}

/* The mount ID (/proc/self/mountinfo, under the sysroot) of what is
 * mounted at mp now, the last entry for it (mounts stack); -1 when none
 * or unreadable.  Reads the table only: nothing touches the mount. */
static long
mount_id(struct agent *a, const char *mp)
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	long id = -1;
	FILE *f;

	if (agent_path(a, path, sizeof(path), "/proc/self/mountinfo") < 0 ||
	    (f = fopen(path, "re")) == NULL)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		char *save = NULL, *idf = strtok_r(line, " ", &save), *dir = NULL;

		for (int i = 1; i <= 4 && idf; i++)	/* parent, MAJ:MIN, root, mount point */
			dir = strtok_r(NULL, " ", &save);
		if (idf && dir && strcmp(mount_unescape(dir), mp) == 0)
			id = strtol(idf, NULL, 10);
	}
	free(line);
	fclose(f);
	return id;
}

/* The probe stuck on mp (hs->mu held), unless the mount it waits on is no
 * longer there: another one (ID id) is mounted at mp since (the dead one
 * lazily unmounted, a new one mounted), which is probed afresh. */
static struct hprobe *
stuck_on(struct health_state *hs, const char *mp, long id)
{
	struct hprobe *p = stuck_find(hs, mp);

	if (p == NULL || id < 0 || p->mnt_id < 0 || id == p->mnt_id)
		return p;
	log_info("health: %s: another mount there now (mount ID %ld, the hung one's %ld); "
	    "probe pid %ld left waiting on the old one", mp, id, p->mnt_id, (long)p->pid);
	p->replaced = 1;
	return NULL;
}

/* Presence, type and options of mount point mp (m's path normalised) from
 * (sysroot) /proc/self/mounts.  The last entry for the path wins (mounts
 * stack).  0 when present and as expected. */
static int
mount_entry(struct agent *a, const Knob__MountExpect *m, const char *mp, struct hout *out)
{
	char path[PATH_MAX], buf[4096], opts[1024] = "", type[64] = "";
	struct mntent me, *e;
	int found = 0;
	FILE *f;

	if (agent_path(a, path, sizeof(path), "/proc/self/mounts") < 0 ||
	    (f = setmntent(path, "re")) == NULL) {
		hout_add(out, "mount", m->path, ST_FAIL, "cannot read the mount table");
		return -1;
	}
	while ((e = getmntent_r(f, &me, buf, sizeof(buf))) != NULL)
		if (strcmp(e->mnt_dir, mp) == 0) {
			found = 1;
			snprintf(type, sizeof(type), "%s", e->mnt_type);
			snprintf(opts, sizeof(opts), "%s", e->mnt_opts);
		}
	endmntent(f);
	if (!found) {
		hout_add(out, "mount", m->path, ST_FAIL, "not mounted");
		return -1;
	}
	if (m->fstype[0] && strcmp(m->fstype, type) != 0) {
		hout_add(out, "mount", m->path, ST_FAIL, "type %s, expected %s", type, m->fstype);
		return -1;
	}
	for (size_t i = 0; i < m->n_options; i++) {
		struct mntent o = { .mnt_opts = opts };

		if (hasmntopt(&o, m->options[i]) == NULL) {
			hout_add(out, "mount", m->path, ST_FAIL, "mounted %s, expected %s", opts,
			    m->options[i]);
			return -1;
		}
	}
	return 0;
}

/* Judge the finished probe's reports: errors, then free space/inodes. */
static void
probe_judge(const Knob__MountExpect *m, const struct prec *recs, size_t n, const char *type,
    struct hout *out)
{
	double fs_pct, in_pct;

	for (size_t i = 0; i < n; i++)
		if (recs[i].err) {
			hout_add(out, "mount", m->path, ST_FAIL, "%s failed: %s",
			    step_name(recs[i].step), strerror(recs[i].err));
			return;
		}
	if (n < (m->writable ? 4u : 2u)) {
		hout_add(out, "mount", m->path, ST_FAIL, "probe ended before %s",
		    next_step(n ? recs[n - 1].step : 0, m->writable));
		return;
	}
	hout_add(out, "mount", m->path, ST_OK, "%s, %s", type,
	    m->writable ? "stat, create and unlink answered" : "stat answered");
	fs_pct = recs[0].blocks ? 100.0 * (double)recs[0].bavail / (double)recs[0].blocks : 100;
	in_pct = recs[0].files ? 100.0 * (double)recs[0].ffree / (double)recs[0].files : 100;
	if (m->min_free_pct > 0 || m->min_free_inodes_pct > 0) {
		int bad = (m->min_free_pct > 0 && fs_pct < m->min_free_pct) ||
		    (m->min_free_inodes_pct > 0 && recs[0].files && in_pct < m->min_free_inodes_pct);

		hout_add(out, "space", m->path, bad ? ST_FAIL : ST_OK,
		    "%.1f%% space free (min %.0f%%), %.1f%% inodes free (min %.0f%%)", fs_pct,
		    m->min_free_pct, in_pct, m->min_free_inodes_pct);
	}
}

/* Type of the mount for messages ("" when unknown). */
static void
mount_type(struct agent *a, const char *mp, char *type, size_t len)
{
	char path[PATH_MAX], buf[4096];
	struct mntent me, *e;
	FILE *f;

	type[0] = '\0';
	if (agent_path(a, path, sizeof(path), "/proc/self/mounts") < 0 ||
	    (f = setmntent(path, "re")) == NULL)
		return;
	while ((e = getmntent_r(f, &me, buf, sizeof(buf))) != NULL)
		if (strcmp(e->mnt_dir, mp) == 0)
			snprintf(type, len, "%s", e->mnt_type);
	endmntent(f);
}

/* Probe mount point mp (m's path normalised) in a child, unless an earlier
 * probe is still stuck there. */
static void
mount_probe(struct agent *a, const Knob__MountExpect *m, const char *mp, struct hout *out)
{
	struct health_state *hs = a->health;
	uint32_t to = m->timeout_ms ? m->timeout_ms : HEALTH_MOUNT_TIMEOUT_MS;
	struct prec recs[nitems(steps)];
	char real[PATH_MAX], when[32], type[64];
	size_t n = 0;
	struct hprobe *p;
	uint64_t since = now_real_ns();
	long id = mount_id(a, mp);
	int fd, done;
	pid_t pid;

	if (agent_path(a, real, sizeof(real), mp) < 0) {
		hout_add(out, "mount", m->path, ST_FAIL, "bad path");
		return;
	}
	pthread_mutex_lock(&hs->mu);
	if ((p = stuck_on(hs, mp, id)) != NULL) {
		Knob__HealthCheck *c;

		health_fmt_time(p->since_ns, when, sizeof(when));
		c = hout_add(out, "mount", m->path, ST_HUNG, "no answer to %s (since %s)",
		    p->step, when);
		c->since_ns = p->since_ns;
		pthread_mutex_unlock(&hs->mu);
		return;
	}
	pthread_mutex_unlock(&hs->mu);
	mount_type(a, mp, type, sizeof(type));
	if ((pid = probe_start(real, m->writable, &fd)) < 0) {
		hout_add(out, "mount", m->path, ST_FAIL, "cannot start a probe: %s", strerror(errno));
		return;
	}
	done = probe_wait(fd, now_mono_ns() + to * 1000000ull, recs, &n);
	if (done) {
		int st;

		close(fd);
		waitpid(pid, &st, 0);
		probe_judge(m, recs, n, type, out);
		return;
	}
	p = xcalloc(1, sizeof(*p));
	snprintf(p->path, sizeof(p->path), "%s", mp);
	snprintf(p->step, sizeof(p->step), "%s", next_step(n ? recs[n - 1].step : 0, m->writable));
	p->pid = pid;
	p->fd = fd;
	p->since_ns = since;
	p->mnt_id = id;
	hout_add(out, "mount", m->path, ST_HUNG, "no answer to %s in %.1f s", p->step, to / 1000.0)
	    ->since_ns = since;
	log_warnx("health: %s: no answer to %s in %u ms; probe pid %ld left waiting", m->path,
	    p->step, to, (long)pid);
	pthread_mutex_lock(&hs->mu);
	p->next = hs->stuck;
	hs->stuck = p;
	pthread_mutex_unlock(&hs->mu);
}

/* One mount of the request.  Its path is looked up lexically normalised
 * (norm_mount_path: "/x/.." and "//x/./y" as the mount table spells
 * them, without touching the file system) and reported as requested. */
void
health_mount(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out)
{
	const Knob__MountExpect *m = req->mounts[idx];
	char mp[PATH_MAX];

	if (m->path[0] != '/') {
		hout_add(out, "mount", m->path, ST_FAIL, "not an absolute path");
		return;
	}
	if ((size_t)snprintf(mp, sizeof(mp), "%s", m->path) >= sizeof(mp)) {
		hout_add(out, "mount", m->path, ST_FAIL, "bad path");
		return;
	}
	norm_mount_path(mp);
	if (mount_entry(a, m, mp, out) < 0)
		return;
	mount_probe(a, m, mp, out);
}

void
health_mount_fini(struct health_state *hs)
{
	struct hprobe *p, *next;

	for (p = hs->stuck; p; p = p->next)
		kill(p->pid, SIGKILL);
	for (p = hs->stuck; p; p = next) {
		next = p->next;
		for (int i = 0; i < 200 && waitpid(p->pid, NULL, WNOHANG) == 0; i++)
			usleep(10000);
		close(p->fd);
		free(p);
	}
	hs->stuck = NULL;
}
