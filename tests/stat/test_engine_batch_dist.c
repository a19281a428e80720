/* test_engine_batch_dist.c — a sequence's output law when the CPU engine decodes it beside another in the same
 * passes: it must be the exact law of its own prompt. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "unit/engine_plants.h"
#include "engine_target.h"
#include "enumerate.h"
#include "fixtures.h"
#include "harness.h"
#include "stat_common.h"

#define L 3
/* Draws per law: at 8 000 both controls were rejected far below STAT_CONTROL_P, the KV-table slip (the weaker)
 * included (the figures are in docs/verification.md). */
#define N_DRAWS 8000

static const int prompt_a[5] = {3, 1, 4, 1, 5}, prompt_b[2] = {2, 6};

typedef struct {
    engine e;
    decode_target t;
    sampler_params sp;
    token_tree tree[2];
    float *p; /* [2, V] */
} batch_world;

/* Prefills sequence `seq` with all of prompt but its last token, which is returned (pending). */
static int start(batch_world *w, int seq, const int *prompt, int n, sp_error *err) {
    if (n > 1 && w->t.prefill(&w->t, seq, prompt, n - 1, NULL, NULL, err)) return -1;
    return prompt[n - 1];
}

/* One draw: both sequences decoded L steps by plain sampling, one verify pass over both a step; the second
 * sequence's tokens. The two sequences draw at distinct sites (index 2·step + sequence). */
static int draw_beside(void *ctx, uint64_t seed, int *tokens, sp_error *err) {
    batch_world *w = ctx;
    decode_target *t = &w->t;
    const int V = t->cfg->vocab_size;
    int seqs[2] = {t->seq_open(t, err), t->seq_open(t, err)}, pending[2], rc = 0;
    if (seqs[0] < 0 || seqs[1] < 0) rc = -1;
    if (!rc) pending[0] = start(w, seqs[0], prompt_a, 5, err);
    if (!rc && pending[0] >= 0) pending[1] = start(w, seqs[1], prompt_b, 2, err);
    if (!rc && (pending[0] < 0 || pending[1] < 0)) rc = -1;
    for (int step = 0; step < L && !rc; step++) {
        target_job jobs[2];
        for (int j = 0; j < 2; j++) {
            tree_reset(&w->tree[j], pending[j], CHILDREN_IID);
            jobs[j] = (target_job){seqs[j], &w->tree[j], w->p + (size_t)j * V, NULL};
        }
        rc = t->verify(t, jobs, 2, &w->sp, err);
        for (int j = 0; j < 2 && !rc; j++) {
            const rng_site site = {seed, RNG_SAMPLE, (uint64_t)(2 * step + j)};
            pending[j] = sampler_sample(w->p + (size_t)j * V, V, site);
            rc = pending[j] < 0 ? sp_fail(err, "a row with no token to draw") : t->commit(t, seqs[j], 0, err);
        }
        if (!rc) tokens[step] = pending[1];
    }
    for (int j = 0; j < 2; j++)
        if (seqs[j] >= 0) t->seq_close(t, seqs[j]);
    return rc;
}

/* The second sequence's law beside the first, with the slip `planted`; the result into *r. */
static void draw_law(const fixture_model *f, const double *exact, plant_cross planted, verify_result *r) {
    batch_world w;
    memset(&w, 0, sizeof w);
    engine_options o = engine_defaults();
    o.f32_weights = 1;
    sp_error err;
    ck_assert_msg(engine_open(&w.e, f->dir, &o, &err) == 0, "%s", err.msg);
    engine_target_build(&w.t, &w.e);
    engine_plant_cross_seq(&w.e, planted);
    w.sp = sampler_defaults();
    w.sp.temperature = 1.0f;
    const int V = w.e.cfg.vocab_size;
    for (int j = 0; j < 2; j++) tree_build(&w.tree[j], V, 1);
    w.p = calloc((size_t)2 * V, sizeof(float));
    const dist_sampler s = {"engine, beside another sequence", V, L, draw_beside, &w};
    verify_options vo = verify_defaults();
    vo.n = N_DRAWS;
    vo.seed = 1 + (uint64_t)planted;
    ck_assert_msg(verify_against_exact(&s, exact, &vo, r, &err) == 0, "%s", err.msg);
    free(w.p);
    for (int j = 0; j < 2; j++) tree_free(&w.tree[j]);
    w.t.release(&w.t);
    engine_close(&w.e);
}

/* Plain sampling of two sequences with different prompts, every step one verify pass over both (engine_target.c's
 * batched verify); the second sequence's L tokens are drawn against the exact law of its own prompt (enumerate.h,
 * on the reference model of the same checkpoint). The engine runs in its exact mode (float32 weights, the
 * reference's sums), so the law is the reference's. Negative controls at the same size, each of which must be
 * rejected: the second sequence attending through the first one's KV table, and stepping its DeltaNet layers from
 * the first one's state (engine_plants.h). */
START_TEST(test_law_beside_another_sequence) {
    fixture_model f;
    fixture_model_open(&f, "micro", 81, verify_world_target_config);
    sampler_params sp = sampler_defaults();
    sp.temperature = 1.0f;
    enum_table law;
    sp_error err;
    ck_assert_msg(enumerate_build(&law, &f.m, prompt_b, 2, &sp, L, &err) == 0, "%s", err.msg);
    verify_result r;
    draw_law(&f, law.joint, PLANT_CROSS_NONE, &r);
    const char *name = "the second sequence of a batched pass";
    stat_assert_family_passes(&r.test.p_value, 1, &name);
    verify_result_free(&r);
    draw_law(&f, law.joint, PLANT_CROSS_ATTENTION, &r);
    stat_assert_control_rejected(&r, "attending through the other sequence's KV table");
    verify_result_free(&r);
    draw_law(&f, law.joint, PLANT_CROSS_DELTANET, &r);
    stat_assert_control_rejected(&r, "stepping from the other sequence's DeltaNet state");
    verify_result_free(&r);
    enumerate_free(&law);
    fixture_model_close(&f);
}
END_TEST

Suite *engine_batch_dist_suite(void) {
    Suite *s = suite_create("engine_batch_dist");
    TCase *tc = harness_tcase("engine_batch_dist", 300);
    tcase_add_test(tc, test_law_beside_another_sequence);
    suite_add_tcase(s, tc);
    return s;
}
