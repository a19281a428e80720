/* plot_batch_measure.c — plot (e)'s measured points: the speed-up of greedy MTP over plain greedy decoding with
 * B sequences decoded together on the CPU engine, from the code of `specula bench --batch`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_batch.h"

/* Small budgets keep `make plots` quick. The figures are then medians of a few short runs, noisy on a loaded
 * machine, so the data file records the date and the load average. */
#define PLOT_BATCH_TOKENS 96
#define PLOT_BATCH_RUNS 5
static const int sizes[] = {1, 2, 4, 8};
static const int ks[] = {1, 2, 3, 4};
#define N_SIZES (int)(sizeof sizes / sizeof sizes[0])
#define N_KS (int)(sizeof ks / sizeof ks[0])

/* "YYYY-MM-DD HH:MM UTC, load average L at the start". */
static void stamp(char *buf, size_t size) {
    const time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm);
    double load[1] = {-1};
    if (getloadavg(load, 1) < 1) load[0] = -1;
    snprintf(buf, size, "%s, load average %.2f at the start", date, load[0]);
}

/* The model's folder name (trailing slashes ignored), for the legend. */
static void folder_name(const char *dir, char *buf, size_t size) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    size_t start = n;
    while (start > 0 && dir[start - 1] != '/') start--;
    snprintf(buf, size, "%.*s", (int)(n - start), dir + start);
}

static int measure_all(engine *e, const char *dir, int threads, plot_batch_points *out, sp_error *err) {
    decode_target t;
    engine_target_build(&t, e);
    const batch_bench bb = {e, &t, NULL, PLOT_BATCH_TOKENS, 4, PLOT_BATCH_RUNS, 1};
    char name[256];
    folder_name(dir, name, sizeof name);
    snprintf(out->setup, sizeof out->setup,
             "%s, CPU engine (bf16, %d thread%s), T = 0, %d tokens a sequence, median of %d runs", name, threads,
             threads > 1 ? "s" : "", PLOT_BATCH_TOKENS, PLOT_BATCH_RUNS);
    stamp(out->when, sizeof out->when);
    int rc = 0;
    for (int j = 0; j < N_SIZES && !rc; j++) {
        out->b[j] = sizes[j];
        method_spec plain = method_spec_defaults();
        batch_figure f;
        rc = method_spec_parse(&plain, "--method greedy", err) || bench_batch_measure(&bb, &plain, sizes[j], &f, err);
        if (rc) break;
        out->plain_tps[j] = f.tps_one_pass;
        for (int i = 0; i < N_KS && !rc; i++) {
            char flags[64];
            snprintf(flags, sizeof flags, "--method mtp --k %d --temperature 0", ks[i]);
            method_spec s = method_spec_defaults();
            rc = method_spec_parse(&s, flags, err) || bench_batch_measure(&bb, &s, sizes[j], &f, err);
            out->k[i] = ks[i];
            out->mtp_tps[i][j] = f.tps_one_pass;
            out->mtp_per_pass[i][j] = f.per_pass;
        }
        fprintf(stderr, "measuring batch B=%d on the CPU engine: plain %.0f tokens/s, MTP k=3 %.2fx\n", sizes[j],
                out->plain_tps[j], rc ? 0 : out->mtp_tps[2][j] / out->plain_tps[j]);
    }
    t.release(&t);
    if (rc) return -1;
    out->n_b = N_SIZES;
    out->n_k = N_KS;
    return 0;
}

int plot_batch_measure(const char *dir, int threads, plot_batch_points *out, sp_error *err) {
    memset(out, 0, sizeof *out);
    engine_options o = engine_defaults();
    o.threads = threads;
    engine e;
    if (engine_open(&e, dir, &o, err)) return sp_wrap(err, "the batch points' CPU engine: ");
    int rc = 1;
    if (e.cfg.mtp_num_layers > 0) rc = measure_all(&e, dir, threads, out, err) ? -1 : 0;
    engine_close(&e);
    if (rc < 0) memset(out, 0, sizeof *out);
    return rc;
}
