/* Refusal of external tools' arguments that leave --dir (extargs.h). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "extargs.h"
#include "util.h"

/* Why an option is refused: the first words of the message. */
enum why { W_PATH, W_CMD, W_CODE, W_ENGINE, W_NODE, W_NET, W_API };

static const char *const why_text[] = {
	[W_PATH] = "path options of the tool are refused",
	[W_CMD] = "options that run a command are refused",
	[W_CODE] = "options that load code are refused",
	[W_NODE] = "options that change the node's settings are refused (knob's own tuning "
	    "sets and reverts them)",
	[W_ENGINE] = "fio engines other than those that do I/O on files in --dir (sync, "
	    "psync, vsync, pvsync, pvsync2, libaio, io_uring, posixaio, mmap, splice, null, "
	    "cpuio, falloc, ftruncate, filecreate, filestat, filedelete, dircreate, dirstat, "
	    "dirdelete) are refused: exec runs a program, external:LIB and unknown names load "
	    "a library, the others use devices or other hosts",
	[W_NET] = "options that serve or reach other hosts are refused",
	[W_API] = "IOR/mdtest backends other than those that do their I/O on files in --dir "
	    "(POSIX, MPIIO, MMAP, AIO, HDF5, NCMPI, DUMMY) are refused: the others reach "
	    "object stores and other hosts (S3, RADOS, CEPHFS, DFS, HDFS, LIBNFS, Gfarm, "
	    "CHFS, FINCHFS) or devices (PMDK)",
};

/* An option refused by its name, or (bad_value set) for some values. */
struct refusal {
	const char *name;
	enum why why;
	int (*bad_value)(const char *val);
};

/* fio job names are file names in --directory ("a/../../x.0.0"). */
static int
has_slash(const char *v)
{
	return strchr(v, '/') != NULL;
}

/* mem=mmap:FILE and mmaphuge:FILE back the buffers with a file. */
static int
has_colon(const char *v)
{
	return strchr(v, ':') != NULL;
}

/* A pattern with 'FILE' fills the buffers with a file's contents. */
static int
has_quote(const char *v)
{
	return strchr(v, '\'') != NULL;
}

/* The fio engines that do their I/O on the files in --directory; any
 * other name is refused: exec runs a program, external:LIB and a name
 * fio does not know load a shared library, and the rest (sg, net, rbd,
 * http, nfs, ...) work on devices or other hosts, not in --dir. */
static int
bad_engine(const char *v)
{
	static const char *const ok[] = {
		"sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring",
		"posixaio", "mmap", "splice", "null", "cpuio", "falloc", "ftruncate",
		"filecreate", "filestat", "filedelete", "dircreate", "dirstat", "dirdelete",
	};

	for (size_t i = 0; i < nitems(ok); i++)
		if (strcmp(v, ok[i]) == 0)
			return 0;
	return 1;
}

/* fio's options (job options and fio's own) that are refused, one reason
 * each.  fio reads them with getopt_long_only: "-name" is "--name", and a
 * prefix is the first option it starts ("--exec=" is exec_prerun), so a
 * prefix of any of these is refused too, except the options in fio_exact. */
