/* Unit tests for node sets: expansion (ranges, padding, several bracket
 * groups, lists, operators, @groups and their recursion, exclusion, syntax
 * errors and their messages) and folding (padding, gaps, mixed prefixes,
 * several numeric fields), with property checks on random sets:
 * expand(fold(x)) == set(x) and fold does not depend on input order.
 *
 * KNOB_BENCH=1 also prints fold/expand timings for 10,000 and 100,000
 * names (figures only, not asserted). */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "log.h"
#include "nodeset.h"
#include "util.h"

/* Expand expr (no groups) and join the result with ','; caller frees.
 * Fails the test on an expansion error. */
static char *
expand_join(const char *expr)
{
	struct strvec sv = { 0 };
	char err[256], *s = NULL;
	size_t len = 0;

	ck_assert_msg(nodeset_expand(expr, NULL, NULL, &sv, err, sizeof(err)) == 0,
	    "expand \"%s\": %s", expr, err);
	for (size_t i = 0; i < sv.n; i++)
		len += strlen(sv.v[i]) + 1;
	s = xcalloc(1, len + 1);
	for (size_t i = 0; i < sv.n; i++) {
		if (i > 0)
			strcat(s, ",");
		strcat(s, sv.v[i]);
	}
	strvec_free(&sv);
	return s;
}

START_TEST(expand_table)
{
	static const struct { const char *expr, *want; } t[] = {
		{ "node1", "node1" },
		{ "a,b,c", "a,b,c" },
		{ "a b\tc", "a,b,c" },
		{ " a , b ", "a,b" },
		{ "node[1-3]", "node1,node2,node3" },
		{ "node[01-03]", "node01,node02,node03" },
		{ "node[001-003,010]", "node001,node002,node003,node010" },
		{ "node[08-11]", "node08,node09,node10,node11" },
		{ "node[98-101]", "node98,node99,node100,node101" },
		{ "node[098-101]", "node098,node099,node100,node101" },
		{ "node[0-2]", "node0,node1,node2" },
		{ "node[3,1,2]", "node3,node1,node2" },
		{ "node[1,01]", "node1,node01" },
		{ "r[1-2]n[01-02]", "r1n01,r1n02,r2n01,r2n02" },
		{ "r[1-2]n[1-2]-ib", "r1n1-ib,r1n2-ib,r2n1-ib,r2n2-ib" },
		{ "[1-2]x", "1x,2x" },
		{ "node[1-10/3]", "node1,node4,node7,node10" },
		{ "node[0-8/4,9]", "node0,node4,node8,node9" },
		{ "n[ 1-2 , 4 ]", "n1,n2,n4" },
		{ "a,a,b,a", "a,b" },
		{ "n[1-3],n2,n[2-4]", "n1,n2,n3,n4" },
		{ "n[1-5]!n[2-3]", "n1,n4,n5" },
		{ "n[1-5]&n[4-9]", "n4,n5" },
		{ "n[1-4]^n[3-6]", "n1,n2,n5,n6" },
		{ "n[1-5]!n3,n3", "n1,n2,n4,n5,n3" },
		{ "a,", "a" },
		{ "", "" },
		{ "node.example.com", "node.example.com" },
		{ "n[1-2].example.com", "n1.example.com,n2.example.com" },
	};

	for (size_t i = 0; i < nitems(t); i++) {
		char *got = expand_join(t[i].expr);
		ck_assert_msg(strcmp(got, t[i].want) == 0, "expand \"%s\": got \"%s\", want \"%s\"",
		    t[i].expr, got, t[i].want);
		free(got);
	}
}
END_TEST

