/* audit.h — the statistics of `specula audit`: does an engine sample the same law with speculation on as off,
 * and the target's law? It sees only samples (token ids), so any engine can be audited; adapters draw them
 * (audit_specula.h, tools/audit/). docs/audit.md states what it can and cannot see. */
#ifndef SPECULA_AUDIT_H
#define SPECULA_AUDIT_H

#include <stdint.h>

#include "audit_samples.h"
#include "error.h"
#include "stats.h"

/* The control counts as rejected below this Holm-adjusted p-value (the
 * level the project asks of every negative control). */
#define AUDIT_CONTROL_P 1e-12
/* The power at which the audit states the smallest change it can see. */
#define AUDIT_POWER 0.9
/* Equal-width bins of the probability integral transform. */
#define AUDIT_PIT_BINS 20

/* Where each arm's draws fall against the target's law (audit_law.h), per
 * position: a bug that touches one position (the bonus token, the last
 * step) would be diluted in the pooled counts, so both are tested. */
typedef struct {
    int L;
    int64_t *bins;       /* [L, AUDIT_PIT_BINS] randomised PIT values per bin of [0, 1) */
    int64_t *impossible; /* [L] tokens the law gives probability 0 */
    int64_t draws;       /* n · L */
} audit_pit;

void audit_pit_init(audit_pit *p, int L);
void audit_pit_free(audit_pit *p);

typedef struct {
    double alpha; /* family-wise level of the audit (Holm), default 1e-3 */
    double delta; /* the TV bounds hold together with probability ≥ 1 − delta, default 1e-3 */
} audit_options;

audit_options audit_defaults(void);

typedef enum { AUDIT_TEST_POSITION = 0, AUDIT_TEST_SEQUENCE, AUDIT_TEST_LAW } audit_test_kind;

/* One test of a family. */
typedef struct {
    audit_test_kind kind;
    int position;      /* 0-based position in the continuation; −1: the whole sequence (sequence test, pooled law) */
    const char *arm;   /* AUDIT_TEST_LAW: "on", "off" or "control" */
    stats_result test; /* raw test */
    double p_holm;     /* Holm-adjusted within its family */
    int has_tv;        /* positions and sequences: the TV bound below */
    stats_tv tv;
} audit_test;

typedef enum {
    AUDIT_PASSED = 0,       /* nothing rejected at alpha, and the control was rejected */
    AUDIT_FAILED = 1,       /* a test rejected at alpha: the arms differ or an arm is off the law */
    AUDIT_UNDERPOWERED = 3, /* nothing rejected, but neither was the control: the draws are too few */
    AUDIT_UNTESTED = 5      /* nothing rejected, but the on arm drafted too little for its samples to test the
                             * method (audit_drafting_enough): they were mostly plain sampling */
} audit_verdict;

/* What the on arm's method did while it drew (specula's own engines report it; an external engine does not). */
typedef struct {
    long rounds;         /* rounds of the round loop */
    long drafted_rounds; /* rounds that proposed at least one token */
    long proposed;       /* draft tokens proposed */
    long accepted;       /* ... and accepted */
} audit_drafting;

/* An on arm tests its method when at least this many rounds drafted, and at least this share of them. */
#define AUDIT_MIN_DRAFTED_ROUNDS 100
#define AUDIT_MIN_DRAFTED_SHARE 0.1
int audit_drafting_enough(const audit_drafting *d);

typedef struct {
    int n, L, V;
    audit_test *tests; /* [n_tests] the audit's family: on vs off, and the law tests */
    int n_tests;
    audit_test *control; /* [n_control] the control's family: control vs off, and its law test */
    int n_control;
    double min_p_holm;         /* smallest Holm-adjusted p of the audit's family */
    double control_min_p_holm; /* the same for the control's two-sample tests */
    double control_law_p_holm; /* the smallest of the control's law tests (−1: no law) */
    double max_tv;             /* the largest TV upper bound of the audit's positions */
    double detectable_tv;      /* the smallest shift of one position's law (in TV) its on-vs-off test finds with
                                * power AUDIT_POWER at the family's strictest Holm level: a smaller one may pass
                                * the two-sample tests (the law tests, where run, see more) */
    int control_rejected;
    audit_verdict verdict;
} audit_report;

/* The audit of three arms, each n samples of L tokens below V:
 *   on       speculation on, at the audit's temperature and cuts;
 *   off      speculation off, same model, prompt, temperature and cuts;
 *   control  the same engine at a deliberately different temperature. It is the negative control: the same
 *            tests must reject it at p < AUDIT_CONTROL_P, or the draws are too few to mean anything.
 * The tests, Holm-corrected over the run: per position, a G-test of on against off (a 2×V table, pooled); the
 * same on whole sequences, when enough repeat to leave a degree of freedom; and, when pit_on, pit_off and
 * pit_control are given (all or none; audit_law.h), the fit of each arm's randomised PIT to the uniform law,
 * pooled and per position. Each position gets a TV upper bound whose coarse cells come from the control's
 * draws: they are independent of the arms bounded, so the bounds keep their coverage (stats.h). */
int audit_run(const audit_samples *on, const audit_samples *off, const audit_samples *control, int V,
              const audit_pit *pit_on, const audit_pit *pit_off, const audit_pit *pit_control, const audit_options *opt,
              audit_report *r, sp_error *err);
void audit_report_free(audit_report *r);

/* "passed", "FAILED", "underpowered" */
const char *audit_verdict_name(audit_verdict v);

#endif
