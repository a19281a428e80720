/* test_leviathan.c — the exact acceptance rule on explicit (p, q) pairs, in a context-free world: the target's
 * distribution at position t is P[t mod 3] and the draft's Q[t mod 3], whatever came before, so the first L = 3
 * emitted tokens must be distributed as P[0] × P[1] × P[2]. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "accept.h"
#include "enumerate.h"
#include "harness.h"
#include "planted.h"
#include "sampler.h"
#include "spec_law.h"
#include "stat_common.h"
#include "tree_law.h"

#define PV 6 /* vocabulary */
#define PK 2 /* drafts per round */
#define PL 3 /* tokens compared */
#define CELLS (PV * PV * PV)
#define ROWS 3 /* rows cycle with the position */
#define SEED 4242

typedef struct {
    const char *name;
    float p[ROWS][PV], q[ROWS][PV];
    unsigned visible; /* bit b: planted bug b changes the law on this pair (checked against spec_law) */
} pair_case;

#define BIT(b) (1u << (b))

static pair_case cases[] = {
    {"identical p = q",
     {{.30f, .25f, .20f, .15f, .07f, .03f}, {.05f, .10f, .15f, .20f, .25f, .25f}, {.40f, .05f, .05f, .40f, .05f, .05f}},
     {{.30f, .25f, .20f, .15f, .07f, .03f}, {.05f, .10f, .15f, .20f, .25f, .25f}, {.40f, .05f, .05f, .40f, .05f, .05f}},
     /* every draft is accepted: only the bonus can go wrong */
     BIT(PLANT_BONUS_FROM_PARENT)},
    {"disjoint supports",
     {{.5f, .3f, .2f, 0, 0, 0}, {.2f, .3f, .5f, 0, 0, 0}, {.34f, .33f, .33f, 0, 0, 0}},
     {{0, 0, 0, .5f, .3f, .2f}, {0, 0, 0, .2f, .3f, .5f}, {0, 0, 0, .6f, .2f, .2f}},
     /* every draft is rejected and norm(max(0, p − q)) = p: drawing from p is right here */
     BIT(PLANT_RATIO_INVERTED) | BIT(PLANT_REJECT_FROM_Q)},
    {"zeros in either",
     {{.4f, .3f, .2f, .1f, 0, 0}, {0, .1f, .2f, .3f, .4f, 0}, {.25f, 0, .25f, 0, .25f, .25f}},
     {{0, .2f, .2f, .2f, .2f, .2f}, {.3f, .3f, 0, .2f, 0, .2f}, {.2f, .2f, .2f, .2f, .2f, 0}},
     BIT(PLANT_RATIO_INVERTED) | BIT(PLANT_RESIDUAL_IS_P) | BIT(PLANT_RESIDUAL_UNNORMALISED) |
         BIT(PLANT_REJECT_FROM_Q) | BIT(PLANT_BONUS_FROM_PARENT)},
    {"peaked p, flat q",
     {{.80f, .08f, .05f, .04f, .02f, .01f}, {.01f, .80f, .08f, .05f, .04f, .02f}, {.02f, .01f, .80f, .08f, .05f, .04f}},
     {{1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f},
      {1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f},
      {1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f}},
     BIT(PLANT_RATIO_INVERTED) | BIT(PLANT_RESIDUAL_IS_P) | BIT(PLANT_RESIDUAL_UNNORMALISED) |
         BIT(PLANT_REJECT_FROM_Q) | BIT(PLANT_BONUS_FROM_PARENT)},
    {"flat p, peaked q",
     {{1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f},
      {.02f, .05f, .08f, .15f, .30f, .40f},
      {1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f}},
     {{.80f, .08f, .05f, .04f, .02f, .01f}, {.01f, .80f, .08f, .05f, .04f, .02f}, {.02f, .01f, .80f, .08f, .05f, .04f}},
     BIT(PLANT_RATIO_INVERTED) | BIT(PLANT_RESIDUAL_IS_P) | BIT(PLANT_RESIDUAL_UNNORMALISED) |
         BIT(PLANT_REJECT_FROM_Q) | BIT(PLANT_BONUS_FROM_PARENT)},
    {"q massed where p is small",
     {{.02f, .12f, .01f, .34f, .01f, .50f}, {.10f, .02f, .50f, .02f, .34f, .02f}, {.34f, .50f, .02f, .10f, .02f, .02f}},
     {{0, .02f, .88f, 0, .10f, 0}, {.88f, 0, 0, .10f, 0, .02f}, {0, 0, .10f, 0, .02f, .88f}},
     BIT(PLANT_RATIO_INVERTED) | BIT(PLANT_RESIDUAL_IS_P) | BIT(PLANT_RESIDUAL_UNNORMALISED) |
         BIT(PLANT_REJECT_FROM_Q) | BIT(PLANT_BONUS_FROM_PARENT)},
    {"top-k target, top-p draft",
     {{0}},
     {{0}}, /* filled by truncate_rows() */
     BIT(PLANT_RATIO_INVERTED) | BIT(PLANT_RESIDUAL_IS_P) | BIT(PLANT_RESIDUAL_UNNORMALISED) |
         BIT(PLANT_REJECT_FROM_Q) | BIT(PLANT_BONUS_FROM_PARENT)},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* The last pair: the target's rows cut by top-k 3 at T = 0.9, the draft's
 * by top-p 0.8 at T = 1.1 (sampler_probs, so the cuts are the real ones). */
static void truncate_rows(pair_case *c) {
    static const float logits[ROWS][PV] = {{2.0f, 1.5f, 1.2f, 0.4f, -0.3f, -1.0f},
                                           {-0.5f, 0.8f, 2.2f, 1.9f, 0.1f, 0.0f},
                                           {1.0f, -1.0f, 0.3f, 0.9f, 1.8f, 1.1f}};
    static const float draft_logits[ROWS][PV] = {{1.6f, 1.9f, 0.2f, 0.7f, -0.2f, 0.5f},
                                                 {0.3f, 0.2f, 1.4f, 2.4f, 0.9f, -0.4f},
                                                 {0.8f, 0.1f, -0.6f, 1.2f, 2.0f, 0.4f}};
    sampler_params tp = sampler_defaults(), dp = sampler_defaults();
    tp.temperature = 0.9f, tp.top_k = 3;
    dp.temperature = 1.1f, dp.top_p = 0.8f;
    for (int r = 0; r < ROWS; r++) {
        sampler_probs(&tp, logits[r], c->p[r], PV);
        sampler_probs(&dp, draft_logits[r], c->q[r], PV);
    }
}

/* ---- the sampler: rounds of k = 2 drafts on the context-free world ------------------- */

typedef struct {
    const pair_case *c;
    planted_bug bug; /* PLANT_NONE: accept_exact itself */
} pair_sampler;

static int pair_draw(void *ctx, uint64_t seed, int *tokens, sp_error *err) {
    const pair_sampler *s = ctx;
    token_tree t;
    tree_build(&t, PV, PK + 1);
    float p[(PK + 1) * PV], scratch[2 * PV];
    int len = 0, rc = 0;
    for (uint64_t round = 0; len < PL && !rc; round++) {
        tree_reset(&t, 0, CHILDREN_IID);
        int u = 0;
        for (int d = 1; d <= PK; d++) { /* the draft at depth d sits at position len + d − 1 */
            const float *q = s->c->q[(len + d - 1) % ROWS];
            memcpy(tree_q(&t, u), q, sizeof(float) * PV);
            rng_site site = {seed, RNG_DRAFT, accept_draw_index(round, len + d, 0)};
            u = tree_add(&t, u, sampler_sample(q, PV, site));
        }
        for (int d = 0; d <= PK; d++) memcpy(p + d * PV, s->c->p[(len + d) % ROWS], sizeof(float) * PV);
        accept_site site = {seed, round, len};
        accept_result r;
        rc = s->bug == PLANT_NONE ? accept_exact(&t, p, site, scratch, &r, err)
                                  : planted_accept(s->bug, &t, p, site, scratch, &r, err);
        for (int i = 1; i <= r.n_accepted && len < PL && !rc; i++) tokens[len++] = t.token[r.path[i]];
        if (len < PL && !rc) tokens[len++] = r.next_token;
    }
    tree_free(&t);
    return rc;
}

/* ---- the exact laws --------------------------------------------------------------- */

static void law_target(void *user, const int *tokens, int len, float *out) {
    (void)tokens;
    memcpy(out, ((const pair_case *)user)->p[len % ROWS], sizeof(float) * PV);
}

static void law_draw(void *user, const int *tokens, int len, int depth, float *out) {
    (void)tokens, (void)depth; /* the draft at depth d after len emitted tokens sits at position len */
    memcpy(out, ((const pair_case *)user)->q[len % ROWS], sizeof(float) * PV);
}

static void pair_law(pair_case *c, planted_bug bug, double *joint) {
    spec_law_spec s = {
        .V = PV, .L = PL, .k = PK, .max_tokens = 0, .target = law_target, .draw = law_draw, .user = c, .bug = bug};
    sp_error err;
    ck_assert_msg(spec_law(&s, joint, &err) == 0, "%s: %s", c->name, err.msg);
}

/* Sizes planned per pair (power 0.999 at 1e-12 against the pair's weakest
 * visible control, × 1.5, in steps of 500, at least 1 000): identical
 * 1 000, disjoint 1 000, zeros 1 000, peaked p 2 000, truncated 1 000
 * (controls that draw forbidden tokens are rejected with p = 0); flat p /
 * peaked q 17 500 and q massed where p is small 46 000: there both drafts
 * are rarely accepted, so the early bonus shows in few rounds
 * (w ≈ 0.05–0.09). */
#define PAIR_N_FLOOR 1000
#define PAIR_N_CAP 60000 /* the time budget (docs/verification.md) */

/* One case of the family: the exact rule's draws against the target (its
 * p-value is returned for the family's correction), then each control bug in
 * `controls` at the same size, each of which must be rejected. `bug` is the
 * sampler's field that selects the rule. */
static double test_case_and_controls(dist_sampler s, planted_bug *bug, unsigned controls, const double *exact,
                                     int64_t n, uint64_t seed, uint64_t control_seed) {
    verify_options o = verify_defaults();
    o.n = n;
    o.seed = seed;
    sp_error err;
    verify_result r;
    const char *name = s.name;
    *bug = PLANT_NONE;
    ck_assert_msg(verify_against_exact(&s, exact, &o, &r, &err) == 0, "%s", err.msg);
    double p_value = r.test.p_value;
    ck_assert_int_eq(r.test.impossible, 0);
    verify_result_free(&r);
    for (int b = 1; b < PLANT_COUNT; b++) {
        if (!(controls & BIT(b))) continue;
        *bug = (planted_bug)b;
        s.name = planted_name(b);
        o.seed = control_seed + (uint64_t)b;
        ck_assert_msg(verify_against_exact(&s, exact, &o, &r, &err) == 0, "%s", err.msg);
        char what[128];
        snprintf(what, sizeof what, "%s, control %s", name, planted_name(b));
        stat_assert_control_rejected(&r, what);
        verify_result_free(&r);
    }
    *bug = PLANT_NONE;
    return p_value;
}

/* The sampler runs the real round loop on the world (k = 2 drafts per round, accept_exact, the correction or
 * bonus, the next round from where it stopped), and each pair is tested (G-test, 216 cells) against the product.
 * Every planted bug whose law differs from the target's on a pair (computed exactly by spec_law) is that pair's
 * negative control, run at the same size and rejected below 1e-12; the size is planned per pair from the weakest
 * control's exact law (stat_common.h). */
START_TEST(test_pairs_follow_the_target) {
    truncate_rows(&cases[N_CASES - 1]);
    double p_values[N_CASES];
    const char *names[N_CASES];
    double exact[CELLS], law[CELLS];
    for (int ci = 0; ci < N_CASES; ci++) {
        pair_case *c = &cases[ci];
        names[ci] = c->name;
        for (int i = 0; i < CELLS; i++) /* the target: independent positions */
            exact[i] = (double)c->p[0][i / (PV * PV)] * c->p[1][(i / PV) % PV] * c->p[2][i % PV];
        double total = 0;
        for (int i = 0; i < CELLS; i++) total += exact[i];
        for (int i = 0; i < CELLS; i++) exact[i] /= total; /* the float rows sum to 1 within 1e-7 */

        /* exactness by computation first: the rule's law is the product */
        pair_law(c, PLANT_NONE, law);
        for (int i = 0; i < CELLS; i++)
            ck_assert_msg(fabs(law[i] - exact[i]) < 1e-7, "%s: the exact rule's law differs at cell %d", c->name, i);

        /* which bugs change the law here, and the size that catches the weakest of them */
        int64_t n = PAIR_N_FLOOR;
        for (int b = 1; b < PLANT_COUNT; b++) {
            if (!spec_law_computes((planted_bug)b)) continue; /* a target's slip: nothing in this world */
            pair_law(c, (planted_bug)b, law);
            double tv = 0;
            for (int i = 0; i < CELLS; i++) tv += 0.5 * fabs(law[i] - exact[i]);
            int visible = (c->visible & BIT(b)) != 0;
            /* below 1e-6 a difference is float rounding of the rows (each sums to 1 within ~1e-7) */
            ck_assert_msg(visible == (tv > 1e-6), "%s: %s moves the law by TV %.3g, but the case says it is %s",
                          c->name, planted_name(b), tv, visible ? "visible" : "invisible");
            if (!visible) continue;
            char what[128];
            snprintf(what, sizeof what, "%s, control %s", c->name, planted_name(b));
            int64_t nb = stat_planned_n(exact, law, CELLS, 0, PAIR_N_FLOOR, PAIR_N_CAP, what);
            if (nb > n) n = nb;
        }

        pair_sampler sampler = {c, PLANT_NONE};
        dist_sampler s = {c->name, PV, PL, pair_draw, &sampler};
        p_values[ci] = test_case_and_controls(s, &sampler.bug, c->visible, exact, n, SEED + (uint64_t)ci,
                                              SEED + 100 + (uint64_t)(ci * PLANT_COUNT));
    }
    stat_assert_family_passes(p_values, N_CASES, names);
}
END_TEST

/* ---- trees: multi-round rejection over W children --------------------------------
 * The same context-free world, but each round proposes a tree: W = 3
 * children of the root drawn from Q[len] (i.i.d., or without replacement),
 * each with one child of its own drawn from Q[len + 1]. accept_exact runs
 * SpecInfer's multi-round rejection over the siblings. The law of the rule
 * and of every planted bug on these trees is computed (tree_law.h, rounds
 * composed below): the exact rule's must be the target's, and a bug is a
 * case's must-catch control when its law differs from the target's
 * (TV > 1e-6) and the size that catches it — power 0.999 at 1e-12, × 1.5,
 * as for the pairs — fits the case's budget of TREE_N_CAP draws. The case
 * runs at the largest such size (at least the generic plan, 3 500 to
 * 5 000 draws); a bug whose law is the target's here (the late bonus,
 * the root-only renormalisation under single children) is not required. */

#define TW 3 /* children of the root */
#define TREE_NODES (1 + 2 * TW)
#define TREE_N_CAP 30000 /* the time budget (docs/verification.md) */

typedef struct {
    const char *name;
    int pair;           /* index into cases[] */
    children_kind kind; /* CHILDREN_IID or CHILDREN_NO_REPLACEMENT */
} tree_case;

static const tree_case tree_cases[] = {
    {"i.i.d. tree, zeros in either", 2, CHILDREN_IID},
    {"i.i.d. tree, flat p, peaked q", 4, CHILDREN_IID},
    {"without replacement, zeros in either", 2, CHILDREN_NO_REPLACEMENT},
    /* q puts 0.88 on one token p barely wants: after it is rejected, renormalising q matters */
    {"without replacement, q massed where p is small", 5, CHILDREN_NO_REPLACEMENT},
    {"i.i.d. tree, q massed where p is small", 5, CHILDREN_IID},
    {"without replacement, peaked p, flat q", 3, CHILDREN_NO_REPLACEMENT},
    {"without replacement, flat p, peaked q", 4, CHILDREN_NO_REPLACEMENT},
};
#define N_TREE_CASES ((int)(sizeof tree_cases / sizeof tree_cases[0]))

/* A round's emitted tokens (1 to 3) in one table: bursts of length m start at offset(m). */
#define BURSTS (PV + PV * PV + PV * PV * PV)
static int burst_offset(int m) { return m == 1 ? 0 : m == 2 ? PV : PV + PV * PV; }

typedef struct {
    const token_tree *t;
    double weight; /* the probability of the tree's draws */
    double *bursts;
} burst_sink;

static void add_outcome(void *user, const int *path, int n_accepted, int next_token, double prob) {
    burst_sink *b = user;
    int tokens[3], m = 0;
    for (int i = 1; i <= n_accepted; i++) tokens[m++] = b->t->token[path[i]];
    tokens[m++] = next_token;
    b->bursts[burst_offset(m) + enumerate_index(tokens, m, PV)] += b->weight * prob;
}

/* The probability that the root's children come out as x[TW] from q (in that order). */
static double children_probability(const float *q, children_kind kind, const int *x) {
    double prob = 1, left = 1;
    for (int j = 0; j < TW; j++) {
        if (kind == CHILDREN_IID) {
            prob *= q[x[j]];
            continue;
        }
        for (int i = 0; i < j; i++)
            if (x[i] == x[j]) return 0;
        if (!(left > 0)) return 0;
        prob *= q[x[j]] / left;
        left -= q[x[j]];
    }
    return prob;
}

/* bursts[BURSTS] ← the law of the tokens one round emits from position len. Each outcome goes through
 * at most one grandchild (the one under the accepted child), whose token is drawn from Q[len + 1]
 * independently of the others; so the average over the three grandchildren equals the average over
 * one token y given to all three, weighted by Q[len + 1](y): 216 × 6 trees, not 216 × 216. */
static void round_law(const tree_case *c, planted_bug bug, int len, double *bursts) {
    const pair_case *pc = &cases[c->pair];
    const float *q0 = pc->q[len % ROWS], *q1 = pc->q[(len + 1) % ROWS];
    token_tree t;
    tree_build(&t, PV, TREE_NODES);
    float p[TREE_NODES * PV];
    const planted_rule rule = {bug, 1, -1}; /* as planted_accept, which the sampler runs */
    const accept_site site = {0, 0, len};
    memset(bursts, 0, BURSTS * sizeof(double));
    for (int xs = 0; xs < PV * PV * PV; xs++) {
        int x[TW];
        enumerate_tokens(xs, TW, PV, x);
        const double px = children_probability(q0, c->kind, x);
        for (int y = 0; y < PV && px > 0; y++) {
            if (!(q1[y] > 0)) continue;
            tree_reset(&t, 0, c->kind);
            memcpy(tree_q(&t, 0), q0, sizeof(float) * PV);
            int first[TW];
            for (int j = 0; j < TW; j++) first[j] = tree_add(&t, 0, x[j]);
            for (int j = 0; j < TW; j++) {
                memcpy(tree_q(&t, first[j]), q1, sizeof(float) * PV);
                tree_add(&t, first[j], y);
            }
            for (int i = 0; i < t.n; i++) memcpy(p + i * PV, pc->p[(len + t.depth[i]) % ROWS], sizeof(float) * PV);
            burst_sink sink = {&t, px * q1[y], bursts};
            sp_error err;
            ck_assert_msg(tree_accept_law(&rule, &t, p, site, add_outcome, &sink, &err) == 0, "%s", err.msg);
        }
    }
    tree_free(&t);
}

/* joint[CELLS] += the law of the first PL tokens after tokens[0..len) (probability mass), round by round. */
static void compose(double bursts[PL][BURSTS], int *tokens, int len, double mass, double *joint) {
    if (len >= PL) {
        joint[enumerate_index(tokens, PL, PV)] += mass;
        return;
    }
    for (int m = 1; m <= 3; m++)
        for (int b = 0; b < (m == 1 ? PV : m == 2 ? PV * PV : PV * PV * PV); b++) {
            const double prob = bursts[len][burst_offset(m) + b];
            if (!(prob > 0)) continue;
            int burst[3], next[PL + 3];
            enumerate_tokens(b, m, PV, burst);
            memcpy(next, tokens, sizeof(int) * (size_t)len);
            memcpy(next + len, burst, sizeof(int) * (size_t)m);
            compose(bursts, next, len + m, mass * prob, joint);
        }
}

static void tree_law(const tree_case *c, planted_bug bug, double *joint) {
    double bursts[PL][BURSTS];
    for (int len = 0; len < PL; len++) round_law(c, bug, len, bursts[len]);
    int tokens[PL + 3];
    memset(joint, 0, CELLS * sizeof(double));
    compose(bursts, tokens, 0, 1.0, joint);
}

typedef struct {
    const tree_case *c;
    planted_bug bug;
} tree_sampler;

/* W draws from q: independent, or without replacement (each from q with the
 * tokens already drawn removed, which is how the rule's q shrinks). */
static void draw_children(const float *q, children_kind kind, uint64_t seed, uint64_t round, int pos, int *out) {
    float left[PV];
    memcpy(left, q, sizeof left);
    for (int j = 0; j < TW; j++) {
        rng_site site = {seed, RNG_DRAFT, accept_draw_index(round, pos, j)};
        out[j] = sampler_sample(kind == CHILDREN_IID ? q : left, PV, site);
        left[out[j]] = 0;
    }
}

static int tree_draw(void *ctx, uint64_t seed, int *tokens, sp_error *err) {
    const tree_sampler *s = ctx;
    const pair_case *pc = &cases[s->c->pair];
    const children_kind kind = s->c->kind;
    token_tree t;
    tree_build(&t, PV, 1 + 2 * TW);
    float p[(1 + 2 * TW) * PV], scratch[2 * PV];
    int len = 0, rc = 0;
    for (uint64_t round = 0; len < PL && !rc; round++) {
        tree_reset(&t, 0, kind);
        int first[TW], second[TW];
        memcpy(tree_q(&t, 0), pc->q[len % ROWS], sizeof(float) * PV);
        draw_children(pc->q[len % ROWS], kind, seed, round, len + 1, first);
        for (int j = 0; j < TW; j++) first[j] = tree_add(&t, 0, first[j]);
        for (int j = 0; j < TW; j++) { /* one child under each: drawn from Q at the next position */
            const float *q = pc->q[(len + 1) % ROWS];
            memcpy(tree_q(&t, first[j]), q, sizeof(float) * PV);
            rng_site site = {seed, RNG_DRAFT, accept_draw_index(round, len + 2, TW + j)};
            second[j] = tree_add(&t, first[j], sampler_sample(q, PV, site));
        }
        (void)second;
        for (int i = 0; i < t.n; i++) memcpy(p + i * PV, pc->p[(len + t.depth[i]) % ROWS], sizeof(float) * PV);
        accept_site site = {seed, round, len};
        accept_result r;
        rc = s->bug == PLANT_NONE ? accept_exact(&t, p, site, scratch, &r, err)
                                  : planted_accept(s->bug, &t, p, site, scratch, &r, err);
        for (int i = 1; i <= r.n_accepted && len < PL && !rc; i++) tokens[len++] = t.token[r.path[i]];
        if (len < PL && !rc) tokens[len++] = r.next_token;
    }
    tree_free(&t);
    return rc;
}

START_TEST(test_trees_follow_the_target) {
    truncate_rows(&cases[N_CASES - 1]);
    double p_values[N_TREE_CASES];
    const char *names[N_TREE_CASES];
    double exact[CELLS], law[CELLS];
    for (int ci = 0; ci < N_TREE_CASES; ci++) {
        const tree_case *c = &tree_cases[ci];
        const pair_case *pc = &cases[c->pair];
        names[ci] = c->name;
        double total = 0;
        for (int i = 0; i < CELLS; i++) {
            exact[i] = (double)pc->p[0][i / (PV * PV)] * pc->p[1][(i / PV) % PV] * pc->p[2][i % PV];
            total += exact[i];
        }
        int reachable = 0;
        for (int i = 0; i < CELLS; i++) reachable += (exact[i] /= total) > 0;

        /* exactness by computation: the multi-round rule's law on these trees is the product (to 1e-6: the
         * rows are floats that sum to 1 within ~1e-7 each, and the law multiplies three of them with
         * the renormalised q of up to three rejected siblings; the product is normalised in double) */
        tree_law(c, PLANT_NONE, law);
        for (int i = 0; i < CELLS; i++)
            ck_assert_msg(fabs(law[i] - exact[i]) < 1e-6, "%s: the exact rule's law differs at cell %d: %.9f vs %.9f",
                          c->name, i, law[i], exact[i]);

        int64_t n;
        sp_error err;
        ck_assert(stats_n_gof(reachable - 1, STAT_CONTROL_P, STAT_PLAN_POWER, STAT_GENERIC_W, &n, &err) == 0);
        n = (int64_t)ceil(STAT_PLAN_MARGIN * (double)n / 500.0) * 500;
        /* the must-catch set, from each bug's computed law (the rule above) */
        unsigned must_catch = 0;
        for (int b = 1; b < PLANT_COUNT; b++) {
            if (b == PLANT_COMMIT_PARENT_AFTER_TWO) continue; /* a target's slip: not in this world */
            tree_law(c, (planted_bug)b, law);
            double tv = 0, mass = 0;
            for (int i = 0; i < CELLS; i++) tv += 0.5 * fabs(law[i] - exact[i]), mass += law[i];
            if (!(tv > 1e-6)) continue; /* float rounding of the rows, at most */
            /* a bug that leaves the rule nothing to draw (the correction from q after the children took all
             * of q's support) stops the sampler with an error: no law to test against */
            if (fabs(mass - 1) > 1e-6) continue;
            stats_plan plan;
            ck_assert_msg(stats_plan_gof(exact, law, CELLS, STAT_CONTROL_P, STAT_PLAN_POWER, STATS_MIN_EXPECTED, &plan,
                                         &err) == 0,
                          "%s, %s: %s", c->name, planted_name(b), err.msg);
            const int64_t nb = (int64_t)ceil(STAT_PLAN_MARGIN * (double)plan.n / 500.0) * 500;
            if (nb > TREE_N_CAP) continue; /* too weak here for the budget: caught elsewhere or not at all */
            must_catch |= BIT(b);
            if (nb > n) n = nb;
        }
        ck_assert_msg(must_catch != 0, "%s: no planted bug moves the law enough to be a control", c->name);
        tree_sampler sampler = {c, PLANT_NONE};
        dist_sampler s = {c->name, PV, PL, tree_draw, &sampler};
        p_values[ci] = test_case_and_controls(s, &sampler.bug, must_catch, exact, n, SEED + 500 + (uint64_t)ci,
                                              SEED + 600 + (uint64_t)(ci * PLANT_COUNT));
    }
    stat_assert_family_passes(p_values, N_TREE_CASES, names);
}
END_TEST

/* tree_law's outcome law against planted_accept_rule's own decisions, for the rule and every bug of it,
 * on one tree per case (the first round's, drawn with seed 1): TREE_LAW_N rounds verified with seeds
 * 1, 2, …, their outcomes (the last accepted node, the next token) counted, and the G-test of those
 * counts against the computed law must pass, Holm over all (case, bug) pairs. What sizes the tree
 * controls above is then the law the controls sample from. */
#define TREE_LAW_N 10000
#define OUTCOMES (TREE_NODES * PV)

typedef struct {
    double *law; /* [OUTCOMES] */
} outcome_law;

static void add_to_outcomes(void *user, const int *path, int n_accepted, int next_token, double prob) {
    ((outcome_law *)user)->law[path[n_accepted] * PV + next_token] += prob;
}

START_TEST(test_tree_law_follows_the_rule) {
    truncate_rows(&cases[N_CASES - 1]);
    double p_values[N_TREE_CASES * PLANT_COUNT];
    const char *names[N_TREE_CASES * PLANT_COUNT];
    static char labels[N_TREE_CASES * PLANT_COUNT][128];
    int m = 0;
    token_tree t;
    tree_build(&t, PV, TREE_NODES);
    float p[TREE_NODES * PV], scratch[2 * PV];
    for (int ci = 0; ci < N_TREE_CASES; ci++) {
        const tree_case *c = &tree_cases[ci];
        const pair_case *pc = &cases[c->pair];
        int first[TW], x[TW];
        draw_children(pc->q[0], c->kind, 1, 0, 1, x);
        tree_reset(&t, 0, c->kind);
        memcpy(tree_q(&t, 0), pc->q[0], sizeof(float) * PV);
        for (int j = 0; j < TW; j++) first[j] = tree_add(&t, 0, x[j]);
        for (int j = 0; j < TW; j++) {
            memcpy(tree_q(&t, first[j]), pc->q[1], sizeof(float) * PV);
            rng_site site = {1, RNG_DRAFT, accept_draw_index(0, 2, TW + j)};
            tree_add(&t, first[j], sampler_sample(pc->q[1], PV, site));
        }
        for (int i = 0; i < t.n; i++) memcpy(p + i * PV, pc->p[t.depth[i] % ROWS], sizeof(float) * PV);
        for (int b = 0; b < PLANT_COUNT; b++) {
            if (b == PLANT_COMMIT_PARENT_AFTER_TWO) continue; /* the target's slip: the rule is exact */
            const planted_rule rule = {(planted_bug)b, 1, -1};
            double law[OUTCOMES] = {0}, mass = 0;
            outcome_law sink = {law};
            sp_error err;
            ck_assert_msg(tree_accept_law(&rule, &t, p, (accept_site){0, 0, 0}, add_to_outcomes, &sink, &err) == 0,
                          "%s", err.msg);
            for (int i = 0; i < OUTCOMES; i++) mass += law[i];
            if (fabs(mass - 1) > 1e-6) continue; /* the rule is left nothing to draw (see above) */
            int64_t counts[OUTCOMES] = {0};
            for (int i = 0; i < TREE_LAW_N; i++) {
                accept_result r;
                const accept_site site = {(uint64_t)i + 1, 0, 0};
                ck_assert_msg(planted_accept_rule(&rule, &t, p, site, scratch, &r, &err) == 0, "%s", err.msg);
                counts[r.path[r.n_accepted] * PV + r.next_token]++;
            }
            stats_result res;
            ck_assert_msg(stats_gof(counts, law, OUTCOMES, STATS_G, STATS_MIN_EXPECTED, &res, &err) == 0, "%s",
                          err.msg);
            snprintf(labels[m], sizeof labels[m], "%s, %s", c->name, planted_name(b));
            names[m] = labels[m];
            p_values[m++] = res.p_value;
        }
    }
    tree_free(&t);
    stat_assert_family_passes(p_values, m, names);
}
END_TEST

Suite *leviathan_suite(void) {
    Suite *s = suite_create("leviathan");
    TCase *tc = harness_tcase("pairs", 120);
    tcase_add_test(tc, test_pairs_follow_the_target);
    tcase_add_test(tc, test_trees_follow_the_target);
    tcase_add_test(tc, test_tree_law_follows_the_rule);
    suite_add_tcase(s, tc);
    return s;
}
