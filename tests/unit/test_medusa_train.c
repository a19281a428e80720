/* test_medusa_train.c — `specula medusa-train`'s pieces: the hand-written backward pass against finite
 * differences (with planted errors it must catch), Adam learning a task the heads can represent, reproducibility,
 * the examples' alignment with the target's greedy continuation, and the held-out figures and suggested tree. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "genmodel/randmodel.h"
#include "harness.h"
#include "medusa_train.h"
#include "model.h"
#include "ops.h"
#include "philox.h"
#include "reference_target.h"

static void fill(float *x, size_t n, uint64_t stream, float scale) {
    for (size_t k = 0; k < n; k++) x[k] = scale * (2 * philox_uniform(21, stream, k, 0) - 1);
}

/* Largest |fd − an| / (2e-4 + 1e-2·|fd|) over every weight: below 1 means
 * the analytic gradient an agrees with the central difference fd.
 * Why these numbers: with a step of 1e-2 the truncation error is about
 * h²/6·|f'''| ≈ 2e-5, and the float32 logits put about 1e-7 of relative
 * noise on a loss of a few nats, 1e-5 once divided by 2h; 2e-4 leaves a
 * margin of ten. The relative 1e-2 lets large entries carry the same
 * relative error. A correct backward pass stays far below 1
 * (docs/verification.md). */
static double gradient_check(medusa_heads *h, const float *hidden, const int *labels, const float *weights,
                             const medusa_heads *grad) {
    medusa_work w;
    medusa_work_build(&w, h);
    double worst = 0;
    for (size_t k = 0; k < h->arena_floats; k++) {
        const float keep = h->arena[k], up = keep + 1e-2f, down = keep - 1e-2f;
        h->arena[k] = up;
        double lp = medusa_example_loss(h, hidden, labels, weights, 1, NULL, &w);
        h->arena[k] = down;
        double lm = medusa_example_loss(h, hidden, labels, weights, 1, NULL, &w);
        h->arena[k] = keep;
        double fd = (lp - lm) / ((double)up - down);
        double r = fabs(fd - grad->arena[k]) / (2e-4 + 1e-2 * fabs(fd));
        if (r > worst) worst = r;
    }
    medusa_work_free(&w);
    return worst;
}

static void analytic(medusa_heads *h, const float *hidden, const int *labels, const float *weights,
                     medusa_heads *grad) {
    medusa_work w;
    medusa_work_build(&w, h);
    memset(grad->arena, 0, grad->arena_floats * sizeof(float));
    medusa_example_loss(h, hidden, labels, weights, 1, grad, &w);
    medusa_work_free(&w);
}

START_TEST(test_gradient_check) {
    const int D = 6, V = 9;
    const float weights[3] = {1, 0.8f, 0.64f};
    float hidden[6], lm_head[9 * 6];
    fill(hidden, 6, 1, 1.0f);
    fill(lm_head, 9 * 6, 2, 0.8f);
    sp_error err;
    /* own projections, two ResBlocks per head: every weight has a gradient */
    medusa_heads h, g;
    ck_assert(medusa_build(&h, 3, 2, D, V, 1, &err) == 0);
    ck_assert(medusa_build(&g, 3, 2, D, V, 1, &err) == 0);
    fill(h.arena, h.arena_floats, 3, 0.8f);
    int labels[3] = {3, 5, 8};
    analytic(&h, hidden, labels, weights, &g);
    double good = gradient_check(&h, hidden, labels, weights, &g);
    ck_assert_msg(good < 1, "backward pass vs finite differences: worst ratio %.3g", good);
    /* planted errors the same check must catch: the gradient of another label
     * (an off-by-one), and a 2 % error in the largest entry */
    int shifted[3] = {3, 6, 8};
    medusa_heads bad;
    ck_assert(medusa_build(&bad, 3, 2, D, V, 1, &err) == 0);
    analytic(&h, hidden, shifted, weights, &bad);
    double r = gradient_check(&h, hidden, labels, weights, &bad);
    ck_assert_msg(r > 1, "an off-by-one label passed the check (%.3g)", r);
    memcpy(bad.arena, g.arena, g.arena_floats * sizeof(float));
    size_t big = 0;
    for (size_t k = 0; k < g.arena_floats; k++)
        if (fabsf(g.arena[k]) > fabsf(g.arena[big])) big = k;
    bad.arena[big] *= 1.02f;
    r = gradient_check(&h, hidden, labels, weights, &bad);
    ck_assert_msg(r > 1, "a 2%% error passed the check (%.3g)", r);
    medusa_free(&bad);
    medusa_free(&h);
    medusa_free(&g);
    /* a shared lm_head is frozen: the gradient holds the ResBlocks only,
     * and they still agree with finite differences through it */
    ck_assert(medusa_build(&h, 2, 1, D, V, 0, &err) == 0);
    ck_assert(medusa_build(&g, 2, 1, D, V, 0, &err) == 0);
    medusa_share_lm_head(&h, lm_head);
    medusa_share_lm_head(&g, lm_head);
    ck_assert_uint_eq(h.arena_floats, (size_t)2 * (D * D + D));
    fill(h.arena, h.arena_floats, 4, 0.8f);
    analytic(&h, hidden, labels, weights, &g);
    good = gradient_check(&h, hidden, labels, weights, &g);
    ck_assert_msg(good < 1, "shared lm_head: worst ratio %.3g", good);
    medusa_free(&h);
    medusa_free(&g);
}
END_TEST

