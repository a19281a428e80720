/* engine_forward.c — one pass of the engine over the m nodes of a tree (or
 * a chain), as calls to the backend (backend.h): every product reads its
 * weights once for all m rows; the attention and DeltaNet cores give each
 * node the committed positions and its own ancestors only, so a pass
 * computes what the reference computes one position at a time. This is the
 * host code, the same for every backend: it decides what runs and which
 * state each node reads and writes, and touches no backend memory. */
#include <string.h>

#include "engine.h"

static const float *small(const engine *e, int layer, tensor_role r) {
    return (const float *)engine_bweight(e, layer, r)->data;
}

static void matmul(engine *e, float *y, int layer, tensor_role r, const float *x, int m, int n, int k) {
    e->be.matmul(&e->be, y, engine_bweight(e, layer, r), x, m, n, k);
}

static void attention_layer(engine *e, const epass *p, int layer, int la) {
    const model_config *c = &e->cfg;
    eact *a = &e->act;
    const int D = c->hidden_size, H = c->num_heads, Dh = c->head_dim, m = p->m;
    const int kv_dim = c->num_kv_heads * Dh;
    matmul(e, a->q, layer, ROLE_Q_PROJ, a->xn, m, 2 * H * Dh, D);
    matmul(e, a->k, layer, ROLE_K_PROJ, a->xn, m, kv_dim, D);
    matmul(e, a->v, layer, ROLE_V_PROJ, a->xn, m, kv_dim, D);
    const attention_args args = {a->q, a->k, a->v, small(e, layer, ROLE_Q_NORM), small(e, layer, ROLE_K_NORM), a->att};
    e->be.attention(&e->be, p, la, &args);
    matmul(e, a->out, layer, ROLE_O_PROJ, a->att, m, D, H * Dh);
}

/* The slot node i's DeltaNet state lives in, and the one it starts from; −1 for a logged node (a backend that
 * replays keeps the states of a tree's nodes past the in-place ones in its own scratch during the pass). */
static int node_slot(const engine *e, const eseq *s, const epass *p, int i) {
    if (i < p->n_in_place) return s->slot;
    return e->be.deltanet_replay ? -1 : s->node_slot[i];
}
static int parent_slot(const engine *e, const eseq *s, const epass *p, int i) {
    return i < p->n_in_place || p->parent[i] < p->n_in_place ? s->slot : node_slot(e, s, p, p->parent[i]);
}

static void deltanet_layer(engine *e, const eseq *s, const epass *p, int layer, int li) {
    const model_config *c = &e->cfg;
    eact *a = &e->act;
    const int D = c->hidden_size, C = config_conv_dim(c), m = p->m;
    const int Hv = c->lin_v_heads, Dv = c->lin_v_dim;
    matmul(e, a->q, layer, ROLE_IN_PROJ_QKV, a->xn, m, C, D);
    matmul(e, a->z, layer, ROLE_IN_PROJ_Z, a->xn, m, Hv * Dv, D);
    matmul(e, a->ab, layer, ROLE_IN_PROJ_A, a->xn, m, Hv, D);
    matmul(e, a->ab + (size_t)m * Hv, layer, ROLE_IN_PROJ_B, a->xn, m, Hv, D);
    for (int i = 0; i < m; i++) {
        const int own = node_slot(e, s, p, i), from = parent_slot(e, s, p, i);
        a->conv_state[i] = own < 0 ? NULL : engine_slot_conv(e, own, li);
        a->rec_state[i] = own < 0 ? NULL : engine_slot_recurrent(e, own, li);
        a->conv_from[i] = from < 0 ? NULL : engine_slot_conv(e, from, li);
        a->rec_from[i] = from < 0 ? NULL : engine_slot_recurrent(e, from, li);
        a->log[i] = own < 0 ? engine_seq_log(e, s, i, li) : NULL;
    }
    const deltanet_args args = {a->q,
                                a->z,
                                a->ab,
                                a->ab + (size_t)m * Hv,
                                small(e, layer, ROLE_CONV1D),
                                small(e, layer, ROLE_A_LOG),
                                small(e, layer, ROLE_DT_BIAS),
                                small(e, layer, ROLE_LIN_NORM),
                                a->mixed,
                                a->att,
                                a->conv_state,
                                a->rec_state,
                                a->conv_from,
                                a->rec_from,
                                a->log,
                                engine_slot_conv(e, 0, li),
                                engine_slot_recurrent(e, 0, li),
                                e->slot_floats};
    e->be.deltanet(&e->be, p, &args);
    matmul(e, a->out, layer, ROLE_OUT_PROJ, a->att, m, D, Hv * Dv);
}

