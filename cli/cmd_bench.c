/* cmd_bench.c — `specula bench MODEL`: decode speed as a table, median tokens/s of plain decoding and of each
 * speculative method the model supports, with the bytes read and the bandwidth they imply, and beside the
 * measured ratios the speed-up the cost model predicts. A benchmark, not a test: it asserts nothing. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "bench.h"
#include "commands.h"
#include "csv.h"
#include "tokenizer.h"

/* Method flags bench sets itself. */
static const char *const refused[] = {"--method", "--max-tokens", "--no-eos", NULL};

static void usage(FILE *f) {
    fprintf(f,
            "usage: specula bench [MODEL] [options]\n"
            "Times decoding MODEL (default %s)\n"
            "on the fastest backend present (the CUDA engine where a GPU is, else the CPU engine; or --backend):\n"
            "plain decoding, MTP when the model has an MTP\n"
            "module, draft-model speculation when a draft is given or sits beside the model as\n"
            "MODEL-draft, Medusa when heads are given or sit beside it as\n"
            "MODEL-medusa/medusa_heads.safetensors, and prompt lookup (it needs no model). Prints the median tokens/s "
            "of N runs of N tokens,\n"
            "the weight bytes read per token and the implied bandwidth: the engine reads its weights\n"
            "once per pass; the reference evaluates every position on its own over float32 copies, so\n"
            "it reads them once per position at 4 bytes per parameter. Every row is built from the same\n"
            "method flags as `specula generate` (and `plot`), so its defaults are generate's: MTP\n"
            "drafts argmax at temperature 0 and sampled above; Medusa greedy at temperature 0, exact\n"
            "without replacement above. The last column says what each row ran.\n"
            "Then the cost model: one target pass (verify an m-node chain, commit all of it) timed apart for\n"
            "m = 1, 2, 4, 8, 16, 32, 64 and k + 1, one draft and one MTP step, the Medusa heads' round and the\n"
            "pass over their tree (medians of interleaved reps at the runs' middle position); from them and\n"
            "the runs' alpha each row's predicted speed-up, E / (t(m)/t(1) + P/t(1)) (E = E(alpha, k) for a\n"
            "chain, the measured tokens per pass for Medusa and lookup; P the proposer per round; lookup's\n"
            "t(m) is t(k + 1) in the rounds whose lookup hit, t(1) in the rest), beside the measured\n"
            "one, the time per token each part of the runs took, and for rows more than 15 %% off, why.\n"
            "  --runs N             runs per row (default 5); run r uses seed S + r (S: --seed, default 1)\n"
            "  --tokens N           tokens per run (default 64)\n"
            "  --prompt-tokens N    prompt length: ids 1, 2, ..., N (modulo the vocabulary; default 4)\n"
            "  --prompt TEXT        the prompt as text instead, encoded with MODEL/tokenizer.json (text that the\n"
            "                       continuation repeats is where prompt lookup drafts)\n"
            "  --plain              only the plain decoding row (no cost model unless --cost-reps is given)\n"
            "  --k-sweep K,...      a row per k for each method that drafts a chain (spec, mtp, lookup), and above\n"
            "                       temperature 0 an MTP row per draft kind (argmax, sampled); the cost model times\n"
            "                       a pass of every k + 1\n"
            "  --cost-reps N        reps of each pass cost (default 9; 0: no cost model)\n"
            "  --json               one JSON object instead of the table: per row the median tokens/s, and\n"
            "                       apart the prefill rate (prompt tokens / time to the first token) and the\n"
            "                       decode rate (tokens after the first / the time they took); max RSS; the\n"
            "                       pass costs, and per row the predicted and measured speed-up and its split\n"
            "  --csv                the table as comma-separated values (a header row, then one row per method)\n"
            "  --gate               run `specula gate` on every row's configuration first (about 5 s a row); without\n"
            "                       it each row shows the verdict recorded for its configuration, and the speed of a\n"
            "                       row whose configuration has not passed is marked withheld (docs/gate.md)\n"
            "  --method NAME        only this method's row, beside plain decoding (spec | mtp | medusa | lookup)\n"
            "  --draft DIR, --medusa FILE, --medusa-ignore-base   the companions (default: beside MODEL)\n"
            "  --batch B,...        B sequences decoded together on the CPU engine, one pass a round against one\n"
            "                       per sequence (`specula bench --batch 1 --help` for its options)\n"
            "  --synthetic DIR      time the passes on random weights of DIR's shapes instead (--backend cuda;\n"
            "                       `specula bench --synthetic DIR --help` for its options)\n"
            "  --backend NAME       cuda (default where a GPU is) | cpu (default elsewhere) | reference;\n"
            "                       --threads N, --dtype bf16|f32 for cpu\n"
            "The method flags that apply (defaults as in generate, but temperature 0 here):\n",
            default_model_dir());
    method_spec_usage(f, METHOD_PROPOSES, 0, refused);
}

