/* A wrong solution to exercise 4; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: E(alpha, k) by the closed form alone, which is 0/0 at alpha = 1.
 * Caught by: exercise_expected_tokens */
#include "accounting.h"

#include <math.h>

double expected_tokens_per_pass(double alpha, int k) { return (1.0 - pow(alpha, k + 1)) / (1.0 - alpha); }

double accounting_alpha(const run_accounting *a) {
    long acc = 0;
    for (int d = 1; d <= ACC_MAX_DEPTH; d++) acc += a->accepted[d];
    const double denom = (double)acc + (double)a->rejected_rounds;
    return denom > 0 ? (double)acc / denom : NAN;
}
