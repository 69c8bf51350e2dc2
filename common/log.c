/* Logging: one line per message on stderr, journald priority prefix. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>

#include "log.h"
#include "visible.h"

/* The log level is process-wide configuration, set once at start-up; it is
 * not per-instance state, so many agents in one process share it. */
static int log_level = LOG_LVL_INFO;
static const char *log_prog = "knob";
/* The agent instance a line is about: set per thread by the code that runs
 * an instance's callback or work item (many agents share a process). */
static _Thread_local const char *log_instance;
static _Atomic(const char *) log_default_instance;	/* knobd: its one instance */

void
log_init(const char *progname, int level)
{
	log_prog = progname;
	log_level = level;
}

void
log_set_instance(const char *name)
{
	log_instance = name;
}

void
log_set_default_instance(const char *name)
{
	log_default_instance = name;
}

int
log_get_level(void)
{
	return log_level;
}

/* Map "err|warn|info|debug" (or a syslog number) to a level; -1 if unknown. */
int
log_parse_level(const char *s)
{
	static const struct { const char *name; int lvl; } names[] = {
		{ "err", LOG_LVL_ERR }, { "error", LOG_LVL_ERR },
		{ "warn", LOG_LVL_WARN }, { "warning", LOG_LVL_WARN },
		{ "info", LOG_LVL_INFO }, { "debug", LOG_LVL_DEBUG },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(s, names[i].name) == 0)
			return names[i].lvl;
	if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0')
		return s[0] - '0';
	return -1;
}

/* Format and emit one line; the whole line goes out in one write. */
static void
log_vemit(int prio, int with_errno, const char *file, int line, const char *fmt, va_list ap)
{
	char msg[2048], esc[VIS_SIZE(sizeof(msg))];
	const char *inst = log_instance ? log_instance : log_default_instance;
	int saved = errno;
	int n;

	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		msg[0] = '\0';
	str_visible(esc, msg, 0);	/* a peer's string cannot end the line and
					 * start one with a forged "<N>" */
	fprintf(stderr, "<%d>%s: %s%s%s:%d: %s%s%s\n", prio, log_prog,
	    inst ? inst : "", inst ? ": " : "", file, line, esc,
	    with_errno ? ": " : "", with_errno ? strerror(saved) : "");
	errno = saved;
}

void
log_msg(int prio, int with_errno, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (prio > log_level)
		return;
	va_start(ap, fmt);
	log_vemit(prio, with_errno, file, line, fmt, ap);
	va_end(ap);
}

void
log_fatal(int with_errno, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vemit(2, with_errno, file, line, fmt, ap);
	va_end(ap);
	exit(2);
}
