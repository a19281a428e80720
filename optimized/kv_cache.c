/* kv_cache.c — the engine's paged KV cache (see kv_cache.h). */
#include "kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

void kv_cache_build(kv_cache *c, int n_layers, int kv_dim) {
    memset(c, 0, sizeof *c);
    c->n_layers = n_layers;
    c->kv_dim = kv_dim;
}

void kv_cache_free(kv_cache *c) {
    free(c->refcount);
    free(c->keys);
    free(c->values);
    memset(c, 0, sizeof *c);
}

static size_t block_floats(const kv_cache *c) { return (size_t)c->n_layers * KV_BLOCK_SIZE * c->kv_dim; }

size_t kv_block_bytes(const kv_cache *c) { return 2 * block_floats(c) * sizeof(float); }

/* A free block with refcount 1; the pool doubles when full. */
static int take(kv_cache *c) {
    for (int b = 0; b < c->capacity; b++)
        if (c->refcount[b] == 0) {
            c->refcount[b] = 1;
            c->in_use++;
            return b;
        }
    const int old = c->capacity, cap = old ? 2 * old : 8;
    c->refcount = sp_xrealloc(c->refcount, (size_t)cap, sizeof(int), "KV block refcounts");
    c->keys = sp_xrealloc(c->keys, (size_t)cap, block_floats(c) * sizeof(float), "KV cache keys");
    c->values = sp_xrealloc(c->values, (size_t)cap, block_floats(c) * sizeof(float), "KV cache values");
    memset(c->refcount + old, 0, (size_t)(cap - old) * sizeof(int));
    c->capacity = cap;
    c->refcount[old] = 1;
    c->in_use++;
    return old;
}

static void release(kv_cache *c, int b) {
    if (--c->refcount[b] == 0) c->in_use--;
}

static void push(kv_table *t, int block) {
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 8;
        t->blocks = sp_xrealloc(t->blocks, (size_t)t->cap, sizeof(int), "KV block table");
    }
    t->blocks[t->n++] = block;
}

void kv_table_reserve(kv_cache *c, kv_table *t, int from, int end) {
    const int need = (end + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE;
    while (t->n < need) push(t, take(c));
    for (int i = from / KV_BLOCK_SIZE; i < need; i++) {
        const int b = t->blocks[i];
        if (c->refcount[b] == 1) continue;
        const int nb = take(c); /* shared with another sequence: copy before writing */
        memcpy(c->keys + (size_t)nb * block_floats(c), c->keys + (size_t)b * block_floats(c),
               block_floats(c) * sizeof(float));
        memcpy(c->values + (size_t)nb * block_floats(c), c->values + (size_t)b * block_floats(c),
               block_floats(c) * sizeof(float));
        release(c, b);
        t->blocks[i] = nb;
        c->copies++;
    }
}

void kv_table_fork(kv_cache *c, kv_table *t, const kv_table *src) {
    kv_table_truncate(c, t, 0);
    for (int i = 0; i < src->n; i++) {
        push(t, src->blocks[i]);
        c->refcount[src->blocks[i]]++;
    }
}

void kv_table_truncate(kv_cache *c, kv_table *t, int pos) {
    const int keep = (pos + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE;
    while (t->n > keep) release(c, t->blocks[--t->n]);
}

void kv_table_free(kv_cache *c, kv_table *t) {
    kv_table_truncate(c, t, 0);
    free(t->blocks);
    memset(t, 0, sizeof *t);
}

static size_t offset(const kv_cache *c, const kv_table *t, int la, int pos) {
    return (size_t)t->blocks[pos / KV_BLOCK_SIZE] * block_floats(c) +
           ((size_t)la * KV_BLOCK_SIZE + pos % KV_BLOCK_SIZE) * c->kv_dim;
}

float *kv_key(const kv_cache *c, const kv_table *t, int la, int pos) { return c->keys + offset(c, t, la, pos); }

float *kv_value(const kv_cache *c, const kv_table *t, int la, int pos) { return c->values + offset(c, t, la, pos); }
