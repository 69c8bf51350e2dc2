/* The command-line parser behind every subcommand: getopt_long tables built
 * from the struct opt tables (controller/opt.h), global and node-set options
 * accepted anywhere on the line, values checked once here. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_ctl.h"
#include "knobctl.h"
#include "log.h"
#include "opt.h"
#include "ssh.h"
#include "util.h"

enum {
	G_CLUSTER = 0x1100, G_JSON, G_TIMEOUT, G_CTIMEOUT, G_CA, G_CERT, G_KEY, G_LOGLEVEL,
	G_HELP, G_VERSION, G_UNITS, G_NOMUX, N_NODES, N_EXCLUDE, N_ALL, N_FANOUT, N_THREADS,
};

const struct opt opt_global[] = {
	{ G_CLUSTER, "cluster", OPT_ARG, "FILE", "inventory (else $KNOB_CLUSTER, /etc/knob/cluster.xml)", 0 },
	{ G_JSON, "json", OPT_NOARG, NULL, "one JSON document on stdout", 0 },
	{ G_TIMEOUT, "timeout", OPT_ARG, "S", "per-request timeout in seconds (default 30)", 0 },
	{ G_CTIMEOUT, "connect-timeout", OPT_ARG, "S", "connect and TLS handshake timeout (default 5)", 0 },
	{ G_CA, "ca", OPT_ARG, "FILE", "CA certificate (overrides the inventory)", 0 },
	{ G_CERT, "cert", OPT_ARG, "FILE", "controller certificate (overrides the inventory)", 0 },
	{ G_KEY, "key", OPT_ARG, "FILE", "controller key (overrides the inventory)", 0 },
	{ G_LOGLEVEL, "log-level", OPT_ARG, "L", "error, warn, info or debug (default warn)", 0 },
	{ G_UNITS, "units", OPT_ARG, "binary|decimal", "throughput in MiB/s, GiB/s (binary, the default) or MB/s, GB/s", 0 },
	{ G_NOMUX, "no-mux", OPT_NOARG, NULL, "dial every node, even when a connection holder (knobctl mux) runs", 0 },
	{ G_HELP, "help", OPT_NOARG, NULL, "this help", 0 },
	{ G_VERSION, "version", OPT_NOARG, NULL, "print the version", 0 },
	OPT_END
};

const struct opt opt_nodes[] = {
	{ N_NODES, "nodes", OPT_ARG, "NODESET", "target nodes; repeat to add more (node[01-16], @group)", 0 },
	{ N_EXCLUDE, "exclude", OPT_ARG, "NODESET", "leave these nodes out; repeat to add", 0 },
	{ N_ALL, "all", OPT_NOARG, NULL, "every node of the inventory (the same as -w @all)", 0 },
	OPT_END
};

const struct opt opt_fanout[] = {
	{ N_FANOUT, "fanout", OPT_ARG, "N", "at most N nodes in progress at once", 0 },
	{ N_THREADS, "threads", OPT_ARG, "N", "fan-out threads, each with its own event loop and "
	    "a share of the nodes (default: the CPUs knobctl may use; bench's --threads is its own)", 0 },
	OPT_END
};

/* Short letters of the shared options; a command's own letter wins. */
static const struct {
	int ch, id;
} shorts[] = {
	{ 'c', G_CLUSTER }, { 'h', G_HELP }, { 'w', N_NODES }, { 'x', N_EXCLUDE }, { 'a', N_ALL },
};

size_t
opt_count(const struct opt *o)
{
	size_t n = 0;

	while (o && o[n].id != 0)
		n++;
	return n;
}

int
opt_shadowed(const struct opt *o, const struct opt *t, const struct cmd_entry *ce)
{
	if (ce == NULL || t == ce->opts || o->lname == NULL)
		return 0;
	for (size_t i = 0; i < opt_count(ce->opts); i++)
		if (ce->opts[i].lname && strcmp(ce->opts[i].lname, o->lname) == 0)
			return 1;
	return 0;
}

