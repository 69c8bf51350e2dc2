/* The canary step end to end: three real knobd agents in network
 * namespaces, knobctl play in the controller namespace, a real profile on
 * a real loop device that the test creates, formats (ext4) and mounts; the
 * canary (node01) benchmarks on that file system with O_DIRECT, so the
 * device's max_sectors_kb really changes its numbers (1 MiB requests split
 * into 4 KiB ones run several times slower through the loop driver).
 *
 * Loop devices are global, so the per-node state that tells which nodes a
 * profile reached is net.core.somaxconn, which every network namespace has
 * for itself; the profile sets both.
 *  - canary_rolls_out: the device starts slow (non-default); --check
 *    claims no verdict and changes nothing; the profile makes it fast, so
 *    no point is worse: the profile goes to the rest in serial batches of
 *    one, and every node ends up with it;
 *  - canary_worse_rolls_back: the device starts at a non-default fast
 *    value; the profile makes it slow, points are worse (Welch at 95 %):
 *    the canary is rolled back (the original values come back), the rest
 *    is never touched, the play exits 1 with the verdict table as the
 *    reason;
 *  - canary_covers_every_node: a one-node play, so the canary is every
 *    live node: with no point worse there is no one left to roll out to,
 *    the step succeeds and the canary keeps the profile. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "testutil.h"
#include "harness.h"
#include "util.h"

static struct harness h;
static char loopdev[32];	/* "loop7", "" when none */
static char mnt[PATH_MAX];	/* the ext4 on it, "" when not mounted */
static char data[PATH_MAX + 16];
static char img[PATH_MAX];	/* the loop device's backing file, "" none */

/* Unmount and detach what the test made; also at exit. */
static void
undo_loop(void)
{
	if (mnt[0] && harness_sh("umount '%s'", mnt) != 0)
		fprintf(stderr, "could not unmount %s\n", mnt);
	mnt[0] = '\0';
	if (loopdev[0] && harness_sh("losetup -d /dev/%s", loopdev) != 0)
		fprintf(stderr, "could not detach %s\n", loopdev);
	loopdev[0] = '\0';
	if (img[0])
		unlink(img);
	img[0] = '\0';
}

static void
setup(void)
{
	char cmd[PATH_MAX + 128];
	FILE *p;

	ck_assert_msg(harness_start(&h, 3, 0) == 0, "harness start failed");
	/* backed by RAM (tmpfs): the device's own queue is what differs */
	snprintf(img, sizeof(img), "/dev/shm/knob-test.kt%d.canary.img", (int)getpid());
	snprintf(cmd, sizeof(cmd), "truncate -s 400M %s && losetup -f --show %s", img, img);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	if (fgets(cmd, sizeof(cmd), p) != NULL && strncmp(strtrim(cmd), "/dev/loop", 9) == 0)
		snprintf(loopdev, sizeof(loopdev), "%s", cmd + 5);
	pclose(p);
	ck_assert_msg(loopdev[0] != '\0', "no loop device");
	atexit(undo_loop);
	ck_assert_int_eq(harness_sh("mkfs.ext4 -q -F /dev/%s", loopdev), 0);
	snprintf(mnt, sizeof(mnt), "%s/mnt", h.tmp);
	ck_assert_int_eq(mkdir(mnt, 0755), 0);
	if (harness_sh("mount /dev/%s '%s'", loopdev, mnt) != 0) {
		mnt[0] = '\0';
		ck_abort_msg("cannot mount the loop device");
	}
	snprintf(data, sizeof(data), "%s/data", mnt);
	ck_assert_int_eq(mkdir(data, 0755), 0);
	/* the agents start after the mount: each copies the mount table */
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(harness_agent_start(&h, i), 0);
	setenv("KNOB_PROFILE_PATH", h.tmp, 1);
}

/* The agents first (they hold copies of the mount), then the file system,
 * then the rest. */
static void
teardown(void)
{
	for (int i = 0; i < h.n; i++)
		if (h.node[i].pid)
			harness_agent_stop(&h, i, SIGTERM);
	undo_loop();
	harness_stop(&h);
}

#define write_file(name, ...) cu_write_at(h.tmp, name, 0644, __VA_ARGS__)

/* The loop device's queue attribute, as a number. */
static long
queue_attr(const char *attr)
{
	return harness_sh_int("cat /sys/block/%s/queue/%s", loopdev, attr);
}

/* net.core.somaxconn in node i's namespace. */
static long
somax(int i)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "ip netns exec %s cat /proc/sys/net/core/somaxconn",
	    h.node[i].ns);
	return harness_sh_int("%s", cmd);
}

