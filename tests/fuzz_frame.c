/* libFuzzer target: arbitrary bytes as a frame body must either unpack
 * into a valid envelope or be refused with a reason; never crash, leak or
 * read out of bounds.  Build and run with `make fuzz` (clang). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <json-c/json.h>

#include "pbjson.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Knob__Envelope *env;
	char err[256];
	uint8_t *frame;
	size_t len;

	if (size > FRAME_MAX)
		return 0;
	env = frame_unpack(data, size, err, sizeof(err));
	if (env == NULL)
		return 0;
	/* whatever was accepted must print and re-pack */
	json_object_put(pb_to_json(&env->base));
	if (frame_pack(env, &frame, &len) == 0)
		free(frame);
	knob__envelope__free_unpacked(env, NULL);
	return 0;
}
