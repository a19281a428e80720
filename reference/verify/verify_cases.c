/* verify_cases.c — the catalogue of verify_cases.h and the samplers that
 * run each case through decode_run. Each draw is one complete, independent
 * generation: a fresh proposer, the world's prompt, its own seed. */
#include "verify_cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtp.h"
#include "philox.h"
#include "spec_law.h"
#include "speculative.h"

void verify_world_target_config(model_config *c) {
    c->vocab_size = VERIFY_WORLD_V;
    c->num_eos = 0; /* the enumeration never stops: neither may the samplers */
    c->hidden_size = 16;
    c->intermediate_size = 32;
}

void verify_world_draft_config(model_config *c) {
    c->vocab_size = VERIFY_WORLD_V;
    c->num_eos = 0;
}

int verify_world_heads(medusa_heads *h, const model *target, uint64_t seed, sp_error *err) {
    if (medusa_build(h, VERIFY_WORLD_HEADS, 1, target->cfg.hidden_size, target->cfg.vocab_size, 1, err)) return -1;
    for (size_t k = 0; k < h->arena_floats; k++) h->arena[k] = 0.5f * (2 * philox_uniform(seed, 7, k, 0) - 1);
    return 0;
}

void verify_world_init(verify_world *w, model *target, model *draft, const medusa_heads *heads) {
    memset(w, 0, sizeof *w);
    w->target = target;
    w->draft = draft;
    w->heads = heads;
    sp_error err;
    if (medusa_tree_parse(&w->tree, VERIFY_WORLD_TREE, "the verify tree", &err)) { /* a constant: cannot fail */
        fprintf(stderr, "verify_world_init: %s\n", err.msg);
        abort();
    }
    w->prompt[0] = 1;
    w->prompt[1] = 2;
    w->n_prompt = 2;
}

/* Sampling settings of the catalogue. */
/* clang-format off */
#define PLAIN(T) {.temperature = (T), .top_k = 0, .top_p = 1.0f, .min_p = 0.0f}
#define TOPK(T, K) {.temperature = (T), .top_k = (K), .top_p = 1.0f, .min_p = 0.0f}
#define TOPP(T, P) {.temperature = (T), .top_k = 0, .top_p = (P), .min_p = 0.0f}
/* clang-format on */

/* Field order: name, primary, method, kind, pair, k (Medusa: the tree's
 * depth), L, max_tokens, mtp_sample, sampling, control bug, control
 * temperature, rule, expect_biased, max_samples, Medusa children. The
 * planned sizes are in docs/verification.md. */
