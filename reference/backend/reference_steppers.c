/* reference_steppers.c — the stepper interface over the reference model: a draft model's trunk, or a model's
 * MTP module with its own KV cache. */
#include <stdlib.h>
#include <string.h>

#include "footprint.h"
#include "reference_target.h"

typedef struct {
    model *m;
    int is_mtp;
    model_state state;
    state_snapshot marks[STEPPER_MAX_MARKS];
    int built[STEPPER_MAX_MARKS]; /* marks[i] has its buffers */
} ref_stepper;

static int ref_step(stepper *st, const int *tokens, const float *h, int n, float *logits, float *hidden,
                    sp_error *err) {
    ref_stepper *s = st->impl;
    if (n < 1) return sp_fail(err, "%s step: no tokens", st->name);
    const int D = s->m->cfg.hidden_size;
    for (int i = 0; i < n; i++) {
        const int last = i == n - 1;
        if (s->is_mtp)
            model_mtp_forward(s->m, &s->state, h + (size_t)i * D, tokens[i], last ? logits : NULL,
                              last ? hidden : NULL);
        else
            model_forward(s->m, &s->state, tokens[i], last ? logits : NULL, last ? hidden : NULL);
    }
    return 0;
}

static int ref_position(const stepper *st) { return ((const ref_stepper *)st->impl)->state.pos; }

/* A mark is a snapshot of the DeltaNet state and the position; a rewind restores it and drops the KV positions
 * written since (state_restore). */
static void ref_mark(stepper *st, int mark) {
    ref_stepper *s = st->impl;
    if (!s->built[mark]) {
        snapshot_build(&s->marks[mark], &s->state);
        s->built[mark] = 1;
    }
    state_save(&s->state, &s->marks[mark]);
}

static void ref_rewind(stepper *st, int mark) {
    ref_stepper *s = st->impl;
    state_restore(&s->state, &s->marks[mark]);
}

static void ref_reset(stepper *st) { state_reset(&((ref_stepper *)st->impl)->state); }

static void ref_release(stepper *st) {
    ref_stepper *s = st->impl;
    for (int i = 0; i < STEPPER_MAX_MARKS; i++)
        if (s->built[i]) snapshot_free(&s->marks[i]);
    state_free(&s->state);
    free(s);
    st->impl = NULL;
}

static void build(stepper *st, model *m, int is_mtp) {
    ref_stepper *s = sp_xcalloc(1, sizeof *s, "reference stepper");
    s->m = m;
    s->is_mtp = is_mtp;
    if (is_mtp)
        state_build_mtp(&s->state, &m->cfg);
    else
        state_build(&s->state, &m->cfg, NULL);
    memset(st, 0, sizeof *st);
    st->name = is_mtp ? "MTP module" : "draft model";
    st->path = m->path;
    st->V = m->cfg.vocab_size;
    st->D = m->cfg.hidden_size;
    st->reads_hidden = is_mtp;
    st->step = ref_step;
    st->position = ref_position;
    st->mark = ref_mark;
    st->rewind = ref_rewind;
    st->reset = ref_reset;
    st->release = ref_release;
    st->impl = s;
}

void reference_draft_stepper_build(stepper *st, model *draft) {
    build(st, draft, 0);
    st->bytes_per_step = draft->weight_bytes_per_step;
}

int reference_mtp_stepper_build(stepper *st, model *m, sp_error *err) {
    if (!m->w.has_mtp) return sp_fail(err, "%s has no MTP module (no mtp.* tensors): MTP needs one", m->path);
    build(st, m, 1);
    model_footprint fp;
    footprint_compute(&m->cfg, 1, m->storage_bytes, 2.0, &fp);
    st->bytes_per_step = fp.mtp_bytes_per_step;
    return 0;
}
