/* A FUSE file system that never answers: every request (getattr, statfs,
 * lookup, create ...) blocks for --hang-seconds (default 300) and then fails
 * with EIO.  Tests mount it to make a real hung mount: a stat or statfs on
 * it sits in the kernel waiting for this daemon, exactly like a mount whose
 * server died.  The bounded hang means a test that dies without unmounting
 * cannot leave a process stuck for ever.
 *
 *   fuse_hang MOUNTPOINT [HANG_SECONDS]      runs in the foreground */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static unsigned hang_s = 300;

/* Block the (single) request thread, then fail. */
static int
hang(void)
{
	struct timespec ts = { .tv_sec = hang_s, .tv_nsec = 0 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return -EIO;
}

static int
h_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)path;
	(void)st;
	(void)fi;
	return hang();
}

static int
h_statfs(const char *path, struct statvfs *sv)
{
	(void)path;
	(void)sv;
	return hang();
}

static int
h_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)path;
	(void)mode;
	(void)fi;
	return hang();
}

static const struct fuse_operations ops = {
	.getattr = h_getattr,
	.statfs = h_statfs,
	.create = h_create,
};

int
main(int argc, char **argv)
{
	char f[] = "-f", sgl[] = "-s", o[] = "-o", opts[] = "fsname=knob-hang,subtype=hang";
	char *fargv[] = { argv[0], f, sgl, o, opts, argc > 1 ? argv[1] : NULL, NULL };

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: fuse_hang MOUNTPOINT [HANG_SECONDS]\n");
		return 2;
	}
	if (argc == 3)
		hang_s = (unsigned)strtoul(argv[2], NULL, 10);
	return fuse_main(6, fargv, &ops, NULL);
}
