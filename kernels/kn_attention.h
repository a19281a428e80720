/* kn_attention.h — gated full attention of qwen3_5 over the paged KV cache (kn_paged.h), for one decode position
 * or the m ≤ 64 nodes of a verify tree. */
#ifndef SPECULA_KN_ATTENTION_H
#define SPECULA_KN_ATTENTION_H

#include "kn_api.h"
#include "kn_paged.h"

/* rope_kv: per head, zero-centred RMSNorm with q_norm / k_norm, rotate-half RoPE on the first R dims at position
 * pos[t] (op_rope), then
 *     q_out[t, h, :]            ← the query (fp32)
 *     Kc at (slot[t], kvh, :)   ← the key, bf16 (round to nearest even)
 *     Vc at (slot[t], kvh, :)   ← v[t, kvh, :], bf16
 * qg[m, H, 2·Dh] is q_proj's output: per head Dh query values then Dh gate values (only the query half is read
 * here). pos is the RoPE position (a tree node's depth-based position), slot the cache slot it is stored in.
 * Needs Dh % 32 == 0, R even, R ≤ Dh. */
typedef cudaError_t (*kn_rope_kv_fn)(float *q_out, uint16_t *Kc, uint16_t *Vc, const int *block_table, const float *qg,
                                     const float *k, const float *v, const float *q_norm, const float *k_norm,
                                     const int *pos, const int *slot, int m, int H, int Hkv, int Dh, int R,
                                     double theta, float eps, cudaStream_t stream);

/* attention: for every query node t and head h (KV head h / (H/Hkv)):
 *     out[t, h, :] = softmax_s(scale · q·k_s) · v_s  ⊙  sigmoid(gate[t, h, :])
 * over the committed slots s < ctx and the tree slots ctx + i with i visible to t (kn_tree_visible: bit i of
 * tree_mask[t]; NULL: i ≤ t, a chain). gate = qg[t, h, Dh..2·Dh); the product with its sigmoid is op_output_gate.
 * A query that sees nothing gets zeros. work: scratch of kn_attention_work_floats(...) floats.
 * Needs Dh % 32 == 0; the fast versions need Dh/32 ∈ {2, 4, 8} and H/Hkv ≤ 6 (else they fall back to v1). */
typedef cudaError_t (*kn_attention_fn)(float *out, const float *q, const float *qg, const uint16_t *Kc,
                                       const uint16_t *Vc, const int *block_table, int ctx, int m,
                                       const uint64_t *tree_mask, int H, int Hkv, int Dh, float scale, float *work,
                                       size_t work_floats, cudaStream_t stream);

typedef struct {
    const char *name, *what;
    kn_rope_kv_fn fn;
} kn_rope_kv_version;

typedef struct {
    const char *name, *what;
    kn_attention_fn fn;
} kn_attention_version;

KN_API const kn_rope_kv_version *kn_rope_kv_versions(int *count);
KN_API const kn_attention_version *kn_attention_versions(int *count);

/* The engine's attention: the fastest design (v4), arguments as kn_attention_fn. */
KN_API cudaError_t kn_attention(float *out, const float *q, const float *qg, const uint16_t *Kc, const uint16_t *Vc,
                                const int *block_table, int ctx, int m, const uint64_t *tree_mask, int H, int Hkv,
                                int Dh, float scale, float *work, size_t work_floats, cudaStream_t stream);

/* Scratch floats any attention version needs for these sizes. */
KN_API size_t kn_attention_work_floats(int ctx, int m, int H, int Hkv, int Dh);

#define KN_ATTN_MAX_SPLIT 256

#endif
