/* test_engine_cuda.c — the engine's CUDA backend (optimized/cuda/) on the kernels' CPU emulator: its outputs
 * against the reference's, every method against its greedy oracle, and the shapes the kernels cannot take
 * refused with a message. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "unit/engine_compare.h"
#include "fixtures.h"
#include "harness.h"
#include "method.h"
#include "target_stepper.h"

static engine_options cuda_options(void) {
    engine_options o = engine_defaults();
    o.cuda = 1;
    return o;
}

/* Why the bound: the CUDA backend reads the same bf16 weights as the
 * reference (widened exactly) and keeps its activations in float32 (kn_matvec's
 * default versions, v4 and b3, do not round them), but holds the KV cache in
 * bf16 (each key and value rounded by up to 2⁻⁹ of itself) and adds in the
 * kernels' orders. 1e-2 (relative to the largest value) sits between the gaps
 * measured on the emulator and the control's below: 2.3× above the worst
 * case, 2.7× below the control (the figures are in docs/verification.md). */
#define TOL_CUDA 1e-2

static prefill_gap cuda_gap(const ref_outputs *r, const char *dir) {
    const engine_options o = cuda_options();
    return measure_engine(r, dir, &o);
}

/* The host path a GPU runs (weights uploaded, the pass as kernel launches, bf16 KV cache pages, DeltaNet states
 * through the kernels' scratch into the engine's slots) against the reference's logits, hidden states and MTP
 * logits. */
START_TEST(test_prefill_matches_reference) {
    char dir[512];
    write_checkpoint(dir, sizeof dir, "micro-tied", 1, 81, DTYPE_BF16);
    ref_outputs r;
    ref_outputs_build(&r, dir, N_PREFILL);
    const prefill_gap g = cuda_gap(&r, dir);
    ck_assert_msg(g.logits <= TOL_CUDA && g.hidden <= TOL_CUDA && g.mtp <= TOL_CUDA,
                  "micro-tied: logits off by %.3g, hidden states by %.3g, MTP logits by %.3g (at most %g)", g.logits,
                  g.hidden, g.mtp, TOL_CUDA);
    ref_outputs_free(&r);
    harness_rmtree(dir);
}
END_TEST

/* Past one KV block; micro-tied above covers two prefill chunks and five blocks. */
START_TEST(test_embedded_model_matches_reference) {
    ref_outputs r;
    ref_outputs_build(&r, fixture_embedded_model(), 24);
    const prefill_gap g = cuda_gap(&r, fixture_embedded_model());
    ck_assert_msg(g.logits <= TOL_CUDA && g.hidden <= TOL_CUDA && g.mtp <= TOL_CUDA,
                  "embedded model: logits off by %.3g, hidden states by %.3g, MTP logits by %.3g (at most %g)",
                  g.logits, g.hidden, g.mtp, TOL_CUDA);
    ref_outputs_free(&r);
}
END_TEST

/* The control: float32 weights on the reference's side, rounded to bf16 on the engine's. */
START_TEST(test_bf16_rounding_is_told_apart) {
    char dir[512];
    write_checkpoint(dir, sizeof dir, "micro-tied", 1, 81, DTYPE_F32);
    ref_outputs r;
    ref_outputs_build(&r, dir, N_PREFILL);
    const prefill_gap g = cuda_gap(&r, dir);
    ck_assert_msg(g.logits > TOL_CUDA && g.hidden > TOL_CUDA,
                  "control: weights rounded to bf16 give logits off by %.3g, hidden states by %.3g: within %g",
                  g.logits, g.hidden, TOL_CUDA);
    ref_outputs_free(&r);
    harness_rmtree(dir);
}
END_TEST

/* The processed distributions of a verify pass come from the device (kn_probs): they must be sampler_probs of the
 * same pass's raw logits, to within the rounding kn_sample.h allows (an exp or a cumulative sum at a cut), for
 * temperature, top-k, top-p and min-p together. The control: the same check against the logits at another
 * temperature fails. */
