/* test_prompt_lookup.c — exercise 8's checks of lookup_find: hand-made
 * contexts, one per rule of the specification (lookup.h); a brute-force
 * reading of that specification on 20 000 random contexts; and the
 * proposer in the round loop on a micro model at temperature 0, where the
 * accounting (passes, accepted lengths) must be what the specification's
 * lookups predict against the greedy text. The project's distribution
 * suite lookup_dist runs beside these (exercise.conf): it passes whatever a
 * lookup proposes, as long as it proposes — exactness is the rule's, not the
 * proposer's — so these tests are what judges the lookup itself.
 *
 * Wrong solutions this checker must reject (wrong/, run by
 * tests/parts/exercises.sh):
 *   earliest-occurrence.c  the first occurrence in the context, not the most recent (hand)
 *   shortest-first.c       n-gram lengths tried from 1 up: the shortest match wins (hand)
 *   off-by-one.c           the copy starts at the match's last token, which the context already has (hand)
 *   no-backoff.c           only the longest n-gram is tried: no shorter one when it does not recur (hand)
 *   no-forward-copy.c      the copy stops at the end of the context: fewer than k drafts (hand)
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "lookup.h"
#include "method.h"
#include "philox.h"

#define SENTINEL (-7)
#define MAX_CTX 64

/* lookup_find on ctx[0..n) must return `want` and, when want > 0, write drafts want_drafts[0..want) and
 * nothing past k. */
static void expect(const char *what, const int *ctx, int n, int max_ngram, int k, int want, const int *want_drafts) {
    int drafts[LOOKUP_MAX_K + 4];
    for (int i = 0; i < LOOKUP_MAX_K + 4; i++) drafts[i] = SENTINEL;
    const int got = lookup_find(ctx, n, max_ngram, k, drafts);
    ck_assert_msg(got == want, "%s: returned %d drafts, want %d", what, got, want);
    for (int i = 0; i < want; i++)
        ck_assert_msg(drafts[i] == want_drafts[i], "%s: draft %d is %d, want %d", what, i, drafts[i], want_drafts[i]);
    for (int i = want; i < LOOKUP_MAX_K + 4; i++)
        ck_assert_msg(drafts[i] == SENTINEL, "%s: drafts[%d] written (%d drafts returned)", what, i, want);
}

START_TEST(test_hand_cases) {
    static const int none[] = {1, 2, 3, 4}, one[] = {5};
    expect("no token recurs", none, 4, 3, 4, 0, NULL);
    expect("a one-token context", one, 1, 3, 4, 0, NULL);
    /* "5 6" recurs: the tokens after it, 7 8 */
    static const int basic[] = {5, 6, 7, 8, 5, 6}, basic_d[] = {7, 8};
    expect("the tokens after the match", basic, 6, 3, 2, 2, basic_d);
    /* "1 2" occurs twice before the end: the later one, followed by 6 */
    static const int recent[] = {1, 2, 5, 1, 2, 6, 1, 2}, recent_d[] = {6};
    expect("the most recent occurrence", recent, 8, 2, 1, 1, recent_d);
    /* "1 2 3" recurs (followed by 4 5); "2 3" and "3" recur later (followed by 6 1): the longest wins */
    static const int longest[] = {1, 2, 3, 4, 5, 2, 3, 6, 1, 2, 3}, longest_d[] = {4, 5};
    expect("the longest n-gram first", longest, 11, 3, 2, 2, longest_d);
    /* with max_ngram 2, "1 2 3" is not looked for: "2 3" at its most recent occurrence */
    static const int capped_d[] = {6, 1};
    expect("no n-gram longer than max_ngram", longest, 11, 2, 2, 2, capped_d);
    /* neither "3 9" nor "7 3 9" recurs: back off to "9" */
    static const int backoff[] = {4, 9, 7, 3, 9}, backoff_d[] = {7, 3};
    expect("back off to one token", backoff, 5, 3, 2, 2, backoff_d);
    /* "1 2" at 1..2: after it 1 2, then the copy reads its own drafts: 1 2 1 */
    static const int periodic[] = {4, 1, 2, 1, 2}, periodic_d[] = {1, 2, 1, 2, 1};
    expect("the copy runs on past the end", periodic, 5, 3, 5, 5, periodic_d);
    static const int twice[] = {7, 7}, twice_d[] = {7, 7, 7};
    expect("a token after itself", twice, 2, 3, 3, 3, twice_d);
    /* the suffix itself is not an earlier occurrence */
    static const int self[] = {3, 1, 4};
    expect("the context's own end is not a match", self, 3, 1, 2, 0, NULL);
}
END_TEST

/* The specification read literally: every occurrence of each n-gram, the last kept. */
static int spec_lookup(const int *ctx, int n, int max_ngram, int k, int *drafts) {
    for (int m = max_ngram; m >= 1; m--) {
        if (m > n - 1) continue;
        int last_end = -1;
        for (int start = 0; start + m - 1 <= n - 2; start++)
            if (!memcmp(ctx + start, ctx + n - m, (size_t)m * sizeof(int))) last_end = start + m - 1;
        if (last_end < 0) continue;
        int ext[MAX_CTX + LOOKUP_MAX_K];
        memcpy(ext, ctx, (size_t)n * sizeof(int));
        for (int i = 0; i < k; i++) drafts[i] = ext[n + i] = ext[last_end + 1 + i];
        return k;
    }
    return 0;
}

