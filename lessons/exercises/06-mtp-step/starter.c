/* Exercise 6 — one step of the MTP module (lessons/06-native-mtp.md).
 * Qwen3.8-27B's MTP layer predicts the token after next: it reads the
 * final-normed hidden state h of position t and the embedding of the token
 * at t+1, and returns logits for t+2 plus its own final-normed hidden
 * state, which the next chained step reads in place of the trunk's. Write
 * model_mtp_forward as reference/model/model.h specifies it. The checker
 * (make exercise EX=6 FILE=this-file) compares your logits with stored
 * Hugging Face transformers logits (tests/unit/test_golden.c), runs the MTP
 * greedy canaries, and checks the hidden state you return. */
#include <string.h>

#include "decoder_layer.h" /* decoder_layer_forward: one full decoder layer, in place */
#include "model.h"
#include "ops.h" /* op_rmsnorm, op_matvec */

/* The pieces, all in m->w (reference/model/weights.h):
 *   embed [V, D]             the shared token embedding (row next_token)
 *   mtp_norm_embed [D]       RMSNorm weight for the embedding
 *   mtp_norm_hidden [D]      RMSNorm weight for h
 *   mtp_fc [D, 2·D]          projects the concatenation [norm(embedding), norm(h)] to D
 *   mtp_layer                one full-attention decoder layer; its KV cache is ms (type index 0)
 *   mtp_norm [D]             the final norm of the MTP module
 *   lm_head [V, D]           shared with the trunk
 * Scratch you may use: m->mtp_in [2·D], m->x [D] (the residual stream), m->xb [D].
 * eps: m->cfg.rms_norm_eps. The order inside the concatenation matters:
 * the embedding's half comes first. */
void model_mtp_forward(model *m, model_state *ms, const float *h, int next_token, float *logits, float *hidden_out) {
    const int D = m->cfg.hidden_size;
    /* ---- gap 1: the input: mtp_in = [rmsnorm(embedding of next_token), rmsnorm(h)], x = mtp_fc · mtp_in ---- */

    /* ---- gap 2: the decoder layer on x (full attention, type index 0, state ms) ---- */

    /* ---- gap 3: the final norm into m->xb; logits = lm_head · xb when logits is not NULL;
     *             copy xb into hidden_out when it is not NULL ---- */

    /* ---- end of the gaps ---- */
    (void)D, (void)h, (void)next_token, (void)logits, (void)hidden_out;
    ms->pos++; /* the step consumed one position of the MTP's own cache */
}