START_TEST(test_device_distributions_are_the_samplers) {
    engine e;
    sp_error err;
    const engine_options o = cuda_options();
    ck_assert_msg(engine_open(&e, fixture_embedded_model(), &o, &err) == 0, "%s", err.msg);
    decode_target t;
    engine_target_build(&t, &e);
    const int V = e.cfg.vocab_size, prompt[5] = {40, 17, 3, 99, 250};
    token_tree tree;
    tree_build(&tree, V, 4);
    tree_reset(&tree, 7, CHILDREN_IID);
    tree_add(&tree, 0, 11), tree_add(&tree, 0, 12), tree_add(&tree, 1, 13);
    float *raw = calloc((size_t)4 * V, sizeof(float)), *probs = calloc((size_t)4 * V, sizeof(float));
    float *want = calloc((size_t)V, sizeof(float));
    const sampler_params sp = {0.8f, 40, 0.9f, 0.02f};
    for (int with_sp = 0; with_sp < 2; with_sp++) { /* the same pass twice: raw logits, then distributions */
        const int seq = t.seq_open(&t, &err);
        ck_assert_msg(seq >= 0 && t.prefill(&t, seq, prompt, 5, NULL, NULL, &err) == 0, "%s", err.msg);
        const target_job job = {seq, &tree, with_sp ? probs : raw, NULL};
        ck_assert_msg(t.verify(&t, &job, 1, with_sp ? &sp : NULL, &err) == 0, "%s", err.msg);
        ck_assert(t.commit(&t, seq, 0, &err) == 0);
        t.seq_close(&t, seq);
    }
    for (int control = 0; control < 2; control++) {
        sampler_params other = sp;
        if (control) other.temperature = 1.0f;
        double worst = 0;
        for (int i = 0; i < 4; i++) {
            sampler_probs(&other, raw + (size_t)i * V, want, V);
            for (int v = 0; v < V; v++) worst = fmax(worst, fabs((double)want[v] - probs[(size_t)i * V + v]));
        }
        if (control)
            ck_assert_msg(worst > 1e-3, "control: distributions at T = 1 within %.3g of the device's at T = 0.8",
                          worst);
        else
            ck_assert_msg(worst <= 1e-6, "the device's distributions differ from sampler_probs by %.3g", worst);
    }
    free(raw), free(probs), free(want);
    tree_free(&tree);
    t.release(&t);
    engine_close(&e);
}
END_TEST

#define N_TOKENS 12

/* Every method at temperature 0 through the CUDA engine gives its own greedy oracle's tokens: the tree passes,
 * the commits (tree nodes' keys and values moved in the cache, slots kept) and the MTP module's chain passes
 * agree with one-token decode steps. The draft model runs on the CPU engine: its head_dim (micro-draft's) is
 * not one the kernels take, and a draft on another backend is what the interfaces allow. */
START_TEST(test_methods_match_the_greedy_oracle) {
    fixture_model tf, df;
    fixture_model_open(&tf, "micro-tied", 83, NULL);
    fixture_model_open(&df, "micro-draft", 84, NULL);
    const engine_options o = cuda_options(), cpu = engine_defaults();
    static engine_parts ep; /* large: the engines' tables and buffers */
    engine_parts_open(&ep, &tf, &o, &df, &cpu);
    /* a chain verified with the draft's catch-up, the MTP module's chain passes, a tree whose commit moves
     * keys and values in the cache */
    static const char *const flags[] = {"--method spec --k 4 --temperature 0",
                                        "--method mtp --k 4 --temperature 0 --mtp-sample",
                                        "--method medusa --temperature 0 --rule exact-norepl"};
    const int V = tf.m.cfg.vocab_size;
    int prompt[4], want[N_TOKENS];
    for (int i = 0; i < 4; i++) prompt[i] = (i * 3 + 1) % V;
    engine_greedy_oracle(&ep.t, prompt, 4, N_TOKENS, want);
    assert_methods_give(&ep.parts, flags, (int)(sizeof flags / sizeof flags[0]), prompt, 4, want, N_TOKENS,
                        "a 4-token prompt");
    engine_parts_close(&ep);
    fixture_model_close(&df);
    fixture_model_close(&tf);
}
END_TEST

/* The projections that read one input lie back to back on the device, in the order of engine_weight_groups, in
 * every layer and the MTP module's: the layout that lets one kn_matvec_group launch compute them all. */
