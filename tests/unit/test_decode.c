/* test_decode.c — greedy canaries and accounting of the round loop: at temperature 0 every speculative method must
 * emit exactly the greedy tokens, whatever its proposer proposes, through rejections, whole accepted blocks and
 * rollbacks across DeltaNet layers. The tokens come from an independent oracle (fixture_greedy_oracle), so a bug
 * in the shared loop cannot cancel out; mutants of the loop (tests/mutants) show the canaries catch such bugs. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "fixtures.h"
#include "harness.h"
#include "method.h"
#include "reference_target.h"

#define N_PROMPTS 20
#define N_TOKENS 48

static void prompt_for(int i, int V, int *prompt, int *n) {
    *n = 1 + i % 5; /* lengths 1..5: a one-token prompt exercises the empty first proposal */
    for (int t = 0; t < *n; t++) prompt[t] = (i * 7 + t * 3 + 1) % V;
}

/* committed = Σ accepted + passes, and the histogram covers every round. */
static void assert_consistent(const run_accounting *a) {
    ck_assert_int_eq(a->committed, a->accepted_total + a->target_passes);
    long rounds = 0;
    for (int j = 0; j <= ACC_MAX_DEPTH + 1; j++) rounds += a->length_hist[j];
    ck_assert_int_le(rounds, a->target_passes);
}

/* A round loop: the real one, or a mutant of it (tests/mutants). */
typedef int (*loop_fn)(decode_target *t, proposer *prop, const int *prompt, int n_prompt, const decode_options *opt,
                       decode_output *out, sp_error *err);

/* Runs `flags` (at temperature 0, N_TOKENS, EOS off) through `loop` on one prompt. */
static void run_loop(loop_fn loop, const method_parts *parts, const char *flags, const int *prompt, int n,
                     decode_output *out) {
    method_spec s = fixture_spec(flags);
    s.max_tokens = N_TOKENS;
    s.stop_at_eos = 0;
    method_built b;
    sp_error err;
    ck_assert_msg(method_build(&b, &s, parts, &err) == 0, "%s", err.msg);
    ck_assert_msg(loop(parts->target, b.proposer, prompt, n, &b.options, out, &err) == 0, "%s", err.msg);
    method_release(&b);
}

/* Number of the N_PROMPTS prompts on which `loop` running `flags` differs
 * from the oracle; sums the accounting of the runs into *sum when not NULL. */
static int canary(loop_fn loop, model *target, const method_parts *parts, const char *flags, int n_prompts,
                  run_accounting *sum) {
    if (sum) memset(sum, 0, sizeof *sum);
    const int V = target->cfg.vocab_size;
    int wrong = 0;
    for (int i = 0; i < n_prompts; i++) {
        int prompt[8], n, want[N_TOKENS];
        prompt_for(i, V, prompt, &n);
        fixture_greedy_oracle(target, prompt, n, N_TOKENS, want);
        decode_output out;
        run_loop(loop, parts, flags, prompt, n, &out);
        wrong += out.n != N_TOKENS || memcmp(out.tokens, want, sizeof want) != 0;
        if (sum) {
            assert_consistent(&out.acc);
            sum->target_passes += out.acc.target_passes;
            sum->committed += out.acc.committed;
            for (int j = 0; j <= ACC_MAX_DEPTH + 1; j++) sum->length_hist[j] += out.acc.length_hist[j];
        }
        decode_output_free(&out);
    }
    return wrong;
}

static void assert_canary(model *target, const method_parts *parts, const char *flags, run_accounting *sum) {
    const int n = harness_prompts(N_PROMPTS);
    const int wrong = canary(decode_run, target, parts, flags, n, sum);
    ck_assert_msg(wrong == 0, "%s: %d of %d prompts differ from the greedy oracle", flags, wrong, n);
}

