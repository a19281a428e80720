/* verify_cases.h — the catalogue of distribution checks that `specula verify` runs, and tests/stat at test size:
 * for each method and setting, a sampler over the decode loop, the law it must follow, and a planted bug
 * (planted.h) the same check must reject. The caller brings the models (a verify_world). Micro models only:
 * the law is enumerated over V^L sequences (enumerate.h). */
#ifndef SPECULA_VERIFY_CASES_H
#define SPECULA_VERIFY_CASES_H

#include "decode.h"
#include "enumerate.h"
#include "medusa.h"
#include "method.h"
#include "model.h"
#include "engine.h"
#include "planted.h"
#include "planted_engine.h"
#include "stepper.h"
#include "target.h"
#include "verify_dist.h"

/* The micro worlds the cases run on: the "micro" target (with its MTP module) and the "micro-draft" draft, from
 * randmodel's presets with the adjustments below. The target's width is halved to make draws cheap (the cost is
 * in docs/verification.md). Only the EOS world has an EOS token. The main world has vocabulary 8. The long-window
 * world has vocabulary 3: a window of L = k + 2 tokens (the k drafts, the bonus and the first token of the next
 * round; up to L = 6 for k = 4) then has at most 3^6 = 729 sequences, not 262 144, so the law stays enumerable
 * and the planned sizes stay in the tens of thousands. */
#define VERIFY_WORLD_V 8
#define VERIFY_SMALL_V 3
/* The EOS world: the small world's models (the same weights) with token
 * VERIFY_EOS_TOKEN as EOS, and runs that stop on it. A window that the run
 * ends early is padded with EOS, in the samplers and in the law
 * (enumerate_stop_at_eos, spec_law's EOS stop), so an EOS is a cell like
 * any other. */
#define VERIFY_EOS_TOKEN 2
typedef enum { VERIFY_MAIN = 0, VERIFY_SMALL, VERIFY_EOS, VERIFY_WORLDS } verify_world_id;
int verify_world_vocab(verify_world_id id);
const char *verify_world_name(verify_world_id id); /* "main", "small", "eos" */
void verify_world_target_config(model_config *c);  /* applied to randmodel's "micro" preset */
void verify_world_draft_config(model_config *c);   /* applied to "micro-draft" */
void verify_small_target_config(model_config *c);  /* the same with vocabulary VERIFY_SMALL_V */
void verify_small_draft_config(model_config *c);
void verify_eos_target_config(model_config *c); /* the small world's, with EOS VERIFY_EOS_TOKEN */
void verify_eos_draft_config(model_config *c);
/* The adjustment of world id's target (draft = 0) or draft (draft = 1). */
typedef void (*verify_config_fn)(model_config *c);
verify_config_fn verify_world_config(verify_world_id id, int draft);

typedef struct {
    model *target;             /* [V] with an MTP module */
    model *draft;              /* the same V */
    const medusa_heads *heads; /* VERIFY_WORLD_HEADS heads on the target */
    medusa_tree tree;          /* VERIFY_WORLD_TREE */
    int prompt[4];
    int n_prompt; /* 2: MTP and Medusa have a hidden state to draft from in the first round */
    /* the models behind the decoding layer's interfaces: the reference's
     * (reference_target.h), or the CPU engine's (verify_world_use_engine) */
    decode_target target_if, draft_if;
    stepper draft_stepper, mtp_stepper;
    method_parts parts;
    engine *engine; /* not NULL: the interfaces run on this engine (its draft on draft_if) */
    int laws_on_engine; /* 1: the laws are enumerated through the interfaces (the engine in its default mode,
                         * whose floats are its own), not on the models (verify_world_enumerate) */
    int eos;        /* the target's first EOS id, −1 when it has none */
} verify_world;

/* The Medusa heads of the world: 3 heads of one ResBlock with their own
 * projections, every weight uniform in ±0.5 from Philox stream `seed`. */
#define VERIFY_WORLD_HEADS 3
int verify_world_heads(medusa_heads *h, const model *target, uint64_t seed, sp_error *err);
/* The trees: every rank under the root (so the exact rule runs up to V
 * rounds of rejection among siblings, and at temperature 0 the target's
 * choice is always among the top-ranked candidates), two grandchildren
 * under the first, one under the second, and one node at depth 3 — over
 * the 8 tokens of the main world, and over the 3 of the long-window one. */
