/* plots.h — the plots of `specula plot` / `make plots`: measured points from decoding runs beside the analytic
 * curves. Each plot is a data file (.dat) and a gnuplot script (.gp) that draws it, so a user can restyle any
 * plot; gnuplot is only needed for the images. */
#ifndef SPECULA_PLOTS_H
#define SPECULA_PLOTS_H

#include <stdint.h>

#include "accounting.h"
#include "decode.h"
#include "medusa.h"
#include "method.h"
#include "roofline.h"

/* The plots, in the order of the documentation: (a) … (e). */
#define PLOTS_COUNT 5
extern const char *const plots_names[PLOTS_COUNT];

/* ---- measured points ------------------------------------------------------ */

typedef struct {
    int n;
    int **ids; /* [n] → [len[i]] token ids */
    int *len;  /* [n] */
} plot_prompts;

/* The proposers a measurement can run: the three a model may carry, and the method given with --method (any other
 * that drafts: prompt lookup, bigram, a plug-in). */
typedef enum { PLOT_DRAFT = 0, PLOT_MTP, PLOT_MEDUSA, PLOT_GIVEN, PLOT_METHOD_COUNT } plot_method;

typedef struct {
    plot_method method;
    const char *label; /* "draft", "MTP", "Medusa", or the given method's name */
    double temperature;
    int k;              /* chain depth, or the Medusa tree's depth */
    int nodes;          /* proposed nodes per round: k for a chain, the tree's size for Medusa and --tree-shape */
    const char *rule;   /* the acceptance rule of the runs: "exact", "greedy", … */
    const char *drafts; /* MTP: "argmax" or "sampled"; "-" for the others */
    int runs;           /* generations summed into acc */
    run_accounting acc; /* the counters of those runs, added up */
} plot_point;

typedef struct {
    int point;  /* index into plot_measurements.points */
    int prompt; /* index into the prompts */
    uint64_t seed;
    run_accounting acc; /* this generation's own accounting */
} plot_run;

/* (e)'s measured points: MTP against plain decoding with B sequences decoded together on the CPU engine,
 * measured by `specula bench --batch`'s code (cli/bench_batch_decode.c) on the embedded model — another
 * machine and model than the roofline's, which the plot says. */
#define PLOT_BATCH_MAX_B 8
#define PLOT_BATCH_MAX_K 4
typedef struct {
    int n_b, n_k;                       /* 0 sizes: nothing measured */
    int b[PLOT_BATCH_MAX_B];            /* batch sizes */
    int k[PLOT_BATCH_MAX_K];            /* MTP drafts per round */
    double plain_tps[PLOT_BATCH_MAX_B]; /* plain decoding: tokens/s summed over the B sequences (one pass a round) */
    double mtp_tps[PLOT_BATCH_MAX_K][PLOT_BATCH_MAX_B];      /* MTP with k[i] drafts, the same way */
    double mtp_per_pass[PLOT_BATCH_MAX_K][PLOT_BATCH_MAX_B]; /* its committed tokens per verify pass, summed */
    char setup[512]; /* model, backend, temperature, tokens and runs, for the data file and the legend */
    char when[128];  /* date and load average at the start */
} plot_batch_points;

typedef struct {
    plot_point *points;
    int n_points;
    plot_run *runs;
    int n_runs;
    plot_batch_points batch; /* (e)'s measured points (batch.n_b = 0: none) */
} plot_measurements;

typedef struct {
    const double *temperatures; /* [n_temperatures] 0 = greedy */
    int n_temperatures;
    int tokens;    /* tokens per generation (EOS does not stop it) */
    uint64_t seed; /* run r of a (method, temperature) uses seed + r */
    int progress;  /* 1: a line per generation on stderr */
} plot_measure_opts;

/* Runs every method the parts allow (a draft model, the MTP module, Medusa
 * heads: whichever parts are not NULL) at every temperature on every prompt,
 * and keeps each run's accounting and the sums per (method, temperature).
 * Each method is `base` (the command's flags: k, rule, MTP drafts, tree, …)
 * built by the method factory with the point's temperature, so its defaults
 * are generate's (method_spec_finish in method.h). */
int plots_measure(const method_parts *parts, const method_spec *base, const plot_prompts *prompts,
                  const plot_measure_opts *o, plot_measurements *m, sp_error *err);
void plots_measurements_free(plot_measurements *m);

/* Adds the counters of src into dst (method, k and the byte figures of dst
 * are kept; dst must have been initialised). */
void plots_accounting_add(run_accounting *dst, const run_accounting *src);

/* Per-position acceptance of an accounting, d = 1..k:
 *   reach[d] = accepted[d] / proposed[d]  (what accounting_print reports:
 *              P(the accepted path reaches depth d), α^d under i.i.d.);
 *   cond[d]  = reach[d] / reach[d−1], reach[0] = 1 (P(position d accepted |
 *              positions 1..d−1 were), α under i.i.d.). NAN where undefined. */
void plots_acceptance(const run_accounting *a, int d, double *reach, double *cond);

/* The 95 % Wilson score interval [low, high] of a proportion p observed in
 * n trials (inside [0, 1] even at p = 0 or 1); NAN for n = 0. */
void plots_wilson(double p, long n, double *low, double *high);

/* ---- a researcher's own points (plot_extra.c) --------------------------------- */

#define PLOT_EXTRA_MAX 64
#define PLOT_EXTRA_LABEL 64
typedef struct {
    int n;
    char label[PLOT_EXTRA_MAX][PLOT_EXTRA_LABEL];
    double alpha[PLOT_EXTRA_MAX], tokens_per_pass[PLOT_EXTRA_MAX];
} plot_extra;

/* Reads `path`: LABEL ALPHA TOKENS_PER_PASS a line ('#' comments), or a message naming the line. */
int plots_extra_read(const char *path, plot_extra *out, sp_error *err);

/* ---- the analytic side ------------------------------------------------------ */

typedef struct {
    /* the embedded pair, for the bandwidth plot (0 bytes: absent) */
    const char *pair_name;
    double pair_target_bytes, pair_draft_bytes, pair_mtp_bytes;
    /* the large model with its MTP layer (0 bytes: absent) */
    const char *big_name;
    double big_target_bytes, big_mtp_bytes;
    /* the batch model */
    roofline_device device;
    roofline_workload big_workload;
    double batch_alpha; /* α assumed for the batch plot */
    /* Monte-Carlo beside E(α,k) */
    long mc_rounds;
    uint64_t mc_seed;
    const plot_extra *extra; /* points of one's own on (a) (--extra), or NULL */
} plot_theory;

/* mkdir -p dir; an error names the part that could not be made, or says dir is not a folder. */
int plots_make_dir(const char *dir, sp_error *err);

/* Writes every .dat and .gp into dir (created when missing). m may be NULL
 * or empty: then the measured layers are left out and the acceptance plot,
 * which has nothing else to show, is not written (*written says which plots
 * were). written[PLOTS_COUNT] may be NULL. */
int plots_write(const char *dir, const plot_theory *t, const plot_measurements *m, int *written, sp_error *err);

/* ---- drawing ------------------------------------------------------------------ */

/* 1 when a `gnuplot` executable is on PATH. */
int plots_have_gnuplot(void);

/* Runs `gnuplot -e "fmt='FMT'" NAME.gp` inside dir: fmt "png" (pngcairo),
 * "svg", or "dumb" (to this process's stdout). Fails with gnuplot's exit
 * status in the message. */
int plots_render(const char *dir, const char *name, const char *fmt, sp_error *err);

#endif
