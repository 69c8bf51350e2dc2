/* Profile loader: a table of malformed profiles, each with the exact
 * "file:line: message" errors expected; inheritance (multi-level, override,
 * remove), cycles, missing parents, lookup by name, the shipped profiles. */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "harness.h"
#include "profile.h"
#include "util.h"

static char tmpdir[PATH_MAX];

/* Each test gets its own directory below cu_base() (an unchecked fixture). */
static void
setup(void)
{
	cu_subdir(tmpdir, sizeof(tmpdir), "t");
}

/* Write tmpdir/NAME with content. */
#define put(name, content) cu_write_at(tmpdir, name, 0644, "%s", content)

#define HDR "<?xml version=\"1.0\"?>\n"

struct bad_case {
	const char *what;
	const char *files[3][2];	/* extra files: name, content */
	const char *content;		/* t.xml */
	const char *errors[6];		/* expected, "t.xml:LINE: message" relative to tmpdir */
};

static const struct bad_case bad_cases[] = {
	{ "not well-formed", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <sysctl key=\"vm.x\" value=\"1\">\n</profile>\n",
	  { "t.xml:4: Opening and ending tag mismatch: sysctl line 3 and profile",
	    "t.xml:5: Premature end of data in tag profile line 2", NULL } },
	{ "wrong root", { { NULL, NULL } },
	  HDR "<play name=\"t\"/>\n",
	  { "t.xml:2: Expecting element profile, got play", NULL } },
	{ "unknown element", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <description>d</description>\n  <bios key=\"x\" value=\"1\"/>\n</profile>\n",
	  { "t.xml:4: unknown element <bios>", NULL } },
	{ "bad size for read_ahead_kb", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <blockdev device=\"sd*\" attr=\"read_ahead_kb\" value=\"4Q\"/>\n</profile>\n",
	  { "t.xml:3: bad value for blockdev sd* read_ahead_kb: '4Q' is not a size (number with optional unit K, M, G, T, s)", NULL } },
	{ "odd sectors are not whole KiB", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <blockdev device=\"sd*\" attr=\"max_sectors_kb\" value=\"3s\"/>\n</profile>\n",
	  { "t.xml:3: bad value for blockdev sd* max_sectors_kb: '3s' is not a whole number of KiB", NULL } },
	{ "scheduler must be one choice", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <blockdev device=\"sd*\" attr=\"scheduler\" value=\"none kyber\"/>\n</profile>\n",
	  { "t.xml:3: bad value for blockdev sd* scheduler: 'none kyber' is not a single choice", NULL } },
	{ "sysfs outside /sys", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <sysfs key=\"/sys/../etc/shadow\" value=\"1\"/>\n</profile>\n",
	  { "t.xml:3: sysfs key '/sys/../etc/shadow' is not a path under /sys", NULL } },
	{ "nfsd key", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <nfsd key=\"workers\" value=\"8\"/>\n</profile>\n",
	  { "t.xml:3: unknown nfsd key 'workers' (threads, max_block_size, nfsv4leasetime, nfsv4gracetime)", NULL } },
	{ "mtu range", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <net interface=\"eth*\" attr=\"mtu\" value=\"20\"/>\n</profile>\n",
	  { "t.xml:3: bad value for net eth* mtu: 20 is outside 68..65536", NULL } },
	{ "duplicate key", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <sysctl key=\"vm.dirty_ratio\" value=\"10\"/>\n  <sysctl key=\"vm.dirty_ratio\" value=\"20\"/>\n</profile>\n",
	  { "t.xml:4: duplicate setting sysctl vm.dirty_ratio (first at line 3)", NULL } },
	{ "one sysctl spelt two ways", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <sysctl key=\"vm/dirty_ratio\" value=\"10\"/>\n  <sysctl key=\"vm.dirty_ratio\" value=\"20\"/>\n</profile>\n",
	  { "t.xml:4: duplicate setting sysctl vm.dirty_ratio (first at line 3 as vm/dirty_ratio)", NULL } },
	{ "gpfs attribute names ignore case", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <gpfs key=\"pagePool\" value=\"4G\"/>\n  <gpfs key=\"pagepool\" value=\"8G\"/>\n</profile>\n",
	  { "t.xml:4: duplicate setting gpfs pagepool (first at line 3 as pagePool)", NULL } },
	{ "hex where a size is wanted", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <blockdev device=\"sd*\" attr=\"read_ahead_kb\" value=\"0x100\"/>\n</profile>\n",
	  { "t.xml:3: bad value for blockdev sd* read_ahead_kb: '0x100' is not a size (number with optional unit K, M, G, T, s)", NULL } },
	{ "unknown attribute (schema)", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <sysctl key=\"vm.x\" value=\"1\" colour=\"red\"/>\n</profile>\n",
	  { "t.xml:3: Invalid attribute colour for element sysctl", NULL } },
	{ "every error of a file, in line order", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <nfsd key=\"threads\" value=\"lots\"/>\n  <gpfs key=\"page-pool\" value=\"1G\"/>\n"
	  "  <sysctl key=\"vm.swappiness\" value=\"1\" persistent=\"yes\"/>\n  <lustre key=\"osc.*.checksums\" value=\"0\" persistent=\"maybe\"/>\n</profile>\n",
	  { "t.xml:3: bad value for nfsd threads: 'lots' is not an integer",
	    "t.xml:4: bad gpfs attribute 'page-pool'",
	    "t.xml:5: persistent=\"yes\" is only for lustre",
	    "t.xml:6: persistent must be yes or no, not 'maybe'", NULL } },
	{ "link MTU and IPv6 MTU of one interface", { { NULL, NULL } },
	  HDR "<profile name=\"t\">\n  <sysctl key=\"net.ipv6.conf.kq0.mtu\" value=\"1300\"/>\n"
	  "  <net interface=\"kq0\" attr=\"mtu\" value=\"9000\"/>\n"
	  "  <sysctl key=\"net/ipv6/conf/kq1/mtu\" value=\"1300\"/>\n  <net interface=\"kq[1-2]\" attr=\"mtu\" value=\"9000\"/>\n"
	  "  <sysctl key=\"net.ipv6.conf.default.mtu\" value=\"1300\"/>\n  <net interface=\"*\" attr=\"txqueuelen\" value=\"9000\"/>\n</profile>\n",
	  { "t.xml:3: sysctl net.ipv6.conf.kq0.mtu and net kq0 mtu (line 4) fight: every write of kq0's link MTU sets its IPv6 MTU to it, so the outcome and a rollback's originals would depend on the write order; set the link MTU alone (its IPv6 MTU follows it) or the IPv6 MTU alone",
	    "t.xml:5: sysctl net/ipv6/conf/kq1/mtu and net kq[1-2] mtu (line 6) fight: every write of kq[1-2]'s link MTU sets its IPv6 MTU to it, so the outcome and a rollback's originals would depend on the write order; set the link MTU alone (its IPv6 MTU follows it) or the IPv6 MTU alone", NULL } },
	{ "missing parent", { { NULL, NULL } },
	  HDR "<profile name=\"t\" extends=\"no-such-profile\">\n  <sysctl key=\"vm.x\" value=\"1\"/>\n</profile>\n",
	  { "t.xml:2: parent profile 'no-such-profile' not found", NULL } },
	{ "cycle", { { "a.xml", HDR "<profile name=\"a\" extends=\"t\">\n</profile>\n" }, { NULL, NULL } },
	  HDR "<profile name=\"t\" extends=\"a\">\n</profile>\n",
	  { "a.xml:2: inheritance cycle: 'a' extends 't', which is already being resolved", NULL } },
	{ "remove of a key no parent sets", { { "base.xml", HDR "<profile name=\"base\">\n  <sysctl key=\"vm.a\" value=\"1\"/>\n</profile>\n" }, { NULL, NULL } },
	  HDR "<profile name=\"t\" extends=\"base\">\n  <remove driver=\"sysctl\" key=\"vm.b\"/>\n</profile>\n",
	  { "t.xml:3: remove: no inherited setting sysctl vm.b", NULL } },
	{ "errors in the parent are the parent's", { { "p.xml", HDR "<profile name=\"p\">\n\n  <sysctl key=\"vm.a\" value=\"1 [\"/>\n  <blockdev device=\"sd/a\" attr=\"scheduler\" value=\"none\"/>\n</profile>\n" }, { NULL, NULL } },
	  HDR "<profile name=\"t\" extends=\"p\">\n  <nfsd key=\"threads\" value=\"-1\"/>\n</profile>\n",
	  { "t.xml:3: bad value for nfsd threads: -1 is outside 0..8192",
	    "p.xml:5: bad block device glob 'sd/a'", NULL } },
};

