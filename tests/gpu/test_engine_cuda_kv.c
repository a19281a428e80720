/* test_engine_cuda_kv.c — the CUDA backend (on the kernels' emulator) with a q8 or q4 KV cache against the CPU
 * backend with the same cache format: a prefill and then decode steps, one token at a time, on the same tokens;
 * each bound with its control (the other format on the CPU side, which the bound must reject). The kernels
 * themselves, rows byte for byte the CPU's: gpucheck's kv_quant family (tests/unit/test_kernels_emu.c). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit/engine_compare.h"
#include "engine_target.h"
#include "fixtures.h"
#include "harness.h"
#include "sampler.h"

#define N_PROMPT 8

/* logits[(N_PROMPT + n_decode), V] of the engine on dir (CUDA or CPU, KV cache f): the prompt's prefill, then
 * path[n_decode] one decode step at a time. path NULL: the greedy tokens are chosen here and written to chosen. */
static float *run(const char *dir, int cuda, kv_format f, int n_decode, const int *path, int *chosen) {
    engine_options o = engine_defaults();
    o.cuda = cuda;
    o.kv = f;
    return engine_decode_logits(dir, &o, N_PROMPT, n_decode, path, chosen);
}

/* Why the bound. Both backends widen the same bf16 weights exactly and keep float32 activations, so the keys and
 * values each writes differ by float rounding alone (≈1e-6 relative: the sums' orders), and both store them by the
 * same encoder (rows byte for byte kv_row_store's, check_kv_quant.cu): the two caches hold the same codes except
 * where that rounding straddles a code's boundary, and such a code is one step off (q8: max/127 of its block; q4:
 * max/7). So the logits agree to float rounding, not to the format's own error against a float cache (the CPU
 * engine's q8 vs f32: ≤ 4.6e-3, q4: ≤ 8.9e-2, test_engine_kv.c), nor to the bf16 cache's 1e-2 (test_engine_cuda.c).
 * Measured (largest |Δlogit| over the CPU side's largest |logit|): micro-tied q8 4.5e-6, q4 1.6e-6; the embedded
 * model 6.9e-7 and 6.7e-7. 1e-4 leaves 20× for rare one-step codes; the controls, the CUDA cache against the CPU's
 * other format, measure 2.5e-2 to 9.8e-2, 250× above it. */
#define BOUND_Q8 1e-4
#define BOUND_Q4 1e-4

static const struct {
    const char *preset; /* NULL: the embedded model */
    uint64_t seed;
    int n_decode;
} models[] = {{"micro-tied", 52, 40}, {NULL, 0, 16}};

START_TEST(test_cuda_cache_matches_cpu_format) {
    char dir[512];
    const char *path_dir = dir;
    if (models[_i].preset)
        write_checkpoint(dir, sizeof dir, models[_i].preset, 0, models[_i].seed, DTYPE_BF16);
    else
        path_dir = fixture_embedded_model();
    ck_assert_msg(path_dir != NULL, "the embedded model is missing");
    const int n = models[_i].n_decode;
    int *path = malloc((size_t)n * sizeof *path);
    float *cpu8 = run(path_dir, 0, KV_Q8, n, NULL, path), *cpu4 = run(path_dir, 0, KV_Q4, n, path, NULL);
    float *gpu8 = run(path_dir, 1, KV_Q8, n, path, NULL), *gpu4 = run(path_dir, 1, KV_Q4, n, path, NULL);
    engine e;
    sp_error err;
    ck_assert(engine_open(&e, path_dir, NULL, &err) == 0);
    const size_t count = (size_t)(N_PROMPT + n) * e.cfg.vocab_size;
    engine_close(&e);
    const double g8 = rel_error(gpu8, cpu8, count), g4 = rel_error(gpu4, cpu4, count);
    const double c8 = rel_error(gpu8, cpu4, count), c4 = rel_error(gpu4, cpu8, count);
    const char *name = models[_i].preset ? models[_i].preset : "embedded";
    printf("cuda kv cache vs cpu, %s: q8 %.3g (bound %g, control q8 vs cpu q4 %.3g), q4 %.3g (bound %g, control q4 "
           "vs cpu q8 %.3g)\n",
           name, g8, BOUND_Q8, c8, g4, BOUND_Q4, c4);
    ck_assert_msg(g8 <= BOUND_Q8, "%s: the CUDA q8 cache off the CPU's by %.3g (at most %g)", name, g8, BOUND_Q8);
    ck_assert_msg(g4 <= BOUND_Q4, "%s: the CUDA q4 cache off the CPU's by %.3g (at most %g)", name, g4, BOUND_Q4);
    ck_assert_msg(c8 > BOUND_Q8, "%s: control: the CUDA q8 cache within q8's bound of the CPU's q4 (%.3g)", name, c8);
    ck_assert_msg(c4 > BOUND_Q4, "%s: control: the CUDA q4 cache within q4's bound of the CPU's q8 (%.3g)", name, c4);
    free(path), free(cpu8), free(cpu4), free(gpu8), free(gpu4);
    if (models[_i].preset) harness_rmtree(dir);
}
END_TEST

/* What the CUDA backend refuses: a float32 cache (bf16 is its element), by name; q4 of an odd head width is
 * refused before any backend is built, as on the CPU. */
START_TEST(test_cuda_refuses_f32_cache) {
    char dir[512];
    write_checkpoint(dir, sizeof dir, "micro-tied", 0, 53, DTYPE_BF16);
    engine e;
    sp_error err;
    engine_options o = engine_defaults();
    o.cuda = 1;
    o.kv = KV_F32;
    ck_assert_int_eq(engine_open(&e, dir, &o, &err), -1);
    ck_assert_msg(strstr(err.msg, "--kv-cache f32 is the CPU engine's"), "%s", err.msg);
    o.kv = KV_BF16;
    ck_assert_msg(engine_open(&e, dir, &o, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(e.kv.format, KV_BF16);
    engine_close(&e);
    harness_rmtree(dir);
}
END_TEST

Suite *engine_cuda_kv_suite(void) {
    Suite *s = suite_create("engine_cuda_kv");
    TCase *tc = harness_tcase("kv", 300);
    tcase_add_loop_test(tc, test_cuda_cache_matches_cpu_format, 0, (int)(sizeof models / sizeof models[0]));
    tcase_add_test(tc, test_cuda_refuses_f32_cache);
    suite_add_tcase(s, tc);
    return s;
}
