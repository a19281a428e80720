/* A wrong solution to exercise 2; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: always divides by the length, as if length_penalty were 1.
 * Caught by: exercise_beam_score */
#include "beam.h"

double beam_length_normalised(double sum_logprobs, double length, double length_penalty) {
    (void)length_penalty;
    return sum_logprobs / length;
}
