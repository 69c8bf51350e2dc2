/* PLACEHOLDER owned by the tuning work (issue 3); replaced wholesale. */
#include <errno.h>
#include "agent.h"

int tune_init(struct agent *a) { (void)a; return 0; }
void tune_fini(struct agent *a) { (void)a; }
const char *tune_active_profile(struct agent *a) { (void)a; return ""; }
int h_apply(struct agent *a, struct aconn *c, Knob__Envelope *r) { return agent_reply_error(a, c, r->id, ENOSYS, "apply not built yet"); }
int h_verify(struct agent *a, struct aconn *c, Knob__Envelope *r) { return agent_reply_error(a, c, r->id, ENOSYS, "verify not built yet"); }
int h_rollback(struct agent *a, struct aconn *c, Knob__Envelope *r) { return agent_reply_error(a, c, r->id, ENOSYS, "rollback not built yet"); }
