/* plot_write.c — the output folder: shared file helpers, the tables of
 * measured runs, the order in which the plots are written, and gnuplot
 * run as a child process inside the folder (so the scripts' relative data
 * paths hold, and a user can rerun them there unchanged). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plot_internal.h"
#include "spec_model.h"

const char *const plots_names[PLOTS_COUNT] = {"tokens_per_pass", "acceptance", "speedup_k", "bytes_per_token",
                                              "speedup_batch"};

const char *const plot_method_colour[PLOT_METHOD_COUNT] = {"#d62728", "#ff7f0e", "#2ca02c", "#9467bd"};
const int plot_method_point[PLOT_METHOD_COUNT] = {7, 5, 9, 13};

const char *plot_shade(plot_method method, int rank) {
    static const char *const shades[PLOT_METHOD_COUNT][3] = {{"#8b0000", "#d62728", "#ff9896"},
                                                             {"#a64b00", "#ff7f0e", "#ffbb78"},
                                                             {"#145a14", "#2ca02c", "#98df8a"},
                                                             {"#4b2a73", "#9467bd", "#c5b0d5"}};
    return shades[method][rank % 3];
}

FILE *plot_open(atomic_file *a, const char *dir, const char *file, sp_error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return atomic_open(a, path, err) ? NULL : a->f;
}

int plot_close(atomic_file *a, sp_error *err) { return atomic_commit(a, err); }

void plot_gp_head(FILE *f, const char *name, const char *what, const char *data_files, int width, int height) {
    fprintf(f,
            "# %s.gp — %s\n"
            "# Reads %s (in this folder; each file's header says what its columns are).\n"
            "# Draw:  gnuplot %s.gp                    -> %s.png\n"
            "#        gnuplot -e \"fmt='svg'\" %s.gp     -> %s.svg\n"
            "#        gnuplot -e \"fmt='dumb'\" %s.gp    -> this terminal\n"
            "if (!exists(\"fmt\")) fmt = 'png'\n"
            "set encoding utf8\n"
            "if (fmt eq 'png') {\n"
            "    set terminal pngcairo size %d,%d enhanced font 'Sans,11' linewidth 1.2\n"
            "    set output '%s.png'\n"
            "}\n"
            "if (fmt eq 'svg') {\n"
            "    set terminal svg size %d,%d enhanced dynamic font 'Sans,11' background rgb 'white'\n"
            "    set output '%s.svg'\n"
            "}\n"
            "if (fmt eq 'dumb') {\n"
            "    set terminal dumb size 120,40\n"
            "}\n"
            "if (fmt ne 'dumb') { set grid lc rgb '#dddddd' }\n"
            "set border lc rgb '#444444'\n",
            name, what, data_files, name, name, name, name, name, width, height, name, width, height, name);
}

/* The label a measured point carries on every plot. */
static void point_label(const plot_point *p, char *buf, size_t size) {
    snprintf(buf, size, "%s T=%g", p->label, p->temperature);
}

