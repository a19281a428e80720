/* engine_forward.c — one pass of the engine over the nodes of one or more sequences' trees, as calls to the
 * backend (backend.h). Each node sees only its own sequence's committed positions and its own ancestors, so a
 * pass computes what the reference computes one position at a time. */
#include <string.h>

#include "engine.h"

static const float *small(const engine *e, int layer, tensor_role r) {
    return (const float *)engine_bweight(e, layer, r)->data;
}

static void matmul(engine *e, float *y, int layer, tensor_role r, const float *x, int m, int n, int k) {
    e->be.matmul(&e->be, y, engine_bweight(e, layer, r), x, m, n, k);
}

/* The products of x with group g's weights of this layer (engine_weight_groups), y[j] receiving part j's n[j]
 * columns: one grouped product, where one matmul a weight would cost a launch or a thread team each. */
static void matmul_group(engine *e, engine_group_id g, float *const *y, const int *n, int layer, const float *x, int m,
                         int k) {
    const engine_weight_group *group = &engine_weight_groups[g];
    ematmul_part parts[ENGINE_GROUP_MAX_PARTS];
    for (int j = 0; j < group->n_parts; j++)
        parts[j] = (ematmul_part){y[j], engine_bweight(e, layer, group->role[j]), n[j]};
    e->be.matmul_group(&e->be, parts, group->n_parts, x, m, k);
}

static void attention_layer(engine *e, const epass *p, int layer, int la) {
    const model_config *c = &e->cfg;
    eact *a = &e->act;
    const int D = c->hidden_size, H = c->num_heads, Dh = c->head_dim, m = p->m;
    const int kv_dim = c->num_kv_heads * Dh;
    float *const y[] = {a->q, a->k, a->v}; /* q_proj, k_proj, v_proj */
    const int n[] = {2 * H * Dh, kv_dim, kv_dim};
    matmul_group(e, EGROUP_ATTENTION_IN, y, n, layer, a->xn, m, D);
    const attention_args args = {a->q, a->k, a->v, small(e, layer, ROLE_Q_NORM), small(e, layer, ROLE_K_NORM), a->att};
    e->be.attention(&e->be, p, la, &args);
    matmul(e, a->out, layer, ROLE_O_PROJ, a->att, m, D, H * Dh);
}

/* The slot node i (an index among part q's nodes) keeps its DeltaNet state in, and the one it starts from; −1 for
 * a logged node (a backend that replays keeps the states of a tree's nodes past the in-place ones in its own
 * scratch during the pass). Each node's come from its own sequence: no state crosses sequences. */
static int node_slot(const engine *e, const epart *q, int i) {
    if (i < q->n_in_place) return q->s->slot;
    return e->be.deltanet_replay ? -1 : q->s->node_slot[i];
}
static int parent_slot(const engine *e, const epart *q, int i) {
    return i < q->n_in_place || q->parent[i] < q->n_in_place ? q->s->slot : node_slot(e, q, q->parent[i]);
}