typedef struct {
    method_spec base;
    model_flags models;
    int runs, tokens, prompt_tokens;
    const char *prompt_text; /* --prompt; NULL: ids 1..prompt_tokens */
    int prompt_tokens_given;
    int *prompt;   /* [prompt_tokens] the prompt's ids */
    int cost_reps; /* reps of the costs measured apart; 0: no cost model (the default with --plain) */
    int cost_reps_given;
    int only_given, plain_only, json, csv;
    int ks[BENCH_MAX_KS]; /* --k-sweep: every chain method at each of these k (n_ks 0: the one --k) */
    int n_ks;
    int gate; /* --gate: run `specula gate` on every row's configuration first */
} bench_args;

/* Adds a run's counters to the row's: α̂ and the tokens per pass of every round of every run. */
static void pool_add(run_accounting *sum, const run_accounting *a) {
    sum->k = a->k;
    sum->target_bytes_per_pass = a->target_bytes_per_pass, sum->proposer_bytes_per_step = a->proposer_bytes_per_step;
    sum->target_passes += a->target_passes;
    sum->target_positions += a->target_positions;
    sum->committed += a->committed;
    sum->accepted_total += a->accepted_total;
    sum->rejected_rounds += a->rejected_rounds;
    sum->proposer_steps += a->proposer_steps;
    for (int d = 0; d <= ACC_MAX_DEPTH; d++) sum->proposed[d] += a->proposed[d], sum->accepted[d] += a->accepted[d];
    for (int j = 0; j <= ACC_MAX_DEPTH + 1; j++) sum->length_hist[j] += a->length_hist[j];
}

/* What a row's runs measured, run by run. */
typedef struct {
    double tps[64], prefill[64], decode[64], ttft_ms[64], e2e_ms[64];
    double part[6][64]; /* ms per token: passes, proposer, prefill, passes at their median, other, total */
} row_samples;

/* Run r of one row; 0, or -1 with a message. */
static int bench_run_once(const loaded_models *lm, const bench_args *a, const int *prompt, int r, bench_row *row,
                          row_samples *x) {
    method_spec s = row->spec;
    s.max_tokens = a->tokens;
    s.stop_at_eos = 0;
    s.seed = a->base.seed + (uint64_t)r;
    decode_output out;
    bench_split split = {0, 0, 0, 0, 0};
    sp_error err;
    const double t0 = bench_now_s();
    if (bench_generate(&s, &lm->parts, prompt, a->prompt_tokens, &out, &split, &err)) {
        fprintf(stderr, "specula bench: %s: %s\n", method_name(&s), err.msg);
        return -1;
    }
    const double wall = bench_now_s() - t0, ms = 1e3 / out.n;
    x->part[0][r] = split.pass_s * ms, x->part[1][r] = split.proposer_s * ms, x->part[2][r] = split.prefill_s * ms;
    x->part[3][r] = split.pass_median_s * split.passes * ms;
    x->part[4][r] = (wall - split.pass_s - split.proposer_s - split.prefill_s) * ms, x->part[5][r] = wall * ms;
    pool_add(&row->pooled, &out.acc);
    x->tps[r] = out.n / wall;
    x->ttft_ms[r] = 1e3 * out.acc.ttft_s;
    x->e2e_ms[r] = 1e3 * wall;
    x->prefill[r] = out.acc.ttft_s > 0 ? a->prompt_tokens / out.acc.ttft_s : NAN;
    x->decode[r] = out.n > 1 && out.acc.decode_s > 0 ? (out.n - 1) / out.acc.decode_s : NAN;
    /* the row's figures over every run so far (the last run alone would be one seed's) */
    const run_accounting *all = &row->pooled;
    row->tokens_per_pass = accounting_tokens_per_pass(all);
    row->engine_bytes_per_token = accounting_bytes_per_token(all);
    if (lm->backend == BACKEND_REFERENCE) { /* every position on its own, over float32 copies */
        const double f32 = 4.0 / lm->parts.target->storage_bytes;
        row->read_bytes_per_token =
            (all->target_positions * all->target_bytes_per_pass + all->proposer_steps * all->proposer_bytes_per_step) *
            f32 / all->committed;
    } else { /* one weight read per pass, as the accounting counts it */
        row->read_bytes_per_token = row->engine_bytes_per_token;
    }
    decode_output_free(&out);
    return 0;
}

static void row_finish(bench_row *row, row_samples *x, int runs) {
    row->min_tps = row->max_tps = x->tps[0];
    for (int r = 1; r < runs; r++) {
        if (x->tps[r] < row->min_tps) row->min_tps = x->tps[r];
        if (x->tps[r] > row->max_tps) row->max_tps = x->tps[r];
    }
    row->median_tps = bench_median(x->tps, runs);
    row->median_prefill_tps = bench_median(x->prefill, runs);
    row->median_decode_tps = bench_median(x->decode, runs);
    row->median_ttft_ms = bench_median(x->ttft_ms, runs);
    row->median_e2e_ms = bench_median(x->e2e_ms, runs);
    const bench_per_token ms = {bench_median(x->part[0], runs), bench_median(x->part[1], runs),
                                bench_median(x->part[2], runs), bench_median(x->part[3], runs),
                                bench_median(x->part[4], runs), bench_median(x->part[5], runs)};
    row->ms = ms;
}

