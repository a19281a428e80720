/* attention.c — gated full attention of qwen3_5 for one position: q_proj
 * yields a query and an output gate per head, q and k get a zero-centred
 * RMSNorm over the head dimension, partial rotate-half RoPE, grouped-query
 * attention over the paged KV cache, output · sigmoid(gate), o_proj. */
#include <math.h>

#include "decoder_layer.h"
#include "ops.h"

void attention_forward(model *m, const layer_weights *lw, model_state *s, int la, const float *xn, float *out) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, H = c->num_heads, Hkv = c->num_kv_heads, Dh = c->head_dim;
    const int pos = s->pos, group = H / Hkv;
    float *qg = m->q;    /* [H, 2·Dh]: per head the query, then the gate */
    float *k = m->k;     /* [Hkv, Dh] */
    float *v = m->v;     /* [Hkv, Dh] */
    float *att = m->att; /* [H, Dh] */

    op_matvec(qg, lw->q_proj, xn, 2 * H * Dh, D);
    op_matvec(k, lw->k_proj, xn, Hkv * Dh, D);
    op_matvec(v, lw->v_proj, xn, Hkv * Dh, D);
    for (int h = 0; h < H; h++) {
        float *q = qg + (long)h * 2 * Dh;
        op_rmsnorm(q, q, lw->q_norm, Dh, c->rms_norm_eps);
        op_rope(q, c->rotary_dim, pos, c->rope_theta);
    }
    float *kc, *vc;
    for (int la_head = 0; la_head < Hkv; la_head++) {
        float *kh = k + (long)la_head * Dh;
        op_rmsnorm(kh, kh, lw->k_norm, Dh, c->rms_norm_eps);
        op_rope(kh, c->rotary_dim, pos, c->rope_theta);
    }
    state_kv_for_write(s, la, pos, &kc, &vc);
    for (int i = 0; i < Hkv * Dh; i++) kc[i] = k[i], vc[i] = v[i];

    model_reserve_positions(m, pos + 1);
    const float scale = 1.0f / sqrtf((float)Dh);
    for (int h = 0; h < H; h++) {
        int kvh = h / group;
        for (int t = 0; t <= pos; t++) {
            m->kptrs[t] = state_key(s, la, t) + (long)kvh * Dh;
            m->vptrs[t] = state_value(s, la, t) + (long)kvh * Dh;
        }
        float *oh = att + (long)h * Dh;
        const float *gate = qg + (long)h * 2 * Dh + Dh;
        op_attention_head(oh, qg + (long)h * 2 * Dh, m->kptrs, m->vptrs, pos + 1, Dh, scale, m->scores);
        op_output_gate(oh, gate, Dh);
    }
    op_matvec(out, lw->o_proj, att, D, H * Dh);
}