int plot_write_measured(const char *dir, const plot_measurements *m, sp_error *err) {
    atomic_file af;
    FILE *f = plot_open(&af, dir, "measured.dat", err);
    if (!f) return -1;
    fprintf(f, "# measured.dat — one row per (method, temperature): the accounting of its runs, added up\n"
               "# (measured_runs.dat has every run on its own). From the counters:\n"
               "#   tokens_per_pass = committed / target_passes\n"
               "#   alpha_hat = accepted_sum / (accepted_sum + rejected_rounds)   (accounting_alpha)\n"
               "#   E = (1 - alpha_hat^(k+1)) / (1 - alpha_hat)                    (the i.i.d. prediction)\n"
               "#   bytes_per_token = (target_passes * target_bytes + proposer_steps * proposer_bytes) / committed\n"
               "# columns:\n"
               "# 1 label  2 method  3 temperature  4 k  5 runs  6 target_passes  7 committed  8 accepted_total\n"
               "# 9 rejected_rounds  10 alpha_hat  11 tokens_per_pass  12 E(alpha_hat,k)  13 bytes_per_token\n"
               "# 14 target_bytes  15 proposer_bytes  16 proposer_steps  17 accepted_sum\n"
               "# 18 model_bytes_per_token = (target_bytes + k * proposer_bytes) / E(alpha_hat,k): the bandwidth\n"
               "#    model at the measured alpha_hat (it counts k proposer steps a round; the reference's draft\n"
               "#    also spends a catch-up step after a fully accepted round, which column 13 includes);\n"
               "#    nan for Medusa, whose tree the chain formula does not describe\n"
               "# 19 nodes (proposed per round: k for a chain, the tree's size for Medusa)  20 rule\n"
               "# 21 drafts (MTP: argmax or sampled from its own distribution; - for the others)\n"
               "# 22 drafted_share = rounds that proposed a token / target_passes: alpha_hat and column 12 describe\n"
               "#    those rounds only, column 11 all of them\n");
    for (int i = 0; m && i < m->n_points; i++) {
        const plot_point *p = &m->points[i];
        const run_accounting *a = &p->acc;
        long acc_sum = 0;
        for (int d = 1; d <= ACC_MAX_DEPTH; d++) acc_sum += a->accepted[d];
        double alpha = accounting_alpha(a);
        char label[64];
        point_label(p, label, sizeof label);
        int chain = p->method != PLOT_MEDUSA;
        fprintf(f,
                "\"%s\" %s %g %d %d %ld %ld %ld %ld %.10g %.10g %.10g %.10g %.10g %.10g %ld %ld %.10g %d %s %s %.10g\n",
                label, a->method, p->temperature, p->k, p->runs, a->target_passes, a->committed, a->accepted_total,
                a->rejected_rounds, alpha, accounting_tokens_per_pass(a),
                isnan(alpha) ? NAN : expected_tokens_per_pass(alpha, p->k), accounting_bytes_per_token(a),
                a->target_bytes_per_pass, a->proposer_bytes_per_step, a->proposer_steps, acc_sum,
                isnan(alpha) || !chain
                    ? NAN
                    : spec_bytes_per_token(a->target_bytes_per_pass, a->proposer_bytes_per_step, alpha, p->k),
                p->nodes, p->rule ? p->rule : "exact", p->drafts ? p->drafts : "-",
                a->target_passes ? (double)a->proposed[1] / a->target_passes : NAN);
    }
    if (plot_close(&af, err)) return -1;

    if (!(f = plot_open(&af, dir, "measured_runs.dat", err))) return -1;
    fprintf(f, "# measured_runs.dat — one row per generation, from its own accounting (same formulas as\n"
               "# measured.dat). point: the row of measured.dat (0-based) it is added into.\n"
               "# columns:\n"
               "# 1 point  2 method  3 temperature  4 prompt  5 seed  6 k  7 target_passes  8 committed\n"
               "# 9 accepted_sum  10 rejected_rounds  11 alpha_hat  12 tokens_per_pass  13 bytes_per_token\n"
               "# 14 proposer_steps\n");
    for (int i = 0; m && i < m->n_runs; i++) {
        const plot_run *r = &m->runs[i];
        const run_accounting *a = &r->acc;
        long acc_sum = 0;
        for (int d = 1; d <= ACC_MAX_DEPTH; d++) acc_sum += a->accepted[d];
        fprintf(f, "%d %s %g %d %llu %d %ld %ld %ld %ld %.10g %.10g %.10g %ld\n", r->point, a->method,
                m->points[r->point].temperature, r->prompt, (unsigned long long)r->seed, a->k, a->target_passes,
                a->committed, acc_sum, a->rejected_rounds, accounting_alpha(a), accounting_tokens_per_pass(a),
                accounting_bytes_per_token(a), a->proposer_steps);
    }
    return plot_close(&af, err);
}

void plots_wilson(double p, long n, double *low, double *high) {
    const double z = 1.96; /* two-sided 95 % */
    if (n <= 0 || isnan(p)) {
        *low = *high = NAN;
        return;
    }
    double z2n = z * z / n, centre = (p + z2n / 2) / (1 + z2n);
    double half = z * sqrt(p * (1 - p) / n + z2n / (4.0 * n)) / (1 + z2n);
    *low = centre - half;
    *high = centre + half;
}