/* Run r's speed-up, this row's tokens/s over plain decoding's in the same step of the loop (so both saw the same
 * load): the median, least and greatest over the runs. NAN without plain decoding's runs. Before row_finish,
 * which sorts the samples in place. */
static void paired_speedups(bench_row *row, const row_samples *x, const row_samples *plain, int runs) {
    row->paired_speedup = row->paired_min = row->paired_max = NAN;
    if (!plain) return;
    double ratio[64];
    for (int r = 0; r < runs; r++) ratio[r] = x->tps[r] / plain->tps[r];
    row->paired_min = row->paired_max = ratio[0];
    for (int r = 1; r < runs; r++) {
        if (ratio[r] < row->paired_min) row->paired_min = ratio[r];
        if (ratio[r] > row->paired_max) row->paired_max = ratio[r];
    }
    row->paired_speedup = bench_median(ratio, runs);
}

/* How many of n events spread evenly over `loops` steps fall in step i (0 or 1 when n ≤ loops). */
static int spread(int i, int n, int loops) { return (i + 1) * n / loops - i * n / loops; }

/* The rows' runs and the costs' reps, interleaved and spread evenly over one loop (each step runs every row
 * once, or one rep of the costs, or both), so that on a shared machine whose speed comes and goes every
 * figure samples the same stretch of time. Rows that fail are left out (ok[i] = 0); costs that fail leave c
 * empty (no predictions). 0, or 1 when something failed (printed). */
static int bench_all(const bench_args *a, const loaded_models *lm, bench_row *rows, int *ok, int n, bench_costs *c) {
    const int *prompt = a->prompt;
    row_samples *x = sp_xcalloc((size_t)n, sizeof *x, "bench samples");
    const method_spec *medusa = NULL;
    for (int i = 0; i < n; i++) {
        ok[i] = 1;
        if (method_has(&rows[i].spec, METHOD_HEADS)) medusa = &rows[i].spec;
    }
    sp_error err;
    int status = 0;
    bench_cost_run *cr = NULL;
    if (a->cost_reps > 0 && (!(cr = bench_costs_begin(lm, &a->base, medusa, a->ks, a->n_ks,
                                                      a->prompt_tokens + a->tokens / 2, a->cost_reps, c, &err)) ||
                             bench_costs_rep(cr, -1, &err))) { /* rep −1 warms the caches up */
        fprintf(stderr, "specula bench: pass costs: %s\n", err.msg);
        if (cr) bench_costs_end(cr, 0);
        cr = NULL, status = 1;
    }
    const int loops = a->runs > a->cost_reps ? a->runs : a->cost_reps;
    for (int step = 0, run = 0, rep = 0; step < loops; step++) {
        if (spread(step, a->runs, loops)) {
            for (int i = 0; i < n; i++)
                if (ok[i] && bench_run_once(lm, a, prompt, run, &rows[i], &x[i])) ok[i] = 0, status = 1;
            run++;
        }
        if (spread(step, a->cost_reps, loops) && cr && bench_costs_rep(cr, rep++, &err)) {
            fprintf(stderr, "specula bench: pass costs: %s\n", err.msg);
            bench_costs_end(cr, 0);
            cr = NULL, status = 1;
        }
        if (isatty(2)) fprintf(stderr, "\rrun %d/%d, cost rep %d/%d   ", run, a->runs, rep, a->cost_reps);
    }
    if (isatty(2)) fprintf(stderr, "\r%40s\r", "");
    if (cr) bench_costs_end(cr, 1);
    for (int i = 0; i < n; i++) paired_speedups(&rows[i], &x[i], ok[0] && i > 0 ? &x[0] : NULL, a->runs);
    for (int i = 0; i < n; i++) {
        bench_model m;
        if (ok[i]) row_finish(&rows[i], &x[i], a->runs);
        rows[i].predicted = ok[i] && bench_model_row(c, &rows[i], &m) == 0 ? m.speedup : NAN;
    }
    free(x);
    return status;
}

