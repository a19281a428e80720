/* test_beam_score.c — exercise 2's own checks: the score on worked
 * examples, and the property that makes it useful — with penalty 1 a longer
 * hypothesis with the same average log-probability per token ties with a
 * shorter one instead of losing to it.
 *
 * Wrong solutions this checker must reject (wrong/, run by
 * tests/parts/exercises.sh):
 *   times-penalty.c    sum / (length · penalty)
 *   penalty-ignored.c  sum / length whatever the penalty
 *   eos-not-counted.c  sum / (length − 1)^penalty
 */
#include <check.h>
#include <math.h>

#include "beam.h"
#include "harness.h"

START_TEST(test_worked_examples) {
    /* 3 tokens, log-probabilities −1, −2, −3 */
    ck_assert_double_eq_tol(beam_length_normalised(-6.0, 3, 1.0), -2.0, 1e-12); /* the mean */
    ck_assert_double_eq_tol(beam_length_normalised(-6.0, 3, 0.0), -6.0, 1e-12); /* no normalisation */
    ck_assert_double_eq_tol(beam_length_normalised(-6.0, 3, 2.0), -6.0 / 9, 1e-12);
    ck_assert_double_eq_tol(beam_length_normalised(-6.0, 4, 0.5), -3.0, 1e-12);
    ck_assert_double_eq_tol(beam_length_normalised(-2.5, 1, 1.7), -2.5, 1e-12); /* one token: any penalty */
}
END_TEST

START_TEST(test_average_is_what_counts) {
    /* a 2-token and an 8-token hypothesis, both −0.5 per token */
    double short_h = -1.0, long_h = -4.0;
    ck_assert(beam_length_normalised(short_h, 2, 0.0) > beam_length_normalised(long_h, 8, 0.0)); /* raw: short wins */
    ck_assert_double_eq_tol(beam_length_normalised(short_h, 2, 1.0), beam_length_normalised(long_h, 8, 1.0), 1e-12);
    ck_assert(beam_length_normalised(long_h, 8, 2.0) > beam_length_normalised(short_h, 2, 2.0)); /* > 1: long wins */
}
END_TEST

Suite *exercise_beam_score_suite(void) {
    Suite *s = suite_create("exercise_beam_score");
    TCase *tc = harness_tcase("score", 10);
    tcase_add_test(tc, test_worked_examples);
    tcase_add_test(tc, test_average_is_what_counts);
    suite_add_tcase(s, tc);
    return s;
}
