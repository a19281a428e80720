/* engine_target.h — the engine as the decoding layer's target (target.h), so every method runs on it unchanged.
 * A draft model served by the engine is a stepper over its own target (target_stepper.h). The target borrows the
 * engine. */
#ifndef SPECULA_ENGINE_TARGET_H
#define SPECULA_ENGINE_TARGET_H

#include "engine.h"
#include "stepper.h"
#include "target.h"

void engine_target_build(decode_target *t, engine *e);

#endif
