/* test_emu_rules.c — the emulator's own checks (kernels/emu), each shown on a planted kernel that breaks it
 * (kernels/emu/emu_plants.cc): the launches' debug mode names the kernel that failed. */
#include <check.h>

#include "emu_plants.h"
#include "harness.h"

START_TEST(test_refused_launch_named) {
    char msg[512];
    ck_assert_msg(emu_plant_refused_launch_named(msg, sizeof msg) == 0, "%s", msg);
}
END_TEST

Suite *emu_rules_suite(void) {
    Suite *s = suite_create("emu_rules");
    TCase *tc = harness_tcase("debug", 30);
    tcase_add_test(tc, test_refused_launch_named);
    suite_add_tcase(s, tc);
    return s;
}