/* --k-sweep's list: 1 to BENCH_MAX_KS values of k, each 1 … 32, no repeats. 0, or -1 with a message. */
static int parse_k_list(const char *flag, const char *v, bench_args *a) {
    a->n_ks = 0;
    for (const char *at = v;;) {
        char *end;
        errno = 0;
        const long k = strtol(at, &end, 10);
        if (end == at || errno || k < 1 || k > 32 || (*end && *end != ',')) {
            fprintf(stderr, "specula bench: %s '%s': give a comma-separated list of k from 1 to 32 (e.g. 1,2,3,4)\n",
                    flag, v);
            return -1;
        }
        for (int j = 0; j < a->n_ks; j++)
            if (a->ks[j] == k) {
                fprintf(stderr, "specula bench: %s '%s': k %ld is listed twice\n", flag, v, k);
                return -1;
            }
        if (a->n_ks == BENCH_MAX_KS) {
            fprintf(stderr, "specula bench: %s '%s': at most %d values\n", flag, v, BENCH_MAX_KS);
            return -1;
        }
        a->ks[a->n_ks++] = (int)k;
        if (!*end) return 0;
        at = end + 1;
    }
}

/* A bench-only flag or the model directory: 1 consumed, 0 not one, -1 bad (printed). */
static int own_flag(bench_args *a, int argc, char **argv, int *i) {
    const char *f = argv[*i], *v;
    if (!strcmp(f, "--runs")) return (v = arg_value(argc, argv, i)) && !arg_int(f, v, 1, 64, &a->runs) ? 1 : -1;
    if (!strcmp(f, "--tokens"))
        return (v = arg_value(argc, argv, i)) && !arg_int(f, v, 1, 1 << 16, &a->tokens) ? 1 : -1;
    if (!strcmp(f, "--prompt-tokens")) {
        a->prompt_tokens_given = 1;
        return (v = arg_value(argc, argv, i)) && !arg_int(f, v, 1, 1 << 16, &a->prompt_tokens) ? 1 : -1;
    }
    if (!strcmp(f, "--prompt")) return (a->prompt_text = arg_value(argc, argv, i)) ? 1 : -1;
    if (!strcmp(f, "--cost-reps")) {
        a->cost_reps_given = 1;
        return (v = arg_value(argc, argv, i)) && !arg_int(f, v, 0, 1000, &a->cost_reps) ? 1 : -1;
    }
    if (!strcmp(f, "--k-sweep")) return (v = arg_value(argc, argv, i)) && !parse_k_list(f, v, a) ? 1 : -1;
    if (!strcmp(f, "--plain")) return a->plain_only = 1;
    if (!strcmp(f, "--gate")) return a->gate = 1;
    if (!strcmp(f, "--json")) return a->json = 1;
    if (!strcmp(f, "--csv")) return a->csv = 1;
    if (f[0] != '-' && !a->models.model_dir) {
        a->models.model_dir = f;
        return 1;
    }
    return 0;
}

static int parse(int argc, char **argv, bench_args *a) {
    memset(a, 0, sizeof *a);
    a->base = method_spec_defaults();
    a->models = model_flags_defaults(backend_cuda_on_device() ? BACKEND_CUDA : BACKEND_CPU); /* the fastest present */
    a->base.sampling.temperature = 0.0f;
    a->runs = 5;
    a->tokens = 64;
    a->prompt_tokens = 4;
    a->cost_reps = 9;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 1;
        }
        int rc = own_flag(a, argc, argv, &i);
        if (!rc) rc = method_cli_flag(&a->base, &a->models, argc, argv, &i, "bench");
        if (rc < 0) return 2;
        if (!rc) {
            fprintf(stderr, "specula bench: unexpected argument '%s' (`specula bench --help` for the options)\n",
                    argv[i]);
            return 2;
        }
    }
    static const char *const beam_flags[] = {"--beams", "--length-penalty", "--early-stopping", "--num-return", NULL};
    if (model_flags_backend_check(&a->models, "bench") ||
        method_cli_refuse(&a->base, refused + 1, "bench runs --tokens tokens with EOS off", "bench") ||
        method_cli_refuse(&a->base, beam_flags, "bench has no beam search row", "bench"))
        return 2;
    if (a->prompt_text && a->prompt_tokens_given) {
        fprintf(stderr, "specula bench: give --prompt TEXT or --prompt-tokens N, not both\n");
        return 2;
    }
    if (a->json && a->csv) {
        fprintf(stderr, "specula bench: give --json or --csv, not both\n");
        return 2;
    }
    if (a->n_ks && (a->plain_only || method_spec_given(&a->base, "--k"))) {
        fprintf(stderr, "specula bench: --k-sweep sets k row by row: give it without %s\n",
                a->plain_only ? "--plain" : "--k");
        return 2;
    }
    if (a->plain_only && !a->cost_reps_given) a->cost_reps = 0; /* the plain rate alone, as make bench-peers asks */
    if (a->plain_only && method_spec_given(&a->base, "--method")) {
        fprintf(stderr, "specula bench: give --plain or --method, not both\n");
        return 2;
    }
    if (method_spec_given(&a->base, "--method")) {
        a->only_given = 1;
        if (!method_has(&a->base, METHOD_PROPOSES)) {
            fprintf(stderr,
                    "specula bench: --method %s: bench compares a method that drafts (spec, mtp, medusa, lookup, a "
                    "plug-in) with plain decoding\n",
                    method_name(&a->base));
            return 2;
        }
    }
    return 0;
}

