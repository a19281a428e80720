/* engine_seq.c — the engine's sequences and DeltaNet state slots. A sequence owns one slot, its committed state.
 * Each node of a verified tree owns one until the commit, or on a backend that replays only logs its steps. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

int engine_slot_take(engine *e) {
    for (int s = 0; s < e->n_slots; s++)
        if (!e->slot_used[s]) {
            e->slot_used[s] = 1;
            return s;
        }
    const int old = e->n_slots, cap = old ? 2 * old : 8;
    float *grown = e->be.alloc(&e->be, (size_t)cap * e->slot_floats * sizeof(float), "DeltaNet state slots");
    if (old) {
        e->be.copy(&e->be, grown, e->slots, (size_t)old * e->slot_floats * sizeof(float));
        e->be.free(&e->be, e->slots);
    }
    e->slots = grown;
    e->slot_used = sp_xrealloc(e->slot_used, (size_t)cap, sizeof(int), "DeltaNet slot flags");
    memset(e->slot_used + old, 0, (size_t)(cap - old) * sizeof(int));
    e->n_slots = cap;
    e->slot_used[old] = 1;
    return old;
}

void engine_slot_release(engine *e, int slot) {
    if (slot >= 0 && slot < e->n_slots) e->slot_used[slot] = 0;
}

static size_t conv_floats(const engine *e) { return (size_t)config_conv_dim(&e->cfg) * (e->cfg.conv_kernel - 1); }
static size_t recurrent_floats(const engine *e) {
    return (size_t)e->cfg.lin_v_heads * e->cfg.lin_k_dim * e->cfg.lin_v_dim;
}

float *engine_slot_conv(engine *e, int slot, int li) {
    return e->slots + (size_t)slot * e->slot_floats + (size_t)li * conv_floats(e);
}

float *engine_slot_recurrent(engine *e, int slot, int li) {
    return e->slots + (size_t)slot * e->slot_floats + (size_t)e->Ll * conv_floats(e) + (size_t)li * recurrent_floats(e);
}

void engine_slot_copy(engine *e, int dst, int src) {
    if (dst != src)
        e->be.copy(&e->be, e->slots + (size_t)dst * e->slot_floats, e->slots + (size_t)src * e->slot_floats,
                   e->slot_floats * sizeof(float));
}

void engine_slot_zero(engine *e, int slot) {
    e->be.zero(&e->be, e->slots + (size_t)slot * e->slot_floats, e->slot_floats * sizeof(float));
}

void engine_seq_end_tree(engine *e, eseq *s) {
    for (int i = 1; i < s->verified; i++) engine_slot_release(e, s->node_slot[i]); /* a kept one is −1 */
    s->verified = 0;
    kv_table_truncate(&e->kv, &s->kv, s->pos); /* the blocks that held only the tree's other nodes */
}

int engine_seq_begin_tree(engine *e, eseq *s, const int *parent, const int *depth, int n, sp_error *err) {
    if (s->verified) return sp_fail(err, "%s engine: a sequence verified twice without a commit", e->be.name);
    if (n < 1 || n > e->be.max_tree_nodes)
        return sp_fail(err, "%s engine: a tree of %d nodes (at most %d)", e->be.name, n, e->be.max_tree_nodes);
    if (n > s->cap) {
        s->parent = sp_xrealloc(s->parent, (size_t)n, sizeof(int), "tree parents");
        s->depth = sp_xrealloc(s->depth, (size_t)n, sizeof(int), "tree depths");
        s->node_slot = sp_xrealloc(s->node_slot, (size_t)n, sizeof(int), "tree slots");
        s->cap = n;
    }
    memcpy(s->parent, parent, (size_t)n * sizeof(int));
    memcpy(s->depth, depth, (size_t)n * sizeof(int));
    s->node_slot[0] = s->slot;
    const int logged = e->be.deltanet_replay != NULL;
    for (int i = 1; i < n; i++) s->node_slot[i] = logged ? -1 : engine_slot_take(e);
    if (logged && n > s->log_nodes) {
        if (s->delta_log) e->be.free(&e->be, s->delta_log);
        const int nodes = n > 2 * s->log_nodes ? n : 2 * s->log_nodes;
        s->delta_log = e->be.alloc(&e->be, (size_t)nodes * e->Ll * deltanet_log_floats(&e->cfg) * sizeof(float),
                                   "DeltaNet step log");
        s->log_nodes = nodes;
    }
    s->verified = n; /* before the pass: a failing pass still gives the slots back at the commit or close */
    return 0;
}

