/* Real IOR and mdtest under OpenMPI across agents: two knobd agents in
 * network namespaces (tests/harness.h); knobctl bench ior|mdtest makes the
 * first node's agent run mpirun with a hostfile of both nodes; OpenMPI
 * starts its daemons on the nodes through an rsh agent script that enters
 * each node's namespace (ip netns exec), and the ranks talk TCP over the
 * namespaces' bridge.  ior and mdtest are the ones `make peers` built from
 * the vendored source ($KNOB_PEERS, default build/peers/bin).  The
 * --mpirun template is tested with the real mpirun (the site's flags in the
 * template) and, as Slurm is not here, with a stand-in srun that records
 * its arguments and runs mpirun. */
#include <check.h>
#include <stdarg.h>
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
static char data[PATH_MAX], peers[PATH_MAX], rsh[PATH_MAX + 16], rshlog[PATH_MAX + 16];
static char mpiargs[4 * PATH_MAX];

/* Make the rsh agent script: host name -> that node's namespace. */
static void
write_rsh(void)
{
	FILE *f;

	snprintf(rsh, sizeof(rsh), "%s/netns-rsh", h.tmp);
	snprintf(rshlog, sizeof(rshlog), "%s/rsh.log", h.tmp);
	ck_assert_ptr_nonnull(f = fopen(rsh, "w"));
	fprintf(f, "#!/bin/sh\n# OpenMPI rsh agent: run the command in the node's namespace\n"
	    "host=$1; shift\ncase \"$host\" in\n");
	for (int i = 0; i < h.n; i++)
		fprintf(f, "%s) ns=%s ;;\n", h.node[i].name, h.node[i].ns);
	/* every namespace has the same host name and /tmp: a session
	 * directory per node, or the daemons race creating the same one */
	fprintf(f, "*) echo \"netns-rsh: unknown host $host\" >&2; exit 1 ;;\nesac\n"
	    "echo \"$host\" >> '%s'\nmkdir -p '%s/ompi-'\"$host\"\n"
	    "export OMPI_MCA_orte_tmpdir_base='%s/ompi-'\"$host\"\n"
	    "exec ip netns exec \"$ns\" sh -c \"$*\"\n", rshlog, h.tmp, h.tmp);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(rsh, 0755), 0);
	/* daemons through the script, TCP over the test network only */
	snprintf(mpiargs, sizeof(mpiargs), "--mca plm_rsh_agent %s --mca btl self,tcp "
	    "--mca oob_tcp_if_include 198.18.0.0/24 --mca btl_tcp_if_include 198.18.0.0/24 "
	    "--display-map", rsh);
}

