/* test_medusa_proposer.c — the Medusa proposer as the method factory builds it: its trees in every mode, its
 * refusals, and greedy canaries (at temperature 0 every rule emits exactly the independent oracle's greedy
 * tokens), with heads that copy the target's greedy continuation and heads that never agree. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"
#include "harness.h"
#include "medusa.h"
#include "medusa_common.h"
#include "method.h"
#include "philox.h"
#include "reference_target.h"

/* ---- the proposer ------------------------------------------------------------------------- */

/* The Medusa method of the rule with tree t over heads h, built by the factory. */
static void build_medusa(method_built *b, fixture_parts *fp, const medusa_heads *h, model *m, const medusa_tree *t,
                         const char *rule, float temperature) {
    fixture_parts_open(fp, m, NULL, h);
    char flags[128];
    snprintf(flags, sizeof flags, "--method medusa --temperature %g --rule %s", temperature, rule);
    method_spec s = fixture_spec(flags);
    s.tree = *t;
    s.tree_given = 1;
    sp_error err;
    ck_assert_msg(method_build(b, &s, &fp->parts, &err) == 0, "%s", err.msg);
}

/* Builds the proposer of `rule`, commits one hidden state and proposes once
 * (seed 5, root at position 10). */
typedef struct {
    fixture_parts parts;
    method_built b;
    token_tree tree;
} proposal;

static void propose_once(proposal *pr, const medusa_heads *h, model *m, const medusa_tree *t, const char *rule,
                         float temperature, const float *hidden, int max_depth, uint64_t round) {
    build_medusa(&pr->b, &pr->parts, h, m, t, rule, temperature);
    proposer *p = pr->b.proposer;
    tree_build(&pr->tree, m->cfg.vocab_size, p->tree_capacity + 1);
    tree_reset(&pr->tree, 3, p->kind);
    int path[1] = {7};
    sp_error err;
    ck_assert_msg(p->commit(p, path, hidden, 1, 3, &err) == 0, "%s", err.msg);
    const propose_call call = {&pr->b.options.sampling, 5, round, 10, max_depth};
    ck_assert_msg(p->propose(p, &pr->tree, &call, &err) == 0, "%s", err.msg);
}

static void proposal_free(proposal *pr) {
    tree_free(&pr->tree);
    method_release(&pr->b);
    fixture_parts_close(&pr->parts);
}

static void test_hidden(float *x, int D) {
    for (int d = 0; d < D; d++) x[d] = 2 * philox_uniform(11, 0, (uint64_t)d, 0) - 1;
}

/* The tree follows the default tree node for node: token = the rank-th
 * largest logit of its head, q = the head's processed distribution; the
 * attention mask and the positions are those of the paths. */
