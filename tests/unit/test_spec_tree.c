/* test_spec_tree.c — trees of drafts (--tree-shape) from the draft model
 * (--method spec, speculative.h) and the MTP module (--method mtp, mtp.h):
 * the shape's parsing and flags, proposals that follow the shape (children
 * per depth, siblings distinct without replacement, the top ranks at
 * temperature 0, q rows the children came from; the draft model's), the
 * chain as the shape of k ones (bit for bit, both), and greedy canaries on
 * the reference: at temperature 0 a tree emits exactly the oracle's tokens,
 * with a random draft (most branches rejected, the draft rewound and caught
 * up every round), with the target as its own draft (every first child
 * accepted) and from the target's MTP module.
 * The engine's canary is in test_engine.c, the output law in
 * tests/stat/test_spec_tree_dist.c. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "fixtures.h"
#include "harness.h"
#include "method.h"
#include "speculative.h"

#define N_TOKENS 40

static void expect_refused(const char *flags, const char *want) {
    method_spec s = method_spec_defaults();
    sp_error err;
    ck_assert_msg(method_spec_parse(&s, flags, &err) == -1, "\"%s\" was accepted", flags);
    ck_assert_msg(strstr(err.msg, want), "\"%s\": wanted \"%s\" in: %s", flags, want, err.msg);
}

START_TEST(test_shape_and_flags) {
    tree_shape s;
    sp_error err;
    ck_assert(tree_shape_parse("--tree-shape", "2,2,1,1", &s, &err) == 0);
    ck_assert_int_eq(s.depth, 4);
    ck_assert_int_eq(tree_shape_nodes(&s), 14);
    char buf[64];
    tree_shape_format(&s, buf, sizeof buf);
    ck_assert_str_eq(buf, "2,2,1,1");
    tree_shape chain = tree_shape_chain(5);
    ck_assert(chain.depth == 5 && tree_shape_nodes(&chain) == 5);
    static const char *const bad[] = {"", "0", "2,,1", "2,", "17", "2;2", "x", "16,16"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(tree_shape_parse("--tree-shape", bad[i], &s, &err) == -1, "'%s' was accepted", bad[i]);
    ck_assert_msg(strstr(err.msg, "more than 255 nodes"), "%s", err.msg);

    method_spec m = fixture_spec("--method spec --tree-shape 2,1 --temperature 0.8");
    ck_assert_int_eq(m.rule, METHOD_RULE_EXACT_NOREPL);
    m = fixture_spec("--method spec --tree-shape 2,1 --temperature 0");
    ck_assert_int_eq(m.rule, METHOD_RULE_GREEDY);
    m = fixture_spec("--method spec --tree-shape 2,1 --temperature 0.8 --rule exact");
    ck_assert_int_eq(m.rule, METHOD_RULE_EXACT);
    method_spec_label(&m, buf, sizeof buf);
    ck_assert_str_eq(buf, "spec tree 2,1 (4 nodes), exact rule");
    expect_refused("--method spec --k 3 --tree-shape 2,1", "--k and --tree-shape both set the depth");
    expect_refused("--method lookup --tree-shape 2,1", "--tree-shape only applies to --method spec and mtp");
    expect_refused("--method mtp --tree-shape 2,1 --mtp-argmax", "--mtp-argmax gives every sibling the same token");
    m = fixture_spec("--method mtp --tree-shape 3,1 --temperature 0.8");
    ck_assert(m.rule == METHOD_RULE_EXACT_NOREPL && m.drafts == MTP_DRAFTS_SAMPLED);
    method_spec_label(&m, buf, sizeof buf);
    ck_assert_str_eq(buf, "mtp tree 3,1 (6 nodes), exact-norepl rule");
    expect_refused("--method spec --tree-shape 2,0", "--tree-shape '2,0'");
}
END_TEST

/* One proposal of `flags` at the start of a run on the fixture's draft, checked against the shape. */
static void check_proposal(const method_parts *parts, const char *flags, int V, children_kind want_kind) {
    method_spec s = fixture_spec(flags);
    method_built b;
    sp_error err;
    ck_assert_msg(method_build(&b, &s, parts, &err) == 0, "%s", err.msg);
    proposer *p = b.proposer;
    ck_assert_int_eq(p->kind, want_kind);
    const int prompt[3] = {1, 4, 2};
    ck_assert_msg(p->commit(p, prompt, NULL, 2, prompt[2], &err) == 0, "%s", err.msg);
    token_tree t;
    tree_build(&t, V, p->tree_capacity + 1);
    for (uint64_t round = 0; round < 20; round++) {
        tree_reset(&t, prompt[2], p->kind);
        const propose_call call = {&s.sampling, 7, round, 2, 32};
        ck_assert_msg(p->propose(p, &t, &call, &err) == 0, "%s", err.msg);
        int per_depth[TREE_SHAPE_MAX_DEPTH + 1] = {0}, kids[TREE_SHAPE_MAX_BRANCH + 1];
        for (int u = 0; u < t.n; u++) {
            per_depth[t.depth[u]]++;
            const int m = tree_children(&t, u, kids, TREE_SHAPE_MAX_BRANCH + 1);
            if (t.depth[u] == s.shape.depth) {
                ck_assert_int_eq(m, 0);
                continue;
            }
            const float *q = tree_q_const(&t, u);
            double sum = 0;
            for (int x = 0; x < V; x++) sum += q[x];
            ck_assert_msg(fabs(sum - 1) < 1e-5, "%s: node %d's q sums to %g", flags, u, sum);
            /* without replacement a node has fewer children only when q has fewer tokens */
            int support = 0;
            for (int x = 0; x < V; x++) support += q[x] > 0;
            const int b_u = s.shape.branch[t.depth[u]];
            ck_assert_int_eq(m, want_kind == CHILDREN_NO_REPLACEMENT && support < b_u ? support : b_u);
            for (int i = 0; i < m; i++) {
                const int x = t.token[kids[i]];
                if (want_kind != CHILDREN_TOP_RANKS) ck_assert_msg(q[x] > 0, "%s: a child q cannot draw", flags);
                for (int j = 0; j < i && want_kind != CHILDREN_IID; j++) ck_assert_int_ne(x, t.token[kids[j]]);
            }
        }
        int level = 1;
        for (int d = 1; d <= s.shape.depth && want_kind != CHILDREN_NO_REPLACEMENT; d++) {
            level *= s.shape.branch[d - 1];
            ck_assert_int_eq(per_depth[d], level);
        }
        /* the verdict: the first child alone (the path the walk left the draft on) */
        const int path[2] = {t.token[0], t.token[1]};
        ck_assert_msg(p->commit(p, path, NULL, 2, t.token[2], &err) == 0, "%s", err.msg);
    }
    tree_free(&t);
    method_release(&b);
}

