/* planted_engine.c — the engine's commit, or its acceptance where the logits
 * are, with a planted bug (see planted_engine.h). Everything else is the
 * engine's own target. */
#include "planted_engine.h"

#include <stdlib.h>

#include "engine_target.h"

static const char *const names[PLANT_ENGINE_COUNT] = {"none", "engine-parent-slot", "engine-sibling-kv",
                                                      "engine-accept-round"};

const char *planted_engine_name(planted_engine_bug bug) {
    return (unsigned)bug < PLANT_ENGINE_COUNT ? names[bug] : "?";
}

/* The engine's own target, and the bug its commit carries. */
typedef struct {
    decode_target inner;
    planted_engine_bug bug;
} planted;

static decode_target *inner(const decode_target *t) { return &((planted *)t->impl)->inner; }

static int p_seq_open(decode_target *t, sp_error *err) { return inner(t)->seq_open(inner(t), err); }
static int p_seq_fork(decode_target *t, int src, sp_error *err) { return inner(t)->seq_fork(inner(t), src, err); }
static void p_seq_close(decode_target *t, int seq) { inner(t)->seq_close(inner(t), seq); }
static int p_prefill(decode_target *t, int seq, const int *tokens, int n, float *logits, float *hidden, sp_error *err) {
    return inner(t)->prefill(inner(t), seq, tokens, n, logits, hidden, err);
}
static int p_verify(decode_target *t, const target_job *jobs, int n_jobs, const sampler_params *sp, sp_error *err) {
    return inner(t)->verify(inner(t), jobs, n_jobs, sp, err);
}
static int p_verify_accept(decode_target *t, const target_job *job, const sampler_params *sp, accept_site site,
                           accept_result *r, sp_error *err) {
    if (((planted *)t->impl)->bug == PLANT_ENGINE_ACCEPT_ROUND) site.round++;
    return inner(t)->verify_accept(inner(t), job, sp, site, r, err);
}
/* An MTP round drafted on the engine's side: its acceptance carries the same slip as verify_accept's. */
static int p_mtp_verify_accept(decode_target *t, const target_job *job, const mtp_chain_call *call,
                               const sampler_params *sp, accept_site site, accept_result *r, sp_error *err) {
    if (((planted *)t->impl)->bug == PLANT_ENGINE_ACCEPT_ROUND) site.round++;
    return inner(t)->mtp_verify_accept(inner(t), job, call, sp, site, r, err);
}
static int p_position(const decode_target *t, int seq) { return inner(t)->position(inner(t), seq); }
static void p_memory(const decode_target *t, const int *seqs, int n, target_memory *out) {
    inner(t)->memory(inner(t), seqs, n, out);
}

/* The node whose keys and values the commit copies for path node u. */
static int kv_source(const eseq *s, int u, planted_engine_bug bug) {
    if (bug != PLANT_ENGINE_SIBLING_KV) return u;
    for (int v = 1; v < u; v++)
        if (s->parent[v] == s->parent[u]) return v; /* the parent's first child: a sibling of u, rejected */
    return u;
}

/* engine_target.c's commit, with the planted mistake. */
static int p_commit(decode_target *t, int seq, int node, sp_error *err) {
    const planted_engine_bug bug = ((planted *)t->impl)->bug;
    engine *e = inner(t)->impl;
    eseq *s = engine_seq(e, seq, err);
    if (!s) return -1;
    if (node < 0 || node >= s->verified)
        return sp_fail(err, "planted engine: sequence %d: node %d is not in its verified tree", seq, node);
    if (node > 0) {
        int path[ENGINE_MAX_TREE_NODES];
        const int d = engine_seq_path(s, node, path);
        for (int i = 0; i < d; i++) engine_seq_commit_kv(e, s, path[i], kv_source(s, path[i], bug));
        const int kept = bug == PLANT_ENGINE_PARENT_SLOT ? s->parent[node] : node; /* the parent: one token behind */
        if (kept > 0) engine_seq_keep_state(e, s, kept); /* kept = 0: the root's state, in place already */
        s->pos += d;
    }
    engine_seq_end_tree(e, s);
    return 0;
}

static void p_release(decode_target *t) {
    planted *p = t->impl;
    p->inner.release(&p->inner);
    free(p);
    t->impl = NULL;
}

void planted_engine_target_build(decode_target *t, engine *e, planted_engine_bug bug) {
    planted *p = sp_xcalloc(1, sizeof *p, "planted engine target");
    engine_target_build(&p->inner, e);
    p->bug = bug;
    *t = p->inner;
    t->seq_open = p_seq_open;
    t->seq_fork = p_seq_fork;
    t->seq_close = p_seq_close;
    t->prefill = p_prefill;
    t->verify = p_verify;
    t->verify_accept = p->inner.verify_accept ? p_verify_accept : NULL;
    t->mtp_verify_accept = p->inner.mtp_verify_accept ? p_mtp_verify_accept : NULL;
    t->commit = p_commit;
    t->position = p_position;
    t->memory = p_memory;
    t->release = p_release;
    t->impl = p;
}
