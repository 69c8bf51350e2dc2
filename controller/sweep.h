/* knobctl sweep: health sweeps of the fleet.
 *
 *   sweep_file.c     the sweep file (XML, sweep/sweep.rng): expectations per
 *                    group with defaults, resolved into one HealthRequest
 *                    per node
 *   sweep_outlier.c  the fleet-relative rule: a rate more than K median
 *                    absolute deviations below the median is slow (also
 *                    used by knobctl bench to name stragglers)
 *   sweep_prom.c     node_exporter text-file output
 *   sweep_slurm.c    drain/resume through scontrol, hysteresis and history
 *                    in the results database
 *   cmd_sweep.c      the subcommand */
#ifndef KNOB_SWEEP_H
#define KNOB_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

#include "knob.pb-c.h"
#include "knobctl.h"
#include "util.h"

/* ------------------------------------------------------------ file */
struct sweep_attr {
	char *name, *value;
};

/* One expectation element (<mount>, <nic>, ...) with its origin. */
struct profile;			/* common/profile.h */

struct sweep_item {
	char *kind;		/* element name */
	char *key;		/* kind + identity ("mount /mnt/lustre"): later ones override */
	struct sweep_attr *a;
	size_t na;
	char *file;
	int line;
	struct profile *prof;	/* <profile>: loaded once, at sweep_file_load */
};

struct scope_set;		/* sweep_file.c */

struct sweep_scope {
	char *nodes;		/* node-set expression; NULL for <defaults> */
	int line;		/* of its element */
	struct sweep_item *items;
	size_t n;
	struct scope_set *set;	/* nodes expanded (once, on first use) and hashed */
};

/* knobctl sweep's exit status when the sweep itself failed (the
 * Prometheus file, the results database, scontrol): 1 means unhealthy or
 * unreachable nodes, a result knob-sweep.service counts as success. */
#define SWEEP_EXIT_ERROR 3

/* Fleet-wide settings of the controller. */
struct sweep_policy {
	double slow_mads;	/* K: below median - K * MAD is slow (default 3) */
	double slow_min_gap;	/* ... and at least this fraction below the median (0.2) */
	unsigned drain_after;	/* consecutive failing sweeps before a drain (default 1) */
	unsigned resume_after;	/* consecutive passing sweeps before a resume (default 1) */
};

struct sweep_file {
	char *path;
	struct sweep_scope *scopes;	/* defaults first, then groups in file order */
	size_t n;
	struct sweep_policy pol;
};

/* knobctl sweep's checks of its options, their values and the sweep file,
 * on argv (argv[0] "sweep"), nothing run: 0, or -1 after printing why on
 * stderr (a play's <health> step at load). */
int sweep_check_argv(struct ctl *ctl, int argc, char **argv);
/* Default policy (used without a sweep file too). */
void sweep_policy_default(struct sweep_policy *p);
/* Load and validate a sweep file, each <profile> loaded once here.  NULL
 * on error with every "file:line: message" in errs (a <profile> that does
 * not load too, after the profile's own errors). */
struct sweep_file *sweep_file_load(const char *path, struct strvec *errs);
void sweep_file_free(struct sweep_file *sf);
/* Every <group nodes="..."> against the inventory: one that does not
 * expand, or names no node, is an error ("file:line: ...").  0 or -1. */
int sweep_file_check_nodes(struct ctl *ctl, const struct sweep_file *sf, struct strvec *errs);

/* Controller-side limits of one node. */
struct sweep_limits {
	double clock_max_s;	/* clock offset threshold (default 1 s) */
};

/* The request for node (defaults, then every group that contains it;
 * later items override earlier ones of the same key).  Each group's node
 * set is expanded once, on the first call (or sweep_file_check_nodes), and
 * kept in the file's scopes: calls on one file are not thread-safe.  probe_dir, when not
 * NULL, adds the probe (--probe).  Free with sweep_request_free.  0, or -1
 * with "file:line: message" in errs. */
int sweep_request_for(struct ctl *ctl, const struct sweep_file *sf, const char *node,
    const char *probe_dir, Knob__HealthRequest *req, struct sweep_limits *lim,
    struct strvec *errs);
void sweep_request_free(Knob__HealthRequest *req);

/* ------------------------------------------------------------ outliers */
/* Mark in slow[i] the values more than k MADs (scaled by 1.4826) below the
 * median of the other values and at least min_gap (a fraction) below it.
 * *median gets the median of all values.  Returns the number of slow
 * values; fewer than 3 values: 0. */
