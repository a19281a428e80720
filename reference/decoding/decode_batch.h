/* decode_batch.h — decode_run's rounds (decode.h) over B sequences at once, and the hooks through which a target
 * takes a whole round. Each job is one sequence with its own prompt, proposer, options, output and accounting.
 * Every round each live job proposes; the target verifies every live job's tree in ONE call to target->verify
 * (one pass over all of them on an engine that takes several sequences a pass, one pass a sequence elsewhere);
 * then each job accepts, commits and realigns on its own. A job draws at exactly the rng sites decode_run gives it
 * alone, so it gets decode_run's tokens: the batch changes only which pass computes its distributions.
 *
 * The hooks (target.h, proposer.h): under the exact rule, a target with verify_accept runs a job's pass and
 * acceptance on its side, and a proposer with propose_verify hands its whole round to the target (an MTP chain on
 * the CUDA engine, drafted on the device); both give the result decode_run computes on the host. */
#ifndef SPECULA_DECODE_BATCH_H
#define SPECULA_DECODE_BATCH_H

#include "decode.h"

/* One sequence of a batch. */
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
 * bo may be NULL (one verify call a round, no counts). On failure every out[j] is freed and err names the job. */
int decode_batch_run(decode_target *t, decode_job *jobs, int B, decode_batch_options *bo, decode_output *out,
                     sp_error *err);

/* decode_run's contract on one sequence through this loop: its tokens, with the target's hooks where it offers
 * them (what the commands call, so that a GPU target waits once a round). */
int decode_batch_one(decode_target *t, proposer *prop, const int *prompt, int n_prompt, const decode_options *opt,
                     decode_output *out, sp_error *err);

#endif