static const struct refusal fio_refused[] = {
	{ "directory", W_PATH, NULL },		/* the files' directory (knob sets it) */
	{ "filename", W_PATH, NULL },		/* files or devices anywhere */
	{ "filename_format", W_PATH, NULL },	/* "/x/$jobnum" */
	{ "opendir", W_PATH, NULL },		/* every file under a directory */
	{ "aux-path", W_PATH, NULL },		/* fio's state files */
	{ "output", W_PATH, NULL },		/* fio's report into a file */
	{ "bandwidth-log", W_PATH, NULL },	/* agg-*_bw.log in the working directory */
	{ "write_bw_log", W_PATH, NULL },	/* the four logs: files named by the value */
	{ "write_lat_log", W_PATH, NULL },
	{ "write_iops_log", W_PATH, NULL },
	{ "write_hist_log", W_PATH, NULL },
	{ "write_iolog", W_PATH, NULL },	/* writes an I/O log file */
	{ "read_iolog", W_PATH, NULL },		/* replays onto the files and devices it names */
	{ "replay_redirect", W_PATH, NULL },	/* replays onto a device */
	{ "merge_blktrace_file", W_PATH, NULL }, /* writes the merged trace */
	{ "inflate-log", W_PATH, NULL },	/* prints a file fio reads as root */
	{ "device-names", W_PATH, NULL },	/* the act profile's raw devices */
	{ "daemonize", W_PATH, NULL },		/* writes a pid file */
	{ "remote-config", W_PATH, NULL },	/* a job file a server loads */
	{ "trigger-file", W_PATH, NULL },	/* a file fio waits for, to run the trigger */
	{ "exec_prerun", W_CMD, NULL },		/* a shell command before the job */
	{ "exec_postrun", W_CMD, NULL },	/* and after it */
	{ "trigger", W_CMD, NULL },		/* a command on the trigger */
	{ "trigger-remote", W_CMD, NULL },	/* a command on the remote side */
	{ "trigger-timeout", W_CMD, NULL },	/* when to run the trigger */
	{ "profile", W_CMD, NULL },		/* built-in profiles with their own device and
						 * directory options (act, tiobench) */
	{ "enghelp", W_CODE, NULL },		/* loads the engine it names, a library too */
	{ "ioengine", W_ENGINE, bad_engine },	/* exec, external:LIB, devices: bad_engine */
	{ "ioscheduler", W_NODE, NULL },	/* switches the disk's scheduler in sysfs */
	{ "cgroup", W_NODE, NULL },		/* creates a cgroup and moves fio into it */
	{ "server", W_NET, NULL },		/* listens for fio clients */
	{ "client", W_NET, NULL },		/* runs the jobs on other hosts' servers */
	{ "name", W_PATH, has_slash },		/* a job name is a file name */
	{ "mem", W_PATH, has_colon },		/* mem=mmap:FILE */
	{ "iomem", W_PATH, has_colon },		/* its alias */
	{ "buffer_pattern", W_PATH, has_quote }, /* 'FILE' is read into the buffers */
	{ "verify_pattern", W_PATH, has_quote },
};
/* fio options that are also the start of a refused one. */
static const char *const fio_exact[] = { "direct", "ba", "verify" };

/* fio's short options that are refused, as letters of a "-xyz" word:
 * -o output, -b bandwidth-log, -X inflate-log, -p profile, -S server,
 * -D daemonize, -C client, -R remote-config, -W trigger-file,
 * -B trigger-timeout, -H trigger, -J trigger-remote, -K aux-path,
 * -i enghelp. */
static const char fio_short[] = "obXpSDCRWBHJKi";

/* IOR's and mdtest's long options (exact names, "--name" or
 * "--name=value"); the backends' (src/aiori-*.c) are the same in both. */
static const struct refusal mpi_long[] = {
	{ "run-cmd-before-phase", W_CMD, NULL },	/* mdtest: a shell command */
	{ "run-cmd-after-phase", W_CMD, NULL },
	{ "saveRankPerformanceDetails", W_PATH, NULL },	/* mdtest: a CSV file */
	{ "savePerOpDataCSV", W_PATH, NULL },		/* mdtest: files with this prefix */
	{ "mpiio.hintsFileName", W_PATH, NULL },	/* a hints file read as root */
	{ "hdf5.hintsFileName", W_PATH, NULL },
	{ "ncmpi.hintsFileName", W_PATH, NULL },
	{ "cephfs.conf", W_PATH, NULL },		/* a cluster's config file */
	{ "rados.conf", W_PATH, NULL },
	{ "cephfs.prefix", W_PATH, NULL },		/* mount prefixes */
	{ "cephfs.remote_prefix", W_PATH, NULL },
	{ "dfs.prefix", W_PATH, NULL },
	{ "libnfs.url", W_PATH, NULL },			/* a server and its path */
};

/* ior -O directives that name a file (case-insensitive, as IOR reads
 * them); a directive "-x=v" or "--long=v" is that option, checked as one. */
static const char *const ior_directives[] = {
	"testFile", "summaryFile", "saveRankPerformanceDetailsCSV", "savePerOpDataCSV",
	"stoneWallingStatusFile",
};

/* One refused argument: what to print and why. */
struct bad {
	char what[160];
	enum why why;
};

/* Record a refusal in *b; returns -1. */
static int
refuse(struct bad *b, enum why why, const char *tool, const char *opt, const char *arg)
{
	snprintf(b->what, sizeof(b->what), "%s %s (in '%.60s')", tool, opt, arg);
	b->why = why;
	return -1;
}

