/* parse.h — strict parsing of option values ("--k 4", "--top-p 0.9", a list of token ids), for the command line
 * and method.h's catalogue entries alike. Each function names the flag in its message and writes nothing on bad
 * input, so no caller acts on a half-parsed value. */
#ifndef SPECULA_PARSE_H
#define SPECULA_PARSE_H

#include <stdint.h>

#include "error.h"

int parse_int(const char *flag, const char *text, long lo, long hi, int *out, sp_error *err);
int parse_u64(const char *flag, const char *text, uint64_t *out, sp_error *err);
int parse_float(const char *flag, const char *text, double lo, double hi, float *out, sp_error *err);

/* "3,1,4" or "3 1 4" → ids[n] (malloc'ed); every id must be in [0, V). */
int parse_tokens(const char *flag, const char *text, int V, int **ids, int *n, sp_error *err);

#endif
