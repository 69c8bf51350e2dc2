/* Small helpers the Check test programs share: JSON lookups that fail the
 * test when a key is missing, a recursive entry count, and running a suite. */
#ifndef KNOB_CHECKUTIL_H
#define KNOB_CHECKUTIL_H

#include <stdint.h>
#include <check.h>
#include <json-c/json.h>

/* o[k]; a failed check when there is none. */
json_object *cu_get(json_object *o, const char *k);
int64_t cu_int(json_object *o, const char *k);
double cu_num(json_object *o, const char *k);
const char *cu_str(json_object *o, const char *k);
/* doc.phases[i] */
json_object *cu_phase(json_object *doc, size_t i);
/* Entries below dir (recursively); 0 when it is gone. */
int cu_count_entries(const char *dir);
/* A test case with a checked fixture and a timeout (seconds). */
TCase *cu_tcase(const char *name, void (*setup)(void), void (*teardown)(void), int timeout);
/* Run the suite (forking), free it; 0 when every test passed, else 1. */
int cu_run(Suite *s);

#endif
