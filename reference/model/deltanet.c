/* deltanet.c — the Gated DeltaNet mixer of qwen3_5 for one position:
 * in_proj_qkv → causal depthwise conv (+SiLU, rolling state) → per value
 * head the gated delta rule on a [Dk, Dv] state (q, k shared by groups of
 * Hv/Hk value heads) → RMSNorm(·w) · silu(z) → out_proj. */
#include <string.h>

#include "decoder_layer.h"
#include "ops.h"

void deltanet_forward(model *m, const layer_weights *lw, model_state *s, int li, const float *xn, float *out) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, C = config_conv_dim(c), K = c->conv_kernel;
    const int Hk = c->lin_k_heads, Hv = c->lin_v_heads, Dk = c->lin_k_dim, Dv = c->lin_v_dim;
    float *qkv = m->q;                 /* [C] projected channels: q [Hk·Dk], k [Hk·Dk], v [Hv·Dv] */
    float *mixed = m->gate_buf;        /* [C] after the conv */
    float *z = m->z;                   /* [Hv·Dv] */
    float *a = m->ab, *b = m->ab + Hv; /* [Hv] each */
    float *att = m->att;               /* [Hv, Dv] */

    op_matvec(qkv, lw->in_proj_qkv, xn, C, D);
    op_matvec(z, lw->in_proj_z, xn, Hv * Dv, D);
    op_matvec(b, lw->in_proj_b, xn, Hv, D);
    op_matvec(a, lw->in_proj_a, xn, Hv, D);
    op_conv_step(mixed, state_conv(s, li), qkv, lw->conv1d, C, K);

    const float *q = mixed, *k = mixed + Hk * Dk, *v = mixed + 2 * Hk * Dk;
    float *S = state_recurrent(s, li); /* [Hv, Dk, Dv] */
    const int group = Hv / Hk;
    for (int h = 0; h < Hv; h++) {
        const int kh = h / group; /* value head h reads query/key head h / (Hv/Hk) */
        /* op_gated_delta_step normalises q and k in place: give each value head its own copy */
        memcpy(m->k, q + (long)kh * Dk, (size_t)Dk * sizeof(float));
        memcpy(m->v, k + (long)kh * Dk, (size_t)Dk * sizeof(float));
        float beta = op_deltanet_beta(b[h]);
        float g = op_deltanet_decay(a[h], lw->A_log[h], lw->dt_bias[h]);
        float *oh = att + (long)h * Dv;
        op_gated_delta_step(oh, S + (long)h * Dk * Dv, m->k, m->v, v + (long)h * Dv, g, beta, Dk, Dv);
        op_rmsnorm_gated(oh, oh, lw->lin_norm, z + (long)h * Dv, Dv, c->rms_norm_eps);
    }
    op_matvec(out, lw->out_proj, att, D, Hv * Dv);
}
