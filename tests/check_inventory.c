/* Unit tests for the inventory (cluster.xml): a table of malformed files,
 * each with the exact "file:line: message" lines expected; several errors
 * in one file all reported in line order; a valid file with ports,
 * addresses, groups and relative paths; the shipped example; big files
 * (10,000 nodes, line numbers past 65535); no external entities.
 * Files live in a temp dir made by the fixture and removed by it. */
#define _XOPEN_SOURCE 700
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "testutil.h"
#include "knobctl.h"
#include "harness.h"
#include "log.h"
#include "nodeset.h"
#include "util.h"

static char tmpdir[PATH_MAX];

static void
setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_inventory.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
teardown(void)
{
	if (tmpdir[0] != '\0' && strncmp(tmpdir, "/tmp/check_inventory.", 21) == 0)
		cu_rm_rf(tmpdir);
	tmpdir[0] = '\0';
}

/* Write text to tmpdir/NAME; returns the path (static buffer per call). */
#define write_file(name, text) cu_write_at(tmpdir, name, 0644, "%s", text)

/* Each case: the file text and the exact error lines expected, with "F"
 * standing for the file's path.  The whole error text must equal the
 * expected lines joined by newlines. */
static const struct {
	const char *xml;
	const char *want[4];
} bad[] = {
	{ "<cluster>\n  <nod name=\"a\"/>\n</cluster>\n",
	  { "F:2: unknown element <nod>" } },
	{ "<cluster>\n  <group name=\"x\"/>\n</cluster>\n",
	  { "F:2: <group>: missing attribute 'nodes'" } },
	{ "<cluster>\n  <group nodes=\"n1\" name=\"  \"/>\n</cluster>\n",
	  { "F:2: <group>: missing attribute 'name'" } },
	{ "<cluster port=\"70000\">\n</cluster>\n",
	  { "F:1: <cluster>: bad port \"70000\" (1-65535)" } },
	{ "<cluster port=\"0\"/>\n", { "F:1: <cluster>: bad port \"0\" (1-65535)" } },
	{ "<cluster>\n\n  <node name=\"a\" port=\"12ab\"/>\n</cluster>\n",
	  { "F:3: <node>: bad port \"12ab\" (1-65535)" } },
	{ "<cluster>\n  <node name=\"a\" port=\"-1\"/>\n</cluster>\n",
	  { "F:2: <node>: bad port \"-1\" (1-65535)" } },
	{ "<cluster>\n  <node name=\"n1\"/>\n  <node name=\"n2\"/>\n  <node name=\"n1\" port=\"9\"/>\n</cluster>\n",
	  { "F:4: duplicate node \"n1\" (first at line 2)" } },
	{ "<cluster>\n  <node name=\"n[1-3]\" port=\"7\"/>\n  <node name=\"n2\" addr=\"10.0.0.2\"/>\n</cluster>\n",
	  { "F:3: duplicate node \"n2\" (first at line 2)" } },
	{ "<cluster>\n  <node name=\"n[1-2]\" addr=\"10.0.0.2\"/>\n</cluster>\n",
	  { "F:2: <node>: addr given for 2 nodes (\"n[1-2]\")" } },
	{ "<cluster>\n  <node name=\"n[1-2\"/>\n</cluster>\n",
	  { "F:2: <node>: nodeset: unbalanced '[' in \"n[1-2\"" } },
	{ "<cluster>\n  <node name=\"@g\"/>\n</cluster>\n",
	  { "F:2: <node>: nodeset: no groups defined (for @g)" } },
	{ "<cluster>\n  <group name=\"g\" nodes=\"n[3-1]\"/>\n</cluster>\n",
	  { "F:2: group \"g\": nodeset: reversed range \"3-1\" in \"n[3-1]\" (in group @g)" } },
	{ "<cluster>\n  <group name=\"g\" nodes=\"n1,@nope\"/>\n</cluster>\n",
	  { "F:2: group \"g\": nodeset: unknown group @nope (in group @g)" } },
	{ "<cluster>\n  <group name=\"a\" nodes=\"@b\"/>\n  <group name=\"b\" nodes=\"x,@a\"/>\n</cluster>\n",
	  { "F:2: group \"a\": nodeset: group recursion: @a -> @b -> @a",
	    "F:3: group \"b\": nodeset: group recursion: @b -> @a -> @b" } },
	{ "<cluster>\n  <group name=\"g\" nodes=\"a\"/>\n  <group name=\"g\" nodes=\"b\"/>\n</cluster>\n",
	  { "F:3: duplicate group \"g\" (first at line 2)" } },
	{ "<cluster>\n  <group name=\"a b\" nodes=\"a\"/>\n</cluster>\n",
	  { "F:2: <group>: bad group name \"a b\"" } },
	{ "<cluster>\n  <node name=\"a\" adr=\"x\"/>\n</cluster>\n",
	  { "F:2: <node>: unknown attribute 'adr'" } },
	{ "<cluster>\n  <tls ca=\"a\"/>\n  <tls cert=\"b\"/>\n</cluster>\n",
	  { "F:3: <tls>: duplicate element (first at line 2)" } },
	{ "<cluster>\n  <results/>\n</cluster>\n",
	  { "F:2: <results>: missing attribute 'db'" } },
	{ "<cluster>\n  <tls ca=\"\"/>\n</cluster>\n",
	  { "F:2: <tls>: empty attribute 'ca'" } },
	{ "<inventory/>\n", { "F:1: root element must be <cluster>, not <inventory>" } },
	{ "<cluster>\n  oops\n  <node name=\"a\"/>\n</cluster>\n",
	  { "F:2: unexpected text in <cluster>" } },
	{ "<cluster>\n  <node name=\"a\"/>\n\n  oops\n  <node name=\"b\"/>\n</cluster>\n",
	  { "F:4: unexpected text in <cluster>" } },
	{ "<cluster>\n  <node name=\"a\"><x/></node>\n</cluster>\n",
	  { "F:2: <node>: unexpected child element <x>" } },
	/* indented children: the first child is white space, the element after
	 * it (and non-blank text) is still an error (review G, finding 6) */
	{ "<cluster>\n  <node name=\"a\" addr=\"127.0.0.1\">\n    <port>19999</port>\n  </node>\n</cluster>\n",
	  { "F:3: <node>: unexpected child element <port>" } },
	{ "<cluster>\n  <tls ca=\"a\">\n    <!-- c -->\n    <crl path=\"x\"/>\n  </tls>\n</cluster>\n",
	  { "F:4: <tls>: unexpected child element <crl>" } },
	{ "<cluster>\n  <group name=\"g\" nodes=\"a\">\n    b\n  </group>\n  <results db=\"r\"> <x/> <y/> </results>\n</cluster>\n",
	  { "F:3: unexpected text in <group>",
	    "F:5: <results>: unexpected child element <x>",
	    "F:5: <results>: unexpected child element <y>" } },
	/* malformed XML: libxml2's message with its line */
	{ "<cluster>\n  <node name=\"a\">\n</cluster>\n",
	  { "F:3: XML: Opening and ending tag mismatch: node line 2 and cluster" } },
	{ "<cluster>\n  <node name=\"a\" name=\"b\"/>\n</cluster>\n",
	  { "F:2: XML: Attribute name redefined" } },
	{ "", { "F:1: XML: Document is empty" } },
	/* the file's own text in an error is made visible (common/visible.h):
	 * a right-to-left override in a port, a C1 CSI in a node name */
	{ "<cluster port=\"1&#x202E;2\">\n  <node name=\"n&#x9b;2J\"/>\n</cluster>\n",
	  { "F:1: <cluster>: bad port \"1\\u202e2\" (1-65535)",
	    "F:2: <node>: nodeset: invalid character 0xc2 in \"n\\u009b2J\"" } },
	/* several errors in one file: all of them, in line order */
	{ "<cluster port=\"x\">\n"
	  "  <node name=\"n1\" port=\"99999\"/>\n"
	  "  <bogus/>\n"
	  "  <group name=\"g\" nodes=\"@missing\"/>\n"
	  "  <node name=\"n1\"/>\n"
	  "</cluster>\n",
	  { "F:1: <cluster>: bad port \"x\" (1-65535)",
	    "F:2: <node>: bad port \"99999\" (1-65535)",
	    "F:3: unknown element <bogus>",
	    "F:4: group \"g\": nodeset: unknown group @missing (in group @g)" } },
};

