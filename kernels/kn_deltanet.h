/* kn_deltanet.h — the recurrent half of a Gated DeltaNet layer for a verify pass: m positions arranged as a tree,
 * each node starting from its parent's state and writing its own state slot. After acceptance the next step reads
 * the slot of the last accepted node: no copy, no recomputation. All fp32. */
#ifndef SPECULA_KN_DELTANET_H
#define SPECULA_KN_DELTANET_H

#include "kn_api.h"

/* Both ops: parent[t] < t, −1 = the committed state; parent NULL means a chain (parent[t] = t − 1).
 * Node t's state goes (and its children's comes from) slot slot_of[t] of `slots`, slots `stride` floats apart:
 * the engine's state slots, written straight into. Several nodes may share a slot: a chain consumed in place, its
 * first node reading state0 = that slot. With slot_of NULL, node t's place is the t-th of a contiguous
 * slots[m, …] (stride unused). The two give the same bits. */

#define KN_CONV_MAX_K 8

/* conv_step (op_conv_step per node): out[m, C], slots[m, C, K−1] from state0[C, K−1], x[m, C], w[C, K].
 * K ≤ KN_CONV_MAX_K. */
typedef cudaError_t (*kn_conv_fn)(float *out, float *slots, const int *slot_of, size_t stride, const float *state0,
                                  const float *x, const float *w, const int *parent, int m, int C, int K,
                                  cudaStream_t stream);

/* delta_step (op_gated_delta_step per node and value head h):
 *   key head kh = h / (Hv/Hk) (transformers' repeat_interleave),
 *   g = op_deltanet_decay(a[t, h], A_log[h], dt_bias[h]), β = op_deltanet_beta(b[t, h]),
 *   q, k = q[t, kh, :], k[t, kh, :] (l2-normalised inside, q also by 1/√Dk),
 *   state S[Dk, Dv] of head h from the parent's slot or S0;
 *   out[t, h, :] and slots[t, h, :, :] ← the step's output and new state.
 * Shapes: S0[Hv, Dk, Dv], slots[m, Hv, Dk, Dv], q, k[m, Hk, Dk], v[m, Hv, Dv], a, b[m, Hv], A_log, dt_bias[Hv],
 * out[m, Hv, Dv]. Needs Dk ≤ 1024, Dv ≤ 1024; the fast version Dk % 4 == 0, Dk ≤ 128. */
typedef cudaError_t (*kn_delta_fn)(float *out, float *slots, const int *slot_of, size_t stride, const float *S0,
                                   const float *q, const float *k, const float *v, const float *a, const float *b,
                                   const float *A_log, const float *dt_bias, const int *parent, int m, int Hk, int Hv,
                                   int Dk, int Dv, cudaStream_t stream);

typedef struct {
    const char *name, *what;
    kn_conv_fn fn;
} kn_conv_version;

typedef struct {
    const char *name, *what;
    kn_delta_fn fn;
} kn_delta_version;

KN_API const kn_conv_version *kn_conv_versions(int *count);
KN_API const kn_delta_version *kn_delta_versions(int *count);

#endif