START_TEST(expand_errors)
{
	static const struct { const char *expr, *msg; } t[] = {
		{ "node[1-3", "nodeset: unbalanced '[' in \"node[1-3\"" },
		{ "node1-3]", "nodeset: unbalanced ']' in \"node1-3]\"" },
		{ "node[5-1]", "nodeset: reversed range \"5-1\" in \"node[5-1]\"" },
		{ "node[]", "nodeset: empty brackets in \"node[]\"" },
		{ "node[1,,2]", "nodeset: empty range in \"node[1,,2]\"" },
		{ "node[a-b]", "nodeset: bad range \"a-b\" in \"node[a-b]\"" },
		{ "node[1-2-3]", "nodeset: bad range \"1-2-3\"" },
		{ "node[1-]", "nodeset: bad range \"1-\"" },
		{ "node[-3]", "nodeset: bad range \"-3\"" },
		{ "node[[1-2]]", "nodeset: nested '[' in" },
		{ "node[1-4/0]", "nodeset: bad step in range \"1-4/0\"" },
		{ "node[1-010]", "nodeset: inconsistent padding in range \"1-010\"" },
		{ "n[0-1234567890123456789]", "nodeset: number too large" },
		{ "n[0-9999999]", "nodeset: too many nodes" },
		{ "a[0-9999]b[0-9999]", "nodeset: too many nodes" },
		{ "a$b", "nodeset: invalid character '$' in \"a$b\"" },
		{ "a/b", "nodeset: invalid character '/'" },
		{ "a!", "nodeset: missing operand after '!' in \"a!\"" },
		{ "!a", "nodeset: missing operand before '!' in \"!a\"" },
		{ "a!,b", "nodeset: missing operand" },
		{ "a&&b", "nodeset: missing operand before '&'" },
		{ "@x", "nodeset: no groups defined (for @x)" },
		{ "@", "nodeset: empty group name" },
	};

	for (size_t i = 0; i < nitems(t); i++) {
		struct strvec sv = { 0 };
		char err[256] = "untouched";

		ck_assert_msg(nodeset_expand(t[i].expr, NULL, NULL, &sv, err, sizeof(err)) == -1,
		    "\"%s\" should not expand", t[i].expr);
		ck_assert_msg(strstr(err, t[i].msg) != NULL, "\"%s\": got \"%s\", want \"%s\"",
		    t[i].expr, err, t[i].msg);
		ck_assert_uint_eq(sv.n, 0);
		strvec_free(&sv);
	}
}
END_TEST

/* Test group source: a fixed table; "fail" returns -1 like an unknown one. */
static const struct { const char *name, *members[3]; } groups_tab[] = {
	{ "clients", { "node[01-04]", NULL } },
	{ "servers", { "oss[1-2]", "mds1", NULL } },
	{ "all", { "@clients,@servers", NULL } },
	{ "rack1", { "r1n[1-2]", NULL } },
	{ "rack2", { "r2n[1-2]", NULL } },
	{ "loop1", { "x1,@loop2", NULL } },
	{ "loop2", { "@loop3", NULL } },
	{ "loop3", { "@loop1", NULL } },
	{ "self", { "@self", NULL } },
	{ "bad", { "n[3-1]", NULL } },
	{ "odd", { "n[1-9/2]", NULL } },
};

static int
test_groups(void *arg, const char *g, struct strvec *out)
{
	int *calls = arg;

	(*calls)++;
	for (size_t i = 0; i < nitems(groups_tab); i++) {
		if (strcmp(groups_tab[i].name, g) != 0)
			continue;
		for (size_t j = 0; groups_tab[i].members[j] != NULL; j++)
			strvec_push(out, groups_tab[i].members[j]);
		return 0;
	}
	return -1;
}

static char *
expand_groups_join(const char *expr, char *err, size_t errlen, int *rc)
{
	struct strvec sv = { 0 };
	char *s;
	size_t len = 1;
	int calls = 0;

	*rc = nodeset_expand(expr, test_groups, &calls, &sv, err, errlen);
	for (size_t i = 0; i < sv.n; i++)
		len += strlen(sv.v[i]) + 1;
	s = xcalloc(1, len);
	for (size_t i = 0; i < sv.n; i++) {
		if (i > 0)
			strcat(s, ",");
		strcat(s, sv.v[i]);
	}
	strvec_free(&sv);
	return s;
}

