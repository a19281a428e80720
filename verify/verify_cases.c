/* verify_cases.c — the micro worlds of verify_cases.h, and for each case of the catalogue (verify_catalogue.c) its
 * sampler, law and plan. Each draw is one complete, independent generation: a fresh proposer, the world's prompt,
 * its own seed. */
#include "verify_cases.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_mtp.h"
#include "planted_batch.h"
#include "verify_batch.h"
#include "engine_target.h"
#include "registry.h"
#include "philox.h"
#include "reference_target.h"
#include "spec_law.h"
#include "target_stepper.h"

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

void verify_small_target_config(model_config *c) {
    verify_world_target_config(c);
    c->vocab_size = VERIFY_SMALL_V;
}

void verify_small_draft_config(model_config *c) {
    verify_world_draft_config(c);
    c->vocab_size = VERIFY_SMALL_V;
}

/* Only the config's EOS list changes: randmodel draws the same weights. */
void verify_eos_target_config(model_config *c) {
    verify_small_target_config(c);
    c->num_eos = 1;
    c->eos_token_ids[0] = VERIFY_EOS_TOKEN;
}

void verify_eos_draft_config(model_config *c) {
    verify_small_draft_config(c);
    c->num_eos = 1;
    c->eos_token_ids[0] = VERIFY_EOS_TOKEN;
}

int verify_world_vocab(verify_world_id id) { return id == VERIFY_MAIN ? VERIFY_WORLD_V : VERIFY_SMALL_V; }

const char *verify_world_name(verify_world_id id) {
    return id == VERIFY_SMALL ? "small" : id == VERIFY_EOS ? "eos" : "main";
}

verify_config_fn verify_world_config(verify_world_id id, int draft) {
    if (id == VERIFY_SMALL) return draft ? verify_small_draft_config : verify_small_target_config;
    if (id == VERIFY_EOS) return draft ? verify_eos_draft_config : verify_eos_target_config;
    return draft ? verify_world_draft_config : verify_world_target_config;
}

const char *verify_world_tree(int V) { return V == VERIFY_SMALL_V ? VERIFY_SMALL_TREE : VERIFY_WORLD_TREE; }

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
    if (medusa_tree_parse(&w->tree, verify_world_tree(target->cfg.vocab_size), "the verify tree",
                          &err)) { /* a constant: cannot fail */
        fprintf(stderr, "verify_world_init: %s\n", err.msg);
        abort();
    }
    w->prompt[0] = 1;
    w->prompt[1] = 2;
    w->n_prompt = 2;
    w->eos = target->cfg.num_eos > 0 ? target->cfg.eos_token_ids[0] : -1;
    reference_target_build(&w->target_if, target);
    w->parts.target = &w->target_if;
    w->parts.heads = heads;
    if (draft) {
        reference_draft_stepper_build(&w->draft_stepper, draft);
        w->parts.draft = &w->draft_stepper;
    }
    if (!reference_mtp_stepper_build(&w->mtp_stepper, target, &err)) w->parts.mtp = &w->mtp_stepper;
}

/* Gives back the interfaces (not the models). */
static void release_parts(verify_world *w) {
    if (w->parts.mtp) w->mtp_stepper.release(&w->mtp_stepper);
    if (w->parts.draft) w->draft_stepper.release(&w->draft_stepper);
    if (w->engine && w->draft) w->draft_if.release(&w->draft_if);
    if (w->parts.target) w->target_if.release(&w->target_if);
    memset(&w->parts, 0, sizeof w->parts);
    w->engine = NULL;
    w->laws_on_engine = 0;
}

void verify_world_free(verify_world *w) { release_parts(w); }

/* Whether engine e computes with the weights of its checkpoint as the reference reads them: float32 weights, or
 * bf16 weights from a checkpoint stored in bf16 (no rounding on load). A bf16 engine on a float32 or f16
 * checkpoint rounds its matrices, and its law is no longer the checkpoint's. */
