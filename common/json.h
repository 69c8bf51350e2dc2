/* The one place for json-c look-ups: a member of an object by key, as a
 * string, number or boolean, with a default when the member is absent.
 * Every getter accepts a NULL object (and then returns the default). */
#ifndef KNOB_JSON_H
#define KNOB_JSON_H

#include <stdint.h>

#include <json-c/json.h>

/* Member k of o; NULL when o is NULL, k is absent or its value is null. */
json_object *js_get(json_object *o, const char *k);
/* Member k as text (numbers print as JSON); "" when absent. */
const char *js_str(json_object *o, const char *k);
/* Member k when it is a JSON string; NULL otherwise (strict readers). */
const char *js_string(json_object *o, const char *k);
/* Member k as a number; 0 when absent. */
double js_num(json_object *o, const char *k);
/* Member k as an integer; 0 when absent. */
int64_t js_int(json_object *o, const char *k);
/* Member k as a boolean; 0 when absent. */
int js_bool(json_object *o, const char *k);
/* Member k serialised as compact JSON text ("null" for null); "" when absent. */
const char *js_text(json_object *o, const char *k);
/* Member k when it is an array; NULL otherwise. */
json_object *js_array(json_object *o, const char *k);

#endif