START_TEST(test_proposer_top_ranks) {
    model m;
    medusa_load_model(&m, medusa_micro);
    medusa_heads h;
    medusa_random_heads(&h, &m, 4, 1, 1, 6, 0.5f);
    medusa_tree t;
    medusa_tree_default(&t, 4);
    float hidden[32], logits[4][32], probs[32], scratch[64];
    test_hidden(hidden, 32);
    proposal pr;
    propose_once(&pr, &h, &m, &t, "typical", 0.7f, hidden, 100, 0);
    const token_tree tt = pr.tree;
    ck_assert_int_eq(tt.n, 64);
    ck_assert_int_eq(pr.b.proposer->steps, 1);
    sampler_params sp = sampler_defaults();
    sp.temperature = 0.7f;
    for (int i = 0; i < 4; i++) medusa_head_forward(&h, i, hidden, logits[i], scratch);
    unsigned char *mask = calloc(64 * 64, 1);
    int pos[64], ranks_k[MEDUSA_MAX_HEADS], ranks_j[MEDUSA_MAX_HEADS];
    tree_attention_mask(&tt, mask);
    tree_positions(&tt, 10, pos);
    ck_assert_int_eq(pos[0], 10);
    for (int k = 0; k < 63; k++) {
        const int node = k + 1, d = t.depth[k];
        ck_assert_int_eq(tt.depth[node], d);
        ck_assert_int_eq(pos[node], 10 + d);
        ck_assert_int_eq(tt.parent[node], t.parent[k] + 1);
        /* rank by counting: entries above, or equal with a lower index */
        const float *l = logits[d - 1];
        int x = tt.token[node], r = 0;
        for (int v = 0; v < 32; v++) r += l[v] > l[x] || (l[v] == l[x] && v < x);
        ck_assert_int_eq(r, t.rank[k]);
        /* q of the parent: head d−1's processed distribution */
        sampler_probs(&sp, l, probs, 32);
        ck_assert(memcmp(tree_q_const(&tt, tt.parent[node]), probs, sizeof probs) == 0);
        /* node j is visible from node k exactly when path j is a prefix of path k */
        medusa_tree_path(&t, k, ranks_k);
        ck_assert(mask[(size_t)node * 64 + 0]);
        for (int j = 0; j < 63; j++) {
            medusa_tree_path(&t, j, ranks_j);
            int prefix = t.depth[j] <= d && memcmp(ranks_j, ranks_k, (size_t)t.depth[j] * sizeof(int)) == 0;
            ck_assert_int_eq(mask[(size_t)node * 64 + j + 1], prefix);
        }
    }
    free(mask);
    proposal_free(&pr);
    /* the token budget cuts the tree: max_depth 2 keeps depths 1 and 2 */
    propose_once(&pr, &h, &m, &t, "typical", 0.7f, hidden, 2, 0);
    int want = 1;
    for (int k = 0; k < 63; k++) want += t.depth[k] <= 2;
    ck_assert_int_eq(pr.tree.n, want);
    ck_assert_int_eq(tree_max_depth(&pr.tree), 2);
    proposal_free(&pr);
    medusa_free(&h);
    model_free(&m);
}
END_TEST

/* Exact modes keep the shape and draw: i.i.d. children come from q (q > 0),
 * reproducibly for a round and differently for another; children drawn
 * without replacement are distinct, and at temperature 0 (one token with
 * q > 0) only the first child of each node survives. */
START_TEST(test_proposer_draws) {
    model m;
    medusa_load_model(&m, medusa_micro);
    medusa_heads h;
    medusa_random_heads(&h, &m, 4, 1, 1, 6, 0.3f);
    medusa_tree t;
    medusa_tree_default(&t, 4);
    float hidden[32];
    test_hidden(hidden, 32);
    proposal pa, pb;
    propose_once(&pa, &h, &m, &t, "exact", 1.0f, hidden, 100, 3);
    propose_once(&pb, &h, &m, &t, "exact", 1.0f, hidden, 100, 3);
    const token_tree *a = &pa.tree;
    ck_assert_int_eq(a->n, 64);
    ck_assert(memcmp(a->token, pb.tree.token, 64 * sizeof(int)) == 0);
    for (int u = 1; u < 64; u++) ck_assert(tree_q_const(a, a->parent[u])[a->token[u]] > 0);
    proposal_free(&pb);
    propose_once(&pb, &h, &m, &t, "exact", 1.0f, hidden, 100, 4);
    ck_assert(memcmp(a->token, pb.tree.token, 64 * sizeof(int)) != 0);
    /* each draw has its own site: the root's 10 children are not one token repeated */
    int kinds = 0;
    for (int u = 1; u <= 10; u++) {
        int seen = 0;
        for (int v = 1; v < u; v++) seen |= a->token[v] == a->token[u];
        kinds += !seen;
    }
    ck_assert_int_ge(kinds, 3);
    int duplicates = 0;
    for (int u = 1; u < 64; u++)
        for (int v = u + 1; v < 64; v++) duplicates += a->parent[u] == a->parent[v] && a->token[u] == a->token[v];
    proposal_free(&pa);
    proposal_free(&pb);

    proposal pc;
    propose_once(&pc, &h, &m, &t, "exact-norepl", 1.0f, hidden, 100, 3);
    const token_tree *c = &pc.tree;
    ck_assert_int_eq(c->n, 64); /* V = 32 tokens all have q > 0: nothing runs out */
    for (int u = 1; u < 64; u++)
        for (int v = u + 1; v < 64; v++) ck_assert(!(c->parent[u] == c->parent[v] && c->token[u] == c->token[v]));
    proposal_free(&pc);
    ck_assert_int_gt(duplicates, 0); /* i.i.d. draws do repeat: the distinctness above is not an accident */

    propose_once(&pc, &h, &m, &t, "exact-norepl", 0.0f, hidden, 100, 3);
    ck_assert_int_eq(pc.tree.n, 5); /* the chain of first children [0], [0,0], [0,0,0], [0,0,0,0] */
    ck_assert_int_eq(tree_max_depth(&pc.tree), 4);
    proposal_free(&pc);
    medusa_free(&h);
    model_free(&m);
}
END_TEST

