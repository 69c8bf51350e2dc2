/* sysctl driver: dotted names (vm.dirty_ratio) under /proc/sys, globs
 * allowed (net.ipv4.conf.*.rp_filter).  A name containing '/' is taken as a
 * path below /proc/sys (for interface names with dots).  Values of
 * multi-value sysctls are compared with white space collapsed.
 *
 * Pairs the kernel keeps mutually exclusive (mm/page-writeback.c,
 * mm/util.c): writing vm.dirty_bytes sets vm.dirty_ratio to 0 and the
 * other way round; the same for dirty_background_bytes / _ratio and
 * overcommit_kbytes / _ratio.  Each half is coupled to the other (its
 * original is journaled too).  Putting a pair back writes only the half
 * whose original is not 0: that write sets the other to 0, its original.
 * Writing 0 itself would fail (dirty_bytes refuses less than 2 pages,
 * dirty_background_bytes less than 1) or undo the other half (a ratio
 * written 0 zeroes the bytes again). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tune.h"

static int
sysctl_resolve(struct agent *a, const Knob__Setting *s, struct strvec *out, char *msg,
    size_t msglen)
{
	char pat[PATH_MAX];
	int rc;

	sysctl_glob(s->key, pat, sizeof(pat));
	if (strstr(pat, "/../") != NULL) {
		snprintf(msg, msglen, "bad sysctl name %s", s->key);
		return -EINVAL;
	}
	rc = tune_glob(a, pat, out);
	if (rc < 0)
		snprintf(msg, msglen, "glob %s: %s", pat, strerror(-rc));
	return rc;
}

static const char *const sysctl_pairs[][2] = {
	{ "/proc/sys/vm/dirty_bytes", "/proc/sys/vm/dirty_ratio" },
	{ "/proc/sys/vm/dirty_background_bytes", "/proc/sys/vm/dirty_background_ratio" },
	{ "/proc/sys/vm/overcommit_kbytes", "/proc/sys/vm/overcommit_ratio" },
};

/* The other half of target's pair, or NULL. */
static const char *
sysctl_partner(const char *target)
{
	for (size_t i = 0; i < nitems(sysctl_pairs); i++)
		for (size_t h = 0; h < 2; h++)
			if (strcmp(sysctl_pairs[i][h], target) == 0)
				return sysctl_pairs[i][1 - h];
	return NULL;
}

/* "/proc/sys/net/core/somaxconn" -> "net.core.somaxconn" */
static void
sysctl_describe(const Knob__Setting *s, const char *target, char *buf, size_t len)
{
	size_t o = 0;
	const char *p = target;

	(void)s;
	if (strncmp(p, "/proc/sys/", 10) == 0)
		p += 10;
	for (; *p && o + 1 < len; p++)
		buf[o++] = *p == '/' ? '.' : *p;
	buf[o] = '\0';
}

/* Put back an original: a pair half whose original is 0 is left to its
 * partner's restore (TUNE_LEFT_TO_COUPLED) when the partner is there. */
static int
sysctl_restore(struct agent *a, const Knob__Setting *s, const char *target,
    const char *value, char *msg, size_t msglen)
{
	const char *p = sysctl_partner(target);
	char full[PATH_MAX], name[PATH_MAX];

	if (p == NULL || strcmp(value, "0") != 0 || agent_path(a, full, sizeof(full), p) < 0 ||
	    !tune_fd_exists(full))
		return tune_write_default(a, s, target, value, msg, msglen);
	sysctl_describe(s, p, name, sizeof(name));
	snprintf(msg, msglen, "not written: the kernel sets it to 0 when %s is written back", name);
	return TUNE_LEFT_TO_COUPLED;
}

const struct tune_driver drv_sysctl = {
	.name = "sysctl",
	.resolve = sysctl_resolve,
	.read = tune_read_default,
	.normalise = tune_norm_default,
	.write = tune_write_default,
	.restore = sysctl_restore,
	.describe = sysctl_describe,
	.coupled_target = sysctl_partner,
	.check = tune_check_default,
	.file = tune_file_default,
	.path_keys = 1,
};
