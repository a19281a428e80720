/* planted_batch.h — the negative control of a batched row: a target whose verify pass hands the third sequence of
 * a batch the second's distributions, the slip of a pass that indexes its rows one sequence short. */
#ifndef SPECULA_PLANTED_BATCH_H
#define SPECULA_PLANTED_BATCH_H

#include "target.h"

#define PLANTED_BATCH_NAME "batch-third-from-second"

/* Every verify call of several jobs runs on inner, then job 2's rows of p are overwritten with job 1's (as many
 * rows as both trees have). The hooks that verify one job on the target's side are withheld, so every round goes
 * through verify. The wrapper borrows inner (release frees the wrapper only). */
void planted_batch_target_build(decode_target *outer, decode_target *inner);

#endif
