/* enumerate.h — the exact probability of every token sequence of length L that a model can emit after a prompt,
 * under the processed sampling distribution: the truth the distribution tests compare samplers against. Micro
 * models only (V^L ≤ ENUM_MAX_CELLS). */
#ifndef SPECULA_ENUMERATE_H
#define SPECULA_ENUMERATE_H

#include <stdint.h>

#include "error.h"
#include "model.h"
#include "sampler.h"
#include "target.h"

#define ENUM_MAX_CELLS 100000
#define ENUM_MAX_LENGTH 16

/* Sequences are numbered base V with the first token most significant:
 * index(x_0 … x_{L−1}) = Σ_j x_j · V^(L−1−j). Prefixes of every length
 * 0 … L−1 are numbered in one list, shortest first: the prefix of length j
 * with base-V number s has id (V^j − 1)/(V − 1) + s (id 0 is the empty
 * prefix; for V = 1 the id is j). */
typedef struct {
    int V, L;
    int64_t cells;       /* V^L */
    double *joint;       /* [V^L] P(x_0 … x_{L−1} | prompt) */
    int64_t prefixes;    /* 1 + V + … + V^(L−1) */
    float *cond;         /* [prefixes, V] the processed distribution of the token after each prefix —
                          * every prefix, also those of probability 0, so callers can follow paths
                          * that a faulty sampler takes */
    double *raw_logprob; /* [prefixes, V] log-softmax of the raw logits after each prefix (no temperature, no
                          * cuts), in double: what beam search scores */
    long forwards;       /* model_forward calls the walk made (the prompt's included) */
} enum_table;

/* Walks every prefix depth first from one state, saving a snapshot after
 * each position and restoring it before each sibling. prompt[n_prompt]
 * (n_prompt ≥ 1): all but the last token are fed first; the last one is the
 * first token the walk feeds, as decode_run does. Fails with a message when
 * V^L exceeds ENUM_MAX_CELLS, L is outside [1, ENUM_MAX_LENGTH], a prompt
 * token is outside the vocabulary or the sampling parameters are invalid.
 * The walk never stops at EOS: samplers compared with it run with
 * decode_options.stop_at_eos = 0, or stop, pad their window with EOS, and are
 * compared with the table after enumerate_stop_at_eos. */
int enumerate_build(enum_table *t, model *m, const int *prompt, int n_prompt, const sampler_params *sp, int L,
                    sp_error *err);
void enumerate_free(enum_table *t);

/* The same table through any decode_target (target.h) — the engine's, in whatever mode it was opened — instead of
 * the reference model: the law of the logits that target computes. It walks the prefixes with a sequence each,
 * forked from its parent's (so the target must offer seq_fork), one prefill of one token per prefix. */
int enumerate_build_target(enum_table *t, decode_target *tg, const int *prompt, int n_prompt, const sampler_params *sp,
                           int L, sp_error *err);

/* The law of a run that stops at `eos`, its window padded with eos: every
 * cond row after a prefix holding eos becomes a point mass on eos, and
 * joint is recomputed from the rows (raw_logprob stays the model's). */
void enumerate_stop_at_eos(enum_table *t, int eos);

int64_t enumerate_index(const int *tokens, int L, int V);
/* tokens[L] of sequence `index`. */
void enumerate_tokens(int64_t index, int L, int V, int *tokens);
int64_t enumerate_prefix_id(const int *tokens, int len, int V);
/* The row of cond (raw_logprob) after prefix tokens[0..len), len < L. */
const float *enumerate_cond(const enum_table *t, const int *tokens, int len);
const double *enumerate_raw_logprob(const enum_table *t, const int *tokens, int len);

/* V^L, or −1 when it exceeds ENUM_MAX_CELLS. */
int64_t enumerate_cells(int V, int L);

#endif
