/* plot_curves.c — (a) E(α,k) against α with its Monte-Carlo check and the
 * measured points, and (c) the speed-up against k with the optimum marked.
 * The numbers come from spec_model.h and accounting.h only. */
#include <math.h>
#include <string.h>

#include "plot_internal.h"
#include "spec_model.h"

#define E_K_MAX 8   /* curves k = 1..8 */
#define E_STEPS 100 /* α = i / 100 */
#define SPEEDUP_K_MAX 16
/* two-sided 99.9 %: Φ⁻¹(0.9995) */
#define Z_999 3.2905267314919

static const double mc_alphas[] = {0.2, 0.4, 0.6, 0.8, 0.9, 0.95};
static const int mc_ks[] = {2, 4, 8};

/* The measured points of plot (a), one legend entry each, read from row i
 * of measured.dat (x = α̂, y = tokens per pass): the marker is the method's,
 * the shade darker for a colder temperature. A legend rather than text
 * beside the points, which overprint where methods agree. */
static void gp_measured_points(FILE *f, const plot_measurements *m) {
    for (int i = 0; m && i < m->n_points; i++) {
        const plot_point *p = &m->points[i];
        if (isnan(accounting_alpha(&p->acc))) continue;
        int rank = 0; /* this temperature's place among its method's points */
        for (int j = 0; j < i; j++) rank += m->points[j].method == p->method;
        char what[96];
        if (p->method == PLOT_MEDUSA)
            snprintf(what, sizeof what, "%d-node tree", p->nodes);
        else
            snprintf(what, sizeof what, "k = %d", p->k);
        fprintf(f,
                ", \\\n    'measured.dat' every ::%d::%d using 10:11 with points pt %d ps 1.7 lc rgb '%s' "
                "title 'measured %s T=%g (%s)'",
                i, i, plot_method_point[p->method], plot_shade(p->method, rank), p->label, p->temperature, what);
    }
}