static void
setup(void)
{
	const char *p = getenv("KNOB_PEERS");

	snprintf(peers, sizeof(peers), "%s", p && p[0] ? p : "build/peers/bin");
	ck_assert_msg(access(peers, X_OK) == 0, "%s: no ior/mdtest (make peers)", peers);
	if (peers[0] != '/') {
		char cwd[PATH_MAX / 2];

		ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
		snprintf(peers, sizeof(peers), "%s/%s", cwd, p && p[0] ? p : "build/peers/bin");
	}
	ck_assert_msg(harness_start(&h, 2, 1) == 0, "harness start failed");
	snprintf(data, sizeof(data), "/tmp/knob-mpi.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(data));
	write_rsh();
}

static void
teardown(void)
{
	harness_stop(&h);
	if (data[0])
		harness_sh("rm -rf '%s'", data);
	data[0] = '\0';
}


/* The run went well; else print what went wrong (errors, tool output). */
static void
check_ok(json_object *doc, int rc)
{
	json_object *ps = cu_get(doc, "phases");

	if (rc == 0)
		return;
	for (size_t i = 0; i < json_object_array_length(ps); i++) {
		json_object *p = json_object_array_get_idx(ps, i), *nd;

		fprintf(stderr, "phase %zu: %s\n", i, json_object_to_json_string(cu_get(p, "errors")));
		nd = json_object_array_get_idx(cu_get(p, "per_node"), 0);
		if (nd && json_object_object_get_ex(nd, "output", NULL))
			fprintf(stderr, "%s\n", json_object_get_string(cu_get(nd, "output")));
	}
	ck_abort_msg("knobctl bench exited %d", rc);
}

/* The ext_ops entry of phase p named op. */
static json_object *
ext_op(json_object *p, const char *op)
{
	json_object *x = cu_get(p, "ext_ops");

	for (size_t i = 0; i < json_object_array_length(x); i++)
		if (strcmp(json_object_get_string(cu_get(json_object_array_get_idx(x, i), "op")), op) == 0)
			return json_object_array_get_idx(x, i);
	ck_abort_msg("no %s in %s", op, json_object_to_json_string(x));
	return NULL;
}

/* The launcher's output as the first node reported it. */
static const char *
tool_output(json_object *p)
{
	return json_object_get_string(cu_get(json_object_array_get_idx(cu_get(p, "per_node"), 0),
	    "output"));
}

/* Ranks mpirun placed on node (from --display-map), as "0,2". */
static void
ranks_on(const char *out, const char *node, char *buf, size_t len)
{
	char key[64];
	const char *p, *end;

	buf[0] = '\0';
	snprintf(key, sizeof(key), "Data for node: %s", node);
	if ((p = strstr(out, key)) == NULL)
		return;
	end = strstr(p + 1, "Data for node:");
	if (end == NULL)
		end = strstr(p, "=====");
	for (p = strstr(p, "Process rank: "); p && (!end || p < end);
	    p = strstr(p + 1, "Process rank: "))
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%d", buf[0] ? "," : "",
		    atoi(p + 14));
}

/* mpirun placed ranks want1 on node01 and want2 on node02. */
static void
check_map(json_object *p, const char *want1, const char *want2)
{
	char on1[64], on2[64];

	ranks_on(tool_output(p), "node01", on1, sizeof(on1));
	ranks_on(tool_output(p), "node02", on2, sizeof(on2));
	ck_assert_str_eq(on1, want1);
	ck_assert_str_eq(on2, want2);
}

/* The first number the tool printed after label, itself after the
 * heading from (the tool's own figure of one operation). */
static double
printed(const char *out, const char *from, const char *label)
{
	const char *p = strstr(out, from);

	ck_assert_msg(p && (p = strstr(p, label)), "no %s / %s in the tool's output", from, label);
	p += strlen(label);
	p += strcspn(p, "0123456789");
	return strtod(p, NULL);
}

/* The phase's figure is the tool's own for the operation it counts,
 * within the tool's rounding (ior prints MiB/s with 2 decimals, its
 * times with 4). */
static void
check_counted(json_object *p, const char *op, double tool_rate)
{
	double rate = cu_num(p, "rate");

	ck_assert_msg(json_object_get_boolean(cu_get(ext_op(p, op), "counted")),
	    "%s is not the counted operation", op);
	ck_assert_msg(rate > tool_rate * 0.98 && rate < tool_rate * 1.02,
	    "phase rate %.1f, the tool's %s %.1f", rate, op, tool_rate);
}

/* The ranks ran where wanted (want1 on node01, want2 on node02), OpenMPI
 * started its daemons on both nodes through the rsh script, and the phase
 * left no files. */
static void
check_across(json_object *p, const char *want1, const char *want2)
{
	char *log = NULL;

	check_map(p, want1, want2);
	ck_assert_int_eq(read_file_bounded(rshlog, 4096, &log, NULL), 0);
	ck_assert_ptr_nonnull(strstr(log, "node01\n"));
	ck_assert_ptr_nonnull(strstr(log, "node02\n"));
	free(log);
	ck_assert_msg(cu_count_entries(data) == 0, "files left in %s", data);
}

