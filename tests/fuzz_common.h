/* Shared by the libFuzzer targets (tests/fuzz_*.c): the input as a
 * NUL-terminated string or as a file, for parsers that take either. */
#ifndef KNOB_FUZZ_COMMON_H
#define KNOB_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A malloc'd NUL-terminated copy of the input. */
char *fuzz_string(const uint8_t *data, size_t size);
/* Write the input to NAME in this process's temp directory (made once,
 * removed at exit); returns the path (static storage) or NULL. */
const char *fuzz_file(const char *name, const uint8_t *data, size_t size);
/* This process's temp directory. */
const char *fuzz_dir(void);
/* Copy the source-tree file src (a schema the loader looks up beside the
 * fuzzed file) into the temp directory; aborts when it is missing (run
 * from the source tree). */
void fuzz_copy_in(const char *src);
/* An inventory loaded from xml (written to the temp directory as
 * cluster.xml); aborts when it does not load. */
struct inventory *fuzz_inventory(const char *xml);

#endif
