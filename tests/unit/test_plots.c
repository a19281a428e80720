/* test_plots.c — the plots' data files, read back as numbers: formula values, monotonicity, each curve's marked
 * optimum, Monte-Carlo rows inside their intervals, measured points that agree with the accounting of their runs,
 * and gnuplot scripts that name only data files that exist. Images are only checked to exist, never compared. */
#include <check.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fixtures.h"
#include "footprint.h"
#include "harness.h"
#include "mtp.h"
#include "plots/plots.h"
#include "spec_model.h"
#include "speculative.h"

/* The files print 10 significant digits: agreement to 1e-9 relative. */
#define PRINTED 1e-9

#define ck_printed(got, want)                                                                                          \
    ck_assert_msg(fabs((got) - (want)) <= PRINTED * fmax(1.0, fabs(want)), "%s = %.12g, expected %.12g", #got,         \
                  (double)(got), (double)(want))

/* ---- reading .dat files ---------------------------------------------------------------- */

#define MAX_ROWS 512
#define MAX_COLS 32

typedef struct {
    int n;                        /* rows */
    int cols[MAX_ROWS];           /* fields in each row */
    int block[MAX_ROWS];          /* gnuplot index: blocks are separated by two blank lines */
    double v[MAX_ROWS][MAX_COLS]; /* numbers; a quoted field reads as NaN, its text in label */
    char label[MAX_ROWS][64];     /* the first quoted field of the row, if any */
    char word[MAX_ROWS][MAX_COLS][16];
} table;

static void read_table(const char *dir, const char *file, table *t) {
    char path[1024], line[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s was not written", path);
    memset(t, 0, sizeof *t);
    int blanks = 0, block = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (!*p) {
            if (++blanks == 2 && t->n) block++;
            continue;
        }
        blanks = 0;
        ck_assert_int_lt(t->n, MAX_ROWS);
        int c = 0;
        while (*p) {
            while (isspace((unsigned char)*p)) p++;
            if (!*p) break;
            ck_assert_int_lt(c, MAX_COLS);
            if (*p == '"') {
                char *end = strchr(p + 1, '"');
                ck_assert_msg(end != NULL, "%s: unterminated quote", path);
                if (!t->label[t->n][0]) snprintf(t->label[t->n], sizeof t->label[0], "%.*s", (int)(end - p - 1), p + 1);
                t->v[t->n][c++] = NAN;
                p = end + 1;
            } else {
                char *end;
                t->v[t->n][c] = strtod(p, &end);
                if (end == p) { /* a word such as a method name */
                    end = p;
                    while (*end && !isspace((unsigned char)*end)) end++;
                    t->v[t->n][c] = NAN;
                }
                snprintf(t->word[t->n][c], sizeof t->word[0][0], "%.*s", (int)(end - p), p);
                c++;
                p = end;
            }
        }
        t->cols[t->n] = c;
        t->block[t->n] = block;
        t->n++;
    }
    fclose(f);
}