START_TEST(test_plain_greedy_matches_the_oracle) {
    fixture_model t;
    fixture_model_open(&t, "micro", 10, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, NULL, NULL);
    run_accounting sum;
    assert_canary(&t.m, &p.parts, "--method greedy", &sum);
    ck_assert_int_eq(sum.committed, sum.target_passes); /* one token per pass */
    fixture_parts_close(&p);
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_spec_random_draft_matches_greedy) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 11, NULL);
    fixture_model_open(&d, "micro-draft", 12, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, &d.m, NULL);
    run_accounting sum;
    assert_canary(&t.m, &p.parts, "--method spec --k 4 --temperature 0", &sum);
    /* a random draft is mostly wrong: many rounds reject the first proposal */
    ck_assert_int_gt(sum.length_hist[0], 5 * harness_prompts(N_PROMPTS));
    fixture_parts_close(&p);
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_spec_self_draft_accepts_whole_blocks) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 13, NULL);
    fixture_model_open(&d, "micro", 13, NULL); /* the target as its own draft: every proposal is right */
    fixture_parts p;
    fixture_parts_open(&p, &t.m, &d.m, NULL);
    for (int k = 1; k <= 5; k++) {
        char flags[64];
        snprintf(flags, sizeof flags, "--method spec --k %d --temperature 0", k);
        run_accounting sum;
        assert_canary(&t.m, &p.parts, flags, &sum);
        long full = sum.length_hist[k], rounds = 0;
        for (int j = 0; j <= ACC_MAX_DEPTH + 1; j++) rounds += sum.length_hist[j];
        /* only a round cut short by the token budget accepts fewer than k */
        ck_assert_msg(full >= rounds - harness_prompts(N_PROMPTS), "k=%d: %ld of %ld rounds fully accepted", k, full,
                      rounds);
        ck_assert_int_eq(sum.length_hist[0], 0);
    }
    fixture_parts_close(&p);
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_mtp_matches_greedy) {
    fixture_model t;
    fixture_model_open(&t, "micro", 14, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, NULL, NULL);
    static const char *const flags[] = {"--method mtp --k 1 --temperature 0 --mtp-argmax",
                                        "--method mtp --k 4 --temperature 0 --mtp-sample"};
    for (int i = 0; i < 2; i++) {
        run_accounting sum;
        assert_canary(&t.m, &p.parts, flags[i], &sum);
        ck_assert_int_gt(sum.length_hist[0], 0); /* a random MTP layer is rejected at once, often */
    }
    fixture_parts_close(&p);
    fixture_model_close(&t);
}
END_TEST

/* Prompt lookup proposes what followed an earlier occurrence of the context's
 * end: on a random micro model at temperature 0 the greedy text loops, so
 * lookups are proposed, accepted and rejected. */
START_TEST(test_lookup_matches_greedy) {
    fixture_model t;
    fixture_model_open(&t, "micro", 15, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, NULL, NULL);
    static const char *const flags[] = {"--method lookup --k 1 --ngram 1 --temperature 0",
                                        "--method lookup --k 4 --temperature 0",
                                        "--method lookup --k 6 --ngram 5 --temperature 0 --rule greedy"};
    for (int i = 0; i < 3; i++) {
        run_accounting sum;
        assert_canary(&t.m, &p.parts, flags[i], &sum);
        long rounds = 0;
        for (int j = 0; j <= ACC_MAX_DEPTH + 1; j++) rounds += sum.length_hist[j];
        ck_assert_msg(rounds > 0 && sum.length_hist[0] > 0, "%s: %ld rounds proposed, %ld rejected at once", flags[i],
                      rounds, sum.length_hist[0]);
        ck_assert_msg(sum.committed > sum.target_passes, "%s: nothing accepted", flags[i]);
    }
    fixture_parts_close(&p);
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_embedded_model_canaries) {
    const char *dir = fixture_embedded_model();
    model t, d;
    sp_error err;
    ck_assert_msg(model_load(&t, dir, &err) == 0, "%s", err.msg);
    ck_assert_msg(model_load(&d, "models/tiny-shakespeare-draft", &err) == 0, "%s", err.msg);
    fixture_parts p;
    fixture_parts_open(&p, &t, &d, NULL);
    run_accounting sum;
    assert_canary(&t, &p.parts, "--method spec --k 4 --temperature 0", &sum);
    ck_assert_int_gt(sum.length_hist[4], 0); /* a trained draft gets whole blocks accepted */
    assert_canary(&t, &p.parts, "--method mtp --k 3 --temperature 0", &sum);
    ck_assert_int_gt(sum.length_hist[3], 0);
    assert_canary(&t, &p.parts, "--method lookup --k 4 --temperature 0", &sum);
    ck_assert_int_gt(sum.committed, sum.target_passes); /* the greedy text repeats itself: some lookups hit */
    fixture_parts_close(&p);
    model_free(&d);
    model_free(&t);
}
END_TEST

/* ---- mutants of the round loop ------------------------------------------------------- */

