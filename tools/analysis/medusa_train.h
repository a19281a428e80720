/* medusa_train.h — training Medusa heads by self-distillation against a frozen target: the target continues
 * prompts from a corpus, its own tokens are the labels, its final-normed hidden states the inputs, and only the
 * heads learn (gradients by hand). Plain C, one example at a time: a lesson as much as a tool. */
#ifndef SPECULA_MEDUSA_TRAIN_H
#define SPECULA_MEDUSA_TRAIN_H

#include <stdio.h>

#include "medusa.h"
#include "target.h"

/* ---- the examples ------------------------------------------------------------------ */

/* n examples of n_heads labels each: the target's hidden state at t and its
 * own tokens at t+2, …, t+1+n_heads. */
typedef struct {
    int n, D, n_heads;
    float *hidden; /* [n, D] */
    int *labels;   /* [n, n_heads] label of head i: x_{t+2+i} */
} medusa_dataset;

typedef struct {
    int n_sequences;   /* prompts to continue */
    int prompt_len;    /* tokens of each prompt, taken from the corpus */
    int gen_len;       /* tokens the target generates after each prompt */
    float temperature; /* 0: greedy continuations; > 0: sampled at this temperature */
    uint64_t seed;     /* prompt offsets and sampled tokens */
    uint64_t stream;   /* separates the training and the held-out draws of one seed */
} medusa_data_opts;

/* Runs the target over n_sequences prompts drawn at random offsets of
 * corpus[0..n_corpus) and their continuations, and keeps every position t
 * whose next token x_{t+1} is the target's own and whose labels all lie in
 * the continuation: gen_len − n_heads examples per sequence. progress, when
 * not NULL, receives a line every few sequences. */
int medusa_dataset_generate(decode_target *target, const int *corpus, int n_corpus, int n_heads,
                            const medusa_data_opts *o, medusa_dataset *ds, FILE *progress, sp_error *err);
void medusa_dataset_free(medusa_dataset *ds);

/* ---- loss and gradient ------------------------------------------------------------- */

/* Buffers for one example's forward and backward. */
typedef struct {
    int D, V, n_layers;
    float *x;      /* [n_layers + 1, D] ResBlock inputs; x[n_layers] is the head's output r */
    float *z;      /* [n_layers, D] pre-activations W x + b */
    float *logits; /* [V] */
    float *dr;     /* [D] ∂L/∂(current ResBlock output) */
    float *dz;     /* [D] */
} medusa_work;

void medusa_work_build(medusa_work *w, const medusa_heads *h);
void medusa_work_free(medusa_work *w);

/* Cross-entropy (natural log) of head i on one example. When grad is not
 * NULL (heads of the same shape: medusa_build with the same counts), adds
 * scale · ∂CE/∂θ to it: the ResBlocks always, the projection when the head
 * owns one (a shared lm_head is frozen). */
double medusa_head_loss(const medusa_heads *h, int i, const float *hidden, int label, float scale, medusa_heads *grad,
                        medusa_work *w);

/* The weighted loss Σ_i weights[i] · CE_i of one example, and its gradient
 * (scaled by `scale`) added into grad when not NULL. The training objective,
 * for one position t with hidden state h_t:
 *     L = Σ_i λ^i · CE(head_i(h_t), x_{t+2+i}),      λ = 0.8 by default,
 * where x_{t+1}, x_{t+2}, … is the target's own continuation (greedy by
 * default). Why cross-entropy against the target's tokens rather than a KL
 * to its distributions: with greedy continuations the label is exactly the
 * token a greedy Medusa round must guess, so the loss trains the quantity
 * the method (and the held-out figure) measures; with sampled continuations
 * the label is a draw from the target given the prefix, so the expected
 * loss is the cross-entropy to the target's own distribution of that token
 * — the KL objective up to a constant — without storing a V-wide
 * distribution per label. Later heads weigh less: their targets are harder
 * and noisier, and Medusa found 0.8^i to keep them from dominating. */
double medusa_example_loss(const medusa_heads *h, const float *hidden, const int *labels, const float *weights,
                           float scale, medusa_heads *grad, medusa_work *w);

/* ---- training ----------------------------------------------------------------------- */

typedef struct {
    int steps;  /* optimiser steps */
    int batch;  /* examples per step */
    float lr;   /* Adam's step size, after a linear warm-up, decayed by a cosine to lr/10 */
    int warmup; /* steps of the warm-up */
    float beta1, beta2, adam_eps;
    float decay;   /* head i's loss weight is decay^i */
    uint64_t seed; /* the order of the examples */
    int log_every; /* progress line every this many steps (0: none) */
} medusa_train_opts;

medusa_train_opts medusa_train_defaults(void);

/* Initialises heads the way Medusa does: ResBlock weights and biases zero
 * (each ResBlock starts as the identity) and, when the heads own their
 * projections, each a copy of the target's lm_head[V, D] — so every head starts
 * by predicting the token after the one it reads, and learns from there. */
void medusa_train_init(medusa_heads *h, const float *lm_head);

/* Adam on the weighted loss over `train`. Reproducible: the same examples,
 * options and seed give bit-identical heads. Progress to log when not NULL. */
int medusa_train(medusa_heads *h, const medusa_dataset *train, const medusa_train_opts *o, FILE *log, sp_error *err);

/* ---- held-out evaluation ------------------------------------------------------------- */

#define MEDUSA_EVAL_RANKS 10

typedef struct {
    int n_heads, n;
    double loss[MEDUSA_MAX_HEADS];                         /* mean CE per head */
    double top1[MEDUSA_MAX_HEADS];                         /* argmax of head i == the target's token */
    double topk[MEDUSA_MAX_HEADS];                         /* the token within the top MEDUSA_EVAL_RANKS */
    double rank_freq[MEDUSA_MAX_HEADS][MEDUSA_EVAL_RANKS]; /* P(the token has rank r under head i) */
    int *ranks; /* [n, n_heads] the rank of each label (MEDUSA_EVAL_RANKS when beyond) */
} medusa_eval;

int medusa_evaluate(const medusa_heads *h, const medusa_dataset *ds, medusa_eval *e, sp_error *err);
void medusa_eval_free(medusa_eval *e);

/* The expected number of tokens a greedy round accepts with this tree, on
 * these examples: Σ over nodes of the fraction of examples whose labels sit
 * at exactly the node's ranks all along its path. */
double medusa_eval_tree_gain(const medusa_eval *e, const medusa_tree *t);

/* The n_nodes paths with the highest such fraction (a prefix is never less
 * frequent than its path, so the tree is prefix-closed); depth ≤ the
 * heads. The tree measured on held-out data: what `medusa-train` suggests. */
void medusa_eval_suggest_tree(const medusa_eval *e, int n_nodes, medusa_tree *t);

#endif
