/* External benchmark phases: fio (per node, JSON output), ior and mdtest
 * (under mpirun from the first node, with a hostfile built from the target
 * nodes), with a timeout and abort; and the parsers of their summaries. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <wordexp.h>

#include <json-c/json.h>

#include "bench.h"
#include "json.h"
#include "log.h"
#include "util.h"

#define EXT_OUT_MAX	(8u << 20)	/* tool output kept for parsing */
#define EXT_OUT_SEND	(1u << 20)	/* tool output sent back */

/* ------------------------------------------------------------ parsers */

/* fio clat percentile (ns) at key "50.000000" etc.; 0 when absent. */
static double
fio_pct(json_object *dir, const char *key)
{
	json_object *lat = js_get(dir, "clat_ns");

	if (lat == NULL)
		lat = js_get(dir, "lat_ns");
	return js_num(js_get(lat, "percentile"), key);
}

static struct ext_op *
ext_get(struct ext_summary *s, const char *op)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->op[i].op, op) == 0)
			return &s->op[i];
	if (s->n == EXT_MAX_OPS)
		return NULL;
	memset(&s->op[s->n], 0, sizeof(s->op[0]));
	snprintf(s->op[s->n].op, sizeof(s->op[0].op), "%s", op);
	return &s->op[s->n++];
}

/* Add fio job direction dj ("read", "write" or "trim": name) to its
 * summary in out, when it did any I/O. */
static void
fio_add_dir(struct ext_summary *out, const char *name, json_object *dj)
{
	struct ext_op *e;
	double bytes = js_num(dj, "io_bytes"), ops = js_num(dj, "total_ios");

	if (bytes <= 0 && ops <= 0)
		return;
	if ((e = ext_get(out, name)) == NULL)
		return;
	e->bytes += (uint64_t)bytes;
	e->ops += (uint64_t)ops;
	e->bw_bytes += js_num(dj, "bw_bytes");
	e->iops += js_num(dj, "iops");
	if (js_num(dj, "runtime") / 1000.0 > e->runtime_s)
		e->runtime_s = js_num(dj, "runtime") / 1000.0;
	/* several jobs without group_reporting: keep the worst */
	if (fio_pct(dj, "50.000000") > e->p50_ns)
		e->p50_ns = fio_pct(dj, "50.000000");
	if (fio_pct(dj, "99.000000") > e->p99_ns)
		e->p99_ns = fio_pct(dj, "99.000000");
	if (fio_pct(dj, "99.900000") > e->p999_ns)
		e->p999_ns = fio_pct(dj, "99.900000");
}

/* fio --output-format=json: sum every job's read/write/trim. */
int
ext_parse_fio_json(const char *json, struct ext_summary *out, char *err, size_t errlen)
{
	static const char *const dirs[] = { "read", "write", "trim" };
	json_object *root = NULL, *jobs;
	const char *p = strchr(json, '{');
	size_t i, d;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (p == NULL || (root = json_tokener_parse(p)) == NULL) {
		snprintf(err, errlen, "fio: output is not JSON");
		goto out;
	}
	if ((jobs = js_array(root, "jobs")) == NULL) {
		snprintf(err, errlen, "fio: JSON has no jobs array");
		goto out;
	}
	for (i = 0; i < json_object_array_length(jobs); i++) {
		json_object *job = json_object_array_get_idx(jobs, i), *dj;

		for (d = 0; d < nitems(dirs); d++)
			if ((dj = js_get(job, dirs[d])) != NULL)
				fio_add_dir(out, dirs[d], dj);
	}
	if (out->n == 0) {
		snprintf(err, errlen, "fio: no I/O in the JSON output");
		goto out;
	}
	rc = 0;
out:
	json_object_put(root);
	return rc;
}
/* Split a line into white-space separated tokens (in place). */
static size_t
tokens(char *line, char **tok, size_t max)
{
	size_t n = 0;
	char *save = NULL, *t;

	for (t = strtok_r(line, " \t\r", &save); t && n < max; t = strtok_r(NULL, " \t\r", &save))
		tok[n++] = t;
	return n;
}

static int
col(char **hdr, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(hdr[i], name) == 0)
			return (int)i;
	return -1;
}

