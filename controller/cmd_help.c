/* knobctl help [COMMAND] | help --man | help --complete [COMMAND]: the help
 * text, the man page's option sections and the words bash completion
 * offers, all generated from the option tables (controller/opt.h). */
#include <stdio.h>
#include <string.h>

#include "knobctl.h"
#include "opt.h"

enum { H_MAN = 256, H_COMPLETE };

static const struct opt help_opts[] = {
	{ H_MAN, "man", OPT_NOARG, NULL, "print the man page's OPTIONS and COMMANDS sections (roff)", 0 },
	{ H_COMPLETE, "complete", OPT_NOARG, NULL,
	    "print the commands, or COMMAND's options, for shell completion", 0 },
	OPT_END
};

/* s with roff's special characters escaped. */
static void
roff_puts(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '-' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
}

static void
man_table(FILE *f, const struct opt *t, const struct cmd_entry *ce)
{
	char label[96];

	for (size_t i = 0; i < opt_count(t); i++) {
		if (t[i].flags & OPT_HIDDEN)
			continue;
		opt_label(&t[i], ce, label, sizeof(label));
		fprintf(f, ".TP\n.B ");
		roff_puts(f, label);
		fputc('\n', f);
		roff_puts(f, t[i].help);
		fputc('\n', f);
	}
}

/* The man page's OPTIONS and COMMANDS sections. */
static void
help_man(FILE *f)
{
	fprintf(f, ".SH OPTIONS\nGlobal options, accepted before or after the command:\n");
	man_table(f, opt_global, NULL);
	fprintf(f, ".PP\nNode-set options, on every command that takes targets:\n");
	man_table(f, opt_nodes, NULL);
	man_table(f, opt_fanout, NULL);
	fprintf(f, ".PP\nSSH options, for \\fBbootstrap\\fR and for every fan-out command with "
	    "\\fB\\-\\-via ssh\\fR:\n");
	man_table(f, opt_ssh, NULL);
	fprintf(f, ".SH COMMANDS\n");
	for (size_t i = 0; cmd_table[i]; i++) {
		const struct cmd_entry *ce = cmd_table[i];

		fprintf(f, ".SS \"");
		roff_puts(f, ce->name);
		roff_puts(f, cmd_nodes_usage(ce));
		if (ce->usage[0])
			fputc(' ', f);
		roff_puts(f, ce->usage);
		fprintf(f, "\"\n");
		roff_puts(f, ce->summary);
		fputc('\n', f);
		if (ce->flags & CMD_FANOUT)
			fprintf(f, "Takes \\fB\\-\\-fanout\\fR N.\n");
		man_table(f, ce->opts, ce);
		if (ce->more) {
			fprintf(f, ".PP\n.nf\n");
			roff_puts(f, ce->more);
			fprintf(f, "\n.fi\n");
		}
	}
}

static void
complete_table(FILE *f, const struct opt *t, const struct cmd_entry *ce)
{
	for (size_t i = 0; i < opt_count(t); i++) {
		int sh = opt_short(&t[i], ce);

		if ((t[i].flags & OPT_HIDDEN) || opt_shadowed(&t[i], t, ce))
			continue;
		if (t[i].lname)
			fprintf(f, "--%s%s\n", t[i].lname, t[i].arg == OPT_ARG ? " ARG" : "");
		if (sh)
			fprintf(f, "-%c%s\n", sh, t[i].arg == OPT_ARG ? " ARG" : "");
	}
}

/* Completion words: the commands, or ce's options ("--dir ARG" when the
 * option takes a value). */
static void
help_complete(FILE *f, const struct cmd_entry *ce)
{
	if (ce == NULL) {
		for (size_t i = 0; cmd_table[i]; i++)
			fprintf(f, "%s\n", cmd_table[i]->name);
		complete_table(f, opt_global, NULL);
		return;
	}
	complete_table(f, ce->opts, ce);
	if (ce->flags & CMD_NODES)
		complete_table(f, opt_nodes, ce);
	if (ce->flags & CMD_FANOUT)
		complete_table(f, opt_fanout, ce);
	if (ce->flags & (CMD_SSH | CMD_FANOUT))
		complete_table(f, opt_ssh, ce);
	complete_table(f, opt_global, ce);
}

static int
cmd_help(struct ctl *ctl, int argc, char **argv)
{
	const struct cmd_entry *ce = NULL;
	int ch, man = 0, complete = 0;

	while ((ch = opt_next(ctl, argc, argv)) != -1) {
		if (ch == H_MAN)
			man = 1;
		else if (ch == H_COMPLETE)
			complete = 1;
		else
			return 2;
	}
	if (argc - optind > 1) {
		fprintf(stderr, "knobctl help: unexpected argument '%s'\n", argv[optind + 1]);
		return 2;
	}
	if (optind < argc && (ce = cmd_find(argv[optind])) == NULL) {
		fprintf(stderr, "knobctl help: unknown command '%s'\n", argv[optind]);
		return 2;
	}
	if (man)
		help_man(ctl->out);
	else if (complete)
		help_complete(ctl->out, ce);
	else
		opt_help(ctl->out, ce);
	return 0;
}

const struct cmd_entry cmd_help_entry = {
	"help", "[COMMAND]", "this help, or a command's options", CMD_NOINV, help_opts, cmd_help,
	NULL,
};
