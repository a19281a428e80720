/* decoder_layer.h — the two token mixers and the decoder layer of the reference
 * forward, one position at a time. Internal to reference/: callers use
 * model_forward / model_mtp_forward. */
#ifndef SPECULA_DECODER_LAYER_H
#define SPECULA_DECODER_LAYER_H

#include "model.h"

/* Gated full attention at position s->pos of attention layer `la`:
 * out[D] from the normed input xn[D]; writes this position's K and V. */
void attention_forward(model *m, const layer_weights *lw, model_state *s, int la, const float *xn, float *out);

/* Gated DeltaNet at DeltaNet layer `li`: out[D] from xn[D]; advances the
 * layer's conv and recurrent state by one position. */
void deltanet_forward(model *m, const layer_weights *lw, model_state *s, int li, const float *xn, float *out);

/* One pre-norm decoder layer on the residual stream x[D], in place:
 * x += mixer(norm(x)); x += mlp(norm(x)). type_index is the layer's index
 * among layers of its type (its KV or DeltaNet slot in s). */
void decoder_layer_forward(model *m, const layer_weights *lw, layer_type type, model_state *s, int type_index,
                           float *x);

/* Makes sure the per-position scratch holds n positions. */
void model_reserve_positions(model *m, int n);

#endif