/* Examples whose labels are the argmax of teacher heads of the same shape:
 * a student can reach them exactly. */
static void teacher_data(const medusa_heads *teacher, int n, uint64_t stream, medusa_dataset *ds) {
    const int D = teacher->D, H = teacher->n_heads;
    ds->n = n, ds->D = D, ds->n_heads = H;
    ds->hidden = calloc((size_t)n * D, sizeof(float));
    ds->labels = calloc((size_t)n * H, sizeof(int));
    fill(ds->hidden, (size_t)n * D, stream, 1.5f);
    float logits[64], scratch[64];
    for (int x = 0; x < n; x++)
        for (int i = 0; i < H; i++) {
            medusa_head_forward(teacher, i, ds->hidden + (size_t)x * D, logits, scratch);
            ds->labels[x * H + i] = sampler_argmax(logits, teacher->V);
        }
}

START_TEST(test_training_learns) {
    const int D = 16, V = 12;
    sp_error err;
    medusa_heads teacher, a, b;
    ck_assert(medusa_build(&teacher, 2, 1, D, V, 1, &err) == 0);
    fill(teacher.arena, teacher.arena_floats, 10, 0.6f);
    medusa_dataset train, held;
    teacher_data(&teacher, 2000, 11, &train);
    teacher_data(&teacher, 500, 12, &held);
    medusa_train_opts o = medusa_train_defaults();
    o.steps = 600, o.batch = 32, o.lr = 1e-2f, o.warmup = 20, o.log_every = 0;
    ck_assert(medusa_build(&a, 2, 1, D, V, 1, &err) == 0);
    ck_assert(medusa_build(&b, 2, 1, D, V, 1, &err) == 0);
    fill(a.arena, a.arena_floats, 13, 0.1f); /* a start far from the teacher */
    memcpy(b.arena, a.arena, a.arena_floats * sizeof(float));
    medusa_eval before, after;
    ck_assert(medusa_evaluate(&a, &held, &before, &err) == 0);
    ck_assert_msg(medusa_train(&a, &train, &o, NULL, &err) == 0, "%s", err.msg);
    ck_assert(medusa_evaluate(&a, &held, &after, &err) == 0);
    for (int i = 0; i < 2; i++) {
        /* chance is 1/12; the task is exactly representable, and 600 steps
         * reach above 0.8 on held-out examples (the argmax boundaries of the
         * teacher are not all learned from 2000 examples; the figures are in
         * docs/verification.md); 0.7 leaves a margin, while a broken gradient
         * or update stays near chance */
        ck_assert_msg(after.top1[i] > 0.7, "head %d: held-out top-1 %.3f (before %.3f)", i, after.top1[i],
                      before.top1[i]);
        ck_assert(after.loss[i] < 0.5 * before.loss[i]);
    }
    /* the same data, options and start give the same bits */
    ck_assert(medusa_train(&b, &train, &o, NULL, &err) == 0);
    ck_assert(memcmp(a.arena, b.arena, a.arena_floats * sizeof(float)) == 0);
    medusa_eval_free(&before);
    medusa_eval_free(&after);
    medusa_dataset_free(&train);
    medusa_dataset_free(&held);
    medusa_free(&teacher);
    medusa_free(&a);
    medusa_free(&b);
}
END_TEST