/* The factory pairs each rule with how the children are chosen. */
START_TEST(test_rules_choose_the_children) {
    model m;
    medusa_load_model(&m, medusa_micro);
    medusa_heads h;
    medusa_random_heads(&h, &m, 2, 1, 1, 6, 0.3f);
    medusa_tree t;
    medusa_tree_default(&t, 2);
    static const struct {
        const char *rule;
        float temperature;
        children_kind kind;
        accept_rule accept;
    } pairs[] = {{"exact", 1, CHILDREN_IID, RULE_EXACT},
                 {"exact-norepl", 1, CHILDREN_NO_REPLACEMENT, RULE_EXACT_NOREPL},
                 {"typical", 1, CHILDREN_TOP_RANKS, RULE_TYPICAL},
                 {"greedy", 0, CHILDREN_TOP_RANKS, RULE_GREEDY}};
    for (int i = 0; i < 4; i++) {
        fixture_parts fp;
        method_built b;
        build_medusa(&b, &fp, &h, &m, &t, pairs[i].rule, pairs[i].temperature);
        ck_assert_int_eq(b.proposer->kind, pairs[i].kind);
        ck_assert_int_eq(b.options.rule, pairs[i].accept);
        method_release(&b);
        fixture_parts_close(&fp);
    }
    medusa_free(&h);
    model_free(&m);
}
END_TEST

/* What method_build refuses for Medusa, each with a message naming the problem. */
static void expect_build_error(const medusa_heads *h, model *m, const medusa_tree *t, const char *want) {
    fixture_parts fp;
    fixture_parts_open(&fp, m, NULL, h);
    method_spec s = fixture_spec("--method medusa --temperature 1 --rule exact");
    if (t) {
        s.tree = *t;
        s.tree_given = 1;
    }
    method_built b;
    sp_error err;
    ck_assert_int_eq(method_build(&b, &s, &fp.parts, &err), -1);
    ck_assert_msg(strstr(err.msg, want), "wanted \"%s\" in: %s", want, err.msg);
    fixture_parts_close(&fp);
}

START_TEST(test_proposer_errors) {
    model m;
    medusa_load_model(&m, medusa_micro);
    medusa_heads h;
    medusa_random_heads(&h, &m, 2, 1, 1, 6, 0.3f);
    medusa_tree t;
    medusa_tree_default(&t, 4); /* depth 4 > 2 heads */
    expect_build_error(&h, &m, &t, "only 2 Medusa heads");
    expect_build_error(NULL, &m, NULL, "needs Medusa heads");
    medusa_free(&h);
    sp_error err;
    ck_assert(medusa_build(&h, 2, 1, 16, 32, 1, &err) == 0);
    expect_build_error(&h, &m, NULL, "D 16");
    medusa_free(&h);
    ck_assert(medusa_build(&h, 2, 1, 32, 32, 0, &err) == 0); /* shared, never attached */
    expect_build_error(&h, &m, NULL, "none was attached");
    medusa_free(&h);
    model_free(&m);
}
END_TEST

