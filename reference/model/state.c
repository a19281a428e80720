/* state.c — paged, ref-counted KV cache and the DeltaNet state of one
 * sequence, with fork (copy-on-write), truncate, save and restore. */
#include "state.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

/* ---- the block pool ------------------------------------------------------ */

void kv_pool_build(kv_pool *p, int num_layers, int kv_dim) {
    memset(p, 0, sizeof *p);
    p->num_layers = num_layers;
    p->kv_dim = kv_dim;
}

void kv_pool_free(kv_pool *p) {
    free(p->refcount);
    free(p->keys);
    free(p->values);
    memset(p, 0, sizeof *p);
}

static size_t block_floats(const kv_pool *p) { return (size_t)p->num_layers * KV_BLOCK_SIZE * p->kv_dim; }

/* A free block with refcount 1; the pool doubles when full. */
static int pool_take(kv_pool *p) {
    for (int b = 0; b < p->capacity; b++)
        if (p->refcount[b] == 0) {
            p->refcount[b] = 1;
            p->blocks_in_use++;
            return b;
        }
    int old = p->capacity, cap = old ? 2 * old : 8;
    size_t bf = block_floats(p);
    p->refcount = sp_xrealloc(p->refcount, (size_t)cap, sizeof(int), "KV block refcounts");
    p->keys = sp_xrealloc(p->keys, (size_t)cap, bf * sizeof(float), "KV cache keys");
    p->values = sp_xrealloc(p->values, (size_t)cap, bf * sizeof(float), "KV cache values");
    memset(p->refcount + old, 0, (size_t)(cap - old) * sizeof(int));
    p->capacity = cap;
    p->refcount[old] = 1;
    p->blocks_in_use++;
    return old;
}

static void pool_release(kv_pool *p, int b) {
    if (--p->refcount[b] == 0) p->blocks_in_use--;
}

static float *block_keys(kv_pool *p, int b, int la) {
    return p->keys + (size_t)b * block_floats(p) + (size_t)la * KV_BLOCK_SIZE * p->kv_dim;
}
static float *block_values(kv_pool *p, int b, int la) {
    return p->values + (size_t)b * block_floats(p) + (size_t)la * KV_BLOCK_SIZE * p->kv_dim;
}

/* ---- one sequence ------------------------------------------------------- */

static void state_build_dims(model_state *s, int num_attn, int num_linear, const model_config *c, kv_pool *pool) {
    memset(s, 0, sizeof *s);
    s->num_attn = num_attn;
    s->num_linear = num_linear;
    s->conv_dim = config_conv_dim(c);
    s->conv_width = c->conv_kernel;
    s->lin_v_heads = c->lin_v_heads;
    s->lin_k_dim = c->lin_k_dim;
    s->lin_v_dim = c->lin_v_dim;
    if (pool) {
        s->pool = pool;
    } else {
        s->pool = sp_xcalloc(1, sizeof *s->pool, "KV pool");
        kv_pool_build(s->pool, num_attn, c->num_kv_heads * c->head_dim);
        s->owns_pool = 1;
    }
    size_t conv = (size_t)num_linear * s->conv_dim * (s->conv_width - 1);
    size_t rec = (size_t)num_linear * s->lin_v_heads * s->lin_k_dim * s->lin_v_dim;
    s->conv = sp_xcalloc(conv, sizeof(float), "DeltaNet conv state");
    s->recurrent = sp_xcalloc(rec, sizeof(float), "DeltaNet recurrent state");
}

void state_build(model_state *s, const model_config *c, kv_pool *shared_pool) {
    state_build_dims(s, config_num_full(c), config_num_linear(c), c, shared_pool);
}

void state_build_mtp(model_state *s, const model_config *c) { state_build_dims(s, 1, 0, c, NULL); }

void state_free(model_state *s) {
    if (s->pool) state_truncate_kv(s, 0);
    if (s->owns_pool) {
        kv_pool_free(s->pool);
        free(s->pool);
    }
    free(s->blocks);
    free(s->conv);
    free(s->recurrent);
    memset(s, 0, sizeof *s);
}

static size_t conv_floats(const model_state *s) { return (size_t)s->num_linear * s->conv_dim * (s->conv_width - 1); }
static size_t recurrent_floats(const model_state *s) {
    return (size_t)s->num_linear * s->lin_v_heads * s->lin_k_dim * s->lin_v_dim;
}

void state_reset(model_state *s) {
    state_truncate_kv(s, 0);
    memset(s->conv, 0, conv_floats(s) * sizeof(float));
    memset(s->recurrent, 0, recurrent_floats(s) * sizeof(float));
    s->pos = 0;
}

