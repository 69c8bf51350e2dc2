/* Refusal of path options in external tools' arguments (extargs.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "extargs.h"
#include "util.h"

/* fio options that name a file or a directory.  fio reads its options
 * with getopt_long_only, so "-directory" and a prefix ("--directo") are
 * the option too; a prefix that is another option exactly (--direct) is
 * that one. */
static const char *const fio_paths[] = {
	"directory", "filename", "filename_format", "opendir", "output", "aux-path",
	"write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log",
};
static const char *const fio_exact[] = { "direct" };

/* ior -O directives that name a file. */
static const char *const ior_directives[] = {
	"testFile", "summaryFile", "saveRankPerformanceDetailsCSV", "savePerOpDataCSV",
};

/* The fio path option arg names (at least 3 letters of one), or NULL. */
static const char *
fio_path(const char *arg)
{
	size_t n, i;

	if (arg[0] != '-')
		return NULL;
	arg += arg[1] == '-' ? 2 : 1;
	n = strcspn(arg, "=");
	if (n < 3)
		return NULL;
	for (i = 0; i < nitems(fio_exact); i++)
		if (strlen(fio_exact[i]) == n && strncmp(arg, fio_exact[i], n) == 0)
			return NULL;
	for (i = 0; i < nitems(fio_paths); i++)
		if (strlen(fio_paths[i]) >= n && strncmp(arg, fio_paths[i], n) == 0)
			return fio_paths[i];
	return NULL;
}

/* Does the short-option word arg give one of the letters in paths?  IOR's
 * and mdtest's parser (ior's option.c) takes every character of "-xyz"
 * before a '=' as an option, each with the same value ("-lrandom" sets -o
 * to "random" too).  The letter into *which. */
static int
short_path(const char *arg, const char *paths, char *which)
{
	if (arg[0] != '-' || arg[1] == '-')
		return 0;
	for (size_t i = 1; arg[i] && arg[i] != '='; i++)
		if (strchr(paths, arg[i])) {
			*which = arg[i];
			return 1;
		}
	return 0;
}

/* The ior -O directive in val that names a file, or NULL. */
static const char *
ior_directive(const char *val)
{
	for (const char *p = val; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		p += strspn(p, " ");
		for (size_t i = 0; i < nitems(ior_directives); i++) {
			size_t n = strlen(ior_directives[i]);

			if (strncasecmp(p, ior_directives[i], n) == 0 && p[n] == '=')
				return ior_directives[i];
		}
	}
	return NULL;
}

/* ior/mdtest: the path options among args; 0 or -1 (err). */
static int
mpi_tool_check(const char *tool, const char *paths, char *const *args, size_t n, char *err,
    size_t errlen)
{
	const char *d;
	char c;

	for (size_t i = 0; i < n; i++) {
		if (short_path(args[i], paths, &c)) {
			snprintf(err, errlen, "%s -%c (in '%s')", tool, c, args[i]);
			return -1;
		}
		if (strcmp(tool, "ior") != 0 || strncmp(args[i], "-O", 2) != 0)
			continue;
		d = ior_directive(args[i][2] ? args[i] + 2 + (args[i][2] == '=') :
		    i + 1 < n ? args[i + 1] : "");
		if (d) {
			snprintf(err, errlen, "ior -O %s=", d);
			return -1;
		}
	}
	return 0;
}

int
ext_args_check(const char *tool, char *const *args, size_t n, char *err, size_t errlen)
{
	char what[128] = "";
	const char *p;
	int bad = 0;

	if (strcmp(tool, "fio") == 0) {
		for (size_t i = 0; i < n && !bad; i++)
			if ((p = fio_path(args[i])) != NULL) {
				snprintf(what, sizeof(what), "fio --%s (in '%.60s')", p, args[i]);
				bad = 1;
			}
	} else if (strcmp(tool, "ior") == 0)
		bad = mpi_tool_check(tool, "of", args, n, what, sizeof(what)) < 0;
	else if (strcmp(tool, "mdtest") == 0)
		bad = mpi_tool_check(tool, "dx", args, n, what, sizeof(what)) < 0;
	if (bad)
		snprintf(err, errlen, "%s: path options of the tool are refused: knob runs it in "
		    "the phase's own directory under --dir (DIR/knob.<phase>/) and removes "
		    "exactly that", what);
	return bad ? -1 : 0;
}