/* ---- greedy canaries ----------------------------------------------------------------------- */

#define N_PROMPTS 20
#define N_TOKENS 48

/* Runs Medusa at temperature 0 with a rule; checks the tokens against the
 * oracle's and adds the run's accounting into *sum. */
static void medusa_matches_greedy(model *m, const medusa_heads *h, const medusa_tree *t, const char *rule,
                                  const int *prompt, int n, const int *want, run_accounting *sum) {
    fixture_parts fp;
    fixture_parts_open(&fp, m, NULL, h);
    char flags[160];
    snprintf(flags, sizeof flags, "--method medusa --temperature 0 --rule %s --max-tokens %d --no-eos", rule, N_TOKENS);
    method_spec s = fixture_spec(flags);
    s.tree = *t;
    s.tree_given = 1;
    decode_output out;
    sp_error err;
    ck_assert_msg(method_generate(&s, &fp.parts, prompt, n, &out, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(out.n, N_TOKENS);
    for (int i = 0; i < N_TOKENS; i++)
        ck_assert_msg(out.tokens[i] == want[i], "rule %s, prompt of %d tokens: token %d is %d, greedy says %d", rule, n,
                      i, out.tokens[i], want[i]);
    ck_assert_int_eq(out.acc.committed, N_TOKENS);
    sum->target_passes += out.acc.target_passes;
    sum->accepted_total += out.acc.accepted_total;
    for (int d = 0; d <= ACC_MAX_DEPTH + 1; d++) sum->length_hist[d] += out.acc.length_hist[d];
    decode_output_free(&out);
    fixture_parts_close(&fp);
}

/* Prompt p: 1 to 5 tokens (a one-token prompt proposes nothing in its
 * first round), random, or, given succ, a greedy chain from a random token. */
static int prompt_of(int p, int *prompt, const int *succ) {
    int n = 1 + p % 5;
    for (int i = 0; i < n; i++)
        prompt[i] = succ && i ? succ[prompt[i - 1]] : (int)(philox_uniform(77, (uint64_t)p, (uint64_t)i, 0) * 31);
    return n;
}

/* Random heads on the random micro model (3 DeltaNet layers: every partial
 * acceptance is a rollback across them): every rule at temperature 0 gives
 * the greedy tokens; the runs saw both rejections and acceptances. */
START_TEST(test_canary_random_heads) {
    model m;
    medusa_load_model(&m, medusa_micro);
    medusa_heads h;
    medusa_random_heads(&h, &m, 4, 1, 1, 8, 0.5f);
    medusa_tree full, small;
    sp_error err;
    medusa_tree_default(&full, 4);
    ck_assert(
        medusa_tree_parse(&small, "[[0],[1],[2],[3],[0,0],[0,1],[1,0],[0,0,0],[0,0,1],[0,0,0,0]]", "small", &err) == 0);
    run_accounting sum[4];
    memset(sum, 0, sizeof sum);
    for (int p = 0; p < harness_prompts(N_PROMPTS); p++) {
        int prompt[5], want[N_TOKENS], n = prompt_of(p, prompt, NULL);
        fixture_greedy_oracle(&m, prompt, n, N_TOKENS, want);
        medusa_matches_greedy(&m, &h, &full, "greedy", prompt, n, want, &sum[0]);
        medusa_matches_greedy(&m, &h, &small, "typical", prompt, n, want, &sum[1]);
        medusa_matches_greedy(&m, &h, &small, "exact", prompt, n, want, &sum[2]);
        medusa_matches_greedy(&m, &h, &full, "exact-norepl", prompt, n, want, &sum[3]);
    }
    for (int r = 0; r < 4; r++) {
        ck_assert_msg(sum[r].length_hist[0] > 0, "rule %d never rejected at once", r);
        ck_assert_msg(sum[r].accepted_total > 0, "rule %d never accepted: the canary would be vacuous", r);
        ck_assert_msg(sum[r].length_hist[2] > 0, "rule %d never accepted two tokens", r);
    }
    medusa_free(&h);
    model_free(&m);
}
END_TEST

/* Solves A X = B for X, A [n, n], B [n, m] (row-major, double), in place by
 * Gauss–Jordan with partial pivoting; B becomes X. */
static void solve(double *A, double *B, int n, int m) {
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(A[r * n + c]) > fabs(A[piv * n + c])) piv = r;
        ck_assert_msg(fabs(A[piv * n + c]) > 1e-9, "singular system");
        for (int k = 0; k < n; k++) {
            double t = A[c * n + k];
            A[c * n + k] = A[piv * n + k], A[piv * n + k] = t;
        }
        for (int k = 0; k < m; k++) {
            double t = B[c * m + k];
            B[c * m + k] = B[piv * m + k], B[piv * m + k] = t;
        }
        for (int r = 0; r < n; r++) {
            if (r == c) continue;
            double f = A[r * n + c] / A[c * n + c];
            for (int k = 0; k < n; k++) A[r * n + k] -= f * A[c * n + k];
            for (int k = 0; k < m; k++) B[r * m + k] -= f * B[c * m + k];
        }
    }
    for (int r = 0; r < n; r++)
        for (int k = 0; k < m; k++) B[r * m + k] /= A[r * n + r];
}

