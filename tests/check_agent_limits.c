/* Sizes that come from a request are errors sent back to the peer, never
 * the end of the agent: one real knobd in a network namespace
 * (tests/harness.h), knobctl in the controller namespace.  A phase whose
 * buffers cannot fit in the node's memory is refused by the agent with
 * the reason; the same agent then runs a normal phase and answers ping. */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "harness.h"
#include "testutil.h"
#include "util.h"

static struct harness h;

/* Stop the agent and remove the harness's temp dir (the data with it). */
static void
teardown(void)
{
	harness_stop(&h);
}

static int
dir_empty(void *dir)
{
	return cu_count_entries(dir) == 0;
}

/* Start one agent with a benchmark directory; run the bench ARGS that
 * must be refused for their buffers; then the same agent must still run a
 * normal phase and answer ping. */
static void
refused_then_serving(const char *args)
{
	char data[PATH_MAX], *out = NULL, *err = NULL;
	json_object *doc, *p;
	int rc;

	ck_assert_msg(harness_start(&h, 1, 1) == 0, "harness start failed");
	snprintf(data, sizeof(data), "%s/data", h.tmp);
	ck_assert_int_eq(mkdir(data, 0755), 0);
	rc = harness_knobctl(&h, &out, &err, "bench %s -w node01 --dir %s", args, data);
	fprintf(stderr, "bench %s -> %d\n%s%s", args, rc, out ? out : "", err ? err : "");
	ck_assert_int_ne(rc, 0);
	ck_assert_msg(strstr(out ? out : "", "more than half of this node's memory") ||
	    strstr(err ? err : "", "more than half of this node's memory"),
	    "the agent's reason is not reported");
	free(out);
	free(err);
	ck_assert_msg(harness_log_has(&h, 0, "fatal") == 0, "the agent logged a fatal error");
	/* the agent removes the work directory after it answered: wait for it */
	ck_assert_msg(cu_wait(dir_empty, data, 30) >= 0, "files left in %s", data);

	doc = harness_knobctl_json(&h, &rc, "--json bench seq-write -w node01 --dir %s "
	    "--threads 2 --bs 64k --size 1m", data);
	ck_assert_ptr_nonnull(doc);
	ck_assert_int_eq(rc, 0);
	p = cu_phase(doc, 0);
	ck_assert_str_eq(cu_str(p, "status"), "ok");
	ck_assert_int_eq(cu_int(p, "bytes"), 2 << 20);
	json_object_put(doc);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
}

/* 16 threads x 4096 queued 64 MiB blocks (4 TiB of buffers): every size
 * is within its own limit, together they are absurd for any node. */
START_TEST(absurd_queue_refused)
{
	refused_then_serving("seq-write --threads 16 --bs 64m --size 64m --iodepth 4096 "
	    "--ioengine libaio");
}
END_TEST

/* Metadata: 4096 threads each with a 64 MiB write buffer (256 GiB). */
START_TEST(absurd_md_write_refused)
{
	refused_then_serving("md-create --threads 4096 --files 1 --write-size 64m");
}
END_TEST

/* SIGHUP, sent out of the habit of reloading, used to stop knobd with exit
 * status 0, which Restart=on-failure leaves down.  The agent says there is
 * nothing to reload and goes on serving. */
START_TEST(sighup_keeps_serving)
{
	ck_assert_msg(harness_start(&h, 1, 1) == 0, "harness start failed");
	ck_assert_int_eq(kill(h.node[0].pid, SIGHUP), 0);
	ck_assert_int_eq(harness_wait_log(&h, 0, "SIGHUP: nothing to reload", 10), 0);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
	ck_assert(!cu_pid_gone(h.node[0].pid));
	ck_assert(!harness_log_has(&h, 0, "shutting down"));
}
END_TEST

/* knobd --stdio fed text (data, then end of input); its exit status. */
static int
stdio_session(const char *data, size_t len)
{
	int in[2], out[2];
	pid_t pid;
	char buf[4096];

	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);	/* knobd holds no end of ours */
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	pid = cu_knobd_stdio(h.bin, h.node[0].state_dir, in[0], out[1]);
	ck_assert_int_eq(write(in[1], data, len), (ssize_t)len);
	close(in[1]);
	while (read(out[0], buf, sizeof(buf)) > 0)
		;
	close(out[0]);
	return cu_reap(pid);
}

/* A --stdio session dropped for a malformed frame (a length over the
 * limit) used to end with exit status 0, as a clean one does; now 1.
 * End of input at once is still a clean end (0). */
START_TEST(stdio_protocol_error_exit_status)
{
	static const char bad[] = "\xff\xff\xff\xffxxxx";

	ck_assert_msg(harness_start(&h, 1, 0) == 0, "harness start failed");
	ck_assert_int_eq(stdio_session(bad, sizeof(bad) - 1), 1);
	ck_assert_int_eq(stdio_session("", 0), 0);
}
END_TEST

/* A lease of 4294967 s (lease_s * 1000 wraps 32 bits; twice that in ms is
 * no TCP_USER_TIMEOUT, half of it no TCP_KEEPIDLE) is clamped to a day:
 * the phase runs, and the agent sets its socket options without a
 * complaint. */
START_TEST(huge_lease_clamped)
{
	char data[PATH_MAX];

	ck_assert_msg(harness_start(&h, 1, 1) == 0, "harness start failed");
	snprintf(data, sizeof(data), "%s/data", h.tmp);
	ck_assert_int_eq(mkdir(data, 0755), 0);
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "bench seq-write -w node01 --dir %s "
	    "--threads 1 --bs 64k --size 1m --lease 4294967", data), 0);
	ck_assert_msg(!harness_log_has(&h, 0, "keepalive/TCP_USER_TIMEOUT"),
	    "the agent could not set the lease's socket options");
	ck_assert_int_eq(harness_knobctl(&h, NULL, NULL, "ping -w node01"), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("agent_limits");
	TCase *tc = cu_tcase("limits", NULL, teardown, 120);

	tcase_add_test(tc, absurd_queue_refused);
	tcase_add_test(tc, absurd_md_write_refused);
	tcase_add_test(tc, sighup_keeps_serving);
	tcase_add_test(tc, stdio_protocol_error_exit_status);
	tcase_add_test(tc, huge_lease_clamped);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
