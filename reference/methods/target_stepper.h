/* target_stepper.h — a draft model served as a target (target.h), seen as a
 * stepper (stepper.h): a step is a prefill of its one sequence, a mark is a
 * fork of it (the KV prefix shared copy-on-write, the DeltaNet state
 * copied), a rewind closes the sequence and forks the mark again. Any
 * backend's target thus serves as a draft model for spec_proposer_build. */
#ifndef SPECULA_TARGET_STEPPER_H
#define SPECULA_TARGET_STEPPER_H

#include "stepper.h"
#include "target.h"

/* A stepper over t (borrowed: it must outlive the stepper). */
int target_stepper_build(stepper *s, decode_target *t, sp_error *err);

#endif
