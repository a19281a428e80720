/* A wrong solution to exercise 4; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: alpha = accepted / proposed tokens, as if the drafts after a rejection had been tried.
 * Caught by: exercise_expected_tokens */
#include "accounting.h"

#include <math.h>

double expected_tokens_per_pass(double alpha, int k) {
    if (alpha >= 1.0) return k + 1.0;
    return (1.0 - pow(alpha, k + 1)) / (1.0 - alpha);
}

double accounting_alpha(const run_accounting *a) {
    long acc = 0;
    for (int d = 1; d <= ACC_MAX_DEPTH; d++) acc += a->accepted[d];
    long proposed = 0;
    for (int d = 1; d <= ACC_MAX_DEPTH; d++) proposed += a->proposed[d];
    return proposed > 0 ? (double)acc / (double)proposed : NAN;
}