/* A micro model whose layers write nothing into the residual stream is a
 * bigram model: the hidden state after token x is g(x) = norm(embed[x]) and
 * the greedy successor is f(x) = argmax lm_head·g(x). Its layers still run
 * (the DeltaNet and KV state still advance and roll back). Heads whose
 * projections map g(x) to f^{i+2}(x) (W = 0, b = 0: the ResBlock is the
 * identity) guess the greedy continuation exactly; shifted by one token
 * they never do. */
static void make_bigram(model *m, int *succ) {
    const int D = m->cfg.hidden_size, V = m->cfg.vocab_size;
    for (int l = 0; l < m->cfg.num_layers; l++) {
        layer_weights *lw = &m->w.layers[l];
        if (lw->o_proj) memset(lw->o_proj, 0, sizeof(float) * D * m->cfg.num_heads * m->cfg.head_dim);
        if (lw->out_proj) memset(lw->out_proj, 0, sizeof(float) * D * m->cfg.lin_v_heads * m->cfg.lin_v_dim);
        memset(lw->down_proj, 0, sizeof(float) * D * m->cfg.intermediate_size);
    }
    model_state s;
    state_build(&s, &m->cfg, NULL);
    float logits[64];
    for (int x = 0; x < V; x++) {
        state_reset(&s);
        model_forward(m, &s, x, logits, NULL);
        succ[x] = sampler_argmax(logits, V);
    }
    state_free(&s);
}

