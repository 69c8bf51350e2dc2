/* Results store: an SQLite database on the head node with every run, every
 * phase and every node's result.  The database path comes from the
 * inventory's <results db=...>, else $KNOB_DB, else /var/lib/knob/results.db
 * for root and ~/.local/share/knob/results.db for others.
 *
 * Schema versions: PRAGMA user_version counts the core migrations below;
 * version 1 is the first schema (knob 0.1, user_version 0 with the tables
 * present), version 2 adds run records (label, play, profile and its hash,
 * per-node active profile, live values and facts), sub-second start times,
 * the phase parameters as columns, merged histograms and each phase's full
 * record, version 3 the workload of a phase, version 4 the play's content,
 * SHA-256 and variables and the writer's identity and heartbeat, version 5
 * a phase's Lustre stripe count and size, version 6 the page size of its
 * I/O buffers ("4k" for every phase before it: huge pages came then),
 * version 7 whether its threads were pinned to CPUs ("none" before),
 * version 8 the block size and rand-rw read mix that ran where the request
 * left them to the defaults (stored as 0 before), version 9 likewise a
 * metadata phase's files per thread.  Other
 * subsystems keep their own tables in the same file through
 * results_migrate() with their own component name (table schema_versions).
 *
 * A run is written as it goes: its row first (status "running", with its
 * writer: host, boot id, pid namespace, pid and process start time), each
 * finished phase in its own transaction, a heartbeat with each phase and
 * every RESULTS_HEARTBEAT_S seconds, the final status last.  A run whose
 * writer is gone (SIGKILL, power; controller/runlive.c says how that is
 * decided) stays "running" in the file and is reported, and marked,
 * "incomplete". */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "bench_ctl.h"
#include "log.h"
#include "results.h"
#include "rundoc.h"
#include "util.h"

