/* Tuning internals of knobd: the driver interface, the journal, and the
 * transaction entry points (also called in-process by tests/check_tune.c).
 *
 * Journal: STATE_DIR/tune-journal.json, written with write_file_atomic
 * (tmp, fsync, rename, fsync dir).  It holds
 *   - "active": the active profile name;
 *   - "originals": the value of every target before knob first changed it.
 *     A later apply (of any profile) only adds targets not journaled yet, so
 *     the first originals are kept and a tuned value is never recorded as an
 *     original.  A key that ends where it started is journaled too when
 *     the transaction wrote a key that moves it (nr_requests and the
 *     elevator's tunables, "iosched", when the scheduler was written,
 *     read_ahead_kb when a queue limit was, the MTUs of the devices
 *     stacked on an interface, "upper_mtu", and its IPv6 MTU, "ipv6_mtu",
 *     when its mtu was, one half of a sysctl pair when the other was):
 *     writing that key back moves it again.  "iosched", "upper_mtu" and
 *     "ipv6_mtu" are journal-only attributes, one value each that the
 *     driver reads and puts back as a whole;
 *   - "pending": targets an apply set but that only take effect after a
 *     restart (gpfs: mmchconfig accepted the value, mmdiag --config still
 *     shows the old one until mmfsd restarts).  Each entry has "value", the
 *     canonical value that was set, and "was", the live value when it was
 *     set.  Verify reports such a target as pending-restart (not drift)
 *     while its live value is still "was" and the profile still wants
 *     "value"; a mark is dropped once the live value has moved off "was"
 *     (the restart happened, or someone changed it), when an apply writes
 *     the target with immediate effect or reverts it, and by rollback;
 *     Each original also records "set", the value knob left there, so that
 *     rollback can tell a key someone changed since (changed-since), and
 *     "restoring" once a rollback has judged it (a killed rollback's coupled
 *     writes are not mistaken for someone's change by the next one).  A
 *     changed-since key that the rollback's own coupled write moves is
 *     written back to the value someone gave it.  An original (and a txn
 *     entry) also records "ident", what its target was when journaled
 *     (driver identity(); blockdev: "MAJ:MIN" plus the disk's wwid or
 *     serial): device names move at boot (the root disk becomes sdb), so
 *     rollback, a switch's previous keys and crash recovery write no
 *     original to a target whose identity reads another now, nor to a
 *     protected device (protect()) that a glob journaled, and the boot
 *     re-apply writes no profile value to a device named exactly whose
 *     identity reads another now; such keys fail (or are protected) and
 *     stay journaled.  An entry without "ident" (from before) is judged by
 *     the protect rule only;
 *   - "settings": the active profile's resolved settings (verify without a
 *     profile, the boot re-apply);
 *   - "sysroot": the --sysroot the targets are under.  An agent started
 *     with another one refuses the journal (tune_init): its originals are
 *     another tree's, and re-applying or rolling back would write them
 *     into this one (a journal without it, from before, is adopted);
 *   - "boot_id": the kernel's boot id (SYSROOT/proc/sys/kernel/random/boot_id)
 *     when the active profile was last written.  A start in the same boot
 *     (knobd restarted, not the node) does not re-apply: it counts the drift
 *     and says so; another id, or none (a journal from before), re-applies;
 *   - "txn": present only while an apply is writing.  Each entry is a target
 *     the transaction may touch (also the coupled attributes the kernel may
 *     move), with its value before the transaction and whether it is a new
 *     original.  It is on disk before the first write.
 * Every write pass (apply, revert, rollback, recovery) goes in the drivers'
 * write order (tune_driver.rank) and re-reads until the values hold,
 * TUNE_PASSES passes at most.
 * A rollback whose saves fail (a full disk) blanks the file's "active"
 * value in place (journal_clear_active), so that no start re-applies what
 * was rolled back; the file keeps every original, and the rollback is not
 * complete.
 * Crash recovery (tune_init): an agent that finds "txn" undoes it: every
 * target of the transaction is written back to its pre-transaction value
 * (which for targets knob had never touched is the true original), the
 * transaction is dropped and the previously active profile stays active.
 * Undo, not finish: the controller that asked for the apply got no answer, so
 * leaving the node as it was is the only state it can reason about.  Then,
 * unless --no-reapply, the active profile is applied again where live values
 * differ (sysfs does not survive a reboot). */
