/* test_philox.c — Philox4x32-10 against the Random123 known-answer vectors,
 * and the (seed, stream, counter) wrapper's independence properties. */
#include <check.h>
#include <math.h>

#include "harness.h"
#include "philox.h"

START_TEST(test_known_answers) {
    /* Random123 kat_vectors, philox4x32_10 */
    static const uint32_t ctr[3][4] = {{0, 0, 0, 0},
                                       {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                       {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
    static const uint32_t key[3][2] = {{0, 0}, {0xffffffffu, 0xffffffffu}, {0xa4093822u, 0x299f31d0u}};
    static const uint32_t want[3][4] = {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u},
                                        {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu},
                                        {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}};
    for (int v = 0; v < 3; v++) {
        uint32_t out[4];
        philox4x32_10(ctr[v], key[v], out);
        for (int i = 0; i < 4; i++)
            ck_assert_msg(out[i] == want[v][i], "vector %d word %d: got %08x want %08x", v, i, out[i], want[v][i]);
    }
}
END_TEST

START_TEST(test_unit_interval_is_open) {
    ck_assert(philox_unit(0) > 0.0f);
    ck_assert(philox_unit(0xffffffffu) < 1.0f);
    ck_assert(-logf(philox_unit(0xffffffffu)) > 0.0f);
}
END_TEST

START_TEST(test_streams_differ) {
    uint32_t a[4], b[4], c[4];
    philox_words(7, 1, 100, a);
    philox_words(7, 2, 100, b);
    philox_words(8, 1, 100, c);
    ck_assert(a[0] != b[0] || a[1] != b[1]);
    ck_assert(a[0] != c[0] || a[1] != c[1]);
    uint32_t again[4];
    philox_words(7, 1, 100, again);
    for (int i = 0; i < 4; i++) ck_assert_uint_eq(a[i], again[i]);
}
END_TEST

START_TEST(test_uniform_mean) {
    /* 40000 uniforms: the mean is within 5 standard errors of 1/2 */
    double sum = 0;
    int n = 40000;
    for (int i = 0; i < n; i++) sum += philox_uniform(3, 4, (uint64_t)i, i & 3);
    double se = sqrt(1.0 / 12.0 / n);
    ck_assert_msg(fabs(sum / n - 0.5) < 5 * se, "mean %f", sum / n);
}
END_TEST

Suite *philox_suite(void) {
    Suite *s = suite_create("philox");
    TCase *tc = harness_tcase("core", 10);
    tcase_add_test(tc, test_known_answers);
    tcase_add_test(tc, test_unit_interval_is_open);
    tcase_add_test(tc, test_streams_differ);
    tcase_add_test(tc, test_uniform_mean);
    suite_add_tcase(s, tc);
    return s;
}
