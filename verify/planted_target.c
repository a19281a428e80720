/* planted_target.c — PLANT_COMMIT_PARENT_AFTER_TWO (planted.h) around any target: after a round that accepted
 * two nodes or more, the commit takes the last node's parent. Everything else is the inner target's. */
#include "planted.h"

#include <stdlib.h>

/* The inner target, and the tree its last verify pass ran over (one job: decode_run's). */
typedef struct {
    decode_target *inner;
    const token_tree *tree;
} planted;

static decode_target *inner(const decode_target *t) { return ((planted *)t->impl)->inner; }

static int p_seq_open(decode_target *t, sp_error *err) { return inner(t)->seq_open(inner(t), err); }
static int p_seq_fork(decode_target *t, int src, sp_error *err) { return inner(t)->seq_fork(inner(t), src, err); }
static void p_seq_close(decode_target *t, int seq) { inner(t)->seq_close(inner(t), seq); }
static int p_prefill(decode_target *t, int seq, const int *tokens, int n, float *logits, float *hidden, sp_error *err) {
    return inner(t)->prefill(inner(t), seq, tokens, n, logits, hidden, err);
}
static int p_position(const decode_target *t, int seq) { return inner(t)->position(inner(t), seq); }
static void p_memory(const decode_target *t, const int *seqs, int n, target_memory *out) {
    inner(t)->memory(inner(t), seqs, n, out);
}

/* Remembers the job's tree, so the commit can find the parent. */
static int p_verify(decode_target *t, const target_job *jobs, int n_jobs, const sampler_params *sp, sp_error *err) {
    if (n_jobs != 1) return sp_fail(err, "planted target: one job per pass, got %d", n_jobs);
    ((planted *)t->impl)->tree = jobs[0].tree;
    return inner(t)->verify(inner(t), jobs, n_jobs, sp, err);
}

static int p_commit(decode_target *t, int seq, int node, sp_error *err) {
    const token_tree *tree = ((planted *)t->impl)->tree;
    if (tree && node > 0 && tree->depth[node] >= 2) node = tree->parent[node]; /* PLANTED: one step short */
    return inner(t)->commit(inner(t), seq, node, err);
}

static void p_release(decode_target *t) {
    free(t->impl);
    t->impl = NULL;
}

void planted_target_build(decode_target *outer, decode_target *in) {
    planted *p = sp_xcalloc(1, sizeof *p, "planted target");
    p->inner = in;
    *outer = *in;
    outer->seq_open = p_seq_open;
    outer->seq_fork = p_seq_fork;
    outer->seq_close = p_seq_close;
    outer->prefill = p_prefill;
    outer->verify = p_verify;
    /* the commit needs the tree verify saw: every round through verify, none handed whole to the inner target
     * (whose own ops would find this wrapper's impl) */
    outer->verify_accept = NULL;
    outer->mtp_verify_accept = NULL;
    outer->commit = p_commit;
    outer->position = p_position;
    outer->memory = p_memory;
    outer->release = p_release;
    outer->impl = p;
}
