/* plot_costs.c — (d) weight bytes read per committed token against k, for
 * the embedded pair and the large model with its MTP layer, and (e) the
 * roofline model of the speed-up against batch size. Bytes come from
 * footprint.h through the caller; formulas from spec_model.h, roofline.h. */
#include <math.h>
#include <string.h>

#include "plot_internal.h"
#include "spec_model.h"

#define BYTES_K_MAX 8
static const double bytes_alphas[] = {0.6, 0.8, 0.9};
#define N_BYTES_ALPHAS (int)(sizeof bytes_alphas / sizeof bytes_alphas[0])

static const int batch_ks[] = {1, 2, 4};
#define N_BATCH_KS (int)(sizeof batch_ks / sizeof batch_ks[0])
#define BATCH_MAX 512

/* One column per α: (target + k·proposer) / E(α,k), or nan when absent. */
static void bytes_columns(FILE *f, double target, double step, int k) {
    for (int a = 0; a < N_BYTES_ALPHAS; a++) {
        if (target > 0 && step > 0)
            fprintf(f, " %.10g", spec_bytes_per_token(target, step, bytes_alphas[a], k));
        else
            fprintf(f, " nan");
    }
}

/* The series of one proposer: column `first` onwards, one line per α,
 * lighter for lower α. shades[N_BYTES_ALPHAS]. */
static void gp_bytes_series(FILE *f, int first, const char *who, const char *const *shades, int dash, double scale,
                            int *n_series) {
    for (int a = 0; a < N_BYTES_ALPHAS; a++)
        fprintf(f,
                "%s    'bytes_per_token.dat' using 1:($%d/%g) with linespoints lw 2 dt %d pt 7 ps 0.5 lc rgb '%s' "
                "title '%s, α = %g'",
                (*n_series)++ ? ", \\\n" : "", first + a, scale, dash, shades[a], who, bytes_alphas[a]);
}

static const char *const draft_shades[N_BYTES_ALPHAS] = {"#f08080", "#d62728", "#7f0000"};
static const char *const mtp_shades[N_BYTES_ALPHAS] = {"#fdbe85", "#fd8d3c", "#a63603"};