#ifndef KNOB_TUNE_H
#define KNOB_TUNE_H

#include <dirent.h>
#include <glob.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent.h"
#include "knob.pb-c.h"
#include "normalize.h"
#include "util.h"

#define TUNE_PENDING_RESTART 1	/* write(): accepted, takes effect after a restart */
#define TUNE_NOT_SETTABLE 2	/* read(): the node cannot have this set (msg says why) */
#define TUNE_LEFT_TO_COUPLED 3	/* restore(): not written, a coupled key's write sets
				 * it (msg says which) */
#define TUNE_PASSES 3		/* write passes until every key of a transaction holds */
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
	/* Read the current raw value of target.  0, TUNE_NOT_SETTABLE with msg
	 * (e.g. SMT control reads "notsupported"; once a transaction holds the
	 * target: not applicable now, e.g. its CPU went offline), or -errno
	 * with msg. */
	int (*read)(struct agent *a, const Knob__Setting *s, const char *target,
	    char *buf, size_t len, char *msg, size_t msglen);
	/* Canonical form of a raw or wanted value.  0 or -1 with msg. */
	int (*normalise)(const Knob__Setting *s, const char *raw, char *out, size_t outlen,
	    char *msg, size_t msglen);
	/* Write a canonical value.  0, TUNE_PENDING_RESTART, TUNE_NOT_SETTABLE
	 * with msg (not written and not applicable now: the key is unchanged,
	 * not journaled), or -errno with msg. */
	int (*write)(struct agent *a, const Knob__Setting *s, const char *target,
	    const char *value, char *msg, size_t msglen);
	/* Put back an original (rollback / undo); NULL means write().  May
	 * return TUNE_LEFT_TO_COUPLED: the re-read judges it after the
	 * coupled key's restore. */
	int (*restore)(struct agent *a, const Knob__Setting *s, const char *target,
	    const char *value, char *msg, size_t msglen);
	/* Human name of one target for messages, e.g. "loop3 scheduler". */
	void (*describe)(const Knob__Setting *s, const char *target, char *buf, size_t len);
	/* What makes a pending-restart value live, e.g. "takes effect when
	 * mmfsd restarts"; NULL means "takes effect after a restart". */
	const char *restart_note;
	/* Write order of s among the settings of one target: lower first, for
	 * apply and rollback alike (blockdev: scheduler before nr_requests
	 * before max_sectors_kb before read_ahead_kb).  A target with a key of
	 * negative rank is written before every other target (sysfs:
	 * cpu/smt/control, which takes CPUs offline).  NULL: all equal. */
	int (*rank)(const Knob__Setting *s);
	/* Attributes of the same target that the kernel may move when s is
	 * written (NULL-terminated; NULL: none).  Their originals are
	 * journaled too, so rollback brings them back.  The first read of one
	 * (and of a coupled_target()) is asked with an empty s->value: read()
	 * may answer TUNE_NOT_SETTABLE to journal nothing (gpfs: a configured
	 * value that is the live one; nfsd: even pools); later reads carry the
	 * value that read gave. */
	const char *const *(*coupled)(const Knob__Setting *s);
	/* Another target of this driver (same attr) that the kernel moves when
	 * target is written, or NULL (sysctl: the other half of a pair the
	 * kernel keeps mutually exclusive).  Followed like coupled(). */
	const char *(*coupled_target)(const char *target);
	/* Why coupled_target(t) is left alone too when t is changed since
	 * knob set it (rollback, a switch), for its message: "pool_threads
	 * left: threads was changed since knob set it; <this>".  NULL: the
	 * kernel keeps the two exclusive (sysctl: the restore would zero t). */
	const char *coupled_left;
	/* Would writing value to target fail?  0, or -errno with the reason
	 * (--check's would-fail; apply refuses before any write).  NULL: no
	 * prediction. */
	int (*check)(struct agent *a, const Knob__Setting *s, const char *target,
	    const char *value, char *msg, size_t msglen);
	/* (check() may ask tune_planned what the same transaction writes
	 * to another key first.) */
	/* A target a glob must never reach (the device behind /, /boot or
	 * swap; the loopback, an interface that carries a default route): 1
	 * with msg, else 0.  NULL: none. */
	int (*protect)(struct agent *a, const Knob__Setting *s, const char *target,
	    char *msg, size_t msglen);
	/* What target is, beyond its name (blockdev: "MAJ:MIN" plus the
	 * disk's wwid or serial when it has one), into buf: journaled with
	 * each original, and rollback, a switch, crash recovery and the boot
	 * re-apply write nothing through it to a target that reads another
	 * now.  0, or -errno (not known: no
	 * identity journaled).  NULL: names are stable. */
	int (*identity)(struct agent *a, const char *target, char *buf, size_t len);
	/* The file target's setting s reads and writes (sysroot-relative),
	 * or that shows it (net: /sys/class/net/IF/mtu), into buf: 0, or -1
	 * when it is not one file (a journal-only attribute).  An apply
	 * refuses a key whose file knob journaled through another key
	 * (tune.c plan_refuse_shared_file).  NULL: not a file (gpfs). */
	int (*file)(const Knob__Setting *s, const char *target, char *buf, size_t len);
	int costly_read;	/* read() runs a command: no re-read after every write */
	/* write() may accept a value that takes effect only after a restart
	 * (TUNE_PENDING_RESTART): the configured value can differ from the
	 * live one, so putting a value back writes it even when it reads back
	 * already (gpfs: mmchconfig). */
	int defers;
	int path_keys;		/* keys name paths: an exact one that is missing would fail */
};

