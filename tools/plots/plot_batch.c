/* plot_batch.c — (e) the speed-up of MTP speculation against batch size: a roofline model of the large model on
 * an H200 and, when the caller measured them, the CPU engine's points with the embedded model in a panel of their
 * own (another machine and model, labelled so). */
#include <math.h>
#include <string.h>

#include "plot_internal.h"

static const int batch_ks[] = {1, 2, 4};
#define N_BATCH_KS (int)(sizeof batch_ks / sizeof batch_ks[0])
#define BATCH_MAX 512

/* The gnuplot colour of depth k: the model's k = 1, 2, 4 are 1, 2, 3; any other k takes 3 + its value. */
static int k_colour(int k) { return k == 1 ? 1 : k == 2 ? 2 : k == 4 ? 3 : 3 + k; }

/* The measured points' data file: per batch size, plain decoding's rate, then per k MTP's rate, tokens per
 * pass and speed-up over plain decoding at the same B. */
static int write_measured(const char *dir, const plot_batch_points *p, sp_error *err) {
    atomic_file af;
    FILE *f = plot_open(&af, dir, "speedup_batch_measured.dat", err);
    if (!f) return -1;
    fprintf(f,
            "# speedup_batch_measured.dat — MEASURED, not a model: the speed-up of greedy MTP decoding over plain\n"
            "# greedy decoding with B sequences decoded together, every round one verify pass over all of them,\n"
            "# by the code of `specula bench --batch` (the decoding layer's batched loop, decode_batch.h, each\n"
            "# sequence its own MTP proposer). Another machine and model than speedup_batch.dat's roofline (an\n"
            "# H200 and the large model): %s.\n"
            "# measured %s.\n"
            "# columns: 1 b  2 plain_tokens_per_s (summed over the b sequences)",
            p->setup, p->when);
    for (int i = 0; i < p->n_k; i++)
        fprintf(f, "  %d mtp_tokens_per_s(k=%d)  %d tokens_per_pass(k=%d)  %d speedup(k=%d)", 3 + 3 * i, p->k[i],
                4 + 3 * i, p->k[i], 5 + 3 * i, p->k[i]);
    fputc('\n', f);
    for (int j = 0; j < p->n_b; j++) {
        fprintf(f, "%d %.6g", p->b[j], p->plain_tps[j]);
        for (int i = 0; i < p->n_k; i++)
            fprintf(f, " %.6g %.6g %.6g", p->mtp_tps[i][j], p->mtp_per_pass[i][j], p->mtp_tps[i][j] / p->plain_tps[j]);
        fputc('\n', f);
    }
    return plot_close(&af, err);
}

/* The right-hand panel: the measured speed-ups, one line per k. */
static void gp_measured_panel(FILE *f, const plot_batch_points *p) {
    fprintf(f,
            "unset arrow\n"
            "unset label\n"
            "set title \"MEASURED on this machine's CPU engine (not the H200 / large model of the left panel)\\n"
            "{/*0.8 %s}\\n{/*0.8 measured %s}\"\n"
            "set xlabel \"batch size b (sequences decoded together, one verify pass a round)\"\n"
            "set ylabel \"measured speed-up of greedy MTP over plain decoding (×)\"\n"
            "set logscale x 2\n"
            "set xrange [0.8:%g]\n"
            "set yrange [0:*]\n"
            "set offsets 0, 0, graph 0.3, 0\n"
            "set key top right box opaque font ',10'\n"
            "set arrow from 0.8,1 to %g,1 nohead dt 3 lc rgb '#888888'\n"
            "plot \\\n",
            p->setup, p->when, p->b[p->n_b - 1] * 1.25, p->b[p->n_b - 1] * 1.25);
    for (int i = 0; i < p->n_k; i++)
        fprintf(f,
                "    'speedup_batch_measured.dat' using 1:%d with linespoints lw 2 pt 7 ps 1.2 lc %d "
                "title 'measured, MTP k = %d (CPU engine, embedded model)'%s\n",
                5 + 3 * i, k_colour(p->k[i]), p->k[i], i + 1 < p->n_k ? ", \\" : "");
}

/* The script: the model's panel, and the measured one beside it when there are points. fit_k[N_BATCH_KS]: where
 * memory is full for each depth (and plain decoding), fit_plain: for plain decoding. */
static int write_script(const char *dir, const plot_theory *t, const int *fit_k, int fit_plain,
                        const plot_batch_points *measured, sp_error *err) {
    const roofline_device *d = &t->device;
    const roofline_workload *w = &t->big_workload;
    atomic_file af;
    FILE *f = plot_open(&af, dir, "speedup_batch.gp", err);
    if (!f) return -1;
    plot_gp_head(f, "speedup_batch",
                 measured ? "(e) left: a roofline MODEL (not a measurement) of the MTP speed-up against batch size;\n"
                            "# the device figures and α are assumptions, written in the data file's header. Right:\n"
                            "# the speed-up MEASURED on this machine's CPU engine with the embedded model."
                          : "(e) a roofline MODEL (not a measurement) of the MTP speed-up against batch size;\n"
                            "# the device figures and α are assumptions, written in the data file's header.",
                 measured ? "speedup_batch.dat, speedup_batch_measured.dat" : "speedup_batch.dat",
                 measured ? 1900 : 1000, 680);
    if (measured) fprintf(f, "set multiplot layout 1,2\n");
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
    /* the memory limits as dash-dot verticals named in the key (rotated labels beside them crowded the curves) */
    if (fit_plain >= 1 && fit_plain <= BATCH_MAX)
        fprintf(f, "set arrow from %d, graph 0 to %d, graph 1 nohead lw 1.5 dt 4 lc rgb '#555555'\n", fit_plain,
                fit_plain);
    for (int j = 0; j < N_BATCH_KS; j++) /* one line per depth, in its curves' colour */
        if (fit_k[j] >= 1 && fit_k[j] <= BATCH_MAX && fit_k[j] < fit_plain)
            fprintf(f, "set arrow from %d, graph 0 to %d, graph 1 nohead lw 1.5 dt 4 lc %d\n", fit_k[j], fit_k[j],
                    j + 1);
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
            "state written once', \\\n",
            fit_k[j], 4 + N_BATCH_KS + j, j + 1, batch_ks[j]);
    for (int j = 0; j < N_BATCH_KS; j++)
        if (fit_k[j] >= 1 && fit_k[j] <= BATCH_MAX && fit_k[j] < fit_plain)
            fprintf(f, "    NaN with lines lw 1.5 dt 4 lc %d title 'k = %d, %d slots: %.0f GB full at b = %d', \\\n",
                    j + 1, batch_ks[j], batch_ks[j] + 1, d->memory / 1e9, fit_k[j]);
    fprintf(f, "    NaN with lines lw 1.5 dt 4 lc rgb '#555555' title 'plain decoding: %.0f GB full at b = %d'\n",
            d->memory / 1e9, fit_plain);
    if (measured) {
        gp_measured_panel(f, measured);
        fprintf(f, "unset multiplot\n");
    }
    return plot_close(&af, err);
}

int plot_write_batch(const char *dir, const plot_theory *t, const plot_measurements *m, sp_error *err) {
    const plot_batch_points *measured = m && m->batch.n_b > 0 && m->batch.n_k > 0 ? &m->batch : NULL;
    if (measured && write_measured(dir, measured, err)) return -1;
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
    return write_script(dir, t, fit_k, fit_plain, measured, err);
}
