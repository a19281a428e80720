/* layout.h — the tensors of a qwen3_5 checkpoint: names, shapes and roles. The one list that the loader checks,
 * the generator writes, `specula info` counts and every backend stores; a backend maps each role to its own
 * storage (the reference: model/weights.h). */
#ifndef SPECULA_LAYOUT_H
#define SPECULA_LAYOUT_H

#include <stdint.h>

#include "config.h"

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

/* Which weight a tensor is. The per-layer roles apply to a trunk layer
 * (spec.layer ≥ 0) or to the MTP module's decoder layer (group GROUP_MTP). */
typedef enum {
    ROLE_EMBED = 0, /* embed_tokens [V, D] */
    ROLE_FINAL_NORM,
    ROLE_LM_HEAD,
    ROLE_MTP_FC,
    ROLE_MTP_NORM_EMBED,
    ROLE_MTP_NORM_HIDDEN,
    ROLE_MTP_NORM,
    /* one decoder layer */
    ROLE_INPUT_NORM,
    ROLE_POST_NORM,
    ROLE_Q_PROJ,
    ROLE_K_PROJ,
    ROLE_V_PROJ,
    ROLE_O_PROJ,
    ROLE_Q_NORM,
    ROLE_K_NORM,
    ROLE_IN_PROJ_QKV,
    ROLE_IN_PROJ_Z,
    ROLE_IN_PROJ_A,
    ROLE_IN_PROJ_B,
    ROLE_CONV1D,
    ROLE_A_LOG,
    ROLE_DT_BIAS,
    ROLE_LIN_NORM,
    ROLE_OUT_PROJ,
    ROLE_GATE_PROJ,
    ROLE_UP_PROJ,
    ROLE_DOWN_PROJ,
    ROLE_COUNT
} tensor_role;

typedef struct {
    char name[160];
    int ndim;
    int64_t shape[3];
    tensor_kind kind;
    tensor_group group;
    int layer; /* trunk layer index, or −1 (global or MTP) */
    tensor_role role;
} tensor_spec;

/* Upper bound on the number of tensors for a config. */
int layout_max_tensors(const model_config *c);

/* Fills specs[] (capacity layout_max_tensors) with every tensor a checkpoint
 * of this config carries: trunk, lm_head (unless tied) and, when with_mtp,
 * the MTP module. Returns the number of specs. */
int layout_build(const model_config *c, int with_mtp, tensor_spec *specs);

int64_t tensor_spec_numel(const tensor_spec *t);

#endif