/* A built-in phase and real IOR in one run record: N-to-N (-F) then
 * N-to-1, 4 ranks on 2 nodes placed round-robin (--map-by node: ranks 0,2
 * on node01 and 1,3 on node02, as knob places its own threads), and the
 * site flags passed through to mpirun. */
START_TEST(ior_under_mpi)
{
	json_object *doc, *p, *w, *r;
	int rc;

	doc = harness_knobctl_json(&h, &rc, "--json bench seq-write,ior -w @all --dir %s --threads 4 "
	    "--size 1m --mpirun-args '%s' --tool %s/ior -- -a POSIX -w -r -e -F -t 64k -b 1m",
	    data, mpiargs, peers);
	check_ok(doc, rc);
	ck_assert_int_eq(json_object_array_length(cu_get(doc, "phases")), 2);
	ck_assert_str_eq(json_object_get_string(cu_get(cu_phase(doc, 0), "kind")), "seq-write");
	ck_assert_str_eq(json_object_get_string(cu_get(cu_phase(doc, 0), "status")), "ok");
	p = cu_phase(doc, 1);
	ck_assert_str_eq(json_object_get_string(cu_get(p, "kind")), "ior");
	ck_assert_str_eq(json_object_get_string(cu_get(p, "status")), "ok");
	w = ext_op(p, "write");
	r = ext_op(p, "read");
	ck_assert_double_gt(cu_num(w, "bw_bytes"), 0);
	ck_assert_double_gt(cu_num(r, "bw_bytes"), 0);
	ck_assert_int_eq(json_object_get_int64(cu_get(w, "bytes")), 4 << 20);
	ck_assert_int_eq(json_object_get_int64(cu_get(w, "ops")), 4 * 16);
	ck_assert_ptr_nonnull(strstr(tool_output(p), "access              : file-per-process"));
	ck_assert_ptr_nonnull(strstr(tool_output(p), "tasks               : 4"));
	/* the phase is IOR's write, not write + read over the write's time */
	check_counted(p, "write", printed(tool_output(p), "Summary of all tests", "\nwrite") *
	    1048576.0);
	ck_assert(!json_object_get_boolean(cu_get(r, "counted")));
	ck_assert_int_eq(json_object_get_int64(cu_get(p, "bytes")), 4 << 20);
	check_across(p, "0,2", "1,3");
	json_object_put(doc);

	/* N-to-1: one shared file */
	doc = harness_knobctl_json(&h, &rc, "--json bench ior -w @all --dir %s --threads 4 "
	    "--mpirun-args '%s' --tool %s/ior -- -a POSIX -w -r -e -t 64k -b 1m", data, mpiargs,
	    peers);
	check_ok(doc, rc);
	p = cu_phase(doc, 0);
	ck_assert_ptr_nonnull(strstr(tool_output(p), "access              : single-shared-file"));
	ck_assert_int_eq(json_object_get_int64(cu_get(ext_op(p, "read"), "bytes")), 4 << 20);
	ck_assert_double_gt(cu_num(ext_op(p, "write"), "bw_bytes"), 0);
	json_object_put(doc);
	ck_assert_msg(cu_count_entries(data) == 0, "files left in %s", data);

	/* a test file outside --dir: refused before anything runs */
	{
		char *err = NULL, outside[PATH_MAX + 16];

		snprintf(outside, sizeof(outside), "%s/outside", h.tmp);
		unlink(rshlog);
		ck_assert_int_eq(harness_knobctl(&h, NULL, &err, "bench ior -w @all --dir %s "
		    "--threads 2 --mpirun-args '%s' --tool %s/ior -- -w -o %s/f", data, mpiargs,
		    peers, outside), 2);
		ck_assert_msg(strstr(err, "ior -o (in '-o'): path options of the tool are refused"),
		    "%s", err);
		ck_assert_int_ne(access(outside, F_OK), 0);
		ck_assert_int_ne(access(rshlog, F_OK), 0);	/* no mpirun ran */
		free(err);
	}
}
END_TEST

