/* bench_model.c — the cost model beside `specula bench`'s runs: from the costs measured apart (bench_cost.c) and
 * a row's α̂ it predicts the speed-up over plain decoding. Where a run is more than 15 % off its prediction, the
 * split of its time (bench_split.c) says where. */
#include <math.h>
#include <stdio.h>

#include "bench.h"

/* t(m) for a chain of m nodes: measured, or between the two measured sizes around it (NAN beyond them). */
static method_cost pass_at(const void *ctx, int m) {
    const bench_costs *c = ctx;
    for (int i = 0; i < c->n_sizes; i++) {
        if (c->m[i] == m) return (method_cost){c->pass_ms[i], c->pass_ratio[i]};
        if (i > 0 && c->m[i - 1] < m && m < c->m[i]) {
            const double w = (double)(m - c->m[i - 1]) / (c->m[i] - c->m[i - 1]);
            return (method_cost){(1 - w) * c->pass_ms[i - 1] + w * c->pass_ms[i],
                                 (1 - w) * c->pass_ratio[i - 1] + w * c->pass_ratio[i]};
        }
    }
    return (method_cost){NAN, NAN};
}

/* S = E / (t(m)/t(1) + P/t(1)): m the nodes one round verifies, P the proposer's time per round, E the tokens
 * per pass — each from the method's own cost model (registry.h: method_round_model). With t(m) = t(1) this is
 * spec_speedup (tools/analysis/spec_model.h). Here t(m) is measured, because what a verify of k + 1 positions
 * costs beside a decode step is the question. */
int bench_model_row(const bench_costs *c, const bench_row *row, bench_model *out) {
    if (c->n_sizes < 1) return -1;
    const method_costs mc = {pass_at,
                             c,
                             {c->draft_step_ms, c->draft_ratio},
                             {c->mtp_step_ms, c->mtp_ratio},
                             {c->medusa_round_ms, c->medusa_round_ratio},
                             {c->medusa_pass_ms, c->medusa_pass_ratio},
                             c->medusa_nodes};
    method_round r;
    out->t1_ms = c->pass_ms[0];
    if (method_round_model(&row->spec, &row->pooled, &mc, &r)) return -1;
    out->tokens = r.tokens;
    out->alpha = r.alpha;
    out->m = r.m;
    out->pass_ms = r.pass.ms, out->r = r.pass.ratio;
    out->prop_ms = r.proposer.ms, out->c = r.proposer.ratio;
    out->speedup = out->tokens / (out->r + out->c);
    return isfinite(out->speedup) ? 0 : -1;
}

void bench_costs_print(const bench_costs *c, const char *backend) {
    if (c->n_sizes < 1) return;
    printf("\npass cost, %s backend (median of %d reps between the runs): verify an m-node chain, commit all of it\n",
           backend, c->reps);
    printf("%8s %10s %8s   (/ m=1: the median of each rep's own ratio)\n", "m", "ms/pass", "/ m=1");
    for (int i = 0; i < c->n_sizes; i++)
        printf("%8d %10.4f %8.2f%s\n", c->m[i], c->pass_ms[i], c->pass_ratio[i],
               c->m[i] == c->k + 1    ? "   <- k + 1: one round of spec or MTP"
               : c->m[i] == c->tree_m ? "   <- the draft tree's nodes (timed as a chain)"
                                      : "");
    if (c->medusa_nodes)
        printf("%8d %10.4f %8.2f   <- the Medusa heads' tree (not a chain)\n", c->medusa_nodes, c->medusa_pass_ms,
               c->medusa_pass_ratio);
    const char *names[3] = {"draft model step, 1 position", "MTP module step, 1 position",
                            "Medusa heads, 1 round's proposal"};
    const double ms[3] = {c->draft_step_ms, c->mtp_step_ms, c->medusa_round_ms};
    const double ratio[3] = {c->draft_ratio, c->mtp_ratio, c->medusa_round_ratio};
    printf("%-34s %10s %8s\n", "proposer", "ms", "/ m=1");
    for (int i = 0; i < 3; i++)
        if (isfinite(ms[i])) printf("%-34s %10.4f %8.3f\n", names[i], ms[i], ratio[i]);
}

