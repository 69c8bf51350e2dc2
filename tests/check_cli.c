/* The knobctl command line as an admin uses it: help for every command,
 * global options anywhere, additive -w, -a and the built-in @all, -x,
 * --fanout, nodeset -f/-e/-c/-l, and the man page generated from the same
 * option tables the parser uses.  Against real agents in namespaces. */
#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <fcntl.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <json-c/json.h>

#include "testutil.h"
#include "harness.h"
#include "util.h"

static struct harness h;
static char bin[4096];

/* Run "knobctl ARGS" in the host namespace (no inventory unless given);
 * stdout into *out (malloc'd).  Returns the exit status. */
static int
run(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int
run(char **out, const char *fmt, ...)
{
	char args[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	return cu_sh_out(out, "env -u KNOB_CLUSTER %s/knobctl %s", bin, args);
}

static void
bin_setup(void)
{
	const char *b = getenv("KNOB_BIN");

	snprintf(bin, sizeof(bin), "%s", b ? b : "build");
}

/* The words of "knobctl help --complete [cmd]" into v (first field). */
static void
complete_words(const char *cmd, struct strvec *v)
{
	char *out, *save = NULL;

	ck_assert_int_eq(run(&out, "help --complete %s", cmd ? cmd : ""), 0);
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(l, ' ');

		if (sp)
			*sp = '\0';
		strvec_push(v, l);
	}
	free(out);
}

/* Every command answers help, --help and -h with exit 0 and its usage; the
 * help, the completion words and the man page list the same options. */
START_TEST(help_everywhere)
{
	struct strvec cmds = { 0 };
	char *out, *man, path[8192];
	int ncmd = 0;

	ck_assert_int_eq(run(&out, "help"), 0);
	ck_assert_ptr_nonnull(strstr(out, "commands:"));
	/* every exit status the README names: before, 141 and 128 + signal
	 * were in neither the help nor the man page */
	ck_assert_msg(strstr(out, "141 output's reader went away") &&
	    strstr(out, "128 + signal (play, bench)"), "%s", out);
	free(out);
	ck_assert_int_eq(run(&out, "--help"), 0);
	free(out);
	snprintf(path, sizeof(path), "%s/knobctl.1", bin);
	ck_assert_int_eq(read_file_bounded(path, 1 << 20, &man, NULL), 0);
	ck_assert_msg(strstr(man, "141 when the reader of its output went away") &&
	    strstr(man, "128 + the signal's number"), "man page's EXIT STATUS");
	complete_words(NULL, &cmds);
	for (size_t i = 0; i < cmds.n; i++) {
		struct strvec opts = { 0 };
		char *help, *usage = xasprintf("usage: knobctl %s", cmds.v[i]);
		char *ss = xasprintf(".SS \"%s", cmds.v[i]);

		if (cmds.v[i][0] == '-') {
			free(usage);
			free(ss);
			continue;
		}
		ncmd++;
		ck_assert_int_eq(run(&help, "%s --help", cmds.v[i]), 0);
		ck_assert_msg(strstr(help, usage) == help, "%s --help: %s", cmds.v[i], help);
		ck_assert_int_eq(run(&out, "%s -h", cmds.v[i]), 0);
		ck_assert_str_eq(out, help);
		free(out);
		ck_assert_int_eq(run(&out, "help %s", cmds.v[i]), 0);
		ck_assert_str_eq(out, help);
		free(out);
		ck_assert_msg(strstr(man, ss), "man page lacks %s", ss);
		complete_words(cmds.v[i], &opts);
		for (size_t j = 0; j < opts.n; j++) {
			char *esc = NULL;

			if (strvec_contains(&cmds, opts.v[j]))
				continue;	/* a global option: in 'knobctl help' */

			ck_assert_msg(strstr(help, opts.v[j]), "%s --help lacks %s", cmds.v[i], opts.v[j]);
			for (const char *p = opts.v[j]; *p; p++)
				str_appendf(&esc, "%s%c", *p == '-' ? "\\" : "", *p);
			ck_assert_msg(strstr(man, esc), "man page lacks %s", esc);
			free(esc);
		}
		strvec_free(&opts);
		free(help);
		free(usage);
		free(ss);
	}
	ck_assert_int_ge(ncmd, 10);
	ck_assert_msg(strstr(man, ".SS \"nodeset [\\-w NODESET|\\-a] [\\-x NODESET] [NODESET...]\"\n"),
	    "man page's nodeset synopsis");
	/* a play's nodes= stands in for -w (the usage said -w was required) */
	ck_assert_msg(strstr(man, ".SS \"play [\\-w NODESET|\\-a] [\\-x NODESET] FILE\"\n"),
	    "man page's play synopsis");
	/* test hooks are parsed but not advertised */
	ck_assert_int_eq(run(&out, "apply --help"), 0);
	ck_assert_ptr_null(strstr(out, "test-pause"));
	free(out);
	free(man);
	strvec_free(&cmds);
}
END_TEST

/* One knobctl run and what it must print: a substring, or with exact the
 * whole output. */
struct cli_case {
	const char *args;
	int rc;
	const char *want;
	int exact;
};

static void
run_cases(const struct cli_case *c, size_t n, const char *inv)
{
	for (size_t i = 0; i < n; i++) {
		char *out;
		int rc = run(&out, "%s%s%s", c[i].args, inv ? " --cluster " : "", inv ? inv : "");

		ck_assert_msg(rc == c[i].rc, "knobctl %s: exit %d: %s", c[i].args, rc, out);
		if (c[i].exact)
			ck_assert_msg(strcmp(out, c[i].want) == 0, "knobctl %s: %s", c[i].args, out);
		else if (c[i].want)
			ck_assert_msg(strstr(out, c[i].want), "knobctl %s: %s", c[i].args, out);
		free(out);
	}
}

START_TEST(usage_errors)
{
	static const struct cli_case cases[] = {
		{ "frobnicate", 2, "unknown command 'frobnicate'", 0 },
		{ "ping --bogus -w n1", 2, "knobctl ping: unknown option --bogus", 0 },
		{ "ping -w", 2, "option -w needs a value", 0 },
		{ "ping --fanout 0 -w n1", 2, "bad --fanout '0'", 0 },
		{ "ping -w n1 --timeout -3", 2, "bad --timeout (seconds, 0.001 to 86400) '-3'", 0 },
		{ "ping -w n1 --timeout inf", 2, "bad --timeout (seconds, 0.001 to 86400) 'inf'", 0 },
		{ "ping -w n1 --connect-timeout 0.0001", 2,
		    "bad --connect-timeout (seconds, 0.001 to 86400) '0.0001'", 0 },
		{ "ca renew --days 2000x --ca-dir /nonexistent", 2, "bad --days (1 to 36500) '2000x'", 0 },
		{ "ca renew --days 0 --ca-dir /nonexistent", 2, "bad --days (1 to 36500) '0'", 0 },
		{ "ca issue /nonexistent n1 --days 3", 2, "ca issue: --days is renew's window", 0 },
		{ "ping -w n1 --connect-timeout 86401", 2,
		    "bad --connect-timeout (seconds, 0.001 to 86400) '86401'", 0 },
		{ "ping", 2, "no targets: use -w NODESET or -a", 0 },
		/* a set that comes out empty is bad input, nothing dialled */
		{ "ping -w n1 -x 'n[1-2]'", 2, "knobctl: the node set is empty\n", 1 },
		{ "rollback -w ,", 2, "knobctl: the node set is empty\n", 1 },
		/* no inventory and no --ca/--cert/--key: that one error; before,
		 * the ticket cache's "(null): cannot hash the CA" warning first */
		{ "ping -w 127.0.0.1", 2, "knobctl: TLS needs a CA, a certificate and a key "
		    "(--ca/--cert/--key or the inventory's <tls>)\n", 1 },
		/* an expression's controls are made visible, in the error too */
		{ "ping -w 'n\x1b[2J'", 2, "knobctl: -w n\\x1b[2J: nodeset: invalid character 0x1b "
		    "in \"n\\x1b[2J\"\n", 1 },
		/* the agent's lock wait is in 32-bit milliseconds: 4294968 s
		 * wrapped to 0.7 s; a typo waited nothing */
		{ "apply p -w n1 --wait 4294968", 2, "bad --wait (seconds, 0 to 86400) '4294968'", 0 },
		{ "rollback -w n1 --wait 10m", 2, "bad --wait (seconds, 0 to 86400) '10m'", 0 },
		/* verify does not take apply's options */
		{ "verify p --check -w n1", 2, "unknown option --check", 0 },
		/* --help wins over other errors on the line, as with most tools */
		{ "ping --bogus --help", 0, "usage: knobctl ping", 0 },
	};

	run_cases(cases, nitems(cases), NULL);
}
END_TEST

/* bootstrap installs its own knobd and confirms it over TLS: the --via ssh
 * agent options are refused (exit 2, named), before or after the command
 * and with --via ssh; before, they were accepted and did nothing. */
START_TEST(bootstrap_agent_opts_refused)
{
	static const struct cli_case cases[] = {
		{ "bootstrap -w n1 --remote-knobd /usr/sbin/knobd", 2, "knobctl bootstrap: "
		    "--remote-knobd does not apply: bootstrap installs its own knobd (--knobd or "
		    "--deb) and confirms it over TLS", 0 },
		{ "bootstrap -w n1 --push-agent", 2, "knobctl bootstrap: --push-agent does not "
		    "apply: bootstrap installs its own knobd", 0 },
		{ "--push-agent bootstrap -w n1", 2, "--push-agent does not apply", 0 },
		{ "--via ssh bootstrap -w n1 --remote-knobd knobd", 2, "--remote-knobd does not apply", 0 },
		{ "bootstrap -w n1 --via ssh --push-agent", 2, "--push-agent does not apply", 0 },
	};

	run_cases(cases, nitems(cases), NULL);
}
END_TEST

/* A directory given where a loader wants a file (a profile, a sweep
 * file, a play, an inventory, a TLS file) is one error naming it, exit 2:
 * before, the profile and sweep loaders added libxml2's "DIR:1: Document
 * is empty" after "DIR:0: Is a directory". */
START_TEST(directory_for_a_file)
{
	static const char *const args[][2] = { { "profile show", "" }, { "profile check", "" },
		{ "apply", "-w n1" }, { "sweep -w n1 -f", "" }, { "play", "" }, { "-c", "ping -w n1" } };
	char dir[PATH_MAX], want[PATH_MAX + 64], cmd[PATH_MAX + 64];

	cu_subdir(dir, sizeof(dir), "dir");
	for (size_t i = 0; i < nitems(args); i++) {
		char *out = NULL;
		int rc;

		snprintf(cmd, sizeof(cmd), "%s %s %s", args[i][0], dir, args[i][1]);
		rc = run(&out, "%s", cmd);
		snprintf(want, sizeof(want), "%s%s: cannot read: Is a directory\n", dir,
		    strncmp(cmd, "-c ", 3) == 0 ? "" : ":0");
		ck_assert_msg(rc == 2, "knobctl %s: exit %d: %s", cmd, rc, out);
		ck_assert_msg(strcmp(out, want) == 0, "knobctl %s: %s", cmd, out);
		free(out);
	}
	/* the TLS files too: before, the ticket cache's "cannot hash the CA"
	 * warning, then OpenSSL's "PEM routines::no start line" */
	{
		char *out = NULL;
		int rc = run(&out, "--ca %s --cert %s --key %s ping -w 127.0.0.1", dir, dir, dir);

		snprintf(want, sizeof(want), "knobctl: %s: cannot load certificate: Is a directory\n",
		    dir);
		ck_assert_msg(rc == 2 && strcmp(out, want) == 0, "exit %d: %s", rc, out);
		free(out);
	}
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* nodeset -f/-e/-c/-l, like ClusterShell's nodeset; groups from an
 * inventory given after the command. */
START_TEST(nodeset_cmd)
{
	static const struct cli_case plain[] = {
		{ "nodeset -f node3 node1 node2 node10 -x node2", 0, "node[1,3,10]\n", 1 },
		{ "nodeset -e 'n[01-03]' 'm1'", 0, "n01 n02 n03 m1\n", 1 },
		{ "nodeset -c 'n[1-100]' -x 'n[1-10]'", 0, "90\n", 1 },
		{ "nodeset -c 'n[1-3]' -x 'n[1-3]'", 0, "0\n", 1 },
		{ "nodeset -f -e a", 2, "give one of", 0 },
		/* its node sets are operands: -w is optional (the usage said it
		 * was required, "nodeset -w NODESET|-a [-x NODESET]") */
		{ "nodeset --help", 0, "usage: knobctl nodeset [-w NODESET|-a] [-x NODESET] [options] "
		    "[NODESET...]\n", 0 },
		/* and -c FILE is no global option there ("-c FILE ... may appear
		 * anywhere", it said) */
		{ "nodeset -h", 0, "\nGlobal options (--cluster FILE, --json,", 0 },
		{ "nodeset -f 'n[1-'", 2, NULL, 0 },
	};
	/* the built-in @all; -c is --count here, the inventory comes after */
	static const struct cli_case grouped[] = {
		{ "nodeset -f @all", 0, "c[01-04],mds1,oss[1-2]\n", 1 },
		{ "nodeset -c -a -x @servers", 0, "5\n", 1 },
		{ "nodeset -l", 0, "@clients\n@servers\n@all\n", 1 },
	};
	static const char xml[] = "<cluster>\n"
	    "  <group name=\"clients\" nodes=\"c[01-04]\"/>\n"
	    "  <group name=\"servers\" nodes=\"oss[1-2]\"/>\n"
	    "  <node name=\"mds1\" port=\"7421\"/>\n</cluster>\n";
	char inv[4096];

	run_cases(plain, nitems(plain), NULL);
	snprintf(inv, sizeof(inv), "%s/inv.xml", cu_base());
	ck_assert_int_eq(write_file_atomic(inv, xml, strlen(xml), 0644), 0);
	run_cases(grouped, nitems(grouped), inv);
	unlink(inv);
}
END_TEST

/* Output that does not reach its reader is no success: to a full disk
 * (/dev/full) knobctl says so and exits 2; to a reader that went away
 * (head -c1, 600 KB of names against a 64 KiB pipe) it exits 141, as a
 * program SIGPIPE kills, silently.  Before, both exited 0. */
START_TEST(stdout_write_error)
{
	char dir[PATH_MAX], play[PATH_MAX + 8], inv[PATH_MAX + 8], *out;

	ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER %s/knobctl nodeset -e 'n[1-3]' "
	    "2>&1 >/dev/full", bin), 2);
	ck_assert_msg(strstr(out, "knobctl: standard output: No space left on device") != NULL,
	    "%s", out);
	free(out);
	/* a document flushed as it is printed names the cause too: before,
	 * "standard output: write error" */
	ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER %s/knobctl --json nodeset -e 'n[1-3]' "
	    "2>&1 >/dev/full", bin), 2);
	ck_assert_str_eq(out, "knobctl: standard output: No space left on device\n");
	free(out);
	/* a play's lines too (they are flushed as they are said): its one
	 * node fails (no TLS files: nothing is sent), exit 1 says so, and
	 * the lost output is named by its cause, not "write error" */
	cu_subdir(dir, sizeof(dir), "play-full");
	snprintf(play, sizeof(play), "%s/p.xml", dir);
	cu_write(play, 0644, "<play name=\"t\">\n  <rollback/>\n</play>\n");
	snprintf(inv, sizeof(inv), "%s/c.xml", dir);
	cu_write(inv, 0644, "<cluster port=\"1\"><node name=\"n1\" addr=\"127.0.0.1\"/></cluster>\n");
	ck_assert_int_eq(cu_sh_out(&out, "%s/knobctl -c %s play %s -w n1 2>&1 >/dev/full", bin, inv,
	    play), 1);
	ck_assert_msg(strstr(out, "knobctl: standard output: No space left on device\n") != NULL,
	    "%s", out);
	free(out);
	ck_assert_int_eq(cu_sh_out(&out, "bash -o pipefail -c 'env -u KNOB_CLUSTER %s/knobctl "
	    "nodeset -e \"n[1-100000]\" 2>&1 | head -c1 >/dev/null'", bin), 141);
	free(out);
	ck_assert_int_eq(run(&out, "nodeset -c 'n[1-3]'"), 0);
	ck_assert_str_eq(out, "3\n");
	free(out);
}
END_TEST