#define VERIFY_WORLD_TREE "[[0], [1], [2], [3], [4], [5], [6], [7], [0, 0], [0, 1], [1, 0], [0, 0, 0]]"
#define VERIFY_SMALL_TREE "[[0], [1], [2], [0, 0], [0, 1], [1, 0], [0, 0, 0]]"
/* The tree of the world whose vocabulary is V. */
const char *verify_world_tree(int V);

/* Fills the prompt and the tree and builds the interfaces over the models
 * (which stay the caller's; heads and draft may be NULL when no case needs
 * them). verify_world_free releases what init built. */
void verify_world_init(verify_world *w, model *target, model *draft, const medusa_heads *heads);
void verify_world_free(verify_world *w);
/* Runs the world's methods on the CPU engine instead: `target` and `draft` opened on the same checkpoints as the
 * world's models, with float32 weights (the exact cross-test mode), or in the default mode with bf16 weights on
 * checkpoints stored in bf16 — either way the very weights the models hold. In the exact mode the engine
 * reproduces the reference's floats and the laws are enumerated on the models; in the default mode its sums run
 * in another order and width, so the laws are enumerated through the engine itself (laws_on_engine): each row
 * then tests speculation on the engine against the engine's own law, exactly, and verify_case_engine_gap holds
 * that law to the reference's. The models stay: the heads are checked against them. */
int verify_world_use_engine(verify_world *w, engine *target, engine *draft, sp_error *err);

/* The enumerated law (enumerate.h) of the world's target (draft = 0) or draft (draft = 1): on the models, or
 * through the engine's interfaces when w->laws_on_engine. */
int verify_world_enumerate(const verify_world *w, int draft, const int *prompt, int n_prompt,
                           const sampler_params *sp, int L, enum_table *t, sp_error *err);

#define VERIFY_CASE_MAX_PROMPT 8

typedef enum {
    VC_EXACT = 0, /* against the enumerated law ("reference vs exact") */
    VC_VS_SAMPLE  /* two samples: the method against plain sampling ("reference vs reference") */
} verify_pair;

typedef struct {
    const char *name;   /* unique, e.g. "spec k=2 T=1" */
    int primary;        /* 1: one of the rows `specula verify` runs by default; 0: the wider grid of
                         * tests/stat (--all) */
    const char *method; /* "sample", "spec", "spec-tree", "mtp", "mtp-tree", "medusa", "typical", "lookup" (what
                         * --method selects) */
    const char *flags;  /* the method as `specula generate` flags, e.g. "--method mtp --k 3 --temperature 0.8
                         * --mtp-argmax"; Medusa runs over the world's tree */
    verify_pair pair;
    int L;          /* tokens compared */
    int max_tokens; /* the decode budget (≥ L); above L the later tokens are drawn and ignored */
    /* The negative control: at most one of the two is set (neither: see expect_biased). */
    planted_bug control_bug;   /* an acceptance rule with this bug */
    float control_temperature; /* > 0: spec/MTP/Medusa: drafts drawn at this temperature while q is reported at
                                * the method's temperature; sample: the sampler runs at this temperature */
    int expect_biased;         /* 1: the rule is known not to be exact here; the check must reject it,
                                * and its control is the exact rule on the same drafts (Medusa's children
                                * drawn i.i.d.), which must pass */
    int64_t max_samples;       /* > 0: draws capped here (a deterministic law needs few) */
    const char *prompt;        /* NULL: the world's prompt; else the case's own as token ids, e.g. "3 5 1 3 5"
                                * (prompt lookup needs a context with repeats to propose from) */
    verify_world_id world;     /* the world it runs in (VERIFY_MAIN unless given); in VERIFY_EOS the run
                                * stops at EOS */
    const char *tree;          /* Medusa: NULL: the world's tree; else the case's own, as rank paths */
    int coverage;              /* 1: tests/stat leaves the row out, to keep make test's time: the rows of
                                * --all for prompts, shapes, long windows and cut combinations, the EOS
                                * tree (the EOS chain runs the same stop) and the late bonus (whose law
                                * test_spec_law computes) */
    int batch;                 /* 1: VERIFY_BATCH_JOBS sequences decoded together, each after its own prompt
                                * (verify_batch.h); the law is the mixture of theirs, and the control (control_bug
                                * PLANT_NONE) the slip of planted_batch.h: the third job verified against the
                                * second's distributions */
    planted_q control_q;       /* a control of `specula verify --flags`: the method's drafts reported under other q
                                * rows (planted.h) */
    int generic;               /* 1: a control derived from the method, not written for it: when it is not
                                * rejected the row says the test has no power against that bug, and passes */
    /* parsed from flags (and prompt) when the catalogue is first read */
    method_spec spec; /* max_tokens = the budget above, EOS off */
    int k;            /* drafts per round: the spec's k, the world tree's depth for Medusa, 0 for sampling */
    int prompt_ids[VERIFY_CASE_MAX_PROMPT];
    int n_prompt_ids;        /* 0: the world's prompt */
    medusa_tree medusa_tree; /* Medusa: the tree it runs over (the world's or its own) */
} verify_case;

