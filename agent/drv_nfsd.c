/* nfsd driver: knobs of the kernel NFS server under /proc/fs/nfsd
 * (threads, max_block_size, nfsv4leasetime, nfsv4gracetime).  Nothing
 * matches (unsupported) when nfsd is not loaded.
 *
 * Writing a thread count to a stopped server starts it (the kernel opens
 * its listeners on port 2049 itself), so knob never does: while threads
 * reads 0, a nonzero threads key is TUNE_NOT_SETTABLE (unsupported on
 * apply and verify; a rollback that would restart it fails, and its
 * original stays journaled until nfsd runs again).  For the same reason
 * knob never stops it: threads 0 asked of a running server is refused
 * before any write (no rollback could start it again).
 *
 * A server with several thread pools (one per NUMA node or CPU, the
 * sunrpc module's pool_mode) shows each pool's count in pool_threads
 * ("4 12").  Writing threads moves them: the kernel (svc_set_num_threads
 * with no pool) starts the new threads one pool after the other, from the
 * pool at (old total - 1) mod pools, and stops threads the other way round
 * from the pool before it, skipping a pool that has none left; writing
 * pool_threads sets each pool's count (fewer numbers than pools leave the
 * rest alone; pool 0 keeps at least one thread) and so threads to their
 * sum.  Lowering threads can drain a pool ("1 15" at 4 is "0 4"), and
 * writing the old total back does not refill it the way it was ("6 10").
 * So when threads is written and the pools' counts are uneven (two differ
 * by more than one: no threads write need give them back), pool_threads is
 * journaled beside it as a journal-only key (coupled_target), written
 * back after threads; its sum is the original threads, so nothing moves
 * threads again. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune.h"

#define NFSD_DIR "/proc/fs/nfsd/"
#define NFSD_THREADS NFSD_DIR "threads"
#define NFSD_POOLS NFSD_DIR "pool_threads"

static int
nfsd_resolve(struct agent *a, const Knob__Setting *s, struct strvec *out, char *msg,
    size_t msglen)
{
	char path[PATH_MAX], full[PATH_MAX];

	if (strchr(s->key, '/') != NULL || strstr(s->key, "..") != NULL) {
		snprintf(msg, msglen, "bad nfsd key %s", s->key);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), NFSD_DIR "%s", s->key);
	if (agent_path(a, full, sizeof(full), path) == 0 && access(full, F_OK) == 0)
		strvec_push(out, path);
	return 0;
}

/* The server is stopped and writing want to key s would start it:
 * TUNE_NOT_SETTABLE with msg, else 0.  cur: threads as read now. */
static int
would_start(const Knob__Setting *s, const char *cur, const char *want, char *msg,
    size_t msglen)
{
	if (strcmp(s->key, "threads") != 0 || strtoul(cur, NULL, 10) != 0 ||
	    strtoul(want, NULL, 10) == 0)
		return 0;
	snprintf(msg, msglen, "nfsd is stopped (threads 0): knob does not start the NFS server; "
	    "start it (systemctl start nfs-server), then run this again");
	return TUNE_NOT_SETTABLE;
}

/* Would-fail: threads 0 while the server runs (cur: threads as read now)
 * stops it, and nothing of knob's would start it again. */
static int
would_stop(const Knob__Setting *s, const char *cur, const char *want, char *msg,
    size_t msglen)
{
	if (strcmp(s->key, "threads") != 0 || strtoul(cur, NULL, 10) == 0 ||
	    strtoul(want, NULL, 10) != 0)
		return 0;
	snprintf(msg, msglen, "threads 0 stops the NFS server (now %s threads), and no rollback "
	    "would start it again: knob does not stop it; stop it yourself (systemctl stop "
	    "nfs-server)", cur);
	return -EINVAL;
}

/* The default check, and threads 0 of a running server (would_stop). */
static int
nfsd_check(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	char cur[64];
	int rc = tune_check_default(a, s, target, value, msg, msglen);

	if (rc < 0 || strcmp(s->key, "threads") != 0 ||
	    tune_read_default(a, s, target, cur, sizeof(cur), msg, msglen) < 0)
		return rc;
	return would_stop(s, cur, value, msg, msglen);
}

