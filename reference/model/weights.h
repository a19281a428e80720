/* weights.h — the reference's float32 weights: one struct per decoder layer
 * and one for the model, and where each tensor of the layout (layout.h)
 * lives in them. Only the mixer of a layer's own type is present. */
#ifndef SPECULA_WEIGHTS_H
#define SPECULA_WEIGHTS_H

#include "layout.h"

/* One decoder layer. */
typedef struct {
    float *input_norm; /* [D]  zero-centred */
    float *post_norm;  /* [D]  zero-centred, before the MLP */
    /* gated full attention */
    float *q_proj; /* [2·H·Dh, D]  per head: Dh query rows, then Dh gate rows */
    float *k_proj; /* [Hkv·Dh, D] */
    float *v_proj; /* [Hkv·Dh, D] */
    float *o_proj; /* [D, H·Dh] */
    float *q_norm; /* [Dh]  zero-centred */
    float *k_norm; /* [Dh]  zero-centred */
    /* Gated DeltaNet */
    float *in_proj_qkv; /* [C, D]  C = 2·Hk·Dk + Hv·Dv: q, k, v channels */
    float *in_proj_z;   /* [Hv·Dv, D]  output gate */
    float *in_proj_a;   /* [Hv, D]  decay input */
    float *in_proj_b;   /* [Hv, D]  β input */
    float *conv1d;      /* [C, K]  (checkpoint [C, 1, K]) */
    float *A_log;       /* [Hv] */
    float *dt_bias;     /* [Hv] */
    float *lin_norm;    /* [Dv]  plain weight, gated by silu(z) */
    float *out_proj;    /* [D, Hv·Dv] */
    /* SwiGLU MLP */
    float *gate_proj; /* [F, D] */
    float *up_proj;   /* [F, D] */
    float *down_proj; /* [D, F] */
} layer_weights;

typedef struct {
    float *embed;          /* [V, D] */
    layer_weights *layers; /* [L] */
    float *final_norm;     /* [D] */
    float *lm_head;        /* [V, D]  == embed when tied */
    /* the MTP module (has_mtp = 0 when the checkpoint carries none) */
    int has_mtp;
    float *mtp_fc;           /* [D, 2·D]  input: [norm(embedding), norm(hidden)] */
    float *mtp_norm_embed;   /* [D]  pre_fc_norm_embedding */
    float *mtp_norm_hidden;  /* [D]  pre_fc_norm_hidden */
    layer_weights mtp_layer; /* one full-attention decoder layer */
    float *mtp_norm;         /* [D]  final norm of the MTP output */
} model_weights;

/* The field of w that holds the tensor `spec` describes. */
float **model_weight_slot(model_weights *w, const tensor_spec *spec);

#endif
