/* nfsd driver: knobs of the kernel NFS server under /proc/fs/nfsd
 * (threads, max_block_size, nfsv4leasetime, nfsv4gracetime).  Nothing
 * matches (unsupported) when nfsd is not loaded. */
#include <errno.h>
#include <stdio.h>
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

const struct tune_driver drv_nfsd = {
	.name = "nfsd",
	.resolve = nfsd_resolve,
	.read = tune_read_default,
	.normalise = tune_norm_default,
	.write = tune_write_default,
	.describe = tune_describe_default,
	.check = tune_check_default,
};