int plot_write_acceptance(const char *dir, const plot_measurements *m, sp_error *err) {
    atomic_file af;
    FILE *f = plot_open(&af, dir, "acceptance.dat", err);
    if (!f) return -1;
    fprintf(f, "# acceptance.dat — acceptance per draft position d, one block per row of measured.dat\n"
               "# (gnuplot: index i). From the run accounting's counters:\n"
               "#   reach = accepted / proposed            P(the accepted path reaches depth d); alpha^d if i.i.d.\n"
               "#   conditional = reach(d) / reach(d-1)    P(d accepted | 1..d-1 accepted); alpha if i.i.d.\n"
               "#   trials = the rounds that tested position d: accepted(d-1), proposed(1) for d = 1\n"
               "#   low, high: the 95 %% Wilson score interval of conditional over `trials` trials, z = 1.96:\n"
               "#     (c + z^2/2n -+ z sqrt(c(1-c)/n + z^2/4n^2)) / (1 + z^2/n)\n"
               "# columns: 1 position  2 proposed  3 accepted  4 reach  5 conditional  6 trials  7 low  8 high\n");
    int k_max = 1;
    for (int i = 0; i < m->n_points; i++) {
        const plot_point *p = &m->points[i];
        char label[64];
        point_label(p, label, sizeof label);
        fprintf(f, "%s# block %d: %s (method %s, k %d, %d runs)\n", i ? "\n\n" : "", i, label, p->acc.method, p->k,
                p->runs);
        if (p->k > k_max) k_max = p->k;
        for (int d = 1; d <= p->k && d <= ACC_MAX_DEPTH; d++) {
            double reach, cond;
            plots_acceptance(&p->acc, d, &reach, &cond);
            long trials = d == 1 ? p->acc.proposed[1] : p->acc.accepted[d - 1];
            double low = NAN, high = NAN;
            plots_wilson(cond, trials, &low, &high);
            fprintf(f, "%d %ld %ld %.10g %.10g %ld %.10g %.10g\n", d, p->acc.proposed[d], p->acc.accepted[d], reach,
                    cond, trials, low, high);
        }
    }
    if (plot_close(&af, err)) return -1;

    if (!(f = plot_open(&af, dir, "acceptance.gp", err))) return -1;
    /* one panel per method, its temperatures in shades of its colour: nine series in one frame hid each other */
    int methods[PLOT_METHOD_COUNT], n_methods = 0;
    for (int i = 0; i < m->n_points; i++) {
        int seen = 0;
        for (int j = 0; j < n_methods; j++) seen |= methods[j] == (int)m->points[i].method;
        if (!seen) methods[n_methods++] = (int)m->points[i].method;
    }
    plot_gp_head(f, "acceptance", "(b) measured acceptance per draft position, per method and temperature.",
                 "acceptance.dat", 420 * n_methods + 80, 520);
    fprintf(f,
            "set multiplot layout 1,%d title \"Acceptance per draft position, measured\\n{/*0.85 bars: 95 %% "
            "intervals; dotted: the i.i.d. model, flat at each run's α̂}\"\n"
            "set xlabel \"draft position d (1 = the first proposed token)\"\n"
            "set xrange [0.7:%g]\n"
            "set xtics 1\n"
            "set yrange [0:1.05]\n"
            "set key bottom left nobox font ',10' samplen 2.5\n",
            n_methods, k_max + 0.3);
    static const int dash[] = {1, 2, 4, 5, 3};
    for (int g = 0; g < n_methods; g++) {
        int n_here = 0, rank = 0;
        for (int i = 0; i < m->n_points; i++) n_here += (int)m->points[i].method == methods[g];
        fprintf(f, "set ylabel \"%s\"\n", g == 0 ? "P(position d accepted | positions 1…d−1 accepted)" : "");
        fprintf(f, "plot \\\n");
        for (int i = 0; i < m->n_points; i++) {
            const plot_point *p = &m->points[i];
            if ((int)p->method != methods[g]) continue;
            char label[64];
            point_label(p, label, sizeof label);
            const double a = accounting_alpha(&p->acc);
            fprintf(f,
                    "    'acceptance.dat' index %d using ($1%+.3f):5:7:8 with yerrorlines lw 2 dt %d pt %d ps 1.2 "
                    "lc rgb '%s' title '%s (α̂ = %.2f)', \\\n",
                    i, 0.06 * (rank - 0.5 * (n_here - 1)), dash[rank % 5], plot_method_point[p->method],
                    plot_shade(p->method, rank), label, a);
            if (!isnan(a)) /* the i.i.d. model's prediction for this run: α̂ at every position it drafted */
                fprintf(f,
                        "    'acceptance.dat' index %d using 1:(%.6f) with lines lw 1.5 dt 3 lc rgb '%s' notitle, \\\n",
                        i, a, plot_shade(p->method, rank));
            rank++;
        }
        fprintf(f, "    NaN notitle\n");
    }
    fprintf(f, "unset multiplot\n");
    return plot_close(&af, err);
}

