/* knobctl ping: reachability and round-trip time of every target. */
#include <stdio.h>
#include <string.h>

#include "knobctl.h"
#include "util.h"

static char *
render_ping(struct fanout *fo, struct fo_node *n, void *arg)
{
	(void)fo;
	(void)arg;
	if (n->status != NS_OK || n->reply == NULL || n->reply->body_case != KNOB__ENVELOPE__BODY_PONG)
		return NULL;
	return xasprintf("pong (knobd %s)", n->reply->pong->agent_version);
}

/* Per-node JSON: round trip and clock offset estimate. */
static json_object *
json_ping(struct fanout *fo, struct fo_node *n, void *arg)
{
	json_object *o;
	const Knob__Pong *p;

	(void)fo;
	(void)arg;
	if (n->status != NS_OK || n->reply == NULL || n->reply->body_case != KNOB__ENVELOPE__BODY_PONG)
		return NULL;
	p = n->reply->pong;
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
	struct strvec names = { 0 };
	struct fanout fo;
	int rc;

	if (opt_operands(ctl, argc, argv, 0, 0) < 0 || ctl_targets(ctl, &names) < 0) {
		strvec_free(&names);
		return 2;
	}
	fanout_init(&fo, ctl, &names);
	ping.t_send_ns = now_real_ns();
	env.body_case = KNOB__ENVELOPE__BODY_PING;
	env.ping = &ping;
	if (fanout_request(&fo, &env) < 0) {
		fanout_free(&fo);
		strvec_free(&names);
		return 2;
	}
	if (ctl->json)
		output_json(ctl, &fo, json_ping, NULL);
	else {
		output_folded(ctl, &fo, render_ping, NULL);
		output_summary(ctl, &fo);
	}
	rc = output_exit_status(&fo);
	fanout_free(&fo);
	strvec_free(&names);
	return rc;
}

const struct cmd_entry cmd_ping_entry = {
	"ping", "", "reachability and agent version of every target", CMD_NODES | CMD_FANOUT, NULL, cmd_ping, NULL,
};
