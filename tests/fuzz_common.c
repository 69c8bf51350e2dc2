/* Helpers of the libFuzzer targets: see fuzz_common.h. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "knobctl.h"
#include "log.h"
#include "util.h"

static char dir[64];

static void
remove_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

const char *
fuzz_dir(void)
{
	if (dir[0] == '\0') {
		snprintf(dir, sizeof(dir), "/tmp/knob-fuzz.XXXXXX");
		if (mkdtemp(dir) == NULL)
			abort();
		atexit(remove_dir);
		log_init("fuzz", 0);	/* parsers' refusals are expected: quiet */
	}
	return dir;
}

char *
fuzz_string(const uint8_t *data, size_t size)
{
	char *s = xmalloc(size + 1);

	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

const char *
fuzz_file(const char *name, const uint8_t *data, size_t size)
{
	static char path[PATH_MAX];

	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", fuzz_dir(), name);
	if ((f = fopen(path, "w")) == NULL)
		return NULL;
	ok = fwrite(data, 1, size, f) == size;
	ok &= fclose(f) == 0;
	return ok ? path : NULL;
}

void
fuzz_copy_in(const char *src)
{
	char *text = NULL, dst[PATH_MAX];
	const char *base = strrchr(src, '/');
	size_t len;

	if (read_file_bounded(src, 1 << 20, &text, &len) < 0) {
		fprintf(stderr, "run from the source tree: %s not found\n", src);
		abort();
	}
	snprintf(dst, sizeof(dst), "%s/%s", fuzz_dir(), base ? base + 1 : src);
	if (write_file_atomic(dst, text, len, 0600) < 0)
		abort();
	free(text);
}

struct inventory *
fuzz_inventory(const char *xml)
{
	struct inventory *inv;
	char err[1024];

	inv = inventory_load(fuzz_file("cluster.xml", (const uint8_t *)xml, strlen(xml)), err,
	    sizeof(err));
	if (inv == NULL) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
	return inv;
}