int
cmd_has_short(const struct cmd_entry *ce, int ch)
{
	for (size_t i = 0; ce && i < opt_count(ce->opts); i++)
		if (ce->opts[i].id == ch)
			return 1;
	return 0;
}

static int
short_usable(int ch)
{
	return ch > 0 && ch < 256 && isalnum(ch);
}

/* Append "c" or "c:" to a getopt short-option string. */
static void
add_short(char *so, int ch, const char *colons)
{
	size_t l = strlen(so);

	so[l] = (char)ch;
	strcpy(so + l + 1, colons);
}

/* Append the getopt_long entries and short letters of one table. */
static void
table_add(struct option *lo, size_t *nl, char *so, const struct opt *t, const struct cmd_entry *ce,
    int shared)
{
	static const int has[] = { no_argument, required_argument, optional_argument };
	static const char *const colons[] = { "", ":", "::" };

	for (size_t i = 0; i < opt_count(t); i++) {
		if (shared && opt_shadowed(&t[i], t, ce))
			continue;
		if (t[i].lname) {
			lo[*nl].name = t[i].lname;
			lo[*nl].has_arg = has[t[i].arg];
			lo[*nl].flag = NULL;
			lo[*nl].val = t[i].id;
			(*nl)++;
		}
		if (!shared && short_usable(t[i].id)) {
			add_short(so, t[i].id, colons[t[i].arg]);
		}
	}
	if (!shared)
		return;
	for (size_t i = 0; i < nitems(shorts); i++) {
		for (size_t j = 0; j < opt_count(t); j++) {
			if (t[j].id != shorts[i].id || cmd_has_short(ce, shorts[i].ch))
				continue;
			add_short(so, shorts[i].ch, colons[t[j].arg]);
		}
	}
}

/* Build ctl's getopt tables for ce (globals, node set, fan-out, own). */
static void
build_tables(struct ctl *ctl, const struct cmd_entry *ce)
{
	size_t n = opt_count(opt_global) + opt_count(opt_nodes) + opt_count(opt_fanout) +
	    opt_count(opt_ssh) +
	    (ce ? opt_count(ce->opts) : 0), nl = 0;

	opt_free(ctl);
	ctl->cmd = ce;
	ctl->lopts = xcalloc(n + 1, sizeof(struct option));
	ctl->sopts = xcalloc(3 * n + 2, 1);
	strcpy(ctl->sopts, ":");
	table_add(ctl->lopts, &nl, ctl->sopts, opt_global, ce, 1);
	if (ce == NULL) {
		/* before the command: --via ssh and its options too */
		table_add(ctl->lopts, &nl, ctl->sopts, opt_ssh, ce, 1);
		return;
	}
	if (ce->flags & CMD_NODES)
		table_add(ctl->lopts, &nl, ctl->sopts, opt_nodes, ce, 1);
	if (ce->flags & CMD_FANOUT)
		table_add(ctl->lopts, &nl, ctl->sopts, opt_fanout, ce, 1);
	if (ce->flags & (CMD_SSH | CMD_FANOUT))
		table_add(ctl->lopts, &nl, ctl->sopts, opt_ssh, ce, 1);
	table_add(ctl->lopts, &nl, ctl->sopts, ce->opts, ce, 0);
}

void
opt_free(struct ctl *ctl)
{
	free(ctl->lopts);
	free(ctl->sopts);
	ctl->lopts = NULL;
	ctl->sopts = NULL;
}

/* getopt_long's answer, with shared short letters mapped to their ids. */
static int
next_raw(struct ctl *ctl, int argc, char **argv)
{
	int ch = getopt_long(argc, argv, ctl->sopts, ctl->lopts, NULL);

	if (ch > 0 && ch < 256 && ch != '?' && ch != ':' && !cmd_has_short(ctl->cmd, ch))
		for (size_t i = 0; i < nitems(shorts); i++)
			if (shorts[i].ch == ch)
				return shorts[i].id;
	return ch;
}

