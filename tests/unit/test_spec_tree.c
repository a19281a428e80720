/* test_spec_tree.c — trees of drafts from the draft model and the MTP module, static (--tree-shape) and dynamic
 * (--tree-budget, tree_grow.h): their flags, their proposals, and greedy canaries on the reference. The engine's
 * canary is in test_engine.c, the output law in tests/stat/test_spec_tree_dist.c. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "fixtures.h"
#include "harness.h"
#include "method.h"
#include "speculative.h"
#include "tree_grow.h"
#include "registry.h"

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
    ck_assert_int_eq(m.rule, RULE_EXACT_NOREPL);
    m = fixture_spec("--method spec --tree-shape 2,1 --temperature 0");
    ck_assert_int_eq(m.rule, RULE_GREEDY);
    m = fixture_spec("--method spec --tree-shape 2,1 --temperature 0.8 --rule exact");
    ck_assert_int_eq(m.rule, RULE_EXACT);
    method_spec_label(&m, buf, sizeof buf);
    ck_assert_str_eq(buf, "spec tree 2,1 (4 nodes), exact rule");
    expect_refused("--method spec --k 3 --tree-shape 2,1", "--k and --tree-shape both set the depth");
    expect_refused("--method lookup --tree-shape 2,1", "--tree-shape only applies to --method spec and mtp");
    expect_refused("--method mtp --tree-shape 2,1 --mtp-argmax", "--mtp-argmax gives every sibling the same token");
    m = fixture_spec("--method mtp --tree-shape 3,1 --temperature 0.8");
    ck_assert(m.rule == RULE_EXACT_NOREPL && m.drafts == MTP_DRAFTS_SAMPLED);
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

/* Children per depth as the shape says, siblings distinct when drawn without replacement, the top ranks at
 * temperature 0, and q rows those the children came from (the draft model's). */
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
                                        "--method mtp --tree-shape 3,2 --temperature 0 --rule exact-norepl",
                                        "--method spec --tree-budget 8 --k 4 --temperature 0",
                                        "--method mtp --tree-budget 7 --k 3 --temperature 0"};
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

/* At temperature 0 a tree emits exactly the oracle's tokens: with a random draft (most branches rejected, the
 * draft rewound and caught up every round), with the target as its own draft (every first child accepted), and
 * from the target's MTP module. */
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

START_TEST(test_dynamic_flags) {
    char buf[96];
    method_spec m = fixture_spec("--method spec --tree-budget 10 --temperature 0.8");
    ck_assert(m.shape.depth == 4 && m.shape.budget == 10 && m.shape.branch[0] == TREE_SHAPE_MAX_BRANCH);
    ck_assert_int_eq(m.rule, RULE_EXACT_NOREPL);
    ck_assert_int_eq(tree_shape_nodes(&m.shape), 10);
    method_spec_label(&m, buf, sizeof buf);
    ck_assert_str_eq(buf, "spec tree dynamic depth 4 (10 nodes), exact-norepl rule");
    m = fixture_spec("--method mtp --tree-budget 6 --k 3 --temperature 0");
    ck_assert(m.shape.depth == 3 && m.shape.budget == 6 && m.rule == RULE_GREEDY);
    m = fixture_spec("--method spec --tree-budget 5 --tree-shape 3,2,1 --temperature 0.8 --rule exact");
    method_spec_label(&m, buf, sizeof buf);
    ck_assert_str_eq(buf, "spec tree dynamic depth 3 under 3,2,1 (5 nodes), exact rule");
    expect_refused("--method spec --tree-budget 7 --tree-shape 2,1", "its caps allow 4");
    expect_refused("--method lookup --tree-budget 3", "--tree-budget only applies to --method spec and mtp");
    expect_refused("--method spec --tree-budget 0", "--tree-budget");
    expect_refused("--method spec --tree-budget 256", "--tree-budget");
    expect_refused("--method mtp --tree-budget 4 --mtp-argmax", "--mtp-argmax gives every sibling the same token");
    m = fixture_spec("--method spec --tree-budget 4 --temperature 0.8 --tree-raw-confidence");
    ck_assert_int_eq(m.shape.raw_confidence, 1);
    method_spec_label(&m, buf, sizeof buf);
    ck_assert_str_eq(buf, "spec tree dynamic raw depth 4 (4 nodes), exact-norepl rule");
    expect_refused("--method spec --k 3 --tree-raw-confidence", "--tree-raw-confidence applies to dynamic trees");
}
END_TEST