START_TEST(expand_groups)
{
	static const struct { const char *expr, *want; } t[] = {
		{ "@clients", "node01,node02,node03,node04" },
		{ "@servers", "oss1,oss2,mds1" },
		{ "@all", "node01,node02,node03,node04,oss1,oss2,mds1" },
		{ "@all!@clients", "oss1,oss2,mds1" },
		{ "@clients&node[03-09]", "node03,node04" },
		{ "@rack[1-2]", "r1n1,r1n2,r2n1,r2n2" },
		{ "login1,@servers", "login1,oss1,oss2,mds1" },
		{ "@odd!n5", "n1,n3,n7,n9" },
	};
	static const struct { const char *expr, *msg; } bad[] = {
		{ "@nope", "nodeset: unknown group @nope" },
		{ "@self", "nodeset: group recursion: @self -> @self" },
		{ "@loop1", "nodeset: group recursion: @loop1 -> @loop2 -> @loop3 -> @loop1" },
		{ "a,@loop2", "nodeset: group recursion: @loop2 -> @loop3 -> @loop1 -> @loop2" },
		{ "@bad", "nodeset: reversed range \"3-1\" in \"n[3-1]\" (in group @bad)" },
	};
	char err[256];
	int rc;

	for (size_t i = 0; i < nitems(t); i++) {
		char *got = expand_groups_join(t[i].expr, err, sizeof(err), &rc);
		ck_assert_msg(rc == 0, "\"%s\": %s", t[i].expr, err);
		ck_assert_msg(strcmp(got, t[i].want) == 0, "expand \"%s\": got \"%s\", want \"%s\"",
		    t[i].expr, got, t[i].want);
		free(got);
	}
	for (size_t i = 0; i < nitems(bad); i++) {
		char *got = expand_groups_join(bad[i].expr, err, sizeof(err), &rc);
		ck_assert_msg(rc == -1, "\"%s\" should fail", bad[i].expr);
		ck_assert_msg(strstr(err, bad[i].msg) != NULL, "\"%s\": got \"%s\", want \"%s\"",
		    bad[i].expr, err, bad[i].msg);
		free(got);
	}
}
END_TEST

/* Appending to a non-empty vector does not repeat names already there. */
START_TEST(expand_append)
{
	struct strvec sv = { 0 };
	char err[128];

	strvec_push(&sv, "n2");
	ck_assert_int_eq(nodeset_expand("n[1-3]", NULL, NULL, &sv, err, sizeof(err)), 0);
	ck_assert_uint_eq(sv.n, 3);
	ck_assert_str_eq(sv.v[0], "n2");
	ck_assert_str_eq(sv.v[1], "n1");
	ck_assert_str_eq(sv.v[2], "n3");
	ck_assert_ptr_null(sv.v[3]);
	strvec_free(&sv);
}
END_TEST

/* -x: nodeset_exclude keeps order and drops exactly the excluded names. */
START_TEST(exclude)
{
	struct strvec set = { 0 }, ex = { 0 };
	char err[128];

	ck_assert_int_eq(nodeset_expand("node[01-10]", NULL, NULL, &set, err, sizeof(err)), 0);
	ck_assert_int_eq(nodeset_expand("node[03-05],node10,other", NULL, NULL, &ex, err,
	    sizeof(err)), 0);
	nodeset_exclude(&set, &ex);
	ck_assert_uint_eq(set.n, 6);
	{
		static const char *want[] = { "node01", "node02", "node06", "node07", "node08", "node09" };
		for (size_t i = 0; i < nitems(want); i++)
			ck_assert_str_eq(set.v[i], want[i]);
	}
	ck_assert_ptr_null(set.v[set.n]);
	/* an empty exclusion is a no-op; excluding everything empties the set */
	strvec_free(&ex);
	nodeset_exclude(&set, &ex);
	ck_assert_uint_eq(set.n, 6);
	ck_assert_int_eq(nodeset_expand("node[01-20]", NULL, NULL, &ex, err, sizeof(err)), 0);
	nodeset_exclude(&set, &ex);
	ck_assert_uint_eq(set.n, 0);
	strvec_free(&set);
	strvec_free(&ex);
}
END_TEST