static void deltanet_layer(engine *e, const epart *parts, const epass *p, int layer, int li) {
    const model_config *c = &e->cfg;
    eact *a = &e->act;
    const int D = c->hidden_size, C = config_conv_dim(c), m = p->m;
    const int Hv = c->lin_v_heads, Dv = c->lin_v_dim;
    float *const y[] = {a->q, a->z, a->ab, a->ab + (size_t)m * Hv}; /* in_proj_qkv, _z, _a, _b */
    const int n[] = {C, Hv * Dv, Hv, Hv};
    matmul_group(e, EGROUP_DELTANET_IN, y, n, layer, a->xn, m, D);
    for (int i = 0; i < m; i++) {
        const epart *q = &parts[p->seq_of[i]];
        const int u = i - epass_seq_of(p, i)->first; /* node i among its sequence's */
        const int own = node_slot(e, q, u), from = parent_slot(e, q, u);
        a->conv_state[i] = own < 0 ? NULL : engine_slot_conv(e, own, li);
        a->rec_state[i] = own < 0 ? NULL : engine_slot_recurrent(e, own, li);
        a->conv_from[i] = from < 0 ? NULL : engine_slot_conv(e, from, li);
        a->rec_from[i] = from < 0 ? NULL : engine_slot_recurrent(e, from, li);
        a->log[i] = own < 0 ? engine_seq_log(e, q->s, u, li) : NULL;
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
    float *const y[] = {a->g, a->u}; /* gate_proj, up_proj */
    const int n[] = {F, F};
    matmul_group(e, EGROUP_MLP_IN, y, n, layer, a->xn, m, D);
    e->be.swiglu(&e->be, a->g, a->u, (size_t)m * F);
    matmul(e, a->out, layer, ROLE_DOWN_PROJ, a->g, m, D, F);
}

static void decoder_layer(engine *e, const epart *parts, const epass *p, int layer, layer_type type, int type_index) {
    eact *a = &e->act;
    const int D = e->cfg.hidden_size, m = p->m;
    const float eps = e->cfg.rms_norm_eps;
    e->be.rmsnorm(&e->be, a->xn, a->x, small(e, layer, ROLE_INPUT_NORM), m, D, eps);
    if (type == LAYER_FULL_ATTENTION)
        attention_layer(e, p, layer, type_index);
    else
        deltanet_layer(e, parts, p, layer, type_index);
    e->be.add(&e->be, a->x, a->out, (size_t)m * D);
    e->be.rmsnorm(&e->be, a->xn, a->x, small(e, layer, ROLE_POST_NORM), m, D, eps);
    mlp(e, layer, m);
    e->be.add(&e->be, a->x, a->out, (size_t)m * D);
}

void engine_decoder_layer(engine *e, const epass *p, int layer, layer_type type, int type_index) {
    decoder_layer(e, NULL, p, layer, type, type_index); /* attention layers only: no DeltaNet state */
}

/* Part q's nodes as engine_forward_parts takes them: a chain of n_in_place, then a tree hanging from its last. */
static int check_part(const engine *e, const epart *q, sp_error *err) {
    const int V = e->cfg.vocab_size;
    if (q->m < 1) return sp_fail(err, "%s engine: a pass share of %d nodes", e->be.name, q->m);
    for (int i = 1; i < q->m; i++)
        if (q->parent[i] < 0 || q->parent[i] >= i || (i >= q->n_in_place && q->parent[i] < q->n_in_place - 1) ||
            (i < q->n_in_place && q->parent[i] != i - 1))
            return sp_fail(err, "%s engine: node %d has parent %d, which this pass cannot place", e->be.name, i,
                           q->parent[i]);
    for (int i = 0; i < q->m && !q->drawn; i++) /* drawn tokens come from the backend's own draws */
        if (q->tokens[i] < 0 || q->tokens[i] >= V)
            return sp_fail(err, "%s engine: token %d is outside the vocabulary [0, %d)", e->be.name, q->tokens[i], V);
    return 0;
}

/* The pass's node arrays in e->act, the parts' nodes in turn, and its sequences' shares; the KV tables reserved
 * for every node. Returns the pass's node count. */
static int gather(engine *e, const epart *parts, int n_parts) {
    eact *a = &e->act;
    int m = 0;
    for (int j = 0; j < n_parts; j++) m += parts[j].m;
    engine_act_reserve(e, m);
    if (n_parts > a->seq_cap) {
        a->seqs = sp_xrealloc(a->seqs, (size_t)n_parts, sizeof *a->seqs, "pass sequences");
        a->seq_cap = n_parts;
    }
    int at = 0;
    for (int j = 0; j < n_parts; j++) {
        const epart *q = &parts[j];
        kv_table_reserve(&e->kv, &q->s->kv, q->s->pos, q->s->pos + q->m); /* node i's keys and values at pos + i */
        a->seqs[j] = (epass_seq){&q->s->kv, q->s->pos, at, q->m};
        for (int i = 0; i < q->m; i++, at++) {
            a->tokens[at] = q->drawn ? -1 : q->tokens[i];
            a->parent[at] = q->parent[i] < 0 ? -1 : a->seqs[j].first + q->parent[i];
            a->depth[at] = q->depth[i];
            a->seq_of[at] = j;
            a->state_slot[at] = node_slot(e, q, i);
        }
    }
    return m;
}

typedef struct {
    engine *e;
    const epart *parts;
    const epass *p;
} trunk_work;

/* The pass's embeddings, its layers and the final norm, into e->act.xn. */
static void trunk(void *ctx) {
    const trunk_work *w = ctx;
    engine *e = w->e;
    const model_config *c = &e->cfg;
    eact *a = &e->act;
    const int D = c->hidden_size, m = w->p->m;
    if (w->parts[0].drawn) /* one part (engine_forward_parts checks) */
        e->be.embed_drawn(&e->be, a->x, engine_bweight(e, 0, ROLE_EMBED), w->parts[0].drawn, m, D);
    else
        e->be.embed(&e->be, a->x, engine_bweight(e, 0, ROLE_EMBED), a->tokens, m, D);
    int n_full = 0, n_lin = 0;
    for (int l = 0; l < c->num_layers; l++) {
        const layer_type type = c->layer_types[l];
        decoder_layer(e, w->parts, w->p, l, type, type == LAYER_FULL_ATTENTION ? n_full++ : n_lin++);
    }
    e->be.rmsnorm(&e->be, a->xn, a->x, small(e, 0, ROLE_FINAL_NORM), m, D, c->rms_norm_eps);
}

int engine_forward_parts(engine *e, const epart *parts, int n_parts, int in_place, sp_error *err) {
    const model_config *c = &e->cfg;
    const int D = c->hidden_size, V = c->vocab_size;
    if (n_parts < 1) return sp_fail(err, "%s engine: a pass over no sequence", e->be.name);
    if (n_parts > 1 && !e->be.multi_seq)
        return sp_fail(err, "%s engine: this backend runs one sequence a pass (%d given)", e->be.name, n_parts);
    for (int j = 0; j < n_parts; j++) {
        if (parts[j].drawn && (n_parts > 1 || !e->be.embed_drawn))
            return sp_fail(err, "%s engine: tokens drawn on the backend in a pass of %d sequences", e->be.name,
                           n_parts);
        if (check_part(e, &parts[j], err)) return -1;
        for (int k = 0; k < j; k++)
            if (parts[k].s == parts[j].s) return sp_fail(err, "%s engine: one sequence twice in a pass", e->be.name);
    }
    const int m = gather(e, parts, n_parts);
    eact *a = &e->act;
    const epass p = {&e->kv, a->seqs, a->seq_of, a->parent, a->depth, m, n_parts, a->state_slot};
    e->be.begin_pass(&e->be, &p);
    trunk_work w = {e, parts, &p};
    backend_hold(&e->be, trunk, &w);
    if (in_place) { /* launched, not waited for (engine.h): the caller reads what it needs where it is, then waits */
        engine_act_reserve_logits(e, m);
        matmul(e, a->logits, 0, ROLE_LM_HEAD, a->xn, m, V, D);
        for (int j = 0; j < n_parts; j++) parts[j].s->pos += parts[j].n_in_place;
        return 0;
    }
    int want_logits = 0;
    for (int j = 0; j < n_parts; j++) {
        const epart *q = &parts[j];
        if (q->hidden) engine_download(e, q->hidden, a->xn + (size_t)a->seqs[j].first * D, (size_t)q->m * D);
        want_logits |= q->logits != NULL;
    }
    if (n_parts == 1 && want_logits) {
        engine_logits(e, parts[0].logits, a->xn, m); /* on the CPU straight into the caller's rows */
    } else if (want_logits) {
        engine_act_reserve_logits(e, m);
        matmul(e, a->logits, 0, ROLE_LM_HEAD, a->xn, m, V, D);
        for (int j = 0; j < n_parts; j++)
            if (parts[j].logits)
                engine_download(e, parts[j].logits, a->logits + (size_t)a->seqs[j].first * V, (size_t)parts[j].m * V);
    }
    if (e->be.status(&e->be, err)) return -1;
    for (int j = 0; j < n_parts; j++) parts[j].s->pos += parts[j].n_in_place;
    return 0;
}

int engine_forward(engine *e, eseq *s, const int *tokens, const int *parent, const int *depth, int m, int n_in_place,
                   float *logits, float *hidden, sp_error *err) {
    const epart part = {s, tokens, parent, depth, m, n_in_place, logits, hidden, NULL};
    return engine_forward_parts(e, &part, 1, 0, err);
}

int engine_forward_in_place(engine *e, eseq *s, const int *tokens, const int *parent, const int *depth, int m,
                            int n_in_place, sp_error *err) {
    const epart part = {s, tokens, parent, depth, m, n_in_place, NULL, NULL, NULL};
    return engine_forward_parts(e, &part, 1, 1, err);
}

int engine_forward_drawn(engine *e, eseq *s, const int *drawn, const int *parent, const int *depth, int m,
                         int n_in_place, sp_error *err) {
    const epart part = {s, NULL, parent, depth, m, n_in_place, NULL, NULL, drawn};
    return engine_forward_parts(e, &part, 1, 1, err);
}
