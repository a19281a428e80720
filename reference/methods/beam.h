/* beam.h — beam search of width b over the reference model, with the
 * semantics of Hugging Face transformers' `generate(num_beams=b)` (the
 * vectorised `_beam_search` of transformers 5.x), over the target interface
 * (target.h): every live beam is a sequence of the target; a beam with a
 * second child forks its sequence (KV prefix shared copy-on-write, DeltaNet
 * conv + recurrent state copied), and every step verifies one-node trees of
 * all live beams in one pass.
 *
 * Semantics (docs/methods.md, "Beam search", says the same with examples):
 *   - A step feeds every live beam its last token (one batched target pass)
 *     and scores each continuation (beam i, token v) by
 *       s_i + log_softmax(raw logits_i)[v]
 *     in double. No logits processing: no temperature, top-k or top-p (HF
 *     applies those only when sampling).
 *   - The K = max(2, 1 + n_eos)·b best candidates are kept, ordered by
 *     score, then by the rank of their parent beam, then by token id.
 *   - A candidate "stops" when its token is an EOS id (stop_at_eos) or when
 *     it is the max_new_tokens-th generated token. Only stopping candidates
 *     among the first b of the K become finished hypotheses, scored
 *       score = sum_logprobs / generated_length ^ length_penalty
 *     where generated_length counts the generated tokens including the EOS
 *     that ended it and never the prompt, and sum_logprobs includes the
 *     EOS's own log-probability. The finished set keeps the b best scores.
 *   - The next live beams are the first b non-stopping candidates.
 *   - Stopping, checked after every step (t = tokens generated so far,
 *     "full" = b finished hypotheses, s_best = the best live beam's sum):
 *       no live beam left (every kept candidate stopped, e.g. at max_new_tokens);
 *       true:      as soon as the finished set is full (nothing is added then);
 *       heuristic: (HF's early_stopping=False) full and s_best / t^lp ≤ the
 *                  worst finished score;
 *       never:     full and s_best / T^lp ≤ the worst finished score, with
 *                  T = max_new_tokens when lp > 0 and T = t otherwise — the
 *                  exact bound, since sums of log-probabilities only fall.
 *   - Output: the num_return best finished hypotheses, best first.
 * One deliberate difference: HF pads the beam with placeholder copies of the
 * prompt scored −1e9, which take part in the search when fewer than K real
 * candidates exist (b·V tiny); here the beam holds only real hypotheses, so
 * results agree whenever every step has at least K candidates.
 *
 * Memory: a beam costs one DeltaNet state (149.6 MiB in
 * fp32 for Qwen3.8-27B: 48 layers × (48·128·128 recurrent + 10240·3 conv)
 * floats), copied whenever a parent beam has a second child, plus the KV
 * blocks it does not share: those after its divergence point, and a copy of
 * the partial block it writes into (1 MiB per block at 27B in bf16). */
#ifndef SPECULA_BEAM_H
#define SPECULA_BEAM_H

#include <stddef.h>
#include <stdio.h>

#include "accounting.h"
#include "error.h"
#include "target.h"

typedef enum {
    BEAM_EARLY_TRUE = 0,  /* stop once b hypotheses have finished */
    BEAM_EARLY_HEURISTIC, /* HF's early_stopping=False (its default) */
    BEAM_EARLY_NEVER      /* stop only when no live beam can improve the finished set */
} beam_early_stopping;

typedef struct {
    int num_beams;        /* b ≥ 1 */
    float length_penalty; /* exponent on the generated length (HF default 1) */
    beam_early_stopping early_stopping;
    int num_return;     /* 1 ≤ num_return ≤ b */
    int max_new_tokens; /* ≥ 1 */
    int stop_at_eos;    /* 0: the EOS ids are ordinary tokens */
} beam_options;

/* The length-normalised score sum_logprobs / length^length_penalty (length:
 * generated tokens, the EOS included). Finished hypotheses are ranked by
 * it, and the stopping rule bounds a live beam's best possible score with
 * it. */
double beam_length_normalised(double sum_logprobs, double length, double length_penalty);

/* b 4, length penalty 1, heuristic, 1 returned, 32 new tokens, EOS on. */
beam_options beam_defaults(void);
int beam_validate(const beam_options *o, sp_error *err);
/* "true" | "heuristic" | "never" (HF's True / False / "never"). */
const char *beam_early_stopping_name(beam_early_stopping e);
int beam_early_stopping_parse(const char *text, beam_early_stopping *out);