extern const struct tune_driver drv_sysfs, drv_sysctl, drv_blockdev, drv_lustre,
    drv_gpfs, drv_nfsd, drv_net;
/* GPFS pagepool of this node in bytes, 0 without GPFS (drv_gpfs.c; runs
 * mmdiag: worker threads only). */
uint64_t gpfs_pagepool(struct agent *a);
const struct tune_driver *tune_driver_find(const char *name);
/* The default normaliser: norm_setting() of common/normalize.c. */
int tune_norm_default(const Knob__Setting *s, const char *raw, char *out, size_t outlen,
    char *msg, size_t msglen);
/* Default describe: the target itself, plus attr when there is one. */
void tune_describe_default(const Knob__Setting *s, const char *target, char *buf, size_t len);

/* One transaction's files, each opened once to read and once to write
 * (tune_fd.c). */
#define TUNE_FDS_MAX 128	/* more paths than this take the old way */
#define TUNE_FDS_SLOTS 256	/* hash index over v: a power of two, >= 2 * MAX */
struct tune_fd {
	char *path;		/* full path, sysroot included */
	uint64_t hash;		/* of path below the sysroot, looked at before it */
	int rfd, wfd;		/* O_RDONLY / O_WRONLY, or -1 */
	int rtried;		/* rfd's open was tried (and failed if -1) */
	int rerr;		/* errno of that failed open */
	ssize_t rlen;		/* bytes of the last read through rfd, or -1 */
};
#define TUNE_DIRS_MAX 16	/* directory listings a transaction keeps */
/* One directory's entries as glob(3) reads them, listed once. */
struct tune_dir {
	char *path;		/* as glob asked for it */
	struct dirent *ents;
	size_t n;
};
struct tune_fds {
	struct tune_fd v[TUNE_FDS_MAX];
	struct tune_dir dirs[TUNE_DIRS_MAX];	/* dropped at every write */
	size_t ndirs;
	uint8_t slot[TUNE_FDS_SLOTS];	/* 1 + index into v, 0 empty */
	size_t n;
	const char *root;	/* the sysroot, "" for / */
	size_t rl;		/* its length */
	int rootfd;		/* open O_PATH, or -1: paths below it open relative */
};
/* Open the cache for this thread's transaction below sysroot ("" for the
 * real root) / close its fds. */
void tune_fd_begin(struct tune_fds *c, const char *sysroot);
void tune_fd_end(struct tune_fds *c);
/* The read fd for a full path (opened on first use), or -1. */
int tune_fd_read(const char *full);
/* read_small_fd through that fd, its raw length kept for the first write
 * (which need not truncate what it covers); -EBADF when not cached. */
