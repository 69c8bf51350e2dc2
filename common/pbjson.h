/* Generic protobuf-c message -> json-c object, driven by the descriptors,
 * so every wire record can be printed with --json without per-type code. */
#ifndef KNOB_PBJSON_H
#define KNOB_PBJSON_H

#include <json-c/json.h>
#include <protobuf-c/protobuf-c.h>

/* New json object for msg (caller puts it).  Fields at their proto3 default
 * are included, so every record has the same keys; enums print by name. */
json_object *pb_to_json(const ProtobufCMessage *msg);

#endif
