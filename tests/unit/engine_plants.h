/* engine_plants.h — cross-sequence slips planted in the engine's backend, the negative controls of the
 * batched-pass tests (engine_batch_compare.c, tests/stat/test_engine_batch_dist.c). One engine at a time: the
 * wrapped cores are kept in file-level pointers. */
#ifndef SPECULA_TEST_ENGINE_PLANTS_H
#define SPECULA_TEST_ENGINE_PLANTS_H

#include "engine.h"

typedef enum {
    PLANT_CROSS_NONE,
    PLANT_CROSS_ATTENTION, /* the second sequence of a pass attends through the first one's KV table */
    PLANT_CROSS_DELTANET   /* its first node steps from the first sequence's DeltaNet state */
} plant_cross;

/* Passes begun on the planted engine since the caller last zeroed these, and the most sequences one held. */
extern int engine_plant_passes, engine_plant_widest;

/* Wraps e's backend (the CPU's or the CUDA one): its begin_pass and cores feed the second sequence of a pass
 * something of the first one's. The pass counter always, and the slip `which` (PLANT_CROSS_NONE: none). */
void engine_plant_cross_seq(engine *e, plant_cross which);

#endif