static void mlp(engine *e, int layer, int m) {
    eact *a = &e->act;
    const int D = e->cfg.hidden_size, F = e->cfg.intermediate_size;
    matmul(e, a->g, layer, ROLE_GATE_PROJ, a->xn, m, F, D);
    matmul(e, a->u, layer, ROLE_UP_PROJ, a->xn, m, F, D);
    e->be.swiglu(&e->be, a->g, a->u, (size_t)m * F);
    matmul(e, a->out, layer, ROLE_DOWN_PROJ, a->g, m, D, F);
}

static void decoder_layer(engine *e, const eseq *s, const epass *p, int layer, layer_type type, int type_index) {
    eact *a = &e->act;
    const int D = e->cfg.hidden_size, m = p->m;
    const float eps = e->cfg.rms_norm_eps;
    e->be.rmsnorm(&e->be, a->xn, a->x, small(e, layer, ROLE_INPUT_NORM), m, D, eps);
    if (type == LAYER_FULL_ATTENTION)
        attention_layer(e, p, layer, type_index);
    else
        deltanet_layer(e, s, p, layer, type_index);
    e->be.add(&e->be, a->x, a->out, (size_t)m * D);
    e->be.rmsnorm(&e->be, a->xn, a->x, small(e, layer, ROLE_POST_NORM), m, D, eps);
    mlp(e, layer, m);
    e->be.add(&e->be, a->x, a->out, (size_t)m * D);
}

void engine_decoder_layer(engine *e, const epass *p, int layer, layer_type type, int type_index) {
    decoder_layer(e, NULL, p, layer, type, type_index); /* attention layers only: no DeltaNet state */
}

/* The pass; logits into host rows (or none), waited for, or, in_place, into e->act.logits in backend memory,
 * launched only (the caller waits, engine.h). */
static int forward(engine *e, eseq *s, const int *tokens, const int *parent, const int *depth, int m, int n_in_place,
                   float *logits, float *hidden, int in_place, sp_error *err) {
    const model_config *c = &e->cfg;
    const int D = c->hidden_size, V = c->vocab_size;
    for (int i = 1; i < m; i++)
        if (parent[i] < 0 || parent[i] >= i || (i >= n_in_place && parent[i] < n_in_place - 1) ||
            (i < n_in_place && parent[i] != i - 1))
            return sp_fail(err, "%s engine: node %d has parent %d, which this pass cannot place", e->be.name, i,
                           parent[i]);
    for (int i = 0; i < m; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return sp_fail(err, "%s engine: token %d is outside the vocabulary [0, %d)", e->be.name, tokens[i], V);
    engine_act_reserve(e, m);
    eact *a = &e->act;
    const epass p = {&e->kv, &s->kv, parent, depth, m, n_in_place, s->pos, a->state_slot};
    for (int i = 0; i < m; i++) a->state_slot[i] = node_slot(e, s, &p, i);
    kv_table_reserve(&e->kv, &s->kv, p.base, p.base + m); /* every node's keys and values at base + i */
    e->be.begin_pass(&e->be, &p);
    e->be.embed(&e->be, a->x, engine_bweight(e, 0, ROLE_EMBED), tokens, m, D);
    int n_full = 0, n_lin = 0;
    for (int l = 0; l < c->num_layers; l++) {
        const layer_type type = c->layer_types[l];
        decoder_layer(e, s, &p, l, type, type == LAYER_FULL_ATTENTION ? n_full++ : n_lin++);
    }
    e->be.rmsnorm(&e->be, a->xn, a->x, small(e, 0, ROLE_FINAL_NORM), m, D, c->rms_norm_eps);
    s->pos += n_in_place;
    if (in_place) {
        matmul(e, a->logits, 0, ROLE_LM_HEAD, a->xn, m, V, D);
        return 0;
    }
    if (hidden) engine_download(e, hidden, a->xn, (size_t)m * D);
    if (logits) engine_logits(e, logits, a->xn, m);
    if (e->be.status(&e->be, err)) {
        s->pos -= n_in_place;
        return -1;
    }
    return 0;
}

int engine_forward(engine *e, eseq *s, const int *tokens, const int *parent, const int *depth, int m, int n_in_place,
                   float *logits, float *hidden, sp_error *err) {
    return forward(e, s, tokens, parent, depth, m, n_in_place, logits, hidden, 0, err);
}

int engine_forward_in_place(engine *e, eseq *s, const int *tokens, const int *parent, const int *depth, int m,
                            int n_in_place, sp_error *err) {
    engine_act_reserve_logits(e, m);
    return forward(e, s, tokens, parent, depth, m, n_in_place, NULL, NULL, 1, err);
}
