/* bench_cost.c — the costs of `specula bench` measured apart from its runs: the inputs of its cost model
 * (bench_model.c). Each figure is a median of reps that the caller interleaves with the runs, so that on a shared
 * machine both see the same load. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

/* The verified sizes: powers of two to 64, k + 1 for each k, a draft tree's nodes + 1, at most the target's largest
 * tree, ascending. */
static int plan_sizes(const int *ks, int n_ks, int tree_m, int max_nodes, int *m) {
    int want[7 + 1 + BENCH_MAX_KS + 1] = {1, 2, 4, 8, 16, 32, 64}, n_want = 7;
    want[n_want++] = tree_m > 0 ? tree_m : 1;
    for (int i = 0; i < n_ks && i <= BENCH_MAX_KS; i++) want[n_want++] = ks[i] + 1;
    int n = 0;
    for (int i = 0; i < n_want && n < BENCH_COST_MAX_SIZES; i++) {
        int j = n;
        if (want[i] > max_nodes) continue;
        for (int e = 0; e < n; e++)
            if (m[e] == want[i]) j = -1;
        if (j < 0) continue;
        while (j > 0 && m[j - 1] > want[i]) m[j] = m[j - 1], j--; /* insertion keeps them ascending */
        m[j] = want[i];
        n++;
    }
    return n;
}

/* What one measurement holds, from bench_costs_begin to bench_costs_end. */
struct bench_cost_run {
    const loaded_models *lm;
    const method_spec *base, *medusa;
    bench_costs *c;
    decode_target *t;
    int base_seq, seq; /* the prefix at the runs' middle position; the fork a timed pass runs on */
    int *prefix;       /* [n_prefix] its tokens: the runs' prompt, continued */
    int n_prefix;
    token_tree chain, tree; /* the chain of each size; the Medusa heads' proposal */
    float *p;               /* [largest tree, V] */
    float *hidden;          /* [n_prefix, D] the prefix's hidden states: the MTP's h, the heads' input */
    float *logits, *h_out;  /* [V], [D] a step's outputs */
    method_built medusa_built;
    int have_medusa;
    double *samples; /* [F_COUNT, reps] seconds */
};

/* Untimed one-node passes before each rep's timed ones. */
#define BENCH_COST_WARM_PASSES 3

/* Figure slots of the samples: the sizes, then these. */
enum { F_DRAFT = BENCH_COST_MAX_SIZES, F_MTP, F_ROUND, F_TREE, F_COUNT };

/* One pass over `tree` and the commit of its last node, on a fork of the prefix (untimed), so that every pass
 * starts at the same position: for a chain, a round whose drafts were all accepted, the dearest commit (the CPU
 * engine replays the accepted steps of the DeltaNet layers); for one node, a plain decoding step. */
static int timed_pass(bench_cost_run *r, const token_tree *tree, const sampler_params *sp, double *seconds,
                      sp_error *err) {
    decode_target *t = r->t;
    if ((r->seq = t->seq_fork(t, r->base_seq, err)) < 0) return -1;
    const target_job job = {r->seq, tree, r->p, NULL};
    const double t0 = bench_now_s();
    if (t->verify(t, &job, 1, sp, err) || t->commit(t, r->seq, tree->n - 1, err)) return -1;
    *seconds = bench_now_s() - t0;
    t->seq_close(t, r->seq);
    r->seq = -1;
    return 0;
}

/* The Medusa proposer of the row, built once: its state is the prefix's last hidden state, which runs between
 * the reps do not touch. */
static int medusa_ready(bench_cost_run *r, sp_error *err) {
    if (method_build(&r->medusa_built, r->medusa, &r->lm->parts, err)) return -1;
    r->have_medusa = 1;
    proposer *p = r->medusa_built.proposer;
    if (p->tree_capacity + 1 > r->t->max_tree_nodes)
        return sp_fail(err, "the Medusa tree has %d nodes; the %s target verifies at most %d", p->tree_capacity + 1,
                       r->t->backend, r->t->max_tree_nodes);
    tree_build(&r->tree, r->t->cfg->vocab_size, p->tree_capacity + 1);
    return p->commit(p, r->prefix, r->hidden, r->n_prefix, 1 % r->t->cfg->vocab_size, err);
}

/* The steppers at the prefix's end (untimed): the runs between the reps reset them. The MTP step reads the
 * target's hidden state of each position; a few positions at a time. */