/* --json profile check and profile list print one JSON document: before,
 * the same text as without --json ("FILE: ok (p, 1 settings)", a table). */
START_TEST(profile_json)
{
	char dir[PATH_MAX], good[PATH_MAX + 16], bad[PATH_MAX + 16];
	json_object *doc, *v;
	char *out = NULL, *want;
	int rc;

	/* under the case's base, removed even when a check below fails */
	cu_subdir(dir, sizeof(dir), "prof");
	snprintf(good, sizeof(good), "%s/p.xml", dir);
	snprintf(bad, sizeof(bad), "%s/bad.xml", dir);
	cu_write(good, 0644, "<?xml version=\"1.0\"?>\n<profile name=\"p\">\n"
	    "  <sysctl key=\"vm.swappiness\" value=\"10\"/>\n</profile>\n");
	cu_write(bad, 0644, "<?xml version=\"1.0\"?>\n<profile name=\"b\">\n"
	    "  <sysctl key=\"vm.swappiness\"/>\n</profile>\n");
	rc = cu_sh_out(&out, "env -u KNOB_CLUSTER %s/knobctl --json profile check %s %s 2>%s/err",
	    bin, good, bad, dir);
	ck_assert_msg(rc == 2 && (doc = json_tokener_parse(out)) != NULL, "exit %d: %s", rc, out);
	want = xasprintf("[ { \"file\": \"%s\", \"ok\": true, \"name\": \"p\", \"settings\": 1 }, "
	    "{ \"file\": \"%s\", \"ok\": false, \"errors\": [ \"%s:3: <sysctl> needs key and value\" ] } ]",
	    good, bad, bad);
	ck_assert(json_object_object_get_ex(doc, "profiles", &v));
	ck_assert_str_eq(json_object_to_json_string_ext(v, JSON_C_TO_STRING_SPACED |
	    JSON_C_TO_STRING_NOSLASHESCAPE), want);
	ck_assert(json_object_object_get_ex(doc, "exit_status", &v) && json_object_get_int(v) == 2);
	json_object_put(doc);
	free(want);
	free(out);
	/* the errors on stderr too, as without --json */
	snprintf(good + strlen(dir), sizeof(good) - strlen(dir), "/err");
	out = cu_slurp(good);
	want = xasprintf("%s:3: <sysctl> needs key and value\n", bad);
	ck_assert_str_eq(out, want);
	free(want);
	free(out);
	ck_assert_int_eq(unlink(good), 0);
	snprintf(good, sizeof(good), "%s/p.xml", dir);
	ck_assert_int_eq(unlink(bad), 0);
	rc = cu_sh_out(&out, "env -u KNOB_CLUSTER KNOB_PROFILE_PATH=%s %s/knobctl --json profile list",
	    dir, bin);
	ck_assert_msg(rc == 0 && (doc = json_tokener_parse(out)) != NULL, "exit %d: %s", rc, out);
	free(out);
	ck_assert(json_object_object_get_ex(doc, "profiles", &v));
	out = NULL;
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		const char *row = json_object_to_json_string_ext(json_object_array_get_idx(v, i),
		    JSON_C_TO_STRING_SPACED);

		if (strstr(row, "\"name\": \"p\""))
			out = xstrdup(row);
	}
	ck_assert_msg(out && strcmp(out, "{ \"name\": \"p\", \"parent\": null, \"summary\": \"\" }") == 0,
	    "%s", out ? out : "no p");
	free(out);
	json_object_put(doc);
	ck_assert_int_eq(unlink(good), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* "knobctl ARGS" (exit 0) parsed as one JSON document; the caller puts it. */
static json_object *
run_json(const char *args)
{
	json_object *doc;
	char *out;

	ck_assert_msg(run(&out, "%s", args) == 0, "knobctl %s: %s", args, out);
	doc = json_tokener_parse(out);
	ck_assert_msg(doc && json_object_is_type(doc, json_type_object), "knobctl %s: not JSON: %s",
	    args, out);
	free(out);
	return doc;
}

/* The string array doc[key] joined by spaces (malloc'd). */
static char *
json_words(json_object *doc, const char *key)
{
	json_object *a;
	char *s = NULL;

	ck_assert_msg(json_object_object_get_ex(doc, key, &a) &&
	    json_object_is_type(a, json_type_array), "no array %s", key);
	for (size_t i = 0; i < json_object_array_length(a); i++)
		str_appendf(&s, "%s%s", i ? " " : "", json_object_get_string(json_object_array_get_idx(a, i)));
	return s ? s : xstrdup("");
}

/* nodeset --json (before or after the command): one document with the
 * folded set, the count and every name, whichever of -f, -e, -c; -l gives
 * the groups. */
START_TEST(nodeset_json)
{
	static const char *const args[] = {
		"nodeset -f 'n[1-3]' n7 -x n2 --json", "--json nodeset -e 'n[1-3]' n7 -x n2",
		"nodeset -c --json 'n[1-3]' n7 -x n2",
	};
	static const char xml[] = "<cluster>\n  <group name=\"io\" nodes=\"c[1-2]\"/>\n</cluster>\n";
	char inv[4096], cmd[8192], *w;
	json_object *doc, *v;

	for (size_t i = 0; i < nitems(args); i++) {
		doc = run_json(args[i]);
		ck_assert(json_object_object_get_ex(doc, "nodeset", &v));
		ck_assert_str_eq(json_object_get_string(v), "n[1,3,7]");
		ck_assert(json_object_object_get_ex(doc, "count", &v));
		ck_assert_int_eq(json_object_get_int(v), 3);
		w = json_words(doc, "nodes");
		ck_assert_str_eq(w, "n1 n3 n7");
		free(w);
		json_object_put(doc);
	}
	snprintf(inv, sizeof(inv), "%s/inv.xml", cu_base());
	ck_assert_int_eq(write_file_atomic(inv, xml, strlen(xml), 0644), 0);
	snprintf(cmd, sizeof(cmd), "nodeset -l --json --cluster %s", inv);
	doc = run_json(cmd);
	unlink(inv);
	w = json_words(doc, "groups");
	ck_assert_str_eq(w, "@io @all");
	free(w);
	json_object_put(doc);
}
END_TEST

static void
setup(void)
{
	ck_assert_msg(harness_start(&h, 3, 1) == 0, "harness start failed");
}

static void
teardown(void)
{
	harness_stop(&h);
}

/* Names of the nodes knobctl --json reported ok, space separated. */
static char *
ok_nodes(const char *json)
{
	json_object *doc = json_tokener_parse(json), *nodes, *rec, *v;
	char *s = NULL;

	ck_assert_msg(doc != NULL, "not JSON: %s", json);
	ck_assert(json_object_object_get_ex(doc, "nodes", &nodes));
	for (size_t i = 0; i < json_object_array_length(nodes); i++) {
		rec = json_object_array_get_idx(nodes, i);
		ck_assert(json_object_object_get_ex(rec, "status", &v));
		if (strcmp(json_object_get_string(v), "ok") != 0)
			continue;
		ck_assert(json_object_object_get_ex(rec, "node", &v));
		str_appendf(&s, "%s%s", s ? " " : "", json_object_get_string(v));
	}
	json_object_put(doc);
	return s ? s : xstrdup("");
}

/* knobctl ARGS (in the controller namespace) succeeds and reports exactly
 * the nodes want ok. */
static void
expect_ok(const char *args, const char *want)
{
	char *out = NULL, *err = NULL, *ok;
	int rc = harness_knobctl(&h, &out, &err, "%s", args);

	ck_assert_msg(rc == 0, "%s: exit %d: %s", args, rc, err);
	ok = ok_nodes(out);
	ck_assert_msg(strcmp(ok, want) == 0, "%s: ok nodes '%s'", args, ok);
	free(ok);
	free(out);
	free(err);
}

/* The README's quick start with an inventory that has no @all group,
 * global options after the command, additive -w, -a, -x. */
START_TEST(targets_on_real_agents)
{
	char *out = NULL, *err = NULL, *xml = NULL, inv[4096];
	int rc;

	snprintf(inv, sizeof(inv), "%s/noall.xml", h.tmp);
	/* results.db beside it: the ticket cache goes there, not to
	 * /var/lib/knob */
	str_appendf(&xml, "<cluster port=\"7420\"><tls ca=\"ca/ca.crt\" cert=\"ca/controller.crt\""
	    " key=\"ca/controller.key\"/>\n<results db=\"results.db\"/>\n");
	for (int i = 0; i < h.n; i++)
		str_appendf(&xml, "<node name=\"%s\" addr=\"%s\"/>\n", h.node[i].name, h.node[i].addr);
	str_appendf(&xml, "</cluster>\n");
	ck_assert_int_eq(write_file_atomic(inv, xml, strlen(xml), 0644), 0);
	free(xml);
	/* the later -c wins over the harness's own */
	rc = harness_knobctl(&h, &out, &err, "ping -w @all -c %s", inv);
	ck_assert_msg(rc == 0, "exit %d: %s%s", rc, out, err);
	ck_assert_msg(strstr(out, "node[01-03] (3): pong"), "%s", out);
	free(out);
	free(err);

	expect_ok("ping -w node01 --json -w node03", "node01 node03");
	expect_ok("facts -a -x node02 --timeout 20 --json", "node01 node03");
}
END_TEST

/* --fanout 1: one node at a time.  Two nodes hang (SIGSTOP: the kernel
 * completes the TCP connect, the TLS handshake never answers): one after
 * the other they time out (1 s each, so at least 2 s in all, where an
 * unbounded fan-out waits once), and the third node still answers. */
START_TEST(fanout_limit)
{
	char *out = NULL, *err = NULL;
	uint64_t t0, t1;
	int rc;

	ck_assert_int_eq(kill(h.node[0].pid, SIGSTOP), 0);
	ck_assert_int_eq(kill(h.node[1].pid, SIGSTOP), 0);
	t0 = now_mono_ns();
	rc = harness_knobctl(&h, &out, &err, "ping -a --fanout 1 --connect-timeout 1");
	t1 = now_mono_ns();
	kill(h.node[0].pid, SIGCONT);
	kill(h.node[1].pid, SIGCONT);
	ck_assert_msg(rc == 1, "exit %d: %s%s", rc, out, err);
	ck_assert_msg(strstr(out, "node03: pong"), "%s", out);
	ck_assert_msg(strstr(out, "timed out"), "%s", out);
	ck_assert_msg(t1 - t0 >= 2000000000ull, "took %.2f s: not one at a time", (t1 - t0) / 1e9);
	free(out);
	free(err);
}
END_TEST

/* Unreachable and failed nodes fold by identical reason. */
START_TEST(failures_fold)
{
	char *out = NULL, *err = NULL;
	int rc;

	harness_agent_stop(&h, 0, SIGTERM);
	harness_agent_stop(&h, 2, SIGTERM);
	rc = harness_knobctl(&h, &out, &err, "ping -a");
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node[01,03] (2): unreachable: connection refused\n"), "%s", out);
	ck_assert_msg(strstr(out, "1 ok, 2 unreachable (node[01,03])"), "%s", out);
	free(out);
	free(err);
}
END_TEST

/* A node certificate used as the controller's: the agent's refusal in
 * words, not an OpenSSL alert; a normal session ends with close_notify,
 * so the agent logs nothing at warning level for it. */
START_TEST(refusal_and_clean_close)
{
	char *out = NULL, *err = NULL;
	int rc;

	rc = harness_knobctl(&h, &out, &err, "--cert %s/ca/node03.crt --key %s/ca/node03.key "
	    "ping -w node01", h.tmp, h.tmp);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "node01: auth-failed: agent refused us: certificate of 'node03' "
	    "has role 'node'; only a 'controller' certificate may command this agent"), "%s", out);
	ck_assert_msg(strstr(out, "alert") == NULL, "%s", out);
	free(out);
	free(err);

	rc = harness_knobctl(&h, &out, &err, "ping -w node02");
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(harness_wait_log(&h, 1, "closed: peer closed the connection", 10), 0);
	ck_assert_msg(!harness_log_has(&h, 1, "<4>") && !harness_log_has(&h, 1, "<3>"), "warning in node02's log");
	free(out);
	free(err);
}
END_TEST

