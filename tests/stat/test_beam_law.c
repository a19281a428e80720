/* test_beam_law.c — beam search against its semantics evaluated on the
 * exact sequence law. For each of 30 prompts the micro model's law over
 * three tokens is enumerated once (enumerate.h: the raw log-softmax after
 * every prefix); a brute-force beam search of the same rules (beam.h: K
 * candidates by score, parent rank, token; finished hypotheses from the
 * first b, scored sum / length^penalty; the three early-stopping modes)
 * then runs on that table alone — no model, no state, no KV blocks — and
 * beam_run must return the same hypotheses, scores and passes for 8 random
 * settings per prompt (width, penalty, mode, length, EOS). This oracle
 * separates the search from the state handling, and the law ties every
 * returned score to the probability of its tokens. tests/unit/test_beam_brute.c
 * checks the exhaustive ranking and a second implementation over fresh
 * forwards; this is the randomised, many-prompt complement.
 * Negative controls: the same comparison against the oracle with a planted
 * slip of the rules must report mismatches. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beam.h"
#include "enumerate.h"
#include "fixtures.h"
#include "harness.h"
#include "verify_cases.h"

#define BL 3     /* the longest search: three new tokens */
#define MAX_B 5  /* widths 1…5 */
#define PROMPTS 30
#define SETTINGS 8
/* both sides add the same double log-probabilities in the same order: only
 * the log-sum-exp is computed twice */
#define SCORE_TOL 1e-9

typedef enum {
    SLIP_NONE = 0,
    SLIP_PENALTY_WITHOUT_EOS, /* the EOS token not counted in the length the penalty divides by */
    SLIP_FINISH_FROM_ALL_K,   /* stopping candidates beyond the first b also become hypotheses */
    SLIP_PROMPT_IN_LENGTH,    /* the prompt counted in the length (older libraries did) */
    SLIP_HEURISTIC_AT_MAX,    /* heuristic stopping judges the best live beam at max_new_tokens */
    SLIP_COUNT
} beam_slip;

static const char *const slip_names[SLIP_COUNT] = {"none", "penalty without EOS", "finished from all K",
                                                   "prompt in the length", "heuristic at max length"};

typedef struct {
    int tok[BL];
    int n;
    double sum, score;
    int order;
} hyp;

typedef struct {
    hyp h;
    int parent, token;
} cand;

static int cand_cmp(const void *pa, const void *pb) {
    const cand *a = pa, *b = pb;
    if (a->h.sum != b->h.sum) return a->h.sum > b->h.sum ? -1 : 1;
    if (a->parent != b->parent) return a->parent - b->parent;
    return a->token - b->token;
}

static int hyp_cmp(const void *pa, const void *pb) {
    const hyp *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->order - b->order;
}

static int is_eos(const model_config *c, int token) {
    for (int i = 0; i < c->num_eos; i++)
        if (c->eos_token_ids[i] == token) return 1;
    return 0;
}

