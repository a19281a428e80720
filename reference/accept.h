/* accept.h — the exact acceptance rule for a chain of k draft tokens
 * (Leviathan et al., 2023): accept draft i with probability min(1, p/q), on
 * the first rejection draw from the residual norm(max(0, p − q)), and draw a
 * bonus token from the target when all k are accepted. Its randomness is
 * pinned to rng sites (sampler.h), so the reference, the engine's CPU
 * backend and the CUDA kernel (kernels/sample.cu) accept the same tokens
 * from the same distributions. p and q are processed distributions
 * (sampler_probs) under the same sampler parameters. */
#ifndef SPECULA_ACCEPT_H
#define SPECULA_ACCEPT_H

#include <stdint.h>

typedef struct {
    int n_accepted; /* 0..k draft tokens kept */
    int token;      /* the token that follows them: residual draw or bonus; −1 if no distribution */
} accept_result;

/* p[k+1, V]: the target's distributions at the k draft positions and the one
 * after; q[k, V]: the proposer's distributions the drafts were drawn from;
 * draft[k]. index0 is the rng index of draft 0 (by convention its absolute
 * position in the sequence); draft i uses index index0 + i.
 *   accept draft i  iff  u_i · q_i[d_i] < p_i[d_i]   with u_i = rng_uniform({seed, RNG_ACCEPT, index0 + i})
 *     (that is u_i < p/q; the product of two floats is exact in double, so
 *      every backend decides alike)
 *   first rejection at i: token = sampler_sample(r, V, {seed, RNG_RESIDUAL, index0 + i})
 *     with r_j = max(0, p_i[j] − q_i[j]) in float, unnormalised (the race
 *     argmax r_j/E_j does not depend on the scale); should r be all zero,
 *     which exact arithmetic rules out, the token is drawn from p_i instead
 *     with the same site
 *   all k accepted: token = sampler_sample(p_k, V, {seed, RNG_SAMPLE, index0 + k}),
 *     the draw plain sampling would make at that position
 * With temperature 0 (one-hot p and q) this accepts exactly the drafts that
 * equal the target's argmax and then emits that argmax.
 * residual: scratch [V]. k ≥ 0. */
accept_result accept_chain(const float *p, const float *q, const int *draft, int k, int V, uint64_t seed,
                           uint64_t index0, float *residual);

#endif