/* The draft's confidences by token, for a hand-grown tree: any node whose token is t has row conf[t]. */
#define HAND_V 4
static const float hand_conf[HAND_V][HAND_V] = {
    {0.9f, 0.1f, 0.0f, 0.0f}, {0.6f, 0.4f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.0f, 0.0f}, {0.4f, 0.4f, 0.2f, 0.0f}};

/* Grows a tree of `budget` nodes to `depth` over hand_conf by top ranks (the logits are log conf,
 * so the softmax confidences are conf) from root token 3. */
static void grow_by_hand(tree_growth *g, token_tree *t, int budget, int depth) {
    tree_shape caps = tree_shape_dynamic(budget, depth);
    caps.raw_confidence = 1; /* the order below is EAGLE-2's on these confidences */
    tree_grow_start(g, &caps, CHILDREN_TOP_RANKS);
    tree_reset(t, 3, CHILDREN_TOP_RANKS);
    sampler_params sp = sampler_defaults();
    const propose_call call = {&sp, 1, 0, 0, depth};
    float logits[HAND_V], scratch[HAND_V], pool[HAND_V];
    for (int u; (u = tree_grow_pick(g, t, depth)) >= 0;) {
        if (!g->stepped[u]) {
            for (int x = 0; x < HAND_V; x++)
                logits[x] = logf(hand_conf[t->token[u]][x]); /* log 0 = −inf: never ranked */
            memcpy(tree_q(t, u), hand_conf[t->token[u]], sizeof logits);
            tree_grow_stepped(g, t, u, logits, scratch);
        }
        ck_assert_int_ne(tree_grow_child(g, t, u, &call, pool), -2); /* −1: u has nothing left to offer */
    }
}

/* The order by hand (priority = path · (1 − confidence of the children so far)). Root token 3 has
 * confidences .4, .4, .2 for tokens 0, 1, 2:
 *   1. root (1)                                  → node 1: token 0, path .4
 *   2. root (.6) over node 1 (.4)                → node 2: token 1, path .4
 *   3. nodes 1 and 2 tie at .4 (the same softmax value), over the root (.2): the earlier, node 1
 *                                                → node 3: token 0, path .36 (node 1 left with .04)
 *   4. node 2 (.4)                               → node 4: token 0, path .24 (node 2 left with .16)
 *   5. node 3 (.36)                              → node 5: token 0, path .324, at the depth cap 3
 *   6. node 4 (.24) over the root (.2); node 5 may not grow → node 6: token 0, path .216
 * and the budget of 6 is spent. */
START_TEST(test_growth_order_by_hand) {
    static tree_growth g;
    token_tree t;
    tree_build(&t, HAND_V, 16);
    grow_by_hand(&g, &t, 6, 3);
    static const int want_parent[] = {-1, 0, 0, 1, 2, 3, 4};
    static const int want_token[] = {3, 0, 1, 0, 0, 0, 0};
    ck_assert_int_eq(t.n, 7); /* the budget: 6 under the root */
    for (int i = 0; i < t.n; i++) {
        ck_assert_msg(t.parent[i] == want_parent[i] && t.token[i] == want_token[i],
                      "node %d: parent %d token %d, wanted parent %d token %d", i, t.parent[i], t.token[i],
                      want_parent[i], want_token[i]);
    }
    ck_assert_int_le(tree_max_depth(&t), 3);
    grow_by_hand(&g, &t, 6, 1); /* depth 1: the root alone grows, its top ranks in order, until q runs out */
    ck_assert_int_eq(t.n, 4);
    for (int i = 1; i < t.n; i++) ck_assert(t.parent[i] == 0 && t.token[i] == i - 1);
    tree_free(&t);
}
END_TEST

/* The verdict of the hand-grown tree above: root 3, then tokens 0 and 0 accepted (nodes 1 and 3). The rule
 * tried node 1 (first child, confidence .4: accepted), node 3 (first, .9: accepted) and node 5 (first, .9:
 * rejected, the path ends at node 3); node 2 was never tried. */