static const char *const core_steps[] = {
	/* 1: the first schema, as knob 0.1 created it */
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
	" error TEXT, doc TEXT, PRIMARY KEY (run_id, seq, node));",
	/* 2: run records, parameters as columns, each phase's record */
	"ALTER TABLE runs ADD COLUMN started_ns INTEGER NOT NULL DEFAULT 0;"
	"UPDATE runs SET started_ns = started_at * 1000000000;"
	"ALTER TABLE runs ADD COLUMN ended_ns INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE runs ADD COLUMN label TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE runs ADD COLUMN play TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE runs ADD COLUMN profile TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE runs ADD COLUMN profile_hash TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE runs ADD COLUMN profile_text TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE runs ADD COLUMN pid INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT '';"
	"CREATE INDEX runs_by_time ON runs (started_ns);"
	"ALTER TABLE phases ADD COLUMN repeat_idx INTEGER NOT NULL DEFAULT 1;"
	"ALTER TABLE phases ADD COLUMN ops_rate REAL;"
	"ALTER TABLE phases ADD COLUMN last_done_rate REAL;"
	"ALTER TABLE phases ADD COLUMN cpu_s REAL;"
	"ALTER TABLE phases ADD COLUMN lat_count INTEGER;"
	"ALTER TABLE phases ADD COLUMN dir TEXT;"
	"ALTER TABLE phases ADD COLUMN block_size INTEGER;"
	"ALTER TABLE phases ADD COLUMN file_size INTEGER;"
	"ALTER TABLE phases ADD COLUMN direct INTEGER;"
	"ALTER TABLE phases ADD COLUMN fsync INTEGER;"
	"ALTER TABLE phases ADD COLUMN shared INTEGER;"
	"ALTER TABLE phases ADD COLUMN files_per_dir INTEGER;"
	"ALTER TABLE phases ADD COLUMN md_files INTEGER;"
	"ALTER TABLE phases ADD COLUMN write_size INTEGER;"
	"ALTER TABLE phases ADD COLUMN stonewall_s INTEGER;"
	"ALTER TABLE phases ADD COLUMN drop_caches INTEGER;"
	"ALTER TABLE phases ADD COLUMN reader_shift INTEGER;"
	"ALTER TABLE phases ADD COLUMN histogram TEXT;"
	"ALTER TABLE phases ADD COLUMN doc TEXT;"
	/* version-1 runs kept their phases inside the run document */
	"UPDATE phases SET doc = json_extract((SELECT r.doc FROM runs r WHERE r.id = phases.run_id),"
	" '$.phases[' || (seq - 1) || ']');"
	"UPDATE phases SET ops_rate = CASE WHEN elapsed_s > 0 THEN ops / elapsed_s ELSE 0 END,"
	" dir = json_extract(params, '$.dir'), block_size = json_extract(params, '$.block_size'),"
	" file_size = json_extract(params, '$.file_size'), direct = json_extract(params, '$.direct'),"
	" fsync = json_extract(params, '$.fsync'), shared = json_extract(params, '$.shared'),"
	" files_per_dir = json_extract(params, '$.files_per_dir'),"
	" write_size = json_extract(params, '$.write_size'),"
	" stonewall_s = json_extract(params, '$.stonewall_s'),"
	" drop_caches = json_extract(params, '$.drop_caches'),"
	" reader_shift = json_extract(params, '$.reader_shift'), md_files = 0;"
	"UPDATE phases SET doc = json_set(doc, '$.repeat', 1, '$.ops_rate', ops_rate,"
	" '$.params.md_files', 0) WHERE doc IS NOT NULL;"
	"UPDATE runs SET doc = json_remove(doc, '$.phases');"
	"CREATE TABLE run_nodes ("
	" run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, node TEXT NOT NULL,"
	" active_profile TEXT NOT NULL DEFAULT '', live TEXT, facts TEXT,"
	" PRIMARY KEY (run_id, node));"
	"CREATE TABLE schema_versions (component TEXT PRIMARY KEY, version INTEGER NOT NULL);",
	/* 3: the request's parameters of a phase (one workload across thread counts) */
	"ALTER TABLE phases ADD COLUMN workload TEXT NOT NULL DEFAULT '';",
	/* 4: the play's file, content, SHA-256 and -e variables; the writer's
	 * boot id, pid namespace and process start time, and its heartbeat */
	"ALTER TABLE runs ADD COLUMN play_file TEXT NOT NULL DEFAULT '';"
	"UPDATE runs SET play_file = coalesce(json_extract(doc, '$.play_file'), '');"
	"ALTER TABLE runs ADD COLUMN play_text TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE runs ADD COLUMN play_hash TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE runs ADD COLUMN play_vars TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE runs ADD COLUMN boot_id TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE runs ADD COLUMN pid_ns TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE runs ADD COLUMN pid_start INTEGER NOT NULL DEFAULT -1;"
	"ALTER TABLE runs ADD COLUMN heartbeat_ns INTEGER NOT NULL DEFAULT 0;"
	"UPDATE runs SET heartbeat_ns = max(started_ns, ended_ns);",
	/* 5: the Lustre layout of a phase (lfs setstripe -c / -S; 0: left alone) */
	"ALTER TABLE phases ADD COLUMN stripe_count INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE phases ADD COLUMN stripe_size INTEGER NOT NULL DEFAULT 0;"
	"UPDATE phases SET doc = json_set(doc, '$.params.stripe_count', 0,"
	" '$.params.stripe_size', 0) WHERE doc IS NOT NULL;",
	/* 6: the engine's I/O buffers, "huge" (1 MiB and more on huge pages) or "4k" */
	"ALTER TABLE phases ADD COLUMN buffer_pages TEXT NOT NULL DEFAULT '4k';"
	"UPDATE phases SET doc = json_set(doc, '$.params.buffer_pages', '4k')"
	" WHERE doc IS NOT NULL;",
	/* 7: the engine's threads pinned to CPUs ("core") or floating ("none") */
	"ALTER TABLE phases ADD COLUMN cpu_bind TEXT NOT NULL DEFAULT 'none';"
	"UPDATE phases SET doc = json_set(doc, '$.params.cpu_bind', 'none')"
	" WHERE doc IS NOT NULL;",
	/* 8: the block size and read mix a data phase ran with where the request
	 * left them out (0 before): 4 KiB for rand-read and rand-write, else
	 * 1 MiB (rand-rw too, which ran 1 MiB blocks by default until then), and
	 * rand-rw's 50 % reads */
	"UPDATE phases SET block_size = CASE WHEN kind IN ('rand-read', 'rand-write') THEN 4096"
	" ELSE 1048576 END WHERE coalesce(block_size, 0) = 0 AND kind IN ('seq-write',"
	" 'seq-read', 'rand-read', 'rand-write', 'rand-rw');"
	"UPDATE phases SET doc = json_set(doc, '$.params.block_size', block_size)"
	" WHERE doc IS NOT NULL AND block_size > 0;"
	"UPDATE phases SET params = json_set(params, '$.block_size', block_size)"
	" WHERE json_valid(params) AND block_size > 0;"
	"UPDATE phases SET doc = json_set(doc, '$.params.rwmix_read', 50) WHERE doc IS NOT NULL"
	" AND kind = 'rand-rw' AND coalesce(json_extract(doc, '$.params.rwmix_read'), 0) = 0;"
	"UPDATE phases SET params = json_set(params, '$.rwmix_read', 50) WHERE json_valid(params)"
	" AND kind = 'rand-rw' AND coalesce(json_extract(params, '$.rwmix_read'), 0) = 0;",
	/* 9: the files per thread a built-in metadata phase ran where the
	 * request left them out (0 before): one directory's worth */
	"UPDATE phases SET md_files = coalesce(nullif(files_per_dir, 0), 1024)"
	" WHERE coalesce(md_files, 0) = 0 AND kind IN ('md-create', 'md-stat', 'md-read',"
	" 'md-remove', 'md-mkdir', 'md-dirstat', 'md-rmdir');"
	"UPDATE phases SET doc = json_set(doc, '$.params.md_files', md_files) WHERE doc IS NOT"
	" NULL AND md_files > 0 AND coalesce(json_extract(doc, '$.params.md_files'), 0) = 0;"
	"UPDATE phases SET params = json_set(params, '$.md_files', md_files) WHERE json_valid("
	"params) AND md_files > 0 AND coalesce(json_extract(params, '$.md_files'), 0) = 0;",
};

static const struct results_schema core_schema = {
	NULL, core_steps, nitems(core_steps),
};

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

void
results_side_path(struct ctl *ctl, const char *name, char *buf, size_t len)
{
	char db[PATH_MAX], *slash;

	results_db_path(ctl, db, sizeof(db));
	if ((slash = strrchr(db, '/')) != NULL)
		*slash = '\0';
	else
		snprintf(db, sizeof(db), ".");
	snprintf(buf, len, "%s/%s", db, name);
}