START_TEST(test_bad_profiles)
{
	const struct bad_case *c = &bad_cases[_i];
	struct strvec errs = { 0 };
	struct profile *p;
	char path[256];
	size_t n = 0, dl = strlen(tmpdir) + 1;

	for (size_t k = 0; k < 3 && c->files[k][0]; k++)
		put(c->files[k][0], c->files[k][1]);
	put("t.xml", c->content);
	snprintf(path, sizeof(path), "%s/t.xml", tmpdir);
	p = profile_load(path, &errs);
	ck_assert_msg(p == NULL, "%s: loaded", c->what);
	while (c->errors[n])
		n++;
	for (size_t k = 0; k < errs.n; k++)
		fprintf(stderr, "  [%s] %s\n", c->what, errs.v[k]);
	ck_assert_msg(errs.n == n, "%s: %zu errors, expected %zu", c->what, errs.n, n);
	for (size_t k = 0; k < n; k++) {
		ck_assert_msg(strncmp(errs.v[k], tmpdir, strlen(tmpdir)) == 0, "%s", errs.v[k]);
		ck_assert_str_eq(errs.v[k] + dl, c->errors[k]);
	}
	strvec_free(&errs);
}
END_TEST

/* Errors past line 65535: a comment of 70000 lines, then elements on lines
 * 70004.. (two on one line, one with children, a start tag over two
 * lines), each reported at the line of its start tag as in a small file
 * (RelaxNG's too, at the line where the start tag ends).  libxml2 keeps an
 * element's line in 16 bits (65535 past that) and xmlGetLineNo borrows
 * the next node's; before, each was reported a line (or two) late
 * ("t.xml:70006: unknown element <bios>"). */
