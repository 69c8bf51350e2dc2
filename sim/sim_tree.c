/* The fake tree each simulated agent gets as its --sysroot: block devices
 * with queue/ attributes, a Lustre client tree and a /proc/sys subset, as
 * plain files (on tmpfs when the directory is).  Nothing here is Lustre
 * or the kernel: the drivers read and write these files exactly as they
 * would the real ones. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "sim.h"

const struct sim_file sim_tree[] = {
	/* what a real node has beside the keys: a device's dev and wwid (its
	 * identity, journaled with its originals), the other half of each
	 * sysctl pair the kernel keeps (read as a coupled key) */
	{ "/sys/block/sda/dev", "8:0\n" },
	{ "/sys/block/nvme0n1/dev", "259:0\n" },
	{ "/sys/block/nvme0n1/wwid", "eui.0000000000000001\n" },
	{ "/proc/sys/vm/dirty_bytes", "0\n" },
	{ "/proc/sys/vm/dirty_background_bytes", "0\n" },
	{ "/sys/block/sda/queue/read_ahead_kb", "128\n" },
	{ "/sys/block/sda/queue/nr_requests", "64\n" },
	{ "/sys/block/sda/queue/max_sectors_kb", "1280\n" },
	{ "/sys/block/sda/queue/max_hw_sectors_kb", "32767\n" },
	{ "/sys/block/sda/queue/rotational", "1\n" },
	{ "/sys/block/nvme0n1/queue/read_ahead_kb", "128\n" },
	{ "/sys/block/nvme0n1/queue/nr_requests", "1023\n" },
	{ "/sys/block/nvme0n1/queue/max_sectors_kb", "512\n" },
	{ "/sys/block/nvme0n1/queue/max_hw_sectors_kb", "2048\n" },
	{ "/sys/block/nvme0n1/queue/rotational", "0\n" },
	{ "/proc/sys/vm/dirty_ratio", "20\n" },
	{ "/proc/sys/vm/dirty_background_ratio", "10\n" },
	{ "/proc/sys/vm/swappiness", "60\n" },
	{ "/proc/sys/vm/vfs_cache_pressure", "100\n" },
	{ "/proc/sys/net/core/rmem_max", "212992\n" },
	{ "/proc/sys/net/core/wmem_max", "212992\n" },
	{ "/proc/sys/net/core/somaxconn", "4096\n" },
	{ "/proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n" },
	{ "/sys/fs/lustre/osc/sim-OST0000-osc-ffff8800/max_rpcs_in_flight", "8\n" },
	{ "/sys/fs/lustre/osc/sim-OST0000-osc-ffff8800/max_dirty_mb", "2000\n" },
	{ "/sys/fs/lustre/osc/sim-OST0001-osc-ffff8800/max_rpcs_in_flight", "8\n" },
	{ "/sys/fs/lustre/osc/sim-OST0001-osc-ffff8800/max_dirty_mb", "2000\n" },
	{ "/sys/fs/lustre/llite/sim-ffff8800/max_read_ahead_mb", "64\n" },
	{ "/sys/fs/lustre/llite/sim-ffff8800/max_read_ahead_per_file_mb", "64\n" },
	{ "/proc/meminfo", "MemTotal:       16384000 kB\nMemFree:         8192000 kB\n" },
	/* what a health sweep reads of every node (health_node.c) */
	{ "/proc/loadavg", "0.12 0.25 0.30 1/245 4242\n" },
	{ NULL, NULL },
};

int
sim_mkdirs(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* Write one file of the tree under root. 0 or -1. */
static int
put_file(const char *root, const struct sim_file *f)
{
	char path[PATH_MAX], *slash;
	size_t len = strlen(f->content);
	int fd, rc = 0;

	if (snprintf(path, sizeof(path), "%s%s", root, f->path) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	slash = strrchr(path, '/');
	*slash = '\0';
	if (sim_mkdirs(path) < 0)
		return -1;
	*slash = '/';
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return -1;
	if (write(fd, f->content, len) != (ssize_t)len)
		rc = -1;
	if (close(fd) < 0)
		rc = -1;
	return rc;
}

int
sim_tree_make(const char *root)
{
	for (const struct sim_file *f = sim_tree; f->path; f++)
		if (put_file(root, f) < 0)
			return -1;
	return 0;
}