/* tests/mutants builds the loop (decode.c, decode_batch.c) again with one planted change each. */
int mutant_bonus_decode_run(decode_target *t, proposer *prop, const int *prompt, int n_prompt,
                            const decode_options *opt, decode_output *out, sp_error *err);
int mutant_prompt_decode_run(decode_target *t, proposer *prop, const int *prompt, int n_prompt,
                             const decode_options *opt, decode_output *out, sp_error *err);

/* Dropping the bonus token of a fully accepted round: the speculative canary
 * catches it (plain decoding never has a fully accepted proposal). */
START_TEST(test_canary_catches_a_dropped_bonus) {
    fixture_model t;
    fixture_model_open(&t, "micro", 13, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, &t.m, NULL); /* self-draft: every round is fully accepted */
    const char *spec = "--method spec --k 3 --temperature 0";
    ck_assert_int_eq(canary(decode_run, &t.m, &p.parts, spec, 4, NULL), 0);
    ck_assert_int_eq(canary(mutant_bonus_decode_run, &t.m, &p.parts, spec, 4, NULL), 4);
    fixture_parts_close(&p);
    fixture_model_close(&t);
}
END_TEST

/* Feeding the prompt's last token twice changes plain and speculative
 * decoding alike: comparing the loop with itself would pass; the oracle does not. */
START_TEST(test_oracle_catches_what_the_loop_cannot_see) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 11, NULL);
    fixture_model_open(&d, "micro-draft", 12, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, &d.m, NULL);
    const char *spec = "--method spec --k 4 --temperature 0";
    ck_assert_int_ge(canary(mutant_prompt_decode_run, &t.m, &p.parts, spec, 6, NULL), 5);
    ck_assert_int_ge(canary(mutant_prompt_decode_run, &t.m, &p.parts, "--method greedy", 6, NULL), 5);
    /* … while the mutant agrees with itself, plain against speculative */
    for (int i = 0; i < 6; i++) {
        int prompt[8], n;
        prompt_for(i, t.m.cfg.vocab_size, prompt, &n);
        decode_output a, b;
        run_loop(mutant_prompt_decode_run, &p.parts, "--method greedy", prompt, n, &a);
        run_loop(mutant_prompt_decode_run, &p.parts, spec, prompt, n, &b);
        ck_assert_int_eq(a.n, b.n);
        ck_assert_msg(memcmp(a.tokens, b.tokens, (size_t)a.n * sizeof(int)) == 0, "prompt %d", i);
        decode_output_free(&a);
        decode_output_free(&b);
    }
    fixture_parts_close(&p);
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

/* ---- the factory's refusals and the loop's contract ------------------------------------- */

static int vocab_mismatch_tweak_seen;
static void tiny_vocab(model_config *c) {
    c->vocab_size = 24;
    c->num_eos = 0;
    vocab_mismatch_tweak_seen = 1;
}

START_TEST(test_draft_vocabulary_must_match) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 1, NULL);
    fixture_model_open(&d, "micro-draft", 2, tiny_vocab);
    ck_assert(vocab_mismatch_tweak_seen);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, &d.m, NULL);
    method_spec s = fixture_spec("--method spec --k 4");
    method_built b;
    sp_error err;
    ck_assert_int_eq(method_build(&b, &s, &p.parts, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "vocabulary"));
    fixture_parts_close(&p);
    fixture_parts_open(&p, &t.m, &t.m, NULL);
    s.k = 0; /* past the parser's own range check: the proposer refuses it too */
    ck_assert_int_eq(method_build(&b, &s, &p.parts, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "k = 0"));
    fixture_parts_close(&p);
    fixture_parts_open(&p, &t.m, NULL, NULL);
    s.k = 4;
    ck_assert_int_eq(method_build(&b, &s, &p.parts, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "needs a draft model"));
    fixture_parts_close(&p);
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_mtp_needs_module) {
    fixture_model t;
    fixture_model_open(&t, "micro-draft", 3, NULL); /* the draft preset has no MTP module */
    fixture_parts p;
    fixture_parts_open(&p, &t.m, NULL, NULL);
    ck_assert_ptr_null(p.parts.mtp);
    method_spec s = fixture_spec("--method mtp --k 2");
    method_built b;
    sp_error err;
    ck_assert_int_eq(method_build(&b, &s, &p.parts, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "MTP"));
    stepper st;
    ck_assert_int_eq(reference_mtp_stepper_build(&st, &t.m, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "no MTP module"));
    fixture_parts_close(&p);
    fixture_model_close(&t);
}
END_TEST

