/* gate_checks.c — the rows of `specula gate` (gate.h): greedy canaries against the frozen tokens, the per-position
 * TV of a lossy configuration against the reference, and the audit's arms (speculation on, off, a control) with
 * the on arm's acceptance statistics. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "audit_law.h"
#include "audit_specula.h"
#include "gate.h"
#include "registry.h"
#include "verify_dist.h"

gate_row *gate_table_add(gate_table *t, const char *check) {
    if (t->n == GATE_MAX_ROWS) return NULL;
    gate_row *r = &t->rows[t->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->check, sizeof r->check, "%s", check);
    return r;
}

static void say(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(char *buf, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, GATE_ROW_TEXT, fmt, ap);
    va_end(ap);
}

static void turn_name(const gate_case *k, int u, char *buf, size_t size) {
    if (k->n_turns > 1)
        snprintf(buf, size, "exact: %s turn %d", k->name, u + 1);
    else
        snprintf(buf, size, "exact: %s", k->name);
}

int gate_check_exact(const gate_args *a, const gate_canaries *c, const method_parts *parts, gate_table *t,
                     sp_error *err) {
    for (int k = 0; k < c->n_cases; k++)
        for (int u = 0; u < c->cases[k].n_turns; u++) {
            const gate_turn *turn = &c->cases[k].turns[u];
            int *ctx, n_ctx;
            gate_context(&c->cases[k], u, &ctx, &n_ctx);
            method_spec s = a->greedy;
            s.max_tokens = turn->n_expect;
            s.stop_at_eos = 0; /* the canaries were written without a stop */
            decode_output out;
            int rc = method_generate(&s, parts, ctx, n_ctx, &out, err);
            free(ctx);
            if (rc) return -1;
            char name[64];
            turn_name(&c->cases[k], u, name, sizeof name);
            gate_row *r = gate_table_add(t, name);
            if (!r) {
                decode_output_free(&out);
                return sp_fail(err, "gate: more than %d rows", GATE_MAX_ROWS);
            }
            int d = 0;
            while (d < turn->n_expect && d < out.n && out.tokens[d] == turn->expect[d]) d++;
            if (a->exact)
                say(r->against, "every token the reference's (%d after %d of context)", turn->n_expect, n_ctx);
            else
                say(r->against, "budget: no divergence before token %d where the reference's margin > %.3g",
                    a->budget.tokens, a->budget.margin);
            if (d == turn->n_expect) {
                r->verdict = GATE_PASS;
                say(r->measured, "%d/%d tokens equal", d, turn->n_expect);
            } else {
                const double m = turn->margin[d];
                say(r->measured, "diverged at token %d of %d (reference %d, got %d), reference margin there %.4f",
                    d + 1, turn->n_expect, turn->expect[d], d < out.n ? out.tokens[d] : -1, m);
                r->verdict = a->exact || (d < a->budget.tokens && m > a->budget.margin) ? GATE_FAIL : GATE_PASS;
            }
            decode_output_free(&out);
        }
    return 0;
}

int gate_check_tv(const gate_args *a, const gate_canaries *c, decode_target *config, decode_target *ref, gate_table *t,
                  sp_error *err) {
    const int V = ref->cfg->vocab_size;
    double max_tv = 0, sum_tv = 0;
    long positions = 0, stale = 0;
    char where[128] = "everywhere";
    for (int k = 0; k < c->n_cases; k++)
        for (int u = 0; u < c->cases[k].n_turns; u++) {
            const gate_turn *turn = &c->cases[k].turns[u];
            const int n = turn->n_expect;
            int *ctx, n_ctx;
            gate_context(&c->cases[k], u, &ctx, &n_ctx);
            int *tok = sp_xcalloc((size_t)n, sizeof *tok, "gate tokens");
            float *margin = sp_xcalloc((size_t)n, sizeof *margin, "gate margins");
            float *p_ref = sp_xcalloc((size_t)n * (size_t)V, sizeof *p_ref, "gate reference rows");
            float *p_cfg = sp_xcalloc((size_t)n * (size_t)V, sizeof *p_cfg, "gate configuration rows");
            int rc = gate_walk(ref, ctx, n_ctx, n, turn->expect, &a->spec.sampling, tok, margin, p_ref, err);
            for (int i = 0; !rc && i < n; i++) stale += tok[i] != turn->expect[i];
            if (!rc) rc = gate_walk(config, ctx, n_ctx, n, turn->expect, &a->spec.sampling, tok, margin, p_cfg, err);
            for (int i = 0; !rc && i < n; i++) {
                double tv = 0;
                for (int j = 0; j < V; j++) tv += fabs((double)p_ref[(size_t)i * V + j] - p_cfg[(size_t)i * V + j]);
                tv *= 0.5;
                sum_tv += tv;
                positions++;
                if (tv > max_tv) {
                    max_tv = tv;
                    snprintf(where, sizeof where, "%s turn %d token %d", c->cases[k].name, u + 1, i + 1);
                }
            }
            free(ctx);
            free(tok);
            free(margin);
            free(p_ref);
            free(p_cfg);
            if (rc) return -1;
        }
    gate_row *r = gate_table_add(t, "reference reproduces");
    if (!r) return sp_fail(err, "gate: more than %d rows", GATE_MAX_ROWS);
    r->verdict = stale ? GATE_FAIL : GATE_PASS;
    say(r->measured, "%ld of %ld frozen tokens differ from the reference's argmax now", stale, positions);
    say(r->against, "0: else the model or the reference changed; rewrite with --write-canaries");
    r = gate_table_add(t, a->exact ? "law: TV per position" : "budget: TV per position");
    if (!r) return sp_fail(err, "gate: more than %d rows", GATE_MAX_ROWS);
    say(r->measured, "max %.3g (%s), mean %.3g over %ld positions at T %.3g", max_tv, where,
        positions ? sum_tv / (double)positions : 0.0, positions, (double)a->spec.sampling.temperature);
    /* an exact configuration computes the reference's floats: any TV above float rounding is a bug */
    const double limit = a->exact ? 1e-5 : a->budget.tv;
    say(r->against, "<= %.3g against the reference (%s)", limit,
        a->exact ? "exact: float rounding only" : "the lossy budget");
    r->verdict = max_tv <= limit ? GATE_PASS : GATE_FAIL;
    return 0;
}

