/* engine_mtp.c — the engine's MTP module as a stepper: n positions in one pass through fc, the module's attention
 * layer over its own KV cache, its final norm and the shared lm_head. A mark is a position: the module has no
 * DeltaNet state, so a rewind only drops the KV entries written since. */
#include <stdlib.h>
#include <string.h>

#include "engine_mtp.h"
#include "footprint.h"

static const float *small(const engine *e, tensor_role r) { return (const float *)engine_bweight(e, -1, r)->data; }

typedef struct {
    mtp_stepper *s;
    const int *tokens, *drawn;
    const float *h;
    int h_dev, n;
    float *logits, *hidden;
} launch_args;

static void launch(void *ctx) {
    const launch_args *l = ctx;
    mtp_stepper *s = l->s;
    const int *tokens = l->tokens, *drawn = l->drawn, h_dev = l->h_dev, n = l->n;
    const float *h = l->h;
    float *logits = l->logits, *hidden = l->hidden;
    engine *e = s->e;
    engine_backend *be = &e->be;
    const int D = e->cfg.hidden_size, V = e->cfg.vocab_size;
    const float eps = e->cfg.rms_norm_eps;
    int parent[ENGINE_PREFILL_CHUNK], depth[ENGINE_PREFILL_CHUNK];
    for (int i = 0; i < n; i++) parent[i] = i - 1, depth[i] = i;
    kv_table_reserve(&s->kv, &s->table, s->pos, s->pos + n);
    engine_act_reserve(e, n);
    eact *a = &e->act;
    /* the input of position i: [norm(embedding of token i), norm(hidden state i)] → fc */
    if (drawn)
        be->embed_drawn(be, a->x, engine_bweight(e, 0, ROLE_EMBED), drawn, n, D);
    else
        be->embed(be, a->x, engine_bweight(e, 0, ROLE_EMBED), tokens, n, D);
    be->rmsnorm(be, a->xn, a->x, small(e, ROLE_MTP_NORM_EMBED), n, D, eps);
    if (h_dev)
        be->copy(be, a->hidden_in, h, (size_t)n * D * sizeof(float));
    else
        be->upload(be, a->hidden_in, h, (size_t)n * D * sizeof(float));
    be->rmsnorm(be, a->out, a->hidden_in, small(e, ROLE_MTP_NORM_HIDDEN), n, D, eps);
    for (int i = 0; i < n; i++) {
        be->copy(be, a->mtp_in + (size_t)i * 2 * D, a->xn + (size_t)i * D, (size_t)D * sizeof(float));
        be->copy(be, a->mtp_in + (size_t)i * 2 * D + D, a->out + (size_t)i * D, (size_t)D * sizeof(float));
    }
    be->matmul(be, a->x, engine_bweight(e, 0, ROLE_MTP_FC), a->mtp_in, n, D, 2 * D);
    const epass_seq seq = {&s->table, s->pos, 0, n};
    const int seq_of[ENGINE_PREFILL_CHUNK] = {0}; /* n ≤ ENGINE_PREFILL_CHUNK: every node of the one sequence */
    const epass p = {&s->kv, &seq, seq_of, parent, depth, n, 1, NULL}; /* attention only: no DeltaNet slots */
    be->begin_pass(be, &p);
    engine_decoder_layer(e, &p, -1, LAYER_FULL_ATTENTION, 0);
    be->rmsnorm(be, a->xn, a->x + (size_t)(n - 1) * D, small(e, ROLE_MTP_NORM), 1, D, eps);
    s->pos += n;
    if (!s->logits) { /* nothing kept: the outputs go to the host only */
        if (logits) engine_logits(e, logits, a->xn, 1);
        if (hidden) engine_download(e, hidden, a->xn, (size_t)D);
        return;
    }
    be->matmul(be, s->logits, engine_bweight(e, 0, ROLE_LM_HEAD), a->xn, 1, V, D);
    be->copy(be, s->hidden, a->xn, (size_t)D * sizeof(float));
    if (logits) engine_download(e, logits, s->logits, (size_t)V);
    if (hidden) engine_download(e, hidden, s->hidden, (size_t)D);
}

void engine_mtp_launch(mtp_stepper *s, const int *tokens, const int *drawn, const float *h, int h_dev, int n,
                       float *logits, float *hidden) {
    launch_args l = {s, tokens, drawn, h, h_dev, n, logits, hidden};
    backend_hold(&s->e->be, launch, &l); /* the step's ops hand their work to threads held for the whole step */
}

/* One pass over n ≤ ENGINE_PREFILL_CHUNK positions (tokens checked by m_step), waited for. */
static int m_step_chunk(mtp_stepper *s, const int *tokens, const float *h, int n, float *logits, float *hidden,
                        sp_error *err) {
    engine_mtp_launch(s, tokens, NULL, h, 0, n, logits, hidden);
    return s->e->be.status(&s->e->be, err);
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
        if (m_step_chunk(s, tokens + done, h + (size_t)done * D, m, last ? logits : NULL, last ? hidden : NULL, err))
            return -1;
    }
    return 0;
}

mtp_stepper *engine_mtp_of(stepper *st, const engine *e) {
    if (st->step != m_step) return NULL;
    mtp_stepper *s = st->impl;
    return s->e == e ? s : NULL;
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
    engine_backend *be = &s->e->be;
    if (s->logits) be->free(be, s->logits), be->free(be, s->hidden);
    if (s->target_hidden) be->free(be, s->target_hidden), be->free(be, s->record);
    kv_table_free(&s->kv, &s->table);
    kv_cache_free(&s->kv);
    free(s);
    st->impl = NULL;
}

int engine_mtp_stepper_build(stepper *st, engine *e, sp_error *err) {
    if (!e->w.ck.with_mtp) return sp_fail(err, "%s has no MTP module (no mtp.* tensors): MTP needs one", e->path);
    mtp_stepper *s = sp_xcalloc(1, sizeof *s, "MTP stepper");
    s->e = e;
    kv_cache_build(&s->kv, &e->be, 1, e->cfg.num_kv_heads, e->cfg.head_dim, engine_kv_format(e));
    if (e->be.draft) { /* the outputs stay where they are computed, for the MTP round on the target's side */
        s->logits = e->be.alloc(&e->be, (size_t)e->cfg.vocab_size * sizeof(float), "MTP logits");
        s->hidden = e->be.alloc(&e->be, (size_t)e->cfg.hidden_size * sizeof(float), "MTP hidden state");
        s->target_hidden = e->be.alloc(&e->be, (size_t)e->be.max_tree_nodes * e->cfg.hidden_size * sizeof(float),
                                       "target hidden states for the MTP module");
        s->record = e->be.alloc(&e->be, (size_t)(3 + e->be.max_tree_nodes) * sizeof(int), "MTP round record");
    }
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
