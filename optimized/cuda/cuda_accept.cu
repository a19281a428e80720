/* cuda_accept.cu — the processed distributions and the exact acceptance rule computed where the logits are
 * (backend.h: probs, accept): a verify pass under the exact rule ends in kn_probs and kn_accept_chain (or
 * kn_accept_tree) on the device, so only the result of the round comes back. */
#include "cuda_backend.h"

#include <stdio.h>

#include "kn_sample.h"

/* ---- the processed distributions ------------------------------------------------------- */

static void c_probs(engine_backend *b, float *out, const float *logits, int m, int V, const sampler_params *sp) {
    cuda_impl *c = impl(b);
    cuda_flush(b);
    float *probs = scratch(b, &c->probs, &c->probs_cap, (size_t)m * V, "processed distributions");
    const size_t work_doubles = kn_probs_work_doubles(m, V);
    double *work = scratch(b, &c->probs_work, &c->probs_work_cap, work_doubles, "probs scratch");
    cuda_check(b, kn_probs(probs, logits, m, V, *sp, work, c->probs_work_cap, c->stream), "probs");
    cuda_download(b, out, probs, (size_t)m * V * sizeof(float));
}

/* ---- acceptance where the distributions are ------------------------------------------ */

/* The distributions of the tree's n rows (kn_probs), then the walk over its drafts: kn_accept_chain's on a chain,
 * kn_accept_tree's on a tree (its parents: the pass's, c_begin_pass); the result's download is the round's only
 * wait. */
static void c_accept(engine_backend *b, int *result, const float *logits, const float *q, const int *token, int n,
                     int V, int without_replacement, const sampler_params *sp, uint64_t seed, uint64_t round,
                     int base_position) {
    cuda_impl *c = impl(b);
    cuda_flush(b);
    float *probs = scratch(b, &c->probs, &c->probs_cap, (size_t)n * V, "processed distributions");
    const size_t work_doubles = kn_probs_work_doubles(n, V);
    double *work = scratch(b, &c->probs_work, &c->probs_work_cap, work_doubles, "probs scratch");
    int *d_result = scratch(b, &c->result, &c->result_cap, (size_t)3 + KN_TREE_MAX, "acceptance result");
    cuda_check(b, kn_probs(probs, logits, n, V, *sp, work, c->probs_work_cap, c->stream), "probs");
    /* the pass's parents, as c_begin_pass uploaded them: a pass of this one tree (verify_accept's pass is one job's,
     * engine_target.c), so its sequence-relative parents are the tree's */
    if (c->n_seqs != 1 && !c->failure[0])
        snprintf(c->failure, sizeof c->failure, "cuda engine: acceptance after a pass over %d sequences", c->n_seqs);
    const int *parent = c->host_parent;
    int chain = 1;
    for (int i = 1; i < n && chain; i++) chain = parent[i] == i - 1;
    if (chain) {
        cuda_check(b, kn_accept_chain(d_result, probs, q, token + 1, n - 1, V, seed, round, base_position, c->stream),
                   "accept_chain");
        cuda_download(b, result, d_result, 3 * sizeof(int));
        for (int i = 1; result[0] > 0 && i <= result[0]; i++) result[2 + i] = i; /* a chain's path: its nodes */
        return;
    }
    float *residual = scratch(b, &c->accept_work, &c->accept_work_cap, (size_t)2 * V, "acceptance scratch");
    cuda_check(b,
               kn_accept_tree(d_result, probs, q, token, c->parent, n, V, without_replacement, seed, round,
                              base_position, residual, c->stream),
               "accept_tree");
    cuda_download(b, result, d_result, ((size_t)3 + n) * sizeof(int));
}

void cuda_accept_install(engine_backend *b) {
    b->probs = c_probs;
    b->accept = c_accept;
}
