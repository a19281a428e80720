/* model.h — the reference qwen3_5 model: a checkpoint loaded into float32 and run one position at a time, the
 * llama2.c way. The trunk mixes Gated DeltaNet and gated full attention layers 3:1 (config.layer_types). */
#ifndef SPECULA_MODEL_H
#define SPECULA_MODEL_H

#include "config.h"
#include "error.h"
#include "state.h"
#include "weights.h"

typedef struct {
    model_config cfg;
    model_weights w;
    float *arena; /* all float32 weights, one allocation */
    size_t arena_floats;
    char path[4096];
    int storage_bytes;            /* bytes per parameter in the checkpoint (2 for bf16/f16, 4 for f32) */
    double weight_bytes_per_step; /* weights one decode step reads, at storage_bytes (footprint.h) */
    /* scratch for one forward (the reference runs one position at a time) */
    float *x, *xb, *xb2;          /* [D] residual stream and two work vectors */
    float *q, *gate_buf;          /* [max(H·Dh, C)] */
    float *k, *v;                 /* [max(Hkv·Dh, C)] */
    float *att;                   /* [max(H·Dh, Hv·Dv)] mixer output */
    float *z;                     /* [Hv·Dv] */
    float *ab;                    /* [2·Hv] decay and beta inputs */
    float *hb, *hb2;              /* [F] */
    float *scores;                /* [max positions] */
    const float **kptrs, **vptrs; /* [max positions] */
    int scratch_positions;
    float *mtp_in; /* [2·D] */
} model;

/* Loads DIR (config.json + safetensors). Every tensor is checked by name for
 * dtype and shape against the config; norms must be finite. The MTP module
 * is loaded when the checkpoint has it (w.has_mtp). */
int model_load(model *m, const char *path, sp_error *err);
void model_free(model *m);

/* One position: consumes `token` at s->pos, updates the state, advances
 * s->pos. Writes logits[V] and the final-normed hidden state[D] when those
 * are not NULL (the hidden state is what the MTP module reads). */
void model_forward(model *m, model_state *s, int token, float *logits, float *hidden);

/* One step of the MTP module (one more attention decoder layer) at position ms->pos: combines the hidden state
 * h[D] of the position before with the embedding of `next_token`, runs the
 * MTP decoder layer (its own KV cache in ms), and writes logits[V] through
 * the shared lm_head and the MTP's output hidden state[D] (which the next
 * chained step reads in place of the trunk's). Requires m->w.has_mtp. */
void model_mtp_forward(model *m, model_state *ms, const float *h, int next_token, float *logits, float *hidden_out);

#endif