/* The rules of beam.h on the table; returns the passes taken. */
static int law_beam(const enum_table *t, const model_config *cfg, int n_prompt, const beam_options *o, beam_slip slip,
                    hyp *fin, int *n_fin) {
    const int V = t->V, b = o->num_beams, n_eos = o->stop_at_eos ? cfg->num_eos : 0;
    const int K = (n_eos + 1 > 2 ? n_eos + 1 : 2) * b;
    const double lp = o->length_penalty;
    hyp live[MAX_B], pool[MAX_B + 4 * MAX_B]; /* the finished list + at most K = 4b stopping candidates */
    cand cands[MAX_B * VERIFY_WORLD_V];
    int n_live = 1, passes = 0, order = 0;
    memset(live, 0, sizeof live);
    *n_fin = 0;
    for (int step = 0;; step++) {
        passes++;
        int n = 0;
        for (int i = 0; i < n_live; i++) {
            const double *row = enumerate_raw_logprob(t, live[i].tok, live[i].n);
            for (int v = 0; v < V; v++) {
                cand *c = &cands[n++];
                c->h = live[i];
                c->h.tok[c->h.n++] = v;
                c->h.sum = live[i].sum + row[v];
                c->parent = i;
                c->token = v;
            }
        }
        qsort(cands, (size_t)n, sizeof *cands, cand_cmp);
        if (n > K) n = K;
        int m = 0;
        for (int i = 0; i < *n_fin; i++) pool[m++] = fin[i];
        const int judged = slip == SLIP_FINISH_FROM_ALL_K ? n : (n < b ? n : b);
        for (int j = 0; j < judged; j++) {
            const int eos = o->stop_at_eos && is_eos(cfg, cands[j].token);
            if (step + 1 == o->max_new_tokens || eos) {
                hyp h = cands[j].h;
                double len = h.n;
                if (slip == SLIP_PENALTY_WITHOUT_EOS && eos) len -= 1;
                if (slip == SLIP_PROMPT_IN_LENGTH) len += n_prompt;
                h.score = h.sum / pow(len, lp);
                pool[m++] = h;
            }
        }
        for (int i = 0; i < m; i++) pool[i].order = order++;
        qsort(pool, (size_t)m, sizeof *pool, hyp_cmp);
        *n_fin = m < b ? m : b;
        memcpy(fin, pool, sizeof *fin * (size_t)*n_fin);
        int n_next = 0;
        hyp next[MAX_B];
        for (int j = 0; j < n && n_next < b; j++) {
            const int stops = step + 1 == o->max_new_tokens || (o->stop_at_eos && is_eos(cfg, cands[j].token));
            if (!stops) next[n_next++] = cands[j].h;
        }
        memcpy(live, next, sizeof *live * (size_t)n_next);
        n_live = n_next;
        const int generated = step + 1;
        if (n_live == 0) break;
        if (*n_fin == b) {
            if (o->early_stopping == BEAM_EARLY_TRUE) break;
            double len = generated;
            if (o->early_stopping == BEAM_EARLY_NEVER && lp > 0) len = o->max_new_tokens;
            if (o->early_stopping == BEAM_EARLY_HEURISTIC && slip == SLIP_HEURISTIC_AT_MAX) len = o->max_new_tokens;
            if (slip == SLIP_PROMPT_IN_LENGTH) len += n_prompt;
            if (live[0].sum / pow(len, lp) <= fin[b - 1].score) break;
        }
    }
    return passes;
}

/* 1 when beam_run's output is the oracle's; else 0 (why in `why`). */
static int same(const beam_output *out, int passes, const hyp *fin, int n_fin, char *why, size_t size) {
    if (out->n_best != n_fin || out->acc.target_passes != passes) {
        snprintf(why, size, "%d hypotheses in %ld passes, the law's search %d in %d", out->n_best,
                 out->acc.target_passes, n_fin, passes);
        return 0;
    }
    for (int i = 0; i < n_fin; i++) {
        const beam_hypothesis *h = &out->best[i];
        int tokens_equal = h->n == fin[i].n;
        for (int j = 0; tokens_equal && j < h->n; j++) tokens_equal = h->tokens[j] == fin[i].tok[j];
        if (!tokens_equal || fabs(h->score - fin[i].score) > SCORE_TOL ||
            fabs(h->sum_logprobs - fin[i].sum) > SCORE_TOL) {
            snprintf(why, size, "rank %d: score %.12f (sum %.12f), the law's %.12f (%.12f)", i, h->score,
                     h->sum_logprobs, fin[i].score, fin[i].sum);
            return 0;
        }
    }
    return 1;
}

