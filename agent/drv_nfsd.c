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
 * before any write (no rollback could start it again). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tune.h"

static int
nfsd_resolve(struct agent *a, const Knob__Setting *s, struct strvec *out, char *msg,
    size_t msglen)
{
	char path[PATH_MAX], full[PATH_MAX];

	if (strchr(s->key, '/') != NULL || strstr(s->key, "..") != NULL) {
		snprintf(msg, msglen, "bad nfsd key %s", s->key);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "/proc/fs/nfsd/%s", s->key);
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

/* Read target; a stopped server's threads is not applicable (would_start). */
static int
nfsd_read(struct agent *a, const Knob__Setting *s, const char *target, char *buf,
    size_t len, char *msg, size_t msglen)
{
	int rc = tune_read_default(a, s, target, buf, len, msg, msglen);

	return rc < 0 ? rc : would_start(s, buf, s->value, msg, msglen);
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
	.normalise = tune_norm_default,
	.write = nfsd_write,
	.describe = tune_describe_default,
	.check = nfsd_check,
	.file = tune_file_default,	/* a target is its file: /proc/fs/nfsd/... */
};
