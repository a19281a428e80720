/* spec_model.c — the formulas of spec_model.h and their Monte-Carlo twins.
 * Plain double arithmetic; the simulations draw from Philox so they replay
 * bit for bit. */
#include "spec_model.h"

#include <math.h>
#include <stdlib.h>

#include "accounting.h"
#include "sampler.h"

double spec_speedup(double alpha, int k, double c) { return expected_tokens_per_pass(alpha, k) / (k * c + 1.0); }

int spec_best_k(double alpha, double c, int k_max, double *best) {
    int arg = 0;
    double s_best = spec_speedup(alpha, 0, c);
    for (int k = 1; k <= k_max; k++) {
        double s = spec_speedup(alpha, k, c);
        /* only a gain beyond rounding moves the optimum: a tie keeps the smaller k */
        if (s > s_best * (1.0 + 1e-12)) {
            s_best = s;
            arg = k;
        }
    }
    if (best) *best = s_best;
    return arg;
}

double spec_bytes_per_token(double target_bytes, double proposer_bytes, double alpha, int k) {
    return (target_bytes + k * proposer_bytes) / expected_tokens_per_pass(alpha, k);
}

double spec_chain_variance(double alpha, int k) {
    double m1 = 0, m2 = 0, reach = 1.0; /* reach = α^j */
    for (int j = 0; j <= k; j++) {
        double pj = j < k ? reach * (1.0 - alpha) : reach;
        m1 += pj * (j + 1);
        m2 += pj * (j + 1) * (j + 1);
        reach *= alpha;
    }
    return m2 - m1 * m1;
}

/* ---- trees ------------------------------------------------------------------- */

static int tree_check(const int *parent, const double *a, int n, spec_tree_rule rule, sp_error *err) {
    if (n < 1) return sp_fail(err, "tree: %d nodes; a tree has at least its root", n);
    if (parent[0] != -1) return sp_fail(err, "tree: node 0 is the root and needs parent -1, found %d", parent[0]);
    if (rule != SPEC_TREE_EXCLUSIVE && rule != SPEC_TREE_SEQUENTIAL && rule != SPEC_TREE_INDEPENDENT)
        return sp_fail(err, "tree: unknown acceptance rule %d", (int)rule);
    for (int i = 1; i < n; i++) {
        if (parent[i] < 0 || parent[i] >= i)
            return sp_fail(err, "tree: node %d has parent %d; expected a node in [0, %d)", i, parent[i], i);
        if (!(a[i] >= 0.0 && a[i] <= 1.0))
            return sp_fail(err, "tree: node %d has acceptance probability %g; expected a value in [0, 1]", i, a[i]);
    }
    if (rule == SPEC_TREE_EXCLUSIVE) {
        double *sum = sp_xcalloc((size_t)n, sizeof *sum, "sibling sums");
        int bad = -1;
        for (int i = 1; i < n; i++) sum[parent[i]] += a[i];
        /* 1e-12: sums of probabilities that are meant to total exactly 1 */
        for (int u = 0; u < n && bad < 0; u++)
            if (sum[u] > 1.0 + 1e-12) bad = u;
        double s = bad >= 0 ? sum[bad] : 0;
        free(sum);
        if (bad >= 0)
            return sp_fail(err,
                           "tree: the children of node %d have exclusive acceptance probabilities summing to %g; "
                           "at most one child can be accepted, so the sum must be at most 1",
                           bad, s);
    }
    return 0;
}

/* The probability that node i is the accepted child given its parent was:
 * a[i] itself, or for the sequential rule a[i] times the chance that every
 * earlier sibling failed. eff[n]. */
static void exclusive_probs(const int *parent, const double *a, int n, spec_tree_rule rule, double *eff) {
    eff[0] = 1.0;
    for (int i = 1; i < n; i++) {
        eff[i] = a[i];
        if (rule == SPEC_TREE_SEQUENTIAL)
            for (int j = 1; j < i; j++)
                if (parent[j] == parent[i]) eff[i] *= 1.0 - a[j];
    }
}

static int tree_depth(const int *parent, int n, int *depth) {
    int max = 0;
    depth[0] = 0;
    for (int i = 1; i < n; i++) {
        depth[i] = depth[parent[i]] + 1;
        if (depth[i] > max) max = depth[i];
    }
    return max;
}

