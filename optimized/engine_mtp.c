/* engine_mtp.c — the MTP module of the engine as a stepper: step n
 * positions in one pass (fc over [norm(embedding), norm(hidden)], the
 * module's attention layer over its own KV cache, its final norm, the shared
 * lm_head for the last position). A mark is a position: the module has no
 * DeltaNet state, so a rewind drops the KV entries written since. */
#include <stdlib.h>
#include <string.h>

#include "engine_target.h"
#include "footprint.h"

typedef struct {
    engine *e;
    kv_cache kv; /* one attention layer */
    kv_table table;
    int pos;
    int marks[STEPPER_MAX_MARKS];
} mtp_stepper;

static const float *small(const engine *e, tensor_role r) { return (const float *)engine_bweight(e, -1, r)->data; }

/* One pass over n ≤ ENGINE_PREFILL_CHUNK positions (tokens checked by m_step). */
static int m_step_chunk(mtp_stepper *s, const int *tokens, const float *h, int n, float *logits, float *hidden,
                        sp_error *err) {
    engine *e = s->e;
    engine_backend *be = &e->be;
    const int D = e->cfg.hidden_size;
    const float eps = e->cfg.rms_norm_eps;
    int parent[ENGINE_PREFILL_CHUNK], depth[ENGINE_PREFILL_CHUNK];
    for (int i = 0; i < n; i++) parent[i] = i - 1, depth[i] = i;
    kv_table_reserve(&s->kv, &s->table, s->pos, s->pos + n);
    engine_act_reserve(e, n);
    eact *a = &e->act;
    /* the input of position i: [norm(embedding of token i), norm(hidden state i)] → fc */
    be->embed(be, a->x, engine_bweight(e, 0, ROLE_EMBED), tokens, n, D);
    be->rmsnorm(be, a->xn, a->x, small(e, ROLE_MTP_NORM_EMBED), n, D, eps);
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
    if (logits) engine_logits(e, logits, a->xn, 1);
    if (hidden) engine_download(e, hidden, a->xn, (size_t)D);
    if (be->status(be, err)) return -1;
    s->pos += n;
    return 0;
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
    kv_cache_build(&s->kv, &e->be, 1, e->cfg.num_kv_heads, e->cfg.head_dim, e->be.kv_bf16 ? 2 : sizeof(float));
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