/* Whether the pools' counts in pool_threads text v are uneven: two
 * differ by more than one. */
static int
pools_uneven(const char *v)
{
	unsigned long lo = ULONG_MAX, hi = 0, n;
	char *end;

	for (const char *p = v; *p; p = end) {
		n = strtoul(p, &end, 10);
		if (end == p)
			break;
		lo = n < lo ? n : lo;
		hi = n > hi ? n : hi;
	}
	return hi > lo && hi - lo > 1;
}

/* Read target; a stopped server's threads is not applicable
 * (would_start).  pool_threads followed beside a threads write (an apply,
 * which asks with no value) is not journaled while its pools are even
 * (TUNE_NOT_SETTABLE: see the top), nor when threads's original is
 * journaled without it (tune_coupled_late: its pools are knob's doing). */
static int
nfsd_read(struct agent *a, const Knob__Setting *s, const char *target, char *buf,
    size_t len, char *msg, size_t msglen)
{
	int rc = tune_read_default(a, s, target, buf, len, msg, msglen);

	if (rc < 0)
		return rc;
	if (strcmp(target, NFSD_POOLS) == 0 && (s->value == NULL || *s->value == '\0') &&
	    (!pools_uneven(buf) || tune_coupled_late(a, s, target, NFSD_THREADS, ""))) {
		snprintf(msg, msglen, "pool_threads %s: not journaled (even, or knob's own)", buf);
		return TUNE_NOT_SETTABLE;
	}
	return would_start(s, buf, s->value, msg, msglen);
}

/* pool_threads's canonical value: its counts, one space apart; other
 * keys through the default normaliser. */
static int
nfsd_normalise(const Knob__Setting *s, const char *raw, char *out, size_t outlen,
    char *msg, size_t msglen)
{
	size_t o = 0;

	if (strcmp(s->key, "pool_threads") != 0)
		return tune_norm_default(s, raw, out, outlen, msg, msglen);
	for (const char *p = raw; *p; ) {
		size_t n = strspn(p, "0123456789"), w = strspn(p + n, " \t\n");

		if ((n == 0 && w == 0) || o + n + 2 > outlen) {
			snprintf(msg, msglen, "bad pool_threads '%s'", raw);
			return -1;
		}
		if (n > 0)
			o += (size_t)snprintf(out + o, outlen - o, "%s%.*s", o ? " " : "", (int)n, p);
		p += n + w;
	}
	out[o] = '\0';
	return 0;
}

/* A key's name: its file below /proc/fs/nfsd ("threads"), the key that
 * names it (pool_threads followed beside threads is journaled under it). */
static void
nfsd_describe(const Knob__Setting *s, const char *target, char *buf, size_t len)
{
	(void)s;
	snprintf(buf, len, "%s", strncmp(target, NFSD_DIR, strlen(NFSD_DIR)) == 0 ?
	    target + strlen(NFSD_DIR) : target);
}

/* Writing threads moves pool_threads (see the top). */
static const char *
nfsd_coupled_target(const char *target)
{
	return strcmp(target, NFSD_THREADS) == 0 ? NFSD_POOLS : NULL;
}

/* Write target, unless that starts a stopped server (read again here:
 * rollback writes without an apply's read first). */
static int
nfsd_write(struct agent *a, const Knob__Setting *s, const char *target, const char *value,
    char *msg, size_t msglen)
{
	char cur[64];
	int rc;

	if (strcmp(s->key, "threads") == 0) {
		rc = tune_read_default(a, s, target, cur, sizeof(cur), msg, msglen);
		if (rc < 0)
			return rc;
		if ((rc = would_start(s, cur, value, msg, msglen)) != 0)
			return rc;
	}
	return tune_write_default(a, s, target, value, msg, msglen);
}

const struct tune_driver drv_nfsd = {
	.name = "nfsd",
	.resolve = nfsd_resolve,
	.read = nfsd_read,
	.normalise = nfsd_normalise,
	.write = nfsd_write,
	.describe = nfsd_describe,
	.coupled_target = nfsd_coupled_target,
	.coupled_left = "its original adds up to threads' original, so writing it would undo "
	    "that change",
	.check = nfsd_check,
	.file = tune_file_default,	/* a target is its file: /proc/fs/nfsd/... */
};