/* Replace "F" at the start of each expected line with path, join. */
static char *
expected(const char *const *want, const char *path)
{
	char *s = xstrdup("");

	for (size_t i = 0; i < 4 && want[i] != NULL; i++) {
		char *t = xasprintf("%s%s%s%s", s, i ? "\n" : "", path, want[i] + 1);
		free(s);
		s = t;
	}
	return s;
}

START_TEST(malformed_table)
{
	for (size_t i = 0; i < nitems(bad); i++) {
		char name[32], err[4096] = "untouched";
		const char *path;
		struct inventory *inv;
		char *want;

		snprintf(name, sizeof(name), "bad%02zu.xml", i);
		path = write_file(name, bad[i].xml);
		inv = inventory_load(path, err, sizeof(err));
		ck_assert_msg(inv == NULL, "case %zu loaded", i);
		want = expected(bad[i].want, path);
		/* libxml2 messages may carry more text after ours: compare by prefix
		 * line by line for XML errors, exactly otherwise */
		if (strstr(want, ": XML: ") != NULL)
			ck_assert_msg(strncmp(err, want, strlen(want)) == 0,
			    "case %zu:\n got: %s\nwant: %s", i, err, want);
		else
			ck_assert_msg(strcmp(err, want) == 0, "case %zu:\n got: %s\nwant: %s", i, err,
			    want);
		free(want);
	}
}
END_TEST