static const verify_case catalogue[] = {
    /* per method: L = 2 (64 cells), so 200 000 draws bound the TV below 0.02 */
    {"sample T=0.8", 1, "sample", VC_SAMPLE, VC_EXACT, 0, 2, 2, 0, PLAIN(0.8f), PLANT_NONE, 1.2f, RULE_EXACT, 0, 0,
     CHILDREN_IID},
    {"spec k=3 T=0.8", 1, "spec", VC_SPEC, VC_EXACT, 3, 2, 4, 0, PLAIN(0.8f), PLANT_NONE, 0.4f, RULE_EXACT, 0, 0,
     CHILDREN_IID},
    {"spec k=3 T=0.8 vs sample", 1, "spec", VC_SPEC, VC_VS_SAMPLE, 3, 2, 4, 0, PLAIN(0.8f), PLANT_NONE, 0.4f,
     RULE_EXACT, 0, 100000, CHILDREN_IID},
    {"mtp argmax k=3 T=0.8", 1, "mtp", VC_MTP, VC_EXACT, 3, 2, 4, 0, PLAIN(0.8f), PLANT_RESIDUAL_IS_P, 0.0f, RULE_EXACT,
     0, 0, CHILDREN_IID},
    {"mtp sampled k=3 T=0.8", 1, "mtp", VC_MTP, VC_EXACT, 3, 2, 4, 1, PLAIN(0.8f), PLANT_NONE, 0.4f, RULE_EXACT, 0, 0,
     CHILDREN_IID},
    /* Medusa's typical acceptance on MTP drafts: biased above temperature 0 (found at any size: 20 000 draws),
     * exact at 0 (a point mass, so 20 000 draws bound the TV; its control draws the next token one position
     * early). The two-sample row is capped too: its TV bound is reported, not required. */
    {"typical mtp k=3 T=0.8", 1, "typical", VC_MTP, VC_EXACT, 3, 2, 4, 0, PLAIN(0.8f), PLANT_NONE, 0.0f, RULE_TYPICAL,
     1, 20000, CHILDREN_IID},
    {"typical mtp k=3 T=0", 1, "typical", VC_MTP, VC_EXACT, 3, 2, 4, 0, PLAIN(0.0f), PLANT_BONUS_FROM_PARENT, 0.0f,
     RULE_TYPICAL, 0, 20000, CHILDREN_IID},
    /* Medusa: three heads over a 12-node tree, children i.i.d. or without replacement (exact rule), or top
     * ranks (typical acceptance, biased above temperature 0; its control is the exact rule on i.i.d. drafts) */
    {"medusa iid T=0.8", 1, "medusa", VC_MEDUSA, VC_EXACT, 3, 2, 4, 0, PLAIN(0.8f), PLANT_NONE, 0.4f, RULE_EXACT, 0, 0,
     CHILDREN_IID},
    {"medusa without replacement T=0.8", 1, "medusa", VC_MEDUSA, VC_EXACT, 3, 2, 4, 0, PLAIN(0.8f),
     PLANT_NO_REPLACEMENT_AS_IID, 0.0f, RULE_EXACT, 0, 0, CHILDREN_NO_REPLACEMENT},
    {"typical medusa T=0.8", 1, "typical", VC_MEDUSA, VC_EXACT, 3, 2, 4, 0, PLAIN(0.8f), PLANT_NONE, 0.0f, RULE_TYPICAL,
     1, 20000, CHILDREN_TOP_RANKS},
    {"typical medusa T=0", 1, "typical", VC_MEDUSA, VC_EXACT, 3, 2, 4, 0, PLAIN(0.0f), PLANT_BONUS_FROM_PARENT, 0.0f,
     RULE_TYPICAL, 0, 20000, CHILDREN_TOP_RANKS},
    /* the grid: every k = 1…4, L = 2 and 3, each cut, a budget that cuts the proposal short */
    {"sample T=1", 0, "sample", VC_SAMPLE, VC_EXACT, 0, 3, 3, 0, PLAIN(1.0f), PLANT_NONE, 1.5f, RULE_EXACT, 0, 0,
     CHILDREN_IID},
    {"sample T=0.7 top-k 4", 0, "sample", VC_SAMPLE, VC_EXACT, 0, 3, 3, 0, TOPK(0.7f, 4), PLANT_NONE, 1.05f, RULE_EXACT,
     0, 0, CHILDREN_IID},
    {"spec k=1 T=1", 0, "spec", VC_SPEC, VC_EXACT, 1, 2, 2, 0, PLAIN(1.0f), PLANT_NONE, 0.5f, RULE_EXACT, 0, 0,
     CHILDREN_IID},
    {"spec k=2 T=1", 0, "spec", VC_SPEC, VC_EXACT, 2, 3, 3, 0, PLAIN(1.0f), PLANT_NONE, 0.5f, RULE_EXACT, 0, 0,
     CHILDREN_IID},
    {"spec k=3 T=0.8 top-k 5", 0, "spec", VC_SPEC, VC_EXACT, 3, 3, 4, 0, TOPK(0.8f, 5), PLANT_NONE, 0.4f, RULE_EXACT, 0,
     0, CHILDREN_IID},
    {"spec k=4 T=1.2 top-p 0.9", 0, "spec", VC_SPEC, VC_EXACT, 4, 3, 5, 0, TOPP(1.2f, 0.9f), PLANT_NONE, 0.6f,
     RULE_EXACT, 0, 0, CHILDREN_IID},
    {"spec k=4 T=0.6 budget 2", 0, "spec", VC_SPEC, VC_EXACT, 4, 2, 2, 0, PLAIN(0.6f), PLANT_NONE, 0.3f, RULE_EXACT, 0,
     0, CHILDREN_IID},
    {"spec k=2 T=1 vs sample", 0, "spec", VC_SPEC, VC_VS_SAMPLE, 2, 3, 3, 0, PLAIN(1.0f), PLANT_NONE, 0.5f, RULE_EXACT,
     0, 0, CHILDREN_IID},
    {"mtp argmax k=2 T=1", 0, "mtp", VC_MTP, VC_EXACT, 2, 3, 3, 0, PLAIN(1.0f), PLANT_RESIDUAL_IS_P, 0.0f, RULE_EXACT,
     0, 0, CHILDREN_IID},
    {"mtp argmax k=4 T=0.8 top-p 0.9", 0, "mtp", VC_MTP, VC_EXACT, 4, 3, 5, 0, TOPP(0.8f, 0.9f), PLANT_RESIDUAL_IS_P,
     0.0f, RULE_EXACT, 0, 0, CHILDREN_IID},
    {"mtp sampled k=3 T=1", 0, "mtp", VC_MTP, VC_EXACT, 3, 3, 4, 1, PLAIN(1.0f), PLANT_NONE, 0.5f, RULE_EXACT, 0, 0,
     CHILDREN_IID},
    {"mtp sampled k=2 T=0.7 top-k 5", 0, "mtp", VC_MTP, VC_EXACT, 2, 3, 3, 1, TOPK(0.7f, 5), PLANT_NONE, 0.35f,
     RULE_EXACT, 0, 0, CHILDREN_IID},
    {"typical spec k=2 T=1", 0, "typical", VC_SPEC, VC_EXACT, 2, 3, 3, 0, PLAIN(1.0f), PLANT_NONE, 0.0f, RULE_TYPICAL,
     1, 0, CHILDREN_IID},
    {"typical mtp k=4 T=0.7 top-k 5", 0, "typical", VC_MTP, VC_EXACT, 4, 3, 5, 0, TOPK(0.7f, 5), PLANT_NONE, 0.0f,
     RULE_TYPICAL, 1, 0, CHILDREN_IID},
    {"medusa iid T=1 top-k 5", 0, "medusa", VC_MEDUSA, VC_EXACT, 3, 3, 4, 0, TOPK(1.0f, 5), PLANT_RESIDUAL_UNNORMALISED,
     0.0f, RULE_EXACT, 0, 0, CHILDREN_IID},
    {"medusa without replacement T=1.2 top-p 0.9", 0, "medusa", VC_MEDUSA, VC_EXACT, 3, 3, 4, 0, TOPP(1.2f, 0.9f),
     PLANT_NONE, 0.6f, RULE_EXACT, 0, 0, CHILDREN_NO_REPLACEMENT},
    {"typical medusa T=1", 0, "typical", VC_MEDUSA, VC_EXACT, 3, 3, 4, 0, PLAIN(1.0f), PLANT_NONE, 0.0f, RULE_TYPICAL,
     1, 0, CHILDREN_TOP_RANKS},
    {NULL, 0, NULL, VC_SAMPLE, VC_EXACT, 0, 0, 0, 0, PLAIN(1.0f), PLANT_NONE, 0.0f, RULE_EXACT, 0, 0, CHILDREN_IID},
};

