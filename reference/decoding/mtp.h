/* mtp.h — native multi-token prediction as self-speculation: the model's
 * own MTP layer, chained k times, proposes the next k tokens. Step 1 at
 * position t pairs the target's final-normed hidden state at t with the
 * embedding of token t+1; every further step feeds the MTP's own output
 * hidden state. The MTP layer keeps its own KV cache; after each verdict
 * the chained steps are dropped and the MTP is realigned on the committed
 * tokens with the target's hidden states. */
#ifndef SPECULA_MTP_H
#define SPECULA_MTP_H

#include "decode.h"

/* sample_drafts = 0: argmax drafts (q is one-hot, the default); 1: drafts
 * sampled from the MTP's processed distribution. Fails when the model has
 * no MTP module or k is outside [1, 32]. */
int mtp_proposer_build(proposer *p, model *m, int k, int sample_drafts, const sampler_params *sp, uint64_t seed,
                       sp_error *err);

#endif
