/* Regression tests for what fuzzing found (the inputs themselves are kept
 * in tests/fuzz/corpus/TARGET/crash-* and replayed by every fuzz run):
 * - ior: a negative aggregate size in the summary table overflowed the
 *   double -> uint64_t conversion (UBSan);
 * - the agent's loop leaked a request the dispatcher refused (a Pong sent
 *   to the agent): here through a real --stdio session on a pipe, so the
 *   sanitizer pass's leak check sees it;
 * - the play loader freed a pointer into the middle of a string when a
 *   play's description began with blanks (ASan: bad-free);
 * - (found by review) knobd --stdio watched fd 0, its input, for
 *   writability: replies queued behind a full stdout pipe stayed queued. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "testutil.h"
#include "agent.h"
#include "bench.h"
#include "harness.h"
#include "knobctl.h"
#include "play.h"
#include "util.h"
#include "wire.h"

START_TEST(ior_negative_aggregate_size)
{
	static const char txt[] =
	    "Summary of all tests:\n"
	    "Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  "
	    "Mean(OPs)     StdDev    Mean(s) Stonewall(s) Stonewall(MiB) Test# #Tasks tPN reps "
	    "fPP reord reordoff reordrand seed segcnt   blksiz    xsize aggs(MiB)   API RefNum\n"
	    "write        1396.51     681.42    1038.96     357.55    1396.51     681.42    "
	    "1038.96     357.55    0.13975         NA            NA     0      2   2    2   1     "
	    "0        1         0    0      1 67108864  1048576  -811.0 POSIX      0\n"
	    "Finished            : Mon Nov 30 09:33:44 2026\n";
	struct ext_summary s;
	char err[256];

	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(ext_parse_ior_text(txt, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_uint_eq(s.op[0].bytes, 0);	/* clamped, not wrapped */
	ck_assert_uint_eq(s.op[0].ops, 0);
}
END_TEST

START_TEST(refused_request_not_leaked)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Pong pong = KNOB__PONG__INIT;
	char dir[PATH_MAX], state[PATH_MAX + 16];
	int in[2], out[2];
	struct agent_cfg cfg;
	struct agent *a;
	uint8_t *f;
	size_t len;

	cu_subdir(dir, sizeof(dir), "regress");
	snprintf(state, sizeof(state), "%s/state", dir);
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	env.body_case = KNOB__ENVELOPE__BODY_PONG;	/* agents never take a Pong */
	env.pong = &pong;
	ck_assert_int_eq(frame_pack(&env, &f, &len), 0);
	ck_assert_int_eq(write(in[1], f, len), (ssize_t)len);
	free(f);
	close(in[1]);
	/* the session is stdin/stdout: this forked test's own */
	ck_assert_int_eq(dup2(in[0], 0), 0);
	ck_assert_int_eq(dup2(out[1], 1), 1);
	memset(&cfg, 0, sizeof(cfg));
	cfg.stdio = 1;
	cfg.state_dir = state;
	cfg.node_name = "regress";
	cfg.stop_fd = -1;
	a = xcalloc(1, sizeof(*a));
	ck_assert_int_eq(agent_init(a, &cfg), 0);
	ck_assert_int_eq(agent_run_stdio(a), -1);	/* refuses, closes, returns a failure (knobd --stdio exits 1) */
	agent_fini(a);
	free(a);
	{	/* it said why before closing */
		struct conn c;
		Knob__Envelope *got = NULL;

		conn_init(&c, out[0], -1, NULL);
		close(out[1]);
		close(1);
		ck_assert_int_eq(conn_recv_sync(&c, &got, 1000), 1);
		ck_assert_int_eq(got->body_case, KNOB__ENVELOPE__BODY_ERROR);
		ck_assert_ptr_nonnull(strstr(got->error->message, "unexpected message"));
		/* classified on the wire: the controller reads the kind, not the text */
		ck_assert_int_eq(got->error->kind, KNOB__ERROR_KIND__ERROR_KIND_INVALID);
		ck_assert_int_eq(got->error->code, EPROTO);
		knob__envelope__free_unpacked(got, NULL);
		conn_reset(&c);
	}
	ck_assert_int_eq(cu_rm_rf(dir), 0);
}
END_TEST

/* A real knobd --stdio session on two pipes, its stdout 4 KiB (made
 * non-blocking by the test when nonblock): n pings sent at once and
 * answered into it while the test does not read, until it is full (the
 * next Pong, under 128 bytes, no longer fits).  knobd's pid; *rd reads its
 * stdout, *wr writes its stdin, dir (PATH_MAX bytes) is its state
 * directory, made here under cu_base. */