/* ---- the distribution rows ---------------------------------------------------------------------------------- */

/* The seed base of arm `arm` (0 on, 1 off, 2 control), disjoint ranges as `specula audit` draws them. */
static uint64_t arm_seed_base(uint64_t seed, int arm) {
    return ((uint64_t)arm << 29) + (verify_run_seed(seed, arm, 0) & ((1u << 28) - 1));
}

/* n samples of s->L tokens, as audit_specula_draw draws them, with the plant (when not PLANT_NONE) in the rule and
 * the runs' accounting summed into acc. */
static int draw_arm(const method_spec *spec, const method_parts *parts, planted_bug plant, const int *prompt,
                    int n_prompt, uint64_t seed_base, int n, audit_samples *out, run_accounting *acc, sp_error *err) {
    method_spec s = *spec;
    s.stop_at_eos = 0;
    s.max_tokens = out->L;
    const planted_rule rule = {plant, n_prompt, -1};
    for (int i = 0; i < n; i++) {
        s.seed = seed_base + (uint64_t)i;
        method_built b;
        if (method_build(&b, &s, parts, err)) return -1;
        if (plant != PLANT_NONE) {
            b.options.custom_accept = planted_accept_fn;
            b.options.accept_user = (void *)&rule;
        }
        decode_output o;
        int rc = decode_batch_one(parts->target, b.proposer, prompt, n_prompt, &b.options, &o, err);
        method_release(&b);
        if (rc) return -1;
        rc = o.n < out->L ? sp_fail(err, "gate: a decode gave %d tokens, asked for %d", o.n, out->L)
                          : audit_samples_add(out, o.tokens, err);
        if (acc) {
            acc->target_passes += o.acc.target_passes;
            acc->rejected_rounds += o.acc.rejected_rounds;
            acc->accepted_total += o.acc.accepted_total;
            for (int d = 0; d <= ACC_MAX_DEPTH; d++) {
                acc->proposed[d] += o.acc.proposed[d];
                acc->accepted[d] += o.acc.accepted[d];
            }
        }
        decode_output_free(&o);
        if (rc) return -1;
    }
    return 0;
}

static void acceptance_row(const gate_args *a, const run_accounting *acc, gate_table *t) {
    gate_row *r = gate_table_add(t, "acceptance");
    if (!r) return;
    long proposed = 0;
    for (int d = 1; d <= ACC_MAX_DEPTH; d++) proposed += acc->proposed[d];
    const double alpha = accounting_alpha(acc);
    int len = snprintf(r->measured, GATE_ROW_TEXT, "%ld of %ld drafts accepted, alpha-hat %.3f; per position",
                       acc->accepted_total, proposed, alpha);
    for (int d = 1; d <= ACC_MAX_DEPTH && acc->proposed[d] && len < GATE_ROW_TEXT - 24; d++)
        len += snprintf(r->measured + len, GATE_ROW_TEXT - (size_t)len, " %d:%.3f", d,
                        (double)acc->accepted[d] / (double)acc->proposed[d]);
    say(r->against,
        "plausible at T %.3g: alpha-hat < 0.99 over >= 100 drafts (near 1: a verifier that accepts "
        "everything)",
        (double)a->spec.sampling.temperature);
    /* at T > 0 a draft that is not the target itself is rejected now and then: acceptance near 1 means the
     * verifier is not testing (lesson 8). Low acceptance is a slow method, not a wrong one (prompt lookup's point
     * masses are accepted a few times in a hundred here): it is reported, not judged. */
    if (proposed < 100) {
        r->verdict = GATE_FAIL;
        say(r->against, "at least 100 drafts to judge (draw more: -n)");
    } else
        r->verdict = alpha >= 0.99 ? GATE_FAIL : GATE_PASS;
}