/* Real mdtest: 3 ranks on 2 nodes, 40 files each, next to md-create in
 * the same run record. */
START_TEST(mdtest_under_mpi)
{
	json_object *doc, *p;
	int rc;

	doc = harness_knobctl_json(&h, &rc, "--json bench md-create,mdtest -w @all --dir %s --threads 3 "
	    "--files 40 --mpirun-args '%s' --tool %s/mdtest -- -a POSIX -F -C -T -r -n 40 -u",
	    data, mpiargs, peers);
	check_ok(doc, rc);
	ck_assert_int_eq(json_object_get_int64(cu_get(cu_phase(doc, 0), "ops")), 120);
	p = cu_phase(doc, 1);
	ck_assert_str_eq(json_object_get_string(cu_get(p, "kind")), "mdtest");
	ck_assert_str_eq(json_object_get_string(cu_get(p, "status")), "ok");
	ck_assert_double_gt(cu_num(ext_op(p, "File creation"), "iops"), 0);
	ck_assert_double_gt(cu_num(ext_op(p, "File stat"), "iops"), 0);
	ck_assert_double_gt(cu_num(ext_op(p, "File removal"), "iops"), 0);
	ck_assert_int_eq(json_object_get_int64(cu_get(ext_op(p, "File creation"), "ops")), 120);
	ck_assert_ptr_nonnull(strstr(tool_output(p), "3 tasks, 120 files"));
	/* the phase is mdtest's file creation, not every File row added up */
	check_counted(p, "File creation", printed(tool_output(p), "SUMMARY rate", "File creation"));
	ck_assert_int_eq(json_object_get_int64(cu_get(p, "ops")), 120);
	check_map(p, "0,2", "1");
	json_object_put(doc);
	ck_assert_msg(cu_count_entries(data) == 0, "files left in %s", data);
}
END_TEST

/* --mpirun TEMPLATE with the real OpenMPI mpirun: the site's flags live in
 * the template (daemons through the rsh script, TCP on the test network),
 * and its mapping (ppr:{ppn}:node, ranks by slot: 0,1 on node01 and 2,3 on
 * node02) replaces the default round-robin, which shows the template, not
 * the default launcher, started the ranks across both namespaces.  A
 * template mpirun rejects fails the phase and the exit status. */
START_TEST(mpirun_template)
{
	char tmpl[4 * PATH_MAX];
	json_object *doc, *p;
	int rc;

	snprintf(tmpl, sizeof(tmpl), "mpirun --allow-run-as-root --hostfile {hostfile} "
	    "--map-by ppr:{ppn}:node --rank-by slot -np {np} --mca plm_rsh_agent %s "
	    "--mca btl self,tcp --mca oob_tcp_if_include 198.18.0.0/24 "
	    "--mca btl_tcp_if_include 198.18.0.0/24 {args} {cmd}", rsh);
	doc = harness_knobctl_json(&h, &rc, "--json bench ior -w @all --dir %s --threads 4 "
	    "--mpirun '%s' --mpirun-args --display-map --tool %s/ior -- -a POSIX -w -r -F "
	    "-t 64k -b 256k", data, tmpl, peers);
	check_ok(doc, rc);
	p = cu_phase(doc, 0);
	ck_assert_str_eq(json_object_get_string(cu_get(p, "status")), "ok");
	ck_assert_int_eq(json_object_get_int64(cu_get(ext_op(p, "write"), "bytes")), 1 << 20);
	ck_assert_int_eq(json_object_get_int64(cu_get(ext_op(p, "read"), "bytes")), 1 << 20);
	ck_assert_ptr_nonnull(strstr(tool_output(p), "tasks               : 4"));
	check_across(p, "0,1", "2,3");
	/* the template has no {bind}: the launcher placed the ranks */
	ck_assert_str_eq(cu_str(cu_get(p, "params"), "cpu_bind"), "launcher");
	json_object_put(doc);

	/* a flag this mpirun does not know: the phase fails, and knobctl says so */
	doc = harness_knobctl_json(&h, &rc, "--json bench ior -w @all --dir %s --threads 2 "
	    "--mpirun 'mpirun --allow-run-as-root --no-such-site-flag -np {np} {cmd}' "
	    "--tool %s/ior -- -a POSIX -w -t 64k -b 256k", data, peers);
	ck_assert_int_ne(rc, 0);
	p = cu_phase(doc, 0);
	ck_assert_str_ne(json_object_get_string(cu_get(p, "status")), "ok");
	ck_assert_ptr_nonnull(strstr(json_object_to_json_string(cu_get(p, "errors")),
	    "mpirun exited with status"));
	json_object_put(doc);
}
END_TEST

