/* Helpers the Check test programs share (one helper in one place): JSON
 * lookups that fail the test when a key is missing, temp directories,
 * writing and reading fixture files, running shell commands and children,
 * waiting on a condition with a deadline, and running a suite.  The
 * namespace/knobd harness (harness.h) builds on these. */
#ifndef KNOB_TESTUTIL_H
#define KNOB_TESTUTIL_H

#include <stdint.h>
#include <sys/types.h>
#include <check.h>
#include <json-c/json.h>

/* o[k]; a failed check when there is none. */
json_object *cu_get(json_object *o, const char *k);
int64_t cu_int(json_object *o, const char *k);
double cu_num(json_object *o, const char *k);
const char *cu_str(json_object *o, const char *k);
/* doc.phases[i] */
json_object *cu_phase(json_object *doc, size_t i);
/* Remove every original's "ident" from the tune journal at path (a
 * journal from before identities); a failed check on error. */
void cu_journal_strip_idents(const char *path);

/* Make "/tmp/knob-test.kt<pid>.NAME.XXXXXX" into buf; exits the program when it
 * cannot (usable from an unchecked fixture). */
void cu_mkdtemp(char *buf, size_t len, const char *name);
/* The per-program temp dir, as an unchecked fixture pair: made and removed
 * in the runner process, so it goes even when a test fails (a failing
 * assertion ends the forked test before any checked teardown).  It is
 * "/tmp/knob-test.kt<pid>.PROGRAM.XXXXXX"; cu_base() names it. */
void cu_base_setup(void);
void cu_base_teardown(void);
const char *cu_base(void);
/* A fresh directory "cu_base()/PREFIX.XXXXXX" into buf (checked fixtures). */
void cu_subdir(char *buf, size_t len, const char *prefix);
/* Remove a directory tree the test made (no symlinks followed). 0 or -1. */
int cu_rm_rf(const char *path);
/* mkdir -p of the directories above path; a failed check on error. */
void cu_mkparents(const char *path);
/* Write the formatted text to path (parents made) atomically with mode;
 * a failed check on error. */
void cu_write(const char *path, mode_t mode, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* cu_write of DIR/REL (a leading / of rel is not doubled); the path, in a
 * static buffer the next call overwrites. */
const char *cu_write_at(const char *dir, const char *rel, mode_t mode, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The whole file (at most 8 MiB), malloc'd; a failed check when unreadable. */
char *cu_slurp(const char *path);
/* 1 when the file at path (a log being written) holds s; 0 when it does
 * not, or cannot be read yet: for the predicates cu_wait polls. */
int cu_file_has(const char *path, const char *s);
/* A small (sysfs) file at the formatted path, trailing newline stripped,
 * in one of 4 static buffers used in turn; "<unreadable>" when it cannot
 * be read. */
const char *cu_readf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The number a small file starts with ("/proc/uptime", "/proc/loadavg");
 * a failed check when it cannot be read. */
double cu_read_num(const char *path);
/* Entries below dir (recursively); 0 when it is gone. */
int cu_count_entries(const char *dir);
/* Some path matches the glob pattern (a char *; a cu_wait condition). */
int cu_glob_exists(void *pattern);
/* Entries directly in dir (no . and ..); -1 when it is gone. */
int cu_dir_size(const char *dir);
/* Sockets open in process pid now; -1 once it is gone. */
int cu_count_sockets(pid_t pid);

/* A frame body of exactly len bytes (at least 16), malloc'd: an Envelope
 * (version 1) whose VerifyRequest is nothing but Settings, empty ones of 2
 * wire bytes each, for which protobuf-c allocates a struct each.  A failed
 * check for the few lengths its varint cannot meet (2^21 + 7, ...). */
uint8_t *cu_empty_settings_body(size_t len);

/* A 16 MiB DIR/loop.img attached to a free loop device (losetup -f); its
 * name ("loop7") into dev.  0 or -1 (dev ""). */
int cu_loop_attach(const char *dir, char *dev, size_t len);
/* Detach loop device dev ("loop7"); nothing when dev is "". */
void cu_loop_detach(const char *dev);

/* Run a shell command; stdout and stderr into *out (malloc'd, "" when
 * silent); the exit status, 128+signal when killed. */
int cu_sh_out(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Preload libfaketime (with FAKETIME_* set by the caller) into the
 * programs started from here on; under the sanitizer pass ASan is told
 * not to insist on coming first.  cu_faketime_end undoes both. */
void cu_faketime_begin(void);
void cu_faketime_end(void);
/* Wait for child pid; its exit status, -1 when it did not exit normally. */
int cu_reap(pid_t pid);
/* pid has ended (gone, or a zombie waiting for init to reap it) */
int cu_pid_gone(pid_t pid);
/* Fork BIN/knobd --stdio --state-dir STATE with fd 0 on in_rd and fd 1 on
 * out_wr (as an SSH exec channel runs it); closes both in the parent.
 * Its pid. */
pid_t cu_knobd_stdio(const char *bin, const char *state, int in_rd, int out_wr);
/* The same with --sysroot ROOT (NULL: none). */
pid_t cu_knobd_stdio_root(const char *bin, const char *state, const char *root, int in_rd,
    int out_wr);
/* Poll cond(arg) every 50 ms until it holds or seconds pass: the seconds it
 * took, -1 when it never held. */
double cu_wait(int (*cond)(void *), void *arg, double seconds);

/* A test case with a checked fixture and a timeout (seconds). */
TCase *cu_tcase(const char *name, void (*setup)(void), void (*teardown)(void), int timeout);
/* Run the suite (forking), free it; 0 when every test passed, else 1. */
/* Remove what test processes that are gone left: /tmp/knob-test.kt<pid>.*
 * and /dev/shm/knob-test.kt<pid>.*, the mounts below them unmounted and
 * the loop devices backed by them detached first (Check's child _exits
 * on a failed assertion, without its teardown). */
void cu_reap_stale(void);
/* Run by cu_run after a failed test instead of cu_reap_stale (the
 * harness sets it to also stop a failed test's agents). */
extern void (*cu_reap_hook)(void);
int cu_run(Suite *s);
/* cu_run without forking per test (fixtures set up once must be torn down
 * by their own teardown). */
int cu_run_nofork(Suite *s);

#endif