static const char *
cmd_name(const struct ctl *ctl)
{
	return ctl->cmd ? ctl->cmd->name : "";
}

int
opt_bad_value(struct ctl *ctl, const char *what)
{
	fprintf(stderr, "knobctl %s: bad %s '%s'\n", cmd_name(ctl), what, optarg ? optarg : "");
	return '?';
}

/* A usage error getopt found: unknown option or missing argument. */
static int
getopt_error(struct ctl *ctl, int ch, char **argv)
{
	const char *tok = argv[optind - 1];

	if (ch == ':')
		fprintf(stderr, "knobctl %s: option %s needs a value\n", cmd_name(ctl), tok);
	else if (optopt && strncmp(tok, "--", 2) != 0)
		fprintf(stderr, "knobctl %s: unknown option -%c\n", cmd_name(ctl), optopt);
	else
		fprintf(stderr, "knobctl %s: unknown option %s\n", cmd_name(ctl), tok);
	fprintf(stderr, "try 'knobctl %s%s--help'\n", cmd_name(ctl), ctl->cmd ? " " : "");
	return '?';
}

/* A timeout in seconds, OPT_SECONDS_MIN to OPT_SECONDS_MAX. */
static int
seconds(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v >= OPT_SECONDS_MIN && v <= OPT_SECONDS_MAX))
		return -1;
	*out = v;
	return 0;
}

static int
positive_int(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || *end || v <= 0 || v > 1000000)
		return -1;
	*out = (int)v;
	return 0;
}

/* Apply one shared option.  0, 1 (help or version printed), -1 (bad value). */
static int
apply_shared(struct ctl *ctl, int id)
{
	switch (id) {
	case G_CLUSTER: ctl->cluster_path = optarg; return 0;
	case G_JSON: ctl->json = 1; return 0;
	case G_TIMEOUT:
		return seconds(optarg, &ctl->timeout) < 0 ?
		    opt_bad_value(ctl, "--timeout (seconds, 0.001 to 86400)"), -1 : 0;
	case G_CTIMEOUT:
		return seconds(optarg, &ctl->connect_timeout) < 0 ?
		    opt_bad_value(ctl, "--connect-timeout (seconds, 0.001 to 86400)"), -1 : 0;
	case G_CA: ctl->ca = optarg; return 0;
	case G_CERT: ctl->cert = optarg; return 0;
	case G_KEY: ctl->key = optarg; return 0;
	case G_LOGLEVEL:
		if ((ctl->log_level = log_parse_level(optarg)) < 0)
			return opt_bad_value(ctl, "--log-level"), -1;
		return 0;
	case G_UNITS:
		if (strcmp(optarg, "binary") != 0 && strcmp(optarg, "decimal") != 0)
			return opt_bad_value(ctl, "--units"), -1;
		ctl->units_decimal = strcmp(optarg, "decimal") == 0;
		return 0;
	case G_NOMUX: ctl->no_mux = 1; return 0;
	case G_HELP: opt_help(stdout, ctl->cmd); return 1;
	case G_VERSION: printf("knobctl %s\n", KNOB_VERSION); return 1;
	case N_NODES: strvec_push(&ctl->w, optarg); return 0;
	case N_EXCLUDE: strvec_push(&ctl->x, optarg); return 0;
	case N_ALL: ctl->all = 1; return 0;
	case N_FANOUT: return positive_int(optarg, &ctl->fanout) < 0 ? opt_bad_value(ctl, "--fanout"), -1 : 0;
	case N_THREADS:
		return positive_int(optarg, &ctl->threads) < 0 ? opt_bad_value(ctl, "--threads"), -1 : 0;
	default: return ssh_opt_is(id) ? ssh_cfg_apply(&ctl->ssh, id, optarg) : 0;
	}
}

static int
is_shared(int id)
{
	return (id >= G_CLUSTER && id <= N_THREADS) || ssh_opt_is(id);
}