static int n_bursts, n_streamed;
static void count_burst(const int *tokens, int n, void *user) {
    (void)tokens, (void)user;
    n_bursts++;
    n_streamed += n;
}

START_TEST(test_stream_callback_gets_every_burst) {
    fixture_model t;
    fixture_model_open(&t, "micro", 15, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, &t.m, NULL);
    method_spec s = fixture_spec("--method spec --k 3 --temperature 0 --max-tokens 48 --no-eos");
    method_built b;
    sp_error err;
    ck_assert_msg(method_build(&b, &s, &p.parts, &err) == 0, "%s", err.msg);
    b.options.on_commit = count_burst;
    decode_output out;
    int prompt[2] = {1, 2};
    n_bursts = n_streamed = 0;
    ck_assert_msg(decode_run(p.parts.target, b.proposer, prompt, 2, &b.options, &out, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(n_streamed, out.n);
    ck_assert_int_eq(n_bursts, out.acc.target_passes);
    ck_assert_int_lt(n_bursts, out.n); /* bursts of several tokens */
    method_release(&b);
    decode_output_free(&out);
    fixture_parts_close(&p);
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_eos_stops_and_is_emitted) {
    fixture_model t;
    fixture_model_open(&t, "micro", 16, NULL);
    int prompt[1] = {3}, greedy[N_TOKENS];
    fixture_greedy_oracle(&t.m, prompt, 1, N_TOKENS, greedy);
    /* make the 5th greedy token the EOS and run again with stopping on */
    t.m.cfg.num_eos = 1;
    t.m.cfg.eos_token_ids[0] = greedy[4];
    int first = 0;
    while (greedy[first] != greedy[4]) first++;
    fixture_parts p;
    fixture_parts_open(&p, &t.m, &t.m, NULL);
    method_spec s = fixture_spec("--method spec --k 4 --temperature 0 --max-tokens 48");
    decode_output out;
    sp_error err;
    ck_assert_msg(method_generate(&s, &p.parts, prompt, 1, &out, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(out.n, first + 1);
    ck_assert_int_eq(out.tokens[out.n - 1], greedy[4]);
    ck_assert_int_eq(out.acc.committed, out.acc.accepted_total + out.acc.target_passes);
    decode_output_free(&out);
    fixture_parts_close(&p);
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_bad_prompt_rejected) {
    fixture_model t;
    fixture_model_open(&t, "micro", 17, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, NULL, NULL);
    method_spec s = fixture_spec("--method greedy");
    decode_output out;
    sp_error err;
    int bad[2] = {1, 999};
    ck_assert_int_eq(method_generate(&s, &p.parts, bad, 2, &out, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "outside the vocabulary"));
    ck_assert_int_eq(method_generate(&s, &p.parts, bad, 0, &out, &err), -1);
    s.sampling.temperature = -1;
    ck_assert_int_eq(method_generate(&s, &p.parts, bad, 1, &out, &err), -1);
    fixture_parts_close(&p);
    fixture_model_close(&t);
}
END_TEST

Suite *decode_suite(void) {
    Suite *s = suite_create("decode");
    TCase *tc = harness_tcase("canaries", 120);
    tcase_add_test(tc, test_plain_greedy_matches_the_oracle);
    tcase_add_test(tc, test_spec_random_draft_matches_greedy);
    tcase_add_test(tc, test_spec_self_draft_accepts_whole_blocks);
    tcase_add_test(tc, test_mtp_matches_greedy);
    tcase_add_test(tc, test_lookup_matches_greedy);
    if (fixture_embedded_model())
        tcase_add_test(tc, test_embedded_model_canaries);
    else
        harness_skip("decode", "embedded_model_canaries", "models/tiny-shakespeare has no weights in this checkout");
    tcase_add_test(tc, test_canary_catches_a_dropped_bonus);
    tcase_add_test(tc, test_oracle_catches_what_the_loop_cannot_see);
    tcase_add_test(tc, test_draft_vocabulary_must_match);
    tcase_add_test(tc, test_mtp_needs_module);
    tcase_add_test(tc, test_stream_callback_gets_every_burst);
    tcase_add_test(tc, test_eos_stops_and_is_emitted);
    tcase_add_test(tc, test_bad_prompt_rejected);
    suite_add_tcase(s, tc);
    return s;
}
