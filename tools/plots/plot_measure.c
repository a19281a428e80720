/* plot_measure.c — the measured points: generations with each proposer at each temperature on each prompt,
 * built and run as `specula generate` builds and runs them, every run's accounting kept untouched. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plots.h"
#include "registry.h"

static const char *const method_label[PLOT_METHOD_COUNT] = {"draft", "MTP", "Medusa", NULL};
/* The given series' method is the base's (--method); the others are the proposers a model may carry. */
static const method_desc *const method_of[PLOT_METHOD_COUNT] = {&spec_method, &mtp_method, &medusa_method, NULL};

static const method_desc *series_method(const method_spec *base, plot_method m) {
    return m == PLOT_GIVEN ? base->method : method_of[m];
}

void plots_accounting_add(run_accounting *dst, const run_accounting *src) {
    dst->target_passes += src->target_passes;
    dst->target_positions += src->target_positions;
    dst->committed += src->committed;
    for (int d = 0; d <= ACC_MAX_DEPTH; d++) {
        dst->proposed[d] += src->proposed[d];
        dst->accepted[d] += src->accepted[d];
    }
    dst->accepted_total += src->accepted_total;
    for (int j = 0; j <= ACC_MAX_DEPTH + 1; j++) dst->length_hist[j] += src->length_hist[j];
    dst->rejected_rounds += src->rejected_rounds;
    dst->proposer_steps += src->proposer_steps;
    dst->ttft_s += src->ttft_s;
    dst->decode_s += src->decode_s;
}

void plots_acceptance(const run_accounting *a, int d, double *reach, double *cond) {
    double r = NAN, r_prev = 1.0;
    if (d >= 1 && d <= ACC_MAX_DEPTH && a->proposed[d] > 0) r = (double)a->accepted[d] / a->proposed[d];
    if (d > 1)
        r_prev =
            d - 1 <= ACC_MAX_DEPTH && a->proposed[d - 1] > 0 ? (double)a->accepted[d - 1] / a->proposed[d - 1] : NAN;
    *reach = r;
    *cond = r_prev > 0 ? r / r_prev : NAN;
}

void plots_measurements_free(plot_measurements *m) {
    free(m->points);
    free(m->runs);
    memset(m, 0, sizeof *m);
}

/* The spec of one point: the command's flags for this method at this temperature. */
static int point_spec(const method_spec *base, plot_method method, double temperature, method_spec *out,
                      sp_error *err) {
    method_spec b = *base;
    b.sampling.temperature = (float)temperature;
    return method_spec_for(&b, series_method(base, method), out, err);
}

/* Fills a point's description from its spec (the Medusa tree as the factory resolves it). */
static int describe_point(plot_point *pt, const method_spec *s, const method_parts *parts, sp_error *err) {
    pt->k = s->k;
    pt->nodes = s->k;
    if (s->shape.depth > 0) { /* a tree of drafts (--tree-shape): its depth and its nodes */
        pt->k = s->shape.depth;
        pt->nodes = tree_shape_nodes(&s->shape);
    }
    if (method_has(s, METHOD_OWN_TREE)) {
        medusa_tree tree;
        if (method_spec_tree(s, parts->heads->n_heads, parts->target->cfg->vocab_size, &tree, err)) return -1;
        pt->k = tree.max_depth;
        pt->nodes = tree.n;
    }
    pt->rule = accept_rule_name(s->rule);
    pt->drafts = method_has(s, METHOD_MTP_MODULE) ? mtp_drafts_name(s->drafts) : "-";
    return 0;
}

/* One generation of a point on one prompt, added into the point. */
static int measure_run(const method_parts *parts, method_spec *s, plot_point *pt, const plot_prompts *prompts, int pi,
                       const plot_measure_opts *o, plot_measurements *m, sp_error *err) {
    s->max_tokens = o->tokens;
    s->stop_at_eos = 0;
    s->seed = o->seed + (uint64_t)pi;
    decode_output out;
    if (method_generate(s, parts, prompts->ids[pi], prompts->len[pi], &out, err)) return -1;
    plot_run *run = &m->runs[m->n_runs++];
    run->point = m->n_points;
    run->prompt = pi;
    run->seed = s->seed;
    run->acc = out.acc;
    decode_output_free(&out);
    if (pi == 0)
        accounting_init(&pt->acc, run->acc.method, pt->k, run->acc.target_bytes_per_pass,
                        run->acc.proposer_bytes_per_step);
    plots_accounting_add(&pt->acc, &run->acc);
    pt->runs++;
    if (o->progress)
        fprintf(stderr, "measuring %-6s T=%-4g prompt %d/%d (%s rule%s%s): %.3f tokens/pass, alpha %.3f\n", pt->label,
                pt->temperature, pi + 1, prompts->n, pt->rule, pt->method == PLOT_MTP ? ", drafts " : "",
                pt->method == PLOT_MTP ? pt->drafts : "", accounting_tokens_per_pass(&run->acc),
                accounting_alpha(&run->acc));
    return 0;
}

int plots_measure(const method_parts *parts, const method_spec *base, const plot_prompts *prompts,
                  const plot_measure_opts *o, plot_measurements *m, sp_error *err) {
    memset(m, 0, sizeof *m);
    int available[PLOT_METHOD_COUNT];
    const int given = method_spec_given(base, "--method");
    for (int meth = 0; meth < PLOT_METHOD_COUNT; meth++) {
        method_spec probe = *base;
        probe.method = series_method(base, (plot_method)meth);
        sp_error ignored;
        available[meth] = (meth != PLOT_GIVEN || given) && !method_check_parts(&probe, parts, &ignored);
    }
    int n_methods = 0;
    for (int meth = 0; meth < PLOT_METHOD_COUNT; meth++) n_methods += available[meth];
    if (!n_methods)
        return sp_fail(err,
                       "%s has no MTP module and neither a draft model nor Medusa heads were given: nothing to "
                       "measure",
                       parts->target->path);
    if (prompts->n < 1) return sp_fail(err, "measurement: no prompts");
    m->points = sp_xcalloc((size_t)n_methods * o->n_temperatures, sizeof *m->points, "plot points");
    m->runs = sp_xcalloc((size_t)n_methods * o->n_temperatures * prompts->n, sizeof *m->runs, "plot runs");

    for (int meth = 0; meth < PLOT_METHOD_COUNT; meth++) {
        if (!available[meth]) continue;
        for (int ti = 0; ti < o->n_temperatures; ti++) {
            plot_point *pt = &m->points[m->n_points];
            pt->method = (plot_method)meth;
            pt->label = meth == PLOT_GIVEN ? base->method->name : method_label[meth];
            pt->temperature = o->temperatures[ti];
            method_spec s;
            if (point_spec(base, pt->method, pt->temperature, &s, err) || describe_point(pt, &s, parts, err)) goto fail;
            for (int pi = 0; pi < prompts->n; pi++)
                if (measure_run(parts, &s, pt, prompts, pi, o, m, err)) goto fail;
            m->n_points++;
        }
    }
    return 0;
fail:
    sp_wrap(err, "measuring %s at temperature %g: ", m->points[m->n_points].label, m->points[m->n_points].temperature);
    plots_measurements_free(m);
    return -1;
}