START_TEST(test_calibration_learns_the_verdicts) {
    static tree_growth g;
    token_tree t;
    tree_build(&t, HAND_V, 16);
    grow_by_hand(&g, &t, 6, 3);
    const int path[3] = {3, 0, 0};
    tree_grow_learn(&g, path, 3);
    const tree_calibration *k = &g.calibration;
    const int b4 = tree_grow_bin(0.4f), b9 = tree_grow_bin(0.9f);
    ck_assert(b4 == 6 && b9 == 14);
    ck_assert(k->tried[0][b4] == 1 && k->accepted[0][b4] == 1);
    ck_assert(k->tried[0][b9] == 2 && k->accepted[0][b9] == 1);
    long total = 0;
    for (int later = 0; later < 2; later++)
        for (int b = 0; b < TREE_GROW_BINS; b++) total += k->tried[later][b];
    ck_assert_int_eq(total, 3);
    tree_grow_learn(&g, path, 3); /* nothing grown since: nothing learnt twice */
    ck_assert_int_eq(k->tried[0][b9], 2);
    /* calibrated: (accepted + 2c) / (tried + 2); raw: c */
    g.caps.raw_confidence = 0;
    ck_assert_float_eq_tol(tree_grow_calibrated(&g, 0.9f, 0), (1 + 1.8) / 4.0, 1e-6); /* float rounding of 0.9f */
    ck_assert_float_eq(tree_grow_calibrated(&g, 0.2f, 1), 0.2f);                      /* no verdicts in that bin */
    g.caps.raw_confidence = 1;
    ck_assert_float_eq(tree_grow_calibrated(&g, 0.9f, 0), 0.9f);
    /* a new growth keeps what was learnt */
    grow_by_hand(&g, &t, 6, 3);
    ck_assert_int_eq(g.calibration.tried[0][b9], 2);
    tree_free(&t);
}
END_TEST

/* 1 when node u's children (index < k) hold every token q_u can draw: a draw without replacement has nothing left. */
static int support_drawn(const token_tree *t, int u, int k) {
    const float *q = tree_q_const(t, u);
    for (int x = 0; x < t->V; x++) {
        int drawn = q[x] <= 0;
        for (int i = u + 1; i < k && !drawn; i++) drawn = t->parent[i] == u && t->token[i] == x;
        if (!drawn) return 0;
    }
    return 1;
}

/* Replays a dynamic tree's growth from its index order (nodes are added in order): the parent of node
 * k must be the node of highest priority among nodes 0..k−1 that may still grow, the earlier on a tie,
 * computed here from the tree's q rows in the same float arithmetic as tree_grow.c, with raw confidences
 * (rest = 1 − their sum) or calibrated ones before any verdict (rest = the product of 1 − each). */
static void assert_best_first(const token_tree *t, const tree_shape *caps, int depth, const char *flags) {
    static float path[TREE_GROW_MAX_NODES], rest[TREE_GROW_MAX_NODES];
    static int n_children[TREE_GROW_MAX_NODES];
    path[0] = rest[0] = 1.0f;
    for (int k = 1; k < t->n; k++) {
        int best = -1;
        float best_priority = 0.0f;
        for (int u = 0; u < k; u++) {
            if (u > 0 && n_children[u] == 0) rest[u] = 1.0f;
            const int du = t->depth[u];
            if (du >= depth || n_children[u] >= caps->branch[du]) continue;
            if (t->kind == CHILDREN_NO_REPLACEMENT && support_drawn(t, u, k)) continue;
            const float priority = path[u] * rest[u];
            if (priority > best_priority) best = u, best_priority = priority;
        }
        ck_assert_msg(t->parent[k] == best, "%s: node %d grew under node %d, the best was %d", flags, k, t->parent[k],
                      best);
        const int u = t->parent[k];
        const float conf = tree_q_const(t, u)[t->token[k]];
        int repeated = 0;
        for (int i = u + 1; i < k; i++) repeated |= t->parent[i] == u && t->token[i] == t->token[k];
        if (!repeated) rest[u] = caps->raw_confidence ? rest[u] - conf : rest[u] * (1.0f - conf);
        n_children[u]++;
        n_children[k] = 0;
        rest[k] = 1.0f;
        path[k] = path[u] * conf;
    }
    for (int u = 0; u < t->n; u++) n_children[u] = 0, rest[u] = 1.0f;
}

/* The draft's q at node u, computed afresh on the context and u's path. */
static void fresh_q(stepper *fresh, const int *ctx, int n_ctx, const token_tree *t, int u, const sampler_params *sp,
                    float *logits, float *q) {
    int anc[TREE_SHAPE_MAX_DEPTH + 1], tokens[96 + TREE_SHAPE_MAX_DEPTH + 1];
    sp_error err;
    tree_grow_path(t, u, anc);
    memcpy(tokens, ctx, (size_t)n_ctx * sizeof(int));
    for (int d = 0; d <= t->depth[u]; d++) tokens[n_ctx + d] = t->token[anc[d]];
    fresh->reset(fresh);
    ck_assert_msg(fresh->step(fresh, tokens, NULL, n_ctx + t->depth[u] + 1, logits, NULL, &err) == 0, "%s", err.msg);
    sampler_probs(sp, logits, q, t->V);
}

