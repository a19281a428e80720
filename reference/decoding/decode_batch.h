/* decode_batch.h — decode_run's rounds (decode.h) over B sequences at once. Each round every live job proposes,
 * the target verifies all their trees in one verify call, and each job accepts, commits and realigns on its own. */
#ifndef SPECULA_DECODE_BATCH_H
#define SPECULA_DECODE_BATCH_H

#include "decode.h"

/* One sequence of a batch, with its own prompt, proposer, options, output and accounting. */
typedef struct {
    proposer *prop; /* NULL: plain decoding; one proposer per job (proposers hold one sequence's state) */
    const int *prompt;
    int n_prompt;
    decode_options opt; /* its own sampling, seed, budget, rule, on_commit (per-sequence streaming) */
} decode_job;

typedef struct {
    /* 1: every job its own verify call each round (B passes a round even where one would do) — the baseline
     * `specula bench --batch` times one pass against. The law of each job is the same either way. */
    int pass_per_job;
    long passes; /* out: verify calls made (on a multi_seq engine, passes up to ENGINE_MAX_BATCH jobs each) */
    long rounds; /* out: rounds of the loop (a round: every live job proposes, is verified and commits once) */
} decode_batch_options;

/* Runs jobs[0..B) to their budgets (or EOS) on new sequences of t; out[j] is job j's output and accounting.
 * bo may be NULL (one verify call a round, no counts). On failure every out[j] is freed and err names the job.
 * A job draws at exactly the rng sites decode_run gives it alone, so it gets decode_run's tokens: the batch only
 * changes which pass computes its distributions. Under the exact rule the target's hooks are used where offered
 * (verify_accept in target.h, propose_verify in proposer.h); both give the result decode_run computes on the
 * host. */
int decode_batch_run(decode_target *t, decode_job *jobs, int B, decode_batch_options *bo, decode_output *out,
                     sp_error *err);

/* decode_run's contract on one sequence through this loop: its tokens, with the target's hooks where it offers
 * them (what the commands call, so that a GPU target waits once a round). */
int decode_batch_one(decode_target *t, proposer *prop, const int *prompt, int n_prompt, const decode_options *opt,
                     decode_output *out, sp_error *err);

#endif
