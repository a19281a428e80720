/* test_beam_brute.c — beam search against brute force on random micro models: at full width it must return the
 * exhaustive ranking, and a deliberately naive second implementation of the same rules must agree with it. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "beam.h"
#include "fixtures.h"
#include "harness.h"

/* Scores agree to 1e-9: both sides add the same float32 log-probabilities
 * in double in the same order; only the log-sum-exp is written twice. */
#define SCORE_TOL 1e-9
#define MAX_GEN 8

/* log p(· | prompt, gen) in double, from a state that saw nothing else. */
static void fresh_logprobs(model *m, const int *prompt, int n_prompt, const int *gen, int n_gen, double *out) {
    const int V = m->cfg.vocab_size;
    float *logits = malloc(sizeof(float) * V);
    model_state s;
    state_build(&s, &m->cfg, NULL);
    for (int i = 0; i < n_prompt; i++) model_forward(m, &s, prompt[i], logits, NULL);
    for (int i = 0; i < n_gen; i++) model_forward(m, &s, gen[i], logits, NULL);
    state_free(&s);
    double mx = logits[0], z = 0;
    for (int v = 1; v < V; v++) mx = logits[v] > mx ? logits[v] : mx;
    for (int v = 0; v < V; v++) z += exp(logits[v] - mx);
    for (int v = 0; v < V; v++) out[v] = logits[v] - (mx + log(z));
    free(logits);
}

typedef struct {
    int tok[MAX_GEN];
    int n;
    double sum, score;
    int order; /* insertion order, to make qsort stable */
} seq;

static int by_score(const void *pa, const void *pb) {
    const seq *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->order - b->order;
}

static int is_eos(const model *m, int tok) {
    for (int i = 0; i < m->cfg.num_eos; i++)
        if (m->cfg.eos_token_ids[i] == tok) return 1;
    return 0;
}

static void assert_same(const beam_output *out, const seq *want, int n_want, const char *what) {
    ck_assert_msg(out->n_best == n_want, "%s: %d hypotheses, brute force %d", what, out->n_best, n_want);
    for (int i = 0; i < n_want; i++) {
        const beam_hypothesis *h = &out->best[i];
        ck_assert_msg(h->n == want[i].n, "%s: rank %d: length %d, brute force %d", what, i, h->n, want[i].n);
        for (int t = 0; t < h->n; t++)
            ck_assert_msg(h->tokens[t] == want[i].tok[t], "%s: rank %d token %d: %d, brute force %d", what, i, t,
                          h->tokens[t], want[i].tok[t]);
        ck_assert_msg(fabs(h->score - want[i].score) <= SCORE_TOL, "%s: rank %d: score %.12f, brute force %.12f", what,
                      i, h->score, want[i].score);
        ck_assert_msg(fabs(h->sum_logprobs - want[i].sum) <= SCORE_TOL, "%s: rank %d: sum", what, i);
    }
}

/* ---- (1) exhaustive ranking at full width -------------------------------------------- */

#define EX_V 8
#define EX_L 4

/* Every sequence of up to L tokens that ends at an EOS or at length L,
 * with its summed log-probability; returns the count. */
static int enumerate(model *m, const int *prompt, int n_prompt, int stop_at_eos, seq *all, seq *cur, int cap, int n) {
    double lp[EX_V];
    fresh_logprobs(m, prompt, n_prompt, cur->tok, cur->n, lp);
    for (int v = 0; v < EX_V; v++) {
        seq next = *cur;
        next.tok[next.n++] = v;
        next.sum = cur->sum + lp[v];
        if (next.n == EX_L || (stop_at_eos && is_eos(m, v))) {
            ck_assert_int_lt(n, cap);
            next.order = n;
            all[n++] = next;
        } else {
            n = enumerate(m, prompt, n_prompt, stop_at_eos, all, &next, cap, n);
        }
    }
    return n;
}

static void tweak_v8(model_config *c) {
    c->vocab_size = EX_V;
    c->eos_token_ids[0] = EX_V - 1;
    c->num_eos = 1;
}

/* With b at least V^L nothing is pruned, so the returned n-best list must be the exhaustive ranking of every
 * continuation of up to L tokens under the same score. */
