/* test_audit.c — `specula audit`'s machinery (verify/audit*.h) on the verify catalogue's micro world, with the
 * reference decoding as the engine: speculation passes against plain sampling, while the control and a planted
 * engine-side bug are rejected at the same size. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "audit_law.h"
#include "audit_specula.h"
#include "registry.h"
#include "fixtures.h"
#include "harness.h"
#include "sampler.h"
#include "verify_cases.h"

/* Audit sizes: at L = 3 and V = 8 the control (T 0.7 against 1.4) is
 * rejected far below 1e-12 from about 1000 draws per arm; 2000 leaves a
 * wide margin and stays quick on the reference (docs/verification.md). */
#define AUDIT_TEST_N 2000
#define AUDIT_TEST_L 3
#define AUDIT_TEST_T 0.7f
#define AUDIT_TEST_CONTROL_T 1.4f

static const int prompt[] = {1, 2};
#define N_PROMPT 2

typedef struct {
    fixture_model t, d;
    fixture_parts parts;
} micro_world;

static void world_open(micro_world *w) {
    fixture_model_open(&w->t, "micro", 1, verify_world_target_config);
    fixture_model_open(&w->d, "micro-draft", 2, verify_world_draft_config);
    fixture_parts_open(&w->parts, &w->t.m, &w->d.m, NULL);
}

static void world_close(micro_world *w) {
    fixture_parts_close(&w->parts);
    fixture_model_close(&w->d);
    fixture_model_close(&w->t);
}

static void draw_counting(micro_world *w, const method_spec *s, uint64_t base, int n, audit_samples *out,
                          audit_drafting *drafting) {
    sp_error err;
    audit_samples_init(out, AUDIT_TEST_L);
    ck_assert_msg(audit_specula_draw(s, &w->parts.parts, prompt, N_PROMPT, base, n, NULL, NULL, out, drafting, &err) ==
                      0,
                  "%s", err.msg);
}

static void draw(micro_world *w, const method_spec *s, uint64_t base, int n, audit_samples *out) {
    draw_counting(w, s, base, n, out, NULL);
}

static void pit(micro_world *w, const audit_samples *s, float temperature, audit_pit *out) {
    sp_error err;
    sampler_params sp = sampler_defaults();
    sp.temperature = temperature;
    audit_pit_init(out, s->L);
    ck_assert_msg(audit_law_pit(&w->parts.target, prompt, N_PROMPT, &sp, NULL, 0, s, 99, NULL, NULL, out, &err) == 0,
                  "%s", err.msg);
}

/* The planted engine-side bug: whatever the method drew, the last token is
 * drawn again from the target's distribution at temperature 1 given the
 * sample's own prefix — a driver that forgot the temperature on its final
 * step. */
static void plant_last_token_at_t1(micro_world *w, audit_samples *s, uint64_t seed) {
    decode_target *t = &w->parts.target;
    int V = t->cfg->vocab_size, L = s->L, n_ctx = N_PROMPT + L - 1;
    int *ctx = malloc((size_t)n_ctx * sizeof *ctx);
    float *logits = malloc((size_t)n_ctx * (size_t)V * sizeof *logits), *probs = malloc((size_t)V * sizeof *probs);
    sampler_params sp = sampler_defaults(); /* temperature 1 */
    sp_error err;
    for (int i = 0; i < s->n; i++) {
        int *row = s->tokens + (size_t)i * (size_t)L;
        memcpy(ctx, prompt, sizeof prompt);
        memcpy(ctx + N_PROMPT, row, (size_t)(L - 1) * sizeof *row);
        int seq = t->seq_open(t, &err);
        ck_assert_msg(seq >= 0, "%s", err.msg);
        ck_assert_msg(t->prefill(t, seq, ctx, n_ctx, logits, NULL, &err) == 0, "%s", err.msg);
        t->seq_close(t, seq);
        sampler_probs(&sp, logits + (size_t)(n_ctx - 1) * (size_t)V, probs, V);
        row[L - 1] = sampler_sample(probs, V, (rng_site){seed, 7, (uint64_t)i});
    }
    free(ctx), free(logits), free(probs);
}

/* Draws the three arms (on: `on_flags`; off: plain sampling; control: the
 * on method at AUDIT_TEST_CONTROL_T), computes the law and runs the audit. */
static void run_audit(micro_world *w, const char *on_flags, int n, int plant, audit_report *r) {
    method_spec on = fixture_spec(on_flags), off = audit_specula_off(&on), control = on;
    control.sampling.temperature = AUDIT_TEST_CONTROL_T;
    audit_samples a, b, c;
    draw(w, &on, 1000000, n, &a);
    draw(w, &off, 2000000, n, &b);
    draw(w, &control, 3000000, n, &c);
    if (plant) plant_last_token_at_t1(w, &a, 4242);
    audit_pit pa, pb, pc;
    pit(w, &a, AUDIT_TEST_T, &pa);
    pit(w, &b, AUDIT_TEST_T, &pb);
    pit(w, &c, AUDIT_TEST_T, &pc);
    audit_options opt = audit_defaults();
    sp_error err;
    ck_assert_msg(audit_run(&a, &b, &c, VERIFY_WORLD_V, &pa, &pb, &pc, &opt, r, &err) == 0, "%s", err.msg);
    audit_samples_free(&a), audit_samples_free(&b), audit_samples_free(&c);
    audit_pit_free(&pa), audit_pit_free(&pb), audit_pit_free(&pc);
}

