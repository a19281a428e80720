/* plot_costs.c — (d) weight bytes read per committed token against k, for
 * the embedded pair and the large model with its MTP layer. Bytes come from
 * footprint.h through the caller; formulas from spec_model.h. */
#include <string.h>

#include "plot_internal.h"
#include "spec_model.h"

#define BYTES_K_MAX 8
static const double bytes_alphas[] = {0.6, 0.8, 0.9};
#define N_BYTES_ALPHAS (int)(sizeof bytes_alphas / sizeof bytes_alphas[0])

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
                 "bytes_per_token.dat, measured.dat", have_pair && have_big ? 1400 : 1000, 820);
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
                "set title \"%s%s\\n{/*0.85 curves: the formula; filled markers: runs measured at k = 4 (Medusa: a "
                "tree of depth 4)}\"\n"
                "set ylabel \"weight bytes per committed token (MB/token, 10^6 bytes)\"\n"
                "set yrange [0:*]\n"
                "set key inside top left vertical box opaque font ',9' maxrows 8\n"
                "set offsets 0, 0, graph %s, 0\n"
                "plot \\\n",
                t->pair_name, have_big ? "" : ": (target + k·proposer) / E(α,k)", m && m->n_points ? "1.0" : "0.45");
        if (t->pair_draft_bytes > 0) gp_bytes_series(f, c_draft, "draft", draft_shades, 1, 1e6, &n_series);
        if (t->pair_mtp_bytes > 0) gp_bytes_series(f, c_mtp, "MTP", mtp_shades, 2, 1e6, &n_series);
        /* every measured row on its own, in a shade of its method's colour by temperature (one marker per
         * method hid the temperatures behind each other); the chain formula at its α̂ as the open marker */
        int any_formula = 0;
        for (int i = 0; m && i < m->n_points; i++) {
            const plot_point *p = &m->points[i];
            int rank = 0, n_method = 0, method_rank = 0;
            for (int j = 0; j < m->n_points; j++) {
                if (m->points[j].method != p->method) continue;
                rank += j < i;
                n_method++;
            }
            for (int j = 0; j < (int)p->method; j++) {
                int present = 0;
                for (int l = 0; l < m->n_points; l++) present |= (int)m->points[l].method == j;
                method_rank += present;
            }
            /* methods side by side around k, temperatures side by side within a method */
            double dx = 0.3 * (method_rank - 1) + 0.08 * (rank - 0.5 * (n_method - 1));
            char label[64];
            snprintf(label, sizeof label, "%s T=%g", p->label, p->temperature);
            fprintf(f,
                    ", \\\n    'measured.dat' every ::%d::%d using ($4%+.2f):($13/1e6) with points pt %d ps 1.5 "
                    "lc rgb '%s' title 'measured %s'",
                    i, i, dx, plot_method_point[p->method], plot_shade(p->method, rank), label);
            if (p->method != PLOT_MEDUSA) { /* the chain formula at the run's own α̂ */
                fprintf(f,
                        ", \\\n    'measured.dat' every ::%d::%d using ($4%+.2f):($18/1e6) with points pt %d ps 1.8 "
                        "lw 1.5 lc rgb '%s' notitle",
                        i, i, dx, plot_method_point[p->method] - 1, plot_shade(p->method, rank));
                any_formula = 1;
            }
        }
        if (any_formula)
            fprintf(f, ", \\\n    NaN with points pt 6 ps 1.8 lw 1.5 lc rgb '#444444' "
                       "title 'open: the formula at its α̂'");
        fputc('\n', f);
    }
    if (have_big) {
        n_series = 0;
        fprintf(f,
                "set title \"%s%s\\n{/*0.85 a MODEL, not a measurement: bytes from the config, E(α,k) at assumed α}\"\n"
                "set ylabel \"weight bytes per committed token (GB/token, 10^9 bytes)\"\n"
                "set key inside top right vertical box opaque font ',10'\n"
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