int
opt_leading(struct ctl *ctl, int argc, char **argv)
{
	char *so;
	int ch, r;

	build_tables(ctl, NULL);
	so = xasprintf("+%s", ctl->sopts);
	free(ctl->sopts);
	ctl->sopts = so;
	optind = 0;
	opterr = 0;
	while ((ch = next_raw(ctl, argc, argv)) != -1) {
		if (ch == '?' || ch == ':')
			return getopt_error(ctl, ch, argv), -1;
		if ((r = apply_shared(ctl, ch)) != 0)
			return r;
	}
	return 0;
}

int
opt_prescan(struct ctl *ctl, const struct cmd_entry *ce, int argc, char **argv)
{
	int ch, r, bad = 0;

	build_tables(ctl, ce);
	optind = 0;
	opterr = 0;
	while ((ch = next_raw(ctl, argc, argv)) != -1) {
		if (ch == '?' || ch == ':')
			bad = 1;	/* reported by opt_next, unless --help follows */
		else if (is_shared(ch) && (r = apply_shared(ctl, ch)) != 0)
			return r;
	}
	optind = 0;
	if (bad) {
		/* report the first error now, in order */
		while ((ch = next_raw(ctl, argc, argv)) != -1)
			if (ch == '?' || ch == ':')
				return getopt_error(ctl, ch, argv), -1;
	}
	optind = 0;
	return 0;
}

int
opt_next(struct ctl *ctl, int argc, char **argv)
{
	int ch;

	opterr = 0;
	while ((ch = next_raw(ctl, argc, argv)) != -1) {
		if (ch == '?' || ch == ':')
			return getopt_error(ctl, ch, argv);
		if (!is_shared(ch))
			return ch;
	}
	return -1;
}

int
opt_operands(struct ctl *ctl, int argc, char **argv, int min, int max)
{
	int ch, n;

	while ((ch = opt_next(ctl, argc, argv)) != -1)
		if (ch == '?')
			return -1;
	n = argc - optind;
	if (n < min) {
		fprintf(stderr, "knobctl %s: missing %s\n", cmd_name(ctl),
		    ctl->cmd && ctl->cmd->usage[0] ? ctl->cmd->usage : "argument");
		return -1;
	}
	if (max >= 0 && n > max) {
		fprintf(stderr, "knobctl %s: unexpected argument '%s'\n", cmd_name(ctl),
		    argv[optind + max]);
		return -1;
	}
	return optind;
}

int
opt_short(const struct opt *o, const struct cmd_entry *ce)
{
	if (short_usable(o->id))
		return o->id;
	for (size_t i = 0; i < nitems(shorts); i++)
		if (shorts[i].id == o->id && !cmd_has_short(ce, shorts[i].ch))
			return shorts[i].ch;
	return 0;
}

const char *
cmd_nodes_usage(const struct cmd_entry *ce)
{
	if (!(ce->flags & CMD_NODES))
		return "";
	return ce->flags & CMD_NODES_OPT ? " [-w NODESET|-a] [-x NODESET]" :
	    " -w NODESET|-a [-x NODESET]";
}

void
opt_label(const struct opt *o, const struct cmd_entry *ce, char *buf, size_t len)
{
	int sh = opt_short(o, ce);
	const char *an = o->argname ? o->argname : "";

	if (o->arg == OPT_OPTARG)
		snprintf(buf, len, "%s%c%s%s%s[=%s]", sh ? "-" : "", sh ? sh : ' ', sh ? ", " : "",
		    o->lname ? "--" : "", o->lname ? o->lname : "", an);
	else
		snprintf(buf, len, "%s%c%s%s%s%s%s", sh ? "-" : "", sh ? sh : ' ',
		    sh && o->lname ? ", " : "", o->lname ? "--" : "", o->lname ? o->lname : "",
		    o->arg == OPT_ARG ? " " : "", o->arg == OPT_ARG ? an : "");
	if (!sh)
		memmove(buf, buf + 1, strlen(buf + 1) + 1);
}

