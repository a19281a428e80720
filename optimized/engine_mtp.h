/* engine_mtp.h — the engine's MTP module as a stepper (stepper.h). The stepper (engine_mtp.c) and the target's
 * MTP round (engine_mtp_round.c) share the module's state; the round keeps its inputs and outputs in backend
 * memory. */
#ifndef SPECULA_ENGINE_MTP_H
#define SPECULA_ENGINE_MTP_H

#include "engine.h"
#include "stepper.h"
#include "target.h"

typedef struct {
    engine *e;
    kv_cache kv; /* one attention layer */
    kv_table table;
    int pos;
    int marks[STEPPER_MAX_MARKS];
    /* On a backend that drafts where the logits are (be.draft): the last step's outputs, kept there for the next
     * MTP round on the target's side, and the target's final-normed hidden states of that round's chain, the
     * input of its next real steps. Backend memory; NULL on the others. */
    float *logits;        /* [V] */
    float *hidden;        /* [D] */
    float *target_hidden; /* [max_tree_nodes, D], its first target_rows rows valid */
    int target_rows;
    int *record; /* [3 + max_tree_nodes] the round's result and drafts, downloaded together (accept_drawn) */
} mtp_stepper;

/* The MTP module of e as a stepper; fails when the checkpoint has none. */
int engine_mtp_stepper_build(stepper *s, engine *e, sp_error *err);

/* The module of e behind stepper st, or NULL when st is not e's MTP stepper. */
mtp_stepper *engine_mtp_of(stepper *st, const engine *e);

/* One pass of the module over n ≤ ENGINE_PREFILL_CHUNK positions, launched and not waited for: the tokens in host
 * memory (tokens) or in backend memory (drawn, then tokens is NULL), the hidden inputs h[n, D] in host memory or,
 * with h_dev, in backend memory. The last position's logits and output hidden state go to s->logits and
 * s->hidden where the module keeps them (else only to the host), and to logits [V] and hidden [D] (host memory)
 * when not NULL — a download, so a wait. */
void engine_mtp_launch(mtp_stepper *s, const int *tokens, const int *drawn, const float *h, int h_dev, int n,
                       float *logits, float *hidden);

/* target.h's mtp_verify_accept (engine_mtp_round.c). */
int engine_mtp_verify_accept(decode_target *t, const target_job *job, const mtp_chain_call *call,
                             const sampler_params *sp, accept_site site, accept_result *r, sp_error *err);

#endif
