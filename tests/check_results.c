/* Results store and statistics, on real SQLite files:
 *  - migration of a database made by knob 0.1 (tests/fixtures/results-v1.sql
 *    is the `sqlite3 .dump` of the results.db that `make demo` of commit
 *    c6e1a28 wrote), and every rundoc field has its column; migration from
 *    the previous version (results-v3.sql, from `make demo` of 53d4fe7);
 *  - who wrote a running run: a reused pid, another host's heartbeat, rows
 *    from before the writer was recorded; the heartbeat thread;
 *  - runs in true time order, ids by prefix and latest~N;
 *  - a writer that dies after two phases leaves them readable and the run
 *    incomplete;
 *  - Welch's t-test against Student-t critical values from printed tables
 *    and against t and df computed here from the textbook formulas;
 *  - compare arithmetic, verdicts, one-sided and unlike points; the node
 *    count and the measurement options (iodepth, ior's arguments, ...) in
 *    the match, and a pairing that the order of the points does not change
 *    (runs stored in and read back from the file); a side without figures
 *    is null in knobctl's JSON and CSV, and its exit status 1 when no pair
 *    has figures on both sides;
 *  - peak and sustained; the IO500-like score against hand-computed
 *    geometric means;
 *  - a database restored from `sqlite3 .dump` (user_version 0) known by
 *    its columns; a current one read on a read-only mount;
 *  - compare: runs on other nodes or directories refused, warned with
 *    --force; the engine the nodes ran in params.ioengine; Holm-Bonferroni
 *    over a compare's points; a side with failed repeats and a run that
 *    did not end ok (failed, running) said in the table, JSON and CSV;
 *  - CSV a spreadsheet cannot take for formulas (text columns only), and
 *    text output with a run's control characters escaped;
 *  - the report: each run compared with the first run before it that it
 *    can be, workloads that read alike titled apart, every text of a run
 *    HTML-escaped; a p below 0.05 never shown as 0.050. */
#include <check.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <json-c/json.h>

#include "testutil.h"
#include "harness.h"
#include "bench_run.h"
#include "results.h"
#include "rundoc.h"
#include "stats.h"
#include "util.h"

static char dir[PATH_MAX];
static char dbpath[PATH_MAX];

static void
setup(void)
{
	cu_subdir(dir, sizeof(dir), "t");	/* under cu_base: gone also after a failure */
	snprintf(dbpath, sizeof(dbpath), "%s/results.db", dir);
}

static void
teardown(void)
{
	cu_rm_rf(dir);
}

static sqlite3 *
open_db(void)
{
	char err[512] = "";
	sqlite3 *db = results_open_path(dbpath, err, sizeof(err));

	ck_assert_msg(db != NULL, "%s", err);
	return db;
}

static int64_t
user_version(sqlite3 *db)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* A phase record as the engine writes it. */
static json_object *
mk_phase(const char *kind, int64_t threads, int64_t repeat, double rate, int64_t bs,
    const char *status)
{
	struct phase_rec r = { 0 };

	r.phase_id = "x";
	r.kind = kind;
	r.threads = threads;
	r.repeat = repeat;
	r.nodes = 1;
	r.status = status;
	r.unit = strncmp(kind, "md-", 3) == 0 ? "op/s" : "B/s";
	r.rate = rate;
	r.ops_rate = rate / 4096;
	r.elapsed_s = 1;
	r.ops = (int64_t)(rate / 4096);
	r.bytes = (int64_t)rate;
	r.block_size = bs;
	r.file_size = 1 << 26;
	r.files_per_dir = 1024;
	r.dir = "/mnt";
	return rundoc_phase_json(&r);
}

static json_object *
mk_doc(const char *id, int64_t started_ns)
{
	json_object *d = json_object_new_object();

	json_object_object_add(d, "run_id", json_object_new_string(id));
	json_object_object_add(d, "started_at", json_object_new_int64(started_ns / 1000000000));
	json_object_object_add(d, "started_ns", json_object_new_int64(started_ns));
	json_object_object_add(d, "nodeset", json_object_new_string("node[01-02]"));
	json_object_object_add(d, "command", json_object_new_string("knobctl bench seq"));
	json_object_object_add(d, "status", json_object_new_string("ok"));
	json_object_object_add(d, "phases", json_object_new_array());
	return d;
}

static void
add_phase(json_object *doc, json_object *ph)
{
	json_object_array_add(json_object_object_get(doc, "phases"), ph);
}

/* A database at dbpath from the `sqlite3 .dump` fixture rel, its
 * user_version as the dump leaves it (0). */
static void
load_dump(const char *rel)
{
	char *sql = NULL;
	size_t len;
	sqlite3 *db;

	ck_assert_int_eq(read_file_bounded(rel, 1 << 24, &sql, &len), 0);
	ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(user_version(db), 0);
	sqlite3_close(db);
	free(sql);
}

/* A knob 0.1 database migrates: to the current version, the old run listed and
 * loadable with its phases and parameters, every rundoc field a column. */
START_TEST(t_migrate_v1)
{
	char err[256], *id;
	sqlite3 *db;
	struct run_row *r;
	size_t n;
	json_object *doc, *ph;
	sqlite3_stmt *st;

	load_dump("tests/fixtures/results-v1.sql");
	db = open_db();
	ck_assert_int_eq(user_version(db), 9);
	ck_assert_int_eq(results_runs(db, &r, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(r[0].status, "ok");
	ck_assert_int_eq(r[0].phases, 4);
	ck_assert_int_gt(r[0].started_ns, 1700000000ll * 1000000000ll);
	ck_assert_int_eq(results_resolve(db, "latest", &id, err, sizeof(err)), 0);
	ck_assert_str_eq(id, r[0].id);
	doc = results_load(db, id);
	ck_assert_ptr_nonnull(doc);
	/* its start as its row has it (results show printed 1970-01-01) */
	ck_assert_int_eq((int64_t)js_num(doc, "started_ns"), r[0].started_ns);
	ck_assert_int_eq(json_object_array_length(json_object_object_get(doc, "phases")), 4);
	ph = json_object_array_get_idx(json_object_object_get(doc, "phases"), 0);
	ck_assert_str_eq(js_str(ph, "kind"), "seq-write");
	ck_assert_int_eq((int64_t)js_num(json_object_object_get(ph, "params"), "block_size"),
	    1 << 20);
	ck_assert_int_eq((int64_t)js_num(ph, "repeat"), 1);
	ck_assert_double_gt(js_num(ph, "rate"), 0);
	/* the old run's phases are in the phases table's columns too */
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM phases WHERE block_size = "
	    "1048576 AND direct = 1 AND fsync = 1 AND doc IS NOT NULL", -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_int_eq(sqlite3_column_int(st, 0), 4);
	sqlite3_finalize(st);
	/* every field of the one schema table has its column */
	for (size_t i = 0; i < rundoc_nphase_fields; i++) {
		char q[256];

		snprintf(q, sizeof(q), "SELECT count(*) FROM pragma_table_info('phases') WHERE name = '%s'",
		    rundoc_phase_fields[i].column);
		ck_assert_int_eq(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		ck_assert_msg(sqlite3_column_int(st, 0) == 1, "no column %s",
		    rundoc_phase_fields[i].column);
		sqlite3_finalize(st);
	}
	json_object_put(doc);
	free(id);
	results_runs_free(r, n);
	sqlite3_close(db);
	/* opening again does nothing more */
	db = open_db();
	ck_assert_int_eq(user_version(db), 9);
	sqlite3_close(db);
}
END_TEST

/* A database of the previous version (3) migrates: tests/fixtures/
 * results-v3.sql is the `sqlite3 .dump` of the results.db that `make demo`
 * of commit 53d4fe7 wrote, cut to its tuned run.  The run keeps its phases
 * and records; its play file moves to its column; its heartbeat is its end;
 * its writer is known by host and pid only. */
START_TEST(t_migrate_v3)
{
	static const char id[] = "20261201-115236-949e";
	sqlite3 *db;
	sqlite3_stmt *st;
	json_object *doc;

	load_dump("tests/fixtures/results-v3.sql");
	/* .dump leaves out the user_version the file had */
	ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "PRAGMA user_version = 3", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	db = open_db();
	ck_assert_int_eq(user_version(db), 9);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT play_file, play_text, play_hash, boot_id,"
	    " pid_start, heartbeat_ns = ended_ns, label, profile FROM runs WHERE id = ?", -1, &st,
	    NULL), SQLITE_OK);
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_ptr_nonnull(strstr((const char *)sqlite3_column_text(st, 0),
	    "ansible-like-plays/demo.xml"));
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 1), "");
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 2), "");
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 3), "");
	ck_assert_int_eq(sqlite3_column_int64(st, 4), -1);
	ck_assert_int_eq(sqlite3_column_int(st, 5), 1);
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 6), "demo-loop");
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 7), "mixed");
	sqlite3_finalize(st);
	doc = results_load(db, id);
	ck_assert_ptr_nonnull(doc);
	ck_assert_str_eq(js_str(doc, "status"), "ok");
	ck_assert_str_eq(js_str(doc, "play"), "demo");
	ck_assert_int_eq(json_object_array_length(json_object_object_get(doc, "phases")), 12);
	ck_assert_int_eq(json_object_array_length(json_object_object_get(doc, "node_info")), 2);
	ck_assert_int_eq((int64_t)js_num(json_object_object_get(doc, "writer"), "pid"), 7744);
	/* version 5: the phases had no Lustre layout */
	{
		json_object *ph = json_object_array_get_idx(json_object_object_get(doc, "phases"), 0);
		json_object *pa = json_object_object_get(ph, "params"), *v;

		ck_assert(json_object_object_get_ex(pa, "stripe_count", &v));
		ck_assert_int_eq(json_object_get_int(v), 0);
		ck_assert(json_object_object_get_ex(pa, "stripe_size", &v));
		ck_assert_int_eq(json_object_get_int(v), 0);
		/* version 6: their buffers were on 4 KiB pages */
		ck_assert(json_object_object_get_ex(pa, "buffer_pages", &v));
		ck_assert_str_eq(json_object_get_string(v), "4k");
		/* version 7: their threads floated */
		ck_assert(json_object_object_get_ex(pa, "cpu_bind", &v));
		ck_assert_str_eq(json_object_get_string(v), "none");
	}
	json_object_put(doc);
	sqlite3_close(db);
}
END_TEST

/* A database restored from `sqlite3 .dump`, which leaves user_version out
 * (0), is known by its columns: results-v3.sql loaded as it is migrates
 * as version 3 (before: taken for version 1, "duplicate column name:
 * started_ns", and every results command refused it); a current file
 * whose user_version reads 0 opens with its run and is at 9 again. */