/* The rows: plain decoding first (the baseline of the ratios), then every method of the registry that drafts and
 * whose models are present (or the one asked for, which must be able to run). */
static int add_row_of(const method_spec *base, const method_desc *m, bench_row *rows, int *n) {
    sp_error err;
    if (*n == BENCH_MAX_ROWS) {
        fprintf(stderr, "specula bench: more than %d rows: list fewer k in --k-sweep\n", BENCH_MAX_ROWS);
        return -1;
    }
    if (method_spec_for(base, m, &rows[*n].spec, &err)) {
        fprintf(stderr, "specula bench: %s: %s\n", m->name, err.msg);
        return -1;
    }
    (*n)++;
    return 0;
}

static int add_row(const bench_args *a, const method_desc *m, bench_row *rows, int *n) {
    return add_row_of(&a->base, m, rows, n);
}

/* Method m's rows under --k-sweep: one per k for a chain method; an MTP row per draft kind above temperature 0
 * (argmax drafts against drafts sampled from its distribution); one row for the rest. */
static int add_sweep_rows(const bench_args *a, const method_desc *m, bench_row *rows, int *n) {
    if (!(m->traits & METHOD_CHAIN)) return add_row(a, m, rows, n);
    const int both_kinds = (m->traits & METHOD_MTP_MODULE) && a->base.sampling.temperature > 0;
    for (int i = 0; i < a->n_ks; i++)
        for (int kind = 0; kind < (both_kinds ? 2 : 1); kind++) {
            method_spec s = a->base;
            s.k = a->ks[i];
            if (both_kinds) s.drafts = kind ? MTP_DRAFTS_SAMPLED : MTP_DRAFTS_ARGMAX;
            if (add_row_of(&s, m, rows, n)) return -1;
        }
    return 0;
}

static int plan_rows(const bench_args *a, const loaded_models *lm, bench_row *rows, int *n) {
    *n = 0;
    if (add_row(a, a->base.sampling.temperature == 0 ? &greedy_method : &sample_method, rows, n)) return -1;
    if (a->plain_only) return 0;
    if (a->only_given) {
        sp_error err;
        if (method_check_parts(&a->base, &lm->parts, &err)) {
            fprintf(stderr, "specula bench: %s\n", err.msg);
            return -1;
        }
        return a->n_ks ? add_sweep_rows(a, a->base.method, rows, n) : add_row(a, a->base.method, rows, n);
    }
    for (int i = 0; i < method_count(); i++) {
        const method_desc *m = method_at(i);
        method_spec probe = a->base;
        probe.method = m;
        sp_error err;
        if (!(m->traits & METHOD_PROPOSES) || method_check_parts(&probe, &lm->parts, &err)) continue;
        if (a->n_ks ? add_sweep_rows(a, m, rows, n) : add_row(a, m, rows, n)) return -1;
    }
    return 0;
}

/* The share of a row's rounds that proposed a token: its α̂ and tokens per pass describe those rounds only, so a
 * method that often drafts nothing reads better on α̂ than on speed (NAN for plain decoding). */
static double drafted_share(const bench_row *row) {
    const run_accounting *a = &row->pooled;
    return method_has(&row->spec, METHOD_PROPOSES) && a->target_passes ? (double)a->proposed[1] / a->target_passes
                                                                       : NAN;
}

/* The KV cache the target keeps: its format and bytes per position (every attention layer, keys and values). */
static const char *kv_cache_of(const loaded_models *lm, double *bytes) {
    if (!backend_is_engine(lm->backend)) {
        const model_config *c = models_config(lm);
        *bytes = 2.0 * config_num_full(c) * c->num_kv_heads * c->head_dim * sizeof(float);
        return "f32";
    }
    const kv_cache *kv = &lm->etarget.kv;
    *bytes = 2.0 * kv->n_layers * kv->n_heads * (double)kv->row_bytes;
    return kv_format_name(kv->format);
}