ssize_t tune_fd_value(const char *full, char *buf, size_t len);
/* Whether full exists (1) or not (0): in a transaction by that same open
 * (an error other than ENOENT or ENOTDIR asks access(2)), else access(2). */
int tune_fd_exists(const char *full);
/* glob(3) of pattern (flags 0), its directories and stats below the
 * transaction's sysroot fd when there is one. */
int tune_fd_glob(const char *pattern, glob_t *g);
/* Write s through the transaction's write fd for full: 0 or -errno as
 * write_small_file, or 1 when not cached (write the old way). */
int tune_fd_write(const char *full, const char *s);

/* Within a driver's check() (on the checking thread): the canonical value
 * the transaction writes to key (driver, target, attr) (a key of the
 * request, or a previous profile's key going back), NULL when it writes
 * none there (tune.c). */
const char *tune_planned(const char *driver, const char *target, const char *attr);

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
/* Would-fail checks of a plain file: it exists, its mode allows a write
 * (sysfs refuses writes to 0444 files even for root) and access(W_OK). */
int tune_check_path(struct agent *a, const char *path, char *msg, size_t msglen);
int tune_check_default(struct agent *a, const Knob__Setting *s, const char *target,
    const char *value, char *msg, size_t msglen);
/* file() of drivers whose targets are the files themselves. */
int tune_file_default(const Knob__Setting *s, const char *target, char *buf, size_t len);
/* Whether a key is a glob pattern (names no single thing). */
int tune_is_glob(const char *key);
/* In a driver's read() of a coupled key (target, s->attr) asked for the
 * first time (empty s->value, see coupled()): whether it comes too late
 * to be journaled.  The key whose write moves it (driver s->driver, src,
 * src_attr) has an original journaled and it has none: it was not
 * journaled with that original (there was nothing to keep), so what it
 * holds now is knob's own doing, never an original. */
int tune_coupled_late(struct agent *a, const Knob__Setting *s, const char *target,
    const char *src, const char *src_attr);
/* In a driver's read() of a coupled key (target, s->attr) asked for the
 * first time: whether its original is journaled already (an earlier apply
 * followed it).  Then it is read as it is, never judged afresh as nothing
 * to journal: the plan follows it again, so its original stays journaled,
 * and a switch does not put it back after this apply's write moved it. */
int tune_coupled_kept(struct agent *a, const Knob__Setting *s, const char *target);

/* Within a driver's check(): whether key (driver, target, attr) is written
 * by the transaction being checked (tune_planned) or has an original in
 * the journal (a rollback writes it): why, as words, or NULL when
 * neither.  For keys of two drivers that move each other (net mtu and
 * sysctl net.ipv6.conf.IF.mtu). */
const char *tune_key_in_play(struct agent *a, const char *driver, const char *target,
    const char *attr);

/* ------------------------------------------------------------ journal */
struct jentry {
	char *driver, *key, *attr, *match, *target, *value;
	char *was;		/* pending: live value when set; NULL elsewhere */
	char *set;		/* originals: the value knob left there; NULL unknown */
	char *origin;		/* settings: "file:line"; NULL elsewhere */
	char *ident;		/* originals, txn: the target's identity (driver
				 * identity()) when journaled; NULL unknown */
	int persistent;
	int added;		/* txn: not journaled before this transaction */
	int restoring;		/* originals: a rollback judged it and started restoring */
	int coupled;		/* originals: journaled only because the kernel moves it
				 * when another key is written, no profile's own key */
	unsigned layer;		/* settings: the profile of a --stack it came with (0 the
				 * first, 1 the one stacked on it, ...); 0 in a journal
				 * from before the field */
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
	struct jentry *set;	/* the active profile's resolved settings (target "") */
	size_t nset;
	char *sysroot;		/* the tree the targets are under; NULL: not recorded */
	char *boot_id;		/* the kernel's boot id when the active profile was
				 * last written (apply, boot re-apply); NULL: not
				 * recorded (a journal from before the field) */
};