const verify_case *verify_cases(void) { return catalogue; }

int verify_case_count(void) { return (int)(sizeof catalogue / sizeof catalogue[0]) - 1; }

void verify_case_control_text(const verify_case *c, char *out, int size) {
    if (c->expect_biased)
        snprintf(out, (size_t)size, "exact rule (must pass)");
    else if (c->control_bug != PLANT_NONE && c->rule == RULE_TYPICAL)
        snprintf(out, (size_t)size, "typical, %s", planted_name(c->control_bug));
    else if (c->control_bug != PLANT_NONE)
        snprintf(out, (size_t)size, "%s", planted_name(c->control_bug));
    else if (c->kind == VC_SAMPLE)
        snprintf(out, (size_t)size, "sampled at T=%g", c->control_temperature);
    else
        snprintf(out, (size_t)size, "drafts at T=%g, q at T=%g", c->control_temperature, c->sp.temperature);
}

static int build_proposer(const verify_case *c, const verify_world *w, int control, uint64_t seed, proposer *prop,
                          sp_error *err) {
    sampler_params draw = c->sp;
    const int retemper = control && !c->expect_biased && c->control_temperature > 0;
    if (retemper) draw.temperature = c->control_temperature;
    proposer inner;
    int rc;
    if (c->kind == VC_SPEC) {
        rc = spec_proposer_build(&inner, w->draft, w->target, c->k, &draw, seed, err);
    } else if (c->kind == VC_MEDUSA) {
        /* a biased top-ranks row's control is the exact rule, which needs drawn children */
        children_kind kind = control && c->expect_biased ? CHILDREN_IID : c->children;
        rc = medusa_proposer_build(&inner, w->heads, w->target, &w->tree, kind, &draw, seed, err);
    } else {
        rc = mtp_proposer_build(&inner, w->target, c->k, c->mtp_sample, &draw, seed, err);
    }
    if (rc) return -1;
    if (!retemper) {
        *prop = inner;
        return 0;
    }
    if (planted_retemper_build(prop, &inner, c->control_temperature, c->sp.temperature, err)) {
        inner.release(&inner);
        return -1;
    }
    return 0;
}