/* A listener on host loopback that accepts and drops every connection
 * before TLS: with FIN, or with RST (SO_LINGER 0) when rst.  Returns the
 * child's pid. */
static pid_t
dropper(int port, int rst)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	pid_t pid;

	ck_assert_int_ge(fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct linger lg = { 1, 0 };

		for (;;) {
			int c = accept(fd, NULL, NULL);

			if (c < 0)
				_exit(0);
			if (rst)
				setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(c);
		}
	}
	close(fd);
	return pid;
}

/* Dropped before the handshake is not an authentication failure. */
START_TEST(dropped_before_handshake)
{
	char *out, inv[4096], *xml;
	pid_t fin = dropper(17701, 0), rst = dropper(17702, 1);
	int rc;

	snprintf(inv, sizeof(inv), "%s/drop.xml", h.tmp);
	/* the results database, and the ticket cache beside it, in the
	 * harness's temp dir: without, knobctl's /var/lib/knob/tls-tickets */
	xml = xasprintf("<cluster><tls ca=\"%s/ca/ca.crt\" cert=\"%s/ca/controller.crt\" "
	    "key=\"%s/ca/controller.key\"/>\n<results db=\"results.db\"/>\n"
	    "<node name=\"fin\" addr=\"127.0.0.1\" port=\"17701\"/>\n"
	    "<node name=\"rst\" addr=\"127.0.0.1\" port=\"17702\"/>\n</cluster>\n",
	    h.tmp, h.tmp, h.tmp);
	ck_assert_int_eq(write_file_atomic(inv, xml, strlen(xml), 0644), 0);
	free(xml);
	rc = run(&out, "ping -w fin,rst --cluster %s", inv);
	kill(fin, SIGKILL);
	kill(rst, SIGKILL);
	waitpid(fin, NULL, 0);
	waitpid(rst, NULL, 0);
	ck_assert_int_eq(rc, 1);
	ck_assert_msg(strstr(out, "fin,rst (2): unreachable: dropped before handshake (agent busy or "
	    "filtered)") || strstr(out, "rst,fin (2): unreachable: dropped before handshake"), "%s", out);
	ck_assert_msg(strstr(out, "auth-failed") == NULL, "%s", out);
	free(out);
}
END_TEST

