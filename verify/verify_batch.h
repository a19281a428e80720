/* verify_batch.h — the batched rows of `specula verify`: VERIFY_BATCH_JOBS sequences decoded together by
 * decode_batch_run (one verify pass a round over all of them), each after its own prompt. A draw reports the
 * window of one of them, chosen by the draw's seed; the law it follows is the mixture, with weight 1/B each, of
 * the sequences' own laws. A slip that touches only one sequence of a batch — the third, say — moves that
 * sequence's law, and so the mixture. */
#ifndef SPECULA_VERIFY_BATCH_H
#define SPECULA_VERIFY_BATCH_H

#include "verify_cases.h"

#define VERIFY_BATCH_JOBS 4

/* The prompt of job j (token ids of the small world, of different lengths, so the batch's rows are uneven). */
void verify_batch_prompt(int j, const int **ids, int *n);

/* The job a draw with this seed reports. */
int verify_batch_reported(uint64_t seed);

/* law[V^L] ← (1/B) Σ_j the target's law after job j's prompt: the batched case's law (the exact rule). */
int verify_batch_law(const verify_case *c, const verify_world *w, double *law, sp_error *err);

/* One draw of batched case c: spec s (its seed the draw's) run as B jobs on w's target (control: behind
 * planted_batch.h's slip), job j's window into tokens[c->L]. rounds and drafted add the reported job's. */
int verify_batch_draw(const verify_case *c, const verify_world *w, const method_spec *s, int control, int *tokens,
                      long *rounds, long *drafted, sp_error *err);

#endif
