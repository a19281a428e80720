/* weights.c — the role → field map of the reference's float32 weights. */
#include "weights.h"

#include <stddef.h>

static float **layer_slot(layer_weights *lw, tensor_role role) {
    switch (role) {
    case ROLE_INPUT_NORM: return &lw->input_norm;
    case ROLE_POST_NORM: return &lw->post_norm;
    case ROLE_Q_PROJ: return &lw->q_proj;
    case ROLE_K_PROJ: return &lw->k_proj;
    case ROLE_V_PROJ: return &lw->v_proj;
    case ROLE_O_PROJ: return &lw->o_proj;
    case ROLE_Q_NORM: return &lw->q_norm;
    case ROLE_K_NORM: return &lw->k_norm;
    case ROLE_IN_PROJ_QKV: return &lw->in_proj_qkv;
    case ROLE_IN_PROJ_Z: return &lw->in_proj_z;
    case ROLE_IN_PROJ_A: return &lw->in_proj_a;
    case ROLE_IN_PROJ_B: return &lw->in_proj_b;
    case ROLE_CONV1D: return &lw->conv1d;
    case ROLE_A_LOG: return &lw->A_log;
    case ROLE_DT_BIAS: return &lw->dt_bias;
    case ROLE_LIN_NORM: return &lw->lin_norm;
    case ROLE_OUT_PROJ: return &lw->out_proj;
    case ROLE_GATE_PROJ: return &lw->gate_proj;
    case ROLE_UP_PROJ: return &lw->up_proj;
    case ROLE_DOWN_PROJ: return &lw->down_proj;
    default: return NULL;
    }
}

float **model_weight_slot(model_weights *w, const tensor_spec *spec) {
    switch (spec->role) {
    case ROLE_EMBED: return &w->embed;
    case ROLE_FINAL_NORM: return &w->final_norm;
    case ROLE_LM_HEAD: return &w->lm_head;
    case ROLE_MTP_FC: return &w->mtp_fc;
    case ROLE_MTP_NORM_EMBED: return &w->mtp_norm_embed;
    case ROLE_MTP_NORM_HIDDEN: return &w->mtp_norm_hidden;
    case ROLE_MTP_NORM: return &w->mtp_norm;
    default: return layer_slot(spec->group == GROUP_MTP ? &w->mtp_layer : &w->layers[spec->layer], spec->role);
    }
}