START_TEST(test_full_width_is_exhaustive) {
    fixture_model f;
    fixture_model_open(&f, "micro", 71, tweak_v8);
    model *m = &f.m;
    const int cap = 4096; /* V^L */
    seq *all = calloc(cap, sizeof *all), *ranked = calloc(cap, sizeof *ranked);
    const float penalties[] = {0, 1, 2, -1};
    const int prompts[2][3] = {{3, 1, 4}, {6, 6, 0}};
    for (int p = 0; p < 2; p++) {
        for (int stop_at_eos = 1; stop_at_eos >= 0; stop_at_eos--) {
            seq root = {{0}, 0, 0, 0, 0};
            const int n = enumerate(m, prompts[p], 3, stop_at_eos, all, &root, cap, 0);
            ck_assert_int_eq(n, stop_at_eos ? 1 + 7 + 49 + 343 + 2401 : 4096);
            for (size_t k = 0; k < sizeof penalties / sizeof penalties[0]; k++) {
                memcpy(ranked, all, sizeof *all * n);
                for (int i = 0; i < n; i++) ranked[i].score = ranked[i].sum / pow(ranked[i].n, penalties[k]);
                qsort(ranked, n, sizeof *ranked, by_score);
                /* neighbours more than 2·SCORE_TOL apart cannot swap through
                 * errors of at most SCORE_TOL on each side */
                for (int i = 0; i + 1 < n; i++)
                    ck_assert_msg(ranked[i].score - ranked[i + 1].score > 2 * SCORE_TOL,
                                  "ranks %d and %d are nearly tied (%.3g): choose another seed", i, i + 1,
                                  ranked[i].score - ranked[i + 1].score);
                for (int es = BEAM_EARLY_TRUE; es <= BEAM_EARLY_NEVER; es++) {
                    beam_options bo = beam_defaults();
                    bo.num_beams = bo.num_return = cap;
                    bo.max_new_tokens = EX_L;
                    bo.length_penalty = penalties[k];
                    bo.early_stopping = (beam_early_stopping)es;
                    bo.stop_at_eos = stop_at_eos;
                    beam_output out;
                    sp_error err;
                    ck_assert_msg(fixture_beam_run(m, prompts[p], 3, &bo, &out, &err) == 0, "%s", err.msg);
                    char what[96];
                    snprintf(what, sizeof what, "prompt %d, eos %d, lp %g, %s", p, stop_at_eos, penalties[k],
                             beam_early_stopping_name(bo.early_stopping));
                    assert_same(&out, ranked, n, what);
                    ck_assert_int_eq(out.acc.target_passes, EX_L);
                    beam_output_free(&out);
                }
            }
        }
    }
    free(all);
    free(ranked);
    fixture_model_close(&f);
}
END_TEST

/* ---- (2) a naive implementation of the same rules ------------------------------------ */

#define NV_MAX_B 5
#define NV_VMAX 32

typedef struct {
    seq s;
    int parent, token;
} naive_cand;

static int naive_cand_cmp(const void *pa, const void *pb) {
    const naive_cand *a = pa, *b = pb;
    if (a->s.sum != b->s.sum) return a->s.sum > b->s.sum ? -1 : 1;
    if (a->parent != b->parent) return a->parent - b->parent;
    return a->token - b->token;
}

/* HF's _beam_search for one sequence, written as plainly as possible.
 * Returns the finished list (best first) in fin[] and the passes taken. */
static int naive_beam(model *m, const int *prompt, int n_prompt, const beam_options *o, seq *fin, int *n_fin) {
    const int V = m->cfg.vocab_size, b = o->num_beams;
    const int n_eos = o->stop_at_eos ? m->cfg.num_eos : 0;
    const int K = (n_eos + 1 > 2 ? n_eos + 1 : 2) * b;
    const double lp = o->length_penalty;
    seq live[NV_MAX_B], pool[2 * NV_MAX_B];
    naive_cand cand[NV_MAX_B * NV_VMAX];
    int n_live = 1, passes = 0, order = 0;
    memset(&live[0], 0, sizeof live[0]);
    *n_fin = 0;
    for (int t = 0;; t++) {
        passes++;
        int n = 0;
        for (int i = 0; i < n_live; i++) {
            double lps[NV_VMAX];
            fresh_logprobs(m, prompt, n_prompt, live[i].tok, live[i].n, lps);
            for (int v = 0; v < V; v++) {
                naive_cand *c = &cand[n++];
                c->s = live[i];
                c->s.tok[c->s.n++] = v;
                c->s.sum = live[i].sum + lps[v];
                c->parent = i;
                c->token = v;
            }
        }
        qsort(cand, n, sizeof *cand, naive_cand_cmp);
        if (n > K) n = K;
        /* finished: merge the old list with the stopping ones among the top b */
        int m_pool = 0;
        for (int i = 0; i < *n_fin; i++) pool[m_pool++] = fin[i];
        for (int j = 0; j < n && j < b; j++) {
            const int stops = t + 1 == o->max_new_tokens || (o->stop_at_eos && is_eos(m, cand[j].token));
            if (stops) {
                seq h = cand[j].s;
                h.score = h.sum / pow(h.n, lp);
                pool[m_pool++] = h;
            }
        }
        for (int i = 0; i < m_pool; i++) pool[i].order = order++;
        qsort(pool, m_pool, sizeof *pool, by_score);
        *n_fin = m_pool < b ? m_pool : b;
        memcpy(fin, pool, sizeof *fin * *n_fin);
        /* live: the first b that go on */
        int n_next = 0;
        seq next[NV_MAX_B];
        for (int j = 0; j < n && n_next < b; j++) {
            const int stops = t + 1 == o->max_new_tokens || (o->stop_at_eos && is_eos(m, cand[j].token));
            if (!stops) next[n_next++] = cand[j].s;
        }
        memcpy(live, next, sizeof *live * n_next);
        n_live = n_next;
        /* stop? */
        const int cur = t + 1;
        if (n_live == 0) break;
        if (*n_fin == b) {
            if (o->early_stopping == BEAM_EARLY_TRUE) break;
            const double len = o->early_stopping == BEAM_EARLY_NEVER && lp > 0 ? o->max_new_tokens : cur;
            if (live[0].sum / pow(len, lp) <= fin[b - 1].score) break;
        }
    }
    return passes;
}

