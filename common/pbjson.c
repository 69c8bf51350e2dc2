/* Descriptor-driven protobuf-c to json-c conversion. */
#include <ctype.h>
#include <string.h>

#include "pbjson.h"

/* Length of the prefix (through its last '_') all value names of d share. */
static size_t
enum_prefix(const ProtobufCEnumDescriptor *d)
{
	const char *first = d->values[0].name;
	size_t n = strlen(first), k;

	for (unsigned i = 1; i < d->n_values; i++) {
		for (k = 0; k < n && first[k] == d->values[i].name[k]; k++)
			;
		n = k;
	}
	while (n > 0 && first[n - 1] != '_')
		n--;
	return n;
}

const char *
pb_enum_label(const ProtobufCEnumDescriptor *d, int value, char *buf, size_t len)
{
	const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(d, value);
	size_t i = 0;

	if (ev == NULL || len == 0)
		return NULL;
	for (const char *p = ev->name + (d->n_values > 1 ? enum_prefix(d) : 0); *p && i + 1 < len;
	    p++)
		buf[i++] = *p == '_' ? '-' : (char)tolower((unsigned char)*p);
	buf[i] = '\0';
	return buf;
}

/* One scalar (or nested message) value at p as a json object. */
static json_object *
value_to_json(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		return json_object_new_int(*(const int32_t *)p);
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return json_object_new_int64(*(const uint32_t *)p);
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return json_object_new_int64(*(const int64_t *)p);
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return json_object_new_uint64(*(const uint64_t *)p);
	case PROTOBUF_C_TYPE_FLOAT:
		return json_object_new_double(*(const float *)p);
	case PROTOBUF_C_TYPE_DOUBLE:
		return json_object_new_double(*(const double *)p);
	case PROTOBUF_C_TYPE_BOOL:
		return json_object_new_boolean(*(const protobuf_c_boolean *)p);
	case PROTOBUF_C_TYPE_ENUM: {
		char buf[64];
		const char *l = pb_enum_label(f->descriptor, *(const int *)p, buf, sizeof(buf));

		return l ? json_object_new_string(l) : json_object_new_int(*(const int *)p);
	}
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;
		return json_object_new_string(s ? s : "");
	}
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = p;
		return json_object_new_string_len((const char *)b->data, (int)b->len);
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *m = *(const ProtobufCMessage *const *)p;
		return m ? pb_to_json(m) : NULL;
	}
	}
	return NULL;
}

/* Size of one element of a repeated field of this type. */
static size_t
elem_size(const ProtobufCFieldDescriptor *f)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	default:
		return 4;
	}
}

json_object *
pb_to_json(const ProtobufCMessage *msg)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	json_object *o = json_object_new_object();

	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *base = (const char *)msg;
		json_object *v;

		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			uint32_t which = *(const uint32_t *)(base + f->quantifier_offset);
			if (which != f->id)
				continue;
		}
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			const char *arr = *(const char *const *)(base + f->offset);
			json_object *ja = json_object_new_array();

			for (size_t k = 0; k < n; k++) {
				v = value_to_json(f, arr + k * elem_size(f));
				json_object_array_add(ja, v ? v : json_object_new_null());
			}
			json_object_object_add(o, f->name, ja);
			continue;
		}
		v = value_to_json(f, base + f->offset);
		if (v != NULL)
			json_object_object_add(o, f->name, v);
	}
	return o;
}
