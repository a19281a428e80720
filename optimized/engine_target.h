/* engine_target.h — the engine behind the decoding layer's interfaces: the
 * target (target.h) and the MTP module as a stepper (stepper.h), so that the
 * round loop, beam search, every proposer and the method factory run on the
 * engine unchanged. A draft model served by the engine is a stepper over its
 * own target (target_stepper.h). The target and stepper borrow the engine. */
#ifndef SPECULA_ENGINE_TARGET_H
#define SPECULA_ENGINE_TARGET_H

#include "engine.h"
#include "stepper.h"
#include "target.h"

/* Trees of up to this many nodes per pass: Medusa's largest tree and its root. */
#define ENGINE_MAX_TREE_NODES 256
/* Sequences one verify pass takes at once on a backend with multi_seq (more jobs: more passes). */
#define ENGINE_MAX_BATCH 16
/* Positions a prefill pass takes at once. */
#define ENGINE_PREFILL_CHUNK 64

void engine_target_build(decode_target *t, engine *e);
/* The MTP module of e as a stepper; fails when the checkpoint has none. */
int engine_mtp_stepper_build(stepper *s, engine *e, sp_error *err);

#endif
