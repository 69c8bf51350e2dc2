/* Request dispatch: a table keyed by the Envelope's body type. */
#include <errno.h>
#include <string.h>

#include "agent.h"
#include "log.h"
#include "util.h"

struct handler {
	Knob__Envelope__BodyCase body;
	const char *name;
	agent_handler_fn fn;
};

static const struct handler handlers[] = {
	{ KNOB__ENVELOPE__BODY_PING, "ping", h_ping },
	{ KNOB__ENVELOPE__BODY_FACTS_REQUEST, "facts", h_facts },
	{ KNOB__ENVELOPE__BODY_APPLY, "apply", h_apply },
	{ KNOB__ENVELOPE__BODY_VERIFY, "verify", h_verify },
	{ KNOB__ENVELOPE__BODY_ROLLBACK, "rollback", h_rollback },
	{ KNOB__ENVELOPE__BODY_PHASE_PREPARE, "phase-prepare", h_phase_prepare },
	{ KNOB__ENVELOPE__BODY_PHASE_GO, "phase-go", h_phase_go },
	{ KNOB__ENVELOPE__BODY_PHASE_ABORT, "phase-abort", h_phase_abort },
	{ KNOB__ENVELOPE__BODY_HEALTH, "health", h_health },
};

/* Answer a Ping with our clock (used for clock-offset estimation). */
int
h_ping(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Pong pong = KNOB__PONG__INIT;

	pong.t_echo_ns = req->ping->t_send_ns;
	pong.agent_time_ns = now_real_ns();
	pong.node = a->node;
	pong.agent_version = (char *)(uintptr_t)KNOB_VERSION;
	env.body_case = KNOB__ENVELOPE__BODY_PONG;
	env.pong = &pong;
	return agent_reply(a, c, req->id, &env);
}

/* Route req to its handler; a body the agent does not serve closes the
 * connection (after an Error reply naming it). */
int
agent_dispatch(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	for (size_t i = 0; i < nitems(handlers); i++)
		if (handlers[i].body == req->body_case) {
			log_debug("%s: %s request %llu", c->peer, handlers[i].name,
			    (unsigned long long)req->id);
			return handlers[i].fn(a, c, req);
		}
	log_warnx("%s (%s): unexpected %s message; closing", c->addr, c->peer,
	    envelope_body_name(req));
	agent_reply_error(a, c, req->id, EPROTO, "unexpected message '%s'",
	    envelope_body_name(req));
	return -1;
}
