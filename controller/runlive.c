/* Is the knobctl that writes a run still there?  A run row records its
 * writer: host name, boot id (/proc/sys/kernel/random/boot_id), pid
 * namespace, pid and the process's start time (clock ticks since boot,
 * /proc/PID/stat field 22), and a heartbeat that a thread refreshes every
 * RESULTS_HEARTBEAT_S seconds while the run goes on.
 *
 * A reader that shares the writer's boot and pid namespace can see its
 * process: the run is gone when no process with that pid and start time
 * exists (a reused pid has another start time).  Any other reader (another
 * host, another boot, a container) cannot: the run is gone when its last
 * heartbeat is more than RESULTS_STALE_S seconds old by the reader's clock.
 * Rows from before schema version 4 carry only host and pid: same host and
 * no such pid is gone, else the heartbeat rule (their start or end time). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sqlite3.h>

#include "log.h"
#include "results.h"
#include "util.h"

/* The start time of process pid in clock ticks since boot; -1 when there
 * is no such process. */
static int64_t
proc_starttime(int64_t pid)
{
	char path[64], buf[1024], *p, *save = NULL, *tok;
	int field = 2;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
	if (read_small_file(path, buf, sizeof(buf)) < 0 || (p = strrchr(buf, ')')) == NULL)
		return -1;
	/* fields after "pid (comm)" start at 3 (state); starttime is 22 */
	for (tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		if (++field == 22)
			return strtoll(tok, NULL, 10);
	return -1;
}

void
runlive_self(struct run_writer *w)
{
	char ns[64];
	ssize_t n;

	memset(w, 0, sizeof(*w));
	gethostname(w->host, sizeof(w->host) - 1);
	if (read_small_file("/proc/sys/kernel/random/boot_id", w->boot_id, sizeof(w->boot_id)) < 0)
		w->boot_id[0] = '\0';
	if ((n = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1)) > 0) {
		ns[n] = '\0';
		snprintf(w->pid_ns, sizeof(w->pid_ns), "%s", ns);
	}
	w->pid = (int64_t)getpid();
	w->pid_start = proc_starttime(w->pid);
	w->heartbeat_ns = (int64_t)now_real_ns();
}

int
runlive_gone(const struct run_writer *w, int64_t now_ns)
{
	struct run_writer me;

	runlive_self(&me);
	if (w->boot_id[0]) {
		if (w->pid_start >= 0 && strcmp(w->boot_id, me.boot_id) == 0 &&
		    strcmp(w->pid_ns, me.pid_ns) == 0) {
			int64_t start = proc_starttime(w->pid);

			if (start >= 0)
				return start != w->pid_start;
			if (kill((pid_t)w->pid, 0) < 0 && errno == ESRCH)
				return 1;
			/* there but out of sight (/proc mounted hidepid): the
			 * heartbeat decides, as for another host */
		}
	} else if (w->host[0] && strcmp(w->host, me.host) == 0 && w->pid > 0) {
		/* written before schema version 4: pid only */
		if (kill((pid_t)w->pid, 0) < 0 && errno == ESRCH)
			return 1;
		return 0;
	}
	return now_ns - w->heartbeat_ns > (int64_t)RESULTS_STALE_S * 1000000000;
}

struct results_hb {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop, interval_s;
	sqlite3 *db;
	char *run_id;
};

/* Set the heartbeat of the run to now; 0 or -1. */
static int
beat(sqlite3 *db, const char *run_id)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (sqlite3_prepare_v2(db, "UPDATE runs SET heartbeat_ns = ? WHERE id = ? AND"
	    " status = 'running'", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, (int64_t)now_real_ns());
	sqlite3_bind_text(st, 2, run_id, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
	sqlite3_finalize(st);
	return rc;
}

/* The heartbeat thread: a beat every interval_s seconds until stopped. */
static void *
hb_main(void *arg)
{
	struct results_hb *hb = arg;
	struct timespec until;

	pthread_mutex_lock(&hb->mu);
	while (!hb->stop) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += hb->interval_s;
		while (!hb->stop && pthread_cond_timedwait(&hb->cv, &hb->mu, &until) != ETIMEDOUT)
			;
		if (hb->stop)
			break;
		pthread_mutex_unlock(&hb->mu);
		if (beat(hb->db, hb->run_id) < 0)
			log_warnx("results database heartbeat: %s", sqlite3_errmsg(hb->db));
		pthread_mutex_lock(&hb->mu);
	}
	pthread_mutex_unlock(&hb->mu);
	return NULL;
}

struct results_hb *
results_heartbeat_start(const char *dbpath, const char *run_id, int interval_s)
{
	struct results_hb *hb = xcalloc(1, sizeof(*hb));
	pthread_condattr_t ca;

	hb->interval_s = interval_s > 0 ? interval_s : RESULTS_HEARTBEAT_S;
	if (sqlite3_open_v2(dbpath, &hb->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX,
	    NULL) != SQLITE_OK) {
		log_warnx("results database %s: no heartbeat: %s", dbpath, hb->db ?
		    sqlite3_errmsg(hb->db) : "out of memory");
		goto fail;
	}
	sqlite3_busy_timeout(hb->db, 10000);
	hb->run_id = xstrdup(run_id);
	pthread_mutex_init(&hb->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&hb->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&hb->thread, NULL, hb_main, hb) == 0)
		return hb;
	log_warnx("results database: no heartbeat thread");
	pthread_cond_destroy(&hb->cv);
	pthread_mutex_destroy(&hb->mu);
fail:
	sqlite3_close(hb->db);
	free(hb->run_id);
	free(hb);
	return NULL;
}

void
results_heartbeat_stop(struct results_hb *hb)
{
	if (hb == NULL)
		return;
	pthread_mutex_lock(&hb->mu);
	hb->stop = 1;
	pthread_cond_signal(&hb->cv);
	pthread_mutex_unlock(&hb->mu);
	pthread_join(hb->thread, NULL);
	pthread_cond_destroy(&hb->cv);
	pthread_mutex_destroy(&hb->mu);
	sqlite3_close(hb->db);
	free(hb->run_id);
	free(hb);
}
