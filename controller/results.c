/* Results store: an SQLite database on the head node with every run, every
 * phase and every node's result; `knobctl results list | show RUN |
 * compare A B`.  The database path comes from the inventory's <results
 * db=...>, else $KNOB_DB, else /var/lib/knob/results.db for root and
 * ~/.local/share/knob/results.db for others. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "bench_ctl.h"
#include "log.h"
#include "util.h"

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE IF NOT EXISTS runs ("
    " id TEXT PRIMARY KEY, started_at INTEGER, command TEXT, nodeset TEXT,"
    " status TEXT, doc TEXT);"
    "CREATE TABLE IF NOT EXISTS phases ("
    " run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, seq INTEGER NOT NULL,"
    " phase_id TEXT, kind TEXT, threads INTEGER, nodes INTEGER, bytes INTEGER,"
    " ops INTEGER, elapsed_s REAL, rate REAL, unit TEXT, first_done_rate REAL,"
    " p50_ns INTEGER, p99_ns INTEGER, p999_ns INTEGER, start_spread_s REAL,"
    " status TEXT, missing TEXT, errors TEXT, warnings TEXT, params TEXT,"
    " PRIMARY KEY (run_id, seq));"
    "CREATE TABLE IF NOT EXISTS node_results ("
    " run_id TEXT NOT NULL, seq INTEGER NOT NULL, node TEXT NOT NULL, status TEXT,"
    " threads INTEGER, bytes INTEGER, ops INTEGER, start_s REAL, end_s REAL, rate REAL,"
    " error TEXT, doc TEXT, PRIMARY KEY (run_id, seq, node));";

const char *
results_db_path(struct ctl *ctl, char *buf, size_t len)
{
	const char *env = getenv("KNOB_DB"), *home = getenv("HOME");

	if (ctl->inv && ctl->inv->db && ctl->inv->db[0])
		snprintf(buf, len, "%s", ctl->inv->db);
	else if (env && env[0])
		snprintf(buf, len, "%s", env);
	else if (geteuid() == 0 || home == NULL || home[0] == '\0')
		snprintf(buf, len, "/var/lib/knob/results.db");
	else
		snprintf(buf, len, "%s/.local/share/knob/results.db", home);
	return buf;
}

/* mkdir -p of path's parent directory. */
static void
mkparent(const char *path)
{
	char d[PATH_MAX], *p;

	snprintf(d, sizeof(d), "%s", path);
	if ((p = strrchr(d, '/')) == NULL || p == d)
		return;
	*p = '\0';
	for (p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(d, 0755);
		*p = '/';
	}
	mkdir(d, 0755);
}

