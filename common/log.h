/* Logging to stderr in a journald-friendly form:
 * "<prio>prog: [instance: ]file:line: message".
 * The "<N>" prefix is what systemd-journald parses as the syslog priority
 * when stderr is connected to the journal (SyslogLevelPrefix=yes). */
#ifndef KNOB_LOG_H
#define KNOB_LOG_H

#include <stdarg.h>

enum log_level { LOG_LVL_ERR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };

void log_init(const char *progname, int level);
int log_parse_level(const char *s);	/* -1 when unknown */
int log_get_level(void);
/* Name the agent instance on this thread's lines ("<6>knobd: NODE: ...");
 * NULL: none.  The string must outlive its use. */
void log_set_instance(const char *name);
/* The name for threads that set none (knobd has one instance). */
void log_set_default_instance(const char *name);
void log_msg(int prio, int with_errno, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void log_fatal(int with_errno, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));

#define log_warn(...)  log_msg(LOG_LVL_WARN, 1, __FILE__, __LINE__, __VA_ARGS__)
#define log_warnx(...) log_msg(LOG_LVL_WARN, 0, __FILE__, __LINE__, __VA_ARGS__)
#define log_err(...)   log_msg(LOG_LVL_ERR, 0, __FILE__, __LINE__, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, 0, __FILE__, __LINE__, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, 0, __FILE__, __LINE__, __VA_ARGS__)
#define fatal(...)     log_fatal(1, __FILE__, __LINE__, __VA_ARGS__)
#define fatalx(...)    log_fatal(0, __FILE__, __LINE__, __VA_ARGS__)

#endif
