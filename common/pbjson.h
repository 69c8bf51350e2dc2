/* Generic protobuf-c message -> json-c object, driven by the descriptors,
 * so every wire record can be printed with --json without per-type code. */
#ifndef KNOB_PBJSON_H
#define KNOB_PBJSON_H

#include <json-c/json.h>
#include <protobuf-c/protobuf-c.h>

/* New json object for msg (caller puts it).  Fields at their proto3 default
 * are included, so every record has the same keys; enums print as their
 * label (pb_enum_label), the names the text output uses. */
json_object *pb_to_json(const ProtobufCMessage *msg);
/* The label of an enum value: its name without the prefix every value of
 * the enum shares, lower case, '_' as '-' (KEY_PENDING_RESTART ->
 * "pending-restart"); NULL for a value the enum does not have. */
const char *pb_enum_label(const ProtobufCEnumDescriptor *d, int value, char *buf, size_t len);

#endif
