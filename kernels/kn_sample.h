/* kn_sample.h — sampling on the device under the reference's definitions, so that both backends agree token for
 * token: the processed distributions, draws, and the exact acceptance rule. */
#ifndef SPECULA_KN_SAMPLE_H
#define SPECULA_KN_SAMPLE_H

#include "kn_api.h"
#ifdef __cplusplus
extern "C" {
#endif
#include "sampler.h"
#ifdef __cplusplus
}
#endif

/* probs: logits[m, V] → the processed distributions probs[m, V] of sampler_probs (sampler.c: temperature, top-k,
 * top-p, min-p as thresholds; double arithmetic). The cuts are found by radix selection on the values, with no
 * sort. Only a cumulative sum that lands within rounding of top_p·S, or an exp differing by an ulp at a threshold,
 * can differ from the C code. */
typedef cudaError_t (*kn_probs_fn)(float *probs, const float *logits, int m, int V, sampler_params sp, double *work,
                                   size_t work_doubles, cudaStream_t stream);

typedef struct {
    const char *name, *what;
    kn_probs_fn fn;
} kn_probs_version;

KN_API const kn_probs_version *kn_probs_versions(int *count);
/* Scratch doubles kn_probs (and every version) needs: m·(V + 24768). */
KN_API size_t kn_probs_work_doubles(int m, int V);
/* The engine's processed distributions: the fastest validated version (v2,
 * several blocks per row). work: kn_probs_work_doubles(m, V) doubles. */
KN_API cudaError_t kn_probs(float *probs, const float *logits, int m, int V, sampler_params sp, double *work,
                            size_t work_doubles, cudaStream_t stream);

/* tokens[t] = sampler_sample(probs row t, {seed, purpose, index0 + t}): the exponential race with sampler.c's
 * Philox mapping. The race computes −log U in double with CUDA's log (≤ 1 ulp from glibc's): a different winner
 * needs two ratios within 2⁻⁵² of each other. */
KN_API cudaError_t kn_sample(int *tokens, const float *probs, int m, int V, uint64_t seed, uint32_t purpose,
                             uint64_t index0, cudaStream_t stream);

/* The exact rule of accept_exact (accept.c) on a tree of n nodes: parent[c] < c, node 0 the last committed token,
 * token[c] the drafts, children i.i.d. from q or without replacement. p[n, V]: the target's processed distributions
 * after each node; q[n, V]: each node's proposal row (a leaf's unread). result[0] = accepted drafts (−1: a reached
 * draft with q = 0, result[1] then its node), result[1] = the next token, result[2] = 1 for a bonus, result[3 ..]
 * the accepted nodes below the root, in path order. work: 2·V floats of scratch. */
KN_API cudaError_t kn_accept_tree(int *result, const float *p, const float *q, const int *token, const int *parent,
                                  int n, int V, int without_replacement, uint64_t seed, uint64_t round,
                                  int base_position, float *work, cudaStream_t stream);

/* The exact rule of accept_exact (accept.c) on a chain: node 0 the last committed token, nodes 1..k the drafts.
 * p[k+1, V]: the target's processed distributions after nodes 0..k; q[k, V]: the distributions the drafts were
 * drawn from; draft[k]: the tokens. result[0] = accepted drafts, result[1] = the next token (correction or bonus),
 * result[2] = 1 for a bonus; result[0] = −1 when a draft has q = 0 (accept_exact's error), result[1] then its node
 * (1 … k). */
KN_API cudaError_t kn_accept_chain(int *result, const float *p, const float *q, const int *draft, int k, int V,
                                   uint64_t seed, uint64_t round, int base_position, cudaStream_t stream);

#endif
