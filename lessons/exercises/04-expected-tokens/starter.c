/* Exercise 4 — how many tokens a verification pass is worth
 * (lessons/04-drafts.md). Two functions of reference/decoding/accounting.h:
 * the expected number of tokens one target pass commits when every drafted
 * token is accepted independently with probability alpha, and the estimate
 * of alpha from what a run recorded. The checker
 * (make exercise EX=4 FILE=this-file) compares both with simulated runs. */
#include "accounting.h"

#include <math.h>

/* E(alpha, k): a round proposes k tokens; token j is reached only if tokens
 * 1..j−1 were accepted; the pass always adds one token of its own (the
 * correction after a rejection, or the bonus after k acceptances).
 * Closed form: (1 − alpha^(k+1)) / (1 − alpha), and k + 1 at alpha = 1. */
double expected_tokens_per_pass(double alpha, int k) {
    /* ---- gap 1 ---- */
    (void)alpha, (void)k;
    return 0.0;
    /* ---- end of gap 1 ---- */
}

/* alpha-hat: each round is a run of Bernoulli(alpha) trials that stops at
 * the first rejection or after k acceptances. The maximum-likelihood
 * estimate is (accepted tokens) / (accepted tokens + rounds that ended in a
 * rejection). Accepted tokens: a->accepted[d] counts the rounds whose
 * accepted path reached depth d (d = 1 .. ACC_MAX_DEPTH), so their sum is
 * the number of accepted tokens; a->rejected_rounds counts the rejections.
 * With nothing to go on (both zero) return NAN. */
double accounting_alpha(const run_accounting *a) {
    /* ---- gap 2 ---- */
    (void)a;
    return NAN;
    /* ---- end of gap 2 ---- */
}