/* A count or byte total from a tool's (untrusted) number: negative, NaN
 * and out-of-range values clamp instead of overflowing the conversion. */
static uint64_t
count_u64(double v)
{
	if (!(v > 0))
		return 0;
	return v >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)v;
}

/* Token s, all of it, as a finite number into *v: 0, or -1 when it is
 * garbage, inf, nan or out of range. */
static int
finite_num(const char *s, double *v)
{
	char *end;

	*v = strtod(s, &end);
	return end != s && *end == '\0' && isfinite(*v) ? 0 : -1;
}

/* The figures of one row (tok) of ior's summary table into e, from the
 * columns c (Mean(MiB), Mean(OPs), Mean(s), aggs(MiB), xsize; -1 absent,
 * the first two never).  0, or -1 with the operation, column and token
 * that is not a finite number in err. */
static int
ior_row(char **tok, char **hdr, const int c[5], struct ext_op *e, char *err, size_t errlen)
{
	double v[5] = { 0 };

	for (size_t i = 0; i < 5; i++)
		if (c[i] >= 0 && finite_num(tok[c[i]], &v[i]) < 0) {
			snprintf(err, errlen, "ior: %s row: %s \"%.32s\" is not a finite number",
			    tok[0], hdr[c[i]], tok[c[i]]);
			return -1;
		}
	e->bw_bytes = v[0] * 1048576.0;
	e->iops = v[1];
	e->runtime_s = v[2];
	e->bytes = count_u64(v[3] * 1048576.0);
	if (v[4] > 0)
		e->ops = count_u64((double)e->bytes / v[4]);
	return 0;
}

/* ior text: the "Summary of all tests:" table, mean figures.  A row with
 * a figure that is not a finite number (inf, nan, garbage) is an error. */
int
ext_parse_ior_text(const char *text, struct ext_summary *out, char *err, size_t errlen)
{
	char *buf = xstrdup(text), *line, *save = NULL, *hdr[64], *tok[64];
	int in = 0, c[5] = { -1, -1, -1, -1, -1 }, rc = -1;
	size_t nh = 0, nt;

	memset(out, 0, sizeof(*out));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!in) {
			if (strncmp(line, "Summary of all tests:", 21) == 0)
				in = 1;
			continue;
		}
		if (in == 1) {
			nh = tokens(line, hdr, nitems(hdr));
			if (nh == 0 || strcmp(hdr[0], "Operation") != 0)
				break;
			c[0] = col(hdr, nh, "Mean(MiB)");
			c[1] = col(hdr, nh, "Mean(OPs)");
			c[2] = col(hdr, nh, "Mean(s)");
			c[3] = col(hdr, nh, "aggs(MiB)");
			c[4] = col(hdr, nh, "xsize");
			if (c[0] < 0 || c[1] < 0)
				break;
			in = 2;
			continue;
		}
		nt = tokens(line, tok, nitems(tok));
		if (nt < nh || strcmp(tok[0], "Finished") == 0)
			break;
		{
			struct ext_op *e = ext_get(out, tok[0]);
			if (e == NULL)
				break;
			if (ior_row(tok, hdr, c, e, err, errlen) < 0) {
				memset(out, 0, sizeof(*out));
				goto out;
			}
		}
	}
	if (out->n == 0)
		snprintf(err, errlen, "ior: no \"Summary of all tests\" table in the output");
	else
		rc = 0;
out:
	free(buf);
	return rc;
}

/* The figures of one entry o of ior's JSON summary into e.  0, or -1 with
 * the operation and the key that is not a finite number (NaN, Infinity,
 * "inf") in err. */
static int
ior_json_row(json_object *o, struct ext_op *e, char *err, size_t errlen)
{
	static const char *const keys[] = {
		"bwMeanMIB", "OPsMean", "MeanTime", "xsizeMiB", "transferSize",
	};
	double v[nitems(keys)];

	for (size_t i = 0; i < nitems(keys); i++)
		if (!isfinite(v[i] = js_num(o, keys[i]))) {
			snprintf(err, errlen, "ior: %s: %s is not a finite number", e->op, keys[i]);
			return -1;
		}
	e->bw_bytes = v[0] * 1048576.0;
	e->iops = v[1];
	e->runtime_s = v[2];
	e->bytes = count_u64(v[3] * 1048576.0);
	e->ops = v[4] > 0 ? count_u64((double)e->bytes / v[4]) : 0;
	return 0;
}