/* Every node's record says bind, the run's params too, and mpirun's
 * --report-bindings says each of the nranks ranks is bound to a core
 * (bind "core") or not bound ("none"). */
static void
check_bind(json_object *p, const char *bind, int nranks)
{
	json_object *nodes = cu_get(p, "per_node");
	const char *out = tool_output(p);

	for (int r = 0; r < nranks; r++) {
		char want[64];

		snprintf(want, sizeof(want), strcmp(bind, "core") == 0 ? "MCW rank %d bound to" :
		    "MCW rank %d is not bound", r);
		ck_assert_msg(strstr(out, want) != NULL, "no '%s' in:\n%s", want, out);
	}
	ck_assert_str_eq(cu_str(cu_get(p, "params"), "cpu_bind"), bind);
	ck_assert_int_eq(json_object_array_length(nodes), 2);
	for (size_t i = 0; i < 2; i++)
		ck_assert_str_eq(cu_str(json_object_array_get_idx(nodes, i), "cpu_bind"), bind);
}

/* --cpu-bind core with ior/mdtest: the default launcher binds each rank
 * to a core (mpirun --bind-to core, round robin as the engine pins its
 * threads; mpirun's own --report-bindings shows every rank bound, those
 * of node02 too), and the record says core.  Without it the ranks float
 * (--bind-to none: every rank reported not bound; mpirun alone would
 * bind 2 ranks to cores) and the record says none.  Where knob cannot bind, the
 * phase fails before anything runs: a --mpirun template without {bind},
 * and fio, which places its own threads. */
START_TEST(mpi_cpu_bind)
{
	json_object *doc, *p;
	int rc;

	doc = harness_knobctl_json(&h, &rc, "--json bench mdtest -w @all --dir %s --threads 3 "
	    "--cpu-bind core --mpirun-args '%s --report-bindings' --tool %s/mdtest -- -a POSIX "
	    "-F -C -r -n 20 -u", data, mpiargs, peers);
	check_ok(doc, rc);
	p = cu_phase(doc, 0);
	check_map(p, "0,2", "1");
	check_bind(p, "core", 3);
	json_object_put(doc);

	doc = harness_knobctl_json(&h, &rc, "--json bench mdtest -w @all --dir %s --threads 2 "
	    "--mpirun-args '%s --report-bindings' --tool %s/mdtest -- -a POSIX -F -C -r -n 20 -u",
	    data, mpiargs, peers);
	check_ok(doc, rc);
	check_bind(cu_phase(doc, 0), "none", 2);
	json_object_put(doc);
	ck_assert_msg(cu_count_entries(data) == 0, "files left in %s", data);

	/* a template without {bind}: refused before the launcher runs */
	unlink(rshlog);
	doc = harness_knobctl_json(&h, &rc, "--json bench mdtest -w @all --dir %s --threads 2 "
	    "--cpu-bind core --mpirun 'mpirun --allow-run-as-root -np {np} {args} {cmd}' "
	    "--mpirun-args '%s' --tool %s/mdtest -- -a POSIX -F -C -r -n 20 -u", data, mpiargs,
	    peers);
	ck_assert_int_ne(rc, 0);
	ck_assert_ptr_nonnull(strstr(json_object_to_json_string(cu_get(cu_phase(doc, 0), "errors")),
	    "has no {bind}"));
	ck_assert_int_ne(access(rshlog, F_OK), 0);
	json_object_put(doc);
	doc = harness_knobctl_json(&h, &rc, "--json bench fio -w @all --dir %s --cpu-bind core "
	    "-- --name=x --rw=write --size=1m", data);
	ck_assert_int_ne(rc, 0);
	ck_assert_ptr_nonnull(strstr(json_object_to_json_string(cu_get(cu_phase(doc, 0), "errors")),
	    "does not apply to fio"));
	json_object_put(doc);
	ck_assert_msg(cu_count_entries(data) == 0, "files left in %s", data);
}
END_TEST

