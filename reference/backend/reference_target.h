/* reference_target.h — the reference model behind the decoding layer's interfaces: a target (target.h) over
 * model_forward, and steppers (stepper.h) over a draft model and the MTP module. The only place where decoding
 * meets the plain-C forward. */
#ifndef SPECULA_REFERENCE_TARGET_H
#define SPECULA_REFERENCE_TARGET_H

#include "medusa.h"
#include "model.h"
#include "stepper.h"
#include "target.h"

/* Trees of up to this many nodes per verify pass (the reference has no
 * batch to size; this only bounds a runaway proposer). */
#define REFERENCE_MAX_TREE_NODES 4096

/* The target and the steppers below borrow the model: it must outlive them. */
void reference_target_build(decode_target *t, model *m);

/* A draft model as a stepper. */
void reference_draft_stepper_build(stepper *s, model *draft);
/* The MTP module of m as a stepper; fails when m has none. */
int reference_mtp_stepper_build(stepper *s, model *m, sp_error *err);

/* What Medusa heads are loaded against: m's directory, dimensions and
 * float32 lm_head (for heads that share it). */
medusa_base reference_medusa_base(const model *m);

/* Inside the reference target, for tests and lessons that look at the
 * paged KV cache itself: the state of an open sequence, and the pool all
 * sequences share. */
model_state *reference_target_state(decode_target *t, int seq);
kv_pool *reference_target_pool(decode_target *t);

#endif