/* A missing file; several errors; a small error buffer is cut cleanly. */
START_TEST(missing_and_small_buffer)
{
	char err[4096], small[40], path[PATH_MAX];
	const char *p;

	snprintf(path, sizeof(path), "%s/none.xml", tmpdir);
	ck_assert_ptr_null(inventory_load(path, err, sizeof(err)));
	{
		char *want = xasprintf("%s: cannot read: No such file or directory", path);
		ck_assert_str_eq(err, want);
		free(want);
	}
	p = write_file("many.xml", "<cluster>\n<a/>\n<b/>\n<c/>\n</cluster>\n");
	ck_assert_ptr_null(inventory_load(p, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, ":2: unknown element <a>\n"));
	ck_assert_ptr_nonnull(strstr(err, ":4: unknown element <c>"));
	/* a small buffer gets a clean, NUL-terminated prefix of the same text */
	ck_assert_ptr_null(inventory_load(p, small, sizeof(small)));
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
	ck_assert_int_eq(strncmp(small, err, strlen(small)), 0);
	ck_assert_ptr_null(inventory_load(p, NULL, 0));	/* no buffer: still fails */
}
END_TEST

START_TEST(valid_file)
{
	static const char xml[] =
	    "<?xml version=\"1.0\"?>\n"
	    "<!-- a comment -->\n"
	    "<cluster port=\"7500\">\n"
	    "  <tls ca=\"ca/ca.crt\" cert=\"ca/controller.crt\" key=\"/etc/knob/controller.key\"/>\n"
	    "  <results db=\"var/results.db\"/>\n"
	    "  <group name=\"clients\" nodes=\"node[01-04]\"/>\n"
	    "  <group name=\"servers\" nodes=\"oss[1-2],mds1\"/>\n"
	    "  <group name=\"all\" nodes=\"@clients,@servers\"/>\n"
	    "  <group name=\"some\" nodes=\"@all!node[02-03]\"/>\n"
	    "  <node name=\"node01\" addr=\"198.18.1.2\"/>\n"
	    "  <node name=\"node02\" addr=\"198.18.2.2\" port=\"7421\"/>\n"
	    "  <node name=\"oss[1-2]\" port=\"7430\"/>\n"
	    "</cluster>\n";
	struct inventory *inv;
	struct strvec sv = { 0 };
	char err[2048], real[PATH_MAX], *want;
	const char *path, *addr;
	int port;

	snprintf(real, sizeof(real), "%s/sub", tmpdir);
	ck_assert_int_eq(mkdir(real, 0700) == 0 || errno == EEXIST, 1);
	path = write_file("sub/cluster.xml", xml);
	inv = inventory_load(path, err, sizeof(err));
	ck_assert_msg(inv != NULL, "%s", err);
	ck_assert_str_eq(inv->path, path);
	ck_assert_int_eq(inv->port, 7500);
	ck_assert_ptr_nonnull(realpath(tmpdir, real));
	want = xasprintf("%s/sub/ca/ca.crt", real);
	ck_assert_str_eq(inv->ca, want);
	free(want);
	want = xasprintf("%s/sub/ca/controller.crt", real);
	ck_assert_str_eq(inv->cert, want);
	free(want);
	ck_assert_str_eq(inv->key, "/etc/knob/controller.key");
	want = xasprintf("%s/sub/var/results.db", real);
	ck_assert_str_eq(inv->db, want);
	free(want);
	ck_assert_uint_eq(inv->ngroups, 4);
	ck_assert_uint_eq(inv->nnodes, 4);

	inventory_target(inv, "node01", &addr, &port);
	ck_assert_str_eq(addr, "198.18.1.2");
	ck_assert_int_eq(port, 7500);
	inventory_target(inv, "node02", &addr, &port);
	ck_assert_str_eq(addr, "198.18.2.2");
	ck_assert_int_eq(port, 7421);
	inventory_target(inv, "oss2", &addr, &port);
	ck_assert_str_eq(addr, "oss2");
	ck_assert_int_eq(port, 7430);
	inventory_target(inv, "node04", &addr, &port);	/* not listed: name and default port */
	ck_assert_str_eq(addr, "node04");
	ck_assert_int_eq(port, 7500);

	ck_assert_int_eq(nodeset_expand("@some", inventory_group_fn, inv, &sv, err, sizeof(err)), 0);
	{
		static const char *w[] = { "node01", "node04", "oss1", "oss2", "mds1" };
		ck_assert_uint_eq(sv.n, nitems(w));
		for (size_t i = 0; i < nitems(w); i++)
			ck_assert_str_eq(sv.v[i], w[i]);
	}
	strvec_free(&sv);
	ck_assert_int_eq(inventory_group_fn(inv, "nope", &sv), -1);
	ck_assert_int_eq(nodeset_expand("@nope", inventory_group_fn, inv, &sv, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "nodeset: unknown group @nope");
	strvec_free(&sv);
	inventory_free(inv);
}
END_TEST

/* Defaults: a bare <cluster/> gives the default port and no paths. */
START_TEST(defaults)
{
	struct inventory *inv;
	const char *addr;
	char err[512];
	int port;

	inv = inventory_load(write_file("bare.xml", "<cluster/>"), err, sizeof(err));
	ck_assert_msg(inv != NULL, "%s", err);
	ck_assert_int_eq(inv->port, KNOB_DEFAULT_PORT);
	ck_assert_ptr_null(inv->ca);
	ck_assert_ptr_null(inv->cert);
	ck_assert_ptr_null(inv->key);
	ck_assert_ptr_null(inv->db);
	inventory_target(inv, "x", &addr, &port);
	ck_assert_str_eq(addr, "x");
	ck_assert_int_eq(port, KNOB_DEFAULT_PORT);
	inventory_free(inv);
	inventory_free(NULL);
}
END_TEST

/* The shipped example loads (tests run from the source tree root). */
START_TEST(shipped_example)
{
	struct inventory *inv;
	char err[2048];

	inv = inventory_load("controller/cluster.example.xml", err, sizeof(err));
	ck_assert_msg(inv != NULL, "%s", err);
	ck_assert_int_eq(inv->port, 7420);
	ck_assert_ptr_nonnull(inv->ca);
	inventory_free(inv);
}
END_TEST

/* 10,000 nodes, and an error past line 65,535 gets its real line number. */
START_TEST(big_file)
{
	FILE *f;
	char path[PATH_MAX], err[1024], *want;
	struct inventory *inv;
	const char *addr;
	int port;

	snprintf(path, sizeof(path), "%s/big.xml", tmpdir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "<cluster>\n");
	for (int i = 0; i < 10000; i++)
		fprintf(f, "  <node name=\"n%05d\" addr=\"10.%d.%d.%d\" port=\"%d\"/>\n", i,
		    i >> 16, (i >> 8) & 255, i & 255, 1000 + i);
	fprintf(f, "</cluster>\n");
	fclose(f);
	inv = inventory_load(path, err, sizeof(err));
	ck_assert_msg(inv != NULL, "%s", err);
	ck_assert_uint_eq(inv->nnodes, 10000);
	inventory_target(inv, "n04711", &addr, &port);
	ck_assert_str_eq(addr, "10.0.18.103");
	ck_assert_int_eq(port, 5711);
	inventory_free(inv);

	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "<cluster>\n");
	for (int i = 0; i < 70000; i++)
		fprintf(f, "<!-- %d -->\n", i);
	fprintf(f, "<oops/>\n</cluster>\n");	/* line 70002 */
	fclose(f);
	ck_assert_ptr_null(inventory_load(path, err, sizeof(err)));
	want = xasprintf("%s:70002: unknown element <oops>", path);
	ck_assert_str_eq(err, want);
	free(want);
}
END_TEST