int plots_make_dir(const char *dir, sp_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *s = path + 1;; s++) {
        char c = *s;
        if (c == '/' || c == '\0') {
            *s = '\0';
            if (mkdir(path, 0777) != 0 && errno != EEXIST)
                return sp_fail(err, "cannot create the folder %s: %s", path, strerror(errno));
            *s = c;
        }
        if (c == '\0') break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return sp_fail(err, "%s is not a folder", dir);
    return 0;
}

int plots_write(const char *dir, const plot_theory *t, const plot_measurements *m, int *written, sp_error *err) {
    int have_m = m && m->n_points > 0;
    if (plots_make_dir(dir, err)) return -1;
    if (written)
        for (int i = 0; i < PLOTS_COUNT; i++) written[i] = 0;
    if (plot_write_measured(dir, have_m ? m : NULL, err)) return -1;
    if (plot_write_tokens_per_pass(dir, t, have_m ? m : NULL, err)) return -1;
    if (written) written[0] = 1;
    if (have_m) {
        if (plot_write_acceptance(dir, m, err)) return -1;
        if (written) written[1] = 1;
    }
    if (plot_write_speedup_k(dir, t, have_m ? m : NULL, err)) return -1;
    if (written) written[2] = 1;
    if (plot_write_bytes(dir, t, have_m ? m : NULL, err)) return -1;
    if (written) written[3] = 1;
    if (t->big_target_bytes > 0) {
        if (plot_write_batch(dir, t, m, err)) return -1;
        if (written) written[4] = 1;
    }
    return 0;
}

int plots_have_gnuplot(void) {
    const char *path = getenv("PATH");
    if (!path) return 0;
    char buf[4200];
    for (const char *s = path; *s;) {
        const char *e = strchr(s, ':');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        snprintf(buf, sizeof buf, "%.*s/gnuplot", (int)n, n ? s : ".");
        if (access(buf, X_OK) == 0) return 1;
        if (!e) break;
        s = e + 1;
    }
    return 0;
}

int plots_render(const char *dir, const char *name, const char *fmt, sp_error *err) {
    char script[256], setting[64];
    snprintf(script, sizeof script, "%s.gp", name);
    snprintf(setting, sizeof setting, "fmt='%s'", fmt);
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, script);
    if (access(path, R_OK) != 0) return sp_fail(err, "no gnuplot script %s: %s", path, strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return sp_fail(err, "cannot start gnuplot: %s", strerror(errno));
    if (pid == 0) {
        if (chdir(dir) != 0) _exit(126);
        execlp("gnuplot", "gnuplot", "-e", setting, script, (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return sp_fail(err, "waiting for gnuplot: %s", strerror(errno));
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return sp_fail(err, "gnuplot is not installed (Debian: gnuplot-nox; `make deps` installs it)");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 126) return sp_fail(err, "cannot enter the folder %s", dir);
    return sp_fail(err, "gnuplot failed on %s/%s (fmt %s, exit status %d)", dir, script, fmt,
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}