/* Proposals of a dynamic tree on the fixture over rounds that commit the root's first child: within the
 * budget and depth, best first, and (draft model, fresh given) every node's q the one a fresh draft
 * computes on the context and the node's path, whichever branches the draft was stepped along before. */
static void check_dynamic_proposals(const method_parts *parts, stepper *fresh, const char *flags, int V) {
    method_spec s = fixture_spec(flags);
    method_built b;
    sp_error err;
    ck_assert_msg(method_build(&b, &s, parts, &err) == 0, "%s", err.msg);
    proposer *p = b.proposer;
    int ctx[96] = {1, 4}, n_ctx = 2, root = 2, switched = 0;
    /* the MTP module reads hidden states with what is committed: any will do for the tree's growth */
    float *hidden = p->needs_hidden ? calloc((size_t)2 * parts->target->cfg->hidden_size, sizeof(float)) : NULL;
    ck_assert_msg(p->commit(p, ctx, hidden, n_ctx, root, &err) == 0, "%s", err.msg);
    token_tree t;
    tree_build(&t, V, p->tree_capacity + 1);
    float *logits = malloc((size_t)V * sizeof(float)), *q = malloc((size_t)V * sizeof(float));
    for (uint64_t round = 0; round < 12; round++) {
        tree_reset(&t, root, p->kind);
        const propose_call call = {&s.sampling, 11, round, n_ctx, 32};
        const long steps_before = p->steps;
        ck_assert_msg(p->propose(p, &t, &call, &err) == 0, "%s", err.msg);
        ck_assert_int_le(t.n - 1, s.shape.budget);
        ck_assert_int_le(tree_max_depth(&t), s.shape.depth);
        /* calibrated, the confidences change with every verdict: before the first they are the raw ones, and
         * the expected acceptance is ½ for every node, so the order is the replay's with rest a product */
        if (s.shape.raw_confidence || round == 0) assert_best_first(&t, &s.shape, s.shape.depth, flags);
        int with_children = 0, kids[1];
        for (int u = 0; u < t.n; u++) with_children += tree_children(&t, u, kids, 1) > 0;
        for (int u = 1; u < t.n; u++) switched |= t.parent[u] < t.parent[u - 1]; /* grew back up the tree */
        if (method_has(&s, METHOD_DRAFT_MODEL)) { /* one step per node with children (re-steps are batched into it), and
                                      * one catching up on the last commit when the draft lacked some of it */
            const long steps = p->steps - steps_before;
            ck_assert_msg(steps == with_children || steps == with_children + 1,
                          "%s: %ld steps for %d nodes with children", flags, steps, with_children);
        }
        for (int u = 0; u < t.n && fresh; u++) {
            if (tree_children(&t, u, kids, 1) == 0) continue;
            fresh_q(fresh, ctx, n_ctx, &t, u, &s.sampling, logits, q);
            /* the same model on the same positions: the reference's forward does not depend on how the
             * positions were batched, so the rows agree bit for bit */
            ck_assert_msg(memcmp(q, tree_q_const(&t, u), (size_t)V * sizeof(float)) == 0,
                          "%s, round %d: node %d's q is not the draft's on its path", flags, (int)round, u);
        }
        /* the verdict: the root and its first child, then a token of the vocabulary's choosing */
        const int path[2] = {t.token[0], t.n > 1 ? t.token[1] : 0}, len = t.n > 1 ? 2 : 1;
        root = (int)(round * 7 + 3) % V;
        ck_assert_msg(p->commit(p, path, hidden, len, root, &err) == 0, "%s", err.msg);
        for (int i = 0; i < len; i++) ctx[n_ctx++] = path[i];
    }
    if (fresh) ck_assert_msg(switched, "%s: no proposal grew back up the tree: the state check saw no re-step", flags);
    free(hidden);
    free(logits);
    free(q);
    tree_free(&t);
    method_release(&b);
}

/* Every child of a real proposal goes to the node of highest priority within the budget and depth, and its q row
 * equals a fresh draft's on the node's path (the state after re-steps along another branch). */