static int case_draw(void *ctx, uint64_t seed, int *tokens, sp_error *err) {
    const verify_case_sampler *cs = ctx;
    const verify_case *c = cs->c;
    const verify_world *w = cs->w;
    decode_options o = decode_defaults();
    o.sampling = c->sp;
    o.seed = seed;
    o.max_tokens = c->max_tokens;
    o.stop_at_eos = 0;
    planted_bug bug = c->control_bug;
    planted_typical_rule typical = {bug, o.typical_epsilon, o.typical_delta};
    proposer prop, *pp = NULL;
    if (cs->plain || c->kind == VC_SAMPLE) {
        if (!cs->plain && cs->control && c->control_temperature > 0) o.sampling.temperature = c->control_temperature;
    } else {
        /* a biased rule's control is the exact rule on the same drafts */
        o.rule = cs->control && c->expect_biased ? RULE_EXACT : c->rule;
        if (build_proposer(c, w, cs->control, seed, &prop, err)) return -1;
        pp = &prop;
        if (cs->control && bug != PLANT_NONE) {
            o.custom_accept = c->rule == RULE_TYPICAL ? planted_typical_fn : planted_accept_fn;
            o.accept_user = c->rule == RULE_TYPICAL ? (void *)&typical : (void *)&bug;
        }
    }
    decode_output out;
    int rc = decode_run(w->target, pp, c->method, pp ? c->k : 0, w->prompt, w->n_prompt, &o, &out, err);
    if (pp) pp->release(pp);
    if (rc) return -1;
    if (out.n < c->L) {
        decode_output_free(&out);
        return sp_fail(err, "case \"%s\": the run emitted %d tokens, the check compares %d", c->name, out.n, c->L);
    }
    memcpy(tokens, out.tokens, (size_t)c->L * sizeof(int));
    decode_output_free(&out);
    return 0;
}

void verify_case_sampler_init(dist_sampler *s, verify_case_sampler *slot, const verify_case *c, const verify_world *w,
                              int control, int plain) {
    slot->c = c;
    slot->w = w;
    slot->control = control;
    slot->plain = plain;
    s->name = plain ? "reference sample" : c->name;
    s->V = w->target->cfg.vocab_size;
    s->L = c->L;
    s->draw = case_draw;
    s->ctx = slot;
}

int verify_case_exact(const verify_case *c, const verify_world *w, enum_table *t, sp_error *err) {
    return enumerate_build(t, w->target, w->prompt, w->n_prompt, &c->sp, c->L, err);
}

/* Rows for spec_law from enumerated tables: the target's p, the draft's
 * draw rows and, for the retempered control, its reported q. */
typedef struct {
    const enum_table *target, *draw;
    float gamma; /* 1: q is the draw row itself */
} law_rows;

static void law_target(void *user, const int *tokens, int len, float *out) {
    const law_rows *r = user;
    memcpy(out, enumerate_cond(r->target, tokens, len), (size_t)r->target->V * sizeof(float));
}

static void law_draw(void *user, const int *tokens, int len, int depth, float *out) {
    const law_rows *r = user;
    (void)depth; /* a draft model's rows depend on the prefix alone */
    memcpy(out, enumerate_cond(r->draw, tokens, len), (size_t)r->draw->V * sizeof(float));
}