/* "node=status ..." of a --json fleet document, in its order (malloc'd);
 * its exit_status must be rc. */
static char *
json_statuses(json_object *doc, int rc)
{
	json_object *nodes, *rec, *v, *st;
	char *s = NULL;

	ck_assert_msg(doc != NULL, "not JSON");
	ck_assert(json_object_object_get_ex(doc, "exit_status", &v));
	ck_assert_int_eq(json_object_get_int(v), rc);
	ck_assert(json_object_object_get_ex(doc, "nodes", &nodes));
	for (size_t i = 0; i < json_object_array_length(nodes); i++) {
		rec = json_object_array_get_idx(nodes, i);
		ck_assert(json_object_object_get_ex(rec, "node", &v) &&
		    json_object_object_get_ex(rec, "status", &st));
		str_appendf(&s, "%s%s=%s", s ? " " : "", json_object_get_string(v),
		    json_object_get_string(st));
	}
	return s ? s : xstrdup("");
}

/* Every fleet command with node02 hung (SIGSTOP: its handshake times out)
 * and node03 down (refused): node01 does what was asked, the other two are
 * reported unreachable, the exit status is 1, and --json says the same
 * for all three nodes with the same status. */
START_TEST(every_command_with_nodes_down)
{
	static const struct {
		const char *args, *node01;	/* node01's text or --json status */
	} cmds[] = {
		{ "ping", "node01: pong" }, { "--json facts", "node01=ok" },
		{ "apply %s --check", "would-change    sysctl net.core.somaxconn" },
		{ "--json apply %s", "node01=changed" }, { "verify", "node01:   => 1 of 1 key(s) match; active profile: p" },
		{ "--json rollback", "node01=changed" }, { "off", "node01:   => nothing to roll back" },
	};
	char prof[PATH_MAX], args[PATH_MAX + 64];

	snprintf(prof, sizeof(prof), "%s/down.xml", h.tmp);
	cu_write(prof, 0644, "<?xml version=\"1.0\"?>\n<profile name=\"p\">\n"
	    "  <sysctl key=\"net.core.somaxconn\" value=\"1234\"/>\n</profile>\n");
	harness_agent_stop(&h, 2, SIGTERM);
	ck_assert_int_eq(kill(h.node[1].pid, SIGSTOP), 0);
	for (size_t i = 0; i < nitems(cmds); i++) {
		const char *pct = strstr(cmds[i].args, "%s");
		char *out = NULL, *err = NULL;
		int rc;

		snprintf(args, sizeof(args), "--connect-timeout 0.5 %.*s%s%s -w node[01-03]",
		    pct ? (int)(pct - cmds[i].args) : (int)strlen(cmds[i].args), cmds[i].args,
		    pct ? prof : "", pct ? pct + 2 : "");
		if (strncmp(cmds[i].args, "--json", 6) == 0) {
			json_object *doc = harness_knobctl_json(&h, &rc, "%s", args);
			char *st = json_statuses(doc, rc), *want = xasprintf("%s %s", cmds[i].node01,
			    "node02=unreachable node03=unreachable");

			ck_assert_msg(rc == 1 && strcmp(st, want) == 0, "%s: exit %d: %s", args, rc, st);
			free(want);
			free(st);
			json_object_put(doc);
			continue;
		}
		rc = harness_knobctl(&h, &out, &err, "%s", args);
		ck_assert_msg(rc == 1 && strstr(out, cmds[i].node01) &&
		    strstr(out, "node02: unreachable: TLS handshake timed out") &&
		    strstr(out, "node03: unreachable: connection refused"), "%s: exit %d: %s%s", args, rc,
		    out, err);
		free(out);
		free(err);
	}
	kill(h.node[1].pid, SIGCONT);
}
END_TEST