START_TEST(test_beam_follows_its_rules_on_the_law) {
    fixture_model f;
    fixture_model_open(&f, "micro", 31, verify_world_target_config);
    model *m = &f.m;
    const float penalties[] = {1.0f, 0.0f, 2.0f, -0.5f, 0.7f};
    int mismatches[SLIP_COUNT] = {0}, configs = 0, early_ends = 0, eos_finishes = 0;
    for (int p = 0; p < PROMPTS; p++) {
        int prompt[4], n_prompt = 1 + p % 4;
        for (int i = 0; i < n_prompt; i++) prompt[i] = (p * 5 + i * 3 + 1) % VERIFY_WORLD_V;
        sampler_params sp = sampler_defaults();
        enum_table t;
        sp_error err;
        ck_assert_msg(enumerate_build(&t, m, prompt, n_prompt, &sp, BL, &err) == 0, "%s", err.msg);
        for (int s = 0; s < SETTINGS; s++, configs++) {
            const int c = p * SETTINGS + s;
            beam_options o = beam_defaults();
            o.num_beams = o.num_return = 1 + (c * 7 + p) % MAX_B;
            if (s % 3 == 0) o.num_beams = o.num_return = 1 + s % 2; /* narrow beams fill their finished set early */
            o.length_penalty = penalties[(c / 3) % 5];
            o.early_stopping = (beam_early_stopping)(c % 3);
            o.max_new_tokens = 1 + (c / 2) % BL;
            o.stop_at_eos = s % 4 != 3;
            /* one to three EOS ids of eight tokens (K = 2b, 3b, 4b candidates): often enough that b
             * hypotheses finish early and the stopping rules decide */
            m->cfg.num_eos = 1 + (c / 5) % 3;
            m->cfg.eos_token_ids[0] = 7 - p % 3;
            m->cfg.eos_token_ids[1] = p % 4;
            m->cfg.eos_token_ids[2] = 4;
            beam_output out;
            ck_assert_msg(beam_run(m, prompt, n_prompt, &o, &out, &err) == 0, "%s", err.msg);
            for (int slip = 0; slip < SLIP_COUNT; slip++) {
                hyp fin[MAX_B];
                int n_fin;
                const int passes = law_beam(&t, &m->cfg, n_prompt, &o, (beam_slip)slip, fin, &n_fin);
                char why[256];
                const int agree = same(&out, passes, fin, n_fin, why, sizeof why);
                if (slip == SLIP_NONE) {
                    ck_assert_msg(agree, "prompt %d, setting %d (b %d, lp %g, %s, %d new, eos %d): %s", p, s,
                                  o.num_beams, o.length_penalty, beam_early_stopping_name(o.early_stopping),
                                  o.max_new_tokens, o.stop_at_eos ? m->cfg.num_eos : 0, why);
                    early_ends += passes < o.max_new_tokens;
                    for (int i = 0; i < n_fin; i++) eos_finishes += fin[i].n < o.max_new_tokens;
                }
                mismatches[slip] += !agree;
            }
            beam_output_free(&out);
        }
        enumerate_free(&t);
    }
    ck_assert_int_eq(configs, PROMPTS * SETTINGS);
    /* the settings must reach the paths the slips live on (when written: 22 early stops, 79
     * hypotheses ended by EOS) */
    ck_assert_msg(early_ends >= 10, "only %d searches stopped before max_new_tokens", early_ends);
    ck_assert_msg(eos_finishes >= 30, "only %d hypotheses ended by EOS", eos_finishes);
    /* negative controls: each slip must be caught in several settings (when written, of 240:
     * penalty without EOS 82, finished from all K 33, prompt in the length 192, heuristic at
     * max length 7) */
    for (int slip = 1; slip < SLIP_COUNT; slip++)
        ck_assert_msg(mismatches[slip] >= 5, "the comparison missed the slip \"%s\" (%d mismatches in %d settings)",
                      slip_names[slip], mismatches[slip], configs);
    fixture_model_close(&f);
}
END_TEST

Suite *beam_law_suite(void) {
    Suite *s = suite_create("beam_law");
    TCase *tc = harness_tcase("beam_law", 120);
    tcase_add_test(tc, test_beam_follows_its_rules_on_the_law);
    suite_add_tcase(s, tc);
    return s;
}