int plot_write_bytes(const char *dir, const plot_theory *t, const plot_measurements *m, sp_error *err) {
    atomic_file af;
    FILE *f = plot_open(&af, dir, "bytes_per_token.dat", err);
    if (!f) return -1;
    const int c_draft = 2, c_mtp = 2 + N_BYTES_ALPHAS, c_big = 2 + 2 * N_BYTES_ALPHAS;
    fprintf(f,
            "# bytes_per_token.dat — weight bytes read per committed token at batch 1:\n"
            "#   B(alpha,k) = (target_bytes + k * proposer_bytes) / E(alpha,k)\n"
            "# assuming one target pass per round that reads every target weight once, k proposer steps\n"
            "# per round that each read the proposer's weights once, and no KV or DeltaNet-state traffic.\n"
            "# k = 0 is plain decoding. Bytes at each checkpoint's storage dtype; nan = not available.\n"
            "# pair: %s: target %.10g, draft %.10g, MTP step %.10g bytes\n"
            "# big:  %s: target %.10g, MTP step %.10g bytes\n"
            "# columns: 1 k",
            t->pair_name ? t->pair_name : "(none)", t->pair_target_bytes, t->pair_draft_bytes, t->pair_mtp_bytes,
            t->big_name ? t->big_name : "(none)", t->big_target_bytes, t->big_mtp_bytes);
    for (int a = 0; a < N_BYTES_ALPHAS; a++) fprintf(f, "  %d pair_draft(alpha=%g)", c_draft + a, bytes_alphas[a]);
    for (int a = 0; a < N_BYTES_ALPHAS; a++) fprintf(f, "  %d pair_mtp(alpha=%g)", c_mtp + a, bytes_alphas[a]);
    for (int a = 0; a < N_BYTES_ALPHAS; a++) fprintf(f, "  %d big_mtp(alpha=%g)", c_big + a, bytes_alphas[a]);
    fputc('\n', f);
    for (int k = 0; k <= BYTES_K_MAX; k++) {
        fprintf(f, "%d", k);
        bytes_columns(f, t->pair_target_bytes, t->pair_draft_bytes, k);
        bytes_columns(f, t->pair_target_bytes, t->pair_mtp_bytes, k);
        bytes_columns(f, t->big_target_bytes, t->big_mtp_bytes, k);
        fputc('\n', f);
    }
    if (plot_close(&af, err)) return -1;

    const int have_pair = t->pair_target_bytes > 0 && (t->pair_draft_bytes > 0 || t->pair_mtp_bytes > 0);
    const int have_big = t->big_target_bytes > 0 && t->big_mtp_bytes > 0;
    if (!(f = plot_open(&af, dir, "bytes_per_token.gp", err))) return -1;
    plot_gp_head(f, "bytes_per_token",
                 "(d) weight bytes read per committed token against k, batch 1: the embedded pair\n"
                 "# (MB) and the large model with its MTP layer (GB), for a few acceptance rates α.",
                 "bytes_per_token.dat, measured.dat", have_pair && have_big ? 1400 : 1000, 640);
    if (have_pair && have_big)
        fprintf(f, "set multiplot layout 1,2 title \"Weight bytes read per committed token, batch 1: "
                   "(target + k·proposer) / E(α,k)\" font ',13'\n");
    fprintf(f,
            "set xlabel \"draft depth k (k = 0: plain decoding)\"\n"
            "set xrange [-0.2:%d.2]\n"
            "set xtics 1\n"
            "set key top right box opaque font ',10' maxrows 12\n",
            BYTES_K_MAX);
    int n_series = 0;
    if (have_pair) {
        fprintf(f,
                "set title \"%s%s\"\n"
                "set ylabel \"weight bytes per committed token (MB/token, 10^6 bytes)\"\n"
                "set yrange [0:*]\n"
                "set offsets 0, 0, graph %s, 0\n"
                "plot \\\n",
                t->pair_name, have_big ? "" : ": (target + k·proposer) / E(α,k)", m && m->n_points ? "0.9" : "0.45");
        if (t->pair_draft_bytes > 0) gp_bytes_series(f, c_draft, "draft", draft_shades, 1, 1e6, &n_series);
        if (t->pair_mtp_bytes > 0) gp_bytes_series(f, c_mtp, "MTP", mtp_shades, 2, 1e6, &n_series);
        int seen[PLOT_METHOD_COUNT] = {0};
        for (int i = 0; m && i < m->n_points; i++) {
            const plot_point *p = &m->points[i];
            if (seen[p->method]++) continue;
            /* methods measured at the same k sit side by side, not on top of each other */
            double dx = 0.12 * ((int)p->method - 1);
            fprintf(f,
                    ", \\\n    'measured.dat' using ($4%+.2f):(strcol(2) eq '%s' ? $13/1e6 : 1/0) with points pt %d "
                    "ps 1.5 lc rgb '%s' title 'measured %s, %s = %d'",
                    dx, p->acc.method, plot_method_point[p->method], plot_method_colour[p->method], p->label,
                    p->method == PLOT_MEDUSA ? "tree depth" : "k", p->k);
            if (p->method != PLOT_MEDUSA) /* the chain formula at the run's own α̂ */
                fprintf(f,
                        ", \\\n    'measured.dat' using ($4%+.2f):(strcol(2) eq '%s' ? $18/1e6 : 1/0) with points "
                        "pt %d ps 1.8 lw 1.5 lc rgb '%s' title '  formula at its α̂'",
                        dx, p->acc.method, plot_method_point[p->method] - 1, plot_method_colour[p->method]);
        }
        fputc('\n', f);
    }
    if (have_big) {
        n_series = 0;
        fprintf(f,
                "set title \"%s%s\"\n"
                "set ylabel \"weight bytes per committed token (GB/token, 10^9 bytes)\"\n"
                "set yrange [0:*]\n"
                "set offsets 0, 0, graph 0.25, 0\n"
                "plot \\\n",
                t->big_name, have_pair ? "" : ": (target + k·MTP step) / E(α,k)");
        gp_bytes_series(f, c_big, "MTP", mtp_shades, 2, 1e9, &n_series);
        fputc('\n', f);
    }
    if (have_pair && have_big) fprintf(f, "unset multiplot\n");
    if (!have_pair && !have_big) fprintf(f, "print 'bytes_per_token: no model figures were given'\n");
    return plot_close(&af, err);
}

/* ---- (e) speed-up against batch size: a model ------------------------------------ */