/* Is name[0..n) one of fio's options that start a refused one? */
static int
fio_is_exact(const char *name, size_t n)
{
	for (size_t i = 0; i < nitems(fio_exact); i++)
		if (strlen(fio_exact[i]) == n && strncmp(name, fio_exact[i], n) == 0)
			return 1;
	return 0;
}

/* The entry of table that the long option name[0..n) is, or else (abbrev:
 * fio) the first one it starts, as getopt takes it; or NULL. */
static const struct refusal *
long_find(const struct refusal *table, size_t nt, const char *name, size_t n, int abbrev)
{
	for (size_t i = 0; i < nt; i++)
		if (strlen(table[i].name) == n && strncmp(name, table[i].name, n) == 0)
			return &table[i];
	if (!abbrev || n == 0 || fio_is_exact(name, n))
		return NULL;
	for (size_t i = 0; i < nt; i++)
		if (strlen(table[i].name) > n && strncmp(name, table[i].name, n) == 0)
			return &table[i];
	return NULL;
}

/* A long option word ("--name", "--name=v", fio "-name") against table;
 * 0, or -1 with *b set.  The tables list the options refused by name
 * before those refused for a value, so that an abbreviation of both is
 * refused. */
static int
long_check(const char *tool, const struct refusal *table, size_t nt, const char *arg,
    int abbrev, struct bad *b)
{
	const char *name = arg + strspn(arg, "-"), *eq = strchr(name, '=');
	size_t n = eq ? (size_t)(eq - name) : strlen(name);
	const struct refusal *r = long_find(table, nt, name, n, abbrev);
	char opt[64];

	if (r == NULL || (r->bad_value && (eq == NULL || !r->bad_value(eq + 1))))
		return 0;
	snprintf(opt, sizeof(opt), "--%s%s", r->name, r->bad_value ? "=" : "");
	return refuse(b, r->why, tool, opt, arg);
}

/* The letter of paths that the short-option word arg gives, or 0.  IOR's
 * and mdtest's parser (ior's option.c), and fio's getopt when "-xyz" is
 * no long option, take every character before a '=' as an option. */
static char
short_letter(const char *arg, const char *paths)
{
	if (arg[0] != '-' || arg[1] == '-')
		return 0;
	for (size_t i = 1; arg[i] && arg[i] != '='; i++)
		if (strchr(paths, arg[i]))
			return arg[i];
	return 0;
}

/* fio: one argument; 0 or -1 (*b).  A word that is not an option is a
 * job file to fio, and "--" makes the rest job files: job files are
 * refused, not read.  fio would read the file as root on each node, where
 * the controller cannot check it (its copy may differ, or change between
 * a check and fio's read), and fio gives the command line's options,
 * knob's --directory among them, to the first job file only.  The options
 * go on the command line instead ("fio --showcmd FILE" prints them). */
static int
fio_check_one(const char *arg, struct bad *b)
{
	char opt[4] = "-?";

	if (arg[0] != '-' || strcmp(arg, "-") == 0 || strcmp(arg, "--") == 0) {
		snprintf(b->what, sizeof(b->what), "fio job file '%.60s' (a word that is not "
		    "an option)", arg);
		b->why = W_PATH;
		return -1;
	}
	/* getopt_long_only takes "-o" as a short option, "-o=x" and "-opt" as long */
	if (arg[1] && arg[2] && long_check("fio", fio_refused, nitems(fio_refused), arg, 1,
	    b) < 0)
		return -1;
	if ((opt[1] = short_letter(arg, fio_short)) != 0) {
		snprintf(b->what, sizeof(b->what), "fio %s (in '%.60s': a single-dash word can "
		    "be fio's short options; write long options with '--')", opt, arg);
		b->why = strchr("SC", opt[1]) ? W_NET : strchr("pHJB", opt[1]) ? W_CMD :
		    opt[1] == 'i' ? W_CODE : W_PATH;
		return -1;
	}
	return 0;
}

static int mpi_check_one(const char *tool, const char *paths, const char *arg,
    const char *next, struct bad *b);

