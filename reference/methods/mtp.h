/* mtp.h — native multi-token prediction as self-speculation: the model's own MTP layer, chained k times, proposes
 * the next k tokens. */
#ifndef SPECULA_MTP_H
#define SPECULA_MTP_H

#include "proposer.h"
#include "stepper.h"

#define MTP_MAX_K 32

/* A proposer over the stepper `mtp` of the target's MTP module (reset here;
 * used by this proposer alone until it is released). Step 1 at position t
 * pairs the target's final-normed hidden state at t with the embedding of
 * token t+1; every further step feeds the module's own output hidden state.
 * The module keeps its own KV cache; after each verdict the chained steps are
 * dropped and it is realigned on the committed tokens with the target's
 * hidden states. sample_drafts = 0:
 * argmax drafts (q is one-hot); 1: drafts sampled from the MTP's processed
 * distribution, processed like the target's p. Fails when the stepper is
 * not an MTP module or k is outside [1, MTP_MAX_K]. */
int mtp_proposer_build(proposer *p, stepper *mtp, int k, int sample_drafts, sp_error *err);

/* A tree of drafts of the given shape, branching at every depth from the
 * same chained state (mtp.c says how the module's state follows each branch); kind as for the draft model's trees
 * (spec_tree_proposer_build). Argmax drafts make every sibling the same
 * token, so a tree with siblings needs sample_drafts = 1 or top-ranked
 * children. The chain above is the shape of k ones, bit for bit. */
int mtp_tree_proposer_build(proposer *p, stepper *mtp, const tree_shape *shape, children_kind kind, int sample_drafts,
                            sp_error *err);

#endif