static int file_exists(const char *dir, const char *file) {
    char path[1024];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/* ---- the analytic files ------------------------------------------------------------------ */

/* A pair with round numbers (a 10 MB target, a 1 MB draft, a 2 MB MTP step)
 * and the 27B from its config, as `specula plot` builds them. */
static void theory(plot_theory *t) {
    memset(t, 0, sizeof *t);
    t->pair_name = "test pair";
    t->pair_target_bytes = 1e7;
    t->pair_draft_bytes = 1e6;
    t->pair_mtp_bytes = 2e6;
    t->device = roofline_h200();
    t->batch_alpha = 0.8;
    t->mc_rounds = 20000;
    t->mc_seed = 1;
    model_config c;
    sp_error err;
    ck_assert_msg(config_load("models/qwen3.8-27b", &c, &err) == 0, "%s", err.msg);
    model_footprint fp;
    footprint_compute(&c, 1, 2.0, 2.0, &fp);
    t->big_name = "Qwen3.8-27B";
    t->big_target_bytes = fp.weight_bytes_per_step;
    t->big_mtp_bytes = fp.mtp_bytes_per_step;
    roofline_workload_build(&c, 2.0, 2.0, 4096, &t->big_workload);
}

static void write_theory(char *dir, size_t size, int *written) {
    harness_tmpdir(dir, size);
    plot_theory t;
    theory(&t);
    sp_error err;
    ck_assert_msg(plots_write(dir, &t, NULL, written, &err) == 0, "%s", err.msg);
}

START_TEST(test_tokens_per_pass_file) {
    char dir[512];
    int written[PLOTS_COUNT];
    write_theory(dir, sizeof dir, written);
    static table t;
    read_table(dir, "tokens_per_pass.dat", &t);
    ck_assert_int_eq(t.n, 101); /* α = 0, 0.01, …, 1 */
    int row_08 = -1;
    for (int i = 0; i < t.n; i++) {
        ck_assert_int_eq(t.cols[i], 9);
        ck_printed(t.v[i][0], i / 100.0);
        if (i == 80) row_08 = i;
        for (int k = 1; k <= 8; k++) {
            ck_printed(t.v[i][k], expected_tokens_per_pass(t.v[i][0], k));
            if (k > 1 && i > 0 && pow(t.v[i][0], k) > 1e-9) /* visibly above the printed digits */
                ck_assert_msg(t.v[i][k] > t.v[i][k - 1], "α %g: E(k=%d) %g not above E(k=%d) %g", t.v[i][0], k,
                              t.v[i][k], k - 1, t.v[i][k - 1]);
            if (i > 0) ck_assert_msg(t.v[i][k] > t.v[i - 1][k], "k %d: E not rising at α %g", k, t.v[i][0]);
        }
    }
    /* 1 + 0.8 + 0.64 + 0.512 + 0.4096 */
    ck_printed(t.v[row_08][4], 3.3616);
    for (int k = 1; k <= 8; k++) ck_printed(t.v[100][k], k + 1.0); /* α = 1 */

    read_table(dir, "tokens_per_pass_mc.dat", &t);
    ck_assert_int_eq(t.n, 18);
    for (int i = 0; i < t.n; i++) {
        double alpha = t.v[i][0], k = t.v[i][1], rounds = t.v[i][2], mean = t.v[i][3], half = t.v[i][4];
        ck_printed(t.v[i][5], expected_tokens_per_pass(alpha, (int)k));
        ck_printed(half, 3.2905267314919 * sqrt(spec_chain_variance(alpha, (int)k) / rounds));
        ck_assert_msg(fabs(mean - t.v[i][5]) <= half, "α %g k %g: simulated %g, E %g ± %g", alpha, k, mean, t.v[i][5],
                      half);
    }
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_speedup_file_marks_each_optimum) {
    char dir[512];
    int written[PLOTS_COUNT];
    write_theory(dir, sizeof dir, written);
    static table s, o;
    read_table(dir, "speedup_k.dat", &s);
    read_table(dir, "speedup_k_opt.dat", &o);
    ck_assert_int_eq(s.n, 17); /* k = 0..16 */
    ck_assert_int_eq(o.n, 4);  /* the four fixed cases: no measured pair here */
    /* hand values (test_spec_model.c has the arithmetic): (0.6, 0.05) → 4, (0.8, 0.05) → 8,
     * (0.9, 0.05) → 13, (0.8, 0.25) → 3 */
    static const int expect_k[4] = {4, 8, 13, 3};
    for (int i = 0; i < o.n; i++) {
        int col = (int)o.v[i][0] - 1, kb = (int)o.v[i][3];
        double alpha = o.v[i][1], c = o.v[i][2];
        ck_assert_int_eq(kb, expect_k[i]);
        /* the marked point is the first maximum of its own curve in speedup_k.dat */
        int arg = 0;
        for (int r = 0; r < s.n; r++) {
            ck_printed(s.v[r][col], spec_speedup(alpha, (int)s.v[r][0], c));
            if (s.v[r][col] > s.v[arg][col] * (1 + PRINTED)) arg = r;
        }
        ck_assert_int_eq((int)s.v[arg][0], kb);
        ck_printed(o.v[i][4], s.v[arg][col]);
        ck_printed(s.v[0][col], 1.0); /* k = 0 is plain decoding */
    }
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_bytes_file) {
    char dir[512];
    int written[PLOTS_COUNT];
    write_theory(dir, sizeof dir, written);
    plot_theory th;
    theory(&th);
    static table t;
    read_table(dir, "bytes_per_token.dat", &t);
    ck_assert_int_eq(t.n, 9); /* k = 0..8 */
    static const double alphas[3] = {0.6, 0.8, 0.9};
    for (int r = 0; r < t.n; r++) {
        int k = (int)t.v[r][0];
        for (int a = 0; a < 3; a++) {
            ck_printed(t.v[r][1 + a], spec_bytes_per_token(1e7, 1e6, alphas[a], k));
            ck_printed(t.v[r][4 + a], spec_bytes_per_token(1e7, 2e6, alphas[a], k));
            ck_printed(t.v[r][7 + a], spec_bytes_per_token(th.big_target_bytes, th.big_mtp_bytes, alphas[a], k));
        }
    }
    /* k = 0: plain decoding reads the target once per token */
    ck_printed(t.v[0][1], 1e7);
    ck_printed(t.v[0][7], th.big_target_bytes);
    /* (10 + 4·1) MB / 3.3616 at α = 0.8, k = 4 */
    ck_printed(t.v[4][2], 1.4e7 / 3.3616);
    /* the 27B reads about 51 GB of bf16 weights per plain step (47.7 GiB, as `specula info` prints) */
    ck_assert(t.v[0][7] > 51e9 && t.v[0][7] < 52e9);

    read_table(dir, "speedup_batch.dat", &t);
    ck_assert_int_gt(t.n, 10);
    for (int r = 0; r < t.n; r++) {
        int b = (int)t.v[r][0];
        static const int ks[3] = {1, 2, 4};
        roofline_workload once = roofline_single_state_write(&th.big_workload);
        for (int j = 0; j < 3; j++) {
            ck_printed(t.v[r][3 + j], roofline_speedup(&th.device, &th.big_workload, b, 0.8, ks[j]));
            ck_printed(t.v[r][6 + j], roofline_speedup(&th.device, &once, b, 0.8, ks[j]));
        }
        if (r > 0) ck_assert_int_gt(b, (int)t.v[r - 1][0]);
    }
    ck_assert_int_eq((int)t.v[0][0], 1);
    ck_assert(t.v[0][5] > 1.0); /* at batch 1 speculation pays */
    /* each depth's curves stop where its slots or plain decoding no longer fit in memory: that batch is a row of
     * the data, and the script draws nothing beyond it */
    char path[1024], script[16384];
    snprintf(path, sizeof path, "%s/speedup_batch.gp", dir);
    FILE *gp = fopen(path, "r");
    ck_assert_ptr_nonnull(gp);
    script[fread(script, 1, sizeof script - 1, gp)] = '\0';
    fclose(gp);
    const int fit_plain = roofline_max_batch(&th.device, &th.big_workload, 0);
    static const int ks[3] = {1, 2, 4};
    for (int j = 0; j < 3; j++) {
        int fit = roofline_max_batch(&th.device, &th.big_workload, ks[j]);
        if (fit > fit_plain) fit = fit_plain;
        ck_assert_int_lt(fit, 512); /* inside the plotted range, or the check below proves nothing */
        int row = 0;
        for (int r = 0; r < t.n; r++) row |= (int)t.v[r][0] == fit;
        ck_assert_msg(row, "k = %d: memory is full at b = %d, which is not a row of speedup_batch.dat", ks[j], fit);
        char cut[64];
        for (int col = 4 + j; col <= 7 + j; col += 3) { /* the slots curve and the final-state curve */
            snprintf(cut, sizeof cut, "using 1:($1 <= %d ? $%d : 1/0)", fit, col);
            ck_assert_msg(strstr(script, cut), "speedup_batch.gp: the curve in column %d is not cut at b = %d", col,
                          fit);
        }
    }
    harness_rmtree(dir);
}
END_TEST

/* Every 'NAME.dat' a script mentions exists beside it. */
static void check_script_references(const char *dir, const char *name) {
    char path[1024], line[4096], file[256];
    snprintf(path, sizeof path, "%s/%s.gp", dir, name);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s missing", path);
    int refs = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        for (char *p = strchr(line, '\''); p; p = strchr(p + 1, '\'')) {
            char *end = strchr(p + 1, '\'');
            if (!end) break;
            size_t n = (size_t)(end - p - 1);
            if (n > 4 && n < sizeof file && !strncmp(end - 4, ".dat", 4)) {
                snprintf(file, sizeof file, "%.*s", (int)n, p + 1);
                ck_assert_msg(file_exists(dir, file), "%s reads %s, which was not written", path, file);
                refs++;
            }
            p = end;
        }
    }
    fclose(f);
    ck_assert_msg(refs > 0, "%s reads no data file", path);
}

