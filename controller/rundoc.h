/* The run document (controller/rundoc.c): one table of the scalar fields
 * of a phase record.  The phase JSON writer (bench_ctl.c), the SQLite binds
 * (results.c) and the table printer all walk this table, so a field is
 * added in one place.  Also the unit family for throughput (--units) and
 * the metric each kind is shown in: bytes/s for seq-*, IOPS for rand-*,
 * ops/s for md-*. */
#ifndef KNOB_RUNDOC_H
#define KNOB_RUNDOC_H

#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

#include "json.h"
#include "knob.pb-c.h"

enum rf_type { RF_INT, RF_REAL, RF_TEXT, RF_BOOL };
/* how the table prints a field */
enum rf_fmt { RFF_NONE, RFF_STR, RFF_INT, RFF_RATE, RFF_NS, RFF_SECS, RFF_SIZE, RFF_BOOL };

/* A phase record's scalar fields, as the engine produces them. */
struct phase_rec {
	const char *phase_id, *kind, *status, *unit, *dir;
	const char *workload;	/* the request's parameters, before per-thread-count values */
	const char *buffer_pages;	/* "huge" or "4k": the engine's I/O buffers */
	const char *cpu_bind;		/* what every node said: "core", "none" or
					 * "launcher" (ior/mdtest), else "mixed" */
	int64_t repeat, threads, nodes, bytes, ops;
	double elapsed_s, rate, ops_rate, first_done_rate, last_done_rate, start_spread_s, cpu_s;
	int64_t lat_count, p50_ns, p99_ns, p999_ns;
	int64_t block_size, file_size, stonewall_s, files_per_dir, md_files, write_size;
	int64_t reader_shift, stripe_count, stripe_size;
	int shared, direct, fsync, drop_caches;
};

#define RP_DIRECT	2	/* rundoc_field.param */
#define RP_PLACE	3	/* rundoc_field.param: where the threads ran (the node
				 * count): part of a point, not of a workload */

struct rundoc_field {
	const char *key;	/* JSON key; "obj.key" inside a nested object */
	const char *column;	/* column of the phases table */
	int type;		/* enum rf_type */
	size_t off;		/* in struct phase_rec */
	const char *header;	/* table column, NULL: not in the table */
	int fmt;		/* enum rf_fmt */
	int param;		/* a parameter of the point: compare matches on it;
				 * RP_DIRECT: only when a point is O_DIRECT;
				 * RP_PLACE: the placement.  A key of "params"
				 * that is not in this table (the measurement
				 * options bench_report.c records, an external
				 * tool's arguments) is part of the point too */
};
extern const struct rundoc_field rundoc_phase_fields[];
extern const size_t rundoc_nphase_fields;

/* New JSON object for a phase record (caller puts it). */
json_object *rundoc_phase_json(const struct phase_rec *r);
/* The JSON value of field f in phase ph (borrowed), NULL when absent. */
json_object *rundoc_value(json_object *ph, const struct rundoc_field *f);
/* The JSON value at key ("params.iodepth", "nodes") in phase ph (borrowed),
 * NULL when absent. */
json_object *rundoc_value_at(json_object *ph, const char *key);
/* Every number in o that is not finite (an external tool's "inf" rate)
 * made null, at any depth: JSON has no inf or NaN, and json-c would print
 * Infinity and NaN, which JSON parsers refuse. */
void rundoc_finite(json_object *o);
/* The table's field with JSON key key, NULL when the table has none. */
const struct rundoc_field *rundoc_field(const char *key);
/* The merged latency histogram of res[0..n) (NULL entries skipped), sparse:
 * {"idx":[..],"count":[..],"total":N,"min_ns":..,"max_ns":..}. */
json_object *rundoc_hist_json(const Knob__PhaseResult *const *res, size_t n);

/* What a kind is measured in. */
enum metric { M_BW, M_IOPS, M_OPS };
int rundoc_metric_of(const char *kind);
/* The figure a phase is judged by (bytes/s, IOPS or ops/s); a failed phase
 * has none, nor one whose figure is not a finite number above 0: returns
 * -1 then. */
int rundoc_metric(json_object *ph, double *out);
/* "1.23 GiB/s" (decimal: "1.32 GB/s"), "12345 IOPS", "12345 ops/s". */
void rundoc_fmt_rate(char *buf, size_t len, double v, int metric, int decimal);
/* The unit a throughput table column is written in, for value v. */
const char *rundoc_unit_name(int metric, int decimal);
/* Scale v (bytes/s, IOPS or ops/s) into the unit rundoc_unit_name names
 * (MiB/s or MB/s for bandwidth). */
double rundoc_scale(double v, int metric, int decimal);

/* Print a run document as the bench table: one line per point (mean ± sd
 * over repeats), with block size, size, direct, fsync and shared, then the
 * peak and sustained table. */
void rundoc_print(FILE *f, json_object *doc, int decimal);
/* The peak and sustained table of a run, and under it the thread counts
 * each workload's peak leaves out (rundoc_left_out). */
void rundoc_print_peaks(FILE *f, json_object *doc, int decimal);
struct pointset;
/* The thread counts of the workload whose first point is ps->p[first]
 * that have no figure a peak can take (each repeat failed or degraded,
 * none on other nodes with one), and why: "8 threads (degraded) not in
 * the peak and sustained: ..." (malloc'd); NULL when there are none. */
char *rundoc_left_out(const struct pointset *ps, size_t first);

/* Print s padded to width columns (UTF-8 aware), left or right aligned. */
void rundoc_pad(FILE *f, const char *s, int width, int left);

#endif
