/* The driver table and helpers shared by the tuning drivers: globbing under
 * the sysroot and bounded sysfs/procfs reads and writes (external commands
 * run through common/cmd.c). */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "log.h"
#include "tune.h"
#include "util.h"

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

int
tune_coupled_late(struct agent *a, const Knob__Setting *s, const char *target,
    const char *src, const char *src_attr)
{
	const struct journal *j = a->tune ? &a->tune->j : NULL;

	return j != NULL && (s->value == NULL || *s->value == '\0') &&
	    journal_find(j->orig, j->norig, s->driver, src, src_attr) >= 0 &&
	    journal_find(j->orig, j->norig, s->driver, target, s->attr) < 0;
}

int
tune_coupled_kept(struct agent *a, const Knob__Setting *s, const char *target)
{
	const struct journal *j = a->tune ? &a->tune->j : NULL;

	return j != NULL && journal_find(j->orig, j->norig, s->driver, target, s->attr) >= 0;
}

const char *
tune_key_in_play(struct agent *a, const char *driver, const char *target, const char *attr)
{
	const struct journal *j = a->tune ? &a->tune->j : NULL;

	if (tune_planned(driver, target, attr) != NULL)
		return "this apply writes it";
	if (j != NULL && journal_find(j->orig, j->norig, driver, target, attr) >= 0)
		return "knob journaled it, and a rollback writes it back";
	return NULL;
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


int
tune_file_default(const Knob__Setting *s, const char *target, char *buf, size_t len)
{
	(void)s;
	return snprintf(buf, len, "%s", target) < (int)len ? 0 : -1;
}
