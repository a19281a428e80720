/* batch_jobs.h — jobs of the batched round loop (decode_batch.h) for the
 * tests (test_decode_batch.c, tests/stat/test_batch_spec_dist.c): a method
 * of `specula generate` flags built for one sequence with its own stepper —
 * on the reference (the target and draft models) or on CPU engines opened
 * on the same checkpoints — so that each job of a batch has the proposer
 * decode_run would give it alone. */
#ifndef SPECULA_TEST_BATCH_JOBS_H
#define SPECULA_TEST_BATCH_JOBS_H

#include <stdint.h>

#include "decode_batch.h"
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

#endif