/* knobctl ARGS in the controller namespace with its standard output on
 * fd, or closed when fd is -1; stderr into *err.  The exit status. */
static int
knobctl_stdout(char **err, int fd, const char *args)
{
	char path[PATH_MAX], to[16] = "&-";
	int rc;

	snprintf(path, sizeof(path), "%s/stdout_test.err", h.tmp);
	if (fd >= 0)
		snprintf(to, sizeof(to), "&%d", fd);
	rc = harness_sh("ip netns exec %s %s/knobctl -c %s %s >%s 2>%s", h.ctl_ns, h.bin,
	    h.cluster, args, to, path);
	*err = cu_slurp(path);
	return rc;
}

/* knobctl_stdout to a pipe whose reader is already gone. */
static int
knobctl_to_closed_pipe(char **err, const char *args)
{
	int p[2], rc;

	ck_assert_int_eq(pipe(p), 0);
	close(p[0]);
	rc = knobctl_stdout(err, p[1], args);
	close(p[1]);
	return rc;
}

/* A fleet command whose reader went away (`| head -0`) exits 141, silently,
 * as the README says, with every node ok or not: its output was flushed
 * before the end, the EPIPE forgotten by then, and it said "standard
 * output: write error" and exited 2 (1 with a node down).  To a full disk
 * and with no standard output at all it names the cause (a full disk was
 * "write error" too, the text and the --json document of 7 KB alike). */
