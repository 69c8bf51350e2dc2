/* Health checks of knobd (knobctl sweep).
 *
 * h_health hands a HealthRequest to a sweep worker, which starts every check
 * on its own worker thread with its own deadline and waits for them.  These
 * are threads of their own (agent_spawn), not the shared pool's, which a
 * check waiting on a dead mount must not hold; they are bounded instead by
 * HEALTH_MAX_SWEEPS and HEALTH_MAX_THREADS ("agent busy" past them).  A
 * check that misses its deadline is reported HEALTH_TIMEOUT and abandoned:
 * its thread finishes on its own and its result is dropped.
 *
 * Nothing in a check touches a mount point from an agent thread.  Mount
 * probes (statfs, stat, create, unlink) run in a child process; a child that
 * does not answer in time is kept in health_state.stuck and its mount is
 * HEALTH_HUNG.  While it is still stuck, later sweeps report
 * "hung (since T)" and start no new probe on that mount (the same mount ID
 * in /proc/self/mountinfo: one mounted there since, after a lazy unmount
 * of the dead one, is probed afresh); the children are killed when the
 * agent stops.
 *
 * Counters that must not grow between sweeps (NIC errors and drops, MCE and
 * EDAC counts) are kept in health_state.counters, read from
 * STATE_DIR/health-counters.json at the first use after start and written
 * back after every check that changes them.  A file that is there but
 * cannot be used (not one JSON object) is moved aside to PATH.corrupt and
 * the checks of that sweep that lost their previous value say "counters
 * baseline reset" (warn); the next sweep compares with the new baseline.  When that write fails (the
 * state directory full or read-only) the checks still compare with the copy
 * in memory, and say so: warn at least, "counters not saved: ...". */
#ifndef KNOB_HEALTH_H
#define KNOB_HEALTH_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "agent.h"
#include "knob.pb-c.h"

#define HEALTH_COUNTERS_NAME "health-counters.json"
#define HEALTH_COUNTERS_MAX (16u << 20)	/* a larger counters file is corrupt */
#define HEALTH_CHECK_TIMEOUT_MS 10000
#define HEALTH_MOUNT_TIMEOUT_MS 5000
/* mounts or NICs one request may ask about (a thread each, and a child
 * process for a mount) */
#define HEALTH_MAX_ITEMS 1024
#define HEALTH_REASON_MAX 512
/* Sweeps of one agent at once, counted from the request until the last of
 * their threads ends (an abandoned check's too), and their threads (a
 * sweep's worker and one per check): past either a request is answered
 * "busy" (EAGAIN) at once.  The threads' bound lets one request of
 * HEALTH_MAX_ITEMS mounts and NICs each through. */
#define HEALTH_MAX_SWEEPS 8
#define HEALTH_MAX_THREADS (2 * HEALTH_MAX_ITEMS + 64)
/* a counters note: a failed save and a reset, each naming a path */
#define HEALTH_NOTE_MAX (2 * PATH_MAX + 1024)

/* The health states, short */
#define ST_OK KNOB__HEALTH_STATE__HEALTH_OK
#define ST_WARN KNOB__HEALTH_STATE__HEALTH_WARN
#define ST_FAIL KNOB__HEALTH_STATE__HEALTH_FAIL
#define ST_SKIPPED KNOB__HEALTH_STATE__HEALTH_SKIPPED
#define ST_HUNG KNOB__HEALTH_STATE__HEALTH_HUNG

/* A mount probe that missed its deadline and is still running. */
struct hprobe {
	struct hprobe *next;
	char path[PATH_MAX];
	pid_t pid;
	int fd;			/* read end of the child's report pipe */
	uint64_t since_ns;	/* CLOCK_REALTIME when the probe started */
	char step[16];		/* what it was waiting for */
	long mnt_id;		/* mountinfo ID of the mount probed (-1 unknown) */
	int replaced;		/* another mount is at path now: it holds no probe back */
};