typedef struct {
    int *tokens;         /* [n] the generated tokens, the EOS that ended it included */
    int n;               /* generated_length */
    double sum_logprobs; /* Σ log p of the n tokens */
    double score;        /* sum_logprobs / n^length_penalty */
    int ended_by_eos;
} beam_hypothesis;

/* The figures a beam run reports besides run_accounting. */
typedef struct {
    long beam_forwards;   /* positions evaluated: Σ over steps of the live beams */
    long deltanet_copies; /* DeltaNet states copied (a parent's second, third … child) */
    long kv_block_copies; /* KV blocks copied on write (a beam writing into a shared block) */
    int peak_live_beams;
    int kv_blocks_peak;          /* blocks of the shared pool in use, at the peak */
    int kv_blocks_unshared_peak; /* Σ over live beams of their block-table lengths, at the peak: what
                                    private caches would hold */
    size_t kv_block_bytes;       /* one block: every attention layer, keys and values, KV_BLOCK_SIZE positions */
    size_t deltanet_bytes_per_beam;
} beam_stats;

typedef struct {
    beam_hypothesis *best; /* [n_best] best first */
    int n_best;            /* min(num_return, hypotheses finished) */
    run_accounting acc;    /* target_passes = steps; committed = tokens of the best hypothesis */
    beam_stats stats;
} beam_output;

/* A live beam: its generated tokens (the last one not yet fed to the model)
 * and the target sequence it owns. */
typedef struct {
    int *tokens; /* [max_new_tokens] the first `t` are valid */
    double sum_logprobs;
    int seq;
} beam_live;

/* One continuation of one live beam. */
typedef struct {
    double score; /* parent's sum_logprobs + log p(token) */
    int parent;   /* index in the live list (its rank) */
    int token;
} beam_candidate;

/* A search in progress, open for step-by-step use (tests, lessons). */
typedef struct {
    decode_target *target;
    beam_options opt;
    int K; /* candidates kept per step */
    int last_prompt_token;
    int t; /* tokens generated by every live beam */
    int done;
    int failed; /* the target failed a step: err says why */
    sp_error err;
    beam_live *live, *next_live; /* [b] each, double-buffered */
    int n_live;
    beam_hypothesis *finished; /* [b] best first */
    int n_finished;
    beam_candidate *cand; /* [b·V] */
    token_tree *trees;    /* [b] one node each: a beam's pending token */
    target_job *jobs;     /* [b] */
    float *logits;        /* [b, V] raw logits of the live beams, this step */
    double *logprobs;     /* [b, V] their log-softmax */
    int *scratch;         /* [2·b] parent indices and claims */
    int tokens_cap;       /* capacity of every live beam's token list */
    long block_copies_at_begin;
    beam_stats stats;
    run_accounting acc;
    double t_start;
} beam_search;

/* Validates, opens one sequence of t, feeds it prompt[0..n_prompt−1) and
 * sets up the single initial beam (its pending token is the prompt's last). */
int beam_begin(beam_search *bs, decode_target *t, const int *prompt, int n_prompt, const beam_options *o,
               sp_error *err);
/* One step (one batched target pass). Returns 1 while more steps are due,
 * 0 once the search has stopped (or failed: then bs->failed is set and
 * bs->err says why). */
int beam_step(beam_search *bs);
/* Copies the num_return best hypotheses and the accounting into out. */
void beam_finish(beam_search *bs, beam_output *out);
void beam_free(beam_search *bs);

/* begin, step until done, finish, free. */
int beam_run(decode_target *t, const int *prompt, int n_prompt, const beam_options *o, beam_output *out, sp_error *err);
void beam_output_free(beam_output *out);

void beam_print(const beam_output *out, const beam_options *o, FILE *f);
/* Called inside each hypothesis's JSON object, after its own fields, to
 * add more (the command line adds the decoded text): print ", \"key\": …". */
typedef void (*beam_json_hook)(FILE *f, const beam_hypothesis *h, void *user);
/* {"prompt_tokens": [...], "beams": b, …, "hypotheses": [{"tokens", "score",
 * "sum_logprobs", "length", "ended_by_eos"}, …], "tokens": [best],
 * "accounting": {...}, "beam": {...}}. hook may be NULL. */
void beam_print_json(const beam_output *out, const beam_options *o, const int *prompt, int n_prompt, FILE *f,
                     beam_json_hook hook, void *user);

#endif