START_TEST(test_groups_placed_back_to_back) {
    engine e;
    sp_error err;
    const engine_options o = cuda_options();
    ck_assert_msg(engine_open(&e, fixture_embedded_model(), &o, &err) == 0, "%s", err.msg);
    const int rows = e.w.n_slots;
    size_t *bytes = calloc((size_t)rows * ROLE_COUNT, sizeof *bytes);
    ck_assert(bytes);
    for (int i = 0; i < e.w.ck.n_specs; i++) {
        size_t index, b;
        engine_weight_entry(&e.w, i, &index, &b);
        bytes[index] = b;
    }
    int groups = 0;
    for (int row = 0; row < rows; row++)
        for (int g = 0; g < EGROUP_COUNT; g++) {
            const engine_weight_group *group = &engine_weight_groups[g];
            if (!bytes[(size_t)row * ROLE_COUNT + group->role[0]]) continue; /* not this layer's kind */
            const int layer = row == rows - 1 ? -1 : row;
            const char *next = engine_bweight(&e, layer, group->role[0])->data;
            for (int j = 0; j < group->n_parts; j++) {
                ck_assert_msg(engine_bweight(&e, layer, group->role[j])->data == next,
                              "layer %d, group %d: part %d is not right after part %d", layer, g, j, j - 1);
                next += bytes[(size_t)row * ROLE_COUNT + group->role[j]];
            }
            groups++;
        }
    const int layers = e.cfg.num_layers + (e.w.ck.with_mtp ? 1 : 0);
    ck_assert_msg(groups == 2 * layers, "%d groups placed for %d layers (a token mixer's and the MLP's each)", groups,
                  layers);
    free(bytes);
    engine_close(&e);
}
END_TEST

/* micro's head_dim (16) and micro-deep's (8) are not multiples of the kernels' warp: refused, with the reason. */
START_TEST(test_shapes_the_kernels_cannot_take) {
    static const char *const presets[] = {"micro", "micro-deep"};
    for (int i = 0; i < 2; i++) {
        fixture_model f;
        fixture_model_open(&f, presets[i], 85, NULL);
        engine e;
        sp_error err;
        const engine_options o = cuda_options();
        ck_assert_msg(engine_open(&e, f.dir, &o, &err) != 0, "%s opened on the CUDA backend", presets[i]);
        ck_assert_msg(strstr(err.msg, "head_dim a multiple of 32"), "%s: %s", presets[i], err.msg);
        engine_close(&e); /* a failed open leaves nothing to close: must be harmless */
        fixture_model_close(&f);
    }
    engine e;
    sp_error err;
    engine_options o = cuda_options();
    o.f32_weights = 1;
    ck_assert(engine_open(&e, fixture_embedded_model(), &o, &err) != 0);
    ck_assert_msg(strstr(err.msg, "bf16"), "%s", err.msg);
}
END_TEST

/* The emulator runs every CUDA thread as a fiber and is slow (docs/verification.md), so the models and runs here
 * are small, and the suite sits with the GPU suites, outside the sanitizer run, which would triple its time. */
Suite *engine_cuda_suite(void) {
    Suite *s = suite_create("engine_cuda");
    TCase *against = harness_tcase("against the reference", 120);
    tcase_add_test(against, test_prefill_matches_reference);
    tcase_add_test(against, test_bf16_rounding_is_told_apart);
    tcase_add_test(against, test_shapes_the_kernels_cannot_take);
    suite_add_tcase(s, against);
    TCase *embedded = harness_tcase("embedded model", 120);
    if (fixture_embedded_model()) {
        tcase_add_test(embedded, test_embedded_model_matches_reference);
        tcase_add_test(embedded, test_device_distributions_are_the_samplers);
        tcase_add_test(embedded, test_groups_placed_back_to_back);
    } else {
        harness_skip("engine_cuda", "embedded_model_matches_reference", "models/tiny-shakespeare has no weights here");
        harness_skip("engine_cuda", "device_distributions_are_the_samplers",
                     "models/tiny-shakespeare has no weights here");
        harness_skip("engine_cuda", "groups_placed_back_to_back", "models/tiny-shakespeare has no weights here");
    }
    suite_add_tcase(s, embedded);
    TCase *methods = harness_tcase("every method", 120);
    tcase_add_test(methods, test_methods_match_the_greedy_oracle);
    suite_add_tcase(s, methods);
    return s;
}