static pid_t
stdio_full(int nonblock, int n, char *dir, int *rd, int *wr)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Ping ping = KNOB__PING__INIT;
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	int in[2], out[2], avail = 0;
	uint8_t *all = NULL, *f;
	size_t len, total = 0;
	uint64_t end;
	pid_t pid;

	cu_subdir(dir, PATH_MAX, "regress");
	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	ck_assert_int_ge(fcntl(out[1], F_SETPIPE_SZ, 4096), 4096);
	if (nonblock)
		ck_assert_int_eq(fcntl(out[1], F_SETFL, O_NONBLOCK), 0);
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	for (int i = 0; i < n; i++) {	/* one write: less than the input pipe holds */
		env.id = (uint64_t)i + 1;
		ck_assert_int_eq(frame_pack(&env, &f, &len), 0);
		all = xrealloc(all, total + len);
		memcpy(all + total, f, len);
		total += len;
		free(f);
	}
	ck_assert_int_lt(total, 60000);
	ck_assert_int_eq(write(in[1], all, total), (ssize_t)total);
	free(all);
	pid = cu_knobd_stdio(bin, dir, in[0], out[1]);
	end = now_mono_ns() + 10000000000ull;
	while (ioctl(out[0], FIONREAD, &avail) == 0 && avail < 4096 - 128 && now_mono_ns() < end)
		usleep(10000);	/* polling a condition with a deadline */
	ck_assert_int_ge(avail, 4096 - 128);
	*rd = out[0];
	*wr = in[1];
	return pid;
}

/* A knobd --stdio whose stdout is a separate, non-blocking pipe: once the
 * test drains the full pipe, every queued Pong must follow (EPOLLOUT on
 * fd 1).  Before, the agent watched fd 0 (a pipe's read end is never
 * writable), and the replies stayed queued until more input came. */
START_TEST(stdio_full_stdout_drains)
{
	Knob__Envelope *got;
	char dir[PATH_MAX];
	int rd, wr, n = 2000, got_n = 0, st;
	uint64_t end;
	struct conn c;
	pid_t pid = stdio_full(1, n, dir, &rd, &wr);

	/* drained, the rest follows at once (milliseconds here); before, it
	 * trickled out a pipeful per timer tick, 4 KiB a second at best */
	ck_assert_int_eq(fcntl(rd, F_SETFL, O_NONBLOCK), 0);	/* conn reads to EAGAIN */
	conn_init(&c, rd, -1, NULL);
	end = now_mono_ns() + 5000000000ull;
	while (got_n < n && now_mono_ns() < end && conn_recv_sync(&c, &got, 5000) == 1) {
		ck_assert_int_eq(got->body_case, KNOB__ENVELOPE__BODY_PONG);
		ck_assert_uint_eq(got->id, (uint64_t)got_n + 1);
		knob__envelope__free_unpacked(got, NULL);
		got_n++;
	}
	if (got_n < n)
		kill(pid, SIGKILL);
	ck_assert_msg(got_n == n, "%d of %d replies came out of a drained stdout in 5 s", got_n, n);
	close(wr);	/* end of the session: the agent exits 0 */
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "knobd --stdio status %#x", st);
	conn_reset(&c);
	ck_assert_int_eq(cu_rm_rf(dir), 0);
}
END_TEST

/* The same with a blocking stdout pipe, as sshd gives an exec channel: the
 * agent makes it non-blocking itself, so a reader that stopped reading
 * does not hold its loop in write(2): SIGTERM still ends it.  Before, it
 * stayed in write() until someone read. */
START_TEST(stdio_stdout_full_sigterm)
{
	char dir[PATH_MAX];
	int rd, wr, st = 0, r = 0;
	uint64_t end;
	pid_t pid = stdio_full(0, 2000, dir, &rd, &wr);

	kill(pid, SIGTERM);
	end = now_mono_ns() + 5000000000ull;
	while ((r = waitpid(pid, &st, WNOHANG)) == 0 && now_mono_ns() < end)
		usleep(10000);	/* polling a condition with a deadline */
	if (r == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	ck_assert_msg(r == pid, "knobd --stdio did not stop on SIGTERM with its stdout full");
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "knobd --stdio status %#x", st);
	close(rd);
	close(wr);
	ck_assert_int_eq(cu_rm_rf(dir), 0);
}
END_TEST

/* A knobd --stdio session on blocking pipes (sshd's exec channel): the
 * agent makes its fds non-blocking for the session and gives them their
 * flags back when it ends, since the open files are shared with whoever
 * started it (a shell that finds its terminal or pipe non-blocking sees
 * EAGAIN). */
