/* stat_common.h — what the distribution suites share: the levels every
 * test uses, the sample-size plan for a negative control whose law is
 * known, and the checks that a method passes and its control fails. */
#ifndef SPECULA_TEST_STAT_COMMON_H
#define SPECULA_TEST_STAT_COMMON_H

#include <stdint.h>

#include "stats.h"
#include "verify_cases.h"
#include "verify_dist.h"

/* A correct sampler must pass at this family-wise level (Holm over the
 * cases of one test): fixed seeds make every outcome reproducible, and at
 * 1e-3 a correct implementation fails a given test with probability 1e-3. */
#define STAT_FAMILY_ALPHA 1e-3
/* A planted bug must be rejected below this p-value, at the same size. */
#define STAT_CONTROL_P 1e-12
/* The planned power against each control. The noncentral chi-square
 * approximation is optimistic at these sizes (docs/verification.md), so the
 * plan aims at 0.999 and the draw count adds half again on top. */
#define STAT_PLAN_POWER 0.999
#define STAT_PLAN_MARGIN 1.5

/* Draws for a check whose control has the exact law `control` (the null is
 * `exact`): STAT_PLAN_MARGIN × the planned n at STAT_CONTROL_P and
 * STAT_PLAN_POWER — goodness of fit, or per sample for a two-sample test
 * (two_sample = 1) — rounded up to a multiple of 500 and at least `floor`.
 * Fails the test when the plan exceeds `cap` (the time budget): a control
 * that weak needs a stronger bug or a bigger budget, not a blind test. */
int64_t stat_planned_n(const double *exact, const double *control, int64_t cells, int two_sample, int64_t floor,
                       int64_t cap, const char *what);

/* Holm over m p-values at STAT_FAMILY_ALPHA; fails the test naming the
 * first case below it. names[m] for the message. */
void stat_assert_family_passes(const double *p, int m, const char *const *names);

/* Fails unless the control was rejected below STAT_CONTROL_P. */
void stat_assert_control_rejected(const verify_result *control, const char *what);

/* The effect size the generic plan aims at where a control's law cannot be
 * computed (MTP: its drafts depend on its own chained state): any
 * alternative with Cohen's w ≥ 0.3 (TV ≥ 0.15 for the least favourable one)
 * is caught. The controls' measured w are far above it (docs/verification.md). */
#define STAT_GENERIC_W 0.3

/* Runs every case of the catalogue (verify_cases.h) of `method` on
 * the micro world `specula verify` builds by default (target seed 1, draft
 * seed 2): each case at its planned size — from the exact law of its
 * control where verify_case_law computes one, else the generic plan at
 * STAT_GENERIC_W — with its control at the same size; asserts every control
 * rejected and the family of cases passing. A rule known to be biased must
 * instead be rejected below STAT_CONTROL_P, and its control (the exact rule
 * on the same drafts) joins the family that must pass. cap: the most draws
 * any one case may take. */
void stat_run_catalogue(const char *method, int64_t cap);

/* The same checks on the CPU engine (float32 weights, opened on the
 * world's checkpoints) for the named cases (NULL-terminated): each case's
 * control on the engine is verify_case_engine_control's slip in the
 * engine's commit where the case has one, else the case's own. */
void stat_run_on_engine(const char *const *cases, int64_t cap);

#endif