static int steppers_ready(bench_cost_run *r, sp_error *err) {
    stepper *draft = r->lm->parts.draft, *mtp = r->lm->parts.mtp;
    const int n = r->n_prefix, D = r->t->cfg->hidden_size;
    if (draft) {
        draft->reset(draft);
        if (draft->step(draft, r->prefix, NULL, n, NULL, NULL, err)) return -1;
    }
    if (mtp) {
        mtp->reset(mtp);
        for (int at = 0; at < n; at += 16)
            if (mtp->step(mtp, r->prefix + at, r->hidden + (size_t)at * D, n - at < 16 ? n - at : 16, NULL, NULL, err))
                return -1;
    }
    return 0;
}

bench_cost_run *bench_costs_begin(const loaded_models *lm, const method_spec *base, const method_spec *medusa,
                                  const int *ks, int n_ks, int position, int reps, bench_costs *c, sp_error *err) {
    memset(c, 0, sizeof *c);
    c->reps = reps;
    int all_k[BENCH_MAX_KS + 1] = {base->k}, n_k = 1;
    for (int i = 0; i < n_ks && n_k <= BENCH_MAX_KS; i++) all_k[n_k++] = ks[i];
    c->k = base->k; /* the proposer's steps are timed k in a row; one step is their mean, whatever a row's k */
    c->position = position;
    c->draft_step_ms = c->mtp_step_ms = c->medusa_round_ms = c->medusa_pass_ms = NAN;
    c->draft_ratio = c->mtp_ratio = c->medusa_round_ratio = c->medusa_pass_ratio = NAN;
    bench_cost_run *r = sp_xcalloc(1, sizeof *r, "bench cost run");
    decode_target *t = r->t = lm->parts.target;
    const int V = t->cfg->vocab_size, D = t->cfg->hidden_size, n = position > 1 ? position : 1;
    /* base is not finished: a dynamic tree's budget is still apart from its shape */
    c->tree_m = base->tree_budget > 0   ? base->tree_budget + 1
                : base->shape.depth > 0 ? tree_shape_nodes(&base->shape) + 1
                                        : 0;
    c->n_sizes = plan_sizes(all_k, n_k, c->tree_m, t->max_tree_nodes, c->m);
    r->lm = lm, r->base = base, r->medusa = medusa && lm->parts.heads ? medusa : NULL, r->c = c;
    r->n_prefix = n;
    r->base_seq = r->seq = -1;
    const int largest = c->m[c->n_sizes - 1];
    r->p = sp_xcalloc((size_t)(r->medusa && largest < MEDUSA_MAX_NODES + 1 ? MEDUSA_MAX_NODES + 1 : largest) * V,
                      sizeof(float), "bench cost distributions");
    r->hidden = sp_xcalloc((size_t)n * D, sizeof(float), "bench cost hidden states");
    r->logits = sp_xcalloc((size_t)V, sizeof(float), "bench cost logits");
    r->h_out = sp_xcalloc((size_t)D, sizeof(float), "bench cost hidden");
    tree_build(&r->chain, V, largest);
    r->prefix = sp_xcalloc((size_t)n, sizeof(int), "bench cost prefix");
    for (int i = 0; i < n; i++) r->prefix[i] = (i + 1) % V;
    r->samples = sp_xcalloc((size_t)F_COUNT * reps, sizeof(double), "bench cost samples");
    if ((r->base_seq = t->seq_open(t, err)) < 0 || t->prefill(t, r->base_seq, r->prefix, n, NULL, r->hidden, err) ||
        (r->medusa && medusa_ready(r, err))) {
        bench_costs_end(r, 0);
        return NULL;
    }
    return r;
}

/* The chain of m nodes under `token`. */
static void chain(token_tree *tree, int token, int m, int V) {
    tree_reset(tree, token, CHILDREN_IID);
    for (int j = 1; j < m; j++) tree_add(tree, j - 1, (7 * j + 3) % V);
}