int plot_write_batch(const char *dir, const plot_theory *t, sp_error *err) {
    const roofline_device *d = &t->device;
    const roofline_workload *w = &t->big_workload;
    const roofline_workload once = roofline_single_state_write(w);
    const int k_fit = batch_ks[N_BATCH_KS - 1];
    const int fit_plain = roofline_max_batch(d, w, 0), fit_spec = roofline_max_batch(d, w, k_fit);
    /* the largest batch at which the curves of depth k hold: plain decoding and k's slots both fit */
    int fit_k[N_BATCH_KS];
    for (int j = 0; j < N_BATCH_KS; j++) {
        const int fk = roofline_max_batch(d, w, batch_ks[j]);
        fit_k[j] = fk < fit_plain ? fk : fit_plain;
    }
    atomic_file af;
    FILE *f = plot_open(&af, dir, "speedup_batch.dat", err);
    if (!f) return -1;
    fprintf(f,
            "# speedup_batch.dat — A MODEL, NOT A MEASUREMENT: speed-up of MTP speculation over plain\n"
            "# decoding at batch b, from a roofline: every pass takes max(bytes / bandwidth, FLOPs / peak).\n"
            "#   plain: one target pass of 1 position per token;  spec: per round one target pass over k+1\n"
            "#   positions and k MTP steps, committing E(alpha,k) tokens per sequence;\n"
            "#   S(b) = E(alpha,k) * t_target(b,1) / (t_target(b,k+1) + k * t_mtp(b,1)).\n"
            "# model: %s;  alpha = %g (assumed);  context %d positions (assumed)\n"
            "# device (assumed): %s: bandwidth %.4g B/s, peak %.4g FLOP/s, memory %.4g B\n"
            "# target pass: weights %.6g B, %.6g FLOP per position (2 per weight + attention over the context),\n"
            "#   %.6g B per sequence (KV read + DeltaNet state read),\n"
            "#   %.6g B per sequence and verified position (its DeltaNet state slot written)\n"
            "# MTP step: weights %.6g B, %.6g FLOP per position, %.6g B per sequence (its KV read)\n"
            "# slots: the engine's design, one state slot written per verified position (k+1 per round);\n"
            "# once: an engine that writes only the final state (bytes of a verify pass = a plain pass).\n"
            "# fits in memory (weights %.4g B, then KV %.4g B + states per sequence): plain b <= %d, k = %d b <= %d\n"
            "# b runs over 2^(i/4), rounded, and the batches at which memory is full; the plot draws the\n"
            "# curves of depth k only up to the last batch at which plain decoding and k's slots both fit\n"
            "# (the rows beyond are the model's values for more memory than the device has).\n"
            "# columns: 1 b  2 t_plain_pass_s  3 plain_tokens_per_s (all sequences)",
            t->big_name ? t->big_name : "?", t->batch_alpha, w->context, d->name, d->bandwidth, d->peak_flops,
            d->memory, w->target.weight_bytes, w->target.flops_per_position, w->target.seq_bytes,
            w->target.state_write_bytes, w->proposer.weight_bytes, w->proposer.flops_per_position,
            w->proposer.seq_bytes, w->weight_memory, w->kv_bytes_per_sequence, fit_plain, k_fit, fit_spec);
    for (int i = 0; i < N_BATCH_KS; i++) fprintf(f, "  %d S_slots(k=%d)", 4 + i, batch_ks[i]);
    for (int i = 0; i < N_BATCH_KS; i++) fprintf(f, "  %d S_once(k=%d)", 4 + N_BATCH_KS + i, batch_ks[i]);
    fputc('\n', f);
    int bs[4 * 10 + 1 + N_BATCH_KS + 1], n_b = 0; /* b = 2^(i/4), rounded, and the memory-full batches */
    for (int i = 0; i <= 4 * 10; i++) bs[n_b++] = (int)lround(pow(2.0, i / 4.0));
    for (int j = 0; j < N_BATCH_KS; j++) bs[n_b++] = fit_k[j];
    bs[n_b++] = fit_plain;
    for (int i = 1; i < n_b; i++) /* insertion sort: a few dozen values */
        for (int j = i; j > 0 && bs[j - 1] > bs[j]; j--) {
            const int tmp = bs[j];
            bs[j] = bs[j - 1], bs[j - 1] = tmp;
        }
    int last = 0;
    for (int i = 0; i < n_b; i++) { /* each once */
        const int b = bs[i];
        if (b < 1 || b == last || b > BATCH_MAX) continue;
        last = b;
        double tp = roofline_pass_time(d, &w->target, b, 1);
        fprintf(f, "%d %.10g %.10g", b, tp, b / tp);
        for (int j = 0; j < N_BATCH_KS; j++)
            fprintf(f, " %.10g", roofline_speedup(d, w, b, t->batch_alpha, batch_ks[j]));
        for (int j = 0; j < N_BATCH_KS; j++)
            fprintf(f, " %.10g", roofline_speedup(d, &once, b, t->batch_alpha, batch_ks[j]));
        fputc('\n', f);
    }
    if (plot_close(&af, err)) return -1;

    if (!(f = plot_open(&af, dir, "speedup_batch.gp", err))) return -1;
    plot_gp_head(f, "speedup_batch",
                 "(e) a roofline MODEL (not a measurement) of the MTP speed-up against batch size;\n"
                 "# the device figures and α are assumptions, written in the data file's header.",
                 "speedup_batch.dat", 1000, 680);
    fprintf(f,
            "set title \"MODEL, not a measurement: MTP speed-up against batch size, %s\\n"
            "{/*0.85 roofline: pass time = max(bytes / bandwidth, FLOPs / peak); assumed %.1f TB/s, %.0f TFLOP/s, "
            "%.0f GB (H200 datasheet); α = %g, context %d}\"\n"
            "set xlabel \"batch size b (sequences decoded together)\"\n"
            "set ylabel \"speed-up over plain decoding at the same batch (×)\"\n"
            "set logscale x 2\n"
            "set xrange [1:%d]\n"
            "set yrange [0:*]\n"
            "set key bottom left box opaque font ',10'\n"
            "set offsets 0, 0, graph 0.5, 0\n"
            "set arrow from 1,1 to %d,1 nohead dt 3 lc rgb '#888888'\n",
            t->big_name ? t->big_name : "", d->bandwidth / 1e12, d->peak_flops / 1e12, d->memory / 1e9, t->batch_alpha,
            w->context, BATCH_MAX, BATCH_MAX);
    if (fit_plain >= 1 && fit_plain <= BATCH_MAX)
        fprintf(f,
                "set arrow from %d, graph 0 to %d, graph 1 nohead lw 1.5 dt 2 lc rgb '#555555'\n"
                "set label 'plain: %.0f GB full at b = %d' at %d, graph 0.98 right rotate by 90 "
                "offset char -1.2,0 font ',9' tc rgb '#555555'\n",
                fit_plain, fit_plain, d->memory / 1e9, fit_plain, fit_plain);
    for (int j = 0; j < N_BATCH_KS; j++) /* one line per depth, in its curves' colour */
        if (fit_k[j] >= 1 && fit_k[j] <= BATCH_MAX && fit_k[j] < fit_plain)
            fprintf(f,
                    "set arrow from %d, graph 0 to %d, graph 1 nohead lw 1.5 dt 2 lc %d\n"
                    "set label 'k = %d, %d slots: full at b = %d' at %d, graph 0.98 right rotate by 90 "
                    "offset char -1.2,0 font ',9' tc lt %d\n",
                    fit_k[j], fit_k[j], j + 1, batch_ks[j], batch_ks[j] + 1, fit_k[j], fit_k[j], j + 1);
    fprintf(f, "# every curve stops where memory is full for it (beyond, the model assumes memory the device lacks)\n"
               "plot \\\n");
    for (int j = 0; j < N_BATCH_KS; j++)
        fprintf(f,
                "    'speedup_batch.dat' using 1:($1 <= %d ? $%d : 1/0) with linespoints lw 2 pt 7 ps 0.5 lc %d "
                "title 'k = %d, a state slot written per verified position', \\\n",
                fit_k[j], 4 + j, j + 1, batch_ks[j]);
    for (int j = 0; j < N_BATCH_KS; j++)
        fprintf(
            f,
            "    'speedup_batch.dat' using 1:($1 <= %d ? $%d : 1/0) with lines lw 2 dt 2 lc %d title 'k = %d, final "
            "state written once'%s\n",
            fit_k[j], 4 + N_BATCH_KS + j, j + 1, batch_ks[j], j + 1 < N_BATCH_KS ? ", \\" : "");
    return plot_close(&af, err);
}
