/* target_stepper.h — a draft model served as a target (target.h), seen as a stepper (stepper.h), so that any
 * backend's target can be the draft model of spec_proposer_build. */
#ifndef SPECULA_TARGET_STEPPER_H
#define SPECULA_TARGET_STEPPER_H

#include "stepper.h"
#include "target.h"

/* A stepper over t (borrowed: it must outlive the stepper). A step is a prefill of its one sequence, a mark is
 * a fork of it (KV prefix shared copy-on-write, DeltaNet state copied), and a rewind closes the sequence and
 * forks the mark again. */
int target_stepper_build(stepper *s, decode_target *t, sp_error *err);

#endif
