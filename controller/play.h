/* Plays (controller/play.c loads, play_run.c runs): an XML file, validated
 * against ansible-like-plays/play.rng, that targets a node set and runs
 * ordered steps -- apply, verify, rollback, bench, compare, canary, health,
 * report, score --
 * in rolling batches with a failure threshold. */
#ifndef KNOB_PLAY_H
#define KNOB_PLAY_H

#include "knobctl.h"

enum pstep_kind { PS_APPLY, PS_VERIFY, PS_ROLLBACK, PS_BENCH, PS_COMPARE, PS_CANARY, PS_SCORE, PS_REPORT, PS_HEALTH };

struct pstep {
	int kind;		/* enum pstep_kind */
	int line;
	char *name;		/* name="..." or the element's name */
	int cont;		/* on-failure="continue" */
	char *profile;		/* apply, verify, canary; compare's B */
	char *profile_a;	/* compare's A ("" = untuned: rolled back) */
	char *label_a, *label_b;
	int check;		/* apply check="yes" */
	char *canary;		/* "2" or "5%" */
	char *file;		/* report: the HTML file */
	char *nodes;		/* nodes="...": this step on these of the play's nodes ("" all) */
	char *tune_nodes;	/* compare / canary tune-nodes="...": profiles go here ("" = nodes) */
	struct strvec args;	/* bench: "bench" + options + KIND; health: "sweep" + options */
	unsigned repeat;	/* bench: its runs per point (1 when not given) */
	struct pstep *sub;	/* compare, canary: the nested benches */
	size_t nsub;
};

#define PLAY_MAX	(4u << 20)	/* the largest play file */
#define PLAY_STOP_WAIT_S	10	/* --stop-wait's default (seconds) */

struct play {
	char *path, *name, *description;
	char *text;		/* the file's content, as parsed */
	size_t len;
	char sha256[65];	/* of text */
	struct strvec vars;	/* the -e NAME=VALUE given, each VALUE expanded */
	struct strvec unused;	/* the -e NAME=VALUE no <var> and no ${NAME} has */
	char *nodes;		/* nodes="..." ("" none) */
	char *serial;		/* "", "4" or "25%" */
	char *max_fail;		/* "", "1" or "10%" */
	int keep;		/* keep="yes": no rollback when the play stops */
	struct pstep *steps;
	size_t nsteps;
};

/* Load and check a play; vars are the -e NAME=VALUE overrides (of a name
 * given twice, the later wins; what ${NAME} means where: play_vars.h).  NULL on error with every problem as
 * "file:line: message" in errs. */
struct play *play_load(struct ctl *ctl, const char *path, const struct strvec *vars,
    struct strvec *errs);
void play_free(struct play *pl);
/* "4" or "25%" of n (at least 1 for a percentage of a non-empty set);
 * -1 when s is malformed. */
long play_count(const char *s, size_t n);
/* Do nfailed of n nodes exceed max-fail s ("" 0, "N", or "P%": more than
 * P% of n, exactly: nfailed * 100 > P * n)?  s is well formed. */
int play_exceeds(const char *s, size_t nfailed, size_t n);

/* Run (or with check, plan) the play on nodes, before[i] the profile
 * node i had active when the play started ("" none or unknown: what its
 * rollbacks restore); returns the exit status. */
int play_run(struct ctl *ctl, struct play *pl, const struct strvec *nodes,
    const struct strvec *before, int check);

#endif