START_TEST(test_audit_spec_passes) {
    micro_world w;
    world_open(&w);
    audit_report r;
    run_audit(&w, "--method spec --k 2 --temperature 0.7", AUDIT_TEST_N, 0, &r);
    /* every position is tested, the sequences (512 cells, most of them
     * seen), and both arms against the law, pooled and per position */
    int kinds[3] = {0, 0, 0};
    for (int i = 0; i < r.n_tests; i++) kinds[r.tests[i].kind]++;
    ck_assert_int_eq(kinds[AUDIT_TEST_POSITION], AUDIT_TEST_L);
    ck_assert_int_eq(kinds[AUDIT_TEST_SEQUENCE], 1);
    ck_assert_int_eq(kinds[AUDIT_TEST_LAW], 2 * (AUDIT_TEST_L + 1));
    ck_assert_msg(r.control_rejected, "control not rejected: two-sample p %g, law p %g", r.control_min_p_holm,
                  r.control_law_p_holm);
    ck_assert_msg(r.verdict == AUDIT_PASSED, "verdict %s, smallest Holm p %g", audit_verdict_name(r.verdict),
                  r.min_p_holm);
    ck_assert_msg(r.max_tv < 0.2, "TV bound %g", r.max_tv);
    /* the size of change the two-sample tests can see at this n: stated, and between the bound that covers the
     * observed arms and the control's effect, which they did see */
    ck_assert_msg(r.detectable_tv > 0.01 && r.detectable_tv < 0.5, "detectable TV %g", r.detectable_tv);
    audit_report_free(&r);
    world_close(&w);
}
END_TEST

/* An arm whose method drafts in every round tests the method; one that never drafts (a bigram cache told to draft
 * only successors seen a million times) is plain sampling, whatever its samples say: the audit must not call it a
 * test of the method. */
START_TEST(test_audit_counts_drafts) {
    micro_world w;
    world_open(&w);
    const char *methods[2] = {"--method spec --k 2 --temperature 0.7",
                              "--method bigram --bigram-min 1000000 --temperature 0.7"};
    for (int i = 0; i < 2; i++) {
        method_spec s = method_spec_defaults();
        sp_error err;
        ck_assert_msg(method_spec_parse(&s, methods[i], &err) == 0, "%s", err.msg);
        audit_samples a;
        audit_drafting d;
        draw_counting(&w, &s, 1, 200, &a, &d);
        ck_assert_int_gt(d.rounds, 0);
        if (i == 0) {
            /* every round drafts but those the token budget leaves no room in */
            ck_assert_int_gt(d.drafted_rounds, d.rounds / 2);
            ck_assert(d.proposed >= d.drafted_rounds && d.proposed <= 2 * d.drafted_rounds);
            ck_assert(d.accepted > 0 && d.accepted <= d.proposed);
            ck_assert(audit_drafting_enough(&d));
        } else {
            ck_assert_int_eq(d.drafted_rounds, 0);
            ck_assert(!audit_drafting_enough(&d));
        }
        audit_samples_free(&a);
    }
    world_close(&w);
}
END_TEST

START_TEST(test_audit_catches_planted_driver) {
    micro_world w;
    world_open(&w);
    audit_report r;
    run_audit(&w, "--method spec --k 2 --temperature 0.7", AUDIT_TEST_N, 1, &r);
    ck_assert_msg(r.verdict == AUDIT_FAILED, "verdict %s, smallest Holm p %g", audit_verdict_name(r.verdict),
                  r.min_p_holm);
    /* it is the law at the last position of the planted arm that rejects
     * (the two-sample test of that position sees the change only through
     * the marginal, averaged over the prefixes, and more weakly); the law
     * at the untouched positions does not */
    int seen = 0;
    for (int i = 0; i < r.n_tests; i++) {
        const audit_test *x = &r.tests[i];
        if (x->kind != AUDIT_TEST_LAW || strcmp(x->arm, "on") || x->position < 0) continue;
        seen++;
        if (x->position == AUDIT_TEST_L - 1)
            ck_assert_msg(x->p_holm < AUDIT_CONTROL_P, "law at the last position: p %g", x->p_holm);
        else
            ck_assert_msg(x->p_holm > 1e-3, "law at position %d: p %g", x->position, x->p_holm);
    }
    ck_assert_int_eq(seen, AUDIT_TEST_L);
    audit_report_free(&r);
    world_close(&w);
}
END_TEST

