/* audit_law.c — the arms' transforms against the target's law (audit_law.h):
 * each sample verified as one chain after the prompt, in passes of at most
 * the target's tree size, from a fork of the prompt's state. */
#include "audit_law.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "philox.h"

double audit_pit_value(const float *probs, int V, int x, double U) {
    double px = probs[x], total = 0.0, above = 0.0;
    for (int j = 0; j < V; j++) {
        double pj = probs[j];
        total += pj;
        if (pj > px || (pj == px && j < x)) above += pj;
    }
    if (!(px > 0.0) || !(total > 0.0)) return -1.0;
    double u = (above + U * px) / total; /* the float row sums to 1 only to rounding */
    return u < 1.0 ? u : nextafter(1.0, 0.0);
}

/* A uniform in (0, 1) with 53 random bits, for sample i at position t. */
static double pit_uniform(uint64_t seed, int i, int t) {
    uint32_t w[4];
    philox_words(seed, (uint64_t)i, (uint64_t)t, w);
    uint64_t bits = ((uint64_t)w[0] << 21) ^ (uint64_t)w[1];
    return ((double)(bits & ((1ull << 53) - 1)) + 0.5) / 9007199254740992.0;
}

/* p[L, V]: the processed distribution of each token of row given the
 * prefix, from a fork of `base` (the prompt but its last token). */
static int sample_probs(decode_target *t, int base, int pending, const int *row, int L, const sampler_params *sp,
                        const int *banned, int n_banned, token_tree *tree, float *p, sp_error *err) {
    int V = t->cfg->vocab_size, seq = t->seq_fork(t, base, err);
    if (seq < 0) return -1;
    int rc = 0;
    for (int pos = 0; pos < L && !rc;) {
        int c = L - pos < t->max_tree_nodes ? L - pos : t->max_tree_nodes;
        tree_reset(tree, pending, CHILDREN_IID);
        for (int j = 0; j + 1 < c; j++) tree_add(tree, j, row[pos + j]);
        target_job job = {.seq = seq, .tree = tree, .p = p + (size_t)pos * (size_t)V, .hidden = NULL};
        /* raw logits, so the banned tokens leave before the temperature and
         * the cuts, as a logit bias of −inf does in an engine */
        if ((rc = t->verify(t, &job, 1, NULL, err))) break;
        for (int j = 0; j < c; j++) {
            float *row_p = p + (size_t)(pos + j) * (size_t)V;
            for (int b = 0; b < n_banned; b++) row_p[banned[b]] = -INFINITY;
            sampler_probs(sp, row_p, row_p, V);
        }
        rc = t->commit(t, seq, c - 1, err);
        pending = row[pos + c - 1];
        pos += c;
    }
    t->seq_close(t, seq);
    return rc;
}

int audit_law_pit(decode_target *t, const int *prompt, int n_prompt, const sampler_params *sp, const int *banned,
                  int n_banned, const audit_samples *s, uint64_t seed, audit_progress_fn progress, void *user,
                  audit_pit *out, sp_error *err) {
    if (out->L != s->L) return sp_fail(err, "audit: transforms of %d positions for samples of %d", out->L, s->L);
    if (n_prompt < 1) return sp_fail(err, "audit: the law needs a prompt of at least one token");
    int V = t->cfg->vocab_size, L = s->L;
    for (int b = 0; b < n_banned; b++)
        if (banned[b] < 0 || banned[b] >= V)
            return sp_fail(err, "audit: banned token %d outside the vocabulary", banned[b]);
    int base = t->seq_open(t, err);
    if (base < 0) return -1;
    int rc = t->prefill(t, base, prompt, n_prompt - 1, NULL, NULL, err);
    float *p = sp_xcalloc((size_t)L * (size_t)V, sizeof *p, "audit law p[L, V]");
    token_tree tree;
    tree_build(&tree, V, L < t->max_tree_nodes ? L : t->max_tree_nodes);
    for (int i = 0; i < s->n && !rc; i++) {
        const int *row = s->tokens + (size_t)i * (size_t)L;
        if ((rc = sample_probs(t, base, prompt[n_prompt - 1], row, L, sp, banned, n_banned, &tree, p, err))) break;
        for (int k = 0; k < L; k++) {
            double u = audit_pit_value(p + (size_t)k * (size_t)V, V, row[k], pit_uniform(seed, i, k));
            if (u < 0) {
                out->impossible[k]++;
            } else {
                int b = (int)(u * AUDIT_PIT_BINS);
                out->bins[(size_t)k * AUDIT_PIT_BINS + (size_t)(b < AUDIT_PIT_BINS ? b : AUDIT_PIT_BINS - 1)]++;
            }
            out->draws++;
        }
        if (progress && ((i + 1) % 200 == 0 || i + 1 == s->n)) progress(user, i + 1, s->n);
    }
    tree_free(&tree);
    free(p);
    t->seq_close(t, base);
    return rc;
}
