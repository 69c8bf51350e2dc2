/* Tuning internals of knobd: the driver interface, the journal, and the
 * transaction entry points (also called in-process by tests/check_tune.c).
 *
 * Journal: STATE_DIR/tune-journal.json, written with write_file_atomic
 * (tmp, fsync, rename, fsync dir).  It holds
 *   - "active": the active profile name;
 *   - "originals": the value of every target before knob first changed it.
 *     A later apply (of any profile) only adds targets not journaled yet, so
 *     the first originals are kept and a tuned value is never recorded as an
 *     original;
 *   - "pending": targets an apply set but that only take effect after a
 *     restart (gpfs: mmchconfig accepted the value, mmdiag --config still
 *     shows the old one until mmfsd restarts).  Each entry has "value", the
 *     canonical value that was set, and "was", the live value when it was
 *     set.  Verify reports such a target as pending-restart (not drift)
 *     while its live value is still "was" and the profile still wants
 *     "value"; a mark is dropped once the live value has moved off "was"
 *     (the restart happened, or someone changed it), when an apply writes
 *     the target with immediate effect or reverts it, and by rollback;
 *   - "txn": present only while an apply is writing.  Each entry is a target
 *     the transaction may touch, with its value before the transaction and
 *     whether it is a new original.  It is on disk before the first write.
 * Crash recovery (tune_init): an agent that finds "txn" undoes it: every
 * target of the transaction is written back to its pre-transaction value
 * (which for targets knob had never touched is the true original), the
 * transaction is dropped and the previously active profile stays active.
 * Undo, not finish: the controller that asked for the apply got no answer, so
 * leaving the node as it was is the only state it can reason about. */
#ifndef KNOB_TUNE_H
#define KNOB_TUNE_H

#include <pthread.h>
#include <stddef.h>

#include "agent.h"
#include "knob.pb-c.h"
#include "normalize.h"
#include "util.h"

#define TUNE_PENDING_RESTART 1	/* write(): accepted, takes effect after a restart */
#define TUNE_MSG_MAX 512
#define TUNE_JOURNAL_NAME "tune-journal.json"
#define TUNE_CMD_TIMEOUT_MS 30000	/* default for mmchconfig/mmdiag/lctl */

/* One driver (one file each: agent/drv_*.c).  Targets are strings: a
 * sysroot-relative absolute path (sysfs, sysctl, lustre), a device name
 * (blockdev), an interface name (net) or the key itself (gpfs, nfsd). */
struct tune_driver {
	const char *name;
	/* Expand s into concrete targets (appended to out).  0 (possibly none:
	 * unsupported on this node) or -errno with msg. */
	int (*resolve)(struct agent *a, const Knob__Setting *s, struct strvec *out,
	    char *msg, size_t msglen);
	/* Read the current raw value of target.  0 or -errno with msg. */
	int (*read)(struct agent *a, const Knob__Setting *s, const char *target,
	    char *buf, size_t len, char *msg, size_t msglen);
	/* Canonical form of a raw or wanted value.  0 or -1 with msg. */
	int (*normalise)(const Knob__Setting *s, const char *raw, char *out, size_t outlen,
	    char *msg, size_t msglen);
	/* Write a canonical value.  0, TUNE_PENDING_RESTART, or -errno with msg. */
	int (*write)(struct agent *a, const Knob__Setting *s, const char *target,
	    const char *value, char *msg, size_t msglen);
	/* Put back an original (rollback / undo); NULL means write(). */
	int (*restore)(struct agent *a, const Knob__Setting *s, const char *target,
	    const char *value, char *msg, size_t msglen);
	/* Human name of one target for messages, e.g. "loop3 scheduler". */
	void (*describe)(const Knob__Setting *s, const char *target, char *buf, size_t len);
	/* What makes a pending-restart value live, e.g. "takes effect when
	 * mmfsd restarts"; NULL means "takes effect after a restart". */
	const char *restart_note;
};

extern const struct tune_driver drv_sysfs, drv_sysctl, drv_blockdev, drv_lustre,
    drv_gpfs, drv_nfsd, drv_net;