static int engine_weights_as_stored(const engine *e) {
    if (e->opt.f32_weights) return 1;
    const checkpoint *ck = &e->w.ck;
    for (int i = 0; i < ck->n_specs; i++)
        if (ck->tensors[i] && ck->tensors[i]->dtype != DTYPE_BF16 && ck->tensors[i]->ndim == 2) return 0;
    return 1;
}

int verify_world_use_engine(verify_world *w, engine *target, engine *draft, sp_error *err) {
    if (!engine_weights_as_stored(target) || (draft && !engine_weights_as_stored(draft)))
        return sp_fail(err, "verify on the engine needs its weights as stored: float32 weights, or bf16 weights on "
                            "a bf16 checkpoint (the law is the checkpoint's)");
    release_parts(w);
    w->engine = target;
    w->laws_on_engine = !target->opt.f32_weights; /* the exact mode reproduces the reference's floats */
    engine_target_build(&w->target_if, target);
    w->parts.target = &w->target_if;
    w->parts.heads = w->heads;
    if (w->draft && draft) {
        engine_target_build(&w->draft_if, draft);
        if (target_stepper_build(&w->draft_stepper, &w->draft_if, err)) return -1;
        w->parts.draft = &w->draft_stepper;
    }
    if (engine_mtp_stepper_build(&w->mtp_stepper, target, err) == 0) w->parts.mtp = &w->mtp_stepper;
    return 0;
}

int verify_world_enumerate(const verify_world *w, int draft, const int *prompt, int n_prompt,
                           const sampler_params *sp, int L, enum_table *t, sp_error *err) {
    if (!w->laws_on_engine) return enumerate_build(t, draft ? w->draft : w->target, prompt, n_prompt, sp, L, err);
    /* the interfaces are the world's own, used here one walk at a time */
    decode_target *tg = (decode_target *)(draft ? &w->draft_if : &w->target_if);
    return enumerate_build_target(t, tg, prompt, n_prompt, sp, L, err);
}

planted_engine_bug verify_case_engine_control(const verify_case *c) {
    /* typical acceptance: a biased rule's control is the exact rule; at temperature 0 a point mass, which
     * only a token off the greedy path can miss (its acceptance-side control draws one) */
    if (c->L < 3 || c->expect_biased || c->pair != VC_EXACT || c->spec.rule == RULE_TYPICAL || c->generic || c->batch)
        return PLANT_ENGINE_NONE; /* (a batched row keeps its slip of the batch, planted_batch.h, on the engine) */              /* (the rows of --flags keep the controls derived from the method) */
    if (method_has(&c->spec, METHOD_OWN_TREE)) /* on the small world's tree of three siblings a stray sibling's KV moves
                                                * the law too little to be caught (docs/verification.md) */
        return c->world == VERIFY_MAIN ? PLANT_ENGINE_SIBLING_KV : PLANT_ENGINE_NONE;
    return method_has(&c->spec, METHOD_CHAIN) ? PLANT_ENGINE_PARENT_SLOT : PLANT_ENGINE_NONE;
}

void verify_case_control_text(const verify_case *c, int on_engine, char *out, int size) {
    const planted_engine_bug eb = on_engine ? verify_case_engine_control(c) : PLANT_ENGINE_NONE;
    if (eb != PLANT_ENGINE_NONE)
        snprintf(out, (size_t)size, "%s", planted_engine_name(eb));
    else if (c->expect_biased)
        snprintf(out, (size_t)size, "exact rule (must pass)");
    else if (c->batch)
        snprintf(out, (size_t)size, "%s", PLANTED_BATCH_NAME);
    else if (c->control_bug != PLANT_NONE && c->spec.rule == RULE_TYPICAL)
        snprintf(out, (size_t)size, "typical, %s", planted_name(c->control_bug));
    else if (c->control_bug != PLANT_NONE)
        snprintf(out, (size_t)size, "%s", planted_name(c->control_bug));
    else if (c->control_q != PLANT_Q_NONE)
        snprintf(out, (size_t)size, "%s", planted_q_name(c->control_q));
    else if (!method_has(&c->spec, METHOD_PROPOSES))
        snprintf(out, (size_t)size, "sampled at T=%g", c->control_temperature);
    else
        snprintf(out, (size_t)size, "drafts at T=%g, q at T=%g", c->control_temperature, c->spec.sampling.temperature);
}

