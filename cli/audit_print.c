/* audit_print.c — `specula audit`'s report, as a table or as JSON: a row per position (the two-sample test, its
 * TV bound, each arm's law test), a row for whole sequences and the pooled law, the control and the verdict. */
#include <math.h>
#include <string.h>

#include "audit_cli.h"

static const audit_test *find(const audit_test *tests, int m, audit_test_kind kind, int position, const char *arm) {
    for (int i = 0; i < m; i++)
        if (tests[i].kind == kind && tests[i].position == position && (!arm || !strcmp(tests[i].arm, arm)))
            return &tests[i];
    return NULL;
}

static void source_line(const audit_args *a, FILE *f) {
    char label[160];
    method_spec_label(&a->spec, label, sizeof label);
    if (a->source == AUDIT_SOURCE_SPECULA)
        fprintf(f, "engine: specula (%s backend); on = %s, off = plain sampling\n", backend_name(a->models.backend),
                label);
    else if (a->source == AUDIT_SOURCE_CMD)
        fprintf(f, "engine: the command %s\n", a->engine_cmd);
    else
        fprintf(f, "engine: the sample files %s (on), %s (off), %s (control)\n", a->files[0], a->files[1], a->files[2]);
}

static void p_cell(const audit_test *x, FILE *f) {
    if (x)
        fprintf(f, " %-10.3g", x->p_holm);
    else
        fprintf(f, " %-10s", "-");
}

void audit_print_table(const audit_args *a, const audit_report *r, FILE *f) {
    const sampler_params *sp = &a->spec.sampling;
    source_line(a, f);
    fprintf(f, "model %s, prompt of %d tokens, T %g (top-k %d, top-p %g, min-p %g), control T %g\n", a->model_dir,
            a->n_prompt, (double)sp->temperature, sp->top_k, (double)sp->top_p, (double)sp->min_p,
            (double)a->control_temperature);
    if (a->n_banned) {
        fprintf(f, "tokens the engine never draws, removed from the law:");
        for (int i = 0; i < a->n_banned; i++) fprintf(f, " %d", a->banned[i]);
        fputc('\n', f);
    }
    fprintf(f, "%d samples per arm of %d tokens, seed %llu; drawn in %.1f s, law in %.1f s\n\n", r->n, r->L,
            (unsigned long long)a->spec.seed, a->draw_seconds, a->law_seconds);
    const int law = r->control_law_p_holm >= 0;
    fprintf(f, "%5s | %-44s | %s\n", "", "on vs off (G-test, Holm p, TV upper bound)",
            law ? "against the law (Holm p)" : "");
    fprintf(f, "%5s | %9s %5s %10s %10s %6s | %s\n", "pos", "G", "df", "p", "Holm p",
            "TV <=", law ? "on         off" : "");
    for (int t = 0; t < r->L; t++) {
        const audit_test *x = find(r->tests, r->n_tests, AUDIT_TEST_POSITION, t, NULL);
        if (x)
            fprintf(f, "%5d | %9.2f %5d %10.3g %10.3g %6.3f |", t + 1, x->test.statistic, x->test.df, x->test.p_value,
                    x->p_holm, x->tv.upper);
        else
            fprintf(f, "%5d | %-44s |", t + 1, "  one token almost always: nothing to test");
        if (law) {
            p_cell(find(r->tests, r->n_tests, AUDIT_TEST_LAW, t, "on"), f);
            p_cell(find(r->tests, r->n_tests, AUDIT_TEST_LAW, t, "off"), f);
        }
        fputc('\n', f);
    }
    const audit_test *s = find(r->tests, r->n_tests, AUDIT_TEST_SEQUENCE, -1, NULL);
    if (s)
        fprintf(f, "%5s | %9.2f %5d %10.3g %10.3g %6.3f |", "seq", s->test.statistic, s->test.df, s->test.p_value,
                s->p_holm, s->tv.upper);
    else
        fprintf(f, "%5s | %-44s |", "seq", "  too few repeated sequences to test");
    if (law) {
        p_cell(find(r->tests, r->n_tests, AUDIT_TEST_LAW, -1, "on"), f);
        p_cell(find(r->tests, r->n_tests, AUDIT_TEST_LAW, -1, "off"), f);
        fprintf(f, " (pooled)");
    }
    fputc('\n', f);
    fprintf(f, "\ncontrol (the on engine at T %g) against off: smallest Holm p %.3g (two-sample)",
            (double)a->control_temperature, r->control_min_p_holm);
    if (law) fprintf(f, ", %.3g (law)", r->control_law_p_holm);
    fprintf(f, ": %s\n",
            r->control_rejected ? "rejected below 1e-12, the audit can see a change of this size"
                                : "NOT rejected below 1e-12: too few samples for this audit to mean anything");
    const audit_drafting *d = &a->drafting;
    if (a->source == AUDIT_SOURCE_SPECULA && method_has(&a->spec, METHOD_PROPOSES))
        fprintf(
            f,
            "on arm: %ld of %ld rounds drafted (%.1f %%), %ld of %ld draft tokens accepted; an arm tests its method "
            "when at least %d rounds and %.0f %% of them drafted\n",
            d->drafted_rounds, d->rounds, d->rounds ? 100.0 * d->drafted_rounds / d->rounds : 0.0, d->accepted,
            d->proposed, AUDIT_MIN_DRAFTED_ROUNDS, 100 * AUDIT_MIN_DRAFTED_SHARE);
    if (isfinite(r->detectable_tv))
        fprintf(f,
                "power: at n = %d an arm, a position whose law on and off differ by TV >= %.3f is found with "
                "probability %.0f %% by the two-sample tests; a smaller change may pass them%s\n",
                r->n, r->detectable_tv, 100 * AUDIT_POWER,
                law ? " (the tests against the law see more)" : " (--no-law: nothing else looks)");
    fprintf(f, "verdict: %s: ", audit_verdict_name(r->verdict));
    if (r->verdict == AUDIT_UNTESTED)
        fprintf(f, "the on arm drafted too little: its samples are mostly plain sampling, not the method's\n");
    else if (r->verdict == AUDIT_FAILED)
        fprintf(f, "a test rejects at the family-wise level %g (smallest Holm p %.3g)\n", a->opt.alpha, r->min_p_holm);
    else
        fprintf(f, "no test rejects at the family-wise level %g (smallest Holm p %.3g)%s\n", a->opt.alpha,
                r->min_p_holm, r->verdict == AUDIT_UNDERPOWERED ? ", but the control was not rejected: draw more" : "");
    fprintf(f, "TV(on, off) at each position <= %.3f (all positions together with probability %g)\n", r->max_tv,
            1 - a->opt.delta);
}

