/* Helpers shared by the Check test programs (see testutil.h). */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "testutil.h"
#include "util.h"

json_object *
cu_get(json_object *o, const char *k)
{
	json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, k, &v), "no '%s' in %.600s", k,
	    json_object_to_json_string(o));
	return v;
}

int64_t cu_int(json_object *o, const char *k) { return json_object_get_int64(cu_get(o, k)); }
double cu_num(json_object *o, const char *k) { return json_object_get_double(cu_get(o, k)); }
const char *cu_str(json_object *o, const char *k) { return json_object_get_string(cu_get(o, k)); }

/* Strip the identities of a journal's originals (testutil.h). */
void
cu_journal_strip_idents(const char *path)
{
	json_object *j, *arr;

	ck_assert_ptr_nonnull(j = json_object_from_file(path));
	ck_assert(json_object_object_get_ex(j, "originals", &arr));
	for (size_t i = 0; i < json_object_array_length(arr); i++)
		json_object_object_del(json_object_array_get_idx(arr, i), "ident");
	ck_assert_int_eq(json_object_to_file_ext(path, j, JSON_C_TO_STRING_PRETTY), 0);
	json_object_put(j);
}

json_object *
cu_phase(json_object *doc, size_t i)
{
	return json_object_array_get_idx(cu_get(doc, "phases"), i);
}

void
cu_mkdtemp(char *buf, size_t len, const char *name)
{
	/* named after this process, as the harness's are, so that a run
	 * killed by a signal (no teardown) leaves nothing the next run's
	 * reapers (cu_reap_stale, run-lib.sh) do not take away */
	snprintf(buf, len, "/tmp/knob-test.kt%ld.%s.XXXXXX", (long)getpid(), name);
	if (mkdtemp(buf) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
}

/* nftw callback: remove one entry, children first. */
static int
rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

int
cu_rm_rf(const char *path)
{
	if (path == NULL || path[0] == '\0' || strcmp(path, "/") == 0)
		return -1;
	return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The directory of cu_base_setup. */
static char base_dir[PATH_MAX];

void
cu_base_setup(void)
{
	const char *name = program_invocation_short_name;

	if (strncmp(name, "check_", 6) == 0)
		name += 6;
	cu_mkdtemp(base_dir, sizeof(base_dir), name);
}

/* Detach every mount below dir, deepest first (a failed test may have
 * left a tmpfs mounted in its temp dir): /proc/self/mounts lists a mount
 * after the one it is on, so the list is read in reverse. */
static void
unmount_below(const char *dir)
{
	struct strvec mnts = { 0 };
	char line[PATH_MAX * 2], path[PATH_MAX];
	size_t n = strlen(dir);
	FILE *f = fopen("/proc/self/mounts", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %4095s", path) == 1 && strncmp(path, dir, n) == 0 &&
		    path[n] == '/')
			strvec_push(&mnts, path);
	if (f)
		fclose(f);
	for (size_t i = mnts.n; i-- > 0;)
		if (umount2(mnts.v[i], MNT_DETACH) < 0)
			fprintf(stderr, "could not unmount %s: %s\n", mnts.v[i], strerror(errno));
	strvec_free(&mnts);
}

/* Detach the loop devices whose backing file is path or lies below it. */
static void
loops_below(const char *path)
{
	FILE *p = popen("losetup -l -n -O NAME,BACK-FILE 2>/dev/null", "r");
	char line[PATH_MAX + 64], name[64], file[PATH_MAX];
	size_t n = strlen(path);

	while (p && fgets(line, sizeof(line), p))
		if (sscanf(line, "%63s %4095[^\n]", name, file) == 2 &&
		    strncmp(name, "/dev/", 5) == 0 && strncmp(file, path, n) == 0 &&
		    (file[n] == '\0' || file[n] == '/' || file[n] == ' '))
			cu_loop_detach(name + 5);
	if (p)
		pclose(p);
}

/* The pid in a leftover's name (".../knob-test.kt<pid>..."), or 0. */
static long
leftover_pid(const char *path)
{
	const char *k = strstr(path, "knob-test.kt");

	return k ? strtol(k + strlen("knob-test.kt"), NULL, 10) : 0;
}

void
cu_reap_stale(void)
{
	glob_t g = { 0 };
	int r;

	if (getenv("KNOB_KEEP_TMP") != NULL)
		return;
	r = glob("/tmp/knob-test.kt*.*", 0, NULL, &g);
	glob("/dev/shm/knob-test.kt*.*", r == 0 ? GLOB_APPEND : 0, NULL, &g);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		long pid = leftover_pid(g.gl_pathv[i]);

		if (pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		unmount_below(g.gl_pathv[i]);
		loops_below(g.gl_pathv[i]);
		if (cu_rm_rf(g.gl_pathv[i]) < 0)
			fprintf(stderr, "could not remove %s\n", g.gl_pathv[i]);
	}
	globfree(&g);
}

void
cu_base_teardown(void)
{
	if (base_dir[0] != '\0')
		unmount_below(base_dir);
	if (base_dir[0] != '\0' && cu_rm_rf(base_dir) < 0)
		fprintf(stderr, "could not remove %s\n", base_dir);
	base_dir[0] = '\0';
}

const char *cu_base(void) { return base_dir; }

void
cu_subdir(char *buf, size_t len, const char *prefix)
{
	snprintf(buf, len, "%s/%s.XXXXXX", base_dir, prefix);
	ck_assert_msg(mkdtemp(buf) != NULL, "mkdtemp %s: %s", buf, strerror(errno));
}

void
cu_mkparents(const char *path)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		ck_assert_msg(mkdir(tmp, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", tmp,
		    strerror(errno));
		*p = '/';
	}
}

/* vasprintf the text and write it to path, parents made. */
static void
vwrite(const char *path, mode_t mode, const char *fmt, va_list ap)
{
	char *text = NULL;
	int n = vasprintf(&text, fmt, ap);

	ck_assert_int_ge(n, 0);
	cu_mkparents(path);
	ck_assert_msg(write_file_atomic(path, text, (size_t)n, mode) == 0, "write %s", path);
	free(text);
}

void
cu_write(const char *path, mode_t mode, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwrite(path, mode, fmt, ap);
	va_end(ap);
}

const char *
cu_write_at(const char *dir, const char *rel, mode_t mode, const char *fmt, ...)
{
	static char path[PATH_MAX];
	va_list ap;

	snprintf(path, sizeof(path), "%s/%s", dir, rel + (rel[0] == '/'));
	va_start(ap, fmt);
	vwrite(path, mode, fmt, ap);
	va_end(ap);
	return path;
}

char *
cu_slurp(const char *path)
{
	char *buf = NULL;

	ck_assert_msg(read_file_bounded(path, 8 << 20, &buf, NULL) == 0, "read %s", path);
	return buf;
}

int
cu_file_has(const char *path, const char *s)
{
	char *buf = NULL;
	int has = read_file_bounded(path, 8 << 20, &buf, NULL) == 0 && buf &&
	    strstr(buf, s) != NULL;

	free(buf);
	return has;
}

const char *
cu_readf(const char *fmt, ...)
{
	static char buf[4][4096];
	static unsigned next;
	char path[PATH_MAX], *b = buf[next++ % 4];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return read_small_file(path, b, sizeof(buf[0])) < 0 ? "<unreadable>" : b;
}

double
cu_read_num(const char *path)
{
	char buf[256];

	ck_assert_msg(read_small_file(path, buf, sizeof(buf)) >= 0, "read %s", path);
	return strtod(buf, NULL);
}

int
cu_count_entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char sub[PATH_MAX + 256];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		if (de->d_type == DT_DIR) {
			snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
			n += cu_count_entries(sub);
		}
	}
	closedir(d);
	return n;
}

