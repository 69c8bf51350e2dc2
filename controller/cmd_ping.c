/* knobctl ping: reachability and round-trip time of every target. */
#include <stdio.h>
#include <string.h>

#include "ca.h"
#include "knobctl.h"
#include "util.h"

static char *
render_ping(struct fanout *fo, struct fo_node *n, void *arg)
{
	const Knob__Envelope *r = output_answer(n, KNOB__ENVELOPE__BODY_PONG);

	(void)fo;
	(void)arg;
	return r ? xasprintf("pong (knobd %s)", r->pong->agent_version) : NULL;
}

/* Per-node JSON: round trip and clock offset estimate. */
static json_object *
json_ping(struct fanout *fo, struct fo_node *n, void *arg)
{
	const Knob__Envelope *r = output_answer(n, KNOB__ENVELOPE__BODY_PONG);
	const Knob__Pong *p;
	json_object *o;

	(void)fo;
	(void)arg;
	if (r == NULL)
		return NULL;
	p = r->pong;
	o = json_object_new_object();
	json_object_object_add(o, "agent_version", json_object_new_string(p->agent_version));
	json_object_object_add(o, "agent_node", json_object_new_string(p->node));
	return o;
}

int
cmd_ping(struct ctl *ctl, int argc, char **argv)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Ping ping = KNOB__PING__INIT;

	ping.t_send_ns = now_real_ns();
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	ctl_ca_expiry_warn(ctl, "ping", CA_WARN_DAYS);
	return output_request(ctl, argc, argv, &env, render_ping, json_ping);
}

const struct cmd_entry cmd_ping_entry = {
	"ping", "", "reachability and agent version of every target", CMD_NODES | CMD_FANOUT, NULL, cmd_ping, NULL,
};