static const struct {
	const char *tail;		/* after the 70000-line comment */
	const char *errors[4];		/* expected, relative to tmpdir */
} big_cases[] = {
	{ "  <sysctl key=\"vm.dirty_ratio\" value=\"10\"/><sysctl key=\"vm.dirty_ratio\" "
	  "value=\"20\"/>\n  <bios key=\"x\" value=\"1\"/>\n"
	  "  <blockdev device=\"sd*\" attr=\"read_ahead_kb\" value=\"4Q\">\n  </blockdev>\n",
	  { "t.xml:70004: duplicate setting sysctl vm.dirty_ratio (first at line 70004)",
	    "t.xml:70005: unknown element <bios>",
	    "t.xml:70006: bad value for blockdev sd* read_ahead_kb: '4Q' is not a size (number "
	    "with optional unit K, M, G, T, s)", NULL } },
	{ "  <sysctl key=\"vm.swappiness\" value=\"10\"\n     oops=\"1\"/>\n",
	  { "t.xml:70005: Invalid attribute oops for element sysctl", NULL } },
};

START_TEST(test_big_file_lines)
{
	struct strvec errs = { 0 };
	char path[PATH_MAX], *pad = xmalloc(70001);
	size_t n = 0, dl = strlen(tmpdir) + 1;

	memset(pad, '\n', 70000);
	pad[70000] = '\0';
	cu_write_at(tmpdir, "t.xml", 0644, HDR "<profile name=\"t\">\n<!--%s-->\n%s</profile>\n",
	    pad, big_cases[_i].tail);
	free(pad);
	snprintf(path, sizeof(path), "%s/t.xml", tmpdir);
	ck_assert_ptr_null(profile_load(path, &errs));
	while (big_cases[_i].errors[n])
		n++;
	for (size_t k = 0; k < errs.n; k++)
		fprintf(stderr, "  [big %d] %s\n", _i, errs.v[k]);
	ck_assert_uint_eq(errs.n, n);
	for (size_t k = 0; k < n; k++)
		ck_assert_str_eq(errs.v[k] + dl, big_cases[_i].errors[k]);
	strvec_free(&errs);
}
END_TEST

/* tmpdir/NAME loaded and resolved; the test fails (errors printed) when
 * it does not load.  Caller frees. */
static struct profile *
load_ok(const char *name)
{
	struct strvec errs = { 0 };
	struct profile *p;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	p = profile_load(path, &errs);
	for (size_t k = 0; k < errs.n; k++)
		fprintf(stderr, "%s\n", errs.v[k]);
	strvec_free(&errs);
	ck_assert_msg(p != NULL, "%s does not load", name);
	return p;
}

