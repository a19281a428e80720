/* test_enumerate.c — the exact sequence law of verify/enumerate.c: it sums to 1, every row equals bit for bit what
 * a fresh forward over the same prefix computes (so the walk's snapshot and restore leave no trace), cuts give
 * probability 0, temperature 0 gives the greedy sequence, and bad requests fail with a message. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "enumerate.h"
#include "fixtures.h"
#include "harness.h"
#include "reference_target.h"
#include "verify_cases.h"

static const int prompt[2] = {1, 2};

/* The conditional after prompt + tokens[0..len), from a state that never
 * saw anything else. */
static void fresh_row(model *m, const sampler_params *sp, const int *tokens, int len, float *row) {
    const int V = m->cfg.vocab_size;
    model_state s;
    state_build(&s, &m->cfg, NULL);
    float *logits = calloc((size_t)V, sizeof(float));
    model_forward(m, &s, prompt[0], NULL, NULL);
    model_forward(m, &s, prompt[1], logits, NULL);
    for (int j = 0; j < len; j++) model_forward(m, &s, tokens[j], logits, NULL);
    sampler_probs(sp, logits, row, V);
    free(logits);
    state_free(&s);
}

START_TEST(test_law_sums_to_one_and_matches_fresh_forwards) {
    fixture_model f;
    fixture_model_open(&f, "micro", 21, verify_world_target_config);
    const int V = f.m.cfg.vocab_size;
    sampler_params sp = sampler_defaults();
    sp.temperature = 0.9f;
    sp_error err;
    for (int L = 1; L <= 3; L++) {
        enum_table t;
        ck_assert_msg(enumerate_build(&t, &f.m, prompt, 2, &sp, L, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(t.cells, (int64_t)pow(V, L));
        long expected_forwards = 1; /* the prompt's first token */
        for (int j = 0, power = 1; j < L; j++, power *= V) expected_forwards += power;
        ck_assert_int_eq(t.forwards, expected_forwards);
        double sum = 0;
        for (int64_t i = 0; i < t.cells; i++) {
            ck_assert(t.joint[i] >= 0);
            sum += t.joint[i];
        }
        /* float rows summing to 1 within ~1e-7 each, multiplied over L ≤ 3 factors */
        ck_assert_msg(fabs(sum - 1) < 1e-6, "L=%d: the law sums to %.9f", L, sum);
        /* every 7th sequence: each row along it, and the product, recomputed from scratch */
        float row[VERIFY_WORLD_V];
        for (int64_t i = 0; i < t.cells; i += 7) {
            int tokens[3];
            enumerate_tokens(i, L, V, tokens);
            ck_assert_int_eq(enumerate_index(tokens, L, V), i);
            double prob = 1;
            for (int len = 0; len < L; len++) {
                fresh_row(&f.m, &sp, tokens, len, row);
                ck_assert_msg(memcmp(row, enumerate_cond(&t, tokens, len), sizeof(float) * V) == 0,
                              "L=%d, sequence %lld: the row after %d tokens differs from a fresh forward", L,
                              (long long)i, len);
                prob *= row[tokens[len]];
            }
            ck_assert(prob == t.joint[i]); /* the same factors in the same order: equal, not just close */
            if (L == 1) {                  /* the raw log-softmax: at T = 0.9 its exp is the T = 1 softmax, not row */
                const double *lp = enumerate_raw_logprob(&t, tokens, 0);
                double mass = 0;
                for (int x = 0; x < V; x++) mass += exp(lp[x]);
                ck_assert_msg(fabs(mass - 1) < 1e-12, "raw log-probabilities sum to %.15f", mass);
            }
        }
        enumerate_free(&t);
    }
    fixture_model_close(&f);
}
END_TEST

/* The walk through a decode_target (a sequence forked per prefix, one prefill each) gives the model walk's table bit
 * for bit on the reference's target: the same rows, the same products, the same count of forwards; and a prompt
 * outside the vocabulary is refused before anything runs. */
START_TEST(test_walk_on_a_decode_target) {
    fixture_model f;
    fixture_model_open(&f, "micro", 22, verify_world_target_config);
    decode_target tg;
    reference_target_build(&tg, &f.m);
    sampler_params sp = sampler_defaults();
    sp.temperature = 0.8f;
    sp.top_k = 5;
    sp_error err;
    for (int L = 1; L <= 3; L++) {
        enum_table a, b;
        ck_assert_msg(enumerate_build(&a, &f.m, prompt, 2, &sp, L, &err) == 0, "%s", err.msg);
        ck_assert_msg(enumerate_build_target(&b, &tg, prompt, 2, &sp, L, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(a.cells, b.cells);
        ck_assert_int_eq(a.forwards, b.forwards);
        ck_assert(memcmp(a.cond, b.cond, (size_t)a.prefixes * a.V * sizeof(float)) == 0);
        ck_assert(memcmp(a.raw_logprob, b.raw_logprob, (size_t)a.prefixes * a.V * sizeof(double)) == 0);
        ck_assert(memcmp(a.joint, b.joint, (size_t)a.cells * sizeof(double)) == 0);
        enumerate_free(&a);
        enumerate_free(&b);
    }
    const int bad[2] = {1, 99};
    enum_table t;
    ck_assert_int_eq(enumerate_build_target(&t, &tg, bad, 2, &sp, 2, &err), -1);
    ck_assert_msg(strstr(err.msg, "outside the vocabulary"), "%s", err.msg);
    tg.release(&tg);
    fixture_model_close(&f);
}
END_TEST

START_TEST(test_cuts_and_greedy) {
    fixture_model f;
    fixture_model_open(&f, "micro", 22, verify_world_target_config);
    const int V = f.m.cfg.vocab_size;
    sp_error err;
    sampler_params sp = sampler_defaults();
    sp.top_k = 3;
    enum_table t;
    ck_assert_msg(enumerate_build(&t, &f.m, prompt, 2, &sp, 2, &err) == 0, "%s", err.msg);
    int tokens[2];
    int64_t zero = 0;
    for (int64_t i = 0; i < t.cells; i++) {
        enumerate_tokens(i, 2, V, tokens);
        const float *first = enumerate_cond(&t, tokens, 0), *second = enumerate_cond(&t, tokens, 1);
        int kept = 0;
        for (int x = 0; x < V; x++) kept += first[x] > 0;
        ck_assert_int_eq(kept, 3); /* random float logits: no ties at the cut */
        if (first[tokens[0]] == 0 || second[tokens[1]] == 0) {
            ck_assert(t.joint[i] == 0);
            zero++;
        }
    }
    ck_assert_int_eq(zero, t.cells - 9); /* 3 × 3 sequences survive two top-3 cuts */
    enumerate_free(&t);

    /* temperature 0: all the mass on the greedy continuation */
    sp = sampler_defaults();
    sp.temperature = 0;
    ck_assert_msg(enumerate_build(&t, &f.m, prompt, 2, &sp, 3, &err) == 0, "%s", err.msg);
    fixture_parts parts;
    fixture_parts_open(&parts, &f.m, NULL, NULL);
    const method_spec greedy = fixture_spec("--method greedy --max-tokens 3 --no-eos");
    decode_output out;
    ck_assert_msg(method_generate(&greedy, &parts.parts, prompt, 2, &out, &err) == 0, "%s", err.msg);
    ck_assert(t.joint[enumerate_index(out.tokens, 3, V)] == 1.0);
    decode_output_free(&out);
    fixture_parts_close(&parts);
    enumerate_free(&t);
    fixture_model_close(&f);
}
END_TEST

/* A run that stops at EOS, padded with EOS: the mass of each sequence that reaches its first EOS at
 * position j is the law of its first j + 1 tokens, every token after it is EOS, and sequences without
 * an EOS keep their mass. */
START_TEST(test_stop_at_eos) {
    fixture_model f;
    fixture_model_open(&f, "micro", 24, verify_small_target_config);
    const int V = f.m.cfg.vocab_size, L = 4, eos = 1;
    sp_error err;
    const sampler_params sp = sampler_defaults();
    enum_table full, stopped;
    ck_assert_msg(enumerate_build(&full, &f.m, prompt, 2, &sp, L, &err) == 0, "%s", err.msg);
    ck_assert_msg(enumerate_build(&stopped, &f.m, prompt, 2, &sp, L, &err) == 0, "%s", err.msg);
    enumerate_stop_at_eos(&stopped, eos);
    double total = 0;
    int tokens[4];
    for (int64_t i = 0; i < full.cells; i++) {
        enumerate_tokens(i, L, V, tokens);
        total += stopped.joint[i];
        int first = -1;
        for (int j = 0; j < L && first < 0; j++)
            if (tokens[j] == eos) first = j;
        if (first < 0) {
            ck_assert(fabs(stopped.joint[i] - full.joint[i]) < 1e-12);
            continue;
        }
        int padded = 1;
        for (int j = first + 1; j < L; j++) padded &= tokens[j] == eos;
        if (!padded) {
            ck_assert(stopped.joint[i] == 0);
            continue;
        }
        double prefix = 0; /* the full law's mass of every sequence with these first + 1 tokens */
        for (int64_t k = 0; k < full.cells; k++) {
            int other[4], same = 1;
            enumerate_tokens(k, L, V, other);
            for (int j = 0; j <= first; j++) same &= other[j] == tokens[j];
            if (same) prefix += full.joint[k];
        }
        /* the full law sums the prefix's extensions over float rows that each sum to 1 within ~1e-7 */
        ck_assert_msg(fabs(stopped.joint[i] - prefix) < 1e-7, "cell %lld: %.9f, its prefix %.9f", (long long)i,
                      stopped.joint[i], prefix);
    }
    ck_assert(fabs(total - 1) < 1e-6);
    enumerate_free(&full);
    enumerate_free(&stopped);
    fixture_model_close(&f);
}
END_TEST

START_TEST(test_prefix_ids) {
    /* V = 3: ids 0 (empty), 1..3 (length 1), 4..12 (length 2) */
    int tokens[2] = {0, 0};
    ck_assert_int_eq(enumerate_prefix_id(tokens, 0, 3), 0);
    tokens[0] = 2;
    ck_assert_int_eq(enumerate_prefix_id(tokens, 1, 3), 3);
    tokens[1] = 1;
    ck_assert_int_eq(enumerate_prefix_id(tokens, 2, 3), 4 + 2 * 3 + 1);
    ck_assert_int_eq(enumerate_cells(10, 5), 100000);
    ck_assert_int_eq(enumerate_cells(10, 6), -1);
}
END_TEST

START_TEST(test_bad_requests) {
    fixture_model f;
    fixture_model_open(&f, "micro", 23, verify_world_target_config);
    sp_error err;
    enum_table t;
    sampler_params sp = sampler_defaults();
    ck_assert_int_eq(enumerate_build(&t, &f.m, prompt, 2, &sp, 6, &err), -1); /* 8^6 > 10^5 */
    ck_assert_ptr_nonnull(strstr(err.msg, "more than 100000 sequences"));
    ck_assert_int_eq(enumerate_build(&t, &f.m, prompt, 2, &sp, 0, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "L = 0"));
    int bad[2] = {1, 8};
    ck_assert_int_eq(enumerate_build(&t, &f.m, bad, 2, &sp, 2, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "outside the vocabulary"));
    ck_assert_int_eq(enumerate_build(&t, &f.m, prompt, 0, &sp, 2, &err), -1);
    sp.top_p = 0;
    ck_assert_int_eq(enumerate_build(&t, &f.m, prompt, 2, &sp, 2, &err), -1);
    fixture_model_close(&f);
}
END_TEST

Suite *enumerate_suite(void) {
    Suite *s = suite_create("enumerate");
    TCase *tc = harness_tcase("enumerate", 60);
    tcase_add_test(tc, test_law_sums_to_one_and_matches_fresh_forwards);
    tcase_add_test(tc, test_walk_on_a_decode_target);
    tcase_add_test(tc, test_cuts_and_greedy);
    tcase_add_test(tc, test_stop_at_eos);
    tcase_add_test(tc, test_prefix_ids);
    tcase_add_test(tc, test_bad_requests);
    suite_add_tcase(s, tc);
    return s;
}
