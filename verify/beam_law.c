/* beam_law.c — beam.h's rules on an enumerated law (beam_law.h), written as
 * plainly as possible: every step scores every continuation of every live
 * beam from the table, sorts them wholesale and keeps K. Planted slips are
 * marked "SLIP". */
#include "beam_law.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference_target.h"

static const char *const slip_names[BEAM_SLIP_COUNT] = {"none", "penalty without EOS", "finished from all K",
                                                        "prompt in the length", "heuristic at max length"};

const char *beam_slip_name(beam_slip s) { return s >= 0 && s < BEAM_SLIP_COUNT ? slip_names[s] : "?"; }

typedef struct {
    beam_law_hyp h;
    int parent, token;
} law_cand;

/* Best sum first, then the better-ranked parent, then the lower token (beam.c's order). */
static int cand_cmp(const void *pa, const void *pb) {
    const law_cand *a = pa, *b = pb;
    if (a->h.sum_logprobs != b->h.sum_logprobs) return a->h.sum_logprobs > b->h.sum_logprobs ? -1 : 1;
    if (a->parent != b->parent) return a->parent - b->parent;
    return a->token - b->token;
}

static int hyp_cmp(const void *pa, const void *pb) {
    const beam_law_hyp *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->order - b->order;
}

static int is_eos(const model_config *c, int token) {
    for (int i = 0; i < c->num_eos; i++)
        if (c->eos_token_ids[i] == token) return 1;
    return 0;
}

int beam_law_search(const enum_table *t, const model_config *cfg, int n_prompt, const beam_options *o, beam_slip slip,
                    beam_law_hyp *fin, int *n_fin, sp_error *err) {
    const int V = t->V, b = o->num_beams, n_eos = o->stop_at_eos ? cfg->num_eos : 0;
    const int K = (n_eos + 1 > 2 ? n_eos + 1 : 2) * b;
    const double lp = o->length_penalty;
    if (b < 1 || b > BEAM_LAW_MAX_B || o->max_new_tokens < 1 || o->max_new_tokens > BEAM_LAW_MAX_NEW ||
        o->max_new_tokens > t->L || n_eos > 4)
        return sp_fail(err,
                       "beam_law: b = %d, %d new tokens (table of %d), %d EOS ids: beyond b ≤ %d, ≤ %d tokens, ≤ 4 ids",
                       b, o->max_new_tokens, t->L, n_eos, BEAM_LAW_MAX_B, BEAM_LAW_MAX_NEW);
    beam_law_hyp live[BEAM_LAW_MAX_B], next[BEAM_LAW_MAX_B];
    beam_law_hyp pool[BEAM_LAW_MAX_B * 6]; /* the finished list + at most K = 5b stopping candidates */
    law_cand *cands = sp_xcalloc((size_t)b * V, sizeof *cands, "beam law candidates");
    int n_live = 1, passes = 0, order = 0;
    memset(live, 0, sizeof live);
    *n_fin = 0;
    for (int step = 0;; step++) {
        passes++;
        int n = 0;
        for (int i = 0; i < n_live; i++) {
            const double *row = enumerate_raw_logprob(t, live[i].tokens, live[i].n);
            for (int v = 0; v < V; v++) {
                law_cand *c = &cands[n++];
                c->h = live[i];
                c->h.tokens[c->h.n++] = v;
                c->h.sum_logprobs = live[i].sum_logprobs + row[v];
                c->parent = i;
                c->token = v;
            }
        }
        qsort(cands, (size_t)n, sizeof *cands, cand_cmp);
        if (n > K) n = K;
        /* finished: the old list and the stopping candidates among the first b */
        int m = 0;
        for (int i = 0; i < *n_fin; i++) pool[m++] = fin[i];
        const int judged = slip == BEAM_SLIP_FINISH_FROM_ALL_K ? n : (n < b ? n : b); /* SLIP: all K */
        for (int j = 0; j < judged; j++) {
            const int eos = o->stop_at_eos && is_eos(cfg, cands[j].token);
            if (step + 1 == o->max_new_tokens || eos) {
                beam_law_hyp h = cands[j].h;
                double len = h.n;
                if (slip == BEAM_SLIP_PENALTY_WITHOUT_EOS && eos) len -= 1; /* SLIP */
                if (slip == BEAM_SLIP_PROMPT_IN_LENGTH) len += n_prompt;    /* SLIP */
                h.score = h.sum_logprobs / pow(len, lp);
                pool[m++] = h;
            }
        }
        for (int i = 0; i < m; i++) pool[i].order = order++;
        qsort(pool, (size_t)m, sizeof *pool, hyp_cmp);
        *n_fin = m < b ? m : b;
        memcpy(fin, pool, sizeof *fin * (size_t)*n_fin);
        /* live: the first b candidates that go on */
        int n_next = 0;
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
            if (o->early_stopping == BEAM_EARLY_HEURISTIC && slip == BEAM_SLIP_HEURISTIC_AT_MAX)
                len = o->max_new_tokens;                             /* SLIP */
            if (slip == BEAM_SLIP_PROMPT_IN_LENGTH) len += n_prompt; /* SLIP */
            if (live[0].sum_logprobs / pow(len, lp) <= fin[b - 1].score) break;
        }
    }
    free(cands);
    return passes;
}