static void print_table(const bench_args *a, const char *dir, const loaded_models *lm, const bench_row *rows,
                        const int *ok, int n) {
    double plain_tps = ok[0] ? rows[0].median_tps : NAN; /* ratios only against a time measured in this run */
    double kv_bytes;
    const char *kv = kv_cache_of(lm, &kv_bytes);
    printf("%s decode, %s: %d runs x %d tokens, temperature %g, KV cache %s (%.0f B/position)\n",
           backend_name(a->models.backend), dir, a->runs, a->tokens, a->base.sampling.temperature, kv, kv_bytes);
    printf("workload: prompt %d tokens, output %d tokens, batch 1, temperature %g\n", a->prompt_tokens, a->tokens,
           a->base.sampling.temperature);
    printf("%-8s %10s %15s %9s %8s %16s %16s %9s %10s %13s %10s  %s\n", "method", "tokens/s", "min-max", "tok/pass",
           "drafted", "engine B/token", "read B/token", "GB/s", "vs plain", "run by run", "predicted", "what it ran");
    for (int i = 0; i < n; i++) {
        if (!ok[i]) continue;
        char what[160], predicted[32] = "-", drafted[16] = "-", spread[32], paired[32] = "-";
        snprintf(spread, sizeof spread, "%.1f-%.1f", rows[i].min_tps, rows[i].max_tps);
        if (isfinite(rows[i].paired_min))
            snprintf(paired, sizeof paired, "%.2f-%.2fx", rows[i].paired_min, rows[i].paired_max);
        method_spec_label(&rows[i].spec, what, sizeof what);
        const double measured = rows[i].median_tps / plain_tps, share = drafted_share(&rows[i]);
        if (isfinite(rows[i].predicted))
            snprintf(predicted, sizeof predicted, "%.2fx%s", rows[i].predicted,
                     fabs(measured / rows[i].predicted - 1) > BENCH_GAP_FLAG ? "*" : " ");
        if (isfinite(share)) snprintf(drafted, sizeof drafted, "%.0f%%", 100 * share);
        printf("%-8s %10.1f %15s %9.3f %8s %16.4g %16.4g %9.3f %9.2fx %13s %10s  %s\n", method_name(&rows[i].spec),
               rows[i].median_tps, spread, rows[i].tokens_per_pass, drafted, rows[i].engine_bytes_per_token,
               rows[i].read_bytes_per_token, rows[i].median_tps * rows[i].read_bytes_per_token / 1e9, measured, paired,
               predicted, what);
    }
    printf("%-8s %14s %9s %11s %10s %10s %9s  %s\n", "method", "decode tok/s", "TTFT ms", "end-to-end", "proposed",
           "accepted", "alpha", "gate");
    for (int i = 0; i < n; i++) {
        if (!ok[i]) continue;
        const run_accounting *acc = &rows[i].pooled;
        long proposed = 0;
        for (int d = 1; d <= ACC_MAX_DEPTH; d++) proposed += acc->proposed[d];
        char alpha[16] = "-";
        if (isfinite(accounting_alpha(acc))) snprintf(alpha, sizeof alpha, "%.3f", accounting_alpha(acc));
        printf("%-8s %14.1f %9.3f %8.3f ms %10ld %10ld %9s  %s\n", method_name(&rows[i].spec),
               rows[i].median_decode_tps, rows[i].median_ttft_ms, rows[i].median_e2e_ms, proposed, acc->accepted_total,
               alpha,
               bench_row_gated(&rows[i])         ? "passed"
               : !strcmp(rows[i].gate, "FAILED") ? "withheld: FAILED"
                                                 : "withheld: no gate");
    }
    int withheld = 0;
    for (int i = 0; i < n; i++) withheld += ok[i] && !bench_row_gated(&rows[i]);
    if (withheld) {
        printf("withheld: the speed figures of");
        for (int i = 0, j = 0; i < n; i++)
            if (ok[i] && !bench_row_gated(&rows[i])) printf("%s %s", j++ ? "," : "", method_name(&rows[i].spec));
        printf(": their configurations have not passed `specula gate` (bench --gate runs it first)\n");
    }
    printf(
        "gate: the row's configuration's `specula gate` verdict (--gate runs it; else the one recorded): the\n"
        "speed figures of a configuration that has not passed are withheld: printed for the engineer, not to be\n"
        "quoted; decode tok/s: tokens after the first over their time (prefill excluded); TTFT: prompt in to first\n"
        "token; end-to-end: prompt in to last token (medians of the runs); proposed, accepted: drafts over every run;\n"
        "tokens/s: the median of the runs, min-max their spread; vs plain: the ratio of the medians; run by run:\n"
        "the least and greatest of each run's tokens/s over plain decoding's run beside it (same seed and load);\n"
        "drafted: the share of rounds that proposed a token (alpha describes those only);\n"
        "engine B/token: weights an engine reads per committed token (one read per pass, stored dtype);\n"
        "read B/token: what this backend reads (the reference: every position on its own, float32);\n"
        "predicted: the cost model's speed-up from the pass costs measured apart (below); *: measured more than\n"
        "%.0f %% off it.\n",
        100 * BENCH_GAP_FLAG);
}

