/* sysctl driver: dotted names (vm.dirty_ratio) under /proc/sys, globs
 * allowed (net.ipv4.conf.*.rp_filter).  A name whose first separator is '/'
 * is a path below /proc/sys; in a dotted name a '/' is a dot, as sysctl(8)
 * and sysctl.d(5) have it (net.ipv4.conf.eth0/100.rp_filter: VLAN eth0.100).
 * Values of multi-value sysctls are compared with white space collapsed.
 *
 * Pairs the kernel keeps mutually exclusive (mm/page-writeback.c,
 * mm/util.c): writing vm.dirty_bytes sets vm.dirty_ratio to 0 and the
 * other way round; the same for dirty_background_bytes / _ratio and
 * overcommit_kbytes / _ratio.  Each half is coupled to the other (its
 * original is journaled too).  Putting a pair back writes only the half
 * whose original is not 0: that write sets the other to 0, its original.
 * Writing 0 itself would fail (dirty_bytes refuses less than 2 pages,
 * dirty_background_bytes less than 1) or undo the other half (a ratio
 * written 0 zeroes the bytes again).
 *
 * Both halves may be 0 (the ratios take 0, and writing one zeroes the
 * bytes): then neither would be written, and the half the profile set
 * would keep its value.  So when the other half goes back to 0 too (its
 * journaled original, or in a revert or crash recovery its value before
 * the transaction: put_back), the ratio is written 0, and
 * the bytes are zeroed through the ratio: written 0 (it reads 0 already
 * while the bytes are set), which dirty_ratio ignores unless it changes
 * (mm/page-writeback.c), so then written its kernel default and 0. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Each pair: the bytes, the ratio, and the ratio's kernel default. */
static const char *const sysctl_pairs[][3] = {
	{ "/proc/sys/vm/dirty_bytes", "/proc/sys/vm/dirty_ratio", "20" },
	{ "/proc/sys/vm/dirty_background_bytes", "/proc/sys/vm/dirty_background_ratio", "10" },
	{ "/proc/sys/vm/overcommit_kbytes", "/proc/sys/vm/overcommit_ratio", "50" },
};

/* The pair target is a half of (*half: 0 the bytes, 1 the ratio), or NULL. */
static const char *const *
sysctl_pair(const char *target, size_t *half)
{
	for (size_t i = 0; i < nitems(sysctl_pairs); i++)
		for (size_t h = 0; h < 2; h++)
			if (strcmp(sysctl_pairs[i][h], target) == 0) {
				*half = h;
				return sysctl_pairs[i];
			}
	return NULL;
}

/* The other half of target's pair, or NULL. */
static const char *
sysctl_partner(const char *target)
{
	size_t h;
	const char *const *p = sysctl_pair(target, &h);

	return p ? p[1 - h] : NULL;
}

/* "/proc/sys/net/core/somaxconn" -> "net.core.somaxconn"; a dot in a
 * name is a slash, as sysctl(8) prints it ("net.ipv4.conf.eth0/100.rp_filter"),
 * so that the name is the key of the same file (sysctl_glob). */
static void
sysctl_describe(const Knob__Setting *s, const char *target, char *buf, size_t len)
{
	size_t o = 0;
	const char *p = target;

	(void)s;
	if (strncmp(p, "/proc/sys/", 10) == 0)
		p += 10;
	for (; *p && o + 1 < len; p++)
		buf[o++] = *p == '/' ? '.' : *p == '.' ? '/' : *p;
	buf[o] = '\0';
}

/* The value this pass puts back on partner, while it puts value back on
 * target: from the journal's list that has value for target, the
 * transaction's values before it (a revert, crash recovery) or the
 * originals (rollback, a switch); NULL when neither has both. */
static const char *
put_back(struct agent *a, const char *target, const char *value, const char *partner)
{
	const struct journal *j = a->tune ? &a->tune->j : NULL;
	const struct jentry *v[2] = { j ? j->txn : NULL, j ? j->orig : NULL };
	size_t n[2] = { j && j->in_txn ? j->ntxn : 0, j ? j->norig : 0 };

	for (size_t l = 0; l < 2; l++) {
		long k = journal_find(v[l], n[l], "sysctl", target, "");
		long q = journal_find(v[l], n[l], "sysctl", partner, "");

		if (k >= 0 && q >= 0 && strcmp(v[l][k].value, value) == 0)
			return v[l][q].value;
	}
	return NULL;
}

/* Both halves of pair go back to 0: the ratio is written 0, and the bytes
 * (half 0, target) are zeroed through the ratio (see the top). */
static int
pair_zero(struct agent *a, const char *const *pair, size_t half, char *msg, size_t msglen)
{
	char now[64];
	int rc;

	if ((rc = tune_write_path(a, pair[1], "0", msg, msglen)) < 0 || half == 1 ||
	    (rc = tune_read_path(a, pair[0], now, sizeof(now), msg, msglen)) < 0 ||
	    strtoull(now, NULL, 10) == 0)
		return rc;
	if ((rc = tune_write_path(a, pair[1], pair[2], msg, msglen)) < 0)
		return rc;
	return tune_write_path(a, pair[1], "0", msg, msglen);
}

/* Put back an original: a pair half whose original is 0 is left to its
 * partner's restore (TUNE_LEFT_TO_COUPLED) when the partner is there,
 * unless the partner goes back to 0 too (pair_zero). */
static int
sysctl_restore(struct agent *a, const Knob__Setting *s, const char *target,
    const char *value, char *msg, size_t msglen)
{
	size_t h;
	const char *const *pair = sysctl_pair(target, &h), *p, *pv;
	char full[PATH_MAX], name[PATH_MAX];

	if (pair == NULL || strcmp(value, "0") != 0 ||
	    agent_path(a, full, sizeof(full), (p = pair[1 - h])) < 0 || !tune_fd_exists(full))
		return tune_write_default(a, s, target, value, msg, msglen);
	if ((pv = put_back(a, target, value, p)) != NULL && strcmp(pv, "0") == 0)
		return pair_zero(a, pair, h, msg, msglen);
	sysctl_describe(s, p, name, sizeof(name));
	snprintf(msg, msglen, "not written: the kernel sets it to 0 when %s is written back", name);
	return TUNE_LEFT_TO_COUPLED;
}

/* tune_driver.check: the file is writable, and an interface's IPv6 MTU
 * is not also in the hands of its net mtu key (written by this apply, or
 * journaled: tune_key_in_play), whose every write sets it. */
static int
sysctl_check(struct agent *a, const Knob__Setting *s, const char *target,
    const char *value, char *msg, size_t msglen)
{
	char ifn[64];
	const char *why;
	int rc;

	if ((rc = tune_check_default(a, s, target, value, msg, msglen)) < 0 ||
	    !sysctl_ipv6_mtu_if(target, ifn, sizeof(ifn)) ||
	    (why = tune_key_in_play(a, "net", ifn, "mtu")) == NULL)
		return rc;
	snprintf(msg, msglen, "it is %s's IPv6 MTU, which every write of its link MTU sets, "
	    "and net %s mtu sets that (%s): one of the two keys tunes it; set the link MTU "
	    "alone (the IPv6 MTU follows it), or roll back first", ifn, ifn, why);
	return -EEXIST;
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
	.check = sysctl_check,
	.file = tune_file_default,
	.path_keys = 1,
};
