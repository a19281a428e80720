/* Exercise 2 — the length-normalised score of beam search
 * (lessons/02-beam-search.md). A finished hypothesis of `length` generated
 * tokens (its EOS included) whose log-probabilities sum to sum_logprobs is
 * ranked by
 *     sum_logprobs / length ^ length_penalty
 * Without the division a sum of negative numbers can only fall as the text
 * grows, and the shortest hypothesis would always win. The search also
 * uses this function to bound what a live beam could still reach when it
 * decides to stop. The checker (make exercise EX=2 FILE=this-file) runs
 * the project's beam-search tests with your function inside the search. */
#include "beam.h"

#include <math.h>

double beam_length_normalised(double sum_logprobs, double length, double length_penalty) {
    /* ---- gap: divide by length raised to length_penalty (pow from math.h) ---- */
    (void)length, (void)length_penalty;
    return sum_logprobs;
    /* ---- end of the gap ---- */
}