START_TEST(test_inheritance)
{
	struct profile *p;

	put("base.xml", HDR "<profile name=\"base\">\n"
	    "  <description>root</description>\n"
	    "  <sysctl key=\"vm.dirty_ratio\" value=\"10\"/>\n"
	    "  <sysctl key=\"vm.swappiness\" value=\"1\"/>\n"
	    "  <blockdev device=\"sd*\" attr=\"scheduler\" value=\"mq-deadline\"/>\n"
	    "  <blockdev device=\"sd*\" attr=\"read_ahead_kb\" value=\"4M\"/>\n"
	    "</profile>\n");
	put("mid.xml", HDR "<profile name=\"mid\" extends=\"base\">\n"
	    "  <sysctl key=\"vm.dirty_ratio\" value=\"20\"/>\n"
	    "  <remove driver=\"blockdev\" key=\"sd*\" attr=\"read_ahead_kb\"/>\n"
	    "  <lustre key=\"osc.*.checksums\" value=\"0\" persistent=\"yes\"/>\n"
	    "</profile>\n");
	put("leaf.xml", HDR "<profile name=\"leaf\" extends=\"mid.xml\">\n"
	    "  <remove driver=\"sysctl\" key=\"vm.swappiness\"/>\n"
	    "  <blockdev device=\"sd*\" attr=\"scheduler\" value=\"none\" rotational=\"0\"/>\n"
	    "  <net interface=\"eth*\" attr=\"mtu\" value=\"9000\"/>\n"
	    "</profile>\n");
	p = load_ok("leaf.xml");
	ck_assert_str_eq(p->name, "leaf");
	ck_assert_int_eq(p->chain.n, 3);
	ck_assert_str_eq(p->chain.v[0], "base");
	ck_assert_str_eq(p->chain.v[2], "leaf");
	ck_assert_int_eq(p->n, 4);
	/* inherited first, in the parent's order; overrides keep their place */
	ck_assert_str_eq(p->s[0].key, "vm.dirty_ratio");
	ck_assert_str_eq(p->s[0].value, "20");
	ck_assert_str_eq(p->s[0].profile, "mid");
	ck_assert_int_eq(p->s[0].line, 3);
	ck_assert_str_eq(p->s[1].driver, "blockdev");
	ck_assert_str_eq(p->s[1].attr, "scheduler");
	ck_assert_str_eq(p->s[1].value, "none");
	ck_assert_str_eq(p->s[1].match, "rotational=0");
	ck_assert_str_eq(p->s[1].profile, "leaf");
	ck_assert_str_eq(p->s[2].driver, "lustre");
	ck_assert_int_eq(p->s[2].persistent, 1);
	ck_assert_str_eq(p->s[3].driver, "net");
	ck_assert_str_eq(p->s[3].value, "9000");
	profile_free(p);
}
END_TEST

/* A link MTU inherited and an IPv6 MTU glob of the child's fight too: the
 * error is at the sysctl's line and names the net key's file and line;
 * a grandchild that removes the sysctl key loads. */
START_TEST(test_mtu_fight_inherited)
{
	struct strvec errs = { 0 };
	char path[PATH_MAX], want[PATH_MAX * 2 + 64];
	struct profile *p;

	put("link.xml", HDR "<profile name=\"link\">\n"
	    "  <net interface=\"eth0\" attr=\"mtu\" value=\"9000\"/>\n</profile>\n");
	put("v6.xml", HDR "<profile name=\"v6\" extends=\"link\">\n\n"
	    "  <sysctl key=\"net.ipv6.conf.*.mtu\" value=\"1280\"/>\n</profile>\n");
	put("fix.xml", HDR "<profile name=\"fix\" extends=\"v6\">\n"
	    "  <remove driver=\"sysctl\" key=\"net.ipv6.conf.*.mtu\"/>\n</profile>\n");
	snprintf(path, sizeof(path), "%s/v6.xml", tmpdir);
	ck_assert_ptr_null(profile_load(path, &errs));
	for (size_t k = 0; k < errs.n; k++)
		fprintf(stderr, "  %s\n", errs.v[k]);
	ck_assert_int_eq(errs.n, 1);
	snprintf(want, sizeof(want), "%s/v6.xml:4: sysctl net.ipv6.conf.*.mtu and net eth0 mtu "
	    "(%s/link.xml:3) fight: every write of eth0's link MTU", tmpdir, tmpdir);
	ck_assert_msg(strncmp(errs.v[0], want, strlen(want)) == 0, "%s", errs.v[0]);
	strvec_free(&errs);
	p = load_ok("fix.xml");
	ck_assert_int_eq(p->n, 1);
	profile_free(p);
}
END_TEST

START_TEST(test_lookup_by_name)
{
	struct strvec errs = { 0 };
	struct profile *p;
	char *path;

	put("site-x.xml", HDR "<profile name=\"site-x\" extends=\"nfs-server\">\n"
	    "  <nfsd key=\"threads\" value=\"128\"/>\n</profile>\n");
	setenv("KNOB_PROFILE_PATH", tmpdir, 1);
	path = profile_find("site-x");
	ck_assert_ptr_nonnull(path);
	free(path);
	ck_assert_ptr_null(profile_find("no-such-thing"));
	/* site-x is found in KNOB_PROFILE_PATH, its parent in the source tree */
	p = profile_load("site-x", &errs);
	for (size_t k = 0; k < errs.n; k++)
		fprintf(stderr, "%s\n", errs.v[k]);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p->chain.v[0], "bios-performance");
	ck_assert_str_eq(p->chain.v[1], "hpc-storage-base");
	ck_assert_str_eq(p->chain.v[2], "nfs-server");
	ck_assert_str_eq(p->s[p->n - 1].key, "threads");
	ck_assert_str_eq(p->s[p->n - 1].value, "128");
	profile_free(p);
	unsetenv("KNOB_PROFILE_PATH");
	p = profile_load("no-such-thing", &errs);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(errs.n, 1);
	ck_assert_ptr_nonnull(strstr(errs.v[0], "no-such-thing:0: no profile of that name"));
	strvec_free(&errs);
}
END_TEST

