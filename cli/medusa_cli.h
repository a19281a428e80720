/* medusa_cli.h — the Medusa options of `specula generate` (--medusa,
 * --tree, --rule, --typical-epsilon, --typical-delta, --medusa-ignore-base),
 * kept apart from cmd_generate.c so that the command only hooks them in:
 * parse a flag, check the combination, build the proposer, release. */
#ifndef SPECULA_CLI_MEDUSA_H
#define SPECULA_CLI_MEDUSA_H

#include <stdio.h>

#include "medusa.h"

typedef struct {
    const char *heads_path; /* NULL: MODEL-medusa/medusa_heads.safetensors */
    const char *tree_path;  /* NULL: the built-in tree */
    int rule;               /* -1: greedy at temperature 0, exact-norepl above */
    children_kind kind;
    float epsilon, delta;
    int epsilon_given, delta_given, ignore_base;
    const char *first_flag; /* the first Medusa flag seen, for "only applies to" errors */
    medusa_heads heads;
    medusa_tree tree;
    int loaded;
} medusa_cli;

void medusa_cli_init(medusa_cli *m);
/* Lines of the usage text. */
void medusa_cli_usage(FILE *f);
/* 1 when argv[*i] is a Medusa flag (consumed with its value, *i advanced);
 * *status is set to 2 on a bad value. 0 otherwise. */
int medusa_cli_flag(medusa_cli *m, int argc, char **argv, int *i, int *status);
/* After parsing: refuses Medusa flags without --method medusa and invalid
 * combinations (greedy above temperature 0, typical settings without the
 * typical rule); sets opt->rule and the typical thresholds. 0 or 2. */
int medusa_cli_finish(medusa_cli *m, int method_is_medusa, decode_options *opt);
/* Loads the heads (checked against the target's checkpoint) and the tree,
 * and builds the proposer. *depth: the tree's depth, the run's k. 0 or 1. */
int medusa_cli_build(medusa_cli *m, proposer *p, const model *target, const char *model_dir, const decode_options *opt,
                     int *depth);
void medusa_cli_release(medusa_cli *m);

#endif
