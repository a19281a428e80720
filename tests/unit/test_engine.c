/* test_engine.c — the CPU engine against the reference: prefill and MTP outputs in float32 and bf16 weights, the
 * malformed checkpoints refused with the reference's message, and every method's greedy canary and beam search.
 * The interface contract itself is in test_target.c. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "broken_checkpoints.h"
#include "engine_compare.h"
#include "engine_mtp.h"
#include "engine_target.h"
#include "fixtures.h"
#include "genmodel/randmodel.h"
#include "harness.h"
#include "method.h"
#include "reference_target.h"
#include "target_stepper.h"

/* Why the bounds: both sides read the same weight values (bf16 weights are
 * widened to float32 exactly on both sides) and run the same float32 ops in
 * the same order except inside the products. In the f32 mode the engine's
 * products add in the reference's order too (cpu/gemm.h's in-order
 * kernel), so the two agree to the bit, and TOL_F32 only leaves room for a
 * compiler that contracts differently. With bf16 weights its kernels add in
 * lanes: each dot product of k terms moves by up to about k·2⁻²⁴ of
 * Σ|w·x|, which the layers carry along. TOL_BF16 sits above the largest gap
 * measured (the random micro-deep checkpoint's logits: uniform weights
 * amplify it) and far below what the controls show: the same checkpoint
 * with its weights rounded to bf16 (the figures are in
 * docs/verification.md). */
#define TOL_F32 1e-5
#define TOL_BF16 1e-4

static void compare_prefill(const ref_outputs *r, const char *dir, int f32) {
    engine_options o = engine_defaults();
    o.f32_weights = f32;
    const prefill_gap g = measure_engine(r, dir, &o);
    const double tol = f32 ? TOL_F32 : TOL_BF16;
    ck_assert_msg(g.logits <= tol && g.hidden <= tol && g.mtp <= tol,
                  "%s (%s weights): logits off by %.3g, hidden states by %.3g, MTP logits by %.3g (at most %g)", dir,
                  f32 ? "f32" : "bf16", g.logits, g.hidden, g.mtp, tol);
}

/* The checkpoints the engine is compared on: every preset the tests use,
 * stored in float32 and in bf16 (micro in f16 too), micro and small with
 * their MTP module and without it (the drafts have none; micro-tied and
 * micro-deep differ from micro in their trunk, not in the module). The
 * positions: two prefill chunks and five KV blocks (70), except on the
 * small presets, whose reference forward is most of this suite's time under
 * the sanitizers: there one checkpoint (bf16, with the module) is carried
 * through every chunk and block in both modes, and the others — which
 * differ from it in how the weights are stored or in the module, not in
 * what a longer prefill exercises — only past one KV block (24). */
static const struct {
    const char *preset;
    int mtp;
    dtype_t dtype;
    int positions;
} checkpoints[] = {
    {"micro", 1, DTYPE_F32, 70},       {"micro", 1, DTYPE_BF16, 70},       {"micro", 0, DTYPE_F32, 70},
    {"micro", 0, DTYPE_BF16, 70},      {"micro", 1, DTYPE_F16, 70},        {"micro-tied", 1, DTYPE_F32, 70},
    {"micro-tied", 1, DTYPE_BF16, 70}, {"micro-deep", 1, DTYPE_F32, 70},   {"micro-deep", 1, DTYPE_BF16, 70},
    {"micro-draft", 0, DTYPE_F32, 70}, {"micro-draft", 0, DTYPE_BF16, 70}, {"small", 1, DTYPE_F32, 24},
    {"small", 1, DTYPE_BF16, 70},      {"small", 0, DTYPE_F32, 24},        {"small", 0, DTYPE_BF16, 24},
    {"small-draft", 0, DTYPE_F32, 24}, {"small-draft", 0, DTYPE_BF16, 24},
};

/* Every checkpoint in the f32 mode (the reference's floats: TOL_F32); a
 * bf16 checkpoint in the bf16 mode too (the same values, products in
 * lanes: TOL_BF16). An f32 or f16 checkpoint in the bf16 mode is rounded:
 * that is the control below, not a case that must pass. */
