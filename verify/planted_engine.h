/* planted_engine.h — deliberate bugs in the engine's commit (and one in its acceptance where the logits are):
 * the negative controls of the engine's distribution checks. Each is a bookkeeping slip a tree-verifying engine
 * could make, planted in a copy of the real code; none is reachable from the engine itself. */
#ifndef SPECULA_PLANTED_ENGINE_H
#define SPECULA_PLANTED_ENGINE_H

#include "engine.h"
#include "target.h"

typedef enum {
    PLANT_ENGINE_NONE = 0,
    PLANT_ENGINE_PARENT_SLOT,  /* after accepting node u ≥ 1, the sequence keeps the DeltaNet state of u's parent:
                                * the state misses the last accepted token */
    PLANT_ENGINE_SIBLING_KV,   /* the committed path takes, at each depth, the keys and values of the first child of
                                * its parent: a rejected sibling's KV left visible to the next pass */
    PLANT_ENGINE_ACCEPT_ROUND, /* the acceptance where the logits are (verify_accept) draws at the next round's
                                * rng sites: tokens of the same law, but not the draws the host path makes, so
                                * the coupling of the two paths (tests/gpu/test_accept_coupling.c) breaks; no
                                * effect on a target that accepts on the host */
    PLANT_ENGINE_COUNT
} planted_engine_bug;

const char *planted_engine_name(planted_engine_bug bug); /* "engine-parent-slot", … */

/* The engine's target with `bug` in its commit (t borrows e). */
void planted_engine_target_build(decode_target *t, engine *e, planted_engine_bug bug);

#endif