/* Plot (e)'s measured points (filled by `specula plot` from the code of `specula bench --batch`, which
 * tests/parts/plot-cli.sh runs) reach their data file as given, and the script draws them in a panel of their
 * own; without them neither the file nor a reference to it is written. */
START_TEST(test_batch_measured_points_file) {
    char dir[512];
    int written[PLOTS_COUNT];
    write_theory(dir, sizeof dir, written);
    ck_assert(!file_exists(dir, "speedup_batch_measured.dat"));
    char path[1024], script[16384];
    snprintf(path, sizeof path, "%s/speedup_batch.gp", dir);
    FILE *gp = fopen(path, "r");
    ck_assert_ptr_nonnull(gp);
    script[fread(script, 1, sizeof script - 1, gp)] = '\0';
    fclose(gp);
    ck_assert(strstr(script, "speedup_batch_measured.dat") == NULL);
    harness_rmtree(dir);

    plot_measurements m;
    memset(&m, 0, sizeof m);
    plot_batch_points *p = &m.batch;
    p->n_b = 3, p->n_k = 2;
    for (int j = 0; j < 3; j++) {
        p->b[j] = 1 << j;
        p->plain_tps[j] = 1000.0 * (j + 1);
        for (int i = 0; i < 2; i++) {
            p->k[i] = 2 * i + 1;
            p->mtp_tps[i][j] = 700.0 + 100 * i + 10 * j;
            p->mtp_per_pass[i][j] = (1 << j) * (1.5 + i);
        }
    }
    snprintf(p->setup, sizeof p->setup, "test model, CPU engine");
    snprintf(p->when, sizeof p->when, "2026-12-01 08:00 UTC, load average 1.00 at the start");
    harness_tmpdir(dir, sizeof dir);
    plot_theory th;
    theory(&th);
    sp_error err;
    ck_assert_msg(plots_write(dir, &th, &m, written, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(written[4], 1);
    table t;
    read_table(dir, "speedup_batch_measured.dat", &t);
    ck_assert_int_eq(t.n, 3);
    for (int j = 0; j < 3; j++) {
        ck_assert_int_eq(t.cols[j], 2 + 3 * 2);
        ck_assert_int_eq((int)t.v[j][0], p->b[j]);
        ck_assert(fabs(t.v[j][1] - p->plain_tps[j]) <= 1e-5 * p->plain_tps[j]); /* 6 significant digits */
        for (int i = 0; i < 2; i++) {
            ck_assert(fabs(t.v[j][2 + 3 * i] - p->mtp_tps[i][j]) <= 1e-5 * p->mtp_tps[i][j]);
            ck_assert(fabs(t.v[j][3 + 3 * i] - p->mtp_per_pass[i][j]) <= 1e-5 * p->mtp_per_pass[i][j]);
            const double speedup = p->mtp_tps[i][j] / p->plain_tps[j];
            ck_assert(fabs(t.v[j][4 + 3 * i] - speedup) <= 1e-5 * speedup);
        }
    }
    snprintf(path, sizeof path, "%s/speedup_batch.gp", dir);
    gp = fopen(path, "r");
    ck_assert_ptr_nonnull(gp);
    script[fread(script, 1, sizeof script - 1, gp)] = '\0';
    fclose(gp);
    ck_assert(strstr(script, "set multiplot layout 1,2") && strstr(script, "unset multiplot"));
    ck_assert(strstr(script, "MEASURED on this machine's CPU engine") && strstr(script, "test model, CPU engine"));
    for (int i = 0; i < 2; i++) { /* the speed-up column of each k */
        char use[96];
        snprintf(use, sizeof use, "'speedup_batch_measured.dat' using 1:%d ", 5 + 3 * i);
        ck_assert_msg(strstr(script, use), "speedup_batch.gp does not draw column %d", 5 + 3 * i);
    }
    check_script_references(dir, "speedup_batch");
    if (plots_have_gnuplot()) ck_assert_msg(plots_render(dir, "speedup_batch", "png", &err) == 0, "%s", err.msg);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_scripts_reference_existing_data) {
    char dir[512];
    int written[PLOTS_COUNT];
    write_theory(dir, sizeof dir, written);
    /* without measurements the acceptance plot has nothing to show and is left out */
    ck_assert_int_eq(written[1], 0);
    ck_assert(!file_exists(dir, "acceptance.gp"));
    for (int i = 0; i < PLOTS_COUNT; i++)
        if (written[i]) check_script_references(dir, plots_names[i]);
    harness_rmtree(dir);
}
END_TEST

/* ---- measured points ------------------------------------------------------------------------ */

static const double temps[2] = {0.0, 1.0};
#define N_PROMPTS 2
#define TOKENS 14
#define K 3

/* Zero Medusa heads on the target's lm_head: every ResBlock is the identity,
 * so each head proposes the target's own ranking of the root's position —
 * a valid proposer that is sometimes right. */
static void zero_heads(medusa_heads *h, const model *m) {
    sp_error err;
    ck_assert_msg(medusa_build(h, 3, 1, m->cfg.hidden_size, m->cfg.vocab_size, 0, &err) == 0, "%s", err.msg);
    medusa_share_lm_head(h, m->w.lm_head);
}

/* Draft, MTP and Medusa at temperatures 0 and 1 on two prompts (k = K). */
static void measure(fixture_model *target, fixture_model *draft, const medusa_heads *heads, plot_measurements *m) {
    static int p0[] = {1, 2, 3}, p1[] = {5, 9, 4, 7};
    static int *ids[N_PROMPTS] = {p0, p1};
    static int len[N_PROMPTS] = {3, 4};
    plot_prompts prompts = {N_PROMPTS, ids, len};
    plot_measure_opts o = {temps, 2, TOKENS, 11, 0};
    fixture_parts fp;
    fixture_parts_open(&fp, &target->m, &draft->m, heads);
    method_spec base = method_spec_defaults(); /* what `specula plot --k K` parses */
    base.k = K;
    sp_error err;
    ck_assert_msg(plots_measure(&fp.parts, &base, &prompts, &o, m, &err) == 0, "%s", err.msg);
    fixture_parts_close(&fp);
}

/* A run is exactly what the round loop reports for the same method, prompt
 * and seed: the draft at temperature 1 on the second prompt. */
static void check_run_is_a_generation(const plot_measurements *m, fixture_model *target, fixture_model *draft) {
    const plot_run *r = &m->runs[N_PROMPTS * 1 + 1];
    ck_assert_int_eq(m->points[r->point].method, PLOT_DRAFT);
    fixture_parts fp;
    fixture_parts_open(&fp, &target->m, &draft->m, NULL);
    char flags[96];
    snprintf(flags, sizeof flags, "--method spec --k %d --temperature 1 --max-tokens %d --no-eos", K, TOKENS);
    method_spec s = fixture_spec(flags);
    s.seed = r->seed;
    int prompt[] = {5, 9, 4, 7};
    decode_output out;
    sp_error err;
    ck_assert_msg(method_generate(&s, &fp.parts, prompt, 4, &out, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(out.acc.target_passes, r->acc.target_passes);
    ck_assert_int_eq(out.acc.committed, r->acc.committed);
    ck_assert_int_eq(out.acc.rejected_rounds, r->acc.rejected_rounds);
    ck_assert_int_eq(out.acc.proposer_steps, r->acc.proposer_steps);
    for (int d = 1; d <= K; d++) {
        ck_assert_int_eq(out.acc.accepted[d], r->acc.accepted[d]);
        ck_assert_int_eq(out.acc.proposed[d], r->acc.proposed[d]);
    }
    decode_output_free(&out);
    fixture_parts_close(&fp);
}

/* Each point is the sum of its runs. */
static void check_points_sum_their_runs(const plot_measurements *m) {
    for (int i = 0; i < m->n_points; i++) {
        long passes = 0, committed = 0, rejected = 0, steps = 0;
        for (int j = 0; j < m->n_runs; j++)
            if (m->runs[j].point == i) {
                passes += m->runs[j].acc.target_passes;
                committed += m->runs[j].acc.committed;
                rejected += m->runs[j].acc.rejected_rounds;
                steps += m->runs[j].acc.proposer_steps;
            }
        ck_assert_int_eq(m->points[i].acc.target_passes, passes);
        ck_assert_int_eq(m->points[i].acc.committed, committed);
        ck_assert_int_eq(m->points[i].acc.rejected_rounds, rejected);
        ck_assert_int_eq(m->points[i].acc.proposer_steps, steps);
        ck_assert_int_eq(m->points[i].acc.committed, (long)TOKENS * N_PROMPTS);
    }
}

/* measured.dat and measured_runs.dat say the same as the points, to the printed digits. */
static void check_measured_files(const char *dir, const plot_measurements *m) {
    static table t, runs;
    read_table(dir, "measured.dat", &t);
    read_table(dir, "measured_runs.dat", &runs);
    ck_assert_int_eq(t.n, m->n_points);
    ck_assert_int_eq(runs.n, m->n_runs);
    for (int i = 0; i < t.n; i++) {
        const run_accounting *a = &m->points[i].acc;
        double passes = t.v[i][5], committed = t.v[i][6], rejected = t.v[i][8], alpha = t.v[i][9];
        double tpp = t.v[i][10], target_b = t.v[i][13], prop_b = t.v[i][14], steps = t.v[i][15];
        double acc_sum = t.v[i][16];
        ck_assert_int_eq((long)passes, a->target_passes);
        ck_assert_int_eq((long)committed, a->committed);
        ck_printed(tpp, committed / passes);
        if (acc_sum + rejected > 0) {
            ck_printed(alpha, acc_sum / (acc_sum + rejected));
            ck_printed(t.v[i][11], expected_tokens_per_pass(alpha, (int)t.v[i][3]));
            if (i < 4) ck_printed(t.v[i][17], (target_b + t.v[i][3] * prop_b) / t.v[i][11]);
        }
        ck_printed(t.v[i][12], (passes * target_b + steps * prop_b) / committed);
        /* measured_runs.dat adds up to this row */
        double r_passes = 0, r_committed = 0;
        for (int j = 0; j < runs.n; j++)
            if ((int)runs.v[j][0] == i) {
                r_passes += runs.v[j][6];
                r_committed += runs.v[j][7];
                ck_printed(runs.v[j][11], runs.v[j][7] / runs.v[j][6]);
            }
        ck_printed(r_passes, passes);
        ck_printed(r_committed, committed);
        ck_assert_str_eq(t.word[i][1], i < 2 ? "spec" : i < 4 ? "mtp" : "medusa");
        ck_assert_int_eq((int)t.v[i][18], m->points[i].nodes);
        ck_assert_str_eq(t.word[i][19], m->points[i].rule);
        ck_assert_str_eq(t.word[i][20], m->points[i].drafts);
        if (i >= 4) ck_assert(isnan(t.v[i][17])); /* no chain formula for a tree */
    }
}

/* acceptance.dat: one block per point, reach = accepted/proposed, cond = reach_d / reach_{d−1}. */
static void check_acceptance_file(const char *dir, const plot_measurements *m) {
    static table acc;
    read_table(dir, "acceptance.dat", &acc);
    int rows = 0;
    for (int i = 0; i < m->n_points; i++) rows += m->points[i].k;
    ck_assert_int_eq(acc.n, rows);
    for (int r2 = 0; r2 < acc.n; r2++) {
        int pt = acc.block[r2], d = (int)acc.v[r2][0];
        ck_assert_int_eq(d, r2 == 0 || acc.block[r2 - 1] != pt ? 1 : (int)acc.v[r2 - 1][0] + 1);
        ck_assert_int_le(d, m->points[pt].k);
        ck_assert_int_eq((long)acc.v[r2][1], m->points[pt].acc.proposed[d]);
        ck_assert_int_eq((long)acc.v[r2][2], m->points[pt].acc.accepted[d]);
        if (acc.v[r2][1] > 0) ck_printed(acc.v[r2][3], acc.v[r2][2] / acc.v[r2][1]);
        double prev = d == 1 ? 1.0 : acc.v[r2 - 1][3];
        if (prev > 0 && !isnan(acc.v[r2][3])) ck_printed(acc.v[r2][4], acc.v[r2][3] / prev);
        long trials = d == 1 ? m->points[pt].acc.proposed[1] : m->points[pt].acc.accepted[d - 1];
        ck_assert_int_eq((long)acc.v[r2][5], trials);
        double c = acc.v[r2][4];
        if (trials > 0 && !isnan(c)) {
            double low, high;
            plots_wilson(c, trials, &low, &high);
            ck_printed(acc.v[r2][6], low);
            ck_printed(acc.v[r2][7], high);
            ck_assert(low <= c + PRINTED && c <= high + PRINTED && low >= -PRINTED && high <= 1 + PRINTED);
        }
    }
}

START_TEST(test_measured_points_match_their_runs) {
    fixture_model target, draft;
    fixture_model_open(&target, "micro", 5, NULL);
    fixture_model_open(&draft, "micro-draft", 6, NULL);
    medusa_heads heads;
    zero_heads(&heads, &target.m);
    plot_measurements m;
    measure(&target, &draft, &heads, &m);
    ck_assert_int_eq(m.n_points, 6); /* draft, MTP and Medusa at two temperatures */
    ck_assert_int_eq(m.n_runs, 6 * N_PROMPTS);
    ck_assert_int_eq(m.points[4].method, PLOT_MEDUSA);
    ck_assert_int_eq(m.points[4].nodes, 63); /* the built-in tree for three heads */
    ck_assert_str_eq(m.points[4].rule, "greedy");
    ck_assert_str_eq(m.points[5].rule, "exact-norepl");
    /* MTP as generate runs it: argmax drafts at temperature 0, sampled above */
    ck_assert_str_eq(m.points[2].drafts, "argmax");
    ck_assert_str_eq(m.points[3].drafts, "sampled");
    ck_assert_str_eq(m.points[0].drafts, "-");
    check_run_is_a_generation(&m, &target, &draft);
    check_points_sum_their_runs(&m);

    char dir[512];
    harness_tmpdir(dir, sizeof dir);
    plot_theory th;
    theory(&th);
    int written[PLOTS_COUNT];
    sp_error err;
    ck_assert_msg(plots_write(dir, &th, &m, written, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(written[1], 1);
    check_measured_files(dir, &m);
    check_acceptance_file(dir, &m);
    for (int i = 0; i < PLOTS_COUNT; i++)
        if (written[i]) check_script_references(dir, plots_names[i]);

    harness_rmtree(dir);
    plots_measurements_free(&m);
    medusa_free(&heads);
    fixture_model_close(&draft);
    fixture_model_close(&target);
}
END_TEST

START_TEST(test_wilson_interval) {
    double low, high;
    /* p = 0.5, n = 100: centre 0.5, half = 1.96·√(0.0025 + 0.00009604)/1.0384 = 0.0960 */
    plots_wilson(0.5, 100, &low, &high);
    ck_assert(fabs(low - 0.40383) < 1e-5 && fabs(high - 0.59617) < 1e-5);
    /* p = 0, n = 10: [0, z²/(n + z²)] = [0, 0.27753] */
    plots_wilson(0.0, 10, &low, &high);
    ck_assert(fabs(low) < 1e-12 && fabs(high - 3.8416 / 13.8416) < 1e-12);
    plots_wilson(0.3, 0, &low, &high);
    ck_assert(isnan(low) && isnan(high));
}
END_TEST

START_TEST(test_measure_without_a_proposer_fails) {
    fixture_model target;
    fixture_model_open(&target, "micro", 5, NULL);
    target.m.w.has_mtp = 0; /* as if the checkpoint had no MTP module */
    fixture_parts fp;
    fixture_parts_open(&fp, &target.m, NULL, NULL);
    ck_assert_ptr_null(fp.parts.mtp);
    static int p0[] = {1, 2};
    static int *ids[1] = {p0};
    static int len[1] = {2};
    plot_prompts prompts = {1, ids, len};
    plot_measure_opts o = {temps, 1, 4, 1, 0};
    plot_measurements m;
    const method_spec base = method_spec_defaults();
    sp_error err;
    ck_assert_int_eq(plots_measure(&fp.parts, &base, &prompts, &o, &m, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "nothing to measure"));
    fixture_parts_close(&fp);
    target.m.w.has_mtp = 1;
    fixture_model_close(&target);
}
END_TEST

/* ---- images ------------------------------------------------------------------------------------ */

START_TEST(test_gnuplot_draws_every_plot) {
    fixture_model target, draft;
    fixture_model_open(&target, "micro", 5, NULL);
    fixture_model_open(&draft, "micro-draft", 6, NULL);
    medusa_heads heads;
    zero_heads(&heads, &target.m);
    plot_measurements m;
    measure(&target, &draft, &heads, &m);
    char dir[512];
    harness_tmpdir(dir, sizeof dir);
    plot_theory th;
    theory(&th);
    int written[PLOTS_COUNT];
    sp_error err;
    ck_assert_msg(plots_write(dir, &th, &m, written, &err) == 0, "%s", err.msg);
    static const char *const fmts[2] = {"png", "svg"};
    for (int i = 0; i < PLOTS_COUNT; i++) {
        ck_assert_int_eq(written[i], 1);
        for (int j = 0; j < 2; j++) {
            ck_assert_msg(plots_render(dir, plots_names[i], fmts[j], &err) == 0, "%s", err.msg);
            char file[256];
            snprintf(file, sizeof file, "%s.%s", plots_names[i], fmts[j]);
            ck_assert_msg(file_exists(dir, file), "gnuplot wrote no %s", file);
        }
    }
    /* a script that does not exist is an error, not a silent success */
    ck_assert_int_eq(plots_render(dir, "no_such_plot", "png", &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "no_such_plot.gp"));
    harness_rmtree(dir);
    plots_measurements_free(&m);
    medusa_free(&heads);
    fixture_model_close(&draft);
    fixture_model_close(&target);
}
END_TEST

Suite *plots_suite(void) {
    Suite *s = suite_create("plots");
    TCase *tc = harness_tcase("data_files", 30);
    tcase_add_test(tc, test_tokens_per_pass_file);
    tcase_add_test(tc, test_speedup_file_marks_each_optimum);
    tcase_add_test(tc, test_bytes_file);
    tcase_add_test(tc, test_scripts_reference_existing_data);
    tcase_add_test(tc, test_batch_measured_points_file);
    suite_add_tcase(s, tc);
    tc = harness_tcase("measured", 60);
    tcase_add_test(tc, test_measured_points_match_their_runs);
    tcase_add_test(tc, test_measure_without_a_proposer_fails);
    tcase_add_test(tc, test_wilson_interval);
    suite_add_tcase(s, tc);
    if (plots_have_gnuplot()) {
        tc = harness_tcase("images", 60);
        tcase_add_test(tc, test_gnuplot_draws_every_plot);
        suite_add_tcase(s, tc);
    } else {
        harness_skip("plots", "gnuplot_draws_every_plot", "gnuplot is not installed (Debian: gnuplot-nox)");
    }
    return s;
}
