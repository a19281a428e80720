/* kn_kv_quant.h — the paged KV cache kept as 8-bit or 4-bit rows (optimized/kv_quant.h's q8 and q4, byte for byte):
 * the write of a position's keys and values and the attention that reads them. fp32 accumulate; Dh % 32 == 0, so a
 * row is Dh/32 float32 scales then its codes (q8: Dh int8; q4: Dh/2 bytes, q + 8, low nibble first). q4 rows are
 * kept rotated (the randomised Hadamard transform of kv_quant.h): the query is rotated the same way and the
 * attention's output rotated back before the gate. */
#ifndef SPECULA_KN_KV_QUANT_H
#define SPECULA_KN_KV_QUANT_H

#include "kn_api.h"
#include "kn_paged.h"

/* Bytes of one row of Dh elements at `bits` (8 or 4): 4·Dh/32 + Dh·bits/8. Row r of a pool starts at r · this;
 * r = kn_paged_offset(bt, s, h, 0, Hkv, 1), the bf16 pool's layout with one element a row. */
static inline KN_HD size_t kn_kvq_row_bytes(int bits, int Dh) {
    return (size_t)(Dh / 32) * 4 + (size_t)Dh * (size_t)bits / 8;
}

/* As kn_rope_kv_fn (kn_attention.h): per head RMSNorm and RoPE, q_out[t, h, :] ← the query, then the key and the
 * value quantised into row (slot[t], kvh) of the pools Kc and Vc (bytes). bits 4: keys, values and q_out rotated
 * first. Needs Dh % 32 == 0, Dh ≤ 1024, R even, R ≤ Dh, bits 8 or 4. */
KN_API cudaError_t kn_rope_kv_quant(float *q_out, unsigned char *Kc, unsigned char *Vc, const int *block_table,
                                    const float *qg, const float *k, const float *v, const float *q_norm,
                                    const float *k_norm, const int *pos, const int *slot, int m, int H, int Hkv, int Dh,
                                    int R, double theta, float eps, int bits, cudaStream_t stream);

/* As kn_attention_fn (kn_attention.h) over quantised rows: out[t, h, :] = softmax(scale · q·k_s) · v_s, rotated
 * back for bits 4, ⊙ sigmoid(gate). q: kn_rope_kv_quant's q_out (rotated for bits 4). One block per (query, head)
 * (attention v1's design, rows read back to fp32 as kv_row_load does: s · q). work: kn_attention_work_floats. */
KN_API cudaError_t kn_attention_quant(float *out, const float *q, const float *qg, const unsigned char *Kc,
                                      const unsigned char *Vc, const int *block_table, int ctx, int m,
                                      const uint64_t *tree_mask, int H, int Hkv, int Dh, float scale, float *work,
                                      size_t work_floats, int bits, cudaStream_t stream);

#endif
