/* test_kernels_emu.c — every CUDA kernel version on the CPU emulator (kernels/emu/emu.h), on small and odd shapes,
 * against its CPU twin with gpucheck's own validation code and bounds; and the emulator's stream capture and
 * graphs against the rules gpucheck checks on a GPU. Every family runs under two thread orders (emu.h's
 * EMU_RULE_ORDER: a read that no barrier orders comes out wrong under some order; a failure names its seed), and
 * once more with grids sized for an H200's 132 multiprocessors. Under the sanitizers this also catches the
 * kernels' out-of-bounds reads and writes. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>

#include "harness.h"

int gc_emu_run(const char *family, uint64_t seed, int sm_count, int *n_rows, char *msg, size_t msg_size);

/* The runs of every family: two seeds (inputs and thread order) on the emulator's default 4 SMs, and a third on
 * 132 SMs. Each in its own process, Check forking every iteration: the SM count is read once a process. */
static const struct {
    uint64_t seed_offset;
    int sm_count;
} runs[] = {{0, 0}, {1000, 0}, {2000, 132}};
#define N_RUNS (int)(sizeof runs / sizeof runs[0])

static void run_family(const char *family, uint64_t seed, int run) {
    char msg[1500]; /* Check caps a failure message near 4 KB */
    int n_rows = 0;
    int fails = gc_emu_run(family, seed + runs[run].seed_offset, runs[run].sm_count, &n_rows, msg, sizeof msg);
    ck_assert_msg(fails >= 0, "unknown kernel family %s", family);
    ck_assert_msg(n_rows > 0, "family %s validated nothing", family);
    ck_assert_msg(fails == 0, "family %s: %d of %d rows failed, %s", family, fails, n_rows, msg);
}

START_TEST(test_matvec) { run_family("matvec", 11, _i); }
END_TEST

START_TEST(test_norm) { run_family("norm", 12, _i); }
END_TEST

START_TEST(test_rope_kv) { run_family("rope_kv", 13, _i); }
END_TEST

START_TEST(test_attention) { run_family("attention", 14, _i); }
END_TEST

START_TEST(test_kv_quant) { run_family("kv_quant", 18, _i); }
END_TEST

START_TEST(test_deltanet) { run_family("deltanet", 15, _i); }
END_TEST

START_TEST(test_sample) { run_family("sample", 16, _i); }
END_TEST

/* The emulator's stream capture and graphs (kernels/emu/emu_rt.h): recorded, not run; arguments as at the launch;
 * updates; and the controls, each a capture that must end invalidated (a synchronous copy among them). */
START_TEST(test_graph) { run_family("graph", 17, _i); }
END_TEST

Suite *kernels_emu_suite(void) {
    Suite *s = suite_create("kernels_emu");
    TCase *tc = harness_tcase("families", 120);
    tcase_add_loop_test(tc, test_matvec, 0, N_RUNS);
    tcase_add_loop_test(tc, test_norm, 0, N_RUNS);
    tcase_add_loop_test(tc, test_rope_kv, 0, N_RUNS);
    tcase_add_loop_test(tc, test_kv_quant, 0, N_RUNS);
    tcase_add_loop_test(tc, test_attention, 0, N_RUNS);
    tcase_add_loop_test(tc, test_deltanet, 0, N_RUNS);
    tcase_add_loop_test(tc, test_sample, 0, N_RUNS);
    tcase_add_loop_test(tc, test_graph, 0, N_RUNS);
    suite_add_tcase(s, tc);
    return s;
}