START_TEST(test_training_errors) {
    sp_error err;
    medusa_heads h;
    ck_assert(medusa_build(&h, 3, 1, 8, 10, 1, &err) == 0);
    medusa_dataset ds = {0};
    medusa_train_opts o = medusa_train_defaults();
    ck_assert_int_eq(medusa_train(&h, &ds, &o, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "no training examples"), "%s", err.msg);
    float hidden[8] = {0};
    int labels[2] = {0, 0};
    ds = (medusa_dataset){1, 8, 2, hidden, labels};
    ck_assert_int_eq(medusa_train(&h, &ds, &o, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "labels for 2 heads, the heads are 3"), "%s", err.msg);
    medusa_free(&h);
}
END_TEST

/* ---- the examples from the target -------------------------------------------------------- */

static char tmp[256], micro[320];

static void setup(void) {
    harness_tmpdir(tmp, sizeof tmp);
    snprintf(micro, sizeof micro, "%s/micro", tmp);
    model_config c;
    sp_error err;
    randmodel_opts o;
    randmodel_default_opts(&o);
    ck_assert(randmodel_preset("micro", &c, &err) == 0);
    ck_assert_msg(randmodel_write(micro, &c, &o, NULL, &err) == 0, "%s", err.msg);
}

static void teardown(void) { harness_rmtree(tmp); }

/* A corpus of exactly one prompt leaves one offset: the examples must be the
 * hidden states and tokens of the greedy continuation of that prompt. */