/* ior -O summaryFormat=JSON: the "summary" array; an entry with a figure
 * that is not a finite number is an error. */
int
ext_parse_ior_json(const char *json, struct ext_summary *out, char *err, size_t errlen)
{
	json_object *root = NULL, *sum;
	const char *p = strchr(json, '{');
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (p == NULL || (root = json_tokener_parse(p)) == NULL) {
		snprintf(err, errlen, "ior: summary is not JSON");
		goto out;
	}
	if ((sum = js_array(root, "summary")) == NULL) {
		snprintf(err, errlen, "ior: JSON has no summary array");
		goto out;
	}
	for (size_t i = 0; i < json_object_array_length(sum); i++) {
		json_object *o = json_object_array_get_idx(sum, i);
		struct ext_op *e;

		if (js_get(o, "operation") == NULL)
			continue;
		if ((e = ext_get(out, js_str(o, "operation"))) == NULL)
			break;
		if (ior_json_row(o, e, err, errlen) < 0) {
			memset(out, 0, sizeof(*out));
			goto out;
		}
	}
	if (out->n == 0) {
		snprintf(err, errlen, "ior: empty JSON summary");
		goto out;
	}
	rc = 0;
out:
	json_object_put(root);
	return rc;
}

/* One row of mdtest's rate table: operation name, mean rate mean (a
 * token), files done (for "File ..." rows).  0 taken into out, 1 left out
 * (out is full, or a "Tree ..." row whose mean is not a finite number:
 * mdtest times its few directories at 0 s and prints "inf"), -1 with the
 * row and token in
 * err when a "File ..." row's mean is not a finite number (the phase's
 * figure comes from those rows). */
static int
mdtest_row(const char *name, const char *mean, unsigned long long files,
    struct ext_summary *out, char *err, size_t errlen)
{
	int work = strncmp(name, "File ", 5) == 0;
	struct ext_op *e;
	double v;

	if (finite_num(mean, &v) < 0) {
		if (!work)
			return 1;
		snprintf(err, errlen, "mdtest: %s row: Mean \"%.32s\" is not a finite number",
		    name, mean);
		return -1;
	}
	if ((e = ext_get(out, name)) == NULL)
		return 1;
	e->iops = v;
	if (work) {
		e->ops = files;
		e->runtime_s = e->iops > 0 ? (double)files / e->iops : 0;
	}
	return 0;
}

/* mdtest text: the "SUMMARY rate" table, mean rates; ops from "N files"
 * (mdtest_row: a File row whose mean is not a finite number is an error). */
int
ext_parse_mdtest_text(const char *text, struct ext_summary *out, char *err, size_t errlen)
{
	char *buf = xstrdup(text), *line, *save = NULL, *tok[32];
	unsigned long long files = 0;
	unsigned tasks;
	int in = 0, rc = -1;
	size_t nt, k;

	memset(out, 0, sizeof(*out));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[32] = "";

		if (sscanf(line, "%u tasks, %llu files", &tasks, &files) == 2)
			continue;
		if (!in) {
			if (strncmp(line, "SUMMARY rate", 12) == 0)
				in = 1;
			continue;
		}
		if (strncmp(line, "--", 2) == 0 || strncmp(line, "SUMMARY", 7) == 0)
			break;
		nt = tokens(line, tok, nitems(tok));
		if (nt == 0)
			break;
		if (strcmp(tok[0], "Operation") == 0 || tok[0][0] == '-')
			continue;
		/* name words, then Max Min Mean StdDev */
		for (k = 0; k < nt; k++) {
			char *end;
			strtod(tok[k], &end);
			if (*end == '\0')
				break;
		}
		if (k == 0 || nt - k < 3)
			continue;
		for (size_t w = 0; w < k; w++)
			snprintf(name + strlen(name), sizeof(name) - strlen(name), "%s%s",
			    w ? " " : "", tok[w]);
		if (mdtest_row(name, tok[k + 2], files, out, err, errlen) < 0) {
			memset(out, 0, sizeof(*out));
			goto out;
		}
	}
	if (out->n == 0)
		snprintf(err, errlen, "mdtest: no \"SUMMARY rate\" table in the output");
	else
		rc = 0;
