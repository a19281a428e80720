/* bench.h — what the files of `specula bench` share: a table row, where its time went (bench_split.c), the costs
 * measured apart from the runs (bench_cost.c) and the speed-up the cost model predicts (bench_model.c). */
#ifndef SPECULA_CLI_BENCH_H
#define SPECULA_CLI_BENCH_H

#include <string.h>

#include "method_cli.h"

/* The monotonic clock in seconds, and the median of x[n] (x is sorted in place): what every part of bench times
 * and summarises with (bench_split.c). */
double bench_now_s(void);
double bench_median(double *x, int n);

/* Seconds of one run, each part timed where decode_run calls it. */
typedef struct {
    double pass_s;        /* target verify + commit: the passes of the rounds */
    double prefill_s;     /* target prefill of the prompt (all but its last token) */
    double proposer_s;    /* proposer propose + commit: drafting, marks, rewinds, catch-up and real steps */
    double pass_median_s; /* the median pass */
    long passes;
} bench_split;

/* Milliseconds per committed token, each the median over a row's runs. */
typedef struct {
    double pass, proposer, prefill;
    double pass_at_median; /* the passes had each taken the run's median pass: what stalls leave out */
    double other;          /* the rest of the run's wall time: acceptance, trees, the method's build and release */
    double total;          /* the run's wall time */
} bench_per_token;

/* Rows of the table. */
/* plain decoding and every built-in method that drafts, or with --k-sweep each chain method at each k (MTP at
 * both draft kinds above temperature 0) */
#define BENCH_MAX_ROWS 32
/* k values one --k-sweep may list */
#define BENCH_MAX_KS 8

typedef struct {
    method_spec spec; /* what the row runs */
    double median_tps, tokens_per_pass;
    double min_tps, max_tps; /* the spread of the runs' tokens/s */
    /* The speed-up over plain decoding run by run: run r of this row over run r of plain decoding, which ran beside
     * it in the same step of the loop; their median, least and greatest (NAN for plain decoding itself) */
    double paired_speedup, paired_min, paired_max;
    double median_prefill_tps, median_decode_tps; /* prompt tokens / TTFT; tokens after the first / their time */
    double engine_bytes_per_token;                /* one weight read per pass, at the stored dtype */
    double read_bytes_per_token; /* what this backend reads: the engine once per pass, the reference once per
                                  * position in float32 */
    run_accounting pooled;       /* the runs' counters summed: α̂ and tokens per pass over every round */
    bench_per_token ms;          /* where the runs' time went */
    double predicted; /* the cost model's speed-up over plain decoding (bench_model.c); NAN when not modelled */
    double median_ttft_ms, median_e2e_ms; /* prompt in to first token out; prompt in to last token out */
    char gate[8];                         /* the configuration's gate verdict: "passed", "FAILED", "none" */
} bench_row;

/* The gate's verdict of every row's configuration (bench_gate.c): from the gate's cache, or (run) by running the
 * gate on each first, printing each verdict and recording it. 0, or an exit status (printed). */
int bench_gate_rows(int run, const model_flags *models, loaded_models *lm, bench_row *rows, int n);
/* 1 when a row's speed figures may be quoted: its configuration passed the gate. */
static inline int bench_row_gated(const bench_row *r) { return !strcmp(r->gate, "passed"); }

/* `specula bench --synthetic DIR ...` (bench_synthetic.c): its own flags, exit status as a command. */
int bench_synthetic(int argc, char **argv);
/* `specula bench [MODEL] --batch B,...` (bench_batch.c): B sequences a pass on the CPU engine; its own flags. */
int bench_batch(int argc, char **argv);

/* One generation of s as method_generate runs it, with the target and the
 * proposer behind timing wrappers that add their time to *split. */
int bench_generate(const method_spec *s, const method_parts *parts, const int *prompt, int n_prompt, decode_output *out,
                   bench_split *split, sp_error *err);

/* ---- the costs apart (bench_cost.c) and the model (bench_model.c) --------------------------- */

#define BENCH_COST_MAX_SIZES 12

