/* csv.c — comma-separated values (csv.h). */
#include "csv.h"

#include <math.h>
#include <string.h>

void csv_text(FILE *f, const char *text, int first) {
    if (!first) fputc(',', f);
    if (!strpbrk(text, ",\"\r\n")) {
        fputs(text, f);
        return;
    }
    fputc('"', f);
    for (const char *p = text; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

void csv_number(FILE *f, double x, int first) {
    if (!first) fputc(',', f);
    if (isfinite(x)) fprintf(f, "%.6g", x);
}

void csv_header(FILE *f, const char *names) { fprintf(f, "%s\n", names); }
