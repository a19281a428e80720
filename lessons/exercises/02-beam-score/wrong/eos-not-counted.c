/* A wrong solution to exercise 2; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: leaves the EOS token out of the length (divides by (length − 1)^penalty).
 * Caught by: exercise_beam_score */
#include "beam.h"

#include <math.h>

double beam_length_normalised(double sum_logprobs, double length, double length_penalty) {
    return sum_logprobs / pow(length > 1 ? length - 1 : 1, length_penalty);
}
