/* engine_batch_compare.h — the batched verify pass against one pass a job, for the CPU engine
 * (test_engine_batch.c) and the CUDA backend on the kernels' emulator (tests/gpu/test_engine_cuda_batch.c). */
#ifndef SPECULA_TEST_ENGINE_BATCH_COMPARE_H
#define SPECULA_TEST_ENGINE_BATCH_COMPARE_H

#include "engine.h"
#include "engine_plants.h"

/* Three jobs (a chain and two trees, on sequences prefilled to different lengths, so at different bases and
 * blocks) are verified in one pass and, on forks of the same sequences, one pass each, round after round, each side
 * committing the same node.
 * Opens an engine on dir with o (its backend must take several sequences a pass; multi_seq = 0 then makes the
 * host run one pass a job, the fallback's path), plants `planted`, and runs the rounds; checks that the batched
 * verify call made one pass (multi_seq) or one a job. Returns 1 when every row — raw logits in even rounds,
 * processed distributions and hidden states in odd ones — agrees bit for bit between the two sides. */
int engine_batch_equals_alone(const char *dir, const engine_options *o, plant_cross planted, int multi_seq);

/* The negative controls, one assertion each (who names the backend in the message): the same comparison must
 * tell apart a node attending through another sequence's KV table and a node stepping from another sequence's
 * DeltaNet state. */
void engine_batch_assert_slips_caught(const char *dir, const engine_options *o, const char *who);

#endif