START_TEST(test_prefill_matches_reference) {
    char dir[512];
    write_checkpoint(dir, sizeof dir, checkpoints[_i].preset, checkpoints[_i].mtp, 71 + (uint64_t)_i,
                     checkpoints[_i].dtype);
    ref_outputs r;
    ref_outputs_build(&r, dir, checkpoints[_i].positions);
    compare_prefill(&r, dir, 1);
    if (checkpoints[_i].dtype == DTYPE_BF16) compare_prefill(&r, dir, 0);
    ref_outputs_free(&r);
    harness_rmtree(dir);
}
END_TEST

/* The controls: the engine on the same weights rounded to bf16 — by the
 * generator, or by the engine's own bf16 mode reading an f32 checkpoint —
 * must be told apart from the reference on the f32 weights. */
START_TEST(test_bf16_rounding_is_told_apart) {
    char f32_dir[512], bf16_dir[512];
    write_checkpoint(f32_dir, sizeof f32_dir, "micro", 1, 71, DTYPE_F32);
    write_checkpoint(bf16_dir, sizeof bf16_dir, "micro", 1, 71, DTYPE_BF16);
    ref_outputs r;
    ref_outputs_build(&r, f32_dir, N_PREFILL);
    const char *engine_dirs[2] = {bf16_dir, f32_dir};
    for (int k = 0; k < 2; k++) {
        const engine_options o = engine_defaults();
        const prefill_gap g = measure_engine(&r, engine_dirs[k], &o);
        ck_assert_msg(g.logits > TOL_BF16 && g.hidden > TOL_BF16 && g.mtp > TOL_BF16,
                      "control %d: weights rounded to bf16 give logits off by %.3g, hidden states by %.3g, MTP logits "
                      "by %.3g: within %g",
                      k, g.logits, g.hidden, g.mtp, TOL_BF16);
    }
    ref_outputs_free(&r);
    harness_rmtree(bf16_dir);
    harness_rmtree(f32_dir);
}
END_TEST

/* The embedded model is stored in bf16: both modes must pass. */
START_TEST(test_embedded_model_matches_reference) {
    ref_outputs r;
    ref_outputs_build(&r, fixture_embedded_model(), N_PREFILL);
    compare_prefill(&r, fixture_embedded_model(), 0);
    compare_prefill(&r, fixture_embedded_model(), 1);
    ref_outputs_free(&r);
}
END_TEST

/* So is the course model: 16 layers (12 DeltaNet, 4 attention) and its MTP module over two prefill chunks and
 * five KV blocks, held to the same bounds — depth does not loosen them. */
START_TEST(test_course_model_matches_reference) {
    ref_outputs r;
    ref_outputs_build(&r, fixture_course_model(), N_PREFILL);
    compare_prefill(&r, fixture_course_model(), 0);
    compare_prefill(&r, fixture_course_model(), 1);
    ref_outputs_free(&r);
}
END_TEST

/* ---- every method through the engine ------------------------------------------------ */

#define N_TOKENS 40

/* In float32 weights (loop index 1) the engine's greedy tokens are also the
 * reference's: the checkpoints are float32 on disk. In bf16 weights (0) the
 * weights are rounded, so only the engine's own oracle applies. */
