/* PLACEHOLDER owned by the benchmark work (issue 4); replaced wholesale. */
#include <errno.h>
#include "agent.h"

int bench_init(struct agent *a) { (void)a; return 0; }
void bench_fini(struct agent *a) { (void)a; }
void bench_conn_closed(struct agent *a, uint64_t id) { (void)a; (void)id; }
void bench_conn_activity(struct agent *a, uint64_t id) { (void)a; (void)id; }
void bench_tick(struct agent *a) { (void)a; }
int h_phase_prepare(struct agent *a, struct aconn *c, Knob__Envelope *r) { return agent_reply_error(a, c, r->id, ENOSYS, "bench not built yet"); }
int h_phase_go(struct agent *a, struct aconn *c, Knob__Envelope *r) { return agent_reply_error(a, c, r->id, ENOSYS, "bench not built yet"); }
int h_phase_abort(struct agent *a, struct aconn *c, Knob__Envelope *r) { return agent_reply_error(a, c, r->id, ENOSYS, "bench not built yet"); }