/* Every figure once, in one order, each pass on its own fork of the prefix: every pass starts at the same position. */
int bench_costs_rep(bench_cost_run *r, int rep, sp_error *err) {
    decode_target *t = r->t;
    bench_costs *c = r->c;
    const int V = t->cfg->vocab_size, D = t->cfg->hidden_size, token = 1 % V, k = c->k;
    double sec[F_COUNT] = {0}, warm;
    if (steppers_ready(r, err)) return -1;
    /* Untimed passes first: after the last rep's largest trees (and the runs between reps) the weights are out
     * of the caches, and the first passes would pay for that; in a run a pass follows passes of its own size.
     * One was not enough: on the course model the first timed one-node pass after it still took about twice
     * the runs' decode step (2026-12-02: 1.9-2.2 ms against 1.0-1.3 ms for the next ones), which made every
     * t(m)/t(1) of the cost model too small. */
    chain(&r->chain, token, 1, V);
    for (int w = 0; w < BENCH_COST_WARM_PASSES; w++)
        if (timed_pass(r, &r->chain, &r->base->sampling, &warm, err)) return -1;
    for (int i = 0; i < c->n_sizes; i++) {
        chain(&r->chain, token, c->m[i], V);
        if (timed_pass(r, &r->chain, &r->base->sampling, &sec[i], err)) return -1;
    }
    /* k steps of one position in a row, as a round drafts them; a step is their mean */
    stepper *draft = r->lm->parts.draft, *mtp = r->lm->parts.mtp;
    double t0 = bench_now_s();
    for (int i = 0; draft && i < k; i++)
        if (draft->step(draft, &token, NULL, 1, r->logits, NULL, err)) return -1;
    sec[F_DRAFT] = (bench_now_s() - t0) / k;
    const float *h = r->hidden + (size_t)(r->n_prefix - 1) * D; /* the last prefix position's */
    t0 = bench_now_s();
    for (int i = 0; mtp && i < k; i++)
        if (mtp->step(mtp, &token, h, 1, r->logits, r->h_out, err)) return -1;
    sec[F_MTP] = (bench_now_s() - t0) / k;
    if (r->have_medusa) {
        proposer *p = r->medusa_built.proposer;
        tree_reset(&r->tree, token, p->kind);
        const propose_call call = {&r->medusa->sampling, r->medusa->seed, (uint64_t)(rep + 1),
                                   t->position(t, r->base_seq), 1 << 20};
        t0 = bench_now_s();
        if (p->propose(p, &r->tree, &call, err)) return -1;
        sec[F_ROUND] = bench_now_s() - t0;
        c->medusa_nodes = r->tree.n;
        if (timed_pass(r, &r->tree, &r->medusa->sampling, &sec[F_TREE], err)) return -1;
    }
    for (int f = 0; rep >= 0 && rep < c->reps && f < F_COUNT; f++) r->samples[(size_t)f * c->reps + rep] = sec[f];
    return 0;
}

/* Figure f: the median of its times (ms) and of its ratios to the same rep's one-node pass. */
static void figure(const bench_cost_run *r, int f, double *ms, double *ratio) {
    const int reps = r->c->reps;
    const double *x = r->samples + (size_t)f * reps, *t1 = r->samples;
    double *s = sp_xcalloc((size_t)reps, sizeof *s, "bench cost figure");
    memcpy(s, x, (size_t)reps * sizeof *s);
    *ms = 1e3 * bench_median(s, reps);
    for (int i = 0; i < reps; i++) s[i] = x[i] / t1[i];
    *ratio = bench_median(s, reps);
    free(s);
}

void bench_costs_end(bench_cost_run *r, int ok) {
    bench_costs *c = r->c;
    if (ok) {
        for (int i = 0; i < c->n_sizes; i++) figure(r, i, &c->pass_ms[i], &c->pass_ratio[i]);
        if (r->lm->parts.draft) figure(r, F_DRAFT, &c->draft_step_ms, &c->draft_ratio);
        if (r->lm->parts.mtp) figure(r, F_MTP, &c->mtp_step_ms, &c->mtp_ratio);
        if (r->have_medusa) {
            figure(r, F_ROUND, &c->medusa_round_ms, &c->medusa_round_ratio);
            figure(r, F_TREE, &c->medusa_pass_ms, &c->medusa_pass_ratio);
        }
    } else {
        memset(c, 0, sizeof *c); /* nothing measured: no predictions */
    }
    decode_target *t = r->t;
    if (r->seq >= 0) t->seq_close(t, r->seq);
    if (r->base_seq >= 0) t->seq_close(t, r->base_seq);
    if (r->have_medusa) method_release(&r->medusa_built), tree_free(&r->tree);
    stepper *draft = r->lm->parts.draft, *mtp = r->lm->parts.mtp;
    if (draft) draft->reset(draft); /* the proposers find their models as they were */
    if (mtp) mtp->reset(mtp);
    tree_free(&r->chain);
    free(r->p), free(r->hidden), free(r->logits), free(r->h_out), free(r->prefix), free(r->samples);
    free(r);
}