int beam_law_same(const beam_output *out, int passes, const beam_law_hyp *fin, int n_fin, double tol, char *why,
                  size_t size) {
    if (out->n_best != n_fin || out->acc.target_passes != passes) {
        snprintf(why, size, "%d hypotheses in %ld passes, the law's search %d in %d", out->n_best,
                 out->acc.target_passes, n_fin, passes);
        return 0;
    }
    for (int i = 0; i < n_fin; i++) {
        const beam_hypothesis *h = &out->best[i];
        int tokens_equal = h->n == fin[i].n;
        for (int j = 0; tokens_equal && j < h->n; j++) tokens_equal = h->tokens[j] == fin[i].tokens[j];
        if (!tokens_equal || fabs(h->score - fin[i].score) > tol || fabs(h->sum_logprobs - fin[i].sum_logprobs) > tol) {
            snprintf(why, size, "rank %d: score %.12f (sum %.12f), the law's %.12f (%.12f)%s", i, h->score,
                     h->sum_logprobs, fin[i].score, fin[i].sum_logprobs, tokens_equal ? "" : ", other tokens");
            return 0;
        }
    }
    return 1;
}

/* Both sides add the same double log-probabilities in the same order; only
 * the log-sum-exp is computed twice. */
#define BEAM_LAW_TOL 1e-9

int beam_law_check(model *m, int prompts, int settings, beam_law_report *rep, sp_error *err) {
    static const float penalties[] = {1.0f, 0.0f, 2.0f, -0.5f, 0.7f};
    const int V = m->cfg.vocab_size, L = 3;
    memset(rep, 0, sizeof *rep);
    if (enumerate_cells(V, L) < 0) return sp_fail(err, "beam_law: V = %d is too large to enumerate %d tokens", V, L);
    const int saved_num_eos = m->cfg.num_eos;
    int saved_eos[CONFIG_MAX_EOS];
    memcpy(saved_eos, m->cfg.eos_token_ids, sizeof saved_eos);
    int rc = 0;
    decode_target target; /* reads m->cfg, so the EOS ids set below apply */
    reference_target_build(&target, m);
    for (int p = 0; p < prompts && !rc; p++) {
        int prompt[4], n_prompt = 1 + p % 4;
        for (int i = 0; i < n_prompt; i++) prompt[i] = (p * 5 + i * 3 + 1) % V;
        sampler_params sp = sampler_defaults();
        enum_table t;
        if (enumerate_build(&t, m, prompt, n_prompt, &sp, L, err)) {
            rc = -1;
            break;
        }
        for (int s = 0; s < settings && !rc; s++) {
            const int c = p * settings + s;
            beam_options o = beam_defaults();
            o.num_beams = o.num_return = 1 + (c * 7 + p) % 5;
            if (s % 3 == 0) o.num_beams = o.num_return = 1 + s % 2; /* narrow beams fill their finished set early */
            o.length_penalty = penalties[(c / 3) % 5];
            o.early_stopping = (beam_early_stopping)(c % 3);
            o.max_new_tokens = 1 + (c / 2) % L;
            o.stop_at_eos = s % 4 != 3;
            /* one to three EOS ids (K = 2b, 3b, 4b): often enough that b hypotheses finish early */
            m->cfg.num_eos = 1 + (c / 5) % 3;
            m->cfg.eos_token_ids[0] = (V - 1) - p % 3;
            m->cfg.eos_token_ids[1] = p % 4;
            m->cfg.eos_token_ids[2] = V / 2;
            beam_output out;
            if (beam_run(&target, prompt, n_prompt, &o, &out, err)) {
                rc = -1;
                break;
            }
            rep->settings++;
            for (int slip = 0; slip < BEAM_SLIP_COUNT && !rc; slip++) {
                beam_law_hyp fin[BEAM_LAW_MAX_B];
                int n_fin;
                const int passes = beam_law_search(&t, &m->cfg, n_prompt, &o, (beam_slip)slip, fin, &n_fin, err);
                if (passes < 0) {
                    rc = -1;
                    break;
                }
                char why[200];
                const int agree = beam_law_same(&out, passes, fin, n_fin, BEAM_LAW_TOL, why, sizeof why);
                if (slip == BEAM_SLIP_NONE) {
                    if (!agree && !rep->mismatches)
                        snprintf(rep->first_mismatch, sizeof rep->first_mismatch,
                                 "prompt %d, setting %d (b %d, lp %g, %s, %d new, eos %d): %s", p, s, o.num_beams,
                                 o.length_penalty, beam_early_stopping_name(o.early_stopping), o.max_new_tokens,
                                 o.stop_at_eos ? m->cfg.num_eos : 0, why);
                    rep->mismatches += !agree;
                    rep->early_ends += passes < o.max_new_tokens;
                    for (int i = 0; i < n_fin; i++) rep->eos_finishes += fin[i].n < o.max_new_tokens;
                } else {
                    rep->slip_mismatches[slip] += !agree;
                }
            }
            beam_output_free(&out);
        }
        enumerate_free(&t);
    }
    target.release(&target);
    m->cfg.num_eos = saved_num_eos;
    memcpy(m->cfg.eos_token_ids, saved_eos, sizeof saved_eos);
    return rc;
}
