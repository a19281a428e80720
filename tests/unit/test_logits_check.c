/* test_logits_check.c — reference/decoding/logits_check.c: a row with any NaN or infinite logit or with all its logits
 * 0, or a processed row with no mass, is refused naming its position; finite rows and real distributions pass. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "harness.h"
#include "logits_check.h"

START_TEST(test_finite_rows_pass) {
    const float rows[2][3] = {{0.5f, -1e30f, 3.0f}, {0.0f, 1e-30f, 0.0f}};
    sp_error err;
    ck_assert_int_eq(logits_check_raw(&rows[0][0], 2, 3, 7, &err), 0);
}
END_TEST

START_TEST(test_a_nan_or_an_infinity_is_refused_with_its_position) {
    const float special[3] = {NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
        float rows[2][3] = {{1, 2, 3}, {1, 2, 3}};
        rows[1][2] = special[k];
        sp_error err;
        ck_assert_int_eq(logits_check_raw(&rows[0][0], 2, 3, 7, &err), -1);
        ck_assert_msg(strstr(err.msg, "position 8: 1 of the 3 logits are NaN or infinite") != NULL, "%s", err.msg);
    }
}
END_TEST

/* Past a norm whose sum of squares overflowed, every logit is 0: the output no longer depends on the input, and
 * a uniform draw would pass for a run. Equal logits of another value are a model's own uniform row. */
START_TEST(test_a_row_of_zero_logits_is_refused) {
    const float rows[2][3] = {{-2.0794f, -2.0794f, -2.0794f}, {0, 0, 0}};
    sp_error err;
    ck_assert_int_eq(logits_check_raw(&rows[0][0], 1, 3, 7, &err), 0);
    ck_assert_int_eq(logits_check_raw(&rows[0][0], 2, 3, 7, &err), -1);
    ck_assert_msg(strstr(err.msg, "position 8: all 3 logits are 0, whatever the input") != NULL, "%s", err.msg);
}
END_TEST

START_TEST(test_a_row_without_mass_is_refused) {
    const float rows[2][3] = {{0.25f, 0.75f, 0.0f}, {0.0f, 0.0f, 0.0f}};
    sp_error err;
    ck_assert_int_eq(logits_check_mass(&rows[0][0], 1, 3, 4, &err), 0);
    ck_assert_int_eq(logits_check_mass(&rows[0][0], 2, 3, 4, &err), -1);
    ck_assert_msg(strstr(err.msg, "position 5: no token has a probability above 0") != NULL, "%s", err.msg);
}
END_TEST

Suite *logits_check_suite(void) {
    Suite *s = suite_create("logits_check");
    TCase *tc = harness_tcase("core", 5);
    tcase_add_test(tc, test_finite_rows_pass);
    tcase_add_test(tc, test_a_nan_or_an_infinity_is_refused_with_its_position);
    tcase_add_test(tc, test_a_row_of_zero_logits_is_refused);
    tcase_add_test(tc, test_a_row_without_mass_is_refused);
    suite_add_tcase(s, tc);
    return s;
}