START_TEST(t_migrate_dump)
{
	size_t n;
	sqlite3 *db;
	struct run_row *r;
	json_object *doc;

	load_dump("tests/fixtures/results-v3.sql");
	db = open_db();
	ck_assert_int_eq(user_version(db), 9);
	doc = results_load(db, "20261201-115236-949e");
	ck_assert_ptr_nonnull(doc);
	ck_assert_int_eq(json_object_array_length(json_object_object_get(doc, "phases")), 12);
	ck_assert_str_eq(js_str(json_object_object_get(json_object_array_get_idx(
	    json_object_object_get(doc, "phases"), 0), "params"), "cpu_bind"), "none");
	json_object_put(doc);
	/* a current file restored from a dump: steps 8 and 9 run again, nothing lost */
	ck_assert_int_eq(sqlite3_exec(db, "PRAGMA user_version = 0", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	db = open_db();
	ck_assert_int_eq(user_version(db), 9);
	ck_assert_int_eq(results_runs(db, &r, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(r[0].phases, 12);
	results_runs_free(r, n);
	sqlite3_close(db);
}
END_TEST

/* Set column col of run id (an integer or a text). */
static void
set_col(sqlite3 *db, const char *id, const char *col, const char *text, int64_t v)
{
	char sql[256];
	sqlite3_stmt *st;

	snprintf(sql, sizeof(sql), "UPDATE runs SET %s = ? WHERE id = ?", col);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (text)
		sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
	else
		sqlite3_bind_int64(st, 1, v);
	sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
}

/* The status a reader gives run id now. */
static const char *
status_of(sqlite3 *db, const char *id, char *buf, size_t len)
{
	json_object *doc = results_load(db, id);

	ck_assert_ptr_nonnull(doc);
	snprintf(buf, len, "%s", js_str(doc, "status"));
	json_object_put(doc);
	return buf;
}

/* A "running" run, as this process would begin it. */
static void
begin_running(sqlite3 *db, const char *id)
{
	json_object *d = mk_doc(id, 1767225600000000000ll);

	json_object_object_add(d, "status", json_object_new_string("running"));
	ck_assert_int_eq(results_run_begin(db, d), 0);
	json_object_put(d);
}

/* Who wrote a run, beyond "same host, pid dead": a live pid with another
 * start time is a reused pid (gone); this process with its own start time
 * is running; a writer this reader cannot see (another boot id: another
 * host, or before a reboot) is judged by its heartbeat; a row from before
 * version 4 by host and pid. */
START_TEST(t_writer_gone)
{
	sqlite3 *db = open_db();
	int64_t now = (int64_t)now_real_ns();
	char buf[32], *text = NULL;
	struct run_writer me;
	size_t len;

	runlive_self(&me);
	ck_assert_int_gt(strlen(me.boot_id), 30);
	ck_assert_int_eq(me.pid, getpid());
	/* the start time is the 22nd field of /proc/self/stat, read here by sscanf */
	{
		long long t = -1;
		char *p;

		ck_assert_int_eq(read_file_bounded("/proc/self/stat", 4096, &text, &len), 0);
		p = strrchr(text, ')');
		ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u "
		    "%*d %*d %*d %*d %*d %*d %lld", &t), 1);
		ck_assert_int_eq(me.pid_start, t);
		free(text);
	}

	begin_running(db, "r-self");
	ck_assert_str_eq(status_of(db, "r-self", buf, sizeof(buf)), "running");

	/* pid 1 is alive, but it is not the knobctl that wrote the run */
	begin_running(db, "r-reused");
	set_col(db, "r-reused", "pid", NULL, 1);
	ck_assert_str_eq(status_of(db, "r-reused", buf, sizeof(buf)), "incomplete");
	/* this process, started at another time */
	begin_running(db, "r-restarted");
	set_col(db, "r-restarted", "pid_start", NULL, me.pid_start + 1);
	ck_assert_str_eq(status_of(db, "r-restarted", buf, sizeof(buf)), "incomplete");

	/* another host: a fresh heartbeat is running, a stale one is gone */
	begin_running(db, "r-far-fresh");
	set_col(db, "r-far-fresh", "boot_id", "0c0c0c0c-aaaa-bbbb-cccc-000000000000", 0);
	set_col(db, "r-far-fresh", "host", "elsewhere", 0);
	set_col(db, "r-far-fresh", "heartbeat_ns", NULL, now - 5 * 1000000000ll);
	ck_assert_str_eq(status_of(db, "r-far-fresh", buf, sizeof(buf)), "running");
	begin_running(db, "r-far-stale");
	set_col(db, "r-far-stale", "boot_id", "0c0c0c0c-aaaa-bbbb-cccc-000000000000", 0);
	set_col(db, "r-far-stale", "host", "elsewhere", 0);
	set_col(db, "r-far-stale", "heartbeat_ns", NULL,
	    now - (RESULTS_STALE_S + 10) * 1000000000ll);
	ck_assert_str_eq(status_of(db, "r-far-stale", buf, sizeof(buf)), "incomplete");
	/* this host before a reboot: the pid may be anyone's now; stale heartbeat */
	begin_running(db, "r-rebooted");
	set_col(db, "r-rebooted", "boot_id", "0c0c0c0c-aaaa-bbbb-cccc-111111111111", 0);
	set_col(db, "r-rebooted", "heartbeat_ns", NULL, now - 3600 * 1000000000ll);
	ck_assert_str_eq(status_of(db, "r-rebooted", buf, sizeof(buf)), "incomplete");

	/* rows from before version 4: this host, this (live) pid is running */
	begin_running(db, "r-old");
	set_col(db, "r-old", "boot_id", "", 0);
	set_col(db, "r-old", "heartbeat_ns", NULL, 0);
	ck_assert_str_eq(status_of(db, "r-old", buf, sizeof(buf)), "running");
	/* another host's, with its start long ago */
	set_col(db, "r-old", "host", "elsewhere", 0);
	ck_assert_str_eq(status_of(db, "r-old", buf, sizeof(buf)), "incomplete");
	/* the verdict is written: it stays incomplete */
	set_col(db, "r-far-stale", "heartbeat_ns", NULL, now);
	ck_assert_str_eq(status_of(db, "r-far-stale", buf, sizeof(buf)), "incomplete");
	sqlite3_close(db);
}
END_TEST

/* The heartbeat thread moves the run's heartbeat on while it runs, and
 * only while the run is running. */
START_TEST(t_heartbeat)
{
	sqlite3 *db = open_db();
	struct results_hb *hb;
	sqlite3_stmt *st;
	int64_t first, hb_ns = 0;

	begin_running(db, "r-hb");
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT heartbeat_ns FROM runs WHERE id = 'r-hb'",
	    -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	first = sqlite3_column_int64(st, 0);
	ck_assert_int_gt(first, 0);
	hb = results_heartbeat_start(dbpath, "r-hb", 1);
	ck_assert_ptr_nonnull(hb);
	/* wait, bounded, for a beat */
	for (int i = 0; i < 300 && hb_ns <= first; i++) {
		sqlite3_reset(st);
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		hb_ns = sqlite3_column_int64(st, 0);
		if (hb_ns <= first)
			usleep(50000);
	}
	results_heartbeat_stop(hb);
	ck_assert_int_gt(hb_ns, first);
	sqlite3_finalize(st);
	sqlite3_close(db);
}
END_TEST

/* A component's own migrations (health sweeps' tables) run once, in order;
 * a file newer than the code is refused. */
START_TEST(t_extension_schema)
{
	static const char *const steps[] = {
		"CREATE TABLE ext_a (x INTEGER);",
		"ALTER TABLE ext_a ADD COLUMN y TEXT;",
	};
	struct results_schema s = { "testext", steps, 1 };
	char err[256];
	sqlite3 *db = open_db();

	ck_assert_int_eq(results_migrate(db, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(results_migrate(db, &s, err, sizeof(err)), 0);
	s.nsteps = 2;
	ck_assert_int_eq(results_migrate(db, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(sqlite3_exec(db, "INSERT INTO ext_a VALUES (1, 'a')", NULL, NULL, NULL),
	    SQLITE_OK);
	s.nsteps = 1;
	ck_assert_int_eq(results_migrate(db, &s, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "newer"));
	ck_assert_int_eq(user_version(db), 9);
	sqlite3_close(db);
}
END_TEST

/* Store run d (freed) at schema version v in a fresh database, open it
 * again (migrating it to the current version) and return it. */
static sqlite3 *
stored_at(json_object *d, int v)
{
	sqlite3 *db = open_db();
	char sql[64];

	ck_assert_int_eq(results_store(db, d), 0);
	json_object_put(d);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	db = open_db();
	ck_assert_int_eq(user_version(db), 9);
	return db;
}

/* Version 8: phases stored with block size 0 (the request left it to the
 * default) get what ran: rand-rw 1 MiB (its default then) and 50 % reads,
 * rand-read 4 KiB, seq 1 MiB; md phases keep 0. */
START_TEST(t_migrate_v7_defaults)
{
	static const char *const kinds[] = { "rand-rw", "rand-read", "seq-write", "md-create" };
	static const int64_t want[] = { 1048576, 4096, 1048576, 0 };
	sqlite3 *db;
	sqlite3_stmt *st;
	json_object *d = mk_doc("20260101-000001-aaaa", 1767225601000000000ll);

	for (size_t i = 0; i < nitems(kinds); i++)
		add_phase(d, mk_phase(kinds[i], 1, 1, 1e6, 0, "ok"));
	db = stored_at(d, 7);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT kind, block_size,"
	    " json_extract(doc, '$.params.block_size'), json_extract(params, '$.block_size'),"
	    " coalesce(json_extract(doc, '$.params.rwmix_read'), 0) FROM phases ORDER BY seq", -1,
	    &st, NULL), SQLITE_OK);
	for (size_t i = 0; i < nitems(kinds); i++) {
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), kinds[i]);
		for (int c = 1; c <= 3; c++)
			ck_assert_int_eq(sqlite3_column_int64(st, c), want[i]);
		ck_assert_int_eq(sqlite3_column_int64(st, 4), i == 0 ? 50 : 0);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
}
END_TEST

/* True time order with ties broken by insertion; prefixes and latest~N. */
START_TEST(t_order_and_resolve)
{
	sqlite3 *db = open_db();
	struct run_row *r;
	size_t n;
	char err[256], *id;
	json_object *d;

	/* inserted out of time order; b and c start in the same nanosecond */
	d = mk_doc("20260101-000002-bbbb", 1767225602000000500ll);
	ck_assert_int_eq(results_store(db, d), 0);
	json_object_put(d);
	d = mk_doc("20260101-000002-cccc", 1767225602000000500ll);
	ck_assert_int_eq(results_store(db, d), 0);
	json_object_put(d);
	d = mk_doc("20260101-000002-aaaa", 1767225602000000100ll);
	ck_assert_int_eq(results_store(db, d), 0);
	json_object_put(d);
	ck_assert_int_eq(results_runs(db, &r, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(r[0].id, "20260101-000002-aaaa");
	ck_assert_str_eq(r[1].id, "20260101-000002-bbbb");
	ck_assert_str_eq(r[2].id, "20260101-000002-cccc");
	results_runs_free(r, n);
	ck_assert_int_eq(results_resolve(db, "latest", &id, err, sizeof(err)), 0);
	ck_assert_str_eq(id, "20260101-000002-cccc");
	free(id);
	ck_assert_int_eq(results_resolve(db, "latest~2", &id, err, sizeof(err)), 0);
	ck_assert_str_eq(id, "20260101-000002-aaaa");
	free(id);
	ck_assert_int_eq(results_resolve(db, "latest~3", &id, err, sizeof(err)), -1);
	ck_assert_int_eq(results_resolve(db, "20260101-000002-b", &id, err, sizeof(err)), 0);
	ck_assert_str_eq(id, "20260101-000002-bbbb");
	free(id);
	ck_assert_int_eq(results_resolve(db, "20260101", &id, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "ambiguous"));
	ck_assert_int_eq(results_resolve(db, "2027", &id, err, sizeof(err)), -1);
	/* a second run with a stored run's id (the same second and random
	 * bits) is refused, and the stored one stays as it was; before, the
	 * upsert made it "running" again with the new run's document */
	d = mk_doc("20260101-000002-bbbb", 1767225609000000000ll);
	ck_assert_int_eq(results_run_begin(db, d), -1);
	json_object_put(d);
	ck_assert_int_eq(results_runs(db, &r, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(r[1].id, "20260101-000002-bbbb");
	ck_assert_str_eq(r[1].status, "ok");
	results_runs_free(r, n);
	sqlite3_close(db);
}
END_TEST

/* A writer process that dies after two committed phases: they are
 * readable from another connection and the run reads incomplete. */
START_TEST(t_incomplete)
{
	pid_t pid = fork();
	int st;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		sqlite3 *db = open_db();
		json_object *d = mk_doc("20260101-000000-dead", 1767225600000000000ll);

		results_run_begin(db, d);
		add_phase(d, mk_phase("seq-write", 1, 1, 1e9, 1 << 20, "ok"));
		results_phase_add(db, "20260101-000000-dead", 1,
		    json_object_array_get_idx(json_object_object_get(d, "phases"), 0));
		add_phase(d, mk_phase("seq-read", 1, 1, 2e9, 1 << 20, "ok"));
		results_phase_add(db, "20260101-000000-dead", 2,
		    json_object_array_get_idx(json_object_object_get(d, "phases"), 1));
		kill(getpid(), SIGKILL);
		_exit(1);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	{
		sqlite3 *db = open_db();
		json_object *doc = results_load(db, "20260101-000000-dead");

		ck_assert_ptr_nonnull(doc);
		ck_assert_str_eq(js_str(doc, "status"), "incomplete");
		ck_assert_int_eq(json_object_array_length(json_object_object_get(doc, "phases")), 2);
		json_object_put(doc);
		sqlite3_close(db);
	}
}
END_TEST

/* p-values at the two-sided 5 % critical values of Student's t from
 * printed tables, and P(|T| > 1) = 1/2 for one degree of freedom (Cauchy). */
START_TEST(t_student_t)
{
	static const struct { double df, t975; } crit[] = {
		{ 1, 12.706205 }, { 2, 4.302653 }, { 4, 2.776445 }, { 10, 2.228139 },
		{ 30, 2.042272 }, { 100, 1.983972 },
	};

	for (size_t i = 0; i < nitems(crit); i++)
		ck_assert_double_eq_tol(stats_t_two_sided(crit[i].t975, crit[i].df), 0.05, 1e-5);
	ck_assert_double_eq_tol(stats_t_two_sided(1.0, 1), 0.5, 1e-9);
	ck_assert_double_eq_tol(stats_t_two_sided(0, 7), 1.0, 1e-12);
	/* 99 %: df 5, t = 4.032143 */
	ck_assert_double_eq_tol(stats_t_two_sided(4.032143, 5), 0.01, 1e-5);
}
END_TEST

/* Welch on two small samples: t and df by the textbook formulas here. */
START_TEST(t_welch)
{
	static const double a[] = { 100, 104, 98, 102, 101 };
	static const double b[] = { 110, 115, 108, 113 };
	struct sample_stats sa, sb;
	struct welch w;
	double ma = 0, mb = 0, va = 0, vb = 0, t, df;

	for (size_t i = 0; i < 5; i++)
		ma += a[i] / 5;
	for (size_t i = 0; i < 4; i++)
		mb += b[i] / 4;
	for (size_t i = 0; i < 5; i++)
		va += (a[i] - ma) * (a[i] - ma) / 4;
	for (size_t i = 0; i < 4; i++)
		vb += (b[i] - mb) * (b[i] - mb) / 3;
	t = (mb - ma) / sqrt(va / 5 + vb / 4);
	df = pow(va / 5 + vb / 4, 2) / (pow(va / 5, 2) / 4 + pow(vb / 4, 2) / 3);
	stats_summary(a, 5, &sa);
	stats_summary(b, 4, &sb);
	ck_assert_double_eq_tol(sa.mean, 101, 1e-12);
	ck_assert_double_eq_tol(sa.sd, sqrt(5), 1e-12);
	ck_assert_double_eq(sa.min, 98);
	ck_assert_double_eq(sb.max, 115);
	stats_welch(&sa, &sb, &w);
	ck_assert(w.valid);
	ck_assert_double_eq_tol(w.t, t, 1e-9);
	ck_assert_double_eq_tol(w.df, df, 1e-9);
	ck_assert_double_lt(w.p, 0.01);
	ck_assert_int_eq(stats_verdict(&w), VERDICT_BETTER);
	stats_welch(&sb, &sa, &w);
	ck_assert_int_eq(stats_verdict(&w), VERDICT_WORSE);
	/* one sample without repeats: no verdict */
	sb.n = 1;
	stats_welch(&sa, &sb, &w);
	ck_assert_int_eq(stats_verdict(&w), VERDICT_NONE);
	/* no spread on either side (rounded figures): a 0.5 % difference in
	 * two repeats a side was "better" at p 0; it cannot be judged */
	{
		static const double za[] = { 100, 100 }, zb[] = { 100.5, 100.5 };

		stats_summary(za, 2, &sa);
		stats_summary(zb, 2, &sb);
		stats_welch(&sa, &sb, &w);
		ck_assert_int_eq(stats_verdict(&w), VERDICT_NONE);
		stats_welch(&sa, &sa, &w);
		ck_assert_int_eq(stats_verdict(&w), VERDICT_NOISE);
	}
}
END_TEST

/* compare: the change, the verdicts, points only one run has, and unlike
 * points refused without --force. */
START_TEST(t_compare)
{
	json_object *a = mk_doc("A", 1), *b = mk_doc("B", 2), *cmp, *rows, *r;
	static const double ra[] = { 1.00e9, 1.02e9, 0.98e9 }, rb[] = { 1.30e9, 1.31e9, 1.29e9 };
	static const double na[] = { 5.00e8, 5.10e8, 4.90e8 }, nb[] = { 5.05e8, 4.95e8, 5.00e8 };
	char err[256];

	for (int i = 0; i < 3; i++) {
		add_phase(a, mk_phase("seq-write", 4, i + 1, ra[i], 1 << 20, "ok"));
		add_phase(b, mk_phase("seq-write", 4, i + 1, rb[i], 1 << 20, "ok"));
		add_phase(a, mk_phase("seq-read", 4, i + 1, na[i], 1 << 20, "ok"));
		add_phase(b, mk_phase("seq-read", 4, i + 1, nb[i], 1 << 20, "ok"));
	}
	add_phase(a, mk_phase("seq-write", 8, 1, 1e9, 1 << 20, "ok"));
	add_phase(b, mk_phase("rand-read", 2, 1, 1e8, 4096, "ok"));
	cmp = results_compare_doc(a, b, 0, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	rows = json_object_object_get(cmp, "points");
	ck_assert_int_eq(json_object_array_length(rows), 2);
	r = json_object_array_get_idx(rows, 0);
	ck_assert_str_eq(js_str(r, "kind"), "seq-write");
	ck_assert_double_eq_tol(js_num(r, "a_mean"), 1.0e9, 1);
	ck_assert_double_eq_tol(js_num(r, "b_mean"), 1.3e9, 1);
	ck_assert_double_eq_tol(js_num(r, "change_pct"), 30.0, 1e-9);
	ck_assert_str_eq(js_str(r, "verdict"), "better");
	r = json_object_array_get_idx(rows, 1);
	ck_assert_str_eq(js_str(r, "kind"), "seq-read");
	ck_assert_double_eq_tol(js_num(r, "change_pct"), 0.0, 1e-9);
	ck_assert_str_eq(js_str(r, "verdict"), "within noise");
	ck_assert_int_eq(json_object_array_length(json_object_object_get(cmp, "only_in_a")), 1);
	ck_assert_int_eq(json_object_array_length(json_object_object_get(cmp, "only_in_b")), 1);
	json_object_put(cmp);
	/* swapped: worse */
	cmp = results_compare_doc(b, a, 0, err, sizeof(err));
	ck_assert_str_eq(js_str(json_object_array_get_idx(json_object_object_get(cmp, "points"), 0),
	    "verdict"), "worse");
	json_object_put(cmp);
	/* B's seq-write at 8 threads with another block size: unlike */
	add_phase(b, mk_phase("seq-write", 8, 1, 1e9, 4 << 20, "ok"));
	ck_assert_ptr_null(results_compare_doc(a, b, 0, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "block_size"));
	cmp = results_compare_doc(a, b, 1, err, sizeof(err));
	ck_assert_ptr_nonnull(cmp);
	ck_assert_int_eq(json_object_array_length(json_object_object_get(cmp, "points")), 3);
	ck_assert_str_eq(js_str(json_object_array_get_idx(json_object_object_get(cmp, "points"), 2),
	    "unlike"), "params.block_size");
	json_object_put(cmp);
	json_object_put(a);
	json_object_put(b);
}
END_TEST

/* Phase ph, run on n nodes. */
static json_object *
on_nodes(json_object *ph, int64_t n)
{
	json_object_object_add(ph, "nodes", json_object_new_int64(n));
	return ph;
}

/* Store run doc (taken) in the database and read it back, as results
 * compare reads runs. */
static json_object *
stored(sqlite3 *db, json_object *doc)
{
	char *id = xstrdup(js_str(doc, "run_id"));
	json_object *back;

	ck_assert_int_eq(results_store(db, doc), 0);
	json_object_put(doc);
	back = results_load(db, id);
	ck_assert_ptr_nonnull(back);
	free(id);
	return back;
}

/* The compare table for people of cmp (also on stderr, for the log) says
 * want; then cmp and the runs a and b are put. */
static void
says_and_put(json_object *cmp, const char *want, json_object *a, json_object *b)
{
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	results_print_compare(f, cmp, 0);
	fclose(f);
	fprintf(stderr, "%s", text);
	ck_assert_msg(strstr(text, want), "no '%s' in\n%s", want, text);
	free(text);
	json_object_put(cmp);
	json_object_put(a);
	json_object_put(b);
}

/* compare matches the node count: 8 threads on 4 nodes against 8 threads
 * on 8 nodes are unlike, refused without --force and shown as such with
 * it; 2 threads on 2 nodes in both runs compare as before. */
START_TEST(t_compare_nodes)
{
	sqlite3 *db = open_db();
	json_object *a = mk_doc("20260101-000000-aaaa", 1), *b = mk_doc("20260101-000000-bbbb", 2);
	json_object *cmp, *rows, *r;
	char err[256];

	for (int i = 1; i <= 3; i++) {
		add_phase(a, on_nodes(mk_phase("seq-write", 8, i, 1e9, 1 << 20, "ok"), 4));
		add_phase(b, on_nodes(mk_phase("seq-write", 8, i, 2e9, 1 << 20, "ok"), 8));
	}
	add_phase(a, on_nodes(mk_phase("seq-write", 2, 1, 5e8, 1 << 20, "ok"), 2));
	add_phase(b, on_nodes(mk_phase("seq-write", 2, 1, 5e8, 1 << 20, "ok"), 2));
	a = stored(db, a);
	b = stored(db, b);
	ck_assert_ptr_null(results_compare_doc(a, b, 0, err, sizeof(err)));
	ck_assert_msg(strstr(err, "seq-write 8 threads, nodes"), "%s", err);
	cmp = results_compare_doc(a, b, 1, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	rows = cu_get(cmp, "points");
	ck_assert_int_eq(json_object_array_length(rows), 2);
	r = json_object_array_get_idx(rows, 0);
	ck_assert_int_eq(cu_int(r, "threads"), 8);
	ck_assert_str_eq(cu_str(r, "unlike"), "nodes");
	ck_assert_str_eq(cu_str(r, "unlike_a"), "4");
	ck_assert_str_eq(cu_str(r, "unlike_b"), "8");
	ck_assert_double_eq_tol(cu_num(r, "change_pct"), 100, 1e-9);
	r = json_object_array_get_idx(rows, 1);
	ck_assert_int_eq(cu_int(r, "nodes"), 2);
	ck_assert(!json_object_object_get_ex(r, "unlike", NULL));
	ck_assert_int_eq(json_object_array_length(cu_get(cmp, "unlike")), 1);
	says_and_put(cmp, "(unlike: nodes 4 vs 8)", a, b);
	/* both runs lost a node in a repeat: 8 threads on 4 pair alike; what
	 * ran on fewer (3 in A, 2 in B) is only in its run, not refused */
	a = mk_doc("20260101-000000-cccc", 3);
	b = mk_doc("20260101-000000-dddd", 4);
	add_phase(a, on_nodes(mk_phase("seq-write", 8, 1, 1e9, 1 << 20, "ok"), 4));
	add_phase(a, on_nodes(mk_phase("seq-write", 8, 2, 1e9, 1 << 20, "ok"), 3));
	add_phase(b, on_nodes(mk_phase("seq-write", 8, 1, 1e9, 1 << 20, "ok"), 4));
	add_phase(b, on_nodes(mk_phase("seq-write", 8, 2, 1e9, 1 << 20, "ok"), 2));
	a = stored(db, a);
	b = stored(db, b);
	cmp = results_compare_doc(a, b, 0, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	ck_assert_int_eq(json_object_array_length(cu_get(cmp, "points")), 1);
	ck_assert_int_eq(json_object_array_length(cu_get(cmp, "unlike")), 0);
	ck_assert_int_eq(json_object_array_length(cu_get(cmp, "only_in_a")), 1);
	ck_assert_int_eq(json_object_array_length(cu_get(cmp, "only_in_b")), 1);
	json_object_put(cmp);
	json_object_put(a);
	json_object_put(b);
	sqlite3_close(db);
}
END_TEST

/* Run id "<side><order>", e.g. "A1", of a compare-order test. */
static json_object *
order_doc(char side, int order, int64_t bs0, int64_t bs1)
{
	char id[8];
	json_object *d;

	snprintf(id, sizeof(id), "%c%d", side, order);
	d = mk_doc(id, order * 2 + (side == 'B'));
	/* the figure names the point: 1000 x its block size */
	add_phase(d, mk_phase("seq-write", 4, 1, (double)bs0 * 1000, bs0, "ok"));
	if (bs1)
		add_phase(d, mk_phase("seq-write", 4, 1, (double)bs1 * 1000, bs1, "ok"));
	return d;
}

/* Pairing is by the whole key, whatever order the points were stored in:
 * A's 1m point does not take B's only point (4m) away from A's 4m point.
 * With two points on each side and none alike (1m and 2m against 4m and
 * 8m), which would pair with which is a guess: none is compared, even with
 * --force, and the compare without it is refused. */
START_TEST(t_compare_order)
{
	static const int64_t m = 1 << 20;
	sqlite3 *db = open_db();
	char err[256];

	for (int o = 0; o < 2; o++) {
		json_object *a = stored(db, order_doc('A', o, o ? 4 * m : m, o ? m : 4 * m));
		json_object *b = stored(db, order_doc('B', o, 4 * m, 0)), *cmp, *r;

		cmp = results_compare_doc(a, b, 0, err, sizeof(err));
		ck_assert_msg(cmp != NULL, "order %d: %s", o, err);
		ck_assert_int_eq(json_object_array_length(cu_get(cmp, "points")), 1);
		r = json_object_array_get_idx(cu_get(cmp, "points"), 0);
		ck_assert_int_eq(cu_int(cu_get(r, "params"), "block_size"), 4 * m);
		ck_assert_double_eq_tol(cu_num(r, "a_mean"), 4000.0 * m, 1);
		ck_assert_int_eq(json_object_array_length(cu_get(cmp, "only_in_a")), 1);
		r = json_object_array_get_idx(cu_get(cmp, "only_in_a"), 0);
		ck_assert_int_eq(cu_int(cu_get(r, "params"), "block_size"), m);
		ck_assert_int_eq(json_object_array_length(cu_get(cmp, "unlike")), 0);
		json_object_put(cmp);
		json_object_put(a);
		json_object_put(b);
	}
	for (int o = 2; o < 4; o++) {
		json_object *a = stored(db, order_doc('A', o, o == 2 ? m : 2 * m, o == 2 ? 2 * m : m));
		json_object *b = stored(db, order_doc('B', o, 4 * m, 8 * m)), *cmp, *u;

		ck_assert_ptr_null(results_compare_doc(a, b, 0, err, sizeof(err)));
		cmp = results_compare_doc(a, b, 1, err, sizeof(err));
		ck_assert_msg(cmp != NULL, "order %d: %s", o, err);
		ck_assert_int_eq(json_object_array_length(cu_get(cmp, "points")), 0);
		ck_assert_int_eq(json_object_array_length(cu_get(cmp, "unlike")), 1);
		u = json_object_array_get_idx(cu_get(cmp, "unlike"), 0);
		ck_assert_str_eq(cu_str(u, "differs"), "ambiguous");
		ck_assert_int_eq(cu_int(u, "a_points"), 2);
		ck_assert_int_eq(cu_int(u, "b_points"), 2);
		says_and_put(cmp, "not paired: seq-write 4 threads, 2 points in A and 2 in B, "
		    "none alike", a, b);
	}
	sqlite3_close(db);
}
END_TEST

/* Phase ph with params key set to the JSON text value; value NULL: the
 * key removed, as in a run stored before the key was recorded. */
static json_object *
with_param(json_object *ph, const char *key, const char *value)
{
	json_object *pr = cu_get(ph, "params");

	if (value)
		json_object_object_add(pr, key, json_tokener_parse(value));
	else
		json_object_object_del(pr, key);
	return ph;
}

/* Run id with 3 repeats of kind at 4 threads, figures rate * (1, 1.01,
 * 0.99), its params key set to value (with_param). */
static json_object *
param_run(const char *id, int64_t t, const char *kind, double rate, const char *key,
    const char *value)
{
	static const double f[] = { 1.0, 1.01, 0.99 };
	json_object *d = mk_doc(id, t);

	for (int i = 0; i < 3; i++)
		add_phase(d, with_param(mk_phase(kind, 4, i + 1, rate * f[i], 4096, "ok"), key,
		    value));
	return d;
}

/* Runs a and b (stored and read back) differ only in params key: compare
 * refuses them naming the key and both values ("key va vs vb"), and with
 * --force says them unlike. */
static void
refused_for(sqlite3 *db, json_object *a, json_object *b, const char *want)
{
	json_object *cmp;
	char err[512];

	a = stored(db, a);
	b = stored(db, b);
	ck_assert_ptr_null(results_compare_doc(a, b, 0, err, sizeof(err)));
	ck_assert_msg(strstr(err, want), "no '%s' in '%s'", want, err);
	cmp = results_compare_doc(a, b, 1, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	ck_assert_int_eq(json_object_array_length(cu_get(cmp, "points")), 1);
	json_object_put(cmp);
	json_object_put(a);
	json_object_put(b);
}

/* The measurement options bench records in a phase's params (and an
 * external tool's arguments) are part of a point's key: runs that differ
 * only in iodepth 1 vs 32 are unlike, refused without --force and shown
 * as such with it (not "+800 % better"); so for every other option, and
 * a run stored before ext_args was recorded is unlike one that has it
 * (unknown is equal only to unknown).  The same key folds a run's phases
 * into points and workloads. */
START_TEST(t_compare_options)
{
	static const char *const opt[][3] = {
		{ "ioengine", "\"auto\"", "\"libaio\"" }, { "compress_pct", "0", "50" },
		{ "rwmix_read", "70", "50" }, { "runtime_s", "0", "30" }, { "verify", "false", "true" },
		{ "md_relative", "false", "true" }, { "md_shared", "false", "true" },
		{ "md_depth", "0", "3" }, { "md_branch", "0", "4" }, { "md_leaf_only", "false", "true" },
		{ "files_total", "0", "1000" }, { "fallocate", "\"none\"", "\"native\"" },
		{ "segments", "1", "8" },
	};
	sqlite3 *db = open_db();
	json_object *a, *b, *cmp, *r;
	struct pointset ps;
	struct peak *pk;
	char err[512], id[2][40];

	a = stored(db, param_run("20260102-000000-aaaa", 1, "rand-read", 4096e3, "iodepth", "1"));
	b = stored(db, param_run("20260102-000000-bbbb", 2, "rand-read", 4096e4, "iodepth", "32"));
	ck_assert_ptr_null(results_compare_doc(a, b, 0, err, sizeof(err)));
	ck_assert_msg(strstr(err, "rand-read 4 threads, params.iodepth 1 vs 32"), "%s", err);
	cmp = results_compare_doc(a, b, 1, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	r = json_object_array_get_idx(cu_get(cmp, "points"), 0);
	ck_assert_str_eq(cu_str(r, "unlike"), "params.iodepth");
	ck_assert_str_eq(cu_str(r, "unlike_a"), "1");
	ck_assert_str_eq(cu_str(r, "unlike_b"), "32");
	says_and_put(cmp, "(unlike: params.iodepth 1 vs 32)", a, b);
	for (size_t i = 0; i < nitems(opt); i++) {
		char want[96];

		snprintf(id[0], sizeof(id[0]), "20260103-%06zu-aaaa", i);
		snprintf(id[1], sizeof(id[1]), "20260103-%06zu-bbbb", i);
		snprintf(want, sizeof(want), "params.%s", opt[i][0]);
		refused_for(db, param_run(id[0], 10, "seq-read", 1e9, opt[i][0], opt[i][1]),
		    param_run(id[1], 11, "seq-read", 1e9, opt[i][0], opt[i][2]), want);
	}
	/* ior's own arguments; one run from before they were recorded */
	refused_for(db, param_run("20260104-000000-aaaa", 20, "ior", 1e9, "ext_args", "[\"-t\",\"1m\"]"),
	    param_run("20260104-000000-bbbb", 21, "ior", 1e9, "ext_args", "[\"-t\",\"4k\"]"),
	    "params.ext_args");
	refused_for(db, param_run("20260104-000001-aaaa", 22, "ior", 1e9, "ext_args", NULL),
	    param_run("20260104-000001-bbbb", 23, "ior", 1e9, "ext_args", "[]"),
	    "params.ext_args not recorded vs []");
	/* both from before: alike */
	a = stored(db, param_run("20260104-000002-aaaa", 24, "ior", 1e9, "ext_args", NULL));
	b = stored(db, param_run("20260104-000002-bbbb", 25, "ior", 1e9, "ext_args", NULL));
	cmp = results_compare_doc(a, b, 0, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	says_and_put(cmp, "within noise", a, b);
	/* one run with both iodepths: two points, two workloads */
	a = param_run("20260105-000000-aaaa", 30, "rand-read", 4096e3, "iodepth", "1");
	add_phase(a, with_param(mk_phase("rand-read", 4, 1, 4096e4, 4096, "ok"), "iodepth", "32"));
	a = stored(db, a);
	points_build(a, &ps);
	ck_assert_uint_eq(ps.n, 2);
	ck_assert_uint_eq(ps.p[0].nphases, 3);
	ck_assert_uint_eq(stats_peaks(&ps, &pk), 2);
	free(pk);
	points_free(&ps);
	json_object_put(a);
	sqlite3_close(db);
}
END_TEST

/* "knobctl ARGS" ($KNOB_BIN, default build) on this test's database: its
 * stdout into *out (malloc'd), its exit status returned. */
static int
knobctl_db(char **out, const char *args)
{
	const char *bin = getenv("KNOB_BIN");

	return cu_sh_out(out, "env -u KNOB_CLUSTER KNOB_DB=%s %s/knobctl %s 2>/dev/null", dbpath,
	    bin ? bin : "build", args);
}

/* Run id with 3 repeats of rand-read at 4 threads, status st. */
static json_object *
rr_run(const char *id, int64_t t, const char *st)
{
	json_object *d = mk_doc(id, t);

	for (int i = 0; i < 3; i++)
		add_phase(d, mk_phase("rand-read", 4, i + 1, 4096.0 * (900 + 10 * i), 4096, st));
	return d;
}

/* A side whose repeats all failed has no figures: JSON null and empty CSV
 * fields, not 0.0 (the table says '-'); when no pair has figures on both
 * sides, results compare exits 1 as when no point is in common. */
START_TEST(t_compare_no_figures)
{
	static const char *const none[] = { "a_mean", "a_sd", "a_min", "a_max" };
	sqlite3 *db = open_db();
	json_object *doc, *r, *v;
	char *out;

	json_object_put(stored(db, rr_run("20260106-000000-cccc", 1, "failed")));
	json_object_put(stored(db, rr_run("20260106-000000-dddd", 2, "ok")));
	json_object_put(stored(db, rr_run("20260106-000000-eeee", 3, "ok")));
	sqlite3_close(db);
	ck_assert_int_eq(knobctl_db(&out, "--json results compare 20260106-000000-cccc "
	    "20260106-000000-dddd"), 1);
	doc = json_tokener_parse(out);
	ck_assert_msg(doc != NULL, "%s", out);
	free(out);
	r = json_object_array_get_idx(cu_get(doc, "points"), 0);
	ck_assert_int_eq(cu_int(r, "a_n"), 0);
	for (size_t i = 0; i < nitems(none); i++)
		ck_assert_msg(json_object_object_get_ex(r, none[i], &v) && v == NULL, "%s is %s",
		    none[i], json_object_get_string(v));
	ck_assert_double_eq_tol(cu_num(r, "b_mean"), 910, 1e-6);
	json_object_put(doc);
	ck_assert_int_eq(knobctl_db(&out, "results compare --csv 20260106-000000-cccc "
	    "20260106-000000-dddd"), 1);
	ck_assert_msg(strstr(out, "\nrand-read,4,IOPS,0,,,,,3,910.0,"), "%s", out);
	free(out);
	ck_assert_int_eq(knobctl_db(&out, "results compare 20260106-000000-cccc "
	    "20260106-000000-dddd"), 1);
	free(out);
	ck_assert_int_eq(knobctl_db(&out, "results compare 20260106-000000-dddd "
	    "20260106-000000-eeee"), 0);
	free(out);
}
END_TEST

/* The commands that read the results database and make nothing there. */
static const char *const read_cmds[] = {
	"results list", "results show latest", "results compare latest~1 latest",
	"report latest -o /nonexistent/r.html",
};

/* Every read command (results list, show, compare, report) on the
 * database at dbpath: exit 2 with a message naming the path, whose
 * reason includes why. */
static void
read_commands_refused(const char *why)
{
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	char *out, *want = xasprintf("results database %s: ", dbpath);

	for (size_t i = 0; i < nitems(read_cmds); i++) {
		ck_assert_msg(cu_sh_out(&out, "env -u KNOB_CLUSTER KNOB_DB=%s %s/knobctl %s", dbpath,
		    bin, read_cmds[i]) == 2, "%s: %s", read_cmds[i], out);
		ck_assert_msg(strstr(out, want) && strstr(out, why), "%s: %s", read_cmds[i], out);
		free(out);
	}
	free(want);
}

/* The read commands do not make a results database that is not there (a
 * mistyped $KNOB_DB, or nothing stored yet), and one that cannot be opened
 * (a directory, not a database) is an input error: exit 2 naming the
 * path, and no file or directory left behind.  Before, list made both;
 * then all four exited 1, which compare documents as "no point in
 * common", and "file is not a database" did not name the file. */
START_TEST(t_read_commands_no_create)
{
	snprintf(dbpath, sizeof(dbpath), "%s/typo/results.db", dir);
	read_commands_refused("No such file or directory (no run stored there yet");
	ck_assert_int_ne(access(dbpath, F_OK), 0);
	ck_assert_int_eq(cu_count_entries(dir), 0);
	snprintf(dbpath, sizeof(dbpath), "%s/results.db", dir);
	ck_assert_int_eq(mkdir(dbpath, 0755), 0);
	read_commands_refused("unable to open database file");
	ck_assert_int_eq(rmdir(dbpath), 0);
	cu_write(dbpath, 0644, "not a database, not at all: a text file\n");
	read_commands_refused("file is not a database");
}
END_TEST

/* "knobctl ARGS" (stdout and stderr into *out) on this test's database
 * with its directory a read-only bind mount: in a mount namespace of the
 * shell's own (unshare -m), so it goes with the shell.  Root does not get
 * past a read-only mount as it does past a file's mode. */
static int
knobctl_ro(char **out, const char *args)
{
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";

	return cu_sh_out(out, "unshare -m --propagation private sh -c 'mount --bind %s %s && "
	    "mount -o remount,ro,bind %s && env -u KNOB_CLUSTER KNOB_DB=%s %s/knobctl %s'", dir, dir,
	    dir, dbpath, bin, args);
}

/* A current database this user cannot write (0444, in a read-only
 * directory on a read-only mount: root's 0644 file read by an engineer
 * is the same to SQLite) is read: results list and compare print its runs,
 * and nothing is written beside it; a bench refuses it before running.
 * One that needs migrating is refused, naming the file.  Before, every open began BEGIN IMMEDIATE: "attempt to
 * write a readonly database". */
START_TEST(t_read_only_db)
{
	sqlite3 *db = open_db();
	char *out;

	json_object_put(stored(db, rr_run("20260106-000000-dddd", 2, "ok")));
	json_object_put(stored(db, rr_run("20260106-000000-eeee", 3, "ok")));
	sqlite3_close(db);
	ck_assert_int_eq(chmod(dbpath, 0444), 0);
	ck_assert_int_eq(chmod(dir, 0555), 0);
	ck_assert_int_eq(knobctl_ro(&out, "results list"), 0);
	ck_assert_msg(strstr(out, "20260106-000000-dddd") && strstr(out, "20260106-000000-eeee"),
	    "%s", out);
	free(out);
	ck_assert_int_eq(knobctl_ro(&out, "results compare 20260106-000000-dddd "
	    "20260106-000000-eeee"), 0);
	ck_assert_msg(strstr(out, "rand-read") && strstr(out, "within noise"), "%s", out);
	free(out);
	ck_assert_int_eq(knobctl_ro(&out, "--json results show latest"), 0);
	free(out);
	ck_assert_int_eq(cu_count_entries(dir), 1);	/* no -wal, no -shm */
	/* a bench, which writes, runs nothing */
	ck_assert_int_eq(knobctl_ro(&out, "bench seq-write -w node01 --dir /nonexistent"), 3);
	ck_assert_msg(strstr(out, "cannot be written here"), "%s", out);
	free(out);
	/* a step due: refused, the file named */
	ck_assert_int_eq(chmod(dir, 0755), 0);
	ck_assert_int_eq(sqlite3_open(dbpath, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "PRAGMA user_version = 7", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	ck_assert_int_eq(chmod(dir, 0555), 0);
	ck_assert_int_eq(knobctl_ro(&out, "results list"), 2);
	ck_assert_msg(strstr(out, dbpath) && strstr(out, "at version 7 and this knobctl needs 9"),
	    "%s", out);
	free(out);
	ck_assert_int_eq(chmod(dir, 0755), 0);
}
END_TEST

/* knobctl ARGS as uid 65534 (the copy in dir) on dbpath: its exit status,
 * its output into *out. */
static int
as_nobody(char **out, const char *args)
{
	return cu_sh_out(out, "setpriv --reuid=65534 --regid=65534 --clear-groups env -u KNOB_CLUSTER "
	    "HOME=/nonexistent KNOB_DB=%s %s/knobctl %s", dbpath, dir, args);
}

/* The engineer's case itself: root's results.db (0644, in a 0755
 * directory) read by another user (uid 65534, through setpriv, with a
 * copy of knobctl it may run): results list and compare print the runs,
 * nothing is written beside the file (no -wal, -shm or journal), and a
 * bench refuses the database before it runs.  t_read_only_db has the
 * read-only mount. */
START_TEST(t_db_of_another_user)
{
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	sqlite3 *db = open_db();
	char *out;

	json_object_put(stored(db, rr_run("20260106-000000-dddd", 2, "ok")));
	json_object_put(stored(db, rr_run("20260106-000000-eeee", 3, "ok")));
	sqlite3_close(db);
	ck_assert_int_eq(cu_sh_out(&out, "cp %s/knobctl %s/knobctl && chmod 0755 %s %s %s/knobctl && "
	    "chmod 0644 %s", bin, dir, cu_base(), dir, dir, dbpath), 0);
	free(out);
	ck_assert_int_eq(as_nobody(&out, "results list"), 0);
	ck_assert_msg(strstr(out, "20260106-000000-dddd") && strstr(out, "20260106-000000-eeee"),
	    "%s", out);
	free(out);
	ck_assert_int_eq(as_nobody(&out, "results compare 20260106-000000-dddd 20260106-000000-eeee"), 0);
	ck_assert_msg(strstr(out, "within noise"), "%s", out);
	free(out);
	ck_assert_int_eq(cu_dir_size(dir), 2);	/* results.db and knobctl alone */
	ck_assert_int_eq(as_nobody(&out, "bench seq-write -w node01 --dir /nonexistent"), 3);
	ck_assert_msg(strstr(out, "cannot be written here"), "%s", out);
	free(out);
	ck_assert_int_eq(chmod(cu_base(), 0700), 0);
}
END_TEST

/* report -o FILE on a full disk leaves the page that was there: the new
 * one is written beside it and renamed.  Before, FILE was truncated first
 * and left cut short.  The tmpfs lives in a mount namespace of the shell's
 * own (unshare -m), so it goes with it. */
START_TEST(t_report_whole_or_nothing)
{
	sqlite3 *db = open_db();
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	char *out;
	int rc;

	json_object_put(stored(db, rr_run("20260106-000000-dddd", 2, "ok")));
	sqlite3_close(db);
	rc = cu_sh_out(&out, "unshare -m --propagation private sh -c '"
	    "mkdir %s/full && mount -t tmpfs -o size=64k tmpfs %s/full && "
	    "printf %%3000s x > %s/full/page.html && "
	    "dd if=/dev/zero of=%s/full/fill bs=1k >/dev/null 2>&1; "
	    "KNOB_DB=%s %s/knobctl report latest -o %s/full/page.html; echo rc=$?; "
	    "wc -c < %s/full/page.html; ls %s/full'",
	    dir, dir, dir, dir, dbpath, bin, dir, dir, dir);
	ck_assert_msg(rc == 0, "%s", out);
	ck_assert_msg(strstr(out, "No space left on device\nrc=1\n3000\nfill\npage.html\n"),
	    "%s", out);
	free(out);
}
END_TEST

/* The record of a rand-read phase at iodepth 16 with the engine asked for
 * left to auto, on nodes whose results say they ran engines[0..n) at
 * queue depths depths[0..n) (NULL: an agent before the field); engines
 * NULL: no node sent a result (their prepare failed). */
static json_object *
phase_ran_at(const char *const *engines, const uint32_t *depths, size_t n)
{
	static char names[2][8] = { "node01", "node02" };
	static char enospc[] = "prepare: No space left on device";
	struct bench_req rq = { 0 };
	struct plan pl = { 0 };
	struct fo_node fn[2];
	struct fanout fo = { 0 };
	struct pnode pn[2];
	Knob__Envelope env[2];
	Knob__PhaseResult res[2];
	Knob__ThreadResult thr[2], *tp[2];
	struct brun br = { 0 };
	const char *status;

	ck_assert_uint_le(n, 2);
	memset(fn, 0, sizeof(fn));
	memset(pn, 0, sizeof(pn));
	for (size_t i = 0; i < n; i++) {
		knob__thread_result__init(&thr[i]);
		thr[i].bytes = 1 << 20;
		thr[i].ops = 256;
		thr[i].start_ns = 1000000000;
		thr[i].end_ns = 2000000000;
		tp[i] = &thr[i];
		knob__phase_result__init(&res[i]);
		res[i].ok = 1;
		res[i].ioengine = engines ? (char *)(uintptr_t)engines[i] : NULL;
		res[i].iodepth = depths ? depths[i] : 0;
		res[i].bytes = thr[i].bytes;
		res[i].ops = thr[i].ops;
		res[i].start_ns = thr[i].start_ns;
		res[i].end_ns = thr[i].end_ns;
		res[i].n_threads = 1;
		res[i].threads = &tp[i];
		knob__envelope__init(&env[i]);
		env[i].body_case = KNOB__ENVELOPE__BODY_PHASE_RESULT;
		env[i].phase_result = &res[i];
		pn[i].alive = pn[i].inphase = 1;
		pn[i].st = PN_DONE;
		pn[i].result = engines ? &env[i] : NULL;
		pn[i].err = engines ? NULL : enospc;
		fn[i].name = names[i];
	}
	rq.dir = "/mnt";
	rq.iodepth = 16;
	pl.kind = "rand-read";
	pl.threads = (uint32_t)n;
	pl.repeat = 1;
	pl.bs = 4096;
	pl.size = 1 << 20;
	fo.n = n;
	fo.nodes = fn;
	br.req = &rq;
	br.fo = &fo;
	br.pn = pn;
	br.plan = &pl;
	br.nplan = 1;
	snprintf(br.phase_id, sizeof(br.phase_id), "x");
	return bench_phase_record(&br, &status);
}

/* phase_ran_at() from agents that do not say their queue depth. */
static json_object *
phase_ran(const char *const *engines, size_t n)
{
	return phase_ran_at(engines, NULL, n);
}

/* params.ioengine is the engine the nodes ran (auto took io_uring on one
 * run and fell back to libaio on another), "mixed" when they differ, and
 * compare keeps io_uring and libaio apart.  Before, both said "auto", the
 * engine asked for, and paired alike. */
START_TEST(t_ioengine_ran)
{
	static const char *const uring[] = { "io_uring", "io_uring" };
	static const char *const aio[] = { "libaio", "libaio" };
	static const char *const both[] = { "io_uring", "libaio" };
	json_object *a = mk_doc("A", 1), *b = mk_doc("B", 2), *ph;
	char err[512];

	ph = phase_ran(both, 2);
	ck_assert_str_eq(cu_str(cu_get(ph, "params"), "ioengine"), "mixed");
	json_object_put(ph);
	ph = phase_ran(uring, 1);
	ck_assert_str_eq(cu_str(cu_get(ph, "params"), "ioengine"), "io_uring");
	json_object_put(ph);
	for (int i = 0; i < 3; i++) {
		add_phase(a, phase_ran(uring, 2));
		add_phase(b, phase_ran(aio, 2));
	}
	ck_assert_str_eq(cu_str(cu_get(json_object_array_get_idx(cu_get(b, "phases"), 0),
	    "params"), "ioengine"), "libaio");
	ck_assert_ptr_null(results_compare_doc(a, b, 0, err, sizeof(err)));
	ck_assert_msg(strstr(err, "params.ioengine io_uring vs libaio"), "%s", err);
	json_object_put(a);
	json_object_put(b);
}
END_TEST

/* Run id on nodeset ns in directory d: 3 repeats of seq-write at 4 threads. */
static json_object *
placed_run(const char *id, int64_t t, const char *ns, const char *d)
{
	static const double f[] = { 1.0, 1.01, 0.99 };
	json_object *doc = mk_doc(id, t);

	json_object_object_add(doc, "nodeset", json_object_new_string(ns));
	for (int i = 0; i < 3; i++) {
		json_object *ph = mk_phase("seq-write", 4, i + 1, 1e9 * f[i], 1 << 20, "ok");

		json_object_object_add(cu_get(ph, "params"), "dir", json_object_new_string(d));
		add_phase(doc, ph);
	}
	return doc;
}

/* Two stored runs alike but for where they ran, on node01 then node02,
 * or in /mnt/ext4 then /mnt/tmpfs: compare refuses them (exit 2) naming
 * both, as it does points whose parameters differ; --force compares them
 * with a warning line, and marks the JSON (placement_differs).  The head
 * shows each run's nodes and directory.  Before, a verdict and exit 0
 * with no word of it. */
START_TEST(t_compare_placement)
{
	static const struct { const char *ns[2], *dir[2], *what, *warn; } c[] = {
		{ { "node01", "node02" }, { "/mnt/ext4", "/mnt/ext4" }, "nodes",
		    "different nodes (A node01, B node02)" },
		{ { "node01", "node01" }, { "/mnt/ext4", "/mnt/tmpfs" }, "dir",
		    "different directories (A /mnt/ext4, B /mnt/tmpfs)" },
	};
	sqlite3 *db = open_db();
	char *out, args[160];
	json_object *doc;

	for (size_t i = 0; i < nitems(c); i++) {
		char id[2][40];

		for (int k = 0; k < 2; k++) {
			snprintf(id[k], sizeof(id[k]), "20260107-00000%zu-%c", i, k ? 'b' : 'a');
			json_object_put(stored(db, placed_run(id[k], (int64_t)(2 * i + k) + 1,
			    c[i].ns[k], c[i].dir[k])));
		}
		snprintf(args, sizeof(args), "results compare %s %s", id[0], id[1]);
		ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER KNOB_DB=%s %s/knobctl %s",
		    dbpath, getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build", args), 2);
		ck_assert_msg(strstr(out, c[i].warn) && strstr(out, "--force"), "%s", out);
		free(out);
		snprintf(args, sizeof(args), "results compare --force %s %s", id[0], id[1]);
		ck_assert_int_eq(knobctl_db(&out, args), 0);
		ck_assert_msg(strstr(out, "warning: the runs ran on ") && strstr(out, c[i].warn),
		    "%s", out);
		ck_assert_msg(strstr(out, "nodes node01") && strstr(out, "dir /mnt/ext4"), "%s", out);
		ck_assert_msg(strstr(out, "within noise"), "%s", out);
		free(out);
		snprintf(args, sizeof(args), "--json results compare --force %s %s", id[0], id[1]);
		ck_assert_int_eq(knobctl_db(&out, args), 0);
		doc = json_tokener_parse(out);
		ck_assert_msg(doc != NULL, "%s", out);
		ck_assert_int_eq(json_object_array_length(cu_get(doc, "placement_differs")), 1);
		ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
		    cu_get(doc, "placement_differs"), 0)), c[i].what);
		ck_assert_str_eq(cu_str(doc, "b_nodeset"), c[i].ns[1]);
		ck_assert_str_eq(cu_str(doc, "b_dir"), c[i].dir[1]);
		json_object_put(doc);
		free(out);
	}
	/* the same nodes and directory: no warning */
	json_object_put(stored(db, placed_run("20260107-000009-a", 10, "node01", "/mnt/ext4")));
	ck_assert_int_eq(knobctl_db(&out, "results compare 20260107-000000-a 20260107-000009-a"), 0);
	ck_assert_msg(strstr(out, "warning") == NULL, "%s", out);
	free(out);
	sqlite3_close(db);
}
END_TEST

/* Holm-Bonferroni: with p = .01 .04 .03 .5 the uncorrected rule (p <
 * .05) flags three points, Holm only the first (.04, then .09 = 3 x .03,
 * .09 kept from below for .04, 1 capped for .5); with .001 .01 .02 Holm
 * still flags all three (.003, .02, .02). */
START_TEST(t_holm)
{
	static const double p1[] = { 0.01, 0.04, 0.03, 0.5 }, w1[] = { 0.04, 0.09, 0.09, 0.5 };
	static const double p2[] = { 0.001, 0.01, 0.02 }, w2[] = { 0.003, 0.02, 0.02 };
	double adj[4];

	stats_holm(p1, 4, adj);
	for (size_t i = 0; i < 4; i++)
		ck_assert_double_eq_tol(adj[i], w1[i], 1e-12);
	stats_holm(p2, 3, adj);
	for (size_t i = 0; i < 3; i++) {
		ck_assert_double_eq_tol(adj[i], w2[i], 1e-12);
		ck_assert_double_lt(adj[i], 0.05);
	}
	adj[0] = -1;
	stats_holm(p1, 0, adj);
	ck_assert_double_eq(adj[0], -1);
}
END_TEST

/* Run id with 3 repeats of seq-write at each thread count 1..npt, figures
 * base x f[point][repeat]. */
static json_object *
family_run(const char *id, int64_t t, size_t npt, const double (*f)[3])
{
	json_object *d = mk_doc(id, t);

	for (size_t k = 0; k < npt; k++)
		for (int i = 0; i < 3; i++)
			add_phase(d, mk_phase("seq-write", (int64_t)k + 1, i + 1, 1e9 * f[k][i], 1 << 20,
			    "ok"));
	return d;
}

/* A compare of 12 points, one of which alone would be "worse" at p < .05
 * (p = .020), is within noise after Holm (p_adj = .24): the row shows both
 * p-values (JSON p and p_adj, the table P and P(HOLM)).  A point far out
 * (p < .001) is still worse.  Two compares taken as one family (a play's
 * canary with two benches) adjust over all their points.  Before, the
 * first was "worse" and a canary refused the profile. */
START_TEST(t_compare_holm)
{
	static const double same[3] = { 1.0, 1.01, 0.99 }, worse[3] = { 0.97, 0.975, 0.965 };
	static const double far[3] = { 0.5, 0.501, 0.499 };
	double fa[12][3], fb[12][3];
	json_object *a, *b, *cmp, *r, *two[2];
	char err[256];

	for (size_t k = 0; k < 12; k++) {
		memcpy(fa[k], same, sizeof(same));
		memcpy(fb[k], same, sizeof(same));
	}
	memcpy(fb[3], worse, sizeof(worse));
	a = family_run("A", 1, 12, fa);
	b = family_run("B", 2, 12, fb);
	cmp = results_compare_doc(a, b, 0, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	r = json_object_array_get_idx(cu_get(cmp, "points"), 3);
	ck_assert_int_eq(cu_int(r, "threads"), 4);
	ck_assert_double_lt(cu_num(r, "p"), 0.05);
	ck_assert_str_eq(cu_str(r, "verdict"), "within noise");
	ck_assert_double_gt(cu_num(r, "p_adj"), 0.05);
	ck_assert_double_eq_tol(cu_num(r, "p_adj"), fmin(1, 12 * cu_num(r, "p")), 1e-12);
	two[0] = cmp;
	/* the same alone: worse */
	json_object_put(a);
	json_object_put(b);
	a = family_run("A1", 3, 1, fa + 3);
	b = family_run("B1", 4, 1, fb + 3);
	cmp = results_compare_doc(a, b, 0, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	ck_assert_str_eq(cu_str(json_object_array_get_idx(cu_get(cmp, "points"), 0), "verdict"),
	    "worse");
	/* one family with the 12: within noise again */
	two[1] = cmp;
	results_compare_holm(two, 2);
	r = json_object_array_get_idx(cu_get(cmp, "points"), 0);
	ck_assert_double_eq_tol(cu_num(r, "p_adj"), fmin(1, 13 * cu_num(r, "p")), 1e-12);
	ck_assert_str_eq(cu_str(r, "verdict"), "within noise");
	json_object_put(two[1]);
	json_object_put(a);
	json_object_put(b);
	/* far out: worse after Holm too, and the table shows both p-values */
	memcpy(fb[3], far, sizeof(far));
	a = family_run("A", 1, 12, fa);
	b = family_run("B", 2, 12, fb);
	json_object_put(two[0]);
	cmp = results_compare_doc(a, b, 0, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	r = json_object_array_get_idx(cu_get(cmp, "points"), 3);
	ck_assert_double_lt(cu_num(r, "p_adj"), 0.05);
	ck_assert_double_gt(cu_num(r, "p_adj"), cu_num(r, "p"));
	ck_assert_str_eq(cu_str(r, "verdict"), "worse");
	snprintf(err, sizeof(err), " %7.3f %7.3f  worse\n", cu_num(r, "p"), cu_num(r, "p_adj"));
	says_and_put(json_object_get(cmp), " P P(HOLM)  VERDICT\n", json_object_get(a),
	    json_object_get(b));
	says_and_put(cmp, err, a, b);
}
END_TEST

/* A failed repeat is no sample; a point whose repeats all failed has no figure. */
START_TEST(t_failed_repeat)
{
	json_object *a = mk_doc("A", 1);
	struct pointset ps;

	add_phase(a, mk_phase("seq-write", 1, 1, 1e9, 1 << 20, "ok"));
	add_phase(a, mk_phase("seq-write", 1, 2, 5e9, 1 << 20, "failed"));
	add_phase(a, mk_phase("seq-write", 1, 3, 3e9, 1 << 20, "ok"));
	add_phase(a, mk_phase("seq-read", 1, 1, 1e9, 1 << 20, "failed"));
	points_build(a, &ps);
	ck_assert_uint_eq(ps.n, 2);
	ck_assert_uint_eq(ps.p[0].nphases, 3);
	ck_assert_uint_eq(ps.p[0].st.n, 2);
	ck_assert_double_eq_tol(ps.p[0].st.mean, 2e9, 1);
	ck_assert_uint_eq(ps.p[1].st.n, 0);
	points_free(&ps);
	json_object_put(a);
}
END_TEST

/* With repeats, results show's latency columns are the median of the
 * repeats that did not fail and its status the worst repeat's, beside the
 * mean of all of them: P50 10, 90 (failed), 30, 20 us gives "20.0 us"
 * and "failed".  Before, they were the first repeat's ("10.0 us", "ok"). */
START_TEST(t_repeats_latency)
{
	static const int64_t p50[] = { 10000, 90000, 30000, 20000 };
	json_object *a = mk_doc("A", 1);
	char *text = NULL, *line;
	size_t len = 0;
	FILE *f;

	for (int i = 0; i < 4; i++) {
		json_object *ph = mk_phase("seq-write", 1, i + 1, 1e9, 1 << 20, i == 1 ? "failed" : "ok");

		json_object_object_add(json_object_object_get(ph, "latency"), "p50_ns",
		    json_object_new_int64(p50[i]));
		add_phase(a, ph);
	}
	ck_assert_ptr_nonnull(f = open_memstream(&text, &len));
	rundoc_print(f, a, 0);
	fclose(f);
	ck_assert_ptr_nonnull(line = strstr(text, "\nseq-write"));
	*strchr(line + 1, '\n') = '\0';
	ck_assert_msg(strstr(line, "20.0 us") != NULL && strstr(line, "10.0 us") == NULL, "%s", line);
	ck_assert_msg(strstr(line, "failed") != NULL, "%s", line);
	ck_assert_msg(strstr(line, "3 of 4 repeats ok") != NULL, "%s", line);
	free(text);
	json_object_put(a);
}
END_TEST

/* Peak = the largest mean over thread counts and where; sustained = the
 * median of the means from the peak on. */
START_TEST(t_peak_sustained)
{
	json_object *a = mk_doc("A", 1);
	static const int64_t thr[] = { 1, 2, 4, 8, 16, 32 };
	static const double gbs[] = { 1.0, 1.9, 3.5, 3.2, 3.4, 2.0 };
	struct pointset ps;
	struct peak *pk;
	size_t n;

	/* out of thread order on purpose */
	for (int i = 5; i >= 0; i--)
		add_phase(a, mk_phase("seq-write", thr[i], 1, gbs[i] * 1e9, 1 << 20, "ok"));
	add_phase(a, mk_phase("md-create", 1, 1, 5000, 0, "ok"));
	points_build(a, &ps);
	n = stats_peaks(&ps, &pk);
	ck_assert_uint_eq(n, 2);
	ck_assert_double_eq_tol(pk[0].peak, 3.5e9, 1);
	ck_assert_int_eq(pk[0].peak_threads, 4);
	/* from 4 threads on: 3.5, 3.2, 3.4, 2.0 -> median (3.2 + 3.4) / 2 */
	ck_assert_double_eq_tol(pk[0].sustained, 3.3e9, 1);
	ck_assert_int_eq(pk[0].min_threads, 1);
	ck_assert_int_eq(pk[0].max_threads, 32);
	ck_assert_double_eq_tol(pk[1].peak, 5000, 1e-9);
	free(pk);
	points_free(&ps);
	json_object_put(a);
	/* a repeat that lost a node is a point of its own (8 threads on 3),
	 * and not a second figure at 8 threads: not the peak, not counted */
	a = mk_doc("B", 2);
	add_phase(a, on_nodes(mk_phase("seq-write", 4, 1, 3.5e9, 1 << 20, "ok"), 4));
	add_phase(a, on_nodes(mk_phase("seq-write", 8, 1, 3.2e9, 1 << 20, "ok"), 4));
	add_phase(a, on_nodes(mk_phase("seq-write", 8, 2, 9.0e9, 1 << 20, "ok"), 3));
	points_build(a, &ps);
	ck_assert_uint_eq(ps.n, 3);
	n = stats_peaks(&ps, &pk);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(pk[0].npoints, 2);
	ck_assert_double_eq_tol(pk[0].peak, 3.5e9, 1);
	ck_assert_double_eq_tol(pk[0].sustained, 3.35e9, 1);
	free(pk);
	points_free(&ps);
	json_object_put(a);
	/* the repeat on 4 nodes failed (no figure), the one on 3 did not: the
	 * one with a figure stands for 8 threads (a play's score takes it) */
	a = mk_doc("C", 3);
	add_phase(a, on_nodes(mk_phase("seq-write", 8, 1, 3.2e9, 1 << 20, "failed"), 4));
	add_phase(a, on_nodes(mk_phase("seq-write", 8, 2, 3.0e9, 1 << 20, "ok"), 3));
	points_build(a, &ps);
	ck_assert_uint_eq(ps.n, 2);
	for (size_t i = 0; i < ps.n; i++)
		ck_assert_int_eq(points_workload_rep(&ps, i), ps.p[i].st.n > 0);
	points_free(&ps);
	json_object_put(a);
}
END_TEST

/* IO500-like: sqrt(geomean(bw GiB/s) * geomean(md kIOPS)). */
START_TEST(t_io500)
{
	static const double bw[] = { 2.0, 8.0, 0.5, 2.0 };	/* product 16: geomean 2 */
	static const double md[] = { 10, 40, 160 };		/* geomean = 40 */
	struct io500 s;

	stats_io500(bw, 4, md, 3, &s);
	ck_assert_double_eq_tol(s.bw_gib, 2.0, 1e-12);
	ck_assert_double_eq_tol(s.md_kiops, 40.0, 1e-12);
	ck_assert_double_eq_tol(s.score, sqrt(80.0), 1e-12);
	stats_io500(bw, 0, md, 3, &s);
	ck_assert_double_eq(s.score, 0);
}
END_TEST

/* Units: one family, written out; IOPS for rand-*, ops/s for md-*. */
START_TEST(t_units)
{
	char b[64];
	json_object *ph = mk_phase("rand-read", 4, 1, 4096.0 * 2500, 4096, "ok");
	double v;

	rundoc_fmt_rate(b, sizeof(b), 1536.0 * 1048576, M_BW, 0);
	ck_assert_str_eq(b, "1.50 GiB/s");
	rundoc_fmt_rate(b, sizeof(b), 1.5e9, M_BW, 1);
	ck_assert_str_eq(b, "1.50 GB/s");
	rundoc_fmt_rate(b, sizeof(b), 100.0 * 1048576, M_BW, 0);
	ck_assert_str_eq(b, "100.0 MiB/s");
	ck_assert_int_eq(rundoc_metric(ph, &v), 0);
	ck_assert_double_eq_tol(v, 2500, 1e-9);
	ck_assert_int_eq(rundoc_metric_of("md-stat"), M_OPS);
	size_fmt(b, sizeof(b), 16 << 20);
	ck_assert_str_eq(b, "16m");
	size_fmt(b, sizeof(b), 47008);
	ck_assert_str_eq(b, "47008");
	json_object_put(ph);
	ph = mk_phase("seq-read", 4, 1, 1e9, 4096, "failed");
	ck_assert_int_eq(rundoc_metric(ph, &v), -1);
	json_object_put(ph);
}
END_TEST

/* A database this user may not read (root's, 0600) is refused as one that
 * cannot be opened: exit 2 naming it, for every read command (uid 65534
 * through setpriv, with a copy of knobctl it may run).  Before, exit 1. */
START_TEST(t_db_unreadable)
{
	const char *bin = getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build";
	sqlite3 *db = open_db();
	char *out, *want = xasprintf("results database %s: ", dbpath);

	json_object_put(stored(db, rr_run("20260106-000000-dddd", 2, "ok")));
	sqlite3_close(db);
	ck_assert_int_eq(cu_sh_out(&out, "cp %s/knobctl %s/knobctl && chmod 0755 %s %s %s/knobctl && "
	    "chmod 0600 %s", bin, dir, cu_base(), dir, dir, dbpath), 0);
	free(out);
	for (size_t i = 0; i < nitems(read_cmds); i++) {
		ck_assert_msg(as_nobody(&out, read_cmds[i]) == 2, "%s: %s", read_cmds[i], out);
		ck_assert_msg(strstr(out, want), "%s: %s", read_cmds[i], out);
		free(out);
	}
	free(want);
	ck_assert_int_eq(chmod(cu_base(), 0700), 0);
}
END_TEST

/* What results show prints of doc (malloc'd). */
static char *
show_text(json_object *doc)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	rundoc_print(f, doc, 0);
	fclose(f);
	return text;
}

/* The report page of docs[0..n) (malloc'd). */
static char *
report_text(json_object *const *docs, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(report_write(f, docs, n, 0), 0);
	fclose(f);
	return text;
}

/* The line of text that starts with "\nprefix", cut out (in place). */
static char *
line_of(char *text, const char *prefix)
{
	char *want = xasprintf("\n%s", prefix), *l = strstr(text, want), *e;

	free(want);
	ck_assert_msg(l != NULL, "no line %s in\n%s", prefix, text);
	if ((e = strchr(++l, '\n')) != NULL)
		*e = '\0';
	return l;
}

/* How many times needle occurs in hay. */
static int
count_str(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* A point with one repeat of three that has a figure shows the figure
 * alone, as compare and the report do: no "± 0.00", and no error bar in
 * the report; two good repeats show their sd.  Before, show went by the
 * number of phases (3) and printed "1.00 ± 0.00 GiB/s", and the report
 * drew a bar of no height. */
START_TEST(t_one_good_repeat)
{
	json_object *a = mk_doc("A", 1);
	char *text, *page;

	add_phase(a, mk_phase("seq-write", 1, 1, 1 << 30, 1 << 20, "failed"));
	add_phase(a, mk_phase("seq-write", 1, 2, 1 << 30, 1 << 20, "ok"));
	add_phase(a, mk_phase("seq-write", 1, 3, 1 << 30, 1 << 20, "failed"));
	add_phase(a, mk_phase("seq-read", 1, 1, 1 << 30, 1 << 20, "ok"));
	add_phase(a, mk_phase("seq-read", 1, 2, 1.5 * (1 << 30), 1 << 20, "ok"));
	text = show_text(a);
	ck_assert_msg(strstr(line_of(text, "seq-write"), "±") == NULL, "%s", text);
	free(text);
	text = show_text(a);
	ck_assert_msg(strstr(line_of(text, "seq-read"), "±") != NULL, "%s", text);
	free(text);
	page = report_text(&a, 1);
	ck_assert_int_eq(count_str(page, "class=\"errbar\""), 1);	/* seq-read's */
	free(page);
	json_object_put(a);
}
END_TEST

/* The y axis tick labels of a report page, "|0|250|500|" (malloc'd). */
static char *
y_ticks(const char *page)
{
	static const char tag[] = "text-anchor=\"end\" font-size=\"11\">";
	char *s = xstrdup("|");

	for (const char *p = page; (p = strstr(p, tag)) != NULL; p += strlen(tag))
		str_appendf(&s, "%.*s|", (int)strcspn(p + strlen(tag), "<"), p + strlen(tag));
	return s;
}

/* The report's y axis labels its ticks with plain numbers and a k/M/G
 * suffix: md-stat at 1.6 million ops/s and seq-write at 2 TiB/s (about
 * 1.9 million MiB/s) have no "1.5e+06" in their charts.  Before, %g. */
START_TEST(t_report_tick_labels)
{
	json_object *a = mk_doc("A", 1);
	char *page, *ticks;

	add_phase(a, mk_phase("md-stat", 1, 1, 8e5, 0, "ok"));
	add_phase(a, mk_phase("md-stat", 2, 1, 1.6e6, 0, "ok"));
	add_phase(a, mk_phase("seq-write", 1, 1, 2.0 * (1ull << 40), 1 << 20, "ok"));
	add_phase(a, mk_phase("seq-write", 2, 1, 750.0 * (1 << 20), 1 << 20, "ok"));
	page = report_text(&a, 1);
	ticks = y_ticks(page);
	ck_assert_msg(strstr(page, "e+") == NULL, "%s", ticks);
	ck_assert_msg(strstr(ticks, "|0|0.5M|1.0M|1.5M|2.0M|0|"), "%s", ticks);
	free(ticks);
	free(page);
	json_object_put(a);
}
END_TEST

/* The value of attribute name in the tag that p is in, into buf ("" when
 * the tag has none). */
static const char *
tag_attr(const char *p, const char *name, char *buf, size_t len)
{
	char *key = xasprintf(" %s=\"", name);
	const char *v = strstr(p, key), *end = strchr(p, '>');

	buf[0] = '\0';
	if (v != NULL && end != NULL && v < end)
		snprintf(buf, len, "%.*s", (int)strcspn(v + strlen(key), "\""), v + strlen(key));
	free(key);
	return buf;
}

/* Chart fig (a report page from its <figure> on) has n series, each in a
 * style (stroke and dash pattern) of its own, and n legend rows, each
 * inside the viewBox. */
static void
chart_styles_legend(const char *fig, size_t n)
{
	const char *end = strstr(fig, "</figure>"), *p;
	char styles[32][64], v[32], d[32];
	size_t ns = 0, nl = 0;
	int h = 0, y;

	ck_assert_int_eq(sscanf(tag_attr(strstr(fig, "<svg"), "viewBox", v, sizeof(v)),
	    "0 0 %*d %d", &h), 1);
	for (p = fig; (p = strstr(p, "class=\"series\"")) != NULL && p < end; p++, ns++) {
		ck_assert_uint_lt(ns, nitems(styles));
		snprintf(styles[ns], sizeof(styles[ns]), "%s %s", tag_attr(p, "stroke", v,
		    sizeof(v)), tag_attr(p, "stroke-dasharray", d, sizeof(d)));
		for (size_t k = 0; k < ns; k++)
			ck_assert_msg(strcmp(styles[k], styles[ns]) != 0, "series %zu and %zu: %s",
			    k, ns, styles[ns]);
	}
	for (p = fig; (p = strstr(p, "<g class=\"legend\">")) != NULL && p < end; p++, nl++) {
		y = atoi(tag_attr(strstr(p, "<text"), "y", v, sizeof(v)));
		ck_assert_msg(y > 0 && y + 4 <= h, "legend row %zu at y %d of %d", nl, y, h);
	}
	ck_assert_uint_eq(ns, n);
	ck_assert_uint_eq(nl, n);
}

/* A report of 20 runs: every series in a style of its own (colours came
 * round again after 8), every legend row inside its chart (the chart kept
 * 380 px, so from the 18th run on the legend was cut off), and a chart's
 * legend names only the runs with a point in it (md-create, in 3 runs:
 * all 20 were listed). */
START_TEST(t_report_many_runs)
{
	json_object *docs[20];
	char *page, *md;

	for (int r = 0; r < 20; r++) {
		char id[32];

		snprintf(id, sizeof(id), "20260101-000000-r%02d", r);
		docs[r] = mk_doc(id, r + 1);
		for (int t = 1; t <= 2; t++)
			add_phase(docs[r], mk_phase("seq-write", t, 1, (1e8 + 1e7 * r) * t, 1 << 20,
			    "ok"));
		if (r < 3)
			add_phase(docs[r], mk_phase("md-create", 1, 1, 1000 + r, 0, "ok"));
	}
	page = report_text(docs, 20);
	ck_assert_ptr_nonnull(strstr(page, "<figure class=\"chart\"><figcaption>seq-write"));
	ck_assert_ptr_nonnull(md = strstr(page, "<figure class=\"chart\"><figcaption>md-create"));
	chart_styles_legend(strstr(page, "<figure class=\"chart\"><figcaption>seq-write"), 20);
	chart_styles_legend(md, 3);
	free(page);
	for (int r = 0; r < 20; r++)
		json_object_put(docs[r]);
}
END_TEST

/* A report of runs before and after a change on two file systems, given
 * before-ext4, before-xfs, after-ext4, after-xfs: each "after" is compared
 * with the "before" in its own directory, and a run that can be compared
 * with none is refused against the first that shares a point, saying why.
 * Before, after-xfs went to before-ext4, the first run sharing a point,
 * was refused (other directories), and was never compared with before-xfs. */
START_TEST(t_report_pairs_comparable)
{
	static const char *const dirs[] = { "/mnt/ext4", "/mnt/xfs", "/mnt/ext4", "/mnt/xfs" };
	json_object *docs[4];
	char *page, *cmp, id[32];

	for (int r = 0; r < 4; r++) {
		snprintf(id, sizeof(id), "%s-%s", r < 2 ? "before" : "after", dirs[r] + 5);
		docs[r] = placed_run(id, r + 1, "node01", dirs[r]);
	}
	page = report_text(docs, 4);
	cmp = strstr(page, "<h2>Compare</h2>");
	ck_assert_ptr_nonnull(cmp);
	*strstr(cmp, "<h2>Profiles") = '\0';
	ck_assert_msg(strstr(cmp, "<h3>A = before-ext4, B = after-ext4</h3>") &&
	    strstr(cmp, "<h3>A = before-xfs, B = after-xfs</h3>"), "%s", cmp);
	ck_assert_msg(count_str(cmp, "Not compared") == 1, "%s", cmp);	/* before-xfs's */
	ck_assert_msg(strstr(cmp, "<h3>A = before-ext4, B = before-xfs</h3>\n<p class=\"refused\">"
	    "Not compared: the runs ran on different directories"), "%s", cmp);
	free(page);
	for (int r = 0; r < 4; r++)
		json_object_put(docs[r]);
}
END_TEST

/* A report of a run at iodepth 1 and one at 32 (rand-read at 4 threads,
 * 4x the IOPS): its charts and peak rows name the depth of each, so the
 * two workloads do not read as one; a run's own workload (one run, or
 * runs alike) keeps its plain title.  Before, both charts and both peak
 * rows read "rand-read, bs 4k, size 64m", and the peak table showed 4x the
 * IOPS under one title. */
START_TEST(t_report_workload_titles)
{
	json_object *docs[2] = {
		param_run("before", 1, "rand-read", 1e6, "iodepth", "1"),
		param_run("after", 2, "rand-read", 4e6, "iodepth", "32"),
	};
	char *page;

	page = report_text(docs, 2);
	*strstr(page, "<h2>Compare</h2>") = '\0';
	ck_assert_msg(strstr(page, "<figcaption>rand-read, bs 4k, size 64m, iodepth 1</figcaption>") &&
	    strstr(page, "<figcaption>rand-read, bs 4k, size 64m, iodepth 32</figcaption>"), "%s",
	    strstr(page, "<h2>Charts"));
	ck_assert_msg(strstr(page, "<tr><td>before</td><td>rand-read, bs 4k, size 64m, iodepth 1<") &&
	    strstr(page, "<tr><td>after</td><td>rand-read, bs 4k, size 64m, iodepth 32<"), "%s",
	    strstr(page, "<h2>Peak"));
	free(page);
	page = report_text(docs, 1);
	ck_assert_ptr_nonnull(strstr(page, "<figcaption>rand-read, bs 4k, size 64m</figcaption>"));
	free(page);
	json_object_put(docs[0]);
	json_object_put(docs[1]);
}
END_TEST

/* Every text of a run that the report prints (label, status, command,
 * the profile's name, hash and text, each node's name, profile, kernel,
 * CPU and file system, the interrupt's signal) written with HTML markup
 * in it: the page holds none of it as markup.  Before, the profile's
 * sha256 was written as it was stored. */
START_TEST(t_report_escapes)
{
	static const char mark[] = "<b id=\"x\">x</b>";
	json_object *docs[2] = { mk_doc("A", 1), mk_doc("B", 2) }, *prof, *node, *fa, *m;
	char *page;

	for (int r = 0; r < 2; r++) {
		add_phase(docs[r], mk_phase("seq-write", 1, 1, 1e9, 1 << 20, "ok"));
		add_phase(docs[r], mk_phase("seq-write", 1, 2, 1.1e9, 1 << 20, "ok"));
		json_object_object_add(docs[r], "label", json_object_new_string(mark));
		json_object_object_add(docs[r], "command", json_object_new_string(mark));
		json_object_object_add(docs[r], "status", json_object_new_string("interrupted"));
		json_object_object_add(docs[r], "interrupted", json_tokener_parse(
		    "{\"signal\":\"<i>SIGINT</i>\",\"during\":\"<i>x</i>\"}"));
		prof = json_object_new_object();
		for (int k = 0; k < 3; k++)
			json_object_object_add(prof, (const char *[]){ "name", "sha256", "text" }[k],
			    json_object_new_string(mark));
		json_object_object_add(docs[r], "profile", prof);
		node = json_object_new_object();
		fa = json_tokener_parse("{\"cpu\":{},\"mounts\":[{}]}");
		m = json_object_array_get_idx(cu_get(fa, "mounts"), 0);
		json_object_object_add(m, "fstype", json_object_new_string(mark));
		json_object_object_add(cu_get(fa, "cpu"), "model", json_object_new_string(mark));
		json_object_object_add(fa, "kernel", json_object_new_string(mark));
		json_object_object_add(node, "facts", fa);
		json_object_object_add(node, "node", json_object_new_string(mark));
		json_object_object_add(node, "active_profile", json_object_new_string(mark));
		json_object_object_add(docs[r], "node_info", json_tokener_parse("[]"));
		json_object_array_add(cu_get(docs[r], "node_info"), node);
	}
	page = report_text(docs, 2);
	ck_assert_msg(strstr(page, "<b id") == NULL && strstr(page, "<i>") == NULL, "%s",
	    strstr(page, "<b id") ? strstr(page, "<b id") : strstr(page, "<i>"));
	ck_assert_int_ge(count_str(page, "&lt;b id=&quot;x&quot;&gt;x&lt;/b&gt;"), 10);
	free(page);
	json_object_put(docs[0]);
	json_object_put(docs[1]);
}
END_TEST

/* A verdict at p 0.0497 (3 repeats each, sd 1 MB/s, B 2.2718 MB/s up:
 * Welch's t 2.78 at 4 df) shows its p as 0.0497 in the text compare and
 * the report, not as 0.050, the bound a verdict's p is below; 0.04997
 * reads 0.0499.  Before, "%.3f": "0.050  0.050  better". */
START_TEST(t_p_below_bound)
{
	json_object *docs[2] = { mk_doc("A", 1), mk_doc("B", 2) }, *cmp;
	char err[256], *text = NULL, *page;
	size_t len = 0;
	FILE *f;

	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 3; i++)
			add_phase(docs[r], mk_phase("seq-write", 1, i + 1, (99 + i) * 1e6 +
			    r * 2.2718e6, 1 << 20, "ok"));
	cmp = results_compare_doc(docs[0], docs[1], 0, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	ck_assert_msg(fabs(cu_num(json_object_array_get_idx(cu_get(cmp, "points"), 0), "p") -
	    0.0497) < 5e-6, "%s", json_object_to_json_string(cmp));
	f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	results_print_compare(f, cmp, 0);
	fclose(f);
	ck_assert_msg(strstr(text, " 0.0497  0.0497  better") != NULL, "%s", text);
	free(text);
	json_object_put(cmp);
	stats_p_text(err, sizeof(err), 0.04997);
	ck_assert_str_eq(err, "0.0499");
	stats_p_text(err, sizeof(err), 0.0504);
	ck_assert_str_eq(err, "0.050");
	page = report_text(docs, 2);
	ck_assert_int_eq(count_str(page, "<td>0.0497</td>"), 2);
	ck_assert_ptr_nonnull(strstr(page, "<td class=\"verdict\">better</td>"));
	free(page);
	json_object_put(docs[0]);
	json_object_put(docs[1]);
}
END_TEST

/* params.iodepth is the queue depth the nodes kept, the lowest of them
 * (libaio on buffered I/O keeps 1 whatever --iodepth said), per_node[]
 * says each; without the figure (an older agent) the request's.  Before,
 * the request's 16 stood for a phase that ran at 1. */
START_TEST(t_iodepth_ran)
{
	static const char *const aio[] = { "libaio", "libaio" };
	static const char *const both[] = { "io_uring", "libaio" };
	static const uint32_t one[] = { 1, 1 }, mixed[] = { 16, 1 };
	json_object *ph;

	ph = phase_ran_at(aio, one, 2);
	ck_assert_int_eq(cu_int(cu_get(ph, "params"), "iodepth"), 1);
	ck_assert_int_eq(cu_int(json_object_array_get_idx(cu_get(ph, "per_node"), 1),
	    "iodepth"), 1);
	json_object_put(ph);
	ph = phase_ran_at(both, mixed, 2);
	ck_assert_int_eq(cu_int(cu_get(ph, "params"), "iodepth"), 1);
	ck_assert_int_eq(cu_int(json_object_array_get_idx(cu_get(ph, "per_node"), 0),
	    "iodepth"), 16);
	json_object_put(ph);
	ph = phase_ran(aio, 2);
	ck_assert_int_eq(cu_int(cu_get(ph, "params"), "iodepth"), 16);
	json_object_put(ph);
}
END_TEST

/* Version 9: a built-in metadata phase stored with md_files 0 (no --files:
 * the agent ran files_per_dir per thread) reads that figure, in the column,
 * the record and its params; one with --files keeps its own, and other
 * kinds stay 0.  Before, compare kept such a run apart from the same run
 * with --files 1024. */
START_TEST(t_migrate_v8_md_files)
{
	static const char *const kinds[] = { "md-create", "md-rmdir", "md-stat", "seq-write",
	    "mdtest" };
	static const int64_t want[] = { 1024, 16, 40, 0, 0 };
	sqlite3 *db;
	sqlite3_stmt *st;
	json_object *d = mk_doc("20260101-000001-aaaa", 1767225601000000000ll), *ph;

	for (size_t i = 0; i < nitems(kinds); i++) {
		ph = mk_phase(kinds[i], 1, 1, 1e6, 0, "ok");
		if (i == 1)
			json_object_object_add(cu_get(ph, "params"), "files_per_dir",
			    json_object_new_int64(16));
		if (i == 2)
			json_object_object_add(cu_get(ph, "params"), "md_files",
			    json_object_new_int64(40));
		add_phase(d, ph);
	}
	db = stored_at(d, 8);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT kind, md_files,"
	    " json_extract(doc, '$.params.md_files'), coalesce(json_extract(params, '$.md_files'),"
	    " md_files) FROM phases ORDER BY seq", -1, &st, NULL), SQLITE_OK);
	for (size_t i = 0; i < nitems(kinds); i++) {
		ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
		ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), kinds[i]);
		for (int c = 1; c <= 3; c++)
			ck_assert_int_eq(sqlite3_column_int64(st, c), want[i]);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
}
END_TEST

/* A run written by root's knobctl, read by another user on a head node
 * whose /proc is mounted hidepid=2 (a real procfs of that option, in a
 * private mount namespace of a child that then runs as nobody): the
 * writer's /proc/PID is out of sight, but the process is there.  It used
 * to be "gone" (incomplete); now the fresh heartbeat says running, and a
 * pid that does not exist is still gone. */
START_TEST(t_writer_hidden_pid)
{
	struct run_writer w;
	pid_t pid, dead;
	int st;

	runlive_self(&w);	/* this process: root, alive */
	dead = fork();
	ck_assert_int_ge(dead, 0);
	if (dead == 0)
		_exit(0);
	ck_assert_int_eq(cu_reap(dead), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct run_writer gone = w;
		int64_t now = (int64_t)now_real_ns();

		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE,
		    NULL) < 0 || mount("proc", "/proc", "proc", 0, "hidepid=2") < 0)
			_exit(10);
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(11);
		if (access(cu_readf("/proc/%d/stat", (int)w.pid), F_OK) == 0)
			_exit(12);	/* hidepid did not hide root's process */
		if (runlive_gone(&w, now) != 0)
			_exit(13);	/* the bug: taken for gone */
		gone.pid = dead;
		if (runlive_gone(&gone, now) != 1)
			_exit(14);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: exit %d",
	    WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}
END_TEST

/* A repeat whose stored figure is not a number (an infinite rate: a phase
 * timed at 0 s by an external tool's output, or by an older knob; NaN) is
 * no figure: it is left out of the point as a failed repeat is, through
 * the file too.  Before, the infinite one counted: B's mean was inf, its
 * sd NaN, the verdict "within noise" (p 1 from a NaN df) and knobctl's JSON
 * said Infinity and NaN, which no JSON parser takes. */
START_TEST(t_nonfinite_figures)
{
	static const double ra[] = { 1.00e9, 1.02e9, 0.98e9 }, rb[] = { 1.30e9, 1.31e9, 1.29e9 };
	json_object *a = mk_doc("A", 1), *b = mk_doc("B", 2), *cmp, *r;
	sqlite3 *db = open_db();
	const char *txt;
	char err[256];

	for (int i = 0; i < 3; i++) {
		add_phase(a, mk_phase("seq-write", 4, i + 1, ra[i], 1 << 20, "ok"));
		add_phase(b, mk_phase("seq-write", 4, i + 1, rb[i], 1 << 20, "ok"));
	}
	add_phase(b, mk_phase("seq-write", 4, 4, INFINITY, 1 << 20, "ok"));
	add_phase(b, mk_phase("seq-write", 4, 5, NAN, 1 << 20, "ok"));
	a = stored(db, a);
	b = stored(db, b);
	cmp = results_compare_doc(a, b, 0, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	r = json_object_array_get_idx(cu_get(cmp, "points"), 0);
	txt = json_object_to_json_string_ext(cmp, JSON_C_TO_STRING_PLAIN);
	ck_assert_msg(strstr(txt, "Infinity") == NULL && strstr(txt, "NaN") == NULL &&
	    strstr(txt, "nan") == NULL, "%s", txt);
	ck_assert_int_eq(cu_int(r, "b_n"), 3);
	ck_assert_double_eq_tol(cu_num(r, "b_mean"), 1.30e9, 1);
	ck_assert_str_eq(cu_str(r, "verdict"), "better");
	json_object_put(cmp);
	json_object_put(a);
	json_object_put(b);
	sqlite3_close(db);
}
END_TEST

/* Statistics given what is not a number: a sample with an infinite figure
 * has no verdict (it was "within noise": p 1 from a NaN df), a NaN t has p
 * 1 (it was NaN), a NaN p no verdict (it was "worse": NaN >= 0.05 is
 * false), and Holm takes a NaN p for 1 (it stopped 0.01 behind it from
 * sorting first: all three came out 1 and 0.01 lost its 0.03). */
START_TEST(t_stats_nonfinite)
{
	static const double x[] = { 1, 2, INFINITY }, y[] = { 1, 2, 3 };
	static const double p[] = { 0.5, NAN, 0.01 }, want[] = { 1, 1, 0.03 };
	struct sample_stats sx, sy;
	struct welch w = { 1, -2, 4, NAN };
	double adj[3];

	ck_assert_int_eq(stats_verdict(&w), VERDICT_NONE);
	ck_assert_double_eq(stats_t_two_sided(NAN, 4), 1);
	stats_summary(x, 3, &sx);
	stats_summary(y, 3, &sy);
	stats_welch(&sy, &sx, &w);
	ck_assert_int_eq(stats_verdict(&w), VERDICT_NONE);
	stats_holm(p, 3, adj);
	for (size_t i = 0; i < 3; i++)
		ck_assert_msg(fabs(adj[i] - want[i]) < 1e-12, "adj[%zu] %g, want %g", i, adj[i],
		    want[i]);
}
END_TEST

/* An empty run (`knobctl results show "$RUN"` with RUN unset) names no
 * run.  Before, it was a prefix of every id: the only run of a database
 * was shown, exit 0, and with more "run '' is ambiguous". */
START_TEST(t_resolve_empty)
{
	sqlite3 *db = open_db();
	json_object *d = mk_doc("20260101-000001-aaaa", 1767225601000000000ll);
	char err[256] = "", *id = NULL;

	ck_assert_int_eq(results_store(db, d), 0);
	json_object_put(d);
	ck_assert_int_eq(results_resolve(db, "", &id, err, sizeof(err)), -1);
	ck_assert_ptr_null(id);
	ck_assert_msg(strstr(err, "empty") != NULL, "%s", err);
	sqlite3_close(db);
}
END_TEST

/* mdtest prints "Tree creation ... inf" when the tree took no measurable
 * time, and strtod reads it: the tool's figure, kept in the phase's
 * ext_ops, is null in a run read back from the file (JSON has no inf), and
 * the tool summary says "-" for it.  Before, `results --json show` printed
 * "iops": Infinity, which JSON parsers refuse. */
START_TEST(t_nonfinite_json)
{
	json_object *a = mk_doc("A", 1), *ph = mk_phase("mdtest", 4, 1, 5e4, 0, "ok");
	json_object *ops = json_object_new_array(), *x = json_object_new_object();
	sqlite3 *db = open_db();
	const char *txt;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	json_object_object_add(x, "op", json_object_new_string("Tree creation"));
	json_object_object_add(x, "iops", json_object_new_double(INFINITY));
	json_object_array_add(ops, x);
	json_object_object_add(ph, "ext_ops", ops);
	add_phase(a, ph);
	a = stored(db, a);
	txt = json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN);
	ck_assert_msg(strstr(txt, "Infinity") == NULL, "%s", txt);
	x = json_object_array_get_idx(cu_get(json_object_array_get_idx(cu_get(a, "phases"), 0),
	    "ext_ops"), 0);
	ck_assert_ptr_null(js_get(x, "iops"));
	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	bench_print_table(f, a, 0);
	fclose(f);
	ck_assert_msg(strstr(out, "Tree creation") && strstr(strstr(out, "Tree creation"),
	    "ops/s") == NULL, "%s", out);
	free(out);
	json_object_put(a);
	sqlite3_close(db);
}
END_TEST

/* Repeats with the same figure (a tool's rounded output: mdtest's 123.400
 * ops/s three times) have that figure as mean and no spread, so against
 * three of 123.405 there is no verdict, as with two repeats.  Before, the
 * mean was 123.40000000000001, the sd 1.7e-14 from that rounding, and
 * Welch said "better" at p 2e-46. */
START_TEST(t_equal_repeats)
{
	static const double a[] = { 123.4, 123.4, 123.4 }, b[] = { 123.405, 123.405, 123.405 };
	struct sample_stats sa, sb;
	struct welch w;

	stats_summary(a, 3, &sa);
	stats_summary(b, 3, &sb);
	ck_assert_msg(sa.mean == 123.4 && sa.sd == 0, "mean %.17g sd %g", sa.mean, sa.sd);
	ck_assert_msg(sb.mean == 123.405 && sb.sd == 0, "mean %.17g sd %g", sb.mean, sb.sd);
	stats_welch(&sa, &sb, &w);
	ck_assert_str_eq(stats_verdict_name(stats_verdict(&w)), "-");
	stats_welch(&sa, &sa, &w);
	ck_assert_str_eq(stats_verdict_name(stats_verdict(&w)), "within noise");
}
END_TEST

/* A point whose repeats all failed has no figure in results show: "0 of 2
 * repeats ok" and no min or max.  Before, "min 0.0 MiB/s, max 0.0 MiB/s",
 * figures it never measured. */
START_TEST(t_all_repeats_failed_show)
{
	json_object *a = mk_doc("A", 1);
	char *text;

	add_phase(a, mk_phase("seq-write", 1, 1, 1 << 30, 1 << 20, "failed"));
	add_phase(a, mk_phase("seq-write", 1, 2, 1 << 30, 1 << 20, "failed"));
	text = show_text(a);
	ck_assert_msg(strstr(text, "0 of 2 repeats ok") != NULL && strstr(text, "min") == NULL &&
	    strstr(text, "0.0 MiB/s") == NULL, "%s", text);
	free(text);
	json_object_put(a);
}
END_TEST

/* Run id with rand-read at 4 threads, one repeat per status in st[0..n). */
static json_object *
rr_statuses(const char *id, int64_t t, const char *const *st, int n)
{
	json_object *d = mk_doc(id, t);

	for (int i = 0; i < n; i++)
		add_phase(d, mk_phase("rand-read", 4, i + 1, 4096.0 * (1200 + 10 * i), 4096, st[i]));
	return d;
}

/* The output of knobctl results compare with options opt ("", "--csv",
 * "--json") of runs ids ("A B"), which must exit rc; caller frees. */
static char *
compare_out(const char *opt, const char *ids, int rc)
{
	char args[200], *out;

	snprintf(args, sizeof(args), "results compare %s %s", opt, ids);
	ck_assert_int_eq(knobctl_db(&out, args), rc);
	return out;
}

/* The --json compare of runs ids (exit 0); caller puts. */
static json_object *
compare_json(const char *ids)
{
	char *out = compare_out("--json", ids, 0);
	json_object *doc = json_tokener_parse(out);

	ck_assert_msg(doc != NULL, "%s", out);
	free(out);
	return doc;
}

/* B's repeat 2 of 3 failed: its figure and Welch's verdict are from the
 * other two, and compare says so under the table ("B has a figure from 2
 * of its 3 repeats"), in --json (b_repeats 3 beside b_n 2) and in --csv
 * (a_repeats, b_repeats at the end).  Before, "better" stood with nothing
 * saying that a third of B's repeats had failed; results show said it. */
START_TEST(t_compare_failed_repeat)
{
	static const char *const ok3[] = { "ok", "ok", "ok" }, *const one[] = { "ok", "failed",
	    "ok" };
	const char *ids = "20260107-000000-aaaa 20260107-000000-bbbb";
	sqlite3 *db = open_db();
	json_object *doc, *r;
	char *out;

	json_object_put(stored(db, rr_run("20260107-000000-aaaa", 1, "ok")));
	json_object_put(stored(db, rr_statuses("20260107-000000-bbbb", 2, one, 3)));
	json_object_put(stored(db, rr_statuses("20260107-000000-cccc", 3, ok3, 3)));
	sqlite3_close(db);
	out = compare_out("", ids, 0);
	ck_assert_msg(strstr(out, "better") && strstr(out, "note: rand-read 4 threads 1 nodes: B "
	    "has a figure from 2 of its 3 repeats"), "%s", out);
	ck_assert_msg(strstr(out, "A has a figure") == NULL, "%s", out);
	free(out);
	doc = compare_json(ids);
	r = json_object_array_get_idx(cu_get(doc, "points"), 0);
	ck_assert_int_eq(cu_int(r, "a_n"), 3);
	ck_assert_int_eq(cu_int(r, "a_repeats"), 3);
	ck_assert_int_eq(cu_int(r, "b_n"), 2);
	ck_assert_int_eq(cu_int(r, "b_repeats"), 3);
	json_object_put(doc);
	out = compare_out("--csv", ids, 0);
	ck_assert_msg(strstr(out, ",p_adj,a_repeats,b_repeats\n") && strstr(out, ",3,3\n"), "%s",
	    out);
	free(out);
	/* every repeat ran: no note */
	out = compare_out("", "20260107-000000-aaaa 20260107-000000-cccc", 0);
	ck_assert_msg(strstr(out, "note:") == NULL, "%s", out);
	free(out);
}
END_TEST

/* Run id of 3 rand-read repeats on 2 nodes that ran io_uring at depth 4;
 * those with fail[i] set had no result from any node (prepare failed). */
static json_object *
uring_run(const char *id, int64_t t, const int *fail)
{
	static const char *const uring[] = { "io_uring", "io_uring" };
	static const uint32_t d4[] = { 4, 4 };
	json_object *d = mk_doc(id, t);

	for (int i = 0; i < 3; i++)
		add_phase(d, phase_ran_at(fail[i] ? NULL : uring, d4, 2));
	return d;
}

/* A repeat that no node sent a result for (its prepare failed) records the
 * engine asked for ("auto") and the request's depth (16), not what the
 * others ran (io_uring, 4): it is still a repeat of their point.  B with
 * repeat 2 so failed compares with A as one point, 2 of 3 repeats with a
 * figure, nothing only in B; B with every repeat so failed is a point
 * without figures, as the README says: '-', exit 1.  Before, the failed
 * repeat was a point of its own ("only in B" under a row of the same
 * label), and a B whose repeats all failed was refused as unlike
 * ("params.iodepth 4 vs 16 ... --force", exit 2). */
START_TEST(t_compare_unreported_repeat)
{
	static const int none[] = { 0, 0, 0 }, second[] = { 0, 1, 0 }, all[] = { 1, 1, 1 };
	sqlite3 *db = open_db();
	json_object *a = stored(db, uring_run("20260108-000000-aaaa", 1, none));
	json_object *b = stored(db, uring_run("20260108-000000-bbbb", 2, second));
	json_object *c = stored(db, uring_run("20260108-000000-cccc", 3, all)), *cmp, *r;
	char err[512] = "";

	sqlite3_close(db);
	ck_assert_str_eq(cu_str(cu_get(json_object_array_get_idx(cu_get(b, "phases"), 1),
	    "params"), "ioengine"), "auto");
	cmp = results_compare_doc(a, b, 0, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	ck_assert_int_eq(json_object_array_length(cu_get(cmp, "points")), 1);
	ck_assert_int_eq(json_object_array_length(cu_get(cmp, "only_in_b")), 0);
	r = json_object_array_get_idx(cu_get(cmp, "points"), 0);
	ck_assert_int_eq(cu_int(r, "b_n"), 2);
	ck_assert_int_eq(cu_int(r, "b_repeats"), 3);
	json_object_put(cmp);
	cmp = results_compare_doc(a, c, 0, err, sizeof(err));
	ck_assert_msg(cmp != NULL, "%s", err);
	ck_assert_int_eq(json_object_array_length(cu_get(cmp, "points")), 1);
	ck_assert_int_eq(cu_int(json_object_array_get_idx(cu_get(cmp, "points"), 0), "b_n"), 0);
	json_object_put(cmp);
	free(compare_out("", "20260108-000000-aaaa 20260108-000000-cccc", 1));
	json_object_put(a);
	json_object_put(b);
	json_object_put(c);
}
END_TEST

/* A side with one figure has no spread: its a_sd is null in --json and
 * empty in --csv, as the table prints its mean alone (no '± 0.0'); the
 * side with three keeps its sd.  Before, a_sd was 0.0, a measured zero
 * spread to anything that computes an interval from it. */
START_TEST(t_compare_one_figure_sd)
{
	static const char *const one[] = { "ok" }, *const ok3[] = { "ok", "ok", "ok" };
	const char *ids = "20260109-000000-aaaa 20260109-000000-bbbb";
	sqlite3 *db = open_db();
	json_object *doc, *r, *v;
	char *out;

	json_object_put(stored(db, rr_statuses("20260109-000000-aaaa", 1, one, 1)));
	json_object_put(stored(db, rr_statuses("20260109-000000-bbbb", 2, ok3, 3)));
	sqlite3_close(db);
	doc = compare_json(ids);
	r = json_object_array_get_idx(cu_get(doc, "points"), 0);
	ck_assert_int_eq(cu_int(r, "a_n"), 1);
	ck_assert_double_eq_tol(cu_num(r, "a_mean"), 1200, 1e-6);
	ck_assert_msg(json_object_object_get_ex(r, "a_sd", &v) && v == NULL, "a_sd is %s",
	    json_object_get_string(v));
	ck_assert_double_eq_tol(cu_num(r, "b_sd"), 10, 1e-6);
	json_object_put(doc);
	out = compare_out("--csv", ids, 0);
	ck_assert_msg(strstr(out, "\nrand-read,4,IOPS,1,1200.0,,1200.0,1200.0,3,1210.0,10.0,"),
	    "%s", out);
	free(out);
	out = compare_out("", ids, 0);
	ck_assert_msg(strstr(out, " 1200.0 ") && strstr(out, "1210.0 ± 10.0"), "%s", out);
	free(out);
}
END_TEST

/* The runs' statuses: a run that did not end ok (failed, still running)
 * is named in the compare's head ("status failed") and under a warning
 * line, in --json as a_status/b_status and on stderr with --csv; a compare
 * of two ok runs says nothing of it.  The exit status stays 0: the compare
 * was made.  Before, +31.9 % "better" against a failed run that had one
 * figure of three repeats stood with no word of its status. */
START_TEST(t_compare_run_status)
{
	static const char *const fail2[] = { "ok", "failed", "failed" };
	static const char *const ok3[] = { "ok", "ok", "ok" };
	const char *bin = getenv("KNOB_BIN");
	sqlite3 *db = open_db();
	json_object *d = rr_statuses("20260110-000000-bbbb", 2, fail2, 3), *doc;
	char *out;

	json_object_put(stored(db, rr_run("20260110-000000-aaaa", 1, "ok")));
	json_object_object_add(d, "status", json_object_new_string("failed"));
	json_object_put(stored(db, d));
	json_object_put(stored(db, rr_statuses("20260110-000000-dddd", 4, ok3, 3)));
	/* a run this process is writing: still running to knobctl */
	d = rr_statuses("20260110-000000-cccc", 3, ok3, 3);
	json_object_object_add(d, "status", json_object_new_string("running"));
	ck_assert_int_eq(results_run_begin(db, d), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(results_phase_add(db, "20260110-000000-cccc", i + 1,
		    json_object_array_get_idx(cu_get(d, "phases"), i)), 0);
	json_object_put(d);
	sqlite3_close(db);
	out = compare_out("", "20260110-000000-aaaa 20260110-000000-bbbb", 0);
	fprintf(stderr, "%s", out);	/* for the log */
	ck_assert_msg(strstr(out, "+31.9%") && strstr(out, "dir /mnt  status failed\n") &&
	    strstr(out, "\nwarning: B (20260110-000000-bbbb) ended failed, not ok: "), "%s", out);
	ck_assert_msg(strstr(out, "warning: A") == NULL && strstr(out, "dir /mnt\nB = "), "%s",
	    out);
	free(out);
	doc = compare_json("20260110-000000-aaaa 20260110-000000-bbbb");
	ck_assert_str_eq(cu_str(doc, "a_status"), "ok");
	ck_assert_str_eq(cu_str(doc, "b_status"), "failed");
	json_object_put(doc);
	ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER KNOB_DB=%s %s/knobctl results compare "
	    "--csv 20260110-000000-aaaa 20260110-000000-bbbb 2>&1 >/dev/null", dbpath,
	    bin ? bin : "build"), 0);
	ck_assert_msg(strstr(out, "knobctl results compare: warning: B (20260110-000000-bbbb) "
	    "ended failed"), "%s", out);
	free(out);
	out = compare_out("", "20260110-000000-aaaa 20260110-000000-cccc", 0);
	ck_assert_msg(strstr(out, "status running\n") && strstr(out, "warning: B "
	    "(20260110-000000-cccc) is still running: only the phases it has stored so far"),
	    "%s", out);
	free(out);
	out = compare_out("", "20260110-000000-aaaa 20260110-000000-dddd", 0);
	ck_assert_msg(strstr(out, "warning") == NULL && strstr(out, "status") == NULL, "%s", out);
	free(out);
}
END_TEST

/* The last leaf page of table name in the database at dbpath made garbage
 * (not a b-tree page): SQLite reads the pages before it, then says the
 * file is malformed. */
static void
spoil_last_leaf(const char *name)
{
	sqlite3 *db = open_db();
	sqlite3_stmt *st;
	int64_t page = 0, size = 0;
	char junk[512];
	FILE *f;

	ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT max(pageno), (SELECT page_size FROM "
	    "pragma_page_size) FROM dbstat WHERE name = ? AND pagetype = 'leaf'", -1, &st, NULL),
	    SQLITE_OK);
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	page = sqlite3_column_int64(st, 0);
	size = sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);	/* the last: the WAL folded in */
	ck_assert_int_gt(page, 2);
	memset(junk, 0xa5, sizeof(junk));
	ck_assert_ptr_nonnull(f = fopen(dbpath, "r+b"));
	ck_assert_int_eq(fseek(f, (long)((page - 1) * size), SEEK_SET), 0);
	ck_assert_int_eq(fwrite(junk, 1, sizeof(junk), f), sizeof(junk));
	ck_assert_int_eq(fclose(f), 0);
}

/* A malformed database (a page of the runs or of the phases table is not
 * a b-tree page): list, compare, report and show exit 2 naming the file
 * and SQLite's reason.  Before, the read stopped at the bad page as if
 * the table ended there and they exited 0: list left the later runs out,
 * latest was an older run (compare latest~1 latest compared the wrong
 * pair), and show printed a run with some of its phases. */
START_TEST(t_db_malformed)
{
	char label[700], copy[PATH_MAX + 8], *out = NULL;
	sqlite3 *db = open_db();
	json_object *d;

	memset(label, 'x', sizeof(label) - 1);
	label[sizeof(label) - 1] = '\0';
	for (int i = 0; i < 16; i++) {	/* 16 runs of 700 bytes and more: 3 pages or more */
		char id[32];

		snprintf(id, sizeof(id), "20260113-0000%02d-aaaa", i);
		d = rr_run(id, i + 1, "ok");
		json_object_object_add(d, "label", json_object_new_string(label));
		ck_assert_int_eq(results_store(db, d), 0);
		json_object_put(d);
	}
	d = mk_doc("20260113-000100-bbbb", 100);	/* 60 phases and nodes: pages of them */
	json_object_object_add(d, "node_info", json_object_new_array());
	for (int i = 0; i < 60; i++) {
		json_object *n = json_object_new_object(), *fa = json_object_new_object();
		char name[16];

		add_phase(d, mk_phase("seq-write", 1 << (i % 6), i / 6 + 1, 1e9 + i, 1 << 20, "ok"));
		snprintf(name, sizeof(name), "node%02d", i);
		json_object_object_add(n, "node", json_object_new_string(name));
		json_object_object_add(fa, "kernel", json_object_new_string(label));
		json_object_object_add(n, "facts", fa);
		json_object_array_add(cu_get(d, "node_info"), n);
	}
	ck_assert_int_eq(results_store(db, d), 0);
	json_object_put(d);
	sqlite3_close(db);
	snprintf(copy, sizeof(copy), "%s.good", dbpath);
	ck_assert_int_eq(cu_sh_out(&out, "cp %s %s", dbpath, copy), 0);
	free(out);

	spoil_last_leaf("runs");
	ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER KNOB_DB=%s %s/knobctl results list "
	    "2>&1 >/dev/null", dbpath, getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build"), 2);
	ck_assert_msg(strstr(out, dbpath) && strstr(out, "malformed"), "%s", out);
	free(out);
	ck_assert_int_eq(knobctl_db(&out, "results compare latest~1 latest"), 2);
	free(out);
	ck_assert_int_eq(knobctl_db(&out, "report latest -o /dev/null"), 2);
	free(out);

	for (int k = 0; k < 2; k++) {	/* the list reads the phases too; not the nodes */
		ck_assert_int_eq(cu_sh_out(&out, "cp %s %s", copy, dbpath), 0);
		free(out);
		spoil_last_leaf(k ? "run_nodes" : "phases");
		ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER KNOB_DB=%s %s/knobctl results "
		    "show 20260113-000100-bbbb 2>&1 >/dev/null", dbpath, getenv("KNOB_BIN") ?
		    getenv("KNOB_BIN") : "build"), 2);
		ck_assert_msg(strstr(out, dbpath) && strstr(out, "malformed") && (k == 0 ||
		    strstr(out, "run 20260113-000100-bbbb cannot be read: results database ")),
		    "%s", out);
		free(out);
	}
}
END_TEST

/* --csv quotes a field with a carriage return in it (RFC 4180), as one
 * with a comma, a quote or a line feed: a label "a<CR>b" was written bare,
 * and a CSV reader ended the row there (Python's csv module split it in
 * two rows of 4 and 8 fields). */
START_TEST(t_csv_cr)
{
	sqlite3 *db = open_db();
	json_object *d = rr_run("20260114-000000-aaaa", 1, "ok");
	char *out;

	json_object_object_add(d, "label", json_object_new_string("a\rb"));
	ck_assert_int_eq(results_store(db, d), 0);
	json_object_put(d);
	sqlite3_close(db);
	ck_assert_int_eq(knobctl_db(&out, "results list --csv"), 0);
	ck_assert_msg(strstr(out, ",\"a\rb\",") != NULL, "%s", out);
	free(out);
}
END_TEST

/* The fields of the CSV line of out that starts with start (none quoted:
 * split at commas), in f[0..n); 0 when no line starts so. */
static int
csv_line_fields(const char *out, const char *start, char f[][64], size_t n)
{
	const char *l = strstr(out, start);
	size_t k = 0;

	if (l == NULL || (l != out && l[-1] != '\n'))
		return 0;
	while (k < n && *l != '\n' && *l != '\0') {
		size_t w = strcspn(l, ",\n");

		snprintf(f[k++], 64, "%.*s", (int)w, l);
		l += w + (l[w] == ',');
	}
	return (int)k;
}

/* A phase of seq-write at 4 threads, rate MiB/s, in directory d. */
static json_object *
sw_phase(int64_t repeat, double mib, const char *d)
{
	json_object *ph = mk_phase("seq-write", 4, repeat, mib * 1048576.0, 1 << 20, "ok");

	json_object_object_add(cu_get(ph, "params"), "dir", json_object_new_string(d));
	return ph;
}

/* --csv puts a ' in front of a text field that starts with =, +, -, @, a
 * tab or a carriage return, inside quotes, so that a spreadsheet opening
 * the file shows the text and does not run it (OWASP "CSV injection"): a
 * label "=HYPERLINK(...)" was written as is, and LibreOffice and Excel
 * made it a formula.  A number column is never touched, whatever its
 * value: B's change of -49.5 % stays a number. */
START_TEST(t_csv_formula)
{
	sqlite3 *db = open_db();
	json_object *a = mk_doc("20260116-000000-aaaa", 1), *b = mk_doc("20260116-000000-bbbb", 2);
	char *out, f[26][64];

	json_object_object_add(a, "label", json_object_new_string("=HYPERLINK(\"http://x/\",\"y\")"));
	json_object_object_add(a, "command", json_object_new_string("-2+3"));
	json_object_object_add(a, "play", json_object_new_string("@SUM(1)"));
	json_object_object_add(b, "label", json_object_new_string("\tx"));
	json_object_object_add(b, "command", json_object_new_string("+cmd"));
	json_object_object_add(b, "play", json_object_new_string("\r=1"));
	for (int i = 0; i < 3; i++) {
		add_phase(a, sw_phase(i + 1, 100 + i, "=1+1"));
		add_phase(b, sw_phase(i + 1, 50 + i, "=1+1"));
	}
	ck_assert_int_eq(results_store(db, a), 0);
	ck_assert_int_eq(results_store(db, b), 0);
	json_object_put(a);
	json_object_put(b);
	sqlite3_close(db);
	ck_assert_int_eq(knobctl_db(&out, "results list --csv"), 0);
	ck_assert_msg(strstr(out, ",\"'=HYPERLINK(\"\"http://x/\"\",\"\"y\"\")\",") &&
	    strstr(out, ",\"'-2+3\",\"'@SUM(1)\"\n") && strstr(out, ",\"'\tx\",") &&
	    strstr(out, ",\"'+cmd\",\"'\r=1\"\n"), "%s", out);
	free(out);
	ck_assert_int_eq(knobctl_db(&out, "results show --csv 20260116-000000-aaaa"), 0);
	ck_assert_msg(strstr(out, ",\"'=1+1\",") != NULL, "%s", out);
	free(out);
	ck_assert_int_eq(knobctl_db(&out, "results compare --csv 20260116-000000-aaaa "
	    "20260116-000000-bbbb"), 0);
	/* kind, threads, unit, a_n, a_mean .. b_max, change_pct (the 14th) */
	ck_assert_msg(csv_line_fields(out, "seq-write,4,B/s,", f, nitems(f)) >= 14 &&
	    strncmp(f[13], "-49.5", 5) == 0, "change_pct not a bare -49.5: %s", out);
	free(out);
}
END_TEST

/* The offset of the first byte of s that a terminal would act on: a C0
 * control but the line feed, DEL, a C1 control in UTF-8 (0xc2 0x80..0x9f)
 * or a byte of 0x80..0x9f alone (C1 in an 8-bit locale); -1 when none. */
static long
raw_control(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p < 0x20 && *p != '\n') || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 &&
		    p[1] <= 0x9f) || (*p >= 0x80 && *p <= 0x9f && (p == (const unsigned char *)s ||
		    p[-1] < 0xc0)))
			return (long)(p - (const unsigned char *)s);
	return -1;
}

/* "knobctl ARGS" on this test's database, its text output (stdout and
 * stderr) without a control character a terminal would act on (cmd
 * names it in the failure); malloc'd. */
static char *
text_out(const char *args)
{
	char *out;
	long at;

	ck_assert_int_eq(cu_sh_out(&out, "env -u KNOB_CLUSTER KNOB_DB=%s %s/knobctl %s 2>&1", dbpath,
	    getenv("KNOB_BIN") ? getenv("KNOB_BIN") : "build", args), 0);
	at = raw_control(out);
	ck_assert_msg(at < 0, "knobctl %s: raw 0x%02x at %ld: %s", args,
	    at < 0 ? 0 : (unsigned char)out[at], at, out);
	return out;
}

/* A run's strings (its label, command, node set, a node's kernel, an
 * error, the directory) are printed by results list, show and compare
 * with their control characters escaped (common/visible.h): a label
 * "ESC]0;owned BEL ESC[2J" retitled and cleared the terminal, a kernel
 * release with ESC[1A went back over the line above, a label with a line
 * feed forged a line of the table, one with a right-to-left override
 * (U+202E) reversed the rest of its line, --json too. */
START_TEST(t_text_controls)
{
	sqlite3 *db = open_db();
	json_object *a = mk_doc("20260117-000000-aaaa", 1), *b = mk_doc("20260117-000000-bbbb", 2);
	json_object *ni = json_object_new_array(), *n = json_object_new_object();
	json_object *facts = json_object_new_object(), *errs = json_object_new_array(), *ph;
	char *out;

	json_object_object_add(a, "label", json_object_new_string("\x1b]0;owned\x07\x1b[2J"));
	json_object_object_add(a, "command", json_object_new_string("bench \xc2\x9b" "31m"));
	json_object_object_add(b, "label", json_object_new_string("ok\nfake line \xe2\x80\xae" "evil"));
	json_object_object_add(a, "nodeset", json_object_new_string("n\x9b" "1"));
	json_object_object_add(b, "nodeset", json_object_new_string("n\x9b" "1"));
	json_object_object_add(facts, "kernel", json_object_new_string("6.1\x1b[1A"));
	json_object_object_add(n, "node", json_object_new_string("node01"));
	json_object_object_add(n, "facts", facts);
	json_object_array_add(ni, n);
	json_object_object_add(a, "node_info", ni);
	for (int i = 0; i < 3; i++) {
		add_phase(a, ph = sw_phase(i + 1, 100 + i, "/mnt/\x1b[8m"));
		add_phase(b, sw_phase(i + 1, 50 + i, "/mnt/\x1b[8m"));
	}
	json_object_array_add(errs, json_object_new_string("node01: \x1b[2Kdisk full"));
	json_object_object_add(ph, "errors", errs);
	ck_assert_int_eq(results_store(db, a), 0);
	ck_assert_int_eq(results_store(db, b), 0);
	json_object_put(a);
	json_object_put(b);
	sqlite3_close(db);
	out = text_out("results list");
	ck_assert_msg(strstr(out, "\\x1b]0;owned\\x07\\x1b[2J") && strstr(out, "ok\\x0afake line") &&
	    strstr(out, "n\\x9b1") && strstr(out, "line \\u202eevil"), "%s", out);
	free(out);
	/* --json: the same label to a parser, its RLO escaped as JSON's \u202e */
	out = text_out("results list --json");
	ck_assert_msg(strstr(out, "line \\u202eevil") && !strstr(out, "\xe2\x80\xae"), "%s", out);
	free(out);
	out = text_out("results show 20260117-000000-aaaa");
	ck_assert_msg(strstr(out, "bench \\u009b31m") && strstr(out, "kernel 6.1\\x1b[1A") &&
	    strstr(out, "error: node01: \\x1b[2Kdisk full"), "%s", out);
	free(out);
	out = text_out("results compare 20260117-000000-aaaa 20260117-000000-bbbb");
	ck_assert_msg(strstr(out, "\\x1b]0;owned") && strstr(out, "ok\\x0afake line") &&
	    strstr(out, "nodes n\\x9b1") && strstr(out, "dir /mnt/\\x1b[8m"), "%s", out);
	free(out);
}
END_TEST

/* The bench table and the compare table, as knobctl bench and a play's
 * steps print them (not read back from the database), escape a run's
 * strings too: an agent's error "ESC[2K..." erased the line it was on. */
START_TEST(t_print_controls)
{
	json_object *a = mk_doc("A", 1), *b = mk_doc("B", 2), *errs = json_object_new_array(), *cmp;
	char *text = NULL, err[512];
	size_t len;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	json_object_object_add(a, "label", json_object_new_string("\x1b[2Jwiped"));
	for (int i = 0; i < 3; i++) {
		add_phase(a, sw_phase(i + 1, 100 + i, "/mnt"));
		add_phase(b, sw_phase(i + 1, 50 + i, "/mnt"));
	}
	json_object_array_add(errs, json_object_new_string("node01: \x1b[2Kdisk full\r"));
	json_object_object_add(json_object_array_get_idx(cu_get(a, "phases"), 0), "errors", errs);
	bench_print_table(f, a, 0);
	ck_assert_ptr_nonnull(cmp = results_compare_doc(a, b, 0, err, sizeof(err)));
	results_print_compare(f, cmp, 0);
	fclose(f);
	ck_assert_msg(raw_control(text) < 0 && strstr(text, "error: node01: \\x1b[2Kdisk full\\x0d")
	    && strstr(text, "A = A  \\x1b[2Jwiped"), "%s", text);
	free(text);
	json_object_put(cmp);
	json_object_put(a);
	json_object_put(b);
}
END_TEST

/* An error bar whose mean - sd is below 0 (repeats of 10, 500 and 20
 * MiB/s: mean 177, sd 280) ends at the x axis, as throughput does: it was
 * drawn down past the axis, over the thread counts' labels. */
START_TEST(t_report_errbar_floor)
{
	json_object *a = mk_doc("A", 1);
	char *page, *at;
	int bars = 0, x0, y0, axis;

	for (int i = 0; i < 3; i++)
		add_phase(a, mk_phase("seq-write", 1, i + 1, (i == 1 ? 500 : 10 + 5 * i) * 1048576.0,
		    1 << 20, "ok"));
	page = report_text(&a, 1);
	/* the plot's bottom: the axis path "M80 30 V324 H540" */
	ck_assert_ptr_nonnull(at = strstr(page, "class=\"axis\" d=\""));
	ck_assert_int_eq(sscanf(at, "class=\"axis\" d=\"M%d %d V%d", &x0, &y0, &axis), 3);
	for (at = page; (at = strstr(at, "class=\"errbar\" d=\"")) != NULL; at++) {
		double x, top, bottom;

		ck_assert_int_eq(sscanf(at, "class=\"errbar\" d=\"M%lf %lf V%lf", &x, &top, &bottom),
		    3);
		ck_assert_msg(bottom <= axis, "error bar to y %.1f, below the axis at %d", bottom,
		    axis);
		bars++;
	}
	ck_assert_int_eq(bars, 1);
	free(page);
	json_object_put(a);
}
END_TEST

/* A run that lost a node in its first phase (1 thread, ok on 4 nodes,
 * then 8 threads degraded on the 3 left): the peak is the 1-thread figure,
 * and the text table and the report's HTML say under it that 8 threads
 * are left out and why.  A workload all of whose phases are degraded has
 * no row, and the line still names its thread counts.  Before, the peak
 * of the points left read as the run's, without a word. */
START_TEST(t_peak_left_out)
{
	json_object *a = mk_doc("A", 1);
	char *text = NULL, *page;
	size_t len;
	FILE *f;

	add_phase(a, on_nodes(mk_phase("seq-write", 1, 1, 6.2 * 1048576, 1 << 20, "ok"), 4));
	add_phase(a, on_nodes(mk_phase("seq-write", 8, 1, 49.9 * 1048576, 1 << 20, "degraded"), 3));
	add_phase(a, on_nodes(mk_phase("md-create", 8, 1, 5000, 0, "degraded"), 3));
	ck_assert_ptr_nonnull(f = open_memstream(&text, &len));
	rundoc_print_peaks(f, a, 0);
	fclose(f);
	fprintf(stderr, "%s", text);
	ck_assert_msg(strstr(text, "\nnote: seq-write bs 1m: 8 threads (degraded) not in the peak and "
	    "sustained: a degraded or failed phase has no figure a mean takes\n"), "%s", text);
	ck_assert_msg(strstr(text, "\nnote: md-create: 8 threads (degraded) not in the peak"), "%s",
	    text);
	ck_assert_msg(!strstr(text, "1 thread ("), "%s", text);
	free(text);
	page = report_text(&a, 1);
	ck_assert_msg(strstr(page, "<p class=\"warning\">A, seq-write") &&
	    strstr(page, ": 8 threads (degraded) not in the peak and sustained: a degraded or "
	    "failed phase has no figure a mean takes.</p>"), "the report says nothing of 8 threads");
	free(page);
	json_object_put(a);
}
END_TEST

/* A change that rounds to zero prints without a sign: compare's change
 * column (text and the report's HTML) for a point 0.01 % slower and one
 * unchanged, and the bench table's clock line for an offset change of
 * -0.1 us.  Before, "-0.0%", "+0.0%" and "largest change -0.000 ms". */
START_TEST(t_signed_zero)
{
	json_object *a = mk_doc("A", 1), *b = mk_doc("B", 2), *ck, *cmp, *docs[2];
	char *text = NULL, *page, err[256];
	size_t len;
	FILE *f;

	for (int i = 0; i < 3; i++) {
		add_phase(a, mk_phase("seq-write", 4, i + 1, 1e9 + i * 1e7, 1 << 20, "ok"));
		add_phase(b, mk_phase("seq-write", 4, i + 1, 0.9999e9 + i * 1e7, 1 << 20, "ok"));
		add_phase(a, mk_phase("seq-read", 4, i + 1, 5e8 + i * 1e7, 1 << 20, "ok"));
		add_phase(b, mk_phase("seq-read", 4, i + 1, 5e8 + i * 1e7, 1 << 20, "ok"));
	}
	ck_assert_msg((cmp = results_compare_doc(a, b, 0, err, sizeof(err))) != NULL, "%s", err);
	ck_assert_ptr_nonnull(f = open_memstream(&text, &len));
	results_print_compare(f, cmp, 0);
	fclose(f);
	json_object_put(cmp);
	fprintf(stderr, "%s", text);
	ck_assert_msg(strstr(text, " 0.0% ") && !strstr(text, "-0.0%") && !strstr(text, "+0.0%"),
	    "%s", text);
	free(text);
	docs[0] = a;
	docs[1] = b;
	page = report_text(docs, 2);
	ck_assert_msg(strstr(page, "<td>0.0%</td>") && !strstr(page, "-0.0%") &&
	    !strstr(page, "+0.0%"), "the report's change column signs a zero");
	free(page);
	ck = json_object_new_object();
	json_object_object_add(ck, "syncs", json_object_new_int(4));
	json_object_object_add(ck, "offset_change_max_s", json_object_new_double(-1e-7));
	json_object_object_add(ck, "node", json_object_new_string("node01"));
	json_object_object_add(ck, "before_phase", json_object_new_string("A-p2"));
	json_object_object_add(a, "clock", ck);
	ck_assert_ptr_nonnull(f = open_memstream(&text, &len));
	bench_print_table(f, a, 0);
	fclose(f);
	ck_assert_msg(strstr(text, "largest change 0.000 ms (node01"), "%s", text);
	free(text);
	json_object_put(a);
	json_object_put(b);
}
END_TEST

/* knobctl --json report prints one document, the page's path and the runs
 * in the order given, as --json does for every command; it printed
 * nothing, so `knobctl --json report ... | jq` had no input. */
START_TEST(t_report_json)
{
	sqlite3 *db = open_db();
	char args[PATH_MAX + 128], html[PATH_MAX + 16], *out;
	json_object *doc;

	snprintf(html, sizeof(html), "%s/r.html", dir);
	json_object_put(stored(db, rr_run("20260115-000000-aaaa", 1, "ok")));
	json_object_put(stored(db, rr_run("20260115-000000-bbbb", 2, "ok")));
	sqlite3_close(db);
	snprintf(args, sizeof(args), "--json report latest latest~1 -o %s", html);
	ck_assert_int_eq(knobctl_db(&out, args), 0);
	ck_assert_msg((doc = json_tokener_parse(out)) != NULL, "not JSON: '%s'", out);
	ck_assert_str_eq(cu_str(doc, "report"), html);
	ck_assert_str_eq(json_object_to_json_string_ext(cu_get(doc, "runs"), JSON_C_TO_STRING_PLAIN),
	    "[\"20260115-000000-bbbb\",\"20260115-000000-aaaa\"]");
	json_object_put(doc);
	free(out);
}
END_TEST

/* report -o through a device or a FIFO: -o /dev/null or /dev/stdout must
 * not replace the node with a regular file.  Before, the report's atomic
 * rename made /dev/null a 0644 file holding the report (and a FIFO's
 * reader saw nothing).  A char device (1:3, null) and a FIFO of the
 * test's own directory, with a reader that gives up after 20 s. */
START_TEST(t_report_to_device)
{
	sqlite3 *db = open_db();
	char dev[PATH_MAX], fifo[PATH_MAX], args[PATH_MAX + 64], *out;
	const char *bin = getenv("KNOB_BIN");
	struct stat st;

	json_object_put(stored(db, rr_run("20260116-000000-aaaa", 1, "ok")));
	sqlite3_close(db);
	snprintf(dev, sizeof(dev), "%s/null", dir);
	ck_assert_int_eq(mknod(dev, S_IFCHR | 0666, makedev(1, 3)), 0);
	snprintf(args, sizeof(args), "report latest -o %s", dev);
	ck_assert_int_eq(knobctl_db(&out, args), 0);
	free(out);
	ck_assert_int_eq(stat(dev, &st), 0);
	ck_assert_msg(S_ISCHR(st.st_mode), "%s is no device now (mode %o)", dev,
	    (unsigned)st.st_mode);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(cu_sh_out(&out, "timeout 20 cat %s > %s.got & env -u KNOB_CLUSTER "
	    "KNOB_DB=%s %s/knobctl report latest -o %s 2>&1; r=$?; wait; exit $r", fifo, fifo,
	    dbpath, bin ? bin : "build", fifo), 0);
	free(out);
	ck_assert_int_eq(stat(fifo, &st), 0);
	ck_assert(S_ISFIFO(st.st_mode));
	snprintf(args, sizeof(args), "%s.got", fifo);
	ck_assert_int_eq(read_file_bounded(args, 1 << 22, &out, NULL), 0);
	ck_assert_msg(strstr(out, "</html>") != NULL, "the FIFO's reader got: %.200s", out);
	free(out);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("results");
	TCase *tc = tcase_create("results");

	tcase_add_unchecked_fixture(tc, cu_base_setup, cu_base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, t_migrate_v1);
	tcase_add_test(tc, t_migrate_v3);
	tcase_add_test(tc, t_migrate_v7_defaults);
	tcase_add_test(tc, t_migrate_dump);
	tcase_add_test(tc, t_writer_gone);
	tcase_add_test(tc, t_heartbeat);
	tcase_add_test(tc, t_extension_schema);
	tcase_add_test(tc, t_order_and_resolve);
	tcase_add_test(tc, t_incomplete);
	tcase_add_test(tc, t_student_t);
	tcase_add_test(tc, t_welch);
	tcase_add_test(tc, t_compare);
	tcase_add_test(tc, t_compare_nodes);
	tcase_add_test(tc, t_compare_order);
	tcase_add_test(tc, t_compare_options);
	tcase_add_test(tc, t_compare_no_figures);
	tcase_add_test(tc, t_compare_placement);
	tcase_add_test(tc, t_ioengine_ran);
	tcase_add_test(tc, t_holm);
	tcase_add_test(tc, t_compare_holm);
	tcase_add_test(tc, t_read_commands_no_create);
	tcase_add_test(tc, t_read_only_db);
	tcase_add_test(tc, t_report_whole_or_nothing);
	tcase_add_test(tc, t_failed_repeat);
	tcase_add_test(tc, t_repeats_latency);
	tcase_add_test(tc, t_peak_sustained);
	tcase_add_test(tc, t_io500);
	tcase_add_test(tc, t_units);
	tcase_add_test(tc, t_db_of_another_user);
	tcase_add_test(tc, t_db_unreadable);
	tcase_add_test(tc, t_one_good_repeat);
	tcase_add_test(tc, t_report_tick_labels);
	tcase_add_test(tc, t_report_many_runs);
	tcase_add_test(tc, t_report_pairs_comparable);
	tcase_add_test(tc, t_report_workload_titles);
	tcase_add_test(tc, t_report_escapes);
	tcase_add_test(tc, t_p_below_bound);
	tcase_add_test(tc, t_iodepth_ran);
	tcase_add_test(tc, t_migrate_v8_md_files);
	tcase_add_test(tc, t_writer_hidden_pid);
	tcase_add_test(tc, t_nonfinite_figures);
	tcase_add_test(tc, t_stats_nonfinite);
	tcase_add_test(tc, t_resolve_empty);
	tcase_add_test(tc, t_nonfinite_json);
	tcase_add_test(tc, t_equal_repeats);
	tcase_add_test(tc, t_all_repeats_failed_show);
	tcase_add_test(tc, t_compare_failed_repeat);
	tcase_add_test(tc, t_compare_unreported_repeat);
	tcase_add_test(tc, t_compare_one_figure_sd);
	tcase_add_test(tc, t_compare_run_status);
	tcase_add_test(tc, t_db_malformed);
	tcase_add_test(tc, t_csv_cr);
	tcase_add_test(tc, t_csv_formula);
	tcase_add_test(tc, t_text_controls);
	tcase_add_test(tc, t_print_controls);
	tcase_add_test(tc, t_report_errbar_floor);
	tcase_add_test(tc, t_report_json);
	tcase_add_test(tc, t_report_to_device);
	tcase_add_test(tc, t_signed_zero);
	tcase_add_test(tc, t_peak_left_out);
	suite_add_tcase(s, tc);
	return cu_run(s);
}
