/* test_kernels_emu.c — every CUDA kernel version on the CPU emulator (kernels/emu/emu.h), on small and odd shapes,
 * against its CPU twin with gpucheck's own validation code and bounds; and the emulator's stream capture and
 * graphs against the rules gpucheck checks on a GPU. Under the sanitizers this also catches the kernels'
 * out-of-bounds reads and writes. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>

#include "harness.h"

int gc_emu_run(const char *family, uint64_t seed, int *n_rows, char *msg, size_t msg_size);

static void run_family(const char *family, uint64_t seed) {
    char msg[1500]; /* Check caps a failure message near 4 KB */
    int n_rows = 0;
    int fails = gc_emu_run(family, seed, &n_rows, msg, sizeof msg);
    ck_assert_msg(fails >= 0, "unknown kernel family %s", family);
    ck_assert_msg(n_rows > 0, "family %s validated nothing", family);
    ck_assert_msg(fails == 0, "family %s: %d of %d rows failed:\n%s", family, fails, n_rows, msg);
}

START_TEST(test_matvec) { run_family("matvec", 11); }
END_TEST

START_TEST(test_norm) { run_family("norm", 12); }
END_TEST

START_TEST(test_rope_kv) { run_family("rope_kv", 13); }
END_TEST

START_TEST(test_attention) { run_family("attention", 14); }
END_TEST

START_TEST(test_deltanet) { run_family("deltanet", 15); }
END_TEST

START_TEST(test_sample) { run_family("sample", 16); }
END_TEST

/* The emulator's stream capture and graphs (kernels/emu/emu_rt.h): recorded, not run; arguments as at the launch;
 * updates; and the controls, each a capture that must end invalidated (a synchronous copy among them). */
START_TEST(test_graph) { run_family("graph", 17); }
END_TEST

Suite *kernels_emu_suite(void) {
    Suite *s = suite_create("kernels_emu");
    TCase *tc = harness_tcase("families", 120);
    tcase_add_test(tc, test_matvec);
    tcase_add_test(tc, test_norm);
    tcase_add_test(tc, test_rope_kv);
    tcase_add_test(tc, test_attention);
    tcase_add_test(tc, test_deltanet);
    tcase_add_test(tc, test_sample);
    tcase_add_test(tc, test_graph);
    suite_add_tcase(s, tc);
    return s;
}