/* Large exclusion is linear: 200,000 minus 100,000 names. */
START_TEST(exclude_large)
{
	struct strvec set = { 0 }, ex = { 0 };
	char err[128];
	uint64_t t0;

	ck_assert_int_eq(nodeset_expand("n[000000-199999]", NULL, NULL, &set, err, sizeof(err)), 0);
	ck_assert_int_eq(nodeset_expand("n[000000-199999/2]", NULL, NULL, &ex, err, sizeof(err)), 0);
	t0 = now_mono_ns();
	nodeset_exclude(&set, &ex);
	ck_assert_uint_eq(set.n, 100000);
	ck_assert_str_eq(set.v[0], "n000001");
	ck_assert_str_eq(set.v[99999], "n199999");
	/* generous bound, also holds under sanitizers; quadratic would take minutes */
	ck_assert_msg(now_mono_ns() - t0 < 5000000000ull, "exclude too slow");
	strvec_free(&set);
	strvec_free(&ex);
}
END_TEST

/* Fold a comma-joined list (no brackets, so split on ','). */
static char *
fold_list(const char *list)
{
	struct strvec sv = { 0 };
	char *copy = xstrdup(list), *save = NULL, *res;

	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		strvec_push(&sv, t);
	res = nodeset_fold(sv.v, sv.n);
	strvec_free(&sv);
	free(copy);
	return res;
}

START_TEST(fold_table)
{
	static const struct { const char *names, *want; } t[] = {
		{ "node1", "node1" },
		{ "node001,node002,node003,node004,node005,node006,node007,node008,node009,node010,"
		  "node011,node012,node013,node014,node015,node016,node020", "node[001-016,020]" },
		{ "node3,node1,node2", "node[1-3]" },
		{ "node1,node2,node4,node5,node9", "node[1-2,4-5,9]" },
		{ "node08,node09,node10,node11", "node[08-11]" },
		{ "node98,node99,node100", "node[98-100]" },
		{ "node1,node01", "node[1,01]" },
		{ "node9,node10,node010,node011", "node[9-10,010-011]" },
		{ "node1,node1,node2", "node[1-2]" },
		{ "login,admin", "admin,login" },
		{ "oss1,oss2,mds1,node01,node02", "mds1,node[01-02],oss[1-2]" },
		{ "n1-ib,n2-ib,n3-ib,n1", "n1,n[1-3]-ib" },
		{ "r1n01,r1n02,r1n03,r1n04,r1n05,r1n06,r1n07,r1n08,"
		  "r2n01,r2n02,r2n03,r2n04,r2n05,r2n06,r2n07,r2n08", "r[1-2]n[01-08]" },
		{ "r1n1,r2n1,r3n1", "r[1-3]n1" },
		{ "r1n1,r1n2,r2n1", "r1n[1-2],r2n1" },
		{ "r1n1,r1n2,r2n1,r2n2,r3n5", "r[1-2]n[1-2],r3n5" },
		{ "c1r1n1,c1r1n2,c1r2n1,c1r2n2,c2r1n1,c2r1n2,c2r2n1,c2r2n2", "c[1-2]r[1-2]n[1-2]" },
		{ "", "" },
	};

	for (size_t i = 0; i < nitems(t); i++) {
		char *got = fold_list(t[i].names);
		ck_assert_msg(strcmp(got, t[i].want) == 0, "fold \"%s\": got \"%s\", want \"%s\"",
		    t[i].names, got, t[i].want);
		free(got);
	}
}
END_TEST

/* Deterministic PRNG (xorshift64*) so failures reproduce. */
static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, de-duplicated copy of v[0..n) (pointers into v). */
static size_t
sorted_unique(char **v, size_t n, char ***out)
{
	char **c = xmalloc((n + 1) * sizeof(*c));
	size_t k = 0;

	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_str);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || strcmp(c[k - 1], c[i]) != 0)
			c[k++] = c[i];
	*out = c;
	return k;
}

