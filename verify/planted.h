/* planted.h — deliberate bugs, the negative controls of the distribution tests: a test that passes the real
 * sampler must reject them at the same sample size, or it proves nothing. Each is a copy of the exact rule with
 * one mistake, or a wrapper; none is reachable from the decoding methods. */
#ifndef SPECULA_PLANTED_H
#define SPECULA_PLANTED_H

#include "accept.h"
#include "decode.h"
#include "proposer.h"
#include "target.h"

typedef enum {
    PLANT_NONE = 0,                 /* the exact rule, unchanged (a sanity check of the copy) */
    PLANT_RATIO_INVERTED,           /* accept with min(1, q/p) instead of min(1, p/q) */
    PLANT_RESIDUAL_IS_P,            /* after a rejection, draw from p instead of norm(max(0, p − q)) */
    PLANT_RESIDUAL_UNNORMALISED,    /* keep max(0, p − q) unnormalised: later children of a tree are
                                     * tested against it, and the correction is drawn by an inverse CDF
                                     * that assumes unit mass, so the missing mass lands on token V − 1 */
    PLANT_REJECT_FROM_Q,            /* the correction after a rejection is drawn from q */
    PLANT_BONUS_FROM_PARENT,        /* the bonus token is drawn from p of the leaf's parent (one position early) */
    PLANT_NO_REPLACEMENT_AS_IID,    /* children drawn without replacement verified as if i.i.d.: q is not
                                     * renormalised without a rejected sibling (trees only; a chain is unchanged) */
    PLANT_CHILDREN_BY_Q,            /* a node's children verified in order of their q, highest first, not in
                                     * the order drawn: a proposer that sorts its draws (trees only) */
    PLANT_NO_REPLACEMENT_ROOT_ONLY, /* q renormalised without a rejected sibling at the root only: below an
                                     * accepted child the siblings are verified as if i.i.d. (shows only
                                     * after a partial tree match, under a node of two children or more) */
    PLANT_COMMIT_PARENT_AFTER_TWO,  /* the rule is exact, but the target commits the parent of the last
                                     * accepted node when two or more were accepted: its state misses a
                                     * token (planted_target_build; shows only in the rounds after) */
    PLANT_BONUS_FROM_PARENT_LATE,   /* bonus-from-parent, only for a bonus at generated position ≥ 4 (the
                                     * fifth token on): a row index that goes wrong late in a run */
    PLANT_EOS_DRAFT_UNTESTED,       /* an EOS draft accepted without the ratio test ("the run ends there
                                     * anyway"): shows only where EOS can be drafted */
    PLANT_COUNT
} planted_bug;

/* "ratio-inverted", "residual-is-p", … ("none" for PLANT_NONE). */
const char *planted_name(planted_bug bug);
/* One line: what the bug does. */
const char *planted_summary(planted_bug bug);
/* The bug named `name`, or −1. */
int planted_parse(const char *name);

/* accept_exact with `bug` planted (same contract, same rng sites). A tree
 * of top-ranked children (the greedy rule at temperature 0) is walked by
 * accept_greedy's rule instead, where two of the bugs have an effect:
 * PLANT_BONUS_FROM_PARENT takes the next token as the argmax of p one
 * position early, PLANT_REJECT_FROM_Q as the argmax of the draft's q after
 * a node whose children all missed. */
int planted_accept(planted_bug bug, const token_tree *t, const float *p, accept_site site, float *scratch,
                   accept_result *r, sp_error *err);

/* What the late and EOS bugs need beside the tree: the position of a
 * run's first generated token (decode_run's first root sits at n_prompt − 1,
 * so its first token is at n_prompt) and the EOS id (−1: none). */
typedef struct {
    planted_bug bug;
    int first_position; /* the sequence position of generated token 0 */
    int eos;            /* −1: no EOS token */
} planted_rule;

/* The generated position from which PLANT_BONUS_FROM_PARENT_LATE shows. */
#define PLANT_LATE_POSITION 4

/* planted_accept with the run's positions and EOS id (planted_accept is
 * this with no EOS and positions counted from the first round's root at 0:
 * first_position 1). */
int planted_accept_rule(const planted_rule *rule, const token_tree *t, const float *p, accept_site site, float *scratch,
                        accept_result *r, sp_error *err);

/* An accept_fn for decode_options.custom_accept; user points at a planted_rule. */
int planted_accept_fn(void *user, const token_tree *t, const float *p, accept_site site, float *scratch,
                      accept_result *r, sp_error *err);

/* A target whose commit, after a round that accepted two nodes or more,
 * commits the parent of the last one (PLANT_COMMIT_PARENT_AFTER_TWO): the
 * slip of a commit that indexes the path one step short. It remembers each
 * verified tree to find the parent. The wrapper borrows inner (release
 * frees the wrapper only). */
void planted_target_build(decode_target *outer, decode_target *inner);

/* accept_typical (Medusa's rule) with `bug` planted; of the bugs above only
 * PLANT_BONUS_FROM_PARENT applies: the next token is drawn from p of the
 * last accepted node's parent. Same contract and rng sites as accept_typical. */
void planted_typical(planted_bug bug, const token_tree *t, const float *p, float epsilon, float delta, accept_site site,
                     accept_result *r);

/* An accept_fn running planted_typical; user points at a planted_typical_rule. */
typedef struct {
    planted_bug bug;
    float epsilon, delta;
} planted_typical_rule;
int planted_typical_fn(void *user, const token_tree *t, const float *p, accept_site site, float *scratch,
                       accept_result *r, sp_error *err);

/* A proposer whose drafts were sampled at one temperature while the q rows
 * it reports belong to another: `inner` proposes under the run's sampler
 * params with the temperature replaced by draw_temperature > 0, then every q
 * row of a node with children becomes norm(q^γ) over its support, γ =
 * draw_temperature / the run's temperature — softmax(z / run temperature)
 * when no cut depends on the temperature. The wrapper owns inner: its
 * release releases both. */
int planted_retemper_build(proposer *outer, proposer *inner, float draw_temperature, sp_error *err);

/* The same transformation on one row: out[V] = norm(q^gamma) over q > 0
 * (out may alias q). Exposed so exact computations can follow the wrapper. */
void planted_retemper_row(const float *q, float gamma, float *out, int V);

/* The controls `specula verify --flags` derives for any method, without its author writing them: its drafts stay
 * as its proposer drew them, the q rows it reports change. PLANT_Q_OTHER_DEPTH reports under each drafting node
 * half its own row and half the row of the next drafting node (the deepest one: its predecessor's), a row partly of
 * another depth; PLANT_Q_UNIFORM reports every drafting node's row as uniform. Both keep every draft's q above 0,
 * so the rule runs and only the law moves. */
typedef enum { PLANT_Q_NONE = 0, PLANT_Q_OTHER_DEPTH, PLANT_Q_UNIFORM } planted_q;
const char *planted_q_name(planted_q bug); /* "q of another depth", "q reported uniform" */
/* The wrapper over inner (which it owns: release releases both). */
int planted_q_build(proposer *outer, proposer *inner, planted_q bug, sp_error *err);

#endif