/* The setting of p with key, or NULL. */
static const struct psetting *
setting_of(const struct profile *p, const char *key)
{
	for (size_t k = 0; k < p->n; k++)
		if (strcmp(p->s[k].key, key) == 0)
			return &p->s[k];
	return NULL;
}

/* The setting of p with key; the test fails when there is none. */
static const struct psetting *
must_setting(const struct profile *p, const char *key)
{
	const struct psetting *s = setting_of(p, key);

	ck_assert_msg(s != NULL, "%s has no %s", p->name, key);
	return s;
}

/* The reports the shipped profiles may cite (../shared/reports, by file
 * name), or an explicit "site choice:". */
static int
cite_ok(const char *c)
{
	static const char *const ok[] = { "000_76778d7753b36c09.txt: ",
		"001_33fa8f9281492fdf.txt: ", "002_3b78a74f7c778948.txt: ",
		"003_b5e57298e88e371f.txt: ", "004_6292a0ede122222e.txt: ", "site choice: " };

	for (size_t i = 0; c && i < nitems(ok); i++)
		if (strncmp(c, ok[i], strlen(ok[i])) == 0 && strlen(c) > strlen(ok[i]) + 10)
			return 1;
	return 0;
}

/* Every shipped profile loads, has a description and a one-line summary,
 * and cites a report (or says "site choice") for every setting; and the
 * fixes the shipped profiles needed hold. */
START_TEST(test_shipped)
{
	static const char *const names[] = { "bios-performance", "hpc-storage-base",
		"lustre-client-seq", "lustre-client-random", "gpfs-client", "gpfs-nvme-scratch",
		"nfs-server" };
	static const char *const clients[] = { "lustre-client-seq", "lustre-client-random",
		"gpfs-client", "gpfs-nvme-scratch" };
	struct strvec errs = { 0 };
	struct profile *p;
	const struct psetting *ps;

	for (size_t i = 0; i < nitems(names); i++) {
		p = profile_load(names[i], &errs);
		for (size_t k = 0; k < errs.n; k++)
			fprintf(stderr, "%s\n", errs.v[k]);
		ck_assert_msg(p != NULL, "%s", names[i]);
		ck_assert_msg(strlen(p->description) > 100, "%s: description", names[i]);
		ck_assert_msg(*p->summary && strchr(p->summary, '\n') == NULL, "%s: summary", names[i]);
		for (size_t k = 0; k < p->n; k++)
			ck_assert_msg(cite_ok(p->s[k].cite), "%s: %s %s: cite '%s'", names[i],
			    p->s[k].driver, p->s[k].key, p->s[k].cite ? p->s[k].cite : "");
		profile_free(p);
	}
	/* clients do not inherit the BIOS-style knobs (C-states, THP) */
	for (size_t i = 0; i < nitems(clients); i++) {
		p = profile_load(clients[i], &errs);
		ck_assert_ptr_nonnull(p);
		for (size_t k = 0; k < p->n; k++)
			ck_assert_msg(strcmp(p->s[k].driver, "sysfs") != 0 &&
			    strcmp(p->s[k].driver, "sysctl") != 0, "%s inherits %s", clients[i],
			    p->s[k].key);
		ck_assert_ptr_nonnull(strstr(p->description, "bios-performance"));
		profile_free(p);
	}
	/* the random runs of the Lustre report set two parameters, no read-ahead */
	p = profile_load("lustre-client-random", &errs);
	ck_assert_uint_eq(p->n, 2);
	ck_assert_str_eq(must_setting(p, "osc.*OST*.max_rpcs_in_flight")->value, "256");
	ck_assert_ptr_null(setting_of(p, "llite.*.max_read_ahead_mb"));
	profile_free(p);
	/* QMUL's NVMe report: LROC off, no page pool */
	p = profile_load("gpfs-nvme-scratch", &errs);
	ck_assert_ptr_null(setting_of(p, "pagepool"));
	ck_assert_str_eq(must_setting(p, "lrocData")->value, "no");
	ck_assert_ptr_nonnull(strstr(must_setting(p, "lrocData")->cite, "004_6292a0ede122222e.txt"));
	profile_free(p);
	/* the NFS server: rotational filter, SMT off as its report says */
	p = profile_load("nfs-server", &errs);
	ps = must_setting(p, "sd*");
	ck_assert_str_eq(ps->match, "rotational=1");
	ps = must_setting(p, "/sys/devices/system/cpu/smt/control");
	ck_assert_str_eq(ps->value, "off");
	ck_assert_ptr_nonnull(strstr(ps->cite, "001_33fa8f9281492fdf.txt"));
	profile_free(p);
	/* risky values say what they trade away */
	p = profile_load("lustre-client-seq", &errs);
	ck_assert_ptr_nonnull(strstr(p->description, "integrity"));
	ck_assert_ptr_nonnull(strstr(p->description, "set_param -P"));
	profile_free(p);
	p = profile_load("bios-performance", &errs);
	ck_assert_ptr_nonnull(strstr(p->description, "power"));
	ck_assert_ptr_nonnull(strstr(p->description, "turbo"));
	ck_assert_ptr_nonnull(strstr(p->description, "memory"));
	profile_free(p);
	strvec_free(&errs);
}
END_TEST

