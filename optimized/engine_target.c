/* engine_target.c — the target interface (target.h) over the engine. A verify pass runs the trees of several
 * jobs in one engine pass where the backend allows it. A tree's root is committed whatever is accepted, so the
 * pass consumes it into the sequence; the other nodes wait for the commit. */
#include "engine_target.h"

#include <stdlib.h>
#include <string.h>

#include "accept.h"
#include "engine_mtp.h"
#include "logits_check.h"

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
    const int V = e->cfg.vocab_size, D = e->cfg.hidden_size, position = s->pos;
    for (int at = 0; at < n; at += ENGINE_PREFILL_CHUNK) {
        const int m = n - at < ENGINE_PREFILL_CHUNK ? n - at : ENGINE_PREFILL_CHUNK;
        float *rows = logits ? logits + (size_t)at * V : NULL;
        if (engine_forward(e, s, tokens + at, parent, depth, m, m, rows, hidden ? hidden + (size_t)at * D : NULL, err))
            return -1;
        if (rows && logits_check_raw(rows, m, V, position + at, err)) return -1;
    }
    return 0;
}

/* A tree's rows checked before anything is drawn from them (logits_check.h), the root at root_position: the raw
 * logits where backend memory is host memory, else the processed rows that crossed to the host (on a GPU the
 * logits stay on the device: a row whose every logit is NaN or −inf arrives with no mass). */
