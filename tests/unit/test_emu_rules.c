/* test_emu_rules.c — the emulator's own rules (kernels/emu/emu.h), each shown on a planted kernel that breaks it
 * (kernels/emu/emu_plants.cc): without the rule the emulator passes the plant, as it did before it had the rule;
 * with it, the plant fails. And the launches' debug mode names the kernel that failed. */
#include <check.h>

#include "emu_plants.h"
#include "harness.h"

/* One plant per iteration, each in a process of its own (Check forks every test): plants keep static shared
 * memory, which a second run would find as the first left it. */
START_TEST(test_rule_catches_its_plant) {
    const int i = _i;
    char msg[256];
    if (!emu_plant_checked(i)) return; /* the ASan build instruments static shared memory instead (emu.h) */
    const unsigned all = emu_plant_all_rules();
    ck_assert_msg(emu_plant_run(i, all & ~emu_plant_rule(i), msg, sizeof msg),
                  "plant \"%s\" fails even without its rule: %s", emu_plant_name(i), msg);
    ck_assert_msg(!emu_plant_run(i, all, msg, sizeof msg), "plant \"%s\" passes under its rule", emu_plant_name(i));
}
END_TEST

/* The controls of EMU_RULE_SMEM_OPTIN and EMU_RULE_BOUNDS: the same 64 KB, asked for, and the same 512 threads,
 * declared in launch bounds, run. */
START_TEST(test_smem_opted_in_runs) {
    char msg[256];
    ck_assert_msg(emu_plant_smem_opted_in(msg, sizeof msg), "%s", msg);
}
END_TEST

START_TEST(test_bounded_block_runs) {
    char msg[256];
    ck_assert_msg(emu_plant_bounded_block(msg, sizeof msg), "%s", msg);
}
END_TEST

/* A grid sized by the SM count, on a launcher that assumes a small device: right at the 4 SMs the emulator
 * reports by default, wrong at an H200's 132. Each in its own process (the SM count is read once). */
START_TEST(test_grid_right_at_4_sms) {
    char msg[256];
    ck_assert_msg(emu_plant_grid_sized_by_sms(4, msg, sizeof msg), "%s", msg);
}
END_TEST

START_TEST(test_grid_wrong_at_132_sms) {
    char msg[256];
    ck_assert_msg(!emu_plant_grid_sized_by_sms(132, msg, sizeof msg), "the planted grid passed: %s", msg);
}
END_TEST

START_TEST(test_refused_launch_named) {
    char msg[512];
    ck_assert_msg(emu_plant_refused_launch_named(msg, sizeof msg) == 0, "%s", msg);
}
END_TEST

Suite *emu_rules_suite(void) {
    Suite *s = suite_create("emu_rules");
    TCase *tc = harness_tcase("plants", 30);
    tcase_add_loop_test(tc, test_rule_catches_its_plant, 0, emu_plant_count());
    tcase_add_test(tc, test_smem_opted_in_runs);
    tcase_add_test(tc, test_bounded_block_runs);
    tcase_add_test(tc, test_grid_right_at_4_sms);
    tcase_add_test(tc, test_grid_wrong_at_132_sms);
    suite_add_tcase(s, tc);
    TCase *debug = harness_tcase("debug", 30);
    tcase_add_test(debug, test_refused_launch_named);
    suite_add_tcase(s, debug);
    return s;
}