/* The method of one draw: the case's spec (the world's tree for Medusa), or
 * plain sampling with its parameters; a control swaps in its planted change. */
static method_spec draw_spec(const verify_case_sampler *cs, uint64_t seed) {
    const verify_case *c = cs->c;
    method_spec s = c->spec;
    s.seed = seed;
    if (cs->plain) s.method = &sample_method;
    if (method_has(&s, METHOD_OWN_TREE)) {
        s.tree = c->medusa_tree;
        s.tree_given = 1;
        snprintf(s.tree_origin, sizeof s.tree_origin, "%s", c->tree ? "the case's tree" : "the verify tree");
    }
    if (cs->control && !cs->plain) {
        if (!method_has(&s, METHOD_PROPOSES) && c->control_temperature > 0)
            s.sampling.temperature = c->control_temperature;
        if (c->expect_biased) s.rule = RULE_EXACT; /* the exact rule on the same drafts (i.i.d. children) */
    }
    return s;
}

/* One generation of spec s on parts; with plant_acceptance, the control's
 * acceptance-side bug (or retempered drafts) is planted. */
static int draw_with(verify_case_sampler *cs, const method_spec *s, const method_parts *parts, int plant_acceptance,
                     int *tokens, sp_error *err);

/* One generation of the case: the method, or its control. */
static int case_draw(void *ctx, uint64_t seed, int *tokens, sp_error *err) {
    verify_case_sampler *cs = ctx;
    const verify_case *c = cs->c;
    const method_spec s = draw_spec(cs, seed);
    if (c->batch) return verify_batch_draw(c, cs->w, &s, cs->control, tokens, &cs->rounds, &cs->drafted, err);
    const planted_engine_bug eb =
        cs->control && !cs->plain && cs->w->engine ? verify_case_engine_control(c) : PLANT_ENGINE_NONE;
    method_parts parts = cs->w->parts;
    decode_target planted_target;
    if (eb != PLANT_ENGINE_NONE) { /* the engine-side control: the same method on an engine with a slip */
        planted_engine_target_build(&planted_target, cs->w->engine, eb);
        parts.target = &planted_target;
    }
    const int rc = draw_with(cs, &s, &parts, eb == PLANT_ENGINE_NONE, tokens, err);
    if (eb != PLANT_ENGINE_NONE) planted_target.release(&planted_target);
    return rc;
}

void verify_case_sampler_init(dist_sampler *s, verify_case_sampler *slot, const verify_case *c, const verify_world *w,
                              int control, int plain) {
    slot->c = c;
    slot->w = w;
    slot->control = control;
    slot->plain = plain;
    slot->rounds = slot->drafted = 0;
    s->name = plain ? "reference sample" : c->name;
    s->V = w->target->cfg.vocab_size;
    s->L = c->L;
    if (c->batch) verify_batch_cells(c, w, &s->V, &s->L); /* the reported job's index, then its window */
    s->draw = case_draw;
    s->ctx = slot;
}

int verify_case_exact(const verify_case *c, const verify_world *w, enum_table *t, sp_error *err) {
    if (w->target->cfg.vocab_size != verify_world_vocab(c->world))
        return sp_fail(err, "case \"%s\" runs in the %s world (vocabulary %d); this world's has %d", c->name,
                       verify_world_name(c->world), verify_world_vocab(c->world), w->target->cfg.vocab_size);
    if (c->batch) return verify_batch_exact(c, w, t, err);
    const int *prompt;
    int n_prompt;
    verify_case_prompt(c, w, &prompt, &n_prompt);
    if (verify_world_enumerate(w, 0, prompt, n_prompt, &c->spec.sampling, c->L, t, err)) return -1;
    if (c->spec.stop_at_eos) enumerate_stop_at_eos(t, w->eos);
    if (verify_case_follows_rule_law(c) && verify_case_law(c, w, 0, t->joint, err) != 1) {
        enumerate_free(t);
        return -1;
    }
    return 0;
}