/* Load path into j (an absent file is an empty journal).  0 or -errno. */
int journal_load(const char *path, struct journal *j);
/* Write j atomically (or remove the file when j is empty).  0 or -errno. */
int journal_save(const char *path, const struct journal *j);
/* The last resort when journal_save fails (a full disk): overwrite the
 * value of "active" in the file at path with "" in place (the same bytes,
 * padded with blanks), so that no start re-applies that profile; every
 * other byte, originals included, stays as it was.  0 (also when no
 * profile is in it), 1 when there is no file, or -errno. */
int journal_clear_active(const char *path);
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
struct job;	/* a tuning request on the worker pool (tune.c) */
struct tune_state {
	pthread_mutex_t mu;	/* one transaction at a time; guards j */
	pthread_mutex_t amu;	/* guards active and note (tune_active) */
	char active[256];	/* the active profile as published, "" none */
	char journal_path[PATH_MAX];
	struct journal j;
	int cmd_timeout_ms;	/* external commands; $KNOB_CMD_TIMEOUT_MS at init */
	unsigned wait_max_s;	/* a request's wait_s cap: WAIT_MAX_S, or less by
				 * $KNOB_TEST_WAIT_MAX_S with --test-hooks */
	char note[128];		/* "re-applied at boot ...", with active */
	char boot_id[64];	/* this boot's id (tune_init), "" when unreadable */
	/* the tuning lock (tune_lock.c), guarded by lmu */
	pthread_mutex_t lmu;
	pthread_cond_t lcv;
	int held;		/* holds by owner; 0 free */
	char owner[256];
	uint64_t since_ns;	/* CLOCK_REALTIME when taken */
	uint64_t expires_ns;	/* CLOCK_MONOTONIC lease end */
	uint64_t token, next_token;
	struct job *jobs;	/* tuning requests queued or running (tune.c), under lmu */
	struct work *parked, *parked_tail;	/* jobs waiting for the lock without a
					 * thread (tune.c), under lmu */
	int stopping;		/* the agent stops: nothing waits for the lock (lmu) */
};
/* The tuning subsystem's init and fini hooks (tune_subsys; also called
 * in-process by tests/check_tune.c). */
int tune_init(struct agent *a);
void tune_fini(struct agent *a);
/* Timeout for external commands of agent a. */
int tune_cmd_timeout(const struct agent *a);

/* Transactions (called under no lock; they take tune_state.mu).  The
 * results are allocated by these functions; free with tune_*_result_free. */
int tune_apply(struct agent *a, const Knob__ApplyRequest *req, Knob__ApplyResult *res);
int tune_verify(struct agent *a, const Knob__VerifyRequest *req, Knob__VerifyResult *res);
int tune_rollback(struct agent *a, const Knob__RollbackRequest *req, Knob__RollbackResult *res);

/* The per-node tuning lock: apply, rollback and bench phases hold it so
 * that a second controller is told "busy (held by OWNER since TIME)"
 * instead of silently winning.  Take waits up to wait_ms (0: not at all);
 * the lease ends the hold if the holder goes silent (renew extends it).
 * The same owner may hold it several times (drop each).  A waiter whose
 * *cancel (read under lmu; NULL: never) becomes set gives up, and so does
 * every waiter once the agent stops.  0 with *token set (0 when the agent
 * has no tuning), -EBUSY, -ECANCELED or -ESHUTDOWN with why.  Thread-safe. */
int tune_lock_take(struct agent *a, const char *owner, unsigned lease_ms, unsigned wait_ms,
    const int *cancel, uint64_t *token, char *why, size_t whylen);
void tune_lock_renew(struct agent *a, uint64_t token, unsigned lease_ms);
void tune_lock_drop(struct agent *a, uint64_t token);
/* Is the lock held by someone (lease not run out)?  lmu held. */
int tune_lock_busy(const struct tune_state *t);
/* Parked jobs back to the pool: all of them, or the oldest (tune.c; lmu
 * held): the lock was dropped, or a waiting thread's place came free. */
void tune_unpark(struct tune_state *t, int all);
void tune_lock_init(struct tune_state *t);
void tune_lock_fini(struct tune_state *t);
void tune_apply_result_free(Knob__ApplyResult *res);
void tune_verify_result_free(Knob__VerifyResult *res);
void tune_rollback_result_free(Knob__RollbackResult *res);
const char *tune_key_state_name(int st);

#endif
