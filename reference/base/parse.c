/* parse.c — strict option values (see parse.h). */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Numbers as a person writes them in decimal: strtol and strtod also take leading space, a '+', and (strtod)
 * hexadecimal floats, "inf" and "nan", none of which a flag's value should be. */
static const char *digits(const char *p) {
    while (isdigit((unsigned char)*p)) p++;
    return p;
}

/* -?[0-9]+ */
static int decimal_integer(const char *s) {
    const char *p = s + (*s == '-');
    return isdigit((unsigned char)*p) && !*digits(p);
}

/* -?([0-9]+(.[0-9]*)?|.[0-9]+)([eE][-+]?[0-9]+)? */
static int decimal_number(const char *s) {
    const char *p = s + (*s == '-'), *int_end = digits(p);
    const char *q = int_end, *frac_end = int_end;
    if (*q == '.') frac_end = digits(q + 1);
    if (int_end == p && frac_end <= q + 1) return 0; /* no digit before or after the point */
    p = frac_end;
    if (*p == 'e' || *p == 'E') {
        p += 1 + (p[1] == '-' || p[1] == '+');
        if (!isdigit((unsigned char)*p)) return 0;
        p = digits(p);
    }
    return !*p;
}

int parse_int(const char *flag, const char *text, long lo, long hi, int *out, sp_error *err) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!decimal_integer(text) || errno || end == text || *end || v < lo || v > hi)
        return sp_fail(err, "%s expects an integer in [%ld, %ld], got '%s'", flag, lo, hi, text);
    *out = (int)v;
    return 0;
}

int parse_u64(const char *flag, const char *text, uint64_t *out, sp_error *err) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    /* digits only: strtoull skips leading space and negates a '-' after it, so " -1" would read as 2^64 - 1 */
    if (errno || end == text || *end || !isdigit((unsigned char)text[0]))
        return sp_fail(err, "%s expects a non-negative integer, got '%s'", flag, text);
    *out = (uint64_t)v;
    return 0;
}

int parse_float(const char *flag, const char *text, double lo, double hi, float *out, sp_error *err) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!decimal_number(text) || errno || end == text || *end || !isfinite(v) || v < lo || v > hi)
        return sp_fail(err, "%s expects a number in [%g, %g], got '%s'", flag, lo, hi, text);
    *out = (float)v;
    return 0;
}

int parse_tokens(const char *flag, const char *text, int V, int **ids, int *n, sp_error *err) {
    int cap = 16, count = 0;
    int *out = sp_xcalloc((size_t)cap, sizeof *out, "token ids");
    for (const char *p = text; *p;) {
        while (*p == ',' || *p == ' ') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (!isdigit((unsigned char)*p) || errno || end == p || (*end && *end != ',' && *end != ' ') || v < 0 ||
            v >= V) {
            sp_fail(err, "%s: '%.*s' is not a token id in [0, %d)", flag, (int)strcspn(p, ", "), p, V);
            free(out);
            return -1;
        }
        if (count == cap) out = sp_xrealloc(out, (size_t)(cap *= 2), sizeof *out, "token ids");
        out[count++] = (int)v;
        p = end;
    }
    if (count == 0) {
        free(out);
        return sp_fail(err, "%s needs at least one token id", flag);
    }
    *ids = out;
    *n = count;
    return 0;
}
