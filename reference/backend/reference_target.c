/* reference_target.c — the target interface over the reference model, one position at a time. */
#include "reference_target.h"

#include <stdlib.h>
#include <string.h>

#include "footprint.h"
#include "logits_check.h"

typedef struct {
    int open;
    model_state state;  /* every position consumed so far */
    model_state *nodes; /* [nodes_cap] nodes[i]: the state after node i of the last tree (i ≥ 1) */
    int nodes_cap;
    int verified; /* nodes of the last verified tree awaiting a commit (0: none) */
} ref_seq;

typedef struct {
    model *m;
    kv_pool pool; /* the KV blocks of every sequence and node state */
    ref_seq *seqs;
    int n_seqs;
} ref_target;

static ref_seq *seq_at(ref_target *r, int seq, sp_error *err) {
    if (seq < 0 || seq >= r->n_seqs || !r->seqs[seq].open) {
        sp_fail(err, "reference target: sequence %d is not open", seq);
        return NULL;
    }
    return &r->seqs[seq];
}

/* A closed slot reused, or a new one: its state built and empty. */
static int seq_new(ref_target *r) {
    int id = 0;
    while (id < r->n_seqs && r->seqs[id].open) id++;
    if (id == r->n_seqs) {
        r->seqs = sp_xrealloc(r->seqs, (size_t)++r->n_seqs, sizeof *r->seqs, "reference sequences");
        memset(&r->seqs[id], 0, sizeof r->seqs[id]);
        state_build(&r->seqs[id].state, &r->m->cfg, &r->pool);
    }
    ref_seq *s = &r->seqs[id];
    state_reset(&s->state);
    s->open = 1;
    s->verified = 0;
    return id;
}

static int ref_seq_open(decode_target *t, sp_error *err) {
    (void)err;
    return seq_new(t->impl);
}

static int ref_seq_fork(decode_target *t, int src, sp_error *err) {
    ref_target *r = t->impl;
    if (!seq_at(r, src, err)) return -1;
    const int id = seq_new(r); /* may move r->seqs: look src up again below */
    state_fork(&r->seqs[id].state, &r->seqs[src].state);
    return id;
}

/* Drops the KV blocks every node state holds. */
static void release_nodes(ref_seq *s) {
    for (int i = 1; i < s->verified; i++) state_truncate_kv(&s->nodes[i], 0);
    s->verified = 0;
}

static void ref_seq_close(decode_target *t, int seq) {
    ref_target *r = t->impl;
    if (seq < 0 || seq >= r->n_seqs || !r->seqs[seq].open) return;
    ref_seq *s = &r->seqs[seq];
    release_nodes(s);
    state_truncate_kv(&s->state, 0);
    s->open = 0;
}

static int ref_prefill(decode_target *t, int seq, const int *tokens, int n, float *logits, float *hidden,
                       sp_error *err) {
    ref_target *r = t->impl;
    ref_seq *s = seq_at(r, seq, err);
    if (!s) return -1;
    if (s->verified) return sp_fail(err, "reference target: sequence %d has a verified tree awaiting a commit", seq);
    const int V = r->m->cfg.vocab_size, D = r->m->cfg.hidden_size;
    for (int i = 0; i < n; i++) {
        const int position = s->state.pos;
        float *row = logits ? logits + (size_t)i * V : NULL;
        model_forward(r->m, &s->state, tokens[i], row, hidden ? hidden + (size_t)i * D : NULL);
        if (row && logits_check_raw(row, 1, V, position, err)) return -1;
    }
    return 0;
}

static void grow_nodes(ref_target *r, ref_seq *s, int n) {
    if (n <= s->nodes_cap) return;
    s->nodes = sp_xrealloc(s->nodes, (size_t)n, sizeof *s->nodes, "tree node states");
    for (int i = s->nodes_cap; i < n; i++) state_build(&s->nodes[i], &r->m->cfg, &r->pool);
    s->nodes_cap = n;
}

/* Node by node: the root in the sequence's own state (it is committed whatever is accepted), every other node
 * in a state forked from its parent's. That is what a tree attention mask with per-node positions computes in
 * one batched pass (tree_attention_mask, tree_positions). A rejected branch leaves no trace: the forks share the
 * prefix's KV blocks copy-on-write and drop them at the commit. */
