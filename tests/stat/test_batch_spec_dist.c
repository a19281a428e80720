/* test_batch_spec_dist.c — a sequence's output law when speculative decoding runs it beside others through the
 * batched round loop (decode_batch.h) on the CPU engine: it must be the exact law of its own prompt, the law
 * decode_run gives it alone. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "unit/batch_jobs.h"
#include "unit/engine_plants.h"
#include "enumerate.h"
#include "fixtures.h"
#include "harness.h"
#include "stat_common.h"

#define B 3
#define L 5
/* Draws per law: at 4 000 every control was rejected with a wide margin below STAT_CONTROL_P, the weakest (the
 * KV-table slip) included, so 8 000 would double the time for nothing (the figures are in docs/verification.md). */
#define N_DRAWS 4000

/* A batch: the methods of its three sequences; the middle one is the one whose law is tested. */
typedef struct {
    const char *name;
    const char *flags[B];
} batch_case;

static const batch_case cases[] = {
    {"a draft model's sequence (k = 2) between MTP and plain sampling",
     {"--method mtp --k 3 --temperature 1", "--method spec --k 2 --temperature 1", "--method sample --temperature 1"}},
    {"an MTP sequence (k = 3) between a draft model's and MTP's",
     {"--method spec --k 2 --temperature 1", "--method mtp --k 3 --temperature 1",
      "--method mtp --k 2 --temperature 1"}},
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

/* Prompts of the small world's vocabulary (3 tokens); the middle one's law is enumerated. */
static const int prompt0[5] = {0, 2, 1, 0, 2}, prompt1[2] = {1, 2}, prompt2[3] = {2, 0, 1};
static const int *const prompts[B] = {prompt0, prompt1, prompt2};
static const int prompt_len[B] = {5, 2, 3};

/* The planted acceptance: the first sequence's rule records its target rows, the middle one's accepts its own
 * tree against them — in a round where the first sequence took part (it may finish first: its rows of an earlier
 * round are gone with its buffers), and for the nodes its tree had (its tree may be smaller: the rows past it
 * were never written); the middle sequence's own rows elsewhere. */
typedef struct {
    const float *first_rows;
    int n_rows;     /* nodes of the first sequence's tree */
    uint64_t round; /* the round it recorded */
    float *mixed;   /* [middle tree nodes, V] the rows the middle one accepts against */
} borrowed;

static int accept_recording(void *user, const token_tree *t, const float *p, accept_site site, float *scratch,
                            accept_result *r, sp_error *err) {
    borrowed *b = user;
    b->first_rows = p, b->n_rows = t->n, b->round = site.round;
    return accept_exact(t, p, site, scratch, r, err);
}

static int accept_borrowing(void *user, const token_tree *t, const float *p, accept_site site, float *scratch,
                            accept_result *r, sp_error *err) {
    borrowed *b = user;
    if (!b->first_rows || b->round != site.round) return accept_exact(t, p, site, scratch, r, err);
    const size_t V = (size_t)t->V;
    b->mixed = sp_xrealloc(b->mixed, (size_t)t->n * V, sizeof(float), "borrowed rows");
    for (int u = 0; u < t->n; u++)
        memcpy(b->mixed + (size_t)u * V, (u < b->n_rows ? b->first_rows : p) + (size_t)u * V, V * sizeof(float));
    return accept_exact(t, b->mixed, site, scratch, r, err);
}

typedef struct {
    decode_target target, draft;
    engine e, ed;
    batch_models bm;
    const batch_case *c;
    int borrow; /* the planted acceptance */
} batch_world;

/* One draw: the three sequences decoded together, L tokens each; the middle one's tokens. */
static int draw_middle(void *ctx, uint64_t seed, int *tokens, sp_error *err) {
    batch_world *w = ctx;
    batch_job built[B];
    decode_job jobs[B];
    decode_output out[B];
    borrowed shared = {NULL, 0, 0, NULL};
    for (int j = 0; j < B; j++)
        batch_job_build(&built[j], &w->bm, w->c->flags[j], prompts[j], prompt_len[j], L, seed + (uint64_t)j, &jobs[j]);
    if (w->borrow) {
        jobs[0].opt.custom_accept = accept_recording;
        jobs[1].opt.custom_accept = accept_borrowing;
        jobs[0].opt.accept_user = jobs[1].opt.accept_user = &shared;
    }
    decode_batch_options bo = {0, 0, 0};
    int rc = decode_batch_run(&w->target, jobs, B, &bo, out, err);
    if (!rc && bo.passes != bo.rounds) /* one sampling: every round must be one pass over the live sequences */
        rc = sp_fail(err, "%ld verify calls for %ld rounds", bo.passes, bo.rounds);
    if (!rc) {
        memcpy(tokens, out[1].tokens, L * sizeof(int));
        for (int j = 0; j < B; j++) decode_output_free(&out[j]);
    }
    for (int j = 0; j < B; j++) batch_job_release(&built[j]);
    free(shared.mixed);
    return rc;
}

/* The middle sequence's law in case c with the slips given; the result into *r. */
static void draw_law(const batch_case *c, const char *target_dir, const char *draft_dir, const double *exact,
                     plant_cross planted, int borrow, verify_result *r) {
    batch_world w;
    memset(&w, 0, sizeof w);
    engine_options o = engine_defaults();
    o.f32_weights = 1;
    sp_error err;
    ck_assert_msg(engine_open(&w.e, target_dir, &o, &err) == 0, "%s", err.msg);
    ck_assert_msg(engine_open(&w.ed, draft_dir, &o, &err) == 0, "%s", err.msg);
    engine_target_build(&w.target, &w.e);
    engine_target_build(&w.draft, &w.ed);
    engine_plant_cross_seq(&w.e, planted);
    w.bm = (batch_models){&w.target, &w.e, &w.draft, NULL, NULL};
    w.c = c;
    w.borrow = borrow;
    const dist_sampler s = {c->name, w.e.cfg.vocab_size, L, draw_middle, &w};
    verify_options vo = verify_defaults();
    vo.n = N_DRAWS;
    vo.seed = 1 + (uint64_t)planted + 4 * (uint64_t)borrow;
    ck_assert_msg(verify_against_exact(&s, exact, &vo, r, &err) == 0, "%s", err.msg);
    w.draft.release(&w.draft);
    w.target.release(&w.target);
    engine_close(&w.ed);
    engine_close(&w.e);
}

/* Three sequences with different prompts and methods, every round one verify pass over all their trees. The
 * middle sequence's L tokens are drawn against the exact law of its prompt (enumerate.h, on the reference model
 * of the same checkpoint): what decode_run gives it alone, since spec and MTP decoding are exact
 * (test_spec_dist.c, test_mtp_dist.c). Two laws, a draft model's sequence (k = 2) and an MTP sequence (k = 3),
 * at T = 1; windows of L = 5 tokens, so a round that ends with a bonus token is followed by another. The engine
 * runs in its exact mode (float32 weights, the reference's sums).
 * Negative controls at the same size, each of which must be rejected: the middle sequence's acceptance reading
 * the first sequence's target rows (through decode_options.custom_accept), and the engine's cross-sequence slips
 * in the shared pass (engine_plants.h: attending through the first sequence's KV table, stepping from its
 * DeltaNet state). */
START_TEST(test_speculative_law_beside_other_sequences) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 1, verify_small_target_config);
    fixture_model_open(&d, "micro-draft", 2, verify_small_draft_config);
    sampler_params sp = sampler_defaults();
    sp.temperature = 1.0f;
    enum_table law;
    sp_error err;
    ck_assert_msg(enumerate_build(&law, &t.m, prompt1, prompt_len[1], &sp, L, &err) == 0, "%s", err.msg);
    double p[N_CASES];
    const char *names[N_CASES];
    /* the engine's slip that reaches each case's middle sequence through the state its method leans on */
    static const plant_cross slip[N_CASES] = {PLANT_CROSS_ATTENTION, PLANT_CROSS_DELTANET};
    static const char *const slip_name[N_CASES] = {"attending through the first sequence's KV table",
                                                   "stepping from the first sequence's DeltaNet state"};
    for (int i = 0; i < N_CASES; i++) {
        verify_result r;
        names[i] = cases[i].name;
        draw_law(&cases[i], t.dir, d.dir, law.joint, PLANT_CROSS_NONE, 0, &r);
        p[i] = r.test.p_value;
        verify_result_free(&r);
        draw_law(&cases[i], t.dir, d.dir, law.joint, PLANT_CROSS_NONE, 1, &r);
        stat_assert_control_rejected(&r, "accepting against the first sequence's target rows");
        verify_result_free(&r);
        draw_law(&cases[i], t.dir, d.dir, law.joint, slip[i], 0, &r);
        stat_assert_control_rejected(&r, slip_name[i]);
        verify_result_free(&r);
    }
    stat_assert_family_passes(p, N_CASES, names);
    enumerate_free(&law);
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

Suite *batch_spec_dist_suite(void) {
    Suite *s = suite_create("batch_spec_dist");
    TCase *tc = harness_tcase("batch_spec_dist", 300);
    tcase_add_test(tc, test_speculative_law_beside_other_sequences);
    suite_add_tcase(s, tc);
    return s;
}