START_TEST(fleet_output_to_closed_pipe)
{
	static const char *const full[] = { "ping -a", "--json facts -a" };
	char *err = NULL;
	int rc;

	for (size_t i = 0; i < nitems(full); i++) {
		int fd = open("/dev/full", O_WRONLY);

		ck_assert_int_ge(fd, 0);
		rc = knobctl_stdout(&err, fd, full[i]);
		close(fd);
		ck_assert_msg(rc == 2 && strcmp(err, "knobctl: standard output: No space left on "
		    "device\n") == 0, "%s: exit %d: %s", full[i], rc, err);
		free(err);
	}
	rc = knobctl_to_closed_pipe(&err, "ping -a");
	ck_assert_msg(rc == 141 && *err == '\0', "exit %d: %s", rc, err);
	free(err);
	harness_agent_stop(&h, 2, SIGTERM);
	rc = knobctl_to_closed_pipe(&err, "--json facts -a");
	ck_assert_msg(rc == 141 && *err == '\0', "exit %d: %s", rc, err);
	free(err);
	rc = knobctl_stdout(&err, -1, "ping -w node01");
	ck_assert_msg(rc == 2 && strcmp(err, "knobctl: standard output: Bad file descriptor\n") == 0,
	    "exit %d: %s", rc, err);
	free(err);
}
END_TEST

