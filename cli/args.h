/* args.h — small, strict parsers for command-line values. Each prints a
 * clear message naming the flag and returns -1 on bad input, so commands
 * can `return 2` (usage error) without ever acting on a half-parsed value. */
#ifndef SPECULA_CLI_ARGS_H
#define SPECULA_CLI_ARGS_H

#include <stdint.h>

int arg_int(const char *flag, const char *text, long lo, long hi, int *out);
int arg_u64(const char *flag, const char *text, uint64_t *out);
int arg_float(const char *flag, const char *text, double lo, double hi, float *out);

/* "3,1,4" or "3 1 4" → ids[n] (malloc'ed); every id must be in [0, V). */
int arg_tokens(const char *flag, const char *text, int V, int **ids, int *n);

/* Returns argv[*i + 1] and advances *i, or prints "FLAG needs a value". */
const char *arg_value(int argc, char **argv, int *i);

/* The embedded default model directory (models/ of the source tree). */
const char *default_model_dir(void);

#endif