static void copy_heads(medusa_heads *h, model *m, const int *succ, int shift) {
    const int D = m->cfg.hidden_size, V = m->cfg.vocab_size;
    ck_assert_int_eq(D, V); /* g(x) for the V tokens span the D-space: the map is one linear solve */
    sp_error err;
    ck_assert(medusa_build(h, 4, 1, D, V, 1, &err) == 0);
    model_state s;
    state_build(&s, &m->cfg, NULL);
    double *G = calloc((size_t)V * D, sizeof(double)), *T = calloc((size_t)V * V, sizeof(double));
    float hidden[64];
    for (int i = 0; i < 4; i++) {
        /* rows of G: g(x)ᵀ; rows of T: the wanted logits of x (10 at the target token);
         * P g(x) = t(x) for all x  ⇔  G Pᵀ = T */
        for (int x = 0; x < V; x++) {
            state_reset(&s);
            model_forward(m, &s, x, NULL, hidden);
            for (int d = 0; d < D; d++) G[x * D + d] = hidden[d];
            int y = x;
            for (int k = 0; k < i + 2; k++) y = succ[y];
            for (int v = 0; v < V; v++) T[x * V + v] = v == (y + shift) % V ? 10.0 : 0.0;
        }
        solve(G, T, V, V); /* T becomes Pᵀ */
        float *P = (float *)h->proj[i];
        for (int v = 0; v < V; v++)
            for (int d = 0; d < D; d++) P[v * D + d] = (float)T[d * V + v];
    }
    free(G);
    free(T);
    state_free(&s);
}

START_TEST(test_canary_copy_heads) {
    model m;
    medusa_load_model(&m, medusa_micro);
    int succ[32];
    make_bigram(&m, succ);
    medusa_heads right, wrong;
    copy_heads(&right, &m, succ, 0);
    copy_heads(&wrong, &m, succ, 1);
    medusa_tree full, chain;
    sp_error err;
    medusa_tree_default(&full, 4);
    ck_assert(medusa_tree_parse(&chain, "[[0], [0, 0], [0, 0, 0], [0, 0, 0, 0]]", "chain", &err) == 0);
    run_accounting r[3], w = {0};
    memset(r, 0, sizeof r);
    for (int p = 0; p < harness_prompts(N_PROMPTS); p++) {
        int prompt[5], want[N_TOKENS], n = prompt_of(p, prompt, succ);
        fixture_greedy_oracle(&m, prompt, n, N_TOKENS, want);
        medusa_matches_greedy(&m, &right, &full, "greedy", prompt, n, want, &r[0]);
        medusa_matches_greedy(&m, &right, &chain, "exact", prompt, n, want, &r[1]);
        medusa_matches_greedy(&m, &right, &full, "exact-norepl", prompt, n, want, &r[2]);
        medusa_matches_greedy(&m, &wrong, &chain, "greedy", prompt, n, want, &w);
    }
    /* The prompts are greedy chains, so every round with a full budget
     * accepts all 4 proposals (5 tokens a pass): 9 such rounds give 45
     * tokens, and the last round, cut by the budget, the rest (a one-token
     * prompt spends its first round without a proposal). */
    for (int k = 0; k < 3; k++)
        ck_assert_msg(r[k].length_hist[4] == 9 * harness_prompts(N_PROMPTS), "setup %d: %ld full rounds", k,
                      r[k].length_hist[4]);
    /* the shifted heads are refused at the first token of every round */
    long proposing = 0;
    for (int d = 0; d <= ACC_MAX_DEPTH + 1; d++) proposing += w.length_hist[d];
    ck_assert_int_gt(proposing, 0);
    ck_assert_int_eq(w.length_hist[0], proposing);
    ck_assert_int_eq(w.accepted_total, 0);
    medusa_free(&right);
    medusa_free(&wrong);
    model_free(&m);
}
END_TEST

/* The embedded target with its trained heads: the greedy and the exact
 * rules emit the greedy tokens, and trained heads get whole paths accepted.
 * A 9-node tree keeps the reference's node-by-node verification short. */
#define EMBEDDED_HEADS "models/tiny-shakespeare-medusa/medusa_heads.safetensors"