/* The profile NAME: the loop device's max_sectors_kb and somaxconn. */
static void
profile(const char *name, long max_sectors_kb)
{
	char file[128];

	snprintf(file, sizeof(file), "%s.xml", name);
	write_file(file, "<?xml version=\"1.0\"?>\n<profile name=\"%s\">\n"
	    "  <blockdev device=\"%s\" attr=\"max_sectors_kb\" value=\"%ld\"/>\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"2345\"/>\n</profile>\n", name, loopdev,
	    max_sectors_kb);
}

/* The canary play: node01 is the canary, the rest in batches of one. */
static void
canary_play(const char *prof)
{
	write_file("canary.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"canary-test\" nodes=\"@all\" serial=\"1\">\n"
	    "  <canary profile=\"%s\" canary=\"1\">\n"
	    "    <bench kind=\"seq\" dir=\"%s\" threads=\"1\" bs=\"16m\" size=\"128m\" direct=\"yes\" "
	    "repeat=\"5\"/>\n"
	    "  </canary>\n"
	    "  <verify profile=\"%s\"/>\n</play>\n", prof, data, prof);
}

static json_object *
need(json_object *doc)
{
	ck_assert_msg(doc != NULL, "knobctl printed no JSON (see stderr)");
	return doc;
}

#define get cu_get

/* The active profile node i's agent reports ("" none). */
static char *
active_profile(int i)
{
	json_object *doc;
	char *name;
	int rc;

	doc = need(harness_knobctl_json(&h, &rc, "--json facts -w %s", h.node[i].name));
	ck_assert_int_eq(rc, 0);
	name = xstrdup(json_object_get_string(get(get(json_object_array_get_idx(get(doc, "nodes"),
	    0), "facts"), "active_profile")));
	json_object_put(doc);
	return name;
}

/* No point worse on the canary: rolled out to node02 then node03. */
START_TEST(canary_rolls_out)
{
	char *out = NULL, *b1, *b2, *ap;
	long somax0[3];
	int rc;

	/* slow and not the default (512) */
	ck_assert_int_eq(harness_sh("echo 4 > /sys/block/%s/queue/max_sectors_kb", loopdev), 0);
	for (int i = 0; i < 3; i++) {
		somax0[i] = somax(i);
		ck_assert_int_ne(somax0[i], 2345);
	}
	profile("fast", 1024);
	canary_play("fast");
	/* --check runs no bench: it claims no verdict and changes nothing */
	rc = harness_knobctl_logged(&h, &out, "play %s/canary.xml --check", h.tmp);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_msg(strstr(out, "canary verdict: decided when the benches have run; if no point "
	    "is worse, fast is rolled out to the rest") && !strstr(out, "no point worse"), "%s", out);
	free(out);
	ck_assert_int_eq(queue_attr("max_sectors_kb"), 4);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(somax(i), somax0[i]);
	rc = harness_knobctl_logged(&h, &out, "play %s/canary.xml", h.tmp);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "canary: 1 of 3 node(s)"));
	ck_assert_ptr_nonnull(strstr(out, "canary verdict: no point worse: rolling fast out"));
	ck_assert_ptr_null(strstr(out, " worse\n"));
	/* serial="1": node02 in a batch, then node03 in the next */
	b1 = strstr(out, "batch 1 (node02): knobctl apply fast -w node02");
	b2 = strstr(out, "batch 2 (node03): knobctl apply fast -w node03");
	ck_assert_msg(b1 && b2 && b1 < b2, "%s", out);
	free(out);
	ck_assert_int_eq(queue_attr("max_sectors_kb"), 1024);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(somax(i), 2345);
		ap = active_profile(i);
		ck_assert_str_eq(ap, "fast");
		free(ap);
	}
	/* both runs stored, the canary's baseline and its tuned run */
	{
		json_object *list = need(harness_knobctl_json(&h, &rc, "--json results list"));
		size_t n = json_object_array_length(list);

		ck_assert_uint_eq(n, 2);
		ck_assert_str_eq(json_object_get_string(get(json_object_array_get_idx(list, 0),
		    "label")), "baseline");
		ck_assert_str_eq(json_object_get_string(get(json_object_array_get_idx(list, 1),
		    "label")), "fast");
		json_object_put(list);
	}
	for (int i = 2; i >= 0; i--) {
		rc = harness_knobctl(&h, &out, NULL, "rollback -w %s", h.node[i].name);
		ck_assert_int_eq(rc, 0);
		free(out);
		ck_assert_int_eq(somax(i), somax0[i]);
	}
}
END_TEST

/* Points worse on the canary: it is rolled back, the rest never touched,
 * exit 1 with the verdict table as the reason. */
