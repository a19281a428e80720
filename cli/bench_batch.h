/* bench_batch.h — what `specula bench --batch` and plot (e)'s measured points share: B sequences decoded together
 * by the batched round loop (decode_batch.h) on one engine, each with its own proposer, timed with one verify pass
 * a round over all of them against one pass a sequence. */
#ifndef SPECULA_CLI_BENCH_BATCH_H
#define SPECULA_CLI_BENCH_BATCH_H

#include "bench.h"
#include "engine_mtp.h"
#include "engine_target.h"
#include "plots/plots.h"

/* The models the rows run with (borrowed). */
typedef struct {
    engine *e;            /* the target's engine (its MTP module serves the MTP rows) */
    decode_target *t;     /* the target over e */
    decode_target *draft; /* a draft model's target for the spec rows; NULL: none */
    int tokens;           /* tokens each sequence decodes (EOS ignored) */
    int prompt_tokens;    /* each sequence's prompt: sequence j's ids j + 1, j + 2, ... */
    int runs;             /* runs per figure, the median kept */
    int one_pass_only;    /* 1: one pass a round only, tps_each_pass NAN (plot (e) needs no baseline) */
} batch_bench;

/* One method at one batch size: medians over the runs. */
typedef struct {
    double tps_one_pass;  /* committed tokens/s summed over the B sequences, one verify pass a round over all */
    double tps_each_pass; /* the same with one verify pass a sequence */
    double per_pass;      /* committed tokens per verify pass (summed over the sequences), one pass a round */
} batch_figure;

/* Runs spec (a finished method_spec: greedy, sample, mtp or spec) on B sequences, the two ways alternating run
 * by run after a warm-up run of each (the first touches of weights and buffers), so both see the same load.
 * Fails with a clear message when the method needs a model bb lacks. */
int bench_batch_measure(const batch_bench *bb, const method_spec *spec, int B, batch_figure *out, sp_error *err);

/* Plot (e)'s measured points on the model in dir (its MTP module; a CPU engine in bf16 on `threads` threads):
 * plain greedy decoding and greedy MTP with k = 1…4 at B = 1, 2, 4, 8 through bench_batch_measure, progress on
 * stderr. 1 (and *out empty) when the model has no MTP module, 0 when measured, −1 on failure. */
int plot_batch_measure(const char *dir, int threads, plot_batch_points *out, sp_error *err);

#endif