static void
help_table(FILE *f, const char *title, const struct opt *t, const struct cmd_entry *ce)
{
	char label[96];

	if (opt_count(t) == 0)
		return;
	fprintf(f, "\n%s:\n", title);
	for (size_t i = 0; i < opt_count(t); i++) {
		if ((t[i].flags & OPT_HIDDEN) || opt_shadowed(&t[i], t, ce))
			continue;
		opt_label(&t[i], ce, label, sizeof(label));
		fprintf(f, "  %-26s %s\n", label, t[i].help);
	}
}

void
opt_help(FILE *f, const struct cmd_entry *ce)
{
	if (ce == NULL) {
		fprintf(f, "usage: knobctl [global options] COMMAND [options] ...\n\ncommands:\n");
		for (size_t i = 0; cmd_table[i]; i++)
			fprintf(f, "  %-10s %s\n", cmd_table[i]->name, cmd_table[i]->summary);
		help_table(f, "global options (anywhere on the line)", opt_global, NULL);
		fprintf(f, "\n'knobctl help COMMAND' or 'knobctl COMMAND --help' shows a command's options.\n"
		    "Exit status: 0 all nodes ok, 1 some node failed/drifted/unreachable, "
		    "2 usage or input error,\n3 (sweep) the sweep itself failed: --prom file, "
		    "results database, scontrol,\nor no node checked because the agents refused our credentials, "
		    "128 + signal (play, bench)\nstopped by a signal (130 SIGINT, 143 SIGTERM), "
		    "141 output's reader went away.\n");
		return;
	}
	fprintf(f, "usage: knobctl %s%s%s%s%s\n\n%s\n", ce->name, cmd_nodes_usage(ce),
	    opt_count(ce->opts) ? " [options]" : "", ce->usage[0] ? " " : "", ce->usage,
	    ce->summary);
	if (ce->flags & CMD_NODES)
		help_table(f, "node set", opt_nodes, ce);
	if (ce->flags & CMD_FANOUT)
		help_table(f, "fan-out", opt_fanout, ce);
	if (ce->flags & (CMD_SSH | CMD_FANOUT))
		help_table(f, "ssh", opt_ssh, ce);
	help_table(f, "options", ce->opts, ce);
	if (ce->more)
		fprintf(f, "\n%s\n", ce->more);
	/* nodeset's -c is its own --count: there the inventory is --cluster */
	fprintf(f, "\nGlobal options (%s, --json, --timeout S, ...: 'knobctl help') may appear "
	    "anywhere.\n", cmd_has_short(ce, 'c') ? "--cluster FILE" : "-c FILE");
}

int
opt_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *u64, uint32_t *u32)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	if (u64)
		*u64 = v;
	if (u32)
		*u32 = (uint32_t)v;
	return 0;
}

int
opt_store(const struct opt_val *vals, size_t n, int id, const char *arg, void *base)
{
	const struct opt_val *v = NULL;
	char *p = (char *)base;
	uint64_t x;

	for (size_t i = 0; i < n && v == NULL; i++)
		if (vals[i].id == id)
			v = &vals[i];
	if (v == NULL)
		return 0;
	p += v->off;
	switch (v->type) {
	case OV_FLAG:
		*(int *)(void *)p = 1;
		return 1;
	case OV_STR:
		*(const char **)(void *)p = arg;
		return 1;
	case OV_U32:
		return opt_parse_uint(arg, v->min, v->max ? v->max : UINT32_MAX, NULL,
		    (uint32_t *)(void *)p) < 0 ? -1 : 1;
	case OV_U64:
		return opt_parse_uint(arg, v->min, v->max ? v->max : UINT64_MAX,
		    (uint64_t *)(void *)p, NULL) < 0 ? -1 : 1;
	case OV_SIZE:
		if (bench_parse_size(arg, &x) < 0 || x < v->min || (v->max && x > v->max))
			return -1;
		*(uint64_t *)(void *)p = x;
		return 1;
	}
	return -1;
}