static int check_rows(const engine *e, const token_tree *tree, const float *logits, const float *probs,
                      int root_position, sp_error *err) {
    const int V = e->cfg.vocab_size;
    for (int i = 0; i < tree->n; i++) {
        const int position = root_position + tree->depth[i];
        if (e->be.host_memory ? logits_check_raw(logits + (size_t)i * V, 1, V, position, err)
                              : probs && logits_check_mass(probs + (size_t)i * V, 1, V, position, err))
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
    *part = (epart){s, tree->token, s->parent, s->depth, tree->n, 1, job->p, job->hidden, NULL};
    return 0;
}

/* One pass over the jobs' trees: raw logits into each job's p, or, with sp, the distributions computed where the
 * logits are (on a GPU only they cross to the host). */
static int verify_pass(engine *e, const target_job *jobs, int n_jobs, const sampler_params *sp, sp_error *err) {
    epart parts[ENGINE_MAX_BATCH];
    int root_position[ENGINE_MAX_BATCH];
    for (int j = 0; j < n_jobs; j++) {
        if (begin_job(e, &jobs[j], &parts[j], err)) return -1;
        root_position[j] = parts[j].s->pos;
    }
    if (!sp) {
        if (engine_forward_parts(e, parts, n_jobs, 0, err)) return -1;
        for (int j = 0; j < n_jobs; j++) /* raw logits, on the host */
            if (logits_check_raw(jobs[j].p, jobs[j].tree->n, e->cfg.vocab_size, root_position[j], err)) return -1;
        return 0;
    }
    if (engine_forward_parts(e, parts, n_jobs, 1, err)) return -1;
    const int V = e->cfg.vocab_size, D = e->cfg.hidden_size;
    for (int j = 0, row = 0; j < n_jobs; row += parts[j].m, j++) {
        if (jobs[j].hidden) engine_download(e, jobs[j].hidden, e->act.xn + (size_t)row * D, (size_t)parts[j].m * D);
        e->be.probs(&e->be, jobs[j].p, e->act.logits + (size_t)row * V, parts[j].m, V, sp);
    }
    if (e->be.status(&e->be, err)) return -1;
    for (int j = 0, row = 0; j < n_jobs; row += parts[j].m, j++)
        if (check_rows(e, jobs[j].tree, e->act.logits + (size_t)row * V, jobs[j].p, root_position[j], err)) return -1;
    return 0;
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

/* The pass, then accept_exact on the host: the trees the backend's accept does not take (top ranks, whose
 * accept_exact is an error). */
static int verify_then_accept(engine *e, const target_job *job, const sampler_params *sp, accept_site site,
                              accept_result *r, sp_error *err) {
    if (verify_pass(e, job, 1, sp, err)) return -1;
    float *scratch = sp_xcalloc((size_t)2 * e->cfg.vocab_size, sizeof(float), "acceptance scratch");
    const int rc = accept_exact(job->tree, job->p, site, scratch, r, err);
    free(scratch);
    return rc;
}

/* A tree's pass and its acceptance where the logits are (backend.h, accept); only the result and the accepted
 * path's hidden states cross to the host. The tree's tokens and q rows are uploaded before the pass, so no upload
 * waits on it; downloading the result is the round's one wait on a GPU. This takes one job, since the device's
 * walk takes one tree. The batched round loop (decode_batch.c) calls verify instead and accepts each job on the
 * host at the same rng sites (tests/gpu/test_engine_cuda_batch.c checks that the tokens agree). */
static int e_verify_accept(decode_target *t, const target_job *job, const sampler_params *sp, accept_site site,
                           accept_result *r, sp_error *err) {
    engine *e = eng(t);
    const token_tree *tree = job->tree;
    if (tree->kind == CHILDREN_TOP_RANKS) return verify_then_accept(e, job, sp, site, r, err);
    eseq *s = engine_seq(e, job->seq, err);
    if (!s) return -1;
    const int n = tree->n, V = e->cfg.vocab_size;
    if (engine_seq_begin_tree(e, s, tree->parent, tree->depth, n, err)) return -1;
    int q_rows = 0; /* the rows the walk reads: up to the last node with children (a chain: all but its leaf) */
    for (int c = 1; c < n; c++)
        if (tree->parent[c] + 1 > q_rows) q_rows = tree->parent[c] + 1;
    engine_act_reserve_tree(e, n);
    if (q_rows) e->be.upload(&e->be, e->act.tree_q, tree_q_const(tree, 0), (size_t)q_rows * V * sizeof(float));
    e->be.upload(&e->be, e->act.tree_tokens, tree->token, (size_t)n * sizeof(int));
    const int root_position = s->pos;
    if (engine_forward_in_place(e, s, tree->token, s->parent, s->depth, n, 1, err)) return -1;
    if (check_rows(e, tree, e->act.logits, NULL, root_position, err)) return -1;
    int result[3 + ENGINE_MAX_TREE_NODES];
    e->be.accept(&e->be, result, e->act.logits, e->act.tree_q, e->act.tree_tokens, n, V,
                 tree->kind == CHILDREN_NO_REPLACEMENT, sp, site.seed, site.round, site.base_position);
    if (e->be.status(&e->be, err)) return -1;
    if (result[0] < 0) /* accept_exact's message, for the node the walk stopped at */
        return sp_fail(err, "node %d: drafted token %d has proposal probability 0", result[1], tree->token[result[1]]);
    r->n_accepted = result[0];
    r->path[0] = 0;
    for (int i = 1; i <= r->n_accepted; i++) r->path[i] = result[2 + i];
    r->next_token = result[1];
    r->bonus = result[2];
    const int rows = r->path[r->n_accepted] + 1; /* a chain's path: its first rows; a tree's: up to its last node */
    if (job->hidden) engine_download(e, job->hidden, e->act.xn, (size_t)rows * e->cfg.hidden_size);
    return e->be.status(&e->be, err);
}

/* Moves the accepted path's keys and values into place, then makes the last accepted node's DeltaNet state the
 * sequence's: a replay of the path's logged steps (CPU) or that node's slot (GPU). */
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
    t->verify_accept = e->be.accept ? e_verify_accept : NULL;             /* the CPU's: verify + accept_exact */
    t->mtp_verify_accept = e->be.draft ? engine_mtp_verify_accept : NULL; /* an MTP chain drafted where p is */
    t->commit = e_commit;
    t->position = e_position;
    t->memory = e_memory;
    t->release = e_release;
    t->impl = e;
}