out:
	free(buf);
	return rc;
}

int
ext_counted_op(const struct ext_summary *s, int kind)
{
	if (kind == BK_FIO)
		return -1;
	for (size_t i = 0; i < s->n; i++)
		if (s->op[i].bytes || s->op[i].ops)
			return (int)i;
	return -1;
}

int
ext_hostfile(char *buf, size_t len, char *const *hosts, const uint32_t *slots, size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w;

		if (bench_check_id(hosts[i]) < 0)
			return -1;
		w = snprintf(buf + off, len - off, "%s slots=%u\n", hosts[i],
		    slots[i] ? slots[i] : 1);
		if (w < 0 || (size_t)w >= len - off)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* ------------------------------------------------------------ launcher */

/* Replace every {name} of vars in word; malloc'd. */
static char *
subst_vars(const char *word, const struct ext_launch *v)
{
	const struct { const char *name; const char *val; } vars[] = {
		{ "{np}", v->np }, { "{hostfile}", v->hostfile }, { "{hosts}", v->hosts },
		{ "{ppn}", v->ppn }, { "{nnodes}", v->nnodes },
		{ "{bind}", v->bind ? v->bind : "none" },
	};
	char *out = xstrdup(word);

	for (size_t i = 0; i < nitems(vars); i++) {
		char *at;

		while ((at = strstr(out, vars[i].name)) != NULL) {
			char *n = xasprintf("%.*s%s%s", (int)(at - out), out, vars[i].val,
			    at + strlen(vars[i].name));
			free(out);
			out = n;
		}
	}
	return out;
}

/* Split a shell-quoted string into words (no command substitution).  The
 * braces of the placeholders are not shell words: they pass wordexp as
 * \001 and \002 and come back in the words. */
static int
split_words(const char *s, wordexp_t *we, char *err, size_t errlen, const char *what)
{
	char *m = xstrdup(s), *p;
	int rc;

	for (p = m; *p; p++)
		*p = *p == '{' ? '\001' : *p == '}' ? '\002' : *p;
	rc = wordexp(m, we, WRDE_NOCMD);
	free(m);
	for (size_t i = 0; rc == 0 && i < we->we_wordc; i++)
		for (p = we->we_wordv[i]; *p; p++)
			*p = *p == '\001' ? '{' : *p == '\002' ? '}' : *p;

	if (rc != 0) {
		snprintf(err, errlen, "%s: cannot split '%s' into words%s", what, s,
		    rc == WRDE_CMDSUB ? " (command substitution is refused)" : "");
		if (rc == WRDE_NOSPACE)
			wordfree(we);
		return -1;
	}
	return 0;
}

int
ext_launcher_argv(const struct ext_launch *v, char *const *cmd, struct strvec *out,
    char *err, size_t errlen)
{
	wordexp_t tw, aw;
	int have_cmd = 0, have_args = 0, rc = -1;
	size_t i, k;

	if (split_words(v->tmpl[0] ? v->tmpl : EXT_MPIRUN_DEFAULT, &tw, err, errlen,
	    "--mpirun") < 0)
		return -1;
	if (split_words(v->args, &aw, err, errlen, "--mpirun-args") < 0) {
		wordfree(&tw);
		return -1;
	}
	for (i = 0; i < tw.we_wordc; i++) {
		const char *w = tw.we_wordv[i];

		if (strcmp(w, "{cmd}") == 0) {
			for (k = 0; cmd[k]; k++)
				strvec_push(out, cmd[k]);
			have_cmd = 1;
		} else if (strcmp(w, "{args}") == 0) {
			for (k = 0; k < aw.we_wordc; k++)
				strvec_push(out, aw.we_wordv[k]);
			have_args = 1;
		} else
			strvec_push_owned(out, subst_vars(w, v));
	}
	if (!have_cmd)
		snprintf(err, errlen, "--mpirun template '%s' has no {cmd}", v->tmpl);
	else if (!have_args && aw.we_wordc)
		snprintf(err, errlen, "--mpirun-args given, but the --mpirun template '%s' has "
		    "no {args}", v->tmpl);
	else if (out->n == 0 || tw.we_wordc == 0)
		snprintf(err, errlen, "--mpirun template is empty");
	else
		rc = 0;
	wordfree(&tw);
	wordfree(&aw);
	return rc;
}

/* ------------------------------------------------------------ running */

/* Find an executable in PATH (or take a path as is) into buf. 0 or -1. */
static int
find_exe(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	char *dup, *d, *save = NULL;
	int rc = -1;

	if (strchr(name, '/')) {
		snprintf(buf, len, "%s", name);
		return access(buf, X_OK);
	}
	dup = xstrdup(path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (d = strtok_r(dup, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(buf, len, "%s/%s", d, name);
		if (access(buf, X_OK) == 0) {
			rc = 0;
			break;
		}
	}
	free(dup);
	return rc;
}

/* The tool an external phase runs (fio, or the launcher of ior/mdtest:
 * the first word of the --mpirun template) into buf. */
static const char *
ext_main_tool(const struct bench_job *j, char *buf, size_t len)
{
	const char *t = j->p.mpirun[0] ? j->p.mpirun : EXT_MPIRUN_DEFAULT;

	if (j->p.kind == BK_FIO)
		return j->p.ext_tool[0] ? j->p.ext_tool : "fio";
	t += strspn(t, " \t");
	snprintf(buf, len, "%.*s", (int)strcspn(t, " \t"), t);
	return buf;
}

/* Does the launcher of this ior/mdtest phase place the ranks as
 * --cpu-bind says: the default template, or one with {bind}? */
static int
ext_binds(const struct bench_job *j)
{
	return j->p.mpirun[0] == '\0' || strstr(j->p.mpirun, "{bind}") != NULL;
}

const char *
ext_cpu_bind(const struct bench_job *j)
{
	if (j->p.kind == BK_FIO)
		return "none";
	if (!ext_binds(j))
		return "launcher";
	return j->p.cpu_bind ? "core" : "none";
}

/* --cpu-bind core where knob cannot do it: fio places its own threads, and
 * a --mpirun template without {bind} leaves the ranks to the launcher.
 * 0, or -1 (j->err) before anything runs, on every node. */
static int
ext_bind_check(struct bench_job *j)
{
	if (!j->p.cpu_bind)
		return 0;
	if (j->p.kind == BK_FIO)
		snprintf(j->err, sizeof(j->err), "%s: --cpu-bind core does not apply to fio, which "
		    "places its own threads (give fio's cpus_allowed options in its arguments)",
		    j->node);
	else if (!ext_binds(j))
		snprintf(j->err, sizeof(j->err), "%s: --cpu-bind core given, but the --mpirun "
		    "template '%s' has no {bind}, so the launcher would place the ranks as it "
		    "likes", j->node, j->p.mpirun);
	else
		return 0;
	return -1;
}

/* The tool's own directory below the phase's (fio: n.<node>, each node
 * its own; ior and mdtest: ext): its files, and its working directory. */
static void
ext_subdir(const struct bench_job *j, char *buf, size_t len)
{
	if (j->p.kind == BK_FIO)
		snprintf(buf, len, "n.%u", j->p.node_index);
	else
		snprintf(buf, len, "ext");
}

int
ext_prepare(struct bench_job *j)
{
	char exe[PATH_MAX], sub[32], first[256];
	const char *tool = ext_main_tool(j, first, sizeof(first));

	if (ext_bind_check(j) < 0)
		return -1;
	if (j->p.kind != BK_FIO && j->p.node_index != 0)
		return 0;	/* only the first node launches mpirun */
	if (find_exe(tool, exe, sizeof(exe)) < 0) {
		snprintf(j->err, sizeof(j->err), "%s: %s: not found or not executable",
		    j->node, tool);
		return -1;
	}
	if (j->p.kind != BK_FIO) {
		const char *inner = j->p.ext_tool[0] ? j->p.ext_tool :
		    (j->p.kind == BK_IOR ? "ior" : "mdtest");
		if (find_exe(inner, exe, sizeof(exe)) < 0) {
			snprintf(j->err, sizeof(j->err), "%s: %s: not found or not executable",
			    j->node, inner);
			return -1;
		}
	}
	ext_subdir(j, sub, sizeof(sub));
	if (mkdirat(j->wfd, sub, 0755) < 0 && errno != EEXIST) {
		snprintf(j->err, sizeof(j->err), "%s: mkdir %s: %s", j->node, sub, strerror(errno));
		return -1;
	}
	return 0;
}

static int
has_arg(char **args, const char *prefix)
{
	for (size_t i = 0; args && args[i]; i++)
		if (strncmp(args[i], prefix, strlen(prefix)) == 0)
			return 1;
	return 0;
}

/* The tool's timeout in seconds (--ext-timeout, else an hour). */
static unsigned
tool_timeout_s(const struct bench_job *j)
{
	return j->p.ext_timeout_s ? j->p.ext_timeout_s : 3600;
}

/* The tool's working directory (*cwd) and the memory file for its output
 * (*mfd), both the caller's to close. 0 or -1 (j->err, nothing open). */
static int
tool_fds(struct bench_job *j, int *cwd, int *mfd)
{
	char sub[32];

	ext_subdir(j, sub, sizeof(sub));
	/* the tool works in its own directory: what it writes by a relative
	 * name (fio's state and log files) stays under --dir and goes with
	 * the clean-up, not into knobd's working directory */
	if ((*cwd = openat(j->wfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		snprintf(j->err, sizeof(j->err), "%s: %s: %s", j->node, sub, strerror(errno));
		return -1;
	}
	if ((*mfd = memfd_create("knob-ext", MFD_CLOEXEC)) < 0) {
		snprintf(j->err, sizeof(j->err), "%s: memfd_create: %s", j->node, strerror(errno));
		close(*cwd);
		return -1;
	}
	return 0;
}

/* In the forked child: its own process group, in directory cwd, stdin
 * from /dev/null, stdout and stderr into mfd; exec argv. */
static void __attribute__((noreturn))
tool_child(char **argv, int cwd, int mfd)
{
	int nul = open("/dev/null", O_RDONLY);

	child_signals_default();
	setpgid(0, 0);
	if (fchdir(cwd) < 0)
		_exit(126);
	if (nul >= 0)
		dup2(nul, 0);
	dup2(mfd, 1);
	dup2(mfd, 2);
	execvp(argv[0], argv);
	_exit(127);
}

/* Reap pid, killing its process group on abort or past deadline dl (*st:
 * its wait status).  0, 1 when aborted, 2 when timed out. */
static int
tool_wait(struct bench_job *j, pid_t pid, uint64_t dl, int *st)
{
	int killed = 0;

	for (;;) {
		pid_t w = waitpid(pid, st, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			break;
		if (!killed && (j->abort || now_mono_ns() > dl)) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			killed = j->abort ? 1 : 2;
		}
		usleep(50000);
	}
	return killed;
}

/* The first EXT_OUT_MAX bytes of memory file mfd, malloc'd and
 * NUL-terminated, or NULL when it cannot be sized. */
static char *
tool_output(int mfd)
{
	struct stat sb;
	size_t len;
	ssize_t r;
	char *out;

	if (fstat(mfd, &sb) != 0)
		return NULL;
	len = (size_t)sb.st_size > EXT_OUT_MAX ? EXT_OUT_MAX : (size_t)sb.st_size;
	out = xmalloc(len + 1);
	r = pread(mfd, out, len, 0);
	len = r > 0 ? (size_t)r : 0;
	out[len] = '\0';
	return out;
}

/* Run argv with stdout+stderr into a memory file; honour abort and the
 * timeout.  *out malloc'd (NUL-terminated).  Exit status, or -1. */
static int
run_tool(struct bench_job *j, char **argv, char **out)
{
	uint64_t dl = now_mono_ns() + (uint64_t)tool_timeout_s(j) * 1000000000ull;
	int mfd, cwd, st = 0, killed;
	pid_t pid;

	*out = NULL;
	if (tool_fds(j, &cwd, &mfd) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		snprintf(j->err, sizeof(j->err), "%s: fork: %s", j->node, strerror(errno));
		close(mfd);
		close(cwd);
		return -1;
	}
	if (pid == 0)
		tool_child(argv, cwd, mfd);
	setpgid(pid, pid);
	close(cwd);
	killed = tool_wait(j, pid, dl, &st);
	*out = tool_output(mfd);
	close(mfd);
	if (killed == 2) {
		snprintf(j->err, sizeof(j->err), "%s: %s timed out after %u s", j->node, argv[0],
		    tool_timeout_s(j));
		return -1;
	}
	if (killed == 1)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* The ior/mdtest command line: the tool, its arguments and its directory,
 * inside the launcher template. 0 or -1 (j->err). */
static int
mpi_argv(struct bench_job *j, const char *wdir, const char *hostfile, struct strvec *av)
{
	struct strvec cmd = { 0 };
	struct ext_launch v;
	char np[16], ppn[16], nn[16], err[512], *hosts;
	uint32_t maxslots = 1;
	size_t i, off = 0, hl = 1;
	int rc;

	strvec_push(&cmd, j->p.ext_tool[0] ? j->p.ext_tool :
	    (j->p.kind == BK_IOR ? "ior" : "mdtest"));
	for (i = 0; i < j->p.next_args; i++)
		strvec_push(&cmd, j->p.ext_args[i]);
	/* the tool's files go in the phase's directory: path options in the
	 * arguments are refused (extargs.h) */
	if (j->p.kind == BK_IOR) {
		strvec_push(&cmd, "-o");
		strvec_push_owned(&cmd, xasprintf("%s/ior.data", wdir));
	} else if (j->p.kind == BK_MDTEST) {
		strvec_push(&cmd, "-d");
		strvec_push_owned(&cmd, xasprintf("%s/md", wdir));
	}
	for (i = 0; i < j->p.nhosts; i++) {
		hl += strlen(j->p.hosts[i]) + 1;
		if (j->p.host_slots[i] > maxslots)
			maxslots = j->p.host_slots[i];
	}
	hosts = xcalloc(hl, 1);
	for (i = 0; i < j->p.nhosts; i++)
		off += (size_t)snprintf(hosts + off, hl - off, "%s%s", i ? "," : "", j->p.hosts[i]);
	snprintf(np, sizeof(np), "%u", j->p.threads_total);
	snprintf(ppn, sizeof(ppn), "%u", maxslots);
	snprintf(nn, sizeof(nn), "%zu", j->p.nhosts);
	v.tmpl = j->p.mpirun;
	v.args = j->p.mpirun_args;
	v.np = np;
	v.hostfile = hostfile;
	v.hosts = hosts;
	v.ppn = ppn;
	v.nnodes = nn;
	v.bind = j->p.cpu_bind ? EXT_BIND_CORE : "none";
	rc = ext_launcher_argv(&v, cmd.v, av, err, sizeof(err));
	if (rc < 0)
		snprintf(j->err, sizeof(j->err), "%s: %s", j->node, err);
	free(hosts);
	strvec_free(&cmd);
	return rc;
}

/* The fio command line: the tool, JSON output, the node's directory and
 * the defaults the arguments do not set, then the arguments. */
static void
fio_argv(struct bench_job *j, const char *real, struct strvec *av)
{
	char wdir[PATH_MAX + 64], exe[PATH_MAX], first[256];
	size_t i;

	snprintf(wdir, sizeof(wdir), "%s/%s/n.%u", real, j->wname, j->p.node_index);
	find_exe(ext_main_tool(j, first, sizeof(first)), exe, sizeof(exe));
	strvec_push(av, exe);
	strvec_push(av, "--output-format=json");
	strvec_push_owned(av, xasprintf("--directory=%s", wdir));
	if (!has_arg(j->p.ext_args, "--name"))
		strvec_push(av, "--name=knob");
	if (!has_arg(j->p.ext_args, "--numjobs") && j->p.nranks)
		strvec_push_owned(av, xasprintf("--numjobs=%zu", j->p.nranks));
	if (!has_arg(j->p.ext_args, "--group_reporting"))
		strvec_push(av, "--group_reporting");
	for (i = 0; i < j->p.next_args; i++)
		strvec_push(av, j->p.ext_args[i]);
}

/* Write the MPI hostfile to ext/hostfile of the workdir. 0 or -1 (j->err). */
static int
write_hostfile(struct bench_job *j)
{
	char hosts[1 << 16];
	int fd;

	if (ext_hostfile(hosts, sizeof(hosts), j->p.hosts, j->p.host_slots, j->p.nhosts) < 0) {
		snprintf(j->err, sizeof(j->err), "%s: cannot build the MPI hostfile", j->node);
		return -1;
	}
	fd = openat(j->wfd, "ext/hostfile", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, hosts, strlen(hosts)) != (ssize_t)strlen(hosts)) {
		snprintf(j->err, sizeof(j->err), "%s: write hostfile: %s", j->node,
		    strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* The ior/mdtest command line with its hostfile written. 0 or -1 (j->err). */
static int
ior_mdtest_argv(struct bench_job *j, const char *real, struct strvec *av)
{
	char wdir[PATH_MAX + 64], hf[PATH_MAX + 80];

	snprintf(wdir, sizeof(wdir), "%s/%s/ext", real, j->wname);
	snprintf(hf, sizeof(hf), "%s/hostfile", wdir);
	if (write_hostfile(j) < 0)
		return -1;
	return mpi_argv(j, wdir, hf, av);
}

/* Parse the tool's output into j->ext (ior: JSON or text, as it wrote
 * it). 0 or -1 (j->err). */
static int
parse_output(struct bench_job *j, const char *out)
{
	char err[256];
	size_t ws = strspn(out, " \t\r\n");
	int rc;

	j->ext = xcalloc(1, sizeof(*j->ext));
	if (j->p.kind == BK_FIO)
		rc = ext_parse_fio_json(out, j->ext, err, sizeof(err));
	else if (j->p.kind == BK_IOR)
		rc = ws < strlen(out) && out[ws] == '{' ?
		    ext_parse_ior_json(out, j->ext, err, sizeof(err)) :
		    ext_parse_ior_text(out, j->ext, err, sizeof(err));
	else
		rc = ext_parse_mdtest_text(out, j->ext, err, sizeof(err));
	if (rc < 0)
		snprintf(j->err, sizeof(j->err), "%s: %s", j->node, err);
	return rc;
}

/* The phase's times: it ends when the tool did, and starts the tool's
 * own time of the counted operation before that (fio: its longest
 * direction), not at its set-up (fio lays files out first). */
static void
set_times(struct bench_job *j, uint64_t t0, uint64_t t1)
{
	int c = ext_counted_op(j->ext, j->p.kind);
	double maxrt = c >= 0 ? j->ext->op[c].runtime_s : 0;

	for (size_t i = 0; c < 0 && i < j->ext->n; i++)
		if (j->ext->op[i].runtime_s > maxrt)
			maxrt = j->ext->op[i].runtime_s;
	j->ext_end_ns = t1;
	j->ext_start_ns = maxrt > 0 && (uint64_t)(maxrt * 1e9) < t1 - t0 ?
	    t1 - (uint64_t)(maxrt * 1e9) : t0;
}

/* Steps: the command line, the run, the kept output tail, the parse and
 * the times. */
int
ext_run(struct bench_job *j)
{
	char real[PATH_MAX], *out = NULL;
	struct strvec av = { 0 };
	uint64_t t0, t1;
	int rc = -1, st;

	j->ext_start_ns = j->ext_end_ns = bench_job_now_ns(j);
	if (j->p.kind != BK_FIO && j->p.node_index != 0)
		return 0;
	if (realpath(j->p.dir, real) == NULL) {
		snprintf(j->err, sizeof(j->err), "%s: %s: %s", j->node, j->p.dir, strerror(errno));
		return -1;
	}
	if (j->p.kind == BK_FIO)
		fio_argv(j, real, &av);
	else if (ior_mdtest_argv(j, real, &av) < 0)
		goto out;
	t0 = bench_job_now_ns(j);	/* not the wall clock: it may be stepped meanwhile */
	st = run_tool(j, av.v, &out);
	t1 = bench_job_now_ns(j);
	if (out) {
		size_t n = strlen(out);
		j->ext_output = xstrdup(n > EXT_OUT_SEND ? out + n - EXT_OUT_SEND : out);
	}
	if (st < 0)
		goto out;
	if (st != 0) {
		snprintf(j->err, sizeof(j->err), "%s: %s exited with status %d", j->node, av.v[0], st);
		goto out;
	}
	if (parse_output(j, out) < 0)
		goto out;
	set_times(j, t0, t1);
	rc = 0;
out:
	free(out);
	strvec_free(&av);
	return rc;
}
