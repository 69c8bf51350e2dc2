/* bench/ctl_scale: the controller's per-command bookkeeping at fleet size,
 * without any network: loading a cluster.xml of N nodes (each with its own
 * address, in racks as groups), expanding the node sets a user types
 * (a range, @all, racks with an exclusion), the ticket cache lookups, and
 * folding N results into the text output (a few distinct outcomes, as a
 * real fleet gives).  Median of 5 rounds each; the goal is well under
 * 100 ms at 10,000 nodes.  Usage: ctl_scale [N]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knobctl.h"
#include "log.h"
#include "nodeset.h"
#include "util.h"

#define ROUNDS 5
#define RACK 40
#define GOAL_MS 100.0

/* cluster.xml with n nodes node00001.., racks of RACK as groups. */
static int
write_inventory(const char *path, int n)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return -1;
	fprintf(f, "<?xml version=\"1.0\"?>\n<cluster port=\"7420\">\n"
	    "  <results db=\"results.db\"/>\n"
	    "  <group name=\"all\" nodes=\"node[00001-%05d]\"/>\n", n);
	for (int r = 0; r * RACK < n; r++)
		fprintf(f, "  <group name=\"rack%03d\" nodes=\"node[%05d-%05d]\"/>\n", r,
		    r * RACK + 1, (r + 1) * RACK < n ? (r + 1) * RACK : n);
	for (int i = 1; i <= n; i++)
		fprintf(f, "  <node name=\"node%05d\" addr=\"10.%d.%d.%d\"/>\n", i, (i >> 16) & 255,
		    (i >> 8) & 255, i & 255);
	fprintf(f, "</cluster>\n");
	return fclose(f);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v)
{
	qsort(v, ROUNDS, sizeof(*v), cmp_double);
	return v[ROUNDS / 2];
}

/* A node's reply text: most nodes agree, a few differ (as in a fleet). */
static char *
render(struct fanout *fo, struct fo_node *n, void *arg)
{
	(void)fo, (void)arg;
	if (n->idx % 997 == 5)
		return xstrdup("changed: vm.dirty_ratio 20 -> 10");
	return xstrdup("pong (knobd 0.1.0)");
}

/* Statuses and details for the folded output. */
static void
fake_results(struct fanout *fo)
{
	for (size_t i = 0; i < fo->n; i++) {
		struct fo_node *n = &fo->nodes[i];

		n->phase = FO_DONE;
		n->status = i % 1009 == 7 ? NS_UNREACHABLE : NS_OK;
		if (n->status == NS_UNREACHABLE)
			n->detail = xstrdup("connection refused");
	}
}

static void
report(const char *what, double ms, int n)
{
	printf("  %-44s %8.2f ms   %6.2f us/node   goal < %.0f ms  %s\n", what, ms,
	    ms * 1000.0 / n, GOAL_MS, ms < GOAL_MS ? "ok" : "MISSED");
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000;
	char dir[] = "/tmp/knob-scale.XXXXXX", path[PATH_MAX], err[8192];
	double t_inv[ROUNDS], t_exp[ROUNDS], t_grp[ROUNDS], t_fold[ROUNDS], t_out[ROUNDS],
	    t_init[ROUNDS];
	struct ctl ctl;
	char *rackexpr = NULL;
	FILE *null;

	log_init("ctl_scale", LOG_LVL_WARN);
	if (n < 1 || mkdtemp(dir) == NULL)
		return 2;
	snprintf(path, sizeof(path), "%s/cluster.xml", dir);
	if (write_inventory(path, n) < 0 || (null = fopen("/dev/null", "w")) == NULL)
		return 2;
	memset(&ctl, 0, sizeof(ctl));
	ctl.out = null;
	for (int r = 0; r * RACK < n; r++)
		str_appendf(&rackexpr, "%s@rack%03d", r ? "," : "", r);
	for (int r = 0; r < ROUNDS; r++) {
		struct strvec all = { 0 }, racks = { 0 }, ex = { 0 };
		struct fanout fo;
		uint64_t t;
		char *folded;

		t = now_mono_ns();
		ctl.inv = inventory_load(path, err, sizeof(err));
		t_inv[r] = (double)(now_mono_ns() - t) / 1e6;
		if (ctl.inv == NULL) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		t = now_mono_ns();
		if (nodeset_expand("@all", inventory_group_fn, ctl.inv, &all, err, sizeof(err)) < 0)
			return 1;
		t_exp[r] = (double)(now_mono_ns() - t) / 1e6;
		t = now_mono_ns();
		if (nodeset_expand(rackexpr, inventory_group_fn, ctl.inv, &racks, err,
		    sizeof(err)) < 0) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		if (nodeset_expand("node[00100-00199]", NULL, NULL, &ex, err, sizeof(err)) < 0)
			return 1;
		nodeset_exclude(&racks, &ex);
		t_grp[r] = (double)(now_mono_ns() - t) / 1e6;
		t = now_mono_ns();
		fanout_init(&fo, &ctl, &all);
		t_init[r] = (double)(now_mono_ns() - t) / 1e6;
		fake_results(&fo);
		t = now_mono_ns();
		folded = nodeset_fold(all.v, all.n);
		t_fold[r] = (double)(now_mono_ns() - t) / 1e6;
		t = now_mono_ns();
		output_folded(&ctl, &fo, render, NULL);
		output_summary(&ctl, &fo);
		t_out[r] = (double)(now_mono_ns() - t) / 1e6;
		free(folded);
		fanout_free(&fo);
		strvec_free(&all);
		strvec_free(&racks);
		strvec_free(&ex);
		inventory_free(ctl.inv);
		ctl.inv = NULL;
	}
	printf("controller bookkeeping at %d nodes (median of %d rounds):\n", n, ROUNDS);
	report("inventory load (cluster.xml, per-node addr)", median(t_inv), n);
	report("node-set expansion @all", median(t_exp), n);
	report("expansion of every rack group minus 100 nodes", median(t_grp), n);
	report("fan-out set-up (address lookup per node)", median(t_init), n);
	report("fold the node list (nodeset -f)", median(t_fold), n);
	report("folded output + summary line", median(t_out), n);
	free(rackexpr);
	fclose(null);
	unlink(path);
	rmdir(dir);
	return 0;
}