START_TEST(test_methods_match_the_greedy_oracle) {
    fixture_model tf, df;
    fixture_model_open(&tf, "micro", 73, NULL);
    fixture_model_open(&df, "micro-draft", 74, NULL);
    engine_options o = engine_defaults();
    o.f32_weights = _i;
    static engine_parts ep; /* large: the engines' tables and buffers */
    engine_parts_open(&ep, &tf, &o, &df, &o);
    /* every method at temperature 0: MTP with argmax and with sampled drafts;
     * draft and MTP trees of top ranks (the greedy rule) or drawn without
     * replacement, static or dynamic (re-stepped along other branches);
     * Medusa's top-rank tree (the greedy rule) and children drawn i.i.d.
     * (here all alike: duplicate siblings in one verify pass) or without
     * replacement */
    static const char *const flags[] = {"--method greedy",
                                        "--method sample --temperature 0",
                                        "--method spec --k 4 --temperature 0",
                                        "--method spec --tree-shape 3,2,1 --temperature 0",
                                        "--method spec --tree-shape 2,2 --temperature 0 --rule exact-norepl",
                                        "--method mtp --tree-shape 2,2,1 --temperature 0",
                                        "--method spec --tree-budget 8 --k 4 --temperature 0",
                                        "--method mtp --tree-budget 7 --k 3 --temperature 0",
                                        "--method mtp --k 3 --temperature 0",
                                        "--method mtp --k 4 --temperature 0 --mtp-sample",
                                        "--method medusa --temperature 0",
                                        "--method medusa --temperature 0 --rule exact",
                                        "--method medusa --temperature 0 --rule exact-norepl",
                                        "--method lookup --k 4 --ngram 2 --temperature 0"};
    const int V = tf.m.cfg.vocab_size;
    /* prompts of 1 to 5 tokens, and one longer than a prefill chunk: the proposers' first commit (MTP's real
     * steps over the whole prompt) then spans several of the engine's passes */
    for (int p = 0; p < 7; p++) {
        int prompt[ENGINE_PREFILL_CHUNK + 10], n = p < 6 ? 1 + p % 5 : ENGINE_PREFILL_CHUNK + 10;
        int want[N_TOKENS], want_ref[N_TOKENS];
        for (int i = 0; i < n; i++) prompt[i] = (p * 7 + i * 3 + 1) % V;
        engine_greedy_oracle(&ep.t, prompt, n, N_TOKENS, want);
        fixture_greedy_oracle(&tf.m, prompt, n, N_TOKENS, want_ref);
        if (o.f32_weights)
            ck_assert_msg(memcmp(want, want_ref, sizeof want) == 0, "prompt %d: the engine's greedy tokens differ", p);
        char what[32];
        snprintf(what, sizeof what, "prompt %d", p);
        assert_methods_give(&ep.parts, flags, (int)(sizeof flags / sizeof flags[0]), prompt, n, want, N_TOKENS, what);
    }
    engine_parts_close(&ep);
    fixture_model_close(&df);
    fixture_model_close(&tf);
}
END_TEST

/* Both sides read the same weights: a float32 checkpoint in the f32 mode
 * (loop index 1), a bf16 one in the bf16 mode (0). */
