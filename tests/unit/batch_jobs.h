/* batch_jobs.h — jobs of the batched round loop (decode_batch.h) for the tests: a method in `specula generate`
 * flags built for one sequence with its own stepper, on the reference or on CPU engines, so that each job of a
 * batch has the proposer decode_run would give it alone. */
#ifndef SPECULA_TEST_BATCH_JOBS_H
#define SPECULA_TEST_BATCH_JOBS_H

#include <stdint.h>

#include "decode_batch.h"
#include "engine_mtp.h"
#include "engine_target.h"
#include "method.h"
#include "model.h"

/* The models the jobs run on (borrowed). On the engine: e (its MTP module) and draft (a target over the draft's
 * engine); on the reference: target_model (its MTP module) and draft_model. */
typedef struct {
    decode_target *target;
    engine *e;
    decode_target *draft;
    model *target_model, *draft_model;
} batch_models;

typedef struct {
    stepper st;
    int have_st;
    method_built m;
} batch_job;

/* Builds flags' method for one sequence (a fresh stepper where it has a proposer that steps a model) and fills
 * *job with it: prompt[n], `tokens` tokens, EOS off, the given seed. Fails the test on error. */
void batch_job_build(batch_job *b, const batch_models *bm, const char *flags, const int *prompt, int n, int tokens,
                     uint64_t seed, decode_job *job);
void batch_job_release(batch_job *b);

#define BATCH_MAX_JOBS 4

/* One job of a batch as the tests write it: `specula generate` flags, a prompt, a budget. */
typedef struct {
    const char *flags;
    int prompt[5], n, tokens;
} batch_row;

/* rows[0..B) (B ≤ BATCH_MAX_JOBS, seeds 40 + j) run as one batch (pass_per_job as given) and each alone through
 * decode_run on bm's target: fails the test unless every job gets the same tokens both ways and its stream equals
 * its output (`where` names the target in the message). *bo: the batch's counts. Returns the jobs' rounds,
 * summed. */
long batch_rows_equal_alone(const batch_models *bm, const char *where, const batch_row *rows, int B, int pass_per_job,
                            decode_batch_options *bo);

#endif
