/* A wrong solution to exercise 4; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: rejections = rounds − length_hist[k]: budget-cut rounds and shallow Medusa leaves count as rejections.
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
    long rounds = 0; /* rounds that proposed something */
    for (int j = 0; j <= ACC_MAX_DEPTH + 1; j++) rounds += a->length_hist[j];
    const long rejected = rounds - a->length_hist[a->k];
    return acc + rejected > 0 ? (double)acc / (double)(acc + rejected) : NAN;
}
