/* beam_law.h — beam search's rules (beam.h) run on an enumerated sequence law (enumerate.h) instead of a model.
 * This brute-force oracle has no state, KV blocks or slots, so comparing it with beam_run tests the search apart
 * from the state handling, and ties every score to the probability of its tokens. */
#ifndef SPECULA_BEAM_LAW_H
#define SPECULA_BEAM_LAW_H

#include <stddef.h>

#include "beam.h"
#include "enumerate.h"

/* Sized for micro models: at most BEAM_LAW_MAX_B beams, BEAM_LAW_MAX_NEW new tokens, 4 EOS ids. */
#define BEAM_LAW_MAX_B 8
#define BEAM_LAW_MAX_NEW 4

/* Planted slips of the rules: the comparison's negative controls, each of which it must catch. */
typedef enum {
    BEAM_SLIP_NONE = 0,
    BEAM_SLIP_PENALTY_WITHOUT_EOS, /* the EOS token not counted in the length the penalty divides by */
    BEAM_SLIP_FINISH_FROM_ALL_K,   /* stopping candidates beyond the first b also become hypotheses */
    BEAM_SLIP_PROMPT_IN_LENGTH,    /* the prompt counted in the length (older libraries did) */
    BEAM_SLIP_HEURISTIC_AT_MAX,    /* heuristic stopping judges the best live beam at max_new_tokens */
    BEAM_SLIP_COUNT
} beam_slip;

const char *beam_slip_name(beam_slip s);

typedef struct {
    int tokens[BEAM_LAW_MAX_NEW];
    int n;
    double sum_logprobs, score;
    int order; /* insertion order: ties keep it */
} beam_law_hyp;

/* The search of beam.h on t (enumerated over ≥ o->max_new_tokens tokens
 * after the same prompt of n_prompt tokens), EOS ids from cfg. fin[b]
 * receives the finished hypotheses, best first. Returns the passes taken,
 * or −1 with a message when the options exceed the limits above. */
int beam_law_search(const enum_table *t, const model_config *cfg, int n_prompt, const beam_options *o, beam_slip slip,
                    beam_law_hyp *fin, int *n_fin, sp_error *err);

/* 1 when out (from beam_run) has the same hypotheses, scores and sums
 * within tol, and the same passes; else 0 and the first difference in why. */
int beam_law_same(const beam_output *out, int passes, const beam_law_hyp *fin, int n_fin, double tol, char *why,
                  size_t size);

/* The whole check on model m (V^max_new ≤ ENUM_MAX_CELLS): `prompts`
 * prompts, each enumerated once, × `settings` settings drawn from a fixed
 * pattern (width 1…5, length penalty, early-stopping mode, 1…3 new tokens,
 * EOS on or off with 1–3 EOS ids). The model's EOS ids are changed during
 * the check and restored after. */
typedef struct {
    int settings;                         /* compared */
    int mismatches;                       /* with the exact rules: must be 0 */
    int slip_mismatches[BEAM_SLIP_COUNT]; /* with each planted slip: must be > 0 */
    int early_ends;                       /* searches that stopped before max_new_tokens */
    int eos_finishes;                     /* hypotheses ended by EOS */
    char first_mismatch[320];             /* the first difference with the exact rules, or "" */
} beam_law_report;

int beam_law_check(model *m, int prompts, int settings, beam_law_report *rep, sp_error *err);

#endif
