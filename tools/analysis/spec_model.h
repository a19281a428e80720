/* spec_model.h — the analytic model of speculative decoding (speed-up, best depth, bytes per token, accepted
 * length of a tree), each formula with a seeded Monte-Carlo twin. Assumes i.i.d. acceptance: every drafted token
 * is accepted with its own fixed probability, independently of the others. E(α,k) is in accounting.h. */
#ifndef SPECULA_SPEC_MODEL_H
#define SPECULA_SPEC_MODEL_H

#include <stdint.h>

#include "error.h"

/* ---- chains ------------------------------------------------------------------ */

/* Expected speed-up over plain decoding when a round costs one target pass
 * plus k proposer steps of c target passes each:
 *   S(α,k,c) = E(α,k) / (k·c + 1) = (1 − α^{k+1}) / ((1 − α)(k·c + 1)),
 * with E(1,k) = k + 1. S(α,0,c) = 1: plain decoding. */
double spec_speedup(double alpha, int k, double c);

/* The k in [0, k_max] with the largest S(α,k,c). Ties (values within a
 * relative 1e-12, i.e. equal up to rounding) go to the smallest k, the one
 * that does less work; 0 means speculation never pays (α = 0, or c too
 * large). At α = 1 with c < 1, S grows with k without bound and the answer
 * is k_max. *best (may be NULL) receives S at that k. */
int spec_best_k(double alpha, double c, int k_max, double *best);

/* Weight bytes read per committed token, batch 1:
 *   B(α,k) = (target_bytes + k·proposer_bytes) / E(α,k)
 * assuming one target pass per round that reads every target weight once
 * (whatever the number of verified positions), k proposer steps per round
 * that each read the proposer's weights once, and nothing else (KV cache and
 * DeltaNet state are left out: they are small at batch 1 and short context).
 * proposer_bytes: the draft model's step bytes, or the MTP step bytes. */
double spec_bytes_per_token(double target_bytes, double proposer_bytes, double alpha, int k);

/* Var of the tokens one round commits under i.i.d. acceptance: the round
 * commits 1 + j tokens with P(j) = α^j (1 − α) for j < k and α^k for j = k. */
double spec_chain_variance(double alpha, int k);

/* ---- trees ------------------------------------------------------------------- */

/* How the per-node numbers of a tree are read and how accepted paths form:
 *   SPEC_TREE_EXCLUSIVE   a[i] = P(node i is the accepted child | its parent
 *                         was accepted). At most one child of a node is
 *                         accepted, so siblings' a sum to at most 1. The
 *                         greedy rule over top-ranked children is this case
 *                         (a[i]: the chance that node i's token is the
 *                         target's argmax).
 *   SPEC_TREE_SEQUENTIAL  the exact multi-round rule: the children of an
 *                         accepted node are tried in index order, a[i] =
 *                         P(node i passes its test | its parent was accepted
 *                         and every earlier sibling failed); the first to pass
 *                         is accepted. Converted to the exclusive case by
 *                         a[i]·Π_{earlier siblings j}(1 − a[j]). In the real
 *                         rule these conditional probabilities come from the
 *                         residual distributions; the model takes them as
 *                         given constants.
 *   SPEC_TREE_INDEPENDENT every node passes its test independently with
 *                         a[i] once its parent has passed, several siblings may
 *                         pass, and the longest passing path is accepted —
 *                         Medusa's typical acceptance.
 * For a chain the three agree: Σ_{d=1..k} Π_{j≤d} a_j. */
typedef enum { SPEC_TREE_EXCLUSIVE = 0, SPEC_TREE_SEQUENTIAL, SPEC_TREE_INDEPENDENT } spec_tree_rule;

/* A tree in the layout of tree.h: node 0 is the root (parent −1, a[0]
 * ignored), parent[i] < i for every other node. Writes the expected number
 * of accepted proposed tokens (the target pass adds one more token: tokens
 * per pass = 1 + *accepted):
 *   exclusive, sequential: Σ_{i≥1} Π_{j on the path root→i, j≠root} a'_j
 *     (a' = a, or the converted sequential values): each node contributes
 *     the probability that it lies on the accepted path, and the accepted
 *     length is the number of such nodes;
 *   independent: Σ_{d≥1} P(some path of length d passes), by recursion over
 *     subtrees: G_i(0) = 1, G_i(d) = 1 − Π_{children c}(1 − a_c·G_c(d−1)).
 * Fails with a message for a malformed tree, an a outside [0, 1], or
 * exclusive siblings that sum to more than 1. */
int spec_tree_expected_accepted(const int *parent, const double *a, int n, spec_tree_rule rule, double *accepted,
                                sp_error *err);

/* ---- Monte-Carlo ------------------------------------------------------------- */

typedef struct {
    long rounds;
    double mean;     /* mean tokens committed per round (accepted + 1) */
    double variance; /* sample variance of the tokens per round */
} spec_mc_result;

/* Simulates `rounds` rounds of a k-token chain in which each drafted token
 * is accepted with probability α, independently. Uniforms from Philox
 * (rng_uniform, purpose RNG_TEST, index round·256 + position), so a seed
 * gives the same result on every machine. k in [1, 255]. */
void spec_mc_chain(double alpha, int k, long rounds, uint64_t seed, spec_mc_result *r);

/* The same for a tree under `rule` (one uniform per node and round; index
 * round·(n+1) + node). The tree must pass spec_tree_expected_accepted's
 * checks; returns −1 with the same message otherwise. */
int spec_mc_tree(const int *parent, const double *a, int n, spec_tree_rule rule, long rounds, uint64_t seed,
                 spec_mc_result *r, sp_error *err);

#endif