void
results_mkparent(const char *path)
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

/* Columns by which the core schema is known when its user_version is 0
 * and its tables are there: `sqlite3 .dump` leaves the pragma out, so a
 * database restored from a dump reads 0 whatever it holds, and taken for
 * version 1 its migration fails ("duplicate column name").  Version i + 1
 * has core_marks[i].  Inferred rather than made idempotent: SQLite has no
 * ADD COLUMN IF NOT EXISTS.  Steps 8 and 9 add no column but only fill what
 * is still 0, so a restored version-8 or -9 file is taken for 7 and they run
 * again changing nothing.  A step appended later adds its mark here, or is
 * idempotent as steps 8 and 9 are. */
static const struct { const char *table, *column; } core_marks[] = {
	{ "runs", "id" }, { "runs", "started_ns" }, { "phases", "workload" },
	{ "runs", "play_file" }, { "phases", "stripe_count" }, { "phases", "buffer_pages" },
	{ "phases", "cpu_bind" },
};

/* 1 when table has column, else 0 (no such table either). */
static int
has_column(sqlite3 *db, const char *table, const char *column)
{
	sqlite3_stmt *st = NULL;
	int found;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?", -1, &st,
	    NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

/* The core version of a file whose user_version is 0, from its columns
 * (0: no table yet). */
static int64_t
core_inferred(sqlite3 *db)
{
	size_t v = 0;

	while (v < nitems(core_marks) && has_column(db, core_marks[v].table, core_marks[v].column))
		v++;
	if (v > 1)
		log_info("results database %s: user_version 0 with the tables of version %zu "
		    "(restored from a dump?): taken for %zu", sqlite3_db_filename(db, "main"), v, v);
	return (int64_t)v;
}

/* The schema version of a component (NULL: the core's user_version, or
 * for 0 what its columns say). */
static int
schema_version(sqlite3 *db, const char *component, int64_t *v)
{
	sqlite3_stmt *st = NULL;
	int rc;

	*v = 0;
	if (component == NULL)
		rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
	else {
		rc = sqlite3_prepare_v2(db, "SELECT version FROM schema_versions WHERE component = ?",
		    -1, &st, NULL);
		if (rc == SQLITE_OK)
			sqlite3_bind_text(st, 1, component, -1, SQLITE_TRANSIENT);
	}
	if (rc != SQLITE_OK)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return -1;
	if (component == NULL && *v == 0)
		*v = core_inferred(db);
	return 0;
}

static int
set_schema_version(sqlite3 *db, const char *component, int64_t v)
{
	sqlite3_stmt *st = NULL;
	char sql[64];
	int rc;

	if (component == NULL) {
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %lld", (long long)v);
		return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
	}
	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO schema_versions VALUES (?, ?)", -1, &st,
	    NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, component, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, v);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
	sqlite3_finalize(st);
	return rc;
}

/* 1 when a step of s is due at version v, 0 when s is current, -1 (the
 * reason in err) when the file is newer than this knobctl. */
static int
schema_due(const struct results_schema *s, int64_t v, char *err, size_t errlen)
{
	if (v > (int64_t)s->nsteps) {
		snprintf(err, errlen, "%s schema version %lld is newer than this knobctl knows (%zu)",
		    s->component ? s->component : "results", (long long)v, s->nsteps);
		return -1;
	}
	return v < (int64_t)s->nsteps;
}

/* The write lock for a step of s: 1 with it taken and *v the version read
 * again under it (another knobctl may have migrated meanwhile), 0 when
 * that left nothing due (no lock held), -1 on an error (err set, or
 * *msg from SQLite). */
static int
lock_for_step(sqlite3 *db, const struct results_schema *s, int64_t *v, char **msg, char *err,
    size_t errlen)
{
	int due;

	if (sqlite3_db_readonly(db, "main") == 1) {
		snprintf(err, errlen, "results database %s: its %s schema is at version %lld and "
		    "this knobctl needs %zu, but the file cannot be written here to migrate it "
		    "(run knobctl once as a user who can write it)", sqlite3_db_filename(db, "main"),
		    s->component ? s->component : "results", (long long)*v, s->nsteps);
		return -1;
	}
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, msg) != SQLITE_OK)
		return -1;
	if (schema_version(db, s->component, v) < 0 || (due = schema_due(s, *v, err, errlen)) < 0) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		return -1;
	}
	if (due == 0)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return due;
}