/* Output of "knobctl ARGS" ($KNOB_BIN, default build), malloc'd; its exit
 * status must be want. */
static char *
knobctl_out(int want, const char *args)
{
	const char *bin = getenv("KNOB_BIN");
	char *out = NULL;
	int rc = cu_sh_out(&out, "%s/knobctl %s", bin ? bin : "build", args);

	ck_assert_msg(rc == want, "knobctl %s: exit %d, not %d:\n%s", args, rc, want, out);
	return out;
}

/* profile list: name, parent and summary, sorted by name; profile show:
 * every setting's citation. */
START_TEST(test_list_and_show)
{
	char *out = knobctl_out(0, "profile list"), *prev = NULL, *save = NULL;
	int rows = 0;

	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char name[64], parent[64];

		if (rows++ == 0) {
			ck_assert_msg(strncmp(l, "NAME", 4) == 0 && strstr(l, "PARENT") &&
			    strstr(l, "SUMMARY"), "header: %s", l);
			continue;
		}
		ck_assert_int_eq(sscanf(l, "%63s %63s", name, parent), 2);
		if (strcmp(name, "nfs-server") == 0)
			ck_assert_str_eq(parent, "hpc-storage-base");
		if (strcmp(name, "lustre-client-random") == 0)
			ck_assert_str_eq(parent, "-");
		ck_assert_msg(prev == NULL || strcmp(prev, name) < 0, "%s after %s", name, prev);
		free(prev);
		prev = xstrdup(name);
	}
	ck_assert_int_ge(rows, 8);
	free(prev);
	free(out);
	out = knobctl_out(0, "profile show nfs-server");
	ck_assert_ptr_nonnull(strstr(out, "cite: 001_33fa8f9281492fdf.txt: the solution uses the "
	    "deadline I/O scheduler and 256 NFS daemons"));
	ck_assert_ptr_null(strstr(out, "cite: (none)"));
	free(out);
}
END_TEST

/* No byte of out reaches a terminal as a control (C0 but the line feed,
 * DEL, C1) nor as a bidi override, an isolate or a CR-like separator. */
static void
assert_inert(const char *out)
{
	static const char *const bad[] = { "\xc2\x9b", "\xe2\x80\xae", "\xe2\x80\xac",
		"\xe2\x81\xa6", "\xe2\x81\xa9" };

	for (const char *c = out; *c; c++)
		ck_assert_msg(*c == '\n' || ((unsigned char)*c >= 0x20 && *c != 0x7f),
		    "control 0x%02x in:\n%s", (unsigned char)*c, out);
	for (size_t i = 0; i < nitems(bad); i++)
		ck_assert_msg(strstr(out, bad[i]) == NULL, "raw %s in:\n%s", bad[i], out);
}

/* The admin's own profile text reaches the terminal escaped (visible.h):
 * before, profile show printed a description's CR (hiding the text before
 * it), a value's CSI (U+009B) and a key's right-to-left override raw, and
 * profile list a summary's bidi override and a file name's ESC.  --json
 * keeps the strings as they are, JSON-escaped (the bidi and C1 controls as
 * \uNNNN, so that the document too is inert on a terminal). */