START_TEST(test_dynamic_proposals_grow_best_first) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 31, NULL);
    fixture_model_open(&d, "micro-draft", 32, NULL);
    fixture_parts p, fresh;
    fixture_parts_open(&p, &t.m, &d.m, NULL);
    fixture_parts_open(&fresh, &t.m, &d.m, NULL); /* a second draft stepper, for the fresh q rows */
    const int V = t.m.cfg.vocab_size;
    check_dynamic_proposals(&p.parts, &fresh.draft,
                            "--method spec --tree-budget 12 --k 4 --temperature 0.3 --rule exact", V);
    check_dynamic_proposals(&p.parts, &fresh.draft, "--method spec --tree-budget 9 --k 5 --temperature 0.5 --top-k 3",
                            V);
    check_dynamic_proposals(&p.parts, &fresh.draft,
                            "--method spec --tree-budget 7 --tree-shape 3,2,1 --temperature 0.4", V);
    check_dynamic_proposals(&p.parts, NULL, "--method mtp --tree-budget 10 --k 4 --temperature 0.4 --rule exact", V);
    check_dynamic_proposals(&p.parts, NULL, "--method mtp --tree-budget 8 --k 3 --temperature 0.8", V);
    check_dynamic_proposals(&p.parts, &fresh.draft,
                            "--method spec --tree-budget 10 --k 4 --temperature 0.3 --tree-raw-confidence", V);
    check_dynamic_proposals(
        &p.parts, NULL, "--method mtp --tree-budget 9 --k 4 --temperature 0.5 --rule exact --tree-raw-confidence", V);
    fixture_parts_close(&fresh);
    fixture_parts_close(&p);
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

/* Budgets that leave the growth one choice are static shapes, bit for bit (tokens, passes, steps): caps
 * of ones give the chain, depth 1 gives one level under the root. */
START_TEST(test_dynamic_degenerates_to_static_shapes) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 33, NULL);
    fixture_model_open(&d, "micro-draft", 34, NULL);
    fixture_parts p;
    fixture_parts_open(&p, &t.m, &d.m, NULL);
    static const char *const pairs[][2] = {
        {"--method spec --tree-shape 1,1,1 --tree-budget 3 --temperature 0.8 --rule exact",
         "--method spec --k 3 --temperature 0.8"},
        {"--method mtp --tree-shape 1,1,1 --tree-budget 3 --temperature 0.8 --rule exact-norepl",
         "--method mtp --k 3 --temperature 0.8 --mtp-sample"},
        {"--method spec --k 1 --tree-budget 3 --temperature 0.8", "--method spec --tree-shape 3 --temperature 0.8"},
        {"--method mtp --k 1 --tree-budget 4 --temperature 0.6 --rule exact",
         "--method mtp --tree-shape 4 --temperature 0.6 --rule exact"},
        {"--method spec --k 1 --tree-budget 3 --temperature 0", "--method spec --tree-shape 3 --temperature 0"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            const int prompt[2] = {(int)seed, 3};
            decode_output got, want;
            sp_error err;
            method_spec dyn = fixture_spec(pairs[i][0]), fixed = fixture_spec(pairs[i][1]);
            dyn.seed = fixed.seed = seed;
            dyn.max_tokens = fixed.max_tokens = 40;
            dyn.stop_at_eos = fixed.stop_at_eos = 0;
            ck_assert_msg(method_generate(&dyn, &p.parts, prompt, 2, &got, &err) == 0, "%s", err.msg);
            ck_assert_msg(method_generate(&fixed, &p.parts, prompt, 2, &want, &err) == 0, "%s", err.msg);
            ck_assert_msg(got.n == want.n && memcmp(got.tokens, want.tokens, (size_t)want.n * sizeof(int)) == 0,
                          "%s against %s, seed %d: other tokens", pairs[i][0], pairs[i][1], (int)seed);
            ck_assert_int_eq(got.acc.target_passes, want.acc.target_passes);
            ck_assert_int_eq(got.acc.proposer_steps, want.acc.proposer_steps);
            decode_output_free(&got);
            decode_output_free(&want);
        }
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
    tcase_add_test(tc, test_dynamic_flags);
    tcase_add_test(tc, test_growth_order_by_hand);
    tcase_add_test(tc, test_calibration_learns_the_verdicts);
    tcase_add_test(tc, test_dynamic_proposals_grow_best_first);
    tcase_add_test(tc, test_dynamic_degenerates_to_static_shapes);
    suite_add_tcase(s, tc);
    return s;
}