/* External entities are not fetched (XXE): the secret never shows up. */
START_TEST(no_external_entities)
{
	char secret[PATH_MAX], err[2048], *xml;
	struct inventory *inv;
	const char *path;

	snprintf(secret, sizeof(secret), "%s", write_file("secret.txt", "topsecret"));
	xml = xasprintf("<?xml version=\"1.0\"?>\n<!DOCTYPE cluster [\n"
	    "<!ENTITY x SYSTEM \"file://%s\">\n]>\n"
	    "<cluster>\n  <group name=\"g\" nodes=\"a,&x;\"/>\n</cluster>\n", secret);
	path = write_file("xxe.xml", xml);
	free(xml);
	inv = inventory_load(path, err, sizeof(err));
	if (inv != NULL) {
		ck_assert_uint_eq(inv->ngroups, 1);
		ck_assert_ptr_null(strstr(inv->groups[0].members.v[0], "topsecret"));
		inventory_free(inv);
	} else
		ck_assert_ptr_null(strstr(err, "topsecret"));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("inventory");
	TCase *tc = tcase_create("inventory");

	log_init("check_inventory", LOG_LVL_WARN);
	/* unchecked: runs in the runner process, so teardown happens even when
	 * a test fails or crashes in its forked child */
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, malformed_table);
	tcase_add_test(tc, missing_and_small_buffer);
	tcase_add_test(tc, valid_file);
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, shipped_example);
	tcase_add_test(tc, big_file);
	tcase_add_test(tc, no_external_entities);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
