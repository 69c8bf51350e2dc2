/* The subcommand table: one struct cmd_entry per command, defined next to
 * the command in its cmd_*.c file, listed here in help order. */
#include <string.h>

#include "knobctl.h"
#include "opt.h"

const struct cmd_entry *const cmd_table[] = {
	&cmd_ca_entry,
	&cmd_ping_entry,
	&cmd_facts_entry,
	&cmd_profile_entry,
	&cmd_apply_entry,
	&cmd_verify_entry,
	&cmd_rollback_entry,
	&cmd_off_entry,
	&cmd_active_entry,
	&cmd_bench_entry,
	&cmd_results_entry,
	&cmd_play_entry,
	&cmd_report_entry,
	&cmd_sweep_entry,
	&cmd_bootstrap_entry,
	&cmd_mux_entry,
	&cmd_nodeset_entry,
	&cmd_help_entry,
	NULL,
};

const struct cmd_entry *
cmd_find(const char *name)
{
	for (size_t i = 0; cmd_table[i]; i++)
		if (strcmp(cmd_table[i]->name, name) == 0)
			return cmd_table[i];
	return NULL;
}
