/* csv.h — tables as comma-separated values (RFC 4180): a header row, then a row per line; a field with a comma, a
 * quote or a line break is quoted, its quotes doubled. What `--csv` of bench and verify prints. */
#ifndef SPECULA_CLI_CSV_H
#define SPECULA_CLI_CSV_H

#include <stdio.h>

/* One text field, preceded by a comma unless first. */
void csv_text(FILE *f, const char *text, int first);
/* One number (%.6g; empty when not finite), preceded by a comma unless first. */
void csv_number(FILE *f, double x, int first);
/* The header: names, comma-separated as given ("method,tokens_per_s,..."), and a line break. */
void csv_header(FILE *f, const char *names);

#endif
