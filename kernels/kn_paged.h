/* kn_paged.h — the layout of the engine's paged KV cache, shared by the kernels and their CPU twins. An attention
 * layer has a key pool and a value pool, each bf16 [n_blocks, Hkv, KV_BLOCK_SIZE, Dh]. Within a block each KV
 * head's positions are contiguous, so attention for one head streams 16·Dh·2 = 8 KB runs (Dh = 256). */
#ifndef SPECULA_KN_PAGED_H
#define SPECULA_KN_PAGED_H

#include <stddef.h>
#include <stdint.h>

#include "kv_block.h" /* KV_BLOCK_SIZE */

#if defined(__CUDACC__)
#define KN_HD __host__ __device__
#else
#define KN_HD
#endif

/* Element offset of (slot s, KV head h, dim d) in a pool. A block holds KV_BLOCK_SIZE consecutive positions of one
 * sequence: slot s is row s % KV_BLOCK_SIZE of block block_table[s / KV_BLOCK_SIZE]. */
static inline KN_HD size_t kn_paged_offset(const int *block_table, int s, int h, int d, int Hkv, int Dh) {
    size_t block = (size_t)block_table[s / KV_BLOCK_SIZE];
    return ((block * (size_t)Hkv + (size_t)h) * KV_BLOCK_SIZE + (size_t)(s % KV_BLOCK_SIZE)) * (size_t)Dh + (size_t)d;
}

/* Whether tree node i is visible to node t (both < m ≤ 64): bit i of
 * tree_mask[t]; a NULL mask is a chain (i ≤ t). */
static inline KN_HD int kn_tree_visible(const uint64_t *tree_mask, int t, int i) {
    return tree_mask ? (int)((tree_mask[t] >> i) & (uint64_t)1) : i <= t;
}

#define KN_TREE_MAX 64

#endif
