/* The CSV that knobctl writes (controller/csv.c): RFC 4180, and safe to
 * open in a spreadsheet. */
#ifndef KNOB_CSV_H
#define KNOB_CSV_H

#include <stdio.h>
#include <json-c/json.h>

/* A column: its header (the key of the rows' objects) and its type. */
struct csv_col {
	const char *key;
	int text;		/* 1: a text; 0: a number (or a boolean) */
};

/* Rows (JSON objects) as CSV on f: a header of the columns' keys, then
 * one line per row, a member absent or null as an empty field, numbers
 * as JSON prints them.  A field is quoted when it holds a comma, a
 * double quote, a line feed or a carriage return (its quotes doubled);
 * a text column's field that starts with =, +, -, @, a tab or a carriage
 * return gets a ' in front, inside quotes, so that a spreadsheet shows it
 * as text and does not run it as a formula (OWASP "CSV injection"); a
 * number column's field never does: -3.5 stays a number. */
void csv_rows(FILE *f, const struct csv_col *cols, size_t ncols, json_object *rows);

#endif
