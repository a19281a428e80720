/* audit_cli.h — what `specula audit`'s parts share: the parsed command line
 * (cmd_audit.c) and the report's printers (audit_print.c). */
#ifndef SPECULA_CLI_AUDIT_H
#define SPECULA_CLI_AUDIT_H

#include <stdio.h>

#include "audit.h"
#include "audit_law.h"
#include "method_cli.h"

typedef enum { AUDIT_SOURCE_SPECULA = 0, AUDIT_SOURCE_CMD, AUDIT_SOURCE_FILES } audit_source;

typedef struct {
    method_spec spec; /* the on arm (specula's engine); its sampling and seed serve every source */
    model_flags models;
    audit_source source;
    const char *engine_cmd;
    const char *files[3]; /* on, off, control */
    const char *save_dir;
    int n, L;
    int n_given; /* -n given: sample files must hold at least n lines */
    const char *prompt_text, *tokens_text, *banned_text;
    float control_temperature;
    int no_law, json, quiet;
    audit_options opt;
    /* filled while running */
    int *prompt, n_prompt;
    int *banned, n_banned; /* --ban-tokens */
    const char *model_dir;
    double draw_seconds, law_seconds;
    audit_drafting drafting; /* the on arm's, when specula drew it (source AUDIT_SOURCE_SPECULA) */
} audit_args;

void audit_print_table(const audit_args *a, const audit_report *r, FILE *f);
void audit_print_json(const audit_args *a, const audit_report *r, FILE *f);

#endif