START_TEST(test_proposals_follow_the_shape) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 31, NULL);
    fixture_model_open(&d, "micro-draft", 32, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, &d.m, NULL);
    const int V = t.m.cfg.vocab_size;
    check_proposal(&p.parts, "--method spec --tree-shape 3,2,1 --temperature 1 --rule exact", V, CHILDREN_IID);
    check_proposal(&p.parts, "--method spec --tree-shape 4,2 --temperature 1.5 --top-k 3", V, CHILDREN_NO_REPLACEMENT);
    check_proposal(&p.parts, "--method spec --tree-shape 2,3,1 --temperature 0", V, CHILDREN_TOP_RANKS);
    fixture_parts_close(&p);
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

/* The shape of k ones is the chain of k: the same draws, decisions and proposer steps (draft model and MTP). */
START_TEST(test_chain_is_the_shape_of_ones) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 33, NULL);
    fixture_model_open(&d, "micro-draft", 34, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, &d.m, NULL);
    static const char *const as_tree[] = {"--method spec --tree-shape 1,1,1 --temperature 0.8 --rule exact",
                                          "--method spec --tree-shape 1,1,1 --temperature 0.8 --rule exact-norepl",
                                          "--method mtp --tree-shape 1,1,1 --temperature 0.8 --rule exact",
                                          "--method mtp --tree-shape 1,1,1 --temperature 0.8 --rule exact-norepl"};
    for (uint64_t seed = 1; seed <= 8; seed++) {
        const int prompt[2] = {(int)seed, 3};
        const int mtp = seed > 4; /* seeds 5–8: the MTP module's chain */
        method_spec chain = fixture_spec(mtp ? "--method mtp --k 3 --temperature 0.8 --no-eos --max-tokens 40"
                                             : "--method spec --k 3 --temperature 0.8 --no-eos --max-tokens 40");
        chain.seed = seed;
        decode_output want, got;
        sp_error err;
        ck_assert_msg(method_generate(&chain, &p.parts, prompt, 2, &want, &err) == 0, "%s", err.msg);
        for (int i = 2 * mtp; i < 2 * mtp + 2; i++) {
            method_spec s = fixture_spec(as_tree[i]);
            s.seed = seed, s.max_tokens = 40, s.stop_at_eos = 0;
            ck_assert_msg(method_generate(&s, &p.parts, prompt, 2, &got, &err) == 0, "%s", err.msg);
            ck_assert_int_eq(got.n, want.n);
            ck_assert_msg(memcmp(got.tokens, want.tokens, (size_t)want.n * sizeof(int)) == 0, "%s, seed %d", as_tree[i],
                          (int)seed);
            ck_assert_int_eq(got.acc.target_passes, want.acc.target_passes);
            ck_assert_int_eq(got.acc.proposer_steps, want.acc.proposer_steps);
            decode_output_free(&got);
        }
        decode_output_free(&want);
    }
    fixture_parts_close(&p);
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