struct health_state {
	pthread_mutex_t mu;	/* guards stuck, counters and the counters file */
	struct hprobe *stuck;
	char counters_path[PATH_MAX];
	json_object *counters;	/* the counters; NULL until the first use reads the file */
	char *reset_note;	/* the file was corrupt: why, or NULL (heap: knob-sim has
				 * thousands of agents, few with a corrupt file) */
	int reset_said;		/* a check of a running sweep gave reset_note */
	uint32_t test_probe_rate_iops;	/* $KNOB_TEST_PROBE_RATE_IOPS with --test-hooks */
	uint64_t probe_since_ns;	/* CLOCK_REALTIME start of the running probe, 0 none */
	int probe_late;		/* its sweep abandoned it: past its deadline (hung) */
	pthread_mutex_t run_mu;	/* guards sweeps and threads (never held long: the
				 * loop takes it; mu may wait on a file's fsync) */
	unsigned sweeps, threads;	/* running, see HEALTH_MAX_SWEEPS */
};

/* The findings of one check: one or more HealthCheck entries. */
struct hout {
	Knob__HealthCheck **v;
	size_t n;
};

/* Append a finding; reason is printf-formatted.  Returns the new entry. */
Knob__HealthCheck *hout_add(struct hout *o, const char *check, const char *target, int state,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void hout_free(struct hout *o);
/* Free one HealthCheck made by hout_add. */
void health_check_free(Knob__HealthCheck *c);

/* One kind of check.  run() fills out; arg is an index into the request
 * (a mount, a NIC) or unused. */
struct hcheck_def {
	const char *name;
	void (*run)(struct agent *a, const Knob__HealthRequest *req, size_t arg, struct hout *out);
};

/* Mounts (health_mount.c): presence, type, options, probe, free space. */
void health_mount(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out);
/* Kill and reap the stuck probes (agent shutdown). */
void health_mount_fini(struct health_state *hs);

/* Node checks (health_node.c). */
void health_nic(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out);
void health_hw(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out);
void health_errors(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out);
void health_load(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out);
void health_services(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out);
void health_blockdevs(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out);
void health_drift(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out);
void health_probe(struct agent *a, const Knob__HealthRequest *req, size_t idx, struct hout *out);
/* The running probe's sweep abandoned it at its deadline: from now on a
 * sweep that finds it running reports it hung (before, skipped). */
void health_probe_late(struct agent *a);

/* The counters (health.c), with hs->mu held: the copy in memory, owned by
 * hs (read from the file at the first use: an empty object when absent or
 * corrupt, see health_counters_reset_note); save it to the file atomically
 * (0, or -1 with "counters not saved: PATH: ERROR; compared with this
 * agent's memory only" in note; note "" on success); and swap one counter: store now under key, return 1 with
 * *prev when it had a value. */
json_object *health_counters(struct health_state *hs);
int health_counters_save(struct health_state *hs, char *note, size_t len);
int health_counter_swap(json_object *o, const char *key, uint64_t now, uint64_t *prev);
/* A counters file found corrupt (or unreadable) at the first use is moved
 * aside to PATH.corrupt, logged as "PATH:LINE: why", and the baseline
 * starts empty; a check whose counter then has no previous value appends
 * this note to note with hs->mu held ("counters baseline reset: PATH:LINE:
 * why (kept as PATH.corrupt); growth since the last sweep not known"), and
 * health_counters_note makes its finding warn.  Nothing when the file was
 * good or absent, nor once the sweep that gave the note is over
 * (health_counters_reset_over): the next sweep has the new baseline, and
 * a counter new to it (another NIC) is a first value like any other. */
void health_counters_reset_note(struct health_state *hs, char *note, size_t len);
/* A sweep's end: the reset note, when a check gave it, is dropped. */
void health_counters_reset_over(struct health_state *hs);
/* A save's note on the finding c made from the counters: c at least warn,
 * the note after its reason.  Nothing when note is "". */
void health_counters_note(Knob__HealthCheck *c, const char *note);
/* ns since the epoch as "2026-12-01T09:41:02Z" into buf. */
void health_fmt_time(uint64_t ns, char *buf, size_t len);

#endif