typedef struct {
    int reps;                               /* repetitions; every figure is a median */
    int k;                                  /* the chains' k: size k + 1 is what a round of spec or MTP verifies */
    int tree_m;                             /* spec's draft tree (--tree-shape): its nodes + 1, timed as a chain of
                                             * as many (the same rows, another mask); 0: spec is a chain */
    int position;                           /* where the passes start: the runs' middle position */
    int n_sizes;                            /* verify sizes measured, ascending; m[0] = 1 */
    int m[BENCH_COST_MAX_SIZES];            /* nodes of the verified chain */
    double pass_ms[BENCH_COST_MAX_SIZES];   /* one pass: verify an m-node chain, commit all of it */
    double draft_step_ms, mtp_step_ms;      /* one step of one position, the mean of k in a row (NAN: no model) */
    double medusa_round_ms, medusa_pass_ms; /* the heads' proposal of one round; a pass over that tree */
    /* The same over that rep's own t(1), the median of the reps: paired within a rep, these ratios (what the
     * model needs) do not move with the machine's speed from one rep to the next as the times do. */
    double pass_ratio[BENCH_COST_MAX_SIZES];
    double draft_ratio, mtp_ratio, medusa_round_ratio, medusa_pass_ratio;
    int medusa_nodes; /* nodes of that tree, the root included (0: no heads) */
} bench_costs;

/* The measurement, rep by rep. bench_costs_begin prepares a sequence of `position` tokens (the runs' middle: a
 * pass's cost grows with the context it attends to), or returns NULL with a message. Each bench_costs_rep times,
 * once and in one order, on a fork of that sequence: a pass of a chain of each size in {1, 2, 4, 8, 16, 32, 64,
 * k + 1 for base's k and each of the n_ks values ks (a sweep; NULL, 0: none)} (capped at the target's largest tree),
 * the draft and MTP steps of one position, and a proposal by the heads of `medusa` (NULL: none) with the pass over its
 * tree. rep < 0 is a warm-up, not kept. bench_costs_end writes the medians into *c when ok (else empties it), resets
 * the steppers and frees the run. The caller may decode with the same models between reps. */
typedef struct bench_cost_run bench_cost_run;
bench_cost_run *bench_costs_begin(const loaded_models *lm, const method_spec *base, const method_spec *medusa,
                                  const int *ks, int n_ks, int position, int reps, bench_costs *c, sp_error *err);
int bench_costs_rep(bench_cost_run *r, int rep, sp_error *err);
void bench_costs_end(bench_cost_run *r, int ok);

/* The model's figures for a row, from the costs and the row's pooled counters. */
typedef struct {
    double tokens;  /* E(α̂, k) for a chain; the measured tokens per pass for Medusa and plain decoding */
    double alpha;   /* α̂ (NAN for Medusa and plain decoding) */
    int m;          /* nodes one round verifies */
    double pass_ms; /* t(m): a pass over them */
    double prop_ms; /* P: the proposer per round, k steps or the heads once */
    double t1_ms;   /* t(1) */
    double r, c;    /* t(m)/t(1) and P/t(1), from the paired ratios */
    double speedup; /* E / (r + c) */
} bench_model;

/* 0 and *out filled, or −1 when the costs it needs were not measured. */
int bench_model_row(const bench_costs *c, const bench_row *row, bench_model *out);

/* A row whose measured speed-up is off the predicted one by more than this fraction is called out. */
#define BENCH_GAP_FLAG 0.15

void bench_costs_print(const bench_costs *c, const char *backend);
/* The cost model beside the runs: per row its inputs, and per committed token
 * the model's milliseconds beside the run's; then every row whose measured
 * speed-up is more than 15 % off the predicted one, with the part of the
 * time that differs most. */
void bench_model_print(const bench_costs *c, const bench_row *rows, const int *ok, int n);
/* "pass_costs": {...}, (a key of the top-level JSON object, comma included). */
void bench_costs_json(const bench_costs *c);
/* The row's model and split as more keys of its JSON object (", key: value"…): the predicted and the
 * measured speed-up (null without costs or without plain decoding), α̂, the nodes a round verifies, and
 * milliseconds per committed token in the passes, the proposer, the prefill and the rest. */
void bench_row_json(const bench_costs *c, const bench_row *row, const bench_row *plain);

#endif