int engine_seq_path(const eseq *s, int node, int *path) {
    const int d = s->depth[node];
    for (int u = node; u > 0; u = s->parent[u]) path[s->depth[u] - 1] = u;
    return d;
}

void engine_seq_commit_kv(engine *e, eseq *s, int u, int from) {
    const int root = s->pos - 1; /* the root was consumed at pos − 1, node i's keys and values sit at root + i */
    kv_copy_position(&e->kv, &s->kv, root + s->depth[u], root + from);
}

float *engine_seq_log(const engine *e, const eseq *s, int node, int li) {
    return s->delta_log + ((size_t)node * e->Ll + li) * deltanet_log_floats(&e->cfg);
}

/* The logged steps of the path to `node`, root side first, redone on the sequence's slot layer by layer. */
static void replay_path(engine *e, eseq *s, int node) {
    int path[ENGINE_MAX_TREE_NODES];
    const float *steps[ENGINE_MAX_TREE_NODES];
    const int d = engine_seq_path(s, node, path);
    for (int li = 0; li < e->Ll; li++) {
        for (int j = 0; j < d; j++) steps[j] = engine_seq_log(e, s, path[j], li);
        e->be.deltanet_replay(&e->be, engine_slot_conv(e, s->slot, li), engine_slot_recurrent(e, s->slot, li), steps,
                              d);
    }
}

void engine_seq_keep_state(engine *e, eseq *s, int node) {
    if (e->be.deltanet_replay) {
        replay_path(e, s, node);
        return;
    }
    engine_slot_release(e, s->slot);
    s->slot = s->node_slot[node];
    s->node_slot[node] = -1; /* kept: not given back by engine_seq_end_tree */
}

static int seq_new(engine *e) {
    int id = 0;
    while (id < e->n_seqs && e->seqs[id].open) id++;
    if (id == e->n_seqs) {
        e->seqs = sp_xrealloc(e->seqs, (size_t)++e->n_seqs, sizeof *e->seqs, "engine sequences");
        memset(&e->seqs[id], 0, sizeof e->seqs[id]);
    }
    eseq *s = &e->seqs[id];
    s->open = 1;
    s->pos = 0;
    s->verified = 0;
    s->slot = engine_slot_take(e);
    return id;
}

int engine_seq_open(engine *e) {
    const int id = seq_new(e);
    engine_slot_zero(e, e->seqs[id].slot);
    return id;
}

int engine_seq_fork(engine *e, int src) {
    const int id = seq_new(e); /* may move e->seqs: look src up after */
    eseq *s = &e->seqs[id];
    const eseq *from = &e->seqs[src];
    kv_table_fork(&e->kv, &s->kv, &from->kv);
    engine_slot_copy(e, s->slot, from->slot);
    s->pos = from->pos;
    return id;
}

void engine_seq_close(engine *e, int seq) {
    if (seq < 0 || seq >= e->n_seqs || !e->seqs[seq].open) return;
    eseq *s = &e->seqs[seq];
    engine_seq_end_tree(e, s);
    engine_slot_release(e, s->slot);
    kv_table_truncate(&e->kv, &s->kv, 0);
    s->open = 0;
}

eseq *engine_seq(engine *e, int seq, sp_error *err) {
    if (seq < 0 || seq >= e->n_seqs || !e->seqs[seq].open) {
        sp_fail(err, "%s engine: sequence %d is not open", e->be.name, seq);
        return NULL;
    }
    return &e->seqs[seq];
}