int gate_check_distribution(const gate_args *a, const method_parts *parts, decode_target *law, const int *prompt,
                            int n_prompt, gate_table *t, sp_error *err) {
    const int V = parts->target->cfg->vocab_size;
    audit_samples arms[3];
    audit_pit pits[3];
    memset(pits, 0, sizeof pits);
    run_accounting acc;
    accounting_init(&acc, method_name(&a->spec), a->spec.k, 0, 0);
    const method_spec off = audit_specula_off(&a->spec);
    method_spec control = a->spec;
    control.sampling.temperature = a->control_temperature;
    const method_spec *specs[3] = {&a->spec, &off, &control};
    int rc = 0;
    for (int arm = 0; arm < 3; arm++) audit_samples_init(&arms[arm], a->L);
    for (int arm = 0; arm < 3 && !rc; arm++) {
        if (!a->quiet)
            fprintf(stderr, "specula gate: arm %s, %d samples of %d tokens\n",
                    arm == 0   ? "on"
                    : arm == 1 ? "off"
                               : "control",
                    a->n, a->L);
        rc = draw_arm(specs[arm], parts, arm == 1 ? PLANT_NONE : a->plant, prompt, n_prompt,
                      arm_seed_base(a->spec.seed, arm), a->n, &arms[arm], arm == 0 ? &acc : NULL, err);
    }
    for (int arm = 0; arm < 3 && !rc; arm++) {
        audit_pit_init(&pits[arm], a->L);
        rc = audit_law_pit(law, prompt, n_prompt, &a->spec.sampling, NULL, 0, &arms[arm],
                           verify_run_seed(a->spec.seed, 10 + arm, 0), NULL, NULL, &pits[arm], err);
    }
    audit_report rep;
    const audit_options opt = audit_defaults();
    if (!rc) rc = audit_run(&arms[0], &arms[1], &arms[2], V, &pits[0], &pits[1], &pits[2], &opt, &rep, err);
    for (int arm = 0; arm < 3; arm++) {
        audit_samples_free(&arms[arm]);
        if (pits[arm].bins) audit_pit_free(&pits[arm]);
    }
    if (rc) return -1;
    double law_p = 1, two_p = 1;
    for (int i = 0; i < rep.n_tests; i++) {
        double *slot = rep.tests[i].kind == AUDIT_TEST_LAW ? &law_p : &two_p;
        if (rep.tests[i].p_holm < *slot) *slot = rep.tests[i].p_holm;
    }
    const audit_drafting drafting = {acc.target_passes, acc.proposed[1], 0, acc.accepted_total};
    const int drafted = audit_drafting_enough(&drafting);
    gate_row *r = gate_table_add(t, "distribution: on vs law");
    if (!r) return sp_fail(err, "gate: more than %d rows", GATE_MAX_ROWS);
    say(r->measured, "smallest Holm p %.3g (on and off arms' PIT, pooled and per position); control at T %.3g: %.3g",
        law_p, (double)a->control_temperature, rep.control_law_p_holm);
    say(r->against, "p > %.3g, the control < %.0e, the on arm drafting (%ld of %ld rounds%s)", opt.alpha,
        AUDIT_CONTROL_P, drafting.drafted_rounds, drafting.rounds,
        drafted ? "" : ": too few to test the method, >= 100 and 10 % needed");
    r->verdict = law_p > opt.alpha && rep.control_law_p_holm < AUDIT_CONTROL_P && drafted ? GATE_PASS : GATE_FAIL;
    r = gate_table_add(t, "distribution: on vs off");
    if (!r) return sp_fail(err, "gate: more than %d rows", GATE_MAX_ROWS);
    say(r->measured,
        "smallest Holm p %.3g (G-test per position, n %d, L %d); TV(on, off) <= %.3f certified, "
        "detectable %.3f; control %.3g",
        two_p, a->n, a->L, rep.max_tv, rep.detectable_tv, rep.control_min_p_holm);
    say(r->against, "p > %.3g, the control < %.0e, the on arm drafting (as above)", opt.alpha, AUDIT_CONTROL_P);
    r->verdict = two_p > opt.alpha && rep.control_min_p_holm < AUDIT_CONTROL_P && drafted ? GATE_PASS : GATE_FAIL;
    audit_report_free(&rep);
    acceptance_row(a, &acc, t);
    return 0;
}
