/* json-c member getters with defaults (see json.h). */
#include "json.h"

json_object *
js_get(json_object *o, const char *k)
{
	json_object *v = NULL;

	if (o == NULL || !json_object_object_get_ex(o, k, &v))
		return NULL;
	return v;
}

const char *
js_str(json_object *o, const char *k)
{
	json_object *v = js_get(o, k);

	return v ? json_object_get_string(v) : "";
}

const char *
js_string(json_object *o, const char *k)
{
	json_object *v = js_get(o, k);

	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

double
js_num(json_object *o, const char *k)
{
	json_object *v = js_get(o, k);

	return v ? json_object_get_double(v) : 0;
}

int64_t
js_int(json_object *o, const char *k)
{
	json_object *v = js_get(o, k);

	return v ? json_object_get_int64(v) : 0;
}

int
js_bool(json_object *o, const char *k)
{
	json_object *v = js_get(o, k);

	return v ? json_object_get_boolean(v) : 0;
}

const char *
js_text(json_object *o, const char *k)
{
	json_object *v = NULL;

	if (o == NULL || !json_object_object_get_ex(o, k, &v))
		return "";
	return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);	/* null: "null" */
}

json_object *
js_array(json_object *o, const char *k)
{
	json_object *v = js_get(o, k);

	return json_object_is_type(v, json_type_array) ? v : NULL;
}