int
cu_glob_exists(void *pattern)
{
	glob_t g;
	int found = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;

	globfree(&g);
	return found;
}

int
cu_dir_size(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

int
cu_count_sockets(pid_t pid)
{
	char dir[64], path[64 + 256], link[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		ssize_t l;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if ((l = readlink(path, link, sizeof(link) - 1)) > 0) {
			link[l] = '\0';
			n += strncmp(link, "socket:", 7) == 0;
		}
	}
	closedir(d);
	return n;
}

/* Bytes of v as a protobuf varint at p (NULL: only count them). */
static size_t
put_varint(uint8_t *p, size_t v)
{
	size_t n = 0;

	for (; v >= 0x80; v >>= 7, n++)
		if (p)
			p[n] = (uint8_t)(v | 0x80);
	if (p)
		p[n] = (uint8_t)v;
	return n + 1;
}

uint8_t *
cu_empty_settings_body(size_t len)
{
	uint8_t *b;
	size_t v, inner = 0, i;

	/* version = 1, verify (field 16, length-delimited) = inner bytes */
	for (v = 1; v <= 5; v++)
		if (len >= 4 + v && put_varint(NULL, (inner = len - 4 - v)) == v)
			break;
	ck_assert_msg(v <= 5 && inner >= 5, "no body of %zu bytes", len);
	b = malloc(len);
	ck_assert_ptr_nonnull(b);
	memcpy(b, "\x08\x01\x82\x01", 4);
	i = 4 + put_varint(b + 4, inner);
	if (inner % 2) {	/* an odd length starts with Setting{driver: "x"} */
		memcpy(b + i, "\x12\x03\x0a\x01x", 5);
		i += 5;
	}
	for (; i < len; i += 2) {
		b[i] = 0x12;	/* settings (field 2), length-delimited */
		b[i + 1] = 0;	/* of length 0: an empty Setting */
	}
	return b;
}

int
cu_loop_attach(const char *dir, char *dev, size_t len)
{
	char cmd[PATH_MAX * 2 + 64];
	FILE *p;
	int rc = -1;

	dev[0] = '\0';
	snprintf(cmd, sizeof(cmd), "truncate -s 16M '%s/loop.img' && losetup -f --show "
	    "'%s/loop.img'", dir, dir);
	if ((p = popen(cmd, "r")) == NULL)
		return -1;
	if (fgets(cmd, sizeof(cmd), p) != NULL && strncmp(cmd, "/dev/", 5) == 0) {
		snprintf(dev, len, "%s", strtrim(cmd) + 5);
		rc = 0;
	}
	pclose(p);
	return rc;
}

void
cu_loop_detach(const char *dev)
{
	char cmd[128];

	if (dev[0] == '\0')
		return;
	snprintf(cmd, sizeof(cmd), "losetup -d /dev/%s", dev);
	if (system(cmd) != 0)
		fprintf(stderr, "could not detach %s\n", dev);
}

int
cu_sh_out(char **out, const char *fmt, ...)
{
	char tmp[] = "/tmp/knob-check-out.XXXXXX", *cmd = NULL, *sh;
	va_list ap;
	int fd, r, n;

	va_start(ap, fmt);
	n = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	fd = mkstemp(tmp);
	ck_assert_int_ge(fd, 0);
	close(fd);
	sh = xasprintf("(%s) >%s 2>&1 </dev/null", cmd, tmp);
	r = system(sh);
	free(sh);
	free(cmd);
	*out = NULL;
	ck_assert_int_eq(read_file_bounded(tmp, 8 << 20, out, NULL), 0);
	unlink(tmp);
	ck_assert_int_ne(r, -1);
	return WIFEXITED(r) ? WEXITSTATUS(r) : 128 + WTERMSIG(r);
}

int
cu_reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* Has pid ended?  An orphan's zombie counts as ended: this machine's
 * init reaps only every second or two, and kill(pid, 0) succeeds on a
 * zombie until then. */
int
cu_pid_gone(pid_t pid)
{
	char path[64], buf[256], *rp;
	FILE *f;
	size_t n;

	if (kill(pid, 0) < 0)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	rp = strrchr(buf, ')');	/* "pid (comm) S ..." */
	return rp == NULL || rp[1] != ' ' || rp[2] == 'Z' || rp[2] == 'X';
}

static char *faketime_asan;	/* ASAN_OPTIONS before cu_faketime_begin */
static int faketime_on;

void
cu_faketime_begin(void)
{
	const char *asan = getenv("ASAN_OPTIONS");
	char env[1024];

	if (!faketime_on) {
		faketime_asan = asan ? xstrdup(asan) : NULL;
		faketime_on = 1;
	}
	snprintf(env, sizeof(env), "%s%sverify_asan_link_order=0", asan ? asan : "",
	    asan ? ":" : "");
	setenv("ASAN_OPTIONS", env, 1);
	setenv("LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1", 1);
}

void
cu_faketime_end(void)
{
	unsetenv("LD_PRELOAD");
	if (!faketime_on)
		return;
	if (faketime_asan)
		setenv("ASAN_OPTIONS", faketime_asan, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(faketime_asan);
	faketime_asan = NULL;
	faketime_on = 0;
}

pid_t
cu_knobd_stdio(const char *bin, const char *state, int in_rd, int out_wr)
{
	return cu_knobd_stdio_root(bin, state, NULL, in_rd, out_wr);
}

pid_t
cu_knobd_stdio_root(const char *bin, const char *state, const char *root, int in_rd,
    int out_wr)
{
	char knobd[PATH_MAX];
	pid_t pid;

	snprintf(knobd, sizeof(knobd), "%s/knobd", bin);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(in_rd, 0);
		dup2(out_wr, 1);
		if (root != NULL)
			execl(knobd, "knobd", "--stdio", "--state-dir", state, "--sysroot", root,
			    (char *)NULL);
		else
			execl(knobd, "knobd", "--stdio", "--state-dir", state, (char *)NULL);
		_exit(127);
	}
	close(in_rd);
	close(out_wr);
	return pid;
}

double
cu_wait(int (*cond)(void *), void *arg, double seconds)
{
	uint64_t t0 = now_mono_ns();

	for (;;) {
		double t = (double)(now_mono_ns() - t0) / 1e9;

		if (cond(arg))
			return t;
		if (t > seconds)
			return -1;
		usleep(50000);
	}
}

TCase *
cu_tcase(const char *name, void (*setup)(void), void (*teardown)(void), int timeout)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, timeout);
	return tc;
}

void (*cu_reap_hook)(void);

/* Run s with the given fork mode and free it; 0 when all passed.  After
 * a failure, what the failed tests left is removed (cu_reap_hook, else
 * cu_reap_stale). */
static int
run_mode(Suite *s, enum fork_status mode)
{
	SRunner *sr = srunner_create(s);
	int nf;

	srunner_set_fork_status(sr, mode);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	if (nf > 0)	/* a failed test's child exits without its teardown */
		(cu_reap_hook ? cu_reap_hook : cu_reap_stale)();
	srunner_free(sr);
	return nf ? 1 : 0;
}

int cu_run(Suite *s) { return run_mode(s, CK_FORK_GETENV); }
int cu_run_nofork(Suite *s) { return run_mode(s, CK_NOFORK); }
