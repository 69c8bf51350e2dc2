/* knobctl nodeset -f|-e|-c|-l [NODESET...]: fold, expand, count node sets
 * or list the inventory's groups, like ClusterShell's nodeset.  The
 * operands, every -w and -a are united; -x removes.  With --json, -f, -e
 * and -c print {"nodeset": folded, "count": N, "nodes": [...]} and -l
 * {"groups": ["@name", ...]}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knobctl.h"
#include "nodeset.h"
#include "opt.h"

static const struct opt nodeset_opts[] = {
	{ 'f', "fold", OPT_NOARG, NULL, "print the set folded: node[01-03,07]", 0 },
	{ 'e', "expand", OPT_NOARG, NULL, "print every name, space separated", 0 },
	{ 'c', "count", OPT_NOARG, NULL, "print the number of nodes", 0 },
	{ 'l', "list", OPT_NOARG, NULL, "list the inventory's groups (and the built-in @all)", 0 },
	OPT_END
};

/* The inventory's groups, "@name" each, and @all unless it has its own. */
static void
group_names(struct ctl *ctl, struct strvec *v)
{
	int own_all = 0;

	for (size_t i = 0; i < ctl->inv->ngroups; i++) {
		strvec_push_owned(v, xasprintf("@%s", ctl->inv->groups[i].name));
		own_all |= strcmp(ctl->inv->groups[i].name, "all") == 0;
	}
	if (!own_all)
		strvec_push(v, "@all");
}

/* The names in v as a JSON array of strings. */
static json_object *
json_names(const struct strvec *v)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < v->n; i++)
		json_object_array_add(a, json_object_new_string(v->v[i]));
	return a;
}

/* The inventory's groups, one per line, or with --json {"groups": [...]}. */
static void
list_groups(struct ctl *ctl)
{
	struct strvec v = { 0 };
	json_object *doc;

	group_names(ctl, &v);
	if (ctl->json) {
		doc = json_object_new_object();
		json_object_object_add(doc, "groups", json_names(&v));
		output_doc(ctl->out, doc);
	} else {
		for (size_t i = 0; i < v.n; i++)
			fprintf(ctl->out, "%s\n", v.v[i]);
	}
	strvec_free(&v);
}

/* --json of -f, -e, -c: the folded set, the count and every name. */
static void
print_set_json(struct ctl *ctl, const struct strvec *names)
{
	json_object *doc = json_object_new_object();
	char *s = nodeset_fold(names->v, names->n);

	json_object_object_add(doc, "nodeset", json_object_new_string(s));
	json_object_object_add(doc, "count", json_object_new_int64((int64_t)names->n));
	json_object_object_add(doc, "nodes", json_names(names));
	output_doc(ctl->out, doc);
	free(s);
}

/* The set as -f (folded), -e (every name) or -c (the count) prints it. */
static void
print_set(struct ctl *ctl, int mode, const struct strvec *names)
{
	char *s;

	if (ctl->json) {
		print_set_json(ctl, names);
		return;
	}
	switch (mode) {
	case 'c':
		fprintf(ctl->out, "%zu\n", names->n);
		break;
	case 'e':
		for (size_t i = 0; i < names->n; i++)
			fprintf(ctl->out, "%s%s", i ? " " : "", names->v[i]);
		fputc('\n', ctl->out);
		break;
	default:
		s = nodeset_fold(names->v, names->n);
		fprintf(ctl->out, "%s\n", s);
		free(s);
	}
}

static int
cmd_nodeset(struct ctl *ctl, int argc, char **argv)
{
	struct strvec names = { 0 };
	int ch, mode = 0, rc = 2;

	while ((ch = opt_next(ctl, argc, argv)) != -1) {
		if (ch == '?')
			return 2;
		if (mode && mode != ch) {
			fprintf(stderr, "knobctl nodeset: give one of -f, -e, -c, -l\n");
			return 2;
		}
		mode = ch;
	}
	if (mode == 0) {
		fprintf(stderr, "knobctl nodeset: give one of -f, -e, -c, -l\n");
		return 2;
	}
	if (mode == 'l') {
		list_groups(ctl);
		return 0;
	}
	for (; optind < argc; optind++)
		strvec_push(&ctl->w, argv[optind]);
	if (ctl->w.n == 0 && !ctl->all) {
		fprintf(stderr, "knobctl nodeset: no node set given\n");
		return 2;
	}
	if (ctl_expand(ctl, &names) == 0) {
		print_set(ctl, mode, &names);
		rc = 0;
	}
	strvec_free(&names);
	return rc;
}

const struct cmd_entry cmd_nodeset_entry = {
	"nodeset", "[NODESET...]", "fold (-f), expand (-e) or count (-c) node sets; list groups (-l)",
	CMD_NODES | CMD_NODES_OPT, nodeset_opts, cmd_nodeset,
	"The short -c here is --count; the inventory is then given as --cluster FILE,\n"
	"or as -c FILE before the command (knobctl -c FILE nodeset -l).",
};