/* "%.3f", or "-" where there is no figure (α of plain decoding and of a tree). */
static const char *fmt3(char *buf, size_t size, double x) {
    snprintf(buf, size, isfinite(x) ? "%.3f" : "-", x);
    return buf;
}

/* Why a flagged row is off: to first order, measured / predicted − 1 is the
 * sum of (plain decoding's run time per token / t(1) − 1) and, for each part
 * of the row's time, −(run − model) / the row's modelled time per token. The
 * line prints each term beside the figures it comes from, and names the one
 * that moves the ratio most in the direction of the gap. */
static void explain(const bench_row *row, const bench_model *m, const bench_row *plain, const bench_model *pm,
                    double gap) {
    const bench_per_token run = row->ms, base = plain->ms;
    const double model_total = (m->pass_ms + m->prop_ms) / m->tokens;
    const long rounds = row->pooled.target_passes;
    const double tpp = accounting_tokens_per_pass(&row->pooled); /* ms per token × tokens per round: ms per round */
    const double term[4] = {base.total / pm->t1_ms - 1, -(run.pass - m->pass_ms / m->tokens) / model_total,
                            -(run.proposer - m->prop_ms / m->tokens) / model_total,
                            -(run.prefill + run.other) / model_total};
    static const char *const part[4] = {"plain decoding's own run", "the passes", "the proposer",
                                        "the work outside the models"};
    char k[16] = "";
    if (method_has(&row->spec, METHOD_TREES) && row->spec.shape.depth > 0)
        snprintf(k, sizeof k, ", tree of %d", tree_shape_nodes(&row->spec.shape));
    else if (method_has(&row->spec, METHOD_CHAIN))
        snprintf(k, sizeof k, ", k %d", row->spec.k);
    int big = 0;
    for (int i = 1; i < 4; i++)
        if (term[i] * (gap < 0 ? -1 : 1) > term[big] * (gap < 0 ? -1 : 1)) big = i;
    printf("  %s %+.0f %%: plain decoding %+.0f %% (%.4f ms/token in its runs, t(1) %.4f); passes %+.0f %% (%.4f "
           "ms per pass in the runs, median %.4f, %.4f apart; %.3f tokens per pass, E %.3f); proposer %+.0f %% (%.4f "
           "ms per round, %.4f modelled; %.2f steps per round%s); outside the models %+.0f %% (%.4f ms/token). "
           "Most: %s.\n",
           method_name(&row->spec), 100 * gap, 100 * term[0], base.total, pm->t1_ms, 100 * term[1], run.pass * tpp,
           run.pass_at_median * tpp, m->pass_ms, tpp, m->tokens, 100 * term[2], run.proposer * tpp, m->prop_ms,
           rounds ? (double)row->pooled.proposer_steps / rounds : NAN, k, 100 * term[3], run.prefill + run.other,
           part[big]);
}

