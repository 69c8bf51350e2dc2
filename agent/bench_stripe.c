/* Lustre striping of a phase's work directory.  With a stripe count or a
 * stripe size in the spec, `lfs setstripe -c N [-S BYTES] DIR/knob.<id>`
 * runs once the directory exists and before the phase creates any file in
 * it, so every file the phase creates there gets that layout (and every
 * directory: a Lustre directory's default layout is inherited), for the
 * engine's own files and for IOR, mdtest and fio alike.  Only on Lustre
 * (the mount table's type of DIR, through the sysroot); asked on another
 * file system the phase fails and says why.  lfs is SYSROOT/usr/bin/lfs,
 * SYSROOT/usr/sbin/lfs or the first lfs in $PATH. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "bench.h"
#include "log.h"
#include "tune.h"
#include "util.h"

#define LFS_TIMEOUT_MS	30000

/* The lfs command into buf; 0 or -1 when there is none. */
static int
find_lfs(const char *sysroot, char *buf, size_t len)
{
	static const char *const cands[] = { "/usr/bin/lfs", "/usr/sbin/lfs" };
	const char *path = getenv("PATH");
	char *dirs, *d, *save = NULL;

	for (size_t i = 0; i < nitems(cands); i++)
		if (path_under_root(buf, len, sysroot, cands[i]) == 0 && access(buf, X_OK) == 0)
			return 0;
	dirs = xstrdup(path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save))
		if (d[0] == '/' && snprintf(buf, len, "%s/lfs", d) < (int)len &&
		    access(buf, X_OK) == 0) {
			free(dirs);
			return 0;
		}
	free(dirs);
	return -1;
}

int
bench_stripe(struct bench_job *j)
{
	char lfs[PATH_MAX], count[16], size[32], out[256], err[512];
	char *argv[8];
	int rc, n = 0;

	if (j->p.stripe_count == 0 && j->p.stripe_size == 0)
		return 0;
	if (strcmp(j->fs_type, "lustre") != 0) {
		snprintf(j->err, sizeof(j->err), "%s: stripe count/size asked, but %s is on %s, not "
		    "Lustre", j->node, j->p.dir, j->fs_type[0] ? j->fs_type : "an unknown file system");
		return -1;
	}
	if (find_lfs(j->p.sysroot, lfs, sizeof(lfs)) < 0) {
		snprintf(j->err, sizeof(j->err), "%s: lfs not found (needed for the stripe count/size)",
		    j->node);
		return -1;
	}
	argv[n++] = lfs;
	argv[n++] = (char *)(uintptr_t)"setstripe";
	if (j->p.stripe_count) {
		snprintf(count, sizeof(count), "%u", j->p.stripe_count);
		argv[n++] = (char *)(uintptr_t)"-c";
		argv[n++] = count;
	}
	if (j->p.stripe_size) {
		snprintf(size, sizeof(size), "%llu", (unsigned long long)j->p.stripe_size);
		argv[n++] = (char *)(uintptr_t)"-S";
		argv[n++] = size;
	}
	argv[n++] = j->wpath;
	argv[n] = NULL;
	rc = cmd_run(argv, LFS_TIMEOUT_MS, out, sizeof(out), err, sizeof(err));
	if (rc != 0) {
		snprintf(j->err, sizeof(j->err), "%s: lfs setstripe%s%s%s%s %s: %s", j->node,
		    j->p.stripe_count ? " -c " : "", j->p.stripe_count ? count : "",
		    j->p.stripe_size ? " -S " : "", j->p.stripe_size ? size : "", j->wpath,
		    rc == -ETIMEDOUT ? "timed out" : rc < 0 ? strerror(-rc) : err[0] ? err : "failed");
		return -1;
	}
	log_debug("%s: lfs setstripe on %s (count %u, size %llu)", j->node, j->wpath,
	    j->p.stripe_count, (unsigned long long)j->p.stripe_size);
	return 0;
}
