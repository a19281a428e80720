/* args.c — strict command-line value parsing (see args.h). */
#include "args.h"

#include <stdio.h>

#include "parse.h"

#ifndef SPECULA_MODELS_DIR
#define SPECULA_MODELS_DIR "models"
#endif

/* The parsers of parse.h, with their message printed. */
static int report(int rc, const sp_error *err) {
    if (rc) fprintf(stderr, "specula: %s\n", err->msg);
    return rc;
}

int arg_int(const char *flag, const char *text, long lo, long hi, int *out) {
    sp_error err;
    return report(parse_int(flag, text, lo, hi, out, &err), &err);
}

int arg_u64(const char *flag, const char *text, uint64_t *out) {
    sp_error err;
    return report(parse_u64(flag, text, out, &err), &err);
}

int arg_float(const char *flag, const char *text, double lo, double hi, float *out) {
    sp_error err;
    return report(parse_float(flag, text, lo, hi, out, &err), &err);
}

int arg_tokens(const char *flag, const char *text, int V, int **ids, int *n) {
    sp_error err;
    return report(parse_tokens(flag, text, V, ids, n, &err), &err);
}

const char *arg_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        fprintf(stderr, "specula: %s needs a value\n", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

const char *default_model_dir(void) { return SPECULA_MODELS_DIR "/tiny-shakespeare"; }