static int verify_one(ref_target *r, const target_job *job, const sampler_params *sp, sp_error *err) {
    ref_seq *s = seq_at(r, job->seq, err);
    if (!s) return -1;
    if (s->verified) return sp_fail(err, "reference target: sequence %d was verified twice without a commit", job->seq);
    const token_tree *tree = job->tree;
    const int V = r->m->cfg.vocab_size, D = r->m->cfg.hidden_size;
    grow_nodes(r, s, tree->n);
    const int root_position = s->state.pos;
    for (int i = 0; i < tree->n; i++) {
        model_state *state = &s->state;
        if (i > 0) {
            state = &s->nodes[i];
            state_fork(state, tree->parent[i] == 0 ? &s->state : &s->nodes[tree->parent[i]]);
        }
        float *row = job->p + (size_t)i * V;
        model_forward(r->m, state, tree->token[i], row, job->hidden ? job->hidden + (size_t)i * D : NULL);
        if (logits_check_raw(row, 1, V, root_position + tree->depth[i], err)) {
            s->verified = i + 1; /* so that closing the sequence releases the nodes forked so far */
            return -1;
        }
        if (sp) sampler_probs(sp, row, row, V);
    }
    s->verified = tree->n;
    return 0;
}

static int ref_verify(decode_target *t, const target_job *jobs, int n_jobs, const sampler_params *sp, sp_error *err) {
    for (int j = 0; j < n_jobs; j++)
        if (verify_one(t->impl, &jobs[j], sp, err)) return -1;
    return 0;
}

static int ref_commit(decode_target *t, int seq, int node, sp_error *err) {
    ref_seq *s = seq_at(t->impl, seq, err);
    if (!s) return -1;
    if (node < 0 || node >= s->verified)
        return sp_fail(err, "reference target: sequence %d: node %d is not in its verified tree of %d nodes", seq, node,
                       s->verified);
    if (node > 0) { /* the node's state becomes the sequence's; the old one is released with the rest */
        model_state kept = s->nodes[node];
        s->nodes[node] = s->state;
        s->state = kept;
        state_truncate_kv(&s->nodes[node], 0);
    }
    release_nodes(s);
    return 0;
}

static int ref_position(const decode_target *t, int seq) {
    const ref_target *r = t->impl;
    return seq >= 0 && seq < r->n_seqs && r->seqs[seq].open ? r->seqs[seq].state.pos : -1;
}

static void ref_memory(const decode_target *t, const int *seqs, int n_seqs, target_memory *out) {
    const ref_target *r = t->impl;
    memset(out, 0, sizeof *out);
    out->kv_blocks_in_use = r->pool.blocks_in_use;
    for (int i = 0; i < n_seqs; i++)
        if (seqs[i] >= 0 && seqs[i] < r->n_seqs) out->kv_blocks_listed += r->seqs[seqs[i]].state.n_blocks;
    out->kv_block_copies = r->pool.copies;
    out->kv_block_bytes = 2 * (size_t)r->pool.num_layers * KV_BLOCK_SIZE * r->pool.kv_dim * sizeof(float);
    out->seq_state_bytes = state_deltanet_bytes_of(&r->m->cfg);
}

static void ref_release(decode_target *t) {
    ref_target *r = t->impl;
    for (int i = 0; i < r->n_seqs; i++) {
        ref_seq *s = &r->seqs[i];
        for (int j = 0; j < s->nodes_cap; j++) state_free(&s->nodes[j]);
        free(s->nodes);
        state_free(&s->state);
    }
    free(r->seqs);
    kv_pool_free(&r->pool);
    free(r);
    t->impl = NULL;
}

void reference_target_build(decode_target *t, model *m) {
    ref_target *r = sp_xcalloc(1, sizeof *r, "reference target");
    r->m = m;
    kv_pool_build(&r->pool, config_num_full(&m->cfg), m->cfg.num_kv_heads * m->cfg.head_dim);
    memset(t, 0, sizeof *t);
    t->backend = "reference";
    t->cfg = &m->cfg;
    t->path = m->path;
    t->storage_bytes = m->storage_bytes;
    t->weight_bytes_per_pass = m->weight_bytes_per_step;
    t->max_tree_nodes = REFERENCE_MAX_TREE_NODES;
    t->seq_open = ref_seq_open;
    t->seq_fork = ref_seq_fork;
    t->seq_close = ref_seq_close;
    t->prefill = ref_prefill;
    t->verify = ref_verify;
    t->commit = ref_commit;
    t->position = ref_position;
    t->memory = ref_memory;
    t->release = ref_release;
    t->impl = r;
}

model_state *reference_target_state(decode_target *t, int seq) {
    ref_target *r = t->impl;
    return seq >= 0 && seq < r->n_seqs && r->seqs[seq].open ? &r->seqs[seq].state : NULL;
}

kv_pool *reference_target_pool(decode_target *t) { return &((ref_target *)t->impl)->pool; }

medusa_base reference_medusa_base(const model *m) {
    medusa_base b = {m->path, m->cfg.hidden_size, m->cfg.vocab_size, m->w.lm_head};
    return b;
}