/* A random name: prefix, one to three numeric fields with random padding. */
static char *
random_name(uint64_t *s)
{
	static const char *pre[] = { "node", "n", "oss", "r", "gpu-", "x.y" };
	static const char *mid[] = { "n", "c", "-s", "" };
	char buf[128];
	int len = 0, nf = 1 + (int)(rnd(s) % 3);

	len += snprintf(buf + len, sizeof(buf) - (size_t)len, "%s", pre[rnd(s) % nitems(pre)]);
	for (int f = 0; f < nf; f++) {
		int w = (int)(rnd(s) % 4);	/* 0: none, else padding width */
		unsigned v = (unsigned)(rnd(s) % (f == 0 ? 120 : 12));

		if (f > 0)
			len += snprintf(buf + len, sizeof(buf) - (size_t)len, "%s",
			    mid[rnd(s) % (nitems(mid) - 1)]);	/* fields need a separator */
		len += snprintf(buf + len, sizeof(buf) - (size_t)len, "%0*u", w, v);
	}
	if (rnd(s) % 5 == 0)
		len += snprintf(buf + len, sizeof(buf) - (size_t)len, "-ib");
	return xstrdup(buf);
}

/* Property: for random sets x, expand(fold(x)) == set(x) exactly, and fold
 * does not depend on the order of its input. */
START_TEST(fold_roundtrip_random)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	for (int round = 0; round < 300; round++) {
		struct strvec names = { 0 }, back = { 0 };
		size_t n = 1 + rnd(&seed) % (round < 200 ? 40 : 800), na, nb;
		char **a, **b, *folded, *folded2, err[256];

		for (size_t i = 0; i < n; i++)
			strvec_push_owned(&names, random_name(&seed));
		folded = nodeset_fold(names.v, names.n);
		ck_assert_msg(nodeset_expand(folded, NULL, NULL, &back, err, sizeof(err)) == 0,
		    "round %d: fold gave \"%s\" which does not expand: %s", round, folded, err);
		na = sorted_unique(names.v, names.n, &a);
		nb = sorted_unique(back.v, back.n, &b);
		ck_assert_msg(nb == back.n, "round %d: expansion has duplicates", round);
		ck_assert_msg(na == nb, "round %d: %zu names, fold \"%s\" expands to %zu", round,
		    na, folded, nb);
		for (size_t i = 0; i < na; i++)
			ck_assert_msg(strcmp(a[i], b[i]) == 0, "round %d: \"%s\" vs \"%s\" in \"%s\"",
			    round, a[i], b[i], folded);
		/* shuffle the input: same fold */
		for (size_t i = names.n; i > 1; i--) {
			size_t j = rnd(&seed) % i;
			char *t = names.v[i - 1];
			names.v[i - 1] = names.v[j];
			names.v[j] = t;
		}
		folded2 = nodeset_fold(names.v, names.n);
		ck_assert_msg(strcmp(folded, folded2) == 0, "round %d: order-dependent fold \"%s\" vs \"%s\"",
		    round, folded, folded2);
		free(a);
		free(b);
		free(folded);
		free(folded2);
		strvec_free(&names);
		strvec_free(&back);
	}
}
END_TEST

/* Property on expansions: fold(expand(e)) expands to the same set and is
 * never longer than the plain comma list. */
START_TEST(fold_of_expansion)
{
	static const char *exprs[] = {
		"node[001-016,020]", "r[1-4]n[01-32]", "n[1-100/3]", "a[1-3]b[5-7]c[01-02]",
		"node[1-10]!node[4-6]", "x[08-12],x[1-3],y[0-9]z", "c[1-2]r[01-02]n[1-3]!c2r02n2",
	};

	for (size_t i = 0; i < nitems(exprs); i++) {
		struct strvec a = { 0 }, b = { 0 };
		char err[256], *f;
		size_t plain = 0;

		ck_assert_int_eq(nodeset_expand(exprs[i], NULL, NULL, &a, err, sizeof(err)), 0);
		f = nodeset_fold(a.v, a.n);
		ck_assert_msg(nodeset_expand(f, NULL, NULL, &b, err, sizeof(err)) == 0, "%s: %s", f, err);
		ck_assert_uint_eq(a.n, b.n);
		for (size_t j = 0; j < a.n; j++) {
			ck_assert_msg(strvec_contains(&b, a.v[j]), "%s: %s lost in \"%s\"", exprs[i],
			    a.v[j], f);
			plain += strlen(a.v[j]) + 1;
		}
		ck_assert_msg(strlen(f) <= plain, "%s: fold longer than the list", f);
		free(f);
		strvec_free(&a);
		strvec_free(&b);
	}
}
END_TEST

