/* A wrong solution to exercise 6; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: the concatenation is [norm(h), norm(embedding)]: the hidden state's half first.
 * Caught by: golden */
#include <string.h>

#include "decoder_layer.h"
#include "model.h"
#include "ops.h"

void model_mtp_forward(model *m, model_state *ms, const float *h, int next_token, float *logits, float *hidden_out) {
    const int D = m->cfg.hidden_size;
    const float eps = m->cfg.rms_norm_eps;
    op_rmsnorm(m->mtp_in, h, m->w.mtp_norm_hidden, D, eps);
    op_rmsnorm(m->mtp_in + D, m->w.embed + (long)next_token * D, m->w.mtp_norm_embed, D, eps);
    op_matvec(m->x, m->w.mtp_fc, m->mtp_in, D, 2 * D);
    decoder_layer_forward(m, &m->w.mtp_layer, LAYER_FULL_ATTENTION, ms, 0, m->x);
    op_rmsnorm(m->xb, m->x, m->w.mtp_norm, D, eps);
    if (logits) op_matvec(logits, m->w.lm_head, m->xb, m->cfg.vocab_size, D);
    if (hidden_out) memcpy(hidden_out, m->xb, (size_t)D * sizeof(float));
    ms->pos++;
}
