/* plot_measure.c — the measured points: generations with each proposer at
 * each temperature on each prompt, through the same decode_run as
 * `specula generate`, keeping every run's accounting untouched. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtp.h"
#include "plots.h"
#include "speculative.h"

static const char *const method_label[PLOT_METHOD_COUNT] = {"draft", "MTP"};
static const char *const method_name[PLOT_METHOD_COUNT] = {"spec", "mtp"};

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
    if (d > 1) r_prev = d - 1 <= ACC_MAX_DEPTH && a->proposed[d - 1] > 0
                            ? (double)a->accepted[d - 1] / a->proposed[d - 1]
                            : NAN;
    *reach = r;
    *cond = r_prev > 0 ? r / r_prev : NAN;
}

void plots_measurements_free(plot_measurements *m) {
    free(m->points);
    free(m->runs);
    memset(m, 0, sizeof *m);
}

static int build_proposer(plot_method method, proposer *p, model *target, model *draft, int k,
                          const decode_options *o, sp_error *err) {
    if (method == PLOT_DRAFT) return spec_proposer_build(p, draft, target, k, &o->sampling, o->seed, err);
    return mtp_proposer_build(p, target, k, 0, &o->sampling, o->seed, err); /* argmax drafts, as generate's default */
}

int plots_measure(model *target, model *draft, const plot_prompts *prompts, const plot_measure_opts *o,
                  plot_measurements *m, sp_error *err) {
    memset(m, 0, sizeof *m);
    int available[PLOT_METHOD_COUNT] = {draft != NULL, target->w.has_mtp};
    int n_methods = available[PLOT_DRAFT] + available[PLOT_MTP];
    if (!n_methods)
        return sp_fail(err, "%s has no MTP module and no draft model was given: nothing to measure", target->path);
    if (prompts->n < 1) return sp_fail(err, "measurement: no prompts");
    m->points = sp_xcalloc((size_t)n_methods * o->n_temperatures, sizeof *m->points, "plot points");
    m->runs = sp_xcalloc((size_t)n_methods * o->n_temperatures * prompts->n, sizeof *m->runs, "plot runs");

    for (int meth = 0; meth < PLOT_METHOD_COUNT; meth++) {
        if (!available[meth]) continue;
        for (int ti = 0; ti < o->n_temperatures; ti++) {
            plot_point *pt = &m->points[m->n_points];
            pt->method = (plot_method)meth;
            pt->label = method_label[meth];
            pt->temperature = o->temperatures[ti];
            pt->k = o->k;
            for (int pi = 0; pi < prompts->n; pi++) {
                decode_options opt = decode_defaults();
                opt.sampling.temperature = (float)pt->temperature;
                opt.max_tokens = o->tokens;
                opt.stop_at_eos = 0;
                opt.seed = o->seed + (uint64_t)pi;
                proposer p;
                if (build_proposer(pt->method, &p, target, draft, o->k, &opt, err)) goto fail;
                decode_output out;
                int rc = decode_run(target, &p, method_name[meth], o->k, prompts->ids[pi], prompts->len[pi], &opt,
                                    &out, err);
                p.release(&p);
                if (rc) goto fail;
                plot_run *run = &m->runs[m->n_runs++];
                run->point = m->n_points;
                run->prompt = pi;
                run->seed = opt.seed;
                run->acc = out.acc;
                run->acc.method = method_name[meth];
                decode_output_free(&out);
                if (pi == 0) accounting_init(&pt->acc, method_name[meth], o->k, run->acc.target_bytes_per_pass,
                                             run->acc.proposer_bytes_per_step);
                plots_accounting_add(&pt->acc, &run->acc);
                pt->runs++;
                if (o->progress)
                    fprintf(stderr, "measuring %-5s T=%-4g prompt %d/%d: %.3f tokens/pass, alpha %.3f\n", pt->label,
                            pt->temperature, pi + 1, prompts->n, accounting_tokens_per_pass(&run->acc),
                            accounting_alpha(&run->acc));
            }
            m->n_points++;
        }
    }
    return 0;
fail:
    sp_wrap(err, "measuring %s at temperature %g: ", m->points[m->n_points].label, m->points[m->n_points].temperature);
    plots_measurements_free(m);
    return -1;
}
