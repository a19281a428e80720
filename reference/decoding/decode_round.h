/* decode_round.h — the steps of decode_run's round on one sequence's state. decode.c and the batched loop in
 * decode_batch.c both run these same steps. */
#ifndef SPECULA_DECODE_ROUND_H
#define SPECULA_DECODE_ROUND_H

#include "decode.h"

/* What one sequence holds between rounds. */
typedef struct {
    int seq; /* the target's sequence: every committed token but the pending one */
    token_tree tree;
    float *p, *hidden, *scratch; /* [cap, V]; [cap, D] when the proposer reads hidden states, else NULL; [2·V] */
    int cap;                     /* tree nodes: the root and what the proposer may add */
    int *path_tokens;            /* [cap] */
    float *path_hidden;          /* [cap, D] or NULL */
    int pending, position, done, out_cap;
    uint64_t round;  /* rounds so far: the round of the rng sites */
    accept_result r; /* the round's acceptance */
} decode_seq;

/* The prompt and options valid for t and prop, or a message. */
int decode_check(const decode_target *t, const proposer *prop, const int *prompt, int n_prompt,
                 const decode_options *opt, sp_error *err);
/* A new sequence of t with its buffers, its accounting started in out, and the prompt prefilled. */
int decode_seq_start(decode_target *t, proposer *prop, const int *prompt, int n_prompt, const decode_options *opt,
                     decode_seq *s, decode_output *out, sp_error *err);
void decode_seq_free(decode_seq *s, decode_target *t);
int decode_seq_live(const decode_seq *s, const decode_options *opt, const decode_output *out);
accept_site decode_site(const decode_seq *s, const decode_options *opt);
/* The tree of the round: the pending token as its root, and the proposer's nodes while the budget leaves room. */
int decode_propose(decode_seq *s, proposer *prop, const decode_options *opt, const decode_output *out, sp_error *err);
/* The option's acceptance rule on the verified tree (s->p), into s->r. */
int decode_accept(decode_seq *s, const decode_options *opt, sp_error *err);
/* After the acceptance: the burst (the accepted tokens, then the correction or bonus; EOS ends it and the run)
 * committed to the target, the accounting, the output and the stream; the sequence moves past it. */
int decode_commit(decode_target *t, decode_seq *s, const decode_options *opt, decode_output *out, double t0,
                  sp_error *err);
/* The proposer realigns on the round's accepted path (root first) and the token after it. */
int decode_realign(const decode_target *t, decode_seq *s, proposer *prop, sp_error *err);
double decode_now_s(void); /* the monotonic clock, for TTFT and the decode time */

#endif