START_TEST(stdio_flags_restored)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT, *got = NULL;
	Knob__Ping ping = KNOB__PING__INIT;
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	char dir[PATH_MAX];
	int in[2], out[2], keep_in, keep_out, st;
	struct conn c;
	uint8_t *f;
	size_t len;
	pid_t pid;

	cu_subdir(dir, sizeof(dir), "regress");
	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	keep_in = fcntl(in[0], F_DUPFD_CLOEXEC, 3);	/* the same open files as knobd's */
	keep_out = fcntl(out[1], F_DUPFD_CLOEXEC, 3);
	ck_assert_int_ge(keep_in, 0);
	ck_assert_int_ge(keep_out, 0);
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	env.id = 7;
	ck_assert_int_eq(frame_pack(&env, &f, &len), 0);
	ck_assert_int_eq(write(in[1], f, len), (ssize_t)len);
	free(f);
	pid = cu_knobd_stdio(bin, dir, in[0], out[1]);
	conn_init(&c, out[0], -1, NULL);
	ck_assert_int_eq(conn_recv_sync(&c, &got, 10000), 1);
	ck_assert_int_eq(got->body_case, KNOB__ENVELOPE__BODY_PONG);
	knob__envelope__free_unpacked(got, NULL);
	close(in[1]);	/* end of the session */
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "knobd --stdio status %#x", st);
	ck_assert_msg(!(fcntl(keep_in, F_GETFL) & O_NONBLOCK), "stdin left non-blocking");
	ck_assert_msg(!(fcntl(keep_out, F_GETFL) & O_NONBLOCK), "stdout left non-blocking");
	close(keep_in);
	close(keep_out);
	conn_reset(&c);
	ck_assert_int_eq(cu_rm_rf(dir), 0);
}
END_TEST

START_TEST(play_description_leading_blank)
{
	static const char cluster[] = "<cluster><node name=\"n1\"/></cluster>\n";
	static const char play[] = "<?xml version=\"1.0\"?>\n<play name=\"p\" nodes=\"n1\">\n"
	    "  <description>\n\t  blanks first.  </description>\n"
	    "  <verify profile=\"hpc-storage-base\"/>\n</play>\n";
	char dir[PATH_MAX], cl[PATH_MAX + 16], pf[PATH_MAX + 16], err[1024];
	struct strvec errs = { 0 };
	struct ctl ctl;
	struct play *pl;

	cu_subdir(dir, sizeof(dir), "regress");
	snprintf(cl, sizeof(cl), "%s/cluster.xml", dir);
	snprintf(pf, sizeof(pf), "%s/p.xml", dir);
	ck_assert_int_eq(write_file_atomic(cl, cluster, strlen(cluster), 0644), 0);
	ck_assert_int_eq(write_file_atomic(pf, play, strlen(play), 0644), 0);
	memset(&ctl, 0, sizeof(ctl));
	ctl.inv = inventory_load(cl, err, sizeof(err));
	ck_assert_msg(ctl.inv != NULL, "%s", err);
	pl = play_load(&ctl, pf, NULL, &errs);
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.v[i]);
	ck_assert_ptr_nonnull(pl);
	ck_assert_str_eq(pl->description, "blanks first.");
	play_free(pl);	/* the crash was here */
	strvec_free(&errs);
	inventory_free(ctl.inv);
	ck_assert_int_eq(cu_rm_rf(dir), 0);
}
END_TEST

/* write_file_atomic (the journal, the TLS ticket cache, ca.crl) writes a
 * new file of a random name: a symlink someone put at the name it used
 * to use, PATH.tmp.PID, is not followed.  Before, the open truncated
 * and wrote the symlink's target (found by review). */
START_TEST(atomic_write_no_symlink)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], trap[PATH_MAX + 48], victim[PATH_MAX + 16];

	cu_subdir(dir, sizeof(dir), "regress");
	snprintf(path, sizeof(path), "%s/tls-tickets", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(trap, sizeof(trap), "%s.tmp.%ld", path, (long)getpid());
	ck_assert_int_eq(write_file_atomic(victim, "keep\n", 5, 0644), 0);
	ck_assert_int_eq(symlink(victim, trap), 0);
	ck_assert_int_eq(write_file_atomic(path, "secret\n", 7, 0600), 0);
	ck_assert_str_eq(cu_readf("%s", victim), "keep");
	ck_assert_str_eq(cu_readf("%s", path), "secret");
	ck_assert_int_eq(cu_count_entries(dir), 3);	/* no temp file left */
	ck_assert_int_eq(cu_rm_rf(dir), 0);
}
END_TEST

static Suite *
regress_suite(void)
{
	Suite *s = suite_create("regress");
	TCase *tc = tcase_create("regress");

	/* temp dirs under cu_base: removed by the runner, also after a failure */
	tcase_add_unchecked_fixture(tc, cu_base_setup, cu_base_teardown);

	tcase_add_test(tc, ior_negative_aggregate_size);
	tcase_add_test(tc, refused_request_not_leaked);
	tcase_add_test(tc, play_description_leading_blank);
	tcase_add_test(tc, stdio_full_stdout_drains);
	tcase_add_test(tc, stdio_stdout_full_sigterm);
	tcase_add_test(tc, stdio_flags_restored);
	tcase_add_test(tc, atomic_write_no_symlink);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cu_run(regress_suite());
}