START_TEST(canary_worse_rolls_back)
{
	char *out = NULL, *ap;
	json_object *doc, *step, *why;
	long somax0[3];
	size_t worse = 0;
	int rc;

	/* fast and not the default (512) */
	ck_assert_int_eq(harness_sh("echo 256 > /sys/block/%s/queue/max_sectors_kb", loopdev), 0);
	ck_assert_int_eq(queue_attr("max_sectors_kb"), 256);
	for (int i = 0; i < 3; i++) {
		somax0[i] = somax(i);
		ck_assert_int_ne(somax0[i], 2345);
	}
	profile("slow", 4);
	canary_play("slow");
	doc = need(harness_knobctl_json(&h, &rc, "--json play %s/canary.xml", h.tmp));
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(json_object_get_string(get(doc, "status")), "stopped");
	step = json_object_array_get_idx(get(doc, "steps"), 0);
	ck_assert_str_eq(json_object_get_string(get(step, "status")), "failed");
	why = get(step, "canary");
	ck_assert_str_eq(json_object_get_string(get(why, "verdict")), "worse");
	/* the reason: the compare table with its verdicts */
	{
		json_object *cmp = json_object_array_get_idx(get(why, "compare"), 0);
		json_object *pts = get(cmp, "points");

		ck_assert_str_eq(json_object_get_string(get(cmp, "a_label")), "baseline");
		ck_assert_str_eq(json_object_get_string(get(cmp, "b_label")), "slow");
		ck_assert_int_eq(json_object_array_length(pts), 2);
		for (size_t i = 0; i < 2; i++)
			worse += strcmp(json_object_get_string(get(json_object_array_get_idx(pts, i),
			    "verdict")), "worse") == 0;
		ck_assert_uint_ge(worse, 1);
		ck_assert_int_eq(json_object_get_int(get(why, "worse")), (int)worse);
	}
	/* the verify step never ran */
	ck_assert_int_eq(json_object_array_length(get(doc, "steps")), 1);
	json_object_put(doc);
	/* the canary is back at its originals; node02 and node03 untouched */
	ck_assert_int_eq(queue_attr("max_sectors_kb"), 256);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(somax(i), somax0[i]);
		ap = active_profile(i);
		ck_assert_str_eq(ap, "");
		free(ap);
	}
	for (int i = 1; i < 3; i++) {
		rc = harness_knobctl(&h, &out, NULL, "--json rollback -w %s", h.node[i].name);
		ck_assert_msg(strstr(out, "nothing") != NULL || strstr(out, "no journal") != NULL,
		    "%s", out);
		free(out);
	}
	/* the same play in text: the verdict table, then why it stopped */
	ck_assert_int_eq(harness_sh("echo 256 > /sys/block/%s/queue/max_sectors_kb", loopdev), 0);
	rc = harness_knobctl_logged(&h, &out, "play %s/canary.xml", h.tmp);
	ck_assert_int_eq(rc, 1);
	ck_assert_ptr_nonnull(strstr(out, "VERDICT"));
	ck_assert_ptr_nonnull(strstr(out, " worse\n"));
	ck_assert_ptr_nonnull(strstr(out, "point(s) worse with slow (the table above): rolling the canaries back"));
	free(out);
	ck_assert_int_eq(queue_attr("max_sectors_kb"), 256);
}
END_TEST

/* The canary is every live node (a one-node play): no point worse, nobody
 * left to roll out to: the step succeeds, the profile stays on the canary. */
START_TEST(canary_covers_every_node)
{
	char *out = NULL, *ap;
	long somax0 = somax(0);
	int rc;

	ck_assert_int_eq(harness_sh("echo 4 > /sys/block/%s/queue/max_sectors_kb", loopdev), 0);
	profile("fast", 1024);
	write_file("one.xml", "<?xml version=\"1.0\"?>\n"
	    "<play name=\"canary-one\" nodes=\"node01\">\n"
	    "  <canary profile=\"fast\" canary=\"1\">\n"
	    "    <bench kind=\"seq\" dir=\"%s\" threads=\"1\" bs=\"16m\" size=\"128m\" direct=\"yes\" "
	    "repeat=\"5\"/>\n"
	    "  </canary>\n</play>\n", data);
	rc = harness_knobctl_logged(&h, &out, "play %s/one.xml", h.tmp);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "canary: 1 of 1 node(s)"));
	ck_assert_msg(strstr(out, "canary verdict: no point worse: no node left to roll out to: "
	    "the canaries have it") != NULL, "%s", out);
	ck_assert_ptr_null(strstr(out, "play stopped"));
	free(out);
	ck_assert_int_eq(queue_attr("max_sectors_kb"), 1024);
	ck_assert_int_eq(somax(0), 2345);
	ap = active_profile(0);
	ck_assert_str_eq(ap, "fast");
	free(ap);
	rc = harness_knobctl(&h, &out, NULL, "rollback -w node01");
	ck_assert_int_eq(rc, 0);
	free(out);
	ck_assert_int_eq(somax(0), somax0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("canary");
	TCase *tc = tcase_create("canary");

	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, canary_rolls_out);
	tcase_add_test(tc, canary_worse_rolls_back);
	tcase_add_test(tc, canary_covers_every_node);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
