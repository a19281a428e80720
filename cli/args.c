/* args.c — strict command-line value parsing (see args.h). */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SPECULA_MODELS_DIR
#define SPECULA_MODELS_DIR "models"
#endif

int arg_int(const char *flag, const char *text, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) {
        fprintf(stderr, "specula: %s expects an integer in [%ld, %ld], got '%s'\n", flag, lo, hi, text);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int arg_u64(const char *flag, const char *text, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-') {
        fprintf(stderr, "specula: %s expects a non-negative integer, got '%s'\n", flag, text);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

int arg_float(const char *flag, const char *text, double lo, double hi, float *out) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "specula: %s expects a number in [%g, %g], got '%s'\n", flag, lo, hi, text);
        return -1;
    }
    *out = (float)v;
    return 0;
}

int arg_tokens(const char *flag, const char *text, int V, int **ids, int *n) {
    int cap = 16, count = 0;
    int *out = malloc((size_t)cap * sizeof *out);
    const char *p = text;
    while (out && *p) {
        while (*p == ',' || *p == ' ') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || (*end && *end != ',' && *end != ' ') || v < 0 || v >= V) {
            fprintf(stderr, "specula: %s: '%.*s' is not a token id in [0, %d)\n", flag, (int)strcspn(p, ", "), p, V);
            free(out);
            return -1;
        }
        if (count == cap) {
            int *grown = realloc(out, (size_t)(cap *= 2) * sizeof *out);
            if (!grown) break;
            out = grown;
        }
        out[count++] = (int)v;
        p = end;
    }
    if (!out || count == 0) {
        fprintf(stderr, "specula: %s needs at least one token id\n", flag);
        free(out);
        return -1;
    }
    *ids = out;
    *n = count;
    return 0;
}

const char *arg_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        fprintf(stderr, "specula: %s needs a value\n", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

const char *default_model_dir(void) { return SPECULA_MODELS_DIR "/tiny-shakespeare"; }