int verify_case_rule_bias(const verify_case *c, const verify_world *w, const enum_table *rule, double *tv,
                          sp_error *err) {
    const int *prompt;
    int n_prompt;
    verify_case_prompt(c, w, &prompt, &n_prompt);
    enum_table target;
    if (verify_world_enumerate(w, 0, prompt, n_prompt, &c->spec.sampling, c->L, &target, err)) return -1;
    if (c->spec.stop_at_eos) enumerate_stop_at_eos(&target, w->eos);
    double sum = 0;
    for (int64_t i = 0; i < target.cells && i < rule->cells; i++) sum += fabs(target.joint[i] - rule->joint[i]);
    enumerate_free(&target);
    *tv = 0.5 * sum;
    return 0;
}

static double tv_distance(const double *a, const double *b, int64_t n) {
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += fabs(a[i] - b[i]);
    return 0.5 * sum;
}

int verify_case_engine_gap(const verify_case *c, const verify_world *w, const enum_table *law, double *tv,
                           double *control_tv, sp_error *err) {
    verify_world reference = *w; /* the same models, enumerated on the reference */
    reference.laws_on_engine = 0;
    enum_table ref, warmer;
    if (verify_case_exact(c, &reference, &ref, err)) return -1;
    if (ref.cells != law->cells) {
        enumerate_free(&ref);
        return sp_fail(err, "case \"%s\": the engine's law has %lld cells, the reference's %lld", c->name,
                       (long long)law->cells, (long long)ref.cells);
    }
    *tv = tv_distance(law->joint, ref.joint, ref.cells);
    *control_tv = -1;
    if (c->spec.sampling.temperature > 0) {
        verify_case hotter = *c;
        hotter.spec.sampling.temperature *= 1.02f;
        if (verify_case_exact(&hotter, &reference, &warmer, err)) {
            enumerate_free(&ref);
            return -1;
        }
        *control_tv = tv_distance(warmer.joint, ref.joint, ref.cells);
        enumerate_free(&warmer);
    }
    enumerate_free(&ref);
    return 0;
}

int verify_case_follows_rule_law(const verify_case *c) {
    return c->spec.rule == RULE_TYPICAL && !c->expect_biased && method_has(&c->spec, METHOD_DRAFT_MODEL) &&
           method_has(&c->spec, METHOD_CHAIN) && c->spec.shape.depth == 0;
}

/* Rows for spec_law from enumerated tables: the target's p, the draft's
 * draw rows and, for the retempered control, its reported q; for a proposer
 * of point masses (prompt lookup), the prompt and the spec its drafts are a
 * function of instead of a draft. */