int
results_migrate(sqlite3 *db, const struct results_schema *s, char *err, size_t errlen)
{
	const char *name = s->component ? s->component : "results";
	char *msg = NULL;
	int64_t v;
	int due;

	/* the version is read without a transaction: a file that is current
	 * is only read (a reader that cannot write it, a read-only mount) */
	err[0] = '\0';
	for (;;) {
		if (schema_version(db, s->component, &v) < 0)
			goto fail;
		if ((due = schema_due(s, v, err, errlen)) <= 0)
			return due;
		if ((due = lock_for_step(db, s, &v, &msg, err, errlen)) <= 0) {
			if (due == 0)
				return 0;
			if (err[0])
				return -1;
			goto fail;
		}
		if (sqlite3_exec(db, s->steps[v], NULL, NULL, &msg) != SQLITE_OK ||
		    set_schema_version(db, s->component, v + 1) < 0 ||
		    sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK)
			goto fail;
		log_info("%s schema migrated to version %lld", name, (long long)v + 1);
	}
fail:
	snprintf(err, errlen, "%s schema migration: %s", name, msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

/* Open path with SQLite's flags; NULL with the reason in err. */
static sqlite3 *
db_open(const char *path, const char *name, int flags, char *err, size_t errlen)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "results database %s: %s", name,
		    db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

/* A connection made ready: a busy timeout, WAL and foreign keys when it
 * can write, the core schema brought up to date (or found current);
 * closed and NULL with the reason in err when it is not. */
static sqlite3 *
db_ready(sqlite3 *db, char *err, size_t errlen)
{
	sqlite3_busy_timeout(db, 10000);
	if (sqlite3_db_readonly(db, "main") != 1)
		sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;", NULL, NULL,
		    NULL);
	if (results_migrate(db, &core_schema, err, errlen) < 0) {
		sqlite3_close(db);
		return NULL;
	}
	return db;
}

/* Open (made when not there) to write: a file SQLite could open only
 * read-only is refused here, before a bench runs that could not store. */
sqlite3 *
results_open_path(const char *path, char *err, size_t errlen)
{
	sqlite3 *db;

	results_mkparent(path);
	db = db_open(path, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err, errlen);
	if (db && sqlite3_db_readonly(db, "main") == 1) {
		snprintf(err, errlen, "results database %s: cannot be written here (a read-only "
		    "file, directory or mount)", path);
		sqlite3_close(db);
		return NULL;
	}
	return db ? db_ready(db, err, errlen) : NULL;
}

/* "file:PATH?immutable=1", PATH percent-encoded where a URI needs it;
 * caller frees. */
static char *
immutable_uri(const char *path)
{
	char *uri = xstrdup("file:");

	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		if (strchr("?#%", *p) || *p < 0x21 || *p > 0x7e)
			str_appendf(&uri, "%%%02X", *p);
		else
			str_appendf(&uri, "%c", *p);
	str_appendf(&uri, "?immutable=1");
	return uri;
}

/* Open the existing database at path to read it: as results_open_path
 * does when this user can write the file (a due migration runs), else
 * read-only.  A WAL database is read through its -shm index, which a
 * reader that cannot write the directory cannot make (root's 0644 file
 * in its 0755 directory, a read-only mount): when no -wal file is there
 * either, no writer has changes outside the file (the last to close
 * folds them in), and the file alone is opened, immutable.  A writer
 * that starts meanwhile goes unseen by that one read-only command.  NULL
 * with the reason in err. */
sqlite3 *
results_open_read(const char *path, char *err, size_t errlen)
{
	sqlite3 *db = db_open(path, path, SQLITE_OPEN_READWRITE, err, errlen);
	char wal[PATH_MAX], *uri;
	int64_t v;

	if (db == NULL || sqlite3_db_readonly(db, "main") != 1 ||
	    schema_version(db, NULL, &v) == 0)
		return db ? db_ready(db, err, errlen) : NULL;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (access(wal, F_OK) == 0) {
		snprintf(err, errlen, "results database %s: %s (read-only here, and its -wal file "
		    "is there without a -shm index this user can read)", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_close(db);
	uri = immutable_uri(path);
	db = db_open(uri, path, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, err, errlen);
	free(uri);
	return db ? db_ready(db, err, errlen) : NULL;
}

sqlite3 *
results_open(struct ctl *ctl)
{
	char path[PATH_MAX], err[512];
	sqlite3 *db;

	results_db_path(ctl, path, sizeof(path));
	if ((db = results_open_path(path, err, sizeof(err))) == NULL)
		fprintf(stderr, "knobctl: %s\n", err);
	return db;
}

/* results_open for a command that only reads: a database that is not
 * there is said (nothing stored yet, or a mistyped path), not made; one
 * this user cannot write is read as it is (results_open_read).  Every
 * message names the path. */
sqlite3 *
results_open_existing(struct ctl *ctl)
{
	char path[PATH_MAX], err[512];
	sqlite3 *db;

	results_db_path(ctl, path, sizeof(path));
	if (access(path, F_OK) != 0) {
		fprintf(stderr, "knobctl: results database %s: %s (no run stored there yet, or a "
		    "mistyped path)\n", path, strerror(errno));
		return NULL;
	}
	if ((db = results_open_read(path, err, sizeof(err))) == NULL) {
		if (strstr(err, path) != NULL)
			fprintf(stderr, "knobctl: %s\n", err);
		else	/* "results schema migration: file is not a database" */
			fprintf(stderr, "knobctl: results database %s: %s\n", path, err);
	}
	return db;
}

/* Bind JSON value v (or NULL) to parameter i as type. */
static void
bind_json(sqlite3_stmt *st, int i, json_object *v, int type)
{
	if (v == NULL) {
		sqlite3_bind_null(st, i);
		return;
	}
	switch (type) {
	case RF_INT:
	case RF_BOOL: sqlite3_bind_int64(st, i, json_object_get_int64(v)); break;
	case RF_REAL: sqlite3_bind_double(st, i, json_object_get_double(v)); break;
	default: sqlite3_bind_text(st, i, json_object_get_string(v), -1, SQLITE_TRANSIENT); break;
	}
}

static void
bind_text(sqlite3_stmt *st, int i, const char *s)
{
	sqlite3_bind_text(st, i, s ? s : "", -1, SQLITE_TRANSIENT);
}

/* Step a prepared statement to completion; 0 or -1. */
static int
step_done(sqlite3_stmt *st)
{
	return sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
}

/* The run document without its phases and per-node records (the runs.doc
 * column); caller puts it. */
static json_object *
run_header(json_object *doc)
{
	json_object *h = json_object_new_object();

	json_object_object_foreach(doc, k, v)
		if (strcmp(k, "phases") != 0 && strcmp(k, "node_info") != 0)
			json_object_object_add(h, k, json_object_get(v));
	return h;
}

/* The runs columns that hold a text of the run document (in its
 * "profile" object when in_profile). */
static const struct run_col {
	const char *column, *key;
	int in_profile;
} run_text_cols[] = {
	{ "command", "command", 0 }, { "nodeset", "nodeset", 0 }, { "label", "label", 0 },
	{ "play", "play", 0 }, { "play_file", "play_file", 0 }, { "play_text", "play_text", 0 },
	{ "play_hash", "play_sha256", 0 }, { "profile", "name", 1 },
	{ "profile_hash", "sha256", 1 }, { "profile_text", "text", 1 },
};

/* A run's writer, in this order in every statement. */
#define WRITER_COLS "r.pid, r.host, r.boot_id, r.pid_ns, r.pid_start, r.heartbeat_ns"

/* Bind the writer columns (WRITER_COLS order) from parameter i on. */
static void
bind_writer(sqlite3_stmt *st, int i, const struct run_writer *w)
{
	sqlite3_bind_int64(st, i, w->pid);
	bind_text(st, i + 1, w->host);
	bind_text(st, i + 2, w->boot_id);
	bind_text(st, i + 3, w->pid_ns);
	sqlite3_bind_int64(st, i + 4, w->pid_start);
	sqlite3_bind_int64(st, i + 5, w->heartbeat_ns);
}

/* Is run id already in the database?  A new run never takes the place
 * of a stored one (two benches in the same second with the same random
 * bits): it says so instead. */
static int
run_exists(sqlite3 *db, const char *id)
{
	sqlite3_stmt *st;
	int found = 0;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM runs WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
		return 0;
	bind_text(st, 1, id);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	if (found)
		log_warnx("results database: a run %s is already there: not overwritten", id);
	return found;
}

/* INSERT OR REPLACE the runs row of doc with status. */
static int
put_run_row(sqlite3 *db, json_object *doc, const char *status)
{
	char *sql = xstrdup("INSERT INTO runs (id, started_at, status, doc, started_ns, ended_ns,"
	    " play_vars, pid, host, boot_id, pid_ns, pid_start, heartbeat_ns");
	sqlite3_stmt *st = NULL;
	json_object *hdr = run_header(doc), *prof;
	struct run_writer me;
	size_t i;
	int rc = -1, k = 14;

	runlive_self(&me);
	json_object_object_add(hdr, "status", json_object_new_string(status));
	if (!json_object_object_get_ex(doc, "profile", &prof))
		prof = NULL;
	for (i = 0; i < nitems(run_text_cols); i++)
		str_appendf(&sql, ", %s", run_text_cols[i].column);
	str_appendf(&sql, ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?");
	for (i = 0; i < nitems(run_text_cols); i++)
		str_appendf(&sql, ",?");
	str_appendf(&sql, ") ON CONFLICT(id) DO UPDATE SET status = excluded.status,"
	    " doc = excluded.doc, ended_ns = excluded.ended_ns, heartbeat_ns = excluded.heartbeat_ns");
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		goto out;
	bind_text(st, 1, js_str(doc, "run_id"));
	sqlite3_bind_int64(st, 2, (int64_t)js_num(doc, "started_at"));
	bind_text(st, 3, status);
	bind_text(st, 4, json_object_to_json_string_ext(hdr, JSON_C_TO_STRING_PLAIN));
	sqlite3_bind_int64(st, 5, json_object_get_int64(json_object_object_get(doc, "started_ns")));
	sqlite3_bind_int64(st, 6, strcmp(status, "running") ? (int64_t)now_real_ns() : 0);
	bind_text(st, 7, js_text(doc, "play_vars"));
	bind_writer(st, 8, &me);
	for (i = 0; i < nitems(run_text_cols); i++)
		bind_text(st, k++, js_str(run_text_cols[i].in_profile ? prof : doc,
		    run_text_cols[i].key));
	rc = step_done(st);
out:
	sqlite3_finalize(st);
	json_object_put(hdr);
	free(sql);
	return rc;
}

/* The run_nodes rows of doc's node_info. */
static int
put_run_nodes(sqlite3 *db, json_object *doc)
{
	sqlite3_stmt *st = NULL;
	json_object *info;
	int rc = -1;

	if (!json_object_object_get_ex(doc, "node_info", &info))
		return 0;
	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO run_nodes VALUES (?,?,?,?,?)", -1, &st,
	    NULL) != SQLITE_OK)
		return -1;
	for (size_t i = 0; i < json_object_array_length(info); i++) {
		json_object *n = json_object_array_get_idx(info, i);

		sqlite3_reset(st);
		bind_text(st, 1, js_str(doc, "run_id"));
		bind_text(st, 2, js_str(n, "node"));
		bind_text(st, 3, js_str(n, "active_profile"));
		bind_text(st, 4, js_text(n, "live"));
		bind_text(st, 5, js_text(n, "facts"));
		if (step_done(st) < 0)
			goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

/* Commit the transaction when ok is 0, else roll it back (logged); 0 or -1. */
static int
txn_end(sqlite3 *db, int ok)
{
	if (ok == 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
		return 0;
	log_warnx("results database: %s", sqlite3_errmsg(db));
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

static int
txn_begin(sqlite3 *db)
{
	return sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

int
results_run_begin(sqlite3 *db, json_object *doc)
{
	if (txn_begin(db) < 0)
		return txn_end(db, -1);
	if (run_exists(db, js_str(doc, "run_id")))
		return txn_end(db, -1);
	return txn_end(db, put_run_row(db, doc, "running") < 0 || put_run_nodes(db, doc) < 0 ?
	    -1 : 0);
}

/* INSERT the phases row: the rundoc columns, then the JSON columns. */
static int
put_phase_row(sqlite3 *db, const char *run_id, int64_t seq, json_object *ph)
{
	char *sql = xstrdup("INSERT OR REPLACE INTO phases (run_id, seq"), *vals = xstrdup("?,?");
	sqlite3_stmt *st = NULL;
	json_object *lat, *hist = NULL;
	size_t i;
	int rc = -1, k = 3;

	for (i = 0; i < rundoc_nphase_fields; i++) {
		str_appendf(&sql, ", %s", rundoc_phase_fields[i].column);
		str_appendf(&vals, ",?");
	}
	str_appendf(&sql, ", missing, errors, warnings, params, histogram, doc) VALUES (%s,?,?,?,?,?,?)",
	    vals);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		goto out;
	bind_text(st, 1, run_id);
	sqlite3_bind_int64(st, 2, seq);
	for (i = 0; i < rundoc_nphase_fields; i++)
		bind_json(st, k++, rundoc_value(ph, &rundoc_phase_fields[i]), rundoc_phase_fields[i].type);
	bind_text(st, k++, js_text(ph, "missing"));
	bind_text(st, k++, js_text(ph, "errors"));
	bind_text(st, k++, js_text(ph, "warnings"));
	bind_text(st, k++, js_text(ph, "params"));
	if (json_object_object_get_ex(ph, "latency", &lat))
		json_object_object_get_ex(lat, "histogram", &hist);
	bind_text(st, k++, hist ? json_object_to_json_string_ext(hist, JSON_C_TO_STRING_PLAIN) : "");
	bind_text(st, k++, json_object_to_json_string_ext(ph, JSON_C_TO_STRING_PLAIN));
	rc = step_done(st);
out:
	sqlite3_finalize(st);
	free(sql);
	free(vals);
	return rc;
}

/* The node_results rows of one phase. */
static int
put_node_rows(sqlite3 *db, const char *run_id, int64_t seq, json_object *ph)
{
	sqlite3_stmt *st = NULL;
	json_object *nodes;
	int rc = -1;

	if (!json_object_object_get_ex(ph, "per_node", &nodes))
		return 0;
	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO node_results VALUES "
	    "(?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
		return -1;
	for (size_t k = 0; k < json_object_array_length(nodes); k++) {
		json_object *n = json_object_array_get_idx(nodes, k);

		sqlite3_reset(st);
		bind_text(st, 1, run_id);
		sqlite3_bind_int64(st, 2, seq);
		bind_text(st, 3, js_str(n, "node"));
		bind_text(st, 4, js_str(n, "status"));
		sqlite3_bind_int64(st, 5, (int64_t)js_num(n, "threads"));
		sqlite3_bind_int64(st, 6, (int64_t)js_num(n, "bytes"));
		sqlite3_bind_int64(st, 7, (int64_t)js_num(n, "ops"));
		sqlite3_bind_double(st, 8, js_num(n, "start_s"));
		sqlite3_bind_double(st, 9, js_num(n, "end_s"));
		sqlite3_bind_double(st, 10, js_num(n, "rate"));
		bind_text(st, 11, js_str(n, "error"));
		bind_text(st, 12, json_object_to_json_string_ext(n, JSON_C_TO_STRING_PLAIN));
		if (step_done(st) < 0)
			goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

/* The run's heartbeat is now (with each phase). */
static int
put_heartbeat(sqlite3 *db, const char *run_id)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(db, "UPDATE runs SET heartbeat_ns = ? WHERE id = ?", -1, &st,
	    NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, (int64_t)now_real_ns());
	bind_text(st, 2, run_id);
	rc = step_done(st);
	sqlite3_finalize(st);
	return rc;
}

int
results_phase_add(sqlite3 *db, const char *run_id, int64_t seq, json_object *ph)
{
	if (txn_begin(db) < 0)
		return txn_end(db, -1);
	return txn_end(db, put_phase_row(db, run_id, seq, ph) < 0 ||
	    put_node_rows(db, run_id, seq, ph) < 0 || put_heartbeat(db, run_id) < 0 ? -1 : 0);
}

int
results_run_end(sqlite3 *db, json_object *doc)
{
	const char *status = js_str(doc, "status");

	if (put_run_row(db, doc, status[0] ? status : "ok") < 0) {
		log_warnx("results database: %s", sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

int
results_store(sqlite3 *db, json_object *doc)
{
	json_object *phases;

	if (results_run_begin(db, doc) < 0)
		return -1;
	if (json_object_object_get_ex(doc, "phases", &phases))
		for (size_t i = 0; i < json_object_array_length(phases); i++)
			if (results_phase_add(db, js_str(doc, "run_id"), (int64_t)i + 1,
			    json_object_array_get_idx(phases, i)) < 0)
				return -1;
	return results_run_end(db, doc);
}

/* The writer columns of a runs row (WRITER_COLS at column i of st). */
static void
row_writer(sqlite3_stmt *st, int i, struct run_writer *w)
{
	const char *t;

	memset(w, 0, sizeof(*w));
	w->pid = sqlite3_column_int64(st, i);
	if ((t = (const char *)sqlite3_column_text(st, i + 1)) != NULL)
		snprintf(w->host, sizeof(w->host), "%s", t);
	if ((t = (const char *)sqlite3_column_text(st, i + 2)) != NULL)
		snprintf(w->boot_id, sizeof(w->boot_id), "%s", t);
	if ((t = (const char *)sqlite3_column_text(st, i + 3)) != NULL)
		snprintf(w->pid_ns, sizeof(w->pid_ns), "%s", t);
	w->pid_start = sqlite3_column_int64(st, i + 4);
	w->heartbeat_ns = sqlite3_column_int64(st, i + 5);
}

/* Finalize st, whose last step returned rc: 0 when it ran to its end,
 * else -1 with SQLite's reason in the connection (a malformed page, an
 * I/O error): the rows read before it are not all there are. */
static int
rows_end(sqlite3_stmt *st, int rc)
{
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* "incomplete" for a run still "running" whose writer is gone (recorded in
 * the file); the status otherwise. */
static const char *
live_status(sqlite3 *db, const char *id, const char *status, const struct run_writer *w)
{
	sqlite3_stmt *st = NULL;

	if (strcmp(status, "running") != 0 || !runlive_gone(w, (int64_t)now_real_ns()))
		return status;
	if (sqlite3_prepare_v2(db, "UPDATE runs SET status = 'incomplete', doc = json_set(doc,"
	    " '$.status', 'incomplete') WHERE id = ? AND status = 'running'", -1, &st, NULL) ==
	    SQLITE_OK) {
		sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
		sqlite3_step(st);
	}
	sqlite3_finalize(st);
	return "incomplete";
}

int
results_runs(sqlite3 *db, struct run_row **out, size_t *n)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db, "SELECT r.id, r.started_ns, r.label, r.profile, r.nodeset,"
	    " r.status, r.command, r.play, " WRITER_COLS ","
	    " (SELECT count(*) FROM phases p WHERE p.run_id = r.id),"
	    " (SELECT group_concat(DISTINCT kind) FROM phases p WHERE p.run_id = r.id),"
	    " r.profile_hash, r.ended_ns"
	    " FROM runs r ORDER BY r.started_ns, r.rowid", -1, &st, NULL) != SQLITE_OK)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct run_writer w;
		struct run_row *r;
		const char *kinds = (const char *)sqlite3_column_text(st, 15);

		if (*n == cap) {
			cap = cap ? cap * 2 : 32;
			*out = xrealloc(*out, cap * sizeof(**out));
		}
		r = &(*out)[(*n)++];
		memset(r, 0, sizeof(*r));
		r->id = xstrdup((const char *)sqlite3_column_text(st, 0));
		r->started_ns = sqlite3_column_int64(st, 1);
		r->label = xstrdup((const char *)sqlite3_column_text(st, 2));
		r->profile = xstrdup((const char *)sqlite3_column_text(st, 3));
		r->nodeset = xstrdup((const char *)sqlite3_column_text(st, 4));
		r->command = xstrdup((const char *)sqlite3_column_text(st, 6));
		r->play = xstrdup((const char *)sqlite3_column_text(st, 7));
		r->phases = sqlite3_column_int64(st, 14);
		r->kinds = xstrdup(kinds ? kinds : "");
		r->profile_hash = xstrdup((const char *)sqlite3_column_text(st, 16));
		r->ended_ns = sqlite3_column_int64(st, 17);
		row_writer(st, 8, &w);
		r->status = xstrdup(live_status(db, r->id, (const char *)sqlite3_column_text(st, 5),
		    &w));
	}
	if (rows_end(st, rc) == 0)
		return 0;
	results_runs_free(*out, *n);	/* not all there are: none */
	*out = NULL;
	*n = 0;
	return -1;
}

void
results_runs_free(struct run_row *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(r[i].id);
		free(r[i].label);
		free(r[i].profile);
		free(r[i].profile_hash);
		free(r[i].nodeset);
		free(r[i].status);
		free(r[i].command);
		free(r[i].play);
		free(r[i].kinds);
	}
	free(r);
}

int
results_resolve(sqlite3 *db, const char *spec, char **id, char *err, size_t errlen)
{
	struct run_row *r;
	size_t n, i, hit = 0, at = 0;
	int rc = -1;

	*id = NULL;
	if (results_runs(db, &r, &n) < 0) {
		results_db_error(db, err, errlen);
		return -1;
	}
	if (strncmp(spec, "latest", 6) == 0 && (spec[6] == '\0' || spec[6] == '~')) {
		char *end;
		unsigned long back = spec[6] ? strtoul(spec + 7, &end, 10) : 0;

		if (spec[6] && (end == spec + 7 || *end))
			snprintf(err, errlen, "bad run '%s' (latest, latest~N)", spec);
		else if (back >= n)
			snprintf(err, errlen, "no run '%s': the database holds %zu run(s)", spec, n);
		else {
			*id = xstrdup(r[n - 1 - back].id);
			rc = 0;
		}
		goto out;
	}
	if (spec[0] == '\0') {
		/* a prefix of every id: an unset shell variable is no run */
		snprintf(err, errlen, "no run '': an empty run id");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(r[i].id, spec) == 0) {
			hit = 1;
			at = i;
			break;
		}
		if (strncmp(r[i].id, spec, strlen(spec)) == 0) {
			hit++;
			at = i;
		}
	}
	if (hit == 1) {
		*id = xstrdup(r[at].id);
		rc = 0;
	} else if (hit == 0)
		snprintf(err, errlen, "no run '%s'", spec);
	else
		snprintf(err, errlen, "run '%s' is ambiguous: %zu runs start with it", spec, hit);
out:
	results_runs_free(r, n);
	return rc;
}

/* The phases of run id, in order, into doc's "phases" array. */
static int
load_phases(sqlite3 *db, const char *id, json_object *doc)
{
	sqlite3_stmt *st = NULL;
	json_object *arr = json_object_new_array();
	int rc;

	json_object_object_add(doc, "phases", arr);
	if (sqlite3_prepare_v2(db, "SELECT doc FROM phases WHERE run_id = ? ORDER BY seq", -1, &st,
	    NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		json_object *ph = t ? json_tokener_parse(t) : NULL;

		if (ph)
			json_object_array_add(arr, ph);
	}
	return rows_end(st, rc);
}

/* The per-node records of run id into doc's "node_info". */
static int
load_nodes(sqlite3 *db, const char *id, json_object *doc)
{
	sqlite3_stmt *st = NULL;
	json_object *arr = json_object_new_array();
	int rc;

	json_object_object_add(doc, "node_info", arr);
	if (sqlite3_prepare_v2(db, "SELECT node, active_profile, live, facts FROM run_nodes"
	    " WHERE run_id = ? ORDER BY node", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_object *n = json_object_new_object(), *v;
		const char *live = (const char *)sqlite3_column_text(st, 2);
		const char *facts = (const char *)sqlite3_column_text(st, 3);

		json_object_object_add(n, "node", json_object_new_string(
		    (const char *)sqlite3_column_text(st, 0)));
		json_object_object_add(n, "active_profile", json_object_new_string(
		    (const char *)sqlite3_column_text(st, 1)));
		if (live && (v = json_tokener_parse(live)) != NULL)
			json_object_object_add(n, "live", v);
		if (facts && (v = json_tokener_parse(facts)) != NULL)
			json_object_object_add(n, "facts", v);
		json_object_array_add(arr, n);
	}
	return rows_end(st, rc);
}

void
results_db_error(sqlite3 *db, char *buf, size_t len)
{
	const char *path = sqlite3_db_filename(db, "main");

	snprintf(buf, len, "results database %s: %s", path && path[0] ? path : "(unnamed)",
	    sqlite3_errmsg(db));
}

void
results_load_error(sqlite3 *db, const char *id, char *buf, size_t len)
{
	int rc = sqlite3_errcode(db);
	char why[PATH_MAX + 128] = "";

	if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
		results_db_error(db, why, sizeof(why));
	snprintf(buf, len, "run %s cannot be read%s%s", id, why[0] ? ": " : "", why);
}

json_object *
results_load(sqlite3 *db, const char *id)
{
	sqlite3_stmt *st = NULL;
	json_object *doc = NULL;
	const char *status = NULL;

	if (sqlite3_prepare_v2(db, "SELECT r.doc, r.status, " WRITER_COLS ", json_object("
	    "'host', r.host, 'boot_id', r.boot_id, 'pid_ns', r.pid_ns, 'pid', r.pid,"
	    " 'pid_start', r.pid_start, 'heartbeat_ns', r.heartbeat_ns), r.started_ns"
	    " FROM runs r WHERE r.id = ?", -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) == SQLITE_ROW) {
		struct run_writer w;

		doc = json_tokener_parse((const char *)sqlite3_column_text(st, 0));
		row_writer(st, 2, &w);
		if (doc) {
			status = live_status(db, id, (const char *)sqlite3_column_text(st, 1), &w);
			json_object_object_add(doc, "writer", json_tokener_parse(
			    (const char *)sqlite3_column_text(st, 8)));
		}
		if (doc)
			json_object_object_add(doc, "status", json_object_new_string(status));
		/* a run stored before started_ns (0.1) has it in its row only */
		if (doc && !json_object_object_get_ex(doc, "started_ns", NULL))
			json_object_object_add(doc, "started_ns",
			    json_object_new_int64(sqlite3_column_int64(st, 9)));
	}
	sqlite3_finalize(st);
	if (doc && (load_phases(db, id, doc) < 0 || load_nodes(db, id, doc) < 0)) {
		json_object_put(doc);
		doc = NULL;
	}
	rundoc_finite(doc);	/* stored before bench made them null */
	return doc;
}