/* The rows `specula verify --flags FLAGS` runs for any method given in generate's flags (a built-in or a plug-in):
 * the method in the long-window world, L = its depth + 2 (at most 7), against the exact law, three times, each
 * beside one of the controls derived from it (its q rows of another depth, its q rows reported uniform, the bonus
 * drawn from the leaf's parent). A method that may propose nothing runs after a prompt with repeats. Fills up to
 * max cases (the last one's name NULL) and returns how many, or −1 with a message (flags that do not parse, or
 * a method verify cannot test this way: beam search, plain decoding). */
#define VERIFY_FLAGS_CASES 3
int verify_cases_for_flags(const char *flags, verify_case *out, int max, sp_error *err);

/* The prompt case c runs after: its own, else the world's. */
void verify_case_prompt(const verify_case *c, const verify_world *w, const int **ids, int *n);

/* The catalogue, terminated by a NULL name; every entry's flags parsed (a
 * catalogue that does not parse aborts with the message: it is a constant). */
const verify_case *verify_cases(void);
int verify_case_count(void);
/* The engine-side bug of case c's negative control on the engine, one a window of c->L tokens can see: a wrong
 * DeltaNet slot after a partial acceptance for chains and draft trees, a sibling's KV for the main world's Medusa
 * tree. The sibling bug moves the law too little to be caught at the plan's size on a draft tree of a few
 * siblings, or on the small world's Medusa tree of three. Both show from the second round on, so only in windows
 * of 3 tokens or more. PLANT_ENGINE_NONE (typical acceptance, two-sample rows, short windows): the
 * acceptance-side control stays. */
planted_engine_bug verify_case_engine_control(const verify_case *c);
/* "what the control plants", e.g. "drafts drawn at T=2, q at T=1"; on_engine:
 * the control of the engine's run. */
void verify_case_control_text(const verify_case *c, int on_engine, char *out, int size);

/* A sampler over the reference decode loop for case c (control = 1: with
 * its planted bug); ctx[...] lives in *slot, which must outlive s. */
typedef struct {
    const verify_case *c;
    const verify_world *w;
    int control;
    int plain;            /* 1: plain sampling with c's parameters, the other side of a VC_VS_SAMPLE pair */
    long rounds, drafted; /* out: the rounds of its draws, and those that proposed at least one token */
} verify_case_sampler;
void verify_case_sampler_init(dist_sampler *s, verify_case_sampler *slot, const verify_case *c, const verify_world *w,
                              int control, int plain);

/* The law case c's method must follow: the target's enumerated law at c's
 * sampling parameters over c->L tokens after the world's prompt — or, for a
 * rule that is not exact and whose law is computed (verify_case_follows_rule_law),
 * that rule's law in t->joint (t->cond stays the target's). Fails when w's
 * vocabulary is not that of c's world (c->world). */
int verify_case_exact(const verify_case *c, const verify_world *w, enum_table *t, sp_error *err);
/* 1: case c is held to its rule's own law, not the target's: the typical rule on a draft model's chain
 * (spec_law.h) where the case does not expect a bias. */
int verify_case_follows_rule_law(const verify_case *c);
/* The gap between the laws of two backends on the same weights: *tv ← TV(law, the reference's law of case c),
 * law being verify_case_exact's table on w's engine (laws_on_engine). *control_tv ← the same distance from the
 * reference's law at 1.02 times the case's temperature: a change the gap check must see (VERIFY_ENGINE_TV_MAX
 * below it), which shows the check has the power to see a wrong engine; −1 where the case samples at temperature 0
 * (a point mass: any gap is 1). */
#define VERIFY_ENGINE_TV_MAX 1e-3
int verify_case_engine_gap(const verify_case *c, const verify_world *w, const enum_table *law, double *tv,
                           double *control_tv, sp_error *err);