/* EOS sets for the V = 32 models: none (stop_at_eos off), two ids, six ids
 * (K = 2b, 3b, 7b); six of 32 tokens end a hypothesis often enough that b
 * of them finish and the stopping rules decide before max_new_tokens. */
static void set_eos(model *m, int which) {
    static const int ids[6] = {5, 17, 30, 2, 11, 23};
    m->cfg.num_eos = which == 0 ? 1 : which == 1 ? 2 : 6;
    for (int i = 0; i < m->cfg.num_eos; i++) m->cfg.eos_token_ids[i] = ids[i];
}

/* The naive implementation recomputes every log-probability from a fresh state over the whole sequence, sorts its
 * lists wholesale, and has no shared KV and no slots; it must return the same hypotheses and stop after the same
 * number of passes, for many widths, penalties, modes and EOS sets. */
START_TEST(test_same_as_naive_implementation) {
    const char *presets[] = {"micro", "micro", "micro-deep"};
    void (*tweaks[])(model_config *) = {NULL, tweak_v8, NULL};
    const float penalties[] = {1, 0, -0.5f, 2.5f, 0.7f};
    int cases = 0, with_early_finish = 0, early_by_mode[3] = {0, 0, 0};
    for (int pi = 0; pi < 3; pi++) {
        fixture_model f;
        fixture_model_open(&f, presets[pi], 81 + pi, tweaks[pi]);
        model *m = &f.m;
        const int V = m->cfg.vocab_size;
        ck_assert_int_le(V, NV_VMAX);
        for (int c = 0; c < 60; c++, cases++) {
            int prompt[KV_BLOCK_SIZE + 2];
            const int n_prompt = c % 3 == 2 ? KV_BLOCK_SIZE + 2 : 1 + c % 4; /* some cross a KV block */
            for (int i = 0; i < n_prompt; i++) prompt[i] = (c * 13 + i * 5 + pi) % V;
            beam_options bo = beam_defaults();
            bo.num_beams = 2 + c % 4;
            bo.num_return = bo.num_beams;
            bo.max_new_tokens = 1 + (c * 7) % MAX_GEN;
            bo.length_penalty = penalties[c % 5];
            bo.early_stopping = (beam_early_stopping)((c / 5) % 3);
            bo.stop_at_eos = V == 8 || (c / 2) % 3 != 0;
            if (V != 8) set_eos(m, (c / 2) % 3);
            seq fin[NV_MAX_B];
            int n_fin;
            const int passes = naive_beam(m, prompt, n_prompt, &bo, fin, &n_fin);
            beam_output out;
            sp_error err;
            ck_assert_msg(fixture_beam_run(m, prompt, n_prompt, &bo, &out, &err) == 0, "%s", err.msg);
            char what[128];
            snprintf(what, sizeof what, "%s case %d (b %d, lp %g, %s, %d new, eos %d)", presets[pi], c, bo.num_beams,
                     bo.length_penalty, beam_early_stopping_name(bo.early_stopping), bo.max_new_tokens,
                     bo.stop_at_eos ? m->cfg.num_eos : 0);
            assert_same(&out, fin, n_fin, what);
            ck_assert_msg(out.acc.target_passes == passes, "%s: %ld passes, naive %d", what, out.acc.target_passes,
                          passes);
            for (int i = 0; i < n_fin; i++) with_early_finish += fin[i].n < bo.max_new_tokens;
            early_by_mode[bo.early_stopping] += passes < bo.max_new_tokens;
            beam_output_free(&out);
        }
        fixture_model_close(&f);
    }
    /* the cases must exercise the EOS paths and every stopping rule */
    ck_assert_int_eq(cases, 180);
    ck_assert_msg(with_early_finish >= 50, "only %d hypotheses ended by EOS before the limit", with_early_finish);
    for (int es = 0; es < 3; es++)
        ck_assert_msg(early_by_mode[es] >= 3, "early stopping %s ended only %d searches before max_new_tokens",
                      beam_early_stopping_name((beam_early_stopping)es), early_by_mode[es]);
}
END_TEST

Suite *beam_brute_suite(void) {
    Suite *s = suite_create("beam_brute");
    TCase *tc = harness_tcase("exhaustive", 240);
    tcase_add_test(tc, test_full_width_is_exhaustive);
    suite_add_tcase(s, tc);
    tc = harness_tcase("naive", 240);
    tcase_add_test(tc, test_same_as_naive_implementation);
    suite_add_tcase(s, tc);
    return s;
}