int plot_write_tokens_per_pass(const char *dir, const plot_theory *t, const plot_measurements *m, sp_error *err) {
    atomic_file af;
    FILE *f = plot_open(&af, dir, "tokens_per_pass.dat", err);
    if (!f) return -1;
    fprintf(f,
            "# tokens_per_pass.dat — expected tokens per target pass for a k-token chain:\n"
            "#   E(alpha,k) = (1 - alpha^(k+1)) / (1 - alpha),  E(1,k) = k + 1\n"
            "# assuming every drafted token is accepted with probability alpha, independently, and\n"
            "# one target pass per round (it commits the accepted tokens plus one of its own).\n"
            "# columns: 1 alpha  2..%d E(alpha, k = 1..%d)\n",
            E_K_MAX + 1, E_K_MAX);
    for (int i = 0; i <= E_STEPS; i++) {
        double alpha = (double)i / E_STEPS;
        fprintf(f, "%.2f", alpha);
        for (int k = 1; k <= E_K_MAX; k++) fprintf(f, " %.10g", expected_tokens_per_pass(alpha, k));
        fputc('\n', f);
    }
    if (plot_close(&af, err)) return -1;

    if (!(f = plot_open(&af, dir, "tokens_per_pass_mc.dat", err))) return -1;
    fprintf(f,
            "# tokens_per_pass_mc.dat — Monte-Carlo beside the formula: rounds of a k-token chain, each\n"
            "# drafted token accepted when a Philox uniform (seed %llu + row) is below alpha.\n"
            "#   half_width = %.6f * sqrt(Var / rounds), Var the exact variance of one round's tokens\n"
            "#   (a two-sided 99.9 %% interval: the mean falls outside it once in a thousand rows).\n"
            "# columns: 1 alpha  2 k  3 rounds  4 mean  5 half_width  6 E(alpha,k)\n",
            (unsigned long long)t->mc_seed, Z_999);
    int row = 0;
    for (size_t ki = 0; ki < sizeof mc_ks / sizeof mc_ks[0]; ki++)
        for (size_t ai = 0; ai < sizeof mc_alphas / sizeof mc_alphas[0]; ai++, row++) {
            spec_mc_result r;
            spec_mc_chain(mc_alphas[ai], mc_ks[ki], t->mc_rounds, t->mc_seed + (uint64_t)row, &r);
            double half = Z_999 * sqrt(spec_chain_variance(mc_alphas[ai], mc_ks[ki]) / r.rounds);
            fprintf(f, "%.2f %d %ld %.10g %.10g %.10g\n", mc_alphas[ai], mc_ks[ki], r.rounds, r.mean, half,
                    expected_tokens_per_pass(mc_alphas[ai], mc_ks[ki]));
        }
    if (plot_close(&af, err)) return -1;

    const plot_extra *x = t->extra;
    if (x && x->n > 0) {
        if (!(f = plot_open(&af, dir, "extra.dat", err))) return -1;
        fprintf(f,
                "# extra.dat — points of one's own (specula plot --extra).\n# columns: 1 label  2 alpha  3 tokens per "
                "pass\n");
        for (int i = 0; i < x->n; i++)
            fprintf(f, "\"%s\" %.10g %.10g\n", x->label[i], x->alpha[i], x->tokens_per_pass[i]);
        if (plot_close(&af, err)) return -1;
    }

    if (!(f = plot_open(&af, dir, "tokens_per_pass.gp", err))) return -1;
    plot_gp_head(f, "tokens_per_pass",
                 "(a) expected tokens per target pass against the acceptance rate α for k = 1…8, the\n"
                 "# Monte-Carlo check of the formula, and the measured runs (α̂, tokens per pass).",
                 "tokens_per_pass.dat, tokens_per_pass_mc.dat, measured.dat", 1000, 680);
    fprintf(f,
            "set title \"Expected tokens per target pass: E(α,k) = (1 − α^{k+1}) / (1 − α)\"\n"
            "set xlabel \"acceptance rate α (probability that a drafted token is accepted)\"\n"
            "set ylabel \"tokens committed per target pass\"\n"
            "set xrange [0:1]\n"
            "set yrange [1:9.3]\n"
            "set xtics 0.1\n"
            "set ytics 1\n"
            "set rmargin 9\n"
            "set key top left box opaque spacing 1.1 font ',10'\n"
            "# the curves: light (k = 1) to dark (k = %d), each named at its right end, E(1,k) = k + 1\n"
            "set palette defined (0 '#9ecae1', 1 '#08306b')\n"
            "unset colorbox\n"
            "do for [k=1:%d] { set label sprintf('k = %%d', k) at 1.01, k + 1 left font ',10' }\n",
            E_K_MAX, E_K_MAX);
    fprintf(f,
            "plot for [k=1:%d] 'tokens_per_pass.dat' using 1:(column(k+1)) with lines lw 2 "
            "lc palette frac (k - 1) / %d.0 notitle, \\\n"
            "    NaN with lines lw 2 lc palette frac 0.5 title 'E(α,k), k = 1…%d (named at the right)', \\\n"
            "    'tokens_per_pass_mc.dat' using 1:4:5 with yerrorbars pt 6 ps 0.9 lc rgb 'black' "
            "title 'Monte-Carlo, %ld rounds per point (99.9 %% interval)'",
            E_K_MAX, E_K_MAX - 1, E_K_MAX, t->mc_rounds);
    gp_measured_points(f, m);
    if (x && x->n > 0)
        fprintf(f, ", \\\n    'extra.dat' using 2:3:1 with labels point pt 2 ps 1.6 lc rgb 'black' offset 1,0.6 "
                   "font ',9' title 'your points (--extra)'");
    fputc('\n', f);
    return plot_close(&af, err);
}

/* ---- (c) speed-up against k ----------------------------------------------------- */

static const char *const case_colour[8] = {"#1b9e77", "#7570b3", "#1f78b4", "#e7298a",
                                           "#d62728", "#66a61e", "#a6761d", "#666666"};

typedef struct {
    double alpha, c;
    char label[128];
} speedup_case;

