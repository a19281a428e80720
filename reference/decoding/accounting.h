/* accounting.h — the numbers every decoding run reports (passes, acceptance per position, the α estimate,
 * weight bytes per token, TTFT, decode rate). Shared by the reference and the engine. */
#ifndef SPECULA_ACCOUNTING_H
#define SPECULA_ACCOUNTING_H

#include <stdio.h>

#define ACC_MAX_DEPTH 64

typedef struct {
    const char *method;
    int k;                               /* proposal depth asked for (0 for plain decoding) */
    long target_passes;                  /* verify passes, one a round (the prompt's prefill is not counted) */
    long target_positions;               /* positions the target evaluated: prompt and every tree node */
    long committed;                      /* tokens emitted */
    long proposed[ACC_MAX_DEPTH + 1];    /* proposed[d]: rounds that proposed a token at depth d (1-based) */
    long accepted[ACC_MAX_DEPTH + 1];    /* accepted[d]: rounds whose accepted path reached depth d */
    long accepted_total;                 /* Σ accepted tokens that were committed */
    long length_hist[ACC_MAX_DEPTH + 2]; /* rounds with exactly j tokens accepted */
    long rejected_rounds;                /* rounds that stopped at a rejection (not at the end of the proposal) */
    long proposer_steps;                 /* forward passes of the draft model / MTP module / Medusa heads */
    double target_bytes_per_pass;        /* weight bytes one target pass reads */
    double proposer_bytes_per_step;
    double ttft_s;   /* prompt in to first token out */
    double decode_s; /* first token out to last token out */
} run_accounting;

void accounting_init(run_accounting *a, const char *method, int k, double target_bytes, double proposer_bytes);

/* Records one verification round: `proposed_depth` = the depth of the
 * proposal tree, `accepted` = proposed tokens accepted, `committed` = tokens
 * this round emitted (accepted + 1, or fewer when EOS or the token budget cut
 * the burst), `stopped_by_rejection` = the round ended at a rejected node. */
void accounting_round(run_accounting *a, int proposed_depth, int accepted, int committed, int stopped_by_rejection);

double accounting_tokens_per_pass(const run_accounting *a);
/* α̂: the maximum-likelihood estimate of a constant per-token acceptance
 * probability from truncated-geometric accepted lengths:
 *   α̂ = Σ accepted / (Σ accepted + rounds stopped by a rejection). */
double accounting_alpha(const run_accounting *a);
/* E(α,k) = (1 − α^{k+1}) / (1 − α), and k + 1 at α = 1. */
double expected_tokens_per_pass(double alpha, int k);
double accounting_bytes_per_token(const run_accounting *a);

void accounting_print(const run_accounting *a, FILE *f);
void accounting_print_json(const run_accounting *a, FILE *f);

#endif
