/* generate_args.h — the command line of `specula generate`, parsed apart
 * from the run so it can be checked (and fuzzed) without loading a model. */
#ifndef SPECULA_CLI_GENERATE_ARGS_H
#define SPECULA_CLI_GENERATE_ARGS_H

#include "method_cli.h"

#define DEFAULT_PROMPT "ROMEO:\n" /* the prompt when none is given */
#define DEFAULT_PROMPT_ESCAPED "ROMEO:\\n"

typedef struct {
    method_spec spec;
    model_flags models;
    const char *tokens_text, *prompt_text;
    int json, stream, print_ids;
} generate_args;

/* Parses argv[1..argc) (argv[0] is "generate") into *a: 0 to run, 1 after
 * --help (printed), 2 on a bad or contradictory flag (one line on stderr). */
int generate_parse(int argc, char **argv, generate_args *a);

#endif
