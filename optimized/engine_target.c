/* engine_target.c — the target interface over the engine. A verify pass
 * runs every node of a tree in one engine pass — on a backend that takes
 * several sequences a pass (the CPU's), every job's tree in the same pass,
 * so one read of the weights serves them all. The root is consumed into the
 * sequence (it is committed whatever is accepted), every other node writes
 * its keys and values after the committed positions and logs its DeltaNet
 * step (CPU) or writes its state into a slot of its own (GPU). A commit
 * moves the accepted path's keys and values into place and replays its
 * logged steps on the sequence's state, or takes the last accepted node's
 * slot as the sequence's state. */
#include "engine_target.h"

#include <stdlib.h>
#include <string.h>

static engine *eng(const decode_target *t) { return t->impl; }

static int e_seq_open(decode_target *t, sp_error *err) {
    (void)err;
    return engine_seq_open(eng(t));
}

static int e_seq_fork(decode_target *t, int src, sp_error *err) {
    if (!engine_seq(eng(t), src, err)) return -1;
    return engine_seq_fork(eng(t), src);
}

static void e_seq_close(decode_target *t, int seq) { engine_seq_close(eng(t), seq); }

static int e_prefill(decode_target *t, int seq, const int *tokens, int n, float *logits, float *hidden, sp_error *err) {
    engine *e = eng(t);
    eseq *s = engine_seq(e, seq, err);
    if (!s) return -1;
    if (s->verified)
        return sp_fail(err, "%s engine: sequence %d has a verified tree awaiting a commit", e->be.name, seq);
    int parent[ENGINE_PREFILL_CHUNK], depth[ENGINE_PREFILL_CHUNK];
    for (int i = 0; i < ENGINE_PREFILL_CHUNK; i++) parent[i] = i - 1, depth[i] = i;
    const int V = e->cfg.vocab_size, D = e->cfg.hidden_size;
    for (int at = 0; at < n; at += ENGINE_PREFILL_CHUNK) {
        const int m = n - at < ENGINE_PREFILL_CHUNK ? n - at : ENGINE_PREFILL_CHUNK;
        if (engine_forward(e, s, tokens + at, parent, depth, m, m, logits ? logits + (size_t)at * V : NULL,
                           hidden ? hidden + (size_t)at * D : NULL, err))
            return -1;
    }
    return 0;
}

/* The job's tree held on its sequence (engine_seq_begin_tree), and the sequence's share of the pass: the root
 * consumed into the sequence, the other nodes a tree under it. */
static int begin_job(engine *e, const target_job *job, epart *part, sp_error *err) {
    eseq *s = engine_seq(e, job->seq, err);
    if (!s) return -1;
    const token_tree *tree = job->tree;
    if (engine_seq_begin_tree(e, s, tree->parent, tree->depth, tree->n, err)) return -1;
    *part = (epart){s, tree->token, s->parent, s->depth, tree->n, 1, job->p, job->hidden};
    return 0;
}

/* One pass over the jobs' trees: raw logits into each job's p, or, with sp, the distributions computed where the
 * logits are (on a GPU only they cross to the host). */
static int verify_pass(engine *e, const target_job *jobs, int n_jobs, const sampler_params *sp, sp_error *err) {
    epart parts[ENGINE_MAX_BATCH];
    for (int j = 0; j < n_jobs; j++)
        if (begin_job(e, &jobs[j], &parts[j], err)) return -1;
    if (!sp) return engine_forward_parts(e, parts, n_jobs, 0, err);
    if (engine_forward_parts(e, parts, n_jobs, 1, err)) return -1;
    const int V = e->cfg.vocab_size;
    for (int j = 0, row = 0; j < n_jobs; row += parts[j].m, j++)
        e->be.probs(&e->be, jobs[j].p, e->act.logits + (size_t)row * V, parts[j].m, V, sp);
    return e->be.status(&e->be, err);
}

/* Every job's nodes in one pass where the backend takes several sequences (one read of the weights serves them
 * all), at most ENGINE_MAX_BATCH at a time; else one pass a job. */
static int e_verify(decode_target *t, const target_job *jobs, int n_jobs, const sampler_params *sp, sp_error *err) {
    engine *e = eng(t);
    const int batch = e->be.multi_seq ? ENGINE_MAX_BATCH : 1;
    for (int j = 0; j < n_jobs; j += batch)
        if (verify_pass(e, jobs + j, n_jobs - j < batch ? n_jobs - j : batch, sp, err)) return -1;
    return 0;
}

static int e_commit(decode_target *t, int seq, int node, sp_error *err) {
    engine *e = eng(t);
    eseq *s = engine_seq(e, seq, err);
    if (!s) return -1;
    if (node < 0 || node >= s->verified)
        return sp_fail(err, "%s engine: sequence %d: node %d is not in its verified tree of %d nodes", e->be.name, seq,
                       node, s->verified);
    if (node > 0) {
        int path[ENGINE_MAX_TREE_NODES];
        const int d = engine_seq_path(s, node, path);
        for (int i = 0; i < d; i++) engine_seq_commit_kv(e, s, path[i], path[i]);
        engine_seq_keep_state(e, s, node);
        s->pos += d;
    }
    engine_seq_end_tree(e, s);
    return 0;
}

static int e_position(const decode_target *t, int seq) {
    const engine *e = eng(t);
    return seq >= 0 && seq < e->n_seqs && e->seqs[seq].open ? e->seqs[seq].pos : -1;
}

static void e_memory(const decode_target *t, const int *seqs, int n_seqs, target_memory *out) {
    const engine *e = eng(t);
    memset(out, 0, sizeof *out);
    out->kv_blocks_in_use = e->kv.in_use;
    for (int i = 0; i < n_seqs; i++)
        if (seqs[i] >= 0 && seqs[i] < e->n_seqs) out->kv_blocks_listed += e->seqs[seqs[i]].kv.n;
    out->kv_block_copies = e->kv.copies;
    out->kv_block_bytes = kv_block_bytes(&e->kv);
    out->seq_state_bytes = e->Ll ? e->slot_floats * sizeof(float) : 0;
}

static void e_release(decode_target *t) { t->impl = NULL; }

void engine_target_build(decode_target *t, engine *e) {
    memset(t, 0, sizeof *t);
    t->backend = e->be.name;
    t->cfg = &e->cfg;
    t->path = e->path;
    t->storage_bytes = engine_weights_storage_bytes(&e->w);
    t->weight_bytes_per_pass = e->weight_bytes_per_pass;
    t->max_tree_nodes = e->be.max_tree_nodes;
    t->seq_open = e_seq_open;
    t->seq_fork = e_seq_fork;
    t->seq_close = e_seq_close;
    t->prefill = e_prefill;
    t->verify = e_verify;
    t->commit = e_commit;
    t->position = e_position;
    t->memory = e_memory;
    t->release = e_release;
    t->impl = e;
}