/* 60 draws are far below the ~1000 the control needs: it is not rejected, and the verdict must say so. */
START_TEST(test_audit_small_n_underpowered) {
    micro_world w;
    world_open(&w);
    audit_report r;
    run_audit(&w, "--method mtp --k 2 --temperature 0.7", 60, 0, &r);
    ck_assert_msg(!r.control_rejected, "control rejected at n = 60: p %g", r.control_min_p_holm);
    ck_assert_msg(r.verdict == AUDIT_UNDERPOWERED, "verdict %s", audit_verdict_name(r.verdict));
    audit_report_free(&r);
    world_close(&w);
}
END_TEST

/* Under the law, the transform is exactly uniform: its mean over every
 * token weighted by the token's probability, integrated over U, is 1/2,
 * and the probability that it falls below 0.3 is 0.3. U runs over a
 * midpoint grid of 10 000 points: exact for the mean, which is linear in U
 * (1e-6 leaves room for rounding), and within one grid step (1e-4) for the
 * step function u < 0.3. */
START_TEST(test_audit_pit_is_uniform) {
    const float p[5] = {0.1f, 0.4f, 0.0f, 0.25f, 0.25f};
    double below = 0.0, mean = 0.0;
    for (int x = 0; x < 5; x++) {
        if (p[x] == 0) {
            ck_assert(audit_pit_value(p, 5, x, 0.5) < 0);
            continue;
        }
        for (int k = 0; k < 10000; k++) {
            double u = audit_pit_value(p, 5, x, (k + 0.5) / 10000.0);
            ck_assert(u >= 0 && u < 1);
            mean += p[x] * u / 10000.0;
            below += p[x] * (u < 0.3) / 10000.0;
        }
    }
    ck_assert_msg(fabs(mean - 0.5) < 1e-6, "mean %g", mean);
    ck_assert_msg(fabs(below - 0.3) < 1e-4, "P(u < 0.3) %g", below);
    /* the most probable token comes first: its u lies in [0, 0.4) */
    ck_assert(audit_pit_value(p, 5, 1, 0.999) < 0.4);
}
END_TEST

/* A banned token leaves the law: where the samples drew it, the law test
 * counts an impossible draw; the same samples against the unbanned law
 * have none. */
START_TEST(test_audit_banned_tokens) {
    micro_world w;
    world_open(&w);
    method_spec off = fixture_spec("--method sample --temperature 0.7");
    audit_samples s;
    draw(&w, &off, 5000000, 300, &s);
    int64_t drawn = 0;
    for (int i = 0; i < s.n * s.L; i++) drawn += s.tokens[i] == 3;
    ck_assert_msg(drawn > 0, "token 3 never drawn in 900 draws");
    sampler_params sp = sampler_defaults();
    sp.temperature = 0.7f;
    const int banned[1] = {3};
    sp_error err;
    for (int ban = 0; ban < 2; ban++) {
        audit_pit p;
        audit_pit_init(&p, s.L);
        ck_assert_msg(audit_law_pit(&w.parts.target, prompt, N_PROMPT, &sp, banned, ban, &s, 1, NULL, NULL, &p, &err) ==
                          0,
                      "%s", err.msg);
        int64_t impossible = 0;
        for (int t = 0; t < s.L; t++) impossible += p.impossible[t];
        ck_assert_int_eq(impossible, ban ? drawn : 0);
        audit_pit_free(&p);
    }
    audit_samples_free(&s);
    world_close(&w);
}
END_TEST

static int read_text(const char *text, int L, int V, audit_samples *s, sp_error *err) {
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    ck_assert_ptr_nonnull(f);
    audit_samples_init(s, L);
    int rc = audit_samples_read(s, f, "samples", V, 0, err);
    fclose(f);
    return rc;
}

START_TEST(test_audit_sample_file) {
    audit_samples s;
    sp_error err;
    ck_assert_int_eq(read_text("# arm on\n1 2 3\n\n4,5,6\n", 3, 8, &s, &err), 0);
    ck_assert_int_eq(s.n, 2);
    ck_assert_int_eq(s.tokens[5], 6);
    audit_samples_free(&s);
    const char *bad[][2] = {{"1 2\n", "2 tokens, expected 3"},
                            {"1 2 3 4\n", "more than 3"},
                            {"1 2 9\n", "outside the vocabulary"},
                            {"1 -2 3\n", "found '-'"},
                            {"1 2x 3\n", "found 'x'"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_ne(read_text(bad[i][0], 3, 8, &s, &err), 0);
        ck_assert_msg(strstr(err.msg, bad[i][1]) && strstr(err.msg, "line 1"), "'%s' gave '%s'", bad[i][0], err.msg);
        audit_samples_free(&s);
    }
}
END_TEST

Suite *audit_suite(void) {
    Suite *s = suite_create("audit");
    TCase *tc = harness_tcase("audit", 60);
    tcase_add_test(tc, test_audit_spec_passes);
    tcase_add_test(tc, test_audit_counts_drafts);
    tcase_add_test(tc, test_audit_catches_planted_driver);
    tcase_add_test(tc, test_audit_small_n_underpowered);
    tcase_add_test(tc, test_audit_pit_is_uniform);
    tcase_add_test(tc, test_audit_sample_file);
    tcase_add_test(tc, test_audit_banned_tokens);
    suite_add_tcase(s, tc);
    return s;
}