size_t outlier_slow(const double *v, size_t n, double k, double min_gap, int *slow,
    double *median);
/* knobctl bench: print "straggler: NODE RATE (median M, K MADs below)"
 * under a phase's table from its per-node results in the phase JSON. */
void sweep_print_stragglers(FILE *f, json_object *phase);

/* ------------------------------------------------------------ results */
/* One finding of one node, as printed, stored and exported. */
struct sweep_check {
	char *check, *target, *reason;
	int state;		/* enum sweep_state */
	uint64_t since_ns;
	int cause;		/* enum sweep_cause (0: the node's) */
};

/* Whose failure a bad check is.  Only SC_NODE counts toward drain_after;
 * a node whose only bad checks are knob's keeps its counters that sweep
 * and is never drained or resumed on them. */
enum sweep_cause {
	SC_NODE,		/* the node's health */
	SC_KNOB,		/* not told apart from knob's side: unreachable agent,
				 * clock judged with fewer than 3 nodes answering */
	SC_CONTROLLER,		/* the controller's own: the agent refused our
				 * credentials (every node so: exit 3) */
	SC_AGENT,		/* knob's agent answered with an Error instead of a
				 * health result (busy, shutting down, a request it
				 * refuses or cannot run), or took the request and
				 * dropped the connection (killed, crashed): it never
				 * checked the node */
};

enum sweep_state {
	SS_OK, SS_SKIPPED, SS_WARN, SS_SLOW, SS_TIMEOUT, SS_FAIL, SS_HUNG, SS_UNREACHABLE,
	SS__COUNT
};
const char *sweep_state_name(int st);
/* A state that makes the exit status 1 (warn and worse). */
int sweep_state_bad(int st);
/* A failing state (fail, timeout, hung, slow, unreachable; not warn); it
 * counts toward a drain only on a check of cause SC_NODE. */
int sweep_state_failing(int st);

/* 1 when c counts toward its node's drain: failing, and the node's own
 * (cause SC_NODE); --json's "counts_toward_drain". */
int sweep_check_counts(const struct sweep_check *c);

struct sweep_node {
	const char *name;
	struct sweep_check *c;
	size_t n;
	int worst;		/* enum sweep_state */
};

/* 1 when a check of sn is failing whose cause is the node's (knob_side 0)
 * or knob's side (knob_side 1: any cause but SC_NODE). */
int sweep_node_failing(const struct sweep_node *sn, int knob_side);

struct sweep_run {
	struct sweep_node *nodes;
	size_t n;
	double duration_s;
	uint64_t end_real_ns;
};

/* Write the node_exporter text file atomically (temp file + rename). 0 or -1. */
int sweep_prom_write(const char *path, const struct sweep_run *run, char *err, size_t errlen);

/* Hysteresis, history and Slurm (sweep_slurm.c). */
struct sweep_drain_opts {
	int drain;		/* --drain: act on Slurm */
	const char *scontrol;	/* command (default "scontrol") */
};
/* Record the sweep in the results database, update every node's
 * consecutive fail/pass counts, and with opts->drain drain the nodes that
 * reached drain_after failures (one scontrol update) and resume the ones
 * knob drained that reached resume_after passes and whose Slurm reason
 * still starts with "knob:".  All of it in one write transaction: a second
 * sweep waits for it and counts on from what it wrote.  Prints what it
 * did.  0, or -1 when the database or scontrol failed. */
int sweep_record(struct ctl *ctl, const struct sweep_run *run, const struct sweep_policy *pol,
    const struct sweep_drain_opts *opts, FILE *out);
/* Bytes of one scontrol NodeName list at most: scontrol gets it as one
 * argument, and exec refuses an argument past 128 KiB (MAX_ARG_STRLEN,
 * E2BIG: nothing drained) -- about 13,000 names. */
#define SWEEP_SLURM_LIST_MAX (64u << 10)
/* How many of names, from the first, go into one comma-joined scontrol
 * list of at most max bytes (at least one when n > 0, even a longer name);
 * the list, malloc'd, into *list. */
size_t sweep_slurm_list(const char *const *names, size_t n, size_t max, char **list);
/* knobctl sweep history NODE. */
int sweep_history(struct ctl *ctl, const char *node, int limit);

#endif