const struct tune_driver *tune_driver_find(const char *name);
/* The default normaliser: norm_setting() of common/normalize.c. */
int tune_norm_default(const Knob__Setting *s, const char *raw, char *out, size_t outlen,
    char *msg, size_t msglen);
/* Default describe: the target itself, plus attr when there is one. */
void tune_describe_default(const Knob__Setting *s, const char *target, char *buf, size_t len);

/* Helpers shared by the file-based drivers (drivers.c). */
/* Glob pattern (absolute, not under the sysroot) below the sysroot; pushes
 * matches as sysroot-relative absolute paths.  0 or -errno. */
int tune_glob(struct agent *a, const char *pattern, struct strvec *out);
int tune_read_path(struct agent *a, const char *path, char *buf, size_t len,
    char *msg, size_t msglen);
int tune_write_path(struct agent *a, const char *path, const char *value,
    char *msg, size_t msglen);
/* Driver read/write ops for drivers whose targets are plain files under
 * the sysroot (sysfs, sysctl, nfsd, lustre). */
int tune_read_default(struct agent *a, const Knob__Setting *s, const char *target,
    char *buf, size_t len, char *msg, size_t msglen);
int tune_write_default(struct agent *a, const Knob__Setting *s, const char *target,
    const char *value, char *msg, size_t msglen);
/* Run argv[0] (already resolved) with a timeout; stdout into out (bounded),
 * stderr into err (bounded).  Returns the exit status (>= 0), or -ETIMEDOUT,
 * or -errno when it cannot run. */
int tune_run_cmd(char *const argv[], int timeout_ms, char *out, size_t outlen,
    char *err, size_t errlen);

/* ------------------------------------------------------------ journal */
struct jentry {
	char *driver, *key, *attr, *match, *target, *value;
	char *was;		/* pending: live value when set; NULL elsewhere */
	int persistent;
	int added;		/* txn: not journaled before this transaction */
};

struct journal {
	char active[256];	/* active profile, "" when none */
	struct jentry *orig;
	size_t norig;
	int in_txn;
	char txn_id[64];
	char txn_profile[256];
	struct jentry *txn;
	size_t ntxn;
	struct jentry *pend;	/* pending-restart marks (value = set, was = live) */
	size_t npend;
};

/* Load path into j (an absent file is an empty journal).  0 or -errno. */
int journal_load(const char *path, struct journal *j);
/* Write j atomically (or remove the file when j is empty).  0 or -errno. */
int journal_save(const char *path, const struct journal *j);
void journal_free(struct journal *j);
long journal_find(const struct jentry *v, size_t n, const char *driver,
    const char *target, const char *attr);
void journal_push(struct jentry **v, size_t *n, const struct jentry *e);
/* Remove (and free) entry k of v, keeping the order. */
void journal_remove(struct jentry *v, size_t *n, size_t k);
void jentry_clear(struct jentry *e);
/* Setting view of a journal entry (strings borrowed from e). */
void jentry_setting(const struct jentry *e, Knob__Setting *s);

/* ------------------------------------------------------------ state */
struct tune_state {
	pthread_mutex_t mu;	/* one transaction at a time; guards j */
	pthread_mutex_t amu;	/* guards active (read by the loop thread) */
	pthread_cond_t wcv;	/* workers == 0 */
	int workers;
	char active[2][256];	/* double buffer: the loop thread reads active[cur] */
	int cur;		/* __atomic */
	char journal_path[PATH_MAX];
	struct journal j;
	int cmd_timeout_ms;	/* external commands; $KNOB_CMD_TIMEOUT_MS at init */
};
/* Timeout for external commands of agent a. */
int tune_cmd_timeout(const struct agent *a);

/* Transactions (called under no lock; they take tune_state.mu).  The
 * results are allocated by these functions; free with tune_*_result_free. */
int tune_apply(struct agent *a, const Knob__ApplyRequest *req, Knob__ApplyResult *res);
int tune_verify(struct agent *a, const Knob__VerifyRequest *req, Knob__VerifyResult *res);
int tune_rollback(struct agent *a, Knob__RollbackResult *res);
void tune_apply_result_free(Knob__ApplyResult *res);
void tune_verify_result_free(Knob__VerifyResult *res);
void tune_rollback_result_free(Knob__RollbackResult *res);
const char *tune_key_state_name(int st);

#endif