START_TEST(test_show_list_visible)
{
	static const char evil[] = HDR "<profile name=\"evil\" summary=\"fast "
	    "&#x202E;gnp.exe&#x202C; x&#x9b;2J\">\n"
	    "  <description>line one&#13;forged\n  second &#x2066;line&#x2069;</description>\n"
	    "  <sysfs key=\"/sys/kernel/mm/x&#x202E;y\" value=\"a&#x9b;31m&#13;z\" "
	    "cite=\"r&#13;c\"/>\n</profile>\n";
	char cmd[PATH_MAX + 64], want[PATH_MAX + 160], *out;
	json_object *doc, *s;

	put("evil.xml", evil);
	put("bad\x1b[2J.xml", evil);
	setenv("KNOB_PROFILE_PATH", tmpdir, 1);
	out = knobctl_out(0, "profile list");
	unsetenv("KNOB_PROFILE_PATH");
	assert_inert(out);
	ck_assert_msg(strstr(out, "\nbad\\x1b[2J ") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "\nevil                   -                  fast \\u202egnp.exe"
	    "\\u202c x\\u009b2J\n") != NULL, "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "profile show %s/evil.xml", tmpdir);
	out = knobctl_out(0, cmd);
	assert_inert(out);
	ck_assert_msg(strstr(out, "\n  line one\\x0dforged\n  second \\u2066line\\u2069\n"), "%s", out);
	snprintf(want, sizeof(want), "\n  sysfs /sys/kernel/mm/x\\u202ey = a\\u009b31m\\x0dz  from evil "
	    "(%s/evil.xml:5)\n      cite: r\\x0dc\n", tmpdir);
	ck_assert_msg(strstr(out, want), "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "--json profile show %s/evil.xml", tmpdir);
	out = knobctl_out(0, cmd);
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "not JSON: %s", out);
	ck_assert_msg(strstr(out, "second \\u2066line\\u2069") != NULL, "%s", out);
	assert_inert(out);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(doc, "description")),
	    "line one\rforged\n  second \xe2\x81\xa6line\xe2\x81\xa9");
	s = json_object_array_get_idx(json_object_object_get(doc, "settings"), 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(s, "value")),
	    "a\xc2\x9b" "31m\rz");
	json_object_put(doc);
	free(out);
}
END_TEST

/* profile check: "FILE: ok (NAME, N settings)" for a good file, exit 0; with
 * a bad one among them every error as file:line: message and exit 2; a
 * truncated file gives libxml2's errors at their line. */
START_TEST(test_check_command)
{
	char cmd[3 * PATH_MAX], want[PATH_MAX + 128], *out;

	put("ok.xml", HDR "<profile name=\"okp\">\n  <sysctl key=\"vm.swappiness\" value=\"10\"/>\n"
	    "  <sysctl key=\"vm.dirty_ratio\" value=\"20\"/>\n</profile>\n");
	put("bad.xml", HDR "<profile name=\"bad\">\n  <sysctl key=\"vm.swappiness\"/>\n"
	    "  <frob x=\"1\"/>\n</profile>\n");
	put("trunc.xml", HDR "<profile name=\"t\">\n<sysctl key=");
	snprintf(cmd, sizeof(cmd), "profile check %s/ok.xml", tmpdir);
	out = knobctl_out(0, cmd);
	snprintf(want, sizeof(want), "%s/ok.xml: ok (okp, 2 settings)\n", tmpdir);
	ck_assert_str_eq(out, want);
	free(out);
	snprintf(cmd, sizeof(cmd), "profile check %s/ok.xml %s/bad.xml", tmpdir, tmpdir);
	out = knobctl_out(2, cmd);
	ck_assert_ptr_nonnull(strstr(out, want));
	snprintf(want, sizeof(want), "%s/bad.xml:3: <sysctl> needs key and value\n", tmpdir);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	snprintf(want, sizeof(want), "%s/bad.xml:4: unknown element <frob>\n", tmpdir);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "profile check %s/trunc.xml", tmpdir);
	out = knobctl_out(2, cmd);
	snprintf(want, sizeof(want), "%s/trunc.xml:3: ", tmpdir);
	ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
	free(out);
}
END_TEST

/* A child overrides and removes an inherited sysctl spelt the other way
 * (vm/dirty_ratio is vm.dirty_ratio: one file below /proc/sys), in its
 * parent's place; a gpfs attribute whatever its case. */
START_TEST(test_key_spellings)
{
	struct profile *p;

	put("base.xml", HDR "<profile name=\"base\">\n"
	    "  <sysctl key=\"vm.dirty_ratio\" value=\"10\"/>\n"
	    "  <sysctl key=\"vm/swappiness\" value=\"1\"/>\n"
	    "  <gpfs key=\"pagepool\" value=\"4G\"/>\n"
	    "</profile>\n");
	put("leaf.xml", HDR "<profile name=\"leaf\" extends=\"base\">\n"
	    "  <sysctl key=\"vm/dirty_ratio\" value=\"20\"/>\n"
	    "  <remove driver=\"sysctl\" key=\"vm.swappiness\"/>\n"
	    "  <gpfs key=\"pagePool\" value=\"8G\"/>\n"
	    "</profile>\n");
	p = load_ok("leaf.xml");
	ck_assert_uint_eq(p->n, 2);
	ck_assert_str_eq(p->s[0].key, "vm/dirty_ratio");
	ck_assert_str_eq(p->s[0].value, "20");
	ck_assert_str_eq(p->s[1].key, "pagePool");
	ck_assert_str_eq(p->s[1].value, "8G");
	profile_free(p);
}
END_TEST