static void law_ratio(void *user, const int *tokens, int len, int depth, float *out) {
    const law_rows *r = user;
    (void)depth;
    planted_retemper_row(enumerate_cond(r->draw, tokens, len), r->gamma, out, r->draw->V);
}

int verify_case_law(const verify_case *c, const verify_world *w, int control, double *law, sp_error *err) {
    if (c->kind == VC_MTP || c->kind == VC_MEDUSA || c->rule != RULE_EXACT) return 0;
    sampler_params sp = c->sp;
    enum_table target, draw;
    if (c->kind == VC_SAMPLE) {
        if (control) sp.temperature = c->control_temperature;
        if (enumerate_build(&target, w->target, w->prompt, w->n_prompt, &sp, c->L, err)) return -1;
        memcpy(law, target.joint, (size_t)target.cells * sizeof(double));
        enumerate_free(&target);
        return 1;
    }
    const int retemper = control && c->control_temperature > 0;
    sampler_params draw_sp = c->sp;
    if (retemper) draw_sp.temperature = c->control_temperature;
    if (enumerate_build(&target, w->target, w->prompt, w->n_prompt, &sp, c->L, err)) return -1;
    if (enumerate_build(&draw, w->draft, w->prompt, w->n_prompt, &draw_sp, c->L, err)) {
        enumerate_free(&target);
        return -1;
    }
    law_rows rows = {&target, &draw, retemper ? c->control_temperature / c->sp.temperature : 1.0f};
    spec_law_spec s = {.V = target.V,
                       .L = c->L,
                       .k = c->k,
                       .max_tokens = c->max_tokens,
                       .target = law_target,
                       .draw = law_draw,
                       .ratio = retemper ? law_ratio : NULL,
                       .user = &rows,
                       .bug = control ? c->control_bug : PLANT_NONE};
    int rc = spec_law(&s, law, err);
    enumerate_free(&target);
    enumerate_free(&draw);
    return rc ? -1 : 1;
}

int verify_case_run(const verify_case *c, const verify_world *w, const enum_table *exact, const verify_options *opt,
                    int64_t control_n, verify_case_outcome *out, sp_error *err) {
    memset(out, 0, sizeof *out);
    if (c->max_tokens < c->L)
        return sp_fail(err, "case \"%s\": max_tokens %d is below the %d tokens compared", c->name, c->max_tokens, c->L);
    if (c->kind == VC_MEDUSA && !w->heads)
        return sp_fail(err, "case \"%s\": the world has no Medusa heads (verify_world_heads)", c->name);
    if (exact->L != c->L || exact->V != w->target->cfg.vocab_size)
        return sp_fail(err, "case \"%s\": the exact law covers L = %d, V = %d; the case needs L = %d, V = %d", c->name,
                       exact->L, exact->V, c->L, w->target->cfg.vocab_size);
    verify_options mopt = *opt, copt = *opt;
    copt.seed = opt->seed + 1;
    if (control_n > 0) copt.n = control_n;
    if (c->max_samples > 0 && mopt.n > c->max_samples) mopt.n = c->max_samples;
    if (c->max_samples > 0 && copt.n > c->max_samples) copt.n = c->max_samples;
    for (int control = 0; control <= 1; control++) {
        verify_case_sampler sa, sb;
        dist_sampler a, b;
        verify_case_sampler_init(&a, &sa, c, w, control, 0);
        verify_result *r = control ? &out->control : &out->result;
        const verify_options *o = control ? &copt : &mopt;
        int rc;
        if (c->pair == VC_VS_SAMPLE) {
            verify_case_sampler_init(&b, &sb, c, w, 0, 1);
            rc = verify_same_distribution(&a, &b, exact->joint, o, r, err);
        } else {
            rc = verify_against_exact(&a, exact->joint, o, r, err);
        }
        if (rc) {
            verify_case_outcome_free(out);
            return sp_wrap(err, "case \"%s\"%s: ", c->name, control ? " (negative control)" : "");
        }
    }
    out->p_holm = out->result.test.p_value;
    return 0;
}

void verify_case_outcome_free(verify_case_outcome *o) {
    verify_result_free(&o->result);
    verify_result_free(&o->control);
}
