/* kv_cache.c — the engine's paged KV cache (see kv_cache.h). */
#include "kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

void kv_cache_build(kv_cache *c, engine_backend *be, int n_layers, int n_heads, int head_dim, kv_format format) {
    memset(c, 0, sizeof *c);
    c->be = be;
    c->n_layers = n_layers;
    c->n_heads = n_heads;
    c->head_dim = head_dim;
    c->format = format;
    c->row_bytes = kv_row_bytes(format, head_dim);
}

void kv_cache_free(kv_cache *c) {
    free(c->refcount);
    if (c->keys) c->be->free(c->be, c->keys);
    if (c->values) c->be->free(c->be, c->values);
    memset(c, 0, sizeof *c);
}

/* Keys (or values) of one block. */
static size_t block_bytes(const kv_cache *c) { return (size_t)c->n_layers * c->n_heads * KV_BLOCK_SIZE * c->row_bytes; }

size_t kv_block_bytes(const kv_cache *c) { return 2 * block_bytes(c); }

/* The pool at twice its capacity: new backend memory, the old blocks copied over. */
static void grow(kv_cache *c) {
    const int old = c->capacity, cap = old ? 2 * old : 8;
    const size_t old_bytes = (size_t)old * block_bytes(c), bytes = (size_t)cap * block_bytes(c);
    void **pools[] = {&c->keys, &c->values};
    for (int i = 0; i < 2; i++) {
        void *grown = c->be->alloc(c->be, bytes ? bytes : 1, "the KV cache");
        if (old) {
            c->be->copy(c->be, grown, *pools[i], old_bytes);
            c->be->free(c->be, *pools[i]);
        }
        *pools[i] = grown;
    }
    c->refcount = sp_xrealloc(c->refcount, (size_t)cap, sizeof(int), "KV block refcounts");
    memset(c->refcount + old, 0, (size_t)(cap - old) * sizeof(int));
    c->capacity = cap;
}

/* A free block with refcount 1; the pool doubles when full. */
static int take(kv_cache *c) {
    int b = 0;
    while (b < c->capacity && c->refcount[b]) b++;
    if (b == c->capacity) grow(c);
    c->refcount[b] = 1;
    c->in_use++;
    return b;
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
    const size_t block = block_bytes(c);
    for (int i = from / KV_BLOCK_SIZE; i < need; i++) {
        const int b = t->blocks[i];
        if (c->refcount[b] == 1) continue;
        const int nb = take(c); /* shared with another sequence: copy before writing */
        c->be->copy(c->be, (char *)c->keys + (size_t)nb * block, (char *)c->keys + (size_t)b * block, block);
        c->be->copy(c->be, (char *)c->values + (size_t)nb * block, (char *)c->values + (size_t)b * block, block);
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

size_t kv_offset(const kv_cache *c, const kv_table *t, int la, int pos, int h) {
    const size_t block = (size_t)t->blocks[pos / KV_BLOCK_SIZE] * c->n_layers + (size_t)la;
    return (block * c->n_heads + (size_t)h) * KV_BLOCK_SIZE + (size_t)(pos % KV_BLOCK_SIZE);
}

void kv_copy_position(kv_cache *c, const kv_table *t, int to, int from) {
    if (to == from) return;
    for (int la = 0; la < c->n_layers; la++)
        for (int h = 0; h < c->n_heads; h++) {
            const size_t dst = kv_offset(c, t, la, to, h), src = kv_offset(c, t, la, from, h);
            c->be->copy(c->be, kv_key_row(c, dst), kv_key_row(c, src), c->row_bytes);
            c->be->copy(c->be, kv_value_row(c, dst), kv_value_row(c, src), c->row_bytes);
        }
}