/* At temperature 0 every tree emits the oracle's tokens, on prompts of 1 to 5 tokens. */
static void assert_trees_are_greedy(model *target, const method_parts *parts) {
    static const char *const flags[] = {"--method spec --tree-shape 2,2,1 --temperature 0",
                                        "--method spec --tree-shape 3,1,2 --temperature 0 --rule exact-norepl",
                                        "--method spec --tree-shape 2,2 --temperature 0 --rule exact",
                                        "--method spec --tree-shape 4 --temperature 0 --rule typical",
                                        "--method mtp --tree-shape 2,2,1 --temperature 0",
                                        "--method mtp --tree-shape 3,2 --temperature 0 --rule exact-norepl"};
    const int V = target->cfg.vocab_size;
    for (int i = 0; i < 8; i++) {
        int prompt[5], n = 1 + i % 5, want[N_TOKENS];
        for (int j = 0; j < n; j++) prompt[j] = (i * 5 + j * 3 + 2) % V;
        fixture_greedy_oracle(target, prompt, n, N_TOKENS, want);
        for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++) {
            method_spec s = fixture_spec(flags[f]);
            s.max_tokens = N_TOKENS, s.stop_at_eos = 0;
            decode_output out;
            sp_error err;
            ck_assert_msg(method_generate(&s, parts, prompt, n, &out, &err) == 0, "%s: %s", flags[f], err.msg);
            ck_assert_msg(out.n == N_TOKENS && memcmp(out.tokens, want, sizeof want) == 0,
                          "%s, prompt %d: not the greedy tokens", flags[f], i);
            decode_output_free(&out);
        }
    }
}

START_TEST(test_trees_match_the_greedy_oracle) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 35, NULL);
    fixture_model_open(&d, "micro-draft", 36, NULL); /* a random draft: mostly rejected */
    fixture_parts p;
    fixture_parts_open(&p, &t.m, &d.m, NULL);
    assert_trees_are_greedy(&t.m, &p.parts);
    fixture_parts_close(&p);
    fixture_parts_open(&p, &t.m, &t.m, NULL); /* the target as its own draft: the first child always right */
    assert_trees_are_greedy(&t.m, &p.parts);
    method_spec s = fixture_spec("--method spec --tree-shape 2,2,1 --temperature 0 --no-eos --max-tokens 40");
    const int prompt[2] = {1, 2};
    decode_output out;
    sp_error err;
    ck_assert_msg(method_generate(&s, &p.parts, prompt, 2, &out, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(out.acc.length_hist[0], 0); /* every round accepts its whole depth, the budget aside */
    decode_output_free(&out);
    fixture_parts_close(&p);
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

Suite *spec_tree_suite(void) {
    Suite *s = suite_create("spec_tree");
    TCase *tc = harness_tcase("spec_tree", 60);
    tcase_add_test(tc, test_shape_and_flags);
    tcase_add_test(tc, test_proposals_follow_the_shape);
    tcase_add_test(tc, test_chain_is_the_shape_of_ones);
    tcase_add_test(tc, test_trees_match_the_greedy_oracle);
    suite_add_tcase(s, tc);
    return s;
}
