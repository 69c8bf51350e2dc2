/* Results store (controller/results.c): SQLite on the head node, a
 * versioned schema with migrations, runs written phase by phase. */
#ifndef KNOB_RESULTS_H
#define KNOB_RESULTS_H

#include <stdint.h>
#include <json-c/json.h>
#include <sqlite3.h>

#include "knobctl.h"

/* A component's schema: steps[v] takes the schema from version v to v + 1.
 * component NULL is the core (PRAGMA user_version); any other name keeps
 * its version in the schema_versions table, so another subsystem (health
 * sweeps) can keep its own tables in the same file:
 *
 *	static const char *const steps[] = { "CREATE TABLE sweeps (...);" };
 *	static const struct results_schema s = { "health", steps, 1 };
 *	sqlite3 *db = results_open(ctl);  ...  results_migrate(db, &s, err, len);
 *
 * Each step runs in its own transaction; steps are never edited once
 * shipped, only appended. */
struct results_schema {
	const char *component;
	const char *const *steps;
	size_t nsteps;
};
/* Bring s up to date: a current file is only read, the write lock is taken
 * for a step that is due.  0, or -1 with the reason in err (also when the
 * file is newer than the code, or a step is due and the file cannot be
 * written: its path named). */
int results_migrate(sqlite3 *db, const struct results_schema *s, char *err, size_t errlen);

const char *results_db_path(struct ctl *ctl, char *buf, size_t len);
/* DIR/name, where DIR holds the results database (the ticket cache, the
 * connection holder's socket). */
void results_side_path(struct ctl *ctl, const char *name, char *buf, size_t len);
/* mkdir -p of path's parent directory (0755). */
void results_mkparent(const char *path);
/* Open (creating or migrating the core schema); NULL with a message on stderr. */
sqlite3 *results_open(struct ctl *ctl);
/* The same for a path; NULL with the reason in err. */
sqlite3 *results_open_path(const char *path, char *err, size_t errlen);
/* Open the database at path, which must be there, for reading: migrated
 * when this user can write it, else read-only (a due migration is then an
 * error naming the file); NULL with the reason in err. */
sqlite3 *results_open_read(const char *path, char *err, size_t errlen);
/* results_open of a database that must be there already (read commands),
 * through results_open_read; NULL with a message naming the path (the
 * read commands then exit 2). */
sqlite3 *results_open_existing(struct ctl *ctl);

/* A run as it goes: its row and node records (status "running"), each
 * finished phase (seq from 1) in its own transaction, the final status of
 * doc.  0 or -1 (logged). */
int results_run_begin(sqlite3 *db, json_object *doc);
int results_phase_add(sqlite3 *db, const char *run_id, int64_t seq, json_object *phase);
int results_run_end(sqlite3 *db, json_object *doc);
/* All three at once for a finished document. */
int results_store(sqlite3 *db, json_object *doc);

/* Who writes a run, as its row records it (controller/runlive.c). */
struct run_writer {
	int64_t pid, pid_start, heartbeat_ns;	/* pid_start: ticks since boot, -1 unknown */
	char host[256], boot_id[64], pid_ns[64];
};
#define RESULTS_HEARTBEAT_S	10	/* a running knobctl refreshes its run's heartbeat */
#define RESULTS_STALE_S		120	/* a heartbeat older than this: the writer is gone */
/* This process as a run's writer. */
void runlive_self(struct run_writer *w);
/* 1 when the writer of a "running" run is gone: seen gone (same boot and
 * pid namespace: no process with that pid and start time), else its
 * heartbeat is older than RESULTS_STALE_S at now_ns.  0 otherwise. */
int runlive_gone(const struct run_writer *w, int64_t now_ns);
/* A thread that refreshes run_id's heartbeat in the database at dbpath
 * (its own connection) every interval_s seconds (RESULTS_HEARTBEAT_S for
 * a run) until stopped; NULL (logged) when it cannot. */
struct results_hb *results_heartbeat_start(const char *dbpath, const char *run_id,
    int interval_s);
void results_heartbeat_stop(struct results_hb *hb);

/* One line of `results list`. */
struct run_row {
	char *id, *label, *profile, *profile_hash, *nodeset, *status, *command, *play, *kinds;
	int64_t started_ns, ended_ns, phases;
};
/* Every run in true time order (start in ns, then insertion order);
 * a "running" run whose knobctl is gone reads "incomplete". 0, or -1 when
 * they cannot all be read (SQLite's reason on db; *out NULL, none kept). */
int results_runs(sqlite3 *db, struct run_row **out, size_t *n);
void results_runs_free(struct run_row *r, size_t n);
/* A run id from "ID", an unambiguous prefix (not empty), "latest" or "latest~N";
 * *id malloc'd.  0, or -1 with the reason in err. */
int results_resolve(sqlite3 *db, const char *spec, char **id, char *err, size_t errlen);
/* The run document as bench_run made it (phases, node_info); NULL if
 * unknown, or when its rows cannot all be read (a malformed page): a part
 * of a run is not given as the run. */
json_object *results_load(sqlite3 *db, const char *id);
/* "results database PATH: SQLite's last error on db" into buf. */
void results_db_error(sqlite3 *db, char *buf, size_t len);
/* "run ID cannot be read" after results_load gave NULL, with
 * results_db_error when SQLite had an error, into buf. */
void results_load_error(sqlite3 *db, const char *id, char *buf, size_t len);

/* results compare of two run documents: {"points":[...], "only_in_a",
 * "only_in_b", "unlike", each run's nodeset, dir and status (a_status,
 * b_status), "placement_differs"};
 * NULL with the reason in err when points differ in their parameters or
 * node count, or the runs in their node sets or directories, and force is
 * 0.  Caller puts it. */
json_object *results_compare_doc(json_object *a, json_object *b, int force, char *err,
    size_t errlen);
/* Holm–Bonferroni over the points of n compares taken as one family (a
 * play step's compares; NULL entries skipped): each point with Welch's p
 * gets p_adj and its verdict from it.  results_compare_doc does this for
 * its own points. */
void results_compare_holm(json_object *const *cmps, size_t n);
/* The text of key ("params.iodepth", "nodes") in phase record ph: a
 * string as it is, other values as compact JSON ("[\"-t\",\"4k\"]"),
 * "not recorded" when absent. */
const char *results_field_text(json_object *ph, const char *key);
/* The compare table for people. */
void results_print_compare(FILE *f, json_object *cmp, int decimal);
/* One side (pre "a" or "b") of a compare row into buf: "1.2 ± 0.1" in the
 * row's unit, the mean alone without a spread (a_sd null), "-" without a
 * figure (a_mean null). */
void results_compare_side(char *buf, size_t len, json_object *row, const char *pre,
    int decimal);
/* Why the compare cmp's run A (s 0) or B (s 1) is in doubt when its status
 * is not ok (running, incomplete, failed ...) into buf: 0, or -1 when it
 * is ok. */
int results_compare_status_text(char *buf, size_t len, json_object *cmp, int s);

/* The HTML report of n run documents on f (controller/report.c); 0 or -1. */
int report_write(FILE *f, json_object *const *docs, size_t n, int decimal);
/* report_write into the file path, all or nothing; 0 or -errno. */
int report_save(const char *path, json_object *const *docs, size_t n, int decimal);

#endif
