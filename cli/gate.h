/* gate.h — what `specula gate`'s parts share: the frozen canary set (gate_canaries.c) and the checks that judge a
 * configuration against it and against the target's law (gate_checks.c). docs/gate.md says what each row tests. */
#ifndef SPECULA_CLI_GATE_H
#define SPECULA_CLI_GATE_H

#include <stdio.h>

#include "accounting.h"
#include "error.h"
#include "method_cli.h"
#include "planted.h"
#include "target.h"

/* ---- the canary set ----------------------------------------------------------------------------------------- */

/* One turn of a conversation: the tokens given, then the reference's greedy tokens after everything before. */
typedef struct {
    int *prompt, n_prompt; /* [n_prompt] appended after the previous turns' prompts and expected tokens */
    int *expect, n_expect; /* [n_expect] the reference's greedy tokens (n_expect: the file's `tokens N`) */
    float *margin;         /* [n_expect] the reference's top-1 minus top-2 logit at each expected token */
    int have_expect;       /* the file held expect and margin lines (a set being written may not yet) */
} gate_turn;

typedef struct {
    char name[32];
    gate_turn *turns;
    int n_turns;
} gate_case;

typedef struct {
    gate_case *cases;
    int n_cases;
    char sha256[65];   /* of the file's bytes, lower-case hex */
    char recorded[65]; /* the sha256 the .sha256 file beside it records ("" when there is none) */
} gate_canaries;

/* Reads PATH (the format: docs/gate.md) and PATH.sha256. need_expect: every turn must hold its expected tokens.
 * Prints nothing; err names the file and line. */
int gate_canaries_read(gate_canaries *c, const char *path, int need_expect, sp_error *err);
void gate_canaries_free(gate_canaries *c);
/* Writes the set to PATH and its sha256 to PATH.sha256, each whole or not at all. */
int gate_canaries_write(gate_canaries *c, const char *path, const char *model_dir, sp_error *err);
/* The context before turn u of case k: the prompts and expected tokens of its turns 0..u (u's prompt, not its
 * expected tokens). *ids is malloc'ed. */
int gate_context(const gate_case *k, int u, int **ids, int *n);

/* Greedy tokens from the context's state on target t, one verify pass a token: tokens[n] (argmax) and margins[n]
 * (top-1 minus top-2 raw logit). forced[n] (not NULL) feeds those tokens instead of the argmax: then rows[n, V]
 * (not NULL) receives the processed distributions at sp (teacher forcing). */
int gate_walk(decode_target *t, const int *context, int n_context, int n, const int *forced, const sampler_params *sp,
              int *tokens, float *margins, float *rows, sp_error *err);

/* The sha256 of data[n], as 64 lower-case hex digits. */
int gate_sha256_hex(const unsigned char *data, size_t n, char hex[65], sp_error *err);

/* ---- the checks --------------------------------------------------------------------------------------------- */

typedef enum { GATE_PASS = 0, GATE_FAIL, GATE_NOT_RUN } gate_verdict;

#define GATE_ROW_TEXT 512
typedef struct {
    char check[64]; /* "exact: long" */
    gate_verdict verdict;
    char measured[GATE_ROW_TEXT]; /* what was measured */
    char against[GATE_ROW_TEXT];  /* the rule it is judged by */
} gate_row;

/* The budget a lossy configuration is judged by (docs/gate.md, "Lossy options"). */
typedef struct {
    double tv;     /* largest TV per position against the reference (default 0.02) */
    int tokens;    /* no greedy divergence before this many tokens of a turn ... (default 64) */
    double margin; /* ... where the reference's margin exceeds this (logits; default 0.5) */
} gate_budget;

typedef struct {
    method_spec spec;   /* the sampled rows' method (temperature > 0) */
    method_spec greedy; /* the same method at temperature 0 */
    model_flags models;
    const char *canaries_path; /* NULL: the repository's tests/gate/canaries.txt */
    int write_canaries;
    int n, L;                  /* the distribution rows: samples per arm, tokens per sample */
    float control_temperature; /* 0: 3 × the temperature */
    planted_bug plant;         /* the self-test: this bug in the on arm's acceptance rule */
    gate_budget budget;
    int exact; /* the configuration is exact (the reference's floats): 1, else judged by the budget */
    int quiet;
} gate_args;

/* Where the rows go (at most GATE_MAX_ROWS). */
#define GATE_MAX_ROWS 32
typedef struct {
    gate_row rows[GATE_MAX_ROWS];
    int n;
} gate_table;

gate_row *gate_table_add(gate_table *t, const char *check);

/* The exact-output rows, one per turn: the configuration's greedy tokens (its method at temperature 0) against the
 * expected ones, and the lossy budget's TV row (teacher-forced against the reference target `ref`). */
int gate_check_exact(const gate_args *a, const gate_canaries *c, const method_parts *parts, gate_table *t,
                     sp_error *err);
int gate_check_tv(const gate_args *a, const gate_canaries *c, decode_target *config, decode_target *ref, gate_table *t,
                  sp_error *err);
/* The distribution rows (speculation on against off and against the law, with their controls) and the
 * acceptance statistics of the on arm. law: the target whose law the arms are tested against. */
int gate_check_distribution(const gate_args *a, const method_parts *parts, decode_target *law, const int *prompt,
                            int n_prompt, gate_table *t, sp_error *err);

/* ---- a whole gate (gate_run.c) ------------------------------------------------------------------------------ */

/* The configuration a method spec describes (finished, as bench's rows are), for a gate run: the sampled rows at
 * the spec's temperature (1 at temperature 0), the exact rows at 0, the default sizes and budget. */
int gate_args_for(gate_args *a, const method_spec *s, const model_flags *models, sp_error *err);
/* The canaries fit the model: every id in the vocabulary, every case within the context. 0, or 2 (printed). */
int gate_canaries_fit(const gate_args *a, const gate_canaries *c, const model_config *cfg, const char *cmd);
/* Every row into t: the canaries' checksum, the exact and TV rows (when the file is intact), the distribution and
 * acceptance rows (when the method speculates). lm: the configuration; ref: the reference backend on its model. */
int gate_evaluate(const gate_args *a, const gate_canaries *c, loaded_models *lm, loaded_models *ref, gate_table *t,
                  sp_error *err);
int gate_table_failed(const gate_table *t); /* rows that failed */

/* The configuration's key: the sha256 of what decides the verdict (the specula binary, the model, backend, dtype,
 * KV cache, method label, temperature and cuts, the canaries' sha256, the sizes and budget). text (may be NULL)
 * receives the configuration in words. */
void gate_config_key(const gate_args *a, const gate_canaries *c, char key[65], char *text, size_t size);
/* The verdict cache: $XDG_CACHE_HOME/specula/gate/KEY (else ~/.cache/specula/gate/KEY), one line:
 * "passed|FAILED DATE ROWS-FAILED/ROWS CONFIGURATION". store: best effort, 0 or −1 (err); lookup: 1 found (the
 * line in line[size]), 0 none. */
int gate_cache_store(const char *key, int failed, int rows, const char *text, sp_error *err);
int gate_cache_lookup(const char *key, char *line, size_t size);
/* The repository's canary set, tests/gate/canaries.txt. */
const char *gate_default_canaries(void);
/* The canary set of the model in model_dir (NULL: the default model): its own MODEL/gate-canaries.txt when it
 * has one (expected tokens are a model's own: the course model's are not the embedded one's), else the
 * repository's. A static buffer, valid until the next call. */
const char *gate_canaries_for(const char *model_dir);

#endif
