/* blockdev driver: a device glob (sd*, nvme*n*, loop3) matched against the
 * names in /sys/block, optionally filtered by rotational=0|1, with a queue
 * attribute (scheduler, read_ahead_kb, nr_requests, max_sectors_kb, ...).
 * Targets are device names; devices without the attribute are skipped. */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune.h"

static int
bd_path(const Knob__Setting *s, const char *dev, char *buf, size_t len)
{
	const char *rel = blockdev_attr_path(s->attr);

	if (rel == NULL)
		return -EINVAL;
	if (snprintf(buf, len, "/sys/block/%s/%s", dev, rel) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static int
cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static int
bd_resolve(struct agent *a, const Knob__Setting *s, struct strvec *out, char *msg,
    size_t msglen)
{
	char dir[PATH_MAX], path[PATH_MAX], full[PATH_MAX], rot[16], m[TUNE_MSG_MAX];
	struct strvec names = { 0 };
	struct dirent *de;
	DIR *d;

	if (blockdev_attr_path(s->attr) == NULL) {
		snprintf(msg, msglen, "unknown blockdev attr %s", s->attr);
		return -EINVAL;
	}
	if (agent_path(a, dir, sizeof(dir), "/sys/block") < 0 || (d = opendir(dir)) == NULL) {
		snprintf(msg, msglen, "/sys/block: %s", strerror(errno));
		return -errno;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || fnmatch(s->key, de->d_name, 0) != 0)
			continue;
		strvec_push(&names, de->d_name);
	}
	closedir(d);
	if (names.n > 1)
		qsort(names.v, names.n, sizeof(*names.v), cmp_str);
	for (size_t i = 0; i < names.n; i++) {
		if (bd_path(s, names.v[i], path, sizeof(path)) < 0 ||
		    agent_path(a, full, sizeof(full), path) < 0 || access(full, F_OK) < 0)
			continue;
		if (s->match && strncmp(s->match, "rotational=", 11) == 0) {
			char rp[PATH_MAX];

			snprintf(rp, sizeof(rp), "/sys/block/%s/queue/rotational", names.v[i]);
			if (tune_read_path(a, rp, rot, sizeof(rot), m, sizeof(m)) < 0 ||
			    strcmp(strtrim(rot), s->match + 11) != 0)
				continue;
		}
		strvec_push(out, names.v[i]);
	}
	strvec_free(&names);
	return 0;
}

static int
bd_read(struct agent *a, const Knob__Setting *s, const char *target, char *buf, size_t len,
    char *msg, size_t msglen)
{
	char path[PATH_MAX];

	if (bd_path(s, target, path, sizeof(path)) < 0)
		return -EINVAL;
	return tune_read_path(a, path, buf, len, msg, msglen);
}

static int
bd_write(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	char path[PATH_MAX];

	if (bd_path(s, target, path, sizeof(path)) < 0)
		return -EINVAL;
	return tune_write_path(a, path, value, msg, msglen);
}

const struct tune_driver drv_blockdev = {
	.name = "blockdev",
	.resolve = bd_resolve,
	.read = bd_read,
	.normalise = tune_norm_default,
	.write = bd_write,
	.describe = tune_describe_default,
};