START_TEST(test_against_the_specification) {
    int hits = 0;
    for (int c = 0; c < 20000; c++) {
        const int V = 2 + (int)(philox_uniform(81, 1, (uint64_t)c, 0) * 5); /* small vocabularies: many repeats */
        const int n = 1 + (int)(philox_uniform(81, 2, (uint64_t)c, 0) * 40);
        const int max_ngram = 1 + (int)(philox_uniform(81, 3, (uint64_t)c, 0) * 5);
        const int k = 1 + (int)(philox_uniform(81, 4, (uint64_t)c, 0) * 8);
        int ctx[MAX_CTX], want[LOOKUP_MAX_K];
        for (int i = 0; i < n; i++) ctx[i] = (int)(philox_uniform(81, 5, (uint64_t)c, (uint32_t)i) * V);
        const int found = spec_lookup(ctx, n, max_ngram, k, want);
        hits += found > 0;
        char what[128];
        snprintf(what, sizeof what, "random context %d (n %d, V %d, max_ngram %d, k %d)", c, n, V, max_ngram, k);
        expect(what, ctx, n, max_ngram, k, found, want);
    }
    ck_assert_int_gt(hits, 10000); /* most contexts have a repeat: the comparison is not of empty lookups */
}
END_TEST

/* The proposer in the round loop at temperature 0: a round's drafts are
 * the lookup of the context so far, and it accepts the drafts that agree
 * with the greedy text, so passes and accepted lengths follow from the
 * greedy tokens and spec_lookup alone. */
#define N_TOKENS 40

static void expect_accounting(model *m, const method_parts *parts, const int *prompt, int n_prompt, int k,
                              int max_ngram, long *hit_rounds) {
    int greedy[N_TOKENS], ctx[MAX_CTX], drafts[LOOKUP_MAX_K];
    fixture_greedy_oracle(m, prompt, n_prompt, N_TOKENS, greedy);
    long passes = 0, hist[LOOKUP_MAX_K + 1] = {0};
    for (int out = 0; out < N_TOKENS;) {
        memcpy(ctx, prompt, (size_t)n_prompt * sizeof(int));
        memcpy(ctx + n_prompt, greedy, (size_t)out * sizeof(int));
        const int remaining = N_TOKENS - out;
        int depth = remaining > 1 ? spec_lookup(ctx, n_prompt + out, max_ngram, k, drafts) : 0;
        if (depth > remaining - 1) depth = remaining - 1;
        int accepted = 0;
        while (accepted < depth && drafts[accepted] == greedy[out + accepted]) accepted++;
        passes++;
        if (depth > 0) hist[accepted]++, (*hit_rounds)++;
        out += accepted + 1;
    }
    char flags[96];
    snprintf(flags, sizeof flags, "--method lookup --k %d --ngram %d --temperature 0", k, max_ngram);
    method_spec s = fixture_spec(flags);
    s.max_tokens = N_TOKENS;
    s.stop_at_eos = 0;
    decode_output o;
    sp_error err;
    ck_assert_msg(method_generate(&s, parts, prompt, n_prompt, &o, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(o.n, N_TOKENS);
    ck_assert_msg(!memcmp(o.tokens, greedy, sizeof greedy), "%s: not the greedy tokens", flags);
    ck_assert_msg(o.acc.target_passes == passes, "%s, prompt of %d: %ld passes, the lookups predict %ld", flags,
                  n_prompt, o.acc.target_passes, passes);
    for (int j = 0; j <= k; j++)
        ck_assert_msg(o.acc.length_hist[j] == hist[j], "%s, prompt of %d: %ld rounds accepted %d drafts, want %ld",
                      flags, n_prompt, o.acc.length_hist[j], j, hist[j]);
    decode_output_free(&o);
}

START_TEST(test_accounting_in_the_round_loop) {
    fixture_model t;
    fixture_model_open(&t, "micro", 15, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, NULL, NULL);
    const int V = t.m.cfg.vocab_size;
    long hits = 0;
    for (int i = 0; i < 6; i++) {
        int prompt[16], n = 4 + 2 * i;
        for (int j = 0; j < n; j++) prompt[j] = (i * 5 + (j % (2 + i % 3)) * 3 + 1) % V; /* a phrase repeated */
        expect_accounting(&t.m, &p.parts, prompt, n, 3, 3, &hits);
        expect_accounting(&t.m, &p.parts, prompt, n, 5, 1, &hits);
    }
    ck_assert_int_gt(hits, 20); /* lookups hit: the comparison is not of empty rounds */
    fixture_parts_close(&p);
    fixture_model_close(&t);
}
END_TEST

Suite *exercise_prompt_lookup_suite(void) {
    Suite *s = suite_create("exercise_prompt_lookup");
    TCase *hand = harness_tcase("hand", 30), *brute = harness_tcase("brute", 60), *loop = harness_tcase("loop", 60);
    tcase_add_test(hand, test_hand_cases);
    tcase_add_test(brute, test_against_the_specification);
    tcase_add_test(loop, test_accounting_in_the_round_loop);
    suite_add_tcase(s, hand);
    suite_add_tcase(s, brute);
    suite_add_tcase(s, loop);
    return s;
}
