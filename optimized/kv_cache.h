/* kv_cache.h — the engine's paged KV cache: fixed blocks of KV_BLOCK_SIZE
 * positions in one pool, a block table per sequence, blocks ref-counted so
 * that sequences (beams) share a prefix and copy a block only when they
 * write into a shared one. Keys and values are float32, the precision of
 * the activations. */
#ifndef SPECULA_KV_CACHE_H
#define SPECULA_KV_CACHE_H

#include <stddef.h>

#include "kv_block.h"

typedef struct {
    int n_layers;  /* [La] attention layers */
    int kv_dim;    /* Hkv·Dh floats per position per layer, for keys and again for values */
    int capacity;  /* blocks allocated */
    int *refcount; /* [capacity] 0 = free */
    float *keys;   /* [capacity, La, KV_BLOCK_SIZE, kv_dim] */
    float *values; /* the same */
    int in_use;    /* blocks with refcount > 0 */
    long copies;   /* blocks copied on write */
} kv_cache;

/* One sequence's block table. */
typedef struct {
    int *blocks; /* [n] position t lives in blocks[t / KV_BLOCK_SIZE] */
    int n, cap;
} kv_table;

void kv_cache_build(kv_cache *c, int n_layers, int kv_dim);
void kv_cache_free(kv_cache *c);

/* Room to write positions [0, end) of t: blocks appended as needed, and the
 * blocks holding positions [from, end) made private (copied when shared). */
void kv_table_reserve(kv_cache *c, kv_table *t, int from, int end);
/* t becomes a copy of src's table, sharing its blocks. */
void kv_table_fork(kv_cache *c, kv_table *t, const kv_table *src);
/* Keeps positions [0, pos) (whole blocks released). */
void kv_table_truncate(kv_cache *c, kv_table *t, int pos);
void kv_table_free(kv_cache *c, kv_table *t);

/* The key and value vectors [kv_dim] of position `pos` in layer `la`. */
float *kv_key(const kv_cache *c, const kv_table *t, int la, int pos);
float *kv_value(const kv_cache *c, const kv_table *t, int la, int pos);

/* Bytes of one block (every layer, keys and values). */
size_t kv_block_bytes(const kv_cache *c);

#endif
