/* A wrong solution to exercise 2; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: the length is multiplied by the penalty instead of raised to it.
 * Caught by: exercise_beam_score */
#include "beam.h"

double beam_length_normalised(double sum_logprobs, double length, double length_penalty) {
    return sum_logprobs / (length * length_penalty);
}
