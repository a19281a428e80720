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

static const char *const method_label[PLOT_METHOD_COUNT] = {"draft", "MTP", "Medusa"};
static const char *const method_name[PLOT_METHOD_COUNT] = {"spec", "mtp", "medusa"};

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

/* Builds the proposer of `method` and sets the acceptance rule it runs under. */
static int build_proposer(plot_method method, proposer *p, model *target, const plot_proposers *pp,
                          const medusa_tree *tree, int k, decode_options *o, sp_error *err) {
    if (method == PLOT_DRAFT) return spec_proposer_build(p, pp->draft, target, k, &o->sampling, o->seed, err);
    if (method == PLOT_MTP) /* argmax drafts for greedy decoding; sampled from its q when sampling, as p is */
        return mtp_proposer_build(p, target, k, o->sampling.temperature > 0, &o->sampling, o->seed, err);
    children_kind kind = o->sampling.temperature == 0 ? CHILDREN_TOP_RANKS : CHILDREN_NO_REPLACEMENT;
    o->rule = o->sampling.temperature == 0 ? RULE_GREEDY : RULE_EXACT;
    return medusa_proposer_build(p, pp->medusa, target, tree, kind, &o->sampling, o->seed, err);
}

int plots_measure(model *target, const plot_proposers *pp, const plot_prompts *prompts, const plot_measure_opts *o,
                  plot_measurements *m, sp_error *err) {
    memset(m, 0, sizeof *m);
    int available[PLOT_METHOD_COUNT] = {pp->draft != NULL, target->w.has_mtp, pp->medusa != NULL};
    int n_methods = available[PLOT_DRAFT] + available[PLOT_MTP] + available[PLOT_MEDUSA];
    if (!n_methods)
        return sp_fail(err,
                       "%s has no MTP module and neither a draft model nor Medusa heads were given: nothing to "
                       "measure",
                       target->path);
    if (prompts->n < 1) return sp_fail(err, "measurement: no prompts");
    medusa_tree tree;
    memset(&tree, 0, sizeof tree);
    if (pp->medusa) {
        if (pp->tree)
            tree = *pp->tree;
        else
            medusa_tree_default(&tree, pp->medusa->n_heads);
        if (medusa_tree_validate(&tree, pp->medusa->n_heads, target->cfg.vocab_size, "the Medusa tree", err)) return -1;
    }
    m->points = sp_xcalloc((size_t)n_methods * o->n_temperatures, sizeof *m->points, "plot points");
    m->runs = sp_xcalloc((size_t)n_methods * o->n_temperatures * prompts->n, sizeof *m->runs, "plot runs");

    for (int meth = 0; meth < PLOT_METHOD_COUNT; meth++) {
        if (!available[meth]) continue;
        for (int ti = 0; ti < o->n_temperatures; ti++) {
            plot_point *pt = &m->points[m->n_points];
            pt->method = (plot_method)meth;
            pt->label = method_label[meth];
            pt->temperature = o->temperatures[ti];
            pt->k = meth == PLOT_MEDUSA ? tree.max_depth : o->k;
            pt->nodes = meth == PLOT_MEDUSA ? tree.n : o->k;
            pt->rule = meth == PLOT_MEDUSA && pt->temperature == 0 ? "greedy" : "exact";
            for (int pi = 0; pi < prompts->n; pi++) {
                decode_options opt = decode_defaults();
                opt.sampling.temperature = (float)pt->temperature;
                opt.max_tokens = o->tokens;
                opt.stop_at_eos = 0;
                opt.seed = o->seed + (uint64_t)pi;
                proposer p;
                if (build_proposer(pt->method, &p, target, pp, &tree, pt->k, &opt, err)) goto fail;
                decode_output out;
                int rc = decode_run(target, &p, method_name[meth], pt->k, prompts->ids[pi], prompts->len[pi], &opt,
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
                if (pi == 0)
                    accounting_init(&pt->acc, method_name[meth], pt->k, run->acc.target_bytes_per_pass,
                                    run->acc.proposer_bytes_per_step);
                plots_accounting_add(&pt->acc, &run->acc);
                pt->runs++;
                if (o->progress)
                    fprintf(stderr, "measuring %-6s T=%-4g prompt %d/%d: %.3f tokens/pass, alpha %.3f\n", pt->label,
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
