/* bench_batch_decode.c — B sequences decoded together by decode_batch_run on one engine, each with its own stepper
 * and proposer, for `specula bench --batch` and plot (e)'s measured points. Only the clock is added to the loop,
 * so what is timed is exactly what `generate` would run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_batch.h"
#include "decode_batch.h"
#include "target_stepper.h"

/* One sequence's models and method. */
typedef struct {
    stepper st;
    method_built m;
    int have_stepper, have_method;
} batch_seq;

static void seq_release(batch_seq *q) {
    if (q->have_method) method_release(&q->m);
    if (q->have_stepper) q->st.release(&q->st);
}

/* Sequence q's stepper (when the method has a proposer that steps a model) and method. */
static int seq_build(const batch_bench *bb, const method_spec *spec, batch_seq *q, sp_error *err) {
    method_parts parts = {bb->t, NULL, NULL, NULL};
    if (method_has(spec, METHOD_MTP_MODULE)) {
        if (engine_mtp_stepper_build(&q->st, bb->e, err)) return -1;
        q->have_stepper = 1;
        parts.mtp = &q->st;
    } else if (method_has(spec, METHOD_DRAFT_MODEL)) {
        if (!bb->draft) return sp_fail(err, "the spec rows need a draft model (--draft DIR, or MODEL-draft beside it)");
        if (target_stepper_build(&q->st, bb->draft, err)) return -1;
        q->have_stepper = 1;
        parts.draft = &q->st;
    }
    if (method_build(&q->m, spec, &parts, err)) return -1;
    q->have_method = 1;
    return 0;
}

/* One run: B sequences decoded to bb->tokens each; *tps summed over them (the wall time of decode_batch_run,
 * the prompts' prefill included), *per_pass committed tokens per verify pass. */
static int run_once(const batch_bench *bb, const method_spec *spec, int B, int one_pass, double *tps, double *per_pass,
                    sp_error *err) {
    const int V = bb->t->cfg->vocab_size, n = bb->prompt_tokens;
    batch_seq *q = sp_xcalloc((size_t)B, sizeof *q, "batch sequences");
    decode_job *jobs = sp_xcalloc((size_t)B, sizeof *jobs, "batch jobs");
    decode_output *out = sp_xcalloc((size_t)B, sizeof *out, "batch outputs");
    int *prompts = sp_xcalloc((size_t)B * n, sizeof(int), "prompts");
    int rc = 0;
    for (int j = 0; j < B && !rc; j++) {
        rc = seq_build(bb, spec, &q[j], err);
        for (int i = 0; i < n; i++) prompts[(size_t)j * n + i] = (j + 1 + i) % V;
        if (rc) break;
        jobs[j] = (decode_job){q[j].m.proposer, prompts + (size_t)j * n, n, q[j].m.options};
        jobs[j].opt.max_tokens = bb->tokens;
        jobs[j].opt.stop_at_eos = 0;
        jobs[j].opt.seed = spec->seed + (uint64_t)j; /* each sequence its own draws */
    }
    decode_batch_options bo = {!one_pass, 0, 0};
    if (!rc) {
        const double t0 = bench_now_s();
        rc = decode_batch_run(bb->t, jobs, B, &bo, out, err);
        const double s = bench_now_s() - t0;
        long tokens = 0;
        for (int j = 0; j < B && !rc; j++) tokens += out[j].n, decode_output_free(&out[j]);
        *tps = tokens / s;
        *per_pass = bo.passes ? (double)tokens / bo.passes : 0;
    }
    for (int j = 0; j < B; j++) seq_release(&q[j]);
    free(q), free(jobs), free(out), free(prompts);
    return rc;
}

#define MAX_BATCH_RUNS 64

int bench_batch_measure(const batch_bench *bb, const method_spec *spec, int B, batch_figure *out, sp_error *err) {
    if (bb->runs < 1 || bb->runs > MAX_BATCH_RUNS) return sp_fail(err, "runs must be in [1, %d]", MAX_BATCH_RUNS);
    double x[2][MAX_BATCH_RUNS], per[MAX_BATCH_RUNS], warm, warm_per;
    const int ways = bb->one_pass_only ? 1 : 2;
    for (int w = 0; w < ways; w++)
        if (run_once(bb, spec, B, w == 0, &warm, &warm_per, err)) return -1;
    for (int run = 0; run < bb->runs; run++)
        for (int w = 0; w < ways; w++) {
            const int one_pass = ways == 1 || (w + run) % 2 == 0; /* which way goes first alternates too */
            double rate, pp;
            if (run_once(bb, spec, B, one_pass, &rate, &pp, err)) return -1;
            x[one_pass ? 0 : 1][run] = rate;
            if (one_pass) per[run] = pp;
        }
    out->tps_one_pass = bench_median(x[0], bb->runs);
    out->tps_each_pass = ways == 2 ? bench_median(x[1], bb->runs) : NAN;
    out->per_pass = bench_median(per, bb->runs);
    return 0;
}