/* --mpirun TEMPLATE: a site launcher.  Stand-in for Slurm's srun (no Slurm
 * here): it records its arguments and starts the ranks with mpirun on the
 * nodes --nodelist names. */
START_TEST(launcher_template)
{
	char srun[PATH_MAX + 16], args[PATH_MAX + 16], body[4 * PATH_MAX], *got = NULL;
	char want[4 * PATH_MAX];
	json_object *doc, *p;
	FILE *f;
	int rc;

	snprintf(srun, sizeof(srun), "%s/srun", h.tmp);
	snprintf(args, sizeof(args), "%s/srun.args", h.tmp);
	snprintf(body, sizeof(body), "#!/bin/sh\n# stand-in for Slurm's srun: record, then mpirun\n"
	    "echo \"$*\" > '%s'\nN=$2; n=$4; ppn=${5#--ntasks-per-node=}; nodes=${6#--nodelist=}\n"
	    "shift 6\nhosts=$(echo \"$nodes\" | sed \"s/,/:$ppn,/g; s/\\$/:$ppn/\")\n"
	    "exec mpirun --allow-run-as-root --map-by node --host \"$hosts\" -np \"$n\" \"$@\"\n",
	    args);
	ck_assert_ptr_nonnull(f = fopen(srun, "w"));
	fputs(body, f);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(srun, 0755), 0);
	doc = harness_knobctl_json(&h, &rc, "--json bench ior -w @all --dir %s --threads 4 "
	    "--mpirun '%s -N {nnodes} -n {np} --ntasks-per-node={ppn} --nodelist={hosts} {args} "
	    "{cmd}' --mpirun-args '%s' --tool %s/ior -- -a POSIX -w -t 64k -b 256k", data, srun,
	    mpiargs, peers);
	check_ok(doc, rc);
	p = cu_phase(doc, 0);
	ck_assert_int_eq(json_object_get_int64(cu_get(ext_op(p, "write"), "bytes")), 1 << 20);
	ck_assert_int_eq(read_file_bounded(args, 1 << 16, &got, NULL), 0);
	snprintf(want, sizeof(want), "-N 2 -n 4 --ntasks-per-node=2 --nodelist=node01,node02 %s "
	    "%s/ior -a POSIX -w -t 64k -b 256k -o %s/knob.", mpiargs, peers, data);
	ck_assert_msg(strncmp(got, want, strlen(want)) == 0, "srun got: %s\nwanted: %s", got, want);
	free(got);
	json_object_put(doc);
	ck_assert_msg(cu_count_entries(data) == 0, "files left in %s", data);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("bench_mpi");
	TCase *tc = cu_tcase("mpi", setup, teardown, 120);

	tcase_add_test(tc, ior_under_mpi);
	tcase_add_test(tc, mdtest_under_mpi);
	tcase_add_test(tc, mpirun_template);
	tcase_add_test(tc, launcher_template);
	tcase_add_test(tc, mpi_cpu_bind);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