typedef struct {
    const enum_table *target, *draw;
    float gamma; /* 1: q is the draw row itself */
    const int *prompt;
    int n_prompt;
    const method_spec *spec;
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

/* The drafts of the round that starts after the emitted tokens[0..len): its context is the prompt and them. */
static int law_point(const law_rows *r, const int *tokens, int len, int *drafts) {
    int ctx[VERIFY_CASE_MAX_PROMPT + ENUM_MAX_LENGTH];
    memcpy(ctx, r->prompt, (size_t)r->n_prompt * sizeof(int));
    memcpy(ctx + r->n_prompt, tokens, (size_t)len * sizeof(int));
    return r->spec->method->point_drafts(r->spec, ctx, r->n_prompt + len, drafts);
}

static int law_point_depth(void *user, const int *tokens, int len) {
    int drafts[TREE_SHAPE_MAX_DEPTH];
    return law_point(user, tokens, len, drafts);
}

/* The draft at `depth` of the round: a point mass at the proposer's token. */
static void law_point_row(void *user, const int *tokens, int len, int depth, float *out) {
    const law_rows *r = user;
    int drafts[TREE_SHAPE_MAX_DEPTH];
    const int found = law_point(r, tokens, len - depth + 1, drafts);
    memset(out, 0, (size_t)r->target->V * sizeof(float));
    if (depth <= found) out[drafts[depth - 1]] = 1.0f; /* spec_law asks only for depth ≤ found */
}

int verify_case_law(const verify_case *c, const verify_world *w, int control, double *law, sp_error *err) {
    if (c->batch) { /* the tagged law (verify_batch.h); its control's is not computed */
        enum_table t;
        if (control) return 0;
        if (verify_batch_exact(c, w, &t, err)) return -1;
        memcpy(law, t.joint, (size_t)t.cells * sizeof(double));
        enumerate_free(&t);
        return 1;
    }
    /* the laws computed here: plain sampling, and chains of a draft model or of point masses */
    const int plain = !method_has(&c->spec, METHOD_PROPOSES), point = c->spec.method->point_drafts != NULL;
    const int drafter = method_has(&c->spec, METHOD_DRAFT_MODEL);
    const int chain = method_has(&c->spec, METHOD_CHAIN) && c->spec.shape.depth == 0 && (drafter || point);
    const int typical = c->spec.rule == RULE_TYPICAL && drafter;
    if ((!plain && !chain) || (chain && c->spec.rule != RULE_EXACT && !typical)) return 0;
    if (control && w->engine && verify_case_engine_control(c) != PLANT_ENGINE_NONE)
        return 0; /* a slip in the engine's commit: its law is not computed here */
    if (control && !spec_law_computes(c->control_bug)) return 0; /* nor a slip in the target's */
    const int *prompt;
    int n_prompt;
    verify_case_prompt(c, w, &prompt, &n_prompt);
    sampler_params sp = c->spec.sampling;
    enum_table target, draw;
    if (plain) {
        if (control) sp.temperature = c->control_temperature;
        if (verify_world_enumerate(w, 0, prompt, n_prompt, &sp, c->L, &target, err)) return -1;
        if (c->spec.stop_at_eos) enumerate_stop_at_eos(&target, w->eos);
        memcpy(law, target.joint, (size_t)target.cells * sizeof(double));
        enumerate_free(&target);
        return 1;
    }
    const int retemper = drafter && control && c->control_temperature > 0;
    sampler_params draw_sp = c->spec.sampling;
    if (retemper) draw_sp.temperature = c->control_temperature;
    if (verify_world_enumerate(w, 0, prompt, n_prompt, &sp, c->L, &target, err)) return -1;
    if (drafter && verify_world_enumerate(w, 1, prompt, n_prompt, &draw_sp, c->L, &draw, err)) {
        enumerate_free(&target);
        return -1;
    }
    law_rows rows = {&target,
                     drafter ? &draw : NULL,
                     retemper ? c->control_temperature / c->spec.sampling.temperature : 1.0f,
                     prompt,
                     n_prompt,
                     &c->spec};
    spec_law_spec s = {.V = target.V,
                       .L = c->L,
                       .k = c->spec.k,
                       .round_k = point ? law_point_depth : NULL,
                       .max_tokens = c->max_tokens,
                       .target = law_target,
                       .draw = point ? law_point_row : law_draw, /* a chain's drafts are drawn from q under every rule */
                       .ratio = retemper ? law_ratio : NULL,
                       .user = &rows,
                       .bug = control ? c->control_bug : PLANT_NONE,
                       .stop_at_eos = c->spec.stop_at_eos,
                       .eos = w->eos,
                       .typical = typical,
                       .epsilon = c->spec.typical_epsilon,
                       .delta = c->spec.typical_delta};
    int rc = spec_law(&s, law, err);
    enumerate_free(&target);
    if (drafter) enumerate_free(&draw);
    return rc ? -1 : 1;
}

uint64_t verify_case_seed(const verify_case *c, uint64_t base) { return verify_name_seed(c->name, base); }

verify_plan_target verify_plan_defaults(int family) {
    return (verify_plan_target){.tv = 0.05, .power = 0.99, .alpha = 1e-3, .family = family > 0 ? family : 1};
}

/* × the margin, up to a multiple of 500. */
static int64_t with_margin(int64_t n) { return (int64_t)ceil(VERIFY_PLAN_MARGIN * (double)n / 500.0) * 500; }

/* The control's size: from its computed law, else the generic plan. */
static int plan_control(const verify_case *c, const verify_world *w, const enum_table *exact, int df, verify_plan *p,
                        sp_error *err) {
    const int two = c->pair == VC_VS_SAMPLE;
    double *law = sp_xcalloc((size_t)exact->cells, sizeof *law, "the control's law");
    const int computed = verify_case_law(c, w, 1, law, err);
    int rc = computed < 0 ? -1 : 0;
    int64_t n = 0;
    if (computed > 0) {
        stats_plan plan;
        rc = two ? stats_plan_two(law, exact->joint, (int)exact->cells, VERIFY_CONTROL_P, VERIFY_CONTROL_POWER,
                                  STATS_MIN_EXPECTED, &plan, err)
                 : stats_plan_gof(exact->joint, law, (int)exact->cells, VERIFY_CONTROL_P, VERIFY_CONTROL_POWER,
                                  STATS_MIN_EXPECTED, &plan, err);
        n = plan.n;
        p->control_from_law = 1;
        p->control_w = plan.w;
    } else if (computed == 0 && !p->point_mass) {
        rc = two ? stats_n_two(df, VERIFY_CONTROL_P, VERIFY_CONTROL_POWER, VERIFY_GENERIC_W, &n, err)
                 : stats_n_gof(df, VERIFY_CONTROL_P, VERIFY_CONTROL_POWER, VERIFY_GENERIC_W, &n, err);
    }
    free(law);
    if (rc) return sp_wrap(err, "case \"%s\": planning its control: ", c->name);
    p->control_n = n > 0 ? with_margin(n) : 0;
    if (p->control_n < 1000) p->control_n = 1000;
    return 0;
}

int verify_case_plan(const verify_case *c, const verify_world *w, const enum_table *exact, const verify_plan_target *t,
                     verify_plan *p, sp_error *err) {
    memset(p, 0, sizeof *p);
    if (!(t->tv > 0 && t->tv < 1 && t->power > 0 && t->power < 1 && t->alpha > 0 && t->family >= 1))
        return sp_fail(err, "verify plan: tv %g and power %g must lie in (0, 1), alpha %g above 0, family %d >= 1",
                       t->tv, t->power, t->alpha, t->family);
    for (int64_t i = 0; i < exact->cells; i++) p->reachable += exact->joint[i] > 0;
    p->point_mass = p->reachable == 1;
    const int df = p->reachable - 1;
    if (p->point_mass) { /* every draw on the one sequence, with probability ≤ (1 − tv)^n under any alternative */
        p->n = (int64_t)ceil(log(1 - t->power) / log(1 - t->tv));
    } else {
        const double level = t->alpha / t->family;
        int64_t n;
        int rc = c->pair == VC_VS_SAMPLE ? stats_n_two(df, level, t->power, 2 * t->tv, &n, err)
                                         : stats_n_gof(df, level, t->power, 2 * t->tv, &n, err);
        if (rc) return sp_wrap(err, "case \"%s\": planning its size: ", c->name);
        p->n = with_margin(n);
    }
    if (c->expect_biased) {
        p->control_n = p->n; /* the exact rule on the same drafts: a member of the family */
    } else if (plan_control(c, w, exact, df, p, err)) {
        return -1;
    }
    if (c->max_samples > 0 && (p->n > c->max_samples || p->control_n > c->max_samples))
        return sp_fail(err, "case \"%s\": the plan needs %lld draws (control %lld), above the case's cap of %lld",
                       c->name, (long long)p->n, (long long)p->control_n, (long long)c->max_samples);
    return 0;
}

int verify_case_run(const verify_case *c, const verify_world *w, const enum_table *exact, const verify_options *opt,
                    int64_t control_n, verify_case_outcome *out, sp_error *err) {
    memset(out, 0, sizeof *out);
    if (c->max_tokens < c->L)
        return sp_fail(err, "case \"%s\": max_tokens %d is below the %d tokens compared", c->name, c->max_tokens, c->L);
    if (method_has(&c->spec, METHOD_HEADS) && !w->heads)
        return sp_fail(err, "case \"%s\": the world has no Medusa heads (verify_world_heads)", c->name);
    int V = w->target->cfg.vocab_size, L = c->L;
    if (c->batch) verify_batch_cells(c, w, &V, &L);
    if (exact->L != L || exact->V != V)
        return sp_fail(err, "case \"%s\": the exact law covers L = %d, V = %d; the case needs L = %d, V = %d", c->name,
                       exact->L, exact->V, L, V);
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
        if (!control) out->rounds = sa.rounds, out->drafted = sa.drafted;
    }
    out->p_holm = out->result.test.p_value;
    return 0;
}