/* The table as comma-separated values, for a spreadsheet or a plotting script. */
static void print_csv(const bench_args *a, const bench_row *rows, const int *ok, int n) {
    const double plain_tps = ok[0] ? rows[0].median_tps : NAN;
    csv_header(stdout,
               "method,what,backend,runs,tokens,temperature,tokens_per_s,tokens_per_pass,drafted_share,"
               "engine_bytes_per_token,read_bytes_per_token,gb_per_s,vs_plain,predicted,tokens_per_s_min,"
               "tokens_per_s_max,speedup_run_min,speedup_run_max,prompt_tokens,batch,decode_tokens_per_s,ttft_ms,"
               "e2e_ms,proposed,accepted,gate");
    for (int i = 0; i < n; i++) {
        if (!ok[i]) continue;
        char what[160];
        method_spec_label(&rows[i].spec, what, sizeof what);
        csv_text(stdout, method_name(&rows[i].spec), 1);
        csv_text(stdout, what, 0);
        csv_text(stdout, backend_name(a->models.backend), 0);
        const double x[] = {a->runs,
                            a->tokens,
                            a->base.sampling.temperature,
                            rows[i].median_tps,
                            rows[i].tokens_per_pass,
                            drafted_share(&rows[i]),
                            rows[i].engine_bytes_per_token,
                            rows[i].read_bytes_per_token,
                            rows[i].median_tps * rows[i].read_bytes_per_token / 1e9,
                            rows[i].median_tps / plain_tps,
                            rows[i].predicted,
                            rows[i].min_tps,
                            rows[i].max_tps,
                            rows[i].paired_min,
                            rows[i].paired_max};
        for (size_t j = 0; j < sizeof x / sizeof x[0]; j++) csv_number(stdout, x[j], 0);
        long proposed = 0;
        for (int d = 1; d <= ACC_MAX_DEPTH; d++) proposed += rows[i].pooled.proposed[d];
        const double y[] = {a->prompt_tokens,
                            1,
                            rows[i].median_decode_tps,
                            rows[i].median_ttft_ms,
                            rows[i].median_e2e_ms,
                            (double)proposed,
                            (double)rows[i].pooled.accepted_total};
        for (size_t j = 0; j < sizeof y / sizeof y[0]; j++) csv_number(stdout, y[j], 0);
        csv_text(stdout, rows[i].gate, 0);
        fputc('\n', stdout);
    }
}

/* A JSON string of plain text (paths, labels): quotes, backslashes and control characters escaped. */
static void print_json_text(const char *t) {
    putchar('"');
    for (; *t; t++) {
        if (*t == '"' || *t == '\\')
            printf("\\%c", *t);
        else if ((unsigned char)*t < 0x20)
            printf("\\u%04x", (unsigned)(unsigned char)*t);
        else
            putchar(*t);
    }
    putchar('"');
}

/* The rows as one JSON object, with each row's prefill and decode rates apart (tools/peer/bench_peers.py reads
 * them); rates that could not be measured are null. */
static void print_json(const bench_args *a, const char *dir, const loaded_models *lm, const bench_costs *c,
                       const bench_row *rows, const int *ok, int n) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const decode_target *t = lm->parts.target;
    const int on_engine = backend_is_engine(lm->backend);
    /* what the backend holds per parameter: the reference float32 copies, the engine its matrices' dtype */
    const int held = on_engine ? (a->models.f32 ? 4 : 2) : 4;
    printf("{\"implementation\": \"%s%s\", \"threads\": %d, \"model\": ", backend_name(lm->backend),
           on_engine ? " engine" : "", lm->backend == BACKEND_CPU ? a->models.threads : 1);
    print_json_text(dir);
    printf(", \"runs\": %d, \"prompt_tokens\": %d, \"tokens\": %d, \"batch\": 1, \"temperature\": %g, "
           "\"weight_bytes_per_step_stored\": %.0f, \"stored_bytes_per_param\": %d, \"held_bytes_per_param\": %d, "
           "\"max_rss_kb\": %ld, ",
           a->runs, a->prompt_tokens, a->tokens, a->base.sampling.temperature, t->weight_bytes_per_pass,
           t->storage_bytes, held, ru.ru_maxrss);
    double kv_bytes;
    const char *kv = kv_cache_of(lm, &kv_bytes);
    printf("\"kv_cache\": \"%s\", \"kv_bytes_per_position\": %.0f, ", kv, kv_bytes);
    if (c->n_sizes) bench_costs_json(c);
    printf("\"rows\": [");
    for (int i = 0, first = 1; i < n; i++) {
        if (!ok[i]) continue;
        char what[160];
        method_spec_label(&rows[i].spec, what, sizeof what);
        const double rates[3] = {rows[i].median_tps, rows[i].median_prefill_tps, rows[i].median_decode_tps};
        const char *names[3] = {"tokens_per_s", "prefill_tokens_per_s", "decode_tokens_per_s"};
        printf("%s{\"method\": \"%s\", \"what\": ", first ? "" : ", ", method_name(&rows[i].spec));
        print_json_text(what);
        for (int k = 0; k < 3; k++)
            printf(isfinite(rates[k]) ? ", \"%s\": %.6g" : ", \"%s\": null", names[k], rates[k]);
        printf(", \"tokens_per_pass\": %.6g, \"engine_bytes_per_token\": %.6g, \"read_bytes_per_token\": %.6g",
               rows[i].tokens_per_pass, rows[i].engine_bytes_per_token, rows[i].read_bytes_per_token);
        const double share = drafted_share(&rows[i]);
        printf(isfinite(share) ? ", \"drafted_share\": %.6g" : ", \"drafted_share\": null", share);
        const double spread[4] = {rows[i].min_tps, rows[i].max_tps, rows[i].paired_min, rows[i].paired_max};
        const char *spread_names[4] = {"tokens_per_s_min", "tokens_per_s_max", "speedup_run_min", "speedup_run_max"};
        for (int k = 0; k < 4; k++)
            printf(isfinite(spread[k]) ? ", \"%s\": %.6g" : ", \"%s\": null", spread_names[k], spread[k]);
        long proposed = 0;
        for (int d = 1; d <= ACC_MAX_DEPTH; d++) proposed += rows[i].pooled.proposed[d];
        printf(", \"ttft_ms\": %.6g, \"e2e_ms\": %.6g, \"proposed\": %ld, \"accepted\": %ld, \"gate\": \"%s\"",
               rows[i].median_ttft_ms, rows[i].median_e2e_ms, proposed, rows[i].pooled.accepted_total, rows[i].gate);
        bench_row_json(c, &rows[i], ok[0] ? &rows[0] : NULL);
        putchar('}');
        first = 0;
    }
    printf("]}\n");
}

