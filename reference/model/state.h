/* state.h — everything a sequence carries between positions: the KV cache of the attention layers and the
 * DeltaNet conv and recurrent state. Reference-simple: float32, KV blocks allocated on demand. */
#ifndef SPECULA_STATE_H
#define SPECULA_STATE_H

#include <stddef.h>

#include "config.h"
#include "kv_block.h" /* KV_BLOCK_SIZE */

/* A pool of KV blocks shared by the sequences (beams) of one model. Blocks are ref-counted, so beams share a
 * prefix and copy a block only when they write to it. */
typedef struct {
    int num_layers; /* [La] attention layers with a KV cache */
    int kv_dim;     /* Hkv·Dh floats per position per layer, for keys and again for values */
    int capacity;   /* blocks allocated */
    int *refcount;  /* [capacity] 0 = free */
    float *keys;    /* [capacity, La, KV_BLOCK_SIZE, kv_dim] */
    float *values;  /* [capacity, La, KV_BLOCK_SIZE, kv_dim] */
    int blocks_in_use;
    long copies; /* blocks copied on write since the pool was built */
} kv_pool;

void kv_pool_build(kv_pool *p, int num_layers, int kv_dim);
void kv_pool_free(kv_pool *p);

typedef struct {
    int num_attn;                          /* [La] */
    int num_linear;                        /* [Ll] */
    int conv_dim;                          /* [C] */
    int conv_width;                        /* [K] */
    int lin_v_heads, lin_k_dim, lin_v_dim; /* [Hv], [Dk], [Dv] */
    int pos;                               /* positions consumed so far; the next token goes here */
    kv_pool *pool;                         /* not owned unless owns_pool */
    int owns_pool;
    int *blocks; /* [n_blocks] block table: position t lives in blocks[t / KV_BLOCK_SIZE] */
    int n_blocks, blocks_cap;
    float *conv;      /* [Ll, C, K−1] previous inputs of the causal conv */
    float *recurrent; /* [Ll, Hv, Dk, Dv] delta-rule state */
} model_state;

/* A state for the trunk of a model: La = full-attention layers, Ll = DeltaNet layers. */
void state_build(model_state *s, const model_config *c, kv_pool *shared_pool);
/* A state for the MTP module: one attention layer, no DeltaNet layer. */
void state_build_mtp(model_state *s, const model_config *c);
void state_free(model_state *s);
/* Back to position 0 with zero recurrent state (releases KV blocks). */
void state_reset(model_state *s);

/* dst becomes a copy of src that shares src's KV blocks (copy-on-write) and
 * owns a copy of the DeltaNet state. dst must be built on the same pool. */
void state_fork(model_state *dst, const model_state *src);

/* Drops KV positions ≥ pos (releasing whole blocks). The DeltaNet state
 * cannot be truncated: use a snapshot for that. */
void state_truncate_kv(model_state *s, int pos);

/* Pointers to the key and value vectors [kv_dim] of position t in attention
 * layer la. For writing (t == pos being filled), the block is made private
 * first (copy-on-write) and allocated when new. */
float *state_key(model_state *s, int la, int t);
float *state_value(model_state *s, int la, int t);
void state_kv_for_write(model_state *s, int la, int t, float **key, float **value);

float *state_conv(model_state *s, int li);      /* [C, K−1] of DeltaNet layer li */
float *state_recurrent(model_state *s, int li); /* [Hv, Dk, Dv] of DeltaNet layer li */

/* The part of a state that a rollback must restore: the position and the
 * DeltaNet state (KV entries past the position are simply dropped). Methods
 * save before a proposal and restore after a rejection, so a rejected token
 * leaves no trace. */
typedef struct {
    int pos;
    size_t conv_floats, recurrent_floats;
    float *conv;
    float *recurrent;
} state_snapshot;

void snapshot_build(state_snapshot *snap, const model_state *s);
void snapshot_free(state_snapshot *snap);
void state_save(const model_state *s, state_snapshot *snap);
/* Restores the DeltaNet state and position of the snapshot and drops the KV
 * positions written since. */
void state_restore(model_state *s, const state_snapshot *snap);

/* Bytes held per sequence: DeltaNet conv + recurrent, and KV per position. */
size_t state_deltanet_bytes(const model_state *s);
/* The same for a trunk state of config c, without building one. */
size_t state_deltanet_bytes_of(const model_config *c);
size_t state_kv_bytes_per_position(const model_state *s);

#endif