void verify_case_outcome_free(verify_case_outcome *o) {
    verify_result_free(&o->result);
    verify_result_free(&o->control);
}

static int draw_with(verify_case_sampler *cs, const method_spec *s, const method_parts *parts, int plant_acceptance,
                     int *tokens, sp_error *err) {
    const verify_case *c = cs->c;
    const int *prompt;
    int n_prompt;
    verify_case_prompt(c, cs->w, &prompt, &n_prompt);
    const planted_bug bug = c->control_bug;
    const int planted = plant_acceptance && cs->control && !cs->plain;
    decode_target slipped; /* the commit one step short */
    method_parts with_slip = *parts;
    if (planted && bug == PLANT_COMMIT_PARENT_AFTER_TWO) {
        planted_target_build(&slipped, parts->target);
        with_slip.target = &slipped;
        parts = &with_slip;
    }
    method_built m;
    if (method_build(&m, s, parts, err)) {
        if (parts == &with_slip) slipped.release(&slipped);
        return -1;
    }
    planted_typical_rule typical = {bug, m.options.typical_epsilon, m.options.typical_delta};
    planted_rule rule = {bug, n_prompt, cs->w->eos}; /* generated token 0 sits at position n_prompt */
    proposer retempered;
    int rc = 0;
    if (planted && m.proposer) {
        if (bug != PLANT_NONE) {
            m.options.custom_accept = c->spec.rule == RULE_TYPICAL ? planted_typical_fn : planted_accept_fn;
            m.options.accept_user = c->spec.rule == RULE_TYPICAL ? (void *)&typical : (void *)&rule;
        } else if (c->control_q != PLANT_Q_NONE) { /* the drafts as drawn, q rows of another kind reported */
            if ((rc = planted_q_build(&retempered, m.proposer, c->control_q, err))) {
                method_release(&m);
                if (parts == &with_slip) slipped.release(&slipped);
                return -1;
            }
            m.storage = retempered;
        } else if (!c->expect_biased && c->control_temperature > 0) {
            /* drafts drawn at the control temperature, q reported at the method's */
            if ((rc = planted_retemper_build(&retempered, m.proposer, c->control_temperature, err))) {
                method_release(&m);
                if (parts == &with_slip) slipped.release(&slipped);
                return -1;
            }
            m.storage = retempered;
        }
    }
    decode_output out;
    rc = decode_run(parts->target, m.proposer, prompt, n_prompt, &m.options, &out, err);
    if (!rc) {
        cs->rounds += out.acc.target_passes;
        cs->drafted += out.acc.proposed[1];
    }
    method_release(&m);
    if (parts == &with_slip) slipped.release(&slipped);
    if (rc) return -1;
    if (s->stop_at_eos && out.n > 0 && out.n < c->L && out.tokens[out.n - 1] == cs->w->eos) {
        for (int i = out.n; i < c->L; i++) tokens[i] = cs->w->eos; /* the window after the stop */
        memcpy(tokens, out.tokens, (size_t)out.n * sizeof(int));
        decode_output_free(&out);
        return 0;
    }
    if (out.n < c->L) {
        decode_output_free(&out);
        return sp_fail(err, "case \"%s\": the run emitted %d tokens, the check compares %d", c->name, out.n, c->L);
    }
    memcpy(tokens, out.tokens, (size_t)c->L * sizeof(int));
    decode_output_free(&out);
    return 0;
}