sqlite3 *
results_open(struct ctl *ctl)
{
	char path[PATH_MAX], *err = NULL;
	sqlite3 *db = NULL;

	results_db_path(ctl, path, sizeof(path));
	mkparent(path);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		log_warnx("results database %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_exec(db, schema, NULL, NULL, &err) != SQLITE_OK) {
		log_warnx("results database %s: %s", path, err);
		sqlite3_free(err);
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

static const char *
js(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : "";
}

static double
jd(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_double(v) : 0;
}

static int64_t
ji(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

static const char *
jtext(json_object *o, const char *k)
{
	json_object *v;

	return json_object_object_get_ex(o, k, &v) ?
	    json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "";
}

int
results_store(sqlite3 *db, json_object *doc)
{
	sqlite3_stmt *run = NULL, *ph = NULL, *nd = NULL;
	json_object *phases, *p, *nodes, *n, *lat;
	const char *run_id = js(doc, "run_id");
	int rc = -1;
	size_t i, k;

	if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?)", -1, &run,
	    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO phases VALUES "
	    "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &ph, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO node_results VALUES "
	    "(?,?,?,?,?,?,?,?,?,?,?,?)", -1, &nd, NULL) != SQLITE_OK)
		goto out;
	sqlite3_bind_text(run, 1, run_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(run, 2, ji(doc, "started_at"));
	sqlite3_bind_text(run, 3, js(doc, "command"), -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(run, 4, js(doc, "nodeset"), -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(run, 5, js(doc, "status"), -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(run, 6, json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN), -1,
	    SQLITE_TRANSIENT);
	if (sqlite3_step(run) != SQLITE_DONE)
		goto out;
	if (!json_object_object_get_ex(doc, "phases", &phases))
		phases = NULL;
	for (i = 0; phases && i < json_object_array_length(phases); i++) {
		p = json_object_array_get_idx(phases, i);
		json_object_object_get_ex(p, "latency", &lat);
		sqlite3_reset(ph);
		sqlite3_bind_text(ph, 1, run_id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(ph, 2, (sqlite3_int64)i + 1);
		sqlite3_bind_text(ph, 3, js(p, "phase_id"), -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(ph, 4, js(p, "kind"), -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(ph, 5, ji(p, "threads"));
		sqlite3_bind_int64(ph, 6, ji(p, "nodes"));
		sqlite3_bind_int64(ph, 7, ji(p, "bytes"));
		sqlite3_bind_int64(ph, 8, ji(p, "ops"));
		sqlite3_bind_double(ph, 9, jd(p, "elapsed_s"));
		sqlite3_bind_double(ph, 10, jd(p, "rate"));
		sqlite3_bind_text(ph, 11, js(p, "unit"), -1, SQLITE_TRANSIENT);
		sqlite3_bind_double(ph, 12, jd(p, "first_done_rate"));
		sqlite3_bind_int64(ph, 13, ji(lat, "p50_ns"));
		sqlite3_bind_int64(ph, 14, ji(lat, "p99_ns"));
		sqlite3_bind_int64(ph, 15, ji(lat, "p999_ns"));
		sqlite3_bind_double(ph, 16, jd(p, "start_spread_s"));
		sqlite3_bind_text(ph, 17, js(p, "status"), -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(ph, 18, jtext(p, "missing"), -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(ph, 19, jtext(p, "errors"), -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(ph, 20, jtext(p, "warnings"), -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(ph, 21, jtext(p, "params"), -1, SQLITE_TRANSIENT);
		if (sqlite3_step(ph) != SQLITE_DONE)
			goto out;
		if (!json_object_object_get_ex(p, "per_node", &nodes))
			continue;
		for (k = 0; k < json_object_array_length(nodes); k++) {
			n = json_object_array_get_idx(nodes, k);
			sqlite3_reset(nd);
			sqlite3_bind_text(nd, 1, run_id, -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(nd, 2, (sqlite3_int64)i + 1);
			sqlite3_bind_text(nd, 3, js(n, "node"), -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(nd, 4, js(n, "status"), -1, SQLITE_TRANSIENT);
			sqlite3_bind_int64(nd, 5, ji(n, "threads"));
			sqlite3_bind_int64(nd, 6, ji(n, "bytes"));
			sqlite3_bind_int64(nd, 7, ji(n, "ops"));
			sqlite3_bind_double(nd, 8, jd(n, "start_s"));
			sqlite3_bind_double(nd, 9, jd(n, "end_s"));
			sqlite3_bind_double(nd, 10, jd(n, "rate"));
			sqlite3_bind_text(nd, 11, js(n, "error"), -1, SQLITE_TRANSIENT);
			sqlite3_bind_text(nd, 12, json_object_to_json_string_ext(n,
			    JSON_C_TO_STRING_PLAIN), -1, SQLITE_TRANSIENT);
			if (sqlite3_step(nd) != SQLITE_DONE)
				goto out;
		}
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		goto out;
	rc = 0;
out:
	if (rc < 0) {
		log_warnx("results database: %s", sqlite3_errmsg(db));
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	}
	sqlite3_finalize(run);
	sqlite3_finalize(ph);
	sqlite3_finalize(nd);
	return rc;
}

/* The stored document of a run (caller puts it); NULL if unknown. */
static json_object *
load_run(sqlite3 *db, const char *id)
{
	sqlite3_stmt *st = NULL;
	json_object *doc = NULL;

	if (sqlite3_prepare_v2(db, "SELECT doc FROM runs WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW)
		doc = json_tokener_parse((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return doc;
}

static int
results_list(struct ctl *ctl, sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	json_object *arr = json_object_new_array();

	if (sqlite3_prepare_v2(db, "SELECT r.id, r.started_at, r.nodeset, r.status, r.command,"
	    " (SELECT count(*) FROM phases p WHERE p.run_id = r.id),"
	    " (SELECT group_concat(DISTINCT kind) FROM phases p WHERE p.run_id = r.id)"
	    " FROM runs r ORDER BY r.started_at, r.id", -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "knobctl results: %s\n", sqlite3_errmsg(db));
		json_object_put(arr);
		return 1;
	}
	if (!ctl->json)
		fprintf(ctl->out, "%-22s %-19s %-16s %6s  %-18s %s\n", "RUN", "STARTED", "NODES",
		    "PHASES", "STATUS", "KINDS");
	while (sqlite3_step(st) == SQLITE_ROW) {
		time_t t = (time_t)sqlite3_column_int64(st, 1);
		const char *kinds = (const char *)sqlite3_column_text(st, 6);
		struct tm tm;
		char ts[32];

		localtime_r(&t, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
		if (ctl->json) {
			json_object *o = json_object_new_object();

			json_object_object_add(o, "run_id", json_object_new_string(
			    (const char *)sqlite3_column_text(st, 0)));
			json_object_object_add(o, "started_at", json_object_new_int64(t));
			json_object_object_add(o, "nodeset", json_object_new_string(
			    (const char *)sqlite3_column_text(st, 2)));
			json_object_object_add(o, "status", json_object_new_string(
			    (const char *)sqlite3_column_text(st, 3)));
			json_object_object_add(o, "command", json_object_new_string(
			    (const char *)sqlite3_column_text(st, 4)));
			json_object_object_add(o, "phases", json_object_new_int64(
			    sqlite3_column_int64(st, 5)));
			json_object_array_add(arr, o);
		} else
			fprintf(ctl->out, "%-22s %-19s %-16s %6lld  %-18s %s\n",
			    sqlite3_column_text(st, 0), ts, sqlite3_column_text(st, 2),
			    (long long)sqlite3_column_int64(st, 5), sqlite3_column_text(st, 3),
			    kinds ? kinds : "");
	}
	sqlite3_finalize(st);
	if (ctl->json)
		fprintf(ctl->out, "%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY));
	json_object_put(arr);
	return 0;
}

static int
results_show(struct ctl *ctl, sqlite3 *db, const char *id)
{
	json_object *doc = load_run(db, id);

	if (doc == NULL) {
		fprintf(stderr, "knobctl results: no run '%s'\n", id);
		return 2;
	}
	if (ctl->json)
		fprintf(ctl->out, "%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY));
	else
		bench_print_table(ctl->out, doc);
	json_object_put(doc);
	return 0;
}

/* Phase of doc with this kind and thread count (and shared flag), or NULL. */
static json_object *
find_phase(json_object *doc, const char *kind, int64_t threads)
{
	json_object *phases;

	if (!json_object_object_get_ex(doc, "phases", &phases))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(phases); i++) {
		json_object *p = json_object_array_get_idx(phases, i);

		if (strcmp(js(p, "kind"), kind) == 0 && ji(p, "threads") == threads)
			return p;
	}
	return NULL;
}

static void
fmt_val(char *buf, size_t len, double v, int md)
{
	if (md)
		snprintf(buf, len, "%.0f ops/s", v);
	else
		snprintf(buf, len, "%.3f GB/s", v / 1e9);
}

/* Before/after table: phases matched by kind and thread count. */
static int
results_compare(struct ctl *ctl, sqlite3 *db, const char *a, const char *b)
{
	json_object *da = load_run(db, a), *db2 = load_run(db, b), *pa_arr, *out, *rows;
	int rc = 0;

	if (da == NULL || db2 == NULL) {
		fprintf(stderr, "knobctl results: no run '%s'\n", da == NULL ? a : b);
		json_object_put(da);
		json_object_put(db2);
		return 2;
	}
	out = json_object_new_object();
	rows = json_object_new_array();
	json_object_object_add(out, "a", json_object_new_string(a));
	json_object_object_add(out, "b", json_object_new_string(b));
	if (!ctl->json)
		fprintf(ctl->out, "A = %s\nB = %s\n%-11s %7s %14s %14s %9s %10s %10s %9s\n", a, b,
		    "KIND", "THREADS", "A", "B", "DELTA", "P99 A", "P99 B", "P99 DELTA");
	json_object_object_get_ex(da, "phases", &pa_arr);
	for (size_t i = 0; pa_arr && i < json_object_array_length(pa_arr); i++) {
		json_object *pa = json_object_array_get_idx(pa_arr, i), *pb, *la, *lb, *row;
		const char *kind = js(pa, "kind");
		int md = strcmp(js(pa, "unit"), "op/s") == 0;
		double ra = jd(pa, "rate"), rb, d, qa, qb, dq;
		char sa[32], sb[32], ds[16], dqs[16];

		if ((pb = find_phase(db2, kind, ji(pa, "threads"))) == NULL)
			continue;
		rb = jd(pb, "rate");
		d = ra > 0 ? (rb - ra) / ra * 100 : 0;
		json_object_object_get_ex(pa, "latency", &la);
		json_object_object_get_ex(pb, "latency", &lb);
		qa = jd(la, "p99_ns");
		qb = jd(lb, "p99_ns");
		dq = qa > 0 ? (qb - qa) / qa * 100 : 0;
		row = json_object_new_object();
		json_object_object_add(row, "kind", json_object_new_string(kind));
		json_object_object_add(row, "threads", json_object_new_int64(ji(pa, "threads")));
		json_object_object_add(row, "unit", json_object_new_string(js(pa, "unit")));
		json_object_object_add(row, "a_rate", json_object_new_double(ra));
		json_object_object_add(row, "b_rate", json_object_new_double(rb));
		json_object_object_add(row, "delta_pct", json_object_new_double(d));
		json_object_object_add(row, "a_p99_ns", json_object_new_double(qa));
		json_object_object_add(row, "b_p99_ns", json_object_new_double(qb));
		json_object_object_add(row, "p99_delta_pct", json_object_new_double(dq));
		json_object_object_add(row, "a_status", json_object_new_string(js(pa, "status")));
		json_object_object_add(row, "b_status", json_object_new_string(js(pb, "status")));
		json_object_array_add(rows, row);
		if (!ctl->json) {
			fmt_val(sa, sizeof(sa), ra, md);
			fmt_val(sb, sizeof(sb), rb, md);
			snprintf(ds, sizeof(ds), "%+.1f%%", d);
			snprintf(dqs, sizeof(dqs), "%+.1f%%", dq);
			fprintf(ctl->out, "%-11s %7lld %14s %14s %9s %8.0fus %8.0fus %9s%s\n", kind,
			    (long long)ji(pa, "threads"), sa, sb, ds, qa / 1e3, qb / 1e3, dqs,
			    strcmp(js(pa, "status"), "ok") || strcmp(js(pb, "status"), "ok") ?
			    "  (not ok)" : "");
		}
	}
	if (json_object_array_length(rows) == 0) {
		fprintf(stderr, "knobctl results: runs %s and %s have no phase in common\n", a, b);
		rc = 1;
	}
	json_object_object_add(out, "phases", rows);
	if (ctl->json)
		fprintf(ctl->out, "%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY));
	json_object_put(out);
	json_object_put(da);
	json_object_put(db2);
	return rc;
}

int
cmd_results(struct ctl *ctl, int argc, char **argv)
{
	sqlite3 *db;
	int rc = 2, i = opt_operands(ctl, argc, argv, 1, 3);

	if (i < 0)
		return 2;
	argc -= i - 1;
	argv += i - 1;	/* argv[1] is the sub-command */
	if ((strcmp(argv[1], "list") == 0 && argc != 2) ||
	    (strcmp(argv[1], "show") == 0 && argc != 3) ||
	    (strcmp(argv[1], "compare") == 0 && argc != 4)) {
		fprintf(stderr, "usage: knobctl results list | results show RUN | "
		    "results compare RUN_A RUN_B\n");
		return 2;
	}
	if ((db = results_open(ctl)) == NULL)
		return 1;
	if (strcmp(argv[1], "list") == 0)
		rc = results_list(ctl, db);
	else if (strcmp(argv[1], "show") == 0)
		rc = results_show(ctl, db, argv[2]);
	else if (strcmp(argv[1], "compare") == 0)
		rc = results_compare(ctl, db, argv[2], argv[3]);
	else
		fprintf(stderr, "knobctl results: unknown subcommand '%s'\n", argv[1]);
	sqlite3_close(db);
	return rc;
}

const struct cmd_entry cmd_results_entry = {
	"results", "list | show RUN | compare RUN_A RUN_B", "benchmark runs in the results database",
	0, NULL, cmd_results,
	"results list                 every stored run\n"
	"results show RUN             one run's table\n"
	"results compare RUN_A RUN_B  two runs side by side, with ratios",
};
