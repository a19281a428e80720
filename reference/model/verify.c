/* verify.c — the reference verifier: the target over every node of a
 * token tree. The reference evaluates node by node; each node runs in a
 * state forked from its parent's, which is what a tree attention mask with
 * per-node positions computes in one batched pass (tree_attention_mask,
 * tree_positions), and what makes a rejected branch leave no trace. */
#include <stdlib.h>

#include "decode.h"

void verify_tree(model *m, const model_state *base, const token_tree *t, const sampler_params *sp, float *p,
                 float *hidden, model_state *node_states) {
    const int V = m->cfg.vocab_size, D = m->cfg.hidden_size;
    for (int i = 0; i < t->n; i++) {
        const model_state *from = i == 0 ? base : &node_states[t->parent[i]];
        state_fork(&node_states[i], from);
        float *pi = p + (size_t)i * V;
        model_forward(m, &node_states[i], t->token[i], pi, hidden + (size_t)i * D);
        sampler_probs(sp, pi, pi, V);
    }
}