/* apply's header names the profile and its file made visible: a profile
 * file called "p ESC[2J.xml" cleared the terminal (it was printed raw). */
#define WANT_HEAD "check p (p\\x1b[2J.xml) on 1 node(s)\n"

START_TEST(apply_header_visible)
{
	char path[PATH_MAX], *out = NULL, *err = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/p\x1b[2J.xml", h.tmp);
	cu_write(path, 0644, "<?xml version=\"1.0\"?>\n<profile name=\"p\">\n"
	    "  <sysctl key=\"vm.swappiness\" value=\"10\"/>\n</profile>\n");
	rc = harness_knobctl(&h, &out, &err, "apply '%s' --check -w node01", path);
	ck_assert_msg(rc == 0 || rc == 1, "exit %d: %s%s", rc, out, err);
	ck_assert_msg(strncmp(out, WANT_HEAD, strlen(WANT_HEAD)) == 0 && strchr(out, '\x1b') == NULL,
	    "%s", out);
	free(out);
	free(err);
}
END_TEST

static Suite *
cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("offline"), *tn = tcase_create("agents");

	tcase_add_unchecked_fixture(tc, bin_setup, NULL);
	/* the offline tests' files: removed even after a failed test */
	tcase_add_unchecked_fixture(tc, cu_base_setup, cu_base_teardown);
	tcase_add_test(tc, help_everywhere);
	tcase_add_test(tc, usage_errors);
	tcase_add_test(tc, bootstrap_agent_opts_refused);
	tcase_add_test(tc, nodeset_cmd);
	tcase_add_test(tc, stdout_write_error);
	tcase_add_test(tc, nodeset_json);
	tcase_add_test(tc, directory_for_a_file);
	tcase_add_test(tc, profile_json);
	suite_add_tcase(s, tc);
	tcase_add_unchecked_fixture(tn, bin_setup, NULL);
	tcase_add_checked_fixture(tn, setup, teardown);
	tcase_set_timeout(tn, 60);
	tcase_add_test(tn, targets_on_real_agents);
	tcase_add_test(tn, fanout_limit);
	tcase_add_test(tn, failures_fold);
	tcase_add_test(tn, refusal_and_clean_close);
	tcase_add_test(tn, dropped_before_handshake);
	tcase_add_test(tn, apply_header_visible);
	tcase_add_test(tn, fleet_output_to_closed_pipe);
	tcase_add_test(tn, every_command_with_nodes_down);
	suite_add_tcase(s, tn);
	return s;
}

int
main(void)
{
	return cu_run(cli_suite());
}