static void json_test(const audit_test *x, FILE *f) {
    fprintf(f, "{\"kind\": \"%s\", \"position\": %d",
            x->kind == AUDIT_TEST_POSITION   ? "position"
            : x->kind == AUDIT_TEST_SEQUENCE ? "sequence"
                                             : "law",
            x->position >= 0 ? x->position + 1 : 0);
    if (x->arm) fprintf(f, ", \"arm\": \"%s\"", x->arm);
    if (isinf(x->test.statistic))
        fprintf(f, ", \"G\": null");
    else
        fprintf(f, ", \"G\": %.6g", x->test.statistic);
    fprintf(f, ", \"df\": %d, \"p\": %.6g, \"p_holm\": %.6g, \"impossible\": %lld", x->test.df, x->test.p_value,
            x->p_holm, (long long)x->test.impossible);
    if (x->has_tv) fprintf(f, ", \"tv_upper\": %.6g", x->tv.upper);
    fputc('}', f);
}

void audit_print_json(const audit_args *a, const audit_report *r, FILE *f) {
    const sampler_params *sp = &a->spec.sampling;
    char label[160];
    method_spec_label(&a->spec, label, sizeof label);
    fprintf(f, "{\"engine\": \"%s\", ",
            a->source == AUDIT_SOURCE_SPECULA ? "specula"
            : a->source == AUDIT_SOURCE_CMD   ? "command"
                                              : "files");
    if (a->source == AUDIT_SOURCE_SPECULA)
        fprintf(f, "\"backend\": \"%s\", \"method\": \"%s\", ", backend_name(a->models.backend), label);
    fprintf(f, "\"model\": \"%s\", \"prompt_tokens\": [", a->model_dir);
    for (int i = 0; i < a->n_prompt; i++) fprintf(f, "%s%d", i ? ", " : "", a->prompt[i]);
    fprintf(f, "], \"banned_tokens\": [");
    for (int i = 0; i < a->n_banned; i++) fprintf(f, "%s%d", i ? ", " : "", a->banned[i]);
    fprintf(f,
            "], \"temperature\": %g, \"top_k\": %d, \"top_p\": %g, \"min_p\": %g, \"control_temperature\": %g, "
            "\"n\": %d, \"length\": %d, \"seed\": %llu, \"alpha\": %g, \"delta\": %g, \"draw_seconds\": %.3f, "
            "\"law_seconds\": %.3f,\n \"tests\": [",
            (double)sp->temperature, sp->top_k, (double)sp->top_p, (double)sp->min_p, (double)a->control_temperature,
            r->n, r->L, (unsigned long long)a->spec.seed, a->opt.alpha, a->opt.delta, a->draw_seconds, a->law_seconds);
    for (int i = 0; i < r->n_tests; i++) {
        fprintf(f, "%s\n  ", i ? "," : "");
        json_test(&r->tests[i], f);
    }
    fprintf(f, "],\n \"control_tests\": [");
    for (int i = 0; i < r->n_control; i++) {
        fprintf(f, "%s\n  ", i ? "," : "");
        json_test(&r->control[i], f);
    }
    fprintf(f,
            "],\n \"min_p_holm\": %.6g, \"max_tv_upper\": %.6g, \"control_min_p_holm\": %.6g, "
            "\"control_law_p_holm\": %.6g, \"control_rejected\": %s, ",
            r->min_p_holm, r->max_tv, r->control_min_p_holm, r->control_law_p_holm,
            r->control_rejected ? "true" : "false");
    fprintf(f, isfinite(r->detectable_tv) ? "\"detectable_tv\": %.6g, " : "\"detectable_tv\": null, ",
            r->detectable_tv);
    if (a->source == AUDIT_SOURCE_SPECULA)
        fprintf(f, "\"drafting\": {\"rounds\": %ld, \"drafted_rounds\": %ld, \"proposed\": %ld, \"accepted\": %ld}, ",
                a->drafting.rounds, a->drafting.drafted_rounds, a->drafting.proposed, a->drafting.accepted);
    fprintf(f, "\"verdict\": \"%s\"}\n", r->verdict == AUDIT_FAILED ? "failed" : audit_verdict_name(r->verdict));
}
