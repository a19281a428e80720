/* engine_mtp.c — the MTP module of the engine as a stepper: step n
 * positions in one pass (fc over [norm(embedding), norm(hidden)], the
 * module's attention layer over its own KV cache, its final norm, the shared
 * lm_head for the last position). A mark is a position: the module has no
 * DeltaNet state, so a rewind drops the KV entries written since. */
#include <stdlib.h>
#include <string.h>

#include "engine_target.h"
#include "footprint.h"
#include "ops.h"

typedef struct {
    engine *e;
    kv_cache kv; /* one attention layer */
    kv_table table;
    int pos;
    int marks[STEPPER_MAX_MARKS];
} mtp_stepper;

static const float *f32(const engine *e, tensor_role r) { return (const float *)engine_weight(&e->w, -1, r)->data; }

/* One pass over n ≤ ENGINE_PREFILL_CHUNK positions (tokens checked by m_step). */
static void m_step_chunk(mtp_stepper *s, const int *tokens, const float *h, int n, float *logits, float *hidden) {
    engine *e = s->e;
    const int D = e->cfg.hidden_size, V = e->cfg.vocab_size;
    const float eps = e->cfg.rms_norm_eps;
    int parent[ENGINE_PREFILL_CHUNK], depth[ENGINE_PREFILL_CHUNK];
    for (int i = 0; i < n; i++) parent[i] = i - 1, depth[i] = i;
    kv_table_reserve(&s->kv, &s->table, s->pos, s->pos + n);
    engine_act_reserve(e, n, s->pos + n);
    eact *a = &e->act;
    /* the input of position i: [norm(embedding of token i), norm(hidden state i)] → fc */
    e->be.embed(&e->be, a->xn, engine_weight(&e->w, 0, ROLE_EMBED), tokens, n, D);
    for (int i = 0; i < n; i++) {
        op_rmsnorm(a->mtp_in + (size_t)i * 2 * D, a->xn + (size_t)i * D, f32(e, ROLE_MTP_NORM_EMBED), D, eps);
        op_rmsnorm(a->mtp_in + (size_t)i * 2 * D + D, h + (size_t)i * D, f32(e, ROLE_MTP_NORM_HIDDEN), D, eps);
    }
    e->be.matmul(&e->be, a->x, engine_weight(&e->w, 0, ROLE_MTP_FC), a->mtp_in, n, D, 2 * D);
    const epass p = {&s->kv, &s->table, NULL, NULL, 0, 0, NULL, parent, depth, n, n, s->pos};
    engine_decoder_layer(e, &p, -1, LAYER_FULL_ATTENTION, 0);
    const float *last = a->x + (size_t)(n - 1) * D;
    op_rmsnorm(a->xn, last, f32(e, ROLE_MTP_NORM), D, eps);
    if (logits) e->be.matmul(&e->be, logits, engine_weight(&e->w, 0, ROLE_LM_HEAD), a->xn, 1, V, D);
    if (hidden) memcpy(hidden, a->xn, (size_t)D * sizeof(float));
    s->pos += n;
}

/* n positions in passes of at most ENGINE_PREFILL_CHUNK (a prompt's real steps come as one commit of any
 * length); logits and hidden state of the last. */
static int m_step(stepper *st, const int *tokens, const float *h, int n, float *logits, float *hidden, sp_error *err) {
    mtp_stepper *s = st->impl;
    const int D = s->e->cfg.hidden_size, V = s->e->cfg.vocab_size;
    if (n < 1) return sp_fail(err, "MTP module step: %d positions (at least 1)", n);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return sp_fail(err, "MTP module step: token %d is outside the vocabulary [0, %d)", tokens[i], V);
    for (int done = 0; done < n; done += ENGINE_PREFILL_CHUNK) {
        const int m = n - done < ENGINE_PREFILL_CHUNK ? n - done : ENGINE_PREFILL_CHUNK, last = done + m == n;
        m_step_chunk(s, tokens + done, h + (size_t)done * D, m, last ? logits : NULL, last ? hidden : NULL);
    }
    return 0;
}

static int m_position(const stepper *st) { return ((const mtp_stepper *)st->impl)->pos; }

static void m_mark(stepper *st, int mark) {
    mtp_stepper *s = st->impl;
    s->marks[mark] = s->pos;
}

static void m_rewind(stepper *st, int mark) {
    mtp_stepper *s = st->impl;
    s->pos = s->marks[mark];
    kv_table_truncate(&s->kv, &s->table, s->pos);
}

static void m_reset(stepper *st) {
    mtp_stepper *s = st->impl;
    s->pos = 0;
    kv_table_truncate(&s->kv, &s->table, 0);
}

static void m_release(stepper *st) {
    mtp_stepper *s = st->impl;
    kv_table_free(&s->kv, &s->table);
    kv_cache_free(&s->kv);
    free(s);
    st->impl = NULL;
}

int engine_mtp_stepper_build(stepper *st, engine *e, sp_error *err) {
    if (!e->w.ck.with_mtp) return sp_fail(err, "%s has no MTP module (no mtp.* tensors): MTP needs one", e->path);
    mtp_stepper *s = sp_xcalloc(1, sizeof *s, "MTP stepper");
    s->e = e;
    kv_cache_build(&s->kv, 1, e->cfg.num_kv_heads * e->cfg.head_dim);
    memset(st, 0, sizeof *st);
    st->name = "MTP module";
    st->path = e->path;
    st->V = e->cfg.vocab_size;
    st->D = e->cfg.hidden_size;
    st->reads_hidden = 1;
    model_footprint fp;
    footprint_compute(&e->cfg, 1, engine_weights_storage_bytes(&e->w), 4.0, &fp);
    st->bytes_per_step = fp.mtp_bytes_per_step;
    st->step = m_step;
    st->position = m_position;
    st->mark = m_mark;
    st->rewind = m_rewind;
    st->reset = m_reset;
    st->release = m_release;
    st->impl = s;
    return 0;
}
