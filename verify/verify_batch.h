/* verify_batch.h — the batched rows of `specula verify`: VERIFY_BATCH_JOBS sequences decoded together by
 * decode_batch_run (one verify pass a round over all of them), each after its own prompt and with its own method
 * (the row's, plain sampling, a draft tree, MTP: one batch mixes them, as a server does). A draw reports the window
 * of one of them, chosen by the draw's seed, tagged with its index: the cell of (j, x_1 … x_L) has probability
 * 1/B · P_j(x_1 … x_L), P_j the target's law after job j's prompt (every method is exact). So every sequence's law
 * is tested, and a slip that hands one sequence another's tokens or distributions shows, even where the mixture
 * of the sequences' laws would not move. The cells are numbered as enumerate.h numbers sequences of L + 1 tokens
 * over max(V, B) symbols, the tag first. */
#ifndef SPECULA_VERIFY_BATCH_H
#define SPECULA_VERIFY_BATCH_H

#include "verify_cases.h"

#define VERIFY_BATCH_JOBS 4

/* The prompt of job j (token ids of the small world, of different lengths, so the batch's rows are uneven). */
void verify_batch_prompt(int j, const int **ids, int *n);

/* What job j ≥ 1 runs, e.g. "plain sampling" (job 0 runs the row's method). */
const char *verify_batch_job_label(int j);

/* The job a draw with this seed reports. */
int verify_batch_reported(uint64_t seed);

/* The tagged cells of batched case c in world w: symbols (max(V, B)) and length (c->L + 1). */
void verify_batch_cells(const verify_case *c, const verify_world *w, int *V, int *L);

/* t ← the batched case's law over its tagged cells: only t->V, t->L, t->cells and t->joint are filled (no
 * conditionals: nothing samples from them); enumerate_free releases it. */
int verify_batch_exact(const verify_case *c, const verify_world *w, enum_table *t, sp_error *err);

/* One draw of batched case c: its B jobs (job 0 the spec s, its seed and sampling every job's) run on w's target
 * (control: behind planted_batch.h's slip); tokens[c->L + 1] ← the reported job's index, then its window. rounds
 * and drafted add the reported job's. */
int verify_batch_draw(const verify_case *c, const verify_world *w, const method_spec *s, int control, int *tokens,
                      long *rounds, long *drafted, sp_error *err);

#endif
