/* PLACEHOLDER owned by the facts work; replaced wholesale. */
#include <string.h>
#include "agent.h"
#include "util.h"

int facts_gather(struct agent *a, Knob__Facts *f) { knob__facts__init(f); f->node = xstrdup(a->node); return 0; }
void facts_free(Knob__Facts *f) { free(f->node); }
int h_facts(struct agent *a, struct aconn *c, Knob__Envelope *req)
{
	Knob__Envelope env = KNOB__ENVELOPE__INIT;
	Knob__Facts f;
	int rc;
	facts_gather(a, &f);
	env.body_case = KNOB__ENVELOPE__BODY_FACTS;
	env.facts = &f;
	rc = agent_reply(a, c, req->id, &env);
	facts_free(&f);
	return rc;
}
