/* knobctl facts: inventory of every target (hardware, OS, storage, NICs). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ca.h"
#include "knobctl.h"
#include "pbjson.h"
#include "util.h"

/* Human-readable facts; identical machines fold together. */
static char *
render_facts(struct fanout *fo, struct fo_node *n, void *arg)
{
	const Knob__Envelope *r = output_answer(n, KNOB__ENVELOPE__BODY_FACTS);
	const Knob__Facts *f;
	char *s = NULL;
	size_t i;

	(void)fo;
	(void)arg;
	if (r == NULL)
		return NULL;
	f = r->facts;
	/* Host name and uptime differ on every node: they are in --json only,
	 * so that identical machines fold together here. */
	str_appendf(&s, "kernel %s  knobd %s\n", f->kernel, f->agent_version);
	if (f->cpu)
		str_appendf(&s, "cpu: %s, %u socket(s), %u cores, %u threads, smt %s\n", f->cpu->model,
		    f->cpu->sockets, f->cpu->cores, f->cpu->threads, f->cpu->smt);
	/* available memory moves all the time: --json only */
	str_appendf(&s, "memory: %llu MiB\n", (unsigned long long)f->mem_total_kb / 1024);
	for (i = 0; i < f->n_blockdevs; i++) {
		const Knob__BlockDevFacts *b = f->blockdevs[i];
		str_appendf(&s, "block %s: %.1f GiB %s scheduler=%s read_ahead_kb=%u nr_requests=%u\n",
		    b->name, (double)b->size_bytes / (1 << 30), b->rotational ? "hdd" : "ssd",
		    b->scheduler, b->read_ahead_kb, b->nr_requests);
	}
	for (i = 0; i < f->n_nics; i++) {
		const Knob__NicFacts *x = f->nics[i];
		str_appendf(&s, "nic %s: %s mtu=%u txqueuelen=%u speed=%lld\n", x->name, x->operstate,
		    x->mtu, x->txqueuelen, (long long)x->speed_mbps);
	}
	for (i = 0; i < f->n_mounts; i++) {
		const Knob__MountFacts *m = f->mounts[i];
		if (strcmp(m->kind, "local") != 0)
			str_appendf(&s, "mount %s on %s (%s, %s)\n", m->source, m->target, m->fstype, m->kind);
	}
	for (i = 0; i < f->n_software; i++) {
		const Knob__SoftwareFacts *w = f->software[i];
		if (w->present)
			str_appendf(&s, "software %s %s\n", w->name, w->version);
	}
	if (f->cert_not_after) {
		time_t t = (time_t)f->cert_not_after;
		struct tm tm;
		char day[32];

		gmtime_r(&t, &tm);
		strftime(day, sizeof(day), "%Y-%m-%d", &tm);
		str_appendf(&s, "certificate: expires %s (%lld days)\n", day,
		    (long long)(f->cert_not_after - (int64_t)time(NULL)) / 86400);
	}
	str_appendf(&s, "profile: %s", f->active_profile[0] ? f->active_profile : "(none)");
	if (f->active_note[0])
		str_appendf(&s, " (%s)", f->active_note);
	return s;
}

static json_object *
json_facts(struct fanout *fo, struct fo_node *n, void *arg)
{
	const Knob__Envelope *r = output_answer(n, KNOB__ENVELOPE__BODY_FACTS);
	json_object *o;

	(void)fo;
	(void)arg;
	if (r == NULL)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "facts", pb_to_json(&r->facts->base));
	return o;
}

int
cmd_facts(struct ctl *ctl, int argc, char **argv)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__FactsRequest req = KNOB__FACTS_REQUEST__INIT;

	env.body_case = KNOB__ENVELOPE__BODY_FACTS_REQUEST;
	env.facts_request = &req;
	ctl_ca_expiry_warn(ctl, "facts", CA_WARN_DAYS);
	return output_request(ctl, argc, argv, &env, render_facts, json_facts);
}

const struct cmd_entry cmd_facts_entry = {
	"facts", "", "inventory of every target: hardware, OS, storage, NICs", CMD_NODES | CMD_FANOUT, NULL, cmd_facts, NULL,
};