void state_fork(model_state *dst, const model_state *src) {
    state_truncate_kv(dst, 0);
    if (dst->blocks_cap < src->n_blocks) {
        dst->blocks_cap = src->blocks_cap;
        free(dst->blocks);
        dst->blocks = sp_xcalloc((size_t)dst->blocks_cap, sizeof(int), "block table");
    }
    for (int i = 0; i < src->n_blocks; i++) {
        dst->blocks[i] = src->blocks[i];
        src->pool->refcount[src->blocks[i]]++;
    }
    dst->n_blocks = src->n_blocks;
    memcpy(dst->conv, src->conv, conv_floats(src) * sizeof(float));
    memcpy(dst->recurrent, src->recurrent, recurrent_floats(src) * sizeof(float));
    dst->pos = src->pos;
}

void state_truncate_kv(model_state *s, int pos) {
    int keep = (pos + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE;
    while (s->n_blocks > keep) pool_release(s->pool, s->blocks[--s->n_blocks]);
    if (s->pos > pos) s->pos = pos;
}

float *state_key(model_state *s, int la, int t) {
    return block_keys(s->pool, s->blocks[t / KV_BLOCK_SIZE], la) + (size_t)(t % KV_BLOCK_SIZE) * s->pool->kv_dim;
}

float *state_value(model_state *s, int la, int t) {
    return block_values(s->pool, s->blocks[t / KV_BLOCK_SIZE], la) + (size_t)(t % KV_BLOCK_SIZE) * s->pool->kv_dim;
}

void state_kv_for_write(model_state *s, int la, int t, float **key, float **value) {
    int bi = t / KV_BLOCK_SIZE;
    kv_pool *p = s->pool;
    while (s->n_blocks <= bi) { /* a new block for a new position */
        if (s->n_blocks == s->blocks_cap) {
            s->blocks_cap = s->blocks_cap ? 2 * s->blocks_cap : 8;
            s->blocks = sp_xrealloc(s->blocks, (size_t)s->blocks_cap, sizeof(int), "block table");
        }
        s->blocks[s->n_blocks++] = pool_take(p);
    }
    int b = s->blocks[bi];
    if (p->refcount[b] > 1) { /* shared with another beam: copy before writing */
        int nb = pool_take(p);
        memcpy(p->keys + (size_t)nb * block_floats(p), p->keys + (size_t)b * block_floats(p),
               block_floats(p) * sizeof(float));
        memcpy(p->values + (size_t)nb * block_floats(p), p->values + (size_t)b * block_floats(p),
               block_floats(p) * sizeof(float));
        pool_release(p, b);
        s->blocks[bi] = nb;
        p->copies++;
    }
    *key = state_key(s, la, t);
    *value = state_value(s, la, t);
}

float *state_conv(model_state *s, int li) { return s->conv + (size_t)li * s->conv_dim * (s->conv_width - 1); }

float *state_recurrent(model_state *s, int li) {
    return s->recurrent + (size_t)li * s->lin_v_heads * s->lin_k_dim * s->lin_v_dim;
}

/* ---- snapshots ------------------------------------------------------------ */

void snapshot_build(state_snapshot *snap, const model_state *s) {
    memset(snap, 0, sizeof *snap);
    snap->conv_floats = conv_floats(s);
    snap->recurrent_floats = recurrent_floats(s);
    snap->conv = sp_xcalloc(snap->conv_floats, sizeof(float), "snapshot conv state");
    snap->recurrent = sp_xcalloc(snap->recurrent_floats, sizeof(float), "snapshot recurrent state");
}

void snapshot_free(state_snapshot *snap) {
    free(snap->conv);
    free(snap->recurrent);
    memset(snap, 0, sizeof *snap);
}

void state_save(const model_state *s, state_snapshot *snap) {
    snap->pos = s->pos;
    memcpy(snap->conv, s->conv, snap->conv_floats * sizeof(float));
    memcpy(snap->recurrent, s->recurrent, snap->recurrent_floats * sizeof(float));
}

void state_restore(model_state *s, const state_snapshot *snap) {
    state_truncate_kv(s, snap->pos);
    s->pos = snap->pos;
    memcpy(s->conv, snap->conv, snap->conv_floats * sizeof(float));
    memcpy(s->recurrent, snap->recurrent, snap->recurrent_floats * sizeof(float));
}

size_t state_deltanet_bytes(const model_state *s) { return (conv_floats(s) + recurrent_floats(s)) * sizeof(float); }

size_t state_deltanet_bytes_of(const model_config *c) {
    const size_t conv = (size_t)config_conv_dim(c) * (c->conv_kernel - 1),
                 rec = (size_t)c->lin_v_heads * c->lin_k_dim * c->lin_v_dim;
    return (size_t)config_num_linear(c) * (conv + rec) * sizeof(float);
}

size_t state_kv_bytes_per_position(const model_state *s) {
    return 2 * (size_t)s->num_attn * s->pool->kv_dim * sizeof(float);
}
