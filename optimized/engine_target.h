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

void engine_target_build(decode_target *t, engine *e);

#endif