/* *tv ← the total-variation distance between `rule` (verify_case_exact's table for a case held to its rule's law)
 * and the target's law: the rule's bias on this instance, computed, not estimated. */
int verify_case_rule_bias(const verify_case *c, const verify_world *w, const enum_table *rule, double *tv,
                          sp_error *err);

/* The exact law of case c's method (control = 0) or of its negative
 * control (control = 1) into law[V^L]: by enumeration for plain sampling,
 * by spec_law (spec_law.h) from the enumerated conditionals of target and
 * draft for draft-model speculation, and of the target and the lookups
 * (lookup_find) for prompt lookup, under the exact rule or (a chain of a
 * draft model) the typical rule; for a batched case, the mixture of
 * verify_batch.h. Returns 1 when computed, 0 when the method has no such
 * computation here (MTP: its drafts depend on its own chained state; an
 * engine-side control; a batch's slip), −1 on error. */
int verify_case_law(const verify_case *c, const verify_world *w, int control, double *law, sp_error *err);

/* The seed of case c in a run seeded `base` (verify_name_seed over its
 * name): adding, removing or moving a case leaves every other case's draws
 * as they were. Its control draws with this seed + 1. */
uint64_t verify_case_seed(const verify_case *c, uint64_t base);

/* A negative control counts as rejected below this p-value; its size is
 * planned for this power there. */
#define VERIFY_CONTROL_P 1e-12
#define VERIFY_CONTROL_POWER 0.999

/* What every row of a run must catch: with probability ≥ power, at the
 * Holm level of its family, any law at total-variation distance ≥ tv from
 * the one it is checked against. */
typedef struct {
    double tv;    /* 0.05 */
    double power; /* 0.99 */
    double alpha; /* the family-wise level: 1e-3 */
    int family;   /* rows in the run; a row is planned at alpha / family, Holm's strictest step */
} verify_plan_target;
verify_plan_target verify_plan_defaults(int family);

/* The sizes of one case, planned (docs/verification.md, "Planned sizes"):
 *   the method: a law on one sequence (temperature 0) is rejected by the
 *     first draw elsewhere, so n = ⌈ln(1 − power) / ln(1 − tv)⌉ exactly;
 *     else the smallest n at which the G-test with df = reachable cells − 1
 *     reaches `power` at alpha / family against Cohen's w = 2·tv (which
 *     every law at TV ≥ tv has), per sample for two samples, ×
 *     VERIFY_PLAN_MARGIN (the noncentral χ² law is an approximation);
 *   the control: from its exact law where verify_case_law computes it
 *     (power 0.999 at VERIFY_CONTROL_P, × the margin), else the generic
 *     plan at w = VERIFY_GENERIC_W (a point mass: 1 000); for a rule known
 *     to be biased the control is the exact rule, which joins the family:
 *     the method's n.
 * Both rounded up to a multiple of 500 (the point mass excepted), at least
 * 1 000 for a control. Fails when a plan is above the case's max_samples
 * (the cap would cut its power). */
#define VERIFY_PLAN_MARGIN 1.5
#define VERIFY_GENERIC_W 0.3
typedef struct {
    int64_t n, control_n;
    int reachable;        /* cells the law reaches */
    int point_mass;       /* reachable == 1 */
    int control_from_law; /* control_n from the control's computed law (else generic, or the method's n) */
    double control_w;     /* the control's effect size on the pooled cells, when from its law */
} verify_plan;
int verify_case_plan(const verify_case *c, const verify_world *w, const enum_table *exact, const verify_plan_target *t,
                     verify_plan *p, sp_error *err);

typedef struct {
    verify_result result;  /* the method */
    verify_result control; /* its planted bug, at the same n and seed stream */
    double p_holm;         /* filled by the caller that corrects over many cases (else = result.test.p_value) */
    long rounds, drafted;  /* the method's draws: rounds, and rounds that proposed a token (a proposer that never
                            * drafts in the world is tested as plain sampling) */
} verify_case_outcome;

/* Runs the method with opt, then its control with control_n draws (≤ 0:
 * opt->n, the same size — what the tests do) and seed opt->seed + 1.
 * exact: from verify_case_exact. */
int verify_case_run(const verify_case *c, const verify_world *w, const enum_table *exact, const verify_options *opt,
                    int64_t control_n, verify_case_outcome *out, sp_error *err);
void verify_case_outcome_free(verify_case_outcome *o);

#endif
