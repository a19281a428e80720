/* test_parse.c — the strict option values of reference/base/parse.c: what
 * each parser accepts, and that a refusal names the flag and leaves the
 * output as it was. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "parse.h"

/* parse_u64 refuses text, leaving *out alone and naming the flag */
static void u64_refuses(const char *text) {
    uint64_t v = 7;
    sp_error err = {{0}};
    ck_assert_msg(parse_u64("--seed", text, &v, &err) == -1, "'%s' accepted as %llu", text, (unsigned long long)v);
    ck_assert_msg(v == 7 && strstr(err.msg, "--seed"), "'%s': %s", text, err.msg);
}

START_TEST(test_u64) {
    uint64_t v = 0;
    sp_error err;
    ck_assert_int_eq(parse_u64("--seed", "18446744073709551615", &v, &err), 0);
    ck_assert(v == UINT64_MAX);
    u64_refuses("-1");
    u64_refuses(" -1"); /* strtoull skips the space and negates: it was read as 2^64 - 1 */
    u64_refuses(" 5");
    u64_refuses("+5");
    u64_refuses("");
    u64_refuses("18446744073709551616");
    u64_refuses("5x");
}
END_TEST

START_TEST(test_int_float_tokens) {
    int i = 3;
    float f = 0.5f;
    sp_error err;
    ck_assert_int_eq(parse_int("--k", "32", 1, 32, &i, &err), 0);
    ck_assert_int_eq(i, 32);
    ck_assert_int_eq(parse_int("--k", "33", 1, 32, &i, &err), -1);
    ck_assert_int_eq(parse_int("--k", "99999999999999999999", 1, 32, &i, &err), -1);
    ck_assert_int_eq(i, 32);
    ck_assert_int_eq(parse_float("--top-p", "nan", 0, 1, &f, &err), -1);
    ck_assert_int_eq(parse_float("--top-p", "1e400", 0, 1e9, &f, &err), -1);
    ck_assert(f == 0.5f);
    int *ids = NULL, n = 0;
    ck_assert_int_eq(parse_tokens("--tokens", "3, 1,4", 5, &ids, &n, &err), 0);
    ck_assert(n == 3 && ids[0] == 3 && ids[1] == 1 && ids[2] == 4);
    free(ids);
    ck_assert_int_eq(parse_tokens("--tokens", "3,5", 5, &ids, &n, &err), -1);
    ck_assert_msg(strstr(err.msg, "'5' is not a token id in [0, 5)"), "%s", err.msg);
    ck_assert_int_eq(parse_tokens("--tokens", " , ", 5, &ids, &n, &err), -1);
}
END_TEST

/* Only decimal numbers as a person writes them: strtol and strtod also take a '+', leading space and (strtod)
 * hexadecimal floats, infinities and NaN. */
START_TEST(test_only_plain_decimals) {
    const char *not_numbers[] = {"+5", " 5", "0x1p-1", "0x10", "inf", "nan", "1e", ".", "-", "5 ", "1e+", "--1"};
    for (size_t i = 0; i < sizeof not_numbers / sizeof *not_numbers; i++) {
        sp_error err;
        float f = 7;
        int n = 7;
        ck_assert_msg(parse_float("--x", not_numbers[i], -100, 100, &f, &err) == -1 && f == 7, "float '%s'",
                      not_numbers[i]);
        ck_assert_msg(parse_int("--x", not_numbers[i], -100, 100, &n, &err) == -1 && n == 7, "int '%s'",
                      not_numbers[i]);
    }
    const char *floats[] = {"0.5", ".5", "5.", "-5", "5e-1", "5E+1", "-0.25e1"};
    const double values[] = {0.5, 0.5, 5, -5, 0.5, 50, -2.5};
    for (size_t i = 0; i < sizeof floats / sizeof *floats; i++) {
        sp_error err;
        float f;
        ck_assert_msg(parse_float("--x", floats[i], -100, 100, &f, &err) == 0 && f == (float)values[i], "'%s'",
                      floats[i]);
    }
    int *ids, n;
    sp_error err;
    ck_assert_int_eq(parse_tokens("--tokens", "1,+2", 10, &ids, &n, &err), -1);
    ck_assert_msg(strstr(err.msg, "'+2'") != NULL, "%s", err.msg);
}
END_TEST

Suite *parse_suite(void) {
    Suite *s = suite_create("parse");
    TCase *tc = harness_tcase("values", 10);
    tcase_add_test(tc, test_u64);
    tcase_add_test(tc, test_int_float_tokens);
    tcase_add_test(tc, test_only_plain_decimals);
    suite_add_tcase(s, tc);
    return s;
}
