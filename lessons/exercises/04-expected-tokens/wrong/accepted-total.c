/* A wrong solution to exercise 4; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: counts accepted tokens with accepted_total, which leaves out the ones an EOS kept from being emitted.
 * Caught by: exercise_expected_tokens */
#include "accounting.h"

#include <math.h>

double expected_tokens_per_pass(double alpha, int k) {
    if (alpha >= 1.0) return k + 1.0;
    return (1.0 - pow(alpha, k + 1)) / (1.0 - alpha);
}

double accounting_alpha(const run_accounting *a) {
    const double denom = (double)a->accepted_total + (double)a->rejected_rounds;
    return denom > 0 ? (double)a->accepted_total / denom : NAN;
}