START_TEST(test_canary_embedded) {
    model m;
    medusa_load_model(&m, "models/tiny-shakespeare");
    medusa_heads h;
    sp_error err;
    ck_assert_msg(medusa_load(&h, EMBEDDED_HEADS, medusa_base_of(&m), 0, &err) == 0, "%s", err.msg);
    medusa_tree t;
    ck_assert(medusa_tree_parse(&t, "[[0],[1],[2],[0,0],[0,1],[1,0],[0,0,0],[0,0,1],[0,0,0,0]]", "small", &err) == 0);
    run_accounting sum[2];
    memset(sum, 0, sizeof sum);
    for (int p = 0; p < harness_prompts(N_PROMPTS); p++) {
        int prompt[5], want[N_TOKENS], n = 1 + p % 5;
        for (int i = 0; i < n; i++) prompt[i] = (int)(philox_uniform(78, (uint64_t)p, (uint64_t)i, 0) * 500);
        fixture_greedy_oracle(&m, prompt, n, N_TOKENS, want);
        medusa_matches_greedy(&m, &h, &t, "greedy", prompt, n, want, &sum[0]);
        medusa_matches_greedy(&m, &h, &t, "exact", prompt, n, want, &sum[1]);
    }
    for (int r = 0; r < 2; r++) {
        ck_assert_int_gt(sum[r].length_hist[4], 0);
        ck_assert_int_gt(sum[r].length_hist[0], 0);
    }
    medusa_free(&h);
    model_free(&m);
}
END_TEST

/* Sampled runs are reproducible by seed and differ across seeds. */
START_TEST(test_sample_runs) {
    model m;
    medusa_load_model(&m, medusa_micro);
    medusa_heads h;
    medusa_random_heads(&h, &m, 3, 1, 1, 9, 0.5f);
    fixture_parts fp;
    fixture_parts_open(&fp, &m, NULL, &h);
    method_spec s = fixture_spec("--method medusa --temperature 1 --rule exact-norepl --max-tokens 12 --no-eos");
    int prompt[3] = {4, 8, 15}, a[3][12], b[12];
    sp_error err;
    for (int r = 0; r < 3; r++) {
        s.seed = 100 + (uint64_t)r;
        decode_output out;
        ck_assert_msg(method_generate(&s, &fp.parts, prompt, 3, &out, &err) == 0, "%s", err.msg);
        ck_assert_int_eq(out.n, 12);
        memcpy(a[r], out.tokens, sizeof a[r]);
        decode_output_free(&out);
    }
    s.seed = 100;
    decode_output again;
    ck_assert(method_generate(&s, &fp.parts, prompt, 3, &again, &err) == 0);
    memcpy(b, again.tokens, sizeof b);
    decode_output_free(&again);
    ck_assert(memcmp(a[0], b, sizeof b) == 0);
    ck_assert(memcmp(a[0], a[1], sizeof b) != 0 || memcmp(a[1], a[2], sizeof b) != 0);
    fixture_parts_close(&fp);
    medusa_free(&h);
    model_free(&m);
}
END_TEST

Suite *medusa_proposer_suite(void) {
    Suite *s = suite_create("medusa_proposer");
    TCase *prop = harness_tcase("proposer", 60);
    tcase_add_unchecked_fixture(prop, medusa_setup, medusa_teardown);
    tcase_add_test(prop, test_proposer_top_ranks);
    tcase_add_test(prop, test_proposer_draws);
    tcase_add_test(prop, test_rules_choose_the_children);
    tcase_add_test(prop, test_proposer_errors);
    tcase_add_test(prop, test_sample_runs);
    suite_add_tcase(s, prop);
    TCase *canary = harness_tcase("greedy canaries", 300);
    tcase_add_unchecked_fixture(canary, medusa_setup, medusa_teardown);
    tcase_add_test(canary, test_canary_random_heads);
    tcase_add_test(canary, test_canary_copy_heads);
    if (access("models/tiny-shakespeare/model.safetensors", R_OK) == 0 && access(EMBEDDED_HEADS, R_OK) == 0)
        tcase_add_test(canary, test_canary_embedded);
    else
        harness_skip("medusa_proposer", "canary_embedded",
                     "models/tiny-shakespeare or its Medusa heads are not in this checkout");
    suite_add_tcase(s, canary);
    return s;
}
