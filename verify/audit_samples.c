/* audit_samples.c — the sample file (audit_samples.h): strict reading, so a
 * truncated or garbled adapter output is refused rather than tested. */
#include "audit_samples.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

void audit_samples_init(audit_samples *s, int L) {
    memset(s, 0, sizeof *s);
    s->L = L;
}

void audit_samples_free(audit_samples *s) {
    free(s->tokens);
    memset(s, 0, sizeof *s);
}

int audit_samples_add(audit_samples *s, const int *tokens, sp_error *err) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 256;
        int *t = realloc(s->tokens, (size_t)cap * (size_t)s->L * sizeof *t);
        if (!t) return sp_fail(err, "out of memory for %d samples of %d tokens", cap, s->L);
        s->tokens = t;
        s->cap = cap;
    }
    memcpy(s->tokens + (size_t)s->n * (size_t)s->L, tokens, (size_t)s->L * sizeof *tokens);
    s->n++;
    return 0;
}

/* A character for a one-line message: itself when printable, else its code (a newline would split the line). */
static const char *shown(char c, char *buf, size_t size) {
    snprintf(buf, size, isprint((unsigned char)c) ? "'%c'" : "byte 0x%02x",
             isprint((unsigned char)c) ? c : (unsigned char)c);
    return buf;
}

/* Parses one sample line into row[L]: ids separated by spaces, tabs or
 * commas, exactly L of them. */
static int parse_line(char *line, int L, int V, int *row, const char *what, long lineno, sp_error *err) {
    char c[16];
    int k = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\r' || *p == '\n') p++;
        if (!*p) break;
        if (!isdigit((unsigned char)*p))
            return sp_fail(err, "%s line %ld: expected token ids, found %s", what, lineno, shown(*p, c, sizeof c));
        errno = 0;
        char *end;
        long v = strtol(p, &end, 10);
        if (errno || v >= V) /* the number alone: the rest of the line (and its newline) stays out of the message */
            return sp_fail(err, "%s line %ld: token %.*s is outside the vocabulary (%d)", what, lineno,
                           (int)(end - p < 20 ? end - p : 20), p, V);
        if (*end && !strchr(" \t,\r\n", *end))
            return sp_fail(err, "%s line %ld: expected token ids, found %s", what, lineno, shown(*end, c, sizeof c));
        if (k == L) return sp_fail(err, "%s line %ld: more than %d tokens", what, lineno, L);
        row[k++] = (int)v;
        p = end;
    }
    if (k != L) return sp_fail(err, "%s line %ld: %d tokens, expected %d", what, lineno, k, L);
    return 0;
}

int audit_samples_read(audit_samples *s, FILE *f, const char *what, int V, int max, sp_error *err) {
    int *row = malloc((size_t)s->L * sizeof *row);
    if (!row) return sp_fail(err, "out of memory");
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    int rc = 0;
    while ((max <= 0 || s->n < max) && getline(&line, &cap, f) >= 0) {
        lineno++;
        const char *q = line;
        while (*q == ' ' || *q == '\t') q++;
        if (*q == '#' || *q == '\n' || *q == '\r' || !*q) continue;
        if ((rc = parse_line(line, s->L, V, row, what, lineno, err)) || (rc = audit_samples_add(s, row, err))) break;
    }
    if (!rc && ferror(f)) rc = sp_fail(err, "%s: read error: %s", what, strerror(errno));
    free(line);
    free(row);
    return rc;
}

int audit_samples_write(const audit_samples *s, FILE *f, sp_error *err) {
    for (int i = 0; i < s->n; i++) {
        const int *row = s->tokens + (size_t)i * (size_t)s->L;
        for (int t = 0; t < s->L; t++) fprintf(f, "%s%d", t ? " " : "", row[t]);
        fputc('\n', f);
    }
    if (ferror(f)) return sp_fail(err, "write error: %s", strerror(errno));
    return 0;
}
