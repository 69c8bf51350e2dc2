/* Command-line tables (tmux cmd_entry style).  Every subcommand describes
 * its options once, in a struct opt table inside its struct cmd_entry; the
 * same table drives the parser (controller/opt.c), `knobctl help` and
 * `COMMAND --help`, the man page section and the bash completion
 * (controller/cmd_help.c).  Global options (-c, --json, --timeout, ...) and
 * the node-set options (-w, -x, -a, --fanout) are shared tables, accepted
 * anywhere on the line. */
#ifndef KNOB_OPT_H
#define KNOB_OPT_H

#include <getopt.h>	/* optarg, optind for the commands */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ctl;

enum opt_arg { OPT_NOARG, OPT_ARG, OPT_OPTARG };

#define OPT_HIDDEN	0x1	/* test hook: parsed, left out of help/man/completion */

/* One option.  id is the short letter (then also its -X form) or a value
 * >= 256 for a long-only option; opt_next returns it. */
struct opt {
	int id;
	const char *lname;	/* long name without "--", or NULL */
	int arg;		/* enum opt_arg */
	const char *argname;	/* in help: NODESET, N, FILE */
	const char *help;	/* one line */
	int flags;
};
#define OPT_END { 0, NULL, 0, NULL, NULL, 0 }

/* --timeout and --connect-timeout, in seconds (the connection holder
 * takes the same range in its OPEN messages) */
#define OPT_SECONDS_MIN 0.001
#define OPT_SECONDS_MAX 86400.0

#define CMD_NODES	0x1	/* -w NODESET (repeatable, additive), -x NODESET, -a */
#define CMD_FANOUT	0x2	/* --fanout N, --threads N */
#define CMD_NOINV	0x4	/* runs without loading the inventory */
#define CMD_SSH		0x8	/* the SSH options (bootstrap; fan-out commands for --via ssh) */
#define CMD_NODES_OPT	0x10	/* with CMD_NODES: -w/-a optional (nodeset's operands, a play's nodes=) */

struct cmd_entry {
	const char *name;
	const char *usage;	/* operands, e.g. "PROFILE" (may be "") */
	const char *summary;	/* one line */
	int flags;		/* CMD_* */
	const struct opt *opts;	/* the command's own options, OPT_END-terminated; may be NULL */
	int (*fn)(struct ctl *, int, char **);
	const char *more;	/* extra help paragraph, or NULL */
};

/* Every subcommand, in help order (controller/cmds.c). */
extern const struct cmd_entry *const cmd_table[];
const struct cmd_entry *cmd_find(const char *name);

/* The shared tables (for help, man page and completion). */
extern const struct opt opt_global[];
extern const struct opt opt_nodes[];
extern const struct opt opt_fanout[];
extern const struct opt opt_ssh[];	/* controller/ssh.c */

/* Is o, from the shared table t, hidden by a long option of ce's own with
 * the same name (bench's --threads LIST)?  A command's own option wins. */
int opt_shadowed(const struct opt *o, const struct opt *t, const struct cmd_entry *ce);

/* Global options before the command ("+" mode: stops at the command).
 * Returns 0, 1 when --help/--version was printed, -1 on a usage error
 * (printed).  optind is left at the command. */
int opt_leading(struct ctl *ctl, int argc, char **argv);
/* First pass over a command's argv: applies global and node-set options
 * wherever they are; the command's own options are skipped (the command
 * reads them with opt_next).  Returns 0, 1 when --help was printed, -1 on a
 * usage error (printed). */
int opt_prescan(struct ctl *ctl, const struct cmd_entry *ce, int argc, char **argv);
/* The command's next own option: its id (optarg set), -1 at the end (the
 * operands are argv[optind..]), '?' on a usage error (printed). */
int opt_next(struct ctl *ctl, int argc, char **argv);
/* For commands without options of their own: parse to the end and check
 * that there are between min and max operands (max < 0: any).  Returns the
 * index of the first operand, or -1 (printed). */
int opt_operands(struct ctl *ctl, int argc, char **argv, int min, int max);
/* Print "knobctl NAME: bad value 'X' for --opt" style errors; returns '?'. */
int opt_bad_value(struct ctl *ctl, const char *what);
/* The command's full help (usage, summary, options, globals). */
void opt_help(FILE *f, const struct cmd_entry *ce);
/* Number of entries of an OPT_END-terminated table (0 for NULL). */
size_t opt_count(const struct opt *o);
/* Does ce claim the short letter ch for an option of its own? */
int cmd_has_short(const struct cmd_entry *ce, int ch);
/* How ce's usage line shows its targets: " -w NODESET|-a [-x NODESET]",
 * bracketed when optional, "" without CMD_NODES. */
const char *cmd_nodes_usage(const struct cmd_entry *ce);
/* "-w, --nodes NODESET" as help, man page and completion show it. */
void opt_label(const struct opt *o, const struct cmd_entry *ce, char *buf, size_t len);
/* Short letter under which o is reachable in ce (0: long only). */
int opt_short(const struct opt *o, const struct cmd_entry *ce);
/* How a command stores an option's value (opt_store): at offset off of its
 * request, an int flag (1), the argument string, a decimal number or a size
 * ("4k", bench_parse_size), checked against min..max (max 0: the type's
 * largest). */
enum opt_vtype { OV_FLAG = 1, OV_STR, OV_U32, OV_U64, OV_SIZE };
struct opt_val {
	int id;
	int type;		/* enum opt_vtype */
	size_t off;		/* offsetof the member */
	uint64_t min, max;
};
/* Store option id's argument into base by its row of vals: 1 stored, 0 when
 * id has no row, -1 on a bad value. */
int opt_store(const struct opt_val *vals, size_t n, int id, const char *arg, void *base);
/* A decimal number in min..max into *u64 or *u32 (whichever is not NULL);
 * no sign, no suffix.  0 or -1. */
int opt_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *u64, uint32_t *u32);
/* Release what the parser allocated in ctl. */
void opt_free(struct ctl *ctl);

#endif
