/* The CSV that knobctl writes (see csv.h). */
#include <string.h>

#include "csv.h"

/* 1 when a spreadsheet would take a text field s for a formula. */
static int
csv_formula(const char *s)
{
	return s[0] != '\0' && strchr("=+-@\t\r", s[0]) != NULL;
}

/* One field: quoted when it needs to be (RFC 4180: a comma, a quote, a
 * line feed or a carriage return in it), a text that a spreadsheet would
 * run as a formula quoted with a ' in front (csv.h). */
static void
csv_field(FILE *f, const char *s, int text, int last)
{
	int guard = text && csv_formula(s);

	if (guard || strpbrk(s, ",\"\r\n")) {
		fputs(guard ? "\"'" : "\"", f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	} else
		fputs(s, f);
	fputc(last ? '\n' : ',', f);
}

void
csv_rows(FILE *f, const struct csv_col *cols, size_t ncols, json_object *rows)
{
	for (size_t k = 0; k < ncols; k++)
		csv_field(f, cols[k].key, 1, k + 1 == ncols);
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *r = json_object_array_get_idx(rows, i), *v;

		for (size_t k = 0; k < ncols; k++)
			csv_field(f, json_object_object_get_ex(r, cols[k].key, &v) && v ?
			    json_object_get_string(v) : "", cols[k].text, k + 1 == ncols);
	}
}