void bench_model_print(const bench_costs *c, const bench_row *rows, const int *ok, int n) {
    bench_model m[BENCH_MAX_ROWS];
    int have[BENCH_MAX_ROWS] = {0}, flagged = 0;
    for (int i = 0; i < n && i < BENCH_MAX_ROWS; i++) have[i] = ok[i] && bench_model_row(c, &rows[i], &m[i]) == 0;
    if (!have[0]) return; /* no baseline measured in this run */
    printf("\ncost model: predicted = E / (t(m)/t(1) + P/t(1)); E = E(alpha, k) for a chain, the measured tokens per "
           "pass\nfor Medusa (a tree) and lookup (rounds of k drafts or none); m the nodes a round verifies (lookup: "
           "t(m) mixes\nt(k + 1) and t(1) as its rounds did); P the proposer per round (k steps; the heads once; a "
           "lookup 0)\n");
    printf("%-8s %7s %7s %5s %10s %8s %10s %9s %7s\n", "method", "alpha", "E", "m", "t(m)/t(1)", "P/t(1)", "predicted",
           "measured", "gap");
    double gap[BENCH_MAX_ROWS] = {0};
    for (int i = 0; i < n; i++) {
        if (!have[i]) continue;
        const double measured = rows[i].median_tps / rows[0].median_tps;
        gap[i] = measured / m[i].speedup - 1;
        const int flag = i > 0 && fabs(gap[i]) > BENCH_GAP_FLAG;
        flagged += flag;
        char alpha[16];
        printf("%-8s %7s %7.3f %5d %10.3f %8.3f %9.2fx %8.2fx %+6.0f%%%s\n", method_name(&rows[i].spec),
               fmt3(alpha, sizeof alpha, m[i].alpha), m[i].tokens, m[i].m, m[i].r, m[i].c, m[i].speedup, measured,
               100 * gap[i], flag ? " *" : "");
    }
    printf("\nms per committed token, the model's and the runs' (medians over the runs; other: acceptance, trees, "
           "build)\n");
    printf("%-8s %29s %19s %9s %9s %19s\n", "", "passes", "proposer", "", "", "total");
    printf("%-8s %9s %9s %9s %9s %9s %9s %9s %9s %9s\n", "method", "model", "run", "median", "model", "run", "prefill",
           "other", "model", "run");
    for (int i = 0; i < n; i++) {
        if (!have[i]) continue;
        const bench_per_token r = rows[i].ms;
        printf("%-8s %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f\n", method_name(&rows[i].spec),
               m[i].pass_ms / m[i].tokens, r.pass, r.pass_at_median, m[i].prop_ms / m[i].tokens, r.proposer, r.prefill,
               r.other, (m[i].pass_ms + m[i].prop_ms) / m[i].tokens, r.total);
    }
    printf("median: as if every pass of a run had taken that run's median pass (stalls such as another process\n"
           "taking the core count in \"run\", not here)\n");
    if (flagged)
        printf("* measured more than %.0f %% off the prediction; the gap, term by term (to first order, from the "
               "runs' medians):\n",
               100 * BENCH_GAP_FLAG);
    for (int i = 1; i < n; i++)
        if (have[i] && fabs(gap[i]) > BENCH_GAP_FLAG) explain(&rows[i], &m[i], &rows[0], &m[0], gap[i]);
}

static void json_number(const char *key, double x) { printf(isfinite(x) ? "\"%s\": %.6g" : "\"%s\": null", key, x); }

void bench_costs_json(const bench_costs *c) {
    printf("\"pass_costs\": {\"reps\": %d, \"k\": %d, \"passes\": [", c->reps, c->k);
    for (int i = 0; i < c->n_sizes; i++)
        printf("%s{\"m\": %d, \"ms\": %.6g, \"ratio\": %.6g}", i ? ", " : "", c->m[i], c->pass_ms[i], c->pass_ratio[i]);
    printf("], ");
    json_number("draft_step_ms", c->draft_step_ms);
    printf(", ");
    json_number("mtp_step_ms", c->mtp_step_ms);
    printf(", ");
    json_number("medusa_round_ms", c->medusa_round_ms);
    printf(", \"medusa_tree_nodes\": %d, ", c->medusa_nodes);
    json_number("medusa_pass_ms", c->medusa_pass_ms);
    const char *keys[4] = {"draft_step_ratio", "mtp_step_ratio", "medusa_round_ratio", "medusa_pass_ratio"};
    const double v[4] = {c->draft_ratio, c->mtp_ratio, c->medusa_round_ratio, c->medusa_pass_ratio};
    for (int i = 0; i < 4; i++) printf(", "), json_number(keys[i], v[i]);
    printf(", \"position\": %d}, ", c->position);
}

void bench_row_json(const bench_costs *c, const bench_row *row, const bench_row *plain) {
    bench_model m;
    const int have = bench_model_row(c, row, &m) == 0;
    const bench_per_token r = row->ms;
    printf(", ");
    json_number("predicted_speedup", have ? m.speedup : NAN);
    printf(", ");
    json_number("measured_speedup", plain ? row->median_tps / plain->median_tps : NAN);
    printf(", ");
    json_number("alpha", accounting_alpha(&row->pooled));
    printf(", ");
    json_number("verify_nodes", have ? m.m : NAN);
    const char *keys[5] = {"pass_ms_per_token", "pass_at_median_ms_per_token", "proposer_ms_per_token",
                           "prefill_ms_per_token", "other_ms_per_token"};
    const double v[5] = {r.pass, r.pass_at_median, r.proposer, r.prefill, r.other};
    for (int i = 0; i < 5; i++) printf(", "), json_number(keys[i], v[i]);
}
