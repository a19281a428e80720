/* test_decode.c — greedy canaries and accounting of the round loop: at
 * temperature 0 every speculative method must emit exactly the plain greedy
 * tokens, whatever its proposer proposes — including rounds that reject at
 * once, rounds that accept a whole block, and rollbacks across DeltaNet
 * layers (every micro model has them). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "fixtures.h"
#include "harness.h"
#include "mtp.h"
#include "speculative.h"

#define N_PROMPTS 20
#define N_TOKENS 48

static void prompt_for(int i, int V, int *prompt, int *n) {
    *n = 1 + i % 5; /* lengths 1..5: a one-token prompt exercises the empty first proposal */
    for (int t = 0; t < *n; t++) prompt[t] = (i * 7 + t * 3 + 1) % V;
}

static decode_options greedy_options(void) {
    decode_options o = decode_defaults();
    o.sampling.temperature = 0;
    o.max_tokens = N_TOKENS;
    o.stop_at_eos = 0;
    return o;
}

static void run_plain(model *m, const int *prompt, int n, decode_output *out) {
    decode_options o = greedy_options();
    sp_error err;
    ck_assert_msg(decode_run(m, NULL, "greedy", 0, prompt, n, &o, out, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(out->n, N_TOKENS);
}

static void assert_same_tokens(const decode_output *a, const decode_output *b, int prompt_index) {
    ck_assert_int_eq(a->n, b->n);
    for (int i = 0; i < a->n; i++)
        ck_assert_msg(a->tokens[i] == b->tokens[i], "prompt %d, token %d: greedy %d, speculative %d", prompt_index, i,
                      a->tokens[i], b->tokens[i]);
}

/* committed = Σ accepted + passes, and the histogram covers every round. */
static void assert_consistent(const run_accounting *a) {
    ck_assert_int_eq(a->committed, a->accepted_total + a->target_passes);
    long rounds = 0;
    for (int j = 0; j <= ACC_MAX_DEPTH + 1; j++) rounds += a->length_hist[j];
    ck_assert_int_le(rounds, a->target_passes);
}

/* Runs spec (draft = `draft`) or mtp against plain greedy on N_PROMPTS
 * prompts; returns the summed accounting for the caller's extra checks. */
static void canary(model *target, model *draft, int use_mtp, int k, run_accounting *sum) {
    memset(sum, 0, sizeof *sum);
    const int V = target->cfg.vocab_size;
    for (int i = 0; i < N_PROMPTS; i++) {
        int prompt[8], n;
        prompt_for(i, V, prompt, &n);
        decode_output plain, spec;
        run_plain(target, prompt, n, &plain);
        decode_options o = greedy_options();
        proposer p;
        sp_error err;
        int rc = use_mtp ? mtp_proposer_build(&p, target, k, i % 2, &o.sampling, o.seed, &err)
                         : spec_proposer_build(&p, draft, target, k, &o.sampling, o.seed, &err);
        ck_assert_msg(rc == 0, "%s", err.msg);
        ck_assert_msg(decode_run(target, &p, "canary", k, prompt, n, &o, &spec, &err) == 0, "%s", err.msg);
        assert_same_tokens(&plain, &spec, i);
        assert_consistent(&spec.acc);
        sum->target_passes += spec.acc.target_passes;
        sum->committed += spec.acc.committed;
        for (int j = 0; j <= ACC_MAX_DEPTH + 1; j++) sum->length_hist[j] += spec.acc.length_hist[j];
        p.release(&p);
        decode_output_free(&plain);
        decode_output_free(&spec);
    }
}

START_TEST(test_spec_random_draft_matches_greedy) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 11, NULL);
    fixture_model_open(&d, "micro-draft", 12, NULL);
    run_accounting sum;
    canary(&t.m, &d.m, 0, 4, &sum);
    /* a random draft is mostly wrong: many rounds reject the first proposal */
    ck_assert_int_gt(sum.length_hist[0], 100);
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_spec_self_draft_accepts_whole_blocks) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 13, NULL);
    fixture_model_open(&d, "micro", 13, NULL); /* the target as its own draft: every proposal is right */
    for (int k = 1; k <= 5; k++) {
        run_accounting sum;
        canary(&t.m, &d.m, 0, k, &sum);
        long full = sum.length_hist[k], rounds = 0;
        for (int j = 0; j <= ACC_MAX_DEPTH + 1; j++) rounds += sum.length_hist[j];
        /* only a round cut short by the token budget accepts fewer than k */
        ck_assert_msg(full >= rounds - N_PROMPTS, "k=%d: %ld of %ld rounds fully accepted", k, full, rounds);
        ck_assert_int_eq(sum.length_hist[0], 0);
    }
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_mtp_matches_greedy) {
    fixture_model t;
    fixture_model_open(&t, "micro", 14, NULL);
    for (int k = 1; k <= 4; k += 3) {
        run_accounting sum;
        canary(&t.m, NULL, 1, k, &sum);
        ck_assert_int_gt(sum.length_hist[0], 0); /* a random MTP layer is rejected at once, often */
    }
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_embedded_model_canaries) {
    const char *dir = fixture_embedded_model();
    const char *draft_dir = "models/tiny-shakespeare-draft";
    model t, d;
    sp_error err;
    ck_assert_msg(model_load(&t, dir, &err) == 0, "%s", err.msg);
    ck_assert_msg(model_load(&d, draft_dir, &err) == 0, "%s", err.msg);
    run_accounting sum;
    canary(&t, &d, 0, 4, &sum);
    ck_assert_int_gt(sum.length_hist[4], 0); /* a trained draft gets whole blocks accepted */
    canary(&t, NULL, 1, 3, &sum);
    ck_assert_int_gt(sum.length_hist[3], 0);
    model_free(&d);
    model_free(&t);
}
END_TEST

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
    proposer p;
    sp_error err;
    sampler_params sp = sampler_defaults();
    ck_assert_int_eq(spec_proposer_build(&p, &d.m, &t.m, 4, &sp, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "vocabulary"));
    ck_assert_int_eq(spec_proposer_build(&p, &t.m, &t.m, 0, &sp, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "k = 0"));
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_mtp_needs_module) {
    fixture_model t;
    fixture_model_open(&t, "micro-draft", 3, NULL); /* the draft preset has no MTP module */
    proposer p;
    sp_error err;
    sampler_params sp = sampler_defaults();
    ck_assert_int_eq(mtp_proposer_build(&p, &t.m, 2, 0, &sp, 1, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "MTP"));
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
    decode_options o = greedy_options();
    o.on_commit = count_burst;
    proposer p;
    sp_error err;
    ck_assert(spec_proposer_build(&p, &t.m, &t.m, 3, &o.sampling, 1, &err) == 0);
    decode_output out;
    int prompt[2] = {1, 2};
    n_bursts = n_streamed = 0;
    ck_assert_msg(decode_run(&t.m, &p, "spec", 3, prompt, 2, &o, &out, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(n_streamed, out.n);
    ck_assert_int_eq(n_bursts, out.acc.target_passes);
    ck_assert_int_lt(n_bursts, out.n); /* bursts of several tokens */
    p.release(&p);
    decode_output_free(&out);
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_eos_stops_and_is_emitted) {
    fixture_model t;
    fixture_model_open(&t, "micro", 16, NULL);
    decode_options o = greedy_options();
    int prompt[1] = {3};
    decode_output plain;
    sp_error err;
    ck_assert(decode_run(&t.m, NULL, "greedy", 0, prompt, 1, &o, &plain, &err) == 0);
    /* make the 5th greedy token the EOS and run again with stopping on */
    t.m.cfg.num_eos = 1;
    t.m.cfg.eos_token_ids[0] = plain.tokens[4];
    int first = 0;
    while (plain.tokens[first] != plain.tokens[4]) first++;
    o.stop_at_eos = 1;
    proposer p;
    ck_assert(spec_proposer_build(&p, &t.m, &t.m, 4, &o.sampling, 1, &err) == 0);
    decode_output out;
    ck_assert(decode_run(&t.m, &p, "spec", 4, prompt, 1, &o, &out, &err) == 0);
    ck_assert_int_eq(out.n, first + 1);
    ck_assert_int_eq(out.tokens[out.n - 1], plain.tokens[4]);
    ck_assert_int_eq(out.acc.committed, out.acc.accepted_total + out.acc.target_passes);
    p.release(&p);
    decode_output_free(&out);
    decode_output_free(&plain);
    fixture_model_close(&t);
}
END_TEST

START_TEST(test_bad_prompt_rejected) {
    fixture_model t;
    fixture_model_open(&t, "micro", 17, NULL);
    decode_options o = greedy_options();
    decode_output out;
    sp_error err;
    int bad[2] = {1, 999};
    ck_assert_int_eq(decode_run(&t.m, NULL, "greedy", 0, bad, 2, &o, &out, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "outside the vocabulary"));
    ck_assert_int_eq(decode_run(&t.m, NULL, "greedy", 0, bad, 0, &o, &out, &err), -1);
    o.sampling.temperature = -1;
    ck_assert_int_eq(decode_run(&t.m, NULL, "greedy", 0, bad, 1, &o, &out, &err), -1);
    fixture_model_close(&t);
}
END_TEST

Suite *decode_suite(void) {
    Suite *s = suite_create("decode");
    TCase *tc = harness_tcase("canaries", 120);
    tcase_add_test(tc, test_spec_random_draft_matches_greedy);
    tcase_add_test(tc, test_spec_self_draft_accepts_whole_blocks);
    tcase_add_test(tc, test_mtp_matches_greedy);
    if (fixture_embedded_model())
        tcase_add_test(tc, test_embedded_model_canaries);
    else
        harness_skip("decode", "embedded_model_canaries", "models/tiny-shakespeare has no weights in this checkout");
    tcase_add_test(tc, test_draft_vocabulary_must_match);
    tcase_add_test(tc, test_mtp_needs_module);
    tcase_add_test(tc, test_stream_callback_gets_every_burst);
    tcase_add_test(tc, test_eos_stops_and_is_emitted);
    tcase_add_test(tc, test_bad_prompt_rejected);
    suite_add_tcase(s, tc);
    return s;
}