int plot_write_speedup_k(const char *dir, const plot_theory *t, const plot_measurements *m, sp_error *err) {
    (void)t;
    speedup_case cases[8];
    int n = 0;
    static const double fixed[][2] = {{0.6, 0.05}, {0.8, 0.05}, {0.9, 0.05}, {0.8, 0.25}};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++, n++) {
        cases[n].alpha = fixed[i][0];
        cases[n].c = fixed[i][1];
        snprintf(cases[n].label, sizeof cases[n].label, "α = %g, c = %g", fixed[i][0], fixed[i][1]);
    }
    /* the embedded pair: its measured α̂ at the first temperature, and c as
     * the ratio of weight bytes per step (the cost of a bandwidth-bound step) */
    for (int i = 0; m && i < m->n_points; i++) {
        const plot_point *p = &m->points[i];
        double a = accounting_alpha(&p->acc);
        if (p->method != PLOT_DRAFT || isnan(a) || p->acc.target_bytes_per_pass <= 0) continue;
        cases[n].alpha = a;
        cases[n].c = p->acc.proposer_bytes_per_step / p->acc.target_bytes_per_pass;
        snprintf(cases[n].label, sizeof cases[n].label,
                 "formula at the measured α̂ = %.3f of the draft pair (T=%g), c = %.3f", cases[n].alpha, p->temperature,
                 cases[n].c);
        n++;
        break;
    }

    atomic_file af;
    FILE *f = plot_open(&af, dir, "speedup_k.dat", err);
    if (!f) return -1;
    fprintf(f, "# speedup_k.dat — expected speed-up over plain decoding when a proposer step costs c target\n"
               "# passes: S(alpha,k,c) = (1 - alpha^(k+1)) / ((1 - alpha) (k c + 1)); S(alpha,0,c) = 1.\n"
               "# columns: 1 k");
    for (int i = 0; i < n; i++) fprintf(f, "  %d S(alpha=%.6g, c=%.6g)", i + 2, cases[i].alpha, cases[i].c);
    fputc('\n', f);
    for (int k = 0; k <= SPEEDUP_K_MAX; k++) {
        fprintf(f, "%d", k);
        for (int i = 0; i < n; i++) fprintf(f, " %.10g", spec_speedup(cases[i].alpha, k, cases[i].c));
        fputc('\n', f);
    }
    if (plot_close(&af, err)) return -1;

    if (!(f = plot_open(&af, dir, "speedup_k_opt.dat", err))) return -1;
    fprintf(f,
            "# speedup_k_opt.dat — the k in [0, %d] that maximises S for each curve of speedup_k.dat\n"
            "# (ties, equal up to rounding, go to the smaller k; 0 = speculation never pays).\n"
            "# columns: 1 curve (column of speedup_k.dat)  2 alpha  3 c  4 k_best  5 S(k_best)\n",
            SPEEDUP_K_MAX);
    for (int i = 0; i < n; i++) {
        double best;
        int kb = spec_best_k(cases[i].alpha, cases[i].c, SPEEDUP_K_MAX, &best);
        fprintf(f, "%d %.10g %.10g %d %.10g\n", i + 2, cases[i].alpha, cases[i].c, kb, best);
    }
    if (plot_close(&af, err)) return -1;

    if (!(f = plot_open(&af, dir, "speedup_k.gp", err))) return -1;
    plot_gp_head(f, "speedup_k",
                 "(c) expected speed-up against the draft depth k for a few (α, c), c = the cost of\n"
                 "# one proposer step in target passes; the best k of each curve marked.",
                 "speedup_k.dat, speedup_k_opt.dat", 1000, 640);
    fprintf(f,
            "set title \"Expected speed-up over plain decoding: S = (1 − α^{k+1}) / ((1 − α)(k·c + 1))\"\n"
            "set xlabel \"draft depth k (tokens proposed per round)\"\n"
            "set ylabel \"speed-up over plain decoding (×)\"\n"
            "set xrange [0:%d]\n"
            "set xtics 1\n"
            "set yrange [0:*]\n"
            "set key top left box opaque font ',10'\n"
            "set offsets 0, 0, graph 0.4, 0\n"
            "set arrow from 0,1 to %d,1 nohead dt 3 lc rgb '#888888'\n"
            "plot \\\n",
            SPEEDUP_K_MAX, SPEEDUP_K_MAX);
    /* each curve's best k in its own key entry and a marker of its own colour: labels floating beside the
     * markers landed on the neighbouring curves */
    for (int i = 0; i < n; i++) {
        double best;
        int kb = spec_best_k(cases[i].alpha, cases[i].c, SPEEDUP_K_MAX, &best);
        fprintf(f,
                "    'speedup_k.dat' using 1:%d with linespoints lw 2 pt 7 ps 0.6 lc rgb '%s' "
                "title '%s: best k = %d, %.2f×', \\\n",
                i + 2, case_colour[i % 8], cases[i].label, kb, best);
        fprintf(f, "    'speedup_k_opt.dat' every ::%d::%d using 4:5 with points pt 9 ps 2.2 lc rgb '%s' notitle, \\\n",
                i, i, case_colour[i % 8]);
    }
    fprintf(f, "    NaN with points pt 9 ps 2.2 lc rgb '#444444' title 'the best k of each curve (its colour)'\n");
    return plot_close(&af, err);
}