/* profile check of a child given as a bare file name, run in its
 * directory: the parent beside it is found (before, dirname's result was
 * dropped and the parent was looked for under "child.xml/": "child.xml:2:
 * parent profile 'base' not found", exit 2). */
START_TEST(test_parent_beside_bare_name)
{
	const char *bin = getenv("KNOB_BIN");
	char knobctl[PATH_MAX], *out = NULL;
	int rc;

	ck_assert_ptr_nonnull(realpath(bin ? bin : "build", knobctl));
	put("base.xml", HDR "<profile name=\"base\">\n"
	    "  <sysctl key=\"vm.swappiness\" value=\"10\"/>\n</profile>\n");
	put("child.xml", HDR "<profile name=\"child\" extends=\"base\">\n"
	    "  <sysctl key=\"vm.dirty_ratio\" value=\"20\"/>\n</profile>\n");
	rc = cu_sh_out(&out, "cd '%s' && '%s/knobctl' profile check child.xml", tmpdir, knobctl);
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	ck_assert_str_eq(out, "child.xml: ok (child, 2 settings)\n");
	free(out);
}
END_TEST

/* origin of setting i of a profile show --json document. */
static const char *
json_origin(json_object *doc, size_t i)
{
	json_object *s = json_object_array_get_idx(json_object_object_get(doc, "settings"), i);

	return json_object_get_string(json_object_object_get(s, "origin"));
}

/* profile show of a child named as a bare file name, in its directory:
 * text and --json give each setting's origin alike, as the user names the
 * file (before: text "base.xml:3", --json "./base.xml:3"), and a setting
 * without a cite says "cite: (none)" (before: an empty "cite: " line). */
START_TEST(test_show_origin_and_cite)
{
	const char *bin = getenv("KNOB_BIN");
	char knobctl[PATH_MAX], *out = NULL;
	json_object *doc;

	ck_assert_ptr_nonnull(realpath(bin ? bin : "build", knobctl));
	put("base.xml", HDR "<profile name=\"base\">\n"
	    "  <sysctl key=\"vm.swappiness\" value=\"10\"/>\n</profile>\n");
	put("child.xml", HDR "<profile name=\"child\" extends=\"base\">\n"
	    "  <sysctl key=\"vm.dirty_ratio\" value=\"20\" cite=\"r1\"/>\n</profile>\n");
	ck_assert_int_eq(cu_sh_out(&out, "cd '%s' && '%s/knobctl' profile show child.xml", tmpdir,
	    knobctl), 0);
	ck_assert_msg(strstr(out, "from base (base.xml:3)\n      cite: (none)\n") &&
	    strstr(out, "from child (child.xml:3)\n      cite: r1\n"), "%s", out);
	free(out);
	ck_assert_int_eq(cu_sh_out(&out, "cd '%s' && '%s/knobctl' --json profile show child.xml",
	    tmpdir, knobctl), 0);
	ck_assert_msg((doc = json_tokener_parse(out)) != NULL, "not JSON: %s", out);
	ck_assert_str_eq(json_origin(doc, 0), "base.xml:3");
	ck_assert_str_eq(json_origin(doc, 1), "child.xml:3");
	json_object_put(doc);
	free(out);
}
END_TEST

static Suite *
profile_suite(void)
{
	Suite *s = suite_create("profile");
	TCase *tc = tcase_create("load");

	tcase_add_unchecked_fixture(tc, cu_base_setup, cu_base_teardown);
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_loop_test(tc, test_bad_profiles, 0, (int)nitems(bad_cases));
	tcase_add_loop_test(tc, test_big_file_lines, 0, (int)nitems(big_cases));
	tcase_add_test(tc, test_inheritance);
	tcase_add_test(tc, test_mtu_fight_inherited);
	tcase_add_test(tc, test_lookup_by_name);
	tcase_add_test(tc, test_shipped);
	tcase_add_test(tc, test_list_and_show);
	tcase_add_test(tc, test_show_list_visible);
	tcase_add_test(tc, test_check_command);
	tcase_add_test(tc, test_key_spellings);
	tcase_add_test(tc, test_parent_beside_bare_name);
	tcase_add_test(tc, test_show_origin_and_cite);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cu_run(profile_suite());
}