/* The ior -O directives in val (comma-separated "key=value"); 0 or -1. */
static int
ior_directives_check(const char *val, struct bad *b)
{
	char key[128], word[256];

	for (const char *p = val; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		size_t n;

		p += strspn(p, " \t");
		n = strcspn(p, "=# \t,");
		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		if (key[0] == '-') {	/* IOR parses "-o=v" as the option */
			snprintf(word, sizeof(word), "%.*s", (int)strcspn(p, ","), p);
			if (mpi_check_one("ior", "of", word, NULL, b) < 0)
				return -1;
			continue;
		}
		for (size_t i = 0; i < nitems(ior_directives); i++)
			if (strcasecmp(key, ior_directives[i]) == 0) {
				snprintf(key, sizeof(key), "-O %s=", ior_directives[i]);
				return refuse(b, W_PATH, "ior", key, val);
			}
	}
	return 0;
}

/* The values ior may give -O in the word arg: after its '=', the rest of
 * "-Oxyz", or the next word (a letter after another one takes it). */
static int
ior_O_check(const char *arg, const char *next, struct bad *b)
{
	const char *eq = strchr(arg, '=');

	if (arg[1] == 'O' && arg[2] && ior_directives_check(arg + 2, b) < 0)
		return -1;
	if (eq)
		return ior_directives_check(eq + 1, b);
	return next ? ior_directives_check(next, b) : 0;
}

/* The value IOR's parser gives the short option at arg[k] (ior's
 * option.c): after the word's '=', the rest of "-aPOSIX", else the next
 * word; NULL when there is none.  buf holds a copy cut at '='. */
static const char *
short_value(const char *arg, size_t k, const char *next, char *buf, size_t len)
{
	const char *eq = strchr(arg, '=');

	if (eq)
		return eq + 1;
	if (k == 1 && arg[2]) {
		snprintf(buf, len, "%s", arg + 2);
		return buf;
	}
	return next;
}

/* ior/mdtest -a API: one of the backends that work on files in --dir
 * (case-insensitive, as IOR matches them); 0 or -1. */
static int
api_check(const char *tool, const char *arg, const char *next, struct bad *b)
{
	static const char *const ok[] = {
		"POSIX", "MPIIO", "MMAP", "AIO", "HDF5", "NCMPI", "DUMMY",
	};
	char buf[64];
	size_t k = strcspn(arg + 1, "a=") + 1;
	const char *v = short_value(arg, k, next, buf, sizeof(buf));

	for (size_t i = 0; v && i < nitems(ok); i++)
		if (strcasecmp(v, ok[i]) == 0)
			return 0;
	return refuse(b, W_API, tool, "-a", v ? v : arg);
}

/* ior/mdtest: one argument (next: the word after it, or NULL); 0 or -1. */
static int
mpi_check_one(const char *tool, const char *paths, const char *arg, const char *next,
    struct bad *b)
{
	char opt[4] = "-?";

	if (strncmp(arg, "--", 2) == 0)
		return long_check(tool, mpi_long, nitems(mpi_long), arg, 0, b);
	if ((opt[1] = short_letter(arg, paths)) != 0)
		return refuse(b, W_PATH, tool, opt, arg);
	if (short_letter(arg, "a"))
		return api_check(tool, arg, next, b);
	if (strcmp(tool, "ior") == 0 && short_letter(arg, "O"))
		return ior_O_check(arg, next, b);
	return 0;
}

int
ext_args_check(const char *tool, char *const *args, size_t n, char *err, size_t errlen)
{
	struct bad b;
	int bad = 0;

	for (size_t i = 0; i < n && !bad; i++) {
		const char *next = i + 1 < n ? args[i + 1] : NULL;

		if (strcmp(tool, "fio") == 0)
			bad = fio_check_one(args[i], &b) < 0;
		else if (strcmp(tool, "ior") == 0)
			bad = mpi_check_one(tool, "of", args[i], next, &b) < 0;
		else if (strcmp(tool, "mdtest") == 0)
			bad = mpi_check_one(tool, "dx", args[i], next, &b) < 0;
	}
	if (!bad)
		return 0;
	if (strncmp(b.what, "fio job file", 12) == 0)
		snprintf(err, errlen, "%s: fio job files are refused: fio would read it as root "
		    "on every node, where knob cannot check its options; give them as fio "
		    "options, each with its value after '=' (--rw=randread --bs=4k; fio "
		    "--showcmd FILE prints a job file as options)", b.what);
	else
		snprintf(err, errlen, "%s: %s: knob runs the tool as root in the phase's own "
		    "directory under --dir (DIR/knob.<phase>/) and removes exactly that",
		    b.what, why_text[b.why]);
	return -1;
}