START_TEST(test_beam_matches_reference) {
    char dir[512];
    write_checkpoint(dir, sizeof dir, "micro", 1, 75, _i ? DTYPE_F32 : DTYPE_BF16);
    model m;
    engine e;
    sp_error err;
    ck_assert_msg(model_load(&m, dir, &err) == 0, "%s", err.msg);
    engine_options o = engine_defaults();
    o.f32_weights = _i;
    ck_assert_msg(engine_open(&e, dir, &o, &err) == 0, "%s", err.msg);
    decode_target et, rt;
    engine_target_build(&et, &e);
    reference_target_build(&rt, &m);
    const int prompt[3] = {3, 1, 4};
    beam_options bo = beam_defaults();
    bo.num_beams = 4;
    bo.num_return = 3;
    bo.max_new_tokens = 20;
    bo.stop_at_eos = 0;
    beam_output a, b;
    ck_assert_msg(beam_run(&rt, prompt, 3, &bo, &a, &err) == 0, "%s", err.msg);
    ck_assert_msg(beam_run(&et, prompt, 3, &bo, &b, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(a.n_best, b.n_best);
    for (int i = 0; i < a.n_best; i++) {
        ck_assert_int_eq(a.best[i].n, b.best[i].n);
        ck_assert(memcmp(a.best[i].tokens, b.best[i].tokens, (size_t)a.best[i].n * sizeof(int)) == 0);
        ck_assert_msg(fabs(a.best[i].score - b.best[i].score) < 1e-4, "hypothesis %d: score %.8f vs %.8f", i,
                      a.best[i].score, b.best[i].score);
    }
    ck_assert_int_eq(b.stats.peak_live_beams, 4);
    ck_assert_int_gt(b.stats.deltanet_copies, 0);
    beam_output_free(&a);
    beam_output_free(&b);
    target_memory mem;
    et.memory(&et, NULL, 0, &mem);
    ck_assert_int_eq(mem.kv_blocks_in_use, 0);
    rt.release(&rt);
    et.release(&et);
    engine_close(&e);
    model_free(&m);
    harness_rmtree(dir);
}
END_TEST

/* ---- malformed checkpoints --------------------------------------------------------- */

/* Every malformed checkpoint of the catalogue, which the reference refuses,
 * the engine refuses in either mode with the very same message: both run
 * base/checkpoint.h's checks, and this holds the engine's own reads of the
 * values to them (a bf16 matrix checked as mapped in the bf16 mode, every
 * other tensor converted). */
START_TEST(test_broken_checkpoints_are_refused_alike) {
    const broken_checkpoint *b = &broken_checkpoints[_i];
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    b->make(dir);
    model m;
    sp_error want = {{0}}, got = {{0}};
    ck_assert_msg(model_load(&m, dir, &want) == -1, "%s: the reference accepts it", b->name);
    for (int f32 = 0; f32 < 2; f32++) {
        engine e;
        engine_options o = engine_defaults();
        o.f32_weights = f32;
        ck_assert_msg(engine_open(&e, dir, &o, &got) == -1, "%s: the engine (%s mode) accepts it", b->name,
                      f32 ? "f32" : "bf16");
        ck_assert_str_eq(got.msg, want.msg);
    }
    harness_rmtree(dir);
}
END_TEST

/* A float32 weight within half a bf16 step of FLT_MAX is valid (the
 * reference and the engine's f32 mode take it) but rounds to infinity in
 * bf16: the engine's bf16 mode refuses it rather than compute with an
 * infinity. The control: the largest value that stays finite is taken. */
START_TEST(test_weight_that_bf16_cannot_hold) {
    const float values[2] = {FLT_MAX, 3.0e38f}; /* bf16's largest finite value is about 3.39e38 */
    for (int v = 0; v < 2; v++) {
        char dir[256];
        harness_tmpdir(dir, sizeof dir);
        broken_write_with_value(dir, DTYPE_F32, values[v]);
        model m;
        sp_error err;
        ck_assert_msg(model_load(&m, dir, &err) == 0, "%s", err.msg);
        model_free(&m);
        for (int f32 = 1; f32 >= 0; f32--) {
            engine e;
            engine_options o = engine_defaults();
            o.f32_weights = f32;
            const int refused = engine_open(&e, dir, &o, &err) != 0;
            if (!refused) engine_close(&e);
            if (f32 || v == 1) {
                ck_assert_msg(!refused, "%g in %s mode: %s", values[v], f32 ? "f32" : "bf16", err.msg);
            } else {
                ck_assert_msg(refused, "FLT_MAX taken in the bf16 mode");
                ck_assert_ptr_nonnull(strstr(err.msg, BROKEN_VALUE_TENSOR));
                ck_assert_ptr_nonnull(strstr(err.msg, "rounds to infinity in bf16"));
                ck_assert_ptr_nonnull(strstr(err.msg, "--dtype f32"));
            }
        }
        harness_rmtree(dir);
    }
}
END_TEST

/* The engine's prefill logits and hidden states and its MTP module's logits on dir, at a thread count. */
static void outputs_at(const char *dir, int threads, int f32, float *logits, float *hidden, float *mtp) {
    engine e;
    sp_error err;
    engine_options o = engine_defaults();
    o.threads = threads, o.f32_weights = f32;
    ck_assert_msg(engine_open(&e, dir, &o, &err) == 0, "%s", err.msg);
    const int V = e.cfg.vocab_size;
    int tokens[N_PREFILL];
    for (int i = 0; i < N_PREFILL; i++) tokens[i] = prefill_token(i, V);
    decode_target t;
    engine_target_build(&t, &e);
    prefill_rows(&t, tokens, N_PREFILL, logits, hidden);
    t.release(&t);
    stepper s;
    ck_assert(engine_mtp_stepper_build(&s, &e, &err) == 0);
    for (int i = 0; i < N_MTP; i++)
        ck_assert(s.step(&s, &tokens[i + 1], hidden + (size_t)i * e.cfg.hidden_size, 1, mtp + (size_t)i * V, NULL,
                         &err) == 0);
    s.release(&s);
    engine_close(&e);
}

/* The thread count changes no bit: every product gives a row the same bits on any split of W's rows, and the
 * cores compute each node, head and channel alone (cpu/gemm.h, cpu/layers.c). 2 and 3 threads on a prefill of
 * 70 positions (passes of 64 and 6: ranges of every size, more threads than some layers have heads) and MTP
 * steps, in both modes, against 1 thread — whose passes enter no thread team at all (cpu/team.h). */
START_TEST(test_thread_count_changes_no_bit) {
    char dir[512];
    write_checkpoint(dir, sizeof dir, "small", 1, 81, DTYPE_BF16);
    model_config c;
    sp_error err;
    ck_assert(randmodel_preset("small", &c, &err) == 0);
    const size_t n_logits = (size_t)N_PREFILL * c.vocab_size, n_hidden = (size_t)N_PREFILL * c.hidden_size,
                 n_mtp = (size_t)N_MTP * c.vocab_size;
    float *base[3], *other[3];
    const size_t sizes[3] = {n_logits, n_hidden, n_mtp};
    for (int k = 0; k < 3; k++) base[k] = calloc(sizes[k], sizeof(float)), other[k] = calloc(sizes[k], sizeof(float));
    for (int f32 = 0; f32 < 2; f32++) {
        outputs_at(dir, 1, f32, base[0], base[1], base[2]);
        for (int threads = 2; threads <= 3; threads++) {
            outputs_at(dir, threads, f32, other[0], other[1], other[2]);
            static const char *what[3] = {"prefill logits", "hidden states", "MTP logits"};
            for (int k = 0; k < 3; k++)
                ck_assert_msg(memcmp(base[k], other[k], sizes[k] * sizeof(float)) == 0,
                              "%s mode, %d threads: the %s differ from 1 thread's", f32 ? "f32" : "bf16", threads,
                              what[k]);
        }
    }
    for (int k = 0; k < 3; k++) free(base[k]), free(other[k]);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_missing_directory_and_bad_options) {
    fixture_model f;
    fixture_model_open(&f, "micro", 76, NULL);
    char missing[600];
    snprintf(missing, sizeof missing, "%s/nothing-here", f.dir);
    model m;
    engine e;
    sp_error a, b;
    ck_assert_int_eq(model_load(&m, missing, &a), -1);
    ck_assert_int_eq(engine_open(&e, missing, NULL, &b), -1);
    ck_assert_str_eq(a.msg, b.msg);
    engine_options o = engine_defaults();
    o.threads = 0;
    ck_assert_int_eq(engine_open(&e, f.dir, &o, &b), -1);
    ck_assert_ptr_nonnull(strstr(b.msg, "threads"));
    fixture_model_close(&f);
}
END_TEST

Suite *engine_suite(void) {
    Suite *s = suite_create("engine");
    TCase *tc = harness_tcase("against the reference", 120);
    tcase_add_loop_test(tc, test_prefill_matches_reference, 0, (int)(sizeof checkpoints / sizeof checkpoints[0]));
    tcase_add_test(tc, test_bf16_rounding_is_told_apart);
    if (fixture_embedded_model())
        tcase_add_test(tc, test_embedded_model_matches_reference);
    else
        harness_skip("engine", "embedded_model_matches_reference", "models/tiny-shakespeare has no weights here");
    if (fixture_course_model())
        tcase_add_test(tc, test_course_model_matches_reference);
    else
        harness_skip("engine", "course_model_matches_reference", "models/course has no weights here");
    tcase_add_loop_test(tc, test_methods_match_the_greedy_oracle, 0, 2);
    tcase_add_loop_test(tc, test_beam_matches_reference, 0, 2);
    tcase_add_loop_test(tc, test_broken_checkpoints_are_refused_alike, 0, n_broken_checkpoints);
    tcase_add_test(tc, test_weight_that_bf16_cannot_hold);
    tcase_add_test(tc, test_missing_directory_and_bad_options);
    tcase_add_test(tc, test_thread_count_changes_no_bit);
    suite_add_tcase(s, tc);
    return s;
}
