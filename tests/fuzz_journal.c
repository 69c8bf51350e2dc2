/* libFuzzer target: the tuning journal loader.  Any bytes must either
 * load into a journal that saves and loads back the same, or be refused;
 * never crash, leak or read out of bounds. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "tune.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct journal j, back;
	const char *path = fuzz_file("journal.json", data, size);
	char again[4096];

	if (path == NULL || journal_load(path, &j) < 0)
		return 0;
	/* what loaded must save and load back with the same content */
	snprintf(again, sizeof(again), "%s/again.json", fuzz_dir());
	if (journal_save(again, &j) < 0)
		abort();
	if (journal_load(again, &back) < 0 || back.norig != j.norig || back.ntxn != j.ntxn ||
	    back.npend != j.npend || back.in_txn != j.in_txn || strcmp(back.active, j.active))
		abort();
	journal_free(&back);
	journal_free(&j);
	return 0;
}
