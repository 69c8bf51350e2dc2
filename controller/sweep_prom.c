/* knobctl sweep --prom FILE: the node_exporter text-file collector format.
 * One gauge sample per node and check with the state as a label (value 1),
 * the worst state per node, the sweep's duration and its end time.  The
 * file is written beside FILE (write_file_atomic_with) and renamed, so
 * node_exporter never reads half a file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sweep.h"

/* Label value with \, " and newline escaped (text format rules). */
static void
put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*s, f);
	}
}

/* Did an earlier check of node nd give the same series (check, target,
 * state)?  A module and the nfsd thread count both report "service nfsd":
 * node_exporter drops a file with a series twice. */
static int
series_seen(const struct sweep_node *nd, size_t k)
{
	const struct sweep_check *c = &nd->c[k];

	for (size_t j = 0; j < k; j++)
		if (nd->c[j].state == c->state && strcmp(nd->c[j].check, c->check) == 0 &&
		    strcmp(nd->c[j].target, c->target) == 0)
			return 1;
	return 0;
}

/* The metrics into f. */
static void
prom_body(FILE *f, const struct sweep_run *run)
{
	fputs("# HELP knob_health_check State of one health check of a node (1 = in the state "
	    "labelled).\n# TYPE knob_health_check gauge\n", f);
	for (size_t i = 0; i < run->n; i++)
		for (size_t k = 0; k < run->nodes[i].n; k++) {
			const struct sweep_check *c = &run->nodes[i].c[k];

			if (series_seen(&run->nodes[i], k))
				continue;
			fputs("knob_health_check{node=\"", f);
			put_label(f, run->nodes[i].name);
			fputs("\",check=\"", f);
			put_label(f, c->check);
			fputs("\",target=\"", f);
			put_label(f, c->target);
			fprintf(f, "\",state=\"%s\"} 1\n", sweep_state_name(c->state));
		}
	fputs("# HELP knob_health_node_ok 1 when every check of the node is ok or skipped.\n"
	    "# TYPE knob_health_node_ok gauge\n", f);
	for (size_t i = 0; i < run->n; i++) {
		fputs("knob_health_node_ok{node=\"", f);
		put_label(f, run->nodes[i].name);
		fprintf(f, "\",state=\"%s\"} %d\n", sweep_state_name(run->nodes[i].worst),
		    !sweep_state_bad(run->nodes[i].worst));
	}
	fprintf(f, "# HELP knob_sweep_duration_seconds Wall time of the last sweep.\n"
	    "# TYPE knob_sweep_duration_seconds gauge\nknob_sweep_duration_seconds %.3f\n"
	    "# HELP knob_sweep_last_timestamp_seconds When the last sweep ended (Unix time).\n"
	    "# TYPE knob_sweep_last_timestamp_seconds gauge\n"
	    "knob_sweep_last_timestamp_seconds %.3f\n", run->duration_s,
	    (double)run->end_real_ns / 1e9);
}

/* write_file_atomic_with's fill: the exposition of run. */
static int
prom_fill(FILE *f, void *arg)
{
	prom_body(f, arg);
	return 0;
}

int
sweep_prom_write(const char *path, const struct sweep_run *run, char *err, size_t errlen)
{
	int rc = write_file_atomic_with(path, 0644, prom_fill, (void *)(uintptr_t)run);

	if (rc < 0)
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
	return rc < 0 ? -1 : 0;
}