START_TEST(test_dataset_alignment) {
    model m;
    sp_error err;
    ck_assert_msg(model_load(&m, micro, &err) == 0, "%s", err.msg);
    const int P = 4, G = 12, H = 3, D = m.cfg.hidden_size;
    int prompt[4] = {5, 17, 2, 9};
    medusa_data_opts o = {.n_sequences = 2, .prompt_len = P, .gen_len = G, .temperature = 0, .seed = 3};
    medusa_dataset ds;
    decode_target target;
    reference_target_build(&target, &m);
    ck_assert_msg(medusa_dataset_generate(&target, prompt, P, H, &o, &ds, NULL, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(ds.n, 2 * (G - H));
    /* the reference: the greedy continuation and every hidden state */
    int x[16];
    memcpy(x, prompt, sizeof prompt);
    fixture_greedy_oracle(&m, prompt, P, G, x + P);
    model_state s;
    state_build(&s, &m.cfg, NULL);
    float hs[16][32];
    for (int t = 0; t < P + G; t++) model_forward(&m, &s, x[t], NULL, hs[t]);
    state_free(&s);
    for (int e = 0; e < ds.n; e++) {
        const int t = P - 1 + e % (G - H); /* both sequences are the same prompt */
        ck_assert(memcmp(ds.hidden + (size_t)e * D, hs[t], (size_t)D * sizeof(float)) == 0);
        for (int i = 0; i < H; i++) ck_assert_int_eq(ds.labels[e * H + i], x[t + 2 + i]);
    }
    medusa_dataset_free(&ds);
    /* sampled continuations: reproducible, and not the greedy one */
    medusa_dataset a, b;
    o.temperature = 1.5f;
    ck_assert(medusa_dataset_generate(&target, prompt, P, H, &o, &a, NULL, &err) == 0);
    ck_assert(medusa_dataset_generate(&target, prompt, P, H, &o, &b, NULL, &err) == 0);
    ck_assert(memcmp(a.labels, b.labels, (size_t)a.n * H * sizeof(int)) == 0);
    int differs = 0;
    for (int e = 0; e < a.n; e++) differs |= a.labels[e * H] != x[P - 1 + e % (G - H) + 2];
    ck_assert(differs);
    medusa_dataset_free(&a);
    medusa_dataset_free(&b);
    /* errors */
    o.gen_len = H;
    ck_assert_int_eq(medusa_dataset_generate(&target, prompt, P, H, &o, &a, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "longer than the 3 heads"), "%s", err.msg);
    o.gen_len = G;
    ck_assert_int_eq(medusa_dataset_generate(&target, prompt, 3, H, &o, &a, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "fewer than one prompt"), "%s", err.msg);
    int bad[4] = {1, 2, 32, 3};
    ck_assert_int_eq(medusa_dataset_generate(&target, bad, 4, H, &o, &a, NULL, &err), -1);
    ck_assert_msg(strstr(err.msg, "corpus token 32 at index 2"), "%s", err.msg);
    target.release(&target);
    model_free(&m);
}
END_TEST

/* Medusa's initialisation: identity ResBlocks and the target's lm_head,
 * so each head starts out predicting the token after the one it reads. */
START_TEST(test_init) {
    model m;
    sp_error err;
    ck_assert(model_load(&m, micro, &err) == 0);
    medusa_heads h;
    ck_assert(medusa_build(&h, 2, 2, m.cfg.hidden_size, m.cfg.vocab_size, 1, &err) == 0);
    fill(h.arena, h.arena_floats, 30, 1.0f);
    medusa_train_init(&h, m.w.lm_head);
    float hidden[32], a[32], b[32], scratch[64];
    fill(hidden, 32, 31, 1.0f);
    medusa_head_forward(&h, 1, hidden, a, scratch);
    op_matvec(b, m.w.lm_head, hidden, 32, 32);
    ck_assert(memcmp(a, b, sizeof a) == 0);
    medusa_free(&h);
    model_free(&m);
}
END_TEST

/* ---- the held-out figures ------------------------------------------------------------------ */

START_TEST(test_tree_gain_and_suggestion) {
    /* ranks of the labels of 4 examples under 2 heads (10 = beyond the table) */
    int ranks[8] = {0, 1, 0, 0, 1, 0, 10, 0};
    medusa_eval e = {.n_heads = 2, .n = 4, .ranks = ranks};
    medusa_tree t;
    sp_error err;
    ck_assert(medusa_tree_parse(&t, "[[0], [1], [0, 0], [0, 1]]", "t", &err) == 0);
    /* [0]: 2 of 4, [1]: 1, [0,0]: 1, [0,1]: 1 → 5/4 tokens per round */
    ck_assert(medusa_eval_tree_gain(&e, &t) == 1.25);
    medusa_eval_suggest_tree(&e, 3, &t);
    char buf[128];
    medusa_tree_format(&t, buf, sizeof buf);
    /* counts [0] 2, then ties of 1 broken by depth and path: [1], [0, 0] */
    ck_assert_str_eq(buf, "[[0], [1], [0, 0]]");
    medusa_eval_suggest_tree(&e, 63, &t);
    ck_assert_int_eq(t.n, 5); /* every path some example took: [0] [1] [0,0] [0,1] [1,0] */
}
END_TEST

START_TEST(test_evaluate_teacher) {
    const int D = 16, V = 12;
    sp_error err;
    medusa_heads teacher;
    ck_assert(medusa_build(&teacher, 2, 1, D, V, 1, &err) == 0);
    fill(teacher.arena, teacher.arena_floats, 40, 0.6f);
    medusa_dataset ds;
    teacher_data(&teacher, 200, 41, &ds);
    medusa_eval e;
    ck_assert(medusa_evaluate(&teacher, &ds, &e, &err) == 0);
    for (int i = 0; i < 2; i++) {
        ck_assert(e.top1[i] == 1.0 && e.topk[i] == 1.0 && e.rank_freq[i][0] == 1.0);
    }
    medusa_tree def, sug;
    medusa_tree_default(&def, 2);
    ck_assert(medusa_eval_tree_gain(&e, &def) == 2.0); /* [0] and [0, 0] always right */
    medusa_eval_suggest_tree(&e, 63, &sug);
    ck_assert_int_eq(sug.n, 2);
    medusa_eval_free(&e);
    medusa_dataset_free(&ds);
    medusa_free(&teacher);
}
END_TEST

Suite *medusa_train_suite(void) {
    Suite *s = suite_create("medusa_train");
    TCase *grad = harness_tcase("backward", 60);
    tcase_add_test(grad, test_gradient_check);
    tcase_add_test(grad, test_training_learns);
    tcase_add_test(grad, test_training_errors);
    suite_add_tcase(s, grad);
    TCase *data = harness_tcase("examples", 60);
    tcase_add_unchecked_fixture(data, setup, teardown);
    tcase_add_test(data, test_dataset_alignment);
    tcase_add_test(data, test_init);
    tcase_add_test(data, test_tree_gain_and_suggestion);
    tcase_add_test(data, test_evaluate_teacher);
    suite_add_tcase(s, data);
    return s;
}
