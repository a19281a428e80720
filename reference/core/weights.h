/* weights.h — the tensors of a qwen3_5 checkpoint: their names, shapes and
 * roles (the layout), and the float32 weight struct of the reference.
 * The layout is the single list that the loader checks, the generator
 * writes, `specula info` counts and the engine uploads. */
#ifndef SPECULA_WEIGHTS_H
#define SPECULA_WEIGHTS_H

#include <stdint.h>

#include "config.h"

/* One decoder layer. Only the mixer of the layer's own type is present. */
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

/* What a tensor is, for checks (norms must be finite), for the generator
 * (how to draw random values) and for byte accounting. */
typedef enum {
    TENSOR_MATRIX,     /* a linear layer's weight [n_out, n_in] */
    TENSOR_EMBEDDING,  /* embed_tokens [V, D] */
    TENSOR_NORM,       /* zero-centred RMSNorm weight, used as 1 + w */
    TENSOR_NORM_PLAIN, /* the DeltaNet gated norm weight, used as w */
    TENSOR_CONV,       /* conv1d weight [C, 1, K] */
    TENSOR_A_LOG,      /* log of the decay rate A, per value head */
    TENSOR_DT_BIAS     /* bias of the decay's softplus, per value head */
} tensor_kind;

typedef enum { GROUP_TRUNK = 0, GROUP_LM_HEAD = 1, GROUP_MTP = 2 } tensor_group;

typedef struct {
    char name[160];
    int ndim;
    int64_t shape[3];
    tensor_kind kind;
    tensor_group group;
    int layer;    /* trunk layer index, or −1 (global or MTP) */
    float **slot; /* where the loader stores the float32 copy; NULL without a weights struct */
} tensor_spec;

/* Upper bound on the number of tensors for a config. */
int layout_max_tensors(const model_config *c);

/* Fills specs[] (capacity layout_max_tensors) with every tensor a checkpoint
 * of this config carries: trunk, lm_head (unless tied) and, when with_mtp,
 * the MTP module. w may be NULL; otherwise each spec's slot points into it.
 * Returns the number of specs. */
int layout_build(const model_config *c, int with_mtp, model_weights *w, tensor_spec *specs);

int64_t tensor_spec_numel(const tensor_spec *t);

#endif