/* Build names for the benchmark/scale tests: n names, shape 0 contiguous
 * padded, 1 random half of 2n, 2 two-dimensional racks. */
static void
make_names(struct strvec *sv, size_t n, int shape, uint64_t *seed)
{
	char buf[64];

	for (size_t i = 0; sv->n < n; i++) {
		switch (shape) {
		case 0:
			snprintf(buf, sizeof(buf), "node%06zu", i + 1);
			break;
		case 1:
			if (rnd(seed) % 2)
				continue;
			snprintf(buf, sizeof(buf), "node%06zu", i + 1);
			break;
		default:
			snprintf(buf, sizeof(buf), "r%zun%03zu", i / 100 + 1, i % 100 + 1);
			break;
		}
		strvec_push(sv, buf);
	}
}

/* 10,000 names of each shape fold and round-trip (timing printed only in
 * bench mode). */
START_TEST(fold_10000)
{
	uint64_t seed = 12345;

	for (int shape = 0; shape < 3; shape++) {
		struct strvec sv = { 0 }, back = { 0 };
		char err[256], *f;

		make_names(&sv, 10000, shape, &seed);
		f = nodeset_fold(sv.v, sv.n);
		ck_assert_int_eq(nodeset_expand(f, NULL, NULL, &back, err, sizeof(err)), 0);
		ck_assert_uint_eq(back.n, sv.n);
		/* fold output is sorted by value and the inputs were generated sorted */
		for (size_t i = 0; i < sv.n; i++)
			ck_assert_str_eq(back.v[i], sv.v[i]);
		if (shape == 0)
			ck_assert_str_eq(f, "node[000001-010000]");
		if (shape == 2)
			ck_assert_str_eq(f, "r[1-100]n[001-100]");
		free(f);
		strvec_free(&sv);
		strvec_free(&back);
	}
}
END_TEST

static double
secs(uint64_t a, uint64_t b)
{
	return (double)(b - a) / 1e9;
}

/* KNOB_BENCH=1: fold and expand timings (figures, not pass/fail). */
static void
bench(void)
{
	static const char *shape_name[] = { "contiguous", "random half", "2-D racks" };
	size_t sizes[] = { 10000, 100000 };

	for (size_t s = 0; s < nitems(sizes); s++) {
		for (int shape = 0; shape < 3; shape++) {
			struct strvec sv = { 0 }, back = { 0 };
			uint64_t seed = 777, t0, t1, t2;
			char err[256], *f;

			make_names(&sv, sizes[s], shape, &seed);
			t0 = now_mono_ns();
			f = nodeset_fold(sv.v, sv.n);
			t1 = now_mono_ns();
			if (nodeset_expand(f, NULL, NULL, &back, err, sizeof(err)) < 0)
				printf("expand failed: %s\n", err);
			t2 = now_mono_ns();
			printf("bench: %6zu names %-12s fold %.4f s  expand %.4f s  folded %zu chars\n",
			    sizes[s], shape_name[shape], secs(t0, t1), secs(t1, t2), strlen(f));
			free(f);
			strvec_free(&sv);
			strvec_free(&back);
		}
	}
}

int
main(void)
{
	Suite *s = suite_create("nodeset");
	TCase *tc = tcase_create("nodeset");
	int rc;

	log_init("check_nodeset", LOG_LVL_WARN);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, expand_table);
	tcase_add_test(tc, expand_errors);
	tcase_add_test(tc, expand_groups);
	tcase_add_test(tc, expand_append);
	tcase_add_test(tc, exclude);
	tcase_add_test(tc, exclude_large);
	tcase_add_test(tc, fold_table);
	tcase_add_test(tc, fold_roundtrip_random);
	tcase_add_test(tc, fold_of_expansion);
	tcase_add_test(tc, fold_10000);
	suite_add_tcase(s, tc);
	rc = cu_run(s);
	if (getenv("KNOB_BENCH") != NULL && strcmp(getenv("KNOB_BENCH"), "0") != 0)
		bench();
	return rc;
}
