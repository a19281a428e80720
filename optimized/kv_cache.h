/* kv_cache.h — the engine's paged KV cache: blocks of KV_BLOCK_SIZE positions in one pool and a block table per
 * sequence. Blocks are ref-counted, so sequences (beams) share a prefix and copy a block only on write. The
 * bookkeeping is host code; the pool is backend memory. */
#ifndef SPECULA_KV_CACHE_H
#define SPECULA_KV_CACHE_H

#include <stddef.h>

#include "backend.h"
#include "kv_block.h"
#include "kv_quant.h"

struct kv_cache {
    engine_backend *be;
    int n_layers, n_heads, head_dim;
    kv_format format; /* how one head's vector is kept (kv_quant.h); never KV_DEFAULT */
    size_t row_bytes; /* bytes of one head's vector: kv_row_bytes(format, head_dim) */
    int capacity;     /* blocks allocated */
    int *refcount;    /* [capacity] 0 = free */
    /* keys and values: backend memory, [capacity, n_layers, n_heads, KV_BLOCK_SIZE] rows of row_bytes, the same
     * layout on every backend. Within a block each layer's heads follow the kernels' paged layout
     * (kernels/kn_paged.h) with block index block · n_layers + layer, so one head's positions are contiguous.
     * Rows are float32 on the CPU and bf16 on a GPU by default; both also keep q8 and q4 rows, the CPU bf16 too. */
    void *keys;
    void *values;
    int in_use;  /* blocks with refcount > 0 */
    long copies; /* blocks copied on write */
};

/* One sequence's block table. */
struct kv_table {
    int *blocks; /* [n] position t lives in blocks[t / KV_BLOCK_SIZE] */
    int n, cap;
};

void kv_cache_build(kv_cache *c, engine_backend *be, int n_layers, int n_heads, int head_dim, kv_format format);
void kv_cache_free(kv_cache *c);
size_t kv_block_bytes(const kv_cache *c); /* keys and values of one block */

/* Room to write positions [0, end) of t: blocks appended as needed, and the
 * blocks holding positions [from, end) made private (copied when shared). */
void kv_table_reserve(kv_cache *c, kv_table *t, int from, int end);
/* t becomes a copy of src's table, sharing its blocks. */
void kv_table_fork(kv_cache *c, kv_table *t, const kv_table *src);
/* Keeps positions [0, pos) (whole blocks released). */
void kv_table_truncate(kv_cache *c, kv_table *t, int pos);
void kv_table_free(kv_cache *c, kv_table *t);

/* Row index, in keys or values, of head h's vector at position pos of layer la: for float32 and bf16 rows,
 * kv_offset · head_dim is its element offset. */
size_t kv_offset(const kv_cache *c, const kv_table *t, int la, int pos, int h);
/* The row itself. */
static inline void *kv_key_row(const kv_cache *c, size_t row) { return (char *)c->keys + row * c->row_bytes; }
static inline void *kv_value_row(const kv_cache *c, size_t row) { return (char *)c->values + row * c->row_bytes; }
/* Every layer's keys and values of position `from` copied to position `to` (both reserved). */
void kv_copy_position(kv_cache *c, const kv_table *t, int to, int from);

#endif