int spec_tree_expected_accepted(const int *parent, const double *a, int n, spec_tree_rule rule, double *accepted,
                                sp_error *err) {
    if (tree_check(parent, a, n, rule, err)) return -1;
    double total = 0.0;
    if (rule != SPEC_TREE_INDEPENDENT) {
        double *eff = sp_xcalloc((size_t)n, sizeof *eff, "tree probabilities");
        double *reach = sp_xcalloc((size_t)n, sizeof *reach, "tree path probabilities");
        exclusive_probs(parent, a, n, rule, eff);
        reach[0] = 1.0;
        for (int i = 1; i < n; i++) {
            reach[i] = reach[parent[i]] * eff[i];
            total += reach[i];
        }
        free(eff);
        free(reach);
    } else {
        /* G[i·(H+1) + d]: P(a passing path of d more nodes hangs below i | i passed) */
        int *depth = sp_xcalloc((size_t)n, sizeof *depth, "tree depths");
        const int H = tree_depth(parent, n, depth);
        double *G = sp_xcalloc((size_t)n * (H + 1), sizeof *G, "longest-path table");
        double *miss = sp_xcalloc((size_t)n * (H + 1), sizeof *miss, "longest-path products");
        for (size_t x = 0; x < (size_t)n * (H + 1); x++) miss[x] = 1.0;
        /* children have larger indices, so walking down the indices finishes
         * every subtree before its parent reads it */
        for (int i = n - 1; i >= 0; i--) {
            double *g = G + (size_t)i * (H + 1);
            g[0] = 1.0;
            for (int d = 1; d <= H; d++) g[d] = 1.0 - miss[(size_t)i * (H + 1) + d];
            if (i > 0)
                for (int d = 1; d <= H; d++) miss[(size_t)parent[i] * (H + 1) + d] *= 1.0 - a[i] * g[d - 1];
        }
        for (int d = 1; d <= H; d++) total += G[d];
        free(depth);
        free(G);
        free(miss);
    }
    *accepted = total;
    return 0;
}

/* ---- Monte-Carlo ------------------------------------------------------------- */

static void mc_finish(spec_mc_result *r, long rounds, double sum, double sum_sq) {
    r->rounds = rounds;
    r->mean = rounds ? sum / rounds : 0.0;
    r->variance = rounds > 1 ? (sum_sq - sum * r->mean) / (rounds - 1) : 0.0;
}

void spec_mc_chain(double alpha, int k, long rounds, uint64_t seed, spec_mc_result *r) {
    double sum = 0, sum_sq = 0;
    for (long t = 0; t < rounds; t++) {
        int j = 0;
        while (j < k) {
            rng_site site = {seed, RNG_TEST, (uint64_t)t * 256u + (uint64_t)(j + 1)};
            if (!(rng_uniform(site) < alpha)) break;
            j++;
        }
        sum += j + 1;
        sum_sq += (double)(j + 1) * (j + 1);
    }
    mc_finish(r, rounds, sum, sum_sq);
}

int spec_mc_tree(const int *parent, const double *a, int n, spec_tree_rule rule, long rounds, uint64_t seed,
                 spec_mc_result *r, sp_error *err) {
    if (tree_check(parent, a, n, rule, err)) return -1;
    int *depth = sp_xcalloc((size_t)n, sizeof *depth, "tree depths");
    tree_depth(parent, n, depth);
    unsigned char *passed = sp_xcalloc((size_t)n, 1, "passed nodes");
    double *u = sp_xcalloc((size_t)n, sizeof *u, "uniforms");
    double sum = 0, sum_sq = 0;
    for (long t = 0; t < rounds; t++) {
        for (int i = 0; i < n; i++) {
            rng_site site = {seed, RNG_TEST, (uint64_t)t * (uint64_t)(n + 1) + (uint64_t)i};
            u[i] = rng_uniform(site);
        }
        int len = 0;
        if (rule == SPEC_TREE_INDEPENDENT) {
            passed[0] = 1;
            for (int i = 1; i < n; i++) {
                passed[i] = passed[parent[i]] && u[i] < a[i];
                if (passed[i] && depth[i] > len) len = depth[i];
            }
        } else {
            /* walk down: at the current node, its children decide in index order;
             * the exclusive rule draws one uniform per parent (node's own u picks
             * among the children by cumulative probability) */
            int at = 0;
            for (;;) {
                int next = -1;
                double cum = 0.0;
                for (int c = at + 1; c < n && next < 0; c++) {
                    if (parent[c] != at) continue;
                    if (rule == SPEC_TREE_EXCLUSIVE) {
                        cum += a[c];
                        if (u[at] < cum) next = c;
                    } else if (u[c] < a[c]) {
                        next = c;
                    }
                }
                if (next < 0) break;
                at = next;
                len++;
            }
        }
        sum += len + 1;
        sum_sq += (double)(len + 1) * (len + 1);
    }
    free(depth);
    free(passed);
    free(u);
    mc_finish(r, rounds, sum, sum_sq);
    return 0;
}
