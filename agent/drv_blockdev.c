/* blockdev driver: a device glob (sd*, nvme*n*, loop3) matched against the
 * names in /sys/block, optionally filtered by rotational=0|1, with a queue
 * attribute (scheduler, read_ahead_kb, nr_requests, max_sectors_kb, ...).
 * Targets are device names; devices without the attribute are skipped. */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

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

/* The names in /sys/block that match pattern.  0, or -1 with errno and msg. */
static int
bd_list(struct agent *a, const char *pattern, struct strvec *names, char *msg, size_t msglen)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (agent_path(a, dir, sizeof(dir), "/sys/block") < 0 || (d = opendir(dir)) == NULL) {
		snprintf(msg, msglen, "/sys/block: %s", strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || fnmatch(pattern, de->d_name, 0) != 0)
			continue;
		strvec_push(names, de->d_name);
	}
	closedir(d);
	return 0;
}

/* The devices a setting names (a name or a pattern), those with its attr
 * (and the rotational= match) only, sorted. */
static int
bd_resolve(struct agent *a, const Knob__Setting *s, struct strvec *out, char *msg,
    size_t msglen)
{
	char path[PATH_MAX], full[PATH_MAX], rot[16], m[TUNE_MSG_MAX];
	struct strvec names = { 0 };

	if (blockdev_attr_path(s->attr) == NULL) {
		snprintf(msg, msglen, "unknown blockdev attr %s", s->attr);
		return -EINVAL;
	}
	if (!tune_is_glob(s->key) && s->key[0] != '.' && s->key[0] != '\0' &&
	    strchr(s->key, '/') == NULL)
		strvec_push(&names, s->key);	/* one name: its attr must exist, below */
	else if (bd_list(a, s->key, &names, msg, msglen) < 0)
		return -errno;
	strvec_sort(&names);
	for (size_t i = 0; i < names.n; i++) {
		if (bd_path(s, names.v[i], path, sizeof(path)) < 0 ||
		    agent_path(a, full, sizeof(full), path) < 0 || !tune_fd_exists(full))
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

/* ------------------------------------------------------------ iosched */
/* A scheduler write replaces queue/iosched/ with the new elevator's
 * files at their defaults.  No profile sets them; the driver journals
 * them as one journal-only attribute, "iosched", beside the scheduler:
 * "ELEVATOR: name=value ..." (the writable files, by name; "none:" for
 * a device without an elevator), restored after the scheduler and
 * nr_requests (which resets mq-deadline's async_depth), only while the
 * device has that elevator again. */

/* The elevator dev has now ("none" when none) into buf.  0 or -errno
 * with msg. */
static int
bd_elevator(struct agent *a, const char *dev, char *buf, size_t len, char *msg,
    size_t msglen)
{
	char path[PATH_MAX], raw[512], *o, *c;
	int rc;

	snprintf(path, sizeof(path), "/sys/block/%s/queue/scheduler", dev);
	if ((rc = tune_read_path(a, path, raw, sizeof(raw), msg, msglen)) < 0)
		return rc;
	if ((o = strchr(raw, '[')) != NULL && (c = strchr(o, ']')) != NULL) {
		*c = '\0';
		snprintf(buf, len, "%s", o + 1);
	} else
		snprintf(buf, len, "%s", strtrim(raw));
	return 0;
}

/* An iosched file name a journaled value may name: one plain component. */
static int
bd_iosched_name_ok(const char *name)
{
	return name[0] != '\0' && name[0] != '.' && strchr(name, '/') == NULL;
}

/* SYSROOT/sys/block/DEV/queue/iosched[/NAME] into full.  0 or -1. */
static int
bd_iosched_full(struct agent *a, const char *dev, const char *name, char *full, size_t len)
{
	char rel[PATH_MAX];

	if (snprintf(rel, sizeof(rel), "/sys/block/%s/queue/iosched%s%s", dev,
	    name ? "/" : "", name ? name : "") >= (int)sizeof(rel))
		return -1;
	return agent_path(a, full, len, rel);
}

static int
bd_iosched_filter(const struct dirent *de)
{
	return bd_iosched_name_ok(de->d_name);
}

/* Append " NAME=VALUE" of dev's iosched file name to buf at *o, when it
 * is a writable regular file with a one-word value.  0, or -E2BIG with
 * msg. */
static int
bd_iosched_append(struct agent *a, const char *dev, const char *name, char *buf, size_t len,
    size_t *o, char *msg, size_t msglen)
{
	char full[PATH_MAX], v[256];
	struct stat st;

	if (bd_iosched_full(a, dev, name, full, sizeof(full)) < 0 || stat(full, &st) < 0 ||
	    !S_ISREG(st.st_mode) || (st.st_mode & 0222) == 0 ||
	    read_small_file(full, v, sizeof(v)) < 0 || strpbrk(strtrim(v), " \t") != NULL)
		return 0;
	if (*o >= len || (*o += (size_t)snprintf(buf + *o, len - *o, " %s=%s", name, v)) >= len) {
		snprintf(msg, msglen, "%s: too many iosched tunables", dev);
		return -E2BIG;
	}
	return 0;
}

/* The snapshot of dev's elevator tunables into buf (see above).  Read
 * around the transaction's fd cache: every elevator switch makes new
 * files.  0 or -errno with msg. */
static int
bd_iosched_read(struct agent *a, const char *dev, char *buf, size_t len, char *msg,
    size_t msglen)
{
	char elev[64], dir[PATH_MAX];
	struct dirent **ents = NULL;
	size_t o;
	int n, rc;

	if ((rc = bd_elevator(a, dev, elev, sizeof(elev), msg, msglen)) < 0)
		return rc;
	o = (size_t)snprintf(buf, len, "%s:", elev);
	if (bd_iosched_full(a, dev, NULL, dir, sizeof(dir)) < 0 ||
	    (n = scandir(dir, &ents, bd_iosched_filter, alphasort)) < 0)
		return 0;	/* no elevator, no files */
	for (int i = 0; i < n; i++) {
		if (rc == 0)
			rc = bd_iosched_append(a, dev, ents[i]->d_name, buf, len, &o, msg, msglen);
		free(ents[i]);
	}
	free(ents);
	return rc;
}

/* Write one name=value of a snapshot to dev when it differs.  0 or
 * -errno with msg. */
static int
bd_iosched_put(struct agent *a, const char *dev, char *tok, char *msg, size_t msglen)
{
	char full[PATH_MAX], v[256], *eq = strchr(tok, '=');
	int rc;

	if (eq == NULL || (*eq = '\0', !bd_iosched_name_ok(tok)) ||
	    bd_iosched_full(a, dev, tok, full, sizeof(full)) < 0) {
		snprintf(msg, msglen, "%s iosched: bad entry '%s'", dev, tok);
		return -EINVAL;
	}
	if (read_small_file(full, v, sizeof(v)) >= 0 && strcmp(strtrim(v), eq + 1) == 0)
		return 0;
	if ((rc = write_small_file(full, eq + 1)) < 0)
		snprintf(msg, msglen, "write /sys/block/%s/queue/iosched/%s: %s", dev, tok,
		    strerror(-rc));
	return rc;
}

/* Put dev's elevator tunables back from a snapshot: only while dev has
 * the elevator they belong to (the scheduler, written before them, is
 * back), each file that differs.  0 or -errno with msg (the first
 * failure; the other files are still written). */
static int
bd_iosched_write(struct agent *a, const char *dev, const char *value, char *msg,
    size_t msglen)
{
	char elev[64], copy[NORM_VALUE_MAX], m[TUNE_MSG_MAX], *save = NULL, *colon;
	int rc = 0, r;

	snprintf(copy, sizeof(copy), "%s", value);
	if ((colon = strchr(copy, ':')) == NULL) {
		snprintf(msg, msglen, "%s iosched: bad value '%s'", dev, value);
		return -EINVAL;
	}
	*colon = '\0';
	if ((r = bd_elevator(a, dev, elev, sizeof(elev), msg, msglen)) < 0)
		return r;
	if (strcmp(elev, copy) != 0) {
		snprintf(msg, msglen, "%s iosched: the %s tunables are not written: its "
		    "scheduler is %s now", dev, copy, elev);
		return -ENOENT;
	}
	for (char *t = strtok_r(colon + 1, " ", &save); t; t = strtok_r(NULL, " ", &save))
		if ((r = bd_iosched_put(a, dev, t, m, sizeof(m))) < 0 && rc == 0) {
			rc = r;
			snprintf(msg, msglen, "%s", m);
		}
	return rc;
}

static int
bd_read(struct agent *a, const Knob__Setting *s, const char *target, char *buf, size_t len,
    char *msg, size_t msglen)
{
	char path[PATH_MAX];

	if (strcmp(s->attr, "iosched") == 0)
		return bd_iosched_read(a, target, buf, len, msg, msglen);
	if (bd_path(s, target, path, sizeof(path)) < 0)
		return -EINVAL;
	return tune_read_path(a, path, buf, len, msg, msglen);
}

static int
bd_write(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	char path[PATH_MAX];

	if (strcmp(s->attr, "iosched") == 0)
		return bd_iosched_write(a, target, value, msg, msglen);
	if (bd_path(s, target, path, sizeof(path)) < 0)
		return -EINVAL;
	return tune_write_path(a, path, value, msg, msglen);
}

/* Write order within one device, and what each write moves.  The
 * scheduler first (writing it resets nr_requests and replaces the iosched/
 * attributes), then nr_requests (which resets mq-deadline's async_depth),
 * then iosched (the journal-only snapshot, above), then the attributes the
 * kernel keeps as queue limits, read_ahead_kb last.  On 6.x kernels that
 * store them through queue_limits_commit_update, storing any limit
 * (max_sectors_kb, add_random, rotational, and those that fall to "*":
 * iostats, stable_writes, write_cache, discard_max_bytes, ...) re-applies
 * the limits to the bdi, which raises read_ahead_kb to max(itself,
 * 2 * io_opt, 128 KiB), io_opt being max_sectors_kb on a rotational device
 * that reports none.  It never lowers it: only a later read_ahead_kb write
 * brings a small original back.  Found by experiment on 6.18 with a loop
 * device: those attributes raise it; the scheduler, iosched/, nr_requests,
 * nomerges and rq_affinity (elevator state and queue flags, not limits)
 * do not.  An attribute not named here is taken as a limit. */
static const struct bd_rank {
	const char *attr;		/* fnmatch(3) pattern: first match wins */
	int rank;
	int ranged;			/* bd_check_range knows its bounds */
	const char *coupled[3];		/* what writing attr moves */
} bd_ranks[] = {
	{ "scheduler", 0, 0, { "nr_requests", "iosched", NULL } },
	{ "nr_requests", 1, 1, { NULL } },
	{ "iosched", 2, 0, { NULL } },
	{ "max_sectors_kb", 3, 1, { "read_ahead_kb", NULL } },
	{ "nomerges", 4, 0, { NULL } },
	{ "rq_affinity", 4, 0, { NULL } },
	{ "read_ahead_kb", 5, 1, { NULL } },
	{ "*", 4, 0, { "read_ahead_kb", NULL } },
};

static const struct bd_rank *
bd_rank_of(const char *attr)
{
	for (size_t i = 0; i < nitems(bd_ranks); i++)
		if (fnmatch(bd_ranks[i].attr, attr, 0) == 0)
			return &bd_ranks[i];
	return NULL;
}

static int
bd_rank(const Knob__Setting *s)
{
	const struct bd_rank *r = bd_rank_of(s->attr);

	return r ? r->rank : 4;
}

static const char *const *
bd_coupled(const Knob__Setting *s)
{
	const struct bd_rank *r = bd_rank_of(s->attr);

	return r && r->coupled[0] ? r->coupled : NULL;
}

/* The file of dev's attr (none for the journal-only iosched). */
static int
bd_file(const Knob__Setting *s, const char *target, char *buf, size_t len)
{
	return bd_path(s, target, buf, len) < 0 ? -1 : 0;
}

/* queue/ATTR of dev as an unsigned number; -1 when unreadable. */
static long
bd_number(struct agent *a, const char *dev, const char *attr)
{
	char path[PATH_MAX], buf[64], m[TUNE_MSG_MAX], *end;
	long v;

	snprintf(path, sizeof(path), "/sys/block/%s/queue/%s", dev, attr);
	if (tune_read_path(a, path, buf, sizeof(buf), m, sizeof(m)) < 0)
		return -1;
	v = strtol(buf, &end, 10);
	return end == buf ? -1 : v;
}

/* The elevators mainline Linux can build as modules. */
static const char *const bd_sched_modules[] = { "mq-deadline", "kyber", "bfq" };

/* With modules.dep out of sight: whether name is an elevator a write may
 * load, that is, the kernel is modular (SYSROOT/proc/modules exists) and
 * name is one mainline builds as a module.  The shipped unit's
 * ProtectKernelModules= hides /usr/lib/modules from knobd, while the
 * kernel's own request_module at the write still loads the module. */
static int
bd_sched_module_hidden(struct agent *a, const char *name)
{
	char path[PATH_MAX];

	if (agent_path(a, path, sizeof(path), "/proc/modules") < 0 || access(path, F_OK) < 0)
		return 0;
	for (size_t i = 0; i < nitems(bd_sched_modules); i++)
		if (strcmp(name, bd_sched_modules[i]) == 0)
			return 1;
	return 0;
}

/* Whether the running kernel has scheduler name as a module that is not
 * loaded yet (SYSROOT/lib/modules/RELEASE/modules.dep names
 * block/NAME-iosched.ko or block/NAME.ko; without a readable modules.dep,
 * bd_sched_module_hidden): a write loads it, so it is not a failure that
 * it is not offered yet. */
static int
bd_sched_module(struct agent *a, const char *name)
{
	char rel[PATH_MAX], path[PATH_MAX], pat[2][96], *dep = NULL;
	struct utsname u;
	size_t len;
	int hit = 0;

	if (uname(&u) < 0)
		return 0;
	snprintf(rel, sizeof(rel), "/lib/modules/%s/modules.dep", u.release);
	if (agent_path(a, path, sizeof(path), rel) < 0 ||
	    read_file_bounded(path, 16u << 20, &dep, &len) < 0)
		return bd_sched_module_hidden(a, name);
	snprintf(pat[0], sizeof(pat[0]), "/block/%s-iosched.ko", name);
	snprintf(pat[1], sizeof(pat[1]), "/block/%s.ko", name);
	hit = strstr(dep, pat[0]) != NULL || strstr(dep, pat[1]) != NULL;
	free(dep);
	return hit;
}

/* Would-fail: a scheduler the device does not offer (and that is not a
 * module the write would load). */
static int
bd_check_scheduler(struct agent *a, const char *dev, const char *value, char *msg,
    size_t msglen)
{
	char path[PATH_MAX], raw[512], m[TUNE_MSG_MAX], *save = NULL;
	const char *succ;

	snprintf(path, sizeof(path), "/sys/block/%s/queue/scheduler", dev);
	if (tune_read_path(a, path, raw, sizeof(raw), m, sizeof(m)) < 0)
		return 0;
	char offers[512];
	snprintf(offers, sizeof(offers), "%s", raw);
	for (char *t = strtok_r(raw, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		size_t l = strlen(t);

		if (t[0] == '[' && l > 1 && t[l - 1] == ']') {
			t[l - 1] = '\0';
			t++;
		}
		if (strcmp(t, value) == 0)
			return 0;
	}
	if (bd_sched_module(a, value))
		return 0;
	succ = value_successor("blockdev", "scheduler", value);
	snprintf(msg, msglen, "%s does not offer scheduler %s (offers: %s)%s%s%s", dev, value,
	    strtrim(offers), succ ? ": it is the single-queue name the kernel dropped in 5.0; "
	    "the blk-mq one is " : "", succ ? succ : "", succ ? ", name it instead" : "");
	return -EINVAL;
}

/* Would-fail: a max_sectors_kb of v that the kernel rounds down to a
 * multiple of the logical block size (a 4 KiB-sector disk, losetup -b
 * 4096): it would read back as another value. */
static int
bd_check_lbs(struct agent *a, const char *dev, long v, char *msg, size_t msglen)
{
	long lbs_kb = bd_number(a, dev, "logical_block_size") / 1024;

	if (lbs_kb <= 1 || v % lbs_kb == 0)
		return 0;
	snprintf(msg, msglen, "%s max_sectors_kb is kept in multiples of its logical block "
	    "size (%ld KiB): %ld would read back as %ld", dev, lbs_kb, v, v - v % lbs_kb);
	return -EINVAL;
}

/* The deepest nr_requests blk-mq takes with an elevator (MAX_SCHED_RQ,
 * 16 * BLKDEV_DEFAULT_RQ). */
#define BD_MAX_SCHED_RQ 2048

/* dev's hardware queue depth: the fewest tags of its hardware queues
 * (SYSROOT/sys/block/DEV/mq/N/nr_tags, the tag set's depth), or -1 when
 * none can be read. */
static long
bd_hw_depth(struct agent *a, const char *dev)
{
	char rel[PATH_MAX], full[PATH_MAX], v[32], m[TUNE_MSG_MAX], *end;
	struct dirent *de;
	long depth = -1, n;
	DIR *d;

	snprintf(rel, sizeof(rel), "/sys/block/%s/mq", dev);
	if (agent_path(a, full, sizeof(full), rel) < 0 || (d = opendir(full)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(full, sizeof(full), "%s/%s/nr_tags", rel, de->d_name);
		if (tune_read_path(a, full, v, sizeof(v), m, sizeof(m)) < 0 ||
		    (n = strtol(v, &end, 10)) <= 0 || end == v)
			continue;
		depth = depth < 0 || n < depth ? n : depth;
	}
	closedir(d);
	return depth;
}

/* Would-fail: an nr_requests of v above what the kernel takes under the
 * elevator dev has when it is written: the one this transaction writes
 * first (tune_planned), else the one it has now.  Without an elevator
 * (none) nr_requests is the tag set's depth and cannot exceed it
 * (bd_hw_depth); with one it sizes the scheduler's own tags, up to
 * BD_MAX_SCHED_RQ.  Above: EINVAL (6.18, blk-sysfs.c; earlier kernels
 * the same through blk_mq_tag_update_depth). */
static int
bd_check_depth(struct agent *a, const char *dev, long v, char *msg, size_t msglen)
{
	const char *next = tune_planned("blockdev", dev, "scheduler");
	char elev[64], m[TUNE_MSG_MAX];
	long limit;

	if (next != NULL)
		snprintf(elev, sizeof(elev), "%s", next);
	else if (bd_elevator(a, dev, elev, sizeof(elev), m, sizeof(m)) < 0)
		return 0;
	limit = strcmp(elev, "none") == 0 ? bd_hw_depth(a, dev) : BD_MAX_SCHED_RQ;
	if (limit < 0 || v <= limit)
		return 0;
	if (strcmp(elev, "none") == 0)
		snprintf(msg, msglen, "%s nr_requests %ld is above its hardware queue depth %ld "
		    "(mq/*/nr_tags), the limit with scheduler none%s: the kernel refuses it",
		    dev, v, limit, next ? " (which this apply sets)" : "");
	else
		snprintf(msg, msglen, "%s nr_requests %ld is above %d, the limit with scheduler "
		    "%s%s: the kernel refuses it", dev, v, BD_MAX_SCHED_RQ, elev,
		    next ? " (which this apply sets)" : "");
	return -EINVAL;
}

/* Would-fail: values outside what the kernel documents for the attribute
 * (they are refused, or read back as something else). */
static int
bd_check_range(struct agent *a, const char *dev, const char *attr, const char *value,
    char *msg, size_t msglen)
{
	long page_kb = sysconf(_SC_PAGESIZE) / 1024, v, hw;
	char *end;

	v = strtol(value, &end, 10);
	if (end == value || *end != '\0' || v < 0) {
		snprintf(msg, msglen, "%s %s must be a non-negative integer, not '%s'", dev, attr,
		    value);
		return -EINVAL;
	}
	if (strcmp(attr, "nr_requests") == 0 && v < 4) {
		snprintf(msg, msglen, "%s nr_requests %ld is below the kernel's minimum of 4 "
		    "(BLKDEV_MIN_RQ)", dev, v);
		return -EINVAL;
	}
	if (strcmp(attr, "nr_requests") == 0)
		return bd_check_depth(a, dev, v, msg, msglen);
	if (strcmp(attr, "read_ahead_kb") == 0 && page_kb > 0 && v % page_kb != 0) {
		snprintf(msg, msglen, "%s read_ahead_kb is kept in %ld KiB pages: %ld would read "
		    "back as %ld", dev, page_kb, v, v - v % page_kb);
		return -EINVAL;
	}
	if (strcmp(attr, "max_sectors_kb") == 0) {
		hw = bd_number(a, dev, "max_hw_sectors_kb");
		if ((hw >= 0 && v > hw) || v < page_kb) {
			snprintf(msg, msglen, "%s max_sectors_kb %ld is outside %ld..%ld "
			    "(page size .. max_hw_sectors_kb)", dev, v, page_kb, hw);
			return -EINVAL;
		}
		return bd_check_lbs(a, dev, v, msg, msglen);
	}
	return 0;
}

static int
bd_check(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	const struct bd_rank *r;
	char path[PATH_MAX];
	int rc;

	if (bd_path(s, target, path, sizeof(path)) < 0)
		return 0;
	if ((rc = tune_check_path(a, path, msg, msglen)) < 0)
		return rc;
	if (strcmp(s->attr, "scheduler") == 0)
		return bd_check_scheduler(a, target, value, msg, msglen);
	r = bd_rank_of(s->attr);
	return r && r->ranged ? bd_check_range(a, target, s->attr, value, msg, msglen) : 0;
}

/* ------------------------------------------------------------ protected */
/* Whole-disk name of the block device whose sysfs directory is dir (a
 * partition's parent), appended to out with why. */
static void
push_dev(struct agent *a, const char *dir, const char *why, struct strvec *out,
    struct strvec *whys, int depth);

/* The device with sysroot-relative sysfs link rel (/sys/dev/block/M:m or
 * /sys/class/block/NAME).  0, or -1 when rel does not resolve. */
static int
push_link(struct agent *a, const char *rel, const char *why, struct strvec *out,
    struct strvec *whys, int depth)
{
	char full[PATH_MAX], real[PATH_MAX];

	if (agent_path(a, full, sizeof(full), rel) < 0 || realpath(full, real) == NULL)
		return -1;
	push_dev(a, real, why, out, whys, depth);
	return 0;
}

static void
push_dev(struct agent *a, const char *dir, const char *why, struct strvec *out,
    struct strvec *whys, int depth)
{
	char p[PATH_MAX + 16], d[PATH_MAX], name[256], rel[PATH_MAX];
	struct dirent *de;
	DIR *sl;

	if (depth > 8)
		return;
	snprintf(p, sizeof(p), "%s/partition", dir);
	snprintf(d, sizeof(d), "%s", dir);
	/* a partition's disk is its parent directory */
	snprintf(name, sizeof(name), "%s", basename(access(p, F_OK) == 0 ? dirname(d) : d));
	if (!strvec_contains(out, name)) {
		strvec_push(out, name);
		strvec_push(whys, why);
	}
	/* what it sits on (dm, md): those hold the same data */
	snprintf(rel, sizeof(rel), "/sys/block/%s/slaves", name);
	if (agent_path(a, p, sizeof(p), rel) < 0 || (sl = opendir(p)) == NULL)
		return;
	while ((de = readdir(sl)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(rel, sizeof(rel), "/sys/class/block/%s", de->d_name);
		push_link(a, rel, why, out, whys, depth + 1);
	}
	closedir(sl);
}

/* Every device of the btrfs file system that has device name (the
 * entries of SYSROOT/sys/fs/btrfs/FSID/devices, links to the devices'
 * sysfs directories): the data of a multi-device btrfs is on all of
 * them. */
static void
push_btrfs(struct agent *a, const char *name, const char *why, struct strvec *out,
    struct strvec *whys)
{
	char pat[PATH_MAX], rel[PATH_MAX];
	glob_t g, d;

	snprintf(rel, sizeof(rel), "/sys/fs/btrfs/*/devices/%s", name);
	if (agent_path(a, pat, sizeof(pat), rel) < 0)
		return;
	if (glob(pat, 0, NULL, &g) != 0) {
		globfree(&g);
		return;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		snprintf(pat, sizeof(pat), "%s/*", dirname(g.gl_pathv[i]));
		if (glob(pat, 0, NULL, &d) == 0)
			for (size_t k = 0; k < d.gl_pathc; k++) {
				char real[PATH_MAX];

				if (realpath(d.gl_pathv[k], real) != NULL)
					push_dev(a, real, why, out, whys, 1);
			}
		globfree(&d);
	}
	globfree(&g);
}

/* Whether udev database file path (SYSROOT/run/udev/data/bMAJ:MIN)
 * records a ZFS member of pool: udev's blkid builtin writes
 * E:ID_FS_TYPE=zfs_member and E:ID_FS_LABEL=POOL (a pool name has only
 * characters udev keeps as they are). */
static int
udev_zfs_member(const char *path, const char *pool)
{
	char buf[16384], label[300];
	ssize_t n = read_small_file(path, buf + 1, sizeof(buf) - 2);

	if (n <= 0)
		return 0;
	buf[0] = '\n';	/* every line, the first and the last too, between newlines */
	memcpy(buf + 1 + n, "\n", 2);
	snprintf(label, sizeof(label), "\nE:ID_FS_LABEL=%s\n", pool);
	return strstr(buf, "\nE:ID_FS_TYPE=zfs_member\n") != NULL && strstr(buf, label) != NULL;
}

/* Every device of ZFS pool of dataset src (POOL/...): the block devices
 * the udev database (SYSROOT/run/udev/data) records as members of POOL.
 * ZFS puts its MAJ:MIN on no device, and sysfs lists no pool's vdevs. */
static void
push_zpool(struct agent *a, const char *src, const char *why, struct strvec *out,
    struct strvec *whys)
{
	char pool[256], dir[PATH_MAX], path[PATH_MAX + 300], rel[300];
	struct dirent *de;
	DIR *d;

	snprintf(pool, sizeof(pool), "%.*s", (int)strcspn(src, "/"), src);
	if (agent_path(a, dir, sizeof(dir), "/run/udev/data") < 0 || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] != 'b' || strchr(de->d_name, ':') == NULL)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (!udev_zfs_member(path, pool))
			continue;
		snprintf(rel, sizeof(rel), "/sys/dev/block/%.250s", de->d_name + 1);
		push_link(a, rel, why, out, whys, 0);
	}
	closedir(d);
}

/* The devices a mountinfo line's source names (the field after " - FSTYPE
 * "): each /dev path (bcachefs joins several with ':') resolved under
 * the sysroot (/dev/mapper/X is a link to dm-N) and found in
 * /sys/class/block, and for btrfs the other devices of the file system;
 * for a ZFS dataset (POOL/...), the pool's devices (push_zpool).  For
 * the file systems whose MAJ:MIN is anonymous (btrfs, bcachefs, zfs: no
 * /sys/dev/block/0:N). */
static void
push_source(struct agent *a, const char *line, const char *why, struct strvec *out,
    struct strvec *whys)
{
	char fstype[64], src[1024], full[PATH_MAX], real[PATH_MAX], rel[PATH_MAX], *save = NULL;
	const char *sep = strstr(line, " - ");

	if (sep == NULL || sscanf(sep + 3, "%63s %1023s", fstype, src) != 2)
		return;
	if (strcmp(fstype, "zfs") == 0) {
		push_zpool(a, src, why, out, whys);
		return;
	}
	for (char *d = strtok_r(src, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		const char *name;

		if (strncmp(d, "/dev/", 5) != 0)
			continue;
		name = agent_path(a, full, sizeof(full), d) == 0 && realpath(full, real) != NULL ?
		    basename(real) : basename(d);
		snprintf(rel, sizeof(rel), "/sys/class/block/%s", name);
		push_link(a, rel, why, out, whys, 0);
		if (strcmp(fstype, "btrfs") == 0)
			push_btrfs(a, name, why, out, whys);
	}
}

/* The device behind the mountinfo line of a file system: its MAJ:MIN in
 * /sys/dev/block, else its source (push_source). */
static void
push_mount(struct agent *a, const char *line, const char *majmin, const char *why,
    struct strvec *out, struct strvec *whys)
{
	char rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "/sys/dev/block/%s", majmin);
	if (push_link(a, rel, why, out, whys, 0) < 0)
		push_source(a, line, why, out, whys);
}

/* The devices behind the file system whose MAJ:MIN is majmin (a swap
 * file's), from SYSROOT/proc/self/mountinfo: its device, or for an
 * anonymous one its source. */
static void
push_fs_of(struct agent *a, const char *majmin, const char *why, struct strvec *out,
    struct strvec *whys)
{
	char path[PATH_MAX], line[4096], mm[64];
	FILE *f = NULL;
	int found = 0;

	if (agent_path(a, path, sizeof(path), "/proc/self/mountinfo") == 0 &&
	    (f = fopen(path, "re")) != NULL) {
		while (!found && fgets(line, sizeof(line), f))
			if (sscanf(line, "%*s %*s %63s", mm) == 1 && strcmp(mm, majmin) == 0) {
				push_mount(a, line, majmin, why, out, whys);
				found = 1;
			}
		fclose(f);
	}
	if (!found) {
		snprintf(path, sizeof(path), "/sys/dev/block/%s", majmin);
		push_link(a, path, why, out, whys, 0);
	}
}

/* Devices behind /, /boot (SYSROOT/proc/self/mountinfo) and active swap
 * (SYSROOT/proc/swaps). */
static void
protected_devs(struct agent *a, struct strvec *out, struct strvec *whys)
{
	char path[PATH_MAX], line[4096], rel[PATH_MAX], why[1100];
	FILE *f;

	if (agent_path(a, path, sizeof(path), "/proc/self/mountinfo") == 0 &&
	    (f = fopen(path, "re")) != NULL) {
		while (fgets(line, sizeof(line), f)) {
			char majmin[64], mnt[1024];

			if (sscanf(line, "%*s %*s %63s %*s %1023s", majmin, mnt) != 2)
				continue;
			if (strcmp(mnt, "/") != 0 && strcmp(mnt, "/boot") != 0 &&
			    strcmp(mnt, "/boot/efi") != 0)
				continue;
			snprintf(why, sizeof(why), "holds %s", mnt);
			push_mount(a, line, majmin, why, out, whys);
		}
		fclose(f);
	}
	if (agent_path(a, path, sizeof(path), "/proc/swaps") == 0 &&
	    (f = fopen(path, "re")) != NULL) {
		while (fgets(line, sizeof(line), f)) {
			char name[1024], type[32], full[PATH_MAX];
			struct stat st;

			if (sscanf(line, "%1023s %31s", name, type) != 2 || name[0] != '/')
				continue;
			if (strcmp(type, "partition") == 0) {
				snprintf(rel, sizeof(rel), "/sys/class/block/%s", basename(name));
				push_link(a, rel, "holds active swap", out, whys, 0);
			} else if (agent_path(a, full, sizeof(full), name) == 0 &&
			    stat(full, &st) == 0) {
				snprintf(rel, sizeof(rel), "%u:%u", major(st.st_dev),
				    minor(st.st_dev));
				push_fs_of(a, rel, "holds a swap file", out, whys);
			}
		}
		fclose(f);
	}
}

/* A glob never reaches the devices behind /, /boot or swap. */
static int
bd_protect(struct agent *a, const Knob__Setting *s, const char *target, char *msg,
    size_t msglen)
{
	struct strvec devs = { 0 }, whys = { 0 };
	int hit = 0;

	(void)s;
	protected_devs(a, &devs, &whys);
	for (size_t i = 0; i < devs.n && !hit; i++)
		if (strcmp(devs.v[i], target) == 0) {
			snprintf(msg, msglen, "%s %s: a glob never touches it (name the device "
			    "exactly to tune it)", target, whys.v[i]);
			hit = 1;
		}
	strvec_free(&devs);
	strvec_free(&whys);
	return hit;
}

/* ------------------------------------------------------------ identity */
/* "MAJ:MIN" of the device named target (SYSROOT/sys/block/TARGET/dev),
 * plus " wwid=..." or " serial=..." (the first of wwid, device/wwid,
 * device/serial it has): names are handed out at boot in probe order, so
 * the disk that was sdb may be another one now (the root disk), and the
 * wwid or serial tells.  0, or -errno when there is no dev file. */
static int
bd_identity(struct agent *a, const char *target, char *buf, size_t len)
{
	static const char *const ids[][2] = {
		{ "wwid", "wwid" }, { "device/wwid", "wwid" }, { "device/serial", "serial" },
	};
	char rel[PATH_MAX], full[PATH_MAX], v[256];
	ssize_t n;

	snprintf(rel, sizeof(rel), "/sys/block/%s/dev", target);
	if (agent_path(a, full, sizeof(full), rel) < 0)
		return -ENAMETOOLONG;
	if ((n = read_small_file(full, v, sizeof(v))) < 0)
		return (int)n;
	snprintf(buf, len, "%s", strtrim(v));
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		snprintf(rel, sizeof(rel), "/sys/block/%s/%s", target, ids[i][0]);
		if (agent_path(a, full, sizeof(full), rel) < 0 ||
		    read_small_file(full, v, sizeof(v)) <= 0 || *strtrim(v) == '\0')
			continue;
		snprintf(buf + strlen(buf), len - strlen(buf), " %s=%s", ids[i][1], strtrim(v));
		break;
	}
	return 0;
}

const struct tune_driver drv_blockdev = {
	.name = "blockdev",
	.resolve = bd_resolve,
	.read = bd_read,
	.normalise = tune_norm_default,
	.write = bd_write,
	.describe = tune_describe_default,
	.rank = bd_rank,
	.coupled = bd_coupled,
	.check = bd_check,
	.protect = bd_protect,
	.identity = bd_identity,
	.file = bd_file,
};
