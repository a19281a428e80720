/* decode_batch.h — the round loop of decode.h over B sequences at once. Each
 * job is one sequence with its own prompt, proposer, options (sampling,
 * seed, rule, hooks), output and accounting; every round each live job
 * proposes, the target verifies every live job's tree — in ONE call to
 * target->verify, which is one pass over all B sequences' nodes on a target
 * that takes several sequences a pass (the engine on a multi_seq backend)
 * and one pass a sequence on one that does not (the reference) — then each
 * job accepts, commits and realigns on its own. A job whose proposer hands
 * its rounds to the target (proposer.h, propose_verify: an MTP chain on the
 * CUDA engine) is proposed, verified and accepted in that one call instead. A job draws at exactly the
 * rng sites decode_run gives it alone (its seed, its round, its position),
 * so its output law is the law of decode_run on its own: the batch changes
 * only which pass computes its distributions. decode_run is this loop with
 * one job. */
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

#endif