/* The prompt's ids into a->prompt: --prompt through the tokenizer beside the model (setting
 * a->prompt_tokens), else 1, 2, ..., prompt_tokens modulo V. 0, or 2 with a message. */
static int bench_prompt(bench_args *a, const char *dir, int V) {
    a->prompt = NULL;
    if (!a->prompt_text) {
        a->prompt = sp_xcalloc((size_t)a->prompt_tokens, sizeof *a->prompt, "bench prompt");
        for (int i = 0; i < a->prompt_tokens; i++) a->prompt[i] = (i + 1) % V;
        return 0;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    tokenizer tok;
    sp_error err;
    if (tokenizer_load(&tok, path, &err)) {
        fprintf(stderr, "specula bench: --prompt needs the model's tokenizer: %s\n", err.msg);
        return 2;
    }
    int rc = tokenizer_encode(&tok, a->prompt_text, strlen(a->prompt_text), &a->prompt, &a->prompt_tokens, &err);
    tokenizer_free(&tok);
    if (rc) {
        fprintf(stderr, "specula bench: --prompt: %s\n", err.msg);
        return 2;
    }
    if (a->prompt_tokens == 0) {
        fprintf(stderr, "specula bench: --prompt encodes to no tokens\n");
        return 2;
    }
    for (int i = 0; i < a->prompt_tokens; i++)
        if (a->prompt[i] >= V) {
            fprintf(stderr, "specula bench: token %d of --prompt is outside the model's vocabulary (%d)\n",
                    a->prompt[i], V);
            return 2;
        }
    return 0;
}

int cmd_bench(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--synthetic")) return bench_synthetic(argc, argv); /* a bench of its own */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--batch")) return bench_batch(argc, argv); /* so is this one */
    bench_args a;
    int rc = parse(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    const char *dir = a.models.model_dir ? a.models.model_dir : default_model_dir();
    loaded_models lm;
    /* --plain runs the target alone: no companion is loaded (nor counted in max RSS) */
    const companion_need companions = a.plain_only ? COMPANION_NO : COMPANION_PRESENT;
    if (models_load(&lm, &a.models, companions, companions, "bench")) return EXIT_BAD_INPUT;
    if (bench_prompt(&a, dir, models_config(&lm)->vocab_size) ||
        context_check(models_config(&lm), a.prompt_text ? NULL : "--prompt-tokens", a.prompt_tokens, "--tokens",
                      a.tokens, "bench")) {
        free(a.prompt);
        models_release(&lm);
        return 2;
    }
    bench_row rows[BENCH_MAX_ROWS];
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < BENCH_MAX_ROWS; i++) rows[i].predicted = NAN;
    int n = 0, ok[BENCH_MAX_ROWS] = {0}, status = 0;
    if (plan_rows(&a, &lm, rows, &n)) { /* a method the flags or the companions present cannot run */
        free(a.prompt);
        models_release(&lm);
        return EXIT_BAD_INPUT;
    }
    if ((status = bench_gate_rows(a.gate, &a.models, &lm, rows, n))) { /* correctness before speed */
        free(a.prompt);
        models_release(&lm);
        return status;
    }
    bench_costs costs;
    memset(&costs, 0, sizeof costs);
    status = bench_all(&a, &lm, rows, ok, n, &costs);
    if (a.json)
        print_json(&a, dir, &lm, &costs, rows, ok, n);
    else if (a.csv)
        print_csv(&a, rows, ok, n);
    else {
        print_table(&a, dir, &lm, rows, ok, n);
        bench_costs_print(&costs, backend_name(a.models.backend));
        bench_model_print(&costs, rows, ok, n);
    }
    free(a.prompt);
    models_release(&lm);
    return status;
}
